"""The docs site (mkdocs.yml) builds in strict mode and its API reference covers the public names.

One strict build (``mkdocs build --strict``, what ``make docs`` runs) into a temporary folder: a
broken link or anchor between pages, or a docstring mkdocstrings cannot parse, fails it. The
checks then read the built HTML against what the source says independently of mkdocs: the modules
on disk and their ``__all__`` (read with ``ast``), the ``$$`` blocks of docs/theory.md, the headings
of docs/theory.md's contents. The build takes about 10-30 s on two cores (it prints its time).
"""

from __future__ import annotations

import ast
import functools
import http.server
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from guards import load_script
from test_guides import python_blocks

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("combinatorics", "coding", "cerar", "catalogue", "executor", "learning", "io")
_ID = re.compile(r'id="(gcsim\.[\w.]+)"')


def _load_script(name: str):
    """A module of scripts/ (the mkdocs hooks and the griffe extension), imported by path."""
    return load_script(f"scripts/{name}.py", name)


def _public_modules(sub: str) -> list[str]:
    """The public modules and subpackages of ``gcsim.<sub>`` (names not starting with ``_``)."""
    folder = ROOT / "gcsim" / sub
    packages = [p.parent.name for p in folder.glob("[a-z]*/__init__.py")]
    return sorted([p.stem for p in folder.glob("[a-z]*.py")] + packages)


