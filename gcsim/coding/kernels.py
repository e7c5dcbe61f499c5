"""The optimal-error kernel: one implementation for NumPy, CuPy and torch (docs/theory.md §40).

:func:`optimal_errors` evaluates

.. math::
   \\mathrm{err}(B, F) = \\min_X \\|B_F X - T\\|_F^2 = mN - \\|P_F T\\|_F^2
                      = mN - \\operatorname{tr}(H_F^\\top \\Gamma_{FF}^+ H_F)

for a stack of non-straggler masks.  The analysis (:func:`gcsim.coding.evaluate.optimal_error`,
NumPy) and the executor (:func:`gcsim.executor.arrays.batched_optimal_error`, NumPy, CuPy or
torch) both call it; they differ only in the array namespace ``xp`` they pass (and the executor
asks for ``certify=True``: every pattern a route cannot certify is recomputed by the SVD route).

How the work is split between host and namespace:

* once per scheme, on the host in NumPy (:class:`EvalContext`): the exact power-of-two column
  equilibration ``B̃ = B diag(2^{k_j})`` (``ldexp`` is not in the array API standard), the SVD of
  ``B̃`` (numerical rank ``r``, ``κ̃``), ``Γ = B̃ᵀB̃``, ``H = B̃ᵀT``, ``K = Γ⁺``, ``Y = B̃⁺T``,
  ``err([n])`` and ``V_0`` (a basis of ``null(B̃)``); these are ``O(mN n²)`` and copied into the
  namespace once (:meth:`EvalContext.on`);
* per pattern group, in the namespace ``xp``: the gathers of principal submatrices, the batched
  LAPACK calls (``svd``/``svdvals``, ``eigh``, ``cholesky``, ``solve``: all in the array API
  ``linalg`` extension, through :mod:`array_api_compat`) and the contractions;
* per pattern, on the host: index sets (from the masks), rank decisions and certification flags
  (one number or a few per pattern, so the transfers are negligible).

On NumPy, the column-deletion route (Lemmas 2 and 2b) and the full-rank solves of ``Γ_FF`` run
pattern by pattern in compiled loops (:mod:`gcsim.coding._compiled`, numba): the rank of
``V_0[S]`` from a Householder QR with column pivoting and its certificate instead of an SVD,
Cholesky instead of LU.  Same quantities, same bounds (docs/theory.md §40.3, "Compiled loops");
a pattern the loop cannot certify takes the batched path below, and other namespaces always do.

The routes and the accuracy each guarantees are stated in :mod:`gcsim.coding.evaluate` and proved
in docs/theory.md §40 (Lemmas 2, 2b, 3 and 4, and §40.3 for the routes).  With the compiled loops
switched off (:class:`gcsim.coding._compiled.disabled`) the numbers on NumPy are bit for bit those
of the NumPy-only evaluator this module replaced.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._array_api import asarray, get_namespace, is_numpy, to_numpy
from .._threads import batched_blas
from .._validation import check_finite_array, check_int, check_real
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries
from . import _compiled

__all__ = [
    "GRAM_KAPPA_LIMIT",
    "ROUTES",
    "EvalContext",
    "eval_context",
    "pow2_exponents",
    "nonzero_kappa",
    "optimal_errors",
    "ErrorReport",
    "check_method",
    "check_rtol",
    "chunk_rows",
    "per_row_bytes",
    "errors_for_group",
]

#: Largest κ̃ (condition number of the column-equilibrated ``B``) for which ``method="auto"``
#: uses the Gram-type routes (their error is about ``κ̃² u`` of ``mN``, ``<= 2e-8 mN``).
GRAM_KAPPA_LIMIT = 1e4

#: Evaluation routes; ``"qr"`` is an alias of ``"svd"``, ``"eigh"`` forces the rank-revealing
#: Gram route (the executor's ``route="eigh"``).
ROUTES = ("auto", "gram", "downdate", "svd", "qr", "eigh")

_U = np.finfo(np.float64).eps
# working-set budget of one batched chunk (bytes)
_CHUNK_BYTES = 48 * 2**20


# ----------------------------------------------------------------------------------------------
# precomputation (host, NumPy)
# ----------------------------------------------------------------------------------------------


def pow2_exponents(B: np.ndarray) -> np.ndarray:
    """Integer ``k_j`` with ``‖2^{k_j} B[:, j]‖ ∈ [1/2, 1)`` (0 for a zero column); overflow-free.

    Examples
    --------
    >>> pow2_exponents(np.array([[3.0, 0.0], [4.0, 0.0]])).tolist()   # ‖(3, 4)‖ = 5 -> 5/8
    [-3, 0]
    """
    amax = np.max(np.abs(B), axis=0) if B.shape[0] else np.zeros(B.shape[1])
    _, e = np.frexp(amax)  # amax = f 2^e, f in [1/2, 1)
    k = np.where(amax > 0, -e, 0).astype(np.int64)
    nrm = np.sqrt(np.sum(np.ldexp(B, k[None, :]) ** 2, axis=0))  # in [1/2, sqrt(mN)]
    _, e2 = np.frexp(nrm)
    return np.where(amax > 0, k - e2, 0).astype(np.int64)


def nonzero_kappa(sv: np.ndarray, p: int) -> tuple[np.ndarray, float]:
    """Singular values (descending) above ``p u σ_max`` and ``σ_max / σ_min`` over them (inf if none).

    Examples
    --------
    >>> nonzero_kappa(np.array([2.0, 1.0, 0.0]), 3)[1]
    2.0
    """
    smax = float(sv[0]) if sv.size and sv[0] > 0 else 0.0
    nz = sv[sv > p * _U * smax] if smax > 0 else sv[:0]
    return nz, (float(smax / nz[-1]) if nz.size else float("inf"))


class _OnNamespace:
    """The context's matrices converted into one array namespace."""

    def __init__(self, ctx: EvalContext, xp: Any):
        self.Bs = asarray(xp, ctx.Bs)
        self.Gamma = asarray(xp, ctx.Gamma)
        self.H = asarray(xp, ctx.H)
        self.K = asarray(xp, ctx.K)
        self.Y = asarray(xp, ctx.Y)
        self.V0 = asarray(xp, ctx.V0)


