"""Error evaluators: optimal decoding, fixed decoders, expectations, worst case (theory §5.1, 1.1, 1.2).

All errors are **raw squared** errors unless ``normalized=True`` (then divided
by ``m*N``, so they lie in ``[0, 1]``).  Non-straggler masks follow the
convention of :mod:`gcsim.coding.stragglers`: ``True`` = the worker arrives.

Optimal-decoding error (theory §5.1)
--------------------------------
.. math::
   \\mathrm{err}(B, F) = \\min_X \\|B_F X - T\\|_F^2 = mN - \\|P_F T\\|_F^2
                      = mN - \\operatorname{tr}(H_F^\\top \\Gamma_{FF}^+ H_F)

(proof: ``docs/theory/40_error_identities.md``).  Every route works on ``B̃``, ``B`` with each
column scaled to norm in ``[1/2, 1)`` by a power of two: the scaling is exact (no rounding
unless an entry underflows), ``col(B̃_F) = col(B_F)`` so the error is unchanged, ``Γ = B̃ᵀB̃``
cannot overflow, and badly scaled columns (1e-9 next to 1e3) cost no accuracy.  ``κ̃`` is the
condition number of ``B̃`` over its numerically non-zero singular values (rank tolerance
``max(mN, n) u σ_1``, the ``numpy.linalg.matrix_rank`` convention; ``r`` = that rank).

Routes (``method=``) and the accuracy each guarantees.  ``u = 2^-52``, ``p = max(mN, n)``,
``c`` a modest constant (the tests use ``c = 10``; proofs in §3 of the theory chapter):

``"svd"`` (alias ``"qr"``)
    Batched SVD of the ``B̃_F`` stack; singular values at or below ``rtol σ_max`` (default
    ``max(mN, |F|) u``) count as zero.  ``|Δ| <= c p u κ_F mN`` with ``κ_F`` the condition
    number of ``B̃_F`` over its kept singular values (backward stability + Wedin).  Never warns.
``"downdate"``
    Column deletion, ``S`` the straggler set: ``err(F) = err([n]) + tr(Y_Sᵀ Q (Qᵀ K_SS Q)⁻¹ Qᵀ Y_S)``
    with ``K = Γ⁺``, ``Y = B̃⁺T`` and ``Q`` an orthonormal basis of ``null(V_0[S]ᵀ)``, ``V_0`` an
    orthonormal basis of ``null(B̃)`` (``Q = I`` when ``B̃`` has full column rank: Lemma 2;
    rank-deficient ``B̃``: Lemma 2b).  Singular values of ``V_0[S]`` at or below
    ``τ = 10 p u κ̃`` count as zero.  When none does, ``rank(B_F) = rank(B)`` and the value is
    ``err([n])``: ``|Δ| <= c p u κ̃ mN`` (the exact families at ``|S| <= s``).  Otherwise
    ``|Δ| <= c p u (κ̃² + κ̃/δ) mN``, ``δ`` the smallest kept singular value of ``V_0[S]``.
    Warns when ``κ̃ > GRAM_KAPPA_LIMIT``, and counts the patterns with ``δ < 1e3 τ`` or
    ``κ̃/δ > GRAM_KAPPA_LIMIT²`` in a warning.  Takes no ``rtol``.
``"gram"``
    ``tr(H_Fᵀ Γ_FF⁺ H_F)`` per pattern.  Full-rank ``B̃``: batched solves,
    ``|Δ| <= c p u κ̃² mN`` (``κ(B̃_F) <= κ̃`` by interlacing); warns when
    ``κ̃ > GRAM_KAPPA_LIMIT`` (then Cholesky with a pivot check and an eigendecomposition
    fallback).  Rank-deficient ``B̃``: batched eigendecomposition, eigenvalues at or below
    ``max(rtol², 10 max(mN, |F|) u) λ_max`` count as zero; ``|Δ| <= c p u κ_F² mN`` for the
    patterns with no eigenvalue below ``λ_max / GRAM_KAPPA_LIMIT²``, and the others (a
    singular or nearly singular ``B_F``: the Gram route cannot tell a small singular value
    from zero) are counted in a warning.
``"auto"`` (default)
    SVD route when ``κ̃ > GRAM_KAPPA_LIMIT = 1e4``.  Otherwise ``"downdate"`` (for a full-rank
    ``B̃`` only when ``s <= |F|``; batched solves of ``Γ_FF`` when ``s > |F|``), and every
    pattern ``"downdate"`` would flag goes to the SVD route.  Hence
    ``|Δ| <= c p u max(κ̃², κ_F) mN`` with ``κ̃ <= 1e4`` (``κ̃² u <= 2.2e-8``) on the Gram-type
    patterns, ``|Δ| <= c p u κ̃ mN`` when ``rank(B_F) = rank(B)``; never warns.  A user
    ``rtol`` that declares ``B̃`` rank deficient selects the eigendecomposition route with the
    same SVD fallback.
    *Structured route* (:mod:`gcsim.coding.structured`, theory §42): for an ``"rd"`` scheme on an
    assignment with ``AᵀA = (k − λ)I + λJ`` (a symmetric BIBD; checked exactly, once) ``"auto"``
    evaluates ``err = Σ_i (Na − cμ_i)/(a + λμ_i)`` from the ``m x m`` matrix ``M_F``, ``O(n m²)`` a
    pattern and no ``B``, when its bound ``|Δ| <= β(n) <= GRAM_KAPPA_LIMIT² u mN`` is certified.
    *Sparse route* (:mod:`gcsim.coding.sparse_routes`, theory §44): for an ``"rd"`` scheme on any
    other sparse assignment (a :class:`~gcsim.coding.sparse_routes.SparseRD` from
    ``encode_sparse``: SRGs, coset and bi-regular graphs; or a dense scheme with ``n >= 512`` and at
    most 10% non-zeros in ``A``) ``"auto"`` solves ``Γ_FF X = H_F`` by preconditioned CG through
    ``AᵀA = S + μJ`` and returns each pattern with a proved half-width at most
    ``max(1e-10 err, 1e-14 mN)`` (Theorem 44.2); uncertified patterns go to the dense routes.

On NumPy the column-deletion route and the full-rank solves of ``Γ_FF`` run in compiled
per-pattern loops (numba, installed with galois): the rank of ``V_0[S]`` comes from a Householder
QR with column pivoting whose certificate (the dropped part has Frobenius norm ``<= τ``, the kept
triangle ``1/‖R₁₁⁻¹‖_F >= 10³ τ``) proves the SVD route's decision, and the systems are solved by
Cholesky.  The bounds above are unchanged (theory §40.3, "Compiled loops"); a pattern without the
certificate is evaluated as described above.

Monte Carlo intervals (:func:`expected_error`): ``ci_method="t"`` (default) is the Student
``t`` interval, an asymptotic 95% level that needs at least :data:`MIN_MC_SAMPLES` draws;
``ci_method="betting"`` holds its 95% level for every budget (errors lie in ``[0, mN]``).
:func:`optimal_error_all` refuses more than :data:`gcsim.limits.MAX_PATTERNS` patterns up front.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _html, limits
from .._progress import progress_bar
from .._stats import draw_level_interval
from .._validation import check_bool, check_count, check_finite_array, check_int, check_mask, check_real
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries
from ..sweep import check_scheduler_and_workers
from . import (
    estimators as _est,
    mc_stream as _mc,
    structured as _structured,
)
from .decoders import arrival_scale, bernoulli_rescaled, best_scale
from .delays import DelayStragglerModel, TraceDelays
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
from .schemes import Scheme, encode
from .straggler_base import StragglerModel
from .stragglers import (
    AllPatternsModel,
    BernoulliModel,
    FixedModel,
    MarkovModel,
    TraceModel,
    WorstCaseModel,
    straggler_sets,
)

__all__ = [
    "MIN_MC_SAMPLES",
    "optimal_error",
    "optimal_error_all",
    "fixed_decoder_error",
    "expected_error",
    "worst_case_error",
    "expected_error_over_seeds",
    "is_exact_method",
    "ExpectedErrorResult",
    "WorstCaseErrorResult",
    "SeedsExpectedResult",
    "condition_number",
]

#: Fewest Monte Carlo draws for which :func:`expected_error` states a 95% interval.
MIN_MC_SAMPLES = 100

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


# ----------------------------------------------------------------------------------------------
# expectations
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpectedErrorResult:
    """Expected error under a straggler model (theory §5.3).

    Attributes
    ----------
    mean : float
    ci : tuple of float
        95% confidence interval (zero width when ``method == "exact"``; for Monte Carlo see
        ``ci_method`` of :func:`expected_error`: asymptotic ``t``, or ``betting``, valid for any
        number of draws).
    method : str
        ``"exact"``, ``"exact (exact by components ...)"`` (theory §57.3) or
        ``"monte-carlo n=<samples>"`` with what was done in parentheses (``"betting interval"``
        for ``ci_method="betting"``, the control variate, rare-event strata: theory §57).
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "ci", tuple(self.ci))
        if self.values is not None:
            object.__setattr__(self, "values", _readonly(self.values))

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: the mean with its 95% interval and how it was computed."""
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="ExpectedErrorResult",
                kind="expected error",
                rows=[
                    ("mean", self.mean),
                    ("95% interval", self.ci),
                    ("standard error", self.stderr),
                    ("method", self.method),
                    ("patterns evaluated", self.count),
                    ("normalized", self.normalized),
                    ("straggler model", self.model),
                    ("per-pattern values", None if self.values is None else self.values),
                ],
            ),
        )


def _log_capital(y: np.ndarray, lam: np.ndarray, m: float, c: float = 0.5) -> float:
    """``max_t log K_t(m)`` of the hedged betting capital (θ = 1/2) for the mean ``m`` of ``y`` in [0, 1]."""
    lp = np.minimum(lam, c / m) if m > 0 else lam
    lm = np.minimum(lam, c / (1.0 - m)) if m < 1 else lam
    kp = np.cumsum(np.log1p(lp * (y - m)))
    km = np.cumsum(np.log1p(-lm * (y - m)))
    return float(np.max(np.logaddexp(kp, km))) + math.log(0.5)


def _betting_ci(x: np.ndarray, lo: float, hi: float, alpha: float = 0.05) -> tuple[float, float]:
    """Confidence interval of level ``1 - alpha`` for the mean of i.i.d. draws in ``[lo, hi]``, any sample size.

    Hedged betting capital with the predictable plug-in bets of Waudby-Smith & Ramdas,
    "Estimating means of bounded random variables by betting", JRSS B 86 (2024), Thm 3 and
    eq. (26): under the true mean ``m`` the capital ``K_t(m)`` is a non-negative martingale
    with ``K_0 = 1``, so by Ville's inequality ``P(max_t K_t(m) >= 1/alpha) <= alpha``; the
    interval is the hull of the ``m`` not rejected (found by bisection from an accepted point).
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    mean = float(x.mean()) if n else float("nan")
    width = hi - lo
    if n == 0 or width <= 0:
        return (mean, mean)
    y = np.clip((x - lo) / width, 0.0, 1.0)
    t = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(y)) / (t + 1)
    var = (0.25 + np.cumsum((y - mu) ** 2)) / (t + 1)
    prev = np.concatenate([[0.25], var[:-1]])
    lam = np.sqrt(2.0 * math.log(2.0 / alpha) / (n * prev))
    thr = math.log(1.0 / alpha)

    def rejected(m: float) -> bool:
        return _log_capital(y, lam, m) >= thr

    anchor = float(y.mean())
    if rejected(anchor):
        grid = np.linspace(0.0, 1.0, 401)
        anchor = float(grid[int(np.argmin([_log_capital(y, lam, g) for g in grid]))])

    def edge(inner: float, outer: float) -> float:
        if not rejected(outer):
            return outer
        for _ in range(60):
            mid = 0.5 * (inner + outer)
            if rejected(mid):
                outer = mid
            else:
                inner = mid
        return outer

    return (lo + width * edge(anchor, 0.0), lo + width * edge(anchor, 1.0))