def _dunder_all(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip(
        "mkdocstrings_handlers.python", reason="the docs extra is not installed: pip install -e '.[docs]'"
    )
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - start
    print(f"mkdocs build --strict: {elapsed:.1f} s")
    assert proc.returncode == 0, f"strict build failed ({elapsed:.1f} s):\n{proc.stderr[-5000:]}"
    return out


def _page(site: Path, rel: str) -> str:
    return (site / rel / "index.html").read_text(encoding="utf-8")


def _api_ids(site: Path, sub: str) -> set[str]:
    """The entry ids of a subpackage's API pages: its overview and one page per module."""
    pages = [site / "api" / sub / "index.html", *sorted((site / "api" / sub).glob("*/index.html"))]
    return set().union(*(_ID.findall(p.read_text(encoding="utf-8")) for p in pages))


@pytest.mark.slow
def test_api_pages_name_the_entry_points(site):
    ids = set().union(*(_api_ids(site, sub) for sub in SUBPACKAGES))
    for name in (
        "gcsim.combinatorics.bibd.bibd",
        "gcsim.combinatorics.srg.srg",
        "gcsim.coding.schemes.encode",
        "gcsim.coding.schemes.Scheme",
        "gcsim.coding.evaluate.optimal_error",
        "gcsim.coding.stragglers.straggler_model",
        "gcsim.cerar.design.CerarDesign",
        "gcsim.cerar.factory.design",
        "gcsim.catalogue.objects.load_object",
        "gcsim.executor.ddp_hook.register_cerar_hook",
        "gcsim.io.bundle.load_bundle",
    ):
        assert name in ids, name


@pytest.mark.slow
@pytest.mark.parametrize("sub", SUBPACKAGES)
def test_api_page_covers_every_module_and_its_all(site, sub):
    """Each public module of the subpackage has its page, and each name of its ``__all__`` an entry there."""
    ids = _api_ids(site, sub)
    modules = _public_modules(sub)
    assert modules
    missing = []
    for mod in modules:
        qual = f"gcsim.{sub}.{mod}"
        if qual not in ids:
            missing.append(qual)
        source = ROOT / "gcsim" / sub / f"{mod}.py"
        source = source if source.is_file() else ROOT / "gcsim" / sub / mod / "__init__.py"
        missing += [f"{qual}.{n}" for n in _dunder_all(source)]
        missing = [m for m in missing if m not in ids]
        page = site / "api" / sub / mod / "index.html"
        if not page.is_file() or f'id="{qual}"' not in page.read_text(encoding="utf-8"):
            missing.append(f"page api/{sub}/{mod}/")
    assert not missing, f"docs/api/{sub}.md does not document: {missing}"


def _chapters() -> list[str]:
    return sorted(p.stem for p in (ROOT / "docs" / "theory").glob("*.md"))


@pytest.mark.slow
def test_theory_maths_is_rendered_by_mathjax_from_the_site(site):
    displays = inline = 0
    for chapter in _chapters():
        html = _page(site, f"theory/{chapter}")
        source = (ROOT / "docs" / "theory" / f"{chapter}.md").read_text(encoding="utf-8")
        # every $$ ... $$ is a display (most of them inside a paragraph, some inside list items): each
        # one becomes one arithmatex div, none is left as text
        assert html.count('<div class="arithmatex">') == source.count("$$") // 2, chapter
        assert "$$" not in html, chapter
        displays += source.count("$$") // 2
        inline += html.count('<span class="arithmatex">')
        # MathJax comes from the site itself, not from a CDN
        scripts = re.findall(r'<script src="([^"]+)"', html)
        assert "../../assets/mathjax/tex-chtml.js" in scripts, chapter
        assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))]
    assert displays > 50 and inline > 1000
    assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))]
    assert (site / "assets" / "mathjax" / "tex-chtml.js").stat().st_size > 500_000
    assert (site / "assets" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert (site / "javascripts" / "mathjax_config.js").is_file()


@pytest.mark.slow
def test_theory_contents_links_land_on_headings(site):
    """The contents page links every chapter and section; each link lands on a heading of its page."""
    html = _page(site, "theory")
    links = re.findall(r'href="(\d\d_[\w-]+)/(?:#([^"]+))?"', html)
    assert {c for c, _ in links} == set(_chapters())
    assert len(links) > 60
    missing = []
    for chapter, anchor in links:
        ids = set(re.findall(r'id="([^"]+)"', _page(site, f"theory/{chapter}")))
        if anchor and anchor not in ids:
            missing.append(f"{chapter}#{anchor}")
    assert missing == []


@pytest.mark.slow
def test_links_to_the_assembled_theory_land_on_chapter_headings(site):
    """The guides link docs/theory.md#<GitHub id> (right on GitHub); on the site each lands on its chapter."""
    sources = [p for p in (ROOT / "docs" / "guides").glob("*.md") if "theory.md#" in p.read_text(encoding="utf-8")]
    assert sources
    for src in sources:
        html = _page(site, f"guides/{src.stem}")
        targets = re.findall(r'href="\.\./\.\./theory/(\d\d_[\w-]+)/#([^"]+)"', html)
        assert targets, src.name
        for chapter, anchor in targets:
            assert f'id="{anchor}"' in _page(site, f"theory/{chapter}"), (src.name, chapter, anchor)
        assert "theory.md" not in re.sub(r"<code>.*?</code>", "", html), src.name


@pytest.mark.slow
def test_every_page_of_the_nav_is_built(site):
    for rel in (
        "",
        "getting_started",
        "guides",
        "guides/coding",
        "theory",
        "results/agc",
        "results/bandwidth",
        "reliability",
        "limitations",
        "coverage",
        "api",
    ):
        assert (site / rel / "index.html").is_file(), rel
    # one page per theory chapter; the assembled docs/theory.md (for GitHub) is not published
    for chapter in _chapters():
        assert (site / "theory" / chapter / "index.html").is_file(), chapter
    assert not (site / "theory.md").exists() and "theory.md" not in (site / "theory" / "index.html").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["index.md", "getting_started.md"])
def test_site_pages_code_blocks_run(name, tmp_path):
    path = ROOT / "docs" / name
    blocks = python_blocks(path)
    assert blocks
    script = tmp_path / f"{path.stem}.py"
    script.write_text("\n\n".join(blocks))
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{name}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    if name == "getting_started.md":
        assert (tmp_path / "first_error_curve.png").stat().st_size > 10_000
        assert "CerarParams(N=4, c=8, L=10)" in proc.stdout


def test_fence_doctests_fences_bare_examples_only():
    fence = _load_script("griffe_docstring_markup").fence_doctests
    text = "Text.\n\n>>> f([1])\n[[1, 2], [3]]\n\nMore.\n\nExamples\n--------\n>>> g()\n1"
    assert fence(text) == (
        "Text.\n\n```pycon\n>>> f([1])\n[[1, 2], [3]]\n```\n\nMore.\n\nExamples\n--------\n>>> g()\n1"
    )
    # indented (inside a parameter's description) keeps its indentation; fenced code is left alone
    assert fence("x : int\n    >>> 1\n    1") == "x : int\n    ```pycon\n    >>> 1\n    1\n    ```"
    assert fence("```\n>>> 1\n```") == "```\n>>> 1\n```"


