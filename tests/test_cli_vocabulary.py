"""One vocabulary across every command (#34 item 4): the parser is walked, every command checked.

The words every command shares, each checked on every command and subcommand found by walking
``build_parser()`` (so a new command that spells one differently fails here, naming it):

* the output folder is ``--out DIR`` (``--export`` survives only as a hidden deprecated alias);
* stragglers are ``--stragglers KIND:VALUE``; ``--model`` and ``--p`` are hidden deprecated aliases;
* ``--m`` is 1 when not given (:data:`gcsim.app.common.M_DEFAULT`);
* every usage error of every command and subcommand, and every refusal, starts ``gcsim: error:``;
* ``advise --load 8/57`` is the fraction 8/57.

And every command that writes checks its folder, and an earlier export in it, before any work: the
work itself is replaced by a function that fails the test if it is reached.
"""

from __future__ import annotations

import argparse
import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exact_lstsq import lstsq_error
from gcsim.app.cli import build_parser, main
from gcsim.app.common import M_DEFAULT
from gcsim.app.flags import VOCABULARY, DeprecatedAlias, type_class

#: every command that writes a folder (a new one must be added here, and take --out)
WRITERS = {
    ("construct",),
    ("catalogue",),
    ("advise",),
    ("cerar", "design"),
    ("cerar", "optimize"),
    ("cerar", "simulate"),
    ("decoder-table",),
    ("train",),
    ("reproduce",),
}
#: the commands whose folder was --export before #34: it is their deprecated alias now
EXPORT_ALIASES = {
    ("construct",),
    ("catalogue",),
    ("advise",),
    ("cerar", "design"),
    ("cerar", "optimize"),
    ("cerar", "simulate"),
}
#: every command that takes stragglers
STRAGGLERS = {("error",), ("bounds",), ("advise",), ("train",), ("gc", "run")}
#: every command that builds a code and so takes --m
M_COMMANDS = {("error",), ("bounds",), ("decoder-table",), ("advise",), ("gc", "run")}
#: spellings of an output folder that no command may show
OTHER_FOLDER_SPELLINGS = {"--export", "--output", "-o", "--out-dir", "--output-dir", "--outdir", "--folder"}


def _leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, parser) of every command without subcommands, however deep."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and words:
        yield words, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*words, name))


LEAVES = dict(_leaves(build_parser()))


def _visible(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        o: a
        for a in p._actions
        if not isinstance(a, (argparse._HelpAction, DeprecatedAlias)) and a.help != argparse.SUPPRESS
        for o in a.option_strings
    }


def _hidden(p: argparse.ArgumentParser) -> dict[str, DeprecatedAlias]:
    return {o: a for a in p._actions if isinstance(a, DeprecatedAlias) for o in a.option_strings}


def test_the_walk_sees_every_command():
    assert len(LEAVES) >= 17 and WRITERS | STRAGGLERS | M_COMMANDS <= set(LEAVES), sorted(LEAVES)


# --------------------------------------------------------------------------------- the output folder


def test_the_output_folder_is_out_in_every_command_that_writes():
    writers = {words for words, p in LEAVES.items() if "--out" in _visible(p)}
    assert writers == WRITERS, f"take --out: {sorted(WRITERS - writers)}; not a writer: {sorted(writers - WRITERS)}"
    bad = []
    for words, p in LEAVES.items():
        shown = _visible(p)
        bad += [f"{' '.join(words)} {o}" for o in OTHER_FOLDER_SPELLINGS & set(shown)]
        bad += [  # a folder flag under another name: its help says it is an output folder
            f"{' '.join(words)} {o}: {a.help[:40]!r}"
            for o, a in shown.items()
            if o != "--out" and (a.help or "").startswith(("output folder", "export into"))
        ]
        if "--out" in shown:
            assert shown["--out"].help.startswith(VOCABULARY["--out"].meaning), words
            assert type_class(shown["--out"]) == "text" and shown["--out"].nargs is None, words
    assert not bad, "\n".join(bad)


def test_export_is_a_deprecated_alias_of_out_where_it_was_the_folder():
    aliased = {words for words, p in LEAVES.items() if "--export" in _hidden(p)}
    assert aliased == EXPORT_ALIASES
    for words in aliased:
        alias = _hidden(LEAVES[words])["--export"]
        assert alias.dest == "out" and alias.new.startswith("--out"), words


