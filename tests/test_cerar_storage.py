"""Storage of a CERAR worker (docs/theory.md §51): the Hankel lower bound and the lean schedule.

Independent computations: the Hankel matrices are rebuilt here column by column by running one
worker's rounds (§50.1) on basis inputs in exact rational arithmetic, their ranks are computed by
Fraction row reduction, and the lean schedule of §51.2 runs the whole ring in Fractions against the
protocol's own rounds -- never gcsim.cerar.storage's formulas.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from gcsim.catalogue.named import resolve_design
from gcsim.cerar import CerarDesign, design, rates, simulate
from gcsim.cerar.storage import (
    generic_storage_peak,
    hankel_matrix,
    shift_structured,
    storage_lower_bound,
)
from gcsim.errors import InvalidArgumentError, SizeLimitError
from tolerances import SAFETY, gamma

CASES = [(3, 7), (4, 8), (4, 16), (8, 16)]


def _rank(rows: list[list[Fraction]]) -> int:
    """Exact rank by Fraction row reduction."""
    M = [list(r) for r in rows]
    rank, ncols = 0, len(M[0]) if M else 0
    for col in range(ncols):
        piv = next((r for r in range(rank, len(M)) if M[r][col] != 0), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        for r in range(rank + 1, len(M)):
            if M[r][col] != 0:
                f = M[r][col] / M[rank][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[rank], strict=True)]
        rank += 1
    return rank


def _worker_future(A, D, N: int, t: int, G: list, U_past: list) -> list:
    """One worker's rounds (§50.1) with stripped sums u^(1..t) given and every later received
    packet zero; returns the packets s^(t+1..L) and the output rows, as a flat list."""
    c = len(A)
    L = c + N - 2
    X = [sum((A[k][j] * G[j] for j in range(c)), Fraction(0)) for k in range(c)]
    out = list(G)
    sends = []
    u_prev = Fraction(0)
    for k in range(1, L + 1):
        s = (X[k - 1] if k <= c else 0) + u_prev
        if k > t:
            sends.append(s)
        if k <= t:
            u = U_past[k - 1]
        else:
            r = Fraction(0)  # future received packets set to zero
            back = k - N  # 0-based returning symbol
            u = r - X[back] if 0 <= back < c - 1 else r
        out = [out[j] + D[j][k - 1] * u for j in range(c)]
        u_prev = u
    return sends + out


def _hankel_by_simulation(A, D, N: int, t: int) -> list[list[Fraction]]:
    c = len(A)
    cols = []
    for j in range(c + t):  # past inputs: G's rows, then u^(1..t)
        e = [Fraction(int(k == j)) for k in range(c + t)]
        cols.append(_worker_future(A, D, N, t, e[:c], e[c:]))
    return [list(r) for r in zip(*cols, strict=True)]


def _fractions(M) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.asarray(M).tolist()]


def _integer_design(N: int, c: int, seed: int) -> CerarDesign:
    """A generic dense design with small integer entries (exact in float64)."""
    rng = np.random.default_rng(seed)
    while True:
        A = rng.integers(-3, 4, size=(N, c, c)).astype(float)
        if all(abs(np.linalg.det(a)) > 0.5 for a in A):  # integer determinants: nonzero
            break
    return CerarDesign(N, c, A, rng.integers(-3, 4, size=(N, c, c + N - 2)).astype(float))


def test_hankel_matrix_equals_the_rounds_on_basis_inputs():
    des = _integer_design(4, 8, 1)
    for i in (0, 3):
        for t in range(des.L + 1):
            ref = _hankel_by_simulation(_fractions(des.encoders[i]), _fractions(des.decoders[i]), 4, t)
            # small integer entries: every float64 operation of hankel_matrix is exact
            assert _fractions(hankel_matrix(des, i, t)) == ref


@pytest.mark.parametrize("N,c", CASES)
def test_generic_designs_need_more_than_c_plus_N(N, c):
    """§51.1, Theorem 1 and Proposition 2: a generic design needs c + floor(L/2) > c + N packets."""
    des = _integer_design(N, c, N * c)
    b = storage_lower_bound(des)
    L = c + N - 2
    assert b.generic == generic_storage_peak(N, c) == c + L // 2 > c + N
    assert b.peak.tolist() == [c + L // 2] * N  # the upper bound c + min(t, L - t) is attained
    t = L // 2
    exact = _rank(_hankel_by_simulation(_fractions(des.encoders[0]), _fractions(des.decoders[0]), N, t))
    assert exact == b.ranks[0, t] == c + L // 2
    assert all(b.ranks[i, s] <= c + min(s, L - s) for i in range(N) for s in range(L + 1))
    # not a rounding artefact: H_t is far from every matrix of rank <= c + N
    assert b.target_distance > 1e-3
    # the engines' schedule (2c + 1 packets) respects the bound
    assert simulate(des, np.zeros((N, c)), warn=False).peak_buffers.tolist() == [2 * c + 1] * N
    assert 2 * c + 1 >= c + L // 2


@pytest.mark.parametrize(
    "name", ["cerar/optimized_N4_c8_kappa10", "cerar/optimized_N4_c8_kappa100", "cerar/optimized_N8_c16_kappa50"]
)
def test_kappa_optimized_designs_need_more_than_c_plus_N(name):
    des = resolve_design(name)
    N, c, L = des.N, des.c, des.L
    b = storage_lower_bound(des)
    assert b.peak.min() > c + N
    t = int(np.argmax(b.ranks[0]))
    exact = _rank(_hankel_by_simulation(_fractions(des.encoders[0]), _fractions(des.decoders[0]), N, t))
    assert exact == b.ranks[0, t]  # the rank mod p equals the rational rank here
    # rounding of the entries of H_t (products D[:, k] A[tau, :], sums of <= c + L terms) moves its
    # singular values by at most SAFETY gamma_{c+L} ||H_t||-ish; the distance is orders above that
    kA = max(np.linalg.cond(a) for a in des.encoders)
    assert b.target_distance > 1e3 * SAFETY * gamma(c + L) * kA


def _rational_vandermonde(N: int, c: int, eps: Fraction):
    """The real-node Vandermonde design of §50.3 in exact rationals: z_k = 1 + eps (k - (c-1)/2)."""
    z = [1 + eps * (Fraction(2 * k - (c - 1), 2)) for k in range(c)]
    L = c + N - 2
    B = [[[z[k] ** (j - tau) for tau in range(c)] for k in range(c)] for j in range(N)]
    D = [[[z[k] ** (i - 1 - l) for l in range(L)] for k in range(c)] for i in range(N)]
    A = [_inverse(b) for b in B]
    return A, D


def _inverse(M: list[list[Fraction]]) -> list[list[Fraction]]:
    n = len(M)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(M)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        p = aug[col][col]
        aug[col] = [x / p for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [a - f * b for a, b in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def _ring_protocol(A, D, G):
    """The protocol of §50.1, all workers, exact (one column per packet, w = 1)."""
    N, c = len(A), len(A[0])
    L = c + N - 2
    X = [[sum((A[i][k][j] * G[i][j] for j in range(c)), Fraction(0)) for k in range(c)] for i in range(N)]
    out = [list(g) for g in G]
    u = [Fraction(0)] * N
    for t in range(1, L + 1):
        s = [(X[i][t - 1] if t <= c else 0) + u[i] for i in range(N)]
        for i in range(N):
            back = t - N
            u[i] = s[i - 1] - (X[i][back] if 0 <= back < c - 1 else 0)
            out[i] = [out[i][k] + D[i][k][t - 1] * u[i] for k in range(c)]
    return out


def _ring_lean(A, D, G):
    """The lean schedule of §51.2: the state a starts at G and takes every decoded contribution in
    place; the packet of round t <= c is formed from it, s = A[t, :] a; an own symbol is kept
    (x = s - u) only until it returns.  Returns the outputs and the peak number of live packets
    of a worker (state, kept symbols, the packet being sent, the packet being received)."""
    N, c = len(A), len(A[0])
    L = c + N - 2
    a = [list(g) for g in G]
    u = [None] * N  # the last stripped sum, until the next packet is formed
    kept = [dict() for _ in range(N)]  # tau -> x^(tau), own symbols that will come back
    peak = 0
    for t in range(1, L + 1):
        s = []
        for i in range(N):
            if t <= c:
                si = sum((A[i][t - 1][k] * a[i][k] for k in range(c)), Fraction(0))
                if t <= c - 1:  # x^(t) = s - u^(t-1), formed in u's buffer; x^(c) never returns
                    kept[i][t] = si - (u[i] or 0)
            else:
                si = u[i]
            u[i] = None  # its buffer now holds x^(t) (or was sent itself)
            s.append(si)
        # live during the transfer: state c + kept symbols + the packet sent + the packet received
        peak = max(peak, max(c + len(kept[i]) + 2 for i in range(N)))
        for i in range(N):
            r = s[i - 1]
            back = t - N + 1
            ui = r - kept[i].pop(back) if back in kept[i] else r  # strip in the receive buffer
            a[i] = [a[i][k] + D[i][k][t - 1] * ui for k in range(c)]
            u[i] = ui
    return a, peak


@pytest.mark.parametrize("N,c", CASES)
def test_shift_structured_designs_lean_schedule(N, c):
    """§51.2, Proposition 4 and the lean schedule, on the Vandermonde design in exact rationals."""
    eps = Fraction(1, 4 * c)
    A, D = _rational_vandermonde(N, c, eps)
    L = c + N - 2
    # the shift structure A_i D_i[:, t] = e_{t+1}, t = 1..c-1 (1-based), exactly
    for i in range(N):
        for t in range(1, c):
            col = [sum((A[i][k][j] * D[i][j][t - 1] for j in range(c)), Fraction(0)) for k in range(c)]
            assert col == [Fraction(int(k == t)) for k in range(c)]
    # Hankel ranks at most c + N - 1, exactly (one worker, every cut)
    ranks = [_rank(_hankel_by_simulation(A[0], D[0], N, t)) for t in range(L + 1)]
    assert max(ranks) <= c + N - 1
    # the lean schedule: the protocol's exact outputs with at most c + N + 2 live packets
    rng = np.random.default_rng(c)
    G = [[Fraction(int(x)) for x in row] for row in rng.integers(-9, 10, size=(N, c))]
    out, peak = _ring_lean(A, D, G)
    assert out == _ring_protocol(A, D, G)
    assert peak <= c + N + 2 < 2 * c + 1
    # the float64 design: shift-structured to rounding, its H_t within rounding of rank c + N
    with warnings.catch_warnings():  # kappa ~ 1e19 at c = 16: the float64 encoders keep few digits
        warnings.simplefilter("ignore", RuntimeWarning)
        fdes = design(N, c, "vandermonde", eps=float(eps))
    assert shift_structured(fdes)
    assert storage_lower_bound(fdes).target_distance < SAFETY * gamma(c + L) * 1e3
    # the perturbation design as stored: generic exact rank (its rounding), within rounding of c + N
    pb = storage_lower_bound(design(N, c, "perturbation", eps=0.05))
    assert pb.peak.tolist() == [c + L // 2] * N
    assert pb.target_distance < SAFETY * gamma(c + L)
    assert not shift_structured(_integer_design(N, c, 0))


def test_rates_report_the_storage_numbers():
    r = rates(4, 16)
    assert r["storage"] == 1 + 4 / 16
    assert r["generic_storage_lower_bound"] == (16 + 18 // 2) / 16
    assert r["structured_storage"] == (16 + 4 + 2) / 16


def test_bad_inputs():
    des = design(3, 2, "exact")
    with pytest.raises(InvalidArgumentError, match="design"):
        storage_lower_bound("not a design")
    with pytest.raises(InvalidArgumentError, match="worker"):
        hankel_matrix(des, 3, 0)
    with pytest.raises(InvalidArgumentError, match="t"):
        hankel_matrix(des, 0, des.L + 1)
    big = CerarDesign(32, 64, np.zeros((32, 64, 64)), np.zeros((32, 64, 94)))
    with pytest.raises(SizeLimitError, match="MAX_STORAGE_WORK"):  # refused before any H_t is built
        storage_lower_bound(big)


def test_engine_ring_holds_at_least_the_lower_bound():
    """§51.3: the NumPy ring (encode + run_ring, dense path) measured with tracemalloc; Theorem 1
    says no linear schedule holds less than max_t h_t.  Beyond G it holds X (c), the L stripped sums
    in one buffer, the decode's result (c) and two packets in transit: 2c + L + 2 (before, the sums
    were also kept as a list and stacked, and the decode made a temporary: 2c + 2L)."""
    import tracemalloc

    from gcsim.cerar.ring import encode, run_ring, split_gradients

    N, c, w = 4, 8, 4096
    des = design(N, c, "perturbation", eps=0.1)
    G = split_gradients(np.random.default_rng(0).standard_normal((N, c * w)), c)
    A, D = des.encoders.copy(), des.decoders.copy()
    packet = N * w * 8  # one packet of every worker, float64
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        run_ring(encode(A, G), G, D, xp=np)
        peak = tracemalloc.get_traced_memory()[1] / packet
    finally:
        tracemalloc.stop()
    L = c + N - 2
    assert c + peak >= storage_lower_bound(des).peak.max()
    assert 2 * c + L + 2 <= peak < 2 * c + L + 3  # a few kB of bookkeeping above the arrays


@pytest.mark.parametrize("segments", [1, 3])
def test_run_ring_outputs_bitwise_those_of_the_stacked_decode(segments):
    """The in-buffer decode of §51.3 returns G + D @ stack(u^(1..L)) bit for bit (the stripped sums
    recorded by on_round, decoded here by the formula of §50.1)."""
    from gcsim.cerar.ring import encode, run_ring, split_gradients

    N, c = 4, 8
    des = design(N, c, "perturbation", eps=0.05)
    G = split_gradients(np.random.default_rng(5).standard_normal((N, c * 37)), c)
    A, D = des.encoders.copy(), des.decoders.copy()
    us = []
    run_ring(encode(A, G), G, D, xp=np, on_round=lambda t, s, u: us.append(u.copy()))
    ref = G + D @ np.stack(us, axis=-2)
    out = run_ring(encode(A, G), G, D, xp=np, segments=segments)
    assert np.array_equal(out, ref)
