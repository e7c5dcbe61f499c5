"""gcsim.coding.evaluate (the part run by ``scripts/mutation.py coding.evaluate``) against independent computations.

Issue #32 item 7.  The optimal-decoding error is checked against numpy.linalg.lstsq on B_F and the
target T (every route, raw and normalized, one mask and a batch), the condition number against
the singular values from numpy.linalg.svd, and the small helpers against the standard library.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from conftest import FANO
from exact_lstsq import lstsq_error
from gcsim.coding.evaluate import (
    _check_method,
    condition_number,
    is_exact_method,
    optimal_error,
    optimal_error_all,
)
from gcsim.coding.expected_routes import _log_comb, _se
from gcsim.coding.schemes import encode
from gcsim.errors import InvalidArgumentError, SizeLimitError


@pytest.mark.parametrize("method", ["auto", "gram", "svd", "qr", "downdate"])
@pytest.mark.parametrize("m", [1, 2])
def test_optimal_error_against_lstsq(method, m):
    sch = encode(np.asarray(FANO), m, "rd", seed=4)
    B = np.asarray(sch.B, dtype=float)
    rng = np.random.default_rng(7)
    masks = rng.random((12, 7)) < 0.6
    masks[0] = True
    masks[1] = False
    expected = np.array([lstsq_error(B, mk, m) for mk in masks])
    got = optimal_error(sch, masks, method=method, progress=False)
    assert isinstance(got, np.ndarray) and got.shape == (12,)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert got[1] == 7 * m  # nobody arrives: ||T||^2 = mN
    normalized = optimal_error(sch, masks, method=method, normalized=True, progress=False)
    np.testing.assert_allclose(normalized, expected / (7 * m), atol=1e-10)
    one = optimal_error(sch, masks[2], method=method, progress=False)
    assert isinstance(one, float) and one == pytest.approx(expected[2], abs=1e-9)
    one_normalized = optimal_error(sch, masks[2], method=method, normalized=True, progress=False)
    assert isinstance(one_normalized, float) and one_normalized == pytest.approx(expected[2] / (7 * m), abs=1e-10)


def test_optimal_error_structured_route_against_lstsq():
    sch = encode(np.asarray(FANO), 1, "naive")
    B = np.asarray(sch.B, dtype=float)
    m = 1
    masks = np.array([[1, 1, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0, 0], [1] * 7, [1, 0, 0, 0, 0, 0, 0]], bool)
    got = optimal_error(sch, masks)
    np.testing.assert_allclose(got, [lstsq_error(B, mk, m) for mk in masks], atol=1e-9)
    assert optimal_error(sch, masks[3], normalized=True) == pytest.approx(lstsq_error(B, masks[3], m) / 7)


def test_optimal_error_bad_input_names_it():
    sch = encode(np.asarray(FANO), 1, "naive")
    for kwargs, name in [
        ({"method": "cholesky"}, "method"),
        ({"method": 3}, "method"),
        ({"normalized": "yes"}, "normalized"),
        ({"progress": 2}, "progress"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            optimal_error(sch, np.ones(7, bool), **kwargs)
        assert info.value.argument == name, kwargs
    with pytest.raises(InvalidArgumentError) as info:
        optimal_error(sch, np.ones(6, bool))
    assert info.value.argument == "nonstragglers"


def test_condition_number_from_singular_values():
    for m, method, seed in [(1, "naive", 0), (2, "rd", 1), (3, "rd", 2)]:
        sch = encode(np.asarray(FANO), m, method, seed=seed) if method == "rd" else encode(np.asarray(FANO), m, method)
        s = np.linalg.svd(np.asarray(sch.B, dtype=float), compute_uv=False)
        s = s[s > s[0] * 1e-12]
        assert condition_number(sch) == pytest.approx(s[0] / s[-1], rel=1e-9)
    assert condition_number(encode(np.eye(3, dtype=int), 1, "naive")) == 1.0
    # [[1, 1], [0, 1]]: singular values sqrt((3 +- sqrt 5) / 2), ratio (3 + sqrt 5) / 2
    two = encode(np.array([[1, 1], [0, 1]]), 1, "naive")
    assert condition_number(two) == pytest.approx((3 + math.sqrt(5)) / 2, rel=1e-12)


def test_small_helpers_against_the_standard_library():
    for n in range(0, 40, 3):
        for s in range(0, n + 1, 2):
            assert _log_comb(n, s) == pytest.approx(math.log(math.comb(n, s)), abs=1e-9)
    x = np.array([1.0, 4.0, 2.5, 7.0])
    assert _se(x) == pytest.approx(statistics.stdev(x.tolist()) / 2)
    assert _se(np.array([3.0])) == math.inf
    assert is_exact_method("exact") and is_exact_method("exact (by components)")
    assert not is_exact_method("exactly") and not is_exact_method("monte-carlo n=10")
    assert _check_method("qr") in ("qr", "svd") and _check_method("gram") == "gram"
    with pytest.raises(InvalidArgumentError) as info:
        _check_method("eigh")
    assert info.value.argument == "method"


@pytest.mark.parametrize("method", ["auto", "gram", "svd", "downdate"])
@pytest.mark.parametrize("chunk", [None, 1, 4])
def test_optimal_error_all_against_lstsq_in_lexicographic_order(method, chunk):
    for sch, m in [(encode(np.asarray(FANO), 2, "rd", seed=5), 2), (encode(np.asarray(FANO), 1, "naive"), 1)]:
        B = np.asarray(sch.B, dtype=float)
        for s in (0, 2, 5, 7):
            sets = list(itertools.combinations(range(7), s))  # S in lexicographic order
            masks = np.ones((len(sets), 7), bool)
            for row, S in enumerate(sets):
                masks[row, list(S)] = False
            expected = np.array([lstsq_error(B, mk, m) for mk in masks])
            got = optimal_error_all(sch, s, method=method, chunk=chunk, progress=False)
            np.testing.assert_allclose(got, expected, atol=1e-9)
            got_n = optimal_error_all(sch, s, method=method, chunk=chunk, normalized=True, progress=False)
            np.testing.assert_allclose(got_n, expected / (7 * m), atol=1e-10)


def test_optimal_error_all_bad_input_names_it():
    sch = encode(np.asarray(FANO), 1, "naive")
    for args, kwargs, name in [
        ((8,), {}, "s"),
        ((-1,), {}, "s"),
        ((2,), {"chunk": 0}, "chunk"),
        ((2,), {"normalized": "no"}, "normalized"),
        ((2,), {"progress": None}, "progress"),
        ((2,), {"method": "lu"}, "method"),
        ((2,), {"method": "downdate", "rtol": 1e-10}, "rtol"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            optimal_error_all(sch, *args, **kwargs)
        assert info.value.argument == name, (args, kwargs)


def test_optimal_error_all_refuses_too_many_patterns_up_front():
    sch = encode(np.eye(60, dtype=int), 1, "naive")  # C(60, 30) ~ 1.2e17 straggler sets
    with pytest.raises(SizeLimitError) as info:
        optimal_error_all(sch, 30)
    assert info.value.argument == "s"
