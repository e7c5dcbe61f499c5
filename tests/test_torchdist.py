"""torch.distributed engine (gloo): collectives, byte counts, PS gradient coding, faults, CLI.

Multi-process tests are few and small (process start is the cost); every launch has a
timeout, so a dead rank can only fail a test, never hang it.
"""

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import gcsim
from executor_tolerances import (
    cerar_operator_tol,
    cerar_output_tol,
    decode_tol,
    fixed_residual_tol,
    lsq_err_tol,
    relative_tol,
    sq_diff_tol,
    sum_tol,
)
from gcsim import executor as td
from gcsim.cerar import traffic
from gcsim.cerar.export import export_design
from gcsim.cerar.factory import design
from gcsim.cerar.protocol import simulate
from gcsim.coding.evaluate import fixed_decoder_error, optimal_error
from gcsim.errors import InvalidArgumentError
from tolerances import SAFETY, dot_tol, gamma

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)


def _ceil(a, b):
    return -(-a // b)


def test_byte_formulas_by_hand():
    # CERAR: (c+N-2) packets of ceil(d/c); ring: 2(N-1) packets of ceil(d/N)
    assert traffic.cerar_bytes(4, 8, 1001, 4) == 10 * 126 * 4
    assert traffic.ring_bytes(4, 1001, 4) == 6 * 251 * 4
    # 2(N−1)c / (N(c+N−2)) from integers: one rounded division of exact integers
    exact = Fraction(6 * 16, 4 * 18)
    assert abs(Fraction(traffic.predicted_byte_ratio(4, 16)) - exact) <= Fraction(dot_tol(1, float(exact)))


def test_collectives_n3_against_allreduce_simulator_and_formulas():
    N, d = 3, 50  # d divisible by neither N nor any c: padding is exercised
    designs = {
        "exact3": design(3, 3, "exact"),
        "exact2": design(3, 2, "exact"),
        "pert5": design(3, 5, "perturbation", eps=0.05),
    }
    res = td.run_collectives(N, d, designs=designs, dtype="float64", seed=3, return_outputs=True, timeout=90)
    g = np.random.default_rng(3).standard_normal((N, d))  # same seeded gradients, recomputed here
    total = g.sum(axis=0)
    S = res["summary"]
    # elementwise bounds on each algorithm's output: a sum of N terms (library, own ring), or
    # the CERAR ring's encode / 2L additions / decode (exact designs); the reference sum too
    ssum = sum_tol(g)
    out_tol = {"allreduce": ssum, "ring": ssum}
    for name in ("exact3", "exact2", "pert5"):
        des = designs[name]
        out_tol[name] = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d].max(axis=0)
    for algo in ("allreduce", "ring", "exact3", "exact2"):
        assert S[algo]["max_rel_error"] <= relative_tol(out_tol[algo] + ssum, total), algo
        assert S[algo]["max_rel_error_vs_allreduce"] <= relative_tol(out_tol[algo] + ssum, total), algo
    assert S["ring"]["bytes_sent"] == [2 * (N - 1) * _ceil(d, N) * 8] * N
    for name, c in (("exact3", 3), ("exact2", 2), ("pert5", 5)):
        assert S[name]["bytes_sent"] == [(c + N - 2) * _ceil(d, c) * 8] * N, name
    # the approximate design: every rank's output equals the NumPy simulator's, the ranks' within
    # the ring's rounding bound of the exact outputs, the simulator's (its end-to-end operator
    # route here) within its own bound (theory §52.2)
    sim = simulate(designs["pert5"], g).outputs
    outs = np.stack([r["algorithms"]["pert5"]["output"] for r in res["ranks"]])
    des = designs["pert5"]
    tol5 = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    tol5 = tol5 + cerar_operator_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    assert np.all(np.abs(outs - sim) <= tol5)
    # | ‖a − t‖ − ‖b − t‖ | <= ‖a − b‖ (+ the exact sum's own error), relative to ‖t‖
    sim_rel = np.max(np.linalg.norm(sim - total, axis=1)) / np.linalg.norm(total)
    assert abs(S["pert5"]["max_rel_error"] - sim_rel) <= relative_tol(tol5.max(axis=0) + ssum, total)
    # c > N cannot be exact (theory §50.2): the error is well above what round-off could produce
    assert S["pert5"]["max_rel_error"] > relative_tol(out_tol["pert5"] + ssum, total)


