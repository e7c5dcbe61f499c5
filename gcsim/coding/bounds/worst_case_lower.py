"""Worst-case lower bounds ``max_{|S|=s} err(B, F) >= ...`` for every encoder with the support of ``A``.

* :func:`partial_uncovering_lower_bound` -- the closed form ``max_j (j+1) t_j`` (theory §45.8,
  Theorem 9; Munim & Ramamoorthy's lower bound);
* :func:`uncovering_lower_bound` -- ``m t(s)``, parts left without an arrived holder (theory §46.6);
* :func:`worst_case_rank_lower_bound` -- the rank bound of Theorem 1 maximized over ``|S| = s``, by
  enumeration or by a search started from both closed forms' straggler sets, so never below either
  (theory §45.8, Proposition 10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._validation import check_dense_size
from ._args import bound_args
from .rank import rank_lower_bound
from .registry import by_stragglers, register_bound
from .worst_case import WorstCaseResult, _maximize_over_stragglers

__all__ = ["worst_case_rank_lower_bound", "partial_uncovering_lower_bound", "uncovering_lower_bound"]


def worst_case_rank_lower_bound(
    assignment: Any, m: int, s: int, *, exact_limit: int = 100_000, seed: int = 0, restarts: int = 8
) -> WorstCaseResult:
    """Worst case over ``|S| = s`` of :func:`rank_lower_bound`.

    ``max_{|S|=s} sum_i (m - c_i(F))^+`` is a lower bound on the worst-case
    optimal error ``max_{|S|=s} err(B, F)`` of every encoder with the support of
    ``A``.  Exact by enumeration when ``C(n, s) <= exact_limit``; otherwise a
    greedy + local search whose result is labelled a lower estimate of the
    maximum (it is still a valid lower bound on the worst-case error, because
    it is attained by the reported straggler set).

    The search starts from the straggler sets that attain the closed forms this
    maximum generalizes -- :func:`uncovering_lower_bound` (theory §46.6) and every
    term of :func:`partial_uncovering_lower_bound` (theory §45.8) -- besides the
    greedy and the random starts; the local search never decreases the rank bound,
    so ``value`` is never below either closed form (theory §45.8, Proposition 10).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> res = worst_case_rank_lower_bound(A, 2, 1)
    >>> res.value, res.exact
    (2.0, True)
    >>> import gcsim
    >>> pg = gcsim.bibd(91, 10, 1)                       # PG(2,9): the search, never below the closed forms
    >>> res = worst_case_rank_lower_bound(pg, 2, 20)
    >>> res.exact, res.value >= partial_uncovering_lower_bound(pg, 2, 20).value == 4.0
    (False, True)
    """
    a = bound_args(assignment, m, s=s, search=(exact_limit, seed, restarts))
    A, m, s, exact_limit = a.A, a.m, a.s, a.exact_limit
    n = A.shape[1]
    At = A.T

    def objective(masks):
        return np.maximum(m - masks.astype(np.int64) @ At, 0).sum(axis=1)

    starts: tuple = ()
    if math.comb(n, s) > exact_limit:  # only the search needs them
        starts = (uncovering_lower_bound(A, m, s).mask, *_partial_uncovering_sets(A, m, s))
    return _maximize_over_stragglers(
        objective,
        n,
        s,
        exact_limit,
        a.seed,
        a.restarts,
        starts=starts,
        start_names=" (greedy, the closed forms' straggler sets of §46.6 and §45.8, random)",
    )


def _partial_uncovering_terms(A: np.ndarray, m: int, s: int) -> list[tuple[int, int, int]]:
    """``(j, t_j, (j + 1) t_j)`` for ``j = 0..m-1``, ``t_j = min(N, floor(N (s + m - 1 - j) / R))`` (Theorem 9)."""
    N = A.shape[0]
    R = int(A.sum())  # sum_i r_i = sum_j l_j, the number of (part, worker) pairs
    out = []
    for j in range(m):
        a = m - 1 - j
        t = N if R == 0 else min(N, (N * (s + a)) // R)  # exact integer floor
        out.append((j, t, (j + 1) * t))
    return out


def _partial_uncovering_set(A: np.ndarray, m: int, s: int, j: int, t: int) -> np.ndarray:
    """The straggler set of the proof of Theorem 9 for one ``j``, as a non-straggler mask with ``s`` stragglers.

    The ``t`` parts of smallest replication: every holder of the first ``t - 1`` straggles, and enough
    holders of the ``t``-th that at most ``a = m - 1 - j`` of them arrive; padded to ``s`` stragglers
    with the lowest-numbered remaining workers.
    """
    N, n = A.shape
    a = m - 1 - j
    order = np.argsort(A.sum(axis=1), kind="stable")[:t]
    out = np.zeros(n, dtype=bool)
    for i in order[:-1]:
        out |= A[i] == 1
    if t:
        left = np.flatnonzero((A[order[-1]] == 1) & ~out)  # holders of the t-th part still arriving
        out[left[: max(left.size - a, 0)]] = True
    if out.sum() > s:
        # only when every chosen part has r_i < a: then the bound holds at every pattern (proof, case 1)
        out = np.zeros(n, dtype=bool)
    out[np.flatnonzero(~out)[: s - int(out.sum())]] = True
    return ~out


def _partial_uncovering_sets(A: np.ndarray, m: int, s: int) -> list[np.ndarray]:
    return [_partial_uncovering_set(A, m, s, j, t) for j, t, _ in _partial_uncovering_terms(A, m, s) if t > 0]


def partial_uncovering_lower_bound(assignment: Any, m: int, s: int) -> WorstCaseResult:
    r"""Closed-form worst-case lower bound ``max_j (j+1) t_j`` for every scheme (theory §45.8, Theorem 9).

    With ``R = Σ_i r_i = Σ_j ℓ_j`` (the number of ones of ``A``), ``N`` parts and ``s`` stragglers,

    .. math:: \max_{|S|=s}\,err(B, F) \;\ge\; L(s) = \max_{0\le j<m}\,(j+1)\,t_j,\qquad
              t_j = \min\Big(N,\ \Big\lfloor\frac{N\,(s+m-1-j)}{R}\Big\rfloor\Big),

    for every encoder ``B`` with the support of ``A`` and every decoder: ``t_j`` parts can be brought
    to at most ``m - 1 - j`` arrived holders each (the first ``t_j - 1`` to none), and each then
    contributes at least ``j + 1`` to the rank bound of Theorem 1.  With regular loads ``ℓ_j = d₂``
    (``R = n d₂``) this is Munim & Ramamoorthy's lower bound
    ``max_j (j+1) ⌊N (s+m-1-j) / (n d₂)⌋`` (their ``d₂`` = parts per worker; for a square design
    ``⌊(s+m-1-j)/d₂⌋``); the cap at ``N`` can only matter when ``m > r̄ = R/N`` (or a worker holds no
    part), where the uncapped formula can exceed the largest possible error ``m N``.  Its ``j = m - 1``
    term is the uncovering bound ``m ⌊s / r⌋`` of :func:`uncovering_lower_bound` for regular
    replication ``r``.

    Returns
    -------
    WorstCaseResult
        ``value`` is ``L(s)`` (an exact integer, as a float); ``stragglers``/``mask`` the straggler set
        of the proof for the maximizing ``j``, and ``attained`` the rank bound there
        (``>= value``; at least ``(t_j - 1) m + j + 1`` when
        the ``t_j``-th part has at least ``m - 1 - j`` holders).

    Examples
    --------
    >>> import gcsim
    >>> pg = gcsim.bibd(91, 10, 1)                           # PG(2,9): r = d2 = 10
    >>> [partial_uncovering_lower_bound(pg, 2, s).value for s in (8, 9, 10, 19, 20)]
    [0.0, 1.0, 2.0, 2.0, 4.0]
    >>> res = partial_uncovering_lower_bound(pg, 2, 9)
    >>> len(res.stragglers), res.attained               # 9 of the 10 holders of one part straggle
    (9, 1.0)
    """
    a = bound_args(assignment, m, s=s)
    A, m, s = a.A, a.m, a.s
    # one term per block (the m of a scheme, whose target T = I_m ⊗ 1_N must fit): bounded first
    check_dense_size("m", m * A.shape[0], m, "the decoding target T = I_m ⊗ 1_N of the bound")
    j, t, value = max(_partial_uncovering_terms(A, m, s), key=lambda term: term[2])
    mask = _partial_uncovering_set(A, m, s, j, t)
    attained = float(rank_lower_bound(A, m, mask))
    how = (
        f"closed form max_j (j+1) min(N, floor(N (s+m-1-j) / R)), R = {int(A.sum())}: maximized at j = {j}, "
        f"t = {t}; attained = rank bound at the reported stragglers"
    )
    return WorstCaseResult(float(value), mask, tuple(np.flatnonzero(~mask).tolist()), False, how, attained)


def uncovering_lower_bound(assignment: Any, m: int, s: int) -> WorstCaseResult:
    r"""Worst-case lower bound ``max_{|S|=s} err(B, F) >= m t(s)`` for every encoder and decoder (§46.6).

    ``t(s)`` parts can be left with no arrived holder by ``s`` stragglers whenever their holder sets
    have a union of at most ``s`` workers; each such part contributes ``m`` to the error of every
    encoder with the support of ``A`` (Theorem 1 of theory §45).  Taking parts in increasing
    order of replication and straggling their holders while at most ``s`` workers are used gives
    ``t(s) >= max{t : r_(1) + ... + r_(t) <= s}`` (``floor(s / r)`` for regular replication ``r``:
    the error norm is at least ``sqrt(m floor(s / r))``, the ``√(s/d)``-type bound).  The returned
    ``value`` is :func:`rank_lower_bound` at that straggler set (``>= m t(s)``); it is a valid lower
    bound on the worst case because the set attains it.  :func:`worst_case_rank_lower_bound`
    maximizes the same quantity by enumeration or search and is never smaller when exact.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]])   # r = 2
    >>> res = uncovering_lower_bound(A, 1, 2)
    >>> res.value, res.stragglers
    (1.0, (0, 1))
    """
    a = bound_args(assignment, m, s=s)
    A, m, s = a.A, a.m, a.s
    n = A.shape[1]
    r = A.sum(axis=1)
    out = np.zeros(n, dtype=bool)
    uncovered = 0
    for i in np.argsort(r, kind="stable"):  # cheapest parts first
        grown = out | (A[i] == 1)
        if grown.sum() <= s:
            out = grown
            uncovered += 1
    spare = np.flatnonzero(~out)[: s - int(out.sum())]  # fill S up to exactly s stragglers
    out[spare] = True
    mask = ~out
    guaranteed = int(np.searchsorted(np.cumsum(np.sort(r)), s, side="right"))
    value = float(rank_lower_bound(A, m, mask))
    how = (
        f"greedy uncovering: {uncovered} parts without an arrived holder (closed form guarantees "
        f"t(s) >= {guaranteed}); value = rank bound at the reported stragglers"
    )
    return WorstCaseResult(value, mask, tuple(np.flatnonzero(out).tolist()), False, how, value)


@register_bound(
    "uncovering_lower",
    "lower",
    "worst",
    "max_{|S|=s} err >= m t(s), t(s) parts left without an arrived holder (theory §46.6; any encoder)",
)
def _uncovering_lower(scheme, masks):
    A = np.asarray(scheme.assignment)
    return by_stragglers(masks, lambda s: uncovering_lower_bound(A, scheme.m, s).value)


@register_bound(
    "partial_uncovering_lower",
    "lower",
    "worst",
    "max_{|S|=s} err >= max_j (j+1) min(N, floor(N (s+m-1-j) / R)), R = sum_i r_i "
    "(theory §45.8, Theorem 9; Munim & Ramamoorthy's lower bound; any encoder)",
)
def _partial_uncovering_lower(scheme, masks):
    A = np.asarray(scheme.assignment)
    return by_stragglers(masks, lambda s: partial_uncovering_lower_bound(A, scheme.m, s).value)
