r"""The worst case of a fixed decoder by mixed-integer programming, and a bad straggler set (theory §43.4–43.5).

For an encoder ``B`` and a decoder ``X`` fixed before the stragglers are known (rescaled by a
constant ``c``: ``1``, a number, or ``n/|F|``, which is constant once ``s`` is), the error on the
non-stragglers ``F`` is a quadratic function of the 0/1 indicator ``x = 1_F``:

.. math:: \mathrm{err}_X(B, F) = \|B\,\mathrm{diag}(x)\,cX - T\|_F^2
          = c^2 x^\top G x - 2c\,g^\top x + mN,\qquad G = (B^\top B)\circ(XX^\top),\ g_j = \sum_l X_{jl}(B^\top T)_{jl}.

:func:`fixed_decoder_worst_case` maximizes it over ``|F| = n - s`` exactly as a mixed-integer
linear program (every product ``x_i x_j`` a variable ``y_ij`` with McCormick's four inequalities,
plus the valid equalities ``Σ_j y_ij = (f - 1) x_i``; Theorem 43.6) solved by HiGHS through
:func:`scipy.optimize.milp`, an open solver.  The set found is re-evaluated with NumPy
(:func:`gcsim.coding.evaluate.fixed_decoder_error`), and the solver's dual bound is reported beside
it.  This is the formulation of Munim & Ramamoorthy's CVX_AGC ``MILP.py`` (which maximizes
``xᵀBᵀBx`` with Gurobi's non-convex MIQP; for a doubly stochastic ``B`` and ``X = 1`` that is the
same maximizer), linearized.  :func:`bad_straggler_set` is their greedy heuristic (``OptvsFixed.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import limits
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError
from .encoders._common import as_assignment
from .evaluate import fixed_decoder_error, optimal_error
from .schemes import Scheme

__all__ = [
    "FixedWorstCase",
    "fixed_decoder_worst_case",
    "fixed_decoder_quadratic",
    "bad_straggler_set",
]


@dataclass(frozen=True)
class FixedWorstCase:
    """The result of :func:`fixed_decoder_worst_case`.

    Attributes
    ----------
    value : float
        ``err_X(B, F)`` at the straggler set found, evaluated by NumPy (a lower bound on the worst case,
        equal to it when ``optimal``).
    bound : float
        The solver's dual bound on ``max_{|S| = s} err_X`` (within HiGHS's tolerances, not in exact
        arithmetic); ``value`` when the gap is closed.
    stragglers : numpy.ndarray
        The straggler set found, sorted.
    mask : numpy.ndarray
        Its non-straggler mask.
    optimal : bool
        HiGHS proved the set optimal (status 0: relative gap below ``1e-9``).
    optimal_error : float
        The optimal-decoding error ``err(B, F)`` at that set, a lower bound on the worst optimal error.
    status : str
        HiGHS's message (or why no program was needed).
    seconds : float
        Wall time of the solve.
    normalized : bool
        ``value``, ``bound`` and ``optimal_error`` divided by ``mN``.
    """

    value: float
    bound: float
    stragglers: np.ndarray
    mask: np.ndarray
    optimal: bool
    optimal_error: float
    status: str
    seconds: float
    normalized: bool = False


def _scale(rescale: Any, n: int, f: int) -> tuple[float, Any]:
    """The constant ``c`` and the ``rescale`` argument of :func:`fixed_decoder_error` giving it."""
    if rescale is None:
        return 1.0, None
    if isinstance(rescale, str):
        if rescale == "arrivals":
            return (n / f if f else 1.0), "arrivals"
        raise InvalidArgumentError(
            "rescale",
            f"must be None, a number or 'arrivals' (the error is then quadratic in the mask), got {rescale!r}",
        )
    c = check_real("rescale", rescale)
    return c, c


def _check_scheme(scheme: Any) -> None:
    if not isinstance(scheme, Scheme):
        raise InvalidArgumentError("scheme", f"must be a gcsim.coding.Scheme, got {type(scheme).__name__}")


def fixed_decoder_quadratic(scheme: Any, decoder: Any = None) -> tuple[np.ndarray, np.ndarray, float]:
    r"""``(G, g, mN)`` with ``err_X(B, F) = c² xᵀ G x - 2c gᵀ x + mN`` for ``x = 1_F`` (Lemma 43.5).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> G, g, total = fixed_decoder_quadratic(sch, np.ones((2, 1)))
    >>> G.tolist(), g.tolist(), total
    ([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0], 2.0)
    """
    _check_scheme(scheme)
    B = np.asarray(scheme.B, dtype=float)
    X = scheme.decoder if decoder is None else decoder
    if X is None:
        raise InvalidArgumentError("decoder", f"scheme {scheme.method!r} has no reference decoder; pass decoder=...")
    X = np.asarray(X, dtype=float)
    mN, n = B.shape
    m = scheme.m
    if X.shape != (n, m) or not np.all(np.isfinite(X)):
        raise InvalidArgumentError("decoder", f"must be a finite array of shape (n, m) = {(n, m)}, got {X.shape}")
    N = mN // m
    G = (B.T @ B) * (X @ X.T)
    BT = B.reshape(m, N, n).sum(axis=1).T  # (n, m): (Bᵀ T)_{jl} = Σ_i B_{lN+i, j}
    g = np.sum(X * BT, axis=1)
    return G, g, float(mN)


def fixed_decoder_worst_case(
    scheme: Any,
    s: int,
    *,
    decoder: Any = None,
    rescale: Any = "arrivals",
    time_limit: float = 60.0,
    normalized: bool = False,
) -> FixedWorstCase:
    r"""``max_{|S| = s} err_X(B, [n] \ S)`` for a fixed decoder, by a mixed-integer program (HiGHS).

    Parameters
    ----------
    scheme : Scheme
    s : int
        Number of stragglers, ``0 <= s <= n``.
    decoder : array (n, m), optional
        ``X``; default the scheme's reference decoder.
    rescale : None, float or "arrivals"
        ``c = 1``, a constant, or ``n/|F| = n/(n - s)`` (the default: Raviv et al.'s decoder for
        ``X = 1``).  The per-pattern best scale is not quadratic in the mask and is refused.
    time_limit : float
        Seconds HiGHS may take; past it the best set so far is returned with ``optimal=False`` and
        the dual bound reached.
    normalized : bool
        Divide by ``mN``.

    Returns
    -------
    FixedWorstCase
        Since ``err(B, F) <= err_X(B, F)`` for every ``F``, ``bound`` also bounds the worst optimal
        error, and ``optimal_error`` (the optimal error at the set found) is a lower bound on it.

    Raises
    ------
    SizeLimitError
        More than :data:`gcsim.limits.MAX_MILP_WORKERS` workers, before building the program.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]])
    >>> res = fixed_decoder_worst_case(encode(A, 1, "expander"), 2)
    >>> round(res.value, 12), res.optimal, res.stragglers.size     # both holders of a part lost
    (2.0, True, 2)
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix, vstack

    _check_scheme(scheme)
    n = scheme.n
    s = check_int("s", s, minimum=0, maximum=n)
    normalized = check_bool("normalized", normalized)
    time_limit = check_real("time_limit", time_limit, minimum=0.0, strict_min=True)
    f = n - s
    c, rescale_arg = _scale(rescale, n, f)
    if 0 < s < n:  # before any n x n product
        limits.check_work(
            "scheme", n, "the program of fixed_decoder_worst_case", limit_name="MAX_MILP_WORKERS", unit="workers"
        )
    G, g, total = fixed_decoder_quadratic(scheme, decoder)
    X = scheme.decoder if decoder is None else decoder
    scale = 1.0 / total if normalized else 1.0

    def finish(mask: np.ndarray, bound: float | None, optimal: bool, status: str, seconds: float) -> FixedWorstCase:
        value = float(fixed_decoder_error(scheme, mask, X, rescale=rescale_arg)) if f else total
        opt = float(optimal_error(scheme, mask)) if f else total
        return FixedWorstCase(
            value * scale,
            (value if bound is None else max(bound, value)) * scale,
            np.flatnonzero(~mask),
            mask,
            optimal,
            opt * scale,
            status,
            seconds,
            normalized,
        )

    if s == 0 or f == 0:
        return finish(np.full(n, f > 0), None, True, "a single straggler set", 0.0)
    I, J = np.triu_indices(n, 1)
    P = I.size
    # maximize c² Σ_i G_ii x_i - 2c g·x + 2c² Σ_{i<j} G_ij y_ij (+ mN): milp minimizes the negative
    cost = -np.concatenate([c * c * np.diag(G) - 2 * c * g, 2 * c * c * G[I, J]])
    p = np.arange(P)
    ones = np.ones(P)

    def rows(cols_x: np.ndarray, val_x: float, val_y: float) -> Any:
        r = np.concatenate([p, p])
        cols = np.concatenate([cols_x, n + p])
        vals = np.concatenate([np.full(P, val_x), np.full(P, val_y)])
        return coo_matrix((vals, (r, cols)), shape=(P, n + P))

    both = coo_matrix(
        (np.concatenate([ones, ones, -ones]), (np.concatenate([p, p, p]), np.concatenate([I, J, n + p]))),
        shape=(P, n + P),
    )
    # RLT: Σ_{j ≠ i} y_ij - (f - 1) x_i = 0, valid because Σ_j x_j = f (Theorem 43.6)
    rlt = coo_matrix(
        (
            np.concatenate([ones, ones, np.full(n, -(f - 1.0))]),
            (np.concatenate([I, J, np.arange(n)]), np.concatenate([n + p, n + p, np.arange(n)])),
        ),
        shape=(n, n + P),
    )
    card = coo_matrix((np.ones(n), (np.zeros(n, dtype=int), np.arange(n))), shape=(1, n + P))
    constraints = [
        LinearConstraint(card, f, f),
        LinearConstraint(
            vstack([rows(I, -1.0, 1.0), rows(J, -1.0, 1.0), both]).tocsr(),
            -np.inf,
            np.concatenate([np.zeros(2 * P), np.ones(P)]),
        ),
        LinearConstraint(rlt.tocsr(), 0.0, 0.0),
    ]
    integrality = np.concatenate([np.ones(n), np.zeros(P)])
    start = time.perf_counter()
    res = milp(
        cost,
        constraints=constraints,
        integrality=integrality,
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": float(time_limit), "mip_rel_gap": 1e-9, "disp": False},
    )
    seconds = time.perf_counter() - start
    if res.x is not None:
        x = np.asarray(res.x[:n]) > 0.5
    else:
        x = np.ones(n, dtype=bool)
    if int(x.sum()) != f:  # no incumbent (or a rounding accident): the greedy set stands in
        x = np.ones(n, dtype=bool)
        x[bad_straggler_set(scheme, s)] = False
    dual = getattr(res, "mip_dual_bound", None)
    bound = total - float(dual) if dual is not None and np.isfinite(dual) else None
    return finish(x, bound, res.status == 0, str(res.message), seconds)


