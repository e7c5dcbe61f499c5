"""Intervals whose unit is the encoder draw (issue #30 item 3, theory §57.10-§57.11).

Coverage is measured against exact truth: the expectation of RD(0) over its Rademacher draws and
over every straggler set, enumerated with NumPy alone in ``benchmarks/coverage_cases_draws.py``
(the optimal error depends on the draw only through ``e = d_1 ⊙ d_2`` up to sign: ``2^{n-1}``
classes). As in ``tests/test_expected_coverage.py``, R repetitions give a covered count that is
Binomial(R, c); a test fails only below the ALPHA-quantile of Binomial(R, 0.95).
"""

from __future__ import annotations

import math
import sys
from itertools import combinations, product
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from exact_lstsq import lstsq_error
from gcsim._stats import DrawInterval, draw_level_interval, nested_variance
from gcsim.errors import InvalidArgumentError
from test_expected_coverage import min_covered

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from coverage_cases_draws import (  # noqa: E402
    FANO,
    PG23,
    clustered_error_curves_case,
    clustered_seeds_case,
    exact_rd_expectation,
)

#: the PG(2,3) per-draw expectations at s = 3 depend on the draw only through the weight of e
SKEWED = [6.149] * 12 + [6.386] * 5 + [6.885, 7.709, 8.967]


def test_t_branch_is_students_t_over_the_draws():
    y = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 0.95, 1.05, 1.4, 0.8])
    res = draw_level_interval(y, method="t")
    se = y.std(ddof=1) / math.sqrt(y.size)
    q = stats.t.ppf(0.975, y.size - 1)
    assert isinstance(res, DrawInterval) and res.draws == 10 and res.method == "t over 10 draws"
    assert res.se == pytest.approx(se, rel=1e-14)
    assert res.ci == pytest.approx((y.mean() - q * se, y.mean() + q * se), rel=1e-14)
    # auto: many symmetric draws keep the t; few or skewed ones add the bootstrap-t
    sym = np.linspace(-1.0, 1.0, 40)
    assert draw_level_interval(sym).method == "t over 40 draws"
    assert draw_level_interval(SKEWED).method.startswith("t ∪ bootstrap-t over 20 draws")
    assert draw_level_interval([1.0, 2.0, 4.0]).method.startswith("t over 3 draws (too few")


def test_bootstrap_is_deterministic_and_skewed_the_right_way():
    a = draw_level_interval(SKEWED, method="bootstrap-t", seed=3)
    assert a == draw_level_interval(SKEWED, method="bootstrap-t", seed=3)
    assert a != draw_level_interval(SKEWED, method="bootstrap-t", seed=4)
    # a right-skewed sample: the studentized bootstrap reaches further above the mean than below
    assert a.ci[1] - a.mean > a.mean - a.ci[0] > 0
    auto = draw_level_interval(SKEWED, seed=3)
    t = draw_level_interval(SKEWED, method="t")
    assert auto.ci[0] <= min(t.ci[0], a.ci[0]) + 1e-15 and auto.ci[1] >= max(t.ci[1], a.ci[1]) - 1e-15
    bca = draw_level_interval(SKEWED, method="bca", seed=3)
    assert bca.ci[0] < bca.mean < bca.ci[1]


def test_bootstrap_t_against_an_independent_loop():
    """The bootstrap-t quantiles from a plain loop over resamples (numpy.percentile), same level."""
    y = np.array(SKEWED)
    rng = np.random.default_rng(11)
    se = y.std(ddof=1) / math.sqrt(y.size)
    ts = []
    for _ in range(20_000):
        z = rng.choice(y, y.size)
        sz = z.std(ddof=1) / math.sqrt(y.size)
        ts.append((z.mean() - y.mean()) / sz if sz > 0 else math.copysign(math.inf, z.mean() - y.mean()))
    lo_q, hi_q = np.percentile(ts, [2.5, 97.5])
    ref = (y.mean() - hi_q * se, y.mean() - lo_q * se)
    got = draw_level_interval(y, method="bootstrap-t", resamples=20_000).ci
    # two Monte Carlo estimates of the same quantiles: within a few percent of the width
    assert abs(got[0] - ref[0]) < 0.05 * (ref[1] - ref[0]) and abs(got[1] - ref[1]) < 0.05 * (ref[1] - ref[0])


def test_degenerate_draws_are_said_and_never_falsely_exact():
    one = draw_level_interval([2.5])
    assert one.ci == (-math.inf, math.inf) and one.method.startswith("one draw: no interval")
    assert draw_level_interval([2.5], bounds=(0.0, 10.0)).ci == (0.0, 10.0)
    mc = draw_level_interval([3.0] * 4)
    assert mc.ci == (-math.inf, math.inf) and "no interval" in mc.method
    # no draw of D differed: at most f = 1 - 0.025^(1/D) of the law elsewhere, by at most the range
    f = 1.0 - 0.025 ** (1.0 / 4)
    rng_ci = draw_level_interval([3.0] * 4, bounds=(0.0, 10.0)).ci
    assert rng_ci == pytest.approx((3.0 - 3.0 * f, 3.0 + 7.0 * f), rel=1e-14)


