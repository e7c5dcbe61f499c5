"""Tests of the encoders (gcsim.coding.schemes), against independent computations."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import FANO
from exact_lstsq import reference_residual
from executor_tolerances import fixed_residual_tol
from gcsim.coding.schemes import (
    METHODS,
    Scheme,
    cyclic_repetition_assignment,
    encode,
    exact_decoder,
    fractional_repetition_assignment,
    target_matrix,
)
from gcsim.errors import InvalidArgumentError, NotConstructibleError
from tolerances import cond, dot_tol, lstsq_tol, solve_tol


def lstsq_error(B, T, mask):
    """Independent optimal error: scipy least squares on the surviving columns."""
    BF = B[:, np.asarray(mask, dtype=bool)]
    if BF.shape[1] == 0:
        return float(np.sum(T**2))
    return reference_residual(BF, T)  # rank-deficient B_F: exact rationals (tests/exact_lstsq.py)


def lstsq_sq_tol(B, T, mask, true_residual=0.0):
    """Bound on :func:`lstsq_error` when ``min_X ‖B_F X − T‖_F <= true_residual`` (exact arithmetic).

    A backward-stable least-squares solve (LAPACK gelsd, SVD) returns a residual within
    ``δ = c rows cols u κ ‖T‖_F`` of the minimal one, κ over the numerically non-zero singular
    values of ``B_F`` (Higham, Accuracy and Stability, Thm 20.3/20.4; :func:`tolerances.lstsq_tol`);
    squaring and summing the ``rows·m`` entries adds a relative ``γ`` (Thm 3.1).
    """
    BF = B[:, np.asarray(mask, dtype=bool)]
    delta = lstsq_tol(cond(BF, nonzero=True), BF.shape[0], max(BF.shape[1], 1), float(np.linalg.norm(T)))
    return (true_residual + delta) ** 2 * (1 + dot_tol(T.size, 1.0))


def exact_family_defect(sch):
    """Bound on ``‖B − P H‖_F`` for an exact-family scheme (``P H`` in exact arithmetic).

    ``P H`` with ``P[:, :m] = T`` is an exact code: ``(P H)_F H_F⁻¹ [I_m; 0] = T`` for every ``F`` of
    ``n − s`` workers.  The stored ``B`` is ``fl(P H)`` (entrywise error ``<= γ_f |P||H|``, Higham
    Lemma 3.3) with its off-support entries set to zero; those entries are the residuals
    ``M p − b`` of the support equations of each part (``M = H[m:, out]ᵀ``, ``b = −H[:m, out]ᵀ e_k``),
    solved by least squares.  The system is consistent (``r_i >= s + m``), so a backward-stable
    solve leaves ``‖M p − b‖ <= c rows cols u (‖M‖ ‖p‖ + ‖b‖)`` (Thm 20.3, backward-error form).
    """
    P, H, A, m = sch.extras["P"], sch.extras["H"], sch.assignment, sch.m
    N, f = A.shape[0], H.shape[0]
    product = float(np.linalg.norm(dot_tol(f, np.abs(P) @ np.abs(H))))
    support = 0.0
    for i in range(N):
        out = np.flatnonzero(A[i] == 0)
        if out.size == 0:
            continue
        M, b = H[m:, out].T, -H[:m, out].T
        p = P[np.arange(m) * N + i, m:].T
        scale = np.linalg.norm(M, 2) * np.linalg.norm(p) + np.linalg.norm(b)
        support += lstsq_tol(1.0, out.size, max(f - m, 1), float(scale)) ** 2
    return product + float(np.sqrt(support))


def random_assignment(rng, N, n, r):
    """Every part held by exactly r random workers."""
    A = np.zeros((N, n), dtype=np.int64)
    for i in range(N):
        A[i, rng.choice(n, size=r, replace=False)] = 1
    return A


def test_target_matrix():
    T = target_matrix(3, 4)
    assert T.shape == (12, 3)
    assert np.array_equal(T, np.kron(np.eye(3), np.ones((4, 1))))


@pytest.mark.parametrize("m", [1, 2, 3])
def test_naive_is_kron(m):
    sch = encode(FANO, m, "naive")
    assert np.array_equal(sch.B, np.kron(np.ones((m, 1)), FANO))
    assert sch.B.dtype == np.float64 and sch.B.shape == (7 * m, 7)
    assert sch.assignment.dtype == np.int64


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_rd_structure(eps, m):
    sch = encode(FANO, m, "rd", eps=eps, seed=7)
    D = sch.diagonals
    assert D.shape == (m, 7)
    for k in range(m):
        assert np.array_equal(sch.B[k * 7 : (k + 1) * 7], FANO * D[k][None, :])
    mag = np.abs(D)
    # d = σ (1 + ε ξ), |ξ| <= 1: two roundings on terms adding up to 1 + ε (Higham Thm 3.1)
    tol = dot_tol(2, 1 + eps)
    assert np.all(mag >= 1 - eps - tol) and np.all(mag <= 1 + eps + tol)
    if eps == 0:
        assert set(np.unique(D)) <= {-1.0, 1.0}
    assert sch.options["eps"] == eps and sch.options["seed"] == 7 and sch.options["dist"] == "rademacher"


def test_rd_rademacher_signs_balanced():
    A = np.ones((1, 4000), dtype=np.int64)
    D = encode(A, 1, "rd", seed=3).diagonals
    assert abs(D.mean()) < 0.06  # 4000 fair signs: sd 0.016


def test_rd_gaussian():
    A = np.ones((1, 4000), dtype=np.int64)
    D = encode(A, 1, "rd", dist="gaussian", seed=3).diagonals
    assert abs(D.std() - 1) < 0.05 and len(np.unique(np.abs(D))) > 3000


@pytest.mark.parametrize("method", ["rd", "ns", "ns-worker", "exact-gaussian", "cyclic-mds"])
def test_determinism(method):
    A = cyclic_repetition_assignment(8, 3)
    m = 1 if method == "cyclic-mds" else 2
    kw = {"eps": 0.1} if method in ("rd", "ns", "ns-worker") else {}
    a = encode(A, m, method, seed=11, **kw)
    b = encode(A, m, method, seed=11, **kw)
    c = encode(A, m, method, seed=12, **kw)
    assert np.array_equal(a.B, b.B)
    assert not np.array_equal(a.B, c.B)


def test_design_object_accepted():
    class Obj:
        assignment = FANO

    assert np.array_equal(encode(Obj(), 1, "naive").B, FANO)


@settings(max_examples=15, deadline=None)
@given(
    N=st.integers(3, 8),
    n=st.integers(4, 9),
    m=st.integers(1, 3),
    seed=st.integers(0, 10**6),
    method=st.sampled_from(["naive", "rd", "ns", "ns-worker", "exact-gaussian"]),
)
def test_support_respected(N, n, m, seed, method):
    rng = np.random.default_rng(seed)
    r = min(n, m + 1)
    A = random_assignment(rng, N, n, r)
    kw = {"eps": 0.3} if method in ("rd", "ns", "ns-worker") else {}
    if method == "exact-gaussian":
        kw = {"s": r - m}
    sch = encode(A, m, method, seed=seed, **kw)
    off = np.tile(A, (m, 1)) == 0
    assert np.all(sch.B[off] == 0)
    assert sch.check_support()


@pytest.mark.parametrize("m", [1, 2, 3])
def test_ns_exact_reference_decoder(m):
    sch = encode(FANO, m, "ns", eps=0.2, seed=5)
    X0 = sch.decoder
    # independent check, part by part: C_i V_i = I_m on the holders.  C_i = pinv(V_i) by an SVD that
    # is exact for V_i + E, ‖E‖ <= c r m u ‖V_i‖, so C_i V_i − I = −C_i E: ‖.‖ <= c r m u κ(V_i)
    # (Higham Thm 20.3 applied to V_i; tolerances.lstsq_tol), the product adding γ_r |C_i||V_i|
    tols = []
    for i in range(7):
        holders = np.flatnonzero(FANO[i])
        C = sch.B[np.arange(m) * 7 + i][:, holders]
        tol = lstsq_tol(cond(X0[holders]), holders.size, m, 1.0)
        np.testing.assert_allclose(C @ X0[holders], np.eye(m), rtol=0, atol=tol)
        tols.append(tol)
    # row k N + i of B X0 is row k of C_i V_i (the off-support zeros add exactly)
    np.testing.assert_allclose(sch.B @ X0, target_matrix(m, 7), rtol=0, atol=max(tols))


def test_ns_replication_error_names_parts():
    A = FANO.copy()
    A[2, :] = 0
    A[2, 0] = 1  # part 2 now held by one worker
    A[5, :] = 0
    A[5, 3] = 1
    with pytest.raises(NotConstructibleError, match=r"parts \[2, 5\]"):
        encode(A, 2, "ns", eps=0.1)


def test_ns_rank_deficient_draw_is_an_error():
    # two holders with identical (Rademacher, eps=0) rows of X_0 make V_i rank 1 for some seed
    A = np.array([[1, 1]])
    msgs = []
    for seed in range(20):
        try:
            encode(A, 2, "ns", seed=seed)
        except NotConstructibleError as exc:
            msgs.append(str(exc))
    assert msgs and "parts [0]" in msgs[0]


def test_ns_worker_reports_residual():
    rng = np.random.default_rng(0)
    A = random_assignment(rng, 6, 24, 10)
    sch = encode(A, 3, "ns-worker", seed=1)
    N, n, m = 6, 24, 3
    R = sch.B @ sch.decoder - target_matrix(m, N)
    # two evaluations of ‖B X0 − T‖² (the encoder's and this one), each within fixed_residual_tol
    # (dot products of length n + 1, then a sum of squares; Higham Lemma 3.3, Thm 3.1)
    assert abs(sch.options["residual"] - np.sum(R**2)) <= 2 * fixed_residual_tol(
        sch.B, sch.decoder, np.ones(n, dtype=bool), m
    )
    # The cross blocks vanish in exact arithmetic: a null space exists (n = 24 > 2 * 6), and v_k
    # (k > l) is drawn from the SVD null space of M_k = [A diag(ṽ_j)]_{j<k}, ṽ the vectors before the
    # final scaling v_j = α_j ṽ_j.  A backward-stable SVD gives ‖M_k w‖ <= c rows n u ‖M_k‖ for a
    # computed null vector w (Higham Thm 20.3 / LAPACK §4.9); every ṽ has norm √n (ε = 0 Rademacher
    # d_0, then normalisation), so α_l/α_j <= ρ = max‖v‖/min‖v‖ and
    # ‖A (v_k ∘ v_l)‖ <= c k N n u ρ ‖v_k‖ (Σ_{j<k} ‖A diag(v_j)‖²)^½.
    V = sch.extras["vectors"]
    Af = A.astype(float)
    norms = np.linalg.norm(V, axis=1)
    rho = float(norms.max() / norms.min())
    blocks = [np.linalg.norm(Af * V[j][None, :], 2) for j in range(m)]
    cross_bound = 0.0
    for k, l in itertools.permutations(range(m), 2):
        late = max(k, l)
        tol = lstsq_tol(rho, late * N, n, float(norms[late] * np.sqrt(np.sum(np.square(blocks[:late])))))
        np.testing.assert_allclose(Af @ (V[k] * V[l]), 0, rtol=0, atol=tol)
        cross_bound += tol**2
        # not vacuous: a random pair of vectors of these norms would leave O(1) entries
        assert tol < 1e-6 * blocks[l] * norms[k]
    # crosstalk = Σ_{k≠l} ‖A (v_k ∘ v_l)‖² (tol bounds the norm, and its c k N n factor covers the γ_n
    # of forming B X0); its own sum of squares adds a relative γ (Thm 3.1)
    assert sch.options["crosstalk"] <= cross_bound * (1 + dot_tol(R.size, 1.0))


@pytest.mark.parametrize("kind", ["exact-gaussian", "exact-vandermonde"])
@pytest.mark.parametrize("m,s", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_exact_family_decodes_every_pattern(kind, m, s):
    n = 7
    A = cyclic_repetition_assignment(n, s + m - 1)  # r_i = s + m
    sch = encode(A, m, kind, s=s, seed=2)
    T = target_matrix(m, n)
    H = sch.extras["H"]
    f = H.shape[0]
    defect = exact_family_defect(sch)
    for S in itertools.combinations(range(n), s):
        mask = np.ones(n, dtype=bool)
        mask[list(S)] = False
        X = exact_decoder(sch, mask)
        assert np.all(X[~mask] == 0)
        # B X − T = (B − P H) X + P (H_F X_F − [I_m; 0]) since P[:, :m] = T; the solve with H_F is
        # backward stable, residual <= c f u ‖H_F‖ ‖X_F‖ (Higham Thm 9.4; tolerances.solve_tol at κ = 1),
        # and forming B X − T adds γ_{n+1} (|B||X| + |T|) (Lemma 3.3)
        used = np.flatnonzero(mask)[:f]
        nx = float(np.linalg.norm(X))
        solve_residual = solve_tol(1.0, f, np.linalg.norm(H[:, used], 2) * nx)
        bound = (
            defect * nx
            + np.linalg.norm(sch.extras["P"], 2) * solve_residual
            + np.linalg.norm(dot_tol(n + 1, np.abs(sch.B) @ np.abs(X) + T))
        )
        assert np.sum((sch.B @ X - T) ** 2) <= bound**2 * (1 + dot_tol(T.size, 1.0))
        # least squares on B_F: the minimum is at most ‖(B − P H)_F X*‖, X* = H_F⁻¹ [I_m; 0] exactly,
        # ‖X*‖ <= ‖X‖ + c f u κ(H_F) ‖X‖ (Thm 7.2, tolerances.solve_tol)
        true = defect * (nx + solve_tol(cond(H[:, used]), f, nx))
        assert lstsq_error(sch.B, T, mask) <= lstsq_sq_tol(sch.B, T, mask, true)


def test_exact_family_needs_replication():
    A = cyclic_repetition_assignment(6, 1)  # r = 2
    with pytest.raises(NotConstructibleError, match=r"r_i >= s \+ m = 3; parts \[0, 1, 2, 3, 4, 5\]"):
        encode(A, 2, "exact-gaussian", s=1)


def test_vandermonde_conditioning_grows():
    kappas = []
    for n in (6, 12, 18):
        sch = encode(np.ones((2, n), dtype=int), 1, "exact-vandermonde", s=1)
        H = sch.extras["H"]
        kappas.append(np.linalg.cond(H[:, 1:]))
    assert kappas[0] < kappas[1] < kappas[2] and kappas[2] > 1e4 * kappas[0]


def test_vandermonde_warns_beyond_float64():
    with pytest.warns(RuntimeWarning, match="exact-vandermonde"):
        try:
            encode(np.ones((2, 40), dtype=int), 1, "exact-vandermonde", s=1)
        except NotConstructibleError:
            pass


@pytest.mark.parametrize("n,s", [(6, 1), (6, 2), (8, 3)])
def test_fractional_repetition_exact(n, s):
    if n % (s + 1):
        pytest.skip("needs (s+1) | n")
    A = fractional_repetition_assignment(n, s)
    sch = encode(A, 1, "fractional-repetition")
    T = np.ones((n, 1))
    for S in itertools.combinations(range(n), s):
        mask = np.ones(n, dtype=bool)
        mask[list(S)] = False
        # B = A is an exact 0/1 code: the minimal residual is exactly 0; only the solve rounds
        assert lstsq_error(sch.B, T, mask) <= lstsq_sq_tol(sch.B, T, mask)
    # 0/1 matrix times a 0/1 decoder: integer arithmetic, exact in float64
    assert np.array_equal(sch.B @ sch.decoder, T)
    assert sch.options["s"] == s


@pytest.mark.parametrize("n,s", [(5, 1), (7, 2), (8, 3)])
def test_cyclic_mds_exact(n, s):
    A = cyclic_repetition_assignment(n, s)
    sch = encode(A, 1, "cyclic-mds", seed=4)
    T = np.ones((n, 1))
    for S in itertools.combinations(range(n), s):
        mask = np.ones(n, dtype=bool)
        mask[list(S)] = False
        # exact up to rounding: B_F is within a backward error of the solve's own size of a code
        # with T in its range (the construction solves s x s systems per column), so the minimal
        # residual is at most δ of lstsq_sq_tol and the computed one at most 2 δ
        delta = np.sqrt(lstsq_sq_tol(sch.B, T, mask))
        assert lstsq_error(sch.B, T, mask) <= lstsq_sq_tol(sch.B, T, mask, delta)
    # and it is not exact for s + 1 stragglers in general.  Not a rounding tolerance: "clearly
    # non-zero", 1e-6 is many orders above the rounding bounds above (about 1e-19 here)
    worst = max(
        lstsq_error(sch.B, T, np.isin(np.arange(n), S, invert=True)) for S in itertools.combinations(range(n), s + 1)
    )
    assert worst > 1e-6


def test_cyclic_mds_needs_cyclic_assignment():
    with pytest.raises(InvalidArgumentError, match="assignment"):
        encode(FANO, 1, "cyclic-mds")


def test_bibd_and_expander_are_the_assignment():
    G = nx.random_regular_graph(3, 10, seed=1)
    A = nx.to_numpy_array(G, dtype=int) + np.eye(10, dtype=int)
    assert np.array_equal(encode(A, 1, "expander").B, A)
    assert np.array_equal(encode(FANO, 1, "bibd-optimal").B, FANO)


@pytest.mark.parametrize("method", ["fractional-repetition", "cyclic-mds", "bibd-optimal", "expander"])
def test_classic_codes_need_m1(method):
    with pytest.raises(InvalidArgumentError, match="^m:"):
        encode(cyclic_repetition_assignment(4, 1), 2, method)


@pytest.mark.parametrize(
    "bad,arg",
    [
        (dict(assignment=np.array([[0, 2], [1, 1]])), "assignment"),
        (dict(assignment=np.array([[np.nan, 1], [1, 1]])), "assignment"),
        (dict(assignment=np.array([1, 0, 1])), "assignment"),
        (dict(assignment=np.array([[1, 1], [0, 0]])), "assignment"),
        (dict(m=0), "m"),
        (dict(method="magic"), "method"),
        (dict(eps=-0.1), "eps"),
        (dict(eps=float("nan")), "eps"),
        (dict(seed=-1), "seed"),
        (dict(dist="cauchy"), "dist"),
        (dict(unknown=3), "options"),
    ],
)
def test_encode_validation(bad, arg):
    kw = dict(assignment=FANO, m=2, method="rd")
    kw.update(bad)
    A = kw.pop("assignment")
    with pytest.raises(InvalidArgumentError) as info:
        encode(A, **kw)
    assert info.value.argument == arg


def test_from_matrix_validation():
    A = FANO
    B = np.kron(np.ones((2, 1)), A)
    sch = Scheme.from_matrix(B, A, 2, decoder=np.ones((7, 2)))
    assert sch.method == "custom" and sch.m == 2
    with pytest.raises(InvalidArgumentError, match="^B:.*shape"):
        Scheme.from_matrix(B[:-1], A, 2)
    bad = B.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidArgumentError, match="NaN"):
        Scheme.from_matrix(bad, A, 2)
    bad = B.copy()
    bad[7 + 0, np.flatnonzero(A[0] == 0)[0]] = 1.0
    with pytest.raises(InvalidArgumentError, match=r"support violation.*\(1, 0, "):
        Scheme.from_matrix(bad, A, 2)
    with pytest.raises(InvalidArgumentError, match="^m:"):
        Scheme.from_matrix(B, A, 0)
    with pytest.raises(InvalidArgumentError, match="^decoder:"):
        Scheme.from_matrix(B, A, 2, decoder=np.ones((7, 3)))
    with pytest.raises(InvalidArgumentError, match="^assignment:"):
        Scheme.from_matrix(B, A * 2, 2)


def test_B_is_read_only():
    sch = encode(FANO, 1, "rd")
    with pytest.raises(ValueError):
        sch.B[0, 0] = 5.0


def test_every_method_listed_builds():
    """Every registered encoder builds its own small example (the registry's ``example``), with shapes."""
    from gcsim.coding.encoders import get_encoder

    for method in METHODS:
        example = get_encoder(method).example
        assert example is not None, f"{method}: no example instance"
        A, m, kw = example()
        sch = encode(A, m, method, **kw)
        N = sch.num_parts
        assert sch.method == method and sch.B.shape == (m * N, sch.n)
        assert sch.decoder is None or sch.decoder.shape == (sch.n, m)


@pytest.mark.parametrize(
    "method,m,opts",
    [
        ("naive", 2, {}),
        ("rd", 2, {}),
        ("ns", 2, {"eps": 0.1}),
        ("ns-worker", 2, {}),
        ("exact-gaussian", 1, {"s": 1}),
        ("exact-vandermonde", 1, {"s": 1}),
        ("bibd-optimal", 1, {}),
    ],
)
def test_scheme_object_contract(method, m, opts):
    import dataclasses
    import json

    from gcsim.coding.schemes import Scheme, SchemeParams
    from gcsim.errors import CatalogueError

    sch = encode(FANO, m, method, seed=3, **opts)
    assert sch.kind == "scheme" and sch.verify() is True
    assert sch.params == SchemeParams(7, 7, m) and sch.params._asdict()["num_parts"] == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        sch.m = 5
    with pytest.raises(TypeError):
        sch.options["eps"] = 1.0  # read-only mapping
    arrays = sch.to_arrays()
    assert all(not a.flags.writeable for a in arrays.values())
    meta = json.loads(json.dumps(sch.bundle_metadata()))
    assert meta["params"] == [7, 7, m] and meta["construction"] == method
    back = Scheme.from_arrays(arrays, meta)
    assert back.params == sch.params and back.method == sch.method
    for key, a in arrays.items():
        assert np.array_equal(back.to_arrays()[key], a)
    with pytest.raises(CatalogueError):
        Scheme.from_arrays(arrays, {**meta, "params": [7, 7, m + 1]})
    bad = dict(arrays)
    bad["B"] = np.array(arrays["B"]) * (1 - np.tile(FANO, (m, 1))) + 1.0  # off-support entries
    with pytest.raises(CatalogueError):
        Scheme.from_arrays(bad, meta)


def test_scheme_refuses_entries_beyond_float64_naming_the_field():
    import dataclasses

    sch = encode(np.eye(3, dtype=int), 1, "naive")
    B = sch.B.astype(object)
    B[0, 0] = 10**400
    with pytest.raises(InvalidArgumentError, match=r"^B: cannot be converted to float64"):
        dataclasses.replace(sch, B=B)
