"""examples/train_cerar_ddp.py end to end: two gloo ranks, through its own launcher and through torchrun.

Each run designs and exports a CERAR encoder, loads it on every rank, trains with the DDP hook
and measures the all-reduce once.  The test re-derives everything it checks from the files the
run leaves in ``--out`` (the design bundle and the gathered gradients), with its own code: the
error operators from the encoder/decoder arrays, the exact mean, the measured errors, and the
predicted bound (approximation: ``‖[E_{i,1} … E_{i,N−1}]‖₂ (Σ_{j≠i} ‖g_j‖²)^{1/2}``; rounding of
the float32 wire: ``SAFETY γ_{2L+1} √L ‖D_i‖₂ Σ_j ‖|A_j|‖₂ ‖g_j‖ + u ‖ĝ_i‖``, see the example's
docstring).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gcsim
from gcsim.cerar.export import export_design
from tolerances import SAFETY, gamma, unit_roundoff

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")  # the digits data set
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_cerar_ddp.py"
TIMEOUT = 240  # seconds for one whole run (the script's own --timeout is shorter)
LINE = re.compile(
    r"rank (\d+): all-reduce relative error (\S+) \(vs dist\.all_reduce (\S+)\); predicted bound (\S+) "
    r"= approximation (\S+) \+ rounding (\S+)"
)
#: parameters of the MLP 64-32-10 (one DDP bucket)
P = 64 * 32 + 32 + 32 * 10 + 10


def _env() -> dict[str, str]:
    """The environment without torchrun's variables (the test may itself run under a launcher)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run(args: list[str], timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def _error_operators(A: np.ndarray, D: np.ndarray) -> np.ndarray:
    """E[i, m−1] = D_i S_{m−1} A_{i−m} − I_c, from the arrays (S_s: ones at (τ+s, τ))."""
    N, c, L = D.shape
    E = np.zeros((N, N - 1, c, c))
    for m in range(1, N):
        S = np.zeros((L, c))
        S[np.arange(c) + m - 1, np.arange(c)] = 1.0
        for i in range(N):
            E[i, m - 1] = D[i] @ S @ A[(i - m) % N] - np.eye(c)
    return E


