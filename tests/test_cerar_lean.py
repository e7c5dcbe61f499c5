"""The lean CERAR schedule (docs/theory.md §51.4): which designs run it, what it holds, what it computes.

Independent computations: the protocol of §50.1 run here in exact rationals (never gcsim's
rounds), the condition of Proposition 6 checked in exact rationals on the stored coefficients,
storage measured with tracemalloc (NumPy: every array allocation) and by the torch ring's storage
accounting, and every floating-point comparison against a running rounding bound derived here
(Proposition 8; Higham 2002, Thm 3.5) plus the default schedule's own bound
(``executor_tolerances.cerar_output_tol``) -- never a tolerance read off one run.
"""

from __future__ import annotations

import tracemalloc
import warnings
from fractions import Fraction

import numpy as np
import pytest

from executor_tolerances import cerar_output_tol
from gcsim.catalogue.named import resolve_design
from gcsim.cerar import CerarDesign, design
from gcsim.cerar.ring import LEAN_SAFETY, check_lean, lean_residual, run_ring_lean, split_gradients
from gcsim.errors import InvalidArgumentError
from gcsim.executor.cerar_arrays import run_cerar
from test_cerar_storage import _inverse, _ring_protocol as _protocol  # the protocol of §50.1, exact
from tolerances import unit_roundoff

LEAN_OK = [
    (3, 3, "exact", {}),
    (4, 4, "exact", {}),
    (4, 2, "exact", {}),
    (3, 2, "exact", {}),  # roots of unity (c does not divide N)
    (5, 3, "exact", {}),
    (4, 8, "perturbation", {"eps": 0.1}),
    (3, 5, "vandermonde", {"eps": 0.1}),
]


def _F(M) -> list:
    """Exact rationals of a float array (nested lists)."""
    return np.vectorize(Fraction, otypes=[object])(np.asarray(M, dtype=float))


def _shift_defect(A, D):
    """max over workers and 1 <= k < tau <= c of |(A_i D_i)[tau, k] - [tau = k + 1]|, exactly."""
    N, c = len(A), len(A[0])
    worst = Fraction(0)
    for i in range(N):
        for tau in range(1, c):  # 0-based tau > k
            for k in range(tau):
                p = sum((A[i][tau][j] * D[i][j][k] for j in range(c)), Fraction(0))
                worst = max(worst, abs(p - (1 if tau == k + 1 else 0)))
    return worst


def _lean_exact(A, D, G):
    """gcsim's run_ring_lean on NumPy object arrays of Fractions: exact arithmetic, same lines."""
    N, c = len(A), len(A[0])
    Garr = np.array(G, dtype=object).reshape(N, c, 1)
    rows = [Garr[:, k, :].copy() for k in range(c)]
    out = run_ring_lean(rows, np.array(A, dtype=object), np.array(D, dtype=object), xp=np)
    return [[out[k][i, 0] for k in range(c)] for i in range(N)]


def _rational_design(N: int, c: int, seed: int, *, shift: bool, break_at: tuple[int, int] | None = None):
    """A design with the condition of Proposition 6 but not the full shift structure: B_i random
    integer (invertible), D_i[:, k] = B_i[:, k+1] + sum_{tau <= k} beta B_i[:, tau] (1-based k < c),
    later decoder columns arbitrary.  ``break_at`` = (tau, k) adds B_i[:, tau] to column k (tau > k+1)."""
    rng = np.random.default_rng(seed)
    L = c + N - 2
    A, D = [], []
    for _ in range(N):
        while True:
            B = rng.integers(-3, 4, size=(c, c))
            if round(abs(np.linalg.det(B))) >= 1:
                break
        Bf = [[Fraction(int(x)) for x in row] for row in B]
        Ai = _inverse(Bf)
        Di = [[Fraction(int(rng.integers(-3, 4))) for _ in range(L)] for _ in range(c)]
        for k in range(c - 1):  # 0-based column k <-> 1-based k + 1
            beta = [Fraction(int(b)) for b in rng.integers(-2, 3, size=k + 1)] if not shift else [0] * (k + 1)
            for r in range(c):
                Di[r][k] = Bf[r][k + 1] + sum((beta[tau] * Bf[r][tau] for tau in range(k + 1)), Fraction(0))
        if break_at is not None:
            tau, k = break_at
            for r in range(c):
                Di[r][k] += Bf[r][tau]
        A.append(Ai)
        D.append(Di)
    return A, D


