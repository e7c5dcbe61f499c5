"""Generate the tour notebooks in notebooks/ from the cell sources below, and their pages on the site.

Notebooks are thin: they import gcsim and use small sizes and fixed seeds, so the
test suite executes them (pytest --nbmake notebooks/). Regenerate after editing:

    .venv/bin/python scripts/make_notebooks.py

The notebooks are committed without outputs. Their pages on the docs site (docs/notebooks/: each
notebook executed, as Markdown, its figures beside it) are written by

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/make_notebooks.py --render [NAME ...]

(every notebook, or those named; a few minutes). tests/test_docs_site.py checks that each page shows
its notebook's current cells.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = {
    "01_designs_tour.ipynb": [
        (
            "md",
            "# A tour of gcsim's designs\n\nBIBDs, strongly regular graphs, coset bipartite graphs and "
            "bi-regular graphs: built exactly, verified with integer arithmetic, with three-valued "
            "existence answers (True / False / None = unknown).",
        ),
        ("code", ("import matplotlib.pyplot as plt\nimport numpy as np\n\nimport gcsim")),
        ("md", "## The headline BIBD: PG(2,9) = (91, 91, 10, 10, 1)"),
        (
            "code",
            (
                "pg = gcsim.bibd(91, 10, 1)\n"
                "pg  # the rich display: params, construction, verification status, incidence picture"
            ),
        ),
        (
            "code",
            (
                "A = pg.assignment\n"
                "# every pair of parts is held together by exactly lambda = 1 worker\n"
                "G = A @ A.T\n"
                "print(np.unique(G[~np.eye(91, dtype=bool)]), np.unique(np.diag(G)))"
            ),
        ),
        ("md", "## Existence queries are three-valued"),
        (
            "code",
            (
                "for params in [(43, 7, 1), (36, 6, 1), (37, 4, 1), (46, 6, 3)]:\n"
                "    print(params, gcsim.bibd(*params, existence=True))"
            ),
        ),
        ("code", ("try:\n    gcsim.bibd(43, 7, 1)\nexcept gcsim.ImpossibleParametersError as e:\n    print(e)")),
        ("md", "## Strongly regular graphs"),
        (
            "code",
            (
                "for p in [(10, 3, 0, 1), (13, 6, 2, 3), (16, 5, 0, 2), (27, 16, 10, 8), (50, 7, 0, 1)]:\n"
                "    g = gcsim.srg(*p)\n"
                "    print(p, g.construction, g.verify(), g.eigenvalues())"
            ),
        ),
        ("md", "## The (27, 2, 5) coset bipartite graph and its invertibility certificate"),
        (
            "code",
            (
                "from gcsim.combinatorics.coset import certify_invertibility\n"
                "\n"
                "cg = gcsim.coset_graph(27, 2, 5)\n"
                "print(cg.assignment.shape, cg.connection_sets)\n"
                "cert = certify_invertibility(cg, method='rational')\n"
                "print(cert.certified, cert.method, cert.rank)\n"
                "cg"
            ),
        ),
        (
            "code",
            (
                "fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), constrained_layout=True)\n"
                "for ax, obj, title in (\n"
                "    (axes[0], pg, 'PG(2,9): 91 parts, 91 workers'),\n"
                "    (axes[1], cg, 'coset graph (27, 2, 5)'),\n"
                "):\n"
                "    ax.imshow(obj.assignment, cmap='Greys', interpolation='nearest')\n"
                "    ax.set_title(title)\n"
                "    ax.set_xlabel('worker j')\n"
                "    ax.set_ylabel('data part i')\n"
                "fig.suptitle('assignments: black = part i held by worker j')\n"
                "plt.show()"
            ),
        ),
        ("md", "## Bi-regular graph (40, 20, 3, 6), seeded"),
        (
            "code",
            (
                "bg = gcsim.biregular_graph(40, 20, 3, 6, seed=0)\n"
                "print(\n"
                "    'part degrees',\n"
                "    np.unique(bg.assignment.sum(1)).tolist(),\n"
                "    'worker degrees',\n"
                "    np.unique(bg.assignment.sum(0)).tolist(),\n"
                ")\n"
                "bg"
            ),
        ),
    ],
    "02_agc_error_and_bounds.ipynb": [
        (
            "md",
            "# Approximate gradient coding: errors and bounds\n\nOptimal-decoding error "
            "err(B, F) = min_X ‖B_F X − T‖²_F (raw, squared) of random-diagonal (RD) codes on PG(2,9) "
            "with m = 2, against the naive stacking baseline and the proven bounds.",
        ),
        (
            "code",
            (
                "import matplotlib.pyplot as plt\n"
                "import numpy as np\n"
                "\n"
                "import gcsim\n"
                "from gcsim.coding.bounds import rank_lower_bound, rd_upper_bound\n"
                "from gcsim.coding.evaluate import expected_error, worst_case_error\n"
                "from gcsim.coding.verify import verify_bounds"
            ),
        ),
        (
            "code",
            (
                "A = gcsim.bibd(91, 10, 1).assignment\n"
                "rd = gcsim.encode(A, 2, 'rd', eps=0.0, seed=0)\n"
                "naive = gcsim.encode(A, 2, 'naive')\n"
                "rd  # |B| as a heat map: block k of part i is row k*91 + i"
            ),
        ),
        (
            "code",
            (
                "s_values = [0, 10, 20, 30, 40, 50]\n"
                "rows = []\n"
                "for s in s_values:\n"
                "    masks = gcsim.straggler_model('fixed', 91, s=s).sample(200, seed=s)\n"
                "    rows.append(\n"
                "        (\n"
                "            s,\n"
                "            gcsim.optimal_error(rd, masks).mean(),\n"
                "            gcsim.optimal_error(naive, masks).mean(),\n"
                "            rank_lower_bound(A, 2, masks).mean(),\n"
                "            rd_upper_bound(A, 2, masks).mean(),\n"
                "        )\n"
                "    )\n"
                "rows = np.array(rows)\n"
                "rows.round(3)"
            ),
        ),
        (
            "code",
            (
                "mN = rd.m * rd.num_parts  # the error of a decoder that recovers nothing: 2 x 91 = 182\n"
                "plt.figure(figsize=(7, 4.2))\n"
                "plt.plot(rows[:, 0], rows[:, 1] / mN, 'o-', label='RD(0), one draw')\n"
                "plt.plot(rows[:, 0], rows[:, 2] / mN, 's-', label='naive stacking')\n"
                "plt.plot(rows[:, 0], rows[:, 3] / mN, 'k--', label='rank lower bound')\n"
                "plt.plot(rows[:, 0], rows[:, 4] / mN, ':', label='RD upper bound (expectation over draws)')\n"
                "plt.xlabel('stragglers s')\n"
                "plt.ylabel('normalized error err/(mN)')\n"
                "plt.grid(alpha=0.3)\n"
                "plt.legend(fontsize=8, loc='center left')\n"
                "plt.show()"
            ),
        ),
        ("md", "## Exact expectation vs Monte Carlo, and bound verification"),
        (
            "code",
            (
                "small = gcsim.encode(gcsim.srg(13, 6, 2, 3), 2, 'rd', seed=1)\n"
                "expected_error(small, gcsim.straggler_model('fixed', 13, s=3))"
            ),
        ),
        ("code", ("worst_case_error(small, 3)  # exact: all C(13, 3) straggler sets")),
        (
            "code",
            (
                "# tqdm.auto draws a notebook progress bar (ipywidgets) while the encoder is redrawn\n"
                "verify_bounds(small, gcsim.straggler_model('all', 13, s=3), draws=16, progress=True)"
            ),
        ),
    ],
    "03_cerar_design.ipynb": [
        (
            "md",
            "# CERAR: ring-based coded approximate all-reduce\n\nTraffic, exactness for c ≤ N, the "
            "perturbation and Vandermonde designs, and a small condition-number-constrained optimization.",
        ),
        ("code", ("import matplotlib.pyplot as plt\nimport numpy as np\n\nfrom gcsim import cerar")),
        (
            "code",
            (
                "for N, c in [(4, 4), (4, 8), (4, 16)]:\n"
                "    r = cerar.rates(N, c)\n"
                "    print(N, c, 'rounds', r['rounds'], 'rate', r['rate'], 'ring', r['ring_rate'])"
            ),
        ),
        (
            "code",
            (
                "g = np.random.default_rng(0).standard_normal((4, 1000))\n"
                "for method, kw in [('exact', {}), ('perturbation', {'eps': 0.01}), ('vandermonde', {})]:\n"
                "    c = 4 if method == 'exact' else 8\n"
                "    des = cerar.design(4, c, method, **kw)\n"
                "    res = cerar.simulate(des, g)\n"
                "    e = cerar.errors(des, g)\n"
                "    print(\n"
                "        f'{method:13s} c={c} bytes/worker={res.bytes_sent[0]} worst={e.worst_case:.3g} '\n"
                "        f'empirical={e.empirical:.3g} kappa_A={e.kappa_encoders.max():.3g}'\n"
                "    )"
            ),
        ),
        ("code", ("cerar.design(4, 8, 'perturbation', eps=0.01)  # encoders A_0 | A_1 | A_2 | A_3 side by side")),
        (
            "code",
            (
                "eps = np.logspace(-6, -0.5, 12)\n"
                "sw32 = cerar.epsilon_sweep(4, 8, eps, 'float32')\n"
                "plt.figure(figsize=(7, 4.2))\n"
                "# the reference first: where float32 meets it, the float32 markers stay on top\n"
                "plt.loglog(sw32.eps, sw32.exact_error, 'k--', lw=1, label='exact arithmetic (float64 reference)')\n"
                "plt.loglog(sw32.eps, sw32.error, 'o-', alpha=0.8, label='float32')\n"
                "plt.axvline(sw32.predicted_eps, ls=':', color='C2', label='predicted optimal ε (float32)')\n"
                "plt.xlabel('perturbation ε')\n"
                "plt.ylabel('max relative error')\n"
                "plt.grid(alpha=0.3, which='both')\n"
                "plt.legend(fontsize=8)\n"
                "plt.show()"
            ),
        ),
        ("md", "## A small optimized design (N = 3, c = 4), κ ≤ 5"),
        (
            "code",
            (
                "opt = cerar.design(3, 4, 'optimized', kappa=5.0, max_iter=4, progress=False)\n"
                "e = cerar.errors(opt)\n"
                "print(e.frobenius, e.kappa_encoders.max(), e.kappa_decoders.max())\n"
                "opt"
            ),
        ),
        ("md", "## Export with a κ certificate, and load it back in a fresh process"),
        (
            "code",
            (
                "import json\n"
                "import subprocess\n"
                "import sys\n"
                "import tempfile\n"
                "\n"
                "from gcsim.cerar.export import export_design\n"
                "\n"
                "path = export_design(opt, tempfile.mkdtemp(), name='opt_N3_c4')\n"
                "out = subprocess.run(\n"
                "    [sys.executable, '-m', 'gcsim', 'load', str(path), '--json'],\n"
                "    capture_output=True,\n"
                "    text=True,\n"
                "    check=True,\n"
                ").stdout\n"
                "json.loads(out)"
            ),
        ),
    ],
    "04_training_with_coded_gradients.ipynb": [
        (
            "md",
            "# Training with coded gradients\n\nA small MLP on scikit-learn's digits with Bernoulli "
            "stragglers: uncoded (ignore stragglers) vs RD codes with optimal decoding.",
        ),
        (
            "code",
            (
                "import matplotlib.pyplot as plt\n"
                "\n"
                "from gcsim.learning.datasets import load_digits\n"
                "from gcsim.learning.experiments import compare, default_codes\n"
                "\n"
                "data = load_digits(seed=0)\n"
                "codes = [c for c in default_codes() if c.label.startswith(('uncoded', 'RD(0) m=2', 'naive'))]\n"
                "[c.label for c in codes]"
            ),
        ),
        (
            "code",
            (
                "hist = compare(codes, data, p=0.2, iterations=60, seed=0)\n"
                "hist.groupby('label').tail(1)[['label', 'wallclock', 'train_loss', 'test_acc']]"
            ),
        ),
        (
            "code",
            (
                "fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))\n"
                "for label, g in hist.groupby('label'):\n"
                "    axes[0].plot(g.iteration, g.train_loss, label=label)\n"
                "    axes[1].plot(g.wallclock, g.train_loss, label=label)\n"
                "axes[0].set_xlabel('iteration')\n"
                "axes[1].set_xlabel('simulated wall clock (s)')\n"
                "for ax in axes:\n"
                "    ax.set_ylabel('training loss')\n"
                "    ax.legend(fontsize=7)\n"
                "plt.show()"
            ),
        ),
    ],
}


def _load_cells(stem: str) -> tuple[str, list]:
    """NAME and CELLS of scripts/<stem>.py (loaded by path: the tests import this file by path too)."""
    spec = importlib.util.spec_from_file_location(stem, Path(__file__).with_name(f"{stem}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NAME, module.CELLS


# every scripts/notebook_*.py is a notebook (found, not listed), in the order of their names
for _stem in sorted(p.stem for p in Path(__file__).parent.glob("notebook_*.py")):
    _name, _cells = _load_cells(_stem)
    NOTEBOOKS[_name] = _cells


def build() -> None:
    out = ROOT / "notebooks"
    out.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        # fixed cell ids: regenerating an unchanged notebook leaves the file unchanged
        nb = new_notebook(
            cells=[
                new_markdown_cell(src, id=f"cell-{i:02d}") if kind == "md" else new_code_cell(src, id=f"cell-{i:02d}")
                for i, (kind, src) in enumerate(cells)
            ]
        )
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, out / name)
        print("wrote", out / name)


SITE_PAGES = "docs/notebooks"
_WIDGET = "application/vnd.jupyter.widget-view+json"


def page_header(name: str, seconds: float) -> str:
    """The note opening a notebook's page: where it comes from and how to run it."""
    return (
        f'!!! note "Notebook `notebooks/{name}`"\n'
        f"    This page is the notebook as executed ({seconds:.0f} s) and converted by "
        "`scripts/make_notebooks.py --render`. Run it yourself: `make lab` (JupyterLab on notebooks/), "
        "or `pytest --nbmake notebooks/` (what the tests do).\n\n"
    )


