"""Bound verification engine (theory §45, last item).

:func:`verify_bounds` takes a scheme, a straggler model and a set of bounds,
computes the simulated optimal-decoding error ``err(B, F)`` (raw, squared) and
checks ``lower <= simulated <= upper``:

* **pattern** bounds (e.g. the rank lower bound, which holds for every encoder
  and every pattern) are checked pattern by pattern, with a floating-point
  tolerance ``atol + rtol * max(1, |bound|, |err|)``;
* **expectation** bounds (e.g. the RD scaled-sign upper bound, a bound on
  ``E_D err(B, F)`` over the random encoder draw ``D`` for a fixed ``F``) are
  checked *in expectation*: the encoder is redrawn ``draws`` times with
  independent seeds and, per pattern, the one-sided confidence bound on the mean
  is compared with the bound (Bonferroni over patterns), plus one pooled test of
  the average over patterns.  A single draw exceeding an expectation bound is
  not a violation;
* **worst** bounds (e.g. the uncovering lower bound of theory §46.6 and the
  partial-uncovering closed form of §45.8, bounds on
  ``max_{|S|=s} err(B, F)``) are checked against the maximum over *every*
  pattern with ``s`` stragglers, so they need the enumerated ``"all"``/``"worst"``
  models.

The report lists every violation with the straggler set that caused it, and
tightness ratios ``bound / simulated`` (``<= 1`` for valid lower bounds,
``>= 1`` for valid upper bounds, ``1`` = tight).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _html, limits
from .._progress import progress_bar
from .._validation import check_bool, check_int, check_mask, check_real
from ..errors import InvalidArgumentError
from .bounds.registry import Bound, builtin_bounds
from .bounds.worst_case import _enumerate_masks
from .encoders import CUSTOM, get_encoder, is_registered, options_of, proved_bounds
from .evaluate import condition_number, optimal_error
from .schemes import Scheme, encode
from .straggler_base import assignment_loads

__all__ = ["Bound", "Violation", "BoundCheck", "BoundReport", "BUILTIN_BOUNDS", "builtin_bound", "verify_bounds"]

#: name -> Bound for the bounds proved in docs/theory/45_bounds.md and 46_spectral.md, each registered
#: beside its function in a module of gcsim.coding.bounds (gcsim.coding.bounds.registry)
BUILTIN_BOUNDS: dict[str, Bound] = builtin_bounds()


def builtin_bound(name: str) -> Bound:
    """The built-in :class:`Bound` called ``name`` (one of :data:`BUILTIN_BOUNDS`).

    Examples
    --------
    >>> builtin_bound("rank_lower").kind
    'lower'
    """
    if name not in BUILTIN_BOUNDS:
        raise InvalidArgumentError("bounds", f"unknown bound {name!r}; built-in: {sorted(BUILTIN_BOUNDS)}")
    return BUILTIN_BOUNDS[name]


@dataclass(frozen=True)
class Violation:
    """One failed check.

    ``pattern`` is the index of the pattern among the checked ones (None for
    the pooled expectation test); ``stragglers`` the straggler set ``S`` that
    caused it; ``excess`` how far beyond the bound (positive); ``ci`` the
    confidence interval of the mean for expectation bounds.
    """

    bound: str
    kind: str
    scope: str
    pattern: int | None
    stragglers: tuple | None
    mask: np.ndarray | None
    bound_value: float
    simulated: float
    excess: float
    ci: tuple | None = None

    def to_dict(self) -> dict:
        return {
            "bound": self.bound,
            "kind": self.kind,
            "scope": self.scope,
            "pattern": self.pattern,
            "stragglers": None if self.stragglers is None else [int(x) for x in self.stragglers],
            "mask": None if self.mask is None else [bool(x) for x in self.mask],
            "bound_value": _num(self.bound_value),
            "simulated": _num(self.simulated),
            "excess": _num(self.excess),
            "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])],
        }


@dataclass
class BoundCheck:
    """Result of checking one bound over all patterns."""

    name: str
    kind: str
    scope: str
    description: str
    method: str
    bound_values: np.ndarray
    simulated: np.ndarray
    ci: np.ndarray | None
    violations: list = field(default_factory=list)
    tightness: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no violation was found."""
        return not self.violations

    def to_dict(self, include_values: bool = False) -> dict:
        include_values = check_bool("include_values", include_values)
        out = {
            "name": self.name,
            "kind": self.kind,
            "scope": self.scope,
            "description": self.description,
            "method": self.method,
            "patterns": int(self.bound_values.shape[0]),
            "ok": self.ok,
            "violations": [v.to_dict() for v in self.violations],
            "tightness": {k: _num(v) for k, v in self.tightness.items()},
        }
        if include_values:
            out["bound_values"] = [_num(x) for x in self.bound_values]
            out["simulated"] = [_num(x) for x in self.simulated]
            if self.ci is not None:
                out["ci"] = [[_num(a), _num(b)] for a, b in self.ci]
        return out


