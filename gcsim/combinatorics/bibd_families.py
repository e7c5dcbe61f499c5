"""gcsim's built-in families of 2-(v, k, lambda) designs, as registered objects (docs/theory.md §10).

Each family is one :class:`~gcsim.combinatorics.families.BIBDFamily`: a direct match of the
parameters (number theory and tables, nothing built) and its construction.  The planner of
:func:`gcsim.bibd` asks the registered families in priority order for a direct construction,
then combines them recursively (complement, residual, derived, unions, multiples); the
priorities below are the order in which the planner has always tried them.

>>> from gcsim.combinatorics.families import registered_families
>>> [f.name for f in registered_families("bibd")][:3]
['trivial designs', 'complete designs (k = 2)', 'Steiner triple systems']
>>> from gcsim.combinatorics.families import get_family
>>> get_family("projective and affine geometries").lookup((13, 4, 1)).name
'PG(2,3), dimension-1 flats'
"""

from __future__ import annotations

import math
from functools import partial

import sympy

from .._validation import check_int
from .bibd_design import BIBD
from .bibd_difference import difference_family_design, five_q_design, paley_design
from .bibd_elementary import _comb_capped, complete_design, steiner_triple_system
from .bibd_geometries import (
    affine_geometry_design,
    hermitian_unital,
    hyperoval_biplane,
    mcfarland_design,
    projective_geometry_design,
)
from .difference_families import DIFFERENCE_FAMILIES, radical_difference_family
from .families import BIBDFamily, Member
from .fields import is_prime_power, prime_power
from .geometries import ag_parameters, gaussian_binomial, pg_parameters

__all__ = ["geometry_match"]

#: the complete design (all k-subsets) is used up to this many blocks
_MAX_COMPLETE_BLOCKS = 50_000


def geometry_match(v: int, k: int, lam: int) -> tuple[str, int, int, int] | None:
    """The PG/AG design with parameters (v, k, lam), as (family, n, q, dim), by number theory.

    PG(n, q): ``v = 1 + q + ... + q^n`` and ``q^n < v < (q+1)^n`` (n >= 2), so
    ``q = floor(v^(1/n))``; AG(n, q): ``v = q^n``.  One integer root per n
    (``n <= log2 v``), no enumeration of fields, so it answers for any v.  When
    several geometries share (v, k, lam) the smallest q wins, PG before AG, then
    the smallest n and dim (the order gcsim has always used).

    >>> geometry_match(91, 10, 1), geometry_match(27, 3, 1)
    (('PG', 2, 9, 1), ('AG', 3, 3, 1))
    """
    v, k, lam = check_int("v", v, minimum=1), check_int("k", k, minimum=1), check_int("lam", lam, minimum=1)
    cands = []
    n = 2
    while 2**n <= v:
        q = int(sympy.integer_nthroot(v, n)[0])
        if q >= 2 and gaussian_binomial(n + 1, 1, q) == v and is_prime_power(q):
            for d in range(1, n):
                if pg_parameters(n, q, d) == (v, k, lam):
                    cands.append((q, 0, n, d))
        if q >= 2 and q**n == v and is_prime_power(q):
            for d in range(1, n):
                if ag_parameters(n, q, d) == (v, k, lam):
                    cands.append((q, 1, n, d))
        n += 1
    if not cands:
        return None
    q, fam, n, d = min(cands)
    return ("PG" if fam == 0 else "AG", n, q, d)


def _trivial(v: int, lam: int) -> BIBD:
    return BIBD(v, [tuple(range(v))] * lam, f"trivial: {lam} copies of the full block", lam=lam)


class TrivialDesigns(BIBDFamily):
    """k = v: lam copies of the full block."""

    name = "trivial designs"
    parameters = ("v", "lam")
    construction = "lam copies of the block of all v points"
    example = (5, 5, 2)
    priority = 10

    def lookup(self, params):
        v, k, lam = params
        if k == v:
            return Member(tuple(params), f"{lam} copies of the full block", partial(_trivial, v, lam))
        return None