class EvalContext:
    """Quantities precomputed once per scheme (on the column-equilibrated ``B̃``, host NumPy).

    ``B̃ = B diag(2^{k_j})`` scales every column to norm in ``[1/2, 1)`` by a power of two, so
    ``B̃`` is computed without rounding and ``col(B̃_F) = col(B_F)``: the error is unchanged.
    Then ``Γ = B̃ᵀB̃``, ``H = B̃ᵀT``, the SVD ``B̃ = U Σ Vᵀ`` with numerical rank ``r``
    (tolerance ``max(mN, n) u σ_1``), ``κ̃ = σ_1/σ_r``, ``K = Γ⁺``, ``Y = B̃⁺T``, ``err([n])``
    and ``V_0`` (orthonormal basis of ``null(B̃)``).
    """

    def __init__(self, B: np.ndarray, m: int):
        self.B = B
        self.m = m
        self.mN, self.n = B.shape
        self.N = self.mN // m
        self.total = float(self.mN)
        self._kappa_raw: float | None = None
        self._namespaces: dict[str, _OnNamespace] = {}
        Bs = np.ldexp(B, pow2_exponents(B)[None, :])
        self.Bs = Bs
        # H = B̃ᵀ T: column l is the sum of the rows of block l
        self.H = Bs.reshape(m, self.N, self.n).sum(axis=1).T.copy()
        self.Gamma = np.ascontiguousarray(Bs.T @ Bs)
        U, sv, Vt = np.linalg.svd(Bs, full_matrices=self.mN < self.n)
        self.sv = sv
        smax = float(sv[0]) if sv.size and sv[0] > 0 else 0.0
        self.sigma_max = smax
        p = max(self.mN, self.n)
        nz, self.kappa = nonzero_kappa(sv, p)
        self.rank = r = int(nz.size)
        self.full_rank = r == self.n and self.n > 0
        # singular values of V_0[S] at or below tau count as zero (V_0 is accurate to ~ p u κ̃)
        self.tau = min(0.5, 10.0 * p * _U * self.kappa) if r else 0.5
        # a kept singular value of V_0[S] below delta_gray is not a certain non-zero
        self.delta_gray = min(1.0, 1e3 * self.tau)
        T = self.target()
        Ur, Vr = U[:, :r], Vt[:r].T
        UT = Ur.T @ T
        self.Y = np.ascontiguousarray((Vr / nz) @ UT)  # B̃⁺ T (C order: the compiled loops read rows)
        K = (Vr / nz**2) @ Vr.T  # Γ⁺
        self.K = np.ascontiguousarray(0.5 * (K + K.T))
        self.err_full = float(np.sum((T - Ur @ UT) ** 2))
        self.V0 = Vt[r:].T.copy()  # (n, n - r), orthonormal basis of null(B̃)

    @property
    def kappa_raw(self) -> float:
        """κ(B) of the matrix as given (no column scaling), over its non-zero singular values."""
        if self._kappa_raw is None:
            self._kappa_raw = nonzero_kappa(np.linalg.svd(self.B, compute_uv=False), max(self.mN, self.n))[1]
        return self._kappa_raw

    def target(self) -> np.ndarray:
        """``T = I_m ⊗ 1_N`` (block-major rows), ``(mN, m)``."""
        return np.kron(np.eye(self.m), np.ones((self.N, 1)))

    def on(self, xp: Any) -> _OnNamespace:
        """``B̃, Γ, H, K, Y, V_0`` in the namespace ``xp`` (converted once, then cached)."""
        key = xp.__name__
        if key not in self._namespaces:
            self._namespaces[key] = _OnNamespace(self, xp)
        return self._namespaces[key]


