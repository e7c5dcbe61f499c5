"""One meaning per flag (#23 item 4): the parser is walked, every option checked against the vocabulary.

``gcsim.app.flags.VOCABULARY`` gives each flag one meaning and one type; every use of the flag, in
every command and subcommand, must have that type and a help text that begins with that meaning.
A new flag, or an old one used with another meaning, fails here.  Deprecated spellings are hidden
aliases that print one line naming the new flag and parse to the same value.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from gcsim.app.cli import build_parser, main
from gcsim.app.common import UsageError, normalize_stragglers
from gcsim.app.flags import (
    DEPRECATED_COMMANDS,
    VOCABULARY,
    DeprecatedAlias,
    RemovedFlag,
    type_class,
    vocabulary_table,
)

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "cli.md"


def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """(command words, parser) of every command and subcommand."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*prefix, name))


def uses() -> list[tuple[str, str, argparse.Action]]:
    """(command, option string, action) of every visible option (hidden old and removed spellings skipped)."""
    out = []
    for words, p in commands(build_parser()):
        for action in p._actions:
            if isinstance(action, (argparse._HelpAction, DeprecatedAlias, RemovedFlag)):
                continue
            for option in action.option_strings:
                out.append((" ".join(words) or "gcsim", option, action))
    return out


def test_every_flag_is_in_the_vocabulary():
    unknown = sorted({f"{opt} ({cmd})" for cmd, opt, _ in uses() if opt not in VOCABULARY})
    assert not unknown, "add to gcsim/app/flags.py VOCABULARY: " + ", ".join(unknown)


def test_a_flag_has_one_type_and_one_meaning_across_commands():
    bad = []
    for cmd, opt, action in uses():
        flag = VOCABULARY.get(opt)
        if flag is None:
            continue
        if type_class(action) != flag.type:
            bad.append(f"{cmd} {opt}: type {type_class(action)!r}, the vocabulary says {flag.type!r}")
        text = action.help or ""
        if not text.startswith(flag.meaning):
            bad.append(f"{cmd} {opt}: help {text[:60]!r} does not start with {flag.meaning!r}")
    assert not bad, "\n".join(bad)


def test_the_check_can_fail():
    """The same walk finds a flag given two types, as ``--stragglers`` was (an integer and KIND:VALUES)."""
    p = argparse.ArgumentParser()
    p.add_argument("--stragglers", type=int, help="number of stragglers s")
    action = next(a for a in p._actions if "--stragglers" in a.option_strings)
    assert type_class(action) != VOCABULARY["--stragglers"].type
    assert not (action.help or "").startswith(VOCABULARY["--stragglers"].meaning + ":")


def test_the_renamed_meanings():
    """--workers is n everywhere, the Dask processes are --processes, the ring size is --workers."""
    by = {(cmd, opt): action for cmd, opt, action in uses()}
    for cmd in ("advise", "decode-time", "cerar run", "cerar design", "cerar pareto", "cerar simulate"):
        assert (cmd, "--workers") in by, cmd
    for cmd in ("error", "bounds", "reproduce", "cerar pareto", "advise"):
        assert (cmd, "--processes") in by and (cmd, "--workers") not in by or cmd in ("cerar pareto", "advise")
    assert all(opt != "--N" for _, opt, _ in uses())
    assert {cmd for cmd, _, _ in uses()} >= {"cerar run", "gc run"}
    assert not {"run-cerar", "run-gc"} & {cmd for cmd, _, _ in uses()}


@pytest.mark.parametrize(
    "old,new,note",
    [
        (["cerar", "rates", "--N", "5", "--json"], ["cerar", "rates", "--workers", "5", "--json"], "--N"),
        (
            [
                "decode-time",
                "--workers",
                "5",
                "--delays",
                "shifted-exponential:shift=1,rate=2",
                "--rule",
                "first:s=1",
                "--method",
                "exact",
                "--json",
            ],
            [
                "decode-time",
                "--workers",
                "5",
                "--delays",
                "shifted-exponential:shift=1,rate=2",
                "--rule",
                "first:s=1",
                "--evaluation",
                "exact",
                "--json",
            ],
            "--method",
        ),
        (
            ["run-cerar", "--engine", "numpy", "--workers", "3", "--c", "3", "--d", "8", "--json"],
            ["cerar", "run", "--engine", "numpy", "--workers", "3", "--c", "3", "--d", "8", "--json"],
            "run-cerar",
        ),
        (
            [
                "error",
                "--design",
                "petersen",
                "--m",
                "1",
                "--method",
                "naive",
                "-s",
                "1",
                "--samples",
                "50",
                "--json",
                "--workers",
                "2",
            ],
            [
                "error",
                "--design",
                "petersen",
                "--m",
                "1",
                "--method",
                "naive",
                "-s",
                "1",
                "--samples",
                "50",
                "--json",
                "--processes",
                "2",
            ],
            "--workers",
        ),
    ],
)
def test_deprecated_spellings_warn_naming_the_new_one_and_mean_the_same(capsys, old, new, note):
    code_new = main(new)
    out_new, err_new = capsys.readouterr()
    code_old = main(old)
    out_old, err_old = capsys.readouterr()
    assert code_old == code_new
    assert "deprecated" not in err_new
    warning = [line for line in err_old.splitlines() if "is deprecated" in line]
    assert len(warning) == 1 and note in warning[0] and "use " in warning[0], err_old
    if code_new == 0:  # the same numbers (wall-clock timings aside)
        assert _untimed(json.loads(out_old)) == _untimed(json.loads(out_new))


