"""``max_load`` (``--max-load``): a per-worker cap on the non-symmetric candidates' loads.

Without it the question's load is the *average* load of the ``"weighted-cyclic"`` candidates and the
searched loads may put every part on one worker.  With it every load vector searched or apportioned
stays at or below the cap; the answer is checked against a brute force over every capped load
vector, each evaluated by enumerating the ``2^n`` straggler patterns with the tests' least-squares
reference (tests/exact_lstsq.py), independent of gcsim's evaluators.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from gcsim.advisor import Question, advise
from gcsim.advisor.candidates import SYMMETRIC_FAMILIES
from gcsim.app.cli import main
from gcsim.coding.load_allocation import optimize_loads
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.weighted_cyclic import weighted_cyclic_repetition
from gcsim.errors import InvalidArgumentError
from tests.exact_lstsq import lstsq_error

P5 = [0.02, 0.02, 0.3, 0.6, 0.6]  # two reliable workers: uncapped, one of them takes more than 3 parts


def _enumerated(loads, p):
    """E[err]/N of the weighted cyclic repetition (B = A, m = 1) over all 2^n patterns, by the lstsq reference."""
    A = weighted_cyclic_repetition(list(loads), len(loads)).assignment.astype(float)
    masks = np.array(list(itertools.product([False, True], repeat=len(loads))))  # True = arrived
    w = np.prod(np.where(masks, 1.0 - np.asarray(p), np.asarray(p)), axis=1)
    return float(w @ np.array([lstsq_error(A, mask, 1, normalized=True) for mask in masks]))


def _brute_force(p, total, cap):
    """Every load vector in [1, cap]^n summing to ``total``, with its enumerated error."""
    n = len(p)
    return {v: _enumerated(v, p) for v in itertools.product(range(1, cap + 1), repeat=n) if sum(v) == total}


@pytest.fixture(scope="module")
def capped_answers():
    return _brute_force(P5, 10, 3)


def test_the_cap_binds_and_the_search_finds_the_capped_optimum(capsys, capped_answers):
    model = straggler_model("bernoulli", 5, p=P5)
    free = optimize_loads(model, 10, 5)
    assert free.loads.max() > 3  # the cap changes the answer
    plan = optimize_loads(model, 10, 5, max_load=3)
    best = min(capped_answers.values())
    assert plan.search == f"exhaustive over {len(capped_answers)} load vectors"
    assert plan.loads.max() <= 3 and int(plan.loads.sum()) == 10
    assert plan.error == pytest.approx(best, abs=1e-12)
    assert capped_answers[tuple(plan.loads.tolist())] == pytest.approx(best, abs=1e-12)
    assert all(max(v) <= 3 for v, _ in plan.starts.values())
    assert free.error < best - 1e-6  # what the cap costs (the uncapped optimum is not capped)


def test_the_local_search_stays_under_the_cap():
    p = np.array([0.02, 0.05, 0.1, 0.3, 0.5, 0.6, 0.7])
    model = straggler_model("bernoulli", 7, p=p)
    plan = optimize_loads(model, 14, 7, search_limit=5, max_load=3)
    assert plan.search.startswith("local search") and plan.loads.max() <= 3 and int(plan.loads.sum()) == 14
    assert all(max(v) <= 3 for v, _ in plan.starts.values())
    here = _enumerated(plan.loads.tolist(), p)
    assert here == pytest.approx(plan.error, abs=1e-12)
    for i, j in itertools.permutations(range(7), 2):  # no unit transfer within [1, 3] improves it
        moved = plan.loads.tolist()
        moved[i] -= 1
        moved[j] += 1
        if moved[i] >= 1 and moved[j] <= 3:
            assert _enumerated(moved, p) >= here - 1e-12, (i, j)


def test_no_cap_and_a_cap_of_n_search_the_same_loads():
    model = straggler_model("bernoulli", 5, p=P5)
    a, b = optimize_loads(model, 10, 5), optimize_loads(model, 10, 5, max_load=5)
    assert a.loads.tolist() == b.loads.tolist() and a.error == b.error and a.search == b.search


def test_the_advisor_answers_within_the_cap(capped_answers):
    free = advise(5, 2, 1, "bernoulli:" + ",".join(map(str, P5)), progress=False)
    capped = advise(5, 2, 1, "bernoulli:" + ",".join(map(str, P5)), max_load=3, progress=False)
    assert free.best["family"] == "weighted-cyclic" and free.best["load"] > 3
    assert capped.question["max_load"] == 3 and free.question["max_load"] is None
    for row, obj in zip(capped.rows, capped.structures, strict=True):
        A = np.asarray(obj.assignment)  # checked on the assignment itself
        loads = A.sum(axis=0)
        assert row["load"] == loads.max() and loads.max() * 5 <= 3 * A.shape[0], row["name"]  # <= 3/5 of the data
        if row["family"] == "weighted-cyclic":  # N = n: at most 3 parts
            assert A.shape[0] == 5 and loads.max() <= 3, row["name"]
    searched = [r for r in capped.rows if "searched optimum" in r["structure"] and r["encoder"] == "naive"]
    assert len(searched) == 1 and searched[0]["error"] == pytest.approx(min(capped_answers.values()), abs=1e-12)

    # the symmetric candidates do not see the cap: the same rows, the same numbers
    def symmetric(adv):
        keys = ("name", "error", "error_lo", "error_hi")
        return sorted(tuple(r[k] for k in keys) for r in adv.rows if r["family"] in SYMMETRIC_FAMILIES)

    assert symmetric(free) == symmetric(capped) and symmetric(free)


def test_a_cap_of_n_changes_no_number():
    spec = "bernoulli:" + ",".join(map(str, P5))
    a, b = advise(5, 2, 1, spec, progress=False), advise(5, 2, 1, spec, max_load=5, progress=False)
    keys = ("name", "error", "error_lo", "error_hi", "error_method", "load", "rank")
    assert [[r[k] for k in keys] for r in a.rows] == [[r[k] for k in keys] for r in b.rows]


@pytest.mark.parametrize("bad", [1, 0, True, 2.5, "3"])
def test_a_cap_below_the_load_is_refused_by_name(bad):
    with pytest.raises(InvalidArgumentError, match="max_load"):
        advise(5, 2, 1, "bernoulli:0.1", max_load=bad, progress=False)
    with pytest.raises(InvalidArgumentError, match="max_load"):
        Question(5, 2, 1, straggler_model("bernoulli", 5, p=0.1), max_load=bad)
    with pytest.raises(InvalidArgumentError, match="max_load"):
        optimize_loads(straggler_model("bernoulli", 5, p=P5), 10, 5, max_load=bad)


def test_cli_refuses_a_cap_below_the_load(capsys):
    argv = ["advise", "--workers", "5", "--load", "2", "--stragglers", "bernoulli:" + ",".join(map(str, P5))]
    assert main([*argv, "--max-load", "1"]) == 2
    err = capsys.readouterr().err
    assert "--max-load: must be an integer >= the load 2" in err and "Traceback" not in err
    assert main([*argv, "--max-load", "zero"]) == 2
    assert "--max-load" in capsys.readouterr().err


def test_cli_notes_an_over_load_answer_on_stderr_only(capsys):
    argv = ["advise", "--workers", "5", "--load", "2", "--stragglers", "bernoulli:" + ",".join(map(str, P5)), "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    best = json.loads(out)["candidates"][0]  # stdout stays one JSON object
    assert best["load"] > 2
    assert f"gcsim: note: the top candidate puts {best['load']} of its 5 parts on one worker" in err
    assert "--max-load 2 caps every worker" in err
    assert main([*argv, "--max-load", "3"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["candidates"]
    assert "gcsim: note:" not in err and max(r["data_fraction"] for r in rows) <= 3 / 5 + 1e-15
    assert json.loads(out)["question"]["max_load"] == 3
    assert main(argv[:-1]) == 0  # the text table shows each row's largest load, of N
    out, _ = capsys.readouterr()
    assert f"{best['load']}/5" in out and "load:" in out
