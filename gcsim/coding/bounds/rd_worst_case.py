"""A certified upper bound on the worst case over ``|S| = s`` of the RD bound (theory §45.8, Proposition 11).

:func:`worst_case_rd_upper_bound` enumerates the straggler sets when there are few; otherwise it
bounds the maximum of Theorem 2's bound by the coverage relaxation of Lemma 2a (``S1(F) = b``,
``S2(F) <= cap(b)``, theory §45.2) and by the closed forms that apply to the assignment
(Corollaries 3 and 4, the spectral form of §46.4), and reports the best straggler set a search found.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import ImpossibleParametersError, InvalidArgumentError
from ._args import bound_args
from .rd_closed_forms import bibd_rd_upper_bound, srg_rd_upper_bound
from .rd_upper import _rd_bound_from_sums
from .spectral import spectral_rd_upper_bound
from .worst_case import WorstCaseResult, _maximize_over_stragglers

__all__ = ["worst_case_rd_upper_bound"]


def _coverage_relaxation(A: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(S1(F), S2(F))`` with ``|F| = f`` satisfies ``S1 = b`` and ``S2 <= cap[b]`` for some row.

    Returns ``(b, cap)``: the integers ``b`` from ``S1_min`` (the ``f`` smallest
    loads) to ``S1_max`` (the ``f`` largest) and an integer cap on ``S2(F)`` for
    every ``F`` with ``S1(F) = b``, the smallest of three bounds (Lemma 2a of
    ``docs/theory/45_bounds.md``):

    (a) rows: ``(Gamma 1_F)_j <= Gamma_jj +`` the ``f - 1`` largest off-diagonal
        entries of row ``j`` of ``Gamma = A^T A``; sum over the ``f`` largest rows;
    (b) spectrum: ``S2 = 1_F^T Gamma 1_F <= g f^2 / n + theta f (n - f) / n`` when
        ``Gamma 1 = g 1`` (``theta`` the largest eigenvalue of ``Gamma`` on ``1^perp``),
        ``<= lambda_max f`` otherwise; computed in floating point and enlarged by
        ``n eps ||Gamma||_F``, which exceeds the eigenvalue error of a backward-stable
        symmetric eigensolver (Weyl's inequality);
    (c) parts: ``S2 = sum_i c_i^2`` with ``0 <= c_i <= min(r_i, f)`` and
        ``sum_i c_i = b``: filling the largest caps first gives a vector that
        weakly majorizes every such ``c`` (Tomić–Weyl for the convex increasing ``x^2``).
    """
    n = A.shape[1]
    loads = np.sort(A.sum(axis=0).astype(np.int64))
    if f == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    b = np.arange(int(loads[:f].sum()), int(loads[-f:].sum()) + 1, dtype=np.int64)
    gram = A.T.astype(np.int64) @ A.astype(np.int64)
    diag = np.diag(gram).copy()
    off = np.sort(gram - np.diag(diag), axis=1)
    rows = diag + (off[:, n - (f - 1) :].sum(axis=1) if f > 1 else 0)
    cap = int(np.sort(rows)[-f:].sum())  # (a)
    G = gram.astype(float)
    margin = n * np.finfo(float).eps * float(np.linalg.norm(G))
    col = gram.sum(axis=0)
    if np.all(col == col[0]):
        P = np.eye(n) - 1.0 / n
        theta = max(float(np.linalg.eigvalsh(P @ G @ P)[-1]), 0.0)
        spectral = col[0] * f * f / n + (theta + margin) * f * (n - f) / n
    else:
        spectral = (float(np.linalg.eigvalsh(G)[-1]) + margin) * f
    cap = min(cap, int(math.floor(spectral + margin * f)))  # (b)
    caps = np.sort(np.minimum(A.sum(axis=1).astype(np.int64), f))[::-1]  # (c)
    cum = np.concatenate([[0], np.cumsum(caps)])
    cumsq = np.concatenate([[0], np.cumsum(caps * caps)])
    full = np.searchsorted(cum, b, side="right") - 1  # caps filled completely
    rest = b - cum[full]
    parts = cumsq[full] + rest * rest
    return b, np.minimum(parts, cap)


