"""Pooled light strata in the stratified Bernoulli estimator (Lemma 7a, docs/theory/40_error_identities.md).

The coverage checks follow tests/test_expected_coverage.py: R seeds give R intervals whose number
covering the exact expectation is Binomial(R, c); a failure needs a count below the ALPHA-quantile
of Binomial(R, 0.95), so a correct level fails falsely with probability <= ALPHA.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gcsim
from gcsim.coding import expected_routes
from gcsim.coding.evaluate import expected_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.structured import encode_structured
from test_expected_coverage import min_covered, random_assignment


def _scenario():
    sch = encode(random_assignment(7, 8, 12, 4), 2, "rd", eps=0.3, seed=2)
    model = straggler_model("bernoulli", 12, p=0.3)
    return sch, model, expected_error(sch, model, exact_limit=4096).mean  # 2^12 patterns: exact


@pytest.mark.parametrize(("ci_method", "samples"), [("t", 100), ("betting", 20)])
def test_pooled_intervals_cover_the_exact_expectation(monkeypatch, ci_method, samples):
    sch, model, exact = _scenario()
    monkeypatch.setattr(expected_routes, "POOL_FACTOR", 0.0)  # pool whenever a stratum is light
    R, covered = 150, 0
    for seed in range(R):
        res = expected_error(sch, model, seed=seed, exact_limit=100, samples=samples, ci_method=ci_method)
        assert "pools" in res.method, res.method
        covered += res.ci[0] <= exact <= res.ci[1]
    assert covered >= min_covered(R), covered / R


def test_pooling_does_not_trigger_with_enough_draws(monkeypatch):
    sch, model, _ = _scenario()
    kw = dict(seed=3, exact_limit=100, samples=200, keep_values=True, progress=False)
    here = expected_error(sch, model, **kw)
    monkeypatch.setattr(expected_routes, "POOL_FACTOR", math.inf)  # never pool: Lemma 7's estimator
    plain = expected_error(sch, model, **kw)
    assert "pools" not in here.method
    assert here.mean == plain.mean and here.ci == plain.ci and np.array_equal(here.values, plain.values)


def test_pools_are_consecutive_and_cover_every_sampled_stratum():
    from scipy import stats

    n, p, samples = 993, 0.1, 100
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    mc_s = [s for s in range(n + 1) if w[s] >= 1e-15]
    pools = expected_routes._pool_strata(mc_s, w, samples, float(w[mc_s].sum()))
    assert [s for pool in pools for s in pool] == mc_s
    alloc = {s: samples * w[s] / w[mc_s].sum() for s in mc_s}
    for pool in pools:
        assert pool == list(range(pool[0], pool[-1] + 1))
        if len(pool) > 1:
            assert all(alloc[s] < 2 for s in pool)
    draws = sum(max(2, round(samples * w[pool].sum() / w[mc_s].sum())) for pool in pools)
    unpooled = sum(max(2, round(a)) for a in alloc.values())
    assert draws < 1.5 * samples < unpooled / 2, (draws, unpooled)


def test_pooled_estimate_agrees_with_a_large_unpooled_run_at_993_workers():
    sch = encode_structured(gcsim.bibd(993, 32, 1), 2, seed=1)
    model = straggler_model("bernoulli", 993, p=0.1)
    pooled = expected_error(sch, model, samples=150, seed=5, progress=False)
    assert "pools" in pooled.method and pooled.count < 300
    ref = expected_error(sch, model, samples=2500, seed=6, progress=False)  # 2 draws per stratum fit
    assert "pools" not in ref.method
    # independent estimates of one expectation: 5 joint standard errors (false failure < 1e-6)
    assert abs(pooled.mean - ref.mean) <= 5 * math.hypot(pooled.stderr, ref.stderr), (pooled, ref)
