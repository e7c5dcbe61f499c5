"""MkDocs hooks (mkdocs.yml ``hooks:``): MathJax from the site's own assets, GitHub heading ids.

**MathJax.** The theory (docs/theory.md) is written with ``$...$`` and ``$$...$$``; ``pymdownx.arithmatex``
wraps them for MathJax, and this hook copies MathJax 3 from the ``django-static-mathjax`` wheel (a
plain copy of the MathJax distribution, Apache-2.0, no Django needed) into ``site/assets/mathjax``.
The build fetches nothing and the built site renders its maths offline (no CDN).

**Heading ids.** The docs link to headings by GitHub's ids (docs/theory.md's contents, written by
scripts/build_theory.py). ``pymdownx.slugs.slugify`` (mkdocs.yml) gives the same ids except where a
heading has a run of spaces: GitHub turns each space into a hyphen (``encoder  (reconstruction)`` ->
``encoder--reconstruction``), Markdown's toc collapses the run first. Those headings get GitHub's
id written out (``{ #id }``, attr_list), so one link works on GitHub and on the site.

**Display maths.** The theory writes ``$$ ... $$`` displays inside paragraphs (GitHub renders them);
``pymdownx.arithmatex`` takes ``$$`` as a display only when it is a block of its own and would
otherwise read the ``$`` inside it as inline maths. Each display gets a blank line before and after
it on the site; the source is unchanged.
"""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

# What the pages load: the TeX -> CommonHTML component, the TeX extensions it autoloads, the CHTML
# fonts, and the context menu / accessibility parts it loads on demand (not the other combined builds).
_PARTS = ("tex-chtml.js", "input", "output/chtml", "ui", "a11y", "sre", "adaptors")
_TARGET = Path("assets") / "mathjax"

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


def github_slug(title: str) -> str:
    """GitHub's id of a heading: lower case, punctuation dropped, each space a hyphen.

    >>> github_slug("30. Coset graphs: the encoder  (reconstruction)")
    '30-coset-graphs-the-encoder--reconstruction'
    >>> github_slug("40.5 The exact family  [Ye–Abbe 2018]")
    '405-the-exact-family--yeabbe-2018'
    """
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def github_heading_ids(markdown: str) -> str:
    r"""Give each heading with a run of spaces GitHub's id (``{ #id }``); code fences are left alone.

    >>> print(github_heading_ids("## 30. A  (b)\n```\n# not  a heading\n```\n## c d"))
    ## 30. A  (b) { #30-a--b }
    ```
    # not  a heading
    ```
    ## c d
    """
    out = []
    in_fence = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := _HEADING.match(line)) and re.search(r"\s\s", m.group(2)) and "{" not in line:
            line = f"{m.group(1)} {m.group(2)} {{ #{github_slug(m.group(2))} }}"
        out.append(line)
    return "\n".join(out)


_LIST_MARKER = re.compile(r"^\s*([*+-]|\d+[.)])\s")


def _continues_item(line: str, indent: int) -> bool:
    """Whether ``line`` continues the paragraph of a list item indented by ``indent``."""
    return len(line) - len(line.lstrip()) >= indent and not _LIST_MARKER.match(line)


def separate_display_maths(markdown: str) -> str:
    r"""Put each ``$$ ... $$`` display that starts a line in a block of its own; code fences are left alone.

    >>> print(separate_display_maths("We write\n$$a=b,\nc=d.$$\nso that $a$."))
    We write
    <BLANKLINE>
    $$a=b,
    c=d.$$
    <BLANKLINE>
    so that $a$.
    >>> print(separate_display_maths("* item\n  $$x$$\n  more\n* next"))
    * item
    <BLANKLINE>
        $$x$$
    <BLANKLINE>
        more
    * next
    """
    lines = markdown.split("\n")
    out: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith("$$"):
            end = i
            if len(stripped) < 4 or not stripped.endswith("$$"):  # the display goes on below
                end = i + 1
                while end < len(lines) - 1 and not lines[end].rstrip().endswith("$$"):
                    end += 1
            # inside a list item (2-space continuation): after a blank line Markdown keeps a block in
            # the item only at a 4-space indent, so the display and the rest of the item move there
            indent = len(line) - len(line.lstrip())
            shift = " " * (4 * ((indent + 3) // 4) - indent)
            if out and out[-1].strip():
                out.append("")
            out.extend(shift + x if x.strip() else x for x in lines[i : end + 1])
            i = end + 1
            if i < len(lines) and lines[i].strip():
                out.append("")
            while indent and i < len(lines) and lines[i].strip() and _continues_item(lines[i], indent):
                out.append(shift + lines[i])
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """GitHub's heading ids where the toc's would differ; display maths in blocks of their own."""
    return separate_display_maths(github_heading_ids(markdown))


def mathjax_root() -> Path:
    """The ``es5`` folder of the installed MathJax distribution.

    Raises
    ------
    PluginError
        If MathJax is not installed, naming the extra that installs it.
    """
    try:
        root = Path(str(resources.files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        root = None
    if root is None or not (root / "tex-chtml.js").is_file():
        raise PluginError(
            "MathJax is not installed: the docs site serves it from its own assets; "
            "install the docs extra: pip install -e '.[docs]' (package django-static-mathjax)"
        )
    return root


def on_post_build(config: Any, **kwargs: Any) -> None:
    """Copy MathJax into ``<site_dir>/assets/mathjax`` (the path mkdocs.yml's extra_javascript names)."""
    root = mathjax_root()
    target = Path(config["site_dir"]) / _TARGET
    for part in _PARTS:
        src = root / part
        dst = target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
