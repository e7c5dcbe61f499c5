"""Strongly regular graphs SRG(v, k, lambda, mu) as gradient-coding assignments (docs/theory.md §20).

Entry points:

* :func:`srg` -- build a verified :class:`StronglyRegularGraph` with given
  parameters, or answer whether one exists (``existence=True``: True / False /
  None = unknown);
* :func:`srg_feasibility` -- the necessary conditions, each named, with whether it holds;
* :func:`buildable_srgs` -- every parameter set gcsim can build up to ``max_v``;
* the family constructors of ``srg_cayley``, ``srg_combinatorial``, ``srg_geometric``, ``srg_sporadic``
  (re-exported here): Paley, triangular, lattice, Latin square, polar,
  generalized quadrangle, affine polar, two-intersection, block graphs of
  Steiner systems, Petersen, Clebsch, Shrikhande, Schläfli,
  Hoffman-Singleton, Gewirtz, complements.

Theory and proofs: ``docs/theory/20_srg.md``; guide: ``docs/guides/srg.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache, partial
from math import isqrt

import numpy as np
import sympy

from .. import limits
from .._validation import check_bool, check_dense_size, check_int
from ..errors import InvalidArgumentError, NotConstructibleError, VerificationError
from .bibd import bibd
from .difference_families import develop
from .fields import is_prime_power
from .srg_cayley import menon_graph_36, paley_graph
from .srg_combinatorial import (
    block_graph,
    complete_multipartite_graph,
    triangular_graph,
)
from .srg_feasibility import (
    complement_parameters,
    srg_feasibility,
)
from .srg_geometric import (
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
    hoffman_singleton_graph,
    petersen_graph,
    schlafli_graph,
)
from .steiner import steiner_triple_system_blocks

__all__ = [
    "srg",
    "srg_feasibility",
    "buildable_srgs",
    "srg_construction_name",
    "steiner_system_blocks",
    "KNOWN_EXISTING",
]

#: Parameter sets (k <= (v-1)/2 representative; complements implied) for which a graph
#: is known to exist although gcsim cannot build it, with a reference.
KNOWN_EXISTING: dict[tuple[int, int, int, int], str] = {
    (45, 22, 10, 11): (
        "Mathon, 'Symmetric conference matrices of order pq^2 + 1', Canad. J. Math. 30 "
        "(1978) 321-331 (pseudo-cyclic conference graph)"
    ),
}


# ----------------------------------------------------------------------------------------------
# Steiner systems S(2, K, V) used for block graphs
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


# ----------------------------------------------------------------------------------------------
# the catalogue of buildable parameter sets
# ----------------------------------------------------------------------------------------------


def _steiner_block_graph(K: int, V: int) -> StronglyRegularGraph:
    """The block graph of gcsim's S(2, K, V)."""
    return block_graph(steiner_system_blocks(K, V), name=f"block graph of S(2,{K},{V})")


def _complement_of(build: Callable[[], StronglyRegularGraph]) -> StronglyRegularGraph:
    return build().complement()


@dataclass(frozen=True)
class _Entry:
    params: tuple[int, int, int, int]
    name: str
    build: Callable[[], StronglyRegularGraph]


_SPORADIC = [
    ((10, 3, 0, 1), "Petersen graph", petersen_graph),
    ((16, 5, 0, 2), "Clebsch graph", clebsch_graph),
    ((27, 16, 10, 8), "Schläfli graph", schlafli_graph),
    ((36, 14, 4, 6), "Menon difference set graph", menon_graph_36),
    ((50, 7, 0, 1), "Hoffman-Singleton graph", hoffman_singleton_graph),
    ((56, 10, 0, 2), "Gewirtz graph", gewirtz_graph),
]

_POLAR_START = {"Sp": 4, "O": 5, "O+": 6, "O-": 6, "U": 4}


