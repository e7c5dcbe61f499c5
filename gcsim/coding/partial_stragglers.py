"""Partial stragglers: workers that return the chunks they finished (docs/theory.md §59.1-§59.2).

After Ramamoorthy, Meng & Girimaji, "Leveraging partial stragglers within gradient coding"
(NeurIPS 2024, arXiv 2405.19509); the formalization and the closed forms below are gcsim's.

**Model.**  An assignment ``A`` (``N`` chunks x ``n`` workers) and, per worker ``j``, an **order**:
a permutation of the chunks it holds.  Worker ``j`` processes its chunks one after another; a
:class:`~gcsim.coding.delays.DelayModel` draws its times: with ``chunk_times="linear"`` the draw
``X_j`` is the time of its whole load and its ``k``-th chunk is done at ``k X_j / load_j``; with
``"independent"`` each chunk takes its own draw ``/ load_j`` (same mean for the whole load).  At time
``t`` the master knows the pairs (worker, chunk) completed; ``S_i(t)`` is the set of workers that
completed chunk ``i``.

**Protocol** (communication ``d/ℓ`` per worker, as in classic gradient coding with ``m = ℓ``
blocks): when the master stops, it picks each worker's single coded message from the chunks that
worker completed and decodes by least squares.  Its optimal error is (Theorem 59.1)

.. math:: \\mathrm{err}_{\\mathrm{partial}}(t) = \\sum_i \\max(0,\\ \\ell - |S_i(t)|),

reached by :func:`partial_encoder`; the sum is **exactly recoverable** once every chunk is completed
by ``ℓ`` workers.  The **classic** protocol uses a worker only once it finished its whole load, with
the exact Vandermonde code of :mod:`gcsim.coding.encoders.exact` (``s = r - ℓ``, ``r`` the least
replication): exact once ``n - s`` workers finished, and err(F) of :func:`gcsim.coding.optimal_error`
at a deadline.

**Chunk ordering.**  :func:`q_max` is the worst-case number of chunk computations the cluster can
spend before the sum is surely recoverable; :func:`latin_orders` (a perfect-matching decomposition,
every chunk in every position once) and :func:`optimize_orders` (local search on ``Q_max`` and then
on the Monte Carlo expected exact-recovery time) against :func:`random_orders`;
:func:`search_orders` adds seeded random restarts that can leave the swap search's local optimum,
certified optimal when they reach :func:`regular_q_max_bound`.

Examples
--------
>>> from gcsim.coding.delays import delay_model
>>> model = PartialStragglerModel.cyclic(3, delay_model("shifted-exponential", 6, shift=1.0, rate=1.0))
>>> q_max(model.assignment, model.orders, blocks=1)      # Latin orders, load 3
13
>>> res = compare_protocols(model, blocks=2, deadline=1.5, draws=200, seed=0)
>>> res.exact_partial.mean < res.exact_classic.mean
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import limits
from .._stats import betting_interval, t_interval
from .._validation import check_binary_matrix, check_int, check_int_array, check_real
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries, check_work
from .evaluate import optimal_error
from .schemes import Scheme, encode
from .straggler_base import rng_from_seed
from .straggler_models.partial import (
    CHUNK_TIMES,
    PartialStragglerModel,
    PartialStragglers,
    _assignment,
    _orders,
    _positions,
    chunk_completion_times,
    latin_orders,
    natural_orders,
    random_orders,
)

__all__ = [
    "CHUNK_TIMES",
    "PartialStragglerModel",
    "PartialStragglers",
    "chunk_completion_times",
    "coverage",
    "partial_error_from_coverage",
    "partial_encoder",
    "exact_recovery_times",
    "classic_scheme",
    "classic_tolerance",
    "classic_exact_times",
    "classic_errors",
    "q_max",
    "LeastQMax",
    "least_q_max",
    "regular_q_max_bound",
    "latin_orders",
    "random_orders",
    "natural_orders",
    "optimize_orders",
    "OrderSearch",
    "search_orders",
    "MeanCI",
    "mean_ci",
    "ProtocolComparison",
    "compare_protocols",
]


def _times(times: Any) -> np.ndarray:
    """A draws x n x N array of completion times (``inf`` allowed, NaN refused), its size checked first."""
    check_entries("times", array_shape(times), "the completion times")
    try:
        C = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError("times", "must be a numeric draws x n x N array") from None
    if C.ndim != 3:
        raise InvalidArgumentError("times", f"must be draws x n x N, got shape {C.shape}")
    if np.isnan(C).any():
        raise InvalidArgumentError("times", "must not hold NaN")
    return C


def coverage(times: Any, t: float) -> np.ndarray:
    """``|S_i(t)|``: per draw and chunk, how many workers completed the chunk by time ``t``.

    >>> C = np.array([[[1.0, np.inf], [2.0, 0.5]]])
    >>> coverage(C, 1.0).tolist()
    [[1, 1]]
    """
    t = check_real("t", t, minimum=0.0)
    C = _times(times)
    return (C <= t).sum(axis=1)


def partial_error_from_coverage(counts: Any, blocks: int) -> np.ndarray:
    """Theorem 59.1: ``Σ_i max(0, ℓ - |S_i|)`` per row of ``counts`` (draws x N).

    >>> partial_error_from_coverage(np.array([[0, 1, 2, 3]]), blocks=2).tolist()
    [3]
    """
    ell = check_int("blocks", blocks, minimum=1)
    c = check_int_array("counts", counts, what="the coverage counts")
    if c.ndim == 0 or (c < 0).any():
        raise InvalidArgumentError("counts", "must be an array of non-negative completion counts")
    return np.maximum(0, ell - c).sum(axis=-1)


def _generic_rows(n: int, ell: int) -> np.ndarray:
    """``n x ℓ`` Vandermonde rows on distinct Chebyshev nodes: any ``ℓ`` of them are independent."""
    nodes = np.cos(np.pi * (2 * np.arange(n) + 1) / (2 * n))
    return np.vander(nodes, ell, increasing=True)


def partial_encoder(done: Any, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The messages that reach Theorem 59.1's error: encoder ``B`` (``ℓN x n``) and decoder ``X`` (``n x ℓ``).

    ``done`` is the ``n x N`` 0/1 matrix of completed (worker, chunk) pairs.  Worker ``j`` is given a
    generic row ``x_j`` (any ``ℓ`` rows independent); chunk ``i``'s ``ℓ x ℓ`` block of ``B X`` is the
    projector onto ``span{x_j : j ∈ S_i}``, so ``‖B X - I_ℓ ⊗ 1_N‖_F² = Σ_i (ℓ - min(|S_i|, ℓ))``.
    Column ``j`` of ``B`` is supported on the rows ``kN + i`` of chunks ``i`` that ``j`` completed.

    Examples
    --------
    >>> done = np.array([[1, 1, 0], [0, 1, 1]])
    >>> B, X = partial_encoder(done, blocks=2)
    >>> T = np.kron(np.eye(2), np.ones((3, 1)))
    >>> round(float(((B @ X - T) ** 2).sum()), 9), int(partial_error_from_coverage(done.sum(axis=0), 2))
    (2.0, 2)
    """
    D = check_binary_matrix("done", done)
    ell = check_int("blocks", blocks, minimum=1)
    n, N = D.shape
    check_entries("blocks", (ell * N, n), "the lN x n encoder")
    X = _generic_rows(n, ell)
    B = np.zeros((ell * N, n))
    for i in range(N):
        S = np.flatnonzero(D[:, i])
        if S.size:
            # U_i = pinv(X_S): U_i X_S is the projector onto the row space of X_S
            B[i::N, S] = np.linalg.pinv(X[S])
    return B, X


