"""gcsim.cerar.constructions against independent computations (issue #32 item 7).

Written against the mutants ``scripts/mutation.py cerar.constructions`` found alive.  Every array
is rebuilt here from the formulas of docs/theory/50_cerar.md: encoders A_j = B_j^{-1} with
B_j[:, tau] = f(j - tau) and decoders D_i[:, l] = f(i - 1 - l), where f(k) = R^k v is computed by
powering an explicit block-diagonal R (numpy.linalg.matrix_power), not by the closed form the
module uses; the exact design's root choice is checked against a brute-force search over every
conjugate-closed subset, and the perturbation design against its closed-form seam error.
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pytest

from gcsim import limits
from gcsim.cerar.constructions import (
    _blocks,
    _column_function,
    _conjugate_closed,
    exact_design,
    perturbation_design,
    perturbation_nodes,
    r_star,
    vandermonde_complex,
    vandermonde_design,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, SizeLimitError


def _power(R: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.matrix_power(R if k >= 0 else np.linalg.inv(R), abs(k))


def _rotation_system(blocks: list[tuple[float, float, str]]) -> tuple[np.ndarray, np.ndarray]:
    """R block-diagonal (rho cos theta for "r", rho Rot(theta) for "p") and v (1 or (sqrt 2, 0))."""
    size = sum(1 if kind == "r" else 2 for _, _, kind in blocks)
    R, v = np.zeros((size, size)), np.zeros(size)
    at = 0
    for rho, theta, kind in blocks:
        if kind == "r":
            R[at, at], v[at] = rho * math.cos(theta), 1.0
            at += 1
        else:
            R[at : at + 2, at : at + 2] = rho * np.array(
                [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]
            )
            v[at] = math.sqrt(2.0)
            at += 2
    return R, v


def _design_arrays(N: int, c: int, f) -> tuple[np.ndarray, np.ndarray]:
    L = c + N - 2
    B = np.stack([np.column_stack([f(j - tau) for tau in range(c)]) for j in range(N)])
    D = np.stack([np.column_stack([f(i - 1 - l) for l in range(L)]) for i in range(N)])
    return np.linalg.inv(B), D


# ----------------------------------------------------------------------------- small pieces


def test_r_star_is_ceil_c_over_n_minus_one():
    for N in range(2, 9):
        for c in range(1, 30):
            assert r_star(N, c) == math.ceil(c / N) - 1


def test_conjugate_closed_exponents_are_the_lowest_frequencies():
    for N in range(2, 12):
        for k in range(1, N + 1):
            got = _conjugate_closed(N, k)
            if k == N:
                expected = set(range(N))
            else:
                expected = ({0} if k % 2 else set()) | {s % N for p in range(1, k // 2 + 1) for s in (p, -p)}
            assert len(got) == k and set(got) == expected, (N, k, got)


def test_blocks_group_reals_then_pairs():
    assert _blocks(4, [0, 1, 2, 3]) == [(0, "r"), (1, "p"), (2, "r")]
    assert _blocks(6, [5, 1, 3, 0]) == [(0, "r"), (1, "p"), (3, "r")]
    assert _blocks(7, [6, 1, 0, 2, 5]) == [(0, "r"), (1, "p"), (2, "p")]
    assert _blocks(8, [3, 5, 4]) == [(3, "p"), (4, "r")]


def test_column_function_is_r_to_the_k_times_v():
    blocks = [(1.3, 0.0, "r"), (0.7, math.pi, "r"), (1.1, 0.9, "p"), (0.8, 2.2, "p")]
    R, v = _rotation_system(blocks)
    ks = np.arange(-4, 6)
    got = _column_function(5, blocks, ks)
    expected = np.column_stack([_power(R, int(k)) @ v for k in ks])
    assert got.shape == (6, ks.size)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_perturbation_nodes_by_hand():
    i = 1j
    np.testing.assert_allclose(perturbation_nodes(4, 4, 0.5), [1, i, -i, -1], atol=1e-15)
    np.testing.assert_allclose(perturbation_nodes(4, 6, 0.5), [1, i, -i, -1, 1.5 * i, -1.5 * i], atol=1e-15)
    np.testing.assert_allclose(perturbation_nodes(4, 7, 0.5), [1, i, -i, -1, 1.5, 1.5 * i, -1.5 * i], atol=1e-15)
    w = np.exp(2j * np.pi / 3)
    np.testing.assert_allclose(
        perturbation_nodes(3, 8, 1.0), [1, w, w.conj(), 2, 2 * w, 2 * w.conj(), 4 * w, 4 * w.conj()]
    )
    np.testing.assert_allclose(perturbation_nodes(5, 1, 0.0), [1.0])


# ----------------------------------------------------------------------------- exact design


def _conjugate_closed_subsets(N: int, c: int) -> list[tuple[int, ...]]:
    return [
        s
        for s in combinations(range(N), c)
        if all((-x) % N in s for x in s)  # brute force over all c-subsets of Z_N
    ]


def _vandermonde_kappa(N: int, c: int, exps) -> float:
    z = np.exp(2j * np.pi * np.array(exps) / N)
    return float(np.linalg.cond(np.array([[zk ** (-t) for t in range(c)] for zk in z])))


@pytest.mark.parametrize(
    "N,c", [(3, 2), (5, 2), (5, 3), (5, 4), (6, 4), (6, 5), (7, 3), (7, 4), (8, 3), (8, 5), (9, 4)]
)
def test_exact_roots_design_attains_the_brute_force_optimum(N, c):
    d = exact_design(N, c, basis="roots")
    best = min(_vandermonde_kappa(N, c, s) for s in _conjugate_closed_subsets(N, c))
    exps = d.metadata["exponents"]
    assert tuple(exps) in _conjugate_closed_subsets(N, c)
    assert _vandermonde_kappa(N, c, exps) == pytest.approx(best, rel=1e-9)
    assert np.linalg.cond(d.encoders[0]) == pytest.approx(best, rel=1e-7)
    assert np.abs(d.error_operators()).max() < 1e-9
    # the arrays from R^k v with the chosen exponents
    R, v = _rotation_system([(1.0, 2 * np.pi * s / N, kind) for s, kind in _blocks(N, list(exps))])
    A, D = _design_arrays(N, c, lambda k: _power(R, k) @ v)
    np.testing.assert_allclose(d.encoders, A, atol=1e-9)
    np.testing.assert_allclose(d.decoders, D, atol=1e-9)
    assert d.method == "exact" and d.metadata["basis"] == "roots"


def test_exact_roots_design_beyond_the_search_uses_the_lowest_frequencies():
    # 19 pairs choose 6 = 27,132 subsets > 4096: no search, the lowest frequencies +-1..+-6
    d = exact_design(40, 12, basis="roots")
    assert d.metadata["exponents"] == sorted({s % 40 for p in range(1, 7) for s in (p, -p)})
    assert np.abs(d.error_operators()).max() < 1e-8


@pytest.mark.parametrize("N,c", [(4, 2), (6, 3), (6, 6), (5, 5), (4, 1)])
def test_exact_unit_design_is_the_cyclic_permutation(N, c):
    d = exact_design(N, c)
    A, D = _design_arrays(N, c, lambda k: np.eye(c)[:, k % c])
    np.testing.assert_array_equal(d.encoders, A)
    np.testing.assert_array_equal(d.decoders, D)
    assert d.metadata["basis"] == "unit" and np.abs(d.error_operators()).max() == 0


def test_exact_auto_picks_roots_when_c_does_not_divide_n():
    assert exact_design(5, 2).metadata["basis"] == "roots"
    assert exact_design(6, 4, basis="auto").metadata["basis"] == "roots"
    assert exact_design(6, 2, basis="auto").metadata["basis"] == "unit"


@pytest.mark.parametrize("c", [1, 2, 5])
def test_exact_two_workers_is_identity_for_every_c(c):
    d = exact_design(2, c)
    np.testing.assert_array_equal(d.encoders, np.broadcast_to(np.eye(c), (2, c, c)))
    np.testing.assert_array_equal(d.decoders, np.broadcast_to(np.eye(c), (2, c, c)))
    assert d.metadata["basis"] == "unit" and d.method == "exact"
    assert np.abs(d.error_operators()).max() == 0


def test_exact_design_refusals_name_the_argument_or_condition():
    with pytest.raises(ImpossibleParametersError) as info:
        exact_design(3, 4)
    assert info.value.condition == "CERAR exactness theorem"
    for args, kwargs, name in [
        ((1, 1), {}, "N"),
        ((3, 0), {}, "c"),
        ((5, 2), {"basis": "unit"}, "basis"),
        ((4, 2), {"basis": "Unit"}, "basis"),
        (("4", 2), {}, "N"),
        ((4, 2.5), {}, "c"),
    ]:
        with pytest.raises(InvalidArgumentError) as info:
            exact_design(*args, **kwargs)
        assert info.value.argument == name, (args, kwargs)


# ----------------------------------------------------------------------------- Vandermonde


@pytest.mark.parametrize("N,c,eps", [(3, 2, 0.1), (4, 3, 0.2), (3, 1, 0.3), (5, 4, 0.05)])
def test_vandermonde_design_from_its_nodes(N, c, eps):
    d = vandermonde_design(N, c, eps=eps)
    z = np.array([1 + eps * (k - (c - 1) / 2) for k in range(c)])
    A, D = _design_arrays(N, c, lambda k: z**k)
    np.testing.assert_allclose(d.encoders, A, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(d.decoders, D, rtol=1e-12)
    assert d.metadata["eps"] == eps and d.metadata["nodes"] == pytest.approx(z.tolist())
    # seam error E_{i,m} = Z^{-N} - I (i < m) in the node basis: eigenvalues z_k^{-N} - 1
    E = d.error_operators()
    for i in range(N):
        for m in range(1, N):
            if i < m:
                eig = np.sort(np.linalg.eigvals(E[i, m - 1]).real)
                np.testing.assert_allclose(eig, np.sort(z ** (-N) - 1), atol=1e-7)
            else:
                assert np.abs(E[i, m - 1]).max() < 1e-9


def test_vandermonde_default_eps_is_half_over_c():
    for c in (1, 2, 4):
        d = vandermonde_design(3, c)
        assert d.metadata["eps"] == 0.5 / c
        assert d.metadata["nodes"] == pytest.approx([1 + 0.5 / c * (k - (c - 1) / 2) for k in range(c)])


def test_vandermonde_eps_limit_keeps_nodes_positive():
    # nodes 1 +- eps (c-1)/2 > 0 iff eps < 2/(c-1)
    vandermonde_design(3, 2, eps=1.9)
    vandermonde_design(4, 3, eps=0.5)
    vandermonde_design(4, 3, eps=0.99)
    for c, eps in [(2, 2.0), (2, 2.5), (3, 1.0), (3, 1.4), (5, 0.5)]:
        with pytest.raises(InvalidArgumentError) as info:
            vandermonde_design(3, c, eps=eps)
        assert info.value.argument == "eps", (c, eps)
    d = vandermonde_design(3, 1, eps=5.0)  # one node, 1: any eps > 0
    assert d.metadata["nodes"] == [1.0]


@pytest.mark.parametrize(
    "args,kwargs,name",
    [
        ((1, 2), {}, "N"),
        ((3, 0), {}, "c"),
        ((3, 1), {"eps": 0.0}, "eps"),
        ((3, 2), {"eps": -0.1}, "eps"),
        ((3, 2), {"eps": "0.1"}, "eps"),
        (("3", 2), {}, "N"),
        ((3, 1.5), {}, "c"),
    ],
)
def test_vandermonde_bad_input_names_it(args, kwargs, name):
    with pytest.raises(InvalidArgumentError) as info:
        vandermonde_design(*args, **kwargs)
    assert info.value.argument == name


def test_vandermonde_smallest_sizes_are_allowed():
    assert vandermonde_design(2, 2, eps=0.1).N == 2
    assert vandermonde_design(3, 1).c == 1


def test_singular_encoders_name_eps_and_ill_conditioned_ones_warn():
    with pytest.raises(InvalidArgumentError) as info:
        vandermonde_design(3, 3, eps=1e-300)  # nodes 1 - 1e-300 == 1 in float64: B_j singular
    assert info.value.argument == "eps"
    with pytest.warns(RuntimeWarning):
        vandermonde_design(3, 6, eps=1e-3)  # kappa ~ eps^-(c-1) = 1e15 > 1e13
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vandermonde_design(3, 3, eps=0.1)  # kappa ~ 1e2: no warning
        perturbation_design(3, 5, eps=0.1)


def test_vandermonde_complex_from_its_nodes():
    nodes = [1.0, 1j, -1.0, 0.5 - 0.5j]
    A, D = vandermonde_complex(3, nodes)
    z = np.array(nodes)
    c, N = 4, 3
    B = np.stack([np.array([[zk ** (j - t) for t in range(c)] for zk in z]) for j in range(N)])
    Dx = np.stack([np.array([[zk ** (i - 1 - l) for l in range(c + N - 2)] for zk in z]) for i in range(N)])
    np.testing.assert_allclose(A, np.linalg.inv(B), atol=1e-12)
    np.testing.assert_allclose(D, Dx, atol=1e-12)


@pytest.mark.parametrize(
    "args,name",
    [
        ((1, [1.0, 2.0]), "N"),
        ((3, []), "nodes"),
        ((3, [1.0, 0.0]), "nodes"),
        ((3, [1.0, np.inf]), "nodes"),
        ((3, [2.0, 2.0]), "nodes"),
    ],
)
def test_vandermonde_complex_bad_input_names_it(args, name):
    with pytest.raises(InvalidArgumentError) as info:
        vandermonde_complex(*args)
    assert info.value.argument == name


# ----------------------------------------------------------------------------- perturbation


@pytest.mark.parametrize("N,c,eps", [(3, 5, 0.1), (4, 6, 0.2), (3, 3, 0.0), (4, 9, 0.3), (2, 3, 0.5), (5, 2, 0.1)])
def test_perturbation_design_from_r_and_v(N, c, eps):
    d = perturbation_design(N, c, eps=eps)
    z = perturbation_nodes(N, c, eps)
    blocks = []
    at = 0
    while at < len(z):  # (rho, theta, kind) read off the nodes: a real node or a (z, conj z) pair
        rho, theta = abs(z[at]), float(np.angle(z[at]))
        kind = "r" if abs(z[at].imag) < 1e-12 else "p"
        blocks.append((rho, abs(theta), kind))
        at += 1 if kind == "r" else 2
    R, v = _rotation_system(blocks)
    A, D = _design_arrays(N, c, lambda k: _power(R, k) @ v)
    np.testing.assert_allclose(d.encoders, A, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(d.decoders, D, rtol=1e-10, atol=1e-10)
    rs = math.ceil(c / N) - 1
    assert d.metadata["eps"] == eps and d.metadata["r_star"] == rs
    # ||E_{i,m}||_2 = 1 - (1+eps)^{-N r*} for i < m, 0 for i >= m (theory §50.5)
    E = d.error_operators()
    for i in range(N):
        for m in range(1, N):
            norm = np.linalg.norm(E[i, m - 1], 2)
            expected = 1 - (1 + eps) ** (-N * rs) if i < m else 0.0
            assert norm == pytest.approx(expected, abs=1e-9), (i, m)


def test_perturbation_design_refusals():
    with pytest.raises(InvalidArgumentError) as info:
        perturbation_design(3, 4, eps=0.0)
    assert info.value.argument == "eps"
    for args, name in [((1, 2), "N"), ((3, 0), "c"), ((3, 2, -0.1), "eps"), ((3, 2, "x"), "eps")]:
        with pytest.raises(InvalidArgumentError) as info:
            perturbation_design(*args)
        assert info.value.argument == name, args
    for args, name in [((1, 2, 0.1), "N"), ((3, 0, 0.1), "c"), ((3, 2, -0.1), "eps")]:
        with pytest.raises(InvalidArgumentError) as info:
            perturbation_nodes(*args)
        assert info.value.argument == name, args


def test_vandermonde_complex_is_complex_for_real_and_integer_nodes():
    A, D = vandermonde_complex(3, [1, 2, 3])  # integer nodes: negative powers need a complex (or float) base
    Af, Df = vandermonde_complex(3, [1.0, 2.0, 3.0])
    assert A.dtype == complex and D.dtype == complex and Af.dtype == complex
    np.testing.assert_allclose(A, Af)
    np.testing.assert_allclose(D, Df)
    z = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(D[2], np.array([[zk ** (1 - l) for l in range(4)] for zk in z]))


def test_vandermonde_complex_nodes_equal_to_fourteen_digits_are_repeated():
    with pytest.raises(InvalidArgumentError) as info:
        vandermonde_complex(3, [1.0, 1.0 + 3e-15])
    assert info.value.argument == "nodes"
    A, _ = vandermonde_complex(3, [1.0, 1.0 + 1e-6])
    assert np.all(np.isfinite(A))


def test_every_construction_names_its_method():
    assert vandermonde_design(3, 2).method == "vandermonde"
    assert perturbation_design(3, 4).method == "perturbation"
    assert exact_design(4, 2).method == "exact" and exact_design(5, 2).method == "exact"


def test_perturbation_default_eps_and_eps_one():
    assert perturbation_design(3, 4).metadata["eps"] == 0.05
    d = perturbation_design(3, 4, eps=1.0)  # nodes 1, w, conj w, 2: distinct, a valid design
    np.testing.assert_allclose(perturbation_nodes(3, 4, 1.0)[-1], 2.0)
    E = d.error_operators()
    assert np.linalg.norm(E[0, 1], 2) == pytest.approx(1 - 2.0**-3, abs=1e-9)


def test_exact_design_explicit_unit_basis_and_one_worker():
    d = exact_design(4, 2, basis="unit")
    assert d.metadata["basis"] == "unit" and np.linalg.cond(d.encoders[0]) == 1.0
    for args in [(1, 2), (1, 1), (0, 3)]:
        with pytest.raises(InvalidArgumentError) as info:
            exact_design(*args)
        assert info.value.argument == "N", args


# --- the size checks (gcsim.limits) added after the first run ------------------------------------


@pytest.mark.parametrize("build", [exact_design, perturbation_design, vandermonde_design])
@pytest.mark.parametrize(("N", "c"), [(100, 100), (5000, 1), (2, 5000), (101, 100)])
def test_an_oversized_design_is_refused_naming_the_larger_factor(build, N, c):
    # N(N - 1) blocks of c x c coefficients: over MAX_DENSE_ENTRIES (2^24) in each case; the error
    # names N when N(N - 1) >= c^2 (100 x 99 = 9900 < 100^2, but 101 x 100 = 10100 >= 100^2)
    assert N * (N - 1) * c * c > limits.MAX_DENSE_ENTRIES
    with pytest.raises(SizeLimitError) as info:
        build(N, c)
    assert info.value.argument == ("N" if N * (N - 1) >= c * c else "c")


def test_oversized_nodes_are_refused_by_name_before_a_copy():
    with pytest.raises(SizeLimitError) as info:
        perturbation_nodes(3, 10**12, 0.1)
    assert info.value.argument == "c"
    with pytest.raises(SizeLimitError) as info:
        vandermonde_complex(3, np.broadcast_to(1.0, (10**12,)))  # a zero-stride view: nothing allocated
    assert info.value.argument == "nodes"


@pytest.mark.parametrize(
    ("build", "args", "name"),
    [
        (perturbation_design, (-(10**5), 3), "N"),
        (perturbation_design, (5, -(10**5)), "c"),
        (vandermonde_design, (-(10**5), 3), "N"),
        (vandermonde_complex, (-(10**5), [1.0, 2.0]), "N"),
    ],
)
def test_a_negative_size_is_an_invalid_argument_not_a_size_limit(build, args, name):
    # N >= 2 and c >= 1 are checked first: a huge negative value would pass the size check's
    # N(N - 1) or c^2 otherwise and be reported as too large
    with pytest.raises(InvalidArgumentError) as info:
        build(*args)
    assert type(info.value) is InvalidArgumentError and info.value.argument == name