def test_exact_draws_that_agree_are_not_an_exact_mean():
    """Exact per-draw means remove the pattern noise, not the draw's: unseen draws may differ."""
    one = draw_level_interval([2.5], exact=True)
    assert one.ci == (-math.inf, math.inf) and one.method.startswith("one exact draw: no interval")
    assert draw_level_interval([2.5], exact=True, bounds=(0.0, 10.0)).ci == (0.0, 10.0)
    same = draw_level_interval([3.0] * 4, exact=True)
    assert same.ci == (-math.inf, math.inf) and same.method == "4 identical exact draws: no interval without bounds"
    f = 1.0 - 0.025 ** (1.0 / 4)
    ranged = draw_level_interval([3.0] * 4, exact=True, bounds=(0.0, 10.0))
    assert ranged.ci == pytest.approx((3.0 - 3.0 * f, 3.0 + 7.0 * f), rel=1e-14)
    assert ranged.method == "4 identical exact draws: range interval (one-sided binomial)"
    # zero width needs the caller's proof that the mean does not depend on the draw
    for values in ([2.5], [3.0] * 4):
        proven = draw_level_interval(values, exact=True, invariant=True, bounds=(0.0, 10.0))
        assert proven.ci == (values[0], values[0]) and proven.se == 0.0 and "draw-invariant" in proven.method
    # without exact values the Monte Carlo noise remains: invariance alone changes nothing
    assert draw_level_interval([3.0] * 4, invariant=True) == draw_level_interval([3.0] * 4)
    with pytest.raises(InvalidArgumentError, match="^invariant"):
        draw_level_interval([3.0, 3.5], exact=True, invariant=True)


def test_one_exact_seed_gives_the_range_not_its_value():
    """expected_error_over_seeds: RD on the Fano plane, one seed, exact evaluation."""
    from gcsim.coding.evaluate import expected_error_over_seeds
    from gcsim.coding.stragglers import straggler_model

    model = straggler_model("fixed", 7, s=2)
    with pytest.warns(UserWarning, match=r"ci = \(0\.0, 14\.0\)"):
        res = expected_error_over_seeds(FANO, 2, "rd", model, [0])
    assert res.method == "mean over 1 seeds of exact" and res.ci == (0.0, 14.0)
    assert res.ci_method.startswith("one exact seed: no interval over seeds (the range at most)")
    # a deterministic encoder does not read the seed: its exact mean is the mean itself
    det = expected_error_over_seeds(FANO, 2, "naive", model, [0, 1])
    assert det.ci == (det.mean, det.mean) and "deterministic encoder" in det.ci_method


def test_range_interval_covers_a_rare_draw_value_exactly_enumerated():
    """Per-draw exact means v = 0.2 (probability 0.95) or v' = 0.9 (0.05), D = 5, truth 0.235.

    Every one of the 2^5 outcomes is evaluated with its probability (no simulation): the range
    interval covers with probability >= 0.95, while a zero-width interval on agreeing draws
    (the old rule) misses whenever all five agree: 1 - 0.95^5 - 0.05^5 of coverage at most.
    """
    v, w, q, D = 0.2, 0.9, 0.05, 5
    truth = (1 - q) * v + q * w
    coverage = {(0.0, 1.0): 0.0, None: 0.0}
    zero_width_on_agreement = 0.0
    for seq in product([v, w], repeat=D):
        k = sum(x == w for x in seq)
        p = q**k * (1 - q) ** (D - k)
        for bounds in coverage:
            lo, hi = draw_level_interval(list(seq), exact=True, bounds=bounds).ci
            coverage[bounds] += p * (lo <= truth <= hi)
            if bounds is not None and 0 < k < D:
                zero_width_on_agreement += p * (lo <= truth <= hi)
    assert coverage[(0.0, 1.0)] == pytest.approx(0.9999996875, abs=1e-12)
    assert coverage[None] == pytest.approx(1.0, abs=1e-12)
    assert zero_width_on_agreement == pytest.approx(1 - 0.95**5 - 0.05**5, abs=1e-12)  # 0.2262


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"per_draw_means": []}, "per_draw_means"),
        ({"per_draw_means": [1.0, math.nan]}, "per_draw_means"),
        ({"per_draw_means": [[1.0, 2.0]]}, "per_draw_means"),
        ({"per_draw_means": [1.0, 2.0], "level": 1.0}, "level"),
        ({"per_draw_means": [1.0, 2.0], "method": "z"}, "method"),
        ({"per_draw_means": [1.0, 2.0], "seed": -1}, "seed"),
        ({"per_draw_means": [1.0, 2.0], "exact": 1}, "exact"),
        ({"per_draw_means": [1.0, 2.0], "invariant": "yes"}, "invariant"),
        ({"per_draw_means": [1.0, 2.0], "exact": True, "invariant": True}, "invariant"),
        ({"per_draw_means": [1.0, 2.0], "resamples": 10}, "resamples"),
        ({"per_draw_means": [1.0, 12.0], "bounds": (0.0, 10.0)}, "bounds"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs, name):
    with pytest.raises(InvalidArgumentError, match=f"^{name}"):
        draw_level_interval(**kwargs)


