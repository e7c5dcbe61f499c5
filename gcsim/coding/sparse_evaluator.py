"""Sparse evaluator: RD encoders on any sparse assignment, certified per pattern (docs/theory.md §44).

For an RD encoder (block ``l`` of ``B`` is ``A diag(d_l)``, theory §5.4) on a 0/1 assignment
``A`` (``N`` parts x ``n`` workers) the Gram matrix is the Hadamard product
``Γ = BᵀB = (AᵀA) ∘ (U Uᵀ)`` and ``H = BᵀT = diag(k_j) U`` (``k_j`` the load of worker ``j``,
``U`` the ``n x m`` diagonals; Lemma 44.1).  Neither needs a dense matrix: ``Γ_FF x`` is
``Σ_l D_l A_Fᵀ A_F D_l x``, two sparse products.  Per pattern a Jacobi-preconditioned block
conjugate-gradient solve of ``Γ_FF X = H_F`` gives ``X``, and Theorem 44.2 encloses the error:

.. math::
   Q(X) - \\frac{\\|S R\\|_F^2}{c} \\le \\mathrm{err}(B, F) \\le Q(X),\\qquad
   Q(X) = \\|B_F X - T\\|_F^2,\\quad R = B_F^\\top (T - B_F X),

with ``S = diag(1/‖u_j‖)`` and ``c`` a proved lower bound on ``λ_min(S Γ S)`` over the workers with
``u_j ≠ 0`` (Lemma 44.3: from the algebra, ``c = λ_min(AᵀA) min_j s_j²‖u_j‖²`` with ``λ_min(AᵀA)``
exact for a strongly regular graph or a design with ``AᵀA = aI + λJ``; or, where an ``n x n``
matrix fits, from a floating-point Cholesky factorization of ``SΓS − τI``, Lemma 44.4).  The
rounding errors of ``Q`` and ``R`` are bounded as they are computed (Theorem 44.2), so every
returned value carries a proved half-width; a value is *certified* when its half-width is at
most ``max(SPARSE_RTOL · value, SPARSE_ATOL · mN)`` (``1e-11`` and ``1e-13``: far inside the
``2.2e-8 mN`` class of the other ``"auto"`` routes).  An uncertified pattern (no ``c > 0``, or
CG did not converge within :data:`MAX_ITERATIONS`) goes to the dense kernels when ``B`` can be
formed, and is refused with :class:`~gcsim.errors.SizeLimitError` naming its half-width otherwise.

Entry points: :class:`SparseRDContext` (masks -> errors, the API the Monte Carlo and the advisor
call), :func:`sparse_context` (a dense :class:`~gcsim.coding.Scheme` recognised exactly: the route
:func:`gcsim.coding.structured.structured_context` tries when the assignment has no pair Gram
``aI + λJ``) and the proved lower bounds :func:`srg_gram_lower`, :func:`gram_lower_cholesky`.
Encoders kept sparse and sparse strongly regular graphs are in :mod:`gcsim.coding.sparse_routes`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .. import limits
from .._validation import check_bool, check_dense_size, check_int
from ..errors import InvalidArgumentError, SizeLimitError
from ._pcg import jacobi_pcg
from .kernels import eval_context, optimal_errors

__all__ = [
    "SparseRDContext",
    "PatternResult",
    "sparse_context",
    "srg_gram_lower",
    "gram_lower_cholesky",
    "SPARSE_RTOL",
    "SPARSE_ATOL",
    "MAX_ITERATIONS",
    "SPARSE_MIN_N",
    "SPARSE_MAX_DENSITY",
]

_U = float(np.finfo(np.float64).eps) / 2  # unit roundoff 2^-53

#: Certified when the proved half-width is at most ``SPARSE_RTOL · value`` ...
SPARSE_RTOL = 1e-10
#: ... or at most ``SPARSE_ATOL · mN`` (errors near zero).
SPARSE_ATOL = 1e-14
#: CG iterations per pattern before it is declared uncertified (dense kernels or refusal).
MAX_ITERATIONS = 500
#: A dense :class:`~gcsim.coding.Scheme` is evaluated sparsely by ``"auto"`` from this many workers ...
SPARSE_MIN_N = 512
#: ... when at most this fraction of its assignment's entries are non-zero.
SPARSE_MAX_DENSITY = 0.1

# (patterns x n x m²) float64 work arrays of one batch stay near 32 MiB
_BATCH_BYTES = 32 * 2**20


def _gamma(t: int) -> float:
    tu = t * _U
    return tu / (1.0 - tu) if tu < 0.5 else float("inf")


def _up(x: float, t: int) -> float:
    """An upper bound of the exact value of a non-negative sum of ``t`` computed terms, from its computed value.

    For non-negative terms ``fl(Σ) >= (1 − γ_t) Σ`` (Higham Thm 3.1), so ``Σ <= fl(Σ) (1 + 2γ_t)``
    while ``γ_t <= 1/2`` (theory §44.2, "safe sums").
    """
    return float(x) * (1.0 + 2.0 * _gamma(t + 1))


# ----------------------------------------------------------------------------------------------
# lower bounds on λ_min(SΓS)
# ----------------------------------------------------------------------------------------------


def _sqrt_bracket(d: int, bits: int = 80) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= √d <= hi`` with ``hi − lo = 2^-bits`` (exact integer square root)."""
    r = math.isqrt(d << (2 * bits))
    return Fraction(r, 1 << bits), Fraction(r + 1, 1 << bits)


