"""Marked sections of a results page, so several scripts write one page (docs/results/sequential.md).

Each script owns the block between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``; writing it
replaces that block only (or appends it), so regenerating one section leaves the others as they are.
"""

from __future__ import annotations

import re
from pathlib import Path


def replace_section(path: Path, name: str, text: str, *, title: str | None = None) -> str:
    """Write ``text`` as section ``name`` of ``path`` (created with ``title`` if missing); return the page."""
    block = f"<!-- begin {name} -->\n{text.rstrip()}\n<!-- end {name} -->\n"
    page = path.read_text() if path.exists() else (f"# {title}\n\n" if title else "")
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->\n.*?<!-- end {re.escape(name)} -->\n", re.S)
    page = pattern.sub(lambda _: block, page, count=1) if pattern.search(page) else page.rstrip() + "\n\n" + block
    path.write_text(page)
    return page
