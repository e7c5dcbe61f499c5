"""Least-squares decoding of partly arrived M-SGC jobs (simulate_multiplexed(partial=...), theory §62.5).

The reference is computed here from the masks alone: what arrived follows Lemma 62.7 (counted from the
masks, not the simulator), the job's matrix is built from its blocks (a chunk = f sub-parts, a group =
the columns of its code's encoder for the workers that sent it) and solved by ``numpy.linalg.lstsq``;
with no coded part, or the identity code of ``lam = 0``, the error is an exact fraction.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from exact_lstsq import checked_lstsq
from gcsim.coding.sequential import markov_masks
from gcsim.coding.sequential_multiplexed import MultiplexedSGC, simulate_multiplexed
from gcsim.errors import InvalidArgumentError
from tolerances import lstsq_tol


def _arrived(seq: np.ndarray, code: MultiplexedSGC, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 62.7 read off the masks: chunks of each worker in by t + T, and the senders of each group."""
    n, B, W, lam = code.params
    ok = seq[t : t + code.delay + 1]
    chunks = np.minimum(W - 1, ok.sum(axis=0))
    senders = np.zeros((B, n), dtype=bool)
    for g in range(B):
        r = t + W - 1 + g
        senders[g] = seq[r] & ((~seq[t:r]).sum(axis=0) <= g)
    return chunks, senders


def _reference(
    code: MultiplexedSGC, chunks: np.ndarray, senders: np.ndarray, seed: int
) -> tuple[float, np.ndarray, float]:
    """min ||A x - 1||^2 / N over the arrived mini-tasks (columns of A), the projection A x* of 1, and the
    error's tolerance: two orthogonal least-squares solves (gcsim's and this one), each within
    ``lstsq_tol`` of the exact residual (tests/tolerances.py: c N k u kappa(A), Higham Thm 20.3)."""
    n, B, W, lam = code.params
    f = lam + 1 if lam < n else 1
    N = code.subparts
    cols = []
    for j in range(n):
        for c in range(int(chunks[j])):  # which chunks does not change the error: each is its own block
            col = np.zeros(N)
            start = (j * (W - 1) + c) * f
            col[start : start + f] = 1.0
            cols.append(col)
    if lam < n:
        Bg = code.group_scheme(seed).B  # (parts, workers): the coefficients, data for this check
        for g in range(B):
            for j in np.flatnonzero(senders[g]):
                col = np.zeros(N)
                col[n * (W - 1) * f + g * n : n * (W - 1) * f + (g + 1) * n] = Bg[:, j]
                cols.append(col)
    A = np.array(cols).T if cols else np.zeros((N, 0))
    x = np.linalg.lstsq(A, np.ones(N), rcond=None)[0] if cols else np.zeros(0)
    # the residual: lstsq at full column rank, exact / pivoted QR where A is rank-deficient (no kernel's choice)
    residual, kappa = checked_lstsq(A, np.ones(N))
    return residual / N, A @ x, 2 * lstsq_tol(kappa, N, max(A.shape[1], 1), 1.0)


CASES = [(3, 1, 2, 1), (4, 2, 3, 1), (4, 1, 3, 2), (3, 1, 2, 3), (4, 2, 4, 0), (5, 2, 4, 2)]


@pytest.mark.parametrize("n,B,W,lam", [*CASES, (20, 2, 5, 6)])  # and the results page's code
def test_least_squares_error_and_weights_match_lstsq_of_the_arrived_rows(n, B, W, lam):
    code = MultiplexedSGC(n, B, W, lam)
    f = lam + 1 if lam < n else 1
    for seed in range(4):
        seq = markov_masks(n, 30, p_enter=0.2, p_leave=0.4, seed=seed)
        run = simulate_multiplexed(code, seq, partial="least-squares", code_seed=seed)
        assert run.error is not None and run.weights is not None
        for t in range(run.decoded.size):
            chunks, senders = _arrived(seq, code, t)
            err, proj, tol = _reference(code, chunks, senders, seed)
            assert abs(run.error[t] - err) <= tol
            cut = n * (W - 1) * f
            w = run.weights[t]
            # chunk sub-parts: 0/1, f per arrived chunk of each worker; group parts: the projection of 1
            assert set(np.unique(w[:cut]).tolist()) <= {0.0, 1.0}
            assert w[:cut].reshape(n, -1).sum(axis=1).tolist() == (f * chunks).tolist()
            np.testing.assert_allclose(w[cut:], proj[cut:], atol=1e-9)


