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

**API pages per module.** Each ``docs/api/<sub>.md`` lists its modules, one ``::: gcsim.<sub>.<mod>``
line each (tests/test_docs_site.py checks every public module has one). On the site that line
becomes a link with the module's summary, and the module gets a page of its own
(``api/<sub>/<mod>/``), its members in an explicit order: the names ``gcsim`` exports first, then the
subpackage's, the other functions and classes, the constants last.

**Links made at build time** (``on_env``, once every page is rendered): "§N" / "§N.k" (a theory
chapter or section; another book's "BvM §10.20" is left alone) and ``docs/….md`` become links, in
every page; an unresolvable one fails the build. In the guides and other prose pages, the first code
span naming each API entry (``gcsim.encode``, ``advise(...)``, ``CerarDesign``) links to it, and each
module page lists the pages that link to it ("Used in: ...").

**Search.** The theme's search worker bundles lunr 2.3.9, whose trie keys are ambiguous when edge
labels are digits; on these number-heavy pages some words fell out of the search and some queries
failed outright. ``on_post_build`` appends a fix to the built worker (``mend_search_worker``).

**Notebooks.** docs/notebooks/ holds each notebook executed (``scripts/make_notebooks.py --render``);
the nav entry ``Notebooks`` becomes a contents page made from notebooks/README.md and one entry per
notebook.
"""

from __future__ import annotations

import ast
import html as html_module
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

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


# ---------------------------------------------------------------------------------------------------
# API reference: one page per module

_API_BLOCK = re.compile(r"^::: (gcsim(?:\.\w+)+)[ \t]*$(?!\n[ \t]+\S)", re.M)
_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|obj|exc|const):`~?([^`]+)`")
_PACKAGE = _DOCS.parent / "gcsim"


def api_module_blocks(markdown: str) -> list[str]:
    r"""The modules a subpackage's API page lists, one ``::: gcsim.<sub>.<module>`` line each (no options).

    >>> api_module_blocks("::: gcsim.coding\n    options:\n      members: false\n\n::: gcsim.coding.schemes\n")
    ['gcsim.coding.schemes']
    """
    return _API_BLOCK.findall(markdown)


def api_module_uri(module: str) -> str:
    """The site page of a module: ``gcsim.coding.schemes`` -> ``api/coding/schemes.md``.

    >>> api_module_uri("gcsim.coding.encoders.hadamard_ns")
    'api/coding/encoders.hadamard_ns.md'
    """
    _, sub, rest = module.split(".", 2)
    return f"api/{sub}/{rest}.md"


def _source(module: str) -> Path:
    """The source file of a gcsim module (``gcsim/a/b.py`` or ``gcsim/a/b/__init__.py``)."""
    base = _PACKAGE.parent.joinpath(*module.split("."))
    return base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"


def _module_ast(module: str) -> ast.Module:
    return ast.parse(_source(module).read_text(encoding="utf-8"))


def _dunder_all(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [str(x) for x in ast.literal_eval(node.value)]
    return []


def _imported_names(path: Path) -> set[str]:
    """The names a package's ``__init__`` (or its stub) imports from its modules."""
    if not path.is_file():
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def module_members(module: str) -> list[str]:
    """The members of a module's API page, main entry points first, constants last.

    The members are the names of ``__all__`` and the public names the module defines. The order:
    the names ``gcsim`` itself exports (``gcsim/__init__.pyi``: ``advise``, ``encode``, ...), then
    those the subpackage exports, then the other functions and classes, then the constants; within
    each, ``__all__``'s order, then the source's.

    >>> module_members("gcsim.advisor.core")[0]
    'advise'
    >>> members = module_members("gcsim.advisor.core")
    >>> members.index("Progress") < members.index("PRUNE_COST")
    True
    """
    tree = _module_ast(module)
    defined: dict[str, bool] = {}  # name -> is a function or class
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = True
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    defined.setdefault(target.id, False)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.setdefault(node.target.id, False)
    names = _dunder_all(tree)
    names += [n for n in defined if not n.startswith("_") and n not in names and n != "__all__"]
    top = _imported_names(_PACKAGE / "__init__.pyi")
    sub = module.split(".")[1]
    subpackage = _imported_names(_PACKAGE / sub / "__init__.pyi") | _imported_names(_PACKAGE / sub / "__init__.py")

    def rank(name: str) -> int:
        if name in defined and not defined[name]:
            return 3
        if name not in defined and name.isupper():  # an imported constant
            return 3
        return 0 if name in top else 1 if name in subpackage else 2

    return sorted(names, key=rank)  # a stable sort: __all__'s order, then the source's, within a rank


def module_summary(module: str) -> str:
    """The first sentence line of a module's docstring, Sphinx roles as code spans."""
    doc = ast.get_docstring(_module_ast(module)) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return _ROLE.sub(lambda m: f"`{m.group(1)}`", first)


def api_module_page(module: str) -> str:
    """The Markdown of a module's API page: its docstring, then its members in :func:`module_members` order."""
    members = "\n".join(f"        - {name}" for name in module_members(module))
    return (
        f"::: {module}\n    options:\n      heading_level: 1\n      group_by_category: false\n"
        f"      members:\n{members}\n"
    )


def api_pages() -> dict[str, list[str]]:
    """``api/<sub>.md`` -> the modules it lists, for each subpackage page of docs/api (not the overview)."""
    return {
        f"api/{path.name}": api_module_blocks(path.read_text(encoding="utf-8"))
        for path in sorted((_DOCS / "api").glob("*.md"))
        if path.name != "index.md"
    }


def api_list_modules(markdown: str, src_uri: str) -> str:
    """Replace each module's ``:::`` line of a subpackage page by a link to the module's page and its summary."""
    folder = Path(src_uri).parent

    def repl(m: re.Match[str]) -> str:
        module = m.group(1)
        rel = Path(api_module_uri(module)).relative_to(folder).as_posix()
        return f"- [`{module}`]({rel}): {module_summary(module)}"

    return _API_BLOCK.sub(repl, markdown)


# ---------------------------------------------------------------------------------------------------
# links made at build time, on the HTML of every page (after all pages are rendered: on_env)

_SECTION_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?\s")
_REFERENCE = re.compile(
    r"(?P<doc>docs/(?P<path>[\w/-]+(?:\.[\w-]+)*\.md)(?:#(?P<frag>[\w-]+))?)(?:\s+§\s?(?P<sec1>\d+(?:\.\d+)*))?"
    r"|§\s?(?P<sec2>\d+(?:\.\d+)*)"
)
#: what before a "§" makes it another book's section: a capitalised name (BvM, Lang) or a year
_CITATION = re.compile(
    r"(?:\b(?!(?:Theory|See|In|By|From|As|Also|And|Cf|Per|With|Using|Following|Under|Then|Via)\b)[A-Z][\w-]*"
    r"|\b(?:1[89]|20)\d\d[a-z]?,?)\s*$"
)
_TAG = re.compile(r"(<[^>]*>)")
_TAG_NAME = re.compile(r"<\s*(/?)\s*([a-zA-Z][\w-]*)")
_VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "source", "area", "base", "embed", "track"}
#: text inside these is never linked (code blocks, links, headings, maths, scripts)
_SKIP = {
    "pre",
    "code",
    "a",
    "script",
    "style",
    "textarea",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "svg",
    "button",
    "label",
}
_CODE_NAME = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?P<call>\(.*\))?$", re.S)


