"""The executor at cluster scale: run_scheme on structured and sparse RD codes without the dense B.

Workload: m = 2, RD(0) seed 0, gradients of d = 1000 coordinates (N(0, 1) entries, seed 0), a few
Bernoulli(0.1) straggler patterns per code; two families:

* ``structured``: PG(2, q) as a :class:`~gcsim.coding.structured.StructuredRD` (decoder: Corollary 47.7);
* ``sparse``: the rook graph L(q) (closed) as a :class:`~gcsim.coding.sparse_routes.SparseRD` (decoder:
  conjugate gradients certified by Theorem 44.7).

For each code: the time of one ``run_scheme`` (encode every worker's transmission, decode, measure)
and its peak traced memory (``tracemalloc``: NumPy's buffers included), against two baselines of the
same run: the analysis' error-only evaluation of the same patterns (``context.errors``: the
executor's extra cost is the real arrays), and, where the dense B fits (n <= 1,100), ``run_scheme``
on the dense :class:`~gcsim.coding.schemes.Scheme` of the same B; and the encode alone (the gathers
of :class:`~gcsim.coding.structured_decoders.RDOperator`) against ``scipy.sparse`` products (NumPy
only).  Checks reported: the largest ``|residual − err(B, F)| / err`` against the context,
``|error − predicted| / error``, and against the dense run the largest relative difference of the
decoded vectors.

Usage::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor_scale.py            # a few minutes
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_executor_scale.py --pg 13 --lattice 10

Writes ``benchmarks/results/executor_scale.json`` atomically.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_scale  # noqa: E402

from gcsim.coding.schemes import Scheme  # noqa: E402
from gcsim.coding.sparse_routes import encode_sparse, lattice_graph_sparse  # noqa: E402
from gcsim.coding.structured import encode_structured  # noqa: E402
from gcsim.coding.structured_decoders import rd_operator  # noqa: E402
from gcsim.combinatorics.geometries import pg_flats  # noqa: E402
from gcsim.executor.arrays import run_scheme  # noqa: E402

M = 2
D = 1000
P_BERNOULLI = 0.1
DENSE_MAX_N = 1100


def one_code(family: str, q: int, patterns: int) -> dict:
    if family == "structured":
        v = q * q + q + 1
        enc, t_enc, _ = bench_scale.measured(encode_structured, pg_flats(2, q), M, seed=0, points=v, trace=False)
        name = f"PG(2,{q})"
    else:
        enc, t_enc, _ = bench_scale.measured(encode_sparse, lattice_graph_sparse(q), M, seed=0, trace=False)
        name = f"L({q})"
    n, N = enc.n, enc.num_parts
    row: dict = {"code": name, "family": family, "n": n, "N": N, "m": M, "d": D, "encoder_seconds": t_enc}
    g = np.random.default_rng(0).standard_normal((N, D))
    masks = np.random.default_rng(1).random((patterns, n)) >= P_BERNOULLI
    want, t_ctx, _ = bench_scale.measured(enc.context.errors, masks, trace=False)
    runs, walls, cpus, peaks = [], [], [], []
    for mask in masks:
        r, dt, peak = bench_scale.measured(run_scheme, enc, g, mask)
        runs.append(r)
        walls.append(dt)
        cpus.append(bench_scale.CPU.pop(id(r)))
        peaks.append(peak / 2**20)
    res = np.array([r.residual for r in runs])
    row.update(
        {
            "patterns": patterns,
            "run_seconds_per_pattern": float(np.mean(walls)),
            "run_cpu_seconds_per_pattern": float(np.mean(cpus)),
            "run_peak_mib": float(max(peaks)),
            "gradients_mib": g.nbytes / 2**20,
            "errors_only_seconds_per_pattern": t_ctx / patterns,
            "run_over_errors_only": float(np.mean(walls)) / max(t_ctx / patterns, 1e-12),
            "max_rel_residual_vs_analysis": float(np.max(np.abs(res - want) / np.maximum(want, 1e-300))),
            "max_rel_error_vs_predicted": float(max(abs(r.error - r.predicted_error) / r.error for r in runs)),
            "mean_error": float(np.mean([r.error for r in runs])),
            "mean_expected_isotropic": float(np.mean([r.expected_isotropic for r in runs])),
            "max_decoder_gap": float(max(r.decoder_gap for r in runs)),
        }
    )
    # the encode alone: the executor's gathers (any namespace) against scipy.sparse products (NumPy only)
    GG = g.reshape(N, M, D // M).transpose(1, 0, 2).reshape(M * N, D // M)
    op = rd_operator(enc)
    op._sparse = None  # the gathers CuPy and torch run (NumPy itself takes scipy.sparse products in run_scheme)
    t0 = time.perf_counter()
    mine = op.apply_t(GG)
    t_gather = time.perf_counter() - t0
    A = sp.csc_matrix(enc.incidence, dtype=np.float64)
    t0 = time.perf_counter()
    ref = sum(enc.diagonals[l][:, None] * (A.T @ GG[l * N : (l + 1) * N]) for l in range(M))
    t_scipy = time.perf_counter() - t0
    row["encode"] = {
        "gather_seconds": t_gather,
        "scipy_sparse_seconds": t_scipy,
        "gather_over_scipy": t_gather / max(t_scipy, 1e-12),
        "max_abs_diff": float(np.max(np.abs(mine - ref))),
    }
    if n <= DENSE_MAX_N:
        dense = Scheme.from_matrix(np.array(enc.B), np.array(enc.assignment), M, method="rd")
        t0 = time.perf_counter()
        dense_runs = [run_scheme(dense, g, mask) for mask in masks]
        t_dense = (time.perf_counter() - t0) / patterns
        diff = max(
            float(np.linalg.norm(a.decoded - b.decoded) / np.linalg.norm(b.decoded))
            for a, b in zip(runs, dense_runs, strict=True)
        )
        row["dense"] = {
            "run_seconds_per_pattern": t_dense,
            "dense_over_structured": t_dense / float(np.mean(walls)),
            "max_rel_diff_decoded": diff,
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", type=int, nargs="*", default=[13, 47, 97], help="q of the PG(2, q) structured codes")
    ap.add_argument("--lattice", type=int, nargs="*", default=[10, 32, 100], help="q of the L(q) sparse codes")
    ap.add_argument("--patterns", type=int, default=2, help="Bernoulli(0.1) patterns per code")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "executor_scale.json")
    args = ap.parse_args()
    rows = []
    for family, qs in (("structured", args.pg), ("sparse", args.lattice)):
        for q in qs:
            row = one_code(family, q, args.patterns)
            rows.append(row)
            extra = ""
            if "dense" in row:
                dn = row["dense"]
                extra = (
                    f"; dense {dn['run_seconds_per_pattern']:.2f} s ({dn['dense_over_structured']:.1f}x), "
                    f"decoded rel diff {dn['max_rel_diff_decoded']:.1e}"
                )
            print(
                f"{row['code']:>9} n={row['n']:>6}: run_scheme {row['run_seconds_per_pattern']:.2f} s/pattern "
                f"(peak {row['run_peak_mib']:.0f} MiB, gradients {row['gradients_mib']:.0f} MiB; "
                f"{row['run_over_errors_only']:.0f}x errors only), residual vs err(B,F) "
                f"{row['max_rel_residual_vs_analysis']:.1e}, error vs predicted {row['max_rel_error_vs_predicted']:.1e}"
                + f"; encode: gathers {row['encode']['gather_seconds']:.2f} s = "
                f"{row['encode']['gather_over_scipy']:.1f}x scipy.sparse" + extra,
                flush=True,
            )
    data = {
        "benchmark": "bench_executor_scale",
        "command": "python benchmarks/bench_executor_scale.py " + " ".join(sys.argv[1:]),
        "workload": f"m = {M}, RD(0) seed 0, d = {D}, Bernoulli(p = {P_BERNOULLI})",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
    }
    bench_scale.write_json(data, args.out)
    print(f"peak RSS {data['peak_rss_mib']:.0f} MiB; wrote {args.out}")


if __name__ == "__main__":
    main()
