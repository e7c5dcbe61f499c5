"""Griffe extension (mkdocs.yml, mkdocstrings ``extensions:``): docstring markup the site can show.

The docstrings are numpy style with two habits Markdown does not read; this extension rewrites the
text griffe parses (the docstrings themselves are unchanged):

* **Bare doctests.** Many docstrings put a short ``>>>`` example right after the text, without an
  ``Examples`` header (the doctests run all the same). Griffe turns ``>>>`` lines into code only
  inside an ``Examples`` section; elsewhere Markdown reads ``>>>`` as nested block quotes and an
  output such as ``[[1, 2, 4], [3, 5, 6]]`` as a reference link. Each such run (the ``>>>``/``...``
  lines and the output up to the next blank line) is fenced as a ``pycon`` block.
* **Sphinx roles.** ``:func:`encode```, ``:class:`~gcsim.cerar.design.CerarDesign``` and the like
  become code spans (``encode``, ``CerarDesign``; ``~`` keeps the last name, as Sphinx shows it).

tests/test_docs_site.py checks both on examples.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# a numpy-style section header: a title line, then a line of dashes of the same length
_SECTION = re.compile(r"^\s*-{3,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|obj|exc|const):`(~?)([^`]+)`")


def _role(m: re.Match[str]) -> str:
    name = m.group(2)
    return f"`{name.rsplit('.', 1)[-1] if m.group(1) else name}`"


def sphinx_roles_to_code(text: str) -> str:
    """Replace Sphinx cross-reference roles with Markdown code spans."""
    return _ROLE.sub(_role, text)


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


class DocstringMarkup(griffe.Extension):
    """Fence bare doctests and turn Sphinx roles into code in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring text before it is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = sphinx_roles_to_code(fence_doctests(obj.docstring.value))