@pytest.mark.parametrize("spelling", ["--out", "--export"])
def test_export_writes_what_out_writes_with_one_warning(tmp_path, capsys, spelling):
    folder = tmp_path / spelling.strip("-")
    assert main(["construct", "bibd", "7", "3", "1", spelling, str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    written = Path(json.loads(out)["exported"])
    assert written == folder / "bibd" / "7_7_3_3_1.json"
    A = np.load(written.with_suffix(".npz"))["assignment"]
    # the Fano plane, checked independently: 7 lines of 3 points, two points on exactly one line
    assert A.shape == (7, 7) and (A.sum(axis=0) == 3).all() and ((A @ A.T) - np.diag(np.diag(A @ A.T)) == 1).sum() == 42
    warnings = [line for line in err.splitlines() if "deprecated" in line]
    if spelling == "--out":
        assert not warnings, err
    else:
        assert warnings == [
            "gcsim: warning: --export is deprecated: use --out (--out is the output folder of every command)"
        ]


# ---------------------------------------------------------------------------------------- stragglers


def test_stragglers_are_one_flag_of_one_grammar():
    found, bad = set(), []
    for words, p in LEAVES.items():
        shown = _visible(p)
        for o, a in shown.items():
            if a.dest in ("stragglers", "model", "p") or o in ("--model", "--p", "--stragglers", "-s"):
                if o not in ("--stragglers", "-s") or type_class(a) != "straggler spec":
                    bad.append(f"{' '.join(words)} {o} ({type_class(a)})")
                found.add(words)
        for o, alias in _hidden(p).items():  # the old spellings: hidden, and naming the new one
            if o in ("--model", "--p"):
                assert alias.new.startswith("--stragglers"), (words, o, alias.new)
    assert not bad, "one straggler flag, --stragglers KIND:VALUE: " + ", ".join(bad)
    assert found == STRAGGLERS


@pytest.mark.parametrize(
    "old,new",
    [
        (["--model", "all", "-s", "2"], ["--stragglers", "all:2"]),
        (["--model", "worst", "-s", "2"], ["--stragglers", "worst:2"]),
        (
            ["--model", "bernoulli", "--p", "0.3", "--samples", "200"],
            ["--stragglers", "bernoulli:0.3", "--samples", "200"],
        ),
    ],
)
def test_the_old_straggler_flags_warn_and_mean_the_same(capsys, old, new):
    base = ["error", "--design", "petersen", "--m", "1", "--method", "naive", "--json"]
    assert main([*base, *new]) == 0
    out_new, err_new = capsys.readouterr()
    assert main([*base, *old]) == 0
    out_old, err_old = capsys.readouterr()
    assert json.loads(out_old) == json.loads(out_new) and "deprecated" not in err_new
    notes = [line for line in err_old.splitlines() if "is deprecated: use --stragglers" in line]
    assert len(notes) == len([w for w in old if w in ("--model", "--p")]), err_old


def test_train_takes_bernoulli_stragglers_and_refuses_other_kinds_before_reading_data(capsys, monkeypatch):
    import gcsim.learning.datasets as datasets

    def no_data(*args, **kwargs):
        raise AssertionError("the data was read before the refusal")

    monkeypatch.setattr(datasets, "load_dataset", no_data)
    assert main(["train", "--dataset", "digits", "--stragglers", "fixed:2", "--iterations", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcsim: error: --stragglers: without --code") and "bernoulli:P" in err, err
    assert main(["train", "--stragglers", "bernoulli:0.1", "--p", "0.1"]) == 2
    assert "not both" in capsys.readouterr().err
    ns = build_parser().parse_args(["train", "--p", "0.3"])
    assert ns.p == 0.3 and ns.stragglers is None
    assert "--p is deprecated: use --stragglers bernoulli:P" in capsys.readouterr().err


# -------------------------------------------------------------------------------------------- --m


def test_m_is_one_when_not_given_in_every_command():
    found, bad = set(), []
    for words, p in LEAVES.items():
        action = _visible(p).get("--m")
        if action is None:
            continue
        found.add(words)
        stated = action.default == M_DEFAULT or (action.default is None and f"default {M_DEFAULT}" in action.help)
        if not stated or type_class(action) != "integer":
            bad.append(f"{' '.join(words)}: default {action.default!r}, help {action.help!r}")
    assert not bad, "\n".join(bad)
    assert found == M_COMMANDS and M_DEFAULT == 1


def test_error_without_m_is_m_1_with_a_note_and_the_independent_value(capsys):
    """Omitted, ``--m`` is 1: the Petersen graph's naive code at m = 1 is A = Adj + I itself; the expected
    optimal error over every pair of stragglers is re-derived by lstsq on the 45 column subsets."""
    assert main(["error", "--design", "petersen", "--method", "naive", "--stragglers", "all:2", "--json"]) == 0
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert payload["m"] == 1
    assert "--m not given: m = 1" in err and "default was 2" in err, err
    import gcsim

    A = gcsim.srg(10, 3, 0, 1).assignment.astype(float)
    errors = [lstsq_error(A, ~np.isin(np.arange(10), S), 1) for S in itertools.combinations(range(10), 2)]
    assert payload["mean"] == pytest.approx(float(np.mean(errors)), rel=1e-9, abs=1e-12)


def test_decoder_table_without_m_is_m_1(tmp_path, capsys):
    argv = ["decoder-table", "--design", "bibd:7,3,1", "--s-max", "1", "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["m"] == 1 and "--m not given" in err
    assert main([*argv[:3], "--m", "1", *argv[3:], "--name", "explicit"]) == 0
    assert "--m not given" not in capsys.readouterr().err


# ------------------------------------------------------------------------------------- error prefix


def _usage_case(words: tuple[str, ...], p: argparse.ArgumentParser) -> tuple[list[str], str] | None:
    """A typed option of the command given a word it refuses: the argv, and the flag the error must name."""
    for action in p._actions:
        if action.option_strings and not isinstance(action, DeprecatedAlias) and type_class(action) == "integer":
            return [*words, action.option_strings[0], "x"], action.option_strings[0]
    return None


@pytest.mark.parametrize("words", sorted(LEAVES), ids=" ".join)
def test_every_command_prefixes_its_usage_errors(words, capsys):
    assert main([*words, "--no-such-flag"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gcsim: error: "), err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    case = _usage_case(words, LEAVES[words])
    if case is not None:
        argv, flag = case
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"gcsim: error: {flag}") and "argument " not in err, err
        assert err.rstrip().endswith(f"(see `gcsim {' '.join(words)} --help`)"), err


@pytest.mark.parametrize("words", [("cerar",), ("gc",), ()], ids=lambda w: " ".join(w) or "gcsim")
def test_command_groups_prefix_theirs(words, capsys):
    assert main(list(words)) == 2
    assert capsys.readouterr().err.startswith("gcsim: error: ")


def test_refusals_and_failures_share_the_prefix(tmp_path, capsys):
    assert main(["error", "--design", "bibd:7,3,1,9"]) == 2  # a value the command refuses
    assert capsys.readouterr().err.startswith("gcsim: error: --design: bibd takes 2 to 3 parameters")
    (tmp_path / "bad.json").write_text("not json")
    assert main(["load", str(tmp_path / "bad.json")]) == 1  # a refused file
    assert capsys.readouterr().err.startswith("gcsim: error: refused: manifest ")
    assert (
        main(["advise", "-n", "13", "--load", "1e-300", "--stragglers", "fixed:1", "--samples", "100", "--json"]) == 1
    )
    assert capsys.readouterr().err.startswith("gcsim: error: no candidate fits the question")


# ------------------------------------------------------------------------------------------ --load


def test_a_load_fraction_a_over_b(capsys):
    ns = build_parser().parse_args(["advise", "-n", "57", "--load", "8/57", "--stragglers", "fixed:1"])
    assert ns.load == float(Fraction(8, 57))
    for text, shown in (("57/8", "57/8 = 7.125"), ("0/5", "0/5 = 0"), ("5/0", "5/0"), ("8/x", "'8/x'")):
        assert main(["advise", "-n", "57", "--load", text, "--stragglers", "fixed:1"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gcsim: error: --load: ") and shown in err, err


def test_advise_load_a_over_b_caps_the_data_fraction(capsys):
    """``--load 4/13`` caps each worker at 4/13 of the data, as ``--load 4`` on 13 workers does."""
    base = ["advise", "-n", "13", "--m", "2", "--stragglers", "fixed:2", "--samples", "100", "--json"]
    assert main([*base, "--load", "4/13"]) == 0
    rows = json.loads(capsys.readouterr().out)["candidates"]
    assert rows and all(Fraction(r["data_fraction"]).limit_denominator(10**6) <= Fraction(4, 13) for r in rows)
    assert main([*base, "--load", "4"]) == 0
    by_parts = json.loads(capsys.readouterr().out)["candidates"]
    assert sorted(r["name"] for r in rows) == sorted(r["name"] for r in by_parts)


# ---------------------------------------------------------------------- output folders before work

#: a sample command line of every writer, without its folder
SAMPLES = {
    ("construct",): ["construct", "bibd", "7", "3", "1"],
    ("catalogue",): ["catalogue"],
    ("advise",): ["advise", "-n", "13", "--load", "4", "--m", "2", "--stragglers", "fixed:1"],
    ("cerar", "design"): ["cerar", "design", "--workers", "3", "--c", "5"],
    ("cerar", "optimize"): ["cerar", "optimize", "--workers", "3", "--c", "4", "--kappa", "5", "--max-iter", "1"],
    ("cerar", "simulate"): ["cerar", "simulate", "--workers", "3", "--c", "5", "--d", "8"],
    ("decoder-table",): ["decoder-table", "--design", "bibd:7,3,1", "--m", "2", "--s-max", "1"],
    ("train",): ["train", "--dataset", "digits", "--iterations", "1", "--codes", "uncoded"],
    ("reproduce",): ["reproduce"],
}


def test_every_writer_has_a_sample():
    assert set(SAMPLES) == WRITERS


@pytest.mark.parametrize("words", sorted(SAMPLES), ids=" ".join)
@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_an_output_folder_that_cannot_be_one_is_refused_first(words, where, tmp_path, capsys):
    (tmp_path / "f").write_text("not a folder")
    folder = tmp_path / "f" if where == "a file" else tmp_path / "f" / "below"
    assert main([*SAMPLES[words], "--out", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("gcsim: error: --out: ") and len(err.splitlines()) == 1 and out == "", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def _reached(*args, **kwargs):
    raise AssertionError("the work started before the output folder was checked")


#: writer, its argv (``{d}``: the folder), the earlier export planted, and the work that must not start
EARLIER = [
    (
        "construct",
        ["construct", "bibd", "7", "3", "1", "--out", "{d}"],
        "bibd/7_7_3_3_1.json",
        "gcsim.app.specs.FamilySpec.build",
    ),
    (
        "construct --name",
        ["construct", "srg", "10", "3", "0", "1", "--out", "{d}", "--name", "pet"],
        "srg/pet.npz",
        "gcsim.app.specs.FamilySpec.build",
    ),
    ("decoder-table", [*SAMPLES[("decoder-table",)], "--out", "{d}"], "decoders_s1.json", "gcsim.app.specs.design_arg"),
    (
        "cerar design --name",
        [*SAMPLES[("cerar", "design")], "--out", "{d}", "--name", "mine"],
        "mine.json",
        "gcsim.cerar.factory.design",
    ),
    (
        "cerar optimize --name",
        [*SAMPLES[("cerar", "optimize")], "--out", "{d}", "--name", "o"],
        "o.npz",
        "gcsim.cerar.factory.design",
    ),
    (  # no --name: an optimized design's name is known from --kappa before the optimization
        "cerar optimize --kappa",
        [*SAMPLES[("cerar", "optimize")], "--out", "{d}"],
        "optimized_N3_c4_kappa5.json",
        "gcsim.cerar.factory.design",
    ),
    ("advise", [*SAMPLES[("advise",)], "--out", "{d}"], "rank1_bibd_rd/advice.json", "gcsim.advisor.advise"),
]


@pytest.mark.parametrize("case", EARLIER, ids=[c[0] for c in EARLIER])
def test_an_earlier_export_is_refused_before_any_work_and_force_goes_on(case, tmp_path, capsys, monkeypatch):
    _, argv, planted, work = case
    module, _, attr = work.rpartition(".")
    owner: object
    if module.endswith("FamilySpec"):
        from gcsim.app.specs import FamilySpec as owner
    else:
        import importlib

        owner = importlib.import_module(module)
    monkeypatch.setattr(owner, attr, _reached)
    (tmp_path / planted).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / planted).write_text("{}")
    argv = [a.format(d=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcsim: error: --out: ") and "--force" in err and len(err.splitlines()) == 1, err
    with pytest.raises(AssertionError, match="the work started"):  # with --force the work starts
        main([*argv, "--force"])
