"""gcsim's built-in families of strongly regular graphs, as registered objects (docs/theory.md §20).

Each family below is one :class:`~gcsim.combinatorics.families.SRGFamily`: its members up to
a bound (the forward listing of :func:`gcsim.combinatorics.buildable_srgs`) and a fast solver
for the members on exactly v vertices (integer roots, divisors, binary searches), which
:func:`gcsim.srg` uses for any v without enumerating smaller graphs.  The registry
(:mod:`gcsim.combinatorics.families`) checks nothing at run time; ``tests/test_family_registry.py``
checks each fast solver against the generic search.  Complements are added by the catalogue.

The order of the families (their ``priority``) is the order in which they name a
construction when two build the same parameters: sporadic graphs first (their names are
the most informative), imprimitive graphs last.

>>> from gcsim.combinatorics.families import registered_families
>>> [f.name for f in registered_families("srg")][:4]
['sporadic graphs', 'Paley graphs', 'triangular graphs', 'Latin square graphs']
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from math import isqrt

import numpy as np
import sympy

from .._validation import check_int
from ..errors import InvalidArgumentError, NotConstructibleError
from .bibd import bibd
from .difference_families import develop
from .families import Member, SRGFamily
from .fields import is_prime_power
from .srg_cayley import menon_graph_36, paley_graph
from .srg_combinatorial import block_graph, complete_multipartite_graph, triangular_graph
from .srg_feasibility import complement_parameters
from .srg_geometric import (
    MOLS_TABLE,
    affine_polar_graph,
    hyperoval_gq_graph,
    latin_square_graph,
    polar_graph,
    polar_graph_parameters,
)
from .srg_graph import StronglyRegularGraph
from .srg_sporadic import (
    clebsch_graph,
    gewirtz_graph,
    higman_sims_graph,
    hoffman_singleton_graph,
    m22_graph,
    petersen_graph,
    schlafli_graph,
)
from .steiner import steiner_triple_system_blocks

__all__ = ["steiner_system_blocks"]


def _root(x: int, n: int) -> int:
    """``floor(x^(1/n))`` exactly (sympy's integer root)."""
    return int(sympy.integer_nthroot(x, n)[0])


# ----------------------------------------------------------------------------------------------
# sporadic graphs
# ----------------------------------------------------------------------------------------------

_SPORADIC = [
    ((10, 3, 0, 1), "Petersen graph", petersen_graph),
    ((16, 5, 0, 2), "Clebsch graph", clebsch_graph),
    ((27, 16, 10, 8), "Schläfli graph", schlafli_graph),
    ((36, 14, 4, 6), "Menon difference set graph", menon_graph_36),
    ((50, 7, 0, 1), "Hoffman-Singleton graph", hoffman_singleton_graph),
    ((56, 10, 0, 2), "Gewirtz graph", gewirtz_graph),
    ((77, 16, 0, 4), "M22 graph", m22_graph),
    ((100, 22, 0, 6), "Higman-Sims graph", higman_sims_graph),
]


class SporadicGraphs(SRGFamily):
    """Eight sporadic graphs (Petersen, Clebsch, Schläfli, Menon 36, Hoffman-Singleton, Gewirtz, M22, Higman-Sims)."""

    name = "sporadic graphs"
    parameters = ()
    construction = "Petersen, Clebsch, Schläfli, Menon (36), Hoffman-Singleton, Gewirtz, M22, Higman-Sims (BvM ch. 10)"
    example = (10, 3, 0, 1)
    priority = 10

    def members(self, max_v: int) -> Iterator[Member]:
        for params, name, fn in _SPORADIC:
            if params[0] <= max_v:
                yield Member(params, name, fn)

    def members_with_v(self, v, target=None):
        for params, name, fn in _SPORADIC:
            if params[0] == v:
                yield Member(params, name, fn)


# ----------------------------------------------------------------------------------------------
# Paley, triangular, Latin square graphs
# ----------------------------------------------------------------------------------------------


def _paley(q: int) -> Member:
    return Member((q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4), f"Paley graph P({q})", partial(paley_graph, q))


class PaleyGraphs(SRGFamily):
    """Paley graphs P(q), q = 1 mod 4 a prime power: SRG(q, (q-1)/2, (q-5)/4, (q-1)/4)."""

    name = "Paley graphs"
    parameters = ("q",)
    construction = "Cayley graph of GF(q) on the nonzero squares, q = 1 mod 4 (BvM §1.1.9)"
    example = (13, 6, 2, 3)
    priority = 20

    def members(self, max_v):
        for q in range(5, max_v + 1, 4):
            if is_prime_power(q):
                yield _paley(q)

    def members_with_v(self, v, target=None):
        if v >= 5 and v % 4 == 1 and is_prime_power(v):
            yield _paley(v)


def _triangular(n: int) -> Member:
    return Member((n * (n - 1) // 2, 2 * (n - 2), n - 2, 4), f"triangular graph T({n})", partial(triangular_graph, n))


class TriangularGraphs(SRGFamily):
    """Triangular graphs T(n) = J(n, 2), n >= 5: SRG(n(n-1)/2, 2(n-2), n-2, 4)."""

    name = "triangular graphs"
    parameters = ("n",)
    construction = "2-subsets of an n-set, adjacent when they meet (BvM §1.1.7)"
    example = (10, 6, 3, 4)
    priority = 30

    def members(self, max_v):
        n = 5
        while n * (n - 1) // 2 <= max_v:
            yield _triangular(n)
            n += 1

    def members_with_v(self, v, target=None):
        n = (1 + isqrt(1 + 8 * v)) // 2
        if n >= 5 and n * (n - 1) // 2 == v:
            yield _triangular(n)


def _latin_squares(n: int) -> Iterator[Member]:
    for m in range(2, (n if is_prime_power(n) else min(n, 2 + max(1, len(MOLS_TABLE.get(n, ()))))) + 1):
        params = (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1))
        yield Member(
            params,
            f"lattice graph L2({n})" if m == 2 else f"Latin square graph LS_{m}({n})",
            partial(latin_square_graph, m, n),
        )


class LatinSquareGraphs(SRGFamily):
    """Latin square graphs LS_m(n) (m = 2: the lattice graph L2(n)), m <= n for prime powers n, else m <= 3
    (m <= 2 + the number of tabulated MOLS of order n, :data:`~gcsim.combinatorics.srg_geometric.MOLS_TABLE`)."""

    name = "Latin square graphs"
    parameters = ("m", "n")
    construction = "m - 2 mutually orthogonal Latin squares of order n (BvM §1.1.8, §8.4)"
    example = (9, 4, 1, 2)
    priority = 40

    def members(self, max_v):
        n = 2
        while n * n <= max_v:
            yield from _latin_squares(n)
            n += 1

    def members_with_v(self, v, target=None):
        n = isqrt(v)
        if n >= 2 and n * n == v:
            yield from _latin_squares(n)


# ----------------------------------------------------------------------------------------------
# polar graphs
# ----------------------------------------------------------------------------------------------

_POLAR_KINDS = ("Sp", "O", "O+", "O-", "U")
_POLAR_START = {"Sp": 4, "O": 5, "O+": 6, "O-": 6, "U": 4}


def _polar_v(kind: str, n: int, q: int) -> int:
    """Number of points of the polar space (the v of :func:`polar_graph_parameters`), no argument checks.

    Increasing in q for fixed (kind, n) (in r = sqrt(q) for "U"), which the binary search below uses.
    """
    if kind == "Sp" or kind == "O":
        d, e2 = (n // 2 if kind == "Sp" else (n - 1) // 2), 2
    elif kind == "O+":
        d, e2 = n // 2, 0
    elif kind == "O-":
        d, e2 = n // 2 - 1, 4
    else:
        d, e2 = (n // 2, 1) if n % 2 == 0 else ((n - 1) // 2, 3)
    x2 = 2 * d + e2 - 2
    qh = q ** (x2 // 2) if x2 % 2 == 0 else isqrt(q) ** x2
    return (q**d - 1) * (qh + 1) // (q - 1)


def _polar_with_v(kind: str, v: int) -> list[tuple[int, int]]:
    """All (q, n) with a polar graph of this kind on exactly v points, sorted by (q, n).

    For each n (stepping as the listing does) a binary search over q (over r = sqrt(q) for
    unitary spaces): O(log^2 v) evaluations instead of a loop over every q <= v^(1/3).
    """
    out = []
    n = _POLAR_START[kind]
    step = 1 if kind == "U" else 2
    while True:
        base = 2 if kind != "U" else 4
        if _polar_v(kind, n, base) > v:
            break
        lo, hi = (2, _root(v, 3) + 1) if kind != "U" else (2, _root(v, 6) + 2)
        while lo < hi:  # smallest x with v(x) >= v
            mid = (lo + hi) // 2
            qq = mid if kind != "U" else mid * mid
            if _polar_v(kind, n, qq) < v:
                lo = mid + 1
            else:
                hi = mid
        q = lo if kind != "U" else lo * lo
        if _polar_v(kind, n, q) == v and is_prime_power(q) and not (kind == "O" and q % 2 == 0):
            out.append((q, n))
        n += step
    return sorted(out)


def _polar(kind: str, n: int, q: int) -> Member:
    return Member(polar_graph_parameters(kind, n, q), f"polar graph {kind}({n},{q})", partial(polar_graph, kind, n, q))


class PolarGraphs(SRGFamily):
    """Collinearity graphs of the classical polar spaces Sp(n,q), O(n,q), O±(n,q), U(n,q) of rank >= 2."""

    name = "polar graphs"
    parameters = ("kind", "n", "q")
    construction = "points of a classical polar space, adjacent when collinear (BvM §2.5, Hubaut 1975)"
    example = (15, 6, 1, 3)
    priority = 50

    def members(self, max_v):
        for kind in _POLAR_KINDS:
            # v > q^3, except unitary spaces over GF(q), q = r^2: U(4, q) has v = (q + 1)(r^3 + 1) > q^2
            for q in range(2, _root(max_v, 2 if kind == "U" else 3) + 1):
                if not is_prime_power(q) or (kind == "U" and isqrt(q) ** 2 != q):
                    continue
                if kind == "O" and q % 2 == 0:
                    continue  # O(2d+1, 2^h) is isomorphic to Sp(2d, 2^h)
                n = _POLAR_START[kind]
                if polar_graph_parameters(kind, n, q)[0] > max_v:
                    continue
                while True:
                    try:
                        params = polar_graph_parameters(kind, n, q)
                    except InvalidArgumentError:
                        n += 1
                        continue
                    if params[0] > max_v:
                        break
                    yield _polar(kind, n, q)
                    n += 2 if kind != "U" else 1

    def members_with_v(self, v, target=None):
        for kind in _POLAR_KINDS:
            for q, n in _polar_with_v(kind, v):
                yield _polar(kind, n, q)


# ----------------------------------------------------------------------------------------------
# affine polar graphs, T2*(O)
# ----------------------------------------------------------------------------------------------


def _affine_polar(q: int, m: int) -> Iterator[Member]:
    for eps in (1, -1):
        k = (q**m - eps) * (q ** (m - 1) + eps)
        lam = q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2
        mu = q ** (m - 1) * (q ** (m - 1) + eps)
        yield Member(
            (q ** (2 * m), k, lam, mu),
            f"affine polar graph VO{'+' if eps == 1 else '-'}({2 * m},{q})",
            partial(affine_polar_graph, eps, m, q),
        )


class AffinePolarGraphs(SRGFamily):
    """Affine polar graphs VO±(2m, q), m >= 2: vectors of GF(q)^{2m}, adjacent when the difference is singular."""

    name = "affine polar graphs"
    parameters = ("eps", "m", "q")
    construction = "GF(q)^{2m} with a nondegenerate quadratic form of type eps (BvM §3.3.1)"
    example = (16, 9, 4, 6)
    priority = 60

    def members(self, max_v):
        for q in range(2, _root(max_v, 4) + 1):
            if not is_prime_power(q):
                continue
            m = 2
            while q ** (2 * m) <= max_v:
                yield from _affine_polar(q, m)
                m += 1

    def members_with_v(self, v, target=None):
        found = []
        m = 2
        while 2 ** (2 * m) <= v:
            q = _root(v, 2 * m)
            if q ** (2 * m) == v and is_prime_power(q):
                found.append((q, m))
            m += 1
        for q, m in sorted(found):
            yield from _affine_polar(q, m)


def _gq(q: int) -> Member:
    return Member(
        (q**3, (q - 1) * (q + 2), q - 2, q + 2), f"GQ({q - 1},{q + 1}) = T2*(O)", partial(hyperoval_gq_graph, q)
    )


class HyperovalGQGraphs(SRGFamily):
    """Collinearity graphs of the generalized quadrangles T2*(O) = GQ(q-1, q+1), q = 2^h >= 4."""

    name = "T2*(O) generalized quadrangles"
    parameters = ("q",)
    construction = "Ahrens-Szekeres / Hall: points of AG(3,q) off a hyperoval's plane (Payne-Thas §3.1.3)"
    example = (64, 18, 2, 6)
    priority = 70

    def members(self, max_v):
        q = 4
        while q**3 <= max_v:
            yield _gq(q)
            q *= 2

    def members_with_v(self, v, target=None):
        q = _root(v, 3)
        if q >= 4 and q**3 == v and q & (q - 1) == 0:
            yield _gq(q)


# ----------------------------------------------------------------------------------------------
# block graphs of Steiner systems S(2, K, V)
# ----------------------------------------------------------------------------------------------

#: Difference families developing into Steiner systems (used when
#: :mod:`gcsim.combinatorics.steiner` is unavailable, and for S(2,4,25)).
_DIFFERENCE_FAMILIES = {
    (3, 13): ([[0, 1, 4], [0, 2, 7]], (13,)),
    (3, 19): ([[0, 1, 4], [0, 2, 9], [0, 5, 11]], (19,)),
    # (25, 4, 1) difference family in Z_5 x Z_5 (found by exhaustive search, checked in tests)
    (4, 25): ([[(0, 0), (0, 1), (1, 0), (2, 2)], [(0, 0), (0, 2), (1, 3), (3, 2)]], (5, 5)),
}


def _develop(base_blocks, moduli: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The distinct translates of base blocks (elements as digit tuples or ints) in Z_{m_1} x ... x Z_{m_t}.

    Points are numbered in mixed radix, first factor most significant (as :func:`develop` does).
    """
    weights = [int(np.prod(moduli[i + 1 :])) for i in range(len(moduli))]
    codes = [
        [sum(d * w for d, w in zip(np.atleast_1d(x).tolist(), weights, strict=True)) for x in base]
        for base in base_blocks
    ]
    return sorted(set(develop(moduli, codes)))


def steiner_system_blocks(K: int, V: int) -> list[tuple[int, ...]]:
    """Blocks of a Steiner system S(2, K, V) that gcsim can produce.

    * K = 3 (Steiner triple systems, V = 1, 3 mod 6): from
      :mod:`gcsim.combinatorics.steiner` (Bose / Skolem) when available, else from
      a built-in cyclic difference family (V = 13, 19);
    * K = 4, V = 25: a difference family in Z_5 x Z_5;
    * otherwise any S(2, K, V) = 2-(V, K, 1) design that
      :func:`gcsim.combinatorics.bibd.bibd` can build (when that module is present).

    Raises :class:`NotConstructibleError` otherwise.

    >>> len(steiner_system_blocks(3, 13)), len(steiner_system_blocks(4, 25))
    (26, 50)
    """
    K = check_int("K", K, minimum=2)
    V = check_int("V", V, minimum=K)
    if K == 3:
        return [tuple(b) for b in steiner_triple_system_blocks(V)]
    if (K, V) in _DIFFERENCE_FAMILIES:
        base, mod = _DIFFERENCE_FAMILIES[(K, V)]
        return _develop(base, mod)
    if bibd(V, K, 1, existence=True) is True:
        return [tuple(b) for b in bibd(V, K, 1).blocks]
    raise NotConstructibleError(f"gcsim has no S(2,{K},{V}) Steiner system")


def _steiner_available(K: int, V: int) -> bool:
    if (K, V) in _DIFFERENCE_FAMILIES:
        return True
    if K == 3 and V % 6 in (1, 3):
        return True
    try:
        return bibd(V, K, 1, existence=True) is True
    except Exception:  # noqa: BLE001 - an existence query that fails means "not available" here
        return False


def _steiner_candidates(max_v: int):
    """Admissible (K, V), K >= 3, whose S(2, K, V) has V < b <= max_v blocks (not a projective plane)."""
    K = 3
    while K * (K - 1) <= 2 * max_v:
        V = K * K  # b > V needs V > K^2 - K + 1
        while True:
            if (V - 1) % (K - 1) == 0 and (V * (V - 1)) % (K * (K - 1)) == 0:
                b = V * (V - 1) // (K * (K - 1))
                if b > max_v:
                    break
                if b > V:
                    yield K, V
            elif V * (V - 1) // (K * (K - 1)) > max_v:
                break
            V += 1
        K += 1


def _block_graph_params(K: int, V: int) -> tuple[int, int, int, int]:
    b = V * (V - 1) // (K * (K - 1))
    r = (V - 1) // (K - 1)
    return (b, K * (r - 1), r - 2 + (K - 1) ** 2, K * K)


def _steiner_block_graph(K: int, V: int) -> StronglyRegularGraph:
    """The block graph of gcsim's S(2, K, V)."""
    return block_graph(steiner_system_blocks(K, V), name=f"block graph of S(2,{K},{V})")


def _block(K: int, V: int) -> Member:
    return Member(_block_graph_params(K, V), f"block graph of S(2,{K},{V})", partial(_steiner_block_graph, K, V))


#: block graphs of S(2, K, V) are recognised for K <= this bound (an O(K) loop per question)
_MAX_STEINER_K = 1 << 20


def _steiner_range(v: int) -> range:
    """K = 3, 4, ... with K (K + 1) <= v (b > V >= K^2 gives v = b >= K (K + 1)), at most _MAX_STEINER_K."""
    return range(3, min(isqrt(v), _MAX_STEINER_K) + 1)


class SteinerBlockGraphs(SRGFamily):
    """Block graphs of the Steiner systems S(2, K, V) gcsim builds (blocks adjacent when they meet), b > V.

    With a lookup target only the K that can decide it are tried: these graphs have
    ``mu = K^2``, so K is read off the target's mu or its complement's (no 2^20 loop over K).
    """

    name = "block graphs of Steiner systems"
    parameters = ("K", "V")
    construction = "blocks of an S(2,K,V), adjacent when they meet (BvM §1.1.10, Goethals-Seidel 1970)"
    example = (26, 15, 8, 9)
    priority = 80

    def members(self, max_v):
        for K, V in _steiner_candidates(max_v):
            if _steiner_available(K, V):
                yield _block(K, V)

    def members_with_v(self, v, target=None):
        if target is not None:
            comp = complement_parameters(*target)
            ks: range | list[int] = sorted(
                {isqrt(p[3]) for p in (target, comp) if p[3] >= 0 and isqrt(p[3]) ** 2 == p[3]}
            )
        else:
            ks = _steiner_range(v)
        for K in ks:
            if K < 3 or K * (K + 1) > v:
                continue
            disc = 1 + 4 * v * K * (K - 1)  # V (V - 1) = v K (K - 1)
            root = isqrt(disc)
            if root * root == disc and (1 + root) % 2 == 0:
                V = (1 + root) // 2
                if V >= K * K and (V - 1) % (K - 1) == 0 and v > V and _steiner_available(K, V):
                    yield _block(K, V)


# ----------------------------------------------------------------------------------------------
# complete multipartite graphs
# ----------------------------------------------------------------------------------------------


def _multipartite(m: int, n: int) -> Member:
    return Member(
        (m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n),
        f"complete multipartite K_{{{m}x{n}}}",
        partial(complete_multipartite_graph, m, n),
    )


class CompleteMultipartiteGraphs(SRGFamily):
    """Complete multipartite graphs K_{m x n} (imprimitive; complements: m disjoint K_n), m, n >= 2.

    With a lookup target only ``n = v - k`` (of the target or its complement) is tried.
    """

    name = "complete multipartite graphs"
    parameters = ("m", "n")
    construction = "m classes of n vertices, adjacent across classes (BvM §1.1.1)"
    example = (6, 4, 2, 4)
    priority = 900

    def members(self, max_v):
        for n in range(2, max_v // 2 + 1):
            for m in range(2, max_v // n + 1):
                yield _multipartite(m, n)

    def members_with_v(self, v, target=None):
        if target is not None:
            ns = sorted({n for n in (v - target[1], target[1] + 1) if 2 <= n <= v // 2 and v % n == 0})
        else:
            ns = [int(d) for d in sympy.divisors(v)]
        for n in ns:
            m = v // n
            if n >= 2 and m >= 2:
                yield _multipartite(m, n)


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (
    SporadicGraphs(),
    PaleyGraphs(),
    TriangularGraphs(),
    LatinSquareGraphs(),
    PolarGraphs(),
    AffinePolarGraphs(),
    HyperovalGQGraphs(),
    SteinerBlockGraphs(),
    CompleteMultipartiteGraphs(),
)
