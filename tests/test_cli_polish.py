"""CLI polish (issue #12 §6): defaults in --help, per-action cerar help, the precision-aware default ε,
messages that name the flag, tidy output, progress bars only on a terminal, reproduce stage by stage."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from gcsim.app import reproduce as rep
from gcsim.app.cli import build_parser, main
from gcsim.app.common import show_progress, table


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _parsers(parser: argparse.ArgumentParser, path=("gcsim",)):
    """Every (sub)parser of the command line with its command path, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _squash(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------------------- 1. defaults and per-action help


def _option_entries(helptext: str) -> dict[str, str]:
    """Option string -> its help entry (squashed), from the ``options:`` section of a help text."""
    section = helptext.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, str] = {}
    current: list[str] = []
    for line in section.splitlines() + ["  -END"]:
        if line.startswith("  -"):  # a new option entry begins
            if current:
                text = _squash(" ".join(current))
                for flag in re.findall(r"(?:^|, )(-{1,2}[\w-]+)", text):
                    entries[flag] = text
            current = [line]
        else:
            current.append(line)
    return entries


def test_every_default_is_shown_in_help():
    """Each option that has a default (not None, not a switch) shows ``(default: X)`` in its own help entry."""
    checked = 0
    for path, parser in _parsers(build_parser()):
        entries = _option_entries(parser.format_help())
        for action in parser._actions:
            d = action.default
            if not action.option_strings or d is None or isinstance(d, bool) or d is argparse.SUPPRESS:
                continue
            if action.help == argparse.SUPPRESS:  # a hidden deprecated spelling (--model, --p): no help entry
                continue
            shown = ",".join(map(str, d)) if isinstance(d, (list, tuple)) else str(d)
            assert f"(default: {shown})" in entries[action.option_strings[0]], (path, action.option_strings)
            checked += 1
    assert checked > 60  # every command was walked (cerar's four actions included)


def test_bounds_help_shows_its_own_samples_default(capsys):
    """`bounds verify` sets samples=200 over the shared 2000: the help must show the value in force."""
    code, out, _ = run(capsys, "bounds", "--help")
    assert code == 0
    assert "(default: 200)" in _option_entries(out)["--samples"]


@pytest.mark.parametrize(
    "action,present,absent",
    [
        ("design", ["--method", "--eps", "--out", "--dtype"], ["--d D", "--design DESIGN"]),
        ("optimize", ["--kappa", "--max-iter", "--objective", "--out"], ["--method", "--d D", "--dtype"]),
        ("simulate", ["--d D", "--dtype", "--design DESIGN", "--method"], []),
        ("rates", ["--workers", "--c"], ["--eps", "--out", "--method", "--kappa"]),
    ],
)
def test_cerar_actions_have_their_own_flags(capsys, action, present, absent):
    code, out, _ = run(capsys, "cerar", action, "--help")
    assert code == 0 and out.startswith(f"usage: gcsim cerar {action}")
    for flag in present:
        assert flag in out, flag
    for flag in absent:
        assert flag not in out, flag


def test_cerar_old_spelling_and_missing_action(capsys):
    code, out, _ = run(capsys, "cerar", "design", "--workers", "4", "--c", "8", "--json")
    p = json.loads(out)
    assert code == 0 and (p["N"], p["c"], p["L"]) == (4, 8, 10)  # L = c + N - 2
    code, _, err = run(capsys, "cerar")
    assert code == 2 and "ACTION" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- 2. the precision-aware default ε


def test_default_eps_beats_0_05_on_the_documented_run(capsys):
    """`gcsim cerar run --engine numpy --workers 4 --c 8 --d 4096` (float32): without --eps the ε predicted
    by docs/theory.md §50.5 is used, u^(1/(r*+1)) = (2^-24)^(1/2) = 2^-12 for r* = 1 (c = 8 <= 2N), and it
    beats the old ε = 0.05 (whose approximation error alone is ~10%)."""
    argv = ["cerar", "run", "--engine", "numpy", "--workers", "4", "--c", "8", "--d", "4096", "--json"]
    code, out, _ = run(capsys, *argv)
    default = json.loads(out)
    code2, out2, _ = run(capsys, *argv, "--eps", "0.05")
    old = json.loads(out2)
    assert code == code2 == 0
    assert default["eps"] == 2.0**-12 and "float32" in default["eps_choice"]
    assert "eps_choice" not in old  # an explicit --eps is used as given
    assert default["max_rel_error"] < old["max_rel_error"] / 10
    assert old["max_rel_error"] > 0.05  # the failure the issue reports (10.7 %)


