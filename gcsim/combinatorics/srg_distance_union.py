"""Strongly regular distance-union graphs of the Johnson and Hamming schemes (docs/theory.md §21).

For a distance-regular scheme with distance matrices ``A_0 = I, A_1, ..., A_d`` and a set
``D`` of distances, the distance-union graph has adjacency ``A_D = sum_{i in D} A_i``.  Its
eigenvalue on the j-th common eigenspace ``V_j`` is ``theta_j = sum_{i in D} P_i(j)`` from the
scheme's eigenmatrix: the Eberlein polynomials for the Johnson scheme J(n, k), the
Krawtchouk polynomials for the Hamming scheme H(d, q).  ``A_D`` is strongly regular exactly
when ``{theta_1, ..., theta_d}`` (the eigenvalues on the complement of the all-ones vector)
has two distinct values (theory §21, Theorem 21.2), and then

``mu = (k - r)(k - s) / v``, ``lam = mu + r + s`` with ``k = theta_0``.

Everything is decided in exact integer arithmetic before anything is built; the built graph
is verified again (its ``A^2`` identity, exactly).  The family
(:class:`DistanceUnionGraphs`, registered with :mod:`gcsim.combinatorics.families`) names each
member ``distance-{1,4} graph of J(9,4)``; SRG(126, 25, 8, 4) is that one (the graph of the
gradient-coding paper of Munim and Ramamoorthy).

>>> g = johnson_distance_union_graph(9, 4, (1, 4))
>>> g.params, g.verify()
(SRGParams(v=126, k=25, lam=8, mu=4), True)
>>> [D for D in strongly_regular_distance_sets("J", 9, 4)]
[(1, 4), (2, 3)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache, partial
from itertools import combinations
from math import comb, isqrt
from typing import Any

import numpy as np
import sympy

from .._validation import check_count, check_dense_size, check_int, check_int_array
from ..errors import InvalidArgumentError
from ..limits import check_work
from .families import Member, SRGFamily
from .srg_graph import StronglyRegularGraph, _make

__all__ = [
    "eberlein",
    "krawtchouk",
    "scheme_eigenmatrix",
    "distance_union_parameters",
    "strongly_regular_distance_sets",
    "johnson_distance_union_graph",
    "hamming_distance_union_graph",
    "DistanceUnionGraphs",
]


def eberlein(n: int, k: int, i: int, j: int) -> int:
    """Eberlein polynomial ``E_i(j) = sum_t (-1)^t C(j,t) C(k-j,i-t) C(n-k-j,i-t)``.

    The eigenvalue of the distance-i matrix of the Johnson scheme J(n, k) (``k <= n/2``) on its
    j-th eigenspace (Delsarte 1973, Thm 4.6; BCN Thm 9.1.2).

    >>> [eberlein(9, 4, 1, j) for j in range(5)]   # J(9,4): (k - j)(n - k - j) - j
    [20, 11, 4, -1, -4]
    """
    n, i = check_int("n", n, minimum=0), check_int("i", i, minimum=0)
    k = check_int("k", k, minimum=0, maximum=n)
    j = check_int("j", j, minimum=0, maximum=n - k)
    return sum((-1) ** t * comb(j, t) * comb(k - j, i - t) * comb(n - k - j, i - t) for t in range(i + 1))


def krawtchouk(d: int, q: int, i: int, j: int) -> int:
    """Krawtchouk polynomial ``K_i(j) = sum_t (-1)^t (q-1)^(i-t) C(j,t) C(d-j,i-t)``.

    The eigenvalue of the distance-i matrix of the Hamming scheme H(d, q) on its j-th
    eigenspace (theory §21, Lemma 21.3).

    >>> [krawtchouk(4, 2, 1, j) for j in range(5)]   # the 4-cube
    [4, 2, 0, -2, -4]
    """
    d, q, i = check_int("d", d, minimum=0), check_int("q", q, minimum=0), check_int("i", i, minimum=0)
    j = check_int("j", j, minimum=0, maximum=d)
    return sum((-1) ** t * (q - 1) ** (i - t) * comb(j, t) * comb(d - j, i - t) for t in range(i + 1))


def _check_scheme(scheme: str, a: int, b: int) -> tuple[str, int, int]:
    if not isinstance(scheme, str) or scheme not in ("J", "H"):
        raise InvalidArgumentError("scheme", f"expected 'J' (Johnson) or 'H' (Hamming), got {scheme!r:.40}")
    if scheme == "J":
        n = check_int("n", a, minimum=2)
        k = check_int("k", b, minimum=1)
        if 2 * k > n:
            raise InvalidArgumentError("k", f"J(n,k) needs k <= n/2 (J(n,k) = J(n,n-k)); got n={n}, k={k}")
        a, b, diameter = n, k, ("k", k)
    else:
        a, b = check_int("d", a, minimum=1), check_int("q", b, minimum=2)
        diameter = ("d", a)
    # the eigenmatrix: (diameter + 1)^2 entries of an O(diameter) sum each, exact integers
    check_work(
        diameter[0],
        (diameter[1] + 1) ** 3,
        "operations of the eigenmatrix ((diameter + 1)^3)",
        limit_name="MAX_EXACT_WORK",
    )
    return scheme, a, b


def scheme_eigenmatrix(scheme: str, a: int, b: int) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The multiplicities ``m_j`` and the eigenmatrix ``P[j][i]`` of J(n,k) (``a, b = n, k``) or H(d,q).

    ``P[j][i]`` is the eigenvalue of the distance-i matrix on the j-th eigenspace, of dimension
    ``m_j`` (``C(n,j) - C(n,j-1)`` for Johnson, ``C(d,j)(q-1)^j`` for Hamming).

    >>> m, P = scheme_eigenmatrix("H", 2, 3)   # the 3 x 3 rook's graph
    >>> m, P
    ((1, 4, 4), ((1, 4, 4), (1, 1, -2), (1, -2, 1)))
    """
    return _eigenmatrix(*_check_scheme(scheme, a, b))  # checked before the cache hashes them


