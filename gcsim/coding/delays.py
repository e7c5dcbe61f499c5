"""Delay models that generate stragglers, arrival rules, and the expected time to decode.

A *delay model* draws the time ``X_j >= 0`` at which worker ``j``'s transmission reaches the
master (``inf`` = never).  An *arrival rule* turns one row of delays into a non-straggler mask
(``True`` = the worker's transmission is used, the convention of :mod:`gcsim.coding.stragglers`)
and the time ``D`` at which the master decodes.  Proofs: ``docs/theory/47_delays.md``.

Delay models (build them with :func:`delay_model`; every parameter is a scalar or one value per
worker; workers are independent):

``"shifted-exponential"``  ``X_j = c_j + E_j / λ_j``, ``E_j ~ Exp(1)``: ``shift`` ``c_j >= 0``,
                           ``rate`` ``λ_j > 0``.
``"pareto"``               ``P(X_j > t) = (σ_j / t)^{α_j}`` for ``t >= σ_j``: ``scale`` ``σ_j > 0``,
                           ``shape`` ``α_j > 0`` (heavy tailed: ``E X_j`` is finite iff ``α_j > 1``).
``"bimodal"``              with probability ``p_slow`` the worker is slow: a mixture of two shifted
                           exponentials (``fast_shift``, ``fast_rate``) and (``slow_shift``, ``slow_rate``).
``"trace"``                replay of a measured ``workers x iterations`` delay matrix (``inf`` = never
                           arrives; the layout of :class:`gcsim.coding.stragglers.TraceModel`).

Arrival rules (:func:`arrival_rule`), for one row ``x`` of delays, ``x_(k)`` its ``k``-th smallest:

``"first"``     ``s``: use the first ``n - s`` arrivals (ties broken by worker index); the master
                decodes at ``D = x_(n-s)`` (``D = 0`` when ``s = n``).
``"deadline"``  ``deadline`` ``T >= 0``: use every ``j`` with ``x_j <= T``; the master decodes at
                ``D = min(T, x_(n))`` (it stops waiting once everyone has arrived).
``"relative"``  ``mu`` ``μ >= 0``: use every ``j`` with ``x_j <= (1 + μ) x_(1)``; the master decodes
                at ``D = min((1 + μ) x_(1), x_(n))``.

:class:`DelayStragglerModel` combines a delay model and a rule into a
:class:`~gcsim.coding.straggler_base.StragglerModel`, so it is accepted wherever gcsim takes a straggler
model (``expected_error(scheme, model)`` evaluates it by Monte Carlo).

:func:`expected_decode_time` computes ``E[D]``: by a closed form where one exists (i.i.d. shifted
exponential under ``"first"`` and ``"deadline"``, i.i.d. Pareto under ``"first"``), otherwise by
numerical integration of the survival function ``E[D] = ∫_0^∞ P(D > t) dt`` (``scipy.integrate.quad``;
the survival function of each rule is an explicit function of the workers' CDFs), exactly as an
average for a trace, and by Monte Carlo with a 95% interval on request.

Examples
--------
>>> dm = delay_model("shifted-exponential", 4, shift=1.0, rate=2.0)
>>> rule = arrival_rule("first", s=1)
>>> masks, times = rule.apply(dm.sample_delays(3, seed=0))
>>> masks.shape, times.shape, (~masks).sum(axis=1).tolist()
((3, 4), (3,), [1, 1, 1])
>>> res = expected_decode_time(dm, rule)      # 1 + (H_4 - H_1) / 2
>>> res.method, round(res.mean, 12)
('exact', 1.541666666667)
"""

from __future__ import annotations

from .arrival_rules import RULES, ArrivalRule, arrival_rule
from .decode_time import QUAD_EPSREL, DecodeTime, _quad_terms, expected_decode_time  # noqa: F401  (_quad_terms: tests read it here)
from .delay_laws import (
    DELAY_KINDS,
    BimodalDelays,
    DelayModel,
    ParetoDelays,
    ShiftedExponentialDelays,
    TraceDelays,
    delay_model,
    load_trace,
)
from .straggler_models.delay import DelayParams, DelayStragglerModel

__all__ = [
    "DELAY_KINDS",
    "RULES",
    "QUAD_EPSREL",
    "DelayModel",
    "ShiftedExponentialDelays",
    "ParetoDelays",
    "BimodalDelays",
    "TraceDelays",
    "delay_model",
    "ArrivalRule",
    "arrival_rule",
    "DelayStragglerModel",
    "DelayParams",
    "DecodeTime",
    "expected_decode_time",
    "load_trace",
]
