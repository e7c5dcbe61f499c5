"""torch.distributed engine (gloo): collectives, byte counts, PS gradient coding, faults, CLI.

Multi-process tests are few and small (process start is the cost); every launch has a
timeout, so a dead rank can only fail a test, never hang it.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

import gcsim
from gcsim.cerar.constructions import design
from gcsim.cerar.export import export_design
from gcsim.cerar.protocol import simulate
from gcsim.coding.evaluate import fixed_decoder_error, optimal_error
from gcsim.errors import InvalidArgumentError
from gcsim.executor import torchdist as td


def _ceil(a, b):
    return -(-a // b)


def test_byte_formulas_by_hand():
    # CERAR: (c+N-2) packets of ceil(d/c); ring: 2(N-1) packets of ceil(d/N)
    assert td.cerar_bytes(4, 8, 1001, 4) == 10 * 126 * 4
    assert td.ring_bytes(4, 1001, 4) == 6 * 251 * 4
    assert td.predicted_byte_ratio(4, 16) == pytest.approx(6 * 16 / (4 * 18))


def test_collectives_n3_against_allreduce_simulator_and_formulas():
    N, d = 3, 50  # d divisible by neither N nor any c: padding is exercised
    designs = {"exact3": design(3, 3, "exact"), "exact2": design(3, 2, "exact"),
               "pert5": design(3, 5, "perturbation", eps=0.05)}
    res = td.run_collectives(N, d, designs=designs, dtype="float64", seed=3, return_outputs=True, timeout=90)
    g = np.random.default_rng(3).standard_normal((N, d))  # same seeded gradients, recomputed here
    total = g.sum(axis=0)
    S = res["summary"]
    for algo in ("allreduce", "ring", "exact3", "exact2"):
        assert S[algo]["max_rel_error"] < 1e-12, algo
        assert S[algo]["max_rel_error_vs_allreduce"] < 1e-12, algo
    assert S["ring"]["bytes_sent"] == [2 * (N - 1) * _ceil(d, N) * 8] * N
    for name, c in (("exact3", 3), ("exact2", 2), ("pert5", 5)):
        assert S[name]["bytes_sent"] == [(c + N - 2) * _ceil(d, c) * 8] * N, name
    # the approximate design: every rank's output equals the NumPy round simulator's
    sim = simulate(designs["pert5"], g).outputs
    outs = np.stack([r["algorithms"]["pert5"]["output"] for r in res["ranks"]])
    np.testing.assert_allclose(outs, sim, rtol=1e-10, atol=1e-10)
    assert S["pert5"]["max_rel_error"] == pytest.approx(
        np.max(np.linalg.norm(sim - total, axis=1)) / np.linalg.norm(total), rel=1e-6)
    assert S["pert5"]["max_rel_error"] > 1e-4   # c > N cannot be exact (SPEC §5)


def test_collectives_n4_float32_from_exported_design(tmp_path):
    path = export_design(design(4, 4, "exact"), tmp_path, "ring4")
    res = td.run_collectives(4, 37, designs={"file": str(path)}, dtype="float32", seed=1, timeout=90)
    S = res["summary"]
    for algo in ("ring", "file"):
        assert S[algo]["max_rel_error_vs_allreduce"] < 1e-5
        assert S[algo]["max_rel_error"] < 1e-5
    # c = N: CERAR moves exactly what ring all-reduce moves
    assert S["file"]["bytes_sent"] == S["ring"]["bytes_sent"] == [6 * 10 * 4] * 4
    assert S["file"]["algbw"] > 0 and S["file"]["busbw"] == pytest.approx(S["file"]["algbw"] * 6 / 4)


def test_ring_member_death_is_a_clear_error_not_a_hang():
    with pytest.raises(td.RankFailure) as info:
        td.run_collectives(3, 16, designs={"c": design(3, 3, "exact")}, algorithms=["c"], die_rank=1,
                           timeout=30, op_timeout=10)
    msg = str(info.value)
    assert "RingFailureError" in msg and "rank 1" in msg


def _ls_gradients(seed, N, p, rows):
    # independent recomputation of the seeded least-squares partial gradients
    rng = np.random.default_rng(seed)
    Xs = rng.standard_normal((N, rows, p))
    ys = rng.standard_normal((N, rows))
    theta = rng.standard_normal(p)
    return np.stack([Xs[i].T @ (Xs[i] @ theta - ys[i]) for i in range(N)])


def test_parameter_server_first_arrivals_with_a_dead_worker():
    A = gcsim.bibd(7, 3, 1).assignment  # 7 parts x 7 workers
    sch = gcsim.encode(A, 2, "rd", eps=0.1, seed=2)
    delays = [0.0, 0.0, 0.02, 0.0, 0.6, 0.0, 0.01]
    rep = td.run_parameter_server(sch, stragglers=2, delays=delays, die=[3], d=9, seed=5, drain=0.2,
                                  timeout=60)
    assert rep["exitcodes"][4] == 17 and rep["workers"][3] is None   # worker 3 = rank 4 died
    assert sorted(rep["used"]) == [0, 1, 2, 5, 6] and rep["missing"] == [3, 4]
    assert 3 in rep["silent"]
    mask = np.zeros(7, dtype=bool)
    mask[rep["used"]] = True
    # decoded gradient from first principles
    g = _ls_gradients(5, 7, 9, 4)
    w = _ceil(9, 2)
    gp = np.zeros((7, 2 * w))
    gp[:, :9] = g
    tilde = np.array([[sum(sch.B[k * 7 + i, j] * gp[i, k * w:(k + 1) * w] for k in range(2) for i in range(7))
                       for j in range(7)]])[0]
    X = np.asarray(rep["decoder"])
    ghat = np.concatenate([sum(X[a, l] * tilde[j] for a, j in enumerate(rep["used"])) for l in range(2)])[:9]
    np.testing.assert_allclose(rep["decoded"], ghat, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rep["gradient"], g.sum(axis=0), rtol=1e-12)
    assert rep["error_truncated"] == pytest.approx(np.sum((ghat - g.sum(axis=0)) ** 2), rel=1e-9)
    assert rep["error"] >= rep["error_truncated"]
    assert rep["predicted_error"] == pytest.approx(rep["error"], rel=1e-9)
    assert rep["residual"] == pytest.approx(optimal_error(sch, mask, method="svd"), rel=1e-9, abs=1e-12)


def test_parameter_server_deadline_with_fixed_decoder():
    A = gcsim.bibd(7, 3, 1).assignment
    sch = gcsim.encode(A, 1, "rd", seed=0)
    rep = td.run_parameter_server(sch, deadline=0.4, delays=[0, 0, 0, 3.0, 0, 0, 0], decoder="fixed", d=5,
                                  seed=1, timeout=60)
    assert 3 in rep["missing"] and 3 not in rep["used"]
    mask = np.zeros(7, dtype=bool)
    mask[rep["used"]] = True
    assert rep["residual"] == pytest.approx(fixed_decoder_error(sch, mask), rel=1e-9)
    assert rep["predicted_error"] == pytest.approx(rep["error"], rel=1e-9)
    assert rep["decision_seconds"] < 3.0


def test_validation_names_the_argument():
    sch = gcsim.encode(np.eye(3, dtype=int), 1, "naive")
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        td.run_parameter_server(sch, stragglers=4)
    with pytest.raises(InvalidArgumentError, match="delays"):
        td.run_parameter_server(sch, delays=[0.0, -1.0, 0.0])
    with pytest.raises(InvalidArgumentError, match="decoder"):
        td.run_parameter_server(gcsim.coding.schemes.Scheme.from_matrix(np.eye(3), np.eye(3, dtype=int), 1),
                                decoder="fixed")   # a custom scheme without reference decoder
    with pytest.raises(InvalidArgumentError, match="designs"):
        td.run_collectives(3, 8, designs={"x": design(4, 4, "exact")})
    with pytest.raises(InvalidArgumentError, match="world_size"):
        td.launch(td.collectives_job, 0)


def test_cli_run_cerar_gloo_subprocess(repo_root):
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    p = subprocess.run([sys.executable, "-m", "gcsim", "run-cerar", "--engine", "gloo", "--workers", "3", "--c", "3",
                        "--d", "64", "--json"], capture_output=True, text=True, timeout=120, cwd=repo_root, env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["bytes_sent"] == [4 * _ceil(64, 3) * 4] * 3
    assert out["itemsize"] == 4 and out["d"] == 64 and out["seconds"] > 0
    assert out["max_rel_error"] < 1e-5


def _stall_job(rank, world_size):
    import time
    if rank == 1:
        time.sleep(60)          # a stalled rank: the launcher must kill it
    return rank


def test_launcher_kills_a_stalled_rank():
    # deadline = rank 0's report + 0.5 s (the same kill path as the overall timeout, but
    # independent of how long process start-up takes on a loaded machine)
    res = td.launch(_stall_job, 2, timeout=50.0, grace_after_rank0=0.5)
    assert res.results[0] == 0 and res.results[1] is None
    assert res.killed == [1] and not res.ok and res.exitcodes[1] != 0
    assert res.seconds < 45
    with pytest.raises(td.RankFailure, match="did not report"):
        res.raise_on_failure()


def test_seeded_delays_are_reproducible():
    a, b = td.seeded_delays(6, 4, 0.1), td.seeded_delays(6, 4, 0.1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, td.seeded_delays(6, 5, 0.1)) and np.all(a >= 0)


def test_cli_run_gc_in_process(capsys):
    from gcsim.cli import main

    rc = main(["run-gc", "--engine", "gloo", "--design", "bibd:7,3,1", "--m", "1", "--stragglers", "1",
               "--workers-die", "1", "--d", "6", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["workers_died"]) == 1 and out["workers_died"][0] in out["missing"]
    assert len(out["used"]) == 6 and out["n"] == 7
    assert out["predicted_error"] == pytest.approx(out["error"], rel=1e-9)
    assert out["residual"] == pytest.approx(out["simulated_error"], rel=1e-9, abs=1e-12)
