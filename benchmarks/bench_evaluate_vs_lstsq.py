"""gcsim.optimal_error vs a per-pattern numpy.linalg.lstsq loop, equal results, same run (issue #11 goals).

Usage: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_evaluate_vs_lstsq.py`` (about a minute).
1000 random patterns per (design, s); prints times, the ratio and the largest difference.
"""

import time

import numpy as np

import gcsim
from gcsim.coding.evaluate import optimal_error

rng = np.random.default_rng(0)


def loop(B, m, masks):
    N = B.shape[0] // m
    T = np.kron(np.eye(m), np.ones((N, 1)))
    out = np.empty(len(masks))
    for i, mk in enumerate(masks):
        X = np.linalg.lstsq(B[:, mk], T, rcond=None)
        out[i] = np.sum((B[:, mk] @ X[0] - T) ** 2)
    return out


cases = [
    ("PG(2,9) RD(0)", gcsim.encode(gcsim.bibd(91, 10, 1), 2, "rd")),
    ("PG(2,13) RD(0)", gcsim.encode(gcsim.bibd(183, 14, 1), 2, "rd")),
    ("coset(27,2,5) RD(0)", gcsim.encode(gcsim.coset_graph(27, 2, 5), 2, "rd")),
    ("coset(27,2,5) RD(0.1)", gcsim.encode(gcsim.coset_graph(27, 2, 5), 2, "rd", eps=0.1)),
]
for name, sch in cases:
    n = sch.B.shape[1]
    for s in (2, 5, 20):
        masks = np.ones((1000, n), bool)
        for r in masks:
            r[rng.choice(n, s, replace=False)] = False
        optimal_error(sch, masks[:10], progress=False)
        t = time.perf_counter()
        a = optimal_error(sch, masks, progress=False)
        ta = time.perf_counter() - t
        t = time.perf_counter()
        b = loop(sch.B, sch.m, masks)
        tb = time.perf_counter() - t
        print(
            f"{name:24s} s={s:2d}: gcsim {ta * 1e3:7.1f} ms, lstsq loop {tb * 1e3:7.1f} ms, ratio {tb / ta:6.1f}x, "
            f"max|diff| {np.max(np.abs(a - b)):.1e}"
        )
