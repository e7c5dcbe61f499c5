"""Tests of gcsim.cerar.optimize: the condition-number-constrained alternating SDP scheme.

Independent references: explicit shift-matrix products (not the batched window code),
scipy's SVD / eigenvalues / orthogonal Procrustes / least squares, and a local real-DFT
exact design written here from the definition (SPEC §5).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

from gcsim.cerar.design import CerarDesign
from gcsim.cerar.optimize import (
    CERT_RTOL,
    _a_data,
    _d_data,
    _least_squares_decoders,
    _polar_factor,
    _procrustes_encoders,
    clip_condition,
    condition_numbers,
    optimized_design,
)
from gcsim.errors import InvalidArgumentError, SolverError

pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")


# ---------------------------------------------------------------------------
# independent references

def shift(L: int, c: int, s: int) -> np.ndarray:
    S = np.zeros((L, c))
    for tau in range(c):
        if tau + s < L:
            S[tau + s, tau] = 1.0
    return S


def reference_errors(A: np.ndarray, D: np.ndarray) -> tuple[float, float]:
    """(Frobenius, worst case) from explicit products D_i S_{m-1} A_{i-m} - I."""
    N, c, L = D.shape
    fro, worst = 0.0, 0.0
    for i in range(N):
        row = []
        for m in range(1, N):
            E = D[i] @ shift(L, c, m - 1) @ A[(i - m) % N] - np.eye(c)
            fro += float(np.sum(E ** 2))
            row.append(E)
        worst = max(worst, float(sla.svdvals(np.hstack(row))[0]))
    return fro, worst


def svd_kappa(X: np.ndarray) -> float:
    s = sla.svdvals(X)
    return float(s[0] / s[-1])


def periodic_exact(V: np.ndarray) -> CerarDesign:
    """Exact design from an N-periodic column sequence v_k = V[:, k mod N] (c x N, c <= N).

    D_i[:, l] = v_{i-l}; the window of D_i at offset m-1 holds v_{i-m+1}, ..., v_{i-m-c+2}, which
    depends on j = i - m only, so A_j = window^{-1} makes every E_{i,m} vanish (needs every c
    cyclically consecutive columns independent).
    """
    c, N = V.shape
    L = c + N - 2
    D = np.stack([V[:, (i - np.arange(L)) % N] for i in range(N)])
    A = np.stack([np.linalg.inv(V[:, (j + 1 - np.arange(c)) % N]) for j in range(N)])
    return CerarDesign(N, c, A, D, method="local-exact")


def real_dft_exact(N: int) -> CerarDesign:
    """c = N, v_k = real DFT columns: orthogonal (scaled) encoders."""
    k = np.arange(N)
    rows = [np.ones(N)]
    for s in range(1, (N + 1) // 2):
        rows += [np.sqrt(2) * np.cos(2 * np.pi * s * k / N), np.sqrt(2) * np.sin(2 * np.pi * s * k / N)]
    if N % 2 == 0:
        rows.append((-1.0) ** k)
    return periodic_exact(np.array(rows))


def unit_vector_exact(N: int, c: int) -> CerarDesign:
    """c | N, v_k = e_{k mod c}: permutation encoders."""
    return periodic_exact(np.eye(c)[:, np.arange(N) % c])


# ---------------------------------------------------------------------------
# argument validation

@pytest.mark.parametrize("kw, name", [
    ({"kappa": 0.5}, "kappa"),
    ({"kappa": float("nan")}, "kappa"),
    ({"kappa_D": 0.9}, "kappa_D"),
    ({"objective": "max"}, "objective"),
    ({"init": "nonsense"}, "init"),
    ({"max_iter": -1}, "max_iter"),
    ({"solver": "NOPE"}, "solver"),
    ({"on_failure": "ignore"}, "on_failure"),
])
def test_bad_arguments_name_the_argument(kw, name):
    with pytest.raises(InvalidArgumentError) as exc:
        optimized_design(3, 4, progress=False, **kw)
    assert exc.value.argument == name


@pytest.mark.parametrize("N, c, name", [(1, 4, "N"), (3, 0, "c")])
def test_bad_sizes(N, c, name):
    with pytest.raises(InvalidArgumentError) as exc:
        optimized_design(N, c, kappa=2.0, progress=False)
    assert exc.value.argument == name


def test_init_design_of_wrong_size_refused():
    with pytest.raises(InvalidArgumentError, match="init"):
        optimized_design(4, 4, init=real_dft_exact(3), progress=False)


# ---------------------------------------------------------------------------
# the certificate, monotonicity, reported metrics

@pytest.mark.parametrize("N, c, kappa, kappa_D, objective", [
    (3, 4, 4.0, None, "frobenius"),
    (4, 5, 3.0, 6.0, "frobenius"),
    (3, 4, 5.0, None, "worst"),
    (3, 4, 2.0, math.inf, "frobenius"),
])
def test_certificate_monotone_and_metrics(N, c, kappa, kappa_D, objective):
    d = optimized_design(N, c, kappa=kappa, kappa_D=kappa_D, objective=objective, init="random",
                         seed=1, max_iter=4, tol=0, progress=False)
    p = d.params
    kD = kappa if kappa_D is None else kappa_D
    # SVD certificate, recomputed with scipy
    for j in range(N):
        assert svd_kappa(d.encoders[j]) <= kappa * (1 + CERT_RTOL)
        assert p["kappa_A"][j] == pytest.approx(svd_kappa(d.encoders[j]), rel=1e-9)
    for i in range(N):
        if math.isfinite(kD):
            assert svd_kappa(d.decoders[i]) <= kD * (1 + CERT_RTOL)
        assert p["kappa_D"][i] == pytest.approx(svd_kappa(d.decoders[i]), rel=1e-9)
    # objective history monotone non-increasing, and it improved on the starting point
    h = np.asarray(p["history"])
    assert np.all(np.diff(h) <= 0)
    assert h[-1] < h[0]
    # reported metrics equal explicit shift-matrix products
    fro, worst = reference_errors(d.encoders, d.decoders)
    assert p["frobenius"] == pytest.approx(fro, rel=1e-10)
    assert p["worst_case"] == pytest.approx(worst, rel=1e-10)
    assert h[-1] == pytest.approx(fro if objective == "frobenius" else worst, rel=1e-10)
    assert d.method == "optimized"
    # cross-check with the analysis module (an independent implementation of the metrics)
    from gcsim.cerar.analysis import errors

    e = errors(d)
    assert e.frobenius == pytest.approx(fro, rel=1e-10) and e.worst_case == pytest.approx(worst, rel=1e-10)
    assert p["mean_relative_mse"] == pytest.approx(e.mean_relative_mse, rel=1e-10)
    np.testing.assert_allclose(p["kappa_A"], e.kappa_encoders, rtol=1e-9)
    assert p["solver"] == "SCS" and p["iterations"] >= 1 and p["seed"] == 1
    assert all(s["statuses"] in (["optimal"], ["closed_form"]) for s in p["statuses"] if s["accepted"])


@pytest.mark.parametrize("N, c, kappa", [(3, 4, 3.0), (4, 5, 10.0)])
def test_no_zero_error_when_c_exceeds_N(N, c, kappa):
    """Exactness theorem: c > N admits no exact design, so the optimum at bounded kappa is > 0."""
    d = optimized_design(N, c, kappa=kappa, init="perturbation", max_iter=3, progress=False)
    fro, worst = reference_errors(d.encoders, d.decoders)
    assert fro > 1e-6 and worst > 1e-4
    assert d.params["frobenius"] > 1e-6


def test_starts_from_matched_perturbation_and_never_worse():
    from gcsim.cerar.constructions import design

    d = optimized_design(3, 5, kappa=20.0, max_iter=3, progress=False)
    e = d.params["eps"]
    pert = design(3, 5, "perturbation", eps=e)
    assert max(condition_numbers(pert.encoders)) <= 20.0 and max(condition_numbers(pert.decoders)) <= 20.0
    assert d.params["frobenius"] <= reference_errors(pert.encoders, pert.decoders)[0]


# ---------------------------------------------------------------------------
# c <= N: zero error is reachable at kappa = 1

@pytest.mark.parametrize("N", [3, 4])
def test_local_exact_design_is_exact_with_kappa_one(N):
    d = real_dft_exact(N)
    assert reference_errors(d.encoders, d.decoders)[0] < 1e-24
    assert max(svd_kappa(a) for a in d.encoders) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kappa, max_iter, tol_err", [(1.0, 80, 1e-12), (2.0, 15, 1e-4)])
def test_c_equal_N_reaches_zero_error(kappa, max_iter, tol_err):
    """From a perturbed exact design, kappa(A) <= 1 (Procrustes path) or 2 (SDP path) reaches ~0."""
    ex = real_dft_exact(4)
    rng = np.random.default_rng(5)
    noisy = CerarDesign(4, 4, ex.encoders + 0.05 * rng.standard_normal(ex.encoders.shape), ex.decoders)
    start = reference_errors(noisy.encoders, noisy.decoders)[0]
    d = optimized_design(4, 4, kappa=kappa, kappa_D=math.inf, init=noisy, max_iter=max_iter, tol=0,
                         progress=False)
    fro, _ = reference_errors(d.encoders, d.decoders)
    assert start > 1e-2 and fro < tol_err
    assert max(svd_kappa(a) for a in d.encoders) <= kappa * (1 + CERT_RTOL)


@pytest.mark.parametrize("N, c", [(4, 2), (6, 3)])
def test_c_dividing_N_reaches_zero_error_with_kappa_one(N, c):
    ex = unit_vector_exact(N, c)
    assert reference_errors(ex.encoders, ex.decoders)[0] < 1e-24
    rng = np.random.default_rng(6)
    noisy = CerarDesign(N, c, ex.encoders + 0.05 * rng.standard_normal(ex.encoders.shape), ex.decoders)
    d = optimized_design(N, c, kappa=1.0, kappa_D=math.inf, init=noisy, max_iter=80, tol=0, progress=False)
    assert reference_errors(d.encoders, d.decoders)[0] < 1e-12


def test_kappa_one_cannot_be_exact_for_three_two():
    """(N, c) = (3, 2): c <= N but c does not divide N, so kappa(A) = 1 forces F > 0 (needs sqrt 3)."""
    d = optimized_design(3, 2, kappa=1.0, kappa_D=math.inf, init="random", max_iter=30, progress=False)
    assert reference_errors(d.encoders, d.decoders)[0] > 1e-3


def test_exact_design_is_a_fixed_point():
    ex = real_dft_exact(4)
    d = optimized_design(4, 4, kappa=1.0, kappa_D=math.inf, init=ex, max_iter=3, progress=False)
    assert d.params["frobenius"] < 1e-24
    assert d.params["stop_reason"] in ("zero objective", "converged")


# ---------------------------------------------------------------------------
# determinism, scale invariance, failures

def test_seed_determinism():
    kw = dict(kappa=4.0, init="random", max_iter=1, tol=0, progress=False)
    a = optimized_design(3, 4, seed=7, **kw)
    b = optimized_design(3, 4, seed=7, **kw)
    assert np.array_equal(a.encoders, b.encoders) and np.array_equal(a.decoders, b.decoders)
    assert a.params["history"] == b.params["history"]
    # another seed gives another random start (hence another result)
    from gcsim.cerar.optimize import _initial_point

    A7 = _initial_point(3, 4, "random", None, 7, 4.0, 4.0)[0]
    A8 = _initial_point(3, 4, "random", None, 8, 4.0, 4.0)[0]
    assert not np.allclose(A7, A8)


def test_scale_invariance_of_the_iteration():
    """The gauge A -> sA, D -> D/s leaves E (and, after gauge fixing, the whole iteration) unchanged."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((3, 4, 4))
    D = _least_squares_decoders(clip_condition(A, 4.0))
    hs = []
    for s in (1.0, 7.0):
        d = optimized_design(3, 4, kappa=4.0, init=CerarDesign(3, 4, A * s, D / s), max_iter=3, tol=0,
                             progress=False)
        hs.append(d.params["history"])
    np.testing.assert_allclose(hs[0], hs[1], rtol=1e-6)