def exact_recovery_times(times: Any, blocks: int) -> np.ndarray:
    """Per draw, when every chunk has been completed by ``ℓ`` workers (``inf``: never).

    >>> C = np.array([[[1.0, 3.0], [2.0, np.inf], [0.5, 1.0]]])
    >>> exact_recovery_times(C, 1).tolist(), exact_recovery_times(C, 2).tolist()
    ([1.0], [3.0])
    """
    ell = check_int("blocks", blocks, minimum=1)
    C = _times(times)
    if ell > C.shape[1]:
        return np.full(C.shape[0], np.inf)
    return np.sort(C, axis=1)[:, ell - 1, :].max(axis=1)


def classic_tolerance(assignment: Any, blocks: int) -> int:
    """``s = r - ℓ``: stragglers the classic exact code tolerates (``r`` the least replication).

    >>> classic_tolerance(np.ones((4, 4), dtype=int), 2)
    2
    """
    A = _assignment(assignment)
    ell = check_int("blocks", blocks, minimum=1)
    s = int(A.sum(axis=1).min()) - ell
    if s < 0:
        raise InvalidArgumentError("blocks", f"ℓ = {ell} exceeds the least replication {s + ell}")
    return s


def classic_scheme(assignment: Any, blocks: int) -> Scheme:
    """The classic protocol's code: ``exact-vandermonde`` with ``s = r - ℓ`` and ``m = ℓ``.

    >>> from gcsim.coding.encoders.classic import cyclic_repetition_assignment
    >>> classic_scheme(cyclic_repetition_assignment(5, 2), 2).B.shape
    (10, 5)
    """
    s = classic_tolerance(assignment, blocks)
    return encode(np.asarray(assignment), blocks, "exact-vandermonde", s=s)


