"""Weighted expander assignments and the weighted encoder (docs/theory.md §48.1, §48.2).

Every identity is checked against an independent computation: networkx's own generators
(``margulis_gabber_galil_graph``, ``chordal_cycle_graph``) for the multiplicities, numpy's general
eigensolver on the networkx matrices for the spectra, and numpy least squares / direct sums over every
straggler pattern for the errors.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from exact_lstsq import checked_lstsq
from gcsim.catalogue.kinds import KINDS
from gcsim.coding.evaluate import fixed_decoder_error, optimal_error
from gcsim.coding.schemes import Scheme, encode
from gcsim.combinatorics.expanders import (
    MGG_LAMBDA_BOUND,
    ChordalCycle,
    WeightedMargulisGabberGalil,
    chordal_cycle,
    weighted_margulis_gabber_galil,
)
from gcsim.errors import (
    CatalogueError,
    ImpossibleParametersError,
    InvalidArgumentError,
    SizeLimitError,
    VerificationError,
)
from tolerances import SAFETY, dot_tol, lstsq_tol, unit_roundoff

PRIMES = [2, 3, 5, 7, 11, 13, 29]


def _nx_operator(G: nx.MultiGraph, nodes: list) -> np.ndarray:
    """networkx's multigraph as an operator: off-diagonal = parallel edges, a loop counts 2 (its degree)."""
    A = nx.to_numpy_array(G, nodelist=nodes, dtype=np.int64)
    return A + np.diag(np.diag(A))


def _nontrivial(W: np.ndarray) -> float:
    """max |λ| over the eigenvalues of W other than one copy of its row sum (general eigensolver)."""
    ev = np.linalg.eigvals(W.astype(float))
    d = W.sum(axis=1)[0]
    k = int(np.argmin(np.abs(ev - d)))
    return float(np.max(np.abs(np.delete(ev, k))))


@pytest.mark.parametrize("m", range(2, 10))
def test_mgg_weights_match_networkx(m):
    g = weighted_margulis_gabber_galil(m)
    nodes = [(x, y) for x in range(m) for y in range(m)]
    G = nx.margulis_gabber_galil_graph(m)
    assert np.array_equal(g.weights, _nx_operator(G, nodes))
    assert all(deg == 8 for _, deg in G.degree())  # networkx counts a loop twice, as W does
    assert np.array_equal(g.assignment, (g.weights > 0).astype(int))


@pytest.mark.parametrize("p", PRIMES)
def test_chordal_cycle_weights_match_networkx(p):
    # networkx adds every cycle edge and chord from both ends (degree 6): its operator is 2 W
    g = chordal_cycle(p)
    G = nx.chordal_cycle_graph(p)
    assert np.array_equal(2 * g.weights, _nx_operator(G, list(range(p))))
    assert all(deg == 6 for _, deg in G.degree())
    loops = [int(v) for v in np.flatnonzero(np.diag(g.weights))]
    assert loops == sorted({0, 1, p - 1})  # the fixed points of x -> x^{-1} (and 0 -> 0)


@pytest.mark.parametrize("m", range(2, 13))
def test_mgg_gabber_galil_bound(m):
    g = weighted_margulis_gabber_galil(m)
    nodes = [(x, y) for x in range(m) for y in range(m)]
    lam = _nontrivial(_nx_operator(nx.margulis_gabber_galil_graph(m), nodes))
    # the general eigensolver is backward stable: |Δλ| <= c n u ‖W‖ (‖W‖₂ = 8), both ways
    tol = SAFETY * m * m * unit_roundoff() * 8 * 2
    assert abs(g.nontrivial_eigenvalue() - lam) <= tol
    assert lam + tol <= MGG_LAMBDA_BOUND
    assert g.verify() is True


@pytest.mark.parametrize("p", PRIMES)
def test_chordal_cycle_is_a_nonbipartite_connected_expander(p):
    g = chordal_cycle(p)
    G = nx.Graph(nx.chordal_cycle_graph(p))
    assert nx.is_connected(G) and not nx.is_bipartite(G)
    lam = _nontrivial(2 * g.weights) / 2
    assert lam < 3 - SAFETY * p * unit_roundoff() * 3
    assert abs(g.nontrivial_eigenvalue() - lam) <= SAFETY * p * unit_roundoff() * 3 * 2


