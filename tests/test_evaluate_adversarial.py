"""Adversarial battery for the optimal-error routes (issue #9 §2): every route meets its stated
accuracy (module docstring of gcsim.coding.evaluate, docs/theory/40_error_identities.md §3) or
warns, against exact rational references (sympy's DomainMatrix over QQ on the float entries).

Cases: duplicated and near-duplicate columns, columns scaled 1e-3 ... 1e-9 (and 1e3), B with
κ = 1e3 ... 1e8, exactly rank-deficient B (integer factors), entries near the ends of the float
range, and exact families whose error is 0 (the exact communication-efficient family and Tandon
et al.'s cyclic MDS code, built here from its definition).
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg as sl
from sympy import QQ, Rational
from sympy.polys.matrices import DomainMatrix

from gcsim.coding.evaluate import optimal_error, optimal_error_all
from gcsim.coding.kernels import GRAM_KAPPA_LIMIT
from gcsim.coding.schemes import Scheme, cyclic_repetition_assignment, encode
from tolerances import SAFETY, unit_roundoff

U = unit_roundoff()
EPS = np.finfo(float).eps
ROUTES = ("auto", "svd", "downdate", "gram")


# ----------------------------------------------------------------------------------------------
# exact reference and the stated bounds
# ----------------------------------------------------------------------------------------------


def exact_error(B, m, mask) -> Fraction:
    """err(B, F) over Q on the float entries of B: mN - tr(Rᵀ (CᵀC)⁻¹ R), C = independent columns."""
    B = np.asarray(B, dtype=float)
    cols = np.flatnonzero(np.asarray(mask, bool))
    mN = B.shape[0]
    N = mN // m
    if cols.size == 0:
        return Fraction(mN)
    M = DomainMatrix(
        [[QQ(*Fraction(float(B[i, j])).as_integer_ratio()) for j in cols] for i in range(mN)], (mN, cols.size), QQ
    )
    _, pivots = M.rref()
    C = M.extract(list(range(mN)), list(pivots))
    T = DomainMatrix([[QQ(int(i // N == l)) for l in range(m)] for i in range(mN)], (mN, m), QQ)
    R = C.transpose() * T
    X = (C.transpose() * C).lu_solve(R)
    P = (R.transpose() * X).to_Matrix()
    v = Rational(mN) - sum(P[i, i] for i in range(m))
    return Fraction(int(v.p), int(v.q))


def unit_columns(B):
    """Columns scaled to unit norm (overflow-free: divide by the largest entry first)."""
    B = np.asarray(B, dtype=float)
    amax = np.max(np.abs(B), axis=0) if B.shape[0] else np.zeros(B.shape[1])
    C = B / np.where(amax > 0, amax, 1.0)
    nrm = np.linalg.norm(C, axis=0)
    return C / np.where(nrm > 0, nrm, 1.0)


def kappa_nz(B) -> float:
    """σ_max/σ_min over the singular values above max(rows, cols) eps σ_max (1 for an empty/zero B)."""
    if B.size == 0:
        return 1.0
    sv = np.linalg.svd(B, compute_uv=False)
    if sv[0] == 0:
        return 1.0
    nz = sv[sv > max(B.shape) * EPS * sv[0]]
    return float(nz[0] / nz[-1])


def stated_bounds(B, m, mask) -> dict:
    """The absolute error each route promises for this pattern (SAFETY = constant of the O(.)).

    κ̃ (gcsim scales columns by powers of two to norm in [1/2, 1)) is within a factor 2 of the
    κ of the unit-column matrix: k = 2 κ̂, k_F = 2 κ̂_F.  δ = smallest singular value above τ of
    V_0[S] (V_0 any orthonormal basis of null(B)), the quantity of the rank-deficient downdate.
    """
    B = np.asarray(B, dtype=float)
    mN, n = B.shape
    p = max(mN, n)
    Bn = unit_columns(B)
    k = 2 * kappa_nz(Bn)
    kF = 2 * kappa_nz(Bn[:, np.asarray(mask, bool)])
    S = np.flatnonzero(~np.asarray(mask, bool))
    delta = math.inf
    V0 = sl.null_space(Bn, rcond=p * EPS)
    if V0.shape[1] and S.size:
        om = np.linalg.svd(V0[S], compute_uv=False)
        tau = min(0.5, 10 * p * EPS * k)
        kept = om[om > tau]
        if kept.size and kept.size < S.size:  # a null space is used
            delta = float(kept.min())
    scale = SAFETY * p * U * mN
    orth = scale * kF
    downdate = scale * (k * k + (k / delta if math.isfinite(delta) else 0.0))
    gram = scale * max(k * k, kF * kF)
    if k / 4 > GRAM_KAPPA_LIMIT:  # κ̃ >= k/4 > limit: auto takes the SVD route
        auto = orth
    else:
        auto = max(orth, downdate, scale * k * k)
    return {"svd": orth, "downdate": downdate, "gram": gram, "auto": auto, "k": k, "kF": kF, "delta": delta}


def run_route(sch, mask, route):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        val = optimal_error(sch, mask, method=route, progress=False)
    return val, [w for w in rec if issubclass(w.category, RuntimeWarning)]


# ----------------------------------------------------------------------------------------------
# the cases
# ----------------------------------------------------------------------------------------------


def _gauss(seed, rows, cols):
    return np.random.default_rng(seed).standard_normal((rows, cols))


def case_duplicate():
    B = _gauss(1, 12, 6)
    B[:, 5] = B[:, 2]  # exact duplicate
    B[:, 4] = -4.0 * B[:, 1]  # exact multiple (a power of two: no rounding)
    return B, 2


def case_near_duplicate(eps):
    B = _gauss(2, 12, 6)
    B[:, 5] = B[:, 2] + eps * _gauss(3, 12, 1)[:, 0]
    return B, 2


def case_scaled_columns():
    B = _gauss(4, 12, 6) * np.array([1.0, 1e-3, 1e-6, 1e-9, 1e3, 1.0])
    return B, 2


def case_kappa(kappa):
    rng = np.random.default_rng(int(math.log10(kappa)))
    Q1, _ = np.linalg.qr(rng.standard_normal((12, 6)))
    Q2, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    return Q1 @ np.diag(np.geomspace(1.0, 1.0 / kappa, 6)) @ Q2.T, 2


def case_rank_deficient():
    rng = np.random.default_rng(6)
    B = (rng.integers(-3, 4, size=(12, 4)) @ rng.integers(-3, 4, size=(4, 7))).astype(float)
    B[:, 6] = 0.0  # and a zero column
    return B, 2


def case_float_range(scale):
    B, m = case_kappa(1e2)
    return B * scale, m


def tandon_cyclic_mds(n, s, seed):
    """Tandon, Lei, Dimakis & Karampatziakis (ICML 2017), Algorithm 2: the cyclic MDS code.

    H ∈ R^{s x n} random with H 1 = 0; worker j holds parts j..j+s (mod n) with coefficient 1
    on part j and the other s solving H[:, sup] b = 0, so every column of B (gcsim's (N, n),
    columns = workers) lies in null(H) ∋ 1, and any n - s columns span null(H): err = 0 for
    every |S| <= s.
    """
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((s, n))
    H[:, -1] = -H[:, :-1].sum(axis=1)
    B = np.zeros((n, n))
    for j in range(n):
        sup = (j + np.arange(s + 1)) % n
        b = np.ones(s + 1)
        b[1:] = np.linalg.solve(H[:, sup[1:]], -H[:, sup[0]])
        B[sup, j] = b
    return B


CASES = {
    "duplicate-columns": case_duplicate,
    "near-duplicate-1e-5": lambda: case_near_duplicate(1e-5),
    "near-duplicate-1e-8": lambda: case_near_duplicate(1e-8),
    "columns-scaled-1e-3..1e-9": case_scaled_columns,
    "kappa-1e3": lambda: case_kappa(1e3),
    "kappa-1e5": lambda: case_kappa(1e5),
    "kappa-1e8": lambda: case_kappa(1e8),
    "rank-deficient-integer": case_rank_deficient,
    "entries-1e-300": lambda: case_float_range(1e-300),
    "entries-1e300": lambda: case_float_range(1e300),
    "subnormal-entries": lambda: case_float_range(2.0**-1060),
}


def patterns(n, seed=0, per_size=3):
    rng = np.random.default_rng(seed)
    out = [np.ones(n, bool)]
    for s in range(1, n):
        for S in rng.permutation(list(itertools.combinations(range(n), s)))[:per_size]:
            mk = np.ones(n, bool)
            mk[list(S)] = False
            out.append(mk)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_every_route_meets_its_bound_or_warns(name):
    B, m = CASES[name]()
    sch = Scheme.from_matrix(B, np.ones((B.shape[0] // m, B.shape[1]), dtype=np.int64), m)
    for mask in patterns(B.shape[1]):
        exact = float(exact_error(B, m, mask))
        bounds = stated_bounds(B, m, mask)
        for route in ROUTES:
            val, warned = run_route(sch, mask, route)
            if route in ("auto", "svd"):
                assert not warned, (name, route, [str(w.message) for w in warned])
            if warned:
                continue  # the route said it cannot certify this pattern
            assert abs(val - exact) <= bounds[route], (name, route, np.flatnonzero(~mask), val, exact, bounds)


def test_column_scaling_does_not_change_the_route_or_the_value():
    B, m = case_scaled_columns()
    A = np.ones((6, 6), dtype=np.int64)
    scaled = Scheme.from_matrix(B, A, m)
    plain = Scheme.from_matrix(unit_columns(B), A, m)
    masks = np.array(patterns(6, per_size=2))
    exact = np.array([float(exact_error(B, m, mk)) for mk in masks])
    got = optimal_error(scaled, masks, progress=False)
    # the error is invariant under column scaling; the bound is that of the well-scaled matrix
    tol = max(stated_bounds(unit_columns(B), m, mk)["auto"] for mk in masks)
    assert np.max(np.abs(got - exact)) <= tol
    assert np.max(np.abs(got - optimal_error(plain, masks, progress=False))) <= 2 * tol


def test_entries_near_the_float_range_give_the_same_errors():
    B, m = case_kappa(1e2)
    A = np.ones((6, 6), dtype=np.int64)
    masks = np.array(patterns(6, per_size=2))
    ref = optimal_error(Scheme.from_matrix(B, A, m), masks, progress=False)
    tol = max(stated_bounds(B, m, mk)["auto"] for mk in masks)
    for scale in (1e300, 1e-300, 2.0**-1000):  # exact or correctly rounded scalings
        got = optimal_error(Scheme.from_matrix(B * scale, A, m), masks, progress=False)
        assert np.all(np.isfinite(got)) and np.max(np.abs(got - ref)) <= 2 * tol, scale


# ----------------------------------------------------------------------------------------------
# exact families: the error is 0 for every |S| <= s
# ----------------------------------------------------------------------------------------------


def _exact_family_schemes():
    A = cyclic_repetition_assignment(8, 3)
    yield "exact-gaussian", encode(A, 2, "exact-gaussian", s=2, seed=1), 2
    yield "exact-vandermonde", encode(A, 2, "exact-vandermonde", s=2, seed=1), 2
    for n, s in ((10, 3), (20, 5)):
        B = tandon_cyclic_mds(n, s, seed=0)
        yield f"tandon-cyclic-mds({n},{s})", Scheme.from_matrix(B, (B != 0).astype(np.int64), 1), s


@pytest.mark.parametrize("which", range(4))
def test_exact_families_auto_reaches_unit_roundoff(which):
    name, sch, s = list(_exact_family_schemes())[which]
    B, m = sch.B, sch.m
    mN, n = B.shape
    k = 2 * kappa_nz(unit_columns(B))
    # rank(B_F) = rank(B) for every |S| <= s: auto returns err([n]), accurate to p u κ̃ mN
    tol = SAFETY * max(mN, n) * U * k * mN
    rng = np.random.default_rng(0)
    for size in range(s + 1):
        vals = optimal_error_all(sch, size, progress=False)
        assert np.max(vals) <= tol, (name, size, np.max(vals), tol)
        # and the exact rational error of the float matrix is that small too (a few patterns)
        for idx in rng.choice(vals.size, size=min(2, vals.size), replace=False):
            S = list(itertools.combinations(range(n), size))[idx]
            mk = np.ones(n, bool)
            mk[list(S)] = False
            assert abs(vals[idx] - float(exact_error(B, m, mk))) <= tol
    # one straggler more: rank(B_F) < rank(B), the null-space branch of Lemma 2b (d > 0)
    for S in rng.permutation(list(itertools.combinations(range(n), s + 1)))[:2]:
        mk = np.ones(n, bool)
        mk[list(S)] = False
        val, warned = run_route(sch, mk, "auto")
        assert not warned and abs(val - float(exact_error(B, m, mk))) <= stated_bounds(B, m, mk)["auto"]


def test_tandon_gram_warns_instead_of_returning_a_wrong_value():
    # issue #9: gram gave 9.06 (truth 0) on this code, n = 20, s = 5, seed 0, with no warning
    from gcsim.coding.stragglers import combinations_masks

    B = tandon_cyclic_mds(20, 5, seed=0)
    sch = Scheme.from_matrix(B, (B != 0).astype(np.int64), 1)
    masks = combinations_masks(20, 5)
    with pytest.warns(RuntimeWarning, match=r"of 15504 patterns: Γ_FF has an eigenvalue"):
        gram = optimal_error(sch, masks, method="gram", progress=False)
    tight = SAFETY * 20 * U * 2 * kappa_nz(unit_columns(B)) * 20
    rng = np.random.default_rng(0)
    pick = np.concatenate([np.argsort(-gram)[:20], rng.choice(masks.shape[0], 20, replace=False)])
    for i in pick:  # one pattern at a time: a pattern that is not flagged is within its bound
        val, warned = run_route(sch, masks[i], "gram")
        if not warned:
            assert val <= stated_bounds(B, 1, masks[i])["gram"] + tight
    auto = optimal_error(sch, masks, progress=False)
    assert np.max(auto) <= tight


def test_downdate_warns_when_kappa_exceeds_the_limit():
    # issue #9: exact-vandermonde on bibd(13,4,1), m = 1 (κ ≈ 2e7): downdate was off by 7e-4, silently
    import gcsim

    sch = encode(gcsim.bibd(13, 4, 1).assignment, 1, "exact-vandermonde", s=0, seed=0)
    with pytest.warns(RuntimeWarning, match="GRAM_KAPPA_LIMIT"):
        optimal_error_all(sch, 4, method="downdate", progress=False)
    # auto takes the orthogonal route: within its bound of the exact value on a few patterns
    rng = np.random.default_rng(1)
    for S in rng.permutation(list(itertools.combinations(range(13), 4)))[:3]:
        mk = np.ones(13, bool)
        mk[list(S)] = False
        val, warned = run_route(sch, mk, "auto")
        assert not warned
        assert abs(val - float(exact_error(sch.B, 1, mk))) <= stated_bounds(sch.B, 1, mk)["svd"]
