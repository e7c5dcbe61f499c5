"""The two clustered coverage cases of issue #30 (random encoders on small BIBDs), with exact truth.

``benchmarks/bench_coverage.py`` and ``tests/test_draw_intervals.py`` import them. Each case is a
function of one repetition index ``rep`` that returns ``(lo, hi, estimate)``, one 95 % interval of
gcsim's public API at its default number of encoder draws; repetitions with different ``rep`` use
disjoint seeds (independent). The truth comes from :func:`exact_rd_expectation`, an enumeration
written here with NumPy alone (not gcsim's evaluators).

* :func:`clustered_error_curves_case` -- ``error_curves`` (RD(0), the Rademacher random-diagonal
  encoder, on PG(2,3) = the 2-(13,4,1) design, ``m = 2``, ``s`` fixed stragglers) at its defaults
  (20 encoder draws x 15 patterns); the RD row's ``ci_low, ci_high, mean`` (normalized by ``mN``).
  Truth: :func:`error_curves_truth` ``= exact_rd_expectation(PG23, s) / 26``.
* :func:`clustered_seeds_case` -- ``expected_error_over_seeds`` with 20 seeds on the same design
  (each seed's expectation exact over the ``C(13, s)`` straggler sets); raw errors. Truth:
  :func:`seeds_truth` ``= exact_rd_expectation(PG23, s)``.

Truth (theory §57.11): for RD(0) with Rademacher diagonals the optimal error is invariant under
``B -> B diag(σ)`` (a column sign flip is absorbed by the decoder) and under ``d_2 -> -d_2`` (with
the second decoder column), so it depends only on ``e = d_1 ⊙ d_2`` up to sign; ``e`` is uniform
on ``{±1}^n``. Averaging ``err = mN - ‖P_{B_F} T‖²`` over the ``2^{n-1}`` classes and all ``C(n, s)``
straggler sets gives ``E_D E_S err`` exactly (up to round-off). Cost on one core: PG(2,3), ``s = 2``:
4,096 x 78 projections, about 5 s; ``s = 3``: about 16 s (cached per process).

Run ``.venv/bin/python benchmarks/coverage_cases_draws.py [R]`` for the coverage of both cases over
``R`` repetitions (default 200) and their median width / truth.
"""

from __future__ import annotations

import functools
import itertools
import sys
import time

import numpy as np

__all__ = [
    "PG23",
    "FANO",
    "exact_rd_expectation",
    "error_curves_truth",
    "seeds_truth",
    "clustered_error_curves_case",
    "clustered_seeds_case",
    "CLUSTERED_CASES",
]

#: default straggler count of both cases
S_DEFAULT = 2
#: seeds per repetition of :func:`clustered_seeds_case`
SEEDS_PER_REP = 20


def _cyclic_design(base: tuple[int, ...], v: int) -> np.ndarray:
    """Point ``i`` lies on line ``j`` iff ``(i - j) mod v`` is in the perfect difference set ``base``."""
    A = np.zeros((v, v), dtype=np.int64)
    for j in range(v):
        for d in base:
            A[(j + d) % v, j] = 1
    A.setflags(write=False)
    return A


#: PG(2,3), the 2-(13,4,1) design, from the perfect difference set {0, 1, 3, 9} mod 13
PG23 = _cyclic_design((0, 1, 3, 9), 13)
#: the Fano plane, the 2-(7,3,1) design, from {0, 1, 3} mod 7
FANO = _cyclic_design((0, 1, 3), 7)


@functools.lru_cache(maxsize=8)
def _exact(key: bytes, shape: tuple[int, int], s: int) -> float:
    A = np.frombuffer(key, dtype=np.int64).reshape(shape)
    N, n = A.shape
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=n - 1)))
    E = np.hstack([np.ones((len(signs), 1)), signs])  # e and -e give the same error
    T = np.zeros((2 * N, 2))
    T[:N, 0] = 1.0
    T[N:, 1] = 1.0
    total = np.zeros(len(E))
    count = 0
    for S in itertools.combinations(range(n), s):
        F = np.setdiff1d(np.arange(n), S)
        AF = A[:, F].astype(float)
        B = np.concatenate([np.broadcast_to(AF, (len(E), *AF.shape)), AF[None] * E[:, None, F]], axis=1)
        U, sv, _ = np.linalg.svd(B, full_matrices=False)
        U = U * (sv > max(B.shape[1:]) * np.finfo(float).eps * sv[:, :1])[:, None, :]  # the range of B_F
        total += 2 * N - np.einsum("bik,ij->bkj", U, T).__pow__(2).sum(axis=(1, 2))
        count += 1
    return float(total.mean() / count)


