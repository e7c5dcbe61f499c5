"""Coded-gradient training: decoding paths, unbiasedness (Theorems 5-6), wall clock, determinism, validation."""
import numpy as np
import pytest

from gcsim.coding.bounds import ns_estimator_variance, rd_estimator_variance, rd_unbiased_decoder
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.baselines import fractional_repetition
from gcsim.combinatorics.bibd import projective_plane
from gcsim.errors import InvalidArgumentError
from gcsim.learning.datasets import Dataset, load_digits
from gcsim.learning.models import MLP
from gcsim.learning.train import (SGD, Adam, CodedGradient, CodeSpec, WallClockModel, compare, default_codes,
                                  partition, simulate_transmissions, train)
from gcsim.learning.unbiased import check_unbiased, decoded_samples, unbiasedness_test

FANO = projective_plane(2).assignment  # (7, 7, 3, 3, 1): r = 3


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


@pytest.fixture(scope="module")
def tiny(digits):
    """A small slice of the digits, so that training runs take milliseconds."""
    return Dataset(digits.x_train[:240], digits.y_train[:240], digits.x_test[:100], digits.y_test[:100],
                   "digits-small", 10)


def _G(N, d, seed=0):
    return np.random.default_rng(seed).standard_normal((N, d))


def _masks(n, count, seed=0, p=0.3):
    return np.random.default_rng(seed).random((count, n)) >= p


