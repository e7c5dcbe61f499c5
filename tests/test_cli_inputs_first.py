"""Every command that writes files refuses a missing or malformed input before it creates anything.

Each writer (``--out``, ``--dir``) is run with its output folder two levels below a
fresh ``tmp_path`` and a bad input: the exit status is 2 (bad usage or input; 1 for a refused
catalogue bundle, the documented status of :mod:`gcsim.app.cli`), stderr names the input's flag
in one line without a traceback, and nothing was created under ``tmp_path`` (the inputs are made
in a separate folder first, and the tree is compared before and after).
"""

from __future__ import annotations

import pytest

from gcsim.app.cli import main

# (argv with {i} = the inputs' folder and {o} = the output's, exit status, what stderr must name)
CASES = {
    "train --mnist missing": (["train", "--mnist", "{i}/missing.npz", "--out", "{o}/X/Y"], 2, "--mnist"),
    "train --mnist malformed": (
        ["train", "--mnist", "{i}/bad.npz", "--out", "{o}/X/Y", "--iterations", "1"],
        2,
        "--mnist",
    ),
    "train --mnist and --dataset": (
        ["train", "--mnist", "{i}/bad.npz", "--dataset", "digits", "--out", "{o}/X/Y"],
        2,
        "--mnist",
    ),
    "train --codes unmatched": (
        ["train", "--dataset", "digits", "--codes", "nosuch", "--out", "{o}/X/Y"],
        2,
        "--codes",
    ),
    "cerar --design missing": (
        ["cerar", "simulate", "--design", "{i}/missing.json", "--out", "{o}/X/Y"],
        2,
        "--design",
    ),
    "cerar --design malformed": (
        ["cerar", "simulate", "--design", "{i}/bad.json", "--out", "{o}/X/Y"],
        1,
        "--design",
    ),
    "cerar --method unknown": (
        ["cerar", "design", "--workers", "3", "--c", "5", "--method", "nosuch", "--out", "{o}/X/Y"],
        2,
        "--method",
    ),
    "construct impossible params": (["construct", "bibd", "8", "3", "1", "--out", "{o}/X/Y"], 2, "2-(8,3,1)"),
    "construct --name malformed": (
        ["construct", "bibd", "7", "3", "1", "--name", "../x", "--out", "{o}/X/Y"],
        2,
        "--name",
    ),
    "decoder-table --design missing": (
        ["decoder-table", "--design", "{i}/missing.json", "--s-max", "1", "--out", "{o}/X/Y"],
        2,
        "--design",
    ),
    "decoder-table --design malformed": (
        ["decoder-table", "--design", "{i}/bad.json", "--s-max", "1", "--out", "{o}/X/Y"],
        1,
        "--design",
    ),
    "decoder-table --method unknown": (
        ["decoder-table", "--design", "bibd:7,3,1", "--method", "nosuch", "--s-max", "1", "--out", "{o}/X/Y"],
        2,
        "--method",
    ),
    "advise --delays missing": (
        ["advise", "--workers", "7", "--load", "3", "--m", "1", "--delays", "trace:{i}/missing.npy"]
        + ["--rule", "first:s=1", "--out", "{o}/X/Y"],
        2,
        "--delays",
    ),
    "advise --delays malformed": (
        ["advise", "--workers", "7", "--load", "3", "--m", "1", "--delays", "trace:{i}/bad.npy"]
        + ["--rule", "first:s=1", "--out", "{o}/X/Y"],
        2,
        "--delays",
    ),
    "catalogue --out against --dir": (["catalogue", "--dir", "{i}", "--out", "{o}/X/Y"], 2, "--out"),
    "reproduce --stage unknown": (["reproduce", "--stage", "nosuch", "--out", "{o}/X/Y"], 2, "--stage"),
}


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_leaves_nothing_on_disk(tmp_path, capsys, case):
    argv, status, flag = CASES[case]
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("bad.npz", "bad.json", "bad.npy"):  # files of the right name, not of the right kind
        (inputs / name).write_text("not a file of that kind\n")
    before = _tree(tmp_path)
    code = main([a.format(i=inputs, o=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == status, err
    assert flag in err and "Traceback" not in err, err
    assert _tree(tmp_path) == before  # no X/, no X/Y, no bundle


def test_a_good_train_run_still_creates_its_folder(tmp_path, capsys):
    # the reordering keeps the output: --out is created once the inputs are read, and written
    code = main(["train", "--dataset", "digits", "--codes", "uncoded", "--iterations", "1", "--out", f"{tmp_path}/X/Y"])
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "X" / "Y").iterdir()) == ["history.csv", "manifest.json"]


def test_advise_refuses_an_earlier_export_before_the_advice_runs(tmp_path, capsys, monkeypatch):
    # issue #34 item 5: the whole advice ran, then the export was refused and the table never shown
    import gcsim.advisor

    def no_advice(*args, **kwargs):
        raise AssertionError("the advice ran before the export folder was checked")

    (tmp_path / "advice" / "rank1_bibd_rd").mkdir(parents=True)
    before = _tree(tmp_path)
    monkeypatch.setattr(gcsim.advisor, "advise", no_advice)
    argv = ["advise", "--workers", "13", "--load", "4", "--m", "2", "--stragglers", "fixed:1"]
    code = main([*argv, "--out", str(tmp_path / "advice")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--out" in err and "rank1_bibd_rd" in err and "--force" in err and "Traceback" not in err, err
    assert _tree(tmp_path) == before
    # another rank, or --force, goes on to the advice
    for extra in (["--rank", "2"], ["--force"]):
        with pytest.raises(AssertionError, match="the advice ran"):
            main([*argv, "--out", str(tmp_path / "advice"), *extra])
