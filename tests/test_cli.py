"""The gcsim command line: output, --json, exit codes and one-line errors."""

import json
import subprocess
import sys

import pytest

from gcsim.app.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_commands_with_examples(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for word in ("construct", "exists", "load", "catalogue", "reproduce", "examples:"):
        assert word in out


def test_no_command_prints_a_short_usage_on_stderr_and_exits_2(capsys):
    """`gcsim` alone printed the whole 46-line help on stdout (#19 item 7): now the error line, then the usage."""
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("gcsim: error: a command is required") and len(err.splitlines()) <= 3
    assert "usage: gcsim " in err


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


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["exists", "bibd", "7", "3", "1"], True),
        (["exists", "bibd", "43", "7", "1"], False),
        (["exists", "srg", "10", "3", "0", "1"], True),
    ],
)
def test_exists_json(capsys, argv, expected):
    code, out, _ = run(capsys, *argv, "--json")
    assert code == (0 if expected else 3)  # the answer is the exit status (0 yes, 3 no, 4 unknown)
    payload = json.loads(out)
    assert payload["exists"] is expected
    if expected is False:
        assert "Bruck" in payload["reason"] or "impossible" in payload["reason"]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["construct", "bibd", "7", "8", "1"], "k"),  # k > v
        (["construct", "bibd", "43", "7", "1"], "Bruck"),  # impossible
        (["construct", "bibd", "7"], "bibd takes 2 to 3 parameters (bibd V K [LAM]), got 1"),  # too few numbers
        (["construct", "coset", "12", "2", "5"], "prime power"),  # k not a prime power
        (["exists", "coset", "27", "2", "5"], "invalid choice"),
    ],
)
def test_user_errors_are_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle.lower() in err.lower()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3


def test_export_then_load_round_trip_and_tamper(capsys, tmp_path):
    code, out, _ = run(capsys, "construct", "srg", "13", "6", "2", "3", "--out", str(tmp_path), "--json")
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

    for name in (
        "bibd",
        "srg",
        "coset_graph",
        "biregular_graph",
        "encode",
        "optimal_error",
        "straggler_model",
        "expected_error",
        "worst_case_error",
        "verify_bounds",
        "run_scheme",
        "export_object",
        "load_object",
        "cerar",
    ):
        assert callable(getattr(gcsim, name)) or hasattr(getattr(gcsim, name), "design"), name
    with pytest.raises(AttributeError):
        _ = gcsim.no_such_name


# -------------------------------------------------------------------------- issue #9 §5: every user error is one line


def one_line_error(code, err, *needles, exit_code=2):
    assert code == exit_code, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_export_into_a_regular_file_names_the_flag(capsys, tmp_path):
    (tmp_path / "f").write_text("not a folder")
    code, _, err = run(capsys, "construct", "bibd", "7", "3", "1", "--out", str(tmp_path / "f"))
    one_line_error(code, err, "--out", "not a folder")
    code, _, err = run(capsys, "construct", "bibd", "7", "3", "1", "--out", str(tmp_path / "f" / "below"))
    one_line_error(code, err, "--out", "not a folder")
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--stage", "catalogue", "--out", "{f}"],
        ["catalogue", "--dir", "{f}"],
        ["catalogue", "--out", "{f}"],
        ["cerar", "design", "--workers", "3", "--c", "3", "--out", "{f}"],
        ["train", "--iterations", "1", "--codes", "uncoded", "--out", "{f}"],
    ],
)
def test_output_folders_that_are_files_are_refused_before_work(capsys, tmp_path, argv):
    f = tmp_path / "f"
    f.write_text("x")
    code, _, err = run(capsys, *[a.format(f=f) for a in argv])
    flag = next(a for a in argv if a.startswith("--") and "{f}" in argv[argv.index(a) + 1])
    one_line_error(code, err, flag)
    assert f.read_text() == "x"


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize(
    "argv,flag",
    [
        (["construct", "bibd", "7", "3", "1", "--out", "/proc/gcsim-no/x"], "--out"),
        (["cerar", "design", "--workers", "3", "--c", "3", "--out", "/proc/gcsim-no/x"], "--out"),
        (["reproduce", "--stage", "catalogue", "--out", "/proc/gcsim-no/x"], "--out"),
    ],
)
def test_unwritable_output_is_one_line_naming_the_flag(capsys, argv, flag):
    """/proc refuses new folders even to root (os.access cannot foresee it): the OS error names the flag."""
    code, _, err = run(capsys, *argv)
    one_line_error(code, err, flag, "/proc/gcsim-no")


