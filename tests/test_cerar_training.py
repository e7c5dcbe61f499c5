"""The CERAR training experiment's machinery on a tiny run (gcsim.learning.cerar_training).

Two gloo ranks train a narrow version of the experiment's network (``conv_net(8)``, 17,442
parameters, one DDP bucket) for a few steps on 20 images per digit, plain DDP and the CERAR hook
with the exact design c = N = 2, in one launch, as ``run_link`` does for every link.

The exact design trains like plain DDP up to rounding, checked as tests/test_ddp_hook.py does
(Higham's summation bounds, tests/tolerances.py): at every step every rank's averaged gradient, in
both runs, lies within the float32 rounding bound of the ring that produced it around the exact
mean of the ranks' local gradients; the first step starts from the same parameters and data in
both runs, so after it the parameters differ by at most ``lr`` times both bounds plus the update's
two roundings.  (Not bit for bit: the CERAR ring strips its own symbol from what it receives, more
roundings than gloo's one addition per element; whole trajectories are not compared entry by
entry, as rounding differences grow through the training dynamics, which no bound covers.)
"""

import io

import numpy as np
import pytest

from gcsim._progress import StageProgress
from gcsim.cerar.export import export_design
from gcsim.cerar.factory import design
from gcsim.executor.netem import netem_available
from test_ddp_hook import _cerar_avg_tol, _plain_avg_tol
from tolerances import SAFETY, dot_tol, unit_roundoff

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")

from gcsim.learning.cerar_runs import PROGRESS_FILE, _read_progress  # noqa: E402
from gcsim.learning.cerar_training import (  # noqa: E402
    Evaluator,
    conv_net,
    n_parameters,
    payload_bytes,
    run_link,
    summarize_cell,
    time_to_target,
)

N, STEPS, WIDTH = 2, 3, 8
SPEC = {"seed": 0, "steps": STEPS, "batch": 8, "lr": 0.1, "momentum": 0.9, "width": WIDTH, "eval_every": 1}
SPEC.update(data_seed=0, per_class=20, record=True)
U32 = unit_roundoff(np.float32)
_OK, _WHY = netem_available()


def _variants(tmp_path):
    return [("ring", None), ("exact c=2", str(export_design(design(N, 2, "exact"), tmp_path, name="exact2")))]