@lru_cache(maxsize=4096)
def _eigenmatrix(scheme: str, a: int, b: int) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    if scheme == "J":
        n, k = a, b
        mult = tuple(comb(n, j) - (comb(n, j - 1) if j else 0) for j in range(k + 1))
        P = tuple(tuple(eberlein(n, k, i, j) for i in range(k + 1)) for j in range(k + 1))
    else:
        d, q = a, b
        mult = tuple(comb(d, j) * (q - 1) ** j for j in range(d + 1))
        P = tuple(tuple(krawtchouk(d, q, i, j) for i in range(d + 1)) for j in range(d + 1))
    return mult, P


def _check_distances(D: Any) -> list[int]:
    """The sorted distinct distances of ``D`` (integers >= 1), its length bounded before it is read."""
    return sorted(
        {check_int("D", x, minimum=1) for x in check_int_array("D", D, ndim=1, what="the distances").tolist()}
    )


def distance_union_parameters(scheme: str, a: int, b: int, D: Sequence[int]) -> tuple[int, int, int, int] | None:
    """``(v, k, lam, mu)`` of the distance-``D`` graph of J(a, b) / H(a, b) if it is strongly regular, else None.

    Exact integers: the graph is strongly regular iff its eigenvalues ``theta_j`` on the
    eigenspaces ``j >= 1`` take exactly two values r, s; then ``mu = (k-r)(k-s)/v`` and
    ``lam = mu + r + s`` (theory §21, Theorem 21.2).

    >>> distance_union_parameters("J", 9, 4, (1, 4)), distance_union_parameters("J", 9, 4, (1,))
    ((126, 25, 8, 4), None)
    """
    scheme, a, b = _check_scheme(scheme, a, b)
    Ds = _check_distances(D)
    mult, P = _eigenmatrix(scheme, a, b)
    diam = len(mult) - 1
    if not Ds or Ds[-1] > diam:
        raise InvalidArgumentError("D", f"distances must be a non-empty subset of 1..{diam}, got {tuple(Ds)!r}")
    v = sum(mult)
    theta = [sum(P[j][i] for i in Ds) for j in range(diam + 1)]
    k = theta[0]
    rest = sorted(set(theta[1:]))
    if len(rest) != 2 or not 1 <= k <= v - 2:
        return None
    r, s = rest[1], rest[0]
    num = (k - r) * (k - s)
    if num % v:  # pragma: no cover - impossible for a regular graph with two eigenvalues on 1^perp (Thm 21.2)
        return None
    mu = num // v
    return (v, k, mu + r + s, mu)


