"""Training with quantized coded messages (gcsim.learning.quantized_training, theory §58)."""

from __future__ import annotations

import numpy as np
import pytest

import gcsim
from gcsim.coding.quantize import bound_objective
from gcsim.errors import InvalidArgumentError
from gcsim.learning.datasets import load_digits
from gcsim.learning.models import MLP
from gcsim.learning.quantized_training import (
    QuantizedCode,
    allocated_code,
    bits_per_step,
    compare_at_equal_bits,
    equal_bits_codes,
    summarize,
    train_quantized,
)
from gcsim.learning.train import CodeSpec, train

FANO = gcsim.bibd(7, 3, 1).assignment


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


def test_unquantized_run_is_the_train_run(digits):
    # same seed: same partition, stragglers, mini-batches and initial parameters as train(); the
    # worker-level decode agrees with train's effective-matrix path up to round-off
    spec = CodeSpec("rd", FANO, 2, "rd")
    kw = dict(model=MLP((64, 8, 10)), iterations=30, lr=0.1, momentum=0.9, batch_per_part=8, eval_every=10, seed=3)
    ours = train_quantized(QuantizedCode(spec), digits, p=0.2, **kw)
    ref = train(spec, digits, p=0.2, **kw)
    assert np.allclose(ours.history.train_loss, ref.history.train_loss, rtol=1e-9, atol=0)
    assert np.allclose(ours.theta, ref.theta, rtol=1e-8, atol=1e-12)


def test_quantized_runs_are_seeded_and_differ_from_unquantized(digits):
    spec = CodeSpec("rd", FANO, 1, "rd")
    kw = dict(model=MLP((64, 8, 10)), iterations=20, eval_every=10, seed=1)
    a = train_quantized(QuantizedCode(spec, bits=2), digits, **kw)
    b = train_quantized(QuantizedCode(spec, bits=2), digits, **kw)
    c = train_quantized(QuantizedCode(spec), digits, **kw)
    assert np.array_equal(a.theta, b.theta)
    assert not np.allclose(a.theta, c.theta)
    # 2-bit rounding adds error on top of the decoding error of the same stragglers
    assert a.history.rel_error.iloc[1:].mean() > c.history.rel_error.iloc[1:].mean()


def test_equal_bits_codes_send_the_same_bits():
    d = MLP((64, 32, 10)).d
    codes = equal_bits_codes(FANO, budget=4)
    bits = [bits_per_step(c, d) for c in codes]
    assert max(bits[:-1]) / min(bits[:-1]) < 1.001
    assert bits[-1] == 7 * 32 * d  # uncoded float32: 8 times the budget
    assert bits[0] == 7 * 32 * -(-d // 8)
    assert [c.error_feedback for c in codes].count(True) == 2


def test_allocated_code_minimizes_the_bound_objective():
    code = allocated_code(FANO, budget=4, p=[0.8] + [0.05] * 6)
    w = code.extras["weights"]
    assert code.bits.sum() == 28
    assert bound_objective(w, code.bits) < bound_objective(w, np.full(7, 4))
    # symmetric design, equal straggling probabilities: equal weights, uniform bits
    assert allocated_code(FANO, budget=4, p=0.2).bits.tolist() == [4] * 7


def test_compare_and_summarize_give_intervals_over_seeds(digits):
    codes = [QuantizedCode(CodeSpec("u", np.eye(3, dtype=int), decoder="arrivals"), bits=3, error_feedback=True)]
    runs = compare_at_equal_bits(codes, digits, [0, 1, 2], model=MLP((64, 4, 10)), iterations=4, eval_every=2)
    assert list(runs.seed) == [0, 1, 2]
    s = summarize(runs)
    row = s.iloc[0]
    assert row.seeds == 3 and row.train_loss_lo <= row.train_loss <= row.train_loss_hi
    x = runs.train_loss.to_numpy()
    half = 4.302652729911275 * x.std(ddof=1) / np.sqrt(3)  # t_{0.975, 2}
    assert row.train_loss_hi - row.train_loss == pytest.approx(half, rel=1e-9)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: QuantizedCode("spec"), "spec"),
        (lambda: QuantizedCode(CodeSpec("c", FANO), bits=0), "bits"),
        (lambda: QuantizedCode(CodeSpec("c", FANO), bits=[1, 2]), "bits"),
        (lambda: QuantizedCode(CodeSpec("c", FANO), bits=2, quantizer="x"), "quantizer"),
        (lambda: QuantizedCode(CodeSpec("c", FANO), error_feedback=True), "error_feedback"),
        (lambda: QuantizedCode(CodeSpec("c", FANO), bits=2, error_feedback=1), "error_feedback"),
        (lambda: equal_bits_codes(FANO, budget=3), "budget"),
        (lambda: equal_bits_codes(np.ones(3), budget=4), "assignment"),
        (lambda: bits_per_step("code", 10), "code"),
        (lambda: train_quantized("code", None), "code"),
        (lambda: train_quantized(QuantizedCode(CodeSpec("c", FANO)), "data"), "dataset"),
        (lambda: compare_at_equal_bits([], None, []), "seeds"),
        (lambda: train_quantized(QuantizedCode(CodeSpec("c", FANO)), load_digits(), iterations=10**12), "iterations"),
    ],
)
def test_bad_inputs_are_refused_by_name(make, name):
    with pytest.raises(InvalidArgumentError, match=name):
        make()
