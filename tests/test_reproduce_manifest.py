"""``gcsim reproduce`` resumes only from intact results (issue #9 §4).

A tiny fake stage stands in for the real ones (which take minutes); it counts its runs,
so "skipped" vs "ran again" is observed directly.  Checksums are compared with
``hashlib`` on the files, independently of gcsim.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal

import pytest

from gcsim.app import reproduce as rep


@pytest.fixture
def fake_stage(monkeypatch):
    """Register a stage "fake" writing two files; returns the list of its runs."""
    runs: list[dict] = []
    behaviour: dict = {"die_after_first_file": None}

    def stage(out, full, seed, progress):
        runs.append({"seed": seed})
        (out / "table.csv").write_text(f"run,{len(runs)}\n" + "x,1\n" * 50)
        if behaviour["die_after_first_file"] is not None:
            behaviour["die_after_first_file"]()
        (out / "sub").mkdir(exist_ok=True)
        (out / "sub" / "figure.bin").write_bytes(bytes(range(256)) * 4)
        return {"ok": True, "files": ["table.csv", "sub/figure.bin"], "text": f"fake run {len(runs)}"}

    monkeypatch.setattr(rep, "STAGES", {"fake": stage})
    monkeypatch.setattr(rep, "provenance", lambda: {"test": True})
    stage.runs = runs
    stage.behaviour = behaviour
    return stage


def run(out, **kw):
    return rep.run_reproduce(out, stages=["fake"], progress=False, **kw)


def status(summary):
    return summary["stages"]["fake"]["status"]


def test_manifest_records_checksums_of_every_output(tmp_path, fake_stage):
    assert status(run(tmp_path)) == "ok"
    man = json.loads((tmp_path / "fake" / "manifest.json").read_text())
    assert man["status"] == "ok" and man["files"] == ["table.csv", "sub/figure.bin"]
    for name in man["files"]:
        data = (tmp_path / "fake" / name).read_bytes()
        assert man["checksums"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)}
    index = json.loads((tmp_path / "manifest.json").read_text())
    assert index["stages"]["fake"]["status"] == "ok"


def test_intact_results_are_skipped(tmp_path, fake_stage):
    run(tmp_path)
    assert status(run(tmp_path)).startswith("skipped")
    assert len(fake_stage.runs) == 1
    assert status(run(tmp_path, seed=1)) == "ok"  # other parameters: run again
    assert len(fake_stage.runs) == 2


@pytest.mark.parametrize("damage", ["delete", "truncate", "edit_same_size"])
def test_damaged_outputs_make_the_stage_run_again(tmp_path, fake_stage, damage):
    run(tmp_path)
    target = tmp_path / "fake" / "sub" / "figure.bin"
    if damage == "delete":
        target.unlink()
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:100])
    else:
        data = bytearray(target.read_bytes())
        data[500] ^= 0xFF
        target.write_bytes(bytes(data))
    assert status(run(tmp_path)) == "ok"  # ran again, not "skipped"
    assert len(fake_stage.runs) == 2
    assert rep.check_stage_outputs(tmp_path / "fake", {"full": False, "seed": 0}) is None


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the hang guard needs SIGALRM")
@pytest.mark.parametrize("kind", ["fifo", "dir", "dev_zero"])
def test_non_regular_output_is_detected_without_hanging(tmp_path, fake_stage, kind):
    run(tmp_path)
    target = tmp_path / "fake" / "sub" / "figure.bin"
    target.unlink()
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs")
        os.mkfifo(target)
    elif kind == "dir":
        target.mkdir()
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        target.symlink_to("/dev/zero")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("hung")))
    signal.alarm(10)
    try:
        reason = rep.check_stage_outputs(tmp_path / "fake", {"full": False, "seed": 0})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert reason is not None and "figure.bin" in reason


def test_interrupted_forced_rerun_leaves_no_ok_manifest(tmp_path, fake_stage):
    run(tmp_path)

    def interrupt():
        raise KeyboardInterrupt

    fake_stage.behaviour["die_after_first_file"] = interrupt
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, force=True)
    assert not (tmp_path / "fake" / "manifest.json").exists()
    fake_stage.behaviour["die_after_first_file"] = None
    assert status(run(tmp_path)) == "ok"  # not "skipped": the half-new results are redone
    assert len(fake_stage.runs) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forced_rerun_killed_with_sigkill_is_redone(tmp_path, fake_stage):
    run(tmp_path)
    pid = os.fork()
    if pid == 0:  # the child is killed in the middle of the stage, like kill -9
        fake_stage.behaviour["die_after_first_file"] = lambda: os.kill(os.getpid(), signal.SIGKILL)
        try:
            run(tmp_path, force=True)
        finally:
            os._exit(3)
    _, st = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL
    assert status(run(tmp_path)) == "ok"  # redone, not "skipped"
    assert len(fake_stage.runs) == 2  # the first run here, then the redo (the child's run was in another process)


def test_manifest_without_checksums_is_not_trusted(tmp_path, fake_stage):
    """Manifests of the older layout (no checksums) are rerun, not skipped."""
    run(tmp_path)
    path = tmp_path / "fake" / "manifest.json"
    man = json.loads(path.read_text())
    del man["checksums"]
    man.pop("manifest_version")
    path.write_text(json.dumps(man))
    assert "checksums" in rep.check_stage_outputs(tmp_path / "fake", man["params"])
    assert status(run(tmp_path)) == "ok" and len(fake_stage.runs) == 2


@pytest.mark.parametrize("text", ["", "[1]", '{"status": "ok"', "null"])
def test_unreadable_manifest_means_run_again(tmp_path, fake_stage, text):
    run(tmp_path)
    (tmp_path / "fake" / "manifest.json").write_text(text)
    assert status(run(tmp_path)) == "ok" and len(fake_stage.runs) == 2


def test_missing_output_is_a_failed_stage(tmp_path, monkeypatch):
    def liar(out, full, seed, progress):
        return {"ok": True, "files": ["never_written.csv", "../escape.csv"], "text": ""}

    monkeypatch.setattr(rep, "STAGES", {"liar": liar})
    summary = rep.run_reproduce(tmp_path, stages=["liar"], progress=False)
    assert summary["stages"]["liar"]["status"] == "failed" and not summary["ok"]
    assert rep.check_stage_outputs(tmp_path / "liar") is not None


def test_out_that_is_a_file_is_refused(tmp_path, fake_stage):
    from gcsim.errors import InvalidArgumentError

    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidArgumentError, match="out"):
        run(tmp_path / "f")
