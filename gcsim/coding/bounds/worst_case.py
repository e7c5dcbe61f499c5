"""The maximum of a per-pattern bound over the straggler sets of one size, and its result record (theory §45.8).

:func:`_maximize_over_stragglers` enumerates the ``C(n, s)`` sets when there are few and otherwise
runs a greedy + swap local search that never decreases the objective (theory §45.8): the worst-case
bounds of :mod:`gcsim.coding.bounds.worst_case_lower` and :mod:`gcsim.coding.bounds.rd_worst_case`
report their result as a :class:`WorstCaseResult`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["WorstCaseResult"]


@dataclass(frozen=True)
class WorstCaseResult:
    """Maximum of a per-pattern bound over straggler sets of size ``s``.

    Attributes
    ----------
    value : float
        The number to use as the worst-case bound.  Exact mode: the maximum
        over all ``C(n, s)`` sets.  Search mode: for a *lower* bound
        (:func:`worst_case_rank_lower_bound`) the largest value found, which is
        attained by ``stragglers`` and therefore still a valid lower bound on
        the worst-case error; for an *upper* bound
        (:func:`worst_case_rd_upper_bound`) a certified upper bound on the
        maximum (a relaxation, ``>= attained``), so it is still a valid upper
        bound on the worst case.
    mask : numpy.ndarray of bool (n,)
        Non-straggler mask attaining ``attained``.
    stragglers : tuple of int
        The straggler set ``S`` (indices of False entries of ``mask``).
    exact : bool
        ``value`` is the exact maximum (enumerated, or certified because the
        relaxation is attained).
    method : str
        How ``value`` was obtained.
    attained : float
        The bound at ``stragglers``: the maximum when enumerated, otherwise the
        best value the greedy + swap local search found (a lower estimate of
        the maximum).
    """

    value: float
    mask: np.ndarray
    stragglers: tuple
    exact: bool
    method: str
    attained: float


def _enumerate_masks(n: int, s: int, chunk: int = 8192):
    """Yield batches of non-straggler masks for every s-subset S of [n] (lexicographic)."""
    it = itertools.combinations(range(n), s)
    while True:
        combos = list(itertools.islice(it, chunk))
        if not combos:
            return
        masks = np.ones((len(combos), n), dtype=bool)
        if s:
            idx = np.asarray(combos, dtype=np.int64)
            masks[np.arange(len(combos))[:, None], idx] = False
        yield masks


def _maximize_over_stragglers(
    objective: Callable[[np.ndarray], np.ndarray],
    n: int,
    s: int,
    exact_limit: int,
    seed: int,
    restarts: int,
    max_iter: int = 500,
    starts: tuple = (),
    start_names: str = "",
) -> WorstCaseResult:
    """Maximize a batched objective of non-straggler masks over all ``|S| = s``.

    Exact by enumeration when ``C(n, s) <= exact_limit``; otherwise greedy
    construction plus best-improvement swap local search from the greedy start,
    the given ``starts`` (masks with ``s`` stragglers, e.g. the constructive sets of
    closed-form bounds) and ``restarts - 1`` random ones, reported as a lower
    estimate of the maximum.  The local search never decreases the objective, so
    the result is at least the objective at every given start (theory §45.8).
    """
    total = math.comb(n, s)
    if total <= exact_limit:
        best_val, best_mask = -np.inf, None
        for masks in _enumerate_masks(n, s):
            vals = np.asarray(objective(masks), dtype=float)
            k = int(np.argmax(vals))
            if vals[k] > best_val:
                best_val, best_mask = float(vals[k]), masks[k].copy()
        assert best_mask is not None  # C(n, s) >= 1 patterns were enumerated
        return WorstCaseResult(
            best_val,
            best_mask,
            tuple(np.flatnonzero(~best_mask).tolist()),
            True,
            f"exact (enumerated {total} sets)",
            best_val,
        )

    rng = np.random.default_rng(seed)

    def local_search(mask: np.ndarray) -> tuple[float, np.ndarray]:
        val = float(objective(mask[None])[0])
        for _ in range(max_iter):
            out_idx = np.flatnonzero(~mask)  # stragglers that may return
            in_idx = np.flatnonzero(mask)  # workers that may straggle instead
            cand = np.repeat(mask[None], out_idx.size * in_idx.size, axis=0)
            rows = np.arange(cand.shape[0])
            cand[rows, np.repeat(out_idx, in_idx.size)] = True
            cand[rows, np.tile(in_idx, out_idx.size)] = False
            vals = np.asarray(objective(cand), dtype=float)
            k = int(np.argmax(vals))
            if vals[k] <= val + 1e-12:
                break
            val, mask = float(vals[k]), cand[k]
        return val, mask

    # greedy: add stragglers one at a time, each time the one that increases the objective most
    mask = np.ones(n, dtype=bool)
    for _ in range(s):
        idx = np.flatnonzero(mask)
        cand = np.repeat(mask[None], idx.size, axis=0)
        cand[np.arange(idx.size), idx] = False
        vals = np.asarray(objective(cand), dtype=float)
        top = np.flatnonzero(vals >= vals.max() - 1e-12)
        mask = cand[rng.choice(top)]
    starts_all = [mask, *starts]
    for _ in range(max(restarts - 1, 0)):
        start = np.ones(n, dtype=bool)
        start[rng.choice(n, size=s, replace=False)] = False
        starts_all.append(start)
    best_val, best_mask = -np.inf, None
    for start in starts_all:
        val, found = local_search(start)
        if val > best_val:
            best_val, best_mask = val, found
    assert best_mask is not None  # the greedy start is always evaluated
    return WorstCaseResult(
        best_val,
        best_mask,
        tuple(np.flatnonzero(~best_mask).tolist()),
        False,
        f"search (lower estimate of the maximum; greedy + swap local search, "
        f"{len(starts_all)} starts{start_names}, C(n,s)={total} > exact_limit={exact_limit})",
        best_val,
    )
