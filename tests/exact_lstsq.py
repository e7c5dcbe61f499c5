"""Least-squares references in exact rational arithmetic: no BLAS, no LAPACK, no kernel choice.

``scipy.linalg.lstsq`` / ``numpy.linalg.lstsq`` (LAPACK ``gelsd``) on a rank-deficient ``B_F`` are
not independent of the machine: under OpenBLAS' SkylakeX kernel scipy returned 5.703125 for the
all-ones 10 x 2 problem of naive ``m = 2`` whose error is 5 (tests/test_evaluate.py).  The
functions here compute the same quantities from the float entries converted exactly
(``Fraction(float)``): the column space by fraction-exact elimination, then the normal equations
of its (full column rank) basis solved exactly.  For the small problems of the tests only.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def _rational(M: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.asarray(M, dtype=float)]


def pivot_columns(M: np.ndarray) -> list[int]:
    """Indices of a maximal set of linearly independent columns of ``M`` (exact rank).

    >>> pivot_columns(np.ones((10, 2)))
    [0]
    """
    rows = _rational(M)
    n = len(rows[0]) if rows else 0
    pivots: list[int] = []
    r = 0
    for j in range(n):
        p = next((i for i in range(r, len(rows)) if rows[i][j] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        for i in range(r + 1, len(rows)):
            if rows[i][j] != 0:
                f = rows[i][j] / rows[r][j]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r], strict=True)]
        pivots.append(j)
        r += 1
        if r == len(rows):
            break
    return pivots


def _solve(G: list[list[Fraction]], R: list[list[Fraction]]) -> list[list[Fraction]]:
    """G Y = R for a non-singular square ``G`` (Gauss-Jordan in fractions)."""
    k = len(G)
    A = [G[i][:] + R[i][:] for i in range(k)]
    for j in range(k):
        p = next(i for i in range(j, k) if A[i][j] != 0)
        A[j], A[p] = A[p], A[j]
        inv = 1 / A[j][j]
        A[j] = [a * inv for a in A[j]]
        for i in range(k):
            if i != j and A[i][j] != 0:
                f = A[i][j]
                A[i] = [a - f * b for a, b in zip(A[i], A[j], strict=True)]
    return [row[k:] for row in A]


def exact_residual(M: np.ndarray, T: np.ndarray) -> Fraction:
    """``min_X ‖M X − T‖_F²`` exactly (``M`` and ``T`` as their exact rational values).

    >>> exact_residual(np.ones((10, 2)), np.kron(np.eye(2), np.ones((5, 1))))
    Fraction(5, 1)
    """
    T = np.asarray(T, dtype=float).reshape(np.shape(M)[0], -1)
    Tq = _rational(T)
    total = sum((x * x for row in Tq for x in row), Fraction(0))
    cols = pivot_columns(M) if np.size(M) else []
    if not cols:
        return total
    Mq = _rational(np.asarray(M, dtype=float)[:, cols])
    k, rows, w = len(cols), len(Mq), len(Tq[0])
    G = [[sum((Mq[r][a] * Mq[r][b] for r in range(rows)), Fraction(0)) for b in range(k)] for a in range(k)]
    R = [[sum((Mq[r][a] * Tq[r][c] for r in range(rows)), Fraction(0)) for c in range(w)] for a in range(k)]
    Y = _solve(G, R)
    # ‖T − C Y‖² = ‖T‖² − ⟨CᵀT, Y⟩ for the least-squares Y (the residual is orthogonal to col C)
    return total - sum((R[a][c] * Y[a][c] for a in range(k) for c in range(w)), Fraction(0))


def exact_lstsq_error(B: np.ndarray, m: int, mask: np.ndarray) -> Fraction:
    """``min_X ‖B_F X − T‖_F²`` with ``T = I_m ⊗ 1_N`` and ``F`` the columns where ``mask`` is true.

    >>> exact_lstsq_error(np.ones((10, 3)), 2, np.array([True, False, True]))
    Fraction(5, 1)
    """
    B = np.asarray(B, dtype=float)
    N = B.shape[0] // m
    T = np.kron(np.eye(m), np.ones((N, 1)))
    return exact_residual(B[:, np.asarray(mask, dtype=bool)], T)


#: largest ``B_F`` (entries) solved in exact rationals; beyond, a rank-revealing QR (geqp3, not gelsd)
EXACT_MAX_ENTRIES = 600


def _pivoted_qr_residual(M: np.ndarray, T: np.ndarray) -> float:
    """``‖T‖² − ‖Q_rᵀ T‖²`` on the orthonormal basis ``Q_r`` of a column-pivoted QR (no ``gelsd``).

    The rank ``r`` is the number of ``|R_ii|`` above ``max(shape)·ε·|R_11|`` (numpy's rank rule on
    the diagonal of the rank-revealing factor): a different LAPACK route from ``gelsd``, and a
    well-conditioned one (``Q_r`` is orthonormal whatever the condition of ``M``).
    """
    import scipy.linalg as sl

    Q, R, _ = sl.qr(M, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > max(M.shape) * np.finfo(float).eps * d[0])) if d.size and d[0] > 0 else 0
    proj = Q[:, :r].T @ T
    return float(np.sum(T**2) - np.sum(proj**2))


def reference_residual(M: np.ndarray, T: np.ndarray) -> float:
    """``min_X ‖M X − T‖_F²`` for a test's reference: LAPACK only where the problem is well posed.

    ``M`` of full column rank (numerically: every singular value above numpy's rank tolerance
    ``max(shape)·ε·σ_max``): ``numpy.linalg.lstsq``, a well-posed problem (the tests' tolerances
    carry its κ-based bound).  Any sign of rank deficiency: the exact value
    (:func:`exact_residual`, whose elimination decides the rank exactly), rounded once -- that
    is where ``gelsd``'s answer depended on the OpenBLAS kernel (5.703125 for 5); beyond
    ``EXACT_MAX_ENTRIES`` entries a column-pivoted QR instead.  The SVD only picks the route (the
    exact one costs ~20-90 ms per 26 x 12 pattern, too slow for every pattern).

    >>> reference_residual(np.ones((10, 2)), np.kron(np.eye(2), np.ones((5, 1))))
    5.0
    """
    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    if M.shape[1] == 0:
        return float(np.sum(T**2))
    if M.shape[0] < M.shape[1] or np.linalg.matrix_rank(M) < M.shape[1]:
        if M.size <= EXACT_MAX_ENTRIES:
            return float(exact_residual(M, T))
        return _pivoted_qr_residual(M, T)
    X = np.linalg.lstsq(M, T, rcond=None)[0]
    return float(np.sum((M @ X - T) ** 2))
