"""scripts/mutation.py's sample mode: the exact interval and the draw (issue #32 item 7)."""

from __future__ import annotations

import json

import pytest
from scipy.stats import beta

from guards import load_script

# registered: dataclasses look their module up while the class is made
mutation = load_script("scripts/mutation.py", "gcsim_mutation_script", register=True)


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


def test_make_mutation_samples_the_large_modules_and_runs_the_two_small_ones_whole():
    assert {name: t.sample for name, t in mutation.TARGETS.items()} == {
        "cerar.constructions": 0,
        "combinatorics.bibd_existence": 0,
        "coding.evaluate": 100,
        "coding.bounds": 100,
        "coding.partial": 100,
        "coding.quantize": 100,
        "coding.equal_load": 60,
        "coding.sequential_multiplexed": 60,
        "coding.sequential": 60,
        "coding.load_allocation": 60,
        "executor.linkmodel": 100,
        "executor.straggler_aware": 0,
        "executor.collectives": 0,
    }
    # a target that names its functions mutates only those without --functions
    assert mutation.TARGETS["executor.straggler_aware"].functions[-1] == "straggler_aware_window"
    assert mutation.TARGETS["executor.collectives"].functions[-1] == "cerar_schedule"
    named = ("executor.straggler_aware", "executor.collectives")
    assert all(not t.functions for n, t in mutation.TARGETS.items() if n not in named)


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


# --resume after a module changed: a fake mutmut work directory (status table, hashes), no real mutmut run

_TARGET = mutation.Target(("gcsim/fake.py",), ())
_KEY = {None: None, "killed": 1, "survived": 0, "no tests": 33}


def _fake_work(tmp_path, codes, hashes, recorded):
    """``mutants/`` as mutmut leaves it: the module's status table and function hashes, its test map's hashes."""
    mutants = tmp_path / "mutants" / "gcsim"
    mutants.mkdir(parents=True)
    (mutants / "fake.py").write_text("")  # no source to compare with: every mutant is number-changing
    meta = {"exit_code_by_key": {n: _KEY[s] for n, s in codes.items()}, "hash_by_function_name": hashes}
    (mutants / "fake.py.meta").write_text(json.dumps(meta))
    stats = {
        "function_hashes": {f"gcsim.fake.{f}": h for f, h in recorded.items()},
        "tests_by_mangled_function_name": {},
    }
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps(stats))
    return tmp_path


def _fake_mutmut(monkeypatch, work, skip_first):
    """A mutmut that kills what it runs, except that its first call leaves ``skip_first`` not checked."""
    calls = []

    def run(work_dir, names, max_children, *, log_mode="w"):
        calls.append(list(names))
        path = work_dir / "mutants" / "gcsim" / "fake.py.meta"
        meta = json.loads(path.read_text())
        for n in names:
            if len(calls) > 1 or n not in skip_first:
                meta["exit_code_by_key"][n] = 1
        path.write_text(json.dumps(meta))
        return 0

    monkeypatch.setattr(mutation, "_run_mutmut", run)
    monkeypatch.setattr(mutation, "_generate", lambda work_dir: 0)  # the test wrote what it would
    return calls


def test_resume_after_a_change_maps_tests_again_and_runs_what_mutmut_left_unrun(tmp_path, monkeypatch, capsys):
    names = [f"gcsim.fake.x_f__mutmut_{i}" for i in range(4)] + [f"gcsim.fake.x_g__mutmut_{i}" for i in range(2)]
    # g changed: the generation reset its mutants (not checked); f's results stand
    codes = dict.fromkeys(names[:4], "killed") | dict.fromkeys(names[4:])
    work = _fake_work(tmp_path, codes, {"x_f": "aaa", "x_g": "new"}, {"x_f": "aaa", "x_g": "old"})
    calls = _fake_mutmut(monkeypatch, work, skip_first={names[5]})
    sample = mutation._run_sample(work, _TARGET, 6, 0, 20, 1, resume=True)
    out = capsys.readouterr().out
    # the map of g's tests was stale: dropped, so mutmut collects it again
    assert not (work / "mutants" / "mutmut-stats.json").exists() and "1 functions new or changed" in out
    # the first call ran the two of g; the one it left not checked ran by name after it
    assert sorted(calls[0]) == sorted(names[4:]) and calls[1:] == [[names[5]]]
    assert "1 mutants left unrun by mutmut; running them by name" in out
    mutation._report_sample("fake", mutation._classify(work, _TARGET), sample, threshold=0.85, list_survivors=False)
    assert "sample of 6 (of 6 drawn)" in capsys.readouterr().out


