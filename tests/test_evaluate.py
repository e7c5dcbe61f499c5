"""Tests of the error evaluators (gcsim.coding.evaluate).

References are independent: lstsq per pattern (exact rationals where B_F is rank-deficient,
tests/exact_lstsq.py), exact rational
arithmetic (sympy) on the float matrices, and brute-force enumeration.

Every floating-point tolerance is the accuracy the route states for that pattern
(``stated_bounds``: ``SAFETY x max(mN, n) x u x κ^p x mN``, module docstring of
gcsim.coding.evaluate), plus the same bound for the reference (lstsq is an orthogonal route), or a
rounding bound from tests/tolerances.py -- never a number tuned to one BLAS kernel.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from conftest import FANO
from exact_lstsq import reference_residual
from gcsim.coding.decoders import optimal_decoder
from gcsim.coding.evaluate import (
    condition_number,
    expected_error,
    expected_error_over_seeds,
    fixed_decoder_error,
    optimal_error,
    optimal_error_all,
    worst_case_error,
)
from gcsim.coding.kernels import GRAM_KAPPA_LIMIT
from gcsim.coding.schemes import Scheme, cyclic_repetition_assignment, encode, target_matrix
from gcsim.coding.stragglers import (
    BernoulliModel,
    FixedModel,
    MarkovModel,
    TraceModel,
    combinations_masks,
    straggler_model,
)
from gcsim.errors import InvalidArgumentError
from test_evaluate_adversarial import stated_bounds
from tolerances import SAFETY, dot_tol, unit_roundoff

ROUTES = ["auto", "gram", "svd", "qr"]


def lstsq_errors(B, m, masks):
    T = target_matrix(m, B.shape[0] // m)
    out = []
    for mk in np.atleast_2d(masks):
        BF = B[:, np.asarray(mk, dtype=bool)]
        if BF.shape[1] == 0:
            out.append(float(np.sum(T**2)))
            continue
        # rank decided exactly; a rank-deficient B_F in exact rationals (gelsd's answer there
        # depended on the OpenBLAS kernel: 5.703125 for 5), else lstsq (tests/exact_lstsq.py)
        out.append(reference_residual(BF, T))
    return np.array(out)


def exact_error(B, m, mask):
    """err(B, F) in exact rational arithmetic on the (float) entries of B."""
    cols = [j for j in range(B.shape[1]) if mask[j]]
    mN = B.shape[0]
    N = mN // m
    if not cols:
        return sympy.Rational(mN)
    M = sympy.Matrix([[sympy.Rational(Fraction(float(B[i, j]))) for j in cols] for i in range(mN)])
    basis = M.columnspace()
    if not basis:  # B_F = 0: nothing is decoded
        return sympy.Rational(mN)
    C = sympy.Matrix.hstack(*basis)
    T = sympy.Matrix(mN, m, lambda i, l: 1 if i // N == l else 0)
    R = T - C * (C.T * C).inv() * (C.T * T)
    return sum(x**2 for x in R)


def route_tol(B, m, masks, route, reference="svd"):
    """Per-pattern tolerance: the route's stated bound plus that of the reference route."""
    route = "svd" if route == "qr" else route
    out = []
    for mk in np.atleast_2d(np.asarray(masks, bool)):
        b = stated_bounds(B, m, mk)
        out.append(b[route] + (b[reference] if reference else 0.0))
    return np.array(out)


def check_route(sch, masks, route, ref, reference="svd"):
    """Compare a route with ``ref``; a call that warns is re-run pattern by pattern and the
    flagged patterns are excused (allowed only for the explicit Gram-type routes)."""
    import warnings

    masks = np.atleast_2d(np.asarray(masks, bool))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = optimal_error(sch, masks, method=route, progress=False)
    warned = [w for w in rec if issubclass(w.category, RuntimeWarning)]
    tol = route_tol(sch.B, sch.m, masks, route, reference)
    if not warned:
        assert np.all(np.abs(got - ref) <= tol), (route, np.max(np.abs(got - ref) - tol))
        return got
    assert route in ("gram", "downdate"), [str(w.message) for w in warned]
    for mk, r, t in zip(masks, ref, tol, strict=True):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            v = optimal_error(sch, mk, method=route)
        if not rec:
            assert abs(v - r) <= t, (route, np.flatnonzero(~mk), v, r, t)
    return got


