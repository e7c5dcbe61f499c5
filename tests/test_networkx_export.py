"""to_networkx(): designs and graphs as networkx graphs, checked with networkx's own algorithms."""

from __future__ import annotations

from itertools import combinations

import networkx as nx
import pytest

import gcsim


@pytest.mark.parametrize(
    "obj",
    [
        gcsim.bibd(13, 4, 1),
        gcsim.bibd(7, 3, 1),
        gcsim.coset_graph(27, 2, 5),
        gcsim.biregular_graph(40, 20, 3, 6, seed=0),
    ],
    ids=repr,
)
def test_incidence_graph_is_the_assignment(obj):
    G = obj.to_networkx()
    A = obj.assignment
    parts = [("part", i) for i in range(A.shape[0])]
    workers = [("worker", j) for j in range(A.shape[1])]
    assert nx.is_bipartite(G) and G.number_of_nodes() == sum(A.shape)
    assert G.number_of_edges() == int(A.sum())
    assert all(G.nodes[p]["bipartite"] == 0 for p in parts) and all(G.nodes[w]["bipartite"] == 1 for w in workers)
    # networkx's biadjacency matrix (independent of gcsim's arrays) equals the assignment
    M = nx.bipartite.biadjacency_matrix(G, row_order=parts, column_order=workers).toarray()
    assert (M == A).all()
    assert G.graph["params"] == obj.params and G.graph["kind"] == obj.kind


def test_bibd_pairs_meet_lambda_times_in_the_levi_graph():
    d = gcsim.bibd(13, 4, 1)
    G = d.to_networkx()
    v, b, r, k, lam = d.params
    for i, j in combinations(range(v), 2):
        assert len(list(nx.common_neighbors(G, ("part", i), ("part", j)))) == lam


@pytest.mark.parametrize("params", [(10, 3, 0, 1), (13, 6, 2, 3), (16, 6, 2, 2)])
def test_srg_graph_has_the_srg_parameters(params):
    v, k, lam, mu = params
    g = gcsim.srg(*params)
    G = g.to_networkx()
    assert G.number_of_nodes() == v and nx.is_regular(G) and all(d == k for _, d in G.degree())
    for a, b in combinations(G.nodes, 2):
        common = len(list(nx.common_neighbors(G, a, b)))
        assert common == (lam if G.has_edge(a, b) else mu)
    H = g.to_networkx(incidence=True)
    assert nx.is_bipartite(H) and H.number_of_edges() == int(g.assignment.sum())
    with pytest.raises(ValueError, match="incidence"):
        g.to_networkx(incidence="yes")
