"""Tests of the spectral bounds of theory §46 (gcsim.coding.bounds, gcsim.coding.verify).

Everything the bounds are compared with is recomputed here independently of gcsim's evaluators:
graphs from networkx (``random_regular_graph``), spectra from ``numpy.linalg.eigvalsh`` on the
networkx adjacency, optimal errors by ``numpy.linalg.lstsq`` pattern by pattern, fixed-decoder
errors from their definition, the mean of §46.5 in exact integer arithmetic, and RD expectations
by enumerating every sign pattern.  Tolerances come from tests/tolerances.py.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

import gcsim
from exact_lstsq import reference_residual
from gcsim.coding.bounds import (
    arrival_decoder_mean_error,
    second_singular_value,
    spectral_decoder_upper_bound,
    spectral_rd_upper_bound,
    spectral_upper_bound,
    uncovering_lower_bound,
    worst_case_rank_lower_bound,
)
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.verify import Bound, verify_bounds
from gcsim.combinatorics.baselines import margulis_gabber_galil
from gcsim.combinatorics.srg_feasibility import srg_eigenvalues
from gcsim.errors import InvalidArgumentError
from tolerances import SAFETY, cond, gamma, lstsq_tol, unit_roundoff

# ----------------------------------------------------------------------------------------------
# independent helpers
# ----------------------------------------------------------------------------------------------

REGULAR = [(10, 3, 0), (12, 4, 1), (14, 3, 2), (16, 5, 3), (12, 6, 4)]  # (n, d, seed), exhaustive


def nx_assignment(n, d, seed, include_self=True):
    """0/1 assignment of networkx.random_regular_graph(d, n, seed): Adj + I (default) or Adj."""
    adj = nx.to_numpy_array(nx.random_regular_graph(d, n, seed=seed), dtype=float)
    return (adj + np.eye(n) if include_self else adj).astype(np.int64), adj


def target(m, N):
    return np.kron(np.eye(m), np.ones((N, 1)))


def lstsq_err(B, m, mask):
    """min_X ||B_F X - T||_F^2 by numpy least squares, and its rounding tolerance."""
    B = np.asarray(B, float)
    N = B.shape[0] // m
    T = target(m, N)
    BF = B[:, np.asarray(mask, bool)]
    if BF.shape[1] == 0 or not np.any(BF):
        return float(m * N), 0.0
    # residual of a backward-stable least-squares solve (Higham Thm 20.3): c rows cols u kappa ||T||;
    # squared: times 2 ||r|| <= 2 sqrt(m N); a rank-deficient B_F (where gelsd depended on the
    # OpenBLAS kernel) is solved in exact rationals instead (tests/exact_lstsq.py)
    tol = 2 * lstsq_tol(cond(BF, nonzero=True), *BF.shape, m * N)
    return reference_residual(BF, T), tol


def arrivals_err(B, X0, mask):
    """||B ((n/f) 1_F X_0) - T||_F^2 from the definition."""
    B, X0 = np.asarray(B, float), np.asarray(X0, float)
    n, m = X0.shape
    f = int(np.sum(mask))
    X = (n / f) * X0 * np.asarray(mask, float)[:, None]
    return float(((B @ X - target(m, B.shape[0] // m)) ** 2).sum())


def best_scale_err(A, mask):
    """min_c ||c A 1_F - 1||^2 = N - (1.y)^2 / ||y||^2, y = A 1_F (the optimally rescaled decoder)."""
    y = np.asarray(A, float) @ np.asarray(mask, float)
    return float(A.shape[0] - y.sum() ** 2 / (y @ y))


def all_masks(n, s):
    for S in itertools.combinations(range(n), s):
        mask = np.ones(n, bool)
        mask[list(S)] = False
        yield mask


def sampled_masks(n, s, count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        mask = np.ones(n, bool)
        mask[rng.choice(n, size=s, replace=False)] = False
        yield mask


def formula_tol(N):
    """Rounding of the closed forms: a handful of operations on quantities of size <= N (Higham Thm 3.1)."""
    return SAFETY * gamma(8) * max(N, 1)


def second_abs_eigenvalue(M):
    """max(|theta_2|, |theta_n|) of a symmetric matrix with constant row sums, by eigvalsh."""
    theta = np.linalg.eigvalsh(np.asarray(M, float))
    return float(max(abs(theta[-2]), abs(theta[0])))


# ----------------------------------------------------------------------------------------------
# sigma(A): the spectral quantity of the bounds
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,d,seed", REGULAR + [(40, 6, 5), (30, 8, 6)])
def test_second_singular_value_is_the_second_absolute_eigenvalue(n, d, seed):
    for include_self in (True, False):
        A, adj = nx_assignment(n, d, seed, include_self)
        M = adj + np.eye(n) if include_self else adj
        expected = second_abs_eigenvalue(M)
        tol = SAFETY * n * unit_roundoff() * np.linalg.norm(M)  # symmetric eigensolver, Weyl
        assert abs(second_singular_value(A) - expected) <= tol
    # with the identity the spectrum shifts by one: sigma(Adj + I) = max(|theta_2 + 1|, |theta_n + 1|)
    theta = np.linalg.eigvalsh(adj)
    assert abs(second_singular_value(adj.astype(int) + np.eye(n, dtype=int)) - max(theta[-2] + 1, -theta[0] - 1)) <= tol


@pytest.mark.parametrize("params", [(10, 3, 0, 1), (13, 6, 2, 3), (16, 6, 2, 2)])
def test_second_singular_value_of_srgs_from_their_parameters(params):
    A = gcsim.srg(*params).assignment  # Adj + I
    _, (r, _), (t, _) = srg_eigenvalues(*params)
    expected = max(abs(float(r) + 1), abs(float(t) + 1))
    assert abs(second_singular_value(A) - expected) <= SAFETY * params[0] * unit_roundoff() * np.linalg.norm(A)


def test_second_singular_value_of_an_irregular_assignment():
    A = margulis_gabber_galil(5).assignment.astype(float)  # symmetric, loads 5..9: 1 is not an eigenvector
    n = A.shape[1]
    P = np.eye(n) - 1.0 / n
    expected = math.sqrt(np.linalg.eigvalsh(P @ A.T @ A @ P)[-1])
    assert abs(second_singular_value(A) - expected) <= SAFETY * n * unit_roundoff() * np.linalg.norm(A) ** 2


# ----------------------------------------------------------------------------------------------
# §46.2-46.3: the upper bound for B = A, on every pattern
# ----------------------------------------------------------------------------------------------


def _check_upper_on(A, masks):
    A = np.asarray(A)
    N, n = A.shape
    r = int(A.sum(axis=1)[0])
    regular_loads = len(set(A.sum(axis=0).tolist())) == 1
    X0 = np.full((n, 1), 1.0 / r)
    by_s = {}
    for mask in masks:
        s = n - int(mask.sum())
        if s not in by_s:
            by_s[s] = (
                spectral_upper_bound(A, s),
                spectral_upper_bound(A, s, rescale="optimal") if regular_loads else None,
            )
        arrivals_bound, optimal_bound = by_s[s]
        opt, tol = lstsq_err(A, 1, mask)
        fixed = arrivals_err(A, X0, mask)
        assert opt <= fixed + tol
        assert fixed <= arrivals_bound + formula_tol(N), (s, fixed, arrivals_bound)
        if optimal_bound is not None:
            best = best_scale_err(A, mask)
            assert opt <= best + tol
            assert best <= optimal_bound + formula_tol(N), (s, best, optimal_bound)
            assert optimal_bound <= arrivals_bound + formula_tol(N)


@pytest.mark.parametrize("n,d,seed", REGULAR)
@pytest.mark.parametrize("include_self", [True, False])
def test_spectral_upper_bound_on_every_pattern_of_random_regular_graphs(n, d, seed, include_self):
    A, _ = nx_assignment(n, d, seed, include_self)
    masks = [mask for s in (1, 2, 3) for mask in all_masks(n, s)]
    _check_upper_on(A, masks)


@pytest.mark.parametrize("n,d,seed", [(40, 6, 5), (60, 4, 7), (50, 10, 8)])
def test_spectral_upper_bound_on_sampled_patterns_of_larger_graphs(n, d, seed):
    A, _ = nx_assignment(n, d, seed)
    masks = [mask for s in (n // 10, n // 4, n // 2) for mask in sampled_masks(n, s, 120, seed)]
    _check_upper_on(A, masks)


@pytest.mark.parametrize("params", [(10, 3, 0, 1), (13, 6, 2, 3), (16, 6, 2, 2)])
def test_spectral_upper_bound_on_every_pattern_of_srgs(params):
    A = gcsim.srg(*params).assignment
    _check_upper_on(A, [mask for s in (1, 2, 3, 4) for mask in all_masks(params[0], s)])


def test_spectral_upper_bound_is_raviv_form_for_the_adjacency():
    # A = Adj of a d-regular graph: r = d and sigma = lambda, so E = (lambda/d)^2 n s / (n - s)
    n, d, seed = 16, 5, 3
    A, adj = nx_assignment(n, d, seed, include_self=False)
    lam = second_abs_eigenvalue(adj)
    for s in (1, 4, 8):
        raviv = (lam / d * math.sqrt(n * s / (n - s))) ** 2
        # the bound enlarges sigma by 10 n eps ||A P||_F past the SVD's rounding (docstring of the helper):
        # a relative 2 * 20 n u ||A||_F / lambda on sigma^2, plus the eigensolver's and formula's rounding
        margin = raviv * (2 * 20 * n * unit_roundoff() * np.linalg.norm(adj) / lam + SAFETY * n * unit_roundoff())
        assert raviv - formula_tol(n) <= spectral_upper_bound(A, s) <= raviv + margin + formula_tol(n)
    assert spectral_upper_bound(A, 0) == 0.0 and spectral_upper_bound(A, n) == float(n)
    assert spectral_upper_bound(A, 4, normalized=True) == pytest.approx(
        spectral_upper_bound(A, 4) / n, rel=4 * unit_roundoff()
    )


def test_spectral_upper_bound_is_not_loose_on_ramanujan_graphs():
    """The bound for the rescaled decoder is within its proved factor of that decoder's worst case.

    §46.5: max_F err_x(F) >= mean = s N (n - r) / (f r (n - 1)), so bound / max <= sigma^2 n (n - 1) / (r N (n - r)).
    A bound that silently lost a factor (r instead of r^2, n instead of s, ...) would break this.
    """
    for name, A in [
        ("Petersen+I", gcsim.srg(10, 3, 0, 1).assignment),
        ("Paley13+I", gcsim.srg(13, 6, 2, 3).assignment),
        ("rr(16,5)+I", nx_assignment(16, 5, 3)[0]),
    ]:
        N, n = A.shape
        r = int(A.sum(axis=1)[0])
        sigma = second_singular_value(A)
        ceiling = sigma**2 * n * (n - 1) / (r * N * (n - r))
        X0 = np.full((n, 1), 1.0 / r)
        for s in (2, 3):
            worst_fixed = max(arrivals_err(A, X0, mask) for mask in all_masks(n, s))
            bound = spectral_upper_bound(A, s)
            # seen: 1.10-1.97 (ceilings 1.50 Petersen, 1.52 Paley(13), 3.09 for the random graph)
            assert 1.0 - 1e-9 <= bound / worst_fixed <= ceiling * (1 + 1e-9), (name, s, bound / worst_fixed, ceiling)


# ----------------------------------------------------------------------------------------------
# §46.1: any encoder with its reference decoder (MGG, RD, NS)
# ----------------------------------------------------------------------------------------------


def _check_decoder_bound(scheme, masks):
    B, X0, m = scheme.B, scheme.decoder, scheme.m
    n = B.shape[1]
    cache = {}
    for mask in masks:
        s = n - int(mask.sum())
        bound = cache.setdefault(s, spectral_decoder_upper_bound(scheme, s))
        opt, tol = lstsq_err(B, m, mask)
        fixed = arrivals_err(B, X0, mask)
        assert opt <= fixed + tol
        assert fixed <= bound + formula_tol(B.shape[0]) * (1 + np.abs(X0).max() * n), (s, fixed, bound)
        assert opt <= bound + tol


@pytest.mark.parametrize("side", [4, 5])
def test_spectral_decoder_bound_on_every_pattern_of_mgg_graphs(side):
    sch = encode(margulis_gabber_galil(side), 1, "expander")
    n = side * side
    _check_decoder_bound(sch, [mask for s in (1, 2) for mask in all_masks(n, s)])


def test_spectral_decoder_bound_on_sampled_patterns_of_a_larger_mgg_graph():
    sch = encode(margulis_gabber_galil(7), 1, "expander")
    _check_decoder_bound(sch, [mask for s in (3, 7, 15) for mask in sampled_masks(49, s, 100, 11)])


def test_spectral_decoder_bound_with_the_least_squares_decoder_is_not_vacuous_on_mgg():
    # irregular replication: X_0 = A^+ 1 solves A X_0 = 1 exactly when A is invertible, and the bound drops
    A = margulis_gabber_galil(5).assignment
    X0 = np.linalg.lstsq(A.astype(float), np.ones((25, 1)), rcond=None)[0]
    sch = encode(A, 1, "expander")
    for s in (1, 3, 6):
        bound = spectral_decoder_upper_bound(sch, s, decoder=X0)
        assert bound < 25.0
        assert bound <= spectral_decoder_upper_bound(sch, s)  # X_0 = 1/mean(r) leaves ||A X_0 - 1|| > 0
        for mask in sampled_masks(25, s, 60, s):
            assert arrivals_err(A, X0, mask) <= bound + formula_tol(25) * (1 + np.abs(X0).max() * 25)


@pytest.mark.parametrize("method", ["rd", "ns"])
def test_spectral_decoder_bound_for_multi_block_encoders(method):
    A, _ = nx_assignment(12, 4, 1)
    sch = encode(A, 2, method, eps=0.1, seed=3)
    _check_decoder_bound(sch, [mask for s in (1, 2) for mask in all_masks(12, s)])


def test_spectral_decoder_bound_reduces_to_the_graph_form():
    A, _ = nx_assignment(14, 3, 2)
    sch = encode(A, 1, "expander")  # X_0 = 1/r
    for s in (1, 5):
        assert spectral_decoder_upper_bound(sch, s) == pytest.approx(spectral_upper_bound(A, s), rel=SAFETY * gamma(16))


# ----------------------------------------------------------------------------------------------
# §46.4: RD with m blocks, in expectation over the draw (exact enumeration of the signs)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("graph", ["prism", "K33"])
def test_spectral_rd_upper_bound_above_the_exact_expected_optimal_error(graph):
    G = nx.circular_ladder_graph(3) if graph == "prism" else nx.complete_bipartite_graph(3, 3)
    adj = nx.to_numpy_array(G)
    A = (adj + np.eye(6)).astype(np.int64)
    m, n = 2, 6
    for s in (1, 2):
        bound = spectral_rd_upper_bound(A, m, s)
        for mask in all_masks(n, s):
            total, tol = 0.0, 0.0
            for signs in itertools.product((-1.0, 1.0), repeat=m * n):
                d = np.asarray(signs).reshape(m, n)
                B = np.concatenate([A * d[k][None, :] for k in range(m)], axis=0)
                e, t = lstsq_err(B, m, mask)
                total, tol = total + e, max(tol, t)
            mean = total / 2 ** (m * n)
            assert mean <= bound + tol + formula_tol(m * n), (graph, s, mean, bound)
        # Theorem 2 of §45 on each pattern, from S1 and S2 counted here, is below the spectral form
        for mask in all_masks(n, s):
            c = A @ mask.astype(int)
            S1, S2 = c.sum(), (c * c).sum()
            per_pattern = m * (n - S1**2 / (S2 + (m - 1) * S1))
            assert per_pattern <= bound + formula_tol(m * n)


def test_spectral_rd_upper_bound_m1_equals_the_optimal_rescale_form():
    A, _ = nx_assignment(16, 5, 3)
    for s in (2, 7):
        assert spectral_rd_upper_bound(A, 1, s) == pytest.approx(
            spectral_upper_bound(A, s, rescale="optimal"), rel=SAFETY * gamma(16)
        )


# ----------------------------------------------------------------------------------------------
# §46.5: the exact mean of the rescaled decoder (integer arithmetic)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,d,seed", REGULAR[:3])
def test_arrival_decoder_mean_error_exact(n, d, seed):
    A, _ = nx_assignment(n, d, seed)
    r = d + 1
    for s in (1, 2, 3):
        f = n - s
        total, count = Fraction(0), 0
        for mask in all_masks(n, s):
            y = A @ mask.astype(np.int64)  # integer A 1_F; residual (n y - f r) / (f r), exactly
            total += Fraction(int(((n * y - f * r) ** 2).sum()), (f * r) ** 2)
            count += 1
        assert total / count == arrival_decoder_mean_error(A, s, exact=True)


# ----------------------------------------------------------------------------------------------
# §46.6: the worst-case uncovering lower bound
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,d,seed", REGULAR[:4])
def test_uncovering_lower_bound_below_the_worst_optimal_error(n, d, seed):
    A, _ = nx_assignment(n, d, seed)
    r = d + 1
    for m, method in [(1, "expander"), (2, "rd")]:
        sch = encode(A, m, method, seed=seed)
        for s in (r, r + 2, 2 * r):
            if math.comb(n, s) > 3000:
                continue
            res = uncovering_lower_bound(A, m, s)
            assert len(res.stragglers) == s and int((~res.mask).sum()) == s
            uncovered = int(np.sum(A[:, res.mask].sum(axis=1) == 0))  # parts with no arrived holder
            assert uncovered >= s // r
            assert res.value >= m * (s // r)
            errs = [lstsq_err(sch.B, m, mask) for mask in all_masks(n, s)]
            worst = max(e for e, _ in errs)
            assert res.value <= worst + max(t for _, t in errs)
            assert res.value <= lstsq_err(sch.B, m, res.mask)[0] + lstsq_err(sch.B, m, res.mask)[1]
            assert res.value <= worst_case_rank_lower_bound(A, m, s).value


# ----------------------------------------------------------------------------------------------
# the verification engine
# ----------------------------------------------------------------------------------------------


def test_verify_bounds_checks_the_spectral_bounds_on_regular_graph_schemes():
    A, _ = nx_assignment(12, 4, 1)
    model = straggler_model("all", 12, s=3)
    rep = verify_bounds(
        encode(A, 1, "expander"), model, ["spectral_upper", "spectral_decoder_upper", "uncovering_lower"]
    )
    assert rep.ok, rep.summary()
    assert rep.check("uncovering_lower").scope == "worst"
    rep = verify_bounds(encode(A, 2, "naive"), model, ["spectral_upper"])
    assert rep.ok and rep.check("spectral_upper").bound_values.min() >= 12.0  # (m - 1) N + ...
    rep = verify_bounds(encode(A, 2, "rd", seed=4), model, ["spectral_rd_upper", "spectral_decoder_upper"], draws=16)
    assert rep.ok, rep.summary()


def test_verify_bounds_flags_a_wrong_worst_case_bound():
    A, _ = nx_assignment(10, 3, 0)
    wrong = Bound("too_high", "lower", "worst", lambda sch, masks: np.full(masks.shape[0], 5.0))
    rep = verify_bounds(encode(A, 1, "expander"), straggler_model("all", 10, s=2), [wrong])
    assert not rep.ok and rep.violations[0].stragglers is not None


def test_spectral_bounds_say_why_they_do_not_apply():
    mgg = encode(margulis_gabber_galil(4), 1, "expander")
    model = straggler_model("all", 16, s=2)
    with pytest.raises(InvalidArgumentError, match="same number of workers"):
        verify_bounds(mgg, model, ["spectral_upper"])
    with pytest.raises(InvalidArgumentError, match="RD encoders"):
        verify_bounds(mgg, model, ["spectral_rd_upper"])
    A, _ = nx_assignment(12, 4, 1)
    with pytest.raises(InvalidArgumentError, match="blocks"):
        verify_bounds(encode(A, 2, "rd"), straggler_model("all", 12, s=1), ["spectral_upper"])
    with pytest.raises(InvalidArgumentError, match="'all' or 'worst'"):
        verify_bounds(encode(A, 1, "expander"), straggler_model("fixed", 12, s=2), ["uncovering_lower"], samples=20)
    with pytest.raises(InvalidArgumentError, match="regular loads"):
        spectral_upper_bound(np.array([[1, 1, 0], [1, 0, 1]]), 1, rescale="optimal")


@pytest.mark.parametrize(
    "call,argument",
    [
        (lambda A: spectral_upper_bound(A, 13), "s"),
        (lambda A: spectral_upper_bound(A, 1, rescale="best"), "rescale"),
        (lambda A: spectral_upper_bound(A[:, :5], 1), "assignment"),  # irregular replication
        (lambda A: spectral_rd_upper_bound(A, 0, 1), "m"),
        (lambda A: arrival_decoder_mean_error(A, 12), "s"),
        (lambda A: uncovering_lower_bound(A, 1, -1), "s"),
        (lambda A: spectral_decoder_upper_bound(A.astype(float), 1), "decoder"),
    ],
)
def test_bad_inputs_name_the_argument(call, argument):
    A, _ = nx_assignment(12, 4, 1)
    with pytest.raises(InvalidArgumentError) as info:
        call(A)
    assert info.value.argument == argument


def test_spectral_decoder_bound_refuses_an_oversize_stack_up_front(monkeypatch):
    import gcsim.limits

    A, _ = nx_assignment(12, 4, 1)
    sch = encode(A, 2, "rd", seed=0)  # the stacked blocks are (m * m N) x n = 48 x 12
    monkeypatch.setattr(gcsim.limits, "MAX_DENSE_ENTRIES", 48 * 12 - 1)
    with pytest.raises(gcsim.SizeLimitError) as info:
        spectral_decoder_upper_bound(sch, 1)
    assert info.value.argument == "scheme_or_B"