def test_collectives_n4_float32_from_exported_design(tmp_path):
    des = design(4, 4, "exact")
    path = export_design(des, tmp_path, "ring4")
    res = td.run_collectives(4, 37, designs={"file": str(path)}, dtype="float32", seed=1, timeout=90)
    S = res["summary"]
    # float32 gradients (as the job draws them); the references are float64 sums of them
    g = np.random.default_rng(1).standard_normal((4, 37)).astype(np.float32).astype(np.float64)
    total = g.sum(axis=0)
    tol = {
        "ring": sum_tol(g, np.float32),
        "file": cerar_output_tol(des.encoders, des.decoders, g, np.float32).reshape(4, -1)[:, :37].max(axis=0),
    }
    lib = sum_tol(g, np.float32)  # dist.all_reduce: a float32 sum of 4 terms
    for algo in ("ring", "file"):
        assert S[algo]["max_rel_error"] <= relative_tol(tol[algo] + sum_tol(g), total)
        assert S[algo]["max_rel_error_vs_allreduce"] <= relative_tol(tol[algo] + lib, total)
    # c = N: CERAR moves exactly what ring all-reduce moves
    assert S["file"]["bytes_sent"] == S["ring"]["bytes_sent"] == [6 * 10 * 4] * 4
    # busbw = S/t · 2(N−1)/N and algbw = S/t: a few roundings apart
    assert S["file"]["algbw"] > 0
    assert abs(S["file"]["busbw"] - S["file"]["algbw"] * 6 / 4) <= dot_tol(4, S["file"]["busbw"])


def test_ring_member_death_is_a_clear_error_not_a_hang():
    with pytest.raises(td.RankFailure) as info:
        td.run_collectives(
            3, 16, designs={"c": design(3, 3, "exact")}, algorithms=["c"], die_rank=1, timeout=30, op_timeout=10
        )
    msg = str(info.value)
    assert "RingFailureError" in msg and "rank 1" in msg


def _ls_gradients(seed, N, p, rows):
    """Independent recomputation of the seeded least-squares partial gradients g_i = X_iᵀ(X_i θ − y_i),
    and the magnitudes |X_i|ᵀ(|X_i||θ| + |y_i|) that bound their rounding (p + rows + 1 terms)."""
    rng = np.random.default_rng(seed)
    Xs = rng.standard_normal((N, rows, p))
    ys = rng.standard_normal((N, rows))
    theta = rng.standard_normal(p)
    g = np.stack([Xs[i].T @ (Xs[i] @ theta - ys[i]) for i in range(N)])
    scale = np.stack([np.abs(Xs[i]).T @ (np.abs(Xs[i]) @ np.abs(theta) + np.abs(ys[i])) for i in range(N)])
    return g, scale


def _check_ps_report(rep, sch, g, gscale, decoder_full):
    """The PS's numbers against an independent recomputation, each within its rounding bound."""
    m, N, n = sch.m, sch.num_parts, sch.n
    d = g.shape[1]
    w = _ceil(d, m)
    mask = np.zeros(n, dtype=bool)
    mask[rep["used"]] = True
    extra = gscale.shape[1] + 4 + 1  # the partial gradients: p + rows + 1 roundings (rows = 4)
    # decoded gradient from first principles (loops), the PS's by einsum/matmul: both within
    # decode_tol of the exact value, with the partial gradients' own rounding folded in
    gp = np.zeros((N, m * w))
    gp[:, :d] = g
    tilde = [
        sum(sch.B[k * N + i, j] * gp[i, k * w : (k + 1) * w] for k in range(m) for i in range(N)) for j in range(n)
    ]
    X = decoder_full
    ghat = np.concatenate([sum(X[j, l] * tilde[j] for j in rep["used"]) for l in range(m)])[:d]
    delta = decode_tol(sch.B, X, mask, gscale, m, extra=extra).reshape(-1)
    assert np.all(np.abs(rep["decoded"] - ghat) <= 2 * delta[:d])
    gsum_tol = dot_tol(N + extra, gscale.sum(axis=0))
    assert np.all(np.abs(rep["gradient"] - g.sum(axis=0)) <= 2 * gsum_tol)
    ref = float(np.sum((ghat - g.sum(axis=0)) ** 2))
    assert abs(rep["error_truncated"] - ref) <= sq_diff_tol(ref, 2 * np.linalg.norm(delta[:d]), d)
    # a partial sum of the same squares: <= the full sum up to the two sums' relative rounding
    assert rep["error"] >= rep["error_truncated"] * (1 - 2 * SAFETY * gamma(m * w))
    # measured = predicted: two routes to the same exact vector 𝒢(B_F X − T)
    assert abs(rep["predicted_error"] - rep["error"]) <= sq_diff_tol(rep["error"], 2 * np.linalg.norm(delta), m * w)
    return mask


