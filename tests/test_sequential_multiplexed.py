"""Multiplexed sequential gradient coding (gcsim.coding.sequential_multiplexed, theory §62.4)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from gcsim.coding.evaluate import worst_case_error
from gcsim.coding.schemes import encode
from gcsim.coding.sequential import (
    SelectiveRepeat,
    bursty_violation,
    is_bursty,
    job_masks,
    markov_masks,
    simulate_selective_repeat,
)
from gcsim.coding.sequential_multiplexed import MultiplexedSGC, multiplexed_load, simulate_multiplexed
from gcsim.errors import InvalidArgumentError
from test_sequential import _admissible_sequences as _admissible  # the same enumeration


def _oracle(seq: np.ndarray, n: int, B: int, W: int, lam: int, jobs: int) -> list[bool]:
    """Job t decodes iff (Lemma 62.7's characterization, read off the schedule, not the simulator):
    every worker arrives in at least W - 1 of rounds t..t+T (its D1 chunks), and for each group g,
    at least n - lam workers arrive in round t+W-1+g having missed at most g of rounds t..t+W-2+g."""
    strag = ~seq
    T = W - 2 + B
    out = []
    for t in range(jobs):
        if t + T >= len(seq):
            out.append(False)
            continue
        ok = all(int((~strag[t : t + T + 1, j]).sum()) >= W - 1 for j in range(n))
        if lam < n:
            for g in range(B):
                r = t + W - 1 + g
                senders = sum(1 for j in range(n) if not strag[r, j] and int(strag[t:r, j].sum()) <= g)
                ok = ok and senders >= n - lam
        out.append(ok)
    return out


# (n, B, W, lam, jobs): B = W - 1 and B < W - 1, lam < n and lam = n, T from 1 to 4
CASES = [
    (3, 1, 2, 1, 4),
    (3, 1, 2, 2, 3),
    (3, 1, 3, 1, 4),
    (3, 2, 3, 2, 3),
    (4, 1, 2, 2, 3),
    (2, 1, 2, 2, 4),
    (2, 2, 4, 1, 3),
    (3, 2, 4, 2, 2),
]


@pytest.mark.parametrize("n,B,W,lam,jobs", CASES)
def test_every_admissible_sequence_decodes_every_job_within_delay(n, B, W, lam, jobs):
    code = MultiplexedSGC(n, B, W, lam)
    T = code.delay
    count = 0
    for seq in _admissible(n, jobs + T, B, W, lam):
        run = simulate_multiplexed(code, seq)
        t = np.arange(jobs)
        assert run.decoded.shape == (jobs,)
        assert np.all((run.decoded >= t) & (run.decoded <= t + T)), (seq.astype(int).tolist(), run.decoded)
        assert _oracle(seq, n, B, W, lam, jobs) == [True] * jobs
        assert not simulate_multiplexed(code, seq, wait_cost=1.0).waited.any()  # no job is ever doomed
        count += 1
    assert count > 50  # the enumeration is not vacuous


@pytest.mark.parametrize("n,B,W,lam,jobs", CASES)
def test_simulator_matches_the_characterization_inside_and_outside_the_model(n, B, W, lam, jobs):
    code = MultiplexedSGC(n, B, W, lam)
    rng = np.random.default_rng(11)
    lost = 0
    for _ in range(200):
        seq = rng.random((jobs + code.delay, n)) > 0.35
        run = simulate_multiplexed(code, seq)
        assert (run.decoded >= 0).tolist() == _oracle(seq, n, B, W, lam, jobs)
        lost += run.lost
        # either wait rule recovers every job (Remark 62.9); the model rule makes the seen rounds admissible
        model = simulate_multiplexed(code, seq, wait_cost=1.0, wait_rule="model")
        assert model.recovered_fraction == 1.0
        assert is_bursty(seq | model.waited[:, None], B, W, lam)
        needed = simulate_multiplexed(code, seq, wait_cost=1.0)
        assert needed.recovered_fraction == 1.0
        # it waits only where a job would fail: the rounds before its first wait lose nothing
        first = int(np.argmax(needed.waited)) if needed.waited.any() else len(seq)
        assert not needed.waited.any() or run.lost > 0
        assert np.array_equal(needed.decoded[: max(0, first - code.delay)], run.decoded[: max(0, first - code.delay)])
    assert lost > 0  # the random sequences do leave the model and lose jobs


def test_a_burst_longer_than_B_loses_the_job():
    code = MultiplexedSGC(3, B=1, W=3, lam=1)  # T = 2: D1 chunks in rounds 0, 1, one retry in round 2
    seq = np.ones((4, 3), bool)
    seq[0:2, 0] = False  # worker 0 straggles two rounds in a row: a burst of 2 > B
    assert bursty_violation(seq, 1, 3, 1) == 1
    run = simulate_multiplexed(code, seq)
    assert run.decoded.tolist() == [-1, 3]  # job 0 misses a D1 chunk; job 1's retry arrives in round 3
    waited = simulate_multiplexed(code, seq, wait_cost=2.0)
    assert waited.decoded.tolist() == [2, 3] and waited.waited.tolist() == [False, True, False, False]
    assert waited.completion_time == pytest.approx(code.load * (1 + 2 + 3) / 3 + 2.0)


def _paper_load(n: int, B: int, W: int, lam: int) -> Fraction:
    if lam == n:
        return Fraction(W - 1 + B, n * (W - 1))
    return Fraction((lam + 1) * (W - 1 + B), n * (B + (W - 1) * (lam + 1)))


@pytest.mark.parametrize("n,B,W,lam", [(20, 2, 5, 6), (5, 1, 2, 2), (6, 3, 4, 6), (7, 2, 6, 3), (4, 1, 3, 0)])
def test_load_is_the_counted_data_split_and_the_paper_formula(n, B, W, lam):
    code = MultiplexedSGC(n, B, W, lam)
    assert code.verify()
    # one job = n (W-1) uncoded chunks of size ell + B coded groups; a coded task covers lam + 1 of a
    # group's n parts, and a task is one mini-task: group = n ell / (lam + 1); solve for ell
    per_ell = n * (W - 1) + (Fraction(B * n, lam + 1) if lam < n else 0)
    ell = Fraction(1) / per_ell
    assert code.minitask_fraction == ell
    assert code.load_fraction == (W - 1 + B) * ell == _paper_load(n, B, W, lam) == multiplexed_load(n, B, W, lam)
    # the whole computation of J jobs, counted from the run without stragglers, is J times the load
    J = 7
    run = simulate_multiplexed(code, np.ones((J + code.delay, n), bool))
    assert run.recovered_fraction == 1.0 and run.tasks == W - 1 + B
    assert run.round_time.sum() == pytest.approx(J * code.load)
    if lam < n <= 7:  # a D2 group decodes from any n - lam coded tasks (small n: the check enumerates)
        res = worst_case_error(encode(code.assignment(), 1, "cyclic-mds"), lam, progress=False)
        assert res.value == pytest.approx(0.0, abs=1e-9)


def test_lower_load_than_selective_repeat_and_per_round_codes():
    # the defaults of scripts/sequential_comparison.py
    code, sr = MultiplexedSGC(20, 2, 5, 6), SelectiveRepeat(20, 2, 5, 6)
    assert code.load_fraction == Fraction(7, 100) and sr.load == 0.15 and code.classic_load == 0.35
    assert (code.delay, sr.delay) == (5, 2)


def test_immutable_equal_and_bad_inputs():
    code = MultiplexedSGC(4, 1, 3, 2)
    with pytest.raises(AttributeError):
        code.n = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        code.lam = 1  # type: ignore[misc]
    assert code == MultiplexedSGC(4, 1, 3, 2) and hash(code) == hash(MultiplexedSGC(4, 1, 3, 2))
    assert repr(code) == "MultiplexedSGC(n=4, B=1, W=3, lam=2)" and code.params == (4, 1, 3, 2)
    with pytest.raises(InvalidArgumentError, match="B"):
        MultiplexedSGC(4, 3, 3, 1)  # B > W - 1
    with pytest.raises(InvalidArgumentError, match="W"):
        MultiplexedSGC(4, 1, 1, 1)
    with pytest.raises(InvalidArgumentError, match="lam"):
        MultiplexedSGC(4, 1, 2, 5)
    with pytest.raises(InvalidArgumentError, match="lam"):
        MultiplexedSGC(4, 1, 2, 4).assignment()
    with pytest.raises(InvalidArgumentError, match="code"):
        simulate_multiplexed(SelectiveRepeat(4, 1, 2, 1), np.ones((3, 4), bool))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="masks"):
        simulate_multiplexed(code, np.ones((3, 5), bool))
    with pytest.raises(InvalidArgumentError, match="jobs"):
        simulate_multiplexed(code, np.ones((3, 4), bool), jobs=4)
    with pytest.raises(InvalidArgumentError, match="wait_cost"):
        simulate_multiplexed(code, np.ones((3, 4), bool), wait_cost=-1.0)
    with pytest.raises(InvalidArgumentError, match="wait_rule"):
        simulate_multiplexed(code, np.ones((3, 4), bool), wait_cost=1.0, wait_rule="always")
    masks = np.ones((5, 4), bool)
    with pytest.raises(InvalidArgumentError, match="run"):
        job_masks(simulate_multiplexed(code, masks), masks)


def test_markov_reproducible_and_waiting_recovers():
    masks = markov_masks(8, 300, p_enter=0.05, p_leave=0.5, seed=4)
    code = MultiplexedSGC(8, 2, 5, 3)
    a, b = simulate_multiplexed(code, masks), simulate_multiplexed(code, masks)
    assert np.array_equal(a.decoded, b.decoded) and a.decoded.shape == (300 - code.delay,)
    needed, model = (simulate_multiplexed(code, masks, wait_cost=1.0, wait_rule=w) for w in ("needed", "model"))
    assert needed.recovered_fraction == model.recovered_fraction == 1.0
    assert 0 < needed.waited.sum() < model.waited.sum()  # here the model rule waits more often
    # the selective-repeat code's run is unchanged by the shared window test
    sr = simulate_selective_repeat(SelectiveRepeat(8, 2, 5, 3), masks)
    assert sr.tasks == 1


@pytest.mark.parametrize("W", range(2, 8))
def test_lemma_at_most_B_straggles_in_W_minus_1_plus_B_rounds(W):
    # one worker, every straggle pattern of W - 1 + B rounds that the pair form of the model allows
    for B in range(1, W):
        best = 0
        for bits in itertools.product([False, True], repeat=W - 1 + B):
            x = [i for i, b in enumerate(bits) if b]
            if all(v - u <= B - 1 or v - u >= W for u, v in itertools.combinations(x, 2)):
                best = max(best, len(x))
        assert best == B  # attained by one burst of B rounds
