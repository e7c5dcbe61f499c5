"""The least ``Q_max`` over chunk orders (theory §59.2) against independent enumerations.

``least_q_max`` against a plain loop over every tuple of orders; the optimizer and the Latin orders
against it on small assignments; Proposition 59.5 (Latin orders are optimal at ``ℓ = δ - 1``) and the
counting bound of §59.2 against the Latin value; Proposition 59.7's orders (``n = 6``, ``δ = 5``,
``ℓ = 3``: ``Q_max`` 24 where Latin orders give 25) against the enumeration of every progress vector;
``search_orders`` (restarts after the swap search) reaching 24 there, certified by the counting bound.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gcsim.coding.delays import delay_model
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.partial_stragglers import (
    PartialStragglerModel,
    latin_orders,
    least_q_max,
    natural_orders,
    optimize_orders,
    q_max,
    regular_q_max_bound,
    search_orders,
)
from gcsim.errors import InvalidArgumentError, SizeLimitError


def _circulant(n: int, offsets: tuple[int, ...]) -> np.ndarray:
    A = np.zeros((n, n), dtype=np.int64)
    for o in offsets:
        A[(np.arange(n) + o) % n, np.arange(n)] = 1
    return A


SMALL = [
    ("cyclic 4/2", cyclic_repetition_assignment(4, 1)),
    ("cyclic 4/3", cyclic_repetition_assignment(4, 2)),
    ("cyclic 5/2", cyclic_repetition_assignment(5, 1)),
    ("cyclic 5/3", cyclic_repetition_assignment(5, 2)),
    ("circulant 6 {0,1,3}", _circulant(6, (0, 1, 3))),
    ("complete 4", np.ones((4, 4), dtype=np.int64)),
]


def _loop_least(A: np.ndarray, ell: int) -> tuple[int, int]:
    perms = [list(itertools.permutations(np.flatnonzero(A[:, j]).tolist())) for j in range(A.shape[1])]
    qs = [q_max(A, [np.array(p) for p in combo], ell) for combo in itertools.product(*perms)]
    return min(qs), qs.count(min(qs))


@pytest.mark.parametrize("name,A", SMALL[:4])
def test_least_q_max_matches_a_loop_over_every_order(name, A):
    for ell in range(1, int(A[:, 0].sum()) + 1):
        res = least_q_max(A, ell)
        assert (res.value, res.reaching) == _loop_least(A, ell), (name, ell)
        assert q_max(A, res.orders, ell) == res.value


@pytest.mark.parametrize("name,A", SMALL)
def test_latin_orders_and_the_optimizer_reach_the_least_q_max_on_small_assignments(name, A):
    n = A.shape[1]
    model = PartialStragglerModel(A, latin_orders(A), delay_model("shifted-exponential", n, shift=1.0, rate=1.0))
    for ell in range(1, int(A[:, 0].sum()) + 1):
        least = least_q_max(A, ell).value
        assert q_max(A, latin_orders(A), ell) == least, (name, ell)
        assert q_max(A, optimize_orders(model, ell, draws=100, sweeps=1), ell) == least, (name, ell)
        assert regular_q_max_bound(n, int(A[:, 0].sum()), ell) <= least


@pytest.mark.parametrize("delta", range(2, 8))
def test_counting_bound_is_the_latin_value_at_ell_1_delta_minus_1_and_delta(delta):
    for ell in {1, delta - 1, delta} - {0}:
        t = delta - ell + 1
        assert regular_q_max_bound(12, delta, ell) == 12 * delta + 1 - t * (t + 1) // 2
    for ell in range(1, delta + 1):  # never above the Latin value
        t = delta - ell + 1
        assert regular_q_max_bound(12, delta, ell) <= 12 * delta + 1 - t * (t + 1) // 2


# Bound 59.6's table (theory §59.2): how far below the Latin value the counting bound lies, δ <= 7.
GAPS = {(5, 3): 1, (6, 2): 1, (6, 3): 1, (6, 4): 1, (7, 2): 1, (7, 3): 2, (7, 4): 2, (7, 5): 1}


def test_counting_bound_table_of_bound_59_6():
    for delta in range(1, 8):
        for ell in range(1, delta + 1):
            t = delta - ell + 1
            latin = 12 * delta + 1 - t * (t + 1) // 2
            assert latin - regular_q_max_bound(12, delta, ell) == GAPS.get((delta, ell), 0), (delta, ell)


# Proposition 59.7: every chunk's values v_j(i) are {1,1,5,5,5}, {1,2,4,4,4} or {2,2,3,3,3}.
ORDERS_59_7 = [[1, 3, 5, 4, 2], [0, 2, 5, 4, 3], [1, 3, 4, 5, 0], [1, 2, 4, 5, 0], [0, 3, 5, 2, 1], [0, 2, 4, 3, 1]]


def _progress_q_max(A: np.ndarray, orders, ell: int) -> int:
    """Largest number of computations that leaves some chunk below ℓ completions, plus one."""
    worst = -1
    for ks in itertools.product(*[range(len(o) + 1) for o in orders]):
        counts = np.zeros(A.shape[0], dtype=int)
        for j, o in enumerate(orders):
            counts[o[: ks[j]]] += 1
        if counts.min() < ell:
            worst = max(worst, sum(ks))
    return worst + 1


def test_proposition_59_7_latin_orders_are_not_always_optimal():
    A = 1 - np.eye(6, dtype=np.int64)  # worker j holds every chunk but j
    orders = [np.array(o) for o in ORDERS_59_7]
    assert q_max(A, orders, 3) == _progress_q_max(A, orders, 3) == 24
    assert q_max(A, latin_orders(A), 3) == 25
    assert regular_q_max_bound(6, 5, 3) == 24  # so 24 is the least over every order
    model = PartialStragglerModel(A, latin_orders(A), delay_model("shifted-exponential", 6, shift=1.0, rate=1.0))
    assert q_max(A, optimize_orders(model, 3, draws=100, sweeps=1), 3) == 25  # the swap search stays at Latin's


def _model(A: np.ndarray, orders) -> PartialStragglerModel:
    return PartialStragglerModel(A, orders, delay_model("shifted-exponential", A.shape[1], shift=1.0, rate=1.0))


def test_search_orders_escapes_the_swap_optimum_of_proposition_59_7_and_certifies_it():
    A = 1 - np.eye(6, dtype=np.int64)
    model = _model(A, latin_orders(A))
    res = search_orders(model, 3, draws=100, sweeps=1)
    assert (res.q_max, res.bound, res.certified) == (24, 24, True)
    assert q_max(A, res.orders, 3) == _progress_q_max(A, [o.tolist() for o in res.orders], 3) == 24
    assert 0 < res.restarts < 1000  # stopped at the bound
    again = search_orders(model, 3, draws=100, sweeps=1)
    assert again.restarts == res.restarts
    assert all(np.array_equal(a, b) for a, b in zip(again.orders, res.orders, strict=True))
    other = search_orders(model, 3, draws=100, sweeps=1, seed=1)  # another seed, another route to 24
    assert (other.q_max, other.certified) == (24, True)
    stay = search_orders(model, 3, draws=100, sweeps=1, restarts=0)  # no restart: optimize_orders' result
    expect = optimize_orders(model, 3, draws=100, sweeps=1)
    assert (stay.q_max, stay.certified, stay.restarts) == (25, False, 0)
    assert all(np.array_equal(a, b) for a, b in zip(stay.orders, expect, strict=True))


# Assignments that are not regular and square: no counting bound, the search starts from natural orders.
IRREGULAR = [
    (
        "6x4 two per chunk",
        np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]]),
    ),
    ("4x5", np.array([[1, 1, 1, 0, 1], [0, 1, 1, 1, 0], [1, 0, 1, 1, 1], [1, 1, 0, 1, 1]])),
]


@pytest.mark.parametrize("name,A", SMALL + IRREGULAR)
def test_search_orders_reaches_the_least_q_max_and_never_does_worse_than_optimize_orders(name, A):
    A = np.asarray(A, dtype=np.int64)
    model = _model(A, natural_orders(A))
    for ell in range(1, int(A.sum(axis=1).min()) + 1):
        least = least_q_max(A, ell).value
        res = search_orders(model, ell, draws=100, sweeps=1, restarts=20)
        assert res.q_max == q_max(A, res.orders, ell) == least, (name, ell)
        assert res.q_max <= q_max(A, optimize_orders(model, ell, draws=100, sweeps=1), ell)
        assert res.certified == (res.bound == least), (name, ell)
        assert res.bound is None or res.restarts == 0  # SMALL: Latin orders already meet the bound


def test_search_orders_beats_the_swap_search_on_an_irregular_assignment():
    A = IRREGULAR[0][1]
    model = _model(A, natural_orders(A))
    assert q_max(A, optimize_orders(model, 1, draws=100, sweeps=1), 1) == 10
    res = search_orders(model, 1, draws=100, sweeps=1, restarts=20)
    assert (res.q_max, res.bound, res.certified, res.restarts) == (9, None, False, 20)


def test_bad_inputs_are_refused_by_name():
    A = cyclic_repetition_assignment(4, 1)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        least_q_max(A, 3)
    with pytest.raises(SizeLimitError, match="MAX_PATTERNS"):
        least_q_max(np.ones((8, 8), dtype=np.int64), 1)
    model = _model(A, latin_orders(A))
    with pytest.raises(InvalidArgumentError, match="restarts"):
        search_orders(model, 1, restarts=-1)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        search_orders(model, 0)
    with pytest.raises(InvalidArgumentError, match="delta"):
        regular_q_max_bound(20, 10, 1)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        regular_q_max_bound(20, 4, 5)