def eval_context(scheme: Any) -> EvalContext:
    """The :class:`EvalContext` of a scheme, cached on the scheme (``scheme.eval_context`` slot).

    Raises
    ------
    InvalidArgumentError
        ``scheme`` has no ``B``/``m``, ``B`` is not finite, or its rows are not a multiple of ``m``.
    """
    B = getattr(scheme, "B", None)
    m = getattr(scheme, "m", None)
    if B is None or m is None:
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    cached = _CONTEXTS.get(id(B))
    if cached is not None and cached[0] is B:
        return cached[1]
    check_entries("scheme.B", array_shape(B), "the encoding matrix B")  # logical size, before any copy
    B = check_finite_array("scheme.B", B, ndim=2)  # also refuses ints beyond the float64 range
    m = check_int("scheme.m", m, minimum=1)
    if B.shape[0] % m:
        raise InvalidArgumentError("scheme.B", f"number of rows {B.shape[0]} is not a multiple of m = {m}")
    with batched_blas():  # small-matrix SVD: one BLAS thread is faster (gcsim._threads)
        ctx = EvalContext(B, m)
    source = scheme.B
    if isinstance(source, np.ndarray) and not source.flags.writeable:
        # the cache is keyed by the (read-only, hence unchanging) array itself
        _remember(source, ctx)
    return ctx


# id(B) -> (B, context) for the most recent read-only encoders (a Scheme's B is read-only)
_CONTEXTS: dict[int, tuple[np.ndarray, EvalContext]] = {}
_CONTEXTS_MAX = 16


def _remember(source: np.ndarray, ctx: EvalContext) -> None:
    if len(_CONTEXTS) >= _CONTEXTS_MAX:
        _CONTEXTS.pop(next(iter(_CONTEXTS)))
    _CONTEXTS[id(source)] = (source, ctx)


# ----------------------------------------------------------------------------------------------
# namespace helpers
# ----------------------------------------------------------------------------------------------


def _idx(xp: Any, a: np.ndarray) -> Any:
    """Host index array -> int64 array of ``xp``."""
    return asarray(xp, a, dtype=xp.int64)


def _linalg_errors(xp: Any) -> tuple[type[BaseException], ...]:
    """Exceptions a namespace raises for a failed factorization (CuPy raises none: it returns NaN)."""
    errors: list[type[BaseException]] = [np.linalg.LinAlgError]
    native = getattr(getattr(xp, "linalg", None), "LinAlgError", None)
    if isinstance(native, type) and issubclass(native, BaseException):
        errors.append(native)
    if "torch" in xp.__name__:
        errors.append(RuntimeError)  # torch's LinAlgError is a RuntimeError
    return tuple(errors)