def srg_gram_lower(v: int, k: int, lam: int, mu: int, closed: bool) -> float:
    """A proved lower bound on ``λ_min(AᵀA)`` for an SRG(v, k, λ, μ) assignment (theory Lemma 44.3).

    ``A = Adj + I`` (``closed``) or ``Adj``: ``AᵀA = A²`` has the eigenvalues ``(1 + θ)²`` or
    ``θ²`` over the adjacency eigenvalues ``θ ∈ {k, r, s}``, ``r, s = (λ − μ ± √Δ)/2``,
    ``Δ = (λ − μ)² + 4(k − μ)`` (BvM §1.1; every one has positive multiplicity).  The square root
    is bracketed in exact rationals; the result is rounded down.  ``0.0`` when an eigenvalue of
    ``A`` is (or may be) zero.

    Examples
    --------
    >>> srg_gram_lower(10000, 198, 98, 2, True)   # L(100) closed: s = -2, (1 + s)² = 1
    1.0
    >>> srg_gram_lower(10, 3, 0, 1, False)        # Petersen, A = Adj: min(θ²) = 1
    1.0
    """
    closed = check_bool("closed", closed)
    v, k, lam, mu = (check_int(name, x, minimum=0) for name, x in (("v", v), ("k", k), ("lam", lam), ("mu", mu)))
    disc = (lam - mu) ** 2 + 4 * (k - mu)
    lo, hi = _sqrt_bracket(disc)
    base = Fraction(2 * (1 if closed else 0) + lam - mu)  # 2(shift + θ) = base ± √Δ for θ = r, s
    intervals = [
        (Fraction(2 * (k + (1 if closed else 0))),) * 2,  # θ = k
        (base + lo, base + hi),  # θ = r
        (base - hi, base - lo),  # θ = s
    ]
    best = min(Fraction(0) if a <= 0 <= b else min(a * a, b * b) for a, b in intervals) / 4
    val = float(best)  # rounds to nearest: step down when that is above the exact value
    if Fraction(val) > best:
        val = float(np.nextafter(val, 0.0))
    return max(0.0, val)


