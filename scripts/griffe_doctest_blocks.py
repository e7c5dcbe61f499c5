"""Griffe extension (mkdocs.yml, mkdocstrings ``extensions:``): show bare doctests as code.

Many gcsim docstrings put a short ``>>>`` example right after the text, without an ``Examples``
section header (the doctests run all the same). Griffe's numpy parser turns ``>>>`` lines into code
only inside an ``Examples`` section; elsewhere Markdown would read ``>>>`` as nested block quotes
and an output such as ``[[1, 2, 4], [3, 5, 6]]`` as a reference link. This extension fences every
such run (the ``>>>``/``...`` lines and the output up to the next blank line) as a ``pycon`` block,
before griffe parses the docstring; the docstrings themselves are unchanged.

tests/test_docs_site.py checks it on examples (a doctest here would itself read as a doctest).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# a numpy-style section header: a title line, then a line of dashes of the same length
_SECTION = re.compile(r"^\s*-{3,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def fence_doctests(text: str) -> str:
    """Wrap each run of doctest lines outside an ``Examples`` section in a ``pycon`` fence."""
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and i + 1 < len(lines) and line.strip() and _SECTION.match(lines[i + 1]):
            section = line.strip().lower()
        stripped = line.lstrip()
        if not in_fence and stripped.startswith(">>>") and section not in ("examples", "example"):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.append(f"{indent}```pycon")
            out.extend(block)
            out.append(f"{indent}```")
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence bare doctests in every docstring griffe loads (see :func:`fence_doctests`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring text before it is parsed."""
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