def test_parameter_server_first_arrivals_with_a_dead_worker():
    A = gcsim.bibd(7, 3, 1).assignment  # 7 parts x 7 workers
    sch = gcsim.encode(A, 2, "rd", eps=0.1, seed=2)
    delays = [0.0, 0.0, 0.02, 0.0, 0.6, 0.0, 0.01]
    rep = td.run_parameter_server(sch, stragglers=2, delays=delays, die=[3], d=9, seed=5, drain=0.2, timeout=60)
    assert rep["exitcodes"][4] == 17 and rep["workers"][3] is None  # worker 3 = rank 4 died
    assert sorted(rep["used"]) == [0, 1, 2, 5, 6] and rep["missing"] == [3, 4]
    assert 3 in rep["silent"]
    g, gscale = _ls_gradients(5, 7, 9, 4)
    X = np.zeros((7, 2))
    X[rep["used"]] = np.asarray(rep["decoder"])
    mask = _check_ps_report(rep, sch, g, gscale, X)
    # residual = err(B, F): lstsq here, SVD in the analysis layer, each within the lstsq bound; the
    # residual (not the decoder) is compared, which is well defined whatever the rank of B_F
    assert abs(rep["residual"] - optimal_error(sch, mask, method="svd")) <= 2 * lsq_err_tol(sch.B[:, mask], 2)


def test_parameter_server_deadline_with_fixed_decoder():
    A = gcsim.bibd(7, 3, 1).assignment
    sch = gcsim.encode(A, 1, "rd", seed=0)
    rep = td.run_parameter_server(
        sch, deadline=0.4, delays=[0, 0, 0, 3.0, 0, 0, 0], decoder="fixed", d=5, seed=1, timeout=60
    )
    assert 3 in rep["missing"] and 3 not in rep["used"]
    g, gscale = _ls_gradients(1, 7, 5, 4)
    X0 = np.asarray(sch.decoder)
    mask = _check_ps_report(rep, sch, g, gscale, X0)
    assert abs(rep["residual"] - fixed_decoder_error(sch, mask)) <= 2 * fixed_residual_tol(sch.B, X0, mask, 1)
    assert rep["decision_seconds"] < 3.0


def test_validation_names_the_argument():
    sch = gcsim.encode(np.eye(3, dtype=int), 1, "naive")
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        td.run_parameter_server(sch, stragglers=4)
    with pytest.raises(InvalidArgumentError, match="delays"):
        td.run_parameter_server(sch, delays=[0.0, -1.0, 0.0])
    with pytest.raises(InvalidArgumentError, match="decoder"):
        td.run_parameter_server(
            gcsim.coding.schemes.Scheme.from_matrix(np.eye(3), np.eye(3, dtype=int), 1), decoder="fixed"
        )  # a custom scheme without reference decoder
    with pytest.raises(InvalidArgumentError, match="designs"):
        td.run_collectives(3, 8, designs={"x": design(4, 4, "exact")})
    with pytest.raises(InvalidArgumentError, match="world_size"):
        td.launch(td.collectives_job, 0)