class CompleteDesigns(BIBDFamily):
    """All k-subsets of v points: a 2-(v, k, C(v-2, k-2)) design (at most 50,000 blocks, or k = 2)."""

    parameters = ("v", "k")
    construction = "every k-subset of the v points (HCD II.1)"

    def __init__(self, pairs_only: bool) -> None:
        self.pairs_only = pairs_only
        # k = 2 is tried early (before the affine geometries AG(n, 2), whose lines are pairs)
        self.name = "complete designs (k = 2)" if pairs_only else "complete designs"
        self.example = (6, 2, 1) if pairs_only else (6, 3, 4)
        self.priority = 20 if pairs_only else 120

    def lookup(self, params):
        v, k, lam = params
        if self.pairs_only:
            ok = k == 2 and lam == 1
        else:
            ok = (
                2 <= k < v
                and _comb_capped(v, k, _MAX_COMPLETE_BLOCKS) <= _MAX_COMPLETE_BLOCKS
                and lam == math.comb(v - 2, k - 2)
            )
        return Member(tuple(params), f"all {k}-subsets of {v} points", partial(complete_design, v, k)) if ok else None


class SteinerTripleSystems(BIBDFamily):
    """Steiner triple systems 2-(v, 3, 1), v = 1, 3 mod 6 (Bose, Skolem)."""

    name = "Steiner triple systems"
    parameters = ("v",)
    construction = "Bose (v = 3 mod 6) and Skolem (v = 1 mod 6) constructions (HCD II.2)"
    example = (9, 3, 1)
    priority = 30

    def lookup(self, params):
        v, k, lam = params
        if k == 3 and lam == 1 and v % 6 in (1, 3):
            return Member(tuple(params), f"STS({v})", partial(steiner_triple_system, v))
        return None


def _geometry(fam: str, n: int, q: int, d: int) -> BIBD:
    if fam == "PG":
        return projective_geometry_design(n, q, d)
    return affine_geometry_design(n, q, d)


class Geometries(BIBDFamily):
    """Points and d-flats of PG(n, q) and AG(n, q)."""

    name = "projective and affine geometries"
    parameters = ("PG or AG", "n", "q", "d")
    construction = "points vs d-dimensional flats of PG(n,q) / AG(n,q) (BJL I.2, HCD VII.2)"
    example = (13, 4, 1)
    priority = 40

    def lookup(self, params):
        geo = geometry_match(*params)
        if geo is None:
            return None
        fam, n, q, d = geo
        return Member(tuple(params), f"{fam}({n},{q}), dimension-{d} flats", partial(_geometry, fam, n, q, d))


class PaleyDesigns(BIBDFamily):
    """Paley difference sets: the symmetric 2-(q, (q-1)/2, (q-3)/4) design, q = 3 mod 4 a prime power >= 7."""

    name = "Paley designs"
    parameters = ("q",)
    construction = "translates of the nonzero squares of GF(q), q = 3 mod 4 (BJL VI.1)"
    example = (11, 5, 2)
    priority = 50

    def lookup(self, params):
        v, k, lam = params
        if v % 4 == 3 and v >= 7 and is_prime_power(v) and k == (v - 1) // 2 and lam == (v - 3) // 4:
            return Member(tuple(params), f"Paley difference set in GF({v})", partial(paley_design, v))
        return None


def _table_design(v: int, k: int, lam: int) -> BIBD:
    moduli, n_fixed, base, source = DIFFERENCE_FAMILIES[(v, k, lam)]
    return difference_family_design(moduli, base, n_fixed, lam=lam, name=f"difference family ({source})")


class TabulatedDifferenceFamilies(BIBDFamily):
    """The difference families of :data:`~gcsim.combinatorics.difference_families.DIFFERENCE_FAMILIES`."""

    name = "tabulated difference families"
    parameters = ("v", "k", "lam")
    construction = "development of a tabulated difference family (HCD VI.16-17)"
    example = (17, 4, 3)
    priority = 60

    def lookup(self, params):
        key = tuple(params)
        if key in DIFFERENCE_FAMILIES:
            return Member(key, f"difference family ({DIFFERENCE_FAMILIES[key][3]})", partial(_table_design, *key))
        return None