def worst_case_rd_upper_bound(
    assignment: Any,
    m: int,
    s: int,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    exact_limit: int = 100_000,
    seed: int = 0,
    restarts: int = 8,
) -> WorstCaseResult:
    """Upper bound on ``max_{|S|=s}`` of :func:`rd_upper_bound`, hence on ``max_{|S|=s} E_D err(B, F)``.

    Exact by enumeration when ``C(n, s) <= exact_limit``.  Otherwise ``value`` is
    a certified upper bound on the maximum: the Theorem 2 bound is increasing in
    ``S2``, so it is at most ``max_b bound(b, cap(b))`` over the possible values
    ``b`` of ``S1(F)`` and the caps ``S2(F) <= cap(b)`` of Lemma 2a; the greedy +
    swap local search reports the best straggler set it found in
    ``stragglers``/``attained`` (a lower estimate of the maximum).  When the two
    meet, ``exact`` is True (e.g. symmetric BIBDs, where ``S1`` and ``S2`` depend
    on ``s`` only).  The value is never above the closed forms this maximum generalizes
    where they apply -- :func:`bibd_rd_upper_bound` (symmetric BIBD), :func:`srg_rd_upper_bound`
    (``A = Adj + I`` or ``Adj`` of an SRG, recognized exactly) and :func:`spectral_rd_upper_bound`
    (bi-regular ``A``): the smallest of them and the relaxation is used (theory §45.8,
    Proposition 11), and ``method`` names it.

    This bounds ``max_{|S|=s} E_D err(B, F)`` (an oblivious adversary that does
    not see the draw), not ``E_D max_S err(B, F)``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> res = worst_case_rd_upper_bound(A, 2, 1)
    >>> round(res.value, 6), res.exact
    (2.8, True)
    >>> res = worst_case_rd_upper_bound(A, 2, 1, exact_limit=1)   # search + certified relaxation
    >>> round(res.value, 6), round(res.attained, 6), res.exact
    (2.8, 2.8, True)
    """
    a = bound_args(assignment, m, s=s, rd=(eps, dist, moments), search=(exact_limit, seed, restarts))
    A, m, s, exact_limit = a.A, a.m, a.s, a.exact_limit
    mu2, mu4 = a.moments
    N, n = A.shape
    At = A.T

    def sums(masks):
        c = (masks.astype(np.int64) @ At).astype(float)
        return c.sum(axis=1), (c**2).sum(axis=1)

    def objective(masks):
        S1, S2 = sums(masks)
        return _rd_bound_from_sums(N, m, S1, S2, mu2, mu4)

    found = _maximize_over_stragglers(objective, n, s, exact_limit, a.seed, a.restarts)
    if found.exact:
        return found
    s1, s2cap = _coverage_relaxation(A, n - s)
    relaxed = _rd_bound_from_sums(N, m, s1.astype(float), s2cap.astype(float), mu2, mu4)
    best = int(np.argmax(relaxed))
    upper = float(relaxed[best])
    s1_found, s2_found = (float(x[0]) for x in sums(found.mask[None]))
    # certified optimal when the search attains the relaxation's maximizer (same sums, same float formula)
    certified = bool(s1_found == s1[best] and s2_found == s2cap[best])
    source = f"the relaxation of Lemma 2a (maximized at S1 = {int(s1[best])}, S2 <= {int(s2cap[best])})"
    # never weaker than the closed forms this maximum generalizes (theory §45.8, Proposition 11)
    for name, closed in _rd_closed_forms(A, m, s, (mu2, mu4)):
        if closed < upper:
            upper, source = closed, name
    certified = certified or found.attained >= upper
    value = found.attained if certified else max(upper, found.attained)
    how = (
        f"exact (the search attains {source})"
        if certified
        else f"upper bound from {source}; "
        f"the search attained {found.attained:.6g} at the reported stragglers "
        f"(greedy + swap local search, C(n,s)={math.comb(n, s)} > exact_limit={exact_limit})"
    )
    return WorstCaseResult(value, found.mask, found.stragglers, certified, how, found.attained)


