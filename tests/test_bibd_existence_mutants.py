"""gcsim.combinatorics.bibd_existence against independent computations (issue #32 item 7).

Written against the mutants ``scripts/mutation.py combinatorics.bibd_existence`` found alive: the
Hilbert symbol is checked by its algebraic identities (values +-1, symmetry, bimultiplicativity,
invariance under squares, Hilbert's product formula), the ternary form and Bruck-Ryser-Chowla by
brute-force search for integer solutions (Holzer's bound makes the search box conclusive), the
necessary conditions by their arithmetic written out, and every bad input by the argument it names.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from gcsim.combinatorics import bibd_necessary_conditions, bruck_ryser_chowla, ternary_form_isotropic
from gcsim.combinatorics.bibd_existence import KNOWN_NONEXISTENT_BIBDS, _hilbert_symbol
from gcsim.errors import InvalidArgumentError

PRIMES = (2, 3, 5, 7, 11)
NONZERO = [x for x in range(-13, 14) if x]


@cache
def _isotropic_brute(a: int, b: int, box: int) -> bool:
    """Whether z^2 = a x^2 + b y^2 has a solution with 0 < max(|x|, |y|) <= box (numpy search)."""
    x = np.arange(box + 1, dtype=np.int64)
    rhs = a * x[:, None] ** 2 + b * x[None, :] ** 2
    rhs[0, 0] = -1  # x = y = 0 forces z = 0: the trivial solution
    z = np.sqrt(np.maximum(rhs, 0)).round().astype(np.int64)
    return bool(((rhs >= 0) & (z * z == rhs)).any())


# ----------------------------------------------------------------------------- the Hilbert symbol


def test_hilbert_symbol_is_an_int_sign_symmetric_and_square_invariant():
    for p in PRIMES:
        for a in NONZERO:
            for b in NONZERO:
                h = _hilbert_symbol(a, b, p)
                assert type(h) is int and h in (1, -1), (a, b, p, h)
                assert h == _hilbert_symbol(b, a, p)
                # (a p^2, b)_p = (a, b)_p: a square factor changes nothing (Serre III.1.1)
                assert _hilbert_symbol(a * p * p, b, p) == h
                assert _hilbert_symbol(a * p**4, b * 9 * p**2, p) == _hilbert_symbol(a, b * 9, p)


def test_hilbert_symbol_is_bimultiplicative():
    values = [x for x in range(-8, 9) if x]
    for p in PRIMES:
        for a1 in values:
            for a2 in values:
                for b in values:
                    left = _hilbert_symbol(a1 * a2, b, p)
                    assert left == _hilbert_symbol(a1, b, p) * _hilbert_symbol(a2, b, p), (a1, a2, b, p)


def test_hilbert_symbol_identities_and_product_formula():
    for p in PRIMES:
        for a in NONZERO:
            assert _hilbert_symbol(a, -a, p) == 1
            if a != 1:
                assert _hilbert_symbol(a, 1 - a, p) == 1
    # Hilbert's product formula: prod over all places is 1; only p | 2ab and infinity can be -1
    for a in NONZERO:
        for b in NONZERO:
            places = {int(q) for q in range(2, 2 * abs(a * b) + 1) if (2 * a * b) % q == 0 and _is_prime(q)}
            product = -1 if (a < 0 and b < 0) else 1
            for q in places:
                product *= _hilbert_symbol(a, b, q)
            assert product == 1, (a, b)


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % d for d in range(2, math.isqrt(q) + 1))


def test_hilbert_symbol_known_values_at_two_and_odd_primes():
    # (Serre III.1.2) at p = 2 with units u, w: (-1)^(e(u)e(w)); (2, u)_2 = (-1)^(w(u))
    assert _hilbert_symbol(-1, -1, 2) == -1 and _hilbert_symbol(3, 3, 2) == -1 and _hilbert_symbol(5, 5, 2) == 1
    assert _hilbert_symbol(2, 3, 2) == -1 and _hilbert_symbol(2, 7, 2) == 1 and _hilbert_symbol(2, 5, 2) == -1
    # odd p: (p, u)_p is the Legendre symbol of u mod p; (p, p)_p = (-1/p)
    assert _hilbert_symbol(3, 2, 3) == -1 and _hilbert_symbol(3, 4, 3) == 1 and _hilbert_symbol(5, 4, 5) == 1
    assert _hilbert_symbol(3, 3, 3) == -1 and _hilbert_symbol(5, 5, 5) == 1 and _hilbert_symbol(7, 7, 7) == -1


# ----------------------------------------------------------------------------- the ternary form


@pytest.mark.parametrize("a", NONZERO)
def test_ternary_form_isotropic_against_brute_force(a):
    """All |a|, |b| <= 13 (square factors and both signs included): box 60 is conclusive by Holzer."""
    for b in NONZERO:
        assert ternary_form_isotropic(a, b) == _isotropic_brute(a, b, 60), (a, b)


def test_ternary_form_negative_definite_and_two_adic_cases():
    assert ternary_form_isotropic(-1, -1) is False and ternary_form_isotropic(-3, -5) is False
    # z^2 = 3x^2 + 7y^2 fails at 2 and at 7 (an even number of places, Hilbert's product formula)
    assert ternary_form_isotropic(3, 7) is False and _isotropic_brute(3, 7, 60) is False
    assert ternary_form_isotropic(2, 7) is True and _isotropic_brute(2, 7, 60) is True


@pytest.mark.parametrize("args,name", [((0, 5), "a"), ((5, 0), "b"), ((0, -1), "a"), ((1.5, 2), "a"), ((2, "3"), "b")])
def test_ternary_form_bad_coefficient_names_it(args, name):
    with pytest.raises(InvalidArgumentError) as info:
        ternary_form_isotropic(*args)
    assert info.value.argument == name


# ----------------------------------------------------------------------------- Bruck-Ryser-Chowla


def _symmetric_parameters(v_max: int) -> list[tuple[int, int, int]]:
    return [
        (v, k, lam)
        for v in range(3, v_max + 1)
        for k in range(2, v)
        for lam in range(1, k)
        if lam * (v - 1) == k * (k - 1)
    ]


def _brc_brute(v: int, k: int, lam: int) -> bool:
    """The theorem as stated (BJL II.3.6), the form searched unreduced in a box of 200."""
    n = k - lam
    if v % 2 == 0:
        return n in {i * i for i in range(n + 1)}
    return _isotropic_brute(n, (-1) ** ((v - 1) // 2) * lam, 200)


def test_bruck_ryser_chowla_against_the_theorem_by_brute_force():
    params = _symmetric_parameters(120)
    assert len(params) > 30 and any(v % 2 == 0 for v, _, _ in params)
    for v, k, lam in params:
        assert bruck_ryser_chowla(v, k, lam) is _brc_brute(v, k, lam), (v, k, lam)
    # v even with k - lam not a square, yet the odd-v form would be isotropic: the parity branch matters
    assert bruck_ryser_chowla(46, 10, 2) is False and _isotropic_brute(8, 2, 20) is True


def test_bruck_ryser_chowla_not_symmetric_or_trivial_is_none():
    for v, k, lam in [(2, 2, 1), (4, 4, 4), (5, 5, 5), (13, 3, 1), (7, 3, 2), (9, 3, 1)]:
        assert bruck_ryser_chowla(v, k, lam) is None, (v, k, lam)
    assert bruck_ryser_chowla(3, 2, 1) is True  # the complement of a triangle's points: a symmetric design


@pytest.mark.parametrize(
    "args,name",
    [
        ((1, 2, 1), "v"),
        ((7, 1, 1), "k"),
        ((7, 3, 0), "lam"),
        ((7.5, 3, 1), "v"),
        ((7, "3", 1), "k"),
        ((7, 3, None), "lam"),
    ],
)
def test_bruck_ryser_chowla_bad_input_names_it(args, name):
    with pytest.raises(InvalidArgumentError) as info:
        bruck_ryser_chowla(*args)
    assert info.value.argument == name


# ----------------------------------------------------------------------------- necessary conditions


def _brc_or_none(v: int, k: int, lam: int) -> bool | None:
    if lam * (v - 1) != k * (k - 1) or k >= v:
        return None
    return _brc_brute(v, k, lam)


def _conditions_by_hand(v: int, k: int, lam: int) -> str | None:
    """The first failing necessary condition, in the documented order, computed here."""
    if (lam * (v - 1)) % (k - 1) or (lam * v * (v - 1)) % (k * (k - 1)):
        return "divisibility"
    r = lam * (v - 1) // (k - 1)
    b = lam * v * (v - 1) // (k * (k - 1))
    if k < v and b < v:
        return "Fisher's inequality"
    if k < v and b == v and _brc_or_none(v, k, lam) is False:
        return "Bruck-Ryser-Chowla"
    if k < v and r == k + lam and lam <= 2:  # quasi-residual: the residual of a symmetric design
        sym = (v + k + lam, k + lam, lam)
        if _brc_or_none(*sym) is False or sym in KNOWN_NONEXISTENT_BIBDS:
            return "Hall-Connor (quasi-residual of a nonexistent symmetric design)"
    if (v, k, lam) in KNOWN_NONEXISTENT_BIBDS:
        return f"known nonexistence ({KNOWN_NONEXISTENT_BIBDS[(v, k, lam)]})"
    return None


def test_necessary_conditions_against_the_arithmetic():
    seen = set()
    for v in range(2, 50):
        for k in range(2, v + 1):
            for lam in (1, 2, 3):
                expected = _conditions_by_hand(v, k, lam)
                got = bibd_necessary_conditions(v, k, lam)
                assert got == ([] if expected is None else [expected]), (v, k, lam, got)
                seen.add(expected.split(" (")[0] if expected else None)
    assert seen == {
        None,
        "divisibility",
        "Fisher's inequality",
        "Bruck-Ryser-Chowla",
        "Hall-Connor",
        "known nonexistence",
    }
    # beyond v = 50: the tabulated results and Hall-Connor on (100, 10, 1), (111, 11, 1)
    for key in [(100, 10, 1), (111, 11, 1), (46, 6, 1), (56, 11, 2), (79, 13, 2)]:
        expected = _conditions_by_hand(*key)
        assert bibd_necessary_conditions(*key) == ([] if expected is None else [expected]), key


def test_necessary_conditions_default_lambda_is_one():
    assert bibd_necessary_conditions(43, 7) == ["Bruck-Ryser-Chowla"]  # (43, 7, 2) would pass all four checks
    assert bibd_necessary_conditions(43, 7, 2) == []


def test_necessary_conditions_at_the_smallest_parameters():
    assert bibd_necessary_conditions(2, 2, 1) == []  # one block holding both points
    assert bibd_necessary_conditions(3, 3) == [] and bibd_necessary_conditions(3, 2) == []
    assert bibd_necessary_conditions(4, 3, 2) == []  # the four 3-subsets of 4 points


@pytest.mark.parametrize(
    "args,name",
    [((1, 2, 1), "v"), ((7, 1, 1), "k"), ((7, 8, 1), "k"), ((7, 3, 0), "lam"), ((7, 3.5, 1), "k")],
)
def test_necessary_conditions_bad_input_names_it(args, name):
    with pytest.raises(InvalidArgumentError) as info:
        bibd_necessary_conditions(*args)
    assert info.value.argument == name
