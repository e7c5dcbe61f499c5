"""Coset bipartite graphs (docs/theory.md §30): structure, invertibility theorem, exact certificates.

Independent checks: sympy exact rank/determinant (DomainMatrix over ZZ), the DFT
of the connection-set indicator (numpy FFT: the eigenvalues of a group matrix of
an abelian group), brute-force rank modulo a prime, and hand-built matrices.
"""

import itertools
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
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, NotConstructibleError, VerificationError
from tolerances import SAFETY, gamma, unit_roundoff

PRIME_POWERS = {
    2: (2, 1),
    3: (3, 1),
    4: (2, 2),
    5: (5, 1),
    7: (7, 1),
    8: (2, 3),
    9: (3, 2),
    16: (2, 4),
    25: (5, 2),
    27: (3, 3),
}


# ---------------------------------------------------------------- independent helpers


def _sympy_rank_det(M):
    dm = DomainMatrix.from_Matrix(sympy.Matrix(np.asarray(M).tolist())).convert_to(sympy.ZZ)
    return dm.rank(), (int(dm.det()) if M.shape[0] == M.shape[1] else None)


def _digits(x, p, a):
    return [(x // p**i) % p for i in range(a)]


def _brute_add(x, y, k, group):
    """Group addition from first principles (Z_k, or coefficientwise mod p)."""
    if group == "cyclic":
        return (x + y) % k
    p, a = PRIME_POWERS[k]
    pairs = zip(_digits(x, p, a), _digits(y, p, a), strict=True)
    return sum(((dx + dy) % p) * p**i for i, (dx, dy) in enumerate(pairs))


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
    F = np.fft.fftn(f)
    return np.array([F[tuple(_digits(u, p, a))] for u in range(k)])  # character u, as in _vanishing_exact


def _fft_tol(k, delta):
    """Entrywise error bound of the FFT eigenvalues of a 0/1 indicator with delta ones.

    ||fl(Fx) - Fx||_2 <= log2(k) eta / (1 - log2(k) eta) ||Fx||_2 with eta ~ u + gamma_4 (sqrt 2 + u)
    (Higham, Accuracy and Stability, Thm 24.2, radix 2; a mixed-radix FFT has at most log2 k stages,
    each a short DFT with the same kind of bound); ||Fx||_2 = sqrt(k) ||x||_2 = sqrt(k delta) (Parseval).
    """
    eta = unit_roundoff() + gamma(4) * (math.sqrt(2) + unit_roundoff())
    return SAFETY * (math.log2(k) + 1) * eta * math.sqrt(k * delta)


def _sum_exp_tol(delta):
    """Error of sum_{t in S} exp(-2 pi i phi_t / E): each term costs a few roundings (the angle, of size
    <= 2 pi, and exp), the sum gamma_delta more (Higham Thm 3.1): <= gamma_{delta+16} * delta."""
    return SAFETY * gamma(delta + 16) * delta


def _vanishing_exact(k, S, group):
    """Per character: does its eigenvalue sum_{t in S} zeta_E^{e_t} vanish?  Exact: x^e polynomial
    modulo the cyclotomic polynomial Phi_E (sympy), characters from first principles."""
    x = sympy.symbols("x")
    if group == "cyclic":
        E, exps = k, [[(j * t) % k for t in S] for j in range(k)]
    else:
        p, a = PRIME_POWERS[k]
        E = p
        exps = [
            [sum(du * dt for du, dt in zip(_digits(u, p, a), _digits(t, p, a), strict=False)) % p for t in S]
            for u in range(k)
        ]
    phi = sympy.Poly(sympy.cyclotomic_poly(E, x), x)
    return [sympy.Poly(sum(x**e for e in row), x).rem(phi).is_zero for row in exps]


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
                a[i] = [(x - f * y) % p for x, y in zip(a[i], a[r], strict=False)]
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
    """RD(eps) diagonals of docs/theory.md §5.4: sigma (1 + eps xi), sigma = +-1, xi ~ U[-1, 1]."""
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

    GF = galois.GF(q, compile="python-calculate")  # no JIT: fast to set up in a test
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
    object.__setattr__(g, "_assignment", bad)  # forge a corrupted object past the immutability
    with pytest.raises(VerificationError):
        g.verify()
    g2 = coset_graph(9, 2, 2, seed=1)
    object.__setattr__(g2, "connection_sets", ((0, 1), (0, 2)))  # no longer the sets the blocks were developed from
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
    for S, M in zip(g.connection_sets, g.blocks, strict=False):
        rank, det = _sympy_rank_det(M)
        assert rank == k and det != 0
        assert not any(_vanishing_exact(k, S, group))
        # det = product of the eigenvalues: with |fl(lambda_i) - lambda_i| <= e,
        # |prod fl(lambda) - prod lambda| <= prod(|fl(lambda_i)| + e) - prod |fl(lambda_i)|, plus the
        # rounding of the product itself (gamma_k relative)
        eig = _fft_eigenvalues(k, S, group)
        e = _fft_tol(k, delta)
        mag = np.abs(eig)
        bound = np.prod(mag + e) - np.prod(mag) + SAFETY * gamma(k) * np.prod(mag)
        assert abs(np.prod(eig) - det) <= bound


@given(
    st.sampled_from([4, 8, 9, 16, 25, 27]), st.sampled_from(["cyclic", "elementary"]), st.integers(0, 10_000), st.data()
)
@settings(max_examples=40, deadline=None)
def test_exact_vanishing_test_agrees_with_dft(k, group, seed, data):
    """Also for p | delta: the exact character-sum test matches sympy and the FFT."""
    delta = data.draw(st.integers(1, k))
    g = coset_graph(k, 1, delta, group, seed=seed)
    from scipy.optimize import linear_sum_assignment

    S, M = g.connection_sets[0], g.blocks[0]
    vanish = _vanishing_exact(k, S, group)
    assert (not g.blocks_invertible()[0]) == any(vanish)
    assert (_sympy_rank_det(M)[0] == k) == bool(g.blocks_invertible()[0])
    assert np.count_nonzero(g.vanishing_characters()[0]) == sum(vanish)
    # the exact rank is k minus the number of vanishing characters (M is diagonalized by the characters)
    assert _sympy_rank_det(M)[0] == k - sum(vanish)
    # floating eigenvalues: the library's sum of exponentials against the FFT, matched as multisets
    eig = _fft_eigenvalues(k, S, group)
    lib = g.block_eigenvalues()[0]
    rows, cols = linear_sum_assignment(np.abs(lib[:, None] - eig[None, :]))
    assert np.abs(lib[rows] - eig[cols]).max() <= _fft_tol(k, delta) + _sum_exp_tol(delta)


@pytest.mark.parametrize(
    "k,S,group,rank",
    [
        (9, [0, 3, 6], "cyclic", 3),  # subgroup of order 3: chi vanishes unless 3 | j
        (4, [0, 2], "cyclic", 2),  # chi_1(S) = 1 + (-1) = 0, chi_3 likewise
        (9, [0, 1, 2], "elementary", 3),  # the prime subfield GF(3) inside GF(9)
        (8, [0, 1, 2, 3], "elementary", 2),
    ],
)
def test_singular_when_p_divides_delta(k, S, group, rank):
    g = coset_graph(k, 1, len(S), group, connection_sets=[S])
    M = g.blocks[0]
    assert not g.blocks_invertible()[0]
    assert _sympy_rank_det(M) == (rank, 0)
    assert sum(_vanishing_exact(k, S, group)) == k - rank
    assert np.abs(_fft_eigenvalues(k, S, group))[_vanishing_exact(k, S, group)].max() <= _fft_tol(k, len(S))
    assert exact_rank(M) == rank and integer_determinant(M) == 0
    # these sets fail, but that proves nothing about the parameters: the argument is at fault
    with pytest.raises(InvalidArgumentError) as info:
        coset_graph(k, 1, len(S), group, connection_sets=[S], require_invertible=True)
    assert info.value.argument == "connection_sets" and "singular" in str(info.value)


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
    assert coset_graph(27, 2, 5, require_invertible=True).verify()


def _min_singular_value_floor(k, delta):
    """A non-singular k x k integer matrix with row sums delta has |det| >= 1 and sigma_max <= delta, so
    sigma_min >= |det| / sigma_max^(k-1) >= delta^-(k-1) (product of the singular values = |det|)."""
    return float(delta) ** -(k - 1)


def _exists_invertible_brute_force(k, delta, group):
    """Is some delta-subset's group matrix non-singular?  All C(k, delta) subsets, batched SVDs.

    A computed singular value is within SAFETY k u sigma_max of the exact one (backward-stable SVD and
    Weyl's inequality, Higham Ch. 20 / Golub-Van Loan 8.6), so sigma_min is decided correctly when that
    error is below half of the floor delta^-(k-1) -- asserted here.  For (Z_2)^a the eigenvalues are
    integers and are computed exactly instead.
    """
    subsets = list(itertools.combinations(range(k), delta))
    if group == "elementary" and PRIME_POWERS[k][0] == 2:
        # (Z_2)^a: the character sums sum_{t in S} (-1)^<u, t> are integers -- decide exactly
        signs = np.array([[(-1) ** bin(u & t).count("1") for t in range(k)] for u in range(k)])
        ind = np.zeros((len(subsets), k), dtype=np.int64)
        for row, S in enumerate(subsets):
            ind[row, list(S)] = 1
        return bool(np.any(np.all(ind @ signs.T != 0, axis=1)))
    floor = _min_singular_value_floor(k, delta)
    err = SAFETY * k * unit_roundoff() * delta
    assert err < floor / 2
    for a in range(0, len(subsets), 2048):
        Ms = np.array([_brute_block(k, S, group) for S in subsets[a : a + 2048]], dtype=float)
        if np.any(np.linalg.svd(Ms, compute_uv=False)[:, -1] > floor / 2):
            return True
    return False


@pytest.mark.parametrize(
    "k,delta,group",
    [
        (9, 3, "elementary"),
        (9, 3, "cyclic"),
        (9, 6, "elementary"),
        (4, 2, "cyclic"),
        (4, 2, "elementary"),
        (8, 4, "elementary"),
        (8, 2, "cyclic"),
        (8, 6, "cyclic"),
        (16, 4, "elementary"),
        (16, 6, "elementary"),
        (9, 9, "cyclic"),
        (16, 8, "elementary"),
    ],
)
def test_require_invertible_impossible_only_when_proved(k, delta, group):
    """ImpossibleParametersError exactly when brute force over every delta-subset finds no invertible
    block; otherwise a graph whose blocks are invertible (sympy exact rank), for many seeds."""
    exists = _exists_invertible_brute_force(k, delta, group)
    for seed in range(0, 240, 13):
        if not exists:
            with pytest.raises(ImpossibleParametersError) as info:
                coset_graph(k, 2, delta, group, require_invertible=True, seed=seed)
            assert info.value.condition == "an invertible connection set exists"
            assert "exhaustive" in str(info.value)
            break
        g = coset_graph(k, 2, delta, group, require_invertible=True, seed=seed)
        assert g.verify()
        for M in g.blocks:
            assert _sympy_rank_det(M)[0] == k


# seeds for which 64 random draws of a 6-subset of (Z_2)^4 find no invertible one (about 5.6 % of the
# 6-subsets are invertible); before the exhaustive fallback these raised ImpossibleParametersError
GAVE_UP_SEEDS = [10, 11, 31, 35, 80, 83]


@pytest.mark.parametrize("seed", GAVE_UP_SEEDS)
def test_require_invertible_k16_elementary_delta6(seed):
    g = coset_graph(16, 2, 6, "elementary", require_invertible=True, seed=seed)
    assert g.verify()
    for S, M in zip(g.connection_sets, g.blocks, strict=False):
        assert _sympy_rank_det(M)[0] == 16
        assert not any(_vanishing_exact(16, S, "elementary"))
    a, b = (set(S) for S in g.connection_sets)  # not translates of each other
    assert all({_brute_add(t, x, 16, "elementary") for t in a} != b for x in range(16))
    assert g.connection_sets == coset_graph(16, 2, 6, "elementary", require_invertible=True, seed=seed).connection_sets


def test_require_invertible_search_that_gives_up_is_not_a_proof(monkeypatch):
    """When the exhaustive search is out of reach, a failed random search raises NotConstructibleError
    (may exist), never ImpossibleParametersError, and says what was tried and what to change."""
    import gcsim.combinatorics.coset_sets as sets_mod

    monkeypatch.setattr(sets_mod, "EXHAUSTIVE_LIMIT", 0)
    monkeypatch.setattr(sets_mod, "RANDOM_BUDGET", 256)
    for k, delta, group in [(9, 3, "elementary"), (16, 8, "elementary")]:  # impossible, but not proved here
        with pytest.raises(NotConstructibleError) as info:
            coset_graph(k, 1, delta, group, require_invertible=True, seed=4)
        msg = str(info.value)
        assert not isinstance(info.value, ImpossibleParametersError)
        assert f"{64 + 256} random draws" in msg and "seed = 4" in msg and "another seed" in msg
    # too large to enumerate by default: (Z_2)^6, delta = 32
    with pytest.raises(NotConstructibleError, match="random draws"):
        coset_graph(64, 1, 32, "elementary", require_invertible=True)


def test_require_invertible_rejects_singular_interval_sets():
    with pytest.raises(InvalidArgumentError, match="connection_sets"):
        coset_graph(9, 2, 3, connection_sets="intervals", require_invertible=True)
    assert coset_graph(9, 2, 3, require_invertible=True).verify()  # other 3-sets of Z_9 are invertible


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
        assert _rank_mod_p(_exact_B(A, d)) == 54  # full rank mod p => full rank over Q
        # numerically non-singular too: the computed sigma_min exceeds its own error bound
        # SAFETY n u ||B||_2 (backward-stable SVD + Weyl), so the float SVD alone certifies rank 54
        sv = np.linalg.svd(B, compute_uv=False)
        assert sv[-1] > SAFETY * 54 * unit_roundoff() * sv[0]


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
    for _ in range(6):  # balanced sign products, |P| = k
        d0 = rng.choice([-1, 1], size=54)
        e = np.where(rng.permutation(54) < k, 1, -1)
        draws.append(np.stack([d0, d0 * e]))
    seen = set()
    for d in draws:
        P = d[0] == d[1]
        predicted = P.sum() == k and _sympy_rank_det(A[:, P])[0] == k and _sympy_rank_det(A[:, ~P])[0] == k
        B = (A[None] * d[:, None, :]).reshape(54, 54)
        exact = _sympy_rank_det(B)[0] == 54
        assert exact == predicted == encoded_matrix_is_invertible(g, d)
        assert (encoded_matrix_obstruction(g, d) is None) == exact
        if P.sum() != k:
            assert not exact
        seen.add(exact)
    assert seen == {True, False}  # both behaviours occur


def test_small_instance_rademacher_singular_sometimes_jitter_never():
    """k = 3, m = 2, delta = 1: all 2^12 sign patterns, exactly."""
    g = coset_graph(3, 2, 1, connection_sets=[[0], [1]])
    A = g.assignment
    ds = np.array(list(product([-1, 1], repeat=12)), dtype=np.int64).reshape(-1, 2, 6)
    Bs = (A[None, None] * ds[:, :, None, :]).reshape(-1, 6, 6)
    # exact integer determinants by the Leibniz formula (720 permutations), no floating point
    perms = np.array(list(itertools.permutations(range(6))))
    signs = np.array([(-1) ** sum(q[i] > q[j] for i in range(6) for j in range(i + 1, 6)) for q in perms])
    dets = (Bs[:, np.arange(6)[None, :], perms].prod(axis=2) * signs).sum(axis=1)
    for d, det in zip(ds, dets, strict=False):
        assert (det != 0) == encoded_matrix_is_invertible(g, d)
    singular = int(np.count_nonzero(dets == 0))
    assert 0 < singular < 2**12
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
    g = coset_graph(9, 2, 3, connection_sets="intervals")  # translates: rank A = 7
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
    generic = max(
        _sympy_rank_det((g2.assignment[None] * d[:, None, :]).reshape(8, 8))[0]
        for d in np.random.default_rng(0).integers(-50, 50, size=(5, 2, 8))
    )
    assert cert.rank == generic and cert.certified == (generic == 8)


@pytest.mark.parametrize(
    "k,sets,expected",
    [
        (4, [[0, 2], [0, 1]], True),  # both blocks singular, yet det B is not 0
        (4, [[0, 2], [1, 3]], False),  # rank A = 2: both blocks see only chi_0, chi_2
        (4, [[0, 1], [1, 2]], False),  # both blocks kill chi_2: rank A = 3
        (3, [[0, 1, 2], [0, 1, 2]], False),  # A = [J | J], rank 1
        (3, [[0], [2]], True),
        (2, [[0], [1]], True),
        (4, [[0, 1, 2], [1, 2, 3]], True),
    ],
)
def test_theorem2_generic_invertibility_iff_columns_split_into_bases(k, sets, expected):
    """det B is not identically 0 iff the columns of A split into m = 2 bases (brute force)."""
    from itertools import combinations

    delta = len(sets[0])
    g = coset_graph(k, 2, delta, connection_sets=sets)
    A = g.assignment
    n = 2 * k
    splits = any(
        _sympy_rank_det(A[:, list(C)])[0] == k and _sympy_rank_det(A[:, [j for j in range(n) if j not in C]])[0] == k
        for C in combinations(range(n), k)
    )
    rng = np.random.default_rng(0)
    generic = max(
        _sympy_rank_det((A[None] * d[:, None, :]).reshape(n, n))[0]
        for d in rng.integers(-(10**6), 10**6, size=(4, 2, n))
    )
    assert (generic == n) == splits == expected
    assert certify_invertibility(g, "rational").certified == splits
    # at the block-indicator point B = diag(M_0, M_1) and det B = det M_0 det M_1
    d_star = np.repeat(np.eye(2, dtype=np.int64), k, axis=1)
    B_star = (A[None] * d_star[:, None, :]).reshape(n, n)
    assert np.array_equal(B_star[:k, k:], 0 * B_star[:k, k:]) and np.array_equal(B_star[k:, :k], 0 * B_star[k:, :k])
    assert _sympy_rank_det(B_star)[1] == _sympy_rank_det(g.blocks[0])[1] * _sympy_rank_det(g.blocks[1])[1]


@given(st.lists(st.lists(st.integers(-3, 3), min_size=5, max_size=5), min_size=1, max_size=6), st.integers(0, 4))
@settings(max_examples=40, deadline=None)
def test_exact_rank_and_determinant_match_sympy(rows, dup):
    M = np.array(rows, dtype=np.int64)
    M = np.vstack([M, M[:1] * 2 - M[-1:]]) if dup % 2 else M  # add a dependent row
    assert exact_rank(M) == sympy.Matrix(M.tolist()).rank()
    S = M[: min(M.shape), : min(M.shape)]
    assert integer_determinant(S) == sympy.Matrix(S.tolist()).det()
    assert exact_rank(M / 8.0) == exact_rank(M)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs,exc,name",
    [
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
    ],
)
def test_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        coset_graph(**kwargs)


def test_bad_certificate_arguments(named):
    with pytest.raises(InvalidArgumentError, match="method"):
        certify_invertibility(named, "float")
    with pytest.raises(InvalidArgumentError, match="graph"):
        certify_invertibility(np.eye(3))
    with pytest.raises(InvalidArgumentError, match="prime"):
        certify_invertibility(named, "modular", prime=2**31)
    with pytest.raises(InvalidArgumentError, match="diagonals"):
        encoded_matrix_is_invertible(named, np.ones((2, 53)))
    with pytest.raises(InvalidArgumentError, match="diagonals"):
        encoded_matrix_is_invertible(named, np.full((2, 54), np.nan))
    with pytest.raises(InvalidArgumentError, match="matrix"):
        integer_determinant(np.ones((2, 3), dtype=int))
    assert isinstance(named, CosetBipartiteGraph)


def test_coset_graph_refuses_a_huge_incidence_before_allocating():
    # the advisor asked for k = 14,401, m = 7 at 100,807 workers: a 10.8 GiB incidence, allocated unchecked
    from gcsim.errors import SizeLimitError

    with pytest.raises(SizeLimitError, match="k x mk incidence"):
        coset_graph(14401, 7, 318)
