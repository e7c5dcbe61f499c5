"""Tests that make mutants of the bulk-synchronous collectives' plans fail (ring, tree, halving-doubling,
CERAR: their costs and schedules, theory §56.1-§56.5, §56.7).

Each expectation is counted from the algorithm's description, not from the code: who talks to whom
(the ring's next rank, the tree's parent ``r - lowbit(r)``, halving-doubling's partner at XOR distance
``p/2, p/4, ...`` with the fold of ``N - p`` pairs), how many messages each rank sends, and how many
one-way delays deep the schedule is on links without a bandwidth limit, where the link model
(tests/test_linkmodel.py) then counts hops only.  Every refusal names its argument.
"""

from __future__ import annotations

import math

import pytest

from gcsim.cerar.traffic import cerar_bytes
from gcsim.executor.allreduce import Recv, Send, get_collective, simulate
from gcsim.executor.allreduce.tree import tree_children, tree_levels
from tests.guards import refused_argument

SIZES = [2, 3, 4, 5, 6, 7, 8, 9, 12, 16]


def _talks(schedule) -> set[tuple[int, int]]:
    return {(r, op.dst) for r, prog in enumerate(schedule.programs) for op in prog if isinstance(op, Send)}


def _depth(schedule) -> int:
    """One-way delays on the critical path: the schedule on links of latency 1 and no bandwidth limit."""
    t = max(simulate(schedule, 1, math.inf))
    assert t == int(t)
    return int(t)


def _lowbit(r: int) -> int:
    return r & -r


@pytest.mark.parametrize("N", SIZES)
def test_tree_is_the_binomial_tree_two_levels_deep_per_level(N):
    levels = math.ceil(math.log2(N))
    assert tree_levels(N) == levels
    parent = {r: r - _lowbit(r) for r in range(1, N)}
    for r in range(N):
        # children: the ranks whose parent is r, nearest first
        assert tree_children(r, N) == sorted(c for c, p in parent.items() if p == r)
    sch = get_collective("tree").schedule(N, 7, 4)
    edges = {(c, p) for c, p in parent.items()} | {(p, c) for c, p in parent.items()}
    assert _talks(sch) == edges
    # each rank sends its partial sum up once and the sum down to each child: d scalars each time
    for r, prog in enumerate(sch.programs):
        sends = [op for op in prog if isinstance(op, Send)]
        assert len(sends) == (r != 0) + len(tree_children(r, N)) and all(op.nbytes == 28 for op in sends)
        # receives first from the children (nearest first), then from the parent
        recv = [op.src for op in prog if isinstance(op, Recv)]
        assert recv == tree_children(r, N) + ([parent[r]] if r else [])
    assert sch.bytes_sent == get_collective("tree").cost(N, 7, 4).bytes_sent
    # up and down the deepest path (rank r lies popcount(r) edges below the root), one delay per edge
    assert _depth(sch) == 2 * max(bin(r).count("1") for r in range(N))
    cost = get_collective("tree").cost(N, 7, 4)
    assert cost.early == () and cost.late == (28,) * (2 * levels) and cost.rounds == 2 * levels


