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
from gcsim.coding import bounds as bd
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.schemes import Scheme, encode

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
    """Their optimal error: lstsq of E_F x = a for every column a of F, squared residual norms summed."""
    err = 0.0
    for t in range(F.shape[1]):
        a = np.reshape(F[:, t], (F.shape[0], 1))
        x = np.linalg.lstsq(E_F, a, rcond=None)[0]
        err = err + np.linalg.norm(E_F @ x - a, 2) ** 2
    return float(err)


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
