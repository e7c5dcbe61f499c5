"""Rendering slips no browser is needed to catch (issue #34 item 1), in every docstring and docs page.

* Control characters: a docstring that is not raw turns ``\\nabla`` into a newline and ``\\frac``
  into a form feed; the API page then shows ``abla`` and ``rac``.
* ``\\|`` inside a code span of a Markdown table: Python-Markdown keeps code spans literal, so the
  site shows the backslash (GitHub needs the escape, the site does not: no pipe in such spans).
* TeX in a Markdown heading: the site's contents sidebar shows the heading as text, ``\\(m\\)``.

The docstrings are read from the source (``ast``), every module, class and function of the package,
so nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gcsim"
DOCS = ROOT / "docs"

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_HEADING = re.compile(r"^#{1,6}\s")
_TEX = re.compile(r"\$|\\\(|\\\[")


def docstrings() -> list[tuple[str, str]]:
    """``(where, docstring)`` of every module, class and function under ``gcsim/`` (from the source)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node, clean=False)
                if text is not None:
                    name = getattr(node, "name", "<module>")
                    found.append((f"{rel}:{getattr(node, 'lineno', 1)} {name}", text))
    return found


def markdown_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _outside_fences(lines: list[str]) -> list[tuple[int, str]]:
    out, fenced = [], False
    for i, line in enumerate(lines, 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, line))
    return out


def escaped_pipes_in_code(text: str) -> list[tuple[int, str]]:
    """``(line, code span)`` of each code span holding ``\\|`` in a Markdown table row.

    >>> escaped_pipes_in_code("| `a\\\\|b` | x \\\\| y |")
    [(1, '`a\\\\|b`')]
    """
    hits = []
    for i, line in _outside_fences(text.splitlines()):
        if line.lstrip().startswith("|"):
            hits += [(i, m.group(0)) for m in _CODE_SPAN.finditer(line) if "\\|" in m.group(2)]
    return hits


def tex_headings(text: str) -> list[tuple[int, str]]:
    """``(line, heading)`` of each Markdown heading holding TeX (``$``, ``\\(``, ``\\[``)."""
    return [(i, line) for i, line in _outside_fences(text.splitlines()) if _HEADING.match(line) and _TEX.search(line)]


def test_the_scan_sees_every_docstring():
    found = dict(docstrings())
    assert len(found) > 1000
    assert any(where.endswith(" rd_estimator_variance") for where in found)


def test_no_docstring_holds_control_characters():
    bad = [(where, sorted(set(CONTROL.findall(text)))) for where, text in docstrings() if CONTROL.search(text)]
    assert bad == [], 'make the docstring raw (r"""..."""): ' + repr(bad[:5])


def test_no_docstring_table_escapes_a_pipe_in_code():
    bad = [(where, hit) for where, text in docstrings() for hit in escaped_pipes_in_code(text)]
    assert bad == []


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_docs_page_renders_as_written(page):
    text = page.read_text(encoding="utf-8")
    controls = [(i, repr(m.group(0))) for i, line in enumerate(text.splitlines(), 1) for m in CONTROL.finditer(line)]
    assert controls == [], f"control characters in {page}: {controls[:5]}"
    assert escaped_pipes_in_code(text) == [], f"{page}: a table cell's code span shows '\\|' literally"
    assert tex_headings(text) == [], f"{page}: TeX in a heading shows raw in the site's contents"


def test_the_checks_catch_the_slips_of_issue_34():
    assert CONTROL.search("\frac{1}{r^2}") and not CONTROL.search("a line\n")  # a form feed, not a newline
    assert escaped_pipes_in_code("| `exists bibd\\|srg P…` | x |") == [(1, "`exists bibd\\|srg P…`")]
    assert escaped_pipes_in_code("| `exists bibd`, `srg` | $\\|x\\|$ |") == []
    page = "## 46.4 RD with $m$ blocks\n```\n# $ not a heading\n```\n"
    assert tex_headings(page) == [(1, "## 46.4 RD with $m$ blocks")]
