"""M-SGC (gcsim.coding.sequential_multiplexed) against computations written out here, for mutation testing.

Each test kills a mutant that survived ``scripts/mutation.py coding.sequential_multiplexed`` (docs/contributing.md):
the ``jobs`` argument of the simulator (the first ``J`` jobs only: their outcome read off the masks by
Lemma 62.7, the round times counted slot by slot) and the argument every refusal names.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcsim.coding.sequential import markov_masks
from gcsim.coding.sequential_multiplexed import MultiplexedSGC, multiplexed_load, simulate_multiplexed
from gcsim.errors import InvalidArgumentError
from test_sequential_partial import _arrived


def _decoded(code: MultiplexedSGC, seq: np.ndarray, t: int) -> int:
    """Job t's decode round from the masks: every worker's W - 1 chunks and n - lam senders of each group by
    t + T (Theorem 62.8, Lemma 62.7); with no coded part the round of the last worker's (W - 1)-th arrival."""
    n, B, W, lam = code.params
    chunks, senders = _arrived(seq, code, t)
    if np.any(chunks < W - 1) or (lam < n and np.any(senders.sum(axis=1) < n - lam)):
        return -1
    if lam < n:
        return t + code.delay
    window = seq[t : t + code.delay + 1].astype(int)
    return t + max(int(np.flatnonzero(np.cumsum(window[:, j]) == W - 1)[0]) for j in range(n))


@pytest.mark.parametrize("n,B,W,lam", [(4, 1, 3, 1), (5, 2, 4, 2), (4, 2, 3, 4)])
@pytest.mark.parametrize("jobs", [0, 1, 7, 20])
def test_the_first_jobs_only(n, B, W, lam, jobs):
    code = MultiplexedSGC(n, B, W, lam)
    M = code.minitasks
    seq = markov_masks(n, 30, p_enter=0.2, p_leave=0.4, seed=jobs)
    run = simulate_multiplexed(code, seq, jobs=jobs)
    assert run.decoded.tolist() == [_decoded(code, seq, t) for t in range(jobs)]
    for r in range(seq.shape[0]):
        # the slots m = 0..M-1 of round r hold job r - m when 0 <= r - m < jobs; the newest is listed in work
        first, last = max(0, r - M + 1), min(r, jobs - 1)
        held = max(0, last - first + 1)
        assert run.round_time[r] == code.load * held / M
        assert run.work[r].tolist() == [last if held else -1] * n


def test_refusals_name_their_argument():
    code = MultiplexedSGC(3, 1, 2, 1)
    m = np.ones((5, 3), bool)
    for call, name in (
        (lambda: MultiplexedSGC(0, 1, 2, 0), "n"),
        (lambda: multiplexed_load(0, 1, 2, 0), "n"),
        (lambda: simulate_multiplexed(code, m, jobs=-1), "jobs"),
        (lambda: simulate_multiplexed(code, m, jobs=6), "jobs"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.argument == name
