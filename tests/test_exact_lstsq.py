"""The exact least-squares reference (tests/exact_lstsq.py) against sympy's projection and by hand."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy

from exact_lstsq import (
    checked_lstsq,
    exact_lstsq_error,
    exact_min_norm,
    exact_residual,
    min_norm_tol,
    pivot_columns,
    rank_cond,
    reference_min_norm,
    reference_residual,
)
from tolerances import lstsq_tol


def _sympy_residual(M, T):
    """‖T − P T‖² with P the orthogonal projector onto col(M), by sympy's column space."""
    S = sympy.Matrix([[sympy.Rational(Fraction(float(x))) for x in row] for row in M])
    Tq = sympy.Matrix([[sympy.Rational(Fraction(float(x))) for x in row] for row in T])
    basis = S.columnspace()
    if not basis:
        return sum(x**2 for x in Tq)
    C = sympy.Matrix.hstack(*basis)
    R = Tq - C * (C.T * C).inv() * (C.T * Tq)
    return sum(x**2 for x in R)


def test_the_blas_kernel_case_by_hand():
    # naive m = 2, every part on the 2 survivors: B_F = all-ones 10 x 2, rank 1; the best fit of
    # T = I_2 ⊗ 1_5 is 1/2 everywhere, so the error is 10 · 2 · (1/2)² = 5 (SkylakeX gelsd: 5.703125)
    B = np.ones((10, 3))
    assert pivot_columns(B[:, [0, 2]]) == [0]
    assert exact_lstsq_error(B, 2, np.array([True, False, True])) == 5
    assert reference_residual(B[:, [0, 2]], np.kron(np.eye(2), np.ones((5, 1)))) == 5.0


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_sympy_on_rank_deficient_and_float_matrices(seed):
    rng = np.random.default_rng(seed)
    rows, rank, cols = 8, int(rng.integers(1, 4)), int(rng.integers(2, 6))
    if seed % 2:  # 0/1 assignments with repeated columns (rank-deficient)
        M = (rng.random((rows, rank)) < 0.5).astype(float)[:, rng.integers(0, rank, cols)]
    else:  # float entries, exactly rank-deficient: a product of thin float factors, rounded once
        M = rng.standard_normal((rows, rank)) @ rng.standard_normal((rank, cols))
    T = np.kron(np.eye(2), np.ones((rows // 2, 1)))
    assert exact_residual(M, T) == _sympy_residual(M, T)
    assert len(pivot_columns(M)) == sympy.Matrix([[Fraction(float(x)) for x in r] for r in M]).rank()


def test_full_column_rank_goes_to_lstsq_within_its_bound():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((12, 4))
    T = np.kron(np.eye(2), np.ones((6, 1)))
    exact = float(exact_residual(M, T))
    assert len(pivot_columns(M)) == 4
    assert abs(reference_residual(M, T) - exact) <= 1e-12 * max(exact, 1.0)  # κ(M) < 10 here
    assert exact_residual(np.zeros((4, 0)), np.ones((4, 1))) == 4


def test_large_rank_deficient_problems_take_the_pivoted_qr_route():
    # 40 x 20 (800 entries > EXACT_MAX_ENTRIES), rank 5, and the all-ones case scaled up: both
    # against the exact value
    rng = np.random.default_rng(4)
    M = (rng.random((40, 5)) < 0.5).astype(float)[:, rng.integers(0, 5, 20)]
    T = np.kron(np.eye(2), np.ones((20, 1)))
    exact = float(exact_residual(M, T))
    assert abs(reference_residual(M, T) - exact) <= 1e-10 * max(exact, 1.0)
    ones = np.ones((40, 20))
    assert abs(reference_residual(ones, T) - 20.0) <= 1e-10 * 20  # best fit 1/2 everywhere: 40·2·¼


def _sympy_pinv_solution(M, T):
    S = sympy.Matrix([[sympy.Rational(Fraction(float(x))) for x in row] for row in M])
    Tq = sympy.Matrix([[sympy.Rational(Fraction(float(x))) for x in row] for row in T])
    return S.pinv() * Tq


@pytest.mark.parametrize("seed", range(4))
def test_exact_min_norm_is_sympys_pseudo_inverse(seed):
    rng = np.random.default_rng(10 + seed)
    rows, rank, cols = 6, int(rng.integers(1, 3)), int(rng.integers(2, 5))
    if seed % 2:  # repeated 0/1 columns
        M = (rng.random((rows, rank)) < 0.5).astype(float)[:, rng.integers(0, rank, cols)]
        M[0, 0] = 1.0  # never the zero matrix
    else:  # small integers, rank-deficient product
        M = rng.integers(-2, 3, (rows, rank)).astype(float) @ rng.integers(-2, 3, (rank, cols)).astype(float)
    T = np.kron(np.eye(2), np.ones((rows // 2, 1)))
    want = _sympy_pinv_solution(M, T)
    got = exact_min_norm(M, T)
    assert [[sympy.Rational(x) for x in row] for row in got] == want.tolist()


def test_reference_min_norm_routes():
    T = np.kron(np.eye(2), np.ones((5, 1)))
    # rank-deficient 0/1 (two equal columns): the exact B_F⁺ T, 1/4 everywhere
    assert np.array_equal(reference_min_norm(np.ones((10, 2)), T), np.full((2, 2), 0.25))
    rng = np.random.default_rng(7)
    for M in (rng.standard_normal((10, 4)), rng.standard_normal((10, 14))):  # full column / full row rank
        exact = np.array([[float(x) for x in row] for row in exact_min_norm(M, T)])
        X = reference_min_norm(M, T)
        assert np.linalg.norm(X - exact) <= min_norm_tol(M, T, exact)
    # rcond cuts a 1e-10 column: the 50-digit truncated SVD, against numpy's own truncation
    M = rng.standard_normal((10, 4))
    M[:, 3] *= 1e-10
    X = reference_min_norm(M, T, rcond=1e-8)
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    trunc = Vt[:3].T @ ((U[:, :3].T @ T) / s[:3, None])
    assert np.linalg.norm(X - trunc) <= 2 * min_norm_tol(M, T, X, rcond=1e-8)
    assert rank_cond(M, rcond=1e-8) == pytest.approx(s[0] / s[2], rel=lstsq_tol(s[0] / s[2], 10, 4, 1.0))


def test_rank_decision_near_the_cutoff_is_refused():
    M = np.random.default_rng(8).standard_normal((10, 4))
    M[:, 3] *= 1e-7  # σ_4 ~ 1e-7 σ_1, within RANK_GAP of rcond = 1e-8
    with pytest.raises(ValueError, match="rank not certified"):
        reference_min_norm(M, np.ones((10, 1)), rcond=1e-8)


def test_checked_lstsq_takes_the_exact_route_only_for_exact_deficiency():
    T = np.kron(np.eye(2), np.ones((5, 1)))
    assert checked_lstsq(np.ones((10, 2)), T) == (5.0, 1.0)  # exact: 5, not gelsd's 5.703125 of SkylakeX
    # numerically rank-deficient but of full rank in exact arithmetic (a product of thin float
    # factors, rounded): the exact residual of the rounded entries is not the numerical answer; the
    # pivoted QR at numpy's rank is
    rng = np.random.default_rng(9)
    M = rng.standard_normal((10, 2)) @ rng.standard_normal((2, 4))
    assert len(pivot_columns(M)) == 4 and np.linalg.matrix_rank(M) == 2
    res, _ = checked_lstsq(M, T)
    U = np.linalg.svd(M)[0][:, :2]
    # two orthogonal routes (QR, SVD) at the same rank: each within c m n u κ_r ‖T‖² (Higham Thm 20.3)
    assert abs(res - float(np.sum((T - U @ (U.T @ T)) ** 2))) <= 2 * lstsq_tol(rank_cond(M), 10, 4, 10.0)
    assert res == reference_residual(M, T)
