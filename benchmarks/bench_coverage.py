"""Coverage of gcsim's 95% intervals for the expected error, against exact truth (theory §57.8).

Each case has a known truth: an exact enumeration of every pattern (small n), the exact route of
theory §57.3, or the mean over many encoder draws.  The estimator runs with ``--seeds`` independent
seeds (default 200) at two budgets -- the default (2,000 draws) and the advisor's screening budget
(250 draws) -- with ``exact_limit`` lowered to 100 so that Monte Carlo runs even where the default
would enumerate.  An interval *covers* when ``lo <= truth <= hi`` (a relative 1e-9 of round-off
allowed); a one-sided limit covers when it lies above the truth.  Reported: coverage and the median
of width / truth.

Cases: rare-event (near-exact codes: separable ones, and an exact code beyond its tolerance at
small p), clustered (random encoders averaged over draws, when ``benchmarks/coverage_cases_draws.py``
provides them), ordinary, and a Markov chain.

Usage::

    .venv/bin/python benchmarks/bench_coverage.py                # 200 seeds per case and budget
    .venv/bin/python benchmarks/bench_coverage.py --seeds 20     # a quicker look

Prints a table and writes ``benchmarks/results/coverage.json`` (atomically).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import gcsim
from gcsim.coding.evaluate import expected_error, optimal_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.baselines import fractional_repetition

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "coverage.json"
BUDGETS = {"default (2,000 draws)": 2000, "advisor screen (250 draws)": 250}
EXACT_LIMIT = 100


@dataclass
class Case:
    name: str
    kind: str  # rare, clustered, ordinary, markov
    truth: Callable[[], float]
    interval: Callable[[int, int], tuple[float, float, str]]  # (seed, samples) -> (lo, hi, method)
    budgets: dict[str, int] | None = None  # None: BUDGETS


def _all_masks(n: int) -> np.ndarray:
    return ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def _enumerated_bernoulli(sch, p: np.ndarray) -> float:
    """Σ_F P(F) err(F)/(mN) over all 2^n patterns (independent of expected_error's routes)."""
    total, n, step = 0.0, sch.n, 2**16
    for a in range(0, 2**n, step):
        masks = ((np.arange(a, min(a + step, 2**n))[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
        w = np.prod(np.where(masks, 1.0 - p[None, :], p[None, :]), axis=1)
        total += float(np.dot(w, optimal_error(sch, masks, progress=False)))
    return total / sch.B.shape[0]


def _enumerated_fixed(sch, s: int) -> float:
    masks = _all_masks(sch.n)
    masks = masks[masks.sum(axis=1) == sch.n - s]
    return float(optimal_error(sch, masks).mean() / sch.B.shape[0])


def _estimator(sch, model) -> Callable[[int, int], tuple[float, float, str]]:
    def run(seed: int, samples: int) -> tuple[float, float, str]:
        res = expected_error(
            sch, model, seed=seed, samples=samples, exact_limit=EXACT_LIMIT, normalized=True, progress=False
        )
        return float(res.ci[0]), float(res.ci[1]), res.method

    return run


def cases() -> list[Case]:
    out: list[Case] = []
    coset = encode(gcsim.coset_graph(13, 7, 1).assignment, 2, "exact-gaussian", s=5, seed=0)
    # 13 components of 7 workers: the truth by enumeration of each component (2^7 patterns each)
    for label, model in (("Bernoulli(0.1)", straggler_model("bernoulli", 91, p=0.1)),
                         ("fixed s = 9", straggler_model("fixed", 91, s=9))):  # fmt: skip
        truth = expected_error(coset, model, normalized=True, progress=False, exact_limit=20000)
        assert truth.method.startswith("exact")
        out.append(
            Case(
                f"coset (13,7,1) / exact-gaussian s=5, n=91, {label} [the advisor's top answer]",
                "rare",
                lambda t=truth.mean: t,
                _estimator(coset, model),
            )
        )
    fr = encode(fractional_repetition(20, 3).assignment, 1, "fractional-repetition")
    p20 = np.full(20, 0.1)
    out.append(
        Case(
            "fractional repetition m=1, n=20 (groups of 4), Bernoulli(0.1)",
            "rare",
            lambda: _enumerated_bernoulli(fr, p20),
            _estimator(fr, straggler_model("bernoulli", 20, p=0.1)),
        )
    )
    # not separable: an exact code (tolerance 2) beyond its tolerance at small p -- Monte Carlo with
    # one-sided limits on the rare strata
    pg_exact = encode(gcsim.bibd(13, 4, 1), 2, "exact-gaussian", s=2, seed=0)
    out.append(
        Case(
            "PG(2,3) / exact-gaussian s=2, Bernoulli(0.02) (not separable)",
            "rare",
            lambda: _enumerated_bernoulli(pg_exact, np.full(13, 0.02)),
            _estimator(pg_exact, straggler_model("bernoulli", 13, p=0.02)),
        )
    )
    from gcsim.combinatorics.baselines import cyclic_repetition

    cyc = encode(cyclic_repetition(16, 6).assignment, 2, "exact-gaussian", s=4, seed=0)
    out.append(
        Case(
            "cyclic repetition n=16, 6 parts each / exact-gaussian s=4, Bernoulli(0.1) (strata <= 4 never fail)",
            "rare",
            lambda: _enumerated_bernoulli(cyc, np.full(16, 0.1)),
            _estimator(cyc, straggler_model("bernoulli", 16, p=0.1)),
        )
    )
    rd15 = encode(gcsim.bibd(15, 7, 3), 2, "rd", seed=0)
    out.append(
        Case(
            "2-(15,7,3) / rd, Bernoulli(0.3)",
            "ordinary",
            lambda: _enumerated_bernoulli(rd15, np.full(rd15.n, 0.3)),
            _estimator(rd15, straggler_model("bernoulli", rd15.n, p=0.3)),
        )
    )
    rd13 = encode(gcsim.bibd(13, 4, 1), 2, "rd", seed=1)
    out.append(
        Case(
            "PG(2,3) / rd, fixed s = 4",
            "ordinary",
            lambda: _enumerated_fixed(rd13, 4),
            _estimator(rd13, straggler_model("fixed", 13, s=4)),
        )
    )
    out.append(
        Case(
            "PG(2,3) / rd, Markov (enter 0.05, leave 0.45: stationary 0.1)",
            "markov",
            lambda: _enumerated_bernoulli(rd13, np.full(13, 0.1)),
            _estimator(rd13, straggler_model("markov", 13, p_enter=0.05, p_leave=0.45)),
        )
    )
    sys.path.insert(0, str(HERE))
    try:  # the clustered cases (random encoders averaged over draws), where provided
        import coverage_cases_draws  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        for name, (case, truth) in coverage_cases_draws.CLUSTERED_CASES.items():

            def interval(seed: int, samples: int, case=case) -> tuple[float, float, str]:
                lo, hi, _ = case(seed)
                return lo, hi, "draw-level interval"

            out.append(Case(name, "clustered", truth, interval, {"default (20 encoder draws)": 0}))
    return out


def covers(lo: float, hi: float, truth: float) -> bool:
    slack = 1e-9 * abs(truth) + 1e-15
    return lo - slack <= truth <= hi + slack


def run(seeds: int) -> dict:
    rows = []
    for case in cases():
        t0 = time.perf_counter()
        truth = case.truth()
        for budget, samples in (case.budgets or BUDGETS).items():
            hits, widths, methods = 0, [], set()
            for seed in range(seeds):
                lo, hi, method = case.interval(seed, samples)
                hits += covers(lo, hi, truth)
                widths.append((hi - lo) / truth if truth > 0 else float("inf"))
                methods.add(method.split(" (")[0])
            rows.append(
                dict(
                    case=case.name,
                    kind=case.kind,
                    budget=budget,
                    truth=truth,
                    seeds=seeds,
                    coverage=hits / seeds,
                    median_width_over_truth=float(np.median(widths)),
                    methods=sorted(methods),
                )
            )
            print(
                f"{case.kind:9s} {hits / seeds:6.1%}  width/truth {np.median(widths):9.3g}  {budget:27s} {case.name}",
                flush=True,
            )
        print(f"          ({time.perf_counter() - t0:.1f} s)", flush=True)
    return {"seeds": seeds, "exact_limit": EXACT_LIMIT, "level": 0.95, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200, help="independent seeds per case and budget (default 200)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results JSON (default benchmarks/results/coverage.json)")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    warnings.simplefilter("ignore")  # the routes' accuracy warnings are not what is measured here
    result = run(args.seeds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(result, fh, indent=1)
    os.replace(tmp, args.out)
    bad = [r for r in result["rows"] if r["coverage"] < 0.93]
    print(f"{len(result['rows']) - len(bad)} of {len(result['rows'])} rows cover >= 93%; written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