def _pinv_hermitian(xp: Any, G: Any) -> Any:
    if is_numpy(xp):
        return np.linalg.pinv(G, hermitian=True)
    return xp.linalg.pinv(G)


# ----------------------------------------------------------------------------------------------
# batched kernels (index arrays on the host; rows of the result = patterns)
# ----------------------------------------------------------------------------------------------


def _kernel_downdate(ctx: EvalContext, xp: Any, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column deletion (Lemmas 2 and 2b of docs/theory.md §40).

    ``err(F) = err([n]) + tr(Y_Sᵀ Q (Qᵀ K_SS Q)⁻¹ Qᵀ Y_S)`` where the columns of ``Q`` are an
    orthonormal basis of ``null(V_0[S, :]ᵀ)`` (``Q = I`` when ``B̃`` has full column rank).
    Returns ``(err, gray)``; ``gray`` marks patterns this route cannot certify: the smallest kept
    singular value ``δ`` of ``V_0[S]`` is below ``1e3 τ`` (rank decision not certain), or a null
    space is used and ``κ̃/δ > GRAM_KAPPA_LIMIT²`` (its basis is too inaccurate).
    """
    count, s = S.shape
    gray = np.zeros(count, dtype=bool)
    out = np.full(count, ctx.err_full)
    if s == 0:
        return out, gray
    d = ctx.on(xp)
    Sd = _idx(xp, S)
    k = ctx.V0.shape[1]
    if k == 0:
        KSS = d.K[Sd[:, :, None], Sd[:, None, :]]
        YS = d.Y[Sd]
        Z, bad = _spd_solve(xp, KSS, YS)
        return out + to_numpy(xp.einsum("cij,cij->c", YS, Z)), gray | bad
    W = d.V0[Sd]  # (count, s, n - r)
    omega = to_numpy(xp.linalg.svdvals(W))  # (count, min(s, n - r))
    kept = omega > ctx.tau
    null_dim = s - kept.sum(axis=1)
    delta = np.where(kept, omega, np.inf).min(axis=1) if omega.shape[1] else np.full(count, np.inf)
    # a kept singular value this close to tau is not a certain "non-zero"; a null space whose
    # separation delta is small is inaccurate (error ~ κ̃/δ u): both go to the orthogonal route
    gray = (delta < ctx.delta_gray) | ((null_dim > 0) & (ctx.kappa / delta > GRAM_KAPPA_LIMIT**2))
    need = null_dim > 0
    if not need.any():  # rank(B_F) = rank(B): err = err([n])
        return out, gray
    idx = np.flatnonzero(need)
    ii = _idx(xp, idx)
    P, om, _ = xp.linalg.svd(W[ii, ...], full_matrices=True)  # P: (c, s, s) left singular vectors
    om = to_numpy(om)
    nu = np.ones((idx.size, s), dtype=bool)
    nu[:, : om.shape[1]] = om <= ctx.tau
    Si = Sd[ii, ...]
    KSS = d.K[Si[:, :, None], Si[:, None, :]]
    Pt = xp.permute_dims(P, (0, 2, 1))
    G = Pt @ KSS @ P
    y = Pt @ d.Y[Si]
    nud = asarray(xp, nu, dtype=xp.bool)
    both = nud[:, :, None] & nud[:, None, :]
    G = xp.where(both, G, xp.eye(s, dtype=xp.float64)[None, ...])
    y = xp.where(nud[:, :, None], y, xp.zeros_like(y))
    Z, bad = _spd_solve(xp, G, y)
    out[idx] += to_numpy(xp.einsum("cij,cij->c", y, Z))
    gray[idx] |= bad
    return out, gray


def _spd_solve(xp: Any, G: Any, y: Any) -> tuple[Any, np.ndarray]:
    """Batched solve of symmetric positive (semi)definite systems; numerically singular
    matrices (possible only when κ̃ is far beyond GRAM_KAPPA_LIMIT) get the pseudo-inverse
    and are flagged."""
    count = G.shape[0]
    bad = np.zeros(count, dtype=bool)
    try:
        Z = xp.linalg.solve(G, y)
    except _linalg_errors(xp):
        redo = np.ones(count, dtype=bool)
        Z = xp.empty_like(y)
    else:
        if is_numpy(xp):
            return Z, bad
        # CuPy does not raise on a singular matrix: a non-finite solution is its failure
        redo = ~to_numpy(xp.all(xp.isfinite(Z), axis=(1, 2)))
        if not redo.any():
            return Z, bad
    for c in (int(i) for i in np.flatnonzero(redo)):
        try:
            Zc = xp.linalg.solve(G[c, ...], y[c, ...])
            if not is_numpy(xp) and not bool(xp.all(xp.isfinite(Zc))):
                raise np.linalg.LinAlgError("singular")
        except _linalg_errors(xp):
            Zc = _pinv_hermitian(xp, G[c, ...]) @ y[c, ...]
            bad[c] = True
        Z[c, ...] = Zc
    return Z, bad


def _eig_tol(ctx: EvalContext, f: int, rtol: float | None) -> float:
    floor = 10.0 * max(ctx.mN, f) * _U
    return floor if rtol is None else max(rtol * rtol, floor)


def _kernel_eigh(ctx: EvalContext, xp: Any, F: np.ndarray, rtol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Rank-revealing Gram route; returns (proj, gray) with gray = needs the orthogonal route."""
    d = ctx.on(xp)
    Fd = _idx(xp, F)
    G = d.Gamma[Fd[:, :, None], Fd[:, None, :]]
    h = d.H[Fd]
    wd, V = xp.linalg.eigh(G)
    w = to_numpy(wd)
    wmax = np.maximum(w[:, -1:], 0.0)
    keep = w > _eig_tol(ctx, F.shape[1], rtol) * wmax
    keep &= wmax > 0
    c = xp.einsum("cji,cjl->cil", V, h)
    inv = asarray(xp, np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0))
    proj = to_numpy(xp.einsum("ci,cil->c", inv, c * c))
    # An eigenvalue of Γ_FF below wmax/κ_lim² is either a true zero of B_F or a small
    # singular value that the Gram route cannot resolve (it squares κ): both cases are
    # flagged, including the eigenvalues dropped as "zero" above.
    gray = np.any(w < wmax / GRAM_KAPPA_LIMIT**2, axis=1) & (wmax[:, 0] > 0)
    return proj, gray


