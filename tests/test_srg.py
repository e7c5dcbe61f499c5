"""Strongly regular graphs: every family verified against independent computations.

Independent references: brute-force common-neighbour counts with int64 matmul
(gcsim's verify uses an exact float64 BLAS product), networkx graphs built
independently (Paley for primes, line graph of K_n, rook's graph, Petersen,
Hoffman-Singleton) and networkx's distance-regularity / intersection arrays,
numpy eigenvalues, galois field arithmetic, and the standard parameter
formulas of each family.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

import gcsim.combinatorics as C
from gcsim.combinatorics import srg as S
from gcsim.combinatorics.fields import CONWAY_POLYNOMIALS, field_tables
from gcsim.combinatorics.srg_geometric import polar_graph_parameters
from gcsim.errors import (
    ImpossibleParametersError,
    InvalidArgumentError,
    NotConstructibleError,
    VerificationError,
)
from tolerances import SAFETY, dot_tol, unit_roundoff

FIX = Path(__file__).resolve().parent / "fixtures" / "sage_srg.json"


def _is_prime_power(q):
    return any(q == p**a for p in range(2, q + 1) if all(p % d for d in range(2, p)) for a in range(1, 8))


PALEY_Q = [q for q in range(5, 102, 4) if _is_prime_power(q)]


def brute_params(adj):
    """(v, k, lam, mu) by explicit int64 counting, or None."""
    a = np.asarray(adj, dtype=np.int64)
    v = a.shape[0]
    assert a.shape == (v, v) and np.array_equal(a, a.T) and not a.diagonal().any()
    assert np.all((a == 0) | (a == 1))
    deg = a.sum(axis=1)
    if len(set(deg.tolist())) != 1:
        return None
    common = a @ a  # int64, not BLAS
    off = ~np.eye(v, dtype=bool)
    lam = set(common[(a == 1) & off].tolist())
    mu = set(common[(a == 0) & off].tolist())
    if len(lam) != 1 or len(mu) != 1:
        return None
    return (v, int(deg[0]), lam.pop(), mu.pop())


def check_graph(g, params):
    """Full independent check of a built graph."""
    assert g.params == tuple(params)
    assert g.verify() is True
    assert brute_params(g.adjacency) == tuple(params)
    v = params[0]
    assert np.array_equal(g.assignment, g.adjacency + np.eye(v, dtype=np.int64))
    assert g.kind == "srg"


def eig_tol(adj):
    """Absolute accuracy of ``numpy.linalg.eigvalsh`` on a symmetric integer matrix.

    The symmetric eigensolver is backward stable, the computed eigenvalues are exact for
    ``A + ΔA`` with ``‖ΔA‖_2 <= c n u ‖A‖_2`` (LAPACK Users' Guide §4.7; Higham Ch. 1), and by Weyl's
    inequality each moves by at most ``‖ΔA‖_2``.  ``‖A‖_2 <= ‖A‖_∞`` for symmetric ``A`` (an exact
    integer row sum: the degree ``k`` of a regular graph).
    """
    A = np.asarray(adj)
    return SAFETY * A.shape[0] * unit_roundoff() * float(np.abs(A).sum(axis=1).max())


def numeric_spectrum(adj):
    """Distinct numerical eigenvalues (descending) with multiplicities.

    Two computed eigenvalues of the same exact value are within ``2 eig_tol``; distinct exact
    eigenvalues of a strongly regular graph are at least ``r − s = √Δ >= 1`` apart, far above it, so
    the grouping is unambiguous (and a wrong multiplicity makes the callers fail).
    """
    ev = np.linalg.eigvalsh(np.asarray(adj, dtype=float))
    tol = 2 * eig_tol(adj)
    vals, counts = [], []
    for x in sorted(ev, reverse=True):
        if vals and abs(x - vals[-1]) <= tol:
            counts[-1] += 1
        else:
            vals.append(x)
            counts.append(1)
    return list(zip(vals, counts, strict=False))


# ------------------------------------------------------------------------------- field tables
@pytest.mark.parametrize("q", [q for q in CONWAY_POLYNOMIALS if q <= 64])
def test_field_tables_are_fields(q):
    add, mul = field_tables(q)
    x = np.arange(q)
    # additive group is (Z_p)^a: x + x + ... (p times) = 0, 0 is neutral, commutative
    assert np.array_equal(add[0], x) and np.array_equal(add, add.T) and np.array_equal(mul, mul.T)
    assert np.array_equal(mul[1], x) and not mul[0].any()
    # nonzero elements form a group under mul: each row of mul[1:,1:] is a permutation
    assert all(sorted(row) == list(range(1, q)) for row in mul[1:, 1:].tolist())
    # associativity and distributivity, exhaustively
    assert np.array_equal(mul[mul[:, :, None], x[None, None, :]], mul[x[:, None, None], mul[None, :, :]])
    assert np.array_equal(mul[x[:, None, None], add[None, :, :]], add[mul[:, :, None], mul[:, None, :]])


@pytest.mark.slow  # builds galois fields up to GF(81) (about 9 s)
def test_field_tables_match_galois():
    from gcsim.combinatorics.fields import finite_field

    for q in (9, 25):  # GF(9): gcsim's own polynomial (galois compiles it: seconds); GF(25): Conway
        GF = finite_field(q)
        e = GF(np.arange(q))
        add, mul = field_tables(q)
        assert np.array_equal(add, np.asarray(e[:, None] + e[None, :]))
        assert np.array_equal(mul, np.asarray(e[:, None] * e[None, :]))


# ------------------------------------------------------------------------------- Paley graphs
@settings(max_examples=8, deadline=None)
@given(st.sampled_from(PALEY_Q))
def test_paley_hypothesis(q):
    g = C.paley_graph(q)
    check_graph(g, (q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4))


@pytest.mark.parametrize("q", [9, 25, 49, 81])
def test_paley_prime_powers(q):
    check_graph(C.paley_graph(q), (q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4))


@pytest.mark.parametrize("p", [5, 13, 17, 29, 37])
def test_paley_primes_equal_networkx(p):
    """For primes, networkx's (directed) Paley graph symmetrized is exactly ours (same labels)."""
    ref = nx.to_numpy_array(nx.paley_graph(p).to_undirected(), nodelist=range(p), dtype=np.int64)
    assert np.array_equal(C.paley_graph(p).adjacency, ref)


def test_paley_9_with_galois_arithmetic():
    """Independent construction with galois: x ~ y iff x - y is a nonzero square in GF(9)."""
    from gcsim.combinatorics.fields import finite_field

    GF = finite_field(9)
    e = GF(np.arange(9))
    squares = {int(x) for x in (e[1:] ** 2)}
    diff = np.asarray(e[:, None] - e[None, :])
    ref = np.isin(diff, list(squares)).astype(np.int64)
    assert np.array_equal(C.paley_graph(9).adjacency, ref)


def test_paley_not_networkx_for_prime_powers():
    """networkx's integer construction is not the Paley graph for q = 9 (the reason the spec
    forbids it): its symmetrization is not strongly regular with Paley parameters."""
    ref = nx.to_numpy_array(nx.paley_graph(9).to_undirected(), nodelist=range(9), dtype=np.int64)
    assert brute_params(ref) != (9, 4, 1, 2)


@pytest.mark.parametrize("q", [3, 7, 15, 21, 1, 12.5])
def test_paley_bad_q(q):
    with pytest.raises(InvalidArgumentError) as ei:
        C.paley_graph(q)
    assert ei.value.argument == "q"


# ------------------------------------------------------------------------------- T(n), L2(n), LS_m(n)
@settings(max_examples=6, deadline=None)
@given(st.integers(4, 13))
def test_triangular_equals_line_graph_of_Kn(n):
    g = C.triangular_graph(n)
    check_graph(g, (n * (n - 1) // 2, 2 * (n - 2), n - 2, 4))
    L = nx.line_graph(nx.complete_graph(n))
    order = list(combinations(range(n), 2))
    ref = nx.to_numpy_array(L, nodelist=order, dtype=np.int64)
    assert np.array_equal(g.adjacency, ref)


@settings(max_examples=6, deadline=None)
@given(st.integers(2, 10))
def test_lattice_equals_rook_graph(n):
    g = C.lattice_graph(n)
    check_graph(g, (n * n, 2 * (n - 1), n - 2, 2))
    R = nx.cartesian_product(nx.complete_graph(n), nx.complete_graph(n))
    ref = nx.to_numpy_array(R, nodelist=[(i, j) for i in range(n) for j in range(n)], dtype=np.int64)
    assert np.array_equal(g.adjacency, ref)


@settings(max_examples=8, deadline=None)
@given(
    st.sampled_from(
        [(m, n) for n in (3, 4, 5, 6, 7, 8, 9, 10) for m in range(2, n + 1) if m <= 3 or _is_prime_power(n)]
    )
)
def test_latin_square_graphs(mn):
    m, n = mn
    check_graph(C.latin_square_graph(m, n), (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1)))


def test_latin_square_not_constructible():
    with pytest.raises(NotConstructibleError) as ei:
        C.latin_square_graph(4, 6)
    assert (36, 15, 6, 6) in ei.value.suggestions
    with pytest.raises(InvalidArgumentError) as ei:
        C.latin_square_graph(7, 6)
    assert ei.value.argument == "m"


def test_kneser_and_petersen():
    check_graph(C.kneser_graph_2(7), (21, 10, 3, 6))
    g = C.petersen_graph()
    check_graph(g, (10, 3, 0, 1))
    assert nx.is_isomorphic(g.to_networkx(), nx.petersen_graph())


def test_imprimitive():
    check_graph(C.complete_multipartite_graph(4, 3), (12, 9, 6, 9))
    check_graph(C.disjoint_cliques(3, 4), (12, 3, 2, 0))
    assert nx.is_isomorphic(C.complete_multipartite_graph(3, 3).to_networkx(), nx.complete_multipartite_graph(3, 3, 3))


# ------------------------------------------------------------------------------- sporadic graphs
def _intersection_array(g):
    G = g.to_networkx()
    assert nx.is_distance_regular(G)
    return nx.intersection_array(G)


@pytest.mark.parametrize(
    "fn,params",
    [
        (C.clebsch_graph, (16, 5, 0, 2)),
        (C.shrikhande_graph, (16, 6, 2, 2)),
        (C.schlafli_graph, (27, 16, 10, 8)),
        (C.hoffman_singleton_graph, (50, 7, 0, 1)),
        (C.gewirtz_graph, (56, 10, 0, 2)),
    ],
)
def test_sporadic(fn, params):
    g = fn()
    check_graph(g, params)
    v, k, lam, mu = params
    # a connected SRG is distance-regular of diameter 2 with array [k, k-lam-1; 1, mu]
    assert _intersection_array(g) == ([k, k - lam - 1], [1, mu])


def test_hoffman_singleton_isomorphic_to_networkx():
    ref = nx.hoffman_singleton_graph()
    assert brute_params(nx.to_numpy_array(ref, dtype=np.int64)) == (50, 7, 0, 1)
    # both are SRG(50,7,0,1), which is unique (Hoffman-Singleton 1960): compare invariants
    G = C.hoffman_singleton_graph().to_networkx()
    assert nx.girth(G) == nx.girth(ref) == 5


def test_shrikhande_not_lattice():
    """Same parameters as L2(4), but the neighbourhood of a vertex is C6, not 2 K3."""
    sh, l2 = C.shrikhande_graph(), C.lattice_graph(4)
    assert sh.params == l2.params
    assert not nx.is_isomorphic(sh.to_networkx(), l2.to_networkx())
    nb = sh.to_networkx().subgraph(list(sh.to_networkx()[0]))
    assert nx.is_isomorphic(nb, nx.cycle_graph(6))


def test_clebsch_is_folded_5_cube():
    Q5 = nx.hypercube_graph(5)
    folded = nx.quotient_graph(Q5, [{u, tuple(1 - x for x in u)} for u in Q5 if u[0] == 0])
    assert nx.is_isomorphic(nx.Graph(folded), C.clebsch_graph().to_networkx())


def test_golay_octads_form_steiner_5_8_24():
    from gcsim.combinatorics.srg_sporadic import _golay_octads

    oct_ = _golay_octads()
    assert oct_.shape == (759, 24)
    # every 5-set of points lies in exactly one octad (check a sample of 5-sets exhaustively on 10 points)
    for five in combinations(range(10), 5):
        assert int(np.all(oct_[:, list(five)] == 1, axis=1).sum()) == 1


# ------------------------------------------------------------------------------- polar spaces, GQs
GQ_CASES = [(2, 2), (3, 3), (4, 4), (2, 4), (4, 2), (3, 5), (2, 1), (3, 9), (1, 3)]


@pytest.mark.parametrize("s,t", GQ_CASES)
def test_generalized_quadrangles(s, t):
    check_graph(C.generalized_quadrangle_graph(s, t), ((s + 1) * (s * t + 1), s * (t + 1), s - 1, t + 1))


def test_gq_not_constructible():
    with pytest.raises(NotConstructibleError):
        C.generalized_quadrangle_graph(2, 3)


@pytest.mark.parametrize(
    "kind,n,q",
    [
        ("Sp", 6, 2),
        ("O", 7, 2),
        ("O+", 6, 2),
        ("O+", 8, 2),
        ("O-", 8, 2),
        ("O", 5, 3),
        ("O+", 6, 3),
        ("U", 5, 4),
        ("U", 4, 9),
        ("Sp", 4, 5),
    ],
)
def test_polar_graphs(kind, n, q):
    g = C.polar_graph(kind, n, q)
    check_graph(g, polar_graph_parameters(kind, n, q))
    # numbers of singular points, counted independently (Hirschfeld): |Q+(2d-1,q)| etc.
    if kind == "Sp":
        expected_v = (q**n - 1) // (q - 1)
    elif kind == "O":
        expected_v = (q ** (n - 1) - 1) // (q - 1)
    elif kind == "O+":
        d = n // 2
        expected_v = (q**d - 1) * (q ** (d - 1) + 1) // (q - 1)
    elif kind == "O-":
        d = n // 2 - 1
        expected_v = (q ** (d + 1) + 1) * (q**d - 1) // (q - 1)
    else:
        r = int(round(q**0.5))
        expected_v = (r**n - (-1) ** n) * (r ** (n - 1) - (-1) ** (n - 1)) // (q - 1)
    assert g.params[0] == expected_v


def test_symplectic_graph():
    for m in (2, 3):
        n = 2 ** (2 * m)
        g = C.symplectic_graph(m)
        check_graph(g, (n - 1, n // 2, n // 4, n // 4))


@pytest.mark.parametrize("args", [("Sp", 5, 2), ("X", 4, 2), ("U", 4, 3), ("O+", 4, 6), ("O-", 4, 2)])
def test_polar_bad_args(args):
    with pytest.raises(InvalidArgumentError):
        C.polar_graph(*args)


# ------------------------------------------------------------------------------- two-intersection sets
@pytest.mark.parametrize("eps,m,q", [(1, 2, 2), (-1, 2, 2), (1, 3, 2), (-1, 3, 2), (1, 2, 3), (-1, 2, 3), (-1, 2, 4)])
def test_affine_polar(eps, m, q):
    k = (q**m - eps) * (q ** (m - 1) + eps)
    lam = q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2
    mu = q ** (m - 1) * (q ** (m - 1) + eps)
    check_graph(C.affine_polar_graph(eps, m, q), (q ** (2 * m), k, lam, mu))


def test_hyperoval_gq():
    check_graph(C.hyperoval_gq_graph(4), (64, 18, 2, 6))
    with pytest.raises(InvalidArgumentError):
        C.hyperoval_gq_graph(9)


def test_two_intersection_rejects_non_two_intersection_set():
    # three non-collinear points plus one more general point of PG(2,3): lines meet it in 0, 1 or 2 points
    with pytest.raises(InvalidArgumentError) as ei:
        C.two_intersection_graph(3, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]])
    assert ei.value.argument == "points"
    with pytest.raises(InvalidArgumentError):
        C.two_intersection_graph(3, [[1, 0], [2, 0]])  # same projective point


# ------------------------------------------------------------------------------- block graphs
@pytest.mark.parametrize("K,V", [(3, 13), (3, 15), (3, 19), (4, 25), (3, 21), (4, 28), (5, 41)])
def test_block_graphs(K, V):
    blocks = C.steiner_system_blocks(K, V)
    b = V * (V - 1) // (K * (K - 1))
    assert len(blocks) == b
    # independent Steiner check: every pair of points in exactly one block
    cover = {}
    for blk in blocks:
        for pair in combinations(sorted(blk), 2):
            cover[pair] = cover.get(pair, 0) + 1
    assert len(cover) == V * (V - 1) // 2 and set(cover.values()) == {1}
    r = (V - 1) // (K - 1)
    check_graph(C.block_graph(blocks), (b, K * (r - 1), r - 2 + (K - 1) ** 2, K * K))


def test_block_graph_errors():
    fano = [(0, 1, 2), (0, 3, 4), (0, 5, 6), (1, 3, 5), (1, 4, 6), (2, 3, 6), (2, 4, 5)]
    with pytest.raises(InvalidArgumentError, match="complete"):
        C.block_graph(fano)
    with pytest.raises(InvalidArgumentError, match="Steiner"):
        C.block_graph([(0, 1, 2), (0, 1, 3), (2, 3, 4)])
    with pytest.raises(InvalidArgumentError):
        C.block_graph([(0, 1), (2, 3, 4)])
    with pytest.raises(InvalidArgumentError):
        C.block_graph("abc")
    # S(2,2,n): the block graph is T(n)
    assert C.block_graph(list(combinations(range(7), 2))).params == (21, 10, 5, 4)


# ------------------------------------------------------------------------------- graph object
@pytest.mark.parametrize(
    "fn",
    [
        C.petersen_graph,
        C.clebsch_graph,
        lambda: C.paley_graph(13),
        lambda: C.paley_graph(25),
        lambda: C.polar_graph("Sp", 4, 3),
    ],
)
def test_eigenvalues_exact_vs_numpy(fn):
    g = fn()
    exact = g.eigenvalues()
    assert [m for _, m in exact] == [1, exact[1][1], exact[2][1]]
    num = numeric_spectrum(g.adjacency)
    assert len(num) == 3
    # eig_tol (first member of each group) plus the rounding of the exact value to float64
    for (val, mult), (x, c) in zip(exact, num, strict=False):
        ref = float(sympy.N(val, 30))
        assert abs(ref - x) <= eig_tol(g.adjacency) + dot_tol(1, abs(ref)) and mult == c


def test_eigenvalues_irrational_exact():
    (_, _), (r, f), (s, g) = C.paley_graph(13).eigenvalues()
    assert sympy.simplify(r - (-1 + sympy.sqrt(13)) / 2) == 0
    assert sympy.simplify(s - (-1 - sympy.sqrt(13)) / 2) == 0 and f == g == 6


def test_complement_and_open_assignment():
    g = S.srg(16, 5, 0, 2, closed=False)
    assert np.array_equal(g.assignment, g.adjacency) and g.closed is False
    assert g.verify()
    c = g.complement()
    check_graph(c.with_closed(True), (16, 10, 6, 6))
    assert np.array_equal(c.adjacency + g.adjacency + np.eye(16, dtype=np.int64), np.ones((16, 16)))
    G = g.to_networkx()
    assert nx.is_strongly_regular(G) and G.number_of_edges() == 16 * 5 // 2


def test_verify_detects_corruption():
    g = C.petersen_graph()
    bad = np.array(g.adjacency)
    bad[0, 1] = bad[1, 0] = 1 - bad[0, 1]
    with pytest.raises(VerificationError):
        C.StronglyRegularGraph(bad, g.params, "corrupted").verify()
    with pytest.raises(VerificationError):
        C.StronglyRegularGraph(g.adjacency, (10, 3, 0, 2), "wrong mu").verify()
    asym = np.array(g.adjacency)
    asym[0, 1] = 1 - asym[0, 1]
    with pytest.raises(VerificationError):
        C.StronglyRegularGraph(asym, g.params, "asymmetric").verify()
    with pytest.raises(InvalidArgumentError):
        C.StronglyRegularGraph(np.ones((3, 4)), (3, 1, 0, 0), "x")
    with pytest.raises(InvalidArgumentError):
        C.StronglyRegularGraph(g.adjacency, g.params, "x", closed="yes")


# ------------------------------------------------------------------------------- srg() API
@pytest.mark.parametrize(
    "params,condition",
    [
        ((28, 9, 0, 4), "Krein"),
        ((21, 10, 4, 5), "conference graph: v is a sum of two squares"),
        ((49, 16, 3, 6), "known nonexistence"),
        ((57, 14, 1, 4), "known nonexistence"),
        ((10, 3, 0, 2), "k(k-lam-1) = (v-k-1)mu"),
        ((7, 3, 0, 2), "integrality of multiplicities"),
        ((50, 21, 4, 12), "absolute bound"),
    ],
)
def test_srg_impossible(params, condition):
    with pytest.raises(ImpossibleParametersError) as ei:
        S.srg(*params)
    assert ei.value.condition == condition
    assert S.srg(*params, existence=True) is False
    if condition == "known nonexistence":
        assert "Bussemaker" in str(ei.value) or "Wilbrink" in str(ei.value)


def test_srg_known_but_not_buildable():
    assert S.srg(45, 22, 10, 11, existence=True) is True
    with pytest.raises(NotConstructibleError) as ei:
        S.srg(45, 22, 10, 11)
    assert "Mathon" in str(ei.value)
    sug = ei.value.suggestions
    assert sug and all(S.srg(*p, existence=True) is True for p in sug)
    assert all(p[0] == 45 for p in sug[:4])


def test_menon_difference_set_graph():
    """D = S u {0} is a (36,15,6) difference set in Z_6^2: every nonzero element is a difference
    d1 - d2 (d1, d2 in D) exactly 6 times (counted directly)."""
    from collections import Counter

    from gcsim.combinatorics.srg_cayley import MENON_36_CONNECTION

    D = [(0, 0)] + list(MENON_36_CONNECTION)
    assert len(set(D)) == 15 and {((-a) % 6, (-b) % 6) for a, b in D} == set(D)
    diffs = Counter(((a - c) % 6, (b - d) % 6) for a, b in D for c, d in D if (a, b) != (c, d))
    assert len(diffs) == 35 and set(diffs.values()) == {6}
    check_graph(C.menon_graph_36(), (36, 14, 4, 6))
    assert S.srg(36, 14, 4, 6).construction.startswith("Cayley graph of a symmetric (36,15,6) Menon")
    check_graph(S.srg(36, 21, 12, 12), (36, 21, 12, 12))


def test_abelian_cayley_graph_errors():
    with pytest.raises(InvalidArgumentError) as ei:
        C.abelian_cayley_graph([7], [[1]])  # not closed under negation
    assert ei.value.argument == "connection"
    with pytest.raises(InvalidArgumentError):
        C.abelian_cayley_graph([7], [[0], [1], [6]])  # contains 0
    with pytest.raises(InvalidArgumentError):
        C.abelian_cayley_graph([8], [[1], [7]])  # the 8-cycle is not strongly regular
    check_graph(C.abelian_cayley_graph([4, 4], [(1, 0), (3, 0), (0, 1), (0, 3), (1, 1), (3, 3)]), (16, 6, 2, 2))


def test_srg_unknown():
    # (65, 32, 15, 16): conference graph, open problem (Brouwer's table)
    assert S.srg(65, 32, 15, 16, existence=True) is None
    with pytest.raises(NotConstructibleError):
        S.srg(65, 32, 15, 16)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(v=10, k=0, lam=0, mu=0), "k"),
        (dict(v=2, k=1, lam=0, mu=0), "v"),
        (dict(v=10, k=3, lam=-1, mu=1), "lam"),
        (dict(v=10, k=3, lam=0, mu=1.5), "mu"),
        (dict(v=10, k=3, lam=0, mu=1, closed=1), "closed"),
        (dict(v=10, k=3, lam=0, mu=1, existence="yes"), "existence"),
        (dict(v=10, k=9, lam=8, mu=0), "k"),
    ],
)
def test_srg_invalid_arguments(kwargs, name):
    with pytest.raises(InvalidArgumentError) as ei:
        S.srg(**kwargs)
    assert ei.value.argument == name


