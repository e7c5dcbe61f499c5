"""Computational claims of the theory chapters (docs/theory/05_model.md, 20_srg.md, 30_coset.md) no other test checks.

Each test recomputes a statement the text marks as *computational*, from first principles.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import FANO
from gcsim.coding.evaluate import optimal_error_all
from gcsim.coding.schemes import encode
from gcsim.combinatorics.baselines import margulis_gabber_galil


def _abelian_group(moduli):
    """Elements of Z_m1 x ... x Z_mr (element 0 first), addition and negation tables."""
    elems = np.array(list(itertools.product(*[range(m) for m in moduli])))
    index = {tuple(e): i for i, e in enumerate(elems)}
    mod = np.array(moduli)
    add = np.array([[index[tuple((a + b) % mod)] for b in elems] for a in elems])
    neg = np.array([index[tuple((-a) % mod)] for a in elems])
    return len(elems), add, neg


def _symmetric_menon_sets(moduli):
    """(number of symmetric 14-subsets S of G minus 0, number with S u {0} a (36, 15, 6) difference set)."""
    v, add, neg = _abelian_group(moduli)
    involutions = [x for x in range(1, v) if neg[x] == x]
    pairs = np.array(sorted({tuple(sorted((x, neg[x]))) for x in range(1, v) if neg[x] != x}))
    total = found = 0
    for b in range(len(involutions) + 1):
        if (14 - b) % 2:
            continue
        for chosen in itertools.combinations(involutions, b):
            combos = np.array(list(itertools.combinations(range(len(pairs)), (14 - b) // 2)))
            X = np.zeros((len(combos), v), dtype=np.int16)
            X[:, 0] = 1
            X[:, list(chosen)] = 1
            rows = np.arange(len(combos))[:, None]
            X[rows, pairs[combos][:, :, 0]] = 1
            X[rows, pairs[combos][:, :, 1]] = 1
            ok = np.ones(len(combos), dtype=bool)
            for g in range(1, v):  # #{(x, y) in D^2 : y - x = g} must be 6 for every g != 0
                ok &= (X * X[:, add[g]]).sum(axis=1) == 6
            total += len(combos)
            found += int(ok.sum())
    return total, found


@pytest.mark.parametrize(
    "moduli,candidates,has",
    [
        ((6, 6), 35464, True),
        ((36,), 19448, False),
        ((2, 18), 35464, False),
        ((3, 12), 19448, False),
    ],
)
def test_symmetric_menon_difference_sets_of_order_36(moduli, candidates, has):
    """Ch. 20 §20.7: about 3.5e4 symmetric 14-subsets of Z_6^2 minus 0; among the abelian groups of order
    36 only Z_6^2 has a (36, 15, 6) difference set D with 0 in D = -D."""
    total, found = _symmetric_menon_sets(moduli)
    assert total == candidates
    assert (found > 0) == has


@pytest.mark.parametrize("m,lo,hi", [(2, 3, 3), (5, 5, 9), (8, 5, 9), (20, 5, 9)])
def test_margulis_gabber_galil_loads(m, lo, hi):
    """Ch. 30 Appendix B: loads of min(1, Adj + I) are 5..9 for m = 5, 8, 20 and 3 for m = 2."""
    A = margulis_gabber_galil(m).assignment
    x, y = np.divmod(np.arange(m * m), m)
    images = [((x + 2 * y) % m, y), ((x + 2 * y + 1) % m, y), (x, (y + 2 * x) % m), (x, (y + 2 * x + 1) % m)]
    expected = np.eye(m * m, dtype=int)
    for a, b in images:  # join each vertex to its images (and so to its preimages)
        expected[np.arange(m * m), a * m + b] = 1
        expected[a * m + b, np.arange(m * m)] = 1
    assert np.array_equal(A, expected)
    loads = A.sum(axis=0)
    assert loads.min() == lo and loads.max() == hi


@pytest.mark.parametrize("m", [2, 3])
def test_naive_stacking_error_floor(m):
    """docs/theory.md §5.4, Proposition 5.5: err(1_m ⊗ A, F) = (m-1)N + err(A, F) >= (m-1)N,
    with equality iff 1_N ∈ col(A_F)."""
    rng = np.random.default_rng(5)
    fano = FANO
    irregular = (rng.random((6, 9)) < 0.4).astype(np.int64)
    irregular[np.arange(6), np.arange(6)] = 1  # every part held by someone
    for A in (fano, irregular):
        N, n = A.shape
        stacked, single = encode(A, m, "naive"), encode(A, 1, "naive")
        for s in range(n + 1):
            errs = optimal_error_all(stacked, s, progress=False)
            base = optimal_error_all(single, s, progress=False)
            np.testing.assert_allclose(errs, (m - 1) * N + base, rtol=0, atol=1e-9)
            for S, err in zip(itertools.combinations(range(n), s), errs, strict=True):
                F = np.setdiff1d(np.arange(n), S)
                AF = A[:, F].astype(float)
                ones_in_span = F.size > 0 and np.allclose(AF @ np.linalg.lstsq(AF, np.ones(N), rcond=None)[0], 1.0)
                assert (abs(err - (m - 1) * N) <= 1e-9) == ones_in_span
    # constant replication: the whole assignment attains the floor
    assert optimal_error_all(encode(fano, m, "naive"), 0, progress=False)[0] == pytest.approx((m - 1) * 7, abs=1e-9)