def section_map(chapters: Chapters) -> dict[str, tuple[str, str]]:
    """Theory section number -> (chapter file, heading id).

    ``"5"`` is ``# 5. The model…``, ``"5.4"`` is ``## 5.4 Encoders``.
    """
    found: dict[str, tuple[str, str]] = {}
    for name, _, heads in chapters:
        for _, title, local in heads:
            if (m := _SECTION_NUMBER.match(title)) and m.group(1) not in found:
                found[m.group(1)] = (name, local)
    return found


def _html_tokens(html: str) -> list[tuple[str, bool]]:
    """The HTML as ``(piece, linkable)``: a text is linkable outside code, links, headings and maths;
    a tag is linkable when the text around it is (an inline ``<code>`` in a paragraph, not in a link)."""
    out: list[tuple[str, bool]] = []
    stack: list[tuple[str, bool]] = []  # (tag, whether text inside is skipped)
    for piece in _TAG.split(html):
        if not piece:
            continue
        context = not any(s for _, s in stack)
        if piece.startswith("<") and (m := _TAG_NAME.match(piece)):
            closing, tag = m.group(1) == "/", m.group(2).lower()
            if closing:
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0] == tag:
                        del stack[i:]
                        break
            elif tag not in _VOID and not piece.endswith("/>"):
                skip = tag in _SKIP or 'class="arithmatex"' in piece or tag.startswith("mjx")
                stack.append((tag, skip))
        out.append((piece, context))
    return out


