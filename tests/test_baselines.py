"""Baseline assignments (docs/theory.md §30 App. B) against brute-force definitions and networkx."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.combinatorics.baselines import (
    cyclic_repetition,
    fractional_repetition,
    margulis_gabber_galil,
    mgg_neighbours,
    random_regular_assignment,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, VerificationError


@given(st.integers(1, 8), st.integers(1, 6))
@settings(max_examples=30, deadline=None)
def test_fractional_repetition_brute_force(groups, size):
    n, s = groups * size, size - 1
    g = fractional_repetition(n, s)
    A = g.assignment
    for j in range(n):  # worker j holds the parts of its group
        held = {i for i in range(n) if A[i, j]}
        assert held == set(range((j // size) * size, (j // size + 1) * size))
    assert [sum(A[i, j] for j in range(n)) for i in range(n)] == [s + 1] * n  # replication
    assert [sum(A[i, j] for i in range(n)) for j in range(n)] == [s + 1] * n  # load
    # workers in one group are identical, so any s stragglers leave each group represented
    assert g.verify() and g.params == (n, s) and g.kind == "fractional_repetition"


@given(st.integers(1, 12), st.data())
@settings(max_examples=30, deadline=None)
def test_cyclic_repetition_brute_force(n, data):
    N = data.draw(st.one_of(st.none(), st.integers(1, 15)))
    Np = n if N is None else N
    ell = data.draw(st.integers(1, Np))
    g = cyclic_repetition(n, ell, N)
    A = g.assignment
    assert A.shape == (Np, n)
    for j in range(n):
        assert {i for i in range(Np) if A[i, j]} == {(j + t) % Np for t in range(ell)}
    assert all(int(x) == ell for x in A.sum(axis=0))
    if N is None:
        assert all(int(x) == ell for x in A.sum(axis=1))
    assert g.verify() and g.params == (n, ell, Np)


@pytest.mark.parametrize("n,d,seed", [(10, 3, 0), (20, 4, 1), (9, 2, 2), (12, 0, 0), (16, 15, 3)])
def test_random_regular(n, d, seed):
    g = random_regular_assignment(n, d, seed=seed)
    A = g.assignment
    assert np.all(np.diag(A) == 1)
    adj = A - np.eye(n, dtype=int)
    assert np.array_equal(adj, adj.T) and set(np.unique(adj).tolist()) <= {0, 1}
    assert all(int(x) == d + 1 for x in A.sum(axis=0)) and all(int(x) == d + 1 for x in A.sum(axis=1))
    G = nx.random_regular_graph(d, n, seed=seed)
    assert np.array_equal(adj, nx.to_numpy_array(G, nodelist=range(n), dtype=int))
    assert g.verify() and g.seed == seed
    assert np.array_equal(random_regular_assignment(n, d, seed=seed).assignment, A)


@pytest.mark.parametrize("m", [2, 3, 5, 8])
def test_mgg_against_networkx(m):
    G = nx.margulis_gabber_galil_graph(m)
    assert set(dict(G.degree()).values()) == {8}  # 8-regular multigraph (loops count twice)
    idx = {(x, y): x * m + y for x in range(m) for y in range(m)}
    expected = np.eye(m * m, dtype=int)
    for u, w in G.edges():
        expected[idx[u], idx[w]] = expected[idx[w], idx[u]] = 1
    g = margulis_gabber_galil(m)
    assert np.array_equal(g.assignment, expected)
    assert g.verify() and g.params == (m,)
    # multiplicity-counting neighbours: every vertex has 8
    nb = mgg_neighbours(m)
    assert nb.shape == (m * m, 8)
    counts = np.zeros((m * m, m * m), dtype=int)
    np.add.at(counts, (np.repeat(np.arange(m * m), 8), nb.ravel()), 1)
    assert np.array_equal(counts, counts.T)  # each generator has its inverse


def test_verify_detects_tampering():
    for g in (
        fractional_repetition(6, 1),
        cyclic_repetition(6, 2),
        random_regular_assignment(8, 3),
        margulis_gabber_galil(4),
    ):
        bad = g.assignment.copy()
        bad[0, -1] ^= 1
        object.__setattr__(g, "_assignment", bad)  # forge a corrupted object past the immutability
        with pytest.raises(VerificationError):
            g.verify()


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: fractional_repetition(7, 1), ImpossibleParametersError, "\\(s\\+1\\) \\| n"),
        (lambda: fractional_repetition(6, 6), InvalidArgumentError, "s"),
        (lambda: fractional_repetition(-6, 1), InvalidArgumentError, "n"),
        (lambda: fractional_repetition(6, -1), InvalidArgumentError, "s"),
        (lambda: cyclic_repetition(6, 0), InvalidArgumentError, "ell"),
        (lambda: cyclic_repetition(6, 7), InvalidArgumentError, "ell"),
        (lambda: cyclic_repetition(6, 2, num_parts=0), InvalidArgumentError, "num_parts"),
        (lambda: random_regular_assignment(7, 3), ImpossibleParametersError, "n d even"),
        (lambda: random_regular_assignment(4, 4), ImpossibleParametersError, "d < n"),
        (lambda: random_regular_assignment(4, -1), InvalidArgumentError, "d"),
        (lambda: margulis_gabber_galil(1), InvalidArgumentError, "m"),
        (lambda: margulis_gabber_galil(2.5), InvalidArgumentError, "m"),
    ],
)
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
