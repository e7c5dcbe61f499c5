"""gcsim.coding.partial_stragglers and gcsim.coding.partial against independent computations.

Written against the mutants ``scripts/mutation.py --sample 100 --seed 0 coding.partial`` found alive.
The errors are written out (Theorem 59.1's ``Σ_i max(0, ℓ - |S_i|)`` by loops, Theorem 48.4's
``min_X ‖B_{R,F} X - T_R‖²`` by ``lstsq``), the least ``Q_max`` is enumerated over every tuple of
orders, and the swap search is driven by a counting acceptor; every refused input must name its
argument.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gcsim.coding import partial_stragglers as pst
from gcsim.coding.delays import delay_model
from gcsim.coding.partial import PartialScheme, partial_error, partial_error_all, partial_scheme
from gcsim.coding.partial_stragglers import (
    PartialStragglerModel,
    chunk_completion_times,
    compare_protocols,
    coverage,
    exact_recovery_times,
    least_q_max,
    natural_orders,
    optimize_orders,
    partial_error_from_coverage,
    q_max,
    search_orders,
)
from gcsim.errors import SizeLimitError
from tests.guards import refused_argument


def _model(A: np.ndarray) -> PartialStragglerModel:
    return PartialStragglerModel(
        A, natural_orders(A), delay_model("shifted-exponential", A.shape[1], shift=1.0, rate=1.0)
    )


# --- completion times, coverage and Theorem 59.1 --------------------------------------------------------


def test_coverage_counts_completions_by_any_time_from_zero():
    C = np.array([[[0.25, 0.75], [0.5, np.inf], [0.0, 0.5]]])  # 1 draw, 3 workers, 2 chunks
    for t in (0.0, 0.3, 0.5, 0.8):
        expect = [[sum(C[0, j, i] <= t for j in range(3)) for i in range(2)]]
        assert coverage(C, t).tolist() == expect
    assert refused_argument(coverage, C, -0.5) == "t"
    assert refused_argument(coverage, C[0], 1.0) == "times"


def test_exact_recovery_needs_ell_completions_of_every_chunk_and_ell_at_least_one():
    C = np.array([[[1.0, 3.0], [2.0, np.inf]], [[0.5, 0.5], [0.25, 2.0]], [[4.0, 1.0], [1.0, 4.0]]])
    assert exact_recovery_times(C, 1).tolist() == [3.0, 0.5, 1.0]  # per chunk the first, then the last chunk
    assert exact_recovery_times(C, 3).tolist() == [np.inf] * 3  # 3 draws, only 2 workers: never
    for bad in (0, -1):
        assert refused_argument(exact_recovery_times, C, bad) == "blocks"
        assert refused_argument(partial_error_from_coverage, [[1, 2]], bad) == "blocks"


def test_compare_protocols_normalizes_the_errors_by_ell_n():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    model = _model(A)
    ell, deadline, draws = 2, 1.5, 12
    res = compare_protocols(model, ell, deadline, draws=draws, seed=3)
    C = chunk_completion_times(model, draws, 3)  # the same draws (same seed)
    per_draw = [sum(max(0, ell - int((C[k, :, i] <= deadline).sum())) for i in range(3)) for k in range(draws)]
    assert res.error_partial.mean == pytest.approx(sum(per_draw) / draws / (ell * 3), rel=1e-12)


# --- q_max orders: the swap search, optimize_orders, search_orders --------------------------------------


def test_swap_search_stops_after_the_given_number_of_sweeps():
    calls = []

    def accept(trial):  # accepts every swap it is offered, as long as it is asked fewer than 100 times
        calls.append(trial)
        return len(calls) < 100

    start = (np.array([0, 1, 2]),)
    out = pst._swap_search(start, accept, 2)
    assert len(calls) == 6  # 2 sweeps x the 3 pairs of one worker's 3 chunks
    order = [0, 1, 2]
    for _sweep, (a, b) in itertools.product(range(2), [(0, 1), (0, 2), (1, 2)]):
        order[a], order[b] = order[b], order[a]
    assert out[0].tolist() == order


def test_zero_sweeps_keep_the_starting_orders():
    A = np.ones((3, 2), dtype=np.int64)  # not square: the search starts from the natural orders
    start = natural_orders(A)
    assert q_max(A, start, 1) > least_q_max(A, 1).value  # a swap would help
    got = optimize_orders(_model(A), 1, draws=20, sweeps=0)
    assert all(np.array_equal(a, b) for a, b in zip(got, start, strict=True))


IRREGULAR = [
    np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]]),
    np.array([[1, 1, 1, 0, 1], [0, 1, 1, 1, 0], [1, 0, 1, 1, 1], [1, 1, 0, 1, 1]]),
]


@pytest.mark.parametrize("A", IRREGULAR, ids=["6x4", "4x5"])
def test_restarts_keep_optimize_orders_result_when_it_is_already_the_least(A):
    # no orders at all give a lower Q_max (enumerated), so no restart may replace the swap search's result
    model = _model(A)
    ell = 2
    first = optimize_orders(model, ell, draws=50, sweeps=1)
    assert q_max(A, first, ell) == least_q_max(A, ell).value
    res = search_orders(model, ell, draws=50, sweeps=1, restarts=5)
    assert all(np.array_equal(a, b) for a, b in zip(res.orders, first, strict=True))


# --- partial gradient coding (theory §48.3) -------------------------------------------------------------


def _lstsq_error(ps: PartialScheme, mask: np.ndarray) -> float:
    """``min_X ‖B_{R,F} X - T_R‖_F²``, R the parts whose owner did not arrive, by lstsq."""
    N, m = ps.num_parts, ps.m
    B = ps.full_encoder()
    missing = [i for i in range(N) if not (ps.owner[i] >= 0 and mask[ps.owner[i]])]
    rows = [k * N + i for k in range(m) for i in missing]
    T = np.kron(np.eye(m), np.ones((N, 1)))[rows]
    BF = B[np.ix_(np.array(rows, dtype=np.int64), np.flatnonzero(mask))]
    if BF.shape[1] == 0:
        return float((T**2).sum())
    X = np.linalg.lstsq(BF, T, rcond=None)[0]
    return float(((BF @ X - T) ** 2).sum())


def test_partial_error_and_its_normalization_against_lstsq():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    ps = partial_scheme(A, 1, "naive")
    masks = np.array(list(itertools.product([False, True], repeat=3)))
    expect = [_lstsq_error(ps, mk) for mk in masks]
    assert partial_error(ps, masks) == pytest.approx(expect, abs=1e-9)
    assert partial_error(ps, masks, normalized=True) == pytest.approx([e / 3 for e in expect], abs=1e-9)


def test_partial_refusals_name_their_argument():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    ps = partial_scheme(A, 1, "naive")
    assert refused_argument(partial_error, ps, [True, True, True], normalized="yes") == "normalized"
    assert refused_argument(partial_error_all, ps, 4) == "s"
    huge = np.broadcast_to(np.ones(3, dtype=bool), (10**12, 3))  # a view: nothing allocated
    with pytest.raises(SizeLimitError) as info:
        partial_error(ps, huge)
    assert info.value.argument == "nonstragglers"
    for owners in (np.array([0.0, 1.0, 2.0]), np.array([0, 1, 2, 0]), np.array([0, 1, 3]), np.array([0, 1, -2])):
        assert refused_argument(partial_scheme, A, 1, "naive", owners=owners) == "owners"


def test_partial_scheme_keeps_owners_as_int64_whatever_integer_type_it_is_given():
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    ps = partial_scheme(A, 1, "naive")
    again = PartialScheme(A, ps.owner.astype(np.int32), ps.coded_parts, ps.coded)
    assert again.owner.dtype == np.int64 and again.owner.tolist() == [0, 1, 2]


def _g(A: np.ndarray, orders, ell: int) -> list[int]:
    """Theorem 59.3's g_i written out: the r_i - ℓ + 1 smallest of load_j - pos_j(i) over i's holders."""
    loads = A.sum(axis=0)
    g = []
    for i in range(A.shape[0]):
        vals = sorted(int(loads[j]) - list(orders[j]).index(i) for j in range(A.shape[1]) if A[i, j])
        g.append(sum(vals[: len(vals) - ell + 1]))
    return g


def _surrogate(A: np.ndarray, orders, ell: int, target: int) -> tuple[int, int]:
    g = _g(A, orders, ell)
    return -min(g), sum(max(0, target - x) ** 2 for x in g)


@pytest.mark.parametrize("seed", range(4))
def test_descend_ends_where_no_swap_lowers_the_squared_surrogate(seed):
    # the restarts' descent (§59.2): least g_i first, then Σ_i max(0, m + 2 - g_i)² with m the best least g_i
    A = 1 - np.eye(6, dtype=np.int64)
    ell, best_q = 3, 25
    target = int(A.sum()) + 3 - best_q
    rng = np.random.default_rng(seed)
    start = tuple(rng.permutation(o) for o in natural_orders(A))
    out = pst._descend(A, start, ell, best_q)
    here = _surrogate(A, out, ell, target)
    assert here <= _surrogate(A, start, ell, target)
    for j, o in enumerate(out):
        for a, b in itertools.combinations(range(o.size), 2):
            cand = [x.tolist() for x in out]
            cand[j][a], cand[j][b] = cand[j][b], cand[j][a]
            assert _surrogate(A, cand, ell, target) >= here, (j, a, b)


def test_an_unowned_part_coded_by_one_worker_is_a_valid_scheme():
    A = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1]])  # part 0 is held by worker 0 alone, and nobody owns it
    ps = partial_scheme(A, 1, "naive", owners=np.array([-1, -1, -1]))
    assert ps.verify() and ps.coded_parts.tolist() == [0, 1, 2]
    masks = np.array(list(itertools.product([False, True], repeat=3)))
    assert partial_error(ps, masks) == pytest.approx([_lstsq_error(ps, mk) for mk in masks], abs=1e-9)


def test_partial_encoder_gives_worker_j_the_powers_of_the_jth_chebyshev_node():
    done = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]])  # n = 4 workers, N = 3 chunks
    ell, n = 2, 4
    B, X = pst.partial_encoder(done, ell)
    for j in range(n):
        node = np.cos((2 * j + 1) * np.pi / (2 * n))  # Chebyshev nodes of the first kind
        assert X[j].tolist() == pytest.approx([node**k for k in range(ell)], abs=1e-15)
    # Theorem 59.1: ‖B X - I_ℓ ⊗ 1_N‖² = Σ_i (ℓ - min(|S_i|, ℓ)); |S| = (1, 3, 1)
    assert float(((B @ X - np.kron(np.eye(ell), np.ones((3, 1)))) ** 2).sum()) == pytest.approx(2.0, abs=1e-12)


def test_mean_ci_of_one_draw_is_unbounded_and_of_none_refused():
    one = pst.mean_ci([2.0])
    assert (one.mean, one.lo, one.hi, one.draws) == (2.0, -np.inf, np.inf, 1)
    assert refused_argument(pst.mean_ci, []) == "values"
