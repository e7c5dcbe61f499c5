"""The ring all-reduce of :func:`gcsim.executor.collectives.ring_all_reduce`, registered with its cost (§56.1).

Reduce-scatter then all-gather around the ring: ``2(N − 1)`` rounds of ``ceil(d/N)`` scalars.
"""

from __future__ import annotations

from typing import Any

from ...cerar.traffic import ring_bytes
from ..collectives import ByteCounter, ring_all_reduce
from ._linkmodel import Schedule, ring_pattern
from ._registry import Collective, CollectiveCost, check_sizes, check_straggler

__all__ = ["ring_cost", "ring_schedule", "ring", "COLLECTIVES"]


def ring_cost(N: int, d: int, itemsize: int, *, straggler: Any = None) -> CollectiveCost:
    """Bytes and rounds of the ring all-reduce: every rank sends ``2(N−1) ceil(d/N)`` scalars.

    Examples
    --------
    >>> c = ring_cost(4, 1000, 4)
    >>> c.bytes_sent, c.rounds
    ((6000, 6000, 6000, 6000), 6)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    per_round = -(-d // N) * itemsize
    return CollectiveCost("ring", N, d, itemsize, (ring_bytes(N, d, itemsize),) * N, (), (per_round,) * (2 * (N - 1)))


def ring_schedule(N: int, d: int, itemsize: int, *, straggler: Any = None) -> Schedule:
    """The messages of the ring all-reduce: ``2(N − 1)`` rounds of ``ceil(d/N)`` scalars to the next rank.

    Examples
    --------
    >>> ring_schedule(4, 1000, 4).bytes_sent
    (6000, 6000, 6000, 6000)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    return ring_pattern("ring", N, 2 * (N - 1), -(-d // N) * itemsize, ahead=1)  # as RingTransport posts them


def ring(tensor, *, group=None, counter: ByteCounter | None = None, straggler: Any = None):
    """:func:`gcsim.executor.collectives.ring_all_reduce` with the registry's signature (``straggler`` ignored)."""
    return ring_all_reduce(tensor, group=group, counter=counter)


COLLECTIVES = (
    Collective(
        "ring",
        ring,
        ring_cost,
        "ring reduce-scatter + all-gather; 2(N−1) rounds of ceil(d/N)",
        "§56.1",
        schedule=ring_schedule,
        order=10,
    ),
)
