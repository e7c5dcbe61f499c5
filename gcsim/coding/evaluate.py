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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _html, limits
from .._stats import draw_level_interval
from .._validation import check_bool, check_int
from ..errors import InvalidArgumentError
from ..sweep import check_scheduler_and_workers, int_seed
from .encoders import get_encoder
from .expected_routes import _CI_METHODS, MIN_MC_SAMPLES, ExpectationRoutes, ExpectedErrorResult, is_exact_method
from .kernels import ErrorReport, errors_for_group, eval_context
from .pattern_errors import (
    _check_method,
    _progress,
    _readonly,
    _structured_route,
    condition_number,
    fixed_decoder_error,
    optimal_error,
    optimal_error_all,
)
from .schemes import Scheme, encode
from .straggler_base import StragglerModel, assignment_loads
from .stragglers import straggler_sets

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
    if model.adversarial:
        raise InvalidArgumentError("model", "the worst case is not an expectation; use worst_case_error(scheme, s)")
    if model.load_dependent:  # the law at this code's data per worker (theory §63.5)
        model = model.bind(*assignment_loads(scheme))
    options = dict(
        exact_limit=exact_limit,
        samples=samples,
        seed=seed,
        decoder=decoder,
        rescale=rescale,
        normalized=normalized,
        method=method,
        keep_values=keep_values,
        progress=progress,
        ci_method=ci_method,
        scheduler=scheduler,
        workers=workers,
    )
    # the model picks the routes that apply to its law (StragglerModel.expectation)
    routes = ExpectationRoutes(scheme, model, st, ctx, options)
    res = model.expectation(routes)
    routes.report.warn(ctx, method)
    return res


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
        return _html.repr_line(
            "WorstCaseErrorResult",
            ("value", self.value),
            f"stragglers=[{shown}] of n={self.mask.size}",
            ("method", self.method),
            ("evaluations", self.evaluations),
            ("normalized", self.normalized),
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
    standard error over seeds. With one seed, or seeds whose means all agree, there is no spread to
    go by: the range ``(0, mN)`` for one seed, the range interval of theory §57.10 for identical
    seeds (``(-inf, inf)`` where no range is known), even when each per-seed mean is exact -- unseen
    seeds may differ. Only a deterministic encoder (it does not read the seed) evaluated exactly
    has a zero-width interval. ``per_seed`` holds the :class:`ExpectedErrorResult` of each seed.
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
        return _html.repr_line(
            "SeedsExpectedResult",
            ("mean", self.mean),
            ("ci", self.ci),
            ("method", self.method),
            f"{len(self.seeds)} seeds",
            ("ci_method", self.ci_method),
            ("stderr", self.stderr, 4),
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


def _pattern_seed(eval_seed: int, encoder_seed: int) -> int:
    """The pattern seed :func:`expected_error_over_seeds` evaluates encoder seed ``encoder_seed`` with.

    Derived from both (a :class:`numpy.random.SeedSequence` of the pair), so distinct encoder
    seeds draw independent straggler patterns and the same pair always draws the same ones.

    Examples
    --------
    >>> _pattern_seed(0, 1) == _pattern_seed(0, 1), _pattern_seed(0, 1) != _pattern_seed(0, 2)
    (True, True)
    """
    eval_seed = check_int("eval_seed", eval_seed, minimum=0)
    encoder_seed = check_int("encoder_seed", encoder_seed, minimum=0)
    return int_seed(np.random.SeedSequence((eval_seed, encoder_seed, 0x5EED)))


def expected_error_over_seeds(
    assignment: Any, m: int, method: str, model: StragglerModel, seeds: Any, **kw: Any
) -> SeedsExpectedResult:
    """``E_seed E_S[err]`` for a randomized construction (one :func:`encode` per seed).

    Keyword arguments named like those of :func:`expected_error`
    (``exact_limit``, ``samples``, ``decoder``, ``rescale``, ``normalized``,
    ``keep_values``, ``progress``, ``ci_method``, plus ``eval_seed`` and ``eval_method``) go
    to the evaluation; the rest (``eps``, ``dist``, ``s``, ...) to :func:`encode`.

    Encoder seed ``k`` is evaluated with patterns seeded by a hash of ``eval_seed``
    (default 0) and ``k``, so Monte Carlo estimates of different seeds are independent.

    The interval's unit is the seed: the per-seed expectations ``μ(D_k)`` (exact or Monte Carlo)
    are i.i.d. with mean ``E_D μ(D)``, so ``ci`` comes from their spread
    (:func:`gcsim._stats.draw_level_interval`, theory §57.10), never from the pooled patterns. Pass
    at least 20 seeds for an interval that holds its level on skewed per-seed means (§57.11); one
    seed gives no interval over seeds (the range ``(0, mN)`` of the optimal decoder's error, else
    ``(-inf, inf)``; said in ``ci_method``), exact evaluation or not.

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
    base = check_int("eval_seed", eval_kw.get("seed", 0), minimum=0)
    per = []
    for sd in seeds:
        sch = encode(assignment, m, method, seed=sd, **kw)
        # each encoder seed draws its own patterns: per-seed Monte Carlo means sharing one pattern
        # seed would share their pattern noise and not be the independent units the interval needs
        per.append(expected_error(sch, model, **{**eval_kw, "seed": _pattern_seed(base, sd)}))
    values = np.array([r.mean for r in per])
    exact = all(is_exact_method(r.method) for r in per)
    bounds = None
    if isinstance(eval_kw.get("decoder", "optimal"), str) and eval_kw.get("decoder", "optimal") == "optimal":
        bounds = (0.0, 1.0 if eval_kw.get("normalized", False) else float(sch.B.shape[0]))  # B is mN x n
        values = np.clip(values, *bounds)  # round-off only: an optimal error lies in [0, mN]
    # a deterministic encoder does not read the seed: every seed's scheme, hence mean, is the same
    invariant = not get_encoder(method).depends_on_seed()
    res = draw_level_interval(values, seed=seeds[0], exact=exact, invariant=invariant, bounds=bounds)
    ci_method = res.method.replace("and draw-invariant", "(a deterministic encoder)")
    ci_method = ci_method.replace("draws", "seeds").replace(" draw:", " seed:")
    if len(seeds) < 2 and not (exact and invariant):
        ci_method += " (pass at least 2 seeds, 20 or more for a reliable interval over seeds)"
        import warnings

        warnings.warn(
            f"expected_error_over_seeds: one seed gives no interval over encoder draws (ci = {res.ci}); "
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
