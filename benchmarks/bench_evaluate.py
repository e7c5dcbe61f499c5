"""Benchmark of the optimal-error evaluators (the reference workload of benchmarks/README.md).

Workload: PG(2,9) = the (91, 91, 10, 10, 1) BIBD, m = 2, RD(0), 10,000 random
straggler patterns at s = 20.  Baseline: a per-pattern ``numpy.linalg.lstsq(B_F, T)``
loop.  Also: the exhaustive enumeration of all C(91,2) and C(91,3) patterns,
the other evaluation routes, and the instability of the exact Vandermonde
family (κ(H_F) and the decoding error in float64 / float32 versus n).

Usage::

    .venv/bin/python benchmarks/bench_evaluate.py            # full run (a few minutes)
    .venv/bin/python benchmarks/bench_evaluate.py --quick    # smaller, for a smoke test

Prints a table and writes ``benchmarks/results/evaluate.json`` (atomically).
Numbers are as measured on whatever machine runs it (no thread pinning).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gcsim  # noqa: E402
from gcsim.coding import _compiled  # noqa: E402
from gcsim.coding.evaluate import condition_number, optimal_error, optimal_error_all  # noqa: E402
from gcsim.coding.schemes import cyclic_repetition_assignment, encode, target_matrix  # noqa: E402
from gcsim.coding.stragglers import FixedModel  # noqa: E402


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def lstsq_loop(B, T, masks):
    out = np.empty(len(masks))
    for c, mk in enumerate(masks):
        BF = B[:, mk]
        X = np.linalg.lstsq(BF, T, rcond=None)[0]
        out[c] = np.sum((BF @ X - T) ** 2)
    return out


def reference_workload(patterns: int, loop: int, seed: int) -> dict:
    # once per process, not per scheme: import numba and load (or compile) the evaluator's loops
    _, t_compiled = timed(_compiled.available)
    A = gcsim.bibd(91, 10, 1).assignment
    sch = encode(A, 2, "rd", eps=0.0, seed=seed)
    masks = FixedModel(91, 20).sample(patterns, seed=seed)
    T = sch.target()
    # the precomputation (Γ, H, SVD of B) is part of the batched cost: use a fresh scheme
    batched, t_batched = timed(optimal_error, sch, masks, progress=False)
    loop = min(loop, patterns)
    ref, t_loop = timed(lstsq_loop, sch.B, T, masks[:loop])
    t_loop_per = t_loop / loop
    rel = np.abs(batched[:loop] - ref) / np.abs(ref)
    rows = {
        "workload": "PG(2,9), m=2, RD(0), s=20",
        "patterns": patterns,
        "kappa_B": condition_number(sch),
        "batched_auto_s": t_batched,
        "batched_route": "downdate (Schur complement, s x s Cholesky, compiled loops)",
        "compiled_loops_load_s": t_compiled,
        "lstsq_loop_patterns": loop,
        "lstsq_loop_s": t_loop,
        "lstsq_loop_extrapolated_s": t_loop_per * patterns,
        "speedup": t_loop_per * patterns / t_batched,
        "max_rel_diff": float(rel.max()),
        "mean_error": float(batched.mean()),
    }
    # the other routes on a subset (they cost more per pattern)
    for route, size in (("gram", 2000), ("svd", 300)):
        sub = masks[: min(patterns, size)]
        vals, t = timed(optimal_error, sch, sub, method=route, progress=False)
        rows[f"{route}_s_per_pattern"] = t / len(sub)
        rows[f"{route}_max_rel_diff"] = float(np.max(np.abs(vals - batched[: len(sub)]) / batched[: len(sub)]))
    rows["lstsq_s_per_pattern"] = t_loop_per
    rows["batched_auto_s_per_pattern"] = t_batched / patterns
    return rows


def exhaustive(seed: int, sizes=(2, 3)) -> list[dict]:
    A = gcsim.bibd(91, 10, 1).assignment
    out = []
    for s in sizes:
        sch = encode(A, 2, "rd", eps=0.0, seed=seed)
        vals, t = timed(optimal_error_all, sch, s, progress=False)
        out.append(
            {
                "s": s,
                "patterns": int(vals.size),
                "seconds": t,
                "per_pattern_us": 1e6 * t / vals.size,
                "mean": float(vals.mean()),
                "max": float(vals.max()),
                "min": float(vals.min()),
            }
        )
    return out


def vandermonde_instability(ns, s=2, m=2, trials=5, seed=0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for n in ns:
        A = cyclic_repetition_assignment(n, s + m - 1)
        for kind in ("exact-vandermonde", "exact-gaussian"):
            try:
                sch = encode(A, m, kind, s=s, seed=seed)
            except gcsim.NotConstructibleError as exc:
                out.append({"n": n, "family": kind, "error": str(exc)})
                continue
            H, B, T = sch.extras["H"], sch.B, target_matrix(m, n)
            kap, e64, e32 = [], [], []
            for _ in range(trials):
                F = np.sort(rng.choice(n, size=n - s, replace=False))
                rhs = np.zeros((n - s, m))
                rhs[:m] = np.eye(m)
                kap.append(np.linalg.cond(H[:, F]))
                for dt, acc in ((np.float64, e64), (np.float32, e32)):
                    X = np.linalg.solve(H[:, F].astype(dt), rhs.astype(dt))
                    R = B[:, F].astype(dt) @ X - T.astype(dt)
                    acc.append(float(np.sum(R.astype(np.float64) ** 2)) / (m * n))
            out.append(
                {
                    "n": n,
                    "family": kind,
                    "kappa_H_F_median": float(np.median(kap)),
                    "err_float64_normalized_max": float(np.max(e64)),
                    "err_float32_normalized_max": float(np.max(e32)),
                }
            )
    return out


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".evaluate-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2)
    os.chmod(tmp, 0o644)  # mkstemp creates 0600 files
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller workload (smoke test)")
    ap.add_argument("--patterns", type=int, default=10000)
    ap.add_argument(
        "--loop",
        type=int,
        default=2000,
        help="patterns in the lstsq baseline loop (its time is extrapolated linearly to --patterns)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "evaluate.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.patterns, args.loop = 1000, 100
    started = time.time()
    ref = reference_workload(args.patterns, args.loop, args.seed)
    print(
        f"\nReference workload: {ref['workload']}, {ref['patterns']} random patterns, kappa(B) = {ref['kappa_B']:.3g}"
    )
    print(f"{'route':34s} {'time/pattern':>14s} {'max rel diff':>14s}")
    print(f"{'lstsq loop (numpy, per pattern)':34s} {ref['lstsq_s_per_pattern'] * 1e6:11.1f} us {'(reference)':>14s}")
    print(
        f"{'batched auto = downdate':34s} {ref['batched_auto_s_per_pattern'] * 1e6:11.1f} us "
        f"{ref['max_rel_diff']:14.2e}"
    )
    print(f"{'  (compiled loops, once per process)':34s} {ref['compiled_loops_load_s']:11.2f} s")
    print(
        f"{'batched gram (Cholesky / eigh)':34s} {ref['gram_s_per_pattern'] * 1e6:11.1f} us "
        f"{ref['gram_max_rel_diff']:14.2e}"
    )
    print(f"{'batched svd (orthogonal)':34s} {ref['svd_s_per_pattern'] * 1e6:11.1f} us {ref['svd_max_rel_diff']:14.2e}")
    print(
        f"speed-up of the batched evaluator over the lstsq loop: {ref['speedup']:.1f}x "
        f"(goal >= 20x, equal results <= 1e-9 relative: {ref['max_rel_diff'] <= 1e-9})"
    )
    ex = exhaustive(args.seed, (2,) if args.quick else (2, 3))
    print("\nExhaustive enumeration (PG(2,9), m=2, RD(0)):")
    for row in ex:
        print(
            f"  all C(91,{row['s']}) = {row['patterns']:7d} patterns: {row['seconds']:7.2f} s "
            f"({row['per_pattern_us']:.1f} us/pattern), err mean {row['mean']:.4f}, "
            f"min {row['min']:.4f}, max {row['max']:.4f}"
        )
    vd = vandermonde_instability((8, 12, 16, 20) if args.quick else (8, 12, 16, 20, 24, 28, 32))
    print("\nExact family (theory §40.5), s=2, m=2: kappa(H_F) and normalized decoding error")
    print(f"  {'n':>3s} {'family':18s} {'kappa(H_F)':>11s} {'err float64':>12s} {'err float32':>12s}")
    for row in vd:
        if "error" in row:
            print(f"  {row['n']:3d} {row['family']:18s} not constructible: {row['error'][:60]}")
            continue
        print(
            f"  {row['n']:3d} {row['family']:18s} {row['kappa_H_F_median']:11.3g} "
            f"{row['err_float64_normalized_max']:12.3g} {row['err_float32_normalized_max']:12.3g}"
        )
    data = {
        "benchmark": "evaluate",
        "gcsim_version": gcsim.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "thread_env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "seed": args.seed,
        "quick": args.quick,
        "wall_seconds": time.time() - started,
        "reference_workload": ref,
        "exhaustive": ex,
        "vandermonde_instability": vd,
    }
    write_json(args.out, data)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
