"""Student-t confidence intervals: the one place the Monte Carlo estimators take their quantiles from.

Most Monte Carlo estimates in gcsim report ``mean ± t_{(1 + level)/2, df} · se`` with the standard
error ``se`` of the mean and ``df`` degrees of freedom (``samples - 1``, batches ``- 1``, or a
Welch--Satterthwaite value for stratified sums); the quantile is :func:`scipy.stats.t.ppf`.

A mean of draws with known bounds (a normalized error, an indicator, a fraction) can instead take
:func:`betting_interval`, valid at every sample size (theory §57.12).

Where random encoders are averaged, the unit of the interval is the encoder draw
(:func:`draw_level_interval` over per-draw means: t, bootstrap-t, BCa; theory §57.10--§57.11), and
:func:`nested_variance` splits the variance into its between- and within-draw components.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_bool, check_finite_array, check_int, check_real
from .errors import InvalidArgumentError

__all__ = [
    "t_quantile",
    "t_interval",
    "median_interval",
    "betting_interval",
    "DrawInterval",
    "draw_level_interval",
    "nested_variance",
]


def t_quantile(df: float, level: float = 0.95) -> float:
    """The two-sided Student-t quantile ``t_{(1 + level)/2, df}``; ``df`` below 1 counts as 1.

    >>> round(t_quantile(10), 4), round(t_quantile(1e9), 4)
    (2.2281, 1.96)
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    # imported on first use: scipy.stats is slow to import, and only Monte Carlo estimates need it
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2.0, max(float(df), 1.0)))


def t_interval(mean: float, se: float, df: float, level: float = 0.95) -> tuple[float, float]:
    """``(mean - q se, mean + q se)`` with ``q =`` :func:`t_quantile` ``(df, level)``.

    >>> lo, hi = t_interval(1.0, 0.1, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.7772, 1.2228)
    """
    if math.isinf(se):
        return (float("-inf"), float("inf"))
    q = t_quantile(df, level)
    return (mean - q * se, mean + q * se)


