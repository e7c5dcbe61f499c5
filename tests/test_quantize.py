"""Quantized gradient coding (theory §58): the closed form against independent computations.

* the expected error of Theorem 58.2 against the exact expectation over every rounding outcome, in
  rational arithmetic (tiny cases), and against Monte Carlo with a t interval (larger ones);
* the two bounds of Theorem 58.2 on a sweep of encoders, patterns, bits, quantizers and gradients;
* the quantizer's grid and probabilities recomputed in rationals (unbiasedness exactly);
* the greedy bit allocation against every allocation (Theorem 58.3);
* error feedback's bookkeeping (Σ sent + residual = Σ messages).
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import gcsim.coding.quantizers as quantizers_pkg
from gcsim import bibd
from gcsim.coding.decoders import optimal_decoder
from gcsim.coding.quantize import (
    ErrorFeedback,
    allocate_bits,
    allocation_weights,
    bound_objective,
    coded_messages,
    decode,
    expected_quantized_error,
    message_bits,
    quantized_error,
)
from gcsim.coding.quantizers import (
    Quantizer,
    get_quantizer,
    quantizer_names,
    register_quantizer,
    unregister_quantizer,
)
from gcsim.coding.schemes import encode
from gcsim.errors import InvalidArgumentError

CYCLIC3 = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
FANO = bibd(7, 3, 1).assignment


def _rational_grid(v: float, s: float, bits: int) -> tuple[Fraction, Fraction, Fraction]:
    """The neighbouring levels of ``v`` on ``2^b`` levels of ``[-s, s]`` and P(upper), in rationals."""
    v_, s_ = Fraction(v), Fraction(s)
    if s_ == 0:
        return Fraction(0), Fraction(0), Fraction(0)
    delta = 2 * s_ / (2**bits - 1)
    k = min(int((v_ + s_) // delta), 2**bits - 2)
    lower = -s_ + k * delta
    return lower, lower + delta, (v_ - lower) / delta


@pytest.mark.parametrize("name", ["maxabs", "norm"])
@pytest.mark.parametrize("bits", [1, 2, 3, 5, 8])
def test_grid_and_probabilities_match_rationals_and_are_unbiased(name, bits):
    rng = np.random.default_rng(bits)
    y = np.concatenate([rng.normal(size=(4, 6)), [[0.0] * 6, [1.0, -1.0, 0.5, 0.0, 0.25, -0.75]]])
    q = get_quantizer(name)
    lower, upper, prob = q.outcomes(y, bits)
    s = np.abs(y).max(axis=1) if name == "maxabs" else np.linalg.norm(y, axis=1)
    for j, c in itertools.product(range(y.shape[0]), range(y.shape[1])):
        lo, up, pr = _rational_grid(y[j, c], s[j], bits)
        tol = 1e-14 * max(1.0, float(s[j]))
        # the implementation merges the outcomes of a coordinate that is a level
        if pr in (0, 1):
            assert lower[j, c] == upper[j, c] and abs(lower[j, c] - float(lo if pr == 0 else up)) <= tol
            continue
        assert abs(lower[j, c] - float(lo)) <= tol and abs(upper[j, c] - float(up)) <= tol
        assert abs(prob[j, c] - float(pr)) <= 1e-12
        # unbiased exactly in rationals; the float expectation within round-off
        assert lo + pr * (up - lo) == Fraction(y[j, c])
        e = Fraction(lower[j, c]) + Fraction(prob[j, c]) * (Fraction(upper[j, c]) - Fraction(lower[j, c]))
        assert abs(float(e) - y[j, c]) <= 1e-14 * max(1.0, float(s[j]))
        # the variance of a two-point law
        var = pr * (1 - pr) * (up - lo) ** 2
        assert abs(q.variance(y, bits)[j, c] - float(var)) <= 1e-12 * max(1.0, float(s[j])) ** 2
    # every draw is one of the two outcomes, and |Q| never exceeds the scale
    draws = q.quantize(np.broadcast_to(y, (200,) + y.shape), bits, rng=1)
    assert np.all((draws == lower) | (draws == upper))
    assert np.all(np.abs(draws) <= s[:, None] * (1 + 1e-15))


def test_quantizer_mean_matches_within_an_interval():
    # the sampler (not only the outcome table) is unbiased: 20000 draws, a 99.99 % t interval per coordinate
    q = get_quantizer("maxabs")
    y = np.array([0.1, -0.37, 0.9, -1.0, 0.0])
    draws = q.quantize(np.broadcast_to(y, (20000, 5)), 2, rng=3)
    mean, se = draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    half = stats.t.ppf(1 - 1e-4 / 2, draws.shape[0] - 1) * np.maximum(se, 1e-300)
    assert np.all(np.abs(mean - y) <= half + 1e-15)


def _brute_force(scheme, G, mask, bits, quantizer, X):
    """E‖ĝ - g‖² summed over every rounding outcome of every arrived coordinate, in rationals."""
    q = get_quantizer(quantizer)
    Y = coded_messages(scheme, G)
    lower, upper, prob = q.outcomes(Y, np.asarray(bits))
    d = G.shape[1]
    m = scheme.m
    w = Y.shape[1]
    g = [sum(Fraction(float(G[i, c])) for i in range(G.shape[0])) for c in range(d)]
    arrived = [j for j in range(len(mask)) if mask[j]]
    coords = [(j, c) for j in arrived for c in range(w)]
    Xr = [[Fraction(float(x)) for x in row] for row in X]
    total = Fraction(0)
    for choice in itertools.product((0, 1), repeat=len(coords)):
        p = Fraction(1)
        Q = {}
        for (j, c), up in zip(coords, choice, strict=True):
            pr = Fraction(float(prob[j, c]))
            p *= pr if up else 1 - pr
            Q[j, c] = Fraction(float(upper[j, c] if up else lower[j, c]))
        if p == 0:
            continue
        err = Fraction(0)
        for pos in range(d):
            l, c = divmod(pos, w)
            est = sum(Xr[j][l] * Q[j, c] for j in arrived)
            err += (est - g[pos]) ** 2
        total += p * err
    assert m * w >= d
    return total


@pytest.mark.parametrize(
    ("method", "m", "d", "mask", "bits", "quantizer"),
    [
        ("naive", 1, 2, [True, True, True], [1, 2, 1], "maxabs"),
        ("rd", 1, 2, [True, False, True], [2, 2, 3], "norm"),
        ("rd", 2, 3, [True, True, False], [1, 3, 2], "maxabs"),  # padding: w = 2, d = 3
        ("naive", 2, 3, [False, True, True], 2, "norm"),
    ],
)
def test_closed_form_equals_the_exact_expectation_over_every_rounding(method, m, d, mask, bits, quantizer):
    scheme = encode(CYCLIC3, m, method, seed=4)
    G = np.random.default_rng(d + m).normal(size=(3, d))
    X = optimal_decoder(scheme, mask)
    got = quantized_error(scheme, G, mask, bits, quantizer=quantizer, decoder=X)
    exact = _brute_force(scheme, G, mask, np.broadcast_to(bits, (3,)), quantizer, X)
    assert got.quantization > 0
    assert abs(got.total - float(exact)) <= 1e-12 * float(exact)
    # the decoding term alone: the error of the exact messages
    g0 = decode(X, coded_messages(scheme, G), d)
    assert abs(got.decoding - float(np.sum((g0 - G.sum(axis=0)) ** 2))) <= 1e-14 * max(1.0, got.decoding)


@pytest.mark.parametrize("quantizer", ["maxabs", "norm"])
def test_closed_form_agrees_with_monte_carlo_on_a_larger_case(quantizer):
    scheme = encode(FANO, 2, "rd", seed=1)
    rng = np.random.default_rng(11)
    G = rng.normal(size=(7, 41)) * rng.uniform(0.1, 3.0, size=(7, 1))
    mask = np.array([True, False, True, True, False, True, True])
    bits = np.array([2, 3, 2, 4, 1, 3, 2])
    X = optimal_decoder(scheme, mask)
    got = quantized_error(scheme, G, mask, bits, quantizer=quantizer)
    Y = coded_messages(scheme, G)
    S = 20000
    Q = get_quantizer(quantizer).quantize(np.broadcast_to(Y, (S,) + Y.shape), bits, rng=5)
    est = np.einsum("jl,sjw->slw", X, Q).reshape(S, -1)[:, : G.shape[1]]
    errs = np.sum((est - G.sum(axis=0)) ** 2, axis=1)
    half = stats.t.ppf(1 - 1e-4 / 2, S - 1) * errs.std(ddof=1) / np.sqrt(S)
    assert abs(errs.mean() - got.total) <= half
    assert half < 0.05 * got.quantization  # the interval is tight enough to mean something


def test_expectation_over_stragglers_and_roundings_agrees_with_monte_carlo():
    # Bernoulli stragglers: every pattern with its probability (exact) against masks and roundings
    # drawn together; the per-draw decoder is the optimal one of the drawn pattern
    scheme = encode(CYCLIC3, 2, "rd", seed=2)
    G = np.random.default_rng(3).normal(size=(3, 9))
    p = np.array([0.3, 0.1, 0.5])
    masks = np.array(list(itertools.product([False, True], repeat=3)))
    pi = np.prod(np.where(masks, 1 - p, p), axis=1)
    got = expected_quantized_error(scheme, G, masks, [2, 3, 2], probabilities=pi)
    rng = np.random.default_rng(9)
    S = 30000
    drawn = rng.random((S, 3)) >= p
    Y = coded_messages(scheme, G)
    q = get_quantizer("maxabs").quantize(np.broadcast_to(Y, (S,) + Y.shape), [2, 3, 2], rng)
    X = {tuple(mk): optimal_decoder(scheme, mk) for mk in masks}
    errs = np.array([np.sum((decode(X[tuple(mk)], q[s], 9) - G.sum(axis=0)) ** 2) for s, mk in enumerate(drawn)])
    half = stats.t.ppf(1 - 1e-4 / 2, S - 1) * errs.std(ddof=1) / np.sqrt(S)
    assert abs(errs.mean() - got.total) <= half
    assert half < 0.05 * got.total
    assert got.total <= got.code_bound and got.quantization <= got.quantization_bound


def _gradient_sets(rng, N, d):
    yield rng.normal(size=(N, d))
    sparse = np.zeros((N, d))
    sparse[rng.integers(N), rng.integers(d)] = 5.0
    yield sparse
    yield rng.standard_cauchy(size=(N, d))  # heavy tails: one coordinate dominates the scale
    yield np.ones((N, d)) * rng.uniform(-1, 1, size=(N, 1))


def test_bounds_hold_on_every_case_of_a_sweep():
    rng = np.random.default_rng(2026)
    cases = 0
    for A, methods in [(CYCLIC3, ("naive", "rd")), (FANO, ("naive", "rd", "ns"))]:
        N, n = A.shape
        for method, m in itertools.product(methods, (1, 2, 3)):
            scheme = encode(A, m, method, eps=0.1, seed=int(rng.integers(1000)))
            for s in range(n):
                mask = np.ones(n, bool)
                mask[rng.choice(n, s, replace=False)] = False
                for G in _gradient_sets(rng, N, int(rng.integers(1, 12))):
                    for quantizer in quantizer_names():
                        bits = rng.integers(1, 9, size=n)
                        r = quantized_error(scheme, G, mask, bits, quantizer=quantizer)
                        assert r.quantization <= r.quantization_bound * (1 + 1e-12) + 1e-300
                        assert r.total <= r.code_bound * (1 + 1e-9) + 1e-300
                        assert r.decoding <= r.gradient_norm2 * r.matrix_error * (1 + 1e-9) + 1e-12
                        cases += 1
    assert cases > 300


def test_quantization_term_by_hand():
    # 1 bit, levels ±1: the zeros sit midway (variance 1 each), the 1 is a level (variance 0)
    scheme = encode(np.eye(2, dtype=int), 1, "naive")
    one = quantized_error(scheme, np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]), [True, False], 1)
    assert one.quantization == 2.0 and one.decoding == 0.0
    assert one.quantization_bound == 3.0  # w s² / (2^1 - 1)²
    # 2 bits, levels ±1, ±1/3: 0 and ±2/3 are midpoints (variance (2/3)²/4 = 1/9 each)
    two = quantized_error(scheme, np.array([[1.0, 0.0, 2 / 3, -2 / 3], [0.0] * 4]), [True, False], 2)
    assert two.quantization == pytest.approx(3 / 9, rel=1e-14)
    assert two.quantization_bound == pytest.approx(4 / 9, rel=1e-14)


def test_greedy_allocation_is_optimal_against_every_allocation():
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(1, 5))
        a = rng.exponential(size=n) ** 3 * (rng.random(n) < 0.85)
        lo, hi = int(rng.integers(1, 3)), int(rng.integers(3, 7))
        total = int(rng.integers(n * lo, n * hi + 1))
        got = allocate_bits(a, total, min_bits=lo, max_bits=hi)
        assert got.sum() == total and got.min() >= lo and got.max() <= hi
        best = min(
            bound_objective(a, list(b)) for b in itertools.product(range(lo, hi + 1), repeat=n) if sum(b) == total
        )
        assert bound_objective(a, got) <= best * (1 + 1e-12) + 1e-300, (trial, a, got)


def test_allocation_does_not_let_round_off_pick_the_worker():
    """Weights equal in exact arithmetic but not in floating point (symmetric workers, another BLAS
    kernel) get the same bits: the lowest index wins the tie, whichever copy round-off made larger."""
    rng = np.random.default_rng(3)
    base = np.array([0.3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    # by hand: decreases 8/9, 8/9 * 0.3, 40/441, 40/441 * 0.3, ... (1/(2^k-1)^2 - 1/(2^(k+1)-1)^2 per unit
    # weight); 24 bits = 7 + 6 + 1 + 6 + 1 + 3: the third bit of three of the six equal workers, the first three
    expect = [3, 4, 4, 4, 3, 3, 3]
    assert allocate_bits(base, 24).tolist() == expect
    for _ in range(50):
        noisy = base * (1.0 + rng.uniform(-1e-13, 1e-13, size=base.size))
        assert allocate_bits(noisy, 24).tolist() == expect, noisy
    # a real difference above TIE_RTOL still decides
    assert allocate_bits([1.0, 1.0 + 1e-6, 1.0], 4).tolist() == [1, 2, 1]


def test_allocation_takes_the_largest_decreases_bit_by_bit():
    """The greedy by hand on weights with distinct decreases: each bit to the largest current decrease."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(1, 6))
        a = rng.exponential(size=n) * (rng.random(n) < 0.8)
        lo, hi = int(rng.integers(1, 3)), int(rng.integers(3, 9))
        total = int(rng.integers(n * lo, n * hi + 1))
        b = [lo] * n
        for _ in range(total - n * lo):
            gains = [
                a[j] * ((2.0 ** b[j] - 1) ** -2 - (2.0 ** (b[j] + 1) - 1) ** -2) if b[j] < hi else -1.0
                for j in range(n)
            ]
            best = max(gains)
            j = min(i for i in range(n) if gains[i] >= best * (1 - 1e-9))  # ties (zero weights): lowest index
            b[j] += 1
        assert allocate_bits(a, total, min_bits=lo, max_bits=hi).tolist() == b, (a, total, lo, hi)