def bad_straggler_set(assignment: Any, s: int, *, start: int = 0) -> np.ndarray:
    """Munim & Ramamoorthy's greedy bad straggler set (CVX_AGC ``OptvsFixed.py``; theory §43.6).

    Start with the holders of part ``start``; repeatedly take the part, not taken yet, with the most
    holders already in the set (the first in index order on ties; the first part not taken when no
    part meets the set) and add its holders.  When a part's holders would overflow ``s``, only its
    first new holders (in index order) are added.  The set then uncovers part ``start`` when
    ``s >= r_start``, and tends to uncover the parts taken.

    Parameters
    ----------
    assignment : array (N, n) or object with ``.assignment`` (a Scheme, a design)
    s : int
        The number of stragglers.
    start : int
        The first part (the authors' code uses part 0).

    Returns
    -------
    numpy.ndarray
        The ``s`` stragglers, sorted.

    Examples
    --------
    >>> A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]])
    >>> bad_straggler_set(A, 3).tolist()        # part 0's holders {0, 1}, then part 1 (meets at 1): add 2
    [0, 1, 2]
    """
    A = as_assignment(assignment)
    N, n = A.shape
    s = check_int("s", s, minimum=0, maximum=n)
    start = check_int("start", start, minimum=0, maximum=N - 1)
    holders = [np.flatnonzero(A[i]) for i in range(N)]
    chosen = list(holders[start][:s])
    taken = np.zeros(N, dtype=bool)
    taken[start] = True
    inside = np.zeros(n, dtype=bool)
    inside[chosen] = True
    while len(chosen) < s:
        free = np.flatnonzero(~taken)
        if free.size == 0:  # every part taken: the remaining workers hold nothing
            rest = np.flatnonzero(~inside)[: s - len(chosen)]
            chosen.extend(rest.tolist())
            break
        meets = np.array([inside[holders[i]].sum() for i in free])
        part = int(free[int(np.argmax(meets))])  # argmax: the first of the largest
        taken[part] = True
        new = [j for j in holders[part] if not inside[j]][: s - len(chosen)]
        chosen.extend(new)
        inside[new] = True
    return np.sort(np.asarray(chosen, dtype=np.int64))
