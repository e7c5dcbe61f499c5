"""Binomial-tree all-reduce: reduce to rank 0 in ``ceil(log2 N)`` rounds, broadcast back in as many (theory §56.2).

Latency-bound: ``2 ceil(log2 N)`` rounds, each moving the whole vector, so a rank sends ``d`` scalars
per tree edge it owns -- rank ``r`` sends ``(1[r ≠ 0] + children(r)) · d`` scalars.
"""

from __future__ import annotations

from typing import Any

from ..collectives import ByteCounter
from ._linkmodel import Recv, Schedule, Send
from ._p2p import start
from ._registry import Collective, CollectiveCost, check_sizes, check_straggler

__all__ = ["tree_all_reduce", "tree_cost", "tree_schedule", "tree_levels", "tree_children", "COLLECTIVES"]


def tree_levels(N: int) -> int:
    """``ceil(log2 N)``, the depth of the binomial tree on ``N`` ranks.

    Examples
    --------
    >>> [tree_levels(n) for n in (2, 3, 4, 5, 8)]
    [1, 2, 2, 3, 3]
    """
    return (int(N) - 1).bit_length()


def tree_children(r: int, N: int) -> list[int]:
    """Children of rank ``r`` in the binomial tree rooted at 0: ``r + 2^k`` for each ``2^k`` below ``r``'s lowest bit.

    Examples
    --------
    >>> tree_children(0, 5), tree_children(2, 5), tree_children(1, 5)
    ([1, 2, 4], [3], [])
    """
    out = []
    for k in range(tree_levels(N)):
        if r % (1 << (k + 1)) == 0 and r + (1 << k) < N:
            out.append(r + (1 << k))
        elif r % (1 << (k + 1)) != 0:
            break
    return out


def tree_cost(N: int, d: int, itemsize: int, *, straggler: Any = None) -> CollectiveCost:
    """Bytes and rounds of :func:`tree_all_reduce` (theory §56.2).

    Examples
    --------
    >>> c = tree_cost(5, 10, 4)
    >>> c.bytes_sent, c.rounds
    ((120, 40, 80, 40, 40), 6)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    b = d * itemsize
    sent = tuple(((r != 0) + len(tree_children(r, N))) * b for r in range(N))
    return CollectiveCost("tree", N, d, itemsize, sent, (), (b,) * (2 * tree_levels(N)))


def _parent(r: int) -> int | None:
    """``r − 2^ν(r)`` (``ν`` the lowest set bit), None for the root."""
    return None if r == 0 else r - (r & -r)


def tree_schedule(N: int, d: int, itemsize: int, *, straggler: Any = None) -> Schedule:
    """The messages of :func:`tree_all_reduce` in each rank's posting order (theory §56.7).

    A rank receives its children's partial sums (nearest first), sends its own up, receives the sum
    and sends it to its children, the farthest first.  The broadcast sends of one rank are posted
    together (a send completes once its bytes are in the socket buffer), so they share its uplink.

    Examples
    --------
    >>> tree_schedule(3, 5, 4).programs[0]
    (Recv(src=1, tag=0), Recv(src=2, tag=1), Send(dst=2, nbytes=20, tag=2), Send(dst=1, nbytes=20, tag=2))
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    levels, b = tree_levels(N), d * itemsize
    programs = []
    for r in range(N):
        kids, parent = tree_children(r, N), _parent(r)
        prog: list = [Recv(c, k) for k, c in enumerate(kids)]
        if parent is not None:
            prog += [Send(parent, b, (r & -r).bit_length() - 1), Recv(parent, levels)]
        prog += [Send(c, b, levels) for c in reversed(kids)]
        programs.append(tuple(prog))
    return Schedule("tree", tuple(programs))


def tree_all_reduce(tensor, *, group=None, counter: ByteCounter | None = None, straggler: Any = None):
    """Sum of ``tensor`` over the group by a binomial tree: reduce to rank 0, then broadcast.

    Reduce round ``k`` (``k = 0 .. ceil(log2 N) − 1``): a rank ``r`` with ``r mod 2^(k+1) = 2^k`` sends its
    partial sum to ``r − 2^k`` and is done; the receivers add.  The broadcast runs the same edges
    backwards, one child at a time (the farthest first).  Every receive is posted before the first send.

    Parameters
    ----------
    tensor, group, counter, straggler
        As for every registered ``run`` (:class:`~gcsim.executor.allreduce.Collective`): ``counter`` adds
        :func:`tree_cost`'s ``bytes_sent[rank]``; ``straggler`` is ignored (bulk-synchronous).

    Returns
    -------
    torch.Tensor
        The sum, a new tensor of the input's shape and dtype.
    """
    N, me, _, flat, ex = start("tree_all_reduce", tensor, group, counter, straggler)
    acc = flat.clone()
    d = acc.numel()
    levels = tree_levels(N)
    kids = tree_children(me, N)
    parent = _parent(me)
    for k, c in enumerate(kids):
        ex.post_recv(c, d, tag=k)  # child c = me + 2^k reports in reduce round k
    if parent is not None:
        ex.post_recv(parent, d, tag=levels)
    failed = True
    try:
        for k, _ in enumerate(kids):
            acc += ex.recv(k)
        if parent is not None:
            ex.send(parent, acc, tag=(me & -me).bit_length() - 1)
            acc = ex.recv(levels)
        for c in reversed(kids):  # the farthest child first: its subtree is the deepest
            ex.send(c, acc, tag=levels)
            ex.flush()  # one child at a time: concurrent sends would share the port and delay the deepest subtree
        failed = False
    finally:
        ex.close(failed)
    return acc.reshape(tensor.shape)


COLLECTIVES = (
    Collective(
        "tree",
        tree_all_reduce,
        tree_cost,
        "binomial tree: reduce to rank 0, broadcast back; 2⌈log2 N⌉ rounds of d",
        "§56.2",
        schedule=tree_schedule,
        order=20,
    ),
)