@dataclass
class BoundReport:
    """Report of :func:`verify_bounds`.

    Attributes
    ----------
    scheme : dict
        method, N, n, m and scalar parameters of the scheme.
    model : str
        Description of the straggler model (or "given masks").
    patterns : int
        Number of straggler patterns checked.
    pattern_method : str
        ``"enumerated"`` (every pattern) or ``"sampled n=..."``.
    draws : int
        Encoder redraws used for expectation bounds (0 if none).
    confidence : float
    checks : list of BoundCheck
    masks : numpy.ndarray
        The checked non-straggler masks.
    """

    scheme: dict
    model: str
    patterns: int
    pattern_method: str
    draws: int
    confidence: float
    checks: list
    masks: np.ndarray

    @property
    def ok(self) -> bool:
        """True when every bound held on every checked pattern."""
        return all(c.ok for c in self.checks)

    @property
    def violations(self) -> list:
        """Every :class:`Violation`, over all bounds."""
        return [v for c in self.checks for v in c.violations]

    def check(self, name: str) -> BoundCheck:
        """The :class:`BoundCheck` of the bound called ``name``."""
        for c in self.checks:
            if c.name == name:
                return c
        raise InvalidArgumentError("name", f"no bound {name!r} in this report; have {[c.name for c in self.checks]}")

    def to_dict(self, include_values: bool = False) -> dict:
        """JSON-serializable summary (non-finite numbers become None)."""
        include_values = check_bool("include_values", include_values)
        return {
            "ok": self.ok,
            "error": "raw squared error min_X ||B_F X - T||_F^2",
            "scheme": self.scheme,
            "model": self.model,
            "patterns": self.patterns,
            "pattern_method": self.pattern_method,
            "draws": self.draws,
            "confidence": self.confidence,
            "violations": len(self.violations),
            "checks": [c.to_dict(include_values) for c in self.checks],
        }

    def summary(self) -> str:
        """Human-readable multi-line summary."""
        lines = [
            f"bound verification: {'OK' if self.ok else 'VIOLATIONS FOUND'} -- {self.patterns} patterns "
            f"({self.pattern_method}), model: {self.model}"
        ]
        for c in self.checks:
            t = c.tightness
            lines.append(
                f"  {c.name:<24} {c.kind:<5} {c.scope:<11} {'ok' if c.ok else 'FAIL':<4} "
                f"violations={len(c.violations)} ratio(bound/err) median={_fmt(t.get('ratio_median'))} "
                f"min={_fmt(t.get('ratio_min'))} max={_fmt(t.get('ratio_max'))} [{c.method}]"
            )
            for v in c.violations[:5]:
                lines.append(
                    f"    pattern {v.pattern} stragglers={v.stragglers}: bound={v.bound_value:.6g} "
                    f"simulated={v.simulated:.6g} excess={v.excess:.3g}"
                )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"BoundReport(ok={self.ok}, patterns={self.patterns}, "
            f"bounds={[c.name for c in self.checks]}, violations={len(self.violations)})"
        )

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: the verdict, what was checked, and one row per bound."""

        def card() -> str:
            n_viol = len(self.violations)
            status = (True, "every bound held") if self.ok else (False, f"verification failed: {n_viol} violations")
            checks = _html.check_table(
                ("bound", "kind", "scope", "ok", "violations", "ratio median", "ratio min", "method"),
                (
                    (
                        c.name,
                        c.kind,
                        c.scope,
                        "ok" if c.ok else "FAIL",
                        len(c.violations),
                        c.tightness.get("ratio_median"),
                        c.tightness.get("ratio_min"),
                        c.method,
                    )
                    for c in self.checks
                ),
            )
            return _html.object_html(
                title="BoundReport",
                kind="bound verification",
                rows=[
                    ("scheme", ", ".join(f"{k}={_html.fmt(v)}" for k, v in self.scheme.items())),
                    ("straggler model", self.model),
                    ("patterns", f"{self.patterns} ({self.pattern_method})"),
                    ("encoder redraws", self.draws),
                    ("confidence", self.confidence),
                ],
                status=status,
                extra=checks,
            )

        return _html.safe_html(self, card)


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _param(v):
    if v is None or isinstance(v, (str, bool, np.bool_)):
        return v if not isinstance(v, np.bool_) else bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return _num(v)


def _fmt(x):
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.4g}"


# ----------------------------------------------------------------------------------------------
# simulated errors
# ----------------------------------------------------------------------------------------------


def _optimal_errors(scheme, masks: np.ndarray, progress: bool = False) -> np.ndarray:
    return np.asarray(optimal_error(scheme, masks, progress=progress), dtype=float).reshape(masks.shape[0])


def _as_scheme(scheme):
    for attr in ("B", "assignment", "m"):
        if not hasattr(scheme, attr):
            raise InvalidArgumentError("scheme", f"must have .B, .assignment and .m (a Scheme); missing .{attr}")
    if isinstance(scheme, Scheme):
        return scheme
    return Scheme.from_matrix(
        scheme.B,
        scheme.assignment,
        scheme.m,
        method=getattr(scheme, "method", "custom"),
        decoder=getattr(scheme, "decoder", None),
        options=getattr(scheme, "options", None),
    )


def _default_redraw(scheme) -> Callable[[int], Any]:
    method = getattr(scheme, "method", CUSTOM)
    if not (is_registered(method) and get_encoder(method).depends_on_seed()):
        raise InvalidArgumentError(
            "redraw",
            f"expectation bounds need a randomized encoder to redraw; scheme method {method!r} "
            f"is not one -- pass redraw=callable(seed) -> scheme",
        )
    given = dict(getattr(scheme, "options", {}) or {})
    eps = float(given.get("eps", 0.0))
    encoder = get_encoder(method)
    options = options_of(encoder, given)
    source = encoder.source(scheme)  # the weights of a weighted scheme, else its assignment

    def redraw(seed: int):
        return encode(source, scheme.m, method, eps=eps, seed=int(seed), **options)

    return redraw


# ----------------------------------------------------------------------------------------------
# the engine
# ----------------------------------------------------------------------------------------------


def _resolve_bounds(bounds, scheme) -> list[Bound]:
    if bounds is None:
        names = ["rank_lower", "trivial_upper"]
        if getattr(scheme, "decoder", None) is not None:
            names.append("reference_decoder_upper")
        if "rd_upper" in proved_bounds(getattr(scheme, "method", None)):
            names.append("rd_upper")
        bounds = names
    if isinstance(bounds, (str, Bound)):
        bounds = [bounds]
    out = []
    for b in bounds:
        if isinstance(b, Bound):
            out.append(b)
        elif isinstance(b, str):
            out.append(builtin_bound(b))
        elif isinstance(b, (tuple, list)) and len(b) in (4, 5):
            out.append(Bound(*b))
        else:
            raise InvalidArgumentError(
                "bounds", f"each bound must be a name, a Bound or a tuple (name, kind, scope, function), got {b!r}"
            )
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise InvalidArgumentError("bounds", f"bound names must be unique, got {names}")
    return out


def _patterns(model, n: int, samples: int | None, seed: int, exact_limit: int) -> tuple[np.ndarray, str, str]:
    """Non-straggler masks to check, how they were chosen, and a model description."""
    if isinstance(model, np.ndarray) or isinstance(model, (list, tuple)):
        masks = check_mask("model", model, n)
        return np.atleast_2d(masks), "given masks", "given masks"
    if not hasattr(model, "sample"):
        raise InvalidArgumentError(
            "model", f"must be a straggler model (with .sample) or an array of masks, got {type(model).__name__}"
        )
    if getattr(model, "n", n) != n:
        raise InvalidArgumentError("model", f"model is for n={model.n} workers, the scheme has n={n}")
    desc = model.describe() if hasattr(model, "describe") else repr(model)
    if getattr(model, "adversarial", False) or (samples is None and hasattr(model, "enumerate")):
        s = int(model.s)
        total = math.comb(n, s)
        if total > exact_limit:
            raise InvalidArgumentError(
                "samples",
                f"enumerating C({n},{s}) = {total} patterns exceeds exact_limit={exact_limit}; "
                f"pass samples= with a sampling model",
            )
        masks = np.concatenate(list(_enumerate_masks(n, s)), axis=0)
        return masks, f"enumerated (all {total} sets with s={s})", desc
    count = 256 if samples is None else check_int("samples", samples, minimum=1)
    masks = check_mask("model.sample()", model.sample(count, seed), n)
    return np.atleast_2d(masks), f"sampled n={count} (seed {seed})", desc


def _tightness(bound_values, simulated, tol) -> dict:
    b, e = np.asarray(bound_values, float), np.asarray(simulated, float)
    both_zero = (np.abs(b) <= tol) & (np.abs(e) <= tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(both_zero, 1.0, b / e)
    finite = ratio[np.isfinite(ratio)]
    gap = np.abs(b - e)
    stats = {"ratio_min": np.nan, "ratio_median": np.nan, "ratio_mean": np.nan, "ratio_max": np.nan}
    if finite.size:
        stats = {
            "ratio_min": finite.min(),
            "ratio_median": float(np.median(finite)),
            "ratio_mean": finite.mean(),
            "ratio_max": finite.max(),
        }
    stats.update(
        {
            "ratio_undefined": float(ratio.size - finite.size),
            "tight_fraction": float(np.mean(gap <= tol)) if gap.size else np.nan,
            "gap_mean": gap.mean() if gap.size else np.nan,
            "gap_max": gap.max() if gap.size else np.nan,
        }
    )
    return stats


def _violation(b: Bound, masks: np.ndarray, p: int, value: float, simulated: float, excess: float, ci=None):
    """The :class:`Violation` of bound ``b`` at pattern ``p`` (row ``p`` of ``masks``)."""
    stragglers = tuple(np.flatnonzero(~masks[p]).tolist())
    return Violation(b.name, b.kind, b.scope, p, stragglers, masks[p].copy(), value, simulated, excess, ci)


def _bound_check(b: Bound, method: str, vals, simulated, ci, viol: list, tol: float) -> BoundCheck:
    """The :class:`BoundCheck` of bound ``b``, with its tightness ratios ``vals / simulated``."""
    return BoundCheck(
        b.name, b.kind, b.scope, b.description, method, vals, simulated, ci, viol, _tightness(vals, simulated, tol)
    )


def _check_worst(b: Bound, sch, masks: np.ndarray, simulated: np.ndarray, atol: float, rtol: float) -> BoundCheck:
    """Check a bound on ``max_{|S|=s} err(B, F)`` against the maximum over every pattern of each size ``s``."""
    n = masks.shape[1]
    vals = _eval_bound(b, sch, masks)
    s_of = n - masks.sum(axis=1)
    worst = np.empty_like(simulated)
    viol = []
    for s in np.unique(s_of):
        idx = np.flatnonzero(s_of == s)
        distinct = np.unique(masks[idx], axis=0).shape[0]
        if distinct != math.comb(n, int(s)):
            raise InvalidArgumentError(
                "bounds",
                f"{b.name!r} bounds the worst case over all C({n},{s}) = {math.comb(n, int(s))} straggler sets, "
                f"but only {distinct} were checked: use the 'all' or 'worst' straggler model "
                f"(every pattern enumerated, C(n, s) <= exact_limit)",
            )
        if np.ptp(vals[idx]) > 0:
            raise InvalidArgumentError(
                "bounds", f"worst-case bound {b.name!r} must depend on s only, got several values for s = {s}"
            )
        top = idx[int(np.argmax(simulated[idx]))]
        worst[idx] = simulated[top]
        value = float(vals[idx[0]])
        tol = atol + rtol * max(1.0, abs(value), abs(float(simulated[top])))
        excess = value - float(simulated[top]) if b.kind == "lower" else float(simulated[top]) - value
        if excess > tol:
            viol.append(_violation(b, masks, int(top), value, float(simulated[top]), float(excess)))
    method = "worst case: against the maximum over every pattern with the same s"
    return _bound_check(b, method, vals, worst, None, viol, float(atol + rtol))


def _eval_bound(bound: Bound, scheme, masks) -> np.ndarray:
    vals = np.asarray(bound.function(scheme, masks), dtype=float).reshape(-1)
    if vals.shape[0] != masks.shape[0]:
        raise InvalidArgumentError(
            "bounds", f"bound {bound.name!r} returned {vals.shape[0]} values for {masks.shape[0]} patterns"
        )
    if np.any(np.isnan(vals)):
        raise InvalidArgumentError("bounds", f"bound {bound.name!r} returned NaN")
    return vals


def _progress_bar(items, enabled: bool):
    if not enabled:
        return items
    return progress_bar(items, desc="encoder redraws")  # a bar on a terminal, lines on a pipe (gcsim._progress)


def _one_sided_quantile(level: float, dof: int) -> float:
    from scipy.special import stdtrit  # Student-t quantile; much lighter than scipy.stats

    return float(stdtrit(dof, 1.0 - level))


def _default_atol(sch) -> float:
    """The evaluator's stated accuracy for this encoder, ``10 max(mN, n) u κ(B) mN``, floored at ``1e-12``."""
    kappa = condition_number(sch)
    mN = sch.m * sch.assignment.shape[0]
    return max(1e-12, 10.0 * max(mN, sch.assignment.shape[1]) * (np.finfo(float).eps / 2) * min(kappa, 1e16) * mN)


