"""Finite fields: prime powers, primitive elements, squares, cosets — checked by brute force."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.combinatorics import fields as F
from gcsim.errors import InvalidArgumentError

PRIME_POWERS = [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 25, 27, 49]


def _is_prime(p):
    return p >= 2 and all(p % d for d in range(2, int(p**0.5) + 1))


@given(st.integers(min_value=-5, max_value=2000))
@settings(max_examples=200, deadline=None)
def test_prime_power_decomposition_matches_brute_force(q):
    expected = None
    for p in range(2, max(q, 2) + 1):
        if _is_prime(p):
            a, x = 0, q
            while x > 1 and x % p == 0:
                x //= p
                a += 1
            if x == 1 and a >= 1:
                expected = (p, a)
                break
    assert F.prime_power_decomposition(q) == expected
    assert F.is_prime_power(q) == (expected is not None)


@pytest.mark.parametrize("q", [1, 6, 10, 12, 15, 100])
def test_non_prime_power_field_is_refused(q):
    with pytest.raises(InvalidArgumentError, match="q"):
        F.finite_field(q)


def test_field_is_cached():
    assert F.finite_field(9) is F.finite_field(9)


@pytest.mark.parametrize("q", PRIME_POWERS)
def test_primitive_element_generates_multiplicative_group(q):
    GF = F.finite_field(q)
    g = GF(F.primitive_element(q))
    powers = {int(g**e) for e in range(q - 1)}
    assert powers == set(range(1, q))


@pytest.mark.parametrize("q", PRIME_POWERS)
def test_nonzero_squares_by_brute_force(q):
    GF = F.finite_field(q)
    x = GF(np.arange(1, q))
    expected = sorted({int(v) for v in x * x})
    assert F.nonzero_squares(q).tolist() == expected
    assert len(expected) == ((q - 1) // 2 if q % 2 else q - 1)


@pytest.mark.parametrize("q,index", [(7, 2), (13, 3), (16, 5), (25, 4), (9, 8)])
def test_multiplicative_cosets_partition_the_group(q, index):
    cosets = F.multiplicative_cosets(q, index)
    assert len(cosets) == index
    union = np.concatenate(cosets)
    assert sorted(union.tolist()) == list(range(1, q))
    GF = F.finite_field(q)
    sub = GF(cosets[0])
    # the first coset is a subgroup: closed under multiplication
    prods = {int(a * b) for a in sub for b in sub}
    assert prods == set(cosets[0].tolist())


def test_multiplicative_cosets_bad_index():
    with pytest.raises(InvalidArgumentError, match="index"):
        F.multiplicative_cosets(7, 4)


def test_additive_cosets_of_subfield():
    # GF(3) inside GF(9) is {0,1,2}; its additive cosets partition GF(9)
    cosets = F.additive_cosets(9, [0, 1, 2])
    assert len(cosets) == 3
    assert sorted(np.concatenate(cosets).tolist()) == list(range(9))
    with pytest.raises(InvalidArgumentError, match="subgroup"):
        F.additive_cosets(9, [0, 1])


def test_conway_table_is_galois_database():
    """The written-out table is what galois' Conway database says, entry by entry."""
    import galois

    for q, coeffs in F.CONWAY_POLYNOMIALS.items():
        p, a = F.prime_power(q)
        assert coeffs == tuple(int(c) for c in galois.conway_poly(p, a).coeffs), q


def _irreducible_by_brute_force(coeffs: tuple[int, ...], p: int) -> bool:
    """No monic factor of degree 1..a/2 over Z_p (polynomial division mod p, independent of galois)."""
    f = list(coeffs)
    a = len(f) - 1
    for d in range(1, a // 2 + 1):
        for code in range(p**d):
            g = [1] + [(code // p**j) % p for j in range(d)]
            r = list(f)
            for i in range(len(r) - d):
                lead = r[i] % p
                if lead:
                    for j, c in enumerate(g):
                        r[i + j] = (r[i + j] - lead * c) % p
            if not any(x % p for x in r[-d:]):
                return False
    return True


@pytest.mark.parametrize("p, a", [(2, 3), (3, 3), (5, 2), (2, 5), (3, 4)])
def test_fallback_polynomial_is_the_lexicographically_first_irreducible(p, a):
    """Where galois has no Conway polynomial, gcsim takes galois' "min": check it is the first by brute force."""
    import galois

    first = tuple(int(c) for c in galois.irreducible_poly(p, a, method="min").coeffs)
    assert _irreducible_by_brute_force(first, p)
    # every monic polynomial before it in lexicographic order (highest coefficient first) is reducible
    for code in range(p**a):
        lower = (1, *[(code // p ** (a - 1 - j)) % p for j in range(a)])
        if lower == first:
            break
        assert not _irreducible_by_brute_force(lower, p), lower
