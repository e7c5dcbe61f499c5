"""Size limits raised from the shell (#23 item 4): ``gcsim --limit NAME=VALUE`` and ``GCSIM_MAX_*``.

``gcsim.limits`` reads ``GCSIM_<NAME>`` when imported (a malformed value warns and keeps the
default; the ``gcsim`` command refuses it, exit 2); ``--limit`` sets a limit for one command and
restores it afterwards.  The counts are exact: ``--stragglers all:2`` on the Petersen graph
enumerates C(10, 2) = 45 patterns (Monte Carlo is not involved).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from gcsim import limits
from gcsim.app.cli import main
from gcsim.errors import InvalidArgumentError

ALL_PATTERNS = ["error", "--design", "petersen", "--stragglers", "all:2", "--json"]
PATTERNS = math.comb(10, 2)  # what 'all' enumerates at s = 2 on n = 10 workers


def _gcsim(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GCSIM_MAX_")} | (env or {})
    return subprocess.run([sys.executable, "-m", "gcsim", *argv], capture_output=True, text=True, env=full, timeout=120)


def test_the_count_is_what_the_limit_is_compared_with(monkeypatch, capsys):
    monkeypatch.setattr(limits, "MAX_PATTERNS", PATTERNS)
    assert main(ALL_PATTERNS) == 0
    monkeypatch.setattr(limits, "MAX_PATTERNS", PATTERNS - 1)
    assert main(ALL_PATTERNS) == 2
    err = capsys.readouterr().err
    assert f"{PATTERNS}" in err and "MAX_PATTERNS" in err
    assert "raise it: gcsim --limit MAX_PATTERNS=N ... or GCSIM_MAX_PATTERNS=N" in err, err


def test_limit_flag_raises_a_limit_for_one_command_only(monkeypatch, capsys):
    monkeypatch.setattr(limits, "MAX_PATTERNS", PATTERNS - 1)  # this process's limit: too small
    assert main(ALL_PATTERNS) == 2
    assert main(["--limit", f"MAX_PATTERNS={PATTERNS}", *ALL_PATTERNS]) == 0
    assert limits.MAX_PATTERNS == PATTERNS - 1  # restored when the command ends
    assert main(["--limit", "patterns=2**6", *ALL_PATTERNS]) == 0  # case, MAX_ and the power form optional
    capsys.readouterr()


@pytest.mark.parametrize(
    "value,message",
    [
        ("MAX_PATTERNS", "must be NAME=VALUE"),
        ("MAX_NOTHING=5", "must be NAME=VALUE with NAME one of MAX_DENSE_ENTRIES"),
        ("MAX_PATTERNS=0", "must be a positive integer"),
        ("MAX_PATTERNS=-3", "must be a positive integer"),
        ("MAX_PATTERNS=1.5", "must be a positive integer"),
        ("MAX_PATTERNS=nan", "must be a positive integer"),
        ("MAX_PATTERNS=1e-3", "must be a positive integer"),
    ],
)
def test_bad_limit_flags_are_refused_naming_the_flag(capsys, value, message):
    assert main(["--limit", value, *ALL_PATTERNS]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcsim: error: --limit: ") and message in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "text,value",
    [("67108864", 2**26), ("67_108_864", 2**26), ("2**26", 2**26), ("6.7e7", 67_000_000), ("1E8", 10**8), (" 5 ", 5)],
)
def test_parse_limit_forms(text, value):
    assert limits.parse_limit("x", text) == value


@pytest.mark.parametrize("text", ["", "0", "2**1000", "6.75e0", "1e200", "ten", "0x10", "1_", "٣"])
def test_parse_limit_refusals(text):
    with pytest.raises(InvalidArgumentError, match="must be a positive integer"):
        limits.parse_limit("GCSIM_MAX_PATTERNS", text)


def test_environment_sets_the_default_of_every_command():
    lowered = _gcsim(*ALL_PATTERNS, env={"GCSIM_MAX_PATTERNS": str(PATTERNS - 1)})
    assert lowered.returncode == 2 and "MAX_PATTERNS" in lowered.stderr, lowered.stderr
    exact = _gcsim(*ALL_PATTERNS, env={"GCSIM_MAX_PATTERNS": str(PATTERNS)})
    assert exact.returncode == 0, exact.stderr
    flag_wins = _gcsim("--limit", f"MAX_PATTERNS={PATTERNS}", *ALL_PATTERNS, env={"GCSIM_MAX_PATTERNS": "3"})
    assert flag_wins.returncode == 0, flag_wins.stderr


def test_a_malformed_environment_value_warns_on_import_and_the_command_refuses_it():
    env = {"GCSIM_MAX_DENSE_ENTRIES": "lots"}
    cli = _gcsim("exists", "bibd", "7", "3", "1", env=env)
    assert cli.returncode == 2
    assert "gcsim: error: GCSIM_MAX_DENSE_ENTRIES: must be a positive integer" in cli.stderr, cli.stderr
    full = {k: v for k, v in os.environ.items() if not k.startswith("GCSIM_MAX_")} | env
    code = "import gcsim.limits as L; print(L.MAX_DENSE_ENTRIES, sorted(L.environment_problems()))"
    py = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60)
    assert py.returncode == 0 and py.stdout.split() == [str(2**24), "['GCSIM_MAX_DENSE_ENTRIES']"], py
    assert "LimitWarning: GCSIM_MAX_DENSE_ENTRIES" in py.stderr and "ignored" in py.stderr


def test_every_limit_has_a_default_and_an_attribute():
    for name, default in limits.DEFAULTS.items():
        assert isinstance(default, int) and default > 0
        assert isinstance(getattr(limits, name), int) and name in limits.__all__
