"""Bi-regular bipartite graphs (docs/theory.md §30 App. A): degrees, simplicity, connectivity, seeds, errors.

Independent checks: degrees and simplicity recomputed from the 0/1 matrix,
connectivity by an explicit breadth-first search (or networkx).
"""

from collections import deque

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.combinatorics import biregular as br
from gcsim.combinatorics.biregular import (
    BiregularGraph,
    biregular_from_assignment,
    biregular_graph,
    is_connected_assignment,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, VerificationError


def _bfs_connected(A):
    v, b = A.shape
    seen = {("p", 0)}
    queue = deque([("p", 0)])
    while queue:
        side, i = queue.popleft()
        nbrs = [("w", j) for j in np.flatnonzero(A[i])] if side == "p" else [("p", j) for j in np.flatnonzero(A[:, i])]
        for x in nbrs:
            if x not in seen:
                seen.add(x)
                queue.append(x)
    return len(seen) == v + b


def _check(A, v, b, r, k):
    A = np.asarray(A)
    assert A.shape == (v, b)
    assert set(np.unique(A).tolist()) <= {0, 1}  # simple: no repeated edges
    assert all(int(sum(row)) == r for row in A.tolist())
    assert all(int(sum(col)) == k for col in A.T.tolist())
    assert _bfs_connected(A)


def test_named_instance():
    g = biregular_graph(40, 20, 3, 6)
    _check(g.assignment, 40, 20, 3, 6)
    assert g.verify() and g.params == (40, 20, 3, 6) and g.seed == 0 and g.kind == "biregular"
    assert g.num_parts == 40 and g.num_workers == 20


def test_determinism_and_seed_dependence():
    a = biregular_graph(40, 20, 3, 6, seed=4)
    b = biregular_graph(40, 20, 3, 6, seed=4)
    c = biregular_graph(40, 20, 3, 6, seed=5)
    assert np.array_equal(a.assignment, b.assignment)
    assert not np.array_equal(a.assignment, c.assignment)


@st.composite
def _params(draw):
    v = draw(st.integers(1, 30))
    b = draw(st.integers(1, 30))
    r = draw(st.integers(1, b))
    # k = v r / b must be an integer <= v
    if (v * r) % b:
        v = b * draw(st.integers(1, 3))
        r = draw(st.integers(1, b))
    k = v * r // b
    return v, b, r, k


@given(_params(), st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_random_parameters(params, seed):
    v, b, r, k = params
    if v * r < v + b - 1:
        with pytest.raises(ImpossibleParametersError, match="v \\+ b - 1"):
            biregular_graph(v, b, r, k, seed=seed)
        return
    g = biregular_graph(v, b, r, k, seed=seed)
    _check(g.assignment, v, b, r, k)
    assert g.verify()


@pytest.mark.parametrize("v,b,r,k", [(5, 5, 5, 5), (10, 10, 9, 9), (12, 12, 2, 2), (30, 20, 2, 3)])
def test_extreme_cases(v, b, r, k):
    g = biregular_graph(v, b, r, k, seed=1)
    _check(g.assignment, v, b, r, k)
    G = nx.Graph()
    G.add_edges_from((i, v + j) for i, j in zip(*np.nonzero(g.assignment), strict=False))
    assert nx.is_connected(G) and nx.is_bipartite(G)


def test_fallback_switch_chain_is_used_when_repair_stalls(monkeypatch):
    monkeypatch.setattr(br, "_repair", lambda *args, **kwargs: False)
    g = biregular_graph(40, 20, 3, 6, seed=2, max_tries=2)
    assert "circulant" in g.construction
    _check(g.assignment, 40, 20, 3, 6)
    h = biregular_graph(40, 20, 3, 6, seed=2, max_tries=2)
    assert np.array_equal(g.assignment, h.assignment)


def test_connect_merges_components():
    """Two disjoint copies of K_{3,3}: the merge switch keeps degrees and connects."""
    K = np.ones((3, 3), dtype=np.int64)
    A = np.block([[K, np.zeros_like(K)], [np.zeros_like(K), K]])
    assert not _bfs_connected(A)
    out = br._connect(A.copy(), np.random.default_rng(0))
    _check(out, 6, 6, 3, 3)


def test_from_assignment_fano_and_errors():
    lines = [[0, 1, 2], [0, 3, 4], [0, 5, 6], [1, 3, 5], [1, 4, 6], [2, 3, 6], [2, 4, 5]]
    A = np.zeros((7, 7), dtype=int)
    for j, L in enumerate(lines):
        A[L, j] = 1
    g = biregular_from_assignment(A)
    assert g.params == (7, 7, 3, 3) and g.verify() and g.seed is None
    with pytest.raises(InvalidArgumentError, match="bi-regular"):
        biregular_from_assignment(np.array([[1, 1], [1, 0]]))
    with pytest.raises(InvalidArgumentError, match="assignment"):
        biregular_from_assignment(np.array([[2, 0], [0, 2]]))
    disconnected = np.eye(4, dtype=int)
    with pytest.raises(InvalidArgumentError, match="not connected"):
        biregular_from_assignment(disconnected)
    h = biregular_from_assignment(disconnected, require_connected=False)
    assert h.verify() and not is_connected_assignment(h.assignment)


def test_verify_detects_tampering():
    g = biregular_graph(40, 20, 3, 6)
    bad = g.assignment.copy()
    i, j = np.argwhere(bad == 1)[0]
    bad[i, j] = 0
    object.__setattr__(g, "_assignment", bad)  # forge a corrupted object past the immutability
    with pytest.raises(VerificationError):
        g.verify()
    # same degrees but disconnected
    K = np.ones((2, 2), dtype=np.int64)
    two = BiregularGraph(np.block([[K, 0 * K], [0 * K, K]]), (4, 4, 2, 2), "two blocks", None)
    with pytest.raises(VerificationError, match="connected"):
        two.verify()


@pytest.mark.parametrize(
    "args,exc,match",
    [
        ((40, 20, 3, 5), ImpossibleParametersError, "vr = bk"),
        ((4, 2, 3, 6), ImpossibleParametersError, "r <= b"),
        ((2, 4, 6, 3), ImpossibleParametersError, "r <= b"),
        ((6, 3, 1, 2), ImpossibleParametersError, "v \\+ b - 1"),
        ((-40, 20, 3, 6), InvalidArgumentError, "v"),
        ((40, 0, 3, 6), InvalidArgumentError, "b"),
        ((40, 20, 0, 6), InvalidArgumentError, "r"),
        ((40, 20, 3, 6.5), InvalidArgumentError, "k"),
    ],
)
def test_bad_parameters(args, exc, match):
    with pytest.raises(exc, match=match):
        biregular_graph(*args)


def test_bad_seed_and_tries():
    with pytest.raises(InvalidArgumentError, match="seed"):
        biregular_graph(40, 20, 3, 6, seed=-1)
    with pytest.raises(InvalidArgumentError, match="max_tries"):
        biregular_graph(40, 20, 3, 6, max_tries=0)
