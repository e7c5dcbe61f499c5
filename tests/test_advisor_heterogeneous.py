"""Heterogeneous stragglers (#36 item 2): the advisor's non-symmetric answer against every symmetric one.

The acceptance case: 6 workers, each holding 2/6 of the data on average, three reliable workers
(p = 0.05) and three unreliable ones (p = 0.6). The weighted cyclic repetition (loads 3, 3, 3, 1,
1, 1 of 6 parts) has expected error 0.01625 exactly; the best symmetric candidate 0.03. Every
expected error of the advisor is checked against an independent computation: the 64 straggler
patterns with their probabilities and an lstsq for each pattern's error (tests/exact_lstsq.py).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gcsim.advisor import advise
from gcsim.advisor.candidates import SYMMETRIC_FAMILIES, Question, weighted_cyclic_structures
from gcsim.coding.bounds.equal_load import equal_load_lower_bound
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.weighted_cyclic import apportion_loads, weighted_cyclic_repetition
from tests.exact_lstsq import lstsq_error

N_WORKERS = 6
P = [0.05, 0.05, 0.05, 0.6, 0.6, 0.6]
MASKS = np.array(list(itertools.product([False, True], repeat=N_WORKERS)))  # True = arrived


def _weights(p, masks):
    p = np.asarray(p, dtype=float)
    return np.prod(np.where(masks, 1.0 - p, p), axis=1)


def _pattern_errors(B, m):
    return np.array([lstsq_error(B, mask, m, normalized=True) for mask in MASKS])


@pytest.fixture(scope="module")
def advice():
    return advise(N_WORKERS, 2, 1, straggler_model("bernoulli", N_WORKERS, p=P), progress=False)


def test_the_non_symmetric_answer_beats_every_symmetric_candidate_exactly(advice):
    best = advice.best
    assert best["family"] == "weighted-cyclic" and best["error_method"] == "exact"
    assert advice.structures[0].loads.tolist() == [3, 3, 3, 1, 1, 1]
    assert advice.structures[0].loads.sum() == 12  # the total of every symmetric candidate: 6 workers x 2/6
    # by hand: parts 0-2 held by two reliable workers (lost w.p. 0.05^2), parts 3-5 by one reliable
    # and one unreliable worker (0.05 x 0.6): (3 x 0.0025 + 3 x 0.03) / 6
    assert best["error"] == pytest.approx(0.01625, abs=1e-12)
    symmetric = [r for r in advice.rows if r["family"] in SYMMETRIC_FAMILIES]
    assert symmetric and all(r["error_method"] == "exact" for r in symmetric)
    assert min(r["error"] for r in symmetric) == pytest.approx(0.03, abs=1e-12)
    assert all(best["error"] < r["error"] - 0.01 for r in symmetric)
    assert "-0.01375 (-45.83 %) (exact)" in best["notes"]


def test_every_error_agrees_with_the_enumeration_of_the_patterns(advice):
    w = _weights(P, MASKS)
    assert math.isclose(w.sum(), 1.0, abs_tol=1e-15)
    for row, scheme in zip(advice.rows, advice.schemes, strict=True):
        ref = float(w @ _pattern_errors(scheme.B, scheme.m))
        assert row["error"] == pytest.approx(ref, abs=1e-10), row["name"]


def test_no_relabelling_of_the_workers_saves_a_symmetric_candidate(advice):
    """The symmetric candidates do not know which workers are reliable: try all 720 labellings."""
    w_best = float(advice.best["error"])
    perms = np.array(list(itertools.permutations(range(N_WORKERS))))
    p = np.asarray(P)
    seen = set()
    for row, scheme in zip(advice.rows, advice.schemes, strict=True):
        if row["family"] not in SYMMETRIC_FAMILIES:
            continue
        key = scheme.B.tobytes()
        if key in seen:
            continue
        seen.add(key)
        errs = _pattern_errors(scheme.B, scheme.m)
        # column j of the code goes to worker perm[j]: the pattern's probability under p[perm]
        best_labelling = min(float(_weights(p[perm], MASKS) @ errs) for perm in perms)
        assert w_best < best_labelling - 1e-3, row["name"]


def test_a_speed_model_gets_loads_proportional_to_reliability_and_to_speed():
    model = straggler_model("speed", N_WORKERS, speed=[3.0, 2.0, 2.0, 1.0, 1.0, 1.0], deadline=1.0, shift=0.5, rate=1.0)
    adv = advise(N_WORKERS, 2, 1, model, families=("cyclic", "fractional", "weighted-cyclic"), progress=False)
    names = {r["structure"] for r in adv.rows if r["family"] == "weighted-cyclic"}
    assert any("1 - p_j" in x for x in names) and any("speed s_j" in x for x in names)
    assert adv.best["family"] == "weighted-cyclic"
    ref = float(_weights(model.p, MASKS) @ _pattern_errors(adv.schemes[0].B, 1))
    assert adv.best["error"] == pytest.approx(ref, abs=1e-10)


def test_two_weightings_with_the_same_loads_give_one_candidate():
    model = straggler_model("speed", N_WORKERS, speed=[2.0, 2.0, 2.0, 1.0, 1.0, 1.0], deadline=1.0, shift=0.5, rate=1.0)
    items = list(weighted_cyclic_structures(Question(N_WORKERS, 2, 1, model)))
    assert [x.loads.tolist() for x in items] == [[3, 3, 3, 1, 1, 1]]


def test_a_homogeneous_model_gets_no_non_symmetric_candidate():
    adv = advise(N_WORKERS, 2, 1, "bernoulli:0.2", families=("cyclic", "weighted-cyclic"), progress=False)
    assert {r["family"] for r in adv.rows} == {"cyclic"}
    assert all(r["family"] != "weighted-cyclic" for r in adv.dropped.to_dict("records"))
    assert not any("best symmetric" in r["notes"] for r in adv.rows)


def test_the_weighted_assignment_keeps_the_replication_and_round_trips():
    loads = apportion_loads(1.0 - np.asarray(P), 12, 6)
    obj = weighted_cyclic_repetition(loads, 6)
    assert obj.verify() and obj.replication.tolist() == [2] * 6
    again = type(obj).from_arrays(obj.to_arrays(), obj.bundle_metadata())
    assert np.array_equal(again.assignment, obj.assignment) and again.params == obj.params


def test_no_symmetric_design_at_the_same_load_beats_003_certified_exactly(advice):
    """Not only the advisor's candidates: every design in which each worker holds a third of the data.

    Any number N of parts, any coefficients, any labelling: a part whose holders all straggle is a
    zero row of B_F, so E[err]/N >= sum_T x_T prod_{j in T} p_j with x_T the fraction of parts held
    by exactly the workers T; x >= 0, sum_T x_T = 1 and sum_{T ∋ j} x_T = 1/3 for every worker j
    (Lemma 63.7). A feasible solution y of the dual LP bounds that below by y_0 + (1/3) sum_j y_j:
    checked here in exact rationals over all 64 subsets T, it gives 3/100, which the advisor's best
    symmetric candidate reaches; the non-symmetric answer has 13/800.
    """
    from fractions import Fraction

    p = [Fraction(1, 20)] * 3 + [Fraction(3, 5)] * 3
    y0, y = Fraction(163, 2000), [Fraction(-79, 2000)] * 3 + [Fraction(-24, 2000)] * 3
    for T in itertools.product([0, 1], repeat=N_WORKERS):
        lhs = y0 + sum(y[j] for j in range(N_WORKERS) if T[j])
        assert lhs <= math.prod((p[j] for j in range(N_WORKERS) if T[j]), start=Fraction(1)), T
    bound = y0 + sum(y) / 3
    assert bound == Fraction(3, 100)
    assert equal_load_lower_bound(p, 2, 6).value == bound  # the library's certificate: the same value
    symmetric = min(r["error"] for r in advice.rows if r["family"] in SYMMETRIC_FAMILIES)
    assert symmetric == pytest.approx(float(bound), abs=1e-12)  # the bound is reached: it is the optimum
    assert advice.best["error"] == pytest.approx(float(Fraction(13, 800)), abs=1e-12) and 13 / 800 < 3 / 100


def test_the_advisor_reports_the_certified_bound_and_each_rows_distance(advice):
    """question["load_bound"]: Lemma 63.7 at a third of the data; each row's note: its error minus it."""
    import re

    bound = advice.question["load_bound"]
    assert bound["certified"] and bound["fraction"] == "1/3" and "at most 1/3" in bound["covers"]
    # p = 0.05, 0.6 as floats, lowered by 2^-40: just below the 3/100 certified above in rationals
    assert 0.03 - 1e-12 < bound["value"] <= 0.03 and "can beat 0.03 (certified" in bound["statement"]
    for row in advice.rows:
        note = re.search(
            r"certified bound of every design of (its load|load 1/3, not this design's loads) "
            r"\(0\.03, Lemma 63\.7\): ([-+][0-9.e+-]+)",
            row["notes"],
        )
        assert note, row["name"]
        assert float(note.group(2)) == pytest.approx(row["error"] - bound["value"], rel=1e-5, abs=1e-15)
        mine = row["load"] * 3 <= row["N"]  # at most a third of the data on every worker
        assert (note.group(1) == "its load") == mine, row["name"]
        if mine:  # Lemma 63.7: no covered design lies below the bound
            assert row["error"] >= bound["value"] - 1e-12, row["name"]
    assert advice.best["error"] < bound["value"] - 0.01  # the non-symmetric answer: below every equal-load design


