"""Tests of the difference-family machinery (gcsim.combinatorics.difference_families).

Difference counts are recomputed here by brute force over the group, independently of
``develop`` and ``BIBD.verify``; table entries are re-derived from the recorded searches.
"""

from __future__ import annotations

import ast
from collections import Counter
from itertools import combinations, product

import numpy as np
import pytest

from gcsim.combinatorics import difference_families as dfm
from gcsim.combinatorics.difference_families import (
    DIFFERENCE_FAMILIES,
    cyclotomic_difference_family,
    develop,
    group_elements,
    multiplier_difference_family,
    paley_difference_set,
    radical_difference_family,
    search_difference_family,
    singer_difference_set,
)
from gcsim.combinatorics.fields import field_tables
from gcsim.combinatorics.geometries import gaussian_binomial, subspaces
from gcsim.errors import InvalidArgumentError


def pair_counts(v: int, blocks) -> Counter:
    return Counter(p for b in blocks for p in combinations(sorted(b), 2))


def is_design(v: int, blocks, lam: int) -> bool:
    c = pair_counts(v, blocks)
    return len(c) == v * (v - 1) // 2 and set(c.values()) == {lam}


def field_difference_counts(q: int, family) -> Counter:
    add, mul = field_tables(q)
    neg = [int(np.flatnonzero(add[x] == 0)[0]) for x in range(q)]
    return Counter(int(add[x, neg[y]]) for B in family for x in B for y in B if x != y)


# ----------------------------------------------------------------------------- fields