@pytest.mark.parametrize("N,c", [(3, 3), (4, 5), (3, 6)])
def test_proposition_6_the_condition_is_sufficient_and_necessary(N, c):
    """Exact arithmetic: with the condition (not the full shift structure) the lean schedule sends
    the protocol's outputs; a single violated pair (tau, k), tau > k + 1, changes them."""
    A, D = _rational_design(N, c, 10 * N + c, shift=False)
    assert _shift_defect(A, D) == 0
    rng = np.random.default_rng(c)
    for _ in range(2):
        G = [[Fraction(int(x)) for x in row] for row in rng.integers(-9, 10, size=(N, c))]
        assert _lean_exact(A, D, G) == _protocol(A, D, G)
    Ab, Db = _rational_design(N, c, 10 * N + c, shift=False, break_at=(2, 0))  # (A D)[3, 1] = 1, 1-based
    assert _shift_defect(Ab, Db) == 1
    G = [[Fraction(int(x)) for x in row] for row in rng.integers(-9, 10, size=(N, c))]
    assert _lean_exact(Ab, Db, G) != _protocol(Ab, Db, G)


@pytest.mark.parametrize("N,c,method,kw", LEAN_OK)
def test_structured_designs_pass_the_check_and_generic_ones_are_refused(N, c, method, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        des = design(N, c, method, **kw)
    # the stored coefficients: the defect, exactly, is within LEAN_SAFETY c u |A||D| (what the check says)
    A, D = _F(des.encoders), _F(des.decoders)
    defect = _shift_defect(A.tolist(), D.tolist())
    scale = (np.abs(des.encoders) @ np.abs(des.decoders)).max()
    assert defect <= Fraction(LEAN_SAFETY * c * 2.0**-53 * scale)
    assert lean_residual(des.encoders, des.decoders).max() <= LEAN_SAFETY
    check_lean(des.encoders, des.decoders)
    if method == "exact" and c in (2, 3, 4) and N % c == 0:  # unit vectors: products exact, defect 0
        assert defect == 0


@pytest.mark.parametrize("name", ["cerar/optimized_N4_c8_kappa10", "cerar/optimized_N8_c16_kappa50"])
def test_kappa_optimized_designs_are_refused(name):
    des = resolve_design(name)
    g = np.ones((des.N, 3 * des.c))
    with pytest.raises(InvalidArgumentError, match="schedule.*lean.*worker 0"):
        run_cerar(des, g, schedule="lean")
    rng = np.random.default_rng(0)
    generic = CerarDesign(3, 4, rng.standard_normal((3, 4, 4)), rng.standard_normal((3, 4, 5)))
    with pytest.raises(InvalidArgumentError, match="schedule"):
        run_cerar(generic, np.ones((3, 8)), schedule="lean")
    with pytest.raises(InvalidArgumentError, match="schedule"):
        run_cerar(generic, np.ones((3, 8)), schedule="leaner")


def lean_bound(encoders, decoders, g, dtype=np.float64):
    """Running bound on |lean output - protocol output (exact)|, shape (N, c, w) (Proposition 8).

    Magnitudes M bound the exact values, E the errors, quantity by quantity along the schedule:
    a dot product of c terms adds gamma_c sum |A|(M + E) (Higham Thm 3.5), a subtraction
    u (M + E), the decode gamma_2 (M + |D| M_u + E + |D| E_u); the exact defect eta of the stored
    design (lean in exact arithmetic minus the protocol, s^(t) gets sum_k eta_{t,k} u^(k)) is
    added to the packets.  Computed in float64 on magnitudes (a sum of nonnegative terms: its own
    rounding is covered by the SAFETY factor of 2 applied by the caller).
    """
    A = np.abs(np.asarray(encoders, dtype=float))
    D = np.abs(np.asarray(decoders, dtype=float))
    N, c, L = D.shape
    u = unit_roundoff(dtype)

    def gam(n):
        return n * u / (1 - n * u)

    P = np.asarray(encoders, dtype=float) @ np.asarray(decoders, dtype=float)[..., : c - 1]
    # the exact defect is within LEAN_SAFETY c u64 |A||D| (checked exactly in the test above)
    eta = np.abs(P - np.eye(c)[:, 1:]) + LEAN_SAFETY * c * 2.0**-53 * (A @ D[..., : c - 1])
    Ma = np.abs(split_gradients(np.asarray(g, dtype=float), c))
    Ea = np.zeros_like(Ma)
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    hist: dict[int, np.ndarray] = {}
    Mu = Eu = None
    for t in range(1, L + 1):
        if t <= c:
            Ms = np.einsum("nk,nkw->nw", A[:, t - 1, :], Ma)
            Es = np.einsum("nk,nkw->nw", A[:, t - 1, :], Ea) + gam(c) * np.einsum("nk,nkw->nw", A[:, t - 1, :], Ma + Ea)
            for k in range(1, t):  # eta_{t,k} u^(k), 1-based k < t
                Es = Es + eta[:, t - 1, k - 1, None] * hist[k]
            Ms = Ms + sum((eta[:, t - 1, k - 1, None] * hist[k] for k in range(1, t)), np.zeros_like(Ms))
            if t <= c - 1:
                if Mu is None:
                    kept[t] = (Ms, Es)
                else:
                    Mx = Ms + Mu
                    kept[t] = (Mx, Es + Eu + u * (Mx + Es + Eu))
        else:
            Ms, Es = Mu, Eu
        Mr, Er = np.roll(Ms, 1, axis=0), np.roll(Es, 1, axis=0)
        back = kept.pop(t - N + 1, None)
        if back is not None:
            Mu = Mr + back[0]
            Eu = Er + back[1] + u * (Mu + Er + back[1])
        else:
            Mu, Eu = Mr, Er
        hist[t] = Mu
        Dt = D[:, :, t - 1, None]
        Ea = Ea + Dt * Eu[:, None, :] + gam(2) * (Ma + Dt * Mu[:, None, :] + Ea + Dt * Eu[:, None, :]) * (Dt > 0)
        Ma = Ma + Dt * Mu[:, None, :]
    return 2 * Ea


@pytest.mark.parametrize("N,c,method,kw", LEAN_OK)
def test_numpy_engine_lean_equals_default_within_the_bounds(N, c, method, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        des = design(N, c, method, **kw)
    d = 7 * c - 1  # a partial last component
    g = np.random.default_rng(N * c).standard_normal((N, d))
    lean = run_cerar(des, g, schedule="lean")
    default = run_cerar(des, g)
    assert lean.schedule == "lean" and default.schedule == "default"
    assert lean.bytes_sent.tolist() == default.bytes_sent.tolist()
    tol_lean = lean_bound(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    tol_default = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    assert np.all(np.abs(lean.outputs - default.outputs) <= tol_lean + tol_default)
    # both against the protocol in exact rationals, column by column (w = 7)
    G = split_gradients(g, c)
    for col in (0, 6):
        exact = _protocol(_F(des.encoders).tolist(), _F(des.decoders).tolist(), _F(G[:, :, col]).tolist())
        ref = np.array([[float(x) for x in row] for row in exact])
        got = lean.outputs.reshape(N, -1)
        got = np.stack([np.pad(got[i], (0, c * 7 - d)).reshape(c, 7)[:, col] for i in range(N)])
        bound = lean_bound(des.encoders, des.decoders, g)[:, :, col]
        assert np.all(np.abs(got - ref) <= bound + np.abs(ref) * 2.0**-52)


@pytest.mark.parametrize(
    "N,c,method,kw", [(4, 4, "exact", {}), (5, 3, "exact", {}), (4, 8, "perturbation", {"eps": 0.1})]
)
def test_numpy_lean_schedule_holds_c_plus_N_plus_2_packets(N, c, method, kw):
    """tracemalloc (every NumPy allocation) around the lean rounds of all N workers: the peak
    beyond nothing (the state is a copy of G made inside) is c + min(N, c - 1) + 2 packets per
    worker (Proposition 7) plus a few kB of bookkeeping, far below the default's 3c + L + 2."""
    w = 4096
    des = design(N, c, method, **kw)
    G = split_gradients(np.random.default_rng(0).standard_normal((N, c * w)), c)
    A, D = des.encoders.copy(), des.decoders.copy()
    packet = N * w * 8
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        state = G.copy()
        run_ring_lean([state[:, k] for k in range(c)], A, D, xp=np)
        peak = tracemalloc.get_traced_memory()[1] / packet
    finally:
        tracemalloc.stop()
    expected = c + min(N, c - 1) + 2
    assert expected <= c + N + 2
    assert expected <= peak < expected + 0.1  # the arrays, and a few kB of Python objects


def test_two_workers_and_bad_arguments():
    # N = 2: the exact design is A = D = I (one hop), not the shift pattern: refused, clearly
    with pytest.raises(InvalidArgumentError, match="worker 0"):
        run_cerar(design(2, 3, "exact"), np.ones((2, 6)), schedule="lean")
    with pytest.raises(InvalidArgumentError, match="schedule"):
        run_cerar(design(3, 3, "exact"), np.ones((3, 6)), schedule=1)