def test_first_step_failure_raises():
    with pytest.raises(SolverError):
        optimized_design(3, 4, kappa=3.0, init="random", max_iter=2, progress=False,
                         solver_options={"max_iters": 1})


# ---------------------------------------------------------------------------
# the ingredients (theory checks, docs/theory/55_cerar_opt.md)

@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(0, 3), st.integers(0, 2**31 - 1))
def test_inner_approximation_implies_sigma_min_bound(p, extra, seed):
    """sym(X Q^T) >= t I with Q Q^T = I implies sigma_p(X) >= t (and it is tight at X = P Q)."""
    q = p + extra
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((q, p)))[0].T        # p x q, Q Q^T = I
    X = rng.standard_normal((p, q))
    t = float(np.linalg.eigvalsh((X @ Q.T + Q @ X.T) / 2)[0])
    if t > 0:
        assert sla.svdvals(X)[-1] >= t - 1e-12
    Qx = _polar_factor(X)
    np.testing.assert_allclose(Qx @ Qx.T, np.eye(p), atol=1e-12)
    P = X @ Qx.T
    np.testing.assert_allclose(P, P.T, atol=1e-12)
    assert np.linalg.eigvalsh((P + P.T) / 2)[0] == pytest.approx(sla.svdvals(X)[-1], abs=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(0, 3), st.floats(0.1, 10), st.integers(0, 2**31 - 1))
