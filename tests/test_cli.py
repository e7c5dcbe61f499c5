"""The gcsim command line: output, --json, exit codes and one-line errors."""
import json
import subprocess
import sys

import pytest

from gcsim.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_commands_with_examples(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for word in ("construct", "exists", "load", "catalogue", "reproduce", "examples:"):
        assert word in out


def test_no_command_prints_help_and_exits_2(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "usage" in out


def test_construct_bibd_json(capsys):
    code, out, _ = run(capsys, "construct", "bibd", "7", "3", "1", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["params"] == [7, 7, 3, 3, 1]
    assert payload["verified"] is True
    assert payload["parts"] == 7 and payload["workers"] == 7


def test_construct_srg_text_and_matrix(capsys):
    code, out, _ = run(capsys, "construct", "srg", "10", "3", "0", "1", "--matrix")
    assert code == 0
    rows = [line for line in out.splitlines() if set(line) <= {"0", "1"} and line]
    assert len(rows) == 10 and all(r.count("1") == 4 for r in rows)  # closed neighbourhoods


@pytest.mark.parametrize("argv,expected", [
    (["exists", "bibd", "7", "3", "1"], True),
    (["exists", "bibd", "43", "7", "1"], False),
    (["exists", "srg", "10", "3", "0", "1"], True),
])
def test_exists_json(capsys, argv, expected):
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["exists"] is expected
    if expected is False:
        assert "Bruck" in payload["reason"] or "impossible" in payload["reason"]


@pytest.mark.parametrize("argv,needle", [
    (["construct", "bibd", "7", "8", "1"], "k"),              # k > v
    (["construct", "bibd", "43", "7", "1"], "Bruck"),         # impossible
    (["construct", "bibd", "7"], "takes parameters"),         # too few numbers
    (["construct", "coset", "12", "2", "5"], "prime power"),  # k not a prime power
    (["exists", "coset", "27", "2", "5"], "invalid choice"),
])
def test_user_errors_are_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle.lower() in err.lower()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3


def test_export_then_load_round_trip_and_tamper(capsys, tmp_path):
    code, out, _ = run(capsys, "construct", "srg", "13", "6", "2", "3", "--export", str(tmp_path), "--json")
    assert code == 0
    path = json.loads(out)["exported"]
    code, out, _ = run(capsys, "load", path, "--json")
    assert code == 0 and json.loads(out)["verified"] is True
    npz = path[:-5] + ".npz"
    with open(npz, "r+b") as fh:
        fh.seek(30)
        byte = fh.read(1)
        fh.seek(30)
        fh.write(bytes([byte[0] ^ 0xFF]))
    code, out, _ = run(capsys, "load", path, "--json")
    assert code == 1
    payload = json.loads(out)
    assert payload["verified"] is False and "checksum" in payload["error"]


def test_catalogue_command_verifies_named_instances(capsys, repo_root):
    code, out, _ = run(capsys, "catalogue", "--dir", str(repo_root / "designs"), "--json")
    payload = json.loads(out)
    assert code == 0, payload
    names = {r["name"] for r in payload["rows"]}
    assert {"pg2_9", "coset_27_2_5", "biregular_40_20_3_6", "paley13", "petersen"} <= names
    assert all(r["verified"] and r["file"] == "matches" for r in payload["rows"])


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "gcsim", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "gcsim" in proc.stdout


def test_reproduce_catalogue_stage_json_and_resume(capsys, tmp_path):
    code, out, _ = run(capsys, "reproduce", "--stage", "catalogue", "--out", str(tmp_path), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["ok"] and payload["stages"]["catalogue"]["status"] == "ok"
    assert (tmp_path / "catalogue" / "manifest.json").exists() and (tmp_path / "manifest.json").exists()
    code, out, _ = run(capsys, "reproduce", "--stage", "catalogue", "--out", str(tmp_path), "--json")
    assert json.loads(out)["stages"]["catalogue"]["status"].startswith("skipped")
    code, _, err = run(capsys, "reproduce", "--stage", "nope", "--out", str(tmp_path))
    assert code == 2 and "stage" in err


def test_catalogue_reports_a_tampered_file_and_exits_1(capsys, repo_root, tmp_path):
    import shutil
    shutil.copytree(repo_root / "designs", tmp_path / "designs")
    npz = tmp_path / "designs" / "srg" / "petersen.npz"
    raw = bytearray(npz.read_bytes())
    raw[-20] ^= 0x01
    npz.write_bytes(bytes(raw))
    code, out, _ = run(capsys, "catalogue", "--dir", str(tmp_path / "designs"), "--json")
    payload = json.loads(out)
    assert code == 1 and payload["ok"] is False
    row = next(r for r in payload["rows"] if r["name"] == "petersen")
    assert row["file"].startswith("refused") and "checksum" in row["file"]


def test_top_level_public_names_resolve():
    import gcsim
    for name in ("bibd", "srg", "coset_graph", "biregular_graph", "encode", "optimal_error", "straggler_model",
                 "expected_error", "worst_case_error", "verify_bounds", "run_scheme", "export_object",
                 "load_object", "cerar"):
        assert callable(getattr(gcsim, name)) or hasattr(getattr(gcsim, name), "design"), name
    with pytest.raises(AttributeError):
        gcsim.no_such_name
