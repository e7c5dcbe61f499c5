"""CERAR constructions: exactness theorem, Vandermonde seam structure, perturbation closed forms.

Error operators are recomputed here with explicit shift matrices; closed forms are evaluated
from their formulas (docs/theory/50_cerar.md), never from the library's own metrics.

Tolerances (house rule, tests/tolerances.py): :func:`window_tol` bounds the rounding error of a
computed product ``D_i S_{m-1} A_{i-m}`` of a construction -- the column function is evaluated
with relative error ``eta`` (pow/cos/sin of arguments up to ``N + c``), ``A_j = inv(B_j)`` adds the
inversion error ``c u kappa(B_j)`` (Higham Thm 14.x / 7.2) and the product a length-``c`` dot
product (Higham Thm 3.5); singular values move by at most ``p(m, n) u ||X||_2`` (LAPACK Users'
Guide §4.9).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.cerar import CerarDesign, design, errors
from gcsim.cerar.constructions import perturbation_nodes, r_star, vandermonde_complex
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError
from tolerances import SAFETY, cond, gamma, lstsq_tol, solve_tol, unit_roundoff

U = unit_roundoff()


def shift(L, c, s):
    S = np.zeros((L, c))
    for tau in range(c):
        S[tau + s, tau] = 1.0
    return S


def products(A, D):
    """P[i][m-1] = D_i S_{m-1} A_{(i-m) mod N} (works for complex arrays too)."""
    N, c, L = D.shape
    return np.array([[D[i] @ shift(L, c, m - 1) @ A[(i - m) % N] for m in range(1, N)] for i in range(N)])


def err_ops(des):
    return products(des.encoders, des.decoders) - np.eye(des.c)


def window_tol(A, D):
    """Bound (2-norm) on the rounding error of every computed D_i S_{m-1} A_{i-m}, shape (N, N-1).

    ``eta = SAFETY gamma_{7(N+c)}``: f(k) is evaluated from powers/cosines of arguments of size at
    most ``2 pi (N + c)``; ``A_j = inv(B_j)`` is off by ``kappa(B_j) (eta + SAFETY c u)`` relative;
    the product adds ``SAFETY gamma_{c+1}``; everything scales with ``||D_i S|| ||A_j||``.
    """
    N, c, L = D.shape
    eta = SAFETY * gamma(7 * (N + c))
    tol = np.zeros((N, N - 1))
    for i in range(N):
        for m in range(1, N):
            W = D[i] @ shift(L, c, m - 1)
            Aj = A[(i - m) % N]
            k = ccond(Aj)
            rel = k * (eta + solve_tol(1.0, c, 1.0)) + eta + SAFETY * gamma(c + 1)
            tol[i, m - 1] = rel * np.linalg.norm(W, 2) * np.linalg.norm(Aj, 2)
    return tol


def ccond(X):
    """2-norm condition number, also of complex matrices (tolerances.cond casts to real)."""
    return float(np.linalg.cond(X)) if np.iscomplexobj(X) else cond(X)


def kappa_rtol(X):
    """Relative rounding of kappa = sigma_1/sigma_r from an SVD: 2 SAFETY p q u (1 + kappa)."""
    p, q = np.shape(X)[-2:]
    return 2 * lstsq_tol(1.0 + ccond(X), p, q, 1.0)


def inverse_kappa_rtol(A):
    """kappa of a computed inverse A = inv(B): A is off by SAFETY c u kappa relative (Higham §14.3),
    which moves kappa(A) by twice kappa times that, plus the SVD's own rounding."""
    c = np.shape(A)[-1]
    k = ccond(A)
    return 2 * solve_tol(k * k, c, 1.0) + kappa_rtol(A)


# ----------------------------------------------------------------------------- exact

EXACT_CASES = [(N, c) for N in range(3, 8) for c in range(1, N + 1)] + [(2, 1), (2, 5), (2, 9)]