def random_assignment(rng, N, n, r):
    A = np.zeros((N, n), dtype=np.int64)
    for i in range(N):
        A[i, rng.choice(n, size=r, replace=False)] = 1
    return A


# ----------------------------------------------------------------------------------------------
# optimal error: against scipy and exact arithmetic
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES + ["downdate"])
@pytest.mark.parametrize("method,m", [("rd", 2), ("rd", 3), ("ns", 2), ("naive", 2), ("rd", 1)])
def test_optimal_error_matches_lstsq(route, method, m):
    sch = encode(FANO, m, method, eps=0.2, seed=3)
    masks = np.vstack([combinations_masks(7, s) for s in range(8)])
    ref = lstsq_errors(sch.B, m, masks)
    check_route(sch, masks, route, ref)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    N=st.integers(3, 9),
    n=st.integers(3, 10),
    m=st.integers(1, 3),
    method=st.sampled_from(["naive", "rd", "ns-worker"]),
    route=st.sampled_from(ROUTES),
)
def test_optimal_error_random_schemes(seed, N, n, m, method, route):
    rng = np.random.default_rng(seed)
    A = random_assignment(rng, N, n, int(rng.integers(1, n + 1)))
    sch = encode(A, m, method, eps=0.3, seed=seed)
    masks = rng.random((12, n)) < 0.6
    # the reference in exact rationals: scipy's lstsq is not independent of the BLAS kernel (OpenBLAS'
    # SkylakeX kernel returns 5.703125 for the all-ones 10 x 2 B_F of naive, m = 2, where the error is 5)
    check_route(sch, masks, route, np.array([float(exact_error(sch.B, m, mk)) for mk in masks]))


def test_the_reference_is_exact_where_a_blas_kernel_was_not():
    """The case the fuzzer of hypothesis met on SkylakeX: naive, m = 2, every part on all 3 workers."""
    sch = encode(np.ones((5, 3), dtype=np.int64), 2, "naive")
    mask = np.array([True, False, True])
    assert exact_error(sch.B, 2, mask) == 5
    check_route(sch, mask[None, :], "auto", np.array([5.0]))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), N=st.integers(2, 6), n=st.integers(2, 8), m=st.integers(1, 3))
def test_downdate_formula_random_full_rank(seed, N, n, m):
    # Lemma 2: err(F) = err([n]) + tr(Y_S^T K_SS^-1 Y_S), for any full-column-rank B
    if n > m * N:
        n = m * N
    rng = np.random.default_rng(seed)
    sch = Scheme.from_matrix(rng.standard_normal((m * N, n)), np.ones((N, n), dtype=np.int64), m)
    masks = rng.random((10, n)) < 0.5
    check_route(sch, masks, "downdate", lstsq_errors(sch.B, m, masks))


@pytest.mark.parametrize("method", ["rd", "ns"])
def test_optimal_error_exact_rational(method):
    sch = encode(FANO, 2, method, eps=0.0 if method == "rd" else 0.3, seed=1)
    rng = np.random.default_rng(0)
    for mk in [np.ones(7, bool), *(rng.random((5, 7)) < 0.5)]:
        ref = float(exact_error(sch.B, 2, mk))
        for route in ("auto", "gram", "svd", "downdate"):
            check_route(sch, mk, route, [ref], reference=None)


def test_rd0_fano_m2_rational_values_are_rational():
    # RD(0) has ±1 entries: the exact error is a rational number; float matches it
    sch = encode(FANO, 2, "rd", seed=4)
    mk = np.array([1, 1, 0, 1, 1, 0, 1], bool)
    ref = exact_error(sch.B, 2, mk)
    assert isinstance(ref, sympy.Rational)
    assert abs(optimal_error(sch, mk) - float(ref)) <= stated_bounds(sch.B, 2, mk)["auto"]


def _ill_conditioned_scheme(delta=1e-7):
    rng = np.random.default_rng(5)
    A = np.ones((6, 5), dtype=np.int64)
    B = rng.standard_normal((12, 5))
    B[:, 4] = B[:, 3] + delta * rng.standard_normal(12)
    return Scheme.from_matrix(B, A, 2)