def test_sphinx_roles_become_code_spans():
    roles = _load_script("griffe_docstring_markup").sphinx_roles_to_code
    text = "See :func:`encode`, :class:`~gcsim.cerar.design.CerarDesign` and :py:mod:`gcsim.io`; ``x`` stays."
    assert roles(text) == "See `encode`, `CerarDesign` and `gcsim.io`; ``x`` stays."


def test_github_heading_ids():
    hooks = _load_script("mkdocs_hooks")
    # GitHub's ids as they appear in docs/theory.md's contents (written by scripts/build_theory.py)
    assert hooks.github_slug("30. Coset bipartite graphs: invertibility  (reconstruction)") == (
        "30-coset-bipartite-graphs-invertibility--reconstruction"
    )
    assert hooks.github_slug("50.5 Floating point: the ε trade-off") == "505-floating-point-the-ε-trade-off"
    md = "## a  b\n\n```bash\n# x  y\n```\n\n### c d\n\n## e  f { #given }"
    assert hooks.github_heading_ids(md) == "## a  b { #a--b }\n\n```bash\n# x  y\n```\n\n### c d\n\n## e  f { #given }"


def test_make_docs_builds_strict():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: .*\n\t.*mkdocs build --strict", make, re.M)
    assert re.search(r"^\.PHONY:.*\bdocs\b", make, re.M)
    assert "/site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_mkdocs_api_pages_list_every_module():
    """Cheap (no build): each public module has its ``::: gcsim.<sub>.<mod>`` block."""
    for sub in SUBPACKAGES:
        text = (ROOT / "docs" / "api" / f"{sub}.md").read_text(encoding="utf-8")
        blocks = set(re.findall(rf"^::: gcsim\.{sub}\.(\w+)$", text, re.M))
        assert blocks == set(_public_modules(sub)), sub


# ---------------------------------------------------------------------------
# the built site in a real browser (headless Chromium through Selenium and the distribution's driver)

_CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
_DRIVER = shutil.which("chromedriver")

#: in the page: wait for MathJax's start-up typesetting (where the page has maths), then report the
#: formulas (arithmatex elements, MathJax containers, those drawn empty: no width, or no character with
#: content: CommonHTML draws each one as the ::before content of an mjx-c element) and what the reader
#: would see raw: TeX in the text outside code, a literal "\\|" outside code blocks, control characters
_PROBE = r"""
const done = arguments[arguments.length - 1];
const later = () => new Promise(r => setTimeout(r, 50));
// the page's document parsed (with the "eager" strategy the driver may hand over before it is)
const parsed = () => (document.body && document.readyState !== "loading") ? Promise.resolve() : later().then(parsed);
const ready = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
  ? MathJax.startup.promise : later().then(ready);
let maths = 0;
parsed().then(() => {
  maths = document.querySelectorAll(".arithmatex").length;
  return maths ? ready() : null;
}).then(() => {
  const containers = [...document.querySelectorAll("mjx-container")];
  const empty = containers.filter(c => {
    const drawn = [...c.querySelectorAll("mjx-c")].some(g => {
      const s = getComputedStyle(g, "::before").content;
      return s && s !== "none" && s !== "normal" && s !== '""';
    });
    return !(c.getBoundingClientRect().width > 0) || !(drawn || c.querySelector("mjx-utext"));
  });
  const without = (sel) => {
    const clone = document.body.cloneNode(true);
    clone.querySelectorAll(sel).forEach(e => e.remove());
    return clone.textContent;
  };
  const prose = without("pre, code, script, style, mjx-container, textarea");
  const shown = without("pre, script, style, mjx-container, textarea");
  const around = (text, i) => text.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, " ");
  const hits = (text, needles) => needles.filter(n => text.includes(n)).map(n => around(text, text.indexOf(n)));
  const all = document.body.textContent;
  const control = all.search(/[\x00-\x08\x0b\x0c\x0e-\x1f]/);
  done({
    path: location.pathname,
    maths: maths,
    containers: containers.length,
    empty: empty.length,
    first_empty: empty.length ? empty[0].outerHTML.slice(0, 200) : "",
    raw_tex: hits(prose, ["$$", "\\(", "\\)", "\\[", "\\frac", "\\begin", "\\mathbb", "\\sum"]),
    pipes: hits(shown, ["\\|"]),
    control: control < 0 ? "" : around(all, control),
  });
}).catch(e => done({error: String(e)}));
"""


