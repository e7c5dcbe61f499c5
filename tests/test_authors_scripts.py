"""The computations of Munim & Ramamoorthy's public scripts, reimplemented here, checked against gcsim.

The authors' repository ``smunim-47/CE-AGC`` holds the paper's two experiment scripts:

* ``random_diagonal_construction.py`` (PG(2,9), ``m = 2``): ±1 random diagonals drawn with
  ``np.random.seed(k)``; straggler sets from ``np.random.seed(j + k)``; the optimal error by
  ``numpy.linalg.lstsq`` column by column of ``F = kron(I_m, 1)``; the average error, the baseline
  ``E = [A; A]`` on the straggler sets of ``np.random.seed(78 + j)``, the upper bound
  ``m n_p - m d2² f / ((m d2 - λ) + λ f)``, the naive closed form and the lower bound
  ``max_j (j+1) ⌊(s + m - j - 1)/d2⌋``;
* ``hadamard_product_construction.py`` (a bi-regular graph with 20 parts and 40 workers, ``m = 2``):
  Construction 2 (each part's row is ``v`` on its holders divided by ``‖v[N_i]‖²``; the second vector is
  the last right-singular vector of ``P``, or a ±1 vector in the null space of ``P`` for ``v = 1``), the
  diagonal-dominance bound ``m n_p - 1ᵀP_F D⁻¹P_Fᵀ1 - 1ᵀQ_F D⁻¹Q_Fᵀ1`` with ``D`` the absolute row
  sums of ``P_FᵀP_F + Q_FᵀQ_F``, and the lower bound ``max_j (j+1) ⌊n_p (s + m - j - 1)/(n_w d2)⌋``.

The helpers prefixed ``authors_`` follow those loops, seeds and normalizations with NumPy only (no
gcsim); the scripts' sizes are cut down (fewer straggler fractions, encoder draws and patterns), the
design is the same for both sides (gcsim's PG(2,3) and PG(2,9); the authors draw their bi-regular graph
with Python's unseeded ``random``, so a seeded gcsim bi-regular graph of the same parameters stands in).
gcsim's numbers must agree: errors to 1e-10 relative, bounds to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

import gcsim
from exact_lstsq import checked_lstsq_residual
from gcsim.coding import bounds as bd
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.schemes import Scheme, encode
from tolerances import cond, lstsq_tol

ERR_RTOL = 1e-10
BOUND_RTOL = 1e-12


def close(gc, theirs, rtol):
    """``|gcsim - authors| <= rtol max(1, |authors|)`` elementwise (errors near 0 compared at scale 1)."""
    gc, theirs = np.asarray(gc, float), np.asarray(theirs, float)
    return bool(np.all(np.abs(gc - theirs) <= rtol * np.maximum(1.0, np.abs(theirs))))


# ----------------------------------------------------------------------------------------------
# the authors' computations, NumPy only
# ----------------------------------------------------------------------------------------------


def authors_setup(A, m):
    n_1, n_2 = A.shape
    d_2 = (A.T @ A)[0, 0]
    lmd = (A.T @ A)[0, 1]
    F = np.kron(np.eye(m), np.ones((n_1, 1)))
    return n_1, n_2, d_2, lmd, F


def authors_err(E_F, F):
    """Their optimal error: lstsq of E_F x = a for every column a of F, squared residual norms summed.

    Their ``numpy.linalg.lstsq`` is kept where ``E_F`` has full column rank; where it is
    rank-deficient (the bi-regular baseline ``[A; A]`` and RD ``[A D_1; A D_2]`` beyond 20 and 40
    columns' rank) gelsd's residual depends on the OpenBLAS kernel, so their number is taken as
    what lstsq computes in exact arithmetic: the exact residual (tests/exact_lstsq.py).
    """
    # their column-by-column sum of squared residual norms is the Frobenius residual of one solve
    return checked_lstsq_residual(E_F, F)


def authors_s_list(n_w, p, drop_zero):
    s_list = np.linspace(0, 0.25 * n_w, p + 1, dtype=int)
    return s_list[1:] if drop_zero else s_list


def authors_rd_script(A, m, p, d_choices, itr):
    """random_diagonal_construction.py with its loops and seeds (m = 2: two diagonals per draw)."""
    n_1, n_2, d_2, lmd, F = authors_setup(A, m)
    E = np.vstack((A, A))
    n_w, n_p = E.shape[1], n_1
    s_list = authors_s_list(n_w, p, drop_zero=True)
    out = {"s_list": s_list, "draws": [], "exp_fixed_diag": np.zeros((len(s_list), d_choices))}
    exp_opt_error = np.zeros(len(s_list))
    for i in range(len(s_list)):
        total = 0.0
        for k in range(d_choices):
            np.random.seed(k)
            d_v_1 = np.random.choice([1, -1], size=(n_2), p=[0.5, 0.5])
            d_v_2 = np.random.choice([1, -1], size=(n_2), p=[0.5, 0.5])
            E1 = np.vstack((A @ np.diag(d_v_1), A @ np.diag(d_v_2)))
            c = 0.0
            for j in range(itr):
                np.random.seed(j + k)
                rns = np.sort(np.random.choice(np.arange(0, n_w), int(n_w - s_list[i]), replace=False))
                e = authors_err(E1[:, rns], F)
                out["draws"].append((i, k, np.stack([d_v_1, d_v_2]), rns, e))
                c = c + e
            out["exp_fixed_diag"][i, k] = c / itr
            total = total + c
        exp_opt_error[i] = total / (d_choices * itr)
    out["exp_opt_error"] = exp_opt_error
    lb = np.zeros(m)
    out["new_lower_bound"] = np.zeros(len(s_list))
    for i in range(len(s_list)):
        for j in range(m):
            lb[j] = np.floor((s_list[i] + m - j - 1) / d_2) * (j + 1)
        out["new_lower_bound"][i] = np.max(lb)
    out["baseline"] = []
    for i in range(len(s_list)):
        for j in range(itr):
            np.random.seed(78 + j)
            strag = np.random.choice(np.arange(0, int(n_w)), int(s_list[i]), replace=False)
            rns = np.sort(np.setdiff1d(np.arange(0, n_w), strag))
            out["baseline"].append((i, rns, authors_err(E[:, rns], F)))
    f = n_w - s_list
    out["exp_bound_bernoulli"] = m * n_p - ((m * d_2**2 * f) / ((m * d_2 - lmd) + lmd * f))
    out["opt_trivial"] = m * n_p - ((d_2**2 * f) / ((d_2 - lmd) + lmd * f))
    return out


def mask_of(indices, n):
    mask = np.zeros(n, bool)
    mask[np.asarray(indices, dtype=np.int64)] = True
    return mask


# ----------------------------------------------------------------------------------------------
# random_diagonal_construction.py
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg23_run():
    A = gcsim.bibd(13, 4, 1).assignment  # PG(2,3): v = b = 13, k = r = 4, λ = 1
    return A, authors_rd_script(A, 2, p=3, d_choices=4, itr=12)


def test_rd_errors_match_the_authors_per_pattern_and_on_average(pg23_run):
    A, run = pg23_run
    m, n = 2, A.shape[1]
    assert list(run["s_list"]) == [1, 2, 3]
    by_draw: dict = {}
    for i, k, D, rns, e in run["draws"]:
        by_draw.setdefault((i, k), (D, []))[1].append((rns, e))
    per_s = np.zeros(len(run["s_list"]))
    for (i, k), (D, patterns) in by_draw.items():
        # the same signs through gcsim's RD layout: block k is A diag(d_k), rows block-major
        sch = Scheme(B=np.vstack([A * D[0][None, :], A * D[1][None, :]]), assignment=A, m=m, method="rd", diagonals=D)
        assert sch.verify()  # gcsim's own check of the RD structure B^(k) = A diag(d_k)
        masks = np.stack([mask_of(rns, n) for rns, _ in patterns])
        ours = optimal_error(sch, masks, progress=False)
        theirs = np.array([e for _, e in patterns])
        assert close(ours, theirs, ERR_RTOL), (i, k, np.max(np.abs(ours - theirs)))
        assert close(ours.mean(), run["exp_fixed_diag"][i, k], ERR_RTOL)
        per_s[i] += ours.sum()
    assert close(per_s / (4 * 12), run["exp_opt_error"], ERR_RTOL)


def test_rd_layout_is_the_authors_for_gcsims_own_draw():
    # gcsim's encode(A, 2, "rd") builds exactly the authors' vstack(A D1, A D2) from its diagonals
    A = gcsim.bibd(13, 4, 1).assignment
    sch = encode(A, 2, "rd", seed=11)
    D = sch.diagonals
    assert set(np.unique(D)) <= {-1.0, 1.0}
    assert np.array_equal(sch.B, np.vstack((A @ np.diag(D[0]), A @ np.diag(D[1]))))


def test_rd_baseline_and_closed_forms_match_the_authors(pg23_run):
    A, run = pg23_run
    m, (v, n) = 2, A.shape
    naive = encode(A, m, "naive")
    assert np.array_equal(naive.B, np.vstack((A, A)))  # their E
    for i, rns, e in run["baseline"]:
        s = int(run["s_list"][i])
        ours = optimal_error(naive, mask_of(rns, n), progress=False)
        assert close(ours, e, ERR_RTOL)
        # their "opt_trivial" is the naive closed form, and the per-pattern errors equal it (Theorem 4(b))
        assert close(bd.bibd_naive_error(v, 4, 1, m, s), run["opt_trivial"][i], BOUND_RTOL)
        assert close(ours, run["opt_trivial"][i], ERR_RTOL)
    for i, s in enumerate(run["s_list"]):
        s = int(s)
        ub = bd.bibd_rd_upper_bound(v, 4, 1, m, s)
        assert close(ub, run["exp_bound_bernoulli"][i], BOUND_RTOL)
        mask = np.ones(n, bool)
        mask[:s] = False
        assert close(bd.rd_upper_bound(A, m, mask), run["exp_bound_bernoulli"][i], BOUND_RTOL)
        low = bd.partial_uncovering_lower_bound(A, m, s)
        assert low.value == run["new_lower_bound"][i]
        assert bd.worst_case_rank_lower_bound(A, m, s).value >= low.value


def test_pg29_bounds_at_the_authors_straggler_counts():
    # the paper's setup: PG(2,9), m = 2, their 15 straggler counts up to s/n = 0.25; bounds only
    # (cheap), and the errors of one draw at two of the counts
    A = gcsim.bibd(91, 10, 1).assignment
    m = 2
    n_1, n_2, d_2, lmd, F = authors_setup(A, m)
    assert (n_1, n_2, d_2, lmd) == (91, 91, 10, 1)
    s_list = authors_s_list(n_2, 15, drop_zero=True)
    f = n_2 - s_list
    upper = m * n_1 - (m * d_2**2 * f) / ((m * d_2 - lmd) + lmd * f)
    trivial = m * n_1 - (d_2**2 * f) / ((d_2 - lmd) + lmd * f)
    lower = [max(np.floor((s + m - j - 1) / d_2) * (j + 1) for j in range(m)) for s in s_list]
    for i, s in enumerate(s_list):
        s = int(s)
        assert close(bd.bibd_rd_upper_bound(91, 10, 1, m, s), upper[i], BOUND_RTOL)
        assert close(bd.bibd_naive_error(91, 10, 1, m, s), trivial[i], BOUND_RTOL)
        low = bd.partial_uncovering_lower_bound(A, m, s)
        assert low.value == lower[i]
        assert bd.worst_case_rank_lower_bound(A, m, s).value >= low.value  # never below (theory §45.8)
    np.random.seed(0)
    d = np.stack([np.random.choice([1, -1], size=(n_2), p=[0.5, 0.5]) for _ in range(m)])
    E1 = np.vstack((A @ np.diag(d[0]), A @ np.diag(d[1])))
    sch = Scheme(B=E1, assignment=A, m=m, method="rd", diagonals=d)
    for s in (int(s_list[3]), int(s_list[-1])):
        np.random.seed(s)
        rns = np.sort(np.random.choice(np.arange(0, n_2), int(n_2 - s), replace=False))
        assert close(optimal_error(sch, mask_of(rns, n_2), progress=False), authors_err(E1[:, rns], F), ERR_RTOL)


# ----------------------------------------------------------------------------------------------
# hadamard_product_construction.py (Construction 2)
# ----------------------------------------------------------------------------------------------


def authors_rows(A, v):
    """Their per-part normalization: row k of the block is v on the holders of part k over ||v[nz]||^2."""
    P = np.zeros(A.shape)
    for k in range(A.shape[0]):
        nz = np.nonzero(A[k, :])
        P[k, :][nz] = np.reshape(v[nz], (len(nz[0]),)) / (np.linalg.norm(v[nz])) ** 2
    return P


def authors_construction2_gaussian(A):
    """Their Gaussian Construction 2: v1 ~ N(0, 1) under np.random.seed(43), v2 the last right-singular vector of P."""
    np.random.seed(43)
    v1 = np.reshape(np.random.normal(loc=0, scale=1, size=(A.shape[1], 1)), (A.shape[1], 1))
    P = authors_rows(A, v1)
    Vt = np.linalg.svd(P)[2]
    v2 = np.reshape(Vt.T[:, -1], (Vt.T[:, -1].shape[0], 1))
    return P, authors_rows(A, v2), np.stack([v1[:, 0], v2[:, 0]])


def authors_construction2_signs(A):
    """Their ±1 Construction 2: v1 = 1, v2 = 2 z - 1 with z Boolean and P1 v2 = 0, a cvxpy feasibility problem."""
    cp = pytest.importorskip("cvxpy")
    n_2 = A.shape[1]
    v1 = np.ones((n_2, 1))
    P1 = authors_rows(A, v1)
    z = cp.Variable((n_2, 1), boolean=True)
    problem = cp.Problem(cp.Minimize(10), [P1 @ (2 * z - 1) == 0])
    problem.solve()
    assert problem.status == cp.OPTIMAL
    v2 = np.rint(2 * z.value - 1)
    assert np.all(np.abs(v2) == 1) and np.array_equal(A @ v2, np.zeros((A.shape[0], 1)))
    return P1, authors_rows(A, v2), np.stack([v1[:, 0], v2[:, 0]])


def authors_dd_bound(P_F, Q_F, m, n_p):
    """Their bound: m n_p - 1ᵀP_F inv(D) P_Fᵀ1 - 1ᵀQ_F inv(D) Q_Fᵀ1, D the absolute row sums of P_FᵀP_F + Q_FᵀQ_F."""
    ones = np.ones((n_p, 1))
    tilde_p = P_F.T @ P_F + Q_F.T @ Q_F
    tilde_A = np.diag(np.diag(tilde_p) + np.sum(np.abs(tilde_p), axis=1) - np.abs(np.diag(tilde_p)))
    inv = np.linalg.inv(tilde_A)
    return float((m * n_p - ones.T @ P_F @ inv @ P_F.T @ ones - ones.T @ Q_F @ inv @ Q_F.T @ ones).item())


@pytest.fixture(scope="module")
def biregular_run():
    """Their setup: 20 parts of degree 6 on 40 workers of degree 3 (A is 20 x 40), m = 2, 16 straggler counts."""
    A = gcsim.biregular_graph(20, 40, 6, 3, seed=0).assignment
    n_1, n_2, d_2, _, F = authors_setup(A, 2)
    assert (n_1, n_2, d_2, (A @ A.T)[0, 0]) == (20, 40, 3, 6)
    P, Q, V = authors_construction2_gaussian(A)
    np.random.seed(42)
    D1 = np.diag(np.random.choice([1, -1], size=(n_2), p=[0.5, 0.5]))
    D2 = np.diag(np.random.choice([1, -1], size=(n_2), p=[0.5, 0.5]))
    encoders = {"gaussian": np.vstack((P, Q)), "baseline": np.vstack((A, A)), "rd": np.vstack((A @ D1, A @ D2))}
    s_list = authors_s_list(n_2, 15, drop_zero=False)
    patterns = []
    for s in s_list:
        for j in range(8):
            np.random.seed(78 + j)
            strag = np.random.choice(np.arange(0, int(n_2)), int(s), replace=False)
            rns = np.sort(np.setdiff1d(np.arange(0, n_2), strag))
            errs = {name: authors_err(E[:, rns], F) for name, E in encoders.items()}
            patterns.append((int(s), rns, errs, authors_dd_bound(P[:, rns], Q[:, rns], 2, n_1)))
    return A, V, np.stack([np.diag(D1), np.diag(D2)]), encoders, s_list, patterns


def test_construction2_gaussian_matches_the_authors(biregular_run):
    A, V, _, encoders, _, patterns = biregular_run
    n = A.shape[1]
    sch = encode(A, 2, "hadamard-ns", vectors=V)
    E = encoders["gaussian"]
    assert np.all(np.abs(sch.B - E) <= 4 * np.finfo(float).eps * np.abs(E))  # the authors' normalization
    masks = np.stack([mask_of(rns, n) for _, rns, _, _ in patterns])
    ours = optimal_error(sch, masks, progress=False)
    theirs = np.array([errs["gaussian"] for _, _, errs, _ in patterns])
    assert close(ours, theirs, ERR_RTOL), np.max(np.abs(ours - theirs))
    zero = np.array([s == 0 for s, _, _, _ in patterns])
    assert np.all(ours[zero] <= 1e-20) and np.all(theirs[zero] <= 1e-20)  # exact without stragglers
    dd = bd.diagonal_dominance_upper_bound(sch, masks)
    assert close(dd, [b for _, _, _, b in patterns], BOUND_RTOL)
    for mask, err, bound in zip(masks, ours, dd, strict=True):  # Theorem 8 on the authors' patterns
        BF = sch.B[:, mask]
        assert err <= bound + 2 * lstsq_tol(cond(BF), *BF.shape, 2 * 20, gram=True)  # gcsim's error <= bound


def test_construction2_baseline_and_rd_match_the_authors(biregular_run):
    A, _, D, encoders, _, patterns = biregular_run
    n = A.shape[1]
    masks = np.stack([mask_of(rns, n) for _, rns, _, _ in patterns])
    naive = encode(A, 2, "naive")
    assert np.array_equal(naive.B, encoders["baseline"])
    rd = Scheme(B=encoders["rd"], assignment=A, m=2, method="rd", diagonals=D.astype(float))
    assert rd.verify()
    for name, sch in (("baseline", naive), ("rd", rd)):
        ours = optimal_error(sch, masks, progress=False)
        theirs = np.array([errs[name] for _, _, errs, _ in patterns])
        assert close(ours, theirs, ERR_RTOL), (name, np.max(np.abs(ours - theirs)))


def test_construction2_lower_bound_matches_the_authors(biregular_run):
    A, _, _, _, s_list, _ = biregular_run
    n_p, n_w, d_2, m = 20, 40, 3, 2
    for s in s_list:
        theirs = max(np.floor((n_p * (s + m - j - 1)) / (n_w * d_2)) * (j + 1) for j in range(m))
        low = bd.partial_uncovering_lower_bound(A, m, int(s))
        assert low.value == theirs
        assert bd.worst_case_rank_lower_bound(A, m, int(s)).value >= low.value


def test_construction2_signs_match_the_authors(biregular_run):
    A, _, _, _, _, patterns = biregular_run
    n, n_p = A.shape[1], A.shape[0]
    P1, Q1, V = authors_construction2_signs(A)
    sch = encode(A, 2, "hadamard-ns", vectors=V)
    E1 = np.vstack((P1, Q1))
    assert np.all(np.abs(sch.B - E1) <= 4 * np.finfo(float).eps * np.abs(E1))
    F = np.kron(np.eye(2), np.ones((n_p, 1)))
    masks = np.stack([mask_of(rns, n) for _, rns, _, _ in patterns])
    ours = optimal_error(sch, masks, progress=False)
    theirs = np.array([authors_err(E1[:, rns], F) for _, rns, _, _ in patterns])
    assert close(ours, theirs, ERR_RTOL), np.max(np.abs(ours - theirs))
    dd = bd.diagonal_dominance_upper_bound(sch, masks)
    assert close(dd, [authors_dd_bound(P1[:, rns], Q1[:, rns], 2, n_p) for _, rns, _, _ in patterns], BOUND_RTOL)
    # gcsim's own ±1 draw is the authors' construction of its vectors
    own = encode(A, 2, "hadamard-ns", dist="rademacher", support="full", seed=3)
    W = np.asarray(own.extras["vectors"])
    assert np.all(np.abs(W) == 1) and np.array_equal(A @ (W[0] * W[1]), np.zeros(n_p))
    E_own = np.vstack((authors_rows(A, W[0][:, None]), authors_rows(A, W[1][:, None])))
    assert np.all(np.abs(own.B - E_own) <= 4 * np.finfo(float).eps * np.abs(E_own))