def _evaluator(
    scheme: Scheme, decoder: Any, rescale: Any, p: Any, method: str, progress: bool, report: ErrorReport | None = None
) -> tuple[Callable[[np.ndarray], np.ndarray], bool, float]:
    """Function masks -> raw errors, whether it is the optimal decoder, and an upper bound of the errors."""
    st = _structured_route(scheme, method, None) if isinstance(decoder, str) and decoder == "optimal" else None
    if st is not None:  # theory §42: masks, or draws evaluated as they are drawn
        return (lambda mk: _finish(_structured.evaluate(st, mk), st, False)), True, st.total
    ctx = eval_context(scheme)
    if isinstance(decoder, str) and decoder == "optimal":
        bar = _progress_bar if progress else None
        return (
            (lambda mk: _finish(optimal_errors(ctx, mk, method=method, report=report, progress=bar), ctx, False)),
            True,
            ctx.total,
        )
    if isinstance(decoder, str):
        if decoder != "reference":
            raise InvalidArgumentError("decoder", f"must be 'optimal', 'reference' or an (n, m) array, got {decoder!r}")
        X = None
    else:
        X = decoder

    def evaluate(mk: np.ndarray) -> np.ndarray:
        return np.atleast_1d(fixed_decoder_error(scheme, mk, X, rescale=rescale, p=p))

    # ‖B_F (cX)_F - T‖_F <= ‖B‖_2 ‖cX‖_F + sqrt(mN); c <= n for "arrivals", c* gives <= mN
    if isinstance(rescale, str) and rescale == "optimal":
        return evaluate, False, ctx.total
    Xa = scheme.decoder if X is None else X
    try:
        Xa = np.asarray(Xa, dtype=float)
        if isinstance(rescale, str) and rescale == "bernoulli":
            Xa = bernoulli_rescaled(Xa, BernoulliModel(ctx.n, p).p)
        elif rescale is not None and not isinstance(rescale, str):
            Xa = Xa * float(rescale)
        c = float(ctx.n) if isinstance(rescale, str) and rescale == "arrivals" else 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            upper = (np.linalg.norm(ctx.B, 2) * c * np.linalg.norm(Xa) + math.sqrt(ctx.total)) ** 2
    except (TypeError, ValueError, np.linalg.LinAlgError):
        upper = float("inf")  # the evaluation itself reports a bad decoder
    return evaluate, False, float(upper)


