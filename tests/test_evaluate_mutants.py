"""gcsim.coding.evaluate (the part run by ``scripts/mutation.py coding.evaluate``) against independent computations.

Issue #32 item 7.  The optimal-decoding error is checked against numpy.linalg.lstsq on B_F and the
target T (every route, raw and normalized, one mask and a batch), the condition number against
the singular values from numpy.linalg.svd, and the small helpers against the standard library.
"""

from __future__ import annotations

import itertools
import math
import statistics
import warnings
from fractions import Fraction

import numpy as np
import pytest

from conftest import FANO
from exact_lstsq import lstsq_error
from gcsim.coding.estimators import FAILURE_TOL
from gcsim.coding.evaluate import (
    _check_method,
    _pattern_seed,
    condition_number,
    expected_error,
    expected_error_over_seeds,
    fixed_decoder_error,
    is_exact_method,
    optimal_error,
    optimal_error_all,
    worst_case_error,
)
from gcsim.coding.expected_routes import _betting_ci, _log_comb, _pool_strata, _se
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.errors import InvalidArgumentError, SizeLimitError


@pytest.mark.parametrize("method", ["auto", "gram", "svd", "qr", "downdate"])
@pytest.mark.parametrize("m", [1, 2])
def test_optimal_error_against_lstsq(method, m):
    sch = encode(np.asarray(FANO), m, "rd", seed=4)
    B = np.asarray(sch.B, dtype=float)
    rng = np.random.default_rng(7)
    masks = rng.random((12, 7)) < 0.6
    masks[0] = True
    masks[1] = False
    expected = np.array([lstsq_error(B, mk, m) for mk in masks])
    got = optimal_error(sch, masks, method=method, progress=False)
    assert isinstance(got, np.ndarray) and got.shape == (12,)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert got[1] == 7 * m  # nobody arrives: ||T||^2 = mN
    normalized = optimal_error(sch, masks, method=method, normalized=True, progress=False)
    np.testing.assert_allclose(normalized, expected / (7 * m), atol=1e-10)
    one = optimal_error(sch, masks[2], method=method, progress=False)
    assert isinstance(one, float) and one == pytest.approx(expected[2], abs=1e-9)
    one_normalized = optimal_error(sch, masks[2], method=method, normalized=True, progress=False)
    assert isinstance(one_normalized, float) and one_normalized == pytest.approx(expected[2] / (7 * m), abs=1e-10)


def test_optimal_error_structured_route_against_lstsq():
    sch = encode(np.asarray(FANO), 1, "naive")
    B = np.asarray(sch.B, dtype=float)
    m = 1
    masks = np.array([[1, 1, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0, 0], [1] * 7, [1, 0, 0, 0, 0, 0, 0]], bool)
    got = optimal_error(sch, masks)
    np.testing.assert_allclose(got, [lstsq_error(B, mk, m) for mk in masks], atol=1e-9)
    assert optimal_error(sch, masks[3], normalized=True) == pytest.approx(lstsq_error(B, masks[3], m) / 7)