def test_factories_refuse_bad_parameters():
    with pytest.raises(ImpossibleParametersError, match="p prime"):
        chordal_cycle(9)
    with pytest.raises(InvalidArgumentError, match="^p:"):
        chordal_cycle(1)
    with pytest.raises(InvalidArgumentError, match="^m:"):
        weighted_margulis_gabber_galil(1)
    with pytest.raises(SizeLimitError, match="^m:"):
        weighted_margulis_gabber_galil(100)


def test_verify_catches_wrong_weights():
    g = weighted_margulis_gabber_galil(3)
    W = np.array(g.weights)
    W[0, 1] += 1
    W[1, 0] += 1  # still symmetric, no longer the MGG multiplicities nor 8-regular
    bad = WeightedMargulisGabberGalil(W, (3,), "tampered", 8)
    with pytest.raises(VerificationError, match="multiplicities"):
        bad.verify()
    bad_c = ChordalCycle(np.ones((5, 5), dtype=int), (5,), "tampered", 3)
    with pytest.raises(VerificationError):
        bad_c.verify()


def test_round_trip_refuses_tampered_weights():
    g = chordal_cycle(7)
    arrays = g.to_arrays()
    W = np.array(arrays["weights"])
    W[0, 0] = 2
    with pytest.raises(CatalogueError, match="weights differ"):
        ChordalCycle.from_arrays({**arrays, "weights": W}, g.bundle_metadata())
    with pytest.raises(CatalogueError, match="integer"):
        ChordalCycle.from_arrays({**arrays, "weights": W.astype(float)}, g.bundle_metadata())
    assert ChordalCycle.from_arrays(arrays, g.bundle_metadata()).verify()


def test_catalogue_knows_the_new_kinds():
    assert KINDS["weighted_margulis_gabber_galil"] is WeightedMargulisGabberGalil
    assert KINDS["chordal_cycle"] is ChordalCycle


def test_html_shows_the_weights():
    html = weighted_margulis_gabber_galil(3)._repr_html_()
    assert "WeightedMargulisGabberGalil" in html and "degree" in html and "<svg" in html


# ---------------------------------------------------------------------------------------------
# the weighted encoder


GRAPHS = [lambda: chordal_cycle(7), lambda: chordal_cycle(11), lambda: weighted_margulis_gabber_galil(3)]
GRAPH_IDS = ["chordal7", "chordal11", "mgg3"]


def _all_masks(n):
    return np.array(list(itertools.product([False, True], repeat=n)), dtype=bool)


@pytest.mark.parametrize("make", GRAPHS, ids=GRAPH_IDS)
def test_weighted_code_is_the_normalized_adjacency(make):
    g = make()
    sch = encode(g, 1, "weighted")
    assert np.array_equal(sch.B, g.weights / g.degree)
    assert np.array_equal(sch.decoder, np.ones((g.num_workers, 1)))
    assert sch.verify() is True
    back = Scheme.from_arrays(sch.to_arrays(), sch.bundle_metadata())
    assert np.array_equal(back.B, sch.B) and np.array_equal(back.extras["weights"], g.weights)


@pytest.mark.parametrize("make", GRAPHS, ids=GRAPH_IDS)
def test_fixed_decoder_error_and_the_expander_bound(make):
    # Theorem 48.3: with x = (n/|F|) 1_F, err_x = ‖(n/(|F| d)) W 1_F - 1‖² <= (λ/d)² n s / |F|
    g = make()
    n, d = g.num_workers, g.degree
    W = g.weights.astype(float)
    sch = encode(g, 1, "weighted")
    masks = _all_masks(n)
    masks = masks[masks.sum(axis=1) > 0]
    got = fixed_decoder_error(sch, masks, rescale="arrivals")
    opt = optimal_error(sch, masks, progress=False)
    # λ from the general eigensolver, rounded up by its backward-error bound c n u ‖W‖₂
    lam = _nontrivial(np.array(g.weights)) + SAFETY * n * unit_roundoff() * d
    for mk, e_fixed, e_opt in zip(masks, got, opt, strict=True):
        f = int(mk.sum())
        direct = float(np.sum(((n / (f * d)) * (W @ mk.astype(float)) - 1.0) ** 2))
        scale = n * (n / f) ** 2
        assert abs(e_fixed - direct) <= dot_tol(n, scale)
        bound = (lam / d) ** 2 * n * (n - f) / f
        assert direct <= bound + dot_tol(n, scale)
        # optimal decoding is no worse (independent least squares: lstsq at full column rank, exact
        # rationals or a pivoted QR where B_F is rank-deficient, tests/exact_lstsq.py)
        BF = sch.B[:, mk]
        ls, kappa = checked_lstsq(BF, np.ones(n))
        assert abs(e_opt - ls) <= lstsq_tol(kappa, n, f, n)
        assert e_opt <= e_fixed + dot_tol(n, scale)


