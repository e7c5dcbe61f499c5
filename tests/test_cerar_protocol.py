"""CERAR ring simulator: checked against a naive per-worker/per-round reference written here
from the protocol text of docs/theory.md §50.1, against the error-operator identity with explicitly built
shift matrices, and against the traffic formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from executor_tolerances import cerar_operator_tol, cerar_output_tol
from gcsim.cerar import CerarDesign, design, errors, rates, simulate
from gcsim.errors import InvalidArgumentError
from tolerances import SAFETY, cond, gamma, lstsq_tol, unit_roundoff


def gamma_u(n, u):
    """gamma_n = n u / (1 - n u) for a unit roundoff u (bfloat16 has no numpy dtype)."""
    return n * u / (1 - n * u)


def ring_tol(A, D, g, u=None):
    """Max-norm bound on the rounding error of any ring computation of the outputs (and traces).

    Forward error analysis of the protocol (no solves, only products and sums): every symbol
    x = A G is a length-c dot product, every u_i^(t) a sum of N - 1 symbols, every output
    G_i + D_i U_i a sum of L + 1 terms, each rounded; with the inputs themselves rounded to the
    working precision, the computed value is within gamma_n (|G| + |D| |U|abs) of the exact one,
    n = c + N + L + 3 (Higham Thm 3.5, applied term by term), where |U|abs <= (N-1) |A| |G|.
    Two implementations (different order) differ by at most twice that. Returns (out_tol, u_tol).
    """
    u = unit_roundoff() if u is None else u
    N, c, L = D.shape
    gmax = float(np.max(np.abs(g), initial=0.0))
    amax = float(np.max(np.sum(np.abs(A), axis=2)))  # max row sum of |A_j|
    dmax = float(np.max(np.sum(np.abs(D), axis=2)))  # max row sum of |D_i|
    n = c + N + L + 3
    usum = (N - 1) * amax * gmax
    return 2 * SAFETY * gamma_u(n, u) * (gmax + dmax * usum), 2 * SAFETY * gamma_u(n, u) * usum


# ----------------------------------------------------------------------------- references


def naive_ring(A, D, gradients, rnd=lambda v: v, dtype=np.float64):
    """Loop-based transcription of theory §50.1 (1-based rounds, dicts of symbols, one worker at a time).

    Returns outputs (N, d), u[t][i] and sent[t][i] (t = 1..L).  ``rnd`` is applied after every
    arithmetic step, in the order the protocol text performs them.
    """
    N, c, _ = A.shape
    L = c + N - 2
    g = np.asarray(gradients, dtype=float)
    d = g.shape[1]
    w = -(-d // c)
    G = []
    for i in range(N):
        padded = np.zeros(c * w)
        padded[:d] = g[i]
        G.append(rnd(padded.reshape(c, w).astype(dtype)))
    A = rnd(A.astype(dtype))
    D = rnd(D.astype(dtype))
    x = {}
    for i in range(N):
        for tau in range(1, c + 1):
            acc = np.zeros(w, dtype=dtype)
            for k in range(c):
                acc = rnd(acc + rnd(A[i, tau - 1, k] * G[i][k]))
            x[i, tau] = acc

    def X(i, tau):
        return x.get((i % N, tau), None)

    u_prev = [np.zeros(w, dtype=dtype) for _ in range(N)]
    out = [G[i].copy() for i in range(N)]
    us, sent = {}, {}
    for t in range(1, L + 1):
        s = []
        for i in range(N):
            xi = X(i, t)
            s.append(rnd(xi + u_prev[i]) if xi is not None else u_prev[i])
        u_new = []
        for i in range(N):
            r = s[(i - 1) % N]
            own = X(i, t - N + 1)
            ui = rnd(r - own) if own is not None else r
            for k in range(c):
                out[i][k] = rnd(out[i][k] + rnd(D[i, k, t - 1] * ui))
            u_new.append(ui)
        for i in range(N):
            us[t, i] = u_new[i]
            sent[t, i] = s[i]
        u_prev = u_new
    outputs = np.stack([o.reshape(-1)[:d] for o in out]).astype(float)
    return outputs, us, sent, x


def explicit_error_operators(A, D):
    """E[i][m] = D_i S_{m-1} A_{i-m} - I with S built entry by entry (0-based tau)."""
    N, c, L = D.shape
    E = np.zeros((N, N - 1, c, c))
    for i in range(N):
        for m in range(1, N):
            S = np.zeros((L, c))
            for tau in range(c):
                S[tau + m - 1, tau] = 1.0
            E[i, m - 1] = D[i] @ S @ A[(i - m) % N] - np.eye(c)
    return E


def random_design(N, c, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, c, c))
    D = rng.standard_normal((N, c, c + N - 2))
    return CerarDesign(N, c, A, D, method="random")


DESIGNS = [
    ("exact", 3, 2),
    ("exact", 4, 4),
    ("exact", 5, 3),
    ("exact", 2, 4),
    ("perturbation", 3, 5),
    ("perturbation", 4, 9),
    ("vandermonde", 3, 4),
    ("random", 3, 3),
    ("random", 4, 6),
    ("random", 2, 1),
    ("random", 5, 1),
]


def make(kind, N, c):
    if kind == "random":
        return random_design(N, c, seed=N * 100 + c)
    if kind == "exact":
        return design(N, c, "exact")
    return design(N, c, kind, eps=0.1)


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind,N,c", DESIGNS)
@pytest.mark.parametrize("d", [1, 7, 24])
def test_simulator_matches_naive_reference(kind, N, c, d):
    des = make(kind, N, c)
    g = np.random.default_rng(d).standard_normal((N, d))
    res = simulate(des, g, record=True)
    ref, us, sent, _ = naive_ring(des.encoders, des.decoders, g)
    tol, tol_u = ring_tol(des.encoders, des.decoders, g)
    np.testing.assert_allclose(res.outputs, ref, atol=tol, rtol=0)
    for (t, i), v in us.items():
        np.testing.assert_allclose(res.traces["u"][t - 1, i], v, atol=tol_u, rtol=0)
        np.testing.assert_allclose(res.traces["sent"][t - 1, i], sent[t, i], atol=tol_u, rtol=0)


@pytest.mark.parametrize("kind,N,c", DESIGNS)
def test_invariant_and_error_identity(kind, N, c):
    des = make(kind, N, c)
    d = 3 * c + 1
    g = np.random.default_rng(1).standard_normal((N, d))
    res = simulate(des, g, record=True)
    w = res.packet_size
    G = np.zeros((N, c * w))
    G[:, :d] = g
    G = G.reshape(N, c, w)
    X = des.encoders @ G  # X[i, tau-1] = x_i^(tau)
    L = c + N - 2
    tol, tol_u = ring_tol(des.encoders, des.decoders, g)

    def x(i, tau):
        return X[i % N, tau - 1] if 1 <= tau <= c else np.zeros(w)

    U = res.traces["u"]
    for t in range(1, L + 1):
        for i in range(N):
            expect = sum(x(i - m, t - m + 1) for m in range(1, N))
            np.testing.assert_allclose(U[t - 1, i], expect, atol=tol_u, rtol=0)
    # u is zero outside 1..L: the round after L would carry nothing (a sum of exact zeros)
    assert all(np.all(sum(x(i - m, L + 1 - m + 1) for m in range(1, N)) == 0) for i in range(N))
    # g_hat_i = G_i + D_i U_i  and  = sum_j G_j + sum_m E_{i,m} G_{i-m}
    E = explicit_error_operators(des.encoders, des.decoders)
    for i in range(N):
        out_i = res.outputs[i]
        via_u = (G[i] + des.decoders[i] @ U[:, i, :]).reshape(-1)[:d]
        via_e = (G.sum(0) + sum(E[i, m - 1] @ G[(i - m) % N] for m in range(1, N))).reshape(-1)[:d]
        # via_e regroups D (S A) G as (D S A - I) G + G: the same terms, rounded once more per group
        np.testing.assert_allclose(out_i, via_u, atol=tol, rtol=0)
        np.testing.assert_allclose(out_i, via_e, atol=2 * tol, rtol=0)


@pytest.mark.parametrize("N,c", [(3, 1), (3, 3), (4, 2), (5, 5), (6, 4), (2, 3), (7, 3)])
def test_exact_designs_all_reduce(N, c):
    g = np.random.default_rng(N + c).standard_normal((N, 50))
    des = design(N, c, "exact")
    res = simulate(des, g)
    # ring rounding plus the exact design's own E (inverse of its windows: SAFETY c u kappa(A), Higham
    # §14.3, times ||D S|| ||A||, applied to N - 1 inputs of c components)
    tol, _ = ring_tol(des.encoders, des.decoders, g)
    kA = max(cond(a) for a in des.encoders)
    e_norm = (
        SAFETY
        * (c * unit_roundoff() * kA + gamma(7 * (N + c)))
        * float(np.max(np.sum(np.abs(des.decoders), axis=2)))
        * float(np.max(np.sum(np.abs(des.encoders), axis=2)))
    )
    tol += (N - 1) * c * e_norm * float(np.abs(g).max())
    np.testing.assert_allclose(res.outputs, np.broadcast_to(g.sum(0), (N, 50)), atol=tol, rtol=0)


@pytest.mark.parametrize(
    "dtype,itemsize", [(None, 8), ("float64", 8), ("float32", 4), (np.float32, 4), ("bfloat16", 2)]
)
@pytest.mark.parametrize("N,c,d", [(3, 2, 10), (4, 4, 17), (5, 8, 40), (4, 6, 0), (2, 1, 5)])
def test_traffic_accounting(dtype, itemsize, N, c, d):
    des = design(N, c, "perturbation", eps=0.2) if c > N else design(N, c, "exact")
    g = np.random.default_rng(0).standard_normal((N, d))
    res = simulate(des, g, dtype=dtype, warn=False)
    L = c + N - 2
    w = -(-d // c)
    assert res.rounds == L
    assert res.packet_size == w
    assert res.outputs.shape == (N, d)
    assert res.packets_sent.tolist() == [L] * N
    assert res.bytes_sent.tolist() == [L * w * itemsize] * N


@pytest.mark.parametrize("N,c", [(3, 3), (4, 4), (8, 8), (3, 6), (5, 20)])
def test_rate_formulas(N, c):
    d = c * N * 7  # divisible by c and N: no padding
    res = simulate(design(N, c, "exact") if c <= N else design(N, c, "perturbation"), np.ones((N, d)), warn=False)
    per_worker = res.bytes_sent[0] / 8
    # formulas of a few rounded operations each: relative SAFETY gamma_4 (Higham Lemma 3.3)
    rel = SAFETY * gamma(4)
    assert per_worker == pytest.approx((1 + (N - 2) / c) * d, rel=rel)
    r = rates(N, c)
    assert r["rounds"] == c + N - 2
    assert r["rate"] == pytest.approx(1 + (N - 2) / c, rel=rel)
    assert r["ring_rate"] == pytest.approx(2 * (N - 1) / N, rel=rel)
    assert r["storage"] == pytest.approx(1 + N / c, rel=rel)
    ring_bytes = 2 * (N - 1) / N * d
    assert r["byte_ratio"] == pytest.approx(ring_bytes / per_worker, rel=2 * rel)
    if c == N:  # equals ring all-reduce exactly
        assert per_worker == pytest.approx(ring_bytes, rel=rel)


@pytest.mark.parametrize("N,c", [(3, 2), (4, 8), (5, 3), (2, 4)])
def test_peak_buffers_measured(N, c):
    res = simulate(design(N, c, "perturbation"), np.ones((N, 9)), record=True)
    live = res.traces["live"]
    # schedule: c state + c pending symbols + 1 buffer at the start; a symbol is freed when
    # stripped (round tau + N - 1) or, for x^(c), right after it is sent (round c)
    expect = [
        c + 1 + sum(1 for tau in range(1, c + 1) if (tau < c and tau + N - 1 > t) or (tau == c and c > t))
        for t in range(1, c + N - 1)
    ]
    assert live.tolist() == expect
    assert res.peak_buffers.tolist() == [2 * c + 1] * N
    assert rates(N, c)["simulator_storage"] == pytest.approx((2 * c + 1) / c, rel=SAFETY * gamma(1))


def test_padding_and_empty():
    des = design(3, 4, "perturbation", eps=0.1)
    g = np.random.default_rng(2).standard_normal((3, 10))
    res = simulate(des, g)
    padded = np.hstack([g, np.zeros((3, 2))])
    # d = 10 and 12 give the same packet size w = 3 and the same zero-padded arrays: bitwise equal
    assert np.array_equal(res.outputs, simulate(des, padded).outputs[:, :10])
    empty = simulate(des, np.zeros((3, 0)))
    assert empty.outputs.shape == (3, 0) and empty.bytes_sent.tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_accumulate_orders_agree(dtype):
    des = design(4, 6, "perturbation", eps=0.1)
    g = np.random.default_rng(3).standard_normal((4, 40))
    a = simulate(des, g, dtype=dtype, accumulate="batched").outputs
    b = simulate(des, g, dtype=dtype, accumulate="rounds").outputs
    ref = naive_ring(des.encoders, des.decoders, g)[0]
    # the float64 reference is within the float64 bound, the run within the working-precision one
    tol = (
        ring_tol(des.encoders, des.decoders, g, unit_roundoff(np.dtype(dtype)))[0]
        + ring_tol(des.encoders, des.decoders, g)[0]
    )
    np.testing.assert_allclose(a, ref, atol=tol, rtol=0)
    np.testing.assert_allclose(b, ref, atol=tol, rtol=0)
    with pytest.raises(InvalidArgumentError, match="accumulate"):
        simulate(des, g, accumulate="later")


def exact_ring_outputs(A, D, g):
    """The protocol of theory §50.1 in exact rational arithmetic on the (float) inputs: round by
    round, worker by worker, no operator and no invariant used.  Returns (N, c, w) Fractions."""
    from fractions import Fraction

    N, c, L = D.shape
    d = g.shape[1]
    w = -(-d // c)
    F = np.vectorize(Fraction, otypes=[object])
    G = np.zeros((N, c * w), dtype=object)
    G[:] = Fraction(0)
    G[:, :d] = F(g)
    G = G.reshape(N, c, w)
    Aq, Dq = F(A), F(D)
    X = [Aq[i] @ G[i] for i in range(N)]  # (c, w) each, exact
    u = [np.array([Fraction(0)] * w, dtype=object) for _ in range(N)]
    out = [G[i].copy() for i in range(N)]
    for t in range(1, L + 1):
        s = [X[i][t - 1] + u[i] if t <= c else u[i] for i in range(N)]
        k = t - N
        u = [s[(i - 1) % N] - X[i][k] if 0 <= k < c - 1 else s[(i - 1) % N] for i in range(N)]
        for i in range(N):
            out[i] = out[i] + np.outer(Dq[i][:, t - 1], u[i])
    return np.stack(out)


OPERATOR_CASES = [
    ("exact", 3, 3),
    ("exact", 4, 2),
    ("perturbation", 3, 5),
    ("perturbation", 4, 8),
    ("vandermonde", 3, 4),
    ("random", 3, 4),
    ("random", 2, 1),
]


@pytest.mark.parametrize("kind,N,c", OPERATOR_CASES)
def test_operator_route_and_ring_route_within_their_bounds_of_the_exact_outputs(kind, N, c):
    # theory §52.2: the operator route is within gamma_{(N+1)c} Phi|G| of the exact outputs, the
    # rounds within their own bound (encode, 2L additions, decode); checked against exact rationals
    des = make(kind, N, c)
    d = 2 * c + 1  # padding exercised
    g = np.random.default_rng(N * 10 + c).standard_normal((N, d))
    exact = exact_ring_outputs(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    op = simulate(des, g, accumulate="operator").outputs
    ring = simulate(des, g, accumulate="batched").outputs
    op_tol = cerar_operator_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    ring_bound = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :d]
    from fractions import Fraction

    F = np.vectorize(Fraction, otypes=[object])
    assert np.all(np.abs(F(op) - exact) <= F(op_tol))
    assert np.all(np.abs(F(ring) - exact) <= F(ring_bound))
    # so the routes differ by at most the sum (the claim simulate's "auto" rests on)
    assert np.all(np.abs(op - ring) <= op_tol + ring_bound)


def test_operator_route_at_benchmark_size_within_the_bounds():
    # (4, 8), d = 10^5 -- the size of the benchmark: routes within the sum of their bounds
    des = design(4, 8, "perturbation", eps=0.01)
    g = np.random.default_rng(0).standard_normal((4, 10**5))
    auto = simulate(des, g)
    op = simulate(des, g, accumulate="operator").outputs
    ring = simulate(des, g, accumulate="batched").outputs
    np.testing.assert_array_equal(auto.outputs, op)  # auto took the operator here
    tol = (cerar_operator_tol(des.encoders, des.decoders, g) + cerar_output_tol(des.encoders, des.decoders, g)).reshape(
        4, -1
    )
    assert np.all(np.abs(op - ring) <= tol)
    assert auto.bytes_sent.tolist() == [10 * 12500 * 8] * 4 and auto.traces is None


def test_auto_runs_the_rounds_where_rounding_shows():
    g = np.random.default_rng(4).standard_normal((3, 20))
    # well conditioned, float64, outputs only: the operator (bit for bit)
    des = design(3, 5, "perturbation", eps=0.1)
    assert np.array_equal(simulate(des, g).outputs, simulate(des, g, accumulate="operator").outputs)
    # the routes really differ in the last bits, so the checks below can fail
    assert not np.array_equal(simulate(des, g).outputs, simulate(des, g, accumulate="batched").outputs)
    cases = [
        (design(3, 5, "perturbation", eps=1e-9), {}),  # ||Phi|| u > sqrt(u): rounding-dominated
        (des, {"dtype": "float32"}),
        (des, {"record": True}),
        (design(9, 16, "perturbation", eps=0.1), {}),  # N c = 144 > 128
    ]
    for d_, kw in cases:
        gg = np.random.default_rng(4).standard_normal((d_.N, 20))
        with np.errstate(all="ignore"):
            a = simulate(d_, gg, warn=False, **kw).outputs
            b = simulate(d_, gg, warn=False, accumulate="batched", **kw).outputs
        assert np.array_equal(a, b), (d_.params, kw)
    # the ill-conditioned one: ||Phi||_inf u > sqrt(u), computed here from the arrays
    bad = design(3, 5, "perturbation", eps=1e-9)
    W = [
        np.abs(bad.decoders[i][:, m - 1 : m - 1 + 5]) @ np.abs(bad.encoders[(i - m) % 3])
        for i in range(3)
        for m in (1, 2)
    ]
    assert max(np.max(w.sum(axis=1)) for w in W) * 2.0**-53 > 2.0**-26.5


def test_operator_route_refuses_what_it_cannot_do():
    des = design(3, 3, "exact")
    g = np.ones((3, 8))
    for kw in ({"dtype": "bfloat16"}, {"record": True}):
        with pytest.raises(InvalidArgumentError, match="accumulate"):
            simulate(des, g, accumulate="operator", **kw)
    assert simulate(des, g, accumulate="operator", dtype="float32").outputs.shape == (3, 8)


def test_deterministic():
    des = design(4, 7, "perturbation", eps=0.03)
    g = np.random.default_rng(5).standard_normal((4, 33))
    a = simulate(des, g, dtype="bfloat16", warn=False).outputs
    b = simulate(des, g, dtype="bfloat16", warn=False).outputs
    assert np.array_equal(a, b)


@settings(max_examples=15, deadline=None)
@given(N=st.integers(2, 6), c=st.integers(1, 7), d=st.integers(0, 20), seed=st.integers(0, 10**6))
def test_error_identity_random_designs(N, c, d, seed):
    des = random_design(N, c, seed)
    g = np.random.default_rng(seed + 1).standard_normal((N, d))
    res = simulate(des, g)
    ref = naive_ring(des.encoders, des.decoders, g)[0]
    np.testing.assert_allclose(res.outputs, ref, atol=ring_tol(des.encoders, des.decoders, g)[0], rtol=0)


# ----------------------------------------------------------------------------- errors()


def test_errors_metrics_independent():
    des = design(4, 9, "perturbation", eps=0.05)
    N, c = 4, 9
    E = explicit_error_operators(des.encoders, des.decoders)
    e = errors(des)
    rows = [np.hstack([E[i, m] for m in range(N - 1)]) for i in range(N)]
    worst = [np.linalg.svd(r, compute_uv=False)[0] for r in rows]
    # the library's batched E and this loop's E: each entry within gamma_{c+1}(|D S||A| + I) of the
    # exact one (Higham Thm 3.5); norms move by the Frobenius norm of that, plus the SVD's rounding
    L = c + N - 2
    bound = np.zeros((N, N - 1))
    for i in range(N):
        for m in range(1, N):
            S = np.zeros((L, c))
            S[np.arange(c) + m - 1, np.arange(c)] = 1.0
            Bm = gamma(c + 1) * (np.abs(des.decoders[i] @ S) @ np.abs(des.encoders[(i - m) % N]) + np.eye(c))
            bound[i, m - 1] = np.linalg.norm(Bm)
    for i in range(N):
        t = 2 * SAFETY * np.linalg.norm(bound[i]) + 2 * lstsq_tol(1.0, c, (N - 1) * c, worst[i])
        assert e.per_worker_worst[i] == pytest.approx(worst[i], abs=t)
    assert e.worst_case == max(e.per_worker_worst)
    fro_w = np.array([sum(np.sum(E[i, m] ** 2) for m in range(N - 1)) for i in range(N)])
    fro_t = np.array(
        [
            2 * SAFETY * (2 * np.sqrt(fro_w[i]) * np.linalg.norm(bound[i]) + np.sum(bound[i] ** 2))
            + SAFETY * gamma((N - 1) * c * c) * fro_w[i]
            for i in range(N)
        ]
    )
    assert e.frobenius == pytest.approx(fro_w.sum(), abs=fro_t.sum())
    assert np.all(np.abs(e.relative_mse - fro_w / (N * c)) <= fro_t / (N * c))
    kA = [np.linalg.cond(a) for a in des.encoders]
    kD = [s[0] / s[-1] for s in (np.linalg.svd(dd, compute_uv=False) for dd in des.decoders)]
    # two SVDs of the same matrix: kappa agrees to 2 SAFETY p q u (1 + kappa) relative (LAPACK §4.9)
    for got, want in zip(e.kappa_encoders, kA, strict=True):
        assert got == pytest.approx(want, rel=2 * lstsq_tol(1 + want, c, c, 1.0))
    for got, want in zip(e.kappa_decoders, kD, strict=True):
        assert got == pytest.approx(want, rel=2 * lstsq_tol(1 + want, c, L, 1.0))


def test_errors_empirical_and_isotropic_mse():
    des = design(3, 7, "perturbation", eps=0.08)
    N, c, d = 3, 7, 7 * 4000
    rng = np.random.default_rng(11)
    g = rng.standard_normal((N, d))
    e = errors(des, g)
    total = g.sum(0)
    out = simulate(des, g, accumulate="batched").outputs  # errors() runs the same rounds
    emp = np.linalg.norm(out - total, axis=1) / np.linalg.norm(total)
    # the same float64 simulation and norms: equal up to the rounding of two length-d norms
    np.testing.assert_allclose(e.per_worker_empirical, emp, rtol=2 * SAFETY * gamma(d), atol=0)
    assert e.empirical == max(e.per_worker_empirical)
    # isotropic gradients: E||g_hat_i - g||^2 / E||G||_F^2 = relative_mse[i]. A statistical claim:
    # the numerator sums w = d / c independent quadratic forms g^T M^T M g, whose relative standard
    # deviation is at most sqrt(2 / w) (Var = 2 tr((M^T M)^2) <= 2 (tr M^T M)^2), the denominator
    # N d squares (sqrt(2 / (N d))); 5 standard deviations of each
    w = d // c
    ratio = np.sum((out - total) ** 2, axis=1) / np.sum(g**2)
    # worker N - 1 is exact: its numerator is rounding only, at most d ring_tol^2 (and relative_mse is
    # at the rounding level of E, below that)
    tol, _ = ring_tol(des.encoders, des.decoders, g)
    np.testing.assert_allclose(
        ratio, e.relative_mse, rtol=5 * (np.sqrt(2 / w) + np.sqrt(2 / (N * d))), atol=d * tol**2 / np.sum(g**2)
    )
    # the worst-case operator norm bounds every worker's error (Lemma 2), up to the rounding of the
    # simulated outputs (ring_tol per entry, sqrt(d) entries) and of the SVD
    for i in range(N):
        stacked = np.linalg.norm(np.delete(g, i, axis=0))
        slack = tol * np.sqrt(d) + lstsq_tol(1.0, c, (N - 1) * c, e.per_worker_worst[i]) * stacked
        assert np.linalg.norm(out[i] - total) <= e.per_worker_worst[i] * stacked + slack


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((2, 5)),
        np.zeros(5),
        np.zeros((3, 2, 2)),
        np.array([[1.0, np.nan]] * 3),
        np.array([[np.inf]] * 3),
        np.array([["a"]] * 3),
        np.ones((3, 2)) * 1j,
    ],
)
def test_bad_gradients(bad):
    with pytest.raises(InvalidArgumentError, match="gradients"):
        simulate(design(3, 2, "exact"), bad)


def test_bad_design_and_dtype():
    with pytest.raises(InvalidArgumentError, match="design"):
        simulate("not a design", np.zeros((3, 2)))
    with pytest.raises(InvalidArgumentError, match="dtype"):
        simulate(design(3, 2, "exact"), np.zeros((3, 2)), dtype="float16")
    with pytest.raises(InvalidArgumentError, match="gradients"):
        errors(design(3, 2, "exact"), np.zeros((4, 2)))
    for N, c in [(1, 2), (3, 0), (2.5, 2)]:
        with pytest.raises(InvalidArgumentError):
            rates(N, c)