def render(names: list[str] | None = None) -> None:
    """Execute each notebook and write its site page: ``docs/notebooks/<stem>.md``, figures in ``<stem>_files/``."""
    import nbclient
    from nbconvert import MarkdownExporter

    out = ROOT / SITE_PAGES
    out.mkdir(parents=True, exist_ok=True)
    for name in names or list(NOTEBOOKS):
        path = ROOT / "notebooks" / name
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        nbclient.NotebookClient(
            nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
        seconds = time.perf_counter() - start
        for cell in nb.cells:  # a progress bar is a live widget: its text on a static page is a stale 0%
            if cell.cell_type == "code":
                cell.outputs = [o for o in cell.outputs if _WIDGET not in o.get("data", {})]
        stem = path.stem
        body, resources = MarkdownExporter().from_notebook_node(nb, resources={"output_files_dir": f"{stem}_files"})
        files = out / f"{stem}_files"
        shutil.rmtree(files, ignore_errors=True)
        for rel, data in resources.get("outputs", {}).items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        # nbconvert puts each output after a blank line, indented (a code block): text outputs stay so;
        # the first heading goes above the note
        body = re.sub(r"[ \t]+$", "", body, flags=re.M).strip() + "\n"
        title, _, rest = body.partition("\n")
        (out / f"{stem}.md").write_text(f"{title}\n\n{page_header(name, seconds)}{rest.lstrip()}", encoding="utf-8")
        print(f"rendered {name} in {seconds:.1f} s -> {out / (stem + '.md')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", nargs="*", metavar="NAME", help="execute the notebooks and write their site pages")
    args = parser.parse_args()
    build()
    if args.render is not None:
        render(args.render or None)
