"""Recursive halving-doubling all-reduce (Rabenseifner): halving reduce-scatter, doubling all-gather (§56.3).

On ``p = 2^⌊log2 N⌋`` ranks: ``log2 p`` rounds of recursive halving (round ``k`` exchanges ``p w / 2^(k+1)``
scalars with the partner at distance ``p / 2^(k+1)``), then the same rounds backwards (recursive
doubling), with ``w = ceil(d/p)``: ``2(p−1)w`` scalars sent per rank in ``2 log2 p`` rounds.  When ``N`` is
not a power of two the standard reduction to ``p`` ranks is used: of the first ``2(N − p)`` ranks, each
even one sends its vector to the odd one after it and sits out, and gets the result back at the end
(two more rounds of ``d`` scalars).
"""

from __future__ import annotations

from typing import Any

from ..collectives import ByteCounter
from ._linkmodel import Recv, Schedule, Send
from ._p2p import padded, start
from ._registry import Collective, CollectiveCost, check_sizes, check_straggler

__all__ = ["halving_doubling_all_reduce", "halving_doubling_cost", "halving_doubling_schedule", "COLLECTIVES"]


def _layout(N: int) -> tuple[int, int]:
    """``(p, extra)``: the power of two ``p <= N`` and ``extra = N − p`` ranks folded into partners."""
    p = 1 << (int(N).bit_length() - 1)
    return p, N - p