def _check_pattern(b: Bound, sch, masks: np.ndarray, simulated: np.ndarray, atol: float, rtol: float) -> BoundCheck:
    """Check a bound that holds for every pattern, pattern by pattern."""
    vals = _eval_bound(b, sch, masks)
    tol = atol + rtol * np.maximum(1.0, np.maximum(np.abs(vals), np.abs(simulated)))
    excess = (vals - simulated) if b.kind == "lower" else (simulated - vals)
    bad = np.flatnonzero(excess > tol)
    viol = [_violation(b, masks, int(p), float(vals[p]), float(simulated[p]), float(excess[p])) for p in bad]
    return _bound_check(b, "per pattern", vals, simulated, None, viol, float(atol + rtol))


def _redrawn_errors(sch, redraw, exp_masks: np.ndarray, seed: int, draws: int, progress: bool) -> np.ndarray:
    """``(draws, patterns)`` optimal errors of ``draws`` fresh encoders (seeds from ``SeedSequence(seed)``)."""
    maker = redraw or _default_redraw(sch)
    seeds = np.random.SeedSequence(seed).generate_state(draws)
    exp_errors = np.empty((draws, exp_masks.shape[0]))
    for d, s_d in enumerate(_progress_bar(seeds, progress)):
        fresh = _as_scheme(maker(int(s_d)))
        if fresh.B.shape != sch.B.shape or fresh.m != sch.m:
            raise InvalidArgumentError(
                "redraw",
                f"returned a scheme with B of shape {fresh.B.shape} and m={fresh.m}, "
                f"expected {sch.B.shape} and m={sch.m}",
            )
        exp_errors[d] = _optimal_errors(fresh, exp_masks)
    return exp_errors


