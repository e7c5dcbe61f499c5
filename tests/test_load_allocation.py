"""Load-dependent straggling and the choice of per-worker loads (#36 item 2; theory §63.5, §63.6).

Every number is checked against an independent computation: ``p_j`` from scipy's exponential law
(not gcsim's formula), the expected error by enumerating the ``2^n`` straggler patterns with the
tests' least-squares reference (tests/exact_lstsq.py), the optimum of the loads by trying every
load vector with that enumeration, and the advisor's claim against every symmetric design by the
dual certificate of a linear program checked in exact rational arithmetic.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from gcsim.advisor import advise
from gcsim.advisor.candidates import SYMMETRIC_FAMILIES
from gcsim.coding.bounds.equal_load import equal_load_lower_bound
from gcsim.coding.evaluate import expected_error
from gcsim.coding.load_allocation import _descend, _feasible, _rank, coverage_bound, optimize_loads
from gcsim.coding.schemes import encode
from gcsim.coding.straggler_models.load_speed import LoadSpeedModel
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.weighted_cyclic import weighted_cyclic_repetition
from gcsim.errors import InvalidArgumentError
from tests.exact_lstsq import lstsq_error

SPEED = [3.0, 2.0, 2.0, 1.0, 1.0, 1.0]
LAW = {"deadline": 0.5, "shift": 0.5, "rate": 1.0}  # the whole data set at speed 1: 0.5 + Exp(1) seconds


def _p(speed, fractions, deadline, shift, rate):
    """P[(f/s)(shift + E/rate) > deadline] from scipy's exponential law (loc, scale), 0 for f = 0."""
    out = []
    for s, f in zip(speed, fractions, strict=True):
        out.append(0.0 if f == 0 else float(stats.expon(loc=f * shift / s, scale=f / (s * rate)).sf(deadline)))
    return np.array(out)


def _masks(n):
    return np.array(list(itertools.product([False, True], repeat=n)))  # True = arrived


def _enumerated(A, p):
    """E[err]/N of the assignment code (B = A, m = 1) over every pattern, by the lstsq reference."""
    masks = _masks(A.shape[1])
    w = np.prod(np.where(masks, 1.0 - p, p), axis=1)
    return float(w @ np.array([lstsq_error(A, mask, 1, normalized=True) for mask in masks]))


def test_p_is_the_survival_of_the_scaled_law():
    f = np.array([0.5, 1 / 3, 0.25, 0.0, 0.75, 1 / 6])
    m = LoadSpeedModel(6, SPEED, fractions=f, **LAW)
    assert m.p == pytest.approx(_p(SPEED, f, **LAW), rel=1e-13, abs=0)
    # loads proportional to speed: every worker has the same law, the same p
    eq = LoadSpeedModel(3, [3.0, 2.0, 1.0], fractions=[0.5, 1 / 3, 1 / 6], **LAW)
    assert np.ptp(eq.p) < 1e-15 and eq.p[0] == pytest.approx(math.exp(-2.5), rel=1e-14)  # s D / f - shift = 2.5


def test_the_unbound_law_is_the_uncoded_split_and_binding_reads_the_code():
    m = straggler_model("load-speed", 6, speed=SPEED, fractions=None, **LAW)
    assert m.p == pytest.approx(_p(SPEED, [1 / 6] * 6, **LAW), rel=1e-13)
    code = weighted_cyclic_repetition([3, 3, 3, 1, 1, 1], 6)
    bound = m.bind(code.assignment.sum(axis=0), 6)
    assert bound.fractions.tolist() == [0.5, 0.5, 0.5, 1 / 6, 1 / 6, 1 / 6]
    assert straggler_model("load-speed", 6, speed=SPEED, fractions=bound.fractions, **LAW).params == bound.params
    again = type(bound).from_arrays(bound.to_arrays(), bound.bundle_metadata())
    assert again.params == bound.params and np.array_equal(again.p, bound.p)
    assert m.to_spec() == "load-speed:0.5,0.5,1.0,3.0,2.0*2,1.0*3" and bound.to_spec() is None


