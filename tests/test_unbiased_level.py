"""Level of gcsim.learning.unbiased.unbiasedness_test as a whole (docs/theory/60_learning.md §3).

The check combines a per-coordinate test and a norm test; each alone has (asymptotic) level alpha, so
"reject if either rejects at alpha" has level up to 2 alpha.  The Bonferroni combination
p = min(1, 2 min(p1, p2)) has level <= alpha.  Independent check: the empirical rejection frequency under
H_0 on Gaussian data (exactly normal means, so only the plug-in variances are approximate).
"""

from __future__ import annotations

import math

import numpy as np

from gcsim.learning.unbiased import unbiasedness_test


def test_whole_check_has_level_alpha_under_h0():
    rng = np.random.default_rng(12)
    g = rng.standard_normal(5)
    cov = np.diag([1.0, 4.0, 0.25, 1.0, 9.0])
    alpha, trials = 0.1, 1000
    results = [unbiasedness_test(rng.multivariate_normal(g, cov, size=400), g, alpha=alpha) for _ in range(trials)]
    rejected = sum(not res.passed for res in results)
    # binomial: under a level-alpha check the frequency exceeds alpha + 3 sd with probability < 0.2 %
    assert rejected / trials <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)
    for res in results:
        assert res.pvalue == min(1.0, 2 * min(res.coordinate_pvalue, res.norm_pvalue))
        assert res.passed == (res.pvalue >= alpha)


def test_whole_check_keeps_its_power():
    rng = np.random.default_rng(13)
    g = rng.standard_normal(5)
    cov = np.diag([1.0, 4.0, 0.25, 1.0, 9.0])
    shifted = rng.multivariate_normal(g + np.array([0, 0, 0.15, 0, 0]), cov, size=4000)
    res = unbiasedness_test(shifted, g, alpha=0.01)
    assert not res.passed and res.pvalue < 1e-6