class SiteLinks:
    """The targets of the build's links: theory sections, docs pages, API entries; each page's links.

    ``urls`` maps a docs source path (``guides/coding.md``) to its page URL, ``sections`` a theory
    section number to its URL with anchor, ``api`` an API entry id (``gcsim.coding.schemes.encode``)
    to its page URL, ``exports`` a name ``gcsim`` exports to its entry id.
    """

    def __init__(self, urls: dict[str, str], sections: dict[str, str], api: dict[str, str], exports: dict[str, str]):
        self.urls, self.sections, self.api, self.exports = urls, sections, api, exports
        self.by_last: dict[str, list[str]] = {}
        for ident in api:
            parts = ident.split(".")
            for k in range(1, min(3, len(parts) - 2) + 1):
                self.by_last.setdefault(".".join(parts[-k:]), []).append(ident)
        self.unresolved: list[str] = []
        self.chapters = {key for key in sections if key.isdigit()}
        self.after_emphasis = False  # whether the text being linked follows </em>

    def reference_url(self, m: re.Match[str]) -> str | None:
        """The URL (site-absolute, no leading slash) a ``docs/…md`` / ``§N.k`` reference points at.

        A bare ``§N.k`` is a theory section when ``N`` is a chapter's number and no citation comes
        right before it (``BvM §10.20``, ``Higham 2002, §3.1`` are other books' sections); a theory
        section that does not exist is recorded in ``unresolved`` (the build fails), as is a page.
        """
        path, frag, section = m.group("path"), m.group("frag"), m.group("sec1") or m.group("sec2")
        if path is None:
            before = m.string[max(0, m.start() - 30) : m.start()]
            # a comma right after italics is a book's title: "*Spectra of Graphs*, §9.1"
            title = self.after_emphasis and re.fullmatch(r",\s*", m.string[: m.start()])
            if section.split(".")[0] not in self.chapters or _CITATION.search(before) or title:
                return None
            return self._section(section)
        if path == "theory.md" or path.startswith("theory/"):
            chapter = re.match(r"theory/(\d+)_", path)
            if section is not None:
                if chapter and section.split(".")[0] != chapter.group(1):
                    section = f"{chapter.group(1)}.{section}"  # docs/theory/47_delays.md §6: 47.6
                return self._section(section)
            if frag is not None:
                return self._section(f"#{frag}")
        if path == "theory.md":
            return self.urls["theory/index.md"]
        if path not in self.urls:
            self.unresolved.append(f"docs/{path}")
            return None
        return self.urls[path] + (f"#{frag}" if frag else "")

    def _section(self, key: str) -> str | None:
        if key not in self.sections:
            self.unresolved.append(key if key.startswith("#") else f"§{key}")
            return None
        return self.sections[key]

    def api_entry(self, code: str) -> str | None:
        """The API entry a code span names, or None: ``gcsim.encode``, ``gcsim.coding.encode(...)``,
        ``encode(g, 2, "rd")`` (a call), ``CerarDesign``, ``Advice.to_frame()``; a bare lower-case
        name that is not called (``bibd``, a family's name as often as the function) is left alone."""
        m = _CODE_NAME.match(code.strip())
        if m is None:
            return None
        name, called = m.group("name"), m.group("call") is not None
        if name.startswith("gcsim."):
            entry = resolve_dotted(name)
            return entry if entry in self.api else None
        if not (called or name[0].isupper()) or name.isupper():
            return None
        if name in self.exports:
            return self.exports[name]
        found = self.by_last.get(name, [])
        return found[0] if len(found) == 1 else None


def _relative(url: str, page_url: str) -> str:
    path, _, frag = url.partition("#")
    rel = get_relative_url(path, page_url)
    return rel + (f"#{frag}" if frag else "")