def test_ill_conditioned_auto_uses_orthogonal_route():
    sch = _ill_conditioned_scheme()
    assert condition_number(sch) > GRAM_KAPPA_LIMIT
    masks = np.array([[1, 1, 1, 1, 1], [0, 1, 0, 1, 1], [1, 0, 0, 1, 1], [1, 1, 1, 0, 1]], bool)
    exact = np.array([float(exact_error(sch.B, 2, mk)) for mk in masks])
    check_route(sch, masks, "auto", exact, reference=None)
    check_route(sch, masks, "svd", exact, reference=None)
    orth = route_tol(sch.B, 2, masks, "svd", reference=None)
    assert np.all(np.abs(lstsq_errors(sch.B, 2, masks) - exact) <= orth)
    with pytest.warns(RuntimeWarning, match="GRAM_KAPPA_LIMIT"):
        gram = optimal_error(sch, masks, method="gram")
    # the Gram route cannot see the 1e-7 singular direction: far outside the orthogonal bound
    assert np.max(np.abs(gram - exact)) > 100 * np.max(orth)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_rtol_is_honoured():
    # a 1e-5 singular direction: kept by default, dropped with rtol = 1e-3 (then B_F "loses" a column)
    sch = _ill_conditioned_scheme(delta=1e-5)
    full = np.ones(5, bool)
    without = np.array([1, 1, 1, 1, 0], bool)  # drops the near-duplicate column
    ref_keep = lstsq_errors(sch.B, 2, full[None])[0]
    ref_drop = lstsq_errors(sch.B, 2, without[None])[0]
    assert abs(ref_keep - ref_drop) > 1e-3
    assert abs(optimal_error(sch, full) - ref_keep) <= route_tol(sch.B, 2, full, "auto")[0]
    # truncating the 1e-5 direction ≈ dropping the column: the two subspaces are O(delta/σ)
    # apart (σ ≈ 1: unit-variance columns), so the errors differ by at most 2 angle mN
    angle = SAFETY * 1e-5
    for route in ("auto", "svd", "gram"):
        assert abs(optimal_error(sch, full, method=route, rtol=1e-3) - ref_drop) <= 2 * angle * 12


def test_rank_deficient_gram_and_svd():
    # duplicated workers (fractional repetition-like) make Γ_FF singular
    A = np.repeat(np.eye(4, dtype=np.int64), 3, axis=1)  # 4 parts, 12 workers
    sch = encode(A, 2, "rd", seed=2)
    rng = np.random.default_rng(1)
    masks = rng.random((40, 12)) < 0.5
    ref = lstsq_errors(sch.B, 2, masks)
    for route in ("auto", "gram", "svd", "downdate"):
        check_route(sch, masks, route, ref)


@pytest.mark.parametrize("route", ["auto", "gram", "svd", "downdate"])
def test_gram_identity_and_decoder(route):
    sch = encode(FANO, 2, "rd", eps=0.1, seed=9)
    B, T = sch.B, sch.target()
    Gamma, H = B.T @ B, B.T @ T
    rng = np.random.default_rng(2)
    for mk in rng.random((6, 7)) < 0.7:
        F = np.flatnonzero(mk)
        ident = 14 - np.trace(H[F].T @ np.linalg.pinv(Gamma[np.ix_(F, F)]) @ H[F])
        X = optimal_decoder(sch, mk)
        assert np.all(X[~mk] == 0)
        direct = np.sum((B @ X - T) ** 2)
        val = optimal_error(sch, mk, method=route)
        b = stated_bounds(B, 2, mk)
        # pinv of Γ_FF is a Gram route; X* from lstsq an orthogonal one (plus a length-14 sum)
        assert abs(val - ident) <= b[route] + b["gram"]
        assert abs(val - direct) <= b[route] + b["svd"] + dot_tol(14 * 8, 14.0)


