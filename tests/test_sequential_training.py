"""scripts/sequential_training.py: the exact-gradient model and M-SGC's per-job outcome (theory §62.4)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sequential_training import _example_weights, exact_training, round_times, simulate  # noqa: E402

from gcsim.coding.sequential import SelectiveRepeat, markov_masks  # noqa: E402
from gcsim.coding.sequential_multiplexed import MultiplexedSGC  # noqa: E402
from gcsim.learning.datasets import load_digits  # noqa: E402
from gcsim.learning.models import MLP  # noqa: E402
from gcsim.learning.train import CodeSpec, partition, train  # noqa: E402


def _brute_force(code: MultiplexedSGC, masks: np.ndarray, jobs: int) -> np.ndarray:
    """Per job, the round it decodes in (t + T, or with no coded part the round its last chunk arrives), else
    -1, from the masks by replaying each worker's
    schedule chunk by chunk (which chunks of the job arrived by which round), not by the simulator's counts."""
    n, B, W, lam = code.params
    T = code.delay
    out = np.full(jobs, -1)
    for t in range(jobs):
        senders = np.zeros(B, dtype=int)
        complete, last = True, t
        for j in range(n):
            have: set[int] = set()
            for r in range(t, t + T + 1):
                k = r - t
                if k <= W - 2:
                    chunk: int | None = k
                else:  # coded slot g = k - (W - 1): the group if every chunk arrived before, else a missing chunk
                    if len(have) == W - 1:
                        senders[k - (W - 1)] += bool(masks[r, j])
                        continue
                    chunk = min(set(range(W - 1)) - have)
                if masks[r, j] and chunk not in have:
                    have.add(chunk)
                    last = max(last, r)
            complete &= len(have) == W - 1
        if complete and (lam == n or np.all(senders >= n - lam)):
            out[t] = t + T if lam < n else last
    return out


@pytest.mark.parametrize("params", [(4, 1, 3, 1), (5, 2, 3, 2), (4, 2, 4, 4)])
def test_multiplexed_outcome_matches_brute_force(params):
    n, B, W, lam = params
    code = MultiplexedSGC(n, B, W, lam)
    for seed in range(6):
        masks = markov_masks(n, 40, 0.15, 0.5, seed=seed)
        lost = simulate(code, masks, None)
        assert lost.decoded.tolist() == _brute_force(code, masks, lost.decoded.size).tolist()
        waited = simulate(code, masks, 0.0)  # the master's wait rule: every job decodes by its deadline
        assert np.all((waited.decoded >= 0) & (waited.decoded <= np.arange(waited.decoded.size) + code.delay))
    assert 0 < (lost.decoded >= 0).sum() < lost.decoded.size  # the cases include lost and decoded jobs


def test_exact_training_matches_train_without_staleness():
    data = load_digits(seed=0)
    n, iters = 4, 5
    spec = CodeSpec("uncoded", np.eye(n, dtype=int), decoder="arrivals")
    hist = train(
        spec,
        data,
        model=MLP((data.n_features, 32, data.n_classes)),
        iterations=iters,
        eval_every=1,
        lr=0.5,
        seed=1,
        init_seed=1000,
        p=0.0,
    ).history
    # one model (k = 0 of 1): job t applied at the end of its own round, evaluated after 0, 2 and 5 updates
    ends = np.arange(1.0, iters + 1)
    rows = exact_training(data, 1, 0, 0.5, n, np.arange(iters), 1, ends, [0.5, 2.0, 10.0])
    for (loss, acc), i in zip(rows, (0, 2, 5), strict=True):
        assert loss == pytest.approx(hist.train_loss[i], rel=1e-9)
        assert acc == pytest.approx(hist.test_acc[i], abs=1e-12)


def test_exact_training_applies_stale_gradients_and_drops():
    data = load_digits(seed=0)
    ends = np.arange(1.0, 7)
    # jobs 0 and 1 of one model: job 1 starts before job 0 is applied (stale) and both land in round 3
    stale = exact_training(data, 0, 0, 0.5, 4, np.array([3, 3, -1, -1, -1, -1]), 1, ends, [10.0])
    fresh = exact_training(data, 0, 0, 0.5, 4, np.array([0, 1, -1, -1, -1, -1]), 1, ends, [10.0])
    none = exact_training(data, 0, 0, 0.5, 4, np.full(6, -1), 1, ends, [0.5, 10.0])
    assert stale[0][0] != fresh[0][0]
    assert none[0] == none[1]  # every job dropped: the initial parameters


def test_round_times_scale_multiplexed_slots():
    code, sr = MultiplexedSGC(20, 2, 5, 6), SelectiveRepeat(20, 2, 5, 6)
    masks = np.ones((12, 20), dtype=bool)
    unit, extra = np.full(12, sr.load), np.zeros(12)
    t = round_times(simulate(code, masks, 0.0), unit, extra, sr.load)
    assert t[code.delay] == pytest.approx(code.load) and t[0] == pytest.approx(code.load / code.minitasks)
    assert round_times(simulate(sr, masks, None), unit, extra, sr.load) == pytest.approx(unit)


def test_least_squares_weights_scale_each_sub_parts_examples():
    """M-SGC's least-squares gradient (§62.5): sub-part p's examples weighted by its coefficient; checked
    against the gradient of the weighted mean loss written out from the model's per-example gradients."""
    data = load_digits(seed=0)
    n, N = 4, 10
    rng = np.random.default_rng(3)
    w = rng.random(N)
    ex = _example_weights(w, (n, 7))
    assert ex.shape == (n, 7) and [float(v) for v in np.unique(ex.ravel()[:3])] == [float(w[0])]
    assert np.array_equal(_example_weights(np.ones(N), (n, 7)), np.ones((n, 7)))
    ends = np.arange(1.0, 3)
    jw = np.ones((2, N))
    ones = exact_training(data, 0, 0, 0.5, n, np.array([0, -1]), 1, ends, [10.0], job_weights=jw)
    plain = exact_training(data, 0, 0, 0.5, n, np.array([0, -1]), 1, ends, [10.0])
    assert ones == plain  # every weight 1: the exact gradient, bit for bit
    jw[0] = w
    got = exact_training(data, 0, 0, 0.5, n, np.array([0, -1]), 1, ends, [10.0], job_weights=jw)
    # reference: theta - lr * sum_x w_x grad l(x) / (n b), one example at a time
    parts = partition(data.n_train, n, 0)
    x, y = data.x_train[parts].reshape(-1, data.n_features), data.y_train[parts].ravel()
    model = MLP((data.n_features, 32, data.n_classes))
    theta = model.init(0)
    wx = _example_weights(w, parts.shape).ravel()
    g = sum(wx[i] * model.loss_and_grad(theta, x[i : i + 1], y[i : i + 1])[1] for i in range(y.size)) / y.size
    ref = theta - 0.5 * g
    assert got[0][0] == pytest.approx(model.loss(ref, data.x_train, data.y_train), rel=1e-9)
    with pytest.raises(SystemExit):
        _example_weights(np.ones(40), (4, 7))