@pytest.mark.parametrize("loads", [[3, 3, 3, 1, 1, 1], [4, 3, 2, 1, 1, 1], [2, 2, 2, 2, 2, 2], [6, 1, 2, 1, 1, 1]])
def test_expected_error_evaluates_each_code_at_its_own_loads(loads):
    model = straggler_model("load-speed", 6, speed=SPEED, fractions=None, **LAW)
    code = weighted_cyclic_repetition(loads, 6)
    res = expected_error(encode(code, 1, "naive"), model, normalized=True, progress=False)
    ref = _enumerated(code.assignment.astype(float), _p(SPEED, np.array(loads) / 6, **LAW))
    assert res.method == "exact" and res.mean == pytest.approx(ref, abs=1e-12)


def test_the_exhaustive_search_finds_the_best_loads_of_every_load_vector():
    speed = [3.0, 2.0, 1.0, 1.0, 1.0]
    model = straggler_model("load-speed", 5, speed=speed, fractions=None, **LAW)
    plan = optimize_loads(model, 10, 5)
    every = {}
    for loads in itertools.product(range(1, 6), repeat=5):
        p = _p(speed, np.array(loads) / 5, **LAW)
        if sum(loads) == 10 and np.all(p < 1):  # a worker that never arrives is refused by the model
            every[loads] = _enumerated(weighted_cyclic_repetition(loads, 5).assignment.astype(float), p)
    best = min(every.values())
    assert plan.search == f"exhaustive over {len(every)} load vectors" and plan.objective == "exact expected error"
    assert plan.error == pytest.approx(best, abs=1e-12)
    assert every[tuple(plan.loads.tolist())] == pytest.approx(best, abs=1e-12)
    # what the search buys against loads proportional to speed and the symmetric loads
    prop, _ = plan.starts["proportional to speed"]
    assert every[tuple(prop)] > best + 1e-3 and every[(2, 2, 2, 2, 2)] > every[tuple(prop)]


def test_the_local_search_stops_where_no_unit_transfer_helps():
    p = np.array([0.02, 0.05, 0.1, 0.3, 0.5, 0.6, 0.7])
    model = straggler_model("bernoulli", 7, p=p)
    plan = optimize_loads(model, 14, 7, search_limit=5)
    assert plan.search.startswith("local search") and plan.objective == "exact expected error"

    def value(loads):
        return _enumerated(weighted_cyclic_repetition(loads, 7).assignment.astype(float), p)

    here = value(plan.loads.tolist())
    assert here == pytest.approx(plan.error, abs=1e-12)
    for i, j in itertools.permutations(range(7), 2):
        moved = plan.loads.tolist()
        moved[i] -= 1
        moved[j] += 1
        if moved[i] >= 1 and moved[j] <= 7:
            assert value(moved) >= here - 1e-12, (i, j)


def test_the_local_search_breaks_round_off_ties_as_the_exhaustive_search_does():
    """Objectives equal within round-off (1e-15 apart): the descent, like the exhaustive search and
    the final choice, takes the most balanced loads; ordering moves by (value, loads) went to the
    lexicographically smaller (1, 1, 4) and stopped there."""

    def value(x):
        return 1.0 if x == (1, 2, 3) else 1e-15 * x[0]

    tops = np.array([4, 4, 4])
    assert _descend((1, 2, 3), tops, value) == (2, 2, 2)
    assert min(_feasible(tops, 6), key=lambda x: _rank(value, x)) == (2, 2, 2)


def test_the_coverage_bound_is_the_product_over_each_parts_holders():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    loads = [3, 2, 2, 1]
    A = weighted_cyclic_repetition(loads, 4).assignment
    by_hand = sum(math.prod(p[j] for j in range(4) if A[i, j]) for i in range(4)) / 4
    assert coverage_bound(p, np.array(loads), 4) == pytest.approx(by_hand, rel=1e-14)
    assert _enumerated(A.astype(float), p) >= by_hand - 1e-15  # Lemma 63.2