def is_exact_method(method: str) -> bool:
    """Whether an expected-error ``method`` string reports a value computed exactly (no Monte Carlo).

    ``"exact"`` (enumeration, a trace) or ``"exact (...)"`` (by components, theory §57.3).

    >>> is_exact_method("exact"), is_exact_method("exact (exact by components (3 components))")
    (True, True)
    >>> is_exact_method("monte-carlo n=2000 (stratified by |S|)")
    False
    """
    return method == "exact" or method.startswith("exact (")


def _redraw_seed(seed: int, n: int, s: int) -> int:
    """The seed of a rare stratum's second draw (theory §57.4), apart from every first-draw seed.

    >>> _redraw_seed(0, 13, 2) == _redraw_seed(0, 13, 2) != _redraw_seed(0, 13, 3)
    True
    """
    return int(np.random.SeedSequence([seed, n, s, 2]).generate_state(1, np.uint64)[0])


def _zero_bound(masks: np.ndarray) -> np.ndarray:
    """The trivial lower bound ``err >= 0`` (module level: it pickles for Dask)."""
    return np.zeros(np.atleast_2d(masks).shape[0])


def _se(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("inf")


def _cv_note(control: bool, note: str) -> str:
    parts = ["control variate: the rank bound's exact mean"] if control else []
    parts += [note] if note else []
    return f" ({'; '.join(parts)})" if parts else ""


_CI_METHODS = ("t", "betting")


def expected_error(
    scheme: Scheme,
    model: StragglerModel,
    *,
    exact_limit: int = 20000,
    samples: int = 2000,
    seed: int = 0,
    decoder: Any = "optimal",
    rescale: Any = None,
    normalized: bool = False,
    method: str = "auto",
    keep_values: bool = False,
    progress: bool = True,
    ci_method: str = "t",
    scheduler: Any = None,
    workers: int | None = None,
) -> ExpectedErrorResult:
    """Expected error ``E_S[err]`` under a straggler model (theory §5.3).

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
      tractable, else Monte Carlo over i.i.d. draws of that stationary law (stratified
      when ``π`` is the same for every worker).
    * Fixed-``s``, Bernoulli and Markov models, optimal decoding: when the support of ``B`` splits
      into small components (workers holding one part each, fractional repetition), the exact
      expectation by components (theory §57.3), whatever the budgets.
    * Monte Carlo estimates only the excess over the rank lower bound, whose mean is exact
      (theory §57.1-57.2): no interval lies below it.  Strata with fewer than 30 failures report a
      one-sided limit, never a zero-width interval (§57.4-57.5).
    * ``"trace"``, and a delay model replaying a trace of delays
      (:class:`~gcsim.coding.delays.DelayStragglerModel` over
      :class:`~gcsim.coding.delays.TraceDelays`): exact average over the trace's iterations
      (each iteration's used workers are the arrival rule's, applied to its recorded delays).
    * ``"worst"``: not an expectation -- use :func:`worst_case_error`.

    Parameters
    ----------
    samples : int
        Monte Carlo draws, at most :data:`gcsim.limits.MAX_MC_DRAWS` (the masks are streamed in
        chunks, each draw's error and control variate kept until the interval is formed: 16
        bytes a draw; models that cannot be streamed hold ``samples x n`` masks, within
        :data:`gcsim.limits.MAX_DENSE_ENTRIES`), checked before anything is drawn.
    decoder : "optimal", "reference" or array (n, m)
        Optimal decoding, the scheme's reference decoder or a given decoder
        (``rescale``/``p`` as in :func:`fixed_decoder_error`).
    ci_method : {"t", "betting"}
        Monte Carlo 95% interval.  ``"t"`` (default): Student ``t`` (stratified: Welch–
        Satterthwaite degrees of freedom), an *asymptotic* level that needs at least
        :data:`MIN_MC_SAMPLES` draws (fewer raise); it can still under-cover when rare patterns
        carry large errors (docs/theory/40_error_identities.md §6 gives measured coverage).
        ``"betting"``: a level that holds for every sample size and every distribution of the
        errors on ``[0, mN]`` (Waudby-Smith & Ramdas 2024; stratified: per-stratum intervals at
        levels summing to 5%), several times wider.
    scheduler : None, "serial", "local", a Dask address or a distributed.Client
        Where the Monte Carlo draws of fixed-``s`` and Bernoulli models (plain, or the sampled
        strata) are evaluated: in chunks of rows drawn independently from their place in the
        random stream (:mod:`gcsim.coding.mc_stream`, theory §42.3), here (None, ``"serial"``)
        or as tasks of :func:`gcsim.sweep.run_sweep` (``workers``: processes of ``"local"``).
        The masks are never held for all draws, and the result -- mean, interval, values -- is
        the same bit for bit on every scheduler.  Exact enumerations and the other models
        (Markov chains, traces) run here.

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
    keep_values = check_bool("keep_values", keep_values)
    normalized = check_bool("normalized", normalized)
    progress = check_bool("progress", progress)
    if not isinstance(model, StragglerModel):
        raise InvalidArgumentError("model", "must be a straggler model (see straggler_model)")
    exact_limit = check_int("exact_limit", exact_limit, minimum=0)
    samples = check_int("samples", samples, minimum=2)
    limits.check_work(
        "samples",
        samples,
        "Monte Carlo draws (each a pattern evaluated, its error kept)",
        limit_name="MAX_MC_DRAWS",
        unit="draws",
    )
    seed = check_int("seed", seed, minimum=0)
    method = _check_method(method)
    if ci_method not in _CI_METHODS:
        raise InvalidArgumentError("ci_method", f"must be one of {_CI_METHODS}, got {ci_method!r}")
    if scheduler is not None:
        scheduler, workers = check_scheduler_and_workers(scheduler, workers)
    elif workers is not None:
        raise InvalidArgumentError("workers", "applies to scheduler='local' only")
    st = _structured_route(scheme, method, None) if isinstance(decoder, str) and decoder == "optimal" else None
    ctx = st if st is not None else eval_context(scheme)
    if model.n != ctx.n:
        raise InvalidArgumentError("model", f"has n = {model.n} workers, the scheme has n = {ctx.n}")
    if isinstance(model, WorstCaseModel):
        raise InvalidArgumentError("model", "the worst case is not an expectation; use worst_case_error(scheme, s)")
    p_model = getattr(model, "p", None) if not isinstance(model, MarkovModel) else model.stationary
    report = ErrorReport()
    evaluate, is_optimal, upper = _evaluator(
        scheme, decoder, rescale, None if rescale != "bernoulli" else p_model, method, progress, report
    )
    scale = 1.0 / ctx.total if normalized else 1.0
    desc = model.describe()

    def exact(values, weights=None):
        values = values * scale
        mean = float(np.mean(values) if weights is None else np.dot(weights, values))
        return ExpectedErrorResult(
            mean, (mean, mean), "exact", int(values.size), 0.0, normalized, desc, values if keep_values else None
        )

    def check_budget():
        if ci_method == "t" and samples < MIN_MC_SAMPLES:
            raise InvalidArgumentError(
                "samples",
                f"{samples} Monte Carlo draws are too few for a 95% t interval (at least "
                f"MIN_MC_SAMPLES = {MIN_MC_SAMPLES}); draw more, or pass ci_method='betting' (valid for any "
                "number of draws)",
            )

    def chunked() -> _mc.ChunkEvaluator:
        if st is not None:
            return _mc.ChunkEvaluator.structured(st)
        if is_optimal:
            return _mc.ChunkEvaluator.optimal(scheme, method)
        X = None if isinstance(decoder, str) else decoder
        return _mc.ChunkEvaluator.fixed(
            scheme, X, rescale, None if rescale != "bernoulli" else p_model, fixed_decoder_error
        )

    # theory §57: the rank bound's exact law as a control variate (encoders supported on A, models
    # whose law of c_i(F) is known); otherwise the trivial bound L = 0 (err >= 0)
    cv_assignment = _est.support_within_assignment(scheme) if _est.has_closed_form_law(model) else None
    lower_fn = _est.rank_bound_function(cv_assignment, ctx.m) if cv_assignment is not None else None
    tol = _est.FAILURE_TOL * ctx.total

    def draw_pairs(draws: list[_mc.Draw]) -> list[np.ndarray]:
        """``[err, L]`` per draw row (raw): streamed in independent chunks (on ``scheduler``) when possible."""
        lower = lower_fn if lower_fn is not None else _zero_bound
        if not all(_mc.streamable(d.model) for d in draws):
            out = []
            for d in draws:
                check_entries("samples", (d.size, d.model.n), "the straggler masks drawn at once (samples x n)")
                mk = np.asarray(d.model.sample(d.size, d.seed), dtype=bool)
                out.append(np.column_stack([evaluate(mk), lower(mk)]))
            return out
        values, unreliable, patterns = _mc.evaluate_draws(
            _mc.PairedEvaluator(chunked(), lower), draws, scheduler=scheduler, workers=workers, progress=progress
        )
        report.unreliable += unreliable
        report.patterns += patterns
        return values

    def expected_lower(mdl: StragglerModel) -> float:
        return _est.expected_rank_lower_bound(cv_assignment, ctx.m, mdl) if lower_fn is not None else 0.0

    def monte_carlo(draw):
        pairs = draw_pairs([draw])[0]
        raw, excess = pairs[:, 0], np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
        el = expected_lower(model)
        extra = ""
        again_size = _est.RARE_EXTEND * draw.size
        # masks of a model that cannot be streamed are held whole: redraw only within the dense limit
        fits = _mc.streamable(draw.model) or again_size * ctx.n <= limits.MAX_DENSE_ENTRIES
        if ci_method == "t" and again_size and fits and _est.is_rare(excess, tol):
            # theory §57.4: drawn again, the estimate and limit from the new draws alone
            again = draw_pairs([_mc.Draw(draw.model, again_size, _redraw_seed(seed, ctx.n, 0))])[0]
            raw = np.concatenate([raw, again[:, 0]])
            excess = np.maximum(again[:, 0] - again[:, 1], 0.0)
            extra = f"{again.shape[0]} draws drawn again (rare failures)"
        tag = f"monte-carlo n={raw.size}"
        if ci_method == "betting":
            lo_b, hi_b = _betting_ci(excess, 0.0, upper)
            mean, ci, se, note = el + float(excess.mean()), (el + lo_b, el + hi_b), _se(excess), ""
            tag += " (betting interval)"
        else:
            mean, ci, se, note = _est.combine_groups([_est.Group(1.0, el, excess)], 0.0, upper, tol)
        tag += _cv_note(lower_fn is not None, "; ".join(x for x in (note, extra) if x))
        return ExpectedErrorResult(
            mean * scale,
            (ci[0] * scale, ci[1] * scale),
            tag,
            int(raw.size),
            se * scale,
            normalized,
            desc,
            raw * scale if keep_values else None,
        )

    def separable():
        """Theory §57.3: exact by the components of B's support, where it splits into small ones."""
        if not is_optimal or st is not None or keep_values:
            return None
        found = _est.separable_expectation(
            scheme, model, exact_limit, lambda sub, mk: optimal_error(sub, mk, method=method, progress=False)
        )
        if found is None:
            return None
        value, how = found
        value *= scale
        return ExpectedErrorResult(value, (value, value), f"exact ({how})", 0, 0.0, normalized, desc, None)

    def run():
        if isinstance(model, TraceModel):
            return exact(evaluate(model.masks()))
        if isinstance(model, DelayStragglerModel) and isinstance(model.delays, TraceDelays):
            return exact(evaluate(model.rule.apply(model.delays.rows())[0]))
        if isinstance(model, FixedModel):  # includes AllPatternsModel
            total = math.comb(ctx.n, model.s)
            if isinstance(model, AllPatternsModel) or total <= exact_limit:
                if is_optimal:
                    vals = optimal_error_all(scheme, model.s, method=method, progress=progress)
                else:
                    vals = np.concatenate([evaluate(mk) for mk in model.iter_chunks()]) if total else np.zeros(0)
                return exact(vals)
            found = separable()
            if found is not None:
                return found
            check_budget()
            return monte_carlo(_mc.Draw(model, samples, seed))
        if isinstance(model, (BernoulliModel, MarkovModel)):
            pj = model.p if isinstance(model, BernoulliModel) else model.stationary
            if ctx.n < 63 and 2**ctx.n <= exact_limit:
                masks = _est.every_mask(ctx.n)
                weights = BernoulliModel(ctx.n, pj).weights(masks)
                return exact(evaluate(masks), weights)
            found = separable()
            if found is not None:
                return found
            # a Markov model's chains start stationary and are independent across workers: every
            # iteration's pattern is Bernoulli(π_j) (Lemma 8, §40.6), so the expectation is estimated
            # from i.i.d. draws of that law -- no correlated iterations, no batch means
            marginal = model if isinstance(model, BernoulliModel) else BernoulliModel(ctx.n, pj)
            if marginal.homogeneous:
                return _stratified_bernoulli(
                    scheme,
                    ctx,
                    float(marginal.p[0]),
                    evaluate,
                    is_optimal,
                    method,
                    exact_limit,
                    samples,
                    seed,
                    scale,
                    normalized,
                    desc,
                    keep_values,
                    ci_method,
                    upper,
                    check_budget,
                    draw_pairs,
                    _est.part_loads(cv_assignment) if lower_fn is not None else None,
                )
            check_budget()
            return monte_carlo(_mc.Draw(marginal, samples, seed))
        # any other model with a sample method: Monte Carlo
        check_budget()
        return monte_carlo(_mc.Draw(model, samples, seed))

    res = run()
    report.warn(ctx, method)
    return res


#: Pool light strata when their 2-draw minimum would take more than this many times ``samples``
#: draws (Lemma 7a; :func:`_pool_strata`).
POOL_FACTOR = 2.0


def _pool_strata(mc_s: list[int], w: np.ndarray, samples: int, wmc: float) -> list[list[int]]:
    """The strata of the stratified estimator: ``[[s], ...]``, or with light strata pooled (Lemma 7a).

    Unpooled unless ``Σ_s max(2, round(samples w_s / W))`` exceeds ``POOL_FACTOR * samples``.  Then,
    in increasing ``s``, a stratum whose own allocation ``samples w_s / W`` is at least 2 stays alone;
    lighter ones are collected, consecutively, into a pool until the pool's allocation reaches 2 or
    a heavy stratum comes.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.r_[np.full(6, 0.01), 0.44, 0.42, np.full(4, 0.01)]
    >>> _pool_strata(list(range(12)), w, 100, float(w.sum()))  # 2 * 10 + 44 + 42 <= 2 * 100
    [[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11]]
    >>> _pool_strata(list(range(12)), w, 12, float(w.sum()))  # 2 * 10 + 5 + 5 > 2 * 12
    [[0, 1, 2, 3, 4, 5], [6], [7], [8, 9, 10, 11]]
    >>> _pool_strata(list(range(12)), w, 40, float(w.sum()))  # 2 * 10 + 18 + 17 <= 2 * 40
    [[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11]]
    """
    if wmc <= 0:
        return [[s] for s in mc_s]
    alloc = [samples * float(w[s]) / wmc for s in mc_s]
    if sum(max(2, int(round(a))) for a in alloc) <= POOL_FACTOR * samples:
        return [[s] for s in mc_s]
    pools: list[list[int]] = []
    current: list[int] = []
    acc = 0.0
    for s, a in zip(mc_s, alloc, strict=True):
        if a >= 2:  # heavy: alone (an open pool of lighter strata closes first)
            if current:
                pools.append(current)
                current, acc = [], 0.0
            pools.append([s])
            continue
        current.append(s)
        acc += a
        if acc >= 2:
            pools.append(current)
            current, acc = [], 0.0
    if current:
        pools.append(current)
    return pools


def _log_comb(n: int, s: int) -> float:
    """``log C(n, s)`` from log-gamma (relative error ~1e-15 of ``n log n``: a screen, not a value).

    >>> round(_log_comb(10, 3), 12) == round(math.log(120), 12)
    True
    """
    return math.lgamma(n + 1) - math.lgamma(s + 1) - math.lgamma(n - s + 1)


def _stratified_bernoulli(
    scheme,
    ctx,
    p,
    evaluate,
    is_optimal,
    method,
    exact_limit,
    samples,
    seed,
    scale,
    normalized,
    desc,
    keep_values,
    ci_method,
    upper,
    check_budget,
    draw_pairs=None,
    loads=None,
) -> ExpectedErrorResult:
    """Homogeneous Bernoulli(p) by strata |S| = s with binomial weights w_s.

    ``E = Σ_s w_s μ_s`` (Lemma 7 of docs/theory/40_error_identities.md).  The
    heaviest strata whose ``C(n, s)`` fit in ``exact_limit`` patterns are
    enumerated exactly; the others get Monte Carlo samples in proportion to
    ``w_s`` (at least 2 each).  Strata with ``w_s < 1e-15`` are skipped and
    their largest possible contribution ``Σ w_s mN`` widens the interval.
    Sampled strata estimate the excess ``D = err − L >= 0`` over the rank bound ``L``, whose
    stratum means ``E[L | |S| = s]`` are exact (hypergeometric, theory §57.1–57.2; ``loads``: the
    parts' replications, None when ``B`` is not supported on ``A``: then ``L = 0``).
    ``"t"``: :func:`gcsim.coding.estimators.combine_groups` -- variance ``Σ w_s² σ_s² / n_s`` of
    the excesses, Welch–Satterthwaite degrees of freedom, Student ``t`` quantile, clipped below at
    the exact part; a stratum with few failures (``D > τ`` in fewer than
    :data:`~gcsim.coding.estimators.RARE_FAILURES` draws) gives a one-sided Clopper–Pearson limit
    instead (theory §57.4).
    ``"betting"``: a betting interval of level ``1 - 0.05 w_s / W`` per sampled stratum
    (``W`` = their total weight), combined linearly (union bound: level >= 95%).
    ``draw_pairs(draws)``: ``[err, L]`` per row of a list of :class:`~gcsim.coding.mc_stream.Draw`
    (one per sampled stratum, evaluated together: on a Dask scheduler, as one sweep); default
    ``evaluate(model.sample(...))`` per draw with ``L = 0``.

    When the minimum of 2 draws per stratum would take more than :data:`POOL_FACTOR` times
    ``samples`` draws (many light strata: large ``n``), consecutive light strata are *pooled*
    (Lemma 7a of docs/theory/40_error_identities.md): a pool ``G`` of weight ``W_G`` gets
    ``n_G = max(2, round(samples W_G / W))`` draws, split over its strata by one seeded
    multinomial with probabilities ``w_s / W_G``, and counts as one stratum of the estimator.
    Strata heavy enough for 2 draws of their own are never pooled, and without pooling the
    draws are those of the unpooled estimator.
    """
    from scipy import stats

    n = ctx.n
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    budget = exact_limit
    exact_s: list[int] = []
    for s in np.argsort(-w, kind="stable"):
        if w[s] < 1e-15 or budget < 1:
            continue
        # C(n, s) exactly only where its log-gamma value leaves it within the budget: the exact
        # binomials of every stratum cost O(n²) digit work (minutes at n = 10⁵), the answer is the same
        if _log_comb(n, int(s)) > math.log(budget) + 1e-6:
            continue
        c = math.comb(n, int(s))
        if c <= budget:
            exact_s.append(int(s))
            budget -= c
    exact_set = set(exact_s)
    mc_s = [s for s in range(n + 1) if s not in exact_set and w[s] >= 1e-15]
    skipped = float(sum(w[s] for s in range(n + 1) if s not in exact_set and w[s] < 1e-15))
    if mc_s:
        check_budget()
    exact_part, count, kept = 0.0, 0, []
    for s in exact_s:
        if is_optimal:
            vals = optimal_error_all(scheme, s, method=method, progress=False)
        else:
            vals = evaluate(FixedModel(n, s).enumerate())
        exact_part += w[s] * float(vals.mean())
        count += vals.size
        kept.append(vals * scale)
    wmc = float(sum(w[s] for s in mc_s))
    pools = _pool_strata(mc_s, w, samples, wmc)

    def pool_pairs(sizes: dict[int, int], stage: int) -> dict[int, np.ndarray]:
        """``[err, L]`` of ``sizes[g]`` draws from each pool ``g``, evaluated together.

        One seeded multinomial splits a pool's draws over its strata (i.i.d. from its mixture,
        Lemma 7a); stage 2 (a rare pool drawn again, theory §57.4) uses seeds apart from stage 1's.
        """
        draws: list[_mc.Draw] = []
        owner: list[int] = []  # the pool of each draw
        for g, size in sizes.items():
            pool = pools[g]
            weight = float(sum(w[s] for s in pool))
            if len(pool) == 1:
                split = [size]
            else:
                rng = np.random.Generator(np.random.PCG64([seed, n, pool[0], stage]))
                split = [int(c) for c in rng.multinomial(size, np.array([w[s] for s in pool]) / weight)]
            for s, size_s in zip(pool, split, strict=True):
                if size_s:
                    stratum_seed = seed * (n + 1) + s if stage == 1 else _redraw_seed(seed, n, s)
                    draws.append(_mc.Draw(FixedModel(n, s), size_s, stratum_seed))
                    owner.append(g)
        if draw_pairs is None:
            raw = [np.column_stack([evaluate(d.model.sample(d.size, d.seed)), np.zeros(d.size)]) for d in draws]
        else:
            raw = draw_pairs(draws)
        parts: dict[int, list[np.ndarray]] = {g: [] for g in sizes}
        for g, drawn in zip(owner, raw, strict=True):
            parts[g].append(drawn)
        return {g: np.concatenate(p) for g, p in parts.items() if p}

    first = pool_pairs(
        {
            g: max(2, int(round(samples * float(sum(w[s] for s in pool)) / wmc))) if wmc > 0 else 2
            for g, pool in enumerate(pools)
        },
        1,
    )
    groups: list[_est.Group] = []
    lo_sum = hi_sum = 0.0
    for g, pool in enumerate(pools):
        weight = float(sum(w[s] for s in pool))
        pairs = first[g]
        # E[L | pool]: the pool's draws are i.i.d. from its mixture Σ_s (w_s / W_G) · stratum s (Lemma 7a)
        el = (
            sum(float(w[s]) * _est.stratum_rank_lower_bound(loads, ctx.m, n, s) for s in pool) / weight
            if loads is not None
            else 0.0
        )
        excess = np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
        # err is non-increasing in F for the optimal decoder: Lemma 57.5's monotone bound (single strata)
        groups.append(_est.Group(weight, el, excess, pairs[:, 0] if is_optimal and len(pool) == 1 else None))
        if ci_method == "betting":
            lo_s, hi_s = _betting_ci(excess, 0.0, upper, alpha=0.05 * weight / wmc)
            lo_sum += weight * (el + lo_s)
            hi_sum += weight * (el + hi_s)
        count += pairs.shape[0]
        kept.append(pairs[:, 0] * scale)
    tol = _est.FAILURE_TOL * ctx.total
    redrawn = 0
    if ci_method == "t" and _est.RARE_EXTEND > 0:
        # theory §57.4: a rare-event stratum is drawn again with RARE_EXTEND times its draws, and its
        # estimate and one-sided limit use the new draws alone (the decision saw only the first ones)
        rare = [g for g, grp in enumerate(groups) if _est.is_rare(grp.excess, tol)]
        again = pool_pairs({g: _est.RARE_EXTEND * groups[g].excess.size for g in rare}, 2)
        for g, pairs in again.items():
            old = groups[g]
            excess = np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
            groups[g] = _est.Group(old.weight, old.lower, excess, pairs[:, 0] if old.errors is not None else None)
            count += pairs.shape[0]
            redrawn += pairs.shape[0]
            kept.append(pairs[:, 0] * scale)
    slack = skipped * upper
    merged = [pool for pool in pools if len(pool) > 1]
    pooled_note = f", {sum(map(len, merged))} light strata in {len(merged)} pools" if merged else ""
    values = np.concatenate(kept) if keep_values and kept else None
    if not mc_s:  # every stratum was enumerated: exact
        mean = float(exact_part * scale)
        return ExpectedErrorResult(
            mean, (mean, float(mean + slack * scale)), "exact", count, 0.0, normalized, desc, values
        )
    mean, ci, se, note = _est.combine_groups(groups, exact_part, upper, tol, slack)
    label = f"monte-carlo n={count} (stratified by |S|, {len(exact_s)} strata exact{pooled_note}"
    if redrawn:
        label += f", {redrawn} draws of rare strata drawn again"
    if ci_method == "betting":
        ci = (exact_part + lo_sum, exact_part + hi_sum + slack)
        label += ", betting interval"
    label += (", control variate: the rank bound's exact mean" if loads is not None else "") + (
        f"; {note}" if note and ci_method != "betting" else ""
    )
    return ExpectedErrorResult(
        float(mean * scale),
        (float(ci[0] * scale), float(ci[1] * scale)),
        label + ")",
        count,
        float(se * scale),
        normalized,
        desc,
        values,
    )


# ----------------------------------------------------------------------------------------------
# worst case
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorstCaseErrorResult:
    """Worst-case error over ``|S| = s`` (theory §5.2).

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "mask", _readonly(self.mask))
        object.__setattr__(self, "stragglers", _readonly(self.stragglers))

    def __repr__(self) -> str:
        """One line: the value, the straggler set (its first 8 workers), how it was found; never the mask."""
        shown = ", ".join(str(int(j)) for j in self.stragglers[:8]) + (", …" if len(self.stragglers) > 8 else "")
        return (
            f"WorstCaseErrorResult(value={self.value:.6g}, stragglers=[{shown}] of n={self.mask.size}, "
            f"method={self.method!r}, evaluations={self.evaluations}, normalized={self.normalized})"
        )

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: the worst error, its straggler set and a strip of the mask."""
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="WorstCaseErrorResult",
                kind="worst-case error",
                rows=[
                    ("value", self.value),
                    ("stragglers", self.stragglers),
                    ("method", self.method),
                    ("patterns evaluated", self.evaluations),
                    ("normalized", self.normalized),
                ],
                matrix=np.asarray(self.mask, dtype=np.int8)[None, :],
                binary=True,
                caption="non-straggler mask over the workers (dark: arrived)",
            ),
        )


