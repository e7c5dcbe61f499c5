"""Errors of given patterns: the optimal decoder's, and a fixed decoder's (theory §5.1, 1.1, 1.2).

The routes and their accuracy are described in :mod:`gcsim.coding.evaluate`, which re-exports
every public name of this module.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._progress import progress_bar
from .._validation import check_bool, check_count, check_finite_array, check_int, check_mask, check_real
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries
from . import structured as _structured
from .decoders import arrival_scale, bernoulli_rescaled, best_scale
from .kernels import (
    ErrorReport,
    check_method,
    check_rtol,
    chunk_rows,
    errors_for_group,
    eval_context,
    optimal_errors,
    per_row_bytes,
)
from .schemes import Scheme
from .straggler_models._common import straggler_sets
from .straggler_models.bernoulli import BernoulliModel

__all__ = ["optimal_error", "optimal_error_all", "fixed_decoder_error", "condition_number"]

_METHODS = ("auto", "gram", "downdate", "svd", "qr")


def _progress(iterable, total: int, desc: str, enabled: bool = True):
    if not enabled or total <= 1:
        return iterable
    return progress_bar(iterable, total=total, desc=desc)  # a bar on a terminal, lines on a pipe (gcsim._progress)


def _progress_bar(iterable, total: int, desc: str):
    return _progress(iterable, total, desc)


def _check_method(method: str) -> str:
    # the public evaluator offers the routes of the module docstring ("eigh" is the executor's)
    if not isinstance(method, str) or method not in _METHODS:
        raise InvalidArgumentError("method", f"must be one of {_METHODS}, got {method!r}")
    return check_method(method)


def _readonly(a: Any) -> np.ndarray:
    out = np.array(a)
    out.setflags(write=False)
    return out


def _structured_route(scheme: Any, method: str, rtol: float | None) -> Any:
    """The structured route's context (theory §42) when ``"auto"`` takes it, else None."""
    return _structured.structured_context(scheme) if method == "auto" and rtol is None else None


def _finish(values: np.ndarray, ctx: Any, normalized: bool) -> np.ndarray:
    values = np.clip(values, 0.0, ctx.total)
    return values / ctx.total if normalized else values


def condition_number(scheme: Scheme) -> float:
    """κ(B) = σ_max / σ_min over the numerically non-zero singular values of ``B``.

    This is the condition number of ``B`` as given.  The evaluator routes on ``κ̃``, the same
    number for ``B`` with every column scaled to unit norm by a power of two (the error does not
    depend on column scaling; ``κ̃`` is within a factor ``2 sqrt(n)`` of the best column scaling,
    van der Sluis).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> condition_number(encode(np.eye(3, dtype=int), 1, "naive"))
    1.0
    """
    return eval_context(scheme).kappa_raw


# ----------------------------------------------------------------------------------------------
# public: optimal error
# ----------------------------------------------------------------------------------------------


