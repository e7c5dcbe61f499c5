"""Compiled per-pattern loops of the optimal-error kernel: the NumPy fast path (docs/theory.md §40.3).

The array-API kernel (:mod:`gcsim.coding.kernels`) evaluates a group of patterns with batched
LAPACK calls on stacks of small matrices (``solve``, ``svdvals``, ``svd``); for the small
matrices of gradient codes (``s`` or ``|F|`` of a few tens) those calls spend most of their time
copying and dispatching, not computing.  The loops here do the same algebra one pattern at a time
in machine code (numba, installed with galois), so a pattern costs about its flop count:

:func:`downdate`
    Column deletion, Lemmas 2 and 2b: ``err(F) = err([n]) + tr(Y_Sᵀ Q (Qᵀ K_SS Q)⁻¹ Qᵀ Y_S)``.
    ``Q`` spans ``null(V_0[S]ᵀ)``; it comes from a Householder QR with column pivoting of
    ``W = V_0[S]`` instead of an SVD, and the route is *certified* pattern by pattern: the
    dropped part of the triangular factor has Frobenius norm at most ``τ`` (so every dropped
    singular value of ``W`` is at most ``τ``) and the kept part ``R₁₁`` has
    ``1/‖R₁₁⁻¹‖_F >= 10³ τ`` (a lower bound on its smallest singular value ``δ``, hence on the
    smallest kept singular value of ``W``), and ``κ̃ ‖R₁₁⁻¹‖_F <= GRAM_KAPPA_LIMIT²`` when a
    null space is used.  Then the rank decision is the SVD route's and the pattern is one that
    route would not flag (§40.3, "Compiled loops").  The ``s x s`` (or ``d x d``) system is
    solved by Cholesky.  For a rank-deficient ``B̃`` and many stragglers (when it costs fewer
    flops) a pattern whose ``V_0[S]`` has full column rank (certified first by a shifted
    Cholesky of ``V_0[S]ᵀV_0[S]``, else by the pivoted QR) is evaluated by Householder QR of
    ``[B̃_F  T]`` instead: ``B̃_F`` then has full column rank with ``κ_F <= κ̃/δ`` (Lemma 5); and
    when ``κ̃/δ`` is small enough (§40.3 (f)), by the normal equations with the residual
    ``T - B̃_F X̂`` formed explicitly, whose error is second order in that of ``X̂``.
:func:`gram_solve`
    ``tr(H_Fᵀ Γ_FF⁻¹ H_F)`` by Cholesky, for a full-rank ``B̃`` with ``κ̃ <= GRAM_KAPPA_LIMIT``
    (``κ(Γ_FF) <= κ̃² <= 10⁸`` by interlacing, Lemma 3).

Each returns the values and a flag per pattern; a pattern whose certificate fails, or whose
Cholesky factorization meets a pivot that is not positive, is flagged and left to the
array-API kernel (which then decides, as before, whether it needs the SVD route).  The
triangular solve is fused into the factorization (the right-hand sides ride along as extra
columns of the factored matrix), and no loop uses reassociating ("fast") floating point, so
the values do not depend on the chunk size or the order of the patterns.

numba is imported on first use (importing gcsim stays fast); :func:`available` is False if it
cannot be imported, and the array-API kernel then does all the work.
"""

from __future__ import annotations

import threading
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["available", "disabled", "downdate", "gram_solve", "split_masks"]

_LOCK = threading.Lock()
# the compiled Cholesky, a module global so that the loops calling it have no closure variables
# (numba's disk cache cannot match a function that closes over another compiled function)
_CHOL_RHS: Any = None
_QR_PROJ: Any = None
_GRAM_RES: Any = None
_STATE: dict[str, Any] = {"fns": None, "tried": False, "disabled": False}


def available() -> bool:
    """True when the compiled loops can be used (numba imports and they are not disabled).

    Examples
    --------
    >>> isinstance(available(), bool)
    True
    """
    return not _STATE["disabled"] and _functions() is not None


