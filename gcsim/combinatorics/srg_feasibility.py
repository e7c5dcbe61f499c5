"""Necessary conditions for strongly regular graph parameters (v, k, lambda, mu).

A graph on ``v`` vertices is *strongly regular* with parameters
``(v, k, lam, mu)`` if it is ``k``-regular, any two adjacent vertices have
exactly ``lam`` common neighbours and any two distinct non-adjacent vertices
have exactly ``mu``.  Equivalently its adjacency matrix satisfies

    Adj^2 = k I + lam Adj + mu (J - I - Adj).

gcsim excludes the trivial graphs (complete and edgeless), i.e. it requires
``1 <= k <= v - 2``.  The conditions checked here are (proofs in
``docs/theory/20_srg.md``; Brouwer & Van Maldeghem, *Strongly Regular Graphs*,
CUP 2022, ch. 1 and 8; Brouwer & Haemers, *Spectra of Graphs*, 2012, §9.1):

1. ``basic bounds``: ``0 <= lam <= k - 1``, ``0 <= mu <= k``, and ``mu = 0`` only
   for disjoint unions of cliques (``lam = k - 1``, ``(k + 1) | v``).
2. ``k(k-lam-1) = (v-k-1)mu`` (count edges between the neighbourhood of a
   vertex and its non-neighbourhood).
3. ``integrality of multiplicities``: the restricted eigenvalues
   ``r, s = (lam - mu +- sqrt(D)) / 2`` with ``D = (lam - mu)^2 + 4(k - mu)``
   have multiplicities
   ``f, g = ((v - 1) -+ (2k + (v - 1)(lam - mu)) / sqrt(D)) / 2``
   that must be non-negative integers -- unless ``2k + (v-1)(lam-mu) = 0``
   (a *conference graph*, ``f = g = (v-1)/2``), when ``r, s`` may be irrational.
4. ``conference graph: v is a sum of two squares`` (Belevitch 1950; van
   Lint & Seidel 1966): a conference graph needs a symmetric conference matrix
   of order ``v + 1``, hence ``v`` is a sum of two squares.
5. ``Krein`` (Scott 1973): ``(r+1)(k+r+2rs) <= (k+r)(s+1)^2`` and
   ``(s+1)(k+s+2rs) <= (k+s)(r+1)^2``.
6. ``absolute bound`` (Delsarte, Goethals & Seidel 1977):
   ``v <= f(f+3)/2`` and ``v <= g(g+3)/2`` for primitive graphs (``0 < mu < k``);
   the imprimitive ones (disjoint cliques, complete multipartite) exist whenever
   the basic bounds hold.
7. Named non-existence results for parameter sets passing 1-6 (table
   :data:`KNOWN_NONEXISTENT_SRGS`).

All arithmetic is exact (integers, fractions and sympy surds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import isqrt
from typing import Any

import sympy

from .._validation import check_int
from ..errors import ImpossibleParametersError, InvalidArgumentError

__all__ = [
    "SRGCondition",
    "SRGFeasibility",
    "srg_feasibility",
    "srg_eigenvalues",
    "complement_parameters",
    "check_srg_parameters",
    "is_sum_of_two_squares",
    "KNOWN_NONEXISTENT_SRGS",
    "CONDITION_NAMES",
]

#: Names of the conditions, in the order they are checked.
CONDITION_NAMES = (
    "basic bounds",
    "k(k-lam-1) = (v-k-1)mu",
    "integrality of multiplicities",
    "conference graph: v is a sum of two squares",
    "Krein",
    "absolute bound",
    "known nonexistence",
)

#: Feasible parameter sets (passing every condition above) for which no graph
#: exists, with the reference proving it.  Complements are added automatically.
KNOWN_NONEXISTENT_SRGS: dict[tuple[int, int, int, int], str] = {
    (49, 16, 3, 6): (
        "Bussemaker, Haemers, Mathon & Wilbrink, 'A (49,16,3,6) strongly regular "
        "graph does not exist', European J. Combin. 10 (1989) 413-418"
    ),
    (57, 14, 1, 4): (
        "Wilbrink & Brouwer, 'A (57,14,1) strongly regular graph does not exist', Indag. Math. 45 (1983) 117-121"
    ),
    # 64 < v <= 130: the impossible entries of Brouwer's table that pass every condition above
    (75, 32, 10, 16): (
        "Azarija & Marc, 'There is no (75,32,10,16) strongly regular graph', Linear Algebra Appl. 557 (2018) 62-83"
    ),
    (76, 21, 2, 7): (
        "Haemers, 'There exists no (76,21,2,7) strongly regular graph', in Finite Geometry and "
        "Combinatorics, LMS Lecture Note Ser. 191, CUP 1993, 175-176"
    ),
    (76, 30, 8, 14): (
        "Bondarenko, Prymak & Radchenko, 'Non-existence of (76,30,8,14) strongly regular graph', "
        "Linear Algebra Appl. 527 (2017) 53-72"
    ),
    (76, 35, 18, 14): (
        "its complement (76,40,18,24) has k = 2 mu, so it would descend from a regular two-graph on "
        "77 points, and a regular two-graph on n > 2 points has n even "
        "(Brouwer & Haemers, Spectra of Graphs, 2012, §10.3; theory §20.6)"
    ),
    (95, 40, 12, 20): (
        "Azarija & Marc, 'There is no (95,40,12,20) strongly regular graph', J. Combin. Des. 28 (2020) 294-306"
    ),
    (96, 38, 10, 18): (
        "Degraer, 'Isomorph-free exhaustive generation algorithms for association schemes', "
        "PhD thesis, Ghent University (2007)"
    ),
    (96, 45, 24, 18): (
        "its complement (96,50,22,30) has k = 2 mu, so it would descend from a regular two-graph on "
        "97 points, and a regular two-graph on n > 2 points has n even "
        "(Brouwer & Haemers, Spectra of Graphs, 2012, §10.3; theory §20.6)"
    ),
}


def complement_parameters(v: int, k: int, lam: int, mu: int) -> tuple[int, int, int, int]:
    """Parameters of the complement of an SRG(v, k, lam, mu).

    ``(v, v - k - 1, v - 2 - 2k + mu, v - 2k + lam)`` (count common
    non-neighbours by inclusion-exclusion).

    >>> complement_parameters(10, 3, 0, 1)
    (10, 6, 3, 4)
    """
    v, k, lam, mu = (check_int(name, x) for name, x in (("v", v), ("k", k), ("lam", lam), ("mu", mu)))
    return (v, v - k - 1, v - 2 - 2 * k + mu, v - 2 * k + lam)


def is_sum_of_two_squares(n: int) -> bool:
    """True iff ``n = a^2 + b^2`` for integers a, b (n >= 0).

    >>> [n for n in range(1, 30) if not is_sum_of_two_squares(n)][:6]
    [3, 6, 7, 11, 12, 14]
    >>> is_sum_of_two_squares(10 ** 18 + 2 * 10 ** 9 + 5), is_sum_of_two_squares(3 * 10 ** 18)
    (True, False)
    """
    n = check_int("n", n, minimum=0)
    if n < 10**6:  # direct search: sqrt(n) steps
        a = 0
        while a * a <= n:
            b = isqrt(n - a * a)
            if b * b == n - a * a:
                return True
            a += 1
        return False
    # Fermat / Euler: n > 0 is a sum of two squares iff every prime p = 3 (mod 4) divides it to an even power

    return all(p % 4 != 3 or e % 2 == 0 for p, e in sympy.factorint(n).items())  # Pollard rho: fast at any size


def _validate(v: Any, k: Any, lam: Any, mu: Any) -> tuple[int, int, int, int]:
    v = check_int("v", v, minimum=3)
    k = check_int("k", k, minimum=1)
    if k > v - 2:
        raise InvalidArgumentError(
            "k",
            f"must satisfy 1 <= k <= v - 2 = {v - 2} (complete and edgeless graphs "
            f"are not considered strongly regular), got {k}",
        )
    lam = check_int("lam", lam, minimum=0)
    mu = check_int("mu", mu, minimum=0)
    return v, k, lam, mu


@dataclass(frozen=True)
class SRGCondition:
    """One necessary condition: its name, whether it holds, and a one-line detail."""

    name: str
    holds: bool | None
    detail: str


@dataclass(frozen=True)
class SRGFeasibility:
    """Report of :func:`srg_feasibility`.

    ``conditions`` lists every condition in the order of
    :data:`CONDITION_NAMES`; a condition that cannot be evaluated because an
    earlier one failed has ``holds = None``.  ``eigenvalues`` is
    ``((k, 1), (r, f), (s, g))`` when the multiplicities are integral, else None.
    """

    params: tuple[int, int, int, int]
    conditions: tuple[SRGCondition, ...]
    eigenvalues: tuple | None = None
    conference: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        """True iff no condition fails (unevaluated ones count as passed only if none failed)."""
        return all(c.holds is not False for c in self.conditions)

    @property
    def violated(self) -> SRGCondition | None:
        """The first failing condition, or None."""
        for c in self.conditions:
            if c.holds is False:
                return c
        return None

    def as_dict(self) -> dict[str, Any]:
        """``{condition name: holds}`` plus ``"feasible"``."""
        d: dict[str, Any] = {c.name: c.holds for c in self.conditions}
        d["feasible"] = self.feasible
        return d

    def raise_if_infeasible(self) -> None:
        """Raise :class:`ImpossibleParametersError` naming the first failing condition."""
        c = self.violated
        if c is not None:
            raise ImpossibleParametersError(c.name, f"(v, k, lam, mu) = {self.params}: {c.detail}")

    def __str__(self) -> str:
        lines = [f"SRG{self.params}: {'feasible' if self.feasible else 'infeasible'}"]
        for c in self.conditions:
            mark = {True: "ok  ", False: "FAIL", None: "n/a "}[c.holds]
            lines.append(f"  [{mark}] {c.name}: {c.detail}")
        return "\n".join(lines)


class _QuadraticSurd:
    """Exact number ``a + b sqrt(D)`` (a, b rational, D > 0 a fixed non-square integer)."""

    __slots__ = ("a", "b", "D")

    def __init__(self, a, b, D: int):
        self.a, self.b, self.D = Fraction(a), Fraction(b), D

    def _lift(self, o):
        return o if isinstance(o, _QuadraticSurd) else _QuadraticSurd(o, 0, self.D)

    def __add__(self, o):
        o = self._lift(o)
        return _QuadraticSurd(self.a + o.a, self.b + o.b, self.D)

    __radd__ = __add__

    def __sub__(self, o):
        o = self._lift(o)
        return _QuadraticSurd(self.a - o.a, self.b - o.b, self.D)

    def __rsub__(self, o):
        return self._lift(o) - self

    def __mul__(self, o):
        o = self._lift(o)
        return _QuadraticSurd(self.a * o.a + self.b * o.b * self.D, self.a * o.b + self.b * o.a, self.D)

    __rmul__ = __mul__

    def __pow__(self, n: int):
        out = _QuadraticSurd(1, 0, self.D)
        for _ in range(n):
            out = out * self
        return out

    def sign(self) -> int:
        """Sign of a + b sqrt(D), exactly (compare a^2 with b^2 D)."""
        sa = (self.a > 0) - (self.a < 0)
        sb = (self.b > 0) - (self.b < 0)
        if sa == sb or sb == 0:
            return sa
        if sa == 0:
            return sb
        big = self.a * self.a - self.b * self.b * self.D  # sign of |a| - |b| sqrt(D)
        return sa if big > 0 else (sb if big < 0 else 0)

    def to_sympy(self):
        return sympy.Rational(self.a.numerator, self.a.denominator) + sympy.Rational(
            self.b.numerator, self.b.denominator
        ) * sympy.sqrt(self.D)

    def __str__(self) -> str:
        return str(self.to_sympy())


def _le(x, y) -> bool:
    """Exact x <= y for ints, Fractions or :class:`_QuadraticSurd`."""
    d = y - x
    return d.sign() >= 0 if isinstance(d, _QuadraticSurd) else d >= 0


def _fmt(x) -> str:
    return str(x)


def _public(x):
    """Eigenvalue as returned to users: int, or a sympy surd when irrational."""
    return x.to_sympy() if isinstance(x, _QuadraticSurd) else x


def srg_feasibility(v: int, k: int, lam: int, mu: int) -> SRGFeasibility:
    """Check the necessary conditions for an SRG(v, k, lam, mu), exactly.

    Parameters
    ----------
    v, k, lam, mu : int
        Candidate parameters; ``1 <= k <= v - 2``, ``lam, mu >= 0``.

    Returns
    -------
    SRGFeasibility
        Every condition of :data:`CONDITION_NAMES` with whether it holds.

    Raises
    ------
    InvalidArgumentError
        If an argument is not an integer or out of range (names it).

    Examples
    --------
    >>> rep = srg_feasibility(28, 9, 0, 4)
    >>> rep.feasible, rep.violated.name
    (False, 'Krein')
    >>> rep.as_dict()["absolute bound"]
    False
    >>> srg_feasibility(10, 3, 0, 1).eigenvalues
    ((3, 1), (1, 5), (-2, 4))
    """
    v, k, lam, mu = _validate(v, k, lam, mu)
    conds: list[SRGCondition] = []

    def add(name: str, holds: bool | None, detail: str) -> None:
        conds.append(SRGCondition(name, holds, detail))

    def rest_na(reason: str) -> None:
        for name in CONDITION_NAMES[len(conds) :]:
            add(name, None, f"not evaluated ({reason})")

    # 1. basic bounds
    basic = (
        lam <= k - 1
        and mu <= k
        and (mu > 0 or (lam == k - 1 and v % (k + 1) == 0))
        and (mu < k or (lam == 2 * k - v and v % (v - k) == 0))
    )
    add(
        "basic bounds",
        basic,
        "0 <= lam <= k-1, 0 <= mu <= k; mu = 0 only for disjoint cliques (lam = k-1, (k+1) | v) and "
        "mu = k only for complete multipartite graphs (lam = 2k - v, (v-k) | v)"
        + ("" if basic else f"; violated by lam={lam}, mu={mu}"),
    )
    if not basic:
        rest_na("basic bounds fail")
        return SRGFeasibility((v, k, lam, mu), tuple(conds))

    # 2. edge count between N(x) and the non-neighbours of x
    lhs, rhs = k * (k - lam - 1), (v - k - 1) * mu
    add("k(k-lam-1) = (v-k-1)mu", lhs == rhs, f"{lhs} {'==' if lhs == rhs else '!='} {rhs}")
    if lhs != rhs:
        rest_na("edge count fails")
        return SRGFeasibility((v, k, lam, mu), tuple(conds))

    # 3. eigenvalues and multiplicities
    D = (lam - mu) ** 2 + 4 * (k - mu)
    t = 2 * k + (v - 1) * (lam - mu)
    conference = t == 0
    sq = isqrt(D)
    r: int | _QuadraticSurd
    s: int | _QuadraticSurd
    f: Fraction | None
    g: Fraction | None
    if sq * sq == D:  # r, s are integers: D = (lam-mu)^2 mod 4, so lam - mu +- sq is even
        r, s = (lam - mu + sq) // 2, (lam - mu - sq) // 2
    else:
        r = _QuadraticSurd(Fraction(lam - mu, 2), Fraction(1, 2), D)
        s = _QuadraticSurd(Fraction(lam - mu, 2), Fraction(-1, 2), D)
    if conference:
        f = g = Fraction(v - 1, 2)
    elif sq * sq == D:
        f = (Fraction(v - 1) - Fraction(t, sq)) / 2
        g = (Fraction(v - 1) + Fraction(t, sq)) / 2
    else:
        f = g = None  # irrational multiplicities
    integral = f is not None and g is not None and f.denominator == 1 and g.denominator == 1 and f >= 0 and g >= 0
    if f is None or g is None:
        detail = f"D = {D} is not a square and 2k + (v-1)(lam-mu) = {t} != 0, so f, g are irrational"
    else:
        detail = f"r = {r}, s = {s}, f = {f}, g = {g}" + (" (conference graph)" if conference else "")
    add("integrality of multiplicities", integral, detail)
    if not integral or f is None or g is None:
        rest_na("multiplicities are not integral")
        return SRGFeasibility((v, k, lam, mu), tuple(conds), conference=conference)
    fi, gi = int(f), int(g)
    eig = ((k, 1), (_public(r), fi), (_public(s), gi))

    # 4. conference graphs: v must be a sum of two squares
    if conference:
        ok = is_sum_of_two_squares(v)
        add(
            "conference graph: v is a sum of two squares",
            ok,
            f"v = {v} {'is' if ok else 'is not'} a sum of two squares (Belevitch; van Lint-Seidel)",
        )
    else:
        add("conference graph: v is a sum of two squares", True, "not a conference graph")

    # 5. Krein conditions
    k1 = (r + 1) * (k + r + 2 * r * s)
    k1r = (k + r) * (s + 1) ** 2
    k2 = (s + 1) * (k + s + 2 * r * s)
    k2r = (k + s) * (r + 1) ** 2
    c1, c2 = _le(k1, k1r), _le(k2, k2r)
    add(
        "Krein",
        c1 and c2,
        f"(r+1)(k+r+2rs) = {_fmt(k1)} <= (k+r)(s+1)^2 = {_fmt(k1r)}: {c1}; "
        f"(s+1)(k+s+2rs) = {_fmt(k2)} <= (k+s)(r+1)^2 = {_fmt(k2r)}: {c2}",
    )

    # 6. absolute bound (Delsarte-Goethals-Seidel); it needs primitivity: the imprimitive
    #    graphs (mu = 0: disjoint cliques, mu = k: complete multipartite) exist and may violate it
    bf, bg = fi * (fi + 3) // 2, gi * (gi + 3) // 2
    if 0 < mu < k:
        ab = v <= bf and v <= bg
        add("absolute bound", ab, f"v = {v} <= f(f+3)/2 = {bf}: {v <= bf}; v <= g(g+3)/2 = {bg}: {v <= bg}")
    else:
        add("absolute bound", True, "not applicable: imprimitive graph (mu = 0 or mu = k)")

    # 7. named non-existence results
    key = (v, k, lam, mu)
    ref = KNOWN_NONEXISTENT_SRGS.get(key) or KNOWN_NONEXISTENT_SRGS.get(complement_parameters(*key))
    if ref is not None:
        add("known nonexistence", False, ref)
    else:
        add("known nonexistence", True, "no known nonexistence result recorded by gcsim")
    return SRGFeasibility(key, tuple(conds), eigenvalues=eig, conference=conference)


def srg_eigenvalues(v: int, k: int, lam: int, mu: int) -> tuple:
    """Exact spectrum ``((k, 1), (r, f), (s, g))`` of an SRG(v, k, lam, mu), ``r > s``.

    Irrational ``r, s`` (conference graphs with non-square ``v``) are sympy
    expressions.  Raises :class:`ImpossibleParametersError` if the multiplicities
    are not integral.

    >>> srg_eigenvalues(5, 2, 0, 1)
    ((2, 1), (-1/2 + sqrt(5)/2, 2), (-sqrt(5)/2 - 1/2, 2))
    """
    rep = srg_feasibility(v, k, lam, mu)
    if rep.eigenvalues is None:  # only when the multiplicities are not integral: infeasible
        rep.raise_if_infeasible()
        raise AssertionError("parameters without a spectrum passed the feasibility checks")  # pragma: no cover
    return rep.eigenvalues


def check_srg_parameters(v: int, k: int, lam: int, mu: int) -> SRGFeasibility:
    """Return the feasibility report, raising :class:`ImpossibleParametersError` if infeasible.

    >>> check_srg_parameters(21, 10, 4, 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.ImpossibleParametersError: impossible parameters (conference graph: v is a sum of two squares): ...
    """
    rep = srg_feasibility(v, k, lam, mu)
    rep.raise_if_infeasible()
    return rep
