"""The reliability cases in CI (issue #33 class 6): every bad input and fault of
``scripts/reliability/cases_*.py`` gets what it expects, and ``docs/reliability.md`` is the table
rendered from this very run.

The cases run once per session, in a child process (``scripts/reliability_table.py --json``: each
case forked from one parent that imported gcsim, in its own folder, with its own time limit, two at
a time), and each case is then one test here, so a failure names its case.  When a message
changes on purpose, regenerate the page: ``.venv/bin/python scripts/reliability_table.py``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "reliability_table.py"
TABLE = ROOT / "docs" / "reliability.md"
sys.path.insert(0, str(ROOT / "scripts"))

from reliability_table import load_cases  # noqa: E402

CASES = load_cases()
#: Cases run at a time (their processes mostly wait: launches, time-outs, process start-up).
JOBS = 2


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("reliability") / "results.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--quiet", "--jobs", str(JOBS), "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.exists(), f"the runner wrote no results (status {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    payload = json.loads(out.read_text())
    assert len(payload["cases"]) == len(CASES)
    return payload


def test_the_cases_are_well_formed():
    assert len(CASES) >= 300
    for case in CASES:
        assert case.area in {"api", "cli", "files", "executor"}, case
        assert case.expect in {"error", "ok", "warning"}, case
        assert case.code is None or not case.argv, f"a case runs API source or gcsim arguments, not both: {case}"
        assert 0 < case.timeout <= 120, case


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{i + 1}-{c.area}" for i, c in enumerate(CASES)])
def test_case(run, index):
    case, result = CASES[index], run["cases"][index]
    assert result["fault"] == case.fault
    where = f"case {index + 1} ({case.area}: {case.fault})"
    assert result["ok"], f"{where} expected {case.expect!r}, got {result['outcome']}"


# a file's digest as an answer quotes it (``sha256 985f2195eb6f...``): the bytes of a file of floats that
# BLAS computed differ between kernels, so the digest is a property of the machine, not of gcsim
_DIGEST = re.compile(r"\b[0-9a-f]{12}\.\.\.")


def _comparable(table: str) -> list[list[str]]:
    """The table's lines, a row split into cells; an executor case's answer cut to its exception's name
    or exit status (the words after it depend on which rank fails first: a race, not a property), and
    file digests masked."""
    out = []
    for line in table.splitlines():
        cells = re.split(r"(?<!\\)\|", _DIGEST.sub("<digest>...", line))
        if len(cells) > 6 and cells[2].strip() == "executor":
            cells[5] = cells[5].split(":", 1)[0]
        out.append(cells)
    return out


def test_the_docs_table_is_this_runs_table(run):
    committed, rendered = TABLE.read_text(), run["table"]
    if _comparable(committed) != _comparable(rendered):
        diff = "".join(
            list(difflib.unified_diff(committed.splitlines(True), rendered.splitlines(True), "committed", "this run"))[
                :40
            ]
        )
        pytest.fail(
            "docs/reliability.md is not the table of this run; regenerate it with "
            f"`.venv/bin/python scripts/reliability_table.py`:\n{diff}"
        )
