"""CLI: gcsim cerar design / simulate / rates / optimize (JSON output, exports, errors)."""
import json

import numpy as np
import pytest

from gcsim.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rates_match_formulas(capsys):
    code, out, _ = run(capsys, "cerar", "rates", "--N", "4", "--c", "8", "--json")
    r = json.loads(out)
    assert code == 0
    assert r["rounds"] == 8 + 4 - 2
    assert r["rate"] == pytest.approx(1 + (4 - 2) / 8)
    assert r["ring_rate"] == pytest.approx(2 * 3 / 4)


def test_simulate_bytes_and_error(capsys):
    code, out, _ = run(capsys, "cerar", "simulate", "--N", "3", "--c", "3", "--method", "exact",
                       "--d", "100", "--json")
    p = json.loads(out)
    assert code == 0
    # packet = ceil(100/3) = 34 float64 scalars, L = 4 rounds
    assert p["bytes_sent"] == [4 * 34 * 8] * 3
    assert p["max_rel_error"] < 1e-12


def test_design_export_and_load(capsys, tmp_path):
    code, out, _ = run(capsys, "cerar", "design", "--N", "3", "--c", "5", "--eps", "0.05",
                       "--export", str(tmp_path), "--json")
    assert code == 0
    path = json.loads(out)["exported"]
    code, out, _ = run(capsys, "load", path, "--json")
    assert code == 0 and json.loads(out)["kind"] == "cerar"
    code, out, _ = run(capsys, "cerar", "simulate", "--design", path, "--d", "50", "--json")
    assert code == 0 and json.loads(out)["c"] == 5


@pytest.mark.parametrize("argv,needle", [
    (["cerar", "design", "--N", "1", "--c", "3"], "N"),
    (["cerar", "design", "--N", "3", "--c", "0"], "c"),
    (["cerar", "design", "--N", "3", "--c", "5", "--eps", "-1"], "eps"),
    (["cerar", "design", "--N", "4", "--c", "8", "--method", "exact"], "c"),
])
def test_bad_input_is_one_line_error(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


def test_two_word_spelling_cerar_run_numpy_engine(capsys):
    code, out, _ = run(capsys, "cerar", "run", "--engine", "numpy", "--workers", "3", "--c", "3",
                       "--d", "30", "--json")
    assert code == 0
    p = json.loads(out)
    # exact design (c <= N): L = 4 rounds of ceil(30/3) = 10 float32 scalars
    assert p["bytes_sent"] == [4 * 10 * 4] * 3 and p["itemsize"] == 4
    assert p["max_rel_error"] < 1e-5


def test_gc_run_help_is_reachable(capsys):
    code, out, _ = run(capsys, "gc", "run", "--help")
    assert code == 0 and "--stragglers" in out
