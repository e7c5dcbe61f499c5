"""Gradient codes and the CERAR ring on real arrays, one code path for NumPy and CuPy (SPEC §6).

Every function here takes ``xp=None`` (the array namespace): ``None`` means NumPy,
``"numpy"``/``"cupy"`` or a module select one explicitly, and arrays are converted
into that namespace.  Array operations go through :mod:`array_api_compat`
(``array_namespace``), so the same lines run on NumPy on the CPU and on CuPy on a
GPU.  Gathers of principal submatrices use integer-array indexing, which both
NumPy and CuPy support (it is outside the minimal array-API standard).

Gradient coding (SPEC §1).  With partial gradients ``g_i`` (rows of ``gradients``,
zero-padded to ``m w`` with ``w = ceil(d/m)``) split into blocks ``g_i[k]``, stack
``Γ_G = [g_i[k]]`` row ``kN+i`` (shape ``(mN, w)``).  Worker ``j`` sends
``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]``, i.e. ``G̃ = Bᵀ Γ_G``; the PS with decoder
``X`` on the non-stragglers ``F`` outputs ``ĝ[l] = Σ_{j∈F} X[j,l] g̃_j``.  Then

.. math::  ĝ - ∇L = 𝒢 (B_F X - T),   𝒢 = Γ_Gᵀ  (columns g_i[k]),

so the *predicted* error is ``‖𝒢 (B_F X − T)‖_F²`` and, for isotropic gradients
(i.i.d. entries of variance 1), ``E‖ĝ − ∇L‖² = w ‖B_F X − T‖_F²``; with the optimal
decoder ``X* = B_F⁺ T`` that is ``w · err(B, F)``.

CERAR (SPEC §5).  :func:`run_cerar` runs the ring protocol round by round on ``N``
buffers and compares every worker's output with ``Σ_j g_j`` and with the prediction
``Σ_m E_{i,m} G_{i-m}`` from the design's error operators.

Batched evaluator.  :func:`batched_optimal_error` evaluates
``err(B, F) = mN − tr(H_Fᵀ Γ_FF⁺ H_F)`` (``Γ = BᵀB``, ``H = BᵀT``) for a stack of
straggler patterns in any namespace; on NumPy it matches
:func:`gcsim.coding.evaluate.optimal_error`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array_api import asarray as _asarray
from .._array_api import check_gradients as _check_gradients
from .._array_api import get_namespace, to_numpy
from .._array_api import infer_namespace as _infer
from .._validation import check_int, check_mask
from ..coding.evaluate import _pow2_exponents, optimal_error
from ..errors import InvalidArgumentError

__all__ = [
    "get_namespace",
    "to_numpy",
    "run_scheme",
    "SchemeRun",
    "batched_optimal_error",
]

# same threshold as gcsim.coding.evaluate.GRAM_KAPPA_LIMIT (a pivot below λ_max / 1e8 means "near-singular")
_KAPPA_LIMIT = 1e4


# ----------------------------------------------------------------------------------------------
# gradient coding end to end
# ----------------------------------------------------------------------------------------------

@dataclass
class SchemeRun:
    """Result of :func:`run_scheme` (arrays live in the namespace that computed them).

    Attributes
    ----------
    decoded : array (d,)
        ``ĝ``, the PS's estimate of ``∇L``.
    gradient : array (d,)
        The exact ``∇L = Σ_i g_i``.
    error : float
        Measured ``‖ĝ − ∇L‖²`` on the zero-padded length ``m·w`` (where the identity
        ``ĝ − ∇L = 𝒢(B_F X − T)`` holds: a worker's transmission mixes blocks, so the
        decoded padding coordinates need not be 0).
    error_truncated : float
        ``‖ĝ − ∇L‖²`` on the first ``d`` coordinates only (``<= error``).
    predicted_error : float
        ``‖𝒢 (B_F X − T)‖_F²`` (equal to ``error`` up to round-off).
    residual : float
        ``‖B_F X − T‖_F²`` (the optimal-decoding error ``err(B, F)`` for ``decoder="optimal"``).
    expected_isotropic : float
        ``w · residual``: the mean of ``error`` over gradients with i.i.d. unit-variance entries.
    decoder : numpy.ndarray (n, m)
        The decoder used, zero rows for stragglers.
    nonstragglers : numpy.ndarray (n,) bool
    transmissions : array (n, w)
        ``g̃_j`` of every worker (stragglers' rows are what they would have sent).
    block_length : int
        ``w = ceil(d/m)``.
    backend : str
        Name of the array namespace.
    """

    decoded: Any
    gradient: Any
    error: float
    error_truncated: float
    predicted_error: float
    residual: float
    expected_isotropic: float
    decoder: np.ndarray
    nonstragglers: np.ndarray
    transmissions: Any
    block_length: int
    backend: str


def _decoder_matrix(scheme: Any, mask: np.ndarray, decoder: Any, xp, B, T):
    """Decoder on F as an (|F|, m) xp array, plus the full (n, m) NumPy matrix."""
    n, m = scheme.n, scheme.m
    F = np.flatnonzero(mask)
    if isinstance(decoder, str):
        if decoder == "optimal":
            if F.size == 0:
                XF = xp.zeros((0, m), dtype=xp.float64)
            else:
                BF = B[:, _asarray(xp, F, dtype=xp.int64)]
                XF = xp.linalg.pinv(BF) @ T  # minimum-norm least squares X* = B_F⁺ T
        elif decoder in ("fixed", "reference"):
            if scheme.decoder is None:
                raise InvalidArgumentError("decoder", f"scheme {scheme.method!r} has no reference decoder; "
                                           "pass decoder='optimal' or an (n, m) array")
            XF = _asarray(xp, np.asarray(scheme.decoder)[F])
        else:
            raise InvalidArgumentError("decoder", f"must be 'optimal', 'fixed' or an (n, m) array, got {decoder!r}")
    else:
        Xh = to_numpy(decoder).astype(np.float64)
        if Xh.shape != (n, m) or not np.all(np.isfinite(Xh)):
            raise InvalidArgumentError("decoder", f"must be a finite (n, m) = {(n, m)} array, got shape {Xh.shape}")
        XF = _asarray(xp, Xh[F])
    X = np.zeros((n, m))
    X[F] = to_numpy(XF)
    return XF, X


def run_scheme(scheme: Any, gradients: Any, nonstragglers: Any, *, decoder: Any = "optimal",
               xp: Any = None) -> SchemeRun:
    """Encode real partial gradients, drop the stragglers, decode, and measure the error.

    Parameters
    ----------
    scheme : gcsim.coding.schemes.Scheme
        Encoder ``B`` (``(mN, n)``, block-major rows).
    gradients : array (N, d)
        Partial gradient ``g_i`` of part ``i`` (NumPy or CuPy), finite.
    nonstragglers : array of bool (n,)
        True = worker ``j``'s transmission arrives (``j ∈ F``).
    decoder : "optimal", "fixed" or array (n, m)
        ``X* = B_F⁺ T`` (default), the scheme's reference decoder restricted to ``F``,
        or a given decoder (rows outside ``F`` ignored).
    xp : None, "numpy", "cupy" or module
        Array namespace (default: CuPy for CuPy gradients, else NumPy).

    Returns
    -------
    SchemeRun

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> sch = encode(A, 1, "naive")
    >>> g = np.arange(12.0).reshape(3, 4)
    >>> r = run_scheme(sch, g, [True, True, False])
    >>> round(r.error, 9) == round(r.predicted_error, 9), round(r.residual, 12)
    (True, 0.333333333333)
    >>> r = run_scheme(sch, g, [True, True, True])
    >>> np.allclose(r.decoded, g.sum(axis=0)), r.error < 1e-20
    (True, True)
    """
    B_host = getattr(scheme, "B", None)
    if B_host is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    m, N, n = int(scheme.m), int(scheme.N), int(scheme.n)
    ns = _infer(xp, gradients)
    host = _check_gradients(gradients, N)
    mask = check_mask("nonstragglers", to_numpy(nonstragglers), n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", f"must be one mask of shape (n,) = ({n},)")
    d = host.shape[1]
    w = -(-d // m)
    g = _asarray(ns, gradients)
    if w * m != d:
        g = ns.concat([g, ns.zeros((N, w * m - d), dtype=ns.float64)], axis=1)
    # Γ_G: row k*N + i = g_i[k]
    GG = ns.reshape(ns.permute_dims(ns.reshape(g, (N, m, w)), (1, 0, 2)), (m * N, w))
    B = _asarray(ns, B_host)
    T = _asarray(ns, scheme.target())
    tilde = B.T @ GG                                     # (n, w): what every worker sends
    XF, X = _decoder_matrix(scheme, mask, decoder, ns, B, T)
    Fi = _asarray(ns, np.flatnonzero(mask), dtype=ns.int64)
    tilde_F = tilde[Fi, :]
    ghat_blocks = XF.T @ tilde_F                         # (m, w)
    true_blocks = ns.sum(ns.reshape(g, (N, m, w)), axis=0)
    diff = ghat_blocks - true_blocks
    R = B[:, Fi] @ XF - T                                # B_F X - T, (mN, m)
    pred = GG.T @ R                                      # 𝒢 (B_F X - T), (w, m)
    error = float(ns.sum(diff * diff))
    flat_diff = ns.reshape(diff, (m * w,))[:d]
    error_trunc = float(ns.sum(flat_diff * flat_diff))
    predicted = float(ns.sum(pred * pred))
    residual = float(ns.sum(R * R))
    decoded = ns.reshape(ghat_blocks, (m * w,))[:d]
    grad = ns.reshape(true_blocks, (m * w,))[:d]
    return SchemeRun(decoded=decoded, gradient=grad, error=error, error_truncated=error_trunc,
                     predicted_error=predicted, residual=residual,
                     expected_isotropic=w * residual, decoder=X, nonstragglers=mask, transmissions=tilde,
                     block_length=w, backend=ns.__name__)


# ----------------------------------------------------------------------------------------------
# batched optimal-error evaluator (Gram identity) in any namespace
# ----------------------------------------------------------------------------------------------

def batched_optimal_error(scheme: Any, nonstragglers: Any, *, xp: Any = None, rtol: float | None = None,
                          route: str = "auto", chunk: int = 2048) -> np.ndarray:
    """``err(B, F) = mN − tr(H_Fᵀ Γ_FF⁺ H_F)`` for a stack of patterns, in any array namespace.

    ``Γ = BᵀB`` and ``H = BᵀT`` are formed once on the device; patterns are grouped by
    ``|F|`` and processed in chunks of ``chunk`` as batched ``(|F|, |F|)`` problems.

    Routes:

    ``"auto"`` (default)
        ``"downdate"`` when ``B`` has full column rank with ``κ(B) <= 1e4`` and
        ``s <= |F|``, else ``"solve"``.
    ``"downdate"``
        Column deletion (Schur complement, as in :mod:`gcsim.coding.evaluate`): with
        ``K = Γ^{-1}`` and ``Y = K H``, ``err(F) = err([n]) + tr(Y_Sᵀ K_SS^{-1} Y_S)``,
        an ``s x s`` solve per pattern (``S`` = stragglers).
    ``"solve"``
        Batched Cholesky of the ``Γ_FF`` stack; patterns whose smallest pivot² is above
        ``max diag Γ_FF / 1e8`` (and whose factor reproduces ``Γ_FF``) are solved with
        ``linalg.solve`` (``Γ_FF Z = H_F``), the others go to ``"eigh"``.
    ``"eigh"``
        Rank-revealing: batched eigendecomposition of ``Γ_FF``, eigenvalues below
        ``tol · λ_max`` treated as zero, ``tol = max(rtol², 10 max(mN, |F|) u)`` (as in
        :mod:`gcsim.coding.evaluate`).
    Accuracy: the columns of ``B`` are first scaled by powers of two (exact; the error
    depends only on ``span(B_F)``).  A pattern is *certified* when the Cholesky pivots or
    the eigenvalues of ``Γ_FF`` show ``κ(B_F) <= 1e4`` (no eigenvalue below
    ``λ_max / 1e8``); its absolute error is then at most ``c |F| u κ(B_F)² mN`` (the Gram
    route squares κ), about ``|F| mN · 1e-8`` at worst.  Every pattern that is not
    certified (rank-deficient or ill-conditioned ``B_F``) is recomputed on the host by
    the orthogonal route of :func:`gcsim.coding.evaluate.optimal_error` (``method="svd"``),
    so no pattern returns an uncertified number.

    Parameters
    ----------
    scheme : Scheme
    nonstragglers : array of bool, (n,) or (count, n)
    xp : None, "numpy", "cupy" or module
    rtol : float, optional
        Relative singular-value tolerance of ``B_F`` for rank decisions.
    route : {"auto", "downdate", "solve", "eigh"}
    chunk : int
        Patterns per batched call.

    Returns
    -------
    numpy.ndarray (count,) or float
        Raw squared errors (host NumPy).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> sch = encode(A, 1, "naive")
    >>> batched_optimal_error(sch, [[1, 1, 0], [1, 0, 0], [0, 0, 0]]).round(12).tolist()
    [0.333333333333, 1.0, 3.0]
    """
    B_host = getattr(scheme, "B", None)
    if B_host is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    if route not in ("auto", "downdate", "solve", "eigh"):
        raise InvalidArgumentError("route", f"must be 'auto', 'downdate', 'solve' or 'eigh', got {route!r}")
    chunk = check_int("chunk", chunk, minimum=1)
    if rtol is not None and not (0.0 < float(rtol) < 1.0):
        raise InvalidArgumentError("rtol", f"must lie in (0, 1), got {rtol!r}")
    ns = get_namespace(xp)
    m, N, n = int(scheme.m), int(scheme.N), int(scheme.n)
    masks = check_mask("nonstragglers", to_numpy(nonstragglers), n)
    single = masks.ndim == 1
    masks = masks[None, :] if single else masks
    mN = m * N
    # exact power-of-two column equilibration (as gcsim.coding.evaluate): span(B_F), hence the
    # error, is unchanged, and columns scaled by 1e-9 no longer wreck the Gram matrix
    B_host = np.asarray(B_host, dtype=np.float64)
    B_host = np.ldexp(B_host, _pow2_exponents(B_host)[None, :])
    B = _asarray(ns, B_host)
    Gamma = B.T @ B
    H = ns.permute_dims(ns.sum(ns.reshape(B, (m, N, n)), axis=1), (1, 0))   # (n, m) = Bᵀ T
    out = np.empty(masks.shape[0])
    sizes = masks.sum(axis=1)
    u = float(np.finfo(np.float64).eps)
    down = None
    if route in ("auto", "downdate"):
        # κ(B)² = λ_max/λ_min of Γ; eigvalsh of the n x n Gram is cheap and its absolute error
        # (~u λ_max) is far below the κ <= 1e4 threshold (λ_min/λ_max >= 1e-8)
        lam = np.linalg.eigvalsh(to_numpy(Gamma))
        full = mN >= n and lam[-1] > 0 and lam[0] > 10.0 * max(mN, n) * u * lam[-1]
        if route == "downdate" and not full:
            raise InvalidArgumentError("route", "'downdate' needs B with full column rank")
        if full and (route == "downdate" or lam[-1] / lam[0] <= _KAPPA_LIMIT ** 2):
            K = ns.linalg.inv(Gamma)
            K = 0.5 * (K + K.T)
            Y = K @ H
            down = (K, Y, float(mN) - float(ns.sum(H * Y)))      # err([n]) = mN - tr(Hᵀ Γ⁻¹ H)
    for f in np.unique(sizes):
        rows = np.flatnonzero(sizes == f)
        f = int(f)
        if f == 0:
            out[rows] = float(mN)
            continue
        if down is not None and (route == "downdate" or n - f <= f):
            K, Y, err_full = down
            s_ = n - f
            Sidx = np.nonzero(~masks[rows])[1].reshape(rows.size, s_)
            for a in range(0, rows.size, chunk):
                if s_ == 0:
                    out[rows[a:a + chunk]] = err_full
                    continue
                Si = _asarray(ns, Sidx[a:a + chunk], dtype=ns.int64)
                KSS = K[Si[:, :, None], Si[:, None, :]]
                YS = Y[Si, :]
                Z = ns.linalg.solve(KSS, YS)
                out[rows[a:a + chunk]] = err_full + to_numpy(ns.sum(YS * Z, axis=(1, 2)))
            continue
        # F index sets, ascending, one per row
        Fidx = np.nonzero(masks[rows])[1].reshape(rows.size, f)
        floor = 10.0 * max(mN, f) * u
        tol = floor if rtol is None else max(float(rtol) ** 2, floor)
        for a in range(0, rows.size, chunk):
            Fi = _asarray(ns, Fidx[a:a + chunk], dtype=ns.int64)
            Gs = Gamma[Fi[:, :, None], Fi[:, None, :]]      # (count, f, f) principal submatrices
            h = H[Fi, :]                                   # (count, f, m)
            count = Fidx[a:a + chunk].shape[0]
            proj = np.full(count, np.nan)
            if route == "solve":
                # Cholesky pivots reveal near-singular Γ_FF (pivot² below λ-scale / GRAM_KAPPA_LIMIT²)
                ok = np.zeros(count, dtype=bool)
                try:
                    Lc = ns.linalg.cholesky(Gs)
                    piv = to_numpy(ns.min(ns.linalg.diagonal(Lc), axis=1)) ** 2
                    dmax = to_numpy(ns.max(ns.linalg.diagonal(Gs), axis=1))
                    ok = np.isfinite(piv) & (piv > dmax / _KAPPA_LIMIT ** 2)
                    # CuPy does not raise on a failed factorization: check L Lᵀ = Γ_FF as well
                    rec = to_numpy(ns.max(ns.abs(Lc @ ns.permute_dims(Lc, (0, 2, 1)) - Gs), axis=(1, 2)))
                    ok &= np.isfinite(rec) & (rec <= 1e-8 * dmax)
                except Exception:  # numpy refuses a stack with one non-PD matrix
                    ok[:] = False
                if ok.any():
                    oi = _asarray(ns, np.flatnonzero(ok), dtype=ns.int64)
                    Z = ns.linalg.solve(Gs[oi, ...], h[oi, ...])
                    proj[ok] = to_numpy(ns.sum(h[oi, ...] * Z, axis=(1, 2)))
                    bad = ~(np.isfinite(proj) & (proj <= mN * (1 + 1e-9)) & (proj >= -1e-9 * mN))
                    proj[ok & bad] = np.nan          # out of range: redo rank-revealing
            todo = ~np.isfinite(proj)
            if todo.any():
                ti = _asarray(ns, np.flatnonzero(todo), dtype=ns.int64)
                wv, V = ns.linalg.eigh(Gs[ti, ...])
                wmax = ns.max(wv, axis=1, keepdims=True)
                keep = (wv > tol * wmax) & (wmax > 0)
                cc = ns.permute_dims(V, (0, 2, 1)) @ h[ti, ...]   # (count, f, m)
                inv = ns.where(keep, 1.0 / ns.where(keep, wv, ns.ones_like(wv)), ns.zeros_like(wv))
                proj[todo] = to_numpy(ns.sum(inv[:, :, None] * cc * cc, axis=(1, 2)))
                # An eigenvalue of Γ_FF below λ_max/κ_lim² is a true zero of B_F or a singular value
                # the Gram route cannot resolve (it squares κ(B_F)): such patterns are not certified
                # and are recomputed on the host by the orthogonal (SVD) route of the analysis.
                gray = to_numpy(ns.any(wv < wmax / _KAPPA_LIMIT ** 2, axis=1) & (wmax[:, 0] > 0))
                if gray.any():
                    idx = np.flatnonzero(todo)[gray]
                    rows_gray = rows[a:a + chunk][idx]
                    proj[idx] = mN - optimal_error(scheme, masks[rows_gray], method="svd", rtol=rtol,
                                                   progress=False)
            out[rows[a:a + chunk]] = mN - proj
    out = np.clip(out, 0.0, float(mN))
    return float(out[0]) if single else out