@dataclass(frozen=True)
class _ExpectationTests:
    """How expectation bounds are tested: confidence, interval method, ``width = m N`` (Hoeffding), tolerance."""

    confidence: float
    ci_method: str
    width: float
    atol: float
    rtol: float


def _check_expectation(
    b: Bound, vals: np.ndarray, exp_masks: np.ndarray, exp_errors: np.ndarray, tests: _ExpectationTests
) -> BoundCheck:
    """Check a bound on ``E_D err(B, F)``: per-pattern one-sided tests (Bonferroni) plus one pooled test (§45.6)."""
    draws, K = exp_errors.shape
    alpha = 1.0 - tests.confidence
    mean = exp_errors.mean(axis=0)
    level_pattern = alpha / 2.0 / K
    level_pool = alpha / 2.0
    diffs = exp_errors - vals[None]  # (draws, K), E[diffs] <= 0 for a valid upper bound
    pooled = diffs.mean(axis=1)
    if tests.ci_method == "t":
        se = exp_errors.std(axis=0, ddof=1) / math.sqrt(draws)
        half_p = _one_sided_quantile(level_pattern, draws - 1) * se
        half_two = _one_sided_quantile(alpha / 2.0, draws - 1) * se
        se_pool = pooled.std(ddof=1) / math.sqrt(draws)
        half_pool = _one_sided_quantile(level_pool, draws - 1) * se_pool
    else:
        width = tests.width
        half_p = np.full(K, width * math.sqrt(math.log(1.0 / level_pattern) / (2.0 * draws)))
        half_two = np.full(K, width * math.sqrt(math.log(2.0 / alpha) / (2.0 * draws)))
        half_pool = width * math.sqrt(math.log(1.0 / level_pool) / (2.0 * draws))
    tol = tests.atol + tests.rtol * np.maximum(1.0, np.abs(vals))
    if b.kind == "upper":
        excess = (mean - half_p) - vals
        pool_excess = (pooled.mean() - half_pool) - 0.0
    else:
        excess = vals - (mean + half_p)
        pool_excess = -(pooled.mean() + half_pool)
    ci = np.stack([mean - half_two, mean + half_two], axis=1)
    viol = [
        _violation(
            b,
            exp_masks,
            int(p),
            float(vals[p]),
            float(mean[p]),
            float(excess[p]),
            (float(ci[p, 0]), float(ci[p, 1])),
        )
        for p in np.flatnonzero(excess > tol)
    ]
    if pool_excess > float(tol.max()):
        viol.append(
            Violation(
                b.name, b.kind, b.scope, None, None, None, float(vals.mean()), float(mean.mean()), float(pool_excess)
            )
        )
    method = (
        f"expectation over {draws} encoder draws, {tests.ci_method} intervals, "
        f"Bonferroni over {K} patterns + pooled test, confidence {tests.confidence}"
    )
    return _bound_check(b, method, vals, mean, ci, viol, float(tests.atol + tests.rtol))