def halving_doubling_cost(N: int, d: int, itemsize: int, *, straggler: Any = None) -> CollectiveCost:
    """Bytes and rounds of :func:`halving_doubling_all_reduce` (theory §56.3).

    Examples
    --------
    >>> halving_doubling_cost(4, 10, 4).bytes_sent      # 2 (p - 1) ceil(d/p) scalars
    (72, 72, 72, 72)
    >>> c = halving_doubling_cost(3, 10, 4)            # rank 0 folds into rank 1
    >>> c.bytes_sent, c.rounds
    ((40, 80, 40), 4)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    p, extra = _layout(N)
    w = -(-d // p)
    core = 2 * (p - 1) * w * itemsize
    full = d * itemsize
    sent = tuple(full if r < 2 * extra and r % 2 == 0 else core + (full if r < 2 * extra else 0) for r in range(N))
    halving = tuple(p * w // (2 << k) * itemsize for k in range(p.bit_length() - 1))
    rounds = halving + halving[::-1]
    if extra:
        rounds = (full, *rounds, full)
    return CollectiveCost("halving-doubling", N, d, itemsize, sent, (), rounds)


def _actual(x: int, extra: int) -> int:
    """Group rank of core rank ``x``."""
    return 2 * x + 1 if x < extra else x + extra


def halving_doubling_schedule(N: int, d: int, itemsize: int, *, straggler: Any = None) -> Schedule:
    """The messages of :func:`halving_doubling_all_reduce` in each rank's posting order (theory §56.7).

    Examples
    --------
    >>> halving_doubling_schedule(4, 8, 4).programs[0][:2]         # halving round 0: 4 scalars to rank 2
    (Send(dst=2, nbytes=16, tag=1), Recv(src=2, tag=1))
    >>> halving_doubling_schedule(3, 8, 4).programs[0]             # rank 0 folds into rank 1
    (Send(dst=1, nbytes=32, tag=0), Recv(src=1, tag=3))
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    p, extra = _layout(N)
    w = -(-d // p)
    steps = p.bit_length() - 1
    programs = []
    for r in range(N):
        if r < 2 * extra and r % 2 == 0:
            programs.append((Send(r + 1, d * itemsize, 0), Recv(r + 1, 2 * steps + 1)))
            continue
        x = r // 2 if r < 2 * extra else r - extra
        prog: list = [Recv(r - 1, 0)] if r < 2 * extra else []
        rounds = [(k, 1 + k) for k in range(steps)] + [(k, 2 * steps - k) for k in reversed(range(steps))]
        for k, tag in rounds:  # halving round k and its doubling round move the same sizes
            partner = _actual(x ^ (p >> (k + 1)), extra)
            prog += [Send(partner, (p * w >> (k + 1)) * itemsize, tag), Recv(partner, tag)]
        if r < 2 * extra:
            prog.append(Send(r - 1, d * itemsize, 2 * steps + 1))
        programs.append(tuple(prog))
    return Schedule("halving-doubling", tuple(programs))


def halving_doubling_all_reduce(tensor, *, group=None, counter: ByteCounter | None = None, straggler: Any = None):
    """Sum of ``tensor`` over the group by recursive halving (reduce-scatter) and doubling (all-gather).

    Rank ``x`` of the ``p``-rank core keeps, after halving round ``k``, the half of its segment selected
    by bit ``p/2^(k+1)`` of ``x`` and adds the partner's copy of it; after ``log2 p`` rounds it holds
    segment ``x`` (``w`` scalars) of the sum, and the doubling rounds gather the segments back.  Every
    receive is posted before the first send.

    Parameters
    ----------
    tensor, group, counter, straggler
        As for every registered ``run`` (:class:`~gcsim.executor.allreduce.Collective`): ``counter`` adds
        :func:`halving_doubling_cost`'s ``bytes_sent[rank]``; ``straggler`` is ignored (bulk-synchronous).

    Returns
    -------
    torch.Tensor
        The sum, a new tensor of the input's shape and dtype.
    """
    N, me, _, flat, ex = start("halving_doubling_all_reduce", tensor, group, counter, straggler)
    d = flat.numel()
    p, extra = _layout(N)
    w = -(-d // p)
    steps = p.bit_length() - 1

    def actual(x: int) -> int:
        return _actual(x, extra)

    folded = me < 2 * extra and me % 2 == 0  # sits out: its partner me + 1 works for both
    failed = True
    try:
        if folded:
            ex.post_recv(me + 1, d, tag=2 * steps + 1)
            ex.send(me + 1, flat, tag=0)
            out = ex.recv(2 * steps + 1).clone()
            failed = False
            return out.reshape(tensor.shape)
        x = me // 2 if me < 2 * extra else me - extra
        if me < 2 * extra:
            ex.post_recv(me - 1, d, tag=0)
        for k in range(steps):  # halving round k and its doubling round receive the same sizes
            partner = actual(x ^ (p >> (k + 1)))
            ex.post_recv(partner, p * w >> (k + 1), tag=1 + k)
        for k in reversed(range(steps)):
            partner = actual(x ^ (p >> (k + 1)))
            ex.post_recv(partner, p * w >> (k + 1), tag=2 * steps - k)
        acc = padded(flat, p * w)
        if me < 2 * extra:
            acc[:d] += ex.recv(0)
        lo, hi = 0, p * w
        for k in range(steps):
            mask = p >> (k + 1)
            half = (hi - lo) // 2
            keep, give = ((lo, lo + half), (lo + half, hi)) if x & mask == 0 else ((lo + half, hi), (lo, lo + half))
            ex.send(actual(x ^ mask), acc[give[0] : give[1]].clone(), tag=1 + k)
            acc[keep[0] : keep[1]] += ex.recv(1 + k)
            lo, hi = keep
        for k in reversed(range(steps)):
            mask = p >> (k + 1)
            size = hi - lo
            ex.send(actual(x ^ mask), acc[lo:hi], tag=2 * steps - k)  # never written again
            other = (lo + size, hi + size) if x & mask == 0 else (lo - size, hi - size)
            acc[other[0] : other[1]] = ex.recv(2 * steps - k)
            lo, hi = min(lo, other[0]), max(hi, other[1])
        if me < 2 * extra:
            ex.send(me - 1, acc[:d], tag=2 * steps + 1)
        failed = False
    finally:
        ex.close(failed)
    return acc[:d].reshape(tensor.shape)


COLLECTIVES = (
    Collective(
        "halving-doubling",
        halving_doubling_all_reduce,
        halving_doubling_cost,
        "recursive halving then doubling (Rabenseifner); non-powers of two folded into a power of two",
        "§56.3",
        schedule=halving_doubling_schedule,
        order=30,
    ),
)