def _check_cells(cells, rate):
    ring, exact = cells["ring"], cells["exact c=2"]
    P = n_parameters(WIDTH)
    for r in exact["results"] + ring["results"]:
        assert r["bucket_elements"] == [P]  # one bucket: the whole network
        assert len(r["step_seconds"]) == STEPS and min(r["step_seconds"]) > 0
    for r in exact["results"]:
        # the hook's counted payload equals L · ceil(d/c) · 4 bytes per step: L = c + N − 2 = 2
        assert r["hook_calls"] == STEPS
        assert r["hook_bytes"] == payload_bytes([P], N, 2, STEPS) == STEPS * 2 * (-(-P // 2)) * 4
    assert all(r["hook_bytes"] is None for r in ring["results"])
    # every average of both runs is the exact mean of the local gradients within its rounding bound
    des = design(N, 2, "exact")
    bounds = {"ring": [], "exact c=2": []}
    for label, cell in cells.items():
        R = cell["results"]
        for t in range(1, STEPS + 1):
            G = np.stack([np.load(r["local_grads"][t]).astype(np.float64) for r in R])
            mean = G.sum(axis=0) / N
            mean_tol = dot_tol(N + 1, np.abs(G).sum(axis=0)) / N
            ring_tol = _plain_avg_tol(G, N) if label == "ring" else _cerar_avg_tol(des, G, N)
            for i, r in enumerate(R):
                avg = np.load(r["averaged"][t]).astype(np.float64)
                tol = (ring_tol if label == "ring" else ring_tol[i]) + SAFETY * U32 * np.abs(avg) + mean_tol
                assert np.all(np.abs(avg - mean) <= tol), (label, t, i)
                bounds[label].append(tol)
    # step 1 starts from the same parameters and data: θ1 = θ0 − lr·avg differs by the bounds
    for i, (a, b) in enumerate(zip(ring["results"], exact["results"], strict=True)):
        np.testing.assert_array_equal(np.load(a["local_grads"][1]), np.load(b["local_grads"][1]))
        th0 = np.load(a["snapshots"][0]).astype(np.float64)
        a_p, a_c = (np.load(r["averaged"][1]).astype(np.float64) for r in (a, b))
        step_tol = SPEC["lr"] * (bounds["ring"][i] + bounds["exact c=2"][i]) + 2 * dot_tol(
            2, np.abs(th0) + SPEC["lr"] * np.maximum(np.abs(a_c), np.abs(a_p)), np.float32
        )
        diff = np.abs(np.load(a["snapshots"][1]).astype(np.float64) - np.load(b["snapshots"][1]))
        assert np.all(diff <= step_tol)
    assert np.abs(np.load(ring["results"][0]["snapshots"][1]) - np.load(ring["results"][0]["snapshots"][0])).max() > (
        step_tol.max()
    )  # the first step moved the parameters by more than the bound: it is not vacuous
    # drift is reported at every evaluated step: 0 for gloo's ring (every rank copies the same
    # reduced chunks), small for the exact design (each rank decodes its own rounding of the sum)
    for cell in (ring, exact):
        assert [row["step"] for row in cell["eval"]["curve"]] == list(range(STEPS + 1))
        assert len(cell["eval"]["final_acc"]) == N
    assert all(row["drift_max_abs"] == 0.0 and row["drift_l2"] == 0.0 for row in ring["eval"]["curve"])
    assert all(0.0 <= row["drift_max_abs"] < 1e-5 for row in exact["eval"]["curve"])
    row = summarize_cell(exact, rate=rate, label="exact c=2", c=2, N=N, target=0.0)
    assert row["payload_bytes_per_rank"] == row["payload_formula_bytes"]
    assert row["time_to_target_s"] == 0.0 and row["step_at_target"] == 0
    return row, summarize_cell(ring, rate=rate, label="ring", c=None, N=N, target=0.0)


def _run(tmp_path, netem, progress=None):
    ev = Evaluator(WIDTH, data_seed=0, per_class=20)
    cells = run_link(
        "1gbit" if netem else "local",
        _variants(tmp_path),
        N=N,
        spec=SPEC,
        work=tmp_path,
        evaluator=ev,
        netem=netem,
        timeout=120,
        keep=True,
        progress=progress,
    )
    # the evaluator's cache: the same parameters are evaluated once
    theta = np.load(cells["ring"]["results"][0]["snapshots"][STEPS])
    n = ev.evaluations
    assert ev.accuracy(theta.copy()) == cells["ring"]["eval"]["final_acc"][0] and ev.evaluations == n
    return cells


def test_tiny_run_bytes_drift_and_exact_equals_plain_ddp(tmp_path):
    stream = io.StringIO()
    bar = StageProgress(2 * STEPS, "cerar-training", "SGD steps", True, stream=stream, every=1e9)
    cells = _run(tmp_path, netem=False, progress=bar)
    bar.close()
    exact_row, ring_row = _check_cells(cells, "local")
    assert exact_row["wire_bytes_per_rank"] is None  # no interface to count outside a namespace
    # progress: rank 0 reported the launch's last step of its last variant; the bar counted every step
    assert _read_progress(tmp_path / "snap-local") == (2 * STEPS, "exact c=2")
    assert bar.done == 2 * STEPS and stream.getvalue().splitlines()[-1].startswith(
        f"gcsim: progress: cerar-training: {2 * STEPS}/"
    )


def test_progress_file_round_trip_and_absent(tmp_path):
    assert _read_progress(tmp_path) is None  # before rank 0 wrote anything
    (tmp_path / PROGRESS_FILE).write_text("garbage")
    assert _read_progress(tmp_path) is None


@pytest.mark.skipif(not _OK, reason=f"network emulation not available: {_WHY}")
def test_tiny_run_over_an_emulated_link_counts_interface_bytes(tmp_path):
    cells = _run(tmp_path, netem=True)
    exact_row, ring_row = _check_cells(cells, "1gbit")
    for row in (exact_row, ring_row):
        # the interface sends the payload plus TCP/IP headers and acknowledgements: a few per cent more
        payload = row["payload_formula_bytes"]
        assert payload <= row["wire_bytes_per_rank"] <= 1.25 * payload + 200_000


def test_model_and_helpers():
    assert sum(p.numel() for p in conv_net(8).parameters()) == n_parameters(8) == 17_442
    assert n_parameters() >= 1_000_000
    assert payload_bytes([10, 7], 4, None, 3) == 3 * (2 * 3 * 3 * 4 + 2 * 3 * 2 * 4)
    assert time_to_target([{"step": 0, "seconds": 0.0, "test_acc": 0.5}], 0.9) == (None, None)