def verify_bounds(
    scheme: Any,
    model: Any,
    bounds: Iterable | str | Bound | None = None,
    *,
    samples: int | None = None,
    seed: int = 0,
    draws: int = 32,
    confidence: float = 0.95,
    expectation_patterns: int = 64,
    ci_method: str = "t",
    redraw: Callable[[int], Any] | None = None,
    atol: float | None = None,
    rtol: float = 1e-7,
    exact_limit: int = 100_000,
    progress: bool = False,
) -> BoundReport:
    r"""Check ``lower <= err(B, F) <= upper`` for a scheme under a straggler model.

    Parameters
    ----------
    scheme : Scheme
        Encoder (``.B``, ``.assignment``, ``.m``; ``.method``/``.options`` for redraws).
    model : straggler model or bool array (count, n)
        Where the patterns come from: a model from
        :func:`gcsim.coding.stragglers.straggler_model` (``"all"``/``"worst"``
        enumerate every pattern when ``samples`` is None; others are sampled
        ``samples`` times, default 256), or explicit non-straggler masks.
    bounds : names, :class:`Bound` objects or tuples ``(name, kind, scope, function)``
        Built-ins: ``"rank_lower"``, ``"trivial_upper"``,
        ``"reference_decoder_upper"``, ``"rd_upper"`` (theory §45) and the spectral
        ``"spectral_upper"``, ``"spectral_decoder_upper"``, ``"spectral_rd_upper"`` and
        the worst-case ``"uncovering_lower"`` (theory §46; a bound that does not apply
        to the scheme raises :class:`~gcsim.errors.InvalidArgumentError` saying why),
        the diagonal-dominance ``"diagonal_dominance_upper"`` (any scheme, every pattern)
        and the worst-case ``"partial_uncovering_lower"`` (theory §45.7-45.8).
        Default: ``"rank_lower"``, ``"trivial_upper"``, and ``"reference_decoder_upper"``
        / ``"rd_upper"`` where they apply (the others only on request).
    samples, seed : int
        Number of sampled patterns and the seed of the sampling and of the redraws.
    draws : int >= 2
        Encoder redraws for expectation bounds.
    confidence : float in (0, 1)
        Family-wise confidence of the expectation tests: half of ``1 - confidence``
        is spread (Bonferroni) over the per-pattern one-sided tests, half goes to
        the pooled test of the average over patterns.
    expectation_patterns : int
        Expectation bounds are checked on the first this-many patterns.
    ci_method : {"t", "hoeffding"}
        Student-t intervals (asymptotic) or distribution-free Hoeffding intervals
        using ``0 <= err <= m N`` (rigorous, wider).
    redraw : callable ``seed -> scheme``, optional
        Draws a fresh encoder; default re-runs :func:`gcsim.coding.schemes.encode`
        with the scheme's method and parameters.
    atol, rtol : float
        Tolerance of pattern checks: ``atol + rtol * max(1, |bound|, |err|)``.  The default
        ``atol`` is the evaluator's stated accuracy for this encoder,
        ``10 max(mN, n) u κ(B) mN`` (``u`` the unit roundoff, ``κ(B)`` from
        :func:`gcsim.coding.evaluate.condition_number`; the ``"auto"`` route meets it,
        ``docs/theory.md``, error identities §3), floored at ``1e-12``, so a
        violation is never an artefact of rounding on one BLAS kernel.
    exact_limit : int
        Largest number of patterns to enumerate.
    progress : bool
        Show progress bars (tqdm) for the error evaluation and the redraws.

    Returns
    -------
    BoundReport
        ``.ok``, ``.violations`` (each with its straggler set), ``.checks``
        (tightness ratios ``bound / err``), ``.to_dict()`` for JSON.

    Examples
    --------
    >>> import numpy as np
    >>> from gcsim.coding.schemes import encode
    >>> from gcsim.coding.stragglers import straggler_model
    >>> A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]])
    >>> sch = encode(A, 2, "rd", seed=3)
    >>> rep = verify_bounds(sch, straggler_model("all", 4, s=1), ["rank_lower", "rd_upper"], draws=16)
    >>> rep.ok, rep.patterns
    (True, 4)
    """
    progress = check_bool("progress", progress)
    seed = check_int("seed", seed, minimum=0)
    draws = check_int("draws", draws, minimum=2)
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    expectation_patterns = check_int("expectation_patterns", expectation_patterns, minimum=1)
    limits.check_entries(  # the (draws x patterns) errors of the encoder redraws, named by the larger
        "draws" if draws >= expectation_patterns else "expectation_patterns",
        (draws, expectation_patterns),
        "the errors of the encoder redraws (draws x expectation_patterns)",
    )
    exact_limit = check_int("exact_limit", exact_limit, minimum=1)
    atol = None if atol is None else check_real("atol", atol, minimum=0.0)
    rtol = check_real("rtol", rtol, minimum=0.0)
    if ci_method not in ("t", "hoeffding"):
        raise InvalidArgumentError("ci_method", f"must be 't' or 'hoeffding', got {ci_method!r}")
    if redraw is not None and not callable(redraw):
        raise InvalidArgumentError("redraw", "must be a callable seed -> scheme")
    sch = _as_scheme(scheme)
    n, N, m = sch.assignment.shape[1], sch.assignment.shape[0], sch.m
    if atol is None:
        atol = _default_atol(sch)
    blist = _resolve_bounds(bounds, sch)
    if getattr(model, "load_dependent", False):  # the patterns of this code's loads (theory §63.5)
        model = model.bind(*assignment_loads(sch))
    masks, pattern_method, model_desc = _patterns(model, n, samples, seed, exact_limit)
    P = masks.shape[0]

    checks: list[BoundCheck] = []
    simulated = None
    exp_masks = masks[:expectation_patterns]
    exp_errors = None  # (draws, patterns)
    for b in blist:
        if b.scope in ("pattern", "worst"):
            if simulated is None:
                simulated = _optimal_errors(sch, masks, progress)
            check = _check_pattern if b.scope == "pattern" else _check_worst
            checks.append(check(b, sch, masks, simulated, atol, rtol))
            continue
        # expectation scope: E_D err(B, F) over encoder redraws
        vals = _eval_bound(b, sch, exp_masks)  # first: a bound that does not apply says so before any redraw
        if exp_errors is None:
            exp_errors = _redrawn_errors(sch, redraw, exp_masks, seed, draws, progress)
        tests = _ExpectationTests(confidence, ci_method, float(m * N), atol, rtol)
        checks.append(_check_expectation(b, vals, exp_masks, exp_errors, tests))

    scheme_info = {
        "method": getattr(sch, "method", "custom"),
        "N": int(N),
        "n": int(n),
        "m": int(m),
        "options": {
            k: _param(v) for k, v in (getattr(sch, "options", {}) or {}).items() if np.isscalar(v) or v is None
        },
    }
    return BoundReport(
        scheme_info,
        model_desc,
        int(P),
        pattern_method,
        draws if exp_errors is not None else 0,
        confidence,
        checks,
        masks,
    )
