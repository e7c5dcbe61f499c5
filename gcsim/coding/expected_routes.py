"""The routes of :func:`gcsim.coding.evaluate.expected_error` and its result (theory §5.3, §57).

:class:`ExpectationRoutes` is what a straggler model's ``expectation(routes)`` picks from: exact
averages, every ``s``-subset, the exact expectation by components (§57.3), independent workers
(every pattern, strata by ``|S|``: Lemma 7, 7a) and Monte Carlo with the rank bound as a control
variate (§57.1-57.5) and intervals by ``t`` or betting.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _html, limits
from .._stats import betting_interval as _betting_ci
from ..errors import InvalidArgumentError
from ..limits import check_entries
from . import estimators as _est, mc_stream as _mc, structured as _structured
from .decoders import bernoulli_rescaled
from .kernels import ErrorReport, eval_context, optimal_errors
from .pattern_errors import (
    _finish,
    _progress_bar,
    _readonly,
    _structured_route,
    fixed_decoder_error,
    optimal_error,
    optimal_error_all,
)
from .schemes import Scheme
from .straggler_models.bernoulli import BernoulliModel
from .straggler_models.subsets import FixedModel

__all__ = ["MIN_MC_SAMPLES", "POOL_FACTOR", "ExpectedErrorResult", "ExpectationRoutes", "is_exact_method"]

#: Fewest Monte Carlo draws for which :func:`gcsim.coding.evaluate.expected_error` states a 95% interval.
MIN_MC_SAMPLES = 100

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


class ExpectationRoutes:
    """The routes of one :func:`gcsim.coding.evaluate.expected_error` call, offered to the model.

    ``model.expectation(routes)`` (:meth:`gcsim.coding.straggler_base.StragglerModel.expectation`)
    picks what applies to its law: :meth:`exact` of values it enumerated (a trace),
    :meth:`all_subsets` (uniform ``s``-subsets), :meth:`separable` (theory §57.3),
    :meth:`independent` (independent workers: every ``2^n`` pattern, components, strata by ``|S|``
    or plain Monte Carlo) and :meth:`monte_carlo` of any model's :meth:`sample`.  Every argument
    has been checked by ``expected_error``; ``ctx`` is the evaluation context (structured ``st`` or dense).
    """

    def __init__(self, scheme: Scheme, model: Any, st: Any, ctx: Any, options: dict[str, Any]) -> None:
        self.scheme, self.model, self.st, self.ctx = scheme, model, st, ctx
        self.exact_limit: int = options["exact_limit"]
        self.samples: int = options["samples"]
        self.seed: int = options["seed"]
        self.decoder = options["decoder"]
        self.rescale = options["rescale"]
        self.normalized: bool = options["normalized"]
        self.method: str = options["method"]
        self.keep_values: bool = options["keep_values"]
        self.progress: bool = options["progress"]
        self.ci_method: str = options["ci_method"]
        self.scheduler = options["scheduler"]
        self.workers = options["workers"]
        self.p_model = model.independent_p()
        self.report = ErrorReport()
        self._evaluate, self.is_optimal, self.upper = _evaluator(
            scheme,
            self.decoder,
            self.rescale,
            None if self.rescale != "bernoulli" else self.p_model,
            self.method,
            self.progress,
            self.report,
        )
        self.scale = 1.0 / ctx.total if self.normalized else 1.0
        self.desc = model.describe()
        # theory §57: the rank bound's exact law as a control variate (encoders supported on A, models
        # whose law of c_i(F) is known); otherwise the trivial bound L = 0 (err >= 0)
        self.cv_assignment = _est.support_within_assignment(scheme) if _est.has_closed_form_law(model) else None
        self.lower_fn = _est.rank_bound_function(self.cv_assignment, ctx.m) if self.cv_assignment is not None else None
        self.tol = _est.FAILURE_TOL * ctx.total

    # -- building blocks ----------------------------------------------------------------------------
    def evaluate(self, masks: np.ndarray) -> np.ndarray:
        """Raw errors of a stack of non-straggler masks under the call's decoder."""
        return self._evaluate(masks)

    def exact(self, values: np.ndarray, weights: np.ndarray | None = None) -> ExpectedErrorResult:
        """The exact mean (weighted by ``weights``, else uniform) of raw per-pattern errors."""
        values = values * self.scale
        mean = float(np.mean(values) if weights is None else np.dot(weights, values))
        kept = values if self.keep_values else None
        return ExpectedErrorResult(mean, (mean, mean), "exact", int(values.size), 0.0, self.normalized, self.desc, kept)

    def check_budget(self) -> None:
        """Refuse a ``t`` interval from fewer than :data:`MIN_MC_SAMPLES` draws."""
        if self.ci_method == "t" and self.samples < MIN_MC_SAMPLES:
            raise InvalidArgumentError(
                "samples",
                f"{self.samples} Monte Carlo draws are too few for a 95% t interval (at least "
                f"MIN_MC_SAMPLES = {MIN_MC_SAMPLES}); draw more, or pass ci_method='betting' (valid for any "
                "number of draws)",
            )

    def _chunked(self) -> _mc.ChunkEvaluator:
        if self.st is not None:
            return _mc.ChunkEvaluator.structured(self.st)
        if self.is_optimal:
            return _mc.ChunkEvaluator.optimal(self.scheme, self.method)
        X = None if isinstance(self.decoder, str) else self.decoder
        p = None if self.rescale != "bernoulli" else self.p_model
        return _mc.ChunkEvaluator.fixed(self.scheme, X, self.rescale, p, fixed_decoder_error)

    def draw_pairs(self, draws: list[_mc.Draw]) -> list[np.ndarray]:
        """``[err, L]`` per draw row (raw): streamed in independent chunks (on ``scheduler``) when possible."""
        lower = self.lower_fn if self.lower_fn is not None else _zero_bound
        if not all(_mc.streamable(d.model) for d in draws):
            out = []
            for d in draws:
                check_entries("samples", (d.size, d.model.n), "the straggler masks drawn at once (samples x n)")
                mk = np.asarray(d.model.sample(d.size, d.seed), dtype=bool)
                out.append(np.column_stack([self.evaluate(mk), lower(mk)]))
            return out
        values, unreliable, patterns = _mc.evaluate_draws(
            _mc.PairedEvaluator(self._chunked(), lower),
            draws,
            scheduler=self.scheduler,
            workers=self.workers,
            progress=self.progress,
        )
        self.report.unreliable += unreliable
        self.report.patterns += patterns
        return values

    def _expected_lower(self) -> float:
        if self.lower_fn is None:
            return 0.0
        return _est.expected_rank_lower_bound(self.cv_assignment, self.ctx.m, self.model)

    # -- routes -------------------------------------------------------------------------------------
    def monte_carlo(self, model: Any) -> ExpectedErrorResult:
        """``samples`` draws of ``model.sample`` (the excess over the rank bound, theory §57.1-57.5)."""
        self.check_budget()
        return self._monte_carlo(_mc.Draw(model, self.samples, self.seed))

    def _monte_carlo(self, draw: _mc.Draw) -> ExpectedErrorResult:
        ctx, scale = self.ctx, self.scale
        pairs = self.draw_pairs([draw])[0]
        raw, excess = pairs[:, 0], np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
        el = self._expected_lower()
        extra = ""
        again_size = _est.RARE_EXTEND * draw.size
        # masks of a model that cannot be streamed are held whole: redraw only within the dense limit
        fits = _mc.streamable(draw.model) or again_size * ctx.n <= limits.MAX_DENSE_ENTRIES
        if self.ci_method == "t" and again_size and fits and _est.is_rare(excess, self.tol):
            # theory §57.4: drawn again, the estimate and limit from the new draws alone
            again = self.draw_pairs([_mc.Draw(draw.model, again_size, _redraw_seed(self.seed, ctx.n, 0))])[0]
            raw = np.concatenate([raw, again[:, 0]])
            excess = np.maximum(again[:, 0] - again[:, 1], 0.0)
            extra = f"{again.shape[0]} draws drawn again (rare failures)"
        tag = f"monte-carlo n={raw.size}"
        if self.ci_method == "betting":
            lo_b, hi_b = _betting_ci(excess, 0.0, self.upper)
            mean, ci, se, note = el + float(excess.mean()), (el + lo_b, el + hi_b), _se(excess), ""
            tag += " (betting interval)"
        else:
            mean, ci, se, note = _est.combine_groups([_est.Group(1.0, el, excess)], 0.0, self.upper, self.tol)
        tag += _cv_note(self.lower_fn is not None, "; ".join(x for x in (note, extra) if x))
        return ExpectedErrorResult(
            mean * scale,
            (ci[0] * scale, ci[1] * scale),
            tag,
            int(raw.size),
            se * scale,
            self.normalized,
            self.desc,
            raw * scale if self.keep_values else None,
        )

    def separable(self) -> ExpectedErrorResult | None:
        """Theory §57.3: exact by the components of B's support, where it splits into small ones."""
        if not self.is_optimal or self.st is not None or self.keep_values:
            return None
        method = self.method
        found = _est.separable_expectation(
            self.scheme,
            self.model,
            self.exact_limit,
            lambda sub, mk: optimal_error(sub, mk, method=method, progress=False),
        )
        if found is None:
            return None
        value, how = found
        value *= self.scale
        return ExpectedErrorResult(value, (value, value), f"exact ({how})", 0, 0.0, self.normalized, self.desc, None)

    def all_subsets(self, s: int) -> ExpectedErrorResult:
        """The exact average over every ``s``-subset of stragglers."""
        total = math.comb(self.ctx.n, s)
        if self.is_optimal:
            vals = optimal_error_all(self.scheme, s, method=self.method, progress=self.progress)
        else:
            chunks = FixedModel(self.ctx.n, s).iter_chunks()
            vals = np.concatenate([self.evaluate(mk) for mk in chunks]) if total else np.zeros(0)
        return self.exact(vals)

    def independent(self, p: np.ndarray) -> ExpectedErrorResult:
        """Worker ``j`` straggles independently with ``p_j``: every ``2^n`` pattern weighted when
        ``2^n <= exact_limit``, else by components, else stratified by ``|S|`` (one ``p``) or Monte Carlo."""
        n = self.ctx.n
        if n < 63 and 2**n <= self.exact_limit:
            masks = _est.every_mask(n)
            weights = BernoulliModel(n, p).weights(masks)
            return self.exact(self.evaluate(masks), weights)
        found = self.separable()
        if found is not None:
            return found
        marginal = BernoulliModel(n, p)
        if marginal.homogeneous:
            return _Stratified(self, float(marginal.p[0])).run()
        self.check_budget()
        return self._monte_carlo(_mc.Draw(marginal, self.samples, self.seed))


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


