"""The fixed-decoder worst case by MILP (theory §43.4-43.5) and the authors' bad straggler set (§43.6).

Brute force here is every straggler set of the given size with the error written out from its
definition ``‖B diag(1_F) c X - T‖_F²``: independent of the program, of its linearization and of
``fixed_decoder_error``.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from gcsim import limits
from gcsim.coding import encode
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.milp import (
    bad_straggler_set,
    fixed_decoder_quadratic,
    fixed_decoder_worst_case,
)
from gcsim.errors import InvalidArgumentError, SizeLimitError
from tolerances import dot_tol


def _petersen_plus_i() -> np.ndarray:
    return nx.to_numpy_array(nx.petersen_graph(), dtype=np.int64) + np.eye(10, dtype=np.int64)


def _paley13_plus_i() -> np.ndarray:
    squares = {(x * x) % 13 for x in range(1, 13)}
    A = np.array([[1 if (i - j) % 13 in squares else 0 for j in range(13)] for i in range(13)])
    return A + np.eye(13, dtype=np.int64)


def _random_regular(n: int, d: int, seed: int) -> np.ndarray:
    return nx.to_numpy_array(nx.random_regular_graph(d, n, seed=seed), dtype=np.int64)


def _schemes():
    """(label, scheme) with n <= 16: graphs, a design-like cyclic code, the optimized encoders, RD m = 2."""
    yield "petersen+I expander", encode(_petersen_plus_i(), 1, "expander")
    yield "paley13+I expander", encode(_paley13_plus_i(), 1, "expander")
    yield "cyclic(12,2) expander", encode(cyclic_repetition_assignment(12, 2), 1, "expander")
    yield "random 3-regular(14) weighted", encode(_random_regular(14, 3, 42), 1, "weighted")
    yield "cyclic(16,3) slem-circulant", encode(cyclic_repetition_assignment(16, 3), 1, "slem-circulant")
    A = _random_regular(12, 4, 7) + np.eye(12, dtype=np.int64)
    yield "random 4-regular(12)+I fastest-mixing", encode(A, 1, "fastest-mixing")
    yield "cyclic(10,2) rd m=2", encode(cyclic_repetition_assignment(10, 2), 2, "rd", seed=3)


def _brute(scheme, s: int, c: float, X: np.ndarray) -> tuple[float, list[tuple[int, ...]]]:
    n, m = scheme.n, scheme.m
    N = scheme.B.shape[0] // m
    T = np.kron(np.eye(m), np.ones((N, 1)))
    best, where = -1.0, []
    for S in itertools.combinations(range(n), s):
        keep = np.ones(n)
        keep[list(S)] = 0.0
        E = scheme.B @ (c * keep[:, None] * X) - T
        v = float(np.sum(E * E))
        if v > best:
            best, where = v, [S]
        elif v == best:
            where.append(S)
    return best, where


def _tol(scheme, c: float, X: np.ndarray, value: float) -> float:
    # two evaluations of a sum of mN squares of length-n dot products: γ bounds on each
    n, mN = scheme.n, scheme.B.shape[0]
    scale = (np.abs(scheme.B) @ (abs(c) * np.abs(X))).sum() + mN
    return dot_tol(n * mN, (value + scale * scale) * 4)


@pytest.mark.parametrize("label, scheme", list(_schemes()), ids=lambda v: v if isinstance(v, str) else "")
def test_milp_worst_case_equals_brute_force(label, scheme):
    n = scheme.n
    X = np.asarray(scheme.decoder)
    for s in sorted({1, 2, 3, n // 4, n // 3}):
        res = fixed_decoder_worst_case(scheme, s)
        brute, where = _brute(scheme, s, n / (n - s), X)
        tol = _tol(scheme, n / (n - s), X, brute)
        assert res.optimal, (label, s, res.status)
        assert abs(res.value - brute) <= tol, (label, s, res.value, brute)
        assert res.bound >= brute - 1e-6 * max(1.0, brute), (label, s)  # HiGHS's dual bound, its tolerance
        assert res.stragglers.size == s and not res.mask[res.stragglers].any()
        # the optimal error at the set found is at most the fixed error there (Corollary 1 of §40.1)
        assert res.optimal_error <= res.value + tol


@pytest.mark.parametrize("rescale", [None, 0.7])
def test_milp_with_a_constant_scale_equals_brute_force(rescale):
    scheme = encode(_petersen_plus_i(), 1, "expander")
    X = np.asarray(scheme.decoder)
    c = 1.0 if rescale is None else rescale
    for s in (2, 4):
        res = fixed_decoder_worst_case(scheme, s, rescale=rescale)
        brute, _ = _brute(scheme, s, c, X)
        assert res.optimal and abs(res.value - brute) <= _tol(scheme, c, X, brute)


def test_milp_with_a_given_decoder_equals_brute_force():
    scheme = encode(cyclic_repetition_assignment(9, 2), 1, "naive")
    X = np.random.default_rng(5).uniform(0.1, 1.0, size=(9, 1))
    for s in (1, 3):
        res = fixed_decoder_worst_case(scheme, s, decoder=X)
        brute, _ = _brute(scheme, s, 9 / (9 - s), X)
        assert res.optimal and abs(res.value - brute) <= _tol(scheme, 9 / (9 - s), X, brute)


def test_quadratic_form_is_the_fixed_error():
    scheme = encode(cyclic_repetition_assignment(8, 2), 2, "rd", seed=1)
    G, g, total = fixed_decoder_quadratic(scheme)
    X = np.asarray(scheme.decoder)
    T = np.kron(np.eye(2), np.ones((8, 1)))
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = (rng.random(8) < 0.6).astype(float)
        c = float(rng.uniform(0.5, 2.0))
        direct = float(np.sum((scheme.B @ (c * x[:, None] * X) - T) ** 2))
        quad = c * c * x @ G @ x - 2 * c * g @ x + total
        assert abs(quad - direct) <= _tol(scheme, c, X, direct)


def test_edge_cases_need_no_program():
    scheme = encode(_petersen_plus_i(), 1, "expander")
    none = fixed_decoder_worst_case(scheme, 0)
    assert none.optimal and none.stragglers.size == 0
    assert abs(none.value - np.sum((scheme.B @ scheme.decoder - 1) ** 2)) < 1e-12
    everyone = fixed_decoder_worst_case(scheme, 10, normalized=True)
    assert everyone.value == 1.0 and everyone.stragglers.size == 10


def test_bad_inputs_are_refused():
    scheme = encode(_petersen_plus_i(), 1, "expander")
    with pytest.raises(InvalidArgumentError, match="rescale"):
        fixed_decoder_worst_case(scheme, 2, rescale="optimal")
    with pytest.raises(InvalidArgumentError, match="s"):
        fixed_decoder_worst_case(scheme, 11)
    with pytest.raises(InvalidArgumentError, match="time_limit"):
        fixed_decoder_worst_case(scheme, 2, time_limit=0)
    with pytest.raises(InvalidArgumentError, match="decoder"):
        fixed_decoder_worst_case(scheme, 2, decoder=np.ones((3, 1)))
    n = limits.MAX_MILP_WORKERS + 1
    big = encode(cyclic_repetition_assignment(n, 1), 1, "expander")
    with pytest.raises(SizeLimitError):
        fixed_decoder_worst_case(big, 3)
    with pytest.raises(InvalidArgumentError, match="start"):
        bad_straggler_set(_petersen_plus_i(), 3, start=10)


def _authors_heuristic(B: np.ndarray, s: int) -> np.ndarray:
    """CVX_AGC OptvsFixed.py's loop, transcribed (np.intersect1d / np.union1d as they use them)."""
    n = B.shape[0]
    x = np.nonzero(B[0, :])[0]
    parts = [0]
    remaining = [i for i in range(n) if i not in parts]
    while len(x) < s:
        tmp, f = 0, None
        for i in remaining:
            c = np.intersect1d(np.nonzero(B[i, :]), x).size
            if c > tmp:
                f, tmp = i, c
        if tmp == 0:
            f = remaining[0]
        prev = x
        x = np.union1d(x, np.nonzero(B[f, :])[0])
        parts.append(f)
        remaining = [i for i in range(n) if i not in parts]
        if len(x) > s:
            diff = np.setdiff1d(np.nonzero(B[f, :])[0], prev)
            x = np.union1d(prev, diff[0 : s - len(prev)])
    return np.sort(x)


