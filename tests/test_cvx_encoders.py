"""The convex-optimized encoders (theory §43.1-43.3): slem-circulant and fastest-mixing.

Independent checks: SLEMs from ``numpy.linalg.eigvals`` of the built matrix (not the FFT the code
uses), closed forms (Parseval's lower bound and its equality on difference sets, ``cos(π/n)`` for two
consecutive offsets and for the path), a grid search over the simplex, the networkx random regular
baseline, and the spectral bound of Corollary 43.3 on every pattern against ``numpy.linalg.lstsq`` (exact
rationals where ``B_F`` is rank-deficient, tests/exact_lstsq.py).
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from exact_lstsq import checked_lstsq
from gcsim.coding import encode
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.encoders.fastest_mixing import fastest_mixing_chain, reference_chain
from gcsim.coding.encoders.slem_circulant import (
    best_circulant,
    circulant_assignment,
    circulant_support,
    optimize_circulant,
)
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.verify import verify_bounds
from gcsim.errors import InvalidArgumentError, SizeLimitError
from tolerances import dot_tol, lstsq_tol

pytest.importorskip("cvxpy")

#: SCS solves to eps = 1e-9; the optimal values below are compared with closed forms to this.
SOLVER_TOL = 1e-6


def _slem_eig(M: np.ndarray) -> float:
    """Second-largest eigenvalue modulus from the general eigensolver (the top one is 1 here)."""
    mods = np.sort(np.abs(np.linalg.eigvals(M)))[::-1]
    return float(mods[1])


def _baseline(n: int, d: int) -> float:
    A = nx.to_numpy_array(nx.random_regular_graph(d, n, seed=42))
    return float(np.sort(np.abs(np.linalg.eigvalsh(A)))[::-1][1] / d)


# ------------------------------------------------------------------------------------------------
# slem-circulant


@pytest.mark.parametrize("n, d", [(8, 3), (10, 3), (12, 4), (16, 3), (16, 5), (20, 4), (24, 5), (30, 3)])
def test_optimized_circulant_slem_not_above_the_random_regular_baseline(n, d):
    A, c, best = best_circulant(n, d, tries=5, seed=0)
    sch = encode(A, 1, "slem-circulant")
    sch.verify()
    assert abs(sch.options["slem"] - best) <= 1e3 * n * np.finfo(float).eps
    slem = _slem_eig(sch.B)
    assert abs(slem - sch.options["slem"]) <= 1e3 * n * np.finfo(float).eps
    assert slem <= _baseline(n, d), (n, d, slem, _baseline(n, d))


@pytest.mark.parametrize("n, S", [(7, [0, 1, 3]), (13, [0, 1, 3, 9]), (11, [1, 3, 4, 5, 9])])
def test_difference_sets_meet_the_parseval_bound(n, S):
    # a (v, k, λ) difference set: |ĉ_k|² = (k - λ)/k² for every k ≠ 0 (Theorem 43.2(c))
    c, slem, _ = optimize_circulant(n, S)
    d = len(S)
    lower = np.sqrt((n / d - 1) / (n - 1))
    assert abs(slem - lower) <= SOLVER_TOL
    assert abs(_slem_eig(encode(circulant_assignment(n, S), 1, "slem-circulant").B) - lower) <= SOLVER_TOL


@pytest.mark.parametrize("n", [5, 8, 13])
def test_two_consecutive_offsets_give_cos_pi_over_n(n):
    # |a + (1 - a) ω^k|² = 1 - 2a(1 - a)(1 - cos 2πk/n), least at a = 1/2: cos(π/n)
    c, slem, _ = optimize_circulant(n, [0, 1])
    assert abs(slem - np.cos(np.pi / n)) <= SOLVER_TOL


def test_circulant_optimum_below_a_grid_search_and_above_parseval():
    n, S = 9, np.array([0, 1, 2])
    _, slem, status = optimize_circulant(n, S)
    k = np.arange(1, n)
    step = 1 / 300
    grid = []
    for a in np.arange(0, 1 + step / 2, step):
        for b in np.arange(0, 1 - a + step / 2, step):
            c = np.array([a, b, max(0.0, 1 - a - b)])
            grid.append(np.abs(np.exp(2j * np.pi * np.outer(k, S) / n) @ c).max())
    best = min(grid)
    assert slem <= best + SOLVER_TOL
    # the SLEM is 1-Lipschitz in ‖c‖₁ and the grid is within 2 steps of every point of the simplex
    assert slem >= best - 2 * step
    assert status != "uniform"  # uniform weights are not optimal on consecutive offsets
    for c_lb in (slem,):
        assert c_lb * c_lb >= (n / 3 - 1) / (n - 1) - SOLVER_TOL


def test_circulant_never_loses_to_uniform_weights():
    rng = np.random.default_rng(1)
    for _ in range(6):
        n = int(rng.integers(6, 20))
        S = np.sort(rng.choice(n, size=int(rng.integers(2, n)), replace=False))
        c, slem, _ = optimize_circulant(n, S)
        uniform = np.zeros(n)
        uniform[S] = 1 / S.size
        assert slem <= _slem_eig(np.array([np.roll(uniform, i) for i in range(n)])) + 1e-12
        assert np.all(c >= 0) and abs(c.sum() - 1) <= dot_tol(n, 1.0) and np.all(c[np.setdiff1d(range(n), S)] == 0)


def test_circulant_assignment_and_support_round_trip():
    A = circulant_assignment(9, [0, 2, 5])
    assert circulant_support(A).tolist() == [0, 2, 5]
    assert np.all(A.sum(axis=0) == 3) and np.all(A.sum(axis=1) == 3)
    assert circulant_support(cyclic_repetition_assignment(7, 2)).tolist() == [0, 5, 6]
    A2 = A.copy()
    A2[0, 1] = 1
    assert circulant_support(A2) is None


# ------------------------------------------------------------------------------------------------
# fastest-mixing


@pytest.mark.parametrize("n", [4, 6, 9])
def test_fastest_mixing_on_a_path_is_cos_pi_over_n(n):
    # Boyd, Diaconis, Parrilo & Xiao (2009): the path's fastest chain has 1/2 on every edge, SLEM cos(π/n)
    A = nx.to_numpy_array(nx.path_graph(n), dtype=np.int64) + np.eye(n, dtype=np.int64)
    P, slem, _ = fastest_mixing_chain(A)
    assert abs(slem - np.cos(np.pi / n)) <= SOLVER_TOL
    assert abs(_slem_eig(P) - slem) <= 1e3 * n * np.finfo(float).eps


def test_fastest_mixing_on_the_complete_graph_is_j_over_n():
    n = 6
    P, slem, _ = fastest_mixing_chain(np.ones((n, n), dtype=np.int64))
    assert slem <= SOLVER_TOL and np.max(np.abs(P - 1 / n)) <= SOLVER_TOL


@pytest.mark.parametrize("n, d, loops", [(10, 3, True), (12, 4, True), (12, 3, False), (16, 5, False)])
def test_fastest_mixing_beats_the_reference_chain_and_is_feasible(n, d, loops):
    A = nx.to_numpy_array(nx.random_regular_graph(d, n, seed=3), dtype=np.int64)
    if loops:
        A = A + np.eye(n, dtype=np.int64)
    sch = encode(A, 1, "fastest-mixing")
    sch.verify()
    P = sch.B
    assert np.array_equal(P, P.T) and np.all(P >= 0) and np.all(P[A == 0] == 0)
    assert np.max(np.abs(P.sum(axis=1) - 1)) <= 4 * n * np.finfo(float).eps
    ref = reference_chain(A)
    assert _slem_eig(P) <= _slem_eig(ref) + 1e-12
    # Raviv et al.'s B = Adj/d is feasible without loops: the optimum is at most its SLEM
    if not loops:
        assert _slem_eig(P) <= _slem_eig(A / d) + 1e-12


def test_fastest_mixing_refuses_what_has_no_symmetric_stochastic_matrix():
    path = nx.to_numpy_array(nx.path_graph(4), dtype=np.int64)  # no loops, not regular: no reference chain
    with pytest.raises(InvalidArgumentError, match="loop"):
        encode(path, 1, "fastest-mixing")
    with pytest.raises(InvalidArgumentError, match="symmetric"):
        encode(np.array([[1, 1], [0, 1]]), 1, "fastest-mixing")
    with pytest.raises(InvalidArgumentError, match="m = 1"):
        encode(np.eye(3, dtype=np.int64), 2, "fastest-mixing")
    with pytest.raises(InvalidArgumentError, match="solver"):
        encode(np.eye(3, dtype=np.int64), 1, "fastest-mixing", solver="GUROBI")
    with pytest.raises(SizeLimitError):
        encode(np.eye(401, dtype=np.int64), 1, "fastest-mixing")


def test_slem_circulant_refuses_bad_inputs():
    with pytest.raises(InvalidArgumentError, match="circulant"):
        encode(nx.to_numpy_array(nx.petersen_graph(), dtype=np.int64), 1, "slem-circulant")
    with pytest.raises(InvalidArgumentError, match="m = 1"):
        encode(circulant_assignment(6, [0, 1]), 2, "slem-circulant")
    with pytest.raises(InvalidArgumentError, match="support"):
        circulant_assignment(5, [0, 5])
    with pytest.raises(InvalidArgumentError, match="solver"):
        optimize_circulant(5, [0, 1], solver="cplex")
    with pytest.raises(SizeLimitError):
        optimize_circulant(401, [0, 1])


# ------------------------------------------------------------------------------------------------
# the bound (Corollary 43.3) on every pattern


def _schemes_for_the_bound():
    yield encode(circulant_assignment(10, [0, 1, 4]), 1, "slem-circulant")
    yield encode(best_circulant(12, 3, tries=3, seed=2)[0], 1, "slem-circulant")
    A = nx.to_numpy_array(nx.random_regular_graph(3, 10, seed=5), dtype=np.int64)
    yield encode(A + np.eye(10, dtype=np.int64), 1, "fastest-mixing")
    yield encode(A, 1, "fastest-mixing")


@pytest.mark.parametrize("k", range(4))
def test_slem_bound_on_every_pattern(k):
    sch = list(_schemes_for_the_bound())[k]
    n = sch.n
    B = sch.B
    slem = _slem_eig(B)
    for s in (1, 2, 3):
        f = n - s
        bound = slem**2 * n * s / f
        for S in itertools.combinations(range(n), s):
            F = np.setdiff1d(np.arange(n), S)
            fixed = float(np.sum((B[:, F] @ np.full(f, n / f) - 1) ** 2))
            # optimal error: lstsq at full column rank, exact rationals / pivoted QR where B_F is
            # rank-deficient (tests/exact_lstsq.py); its rounding c n f u κ(B_F) n (Higham Thm 20.3)
            opt, kappa = checked_lstsq(B[:, F], np.ones(n))
            tol = dot_tol(n * n, bound + n)
            assert opt <= fixed + tol + lstsq_tol(kappa, n, f, n) and fixed <= bound + tol, (
                sch.method,
                S,
                fixed,
                bound,
            )
    report = verify_bounds(sch, straggler_model("all", n, s=2), bounds=["spectral_decoder_upper"])
    assert report.ok


# ------------------------------------------------------------------------------------------------
# the advisor: not tried by default; a registered copy with an advisor place is a candidate


def test_advisor_tries_a_registered_copy_where_it_applies():
    import dataclasses

    from gcsim.advisor import advise
    from gcsim.advisor.assess import advisor_encoders
    from gcsim.coding.encoders import get_encoder, register_encoder, unregister_encoder

    assert "fastest-mixing" not in advisor_encoders() and "slem-circulant" not in advisor_encoders()
    register_encoder(dataclasses.replace(get_encoder("fastest-mixing"), name="fmmc-copy", advisor=50))
    try:
        adv = advise(12, 4, 1, "fixed:2", families=["random-regular", "cyclic"], progress=False)
        names = [dict(r)["name"] for r in adv.rows]
        assert any(nm.startswith("random 3-regular") and nm.endswith("/ fmmc-copy") for nm in names)
        reasons = {d.reason for d in adv.dropped_items if d.encoder == "fmmc-copy"}
        assert reasons == {"needs a symmetric square assignment (a graph)"}  # the cyclic assignment
        adv2 = advise(12, 4, 2, "fixed:2", families=["random-regular"], progress=False)
        assert {d.reason for d in adv2.dropped_items if d.encoder == "fmmc-copy"} == {"an m = 1 code"}
    finally:
        unregister_encoder("fmmc-copy")
