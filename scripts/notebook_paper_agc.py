"""Cells of notebooks/06_paper_agc.ipynb (the gradient-coding paper's experiments), in the format of make_notebooks.py.

``make_notebooks.py`` adds them to its ``NOTEBOOKS`` as ``"06_paper_agc.ipynb"``.  The notebook walks
through Munim & Ramamoorthy's experiments at small sizes (PG(2,9) with ±1 random diagonals and its
bounds, Construction 2 on their bi-regular graph with the diagonal-dominance bound, coset graphs at
s = 0) and ends with the agc-paper stage's claims table at a tiny scale, so that
``tests/test_notebooks.py`` runs it in well under a minute.  The guide is docs/guides/paper_agc.md.
"""

from __future__ import annotations

NAME = "06_paper_agc.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# The gradient-coding paper, experiment by experiment\n\n"
        'Munim and Ramamoorthy, "Communication-Efficient Approximate Gradient Coding" (arXiv 2603.22514): '
        "each worker sends one vector of length d/m. This notebook redoes their experiments with gcsim's "
        "public API at small sizes; `gcsim reproduce --paper agc` runs them at the authors' setups and "
        "writes the claims table (guide: `docs/guides/paper_agc.md`).",
    ),
    (
        "code",
        (
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "import gcsim\n"
            "from gcsim.coding import bounds, encode, optimal_error, straggler_model"
        ),
    ),
    (
        "md",
        "## 1. PG(2,9), m = 2, ±1 random diagonals\n\n"
        "The optimal-decoding error err(B, F) (at most mN = 182) of B = [A D₁; A D₂] against the "
        "closed-form upper bound (in expectation), the baseline B = [A; A] and the authors' worst-case "
        "lower bound, at their straggler counts up to s/n = 0.25.",
    ),
    (
        "code",
        (
            "A = gcsim.bibd(91, 10, 1).assignment\n"
            "rd = encode(A, 2, 'rd', eps=0.0, dist='rademacher', seed=0)\n"
            "rd  # the scheme's card"
        ),
    ),
    (
        "code",
        (
            "counts = [1, 6, 12, 18, 22]\n"
            "mean = [\n"
            "    optimal_error(rd, straggler_model('fixed', 91, s=s).sample(60, seed=s), progress=False).mean()\n"
            "    for s in counts\n"
            "]\n"
            "upper = [bounds.bibd_rd_upper_bound(91, 10, 1, 2, s) for s in counts]\n"
            "base = [bounds.bibd_naive_error(91, 10, 1, 2, s) for s in counts]\n"
            "lower = [bounds.partial_uncovering_lower_bound(A, 2, s).value for s in counts]\n"
            "x = np.array(counts) / 91\n"
            "fig, ax = plt.subplots(figsize=(6, 4))\n"
            "ax.plot(x, upper, 'o:', label='upper bound (closed form)')\n"
            "ax.plot(x, mean, '^-', label='RD ±1: mean error (60 sets)')\n"
            "ax.plot(x, base, 's-', label='baseline [A; A]')\n"
            "ax.plot(x, lower, 'x--', label=\"lower bound (authors', worst case)\")\n"
            "ax.set_xlabel('straggler fraction s/n')\n"
            "ax.set_ylabel('err(B, F)')\n"
            "ax.legend(fontsize=7, loc='center right')\n"
            "plt.show()"
        ),
    ),
    (
        "md",
        "## 2. Construction 2 on the bi-regular graph (20 parts x 40 workers)\n\n"
        "Encoder `hadamard-ns`: exact at s = 0, and below the diagonal-dominance bound on every straggler set.",
    ),
    (
        "code",
        (
            "G = gcsim.biregular_graph(20, 40, 6, 3, seed=0).assignment\n"
            "signs = encode(G, 2, 'hadamard-ns', dist='rademacher', support='full', seed=43)\n"
            "print('error at s = 0:', optimal_error(signs, np.ones(40, dtype=bool), progress=False))\n"
            "masks = straggler_model('fixed', 40, s=10).sample(200, seed=2)\n"
            "e = optimal_error(signs, masks, progress=False)\n"
            "dd = bounds.diagonal_dominance_upper_bound(signs, masks)\n"
            "print(\n"
            "    f's = 10: mean error {e.mean():.3f}, mean bound {dd.mean():.3f}, '\n"
            "    f'max(err - bound) {(e - dd).max():.2f}'\n"
            ")"
        ),
    ),
    (
        "md",
        "## 3. Coset graphs at s = 0\n\nContinuous diagonals give an invertible B (error 0); ±1 diagonals "
        "with m = 2 mostly do not.",
    ),
    (
        "code",
        (
            "cg = gcsim.coset_graph(27, 2, 5)\n"
            "for label, opts in (('RD(0.1)', {'eps': 0.1}), ('RD(0) ±1', {'eps': 0.0})):\n"
            "    errs = [\n"
            "        optimal_error(\n"
            "            encode(cg.assignment, 2, 'rd', seed=k, **opts),\n"
            "            np.ones(54, dtype=bool),\n"
            "            normalized=True,\n"
            "            progress=False,\n"
            "        )\n"
            "        for k in range(5)\n"
            "    ]\n"
            "    print(label, [f'{e:.1e}' for e in errs])"
        ),
    ),
    (
        "md",
        "## 4. The claims table\n\nThe agc-paper stage at a tiny scale (its `Scale`); the training claims "
        "come from the training stage, which is not run here, so one row says so.",
    ),
    (
        "code",
        (
            "import tempfile\n"
            "from pathlib import Path\n"
            "\n"
            "import pandas as pd\n"
            "\n"
            "from gcsim.app.stages.agc_paper import Scale, agc_paper_stage\n"
            "\n"
            "out = Path(tempfile.mkdtemp()) / 'agc-paper'\n"
            "out.mkdir()\n"
            "tiny = Scale(\n"
            "    rd_encoders=1,\n"
            "    rd_patterns=10,\n"
            "    baseline_patterns=10,\n"
            "    biregular_patterns=20,\n"
            "    coset_draws=2,\n"
            "    points=3,\n"
            ")\n"
            "result = agc_paper_stage(out, False, 0, False, scale=tiny)\n"
            "print('stage ok:', result['ok'])\n"
            "pd.read_csv(out / 'claims.csv')[['claim', 'value', 'holds', 'must_hold']]"
        ),
    ),
]