def test_resume_reruns_the_results_mutmut_reset(tmp_path, monkeypatch, capsys):
    """mutmut 3 resets every recorded result when its test selection changed (a test file added to the
    target): the kills --resume kept must run again, or the report counts them as not run."""
    names = [f"gcsim.fake.x_f__mutmut_{i}" for i in range(5)]
    codes = dict.fromkeys(names[:3], "killed") | dict.fromkeys(names[3:], "survived")
    work = _fake_work(tmp_path, codes, {"x_f": "aaa"}, {"x_f": "aaa"})
    calls = []

    def run(work_dir, run_names, max_children, *, log_mode="w"):
        calls.append(list(run_names))
        path = work_dir / "mutants" / "gcsim" / "fake.py.meta"
        meta = json.loads(path.read_text())
        if len(calls) == 1:  # the first run after the selection changed: every earlier verdict reset
            meta["exit_code_by_key"] = dict.fromkeys(meta["exit_code_by_key"])
        for n in run_names:
            meta["exit_code_by_key"][n] = 1
        path.write_text(json.dumps(meta))
        return 0

    monkeypatch.setattr(mutation, "_run_mutmut", run)
    monkeypatch.setattr(mutation, "_generate", lambda work_dir: 0)
    sample = mutation._run_sample(work, _TARGET, 5, 0, 20, 1, resume=True)
    out = capsys.readouterr().out
    # the survivors ran first; the three kills mutmut reset ran again, by name, in draw order
    assert sorted(calls[0]) == sorted(names[3:]) and sorted(calls[1]) == sorted(names[:3])
    assert calls[1] == [n for n in sample if n in names[:3]]
    assert "mutmut reset 3 results kept by --resume" in out
    mutation._report_sample("fake", mutation._classify(work, _TARGET), sample, threshold=0.85, list_survivors=False)
    assert "sample of 5 (of 5 drawn)" in capsys.readouterr().out


def test_a_mutant_still_unrun_is_neither_killed_nor_survived(tmp_path, monkeypatch, capsys):
    names = [f"gcsim.fake.x_f__mutmut_{i}" for i in range(3)]
    work = _fake_work(tmp_path, dict.fromkeys(names), {"x_f": "aaa"}, {"x_f": "aaa"})
    monkeypatch.setattr(mutation, "_run_mutmut", lambda *a, **k: 0)  # a mutmut that runs nothing
    monkeypatch.setattr(mutation, "_generate", lambda work_dir: 0)
    sample = mutation._run_sample(work, _TARGET, 3, 0, 20, 1, resume=True)
    out = capsys.readouterr().out
    assert "3 still not run (not counted)" in out and (work / "mutants" / "mutmut-stats.json").exists()
    mutants = mutation._classify(work, _TARGET)
    mutation._report_sample("fake", mutants, sample, threshold=0.85, list_survivors=False)
    assert "sample of 0 (of 3 drawn)" in capsys.readouterr().out
    assert mutation._report("fake", mutants, list_survivors=False) is None
    assert "0 of 3 mutants ran; number-changing 0/0 killed" in capsys.readouterr().out


def test_stale_map_sees_changed_functions_and_no_tests_verdicts():
    mutants = [
        mutation.Mutant("m.x_f__mutmut_1", "no tests", "number"),
        mutation.Mutant("m.x_f__mutmut_2", "killed", "number"),
    ]
    assert mutation._stale_map({"m.x_f": "a"}, {"m.x_f": "a"}, mutants, ["m.x_f__mutmut_2"]) == []
    assert mutation._stale_map({"m.x_f": "a", "m.x_h": "b"}, {"m.x_f": "a"}, mutants, [])[0].startswith("1 functions")
    reasons = mutation._stale_map({"m.x_f": "a"}, {"m.x_f": "a"}, mutants, ["m.x_f__mutmut_1"])
    assert reasons == ["1 mutants to run recorded 'no tests' (m.x_f__mutmut_1, ...)"]


def test_a_sample_of_named_functions_draws_from_their_mutants_in_the_module_draw_order(tmp_path, monkeypatch, capsys):
    """--sample K with --functions (or a target naming its functions): the draw is the module's draw
    with the other functions' mutants left out, and only those mutants run."""
    names = [f"gcsim.fake.x_f__mutmut_{i}" for i in range(6)] + [f"gcsim.fake.x_g__mutmut_{i}" for i in range(6)]
    work = _fake_work(tmp_path, dict.fromkeys(names), {"x_f": "aaa", "x_g": "bbb"}, {"x_f": "aaa", "x_g": "bbb"})
    calls = _fake_mutmut(monkeypatch, work, skip_first=set())
    globs = mutation._function_globs(list(_TARGET.modules), ["f"])
    sample = mutation._run_sample(work, _TARGET, 4, 0, 20, 1, resume=False, globs=globs)
    module_draw = mutation._draw(mutation._classify(work, _TARGET), 0)
    assert sample == [n for n in module_draw if "x_f_" in n][:4]
    assert sorted(n for call in calls for n in call) == sorted(sample)  # nothing of g ran
    mutation._report_sample(
        "fake", mutation._selected(work, _TARGET, globs), sample, threshold=0.85, list_survivors=False, scope="f's"
    )
    assert "sample of 4 (of 4 drawn) from the f's 6 number-changing mutants (6 in all); 4/4 killed" in (
        capsys.readouterr().out
    )


def test_a_run_without_mutmut_is_refused_up_front(tmp_path, monkeypatch, capsys):
    """No mutmut beside the interpreter: a clear refusal before anything is prepared (it used to run,
    find nothing and report "0 of 0 mutants ran")."""
    monkeypatch.setattr(mutation.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(SystemExit) as info:
        mutation.main(["coding.quantize"])
    assert info.value.code == 2 and "mutmut is not installed" in capsys.readouterr().err