def test_bad_inputs_are_named():
    model = straggler_model("load-speed", 3, speed=[1.0, 1.0, 1.0], deadline=1.0, shift=1.5, rate=1.0, fractions=None)
    with pytest.raises(InvalidArgumentError, match="total: no loads"):
        optimize_loads(model, 7, 3)  # a worker holding f_j >= 2/3 never arrives: at most 1 part of 3 each
    with pytest.raises(InvalidArgumentError, match="total"):
        optimize_loads(model, 2, 3)
    with pytest.raises(InvalidArgumentError, match="needs independent workers"):
        optimize_loads(straggler_model("fixed", 3, s=1), 6, 3)
    with pytest.raises(InvalidArgumentError, match="fractions: must be 3 numbers"):
        LoadSpeedModel(3, [1.0, 1.0, 1.0], 1.0, fractions=[0.5, 2.0, 0.1])


# ------------------------------------------------------------------------------------------------
# the advisor under load-dependent straggling: its answer against every symmetric design


def _lp_certificate(p, f):
    """A certified lower bound on ``sum_T x_T prod_{j in T} p_j`` over x >= 0, sum x = 1, sum_{T ∋ j} x_T = f.

    That LP bounds the expected error of every design in which each worker holds the fraction ``f``
    of the data (Lemma 63.7). The dual solution of scipy's HiGHS, shifted down by 1e-12, is checked
    feasible for all 2^n constraints in exact rational arithmetic against products of the p_j
    rounded down; its objective is then a lower bound whatever the float error of the solver.
    """
    from scipy.optimize import linprog

    n = len(p)
    subsets = list(itertools.product([0, 1], repeat=n))
    cost = [math.prod(p[j] for j in range(n) if T[j]) for T in subsets]
    A_eq = [[1.0] * len(subsets)] + [[float(T[j]) for T in subsets] for j in range(n)]
    res = linprog(cost, A_eq=A_eq, b_eq=[1.0] + [float(f)] * n, bounds=(0, None), method="highs")
    y = [Fraction(float(v)) for v in res.eqlin.marginals]
    y[0] -= Fraction(1, 10**12)
    low = [Fraction(float(x)) * (1 - Fraction(1, 2**40)) for x in p]  # below the float p_j
    for T in subsets:
        lhs = y[0] + sum(y[j + 1] for j in range(n) if T[j])
        assert lhs <= math.prod((low[j] for j in range(n) if T[j]), start=Fraction(1)), T
    return y[0] + f * sum(y[1:])


@pytest.fixture(scope="module")
def load_advice():
    model = straggler_model("load-speed", 6, speed=SPEED, fractions=None, **LAW)
    return model, advise(6, 2, 1, model, progress=False)


def test_the_advisor_searches_the_loads_and_says_what_they_buy(load_advice):
    model, adv = load_advice
    best = adv.best
    assert best["family"] == "weighted-cyclic" and best["error_method"] == "exact"
    assert "the searched optimum" in best["name"] and adv.structures[0].loads.tolist() == [3, 3, 3, 1, 1, 1]
    ref = _enumerated(adv.structures[0].assignment.astype(float), _p(SPEED, np.array([3, 3, 3, 1, 1, 1]) / 6, **LAW))
    assert best["error"] == pytest.approx(ref, abs=1e-12)
    symmetric = [r for r in adv.rows if r["family"] in SYMMETRIC_FAMILIES]
    top = min(symmetric, key=lambda r: r["error"])
    diff = best["error"] - top["error"]
    assert f"{diff:+.6g} ({100 * diff / top['error']:+.4g} %) (exact)" in best["notes"]
    proportional = [r for r in adv.rows if "proportional to speed" in r["name"]]
    assert proportional and all(best["error"] < r["error"] - 1e-3 for r in proportional)