def link_page(html: str, page_url: str, links: SiteLinks, code_links: bool) -> tuple[str, list[str]]:
    """Make the page's theory and docs references links, and (``code_links``) its code spans naming an
    API entry (the first of each entry on the page); returns the HTML and the entries linked."""
    tokens = _html_tokens(html)
    out: list[str] = []
    linked: list[str] = []

    def ref(m: re.Match[str]) -> str:
        url = links.reference_url(m)
        return m.group(0) if url is None else f'<a href="{_relative(url, page_url)}">{m.group(0)}</a>'

    i = 0
    while i < len(tokens):
        piece, linkable = tokens[i]
        is_span = piece == "<code>" and i + 2 < len(tokens) and tokens[i + 2][0] == "</code>"
        if is_span and linkable and not tokens[i + 1][0].startswith("<"):
            text = tokens[i + 1][0]
            plain = html_module.unescape(text)
            target = None
            if (m := _REFERENCE.fullmatch(plain)) and m.group("doc"):
                target = links.reference_url(m)
            elif code_links and (entry := links.api_entry(plain)) is not None and entry not in linked:
                target = f"{links.api[entry]}#{entry}"
                linked.append(entry)
            if target is not None:
                out.append(f'<a href="{_relative(target, page_url)}"><code>{text}</code></a>')
                i += 3
                continue
        links.after_emphasis = i > 0 and tokens[i - 1][0] in ("</em>", "</i>")
        out.append(_REFERENCE.sub(ref, piece) if linkable and not piece.startswith("<") else piece)
        i += 1
    return "".join(out), linked


def _is_package(module: str) -> bool:
    return _PACKAGE.parent.joinpath(*module.split("."), "__init__.py").is_file()


def _is_module(module: str) -> bool:
    base = _PACKAGE.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or _is_package(module)


