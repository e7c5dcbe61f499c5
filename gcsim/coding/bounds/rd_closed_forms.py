"""Closed forms of the RD upper bound for symmetric BIBDs and strongly regular graphs (theory §45.2.1-45.2.2).

Theorem 2's bound depends on ``F`` only through ``S1`` and ``S2``; for a symmetric ``(v, k, λ)`` BIBD
both depend on ``s`` only (Corollary 3, :func:`bibd_rd_upper_bound`), and for an SRG assignment
``S2`` depends on ``F`` only through the number of edges it induces, which Lemma 3 confines to
:func:`srg_edge_range` (Corollary 4, :func:`srg_rd_upper_bound`).
"""

from __future__ import annotations

import math
from typing import Any

from ..._validation import check_bool, check_int
from ...combinatorics.srg_feasibility import srg_eigenvalues
from ...errors import ImpossibleParametersError
from ._args import _check_symmetric_bibd, bound_args
from .rd_upper import _rd_bound_from_sums

__all__ = ["bibd_rd_upper_bound", "srg_edge_range", "srg_rd_upper_bound"]


def bibd_rd_upper_bound(
    v: int, k: int, lam: int, m: int, s: int, eps: float = 0.0, dist: str = "rademacher", *, moments: Any = None
) -> float:
    """:func:`rd_upper_bound` for a symmetric (v, k, lambda) BIBD; depends on ``s`` only.

    With ``f = v - s`` arrived workers, ``S1 = f k`` and, from
    ``A^T A = (k - lambda) I + lambda J``, ``S2 = (k - lambda) f + lambda f^2``
    for *every* F (Corollary 3).  Hence the bound is also the worst case over
    ``|S| = s``.

    Examples
    --------
    >>> round(bibd_rd_upper_bound(91, 10, 1, 2, 20), 4)     # PG(2,9), m = 2, s = 20
    24.2222
    >>> bibd_rd_upper_bound(7, 3, 1, 1, 0)                   # Fano, m = 1, nobody straggles
    0.0
    """
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    a = bound_args(m=m, s=s, workers=v, rd=(eps, dist, moments))
    f = a.f
    S1, S2 = f * k, (k - lam) * f + lam * f * f
    return float(_rd_bound_from_sums(v, a.m, S1, S2, *a.moments))


def _restricted_eigenvalues(v: int, k: int, lam: int, mu: int) -> tuple[float, float]:
    """Restricted eigenvalues ``(r, t)``, ``r >= t``, of an SRG(v, k, lambda, mu) as floats.

    Every eigenvector orthogonal to ``1`` has eigenvalue ``r`` or ``t``, the roots of
    ``x^2 - (lambda - mu) x - (k - mu) = 0``; the exact spectrum comes from
    :func:`gcsim.combinatorics.srg_feasibility.srg_eigenvalues` (rounded once to float).
    """
    _, (r, _), (t, _) = srg_eigenvalues(v, k, lam, mu)
    return float(r), float(t)


def _check_srg(v, k, lam, mu):
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=0, maximum=v - 1)
    lam = check_int("lam", lam, minimum=0)
    mu = check_int("mu", mu, minimum=0)
    if k * (k - lam - 1) != (v - k - 1) * mu:
        raise ImpossibleParametersError(
            "SRG identity k (k - lambda - 1) = (v - k - 1) mu", f"(v, k, lam, mu) = ({v}, {k}, {lam}, {mu})"
        )
    if (lam - mu) ** 2 + 4 * (k - mu) < 0:
        raise ImpossibleParametersError("real eigenvalues", f"(lam - mu)^2 + 4 (k - mu) < 0 for {(v, k, lam, mu)}")
    return v, k, lam, mu


def srg_edge_range(v: int, k: int, lam: int, mu: int, f: int) -> tuple[int, int]:
    """Range ``[e_min, e_max]`` containing the number of edges induced by any ``f``-vertex set of an SRG.

    Combines the eigenvalue (expander-mixing) bounds
    ``k f^2 / v + t f (v - f) / v <= 2 e(F) <= k f^2 / v + r f (v - f) / v``
    with the counting bounds ``2 e(F) <= f min(k, f - 1)`` and
    ``2 e(F) >= f k - (v - f) k`` (Lemma 3), rounded inward to integers.

    Examples
    --------
    >>> srg_edge_range(10, 3, 0, 1, 4)     # Petersen, 4 vertices: 0..3 edges (a path P4 exists)
    (0, 3)
    """
    v, k, lam, mu = _check_srg(v, k, lam, mu)
    f = check_int("f", f, minimum=0, maximum=v)  # the size of F, not a number of stragglers
    r, t = _restricted_eigenvalues(v, k, lam, mu)
    base, spread = k * f * f / v, f * (v - f) / v
    hi = min(base + r * spread, f * min(k, max(f - 1, 0)))
    lo = max(base + t * spread, f * k - (v - f) * k, 0)
    return int(math.ceil(lo / 2 - 1e-9)), int(math.floor(hi / 2 + 1e-9))


def srg_rd_upper_bound(
    v: int,
    k: int,
    lam: int,
    mu: int,
    m: int,
    s: int,
    *,
    edges: int | None = None,
    include_self: bool = True,
    eps: float = 0.0,
    dist: str = "rademacher",
    moments: Any = None,
) -> float:
    """:func:`rd_upper_bound` for an SRG assignment, through the edge count inside ``F``.

    Assignment ``A = Adj + I`` (``include_self``, the default of theory §45) or ``A = Adj``.
    With ``f = v - s`` and ``e = e(F)`` edges induced by ``F``:
    ``S1 = f (k + 1)``, ``S2 = (k + 1 - mu) f + mu f^2 + (2 lambda - 2 mu + 4) e`` (with I), and
    ``S1 = f k``, ``S2 = (k - mu) f + mu f^2 + (2 lambda - 2 mu) e`` (without) (Corollary 4).
    If ``edges`` is given the value is exact for every F with that many edges
    (it must lie in the admissible range of :func:`srg_edge_range`);
    otherwise it is the maximum over the admissible range of :func:`srg_edge_range`,
    an upper bound on ``max_{|S|=s}`` of the bound (the bound is increasing in ``S2``).

    Examples
    --------
    >>> round(srg_rd_upper_bound(10, 3, 0, 1, 2, 2, edges=9), 4)   # Petersen, m = 2, s = 2
    5.1594
    >>> round(srg_rd_upper_bound(10, 3, 0, 1, 2, 2), 4)            # worst case: e <= 10
    5.3714
    """
    include_self = check_bool("include_self", include_self)
    v, k, lam, mu = _check_srg(v, k, lam, mu)
    a = bound_args(m=m, s=s, workers=v, rd=(eps, dist, moments))
    f = a.f
    if include_self:
        S1, base, coef = f * (k + 1), (k + 1 - mu) * f + mu * f * f, 2 * lam - 2 * mu + 4
    else:
        S1, base, coef = f * k, (k - mu) * f + mu * f * f, 2 * lam - 2 * mu
    e_lo, e_hi = srg_edge_range(v, k, lam, mu, f)
    if edges is None:
        e = e_hi if coef >= 0 else e_lo
    else:
        # outside [e_lo, e_hi] no f-vertex set of the graph exists (Lemma 3)
        e = check_int("edges", edges, minimum=e_lo, maximum=e_hi)
    return float(_rd_bound_from_sums(v, a.m, S1, base + coef * e, *a.moments))
