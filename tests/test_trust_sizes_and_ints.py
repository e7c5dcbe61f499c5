"""Issue #33 classes 1 and 3: every stated size checked before allocation; integer inputs never truncated."""

from __future__ import annotations

import subprocess
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest

from gcsim._validation import check_int_array
from gcsim.coding.structured import incidence_from_blocks
from gcsim.combinatorics.bibd_design import BIBD
from gcsim.combinatorics.coset import coset_graph
from gcsim.combinatorics.cyclic_design import CyclicDesign
from gcsim.combinatorics.difference_families import circulant_incidence, develop, difference_set_lambda
from gcsim.combinatorics.fields import additive_cosets
from gcsim.combinatorics.srg_cayley import abelian_cayley_graph
from gcsim.combinatorics.srg_combinatorial import block_graph
from gcsim.errors import CatalogueError, InvalidArgumentError, SizeLimitError

ZERO_STRIDE = np.broadcast_to(np.int64(1), (10**9,))
WIDE_ZERO_STRIDE: Any = np.broadcast_to(np.int64(1), (10**9, 2))


#: Most memory a refusal may allocate (Python and NumPy allocations, traced): nothing near the request.
PEAK_BYTES = 16 << 20


def _refused(fn, name: str, error=InvalidArgumentError) -> str:
    """``fn()`` raises ``error`` naming ``name`` in one line, within a second and ``PEAK_BYTES`` of allocations."""
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(error) as info:
            fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 1.0
    assert peak < PEAK_BYTES, f"{peak:,} bytes allocated before refusing"
    text = str(info.value)
    assert text.startswith(f"{name}:") and "\n" not in text, text
    return text


# -- class 1: sizes --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda: CyclicDesign(7, ZERO_STRIDE), "base"),
        (lambda: CyclicDesign(10**12, [1, 2, 4]), "v"),
        (lambda: CyclicDesign(7, range(10**12)), "base"),
        (lambda: difference_set_lambda(2 * 10**9, [0, 1, 3]), "v"),
        (lambda: difference_set_lambda(7, ZERO_STRIDE), "D"),  # type: ignore[arg-type]
        (lambda: circulant_incidence(10**12, [0, 1, 3]), "D"),
        (lambda: circulant_incidence(7, ZERO_STRIDE), "D"),  # type: ignore[arg-type]
        (lambda: develop(ZERO_STRIDE, [[0]]), "moduli"),
        (lambda: develop([10**6, 10**6], [[0]]), "moduli"),
        (lambda: develop(7, [ZERO_STRIDE]), "base_blocks"),
        (lambda: abelian_cayley_graph([5], np.broadcast_to(np.int64(1), (10**9, 1))), "connection"),
        (lambda: additive_cosets(4, ZERO_STRIDE), "subgroup"),
        (lambda: coset_graph(9, 2, 2, connection_sets=WIDE_ZERO_STRIDE), "connection_sets"),
        (lambda: block_graph(WIDE_ZERO_STRIDE), "blocks"),
        (lambda: block_graph([ZERO_STRIDE, [1, 2]]), "blocks"),
        (lambda: incidence_from_blocks(7, WIDE_ZERO_STRIDE), "blocks"),
        (lambda: BIBD(7, [ZERO_STRIDE] * 7, "x"), "blocks"),
    ],
)
def test_stated_sizes_are_refused_before_allocation(fn, name):
    _refused(fn, name, SizeLimitError)


def test_samples_are_checked_against_a_stated_limit():
    from gcsim.advisor.core import advise
    from gcsim.coding.delays import arrival_rule, delay_model, expected_decode_time
    from gcsim.coding.evaluate import expected_error
    from gcsim.coding.schemes import encode
    from gcsim.coding.stragglers import straggler_model

    sch = encode(np.eye(3, dtype=int), 1, "naive")
    model = straggler_model("fixed", 3, s=1)
    text = _refused(lambda: expected_error(sch, model, samples=10**12, exact_limit=0), "samples", SizeLimitError)
    assert "MAX_MC_DRAWS" in text
    _refused(lambda: advise(13, 3, 1, "fixed:1", samples=10**12), "samples", SizeLimitError)
    dm = delay_model("pareto", 5, scale=1.0, shape=3.0)
    text = _refused(
        lambda: expected_decode_time(dm, arrival_rule("first", s=1), method="monte-carlo", samples=10**9),
        "samples",
        SizeLimitError,
    )
    assert "MAX_MC_DRAWS" in text


def test_streamed_monte_carlo_allows_more_draws_than_patterns(monkeypatch):
    """The streamed draws keep 16 bytes a draw: MAX_MC_DRAWS, not MAX_PATTERNS, bounds them (read at call time)."""
    from gcsim import limits
    from gcsim.coding.evaluate import expected_error
    from gcsim.coding.schemes import encode
    from gcsim.coding.stragglers import straggler_model
    from gcsim.combinatorics.bibd import bibd

    sch = encode(bibd(7, 3, 1), 2, "rd")  # one component: no exact route by components
    model = straggler_model("fixed", 7, s=2)
    monkeypatch.setattr(limits, "MAX_PATTERNS", 100)
    res = expected_error(sch, model, samples=500, exact_limit=0, progress=False)
    assert res.count == 500 and not res.method.startswith("exact")
    monkeypatch.setattr(limits, "MAX_MC_DRAWS", 499)
    _refused(lambda: expected_error(sch, model, samples=500, exact_limit=0), "samples")