def test_normalized_and_range():
    sch = encode(FANO, 3, "rd", seed=1)
    masks = FixedModel(7, 3).sample(30, seed=0)
    raw = optimal_error(sch, masks)
    nrm = optimal_error(sch, masks, normalized=True)
    assert np.all(np.abs(nrm - raw / 21) <= 2 * unit_roundoff() * raw / 21)  # one division
    assert np.all((nrm >= 0) & (nrm <= 1))
    assert optimal_error(sch, np.zeros(7, bool)) == 21.0


def test_scalar_vs_batch():
    sch = encode(FANO, 2, "rd", seed=1)
    mk = np.array([1, 0, 1, 1, 0, 1, 1], bool)
    assert isinstance(optimal_error(sch, mk), float)
    assert optimal_error(sch, mk) == optimal_error(sch, mk[None])[0]
    assert optimal_error(sch, mk.astype(int)) == optimal_error(sch, mk)


def test_optimal_error_all_order_and_values():
    sch = encode(FANO, 2, "rd", seed=6)
    for s in (0, 1, 2, 3, 7):
        vals = optimal_error_all(sch, s, progress=False)
        masks = [np.isin(np.arange(7), S, invert=True) for S in itertools.combinations(range(7), s)]
        assert vals.shape == (math.comb(7, s),)
        check_route(sch, np.array(masks), "auto", lstsq_errors(sch.B, 2, np.array(masks)))
    # chunking does not change the result
    assert np.array_equal(optimal_error_all(sch, 3, chunk=4), optimal_error_all(sch, 3))


def test_symmetric_bibd_m1_depends_only_on_s():
    # B = A for a symmetric BIBD: err depends only on s (Corollary 2 of 40_error_identities.md)
    sch = encode(FANO, 1, "bibd-optimal")
    for s in range(0, 7):
        vals = optimal_error_all(sch, s)
        f = 7 - s  # Corollary 2: v - k^2 f / (k - lambda + lambda f), (v, k, lambda) = (7, 3, 1)
        exact = float(7 - Fraction(9 * f, 2 + f))
        mk = np.arange(7) >= s
        assert np.max(np.abs(vals - exact)) <= stated_bounds(sch.B, 1, mk)["auto"] + unit_roundoff() * 7


@pytest.mark.parametrize("kind", ["exact-gaussian", "exact-vandermonde"])
def test_exact_family_zero_error(kind):
    A = cyclic_repetition_assignment(8, 3)
    sch = encode(A, 2, kind, s=2, seed=1)
    # rank(B_F) = rank(B) for |S| <= s: auto returns err([n]), accurate to p u κ̃ mN (issue #9 §1:
    # the old bound 1e-9 failed on SkylakeX kernels, where the Gram route gave 3.3e-9)
    k = stated_bounds(sch.B, 2, np.ones(8, bool))["k"]
    assert np.max(optimal_error_all(sch, 2)) <= SAFETY * 16 * unit_roundoff() * k * 16
    assert np.max(optimal_error_all(sch, 3)) > 1e-3  # beyond s it is no longer exact: an O(1) error


# ----------------------------------------------------------------------------------------------
# fixed decoders
# ----------------------------------------------------------------------------------------------


def test_fixed_decoder_error_direct():
    sch = encode(FANO, 2, "rd", seed=3)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 2))
    masks = rng.random((10, 7)) < 0.6
    got = fixed_decoder_error(sch, masks, X)
    for mk, g in zip(masks, got, strict=True):
        ref = np.sum((sch.B[:, mk] @ X[mk] - sch.target()) ** 2)
        scale = np.sum((np.abs(sch.B[:, mk]) @ np.abs(X[mk]) + sch.target()) ** 2)
        assert abs(g - ref) <= dot_tol(14 * 8, scale)  # same sums, another order


@pytest.mark.parametrize("method", ["naive", "rd", "ns", "ns-worker"])
@pytest.mark.parametrize("rescale", [None, 2.0, "bernoulli", "arrivals", "optimal"])
def test_optimal_below_fixed(method, rescale):
    sch = encode(FANO, 2, method, eps=0.2, seed=8)
    masks = FixedModel(7, 2).sample(25, seed=1)
    fixed = fixed_decoder_error(sch, masks, rescale=rescale, p=0.2)
    opt = optimal_error(sch, masks)
    assert np.all(opt <= fixed + route_tol(sch.B, 2, masks, "auto", reference=None) + dot_tol(14 * 8, 14 * fixed))