def _scaled_gram(A: sp.csc_matrix, U: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Dense ``Ĉ = fl(S Γ S)`` for ``Γ = (AᵀA) ∘ (UUᵀ)`` (the caller checks the size)."""
    G = (A.T @ A).toarray().astype(np.float64)  # integers, exact
    V = U * s[:, None]
    return G * (V @ V.T)


def gram_lower_cholesky(A: Any, U: np.ndarray) -> float:
    """A proved lower bound on ``λ_min(S Γ S)``, ``S = diag(1/‖u_j‖)``, from a Cholesky factorization (Lemma 44.4).

    Only the workers with ``u_j ≠ 0`` count (the others are zero columns of ``B``).  Forms the
    dense ``n x n`` matrix (refused beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`), estimates
    ``λ_min`` with LAPACK, sets ``τ = λ̂/2`` and factors ``Ĉ − τI``; success proves
    ``λ_min >= τ − γ_{n+1}/(1 − γ_{n+1}) tr(Ĉ − τI) − ‖Ĉ − C‖₂``.  ``0.0`` when this proves nothing.

    Examples
    --------
    >>> A = sp.csc_matrix(np.eye(3, dtype=np.int64))
    >>> round(gram_lower_cholesky(A, np.ones((3, 2))), 6)
    0.5
    """
    A = sp.csc_matrix(A, dtype=np.int64)
    U = np.asarray(U, dtype=np.float64)
    keep = np.flatnonzero(np.linalg.norm(U, axis=1) > 0)
    n = keep.size
    if n == 0:
        return float("inf")
    check_dense_size("A", n, n, "the n x n matrix SΓS of the sparse route's Cholesky certificate")
    Ak, Uk = A[:, keep], U[keep]
    s = 1.0 / np.linalg.norm(Uk, axis=1)
    C = _scaled_gram(Ak, Uk, s)
    m = U.shape[1]
    # ‖Ĉ − C‖₂ <= ‖|Ĉ − C|‖_∞ with |Ĉ − C| <= γ_{m+3} (AᵀA)∘(|V||V|ᵀ) entrywise (V = SU)
    Va = np.abs(Uk * s[:, None])
    E = (Ak.T @ Ak).toarray().astype(np.float64) * (Va @ Va.T)
    # |Ĉ − C| <= γ_{m+5} (AᵀA)∘(|V̂||V̂|ᵀ), V̂ = fl(SU); ‖·‖₂ <= max row sum (symmetric, non-negative)
    err_c = _gamma(m + 5) * _up(float(np.max(E.sum(axis=1))), n + m)
    del E
    # λ̂ ≈ λ_min(Ĉ) from above: a few inverse power steps with a Cholesky factor of Ĉ (an estimate only)
    try:
        L = sla.cho_factor(C, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return 0.0
    x = np.random.default_rng(0).standard_normal(n)
    for _ in range(30):
        x = sla.cho_solve(L, x / np.linalg.norm(x), check_finite=False)
    lam_hat = 1.0 / float(np.linalg.norm(x) / 1.0) if np.all(np.isfinite(x)) else 0.0
    del L
    trace = _up(float(np.sum(np.abs(np.diag(C)))), n)
    g = _gamma(n + 1)
    tau = lam_hat / 2
    for _ in range(4):  # the estimate may sit above λ_min: shrink τ until the factorization succeeds
        if not tau > 0:
            return 0.0
        M = C - tau * np.eye(n)
        # the diagonal subtraction rounds once: |fl(c_jj − τ) − (c_jj − τ)| <= u |c_jj − τ|
        err_d = _U * float(np.max(np.abs(np.diag(M))))
        try:
            sla.cholesky(M, lower=False, check_finite=False, overwrite_a=True)
        except np.linalg.LinAlgError:
            tau /= 8
            continue
        return max(0.0, tau - g / (1.0 - g) * trace - err_c - err_d)
    return 0.0


# ----------------------------------------------------------------------------------------------
# the context
# ----------------------------------------------------------------------------------------------


class PatternResult(NamedTuple):
    """Values and proved half-widths of a batch of patterns (``certified``: half-width within the target)."""

    values: np.ndarray
    halfwidths: np.ndarray
    certified: np.ndarray
    iterations: np.ndarray


class SparseRDContext:
    """Precomputed data of the sparse route (theory §44): the sparse ``A``, the diagonals, the bound ``c``.

    Parameters
    ----------
    A : scipy.sparse matrix (N, n)
        0/1 assignment (parts x workers).
    D : numpy.ndarray (m, n)
        The RD diagonals (block ``l`` of ``B`` is ``A diag(D[l])``).
    lower : float
        A proved lower bound ``c`` on ``λ_min(SΓS)`` over the workers with ``u_j ≠ 0``
        (:func:`srg_gram_lower` times ``min s_j²‖u_j‖²``, or :func:`gram_lower_cholesky`); ``0``
        certifies nothing.
    source : str
        Where ``c`` comes from (shown in messages).
    fallback : callable, optional
        ``masks -> raw errors`` by the dense kernels, for patterns that are not certified;
        without it such patterns raise :class:`~gcsim.errors.SizeLimitError`.

    Examples
    --------
    >>> A = sp.csc_matrix(np.eye(4, dtype=np.int64))      # each worker holds its own part
    >>> ctx = SparseRDContext(A, np.ones((1, 4)), 1.0, "identity")
    >>> ctx.errors(np.array([[True, True, True, False], [False] * 4])).round(12).tolist()
    [1.0, 4.0]
    """

    def __init__(
        self,
        A: Any,
        D: np.ndarray,
        lower: float,
        source: str,
        fallback: Callable[[np.ndarray], np.ndarray] | None = None,
        gram: tuple[Any, float] | None = None,
    ):
        A = sp.csc_matrix(A, dtype=np.float64)
        D = np.asarray(D, dtype=np.float64)
        self.N, self.n = A.shape
        self.m = int(D.shape[0])
        if D.shape != (self.m, self.n) or not np.all(np.isfinite(D)):
            raise InvalidArgumentError("D", f"must be a finite ({self.m}, {self.n}) array, got shape {D.shape}")
        self.A = A.tocsr()
        self.At = A.T.tocsr()
        self.D = D
        self.U = np.ascontiguousarray(D.T)
        self.mN = self.m * self.N
        self.total = float(self.mN)
        self.lower = float(lower)
        self.source = str(source)
        self.fallback = fallback
        self.certified = self.lower > 0
        norms = np.linalg.norm(self.U, axis=1)
        self.nonzero = norms > 0
        self.s = np.zeros(self.n)
        self.s[self.nonzero] = 1.0 / norms[self.nonzero]
        self.load = np.asarray(np.abs(A).sum(axis=0)).ravel()  # k_j (exact integers)
        self.r_max = int(np.max(np.diff(self.A.indptr))) if self.N else 0  # largest part replication
        self.k_max = int(np.max(self.load)) if self.n else 0
        # Jacobi preconditioner: diag(Γ)_jj = k_j ‖u_j‖²
        diag = self.load * norms**2
        self.pinv = np.zeros(self.n)
        ok = diag > 0
        self.pinv[ok] = 1.0 / diag[ok]
        self.last_iterations = 0
        self.s_max = float(np.max(self.s)) * (1 + 2 * _gamma(2)) if self.n else 0.0
        # β >= ‖|B|‖₂ >= ‖|B_F|‖₂: ‖M‖₂² <= ‖M‖₁ ‖M‖_∞ (column and row sums of |B|, safe sums)
        absD = np.abs(D)
        col = float(np.max(self.load * absD.sum(axis=0))) if self.n else 0.0
        row = float(max(np.max(np.abs(self.A) @ absD[l]) for l in range(self.m))) if self.N and self.n else 0.0
        self.beta = math.sqrt(_up(col, self.m + 1) * _up(row, self.r_max)) * (1 + 2 * _gamma(3))
        # AᵀA = S + μJ with S sparse (Lemma 44.1): Γ_FF x = Σ_l D_l S D_l x + μ U_F U_Fᵀ x, one product
        if gram is None:
            gram = _gram_split(A)
        self.S = None if gram is None else sp.csr_matrix(gram[0], dtype=np.float64)
        self.mu = 0.0 if gram is None else float(gram[1])
        # Σ_l D_l S D_l = S ∘ (UUᵀ), one sparse matrix: a CG step is one product with m columns a pattern
        self.GS = None
        if self.S is not None:
            GS = self.S.copy()
            rows = np.repeat(np.arange(self.n), np.diff(GS.indptr))
            GS.data = GS.data * np.einsum("ij,ij->i", self.U[rows], self.U[GS.indices])
            self.GS = GS

    # -- the operator ----------------------------------------------------------------------
    def _apply_B(self, X: np.ndarray, Dm: np.ndarray) -> np.ndarray:
        """``B_F X`` for a batch: X (P, n, m), Dm (P, m, n) masked diagonals -> (P, m, N, m)."""
        P, n, m = X.shape
        Z = Dm[:, :, :, None] * X[:, None, :, :]  # (P, l, n, m)
        Zt = np.ascontiguousarray(Z.transpose(2, 0, 1, 3).reshape(n, P * m * m))
        Y = self.A @ Zt  # (N, P*m*m)
        return Y.reshape(self.N, P, m, m).transpose(1, 2, 0, 3)

    def _apply_Bt(self, Y: np.ndarray, Dm: np.ndarray) -> np.ndarray:
        """``B_Fᵀ Y``: Y (P, m, N, m) -> (P, n, m)."""
        P, m, N, c = Y.shape
        Yt = np.ascontiguousarray(Y.transpose(2, 0, 1, 3).reshape(N, P * m * c))
        Z = (self.At @ Yt).reshape(self.n, P, m, c).transpose(1, 2, 0, 3)  # (P, l, n, c)
        return np.einsum("pln,plnc->pnc", Dm, Z)

    def _gram(self, X: np.ndarray, Dm: np.ndarray, f: np.ndarray) -> np.ndarray:
        """``Γ_FF X`` for a batch (P, n, m) supported on ``F'``: ``P_F (S∘UUᵀ) X + μ U_F U_Fᵀ X`` or ``B_Fᵀ(B_F X)``."""
        if self.GS is None:
            return self._apply_Bt(self._apply_B(X, Dm), Dm)
        P, n, m = X.shape
        Zt = np.ascontiguousarray(X.transpose(1, 0, 2).reshape(n, P * m))
        out = (self.GS @ Zt).reshape(n, P, m).transpose(1, 0, 2) * f[:, :, None]
        if self.mu:
            out += self.mu * np.matmul(Dm.transpose(0, 2, 1), np.matmul(Dm, X))  # μ U_F (U_Fᵀ X)
        return out

    # -- one batch ---------------------------------------------------------------------------
    def _certify(self, X: np.ndarray, Dm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Enclosure of Theorem 44.2 with the rounding bounds of Lemma 44.5: (midpoint, half-width) per pattern."""
        P, n, m = X.shape
        N = self.N
        T = np.zeros((m, N, m))
        T[np.arange(m), :, np.arange(m)] = 1.0
        E = self._apply_B(X, Dm) - T[None]  # ê = fl(fl(B_F X) − T)
        R = -self._apply_Bt(E, Dm)  # R̂ = fl(−B_Fᵀ ê)
        beta = self.beta
        # ‖ê − e‖_F <= γ_{r+1} (β ‖X‖_F + ‖T‖_F)
        nX = np.sqrt(_up_arr(np.einsum("pnc,pnc->p", X, X), n * m))
        n_eps = _gamma(self.r_max + 1) * (beta * nX + math.sqrt(self.mN)) * (1 + 2 * _gamma(3))
        Qhat = np.array([math.fsum(e.ravel() ** 2) for e in E])  # correctly rounded sum of the squares
        nE = np.sqrt(Qhat * (1 + 2 * _gamma(3)))
        dQ = (2 * _gamma(2) * Qhat + n_eps * (2 * nE + n_eps)) * (1 + 2 * _gamma(4))
        # ‖R̂ − R‖_F <= β (‖ê − e‖_F + γ_{k+m} ‖ê‖_F); ‖S(R̂ − R)‖ <= s_max ‖R̂ − R‖
        dR = self.s_max * beta * (n_eps + _gamma(self.k_max + m) * nE) * (1 + 2 * _gamma(4))
        sR = R * self.s[None, :, None]
        nR = np.sqrt(_up_arr(np.einsum("pnc,pnc->p", sR, sR), n * m + 2))
        rho = nR + dR
        gap = rho * rho / self.lower * (1 + 2 * _gamma(4)) if self.lower > 0 else np.full(P, np.inf)
        lo = Qhat - dQ - gap
        hi = Qhat + dQ
        return 0.5 * (lo + hi), 0.5 * (hi - lo)

    def _batch(self, masks: np.ndarray) -> PatternResult:
        P = masks.shape[0]
        n, m = self.n, self.m
        f = (masks & self.nonzero[None, :]).astype(np.float64)  # F' (zero columns dropped exactly)
        Dm = f[:, None, :] * self.D[None, :, :]  # (P, m, n)
        H = (self.load[None, :, None] * self.U[None, :, :]) * f[:, :, None]  # diag(k_j) U on F'
        Minv = (self.pinv[None, :] * f)[:, :, None]
        X = np.zeros((P, n, m))
        R = H.copy()
        Z = Minv * R
        rz = np.einsum("pnc,pnc->pc", R, Z)
        iters = np.zeros(P, dtype=np.int64)
        vals = np.zeros(P)
        hws = np.full(P, np.inf)
        cert = np.zeros(P, dtype=bool)
        target_abs = SPARSE_ATOL * self.mN
        check_every = 25

        def stop(it: int, idx: Any) -> np.ndarray:
            """Retire the patterns whose enclosure is within the target (checked when the estimates promise it)."""
            iters[idx] = it
            # recurrence estimates: gap ≈ ‖S R‖²/c, value ≈ mN − tr(HᵀX); certify when they promise success
            sr = np.einsum("pnc,pnc->p", R[idx] * self.s[None, :, None], R[idx] * self.s[None, :, None])
            est = self.mN - np.einsum("pnc,pnc->p", H[idx], X[idx])
            promise = sr / max(self.lower, 1e-300) <= 0.01 * np.maximum(SPARSE_RTOL * np.maximum(est, 0), target_abs)
            if not (promise.all() or it % check_every == 0 or it == MAX_ITERATIONS):
                return np.zeros(promise.size, dtype=bool)
            v, h = self._certify(X[idx], Dm[idx])
            vals[idx], hws[idx] = v, h
            ok = h <= np.maximum(SPARSE_RTOL * np.maximum(v, 0.0), target_abs)
            cert[idx] = ok
            return ok

        def gram(Pi: np.ndarray, idx: Any) -> np.ndarray:
            return self._gram(Pi, Dm[idx], f[idx])

        it = jacobi_pcg(gram, Minv, X, R, stop, max_iter=MAX_ITERATIONS, batched=True, P=Z.copy(), rz=rz)
        active = ~cert
        if active.any():
            idx = np.flatnonzero(active)
            v, h = self._certify(X[idx], Dm[idx])
            vals[idx], hws[idx] = v, h
            cert[idx] = h <= np.maximum(SPARSE_RTOL * np.maximum(v, 0.0), target_abs)
        self.last_iterations = it
        return PatternResult(vals, hws, cert, iters)

    def evaluate(self, masks: np.ndarray) -> PatternResult:
        """Values, proved half-widths, certification and CG iterations of a ``(count, n)`` mask stack.

        No fallback: uncertified patterns are returned as they are (``certified`` False).
        """
        masks = np.asarray(masks, dtype=bool)
        if masks.ndim != 2 or masks.shape[1] != self.n:
            raise InvalidArgumentError("masks", f"must have shape (count, {self.n}), got {masks.shape}")
        count = masks.shape[0]
        step = max(1, _BATCH_BYTES // (8 * max(self.n, self.N) * self.m * self.m * 3))
        parts = [self._batch(masks[a : a + step]) for a in range(0, count, step)]
        if not parts:
            z = np.zeros(0)
            return PatternResult(z, z, np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64))
        return PatternResult(*(np.concatenate([getattr(p, f) for p in parts]) for f in PatternResult._fields))

    def errors(self, masks: np.ndarray, xp: Any = None) -> np.ndarray:
        """Raw errors ``err(B, F)`` of a ``(count, n)`` mask stack, each certified (module docstring).

        Uncertified patterns go to ``fallback`` (the dense kernels); without one they raise
        :class:`~gcsim.errors.SizeLimitError` naming the proved half-width.
        """
        res = self.evaluate(masks)
        out = res.values.copy()
        bad = np.flatnonzero(~res.certified)
        if bad.size:
            if self.fallback is None:
                j = int(bad[0])
                raise SizeLimitError(
                    "scheme",
                    f"the sparse route (theory §44) certifies {bad.size} of {out.size} patterns only to a half-width "
                    f"of {res.halfwidths[j]:.3g} (target max({SPARSE_RTOL:g} err, {SPARSE_ATOL:g} mN); λ_min bound "
                    f"c = {self.lower:.3g} from {self.source}, {int(res.iterations[j])} CG iterations), and B is "
                    "too large for the dense kernels",
                    requested=self.mN * self.n,
                    limit=limits.MAX_DENSE_ENTRIES,
                    limit_name="MAX_DENSE_ENTRIES",
                )
            out[bad] = self.fallback(np.asarray(masks, dtype=bool)[bad])
        return out

    def errors_for_sets(self, S: np.ndarray) -> np.ndarray:
        """Raw errors of the patterns with straggler index sets ``S`` (``(count, s)``)."""
        S = np.asarray(S, dtype=np.int64)
        mk = np.ones((S.shape[0], self.n), dtype=bool)
        if S.size:
            np.put_along_axis(mk, S, False, axis=1)
        return self.errors(mk)


def _gram_split(A: sp.spmatrix) -> tuple[sp.csr_matrix, float] | None:
    """``(S, μ)`` with ``AᵀA = S + μJ``, ``μ`` the smallest off-diagonal entry, if ``S`` is sparse; else None."""
    A = sp.csr_matrix(A)
    n = A.shape[1]
    pairs = int(np.sum(np.diff(A.indptr).astype(np.int64) ** 2))  # >= nnz(AᵀA)
    if pairs <= 4 * A.nnz:
        return sp.csr_matrix(A.T @ A), 0.0
    if n * n > 2**24:
        return None
    G = (A.T @ A).tocsr()
    if n < 2 or G.nnz < n * n:
        return (G, 0.0) if G.nnz <= 4 * A.nnz else None
    Gd = G.toarray()
    off = Gd[~np.eye(n, dtype=bool)]
    mu = float(off.min())
    S = sp.csr_matrix(Gd - mu)
    return (S, mu) if S.nnz <= 4 * A.nnz else None


def _up_arr(x: np.ndarray, t: int) -> np.ndarray:
    return np.asarray(x) * (1.0 + 2.0 * _gamma(t + 1))


def _dense_fallback(scheme: Any) -> Callable[[np.ndarray], np.ndarray]:
    def run(masks: np.ndarray) -> np.ndarray:
        ctx = eval_context(scheme)
        return np.clip(optimal_errors(ctx, masks, method="auto"), 0.0, ctx.total)

    return run


def sparse_context(scheme: Any, A: np.ndarray, D: np.ndarray) -> SparseRDContext | None:
    """The sparse route's context for a dense RD scheme whose ``B`` is exactly ``A diag(d_l)`` stacked.

    Taken by ``"auto"`` when ``n >= SPARSE_MIN_N``, at most ``SPARSE_MAX_DENSITY`` of ``A`` is
    non-zero and the Cholesky certificate proves ``c > 0``; uncertified patterns go to the dense
    kernels.  None otherwise.
    """
    N, n = A.shape
    if n < SPARSE_MIN_N or np.count_nonzero(A) > SPARSE_MAX_DENSITY * N * n:
        return None
    S = sp.csc_matrix(A, dtype=np.int64)
    try:
        lower = gram_lower_cholesky(S, D.T)
    except SizeLimitError:
        return None
    if not lower > 0:
        return None
    return SparseRDContext(S, D, lower, "Cholesky certificate", _dense_fallback(scheme))
