"""Partial gradient coding (docs/theory.md §48.3): the error formula against brute force over every pattern.

The independent computation is the master's best linear estimate from *everything* that arrived:
the coded columns ``B_F`` and, for every part received uncoded, the ``m`` unit columns ``e_{kN+i}``
(its blocks), solved by ``numpy.linalg.lstsq`` (exact rationals where it is rank-deficient,
tests/exact_lstsq.py) -- not the row-deletion formula the code uses.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from exact_lstsq import checked_lstsq
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.partial import (
    PartialScheme,
    partial_decoder,
    partial_error,
    partial_error_all,
    partial_scheme,
)
from gcsim.coding.schemes import Scheme, encode, target_matrix
from gcsim.combinatorics.baselines import cyclic_repetition, random_regular_assignment
from gcsim.errors import CatalogueError, InvalidArgumentError, SizeLimitError
from tolerances import cond, lstsq_tol


def _all_masks(n):
    return np.array(list(itertools.product([False, True], repeat=n)), dtype=bool)


def _brute_force(ps: PartialScheme, mask: np.ndarray) -> tuple[float, float]:
    """(min_Y ‖O_F Y - T‖², κ(O_F)) with O_F = [B_F | e_{kN+i} for received i, k], by least squares."""
    N, m = ps.num_parts, ps.m
    B = ps.full_encoder()[:, mask]
    received = [i for i in range(N) if ps.owner[i] >= 0 and mask[ps.owner[i]]]
    units = [np.eye(m * N)[:, k * N + i] for i in received for k in range(m)]
    O = np.column_stack([B, *units]) if units else B
    T = target_matrix(m, N)
    # O_F is rank-deficient whenever a received part's units overlap B_F's span: lstsq only at full
    # column rank, exact rationals or a pivoted QR otherwise (tests/exact_lstsq.py)
    return checked_lstsq(O, T)


def _split_assignment(n: int, ell: int) -> np.ndarray:
    """``n`` parts held by one worker each (uncoded share) above a cyclic replicated share."""
    return np.vstack([np.eye(n, dtype=np.int64), cyclic_repetition(n, ell).assignment])


CASES = {
    "cyclic own rd m=2": lambda: partial_scheme(cyclic_repetition(6, 3), 2, "rd", seed=1),
    "adj+I own ns m=2": lambda: partial_scheme(random_regular_assignment(8, 3, seed=2), 2, "ns", eps=0.2, seed=3),
    "adj+I own weighted m=1": lambda: partial_scheme(random_regular_assignment(8, 3, seed=2), 1, "weighted"),
    "split alone exact s=1": lambda: partial_scheme(_split_assignment(6, 3), 2, "exact-gaussian", owners="alone", s=1),
    "owners array naive": lambda: partial_scheme(
        cyclic_repetition(6, 2), 1, "naive", owners=np.array([0, -1, 2, -1, 4, -1])
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_formula_matches_brute_force_on_every_pattern(name):
    ps = CASES[name]()
    masks = _all_masks(ps.n)
    got = partial_error(ps, masks)
    scale = ps.m * ps.num_parts
    for mk, value in zip(masks, got, strict=True):
        expected, kappa = _brute_force(ps, mk)
        rows = ps.m * ps.num_parts
        assert abs(value - expected) <= lstsq_tol(kappa, rows, rows, scale) + lstsq_tol(
            cond(ps.full_encoder(), nonzero=True), rows, ps.n, scale
        ), (mk, value, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_received_uncoded_parts_never_hurt(name):
    # Proposition 48.5 (a): err_partial(F) <= err(B, F), the coded encoder alone
    ps = CASES[name]()
    masks = _all_masks(ps.n)
    B = ps.full_encoder()
    plain = optimal_error(Scheme.from_matrix(B, ps.assignment, ps.m), masks, progress=False)
    rows = ps.m * ps.num_parts
    tol = lstsq_tol(cond(B, nonzero=True), rows, ps.n, rows)
    assert np.all(partial_error(ps, masks) <= plain + tol)


def test_exact_coded_share_loses_only_the_uncoded_parts_of_the_stragglers():
    # Proposition 48.5: coded share exact for s stragglers => err = m · #(uncoded-only parts lost) = m |S|
    ps = CASES["split alone exact s=1"]()
    for s in (0, 1):
        errs = partial_error_all(ps, s)
        assert errs.shape == (math.comb(6, s),)
        rows = ps.m * ps.num_parts
        assert np.allclose(errs, ps.m * s, rtol=0, atol=lstsq_tol(cond(ps.full_encoder(), nonzero=True), rows, 6, rows))


def test_no_owner_is_plain_gradient_coding():
    A = cyclic_repetition(6, 3)
    ps = partial_scheme(A, 2, "rd", owners=np.full(6, -1), seed=4)
    plain = encode(A, 2, "rd", seed=4)
    masks = _all_masks(6)
    assert np.array_equal(ps.coded.B, plain.B)
    # the same routine on the same matrix: only the subtraction of m |U_F| = 0 could differ
    assert np.array_equal(partial_error(ps, masks), optimal_error(plain, masks, progress=False))


def test_communication_counts_the_messages_sent():
    # count the scalars of a simulated round: uncoded gradients of d scalars, one coded vector of ⌈d/m⌉
    ps = CASES["split alone exact s=1"]()
    d = 7
    rng = np.random.default_rng(0)
    grads = rng.standard_normal((ps.num_parts, d))
    sent = np.zeros(ps.n, dtype=int)
    for i, j in enumerate(ps.owner):
        if j >= 0:
            sent[j] += grads[i].size
    w = -(-d // ps.m)
    padded = np.zeros((ps.num_parts, ps.m * w))
    padded[:, :d] = grads
    blocks = padded.reshape(ps.num_parts, ps.m, w).transpose(1, 0, 2)
    coded = np.einsum("kij,kiw->jw", ps.full_encoder().reshape(ps.m, ps.num_parts, ps.n), blocks)
    codes = np.abs(ps.full_encoder()).sum(axis=0) > 0
    sent += np.where(codes, coded.shape[1], 0)
    assert np.array_equal(ps.communication(d=d), sent)
    owned = np.bincount(ps.owner[ps.owner >= 0], minlength=ps.n)
    assert np.array_equal(ps.communication(), owned + codes / ps.m)


def test_master_estimate_from_simulated_messages():
    # one round end to end: the estimate Σ_received g_i + Σ_j X_jl g̃_j is exact when the error is 0,
    # and otherwise its distance obeys Lemma 5.1: ‖Ĝ - G*‖_F² <= ‖𝒢‖₂² err
    ps = CASES["cyclic own rd m=2"]()
    N, m, n = ps.num_parts, ps.m, ps.n
    w = 3
    rng = np.random.default_rng(5)
    G = rng.standard_normal((w, m * N))  # column kN+i = block k of part i
    truth = G @ target_matrix(m, N)
    B = ps.full_encoder()
    msgs = G @ B  # (w, n): g̃_j
    for mk in _all_masks(n)[1:]:
        got, X = partial_decoder(ps, mk)
        rows = [k * N + i for i in np.flatnonzero(got) for k in range(m)]
        known = G[:, rows] @ B[rows]  # the received parts' share of every coded message
        est = (msgs - known) @ X
        for i in np.flatnonzero(got):
            est += G[:, [k * N + i for k in range(m)]]
        err = partial_error(ps, mk)
        gap = float(np.sum((est - truth) ** 2))
        tol = lstsq_tol(cond(ps.full_encoder(), nonzero=True), m * N, n, m * N) * np.linalg.norm(G, 2) ** 2
        assert gap <= np.linalg.norm(G, 2) ** 2 * err + tol
        if err <= tol:
            assert gap <= tol


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidArgumentError, match="^owners:"):
        partial_scheme(np.ones((3, 2), dtype=int), 1, "naive")  # 'own' needs a square assignment
    with pytest.raises(InvalidArgumentError, match="does not hold"):
        partial_scheme(cyclic_repetition(4, 2), 1, "naive", owners=np.array([2, -1, -1, -1]))
    with pytest.raises(InvalidArgumentError, match="^owners:"):
        partial_scheme(cyclic_repetition(4, 2), 1, "naive", owners="everyone")
    with pytest.raises(InvalidArgumentError, match="^m:"):
        partial_scheme(np.eye(3, dtype=int), 2, "naive")  # all uncoded: no coded message to split
    with pytest.raises(InvalidArgumentError, match="^ps:"):
        partial_error(encode(np.eye(2, dtype=int), 1, "naive"), [True, True])
    with pytest.raises(SizeLimitError, match="^s:"):
        partial_error_all(partial_scheme(cyclic_repetition(40, 2), 1, "naive"), 20)


def test_round_trip_refuses_tampering():
    ps = CASES["cyclic own rd m=2"]()
    arrays, meta = ps.to_arrays(), ps.bundle_metadata()
    owner = np.array(arrays["owner"])
    owner[0] = 3  # worker 3 does not hold part 0
    with pytest.raises(CatalogueError):
        PartialScheme.from_arrays({**arrays, "owner": owner}, meta)
    back = PartialScheme.from_arrays(arrays, meta)
    assert np.array_equal(back.full_encoder(), ps.full_encoder())
    assert "PartialScheme" in ps._repr_html_()