def fixed_tol(sch, X, factor=1.0):
    """Rounding bound of ‖B_F (cX)_F - T‖² computed in two orders (products, sums, a rescale)."""
    terms = (np.abs(sch.B) @ np.abs(X) * factor + 1.0) ** 2
    return 4 * dot_tol(sch.B.shape[0] * (sch.B.shape[1] + 1), float(np.sum(terms)))


def test_rescale_options():
    sch = encode(FANO, 2, "rd", seed=3)
    masks = FixedModel(7, 2).sample(10, seed=1)
    X = sch.decoder
    tol = fixed_tol(sch, X, 7 / 5)
    assert np.all(
        np.abs(fixed_decoder_error(sch, masks, rescale="bernoulli", p=0.2) - fixed_decoder_error(sch, masks, X / 0.8))
        <= tol
    )
    assert np.all(
        np.abs(fixed_decoder_error(sch, masks, rescale="arrivals") - fixed_decoder_error(sch, masks, X * 7 / 5)) <= tol
    )
    best = fixed_decoder_error(sch, masks, rescale="optimal")
    for c in (0.5, 1.0, 1.5):
        assert np.all(best <= fixed_decoder_error(sch, masks, rescale=c) + fixed_tol(sch, X, 1.5))
    pj = np.linspace(0.0, 0.3, 7)
    assert np.all(
        np.abs(
            fixed_decoder_error(sch, masks, rescale="bernoulli", p=pj)
            - fixed_decoder_error(sch, masks, X / (1 - pj)[:, None])
        )
        <= fixed_tol(sch, X, 1 / 0.7)
    )


def test_ns_reference_decoder_exact_at_s0():
    sch = encode(FANO, 3, "ns", eps=0.3, seed=2)
    # B X0 = T exactly in real arithmetic: each residual entry is one rounded length-n dot product
    rows = np.abs(sch.B) @ np.abs(sch.decoder)
    assert fixed_decoder_error(sch, np.ones(7, bool)) <= np.sum(dot_tol(7, 1.0) * (rows + 1.0)) ** 2
    full = np.ones(7, bool)
    assert optimal_error(sch, full) <= stated_bounds(sch.B, 3, full)["auto"]


def test_fixed_decoder_validation():
    sch = encode(FANO, 2, "rd", seed=3)
    with pytest.raises(InvalidArgumentError, match="^decoder"):
        fixed_decoder_error(sch, np.ones(7, bool), np.ones((7, 3)))
    with pytest.raises(InvalidArgumentError, match="^p"):
        fixed_decoder_error(sch, np.ones(7, bool), rescale="bernoulli")
    with pytest.raises(InvalidArgumentError, match="^rescale"):
        fixed_decoder_error(sch, np.ones(7, bool), rescale="magic")
    custom = Scheme.from_matrix(sch.B, FANO, 2)
    with pytest.raises(InvalidArgumentError, match="^decoder.*no reference"):
        fixed_decoder_error(custom, np.ones(7, bool))


# ----------------------------------------------------------------------------------------------
# expectations
# ----------------------------------------------------------------------------------------------


def test_expected_fixed_exact_equals_brute_force():
    sch = encode(FANO, 2, "rd", seed=5)
    res = expected_error(sch, straggler_model("fixed", 7, s=2), progress=False)
    masks = combinations_masks(7, 2)
    brute = np.mean(lstsq_errors(sch.B, 2, masks))
    assert res.method == "exact" and res.count == 21 and res.ci == (res.mean, res.mean)
    assert abs(res.mean - brute) <= np.max(route_tol(sch.B, 2, masks, "auto")) + dot_tol(21, 14.0)


def test_expected_fixed_monte_carlo_ci_covers_exact():
    sch = encode(FANO, 2, "rd", seed=5)
    exact = expected_error(sch, straggler_model("fixed", 7, s=3)).mean
    res = expected_error(sch, straggler_model("fixed", 7, s=3), exact_limit=10, samples=3000, seed=1)
    assert res.method.startswith("monte-carlo n=3000") and res.count == 3000
    assert res.ci[0] <= exact <= res.ci[1] and res.ci[1] - res.ci[0] < 0.5
    again = expected_error(sch, straggler_model("fixed", 7, s=3), exact_limit=10, samples=3000, seed=1)
    assert again.mean == res.mean and again.ci == res.ci


