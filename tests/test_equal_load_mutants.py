"""gcsim.coding.bounds.equal_load against independent computations (theory §63.7).

Written against the mutants ``scripts/mutation.py --sample 60 --seed 0 coding.equal_load`` found alive.
Every expected number is written out here: the LP of Lemma 63.7 solved by hand for two workers
(a never- or an always-straggling worker), the float ``p_j`` lowered by ``2^-40`` in fractions, the
reduced costs of column generation from the costs ``g_1(T) = prod_{j in T} p_j`` enumerated here;
every refused input must name its argument.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize

from gcsim.coding.bounds.equal_load import check_load_certificate, equal_load_lower_bound
from tests.guards import refused_argument


@pytest.mark.parametrize(
    ("p", "value"),
    [
        # worker 0 never straggles: with f = (1/2, 1/2), x_{0} = x_{1} = 1/2 costs 0/2 + (1/2)/2 = 1/4, and
        # any x costs x_∅ + x_{1}/2 = 1/2 - x_{1}/2 >= 1/4 (x_∅ = 1/2 - x_{1}); the uncoded split reaches it
        ([0, Fraction(1, 2)], Fraction(1, 4)),
        # worker 0 always straggles: g({0}) = 1, g({0, 1}) = 1/2, and every feasible x costs
        # x_∅ + x_{0} + (x_{1} + x_{0,1}) / 2 = 1/2 + 1/4
        ([1, Fraction(1, 2)], Fraction(3, 4)),
    ],
)
def test_a_probability_of_zero_or_one_is_taken_exactly(p, value):
    cert = equal_load_lower_bound(p, 1, 2)
    assert cert.value == value and cert.p == (Fraction(p[0]), Fraction(1, 2))


def test_a_float_array_of_probabilities_is_lowered_by_two_to_the_minus_40():
    p = np.array([0.05, 0.1, 0.5, 0.6])
    cert = equal_load_lower_bound(p, 2, 4)
    lowered = tuple(Fraction(v) * (2**40 - 1) / 2**40 for v in (0.05, 0.1, 0.5, 0.6))
    assert cert.p == lowered
    assert cert.fractions == (Fraction(1, 2),) * 4
    assert check_load_certificate(lowered, cert.fractions, 1, cert.dual) == cert.value


@pytest.mark.parametrize(
    ("load", "parts"),
    [(-1, 2), ([1, 3], 2), ([1, -1], 2), ([0.5, 1], 2)],
)
def test_a_load_outside_zero_to_parts_is_refused_by_name(load, parts):
    assert refused_argument(equal_load_lower_bound, [0.1, 0.2], load, parts) == "load"


@pytest.mark.parametrize("m", [0, 1.5, "2", -3])
def test_the_certificate_check_names_m(m):
    p = [Fraction(1, 2), Fraction(1, 3)]
    assert refused_argument(check_load_certificate, p, [Fraction(1, 2)] * 2, m, [Fraction(0)] * 3) == "m"


def _costs_by_enumeration(p):
    """g_1(T) = prod_{j in T} p_j for every subset T (bit j = worker j), at the float p_j lowered by 2^-40
    (the costs the solver is given), each product exact and then rounded to the nearest float."""
    low = [Fraction(float(v)) * (2**40 - 1) / 2**40 for v in p]
    return [
        float(math.prod((low[j] for j in range(len(p)) if T >> j & 1), start=Fraction(1))) for T in range(2 ** len(p))
    ]


@pytest.mark.parametrize(
    ("p", "load", "parts"),
    [
        ([0.2] * 6, 4, 6),  # equal p: every subset of a size costs the same (many ties at the optimum)
        (list(np.random.default_rng(3).uniform(0.02, 0.8, 8)), 3, 8),
    ],
)
def test_column_generation_adds_only_columns_that_price_in(monkeypatch, p, load, parts):
    """Each round adds only subsets of reduced cost ``g(T) - y_0 - sum_{j in T} y_j`` below ``-1e-13`` at the
    last round's dual, and stops when no subset prices below it (theory §63.7): the reduced costs here
    from the costs enumerated here and the dual each call of HiGHS returned."""
    calls = []
    linprog = scipy.optimize.linprog

    def spy(c, A_eq, b_eq, **kwargs):
        res = linprog(c, A_eq=A_eq, b_eq=b_eq, **kwargs)
        weights = 1 << np.arange(A_eq.shape[0] - 1)
        columns = {int(w) for w in np.rint(weights @ A_eq[1:]).astype(int)}
        calls.append((columns, np.asarray(res.eqlin.marginals, dtype=float)))
        return res

    monkeypatch.setattr(scipy.optimize, "linprog", spy)
    equal_load_lower_bound(p, load, parts)
    cost = _costs_by_enumeration(p)
    n = len(p)

    def reduced(T, y):
        return cost[T] - y[0] - sum(y[1 + j] for j in range(n) if T >> j & 1)

    assert calls
    for (before, y), (after, _) in zip(calls, calls[1:], strict=False):
        added = after - before
        assert added and before <= after
        assert all(reduced(T, y) < -1e-13 + 1e-15 for T in added), sorted((reduced(T, y), T) for T in added)[-1]
    final = calls[-1][1]
    assert min(reduced(T, final) for T in range(2**n)) >= -1e-13 - 1e-15
