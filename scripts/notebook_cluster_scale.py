"""Cells of notebooks/07_cluster_scale.ipynb (gradient codes at cluster scale), in the format of make_notebooks.py.

``make_notebooks.py`` adds them to its ``NOTEBOOKS`` as ``"07_cluster_scale.ipynb"``.  The notebook builds PG(2, q)
as circulant Singer incidences (up to 10,303 workers), evaluates the expected error on the structured route,
runs one code on real arrays with ``run_scheme`` against the analysis and round-trips its verified bundle, in
well under a minute (``tests/test_notebooks.py``).  ``benchmarks/bench_scale.py --singer`` goes to 100,807 workers.
"""

from __future__ import annotations

NAME = "07_cluster_scale.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Gradient codes at cluster scale\n"
        "\n"
        "Real clusters have 10³–10⁵ workers. The dense routes need the `mN x n` encoder `B` and its "
        "SVD, so they stop near 10³. This notebook walks the structured routes instead, which never "
        "form `B`:\n"
        "\n"
        "1. **Designs without block lists.** PG(2, q) is the development of Singer's difference set, "
        "kept as a circulant sparse incidence. Its exact pair check costs `O(nnz + k²)` (theory §10.8, "
        "Lemma 9a).\n"
        "2. **The error analysis.** The optimal error of RD on a symmetric design comes from one `m x "
        "m` eigenproblem per pattern (theory §42). Expectations are stratified and streamed.\n"
        "3. **Real arrays.** `run_scheme` encodes and decodes real gradients with the same structure, "
        "and its measured residual equals the analysis.\n"
        "4. **Export.** A `structured_scheme` bundle stores the incidence and diagonals only. Loading "
        "verifies it rather than trusting it.\n"
        "\n"
        "Sizes here stay at ≤ 10⁴ workers so the notebook runs in well under a minute. "
        "`benchmarks/bench_scale.py --singer` runs PG(2,317) (100,807 workers) the same way.",
    ),
    (
        "code",
        (
            "import time\n"
            "\n"
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "import gcsim\n"
            "from gcsim.coding.structured import encode_structured\n"
            "from gcsim.combinatorics.difference_families import (\n"
            "    circulant_incidence,\n"
            "    difference_set_lambda,\n"
            "    singer_difference_set,\n"
            ")"
        ),
    ),
    (
        "md",
        "## 1. Singer planes\n"
        "\n"
        "For a prime q, GF(q³) is `GF(q)[x]/(f)` with `f` primitive, and `D = {i < v : x^i has no x² "
        "term}` is a `(q²+q+1, q+1, 1)` difference set. `difference_set_lambda` recounts its `k(k−1)` "
        "differences exactly. The incidence never exists as a dense matrix.",
    ),
    (
        "code",
        (
            "planes = {}\n"
            "for q in (13, 31, 61, 101):\n"
            "    v = q * q + q + 1\n"
            "    t0 = time.perf_counter()\n"
            "    D = singer_difference_set(2, q)\n"
            "    assert difference_set_lambda(v, D) == 1\n"
            "    S = circulant_incidence(v, D)\n"
            "    enc = encode_structured(S, 2, seed=0)  # exact circulant pair check inside\n"
            "    planes[q] = enc\n"
            "    print(\n"
            "        f'PG(2,{q}): n = {v:6d} workers, {S.nnz:9,d} stored entries, '\n"
            "        f'(k, λ) = ({enc.context.k}, {enc.context.lam}), '\n"
            "        f'built and checked in {time.perf_counter() - t0:.2f} s'\n"
            "    )"
        ),
    ),
    (
        "md",
        "## 2. Expected error against n\n"
        "\n"
        "With Bernoulli(0.1) stragglers, `expected_error` stratifies by the number of stragglers. It "
        "pools the light strata when n is large (Lemma 7a, theory §40) and streams the draws. The "
        "normalized error `E[err]/(mN)` falls as the planes grow, because each part is held by `q + 1` "
        "workers.",
    ),
    (
        "code",
        (
            "rows = []\n"
            "for enc in planes.values():\n"
            "    model = gcsim.straggler_model('bernoulli', enc.n, p=0.1)\n"
            "    res = gcsim.expected_error(enc, model, samples=500, seed=0, progress=False)\n"
            "    total = enc.m * enc.num_parts\n"
            "    half = (res.ci[1] - res.ci[0]) / 2 / total\n"
            "    rows.append((enc.n, res.mean / total, half))\n"
            "    print(f'n = {enc.n:6d}: E[err]/mN = {res.mean / total:.6f} ± {half:.1e}')\n"
            "ns, means, halves = (np.array(c) for c in zip(*rows, strict=True))\n"
            "fig, ax = plt.subplots(figsize=(5, 3.5))\n"
            "ax.errorbar(ns, means, yerr=halves, fmt='o-', capsize=3, label='RD(0), m = 2, Bernoulli(0.1)')\n"
            "ax.set(xscale='log', yscale='log', xlabel='workers n (PG(2, q))', ylabel='E[err] / mN')\n"
            "ax.grid(True, which='both', alpha=0.3)\n"
            "ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.2))\n"
            "fig.tight_layout()\n"
            "assert np.all(np.diff(means) < 0)"
        ),
    ),
    (
        "md",
        "## 3. The same code on real arrays\n"
        "\n"
        "`run_scheme` takes the structured encoder directly. It sends every worker's coded vector and "
        "decodes with Corollary 47.7 (one `m x m` solve). It also reports the residual `‖B_F X − T‖²`, "
        "which must equal the analysis' error for the same pattern.",
    ),
    (
        "code",
        (
            "from gcsim.executor.arrays import run_scheme\n"
            "\n"
            "enc = planes[61]  # 3,783 workers\n"
            "mask = gcsim.straggler_model('bernoulli', enc.n, p=0.1).sample(1, seed=3)[0]\n"
            "g = np.random.default_rng(0).standard_normal((enc.num_parts, 400))\n"
            "run = run_scheme(enc, g, mask)\n"
            "want = float(enc.context.errors(mask[None, :])[0])\n"
            "print(\n"
            "    f'{int((~mask).sum())} stragglers; residual {run.residual:.6f}, analysis {want:.6f}, '\n"
            "    f'measured error {run.error:.1f} vs predicted {run.predicted_error:.1f}'\n"
            ")\n"
            "assert (\n"
            "    abs(run.residual - want) <= 1e-9 * want\n"
            "    and abs(run.error - run.predicted_error) <= 1e-9 * run.error\n"
            ")"
        ),
    ),
    (
        "md",
        "## 4. Export, verified on load\n"
        "\n"
        "The bundle holds the incidence in CSC index form and the diagonals: `O(nnz + m n)` numbers. "
        "`from_arrays` draws the diagonals again from the stored seed and compares them bit for bit. It "
        "also re-checks `AᵀA = (k − λ)I + λJ` exactly, so the loaded encoder is the one that was "
        "evaluated (theory §42.4). A tampered diagonal is refused.",
    ),
    (
        "code",
        (
            "from gcsim.coding.structured import StructuredRD\n"
            "\n"
            "arrays, meta = enc.to_arrays(), enc.bundle_metadata()\n"
            "back = StructuredRD.from_arrays(arrays, meta)\n"
            "assert np.array_equal(back.context.errors(mask[None, :]), enc.context.errors(mask[None, :]))\n"
            "bad = dict(arrays)\n"
            "bad['diagonals'] = arrays['diagonals'].copy()\n"
            "bad['diagonals'][0, 5] *= -1\n"
            "try:\n"
            "    StructuredRD.from_arrays(bad, meta)\n"
            "except gcsim.errors.GcsimError as exc:\n"
            "    print('refused:', str(exc)[:160])\n"
            "else:\n"
            "    raise AssertionError('a tampered bundle was accepted')"
        ),
    ),
]
