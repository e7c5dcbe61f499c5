"""Sequential gradient coding (gcsim.coding.sequential, theory §62): brute force on tiny n."""

from __future__ import annotations

import itertools

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
    selective_repeat_s,
    simulate_classic,
    simulate_selective_repeat,
    straggler_masks,
)
from gcsim.errors import InvalidArgumentError


def _admissible_sequences(n: int, rounds: int, B: int, W: int, lam: int):
    """Every (B, W, lam)-admissible sequence of `rounds` masks (depth-first, pruned by prefix)."""
    masks = [np.array(bits, dtype=bool) for bits in itertools.product([True, False], repeat=n)]
    stack: list[list[np.ndarray]] = [[]]
    while stack:
        prefix = stack.pop()
        if len(prefix) == rounds:
            yield np.array(prefix)
            continue
        for m in masks:
            seq = prefix + [m]
            if bursty_violation(np.array(seq), B, W, lam) is None:
                stack.append(seq)


def _brute_violation(masks: np.ndarray, B: int, W: int, lam: int) -> bool:
    """The window definition read literally: every window of W rounds, every worker."""
    strag = ~masks
    R = len(masks)
    for lo in range(-W + 1, R):
        win = strag[max(0, lo) : lo + W]
        if win.any(axis=0).sum() > lam:
            return True
        for j in range(masks.shape[1]):
            rows = np.flatnonzero(win[:, j])
            if rows.size and rows[-1] - rows[0] + 1 > B:
                return True
    return False


# (n, B, W, lam, jobs): B | W-1 and not, m = floor((W-1)/B) in {0, 1, 2}
CASES = [
    (3, 1, 2, 2, 4),
    (4, 1, 2, 3, 3),
    (3, 2, 4, 2, 3),
    (4, 2, 3, 2, 3),
    (4, 1, 3, 3, 3),
    (3, 1, 1, 1, 4),
    (4, 2, 5, 3, 3),
]


@pytest.mark.parametrize("n,B,W,lam,jobs", CASES)
def test_every_admissible_sequence_decodes_within_delay(n, B, W, lam, jobs):
    code = SelectiveRepeat(n, B, W, lam)
    count = 0
    for seq in _admissible_sequences(n, jobs + B, B, W, lam):
        run = simulate_selective_repeat(code, seq)
        assert run.decoded.shape == (jobs,)
        t = np.arange(jobs)
        assert np.all((run.decoded >= t) & (run.decoded <= t + B)), (seq.astype(int).tolist(), run.decoded)
        # a job is late only when more than s workers missed it in its own round
        late = run.decoded > t
        missed = np.array([(run.work[k] != k).sum() + ((run.work[k] == k) & ~seq[k]).sum() for k in t])
        assert np.array_equal(late, missed > code.s)
        count += 1
    assert count > 50  # the enumeration is not vacuous


@pytest.mark.parametrize("n,B,W,lam,jobs", [(3, 1, 2, 2, 4), (4, 2, 3, 2, 3), (3, 2, 4, 1, 3)])
def test_checker_matches_the_literal_window_definition(n, B, W, lam, jobs):
    rng = np.random.default_rng(7)
    for _ in range(300):
        seq = rng.random((jobs + B, n)) > 0.3
        assert is_bursty(seq, B, W, lam) == (not _brute_violation(seq, B, W, lam))
    for seq in itertools.islice(_admissible_sequences(n, jobs + B, B, W, lam), 200):
        assert not _brute_violation(seq, B, W, lam)


def test_non_admissible_burst_fails_and_waiting_recovers():
    code = SelectiveRepeat(3, B=1, W=2, lam=2)  # s = 1
    seq = np.ones((4, 3), bool)
    seq[0, :2] = False  # two stragglers: worker 1 (newest debt, higher index) repeats job 0 in round 1
    seq[1, 1] = False  # ... and straggles again: a burst of 2 > B
    assert bursty_violation(seq, 1, 2, 2) == 1
    run = simulate_selective_repeat(code, seq)
    assert run.work[1].tolist() == [1, 0, 1]
    assert run.decoded.tolist() == [-1, 1, 2]
    waited = simulate_selective_repeat(code, seq, wait_cost=5.0)
    assert waited.decoded.tolist() == [1, 1, 2] and waited.waited.tolist() == [False, True, False, False]
    assert waited.completion_time == pytest.approx(3 * code.load + 5.0)