def test_schur_lmi_is_the_norm_bound(p, extra, kappa, seed):
    q = p + extra
    X = np.random.default_rng(seed).standard_normal((p, q))
    M = np.block([[kappa * np.eye(p), X], [X.T, kappa * np.eye(q)]])
    # the eigenvalues are kappa +- sigma_i (and kappa), so M >= 0 iff sigma_max(X) <= kappa
    assert np.linalg.eigvalsh(M)[0] == pytest.approx(kappa - sla.svdvals(X)[0], abs=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.floats(1.0, 50.0), st.integers(0, 2**31 - 1))
def test_clip_condition(c, kappa, seed):
    X = np.random.default_rng(seed).standard_normal((3, c, c + 2))
    Y = clip_condition(X, kappa)
    for x, y in zip(X, Y):
        assert svd_kappa(y) <= kappa * (1 + CERT_RTOL)
        assert sla.svdvals(y)[0] == pytest.approx(sla.svdvals(x)[0], rel=1e-12)
        if svd_kappa(x) <= kappa * (1 - 1e-9):
            np.testing.assert_allclose(y, x, atol=1e-12)


def test_block_data_match_shift_matrices():
    rng = np.random.default_rng(0)
    N, c = 4, 3
    L = c + N - 2
    A, D = rng.standard_normal((N, c, c)), rng.standard_normal((N, c, L))
    W, M = _d_data(A), _a_data(D)
    for i in range(N):
        ref = np.hstack([shift(L, c, m - 1) @ A[(i - m) % N] for m in range(1, N)])
        np.testing.assert_array_equal(W[i], ref)
    for j in range(N):
        ref = np.vstack([D[(j + m) % N] @ shift(L, c, m - 1) for m in range(1, N)])
        np.testing.assert_array_equal(M[j], ref)