def strongly_regular_distance_sets(scheme: str, a: int, b: int) -> Iterator[tuple[int, ...]]:
    """Every non-empty set D of distances (sorted tuples, in increasing size, then lexicographically)
    whose distance-union graph of J(a, b) / H(a, b) is strongly regular.

    >>> list(strongly_regular_distance_sets("H", 4, 2))   # 8 K_2, K_{8,8}, 2 K_8, Clebsch, ... complements
    [(4,), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4), (1, 2, 3)]
    """
    scheme, a, b = _check_scheme(scheme, a, b)  # now, not at the first next(): a generator runs late
    diam = len(_eigenmatrix(scheme, a, b)[0]) - 1
    check_count("k" if scheme == "J" else "d", 2**diam - 1, "distance sets (2^diameter - 1)")
    return _distance_sets(scheme, a, b, diam)


def _distance_sets(scheme: str, a: int, b: int, diam: int) -> Iterator[tuple[int, ...]]:
    for size in range(1, diam + 1):
        for D in combinations(range(1, diam + 1), size):
            if distance_union_parameters(scheme, a, b, D) is not None:
                yield D


def _distance_matrix(scheme: str, a: int, b: int) -> np.ndarray:
    """The distance matrix of J(a, b) (k-subsets in lexicographic order) or H(a, b) (words in base q)."""
    if scheme == "J":
        n, k = a, b
        subsets = np.array(list(combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
        inc = np.zeros((len(subsets), n), dtype=np.int64)
        inc[np.arange(len(subsets))[:, None], subsets] = 1
        return k - inc @ inc.T  # |A \ B| = k - |A n B|
    d, q = a, b
    words = np.arange(q**d)
    dist = np.zeros((q**d, q**d), dtype=np.int64)
    for _ in range(d):  # one coordinate at a time: v^2 memory, not v^2 d
        digit = words % q
        dist += digit[:, None] != digit[None, :]
        words //= q
    return dist


def _scheme_name(scheme: str, a: int, b: int) -> str:
    return f"{scheme}({a},{b})"


def _member_name(scheme: str, a: int, b: int, D: Sequence[int]) -> str:
    return f"distance-{{{','.join(map(str, D))}}} graph of {_scheme_name(scheme, a, b)}"


def _distance_union_graph(scheme: str, a: int, b: int, D: Sequence[int]) -> StronglyRegularGraph:
    scheme, a, b = _check_scheme(scheme, a, b)
    Ds = tuple(_check_distances(D))
    params = distance_union_parameters(scheme, a, b, Ds)
    name = _member_name(scheme, a, b, Ds)
    if params is None:
        raise InvalidArgumentError("D", f"the {name} is not strongly regular (its eigenvalues, theory §21)")
    check_dense_size("D", params[0], params[0], f"the adjacency matrix of the {name}")
    adj = np.isin(_distance_matrix(scheme, a, b), Ds).astype(np.int64)
    return _make(adj, name, params, scheme=_scheme_name(scheme, a, b), distances=list(Ds))


def johnson_distance_union_graph(n: int, k: int, D: Sequence[int]) -> StronglyRegularGraph:
    """The k-subsets of an n-set, adjacent when ``|A \\ B|`` lies in ``D`` (strongly regular ``D`` only).

    Raises :class:`~gcsim.errors.InvalidArgumentError` when the graph is not strongly regular
    (decided from the Eberlein eigenvalues before anything is built).

    >>> johnson_distance_union_graph(7, 3, (1,))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: D: the distance-{1} graph of J(7,3) is not strongly regular ...
    """
    return _distance_union_graph("J", n, k, D)


def hamming_distance_union_graph(d: int, q: int, D: Sequence[int]) -> StronglyRegularGraph:
    """Words of length d over q symbols, adjacent when their Hamming distance lies in ``D``.

    >>> hamming_distance_union_graph(4, 2, (1, 4)).params     # the Clebsch graph
    SRGParams(v=16, k=5, lam=0, mu=2)
    """
    return _distance_union_graph("H", d, q, D)


# ----------------------------------------------------------------------------------------------
# the family
# ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _scheme_members(scheme: str, a: int, b: int) -> tuple[Member, ...]:
    out = []
    for D in strongly_regular_distance_sets(scheme, a, b):
        params = distance_union_parameters(scheme, a, b, D)
        assert params is not None
        out.append(Member(params, _member_name(scheme, a, b, D), partial(_distance_union_graph, scheme, a, b, D)))
    return tuple(out)


def _johnson_n(v: int, k: int) -> int | None:
    """The n >= 2k with C(n, k) = v, or None (C(n, k) increases in n: binary search)."""
    lo, hi = 2 * k, max(2 * k, v + k)
    while lo < hi:
        mid = (lo + hi) // 2
        if comb(mid, k) < v:
            lo = mid + 1
        else:
            hi = mid
    return lo if comb(lo, k) == v else None


#: schemes of larger diameter (2^diameter distance sets) are not searched
MAX_DIAMETER = 12


class DistanceUnionGraphs(SRGFamily):
    """Strongly regular distance-union graphs of the Johnson schemes J(n, k), 2 <= k <= n/2, and
    the Hamming schemes H(d, q), d >= 2 (theory §21).

    Members: for each scheme, every distance set D whose union graph has exactly two
    eigenvalues besides its degree (decided from the Eberlein / Krawtchouk eigenmatrix).
    The triangular, lattice and Clebsch graphs appear here too (as J(n,2), H(2,n), H(4,2)),
    but the family is *supplementary*: the classical families (and their complements) name
    them.  Schemes of diameter above :data:`MAX_DIAMETER` are not searched (J(n,k) with
    k > 12 has C(n,k) >= C(26,13), H(d,q) with d > 12 has q^d >= 8192: beyond the dense size
    limit anyway).
    """

    name = "Johnson/Hamming distance-union graphs"
    parameters = ("scheme", "n or d", "k or q", "D")
    construction = "union of distance classes of J(n,k) or H(d,q) with two eigenvalues on 1^perp (BCN §9.1-9.2)"
    example = (126, 25, 8, 4)
    priority = 950
    supplementary = True  # J(n,2), H(2,n), H(4,2), ... keep the names of the classical families

    def members(self, max_v: int) -> Iterator[Member]:
        k = 2
        while k <= MAX_DIAMETER and comb(2 * k, k) <= max_v:
            n = 2 * k
            while comb(n, k) <= max_v:
                yield from _scheme_members("J", n, k)
                n += 1
            k += 1
        d = 2
        while d <= MAX_DIAMETER and 2**d <= max_v:
            q = 2
            while q**d <= max_v:
                yield from _scheme_members("H", d, q)
                q += 1
            d += 1

    def members_with_v(self, v: int, target=None) -> Iterator[Member]:
        k = 2
        while k <= MAX_DIAMETER and comb(2 * k, k) <= v:
            n = _johnson_n(v, k)
            if n is not None:
                yield from _scheme_members("J", n, k)
            k += 1
        d = 2
        while d <= MAX_DIAMETER and 2**d <= v:
            q = int(sympy.integer_nthroot(v, d)[0]) if d > 2 else isqrt(v)
            if q >= 2 and q**d == v:
                yield from _scheme_members("H", d, q)
            d += 1


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (DistanceUnionGraphs(),)