def test_any_os_error_is_one_line_exit_2(capsys, monkeypatch, tmp_path):
    import gcsim.catalogue.objects as cat

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path / "x.npz"))

    monkeypatch.setattr(cat, "export_object", denied)
    code, _, err = run(capsys, "construct", "bibd", "7", "3", "1", "--out", str(tmp_path))
    one_line_error(code, err, "--out", "Permission denied", "x.npz")


def test_out_of_memory_is_one_line_exit_1(capsys, monkeypatch):
    import gcsim.catalogue.named as named

    def oom(*a, **k):
        raise MemoryError("Unable to allocate 678. GiB for an array with shape (1000000000, 91)")

    monkeypatch.setattr(named, "build_family", oom)
    code, _, err = run(capsys, "construct", "bibd", "7", "3", "1")
    one_line_error(code, err, "out of memory", "MAX_DENSE_ENTRIES", exit_code=1)


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["construct", "bibd", "7", "3", "1", "--seed", "-1"], "--seed"),
        (["construct", "bibd", "7", "3", "x"], "params"),
        (["reproduce", "--seed", "-3", "--stage", "catalogue"], "--seed"),
        (["construct", "bibd", "7", "3", "1", "--no-such-flag"], "--no-such-flag"),
    ],
)
def test_argparse_errors_are_one_line_naming_the_flag(capsys, argv, flag):
    code, _, err = run(capsys, *argv)
    one_line_error(code, err, flag)


def test_catalogue_name_with_a_folder_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "construct", "bibd", "7", "3", "1", "--out", str(tmp_path), "--name", "a/b")
    one_line_error(code, err, "--name")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["construct", "bibd", "2000", "2", "1"], ["3,998,000,000", "MAX_DENSE_ENTRIES"]),
        (["construct", "srg", "10009", "5004", "2501", "2502"], ["100,180,081", "MAX_DENSE_ENTRIES"]),
        (["construct", "bibd", "20029", "4", "1"], ["20,029", "MAX_DENSE_ENTRIES"]),
        (["construct", "biregular", "100000", "100000", "3", "3"], ["10,000,000,000", "MAX_DENSE_ENTRIES"]),
    ],
)
def test_constructions_beyond_the_limits_are_refused_with_the_size(capsys, argv, needles):
    code, _, err = run(capsys, *argv)
    one_line_error(code, err, *needles)


@pytest.mark.parametrize(
    "argv,word",
    [
        (["exists", "bibd", "20029", "4", "1"], "exists"),
        (["exists", "srg", "10009", "5004", "2501", "2502"], "exists"),
        (["exists", "bibd", "16513", "129", "1"], "exists"),
    ],
)
def test_existence_for_large_v_answers(capsys, argv, word):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert json.loads(out)["exists"] is True


def test_warnings_are_one_line_each(capsys):
    """An ill-conditioned CERAR design warns; each warning is one `gcsim: warning:` line, no source lines."""
    code, _, err = run(
        capsys,
        "cerar",
        "simulate",
        "--workers",
        "4",
        "--c",
        "40",
        "--method",
        "vandermonde",
        "--dtype",
        "float32",
        "--d",
        "64",
    )
    assert code == 0
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert lines and all(ln.startswith("gcsim: warning: ") for ln in lines), lines


@pytest.mark.parametrize(
    "argv,status,word",
    [
        (["exists", "bibd", "7", "3", "1"], 0, "exists"),  # PG(2,2)
        (["exists", "bibd", "43", "7", "1"], 3, "does not exist"),  # Bruck-Ryser-Chowla
        (["exists", "srg", "28", "9", "0", "4"], 3, "does not exist"),  # Krein
        (["exists", "srg", "65", "32", "15", "16"], 4, "unknown"),  # open (Paley-type parameters, no graph known)
        (["exists", "bibd", "7", "three"], 2, "error"),  # usage: not an integer
    ],
)
def test_exists_exit_status_is_the_answer(capsys, argv, status, word):
    """``gcsim exists`` exits 0 (exists), 3 (does not exist), 4 (unknown); 2 stays bad usage."""
    code, out, err = run(capsys, *argv)
    assert code == status, (out, err)
    assert word in (out if status != 2 else err)
    if status != 2:
        code_json, payload, _ = run(capsys, *argv, "--json")
        assert code_json == status and json.loads(payload)["exists"] is {0: True, 3: False, 4: None}[status]