def resolve_export(module: str, name: str, depth: int = 0) -> str:
    """Where a name a package imports is defined: ``("gcsim", "advise")`` -> ``gcsim.advisor.core.advise``.

    Follows the ``from .x import name`` of the packages' ``__init__.pyi`` (or ``__init__.py``).

    >>> resolve_export("gcsim", "advise")
    'gcsim.advisor.core.advise'
    """
    if not _is_package(module) or depth > 5:
        return f"{module}.{name}"
    package = _PACKAGE.parent.joinpath(*module.split("."))
    for stub in (package / "__init__.pyi", package / "__init__.py"):
        if not stub.is_file():
            continue
        for node in ast.parse(stub.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                source = ".".join(module.split(".")[: len(module.split(".")) - node.level + 1])
                source = f"{source}.{node.module}" if node.module else source
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        if node.module is None:  # a submodule
                            return f"{source}.{alias.name}"
                        return resolve_export(source, alias.name, depth + 1)
    return f"{module}.{name}"


def resolve_dotted(name: str) -> str:
    """The API id a dotted ``gcsim.…`` name stands for (re-exports followed): ``gcsim.coding.encode`` ->
    ``gcsim.coding.schemes.encode``; a module's name stays itself."""
    parts = name.split(".")
    k = len(parts)
    while k > 1 and not _is_module(".".join(parts[:k])):
        k -= 1
    if k == len(parts):
        return name
    head = resolve_export(".".join(parts[:k]), parts[k])
    return ".".join([head, *parts[k + 1 :]])


def gcsim_exports() -> dict[str, str]:
    """Each name ``gcsim/__init__.pyi`` exports (not the subpackages) -> the id of its API entry."""
    tree = ast.parse((_PACKAGE / "__init__.pyi").read_text(encoding="utf-8"))
    names = [a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module for a in n.names]
    return {name: resolve_export("gcsim", name) for name in names if not name.startswith("_")}


# ---------------------------------------------------------------------------------------------------
# notebooks: docs/notebooks/<stem>.md (each notebook executed, by scripts/make_notebooks.py --render)
# under a contents page made from notebooks/README.md

_NOTEBOOK_PAGES = _DOCS / "notebooks"
_NOTEBOOK_LINK = re.compile(r"\]\((\d\d_\w+)\.ipynb\)")


def notebook_pages() -> list[tuple[str, str]]:
    """``(title, docs path)`` of each notebook's site page, in the notebooks' order."""
    pages = []
    for path in sorted(_NOTEBOOK_PAGES.glob("[0-9][0-9]_*.md")):
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        pages.append((first.lstrip("# ").strip() or path.stem, f"notebooks/{path.name}"))
    return pages


def notebooks_index() -> str:
    """The site's notebooks page: notebooks/README.md, each ``NN_name.ipynb`` link pointing at its page.

    >>> "](05_advisor.md)" in notebooks_index()
    True
    """
    readme = (_DOCS.parent / "notebooks" / "README.md").read_text(encoding="utf-8")
    return _NOTEBOOK_LINK.sub(lambda m: f"]({m.group(1)}.md)", readme)


def on_config(config: Any, **kwargs: Any) -> Any:
    """Replace the nav entry ``Theory: theory.md`` by the contents page and one entry per chapter, and
    each subpackage's API page by a section: the page (its modules listed) and one page per module.

    The chapters, the anchor map and the API pages are read here, once per build, for every page.
    """
    _BUILD["chapters"] = theory_chapters()
    _BUILD["anchors"] = theory_anchor_map(_BUILD["chapters"])
    _BUILD["api"] = api_pages()
    for i, entry in enumerate(config["nav"]):
        if isinstance(entry, dict) and entry.get("Theory") == "theory.md":
            # the nav shows a chapter's title up to its dash ("10. Balanced incomplete block designs")
            chapters = [{title.split(" — ")[0]: f"theory/{name}"} for name, title, _ in _BUILD["chapters"]]
            config["nav"][i] = {"Theory": [{"Contents": "theory/index.md"}, *chapters]}
        if isinstance(entry, dict) and entry.get("Notebooks") == "notebooks/index.md":
            pages = [{title: uri} for title, uri in notebook_pages()]
            config["nav"][i] = {"Notebooks": [{"Overview": "notebooks/index.md"}, *pages]}
        if isinstance(entry, dict) and isinstance(entry.get("API reference"), list):
            section = entry["API reference"]
            for j, item in enumerate(section):
                (title, uri), *_ = item.items()
                if isinstance(uri, str) and _BUILD["api"].get(uri):
                    modules = [{m.split(".", 2)[2]: api_module_uri(m)} for m in _BUILD["api"][uri]]
                    section[j] = {title: [{"Overview": uri}, *modules]}
    return config


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add the generated pages: the theory contents (``theory/index.md``), the notebooks' contents
    (``notebooks/index.md``, from notebooks/README.md), one page per API module."""
    files.append(File.generated(config, "theory/index.md", content=theory_contents_page(_BUILD.get("chapters"))))
    files.append(File.generated(config, "notebooks/index.md", content=notebooks_index()))
    for modules in _BUILD.get("api", api_pages()).values():
        for module in modules:
            files.append(File.generated(config, api_module_uri(module), content=api_module_page(module)))
    return files


def on_page_markdown(markdown: str, page: Any = None, **kwargs: Any) -> str:
    """Theory links to chapter pages; a subpackage's API page links its modules' pages; GitHub's
    heading ids where the toc's would differ; display maths in blocks of their own."""
    if page is not None:
        markdown = theory_links_to_chapters(markdown, page.file.src_uri, _BUILD.get("anchors"))
        if page.file.src_uri in _BUILD.get("api", {}):
            markdown = api_list_modules(markdown, page.file.src_uri)
    return separate_display_maths(github_heading_ids(markdown))


_API_ID = re.compile(r'id="(gcsim\.[\w.]+)"')


def site_links(files: Files) -> SiteLinks:
    """The link targets of the build, read from the rendered pages (the API entries' ids)."""
    pages = [f for f in files.documentation_pages() if f.page is not None]
    urls = {f.src_uri: f.url for f in pages}
    sections = {
        number: f"theory/{Path(chapter).stem}/#{local}"
        for number, (chapter, local) in section_map(_BUILD["chapters"]).items()
    }
    # docs/theory.md#<GitHub id> in a docstring: the chapter holding the heading
    sections |= {f"#{gid}": f"theory/{Path(c).stem}/#{local}" for gid, (c, local) in _BUILD["anchors"].items()}
    api = {
        ident: f.url
        for f in pages
        if f.src_uri.startswith("api/") and f.page.content
        for ident in _API_ID.findall(f.page.content)
    }
    return SiteLinks(urls, sections, api, gcsim_exports())


def on_env(env: Any, config: Any, files: Files, **kwargs: Any) -> Any:
    """Links made once every page is rendered: each "§N.k" (theory section) and ``docs/…md`` (a page)
    becomes a link; in the guides and the other prose pages, the first code span naming each API
    entry (``gcsim.encode``, ``advise(...)``, ``CerarDesign``) links to it, and each module's API page
    lists the guides that link to it. A reference to no section or page fails the build."""
    links = site_links(files)
    overviews = {"api/index.md", *_BUILD["api"]}
    used_by: dict[str, list[tuple[str, str]]] = {}
    problems: list[str] = []
    for file in files.documentation_pages():
        page = file.page
        if page is None or not page.content:
            continue
        # code spans link to the API from the prose pages and the API's overview pages (not from
        # the entries themselves: their types and parameters are code spans by the hundred)
        prose = not file.src_uri.startswith(("api/", "theory/")) or file.src_uri in overviews
        page.content, linked = link_page(page.content, file.url, links, code_links=prose)
        if links.unresolved:
            problems.append(f"{file.src_uri}: {sorted(set(links.unresolved))}")
            links.unresolved.clear()
        for entry in linked:
            title = page.title or file.src_uri
            if page.parent is not None and title == "Overview":  # the guides' overview, not another's
                title = f"{page.parent.title}: {title}"
            pair = (file.url, title)
            if pair not in used_by.setdefault(links.api[entry], []):
                used_by[links.api[entry]].append(pair)
    if problems:
        raise PluginError("references to no theory section or docs page:\n" + "\n".join(problems))
    for file in files.documentation_pages():
        page = file.page
        if page is not None and page.content and file.url in used_by:
            guides = ", ".join(
                f'<a href="{get_relative_url(url, file.url)}">{html_module.escape(title)}</a>'
                for url, title in used_by[file.url]
            )
            note = f'<p class="gcsim-used-by">Used in: {guides}.</p>'
            page.content = re.sub(r"(</h1>)", lambda m: m.group(1) + note, page.content, count=1)
    return env


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


# lunr 2.3.9 (bundled in the theme's search worker) keys a trie node by its final flag followed by
# label + child id for each edge, with nothing between them. With digit labels two different nodes can
# share a key ({"0": 3, "4": 3} and {"0": 343} both give "00343"), and the builder's minimisation then
# merges them: the worker's token set loses words of the index and gains words that are not in it, and
# a query whose prefix expands to such a word throws ("Cannot read properties of undefined (reading
# '_index')"), which the theme shows as "No matching documents". Ending every edge with "," makes the
# key unambiguous: each edge is one UTF-16 unit (the label), digits (the id), then ",".
_SEARCH_WORKERS = Path("assets") / "javascripts" / "workers"
_LUNR_KEY_MARK = "/* gcsim: lunr.TokenSet keys */"
_LUNR_KEY_FIX = (
    _LUNR_KEY_MARK
    + "(function(){var T=self.lunr.TokenSet;T.prototype.toString=function(){if(this._str)return this._str;"
    + 'var s=this.final?"1":"0",l=Object.keys(this.edges).sort();'
    + 'for(var i=0;i<l.length;i++)s+=l[i]+this.edges[l[i]].id+",";return s}})();\n'
)


def mend_search_worker(site_dir: Path) -> Path:
    """Make the search worker's trie keys unambiguous (see ``_LUNR_KEY_FIX``); returns the worker's path.

    The fix runs after the worker's own code has set ``self.lunr`` and before any message reaches it
    (the worker builds its index on its first message). A theme whose worker no longer has
    ``lunr.TokenSet`` or no longer exposes ``self.lunr`` fails the build, so an upgrade is looked at.
    """
    workers = sorted((site_dir / _SEARCH_WORKERS).glob("search.*.min.js"))
    if len(workers) != 1:
        raise PluginError(f"expected one search worker in {site_dir / _SEARCH_WORKERS}, found {len(workers)}")
    worker = workers[0]
    text = worker.read_text(encoding="utf-8")
    if _LUNR_KEY_MARK in text:
        return worker
    if "TokenSet.prototype.toString" not in text or "self.lunr=" not in text:
        raise PluginError(f"{worker.name}: no lunr.TokenSet exposed as self.lunr; recheck _LUNR_KEY_FIX")
    # before the source-map comment, which must stay the file's last line
    head, sep, tail = text.rpartition("//# sourceMappingURL=")
    body, rest = (head, sep + tail) if sep else (text, "")
    if not body.endswith("\n"):
        body += "\n"
    worker.write_text(body + _LUNR_KEY_FIX + rest, encoding="utf-8")
    return worker


def on_post_build(config: Any, **kwargs: Any) -> None:
    """Copy MathJax into ``<site_dir>/assets/mathjax`` (the path mkdocs.yml's extra_javascript names),
    and mend the search worker's trie keys (``mend_search_worker``)."""
    mend_search_worker(Path(config["site_dir"]))
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