@pytest.mark.parametrize("make", GRAPHS, ids=GRAPH_IDS)
def test_general_spectral_bound_specializes_to_the_weighted_one(make):
    # chapter 46's bound for B = W/d, X_0 = 1 has σ_{X_0} = λ/d: it is Theorem 48.3's (λ/d)² n s / f
    from gcsim.coding.bounds import spectral_decoder_upper_bound

    g = make()
    n, d = g.num_workers, g.degree
    sch = encode(g, 1, "weighted")
    lam = _nontrivial(np.array(g.weights))
    # λ here is within dl of the truth (backward-stable eigensolver); chapter 46's σ is enlarged past its
    # SVD rounding by 10 p eps ‖M‖_F, M = (W/d)(I - J/n): the two bounds must agree within those margins
    dl = SAFETY * n * unit_roundoff() * d
    M = sch.B - sch.B.mean(axis=1, keepdims=True)
    margin = 10 * n * np.finfo(float).eps * np.linalg.norm(M)
    for s in range(1, n):
        ratio = n * s / (n - s)
        theirs = spectral_decoder_upper_bound(sch, s)
        lower = ((lam - dl) / d) ** 2 * ratio
        upper = ((lam + dl) / d + margin) ** 2 * ratio
        assert lower - dot_tol(n, lower) <= theirs <= upper + dot_tol(n, upper)


def test_weighted_encoder_with_blocks():
    g = chordal_cycle(7)
    sch = encode(g, 2, "weighted", eps=0.1, seed=3)
    D = sch.diagonals
    for k in range(2):
        assert np.array_equal(sch.block(k), g.weights * D[k][None, :] / 3)
    assert sch.verify() is True
    assert np.array_equal(encode(g, 2, "weighted", eps=0.1, seed=3).B, sch.B)  # same seed, same numbers


def test_weighted_encoder_accepts_a_matrix_and_refuses_bad_weights():
    W = np.array([[2, 1], [1, 2]])
    assert np.array_equal(encode(W, 1, "weighted").B, W / 3)
    with pytest.raises(InvalidArgumentError, match="non-negative integers"):
        encode(np.array([[1.5, 0.0], [0.0, 1.0]]), 1, "weighted")
    with pytest.raises(InvalidArgumentError, match="non-negative integers"):
        encode(np.array([[-1, 1], [1, 1]]), 1, "weighted")
    with pytest.raises(InvalidArgumentError, match="held by no worker"):
        encode(np.array([[0, 0], [1, 1]]), 1, "weighted")
    with pytest.raises(InvalidArgumentError, match="^eps:"):
        encode(W, 1, "weighted", eps=0.1)


def test_verify_catches_a_tampered_weighted_scheme():
    sch = encode(chordal_cycle(5), 1, "weighted")
    arrays = sch.to_arrays()
    W = np.array(arrays["extras.weights"])
    W[0, 1] += 1  # the support stays, B no longer equals W/w̄
    with pytest.raises(CatalogueError, match="W diag"):
        Scheme.from_arrays({**arrays, "extras.weights": W}, sch.bundle_metadata())


def test_other_encoders_use_the_support():
    g = weighted_margulis_gabber_galil(3)
    sch = encode(g, 2, "rd", seed=1)
    assert np.array_equal(sch.assignment, g.assignment)
