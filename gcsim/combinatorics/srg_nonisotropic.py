"""Graphs on the nonisotropic points of an orthogonal space over GF(3): NO^±(n, 3) (docs/theory.md §20.7).

Let Q be a nondegenerate quadratic form on GF(3)^n (hyperbolic or elliptic for even n,
parabolic for odd n) with polar form B.  The points ``<x>`` of PG(n-1, 3) with ``Q(x)`` equal to
a fixed nonzero value c, adjacent when orthogonal (``B(x, y) = 0``), form a strongly regular
graph (Brouwer & Van Maldeghem, *Strongly Regular Graphs* (2022), §3.1; stated with its
reference, verified exactly on every built graph, and the parameter formulas below are checked
against the built graphs for n <= 8 in ``tests/test_family_registry.py``):

* n = 2m, type eps = ±1: ``v = 3^(m-1)(3^m - eps)/2``, ``k = 3^(m-1)(3^(m-1) - eps)/2``,
  ``lam = 3^(m-2)(3^(m-1) + eps)/2``, ``mu = 3^(m-1)(3^(m-2) - eps)/2``;
* n = 2m + 1, the class of c with ``v = 3^m(3^m + eps)/2`` points: ``k = 3^(m-1)(3^m - eps)/2``,
  ``lam = mu = 3^(m-1)(3^(m-1) - eps)/2``.

NO^-(6, 3) is SRG(126, 45, 12, 18).  The family is supplementary (theory §21.5): its smaller
members (3 K_4, Sp(4,2), O(5,3), LS_3(6), ...) keep their classical names.

>>> g = nonisotropic_graph(6, -1)
>>> g.params, g.verify()
(SRGParams(v=126, k=45, lam=12, mu=18), True)
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from itertools import product

import numpy as np

from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError, VerificationError
from ..limits import check_power
from .families import Member, SRGFamily
from .srg_graph import StronglyRegularGraph, _make

__all__ = ["nonisotropic_graph", "nonisotropic_graph_parameters", "NonisotropicGraphs"]


def nonisotropic_graph_parameters(n: int, eps: int) -> tuple[int, int, int, int]:
    """``(v, k, lam, mu)`` of NO^eps(n, 3) (formulas of the module docstring).

    >>> nonisotropic_graph_parameters(6, -1), nonisotropic_graph_parameters(7, 1)
    ((126, 45, 12, 18), (378, 117, 36, 36))
    """
    n = check_int("n", n, minimum=4)
    check_power("n", 3, n, "3^n, the vectors of GF(3)^n")  # the parameters are exact integers below 3^n
    if eps not in (1, -1):
        raise InvalidArgumentError("eps", f"expected +1 or -1, got {eps!r}")
    if n % 2 == 0:
        m = n // 2
        return (
            3 ** (m - 1) * (3**m - eps) // 2,
            3 ** (m - 1) * (3 ** (m - 1) - eps) // 2,
            3 ** (m - 2) * (3 ** (m - 1) + eps) // 2,
            3 ** (m - 1) * (3 ** (m - 2) - eps) // 2,
        )
    m = (n - 1) // 2
    lam = 3 ** (m - 1) * (3 ** (m - 1) - eps) // 2
    return (3**m * (3**m + eps) // 2, 3 ** (m - 1) * (3**m - eps) // 2, lam, lam)


def _gram(n: int, eps: int) -> np.ndarray:
    """Gram matrix G of Q(x) = x^T G x / 2: hyperbolic pairs, then the anisotropic tail (x^2 + y^2 or x^2)."""
    G = np.zeros((n, n), dtype=np.int64)
    pairs = n // 2 if n % 2 == 1 or eps == 1 else n // 2 - 1
    for i in range(pairs):
        G[2 * i, 2 * i + 1] = G[2 * i + 1, 2 * i] = 1
    for i in range(2 * pairs, n):
        G[i, i] = 2  # Q gets x_i^2; -1 is a nonsquare mod 3, so x^2 + y^2 is anisotropic
    return G


def nonisotropic_graph(n: int, eps: int) -> StronglyRegularGraph:
    """NO^eps(n, 3): nonisotropic points of one type of an orthogonal space GF(3)^n, adjacent when orthogonal.

    For even n, ``eps`` is the type of the form (+1 hyperbolic, -1 elliptic); for odd n the form
    is parabolic and ``eps`` picks the class of points with ``v = 3^m(3^m + eps)/2``.  Vertices:
    the normalized vectors (first non-zero coordinate 1) in lexicographic order.
    """
    params = nonisotropic_graph_parameters(n, eps)
    check_dense_size("n", params[0], params[0], f"the graph NO^{eps:+d}({n},3)")
    G = _gram(n, 1 if n % 2 else eps)
    vecs = np.array(list(product(range(3), repeat=n)), dtype=np.int64)[1:]
    lead = vecs[np.arange(len(vecs)), (vecs != 0).argmax(axis=1)]
    pts = vecs[lead == 1]
    q_values = (np.einsum("ij,jk,ik->i", pts, G, pts) * 2) % 3  # Q(x) = x^T G x / 2, and 1/2 = 2 mod 3
    for c in (1, 2):
        X = pts[q_values == c]
        if len(X) == params[0]:
            break
    else:  # pragma: no cover - the counts are those of the docstring (checked by the tests)
        raise VerificationError(f"NO^{eps:+d}({n},3): no class of {params[0]} nonisotropic points")
    adj = ((X @ G @ X.T) % 3 == 0).astype(np.int64)
    np.fill_diagonal(adj, 0)
    return _make(adj, f"NO{'+' if eps == 1 else '-'}({n},3): nonisotropic points, orthogonality", params, n=n, eps=eps)


class NonisotropicGraphs(SRGFamily):
    """NO^±(n, 3), n >= 4: the nonisotropic points of one type of an orthogonal space over GF(3)."""

    name = "nonisotropic-point graphs NO±(n,3)"
    parameters = ("n", "eps")
    construction = "points of PG(n-1,3) with Q(x) = c, adjacent when orthogonal (BvM §3.1)"
    example = (126, 45, 12, 18)
    priority = 960
    supplementary = True

    def members(self, max_v: int) -> Iterator[Member]:
        n = 4
        while min(nonisotropic_graph_parameters(n, e)[0] for e in (1, -1)) <= max_v:
            for eps in (1, -1):
                p = nonisotropic_graph_parameters(n, eps)
                if p[0] <= max_v:
                    yield Member(p, f"NO{'+' if eps == 1 else '-'}({n},3)", partial(nonisotropic_graph, n, eps))
            n += 1

    def members_with_v(self, v: int, target=None) -> Iterator[Member]:
        n = 4
        while min(nonisotropic_graph_parameters(n, e)[0] for e in (1, -1)) <= v:  # v grows like 3^(n-1) / 2
            for eps in (1, -1):
                p = nonisotropic_graph_parameters(n, eps)
                if p[0] == v:
                    yield Member(p, f"NO{'+' if eps == 1 else '-'}({n},3)", partial(nonisotropic_graph, n, eps))
            n += 1


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (NonisotropicGraphs(),)