def _finish_times(model: PartialStragglerModel, times: np.ndarray) -> np.ndarray:
    C = np.where(np.isinf(times), -np.inf, times)
    return C.max(axis=2)  # (draws, n): when each worker finished its whole load


def classic_exact_times(model: PartialStragglerModel, times: Any, blocks: int) -> np.ndarray:
    """Per draw, when ``n - s`` workers have finished their whole load (classic exact recovery).

    >>> from gcsim.coding.delays import delay_model
    >>> A = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> m = PartialStragglerModel(A, natural_orders(A), delay_model("shifted-exponential", 3, shift=1.0, rate=1.0))
    >>> C = np.array([[[1.0, 2.0, np.inf], [np.inf, 4.0, 8.0], [0.5, np.inf, 1.0]]])
    >>> classic_exact_times(m, C, 1).tolist()
    [2.0]
    """
    s = classic_tolerance(model.assignment, blocks)
    F = _finish_times(model, _times(times))
    return np.sort(F, axis=1)[:, model.n - s - 1]


def classic_errors(model: PartialStragglerModel, times: Any, blocks: int, deadline: float) -> np.ndarray:
    """Per draw, the classic code's err(F) with ``F`` the workers that finished by ``deadline``.

    >>> from gcsim.coding.delays import delay_model
    >>> A = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> m = PartialStragglerModel(A, natural_orders(A), delay_model("shifted-exponential", 3, shift=1.0, rate=1.0))
    >>> C = np.array([[[1.0, 2.0, np.inf], [np.inf, 4.0, 8.0], [0.5, np.inf, 1.0]]])
    >>> [round(float(e), 9) for e in classic_errors(m, C, 1, deadline=1.5)]
    [1.057190958]
    """
    deadline = check_real("deadline", deadline, minimum=0.0)
    F = _finish_times(model, _times(times)) <= deadline
    scheme = classic_scheme(model.assignment, blocks)
    return np.atleast_1d(np.asarray(optimal_error(scheme, F, progress=False), dtype=float))