def test_allocation_weights_are_uniform_on_a_symmetric_code_and_follow_the_decoder():
    scheme = encode(FANO, 1, "naive")
    masks = np.array(list(itertools.product([False, True], repeat=7)))[1:]  # every non-empty pattern
    a = allocation_weights(scheme, masks)
    assert np.allclose(a, a[0])
    # heterogeneous straggling: the Bernoulli probabilities of the patterns
    p = np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    pi = np.prod(np.where(masks, 1 - p, p), axis=1)
    pi /= pi.sum()
    a_het = allocation_weights(scheme, masks, probabilities=pi)
    # by hand: the same mean of ‖X_j(F)‖² ‖B_j‖² over the patterns
    X = np.stack([optimal_decoder(scheme, mk) for mk in masks])
    assert np.allclose(a_het, (pi[:, None] * np.sum(X**2, axis=2)).sum(axis=0) * np.sum(scheme.B**2, axis=0))
    assert not np.allclose(a_het, a_het[1])


def test_error_feedback_bookkeeping():
    rng = np.random.default_rng(0)
    ef = ErrorFeedback("maxabs", (3, 4))
    total_y = np.zeros((3, 4))
    total_q = np.zeros((3, 4))
    for t in range(50):
        y = rng.normal(size=(3, 4)) * (t % 5 + 1)
        before = ef.residual.copy()
        q = ef.send(y, [1, 2, 3], rng)
        z = y + before
        # what was sent is a rounding of message + residual, and the new residual is what it lost
        lower, upper, _ = get_quantizer("maxabs").outcomes(z, [1, 2, 3])
        assert np.all((q == lower) | (q == upper))
        assert np.array_equal(ef.residual, z - q)
        step = get_quantizer("maxabs").step(z, [1, 2, 3])
        assert np.all(np.abs(ef.residual) <= step[:, None] * (1 + 1e-12))
        total_y += y
        total_q += q
    assert np.allclose(total_q + ef.residual, total_y, rtol=0, atol=1e-10)


