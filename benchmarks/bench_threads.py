"""Why gcsim limits BLAS threads inside batched kernels: 1 vs 2 OpenBLAS threads, same run.

Workloads: stacks of small matrices through the LAPACK calls the evaluators use
(``eigh``, ``cholesky``, ``solve`` of Gram-sized SPD matrices; ``svd`` of tall
``B_F``-shaped matrices), and one large GEMM for contrast.  Each case is timed
with BLAS limited to 1 and to 2 threads (threadpoolctl), interleaved, best of
``--reps``; the table reports the ratio ``t(2 threads) / t(1 thread)`` (> 1: the
second thread makes it slower).

Usage::

    .venv/bin/python benchmarks/bench_threads.py           # a minute or two
    .venv/bin/python benchmarks/bench_threads.py --quick
    .venv/bin/python benchmarks/bench_threads.py --busy 1  # with one other process spinning on a core

``--busy K`` starts K busy-looping processes for the duration, as on a laptop or a shared
node where another job holds a core (or under ``pytest -n 2`` on two cores).

Writes ``benchmarks/results/threads.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, help="busy-looping processes running meanwhile")
    args = ap.parse_args(argv)
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        return _run(args)
    finally:
        for p in spinners:
            p.kill()


def _run(args) -> int:
    rng = np.random.default_rng(0)
    shapes = [(10, 20000), (30, 4000), (70, 1000)] if not args.quick else [(10, 4000), (70, 200)]
    rows = []
    for n, count in shapes:
        A = rng.standard_normal((count, n, n))
        G = A @ A.transpose(0, 2, 1) + n * np.eye(n)
        B = rng.standard_normal((count, 2 * n, n))
        rhs = B[:, :n, :2].copy()
        cases = {
            "eigh": lambda: np.linalg.eigh(G),
            "cholesky": lambda: np.linalg.cholesky(G),
            "solve": lambda: np.linalg.solve(G, rhs),
            "svd": lambda: np.linalg.svd(B, full_matrices=False),
        }
        for name, fn in cases.items():
            t = {1: float("inf"), 2: float("inf")}
            for _ in range(args.reps):  # interleave the two settings
                for k in (1, 2):
                    with threadpool_limits(k, user_api="blas"):
                        t[k] = min(t[k], best_of(fn, 1))
            rows.append(
                {
                    "kernel": f"batched {name}",
                    "n": n,
                    "count": count,
                    "t1_s": t[1],
                    "t2_s": t[2],
                    "ratio_t2_over_t1": t[2] / t[1],
                }
            )
    for n in (1000,) if args.quick else (1000, 2000):
        M = rng.standard_normal((n, n))
        t = {1: float("inf"), 2: float("inf")}
        for _ in range(args.reps):
            for k in (1, 2):
                with threadpool_limits(k, user_api="blas"):
                    t[k] = min(t[k], best_of(lambda: M @ M, 1))
        rows.append({"kernel": "gemm", "n": n, "count": 1, "t1_s": t[1], "t2_s": t[2], "ratio_t2_over_t1": t[2] / t[1]})
    print(f"{'kernel':18s} {'n':>5s} {'count':>6s} {'1 thread':>10s} {'2 threads':>10s} {'t2/t1':>7s}")
    for r in rows:
        print(
            f"{r['kernel']:18s} {r['n']:5d} {r['count']:6d} {r['t1_s'] * 1e3:8.1f}ms {r['t2_s'] * 1e3:8.1f}ms "
            f"{r['ratio_t2_over_t1']:7.2f}"
        )
    info = [
        {k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    out = {
        "rows": rows,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "blas": info},
        "quick": args.quick,
        "busy": args.busy,
    }
    dest = ROOT / "benchmarks" / "results" / (f"threads_busy{args.busy}.json" if args.busy else "threads.json")
    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(out, fh, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, dest)
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
