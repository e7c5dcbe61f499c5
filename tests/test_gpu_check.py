"""benchmarks/gpu_check.sh: one command that skips cleanly without a GPU (issue #21 item 5).

The GPU parts need a GPU; here (CPU only) the script must exit 0 and write a JSON saying that no
GPU was found, into the folder it was given and nowhere else.  The comparison it applies on a GPU
(CuPy vs NumPy within the sum of the two certified bounds) is checked on two independent
computations: gcsim's batched evaluator and a per-pattern ``numpy.linalg.lstsq``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gcsim
from exact_lstsq import lstsq_error
from gcsim.coding.stragglers import FixedModel
from gcsim.executor.arrays import batched_optimal_error
from guards import load_script

ROOT = Path(__file__).resolve().parent.parent


def _gpu_present() -> bool:
    nvsmi = shutil.which("nvidia-smi")
    if nvsmi and subprocess.run([nvsmi, "-L"], capture_output=True).returncode == 0:
        return True
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def _module():
    return load_script("benchmarks/gpu_check.py", "gpu_check")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.skipif(_gpu_present(), reason="a GPU is present: the script runs the real check")
def test_gpu_check_without_gpu_skips_cleanly(tmp_path):
    out = tmp_path / "results"
    p = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no NVIDIA GPU" in p.stdout
    assert sorted(f.name for f in out.iterdir()) == ["gpu_check.json"]  # nothing else written there
    assert sorted(f.name for f in tmp_path.iterdir()) == ["results"]  # nor in the working folder
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["gpu"] is False and report["status"] == "skipped" and report["ok"] is True
    assert "no GPU" in report["reason"]
    assert "nccl" not in report and "cupy_batched_s" not in report


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.skipif(_gpu_present(), reason="a GPU is present: the script runs the real check")
def test_gpu_check_with_a_gpu_but_no_gpu_software_says_so(tmp_path):
    """nvidia-smi lists a GPU, but neither CuPy nor a CUDA torch is in the venv: a skip that names the cause."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text('#!/bin/sh\necho "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n')
    (fake / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = tmp_path / "results"
    p = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["gpu"] is True and report["status"] == "skipped"
    assert report["nvidia_smi"] == ["GPU 0: NVIDIA H200 (UUID: GPU-0)"]
    assert "no GPU software in this venv" in report["reason"] and "cupy" in report["reason"].lower()


def test_gpu_check_bound_accepts_independent_computations_and_rejects_a_real_difference():
    mod = _module()
    sch = gcsim.encode(gcsim.bibd(91, 10, 1), 2, "rd", eps=0.0, seed=0)
    masks = FixedModel(sch.n, 20).sample(40, seed=1)
    bound = mod.pattern_bounds(sch.B, masks, 2)
    assert bound.shape == (40,) and np.all(bound > 0) and np.all(np.isfinite(bound))
    ours = batched_optimal_error(sch, masks, xp="numpy")
    lstsq = np.array([lstsq_error(sch.B, mk, 2) for mk in masks])
    ok, worst = mod.backends_agree(ours, lstsq, bound)
    assert ok and worst <= 1.0
    # a difference of 3 bounds in one pattern is refused, as is a NaN or a shape mismatch
    bad = ours.copy()
    bad[7] += 3 * bound[7]
    ok, worst = mod.backends_agree(bad, lstsq, bound)
    assert not ok and worst > 1.0
    bad[7] = np.nan
    assert mod.backends_agree(bad, lstsq, bound) == (False, float("inf"))
    assert mod.backends_agree(ours[:-1], lstsq, bound)[0] is False


def test_gpu_check_torch_part_runs_on_gloo_cpu(capsys, monkeypatch):
    """Parts 2 and 3 on CPU tensors, 2 gloo ranks: collectives against the bound, DDP steps plain vs the hook
    (its public state, drift and re-sync), and the coded trainer against NumPy's lstsq."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the ranks import the job by module name
    monkeypatch.delitem(sys.modules, "gpu_check", raising=False)
    mod = importlib.import_module("gpu_check")
    argv = ["--dry-run", "--patterns", "20", "--torch-cpu", "2", "--d", "1001", "--repeats", "2", "--steps", "2"]
    argv += ["--coded-steps", "2"]
    assert mod.main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    part = report["torch_cpu"]
    assert report["ok"] and part["world_size"] == 2 and part["backend"] == "gloo"
    assert set(part["collectives"]) == {"allreduce", "ring", "cerar exact c=N"}
    for row in part["collectives"].values():  # every sum within 2 SAFETY γ_N Σ|g_i| of dist.all_reduce's
        assert 0.0 <= row["max_diff_vs_allreduce_over_bound"] <= 1.0 and row["median_seconds"] > 0
    ddp = part["ddp"]
    assert set(ddp["median_step_seconds"]) == {"plain DDP", "CERAR exact hook", "CERAR lean hook"}
    assert ddp["batch_per_rank"] == 32
    assert ddp["max_param_diff_after_steps"] < 1e-4  # exact design: the same training up to float32 round-off
    # the CERAR hook's public state (CerarHookState), read after the steps: float32 buckets, exact design
    state = ddp["hook_state"]
    assert state["wire_dtype"] == "torch.float32" and state["compute_dtype"] == "None" and state["calls"] >= 2
    assert state["bytes_sent"] > 0 and state["precision_ok"] is True
    assert 0.0 <= ddp["hook_replica_drift"] < 1e-4 and ddp["hook_replica_drift_after_resync"] == 0.0
    # the lean schedule (theory §51.4): the same training to float32 round-off, at most c + N + 2 (+1) packets
    lean = ddp["lean_hook_state"]
    assert lean["schedule"] == "lean" and state["schedule"] == "default" and lean["calls"] == state["calls"]
    assert (lean["c"], lean["N"]) == (1, 2)  # the exact c = N = 2 design lacks the shift pattern: c = 1
    assert lean["bytes_sent"] > 0 and ddp["lean_max_param_diff_vs_default"] < 1e-4
    assert 2 * lean["c"] <= lean["peak_packets"] <= lean["c"] + lean["N"] + 3
    # part 3: CodedTrainer, 13 coded workers on the 2 ranks, the 117,858-parameter CNN
    coded = report["coded_cpu"]
    assert coded["backend"] == "gloo" and coded["world_size"] == 2 and coded["coded_workers"] == 13
    assert coded["d"] == 117_858 and coded["steps"] == 2 and coded["table_lookups"] + coded["fallbacks"] == 2
    assert coded["replicas_identical"] is True and coded["masks_as_the_model"] is True
    assert coded["max_opt_error_diff_vs_lstsq"] <= 1e-9  # each step's err(F)/(mN) against NumPy's lstsq
    assert "coded_nccl" not in report  # the dry run starts no NCCL job
