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
call), :func:`encode_sparse` (an RD encoder kept as a sparse incidence, for SRGs, coset and
bi-regular graphs, designs), :func:`sparse_context` (a dense :class:`~gcsim.coding.Scheme`
recognised exactly), and sparse strongly regular graphs at ``n ≈ 10⁴`` that no dense matrix
holds: :func:`lattice_graph_sparse` (``L(100)``: 10,000 workers), :func:`triangular_graph_sparse`
(``T(141)``: 9,870 workers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple, TypeGuard

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .. import limits
from .._validation import check_bool, check_dense_size, check_int, check_real, layout_version_problem
from ..combinatorics.srg_graph import SRGParams
from ..errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError
from ..limits import check_entries
from . import structured as _structured
from .encoders._common import diagonals as _draw_diagonals
from .kernels import eval_context, optimal_errors
from .structured import StructuredRD, _as_incidence, check_pair_gram

__all__ = [
    "SparseRDContext",
    "SparseRD",
    "SparseSRG",
    "SPARSE_SRG_KIND",
    "encode_sparse",
    "sparse_context",
    "srg_gram_lower",
    "gram_lower_cholesky",
    "lattice_graph_sparse",
    "triangular_graph_sparse",
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
        Pd = Z.copy()
        rz = np.einsum("pnc,pnc->pc", R, Z)
        iters = np.zeros(P, dtype=np.int64)
        active = np.ones(P, dtype=bool)
        vals = np.zeros(P)
        hws = np.full(P, np.inf)
        cert = np.zeros(P, dtype=bool)
        target_abs = SPARSE_ATOL * self.mN
        it = 0
        check_every = 25
        while it < MAX_ITERATIONS and active.any():
            # a slice (views, no copies) while every pattern is active
            idx: Any = slice(None) if active.all() else np.flatnonzero(active)
            AP = self._gram(Pd[idx], Dm[idx], f[idx])
            den = (Pd[idx] * AP).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                alpha = np.where(den > 0, rz[idx] / den, 0.0)
            X[idx] += alpha[:, None, :] * Pd[idx]
            R[idx] -= alpha[:, None, :] * AP
            Zi = Minv[idx] * R[idx]
            rz2 = (R[idx] * Zi).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                beta = np.where(rz[idx] > 0, rz2 / rz[idx], 0.0)
            Pd[idx] = Zi + beta[:, None, :] * Pd[idx]
            rz[idx] = rz2
            it += 1
            iters[idx] = it
            # recurrence estimates: gap ≈ ‖S R‖²/c, value ≈ mN − tr(HᵀX); certify when they promise success
            sr = np.einsum("pnc,pnc->p", R[idx] * self.s[None, :, None], R[idx] * self.s[None, :, None])
            est = self.mN - np.einsum("pnc,pnc->p", H[idx], X[idx])
            promise = sr / max(self.lower, 1e-300) <= 0.01 * np.maximum(SPARSE_RTOL * np.maximum(est, 0), target_abs)
            if promise.all() or it % check_every == 0 or it == MAX_ITERATIONS:
                v, h = self._certify(X[idx], Dm[idx])
                vals[idx], hws[idx] = v, h
                ok = h <= np.maximum(SPARSE_RTOL * np.maximum(v, 0.0), target_abs)
                cert[idx] = ok
                active[np.arange(P)[idx][ok]] = False
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


# ----------------------------------------------------------------------------------------------
# sparse strongly regular graphs at n ≈ 10⁴
# ----------------------------------------------------------------------------------------------


#: Catalogue kind of a :class:`SparseSRG` bundle (the adjacency in CSR index form, never ``v x v``).
SPARSE_SRG_KIND = "sparse_srg"
#: Version of that bundle's layout (``metadata["sparse_srg_format_version"]``).
SPARSE_SRG_BUNDLE_VERSION = 1


def _srg_bad(msg: str) -> CatalogueError:
    return CatalogueError(f"sparse SRG: {msg}")


def _four_ints(value: Any) -> TypeGuard[list[int]]:
    """Whether a stored value is a list of four integers (SRG parameters; booleans are not integers here)."""
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    )


class SparseSRG:
    """A strongly regular graph kept as a sparse adjacency: no ``v x v`` array (theory §20, §44).

    ``incidence`` is the assignment ``Adj + I`` (``closed``) or ``Adj`` as ``scipy.sparse`` CSC;
    :meth:`verify` checks ``Adj² = kI + λAdj + μ(J − I − Adj)`` exactly, one block of rows at a
    time.  Built by :func:`lattice_graph_sparse` and :func:`triangular_graph_sparse`.  Immutable
    once built.

    Its catalogue bundle (kind ``"sparse_srg"``, :meth:`to_arrays`) holds the adjacency in CSR
    index form, ``v k + v + 1`` integers; :meth:`from_arrays` trusts none of it (theory §44.4):
    the parameters must be feasible, every index in range, strictly increasing along its row and
    off the diagonal, every row of length ``k``, the pattern symmetric (its sorted pairs equal
    their transposes), and then the SRG identity is checked exactly by :meth:`verify`.

    Examples
    --------
    >>> g = lattice_graph_sparse(3)
    >>> g.params, g.kind, sorted(g.to_arrays())
    (SRGParams(v=9, k=4, lam=1, mu=2), 'sparse_srg', ['adjacency_indices', 'adjacency_indptr'])
    >>> back = SparseSRG.from_arrays(g.to_arrays(), g.bundle_metadata())
    >>> back.params == g.params, (back.incidence != g.incidence).nnz, back.closed
    (True, 0, True)
    """

    kind: ClassVar[str] = SPARSE_SRG_KIND
    Params = SRGParams
    adjacency: sp.csr_matrix
    incidence: sp.csc_matrix
    params: SRGParams
    construction: str
    closed: bool

    def __init__(self, adjacency: sp.spmatrix, params: Sequence[int], construction: str, closed: bool):
        closed = check_bool("closed", closed)
        if len(tuple(params)) != 4:
            raise InvalidArgumentError("params", f"must be (v, k, lam, mu), got {params!r:.80}")
        adj = sp.csr_matrix(adjacency, dtype=np.int64, copy=True)
        adj.sum_duplicates()  # canonical: sorted indices, no duplicates
        set_ = object.__setattr__
        set_(self, "adjacency", adj)
        set_(self, "params", SRGParams(*(int(p) for p in params)))
        set_(self, "construction", str(construction))
        set_(self, "closed", closed)
        inc = adj + sp.identity(adj.shape[0], dtype=np.int64, format="csr") if closed else adj
        set_(self, "incidence", sp.csc_matrix(inc, dtype=np.int64))
        set_(self, "_frozen", True)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"SparseSRG is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SparseSRG is immutable (cannot delete {name!r})")

    @property
    def v(self) -> int:
        """Number of vertices (workers and parts)."""
        return self.params[0]

    def verify(self) -> bool:
        """Exact sparse check of the SRG identity, symmetry, zero diagonal, degrees and the assignment; or raises."""
        v, k, lam, mu = self.params
        a = self.adjacency
        if a.shape != (v, v):
            raise VerificationError(f"{self.construction}: adjacency has shape {a.shape}, expected ({v}, {v})")
        if a.nnz and not np.all(a.data == 1):
            raise VerificationError(f"{self.construction}: adjacency must be 0/1")
        if (a != a.T).nnz or a.diagonal().any():
            raise VerificationError(f"{self.construction}: adjacency must be symmetric with zero diagonal")
        if not np.all(np.diff(a.indptr) == k):
            raise VerificationError(f"{self.construction}: every degree must be k = {k}")
        want = a + sp.identity(v, dtype=np.int64, format="csr") if self.closed else a
        if self.incidence.shape != (v, v) or (self.incidence != want).nnz:
            raise VerificationError(
                f"{self.construction}: the incidence is not the assignment {'Adj + I' if self.closed else 'Adj'}"
            )
        step = max(1, min(v, 2**22 // max(v, 1)))
        for s0 in range(0, v, step):
            sq = (a[s0 : s0 + step] @ a).toarray()
            rows = np.arange(sq.shape[0])
            adj_rows = a[s0 : s0 + step].toarray()
            expect = np.where(adj_rows == 1, lam, mu)
            expect[rows, s0 + rows] = k
            if not np.array_equal(sq, expect):
                i, j = np.argwhere(sq != expect)[0]
                raise VerificationError(
                    f"{self.construction}: (Adj²)[{s0 + int(i)}, {int(j)}] = {int(sq[i, j])}, "
                    f"expected {int(expect[i, j])} (Adj² != kI + λAdj + μ(J − I − Adj))"
                )
        return True

    def gram_split(self) -> tuple[sp.csr_matrix, float]:
        """``(S, μ)`` with ``AᵀA = S + μJ`` and ``S`` as sparse as ``Adj + I`` (Lemma 44.1).

        Closed: ``(Adj + I)² = (k + 1 − μ)I + (λ + 2 − μ)Adj + μJ``; open: ``Adj² = (k − μ)I + (λ − μ)Adj + μJ``.
        """
        return _srg_split(self.adjacency, self.params, self.closed)

    def gram_lower(self) -> float:
        """Proved lower bound on ``λ_min(AᵀA)`` of the assignment (:func:`srg_gram_lower`)."""
        v, k, lam, mu = self.params
        return srg_gram_lower(v, k, lam, mu, self.closed)

    # -- the catalogue bundle ---------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The adjacency in CSR index form: ``adjacency_indices`` (int32, or int64 from ``2^31``
        vertices; sorted along each row, no duplicates) and ``adjacency_indptr`` (int64)."""
        a = self.adjacency
        wide = self.v >= 2**31
        return {
            "adjacency_indices": np.array(a.indices, dtype=np.int64 if wide else np.int32),
            "adjacency_indptr": np.array(a.indptr, dtype=np.int64),
        }

    def bundle_metadata(self) -> dict[str, Any]:
        """The parameters ``[v, k, λ, μ]``, the construction, ``closed`` and the layout's version."""
        return {
            "params": list(self.params),
            "construction": self.construction,
            "closed": self.closed,
            "sparse_srg_format_version": SPARSE_SRG_BUNDLE_VERSION,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], metadata: Mapping[str, Any]) -> SparseSRG:
        """Rebuild the graph from :meth:`to_arrays`, checking everything; CatalogueError naming the first failure.

        In order: the metadata (format version, four integer parameters satisfying
        ``k(k − 1 − λ) = (v − k − 1)μ``, ``closed``), the size ``v k`` against
        :data:`gcsim.limits.MAX_SPARSE_ENTRIES` (before any array is converted), the arrays'
        shapes and dtypes, the CSR structure (``indptr`` steps of exactly ``k``, indices in
        ``range(v)``, strictly increasing along each row, no self-loop), symmetry (the sorted
        pair keys ``i v + j`` equal those of the transposed pairs) and, last, :meth:`verify`
        (the SRG identity in exact integer arithmetic).
        """
        if not isinstance(metadata, Mapping):
            raise _srg_bad(f"metadata must be an object, got {type(metadata).__name__}")
        problem = layout_version_problem(metadata, "sparse_srg_format_version", SPARSE_SRG_BUNDLE_VERSION)
        if problem:
            raise _srg_bad(problem)
        params = metadata.get("params")
        if not _four_ints(params):
            raise _srg_bad(f"metadata 'params' must be four integers [v, k, λ, μ], got {params!r:.80}")
        v, k, lam, mu = params
        if not (v >= 2 and 1 <= k < v and 0 <= lam < k and 0 <= mu <= k):
            raise _srg_bad(
                f"params {params} are not those of a strongly regular graph (need 0 <= λ < k < v, 0 <= μ <= k)"
            )
        if k * (k - 1 - lam) != (v - k - 1) * mu:  # two-step walks from a vertex, counted twice (BvM §1.1)
            raise _srg_bad(
                f"params {params} are infeasible: k(k − 1 − λ) = {k * (k - 1 - lam)} != "
                f"(v − k − 1)μ = {(v - k - 1) * mu}"
            )
        closed = metadata.get("closed")
        if not isinstance(closed, bool):
            raise _srg_bad(f"metadata 'closed' must be true or false, got {closed!r:.40}")
        construction = metadata.get("construction")
        if not isinstance(construction, str):
            raise _srg_bad(f"metadata 'construction' must be a string, got {type(construction).__name__}")
        nnz = v * k
        try:
            check_entries(
                "params", (v, k), "the adjacency of a sparse SRG (v k entries)", limit_name="MAX_SPARSE_ENTRIES"
            )
        except SizeLimitError as exc:
            raise _srg_bad(str(exc)) from None
        for name in ("adjacency_indices", "adjacency_indptr"):
            if name not in arrays:
                raise _srg_bad(f"array {name!r} is missing")
        ind, ptr = np.asarray(arrays["adjacency_indices"]), np.asarray(arrays["adjacency_indptr"])
        for name, arr, shape in (("adjacency_indices", ind, (nnz,)), ("adjacency_indptr", ptr, (v + 1,))):
            if arr.shape != shape or arr.dtype.kind not in "iu":
                raise _srg_bad(
                    f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected integers of shape {shape} "
                    f"(v = {v} vertices of degree k = {k})"
                )
        ptr = ptr.astype(np.int64)
        ind = ind.astype(np.int64)
        steps = np.diff(ptr)
        if ptr[0] != 0 or np.any(steps != k):
            i = int(np.flatnonzero(steps != k)[0]) if np.any(steps != k) else 0
            raise _srg_bad(
                f"adjacency_indptr gives vertex {i} {int(steps[i])} neighbours (starts at {int(ptr[0])}); every "
                f"vertex must have degree k = {k}"
            )
        if ind.min() < 0 or ind.max() >= v:
            j = int(np.flatnonzero((ind < 0) | (ind >= v))[0])
            raise _srg_bad(f"adjacency index {j} is {int(ind[j])}, outside range({v})")
        row = np.repeat(np.arange(v, dtype=np.int64), k)
        unsorted = np.flatnonzero((row[1:] == row[:-1]) & (np.diff(ind) <= 0))
        if unsorted.size:
            j = int(unsorted[0])
            raise _srg_bad(
                f"row {int(row[j])} of the adjacency lists vertex {int(ind[j + 1])} after vertex {int(ind[j])} "
                "(indices must be strictly increasing: sorted, no duplicates)"
            )
        loops = np.flatnonzero(ind == row)
        if loops.size:
            raise _srg_bad(f"vertex {int(row[loops[0]])} is adjacent to itself (a self-loop)")
        keys = row * v + ind  # sorted: rows ascend, indices strictly increase along a row
        flipped = np.sort(ind * v + row)
        odd = np.flatnonzero(keys != flipped)
        if odd.size:
            i, j = divmod(int(keys[odd[0]]), v)
            i2, j2 = divmod(int(flipped[odd[0]]), v)
            first = (i, j) if keys[odd[0]] < flipped[odd[0]] else (j2, i2)
            raise _srg_bad(f"the adjacency is not symmetric: it holds the edge {first} but not {first[::-1]}")
        adj = sp.csr_matrix((np.ones(nnz, dtype=np.int64), ind, ptr), shape=(v, v))
        graph = cls(adj, (v, k, lam, mu), construction, closed)
        try:
            graph.verify()  # the SRG identity, exactly (one implementation: SparseSRG.verify)
        except VerificationError as exc:
            raise _srg_bad(f"the stored graph is not an SRG{tuple(params)}: {exc}") from None
        return graph

    def __repr__(self) -> str:
        return f"SparseSRG(params={tuple(self.params)}, construction={self.construction!r}, closed={self.closed})"


