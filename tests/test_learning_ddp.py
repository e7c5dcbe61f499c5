"""CERAR through the DDP hook in a real training loop: accuracy vs exact all-reduce, replica drift."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gcsim.cerar.constructions import design
from gcsim.learning.ddp_cerar import ddp_cerar_experiment


@pytest.fixture(scope="module")
def frame():
    return ddp_cerar_experiment({"allreduce": None, "exact": design(3, 3, "exact"),
                                 "approx": design(3, 6, "perturbation", eps=0.05)},
                                N=3, steps=12, eval_every=6, batch=16, timeout=240)


def test_exact_design_matches_allreduce_and_replicas_agree(frame):
    last = frame[frame.step == 12].set_index(["label", "rank"])
    for r in range(3):
        assert last.loc[("exact", r), "test_acc"] == pytest.approx(last.loc[("allreduce", r), "test_acc"], abs=0.01)
        assert last.loc[("exact", r), "train_loss"] == pytest.approx(last.loc[("allreduce", r), "train_loss"],
                                                                      rel=1e-3)
    assert frame[frame.label == "allreduce"]["drift"].max() == 0.0
    assert frame[frame.label == "exact"]["drift"].max() < 1e-4


def test_approximate_design_drifts_and_sends_fewer_bytes(frame):
    approx = frame[frame.label == "approx"]
    assert approx[approx.step == 12]["drift"].max() > 100 * frame[frame.label == "exact"]["drift"].max()
    assert approx[approx.step == 0]["drift"].max() == 0.0  # identical start
    # per step and rank the hook sends L * ceil(P / c) float32 scalars; P = 64*128+128+128*10+10
    P = 64 * 128 + 128 + 128 * 10 + 10
    exact_bytes = frame[frame.label == "exact"]["hook_bytes"].iloc[0]
    approx_bytes = approx["hook_bytes"].iloc[0]
    calls = exact_bytes / ((3 + 3 - 2) * -(-P // 3) * 4)
    assert calls == pytest.approx(round(calls)) and round(calls) >= 12
    assert approx_bytes == pytest.approx(round(calls) * (6 + 3 - 2) * -(-P // 6) * 4)
