"""Tests that make mutants of gcsim/coding/sequential.py fail (theory §62.1-§62.3).

Each reference is computed here from the definitions: the per-round code decodes a round when at
most ``s`` workers straggle (or the master waits); the selective-repeat master waits in a round
exactly when the due job's distinct delivered tasks, counted from the masks and the run's work
table, stay below ``n - s``.  Every refusal names its argument (``InvalidArgumentError.argument``).
"""

from __future__ import annotations

import numpy as np
import pytest

from gcsim.coding.sequential import (
    SelectiveRepeat,
    bursty_violation,
    markov_masks,
    simulate_classic,
    simulate_selective_repeat,
    straggler_masks,
)
from tests.guards import refused_argument


def _random_masks(R: int, n: int, seed: int) -> np.ndarray:
    """Masks whose number of stragglers per round runs over 0..n (every count on both sides of s)."""
    rng = np.random.default_rng(seed)
    out = np.ones((R, n), dtype=bool)
    for r in range(R):
        out[r, rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)] = False
    return out


@pytest.mark.parametrize("n,s", [(4, 1), (5, 2), (6, 0)])
@pytest.mark.parametrize("wait_cost", [None, 0.0, 2.5])
def test_classic_decodes_a_round_iff_at_most_s_straggle_and_charges_the_wait(n, s, wait_cost):
    masks = _random_masks(40, n, seed=n * 10 + s)
    run = simulate_classic(n, s, masks, wait_cost=wait_cost)
    load = (s + 1) / n
    for r in range(40):
        fine = int(n - masks[r].sum()) <= s
        waited = (not fine) and wait_cost is not None
        assert bool(run.waited[r]) == waited
        assert run.decoded[r] == (r if fine or waited else -1)
        assert run.round_time[r] == pytest.approx(load + (wait_cost if waited else 0.0), abs=1e-15)
    assert run.load == pytest.approx(load, abs=1e-15) and run.delay == 0
    assert run.work.tolist() == [[r] * n for r in range(40)]


def _delivered(run, masks: np.ndarray, t: int, upto: int) -> int:
    """Distinct workers whose job-``t`` task arrived in a round ``<= upto`` (a waited round: all)."""
    got = masks | run.waited[:, None]
    return len({j for r in range(upto + 1) for j in range(masks.shape[1]) if run.work[r, j] == t and got[r, j]})


@pytest.mark.parametrize("n,B,W,lam", [(4, 1, 3, 2), (6, 2, 5, 3), (5, 1, 2, 2), (8, 2, 5, 3)])
@pytest.mark.parametrize("seed", range(3))
def test_selective_repeat_waits_exactly_when_the_due_job_would_fail(n, B, W, lam, seed):
    code = SelectiveRepeat(n, B, W, lam)
    s = code.s
    masks = _random_masks(50, n, seed=seed + 100 * n)
    run = simulate_selective_repeat(code, masks, wait_cost=1.5)
    J = run.decoded.size
    assert np.all(run.decoded >= 0)  # waiting decodes every job
    for r in range(50):
        due = r - B
        if not 0 <= due < J:
            assert not run.waited[r]
            continue
        on_time = _delivered(run, masks, due, due) >= n - s
        # tasks of job r - B in by round r: earlier rounds as they arrived (all of a waited round), this
        # round's as the masks say; the master waits iff the job missed its own round and these are too few
        before = {j for q in range(r) for j in range(n) if run.work[q, j] == due and (masks[q, j] or run.waited[q])}
        now = {j for j in range(n) if run.work[r, j] == due and masks[r, j]}
        assert bool(run.waited[r]) == (not on_time and len(before | now) < n - s)
        assert run.decoded[due] == (due if on_time else r)
        assert run.round_time[r] == pytest.approx(code.load * bool((run.work[r] >= 0).any()) + 1.5 * run.waited[r])


