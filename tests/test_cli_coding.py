"""CLI: gcsim error and gcsim bounds verify (JSON output, exit codes, errors)."""

import json

import numpy as np
import pytest

from exact_lstsq import lstsq_error
from executor_tolerances import lsq_err_tol
from gcsim.app.cli import main
from tolerances import cond, dot_tol, lstsq_tol


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_error_json_matches_independent_lstsq(capsys):
    code, out, _ = run(
        capsys, "error", "--design", "petersen", "--m", "1", "--method", "naive", "--stragglers", "all:2", "--json"
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["evaluation"] == "exact"
    # independent: average of min_x ||A_F x - 1||^2 over all 45 straggler pairs
    import itertools

    import gcsim

    A = gcsim.srg(10, 3, 0, 1).assignment.astype(float)
    # A = Adj + I has eigenvalues 4, 2, -1: non-singular, κ(A) = 4, so every A_F has full column rank
    # and a float lstsq is a well-posed reference (no kernel-dependent rank-deficient gelsd)
    assert np.linalg.matrix_rank(A) == 10
    vals, tols = [], []
    # gcsim's "auto" route (gcsim.coding.evaluate): |Δ| <= c p u max(κ̃², κ_F) mN per pattern, κ̃ of the
    # column-scaled B (all columns of A + I have norm 2, so κ̃ = κ(A)), the Gram-type route's κ²
    # (tolerances.lstsq_tol with gram=True); this lstsq (SVD) route: executor_tolerances.lsq_err_tol
    gram_tol = lstsq_tol(cond(A), 10, 10, 10.0, gram=True)
    for S in itertools.combinations(range(10), 2):
        F = ~np.isin(np.arange(10), S)
        vals.append(lstsq_error(A, F, 1))
        tols.append(gram_tol + lsq_err_tol(A[:, F], 1))
    # means of 45 values: the per-pattern bounds on average, plus γ_45 for each of the two sums
    reference = float(np.mean(vals))
    assert abs(payload["mean"] - reference) <= float(np.mean(tols)) + 2 * dot_tol(45, reference)


def test_error_worst_case_reports_set(capsys):
    code, out, _ = run(
        capsys,
        "error",
        "--design",
        "bibd:7,3,1",
        "--m",
        "2",
        "--method",
        "naive",
        "--stragglers",
        "worst:2",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert len(payload["stragglers_set"]) == 2 and payload["evaluation"] == "exact"


def test_bounds_verify_ok_and_json(capsys):
    code, out, _ = run(
        capsys,
        "bounds",
        "verify",
        "--design",
        "paley13",
        "--m",
        "2",
        "--method",
        "rd",
        "--stragglers",
        "all:2",
        "--bounds",
        "rank_lower,reference_decoder_upper",
        "--json",
    )
    payload = json.loads(out)
    assert code == 0 and payload["ok"] is True


def test_bounds_verify_bad_design_is_usage_error(capsys):
    code, _, err = run(capsys, "bounds", "verify", "--design", "nonsense", "--json")
    assert code == 2 and "design" in err


def test_error_invalid_m_names_argument(capsys):
    code, _, err = run(capsys, "error", "--design", "petersen", "--m", "0")
    assert code == 2 and "m" in err and "Traceback" not in err


def test_train_json_and_output_folder(capsys, tmp_path):
    code, out, _ = run(
        capsys, "train", "--codes", "uncoded,rd(0) m=2", "--iterations", "5", "--json", "--out", str(tmp_path)
    )
    assert code == 0
    payload = json.loads(out)
    labels = [r["label"] for r in payload["final"]]
    assert labels == ["uncoded (ignore stragglers)", "RD(0) m=2"]
    assert all(0 <= r["test_acc"] <= 1 for r in payload["final"])
    assert (tmp_path / "history.csv").exists() and (tmp_path / "manifest.json").exists()


def test_train_bad_probability_is_usage_error(capsys):
    code, _, err = run(capsys, "train", "--stragglers", "bernoulli:1.5", "--iterations", "2", "--codes", "uncoded")
    assert code == 2 and "--stragglers" in err and "< 1" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- issue #9 §5: limits and flags


def test_error_model_all_beyond_max_patterns_is_refused(capsys):
    """`error --stragglers all:20` (`--model all -s 20` then) failed: numpy's 'Maximum allowed dimension exceeded'."""
    import math

    code, _, err = run(capsys, "error", "--design", "pg2_9", "--stragglers", "all:20")
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "--stragglers" in line and f"{math.comb(91, 20):,}" in line and "MAX_PATTERNS" in line


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["error", "--design", "pg2_9", "--m", "1000000000"], ["--m", "MAX_DENSE_ENTRIES"]),
        (["error", "--design", "pg2_9", "-s", "-1"], ["--stragglers", ">= 0"]),
        (["error", "--design", "pg2_9", "-s", "500"], ["--stragglers", "91"]),
        (["error", "--design", "pg2_9", "--eps", "nan"], ["--eps", "finite"]),
        (["error", "--design", "pg2_9", "--stragglers", "bernoulli:1"], ["--stragglers", "< 1"]),
        (["error", "--design", "pg2_9", "--samples", "0"], ["--samples"]),
        (["bounds", "verify", "--design", "pg2_9", "--draws", "0"], ["--draws"]),
        (
            ["error", "--design", "petersen", "--m", "2", "--method", "exact-gaussian", "--design-s", "9"],
            ["--design-s"],
        ),
        (["train", "--iterations", "0"], ["--iterations"]),
        (["train", "--lr", "inf"], ["--lr", "finite"]),
    ],
)
def test_bad_numbers_name_their_flag_in_one_line(capsys, argv, needles):
    code, _, err = run(capsys, *argv)
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_train_refuses_a_bad_out_before_training(capsys, tmp_path, monkeypatch):
    import importlib

    experiments = importlib.import_module("gcsim.learning.experiments")

    def no_training(*a, **k):
        raise AssertionError("trained although --out is unusable")

    monkeypatch.setattr(experiments, "compare", no_training)
    (tmp_path / "f").write_text("x")
    code, _, err = run(capsys, "train", "--iterations", "2", "--out", str(tmp_path / "f"))
    assert code == 2 and "--out" in err and "Traceback" not in err
    code, _, err = run(capsys, "train", "--iterations", "2", "--mnist", str(tmp_path / "missing"))
    assert code == 2 and "--mnist" in err and "Traceback" not in err