@pytest.mark.parametrize("q", [2, 3, 4, 5, 7, 8, 9, 16, 25, 27, 49])
def test_field_tables_are_fields(q):
    add, mul = field_tables(q)
    e = np.arange(q)
    assert np.array_equal(add[0], e) and np.array_equal(mul[1], e)
    assert all(sorted(add[x].tolist()) == e.tolist() for x in range(q))  # Latin rows
    assert all(sorted(mul[x, 1:].tolist()) == e[1:].tolist() for x in range(1, q))  # no zero divisors
    trip = list(product(range(q), repeat=3))[:: max(1, q**3 // 2000)]
    for a, b, c in trip:  # associativity and distributivity on a sample
        assert mul[mul[a, b], c] == mul[a, mul[b, c]]
        assert mul[a, add[b, c]] == add[mul[a, b], mul[a, c]]
        assert add[add[a, b], c] == add[a, add[b, c]]


def test_gaussian_binomial_counts_subspaces():
    for N, m, q in [(3, 1, 2), (3, 2, 3), (4, 2, 2), (4, 3, 3), (4, 2, 3)]:
        bases = subspaces(N, m, q)
        assert len(bases) == gaussian_binomial(N, m, q)


# ----------------------------------------------------------------------------- development


def test_develop_full_short_and_fixed():
    assert develop(7, [[0, 1, 3]]) == [tuple(sorted(((0 + g) % 7, (1 + g) % 7, (3 + g) % 7))) for g in range(7)]
    assert len(develop(9, [[0, 3, 6]])) == 3  # stabilizer of order 3
    blocks = develop(27, [[0, 9, 18, 27]], 1)  # 27 = fixed point
    assert len(blocks) == 9 and all(27 in b for b in blocks)
    assert develop((2, 2), [[0, 1]]) == [(0, 1), (2, 3)]  # Z_2 x Z_2: 0+1 = 1, stabilizer {0, 1}
    with pytest.raises(InvalidArgumentError):
        develop(5, [[0, 7]])


def test_group_elements_mixed_radix():
    g = group_elements((3, 5))
    assert g.shape == (15, 2) and g[7].tolist() == [1, 2]


@pytest.mark.parametrize("q", [7, 11, 19, 23, 27, 31, 43])
def test_paley_difference_set(q):
    S = paley_difference_set(q)
    c = field_difference_counts(q, [S])
    assert set(c) == set(range(1, q)) and set(c.values()) == {(q - 3) // 4}


@pytest.mark.parametrize(
    "n,q", [(2, 2), (2, 3), (2, 4), (2, 5), (2, 8), (2, 9), (3, 2), (3, 3), (3, 4), (4, 3), (5, 2)]
)
def test_singer_difference_sets(n, q):
    v = (q ** (n + 1) - 1) // (q - 1)
    D = singer_difference_set(n, q)
    assert len(D) == (q**n - 1) // (q - 1)
    c = Counter((x - y) % v for x in D for y in D if x != y)
    assert set(c) == set(range(1, v)) and set(c.values()) == {(q ** (n - 1) - 1) // (q - 1)}


def test_singer_refuses_large_fields():
    with pytest.raises(InvalidArgumentError):
        singer_difference_set(2, 16)  # a prime power beyond the field tables


@pytest.mark.parametrize(
    "q,k,lam", [(13, 3, 1), (19, 3, 1), (25, 4, 1), (41, 5, 1), (37, 9, 2), (16, 6, 2), (43, 7, 3), (61, 5, 1)]
)
def test_radical_difference_families(q, k, lam):
    fam = radical_difference_family(q, k, lam)
    assert fam is not None and len(fam) == lam * (q - 1) // (k * (k - 1))
    c = field_difference_counts(q, fam)
    assert set(c) == set(range(1, q)) and set(c.values()) == {lam}


def test_radical_difference_family_refuses():
    assert radical_difference_family(37, 4, 1) is None  # Wilson's condition fails
    assert radical_difference_family(12, 3, 1) is None  # not a prime power


@pytest.mark.parametrize(
    "q,k,lam", [(29, 4, 3), (41, 4, 3), (53, 4, 3), (37, 4, 1), (25, 4, 1), (31, 6, 3), (13, 4, 1)]
)
def test_cyclotomic_search(q, k, lam):
    fam = cyclotomic_difference_family(q, k, lam)
    c = field_difference_counts(q, fam)
    assert set(c) == set(range(1, q)) and set(c.values()) == {lam}
    p = [p for p in range(2, q + 1) if q % p == 0][0]
    a = round(np.log(q) / np.log(p))
    assert is_design(q, develop((p,) * a, fam), lam)


@pytest.mark.parametrize("n,k,lam,m", [(13, 4, 1, 3), (31, 6, 1, 5), (21, 5, 1, 4)])
def test_multiplier_search(n, k, lam, m):
    fam = multiplier_difference_family(n, k, lam, m)
    assert fam is not None
    assert all(sorted((m * x) % n for x in B) == sorted(B) for B in fam)
    assert is_design(n, develop(n, fam), lam)


@pytest.mark.parametrize(
    "n,k,lam,kwargs",
    [
        (13, 4, 1, {}),
        (37, 4, 1, {}),
        (27, 3, 1, {"fixed": [[0, 9, 18]]}),
        (15, 3, 1, {"fixed": [[0, 5, 10]]}),
        (8, 3, 1, {"fixed": [[0, 4, 8]], "n_fixed": 1}),  # 1-rotational STS(9)
    ],
)
def test_search_finds_difference_families(n, k, lam, kwargs):
    fam = search_difference_family(n, k, lam, **kwargs)
    assert fam is not None
    assert is_design(n + kwargs.get("n_fixed", 0), develop(n, fam, kwargs.get("n_fixed", 0)), lam)


def test_search_is_deterministic():
    a = search_difference_family(25, 3, 1, seed=3)
    b = search_difference_family(25, 3, 1, seed=3)
    assert a == b and a is not None


def test_search_reports_impossible_fixed_blocks():
    # (9,3,1) over Z_9 needs the short orbit {0,3,6} plus one full block with differences
    # {+-1, +-2, +-4}; no 3-subset of Z_9 has them (there is no cyclic STS(9)), and the
    # search is complete, so it must answer None.
    assert search_difference_family(9, 3, 1, fixed=[[0, 3, 6]]) is None


# ----------------------------------------------------------------------------- the table


@pytest.mark.parametrize("key", sorted(DIFFERENCE_FAMILIES), ids=lambda t: "v{}_k{}_l{}".format(*t))
def test_table_entries_are_designs(key):
    v, k, lam = key
    moduli, n_fixed, base, source = DIFFERENCE_FAMILIES[key]
    assert all(len(B) == k for B in base)
    assert int(np.prod(moduli)) + n_fixed == v
    assert is_design(v, develop(moduli, base, n_fixed), lam)


FAST = [
    key
    for key, (_, _, _, src) in DIFFERENCE_FAMILIES.items()
    if key
    in {
        (17, 4, 3),
        (21, 4, 3),
        (22, 4, 2),
        (28, 3, 2),
        (21, 6, 3),
        (35, 5, 2),
        (29, 4, 3),
        (41, 4, 3),
        (53, 4, 3),
        (37, 4, 1),
        (37, 4, 3),
    }
]


@pytest.mark.parametrize("key", FAST, ids=lambda t: "v{}_k{}_l{}".format(*t))
def test_table_entries_reproducible(key):
    """Re-run the recorded search call and compare with the tabulated base blocks."""
    moduli, n_fixed, base, source = DIFFERENCE_FAMILIES[key]
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call) and call.func.id in {"search_difference_family", "cyclotomic_difference_family"}
    fn = getattr(dfm, call.func.id)
    args = [ast.literal_eval(a) for a in call.args]
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    assert fn(*args, **kwargs) == base


def test_argument_validation_names_the_argument():
    with pytest.raises(InvalidArgumentError) as info:
        develop((0, 3), [[0]])
    assert info.value.argument == "moduli"
    with pytest.raises(InvalidArgumentError) as info:
        develop(5, [[0, 1]], n_fixed=-1)
    assert info.value.argument == "n_fixed"
    with pytest.raises(InvalidArgumentError) as info:
        subspaces(3, 4, 2)
    assert info.value.argument == "m"
    with pytest.raises(InvalidArgumentError) as info:
        field_tables(6)
    assert info.value.argument == "q"
    with pytest.raises(InvalidArgumentError) as info:
        multiplier_difference_family(12, 3, 1, 4)
    assert info.value.argument == "multiplier"
