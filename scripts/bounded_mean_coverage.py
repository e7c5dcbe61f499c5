#!/usr/bin/env python
"""Coverage of the t and betting intervals for bounded means on rare events (theory §57.12).

Two laws on [0, 1] with a known mean: Bernoulli(p) (values 0 and 1) and the two-point law with
values 0 and 0.05 (P(0.05) = p; one chunk short of exact on 20 chunks, as a normalized error of
docs/results/partial_stragglers.md). For each p and number of draws n:

* the t interval ``mean ± t_{n-1} s/sqrt(n)`` depends on the draws only through the number ``k`` of
  nonzero ones, so its coverage is **exact**: the sum over ``k`` of ``Binomial(n, p)(k)`` times
  whether the interval from ``k`` contains the mean (the same for both laws: the t is scale-free);
* the betting interval (``gcsim._stats.betting_interval``) depends on the order of the draws: its
  coverage is measured over ``--reps`` seeded replications (standard error ``sqrt(c(1-c)/reps)``).

Run (the table of theory §57.12)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/bounded_mean_coverage.py --reps 1000
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from gcsim._stats import betting_interval, t_interval

PS = (0.0, 1e-4, 1e-3, 0.01, 0.3)
NS = (20, 200, 2000)
LAWS = (("Bernoulli(p)", 1.0), ("{0, 0.05}, P(0.05) = p", 0.05))


def t_coverage(n: int, p: float) -> float:
    """Exact coverage of the 95 % t interval for the mean ``p`` of Bernoulli(p) from ``n`` draws."""
    k = np.arange(n + 1)
    mean = k / n
    sd = np.sqrt(np.maximum(k * (1.0 - mean) ** 2 + (n - k) * mean**2, 0.0) / (n - 1))
    covered = np.zeros(n + 1, dtype=bool)
    for j in range(n + 1):
        lo, hi = t_interval(float(mean[j]), float(sd[j]) / math.sqrt(n), n - 1)
        covered[j] = lo <= p <= hi
    return float(stats.binom.pmf(k, n, p)[covered].sum())


def betting_coverage(n: int, p: float, value: float, reps: int, seed: int) -> tuple[float, float]:
    """Share of ``reps`` seeded samples whose 95 % betting interval holds ``value * p``; median upper end."""
    rng = np.random.default_rng(np.random.SeedSequence((seed, n, int(round(p * 1e6)), int(value * 100))))
    cache: dict[bytes, tuple[float, float]] = {}
    hits, uppers = 0, []
    for _ in range(reps):
        x = value * (rng.random(n) < p)
        key = np.flatnonzero(x).tobytes()  # the interval is a function of where the nonzero draws are
        if key not in cache:
            cache[key] = betting_interval(x, 0.0, 1.0)
        lo, hi = cache[key]
        hits += lo <= value * p <= hi
        uppers.append(hi)
    return hits / reps, float(np.median(uppers))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="replications per cell for the betting interval")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(
        "| p | n | t: exact coverage | P(no nonzero draw) | "
        + " | ".join(f"betting, {name}" for name, _ in LAWS)
        + " |"
    )
    print("|---|---:|---:|---:|" + "---:|" * len(LAWS))
    for p in PS:
        for n in NS:
            cells = []
            for _, value in LAWS:
                cov, upper = betting_coverage(n, p, value, args.reps, args.seed)
                cells.append(f"{cov:.3f} (upper {upper:.2g})")
            print(f"| {p:g} | {n} | {t_coverage(n, p):.4f} | {(1.0 - p) ** n:.4f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
