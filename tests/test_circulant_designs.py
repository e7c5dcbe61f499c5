"""Singer difference sets beyond the field tables and circulant incidences (theory §10.8, Lemma 9a).

References are independent of the code under test: the powers of ``x`` modulo ``f`` walked one
multiplication at a time (primitivity), difference counts by a Python ``Counter``, and ``AᵀA`` as a
dense integer product (Lemma 9a's claim, checked on small cases).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from gcsim import limits
from gcsim.combinatorics.difference_sets import (
    _singer_prime,
    circulant_incidence,
    circulant_pair_gram,
    difference_set_lambda,
    paley_difference_set,
    primitive_polynomial,
    singer_difference_set,
)
from gcsim.errors import InvalidArgumentError, SizeLimitError, VerificationError


def _naive_order_of_x(f: list[int], p: int) -> int:
    """Multiplicative order of ``x`` modulo ``f`` over GF(p), one multiplication by ``x`` at a time."""
    d = len(f) - 1
    one = [1] + [0] * (d - 1)
    w = list(one)
    for i in range(1, p**d):
        top = w[-1]
        w = [0] + w[:-1]
        w = [(w[j] - top * f[j]) % p for j in range(d)]
        if w == one:
            return i
    return -1


@pytest.mark.parametrize("p,d", [(2, 2), (2, 3), (2, 5), (3, 2), (3, 3), (5, 2), (5, 3), (7, 2), (11, 3)])
def test_primitive_polynomial_has_x_of_full_order(p, d):
    f = primitive_polynomial(p, d)
    assert len(f) == d + 1 and f[-1] == 1 and f[0] != 0
    assert _naive_order_of_x(f, p) == p**d - 1


def test_primitive_polynomial_refuses_non_primes():
    for bad in (4, 12, 1):
        with pytest.raises(InvalidArgumentError):
            primitive_polynomial(bad, 2)


def _counts(v: int, D: list[int]) -> Counter:
    return Counter((x - y) % v for x in D for y in D if x != y)


@pytest.mark.parametrize("n,q", [(2, 11), (2, 13), (2, 17), (2, 31), (2, 37), (3, 11), (4, 5), (2, 101)])
def test_singer_beyond_the_tables(n, q):
    v = (q ** (n + 1) - 1) // (q - 1)
    D = singer_difference_set(n, q)
    lam = (q ** (n - 1) - 1) // (q - 1)
    assert len(D) == (q**n - 1) // (q - 1)
    c = _counts(v, D)
    assert set(c) == set(range(1, v)) and set(c.values()) == {lam}
    assert difference_set_lambda(v, D) == lam


@pytest.mark.parametrize("n,q", [(2, 2), (2, 3), (2, 5), (2, 7), (3, 3)])
def test_polynomial_route_agrees_where_the_tables_reach(n, q):
    # the tables route (trace kernel) and the polynomial route may pick different hyperplanes; both are difference sets
    v = (q ** (n + 1) - 1) // (q - 1)
    lam = (q ** (n - 1) - 1) // (q - 1)
    for D in (singer_difference_set(n, q), _singer_prime(n, q)):
        assert set(_counts(v, D).values()) == {lam}


def test_singer_refuses_prime_powers_beyond_the_tables_and_huge_planes(monkeypatch):
    with pytest.raises(InvalidArgumentError, match="not a prime"):
        singer_difference_set(2, 16)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1000)
    with pytest.raises(InvalidArgumentError, match="MAX_DENSE_ENTRIES"):
        singer_difference_set(2, 37)  # 1,407 points


def test_difference_set_lambda_rejects_and_detects():
    assert difference_set_lambda(11, paley_difference_set(11)) == 2
    assert difference_set_lambda(7, [0, 1, 2]) is None
    assert difference_set_lambda(1, [0]) == 0
    for bad in ([0, 0, 1], [7], [], [-1, 2]):
        with pytest.raises(InvalidArgumentError):
            difference_set_lambda(7, bad)


def _dense_development(v: int, D: list[int]) -> np.ndarray:
    A = np.zeros((v, v), dtype=np.int64)
    for j in range(v):
        for a in D:
            A[(a + j) % v, j] = 1
    return A


@pytest.mark.parametrize(
    "v,D",
    [
        (7, [1, 2, 4]),
        (13, singer_difference_set(2, 3)),
        (11, paley_difference_set(11)),
        (133, singer_difference_set(2, 11)),
        (40, singer_difference_set(3, 3)),
    ],
)
def test_circulant_pair_gram_matches_the_dense_gram(v, D):
    S = circulant_incidence(v, D)
    A = _dense_development(v, D)
    assert np.array_equal(S.toarray(), A)
    k, lam = circulant_pair_gram(S)
    G = A.T @ A
    assert np.array_equal(G, (k - lam) * np.eye(v, dtype=np.int64) + lam * np.ones((v, v), dtype=np.int64))


def test_circulant_but_not_a_difference_set_names_two_columns():
    S = circulant_incidence(7, [0, 1, 2])
    G = _dense_development(7, [0, 1, 2]).T @ _dense_development(7, [0, 1, 2])
    with pytest.raises(VerificationError, match="columns 0 and") as exc:
        circulant_pair_gram(S)
    j = int(str(exc.value).split("columns 0 and ")[1].split(" ")[0])
    assert G[0, j] != G[0, 1]  # the named pair really meets in another number of parts


def test_not_circulant_returns_none():
    D = singer_difference_set(2, 3)
    A = _dense_development(13, D)
    perm = np.r_[1, 0, 2:13]  # two workers swapped: the same design, no longer circulant in this order
    assert circulant_pair_gram(sp.csc_matrix(A[:, perm])) is None
    assert circulant_pair_gram(sp.csc_matrix(np.ones((3, 4), dtype=np.int64))) is None  # not square
    with pytest.raises(VerificationError, match="0/1"):
        circulant_pair_gram(sp.csc_matrix(2 * A))


def test_circulant_incidence_refuses_beyond_the_sparse_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_SPARSE_ENTRIES", 100)
    assert circulant_incidence(13, singer_difference_set(2, 3)).nnz == 52  # within the limit
    with pytest.raises(SizeLimitError, match="MAX_SPARSE_ENTRIES"):
        circulant_incidence(133, singer_difference_set(2, 11))  # 133 x 12 stored entries


def test_structured_route_on_a_circulant_singer_plane_equals_the_dense_route():
    # PG(2, 11) as a developed Singer set: check_pair_gram takes the circulant path (Lemma 9a), and the
    # structured errors equal the dense SVD route on the same B (the same diagonals from the same options)
    from gcsim.coding.evaluate import optimal_error
    from gcsim.coding.schemes import encode
    from gcsim.coding.structured import check_pair_gram, encode_structured

    S = circulant_incidence(133, singer_difference_set(2, 11))
    assert check_pair_gram(S) == (12, 1)
    enc = encode_structured(S, 2, seed=5)
    dense = encode(S.toarray(), 2, "rd", seed=5)
    assert np.array_equal(np.asarray(enc.B), np.asarray(dense.B))
    masks = np.random.default_rng(0).random((6, 133)) > 0.2
    got = optimal_error(enc, masks, progress=False)
    ref = optimal_error(dense, masks, method="svd", progress=False)
    assert np.allclose(got, ref, rtol=1e-9, atol=0)


def test_check_pair_gram_names_the_circulant_failure():
    from gcsim.coding.structured import check_pair_gram

    with pytest.raises(VerificationError, match=r"^A: circulant incidence: columns 0 and"):
        check_pair_gram(circulant_incidence(7, [0, 1, 3, 4]))  # k = 4 > λ(0,1) = 2, not a difference set
