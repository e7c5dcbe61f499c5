"""The ddp stage of ``gcsim reproduce`` (issue #34 item 7): progress lines while it trains, the same table.

The stage trains one design at a time (each a torch.distributed job of ~20 s) under
:class:`gcsim._progress.StageProgress`.  Here the training is replaced by a fake that returns rows
at once, so the test sees the progress lines the stage prints on a pipe and checks that the
history it writes is the table one call with every design builds (the fake, called once).
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from gcsim.app.stages import ddp
from gcsim.learning import ddp_cerar


def _fake_experiment(designs, *, N, steps, seed):
    rows = []
    for label, des in designs.items():
        i = len(label)  # a number of the run's own (not its position in the call)
        for step in range(0, steps + 1, 50):
            for rank in range(N):
                rows.append(
                    {
                        "label": label,
                        "step": step,
                        "rank": rank,
                        "test_acc": 0.5 + step / 1000 + seed,
                        "train_loss": 1.0 / (1 + step),
                        # the exact run's drift and bytes as the real job reports them: 0.0 and None
                        "drift": 0.0 if des is None else 1e-3 * (i + step),
                        "hook_bytes": None if des is None else 1000 * (i + 1),
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture
def fake_training(monkeypatch):
    calls: list[list[str]] = []

    def experiment(designs, **kw):
        calls.append(list(designs))
        return _fake_experiment(designs, **kw)

    monkeypatch.setattr(ddp_cerar, "ddp_cerar_experiment", experiment)
    monkeypatch.setattr(ddp_cerar, "plot_ddp", lambda frame, path: open(path, "wb").write(b"\x89PNG fake"))
    return calls


def test_the_stage_prints_a_progress_line_per_run_and_writes_one_calls_table(tmp_path, fake_training, monkeypatch):
    err = io.StringIO()  # not a terminal: lines, not a bar
    monkeypatch.setattr("sys.stderr", err)
    result = ddp.ddp_stage(tmp_path, False, 0, True)
    labels = [c[0] for c in fake_training]
    assert all(len(c) == 1 for c in fake_training) and len(labels) >= 3  # one design per call
    lines = err.getvalue().splitlines()
    total = len(labels)
    assert lines[0] == f"gcsim: progress: reproduce ddp: 0/{total} training runs (0%), 0 s elapsed"
    assert lines[-1].startswith(f"gcsim: progress: reproduce ddp: {total}/{total} training runs (100%)")
    # the table is the one a single call with every design returns, written the same way
    designs = dict.fromkeys(labels, "design")
    designs[labels[0]] = None  # the exact all-reduce comes first, without a design
    want = _fake_experiment(designs, N=4, steps=100, seed=0)
    assert (tmp_path / "ddp_history.csv").read_text() == want.to_csv(index=False)
    assert set(result["figures"]) == {f for f in result["files"] if f.endswith(".png")}


def test_no_progress_no_lines(tmp_path, fake_training, monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    ddp.ddp_stage(tmp_path, False, 0, False)
    assert err.getvalue() == ""
