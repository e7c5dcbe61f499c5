"""Intervals for bounded means: the betting interval against the t on rare events (theory §57.12).

The t interval's coverage of a Bernoulli mean is computed exactly (it depends on the draws only
through the count of ones); the betting interval's is measured over seeded repetitions, and a test
fails only below the ALPHA-quantile of Binomial(R, 0.95), as in ``tests/test_expected_coverage.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gcsim._stats import betting_interval, t_interval
from gcsim.coding.partial_stragglers import mean_ci
from gcsim.errors import InvalidArgumentError
from test_expected_coverage import min_covered


def _t_coverage(n: int, p: float) -> float:
    """Exact coverage of the 95 % t interval for the mean of Bernoulli(p) from n draws."""
    total = 0.0
    for k in range(n + 1):
        mean = k / n
        sd = math.sqrt((k * (1 - mean) ** 2 + (n - k) * mean**2) / (n - 1))
        lo, hi = t_interval(mean, sd / math.sqrt(n), n - 1)
        total += stats.binom.pmf(k, n, p) * (lo <= p <= hi)
    return total


@pytest.mark.parametrize(("n", "p"), [(20, 1e-3), (200, 1e-3), (200, 1e-2)])
def test_t_interval_misses_a_rare_mean_whenever_no_event_is_seen(n, p):
    # no event: the t interval is [0, 0], which misses p > 0; so coverage <= 1 - (1 - p)^n
    assert t_interval(0.0, 0.0, n - 1) == (0.0, 0.0)
    cov = _t_coverage(n, p)
    assert cov <= 1 - (1 - p) ** n + 1e-12
    assert cov < 0.9


def test_t_interval_holds_its_level_on_a_common_event():
    assert _t_coverage(200, 0.3) == pytest.approx(0.944, abs=0.002)


@pytest.mark.parametrize(("n", "p", "value"), [(200, 1e-2, 1.0), (200, 1e-3, 1.0), (20, 0.3, 0.05)])
def test_betting_interval_covers_rare_and_small_means(n, p, value):
    rng = np.random.default_rng(np.random.SeedSequence((57, 12, n)))
    R = 300
    covered = 0
    for _ in range(R):
        lo, hi = betting_interval(value * (rng.random(n) < p), 0.0, 1.0)
        covered += lo <= value * p <= hi
    assert covered >= min_covered(R)


@pytest.mark.parametrize("n", [20, 200, 2000])
def test_no_event_gives_a_one_sided_limit_no_valid_interval_can_undercut(n):
    lo, hi = betting_interval(np.zeros(n), 0.0, 1.0)
    # any interval valid for every Bernoulli(p) must reach 1 - 0.05^(1/n) when no event is seen:
    # below it, p just above the end would be missed with probability (1 - p)^n > 0.05
    assert lo == 0.0 and 1 - 0.05 ** (1 / n) <= hi < 10.0 / n


def test_mean_ci_takes_the_betting_interval_with_bounds_and_names_bad_ones():
    r = mean_ci(np.zeros(2000), bounds=(0.0, 1.0))
    assert (r.mean, r.lo, r.method) == (0.0, 0.0, "betting") and r.hi > 0.0
    assert mean_ci([1.0, 2.0, 3.0]).method == "t"
    # round-off beyond the range is clipped, a value outside it is refused by name
    assert mean_ci([0.0, 1.0 + 1e-12], bounds=(0.0, 1.0)).hi <= 1.0
    with pytest.raises(InvalidArgumentError, match="bounds"):
        mean_ci([0.0, 1.5], bounds=(0.0, 1.0))
    with pytest.raises(InvalidArgumentError, match="bounds"):
        mean_ci([0.5], bounds=(1.0, 1.0))
    with pytest.raises(InvalidArgumentError, match="alpha"):
        betting_interval([0.5], 0.0, 1.0, alpha=1.0)