def q_max(assignment: Any, orders: Any, blocks: int = 1) -> int:
    """Fewest chunk computations after which the sum is recoverable whatever the workers' speeds.

    Closed form (Theorem 59.3): ``Σ_j load_j + 1 - min_i g_i``, ``g_i`` the sum of the
    ``r_i - ℓ + 1`` smallest values of ``load_j - pos_j(i)`` over the holders ``j`` of chunk ``i``.

    >>> A = np.ones((2, 2), dtype=int)
    >>> q_max(A, [[0, 1], [0, 1]]), q_max(A, [[0, 1], [1, 0]])
    (3, 2)
    """
    A = _assignment(assignment)
    ell = check_int("blocks", blocks, minimum=1)
    orders = _orders(A, orders)
    r = A.sum(axis=1)
    if ell > r.min():
        raise InvalidArgumentError("blocks", f"ℓ = {ell} exceeds the least replication {int(r.min())}")
    return int(A.sum()) + 1 - int(_g_values(A, orders, ell).min())


def _g_values(A: np.ndarray, orders: tuple[np.ndarray, ...], ell: int) -> np.ndarray:
    """Theorem 59.3's ``g_i`` per chunk: the sum of its ``r_i - ℓ + 1`` smallest ``load_j - pos_j(i)``."""
    pos = _positions(A, orders)
    V = np.sort(np.where(pos >= 0, A.sum(axis=0)[:, None] - pos, np.inf), axis=0)
    take = A.sum(axis=1) - ell  # index of the last value summed; all summed values are finite
    return np.cumsum(V, axis=0)[take, np.arange(A.shape[0])].astype(np.int64)


class LeastQMax(NamedTuple):
    """The least ``Q_max`` over every choice of orders (:func:`least_q_max`)."""

    value: int
    reaching: int
    total: int
    orders: tuple[np.ndarray, ...]


def _value_rows(A: np.ndarray, j: int) -> np.ndarray:
    """Every order of worker ``j`` as a row of ``v_j(i) = L_j - π_j(i)`` (``inf`` off its chunks)."""
    chunks = np.flatnonzero(A[:, j])
    perms = np.array(list(itertools.permutations(chunks.tolist())), dtype=np.int64).reshape(-1, chunks.size)
    V = np.full((perms.shape[0], A.shape[0]), np.inf)
    V[np.arange(perms.shape[0])[:, None], perms] = chunks.size - np.arange(chunks.size)[None, :]
    return V


def least_q_max(assignment: Any, blocks: int = 1) -> LeastQMax:
    """The least ``Q_max`` over every tuple of orders, by enumeration (no search, no theorem on orders).

    Walks all ``Π_j L_j!`` tuples (at most :data:`gcsim.limits.MAX_PATTERNS`) with Theorem 59.3's
    ``Q_max``; returns the least value, how many tuples reach it (``reaching / total`` is the
    chance that :func:`random_orders` does) and the first tuple that reaches it.

    Examples
    --------
    >>> from gcsim.coding.encoders.classic import cyclic_repetition_assignment
    >>> A = cyclic_repetition_assignment(4, 2)
    >>> res = least_q_max(A, blocks=2)
    >>> res.value, res.reaching, res.total, q_max(A, res.orders, 2) == res.value
    (10, 144, 1296, True)
    """
    A = _assignment(assignment)
    ell = check_int("blocks", blocks, minimum=1)
    r = A.sum(axis=1)
    if ell > r.min():
        raise InvalidArgumentError("blocks", f"ℓ = {ell} exceeds the least replication {int(r.min())}")
    loads = A.sum(axis=0)
    total = 1
    for k in (k for L in loads for k in range(2, int(L) + 1)):  # stop once past the limit: no huge factorial
        total *= k
        if total > limits.MAX_PATTERNS:
            break
    check_work("assignment", total, "the order tuples least_q_max enumerates", limit_name="MAX_PATTERNS")
    rows = [_value_rows(A, j) for j in range(A.shape[1])]
    # the last workers' orders form a vectorized grid; the first ones are looped over
    split = A.shape[1]
    grid = 1
    while split > 0 and (split == A.shape[1] or grid * rows[split - 1].shape[0] <= 50_000):
        split -= 1
        grid *= rows[split].shape[0]
    sizes = [rows[j].shape[0] for j in range(split, A.shape[1])]
    grid_idx = np.indices(sizes).reshape(len(sizes), -1)
    tail = np.stack([rows[split + k][grid_idx[k]] for k in range(len(sizes))], axis=1)
    take = (r - ell)[None, :]
    best, reaching, first = -1, 0, None
    for head in itertools.product(*[range(rows[j].shape[0]) for j in range(split)]):
        fixed = np.stack([rows[j][k] for j, k in enumerate(head)]) if split else np.empty((0, A.shape[0]))
        V = np.concatenate([np.broadcast_to(fixed, (grid, *fixed.shape)), tail], axis=1)
        g = np.take_along_axis(np.cumsum(np.sort(V, axis=1), axis=1), take[:, None, :], axis=1)[:, 0, :]
        m = g.min(axis=1)
        top = int(m.max())
        if top > best:
            best, reaching, first = top, 0, (head, int(np.argmax(m == top)))
        if top == best:
            reaching += int((m == top).sum())
    assert first is not None
    head, k = first
    choice = list(head) + [int(x) for x in grid_idx[:, k]]
    orders = tuple(
        np.argsort(np.where(np.isfinite(rows[j][c]), -rows[j][c], np.inf), kind="stable")[: int(loads[j])].astype(
            np.int64
        )
        for j, c in enumerate(choice)
    )
    return LeastQMax(int(loads.sum()) + 1 - best, reaching, total, orders)


