"""The per-part rank lower bound, for every encoder and every pattern (theory §45.1, Theorem 1).

``err(B, F) >= sum_i (m - c_i(F))^+`` with ``c_i(F) = |N_i ∩ F|`` the arrived holders of part
``i`` (:func:`part_coverage`), for every encoder ``B`` respecting the support of ``A`` (Eckart--Young).
Its maximum over straggler sets is :func:`gcsim.coding.bounds.worst_case_lower.worst_case_rank_lower_bound`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._args import _counts, _out, bound_args
from .registry import register_bound

__all__ = ["part_coverage", "rank_lower_bound"]


def part_coverage(assignment: Any, nonstragglers: Any) -> np.ndarray:
    """Coverage counts ``c_i(F) = |N_i ∩ F|`` of every part under every pattern.

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
        0/1 assignment matrix (parts x workers).
    nonstragglers : bool array (n,) or (count, n)
        True where the worker arrived (the set ``F``).

    Returns
    -------
    numpy.ndarray of int64, shape (N,) or (count, N)

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1]]
    >>> part_coverage(A, [True, False, True]).tolist()
    [1, 1]
    """
    a = bound_args(assignment, nonstragglers=nonstragglers)
    c = a.masks.astype(np.int64) @ a.A.T
    return c[0] if a.single else c


def rank_lower_bound(assignment: Any, m: int, nonstragglers: Any):
    r"""Per-part rank lower bound ``sum_i (m - c_i(F))^+`` on the raw optimal error.

    For every encoder ``B`` whose support is contained in that of ``A`` (theory §5.1)
    and every decoder ``X``, the ``m`` rows of ``B_F X - T`` belonging to part
    ``i`` form ``M_i X - I_m`` with ``rank(M_i X) <= c_i(F)``, so by
    Eckart--Young their squared Frobenius norm is at least ``(m - c_i(F))^+``
    (Theorem 1 of ``docs/theory/45_bounds.md``).

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
    m : int >= 1
        Communication reduction (number of blocks).
    nonstragglers : bool array (n,) or (count, n)

    Returns
    -------
    int or numpy.ndarray of int64 (count,)

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rank_lower_bound(A, 2, [True, True, False])    # c = (2, 1, 1)
    2
    >>> rank_lower_bound(A, 2, [[True] * 3, [False] * 3]).tolist()
    [0, 6]
    """
    a = bound_args(assignment, m, nonstragglers=nonstragglers)
    c = _counts(a.masks, a.A)
    return _out(np.maximum(a.m - c, 0).sum(axis=1), a.single)


@register_bound("rank_lower", "lower", "pattern", "sum_i (m - c_i(F))^+ (Theorem 1; any encoder with the support of A)")
def _rank_lower(scheme, masks):
    return rank_lower_bound(scheme.assignment, scheme.m, masks)