def test_default_eps_is_said_in_the_text(capsys):
    code, out, _ = run(capsys, "cerar", "run", "--engine", "numpy", "--workers", "4", "--c", "8", "--d", "64")
    assert code == 0
    assert re.search(r"ε = 0\.000244\d*: predicted optimal for float32: u\^\(1/\(r\*\+1\)\) with r\* = 1", out), out
    assert "docs/theory.md §50.5" in out and "--eps overrides" in out


@pytest.mark.parametrize(
    "argv,eps",
    [
        (["cerar", "design"], 2.0**-12),  # design: meant for float32 by default
        (["cerar", "design", "--dtype", "bfloat16"], 2.0**-4),  # u = 2^-8
        (["cerar", "simulate", "--d", "16"], 2.0**-26.5),  # simulate runs in float64 by default: u = 2^-53
    ],
)
def test_cerar_design_and_simulate_default_eps_follow_the_dtype(capsys, argv, eps):
    code, out, _ = run(capsys, *argv, "--workers", "4", "--c", "8", "--json")
    p = json.loads(out)
    assert code == 0 and p["method"] == "perturbation"
    assert p["eps"] == pytest.approx(eps, rel=1e-12)


def test_default_eps_simulate_float32_beats_0_05(capsys):
    base = ["cerar", "simulate", "--workers", "4", "--c", "8", "--dtype", "float32", "--d", "2048", "--json"]
    _, out, _ = run(capsys, *base)
    _, out2, _ = run(capsys, *base, "--eps", "0.05")
    assert json.loads(out)["max_rel_error"] < json.loads(out2)["max_rel_error"] / 10


# ----------------------------------------------------------------------------- 3. messages name the flag


def test_existing_export_names_force(capsys, tmp_path):
    for argv in (
        ["construct", "bibd", "7", "3", "1", "--out", str(tmp_path)],
        ["cerar", "design", "--workers", "3", "--c", "5", "--out", str(tmp_path)],
    ):
        assert run(capsys, *argv)[0] == 0
        code, _, err = run(capsys, *argv)
        assert code == 2 and "--force" in err and "overwrite" not in err, err


@pytest.mark.parametrize(
    "argv,starts,absent",
    [
        (["cerar", "design", "--workers", "4", "--c", "8", "--method", "exact"], None, "method="),
        (["cerar", "run", "--engine", "numpy", "--workers", "3", "--c", "9", "--method", "exact"], None, "method="),
        (["gc", "run", "--design", "petersen", "--method", "foo"], "--method:", None),
        (["reproduce", "--stage", "nope", "--out", "{tmp}"], "--stage:", None),
        (["error", "--design", "pg2_9", "--method", "foo"], "--method:", None),
        (["error", "--design", "nope"], "--design:", None),
        (
            ["error", "--design", "petersen", "--m", "1", "--stragglers", "bernoulli:0.1", "--samples", "1"],
            "--samples:",
            None,
        ),
        (["bounds", "verify", "--design", "petersen", "--m", "1", "--bounds", "nope"], "--bounds:", None),
        (["cerar", "design", "--eps", "nan"], None, None),
        (["train", "--iterations", "1", "--mnist", "{tmp}/garbage.npz"], "--mnist:", None),
    ],
)
def test_bad_input_names_the_flag(capsys, tmp_path, argv, starts, absent):
    (tmp_path / "garbage.npz").write_bytes(b"not an archive at all")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    if starts:
        assert lines[0].startswith(f"gcsim: error: {starts}"), lines[0]
    if absent:
        assert absent not in lines[0], lines[0]
    # the flags it names are the command's own
    for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", lines[0]):
        assert flag in " ".join(argv) or flag in ("--force", "--method", "--help"), flag


def test_library_suggestion_spelled_as_flags(capsys):
    code, _, err = run(capsys, "cerar", "design", "--workers", "4", "--c", "8", "--method", "exact")
    assert code == 2 and "--method perturbation, vandermonde or optimized" in err


# ----------------------------------------------------------------------------- 4. tidy output


