"""Feasibility conditions for SRG parameters, checked against independent computations.

Independent references used here: floating-point eigenvalue formulas, the
Krein parameters q^1_11, q^2_22 in the classical closed form (Brouwer & Haemers,
*Spectra of Graphs*, §9.1; different from the product form gcsim uses),
the absolute bound written out by hand, and SageMath's list of feasible
parameters (tests/fixtures/sage_srg.json).
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from gcsim.combinatorics.srg_feasibility import (
    CONDITION_NAMES,
    KNOWN_NONEXISTENT_SRGS,
    complement_parameters,
    is_sum_of_two_squares,
    srg_eigenvalues,
    srg_feasibility,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError
from tolerances import SAFETY, gamma, unit_roundoff

FIX = Path(__file__).resolve().parent / "fixtures" / "sage_srg.json"


def _edge_count_tuples(vmax, primitive=True):
    for v in range(3, vmax + 1):
        for k in range(1, v - 1):
            for lam in range(0, k):
                num = k * (k - lam - 1)
                if num % (v - k - 1) == 0:
                    mu = num // (v - k - 1)
                    if (0 < mu < k) if primitive else (mu <= k):
                        yield (v, k, lam, mu)


def _float_multiplicities(v, k, lam, mu):
    d = math.sqrt((lam - mu) ** 2 + 4 * (k - mu))
    r, s = (lam - mu + d) / 2, (lam - mu - d) / 2
    # f, g from the two linear equations 1 + f + g = v (trace of I) and k + f r + g s = 0 (trace of A)
    g = (k + (v - 1) * r) / (r - s)
    f = v - 1 - g
    return r, s, f, g


def _float_multiplicities_tol(v, k, lam, mu, r, s, g):
    """Bound on the rounding of f and g in :func:`_float_multiplicities` (running error analysis,
    Higham Thm 3.1 / Lemma 3.3, each operation correctly rounded).

    ``Δ = (λ−μ)² + 4(k−μ)`` is an exact integer and ``√`` is correctly rounded, so ``r`` and ``s`` are
    within ``e_r = γ_2 (|λ−μ| + d)`` (``d = r − s = √Δ``); the numerator ``k + (v−1) r`` within
    ``(v−1) e_r + γ_2 (k + (v−1)|r|)``, the denominator within ``e_d = 2 e_r + u (|r| + |s|)``; a
    quotient ``a/b`` with errors ``e_a, e_b`` is within ``(e_a + |a/b| e_b)/(|b| − e_b) + u |a/b|``,
    and ``f = v − 1 − g`` adds ``u (v − 1 + |g|)``.
    """
    u = unit_roundoff()
    d = r - s
    e_r = gamma(2) * (abs(lam - mu) + d)
    e_num = (v - 1) * e_r + gamma(2) * (k + (v - 1) * abs(r))
    e_den = 2 * e_r + u * (abs(r) + abs(s))
    e_g = (e_num + abs(g) * e_den) / (d - e_den) + u * abs(g)
    e_f = e_g + u * (v - 1 + abs(g))
    return SAFETY * e_f, SAFETY * e_g


# ------------------------------------------------------------------------------------------------
def test_petersen_report():
    rep = srg_feasibility(10, 3, 0, 1)
    assert rep.feasible and rep.violated is None
    assert rep.eigenvalues == ((3, 1), (1, 5), (-2, 4))
    assert set(rep.as_dict()) == set(CONDITION_NAMES) | {"feasible"}
    assert "feasible" in str(rep)


def test_28_9_0_4_fails_krein_and_absolute_bound():
    """Hand derivation: D = 16 + 20 = 36, r = 1, s = -5, f = 21, g = 6.
    Krein: (s+1)(k+s+2rs) = (-4)(-6) = 24 > (k+s)(r+1)^2 = 16.  Absolute: g(g+3)/2 = 27 < 28."""
    rep = srg_feasibility(28, 9, 0, 4)
    assert rep.eigenvalues == ((9, 1), (1, 21), (-5, 6))
    d = rep.as_dict()
    assert d["integrality of multiplicities"] is True
    assert d["Krein"] is False and d["absolute bound"] is False
    assert not rep.feasible and rep.violated.name == "Krein"
    with pytest.raises(ImpossibleParametersError) as ei:
        rep.raise_if_infeasible()
    assert ei.value.condition == "Krein"


@pytest.mark.parametrize("v", [21, 33, 57, 77])
def test_conference_sum_of_two_squares(v):
    params = (v, (v - 1) // 2, (v - 5) // 4, (v - 1) // 4)
    rep = srg_feasibility(*params)
    assert rep.conference
    assert rep.violated.name == "conference graph: v is a sum of two squares"


@pytest.mark.parametrize("v", [5, 13, 17, 29, 37, 41, 45, 53, 61, 65])
def test_conference_ok(v):
    rep = srg_feasibility(v, (v - 1) // 2, (v - 5) // 4, (v - 1) // 4)
    assert rep.feasible and rep.conference
    (k, _), (r, f), (s, g) = rep.eigenvalues
    assert f == g == (v - 1) // 2
    # irrational eigenvalues are exact sympy surds: r s = mu - k, r + s = lam - mu
    assert sympy.simplify(r * s - ((v - 1) // 4 - k)) == 0
    assert sympy.simplify(r + s + 1) == 0


def test_sum_of_two_squares_brute_force():
    squares = {a * a + b * b for a in range(12) for b in range(12)}
    assert [n for n in range(100) if is_sum_of_two_squares(n)] == sorted(x for x in squares if x < 100)


@pytest.mark.parametrize("params", sorted(KNOWN_NONEXISTENT_SRGS))
def test_known_nonexistent(params):
    for p in (params, complement_parameters(*params)):
        rep = srg_feasibility(*p)
        assert rep.violated.name == "known nonexistence"
        assert re.search(r"\b(19|20)\d\d\b", rep.violated.detail)  # a year of the reference
        # every earlier condition holds
        assert all(c.holds for c in rep.conditions[:-1])


def test_integrality_against_floats():
    """Integrality of f, g agrees with a floating-point evaluation for every tuple v <= 80."""
    for p in _edge_count_tuples(80):
        v, k, lam, mu = p
        r, s, f, g = _float_multiplicities(*p)
        tf, tg = _float_multiplicities_tol(v, k, lam, mu, r, s, g)
        # the float verdict must be unambiguous: each of f, g is within its rounding bound of an
        # integer or more than twice it away (for v <= 80 the non-integral multiplicities are at
        # least 8e-4 from the integers, the bounds at most 2e-12), so the bound is neither vacuous
        # nor on a knife edge
        for x, t in ((f, tf), (g, tg)):
            dist = abs(x - round(x))
            assert dist <= t or dist > 2 * t, (p, x, t)
        conference = 2 * k + (v - 1) * (lam - mu) == 0
        # an integer multiplicity is >= 0 or <= -1, never in between
        integral = abs(f - round(f)) <= tf and abs(g - round(g)) <= tg and f >= -tf and g >= -tg
        expected = integral or (conference and (v - 1) % 2 == 0)
        rep = srg_feasibility(*p)
        assert rep.as_dict()["integrality of multiplicities"] is expected, p
        if expected and not conference:
            (_, _), (er, ef), (es, eg) = rep.eigenvalues
            assert (er, es, ef, eg) == (round(r), round(s), round(f), round(g)), p


def _krein_closed_form(v, k, r, s):
    """The Krein conditions q^1_11 >= 0 and q^2_22 >= 0 with
    q^1_11 = f^2/v (1 + r^3/k^2 - (r+1)^3/(v-k-1)^2) (likewise with s, g), cleared of
    denominators: (v-k-1)^2 (k^2 + r^3) >= (r+1)^3 k^2 (exact, with Fractions)."""
    l = v - k - 1
    c1 = l * l * (k * k + r**3) - (r + 1) ** 3 * k * k
    c2 = l * l * (k * k + s**3) - (s + 1) ** 3 * k * k
    return c1 >= 0 and c2 >= 0


def test_krein_against_closed_form():
    """gcsim's product form (Scott) vs the q^i_ii form, for every integral primitive tuple v <= 100."""
    checked = 0
    for p in _edge_count_tuples(100):
        rep = srg_feasibility(*p)
        d = rep.as_dict()
        if d["integrality of multiplicities"] is not True or rep.conference:
            continue
        v, k, lam, mu = p
        (_, _), (r, _), (s, _) = rep.eigenvalues
        assert d["Krein"] is _krein_closed_form(v, k, Fraction(r), Fraction(s)), p
        checked += 1
    assert checked > 150