@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("d", [1, 8, 37])
def test_halving_doubling_partners_sizes_and_depth(N, d):
    p = 1 << (N.bit_length() - 1)
    extra = N - p
    w = -(-d // p)
    core = [2 * x + 1 if x < extra else x + extra for x in range(p)]  # the rank standing for core rank x
    sch = get_collective("halving-doubling").schedule(N, d, 4)
    expect = set()
    for x in range(p):
        dist = p // 2
        while dist:
            expect.add((core[x], core[x ^ dist]))
            dist //= 2
    for j in range(extra):  # the folded pairs: 2j sends to 2j + 1 and gets the sum back
        expect |= {(2 * j, 2 * j + 1), (2 * j + 1, 2 * j)}
    assert _talks(sch) == expect
    steps = p.bit_length() - 1
    for r, prog in enumerate(sch.programs):
        sends = [op.nbytes for op in prog if isinstance(op, Send)]
        if r < 2 * extra and r % 2 == 0:
            assert sends == [4 * d]
            continue
        # halving rounds: p w / 2, p w / 4, ..., w; doubling rounds: the same backwards
        halving = [4 * (p * w >> (k + 1)) for k in range(steps)]
        assert sends == halving + halving[::-1] + ([4 * d] if r < 2 * extra else [])
    assert _depth(sch) == 2 * steps + (2 if extra else 0)
    cost = get_collective("halving-doubling").cost(N, d, 4)
    assert sch.bytes_sent == cost.bytes_sent and cost.early == ()
    halving = tuple(4 * (p * w >> (k + 1)) for k in range(steps))
    assert cost.late == ((4 * d,) if extra else ()) + halving + halving[::-1] + ((4 * d,) if extra else ())


@pytest.mark.parametrize("N", SIZES)
def test_ring_and_cerar_go_round_the_ring(N):
    ring = get_collective("ring").schedule(N, 37, 4)
    assert _talks(ring) == {(r, (r + 1) % N) for r in range(N)}
    per = 4 * -(-37 // N)
    assert all([op.nbytes for op in prog if isinstance(op, Send)] == [per] * (2 * (N - 1)) for prog in ring.programs)
    assert _depth(ring) == 2 * (N - 1)
    cost = get_collective("ring").cost(N, 37, 4)
    assert cost.bytes_sent == (2 * (N - 1) * per,) * N and cost.late == (per,) * (2 * (N - 1)) and cost.early == ()
    cerar = get_collective("cerar")
    for c in sorted({1, 2, N}):
        sch = cerar.schedule(N, 37, 4, c=c)
        per = 4 * -(-37 // c)
        assert _talks(sch) == {(r, (r + 1) % N) for r in range(N)}
        assert all([op.nbytes for op in prog if isinstance(op, Send)] == [per] * (c + N - 2) for prog in sch.programs)
        assert _depth(sch) == c + N - 2
        k = cerar.cost(N, 37, 4, c=c)
        assert k.bytes_sent == (cerar_bytes(N, c, 37, 4),) * N == sch.bytes_sent and k.late == (per,) * (c + N - 2)
    # the default is c = N components
    assert cerar.cost(N, 37, 4).bytes_sent == cerar.cost(N, 37, 4, c=N).bytes_sent
    assert cerar.schedule(N, 37, 4).programs == cerar.schedule(N, 37, 4, c=N).programs


def test_refusals_name_their_argument():
    for name in ("ring", "tree", "halving-doubling", "cerar"):
        col = get_collective(name)
        for fn in (col.cost, col.schedule):
            for args, arg in (((0, 4, 4), "N"), ((4, 0, 4), "d"), ((4, 4, 0), "itemsize")):
                assert refused_argument(fn, *args) == arg, (name, arg)
            assert refused_argument(fn, 4, 4, 4, straggler=4) == "straggler", name
    for fn in (get_collective("cerar").cost, get_collective("cerar").schedule):
        for c in (0, 5):
            assert refused_argument(fn, 4, 4, 4, c=c) == "c"


@pytest.mark.parametrize("name", ["ring", "tree", "halving-doubling", "cerar"])
def test_costs_and_schedules_carry_the_collectives_name_and_integer_bytes(name):
    col = get_collective(name)
    cost, sch = col.cost(6, 37, 4), col.schedule(6, 37, 4)
    assert cost.name == sch.name == name
    assert cost.early == ()  # bulk-synchronous: nothing runs before every rank is there
    assert all(type(x) is int for x in (*cost.bytes_sent, *cost.late))


@pytest.mark.parametrize("N", [2, 3, 5])
def test_the_ring_posts_each_receive_one_round_ahead(N):
    """As RingTransport does: the receives of rounds 0 and 1 at the start, then round k + 1's just
    before round k's is awaited (a Post), none past the last round."""
    from gcsim.executor.allreduce import Post

    rounds = 2 * (N - 1)
    for r, prog in enumerate(get_collective("ring").schedule(N, 37, 4).programs):
        expect: list = []
        for k in range(rounds):
            expect.append(Send((r + 1) % N, 4 * -(-37 // N), k))
            if k + 1 < rounds:
                expect.append(Post((r - 1) % N, k + 1))
            expect.append(Recv((r - 1) % N, k))
        assert list(prog) == expect
