"""A certified lower bound for every design of a given load under independent stragglers (theory §63.7).

Worker ``j`` straggles with probability ``p_j``, independently of the others; worker ``j`` holds the
fraction ``f_j`` of the data (``f_j = l_j / N``).  Whatever the number ``N`` of parts, the
assignment, the coefficients of the encoder (with support in the assignment) and ``m``, the
normalized expected error of optimal decoding is at least (Lemma 63.7)

``LP_m(p, f) = min { sum_T x_T g_m(T) : x >= 0, sum_T x_T = 1, sum_{T ∋ j} x_T = f_j for every j }``

over the subsets ``T`` of the workers, ``g_m(T) = E[(m - |T ∩ F|)^+] / m`` (``F`` the arrived
workers; ``g_1(T) = prod_{j in T} p_j``).  Every ``y`` with ``y_0 + sum_{j in T} y_j <= g_m(T)`` for
all ``T`` gives ``LP_m(p, f) >= y_0 + sum_j f_j y_j`` (weak duality).

:func:`equal_load_lower_bound` solves the LP with scipy's HiGHS, rounds its dual solution to
rationals, lowers ``y_0`` to the exact minimum slack, checks the ``2^n`` constraints in exact
rational arithmetic (:func:`check_load_certificate`) and returns the value of that dual: a proved
bound, whatever the solver's round-off.  The costs are checked at ``p_j`` lowered by a relative
``2^-40`` when ``p_j`` is a float (so the bound also holds for the exact number the float rounds,
``g_m`` being nondecreasing in every ``p_j``); a :class:`fractions.Fraction` is taken exactly.
The ``2^n`` costs are computed once, exactly (:func:`_scaled_costs`): HiGHS gets them rounded to
the nearest floats, the check gets them as they are.

Not a registered bound (:mod:`~gcsim.coding.bounds.registry`): those bound ``err(B, F)`` pattern by
pattern for one scheme, this one bounds an expectation over a straggler law for every scheme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np

from ... import limits
from ..._validation import check_int
from ...errors import InvalidArgumentError, SolverError, VerificationError
from ..straggler_base import StragglerModel

__all__ = ["LoadBoundCertificate", "equal_load_lower_bound", "check_load_certificate", "subset_costs"]

#: A float ``p_j`` is checked as ``p_j (1 - 2^-40)``: below the number the float rounds (2^-53 relative).
_LOWER = 1 - Fraction(1, 2**40)
#: Tighter than HiGHS's defaults (1e-7): the dual's infeasibility is what the certificate gives up.
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
#: Rounds of column generation before giving up (each adds up to 4 (n + 1) columns; a few dozen suffice).
_MAX_ROUNDS = 500


@dataclass(frozen=True)
class LoadBoundCertificate:
    """A proved lower bound on ``E[err] / (m N)`` for every design of the given loads (Lemma 63.7).

    Attributes
    ----------
    bound : float
        The largest float at most :attr:`value`.
    value : fractions.Fraction
        ``y_0 + sum_j f_j y_j``, the certified bound.
    dual : tuple of Fraction
        ``(y_0, y_1, ..., y_n)``, feasible for every subset (checked exactly).
    p : tuple of Fraction
        The probabilities the constraints were checked at (a float ``p_j`` lowered by ``2^-40``).
    fractions : tuple of Fraction
        ``f_j``, the fraction of the data on worker ``j``.
    m : int
    solver_value : float
        The LP optimum HiGHS reports (not proved); ``solver_value - bound`` is the rounding lost.
    """

    bound: float
    value: Fraction
    dual: tuple[Fraction, ...]
    p: tuple[Fraction, ...]
    fractions: tuple[Fraction, ...]
    m: int
    solver_value: float

    def verify(self) -> Fraction:
        """Check the certificate again from scratch (:func:`check_load_certificate`); its value.

        >>> c = equal_load_lower_bound([Fraction(1, 2)] * 2, 1, 2)
        >>> c.verify() == c.value == Fraction(1, 2)  # each worker alone on half the parts
        True
        """
        return check_load_certificate(self.p, self.fractions, self.m, self.dual)


def _probabilities(p: Any) -> tuple[Fraction, ...]:
    """Exact rationals at most each ``p_j`` (a Fraction or int as given, a float lowered by ``2^-40``)."""
    if isinstance(p, (str, bytes)) or not isinstance(p, (Sequence, np.ndarray)):
        raise InvalidArgumentError("model", f"must be a sequence of probabilities, got {type(p).__name__}")
    out = []
    for j, v in enumerate(np.asarray(p, dtype=object).ravel().tolist() if isinstance(p, np.ndarray) else p):
        if isinstance(v, (Fraction, Integral)) and not isinstance(v, bool):
            q = Fraction(v)
        elif isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(float(v)):
            q = Fraction(float(v)) * _LOWER
        else:
            raise InvalidArgumentError("model", f"entry {j} must be a real number in [0, 1], got {v!r}")
        if not 0 <= q <= 1:
            raise InvalidArgumentError("model", f"entry {j} must lie in [0, 1], got {v!r}")
        out.append(q)
    if not out:
        raise InvalidArgumentError("model", "needs at least one worker")
    return tuple(out)


def _slots(m: int, n: int) -> int:
    """How many arrival counts ``c < m`` can be nonzero: ``|T ∩ F| <= n``, so ``min(m, n + 1)``."""
    return min(m, n + 1)


def _arrival_counts(p: Sequence[Any], m: int, one: Any) -> list[tuple[Any, ...]]:
    """For every subset ``T`` (bit ``j`` = worker ``j``): ``P[|T ∩ F| = c]`` for ``c < min(m, n + 1)``."""
    k = _slots(m, len(p))
    out: list[tuple[Any, ...]] = [(one, *([one - one] * (k - 1)))]
    for q in p:
        a = one - q
        out += [tuple(d[c] * q + (d[c - 1] * a if c else 0) for c in range(k)) for d in out]
    return out


def _scaled_costs(p: Sequence[Fraction], m: int) -> tuple[list[int], int]:
    """``(K, S)`` with ``g_m(T) = K[T] / S`` exactly, in integers (``S = m D^n``, ``D`` the common denominator).

    With ``p_j = a_j / D`` the arrival counts of ``T``, scaled by ``D^n``, are integers divisible
    by ``D^{n - |T|}``, so adding a worker (``* a_j`` or ``* (D - a_j)``, then ``// D``) stays exact:
    no fraction is formed, which makes the ``2^n`` checks some ten times faster than Fractions.
    """
    D = math.lcm(*(q.denominator for q in p))
    a = [q.numerator * (D // q.denominator) for q in p]
    n = len(p)
    k = _slots(m, n)
    out: list[tuple[int, ...]] = [(D**n, *([0] * (k - 1)))]
    for aj in a:
        bj = D - aj
        out += [tuple((d[c] * aj + (d[c - 1] * bj if c else 0)) // D for c in range(k)) for d in out]
    return [sum((m - c) * d[c] for c in range(k)) for d in out], m * D**n


def _scaled_sums(y: Sequence[Fraction]) -> tuple[list[int], int]:
    """``(Y, Q)`` with ``sum_{j in T} y_j = Y[T] / Q`` for every subset ``T``, ``Q`` the common denominator."""
    Q = math.lcm(*(v.denominator for v in y)) if y else 1
    out = [0]
    for v in y:
        step = v.numerator * (Q // v.denominator)
        out += [s + step for s in out]
    return out, Q


def subset_costs(p: Sequence[Any], m: int = 1) -> list[Any]:
    """``g_m(T) = E[(m - |T ∩ F|)^+] / m`` for every subset ``T`` of the workers, bit ``j`` = worker ``j``.

    Exact for Fractions, in floating point for floats; ``g_1(T) = prod_{j in T} p_j``, the
    probability that every worker of ``T`` straggles.

    >>> subset_costs([Fraction(1, 2), Fraction(1, 3)])
    [Fraction(1, 1), Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]
    >>> subset_costs([Fraction(1, 2)], m=2)  # (2 - 0) / 2 or (2 - 1) / 2, each with probability 1/2
    [Fraction(1, 1), Fraction(3, 4)]
    """
    m = check_int("m", m, minimum=1)
    limits.check_work("p", 2 ** len(p), "the subsets of the workers", limit_name="MAX_LP_SUBSETS")
    if p and all(isinstance(q, Fraction) for q in p):
        K, S = _scaled_costs(list(p), m)
        return [Fraction(k, S) for k in K]
    return [sum((m - c) * d[c] for c in range(len(d))) / m for d in _arrival_counts(p, m, 1.0)]


def check_load_certificate(
    p: Sequence[Fraction], fractions: Sequence[Fraction], m: int, dual: Sequence[Fraction]
) -> Fraction:
    """Check ``y_0 + sum_{j in T} y_j <= g_m(T)`` for all ``2^n`` subsets in exact arithmetic; ``y_0 + sum_j f_j y_j``.

    Parameters
    ----------
    p, fractions : sequences of Fraction
        The straggling probabilities and the fraction of the data on each worker.
    m : int
    dual : sequence of Fraction
        ``(y_0, y_1, ..., y_n)``.

    Returns
    -------
    Fraction
        The certified lower bound on ``E[err] / (m N)``.

    Raises
    ------
    VerificationError
        A subset whose constraint fails (named), or a dual entry that is not a rational.

    Examples
    --------
    >>> p, f = [Fraction(1, 20)] * 3 + [Fraction(3, 5)] * 3, [Fraction(1, 3)] * 6
    >>> y = [Fraction(163, 2000)] + [Fraction(-79, 2000)] * 3 + [Fraction(-24, 2000)] * 3
    >>> check_load_certificate(p, f, 1, y)
    Fraction(3, 100)
    >>> check_load_certificate(p, f, 1, [y[0] + Fraction(1, 10**9), *y[1:]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.VerificationError: dual: infeasible at the subset T = {0, 1} of the workers: ...
    """
    n = len(p)
    m = check_int("m", m, minimum=1)
    if len(fractions) != n or len(dual) != n + 1:
        raise VerificationError(f"dual: needs {n + 1} entries and {n} fractions, got {len(dual)} and {len(fractions)}")
    if not all(isinstance(v, (Fraction, int)) for v in (*p, *fractions, *dual)):
        raise VerificationError("dual: p, fractions and dual must be exact rationals (Fraction)")
    limits.check_work("p", 2**n, "the subsets of the workers the certificate checks", limit_name="MAX_LP_SUBSETS")
    return _check_scaled(_scaled_costs([Fraction(q) for q in p], m), fractions, dual)


def _check_scaled(costs: tuple[list[int], int], fractions: Sequence[Fraction], dual: Sequence[Fraction]) -> Fraction:
    """:func:`check_load_certificate` given :func:`_scaled_costs`'s ``(K, S)`` of its ``p`` and ``m``."""
    K, S = costs
    n = len(fractions)
    y = [Fraction(v) for v in dual]
    Y, Q = _scaled_sums([*y[1:], y[0]])  # y_0 last: Y[T + 2^n] = (y_0 + sum_{j in T} y_j) Q
    top = 2**n
    # y_0 + sum_{j in T} y_j <= K[T] / S  <=>  Y[T + 2^n] S <= K[T] Q, in integers
    for T in range(top):
        if Y[T + top] * S > K[T] * Q:
            workers = ", ".join(str(j) for j in range(n) if T >> j & 1)
            raise VerificationError(
                f"dual: infeasible at the subset T = {{{workers}}} of the workers: y_0 + sum_(j in T) y_j = "
                f"{float(Fraction(Y[T + top], Q)):.17g} > g_m(T) = {float(Fraction(K[T], S)):.17g}"
            )
    return dual[0] + sum((f * v for f, v in zip(fractions, dual[1:], strict=True)), Fraction(0))


def _fractions(load: Any, parts: int, n: int) -> tuple[Fraction, ...]:
    """``l_j / N`` for a load (every worker) or per-worker loads, each an int in ``[0, N]``."""
    if isinstance(load, (Sequence, np.ndarray)) and not isinstance(load, (str, bytes)):
        loads = list(np.asarray(load, dtype=object).ravel().tolist() if isinstance(load, np.ndarray) else load)
        if len(loads) != n:
            raise InvalidArgumentError("load", f"must give {n} loads (one per worker), got {len(loads)}")
        return tuple(Fraction(check_int("load", v, minimum=0, maximum=parts), parts) for v in loads)
    return (Fraction(check_int("load", load, minimum=0, maximum=parts), parts),) * n


def _float_below(value: Fraction) -> float:
    """The largest float at most ``value``."""
    x = float(value)
    return math.nextafter(x, -math.inf) if Fraction(x) > value else x


def _round_dual(raw: np.ndarray, costs: tuple[list[int], int], fractions: tuple[Fraction, ...]) -> list[Fraction]:
    """The best of two roundings of the solver's dual (exact floats; small denominators), ``y_0`` made feasible.

    For given ``y_1..y_n`` the largest feasible ``y_0`` is ``min_T (g_m(T) - sum_{j in T} y_j)``;
    ``costs`` is :func:`_scaled_costs`'s ``(K, S)``.
    """
    K, S = costs
    best: tuple[Fraction, list[Fraction]] | None = None
    for y in ([Fraction(float(v)) for v in raw[1:]], [Fraction(float(v)).limit_denominator(10**6) for v in raw[1:]]):
        Y, Q = _scaled_sums(y)
        y0 = Fraction(min(k * Q - s * S for k, s in zip(K, Y, strict=True)), S * Q)
        value = y0 + sum((f * v for f, v in zip(fractions, y, strict=True)), Fraction(0))
        if best is None or value > best[0]:
            best = (value, [y0, *y])
    assert best is not None
    return best[1]


def _solve(cost: np.ndarray, fractions: tuple[Fraction, ...]) -> tuple[np.ndarray, float]:
    """The LP's dual ``(y_0, ..., y_n)`` and optimum by HiGHS, with columns generated as they price in.

    The LP has ``n + 1`` rows, so an optimal basis has at most ``n + 1`` of the ``2^n`` columns:
    start from the nested sets ``{j : f_j > t}`` (feasible: ``x`` the lengths between thresholds),
    add the columns of most negative reduced cost ``g_m(T) - y_0 - sum_{j in T} y_j`` (all ``2^n``
    priced at once in floats) until none is below ``-1e-13``.  Several times faster than the whole
    LP at ``n = 16``; the exact check afterwards does not rely on it.
    """
    from scipy.optimize import linprog

    n = len(fractions)
    f = np.array([float(v) for v in fractions])
    bits = ((np.arange(2**n)[None, :] >> np.arange(n)[:, None]) & 1).astype(float)  # bits[j, T]
    A_eq = np.vstack([np.ones(2**n), bits])
    b_eq = np.array([1.0, *f])
    weights = 1 << np.arange(n, dtype=np.int64)
    columns = {int((f > t) @ weights) for t in (0.0, *f.tolist())}  # the nested sets: a feasible start
    for _ in range(_MAX_ROUNDS):
        keep = np.array(sorted(columns))
        res = linprog(cost[keep], A_eq=A_eq[:, keep], b_eq=b_eq, bounds=(0, None), method="highs", options=_HIGHS)
        if res.status != 0:
            raise SolverError(f"HiGHS did not solve the LP of Lemma 63.7: {res.message}")
        y = np.asarray(res.eqlin.marginals, dtype=float)
        reduced = cost - y[0] - y[1:] @ bits
        order = np.argsort(reduced, kind="stable")[: 4 * (n + 1)]
        new = [int(T) for T in order if reduced[T] < -1e-13 and int(T) not in columns]
        if not new:
            return y, float(res.fun)
        columns.update(new)
    raise SolverError(f"the LP of Lemma 63.7 did not settle in {_MAX_ROUNDS} rounds of column generation")


def equal_load_lower_bound(model: Any, load: Any, parts: int, m: int = 1) -> LoadBoundCertificate:
    """No design whose worker ``j`` holds ``l_j`` of ``N`` parts has ``E[err]/(mN)`` below this (Lemma 63.7).

    Parameters
    ----------
    model : StragglerModel or sequence of probabilities
        Independent workers: a model with :meth:`~gcsim.coding.straggler_base.StragglerModel.independent_p`
        (a load-dependent model, kind ``"load-speed"``, is bound to the loads first), or the
        ``p_j`` themselves (floats, or Fractions taken exactly).
    load : int or sequence of int
        ``l``, the parts every worker holds, or one load per worker, each in ``[0, parts]``.
    parts : int
        ``N``; only the fractions ``l_j / N`` matter (the bound holds for every ``N`` with them).
    m : int
        Messages per worker (communication ``1/m``); ``m > 1`` bounds through the rank argument of
        theory §45.1 (Theorem 1), which is not tight in general.

    Returns
    -------
    LoadBoundCertificate
        ``bound`` (float, rounded down) and ``value`` (exact), with the checked dual solution.

    Raises
    ------
    InvalidArgumentError
        A bad argument, named; a model without independent workers.
    SizeLimitError
        ``2^n`` subsets over :data:`gcsim.limits.MAX_LP_SUBSETS`, before the LP is built.
    SolverError
        HiGHS did not solve the LP.

    Examples
    --------
    The example of theory §63.3: three reliable and three unreliable workers, a third of the data each.

    >>> p = [Fraction(1, 20)] * 3 + [Fraction(3, 5)] * 3
    >>> c = equal_load_lower_bound(p, 2, 6)
    >>> c.value, c.bound
    (Fraction(3, 100), 0.03)
    >>> round(equal_load_lower_bound([0.05] * 3 + [0.6] * 3, 2, 6, m=2).bound, 6)
    0.325
    """
    m = check_int("m", m, minimum=1)
    parts = check_int("parts", parts, minimum=1)
    if isinstance(model, StragglerModel):
        n = model.n
        fractions = _fractions(load, parts, n)
        if model.load_dependent:  # p_j at the loads asked about (theory §63.5)
            model = model.bind(np.array([int(f * parts) for f in fractions], dtype=np.int64), parts)
        raw_p = model.independent_p()
        if raw_p is None:
            raise InvalidArgumentError("model", f"needs independent workers (a per-worker p), got {model.describe()}")
        p = _probabilities([float(v) for v in np.asarray(raw_p, dtype=float)])
    else:
        p = _probabilities(model)
        n = len(p)
        fractions = _fractions(load, parts, n)
    limits.check_work(
        "model",
        2**n,
        f"the subsets of the {n} workers the LP of Lemma 63.7 ranges over",
        limit_name="MAX_LP_SUBSETS",
        unit="subsets",
    )
    costs = _scaled_costs(p, m)  # the 2^n costs, once: exact for the proof, rounded for the solver
    K, S = costs
    raw, solver_value = _solve(np.array([k / S for k in K]), fractions)  # int / int: correctly rounded
    dual = _round_dual(raw, costs, fractions)
    value = _check_scaled(costs, fractions, dual)  # the proof: every constraint, exactly
    return LoadBoundCertificate(_float_below(value), value, tuple(dual), p, fractions, m, solver_value)
