"""Error evaluators: optimal decoding, fixed decoders, expectations, worst case (SPEC §1, 1.1, 1.2).

All errors are **raw squared** errors unless ``normalized=True`` (then divided
by ``m*N``, so they lie in ``[0, 1]``).  Non-straggler masks follow the
convention of :mod:`gcsim.coding.stragglers`: ``True`` = the worker arrives.

Optimal-decoding error (SPEC §1)
--------------------------------
.. math::
   \\mathrm{err}(B, F) = \\min_X \\|B_F X - T\\|_F^2 = mN - \\|P_F T\\|_F^2
                      = mN - \\operatorname{tr}(H_F^\\top \\Gamma_{FF}^+ H_F),

with ``Γ = BᵀB`` and ``H = BᵀT`` precomputed once (proof:
``docs/theory/40_error_identities.md``).  Routes (``method=``):

``"downdate"``
    Column-deletion (Schur-complement) formula, valid when ``B`` has full
    column rank: with ``K = Γ^{-1}`` and the full solution ``Y = K H``,
    ``err(F) = err([n]) + tr(Y_Sᵀ K_SS^{-1} Y_S)`` -- an ``s x s`` solve per
    pattern, ``S`` the straggler set.  This is the rank-``s`` factor update
    used for exhaustive enumeration.
``"gram"``
    ``tr(H_Fᵀ Γ_FF^+ H_F)`` per pattern: batched Cholesky of the ``Γ_FF``
    stack with a pivot rank check; stacks that fail, or patterns with a pivot
    below ``1e-8 max diag Γ_FF``, go to a batched eigendecomposition with the
    explicit eigenvalue tolerance ``max(rtol^2, 10 max(mN, f) u) λ_max``.
``"svd"`` (alias ``"qr"``)
    Orthogonal route: batched SVD of the ``B_F`` stack, singular values below
    ``rtol σ_max`` (default ``max(mN, f) u``) count as zero; immune to the
    squaring of the condition number.
``"auto"`` (default)
    The Gram routes square the condition number: their relative error is
    about ``κ(B)^2 u`` of ``mN``.  ``auto`` computes the singular values of
    ``B`` once; if ``κ(B)`` (over the numerically non-zero singular values)
    exceeds :data:`GRAM_KAPPA_LIMIT` ``= 1e4`` (``κ^2 u ≈ 2e-8``) it uses the
    SVD route.  Otherwise it uses ``"downdate"`` when ``B`` has full column
    rank and ``s <= |F|`` (then ``κ(B_F) <= κ(B)`` by interlacing), else
    ``"gram"``; Gram patterns whose kept eigenvalues fall below
    ``λ_max / GRAM_KAPPA_LIMIT^2`` are recomputed with the SVD route.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._validation import check_finite_array, check_int, check_mask, check_real
from ..errors import InvalidArgumentError
from .schemes import Scheme, encode
from .stragglers import (AllPatternsModel, BernoulliModel, FixedModel, MarkovModel, StragglerModel,
                         TraceModel, WorstCaseModel, straggler_sets)

__all__ = [
    "GRAM_KAPPA_LIMIT",
    "optimal_error",
    "optimal_error_all",
    "optimal_decoder",
    "fixed_decoder_error",
    "expected_error",
    "worst_case_error",
    "expected_error_over_seeds",
    "ExpectedError",
    "WorstCaseError",
    "SeedsExpectedError",
    "condition_number",
]

#: Largest κ(B) for which ``method="auto"`` trusts the Gram routes (relative error ~ κ² u ≈ 2e-8).
GRAM_KAPPA_LIMIT = 1e4

_U = np.finfo(np.float64).eps
_METHODS = ("auto", "gram", "downdate", "svd", "qr")
# working-set budget of one batched chunk (bytes)
_CHUNK_BYTES = 48 * 2 ** 20


def _progress(iterable, total: int, desc: str, enabled: bool):
    if not enabled or total <= 1:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, total=total, desc=desc, leave=False)


# ----------------------------------------------------------------------------------------------
# precomputation
# ----------------------------------------------------------------------------------------------

class _Context:
    """Quantities precomputed once per scheme: Γ, H, SVD of B, and the full solution."""

    def __init__(self, B: np.ndarray, m: int):
        self.B = B
        self.m = m
        self.source = None
        self.mN, self.n = B.shape
        self.N = self.mN // m
        self.total = float(self.mN)
        # H = Bᵀ T: column l is the sum of the rows of block l
        self.H = B.reshape(m, self.N, self.n).sum(axis=1).T.copy()
        self.Gamma = B.T @ B
        U, sv, Vt = np.linalg.svd(B, full_matrices=False)
        self.sv = sv
        smax = float(sv[0]) if sv.size and sv[0] > 0 else 0.0
        self.sigma_max = smax
        tol = max(self.mN, self.n) * _U * smax
        nz = sv[sv > tol]
        self.rank = int(nz.size)
        self.kappa = float(smax / nz[-1]) if nz.size else float("inf")
        self.full_rank = self.rank == self.n and self.n > 0
        self.K = self.Y = None
        self.err_full = None
        if self.full_rank:
            # K = Γ^{-1} = V Σ^{-2} Vᵀ and Y = B⁺ T from the SVD (no squaring for Y)
            UT = U.T @ self._target()
            self.Y = (Vt.T / sv) @ UT
            self.K = (Vt.T / sv ** 2) @ Vt
            self.K = 0.5 * (self.K + self.K.T)
            resid = self._target() - U @ UT
            self.err_full = float(np.sum(resid ** 2))

    def _target(self) -> np.ndarray:
        return np.kron(np.eye(self.m), np.ones((self.N, 1)))


def _context(scheme: Any) -> _Context:
    cache = getattr(scheme, "_cache", None)
    if cache is not None and "eval" in cache and cache["eval"].source is getattr(scheme, "B", None):
        return cache["eval"]
    B = getattr(scheme, "B", None)
    m = getattr(scheme, "m", None)
    if B is None or m is None:
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    B = check_finite_array("scheme.B", B, ndim=2)
    m = check_int("scheme.m", m, minimum=1)
    if B.shape[0] % m:
        raise InvalidArgumentError("scheme.B", f"number of rows {B.shape[0]} is not a multiple of m = {m}")
    ctx = _Context(B, m)
    ctx.source = getattr(scheme, "B", None)  # the cache is valid only for this very array
    if cache is not None:
        cache["eval"] = ctx
    return ctx


def condition_number(scheme: Scheme) -> float:
    """κ(B) = σ_max / σ_min over the numerically non-zero singular values of ``B``.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> condition_number(encode(np.eye(3, dtype=int), 1, "naive"))
    1.0
    """
    return _context(scheme).kappa


# ----------------------------------------------------------------------------------------------
# batched kernels (all take index arrays; rows of the result = patterns)
# ----------------------------------------------------------------------------------------------

def _kernel_downdate(ctx: _Context, S: np.ndarray) -> np.ndarray:
    """err(F) = err([n]) + tr(Y_Sᵀ K_SS^{-1} Y_S) for straggler index sets S (count, s)."""
    count, s = S.shape
    if s == 0:
        return np.full(count, ctx.err_full)
    KSS = ctx.K[S[:, :, None], S[:, None, :]]
    YS = ctx.Y[S]
    Z = np.linalg.solve(KSS, YS)
    return ctx.err_full + np.einsum("cij,cij->c", YS, Z)


def _eig_tol(ctx: _Context, f: int, rtol: float | None) -> float:
    floor = 10.0 * max(ctx.mN, f) * _U
    return floor if rtol is None else max(rtol * rtol, floor)


def _kernel_eigh(ctx: _Context, F: np.ndarray, rtol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Rank-revealing Gram route; returns (proj, gray) with gray = needs the orthogonal route."""
    G = ctx.Gamma[F[:, :, None], F[:, None, :]]
    h = ctx.H[F]
    w, V = np.linalg.eigh(G)
    wmax = np.maximum(w[:, -1:], 0.0)
    keep = w > _eig_tol(ctx, F.shape[1], rtol) * wmax
    keep &= wmax > 0
    c = np.einsum("cji,cjl->cil", V, h)
    inv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)
    proj = np.einsum("ci,cil->c", inv, c * c)
    # An eigenvalue of Γ_FF below wmax/κ_lim² is either a true zero of B_F or a small
    # singular value that the Gram route cannot resolve (it squares κ): both cases are
    # handed to the orthogonal route, including the eigenvalues dropped as "zero" above.
    gray = np.any(w < wmax / GRAM_KAPPA_LIMIT ** 2, axis=1) & (wmax[:, 0] > 0)
    return proj, gray


