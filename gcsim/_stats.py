"""Student-t confidence intervals: the one place the Monte Carlo estimators take their quantiles from.

Every Monte Carlo estimate in gcsim reports ``mean ± t_{(1 + level)/2, df} · se`` with the standard
error ``se`` of the mean and ``df`` degrees of freedom (``samples - 1``, batches ``- 1``, or a
Welch--Satterthwaite value for stratified sums); the quantile is :func:`scipy.stats.t.ppf`.
"""

from __future__ import annotations

import math

__all__ = ["t_quantile", "t_interval"]


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
