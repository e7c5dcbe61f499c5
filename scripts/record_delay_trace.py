#!/usr/bin/env python
"""Record a measured delay trace: per-worker, per-round compute times of real gradient computations.

``--workers`` processes run on this machine at once. Each holds the ``s + 1`` consecutive data parts
of the cyclic repetition code (theory §62.2: worker ``j`` holds parts ``j, ..., j + s mod n`` of the
MNIST subset's training set split into ``n`` parts) and, every round, computes the gradient of an
MLP (784 -> 64 -> 10, :class:`gcsim.learning.models.MLP`) on its examples. The rounds are
synchronous: a barrier starts each round, and the time a worker spends on its gradient is its delay
for the round (``time.perf_counter``; the contention is whatever the machine has then: the other
workers, and any other load). The trace (``workers x rounds`` seconds, the layout of the ``"trace"``
delay model) is written as a ``.csv`` that :func:`gcsim.coding.delay_laws.load_trace` reads.

Run (about a minute on a 2-core machine)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/record_delay_trace.py --out docs/results/sequential_trace.csv
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.learning.datasets import load_mnist_subset
from gcsim.learning.models import MLP

WAIT_S = 120.0  # a worker or the barrier that takes longer than this ends the recording (no hang)


def _worker(j: int, x: np.ndarray, y: np.ndarray, rounds: int, barrier: Any, out: Any) -> None:
    net = MLP((x.shape[1], 64, 10))
    theta = net.init(seed=0)
    for r in range(rounds):
        barrier.wait(timeout=WAIT_S)
        start = time.perf_counter()
        _, grad = net.loss_and_grad(theta, x, y)
        out[j * rounds + r] = time.perf_counter() - start
        theta = theta - 1e-3 * grad  # a real step, so no round reuses a cached result


def record(workers: int, s: int, rounds: int) -> np.ndarray:
    """The ``workers x rounds`` matrix of measured gradient times (seconds)."""
    data = load_mnist_subset(seed=0)
    A = cyclic_repetition_assignment(workers, s)  # parts x workers
    parts = np.array_split(np.arange(data.n_train), workers)
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(workers)
    out = ctx.Array("d", workers * rounds, lock=False)
    procs = []
    for j in range(workers):
        idx = np.concatenate([parts[i] for i in np.flatnonzero(A[:, j])])
        p = ctx.Process(target=_worker, args=(j, data.x_train[idx], data.y_train[idx], rounds, barrier, out))
        p.start()
        procs.append(p)
    deadline = time.monotonic() + WAIT_S * 2 + rounds
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    failed = [j for j, p in enumerate(procs) if p.exitcode != 0]
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(timeout=10)
    if failed:
        raise SystemExit(f"workers {failed} did not finish the recording")
    return np.frombuffer(out, dtype=float).reshape(workers, rounds).copy()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=20)
    ap.add_argument("--s", type=int, default=2, help="stragglers of the cyclic code: each worker holds s + 1 parts")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    trace = record(args.workers, args.s, args.rounds)
    np.savetxt(args.out, trace, delimiter=",", fmt="%.6f")
    q = np.quantile(trace, [0.5, 0.9, 0.99])
    print(
        f"{args.out}: {args.workers} workers x {args.rounds} rounds on {os.cpu_count()} cores; "
        f"median {q[0] * 1e3:.2f} ms, 90 % {q[1] * 1e3:.2f} ms, 99 % {q[2] * 1e3:.2f} ms, "
        f"max {trace.max() * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
