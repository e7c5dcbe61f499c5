"""CERAR constructions: exactness theorem, Vandermonde seam structure, perturbation closed forms.

Error operators are recomputed here with explicit shift matrices; closed forms are evaluated
from their formulas (docs/theory/50_cerar.md), never from the library's own metrics."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.cerar import CerarDesign, design, errors
from gcsim.cerar.constructions import perturbation_nodes, r_star, vandermonde_complex
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError


def shift(L, c, s):
    S = np.zeros((L, c))
    for tau in range(c):
        S[tau + s, tau] = 1.0
    return S


def products(A, D):
    """P[i][m-1] = D_i S_{m-1} A_{(i-m) mod N} (works for complex arrays too)."""
    N, c, L = D.shape
    return np.array([[D[i] @ shift(L, c, m - 1) @ A[(i - m) % N] for m in range(1, N)]
                     for i in range(N)])


def err_ops(des):
    return products(des.encoders, des.decoders) - np.eye(des.c)


# ----------------------------------------------------------------------------- exact

EXACT_CASES = [(N, c) for N in range(3, 8) for c in range(1, N + 1)] + [(2, 1), (2, 5), (2, 9)]


@pytest.mark.parametrize("N,c", EXACT_CASES)
def test_exact_design_is_exact(N, c):
    des = design(N, c, "exact")
    assert des.method == "exact" and des.decoders.shape == (N, c, c + N - 2)
    assert np.abs(err_ops(des)).max() < 1e-12
    kA = np.array([np.linalg.cond(a) for a in des.encoders])
    if N % c == 0 or N == 2:
        # kappa = 1: permutation encoders (ring all-reduce when c = N)
        assert np.allclose(kA, 1.0, atol=1e-12)
        assert np.all(np.isin(des.encoders, [0.0, 1.0]))
    else:
        # kappa = 1 is impossible when c does not divide N (theorem in docs/theory/50_cerar.md)
        assert np.all(kA > 1 + 1e-6) and np.all(np.isfinite(kA))


def test_exact_three_two_reaches_optimum_sqrt3():
    # (N, c) = (3, 2): three unit lines, consecutive pairs orthogonal is impossible; the best
    # frame (lines 60 degrees apart) has kappa = sqrt(3) = cot(pi/6).
    kA = errors(design(3, 2, "exact")).kappa_encoders
    assert np.allclose(kA, np.sqrt(3))


@pytest.mark.parametrize("N,c", [(3, 4), (4, 5), (5, 11), (3, 7)])
def test_exact_impossible_for_c_above_N(N, c):
    with pytest.raises(ImpossibleParametersError, match="c = .* > N"):
        design(N, c, "exact")
    with pytest.raises(ValueError):            # also a ValueError for generic handlers
        design(N, c, "exact")


@settings(max_examples=20, deadline=None)
@given(N=st.integers(3, 7), c=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_periodic_column_function_theorem(N, c, seed):
    """Sufficiency and the key step of necessity of the exactness theorem:

    with B_j[:, tau] = f(j - tau) for an N-periodic f, D_i[:, l] = f(i - 1 - l) and
    A_j = B_j^{-1} every E_{i,m} vanishes (c <= N, generic f); for c > N the columns tau and
    tau + N of B_j coincide, so rank B_j <= N < c."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((c, N))                       # f(k) = F[:, k mod N]
    f = lambda k: F[:, np.mod(k, N)]                      # noqa: E731
    B = np.stack([f(j - np.arange(c)) for j in range(N)])
    if c > N:
        assert all(np.linalg.matrix_rank(b) <= N for b in B)
        return
    D = np.stack([f(i - 1 - np.arange(c + N - 2)) for i in range(N)])
    A = np.linalg.inv(B)
    assert np.abs(products(A, D) - np.eye(c)).max() < 1e-7 * max(1, np.linalg.cond(B).max())


def test_exact_necessary_structure_shift_relation():
    # in any exact design (N >= 3), B_j[:, tau] = B_{j-1}[:, tau-1] (B_j = A_j^{-1})
    for N, c in [(5, 3), (4, 4), (6, 4), (3, 2)]:
        des = design(N, c, "exact")
        B = np.linalg.inv(des.encoders)
        for j in range(N):
            assert np.allclose(B[j][:, 1:], B[(j - 1) % N][:, :-1], atol=1e-12)


# ----------------------------------------------------------------------------- Vandermonde