# ---------------------------------------------------------------------------------------------
# decoding paths
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    CodeSpec("rd", FANO, 2, "rd", "optimal"),
    CodeSpec("rd-unb", FANO, 2, "rd", "unbiased"),
    CodeSpec("ns", FANO, 2, "ns", "fixed", options={"dist": "gaussian"}),
    CodeSpec("naive", FANO, 3, "naive", "arrivals"),
    CodeSpec("exact", FANO, 2, "exact-gaussian", "optimal", options={"s": 1}),
])
def test_effective_route_equals_worker_transmissions(spec):
    code = CodedGradient(spec, p=0.3, seed=2)
    G = _G(7, 11)
    masks = _masks(7, 6, seed=1)
    est = code.estimates(G, masks)
    B, X = code.decoders(masks)
    for s in range(6):
        sent, g = simulate_transmissions(code.base, G, X[s])
        assert sent.shape == (7, -(-11 // spec.m))
        assert np.allclose(est[s], g)


def test_optimal_decoder_attains_optimal_error():
    """‖B_F X - T‖² of the stacked pinv decoder equals evaluate.optimal_error (Gram route)."""
    for method, opts in [("rd", {}), ("naive", {}), ("ns", {"dist": "gaussian"})]:
        code = CodedGradient(CodeSpec(method, FANO, 2, method, "optimal", options=opts), seed=3)
        masks = _masks(7, 20, seed=4, p=0.4)
        M = code.effective(masks)
        err = ((M - code.base.target()[None]) ** 2).sum(axis=(1, 2))
        assert np.allclose(err, optimal_error(code.base, masks), atol=1e-9)


def test_exact_codes_decode_exactly():
    G = _G(7, 9, 5)
    fr = CodedGradient(CodeSpec("fr", fractional_repetition(8, 1).assignment, 1, "fractional-repetition"))
    G8 = _G(8, 9, 6)
    masks = np.ones((4, 8), bool)
    masks[1, [0, 2, 4, 6]] = False  # one survivor per group
    masks[2, 3] = False
    assert np.allclose(fr.estimates(G8, masks), G8.sum(0))
    ex = CodedGradient(CodeSpec("ex", FANO, 2, "exact-gaussian", options={"s": 1}))
    one_out = ~np.eye(7, dtype=bool)  # every single straggler
    assert np.allclose(ex.estimates(G, one_out), G.sum(0), atol=1e-9)


def test_uncoded_arrivals_is_rescaled_sum():
    G = _G(5, 4, 7)
    code = CodedGradient(CodeSpec("u", np.eye(5, dtype=int), decoder="arrivals"))
    masks = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    est = code.estimates(G, masks)
    assert np.allclose(est[0], 5 / 3 * (G[0] + G[2] + G[3]))
    assert np.allclose(est[1], 0) and np.allclose(est[2], G.sum(0))


def test_rd_unbiased_decoder_matches_bounds_module():
    code = CodedGradient(CodeSpec("rd", FANO, 2, "rd", "unbiased", options={"eps": 0.3}), p=0.25, seed=9)
    mask = _masks(7, 1, seed=3)[0]
    _, X = code.decoders(mask)
    expected = rd_unbiased_decoder(code.base.diagonals, mask, 3, 0.25, eps=0.3)
    assert np.allclose(X[0], expected)


def test_redrawn_codes_differ_per_draw_and_are_reproducible():
    spec = CodeSpec("ns", FANO, 2, "ns", "optimal", redraw=True, options={"dist": "gaussian"})
    a, b = CodedGradient(spec, seed=1), CodedGradient(spec, seed=1)
    masks = np.ones((2, 7), bool)
    Ba, _ = a.decoders(masks, draws=[0, 1])
    Bb, _ = b.decoders(masks, draws=[0, 1])
    assert np.array_equal(Ba, Bb) and not np.allclose(Ba[0], Ba[1])


# ---------------------------------------------------------------------------------------------
# unbiasedness (Theorems 5 and 6) and the statistical test
# ---------------------------------------------------------------------------------------------

UNBIASED = [
    CodeSpec("rd redrawn", FANO, 2, "rd", "unbiased", redraw=True),
    CodeSpec("rd eps", FANO, 3, "rd", "unbiased", redraw=True, options={"eps": 0.5}),
    CodeSpec("ns", FANO, 2, "ns", "unbiased", options={"dist": "gaussian"}),
    CodeSpec("exact", FANO, 2, "exact-gaussian", "unbiased", options={"s": 1}),
    CodeSpec("uncoded", np.eye(7, dtype=int), 1, "naive", "fixed"),
]
BIASED = [
    CodeSpec("naive fixed", FANO, 2, "naive", "fixed"),
    CodeSpec("rd, one draw", FANO, 2, "rd", "unbiased"),
    CodeSpec("rd redrawn, optimal", FANO, 2, "rd", "optimal", redraw=True),
]


@pytest.mark.parametrize("spec", UNBIASED, ids=lambda s: s.label)
def test_unbiased_decoders_pass(spec):
    res = check_unbiased(spec, _G(7, 8, 11), 0.3, samples=3000, seed=5, alpha=0.001)
    assert res.passed, res.summary()
    assert res.relative_bias < 0.1


@pytest.mark.parametrize("spec", BIASED, ids=lambda s: s.label)
def test_biased_decoders_fail(spec):
    res = check_unbiased(spec, _G(7, 8, 11), 0.3, samples=3000, seed=5, alpha=0.001)
    assert not res.passed
    assert res.norm_pvalue < 1e-6


def test_biased_decoder_bias_matches_its_expectation():
    """Naive stacking with X_0/(1-p): E[ĝ[l]] = (1/m) Σ_k Σ_i g_i[k] (the blocks get averaged)."""
    G = _G(7, 8, 12)
    E = decoded_samples(CodeSpec("naive", FANO, 2, "naive", "fixed"), G, 0.3, samples=3000, seed=1)
    half = G.reshape(7, 2, 4).sum(axis=(0, 1)) / 2
    res = unbiasedness_test(E, np.concatenate([half, half]), alpha=0.001)
    assert res.passed, res.summary()


def test_rd_variance_matches_theorem_5():
    G = _G(7, 6, 13)
    for eps, m in [(0.0, 2), (0.4, 3)]:
        spec = CodeSpec("rd", FANO, m, "rd", "unbiased", redraw=True, options={"eps": eps})
        E = decoded_samples(spec, G, 0.2, samples=20000, seed=2)
        sq = ((E - G.sum(0)) ** 2).sum(axis=1)
        theory = rd_estimator_variance(FANO, m, 0.2, G, eps=eps)
        assert abs(sq.mean() - theory) < 4 * sq.std() / np.sqrt(sq.size)


def test_ns_variance_matches_theorem_6():
    G = _G(7, 6, 14)
    code = CodedGradient(CodeSpec("ns", FANO, 2, "ns", "unbiased", options={"dist": "gaussian"}), 0.3, seed=1)
    E = decoded_samples(code, G, 0.3, samples=20000, seed=3)
    sq = ((E - G.sum(0)) ** 2).sum(axis=1)
    theory = ns_estimator_variance(code.base, 0.3, G)
    assert abs(sq.mean() - theory) < 4 * sq.std() / np.sqrt(sq.size)


def test_unbiasedness_test_level_and_power():
    rng = np.random.default_rng(0)
    g = rng.standard_normal(5)
    cov = np.diag([1.0, 4.0, 0.25, 1.0, 9.0])
    rejections = []
    for trial in range(200):
        E = rng.multivariate_normal(g, cov, size=400)
        r = unbiasedness_test(E, g, alpha=0.05)
        rejections.append((r.coordinate_pvalue < 0.05, r.norm_pvalue < 0.05))
    rate = np.mean(rejections, axis=0)
    assert np.all(rate <= 0.1) and rate[1] >= 0.01  # nominal 5 %
    shifted = rng.multivariate_normal(g + np.array([0, 0, 0.15, 0, 0]), cov, size=4000)
    assert not unbiasedness_test(shifted, g, alpha=0.01).passed


def test_unbiasedness_test_zero_variance():
    g = np.array([1.0, 2.0])
    assert unbiasedness_test(np.tile(g, (5, 1)), g).passed
    assert not unbiasedness_test(np.tile(g + [0, 1e-3], (5, 1)), g).passed


@pytest.mark.parametrize("args,kwargs,arg", [
    ((np.ones((1, 3)), np.ones(3)), {}, "estimates"),
    ((np.ones((4, 3)), np.ones(2)), {}, "target"),
    ((np.ones((4, 3)), np.ones(3)), {"alpha": 1.5}, "alpha"),
    ((np.full((4, 3), np.nan), np.ones(3)), {}, "estimates"),
])
def test_unbiasedness_test_validation(args, kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        unbiasedness_test(*args, **kwargs)


def test_unbiased_decoder_refused_without_reference():
    with pytest.raises(InvalidArgumentError, match="decoder"):
        CodedGradient(CodeSpec("naive", FANO, 2, "naive", "unbiased"), 0.2)


# ---------------------------------------------------------------------------------------------
# wall clock, optimizers, partition
# ---------------------------------------------------------------------------------------------

def test_wallclock_model_by_hand():
    wc = WallClockModel(seconds_per_example=0.01, bandwidth=100.0, bytes_per_scalar=2, latency=0.5)
    e = [10, 30, 20]
    # d = 99, m = 2: 50 scalars -> 100 bytes -> 1 s, + 0.5 s latency
    assert wc.iteration_time(e, [True, False, True], 99, 2) == pytest.approx(0.2 + 1.5)
    assert wc.iteration_time(e, [False, False, False], 99, 2) == pytest.approx(0.3 + 1.5)
    shared = WallClockModel(0.01, 100.0, 2, 0.5, shared_link=True)
    assert shared.iteration_time(e, [True, True, True], 99, 1) == pytest.approx(0.3 + 3 * (0.5 + 1.98))
    masks = _masks(3, 50, seed=3, p=0.5)
    for model in (wc, shared):
        batch = model.iteration_times(np.array(e), masks, 99, 3)
        assert np.allclose(batch, [model.iteration_time(e, mk, 99, 3) for mk in masks])


@pytest.mark.parametrize("kwargs,arg", [({"bandwidth": 0}, "bandwidth"), ({"seconds_per_example": -1},
                                        "seconds_per_example"), ({"bytes_per_scalar": 0}, "bytes_per_scalar")])
def test_wallclock_validation(kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        WallClockModel(**kwargs)


def test_optimizers_by_hand():
    sgd = SGD(lr=0.1, momentum=0.5)
    th = sgd.step(np.array([1.0]), np.array([2.0]))        # v = 2
    th = sgd.step(th, np.array([2.0]))                      # v = 3
    assert th[0] == pytest.approx(1.0 - 0.2 - 0.3)
    adam = Adam(lr=0.01)
    th = np.array([0.0, 0.0])
    for g in ([1.0, -4.0], [3.0, -4.0]):
        th = adam.step(th, np.array(g))
    m = 0.9 * 0.1 * np.array([1.0, -4.0]) + 0.1 * np.array([3.0, -4.0])
    v = 0.999 * 0.001 * np.array([1.0, 16.0]) + 0.001 * np.array([9.0, 16.0])
    step2 = 0.01 * (m / 0.19) / (np.sqrt(v / (1 - 0.999 ** 2)) + 1e-8)
    assert np.allclose(th, -0.01 * np.sign([1.0, -4.0]) - step2, rtol=1e-6)


def test_partition_covers_without_repetition():
    P = partition(103, 10, seed=4)
    assert P.shape == (10, 10) and np.unique(P).size == 100 and P.max() < 103
    assert np.array_equal(P, partition(103, 10, seed=4))


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------

def test_training_deterministic_and_learns(tiny):
    spec = CodeSpec("rd", FANO, 2, "rd", "unbiased", redraw=True)
    kw = dict(model=MLP((64, 16, 10)), p=0.3, iterations=30, eval_every=10, lr=0.2, seed=3)
    a, b = train(spec, tiny, **kw), train(spec, tiny, **kw)
    assert a.history.equals(b.history) and np.array_equal(a.theta, b.theta)
    c = train(spec, tiny, **{**kw, "seed": 4})
    assert not np.array_equal(a.theta, c.theta)
    assert list(a.history.iteration) == [0, 10, 20, 30]
    assert a.final["train_loss"] < 0.7 * a.history.train_loss[0]
    assert a.params["d"] == 64 * 16 + 16 + 16 * 10 + 10
    assert np.all(np.diff(a.history.wallclock) > 0)


def test_training_without_stragglers_is_plain_gradient_descent(tiny):
    """p = 0: exact codes and the uncoded scheme follow GD computed directly with loss_and_grad."""
    model = MLP((64, 12, 10))
    parts = partition(tiny.n_train, 7, seed=1)
    X, y = tiny.x_train[parts.ravel()], tiny.y_train[parts.ravel()]
    theta = model.init(1)
    for _ in range(8):
        theta = theta - 0.3 * model.loss_and_grad(theta, X, y)[1]
    for spec in (CodeSpec("ns", FANO, 2, "ns", "optimal", options={"dist": "gaussian"}),
                 CodeSpec("exact", FANO, 2, "exact-vandermonde", "optimal", options={"s": 1}),
                 CodeSpec("uncoded", np.eye(7, dtype=int), 1, "naive", "arrivals")):
        res = train(spec, tiny, model=model, p=0.0, iterations=8, eval_every=8, lr=0.3, seed=1)
        assert np.allclose(res.theta, theta, atol=1e-8), spec.label
        assert np.all(res.history.rel_error.dropna() < 1e-12)


def test_minibatch_and_adam(tiny):
    spec = CodeSpec("fr", fractional_repetition(8, 1).assignment, 1, "fractional-repetition")
    res = train(spec, tiny, model=MLP((64, 10, 10)), p=0.2, iterations=20, eval_every=20, optimizer="adam",
                lr=0.01, batch_per_part=5, seed=0)
    assert res.params["batch_per_part"] == 5 and res.final["train_loss"] < res.history.train_loss[0]
    # wall clock: each worker holds 2 parts of 5 examples; 10 x 1e-5 s + (1e-3 + d*4/1e6) s per iteration
    d = res.params["d"]
    assert res.final["wallclock"] == pytest.approx(20 * (10 * 1e-5 + 1e-3 + d * 4 / 1e6))


def test_compare_and_default_codes(tiny):
    codes = default_codes()
    assert len(codes) == 9 and all(c.n == 16 for c in codes)
    frame = compare(codes[:2], tiny, model=MLP((64, 8, 10)), iterations=4, eval_every=2, seed=0)
    assert set(frame.label) == {codes[0].label, codes[1].label} and len(frame) == 6


@pytest.mark.parametrize("kwargs,arg", [
    ({"p": 1.0}, "p"), ({"p": -0.1}, "p"), ({"p": float("nan")}, "p"), ({"iterations": 0}, "iterations"),
    ({"optimizer": "rmsprop"}, "optimizer"), ({"lr": 0.0}, "lr"), ({"batch_per_part": 10 ** 6}, "batch_per_part"),
    ({"model": MLP((10, 4, 10))}, "model"), ({"eval_every": 0}, "eval_every"), ({"wallclock": 3}, "wallclock"),
])
def test_train_validation(tiny, kwargs, arg):
    spec = CodeSpec("u", np.eye(4, dtype=int), decoder="arrivals")
    with pytest.raises(InvalidArgumentError, match=arg):
        train(spec, tiny, **{"iterations": 2, **kwargs})


def test_spec_and_code_validation():
    with pytest.raises(InvalidArgumentError, match="assignment"):
        CodeSpec("x", [1, 0, 1])
    with pytest.raises(InvalidArgumentError, match="decoder"):
        CodeSpec("x", FANO, decoder="magic")
    with pytest.raises(InvalidArgumentError, match="m"):
        CodeSpec("x", FANO, m=0)
    with pytest.raises(InvalidArgumentError, match="p"):
        CodedGradient(CodeSpec("x", FANO), p=1.0)
    with pytest.raises(InvalidArgumentError, match="method"):
        CodedGradient(CodeSpec("x", FANO, method="nope"))
    code = CodedGradient(CodeSpec("x", FANO, 2, "rd"))
    with pytest.raises(InvalidArgumentError, match="gradients"):
        code.estimates(np.ones((6, 3)), np.ones(7, bool))
    with pytest.raises(InvalidArgumentError, match="masks"):
        code.estimates(np.ones((7, 3)), np.ones(6, bool))
    with pytest.raises(InvalidArgumentError, match="decoder"):
        simulate_transmissions(encode(FANO, 1, "naive"), np.ones((7, 2)), np.ones((7, 2)))


def test_reproduce_stage_registered_and_writes_outputs(tmp_path):
    from gcsim.learning.reproduce_stage import run_training_stage
    from gcsim.reproduce import STAGES

    assert "training" in STAGES
    res = run_training_stage(tmp_path, iterations=3, samples=300)
    for name in res["files"]:
        assert (tmp_path / name).stat().st_size > 0
    import pandas as pd

    hist = pd.read_csv(tmp_path / "history.csv")
    assert hist.label.nunique() == 9 and set(hist.iteration) == {0, 3} and set(hist.seed) == {0}
    unb = pd.read_csv(tmp_path / "unbiasedness.csv")
    biased = unb[~unb.expected_unbiased]
    assert not biased.verdict_unbiased.any()
    assert "uncoded" in res["text"] and isinstance(res["ok"], bool)


def test_heterogeneous_p_unbiased_and_masks():
    pj = np.array([0.1, 0.5, 0.0, 0.3, 0.2, 0.6, 0.4])
    for spec in (CodeSpec("rd", FANO, 2, "rd", "unbiased", redraw=True),
                 CodeSpec("ns", FANO, 2, "ns", "unbiased", options={"dist": "gaussian"})):
        res = check_unbiased(spec, _G(7, 6, 21), pj, samples=4000, seed=2, alpha=0.001)
        assert res.passed, res.summary()
        # a homogeneous decoder with the mean p is biased under heterogeneous stragglers
        code = CodedGradient(spec, float(pj.mean()), seed=2)
        masks = straggler_model("bernoulli", 7, p=pj).sample(4000, 2)
        E = code.estimates(_G(7, 6, 21), masks, draws=np.arange(4000), rng=np.random.default_rng(0))
        assert not unbiasedness_test(E, _G(7, 6, 21).sum(0), alpha=0.001).passed
    with pytest.raises(InvalidArgumentError, match="p"):
        CodedGradient(CodeSpec("x", FANO), p=[0.1, 0.2])
    with pytest.raises(InvalidArgumentError, match="p"):
        CodedGradient(CodeSpec("x", FANO), p=np.full(7, 1.0))


def test_nonfinite_gradients_refused():
    code = CodedGradient(CodeSpec("x", FANO, 2, "rd"))
    G = _G(7, 4)
    G[2, 1] = np.inf
    with pytest.raises(InvalidArgumentError, match="gradients"):
        code.estimates(G, np.ones(7, bool))


def test_training_on_mnist_files(tmp_path):
    """MNIST-format files (written here) flow through the loader into coded training."""
    from gcsim.learning.datasets import load_mnist, write_idx

    rng = np.random.default_rng(0)
    names = {"train-images-idx3-ubyte.gz": rng.integers(0, 256, (70, 5, 5), dtype=np.uint8),
             "train-labels-idx1-ubyte.gz": rng.integers(0, 10, 70).astype(np.uint8),
             "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (20, 5, 5), dtype=np.uint8),
             "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, 20).astype(np.uint8)}
    for name, arr in names.items():
        write_idx(tmp_path / name, arr)
    ds = load_mnist(tmp_path)
    spec = CodeSpec("exact", FANO, 2, "exact-gaussian", options={"s": 1})
    res = train(spec, ds, model=MLP((25, 8, 10)), p=0.1, iterations=10, eval_every=5, lr=0.3, seed=0)
    assert res.final["train_loss"] < res.history.train_loss[0]


def test_uncoded_arrivals_bias_exact_enumeration():
    """Proposition 1 (docs/theory/60_learning.md): E[(n/|F|) Σ_F g_j] = (1 - p^n) ∇L, exactly."""
    from gcsim.coding.stragglers import BernoulliModel

    n = 5
    G = _G(n, 3, 31)
    masks = ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)  # every pattern
    code = CodedGradient(CodeSpec("u", np.eye(n, dtype=int), decoder="arrivals"))
    est = code.estimates(G, masks)
    for p in (0.0, 0.3, 0.7):
        w = BernoulliModel(n, p).weights(masks)
        assert w.sum() == pytest.approx(1.0)
        assert np.allclose(w @ est, (1 - p ** n) * G.sum(0), atol=1e-12)
    # heterogeneous p: biased (n = 2, p = (0, 0.5): E W_0 = 1.5)
    G2 = np.array([[1.0], [0.0]])
    code2 = CodedGradient(CodeSpec("u", np.eye(2, dtype=int), decoder="arrivals"))
    m2 = masks[:4, :2]
    w2 = BernoulliModel(2, [0.0, 0.5]).weights(m2)
    assert (w2 @ code2.estimates(G2, m2))[0] == pytest.approx(1.5)


def test_draws_validation():
    code = CodedGradient(CodeSpec("x", FANO, 2, "rd", redraw=True))
    with pytest.raises(InvalidArgumentError, match="draws"):
        code.decoders(np.ones((3, 7), bool), draws=[0, 1])
    with pytest.raises(InvalidArgumentError, match="draws"):
        code.decoders(np.ones((2, 7), bool), draws=[0, -1])
