"""The expected time ``E[D]`` at which the master decodes, under a delay model and an arrival rule.

A closed form where one exists (i.i.d. shifted exponential under ``"first"`` and ``"deadline"``,
i.i.d. Pareto under ``"first"``), otherwise numerical integration of the survival function
``E[D] = ∫_0^∞ P(D > t) dt``, exactly as an average for a trace, and by Monte Carlo with a 95%
interval on request.  Proofs: ``docs/theory/47_delays.md``.

Examples
--------
>>> from gcsim.coding.delay_laws import delay_model
>>> from gcsim.coding.arrival_rules import arrival_rule
>>> dm = delay_model("shifted-exponential", 4, shift=1.0, rate=2.0)
>>> res = expected_decode_time(dm, arrival_rule("first", s=1))
>>> res.method, round(res.mean, 12)
('exact', 1.541666666667)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import limits
from .._stats import t_interval
from .._validation import check_bool, check_int
from ..errors import InvalidArgumentError, SizeLimitError
from .arrival_rules import ArrivalRule
from .delay_laws import DelayModel, ParetoDelays, ShiftedExponentialDelays, TraceDelays
from .straggler_base import StragglerModel, rng_from_seed

__all__ = ["QUAD_EPSREL", "DecodeTime", "expected_decode_time"]

#: Relative accuracy requested from ``scipy.integrate.quad`` on every piece of the survival integral.
QUAD_EPSREL = 1e-10

# Monte Carlo draws are made in chunks of at most this many delay entries (memory bound).
_MC_CHUNK_ENTRIES = 1 << 20


@dataclass
class DecodeTime:
    """Expected time at which the master decodes, ``E[D]``.

    Attributes
    ----------
    mean : float
        ``E[D]`` (``inf`` when it is infinite; ``reason`` says why).
    ci : tuple of float
        Exact: ``(mean, mean)``; quadrature: ``mean ± abserr``; Monte Carlo: 95% Student interval.
    method : str
        ``"exact"``, ``"quad"``, ``"trace average over <I> iterations"`` or ``"monte-carlo n=<draws>"``.
    abserr : float
        Quadrature error estimate (0 otherwise).
    stderr : float
        Monte Carlo standard error (0 otherwise).
    count : int
        Monte Carlo draws or trace iterations (0 for formulas).
    reason : str
        Why the mean is infinite, or the closed form used.
    """

    mean: float
    ci: tuple
    method: str
    abserr: float = 0.0
    stderr: float = 0.0
    count: int = 0
    reason: str = ""
    values: np.ndarray | None = field(default=None, repr=False)


_METHODS = ("auto", "exact", "quad", "monte-carlo")


def _infinite_reason(model: DelayModel, rule: ArrivalRule) -> str:
    """Why ``E[D] = inf`` (empty when it is finite); only heavy (Pareto) tails can make it infinite.

    ``P(X_(k) > t)`` decays like ``t^{-(sum of the n-k+1 smallest shapes)}`` and the relative rule
    satisfies ``X_(1) <= D <= (1+μ) X_(1)`` with ``P(X_(1) > t) = Π_j (σ_j/t)^{α_j}`` for large ``t``
    (docs/theory/47_delays.md, Proposition 6).
    """
    if not isinstance(model, ParetoDelays) or rule.kind == "deadline":
        return ""
    shapes = np.sort(model.shape)
    if rule.kind == "first":
        k = model.n - rule.value
        if k == 0:
            return ""
        j = model.n - k + 1
        tail = float(np.sum(shapes[:j]))
        what = "the smallest shape" if j == 1 else f"the sum of the {j} smallest shapes"
    else:
        tail = float(np.sum(shapes))
        what = "the sum of all shapes"
    if tail <= 1.0:
        return f"E[D] is infinite: P(D > t) decays like t^-{tail:g} ({what}), not faster than 1/t"
    return ""


def _exact(model: DelayModel, rule: ArrivalRule) -> tuple[float, str] | None:
    """Closed forms (docs/theory/47_delays.md, Theorems 3-5); None where there is none."""
    n = model.n
    if not model.homogeneous:
        return None
    if isinstance(model, ShiftedExponentialDelays):
        c, lam = float(model.shift[0]), float(model.rate[0])
        if rule.kind == "first":
            k = n - rule.value
            if k == 0:
                return 0.0, "no arrival needed (s = n)"
            # Rényi: E X_(k) = c + (H_n - H_{n-k}) / λ; sum of positive terms, largest last
            return c + float(
                np.sum(1.0 / np.arange(n, n - k, -1, dtype=float)[::-1])
            ) / lam, "shift + (H_n - H_(n-k)) / rate"
        if rule.kind == "deadline":
            T = rule.value
            if T <= c:
                return T, "deadline before the shift"
            # E min(T, X_(n)) = c + (1/λ) Σ_{i=1}^n V^i / i,  V = 1 - e^{-λ(T-c)}
            x = lam * (T - c)
            # log V without cancellation on either side of x = ln 2
            logV = math.log(-math.expm1(-x)) if x < math.log(2.0) else math.log1p(-math.exp(-x))
            i = np.arange(1, n + 1, dtype=float)
            return c + float(np.sum(np.exp(i * logV) / i)) / lam, "shift + (1/rate) Σ_i V^i / i"
        return None
    if isinstance(model, ParetoDelays) and rule.kind == "first":
        k = n - rule.value
        if k == 0:
            return 0.0, "no arrival needed (s = n)"
        sigma, alpha = float(model.scale[0]), float(model.shape[0])
        j = n - k + 1
        beta = 1.0 / alpha
        # E X_(k) = σ Π_{i=j}^{n} i / (i - 1/α), j = n - k + 1 (finite iff j > 1/α)
        i = np.arange(j, n + 1, dtype=float)
        return sigma * math.exp(-float(np.sum(np.log1p(-beta / i)))), "scale Π_(i=n-k+1)^n i / (i - 1/shape)"
    return None


def _survival(model: DelayModel, rule: ArrivalRule) -> Callable[[float], float]:
    """``t -> P(D > t)`` for independent workers (docs/theory/47_delays.md, Lemma 2)."""
    from scipy import special, stats

    rows, counts = model._groups()
    n = model.n
    if rule.kind == "first":
        k = n - rule.value
        if k == 0:  # no arrival needed: D = 0
            return lambda t: 0.0

        def sf(t: float) -> float:
            F, S = model._cdf_sf(t, rows)
            if rows.shape[0] == 1:
                # i.i.d.: the number of late workers M = n - N(t) ~ Binomial(n, S(t)), and
                # P(N(t) < k) = P(M > n - k); betainc on S (not 1 - F) keeps tiny tails accurate
                return float(stats.binom.sf(n - k, n, S[0]))
            # independent groups: P(N(t) = i), i < k, by adding one group at a time (a single worker:
            # p_i <- p_i S + p_{i-1} F; a group of c: convolution with its binomial pmf, each term
            # exp(log C(c, i) + i log F + (c - i) log S)); all terms >= 0, no 1 - F cancellation
            pmf = np.zeros(k)
            pmf[0] = 1.0
            top = 0  # pmf[top + 1:] is still zero
            with np.errstate(divide="ignore"):
                logF, logS = np.log(F), np.log(S)
            for Fg, Sg, lf, ls, c in zip(F, S, logF, logS, counts, strict=True):
                c = int(c)
                if c == 1:
                    hi = min(top + 1, k - 1)
                    pmf[1 : hi + 1] = pmf[1 : hi + 1] * Sg + pmf[:hi] * Fg
                    pmf[0] *= Sg
                else:
                    i = np.arange(min(c, k - 1) + 1, dtype=float)
                    logc = special.gammaln(c + 1) - special.gammaln(i + 1) - special.gammaln(c - i + 1)
                    with np.errstate(invalid="ignore"):
                        terms = logc + np.where(i > 0, i * lf, 0.0) + np.where(c - i > 0, (c - i) * ls, 0.0)
                    pmf = np.convolve(pmf[: top + 1], np.exp(terms))[:k]
                    pmf = np.concatenate([pmf, np.zeros(k - pmf.size)])
                    hi = min(top + c, k - 1)
                top = hi
            return float(min(1.0, pmf.sum()))

        return sf
    if rule.kind == "deadline":
        T = rule.value

        def sf(t: float) -> float:
            if t >= T:
                return 0.0
            F, _ = model._cdf_sf(t, rows)
            with np.errstate(divide="ignore"):
                logall = float(np.dot(counts, np.log(F)))
            return float(-math.expm1(logall)) if logall > -np.inf else 1.0

        return sf
    mu = rule.value

    def sf_relative(t: float) -> float:
        a = t / (1.0 + mu)
        _, Sa = model._cdf_sf(a, rows)
        _, St = model._cdf_sf(t, rows)
        with np.errstate(divide="ignore"):
            first = float(np.dot(counts, np.log(Sa)))  # P(X_(1) > a)
            inside = float(np.dot(counts, np.log(np.maximum(Sa - St, 0.0))))  # P(all X_j in (a, t])
        return max(0.0, math.exp(first) - math.exp(inside)) if first > -np.inf else 0.0

    return sf_relative


def _quad_terms(model: DelayModel, rule: ArrivalRule) -> int:
    """Work of one evaluation of ``P(D > t)`` in the units of :data:`gcsim.limits.MAX_QUAD_TERMS`.

    Under ``"first"`` the pmf of the number of arrivals (``k`` terms) is built group by group: a
    group of ``c`` workers costs a convolution of ``k x min(c, k)`` terms and a step in Python
    (5,000 terms); i.i.d. workers are one binomial tail.  The other rules cost 500 per group.
    """
    _, counts = model._groups()
    groups = int(counts.size)
    if rule.kind != "first":
        return 500 * groups
    k = model.n - int(rule.value)
    if groups == 1 or k == 0:
        return 0
    return int(sum(k * min(int(c), k) for c in counts.tolist())) + 5000 * groups


def _check_quad_size(model: DelayModel, rule: ArrivalRule) -> None:
    """Refuse, before integrating, a survival function beyond :data:`gcsim.limits.MAX_QUAD_TERMS`."""
    terms = _quad_terms(model, rule)
    if terms > limits.MAX_QUAD_TERMS:
        groups = int(model._groups()[1].size)
        raise SizeLimitError(
            "method",
            f"quadrature of E[D] for {groups:,} distinct worker distributions under the {rule.kind!r} rule costs "
            f"{terms:,} terms per evaluation of P(D > t) (a few hundred evaluations), over gcsim's limit of "
            f"{limits.MAX_QUAD_TERMS:,} (gcsim.limits.MAX_QUAD_TERMS; raise it there to wait longer); "
            "use method='monte-carlo'",
            requested=terms,
            limit=limits.MAX_QUAD_TERMS,
            limit_name="MAX_QUAD_TERMS",
        )


def _quad(model: DelayModel, rule: ArrivalRule) -> tuple[float, float, str]:
    """``∫_0^∞ P(D > t) dt`` piecewise: breaks at the support ends, geometric steps, then to ∞.

    Returns ``(value, abserr, note)``; ``note`` repeats any warning of ``quad`` (accuracy not reached).
    Pieces are integrated left to right; once part of the integral is known, each piece only needs
    an absolute accuracy of ``QUAD_EPSREL / 10`` of it (tiny tail pieces need no relative accuracy).
    """
    import warnings

    from scipy import integrate

    sf = _survival(model, rule)
    rows, _ = model._groups()
    kinks = np.unique(model._support_points(rows))
    if kinks.size > 64:  # many distinct workers: 64 quantiles of the kinks (quad adapts to the rest)
        kinks = np.unique(np.quantile(kinks, np.linspace(0.0, 1.0, 64)))
    pts = [0.0, *map(float, kinks)]
    if rule.kind == "relative":
        pts += [(1.0 + rule.value) * p for p in pts]
    upper = rule.value if rule.kind == "deadline" else np.inf
    t0 = max(pts) + model._length_scale(rows)  # beyond every kink, one spread further
    pts = sorted({p for p in pts + [t0] if p < upper})
    pts.append(float(upper) if np.isfinite(upper) else t0)
    # (integrand, a, b): linear pieces up to t0, then t = t0 e^u (u >= 0): a power-law tail t^-β
    # becomes e^{-(β-1) u}, an exponential tail decays even faster; pieces of length ln 4 in u
    pieces: list[tuple[Callable[[float], float], float, float]] = [(sf, a, b) for a, b in itertools.pairwise(pts)]
    if not np.isfinite(upper):

        def tail(u: float) -> float:
            if u > 700.0:  # t beyond 1e304: P(D > t) t -> 0 whenever E[D] is finite
                return 0.0
            t = t0 * math.exp(u)
            return sf(t) * t

        edges = [j * math.log(4.0) for j in range(9)]
        pieces += [(tail, a, b) for a, b in itertools.pairwise(edges)] + [(tail, edges[-1], np.inf)]
    total, err, notes = 0.0, 0.0, []
    for f, a, b in pieces:
        if f(a) == 0.0:  # P(D > t) is non-increasing: nothing left
            break
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", integrate.IntegrationWarning)
            v, e = integrate.quad(f, a, b, epsabs=0.1 * QUAD_EPSREL * total, epsrel=QUAD_EPSREL, limit=200)
        where = f"t in [{a:g}, {b:g}]" if f is sf else f"t in [{t0:g} e^{a:g}, {t0:g} e^{b:g}]"
        notes += [
            f"{where}: {str(w.message).splitlines()[0]}"
            for w in caught
            if issubclass(w.category, integrate.IntegrationWarning)
        ]
        total += v
        err += e
    return total, err, "; ".join(notes)


def _monte_carlo(model: DelayModel, rule: ArrivalRule, samples: int, seed: int, keep: bool) -> DecodeTime:

    rng = rng_from_seed(seed)
    step = max(1, _MC_CHUNK_ENTRIES // model.n)
    times = np.empty(samples)
    for a in range(0, samples, step):
        b = min(samples, a + step)
        if isinstance(model, TraceDelays):
            rows = model.sample_delays(b - a, seed + a)
        else:
            rows = model._draw(rng, b - a)
        times[a:b] = rule.apply(rows)[1]
    mean = float(times.mean())
    se = float(times.std(ddof=1) / math.sqrt(samples)) if samples > 1 else float("inf")
    ci = t_interval(mean, se, samples - 1) if np.isfinite(mean) else (mean, mean)
    return DecodeTime(mean, ci, f"monte-carlo n={samples}", 0.0, se, samples, "", times if keep else None)


def expected_decode_time(
    model: DelayModel | StragglerModel,
    rule: ArrivalRule | None = None,
    *,
    method: str = "auto",
    samples: int = 100_000,
    seed: int = 0,
    keep_values: bool = False,
) -> DecodeTime:
    """Expected time ``E[D]`` at which the master decodes under a delay model and an arrival rule.

    Parameters
    ----------
    model : DelayModel or DelayStragglerModel
        Delays (a :class:`DelayStragglerModel` carries its rule; then ``rule`` must be omitted).
    rule : ArrivalRule
    method : {"auto", "exact", "quad", "monte-carlo"}
        ``"exact"``: a closed form (i.i.d. shifted exponential with ``"first"``:
        ``c + (H_n - H_{n-k})/λ``; with ``"deadline"``: ``min(T, c) + (1/λ) Σ_{i<=n} V^i/i``,
        ``V = 1 - e^{-λ(T-c)^+}``; i.i.d. Pareto with ``"first"``: ``σ Π_{i=n-k+1}^{n} i/(i - 1/α)``),
        or, for a trace, the average over its iterations; refused where there is none.
        ``"quad"``: ``∫_0^∞ P(D > t) dt`` by ``scipy.integrate.quad`` (relative accuracy
        :data:`QUAD_EPSREL` per piece) with the survival function of the rule for independent,
        possibly non-identical workers.  ``"monte-carlo"``: ``samples`` draws, 95% Student
        interval.  ``"auto"``: exact, else quad (a trace: its average).
    samples, seed : int
        Monte Carlo budget and seed.  ``samples`` is at most :data:`gcsim.limits.MAX_MC_DRAWS`:
        the delays are drawn in chunks of ``_MC_CHUNK_ENTRIES`` but one decode time per draw is held
        (8 bytes a draw, 1 GiB at the limit); checked before anything is drawn, whatever the method.
    keep_values : bool
        Keep the Monte Carlo (or trace) decode times in ``values``.

    Returns
    -------
    DecodeTime
        ``mean = inf`` (with ``reason``) when the expectation diverges: Pareto shapes whose relevant sum
        is ``<= 1``, or a trace whose rule waits for a transmission that never arrives.

    Examples
    --------
    >>> from gcsim.coding.delay_laws import delay_model
    >>> from gcsim.coding.arrival_rules import arrival_rule
    >>> dm = delay_model("pareto", 5, scale=1.0, shape=3.0)
    >>> exact = expected_decode_time(dm, arrival_rule("first", s=1))
    >>> quad = expected_decode_time(dm, arrival_rule("first", s=1), method="quad")
    >>> abs(exact.mean - quad.mean) < 1e-8, exact.method, quad.method
    (True, 'exact', 'quad')
    """
    keep_values = check_bool("keep_values", keep_values)
    parts = model.delay_parts() if isinstance(model, StragglerModel) else None
    if parts is not None:  # a straggler model driven by delays (DelayStragglerModel) carries its rule
        if rule is not None:
            raise InvalidArgumentError("rule", "the DelayStragglerModel carries its rule; omit rule=")
        model, rule = parts
    if not isinstance(model, DelayModel):
        raise InvalidArgumentError("model", f"must be a DelayModel or DelayStragglerModel, got {type(model).__name__}")
    if not isinstance(rule, ArrivalRule):
        raise InvalidArgumentError("rule", "must be an ArrivalRule (see arrival_rule)")
    if not isinstance(method, str) or method not in _METHODS:
        raise InvalidArgumentError("method", f"must be one of {_METHODS}, got {method!r}")
    samples = check_int("samples", samples, minimum=2)
    limits.check_work(
        "samples",
        samples,
        "Monte Carlo draws (delays drawn in chunks, one decode time kept each)",
        limit_name="MAX_MC_DRAWS",
        unit="draws",
    )
    seed = check_int("seed", seed, minimum=0)
    rule.check_n(model.n)
    if isinstance(model, TraceDelays):
        if method == "quad":
            raise InvalidArgumentError(
                "method", "a trace has no CDF to integrate; use 'exact' (its average) or 'monte-carlo'"
            )
        if method == "monte-carlo":
            return _monte_carlo(model, rule, samples, seed, keep_values)
        times = rule.apply(model.rows())[1]
        mean = float(times.mean())
        reason = "" if np.isfinite(mean) else "the rule waits for a transmission that never arrives (inf in the trace)"
        return DecodeTime(
            mean,
            (mean, mean),
            f"trace average over {model.iterations} iterations",
            0.0,
            0.0,
            model.iterations,
            reason,
            times if keep_values else None,
        )
    reason = _infinite_reason(model, rule)
    if reason:
        inf = float("inf")
        return DecodeTime(inf, (inf, inf), "exact", reason=reason)
    if method == "monte-carlo":
        return _monte_carlo(model, rule, samples, seed, keep_values)
    if method in ("auto", "exact"):
        ex = _exact(model, rule)
        if ex is not None:
            return DecodeTime(ex[0], (ex[0], ex[0]), "exact", reason=ex[1])
        if method == "exact":
            raise InvalidArgumentError(
                "method",
                f"no closed form for {model.kind} delays "
                f"({'heterogeneous' if not model.homogeneous else 'i.i.d.'}) under the {rule.kind!r} rule; "
                "use 'quad' or 'monte-carlo'",
            )
    _check_quad_size(model, rule)
    value, err, note = _quad(model, rule)
    if note:
        import warnings

        warnings.warn(
            f"quadrature of E[D] may be less accurate than requested (abserr {err:.2g}): {note}",
            RuntimeWarning,
            stacklevel=2,
        )
    return DecodeTime(value, (value - err, value + err), "quad", abserr=err, reason=note)
