"""Per-worker loads for heterogeneous workers: the integer loads that minimize the expected error (theory §63.6).

Given a straggler model of independent workers (any per-worker ``p_j``; for the load-dependent
kind ``"load-speed"``, ``p_j`` depends on the data worker ``j`` holds, theory §63.5), a number of
parts ``N`` and a total load ``L`` (the part copies of a symmetric design, ``n l``),
:func:`optimize_loads` chooses loads ``l_j`` in ``[1, N]`` with ``sum_j l_j = L`` for the weighted
cyclic repetition (:func:`gcsim.combinatorics.weighted_cyclic.weighted_cyclic_repetition`,
optimal decoding, ``m = 1``):

* the objective is the exact expected error ``E[err]/N`` (every pattern, weighted: theory §63.1)
  when ``2^n <= EXACT_OBJECTIVE_PATTERNS``, computed by the evaluator itself (:func:`load_error`,
  the route of :func:`~gcsim.coding.evaluate.expected_error`: one implementation of the optimal
  error, and the number the plan reports is the number the search compared), else the coverage
  lower bound of Lemma 63.2 (``sum_i prod_{j in W_i} p_j / N``, exact and cheap), which the plan says;
* the search is exhaustive over every feasible load vector when there are at most
  ``search_limit`` of them (the optimum of the family, for that objective), else a steepest
  descent over unit transfers ``l_i -= 1, l_j += 1`` from the loads proportional to speed, to
  ``1 - p_j`` and the symmetric loads (a local optimum: no unit transfer improves it).

Examples
--------
>>> from gcsim.coding.stragglers import straggler_model
>>> model = straggler_model("bernoulli", 6, p=[0.05, 0.05, 0.05, 0.6, 0.6, 0.6])
>>> plan = optimize_loads(model, 12, 6)
>>> plan.loads.tolist(), round(plan.error, 12), plan.objective
([3, 3, 3, 1, 1, 1], 0.01625, 'exact expected error')
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_dense_size, check_int
from ..combinatorics.weighted_cyclic import apportion_loads, weighted_cyclic_repetition
from ..errors import InvalidArgumentError
from .evaluate import expected_error
from .schemes import encode
from .straggler_base import StragglerModel

__all__ = ["EXACT_OBJECTIVE_PATTERNS", "LoadPlan", "optimize_loads", "load_error", "coverage_bound"]

#: Largest ``2^n`` for which the search's objective is the exact expected error (else the coverage bound).
EXACT_OBJECTIVE_PATTERNS = 1024


@dataclass(frozen=True)
class LoadPlan:
    """The loads :func:`optimize_loads` chose and how.

    Attributes
    ----------
    loads : numpy.ndarray
        Parts per worker (``int64``, read-only), summing to the total.
    error : float
        The objective at ``loads``: ``E[err]/N`` (exact) or the coverage lower bound.
    objective : str
        ``"exact expected error"`` or ``"coverage lower bound (Lemma 63.2)"``.
    search : str
        ``"exhaustive over K load vectors"`` or ``"local search (unit transfers) from K starts"``.
    evaluated : int
        Load vectors whose objective was computed.
    starts : dict
        The named starting loads (proportional to speed, to ``1 - p_j``, symmetric) and their objective.
    """

    loads: np.ndarray
    error: float
    objective: str
    search: str
    evaluated: int
    starts: dict[str, tuple[list[int], float]] = field(default_factory=dict)


def coverage_bound(p: np.ndarray, loads: np.ndarray, parts: int) -> float:
    """``sum_i prod_{j in W_i} p_j / N`` for the weighted cyclic repetition of ``loads`` (Lemma 63.2).

    >>> coverage_bound(np.array([0.05, 0.05, 0.05, 0.6, 0.6, 0.6]), np.array([3, 3, 3, 1, 1, 1]), 6)
    0.01625
    """
    A = weighted_cyclic_repetition(loads, parts).assignment.astype(bool)
    return float(np.prod(np.where(A, np.asarray(p, dtype=float)[None, :], 1.0), axis=1).sum() / parts)


def load_error(model: StragglerModel, loads: Any, parts: int, *, exact_limit: int = 20000) -> Any:
    """``expected_error`` (normalized) of the weighted cyclic repetition of ``loads`` under ``model`` at those loads.

    >>> from gcsim.coding.stragglers import straggler_model
    >>> load_error(straggler_model("bernoulli", 4, p=0.5), [2, 2, 2, 2], 4).mean
    0.25
    """
    scheme = encode(weighted_cyclic_repetition(loads, parts), 1, "naive")
    return expected_error(scheme, model, normalized=True, progress=False, exact_limit=exact_limit)


def _feasible(tops: np.ndarray, total: int) -> Iterator[tuple[int, ...]]:
    """Every integer vector with ``1 <= l_j <= tops[j]`` and ``sum = total``, in lexicographic order."""
    n = tops.size
    rest_max = np.concatenate([np.cumsum(tops[::-1])[::-1][1:], [0]])

    def rec(j: int, left: int, prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if j == n:
            if left == 0:
                yield prefix
            return
        need = n - j - 1  # at least 1 for each later worker
        for x in range(max(1, left - int(rest_max[j])), min(int(tops[j]), left - need) + 1):
            yield from rec(j + 1, left - x, (*prefix, x))

    yield from rec(0, total, ())


def _count_feasible(tops: np.ndarray, total: int, cap: int) -> int:
    """How many vectors :func:`_feasible` yields, or ``cap + 1`` once past ``cap``.

    A dynamic programme over the running sum: ``ways[k]`` counts the prefixes summing to ``k``, each
    worker's ``x in [1, t]`` a window sum of the prefix sums; counts clipped at ``cap + 1``.

    >>> _count_feasible(np.array([2, 2, 2]), 4, 100)
    3
    """
    ways = np.zeros(total + 1, dtype=np.int64)
    ways[0] = 1
    for t in tops.tolist():
        c = np.concatenate([[0], np.cumsum(ways)])  # c[k] = sum ways[:k]
        k = np.arange(total + 1)
        ways = np.minimum(c[np.maximum(k, 0)] - c[np.clip(k - t, 0, None)], cap + 1)
        ways[0] = 0  # x >= 1: k = 0 is reached by no x
    return int(min(ways[total], cap + 1))


def _starts(model: StragglerModel, p: np.ndarray, total: int, parts: int, tops: np.ndarray) -> dict[str, np.ndarray]:
    """Loads proportional to speed (a model's ``speed``), to ``1 - p_j`` (a law that does not depend on
    the loads) and equal ones, each made feasible."""
    n = p.size
    named: dict[str, np.ndarray] = {}
    speed = getattr(model, "speed", None)
    if speed is not None:
        named["proportional to speed"] = apportion_loads(np.asarray(speed, dtype=float), total, parts)
    if np.all(p < 1) and not model.load_dependent:  # a load-dependent p_j belongs to one split only
        named["proportional to 1 - p_j"] = apportion_loads(1.0 - p, total, parts)
    if total % n == 0:
        named["symmetric"] = np.full(n, total // n, dtype=np.int64)
    out = {}
    for name, loads in named.items():
        ell = np.minimum(loads, tops)
        while ell.sum() < total:  # give what the caps took to the workers with room, most room first
            room = tops - ell
            ell[int(np.argmax(room))] += 1
        out[name] = ell
    return out


def optimize_loads(
    model: StragglerModel,
    total: int,
    parts: int,
    *,
    search_limit: int = 500,
    exact_limit: int = 20000,
    max_load: int | None = None,
) -> LoadPlan:
    """The loads of the weighted cyclic repetition that minimize the expected error (theory §63.6).

    Parameters
    ----------
    model : StragglerModel
        Independent workers (:meth:`~StragglerModel.independent_p` not None once bound); a
        load-dependent model is bound to each load vector (:meth:`~StragglerModel.bind`).
    total : int
        ``sum_j l_j``, the part copies (``n l`` for the symmetric designs of load ``l``).
    parts : int
        ``N``, the number of parts; every load lies in ``[1, N]`` (and below the load at which a
        worker of a ``"load-speed"`` model can no longer arrive).
    search_limit : int
        Exhaustive search when there are at most this many feasible load vectors, else local search.
    exact_limit : int
        Passed to :func:`~gcsim.coding.evaluate.expected_error` (the exact objective also needs
        ``2^n <= EXACT_OBJECTIVE_PATTERNS``).
    max_load : int, optional
        A per-worker cap: only load vectors with every ``l_j <= max_load`` are searched (both the
        exhaustive and the local search; the starting loads are clipped to it).  None (default):
        the cap is ``N`` (and a ``"load-speed"`` worker's arrival limit), ``total`` only fixes the
        average load ``total / n``.

    Returns
    -------
    LoadPlan

    Raises
    ------
    InvalidArgumentError
        A model without independent workers, a ``max_load`` below ``ceil(total / n)``, or a total
        no feasible load vector reaches.

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> m = straggler_model("load-speed", 4, speed=[3, 1, 1, 1], deadline=1.0, shift=0.5, rate=2.0, fractions=None)
    >>> plan = optimize_loads(m, 8, 4)
    >>> plan.loads.tolist(), plan.search
    ([3, 1, 2, 2], 'exhaustive over 31 load vectors')
    >>> optimize_loads(m, 8, 4, max_load=2).loads.tolist()  # every worker at most 2 parts
    [2, 2, 2, 2]
    """
    if not isinstance(model, StragglerModel):
        raise InvalidArgumentError("model", "must be a straggler model (see straggler_model)")
    n = model.n
    parts = check_int("parts", parts, minimum=1)
    check_dense_size("parts", parts, n, "the weighted cyclic repetition assignment")
    total = check_int("total", total, minimum=n, maximum=n * parts)
    search_limit = check_int("search_limit", search_limit, minimum=1)
    p0 = model.independent_p()
    if p0 is None:
        raise InvalidArgumentError("model", f"needs independent workers (a per-worker p), got {model.describe()}")
    arrival = getattr(model, "max_load", None)
    tops = np.minimum(arrival(parts), parts) if model.load_dependent and arrival is not None else np.full(n, parts)
    tops = np.asarray(tops, dtype=np.int64)
    if max_load is not None:
        max_load = check_int("max_load", max_load, minimum=1)
        if n * max_load < total:
            raise InvalidArgumentError(
                "max_load",
                f"must be at least the average load ceil(total / n) = {-(-total // n)}, got {max_load}",
            )
        tops = np.minimum(tops, max_load)
    if np.any(tops < 1) or int(tops.sum()) < total:
        raise InvalidArgumentError(
            "total",
            f"no loads in [1, N = {parts}] sum to {total} with every worker able to arrive (caps {tops.tolist()})",
        )
    exact = n < 63 and 2**n <= min(EXACT_OBJECTIVE_PATTERNS, exact_limit)
    seen: dict[tuple[int, ...], float] = {}

    def value(loads: tuple[int, ...]) -> float:
        if loads not in seen:
            ell = np.array(loads, dtype=np.int64)
            if exact:  # the evaluator's every-pattern route (it binds a load-dependent law itself)
                seen[loads] = float(load_error(model, ell, parts, exact_limit=exact_limit).mean)
            else:
                bound = model.bind(ell, parts) if model.load_dependent else model
                seen[loads] = coverage_bound(np.asarray(bound.independent_p(), dtype=float), ell, parts)
        return seen[loads]

    key = functools.partial(_rank, value)
    starts = _starts(model, np.asarray(p0, dtype=float), total, parts, tops)
    count = _count_feasible(tops, total, search_limit)
    if count <= search_limit:
        best = min(_feasible(tops, total), key=key)
        search = f"exhaustive over {count} load vectors"
    else:
        best = min((_descend(tuple(s.tolist()), tops, value) for s in starts.values()), key=key)
        search = f"local search (unit transfers) from {len(starts)} starts"
    loads = np.array(best, dtype=np.int64)
    loads.setflags(write=False)
    return LoadPlan(
        loads=loads,
        error=value(best),
        objective="exact expected error" if exact else "coverage lower bound (Lemma 63.2)",
        search=search,
        evaluated=len(seen),
        starts={k: (v.tolist(), value(tuple(v.tolist()))) for k, v in starts.items()},
    )


def _rank(value: Callable[[tuple[int, ...]], float], loads: tuple[int, ...]) -> tuple[float, int, int, tuple[int, ...]]:
    """The order of both searches and of the final choice: the objective rounded to ``1e-12``, then
    (ties within round-off) the most balanced loads -- the least data on one worker, the smallest sum
    of squares -- then the smaller vector.

    >>> _rank(lambda x: 0.1 + 1e-15 * x[0], (1, 1, 4)) > _rank(lambda x: 0.1 + 1e-15 * x[0], (2, 2, 2))
    True
    """
    return (round(value(loads), 12), max(loads), sum(v * v for v in loads), loads)


def _descend(start: tuple[int, ...], tops: np.ndarray, value: Callable[[tuple[int, ...]], float]) -> tuple[int, ...]:
    """Steepest descent over unit transfers within ``[1, tops]`` in the order of :func:`_rank`, until no
    transfer comes before the current loads (ties within round-off broken as the exhaustive search does)."""
    key = functools.partial(_rank, value)
    here = start
    while True:
        moves = [
            tuple(x + (k == j) - (k == i) for k, x in enumerate(here))
            for i, j in itertools.permutations(range(len(here)), 2)
            if here[i] > 1 and here[j] < tops[j]
        ]
        if not moves:
            return here
        nxt = min(moves, key=key)
        if key(nxt) >= key(here):  # the order strictly decreases: the descent ends
            return here
        here = nxt