def test_expected_all_is_exact_regardless_of_limit():
    sch = encode(FANO, 1, "rd", seed=5)
    res = expected_error(sch, straggler_model("all", 7, s=2), exact_limit=1, keep_values=True)
    assert res.method == "exact" and res.values.shape == (21,)


@pytest.mark.parametrize("p", [0.2, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]])
def test_expected_bernoulli_exact_equals_weighted_sum(p):
    sch = encode(FANO, 2, "rd", seed=5)
    res = expected_error(sch, straggler_model("bernoulli", 7, p=p))
    pj = np.broadcast_to(np.asarray(p, float), (7,))
    total, tol = 0.0, 0.0
    for bits in itertools.product([0, 1], repeat=7):
        mk = np.array(bits, bool)
        w = np.prod(np.where(mk, 1 - pj, pj))
        total += w * lstsq_errors(sch.B, 2, mk[None])[0]
        tol += w * route_tol(sch.B, 2, mk, "auto")[0]
    assert res.method == "exact" and abs(res.mean - total) <= tol + dot_tol(2**7 * 8, 14.0)


def test_expected_bernoulli_homogeneous_binomial_strata():
    sch = encode(FANO, 2, "rd", seed=5)
    p = 0.3
    res = expected_error(sch, straggler_model("bernoulli", 7, p=p))
    strata = sum(math.comb(7, s) * p**s * (1 - p) ** (7 - s) * np.mean(optimal_error_all(sch, s)) for s in range(8))
    # the same per-pattern values (same route), summed in another order with other weights
    assert abs(res.mean - strata) <= dot_tol(2**7 * 8, 14.0)


def test_expected_bernoulli_monte_carlo():
    sch = encode(FANO, 2, "rd", seed=5)
    model = straggler_model("bernoulli", 7, p=0.25)
    exact = expected_error(sch, model).mean
    mc = expected_error(sch, model, exact_limit=0, samples=4000, seed=3)
    assert mc.method.startswith("monte-carlo") and mc.ci[0] <= exact <= mc.ci[1]


def test_expected_bernoulli_stratified():
    rng = np.random.default_rng(4)
    A = random_assignment(rng, 8, 12, 3)
    sch = encode(A, 2, "rd", seed=1)
    model = straggler_model("bernoulli", 12, p=0.3)
    exact = expected_error(sch, model, exact_limit=4096)
    assert exact.method == "exact"
    # strata s = 0, 1, 2 and 12, 11, ... fit in 100 patterns; the rest is sampled
    strat = expected_error(sch, model, exact_limit=100, samples=3000, seed=2)
    assert strat.method.startswith("monte-carlo n=") and "stratified" in strat.method
    assert strat.ci[0] <= exact.mean <= strat.ci[1]
    plain = expected_error(
        sch, straggler_model("bernoulli", 12, p=[0.3] * 11 + [0.3 + 1e-9]), exact_limit=100, samples=3000, seed=2
    )
    assert plain.method.startswith("monte-carlo n=3000")
    assert strat.stderr < plain.stderr  # stratification removes the between-strata variance
    # a budget of 2^12 - 1 patterns enumerates every stratum but s = 12 (weight 0.3^12)
    nearly = expected_error(sch, model, exact_limit=4095, samples=100)
    assert "12 strata exact" in nearly.method
    assert abs(nearly.mean - exact.mean) <= 0.3**12 * 16 + dot_tol(2**12 * 13, 16.0)
    # fewer draws than MIN_MC_SAMPLES: a clear error for the t interval, fine for betting
    with pytest.raises(InvalidArgumentError, match="^samples.*MIN_MC_SAMPLES"):
        expected_error(sch, model, exact_limit=100, samples=20)
    bet = expected_error(sch, model, exact_limit=100, samples=20, ci_method="betting")
    assert "betting" in bet.method and bet.ci[0] <= exact.mean <= bet.ci[1]


