"""The docs site (mkdocs.yml) builds in strict mode and its API reference covers the public names.

One strict build (``mkdocs build --strict``, what ``make docs`` runs) into a temporary folder: a
broken link or anchor between pages, or a docstring mkdocstrings cannot parse, fails it. The
checks then read the built HTML against what the source says independently of mkdocs: the modules
on disk and their ``__all__`` (read with ``ast``), the ``$$`` blocks of docs/theory.md, the headings
of docs/theory.md's contents. The build takes about 10-30 s on two cores (it prints its time).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_guides import python_blocks

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("combinatorics", "coding", "cerar", "catalogue", "executor", "learning", "io")
_ID = re.compile(r'id="(gcsim\.[\w.]+)"')


def _load_script(name: str):
    """A module of scripts/ (the mkdocs hooks and the griffe extension), imported by path."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public_modules(sub: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / "gcsim" / sub).glob("[a-z]*.py"))


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


@pytest.mark.slow
def test_api_pages_name_the_entry_points(site):
    ids = set().union(*(_ID.findall(_page(site, f"api/{sub}")) for sub in SUBPACKAGES))
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
    """Each public module of the subpackage has its section, and each name of its ``__all__`` an entry."""
    ids = set(_ID.findall(_page(site, f"api/{sub}")))
    modules = _public_modules(sub)
    assert modules
    missing = []
    for mod in modules:
        qual = f"gcsim.{sub}.{mod}"
        if qual not in ids:
            missing.append(qual)
        missing += [f"{qual}.{n}" for n in _dunder_all(ROOT / "gcsim" / sub / f"{mod}.py")]
        missing = [m for m in missing if m not in ids]
    assert not missing, f"docs/api/{sub}.md does not document: {missing}"


@pytest.mark.slow
def test_theory_maths_is_rendered_by_mathjax_from_the_site(site):
    html = _page(site, "theory")
    source = (ROOT / "docs" / "theory.md").read_text(encoding="utf-8")
    # every $$ ... $$ is a display (most of them inside a paragraph, two inside list items): each one
    # becomes one arithmatex div, none is left as text
    displays = source.count("$$") // 2
    assert displays > 50
    assert html.count('<div class="arithmatex">') == displays
    assert html.count('<span class="arithmatex">') > 1000  # inline $...$
    assert "$$" not in html
    # MathJax comes from the site itself, not from a CDN
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert "../assets/mathjax/tex-chtml.js" in scripts
    assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))]
    assert (site / "assets" / "mathjax" / "tex-chtml.js").stat().st_size > 500_000
    assert (site / "assets" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert (site / "javascripts" / "mathjax_config.js").is_file()


@pytest.mark.slow
def test_theory_contents_links_land_on_headings(site):
    """docs/theory.md's contents use GitHub's heading ids; the site's headings carry the same ids."""
    html = _page(site, "theory")
    ids = set(re.findall(r'id="([^"]+)"', html))
    contents = (ROOT / "docs" / "theory.md").read_text(encoding="utf-8").split("\n## ", 2)[1]
    anchors = re.findall(r"\]\(#([^)]+)\)", contents)
    assert len(anchors) > 30
    assert [a for a in anchors if a not in ids] == []


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
    # the chapters docs/theory.md is assembled from are not published twice
    assert not (site / "theory" / "10_bibd").exists()


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
