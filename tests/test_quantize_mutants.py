"""gcsim.coding.quantize and gcsim.coding.quantizers against independent computations.

Written against the mutants ``scripts/mutation.py --sample 100 --seed 0 coding.quantize`` found alive.
Every expected number is written out here from theory §58 (the grid of ``2^b`` levels on ``[-s, s]``,
the variance ``(v - l)(l + Δ - v)`` of stochastic rounding, the weights ``a_j = Σ_F π(F) ‖X_j(F)‖²
‖B_{:,j}‖²``) in exact fractions or plain loops, never taken from the code under test; every refused
input must name its argument.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gcsim.coding.quantize import (
    TIE_RTOL,
    ErrorFeedback,
    allocate_bits,
    allocation_weights,
    expected_quantized_error,
    message_bits,
    quantized_error,
)
from gcsim.coding.quantizers import (
    MAX_BITS,
    Quantizer,
    _registry,
    get_quantizer,
    register_quantizer,
    stochastic,
    unregister_quantizer,
)
from gcsim.coding.schemes import encode
from tests.guards import refused_argument

# --- the grid: spacing, outcomes, expectation, the variance bound ------------------------------------


@pytest.mark.parametrize("bits", [1, 2, 3, 5])
def test_step_is_twice_the_scale_over_the_levels_minus_one(bits):
    y = np.array([[1.0, -0.5, 0.25], [0.0, 3.0, -4.0]])
    maxabs, norm = get_quantizer("maxabs"), get_quantizer("norm")
    gaps = 2**bits - 1  # 2^b levels on [-s, s]: 2^b - 1 gaps
    assert maxabs.step(y, bits).tolist() == [float(Fraction(2, gaps)), float(Fraction(8, gaps))]
    # norms: sqrt(1 + 1/4 + 1/16) = sqrt(21)/4 and 5
    assert np.allclose(norm.step(y, bits), [2 * np.sqrt(21) / 4 / gaps, 10 / gaps], rtol=1e-15, atol=0)


def _exact_outcomes(v: Fraction, s: Fraction, bits: int) -> tuple[Fraction, Fraction, Fraction]:
    """The two grid values around ``v`` and the chance of the upper one, by walking the levels."""
    gaps = 2**bits - 1
    levels = [-s + 2 * s * k / gaps for k in range(gaps + 1)]
    for lo, hi in zip(levels, levels[1:], strict=False):
        if lo <= v <= hi:
            return lo, hi, (v - lo) / (hi - lo)
    raise AssertionError("v off the grid")


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_expectation_is_the_message_and_variance_the_product_of_the_two_gaps(bits):
    ys = [Fraction(3, 4), Fraction(-1, 8), Fraction(1, 2), Fraction(-1)]  # maxabs scale 1
    q = get_quantizer("maxabs")
    y = np.array([float(v) for v in ys])
    mean, var = q.expectation(y, bits), q.variance(y, bits)
    for c, v in enumerate(ys):
        lo, hi, p = _exact_outcomes(v, Fraction(1), bits)
        assert mean[c] == pytest.approx(float(lo + p * (hi - lo)), abs=1e-15)
        assert mean[c] == pytest.approx(float(v), abs=1e-15)  # unbiased
        assert var[c] == pytest.approx(float((v - lo) * (hi - v)), abs=1e-15)


def test_variance_bound_is_w_s2_over_gaps2_for_one_message_and_for_a_batch():
    q = get_quantizer("maxabs")
    one = np.array([0.5, -2.0, 1.0])  # w = 3, s = 2
    assert float(q.variance_bound(one, 2)) == 3 * 4 / 9
    batch = np.zeros((2, 3, 4))  # w = 4 on the last axis, 2 x 3 messages
    batch[..., 0] = np.arange(1, 7).reshape(2, 3)
    expect = [[4 * float(s) ** 2 / 49 for s in row] for row in np.arange(1, 7).reshape(2, 3)]
    assert q.variance_bound(batch, 3).tolist() == expect


# --- quantized_error / expected_quantized_error ------------------------------------------------------


def _uncoded():
    return encode(np.eye(2, dtype=int), 1, "naive")


G = [[1.0, 0.0], [0.5, -1.0]]
# worker 0 sends [1, 0] (scale 1, levels ±1 at 1 bit): variance 0 and 1 (0 is midway);
# worker 1 sends [0.5, -1]: 0.5 rounds up with chance 3/4, variance (0.5 + 1)(1 - 0.5) = 3/4; -1 is a level
QUANTIZATION_BOTH = Fraction(1) + Fraction(3, 4)


def test_one_mask_given_flat_is_one_pattern_of_probability_one():
    r = expected_quantized_error(_uncoded(), G, [True, True], 1)
    assert (r.decoding, r.quantization, r.total) == (0.0, float(QUANTIZATION_BOTH), float(QUANTIZATION_BOTH))


def test_refused_masks_probabilities_and_schemes_are_named():
    sch = _uncoded()
    assert refused_argument(expected_quantized_error, sch, G, [[True, True, True]], 1) == "masks"
    assert refused_argument(allocation_weights, sch, [[True, True, True]]) == "masks"
    assert refused_argument(quantized_error, sch, G, [[True, True], [True, False]], 1) == "nonstragglers"
    assert refused_argument(quantized_error, "not a scheme", G, [True, True], 1) == "scheme"
    assert refused_argument(quantized_error, sch, [1.0, 0.5], [True, True], 1) == "gradients"
    two = [[True, True], [True, False]]
    for bad in ([1.5, -0.5], [0.5, 0.25], [1.0]):  # a negative weight, a sum of 3/4, a wrong length
        assert refused_argument(expected_quantized_error, sch, G, two, 1, probabilities=bad) == "probabilities"


# --- allocation_weights -------------------------------------------------------------------------------


def test_allocation_weights_with_given_decoders_drop_the_stragglers_rows():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    sch = encode(A, 2, "naive")  # B is 6 x 3: its row norms are not its column norms
    B = sch.B
    masks = np.array([[True, False, True], [True, True, True]])
    pi = [Fraction(1, 4), Fraction(3, 4)]
    X = np.arange(1, 13, dtype=float).reshape(2, 3, 2)  # nonzero on the stragglers' rows too
    expect = []
    for j in range(3):
        col = sum(Fraction(float(B[r, j])) ** 2 for r in range(B.shape[0]))
        row = sum(p * sum(Fraction(float(X[f, j, k])) ** 2 for k in range(2)) for f, p in enumerate(pi) if masks[f, j])
        expect.append(float(row * col))
    got = allocation_weights(sch, masks, probabilities=[float(p) for p in pi], decoders=X)
    assert got == pytest.approx(expect, rel=1e-14)


# --- allocate_bits, message_bits ---------------------------------------------------------------------


def test_allocation_bounds_and_defaults_by_name():
    # the default max_bits is 16: two workers take 32 bits, not 33
    assert allocate_bits([1.0, 1.0], 32).tolist() == [16, 16]
    assert refused_argument(allocate_bits, [1.0, 1.0], 33) == "total"
    assert refused_argument(allocate_bits, [1.0], 3, max_bits=MAX_BITS + 1) == "max_bits"
    assert refused_argument(allocate_bits, [1.0], 3, min_bits=2, max_bits=1) == "max_bits"
    # below n min_bits (n = 2, min_bits = 2: at least 4)
    assert refused_argument(allocate_bits, [1.0, 1.0], 3, min_bits=2) == "total"


def test_allocation_follows_the_exact_per_bit_decreases():
    """Worker 0 at 1 bit gains 8/9 a_0, worker 1 at 2 bits 40/441 a_1 (1/(2^b-1)^2 - 1/(2^(b+1)-1)^2): with
    a_0 = 1 they are equal at a_1 = (8/9)(441/40) = 9.8, so the third bit goes to worker 0 below it and
    to worker 1 above it (worker 1 takes the second either way: 8/9 a_1 > 8/9)."""
    assert allocate_bits([1.0, 9.79], 4).tolist() == [2, 2]
    assert allocate_bits([1.0, 9.81], 4).tolist() == [1, 3]


def test_a_gain_exactly_at_the_tie_limit_ties():
    """Gains g and g (1 - TIE_RTOL) tie (the limit belongs to the tie): the lower index wins although its
    weight is the smaller. IEEE products are correctly rounded and commute, so (1 - TIE_RTOL) g is the
    same float on both sides."""
    assert allocate_bits([1.0 - TIE_RTOL, 1.0], 3).tolist() == [2, 1]
    assert allocate_bits([1.0 - 2 * TIE_RTOL, 1.0], 3).tolist() == [1, 2]


def test_bit_bounds_and_scale_bits_are_checked_by_name():
    assert refused_argument(allocate_bits, [1.0, 2.0], 66, min_bits=MAX_BITS + 1, max_bits=MAX_BITS) == "min_bits"
    assert refused_argument(allocate_bits, [1.0, 2.0], 4, min_bits=0) == "min_bits"
    assert refused_argument(message_bits, 10, 2, 4, scale_bits=-1) == "scale_bits"
    assert refused_argument(message_bits, 10, 2, 4, scale_bits=1.5) == "scale_bits"
    assert message_bits(10, 3, 4, scale_bits=0) == 4 * 4  # ceil(10/3) = 4 coordinates


# --- the registry ------------------------------------------------------------------------------------


def test_a_fresh_table_finds_the_built_ins_in_their_order():
    table = _registry._Table()  # the module's own table was filled before any mutant ran
    assert list(table.loaded()) == [q.name for q in sorted(stochastic.QUANTIZERS, key=lambda q: q.order)]
    assert table.builtin == frozenset({"maxabs", "norm"})


def test_registry_refusals_name_their_argument():
    mine = Quantizer("mutant-test-unit", lambda y: np.abs(y).max(axis=-1, initial=0.0) + 1.0, "test")
    register_quantizer(mine)
    try:
        assert refused_argument(register_quantizer, mine) == "quantizer"  # already registered
        assert refused_argument(register_quantizer, Quantizer("maxabs", stochastic.max_abs_scale, "x")) == "quantizer"
    finally:
        unregister_quantizer("mutant-test-unit")
    assert refused_argument(unregister_quantizer, 3) == "name"
    assert refused_argument(unregister_quantizer, "maxabs") == "name"
    assert refused_argument(unregister_quantizer, "mutant-test-unit") == "name"


def test_error_feedback_refuses_messages_of_another_shape():
    ef = ErrorFeedback("maxabs", (1, 2))
    assert refused_argument(ef.send, [0.3, -1.0], 1, 0) == "messages"
