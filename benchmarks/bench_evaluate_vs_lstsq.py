"""gcsim.optimal_error vs a per-pattern numpy.linalg.lstsq loop, equal results, same run (issue #11 goals).

Usage: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_evaluate_vs_lstsq.py`` (about a minute);
``--s 27 35 45 50 --designs 2`` for other straggler counts on one code (0: PG(2,9), 1: PG(2,13),
2: the coset graph RD(0), 3: RD(0.1)).

1000 random patterns per (design, s).  Three timings in one run, interleaved: gcsim as shipped
(compiled loops for the column-deletion and Gram routes on NumPy), gcsim with the compiled loops
switched off (the batched array-API kernel alone, which is what ran before they existed), and
the lstsq loop.  Each is the best of ``--repeat`` runs (the machine may be shared).  Prints the
times, the ratios lstsq/gcsim and the largest difference between gcsim and lstsq.
"""

import argparse
import os
import time

import numpy as np

import gcsim
from gcsim.coding import _compiled
from gcsim.coding.evaluate import optimal_error


def loop(B, m, masks):
    N = B.shape[0] // m
    T = np.kron(np.eye(m), np.ones((N, 1)))
    out = np.empty(len(masks))
    for i, mk in enumerate(masks):
        X = np.linalg.lstsq(B[:, mk], T, rcond=None)
        out[i] = np.sum((B[:, mk] @ X[0] - T) ** 2)
    return out


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patterns", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs of each timing")
    ap.add_argument("--s", type=int, nargs="+", default=[2, 5, 20], help="straggler counts (those < n are run)")
    ap.add_argument("--designs", nargs="+", type=int, default=[0, 1, 2, 3], help="indices into the list of codes")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cases = [
        ("PG(2,9) RD(0)", gcsim.encode(gcsim.bibd(91, 10, 1), 2, "rd")),
        ("PG(2,13) RD(0)", gcsim.encode(gcsim.bibd(183, 14, 1), 2, "rd")),
        ("coset(27,2,5) RD(0)", gcsim.encode(gcsim.coset_graph(27, 2, 5), 2, "rd")),
        ("coset(27,2,5) RD(0.1)", gcsim.encode(gcsim.coset_graph(27, 2, 5), 2, "rd", eps=0.1)),
    ]
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, load average {os.getloadavg()}")
    print(f"compiled loops available: {_compiled.available()}; best of {args.repeat}")
    print(
        f"{'design':24s} {'s':>3s} {'gcsim':>9s} {'no-loops':>9s} {'lstsq':>9s} "
        f"{'ratio':>8s} {'ratio(no-loops)':>16s} {'max|diff|':>9s}"
    )
    for name, sch in (cases[i] for i in args.designs):
        n = sch.B.shape[1]
        for s in (s for s in args.s if s < n):
            masks = np.ones((args.patterns, n), bool)
            for r in masks:
                r[rng.choice(n, s, replace=False)] = False
            optimal_error(sch, masks[:10], progress=False)  # the per-scheme precomputation, compiled code
            a, ta = best(lambda sch=sch, masks=masks: optimal_error(sch, masks, progress=False), args.repeat)
            with _compiled.disabled():
                a0, t0 = best(lambda sch=sch, masks=masks: optimal_error(sch, masks, progress=False), args.repeat)
            b, tb = best(lambda sch=sch, masks=masks: loop(sch.B, sch.m, masks), max(1, args.repeat - 1))
            diff = max(np.max(np.abs(a - b)), np.max(np.abs(a0 - b)))
            print(
                f"{name:24s} {s:3d} {ta * 1e3:7.2f}ms {t0 * 1e3:7.2f}ms {tb * 1e3:7.1f}ms "
                f"{tb / ta:7.1f}x {tb / t0:15.1f}x {diff:9.1e}"
            )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