def test_no_bound_for_a_homogeneous_model_and_a_clear_skip_above_the_limit(monkeypatch):
    from gcsim import limits

    adv = advise(N_WORKERS, 2, 1, "bernoulli:0.2", families=("cyclic",), progress=False)
    assert adv.question["load_bound"] is None and not any("Lemma 63.7" in r["notes"] for r in adv.rows)
    monkeypatch.setattr(limits, "MAX_LP_SUBSETS", 2**5)
    adv = advise(N_WORKERS, 2, 1, straggler_model("bernoulli", N_WORKERS, p=P), families=("cyclic",), progress=False)
    assert "MAX_LP_SUBSETS = 32" in adv.question["load_bound"]["skipped"]
    assert "value" not in adv.question["load_bound"] and not any("Lemma 63.7" in r["notes"] for r in adv.rows)


def test_the_command_line_prints_the_bound_and_puts_it_in_the_json(capsys):
    import json

    from gcsim.app.cli import main

    args = ["advise", "--workers", "6", "--load", "2", "--stragglers", "bernoulli:0.05*3,0.6*3"]
    assert main([*args, "--families", "cyclic"]) == 0
    assert "no design in which each worker holds at most 1/3 of the data can beat 0.03 (certified, Lemma 63.7)" in (
        capsys.readouterr().out
    )
    assert main([*args, "--families", "cyclic", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["question"]["load_bound"]["certified"] is True
    assert got["question"]["load_bound"]["value"] == pytest.approx(0.03, abs=1e-12)
    assert all("Lemma 63.7" in r["notes"] for r in got["candidates"])
