"""Gradient codes and the CERAR ring on real arrays, one code path for NumPy and CuPy (docs/guides/executor.md).

Every function here takes ``xp=None`` (the array namespace): ``None`` means NumPy,
``"numpy"``/``"cupy"`` or a module select one explicitly, and arrays are converted
into that namespace.  Array operations go through :mod:`array_api_compat`
(``array_namespace``), so the same lines run on NumPy on the CPU and on CuPy on a
GPU.  Gathers of principal submatrices use integer-array indexing, which both
NumPy and CuPy support (it is outside the minimal array-API standard).

Gradient coding (theory §5.1).  With partial gradients ``g_i`` (rows of ``gradients``,
zero-padded to ``m w`` with ``w = ceil(d/m)``) split into blocks ``g_i[k]``, stack
``Γ_G = [g_i[k]]`` row ``kN+i`` (shape ``(mN, w)``).  Worker ``j`` sends
``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]``, i.e. ``G̃ = Bᵀ Γ_G``; the PS with decoder
``X`` on the non-stragglers ``F`` outputs ``ĝ[l] = Σ_{j∈F} X[j,l] g̃_j``.  Then

.. math::  ĝ - ∇L = 𝒢 (B_F X - T),   𝒢 = Γ_Gᵀ  (columns g_i[k]),

so the *predicted* error is ``‖𝒢 (B_F X − T)‖_F²`` and, for isotropic gradients
(i.i.d. entries of variance 1), ``E‖ĝ − ∇L‖² = w ‖B_F X − T‖_F²``; with the optimal
decoder ``X* = B_F⁺ T`` that is ``w · err(B, F)``.

Decoder tables.  ``decoder=table`` (a :class:`~gcsim.coding.decoder_table.DecoderTable` or a
``StructuredDecoderTable``, e.g. one loaded with ``load_decoder_table``) reads the pattern's
stored decoder; the table must have been built for this encoder (checked entry for entry), and a
pattern it does not cover is refused unless ``fallback="optimal"`` (theory §47.6-7).

Structured codes.  A :class:`~gcsim.coding.structured.StructuredRD` or a
:class:`~gcsim.coding.sparse_routes.SparseRD` runs without its dense ``B``: the transmissions
``Bᵀ Γ_G`` and the residual ``B_F X − T`` go through integer gathers of the incidence
(:class:`gcsim.coding.structured_decoders.RDOperator`, chunked), and the optimal decoder comes
from the structure (:func:`gcsim.coding.structured_decoders.structured_decoder`: Corollary 47.7,
or conjugate gradients certified by Theorem 44.7), the same lines on NumPy and CuPy.

CERAR (theory §50).  :func:`run_cerar` runs the ring protocol round by round on ``N``
buffers and compares every worker's output with ``Σ_j g_j`` and with the prediction
``Σ_m E_{i,m} G_{i-m}`` from the design's error operators.

Batched evaluator.  :func:`batched_optimal_error` evaluates ``err(B, F)`` for a stack of
straggler patterns in any namespace through the one kernel of the analysis,
:func:`gcsim.coding.kernels.optimal_errors` (only the namespace differs, and every pattern is
certified or recomputed by the SVD route).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._array_api import (
    asarray as _asarray,
    check_gradients as _check_gradients,
    get_namespace,
    infer_namespace as _infer,
    to_numpy,
)
from .._validation import check_int, check_mask
from ..coding.decoder_table import DecoderTable
from ..coding.decoders import optimal_decoders
from ..coding.kernels import check_rtol, eval_context, optimal_errors
from ..coding.structured import StructuredRD
from ..coding.structured_decoders import RDOperator, rd_operator, structured_decoder
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries

__all__ = [
    "get_namespace",
    "to_numpy",
    "run_scheme",
    "SchemeRun",
    "batched_optimal_error",
]

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
    route : str
        ``"dense"`` (``B`` as a matrix) or ``"structured"`` (a ``StructuredRD``/``SparseRD`` through
        its incidence: no dense ``B``).
    decoder_source : str
        ``"optimal"``, ``"fixed"``, ``"given"`` (an array), ``"table"`` (a decoder table's row) or
        ``"table-fallback"`` (a pattern the table lacks, solved as ``"optimal"``).
    decoder_gap : float
        For the conjugate-gradient decoder of a ``SparseRD``: the certified bound ``‖S R‖_F²/c``
        on ``residual − err(B, F)`` (Theorem 44.7); 0.0 otherwise.
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
    route: str = "dense"
    decoder_source: str = "optimal"
    decoder_gap: float = 0.0


def _same_encoder(a: Any, b: Any) -> bool:
    """True when two encoders are the same matrix: sparse incidence and diagonals, else dense ``B``, entry for entry."""
    if a is b:
        return True
    ia: Any = getattr(a, "incidence", None)
    ib: Any = getattr(b, "incidence", None)
    if sp.issparse(ia) and sp.issparse(ib) and hasattr(a, "diagonals") and hasattr(b, "diagonals"):
        if ia.shape != ib.shape or (sp.csc_matrix(ia) != sp.csc_matrix(ib)).nnz:
            return False
        return bool(np.array_equal(np.asarray(a.diagonals), np.asarray(b.diagonals)))
    return bool(np.array_equal(np.asarray(a.B), np.asarray(b.B)))


def _check_table(table: DecoderTable, scheme: Any) -> None:
    """Refuse a decoder table built for another encoder (shape ``(N, n, m)``, then the encoder itself)."""
    mine = (int(scheme.num_parts), int(scheme.n), int(scheme.m))
    theirs = (int(table.scheme.num_parts), int(table.n), int(table.m))
    if mine != theirs:
        raise InvalidArgumentError(
            "decoder", f"the decoder table is for (N, n, m) = {theirs}, the scheme has (N, n, m) = {mine}"
        )
    if not _same_encoder(table.scheme, scheme):
        raise InvalidArgumentError(
            "decoder",
            "the decoder table was built for another encoder of the same shape (its stored B, or incidence "
            "and diagonals, differ from the scheme's); build the table from this scheme",
        )


def _optimal(scheme: Any, mask: np.ndarray, xp, B, op: RDOperator | None) -> tuple[Any, float]:
    """The optimal decoder ``X* = B_F⁺ T`` as an (n, m) xp array (zero rows off F), and the CG gap."""
    if op is not None:  # StructuredRD / SparseRD: from the structure, no dense B
        res = structured_decoder(scheme, mask, operator=op)
        return res.decoder, res.gap
    if not mask.any():
        return xp.zeros((scheme.n, scheme.m), dtype=xp.float64), 0.0
    # minimum-norm least squares X* = B_F⁺ T (the one implementation, gcsim.coding.decoders)
    return optimal_decoders(B, mask[None, :], scheme.m, xp=xp)[0, ...], 0.0


def _decoder_matrix(scheme: Any, mask: np.ndarray, decoder: Any, fallback: str | None, xp, B, op):
    """Decoder on F as an (|F|, m) xp array, the full (n, m) NumPy matrix, its source and the CG gap."""
    n, m = scheme.n, scheme.m
    F = np.flatnonzero(mask)
    Fi = _asarray(xp, F, dtype=xp.int64)
    gap = 0.0
    if isinstance(decoder, DecoderTable):
        _check_table(decoder, scheme)
        try:
            Xh = np.asarray(decoder.decoder(mask), dtype=np.float64)
            source = "table"
        except InvalidArgumentError:
            if fallback is None:
                S = np.flatnonzero(~mask).tolist()
                what = f"every pattern with at most {decoder.s_max} stragglers"
                what = "an explicit list" if decoder.explicit else what
                raise InvalidArgumentError(
                    "nonstragglers",
                    f"straggler set {S} is not in the decoder table ({len(decoder)} patterns: {what}); "
                    "pass fallback='optimal' to solve it",
                ) from None
            Xo, gap = _optimal(scheme, mask, xp, B, op)
            XF, source = Xo[Fi, :], "table-fallback"
        else:
            XF = _asarray(xp, Xh[F])
    elif fallback is not None:
        raise InvalidArgumentError("fallback", "applies to a decoder table only (decoder=DecoderTable)")
    elif isinstance(decoder, str):
        if decoder == "optimal":
            Xo, gap = _optimal(scheme, mask, xp, B, op)
            XF, source = Xo[Fi, :], "optimal"
        elif decoder in ("fixed", "reference"):
            if scheme.decoder is None:
                raise InvalidArgumentError(
                    "decoder",
                    f"scheme {scheme.method!r} has no reference decoder; pass decoder='optimal' or an (n, m) array",
                )
            XF, source = _asarray(xp, np.asarray(scheme.decoder)[F]), "fixed"
        else:
            raise InvalidArgumentError(
                "decoder", f"must be 'optimal', 'fixed', a DecoderTable or an (n, m) array, got {decoder!r}"
            )
    else:
        Xh = to_numpy(decoder, "decoder").astype(np.float64)
        if Xh.shape != (n, m) or not np.all(np.isfinite(Xh)):
            raise InvalidArgumentError("decoder", f"must be a finite (n, m) = {(n, m)} array, got shape {Xh.shape}")
        XF, source = _asarray(xp, Xh[F]), "given"
    X = np.zeros((n, m))
    X[F] = to_numpy(XF)
    return XF, X, source, gap


def run_scheme(
    scheme: Any,
    gradients: Any,
    nonstragglers: Any,
    *,
    decoder: Any = "optimal",
    fallback: str | None = None,
    xp: Any = None,
) -> SchemeRun:
    """Encode real partial gradients, drop the stragglers, decode, and measure the error.

    Parameters
    ----------
    scheme : Scheme, StructuredRD or SparseRD
        Encoder ``B`` (``(mN, n)``, block-major rows).  A ``StructuredRD``
        (:func:`gcsim.coding.structured.encode_structured`) or ``SparseRD``
        (:func:`gcsim.coding.sparse_routes.encode_sparse`) never forms ``B`` (module docstring).
    gradients : array (N, d)
        Partial gradient ``g_i`` of part ``i`` (NumPy or CuPy), finite.
    nonstragglers : array of bool (n,)
        True = worker ``j``'s transmission arrives (``j ∈ F``).
    decoder : "optimal", "fixed", DecoderTable or array (n, m)
        ``X* = B_F⁺ T`` (default), the scheme's reference decoder restricted to ``F``, the stored
        decoder of the pattern in a table built for this encoder, or a given decoder (rows
        outside ``F`` ignored).
    fallback : None or "optimal"
        With a table: ``None`` (default) refuses a pattern the table does not cover
        (:class:`~gcsim.errors.InvalidArgumentError` naming the straggler set); ``"optimal"``
        solves it as ``decoder="optimal"`` (``decoder_source`` says ``"table-fallback"``).
    xp : None, "numpy", "cupy" or module
        Array namespace (default: CuPy for CuPy gradients, else NumPy).

    Returns
    -------
    SchemeRun

    Raises
    ------
    InvalidArgumentError
        Bad gradients, mask or decoder; a table for another encoder; a pattern missing from the
        table without a fallback; ``fallback`` without a table.

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

    A decoder table, and a structured code (no dense ``B``):

    >>> from gcsim.coding.decoder_table import decoder_table
    >>> t = decoder_table(sch, s_max=1)
    >>> run_scheme(sch, g, [True, True, False], decoder=t).decoder_source
    'table'
    >>> run_scheme(sch, g, [True, False, False], decoder=t, fallback="optimal").decoder_source
    'table-fallback'
    >>> from gcsim.coding.structured import encode_structured
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    >>> r = run_scheme(enc, np.ones((13, 6)), [True] * 11 + [False] * 2)
    >>> r.route, abs(r.residual - float(enc.context.errors(np.array([[True] * 11 + [False] * 2]))[0])) < 1e-12
    ('structured', True)
    """
    structured = isinstance(scheme, StructuredRD)
    if not structured and (getattr(scheme, "B", None) is None or not hasattr(scheme, "m")):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode), a StructuredRD or a SparseRD")
    if fallback is not None and fallback != "optimal":
        raise InvalidArgumentError("fallback", f"must be None or 'optimal', got {fallback!r}")
    m, N, n = int(scheme.m), int(scheme.num_parts), int(scheme.n)
    ns = _infer(xp, gradients)
    check_entries("gradients", array_shape(gradients), "the gradients (N x d)")  # logical size, before copies
    host = _check_gradients(gradients, N)
    mask = check_mask("nonstragglers", to_numpy(nonstragglers, "nonstragglers"), n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", f"must be one mask of shape (n,) = ({n},)")
    d = host.shape[1]
    w = -(-d // m)
    g = _asarray(ns, gradients)
    if w * m != d:
        g = ns.concat([g, ns.zeros((N, w * m - d), dtype=ns.float64)], axis=1)
    # Γ_G: row k*N + i = g_i[k]
    GG = ns.reshape(ns.permute_dims(ns.reshape(g, (N, m, w)), (1, 0, 2)), (m * N, w))
    Fi = _asarray(ns, np.flatnonzero(mask), dtype=ns.int64)
    if structured:  # through the incidence: Bᵀ Γ_G and B X by gathers, no dense B (module docstring)
        op = rd_operator(scheme, ns)
        B: Any = None
        T = op.target()
        tilde = op.apply_t(GG)  # (n, w): what every worker sends
    else:
        op = None
        B = _asarray(ns, scheme.B)
        T = _asarray(ns, scheme.target())
        tilde = B.T @ GG  # (n, w): what every worker sends
    XF, X, source, gap = _decoder_matrix(scheme, mask, decoder, fallback, ns, B, op)
    tilde_F = tilde[Fi, :]
    ghat_blocks = XF.T @ tilde_F  # (m, w)
    true_blocks = ns.sum(ns.reshape(g, (N, m, w)), axis=0)
    diff = ghat_blocks - true_blocks
    R = (op.apply(_asarray(ns, X)) if op is not None else B[:, Fi] @ XF) - T  # B_F X - T, (mN, m)
    pred = GG.T @ R  # 𝒢 (B_F X - T), (w, m)
    error = float(ns.sum(diff * diff))
    flat_diff = ns.reshape(diff, (m * w,))[:d]
    error_trunc = float(ns.sum(flat_diff * flat_diff))
    predicted = float(ns.sum(pred * pred))
    residual = float(ns.sum(R * R))
    decoded = ns.reshape(ghat_blocks, (m * w,))[:d]
    grad = ns.reshape(true_blocks, (m * w,))[:d]
    return SchemeRun(
        decoded=decoded,
        gradient=grad,
        error=error,
        error_truncated=error_trunc,
        predicted_error=predicted,
        residual=residual,
        expected_isotropic=w * residual,
        decoder=X,
        nonstragglers=mask,
        transmissions=tilde,
        block_length=w,
        backend=ns.__name__,
        route="structured" if structured else "dense",
        decoder_source=source,
        decoder_gap=gap,
    )


# ----------------------------------------------------------------------------------------------
# batched optimal-error evaluator (Gram identity) in any namespace
# ----------------------------------------------------------------------------------------------

#: executor route name -> evaluator method of :mod:`gcsim.coding.kernels`
_ROUTES = {"auto": "auto", "downdate": "downdate", "solve": "gram", "eigh": "eigh", "svd": "svd"}


def batched_optimal_error(
    scheme: Any,
    nonstragglers: Any,
    *,
    xp: Any = None,
    rtol: float | None = None,
    route: str = "auto",
    chunk: int = 2048,
) -> np.ndarray | float:
    """``err(B, F) = min_X ‖B_F X − T‖_F²`` for a stack of patterns, in any array namespace.

    The analysis' kernel (:func:`gcsim.coding.kernels.optimal_errors`) run in the namespace
    ``xp``: the per-scheme quantities (``B̃``, ``Γ = B̃ᵀB̃``, ``H = B̃ᵀT``, ``Γ⁺``, ``B̃⁺T``, the
    null space of ``B̃``) are formed once and copied to the device; patterns are grouped by
    ``|F|`` and processed in chunks of ``chunk`` as batched problems (docs/theory.md §40).

    Routes (names of the executor; the evaluator's method in brackets):

    ``"auto"`` (default) [``"auto"``]
        Column deletion (``s x s`` solves, ``S`` the stragglers) when ``κ̃ <= 1e4`` and
        ``s <= |F|``, batched solves of ``Γ_FF`` when ``s > |F|``, the SVD route when
        ``κ̃ > 1e4``.
    ``"downdate"`` [``"downdate"``]
        Column deletion for every pattern (``B`` of any rank: Lemmas 2 and 2b).
    ``"solve"`` [``"gram"``]
        Batched solves of ``Γ_FF`` (Cholesky with a pivot check first when ``κ̃ > 1e4``;
        rank-deficient ``B``: the eigendecomposition route).
    ``"eigh"`` [``"eigh"``]
        Rank-revealing: batched eigendecomposition of ``Γ_FF``, eigenvalues below
        ``max(rtol², 10 max(mN, |F|) u) λ_max`` treated as zero.
    ``"svd"`` [``"svd"``]
        Batched SVD of the ``B̃_F`` stack (orthogonal; ``|Δ| <= c p u κ_F mN``).

    Accuracy: the columns of ``B`` are first scaled by powers of two (exact; the error depends
    only on ``span(B_F)``).  Every pattern is *certified*: a Gram-type value is kept only where
    the route proves ``κ(B_F) <= 1e4`` (``|Δ| <= c p u κ̃² mN``, ``κ̃² u <= 2.2e-8``); every other
    pattern (rank-deficient or ill-conditioned ``B_F``, and every pattern when ``κ̃ > 1e4``) is
    evaluated by the SVD route in the same namespace, so no pattern returns an uncertified number.

    Parameters
    ----------
    scheme : Scheme
    nonstragglers : array of bool, (n,) or (count, n)
    xp : None, "numpy", "cupy" or module
        Array namespace (``torch`` runs on CPU tensors through array-api-compat).
    rtol : float, optional
        Relative singular-value tolerance of ``B_F`` for rank decisions (not with ``"downdate"``).
    route : {"auto", "downdate", "solve", "eigh", "svd"}
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
    if getattr(scheme, "B", None) is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    if route not in _ROUTES:
        raise InvalidArgumentError("route", f"must be one of {tuple(_ROUTES)}, got {route!r}")
    method = _ROUTES[route]
    chunk = check_int("chunk", chunk, minimum=1)
    rtol = check_rtol(rtol, method)
    ns = get_namespace(xp)
    ctx = eval_context(scheme)
    check_entries("nonstragglers", array_shape(nonstragglers), "a batch of straggler masks")
    masks = check_mask("nonstragglers", to_numpy(nonstragglers, "nonstragglers"), ctx.n)
    single = masks.ndim == 1
    masks = masks[None, :] if single else masks
    out = np.clip(
        optimal_errors(ctx, masks, method=method, rtol=rtol, xp=ns, certify=True, chunk=chunk), 0.0, ctx.total
    )
    return float(out[0]) if single else out
