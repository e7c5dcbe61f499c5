"""The straggler-aware collective's plan, cost and schedule against counts made by hand (theory §56.4).

Fast tests (no process group) that pin what tests/test_linkmodel.py's times do not: each rank's bytes
and messages, the order of the straggler's program, the tags, and every refusal by name.
"""

from __future__ import annotations

import pytest

from gcsim.errors import InvalidArgumentError
from gcsim.executor.allreduce import Post, Recv, Send
from gcsim.executor.allreduce.straggler_aware import (
    GATES,
    PIECES,
    straggler_aware_cost,
    straggler_aware_schedule,
    straggler_aware_window,
)


def test_defaults():
    assert PIECES == 8 and GATES == ("receive", "signal", "none")


def test_cost_by_hand():
    # N = 4 (M = 3), d = 10: w = ceil(10/3) = 4; pieces = 3 of a chunk of 4: sizes 1, 1, 2 (q = 2); b = 2
    c = straggler_aware_cost(4, 10, 2, pieces=3)
    assert c.bytes_sent == ((2 * 3 - 1) * 4 * 2,) * 3 + (3 * 4 * 2,)
    assert c.early == (4 * 2, 4 * 2)  # M - 1 rounds of w
    assert c.late == (3 * 4 * 2, 3 * 2 * 2)  # the stream M w, the last forward M q
    sig = straggler_aware_cost(4, 10, 2, pieces=3, gate="signal")
    assert sig.bytes_sent == ((5 * 4 + 1) * 2,) * 3 + (24,)
    assert sig.early == (8, 8, 3 * 2)  # and the straggler's round of M one-scalar signals
    # another straggler: rank 0 sends M w, the others (2M - 1) w
    s0 = straggler_aware_cost(4, 10, 2, pieces=3, straggler=0)
    assert s0.bytes_sent == (24, 40, 40, 40)
    # pieces beyond w: one scalar each (q = 1)
    assert straggler_aware_cost(3, 4, 1, pieces=50).late == (4, 2)
    assert straggler_aware_cost(4, 10, 2, pieces=3, window=1) == c


def test_schedule_by_hand_with_window():
    """N = 3 (ready 0, 1; straggler 2), d = 8: w = 4, pieces = 2 of 2 scalars, b = 1, window = 1.
    Tags: 1 the reduce-scatter, 2 and 3 the straggler's pieces, 4 + 2c + j finished piece j of chunk c.
    Ready rank i owns chunk (i + 1) mod 2: rank 0 chunk 1, rank 1 chunk 0 (owner = [1, 0])."""
    sch = straggler_aware_schedule(3, 8, 1, pieces=2, window=1)
    assert sch.programs[2] == (
        Send(1, 2, 2),  # piece 0 of chunk 0 to its owner, rank 1
        Send(0, 2, 2),  # piece 0 of chunk 1 to rank 0
        Recv(1, 4),  # window: rank 1's finished piece 0 of chunk 0
        Send(1, 2, 3),
        Recv(0, 6),  # rank 0's finished piece 0 of chunk 1
        Send(0, 2, 3),
        Recv(1, 5),  # the last pieces
        Recv(0, 7),
    )
    assert sch.programs[0] == (
        Send(1, 4, 1),
        Recv(1, 1),
        Post(2, 2),
        Post(2, 3),
        Recv(2, 2),
        Send(1, 2, 6),
        Send(2, 2, 6),
        Recv(2, 3),
        Send(1, 2, 7),
        Send(2, 2, 7),
        Recv(1, 4),
        Recv(1, 5),
    )
    none = straggler_aware_schedule(3, 8, 1, pieces=2, gate="none")
    assert none.programs[2] == (Send(1, 2, 2), Send(0, 2, 2), Send(1, 2, 3), Send(0, 2, 3)) + (
        Recv(1, 4),
        Recv(1, 5),
        Recv(0, 6),
        Recv(0, 7),
    )
    assert not any(isinstance(op, Post) for op in none.programs[0])
    sig = straggler_aware_schedule(3, 8, 1, pieces=2, gate="signal")
    assert sig.programs[2][:2] == (Recv(0, 8), Recv(1, 9))  # signal tags after the finished pieces
    assert Send(2, 1, 8) in sig.programs[0] and Send(2, 1, 9) in sig.programs[1]
    assert sch.name == "straggler-aware"
    assert sch.messages == (5, 5, 4)  # a ready rank: M - 1 reduce-scatter sends, P M forwards


def test_window_refusals_and_rule():
    for bad in (0, -2, 2.5, "3", True):
        with pytest.raises(InvalidArgumentError, match="^window: "):
            straggler_aware_schedule(3, 8, 1, window=bad)
    for name, kw in (("alpha", {"alpha": -1.0, "beta": 1.0}), ("beta", {"alpha": 0.0, "beta": 0.0})):
        with pytest.raises(InvalidArgumentError, match=f"^{name}: "):
            straggler_aware_window(3, 8, 1, **kw)
    with pytest.raises(InvalidArgumentError, match="^pieces: "):
        straggler_aware_window(3, 8, 1, alpha=0.0, beta=1.0, pieces=0)
    # M = 2, w = 4, pieces = 4: q = 1.  2 alpha beta / (M q b) exactly 1: k* = 3 (the ceiling of a whole
    # number is itself); 1.1: k* = 4; 0: k* = 2; b = 2 halves it
    assert straggler_aware_window(3, 8, 1, alpha=1.0, beta=1.0, pieces=4) == 3
    assert straggler_aware_window(3, 8, 1, alpha=1.1, beta=1.0, pieces=4) == 4
    assert straggler_aware_window(3, 8, 2, alpha=1.1, beta=1.0, pieces=4) == 3
    assert straggler_aware_window(3, 8, 1, alpha=0.0, beta=1.0, pieces=4) == 2
    assert straggler_aware_window(3, 8, 1, alpha=10.0, beta=1.0, pieces=4) == 4  # at most P
    assert straggler_aware_window(3, 8, 1, alpha=10.0, beta=1.0, pieces=1) == 1


def test_gate_refusals_and_the_cost_name():
    for bad in ("signals", "", None, True, 3):
        for call in (straggler_aware_cost, straggler_aware_schedule):
            with pytest.raises(
                InvalidArgumentError, match=r"^gate: must be one of \('receive', 'signal', 'none'\), got "
            ) as e:
                call(3, 8, 1, gate=bad)
            assert e.value.argument == "gate"
    for bad in (0, 1.5):  # the cost checks the window too, though it moves no byte
        with pytest.raises(InvalidArgumentError, match="^window: "):
            straggler_aware_cost(3, 8, 1, window=bad)
    assert straggler_aware_cost(3, 8, 1).name == "straggler-aware"