def _srg_of_assignment(A: np.ndarray) -> tuple[int, int, int, int, bool] | None:
    """``(v, k, λ, μ, include_self)`` when ``A = Adj + I`` or ``A = Adj`` of a strongly regular graph, else None.

    Exact: ``Adj`` symmetric 0/1 with zero diagonal and constant degree ``k``, ``(Adj²)_ij = λ`` on every
    edge and ``μ`` on every non-edge (``Adj²`` is computed in floating point, exact for integers below
    ``2^53``), i.e. ``Adj² = k I + λ Adj + μ (J - I - Adj)``; complete and empty graphs are left out.
    """
    v, n = A.shape
    if v != n or v < 3 or not np.array_equal(A, A.T):
        return None
    diag = np.diag(A)
    if np.all(diag == 1):
        adj, include_self = A - np.eye(v, dtype=A.dtype), True
    elif np.all(diag == 0):
        adj, include_self = A, False
    else:
        return None
    deg = adj.sum(axis=1)
    k = int(deg[0])
    if np.any(deg != k) or k in (0, v - 1):
        return None
    sq = adj.astype(float) @ adj.astype(float)
    edge = adj == 1
    non_edge = ~edge & ~np.eye(v, dtype=bool)
    lam_vals, mu_vals = sq[edge], sq[non_edge]
    if lam_vals.min() != lam_vals.max() or mu_vals.min() != mu_vals.max():
        return None
    return v, k, int(lam_vals[0]), int(mu_vals[0]), include_self


def _rd_closed_forms(A: np.ndarray, m: int, s: int, moments: tuple[float, float]) -> list[tuple[str, float]]:
    """The closed-form upper bounds on ``max_{|S|=s}`` of the Theorem 2 bound that apply to ``A``.

    Corollary 3 (symmetric BIBD), Corollary 4 with Lemma 3 (SRG, ``A = Adj + I`` or ``Adj``) and the
    spectral form of §46.4 (bi-regular ``A``); each is an upper bound on the maximum (theory §45.8).
    """
    N, n = A.shape
    out: list[tuple[str, float]] = []
    gram = A.T.astype(np.int64) @ A.astype(np.int64)
    k_col = int(gram[0, 0])
    off = gram[~np.eye(n, dtype=bool)]
    # k_col >= 1: an all-zero A satisfies the identity with k = lam = 0 but is no design
    if N == n and n >= 2 and k_col >= 1 and np.all(np.diag(gram) == k_col) and off.min() == off.max():
        lam = int(off[0])
        if lam * (n - 1) == k_col * (k_col - 1) and np.all(A.sum(axis=1) == k_col):
            out.append(("Corollary 3 (symmetric BIBD)", bibd_rd_upper_bound(n, k_col, lam, m, s, moments=moments)))
    srg = _srg_of_assignment(A)
    if srg is not None:
        v, k, lam, mu, include_self = srg
        try:
            value = srg_rd_upper_bound(v, k, lam, mu, m, s, include_self=include_self, moments=moments)
        except (ImpossibleParametersError, InvalidArgumentError):  # degenerate parameters: no closed form
            pass
        else:
            out.append((f"Corollary 4 (SRG{(v, k, lam, mu)}, Lemma 3)", value))
    r, loads = A.sum(axis=1), A.sum(axis=0)
    if r.min() == r.max() > 0 and loads.min() == loads.max():
        out.append(("the spectral form of §46.4", spectral_rd_upper_bound(A, m, s, moments=moments)))
    return out
