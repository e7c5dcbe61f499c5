"""The dual of the generalized quadrangle T2*(O): GQ(q+1, q-1), q = 2^h >= 4 (docs/theory.md §20.7).

One file, one registered family (issue #24's example of a family that used to take nine
files).  T2*(O) (:func:`~gcsim.combinatorics.srg_geometric.hyperoval_gq_graph`) has as points
the vectors of GF(q)^3 and as lines the affine lines ``x + GF(q) o`` whose direction ``o`` is a
point of a hyperoval O of PG(2, q); it is a GQ(q-1, q+1) (Payne & Thas 3.1.3).  Its dual, with
the lines as points and two lines adjacent when they meet, is a GQ(s, t) = GQ(q+1, q-1), whose
collinearity graph is strongly regular with

``v = (s+1)(st+1) = q^2 (q+2)``, ``k = s(t+1) = q(q+1)``, ``lam = s-1 = q``, ``mu = t+1 = q``

(BvM §2.2.10: the collinearity graph of a GQ(s,t)).  q = 4 gives SRG(96, 20, 4, 4), q = 8
SRG(640, 72, 8, 8).

>>> g = dual_hyperoval_gq_graph(4)
>>> g.params, g.verify()
(SRGParams(v=96, k=20, lam=4, mu=4), True)
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import numpy as np
import sympy

from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError
from .families import Member, SRGFamily
from .fields import field_tables, prime_power_decomposition
from .srg_graph import StronglyRegularGraph, _make

__all__ = ["dual_hyperoval_gq_graph", "DualHyperovalGQGraphs"]


def _params(q: int) -> tuple[int, int, int, int]:
    return (q * q * (q + 2), q * (q + 1), q, q)


def dual_hyperoval_gq_graph(q: int) -> StronglyRegularGraph:
    """Collinearity graph of the dual of T2*(O), GQ(q+1, q-1), q = 2^h >= 4: SRG(q^2(q+2), q(q+1), q, q).

    O is the hyperoval of :func:`~gcsim.combinatorics.srg_geometric.hyperoval_gq_graph` (the
    conic ``{(1, t, t^2)} u {(0, 0, 1)}`` and its nucleus ``(0, 1, 0)``).  Vertices: the lines
    ``x + GF(q) o`` of AG(3, q) with o in O, ordered by direction, then by their smallest point;
    adjacent when they share a point.

    >>> dual_hyperoval_gq_graph(8).params
    SRGParams(v=640, k=72, lam=8, mu=8)
    """
    q = check_int("q", q, minimum=4)
    pp = prime_power_decomposition(q)
    if pp is None or pp[0] != 2:
        raise InvalidArgumentError("q", f"must be a power of 2 (>= 4), got {q}")
    v = _params(q)[0]
    check_dense_size("q", v, v, f"the collinearity graph of the dual of T2*(O) over GF({q})")
    add, mul = field_tables(q)
    t = np.arange(q)
    conic = np.stack([np.ones(q, dtype=np.int64), t, mul[t, t]], axis=1)
    O = np.concatenate([conic, [[0, 0, 1], [0, 1, 0]]])
    pts = np.array([(a, b, c) for a in range(q) for b in range(q) for c in range(q)], dtype=np.int64)
    code = pts @ np.array([q * q, q, 1])  # point -> its index
    incidence = []
    for o in O:
        # x + a o for every point x and scalar a: the line through x with direction o, as the set of its points
        members = np.stack([_code_of(add, mul, pts, a, o, q) for a in range(q)], axis=1)
        lines = np.unique(np.sort(members, axis=1), axis=0)  # q^2 lines of q points each
        inc = np.zeros((len(lines), len(code)), dtype=np.int64)
        inc[np.arange(len(lines))[:, None], lines] = 1
        incidence.append(inc)
    N = np.concatenate(incidence)  # lines x points
    meet = N @ N.T
    adj = (meet == 1).astype(np.int64)  # distinct lines share at most one point
    return _make(adj, f"dual of T2*(O) = GQ({q + 1},{q - 1}), hyperoval in PG(2,{q})", _params(q), q=q)


def _code_of(add: np.ndarray, mul: np.ndarray, pts: np.ndarray, a: int, o: np.ndarray, q: int) -> np.ndarray:
    """Indices of the points ``x + a o`` for every point x (coordinates in GF(q), first most significant)."""
    moved = add[pts, mul[a, o][None, :]]
    return moved @ np.array([q * q, q, 1])


class DualHyperovalGQGraphs(SRGFamily):
    """Collinearity graphs of GQ(q+1, q-1), the dual of T2*(O), q = 2^h >= 4."""

    name = "dual T2*(O) generalized quadrangles"
    parameters = ("q",)
    construction = "lines of T2*(O), adjacent when they meet (Payne-Thas §3.1.3, dual)"
    example = (96, 20, 4, 4)
    priority = 75

    def members(self, max_v: int) -> Iterator[Member]:
        q = 4
        while _params(q)[0] <= max_v:
            yield self._member(q)
            q *= 2

    def members_with_v(self, v: int, target=None) -> Iterator[Member]:
        q = int(sympy.integer_nthroot(v, 3)[0])  # q^3 < q^2 (q + 2) < (q + 1)^3 for q >= 2
        if q >= 4 and q & (q - 1) == 0 and _params(q)[0] == v:
            yield self._member(q)

    @staticmethod
    def _member(q: int) -> Member:
        return Member(_params(q), f"GQ({q + 1},{q - 1}) = dual of T2*(O)", partial(dual_hyperoval_gq_graph, q))


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (DualHyperovalGQGraphs(),)
