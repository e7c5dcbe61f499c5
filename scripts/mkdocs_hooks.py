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

**One page per theory chapter.** docs/theory.md (one document of all chapters, for readers on
GitHub) is assembled from docs/theory/*.md by scripts/build_theory.py. The site publishes the
chapters as pages of their own instead (the assembled page was over 500 KB), under a contents page
``theory/`` generated from the same header and the chapters' headings. Links written against the
assembled document (``theory.md#<GitHub id>``, in the guides) are pointed at the chapter holding
that heading; a new chapter file appears in the nav with no edit of mkdocs.yml.

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
from mkdocs.structure.files import File, Files

_DOCS = Path(__file__).resolve().parents[1] / "docs"
_THEORY = _DOCS / "theory"

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


def _build_theory() -> Any:
    """scripts/build_theory.py, imported by path (the chapters' order, header and heading rules)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_theory", Path(__file__).with_name("build_theory.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dedup(seen: dict[str, int], slug: str) -> str:
    k = seen.get(slug, 0)
    seen[slug] = k + 1
    return slug if k == 0 else f"{slug}-{k}"


def theory_chapters() -> list[tuple[str, str, list[tuple[int, str, str]]]]:
    """``(file name, title, [(level, heading, id on the chapter page)])`` of each theory chapter."""
    bt = _build_theory()
    chapters = []
    for path in sorted(_THEORY.glob("*.md")):
        seen: dict[str, int] = {}
        heads = [(lvl, title, _dedup(seen, github_slug(title))) for lvl, title in bt.headings(path.read_text("utf-8"))]
        title = next((h for lvl, h, _ in heads if lvl == 1), path.stem)
        chapters.append((path.name, title, heads))
    return chapters


Chapters = list[tuple[str, str, list[tuple[int, str, str]]]]

#: what one build computes once (in on_config) and every page reuses: the chapters and the anchor map
_BUILD: dict[str, Any] = {}


def theory_anchor_map(chapters: Chapters | None = None) -> dict[str, tuple[str, str]]:
    """GitHub id of a heading in the assembled docs/theory.md -> (chapter file, id on the chapter page).

    The assembled document numbers repeated titles across chapters (``-1``, ``-2``) in document
    order, after the headings of its header and its "Contents"; a chapter page numbers them within
    itself.
    """
    bt = _build_theory()
    seen: dict[str, int] = {}
    for _, title in bt.headings(bt.HEADER):
        _dedup(seen, github_slug(title))
    _dedup(seen, "contents")
    found: dict[str, tuple[str, str]] = {}
    for name, _, heads in theory_chapters() if chapters is None else chapters:
        for _, title, local in heads:
            found[_dedup(seen, github_slug(title))] = (name, local)
    return found


def theory_contents_page(chapters: Chapters | None = None) -> str:
    """The site's theory contents page: the assembled document's header and a two-level contents."""
    bt = _build_theory()
    header = bt.HEADER.split("<!--")[0].rstrip()
    lines = [header, "", "## Contents", ""]
    for name, title, heads in theory_chapters() if chapters is None else chapters:
        lines.append(f"- [{title}]({name})")
        lines += [f"    - [{h}]({name}#{local})" for lvl, h, local in heads if lvl == 2]
    return "\n".join(lines) + "\n"


_THEORY_LINK = re.compile(r"\]\(((?:\.\./)*)theory\.md(?:#([^)\s]+))?\)")


def theory_links_to_chapters(markdown: str, src_uri: str, anchors: dict[str, tuple[str, str]] | None = None) -> str:
    """Point ``](…theory.md#id)`` links of the page at ``src_uri`` to the chapter page holding ``id``.

    >>> anchors = theory_anchor_map()
    >>> some_id, (chapter, local) = next(iter(anchors.items()))
    >>> theory_links_to_chapters(f"[x](../theory.md#{some_id})", "guides/a.md") == f"[x](../theory/{chapter}#{local})"
    True
    >>> theory_links_to_chapters("[t](theory.md)", "index.md")
    '[t](theory/index.md)'
    """
    anchors = theory_anchor_map() if anchors is None else anchors
    base = Path(src_uri).parent

    def repl(m: re.Match[str]) -> str:
        anchor = m.group(2)
        if anchor is None:
            target, frag = "theory/index.md", ""
        elif anchor in anchors:
            chapter, local = anchors[anchor]
            target, frag = f"theory/{chapter}", f"#{local}"
        else:  # left as written: the strict build reports it
            return m.group(0)
        rel = Path(*([".."] * len(base.parts)), target) if base.parts else Path(target)
        return f"]({rel.as_posix()}{frag})"

    return _THEORY_LINK.sub(repl, markdown)


def on_config(config: Any, **kwargs: Any) -> Any:
    """Replace the nav entry ``Theory: theory.md`` by the contents page and one entry per chapter.

    The chapters and the anchor map are read here, once per build, for every page of the build.
    """
    _BUILD["chapters"] = theory_chapters()
    _BUILD["anchors"] = theory_anchor_map(_BUILD["chapters"])
    for i, entry in enumerate(config["nav"]):
        if isinstance(entry, dict) and entry.get("Theory") == "theory.md":
            # the nav shows a chapter's title up to its dash ("10. Balanced incomplete block designs")
            chapters = [{title.split(" — ")[0]: f"theory/{name}"} for name, title, _ in _BUILD["chapters"]]
            config["nav"][i] = {"Theory": [{"Contents": "theory/index.md"}, *chapters]}
    return config


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add the generated theory contents page (``theory/index.md``)."""
    files.append(File.generated(config, "theory/index.md", content=theory_contents_page(_BUILD.get("chapters"))))
    return files


def on_page_markdown(markdown: str, page: Any = None, **kwargs: Any) -> str:
    """Theory links to chapter pages; GitHub's heading ids where the toc's would differ; display maths
    in blocks of their own."""
    if page is not None:
        markdown = theory_links_to_chapters(markdown, page.file.src_uri, _BUILD.get("anchors"))
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