def regular_q_max_bound(n: int, delta: int, blocks: int = 1) -> int:
    """A lower bound on ``Q_max`` for any orders on any ``δ``-regular ``n x n`` assignment (theory §59.2).

    Each chunk's values ``v_j(i)`` form a multiset of ``δ`` numbers in ``1..δ``, and over all chunks
    every value appears ``n`` times.  If some orders gave every ``g_i >= F``, the fractions of chunks
    of each multiset type would satisfy a linear program; the bound is ``nδ + 1 - F*`` with ``F*``
    the largest ``F`` whose program is feasible (HiGHS).  Latin orders reach it when
    ``F* = t(t+1)/2``, ``t = δ - ℓ + 1``.

    Examples
    --------
    >>> from gcsim.coding.encoders.classic import cyclic_repetition_assignment
    >>> A = cyclic_repetition_assignment(20, 3)
    >>> regular_q_max_bound(20, 4, 2), q_max(A, latin_orders(A), 2)       # Latin orders are optimal
    (75, 75)
    >>> regular_q_max_bound(6, 5, 3)     # Latin orders give 25 there (Proposition 59.7)
    24
    """
    from scipy.optimize import linprog

    n = check_int("n", n, minimum=1)
    delta = check_int("delta", delta, minimum=1, maximum=min(n, 9))
    ell = check_int("blocks", blocks, minimum=1, maximum=delta)
    t = delta - ell + 1
    types = np.array(list(itertools.combinations_with_replacement(range(1, delta + 1), delta)))
    f = types[:, :t].sum(axis=1)  # rows are sorted: the t smallest come first
    counts = np.stack([(types == v).sum(axis=1) for v in range(1, delta + 1)] + [np.ones(len(types), dtype=np.int64)])
    best = t * (t + 1) // 2  # Latin orders: every chunk holds 1..δ once
    while True:
        keep = f >= best + 1
        if not keep.any():
            break
        res = linprog(
            np.zeros(int(keep.sum())), A_eq=counts[:, keep], b_eq=np.ones(delta + 1), bounds=(0, None), method="highs"
        )
        if res.status != 0:
            break
        best += 1
    return n * delta + 1 - best


def _mean_time(A: np.ndarray, orders: tuple[np.ndarray, ...], steps: np.ndarray, ell: int) -> float:
    pos = _positions(A, orders)
    jj, ii = np.nonzero(pos >= 0)
    C = np.full((steps.shape[0], A.shape[1], A.shape[0]), np.inf)
    C[:, jj, ii] = steps[:, jj, pos[jj, ii]]
    return float(exact_recovery_times(C, ell).mean())