def test_buildable_srgs_all_build_and_verify():
    """Every buildable parameter set with v <= 64 builds, verifies, and passes the brute-force check."""
    params = S.buildable_srgs(64)
    assert params == sorted(set(params))
    for p in params:
        assert S.srg_feasibility(*p).feasible, p
        g = S.srg(*p)
        assert g.params == p and g.verify()
        assert brute_params(g.adjacency) == p
        assert S.srg(*p, existence=True) is True
    # closed under complements
    for p in params:
        c = C.complement_parameters(*p)
        if c[1] >= 1:
            assert c in params, p


@pytest.mark.skipif(not FIX.exists(), reason="Sage fixture not present")
def test_coverage_against_sage():
    """Sage builds 170 parameter sets with v <= 130 (72 with v <= 64); gcsim builds 146 of them,
    all with v <= 64 but (45, 22, 10, 11) (True for it: KNOWN_EXISTING); up to v = 64 it says False
    exactly where Sage does, and it never contradicts Sage up to v = 130."""
    entries = json.loads(FIX.read_text())["entries"]
    sage_builds = [(e["v"], e["k"], e["lambda"], e["mu"]) for e in entries if e["sage"] is True]
    ours = set(S.buildable_srgs(130))
    missing = [p for p in sage_builds if p not in ours]
    assert len(sage_builds) == 170 and len(missing) == 24
    assert sorted(p for p in missing if p[0] <= 64) == [(45, 22, 10, 11)]
    assert (126, 25, 8, 4) not in missing and (126, 100, 78, 84) not in missing  # J(9,4) at {1,4}, {2,3}
    assert (96, 20, 4, 4) not in missing and (96, 75, 58, 60) not in missing  # the dual of T2*(O)
    assert (100, 36, 14, 12) not in missing and (100, 63, 38, 42) not in missing  # LS_4(10)
    assert (77, 16, 0, 4) not in missing and (100, 22, 0, 6) not in missing  # M22, Higman-Sims
    assert (126, 45, 12, 18) not in missing and (126, 80, 52, 48) not in missing  # NO-(6,3)
    assert (125, 28, 3, 7) not in missing and (125, 96, 74, 72) not in missing  # Payne's P(W(5), x)
    for e in entries:
        p = (e["v"], e["k"], e["lambda"], e["mu"])
        ans = S.srg(*p, existence=True)
        if p[0] <= 64:
            assert ans is e["sage"], p
        elif e["sage"] is True:
            assert ans is not False, p
        elif e["sage"] is False:
            assert ans is not True, p