def _untimed(payload: dict) -> dict:
    return {k: v for k, v in payload.items() if "seconds" not in k and "time" not in k}


def test_deprecated_commands_are_rewritten():
    assert DEPRECATED_COMMANDS == {"run-cerar": ("cerar", "run"), "run-gc": ("gc", "run")}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["error", "--design", "petersen", "--stragglers", "often"], "must be S (a number of stragglers) or KIND"),
        (["error", "--design", "petersen", "--stragglers", "all:2", "--model", "worst"], "disagrees with --model"),
        # gc run runs every model (the coded trainer, #31); a value out of the model's range is refused
        (["gc", "run", "--design", "petersen", "--stragglers", "bernoulli:2"], "p: must be < 1.0"),
    ],
)
def test_straggler_specs_are_one_grammar_and_refusals_name_the_flag(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--stragglers" in err and message in err, err


def test_bounds_verify_runs_every_registered_kind(capsys):
    """bounds verify reads the straggler registry (it refused markov with its own list of four kinds)."""
    argv = ["bounds", "verify", "--design", "petersen", "--m", "1", "--samples", "20", "--draws", "2", "--json"]
    assert main([*argv, "--stragglers", "markov:0.1,0.5"]) == 0
    assert "Markov" in json.loads(capsys.readouterr().out)["model"]


def test_a_command_refuses_the_kinds_it_does_not_run_naming_them():
    args = argparse.Namespace(stragglers="markov:0.1,0.5", model="fixed")
    with pytest.raises(UsageError, match=r"--stragglers: markov is not one of the models this command runs \(fixed\)"):
        normalize_stragglers(args, ("fixed",))


def test_a_straggler_spec_means_the_same_as_the_old_flags(capsys):
    base = ["error", "--design", "petersen", "--m", "1", "--method", "naive", "--json"]
    assert main([*base, "--model", "all", "-s", "2"]) == 0
    old = capsys.readouterr().out
    assert main([*base, "--stragglers", "all:2"]) == 0
    assert capsys.readouterr().out == old
    assert main([*base, "--model", "bernoulli", "--p", "0.2", "--samples", "100"]) == 0
    old = capsys.readouterr().out
    assert main([*base, "--stragglers", "bernoulli:0.2", "--samples", "100"]) == 0
    assert capsys.readouterr().out == old


def test_the_guide_shows_the_vocabulary():
    text = GUIDE.read_text(encoding="utf-8")
    assert vocabulary_table() in text, "docs/guides/cli.md: paste gcsim.app.flags.vocabulary_table()"
    for old in ("run-cerar", "run-gc"):
        assert re.search(rf"`gcsim {old} \.\.\.` \(deprecated\)", text), old


def test_catalogue_out_takes_its_folder(tmp_path, capsys):
    assert main(["catalogue", "--out", str(tmp_path / "cat"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(r["file"] == "exported" for r in rows), rows[:2]
    assert (tmp_path / "cat" / "bibd" / "pg2_9.json").is_file()
    for old in (["--dir", str(tmp_path / "cat"), "--export"], ["--export", str(tmp_path / "cat")]):  # old spellings
        assert main(["catalogue", *old, "--json"]) == 0
        out, err = capsys.readouterr()
        assert "--export is deprecated: use --out DIR" in err
        assert {r["file"] for r in json.loads(out)["rows"]} == {"matches"}
    assert main(["catalogue", "--dir", str(tmp_path / "a"), "--out", str(tmp_path / "b")]) == 2
    assert "give one folder" in capsys.readouterr().err


def test_pareto_workers_with_a_local_scheduler_says_it_is_the_ring_size(monkeypatch, capsys):
    """``cerar pareto --workers`` was the Dask processes: with --scheduler local and no --processes, one note."""
    import gcsim.cerar.pareto as pareto
    from gcsim.errors import InvalidArgumentError

    def stop(N, *args, **kwargs):
        raise InvalidArgumentError("N", f"stopped at N = {N}")

    monkeypatch.setattr(pareto, "pareto_front", stop)
    assert main(["cerar", "pareto", "--workers", "6", "--scheduler", "local"]) == 2
    err = capsys.readouterr().err
    assert "--workers 6 is the ring size N" in err and "stopped at N = 6" in err, err
    assert main(["cerar", "pareto", "--workers", "6", "--scheduler", "local", "--processes", "2"]) == 2
    assert "ring size" not in capsys.readouterr().err