def _kernel_gram(ctx: _Context, F: np.ndarray, rtol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky first (fast), eigendecomposition for failures and near-singular pivots."""
    G = ctx.Gamma[F[:, :, None], F[:, None, :]]
    h = ctx.H[F]
    count = F.shape[0]
    proj = np.empty(count)
    gray = np.zeros(count, dtype=bool)
    try:
        L = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        # numpy refuses the whole stack when one matrix is not positive definite:
        # retry in pieces so that only the failing pieces pay for the eigendecomposition
        if count <= 8:
            return _kernel_eigh(ctx, F, rtol)
        parts = np.array_split(np.arange(count), 8)
        for idx in parts:
            try:
                np.linalg.cholesky(G[idx])
            except np.linalg.LinAlgError:
                proj[idx], gray[idx] = _kernel_eigh(ctx, F[idx], rtol)
            else:
                proj[idx], gray[idx] = _kernel_gram(ctx, F[idx], rtol)
        return proj, gray
    piv = np.diagonal(L, axis1=1, axis2=2) ** 2
    dmax = np.max(np.diagonal(G, axis1=1, axis2=2), axis=1)
    ok = np.min(piv, axis=1) > dmax / GRAM_KAPPA_LIMIT ** 2
    if ok.any():
        Z = np.linalg.solve(G[ok], h[ok])
        proj[ok] = np.einsum("cij,cij->c", h[ok], Z)
    if (~ok).any():
        proj[~ok], gray[~ok] = _kernel_eigh(ctx, F[~ok], rtol)
    return proj, gray


def _kernel_svd(ctx: _Context, F: np.ndarray, rtol: float | None) -> np.ndarray:
    """Orthogonal route: ‖P_F T‖² from a batched SVD of the B_F stack."""
    count, f = F.shape
    BF = np.moveaxis(ctx.B.T[F], 1, 2)  # (count, mN, f)
    U, sv, _ = np.linalg.svd(BF, full_matrices=False)
    tol = (max(ctx.mN, f) * _U) if rtol is None else rtol
    keep = sv > tol * sv[:, :1]
    keep &= sv[:, :1] > 0
    UT = U.reshape(count, ctx.m, ctx.N, -1).sum(axis=2)  # (count, m, k) = (Uᵀ T)ᵀ
    return np.einsum("ck,clk->c", keep.astype(float), UT * UT)


def _chunk_rows(per_row_bytes: int) -> int:
    return max(1, int(_CHUNK_BYTES // max(per_row_bytes, 1)))


def _route(ctx: _Context, method: str, s: int, f: int, rtol: float | None = None) -> str:
    if f == 0:
        return "empty"
    if method in ("svd", "qr"):
        return "svd"
    if method == "downdate":
        if not ctx.full_rank:
            raise InvalidArgumentError("method", "'downdate' needs B with full column rank "
                                       f"(rank {ctx.rank} < n = {ctx.n}); use 'gram' or 'svd'")
        return "downdate"
    if method == "gram":
        return "gram"
    # auto
    if ctx.kappa > GRAM_KAPPA_LIMIT:
        return "svd"
    # a user tolerance that declares B rank deficient rules out the downdate route
    full_rank = ctx.full_rank and (rtol is None or ctx.sv[-1] > rtol * ctx.sigma_max)
    if full_rank and s <= f:
        return "downdate"
    return "gram-checked"


def _errors_for_group(ctx: _Context, method: str, rtol: float | None, S: np.ndarray | None,
                      F: np.ndarray | None, s: int, f: int) -> np.ndarray:
    """Errors of one group of patterns with |S| = s; S or F given as index arrays (other may be None)."""
    route = _route(ctx, method, s, f, rtol)
    count = (S if S is not None else F).shape[0]
    if route == "empty":
        return np.full(count, ctx.total)
    if route == "downdate":
        if S is None:
            S = _complement(F, ctx.n)
        return _kernel_downdate(ctx, S)
    if F is None:
        F = _complement(S, ctx.n)
    if route == "svd":
        return ctx.total - _kernel_svd(ctx, F, rtol)
    if route == "gram-checked":
        # B is rank-deficient, so κ(B_F) is not bounded by κ(B): Cholesky pivots do not
        # reveal ill-conditioning, the eigendecomposition does (see _kernel_eigh)
        proj, gray = _kernel_eigh(ctx, F, rtol)
    else:
        proj, gray = _kernel_gram(ctx, F, rtol)
    if route == "gram-checked" and gray.any():
        proj[gray] = _kernel_svd(ctx, F[gray], rtol)
    return ctx.total - proj


def _complement(idx: np.ndarray, n: int) -> np.ndarray:
    """Sorted complements of index sets (count, k) -> (count, n-k)."""
    count, k = idx.shape
    mask = np.ones((count, n), dtype=bool)
    if k:
        np.put_along_axis(mask, idx, False, axis=1)
    return np.nonzero(mask)[1].reshape(count, n - k)


def _per_row_bytes(ctx: _Context, method: str, s: int, f: int, rtol: float | None = None) -> int:
    """Working memory of one pattern on its route (sizes the batched chunks)."""
    route = _route(ctx, method, s, f, rtol)
    if route == "downdate":
        words = 3 * s * s + 4 * s * ctx.m + 2 * s
    elif route == "svd":
        words = 3 * ctx.mN * f + 2 * f * f + f * ctx.m
    else:
        words = 4 * f * f + 4 * f * ctx.m + 2 * f
    return 8 * words + 64


def _errors_masks(ctx: _Context, masks: np.ndarray, method: str, rtol: float | None,
                  progress: bool = False) -> np.ndarray:
    """Optimal errors of a (count, n) batch of non-straggler masks, grouped by |F|."""
    count, n = masks.shape
    out = np.empty(count)
    sizes = masks.sum(axis=1)
    jobs = []
    for f in np.unique(sizes):
        rows = np.flatnonzero(sizes == f)
        step = _chunk_rows(_per_row_bytes(ctx, method, n - int(f), int(f), rtol))
        jobs.extend((int(f), rows[a:a + step]) for a in range(0, rows.size, step))
    for f, rows in _progress(jobs, len(jobs), "optimal error", progress):
        sub = masks[rows]
        s = n - f
        # stable argsort: False (stragglers) first, True (arrivals) after, each in index order
        order = np.argsort(sub, axis=1, kind="stable")
        out[rows] = _errors_for_group(ctx, method, rtol, order[:, :s], order[:, s:], s, f)
    return out


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise InvalidArgumentError("method", f"must be one of {_METHODS}, got {method!r}")
    return method


def _check_rtol(rtol: Any) -> float | None:
    if rtol is None:
        return None
    return check_real("rtol", rtol, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)


def _finish(values: np.ndarray, ctx: _Context, normalized: bool) -> np.ndarray:
    values = np.clip(values, 0.0, ctx.total)
    return values / ctx.total if normalized else values


# ----------------------------------------------------------------------------------------------
# public: optimal error
# ----------------------------------------------------------------------------------------------

def optimal_error(scheme: Scheme, nonstragglers: Any, *, normalized: bool = False, method: str = "auto",
                  rtol: float | None = None, progress: bool = True) -> float | np.ndarray:
    """Optimal-decoding error ``err(B, F) = min_X ‖B_F X - T‖_F² = mN - ‖P_F T‖_F²`` (SPEC §1).

    Parameters
    ----------
    scheme : Scheme
        The encoder (see :func:`gcsim.coding.encode`).
    nonstragglers : array_like of bool, shape (n,) or (count, n)
        True = the worker's transmission arrives (``j ∈ F``).
    normalized : bool
        Divide by ``mN`` (result in ``[0, 1]``); default: raw squared error.
    method : {"auto", "downdate", "gram", "svd", "qr"}
        Evaluation route (module docstring); ``"qr"`` is an alias of ``"svd"``.
    rtol : float, optional
        Relative singular-value tolerance of ``B_F`` (rank decisions); default
        ``max(mN, |F|) u`` for the SVD route, eigenvalue tolerance
        ``10 max(mN, |F|) u λ_max`` for the Gram route.
    progress : bool
        Show a tqdm bar for long batches.

    Returns
    -------
    float or numpy.ndarray
        A float for one mask, an array ``(count,)`` for a batch.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> sch = encode(A, 1, "naive")
    >>> round(optimal_error(sch, [True, True, True]), 12)
    0.0
    >>> round(optimal_error(sch, [True, False, False]), 12)  # only worker 0: parts 0, 2
    1.0
    >>> optimal_error(sch, [[1, 1, 0], [0, 0, 0]]).round(12).tolist()
    [0.333333333333, 3.0]
    """
    method = _check_method(method)
    rtol = _check_rtol(rtol)
    ctx = _context(scheme)
    masks = check_mask("nonstragglers", nonstragglers, ctx.n)
    single = masks.ndim == 1
    masks2 = masks[None, :] if single else masks
    if method == "gram" and ctx.kappa > GRAM_KAPPA_LIMIT:
        warnings.warn(f"κ(B) = {ctx.kappa:.3g} exceeds GRAM_KAPPA_LIMIT = {GRAM_KAPPA_LIMIT:g}: the Gram "
                      "route squares it and loses accuracy; use method='svd'", RuntimeWarning, stacklevel=2)
    vals = _finish(_errors_masks(ctx, masks2, method, rtol, progress), ctx, normalized)
    return float(vals[0]) if single else vals


def optimal_error_all(scheme: Scheme, s: int, *, normalized: bool = False, method: str = "auto",
                      rtol: float | None = None, chunk: int | None = None, progress: bool = True) -> np.ndarray:
    """Optimal error of every straggler set ``|S| = s`` (exhaustive enumeration).

    Patterns are in lexicographic order of ``S`` (as produced by
    :func:`gcsim.coding.stragglers.straggler_sets`).  With a full-column-rank,
    well-conditioned ``B`` each pattern costs one ``s x s`` solve (column
    deletion formula); enumeration runs in chunks of ``chunk`` patterns.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(3, dtype=int), 1, "naive")
    >>> optimal_error_all(sch, 1).tolist()
    [1.0, 1.0, 1.0]
    """
    method = _check_method(method)
    rtol = _check_rtol(rtol)
    ctx = _context(scheme)
    s = check_int("s", s, minimum=0, maximum=ctx.n)
    total = math.comb(ctx.n, s)
    f = ctx.n - s
    step = (check_int("chunk", chunk, minimum=1) if chunk is not None
            else min(_chunk_rows(_per_row_bytes(ctx, method, s, f, rtol)), 1 << 16))
    out = np.empty(total)
    starts = range(0, total, step)
    for a in _progress(starts, len(starts), f"all C({ctx.n},{s}) patterns", progress):
        S = straggler_sets(ctx.n, s, a, a + step)
        out[a:a + S.shape[0]] = _errors_for_group(ctx, method, rtol, S, None, s, f)
    return _finish(out, ctx, normalized)


def optimal_decoder(scheme: Scheme, nonstragglers: Any) -> np.ndarray:
    """The minimum-norm optimal decoder ``X* = B_F⁺ T`` embedded in ``(n, m)`` (zero rows off ``F``).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> optimal_decoder(sch, [True, False]).tolist()
    [[1.0], [0.0]]
    """
    ctx = _context(scheme)
    mask = check_mask("nonstragglers", nonstragglers, ctx.n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    X = np.zeros((ctx.n, ctx.m))
    if mask.any():
        X[mask] = np.linalg.lstsq(ctx.B[:, mask], ctx._target(), rcond=None)[0]
    return X


# ----------------------------------------------------------------------------------------------
# fixed decoders
# ----------------------------------------------------------------------------------------------

def fixed_decoder_error(scheme: Scheme, nonstragglers: Any, decoder: Any = None, *, rescale: Any = None,
                        p: Any = None, normalized: bool = False) -> float | np.ndarray:
    """Fixed-decoder error ``err_X(B, F) = ‖B_F (c X_F) - T‖_F²`` (SPEC §1).

    The decoder ``X`` (default: ``scheme.decoder``) is chosen before the
    stragglers are known; rows outside ``F`` are zeroed.  ``err <= err_X``.

    Parameters
    ----------
    decoder : array_like (n, m), optional
    rescale : None, float, "bernoulli", "arrivals" or "optimal"
        ``c = 1``; a fixed scalar; ``1/(1-p)`` (per worker when ``p`` is an
        array: row ``j`` scaled by ``1/(1-p_j)``); ``n/|F|``; or the best
        scalar per pattern ``c = <B_F X_F, T> / ‖B_F X_F‖²``.
    p : float or array_like, optional
        Straggling probability for ``rescale="bernoulli"``.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> fixed_decoder_error(sch, [True, False])
    1.0
    >>> fixed_decoder_error(sch, [True, True], rescale=0.5)
    0.5
    """
    ctx = _context(scheme)
    X = getattr(scheme, "decoder", None) if decoder is None else decoder
    if X is None:
        raise InvalidArgumentError("decoder", f"scheme {getattr(scheme, 'method', '?')!r} has no reference "
                                   "decoder; pass decoder=...")
    X = check_finite_array("decoder", X, ndim=2)
    if X.shape != (ctx.n, ctx.m):
        raise InvalidArgumentError("decoder", f"must have shape (n, m) = {(ctx.n, ctx.m)}, got {X.shape}")
    masks = check_mask("nonstragglers", nonstragglers, ctx.n)
    single = masks.ndim == 1
    masks2 = masks[None, :] if single else masks
    mode = None
    if rescale is None:
        pass
    elif isinstance(rescale, str):
        if rescale == "bernoulli":
            if p is None:
                raise InvalidArgumentError("p", "rescale='bernoulli' needs p=...")
            pj = BernoulliModel(ctx.n, p).p
            X = X / (1.0 - pj)[:, None]
        elif rescale in ("arrivals", "optimal"):
            mode = rescale
        else:
            raise InvalidArgumentError("rescale", "must be None, a number, 'bernoulli', 'arrivals' or 'optimal', "
                                       f"got {rescale!r}")
    else:
        X = X * check_real("rescale", rescale)
    T = ctx._target()
    out = np.empty(masks2.shape[0])
    step = _chunk_rows(8 * (3 * ctx.mN * ctx.m + ctx.n * ctx.m))
    for a in range(0, masks2.shape[0], step):
        mk = masks2[a:a + step]
        R = np.matmul(ctx.B, mk[:, :, None] * X[None])  # B_F X_F, (count, mN, m)
        if mode == "arrivals":
            R *= (ctx.n / np.maximum(mk.sum(axis=1), 1))[:, None, None]
        elif mode == "optimal":
            num = np.einsum("cil,il->c", R, T)
            den = np.einsum("cil,cil->c", R, R)
            R *= np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)[:, None, None]
        out[a:a + mk.shape[0]] = np.sum((R - T[None]) ** 2, axis=(1, 2))
    if normalized:
        out = out / ctx.total
    return float(out[0]) if single else out


# ----------------------------------------------------------------------------------------------
# expectations
# ----------------------------------------------------------------------------------------------

@dataclass
class ExpectedError:
    """Expected error under a straggler model (SPEC §1.2).

    Attributes
    ----------
    mean : float
    ci : tuple of float
        95% confidence interval (zero width when ``method == "exact"``).
    method : str
        ``"exact"`` or ``"monte-carlo n=<samples>"`` (``"+batch-means"`` for Markov chains).
    count : int
        Number of patterns evaluated.
    stderr : float
        Standard error of the mean (0 for exact).
    normalized : bool
    model : str
        ``model.describe()``.
    values : numpy.ndarray or None
        Per-pattern errors when ``keep_values=True`` (for Bernoulli models the
        patterns carry unequal weights: all ``2^n`` patterns when exact, the
        concatenated strata when stratified).
    """

    mean: float
    ci: tuple
    method: str
    count: int
    stderr: float = 0.0
    normalized: bool = False
    model: str = ""
    values: np.ndarray | None = field(default=None, repr=False)


def _mc_result(values: np.ndarray, label: str, *, batches: int | None = None) -> tuple[float, tuple, float]:
    from scipy import stats
    count = values.size
    mean = float(values.mean())
    if batches:
        # batch means for correlated (Markov) sequences
        b = max(2, min(batches, count // 2))
        usable = (count // b) * b
        bm = values[:usable].reshape(b, -1).mean(axis=1)
        se = float(bm.std(ddof=1) / math.sqrt(b))
        q = float(stats.t.ppf(0.975, b - 1))
    else:
        se = float(values.std(ddof=1) / math.sqrt(count)) if count > 1 else float("inf")
        q = float(stats.t.ppf(0.975, max(count - 1, 1)))
    return mean, (mean - q * se, mean + q * se), se


def _evaluator(scheme: Scheme, decoder: Any, rescale: Any, p: Any, method: str, progress: bool
               ) -> tuple[Callable[[np.ndarray], np.ndarray], bool]:
    """Function masks -> raw errors, and whether it is the optimal decoder."""
    if isinstance(decoder, str) and decoder == "optimal":
        ctx = _context(scheme)
        return (lambda mk: _finish(_errors_masks(ctx, mk, method, None, progress), ctx, False)), True
    if isinstance(decoder, str):
        if decoder != "reference":
            raise InvalidArgumentError("decoder", f"must be 'optimal', 'reference' or an (n, m) array, got {decoder!r}")
        X = None
    else:
        X = decoder
    return (lambda mk: np.atleast_1d(fixed_decoder_error(scheme, mk, X, rescale=rescale, p=p))), False


def expected_error(scheme: Scheme, model: StragglerModel, *, exact_limit: int = 20000, samples: int = 2000,
                   seed: int = 0, decoder: Any = "optimal", rescale: Any = None, normalized: bool = False,
                   method: str = "auto", keep_values: bool = False, progress: bool = True) -> ExpectedError:
    """Expected error ``E_S[err]`` under a straggler model (SPEC §1.2).

    * ``"fixed"``: exact average over all ``C(n, s)`` sets when
      ``C(n, s) <= exact_limit``, else Monte Carlo with ``samples`` draws.
    * ``"all"``: always the exact average over every ``s``-subset.
    * ``"bernoulli"``: exact weighted sum over all ``2^n`` patterns when
      ``2^n <= exact_limit`` (weights ``Π p_j Π (1-p_j)``; for homogeneous
      ``p`` this is the sum over ``s`` with binomial weights).  Otherwise, for
      homogeneous ``p``, stratified Monte Carlo over ``s = |S|`` with binomial
      weights (strata with ``C(n, s)`` within ``exact_limit`` enumerated
      exactly, about ``samples`` draws in all); heterogeneous ``p``: plain
      Monte Carlo.
    * ``"markov"``: the chains start stationary and workers are independent,
      so each iteration's pattern is Bernoulli(``π_j``): exact as above when
      tractable, else Monte Carlo over ``samples`` consecutive iterations with
      a batch-means confidence interval.
    * ``"trace"``: exact average over the trace's iterations.
    * ``"worst"``: not an expectation -- use :func:`worst_case_error`.

    Parameters
    ----------
    decoder : "optimal", "reference" or array (n, m)
        Optimal decoding, the scheme's reference decoder or a given decoder
        (``rescale``/``p`` as in :func:`fixed_decoder_error`).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> from gcsim.coding.stragglers import straggler_model
    >>> sch = encode(np.eye(3, dtype=int), 1, "naive")
    >>> res = expected_error(sch, straggler_model("fixed", 3, s=1))
    >>> res.mean, res.ci, res.method
    (1.0, (1.0, 1.0), 'exact')
    >>> round(expected_error(sch, straggler_model("bernoulli", 3, p=0.2)).mean, 12)
    0.6
    """
    if not isinstance(model, StragglerModel):
        raise InvalidArgumentError("model", "must be a straggler model (see straggler_model)")
    exact_limit = check_int("exact_limit", exact_limit, minimum=0)
    samples = check_int("samples", samples, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    method = _check_method(method)
    ctx = _context(scheme)
    if model.n != ctx.n:
        raise InvalidArgumentError("model", f"has n = {model.n} workers, the scheme has n = {ctx.n}")
    if isinstance(model, WorstCaseModel):
        raise InvalidArgumentError("model", "the worst case is not an expectation; use worst_case_error(scheme, s)")
    p_model = getattr(model, "p", None) if not isinstance(model, MarkovModel) else model.stationary
    evaluate, is_optimal = _evaluator(scheme, decoder, rescale, None if rescale != "bernoulli" else p_model,
                                      method, progress)
    scale = 1.0 / ctx.total if normalized else 1.0
    desc = model.describe()

    def exact(values, weights=None):
        values = values * scale
        mean = float(np.mean(values) if weights is None else np.dot(weights, values))
        return ExpectedError(mean, (mean, mean), "exact", int(values.size), 0.0, normalized, desc,
                             values if keep_values else None)

    def monte_carlo(masks, batches=None, label="monte-carlo"):
        values = evaluate(masks) * scale
        mean, ci, se = _mc_result(values, label, batches=batches)
        tag = f"monte-carlo n={values.size}" + ("+batch-means" if batches else "")
        return ExpectedError(mean, ci, tag, int(values.size), se, normalized, desc,
                             values if keep_values else None)

    if isinstance(model, TraceModel):
        return exact(evaluate(model.masks()))
    if isinstance(model, FixedModel):  # includes AllPatternsModel
        total = math.comb(ctx.n, model.s)
        if isinstance(model, AllPatternsModel) or total <= exact_limit:
            if is_optimal:
                vals = optimal_error_all(scheme, model.s, method=method, progress=progress)
            else:
                vals = np.concatenate([evaluate(mk) for mk in model.iter_chunks()]) if total else np.zeros(0)
            return exact(vals)
        return monte_carlo(model.sample(samples, seed))
    if isinstance(model, (BernoulliModel, MarkovModel)):
        pj = model.p if isinstance(model, BernoulliModel) else model.stationary
        if ctx.n < 63 and 2 ** ctx.n <= exact_limit:
            masks = ((np.arange(2 ** ctx.n)[:, None] >> np.arange(ctx.n)[None, :]) & 1).astype(bool)
            weights = BernoulliModel(ctx.n, pj).weights(masks)
            return exact(evaluate(masks), weights)
        if isinstance(model, MarkovModel):
            return monte_carlo(model.sample(samples, seed), batches=20)
        if model.homogeneous:
            return _stratified_bernoulli(scheme, ctx, float(model.p[0]), evaluate, is_optimal, method,
                                         exact_limit, samples, seed, scale, normalized, desc, keep_values)
        return monte_carlo(model.sample(samples, seed))
    # any other model with a sample method: Monte Carlo
    return monte_carlo(np.asarray(model.sample(samples, seed), dtype=bool))


def _stratified_bernoulli(scheme, ctx, p, evaluate, is_optimal, method, exact_limit, samples, seed, scale,
                          normalized, desc, keep_values) -> ExpectedError:
    """Homogeneous Bernoulli(p) by strata |S| = s with binomial weights w_s.

    ``E = Σ_s w_s μ_s`` (Lemma 7 of docs/theory/40_error_identities.md).  The
    heaviest strata whose ``C(n, s)`` fit in ``exact_limit`` patterns are
    enumerated exactly; the others get Monte Carlo samples in proportion to
    ``w_s`` (at least 2 each).  Strata with ``w_s < 1e-15`` are skipped and
    their largest possible contribution ``Σ w_s mN`` widens the interval.
    Variance ``Σ w_s² σ_s² / n_s``; 95% normal interval.
    """
    from scipy import stats
    n = ctx.n
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    budget = exact_limit
    exact_s: list[int] = []
    for s in np.argsort(-w, kind="stable"):
        c = math.comb(n, int(s))
        if w[s] >= 1e-15 and c <= budget:
            exact_s.append(int(s))
            budget -= c
    mc_s = [s for s in range(n + 1) if s not in exact_s and w[s] >= 1e-15]
    skipped = float(sum(w[s] for s in range(n + 1) if s not in exact_s and s not in mc_s))
    mean, var, count, kept = 0.0, 0.0, 0, []
    for s in exact_s:
        if is_optimal:
            vals = optimal_error_all(scheme, s, method=method, progress=False)
        else:
            vals = evaluate(FixedModel(n, s).enumerate())
        vals = vals * scale
        mean += w[s] * float(vals.mean())
        count += vals.size
        kept.append(vals)
    wmc = float(sum(w[s] for s in mc_s))
    for s in mc_s:
        ns = max(2, int(round(samples * w[s] / wmc))) if wmc > 0 else 2
        vals = evaluate(FixedModel(n, s).sample(ns, seed=seed * (n + 1) + s)) * scale
        mean += w[s] * float(vals.mean())
        var += w[s] ** 2 * float(vals.var(ddof=1)) / ns
        count += vals.size
        kept.append(vals)
    se = math.sqrt(var)
    slack = skipped * ctx.total * scale
    half = 1.959963984540054 * se
    mean = float(mean)
    ci = (float(mean - half), float(mean + half + slack))
    if not mc_s:  # every stratum was enumerated: exact
        return ExpectedError(mean, (mean, float(mean + slack)), "exact", count, 0.0, normalized, desc,
                             np.concatenate(kept) if keep_values else None)
    label = f"monte-carlo n={count} (stratified by |S|, {len(exact_s)} strata exact)"
    return ExpectedError(mean, ci, label, count, se, normalized, desc,
                         np.concatenate(kept) if keep_values else None)


# ----------------------------------------------------------------------------------------------
# worst case
# ----------------------------------------------------------------------------------------------

@dataclass
class WorstCaseError:
    """Worst-case error over ``|S| = s`` (SPEC §1.1).

    Attributes
    ----------
    value : float
        Largest error found (exact maximum when ``method == "exact"``).
    mask : numpy.ndarray
        Non-straggler mask of the worst set (True = arrives).
    stragglers : numpy.ndarray
        Indices of the worst straggler set.
    method : str
        ``"exact"`` or ``"search (lower estimate)"``.
    evaluations : int
        Number of patterns evaluated.
    normalized : bool
    """

    value: float
    mask: np.ndarray
    stragglers: np.ndarray
    method: str
    evaluations: int
    normalized: bool = False


def worst_case_error(scheme: Scheme, s: int, *, exact_limit: int = 20000, seed: int = 0, iterations: int = 200,
                     restarts: int = 4, normalized: bool = False, method: str = "auto",
                     progress: bool = True) -> WorstCaseError:
    """Worst-case optimal-decoding error ``max_{|S| = s} err(B, [n] \\ S)``.

    Exact (enumeration of all ``C(n, s)`` sets) when ``C(n, s) <= exact_limit``;
    otherwise a seeded search reported as a *lower estimate*: greedy
    construction (add the straggler that hurts most), steepest-ascent swaps
    (every ``(i ∈ S, j ∉ S)`` exchange evaluated as one batch) and
    ``restarts`` perturbation restarts (iterated local search), at most
    ``iterations`` batched swap rounds in all.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> res = worst_case_error(encode(A, 1, "naive"), 2)
    >>> res.value, res.method, res.stragglers.tolist()
    (1.0, 'exact', [0, 1])
    """
    method = _check_method(method)
    ctx = _context(scheme)
    n = ctx.n
    s = check_int("s", s, minimum=0, maximum=n)
    exact_limit = check_int("exact_limit", exact_limit, minimum=0)
    seed = check_int("seed", seed, minimum=0)
    iterations = check_int("iterations", iterations, minimum=0)
    restarts = check_int("restarts", restarts, minimum=0)
    scale = 1.0 / ctx.total if normalized else 1.0

    def result(S, value, how, evals):
        mask = np.ones(n, dtype=bool)
        mask[np.asarray(S, dtype=np.int64)] = False
        return WorstCaseError(float(value) * scale, mask, np.sort(np.asarray(S, dtype=np.int64)), how, int(evals),
                              normalized)

    total = math.comb(n, s)
    if total <= exact_limit or total == 1:
        vals = optimal_error_all(scheme, s, method=method, progress=progress)
        best = int(np.argmax(vals))
        return result(straggler_sets(n, s, best, best + 1)[0], vals[best], "exact", total)

    def errs(sets: np.ndarray) -> np.ndarray:
        k = sets.shape[1]
        return np.clip(_errors_for_group(ctx, method, None, np.sort(sets, axis=1), None, k, n - k), 0.0, ctx.total)

    evals = 0
    # greedy construction
    S: list[int] = []
    for _ in range(s):
        cand = np.setdiff1d(np.arange(n), S)
        sets = np.column_stack([np.tile(np.array(S, dtype=np.int64), (cand.size, 1)), cand])
        v = errs(sets)
        evals += cand.size
        S.append(int(cand[int(np.argmax(v))]))
    cur = np.array(S, dtype=np.int64)
    cur_val = float(errs(cur[None])[0])
    best, best_val = cur.copy(), cur_val
    rng = np.random.default_rng(seed)
    rounds = 0
    bar = _progress(range(restarts + 1), restarts + 1, "worst-case search", progress)
    for r in bar:
        if r > 0:  # perturb the best set by a few random swaps
            cur = best.copy()
            k = max(1, min(s, n - s, int(rng.integers(1, 4))))
            outside = np.setdiff1d(np.arange(n), cur)
            cur[rng.choice(s, size=k, replace=False)] = rng.choice(outside, size=k, replace=False)
            cur_val = float(errs(cur[None])[0])
            evals += 1
        while rounds < iterations:
            rounds += 1
            outside = np.setdiff1d(np.arange(n), cur)
            ii, jj = np.meshgrid(np.arange(s), outside, indexing="ij")
            sets = np.repeat(cur[None], ii.size, axis=0)
            sets[np.arange(ii.size), ii.ravel()] = jj.ravel()
            v = errs(sets)
            evals += ii.size
            k = int(np.argmax(v))
            if v[k] <= cur_val * (1 + 1e-12) + 1e-15:
                break
            cur, cur_val = sets[k].copy(), float(v[k])
        if cur_val > best_val:
            best, best_val = cur.copy(), cur_val
        if rounds >= iterations:
            break
    return result(best, best_val, "search (lower estimate)", evals)


# ----------------------------------------------------------------------------------------------
# expectation over construction seeds
# ----------------------------------------------------------------------------------------------

@dataclass
class SeedsExpectedError:
    """Expectation over construction seeds of a randomized encoder (SPEC §1.2).

    ``mean`` averages the per-seed expectations; ``ci`` is a 95% t-interval
    over seeds (it combines with each per-seed CI only through the spread of
    the per-seed means); ``per_seed`` holds the :class:`ExpectedError` of each seed.
    """

    mean: float
    ci: tuple
    method: str
    seeds: list
    values: np.ndarray
    per_seed: list = field(repr=False, default_factory=list)


_EVAL_KEYS = ("exact_limit", "samples", "decoder", "rescale", "normalized", "keep_values", "progress")


def expected_error_over_seeds(assignment: Any, m: int, method: str, model: StragglerModel, seeds: Any,
                              **kw: Any) -> SeedsExpectedError:
    """``E_seed E_S[err]`` for a randomized construction (one :func:`encode` per seed).

    Keyword arguments named like those of :func:`expected_error`
    (``exact_limit``, ``samples``, ``decoder``, ``rescale``, ``normalized``,
    ``keep_values``, ``progress``, plus ``eval_seed`` and ``eval_method``) go
    to the evaluation; the rest (``eps``, ``dist``, ``s``, ...) to :func:`encode`.

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> res = expected_error_over_seeds(A, 2, "rd", straggler_model("fixed", 3, s=1), [0, 1, 2])
    >>> len(res.per_seed), res.method
    (3, 'mean over 3 seeds of exact')
    """
    seeds = [check_int("seeds", sd, minimum=0) for sd in np.atleast_1d(np.asarray(seeds)).tolist()]
    if not seeds:
        raise InvalidArgumentError("seeds", "must contain at least one seed")
    eval_kw = {k: kw.pop(k) for k in list(kw) if k in _EVAL_KEYS}
    if "eval_seed" in kw:
        eval_kw["seed"] = kw.pop("eval_seed")
    if "eval_method" in kw:
        eval_kw["method"] = kw.pop("eval_method")
    per = []
    for sd in seeds:
        sch = encode(assignment, m, method, seed=sd, **kw)
        per.append(expected_error(sch, model, **eval_kw))
    values = np.array([r.mean for r in per])
    mean = float(values.mean())
    if values.size > 1:
        from scipy import stats
        se = values.std(ddof=1) / math.sqrt(values.size)
        q = float(stats.t.ppf(0.975, values.size - 1))
        ci = (mean - q * se, mean + q * se)
    else:
        ci = (float("-inf"), float("inf"))
    inner = sorted({r.method for r in per})
    return SeedsExpectedError(mean, ci, f"mean over {len(seeds)} seeds of {', '.join(inner)}", seeds, values, per)