class _Stratified:
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
    The draws of every sampled stratum are evaluated together (:meth:`ExpectationRoutes.draw_pairs`:
    on a Dask scheduler, as one sweep).

    When the minimum of 2 draws per stratum would take more than :data:`POOL_FACTOR` times
    ``samples`` draws (many light strata: large ``n``), consecutive light strata are *pooled*
    (Lemma 7a of docs/theory/40_error_identities.md): a pool ``G`` of weight ``W_G`` gets
    ``n_G = max(2, round(samples W_G / W))`` draws, split over its strata by one seeded
    multinomial with probabilities ``w_s / W_G``, and counts as one stratum of the estimator.
    Strata heavy enough for 2 draws of their own are never pooled, and without pooling the
    draws are those of the unpooled estimator.
    """

    def __init__(self, routes: ExpectationRoutes, p: float) -> None:
        from scipy import stats

        self.r = routes
        self.n = n = routes.ctx.n
        self.w = stats.binom.pmf(np.arange(n + 1), n, p)
        self.loads = _est.part_loads(routes.cv_assignment) if routes.lower_fn is not None else None
        self.count = 0
        self.kept: list[np.ndarray] = []

    def _choose_strata(self) -> None:
        """The strata enumerated exactly (heaviest first, within ``exact_limit``), sampled and skipped."""
        n, w = self.n, self.w
        budget = self.r.exact_limit
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
        self.exact_s = exact_s
        self.mc_s = [s for s in range(n + 1) if s not in exact_set and w[s] >= 1e-15]
        self.skipped = float(sum(w[s] for s in range(n + 1) if s not in exact_set and w[s] < 1e-15))

    def _exact_part(self) -> float:
        r, n, w = self.r, self.n, self.w
        exact_part = 0.0
        for s in self.exact_s:
            if r.is_optimal:
                vals = optimal_error_all(r.scheme, s, method=r.method, progress=False)
            else:
                vals = r.evaluate(FixedModel(n, s).enumerate())
            exact_part += w[s] * float(vals.mean())
            self.count += vals.size
            self.kept.append(vals * r.scale)
        return exact_part

    def _pool_pairs(self, sizes: dict[int, int], stage: int) -> dict[int, np.ndarray]:
        """``[err, L]`` of ``sizes[g]`` draws from each pool ``g``, evaluated together.

        One seeded multinomial splits a pool's draws over its strata (i.i.d. from its mixture,
        Lemma 7a); stage 2 (a rare pool drawn again, theory §57.4) uses seeds apart from stage 1's.
        """
        n, w, seed = self.n, self.w, self.r.seed
        draws: list[_mc.Draw] = []
        owner: list[int] = []  # the pool of each draw
        for g, size in sizes.items():
            pool = self.pools[g]
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
        raw = self.r.draw_pairs(draws)
        parts: dict[int, list[np.ndarray]] = {g: [] for g in sizes}
        for g, drawn in zip(owner, raw, strict=True):
            parts[g].append(drawn)
        return {g: np.concatenate(p) for g, p in parts.items() if p}

    def _sampled_groups(self) -> tuple[list[_est.Group], float, float, int]:
        """The estimator's groups (one per pool), the betting sums, and the draws made again (§57.4)."""
        r, w, samples, wmc = self.r, self.w, self.r.samples, self.wmc
        first = self._pool_pairs(
            {
                g: max(2, int(round(samples * float(sum(w[s] for s in pool)) / wmc))) if wmc > 0 else 2
                for g, pool in enumerate(self.pools)
            },
            1,
        )
        groups: list[_est.Group] = []
        lo_sum = hi_sum = 0.0
        for g, pool in enumerate(self.pools):
            weight = float(sum(w[s] for s in pool))
            pairs = first[g]
            # E[L | pool]: the pool's draws are i.i.d. from its mixture Σ_s (w_s / W_G) · stratum s (Lemma 7a)
            el = (
                sum(float(w[s]) * _est.stratum_rank_lower_bound(self.loads, r.ctx.m, self.n, s) for s in pool) / weight
                if self.loads is not None
                else 0.0
            )
            excess = np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
            # err is non-increasing in F for the optimal decoder: Lemma 57.5's monotone bound (single strata)
            groups.append(_est.Group(weight, el, excess, pairs[:, 0] if r.is_optimal and len(pool) == 1 else None))
            if r.ci_method == "betting":
                lo_s, hi_s = _betting_ci(excess, 0.0, r.upper, alpha=0.05 * weight / wmc)
                lo_sum += weight * (el + lo_s)
                hi_sum += weight * (el + hi_s)
            self.count += pairs.shape[0]
            self.kept.append(pairs[:, 0] * r.scale)
        redrawn = 0
        if r.ci_method == "t" and _est.RARE_EXTEND > 0:
            # theory §57.4: a rare-event stratum is drawn again with RARE_EXTEND times its draws, and its
            # estimate and one-sided limit use the new draws alone (the decision saw only the first ones)
            rare = [g for g, grp in enumerate(groups) if _est.is_rare(grp.excess, r.tol)]
            again = self._pool_pairs({g: _est.RARE_EXTEND * groups[g].excess.size for g in rare}, 2)
            for g, pairs in again.items():
                old = groups[g]
                excess = np.maximum(pairs[:, 0] - pairs[:, 1], 0.0)
                groups[g] = _est.Group(old.weight, old.lower, excess, pairs[:, 0] if old.errors is not None else None)
                self.count += pairs.shape[0]
                redrawn += pairs.shape[0]
                self.kept.append(pairs[:, 0] * r.scale)
        return groups, lo_sum, hi_sum, redrawn

    def run(self) -> ExpectedErrorResult:
        r = self.r
        self._choose_strata()
        if self.mc_s:
            r.check_budget()
        exact_part = self._exact_part()
        self.wmc = float(sum(self.w[s] for s in self.mc_s))
        self.pools = _pool_strata(self.mc_s, self.w, r.samples, self.wmc)
        groups, lo_sum, hi_sum, redrawn = self._sampled_groups()
        scale, upper = r.scale, r.upper
        tol = r.tol
        slack = self.skipped * upper
        merged = [pool for pool in self.pools if len(pool) > 1]
        pooled_note = f", {sum(map(len, merged))} light strata in {len(merged)} pools" if merged else ""
        values = np.concatenate(self.kept) if r.keep_values and self.kept else None
        count = self.count
        if not self.mc_s:  # every stratum was enumerated: exact
            mean = float(exact_part * scale)
            return ExpectedErrorResult(
                mean, (mean, float(mean + slack * scale)), "exact", count, 0.0, r.normalized, r.desc, values
            )
        mean, ci, se, note = _est.combine_groups(groups, exact_part, upper, tol, slack)
        label = f"monte-carlo n={count} (stratified by |S|, {len(self.exact_s)} strata exact{pooled_note}"
        if redrawn:
            label += f", {redrawn} draws of rare strata drawn again"
        if r.ci_method == "betting":
            ci = (exact_part + lo_sum, exact_part + hi_sum + slack)
            label += ", betting interval"
        label += (", control variate: the rank bound's exact mean" if self.loads is not None else "") + (
            f"; {note}" if note and r.ci_method != "betting" else ""
        )
        return ExpectedErrorResult(
            float(mean * scale),
            (float(ci[0] * scale), float(ci[1] * scale)),
            label + ")",
            count,
            float(se * scale),
            r.normalized,
            r.desc,
            values,
        )
