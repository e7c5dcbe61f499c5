"""CERAR ring simulator: checked against a naive per-worker/per-round reference written here
from the protocol text of SPEC §5, against the error-operator identity with explicitly built
shift matrices, and against the traffic formulas."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.cerar import CerarDesign, design, errors, rates, simulate
from gcsim.errors import InvalidArgumentError


# ----------------------------------------------------------------------------- references

def naive_ring(A, D, gradients, rnd=lambda v: v, dtype=np.float64):
    """Loop-based transcription of SPEC §5 (1-based rounds, dicts of symbols, one worker at a time).

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
    ("exact", 3, 2), ("exact", 4, 4), ("exact", 5, 3), ("exact", 2, 4),
    ("perturbation", 3, 5), ("perturbation", 4, 9), ("vandermonde", 3, 4),
    ("random", 3, 3), ("random", 4, 6), ("random", 2, 1), ("random", 5, 1),
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
    scale = 1 + np.abs(ref).max()
    assert np.allclose(res.outputs, ref, atol=1e-10 * scale, rtol=0)
    for (t, i), v in us.items():
        assert np.allclose(res.traces["u"][t - 1, i], v, atol=1e-10 * scale)
        assert np.allclose(res.traces["sent"][t - 1, i], sent[t, i], atol=1e-10 * scale)


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
    X = des.encoders @ G                                    # X[i, tau-1] = x_i^(tau)
    L = c + N - 2
    scale = 1 + np.abs(X).max() * N

    def x(i, tau):
        return X[i % N, tau - 1] if 1 <= tau <= c else np.zeros(w)

    U = res.traces["u"]
    for t in range(1, L + 1):
        for i in range(N):
            expect = sum(x(i - m, t - m + 1) for m in range(1, N))
            assert np.allclose(U[t - 1, i], expect, atol=1e-10 * scale)
    # u is zero outside 1..L: the round after L would carry nothing
    assert all(np.allclose(sum(x(i - m, L + 1 - m + 1) for m in range(1, N)), 0) for i in range(N))
    # g_hat_i = G_i + D_i U_i  and  = sum_j G_j + sum_m E_{i,m} G_{i-m}
    E = explicit_error_operators(des.encoders, des.decoders)
    for i in range(N):
        out_i = res.outputs[i]
        via_u = (G[i] + des.decoders[i] @ U[:, i, :]).reshape(-1)[:d]
        via_e = (G.sum(0) + sum(E[i, m - 1] @ G[(i - m) % N] for m in range(1, N))).reshape(-1)[:d]
        tol = 1e-9 * (1 + np.abs(via_u).max())
        assert np.allclose(out_i, via_u, atol=tol)
        assert np.allclose(out_i, via_e, atol=tol)


@pytest.mark.parametrize("N,c", [(3, 1), (3, 3), (4, 2), (5, 5), (6, 4), (2, 3), (7, 3)])
def test_exact_designs_all_reduce(N, c):
    g = np.random.default_rng(N + c).standard_normal((N, 50))
    res = simulate(design(N, c, "exact"), g)
    assert np.allclose(res.outputs, np.broadcast_to(g.sum(0), (N, 50)), atol=1e-12)


@pytest.mark.parametrize("dtype,itemsize", [(None, 8), ("float64", 8), ("float32", 4),
                                            (np.float32, 4), ("bfloat16", 2)])
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
    d = c * N * 7                                   # divisible by c and N: no padding
    res = simulate(design(N, c, "exact") if c <= N else design(N, c, "perturbation"),
                   np.ones((N, d)), warn=False)
    per_worker = res.bytes_sent[0] / 8
    assert per_worker == pytest.approx((1 + (N - 2) / c) * d, rel=1e-14)
    r = rates(N, c)
    assert r["rounds"] == c + N - 2
    assert r["rate"] == pytest.approx(1 + (N - 2) / c)
    assert r["ring_rate"] == pytest.approx(2 * (N - 1) / N)
    assert r["storage"] == pytest.approx(1 + N / c)
    ring_bytes = 2 * (N - 1) / N * d
    assert r["byte_ratio"] == pytest.approx(ring_bytes / per_worker)
    if c == N:                                      # equals ring all-reduce exactly
        assert per_worker == pytest.approx(ring_bytes)


@pytest.mark.parametrize("N,c", [(3, 2), (4, 8), (5, 3), (2, 4)])
def test_peak_buffers_measured(N, c):
    res = simulate(design(N, c, "perturbation"), np.ones((N, 9)), record=True)
    live = res.traces["live"]
    # schedule: c state + c pending symbols + 1 buffer at the start; a symbol is freed when
    # stripped (round tau + N - 1) or, for x^(c), right after it is sent (round c)
    expect = [c + 1 + sum(1 for tau in range(1, c + 1)
                          if (tau < c and tau + N - 1 > t) or (tau == c and c > t))
              for t in range(1, c + N - 1)]
    assert live.tolist() == expect
    assert res.peak_buffers.tolist() == [2 * c + 1] * N
    assert rates(N, c)["simulator_storage"] == pytest.approx((2 * c + 1) / c)