def test_selective_repeat_waits_only_when_needed_on_the_boundary():
    """Job 0 loses two workers in round 0 (s = 1): one repeats it in round 1 and arrives there, so
    n - s tasks are in and the master must not wait; lose the repeat too, and it must."""
    code = SelectiveRepeat(4, B=1, W=3, lam=2)
    m = np.ones((4, 4), bool)
    m[0, :2] = False
    run = simulate_selective_repeat(code, m, wait_cost=1.0)
    assert run.waited.tolist() == [False, False, False, False] and run.decoded.tolist() == [1, 1, 2]
    m[1, 1] = False  # worker 1 repeats job 0 in round 1 and straggles again
    run = simulate_selective_repeat(code, m, wait_cost=1.0)
    assert run.waited.tolist() == [False, True, False, False] and run.decoded[0] == 1
    # jobs 0..2 (R - B); round 3 only finishes repeats, and there are none: idle
    assert run.round_time.tolist() == [code.load, code.load + 1.0, code.load, 0.0]


def test_every_refusal_names_its_argument():
    m = np.ones((3, 4), bool)
    assert refused_argument(simulate_classic, 4, 4, m) == "s"
    assert refused_argument(simulate_classic, 4, -1, m) == "s"
    assert refused_argument(simulate_classic, 4, 1, np.ones((3, 5), bool)) == "masks"  # five workers' masks for four
    assert refused_argument(markov_masks, 4, 0, p_enter=0.1, p_leave=0.5) == "rounds"
    assert refused_argument(straggler_masks, "markov:0.1,0.5", 4, 0) == "rounds"
    assert refused_argument(straggler_masks, "markov:0.1,0.5", 0, 3) == "n"
    assert refused_argument(bursty_violation, m, B=1, W=0, lam=1) == "W"
    assert refused_argument(bursty_violation, m, B=1, W=2, lam=-1) == "lam"
    # more stragglers per window than the four workers
    assert refused_argument(bursty_violation, m, B=1, W=2, lam=5) == "lam"


def test_markov_masks_default_seed_is_zero():
    a = markov_masks(5, 30, p_enter=0.3, p_leave=0.3)
    assert np.array_equal(a, markov_masks(5, 30, p_enter=0.3, p_leave=0.3, seed=0))
    assert not np.array_equal(a, markov_masks(5, 30, p_enter=0.3, p_leave=0.3, seed=1))


def test_more_refusals_name_their_argument():
    from gcsim.coding.sequential import job_masks
    from gcsim.coding.sequential_multiplexed import MultiplexedSGC, simulate_multiplexed
    from gcsim.coding.stragglers import straggler_model

    m = np.ones((3, 4), bool)
    code = SelectiveRepeat(4, B=1, W=3, lam=2)
    cases = [
        (lambda: simulate_classic(0, 0, np.ones((3, 0), bool)), "n"),
        (lambda: bursty_violation(m, B=0, W=2, lam=1), "B"),
        (lambda: bursty_violation(np.ones(4, bool), B=1, W=2, lam=1), "masks"),  # one round, not 2-D
        (lambda: straggler_masks(42, 4, 3), "stragglers"),
        (lambda: straggler_masks(straggler_model("bernoulli", 5, p=0.1), 4, 3), "stragglers"),
        (lambda: SelectiveRepeat(4, B=1, W=3, lam=2, forgive="random"), "forgive"),
        (lambda: SelectiveRepeat(0, B=1, W=1, lam=0), "n"),
        (lambda: SelectiveRepeat(4, B=1, W=5, lam=5), "lam"),  # s = 1 < n, but lam > n workers
        (lambda: SelectiveRepeat(2, B=1, W=1, lam=2), "lam"),  # s = 2 = n
        (lambda: simulate_selective_repeat(code, m, wait_cost=-1.0), "wait_cost"),
        (lambda: simulate_selective_repeat("code", m), "code"),
        (lambda: simulate_selective_repeat(code, m, jobs=-1), "jobs"),
        (lambda: simulate_selective_repeat(code, m, jobs=4), "jobs"),  # more jobs than the 3 rounds
        (lambda: job_masks("run", m), "run"),
        (lambda: job_masks(simulate_classic(4, 1, m), np.ones((4, 4), bool)), "masks"),
    ]
    mx = MultiplexedSGC(3, 1, 2, 1)
    mrun = simulate_multiplexed(mx, np.ones((6, 3), bool))
    cases.append((lambda: job_masks(mrun, np.ones((6, 3), bool)), "run"))
    for call, name in cases:
        assert refused_argument(call) == name, name
    # and the smallest valid inputs pass
    assert simulate_classic(1, 0, np.ones((2, 1), bool)).decoded.tolist() == [0, 1]
    assert bursty_violation(m, B=1, W=2, lam=0) is None
    assert markov_masks(4, 1, p_enter=0.1, p_leave=0.5).shape == (1, 4)
    assert straggler_masks("markov:0.1,0.5", 1, 1).shape == (1, 1)
    assert SelectiveRepeat(1, B=1, W=1, lam=0).s == 0
    assert simulate_selective_repeat(code, m, jobs=0).decoded.size == 0