def test_expected_markov_matches_stationary_bernoulli():
    sch = encode(FANO, 2, "rd", seed=5)
    markov = MarkovModel(7, p_enter=0.1, p_leave=0.3)
    exact = expected_error(sch, markov)
    bern = expected_error(sch, BernoulliModel(7, 0.25))
    assert exact.method == "exact" and abs(exact.mean - bern.mean) <= dot_tol(2**7, 14.0)
    mc = expected_error(sch, markov, exact_limit=0, samples=6000, seed=2)
    # theory §57.6: i.i.d. draws of the stationary law, stratified by |S| (the same estimator as Bernoulli)
    assert "stratified" in mc.method and mc.ci[0] <= exact.mean <= mc.ci[1]
    same = expected_error(sch, BernoulliModel(7, 0.25), exact_limit=0, samples=6000, seed=2)
    assert (mc.mean, mc.ci) == (same.mean, same.ci)


def test_expected_trace_is_average_over_iterations():
    sch = encode(FANO, 2, "rd", seed=5)
    rng = np.random.default_rng(0)
    delays = rng.exponential(size=(7, 30))
    model = TraceModel(delays, "first", s=2)
    res = expected_error(sch, model)
    ref = np.mean(lstsq_errors(sch.B, 2, model.masks()))
    assert res.count == 30 and abs(res.mean - ref) <= np.max(route_tol(sch.B, 2, model.masks(), "auto"))
    assert abs(res.mean - ref) <= np.max(route_tol(sch.B, 2, model.masks(), "auto")) + dot_tol(30, 14.0)


def test_expected_reference_decoder_above_optimal():
    sch = encode(FANO, 2, "rd", seed=5)
    model = straggler_model("fixed", 7, s=2)
    opt = expected_error(sch, model).mean
    ref = expected_error(sch, model, decoder="reference").mean
    assert ref >= opt
    given_x = expected_error(sch, model, decoder=sch.decoder).mean
    assert given_x == ref


def test_expected_normalized():
    sch = encode(FANO, 2, "rd", seed=5)
    model = straggler_model("fixed", 7, s=2)
    raw = expected_error(sch, model).mean
    assert abs(expected_error(sch, model, normalized=True).mean - raw / 14) <= dot_tol(21, raw / 14)


def test_expected_validation():
    sch = encode(FANO, 2, "rd", seed=5)
    with pytest.raises(InvalidArgumentError, match="worst_case_error"):
        expected_error(sch, straggler_model("worst", 7, s=1))
    with pytest.raises(InvalidArgumentError, match="^model"):
        expected_error(sch, straggler_model("fixed", 8, s=1))
    with pytest.raises(InvalidArgumentError, match="^model"):
        expected_error(sch, "fixed")
    with pytest.raises(InvalidArgumentError, match="^decoder"):
        expected_error(sch, straggler_model("fixed", 7, s=1), decoder="magic")
    with pytest.raises(InvalidArgumentError, match="^samples"):
        expected_error(sch, straggler_model("fixed", 7, s=1), samples=1)


def test_expected_over_seeds():
    model = straggler_model("fixed", 7, s=2)
    res = expected_error_over_seeds(FANO, 2, "rd", model, [0, 1, 2, 3], eps=0.1)
    means = [expected_error(encode(FANO, 2, "rd", eps=0.1, seed=sd), model).mean for sd in range(4)]
    assert np.array_equal(res.values, means)  # the same computation, deterministic
    assert abs(res.mean - np.mean(means)) <= dot_tol(4, float(np.sum(np.abs(means))))
    assert res.ci[0] <= res.mean <= res.ci[1] and len(res.per_seed) == 4
    with pytest.raises(InvalidArgumentError, match="^seeds"):
        expected_error_over_seeds(FANO, 2, "rd", model, [])


# ----------------------------------------------------------------------------------------------
# worst case
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", [0, 1, 2, 3])
def test_worst_case_exact(s):
    sch = encode(FANO, 2, "rd", seed=5)
    masks = combinations_masks(7, s)
    ref = lstsq_errors(sch.B, 2, masks)
    tol = np.max(route_tol(sch.B, 2, masks, "auto"))
    res = worst_case_error(sch, s)
    assert res.method == "exact" and abs(res.value - ref.max()) <= tol
    assert (~res.mask).sum() == s and abs(optimal_error(sch, res.mask) - res.value) <= tol
    assert res.stragglers.tolist() == np.flatnonzero(~res.mask).tolist()


