"""The exact least-squares reference (tests/exact_lstsq.py) against sympy's projection and by hand."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy

from exact_lstsq import exact_lstsq_error, exact_residual, pivot_columns, reference_residual


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
