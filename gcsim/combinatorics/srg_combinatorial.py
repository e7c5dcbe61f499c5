"""Strongly regular graphs from combinatorial structures (docs/theory.md §20).

Triangular graphs T(n) = J(n, 2) and their complements (Kneser K(n, 2)), complete
multipartite graphs and disjoint cliques (the imprimitive SRGs), and block
graphs of Steiner systems S(2, k, v).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np

from .._validation import check_dense_size, check_int, check_int_array
from ..errors import InvalidArgumentError
from .srg_graph import StronglyRegularGraph, _make

__all__ = ["triangular_graph", "kneser_graph_2", "complete_multipartite_graph", "disjoint_cliques", "block_graph"]


def triangular_graph(n: int) -> StronglyRegularGraph:
    """Triangular graph T(n) = J(n, 2): the 2-subsets of [n], adjacent iff they meet.

    SRG(n(n-1)/2, 2(n-2), n-2, 4) for n >= 4 (BvM §1.1.7).  Vertices are the
    pairs ``(i, j), i < j`` in lexicographic order.  (The Johnson graphs J(n, d)
    with 3 <= d <= n - 3 have diameter >= 3, so T(n) = J(n, 2) ~ J(n, n-2) and its
    complement, the Kneser graph K(n, 2), are the strongly regular Johnson/Kneser graphs.)

    >>> triangular_graph(5).params
    SRGParams(v=10, k=6, lam=3, mu=4)
    """
    n = check_int("n", n, minimum=4)
    check_dense_size("n", n * (n - 1) // 2, n * (n - 1) // 2, f"the adjacency matrix of T({n})")
    pairs = np.array(list(combinations(range(n), 2)), dtype=np.int64)
    inc = np.zeros((len(pairs), n), dtype=np.int64)
    inc[np.arange(len(pairs))[:, None], pairs] = 1
    meet = inc @ inc.T
    adj = (meet == 1).astype(np.int64)
    return _make(adj, f"triangular graph T({n})", (n * (n - 1) // 2, 2 * (n - 2), n - 2, 4), n=n)


def kneser_graph_2(n: int) -> StronglyRegularGraph:
    """Kneser graph K(n, 2): 2-subsets of [n], adjacent iff disjoint; the complement of T(n).

    SRG(n(n-1)/2, (n-2)(n-3)/2, (n-4)(n-5)/2, (n-3)(n-4)/2) for n >= 5.

    >>> kneser_graph_2(5).params
    SRGParams(v=10, k=3, lam=0, mu=1)
    """
    n = check_int("n", n, minimum=5)
    g = triangular_graph(n).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"Kneser graph K({n},2)", metadata={"n": n})


def complete_multipartite_graph(m: int, n: int) -> StronglyRegularGraph:
    """Complete multipartite graph K_{m x n} (m parts of size n): SRG(mn, (m-1)n, (m-2)n, (m-1)n).

    Imprimitive (its complement m K_n is disconnected).  m, n >= 2.

    >>> complete_multipartite_graph(3, 2).params
    SRGParams(v=6, k=4, lam=2, mu=4)
    """
    m = check_int("m", m, minimum=2)
    n = check_int("n", n, minimum=2)
    check_dense_size("m", m * n, m * n, f"the adjacency matrix of K_{{{m}x{n}}}")
    part = np.arange(m * n) // n
    adj = (part[:, None] != part[None, :]).astype(np.int64)
    return _make(
        adj, f"complete multipartite graph K_{{{m}x{n}}}", (m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n), m=m, n=n
    )


def disjoint_cliques(m: int, n: int) -> StronglyRegularGraph:
    """m disjoint copies of K_n: SRG(mn, n-1, n-2, 0) (imprimitive). m, n >= 2.

    >>> disjoint_cliques(2, 3).params
    SRGParams(v=6, k=2, lam=1, mu=0)
    """
    m = check_int("m", m, minimum=2)
    n = check_int("n", n, minimum=2)
    g = complete_multipartite_graph(m, n).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"{m} disjoint copies of K_{n}", metadata={"m": m, "n": n})


def block_graph(blocks: Sequence[Iterable[int]], *, name: str | None = None) -> StronglyRegularGraph:
    """Block graph of a Steiner system S(2, K, V): blocks adjacent iff they meet.

    For a Steiner 2-design with ``b`` blocks of size ``K`` on ``V`` points
    (``r = (V-1)/(K-1)`` blocks per point) the block graph is an
    SRG(b, K(r-1), r - 2 + (K-1)^2, K^2) unless it is complete (projective
    planes, b = V) (BvM §1.1.9; Goethals & Seidel 1970).

    Parameters
    ----------
    blocks : sequence of sequences of ints
        The blocks; points are arbitrary integers (a boolean, a fraction or a string is refused,
        never truncated).  Checked: all blocks have the same size ``K >= 2`` and every pair of
        points lies in exactly one block; ``b x b`` and ``b x V`` within
        :data:`gcsim.limits.MAX_DENSE_ENTRIES` before anything is built.
    name : str, optional
        Description used as ``construction``.

    Examples
    --------
    >>> from itertools import combinations
    >>> block_graph(list(combinations(range(6), 2))).params   # S(2,2,6): T(6)
    SRGParams(v=15, k=8, lam=4, mu=4)
    """
    if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
        raise InvalidArgumentError("blocks", "must be a sequence of sequences of integers")
    if hasattr(blocks, "__len__"):  # the b x b adjacency, before a block is read (a zero-stride view counts)
        check_dense_size("blocks", len(blocks), len(blocks), "the block graph's adjacency matrix")
    blist = [tuple(check_int_array("blocks", b, ndim=1, what="a block").tolist()) for b in blocks]
    if len(blist) < 2:
        raise InvalidArgumentError("blocks", "need at least 2 blocks")
    sizes = {len(b) for b in blist}
    if len(sizes) != 1 or min(sizes) < 2 or any(len(set(b)) != len(b) for b in blist):
        raise InvalidArgumentError("blocks", "all blocks must have the same size K >= 2 and no repeated points")
    K = sizes.pop()
    check_dense_size("blocks", len(blist), len(blist), "the block graph's adjacency matrix")
    points = sorted({x for b in blist for x in b})
    check_dense_size("blocks", len(blist), len(points), "the block-point incidence")
    pos = {x: i for i, x in enumerate(points)}
    V, b = len(points), len(blist)
    inc = np.zeros((b, V), dtype=np.int64)
    rows = np.repeat(np.arange(b), K)
    cols = np.array([pos[x] for blk in blist for x in blk], dtype=np.int64)
    inc[rows, cols] = 1
    pair = inc.T @ inc
    off = ~np.eye(V, dtype=bool)
    if not np.all(pair[off] == 1):
        raise InvalidArgumentError(
            "blocks", "not a Steiner system S(2, K, V): some pair of points is not in exactly one block"
        )
    meet = inc @ inc.T
    adj = ((meet > 0) & ~np.eye(b, dtype=bool)).astype(np.int64)
    if adj.sum(axis=1).min() == b - 1:
        raise InvalidArgumentError(
            "blocks",
            "the block graph is complete (a projective plane or a single "
            "block) and complete graphs are not strongly regular here",
        )
    r = (V - 1) // (K - 1)
    expected = (b, K * (r - 1), r - 2 + (K - 1) ** 2, K * K)
    return _make(adj, name or f"block graph of S(2,{K},{V})", expected, V=V, K=K)