def median_interval(values: Any, level: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free interval for the median: ``(x_(k), x_(n−k+1), coverage)`` of the sorted values.

    ``k`` is the largest rank with ``P(B <= k − 1) <= (1 − level)/2`` for ``B ~ Binomial(n, 1/2)``; the
    interval covers the population median with probability ``coverage = 1 − 2 P(B <= k − 1) >= level``
    for any continuous distribution (the order-statistic interval).  Fewer than 6 values cannot reach
    95 % and raise.

    >>> median_interval([5, 1, 4, 2, 3, 9, 7, 8, 6])       # n = 9: x_(2), x_(8), 1 - 2 * 10/512
    (2.0, 8.0, 0.9609375)
    """
    y = np.sort(check_finite_array("values", np.asarray(values, dtype=float).reshape(-1)))
    level = check_real("level", level, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    n = len(y)
    tail, k, cdf = (1.0 - level) / 2.0, 0, 0.0
    while True:  # cdf = P(B <= k) after the step; stop before it exceeds the tail
        nxt = cdf + math.comb(n, k) / 2.0**n
        if nxt > tail:
            break
        cdf, k = nxt, k + 1
    if k == 0:
        raise InvalidArgumentError("values", f"{n} values cannot give a {level:.0%} interval for the median")
    return float(y[k - 1]), float(y[n - k]), 1.0 - 2.0 * cdf


def _log_capital(y: np.ndarray, lam: np.ndarray, m: float, c: float = 0.5) -> float:
    """``max_t log K_t(m)`` of the hedged betting capital (θ = 1/2) for the mean ``m`` of ``y`` in [0, 1]."""
    lp = np.minimum(lam, c / m) if m > 0 else lam
    lm = np.minimum(lam, c / (1.0 - m)) if m < 1 else lam
    kp = np.cumsum(np.log1p(lp * (y - m)))
    km = np.cumsum(np.log1p(-lm * (y - m)))
    return float(np.max(np.logaddexp(kp, km))) + math.log(0.5)


def betting_interval(x: Any, lo: float, hi: float, alpha: float = 0.05) -> tuple[float, float]:
    """Confidence interval of level ``1 - alpha`` for the mean of i.i.d. draws in ``[lo, hi]``, any sample size.

    Hedged betting capital with the predictable plug-in bets of Waudby-Smith & Ramdas,
    "Estimating means of bounded random variables by betting", JRSS B 86 (2024), Thm 3 and
    eq. (26): under the true mean ``m`` the capital ``K_t(m)`` is a non-negative martingale
    with ``K_0 = 1``, so by Ville's inequality ``P(max_t K_t(m) >= 1/alpha) <= alpha``; the
    interval is the hull of the ``m`` not rejected (found by bisection from an accepted point).
    It needs only the bounds, no normality: where every draw is ``lo`` it is a one-sided
    ``[lo, u]`` with ``u > lo``, never the zero-width ``[lo, lo]`` of a t interval (theory §57.12,
    with its measured coverage on rare events). Draws beyond ``[lo, hi]`` count as its ends; no
    draws, or ``hi <= lo``, give the sample mean twice.

    The draws must be in their drawing order (the bets are predictable): sorted draws are not
    i.i.d., and their capital can reject every mean.

    >>> lo, hi = betting_interval([0.0] * 2000, 0.0, 1.0)      # no event in 2000 draws
    >>> lo, round(hi, 4)
    (0.0, 0.0037)
    >>> x = np.random.default_rng(0).random(200)                # uniform on [0, 1]: mean 0.5
    >>> tuple(round(v, 3) for v in betting_interval(x, 0.0, 1.0))
    (0.481, 0.592)
    """
    alpha = check_real("alpha", alpha, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
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


# ----------------------------------------------------------------------------------------------
# intervals whose unit is the encoder draw (theory §57.10, §57.11)
# ----------------------------------------------------------------------------------------------

#: ``method`` values of :func:`draw_level_interval`
DRAW_METHODS = ("auto", "t", "bootstrap-t", "bca")
#: ``auto`` keeps the plain t only with this many draws or more and a small sample skewness
AUTO_T_MIN_DRAWS = 30
#: ``auto`` keeps the plain t only when the sample skewness ``|G1|`` is at most this
AUTO_T_MAX_SKEW = 0.5
#: ``auto`` uses the plain t below this many draws: a resample of fewer draws repeats one value with
#: probability ``D^{1-D}`` (11 % for 3 draws), whose studentized mean is infinite
AUTO_BOOTSTRAP_MIN_DRAWS = 5
#: bootstrap resamples of the bootstrap-t and BCa intervals
BOOTSTRAP_RESAMPLES = 4000


@dataclass(frozen=True)
class DrawInterval:
    """A confidence interval for ``E_D[μ(D)]`` whose unit is the encoder draw (theory §57.10).

    Attributes
    ----------
    mean : float
        The mean of the per-draw means.
    ci : tuple of float
        ``(lo, hi)``; infinite ends where no finite interval is valid.
    se : float
        The standard error of ``mean``: ``sd(per-draw means) / sqrt(D)`` (inf for one draw, 0 when
        no draw differed).
    method : str
        How ``ci`` was computed, in words (``"t over 20 draws"``, ``"t ∪ bootstrap-t over 20 draws
        (skewness 2.1)"``, ...).
    draws : int
        ``D``, the number of per-draw means.
    """

    mean: float
    ci: tuple[float, float]
    se: float
    method: str
    draws: int


def draw_level_interval(
    per_draw_means: Any,
    level: float = 0.95,
    *,
    method: str = "auto",
    seed: int = 0,
    exact: bool = False,
    invariant: bool = False,
    bounds: tuple[float, float] | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> DrawInterval:
    r"""An interval for the mean over encoder draws from ``D`` per-draw means (theory §57.10).

    For a randomized encoder the quantity is ``μ = E_D[μ(D)]``, ``μ(D) = E_S[err(D, S)]``. Draw
    ``k`` gives ``Y_k`` (its exact ``μ(D_k)`` or a Monte Carlo mean over its own patterns); the
    ``Y_k`` are i.i.d. with mean ``μ`` whatever the patterns per draw, so the draw is the unit:
    patterns of one draw share its ``D_k`` and are not independent samples of ``μ``.

    Methods (``q`` quantiles, ``se = s_Y / sqrt(D)``):

    * ``"t"``: ``Ȳ ± t_{D-1, (1+level)/2} se``;
    * ``"bootstrap-t"`` (Efron & Tibshirani 1993, §12.5): resample the ``Y_k``, studentize
      ``T* = (Ȳ* - Ȳ) / se*``, and report ``[Ȳ - q*_{1-α/2} se, Ȳ - q*_{α/2} se]``; second-order
      accurate for skewed ``Y``;
    * ``"bca"`` (DiCiccio & Efron 1996): bias-corrected and accelerated percentiles of ``Ȳ*``
      (acceleration from the jackknife); measured to under-cover below ~40 draws (§57.11);
    * ``"auto"`` (default): the ``t`` when ``D >= AUTO_T_MIN_DRAWS`` and the sample skewness
      ``|G1| <= AUTO_T_MAX_SKEW``, or when ``D < AUTO_BOOTSTRAP_MIN_DRAWS`` (too few draws for a
      bootstrap); otherwise the union of the t and bootstrap-t intervals (the rule and its
      measured coverage: §57.11).

    Degenerate cases are stated in ``method``. Exact per-draw means remove the pattern noise, not
    the draw's: identical observed draws say nothing about unobserved ones. So one draw gives
    ``bounds`` (the range) or ``(-inf, inf)``, and ``D >= 2`` identical values give the
    distribution-free interval from ``bounds`` (no draw differed: at most a fraction
    ``1 - (α/2)^{1/D}`` of the draw law can differ, by at most the range; Lemma 57.10 bis) or
    ``(-inf, inf)`` without bounds -- whether or not ``exact``. The one zero-width case is
    ``exact`` and ``invariant`` together: the caller has a proof that ``μ(D)`` does not depend on
    the draw (a deterministic encoder, a quantity of the patterns only, one possible pattern), so
    every exact ``Y_k`` is ``μ`` itself. ``bounds``, the range the ``Y_k`` lie in (e.g.
    ``(0, mN)``), also clips every interval.

    Parameters
    ----------
    per_draw_means : array_like, shape (D,)
        One mean per encoder draw (finite).
    level : float
        Confidence level in ``(0, 1)``.
    method : {"auto", "t", "bootstrap-t", "bca"}
    seed : int
        Seed of the bootstrap resamples: same inputs and seed, same interval.
    exact : bool
        Each per-draw mean is exact (no Monte Carlo over patterns).
    invariant : bool
        ``μ(D)`` provably does not depend on the draw (a proof, never "no spread observed"): with
        ``exact``, the interval is the mean itself, and values that differ (beyond round-off)
        raise. Without ``exact`` it changes nothing (the per-draw Monte Carlo noise remains).
    bounds : (float, float), optional
        ``a <= Y_k <= b`` for every possible draw.
    resamples : int
        Bootstrap resamples (``>= 200``).

    Returns
    -------
    DrawInterval

    Examples
    --------
    >>> r = draw_level_interval([1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 0.95, 1.05], method="t")
    >>> round(r.mean, 4), tuple(round(x, 3) for x in r.ci), r.method
    (1.0625, (0.951, 1.174), 't over 8 draws')
    >>> r = draw_level_interval([5.36] * 12 + [5.77] * 6 + [6.63, 8.0], seed=1)
    >>> r.method, r.ci[0] < r.mean < r.ci[1]
    ('t ∪ bootstrap-t over 20 draws (skewness 3)', True)
    >>> r = draw_level_interval([0.2, 0.2, 0.2], exact=True, bounds=(0.0, 1.0))    # unseen draws may differ
    >>> tuple(round(x, 3) for x in r.ci), r.method
    ((0.058, 0.766), '3 identical exact draws: range interval (one-sided binomial)')
    >>> draw_level_interval([2.0, 2.0, 2.0], exact=True).ci
    (-inf, inf)
    >>> draw_level_interval([2.0, 2.0, 2.0], exact=True, invariant=True).ci    # a proof, not an observation
    (2.0, 2.0)
    """
    y = check_finite_array("per_draw_means", per_draw_means, ndim=1)
    level = check_real("level", level, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    if method not in DRAW_METHODS:
        raise InvalidArgumentError("method", f"must be one of {DRAW_METHODS}, got {method!r}")
    seed = check_int("seed", seed, minimum=0)
    exact = check_bool("exact", exact)
    invariant = check_bool("invariant", invariant)
    resamples = check_int("resamples", resamples, minimum=200)
    if bounds is not None:
        lo_b = check_real("bounds", bounds[0])
        hi_b = check_real("bounds", bounds[1], minimum=lo_b)
        if y.size and (y.min() < lo_b or y.max() > hi_b):
            raise InvalidArgumentError("bounds", f"per_draw_means lie outside [{lo_b}, {hi_b}]")
    D = int(y.size)
    if D == 0:
        raise InvalidArgumentError("per_draw_means", "must hold at least one per-draw mean")
    mean = float(y.mean())
    if exact and invariant:
        return _invariant_draws(y)
    if D == 1:
        # one draw says nothing about the others, exact or not: the range at most
        ci = (-math.inf, math.inf) if bounds is None else (float(bounds[0]), float(bounds[1]))
        one = "one exact draw" if exact else "one draw"
        return DrawInterval(mean, ci, math.inf, f"{one}: no interval over draws (the range at most)", 1)
    se = float(y.std(ddof=1)) / math.sqrt(D)
    if float(y.max()) == float(y.min()):
        return _identical_draws(mean, D, level, exact, bounds)
    skew = _sample_skewness(y)
    t_ci = t_interval(mean, se, D - 1, level)
    if method == "auto":
        if D < AUTO_BOOTSTRAP_MIN_DRAWS or (D >= AUTO_T_MIN_DRAWS and abs(skew) <= AUTO_T_MAX_SKEW):
            method, ci = "t", t_ci
        else:
            bt = _bootstrap_t(y, level, seed, resamples)
            method, ci = "t ∪ bootstrap-t", (min(t_ci[0], bt[0]), max(t_ci[1], bt[1]))
    elif method == "t":
        ci = t_ci
    elif method == "bootstrap-t":
        ci = _bootstrap_t(y, level, seed, resamples)
    else:
        ci = _bca(y, level, seed, resamples)
    if bounds is not None:
        ci = (max(ci[0], bounds[0]), min(ci[1], bounds[1]))
    tail = f" (skewness {skew:.2g})" if method != "t" else ""
    if method == "t" and D < AUTO_BOOTSTRAP_MIN_DRAWS:
        tail = " (too few draws for the bootstrap; 20 or more hold the level on skewed draws)"
    return DrawInterval(mean, (float(ci[0]), float(ci[1])), se, f"{method} over {D} draws{tail}", D)


def _invariant_draws(y: np.ndarray) -> DrawInterval:
    """Exact per-draw means of a mean proven not to depend on the draw: each is ``μ``, zero width."""
    D = int(y.size)
    spread = float(y.max() - y.min())
    if spread > 1e-9 * max(1.0, float(np.abs(y).max())):  # round-off only
        raise InvalidArgumentError(
            "invariant", f"exact per-draw means differ by {spread:.3g}: their mean depends on the draw"
        )
    mean = float(y.mean())
    return DrawInterval(mean, (mean, mean), 0.0, f"exact and draw-invariant over {D} draws: zero width", D)


def _identical_draws(
    mean: float, D: int, level: float, exact: bool, bounds: tuple[float, float] | None
) -> DrawInterval:
    """``D >= 2`` equal per-draw means (exact or not): the range interval, or none without bounds."""
    if bounds is None:
        kind = "exact" if exact else "Monte Carlo"
        return DrawInterval(
            mean, (-math.inf, math.inf), math.inf, f"{D} identical {kind} draws: no interval without bounds", D
        )
    # no draw of D differed: with probability >= 1 - α/2 the law puts at most f on other values
    f = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / D)
    lo, hi = mean - f * (mean - bounds[0]), mean + f * (bounds[1] - mean)
    method = f"{D} identical {'exact ' if exact else ''}draws: range interval (one-sided binomial)"
    return DrawInterval(mean, (lo, hi), 0.0, method, D)


def _sample_skewness(y: np.ndarray) -> float:
    """The adjusted Fisher--Pearson skewness ``G1`` (0 for fewer than 3 values or no spread)."""
    D = y.size
    d = y - y.mean()
    m2 = float(np.mean(d**2))
    if D < 3 or m2 == 0.0:
        return 0.0
    g1 = float(np.mean(d**3)) / m2**1.5
    return g1 * math.sqrt(D * (D - 1)) / (D - 2)


def _resample_means(y: np.ndarray, seed: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and standard errors of ``resamples`` bootstrap resamples of ``y`` (in chunks)."""
    rng = np.random.default_rng(np.random.SeedSequence((seed, 0xD12A)))
    D = y.size
    chunk = max(1, 2_000_000 // D)
    means, ses = [], []
    for start in range(0, resamples, chunk):
        ys = y[rng.integers(0, D, size=(min(chunk, resamples - start), D))]
        means.append(ys.mean(axis=1))
        ses.append(ys.std(axis=1, ddof=1) / math.sqrt(D))
    return np.concatenate(means), np.concatenate(ses)


def _order_stat(values: np.ndarray, prob: float) -> float:
    """The ``⌊prob (B + 1)⌋``-th order statistic (1-based, clipped to 1..B; Efron & Tibshirani §12.5)."""
    B = values.size
    k = min(max(int(math.floor(prob * (B + 1))), 1), B)
    return float(np.partition(values, k - 1)[k - 1])


def _bootstrap_t(y: np.ndarray, level: float, seed: int, resamples: int) -> tuple[float, float]:
    """The bootstrap-t interval: studentized resampled means; a resample with no spread counts as ±inf or 0."""
    mean = float(y.mean())
    se = float(y.std(ddof=1)) / math.sqrt(y.size)
    ms, ses = _resample_means(y, seed, resamples)
    diff = ms - mean
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ses > 0, diff / np.where(ses > 0, ses, 1.0), np.sign(diff) * np.inf)
    alpha = (1.0 - level) / 2.0
    q_lo, q_hi = _order_stat(t, alpha), _order_stat(t, 1.0 - alpha)
    return (mean - q_hi * se, mean - q_lo * se)


def _bca(y: np.ndarray, level: float, seed: int, resamples: int) -> tuple[float, float]:
    """The BCa interval of the mean (bias correction z0 from the resamples, acceleration from the jackknife)."""
    from scipy import stats

    mean = float(y.mean())
    ms, _ = _resample_means(y, seed, resamples)
    B = ms.size
    share = (np.sum(ms < mean) + 0.5 * np.sum(ms == mean)) / B
    z0 = float(stats.norm.ppf(min(max(share, 1.0 / B), 1.0 - 1.0 / B)))
    jack = (y.sum() - y) / (y.size - 1)
    d = jack.mean() - jack
    den = float(np.sum(d**2))
    acc = float(np.sum(d**3)) / (6.0 * den**1.5) if den > 0 else 0.0
    alpha = (1.0 - level) / 2.0
    ends = []
    for z in (stats.norm.ppf(alpha), stats.norm.ppf(1.0 - alpha)):
        ends.append(_order_stat(ms, float(stats.norm.cdf(z0 + (z0 + z) / (1.0 - acc * (z0 + z))))))
    return (ends[0], ends[1])


def nested_variance(values: Any) -> tuple[float, float, float]:
    r"""Between- and within-draw variance components of a balanced ``D x P`` table (theory §57.10).

    Row ``k`` holds the ``P`` pattern values of draw ``k``. One-way random-effects ANOVA:
    ``MSB = P Σ_k (ȳ_k - ȳ)² / (D - 1)``, ``MSW = Σ_k Σ_j (y_kj - ȳ_k)² / (D (P - 1))``,
    ``σ_w² = MSW``, ``σ_b² = max((MSB - MSW) / P, 0)``, and the variance of the grand mean

    .. math:: \operatorname{Var}(\bar y) = \sigma_b^2 / D + \sigma_w^2 / (D P),

    estimated without bias by ``MSB / (D P) = s²(ȳ_k) / D`` -- the squared standard error of the
    per-draw means, whatever the split. Pooling the ``DP`` values as independent would use
    ``(σ_b² + σ_w²) / (D P)`` instead, too small by about ``P σ_b² / (σ_b² + σ_w²)`` when ``σ_b² > 0``.

    Returns
    -------
    (sigma_b2, sigma_w2, var_mean)

    Examples
    --------
    >>> sb, sw, v = nested_variance([[1.0, 1.2, 0.8], [2.0, 2.2, 1.8], [3.0, 3.1, 2.9]])
    >>> round(sb, 4), round(sw, 4), round(v, 4)
    (0.99, 0.03, 0.3333)
    """
    y = check_finite_array("values", values, ndim=2)
    D, P = y.shape
    if D < 2 or P < 2:
        raise InvalidArgumentError("values", f"needs at least 2 draws and 2 patterns each, got shape {y.shape}")
    row = y.mean(axis=1)
    msb = P * float(np.sum((row - row.mean()) ** 2)) / (D - 1)
    msw = float(np.sum((y - row[:, None]) ** 2)) / (D * (P - 1))
    return max((msb - msw) / P, 0.0), msw, msb / (D * P)
