"""Partial stragglers (gcsim.coding.partial_stragglers, theory §59) against independent computations.

Theorem 59.1 against least squares on the arrived pieces (the constructed encoder reaches the closed
form, random encoders on the same pieces never beat it); exact-recovery times against an event-by-event
replay; ``Q_max`` against enumeration of every progress vector; the optimizer's ``Q_max`` against
enumeration of every order on tiny assignments; the classic time against the closed form of the
shifted-exponential order statistic; and the optimizer against random orders on every setup tried.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gcsim.coding.delays import arrival_rule, delay_model, expected_decode_time
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.partial_stragglers import (
    PartialStragglerModel,
    chunk_completion_times,
    classic_errors,
    classic_exact_times,
    classic_scheme,
    classic_tolerance,
    compare_protocols,
    coverage,
    exact_recovery_times,
    latin_orders,
    natural_orders,
    optimize_orders,
    partial_encoder,
    partial_error_from_coverage,
    q_max,
    random_orders,
)
from gcsim.coding.straggler_base import StragglerModel
from gcsim.coding.straggler_models import model_kinds, straggler_model
from gcsim.coding.straggler_models.partial import PartialStragglers
from gcsim.errors import InvalidArgumentError
from tests.exact_lstsq import lstsq_error


def _model(n: int, delta: int, law: str = "se", orders=None, chunk_times: str = "linear") -> PartialStragglerModel:
    A = cyclic_repetition_assignment(n, delta - 1)
    laws = {
        "se": lambda: delay_model("shifted-exponential", n, shift=1.0, rate=1.0),
        "pareto": lambda: delay_model("pareto", n, scale=1.0, shape=2.5),
        "bimodal": lambda: delay_model(
            "bimodal", n, p_slow=0.3, fast_shift=1.0, fast_rate=2.0, slow_shift=3.0, slow_rate=0.5
        ),
    }
    return PartialStragglerModel(A, natural_orders(A) if orders is None else orders, laws[law](), chunk_times)


@pytest.mark.parametrize("ell", [1, 2, 3])
def test_theorem_59_1_matches_lstsq_on_the_constructed_encoder(ell):
    rng = np.random.default_rng(5)
    for _ in range(40):
        n, N = int(rng.integers(2, 7)), int(rng.integers(1, 6))
        done = (rng.random((n, N)) < 0.5).astype(int)
        B, _X = partial_encoder(done, ell)
        closed = int(partial_error_from_coverage(done.sum(axis=0), ell))
        assert lstsq_error(B, np.ones(n, dtype=bool), ell) == pytest.approx(closed, abs=1e-9)


@pytest.mark.parametrize("ell", [1, 2, 3])
def test_no_encoder_on_the_arrived_pieces_beats_theorem_59_1(ell):
    rng = np.random.default_rng(11)
    for _ in range(60):
        n, N = int(rng.integers(2, 6)), int(rng.integers(1, 5))
        done = (rng.random((n, N)) < 0.6).astype(int)
        closed = int(partial_error_from_coverage(done.sum(axis=0), ell))
        B = rng.standard_normal((ell * N, n)) * np.tile(done.T, (ell, 1))  # support: completed pairs only
        assert lstsq_error(B, np.ones(n, dtype=bool), ell) >= closed - 1e-9


def _replay_exact_time(C: np.ndarray, ell: int) -> float:
    """Walk the completion events in time order; the first time every chunk has ℓ completions."""
    n, N = C.shape
    events = sorted((C[j, i], j, i) for j in range(n) for i in range(N) if np.isfinite(C[j, i]))
    counts = [0] * N
    for t, _j, i in events:
        counts[i] += 1
        if min(counts) >= ell:
            return t
    return math.inf


@pytest.mark.parametrize("chunk_times", ["linear", "independent"])
@pytest.mark.parametrize("ell", [1, 2])
def test_exact_recovery_times_match_an_event_replay_and_lstsq(chunk_times, ell):
    model = _model(5, 3, "bimodal", chunk_times=chunk_times)
    C = chunk_completion_times(model, 30, seed=3)
    got = exact_recovery_times(C, ell)
    for d in range(C.shape[0]):
        want = _replay_exact_time(C[d], ell)
        assert got[d] == want
        done_at = (C[d] <= want).astype(int)
        B, _ = partial_encoder(done_at, ell)
        assert lstsq_error(B, np.ones(5, dtype=bool), ell) == pytest.approx(0.0, abs=1e-9)
        before = (C[d] < want).astype(int)
        assert int(partial_error_from_coverage(before.sum(axis=0), ell)) > 0


def test_chunk_times_follow_the_order_and_the_delay_draw():
    A = cyclic_repetition_assignment(4, 2)
    orders = random_orders(A, seed=2)
    model = PartialStragglerModel(A, orders, delay_model("shifted-exponential", 4, shift=1.0, rate=1.0))
    C = chunk_completion_times(model, 7, seed=9)
    X = model.delays.sample_delays(7, seed=9)
    for j, o in enumerate(orders):
        for k, i in enumerate(o):
            np.testing.assert_allclose(C[:, j, i], X[:, j] * (k + 1) / 3)
    assert np.isinf(C[:, 0, 3]).all()  # worker 0 holds chunks 0, 1, 2
    np.testing.assert_array_equal(C, chunk_completion_times(model, 7, seed=9))


def _brute_q_max(A: np.ndarray, orders, ell: int) -> int:
    """Largest number of computations that leaves some chunk below ℓ completions, plus one."""
    n = A.shape[1]
    worst = -1
    for ks in itertools.product(*[range(o.size + 1) for o in orders]):
        counts = np.zeros(A.shape[0], dtype=int)
        for j in range(n):
            counts[orders[j][: ks[j]]] += 1
        if counts.min() < ell:
            worst = max(worst, sum(ks))
    return worst + 1


@pytest.mark.parametrize("n,delta,ell", [(4, 2, 1), (4, 3, 2), (5, 3, 1), (5, 3, 2), (4, 4, 3)])
def test_q_max_matches_enumeration_of_progress(n, delta, ell):
    A = cyclic_repetition_assignment(n, delta - 1)
    for seed in range(4):
        orders = random_orders(A, seed=seed)
        assert q_max(A, orders, ell) == _brute_q_max(A, orders, ell)


@pytest.mark.parametrize("n,delta,ell", [(4, 2, 1), (4, 3, 1), (4, 3, 2), (5, 2, 1), (5, 3, 2)])
def test_optimizer_reaches_the_least_q_max_over_every_order(n, delta, ell):
    model = _model(n, delta)
    A = model.assignment
    perms = [list(itertools.permutations(np.flatnonzero(A[:, j]).tolist())) for j in range(n)]
    best = min(q_max(A, [np.array(p) for p in combo], ell) for combo in itertools.product(*perms))
    assert q_max(A, optimize_orders(model, ell, draws=200), ell) == best
    assert q_max(A, latin_orders(A), ell) == best


def test_latin_orders_put_every_chunk_in_every_position_once():
    A = cyclic_repetition_assignment(7, 2)
    pos = np.full((7, 7), -1)
    for j, o in enumerate(latin_orders(A)):
        pos[j, o] = np.arange(o.size)
    for i in range(7):
        assert sorted(pos[:, i][pos[:, i] >= 0].tolist()) == [0, 1, 2]


# Every setup tried: the optimizer's mean exact-recovery time is below each random order's, with
# the 95 % t interval of the paired difference (fresh draws, not those the optimizer saw) below 0.
SETUPS = [
    (6, 2, 1, "se"),
    (6, 3, 2, "se"),
    (8, 3, 1, "pareto"),
    (8, 4, 2, "bimodal"),
    (10, 3, 2, "se"),
]


@pytest.mark.parametrize("n,delta,ell,law", SETUPS)
def test_optimizer_beats_random_orders(n, delta, ell, law):
    model = _model(n, delta, law)
    opt = model.with_orders(optimize_orders(model, ell, draws=400, seed=1))
    t_opt = exact_recovery_times(chunk_completion_times(opt, 3000, seed=77), ell)
    for r in range(3):
        rnd = model.with_orders(random_orders(model.assignment, seed=r))
        t_rnd = exact_recovery_times(chunk_completion_times(rnd, 3000, seed=77), ell)
        diff = t_opt - t_rnd
        hi = diff.mean() + 1.97 * diff.std(ddof=1) / math.sqrt(diff.size)
        assert hi < 0, (n, delta, ell, law, r, diff.mean())


def test_classic_exact_time_matches_the_order_statistic_closed_form():
    model = _model(8, 3)  # linear chunk times: a worker finishes at its draw X_j
    s = classic_tolerance(model.assignment, 2)
    exact = expected_decode_time(model.delays, arrival_rule("first", s=s))
    assert exact.method == "exact"
    t = classic_exact_times(model, chunk_completion_times(model, 20000, seed=4), 2)
    half = 3.3 * t.std(ddof=1) / math.sqrt(t.size)
    assert abs(t.mean() - exact.mean) < half


def test_classic_code_is_exact_once_n_minus_s_workers_finished():
    model = _model(6, 3)
    C = chunk_completion_times(model, 20, seed=1)
    for ell in (1, 2):
        tc = classic_exact_times(model, C, ell)
        for d in range(5):
            assert classic_errors(model, C[d : d + 1], ell, float(tc[d]))[0] == pytest.approx(0.0, abs=1e-8)


def test_partial_never_worse_than_classic_and_faster():
    res = compare_protocols(_model(8, 3, orders=latin_orders(cyclic_repetition_assignment(8, 2))), 2, 1.5, draws=300)
    assert res.exact_partial.hi < res.exact_classic.lo
    assert res.speedup.lo > 1.0
    assert res.error_partial.mean <= res.error_classic.mean
    again = compare_protocols(_model(8, 3, orders=latin_orders(cyclic_repetition_assignment(8, 2))), 2, 1.5, draws=300)
    assert res == again


def test_coverage_counts_completions_by_time():
    C = np.array([[[0.5, np.inf, 2.0], [1.0, 1.0, np.inf]]])
    assert coverage(C, 1.0).tolist() == [[2, 1, 0]]
    assert partial_error_from_coverage(coverage(C, 1.0), 2).tolist() == [3]


def test_bad_inputs_are_refused_by_name():
    A = cyclic_repetition_assignment(4, 1)
    dm = delay_model("shifted-exponential", 4, shift=1.0, rate=1.0)
    with pytest.raises(InvalidArgumentError, match="orders"):
        PartialStragglerModel(A, [[0, 1]] * 4, dm)
    with pytest.raises(InvalidArgumentError, match="orders"):
        PartialStragglerModel(A, natural_orders(A)[:3], dm)
    with pytest.raises(InvalidArgumentError, match="delays"):
        PartialStragglerModel(A, natural_orders(A), delay_model("shifted-exponential", 5, shift=1.0, rate=1.0))
    with pytest.raises(InvalidArgumentError, match="chunk_times"):
        PartialStragglerModel(A, natural_orders(A), dm, "fast")
    with pytest.raises(InvalidArgumentError, match="assignment"):
        PartialStragglerModel(np.zeros((3, 4), dtype=int), natural_orders(A), dm)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        q_max(A, natural_orders(A), 3)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        classic_tolerance(A, 3)
    with pytest.raises(InvalidArgumentError, match="assignment"):
        latin_orders(np.array([[1, 1, 0], [0, 1, 1]]))
    with pytest.raises(InvalidArgumentError, match="times"):
        exact_recovery_times(np.zeros((3, 3)), 1)


@pytest.mark.parametrize("ell", [1, 2])
def test_corollary_59_2_partial_never_later_nor_worse_draw_by_draw(ell):
    model = _model(6, 3, "pareto", orders=random_orders(cyclic_repetition_assignment(6, 2), seed=4))
    C = chunk_completion_times(model, 200, seed=6)
    assert (exact_recovery_times(C, ell) <= classic_exact_times(model, C, ell)).all()
    for deadline in (1.0, 1.3, 2.0):
        ep = partial_error_from_coverage(coverage(C, deadline), ell)
        assert (ep <= classic_errors(model, C, ell, deadline) + 1e-9).all()


def test_registered_kind_partial_gives_the_classic_view_and_the_pieces():

    assert "partial" in model_kinds()
    chunks = _model(6, 3, "bimodal", orders=random_orders(cyclic_repetition_assignment(6, 2), seed=1))
    m = straggler_model("partial", 6, chunks=chunks, deadline=2.0)
    assert isinstance(m, PartialStragglers) and m.verify()
    done = m.sample_pieces(50, seed=3)
    C = chunk_completion_times(chunks, 50, seed=3)
    np.testing.assert_array_equal(done, C <= 2.0)
    np.testing.assert_array_equal(m.sample(50, seed=3), done.sum(axis=2) == 3)
    want = classic_errors(chunks, C, 2, 2.0)
    np.testing.assert_allclose(optimal_error(classic_scheme(chunks.assignment, 2), m.sample(50, seed=3)), want)
    again = StragglerModel.from_arrays(m.to_arrays(), m.bundle_metadata())
    np.testing.assert_array_equal(again.sample_pieces(20, seed=1), m.sample_pieces(20, seed=1))
    with pytest.raises(InvalidArgumentError, match="chunks"):
        straggler_model("partial", 6, chunks="x", deadline=1.0)
    with pytest.raises(InvalidArgumentError, match="n"):
        straggler_model("partial", 5, chunks=chunks, deadline=1.0)