def test_cli_run_cerar_gloo_subprocess(repo_root):
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcsim",
            "cerar",
            "run",
            "--engine",
            "gloo",
            "--workers",
            "3",
            "--c",
            "3",
            "--d",
            "64",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=repo_root,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["bytes_sent"] == [4 * _ceil(64, 3) * 4] * 3
    assert out["itemsize"] == 4 and out["d"] == 64 and out["seconds"] > 0
    # the exact design c = N = 3 on float32 gradients (seed 0): within the ring's float32 bound
    des = design(3, 3, "exact")
    g = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32).astype(np.float64)
    tol = cerar_output_tol(des.encoders, des.decoders, g, np.float32).reshape(3, -1)[:, :64].max(axis=0)
    assert out["max_rel_error"] <= relative_tol(tol + sum_tol(g), g.sum(axis=0))


def _stall_job(rank, world_size):
    import time

    if rank == 1:
        time.sleep(60)  # a stalled rank: the launcher must kill it
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


def test_cli_run_gc_with_a_deadline_on_measured_times(capsys):
    """``gc run --design`` with ``--deadline`` (was: the PS's simulated clock): the coded trainer's real stragglers.

    A deadline of a day: every coded worker arrives, so each step uses all 7 (no table without fixed S: the
    certified fallback), the optimal error is NumPy's lstsq on the whole B, and the decoded sum equals the
    true sum (all-reduced separately, unencoded) to float32 rounding.
    """
    from gcsim.app.cli import main

    argv = ["gc", "run", "--design", "bibd:7,3,1", "--m", "1", "--deadline", "86400", "--iterations", "2"]
    rc = main([*argv, "--ranks", "2", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["executor"] == "coded-trainer" and out["replicas_identical"] and out["n"] == 7 and out["ranks"] == 2
    assert out["stragglers"].startswith("deadline 86400.0 s") and out["expected"] is None
    assert [r["stragglers"] for r in out["records"]] == [[], []] and out["fallbacks"] == 2
    B = gcsim.encode(gcsim.bibd(7, 3, 1), 1, "rd", seed=0, eps=0.0).B
    T = np.ones((7, 1))
    full = float(np.sum((B @ np.linalg.lstsq(B, T, rcond=None)[0] - T) ** 2) / 7)
    for r in out["records"]:
        assert abs(r["opt_error"] - full) <= 1e-12
        assert r["rel_error"] < 1e-10  # float32 messages: (a few units of 2^-24)^2 relative


def _segmented_job(rank, world_size, spec):
    """CERAR on one seeded gradient with whole packets and with packets cut into pieces."""
    from gcsim.executor.collectives import ByteCounter, cerar_all_reduce

    g = np.random.default_rng(spec["seed"]).standard_normal((world_size, spec["d"]))
    out = {}
    for name, seg in (("whole", 1 << 30), ("pieces", spec["segment_bytes"])):
        cnt = ByteCounter()
        res = cerar_all_reduce(torch.tensor(g[rank]), spec["design"], counter=cnt, segment_bytes=seg)
        out[name] = {"value": res.numpy().copy(), "sent": cnt.sent, "received": cnt.received, "packets": cnt.packets}
    return out


def test_pipelined_pieces_change_neither_bytes_nor_arithmetic():
    N, c, d = 3, 5, 50  # w = 10 float64 = 80 bytes per packet; 24-byte pieces: 4 pieces of 2-3 scalars
    des = design(3, 5, "perturbation", eps=0.05)
    spec = {
        "seed": 7,
        "d": d,
        "segment_bytes": 24,
        "design": {"N": N, "c": c, "encoders": des.encoders, "decoders": des.decoders},
    }
    R = td.launch(_segmented_job, N, (spec,), timeout=90).raise_on_failure().results
    L, w = c + N - 2, _ceil(d, c)
    for r in R:
        # the protocol acts on every column separately: cutting packets changes no operation
        np.testing.assert_array_equal(r["pieces"]["value"], r["whole"]["value"])
        for name in ("whole", "pieces"):
            assert r[name]["sent"] == r[name]["received"] == traffic.cerar_bytes(N, c, d, 8) == L * w * 8
        assert r["whole"]["packets"] == L and r["pieces"]["packets"] == L * 4
    g = np.random.default_rng(7).standard_normal((N, d))
    sim = simulate(des, g, accumulate="batched").outputs  # the same rounds, in NumPy
    tol = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    assert np.all(np.abs(np.stack([r["pieces"]["value"] for r in R]) - sim) <= 2 * tol)
