"""Progress lines when stderr is a pipe (#23 item 4): long commands are not silent in a log.

``gcsim cerar pareto`` used to print nothing on a piped stderr until it finished (78 s at the
default size).  ``gcsim._progress`` is the one helper the sweeps, evaluators, optimizer and
experiments use: a bar on a terminal, ``gcsim: progress: ...`` lines on stderr when the ``gcsim``
command runs with stderr on a pipe, nothing with ``--json`` and nothing ever on stdout.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from gcsim import _progress


def _piped(*argv: str, seconds: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, GCSIM_PROGRESS_SECONDS=seconds)
    return subprocess.run([sys.executable, "-m", "gcsim", *argv], capture_output=True, text=True, env=env, timeout=300)


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gcsim: progress: ")]


@pytest.mark.parametrize(
    "argv,desc,total",
    [
        (["cerar", "pareto", "--workers", "3", "--c", "4", "--kappas", "5,10", "--max-iter", "2"], "Pareto N=3 c=4", 2),
        (["error", "--design", "pg2_9", "--m", "2", "--stragglers", "worst:3"], "worst-case search", 5),
        (
            ["bounds", "verify", "--design", "petersen", "--m", "1", "--method", "rd", "-s", "2", "--draws", "4"],
            "encoder redraws",
            4,
        ),
    ],
)
def test_a_piped_long_command_prints_progress_lines_on_stderr(argv, desc, total):
    proc = _piped(*argv)
    assert proc.returncode in (0, 1), proc.stderr
    lines = _lines(proc.stderr)
    assert lines, f"no progress line on a piped stderr: {proc.stderr!r}"
    assert lines[0].startswith(f"gcsim: progress: {desc}: 0/{total} (0%)"), lines
    assert any(f"{total}/{total} (100%)" in line for line in lines), lines
    assert "progress" not in proc.stdout


def test_json_gets_no_progress_lines():
    proc = _piped("cerar", "pareto", "--workers", "3", "--c", "4", "--kappas", "5", "--max-iter", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not _lines(proc.stderr)


def test_the_interval_bounds_the_number_of_lines(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("GCSIM_PROGRESS_SECONDS", "3600")
    with _progress.progress_lines(True):
        assert list(_progress.progress_bar(np.arange(50), desc="demo")) == list(range(50))
    lines = _lines(err.getvalue())
    assert lines[0] == "gcsim: progress: demo: 0/50 (0%), 0 s elapsed"
    assert len(lines) == 2 and lines[1].startswith("gcsim: progress: demo: 50/50 (100%)"), lines


def test_outside_the_command_a_pipe_gets_nothing(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert not _progress.lines_enabled()
    bar = _progress.progress_bar(total=3, desc="demo")
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert err.getvalue() == ""


def test_manual_updates_and_an_unfinished_loop_report_where_they_stopped(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("GCSIM_PROGRESS_SECONDS", "3600")
    with _progress.progress_lines(True):
        bar = _progress.progress_bar(total=10, desc="caps")
        bar.update(3)
        bar.close()
    lines = _lines(err.getvalue())
    assert lines[-1].startswith("gcsim: progress: caps: 3/10 (30%)"), lines


def test_the_time_left_counts_each_runs_measured_scoring():
    """The cerar-training stage's heartbeat on a fake clock: two runs of 10 SGD steps trained in 40 s,
    each scored for 30 s afterwards, then two runs of 2 steps trained in 8 s and scored in 1 s each.
    The time left counts the scoring at its measured 3 s per step for every step not yet scored:
    after the first run's scoring (t = 70 s, 40 s left in fact) it says 50 s, where the rate of
    steps over the elapsed time (the estimate before) said 14 s."""
    t = [0.0]
    out = io.StringIO()
    bar = _progress.StageProgress(
        24, "cerar-links", "SGD steps", True, stream=out, every=0.0, follow_up="scoring", clock=lambda: t[0]
    )
    t[0] = 40.0
    bar.update(20)  # the first launch: 20 steps at 2 s
    assert bar.left() == 8.0 and out.getvalue().splitlines()[-1].endswith("about 8 s left + scoring (not yet timed)")
    with bar.following(10, "scoring run 1"):
        t[0] = 55.0
        assert bar.left() == 8.0  # the scoring in progress is not taken for training time
        t[0] = 70.0
    assert bar.left() == 8.0 + 3.0 * 14  # 4 steps to train, 14 to score at 30 s / 10 steps
    with bar.following(10, "scoring run 2"):
        t[0] = 85.0
        assert bar.left() == 8.0 + 3.0 * 14 - 15.0  # 15 s into this run's scoring
        t[0] = 100.0
    assert bar.left() == 8.0 + 3.0 * 4
    t[0] = 108.0
    bar.update(4)  # every step trained: what is left is their scoring
    assert bar.left() == 3.0 * 4
    assert out.getvalue().splitlines()[-1] == (
        "gcsim: progress: cerar-links: 24/24 SGD steps (100%), 108 s elapsed, about 12 s left"
    )
    for k in range(2):
        with bar.following(2, f"scoring run {k + 3}"):
            t[0] += 1.0
    assert bar.left() is None and bar.followed == 24 and bar.follow_seconds == 62.0
    bar.close()


def test_without_a_follow_up_the_time_left_is_the_rate_so_far():
    t = [0.0]
    bar = _progress.StageProgress(4, "demo", "runs", False, clock=lambda: t[0])
    assert bar.left() is None
    t[0] = 3.0
    bar.update(1)
    assert bar.left() == 9.0 and bar.left(5.0) == 15.0
    bar.update(3)
    assert bar.left() is None
