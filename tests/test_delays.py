"""Tests of the delay models, arrival rules and expected decode times (gcsim.coding.delays).

Every check is against an independent computation: distributions against CDFs written here
(Kolmogorov-Smirnov), rules against brute-force Python loops, closed forms against exact rational
arithmetic or 30-digit mpmath quadrature of a *different* derivation, and the quadrature route
against large seeded Monte Carlo samples drawn here (not with the model's sampler).

Statistical tolerances: each Monte Carlo comparison allows ``Z`` standard errors with
``Z = Φ^{-1}(1 - 1e-7 / 2) ≈ 5.3``: a correct implementation fails one comparison with probability
1e-7 (Bonferroni over the ~100 comparisons of this file: < 1e-5 for the whole file).  The seeds are
fixed, so the outcome is deterministic.  KS tests reject at p < 1e-7 likewise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from conftest import FANO
from exact_lstsq import reference_residual
from gcsim.coding.delays import (
    QUAD_EPSREL,
    ArrivalRule,
    BimodalDelays,
    DelayModel,
    DelayStragglerModel,
    ParetoDelays,
    ShiftedExponentialDelays,
    TraceDelays,
    arrival_rule,
    delay_model,
    expected_decode_time,
)
from gcsim.coding.evaluate import expected_error
from gcsim.coding.schemes import encode
from gcsim.coding.straggler_base import StragglerModel
from gcsim.errors import InvalidArgumentError
from tolerances import SAFETY, cond, gamma, lstsq_tol

ALPHA = 1e-7
Z = float(stats.norm.ppf(1 - ALPHA / 2))


# ----------------------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------------------


def brute_rule(x: list[float], kind: str, value) -> tuple[list[bool], float]:
    """The three rules written out with Python loops (the definitions of the module docstring)."""
    n = len(x)
    if kind == "first":
        k = n - value
        order = sorted(range(n), key=lambda j: (x[j], j))  # ties by worker index
        used = set(order[:k])
        mask = [j in used and math.isfinite(x[j]) for j in range(n)]
        return mask, (0.0 if k == 0 else x[order[k - 1]])
    if kind == "deadline":
        return [xj <= value for xj in x], min(value, max(x))
    fastest = min(x)
    limit = (1.0 + value) * fastest
    return [xj <= limit and math.isfinite(xj) for xj in x], min(limit, max(x))


def mc_times(draws: np.ndarray, kind: str, value) -> np.ndarray:
    """Decode times of rows of delays (vectorized forms of the definitions, via numpy sort)."""
    srt = np.sort(draws, axis=1)
    n = draws.shape[1]
    if kind == "first":
        k = n - value
        return np.zeros(draws.shape[0]) if k == 0 else srt[:, k - 1]
    if kind == "deadline":
        return np.minimum(value, srt[:, -1])
    return np.minimum((1 + value) * srt[:, 0], srt[:, -1])


def assert_mc_agrees(value: float, sample: np.ndarray, extra: float = 0.0):
    se = sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(sample.mean() - value) <= Z * se + extra, (value, sample.mean(), se)


# ----------------------------------------------------------------------------------------------
# delay models: sampling and CDFs
# ----------------------------------------------------------------------------------------------


def test_sampling_is_seeded_and_shaped():
    for dm in (
        delay_model("shifted-exponential", 5, shift=1.0, rate=2.0),
        delay_model("pareto", 5, scale=1.0, shape=3.0),
        delay_model("bimodal", 5, p_slow=0.3, fast_rate=2.0, slow_shift=2.0, slow_rate=0.5),
    ):
        a, b, c = dm.sample_delays(7, seed=3), dm.sample_delays(7, seed=3), dm.sample_delays(7, seed=4)
        assert a.shape == (7, 5) and a.dtype == np.float64
        assert np.array_equal(a, b) and not np.array_equal(a, c)
        assert np.all(np.isfinite(a)) and np.all(a >= 0)
        assert dm.sample_delays(0, seed=0).shape == (0, 5)
        assert isinstance(dm, DelayModel)


def test_shifted_exponential_distribution_ks():
    shift = np.array([0.0, 0.5, 2.0])
    rate = np.array([1.0, 3.0, 0.5])
    dm = ShiftedExponentialDelays(3, shift=shift, rate=rate)
    X = dm.sample_delays(20000, seed=11)
    for j in range(3):
        cdf = lambda t, c=shift[j], lam=rate[j]: np.where(t > c, 1 - np.exp(-lam * (t - c)), 0.0)  # noqa: E731
        assert stats.kstest(X[:, j], cdf).pvalue > ALPHA
    # workers are independent: correlation within sampling error (|r| sqrt(K) ~ N(0, 1))
    r = np.corrcoef(X.T)[0, 1]
    assert abs(r) * math.sqrt(X.shape[0]) < Z


def test_pareto_and_bimodal_distributions_ks():
    X = ParetoDelays(2, scale=[1.0, 2.0], shape=[1.5, 4.0]).sample_delays(20000, seed=5)
    for j, (sig, a) in enumerate([(1.0, 1.5), (2.0, 4.0)]):
        assert (
            stats.kstest(
                X[:, j], lambda t, sig=sig, a=a: np.where(t > sig, 1 - (sig / np.maximum(t, sig)) ** a, 0.0)
            ).pvalue
            > ALPHA
        )
    p, fs, fr, ss, sr = 0.3, 1.0, 5.0, 4.0, 0.5
    Y = BimodalDelays(1, p_slow=p, fast_shift=fs, fast_rate=fr, slow_shift=ss, slow_rate=sr).sample_delays(20000, 6)

    def mix(t):
        ef = np.where(t > fs, 1 - np.exp(-fr * (t - fs)), 0.0)
        es = np.where(t > ss, 1 - np.exp(-sr * (t - ss)), 0.0)
        return (1 - p) * ef + p * es

    assert stats.kstest(Y[:, 0], mix).pvalue > ALPHA


def test_cdf_matches_formulas():
    t = np.array([0.0, 0.3, 1.0, 2.5, 40.0])
    dm = ShiftedExponentialDelays(2, shift=[0.0, 1.0], rate=[2.0, 0.5])
    ref = np.column_stack([1 - np.exp(-2.0 * t), np.where(t > 1, 1 - np.exp(-0.5 * (t - 1)), 0.0)])
    # values in [0, 1]: a few roundings in each expression (expm1 route vs 1 - exp route)
    np.testing.assert_allclose(dm.cdf(t), ref, rtol=0, atol=SAFETY * gamma(4))
    pd = ParetoDelays(1, scale=2.0, shape=3.0)
    np.testing.assert_allclose(
        pd.cdf(t)[:, 0], np.where(t > 2, 1 - (2 / np.maximum(t, 2)) ** 3, 0.0), rtol=0, atol=SAFETY * gamma(4)
    )


def test_trace_replay_is_cyclic():
    M = np.array([[1.0, 5.0, 0.0], [2.0, 1.0, np.inf]])
    tr = delay_model("trace", delays=M)
    assert tr.n == 2 and tr.iterations == 3
    assert tr.sample_delays(4, seed=2).tolist() == [[0.0, np.inf], [1.0, 2.0], [5.0, 1.0], [0.0, np.inf]]
    assert np.array_equal(tr.rows(), M.T)
    # empirical CDF: fraction of iterations with delay <= t, counted here
    for t in (0.0, 1.0, 3.0, 10.0):
        assert tr.cdf(t).tolist() == [sum(x <= t for x in row) / 3 for row in M.tolist()]
    assert tr.cdf([1.0, 5.0]).shape == (2, 2)


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: delay_model("gamma", 3, rate=1.0), "kind"),
        (lambda: delay_model("shifted-exponential", 3, rate=0.0), "rate"),
        (lambda: delay_model("shifted-exponential", 3, rate=[1.0, 2.0]), "rate"),
        (lambda: delay_model("shifted-exponential", 3, rate=1.0, shift=-1.0), "shift"),
        (lambda: delay_model("shifted-exponential", 3, rate=float("nan")), "rate"),
        (lambda: delay_model("shifted-exponential", 3, rate=1.0, speed=2), "params"),
        (lambda: delay_model("shifted-exponential", rate=1.0), "n"),
        (lambda: delay_model("pareto", 3, scale=1.0, shape=-2.0), "shape"),
        (lambda: delay_model("pareto", 3, scale=[1.0, 0.0, 1.0], shape=2.0), "scale"),
        (lambda: delay_model("bimodal", 3, p_slow=1.5, fast_rate=1.0, slow_rate=0.1), "p_slow"),
        (lambda: delay_model("bimodal", 3, p_slow=0.5, fast_rate=1.0), "slow_rate"),
        (lambda: delay_model("trace", delays=[1.0, 2.0]), "delays"),
        (lambda: delay_model("trace", delays=[[1.0, float("nan")]]), "delays"),
        (lambda: delay_model("trace", delays=[[1.0, -2.0]]), "delays"),
        (lambda: delay_model("trace", 3, delays=[[1.0, 2.0]]), "delays"),
        (lambda: delay_model("shifted-exponential", 3, rate=1.0).sample_delays(-1), "count"),
        (lambda: delay_model("shifted-exponential", 3, rate=1.0).sample_delays(10**8), "count"),
        (lambda: delay_model("shifted-exponential", 3, rate=1.0).sample_delays(2, seed=-1), "seed"),
    ],
)
def test_bad_model_arguments_are_named(call, arg):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == arg


# ----------------------------------------------------------------------------------------------
# rules
# ----------------------------------------------------------------------------------------------

_delays = st.lists(st.one_of(st.integers(0, 6).map(float), st.just(math.inf)), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(x=_delays, data=st.data())
def test_rules_match_brute_force(x, data):
    n = len(x)
    rules = [
        ("first", data.draw(st.integers(0, n))),
        ("deadline", float(data.draw(st.integers(0, 7)))),
        ("relative", data.draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))),
    ]
    for kind, value in rules:
        mask, time = arrival_rule(
            kind, **{"first": {"s": value}, "deadline": {"deadline": value}, "relative": {"mu": value}}[kind]
        ).apply(x)
        ref_mask, ref_time = brute_rule(x, kind, value)
        assert mask.tolist() == ref_mask, (kind, value, x)
        assert time == ref_time or (math.isnan(ref_time) and math.isnan(time)), (kind, value, x)


def test_rules_batch_equals_rows_and_ties_by_index():
    rng = np.random.default_rng(0)
    D = rng.integers(0, 4, size=(50, 6)).astype(float)  # many ties
    for rule in (arrival_rule("first", s=2), arrival_rule("deadline", deadline=1.5), arrival_rule("relative", mu=1.0)):
        masks, times = rule.apply(D)
        for i in range(D.shape[0]):
            m_i, t_i = brute_rule(D[i].tolist(), rule.kind, rule.value)
            assert masks[i].tolist() == m_i and times[i] == t_i
    mask, time = arrival_rule("first", s=2).apply([1.0, 1.0, 1.0, 1.0])
    assert mask.tolist() == [True, True, False, False] and time == 1.0


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: arrival_rule("fastest", s=1), "rule"),
        (lambda: arrival_rule("first"), "s"),
        (lambda: arrival_rule("first", s=-1), "s"),
        (lambda: arrival_rule("deadline", deadline=-1.0), "deadline"),
        (lambda: arrival_rule("relative", mu=float("nan")), "mu"),
        (lambda: arrival_rule("relative", mu=1.0, s=2), "params"),
        (lambda: arrival_rule("first", s=5).apply([1.0, 2.0]), "s"),
        (lambda: arrival_rule("first", s=0).apply([1.0, float("nan")]), "delays"),
        (lambda: arrival_rule("first", s=0).apply([1.0, -1.0]), "delays"),
        (lambda: DelayStragglerModel(delay_model("pareto", 3, scale=1, shape=2), arrival_rule("first", s=4)), "s"),
        (lambda: DelayStragglerModel("pareto", arrival_rule("first", s=1)), "delays"),
        (lambda: DelayStragglerModel(delay_model("pareto", 3, scale=1, shape=2), "first"), "rule"),
    ],
)
def test_bad_rule_arguments_are_named(call, arg):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == arg


# ----------------------------------------------------------------------------------------------
# the straggler model
# ----------------------------------------------------------------------------------------------


def test_delay_straggler_model_is_a_straggler_model():
    dm = delay_model("bimodal", 7, p_slow=0.2, fast_shift=1.0, fast_rate=4.0, slow_shift=3.0, slow_rate=1.0)
    for rule in (arrival_rule("first", s=2), arrival_rule("deadline", deadline=2.0), arrival_rule("relative", mu=0.8)):
        model = DelayStragglerModel(dm, rule)
        assert isinstance(model, StragglerModel) and model.n == 7
        masks, times = model.sample_with_times(40, seed=9)
        D = dm.sample_delays(40, seed=9)
        for i in range(40):
            m_i, t_i = brute_rule(D[i].tolist(), rule.kind, rule.value)
            assert masks[i].tolist() == m_i and times[i] == t_i
        assert np.array_equal(model.sample(40, seed=9), masks)
        assert "bimodal" in model.describe() and model.params.rule["rule"] == rule.kind


def test_expected_error_accepts_delay_model():
    """expected_error(scheme, DelayStragglerModel) = mean lstsq error over the same masks (brute force)."""
    sch = encode(FANO, 2, "rd", seed=1)
    dm = delay_model("pareto", 7, scale=1.0, shape=2.0)
    model = DelayStragglerModel(dm, arrival_rule("relative", mu=1.0))
    res = expected_error(sch, model, samples=150, seed=4, progress=False)
    D = dm.sample_delays(150, seed=4)
    T = np.kron(np.eye(2), np.ones((7, 1)))
    errs, tols = [], []
    for row in D:
        mask, _ = brute_rule(row.tolist(), "relative", 1.0)
        BF = sch.B[:, mask]
        if not any(mask):
            errs.append(14.0)
            tols.append(0.0)
            continue
        errs.append(reference_residual(BF, T))  # rank-deficient B_F: exact (tests/exact_lstsq.py)
        # residual of a least-squares problem: c mN f u κ(B_F) ‖T‖² (Higham Thm 20.3)
        tols.append(lstsq_tol(cond(BF, nonzero=True), 14, int(sum(mask)), 14.0))
    assert res.method.startswith("monte-carlo n=150")
    assert abs(res.mean - np.mean(errs)) <= 2 * np.mean(tols) + SAFETY * gamma(150) * np.mean(errs)


# ----------------------------------------------------------------------------------------------
# expected decode time: closed forms
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, k", [(1, 1), (5, 1), (5, 3), (8, 8), (12, 7)])
def test_renyi_formula_against_exact_rationals(n, k):
    """E X_(k) = c + (1/λ) Σ_{i<k} C(n,i) B(n-i, i+1): the order-statistic integral, in exact rationals."""
    c, lam = 0.75, 2.0
    ref = Fraction(3, 4) + Fraction(1, 2) * sum(
        math.comb(n, i) * Fraction(math.factorial(i) * math.factorial(n - i - 1), math.factorial(n)) for i in range(k)
    )
    res = expected_decode_time(delay_model("shifted-exponential", n, shift=c, rate=lam), arrival_rule("first", s=n - k))
    assert res.method == "exact"
    # k positive terms summed (γ_k), one division and one addition
    assert abs(res.mean - float(ref)) <= SAFETY * gamma(k + 2) * float(ref)


@pytest.mark.parametrize("n, T", [(1, 2.0), (6, 1.3), (6, 0.5), (10, 4.0), (200, 3.0)])
def test_deadline_formula_against_mpmath_quadrature(n, T):
    """E min(T, X_(n)) = ∫_0^T 1 - P(X_(n) <= t) dt by 30-digit quadrature."""
    c, lam = 0.8, 1.7
    mpmath.mp.dps = 30
    f = lambda t: 1 - (1 - mpmath.exp(-lam * (t - c))) ** n if t > c else mpmath.mpf(1)  # noqa: E731
    ref = float(mpmath.quad(f, [0, min(c, T), T])) if T > c else T
    res = expected_decode_time(
        delay_model("shifted-exponential", n, shift=c, rate=lam), arrival_rule("deadline", deadline=T)
    )
    assert res.method == "exact"
    # n positive terms V^i / i, each with O(1) roundings of log/exp (γ_{n+4})
    assert abs(res.mean - ref) <= SAFETY * gamma(n + 4) * ref


@pytest.mark.parametrize("n, k, alpha", [(1, 1, 3.0), (5, 1, 2.0), (5, 4, 3.0), (10, 10, 1.5), (3, 1, 0.4)])
def test_pareto_formula_against_beta_functions(n, k, alpha):
    """E X_(k) = σ B(n-k+1-1/α, k) / B(n-k+1, k) (Beta moments of uniform order statistics), 40 digits."""
    sigma = 1.5
    mpmath.mp.dps = 40
    j = n - k + 1
    ref = float(sigma * mpmath.beta(j - 1 / mpmath.mpf(alpha), k) / mpmath.beta(j, k))
    res = expected_decode_time(delay_model("pareto", n, scale=sigma, shape=alpha), arrival_rule("first", s=n - k))
    assert res.method == "exact"
    # exponent L = Σ log1p(-β/i): k terms (γ_{k+3} |L| absolute), then exp and the product with σ
    L = abs(math.log(res.mean / sigma))
    assert abs(res.mean - ref) <= SAFETY * (gamma(k + 3) * max(L, 1.0)) * ref


def test_pareto_infinite_means_are_reported():
    # max of Pareto(α = 0.8): E = inf; min of 3 with α = 0.4: 3α = 1.2 > 1, finite
    inf = expected_decode_time(delay_model("pareto", 3, scale=1.0, shape=0.8), arrival_rule("first", s=0))
    assert inf.mean == math.inf and "infinite" in inf.reason
    fin = expected_decode_time(delay_model("pareto", 3, scale=1.0, shape=0.4), arrival_rule("first", s=2))
    assert abs(fin.mean - 1.2 / 0.2) <= SAFETY * gamma(6) * 6.0
    relative = arrival_rule("relative", mu=1)
    het = expected_decode_time(delay_model("pareto", 3, scale=1.0, shape=[0.3, 0.3, 5.0]), relative)
    assert het.mean < math.inf  # all shapes sum to 5.6 > 1
    het = expected_decode_time(delay_model("pareto", 3, scale=1.0, shape=[0.3, 0.3, 0.3]), relative)
    assert het.mean == math.inf
    # the deadline caps the time: always finite
    assert (
        expected_decode_time(
            delay_model("pareto", 3, scale=1.0, shape=0.2), arrival_rule("deadline", deadline=5.0)
        ).mean
        <= 5.0
    )


# ----------------------------------------------------------------------------------------------
# expected decode time: quadrature against the closed forms and against Monte Carlo
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dm, rule",
    [
        (delay_model("shifted-exponential", 10, shift=1.0, rate=2.0), arrival_rule("first", s=3)),
        (delay_model("shifted-exponential", 10, shift=1.0, rate=2.0), arrival_rule("deadline", deadline=2.2)),
        (delay_model("shifted-exponential", 50, shift=0.0, rate=0.5), arrival_rule("first", s=0)),
        (delay_model("pareto", 10, scale=1.0, shape=1.5), arrival_rule("first", s=0)),
        (delay_model("pareto", 10, scale=2.0, shape=3.0), arrival_rule("first", s=6)),
    ],
)
def test_quadrature_agrees_with_closed_forms(dm, rule):
    ex = expected_decode_time(dm, rule)
    q = expected_decode_time(dm, rule, method="quad")
    assert ex.method == "exact" and q.method == "quad"
    # the accuracy requested from quad (relative QUAD_EPSREL) plus its own error estimate
    assert abs(ex.mean - q.mean) <= SAFETY * (QUAD_EPSREL * ex.mean + q.abserr)


def test_relative_rule_exponential_against_memoryless_formula():
    """i.i.d. shifted exponential, relative rule, by a different derivation: given X_(1) = x the other
    n-1 are x + Exp(λ) (memoryless), so E[D] = E[x + ∫_0^{μx} 1 - (1 - e^{-λu})^{n-1} du] with
    x = c + Exp(nλ); the outer expectation by 30-digit quadrature."""
    n, c, lam, mu = 6, 0.5, 1.3, 0.7
    mpmath.mp.dps = 30

    def inner(x):
        y = mu * x
        V = 1 - mpmath.exp(-lam * y)
        return x + sum(V**i / i for i in range(1, n)) / lam  # ∫_0^y 1 - (1 - e^{-λu})^{n-1} du

    ref = float(mpmath.quad(lambda e: n * lam * mpmath.exp(-n * lam * e) * inner(c + e), [0, 1, mpmath.inf]))
    q = expected_decode_time(delay_model("shifted-exponential", n, shift=c, rate=lam), arrival_rule("relative", mu=mu))
    assert q.method == "quad"
    assert abs(q.mean - ref) <= SAFETY * (QUAD_EPSREL * ref + q.abserr)


def _mc_reference(draw, rule, count=200_000, seed=123):
    rng = np.random.default_rng(seed)
    return mc_times(draw(rng, count), rule.kind, rule.value)


def _pareto(rng, count, scale, shape):
    scale, shape = np.asarray(scale, float), np.asarray(shape, float)
    return scale * (1.0 - rng.random((count, scale.size))) ** (-1.0 / shape)


def _bimodal(rng, count, n, p, fs, fr, ss, sr):
    slow = rng.random((count, n)) < p
    return np.where(slow, ss + rng.exponential(1 / sr, (count, n)), fs + rng.exponential(1 / fr, (count, n)))


_SHIFT = np.linspace(0.0, 1.0, 8)
_RATE = np.linspace(1.0, 3.0, 8)
_RULES = [
    arrival_rule("first", s=3),
    arrival_rule("first", s=0),
    arrival_rule("deadline", deadline=1.8),
    arrival_rule("relative", mu=0.5),
]


@pytest.mark.parametrize("rule", _RULES, ids=lambda r: f"{r.kind}-{r.value}")
@pytest.mark.parametrize("name", ["exp-heterogeneous", "pareto-heterogeneous", "bimodal", "exp-iid", "pareto-iid"])
def test_expected_time_against_monte_carlo(name, rule):
    """Quadrature (heterogeneous workers, bimodal) and closed forms against 200,000 draws made here."""
    if name == "exp-heterogeneous":
        dm = delay_model("shifted-exponential", 8, shift=_SHIFT, rate=_RATE)
        draw = lambda rng, K: _SHIFT + rng.exponential(1.0, (K, 8)) / _RATE  # noqa: E731
    elif name == "pareto-heterogeneous":
        # shapes >= 2.5: every rule's decode time has a finite variance (the CLT applies)
        sc, sh = [1.0] * 4 + [1.5] * 4, [2.5] * 4 + [4.0] * 4
        dm = delay_model("pareto", 8, scale=sc, shape=sh)
        draw = lambda rng, K: _pareto(rng, K, sc, sh)  # noqa: E731
    elif name == "bimodal":
        dm = delay_model("bimodal", 8, p_slow=0.2, fast_shift=0.5, fast_rate=5.0, slow_shift=1.5, slow_rate=0.8)
        draw = lambda rng, K: _bimodal(rng, K, 8, 0.2, 0.5, 5.0, 1.5, 0.8)  # noqa: E731
    elif name == "exp-iid":
        dm = delay_model("shifted-exponential", 8, shift=0.3, rate=2.0)
        draw = lambda rng, K: 0.3 + rng.exponential(0.5, (K, 8))  # noqa: E731
    else:
        dm = delay_model("pareto", 8, scale=1.0, shape=3.0)
        draw = lambda rng, K: _pareto(rng, K, [1.0] * 8, [3.0] * 8)  # noqa: E731
    res = expected_decode_time(dm, rule)
    assert res.method in ("exact", "quad")
    assert_mc_agrees(res.mean, _mc_reference(draw, rule), extra=SAFETY * res.abserr)


def test_monte_carlo_method_interval_and_model_sampler():
    dm = delay_model("shifted-exponential", 6, shift=1.0, rate=2.0)
    rule = arrival_rule("first", s=2)
    exact = expected_decode_time(dm, rule)
    mc = expected_decode_time(dm, rule, method="monte-carlo", samples=50_000, seed=2, keep_values=True)
    assert mc.method.startswith("monte-carlo n=50000") and mc.count == 50_000 and mc.values.shape == (50_000,)
    assert abs(mc.mean - exact.mean) <= Z * mc.stderr
    assert mc.ci[0] < mc.mean < mc.ci[1]
    # the same times as the rule applied to the model's own draws (one generator, chunked)
    again = expected_decode_time(dm, rule, method="monte-carlo", samples=50_000, seed=2)
    assert again.mean == mc.mean
    # through the straggler model: the rule is carried along
    model = DelayStragglerModel(dm, rule)
    assert expected_decode_time(model).mean == exact.mean == model.expected_time().mean


def test_trace_expected_time_is_the_average_over_iterations():
    rng = np.random.default_rng(8)
    M = rng.exponential(size=(5, 40))
    M[2, 7] = np.inf
    tr = delay_model("trace", delays=M)
    for rule, kind, value in (
        (arrival_rule("first", s=2), "first", 2),
        (arrival_rule("deadline", deadline=0.7), "deadline", 0.7),
        (arrival_rule("relative", mu=2.0), "relative", 2.0),
    ):
        res = expected_decode_time(tr, rule)
        ref = [brute_rule(M[:, i].tolist(), kind, value)[1] for i in range(40)]
        assert res.count == 40 and res.method == "trace average over 40 iterations"
        assert (
            abs(res.mean - math.fsum(ref) / 40) <= SAFETY * gamma(40) * max(ref)
            if math.isfinite(res.mean)
            else not all(map(math.isfinite, ref))
        )
    # a 'first' rule waiting for every worker meets the inf: never decodes
    assert expected_decode_time(tr, arrival_rule("first", s=0)).mean == math.inf


@pytest.mark.parametrize(
    "call, arg",
    [
        (
            lambda: expected_decode_time(
                delay_model("shifted-exponential", 3, shift=[0, 1, 2], rate=1.0),
                arrival_rule("first", s=1),
                method="exact",
            ),
            "method",
        ),
        (
            lambda: expected_decode_time(
                delay_model("trace", delays=[[1.0, 2.0]]), arrival_rule("first", s=0), method="quad"
            ),
            "method",
        ),
        (
            lambda: expected_decode_time(
                delay_model("pareto", 3, scale=1, shape=2), arrival_rule("first", s=1), method="simpson"
            ),
            "method",
        ),
        (lambda: expected_decode_time(delay_model("pareto", 3, scale=1, shape=2), None), "rule"),
        (lambda: expected_decode_time("pareto", arrival_rule("first", s=1)), "model"),
        (
            lambda: expected_decode_time(
                DelayStragglerModel(delay_model("pareto", 3, scale=1, shape=2), arrival_rule("first", s=1)),
                arrival_rule("first", s=1),
            ),
            "rule",
        ),
        (
            lambda: expected_decode_time(
                delay_model("pareto", 3, scale=1, shape=2), arrival_rule("first", s=1), method="monte-carlo", samples=1
            ),
            "samples",
        ),
    ],
)
def test_bad_expected_time_arguments_are_named(call, arg):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == arg


def test_rule_value_types():
    assert ArrivalRule("first", 2.0).value == 2 and isinstance(ArrivalRule("first", 2.0).value, int)
    assert arrival_rule("deadline", deadline=3).params == {"rule": "deadline", "deadline": 3.0}
    assert TraceDelays(1, [[0.0]]).params == {"n": 1, "iterations": 1}


def test_straggler_model_factory_builds_delay_models():
    # the factory is the documented way to get a straggler model: kind "delay" wraps a delay
    # model and an arrival rule (same masks as the class itself, same seed)
    from gcsim.coding.delays import DelayStragglerModel, arrival_rule, delay_model
    from gcsim.coding.stragglers import straggler_model

    dm, rule = delay_model("pareto", 6, scale=1.0, shape=2.0), arrival_rule("first", s=2)
    model = straggler_model("delay", delays=dm, rule=rule)
    assert isinstance(model, DelayStragglerModel) and model.n == 6
    assert np.array_equal(model.sample(50, seed=3), DelayStragglerModel(dm, rule).sample(50, seed=3))
    assert straggler_model("delay", 6, delays=dm, rule=rule).n == 6
    with pytest.raises(InvalidArgumentError, match="^n:"):
        straggler_model("delay", 5, delays=dm, rule=rule)
    with pytest.raises(InvalidArgumentError, match="^delays:"):
        straggler_model("delay", 6, rule=rule)
    with pytest.raises(InvalidArgumentError, match="^params:"):
        straggler_model("delay", delays=dm, rule=rule, p=0.1)
