"""``gcsim reproduce --paper``: the paper registry, the agc-paper stage and its claims table (issue #20 item 8).

The real stages take minutes; here the registry is exercised with small fake stages, and the
agc-paper stage runs at a tiny scale (its ``scale`` knob) beside a fake training stage that writes
a claims table of the training stage's schema.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gcsim.app import reproduce as rep
from gcsim.app.cli import main
from gcsim.app.stages import agc_paper
from gcsim.errors import InvalidArgumentError

# 3 RD draws: the interval is over draws (theory §57.10), and one draw gives none
TINY = agc_paper.Scale(
    rd_encoders=3, rd_patterns=3, baseline_patterns=3, biregular_patterns=4, coset_draws=1, points=2, biregular_draws=2
)
CLAIM_COLUMNS = ["claim", "measure", "value", "holds", "must_hold", "figure", "source"]
TRAINING_CLAIMS = pd.DataFrame(
    {
        "claim": ["1. faster (Bernoulli clock)", "2a. the interpolation code breaks in float32"],
        "measure": ["time ratio", "error ratio"],
        "value": [0.9, 80.0],
        "holds": [True, True],
        "figure": ["training.png", "precision.png"],
    }
)


def _stage(tag, log, reads=None):
    def stage(out, full, seed, progress):
        log.append(tag)
        (out / f"{tag}.txt").write_text(tag)
        result = {"ok": True, "files": [f"{tag}.txt"], "text": tag}
        if reads:
            result["inputs"] = [reads]
        return result

    return stage


@pytest.fixture
def fakes(monkeypatch):
    """Stages a, b, c; papers p = [a, b] and q = [c]; c is paper-only.  Returns the run log."""
    log: list[str] = []
    monkeypatch.setattr(rep, "STAGES", {t: _stage(t, log, "a/a.txt" if t == "b" else None) for t in "abc"})
    monkeypatch.setattr(rep, "PAPERS", {"p": ["b", "a"], "q": ["c"]})
    monkeypatch.setattr(rep, "PAPER_ONLY", {"c"})
    monkeypatch.setattr(rep, "provenance", lambda: {"test": True})
    return log


def test_the_registry_names_registered_stages():
    for paper, stages in rep.PAPERS.items():
        assert stages and all(s in rep.STAGES for s in stages), paper
    assert rep.PAPERS["agc"] == ["training", "agc-paper"] and rep.PAPERS["cerar"][:2] == ["cerar", "ddp"]
    assert rep.PAPER_ONLY <= set(rep.STAGES)
    # agc-paper reads the training stage's claims: it comes after it
    order = list(rep.STAGES)
    assert order.index("training") < order.index("agc-paper")
    assert rep.paper_stages("agc") == ["training", "agc-paper"]


def test_plain_run_is_the_demo_and_a_paper_runs_its_stages(tmp_path, fakes):
    assert rep.demo_stages() == ["a", "b"]
    assert rep.paper_stages(["q", "p"]) == ["a", "b", "c"]  # STAGES order, union
    rep.run_reproduce(tmp_path / "demo", progress=False)
    assert fakes == ["a", "b"]
    fakes.clear()
    rep.run_reproduce(tmp_path / "q", papers="q", progress=False)
    assert fakes == ["c"]
    fakes.clear()
    summary = rep.run_reproduce(tmp_path / "p", papers=["p"], stages=["b"], progress=False)  # --stage narrows
    assert fakes == ["b"] and list(summary["stages"]) == ["b"]


def test_contradictory_or_unknown_selections_are_refused(tmp_path, fakes):
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="p", stages=["c"], progress=False)
    assert exc.value.argument == "stage" and "not experiments of paper p" in str(exc.value)
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="nope", progress=False)
    assert exc.value.argument == "paper"
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers=[], progress=False)
    assert exc.value.argument == "paper"
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="p", stages=["zz"], progress=False)
    assert exc.value.argument == "stage" and "unknown" in str(exc.value)
    assert fakes == []


def test_a_stage_runs_again_when_an_input_from_another_stage_changes(tmp_path, fakes):
    rep.run_reproduce(tmp_path, papers="p", progress=False)
    man = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert set(man["inputs"]) == {"a/a.txt"} and man["inputs"]["a/a.txt"] is not None
    fakes.clear()
    rep.run_reproduce(tmp_path, papers="p", progress=False)
    assert fakes == []  # both reused
    (tmp_path / "a" / "a.txt").write_text("edited")  # a's manifest now refuses a; b's input changed
    summary = rep.run_reproduce(tmp_path, stages=["b"], progress=False)
    assert fakes == ["b"] and summary["stages"]["b"]["status"] == "ok"
    (tmp_path / "a" / "a.txt").unlink()
    assert "input a/a.txt disappeared" in rep.check_stage_outputs(tmp_path / "b", {"full": False, "seed": 0})


def test_cli_paper_flag_parsing(tmp_path, capsys):
    assert main(["reproduce", "--paper", "nope", "--out", str(tmp_path)]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["reproduce", "--paper", "agc", "--stage", "cerar", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcsim: error: --stage:") and "agc-paper" in err
    assert not any(tmp_path.iterdir())  # refused before anything ran
    assert main(["reproduce", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--paper {agc,cerar}" in text and "agc: training, agc-paper" in text


# ----------------------------------------------------------------------------------------------
# the agc-paper stage at a tiny scale
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_paper(monkeypatch):
    """``--paper agc`` at the tiny scale, with a fake training stage writing a claims table."""
    runs: list[str] = []

    def training(out, full, seed, progress):
        runs.append("training")
        TRAINING_CLAIMS.to_csv(out / "claims.csv", index=False)
        for figure in TRAINING_CLAIMS.figure:
            (out / figure).write_bytes(b"\x89PNG fake")
        return {"ok": True, "files": ["claims.csv", *TRAINING_CLAIMS.figure], "text": "fake training"}

    monkeypatch.setattr(agc_paper, "QUICK", TINY)
    monkeypatch.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    monkeypatch.setattr(rep, "STAGES", {**rep.STAGES, "training": training})
    return runs


@pytest.mark.timeout(300)
def test_paper_agc_writes_the_claims_table(tmp_path, tiny_paper, capsys):
    assert main(["reproduce", "--paper", "agc", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[agc-paper] ok" in out and "holds: Construction 2 (Gaussian and ±1) is exact at s = 0" in out
    stage = tmp_path / "agc-paper"
    claims = pd.read_csv(stage / "claims.csv")
    assert list(claims.columns) == CLAIM_COLUMNS
    assert claims.holds.dtype == bool and claims.must_hold.dtype == bool
    assert claims.must_hold.sum() >= 5 and claims[claims.must_hold].holds.all()
    for figure in claims.figure:
        assert (stage / figure).is_file(), figure  # every figure named exists, the training ones included
    training = claims[claims.source == "training"]
    assert list(training.claim) == list(TRAINING_CLAIMS.claim) and not training.must_hold.any()
    md = (stage / "claims.md").read_text()
    assert md.count("\n") == len(claims) + 2 and "[pg2_9_rd.png](pg2_9_rd.png)" in md
    pg = pd.read_csv(stage / "pg2_9_rd.csv")
    assert list(pg.s) == [11, 22]  # the authors' counts: linspace(0, 91/4, 3)[1:] as integers
    assert np.all(pg.upper_closed > pg.lower_closed) and np.all(pg.lower_search >= pg.lower_closed)
    bi = pd.read_csv(stage / "biregular_construction2.csv")
    assert list(bi.s) == [0, 5, 10]
    assert bi.construction2_signs_max[0] <= agc_paper.EXACT_RAW
    manifest = json.loads((stage / "manifest.json").read_text())
    assert manifest["status"] == "ok" and set(manifest["inputs"]) == {"training/claims.csv"}
    # a rerun reuses both; a new training table makes agc-paper run again (its claims came from it)
    assert main(["reproduce", "--paper", "agc", "--out", str(tmp_path)]) == 0
    assert "existing results not reused" not in capsys.readouterr().out and tiny_paper == ["training"]
    TRAINING_CLAIMS.assign(holds=[False, True]).to_csv(tmp_path / "training" / "claims.csv", index=False)
    assert main(["reproduce", "--paper", "agc", "--stage", "agc-paper", "--out", str(tmp_path)]) == 0
    assert "input training/claims.csv changed" in capsys.readouterr().out
    claims = pd.read_csv(stage / "claims.csv")
    assert not claims[claims.source == "training"].holds.iloc[0]  # reported, the stage still ok


@pytest.mark.timeout(300)
def test_a_failing_must_hold_claim_fails_the_stage(tmp_path, monkeypatch):
    from gcsim.coding import bounds

    monkeypatch.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    monkeypatch.setattr(bounds, "bibd_rd_upper_bound", lambda *a, **k: 1.0)  # a wrong bound: RD exceeds it
    out = tmp_path / "agc-paper"
    out.mkdir()
    result = agc_paper.agc_paper_stage(out, False, 0, False, scale=TINY)
    assert not result["ok"] and "FAILS: RD (±1 diagonals) on PG(2,9)" in result["text"]
    claims = pd.read_csv(out / "claims.csv")
    row = claims[claims.claim.str.startswith("RD (±1 diagonals) on PG(2,9)")].iloc[0]
    assert row.must_hold and not row.holds and row.value > 1
    assert "not run" in result["text"]  # no training table beside it: one row says so