def test_absolute_bound_by_hand():
    for p in _edge_count_tuples(100):
        rep = srg_feasibility(*p)
        d = rep.as_dict()
        if d["integrality of multiplicities"] is not True:
            continue
        v = p[0]
        (_, _), (_, f), (_, g) = rep.eigenvalues
        assert d["absolute bound"] is (2 * v <= f * (f + 3) and 2 * v <= g * (g + 3)), p


@pytest.mark.parametrize(
    "params,condition",
    [
        ((10, 3, 0, 2), "k(k-lam-1) = (v-k-1)mu"),
        ((10, 3, 3, 1), "basic bounds"),
        ((13, 4, 0, 3), "k(k-lam-1) = (v-k-1)mu"),
        ((7, 3, 0, 2), "integrality of multiplicities"),
        ((16, 10, 5, 8), "integrality of multiplicities"),
        ((50, 21, 4, 12), "absolute bound"),
        ((64, 21, 0, 10), "Krein"),
        ((21, 10, 4, 5), "conference graph: v is a sum of two squares"),
    ],
)
def test_named_conditions(params, condition):
    rep = srg_feasibility(*params)
    assert rep.violated is not None and rep.violated.name == condition, str(rep)


def test_imprimitive_are_feasible():
    for m in range(2, 6):
        for n in range(2, 6):
            assert srg_feasibility(m * n, n - 1, n - 2, 0).feasible, (m, n)
            assert srg_feasibility(m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n).feasible, (m, n)
    assert not srg_feasibility(10, 2, 1, 0).feasible  # 3 does not divide 10