def _srg_split(adjacency: Any, params: tuple[int, ...], closed: bool) -> tuple[sp.csr_matrix, float]:
    v, k, lam, mu = (int(p) for p in params)
    adj = sp.csr_matrix(adjacency, dtype=np.int64)
    eye = sp.identity(v, dtype=np.int64, format="csr")
    if closed:
        return sp.csr_matrix((k + 1 - mu) * eye + (lam + 2 - mu) * adj), float(mu)
    return sp.csr_matrix((k - mu) * eye + (lam - mu) * adj), float(mu)


def _from_pairs(v: int, rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
    keep = rows != cols
    M = sp.coo_matrix((np.ones(int(keep.sum()), dtype=np.int64), (rows[keep], cols[keep])), shape=(v, v)).tocsr()
    M.sum_duplicates()
    M.data[:] = 1
    return M


def lattice_graph_sparse(q: int, *, closed: bool = True) -> SparseSRG:
    """Lattice (rook's) graph ``L(q) = K_q x K_q`` as a sparse SRG(q², 2(q − 1), q − 2, 2).

    Vertex ``(i, j)`` is ``i q + j``, adjacent to the other cells of its row and column (BvM
    §1.1.6; the same graph as :func:`gcsim.combinatorics.lattice_graph`).  ``O(q³)`` memory.

    Examples
    --------
    >>> g = lattice_graph_sparse(4)
    >>> tuple(g.params), g.incidence.nnz, g.verify()
    ((16, 6, 2, 2), 112, True)
    """
    closed = check_bool("closed", closed)
    q = check_int("q", q, minimum=2)
    limits.check_entries(
        "q", (q * q, 2 * q), "the stored adjacency (q^2 vertices x 2q)", limit_name="MAX_SPARSE_ENTRIES"
    )
    v = q * q
    x = np.arange(v)
    i, j = x // q, x % q
    t = np.arange(q)
    rows = np.concatenate([np.repeat(x, q), np.repeat(x, q)])
    cols = np.concatenate([(i[:, None] * q + t[None, :]).ravel(), (t[None, :] * q + j[:, None]).ravel()])
    adj = _from_pairs(v, rows, cols)
    return SparseSRG(adj, (v, 2 * (q - 1), q - 2, 2), f"lattice graph L({q}) (sparse)", closed)


def triangular_graph_sparse(n: int, *, closed: bool = True) -> SparseSRG:
    """Triangular graph ``T(n) = J(n, 2)`` as a sparse SRG(n(n − 1)/2, 2(n − 2), n − 2, 4).

    Vertices are the pairs ``i < j`` in lexicographic order, adjacent iff they meet (BvM §1.1.7;
    the same graph as :func:`gcsim.combinatorics.triangular_graph`).

    Examples
    --------
    >>> g = triangular_graph_sparse(6)
    >>> tuple(g.params), g.verify()
    ((15, 8, 4, 4), True)
    """
    closed = check_bool("closed", closed)
    n = check_int("n", n, minimum=4)
    limits.check_entries(
        "n", (n * (n - 1) // 2, 2 * n), "the stored adjacency (n(n-1)/2 vertices x 2n)", limit_name="MAX_SPARSE_ENTRIES"
    )
    iu, ju = np.triu_indices(n, 1)
    v = iu.size
    index = np.full((n, n), -1, dtype=np.int64)
    index[iu, ju] = np.arange(v)
    index[ju, iu] = np.arange(v)
    rows, cols = [], []
    for end in (iu, ju):  # pairs through either end of each pair
        nb = index[end]  # (v, n): the pair {end, t}; -1 at t = end
        r = np.repeat(np.arange(v), n)
        c = nb.ravel()
        ok = c >= 0
        rows.append(r[ok])
        cols.append(c[ok])
    adj = _from_pairs(v, np.concatenate(rows), np.concatenate(cols))
    return SparseSRG(adj, (v, 2 * (n - 2), n - 2, 4), f"triangular graph T({n}) (sparse)", closed)


# ----------------------------------------------------------------------------------------------
# the encoder and the recognition of dense schemes
# ----------------------------------------------------------------------------------------------


class SparseRD(StructuredRD):
    """RD(ε) encoder on any sparse assignment, evaluated by the sparse route (theory §44).

    Build it with :func:`encode_sparse`.  The same attributes as
    :class:`~gcsim.coding.structured.StructuredRD` (``incidence``, ``diagonals``, ``B`` and
    ``assignment`` on request); ``context`` is a :class:`SparseRDContext`.  Its bundle (layout
    ``"sparse"`` of the ``"structured_scheme"`` kind) names where the bound ``c`` comes from
    (``lower``: an SRG's parameters, ``AᵀA = aI + λJ`` or the Cholesky certificate), never the
    number: :meth:`from_arrays` computes ``c`` again from the stored incidence (the SRG identity
    checked exactly first) and the diagonals.

    Examples
    --------
    >>> enc = encode_sparse(lattice_graph_sparse(4), 2, seed=1)
    >>> enc.bundle_metadata()["lower"]
    {'kind': 'srg', 'params': [16, 6, 2, 2], 'closed': True}
    >>> back = SparseRD.from_arrays(enc.to_arrays(), enc.bundle_metadata())
    >>> type(back).__name__, back.context.lower == enc.context.lower, back.context.source
    ('SparseRD', True, 'SRG(16, 6, 2, 2) spectrum')
    """

    layout = "sparse"

    def __init__(
        self,
        incidence: sp.csc_matrix,
        D: np.ndarray,
        lower: float,
        source: str,
        options: dict[str, Any],
        fallback: bool = True,
        gram: tuple[Any, float] | None = None,
    ):
        fallback = check_bool("fallback", fallback)
        self._set_encoder(incidence, D, options)
        self.fallback = fallback
        fb = _dense_fallback(self) if fallback and self._dense_fits() else None
        self.context: SparseRDContext = SparseRDContext(incidence, self.diagonals, lower, source, fb, gram)

    def _dense_fits(self) -> bool:
        return self.m * self.num_parts * self.n <= limits.MAX_DENSE_ENTRIES

    def verify(self) -> bool:
        """0/1 incidence and finite ``(m, n)`` diagonals (the bound ``c`` is checked where it is made)."""
        S = self.incidence
        if S.nnz and not np.all(S.data == 1):
            raise VerificationError("SparseRD.incidence: not a 0/1 matrix")
        self._check_diagonals()
        return True

    def _certificate(self) -> dict[str, Any]:
        """``lower``: where ``c`` comes from (from :attr:`SparseRDContext.source`), and ``fallback``."""
        source = self.context.source
        hit = _SRG_SOURCE.fullmatch(source)
        lower: dict[str, Any]
        if hit is not None:
            closed = bool(self.num_parts == self.n and np.all(self.incidence.diagonal() == 1))
            lower = {"kind": "srg", "params": [int(x) for x in hit.groups()], "closed": closed}
        elif _PAIR_SOURCE.fullmatch(source):
            lower = {"kind": "pair_gram"}
        elif source == _CHOLESKY_SOURCE:
            lower = {"kind": "cholesky"}
        else:
            raise InvalidArgumentError("source", f"a SparseRD bound from {source!r} has no bundle form")
        return {"lower": lower, "fallback": self.fallback}

    @classmethod
    def _rebuild(cls, inc: sp.csc_matrix, D: np.ndarray, options: dict[str, Any], metadata: Any) -> SparseRD:
        """The sparse layout: the bound ``c`` of Theorem 44.2 derived again from the incidence (Lemmas 44.3, 44.4)."""

        def bad(msg: str) -> CatalogueError:
            return CatalogueError(f"structured scheme (sparse): {msg}")

        fallback = metadata.get("fallback")
        if not isinstance(fallback, bool):
            raise bad(f"metadata 'fallback' must be true or false, got {fallback!r:.40}")
        cert = metadata.get("lower")
        kind = cert.get("kind") if isinstance(cert, dict) else None
        N, n = inc.shape
        gram: tuple[Any, float] | None = None
        try:
            if kind == "srg":
                params, closed = cert.get("params"), cert.get("closed")
                if not _four_ints(params) or not isinstance(closed, bool):
                    raise bad(f"metadata 'lower' must give four integer SRG parameters and closed, got {cert!r:.80}")
                if params[0] != N or N != n:
                    raise bad(f"SRG{tuple(params)} does not fit a {N} x {n} incidence")
                adj = sp.csr_matrix(inc, dtype=np.int64)
                if closed:
                    if not np.all(adj.diagonal() == 1):
                        raise bad("closed SRG (A = Adj + I): the incidence's diagonal is not all 1")
                    adj = adj - sp.identity(n, dtype=np.int64, format="csr")
                    adj.eliminate_zeros()
                graph = SparseSRG(adj, tuple(params), f"stored SRG{tuple(params)}", closed)
                graph.verify()  # exact: the identity the spectrum, hence c, rests on
                lower = _scaled_lower(graph.gram_lower(), D.T)
                source, gram = f"SRG{tuple(params)} spectrum", graph.gram_split()
            elif kind == "pair_gram":
                k, lam = check_pair_gram(inc, "incidence")
                lower, source = _scaled_lower(float(k - lam), D.T), f"AᵀA = {k - lam}I + {lam}J"
                gram = (sp.identity(n, format="csr") * (k - lam), float(lam))
            elif kind == "cholesky":
                lower, source = gram_lower_cholesky(inc, D.T), _CHOLESKY_SOURCE
            else:
                raise bad(f"metadata 'lower' names no known bound (srg, pair_gram, cholesky): {cert!r:.80}")
        except (VerificationError, SizeLimitError) as exc:
            raise bad(f"the lower bound c ({kind}) cannot be derived again: {exc}") from None
        if not lower > 0:
            raise bad(f"the {source} proves no c > 0 for these diagonals (theory §44)")
        return cls(inc, D, lower, source, options, fallback, gram)

    def __repr__(self) -> str:
        c = self.context
        return (
            f"SparseRD(num_parts={self.num_parts}, n={self.n}, m={self.m}, lower={c.lower:.3g} ({c.source}), "
            f"options={dict(self.options)})"
        )


_SRG_SOURCE = re.compile(r"SRG\((\d+), (\d+), (\d+), (\d+)\) spectrum")
_PAIR_SOURCE = re.compile(r"AᵀA = \d+I \+ \d+J")
_CHOLESKY_SOURCE = "Cholesky certificate"


def _dense_fallback(scheme: Any) -> Callable[[np.ndarray], np.ndarray]:
    def run(masks: np.ndarray) -> np.ndarray:
        ctx = eval_context(scheme)
        return np.clip(optimal_errors(ctx, masks, method="auto"), 0.0, ctx.total)

    return run


def _algebraic_lower(design: Any, A: sp.csc_matrix) -> tuple[float, str, tuple[Any, float] | None] | None:
    """``λ_min(AᵀA)`` lower bound, its source and the split ``AᵀA = S + μJ``, from the object's algebra, or None."""
    params = getattr(design, "params", None)
    srg = isinstance(design, SparseSRG) or getattr(design, "kind", None) == "srg"
    if srg and params is not None and len(tuple(params)) == 4:
        design.verify()  # exact: the identity the bound rests on
        closed = bool(getattr(design, "closed", True))
        v, k, lam, mu = (int(x) for x in params)
        split = _srg_split(design.adjacency, (v, k, lam, mu), closed)
        return srg_gram_lower(v, k, lam, mu, closed), f"SRG{(v, k, lam, mu)} spectrum", split
    try:
        k, lam = check_pair_gram(A, "design")
    except VerificationError:
        return None
    n = A.shape[1]
    return float(k - lam), f"AᵀA = {k - lam}I + {lam}J", (sp.identity(n, format="csr") * (k - lam), float(lam))


def _scaled_lower(g: float, U: np.ndarray) -> float:
    """``c = g min_j s_j² ‖u_j‖²`` over ``u_j ≠ 0`` (Lemma 44.3), rounded down."""
    norms = np.linalg.norm(U, axis=1)
    nz = norms > 0
    if not nz.any():
        return float("inf")
    s = 1.0 / norms[nz]
    ratio = float(np.min((s * s) * np.sum(U[nz] ** 2, axis=1)))
    return g * ratio * (1.0 - 2 * _gamma(U.shape[1] + 6))


def encode_sparse(
    design: Any,
    m: int,
    *,
    eps: float = 0.0,
    seed: int = 0,
    dist: str = "rademacher",
    points: int | None = None,
    fallback: bool = True,
) -> SparseRD:
    """RD(ε) encoder of a sparse assignment, evaluated by the certified sparse route (theory §44).

    The diagonals are those of ``gcsim.coding.encode(design, m, "rd", eps=eps, seed=seed, dist=dist)``
    (same generator, same order).  The bound ``c`` of Theorem 44.2 comes from the object's algebra
    when it has one (a strongly regular graph: its spectrum, after an exact ``verify()``; an
    assignment with ``AᵀA = aI + λJ``: ``a``), else from a Cholesky certificate
    (:func:`gram_lower_cholesky`, needs ``n² <= MAX_DENSE_ENTRIES``).

    Parameters
    ----------
    design : SRG (dense or :class:`SparseSRG`), coset or bi-regular graph, design, 0/1 matrix or block list
        The assignment (parts x workers); a matrix may be dense or ``scipy.sparse``.
    m : int
        Communication reduction.
    eps, seed, dist
        As for the ``"rd"`` encoder.
    points : int, optional
        Number of parts for a block list.
    fallback : bool
        Send uncertified patterns to the dense kernels when ``B`` fits (default); else raise.

    Raises
    ------
    InvalidArgumentError
        No proved ``c > 0`` (``λ_min(AᵀA) = 0`` or a failed certificate) and no algebra to replace it.
    SizeLimitError
        No algebra, and the Cholesky certificate's ``n x n`` matrix is over the dense limit.

    Examples
    --------
    >>> enc = encode_sparse(lattice_graph_sparse(5), 2, seed=0)
    >>> enc.params, enc.context.lower > 0.99, enc.context.source
    (SchemeParams(num_parts=25, n=25, m=2), True, 'SRG(25, 8, 3, 2) spectrum')
    """
    m = check_int("m", m, minimum=1)
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    fallback = check_bool("fallback", fallback)
    if points is not None:
        points = check_int("points", points, minimum=1)
    A = _as_incidence(design, points)
    S = sp.csc_matrix(A, dtype=np.int64)
    if S.nnz and not np.all(S.data == 1):
        raise VerificationError("design: not a 0/1 matrix")
    N, n = S.shape
    check_dense_size("m", n, m * m, "the n x m² work arrays of the sparse route")
    D = _draw_diagonals(np.random.default_rng(seed), m, n, eps, dist)
    alg = _algebraic_lower(design, S)
    gram = None if alg is None else alg[2]
    if alg is not None and alg[0] > 0:
        lower, source = _scaled_lower(alg[0], D.T), alg[1]
    else:
        lower, source = gram_lower_cholesky(S, D.T), "Cholesky certificate"
    if not lower > 0:
        raise InvalidArgumentError(
            "design",
            f"the sparse route has no proved lower bound on λ_min(SΓS) ({source if alg is None else alg[1]}: "
            f"{lower:.3g}; theory §44): B may be rank deficient; use gcsim.coding.encode and the dense routes",
        )
    return SparseRD(S, D, lower, source, {"eps": eps, "seed": seed, "dist": dist}, fallback, gram)


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


_structured.FALLBACK_ROUTES.append(sparse_context)  # dense RD schemes on sparse assignments (theory §44)