def test_message_bits_and_equal_budgets():
    assert message_bits(1210, 1, 32, scale_bits=0) == 32 * 1210
    assert message_bits(1210, 8, 32, scale_bits=0) == 152 * 32  # ⌈1210/8⌉ = 152
    assert message_bits(1210, 1, 4) == 4 * 1210 + 32


def test_registry_discovers_every_public_module():
    found = set()
    for info in pkgutil.iter_modules(quantizers_pkg.__path__):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"gcsim.coding.quantizers.{info.name}")
            found |= {q.name for q in module.QUANTIZERS}
    assert found and found <= set(quantizer_names())
    q = register_quantizer(Quantizer("double", lambda y: 2 * np.abs(y).max(axis=-1, initial=0.0), "twice max-abs"))
    try:
        assert get_quantizer("double") is q and "double" in quantizer_names()
        with pytest.raises(InvalidArgumentError, match="already registered"):
            register_quantizer(q)
        assert quantized_error(encode(CYCLIC3, 1, "naive"), np.eye(3), [True] * 3, 2, quantizer="double").total > 0
    finally:
        unregister_quantizer("double")
    with pytest.raises(InvalidArgumentError, match="built-in"):
        register_quantizer(Quantizer("maxabs", np.abs, "x"), replace=True)
    with pytest.raises(InvalidArgumentError, match="built-in"):
        unregister_quantizer("norm")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda s, G: quantized_error(s, G, [True] * 3, 0), "bits"),
        (lambda s, G: quantized_error(s, G, [True] * 3, 33), "bits"),
        (lambda s, G: quantized_error(s, G, [True] * 3, True), "bits"),
        (lambda s, G: quantized_error(s, G, [True] * 3, [1, 2]), "bits"),
        (lambda s, G: quantized_error(s, G, [True] * 3, 2.5), "bits"),
        (lambda s, G: quantized_error(s, G, [True] * 3, 2, quantizer="nope"), "quantizer"),
        (lambda s, G: quantized_error(s, G, [True] * 3, 2, decoder=np.ones((2, 1))), "decoder"),
        (lambda s, G: quantized_error(s, G[:2], [True] * 3, 2), "gradients"),
        (lambda s, G: quantized_error(s, G, [True] * 2, 2), "nonstragglers"),
        (lambda s, G: quantized_error("B", G, [True] * 3, 2), "scheme"),
        (lambda s, G: allocate_bits([1.0, -1.0], 4), "weights"),
        (lambda s, G: allocate_bits([1.0, 1.0], 1), "total"),
        (lambda s, G: allocate_bits([1.0, 1.0], 40, max_bits=16), "total"),
        (lambda s, G: allocate_bits([1.0], 3, min_bits=4, max_bits=2), "max_bits"),
        (lambda s, G: allocation_weights(s, [[True] * 3], probabilities=[0.5]), "probabilities"),
        (lambda s, G: expected_quantized_error(s, G, [[True] * 3], 2, probabilities=[-1.0]), "probabilities"),
        (lambda s, G: ErrorFeedback("maxabs", (3, 2)).send(np.ones((2, 2)), 1, 0), "messages"),
        (lambda s, G: ErrorFeedback("maxabs", [3, 2]), "shape"),
        (lambda s, G: ErrorFeedback("maxabs", (10**6, 10**7)), "shape"),
        (lambda s, G: get_quantizer("maxabs").quantize([[np.nan]], 1, 0), "messages"),
        (lambda s, G: register_quantizer("maxabs"), "quantizer"),
        (lambda s, G: register_quantizer(Quantizer("Bad Name", np.abs, "x")), "quantizer"),
        (lambda s, G: message_bits(10, 0, 4), "m"),
    ],
)
def test_bad_inputs_are_refused_by_name(call, name):
    scheme = encode(CYCLIC3, 1, "naive")
    with pytest.raises(InvalidArgumentError, match=name):
        call(scheme, np.ones((3, 2)))


def test_a_scale_that_does_not_cover_the_message_is_refused():
    q = Quantizer("half", lambda y: 0.5 * np.abs(y).max(axis=-1, initial=0.0), "too small")
    with pytest.raises(InvalidArgumentError, match="half"):
        q.outcomes([[1.0, 2.0]], 2)
