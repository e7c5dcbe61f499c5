"""Coset bipartite graphs (SPEC §2.3): structure, invertibility theorem, exact certificates.

Independent checks: sympy exact rank/determinant (DomainMatrix over ZZ), the DFT
of the connection-set indicator (numpy FFT: the eigenvalues of a group matrix of
an abelian group), brute-force rank modulo a prime, and hand-built matrices.
"""
import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st
from sympy.polys.matrices import DomainMatrix

from gcsim.combinatorics.coset import (
    CosetBipartiteGraph,
    certify_invertibility,
    coset_graph,
    encoded_matrix,
    encoded_matrix_is_invertible,
    encoded_matrix_obstruction,
    exact_rank,
    integer_determinant,
    interval_connection_sets,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, VerificationError

PRIME_POWERS = {2: (2, 1), 3: (3, 1), 4: (2, 2), 5: (5, 1), 7: (7, 1), 8: (2, 3), 9: (3, 2),
                16: (2, 4), 25: (5, 2), 27: (3, 3)}


# ---------------------------------------------------------------- independent helpers

def _sympy_rank_det(M):
    dm = DomainMatrix.from_Matrix(sympy.Matrix(np.asarray(M).tolist())).convert_to(sympy.ZZ)
    return dm.rank(), (int(dm.det()) if M.shape[0] == M.shape[1] else None)


def _digits(x, p, a):
    return [(x // p ** i) % p for i in range(a)]


def _brute_add(x, y, k, group):
    """Group addition from first principles (Z_k, or coefficientwise mod p)."""
    if group == "cyclic":
        return (x + y) % k
    p, a = PRIME_POWERS[k]
    return sum(((dx + dy) % p) * p ** i for i, (dx, dy) in enumerate(zip(_digits(x, p, a), _digits(y, p, a))))


def _brute_block(k, S, group):
    M = np.zeros((k, k), dtype=np.int64)
    for y in range(k):
        for t in S:
            M[_brute_add(y, t, k, group), y] = 1
    return M


def _fft_eigenvalues(k, S, group):
    """Eigenvalues of the group matrix = DFT of the indicator of S on Z_k or (Z_p)^a."""
    if group == "cyclic":
        f = np.zeros(k)
        f[list(S)] = 1
        return np.fft.fft(f)
    p, a = PRIME_POWERS[k]
    f = np.zeros((p,) * a)
    for t in S:
        f[tuple(_digits(t, p, a))] = 1
    return np.fft.fftn(f).ravel()


def _rank_mod_p(M, p=2_147_483_629):
    """Rank of an integer matrix over GF(p) by plain Gaussian elimination (Python ints)."""
    a = [[int(x) % p for x in row] for row in M]
    rows, cols = len(a), len(a[0])
    r = 0
    for c in range(cols):
        piv = next((i for i in range(r, rows) if a[i][c]), None)
        if piv is None:
            continue
        a[r], a[piv] = a[piv], a[r]
        inv = pow(a[r][c], p - 2, p)
        a[r] = [x * inv % p for x in a[r]]
        for i in range(rows):
            if i != r and a[i][c]:
                f = a[i][c]
                a[i] = [(x - f * y) % p for x, y in zip(a[i], a[r])]
        r += 1
    return r


def _exact_B(A, d):
    """B with exact rational entries scaled to integers (same rank)."""
    m = d.shape[0]
    fr = [[Fraction(float(x)) for x in row] for row in d]
    den = math.lcm(*(x.denominator for row in fr for x in row))
    rows = []
    for l in range(m):
        for i in range(A.shape[0]):
            rows.append([int(A[i, j]) * int(fr[l][j] * den) for j in range(A.shape[1])])
    return rows


def _rd(A, m, eps, seed):
    """RD(eps) diagonals of SPEC §3.2: sigma (1 + eps xi), sigma = +-1, xi ~ U[-1, 1]."""
    rng = np.random.default_rng(seed)
    n = A.shape[1]
    sigma = rng.choice([-1.0, 1.0], size=(m, n))
    return sigma * (1 + eps * rng.uniform(-1, 1, size=(m, n)))


# ---------------------------------------------------------------- structure

@pytest.mark.parametrize("group", ["cyclic", "elementary"])
@pytest.mark.parametrize("k,m,delta", [(9, 2, 2), (8, 3, 3), (27, 2, 5), (4, 1, 2), (25, 2, 4)])
def test_structure_matches_brute_force(k, m, delta, group):
    g = coset_graph(k, m, delta, group, seed=3)
    assert g.verify()
    assert g.params == (k, m, delta) and g.kind == "coset"
    assert g.assignment.shape == (k, m * k)
    for c, S in enumerate(g.connection_sets):
        assert len(S) == delta
        M = _brute_block(k, S, group)
        assert np.array_equal(g.blocks[c], M)
        # worker (c, y) is column c*k + y and holds {y + t}
        for y in range(k):
            held = set(np.flatnonzero(g.assignment[:, g.worker_index(c, y)]).tolist())
            assert held == {_brute_add(y, t, k, group) for t in S}
    assert np.all(g.assignment.sum(axis=1) == m * delta)
    assert np.all(g.assignment.sum(axis=0) == delta)


@pytest.mark.parametrize("q", [9])
def test_elementary_addition_is_galois_field_addition(q):
    import galois

    GF = galois.GF(q, compile="python-calculate")   # no JIT: fast to set up in a test
    g = coset_graph(q, 1, 2, "elementary", connection_sets=[[1, q - 1]])
    x = np.arange(q)
    table = np.asarray(GF(x)[:, None] + GF(x)[None, :])
    expected = np.zeros((q, q), dtype=np.int64)
    for y in range(q):
        expected[table[y, [1, q - 1]], y] = 1
    assert np.array_equal(g.blocks[0], expected)


def test_default_sets_seeded_and_not_translates():
    a = coset_graph(27, 3, 5, seed=7)
    b = coset_graph(27, 3, 5, seed=7)
    c = coset_graph(27, 3, 5, seed=8)
    assert a.connection_sets == b.connection_sets
    assert np.array_equal(a.assignment, b.assignment)
    assert a.connection_sets != c.connection_sets
    sets = [set(S) for S in a.connection_sets]
    for i in range(3):
        for j in range(i):
            assert all({(t + g) % 27 for t in sets[j]} != sets[i] for g in range(27))


def test_interval_sets():
    assert interval_connection_sets(27, 2, 5) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    g = coset_graph(7, 3, 3, connection_sets="intervals")
    assert g.connection_sets == ((0, 1, 2), (3, 4, 5), (0, 1, 6))


def test_verify_detects_tampering():
    g = coset_graph(9, 2, 2, seed=1)
    bad = g.assignment.copy()
    bad[0, 0] ^= 1
    g._assignment = bad
    with pytest.raises(VerificationError):
        g.verify()
    g2 = coset_graph(9, 2, 2, seed=1)
    g2.connection_sets = ((0, 1), (0, 2))  # no longer the sets the blocks were developed from
    if g2.connection_sets != coset_graph(9, 2, 2, seed=1).connection_sets:
        with pytest.raises(VerificationError):
            g2.verify()


# ---------------------------------------------------------------- invertibility theorem

@st.composite
def _theorem_case(draw):
    k = draw(st.sampled_from([2, 3, 4, 5, 7, 8, 9, 16, 25, 27]))
    p = PRIME_POWERS[k][0]
    group = draw(st.sampled_from(["cyclic", "elementary"]))
    delta = draw(st.integers(1, k).filter(lambda d: d % p != 0))
    m = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 10_000))
    return k, m, delta, group, seed


@given(_theorem_case())
@settings(max_examples=40, deadline=None)
def test_theorem_every_block_invertible_when_p_does_not_divide_delta(case):
    k, m, delta, group, seed = case
    g = coset_graph(k, m, delta, group, seed=seed)
    assert bool(g.blocks_invertible().all())
    for S, M in zip(g.connection_sets, g.blocks):
        rank, det = _sympy_rank_det(M)
        assert rank == k and det != 0
        eig = _fft_eigenvalues(k, S, group)
        assert np.min(np.abs(eig)) > 1e-9
        assert abs(np.prod(eig) - det) <= 1e-6 * max(1.0, abs(det))


@given(st.sampled_from([4, 8, 9, 16, 25, 27]), st.sampled_from(["cyclic", "elementary"]),
       st.integers(0, 10_000), st.data())
@settings(max_examples=40, deadline=None)
def test_exact_vanishing_test_agrees_with_dft(k, group, seed, data):
    """Also for p | delta: the exact character-sum test matches sympy and the FFT."""
    delta = data.draw(st.integers(1, k))
    g = coset_graph(k, 1, delta, group, seed=seed)
    S, M = g.connection_sets[0], g.blocks[0]
    eig = _fft_eigenvalues(k, S, group)
    numerically_singular = bool(np.min(np.abs(eig)) < 1e-9)
    assert (not g.blocks_invertible()[0]) == numerically_singular
    assert (_sympy_rank_det(M)[0] == k) == bool(g.blocks_invertible()[0])
    assert np.count_nonzero(g.vanishing_characters()[0]) == np.count_nonzero(np.abs(eig) < 1e-9)
    np.testing.assert_allclose(np.sort_complex(np.round(g.block_eigenvalues()[0], 9)),
                               np.sort_complex(np.round(eig, 9)), atol=1e-7)


@pytest.mark.parametrize("k,S,group,rank", [
    (9, [0, 3, 6], "cyclic", 3),        # subgroup of order 3: chi vanishes unless 3 | j
    (4, [0, 2], "cyclic", 2),           # chi_1(S) = 1 + (-1) = 0, chi_3 likewise
    (9, [0, 1, 2], "elementary", 3),    # the prime subfield GF(3) inside GF(9)
    (8, [0, 1, 2, 3], "elementary", 2),
])
def test_singular_when_p_divides_delta(k, S, group, rank):
    g = coset_graph(k, 1, len(S), group, connection_sets=[S])
    M = g.blocks[0]
    assert not g.blocks_invertible()[0]
    assert _sympy_rank_det(M) == (rank, 0)
    assert np.linalg.matrix_rank(M.astype(float)) == rank
    assert np.count_nonzero(np.abs(_fft_eigenvalues(k, S, group)) < 1e-9) == k - rank
    assert exact_rank(M) == rank and integer_determinant(M) == 0
    with pytest.raises(ImpossibleParametersError) as info:
        coset_graph(k, 1, len(S), group, connection_sets=[S], require_invertible=True)
    assert "p does not divide delta" in str(info.value)
    assert info.value.condition == "p does not divide delta"


@pytest.mark.parametrize("k", [4, 8, 9, 16, 25, 27])
def test_intervals_show_the_hypothesis_is_sharp(k):
    p = PRIME_POWERS[k][0]
    for delta in range(1, k):
        g = coset_graph(k, 1, delta, connection_sets="intervals")
        assert bool(g.blocks_invertible()[0]) == (delta % p != 0)
        assert (np.linalg.matrix_rank(g.blocks[0].astype(float)) == k) == (delta % p != 0)


def test_require_invertible_redraws_default_sets():
    g = coset_graph(9, 3, 3, require_invertible=True, seed=0)
    for M in g.blocks:
        assert _sympy_rank_det(M)[0] == 9
    with pytest.raises(ImpossibleParametersError, match="p does not divide delta"):
        coset_graph(9, 1, 9, require_invertible=True)  # S = G: M = J is singular
    # every 3-subset of (Z_3)^2 is singular (a line, or a triangle seen by some character)
    with pytest.raises(ImpossibleParametersError, match="not guaranteed"):
        coset_graph(9, 1, 3, "elementary", require_invertible=True)
    assert coset_graph(27, 2, 5, require_invertible=True).verify()


# ---------------------------------------------------------------- encoded B and certificates

@pytest.fixture(scope="module")
def named():
    return coset_graph(27, 2, 5)


def test_named_instance(named):
    g = named
    assert (g.k, g.m, g.delta, g.p, g.a) == (27, 2, 5, 3, 3)
    assert g.num_workers == 54 and g.num_parts == 27
    assert set(g.replication.tolist()) == {10} and set(g.loads.tolist()) == {5}
    assert g.verify()


def test_named_instance_rd_jitter_is_invertible(named):
    g, A = named, named.assignment
    for seed in (0, 1):
        d = _rd(A, 2, 0.1, seed)
        assert encoded_matrix_is_invertible(g, d)
        B = (A[None, :, :] * d[:, None, :]).reshape(54, 54)
        np.testing.assert_array_equal(encoded_matrix(g, d), B)
        assert _rank_mod_p(_exact_B(A, d)) == 54          # full rank mod p => full rank over Q
        assert np.linalg.svd(B, compute_uv=False).min() > 1e-8


def test_named_instance_rademacher_can_be_singular(named):
    g, A = named, named.assignment
    k = 27
    rng = np.random.default_rng(5)
    sigma = rng.choice([-1, 1], size=54)
    # (a) equal diagonals in both block rows: B = 1_2 kron (A diag(sigma)), rank <= 27
    d_equal = np.stack([sigma, sigma])
    # (b) second row equal on coset 0, opposite on coset 1 except at one worker:
    #     Schur complement M_1 (D_11 - D_01) has a zero column => singular
    d1 = sigma.copy()
    d1[k:] *= -1
    d1[k + 4] *= -1
    d_schur = np.stack([sigma, d1])
    for d in (d_equal, d_schur):
        assert not encoded_matrix_is_invertible(g, d)
        B = (A[None, :, :] * d[:, None, :]).reshape(54, 54)
        assert _sympy_rank_det(B)[1] == 0
        assert np.linalg.matrix_rank(B.astype(float)) < 54
    assert _sympy_rank_det((A[None] * d_equal[:, None, :]).reshape(54, 54))[0] == 27
    assert encoded_matrix_obstruction(g, d_equal) is not None


def test_named_instance_rademacher_singularity_characterization(named):
    """m = 2, +-1 entries: B invertible iff P = {j : d_0j = d_1j} has |P| = k and
    A[:, P], A[:, ~P] are both invertible (Proposition 5) -- checked against sympy."""
    g, A, k = named, named.assignment, 27
    rng = np.random.default_rng(11)
    draws = [rng.choice([-1, 1], size=(2, 54)) for _ in range(12)]
    for _ in range(6):                                   # balanced sign products, |P| = k
        d0 = rng.choice([-1, 1], size=54)
        e = np.where(rng.permutation(54) < k, 1, -1)
        draws.append(np.stack([d0, d0 * e]))
    seen = set()
    for d in draws:
        P = d[0] == d[1]
        predicted = (P.sum() == k and _sympy_rank_det(A[:, P])[0] == k and _sympy_rank_det(A[:, ~P])[0] == k)
        B = (A[None] * d[:, None, :]).reshape(54, 54)
        exact = _sympy_rank_det(B)[0] == 54
        assert exact == predicted == encoded_matrix_is_invertible(g, d)
        assert (encoded_matrix_obstruction(g, d) is None) == exact
        if P.sum() != k:
            assert not exact
        seen.add(exact)
    assert seen == {True, False}                         # both behaviours occur


def test_small_instance_rademacher_singular_sometimes_jitter_never():
    """k = 3, m = 2, delta = 1: all 2^12 sign patterns, exactly."""
    g = coset_graph(3, 2, 1, connection_sets=[[0], [1]])
    A = g.assignment
    singular = 0
    for bits in product([-1, 1], repeat=12):
        d = np.array(bits).reshape(2, 6)
        B = (A[None] * d[:, None, :]).reshape(6, 6)
        det = int(round(np.linalg.det(B)))
        assert (det != 0) == encoded_matrix_is_invertible(g, d)
        singular += det == 0
    assert 0 < singular < 2 ** 12
    for seed in range(50):
        assert encoded_matrix_is_invertible(g, _rd(A, 2, 0.1, seed))


def test_rational_certificate_named(named):
    cert = certify_invertibility(named, "rational")
    assert cert.certified and cert.rank == 54 and cert.size == 54 and cert.degree == 54
    assert cert.field == "Q" and cert.error_probability == 0.0 and cert.method == "rational"
    dets = tuple(_sympy_rank_det(M)[1] for M in named.blocks)
    assert cert.block_determinants == dets and all(cert.blocks_invertible)


def test_modular_certificate_named(named):
    cert = certify_invertibility(named, "modular", seed=2)
    assert cert.certified and cert.rank == 54 and cert.field == "GF(2147483647)"
    p = 2147483647
    assert cert.block_determinants == tuple(_sympy_rank_det(M)[1] % p for M in named.blocks)


def test_certificate_when_blocks_singular():
    g = coset_graph(9, 2, 3, connection_sets="intervals")   # translates: rank A = 7
    assert np.linalg.matrix_rank(g.assignment.astype(float)) == 7
    generic = np.linalg.matrix_rank(encoded_matrix(g, _rd(g.assignment, 2, 0.1, 0)))
    assert generic == 14
    for method in ("rational", "modular"):
        cert = certify_invertibility(g, method, points=2)
        assert not cert.certified and cert.rank == 14
        assert 0 < cert.error_probability <= (18 / cert.sample_size) ** 2
    # singular blocks, but det B is not the zero polynomial: columns split into two bases
    g2 = coset_graph(4, 2, 2, connection_sets=[[0, 2], [0, 1]])
    assert not g2.blocks_invertible().any()
    cert = certify_invertibility(g2, "rational")
    assert _sympy_rank_det(g2.blocks[1])[0] == 3
    generic = max(_sympy_rank_det((g2.assignment[None] * d[:, None, :]).reshape(8, 8))[0]
                  for d in np.random.default_rng(0).integers(-50, 50, size=(5, 2, 8)))
    assert cert.rank == generic and cert.certified == (generic == 8)


@pytest.mark.parametrize("k,sets,expected", [
    (4, [[0, 2], [0, 1]], True),            # both blocks singular, yet det B is not 0
    (4, [[0, 2], [1, 3]], False),           # rank A = 2: both blocks see only chi_0, chi_2
    (4, [[0, 1], [1, 2]], False),           # both blocks kill chi_2: rank A = 3
    (3, [[0, 1, 2], [0, 1, 2]], False),     # A = [J | J], rank 1
    (3, [[0], [2]], True), (2, [[0], [1]], True), (4, [[0, 1, 2], [1, 2, 3]], True),
])
def test_theorem2_generic_invertibility_iff_columns_split_into_bases(k, sets, expected):
    """det B is not identically 0 iff the columns of A split into m = 2 bases (brute force)."""
    from itertools import combinations

    delta = len(sets[0])
    g = coset_graph(k, 2, delta, connection_sets=sets)
    A = g.assignment
    n = 2 * k
    splits = any(_sympy_rank_det(A[:, list(C)])[0] == k
                 and _sympy_rank_det(A[:, [j for j in range(n) if j not in C]])[0] == k
                 for C in combinations(range(n), k))
    rng = np.random.default_rng(0)
    generic = max(_sympy_rank_det((A[None] * d[:, None, :]).reshape(n, n))[0]
                  for d in rng.integers(-10 ** 6, 10 ** 6, size=(4, 2, n)))
    assert (generic == n) == splits == expected
    assert certify_invertibility(g, "rational").certified == splits
    # at the block-indicator point B = diag(M_0, M_1) and det B = det M_0 det M_1
    d_star = np.repeat(np.eye(2, dtype=np.int64), k, axis=1)
    B_star = (A[None] * d_star[:, None, :]).reshape(n, n)
    assert np.array_equal(B_star[:k, k:], 0 * B_star[:k, k:]) and np.array_equal(B_star[k:, :k], 0 * B_star[k:, :k])
    assert _sympy_rank_det(B_star)[1] == _sympy_rank_det(g.blocks[0])[1] * _sympy_rank_det(g.blocks[1])[1]


@given(st.lists(st.lists(st.integers(-3, 3), min_size=5, max_size=5), min_size=1, max_size=6),
       st.integers(0, 4))
@settings(max_examples=40, deadline=None)
def test_exact_rank_and_determinant_match_sympy(rows, dup):
    M = np.array(rows, dtype=np.int64)
    M = np.vstack([M, M[:1] * 2 - M[-1:]]) if dup % 2 else M     # add a dependent row
    assert exact_rank(M) == sympy.Matrix(M.tolist()).rank()
    S = M[: min(M.shape), : min(M.shape)]
    assert integer_determinant(S) == sympy.Matrix(S.tolist()).det()
    assert exact_rank(M / 8.0) == exact_rank(M)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs,exc,name", [
    (dict(k=6, m=2, delta=1), InvalidArgumentError, "k"),
    (dict(k=12, m=2, delta=1), InvalidArgumentError, "k"),
    (dict(k=-9, m=2, delta=1), InvalidArgumentError, "k"),
    (dict(k=1, m=2, delta=1), InvalidArgumentError, "k"),
    (dict(k=9, m=0, delta=1), InvalidArgumentError, "m"),
    (dict(k=9, m=-1, delta=1), InvalidArgumentError, "m"),
    (dict(k=9, m=2, delta=0), InvalidArgumentError, "delta"),
    (dict(k=9, m=2, delta=10), ImpossibleParametersError, "delta <= k"),
    (dict(k=9, m=2, delta=2.5), InvalidArgumentError, "delta"),
    (dict(k=9, m=2, delta=2, group="dihedral"), InvalidArgumentError, "group"),
    (dict(k=9, m=2, delta=2, connection_sets=[[0, 1]]), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets=[[0, 1], [0, 1, 2]]), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets=[[0, 1], [3, 3]]), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets=[[0, 1], [3, 9]]), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets=[[0, 1], [-1, 2]]), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets="random"), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, connection_sets=5), InvalidArgumentError, "connection_sets"),
    (dict(k=9, m=2, delta=2, require_invertible="yes"), InvalidArgumentError, "require_invertible"),
])
def test_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        coset_graph(**kwargs)


def test_bad_certificate_arguments(named):
    with pytest.raises(InvalidArgumentError, match="method"):
        certify_invertibility(named, "float")
    with pytest.raises(InvalidArgumentError, match="graph"):
        certify_invertibility(np.eye(3))
    with pytest.raises(InvalidArgumentError, match="prime"):
        certify_invertibility(named, "modular", prime=2 ** 31)
    with pytest.raises(InvalidArgumentError, match="diagonals"):
        encoded_matrix_is_invertible(named, np.ones((2, 53)))
    with pytest.raises(InvalidArgumentError, match="diagonals"):
        encoded_matrix_is_invertible(named, np.full((2, 54), np.nan))
    with pytest.raises(InvalidArgumentError, match="matrix"):
        integer_determinant(np.ones((2, 3), dtype=int))
    assert isinstance(named, CosetBipartiteGraph)