def _radical_design(v: int, k: int, lam: int) -> BIBD:
    p, a = prime_power(v)
    fam = radical_difference_family(v, k, lam)
    return difference_family_design((p,) * a, fam, 0, lam=lam, name=f"radical difference family in GF({v}) (Wilson)")


class RadicalDifferenceFamilies(BIBDFamily):
    """Wilson's radical difference families in GF(q) (any lambda, an exact cyclotomic check)."""

    name = "radical difference families"
    parameters = ("q", "k", "lam")
    construction = "Wilson (1972): cosets of the k-th roots of unity in GF(q)"
    example = (13, 3, 1)
    priority = 70

    def lookup(self, params):
        v, k, lam = params
        if k >= 3 and is_prime_power(v) and radical_difference_family(v, k, lam) is not None:
            return Member(tuple(params), f"radical difference family in GF({v})", partial(_radical_design, v, k, lam))
        return None


class FiveQDesigns(BIBDFamily):
    """The 2-(5q, 5, 1) designs, q = 1 mod 4 a prime power."""

    name = "5q designs"
    parameters = ("q",)
    construction = "blocks on Z_5 x GF(q) from a primitive element (Clayton Smith, Theorem 24)"
    example = (25, 5, 1)
    priority = 80

    def lookup(self, params):
        v, k, lam = params
        if k == 5 and lam == 1 and v % 5 == 0 and is_prime_power(v // 5) and (v // 5) % 4 == 1:
            return Member(tuple(params), f"5q design, q = {v // 5}", partial(five_q_design, v // 5))
        return None


class HermitianUnitals(BIBDFamily):
    """Hermitian unitals 2-(q^3 + 1, q + 1, 1), q a prime power <= 5."""

    name = "Hermitian unitals"
    parameters = ("q",)
    construction = "absolute points and secants of a Hermitian curve in PG(2,q^2) (BJL VIII.5)"
    example = (28, 4, 1)
    priority = 90

    def lookup(self, params):
        v, k, lam = params
        if lam == 1 and 3 <= k <= 6 and is_prime_power(k - 1) and v == (k - 1) ** 3 + 1:
            return Member(tuple(params), f"Hermitian unital, q = {k - 1}", partial(hermitian_unital, k - 1))
        return None


class McFarlandDesigns(BIBDFamily):
    """McFarland's symmetric designs (q^{d+1}(r+1), q^d r, q^d (q^d - 1)/(q - 1)), r = (q^{d+1}-1)/(q-1)."""

    name = "McFarland designs"
    parameters = ("q", "d")
    construction = "McFarland difference sets (BJL VI.8), q < 16, d <= 3"
    example = (16, 6, 2)
    priority = 100

    def lookup(self, params):
        v, k, lam = params
        for q in range(2, 16):
            if is_prime_power(q):
                for d in range(1, 4):
                    r_ = gaussian_binomial(d + 1, 1, q)
                    if (v, k, lam) == (q ** (d + 1) * (r_ + 1), q**d * r_, q**d * (q**d - 1) // (q - 1)):
                        name = f"McFarland design, q = {q}, d = {d}"
                        return Member(tuple(params), name, partial(mcfarland_design, q, d))
        return None


class HyperovalBiplane(BIBDFamily):
    """The biplane 2-(56, 11, 2) (Hall, Lane and Wales)."""

    name = "biplane (56,11,2)"
    parameters = ()
    construction = "one class of 56 hyperovals of PG(2,4), closed neighbourhoods of the Gewirtz graph"
    example = (56, 11, 2)
    priority = 110

    def lookup(self, params):
        if tuple(params) == (56, 11, 2):
            return Member((56, 11, 2), "biplane (56,11,2)", hyperoval_biplane)
        return None


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (
    TrivialDesigns(),
    CompleteDesigns(pairs_only=True),
    SteinerTripleSystems(),
    Geometries(),
    PaleyDesigns(),
    TabulatedDifferenceFamilies(),
    RadicalDifferenceFamilies(),
    FiveQDesigns(),
    HermitianUnitals(),
    McFarlandDesigns(),
    HyperovalBiplane(),
    CompleteDesigns(pairs_only=False),
)
