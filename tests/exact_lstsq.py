"""Least-squares references in exact rational arithmetic: no BLAS, no LAPACK, no kernel choice.

``scipy.linalg.lstsq`` / ``numpy.linalg.lstsq`` (LAPACK ``gelsd``) on a rank-deficient ``B_F`` are
not independent of the machine: under OpenBLAS' SkylakeX kernel scipy returned 5.703125 for the
all-ones 10 x 2 problem of naive ``m = 2`` whose error is 5 (tests/test_evaluate.py).  The
functions here compute the same quantities from the float entries converted exactly
(``Fraction(float)``): the column space by exact integer elimination (each column scaled by a
power of two), then the normal equations of its (full column rank) basis solved exactly.  For the
small problems of the tests only; where the problem is well posed (full column rank, a rank
decision with a gap) the float routes are used, with the κ-based tolerances they carry
(:func:`reference_residual`, :func:`checked_lstsq`, :func:`reference_min_norm`, :func:`min_norm_tol`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def _rational(M: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.asarray(M, dtype=float)]


def pivot_columns(M: np.ndarray) -> list[int]:
    """Indices of a maximal set of linearly independent columns of ``M`` (exact rank).

    >>> pivot_columns(np.ones((10, 2)))
    [0]
    """
    # integer elimination: the columns scaled to integers (the same pivots), each new row divided
    # by the gcd of its entries (a row scaling: the same row space), so no fractions are formed
    rows, _ = _integer_columns(M)
    n = len(rows[0]) if rows else 0
    pivots: list[int] = []
    r = 0
    for j in range(n):
        p = next((i for i in range(r, len(rows)) if rows[i][j] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        piv = rows[r][j]
        for i in range(r + 1, len(rows)):
            if rows[i][j] != 0:
                f = rows[i][j]
                new = [a * piv - f * b for a, b in zip(rows[i], rows[r], strict=True)]
                g = math.gcd(*new)
                rows[i] = [a // g for a in new] if g > 1 else new
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


def _integer_columns(M: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """``M``'s entries as integers, column ``j`` scaled by ``scales[j]`` (a power of two).

    A float is an integer times a power of two, so each column scales to integers exactly; the
    column space, the pivot columns and the residual of any ``T`` are unchanged, and the normal
    equations below run on Python integers instead of fractions (~10x faster for float entries).
    """
    Q = [[float(x).as_integer_ratio() for x in row] for row in np.asarray(M, dtype=float)]
    n = len(Q[0]) if Q else 0
    scales = [max((row[j][1] for row in Q), default=1) for j in range(n)]  # powers of two
    return [[row[j][0] * (scales[j] // row[j][1]) for j in range(n)] for row in Q], scales


def exact_residual(M: np.ndarray, T: np.ndarray, cols: list[int] | None = None) -> Fraction:
    """``min_X ‖M X − T‖_F²`` exactly (``M`` and ``T`` as their exact rational values).

    >>> exact_residual(np.ones((10, 2)), np.kron(np.eye(2), np.ones((5, 1))))
    Fraction(5, 1)
    """
    T = np.asarray(T, dtype=float).reshape(np.shape(M)[0], -1)
    # T scaled by one power of two ``d`` to integers: the residual scales by d²
    Tq = _rational(T)
    d = max((x.denominator for row in Tq for x in row), default=1)
    Ti = [[int(x * d) for x in row] for row in Tq]
    total = sum(x * x for row in Ti for x in row)
    if cols is None:
        cols = pivot_columns(M) if np.size(M) else []
    if not cols:
        return Fraction(total, d * d)
    Mi, _ = _integer_columns(np.asarray(M, dtype=float)[:, cols])
    k, rows, w = len(cols), len(Mi), len(Ti[0])
    C = [[Mi[r][a] for r in range(rows)] for a in range(k)]  # the basis columns
    Tc = [[Ti[r][c] for r in range(rows)] for c in range(w)]
    # the bordered Gram matrix [[CᵀC, CᵀT], [TᵀC, TᵀT]] of integers: ‖T − P_C T‖² is the trace of
    # the Schur complement TᵀT − TᵀC (CᵀC)⁻¹ CᵀT
    vecs = C + Tc
    big = max((abs(x) for v in vecs for x in v), default=0)
    if rows * big * big < 2**62:  # small integers (0/1, ±1): the products and sums fit in int64, exactly
        V = np.array(vecs, dtype=np.int64)
        A = (V @ V.T).tolist()
    else:
        A = [[sum(x * y for x, y in zip(u, v, strict=True)) for v in vecs] for u in vecs]
    return Fraction(_schur_trace(A, k), d * d)


def _schur_trace(A: list[list[int]], k: int) -> Fraction:
    """Trace of the Schur complement of the leading ``k`` x ``k`` block (positive definite) of ``A``.

    Bareiss' fraction-free elimination (exact integer divisions): after ``k`` steps the trailing
    block is ``det(A_kk)`` times the Schur complement and the last pivot is ``det(A_kk)``.
    """
    A = [row[:] for row in A]
    size, prev = len(A), 1
    for p in range(k):
        piv = A[p][p]
        for i in range(p + 1, size):
            for j in range(p + 1, size):
                A[i][j] = (A[i][j] * piv - A[i][p] * A[p][j]) // prev
        prev = piv
    return Fraction(sum(A[i][i] for i in range(k, size)), prev)


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
#: the same for integer entries (0/1 assignments, ±1 diagonals), whose elimination stays cheap
#: (~10 ms for the 40 x 34 baseline [A; A] of tests/test_authors_scripts.py)
EXACT_MAX_INTEGER_ENTRIES = 4000


def _pivoted_qr_residual(M: np.ndarray, T: np.ndarray) -> float:
    """``‖T − Q_r Q_rᵀ T‖²`` on the orthonormal basis ``Q_r`` of a column-pivoted QR (no ``gelsd``).

    The rank ``r`` is the number of ``|R_ii|`` above ``max(shape)·ε·|R_11|`` (numpy's rank rule on
    the diagonal of the rank-revealing factor): a different LAPACK route from ``gelsd``, and a
    well-conditioned one (``Q_r`` is orthonormal whatever the condition of ``M``).
    """
    import scipy.linalg as sl

    Q, R, _ = sl.qr(M, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > max(M.shape) * np.finfo(float).eps * d[0])) if d.size and d[0] > 0 else 0
    Qr = Q[:, :r]
    # the residual vector itself, not ‖T‖² − ‖Q_rᵀT‖²: that difference loses u ‖T‖² absolutely,
    # which swamps a small residual (0 for a wide B_F of full row rank)
    return float(np.sum((T - Qr @ (Qr.T @ T)) ** 2))


def reference_residual(M: np.ndarray, T: np.ndarray) -> float:
    """``min_X ‖M X − T‖_F²`` for a test's reference: LAPACK only where the problem is well posed.

    ``M`` of full column rank (numerically: every singular value above numpy's rank tolerance
    ``max(shape)·ε·σ_max``): ``numpy.linalg.lstsq``, a well-posed problem (the tests' tolerances
    carry its κ-based bound).  Any sign of rank deficiency: the exact value
    (:func:`exact_residual`) rounded once where the exact rank agrees -- that is where
    ``gelsd``'s answer depended on the OpenBLAS kernel (5.703125 for 5); beyond
    ``EXACT_MAX_ENTRIES`` entries, or where the deficiency is only numerical, a column-pivoted QR
    instead (:func:`_deficient_residual`).  The SVD only picks the route (the
    exact one costs ~20-90 ms per 26 x 12 pattern, too slow for every pattern).

    >>> reference_residual(np.ones((10, 2)), np.kron(np.eye(2), np.ones((5, 1))))
    5.0
    """
    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    if M.shape[1] == 0:
        return float(np.sum(T**2))
    rank = np.linalg.matrix_rank(M)
    if rank < M.shape[1]:
        return _deficient_residual(M, T, rank)
    X = np.linalg.lstsq(M, T, rcond=None)[0]
    return float(np.sum((M @ X - T) ** 2))


def _deficient_residual(M: np.ndarray, T: np.ndarray, rank: int) -> float:
    """The residual of a numerically rank-deficient ``M`` (numerical rank ``rank``).

    Exact where the deficiency is exact in the float entries (the exact rank equals ``rank``: 0/1
    assignments, repeated or zero columns) and ``M`` has at most ``EXACT_MAX_ENTRIES`` entries
    (``EXACT_MAX_INTEGER_ENTRIES`` if they are integers); a
    column-pivoted QR beyond, and where the rounded entries are of full rank in exact arithmetic
    but not numerically (a float encoder with a singular design): there the float answer at the
    numerical rank is the meaningful one, not the exact residual of the rounded entries.
    """
    if M.size <= EXACT_MAX_ENTRIES or (M.size <= EXACT_MAX_INTEGER_ENTRIES and np.all(M == np.round(M))):
        cols = pivot_columns(M)
        if len(cols) == rank:
            return float(exact_residual(M, T, cols))
    return _pivoted_qr_residual(M, T)


def reference_error(B: np.ndarray, m: int, mask: np.ndarray) -> float:
    """:func:`reference_residual` of ``B_F`` and ``T = I_m ⊗ 1_N`` (``F`` where ``mask`` is true).

    >>> reference_error(np.ones((10, 3)), 2, np.array([True, False, True]))
    5.0
    """
    B = np.asarray(B, dtype=float)
    T = np.kron(np.eye(m), np.ones((B.shape[0] // m, 1)))
    return reference_residual(B[:, np.asarray(mask, dtype=bool)], T)


def exact_min_norm(M: np.ndarray, T: np.ndarray) -> list[list[Fraction]]:
    """The minimum-norm least-squares solution ``M⁺ T`` exactly (``M``, ``T`` as their rational values).

    With ``C`` the pivot columns of ``M`` (exact rank ``r``), ``M = C W`` for ``W = (CᵀC)⁻¹CᵀM``
    (``r`` x ``n``, full row rank), so ``M⁺ = W⁺ C⁺ = Wᵀ(WWᵀ)⁻¹ (CᵀC)⁻¹Cᵀ``.

    >>> [[str(x) for x in row] for row in exact_min_norm(np.ones((4, 2)), np.ones((4, 1)))]
    [['1/2'], ['1/2']]
    """
    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    n, w = M.shape[1], T.shape[1]
    cols = pivot_columns(M) if M.size else []
    if not cols:
        return [[Fraction(0)] * w for _ in range(n)]
    Mq, Tq = _rational(M), _rational(T)
    rows, k = len(Mq), len(cols)
    G = [[sum((Mq[r][a] * Mq[r][b] for r in range(rows)), Fraction(0)) for b in cols] for a in cols]
    CtM = [[sum((Mq[r][a] * Mq[r][j] for r in range(rows)), Fraction(0)) for j in range(n)] for a in cols]
    CtT = [[sum((Mq[r][a] * Tq[r][c] for r in range(rows)), Fraction(0)) for c in range(w)] for a in cols]
    W = _solve(G, CtM)  # k x n
    Y = _solve(G, CtT)  # k x w: the least-squares coefficients on C
    WWt = [[sum((W[a][j] * W[b][j] for j in range(n)), Fraction(0)) for b in range(k)] for a in range(k)]
    Z = _solve(WWt, Y)  # k x w
    return [[sum((W[a][j] * Z[a][c] for a in range(k)), Fraction(0)) for c in range(w)] for j in range(n)]


#: a singular value within this factor of the rank cutoff makes the rank decision uncertified
RANK_GAP = 100.0


def _numerical_rank(sv: np.ndarray, cutoff: float, *, default_cutoff: bool = True) -> int:
    """Singular values above ``cutoff``, refused unless the decision has a gap around it.

    A float SVD moves each singular value by at most ``c p u σ_max`` (Weyl + backward stability).
    Kept values must be at least ``RANK_GAP · cutoff``.  Under numpy's cutoff
    ``max(shape)·ε·σ_max`` (``default_cutoff``) the values below it are the rounding of exact
    zeros (that cutoff is the scale of ``c p u σ_max``); under an explicit ``rcond`` they must also
    be below ``cutoff / RANK_GAP``.  With that gap every backward-stable solver, on any BLAS
    kernel, makes the same rank decision.
    """
    low = 0.0 if default_cutoff else cutoff / RANK_GAP
    near = sv[(sv > low) & (sv < cutoff * RANK_GAP)]
    near = near if not default_cutoff else near[near > cutoff]
    if near.size:
        raise ValueError(f"singular values {near} near the rank cutoff {cutoff:.3g}: rank not certified")
    return int(np.sum(sv > cutoff))


def reference_min_norm(M: np.ndarray, T: np.ndarray, rcond: float | None = None) -> np.ndarray:
    """``M⁺ T`` (the rank cut at ``rcond·σ_max``, numpy's ``max(shape)·ε`` for ``None``) for a test's reference.

    The rank is decided from a certified gap (:func:`_numerical_rank`).  Full column rank: the
    problem is well posed and ``numpy.linalg.lstsq`` is the reference (its error is the κ-based
    bound of :func:`min_norm_tol`); full row rank (wide): the QR of ``Mᵀ``.  Rank-deficient, the
    rank exact in the float entries (0/1 assignments, repeated columns): the exact
    :func:`exact_min_norm`, rounded once -- a float solver here is where ``gelsd`` depended on the
    OpenBLAS kernel.  Otherwise (``rcond`` cuts a tiny but non-zero singular value): the truncated
    SVD at 50 digits (mpmath), no BLAS at all; small matrices only (~2 s for 20 x 44).

    >>> reference_min_norm(np.ones((4, 2)), np.ones((4, 1))).ravel().tolist()
    [0.5, 0.5]
    """
    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    n, w = M.shape[1], T.shape[1]
    sv = np.linalg.svd(M, compute_uv=False) if M.size else np.zeros(0)
    if sv.size == 0 or sv[0] == 0:
        return np.zeros((n, w))
    cutoff = (rcond if rcond is not None else max(M.shape) * np.finfo(float).eps) * sv[0]
    r = _numerical_rank(sv, cutoff, default_cutoff=rcond is None)
    if r == n:
        return np.linalg.lstsq(M, T, rcond=None)[0]
    if r == M.shape[0]:
        # full row rank (a wide B_F): the unique minimum-norm solution Q R⁻ᵀ T from the QR of Mᵀ,
        # no rank decision inside (Higham Thm 21.4: the Q method, error c m n u κ ‖X‖)
        import scipy.linalg as sl

        Q, R = sl.qr(M.T, mode="economic")
        return Q @ sl.solve_triangular(R, T, trans="T")
    if len(pivot_columns(M)) == r and M.size <= EXACT_MAX_ENTRIES:
        return np.array([[float(x) for x in row] for row in exact_min_norm(M, T)])
    return _mp_truncated_svd_solution(M, T, r)


def _mp_truncated_svd_solution(M: np.ndarray, T: np.ndarray, r: int) -> np.ndarray:
    """``V_r Σ_r⁻¹ U_rᵀ T`` from mpmath's SVD at 50 digits of the exact float entries."""
    import mpmath

    with mpmath.workdps(50):
        U, S, V = mpmath.svd_r(mpmath.matrix(M.tolist()))
        Tm = mpmath.matrix(T.tolist())
        X = mpmath.zeros(M.shape[1], T.shape[1])
        for i in range(r):
            coef = (U[:, i].T * Tm) / S[i]  # 1 x w
            X += V[i, :].T * coef
        return np.array(X.tolist(), dtype=float)


def rank_cond(M: np.ndarray, rcond: float | None = None) -> float:
    """``σ_1/σ_r`` over the certified rank ``r`` (:func:`_numerical_rank`): the κ of the minimum-norm problem."""
    M = np.asarray(M, dtype=float)
    sv = np.linalg.svd(M, compute_uv=False) if M.size else np.zeros(0)
    if sv.size == 0 or sv[0] == 0:
        return 1.0
    cutoff = (rcond if rcond is not None else max(M.shape) * np.finfo(float).eps) * sv[0]
    r = _numerical_rank(sv, cutoff, default_cutoff=rcond is None)
    return float(sv[0] / sv[r - 1])


def min_norm_tol(M: np.ndarray, T: np.ndarray, X: np.ndarray, rcond: float | None = None) -> float:
    """Bound on ``‖fl(X) − X‖_F`` for a backward-stable minimum-norm solver, ``X`` the exact ``M⁺T``.

    Higham, Accuracy and Stability, Thm 20.1 (and its rank-deficient form, Sec. 20.8, the rank
    decision certified): ``‖ΔX‖ <= c m n u κ (2 + (κ + 1) ‖R‖/(‖M‖ ‖X‖)) ‖X‖`` with ``κ = σ_1/σ_r``
    and ``R = M X − T``; :func:`tolerances.lstsq_tol` carries ``c m n u κ``.
    """
    from tolerances import lstsq_tol

    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    kappa = rank_cond(M, rcond)
    xn = float(np.linalg.norm(X))
    if xn == 0:
        return 0.0
    rn = float(np.linalg.norm(M @ X - T))
    scale = (2.0 + (kappa + 1.0) * rn / (float(np.linalg.norm(M, 2)) * xn)) * xn
    return lstsq_tol(kappa, M.shape[0], max(M.shape[1], 1), scale)


def check_min_norm_decoder(B: np.ndarray, m: int, mask: np.ndarray, X: np.ndarray, err: float) -> None:
    """Assert that ``X`` (n, m) is the minimum-norm ``B_F⁺ T`` and ``err`` its squared residual.

    The references are kernel-independent (:func:`reference_min_norm`, :func:`reference_residual`):
    lstsq only where ``B_F`` has full column rank, exact fractions where it is rank-deficient
    (naive, FR), where a float lstsq's minimum-norm ``X`` depended on the OpenBLAS kernel.
    """
    from tolerances import SAFETY, gamma, lstsq_tol

    mN = B.shape[0]
    T = np.kron(np.eye(m), np.ones((mN // m, 1)))
    assert np.all(X[~mask] == 0)
    f = int(mask.sum())
    if f == 0:
        assert np.all(X == 0) and err == mN
        return
    BF = B[:, mask]
    Xl = reference_min_norm(BF, T)
    # Higham Thm 20.1 (rank-deficient: Sec. 20.8, the rank certified), κ = σ_1/σ_r, for the
    # decoder's solver and the reference's (lstsq at full column rank; exact otherwise)
    assert np.linalg.norm(X[mask] - Xl) <= 2 * min_norm_tol(BF, T, Xl)
    rn = math.sqrt(reference_residual(BF, T))
    # the error is the squared residual: ‖r‖² changes by <= 2 ‖r‖ ‖Δr‖ + ‖Δr‖², ‖Δr‖ <= c m n u κ ‖T‖
    dr = 2 * lstsq_tol(rank_cond(BF), mN, f, math.sqrt(mN))
    assert abs(err - rn * rn) <= 2 * rn * dr + dr * dr + SAFETY * gamma(mN * m) * rn * rn


def checked_lstsq_residual(M: np.ndarray, T: np.ndarray) -> float:
    """:func:`reference_residual` at the cost of one lstsq, for loops over thousands of patterns.

    One ``numpy.linalg.lstsq``; its residual is kept where lstsq itself reports full column rank
    (numpy's cutoff, the same rule as :func:`reference_residual`'s ``matrix_rank``), and replaced
    by :func:`reference_residual`'s exact / pivoted-QR value where it reports a deficiency.
    """
    return checked_lstsq(M, T)[0]


def checked_lstsq(M: np.ndarray, T: np.ndarray) -> tuple[float, float]:
    """:func:`checked_lstsq_residual` and κ over the singular values above numpy's cutoff (lstsq's own)."""
    M = np.asarray(M, dtype=float)
    T = np.asarray(T, dtype=float).reshape(M.shape[0], -1)
    if M.shape[1] == 0:
        return float(np.sum(T**2)), 1.0
    X, _, rank, sv = np.linalg.lstsq(M, T, rcond=None)
    kappa = float(sv[0] / sv[rank - 1]) if rank else 1.0
    if rank == M.shape[1]:
        return float(np.sum((M @ X - T) ** 2)), kappa
    return _deficient_residual(M, T, int(rank)), kappa


def lstsq_error(B: np.ndarray, mask: np.ndarray, m: int, *, normalized: bool = False) -> float:
    """``err(F) = min_X ‖B_F X − T‖_F²`` with ``T = I_m ⊗ 1_N`` (``/ (mN)`` if ``normalized``).

    The tests' one least-squares reference for a decoding error, independent of gcsim's evaluators:
    :func:`checked_lstsq_residual` (lstsq where ``B_F`` has full column rank, the exact / pivoted-QR
    residual where it is deficient, so the value does not depend on the BLAS kernel).  An empty
    ``F`` gives ``‖T‖² = mN``.

    >>> lstsq_error(np.ones((4, 3)), np.array([True, False, True]), 2)
    2.0
    """
    B = np.asarray(B, dtype=float)
    mN = B.shape[0]
    T = np.kron(np.eye(m), np.ones((mN // m, 1)))
    err = checked_lstsq_residual(B[:, np.asarray(mask, dtype=bool)], T)
    return err / mN if normalized else err
