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
* **Combined parameters.** numpydoc allows ``samples, exact_limit : int`` for parameters sharing a
  type and a description; griffe reads it as one entry and shows the first one's default for both.
  In the parameter sections each name gets its own entry (the description repeated).
* **Sphinx maths.** A ``.. math::`` directive (its text on the same line, on the indented lines
  below, or both) becomes a ``$$ ... $$`` display that ``pymdownx.arithmatex`` hands to MathJax;
  ``:math:`x``` becomes ``$x$``.

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


_MATH = re.compile(r"^(\s*)\.\. math::[ \t]*(.*)$")
_MATH_ROLE = re.compile(r":math:`([^`]+)`")


def math_directives(text: str) -> str:
    """Turn each ``.. math::`` directive into a ``$$`` display block (and ``:math:`` roles into ``$``)."""
    lines = text.split("\n")
    out: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _MATH.match(line)
        if m is None:
            out.append(line)
            i += 1
            continue
        indent = m.group(1)
        body = [m.group(2).strip()] if m.group(2).strip() else []
        i += 1
        # the directive's content: the lines indented deeper than it (blank lines inside included)
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            if not lines[i].strip() and (
                i + 1 >= len(lines)
                or not lines[i + 1].strip()
                or len(lines[i + 1]) - len(lines[i + 1].lstrip()) <= len(indent)
            ):
                break
            body.append(lines[i].strip())
            i += 1
        if out and out[-1].strip():
            out.append("")
        out.append(f"{indent}$$")
        out.extend(f"{indent}{b}" for b in body if b)
        out.append(f"{indent}$$")
        if i < len(lines) and lines[i].strip():
            out.append("")
    return _MATH_ROLE.sub(lambda r: f"${r.group(1)}$", "\n".join(out))


_PARAM_SECTIONS = ("parameters", "other parameters", "keyword arguments", "attributes")
_COMBINED = re.compile(r"^(\s*)(\w+(?:\s*,\s*\w+)+)(\s*:.*)?$")


def split_combined_parameters(text: str) -> str:
    """Give each name of a combined numpydoc entry (``a, b : int``) its own entry in parameter sections."""
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _SECTION.match(lines[i + 1]):
            section = line.strip().lower()
        m = _COMBINED.match(line) if section in _PARAM_SECTIONS else None
        if m is None:
            out.append(line)
            i += 1
            continue
        indent = len(m.group(1))
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        description = lines[i + 1 : j]
        while description and not description[-1].strip():  # blank lines stay after the last entry
            description.pop()
        for name in (n.strip() for n in m.group(2).split(",")):
            out.append(f"{m.group(1)}{name}{m.group(3) or ''}")
            out.extend(description)
        out.extend(lines[i + 1 + len(description) : j])
        i = j
    return "\n".join(out)


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
    """Fence bare doctests, turn Sphinx roles into code and Sphinx maths into displays in every docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring text before it is parsed."""
        if obj.docstring is not None:
            text = split_combined_parameters(fence_doctests(obj.docstring.value))
            obj.docstring.value = math_directives(sphinx_roles_to_code(text))