@pytest.mark.parametrize("N,c", EXACT_CASES)
def test_exact_design_is_exact(N, c):
    des = design(N, c, "exact")
    assert des.method == "exact" and des.decoders.shape == (N, c, c + N - 2)
    E = err_ops(des)
    tol = window_tol(des.encoders, des.decoders)
    assert all(np.linalg.norm(E[i, m], 2) <= tol[i, m] for i in range(N) for m in range(N - 1))
    kA = np.array([np.linalg.cond(a) for a in des.encoders])
    if N % c == 0 or N == 2:
        # kappa = 1: permutation encoders (ring all-reduce when c = N); entries 0/1 are exact
        assert np.all(np.isin(des.encoders, [0.0, 1.0]))
        assert all(k - 1 <= kappa_rtol(a) for k, a in zip(kA, des.encoders, strict=True))
    else:
        # kappa = 1 is impossible when c does not divide N (theorem in docs/theory/50_cerar.md):
        # kappa exceeds 1 by more than its rounding
        assert all(k - 1 > inverse_kappa_rtol(a) for k, a in zip(kA, des.encoders, strict=True))
        assert np.all(np.isfinite(kA))


def test_exact_three_two_reaches_optimum_sqrt3():
    # (N, c) = (3, 2): three unit lines, consecutive pairs orthogonal is impossible; the best
    # frame (lines 60 degrees apart) has kappa = sqrt(3) = cot(pi/6).
    des = design(3, 2, "exact")
    kA = errors(des).kappa_encoders
    for k, a in zip(kA, des.encoders, strict=True):
        assert k == pytest.approx(math.sqrt(3), rel=inverse_kappa_rtol(a))


@pytest.mark.parametrize("N,c", [(3, 4), (4, 5), (5, 11), (3, 7)])
def test_exact_impossible_for_c_above_N(N, c):
    with pytest.raises(ImpossibleParametersError, match="c = .* > N"):
        design(N, c, "exact")
    with pytest.raises(ValueError):  # also a ValueError for generic handlers
        design(N, c, "exact")