def _steps(model: PartialStragglerModel, draws: int, seed: int) -> np.ndarray:
    """Per draw and worker, the completion time of its ``k``-th chunk (order-free)."""
    A = model.assignment
    eye = tuple(np.flatnonzero(A[:, j]) for j in range(model.n))
    C = chunk_completion_times(model.with_orders(eye), draws, seed)
    lmax = int(model.loads.max())
    steps = np.full((draws, model.n, lmax), np.inf)
    for j, o in enumerate(eye):
        steps[:, j, : o.size] = C[:, j, o]
    return steps


def optimize_orders(
    model: PartialStragglerModel, blocks: int = 1, *, draws: int = 2000, seed: int = 0, sweeps: int = 3
) -> tuple[np.ndarray, ...]:
    """Orders that minimize ``Q_max`` and then the expected exact-recovery time.

    Start: :func:`latin_orders` when the assignment is regular and square, else the natural orders.
    Local search by swapping two chunks of one worker: accept a swap that lowers ``Q_max``, or keeps
    it and lowers the Monte Carlo mean of :func:`exact_recovery_times` over ``draws`` draws with
    common random numbers (the same draws for every candidate).  Deterministic for a seed.

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> m = PartialStragglerModel.cyclic(3, delay_model("pareto", 5, scale=1.0, shape=3.0), "random")
    >>> q_max(m.assignment, optimize_orders(m, 2, draws=200), 2) <= q_max(m.assignment, m.orders, 2)
    True
    """
    ell = check_int("blocks", blocks, minimum=1)
    draws = check_int("draws", draws, minimum=1)
    sweeps = check_int("sweeps", sweeps, minimum=0)
    A = model.assignment
    try:
        orders = latin_orders(A)
    except InvalidArgumentError:
        orders = natural_orders(A)
    return _polish(A, orders, ell, _steps(model, draws, seed), sweeps)


def _polish(
    A: np.ndarray, orders: tuple[np.ndarray, ...], ell: int, steps: np.ndarray, sweeps: int
) -> tuple[np.ndarray, ...]:
    """Swaps that lower ``Q_max``, or keep it and lower the Monte Carlo mean exact-recovery time."""
    best = [q_max(A, orders, ell), _mean_time(A, orders, steps, ell)]

    def better(trial: tuple[np.ndarray, ...]) -> bool:
        q = q_max(A, trial, ell)
        if q > best[0]:
            return False
        t = _mean_time(A, trial, steps, ell)
        if q < best[0] or t < best[1] - 1e-12 * max(1.0, abs(best[1])):
            best[:] = [q, t]
            return True
        return False

    return _swap_search(orders, better, sweeps)


def _swap_search(
    orders: tuple[np.ndarray, ...], better: Callable[[tuple[np.ndarray, ...]], bool], sweeps: int | None
) -> tuple[np.ndarray, ...]:
    """First-improvement search over swaps of two chunks of one worker; ``better`` accepts a move.

    Stops after ``sweeps`` sweeps (``None``: no limit) or at the first sweep without a move.
    """
    done = 0
    while sweeps is None or done < sweeps:
        done += 1
        improved = False
        for j in range(len(orders)):
            size = orders[j].size
            for a in range(size):
                for b in range(a + 1, size):
                    cand = orders[j].copy()
                    cand[[a, b]] = cand[[b, a]]
                    trial = orders[:j] + (cand,) + orders[j + 1 :]
                    if better(trial):
                        orders, improved = trial, True
        if not improved:
            break
    return orders


def _descend(A: np.ndarray, orders: tuple[np.ndarray, ...], ell: int, best_q: int) -> tuple[np.ndarray, ...]:
    """Swaps down to a local minimum of (``Q_max``, ``Σ_i max(0, m + 2 - g_i)²``), ``m`` from ``best_q``."""
    target = int(A.sum()) + 3 - best_q  # two above the best least g_i: chunks just below it still count

    def key(trial: tuple[np.ndarray, ...]) -> tuple[int, int]:
        g = _g_values(A, trial, ell)
        return -int(g.min()), int((np.maximum(0, target - g) ** 2).sum())

    state = [key(orders)]

    def lower(trial: tuple[np.ndarray, ...]) -> bool:
        k = key(trial)
        if k < state[0]:
            state[0] = k
            return True
        return False

    return _swap_search(orders, lower, None)