def optimal_error(
    scheme: Scheme,
    nonstragglers: Any,
    *,
    normalized: bool = False,
    method: str = "auto",
    rtol: float | None = None,
    progress: bool = True,
) -> float | np.ndarray:
    """Optimal-decoding error ``err(B, F) = min_X ‖B_F X - T‖_F² = mN - ‖P_F T‖_F²`` (theory §5.1).

    Parameters
    ----------
    scheme : Scheme
        The encoder (see :func:`gcsim.coding.encode`).
    nonstragglers : array_like of bool, shape (n,) or (count, n)
        True = the worker's transmission arrives (``j ∈ F``).
    normalized : bool
        Divide by ``mN`` (result in ``[0, 1]``); default: raw squared error.
    method : {"auto", "downdate", "gram", "svd", "qr"}
        Evaluation route (module docstring, with the accuracy of each); ``"qr"`` is an alias
        of ``"svd"``.
    rtol : float, optional
        Relative singular-value tolerance of ``B̃_F`` (rank decisions); default
        ``max(mN, |F|) u`` for the SVD route, eigenvalue tolerance
        ``10 max(mN, |F|) u λ_max`` for the Gram route.  Not accepted by ``"downdate"``.
    progress : bool
        Show a tqdm bar for long batches.

    Returns
    -------
    float or numpy.ndarray
        A float for one mask, an array ``(count,)`` for a batch.

    Warns
    -----
    RuntimeWarning
        ``method="gram"`` or ``"downdate"`` on patterns it cannot evaluate to its stated
        accuracy (``κ̃ > GRAM_KAPPA_LIMIT``, or nearly rank-deficient ``B_F``); ``"auto"``
        never warns: it sends those patterns to the SVD route.

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
    normalized = check_bool("normalized", normalized)
    progress = check_bool("progress", progress)
    method = _check_method(method)
    rtol = check_rtol(rtol, method)
    st = _structured_route(scheme, method, rtol)
    ctx = st if st is not None else eval_context(scheme)
    check_entries("nonstragglers", array_shape(nonstragglers), "a batch of straggler masks")  # before any copy
    masks = check_mask("nonstragglers", nonstragglers, ctx.n)
    single = masks.ndim == 1
    masks2 = masks[None, :] if single else masks
    if st is not None:
        vals = _finish(st.errors(masks2), st, normalized)
        return float(vals[0]) if single else vals
    report = ErrorReport()
    raw = optimal_errors(
        ctx, masks2, method=method, rtol=rtol, report=report, progress=_progress_bar if progress else None
    )
    vals = _finish(raw, ctx, normalized)
    report.warn(ctx, method)
    return float(vals[0]) if single else vals


def optimal_error_all(
    scheme: Scheme,
    s: int,
    *,
    normalized: bool = False,
    method: str = "auto",
    rtol: float | None = None,
    chunk: int | None = None,
    progress: bool = True,
) -> np.ndarray:
    """Optimal error of every straggler set ``|S| = s`` (exhaustive enumeration).

    Patterns are in lexicographic order of ``S`` (as produced by
    :func:`gcsim.coding.stragglers.straggler_sets`).  Each pattern costs one ``s x s`` solve
    (column deletion formula) on the ``"auto"`` route for a well-conditioned ``B``;
    enumeration runs in chunks of ``chunk`` patterns.  More than :data:`gcsim.limits.MAX_PATTERNS`
    patterns are refused up front: estimate the mean by Monte Carlo with
    :func:`expected_error` instead.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(3, dtype=int), 1, "naive")
    >>> optimal_error_all(sch, 1).tolist()
    [1.0, 1.0, 1.0]
    """
    normalized = check_bool("normalized", normalized)
    progress = check_bool("progress", progress)
    method = _check_method(method)
    rtol = check_rtol(rtol, method)
    st = _structured_route(scheme, method, rtol)
    ctx = st if st is not None else eval_context(scheme)
    s = check_int("s", s, minimum=0, maximum=ctx.n)
    total = math.comb(ctx.n, s)
    check_count(
        "s",
        total,
        f"straggler sets C({ctx.n}, {s})",
        hint=f"estimate the mean by Monte Carlo with expected_error(scheme, straggler_model('fixed', "
        f"{ctx.n}, s={s})) or evaluate sampled patterns with optimal_error",
    )
    f = ctx.n - s
    step = (
        check_int("chunk", chunk, minimum=1)
        if chunk is not None
        else max(1, 2**22 // ctx.n)
        if st is not None
        else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)
    )
    out = np.empty(total)
    report = ErrorReport()
    starts = range(0, total, step)
    for a in _progress(starts, len(starts), f"all C({ctx.n},{s}) patterns", progress):
        S = straggler_sets(ctx.n, s, a, a + step)
        if st is not None:
            out[a : a + S.shape[0]] = st.errors_for_sets(S)
            continue
        out[a : a + S.shape[0]] = errors_for_group(ctx, method, rtol, S, None, s, f, report)
    report.warn(ctx, method)
    return _finish(out, ctx, normalized)


# ----------------------------------------------------------------------------------------------
# fixed decoders
# ----------------------------------------------------------------------------------------------


def fixed_decoder_error(
    scheme: Scheme,
    nonstragglers: Any,
    decoder: Any = None,
    *,
    rescale: Any = None,
    p: Any = None,
    normalized: bool = False,
) -> float | np.ndarray:
    """Fixed-decoder error ``err_X(B, F) = ‖B_F (c X_F) - T‖_F²`` (theory §5.1).

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
    normalized = check_bool("normalized", normalized)
    ctx = eval_context(scheme)
    X = getattr(scheme, "decoder", None) if decoder is None else decoder
    if X is None:
        raise InvalidArgumentError(
            "decoder", f"scheme {getattr(scheme, 'method', '?')!r} has no reference decoder; pass decoder=..."
        )
    check_entries("decoder", array_shape(X), "the decoder")
    try:
        X = check_finite_array("decoder", X, ndim=2)
    except OverflowError as exc:
        raise InvalidArgumentError("decoder", f"has entries beyond the float64 range: {exc}") from None
    if X.shape != (ctx.n, ctx.m):
        raise InvalidArgumentError("decoder", f"must have shape (n, m) = {(ctx.n, ctx.m)}, got {X.shape}")
    check_entries("nonstragglers", array_shape(nonstragglers), "a batch of straggler masks")  # before any copy
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
            X = bernoulli_rescaled(X, BernoulliModel(ctx.n, p).p)
        elif rescale in ("arrivals", "optimal"):
            mode = rescale
        else:
            raise InvalidArgumentError(
                "rescale", f"must be None, a number, 'bernoulli', 'arrivals' or 'optimal', got {rescale!r}"
            )
    else:
        X = X * check_real("rescale", rescale)
    T = ctx.target()
    out = np.empty(masks2.shape[0])
    step = chunk_rows(8 * (3 * ctx.mN * ctx.m + ctx.n * ctx.m))
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, masks2.shape[0], step):
            mk = masks2[a : a + step]
            R = np.matmul(ctx.B, mk[:, :, None] * X[None])  # B_F X_F, (count, mN, m)
            if mode == "arrivals":
                R *= arrival_scale(mk)[:, None, None]
            elif mode == "optimal":
                R *= best_scale(R, T)[:, None, None]
            out[a : a + mk.shape[0]] = np.sum((R - T[None]) ** 2, axis=(1, 2))
    if not np.all(np.isfinite(out)):
        raise InvalidArgumentError(
            "decoder",
            "‖B_F X_F - T‖² overflows float64 (|B| |X| too large: the error exceeds 1.8e308); rescale B or the decoder",
        )
    if normalized:
        out = out / ctx.total
    return float(out[0]) if single else out