@pytest.mark.parametrize(
    "fn", [C.petersen_graph, C.clebsch_graph, C.schlafli_graph, lambda: C.polar_graph("Sp", 4, 3), C.gewirtz_graph]
)
def test_krein_parameter_numerically(fn):
    """E_r o E_r (numpy) has the eigenvalue predicted by the Krein formula on the r-eigenspace,
    and is positive semidefinite."""
    g = fn()
    v, k, lam, mu = g.params
    (_, _), (r_exact, f), (s_exact, gm) = g.eigenvalues()
    r, s = float(r_exact), float(s_exact)
    A = g.adjacency.astype(float)
    Er = (A - s * np.eye(v) - (k - s) / v * np.ones((v, v))) / (r - s)
    # Rounding of Er, entrywise (Higham Lemma 3.3): the float r and s, (k − s)/v, two subtractions and
    # the division, about 6 roundings on terms of size W (the last factor: the relative error of the
    # float r − s); |Er| <= W, and the computed Er is within D of the exact one
    W = (np.abs(A) + abs(s) * np.eye(v) + (k + abs(s)) / v) / (r - s) * (1 + (abs(r) + abs(s)) / (r - s))
    D = dot_tol(6, W)
    WD = W + D
    # E_r² = E_r exactly, so Ê² − Ê = E_r Δ + Δ E_r + Δ² − Δ, plus γ_{v+1} for the product and difference
    idem_tol = W @ D + D @ W + D @ D + D + dot_tol(v + 1, WD @ WD + WD)
    assert np.all(np.abs(Er @ Er - Er) <= idem_tol)
    # tr E_r = f: the diagonal errors plus a sum of v terms (Thm 3.1)
    assert abs(np.trace(Er) - f) <= np.trace(D) + dot_tol(v, float(np.trace(WD)))
    H = Er * Er
    # Hadamard square: |Ê∘Ê − E∘E| <= 2 W∘D + D∘D, plus one rounding per entry
    dH = 2 * W * D + D * D + dot_tol(1, WD * WD)
    # eigenvector for r: any column of Er (nonzero)
    j = int(np.argmax(np.abs(Er).sum(axis=0)))
    x = Er[:, j]
    xx = float(x @ x)
    theta = (x @ H @ x) / xx
    # exact prediction (Krein formula, sympy), rounded once to float64
    c1 = (k + r_exact) * (s_exact + 1) ** 2 - (r_exact + 1) * (k + r_exact + 2 * r_exact * s_exact)
    predicted = float(sympy.N(c1 / ((r_exact - s_exact) ** 2 * (k - r_exact)), 30))
    # Rayleigh quotient of Ĥ = H₀ + δH at x = x₀ + δx, x₀ an exact eigenvector of H₀ = E_r∘E_r:
    # xᵀδHx/xᵀx (first order) + δxᵀ(H₀ − θ₀ I)δx/xᵀx (second order, |.| <= 2‖H₀‖ ‖δx‖²/xᵀx), then the
    # two dot products of length v (γ_{2v}), xᵀx and the division (γ_{v+1})
    ax = np.abs(x)
    h_norm = float(np.linalg.norm(H) + np.linalg.norm(dH))  # >= ‖H₀‖_2
    theta_tol = (
        (ax @ dH @ ax + dot_tol(2 * v, ax @ np.abs(H) @ ax)) / xx
        + 2 * h_norm * float(np.sum(D[:, j] ** 2)) / xx
        + dot_tol(v + 1, abs(theta))
        + dot_tol(1, abs(predicted))
    )
    assert abs(theta - predicted) <= theta_tol
    # H₀ is positive semidefinite (Schur product theorem): λ_min(Ĥ) >= −‖δH‖_2 (Weyl), and eigvalsh is
    # backward stable, c v u ‖Ĥ‖_2 (LAPACK §4.7)
    psd_tol = float(np.linalg.norm(dH)) + SAFETY * v * unit_roundoff() * float(np.linalg.norm(H))
    assert np.linalg.eigvalsh(H).min() >= -psd_tol
    # the bounds are rounding-sized, far below the quantities tested (not vacuous)
    assert idem_tol.max() < 1e-6 * np.abs(Er).max() and theta_tol < 1e-6 * max(abs(predicted), 1 / v)


def test_buildable_beyond_64_sample():
    """A deterministic sample of the buildable parameter sets with 64 < v <= 200."""
    params = [p for p in S.buildable_srgs(200) if p[0] > 64 and 0 < p[3] < p[1]]
    assert (81, 20, 1, 6) in params and (85, 20, 3, 5) in params and (70, 27, 12, 9) in params
    for p in params[::12]:
        g = S.srg(*p)
        assert brute_params(g.adjacency) == p