def test_nested_variance_against_the_anova_formulas():
    rng = np.random.default_rng(5)
    D, P = 7, 4
    y = rng.normal(size=(D, 1)) * 2.0 + rng.normal(size=(D, P)) * 0.5
    grand = sum(sum(row) for row in y.tolist()) / (D * P)
    means = [sum(row) / P for row in y.tolist()]
    ssb = P * sum((mk - grand) ** 2 for mk in means)
    ssw = sum((v - means[k]) ** 2 for k, row in enumerate(y.tolist()) for v in row)
    sb, sw, var = nested_variance(y)
    assert sw == pytest.approx(ssw / (D * (P - 1)), rel=1e-12)
    assert sb == pytest.approx((ssb / (D - 1) - ssw / (D * (P - 1))) / P, rel=1e-12)
    # Var(mean) = σ_b²/D + σ_w²/(DP), estimated by the squared standard error of the draw means
    assert var == pytest.approx(sb / D + sw / (D * P), rel=1e-12)
    assert var == pytest.approx(np.var(means, ddof=1) / D, rel=1e-12)
    with pytest.raises(InvalidArgumentError, match="^values"):
        nested_variance([[1.0, 2.0]])


def test_exact_truth_agrees_with_a_direct_lstsq_on_single_draws():
    """The truth's reduction: an RD(0) draw's expected error depends only on e = d1 * d2 up to sign."""
    rng = np.random.default_rng(2)
    A = FANO.astype(float)

    def draw_mean(d1, d2):
        B = np.vstack([A * d1, A * d2])
        masks = [~np.isin(np.arange(7), S) for S in combinations(range(7), 2)]
        return np.mean([lstsq_error(B, mask, 2) for mask in masks])

    d1, d2 = rng.choice([-1.0, 1.0], size=(2, 7))
    base = draw_mean(d1, d2)
    sigma = rng.choice([-1.0, 1.0], size=7)
    assert draw_mean(d1 * sigma, d2 * sigma) == pytest.approx(base, abs=1e-10)  # column sign flips
    assert draw_mean(d1, -d2) == pytest.approx(base, abs=1e-10)  # e -> -e
    # the mean over the 2^6 classes of e (each stands for 2^8 of the 2^14 equally likely draws)
    es = [np.array((1.0, *t)) for t in product([1.0, -1.0], repeat=6)]
    truth = np.mean([draw_mean(np.ones(7), e) for e in es])
    assert exact_rd_expectation(FANO, 2) == pytest.approx(truth, abs=1e-9)


def test_error_curves_interval_covers_over_draws():
    """error_curves at its defaults (20 draws x 15 patterns), RD(0) on the Fano plane, s = 2."""
    truth = exact_rd_expectation(FANO, 2) / 14.0
    R = 200
    covered = 0
    for rep in range(R):
        lo, hi, _ = clustered_error_curves_case(rep, s=2, A=FANO)
        covered += lo <= truth <= hi
    assert covered >= min_covered(R), covered / R


def test_seeds_interval_covers_over_seeds():
    """expected_error_over_seeds with 20 seeds (exact per seed), RD(0) on PG(2,3), s = 1."""
    truth = exact_rd_expectation(PG23, 1)
    R = 200
    covered = 0
    for rep in range(R):
        lo, hi, _ = clustered_seeds_case(rep, s=1)
        covered += lo <= truth <= hi
    assert covered >= min_covered(R), covered / R


def test_seeds_draw_independent_patterns_on_the_monte_carlo_route():
    """Each encoder seed gets its own pattern seed, so Monte Carlo means of a deterministic encoder differ.

    With one shared pattern seed the two naive schemes (identical: naive ignores the seed) drew the
    same patterns and gave bit-identical estimates: the per-seed units were not independent.  The
    estimates are checked against the exact expectation over all C(7,2) straggler sets by lstsq.
    """
    from gcsim.coding.evaluate import expected_error_over_seeds
    from gcsim.coding.stragglers import straggler_model

    model = straggler_model("bernoulli", 7, p=0.3)
    res = expected_error_over_seeds(FANO, 1, "naive", model, [0, 1, 2, 3], exact_limit=0, samples=400)
    assert res.method.startswith("mean over 4 seeds of monte-carlo")
    assert len(set(res.values.tolist())) == 4  # four independent estimates, not one repeated
    # the same call again: same numbers (each pair of seeds fixes its patterns)
    again = expected_error_over_seeds(FANO, 1, "naive", model, [0, 1, 2, 3], exact_limit=0, samples=400)
    assert np.array_equal(again.values, res.values)
    # the truth: the naive encoder's optimal error averaged exactly over all 2^7 straggler sets
    from gcsim.coding.schemes import encode

    B = np.asarray(encode(FANO, 1, "naive").B, dtype=float)
    truth = 0.0
    for straggles in product([False, True], repeat=7):
        k = sum(straggles)
        truth += 0.3**k * 0.7 ** (7 - k) * lstsq_error(B, ~np.array(straggles), 1)
    assert res.ci[0] <= truth <= res.ci[1]