class OrderSearch(NamedTuple):
    """The result of :func:`search_orders`."""

    orders: tuple[np.ndarray, ...]
    q_max: int
    bound: int | None
    certified: bool
    restarts: int


def _regular_bound(A: np.ndarray, ell: int) -> int | None:
    """:func:`regular_q_max_bound` where it applies (square, every row and column sum ``δ <= 9``)."""
    delta = int(A[:, 0].sum())
    regular = A.shape[0] == A.shape[1] and (A.sum(axis=0) == delta).all() and (A.sum(axis=1) == delta).all()
    return regular_q_max_bound(A.shape[1], delta, ell) if regular and delta <= 9 else None


def search_orders(
    model: PartialStragglerModel,
    blocks: int = 1,
    *,
    draws: int = 2000,
    seed: int = 0,
    sweeps: int = 3,
    restarts: int = 1000,
) -> OrderSearch:
    """:func:`optimize_orders`, then seeded random restarts that may lower ``Q_max`` further (§59.2).

    The swap search of :func:`optimize_orders` can stop above the least ``Q_max`` (Proposition
    59.7).  Each restart draws uniform orders and descends by swaps on ``Q_max`` first and then on
    ``Σ_i max(0, m + 2 - g_i)²``, ``m`` the best least ``g_i`` so far: a smooth surrogate that
    raises the weakest chunks together.  A restart replaces the result only when its ``Q_max`` is
    lower, and the winner is then polished as :func:`optimize_orders` does, so the result is never
    worse than :func:`optimize_orders`' for the same arguments.  When the assignment is ``δ``-regular
    and square (``δ <= 9``), ``bound`` is :func:`regular_q_max_bound`; the search stops once it is
    reached and ``certified`` says the orders are optimal.  ``restarts`` is the number run.
    Deterministic for a seed.

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> A = 1 - np.eye(6, dtype=np.int64)
    >>> m = PartialStragglerModel(A, latin_orders(A), delay_model("shifted-exponential", 6, shift=1.0, rate=1.0))
    >>> q_max(A, optimize_orders(m, 3, draws=50, sweeps=1), 3)    # the swap search stays at Latin's
    25
    >>> res = search_orders(m, 3, draws=50, sweeps=1)
    >>> res.q_max, res.bound, res.certified, q_max(A, res.orders, 3)
    (24, 24, True, 24)
    """
    ell = check_int("blocks", blocks, minimum=1)
    draws = check_int("draws", draws, minimum=1)
    sweeps = check_int("sweeps", sweeps, minimum=0)
    restarts = check_int("restarts", restarts, minimum=0)
    A = model.assignment
    orders = optimize_orders(model, ell, draws=draws, seed=seed, sweeps=sweeps)
    best_q = q_max(A, orders, ell)
    bound = _regular_bound(A, ell)
    rng = rng_from_seed(seed)
    winner = None
    done = 0
    while done < restarts and best_q != bound:
        done += 1
        found = _descend(A, tuple(rng.permutation(o) for o in natural_orders(A)), ell, best_q)
        if q_max(A, found, ell) < best_q:
            winner, best_q = found, q_max(A, found, ell)
    if winner is not None:  # lower the mean time without raising Q_max, as optimize_orders does
        orders = _polish(A, winner, ell, _steps(model, draws, seed), sweeps)
        best_q = q_max(A, orders, ell)
    return OrderSearch(orders, best_q, bound, best_q == bound, done)