@settings(max_examples=20, deadline=None)
@given(N=st.integers(3, 7), c=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_periodic_column_function_theorem(N, c, seed):
    """Sufficiency and the key step of necessity of the exactness theorem:

    with B_j[:, tau] = f(j - tau) for an N-periodic f, D_i[:, l] = f(i - 1 - l) and
    A_j = B_j^{-1} every E_{i,m} vanishes (c <= N, generic f); for c > N the columns tau and
    tau + N of B_j coincide, so rank B_j <= N < c."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((c, N))  # f(k) = F[:, k mod N]
    f = lambda k: F[:, np.mod(k, N)]  # noqa: E731
    B = np.stack([f(j - np.arange(c)) for j in range(N)])
    if c > N:
        assert all(np.linalg.matrix_rank(b) <= N for b in B)
        return
    D = np.stack([f(i - 1 - np.arange(c + N - 2)) for i in range(N)])
    A = np.linalg.inv(B)
    # the windows of D are the very columns of B (no rounding in f here): window @ inv(B) - I is
    # the residual of a computed inverse, <= SAFETY c u kappa(B) (Higham §14.3), plus the product
    P = products(A, D)
    for i in range(N):
        for m in range(1, N):
            j = (i - m) % N
            tol = solve_tol(cond(B[j]), c, 1.0) + SAFETY * gamma(c + 1) * cond(B[j])
            assert np.linalg.norm(P[i, m - 1] - np.eye(c), 2) <= tol


def test_exact_necessary_structure_shift_relation():
    # in any exact design (N >= 3), B_j[:, tau] = B_{j-1}[:, tau-1] (B_j = A_j^{-1})
    for N, c in [(5, 3), (4, 4), (6, 4), (3, 2)]:
        des = design(N, c, "exact")
        B = np.linalg.inv(des.encoders)  # inv(inv(window)): two inversions' rounding
        for j in range(N):
            tol = sum(2 * solve_tol(cond(B[k]), c, np.linalg.norm(B[k], 2)) for k in (j, (j - 1) % N))
            tol += 2 * SAFETY * gamma(7 * (N + c)) * max(np.linalg.norm(B[j], 2), 1.0)  # evaluating f
            assert np.abs(B[j][:, 1:] - B[(j - 1) % N][:, :-1]).max() <= tol


# ----------------------------------------------------------------------------- Vandermonde


@pytest.mark.parametrize("N,c,seed", [(3, 2, 0), (3, 5, 1), (4, 3, 2), (5, 7, 3), (2, 3, 4)])
def test_complex_vandermonde_seam_structure(N, c, seed):
    rng = np.random.default_rng(seed)
    z = (1 + 0.3 * rng.standard_normal(c)) * np.exp(2j * np.pi * rng.random(c))
    A, D = vandermonde_complex(N, z)
    P = products(A, D)
    tol = window_tol(A, D)
    for i in range(N):
        for m in range(1, N):
            expect = np.eye(c) if i >= m else np.diag(z ** (-N))
            assert np.linalg.norm(P[i, m - 1] - expect, 2) <= tol[i, m - 1]


@pytest.mark.parametrize("N,c", [(3, 3), (5, 2), (6, 4), (4, 1)])
def test_complex_vandermonde_roots_of_unity_exact(N, c):
    z = np.exp(2j * np.pi * np.arange(c) / N)
    A, D = vandermonde_complex(N, z)
    P = products(A, D)
    tol = window_tol(A, D)
    assert all(np.linalg.norm(P[i, m] - np.eye(c), 2) <= tol[i, m] for i in range(N) for m in range(N - 1))


@pytest.mark.parametrize("N,c,eps", [(3, 4, 0.05), (4, 6, 0.02), (5, 3, 0.1)])
def test_real_vandermonde_error(N, c, eps):
    des = design(N, c, "vandermonde", eps=eps)
    z = 1 + eps * (np.arange(c) - (c - 1) / 2)
    E = err_ops(des)
    tol = window_tol(des.encoders, des.decoders)
    for i in range(N):
        for m in range(1, N):
            expect = np.zeros((c, c)) if i >= m else np.diag(z ** (-N) - 1)
            assert np.linalg.norm(E[i, m - 1] - expect, 2) <= tol[i, m - 1]
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
    seam_pairs = N * (N - 1) // 2  # pairs (i, m) with i < m
    return pair, np.sqrt(N - 1) * pair, seam_pairs * fro_pair


@pytest.mark.parametrize(
    "N,c,eps",
    [(3, 4, 0.1), (3, 5, 0.05), (4, 8, 0.05), (4, 9, 0.1), (5, 12, 0.02), (6, 7, 0.2), (2, 5, 0.1), (4, 4, 0.3)],
)
def test_perturbation_closed_forms(N, c, eps):
    des = design(N, c, "perturbation", eps=eps)
    E = err_ops(des)
    pair, row, fro = closed_forms(N, c, eps)
    tol = window_tol(des.encoders, des.decoders)  # 2-norm bound of each computed E_{i,m}
    svd = lstsq_tol(1.0, c, c, 1.0 + pair)  # an SVD's own rounding (LAPACK §4.9)
    norms = np.array([[np.linalg.norm(E[i, m], 2) for m in range(N - 1)] for i in range(N)])
    for i in range(N):
        for m in range(1, N):
            if i >= m:  # path does not cross the seam
                assert norms[i, m - 1] <= tol[i, m - 1] + svd
            else:
                assert norms[i, m - 1] == pytest.approx(pair, abs=tol[i, m - 1] + svd)
    # block row of worker 0: ||row_hat - row||_2 <= sqrt(sum_m tol^2); Frobenius: each ||E||_F moves
    # by at most sqrt(c) tol, so sum E^2 moves by sum (2 ||E||_F sqrt(c) tol + c tol^2)
    row_tol = math.sqrt(float(np.sum(tol[0] ** 2))) + lstsq_tol(1.0, c, (N - 1) * c, 1.0 + row)
    assert np.linalg.norm(np.hstack(list(E[0])), 2) == pytest.approx(row, abs=row_tol)
    tF = math.sqrt(c) * tol
    fro_tol = float(np.sum(2 * np.sqrt(np.sum(E**2, axis=(2, 3))) * tF + tF**2)) + SAFETY * gamma(E.size) * fro
    assert np.sum(E**2) == pytest.approx(fro, abs=fro_tol)
    assert all(np.linalg.norm(E[N - 1, m], 2) <= tol[N - 1, m] + svd for m in range(N - 1))  # worker N-1 exact
    e = errors(des)
    row_all = max(math.sqrt(float(np.sum(tol[i] ** 2))) for i in range(N)) + lstsq_tol(1.0, c, (N - 1) * c, 1 + row)
    assert e.worst_case == pytest.approx(row, abs=row_all)
    assert e.max_pair_norm == pytest.approx(pair, abs=float(tol.max()) + svd)


@settings(max_examples=20, deadline=None)
@given(N=st.integers(2, 6), c=st.integers(1, 14), eps=st.floats(0.01, 0.5))
def test_perturbation_seam_matrix_is_diagonal_levels(N, c, eps):
    des = design(N, c, "perturbation", eps=eps)
    E = err_ops(des)
    rs = -(-c // N) - 1
    levels = np.concatenate([np.full(min(N, c - q * N), q) for q in range(rs + 1)])
    expect = np.diag((1 + eps) ** (-N * levels) - 1.0)
    tol = window_tol(des.encoders, des.decoders)
    assert np.linalg.norm(E[0, N - 2] - expect, 2) <= tol[0, N - 2]  # R^{-N} - I in block order
    pair, row, _ = closed_forms(N, c, eps)
    row_tol = max(math.sqrt(float(np.sum(tol[i] ** 2))) for i in range(N)) + lstsq_tol(1.0, c, (N - 1) * c, 1 + row)
    assert errors(des).worst_case == pytest.approx(row, abs=row_tol)


@pytest.mark.parametrize("N,c,eps", [(3, 5, 0.1), (4, 9, 0.05), (5, 7, 0.2)])
def test_real_form_matches_complex_nodes(N, c, eps):
    """The rotation-block real form is unitarily equivalent to the complex Vandermonde family
    with the nodes omega^s (1+eps)^q: same singular values of every E_{i,m} and A_j."""
    z = perturbation_nodes(N, c, eps)
    # independent node check: level q has min(N, c-qN) nodes of modulus (1+eps)^q, each a root
    rs = r_star(N, c)
    mods = np.round(np.log(np.abs(z)) / np.log1p(eps)).astype(int)  # integers: rounding is exact here
    assert sorted(mods.tolist()) == sorted(q for q in range(rs + 1) for _ in range(min(N, c - q * N)))
    # (z/|z|)^N = 1 up to the rounding of exp, one division and N - 1 products: SAFETY gamma_{N+8}
    assert np.all(np.abs((z / np.abs(z)) ** N - 1) <= SAFETY * gamma(N + 8))
    # conjugate-closed: every conj(z_k) is some z_l up to the rounding of computing z (exp(2 pi i s/N))
    tz = SAFETY * gamma(8) * np.abs(z)
    assert all(np.min(np.abs(z - np.conj(w))) <= t for w, t in zip(z, tz, strict=True))
    Ac, Dc = vandermonde_complex(N, z)
    Pc = products(Ac, Dc) - np.eye(c)
    des = design(N, c, "perturbation", eps=eps)
    Pr = err_ops(des)
    tr, tc = window_tol(des.encoders, des.decoders), window_tol(Ac, Dc)
    for i in range(N):
        for m in range(N - 1):
            # Weyl: singular values move by at most the 2-norm of the perturbation, plus each SVD's rounding
            svd = 2 * lstsq_tol(1.0, c, c, 1.0 + np.linalg.norm(Pr[i, m], 2))
            np.testing.assert_allclose(
                np.linalg.svd(Pr[i, m], compute_uv=False),
                np.linalg.svd(Pc[i, m], compute_uv=False),
                rtol=0,
                atol=tr[i, m] + tc[i, m] + svd,
            )
    for j in range(N):
        rel = (
            inverse_kappa_rtol(des.encoders[j])
            + inverse_kappa_rtol(Ac[j])
            + 2 * SAFETY * gamma(7 * (N + c)) * np.linalg.cond(Ac[j])
        )  # both B_j built from f(k) evaluated with relative error eta
        assert np.linalg.cond(des.encoders[j]) == pytest.approx(np.linalg.cond(Ac[j]), rel=rel)


@pytest.mark.parametrize("N,c", [(3, 5), (4, 7), (3, 8), (4, 10)])
def test_kappa_grows_like_eps_power(N, c):
    """Proposition 5, kappa = Theta(eps^-r*): an asymptotic law, so the tolerance is the model's, not
    rounding's. kappa(eps) = C eps^-r* (1 + O(eps)) gives a log-log slope -r* + O(eps_max); with
    eps <= 1e-2 and the O(eps) constant of order N r* (the spread (1+eps)^q of the levels) the bias is
    below N r* 1e-2 <= 0.1 for these cases, while rounding (kappa u <= 1e-8 here) is negligible."""
    rs = r_star(N, c)
    eps = np.geomspace(1e-4, 1e-2, 6)
    kap = [max(np.linalg.cond(a) for a in design(N, c, "perturbation", eps=e).encoders) for e in eps]
    slope = np.polyfit(np.log(eps), np.log(kap), 1)[0]
    assert slope == pytest.approx(-rs, abs=N * rs * eps.max())


def test_perturbation_small_c_is_exact():
    for N, c in [(3, 3), (5, 4), (4, 1)]:
        des = design(N, c, "perturbation", eps=0.2)
        E, tol = err_ops(des), window_tol(des.encoders, des.decoders)
        assert all(np.linalg.norm(E[i, m], 2) <= tol[i, m] for i in range(N) for m in range(N - 1))


# ----------------------------------------------------------------------------- theory checks


def _real_form_unitary(exps, N):
    """U with f(k) = U (z_1^k, ..., z_c^k)^T for the real roots-of-unity form, nodes in the same order."""
    blocks, z = [], []
    for s in exps:
        if s == 0 or 2 * s == N:
            blocks.append(np.array([[1.0 + 0j]]))
            z.append(np.exp(2j * np.pi * s / N))
        elif s < N - s:  # a pair (s, N - s): sqrt2 (Re z^k, Im z^k) = U2 (z^k, conj z^k)
            blocks.append(np.array([[1, 1], [-1j, 1j]]) / math.sqrt(2))
            z += [np.exp(2j * np.pi * s / N), np.exp(-2j * np.pi * s / N)]
    from scipy.linalg import block_diag

    return block_diag(*blocks), np.array(z)


@pytest.mark.parametrize("N,c", [(3, 2), (5, 3), (7, 4), (6, 5), (5, 5), (7, 2)])
def test_roots_window_formula(N, c):
    """docs/theory/50_cerar.md, Theorem 1 (roots of unity): the window is B_j = U diag(z^j) V with
    V[k, tau] = z_k^{-tau} -- checked against the code's encoders (B_j = inv(A_j)); the previously
    written U V diag(z^j) is not it (for c >= 2)."""
    des = design(N, c, "exact", basis="roots")
    exps = des.metadata["exponents"]
    Uf, z = _real_form_unitary(sorted(exps, key=lambda s: (min(s, N - s) if s else -1, s)), N)
    assert np.allclose(Uf.conj().T @ Uf, np.eye(c), atol=SAFETY * gamma(c), rtol=0)
    # row order of f in the code: real blocks first, then pairs, both by frequency (constructions._blocks)
    V = z[:, None] ** (-np.arange(c))[None, :]
    for j in range(N):
        B = np.linalg.inv(des.encoders[j])
        right = Uf @ np.diag(z**j) @ V
        # B = inv(inv(window)): two inversions (SAFETY c u kappa each, Higham §14.3) and the
        # evaluation of the trigonometric entries (eta)
        k = cond(B)
        tol = (2 * solve_tol(k, c, 1.0) + SAFETY * gamma(7 * (N + c))) * np.linalg.norm(right, 2) * max(1.0, k)
        assert np.linalg.norm(B - right, 2) <= tol
        if c >= 2:
            wrong = Uf @ V @ np.diag(z**j)
            assert np.linalg.norm(B - wrong, 2) > 1e6 * tol or j % N == 0


@pytest.mark.parametrize("N,c", [(4, 2), (4, 4), (6, 3), (6, 2), (8, 4), (6, 6), (3, 3), (4, 1)])
def test_unit_kappa_exact_designs_have_decoder_kappa(N, c):
    """docs/theory/50_cerar.md, Proposition 2b: every exact design with kappa(A_j) = 1 has
    kappa(D_i) = sqrt(ceil(L/c) / floor(L/c)), L = c + N - 2 (so kappa(D_i) = 1 iff c | L).
    Checked on the general form f(k) = s_k Q e_{k mod c} (random orthogonal Q, random signs)."""
    L = c + N - 2
    rng = np.random.default_rng(N * 10 + c)
    Q = np.linalg.qr(rng.standard_normal((c, c)))[0]
    signs = rng.choice([-1.0, 1.0], size=N)
    F = np.stack([signs[k] * Q[:, k % c] for k in range(N)], axis=1)  # f on Z_N
    B = np.stack([F[:, (j - np.arange(c)) % N] for j in range(N)])
    D = np.stack([F[:, (i - 1 - np.arange(L)) % N] for i in range(N)])
    A = np.linalg.inv(B)
    E = products(A, D) - np.eye(c)
    tol = window_tol(A, D)
    assert all(np.linalg.norm(E[i, m], 2) <= tol[i, m] for i in range(N) for m in range(N - 1))
    expect = math.sqrt(math.ceil(L / c) / (L // c))
    for a in A:
        assert cond(a) - 1 <= kappa_rtol(a) + 2 * solve_tol(1.0, c, 1.0)
    for d in D:  # D D^T = Q diag(counts) Q^T computed by an SVD: kappa_rtol
        assert cond(d) == pytest.approx(expect, rel=kappa_rtol(d))


# ----------------------------------------------------------------------------- dispatch / input


def test_optimized_is_dispatched_to_the_optimizer(monkeypatch):
    calls = {}

    def fake(N, c, kappa=None, seed=0, **kw):
        calls.update(N=N, c=c, kappa=kappa, seed=seed, **kw)
        return design(N, c, "perturbation", eps=0.1)

    import gcsim.cerar.factory as factory

    monkeypatch.setattr(factory, "optimized_design", fake)
    out = design(4, 8, "optimized", kappa=50.0, seed=3, iters=2)
    assert isinstance(out, CerarDesign)
    assert calls == {"N": 4, "c": 8, "kappa": 50.0, "seed": 3, "iters": 2}


@pytest.mark.parametrize(
    "kwargs,arg",
    [
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
    ],
)
def test_bad_input(kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        design(**kwargs)


@pytest.mark.parametrize("which", ["encoders", "decoders"])
def test_design_arrays_with_nan_name_the_array(which):
    A, D = np.eye(2)[None].repeat(3, 0), np.ones((3, 2, 3))
    arrays = {"encoders": A.copy(), "decoders": D.copy()}
    arrays[which][1, 0, 1] = np.nan
    with pytest.raises(InvalidArgumentError) as exc:
        CerarDesign(3, 2, arrays["encoders"], arrays["decoders"])
    assert exc.value.argument == which and "(1, 0, 1)" in str(exc.value)
    with pytest.raises(InvalidArgumentError) as exc:
        CerarDesign(3, 2, A.astype(complex), D)
    assert exc.value.argument == "encoders"


def test_vandermonde_complex_bad_nodes():
    for nodes in ([], [0.0, 1.0], [1.0, 1.0], [np.nan]):
        with pytest.raises(InvalidArgumentError, match="nodes"):
            vandermonde_complex(3, nodes)