def test_optimal_error_bad_input_names_it():
    sch = encode(np.asarray(FANO), 1, "naive")
    for kwargs, name in [
        ({"method": "cholesky"}, "method"),
        ({"method": 3}, "method"),
        ({"normalized": "yes"}, "normalized"),
        ({"progress": 2}, "progress"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            optimal_error(sch, np.ones(7, bool), **kwargs)
        assert info.value.argument == name, kwargs
    with pytest.raises(InvalidArgumentError) as info:
        optimal_error(sch, np.ones(6, bool))
    assert info.value.argument == "nonstragglers"


def test_condition_number_from_singular_values():
    for m, method, seed in [(1, "naive", 0), (2, "rd", 1), (3, "rd", 2)]:
        sch = encode(np.asarray(FANO), m, method, seed=seed) if method == "rd" else encode(np.asarray(FANO), m, method)
        s = np.linalg.svd(np.asarray(sch.B, dtype=float), compute_uv=False)
        s = s[s > s[0] * 1e-12]
        assert condition_number(sch) == pytest.approx(s[0] / s[-1], rel=1e-9)
    assert condition_number(encode(np.eye(3, dtype=int), 1, "naive")) == 1.0
    # [[1, 1], [0, 1]]: singular values sqrt((3 +- sqrt 5) / 2), ratio (3 + sqrt 5) / 2
    two = encode(np.array([[1, 1], [0, 1]]), 1, "naive")
    assert condition_number(two) == pytest.approx((3 + math.sqrt(5)) / 2, rel=1e-12)


def test_small_helpers_against_the_standard_library():
    for n in range(0, 40, 3):
        for s in range(0, n + 1, 2):
            assert _log_comb(n, s) == pytest.approx(math.log(math.comb(n, s)), abs=1e-9)
    x = np.array([1.0, 4.0, 2.5, 7.0])
    assert _se(x) == pytest.approx(statistics.stdev(x.tolist()) / 2)
    assert _se(np.array([3.0])) == math.inf
    assert is_exact_method("exact") and is_exact_method("exact (by components)")
    assert not is_exact_method("exactly") and not is_exact_method("monte-carlo n=10")
    assert _check_method("qr") in ("qr", "svd") and _check_method("gram") == "gram"
    with pytest.raises(InvalidArgumentError) as info:
        _check_method("eigh")
    assert info.value.argument == "method"


@pytest.mark.parametrize("method", ["auto", "gram", "svd", "downdate"])
@pytest.mark.parametrize("chunk", [None, 1, 4])
def test_optimal_error_all_against_lstsq_in_lexicographic_order(method, chunk):
    for sch, m in [(encode(np.asarray(FANO), 2, "rd", seed=5), 2), (encode(np.asarray(FANO), 1, "naive"), 1)]:
        B = np.asarray(sch.B, dtype=float)
        for s in (0, 2, 5, 7):
            sets = list(itertools.combinations(range(7), s))  # S in lexicographic order
            masks = np.ones((len(sets), 7), bool)
            for row, S in enumerate(sets):
                masks[row, list(S)] = False
            expected = np.array([lstsq_error(B, mk, m) for mk in masks])
            got = optimal_error_all(sch, s, method=method, chunk=chunk, progress=False)
            np.testing.assert_allclose(got, expected, atol=1e-9)
            got_n = optimal_error_all(sch, s, method=method, chunk=chunk, normalized=True, progress=False)
            np.testing.assert_allclose(got_n, expected / (7 * m), atol=1e-10)


def test_optimal_error_all_bad_input_names_it():
    sch = encode(np.asarray(FANO), 1, "naive")
    for args, kwargs, name in [
        ((8,), {}, "s"),
        ((-1,), {}, "s"),
        ((2,), {"chunk": 0}, "chunk"),
        ((2,), {"normalized": "no"}, "normalized"),
        ((2,), {"progress": None}, "progress"),
        ((2,), {"method": "lu"}, "method"),
        ((2,), {"method": "downdate", "rtol": 1e-10}, "rtol"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            optimal_error_all(sch, *args, **kwargs)
        assert info.value.argument == name, (args, kwargs)


def test_optimal_error_all_refuses_too_many_patterns_up_front():
    sch = encode(np.eye(60, dtype=int), 1, "naive")  # C(60, 30) ~ 1.2e17 straggler sets
    with pytest.raises(SizeLimitError) as info:
        optimal_error_all(sch, 30)
    assert info.value.argument == "s"


# --- expected_error's routes (gcsim/coding/expected_routes.py) ----------------------------------


def _reference_capital(y: list[float], alpha: float, m: float) -> float:
    """``max_t log K_t(m)``, written from Waudby-Smith & Ramdas (JRSS B 2024), eq. (26), Thm 3.

    Hedged capital with θ = 1/2 and the predictable plug-in bets ``λ_t = sqrt(2 log(2/α) / (n σ²_{t-1}))``,
    ``μ_t = (1/2 + Σ_{i<=t} y_i) / (t + 1)``, ``σ²_t = (1/4 + Σ_{i<=t} (y_i - μ_i)²) / (t + 1)``,
    truncated at ``c / m`` and ``c / (1 - m)`` with ``c = 1/2``; one step at a time in Python floats.
    """
    n = len(y)
    kp = km = 0.0
    total, squares, var_prev, best = 0.5, 0.25, 0.25, -math.inf
    for t, yt in enumerate(y, 1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (n * var_prev))
        lp = min(lam, 0.5 / m) if m > 0 else lam
        lm = min(lam, 0.5 / (1 - m)) if m < 1 else lam
        kp += math.log1p(lp * (yt - m))
        km += math.log1p(-lm * (yt - m))
        hi, lo = max(kp, km), min(kp, km)
        best = max(best, hi + math.log1p(math.exp(lo - hi)) + math.log(0.5))
        total += yt
        squares += (yt - total / (t + 1)) ** 2
        var_prev = squares / (t + 1)
    return best


@pytest.mark.parametrize(
    ("draws", "alpha"),
    [
        (np.random.default_rng(3).random(30), 0.05),  # few draws: the bets hit their truncation
        (np.random.default_rng(4).beta(0.5, 3.0, 300), 0.01),
        (np.full(10, 0.3), 0.05),
        (np.random.default_rng(5).random(5), 0.05),  # the upper end is the range's end
        (np.r_[np.ones(40), np.zeros(40)], 0.05),  # the sample mean is rejected: the interval lies elsewhere
    ],
)
def test_betting_interval_is_the_hull_of_the_means_a_grid_does_not_reject(draws, alpha):
    y = [float(v) for v in draws]
    steps = 400
    accepted = [i / steps for i in range(steps + 1) if _reference_capital(y, alpha, i / steps) < math.log(1 / alpha)]
    assert accepted
    lo, hi = min(accepted), max(accepted)
    # on [2, 5]: the same interval mapped affinely
    got = _betting_ci(2.0 + 3.0 * np.asarray(draws), 2.0, 5.0, alpha=alpha)
    low, high = (got[0] - 2.0) / 3.0, (got[1] - 2.0) / 3.0
    # bisection stops on the rejected side of each edge: within one grid step outside the accepted grid points
    assert lo - 1 / steps - 1e-9 <= low <= lo + 1e-9
    assert hi - 1e-9 <= high <= hi + 1 / steps + 1e-9


def test_betting_interval_when_every_mean_is_rejected_is_the_least_rejected_grid_point():
    y = [1.0] * 20 + [0.0] * 80
    grid = [i / 400 for i in range(401)]
    capital = [_reference_capital(y, 0.05, g) for g in grid]
    assert min(capital) >= math.log(20)  # every mean rejected
    best = grid[int(np.argmin(capital))]
    assert _betting_ci(np.asarray(y), 0.0, 1.0) == pytest.approx((best, best), abs=1e-12)
    # no draws, or an empty range: the sample mean twice
    assert _betting_ci(np.asarray([0.25, 0.75]), 1.0, 1.0) == (0.5, 0.5)
    empty = _betting_ci(np.zeros(0), 0.0, 1.0)
    assert math.isnan(empty[0]) and math.isnan(empty[1])


def test_betting_interval_treats_draws_beyond_the_range_as_its_ends():
    x = np.array([0.2, 1.7, 0.4, 1.2, -0.3, 0.9, 0.6, 0.1, 1.0, 0.8] * 3)
    assert _betting_ci(x, 0.0, 1.0) == _betting_ci(np.clip(x, 0.0, 1.0), 0.0, 1.0)


def _every_error(sch, m):
    """{mask bytes: lstsq error} over all 2^n non-straggler masks (the independent reference)."""
    B = np.asarray(sch.B, dtype=float)
    n = B.shape[1]
    return {bits: lstsq_error(B, np.array(bits, bool), m) for bits in itertools.product([False, True], repeat=n)}


def _bernoulli_mean(errors, p):
    pj = np.broadcast_to(np.asarray(p, dtype=float), (len(next(iter(errors))),))
    return sum(float(np.prod(np.where(np.array(b), 1 - pj, pj))) * e for b, e in errors.items())


@pytest.fixture(scope="module")
def fano_rd2():
    sch = encode(np.asarray(FANO), 2, "rd", seed=5)
    return sch, _every_error(sch, 2)


def test_stratified_values_count_and_normalization(fano_rd2):
    # homogeneous Bernoulli on 7 workers, 2^7 > exact_limit: strata |S| = s, the heavy ones exact
    sch, errors = fano_rd2
    model = straggler_model("bernoulli", 7, p=0.3)
    exact = _bernoulli_mean(errors, 0.3)
    possible = np.array(sorted(errors.values()))
    for ci_method, samples in (("t", 400), ("betting", 400)):
        kw = dict(exact_limit=40, samples=samples, seed=3, ci_method=ci_method, keep_values=True, progress=False)
        raw = expected_error(sch, model, **kw)
        norm = expected_error(sch, model, normalized=True, **kw)
        assert "stratified" in raw.method and raw.normalized is False and norm.normalized is True
        assert raw.model == model.describe() == norm.model
        # every kept value is the error of one pattern; one value per pattern evaluated
        assert raw.values.size == raw.count > samples
        nearest = np.abs(raw.values[:, None] - possible[None, :]).min(axis=1)
        assert nearest.max() < 1e-9
        # normalized: the same draws divided by ||T||^2 = mN = 14
        np.testing.assert_allclose(norm.values, raw.values / 14, rtol=1e-12)
        assert norm.count == raw.count
        assert norm.mean == pytest.approx(raw.mean / 14, rel=1e-12)
        assert norm.stderr == pytest.approx(raw.stderr / 14, rel=1e-12) and raw.stderr > 0
        assert norm.ci == pytest.approx((raw.ci[0] / 14, raw.ci[1] / 14), rel=1e-12)
        assert raw.ci[0] <= exact <= raw.ci[1]
        assert raw.ci[1] - raw.ci[0] < 0.25 * 14  # an interval, not the whole range [0, mN]
        none = expected_error(sch, model, **{**kw, "keep_values": False})
        assert none.values is None and none.mean == raw.mean and none.count == raw.count


def test_stratified_betting_interval_is_narrow_with_nothing_enumerated(fano_rd2):
    sch, errors = fano_rd2
    model = straggler_model("bernoulli", 7, p=0.3)
    res = expected_error(sch, model, exact_limit=0, samples=2000, seed=1, ci_method="betting", progress=False)
    assert "0 strata exact" in res.method and "betting" in res.method
    exact = _bernoulli_mean(errors, 0.3)
    assert res.ci[0] <= exact <= res.ci[1]
    # each stratum's interval is a betting interval of its draws, far inside [0, mN]
    assert res.ci[1] - res.ci[0] < 0.2 * 14


def test_stratified_every_stratum_enumerated_is_exact_with_the_skipped_weight_as_slack(fano_rd2):
    # p = 1e-3: w_6 = 7 p^6 (1-p) and w_7 = p^7 are below 1e-15 and skipped; strata 0..5 are
    # 1 + 7 + 21 + 35 + 35 + 21 = 120 patterns, exactly the budget
    sch, errors = fano_rd2
    p = Fraction(1, 1000)
    model = straggler_model("bernoulli", 7, p=0.001)
    for normalized in (False, True):
        res = expected_error(sch, model, exact_limit=120, keep_values=True, normalized=normalized, progress=False)
        scale = 14 if normalized else 1
        assert res.method == "exact" and res.count == 120 and res.values.size == 120
        assert res.normalized is normalized and res.stderr == 0.0 and res.model == model.describe()
        kept = sum(float(p ** (7 - sum(b)) * (1 - p) ** sum(b)) * e for b, e in errors.items() if 7 - sum(b) <= 5)
        assert res.mean == pytest.approx(kept / scale, rel=1e-9, abs=1e-18)
        slack = float(7 * p**6 * (1 - p) + p**7) * 14  # the skipped weight times the largest error mN
        assert res.ci[0] == res.mean and res.ci[1] == pytest.approx(res.mean + slack / scale, rel=1e-9)


def test_monte_carlo_route_values_normalization_and_the_fixed_decoders_range(fano_rd2):
    # independent workers with unequal p: neither strata nor components, plain Monte Carlo
    sch, errors = fano_rd2
    p = [0.05, 0.1, 0.2, 0.3, 0.4, 0.2, 0.1]
    model = straggler_model("bernoulli", 7, p=p)
    exact = _bernoulli_mean(errors, p)
    possible = np.array(sorted(errors.values()))
    for ci_method in ("t", "betting"):
        kw = dict(exact_limit=0, samples=300, seed=2, ci_method=ci_method, keep_values=True, progress=False)
        raw = expected_error(sch, model, **kw)
        norm = expected_error(sch, model, normalized=True, **kw)
        assert raw.method.startswith("monte-carlo n=300") and raw.count == 300 == raw.values.size
        assert raw.normalized is False and norm.normalized is True and raw.model == model.describe()
        assert np.abs(raw.values[:, None] - possible[None, :]).min(axis=1).max() < 1e-9
        np.testing.assert_allclose(norm.values, raw.values / 14, rtol=1e-12)
        assert norm.mean == pytest.approx(raw.mean / 14, rel=1e-12)
        assert norm.stderr == pytest.approx(raw.stderr / 14, rel=1e-12)
        assert norm.ci == pytest.approx((raw.ci[0] / 14, raw.ci[1] / 14), rel=1e-12)
        assert raw.ci[0] <= exact <= raw.ci[1] and raw.ci[1] - raw.ci[0] < 0.5 * 14


def _reference_decoder_errors(sch, m, p=None, mode=None):
    """err_X over every mask for the scheme's reference decoder X, written out (theory §5.1)."""
    B = np.asarray(sch.B, dtype=float)
    X = np.asarray(sch.decoder, dtype=float)
    n = B.shape[1]
    if p is not None:
        X = X / (1 - np.asarray(p, dtype=float))[:, None]
    T = np.kron(np.eye(m), np.ones((B.shape[0] // m, 1)))
    out = {}
    for bits in itertools.product([False, True], repeat=n):
        R = B @ (np.array(bits)[:, None] * X)
        if mode == "optimal":
            den = float(np.sum(R * R))
            R = R * (float(np.sum(R * T)) / den if den > 0 else 0.0)
        out[bits] = float(np.sum((R - T) ** 2))
    return out


def test_fixed_decoder_routes_against_the_written_out_error():
    # every 2-subset, exact: the best scalar per pattern of RD's reference decoder, not the optimal decoder
    # (4.4244 here against the optimal 4.2286)
    rd = encode(np.asarray(FANO), 2, "rd", seed=5)
    ref = _reference_decoder_errors(rd, 2, mode="optimal")
    fixed2 = straggler_model("fixed", 7, s=2)
    res = expected_error(rd, fixed2, decoder="reference", rescale="optimal", progress=False)
    want = np.mean([e for b, e in ref.items() if sum(b) == 5])
    assert res.method == "exact" and res.mean == pytest.approx(want, rel=1e-12)
    assert res.mean > np.mean([e for b, e in _every_error(rd, 2).items() if sum(b) == 5]) + 0.1
    sch = encode(np.asarray(FANO), 1, "naive")
    # Monte Carlo of the plain reference decoder: a finite interval from the bound ||B||_2 ||X||_F + sqrt(mN)
    plain = _reference_decoder_errors(sch, 1)
    p = [0.05, 0.1, 0.2, 0.3, 0.4, 0.2, 0.1]
    model = straggler_model("bernoulli", 7, p=p)
    for ci_method in ("t", "betting"):
        mc = expected_error(
            sch, model, decoder="reference", exact_limit=0, samples=400, seed=4, ci_method=ci_method, progress=False
        )
        assert np.all(np.isfinite(mc.ci)) and mc.ci[0] <= _bernoulli_mean(plain, p) <= mc.ci[1]
        assert mc.ci[1] - mc.ci[0] < 7  # not the whole range
    # rescale='bernoulli': row j of X divided by 1 - p_j, drawn in streamed chunks
    scaled = _reference_decoder_errors(sch, 1, p=p)
    mc = expected_error(
        sch, model, decoder="reference", rescale="bernoulli", exact_limit=0, samples=400, seed=5, progress=False
    )
    assert mc.ci[0] <= _bernoulli_mean(scaled, p) <= mc.ci[1]


def test_rare_failures_are_drawn_again_with_their_own_seed():
    # naive Fano, small p: the excess over the rank bound is rarely positive (theory §57.4)
    sch = encode(np.asarray(FANO), 1, "naive")
    errors = _every_error(sch, 1)
    p = [0.01, 0.02, 0.03, 0.01, 0.02, 0.03, 0.02]
    model = straggler_model("bernoulli", 7, p=p)
    kw = dict(exact_limit=0, samples=200, seed=1, keep_values=True, progress=False)
    res = expected_error(sch, model, **kw)
    assert res.count == 200 * (1 + 4) == res.values.size and "800 draws drawn again" in res.method
    possible = np.array(sorted(errors.values()))
    assert np.abs(res.values[:, None] - possible[None, :]).min(axis=1).max() < 1e-9
    assert res.ci[0] <= _bernoulli_mean(errors, p) <= res.ci[1]
    again = expected_error(sch, model, **kw)  # same seed, same numbers: the second draw is seeded too
    assert again.mean == res.mean and again.ci == res.ci and np.array_equal(again.values, res.values)
    bet = expected_error(sch, model, **{**kw, "ci_method": "betting"})  # betting holds at any size: no second draw
    assert bet.count == 200 and np.array_equal(bet.values, res.values[:200])


def test_separable_route_by_components_against_every_pattern():
    # two disjoint Fano planes: B's support splits into two components of 7 workers (theory §57.3)
    A = np.zeros((14, 14), dtype=np.int64)
    A[:7, :7] = FANO
    A[7:, 7:] = FANO
    sch = encode(A, 1, "naive")
    one = _every_error(encode(np.asarray(FANO), 1, "naive"), 1)
    p = 0.2
    # err(F) = err_1(F ∩ W_1) + err_2(F ∩ W_2) for the optimal decoder, and the halves are independent
    half = _bernoulli_mean(one, p)
    model = straggler_model("bernoulli", 14, p=p)
    for normalized in (False, True):
        res = expected_error(sch, model, exact_limit=100, normalized=normalized, progress=False)
        scale = 14 if normalized else 1
        assert res.method.startswith("exact (") and res.ci == (res.mean, res.mean)
        assert res.mean == pytest.approx(2 * half / scale, rel=1e-9)
        assert res.count == 0 and res.stderr == 0.0 and res.normalized is normalized
        assert res.model == model.describe() and res.values is None


def test_stratified_pools_light_strata_by_the_stated_rule():
    # identity assignment: err = |S| exactly, so E = n p; many light strata at n = 40 and 20 draws
    # (keep_values: not the exact route by components, which needs no draws)
    n, p, samples = 40, 0.3, 20
    sch = encode(np.eye(n, dtype=np.int64), 1, "naive")
    model = straggler_model("bernoulli", n, p=p)
    kw = dict(exact_limit=0, samples=samples, ci_method="betting", keep_values=True, progress=False)
    res = expected_error(sch, model, **kw)
    assert np.array_equal(res.values, np.round(res.values)) and res.values.max() <= n
    assert res.ci[0] - 1e-9 <= n * p <= res.ci[1] + 1e-9  # the rank bound is exact here: round-off only
    # Lemma 7a's rule written out: strata of weight >= 1e-15, allocation samples w_s / W; pool when
    # Σ max(2, round(alloc)) > 2 samples; alone when alloc >= 2, else pooled until the pool's reaches 2
    w = [math.comb(n, s) * p**s * (1 - p) ** (n - s) for s in range(n + 1)]
    strata = [s for s in range(n + 1) if w[s] >= 1e-15]
    total = sum(w[s] for s in strata)
    alloc = [samples * w[s] / total for s in strata]
    assert sum(max(2, round(a)) for a in alloc) > 2 * samples
    # runs of light strata between heavy ones, each cut where its running allocation first reaches 2
    pools = []
    for heavy, run in itertools.groupby(zip(strata, alloc, strict=True), key=lambda sa: sa[1] >= 2):
        run = list(run)
        if heavy:
            pools += [[s] for s, _ in run]
            continue
        start = 0
        while start < len(run):
            sums = list(itertools.accumulate(a for _, a in run[start:]))
            stop = start + next((i + 1 for i, c in enumerate(sums) if c >= 2), len(sums))
            pools.append([s for s, _ in run[start:stop]])
            start = stop
    merged = [pool for pool in pools if len(pool) > 1]
    assert f", {sum(map(len, merged))} light strata in {len(merged)} pools" in res.method


def test_pool_strata_an_allocation_of_exactly_two_stays_alone():
    # samples w_s / W = 8 * 0.25 = 2 exactly for s = 1; 0.5 for the others (binary fractions: no rounding)
    w = np.array([0.0625, 0.25] + [0.0625] * 11)
    pools = _pool_strata(list(range(13)), w, 8, 1.0)
    assert pools == [[0], [1], [2, 3, 4, 5], [6, 7, 8, 9], [10, 11, 12]]


def test_expected_error_and_worst_case_bad_input_names_it():
    sch = encode(np.asarray(FANO), 1, "naive")
    model = straggler_model("fixed", 7, s=1)
    for kw, name in [({"keep_values": "yes"}, "keep_values"), ({"normalized": 1}, "normalized")]:
        with pytest.raises(InvalidArgumentError) as info:
            expected_error(sch, model, **kw)
        assert info.value.argument == name
    for s in (-1, 8):
        with pytest.raises(InvalidArgumentError) as info:
            worst_case_error(sch, s)
        assert info.value.argument == "s"
    with pytest.raises(InvalidArgumentError) as info:
        fixed_decoder_error(sch, np.ones(7, bool), np.full((7, 1), np.nan))
    assert info.value.argument == "decoder"
    # |B| |X| beyond the float range: the squared error overflows, named as the decoder's fault
    with pytest.raises(InvalidArgumentError) as info:
        fixed_decoder_error(sch, np.ones(7, bool), np.full((7, 1), 1e200))
    assert info.value.argument == "decoder"


@pytest.mark.parametrize("method", ["svd", "gram", "qr", "downdate"])
def test_worst_case_search_against_every_pattern(method):
    sch = encode(np.asarray(FANO), 2, "rd", seed=5)
    errors = _every_error(sch, 2)
    for s in (1, 2, 3):
        worst = max(e for b, e in errors.items() if sum(b) == 7 - s)
        res = worst_case_error(sch, s, exact_limit=0, method=method, progress=False)
        assert res.method != "exact" and res.stragglers.size == s
        mask = np.ones(7, bool)
        mask[res.stragglers] = False
        assert res.value == pytest.approx(errors[tuple(mask.tolist())], abs=1e-9) and res.value <= worst + 1e-9
        exact = worst_case_error(sch, s, method=method, progress=False)
        assert exact.method == "exact" and exact.value == pytest.approx(worst, abs=1e-9)


def test_expected_error_over_seeds_passes_the_evaluation_keywords():
    model = straggler_model("fixed", 7, s=1)
    res = expected_error_over_seeds(FANO, 2, "rd", model, [0, 1], eval_method="svd", eval_seed=3, progress=False)
    for sd, per in zip([0, 1], res.per_seed, strict=True):
        B = np.asarray(encode(np.asarray(FANO), 2, "rd", seed=sd).B, dtype=float)
        want = np.mean([lstsq_error(B, ~np.eye(7, dtype=bool)[j], 2) for j in range(7)])
        assert per.method == "exact" and per.mean == pytest.approx(want, abs=1e-9)
    assert res.values.tolist() == [r.mean for r in res.per_seed]
    # the interval's unit is the seed (theory §57.10): its description counts seeds, not draws
    assert res.ci_method.startswith("t over 2 seeds") and "draw" not in res.ci_method


def test_expected_error_over_seeds_one_exact_seed_gives_the_range_with_a_warning():
    # one encoder draw says nothing about the spread over draws: an optimal error lies in [0, mN]
    model = straggler_model("fixed", 7, s=1)
    with pytest.warns(UserWarning, match="one seed gives no interval"):
        one = expected_error_over_seeds(FANO, 2, "rd", model, [4], progress=False)
    assert one.ci == (0.0, 14.0) and one.ci_method.endswith(
        " (pass at least 2 seeds, 20 or more for a reliable interval over seeds)"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two seeds: an interval, no warning
        two = expected_error_over_seeds(FANO, 2, "rd", model, [4, 5], progress=False)
    assert "pass at least" not in two.ci_method and two.ci != (0.0, 14.0)


def test_pattern_seed_depends_on_both_seeds_and_names_a_bad_one():
    seeds = {_pattern_seed(e, k) for e in range(3) for k in range(3)}
    assert len(seeds) == 9 and all(0 <= x < 2**63 for x in seeds)
    assert _pattern_seed(0, 0) == _pattern_seed(0, 0)
    for args, name in [((-1, 0), "eval_seed"), ((0, -1), "encoder_seed"), ((0.5, 0), "eval_seed")]:
        with pytest.raises(InvalidArgumentError) as info:
            _pattern_seed(*args)
        assert info.value.argument == name


def test_stratified_rare_strata_add_the_failure_tolerance_of_mn_to_the_upper_end():
    # identity assignment, the reference decoder (all ones): err = |S| = the rank bound, so every
    # stratum's excess is 0, every stratum is rare and drawn again (4x), and Lemma 57.4's upper end
    # written out: Σ w_s s + Σ w_s (tol + d_max π_s), tol = 1e-10 mN, π_s = 1 - a_s^(1/n_s) (Clopper-Pearson
    # with no failure), a_s = 0.05 w_s / Σ w, d_max = (‖B‖_2 ‖X‖_F + sqrt(mN))^2 = (2 sqrt 7)^2 = 28
    n, p, samples = 7, 0.3, 2000
    sch = encode(np.eye(n, dtype=np.int64), 1, "naive")
    model = straggler_model("bernoulli", n, p=p)
    res = expected_error(sch, model, decoder="reference", exact_limit=0, samples=samples, seed=1, progress=False)
    w = [math.comb(n, s) * p**s * (1 - p) ** (n - s) for s in range(n + 1)]
    total = sum(w)
    first = [max(2, round(samples * ws / total)) for ws in w]
    assert res.count == 5 * sum(first) and f"{4 * sum(first)} draws of rare strata drawn again" in res.method
    tol = 1e-10 * n  # FAILURE_TOL times mN = 7
    limits = [1 - (0.05 * ws / total) ** (1 / (4 * f)) for ws, f in zip(w, first, strict=True)]
    lower = sum(ws * s for s, ws in enumerate(w))
    assert res.mean == pytest.approx(n * p, abs=1e-12) and res.ci[0] == pytest.approx(lower, abs=1e-12)
    # tol / mN instead of tol * mN would move the upper end by Σ w_s (7 - 1/7) 1e-10 ≈ 6.9e-10
    hi = lower + sum(ws * (tol + 28 * q) for ws, q in zip(w, limits, strict=True))
    assert res.ci[1] == pytest.approx(hi, abs=1e-12)


def test_unreliable_pattern_count_sums_the_first_draws_and_the_redraw():
    # every worker holds all 7 parts: B_F has identical columns, singular once two workers arrive, so the
    # Gram route flags every such pattern; at p_j <= 0.03 a draw with at most one arrival has probability
    # below 7 * 0.03^6 < 1e-8 (none here: no value is mN). The rank bound is exact (err = 0), so the
    # 200 first draws are rare and 800 are drawn again: the warning counts all 1000 of 1000.
    sch = encode(np.ones((7, 7), dtype=np.int64), 1, "naive")
    model = straggler_model("bernoulli", 7, p=[0.01, 0.02, 0.03, 0.01, 0.02, 0.03, 0.02])
    with pytest.warns(RuntimeWarning, match=r"^1000 of 1000 patterns: Γ_FF") as caught:
        res = expected_error(
            sch, model, method="gram", exact_limit=0, samples=200, seed=1, keep_values=True, progress=False
        )
    assert len([w for w in caught if "patterns:" in str(w.message)]) == 1
    assert res.count == 1000 and "800 draws drawn again" in res.method
    # at least one arrival in every draw: T = B_F x exactly, err = 0 up to round-off; the library reads
    # excesses below FAILURE_TOL * mN as round-off (the Gram route's singular fallback leaves ~1e-15 on
    # some BLAS kernels and exactly 0 on others)
    assert np.all(np.abs(res.values) <= FAILURE_TOL * 7)


def test_worst_case_exact_route_lists_only_the_worst_set():
    # identity assignment: err(S) = |S| for every S (each straggler takes its own part along), so every
    # pair is worst with error 2 and the first in lexicographic order, {0, 1}, is reported; C(330, 2) =
    # 54,285 sets of 330 workers pass MAX_DENSE_ENTRIES as masks, so only the one found may be listed
    n = 330
    sch = encode(np.eye(n, dtype=np.int64), 1, "naive")
    mask = np.ones(n, bool)
    mask[[0, 1]] = False
    assert lstsq_error(np.eye(n), mask, 1) == pytest.approx(2.0, abs=1e-9)
    res = worst_case_error(sch, 2, exact_limit=10**5, progress=False)
    assert res.method == "exact" and res.stragglers.tolist() == [0, 1] and res.value == pytest.approx(2.0, abs=1e-9)


def test_betting_interval_rejects_a_mean_whose_capital_reaches_one_over_alpha_exactly():
    # Ville's inequality bounds P(max_t K_t(m) >= 1/α) by α: a capital equal to 1/α rejects m. The last
    # draw is chosen (a float bisection) so that the written-out capital at m = 0 is log(1/α) to the bit;
    # m = 0 is then rejected and the lower end lies above 0
    y = [0.9, 0.9, float.fromhex("0x1.f9848a4864c96p-3")]
    assert _reference_capital(y, 0.05, 0.0) == math.log(1 / 0.05)
    assert _reference_capital(y, 0.05, 1e-9) < math.log(1 / 0.05)  # a mean just above 0 is not rejected
    lo, hi = _betting_ci(np.asarray(y), 0.0, 1.0)
    assert 0.0 < lo <= 1e-9 and hi > lo
