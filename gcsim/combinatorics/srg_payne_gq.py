"""Payne's derived quadrangle P(W(q), x) = GQ(q-1, q+1), any prime power q >= 3 (docs/theory.md §20.7).

The symplectic quadrangle W(q) = W(3, q) (points of PG(3, q), lines the totally isotropic lines
of ``B(x, y) = x0 y1 - x1 y0 + x2 y3 - x3 y2``) has every point regular; Payne's derivation at
the point ``x = e0`` keeps the ``q^3`` points not collinear with x and, as lines, the lines of
W(q) not through x together with the hyperbolic lines ``{x, y}^perp perp`` (in W(q): the
projective line through x and y).  The result is a GQ(q-1, q+1) (Payne & Thas §3.1.4), whose
collinearity graph is SRG(q^3, (q-1)(q+2), q-2, q+2).  For even q it is T2*(O) with O a regular
hyperoval (the earlier family names it); for odd q it is new: SRG(125, 28, 3, 7) for q = 5.

With the retained points written ``y = (a, 1, b, c)``, two of them y, z are adjacent iff
``B(y, z) = a - a' + b c' - c b' = 0`` (collinear in W(q)) or ``(b, c) = (b', c')`` (z on the
line through x and y).

>>> g = payne_gq_graph(5)
>>> g.params, g.verify()
(SRGParams(v=125, k=28, lam=3, mu=7), True)
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from itertools import product

import numpy as np
import sympy

from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError
from .families import Member, SRGFamily
from .fields import field_tables, is_prime_power
from .srg_graph import StronglyRegularGraph, _make

__all__ = ["payne_gq_graph", "PayneGQGraphs"]


def _params(q: int) -> tuple[int, int, int, int]:
    return (q**3, (q - 1) * (q + 2), q - 2, q + 2)


def payne_gq_graph(q: int) -> StronglyRegularGraph:
    """Collinearity graph of Payne's derived quadrangle P(W(q), x) = GQ(q-1, q+1), q >= 3 a prime power.

    Vertices: ``(a, b, c)`` in GF(q)^3 (the point ``(a, 1, b, c)`` of PG(3, q)), in lexicographic
    order of gcsim's field codes.

    >>> payne_gq_graph(3).params     # GQ(2,4), the complement of the Schläfli graph
    SRGParams(v=27, k=10, lam=1, mu=5)
    """
    q = check_int("q", q, minimum=3)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power (>= 3), got {q}")
    check_dense_size("q", q**3, q**3, f"the collinearity graph of P(W({q}), x)")
    add, mul = field_tables(q)
    neg = np.argmin(add, axis=1)  # add[x, neg[x]] = 0: the one zero in each row
    pts = np.array(list(product(range(q), repeat=3)), dtype=np.int64)
    a, b, c = pts[:, 0], pts[:, 1], pts[:, 2]
    cross = add[mul[b[:, None], c[None, :]], neg[mul[c[:, None], b[None, :]]]]  # b c' - c b'
    form = add[add[a[:, None], neg[a][None, :]], cross]  # B(y, z) = a - a' + b c' - c b'
    same_line = (b[:, None] == b[None, :]) & (c[:, None] == c[None, :])  # z = y + lam e0
    adj = ((form == 0) | same_line).astype(np.int64)
    np.fill_diagonal(adj, 0)
    return _make(adj, f"Payne-derived GQ({q - 1},{q + 1}) = P(W({q}), x)", _params(q), q=q)


class PayneGQGraphs(SRGFamily):
    """Payne-derived quadrangles P(W(q), x) = GQ(q-1, q+1), q >= 3 a prime power."""

    name = "Payne-derived generalized quadrangles"
    parameters = ("q",)
    construction = "W(q) derived at a point (Payne & Thas §3.1.4); even q: T2*(O), named by that family"
    example = (125, 28, 3, 7)
    priority = 72

    def members(self, max_v: int) -> Iterator[Member]:
        q = 3
        while q**3 <= max_v:
            if is_prime_power(q):
                yield self._member(q)
            q += 1

    def members_with_v(self, v: int, target=None) -> Iterator[Member]:
        q = int(sympy.integer_nthroot(v, 3)[0])
        if q >= 3 and q**3 == v and is_prime_power(q):
            yield self._member(q)

    @staticmethod
    def _member(q: int) -> Member:
        return Member(_params(q), f"GQ({q - 1},{q + 1}) = P(W({q}), x)", partial(payne_gq_graph, q))


#: the families this module declares (found by discovery, gcsim.combinatorics.families)
FAMILIES = (PayneGQGraphs(),)