def exact_rd_expectation(A: np.ndarray, s: int) -> float:
    """``E_D E_S err(B, F)`` of RD(0) (Rademacher diagonals), ``m = 2``, ``s`` uniform stragglers (raw).

    >>> round(exact_rd_expectation(FANO, 3), 4)
    5.675
    """
    A = np.ascontiguousarray(A, dtype=np.int64)
    return _exact(A.tobytes(), A.shape, int(s))


def error_curves_truth(s: int = S_DEFAULT) -> float:
    """The truth of :func:`clustered_error_curves_case`: normalized by ``mN = 26``."""
    return exact_rd_expectation(PG23, s) / 26.0


def seeds_truth(s: int = S_DEFAULT) -> float:
    """The truth of :func:`clustered_seeds_case` (raw error)."""
    return exact_rd_expectation(PG23, s)


def clustered_error_curves_case(rep: int, *, s: int = S_DEFAULT, A: np.ndarray = PG23) -> tuple[float, float, float]:
    """``error_curves``' RD(0) interval on ``A`` (PG(2,3)) at ``s`` stragglers, defaults, ``seed = rep``.

    ``error_curves`` draws encoder ``k`` and its patterns from ``SeedSequence((seed, ·, k))``, so
    different ``rep`` are independent repetitions.
    """
    from gcsim.coding.experiments import InstanceSpec, SchemeSpec, error_curves

    spec = InstanceSpec("design", "coverage", A, 2, [SchemeSpec("RD(0)", "rd", {"eps": 0.0})], [s], [], False)
    frame = error_curves(spec, seed=rep)
    row = frame[frame.curve == "RD(0)"].iloc[0]
    return float(row.ci_low), float(row.ci_high), float(row["mean"])


def clustered_seeds_case(
    rep: int, *, s: int = S_DEFAULT, seeds: int = SEEDS_PER_REP, A: np.ndarray = PG23
) -> tuple[float, float, float]:
    """``expected_error_over_seeds`` of RD(0) on ``A`` (PG(2,3)), seeds ``rep * seeds ... (rep + 1) * seeds - 1``."""
    from gcsim.coding.evaluate import expected_error_over_seeds
    from gcsim.coding.stragglers import straggler_model

    model = straggler_model("fixed", A.shape[1], s=s)
    res = expected_error_over_seeds(A, 2, "rd", model, range(rep * seeds, (rep + 1) * seeds), eps=0.0)
    return float(res.ci[0]), float(res.ci[1]), float(res.mean)


#: name -> (one interval for a repetition index, the exact truth)
CLUSTERED_CASES = {
    "clustered: error_curves RD(0) on PG(2,3), s = 2, 20 draws x 15 patterns": (
        clustered_error_curves_case,
        error_curves_truth,
    ),
    "clustered: expected_error_over_seeds RD(0) on PG(2,3), s = 2, 20 seeds": (clustered_seeds_case, seeds_truth),
}


def coverage(case, truth: float, reps: int) -> tuple[int, float]:
    """Covered count over ``reps`` repetitions and the median width / truth."""
    covered, widths = 0, []
    for rep in range(reps):
        lo, hi, _ = case(rep)
        covered += lo <= truth <= hi
        widths.append((hi - lo) / truth)
    return covered, float(np.median(widths))


def main(argv: list[str]) -> int:
    reps = int(argv[0]) if argv else 200
    for name, (case, truth_fn) in CLUSTERED_CASES.items():
        t0 = time.perf_counter()
        truth = truth_fn()
        t1 = time.perf_counter()
        covered, width = coverage(case, truth, reps)
        t2 = time.perf_counter()
        print(
            f"{name}: coverage {covered}/{reps} = {covered / reps:.3f}, median width/truth {width:.4f}, "
            f"truth {truth:.6g} ({t1 - t0:.1f} s), {reps} intervals in {t2 - t1:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