def test_complement_parameters_are_feasible_together():
    for p in _edge_count_tuples(64):
        if p[1] > p[0] - 2:
            continue
        c = complement_parameters(*p)
        try:
            feasible_c = srg_feasibility(*c).feasible
        except InvalidArgumentError:  # negative complement parameters: p cannot exist
            feasible_c = False
        assert srg_feasibility(*p).feasible == feasible_c, p


def test_eigenvalues_exact_and_errors():
    assert srg_eigenvalues(16, 5, 0, 2) == ((5, 1), (1, 10), (-3, 5))
    with pytest.raises(ImpossibleParametersError) as ei:
        srg_eigenvalues(10, 3, 0, 2)
    assert ei.value.condition == "k(k-lam-1) = (v-k-1)mu"


@pytest.mark.parametrize(
    "args,name",
    [
        ((2, 1, 0, 0), "v"),
        ((10, 0, 0, 0), "k"),
        ((10, 9, 8, 0), "k"),
        ((10, 3, -1, 1), "lam"),
        ((10, 3, 0, -1), "mu"),
        ((10.5, 3, 0, 1), "v"),
        ((10, "3", 0, 1), "k"),
        ((10, 3, True, 1), "lam"),
    ],
)
def test_invalid_arguments(args, name):
    with pytest.raises(InvalidArgumentError) as ei:
        srg_feasibility(*args)
    assert ei.value.argument == name


@pytest.mark.skipif(not FIX.exists(), reason="Sage fixture not present")
def test_feasible_set_equals_sage_list():
    """gcsim's feasible primitive tuples (v <= 130, the fixture's range, keeping the known-nonexistent
    ones) are exactly SageMath's list of apparently feasible parameters."""
    fixture = json.loads(FIX.read_text())
    entries = fixture["entries"]
    vmax = fixture["header"]["ranges"]["v"][1]
    assert vmax >= 130
    sage = {(e["v"], e["k"], e["lambda"], e["mu"]) for e in entries}
    mine = set()
    for p in _edge_count_tuples(vmax):
        rep = srg_feasibility(*p)
        if rep.feasible or rep.violated.name == "known nonexistence":
            mine.add(p)
    assert mine == sage
    for e in entries:
        p = (e["v"], e["k"], e["lambda"], e["mu"])
        if e["sage"] is False:
            assert not srg_feasibility(*p).feasible, p


def test_krein_symbolic_identity():
    """The factorization used in docs/theory/20_srg.md §20.4: the coefficient of E_r in E_r o E_r
    equals ((k+r)(s+1)^2 - (r+1)(k+r+2rs)) / ((r-s)^2 (k-r)), and of E_s in E_r o E_r is
    s(s+1)/(r-s)^2 (with k = mu - rs, lam = mu + r + s, v from the counting identity)."""
    r, s, mu = sympy.symbols("r s mu")
    k = mu - r * s
    lam = mu + r + s
    v = k * (k - lam - 1) / mu + k + 1
    e0 = (-s - (k - s) / v) / (r - s)  # entries of E_r on the diagonal / edges / non-edges
    e1 = (1 - (k - s) / v) / (r - s)
    e2 = (-(k - s) / v) / (r - s)
    theta_r = e0**2 + e1**2 * r + e2**2 * (-1 - r)
    theta_s = e0**2 + e1**2 * s + e2**2 * (-1 - s)
    c1 = (k + r) * (s + 1) ** 2 - (r + 1) * (k + r + 2 * r * s)
    assert sympy.simplify(theta_r - c1 / ((r - s) ** 2 * (k - r))) == 0
    assert sympy.simplify(theta_s - s * (s + 1) / (r - s) ** 2) == 0