def _bound(A: np.ndarray, D: np.ndarray, local: np.ndarray, hook_sum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(approximation, rounding) bounds on ‖ĝ_i − g‖ / ‖g‖ per rank, in float64 from the files."""
    N, c, L = D.shape
    E = _error_operators(A, D)
    rows = [np.hstack(list(E[i])) for i in range(N)]  # [E_{i,1} … E_{i,N−1}], c x (N−1)c
    norms = np.linalg.norm(local, axis=1)
    total = np.linalg.norm(local.sum(axis=0))
    approx = np.array(
        [np.linalg.norm(rows[i], 2) * np.sqrt(sum(norms[j] ** 2 for j in range(N) if j != i)) for i in range(N)]
    )
    u = unit_roundoff(np.float32)
    wire = sum(np.linalg.norm(np.abs(A[j]), 2) * norms[j] for j in range(N))
    rounding = np.array(
        [
            SAFETY * gamma(2 * L + 1, np.float32) * np.sqrt(L) * np.linalg.norm(D[i], 2) * wire
            + u * np.linalg.norm(hook_sum[i])
            for i in range(N)
        ]
    )
    return approx / total, rounding / total


def _check_run(out: Path, stdout: str, *, N: int, c: int, steps: int, eps: float) -> dict:
    """Every number the run printed, re-derived from its files; returns the per-rank arrays."""
    report = json.loads((out / "report.json").read_text())
    des = gcsim.load_object(out / f"cerar_N{N}_c{c}")  # the exported design, re-verified
    assert (des.N, des.c, report["N"], report["c"]) == (N, c, N, c)
    assert des.metadata["eps"] == pytest.approx(eps, rel=1e-12)
    m = np.load(out / "measurement.npz")
    local, hook, lib = m["local"], m["hook"], m["all_reduce"]
    assert local.shape == hook.shape == (N, P) and lib.shape == (P,)
    exact = local.sum(axis=0) / N
    rel = np.linalg.norm(hook - exact, axis=1) / np.linalg.norm(exact)
    rel_lib = np.linalg.norm(hook - lib, axis=1) / np.linalg.norm(lib)
    approx, rounding = _bound(des.encoders, des.decoders, local, hook * N)
    printed = {int(g[0]): [float(x) for x in g[1:]] for g in LINE.findall(stdout)}
    assert sorted(printed) == list(range(N)), stdout
    for i in range(N):
        got = printed[i]
        # printed with 4 significant digits
        np.testing.assert_allclose(
            got, [rel[i], rel_lib[i], approx[i] + rounding[i], approx[i], rounding[i]], rtol=1e-3
        )
        assert rel[i] <= approx[i] + rounding[i], (i, rel[i], approx[i], rounding[i])
    # dist.all_reduce of the same gradients is the exact mean up to float32 rounding of N terms
    np.testing.assert_allclose(lib, exact, rtol=0, atol=SAFETY * gamma(N, np.float32) * np.abs(local).sum(axis=0).max())
    # one hook call per SGD step and one for the measurement, each L packets of ceil(P/c) float32
    L = c + N - 2
    assert report["hook_calls"] == steps + 1
    assert report["hook_bytes"] == (steps + 1) * L * (-(-P // c)) * 4
    assert report["within_bound"] is True
    # the pass/fail check: inside the design's own prediction on these gradients, ± the rounding bound
    assert report["within_interval"] is True
    lo, hi = np.array(report["interval_lo"]), np.array(report["interval_hi"])
    assert np.all(lo <= rel) and np.all(rel <= hi) and np.all(hi - lo <= 2 * rounding * (1 + 1e-3) + 1e-15)
    assert re.search(r"step +0 +loss \d", stdout)
    return {"rel": rel, "approx": approx, "rounding": rounding}


def test_example_spawns_its_own_ranks(tmp_path):
    """The default ε (float32 optimum 2⁻¹² for r* = 1): rounding and approximation of one size."""
    out = tmp_path / "run"
    steps = 6
    r = _run([str(SCRIPT), "--world-size", "2", "--out", str(out), "--steps", str(steps), "--timeout", "180"])
    assert r.returncode == 0, r.stdout + r.stderr
    res = _check_run(out, r.stdout, N=2, c=4, steps=steps, eps=2.0**-12)
    # worker N−1 = 1 is exact in exact arithmetic (theory §50.1): its error is rounding only
    assert res["approx"][1] < 1e-12
    assert 0 < res["rel"][1] <= res["rounding"][1]


@pytest.mark.skipif(importlib.util.find_spec("torch.distributed.run") is None, reason="torch.distributed.run missing")
def test_example_under_torchrun(tmp_path):
    """A large ε = 0.05: the approximation dominates and the bound is close to the measurement."""
    out = tmp_path / "run"
    steps = 4
    r = _run(
        [
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--standalone",
            str(SCRIPT),
            "--out",
            str(out),
            "--steps",
            str(steps),
            "--eps",
            "0.05",
            "--timeout",
            "180",
        ]
    )
    assert r.returncode == 0, r.stdout + r.stderr
    res = _check_run(out, r.stdout, N=2, c=4, steps=steps, eps=0.05)
    # not vacuous: rank 0's error is within a factor 10 of its bound, and the seam error
    # 1 − (1+ε)^{−N r*} of the perturbation design sets the approximation term
    assert res["rel"][0] >= 0.1 * (res["approx"][0] + res["rounding"][0])
    assert res["rounding"][0] < 0.05 * res["approx"][0]


def test_example_loads_an_existing_design(tmp_path):
    """``--design``: an optimized-like exported design is loaded, not rebuilt; the check uses its analysis."""
    des = gcsim.cerar.design(2, 3, "perturbation", eps=0.02)
    path = export_design(des, tmp_path / "designs", "mine")
    out = tmp_path / "run"
    r = _run([str(SCRIPT), "--world-size", "2", "--out", str(out), "--steps", "2", "--design", str(path)])
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["design"] == str(path.resolve()) and (report["N"], report["c"]) == (2, 3)
    assert not (out / "cerar_N2_c3.json").exists()  # nothing designed or exported
    assert report["within_interval"] is True and report["eps"] == pytest.approx(0.02)
    m = np.load(out / "measurement.npz")
    exact = m["local"].sum(axis=0) / 2
    rel = np.linalg.norm(m["hook"] - exact, axis=1) / np.linalg.norm(exact)
    np.testing.assert_allclose(report["relative_error"], rel, rtol=1e-12)
    # not vacuous: the interval is far narrower than the worst-case bound of the old check
    width = np.array(report["interval_hi"]) - np.array(report["interval_lo"])
    assert width[0] < 0.1 * report["bound"][0]


def test_example_refuses_bad_arguments(tmp_path):
    """Clear messages, exit status 2, before any process starts."""
    cases = [
        ([], "--world-size is required without torchrun"),
        (["--world-size", "1"], "at least 2 ranks"),
        (["--world-size", "2", "--eps", "-1"], "--eps: must be a finite number > 0"),
        (["--world-size", "2", "--c", "0"], "--c: must be >= 1"),
        (["--world-size", "two"], "--world-size: must be an integer"),
        (["--world-size", "2", "--design", str(tmp_path / "missing.json")], "--design: "),
    ]
    for args, message in cases:
        r = _run([str(SCRIPT), "--out", str(tmp_path / "x"), *args], timeout=60)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
    existing = tmp_path / "existing"
    export_design(gcsim.cerar.design(2, 4, "exact"), existing, "cerar_N2_c4")
    r = _run([str(SCRIPT), "--out", str(existing), "--world-size", "2"], timeout=60)
    assert r.returncode == 2 and "pass --force to replace it" in r.stderr, r.stderr
    r = _run(
        [str(SCRIPT), "--out", str(tmp_path / "y"), "--world-size", "3", "--design", str(existing / "cerar_N2_c4")]
    )
    assert r.returncode == 2 and "--design: " in r.stderr and "N = 2 ranks" in r.stderr, r.stderr
    a_file = tmp_path / "file"
    a_file.write_text("")
    r = _run([str(SCRIPT), "--out", str(a_file), "--world-size", "2"], timeout=60)
    assert r.returncode == 2 and "is not a folder" in r.stderr, r.stderr


def test_example_times_out_instead_of_hanging(tmp_path):
    """A deadline too short for the run: the ranks are killed and named, exit status 1."""
    r = _run(
        [str(SCRIPT), "--world-size", "2", "--out", str(tmp_path), "--steps", "100000", "--timeout", "2"], timeout=60
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "stalled" in r.stderr and "2 s launch timeout" in r.stderr, r.stderr