def test_bad_straggler_set_is_the_authors_and_below_the_milp_worst_case():
    cases = [
        ("random 3-regular(14)", encode(_random_regular(14, 3, 42), 1, "weighted")),
        ("random 4-regular(16)", encode(_random_regular(16, 4, 42), 1, "weighted")),
        ("petersen+I", encode(_petersen_plus_i(), 1, "expander")),
    ]
    for label, scheme in cases:
        A = np.asarray(scheme.assignment)
        d = int(A.sum(axis=1).max())
        for s in (d, 2 * d, 3 * d):  # the authors' s = d, 2d, ... (their loop needs s >= d)
            if s >= scheme.n:
                continue
            S = bad_straggler_set(scheme, s)
            assert S.tolist() == _authors_heuristic(scheme.B, s).tolist(), (label, s)
            mask = np.ones(scheme.n, dtype=bool)
            mask[S] = False
            c = scheme.n / (scheme.n - s)
            T = np.ones((scheme.n, 1))
            greedy = float(np.sum((scheme.B @ (c * mask[:, None] * scheme.decoder) - T) ** 2))
            brute, _ = _brute(scheme, s, c, np.asarray(scheme.decoder))
            milp = fixed_decoder_worst_case(scheme, s)
            tol = _tol(scheme, c, np.asarray(scheme.decoder), brute)
            assert abs(milp.value - brute) <= tol
            assert greedy <= milp.value + tol, (label, s)
            # its first part's holders all straggle: that part is lost (error >= 1 at optimal decoding)
            assert not mask[np.flatnonzero(A[0])].any()


def test_bad_straggler_set_small_s_and_exhaustion():
    A = cyclic_repetition_assignment(6, 2)  # part 0 on workers 0, 4, 5 (worker j holds j..j+2)
    assert bad_straggler_set(A, 2).tolist() == np.flatnonzero(A[0])[:2].tolist()
    assert bad_straggler_set(A, 6).tolist() == list(range(6))
    assert bad_straggler_set(A, 0).tolist() == []


def test_not_a_scheme_is_refused():
    with pytest.raises(InvalidArgumentError, match="scheme"):
        fixed_decoder_worst_case(np.eye(3), 1)
    with pytest.raises(InvalidArgumentError, match="scheme"):
        fixed_decoder_quadratic("B")