class disabled:
    """Context manager that switches the compiled loops off (the array-API kernel does all).

    Used to compare the two implementations of the same routes.

    Examples
    --------
    >>> with disabled():
    ...     available()
    False
    """

    def __enter__(self) -> disabled:
        self._before = _STATE["disabled"]
        _STATE["disabled"] = True
        return self

    def __exit__(self, *exc: object) -> None:
        _STATE["disabled"] = self._before


def _functions() -> SimpleNamespace | None:
    if not _STATE["tried"]:
        with _LOCK:
            if not _STATE["tried"]:
                try:
                    _STATE["fns"] = _build()
                except ImportError:
                    _STATE["fns"] = None
                except Exception as exc:  # a numba that cannot compile here: say so once, go on without
                    warnings.warn(
                        f"gcsim: the evaluator's compiled loops are unavailable ({type(exc).__name__}: {exc}); "
                        "the batched kernel is used (same values, slower)",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    _STATE["fns"] = None
                _STATE["tried"] = True
    return _STATE["fns"]


def split_masks(masks: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """``(S, F)``: the straggler and non-straggler indices of each mask row, each ascending.

    The same arrays as ``order[:, :s], order[:, s:]`` with ``order`` the stable argsort of the
    masks; every row must have exactly ``n - s`` True entries.

    Examples
    --------
    >>> S, F = split_masks(np.array([[True, False, True, False]]), 2)
    >>> S.tolist(), F.tolist()
    ([[1, 3]], [[0, 2]])
    """
    fns = _functions()
    count, n = masks.shape
    S = np.empty((count, s), dtype=np.int64)
    F = np.empty((count, n - s), dtype=np.int64)
    if fns is None or _STATE["disabled"]:
        order = np.argsort(masks, axis=1, kind="stable")
        S[:], F[:] = order[:, :s], order[:, s:]
        if np.any(masks.sum(axis=1) != n - s):
            raise InvalidArgumentError("masks", f"every row must have {n - s} True entries (s = {s} stragglers)")
    else:
        bad = fns.split(np.ascontiguousarray(masks, dtype=np.bool_), S, F)
        if bad >= 0:
            raise InvalidArgumentError("masks", f"row {bad} does not have {n - s} True entries (s = {s} stragglers)")
    return S, F


def downdate(ctx: Any, S: np.ndarray, kappa_limit_sq: float) -> tuple[np.ndarray, np.ndarray]:
    """Column deletion for a ``(count, s)`` stack of straggler sets: ``(err, certified)``.

    ``ctx`` is an :class:`~gcsim.coding.kernels.EvalContext`; uncertified patterns have
    ``certified == False`` and an unspecified value.
    """
    fns = _functions()
    assert fns is not None
    count = S.shape[0]
    out = np.empty(count)
    ok = np.zeros(count, dtype=np.bool_)
    fns.downdate(
        np.ascontiguousarray(ctx.K),
        np.ascontiguousarray(ctx.Y),
        np.ascontiguousarray(ctx.V0),
        np.ascontiguousarray(ctx.Bs),
        np.ascontiguousarray(ctx.Gamma),
        np.ascontiguousarray(ctx.H),
        np.ascontiguousarray(S, dtype=np.int64),
        float(ctx.tau),
        float(ctx.delta_gray),
        float(ctx.kappa),
        float(kappa_limit_sq),
        float(np.linalg.norm(ctx.V0.T @ ctx.V0 - np.eye(ctx.V0.shape[1]))),
        float(ctx.err_full),
        out,
        ok,
    )
    return out, ok


def gram_solve(ctx: Any, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``tr(H_Fᵀ Γ_FF⁻¹ H_F)`` for a ``(count, f)`` stack by Cholesky: ``(value, factored)``."""
    fns = _functions()
    assert fns is not None
    count = F.shape[0]
    out = np.empty(count)
    ok = np.zeros(count, dtype=np.bool_)
    fns.gram_solve(
        np.ascontiguousarray(ctx.Gamma), np.ascontiguousarray(ctx.H), np.ascontiguousarray(F, dtype=np.int64), out, ok
    )
    return out, ok


def _build() -> SimpleNamespace:
    """Compile the loops (numba; cached on disk by numba after the first run)."""
    global _CHOL_RHS, _QR_PROJ, _GRAM_RES
    import numba
    from numba import types as nt

    if getattr(numba.config, "DISABLE_JIT", False):  # the loops would run as Python: the batched kernel is faster
        raise ImportError("NUMBA_DISABLE_JIT is set")

    f8, i8, b1 = nt.float64, nt.int64, nt.boolean
    # one explicit signature each (C-contiguous arrays): compiled, or loaded from numba's disk
    # cache, once, here
    mat, imat, vec, bvec = f8[:, ::1], i8[:, ::1], f8[::1], b1[::1]

    @numba.njit(f8(mat, i8, i8, i8), cache=True, nogil=True)
    def chol_rhs(A, o, s, m):  # pragma: no cover - compiled
        """Upper Cholesky ``A[o:s, o:s] = UᵀU`` in place, the ``m`` columns ``A[o:s, s:s+m]``
        overwritten by ``U⁻ᵀ`` times them; returns ``‖U⁻ᵀ Y‖_F²``, or -1 at a pivot <= 0 (or NaN).

        Only the upper triangle of ``A[o:s, o:s]`` is read.  Row operations only: each update
        is an axpy on a contiguous row piece (vectorizable without reassociation).
        """
        e = s + m
        total = 0.0
        for j in range(o, s):
            d = A[j, j]
            if not d > 0.0:
                return -1.0
            d = np.sqrt(d)
            A[j, j] = d
            for i in range(j + 1, e):
                A[j, i] /= d
            for i in range(s, e):
                total += A[j, i] * A[j, i]
            for k in range(j + 1, s):
                a = A[j, k]
                if a != 0.0:
                    for i in range(k, e):
                        A[k, i] -= a * A[j, i]
        return total

    _CHOL_RHS = chol_rhs

    @numba.njit(f8(mat, i8[::1], b1[::1], i8[::1], mat, vec, vec, i8), cache=True, nogil=True)
    def qr_proj(Bs, S, inF, fidx, C, hv, dw, m):  # pragma: no cover - compiled
        """``‖P_F T‖_F²`` by Householder QR of ``[B̃_F  T]`` (``F`` = the complement of ``S``), for a
        ``B̃_F`` of full column rank; -1 if a column of ``B̃_F`` is zero."""
        mN, n = Bs.shape
        N = mN // m
        s = S.shape[0]
        f = n - s
        for j in range(n):
            inF[j] = True
        for a in range(s):
            inF[S[a]] = False
        a = 0
        for j in range(n):
            if inF[j]:
                fidx[a] = j
                a += 1
        # C = [B̃_F  T] by rows (mN x (f + m)): the updates below run along rows
        for i in range(mN):
            for a in range(f):
                C[i, a] = Bs[i, fidx[a]]
            for l in range(m):
                C[i, f + l] = 0.0
        for l in range(m):  # T = I_m ⊗ 1_N
            for i in range(l * N, (l + 1) * N):
                C[i, f + l] = 1.0
        for j in range(f):
            alpha = C[j, j]
            xn2 = 0.0
            for i in range(j + 1, mN):
                xn2 += C[i, j] * C[i, j]
            if xn2 == 0.0:
                if alpha == 0.0:
                    return -1.0
                continue  # H = I
            beta = -np.copysign(np.sqrt(alpha * alpha + xn2), alpha)
            tj = (beta - alpha) / beta
            sc = 1.0 / (alpha - beta)
            hv[j] = 1.0
            for i in range(j + 1, mN):
                hv[i] = C[i, j] * sc
            C[j, j] = beta
            for a in range(j + 1, f + m):  # C <- (I - tj hv hvᵀ) C on the columns j+1..
                dw[a] = 0.0
            for i in range(j, mN):
                hi = hv[i]
                for a in range(j + 1, f + m):
                    dw[a] += hi * C[i, a]
            for a in range(j + 1, f + m):
                dw[a] *= tj
            for i in range(j, mN):
                hi = hv[i]
                for a in range(j + 1, f + m):
                    C[i, a] -= hi * dw[a]
        proj = 0.0
        for i in range(f):
            for l in range(m):
                proj += C[i, f + l] * C[i, f + l]
        return proj

    _QR_PROJ = qr_proj

    @numba.njit(f8(mat, mat, mat, i8[::1], i8, mat, mat), cache=True, nogil=True)
    def gram_residual(Gamma, H, Bs, fidx, m, A, X):  # pragma: no cover - compiled
        """``‖T - B̃_F X̂‖_F²`` with ``X̂`` from the normal equations ``Γ_FF X̂ = H_F`` (Cholesky),
        the residual formed explicitly (§40.3 (f)); -1 at a pivot <= 0."""
        mN = Bs.shape[0]
        N = mN // m
        f = fidx.shape[0]
        for a in range(f):
            ia = fidx[a]
            for b in range(a, f):
                A[a, b] = Gamma[ia, fidx[b]]
            for l in range(m):
                A[a, f + l] = H[ia, l]
        if _CHOL_RHS(A, 0, f, m) < 0.0:
            return -1.0
        for l in range(m):  # X̂ = U⁻¹ Z (Z = U⁻ᵀ H_F is in A[:, f:])
            for a in range(f - 1, -1, -1):
                acc = A[a, f + l]
                for b in range(a + 1, f):
                    acc -= A[a, b] * X[b, l]
                X[a, l] = acc / A[a, a]
        total = 0.0
        for i in range(mN):
            blk = i // N
            for l in range(m):
                r = 1.0 if blk == l else 0.0
                for a in range(f):
                    r -= Bs[i, fidx[a]] * X[a, l]
                total += r * r
        return total

    _GRAM_RES = gram_residual

    @numba.njit(nt.none(mat, mat, mat, mat, mat, mat, imat, f8, f8, f8, f8, f8, f8, vec, bvec), cache=True, nogil=True)
    def downdate_loop(K, Y, V0, Bs, Gamma, H, S, tau, delta_gray, kappa, limit_sq, eta, err_full, out, ok):  # noqa: E501  # pragma: no cover
        count, s = S.shape
        mN, n = Bs.shape
        m = Y.shape[1]
        k = V0.shape[1]
        f = n - s
        A = np.empty((s, s + m))
        # the orthogonal branch (rank-deficient B, V_0[S] of full column rank): [B̃_F  T]
        C = np.empty((mN, f + m))
        hv = np.empty(mN)
        dw = np.empty(f + m)
        inF = np.empty(n, dtype=np.bool_)
        fidx = np.empty(f, dtype=np.int64)
        Wt = np.empty((k, s))  # W = V0[S] stored by columns (row c of Wt = column c of W)
        th = np.empty(max(min(s, k), 1))  # Householder scalars
        p = np.empty(s)
        v = np.empty(s)
        w = np.empty(s)
        X = np.empty(max(min(s, k), 1))
        tau2 = tau * tau
        # the orthogonal branch is taken when it costs fewer flops than Lemma 2b
        # flops per pattern: Lemma 2b, the normal equations with an explicit residual, Householder QR
        cost_lemma = 6 * k * s * s + (s - k) ** 3 // 3
        cost_res = f**3 // 3 + 2 * f * f * m + 2 * mN * f * m
        use_res = 0 < k < s and 0 < f and cost_res < cost_lemma
        use_qr = 0 < k < s and 2 * mN * f * (f + m) < cost_lemma
        # the normal equations are used when kappa/delta <= kmax makes their second-order error
        # (kappa/delta)^4 f^2 (mN + f)^2 u^2 mN at most the first-order p u (kappa/delta) mN (§40.3 (f))
        kmax = (max(mN, n) / (100.0 * f * f * (mN + f) ** 2 * 2.0**-53)) ** (1.0 / 3.0) if f > 0 else 1.0
        # their certificate: Cholesky of WᵀW - shift I, shift = theta² + (rounding of the test); WᵀW
        # summed over S, or as I - V_0[F]ᵀV_0[F] when |F| < s (then V_0's departure from
        # orthonormality, eta = ‖V_0ᵀV_0 - I‖_F as computed, and its rounding count as well)
        theta = max(delta_gray, kappa / limit_sq, kappa / kmax)
        from_f = f < s
        u = 2.0**-53
        if from_f:
            shift = theta * theta + 4.0 * k * (f + 2 * k + 3) * u + 2.0 * eta + 4.0 * n * k * u
        else:
            shift = theta * theta + 4.0 * k * (s + 2 * k + 3) * u
        M = np.empty((k, k))
        AF = np.empty((max(f, 1), f + m))
        XF = np.empty((max(f, 1), m))
        for c in range(count):
            idx = S[c]
            if use_res:
                for j in range(n):
                    inF[j] = True
                for a in range(s):
                    inF[idx[a]] = False
                a = 0
                for j in range(n):
                    if inF[j]:
                        fidx[a] = j
                        a += 1
                for a in range(k):
                    for b in range(a, k):
                        M[a, b] = 0.0
                rows = fidx if from_f else idx
                for i in range(rows.shape[0]):
                    ri = rows[i]
                    for a in range(k):
                        wa = V0[ri, a]
                        for b in range(a, k):
                            M[a, b] += wa * V0[ri, b]
                if from_f:
                    for a in range(k):
                        for b in range(a, k):
                            M[a, b] = -M[a, b]
                        M[a, a] += 1.0
                for a in range(k):
                    M[a, a] -= shift
                if _CHOL_RHS(M, 0, k, 0) >= 0.0:  # delta >= theta: V_0[S] of full column rank
                    val = _GRAM_RES(Gamma, H, Bs, fidx, m, AF, XF)
                    if val >= 0.0:
                        out[c] = val
                        ok[c] = True
                        continue
            # --- rank of W = V0[S] by Householder QR with column pivoting (LAPACK geqp3 layout:
            # R above the diagonal of Wt, the reflector j in Wt[j, j+1:])
            rho = 0
            if k > 0:
                for col in range(k):
                    for i in range(s):
                        Wt[col, i] = V0[idx[i], col]
                for j in range(min(s, k)):
                    rest = 0.0  # Frobenius² of the part not yet factored
                    best = j
                    bestn = -1.0
                    for col in range(j, k):
                        nn = 0.0
                        for i in range(j, s):
                            nn += Wt[col, i] * Wt[col, i]
                        rest += nn
                        if nn > bestn:
                            best, bestn = col, nn
                    if rest <= tau2:
                        break  # everything left counts as zero (all its singular values <= tau)
                    if best != j:
                        for i in range(s):
                            tmp = Wt[j, i]
                            Wt[j, i] = Wt[best, i]
                            Wt[best, i] = tmp
                    alpha = Wt[j, j]
                    xn2 = 0.0
                    for i in range(j + 1, s):
                        xn2 += Wt[j, i] * Wt[j, i]
                    if xn2 == 0.0:
                        th[j] = 0.0  # H = I; R[j, j] = alpha != 0 (bestn > 0)
                    else:
                        beta = -np.copysign(np.sqrt(alpha * alpha + xn2), alpha)
                        th[j] = (beta - alpha) / beta
                        sc = 1.0 / (alpha - beta)
                        for i in range(j + 1, s):
                            Wt[j, i] *= sc
                        Wt[j, j] = beta
                        for col in range(j + 1, k):  # apply H_j to the remaining columns
                            dv = Wt[col, j]
                            for i in range(j + 1, s):
                                dv += Wt[j, i] * Wt[col, i]
                            dv *= th[j]
                            Wt[col, j] -= dv
                            for i in range(j + 1, s):
                                Wt[col, i] -= dv * Wt[j, i]
                    rho = j + 1
                # (a loop that runs to min(s, k) leaves no rows or no columns: nothing dropped)
                # --- certificate of the kept part: 1/‖R11⁻¹‖_F <= sigma_min(R11) = delta
                if rho > 0:
                    inv2 = 0.0
                    for b in range(rho):  # column b of R11⁻¹ by back substitution
                        for a in range(b, -1, -1):
                            acc = 1.0 if a == b else 0.0
                            for q in range(a + 1, b + 1):
                                acc -= Wt[q, a] * X[q]
                            X[a] = acc / Wt[a, a]
                            inv2 += X[a] * X[a]
                    if not inv2 * delta_gray * delta_gray <= 1.0:
                        continue  # delta may be below 1e3 tau: not certain
                    if rho < s and not kappa * kappa * inv2 <= limit_sq * limit_sq:
                        continue  # kappa/delta may exceed the limit: the null-space basis is inaccurate
            if rho == s:  # rank(B_F) = rank(B)
                out[c] = err_full
                ok[c] = True
                continue
            if k > 0 and rho == k and use_qr:
                # V_0[S] has full column rank (certified above): the orthogonal branch, Lemma 5
                proj = _QR_PROJ(Bs, idx, inF, fidx, C, hv, dw, m)
                if proj >= 0.0:
                    out[c] = mN - proj
                    ok[c] = True
                continue
            # --- G = Qᵀ K_SS Q and Qᵀ Y_S (Q = H_0 ... H_{rho-1}); keep the trailing d x d block
            for a in range(s):
                ia = idx[a]
                # the reflectors need the whole symmetric block; Cholesky alone reads the upper part
                for b in range(a if rho == 0 else 0, s):
                    A[a, b] = K[ia, idx[b]]
                for l in range(m):
                    A[a, s + l] = Y[ia, l]
            for j in range(rho):
                t = th[j]
                if t == 0.0:
                    continue
                # H_j = I - t v vᵀ, v = (1, Wt[j, j+1:]) on rows j..s-1: A <- H A H, Y <- H Y
                v[j] = 1.0
                for i in range(j + 1, s):
                    v[i] = Wt[j, i]
                for i in range(j, s):
                    p[i] = 0.0
                for b in range(j, s):  # p = t A v (A symmetric: a sum of rows)
                    vb = v[b]
                    for i in range(j, s):
                        p[i] += vb * A[b, i]
                pv = 0.0
                for i in range(j, s):
                    p[i] *= t
                    pv += p[i] * v[i]
                half = 0.5 * t * pv
                for i in range(j, s):  # H A H = A - v wᵀ - w vᵀ, w = p - (t/2)(p.v) v
                    w[i] = p[i] - half * v[i]
                for a in range(j, s):
                    va = v[a]
                    wa = w[a]
                    for b in range(j, s):
                        A[a, b] -= va * w[b] + wa * v[b]
                for l in range(m):
                    dv = 0.0
                    for a in range(j, s):
                        dv += v[a] * A[a, s + l]
                    dv *= t
                    for a in range(j, s):
                        A[a, s + l] -= dv * v[a]
            val = _CHOL_RHS(A, rho, s, m)
            if val >= 0.0:
                out[c] = err_full + val
                ok[c] = True

    @numba.njit(nt.none(mat, mat, imat, vec, bvec), cache=True, nogil=True)
    def gram_loop(Gamma, H, F, out, ok):  # pragma: no cover - compiled
        count, f = F.shape
        m = H.shape[1]
        A = np.empty((f, f + m))
        for c in range(count):
            idx = F[c]
            for a in range(f):
                ia = idx[a]
                for b in range(a, f):
                    A[a, b] = Gamma[ia, idx[b]]
                for l in range(m):
                    A[a, f + l] = H[ia, l]
            val = _CHOL_RHS(A, 0, f, m)
            if val >= 0.0:
                out[c] = val
                ok[c] = True

    @numba.njit(i8(nt.boolean[:, ::1], imat, imat), cache=True, nogil=True)
    def split_loop(masks, S, F):  # pragma: no cover - compiled
        count, n = masks.shape
        s = S.shape[1]
        for c in range(count):
            a = 0
            b = 0
            for j in range(n):
                if masks[c, j]:
                    if b < n - s:  # no write past the row (a row with the wrong count is refused)
                        F[c, b] = j
                    b += 1
                else:
                    if a < s:
                        S[c, a] = j
                    a += 1
            if a != s:
                return c
        return -1

    return SimpleNamespace(downdate=downdate_loop, gram_solve=gram_loop, split=split_loop)
