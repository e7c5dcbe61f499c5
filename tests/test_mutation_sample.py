"""scripts/mutation.py's sample mode: the exact interval and the draw (issue #32 item 7)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from scipy.stats import beta

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "mutation.py"
_spec = importlib.util.spec_from_file_location("gcsim_mutation_script", _SCRIPT)
assert _spec is not None and _spec.loader is not None
mutation = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mutation  # dataclasses look their module up while the class is made
_spec.loader.exec_module(mutation)


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (5, 7), (140, 150), (280, 300), (1, 1), (0, 1)])
def test_clopper_pearson_is_the_beta_quantiles(k, n):
    # the textbook form: lower = Beta(k, n - k + 1) at alpha/2, upper = Beta(k + 1, n - k) at 1 - alpha/2
    lo, hi = mutation.clopper_pearson(k, n)
    assert lo == pytest.approx(beta.ppf(0.025, k, n - k + 1) if k else 0.0, abs=1e-12)
    assert hi == pytest.approx(beta.ppf(0.975, k + 1, n - k) if k < n else 1.0, abs=1e-12)
    with pytest.raises(ValueError):
        mutation.clopper_pearson(n + 1, n)


def _mutants(names, kind="number"):
    return [mutation.Mutant(name, "not run", kind) for name in names]


def test_draw_is_seeded_number_only_and_stable_under_reclassification():
    names = [f"m.x_f__mutmut_{i}" for i in range(200)]
    order = mutation._draw(_mutants(names), 0)
    assert sorted(order) == sorted(names) and order == mutation._draw(_mutants(reversed(names)), 0)
    assert order != mutation._draw(_mutants(names), 1) and order != sorted(names)
    # a mutant found message-only leaves the others in their order, and is never drawn
    moved = _mutants(names[:50]) + _mutants(names[50:51], "message") + _mutants(names[51:])
    assert mutation._draw(moved, 0) == [n for n in order if n != names[50]]


def test_sample_report_counts_the_message_only_survivors_apart(capsys):
    drawn = [f"m.x_f__mutmut_{i}" for i in range(10)]
    mutants = [mutation.Mutant(n, "survived" if i == 3 else "killed", "number") for i, n in enumerate(drawn)]
    mutants += [mutation.Mutant("m.x_f__mutmut_90", "not run", "number")]  # not drawn: not counted
    statuses = ["killed", "survived", "not run"]
    mutants += [mutation.Mutant(f"m.x_g__mutmut_{i}", st, "message") for i, st in enumerate(statuses)]
    score = mutation._report_sample("m", mutants, drawn, threshold=0.85, list_survivors=False)
    out = capsys.readouterr().out
    assert "9/10 killed" in out and "from the module's 11 number-changing mutants (14 in all)" in out
    assert "message-only mutants 3 (not drawn: run apart, 2 ran, 1 survived)" in out
    assert score == mutation.clopper_pearson(9, 10)[0] and "not shown" in out


def test_make_mutation_samples_only_the_two_large_modules():
    assert {name: t.sample for name, t in mutation.TARGETS.items()} == {
        "cerar.constructions": 0,
        "combinatorics.bibd_existence": 0,
        "coding.evaluate": 100,
        "coding.bounds": 100,
    }


def test_a_listed_equivalent_that_never_ran_does_not_end_the_finished_prefix(capsys):
    # --resume does not run a drawn mutant of the skip list; the prefix goes on past it (not counted)
    name, (line, _reason) = next(iter(mutation.EQUIVALENT.items()))
    drawn = ["m.x_f__mutmut_1", name, "m.x_f__mutmut_2"]
    mutants = [
        mutation.Mutant(drawn[0], "killed", "number"),
        mutation.Mutant(name, "not run", "number", lines=[line]),
        mutation.Mutant(drawn[2], "survived", "number"),
    ]
    mutation._report_sample("m", mutants, drawn, threshold=0.85, list_survivors=False)
    out = capsys.readouterr().out
    assert "sample of 3 (of 3 drawn)" in out and "1/2 killed" in out and "equivalent (skip list) 1" in out
    # a drawn mutant not run and not listed ends it
    mutants[1] = mutation.Mutant(name, "not run", "number", lines=["something else"])
    mutation._report_sample("m", mutants, drawn, threshold=0.85, list_survivors=False)
    assert "sample of 1 (of 3 drawn)" in capsys.readouterr().out