def test_decode_time_cli_refuses_a_huge_sample_count_with_status_2():
    argv = [sys.executable, "-m", "gcsim", "decode-time", "--workers", "3", "--delays"]
    argv += ["shifted-exponential:shift=1,rate=1", "--rule", "first:s=1", "--evaluation", "monte-carlo"]
    out = subprocess.run([*argv, "--samples", "1000000000"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "gcsim: error: --samples:" in out.stderr and "Traceback" not in out.stderr


def test_cyclic_design_bundle_with_a_huge_v_is_refused_fast():
    fano = CyclicDesign(7, [1, 2, 4])
    meta = fano.bundle_metadata() | {"params": [1_500_000_000, 3, 1]}
    start = time.perf_counter()
    with pytest.raises(CatalogueError, match="v:"):
        CyclicDesign.from_arrays(fano.to_arrays(), meta)
    assert time.perf_counter() - start < 1.0


def test_difference_set_lambda_rejects_impossible_parameters_without_counting():
    # k(k - 1) = 6 is not a multiple of v - 1 = 9_999: no difference set, answered at once
    assert difference_set_lambda(10_000, [0, 1, 3]) is None
    assert difference_set_lambda(7, [1, 2, 4]) == 1
    assert difference_set_lambda(13, [0, 1, 3, 9]) == 1


# -- class 3: integers ------------------------------------------------------------------------
NON_INTEGERS = [[1, 2, 4.5], [True, 2, 4], "124", b"124", np.array([1.0, 2.0, 4.5]), np.array([True, False, True])]


@pytest.mark.parametrize("bad", NON_INTEGERS, ids=repr)
@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda b: CyclicDesign(7, b), "base"),
        (lambda b: difference_set_lambda(7, b), "D"),
        (lambda b: circulant_incidence(7, b), "D"),
        (lambda b: develop(7, [b]), "base_blocks"),
        (lambda b: additive_cosets(4, b), "subgroup"),
        (lambda b: block_graph([b, [0, 3, 5]]), "blocks"),
        (lambda b: incidence_from_blocks(7, [b, [0, 3, 5]]), "blocks"),
        (lambda b: BIBD(7, [b] * 7, "x"), "blocks"),
    ],
)
def test_non_integer_inputs_are_refused_not_truncated(fn, name, bad):
    _refused(lambda: fn(bad), name)


@pytest.mark.parametrize("bad", [[[1], [4.5]], [[True], [4]], "14"], ids=repr)
def test_cayley_connection_must_be_integers(bad):
    _refused(lambda: abelian_cayley_graph([5], bad), "connection")


def test_coset_connection_sets_must_be_integers():
    _refused(lambda: coset_graph(9, 2, 2, connection_sets=[[0, 1.5], [0, 3]]), "connection_sets[0]")  # type: ignore[list-item]
    _refused(lambda: coset_graph(9, 2, 2, connection_sets=[[0, True], [0, 3]]), "connection_sets[0]")


def test_whole_numbers_in_any_integer_form_are_accepted():
    for base in ([1, 2, 4], (4, 1, 2), np.array([1, 2, 4], dtype=np.uint8), [1.0, 2.0, 4.0], {1, 2, 4}):
        assert CyclicDesign(7, base).base.tolist() == [1, 2, 4]
    assert abelian_cayley_graph([5], [[1], [4]]).params.v == 5


def test_check_int_array_bounds_and_shapes():
    assert check_int_array("x", []).dtype == np.int64
    with pytest.raises(InvalidArgumentError, match="int64"):
        check_int_array("x", [10**30])
    with pytest.raises(InvalidArgumentError, match="2-D"):
        check_int_array("x", [1, 2], ndim=2)
    with pytest.raises(InvalidArgumentError, match="x:"):
        check_int_array("x", [[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="x:"):
        check_int_array("x", [np.nan])


def test_stratum_rank_lower_bound_checks_its_integers_and_sizes():
    from gcsim.coding.estimators import stratum_rank_lower_bound

    assert stratum_rank_lower_bound([2, 2, 2], 1, 3, 2) == 1.0
    for bad in ([2, 2.5, 2], [2, True, 2], "222"):
        _refused(lambda bad=bad: stratum_rank_lower_bound(bad, 1, 3, 2), "loads")
    _refused(lambda: stratum_rank_lower_bound([2, 7, 2], 1, 3, 2), "loads")
    _refused(lambda: stratum_rank_lower_bound(ZERO_STRIDE, 1, 3, 2), "loads", SizeLimitError)
    _refused(lambda: stratum_rank_lower_bound([2, 2, 2], 1, 3, 10**12), "s")
    _refused(lambda: stratum_rank_lower_bound(list(range(5000)), 10**12, 10**12, 1), "m", SizeLimitError)