def test_default_seeds_are_zero_and_outputs_keep_their_types():
    from gcsim.coding.sequential import job_masks

    a = straggler_masks("markov:0.3,0.3", 5, 30)
    assert np.array_equal(a, straggler_masks("markov:0.3,0.3", 5, 30, seed=0))
    assert not np.array_equal(a, straggler_masks("markov:0.3,0.3", 5, 30, seed=1))
    m = _random_masks(12, 4, seed=5)
    classic = simulate_classic(4, 1, m)
    assert classic.decoded.dtype == np.int64 and classic.round_time.dtype == np.float64
    code = SelectiveRepeat(4, B=1, W=3, lam=2)
    run = simulate_selective_repeat(code, m)
    assert run.load == code.load == 0.5 and run.delay == 1
    assert job_masks(run, m).dtype == bool


def test_fewer_jobs_than_rounds_leaves_the_last_rounds_idle_and_decodes_within_range():
    """``jobs = J < R - B``: rounds past ``J`` compute only repeats (idle workers are -1), and neither
    the decoding nor the wait reaches past job ``J - 1`` (round ``J + B`` exists here)."""
    code = SelectiveRepeat(4, B=1, W=3, lam=2)
    m = np.ones((8, 4), bool)
    m[2, :2] = False  # job 2 loses two workers (s = 1): one repeats it in round 3
    for wait in (None, 1.0):
        run = simulate_selective_repeat(code, m, jobs=3, wait_cost=wait)
        assert run.decoded.tolist() == [0, 1, 3]
        assert run.work[3].tolist() == [-1, 2, -1, -1]  # the repeater of job 2; the others idle
        assert (run.work[4:] == -1).all() and (run.round_time[4:] == 0).all()
    assert simulate_selective_repeat(SelectiveRepeat(4, B=2, W=3, lam=2), np.ones((2, 4), bool)).decoded.size == 0


def test_job_masks_drop_a_task_that_arrives_after_its_delay():
    """A hand-made run whose worker 3 computes job 0 in round 1, past job 0's delay 0: not counted."""
    from gcsim.coding.sequential import SequentialRun, job_masks

    work = np.array([[0, 0, 0, -1], [1, 1, 1, 0]])
    run = SequentialRun(np.array([0, 1]), work, np.zeros(2, bool), np.ones(2), 0, 0.5)
    assert job_masks(run, np.ones((2, 4), bool)).tolist() == [[True, True, True, False], [True, True, True, False]]
    # a task of a job the run does not have (job 2 of two) is not one of its jobs' tasks
    run = run._replace(work=np.array([[0, 0, 0, 2], [1, 1, 1, 1]]))
    assert job_masks(run, np.ones((2, 4), bool)).tolist() == [[True, True, True, False], [True, True, True, True]]


def test_masks_are_booleans_whatever_the_model_samples(monkeypatch):
    """A model whose ``sample`` gives 0/1 integers still yields boolean masks."""
    from gcsim.coding.stragglers import straggler_model

    for kind, kw in (("markov", {"p_enter": 0.1, "p_leave": 0.5}), ("bernoulli", {"p": 0.1})):
        model = straggler_model(kind, 3, **kw)
        monkeypatch.setattr(type(model), "sample", lambda self, rounds, seed=0: np.ones((rounds, self.n), np.int64))
        out = markov_masks(3, 2, p_enter=0.1, p_leave=0.5) if kind == "markov" else straggler_masks(model, 3, 2)
        assert out.dtype == bool and out.tolist() == [[True] * 3] * 2