def worst_case_error(
    scheme: Scheme,
    s: int,
    *,
    exact_limit: int = 20000,
    seed: int = 0,
    iterations: int = 200,
    restarts: int = 4,
    normalized: bool = False,
    method: str = "auto",
    progress: bool = True,
) -> WorstCaseErrorResult:
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
    >>> round(res.value, 12), res.method, res.stragglers.tolist()
    (1.0, 'exact', [0, 1])
    """
    normalized = check_bool("normalized", normalized)
    progress = check_bool("progress", progress)
    method = _check_method(method)
    ctx = eval_context(scheme)
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
        return WorstCaseErrorResult(
            float(value) * scale, mask, np.sort(np.asarray(S, dtype=np.int64)), how, int(evals), normalized
        )

    total = math.comb(n, s)
    if total <= exact_limit or total == 1:
        vals = optimal_error_all(scheme, s, method=method, progress=progress)
        best = int(np.argmax(vals))
        return result(straggler_sets(n, s, best, best + 1)[0], vals[best], "exact", total)

    report = ErrorReport()

    def errs(sets: np.ndarray) -> np.ndarray:
        k = sets.shape[1]
        return np.clip(
            errors_for_group(ctx, method, None, np.sort(sets, axis=1), None, k, n - k, report), 0.0, ctx.total
        )

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
    report.warn(ctx, method)
    return result(best, best_val, "search (lower estimate)", evals)


# ----------------------------------------------------------------------------------------------
# expectation over construction seeds
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedsExpectedResult:
    """Expectation over construction seeds of a randomized encoder (theory §5.3, §57.10).

    ``mean`` averages the per-seed expectations. ``ci`` is a 95% interval whose unit is the seed
    (the encoder draw): :func:`gcsim._stats.draw_level_interval` over the per-seed means (t, or
    t ∪ bootstrap-t for fewer than 30 or skewed seeds); each per-seed CI enters only through the
    spread of the per-seed means. ``ci_method`` says how it was computed; ``stderr`` is the
    standard error over seeds. With one seed there is no interval over seeds: ``(-inf, inf)``
    (``ci_method`` says so). ``per_seed`` holds the :class:`ExpectedErrorResult` of each seed.
    """

    mean: float
    ci: tuple
    method: str
    seeds: tuple
    values: np.ndarray
    per_seed: tuple = field(repr=False, default=())
    ci_method: str = ""
    stderr: float = math.nan

    def __post_init__(self) -> None:
        object.__setattr__(self, "ci", tuple(self.ci))
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "values", _readonly(self.values))
        object.__setattr__(self, "per_seed", tuple(self.per_seed))

    def __repr__(self) -> str:
        """One line: the mean, its interval over seeds, how, the number of seeds; never the per-seed values."""
        how = self.ci_method if len(self.ci_method) <= 60 else self.ci_method[:59] + "…"
        return (
            f"SeedsExpectedResult(mean={self.mean:.6g}, ci=({self.ci[0]:.6g}, {self.ci[1]:.6g}), "
            f"method={self.method!r}, {len(self.seeds)} seeds, ci_method={how!r}, stderr={self.stderr:.4g})"
        )

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: the mean over seeds, its interval and the per-seed means."""
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="SeedsExpectedResult",
                kind="expected error over seeds",
                rows=[
                    ("mean", self.mean),
                    ("95% interval", self.ci),
                    ("interval", self.ci_method),
                    ("method", self.method),
                    ("seeds", self.seeds),
                    ("per-seed means", self.values),
                ],
            ),
        )