def test_every_row_is_evaluated_at_its_own_loads(load_advice):
    _, adv = load_advice
    for row, scheme in zip(adv.rows, adv.schemes, strict=True):
        if row["m"] != 1 or scheme.method != "naive":
            continue
        A = np.asarray(scheme.assignment, dtype=float)
        f = np.count_nonzero(A, axis=0) / A.shape[0]
        assert row["error"] == pytest.approx(_enumerated(A, _p(SPEED, f, **LAW)), abs=1e-12), row["name"]


def test_no_symmetric_design_at_the_same_load_comes_near(load_advice):
    """Every design giving each worker a third of the data — any number of parts, any coefficients,
    any labelling of the workers — has an expected error at least the certified LP bound, above the
    advisor's non-symmetric answer."""
    _, adv = load_advice
    p = _p(SPEED, [1 / 3] * 6, **LAW)
    bound = _lp_certificate(list(p), Fraction(1, 3))
    assert float(bound) == pytest.approx(0.0198740062830984, abs=1e-9)
    library = equal_load_lower_bound(straggler_model("load-speed", 6, speed=SPEED, fractions=None, **LAW), 2, 6)
    assert library.bound == pytest.approx(float(bound), abs=1e-12) and library.value >= bound - Fraction(1, 10**11)
    reported = adv.question["load_bound"]  # the advisor's: p_j at exactly a third of the data (load-dependent)
    assert reported["value"] == library.bound and "exactly 1/3" in reported["covers"]
    assert "not this design's loads (0.019874, Lemma 63.7): -0.00155837 (-7.841 %) (exact)" in adv.best["notes"]
    assert adv.best["error"] < float(bound) - 1.5e-3


def test_the_error_command_evaluates_the_design_at_its_loads(capsys):
    """``gcsim error --stragglers load-speed:...``: the design's workers hold half the data each."""
    import json

    from gcsim.app.cli import main
    from gcsim.combinatorics.bibd import bibd

    base = ["error", "--design", "bibd:4,2,1", "--m", "1", "--method", "naive", "--json", "--stragglers"]
    assert main([*base, "load-speed:0.5,0.5,1,3,2*2,1*3"]) == 0
    got = json.loads(capsys.readouterr().out)
    A = bibd(4, 2, 1).assignment.astype(float)
    assert A.shape == (4, 6) and np.all(A.sum(axis=0) == 2)
    ref = _enumerated(A, _p(SPEED, [0.5] * 6, **LAW))
    assert got["evaluation"] == "exact" and got["normalized_mean"] == pytest.approx(ref, abs=1e-12)
    assert main([*base, "load-speed:0.5,0.5,1,0.5*6"]) == 2
    assert "fractions: worker 0 (speed 0.5, fraction 0.5) never arrives" in capsys.readouterr().err


def test_beyond_1024_patterns_the_search_minimizes_the_coverage_bound_locally():
    n = 11
    p = np.linspace(0.02, 0.6, n)
    plan = optimize_loads(straggler_model("bernoulli", n, p=p), 2 * n, n, search_limit=10)
    assert plan.objective == "coverage lower bound (Lemma 63.2)" and plan.search.startswith("local search")

    def bound(loads):  # sum over parts of the product of its holders' p_j, by hand
        A = weighted_cyclic_repetition(loads, n).assignment
        return sum(math.prod(p[j] for j in range(n) if A[i, j]) for i in range(n)) / n

    here = bound(plan.loads.tolist())
    assert plan.error == pytest.approx(here, rel=1e-12)
    for i, j in itertools.permutations(range(n), 2):
        moved = plan.loads.tolist()
        moved[i] -= 1
        moved[j] += 1
        if moved[i] >= 1 and moved[j] <= n:
            assert bound(moved) >= here * (1 - 1e-12), (i, j)