def test_brc_form_is_printed_as_maths(capsys):
    code, out, _ = run(capsys, "exists", "bibd", "43", "7", "1")
    # (43, 7, 1): n = 6, (-1)^21 * 1 = -1
    assert code == 3 and "z² = 6x² − y²" in out and "x^2" not in out and "+ -" not in out


def test_table_wraps_and_never_cuts_a_word():
    words = "configuration model + switch repair (seed=0, pairs=120, attempts=4)".split()
    text = table(["name", "construction", "ok"], [["biregular", " ".join(words), "yes"]], wrap={"construction": 20})
    lines = text.splitlines()
    assert len(lines) > 3  # wrapped onto several lines
    cells = " ".join(
        line[len("biregular  ") :].rsplit("  ", 1)[0] if "yes" in line else line[11:] for line in lines[2:]
    )
    assert cells.split() == words  # every word whole, in order
    assert max(len(line) for line in lines) <= len("biregular  ") + 20 + len("  ok")


def test_table_widens_for_a_word_longer_than_the_wrap():
    text = table(["a"], [["x" * 30]], wrap={"a": 10})
    assert "x" * 30 in text.splitlines()[2]


def test_load_summary_of_a_cerar_design():
    """What `gcsim load` prints for a CERAR file: N, c, L and κ, against np.linalg.cond of its arrays."""
    from gcsim.app.commands.cerar import load_summary
    from gcsim.cerar.factory import design

    des = design(4, 8, "perturbation", eps=0.01)
    payload, text = load_summary(des)
    assert (payload["N"], payload["c"], payload["L"]) == (4, 8, 10)
    for key, arrays in (("kappa_encoders_max", des.encoders), ("kappa_decoders_max", des.decoders)):
        kappa = max(np.linalg.cond(np.asarray(a, dtype=float)) for a in arrays)
        assert payload[key] == pytest.approx(kappa, rel=1e-6)
    assert "N = 4, c = 8, L = 10" in text and "κ(A_j)" in text and "κ(D_i)" in text


def test_train_table_keeps_full_labels(capsys):
    from gcsim.learning.experiments import default_codes

    code, out, _ = run(capsys, "train", "--iterations", "2")
    assert code == 0
    for c in default_codes():
        assert c.label in out


# ----------------------------------------------------------------------------- 5. progress on a terminal only


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


# a pipe gets progress too (lines, not a bar: gcsim._progress; tests/test_cli_progress.py)
@pytest.mark.parametrize("tty,json_flag,expected", [(True, False, True), (False, False, True), (True, True, False)])
def test_show_progress(monkeypatch, tty, json_flag, expected):
    monkeypatch.setattr(sys, "stderr", _Stream(tty))
    assert show_progress(argparse.Namespace(json=json_flag)) is expected


def _optimize(stderr) -> subprocess.CompletedProcess:
    argv = ["cerar", "optimize", "--workers", "3", "--c", "4", "--kappa", "2", "--max-iter", "3"]
    return subprocess.run(
        [sys.executable, "-m", "gcsim", *argv], stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=300
    )