def test_padding_and_empty():
    des = design(3, 4, "perturbation", eps=0.1)
    g = np.random.default_rng(2).standard_normal((3, 10))
    res = simulate(des, g)
    padded = np.hstack([g, np.zeros((3, 2))])
    assert np.allclose(res.outputs, simulate(des, padded).outputs[:, :10])
    empty = simulate(des, np.zeros((3, 0)))
    assert empty.outputs.shape == (3, 0) and empty.bytes_sent.tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-4)])
def test_accumulate_orders_agree(dtype, tol):
    des = design(4, 6, "perturbation", eps=0.1)
    g = np.random.default_rng(3).standard_normal((4, 40))
    a = simulate(des, g, dtype=dtype, accumulate="batched").outputs
    b = simulate(des, g, dtype=dtype, accumulate="rounds").outputs
    ref = naive_ring(des.encoders, des.decoders, g)[0]
    assert np.allclose(a, ref, atol=tol * np.abs(ref).max())
    assert np.allclose(b, ref, atol=tol * np.abs(ref).max())
    with pytest.raises(InvalidArgumentError, match="accumulate"):
        simulate(des, g, accumulate="later")


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
    assert np.allclose(res.outputs, ref, atol=1e-9 * (1 + np.abs(ref).max(initial=0.0)))


# ----------------------------------------------------------------------------- errors()

def test_errors_metrics_independent():
    des = design(4, 9, "perturbation", eps=0.05)
    N, c = 4, 9
    E = explicit_error_operators(des.encoders, des.decoders)
    e = errors(des)
    rows = [np.hstack([E[i, m] for m in range(N - 1)]) for i in range(N)]
    worst = [np.linalg.svd(r, compute_uv=False)[0] for r in rows]
    assert np.allclose(e.per_worker_worst, worst, atol=1e-9)
    assert e.worst_case == pytest.approx(max(worst))
    assert e.frobenius == pytest.approx(sum(np.sum(E[i, m] ** 2) for i in range(N) for m in range(N - 1)))
    assert np.allclose(e.relative_mse, [sum(np.sum(E[i, m] ** 2) for m in range(N - 1)) / (N * c)
                                        for i in range(N)])
    kA = [np.linalg.cond(a) for a in des.encoders]
    kD = [s[0] / s[-1] for s in (np.linalg.svd(dd, compute_uv=False) for dd in des.decoders)]
    assert np.allclose(e.kappa_encoders, kA, rtol=1e-6)
    assert np.allclose(e.kappa_decoders, kD, rtol=1e-9)


def test_errors_empirical_and_isotropic_mse():
    des = design(3, 7, "perturbation", eps=0.08)
    N, c, d = 3, 7, 7 * 4000
    rng = np.random.default_rng(11)
    g = rng.standard_normal((N, d))
    e = errors(des, g)
    total = g.sum(0)
    out = simulate(des, g).outputs
    emp = np.linalg.norm(out - total, axis=1) / np.linalg.norm(total)
    assert np.allclose(e.per_worker_empirical, emp)
    assert e.empirical == pytest.approx(emp.max())
    # isotropic gradients: E||g_hat_i - g||^2 / E||G||_F^2 = relative_mse[i]
    ratio = np.sum((out - total) ** 2, axis=1) / np.sum(g ** 2)
    assert np.allclose(ratio, e.relative_mse, rtol=0.05)
    # the worst-case operator norm bounds every worker's error
    for i in range(N):
        stacked = np.linalg.norm(np.delete(g, i, axis=0))
        assert np.linalg.norm(out[i] - total) <= (e.per_worker_worst[i] + 1e-10) * stacked


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad", [np.zeros((2, 5)), np.zeros(5), np.zeros((3, 2, 2)),
                                 np.array([[1.0, np.nan]] * 3), np.array([[np.inf]] * 3),
                                 np.array([["a"]] * 3), np.ones((3, 2)) * 1j])
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


@pytest.mark.parametrize("N,c", [(3, 6), (4, 9), (5, 5)])
def test_storage_information_count(N, c):
    """Remark in docs/theory/50_cerar.md: after round t a worker's state must determine
    (A' G, G + D_{:t} U_{:t}); for generic dense designs that is c + min(K, t) packets,
    K = c - t + min(N-1, t)."""
    rng = np.random.default_rng(N * c)
    A = rng.standard_normal((c, c))
    D = rng.standard_normal((c, c + N - 2))
    for t in range(1, c):                                  # x^(c) is never needed back
        rows = list(range(max(0, t - N + 1), c))          # in-flight and unsent symbols (0-based)
        K = len(rows)
        assert K == c - t + min(N - 1, t)
        M = np.block([[A[rows], np.zeros((K, t))], [np.eye(c), D[:, :t]]])
        assert np.linalg.matrix_rank(M) == c + min(K, t)
    if c >= N + 1:
        assert c + min(c - N + N - 1, N) == c + N          # at t = N: more than c + N - 1