@dataclass(frozen=True)
class MeanCI:
    """A Monte Carlo mean with its 95 % interval (the unit is one delay draw); ``method`` says which.

    ``"betting"``: the bounded-mean interval of :func:`gcsim._stats.betting_interval`, valid at every
    number of draws (for quantities with known bounds: normalized errors, their differences);
    ``"t"``: the Student-t interval, asymptotic (for times, whose range is not bounded).
    """

    mean: float
    lo: float
    hi: float
    draws: int
    method: str = "t"


def mean_ci(values: Any, bounds: tuple[float, float] | None = None) -> MeanCI:
    """Mean and 95 % interval of per-draw values (the unit is one draw).

    With ``bounds`` ``(a, b)`` (every possible value lies in ``[a, b]``) the interval is the betting
    interval, valid at every sample size and one-sided where every draw sits at a bound (no event
    seen is not a zero-width interval; theory §57.12); without, the t interval.

    >>> r = mean_ci([1.0, 2.0, 3.0])
    >>> r.mean, round(r.lo, 4), round(r.hi, 4), r.draws, r.method
    (2.0, -0.4841, 4.4841, 3, 't')
    >>> r = mean_ci(np.zeros(2000), bounds=(0.0, 1.0))         # never an error in 2000 draws
    >>> r.mean, r.lo, round(r.hi, 4), r.method
    (0.0, 0.0, 0.0037, 'betting')
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise InvalidArgumentError("values", "need at least one draw")
    mean = float(x.mean())
    if bounds is not None:
        a = check_real("bounds", bounds[0])
        b = check_real("bounds", bounds[1], minimum=a, strict_min=True)
        slack = 1e-9 * (b - a)  # round-off of a normalized value; the interval clips it
        if x.min() < a - slack or x.max() > b + slack:
            raise InvalidArgumentError("bounds", f"values lie outside [{a}, {b}]")
        lo, hi = betting_interval(x, a, b)
        return MeanCI(mean, float(lo), float(hi), int(x.size), "betting")
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.inf
    lo, hi = t_interval(mean, se, x.size - 1)
    return MeanCI(mean, float(lo), float(hi), int(x.size))


@dataclass(frozen=True)
class ProtocolComparison:
    """Partial vs classic protocol on the same draws (errors normalized by ``ℓN``)."""

    exact_partial: MeanCI
    exact_classic: MeanCI
    speedup: MeanCI
    error_partial: MeanCI
    error_classic: MeanCI
    deadline: float
    blocks: int


def compare_protocols(
    model: PartialStragglerModel, blocks: int, deadline: float, *, draws: int = 1000, seed: int = 0
) -> ProtocolComparison:
    """Exact-recovery time and normalized error at ``deadline``, partial vs classic, on common draws.

    ``speedup`` is the per-draw ratio classic / partial exact-recovery time. Times and the speedup
    take t intervals (no known bound); the errors, in ``[0, 1]``, betting intervals (theory §57.12).

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> dm = delay_model("bimodal", 6, p_slow=0.2, fast_shift=1.0, fast_rate=2.0, slow_shift=4.0, slow_rate=1.0)
    >>> r = compare_protocols(PartialStragglerModel.cyclic(3, dm), blocks=1, deadline=2.0, draws=100)
    >>> r.error_partial.mean <= r.error_classic.mean, r.speedup.lo > 1
    (True, True)
    """
    ell = check_int("blocks", blocks, minimum=1)
    deadline = check_real("deadline", deadline, minimum=0.0)
    classic_tolerance(model.assignment, ell)
    C = chunk_completion_times(model, draws, seed)
    tp = exact_recovery_times(C, ell)
    tc = classic_exact_times(model, C, ell)
    scale = ell * model.num_chunks
    ep = partial_error_from_coverage(coverage(C, deadline), ell) / scale
    ec = classic_errors(model, C, ell, deadline) / scale
    unit = (0.0, 1.0)
    return ProtocolComparison(
        mean_ci(tp), mean_ci(tc), mean_ci(tc / tp), mean_ci(ep, unit), mean_ci(ec, unit), deadline, ell
    )
