"""What the mutation run of the link model (``scripts/mutation.py executor.linkmodel``) found untested.

Each expected value is worked out by hand in exact rationals (derivations in the docstrings), not
taken from the simulator; the refusals are checked by the argument they name.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from gcsim.errors import InvalidArgumentError
from gcsim.executor.allreduce import Recv, Schedule, Send, max_min_rates, simulate
from gcsim.executor.allreduce._linkmodel import ring_pattern


def test_a_bucket_that_feeds_three_drained_downlinks_empties_at_its_own_time():
    """N = 4, beta = 1, alpha = 1, buckets of K = 4.  Ranks 1, 2, 3 first send 10 bytes round a ring
    (1 -> 2 -> 3 -> 1): 4 pass at once on full buckets, 6 at rate 1, so at t = 6 their uplinks and
    downlinks are empty.  Rank 0 starts at 6 (the straggler) and sends 4 bytes to each of them: its
    own bucket (4 tokens) limits nothing, each drained downlink passes 1, so rank 0's uplink carries 3
    and its bucket empties at rate 3 - 1 = 2: at t = 8, each message 2 bytes in.  Then its uplink
    passes 1, a third per message: the 2 bytes left take 6, in at 14 + alpha = 15 (a bucket that
    never emptied would give 10 + alpha)."""
    ring = [(), (Send(2, 10, 0), Recv(3, 0), Recv(0, 1)), (Send(3, 10, 0), Recv(1, 0), Recv(0, 1))]
    ring.append((Send(1, 10, 0), Recv(2, 0), Recv(0, 1)))
    ring[0] = (Send(1, 4, 1), Send(2, 4, 1), Send(3, 4, 1))
    sch = Schedule("drained", tuple(ring))
    assert simulate(sch, 1, 1, delay=6, straggler=0, burst=4) == (6, 15, 15, 15)


def test_schedule_time_passes_its_options_on():
    two = Schedule("ring2", ((Send(1, 8, 0), Recv(1, 0)), (Send(0, 8, 0), Recv(0, 0))))
    assert two.time(0.5, 4.0) == 2.5  # no bucket by default: 8 bytes at 4 B/s, then alpha
    assert two.time(0.5, 4.0, burst=8) == 0.5  # a full bucket passes them at once
    # rank 1 starts at 3: rank 0's message waits for its notice (3 + alpha), then 2 s, then alpha
    assert two.time(0.5, 4.0, delay=3.0, rendezvous=True) == 6.0
    assert two.time(0.5, 4.0, delay=3.0) == 5.5


def test_refusals_name_their_argument():
    two = Schedule("x", ((Send(1, 4, 0),), (Recv(0, 0),)))
    for kw, name in (({"delay": -1}, "delay"), ({"burst": -1}, "burst")):
        with pytest.raises(InvalidArgumentError, match=f"^{name}: ") as exc:
            simulate(two, 0, 1, **kw)
        assert exc.value.argument == name
    with pytest.raises(InvalidArgumentError, match="^alpha: must be >= 0"):
        simulate(two, -1, 1)
    with pytest.raises(InvalidArgumentError, match="^beta: must be > 0"):
        simulate(two, 0, F(0))
    for peer in (2, -1):  # out of range either way
        with pytest.raises(InvalidArgumentError, match="^peer: "):
            simulate(Schedule("x", ((Send(peer, 4, 0),), ())), 0, 1)
    with pytest.raises(InvalidArgumentError, match="^N: "):
        max_min_rates([], 0)
    for ahead in (0, -1):
        with pytest.raises(InvalidArgumentError, match="^ahead: "):
            ring_pattern("ring", 3, 2, 8, ahead=ahead)