_EVAL_KEYS = ("exact_limit", "samples", "decoder", "rescale", "normalized", "keep_values", "progress", "ci_method")


def expected_error_over_seeds(
    assignment: Any, m: int, method: str, model: StragglerModel, seeds: Any, **kw: Any
) -> SeedsExpectedResult:
    """``E_seed E_S[err]`` for a randomized construction (one :func:`encode` per seed).

    Keyword arguments named like those of :func:`expected_error`
    (``exact_limit``, ``samples``, ``decoder``, ``rescale``, ``normalized``,
    ``keep_values``, ``progress``, ``ci_method``, plus ``eval_seed`` and ``eval_method``) go
    to the evaluation; the rest (``eps``, ``dist``, ``s``, ...) to :func:`encode`.

    The interval's unit is the seed: the per-seed expectations ``μ(D_k)`` (exact or Monte Carlo)
    are i.i.d. with mean ``E_D μ(D)``, so ``ci`` comes from their spread
    (:func:`gcsim._stats.draw_level_interval`, theory §57.10), never from the pooled patterns. Pass
    at least 20 seeds for an interval that holds its level on skewed per-seed means (§57.11); one
    seed gives no interval over seeds (``(-inf, inf)``, said in ``ci_method``).

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> res = expected_error_over_seeds(A, 2, "rd", straggler_model("fixed", 3, s=1), [0, 1, 2])
    >>> len(res.per_seed), res.method
    (3, 'mean over 3 seeds of exact')
    >>> res.ci_method.split(" (")[0]
    't over 3 seeds'
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
    exact = all(is_exact_method(r.method) for r in per)
    bounds = None
    if isinstance(eval_kw.get("decoder", "optimal"), str) and eval_kw.get("decoder", "optimal") == "optimal":
        bounds = (0.0, 1.0 if eval_kw.get("normalized", False) else float(sch.B.shape[0]))  # B is mN x n
        values = np.clip(values, *bounds)  # round-off only: an optimal error lies in [0, mN]
    res = draw_level_interval(values, seed=seeds[0], exact=exact, bounds=bounds)
    ci_method = res.method.replace("draws", "seeds")
    if len(seeds) < 2:
        ci_method += " (pass at least 2 seeds, 20 or more for a reliable interval over seeds)"
        import warnings

        warnings.warn(
            "expected_error_over_seeds: one seed gives no interval over encoder draws (ci = (-inf, inf)); "
            "pass at least 2 seeds, 20 or more for a reliable one",
            stacklevel=2,
        )
    inner = sorted({r.method for r in per})
    return SeedsExpectedResult(
        res.mean,
        res.ci,
        f"mean over {len(seeds)} seeds of {', '.join(inner)}",
        seeds,
        values,
        tuple(per),
        ci_method,
        res.se,
    )