@pytest.mark.parametrize("s", [2, 4])
def test_worst_case_search_is_lower_estimate(s):
    rng = np.random.default_rng(3)
    A = random_assignment(rng, 10, 12, 3)
    sch = encode(A, 2, "rd", seed=1)
    exact = worst_case_error(sch, s)
    search = worst_case_error(sch, s, exact_limit=0, seed=2, iterations=50)
    assert search.method == "search (lower estimate)"
    tol = route_tol(sch.B, 2, search.mask, "auto", reference="auto")[0]
    assert search.value <= exact.value + tol
    assert abs(optimal_error(sch, search.mask) - search.value) <= tol
    assert search.value >= 0.9 * exact.value  # local search gets close on this small instance
    again = worst_case_error(sch, s, exact_limit=0, seed=2, iterations=50)
    assert again.value == search.value and np.array_equal(again.mask, search.mask)


def test_worst_case_single_pattern_edges():
    sch = encode(FANO, 2, "rd", seed=5)
    full = np.ones(7, bool)
    assert (
        abs(worst_case_error(sch, 0, exact_limit=0).value - optimal_error(sch, full))
        <= route_tol(sch.B, 2, full, "auto")[0]
    )
    assert worst_case_error(sch, 7, exact_limit=0).value == 14.0


def test_cache_follows_B():
    # a Scheme is immutable; the evaluator's per-encoder cache is keyed by the (read-only) B itself
    import dataclasses

    sch = encode(FANO, 2, "rd", seed=5)
    mk = np.array([1, 1, 0, 1, 1, 0, 1], bool)
    before = optimal_error(sch, mk)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sch.B = np.kron(np.ones((2, 1)), FANO)
    other = dataclasses.replace(sch, B=np.kron(np.ones((2, 1)), FANO), method="naive", diagonals=None)
    assert abs(optimal_error(other, mk) - lstsq_errors(other.B, 2, mk[None])[0]) <= route_tol(other.B, 2, mk, "auto")[0]
    assert optimal_error(other, mk) != before and optimal_error(sch, mk) == before


def test_worst_case_validation():
    sch = encode(FANO, 2, "rd", seed=5)
    with pytest.raises(InvalidArgumentError, match="^s:"):
        worst_case_error(sch, 8)


# ----------------------------------------------------------------------------------------------
# validation and determinism
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw,arg",
    [
        (dict(nonstragglers=np.ones(6, bool)), "nonstragglers"),
        (dict(nonstragglers=np.ones((2, 8), bool)), "nonstragglers"),
        (dict(nonstragglers=np.array([0, 2, 1, 1, 1, 1, 1])), "nonstragglers"),
        (dict(method="cholesky"), "method"),
        (dict(rtol=-1.0), "rtol"),
        (dict(rtol=float("nan")), "rtol"),
    ],
)
def test_optimal_error_validation(kw, arg):
    sch = encode(FANO, 2, "rd", seed=5)
    args = dict(nonstragglers=np.ones(7, bool))
    args.update(kw)
    mk = args.pop("nonstragglers")
    with pytest.raises(InvalidArgumentError) as info:
        optimal_error(sch, mk, **args)
    assert info.value.argument == arg


def test_optimal_error_all_validation():
    sch = encode(FANO, 2, "rd", seed=5)
    with pytest.raises(InvalidArgumentError, match="^s:"):
        optimal_error_all(sch, 8)
    with pytest.raises(InvalidArgumentError, match="^scheme"):
        optimal_error(object(), np.ones(7, bool))


def test_determinism_end_to_end():
    vals = []
    for _ in range(2):
        sch = encode(FANO, 2, "rd", eps=0.1, seed=21)
        model = straggler_model("bernoulli", 7, p=0.3)
        vals.append(
            (
                expected_error(sch, model, exact_limit=0, samples=500, seed=4).mean,
                worst_case_error(sch, 3, exact_limit=0, seed=4).value,
            )
        )
    assert vals[0] == vals[1]
