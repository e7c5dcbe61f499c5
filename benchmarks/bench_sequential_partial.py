"""M-SGC least-squares partial decoding: one solve per distinct set of senders vs one per group.

Usage: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_sequential_partial.py`` (under a minute).

``simulate_multiplexed(..., partial="least-squares")`` decodes every job that did not decode by least
squares; each of its ``B`` groups needs the optimal decoder of the group code on the workers that
sent it (theory §62.5), and the projection of the all-ones vector it gives.  Since session 17 the
library (``_projections``) solves once per distinct set of senders and shares the result among the
groups that saw the same set; the baseline here is the route before (one stacked pseudo-inverse over
every group).  Both run on the same inputs (the group code and the sets of senders the simulator
hands that step on Markov straggler sequences), best of ``--repeat``; the outputs must be equal bit
for bit.  Writes ``benchmarks/results/sequential_partial.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import gcsim.coding.sequential_multiplexed as smx
from gcsim.coding.decoders import optimal_decoders
from gcsim.coding.sequential import markov_masks


def per_group(B, masks):
    """The route before: the optimal decoder solved for every group (one stacked pseudo-inverse)."""
    return ((B[None] * masks[:, None, :]) @ np.asarray(optimal_decoders(B, masks, 1)))[:, :, 0]


def captured(code, seq, seed):
    """The arguments the simulator hands its least-squares step."""
    calls = []
    library = smx._least_squares

    def record(*args):
        calls.append(args)
        return library(*args)

    smx._least_squares = record
    try:
        smx.simulate_multiplexed(code, seq, partial="least-squares", code_seed=seed)
    finally:
        smx._least_squares = library
    return calls[0]


def best(fn, args, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t)
    return out, min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cases = [((20, 2, 5, 6), (0.05, 0.5)), ((20, 2, 5, 6), (0.2, 0.4)), ((10, 3, 4, 3), (0.05, 0.5))]
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, load average {os.getloadavg()}")
    print("| code (n, B, W, lam) | markov (enter, leave) | groups | distinct sets | per group s | gcsim s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for params, (pe, pl) in cases:
        code = smx.MultiplexedSGC(*params)
        seq = markov_masks(params[0], args.rounds, p_enter=pe, p_leave=pl, seed=0)
        _code, _chunks, senders, ok, _seed = captured(code, seq, 0)
        inputs = (code.group_scheme(0).B, senders[~ok].reshape(-1, params[0]))
        p0, t0 = best(per_group, inputs, args.repeat)
        p1, t1 = best(smx._projections, inputs, args.repeat)
        if not np.array_equal(p0, p1):
            raise SystemExit(f"{params}: the two routes differ")
        groups = inputs[1]
        distinct = len(np.unique(groups, axis=0))
        rows.append(
            dict(code=params, markov=[pe, pl], groups=len(groups), distinct=distinct, per_group_s=t0, gcsim_s=t1)
        )
        print(f"| {params} | ({pe}, {pl}) | {len(groups)} | {distinct} | {t0:.4f} | {t1:.4f} | {t0 / t1:.1f}x |")
    out = Path(__file__).resolve().parent / "results" / "sequential_partial.json"
    meta = {"machine": platform.machine(), "python": platform.python_version(), "numpy": np.__version__}
    meta |= {"load_average": os.getloadavg(), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"equal bit for bit on every case; written {out}")


if __name__ == "__main__":
    main()