@pytest.mark.parametrize("lam", [0, 4])  # the identity code, and no coded part (lam = n)
def test_error_is_the_exact_fraction_of_missing_sub_parts(lam):
    n, B, W = 4, 2, 3
    code = MultiplexedSGC(n, B, W, lam)
    seq = markov_masks(n, 40, p_enter=0.3, p_leave=0.3, seed=3)
    run = simulate_multiplexed(code, seq, partial="least-squares")
    assert run.error is not None
    f = 1 if lam == n else lam + 1
    for t in range(run.decoded.size):
        chunks, senders = _arrived(seq, code, t)
        missing = f * int(n * (W - 1) - chunks.sum()) + (int(B * n - senders.sum()) if lam < n else 0)
        assert Fraction(float(run.error[t])).limit_denominator(10**6) == Fraction(missing, code.subparts)


@pytest.mark.parametrize("n,B,W,lam", CASES)
def test_exact_when_decoded_and_never_worse_than_dropping(n, B, W, lam):
    code = MultiplexedSGC(n, B, W, lam)
    seq = markov_masks(n, 60, p_enter=0.15, p_leave=0.5, seed=1)
    drop = simulate_multiplexed(code, seq)
    ls = simulate_multiplexed(code, seq, partial="least-squares")
    assert drop.error is not None and ls.error is not None and ls.weights is not None
    np.testing.assert_array_equal(drop.decoded, ls.decoded)
    np.testing.assert_array_equal(drop.error, (drop.decoded < 0).astype(float))
    done = ls.decoded >= 0
    assert np.all(ls.error[done] == 0.0) and np.all(ls.weights[done] == 1.0)
    assert np.all(ls.error <= drop.error) and np.all(ls.error[~done] > 0.0)
    assert drop.weights is None


@pytest.mark.parametrize("n,B,W,lam", CASES)
def test_error_is_monotone_in_the_arrivals(n, B, W, lam):
    code = MultiplexedSGC(n, B, W, lam)
    rng = np.random.default_rng(7)
    for seed in range(5):
        seq = markov_masks(n, 25, p_enter=0.3, p_leave=0.3, seed=seed)
        more = seq | (rng.random(seq.shape) < 0.3)  # every arrival of seq, and some more
        a = simulate_multiplexed(code, seq, partial="least-squares").error
        b = simulate_multiplexed(code, more, partial="least-squares").error
        assert a is not None and b is not None
        assert np.all(b <= a + 1e-12)


def test_waiting_decodes_every_job_with_zero_error():
    code = MultiplexedSGC(5, 2, 4, 2)
    seq = markov_masks(5, 50, p_enter=0.2, p_leave=0.4, seed=2)
    run = simulate_multiplexed(code, seq, wait_cost=1.0, partial="least-squares")
    assert run.error is not None and np.all(run.error == 0.0) and np.all(run.decoded >= 0)


def test_bad_partial_and_code_seed_are_named():
    code = MultiplexedSGC(3, 1, 2, 1)
    m = np.ones((4, 3), bool)
    with pytest.raises(InvalidArgumentError, match="partial"):
        simulate_multiplexed(code, m, partial="lstsq")
    with pytest.raises(InvalidArgumentError, match="code_seed"):
        simulate_multiplexed(code, m, code_seed=-1)
    with pytest.raises(InvalidArgumentError, match="lam"):
        MultiplexedSGC(3, 1, 2, 3).group_scheme()


def test_a_projection_with_round_off_never_costs_more_than_receiving_nothing(monkeypatch):
    """The group residual ``||B_F X* - 1||^2`` is at most ``n`` (a projection of the all-ones vector); a
    projection carrying round-off just past zero must not push a job's error past that of receiving
    nothing (1): the residual is clipped to ``[0, n]`` (theory §5.1, as ``optimal_error`` clips)."""
    import gcsim.coding.sequential_multiplexed as sm

    code = MultiplexedSGC(4, 2, 3, 1)
    seq = np.zeros((12, 4), dtype=bool)  # every worker straggles in every round: nothing arrives
    exact = simulate_multiplexed(code, seq, partial="least-squares")
    assert exact.error is not None and np.all(exact.error == 1.0)
    real = sm._projections
    monkeypatch.setattr(sm, "_projections", lambda B, masks: real(B, masks) - 1e-12)
    run = simulate_multiplexed(code, seq, partial="least-squares")
    assert run.error is not None and np.all(run.error == 1.0)
