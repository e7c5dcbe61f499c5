"""Benchmark: CERAR ring simulator throughput versus gradient length d (target in benchmarks/README.md).

Shows that ``gcsim.cerar.simulate`` costs O(d) (log-log slope of time vs d close to 1 at
large d) and compares it with a baseline that loops over the N workers in Python (each
worker's round is still vectorized over the packet), i.e. the straightforward transcription of
the protocol.  It also times the outputs-only default (``accumulate="auto"``: the end-to-end
operator where rounding cannot show, docs/theory.md §52) against the batched rounds
(``accumulate="batched"``, the default before; bit for bit the same outputs as then),
interleaved in one run, and records their largest difference.  Prints a table and writes
``benchmarks/results/cerar_sim.json`` (atomically, with provenance and the load average).

Usage::

    .venv/bin/python benchmarks/bench_cerar.py [--quick] [--threads=K]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# BLAS threads must be fixed before NumPy loads; a shared 2-core machine with multithreaded
# BLAS makes mid-sized batched products erratic (oversubscription), so default to 1 thread.
_THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import numpy as np  # noqa: E402

from gcsim.cerar import design, simulate  # noqa: E402
from gcsim.io.manifest import atomic_write_text, dumps, provenance  # noqa: E402


def per_worker_loop(des, g):
    """Baseline: one Python iteration per (round, worker); same arithmetic as the simulator."""
    N, c, L = des.N, des.c, des.L
    d = g.shape[1]
    w = -(-d // c)
    G = np.zeros((N, c * w))
    G[:, :d] = g
    G = G.reshape(N, c, w)
    X = [des.encoders[i] @ G[i] for i in range(N)]
    out = [G[i].copy() for i in range(N)]
    u = [np.zeros(w) for _ in range(N)]
    for t in range(1, L + 1):
        s = [(X[i][t - 1] + u[i]) if t <= c else u[i] for i in range(N)]
        for i in range(N):
            r = s[(i - 1) % N]
            k = t - N
            u[i] = r - X[i][k] if 0 <= k < c else r
            out[i] += np.outer(des.decoders[i][:, t - 1], u[i])
    return np.stack([o.reshape(-1)[:d] for o in out])


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def median_times_interleaved(fns, repeat):
    """Median time of each function, the calls alternating (load hits them alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument("--threads", default="1", help="BLAS threads, written --threads=K (default 1)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "cerar_sim.json"))
    args = ap.parse_args()
    configs = [(4, 8), (8, 16)]
    sizes = [10**3, 10**4, 10**5] if args.quick else [10**3, 10**4, 10**5, 10**6, 2 * 10**6]
    repeat = 2 if args.quick else 5
    rng = np.random.default_rng(0)
    rows = []
    load_before = os.getloadavg()
    print(f"load average {load_before[0]:.2f}")
    print("\noutputs only, float64: default (auto) versus the batched rounds, interleaved medians")
    head = f"{'auto [s]':>10} {'rounds [s]':>11} {'speedup':>8} {'route':>9} {'max |diff|':>11}"
    print(f"{'N':>3} {'c':>3} {'d':>9} {head}")
    routes = []
    for N, c in configs:
        des = design(N, c, "perturbation", eps=0.01)
        for d in sizes:
            g = rng.standard_normal((N, d))
            t_auto, t_rounds = median_times_interleaved(
                [lambda: simulate(des, g), lambda: simulate(des, g, accumulate="batched")], max(repeat, 7)
            )
            auto = simulate(des, g).outputs
            route = "operator" if np.array_equal(auto, simulate(des, g, accumulate="operator").outputs) else "rounds"
            diff = float(np.max(np.abs(auto - simulate(des, g, accumulate="batched").outputs)))
            routes.append(
                {
                    "N": N,
                    "c": c,
                    "d": d,
                    "auto_seconds": t_auto,
                    "rounds_seconds": t_rounds,
                    "speedup": t_rounds / t_auto,
                    "route": route,
                    "max_abs_difference": diff,
                }
            )
            line = f"{t_auto:10.4f} {t_rounds:11.4f} {t_rounds / t_auto:8.2f} {route:>9} {diff:11.2e}"
            print(f"{N:>3} {c:>3} {d:>9} {line}")
    print(f"\n{'N':>3} {'c':>3} {'dtype':>8} {'d':>9} {'sim [s]':>10} {'ns/scalar':>10} {'loop [s]':>10} {'x':>8}")
    for N, c in configs:
        des = design(N, c, "perturbation", eps=0.01)
        for dtype in ("float64", "float32"):
            for d in sizes:
                g = rng.standard_normal((N, d))
                t_sim = best_time(lambda: simulate(des, g, dtype=dtype, warn=False), repeat)
                t_loop = None
                if dtype == "float64" and d <= 10**6:
                    ref = per_worker_loop(des, g)
                    assert np.allclose(ref, simulate(des, g).outputs, atol=1e-8 * (1 + abs(ref).max()))
                    t_loop = best_time(lambda: per_worker_loop(des, g), repeat)
                rows.append(
                    {
                        "N": N,
                        "c": c,
                        "dtype": dtype,
                        "d": d,
                        "seconds": t_sim,
                        "ns_per_scalar": 1e9 * t_sim / (N * d),
                        "loop_seconds": t_loop,
                        "speedup_vs_loop": (t_loop / t_sim) if t_loop else None,
                    }
                )
                sp = f"{t_loop / t_sim:8.1f}" if t_loop else f"{'-':>8}"
                lp = f"{t_loop:10.4f}" if t_loop else f"{'-':>10}"
                print(f"{N:>3} {c:>3} {dtype:>8} {d:>9} {t_sim:10.4f} {1e9 * t_sim / (N * d):10.2f} {lp} {sp}")
    slopes = {}
    for N, c in configs:
        for dtype in ("float64", "float32"):
            sel = [r for r in rows if (r["N"], r["c"], r["dtype"]) == (N, c, dtype) and r["d"] >= sizes[-3]]
            slope = float(np.polyfit(np.log([r["d"] for r in sel]), np.log([r["seconds"] for r in sel]), 1)[0])
            slopes[f"N={N},c={c},{dtype}"] = slope
            print(f"log-log slope of time vs d (d >= {sizes[-3]:g}), N={N}, c={c}, {dtype}: {slope:.2f}")
    result = {
        "benchmark": "cerar_simulator_throughput",
        "method": "perturbation",
        "eps": 0.01,
        "seed": 0,
        "repeat": repeat,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "rows": rows,
        "slopes_largest_three_d": slopes,
        "auto_vs_rounds": routes,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "provenance": provenance(),
    }
    atomic_write_text(args.out, dumps(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