@pytest.mark.parametrize("N,c,seed", [(3, 2, 0), (3, 5, 1), (4, 3, 2), (5, 7, 3), (2, 3, 4)])
def test_complex_vandermonde_seam_structure(N, c, seed):
    rng = np.random.default_rng(seed)
    z = (1 + 0.3 * rng.standard_normal(c)) * np.exp(2j * np.pi * rng.random(c))
    A, D = vandermonde_complex(N, z)
    P = products(A, D)
    for i in range(N):
        for m in range(1, N):
            expect = np.eye(c) if i >= m else np.diag(z ** (-N))
            assert np.allclose(P[i, m - 1], expect, atol=1e-8)


@pytest.mark.parametrize("N,c", [(3, 3), (5, 2), (6, 4), (4, 1)])
def test_complex_vandermonde_roots_of_unity_exact(N, c):
    z = np.exp(2j * np.pi * np.arange(c) / N)
    A, D = vandermonde_complex(N, z)
    assert np.allclose(products(A, D), np.eye(c), atol=1e-10)


@pytest.mark.parametrize("N,c,eps", [(3, 4, 0.05), (4, 6, 0.02), (5, 3, 0.1)])
def test_real_vandermonde_error(N, c, eps):
    des = design(N, c, "vandermonde", eps=eps)
    z = 1 + eps * (np.arange(c) - (c - 1) / 2)
    E = err_ops(des)
    for i in range(N):
        for m in range(1, N):
            expect = np.zeros((c, c)) if i >= m else np.diag(z ** (-N) - 1)
            assert np.allclose(E[i, m - 1], expect, atol=1e-6)
    # smaller eps: smaller error, larger kappa
    small = design(N, c, "vandermonde", eps=eps / 4)
    assert errors(small).max_pair_norm < errors(des).max_pair_norm
    assert errors(small).kappa_encoders.max() > errors(des).kappa_encoders.max()


# ----------------------------------------------------------------------------- perturbation