def _family_entries(max_v: int):
    """Yield catalogue entries (params, name, builder) with v <= max_v, by priority."""
    # sporadic graphs first (their names are the most informative)
    for params, name, fn in _SPORADIC:
        if params[0] <= max_v:
            yield _Entry(params, name, fn)
    # Paley graphs
    for q in range(5, max_v + 1, 4):
        if is_prime_power(q):
            yield _Entry((q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4), f"Paley graph P({q})", partial(paley_graph, q))
    # triangular graphs T(n)
    n = 5
    while n * (n - 1) // 2 <= max_v:
        yield _Entry(
            (n * (n - 1) // 2, 2 * (n - 2), n - 2, 4), f"triangular graph T({n})", partial(triangular_graph, n)
        )
        n += 1
    # Latin square graphs LS_m(n) (m = 2: lattice graph)
    n = 2
    while n * n <= max_v:
        for m in range(2, (n if is_prime_power(n) else min(n, 3)) + 1):
            params = (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1))
            yield _Entry(
                params,
                f"lattice graph L2({n})" if m == 2 else f"Latin square graph LS_{m}({n})",
                partial(latin_square_graph, m, n),
            )
        n += 1
    # collinearity graphs of classical polar spaces of rank >= 2
    for kind in ("Sp", "O", "O+", "O-", "U"):
        # v > q^3, except unitary spaces over GF(q), q = r^2: U(4, q) has v = (q + 1)(r^3 + 1) > q^2
        for q in range(2, _root(max_v, 2 if kind == "U" else 3) + 1):
            if not is_prime_power(q) or (kind == "U" and isqrt(q) ** 2 != q):
                continue
            if kind == "O" and q % 2 == 0:
                continue  # O(2d+1, 2^h) is isomorphic to Sp(2d, 2^h)
            n = {"Sp": 4, "O": 5, "O+": 6, "O-": 6, "U": 4}[kind]
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
                yield _Entry(params, f"polar graph {kind}({n},{q})", partial(polar_graph, kind, n, q))
                n += 2 if kind != "U" else 1
    # affine polar graphs VO^eps(2m, q)
    for q in range(2, _root(max_v, 4) + 1):
        if not is_prime_power(q):
            continue
        m = 2
        while q ** (2 * m) <= max_v:
            for eps in (1, -1):
                k = (q**m - eps) * (q ** (m - 1) + eps)
                lam = q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2
                mu = q ** (m - 1) * (q ** (m - 1) + eps)
                sign = "+" if eps == 1 else "-"
                yield _Entry(
                    (q ** (2 * m), k, lam, mu),
                    f"affine polar graph VO{sign}({2 * m},{q})",
                    partial(affine_polar_graph, eps, m, q),
                )
            m += 1
    # GQ(q-1, q+1) = T2*(O)
    q = 4
    while q**3 <= max_v:
        yield _Entry(
            (q**3, (q - 1) * (q + 2), q - 2, q + 2), f"GQ({q - 1},{q + 1}) = T2*(O)", partial(hyperoval_gq_graph, q)
        )
        q *= 2
    # block graphs of Steiner systems S(2, K, V)
    for K, V in _steiner_candidates(max_v):
        params = _block_graph_params(K, V)
        if _steiner_available(K, V):
            yield _Entry(params, f"block graph of S(2,{K},{V})", partial(_steiner_block_graph, K, V))
    # imprimitive graphs: complete multipartite K_{m x n}
    for n in range(2, max_v // 2 + 1):
        for m in range(2, max_v // n + 1):
            yield _Entry(
                (m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n),
                f"complete multipartite K_{{{m}x{n}}}",
                partial(complete_multipartite_graph, m, n),
            )


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

    For each n (stepping as the catalogue does) a binary search over q (over r = sqrt(q) for
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


#: block graphs of S(2, K, V) are recognised for K <= this bound (an O(K) loop per question)
_MAX_STEINER_K = 1 << 20


def _root(x: int, n: int) -> int:
    """``floor(x^(1/n))`` exactly (sympy's integer root)."""
    return int(sympy.integer_nthroot(x, n)[0])


def _divisors(n: int) -> list[int]:
    """Sorted divisors of n >= 1 (trial division up to 10^6, then sympy's factorization)."""
    if n <= 10**12:
        small = [d for d in range(1, isqrt(n) + 1) if n % d == 0]
        return sorted(set(small + [n // d for d in small]))
    from sympy import divisors  # Pollard rho: fast where trial division is not

    return [int(d) for d in divisors(n)]


def _family_entries_v(v: int, target: tuple[int, int, int, int] | None = None):
    """The entries of :func:`_family_entries` with exactly ``v`` vertices, in the same order.

    Each family's parameters are solved for directly (integer roots, divisors,
    binary searches), so this answers for any v without enumerating every
    smaller graph and without building anything.

    With ``target`` only the entries that can decide the lookup of ``target`` are
    produced for the two families with many members per v: block graphs of
    S(2, K, V) have ``mu = K^2`` and complete multipartite graphs K_{m x n} have
    ``n = v - k``, so K and n are read off ``target`` or off its complement's
    parameters (which the complement rule of :func:`_catalogue_v` consults).
    Every other entry cannot equal ``target`` nor have it as complement, so the
    lookup answers exactly as the full enumeration would (no 2^20 loop over K,
    no factorization of v).
    """
    for params, name, fn in _SPORADIC:
        if params[0] == v:
            yield _Entry(params, name, fn)
    if v >= 5 and v % 4 == 1 and is_prime_power(v):
        q = v
        yield _Entry((q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4), f"Paley graph P({q})", partial(paley_graph, q))
    n = (1 + isqrt(1 + 8 * v)) // 2
    if n >= 5 and n * (n - 1) // 2 == v:
        yield _Entry((v, 2 * (n - 2), n - 2, 4), f"triangular graph T({n})", partial(triangular_graph, n))
    n = isqrt(v)
    if n >= 2 and n * n == v:
        for m in range(2, (n if is_prime_power(n) else min(n, 3)) + 1):
            params = (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1))
            yield _Entry(
                params,
                f"lattice graph L2({n})" if m == 2 else f"Latin square graph LS_{m}({n})",
                partial(latin_square_graph, m, n),
            )
    for kind in ("Sp", "O", "O+", "O-", "U"):
        for q, n in _polar_with_v(kind, v):
            params = polar_graph_parameters(kind, n, q)
            yield _Entry(params, f"polar graph {kind}({n},{q})", partial(polar_graph, kind, n, q))
    found = []
    m = 2
    while 2 ** (2 * m) <= v:
        q = _root(v, 2 * m)
        if q ** (2 * m) == v and is_prime_power(q):
            found.append((q, m))
        m += 1
    for q, m in sorted(found):
        for eps in (1, -1):
            k = (q**m - eps) * (q ** (m - 1) + eps)
            lam = q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2
            mu = q ** (m - 1) * (q ** (m - 1) + eps)
            yield _Entry(
                (v, k, lam, mu),
                f"affine polar graph VO{'+' if eps == 1 else '-'}({2 * m},{q})",
                partial(affine_polar_graph, eps, m, q),
            )
    q = _root(v, 3)
    if q >= 4 and q**3 == v and q & (q - 1) == 0:
        yield _Entry(
            (v, (q - 1) * (q + 2), q - 2, q + 2), f"GQ({q - 1},{q + 1}) = T2*(O)", partial(hyperoval_gq_graph, q)
        )
    if target is not None:
        comp = complement_parameters(*target)
        ks = sorted({isqrt(p[3]) for p in (target, comp) if p[3] >= 0 and isqrt(p[3]) ** 2 == p[3]})
        ns = sorted({n for n in (v - target[1], target[1] + 1) if 2 <= n <= v // 2 and v % n == 0})
    else:
        ks, ns = None, None
    K = 3
    for K in ks if ks is not None else _steiner_range(v):
        if K < 3 or K * (K + 1) > v:
            continue
        disc = 1 + 4 * v * K * (K - 1)  # V (V - 1) = v K (K - 1)
        root = isqrt(disc)
        if root * root == disc and (1 + root) % 2 == 0:
            V = (1 + root) // 2
            if V >= K * K and (V - 1) % (K - 1) == 0 and v > V and _steiner_available(K, V):
                yield _Entry(
                    _block_graph_params(K, V), f"block graph of S(2,{K},{V})", partial(_steiner_block_graph, K, V)
                )
    for n in ns if ns is not None else _divisors(v):
        m = v // n
        if n >= 2 and m >= 2:
            yield _Entry(
                (m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n),
                f"complete multipartite K_{{{m}x{n}}}",
                partial(complete_multipartite_graph, m, n),
            )


def _steiner_range(v: int) -> range:
    """K = 3, 4, ... with K (K + 1) <= v (b > V >= K^2 gives v = b >= K (K + 1)), at most _MAX_STEINER_K."""
    return range(3, min(isqrt(v), _MAX_STEINER_K) + 1)


@lru_cache(maxsize=1024)
def _catalogue_v(v: int, params: tuple[int, int, int, int] | None = None) -> dict[tuple[int, int, int, int], _Entry]:
    """The catalogue restricted to v vertices (complements have the same v): same entries, same names.

    With ``params`` the result is exact for looking up ``params`` (see :func:`_family_entries_v`).
    """
    # params: the lookup target (see _family_entries_v)
    return _with_complements(_family_entries_v(v, params))


def _with_complements(entries: Iterable[_Entry]) -> dict[tuple[int, int, int, int], _Entry]:
    """First entry per parameter tuple, then the complement of each where not already present."""
    cat: dict[tuple[int, int, int, int], _Entry] = {}
    for e in entries:
        cat.setdefault(e.params, e)
    for e in list(cat.values()):
        cp = complement_parameters(*e.params)
        if cp[1] >= 1 and cp not in cat:
            cat[cp] = _Entry(cp, f"complement of {e.name}", partial(_complement_of, e.build))
    return cat


def _catalogue(max_v: int) -> dict[tuple[int, int, int, int], _Entry]:
    """Catalogue covering at least v <= max_v (cached per power-of-two bucket)."""
    bucket = 64
    while bucket < max_v:
        bucket *= 2
    return _catalogue_upto(bucket)


@lru_cache(maxsize=8)
def _catalogue_upto(max_v: int) -> dict[tuple[int, int, int, int], _Entry]:
    return _with_complements(_family_entries(max_v))


def buildable_srgs(max_v: int) -> list[tuple[int, int, int, int]]:
    """Sorted list of every ``(v, k, lam, mu)`` with ``v <= max_v`` that gcsim can build.

    Complements are included; imprimitive graphs (complete multipartite graphs
    and disjoint unions of cliques) too.

    Parameters
    ----------
    max_v : int
        Largest number of vertices (>= 1).  Graphs whose ``v x v`` adjacency
        matrix exceeds :data:`gcsim.limits.MAX_DENSE_ENTRIES` are not built by
        gcsim and are not listed, so ``max_v`` is in effect capped at
        ``isqrt(MAX_DENSE_ENTRIES)`` (4096; the listing then takes a few seconds).

    Examples
    --------
    >>> [p for p in buildable_srgs(10) if 0 < p[3] < p[1]]   # the primitive ones
    [(5, 2, 0, 1), (9, 4, 1, 2), (10, 3, 0, 1), (10, 6, 3, 4)]
    >>> (8, 1, 0, 0) in buildable_srgs(10)    # 4 K_2, imprimitive
    True
    """

    max_v = min(check_int("max_v", max_v, minimum=1), isqrt(limits.MAX_DENSE_ENTRIES))
    return sorted(p for p in _catalogue(max_v) if p[0] <= max_v)


def srg_construction_name(v: int, k: int, lam: int, mu: int) -> str | None:
    """Name of the construction gcsim uses for these parameters, or None if it cannot build them.

    >>> srg_construction_name(27, 16, 10, 8)
    'Schläfli graph'
    """
    v = check_int("v", v, minimum=1)
    key = (v, int(k), int(lam), int(mu))
    e = _catalogue_v(v, key).get(key)
    return None if e is None else e.name


_SUGGESTION_SPAN = 256  # how far (in v) suggestions are looked for


def _suggestions(params: tuple[int, int, int, int], count: int = 8) -> list[tuple[int, int, int, int]]:
    """Nearby buildable primitive parameter sets (within the size limits), nearest v first."""

    v, k, lam, mu = params

    def dist(p):
        return (abs(p[0] - v), abs(p[1] - k) + abs(p[2] - lam) + abs(p[3] - mu), p)

    pool: list[tuple[int, int, int, int]] = []
    for dv in range(0, _SUGGESTION_SPAN):
        for vv in sorted({v - dv, v + dv}):
            if vv >= 5 and vv * vv <= limits.MAX_DENSE_ENTRIES:
                pool.extend(p for p in _catalogue_v(vv) if 0 < p[3] < p[1])
        if len(pool) >= count:
            break
    return sorted(pool, key=dist)[:count]


def _known_existing_reference(params) -> str | None:
    return KNOWN_EXISTING.get(params) or KNOWN_EXISTING.get(complement_parameters(*params))


def srg(
    v: int, k: int, lam: int, mu: int, *, existence: bool = False, closed: bool = True
) -> StronglyRegularGraph | bool | None:
    """A strongly regular graph SRG(v, k, lam, mu), or whether one exists.

    Definition: ``Adj^2 = k I + lam Adj + mu (J - I - Adj)`` with ``1 <= k <= v - 2``
    (BvM §1.1).  Assignment (docs/theory.md §20): ``A = Adj + I`` when ``closed`` (worker j
    holds its own part and its neighbours'), else ``A = Adj``.

    Parameters
    ----------
    v, k, lam, mu : int
        The parameters.
    existence : bool, default False
        If True, return instead True (gcsim can build it, or it is known to
        exist: :data:`KNOWN_EXISTING`), False (a necessary condition fails or a
        non-existence theorem applies), or None (unknown to gcsim).
    closed : bool, default True
        Assignment convention (see above).

    Returns
    -------
    StronglyRegularGraph or bool or None
        The verified graph, or the existence answer.

    Raises
    ------
    InvalidArgumentError
        Bad input (names the argument).
    ImpossibleParametersError
        A necessary condition fails; ``.condition`` names it ("integrality of
        multiplicities", "Krein", "absolute bound", "k(k-lam-1) = (v-k-1)mu",
        "conference graph: v is a sum of two squares", "basic bounds", or
        "known nonexistence" with the reference in the message).
    NotConstructibleError
        Feasible, but gcsim cannot build it; ``.suggestions`` lists nearby
        buildable parameter sets.

    Examples
    --------
    >>> g = srg(16, 5, 0, 2)
    >>> g.construction, g.verify(), g.assignment.shape
    ('Clebsch graph (folded 5-cube)', True, (16, 16))
    >>> srg(28, 9, 0, 4, existence=True), srg(49, 16, 3, 6, existence=True)
    (False, False)
    >>> srg(99, 14, 1, 2, existence=True) is None
    True
    """
    v = check_int("v", v, minimum=3)
    k = check_int("k", k, minimum=1)
    lam = check_int("lam", lam, minimum=0)
    mu = check_int("mu", mu, minimum=0)
    existence = check_bool("existence", existence)
    closed = check_bool("closed", closed)
    rep = srg_feasibility(v, k, lam, mu)
    params = (v, k, lam, mu)
    if not rep.feasible:
        if existence:
            return False
        rep.raise_if_infeasible()
    if not existence:
        check_dense_size("v", v, v, f"the adjacency matrix of SRG{params}")
    entry = _catalogue_v(v, params).get(params)
    if existence:
        if entry is not None or _known_existing_reference(params) is not None:
            return True
        return None
    if entry is None:
        ref = _known_existing_reference(params)
        why = f" (it exists: {ref})" if ref else " (existence unknown to gcsim)"
        raise NotConstructibleError(f"gcsim cannot build an SRG{params}{why}", _suggestions(params))
    g = entry.build()
    if g.params != params:  # pragma: no cover - guarded by tests
        raise VerificationError(f"catalogue entry {entry.name!r} built {g.params}, expected {params}")
    g = g.with_closed(bool(closed))
    g.verify()
    return g