@pytest.fixture(scope="module")
def browser(site):
    """Headless Chromium on the built site, served over HTTP on localhost (as a reader would load it)."""
    if _CHROMIUM is None or _DRIVER is None:
        pytest.skip(
            "no Chromium here: install the distribution's chromium and chromium-driver "
            "(Debian: apt-get install chromium chromium-driver; .ci/run does)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="the test extra is not installed (selenium)")
    from selenium.webdriver.chrome.service import Service

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = _CHROMIUM
    # the probes wait for what they need (MathJax's typesetting); the load event adds nothing they read
    options.page_load_strategy = "eager"
    # as root in a container Chromium needs --no-sandbox; the rest keeps it off the network
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(_DRIVER), options=options)
    driver.set_script_timeout(120)
    driver.set_page_load_timeout(120)
    driver.set_window_size(1280, 900)
    try:
        yield driver, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


def _site_pages(site: Path) -> list[str]:
    """Every page of the built site, as a path under its root (``""`` the home page)."""
    pages = [p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")]
    return sorted("" if p == "." else p for p in pages if not p.startswith(("assets", "search")))


@pytest.mark.slow
def test_every_page_renders_in_a_browser(browser, site):
    """Each page of the site in headless Chromium: every formula typeset and drawn, no TeX left raw in the
    text (the contents sidebar included), no literal ``\\|``, no control characters (issue #34 item 1)."""
    driver, base = browser
    pages = _site_pages(site)
    assert len(pages) > 100
    start = time.perf_counter()
    bad, maths = {}, {}
    # each page would load the whole site's search index (2 MB) and build it: half the time of a page;
    # search has its own test
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/search/search_index.json"]})
    try:
        for page in pages:
            driver.get(f"{base}/{page}/" if page else f"{base}/")
            result = driver.execute_async_script(_PROBE)
            assert result.get("path", f"/{page}/".replace("//", "/")) == f"/{page}/".replace("//", "/"), result
            maths[page] = result.get("maths", 0)
            problems = {k: result[k] for k in ("error", "first_empty", "raw_tex", "pipes", "control") if result.get(k)}
            if result.get("containers") != result.get("maths"):
                problems["typeset"] = f"{result.get('containers')} of {result.get('maths')} formulas"
            if problems:
                bad[page] = problems
    finally:
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    print(f"{len(pages)} pages in the browser: {time.perf_counter() - start:.1f} s")
    assert bad == {}
    # the probe sees the maths: every theory chapter has some, and the docstrings' maths reach the API pages
    assert all(maths[f"theory/{chapter}"] > 0 for chapter in _chapters())
    assert maths["api/coding/bounds"] > 0 and maths["api/executor/arrays"] > 0
    assert ".. math::" not in _page(site, "api/coding/bounds")


@pytest.mark.slow
def test_search_answers_in_a_browser(browser):
    """The search box finds "bibd" (the search worker loads over HTTP; over file:// it never starts)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver, base = browser
    driver.set_window_size(1280, 900)  # a desktop width: the search box is in the header
    driver.get(f"{base}/")
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    box.click()
    WebDriverWait(driver, 60).until(
        lambda d: "Initializing" not in d.find_element(By.CSS_SELECTOR, ".md-search-result__meta").text
    )
    box.send_keys("bibd")
    items = WebDriverWait(driver, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item") or False
    )
    meta = driver.find_element(By.CSS_SELECTOR, ".md-search-result__meta").text
    assert len(items) > 0 and re.match(r"\d+ matching documents", meta), meta
    assert any("bibd" in item.text.lower() for item in items)


_NODE = shutil.which("node")
_WORKER_CHECK = ROOT / "tests" / "js" / "search_worker.js"
_NEEDS_NODE = pytest.mark.skipif(_NODE is None, reason="node is not installed: the search worker is run in node")


def _search_worker(root: Path) -> Path:
    (worker,) = sorted((root / "assets" / "javascripts" / "workers").glob("search.*.min.js"))
    return worker


def _run_search_worker(*args: object) -> dict[str, Any]:
    assert _NODE is not None
    proc = subprocess.run(
        [_NODE, str(_WORKER_CHECK), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@_NEEDS_NODE
def test_search_worker_keys_tell_trie_nodes_apart(site):
    """The built worker keys two different lunr trie nodes differently; the theme's lunr 2.3.9 does not.

    ``{"0": 3, "4": 3}`` and ``{"0": 343}`` (edge label: child id) both key as "00343" in lunr 2.3.9,
    and its minimisation merges nodes with equal keys (scripts/mkdocs_hooks.py, ``mend_search_worker``).
    """
    import material

    built = _run_search_worker(_search_worker(site), "--keys")
    assert built["a"] != built["b"], built
    theme = _search_worker(Path(material.__file__).parent / "templates")
    if 'version="2.3.9"' in theme.read_text(encoding="utf-8"):
        shipped = _run_search_worker(theme, "--keys")
        assert shipped["a"] == shipped["b"], f"the theme's lunr no longer has the ambiguous keys: {shipped}"


@_NEEDS_NODE
def test_search_worker_indexes_every_word_of_the_site(site):
    """The worker's token set holds exactly the words of search_index.json, and no query throws.

    Without the mended keys the theme's worker lost 24 words of this site and invented 22 when this test
    was written (a query expanding to an invented word throws, and the page says "No matching documents").
    """
    report = _run_search_worker(_search_worker(site), site / "search" / "search_index.json", "bibd", "cerar", "k=7")
    assert report["words"] > 10_000, report["words"]
    assert report["missing"] == [] and report["extra"] == [], (report["missing"][:10], report["extra"][:10])
    assert None not in report["results"].values(), report["results"]
    assert report["results"]["bibd"] > 0 and report["results"]["cerar"] > 0, report["results"]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["", "getting_started", "guides/advisor", "guides/cli"])
def test_code_blocks_fit_a_desktop_screen(browser, page):
    """At 1920 x 1080 no code block of the home page or these guides needs a horizontal scroll."""
    driver, base = browser
    driver.set_window_size(1920, 1080)
    driver.get(f"{base}/{page}")
    wide = driver.execute_script(
        "return [...document.querySelectorAll('pre > code')]"
        ".filter(c => c.scrollWidth > c.clientWidth + 1)"
        ".map(c => c.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, ''))"
    )
    assert wide == [], wide


@pytest.mark.slow
def test_results_pages_show_their_figures(site):
    """Each figure of a results folder is shown on its page (an <img>), not only linked."""
    html = _page(site, "results/agc")
    shown = set(re.findall(r'<img[^>]+src="([^"]+\.png)"', html))
    figures = {p.name for p in (ROOT / "docs" / "results" / "agc").glob("*.png")}
    assert figures and figures <= shown, sorted(figures - shown)


def test_math_directives_become_displays():
    maths = _load_script("griffe_docstring_markup").math_directives
    text = "Text.\n\n.. math::  a = b,\n    c = d\n\nMore :math:`x`.\n\n    .. math::\n\n        E\\|g\\|\n\n    tail"
    assert maths(text) == ("Text.\n\n$$\na = b,\nc = d\n$$\n\nMore $x$.\n\n    $$\n    E\\|g\\|\n    $$\n\n    tail")
    assert maths("```\n.. math:: x\n```") == "```\n.. math:: x\n```"


def test_combined_parameters_get_an_entry_each():
    split = _load_script("griffe_docstring_markup").split_combined_parameters
    text = (
        "Parameters\n----------\nsamples, exact_limit : int\n    Budgets.\nseed : int\n    Seed."
        "\n\nReturns\n-------\na, b : int\n    Kept."
    )
    assert split(text) == (
        "Parameters\n----------\nsamples : int\n    Budgets.\nexact_limit : int\n    Budgets.\nseed : int\n    Seed."
        "\n\nReturns\n-------\na, b : int\n    Kept."
    )


@pytest.mark.slow
def test_combined_parameters_show_their_own_defaults(site):
    """``samples, exact_limit : int`` in advise's docstring: exact_limit's row shows its own default, 20000."""
    html = _page(site, "api/advisor/core")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html, re.S)
    row = next(r for r in rows if re.search(r"<code>exact_limit</code>", r) and "pattern count" in r)
    assert "20000" in row and "2000</code>" not in row.replace("20000", "")


def test_api_pages_do_not_repeat_the_package_summary():
    """The package docstring opens each API page; the page itself adds only links to the guides."""
    for sub in (*SUBPACKAGES, "advisor"):
        head = (ROOT / "docs" / "api" / f"{sub}.md").read_text(encoding="utf-8").split("\n::: ", 1)[0]
        prose = [line for line in head.split("\n")[1:] if line.strip()]
        assert all(line.startswith(("Guide: ", "Guides: ")) for line in prose), (sub, prose)


# ---------------------------------------------------------------------------
# links made at build time (scripts/mkdocs_hooks.py on_env): theory sections, docs pages, API entries

_SECTIONS = {"5": "theory/05_model/#5-the-model", "5.4": "theory/05_model/#54-encoders", "#x": "theory/05_model/#x"}


def _links(hooks):
    urls = {
        "guides/coding.md": "guides/coding/",
        "theory/index.md": "theory/",
        "theory/05_model.md": "theory/05_model/",
    }
    api = {"gcsim.coding.schemes.encode": "api/coding/schemes/", "gcsim.cerar.design.CerarDesign": "api/cerar/design/"}
    return hooks.SiteLinks(urls, dict(_SECTIONS), api, {"encode": "gcsim.coding.schemes.encode"})


def test_section_references_become_links_and_citations_do_not():
    hooks = _load_script("mkdocs_hooks")
    links = _links(hooks)
    html = (
        "<p>See theory §5.4 and (§5); docs/theory.md §5.4; docs/guides/coding.md. BvM §5.4, Higham 2002, §5 "
        "and <em>Graphs</em>, §5.4 are books; §3.1 is no chapter.</p><h2>Heading §5</h2><pre>§5.4</pre>"
        "<p><code>docs/guides/coding.md</code> <a href='x'>§5</a> <span class=\"arithmatex\">\\(§5\\)</span></p>"
    )
    out, _ = hooks.link_page(html, "api/coding/bounds/", links, code_links=False)
    hrefs = re.findall(r'<a href="([^"]+)">([^<]*(?:<code>[^<]*</code>)?)</a>', out)
    assert hrefs == [
        ("../../../theory/05_model/#54-encoders", "§5.4"),
        ("../../../theory/05_model/#5-the-model", "§5"),
        ("../../../theory/05_model/#54-encoders", "docs/theory.md §5.4"),
        ("../../../guides/coding/", "docs/guides/coding.md"),
        ("../../../guides/coding/", "<code>docs/guides/coding.md</code>"),
    ]
    assert links.unresolved == []
    # a section of a chapter that exists but a number that does not: recorded, the build fails on it
    hooks.link_page("<p>theory §5.9 and docs/guides/gone.md</p>", "guides/x/", links, code_links=False)
    assert links.unresolved == ["§5.9", "docs/guides/gone.md"]


def test_code_spans_naming_api_entries_become_links():
    hooks = _load_script("mkdocs_hooks")
    links = _links(hooks)
    html = (
        '<p><code>gcsim.coding.schemes.encode</code>, <code>encode(g, 2, "rd")</code>, <code>CerarDesign</code>, '
        "<code>encode</code>, <code>bibd</code>, <code>gcsim.nothing</code></p><pre><code>encode(g)</code></pre>"
    )
    out, linked = hooks.link_page(html, "guides/coding/", links, code_links=True)
    assert linked == ["gcsim.coding.schemes.encode", "gcsim.cerar.design.CerarDesign"]  # the first of each
    assert re.findall(r'<a href="([^"]+)"><code>([^<]+)</code></a>', out) == [
        ("../../api/coding/schemes/#gcsim.coding.schemes.encode", "gcsim.coding.schemes.encode"),
        ("../../api/cerar/design/#gcsim.cerar.design.CerarDesign", "CerarDesign"),
    ]
    assert hooks.link_page(html, "guides/coding/", links, code_links=False)[1] == []


def test_module_members_put_the_entry_points_first():
    """The hook's order against the source: ``gcsim``'s exports first, what is assigned (constants, aliases) last."""
    hooks = _load_script("mkdocs_hooks")
    stub = (ROOT / "gcsim" / "__init__.pyi").read_text(encoding="utf-8")
    exported = {a.asname or a.name for n in ast.parse(stub).body if isinstance(n, ast.ImportFrom) for a in n.names}
    for module in ("gcsim.advisor.core", "gcsim.coding.schemes", "gcsim.cerar.factory", "gcsim.combinatorics.bibd"):
        members = hooks.module_members(module)
        source = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        assert set(_dunder_all(source)) <= set(members), module
        tree = ast.parse(source.read_text(encoding="utf-8"))
        assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assigned |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        ranks = [2 if m in assigned or m.isupper() else 0 if m in exported else 1 for m in members]
        assert ranks == sorted(ranks), (module, members)
    assert hooks.module_members("gcsim.advisor.core")[0] == "advise"
    assert hooks.module_members("gcsim.coding.schemes")[0] == "encode"


def _article(html: str) -> str:
    return html[html.find("<article") : html.find("</article>")]


def _links_of(site: Path, page: Path) -> list[tuple[Path, str, str]]:
    """``(target page, anchor, link text)`` of each link of the page's article to another page of the site."""
    found = []
    for m in re.finditer(r'<a href="([^"#:]*)(?:#([^"]*))?"[^>]*>(.*?)</a>', _article(page.read_text("utf-8")), re.S):
        target = (page.parent / m.group(1) / "index.html").resolve() if m.group(1) else page
        found.append((target, m.group(2) or "", m.group(3)))
    return found


@pytest.mark.slow
def test_theory_references_are_links_that_land_on_their_section(site):
    """Each "§N.k" link lands on the heading numbered N.k; the API and guide pages hold over 200 of them
    and no "theory §N" in their prose is left a plain text."""
    heading = {}
    for chapter in _chapters():
        html = _page(site, f"theory/{chapter}")
        for ident, title in re.findall(r'<h[1-6] id="([^"]+)">(.*?)<', html):
            if m := re.match(r"(\d+(?:\.\d+)*)\.?\s", title):
                heading[(chapter, ident)] = m.group(1)
    in_api_and_guides = 0
    for page in sorted(site.rglob("index.html")):
        rel = page.parent.relative_to(site).as_posix()
        for target, anchor, text in _links_of(site, page):
            if m := re.search(r"§\s?(\d+(?:\.\d+)*)$", re.sub(r"<[^>]+>", "", text)):
                chapter = target.parent.name
                assert heading.get((chapter, anchor)) == m.group(1) or (
                    # docs/theory/47_delays.md §6 is 47.6
                    heading.get((chapter, anchor)) == f"{chapter.split('_')[0].lstrip('0')}.{m.group(1)}"
                ), (rel, text, chapter, anchor)
                in_api_and_guides += rel.startswith(("api/", "guides/"))
        if rel.startswith(("api/", "guides/")):
            prose = re.sub(r"<(a|pre|code|h\d)\b.*?</\1>", "", _article(page.read_text("utf-8")), flags=re.S)
            assert not re.search(r"theory §\s?\d", prose), rel
    assert in_api_and_guides > 200


@pytest.mark.slow
def test_guides_link_to_the_api_and_the_api_back_to_the_guides(site):
    """Every guide links API entries (each link lands on its entry); each module page an entry of which a
    guide links lists that guide; no docstring's ``docs/guides/….md`` is left a plain text."""
    used: dict[Path, set[Path]] = {}
    for src in sorted((ROOT / "docs" / "guides").glob("*.md")):
        page = site / "guides" / ("" if src.stem == "README" else src.stem) / "index.html"
        entries = [(t, a) for t, a, _ in _links_of(site, page) if a.startswith("gcsim.")]
        if "`gcsim." in src.read_text(encoding="utf-8"):
            assert entries, src.name
        for target, anchor in entries:
            assert f'id="{anchor}"' in target.read_text("utf-8"), (src.name, anchor)
            used.setdefault(target, set()).add(page.resolve())
    assert len(used) > 20
    for target, guides in used.items():
        back = {t for t, _, _ in _links_of(site, target) if t in guides}
        assert back == guides, target
    for page in (site / "api").rglob("index.html"):
        prose = re.sub(r"<(a|pre)\b.*?</\1>", "", _article(page.read_text("utf-8")), flags=re.S)
        assert "docs/guides/" not in prose, page


@pytest.mark.slow
def test_api_pages_are_one_per_module_with_the_entry_points_first(site):
    """api/advisor/core opens with ``advise``; no API page is over 600 KB (api/coding was 1.6 MB)."""
    ids = _ID.findall(_page(site, "api/advisor/core"))
    assert ids[:2] == ["gcsim.advisor.core", "gcsim.advisor.core.advise"], ids[:4]
    assert ids.index("gcsim.advisor.core.Progress") < ids.index("gcsim.advisor.core.PRUNE_COST")
    sizes = {p.parent.relative_to(site).as_posix(): p.stat().st_size for p in (site / "api").rglob("index.html")}
    assert len(sizes) > 80 and max(sizes.values()) < 600_000, max(sizes.items(), key=lambda kv: kv[1])


# ---------------------------------------------------------------------------
# the notebooks on the site: docs/notebooks/<stem>.md, written by scripts/make_notebooks.py --render

_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", _NOTEBOOKS, ids=[p.stem for p in _NOTEBOOKS])
def test_notebook_page_shows_the_notebook_as_it_is(notebook):
    """Each notebook has its page, which shows the notebook's current code cells, in order, with outputs
    (re-render after editing a notebook: ``scripts/make_notebooks.py --render NAME``)."""
    page = ROOT / "docs" / "notebooks" / f"{notebook.stem}.md"
    assert page.is_file(), f"no site page for {notebook.name}: run scripts/make_notebooks.py --render"
    text = page.read_text(encoding="utf-8")
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]).strip() for c in cells if c["cell_type"] == "code"]
    shown = [b.strip() for b in re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)]
    assert shown == sources, f"{page.name} is stale: run scripts/make_notebooks.py --render {notebook.name}"
    # outputs: text (indented) or rich HTML after the cells; the figures it names are there
    assert re.search(r"^    \S", text, re.M) or "<div" in text, page.name
    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text):
        assert (page.parent / figure).stat().st_size > 1000, figure
    # what the notebook shows reads as written: no NumPy scalar reprs, no empty table, no error
    assert not re.search(r"np\.(int|float)\d+\(", text), page.name
    assert "Empty DataFrame" not in text and not re.search(r"<tbody>\s*</tbody>", text), page.name
    assert "Traceback" not in text, page.name


def test_notebook_05_finds_the_coset_candidate():
    """The prose promises the (27,2,5) coset graph among the 54-worker candidates: its rows are shown."""
    text = (ROOT / "docs" / "notebooks" / "05_advisor.md").read_text(encoding="utf-8")
    cell = text.index("tb[tb.structure == 'coset graph (27,2,5)']")
    output = text[cell : text.index("```python", cell + 10)]
    rows = re.findall(r"<tr>\s*<th>\d+</th>(.*?)</tr>", output, re.S)
    assert rows and all("<td>" in r for r in rows), output[:2000]


@pytest.mark.slow
def test_notebooks_are_pages_of_the_site(site):
    """The notebooks' contents page (notebooks/README.md) links each notebook's page; each shows its figures."""
    html = _page(site, "notebooks")
    for notebook in _NOTEBOOKS:
        assert f'href="{notebook.stem}/"' in html, notebook.stem
        page = _page(site, f"notebooks/{notebook.stem}")
        figures = list((ROOT / "docs" / "notebooks" / f"{notebook.stem}_files").glob("*.png"))
        shown = re.findall(r'<img[^>]+src="([^"]+\.png)"', page)
        assert len(shown) == len(figures), notebook.stem
