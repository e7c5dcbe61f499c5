"""Exact parts and rare-event limits of the expected-error estimator (theory chapter 57).

Every reference is computed independently of gcsim.coding.estimators: full enumeration of the
patterns with exact rational weights, the rank bound from gcsim.coding.bounds, optimal errors from
gcsim.coding.evaluate.optimal_error (the evaluator whose accuracy chapter 40 proves).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import gcsim
from gcsim.coding import estimators as est
from gcsim.coding.bounds import rank_lower_bound
from gcsim.coding.evaluate import expected_error, optimal_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.baselines import fractional_repetition


def _all_masks(n: int) -> np.ndarray:
    return ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def _subset_masks(n: int, s: int) -> np.ndarray:
    out = np.ones((math.comb(n, s), n), dtype=bool)
    for t, S in enumerate(itertools.combinations(range(n), s)):
        out[t, list(S)] = False
    return out


def _bernoulli_weights(masks: np.ndarray, p: list[Fraction]) -> list[Fraction]:
    return [math.prod((1 - p[j]) if row[j] else p[j] for j in range(len(p))) for row in masks]


@pytest.mark.parametrize("m", [1, 2, 3])
def test_rank_bound_mean_equals_enumeration(m):
    """Lemma 57.1: fixed s (every s-subset), homogeneous and heterogeneous Bernoulli (every pattern,
    exact rational weights), Markov (the stationary Bernoulli law)."""
    A = np.asarray(gcsim.bibd(7, 3, 1).assignment)  # the Fano plane, r = 3
    A = np.vstack([A, [[1, 1, 0, 0, 0, 0, 0]]])  # a part with r = 2: unequal loads
    n = A.shape[1]
    for s in range(n + 1):
        masks = _subset_masks(n, s)
        ref = Fraction(int(rank_lower_bound(A, m, masks).sum()), len(masks))
        got = est.expected_rank_lower_bound(A, m, straggler_model("fixed", n, s=s))
        assert got == pytest.approx(float(ref), rel=1e-13, abs=1e-15)
    masks = _all_masks(n)
    L = rank_lower_bound(A, m, masks)
    for p in ([Fraction(1, 10)] * n, [Fraction(j + 1, 11) for j in range(n)]):
        ref = sum(w * int(v) for w, v in zip(_bernoulli_weights(masks, p), L, strict=True))
        got = est.expected_rank_lower_bound(A, m, straggler_model("bernoulli", n, p=[float(x) for x in p]))
        assert got == pytest.approx(float(ref), rel=1e-12)
    markov = straggler_model("markov", n, p_enter=0.05, p_leave=0.45)  # stationary 0.1
    ref = sum(w * int(v) for w, v in zip(_bernoulli_weights(masks, [Fraction(1, 10)] * n), L, strict=True))
    assert est.expected_rank_lower_bound(A, m, markov) == pytest.approx(float(ref), rel=1e-12)


def test_rank_bound_mean_refuses_other_models():
    with pytest.raises(gcsim.errors.InvalidArgumentError, match="model"):
        est.expected_rank_lower_bound(np.ones((2, 3), dtype=int), 1, straggler_model("worst", 3, s=1))


def test_separable_expectation_equals_enumeration():
    """Lemma 57.3 on the coset graph (3,6,1) (3 components of 6 workers, each holding one part) and on
    fractional repetition: the exact route equals a full enumeration of the 2^18 (resp. C(n, s))
    patterns with optimal_error."""
    g = gcsim.coset_graph(3, 6, 1)
    sch = encode(g.assignment, 2, "exact-gaussian", s=4, seed=3)
    n = sch.n
    assert [w.size for _, w in est.components(sch)] == [6, 6, 6]
    masks = _all_masks(n)
    errs = optimal_error(sch, masks)
    for p in (0.1, 0.3):
        model = straggler_model("bernoulli", n, p=p)
        ref = float(np.dot(model.weights(masks), errs))
        res = expected_error(sch, model, exact_limit=1000, progress=False)
        assert res.method.startswith("exact (exact by components")
        assert res.mean == pytest.approx(ref, rel=1e-10, abs=1e-13)
    s = 9
    sub = _subset_masks(n, s)
    ref = float(optimal_error(sch, sub).mean())
    res = expected_error(sch, straggler_model("fixed", n, s=s), exact_limit=1000, progress=False)
    assert res.method.startswith("exact (exact by components") and res.mean == pytest.approx(ref, rel=1e-10, abs=1e-13)
    fr = encode(fractional_repetition(12, 2).assignment, 1, "fractional-repetition")
    masks = _all_masks(12)
    model = straggler_model("bernoulli", 12, p=0.2)
    ref = float(np.dot(model.weights(masks), optimal_error(fr, masks)))
    res = expected_error(fr, model, exact_limit=100, progress=False)
    assert res.method.startswith("exact (exact by components") and res.mean == pytest.approx(ref, rel=1e-12)


def test_connected_support_is_not_separable():
    sch = encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=0)
    assert len(est.components(sch)) == 1
    assert est.separable_expectation(sch, straggler_model("bernoulli", 7, p=0.1), 10**6, optimal_error) is None


def test_control_variate_is_unbiased_and_above_the_bound():
    """Lemma 57.2: E[L] + mean(D) averages to the truth over seeds, and no interval lies below E[L]."""
    sch = encode(gcsim.bibd(13, 4, 1), 2, "rd", seed=1)
    model = straggler_model("fixed", 13, s=6)
    truth = float(optimal_error(sch, _subset_masks(13, 6)).mean())
    bound = est.expected_rank_lower_bound(sch.assignment, 2, model)
    assert bound > 0
    means = []
    for seed in range(40):
        res = expected_error(sch, model, exact_limit=10, samples=200, seed=seed, progress=False)
        assert "control variate" in res.method
        assert res.ci[0] >= bound - 1e-12
        means.append(res.mean)
    means_arr = np.array(means)
    # the average of 40 independent estimates: within 5 standard errors of the truth
    assert abs(means_arr.mean() - truth) <= 5 * means_arr.std(ddof=1) / math.sqrt(means_arr.size)


def test_a_stratum_without_failures_gets_a_one_sided_limit_not_zero_width():
    """Lemma 57.4: a Monte Carlo sample with no failure is not an exact result."""
    g = est.Group(1.0, 0.5, np.zeros(400))
    mean, (lo, hi), _, note = est.combine_groups([g], 0.0, 10.0, 1e-9)
    cp = 1 - 0.05 ** (1 / 400)
    assert mean == lo == 0.5 and hi == pytest.approx(0.5 + 1e-9 + 10 * cp, rel=1e-9)
    assert "one-sided" in note


def test_clopper_pearson_upper_is_the_binomial_inversion():
    from scipy import stats

    for k, n in ((0, 10), (3, 50), (29, 1000)):
        u = est.clopper_pearson_upper(k, n, 0.05)
        assert stats.binom.cdf(k, n, u) == pytest.approx(0.05, rel=1e-8)
    assert est.clopper_pearson_upper(5, 5, 0.05) == 1.0


def test_failure_probability_is_monotone_in_the_number_of_stragglers():
    """Lemma 57.5 by enumeration: P(err > tau | |S| = s) is non-decreasing in s for an exact code."""
    sch = encode(gcsim.bibd(13, 4, 1), 2, "exact-gaussian", s=2, seed=0)
    fails = []
    for s in range(7):
        errs = optimal_error(sch, _subset_masks(13, s))
        fails.append(float(np.mean(errs > 1e-10 * 26)))
    assert fails[:3] == [0.0, 0.0, 0.0] and all(a <= b for a, b in itertools.pairwise(fails))


def test_rare_strata_cover_on_a_near_exact_code():
    """The one-sided limits cover: an exact code beyond its tolerance at small p, 60 seeds, against the
    exact expectation (2^13 patterns); every interval lies above the rank bound's mean."""
    sch = encode(gcsim.bibd(13, 4, 1), 2, "exact-gaussian", s=2, seed=0)
    model = straggler_model("bernoulli", 13, p=0.02)
    truth = expected_error(sch, model, progress=False).mean
    bound = est.expected_rank_lower_bound(sch.assignment, 2, model)
    covered = 0
    for seed in range(60):
        res = expected_error(sch, model, exact_limit=20, samples=400, seed=seed, progress=False)
        covered += res.ci[0] <= truth <= res.ci[1]
        assert res.ci[0] >= bound - 1e-12 and res.ci[1] > res.ci[0]
    assert covered >= 54  # P(Bin(60, 0.95) < 54) ~ 0.03 if the level held with equality; measured: 60


def test_advisor_top_row_is_exact_and_no_row_contradicts_its_bound():
    """Issue #30's advisor checks: the top answer for (91, 10, 2) at p = 0.1 holds 3.25e-6, and over
    smaller questions no row has lower_bound > error_hi or an estimate below lower_bound."""
    adv = gcsim.advise(91, 10, 2, "bernoulli:0.1", progress=False)
    top = adv.rows[0]
    assert top["error_lo"] <= 3.25e-6 * (1 + 1e-9) and top["error_hi"] >= 3.25e-6 * (1 - 1e-9)
    for n, load in ((91, 10), (57, 8), (20, 5), (16, 4), (18, 6)):
        rows = adv.rows if n == 91 else gcsim.advise(n, load, 2, "bernoulli:0.1", progress=False).rows
        for r in rows:
            if r["lower_bound"] == r["lower_bound"]:
                assert r["lower_bound"] <= r["error_hi"] * (1 + 1e-9) + 1e-15, r["name"]
                assert r["error"] >= r["lower_bound"] * (1 - 1e-9) - 1e-15, r["name"]