def _kernel_solve(ctx: EvalContext, xp: Any, F: np.ndarray) -> np.ndarray:
    """``tr(H_Fᵀ Γ_FF⁻¹ H_F)`` by batched solves: full-rank ``B̃`` with ``κ̃ <= GRAM_KAPPA_LIMIT``
    (then ``κ(B̃_F) <= κ̃`` by interlacing, Lemma 3, and ``Γ_FF`` is safely positive definite)."""
    d = ctx.on(xp)
    Fd = _idx(xp, F)
    G = d.Gamma[Fd[:, :, None], Fd[:, None, :]]
    h = d.H[Fd]
    Z = xp.linalg.solve(G, h)
    return to_numpy(xp.einsum("cij,cij->c", h, Z))


def _kernel_gram(ctx: EvalContext, xp: Any, F: np.ndarray, rtol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky first (fast), eigendecomposition for failures and near-singular pivots."""
    d = ctx.on(xp)
    Fd = _idx(xp, F)
    G = d.Gamma[Fd[:, :, None], Fd[:, None, :]]
    h = d.H[Fd]
    count = F.shape[0]
    proj = np.empty(count)
    gray = np.zeros(count, dtype=bool)
    try:
        L = xp.linalg.cholesky(G)
    except _linalg_errors(xp):
        # NumPy and torch refuse the whole stack when one matrix is not positive definite:
        # retry in pieces so that only the failing pieces pay for the eigendecomposition
        if count <= 8:
            return _kernel_eigh(ctx, xp, F, rtol)
        for idx in np.array_split(np.arange(count), 8):
            try:
                xp.linalg.cholesky(G[_idx(xp, idx), ...])
            except _linalg_errors(xp):
                proj[idx], gray[idx] = _kernel_eigh(ctx, xp, F[idx], rtol)
            else:
                proj[idx], gray[idx] = _kernel_gram(ctx, xp, F[idx], rtol)
        return proj, gray
    # a failed CuPy factorization returns NaN pivots, which fail this test as well
    piv = to_numpy(xp.linalg.diagonal(L)) ** 2
    dmax = np.max(to_numpy(xp.linalg.diagonal(G)), axis=1)
    ok = np.min(piv, axis=1) > dmax / GRAM_KAPPA_LIMIT**2
    if ok.any():
        oi = _idx(xp, np.flatnonzero(ok))
        Z = xp.linalg.solve(G[oi, ...], h[oi, ...])
        proj[ok] = to_numpy(xp.einsum("cij,cij->c", h[oi, ...], Z))
    if (~ok).any():
        proj[~ok], gray[~ok] = _kernel_eigh(ctx, xp, F[~ok], rtol)
    return proj, gray


def _kernel_svd(ctx: EvalContext, xp: Any, F: np.ndarray, rtol: float | None) -> np.ndarray:
    """Orthogonal route: ‖P_F T‖² from a batched SVD of the B̃_F stack."""
    count, f = F.shape
    d = ctx.on(xp)
    BF = xp.permute_dims(d.Bs.T[_idx(xp, F)], (0, 2, 1))  # (count, mN, f)
    U, svd_, _ = xp.linalg.svd(BF, full_matrices=False)
    sv = to_numpy(svd_)
    tol = (max(ctx.mN, f) * _U) if rtol is None else rtol
    keep = sv > tol * sv[:, :1]
    keep &= sv[:, :1] > 0
    UT = xp.sum(xp.reshape(U, (count, ctx.m, ctx.N, U.shape[-1])), axis=2)  # (count, m, k) = (Uᵀ T)ᵀ
    return to_numpy(xp.einsum("ck,clk->c", asarray(xp, keep.astype(float)), UT * UT))


# ----------------------------------------------------------------------------------------------
# routing, certification and chunking
# ----------------------------------------------------------------------------------------------


def chunk_rows(per_row: int) -> int:
    """Patterns per batched chunk for a working set of ``per_row`` bytes per pattern."""
    return max(1, int(_CHUNK_BYTES // max(per_row, 1)))


class ErrorReport:
    """Patterns a route could not certify (explicit methods warn about them)."""

    def __init__(self) -> None:
        self.unreliable = 0
        self.patterns = 0

    def warn(self, ctx: EvalContext, method: str, stacklevel: int = 3) -> None:
        if method in ("downdate", "gram") and ctx.kappa > GRAM_KAPPA_LIMIT and self.patterns:
            warnings.warn(
                f"κ(B) = {ctx.kappa:.3g} (column-equilibrated) exceeds GRAM_KAPPA_LIMIT = "
                f"{GRAM_KAPPA_LIMIT:g}: the {method!r} route squares it and may lose up to "
                f"~κ² u = {ctx.kappa**2 * _U:.1e} of mN; use method='auto' or 'svd'",
                RuntimeWarning,
                stacklevel=stacklevel,
            )
        elif self.unreliable:
            what = (
                "Γ_FF has an eigenvalue below λ_max/GRAM_KAPPA_LIMIT² (B_F singular or "
                "ill-conditioned; the Gram route cannot tell a small singular value from zero)"
                if method in ("gram", "eigh")
                else "B_F is nearly rank deficient (a singular value of V_0[S] near the rank tolerance)"
            )
            warnings.warn(
                f"{self.unreliable} of {self.patterns} patterns: {what}; their {method!r} values "
                "may be wrong by O(mN): use method='auto' or 'svd'",
                RuntimeWarning,
                stacklevel=stacklevel,
            )


def _route(
    ctx: EvalContext, method: str, s: int, f: int, rtol: float | None = None, certify: bool = False
) -> tuple[str, bool]:
    """(kernel, fall back to the SVD route for flagged patterns).

    ``certify=True`` (the executor) makes every route certify: beyond ``GRAM_KAPPA_LIMIT`` the
    Gram-type routes cannot, so the SVD route is taken, and flagged patterns always fall back.
    """
    if f == 0:
        return "empty", False
    if method in ("svd", "qr"):
        return "svd", False
    if certify and ctx.kappa > GRAM_KAPPA_LIMIT:
        return "svd", False
    if method == "downdate":
        return "downdate", certify
    if method == "eigh":
        return "eigh", certify
    if method == "gram":
        if not ctx.full_rank:
            return "eigh", certify
        return ("solve" if ctx.kappa <= GRAM_KAPPA_LIMIT else "gram"), certify
    # auto
    if ctx.kappa > GRAM_KAPPA_LIMIT:
        return "svd", False
    if rtol is not None:
        # a user tolerance that declares B rank deficient rules out the downdate route
        if ctx.full_rank and ctx.sv[-1] > rtol * ctx.sigma_max:
            return ("downdate" if s <= f else "solve"), False
        return "eigh", True
    if ctx.full_rank:
        return ("downdate" if s <= f else "solve"), False
    return "downdate", True


def errors_for_group(
    ctx: EvalContext,
    method: str,
    rtol: float | None,
    S: np.ndarray | None,
    F: np.ndarray | None,
    s: int,
    f: int,
    report: ErrorReport | None = None,
    *,
    xp: Any = None,
    certify: bool = False,
) -> np.ndarray:
    """Errors (host NumPy) of one group of patterns with ``|S| = s``; ``S`` or ``F`` given as host
    index arrays (the other may be None).  BLAS is limited for the batched LAPACK calls
    (:func:`gcsim._threads.batched_blas`)."""
    xp = get_namespace(xp)
    with batched_blas():
        return _errors_for_group(ctx, xp, method, rtol, S, F, s, f, report, certify)


def _errors_for_group(
    ctx: EvalContext,
    xp: Any,
    method: str,
    rtol: float | None,
    S: np.ndarray | None,
    F: np.ndarray | None,
    s: int,
    f: int,
    report: ErrorReport | None,
    certify: bool,
) -> np.ndarray:
    route, fallback = _route(ctx, method, s, f, rtol, certify)
    count = (S if S is not None else F).shape[0]  # type: ignore[union-attr]
    if report is not None:
        report.patterns += count
    if route == "empty":
        return np.full(count, ctx.total)
    compiled = is_numpy(xp) and _compiled.available()
    if route == "downdate":
        if S is None:
            S = _complement(F, ctx.n)  # type: ignore[arg-type]
        if compiled:
            # compiled loops first; the patterns they cannot certify take the batched kernel
            vals, ok = _compiled.downdate(ctx, S, GRAM_KAPPA_LIMIT**2)
            gray = np.zeros(count, dtype=bool)
            if not ok.all():
                rest = np.flatnonzero(~ok)
                vals[rest], gray[rest] = _kernel_downdate(ctx, xp, S[rest])
        else:
            vals, gray = _kernel_downdate(ctx, xp, S)
    else:
        if F is None:
            F = _complement(S, ctx.n)  # type: ignore[arg-type]
        if route == "svd":
            return ctx.total - _kernel_svd(ctx, xp, F, rtol)
        if route == "solve":
            if not compiled:
                return ctx.total - _kernel_solve(ctx, xp, F)
            proj, ok = _compiled.gram_solve(ctx, F)
            if not ok.all():  # a pivot <= 0: only possible far beyond GRAM_KAPPA_LIMIT
                proj[~ok] = _kernel_solve(ctx, xp, F[~ok])
            return ctx.total - proj
        kernel = _kernel_eigh if route == "eigh" else _kernel_gram
        proj, gray = kernel(ctx, xp, F, rtol)
        vals = ctx.total - proj
    if gray.any():
        if fallback:
            if F is None:
                F = _complement(S, ctx.n)  # type: ignore[arg-type]
            vals[gray] = ctx.total - _kernel_svd(ctx, xp, F[gray], rtol)
        elif report is not None:
            report.unreliable += int(gray.sum())
    return vals


def _complement(idx: np.ndarray, n: int) -> np.ndarray:
    """Sorted complements of index sets (count, k) -> (count, n-k)."""
    count, k = idx.shape
    mask = np.ones((count, n), dtype=bool)
    if k:
        np.put_along_axis(mask, idx, False, axis=1)
    return np.nonzero(mask)[1].reshape(count, n - k)


def per_row_bytes(ctx: EvalContext, method: str, s: int, f: int, rtol: float | None = None) -> int:
    """Working memory of one pattern on its route (sizes the batched chunks)."""
    route, _ = _route(ctx, method, s, f, rtol)
    if route == "downdate":
        words = 6 * s * s + 4 * s * ctx.m + 2 * s + 2 * s * (ctx.n - ctx.rank) + f
    elif route == "svd":
        words = 3 * ctx.mN * f + 2 * f * f + f * ctx.m
    else:
        words = 4 * f * f + 4 * f * ctx.m + 2 * f
    return 8 * words + 64


def check_method(method: str) -> str:
    """``method`` if it names a route of :data:`ROUTES`."""
    if not isinstance(method, str) or method not in ROUTES:
        raise InvalidArgumentError("method", f"must be one of {ROUTES}, got {method!r}")
    return method


def check_rtol(rtol: Any, method: str = "auto") -> float | None:
    """A relative tolerance in ``(0, 1)`` (None = the routes' defaults); ``"downdate"`` takes none."""
    if rtol is None:
        return None
    rtol = check_real("rtol", rtol, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    if method == "downdate":
        raise InvalidArgumentError(
            "rtol",
            "the 'downdate' route makes its rank decisions on B as a whole "
            "(gcsim.coding.evaluate) and takes no rtol; use method='auto', 'gram' or 'svd'",
        )
    return rtol


def optimal_errors(
    ctx: EvalContext,
    masks: np.ndarray,
    *,
    method: str = "auto",
    rtol: float | None = None,
    xp: Any = None,
    certify: bool = False,
    chunk: int | None = None,
    report: ErrorReport | None = None,
    progress: Callable[[list, int, str], Any] | None = None,
) -> np.ndarray:
    """Raw optimal errors ``err(B, F)`` of a ``(count, n)`` stack of non-straggler masks (host NumPy).

    Parameters
    ----------
    ctx : EvalContext
        From :func:`eval_context`.
    masks : numpy.ndarray of bool, (count, n)
        Checked non-straggler masks (True = arrives).
    method : str
        A route of :data:`ROUTES` (checked by :func:`check_method`).
    rtol : float or None
        Checked by :func:`check_rtol`.
    xp : None, "numpy", "cupy" or an array module
        Namespace of the batched linear algebra; the results come back to the host.
    certify : bool
        Send every pattern the chosen route cannot certify to the SVD route (the executor);
        without it the flagged patterns are counted in ``report`` (the analysis warns).
    chunk : int, optional
        Patterns per batched call (default: sized by a working-set budget of 48 MiB).
    progress : callable, optional
        ``progress(jobs, total, description)`` wraps the chunk loop (a progress bar).

    Returns
    -------
    numpy.ndarray (count,)
        Unclipped errors, grouped by ``|F|`` internally and returned in mask order.

    Examples
    --------
    >>> B = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> ctx = EvalContext(B, 1)
    >>> optimal_errors(ctx, np.array([[True, True, True], [True, False, False]])).round(12).tolist()
    [0.0, 1.0]
    """
    ns = get_namespace(xp)
    count, n = masks.shape
    out = np.empty(count)
    sizes = masks.sum(axis=1)
    jobs: list[tuple[int, np.ndarray]] = []
    for f in np.unique(sizes):
        rows = np.flatnonzero(sizes == f)
        step = chunk if chunk is not None else chunk_rows(per_row_bytes(ctx, method, n - int(f), int(f), rtol))
        jobs.extend((int(f), rows[a : a + step]) for a in range(0, rows.size, step))
    loop = jobs if progress is None else progress(jobs, len(jobs), "optimal error")
    for f, rows in loop:
        sub = masks[rows]
        s = n - f
        # stragglers and arrivals, each in index order (the stable argsort of the masks)
        S, F = _compiled.split_masks(sub, s)
        out[rows] = errors_for_group(ctx, method, rtol, S, F, s, f, report, xp=ns, certify=certify)
    return out
