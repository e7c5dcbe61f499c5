"""The compiled per-pattern loops of the optimal-error kernel (gcsim.coding._compiled).

They implement the column-deletion route (Lemmas 2 and 2b of docs/theory/40_error_identities.md)
with a Householder QR with column pivoting of ``V_0[S]`` instead of an SVD, and the full-rank Gram
solves, by Cholesky (§40.3, "Compiled loops").  Checked here: against exact rational arithmetic
(the adversarial helpers), against the batched LAPACK kernel of the same routes (the compiled
loops switched off), against per-pattern ``scipy.linalg.lstsq``, and the certificates: a pattern
whose rank decision is not clear-cut is handed back to the batched kernel.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gcsim
from exact_lstsq import reference_residual
from gcsim.coding import _compiled
from gcsim.coding.evaluate import optimal_error, optimal_error_all
from gcsim.coding.kernels import GRAM_KAPPA_LIMIT, eval_context
from gcsim.coding.schemes import Scheme, encode
from gcsim.errors import InvalidArgumentError
from test_evaluate_adversarial import CASES, exact_error, kappa_nz, stated_bounds, unit_columns
from tolerances import SAFETY, unit_roundoff

pytest.importorskip("numba")

U = unit_roundoff()
LIMIT_SQ = GRAM_KAPPA_LIMIT**2


def _scheme(B, m):
    return Scheme.from_matrix(B, np.ones((B.shape[0] // m, B.shape[1]), dtype=np.int64), m)


def _masks(n, s, count, seed):
    rng = np.random.default_rng(seed)
    masks = np.ones((count, n), dtype=bool)
    for row in masks:
        row[rng.choice(n, s, replace=False)] = False
    return masks


def _straggler_sets(masks):
    return np.array([np.flatnonzero(~mk) for mk in masks], dtype=np.int64)


def lstsq_errors(B, m, masks):
    """Per-pattern least squares with numpy's rank tolerance max(mN, |F|) eps σ_max (scipy's
    default, eps σ_max, keeps the rounding noise of exactly rank-deficient B_F as directions)."""
    T = np.kron(np.eye(m), np.ones((B.shape[0] // m, 1)))
    out = []
    for mk in masks:
        BF = B[:, mk]
        out.append(reference_residual(BF, T))  # rank-deficient B_F: exact (tests/exact_lstsq.py)
    return np.array(out)


def _gram_tol(sch) -> float:
    """Bound of a Gram-type route on a scheme with κ̃ <= GRAM_KAPPA_LIMIT: c p u κ̃² mN (§40.3)."""
    B = np.asarray(sch.B, dtype=float)
    k = 2 * kappa_nz(unit_columns(B))  # κ̃ <= 2 κ(unit columns)
    return SAFETY * max(B.shape) * U * k * k * B.shape[0]


def test_the_loops_are_available_with_galois():
    # numba comes with galois, a core dependency: the fast path is the default on NumPy
    assert _compiled.available()
    with _compiled.disabled():
        assert not _compiled.available()
    assert _compiled.available()


@pytest.mark.parametrize("s", [0, 1, 3, 7])
def test_split_masks_is_the_stable_argsort(s):
    masks = _masks(11, s, 40, seed=s)
    order = np.argsort(masks, axis=1, kind="stable")
    for enabled in (True, False):
        if enabled:
            S, F = _compiled.split_masks(masks, s)
        else:
            with _compiled.disabled():
                S, F = _compiled.split_masks(masks, s)
        assert S.dtype == F.dtype == np.int64
        assert np.array_equal(S, order[:, :s]) and np.array_equal(F, order[:, s:])


def test_split_masks_refuses_a_row_with_the_wrong_count():
    masks = _masks(9, 3, 5, seed=0)
    masks[2, 0] = not masks[2, 0]
    for enabled in (True, False):
        with pytest.raises(InvalidArgumentError, match="row 2" if enabled else "True entries"):
            if enabled:
                _compiled.split_masks(masks, 3)
            else:
                with _compiled.disabled():
                    _compiled.split_masks(masks, 3)


@pytest.mark.parametrize("name", list(CASES))
def test_auto_with_the_loops_meets_its_bound_against_exact_rationals(name):
    # the adversarial battery again, every pattern of |S| <= 3 and a few more, with the loops on
    B, m = CASES[name]()
    sch = _scheme(B, m)
    n = B.shape[1]
    masks = [np.isin(np.arange(n), S, invert=True) for r in range(4) for S in itertools.combinations(range(n), r)]
    got = optimal_error(sch, np.array(masks), progress=False)
    for mk, val in zip(masks, got, strict=True):
        exact = float(exact_error(B, m, mk))
        assert abs(val - exact) <= stated_bounds(B, m, mk)["auto"], (name, np.flatnonzero(~mk), val, exact)


@pytest.mark.parametrize("name", ["duplicate-columns", "rank-deficient-integer"])
def test_rank_deficient_patterns_are_certified_by_the_pivoted_qr(name):
    # B rank deficient: Lemma 2b with d = 0 and d > 0 both taken by the compiled loop, and the
    # values within the bound of Lemma 2b (c p u (κ̃² + κ̃/δ) mN) of the exact rational error
    B, m = CASES[name]()
    sch = _scheme(B, m)
    ctx = eval_context(sch)
    assert not ctx.full_rank
    n = B.shape[1]
    checked = set()
    for s in range(1, n):
        S = np.array(list(itertools.combinations(range(n), s)), dtype=np.int64)
        vals, ok = _compiled.downdate(ctx, S, LIMIT_SQ)
        for row, val, good in zip(S, vals, ok, strict=True):
            if not good:
                continue
            mk = np.isin(np.arange(n), row, invert=True)
            exact = float(exact_error(B, m, mk))
            bound = stated_bounds(B, m, mk)
            assert abs(val - exact) <= bound["downdate"], (name, row, val, exact, bound)
            # d = 0 exactly when rank(B_F) = rank(B)
            checked.add(bool(np.linalg.matrix_rank(B[:, mk]) == ctx.rank))
        assert ok.mean() > 0.5, (name, s, ok.mean())  # most patterns need no SVD
    assert checked == {True, False}  # both branches of Lemma 2b were exercised


def _null_vector_case(a0):
    """B (12 x 7, m = 2) of rank 6: column 5 = a0 b0 + b1 + b2 + b3 + b4, column 6 independent.

    null(B) is spanned by z = (a0, 1, 1, 1, 1, -1, 0): the row of V_0 of worker 0 is a0/‖z‖, that
    of worker 6 is 0.
    """
    rng = np.random.default_rng(11)
    B = rng.standard_normal((12, 7))
    B[:, 5] = a0 * B[:, 0] + B[:, 1:5].sum(axis=1)
    return B


def test_unclear_rank_decisions_go_back_to_the_batched_kernel():
    # τ = 10 p u κ̃ (~1e-13 here): the smallest kept singular value of V_0[S] must be >= 1e3 τ,
    # and κ̃/δ <= GRAM_KAPPA_LIMIT² when a null space is used (the batched kernel's flags)
    B = _null_vector_case(1e-9)
    ctx = eval_context(_scheme(B, 2))
    assert ctx.rank == 6 and 1e3 * ctx.tau < 1e-9 / 3 and ctx.kappa < 1e2

    def flags(*sets):
        return _compiled.downdate(ctx, np.array(sets, dtype=np.int64), LIMIT_SQ)[1].tolist()

    assert flags([0]) == [True]  # δ ~ 4e-10 >= 1e3 τ and d = 0: err([n])
    assert flags([0, 6]) == [False]  # d = 1 and κ̃/δ > 1e8: the null-space basis is too inaccurate
    assert flags([1, 6], [2, 6]) == [True, True]  # δ ~ 0.4
    assert flags([6]) == [True]  # V_0[S] = 0: d = 1, no kept singular value
    # a singular value between τ and 1e3 τ: not certain either way
    B = _null_vector_case(3e-12)
    ctx = eval_context(_scheme(B, 2))
    assert ctx.tau < 3e-12 / 3 < 1e3 * ctx.tau
    assert flags([0]) == [False]
    # whatever the loop leaves, auto's value is within its bound of the exact one and never warns
    for a0 in (1e-9, 3e-12):
        B = _null_vector_case(a0)
        sch = _scheme(B, 2)
        for row in ([0], [0, 6], [0, 1, 6]):
            mk = np.isin(np.arange(7), row, invert=True)
            val = optimal_error(sch, mk, progress=False)
            assert abs(val - float(exact_error(B, 2, mk))) <= stated_bounds(B, 2, mk)["auto"], (a0, row)


def test_the_shifted_cholesky_certificate_refuses_a_tiny_delta():
    # 24 x 12, rank 11: null(B) = span of z = (a0, 1, -1, 0, ..., 0).  With 10 stragglers the
    # orthogonal branch is the cheaper one; V_0[S] = (a0, 0, ..., 0)/‖z‖ for S = {0, 3, ..., 11} has
    # δ ~ 7e-10: the Gram certificate must fail (δ² is below its rounding margin), and the pivoted QR
    # then refuses too (κ̃/δ > 1e8).  S = {1, 3, ..., 11} has δ = 1/‖z‖: certified, and exact.
    rng = np.random.default_rng(5)
    B = rng.standard_normal((24, 12))
    B[:, 2] = 1e-9 * B[:, 0] + B[:, 1]
    sch = _scheme(B, 2)
    ctx = eval_context(sch)
    assert ctx.rank == 11 and 2 * 24 * 2 * (2 + 2) < 6 * 1 * 10 * 10  # the branch is the cheaper one
    rest = list(range(3, 12))
    vals, ok = _compiled.downdate(ctx, np.array([[0, *rest], [1, *rest]], dtype=np.int64), LIMIT_SQ)
    assert ok.tolist() == [False, True]
    mk = np.isin(np.arange(12), [0, 2])
    assert abs(vals[1] - float(exact_error(B, 2, mk))) <= stated_bounds(B, 2, mk)["svd"]
    # and auto, which hands the first pattern to the batched kernel, is within its bound of the truth
    mk0 = np.isin(np.arange(12), [1, 2])
    assert (
        abs(optimal_error(sch, mk0, progress=False) - float(exact_error(B, 2, mk0))) <= stated_bounds(B, 2, mk0)["auto"]
    )


@pytest.mark.parametrize("a0", [1e-5, 1e-7])
def test_a_small_delta_takes_the_orthogonal_branch(a0):
    # as above, S = {0, 3, ..., 11}: δ ~ a0/1.4 is certain (>= 1e3 τ, κ̃/δ <= 1e8) but too small for the
    # normal equations (κ̃/δ > kmax ~ 1e4 at |F| = 2): the pivoted QR certifies it and B̃_F goes through
    # Householder QR, within the SVD route's bound c p u κ_F mN (the normal equations would lose ~(κ_F² u)²)
    rng = np.random.default_rng(5)
    B = rng.standard_normal((24, 12))
    B[:, 2] = a0 * B[:, 0] + B[:, 1]
    ctx = eval_context(_scheme(B, 2))
    vals, ok = _compiled.downdate(ctx, np.array([[0, *range(3, 12)]], dtype=np.int64), LIMIT_SQ)
    assert ok.tolist() == [True]
    mk = np.isin(np.arange(12), [1, 2])
    bound = stated_bounds(B, 2, mk)
    assert bound["kF"] > 1e4
    assert abs(vals[0] - float(exact_error(B, 2, mk))) <= bound["svd"], (vals[0], float(exact_error(B, 2, mk)))


def test_a_pivot_that_is_not_positive_is_flagged():
    # the Gram loop needs Γ_FF positive definite; a zero column gives a zero pivot
    B = np.random.default_rng(3).standard_normal((12, 6))
    B[:, 2] = 0.0
    ctx = eval_context(_scheme(B, 2))
    F = np.array([[0, 1, 2, 3], [0, 1, 3, 4], [1, 2, 4, 5]], dtype=np.int64)
    vals, ok = _compiled.gram_solve(ctx, F)
    assert ok.tolist() == [False, True, False]
    mk = np.isin(np.arange(6), F[1])
    assert abs(ctx.total - vals[1] - lstsq_errors(B, 2, mk[None])[0]) <= _gram_tol(_scheme(B, 2))


CODES = {
    "PG(2,9) RD(0)": lambda: encode(gcsim.bibd(91, 10, 1), 2, "rd"),  # full rank
    "coset(27,2,5) RD(0)": lambda: encode(gcsim.coset_graph(27, 2, 5), 2, "rd"),  # rank 48 of 54
    "coset(27,2,5) RD(0.1)": lambda: encode(gcsim.coset_graph(27, 2, 5), 2, "rd", eps=0.1),  # κ̃ ~ 1e3
}


@pytest.mark.parametrize("name", list(CODES))
def test_loops_agree_with_the_batched_kernel_and_lstsq(name):
    # both implementations of a route meet its bound, so they differ by at most twice that bound;
    # lstsq (orthogonal) is an independent reference, within the same bound
    sch = CODES[name]()
    n = sch.n
    tol = _gram_tol(sch)
    ctx = eval_context(sch)
    for s in (1, 2, 5, 8, 20, 40, n - 3):  # s > |F| at the end: the Gram loop on full-rank B
        masks = _masks(n, s, 60, seed=s)
        fast = optimal_error(sch, masks, progress=False)
        with _compiled.disabled():
            ref = optimal_error(sch, masks, progress=False)
        assert np.max(np.abs(fast - ref)) <= 2 * tol, (name, s)
        assert np.max(np.abs(fast - lstsq_errors(np.asarray(sch.B, float), sch.m, masks))) <= 2 * tol, (name, s)
        if s <= n - s or not ctx.full_rank:
            _, ok = _compiled.downdate(ctx, _straggler_sets(masks), LIMIT_SQ)
            assert ok.all(), (name, s)  # V_0[S] has exact zero rows on the coset graph: still certified


@pytest.mark.parametrize("s", [30, 45, 50])
def test_many_stragglers_on_a_rank_deficient_code_against_exact_rationals(s):
    # coset graph RD(0): rank 48 of 54, so V_0 has 6 columns; with s = 30, 45 or 50 stragglers the
    # loop evaluates B̃_F (|F| = 24, 9 or 4, full column rank by Lemma 5) by the normal equations with
    # an explicit residual (§40.3 (f)): the SVD route's bound c p u κ_F mN against the exact error
    sch = CODES["coset(27,2,5) RD(0)"]()
    B = np.asarray(sch.B, dtype=float)
    ctx = eval_context(sch)
    k = ctx.V0.shape[1]
    f = ctx.n - s
    assert k == 6 and f**3 // 3 + 2 * f * f * sch.m + 2 * ctx.mN * f * sch.m < 6 * k * s * s  # the cheaper way
    masks = _masks(ctx.n, s, 4, seed=s)
    vals, ok = _compiled.downdate(ctx, _straggler_sets(masks), LIMIT_SQ)
    assert ok.all()
    for mk, val in zip(masks, vals, strict=True):
        exact = float(exact_error(B, sch.m, mk))
        assert abs(val - exact) <= stated_bounds(B, sch.m, mk)["svd"], (np.flatnonzero(~mk), val, exact)


def test_exact_families_stay_at_round_off_with_the_loops():
    # rank(B_F) = rank(B) for |S| <= s: the loop returns err([n]) (d = 0), c p u κ̃ mN
    sch = encode(gcsim.bibd(91, 10, 1).assignment, 2, "exact-gaussian", s=8, seed=0)
    ctx = eval_context(sch)
    masks = _masks(91, 8, 300, seed=1)
    _, ok = _compiled.downdate(ctx, _straggler_sets(masks), LIMIT_SQ)
    assert ok.all()
    vals = optimal_error(sch, masks, progress=False)
    k = 2 * kappa_nz(unit_columns(np.asarray(sch.B, float)))
    assert np.max(vals) <= SAFETY * max(sch.B.shape) * U * k * sch.B.shape[0]


def test_values_do_not_depend_on_chunks_or_order():
    sch = CODES["coset(27,2,5) RD(0)"]()
    a = optimal_error_all(sch, 3, progress=False)
    assert np.array_equal(a, optimal_error_all(sch, 3, chunk=7, progress=False))
    masks = _masks(54, 20, 50, seed=4)
    perm = np.random.default_rng(0).permutation(50)
    shuffled = optimal_error(sch, masks[perm], progress=False)
    assert np.array_equal(optimal_error(sch, masks, progress=False)[perm], shuffled)
    assert math.comb(54, 3) == a.size
