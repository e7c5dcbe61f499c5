"""Weighted cyclic repetition: a non-symmetric assignment for heterogeneous workers (theory §63).

Worker ``j`` holds ``l_j`` consecutive parts (mod ``N``) instead of the same ``l`` for everyone.
The workers are laid in the order of decreasing load (ties by index) and pour their parts around
the circle ``0, 1, ..., N - 1, 0, ...``: worker number ``t`` of that order starts where worker
``t - 1`` stopped.  With ``sum_j l_j = r N`` every part is held by exactly ``r`` workers (the
replication of the symmetric cyclic repetition at the same total load), and the first round of
the circle is covered by the workers of the largest loads.

:func:`apportion_loads` turns weights (``1 - p_j``, a speed ``s_j``) into integer loads of a given
total (largest remainders), the loads the advisor's ``"weighted-cyclic"`` family builds.

Examples
--------
>>> w = weighted_cyclic_repetition([3, 3, 1, 1], 4)
>>> w.assignment
array([[1, 1, 0, 0],
       [1, 1, 0, 0],
       [1, 0, 1, 0],
       [0, 1, 0, 1]])
>>> w.replication.tolist(), w.loads.tolist(), w.verify()
([2, 2, 2, 2], [3, 3, 1, 1], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError
from .base import CombinatorialObject, require, stored_binary, stored_params
from .baselines import _rebuild

__all__ = ["WeightedCyclicParams", "WeightedCyclicRepetition", "weighted_cyclic_repetition", "apportion_loads"]


class WeightedCyclicParams(NamedTuple):
    """``n`` workers, ``num_parts`` parts (the loads are the column sums of the assignment)."""

    n: int
    num_parts: int


def _pour(loads: np.ndarray, parts: int) -> np.ndarray:
    """The ``parts x n`` assignment: workers in decreasing load, each continuing where the last stopped."""
    n = loads.size
    order = np.argsort(-loads, kind="stable")
    starts = np.zeros(n, dtype=np.int64)
    starts[order] = (np.cumsum(loads[order]) - loads[order]) % parts
    diff = (np.arange(parts)[:, None] - starts[None, :]) % parts
    return (diff < loads[None, :]).astype(np.int64)


class WeightedCyclicRepetition(CombinatorialObject):
    """Weighted cyclic repetition; ``params = (n, num_parts)``, the loads are its column sums.

    >>> w = weighted_cyclic_repetition([2, 1, 1], 2)
    >>> w.params, w.loads.tolist()
    (WeightedCyclicParams(n=3, num_parts=2), [2, 1, 1])
    """

    kind = "weighted_cyclic_repetition"
    Params = WeightedCyclicParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> WeightedCyclicRepetition:
        """Rebuild from ``(n, num_parts)`` and the stored loads (column sums); compare the assignments."""
        n, parts = stored_params(metadata, 2, cls.kind)
        A = stored_binary(arrays, "assignment", cls.kind, (parts, n))
        return _rebuild(cls.kind, A, weighted_cyclic_repetition, A.sum(axis=0).tolist(), parts)

    def verify(self) -> bool:
        """The assignment is the poured layout of its own column sums (exact), each in ``[1, num_parts]``."""
        self._check_binary()
        n, parts = self.params
        require(self.assignment.shape == (parts, n), f"assignment must be {parts} x {n}")
        ell = self.loads
        require(bool(np.all((ell >= 1) & (ell <= parts))), f"every load must lie in [1, {parts}]")
        require(np.array_equal(self.assignment, _pour(ell, parts)), "assignment must be the poured cyclic layout")
        return True


def weighted_cyclic_repetition(loads: Sequence[int] | np.ndarray, num_parts: int) -> WeightedCyclicRepetition:
    """Worker ``j`` holds ``loads[j]`` consecutive parts of ``num_parts``, poured in decreasing load.

    Parameters
    ----------
    loads : sequence of int
        Parts per worker, each in ``[1, num_parts]``.
    num_parts : int
        ``N``, the number of parts.  When ``N`` divides ``sum(loads)`` every part has the same
        replication ``sum(loads) / N``; otherwise the replications differ by at most one.

    Examples
    --------
    >>> weighted_cyclic_repetition([3, 1, 2, 2], 4).replication.tolist()
    [2, 2, 2, 2]
    >>> weighted_cyclic_repetition([5, 1], 4)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: loads: every load must lie in [1, num_parts = 4], got 5
    """
    parts = check_int("num_parts", num_parts, minimum=1)
    raw = list(loads) if not isinstance(loads, np.ndarray) else loads.tolist()
    if not raw:
        raise InvalidArgumentError("loads", "must name at least one worker")
    ell = np.array([check_int("loads", x) for x in raw], dtype=np.int64)
    bad = ell[(ell < 1) | (ell > parts)]
    if bad.size:
        raise InvalidArgumentError("loads", f"every load must lie in [1, num_parts = {parts}], got {int(bad[0])}")
    check_dense_size("num_parts", parts, ell.size, "the weighted cyclic repetition assignment")
    A = _pour(ell, parts)
    return WeightedCyclicRepetition(
        A,
        (ell.size, parts),
        f"weighted cyclic repetition, loads {int(ell.min())}..{int(ell.max())} of {parts} parts",
    )


def apportion_loads(weights: Sequence[float] | np.ndarray, total: int, cap: int) -> np.ndarray:
    """Integer loads proportional to ``weights``, summing to ``total``, each in ``[1, cap]``.

    Largest remainders: each worker gets ``floor(total w_j / sum w)`` (clipped to ``[1, cap]``),
    then the remaining units go one at a time to the largest fractional parts (ties by index) among
    the workers below ``cap`` (or are taken from the smallest above 1 when the floors overshoot).

    Examples
    --------
    >>> apportion_loads([0.95, 0.95, 0.95, 0.4, 0.4, 0.4], 12, 6).tolist()
    [3, 3, 3, 1, 1, 1]
    >>> apportion_loads([1, 1], 5, 2)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: total: must lie in [n, n cap] = [2, 4], got 5
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise InvalidArgumentError("weights", "must be a non-empty list of finite positive numbers")
    cap = check_int("cap", cap, minimum=1)
    n = w.size
    total = check_int("total", total)
    if not n <= total <= n * cap:
        raise InvalidArgumentError("total", f"must lie in [n, n cap] = [{n}, {n * cap}], got {total}")
    share = total * w / w.sum()
    ell = np.clip(np.floor(share).astype(np.int64), 1, cap)
    frac = share - np.floor(share)
    while int(ell.sum()) < total:  # at most n rounds: each gives one unit to a worker below cap
        room = np.flatnonzero(ell < cap)
        ell[room[np.argmax(frac[room])]] += 1
        frac[room[np.argmax(frac[room])]] = -1.0
    while int(ell.sum()) > total:  # the floors clipped up to 1 overshoot: take from the smallest shares
        over = np.flatnonzero(ell > 1)
        ell[over[np.argmin(share[over] - ell[over])]] -= 1
    return ell