def test_no_progress_bar_when_stderr_is_not_a_terminal():
    r = _optimize(subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    assert "it/s" not in r.stderr and "%|" not in r.stderr and "\r" not in r.stderr
    assert all(line.startswith("gcsim: ") for line in r.stderr.splitlines()), r.stderr  # lines, never a bar


@pytest.mark.skipif(not hasattr(os, "openpty") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal():
    import fcntl
    import struct
    import termios
    import threading

    master, slave = os.openpty()
    # a new pseudo-terminal is 0 columns wide, and tqdm draws nothing into 0 columns
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    chunks: list[bytes] = []

    def reader():  # drain the terminal while the command runs
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                return
            if not data:
                return
            chunks.append(data)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        r = _optimize(slave)
    finally:
        os.close(slave)
        thread.join(timeout=10)
        os.close(master)
    assert r.returncode == 0
    assert "CERAR opt" in b"".join(chunks).decode(errors="replace")


def test_reproduce_prints_each_stage_as_it_ends(monkeypatch, capsys, tmp_path):
    seen_before_second: list[str] = []

    def first(out, full, seed, progress):
        (out / "a.txt").write_text("a")
        return {"ok": True, "files": ["a.txt"], "text": "first stage summary"}

    def second(out, full, seed, progress):
        seen_before_second.append(capsys.readouterr().out)  # what the user has seen by now
        (out / "b.txt").write_text("b")
        return {"ok": True, "files": ["b.txt"], "text": "second stage summary"}

    monkeypatch.setattr(rep, "STAGES", {"one": first, "two": second})
    monkeypatch.setattr(rep, "provenance", lambda: {"test": True})
    code = main(["reproduce", "--out", str(tmp_path), "--stage", "one", "--stage", "two"])
    rest = capsys.readouterr().out
    assert code == 0
    assert "first stage summary" in seen_before_second[0] and "second stage summary" not in seen_before_second[0]
    index = tmp_path / "index.md"
    assert "second stage summary" in rest and rest.rstrip().endswith(
        f"All results and manifests are in {tmp_path}/\n"
        f"Index of every figure (one line each), table and manifest: {index}"
    )
    assert index.is_file()
    assert "first stage summary" not in rest  # printed once, when its stage ended

    code = main(["reproduce", "--out", str(tmp_path), "--stage", "one", "--json"])
    payload = json.loads(capsys.readouterr().out)  # --json: one object, nothing else on stdout
    assert code == 0 and "first stage summary" in payload["text"]


def test_load_of_a_cerar_file_prints_its_condition_numbers(capsys):
    from gcsim.app.cli import main

    assert main(["load", "cerar/optimized_N4_c8_kappa10"]) == 0
    out = capsys.readouterr().out
    assert "N = 4, c = 8" in out and "κ(A_j)" in out and "κ(D_i)" in out and "loaded and verified" in out
    assert main(["load", "cerar/optimized_N4_c8_kappa10", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["kind"] == "cerar" and payload["verified"] is True and payload["N"] == 4


# ----------------------------------------------------------------------------- issue #19 item 7: types and messages


def test_a_5000_digit_integer_is_too_large_not_not_an_integer(capsys):
    """Python refuses int() beyond 4300 digits: the flag says *too large* and names the limit."""
    big = "9" * 5000
    for argv in (
        ["construct", "bibd", big, "3", "1"],
        ["error", "--design", "pg2_9", "--samples", big],
        ["error", "--design", f"bibd:{big},3,1"],
        ["decode-time", "--workers", "3", "--delays", "shifted-exponential:shift=1,rate=1", "--rule", f"first:s={big}"],
        ["advise", "-n", "13", "--load", big, "--stragglers", "fixed:1"],
        ["advise", "-n", "13", "--load", "4", "--stragglers", f"fixed:{big}"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "", argv
        assert err.count("\n") == 1 and re.search(r"too large: 5,000 digits|5,000-digit value is too large", err), err
        assert "not an integer" not in err and "must be an integer" not in err and big not in err


def test_integers_beyond_float_range_are_one_line(capsys):
    """A 400-digit v passed int() but overflowed float() in the size check (OverflowError traceback)."""
    big = "9" * 400
    for argv in (["construct", "bibd", big, "3", "1"], ["cerar", "design", "--workers", big, "--c", "3"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and "MAX_DENSE_ENTRIES" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ["load", ""],
        ["error", "--design", ""],
        ["gc", "run", "--design", ""],
        ["decoder-table", "--design", "", "--s-max", "1", "--out", "o"],
    ],
)
def test_empty_names_say_empty(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and "is empty" in err, err
    assert "PosixPath" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_or_a_device_given_as_a_file_is_named_as_such(capsys, tmp_path):
    """``train --mnist FIFO`` said "no such file"; a .npy linked to /dev/zero was "pickled (object) data"."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.npy"
    os.symlink("/dev/zero", zero)
    cases = [
        (["train", "--iterations", "1", "--mnist", str(fifo)], "is a FIFO (named pipe)"),
        (["train", "--iterations", "1", "--mnist", str(zero)], "is a character device (through a symbolic link)"),
        (["decode-time", "--delays", f"trace:{zero}", "--rule", "first:s=1"], "not a regular file"),
        (["decode-time", "--delays", f"trace:{fifo}", "--rule", "first:s=1"], "not a regular file"),
    ]
    for argv, needle in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and needle in err, (argv, err)
        assert "no such file" not in err and "pickled" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_load_mnist_names_a_fifo(tmp_path):
    from gcsim.learning.datasets import DatasetFormatError, load_mnist

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(DatasetFormatError, match="is a FIFO"):
        load_mnist(fifo)


def test_load_refusals_go_to_stderr(capsys, tmp_path):
    (tmp_path / "bad.json").write_text("not json")  # a file gcsim refuses (exit 1)
    code, out, err = run(capsys, "load", str(tmp_path / "bad.json"))
    assert code == 1 and out == "" and err.startswith("gcsim: error: refused: ") and err.count("\n") == 1
    code, out, err = run(capsys, "load", str(tmp_path / "bad.json"), "--json")
    assert code == 1 and json.loads(out)["verified"] is False and err.startswith("gcsim: error: refused: ")
    code, out, err = run(capsys, "load", str(tmp_path / "missing"))  # nothing there: a usage error (exit 2)
    assert code == 2 and out == "" and err.startswith("gcsim: error: ") and err.count("\n") == 1


def test_decode_time_refuses_a_complex_trace(capsys, tmp_path):
    """The imaginary part was dropped after a numpy ComplexWarning."""
    path = tmp_path / "c.npy"
    np.save(path, np.ones((3, 4)) + 1j)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on the way
        code, out, err = run(capsys, "decode-time", "--delays", f"trace:{path}", "--rule", "first:s=1")
    assert code == 2 and out == "" and err.count("\n") == 1 and "complex" in err, err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (
            [
                "decode-time",
                "--workers",
                "3",
                "--delays",
                "shifted-exponential:shift=1,rate=1,rate=2",
                "--rule",
                "first:s=1",
            ],
            "--delays: rate is given twice",
        ),
        (
            [
                "decode-time",
                "--workers",
                "3",
                "--delays",
                "shifted-exponential:shift=1,rate=1",
                "--rule",
                "first:s=1,s=2",
            ],
            "--rule: s is given twice",
        ),
        (
            ["advise", "-n", "13", "--load", "4", "--stragglers", "fixed:1", "--links", "bandwidth=1e9,bandwidth=2e9"],
            "--links: bandwidth is given twice",
        ),
    ],
)
def test_repeated_keys_are_refused(argv, needle, capsys):
    """``shift=1,rate=1,rate=2`` took the last rate silently."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1, err


@pytest.mark.parametrize("dtype, scale", [("float32", 1e39), ("float32", 2e38), ("bfloat16", 3e38), ("float64", 1e308)])
def test_cerar_simulate_refuses_gradients_beyond_the_dtype(dtype, scale):
    """Overflow to inf/NaN was returned with numpy RuntimeWarnings only; now a clear error, no warning."""
    from gcsim.cerar import design
    from gcsim.cerar.protocol import simulate
    from gcsim.errors import InvalidArgumentError

    g = np.full((3, 8), scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidArgumentError, match=rf"^gradients: .*{dtype}"):
            simulate(design(3, 3, "exact"), g, dtype=dtype)


def test_cerar_simulate_in_range_is_unchanged():
    """Just inside the range the numbers still come back: 3 x 1e38 sums to 3e38 < float32's 3.4e38."""
    from gcsim.cerar import design
    from gcsim.cerar.protocol import simulate
    from tolerances import SAFETY, gamma

    g = np.full((3, 8), 1e38)
    res = simulate(design(3, 3, "exact"), g, dtype="float32")
    assert np.all(np.isfinite(res.outputs))
    # 1e38 rounded to float32, then N = 3 terms through the exact design: gamma_(N + 1) in float32
    np.testing.assert_allclose(res.outputs, 3e38, rtol=SAFETY * gamma(4, np.float32))


@pytest.mark.parametrize("kind", ["delay", "straggler"])
@pytest.mark.parametrize("trace", [np.ones((3, 4)) + 1j, [[1 + 0j, 2.0]], [["a", "b"]]])
def test_api_traces_refuse_complex_and_non_numbers(kind, trace):
    """delay_model('trace') dropped the imaginary part after a ComplexWarning; straggler_model raised TypeError."""
    from gcsim.coding.delays import delay_model
    from gcsim.coding.stragglers import straggler_model
    from gcsim.errors import InvalidArgumentError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidArgumentError, match="^delays: "):
            if kind == "delay":
                delay_model("trace", len(trace), delays=trace)
            else:
                straggler_model("trace", delays=trace, s=0)