def test_closed_form_steps_are_optimal():
    rng = np.random.default_rng(3)
    N, c = 4, 3
    L = c + N - 2
    A, D = rng.standard_normal((N, c, c)), rng.standard_normal((N, c, L))
    # D-step: scipy least squares per worker
    Dls = _least_squares_decoders(A)
    W = _d_data(A)
    T = np.tile(np.eye(c), (1, N - 1))
    for i in range(N):
        ref = sla.lstsq(W[i].T, T.T)[0].T
        np.testing.assert_allclose(Dls[i], ref, atol=1e-10)
    # kappa = 1 A-step: scaled orthogonal Procrustes (scipy) per encoder
    Ap = _procrustes_encoders(D)
    M = _a_data(D)
    Tv = np.tile(np.eye(c), (N - 1, 1))
    for j in range(N):
        R, _ = sla.orthogonal_procrustes(M[j], Tv)
        t = np.trace(R.T @ M[j].T @ Tv) / np.sum(M[j] ** 2)
        np.testing.assert_allclose(Ap[j], t * R, atol=1e-10)
        assert svd_kappa(Ap[j]) == pytest.approx(1.0, abs=1e-12)


def test_pareto_front_small():
    from gcsim.cerar.constructions import design
    from gcsim.cerar.optimize import pareto_front

    grid = [0.05, 0.1, 0.2, 0.4]
    t = pareto_front(3, 4, [3.0, 8.0], eps_grid=grid, max_iter=2, progress=False, starts="best")
    opt = t[t.family == "optimized"].sort_values("kappa_cap")
    pert = t[t.family == "perturbation"]
    assert len(opt) == 2 and len(pert) == len(grid)
    # optimized front non-increasing in the cap and within the caps
    assert opt.frobenius.iloc[1] <= opt.frobenius.iloc[0]
    assert np.all(opt.kappa_max <= opt.kappa_cap * (1 + CERT_RTOL))
    # perturbation rows are the construction's numbers; ratio against the best fitting one
    for _, r in pert.iterrows():
        d = design(3, 4, "perturbation", eps=r.eps)
        assert r.frobenius == pytest.approx(reference_errors(d.encoders, d.decoders)[0], rel=1e-10)
    for _, r in opt.iterrows():
        fit = pert[pert.kappa_max <= r.kappa_cap]
        if len(fit):
            assert r.pert_frobenius_at_cap == pytest.approx(fit.frobenius.min())
            assert r.ratio_opt_pert <= 1.0 + 1e-12
        else:
            assert np.isnan(r.ratio_opt_pert)