def test_classic_code_at_equal_load_fails_where_sequential_does_not():
    n, B, W, lam, jobs = 4, 1, 3, 3, 3
    code = SelectiveRepeat(n, B, W, lam)
    assert code.s == 1 and code.load < code.classic_load
    beaten = 0
    for seq in _admissible_sequences(n, jobs + B, B, W, lam):
        assert simulate_selective_repeat(code, seq).recovered_fraction == 1.0
        assert simulate_classic(n, lam, seq[:jobs]).recovered_fraction == 1.0
        beaten += simulate_classic(n, code.s, seq[:jobs]).recovered_fraction < 1.0
    assert beaten > 0


@pytest.mark.parametrize("n,B,W,lam", [(5, 1, 3, 3), (6, 2, 5, 4), (7, 3, 7, 5), (6, 2, 6, 4), (5, 4, 2, 2)])
def test_load_formula_is_the_counted_assignment_and_exact(n, B, W, lam):
    code = SelectiveRepeat(n, B, W, lam)
    m = (W - 1) // B
    assert code.s == -(-lam // (m + 1))
    if (W - 1) % B == 0:  # the paper's form
        assert code.s == -(-B * lam // (W - 1 + B))
    A = code.assignment()
    assert np.all(A.sum(axis=0) == code.s + 1)
    assert A.sum(axis=0).max() / n == pytest.approx(code.load)
    assert code.classic_load == pytest.approx((lam + 1) / n)
    # the per-round code recovers the gradient exactly from any n - s workers
    res = worst_case_error(encode(A, 1, "cyclic-mds"), code.s, progress=False)
    assert res.value == pytest.approx(0.0, abs=1e-9)


def test_markov_masks_and_reproducibility():
    a = markov_masks(5, 40, p_enter=0.1, p_leave=0.5, seed=3)
    b = markov_masks(5, 40, p_enter=0.1, p_leave=0.5, seed=3)
    assert a.shape == (40, 5) and a.dtype == bool and np.array_equal(a, b)
    code = SelectiveRepeat(5, 2, 5, 2)
    r1 = simulate_selective_repeat(code, a, wait_cost=1.0)
    r2 = simulate_selective_repeat(code, b, wait_cost=1.0)
    assert np.array_equal(r1.decoded, r2.decoded) and r1.recovered_fraction == 1.0


def test_bad_inputs_name_the_argument():
    with pytest.raises(InvalidArgumentError, match="B"):
        selective_repeat_s(0, 3, 1)
    with pytest.raises(InvalidArgumentError, match="lam"):
        SelectiveRepeat(3, 1, 1, 3)  # s = 3 >= n
    with pytest.raises(InvalidArgumentError, match="masks"):
        bursty_violation(np.ones(3, bool), 1, 2, 1)
    with pytest.raises(InvalidArgumentError, match="masks"):
        simulate_selective_repeat(SelectiveRepeat(3, 1, 2, 1), np.ones((4, 2), bool))
    with pytest.raises(InvalidArgumentError, match="code"):
        simulate_selective_repeat("x", np.ones((4, 3), bool))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="wait_cost"):
        simulate_classic(3, 1, np.ones((2, 3), bool), wait_cost=-1.0)
    with pytest.raises(InvalidArgumentError, match="jobs"):
        simulate_selective_repeat(SelectiveRepeat(3, 1, 2, 1), np.ones((4, 3), bool), jobs=5)


# --- the registry's model, the forgiveness order (§62.4, Remark 62.5), job masks --------------------


def test_the_bursty_model_is_the_registry_markov_kind():
    from gcsim.coding import sequential
    from gcsim.coding.straggler_base import StragglerModel
    from gcsim.coding.straggler_models import parse_spec, straggler_model

    ref = parse_spec("markov:0.1,0.4", 5).sample(30, seed=2)
    assert np.array_equal(markov_masks(5, 30, p_enter=0.1, p_leave=0.4, seed=2), ref)
    assert np.array_equal(straggler_masks("markov:0.1,0.4", 5, 30, seed=2), ref)
    model = straggler_model("markov", 5, p_enter=0.1, p_leave=0.4)
    assert np.array_equal(straggler_masks(model, 5, 30, seed=2), ref)
    # one definition: the sequential module declares no straggler model of its own
    assert not any(
        isinstance(v, type) and issubclass(v, StragglerModel) and v.__module__ == sequential.__name__
        for v in vars(sequential).values()
    )
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        straggler_masks(model, 6, 3)
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        straggler_masks(3, 5, 3)
    with pytest.raises(InvalidArgumentError, match="stragglers"):
        straggler_masks("gilbert:0.1", 5, 3)
    with pytest.raises(InvalidArgumentError, match="forgive"):
        SelectiveRepeat(4, 1, 2, 2, forgive="random")


def _delivered(masks: np.ndarray, B: int, s: int, key) -> list[set[int]]:
    """Independent reading of §62.2: for each job, the workers whose task of it arrived by round t + B.

    ``key(origin, worker)`` orders the debts; the first s are forgiven.
    """
    R, n = masks.shape
    J = R - B
    got: list[set[int]] = [set() for _ in range(J)]
    plan: dict[int, dict[int, int]] = {}
    for r in range(R):
        repeaters = plan.pop(r, {})
        for j in range(n):
            job = r - B if j in repeaters else r
            if masks[r, j] and job < J:
                got[job].add(j)
        if r >= J:
            continue
        debts = {j: (repeaters[j] if masks[r, j] else r) for j in repeaters}
        debts.update({j: r for j in range(n) if j not in repeaters and not masks[r, j]})
        if len(debts) > s:
            keep = sorted(debts, key=lambda j: key(debts[j], j))[s:]
            plan[r + B] = {j: debts[j] for j in keep}
    return got


RULES = {
    "oldest": lambda o, j: (o, j),
    "newest": lambda o, j: (-o, j),
    "worker index": lambda o, j: (-j,),  # forgive the highest index, whatever the age of its debt
}


@pytest.mark.parametrize("n,B,W,lam,jobs", CASES[:5])
def test_every_forgiveness_order_decodes_every_admissible_sequence(n, B, W, lam, jobs):
    # Proposition 62.4: the queue of debts of a chain empties within m + 1 steps, whatever is served
    s = selective_repeat_s(B, W, lam)
    for seq in itertools.islice(_admissible_sequences(n, jobs + B, B, W, lam), 1500):
        for name, key in RULES.items():
            got = _delivered(seq, B, s, key)
            assert all(len(g) >= n - s for g in got), (name, seq.astype(int).tolist())
        for forgive in ("oldest", "newest"):
            run = simulate_selective_repeat(SelectiveRepeat(n, B, W, lam, forgive=forgive), seq)
            got = _delivered(seq, B, s, RULES[forgive])
            assert [set(np.flatnonzero(row)) for row in job_masks(run, seq)] == got
            assert run.recovered_fraction == 1.0


def _markov_probability(seq: np.ndarray, p_enter: float, p_leave: float) -> float:
    """P(seq) under independent two-state chains started stationary (the "markov" kind), by hand."""
    pi = p_enter / (p_enter + p_leave)
    prob = 1.0
    for col in (~seq).T:
        prob *= pi if col[0] else 1 - pi
        for a, b in zip(col[:-1], col[1:], strict=True):
            prob *= ((1 - p_leave) if b else p_leave) if a else (p_enter if b else 1 - p_enter)
    return prob


@pytest.mark.parametrize("p_enter,p_leave", [(0.1, 0.5), (0.2, 0.3)])
def test_oldest_first_loses_more_jobs_than_newest_first_under_bursts(p_enter, p_leave):
    # Remark 62.5: every sequence of 4 rounds of 3 workers, weighted by its Gilbert-Elliott probability
    n, B, W, lam, jobs = 3, 1, 2, 2, 3  # s = 1
    s = selective_repeat_s(B, W, lam)
    lost = {"oldest": 0.0, "newest": 0.0}
    total = 0.0
    for bits in itertools.product([True, False], repeat=(jobs + B) * n):
        seq = np.array(bits).reshape(jobs + B, n)
        prob = _markov_probability(seq, p_enter, p_leave)
        total += prob
        for forgive in lost:
            run = simulate_selective_repeat(SelectiveRepeat(n, B, W, lam, forgive=forgive), seq)
            independent = sum(len(g) < n - s for g in _delivered(seq, B, s, RULES[forgive]))
            assert run.lost == independent
            lost[forgive] += prob * independent
    assert total == pytest.approx(1.0)
    assert lost["newest"] < lost["oldest"] - 1e-3


def test_job_masks_decide_decoding():
    code = SelectiveRepeat(8, B=2, W=5, lam=3)
    seq = markov_masks(8, 60, p_enter=0.1, p_leave=0.4, seed=5)
    run = simulate_selective_repeat(code, seq)
    jm = job_masks(run, seq)
    assert jm.shape == (58, 8)
    assert np.array_equal(jm.sum(axis=1) >= 8 - code.s, run.decoded >= 0)
    classic = simulate_classic(8, code.s, seq)
    assert np.array_equal(job_masks(classic, seq), seq)
    with pytest.raises(InvalidArgumentError, match="masks"):
        job_masks(run, seq[:10])
    with pytest.raises(InvalidArgumentError, match="run"):
        job_masks("run", seq)  # type: ignore[arg-type]