def closed_forms(N, c, eps):
    """Worst pair norm, worst block-row norm and Frobenius sum from the formulas."""
    rs = -(-c // N) - 1
    pair = 1 - (1 + eps) ** (-N * rs)
    levels = [min(N, c - q * N) for q in range(rs + 1)]
    fro_pair = sum(n * ((1 + eps) ** (-N * q) - 1) ** 2 for q, n in enumerate(levels))
    seam_pairs = N * (N - 1) // 2                  # pairs (i, m) with i < m
    return pair, np.sqrt(N - 1) * pair, seam_pairs * fro_pair


@pytest.mark.parametrize("N,c,eps", [(3, 4, 0.1), (3, 5, 0.05), (4, 8, 0.05), (4, 9, 0.1),
                                     (5, 12, 0.02), (6, 7, 0.2), (2, 5, 0.1), (4, 4, 0.3)])
def test_perturbation_closed_forms(N, c, eps):
    des = design(N, c, "perturbation", eps=eps)
    E = err_ops(des)
    pair, row, fro = closed_forms(N, c, eps)
    norms = np.array([[np.linalg.norm(E[i, m], 2) for m in range(N - 1)] for i in range(N)])
    tol = 1e-9 * max(1.0, np.linalg.cond(des.encoders).max())
    for i in range(N):
        for m in range(1, N):
            if i >= m:                               # path does not cross the seam
                assert norms[i, m - 1] < tol
            else:
                assert norms[i, m - 1] == pytest.approx(pair, abs=tol)
    assert np.linalg.norm(np.hstack(list(E[0])), 2) == pytest.approx(row, abs=tol)
    assert np.sum(E ** 2) == pytest.approx(fro, abs=tol)
    assert np.abs(E[N - 1]).max() < tol             # worker N-1 decodes exactly
    e = errors(des)
    assert e.worst_case == pytest.approx(row, abs=tol)
    assert e.max_pair_norm == pytest.approx(pair, abs=tol)


@settings(max_examples=20, deadline=None)
@given(N=st.integers(2, 6), c=st.integers(1, 14), eps=st.floats(0.01, 0.5))
def test_perturbation_seam_matrix_is_diagonal_levels(N, c, eps):
    des = design(N, c, "perturbation", eps=eps)
    E = err_ops(des)
    rs = -(-c // N) - 1
    levels = np.concatenate([np.full(min(N, c - q * N), q) for q in range(rs + 1)])
    expect = np.diag((1 + eps) ** (-N * levels) - 1.0)
    tol = 1e-10 * max(1.0, np.linalg.cond(des.encoders).max())
    if N > 1:
        assert np.allclose(E[0, N - 2], expect, atol=tol)  # R^{-N} - I in block order
    pair, row, _ = closed_forms(N, c, eps)
    assert errors(des).worst_case == pytest.approx(row, abs=tol)


@pytest.mark.parametrize("N,c,eps", [(3, 5, 0.1), (4, 9, 0.05), (5, 7, 0.2)])
def test_real_form_matches_complex_nodes(N, c, eps):
    """The rotation-block real form is unitarily equivalent to the complex Vandermonde family
    with the nodes omega^s (1+eps)^q: same singular values of every E_{i,m} and A_j."""
    z = perturbation_nodes(N, c, eps)
    # independent node check: level q has min(N, c-qN) nodes of modulus (1+eps)^q, each a root
    rs = r_star(N, c)
    mods = np.round(np.log(np.abs(z)) / np.log1p(eps)).astype(int)
    assert sorted(mods.tolist()) == sorted(q for q in range(rs + 1) for _ in range(min(N, c - q * N)))
    assert np.allclose((z / np.abs(z)) ** N, 1)
    assert np.allclose(np.sort_complex(np.round(z, 12)), np.sort_complex(np.round(np.conj(z), 12)))
    Ac, Dc = vandermonde_complex(N, z)
    Pc = products(Ac, Dc) - np.eye(c)
    des = design(N, c, "perturbation", eps=eps)
    Pr = err_ops(des)
    for i in range(N):
        for m in range(N - 1):
            assert np.allclose(np.linalg.svd(Pr[i, m], compute_uv=False),
                               np.linalg.svd(Pc[i, m], compute_uv=False), atol=1e-8)
    for j in range(N):
        assert np.linalg.cond(des.encoders[j]) == pytest.approx(np.linalg.cond(Ac[j]), rel=1e-6)


@pytest.mark.parametrize("N,c", [(3, 5), (4, 7), (3, 8), (4, 10)])
def test_kappa_grows_like_eps_power(N, c):
    rs = r_star(N, c)
    eps = np.geomspace(1e-4, 1e-2, 6)
    kap = [max(np.linalg.cond(a) for a in design(N, c, "perturbation", eps=e).encoders) for e in eps]
    slope = np.polyfit(np.log(eps), np.log(kap), 1)[0]
    assert slope == pytest.approx(-rs, abs=0.1)


def test_perturbation_small_c_is_exact():
    for N, c in [(3, 3), (5, 4), (4, 1)]:
        assert np.abs(err_ops(design(N, c, "perturbation", eps=0.2))).max() < 1e-12


# ----------------------------------------------------------------------------- dispatch / input

def test_optimized_is_dispatched_lazily(monkeypatch):
    calls = {}

    def fake(N, c, kappa=None, seed=0, **kw):
        calls.update(N=N, c=c, kappa=kappa, seed=seed, **kw)
        return design(N, c, "perturbation", eps=0.1)

    mod = types.ModuleType("gcsim.cerar.optimize")
    mod.optimized_design = fake
    monkeypatch.setitem(sys.modules, "gcsim.cerar.optimize", mod)
    import gcsim.cerar as pkg
    monkeypatch.setattr(pkg, "optimize", mod, raising=False)
    out = design(4, 8, "optimized", kappa=50.0, seed=3, iters=2)
    assert isinstance(out, CerarDesign)
    assert calls == {"N": 4, "c": 8, "kappa": 50.0, "seed": 3, "iters": 2}


@pytest.mark.parametrize("kwargs,arg", [
    (dict(N=1, c=2, method="perturbation"), "N"),
    (dict(N=3, c=0, method="perturbation"), "c"),
    (dict(N=3, c=4, method="perturbation", eps=-0.1), "eps"),
    (dict(N=3, c=4, method="perturbation", eps=float("nan")), "eps"),
    (dict(N=3, c=4, method="optimized", kappa=0.5), "kappa"),
    (dict(N=3, c=4, method="perturbation", kappa=10.0), "kappa"),
    (dict(N=3, c=4, method="magic"), "method"),
    (dict(N=3, c=4, method="vandermonde", eps=1.0), "eps"),
    (dict(N=3, c=4, method="perturbation", eps=0.0), "eps"),
    (dict(N=3, c=2, method="exact", basis="unit"), "basis"),
    (dict(N=3, c=2, method="exact", basis="bogus"), "basis"),
    (dict(N=3, c=4, method="vandermonde", nodes=[1, 2]), "nodes"),
])
def test_bad_input(kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        design(**kwargs)


def test_vandermonde_complex_bad_nodes():
    for nodes in ([], [0.0, 1.0], [1.0, 1.0], [np.nan]):
        with pytest.raises(InvalidArgumentError, match="nodes"):
            vandermonde_complex(3, nodes)
