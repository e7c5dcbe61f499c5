"""Kind ``"speed"``: workers of different speeds under one delay law, a deadline deciding who straggles.

Worker ``j`` of relative speed ``s_j`` needs ``X_j / s_j`` seconds, ``X_j = shift + E_j / rate``
(``E_j ~ Exp(1)``) the shifted-exponential law of :mod:`gcsim.coding.delays` at speed 1: a speed
scales the law to ``shift_j = shift / s_j``, ``rate_j = rate s_j`` (the per-worker parameters of
:class:`~gcsim.coding.delay_laws.ShiftedExponentialDelays`).  The master waits ``deadline`` seconds;
worker ``j`` straggles when ``X_j / s_j > deadline``, independently, with

    ``p_j = P(X_j > s_j deadline) = exp(-rate (s_j deadline - shift))``  (``s_j deadline > shift``),

so the model is a :class:`~gcsim.coding.straggler_models.bernoulli.BernoulliModel` with these
``p_j`` and every exact route of independent workers applies (theory §63).  The times are those of
the symmetric load the deadline was set for: a candidate that gives worker ``j`` more parts is
evaluated at these ``p_j`` (theory §63.4 says what that assumes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..._validation import check_int, check_real
from ...errors import InvalidArgumentError
from ...limits import check_entries
from ..delay_laws import delay_model
from ..straggler_base import StragglerModel, spec_numbers
from ._common import _scalar_or_list, per_worker_text, per_worker_values
from .bernoulli import BernoulliModel

__all__ = ["SpeedParams", "SpeedModel", "law_inputs", "MODELS"]


def law_inputs(n: int, speed: Any, deadline: Any, shift: Any, rate: Any) -> tuple[np.ndarray, float, float, float]:
    """The checked speeds (one per worker; a scalar for all), deadline, shift and rate of a speed law.

    >>> law_inputs(2, 1.5, 1, 0, 2)
    (array([1.5, 1.5]), 1.0, 0.0, 2.0)
    """
    deadline = check_real("deadline", deadline, minimum=0.0, strict_min=True)
    shift = check_real("shift", shift, minimum=0.0)
    rate = check_real("rate", rate, minimum=0.0, strict_min=True)
    n = check_int("n", n, minimum=1)
    check_entries("n", (n,), "the per-worker speeds")  # before a scalar speed is spread over n workers
    try:
        s = np.array(speed, dtype=float)
        if s.ndim == 0:  # one speed for every worker
            s = np.full(int(n), float(s))
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            "speed", f"must be positive finite numbers, one per worker, got {speed!r:.60}"
        ) from None
    if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise InvalidArgumentError("speed", f"must be positive finite numbers, one per worker, got {speed!r:.60}")
    return s, deadline, shift, rate


class SpeedParams(NamedTuple):
    """Parameters of :class:`SpeedModel`: per-worker ``speed``, the ``deadline`` and the law at speed 1."""

    n: int
    speed: Any
    deadline: float
    shift: float
    rate: float


class SpeedModel(BernoulliModel):
    """Independent workers of relative speeds ``s_j``: ``p_j = P(shifted-exp(shift, rate) > s_j deadline)``.

    Examples
    --------
    >>> m = SpeedModel(4, speed=[2.0, 2.0, 1.0, 1.0], deadline=1.0, shift=0.5, rate=1.0)
    >>> np.round(m.p, 6).tolist()  # exp(-(2 - 0.5)), exp(-(1 - 0.5))
    [0.22313, 0.22313, 0.606531, 0.606531]
    >>> SpeedModel(2, speed=[1.0, 0.25], deadline=1.0, shift=0.5, rate=1.0)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: deadline: worker 1 (speed 0.25) never arrives by 1: s_j deadline <= shift = 0.5
    """

    model_kind: ClassVar[str] = "speed"
    order: ClassVar[int] = 75
    parameters: ClassVar[tuple[str, ...]] = ("speed", "deadline", "shift", "rate")
    spec_order: ClassVar[int] = 75
    # ``speed:DEADLINE,SHIFT,RATE,S_1,...,S_n``: three numbers, then one speed per worker (S*K: K workers)
    spec_values: ClassVar[tuple[tuple[str, type], ...] | None] = (
        ("DEADLINE", float),
        ("SHIFT", float),
        ("RATE", float),
        ("S_1,...,S_n", float),
    )
    spec_note: ClassVar[str] = " (S*K for K workers of speed S)"
    spec_example: ClassVar[str] = "1,0.5,1,2*3,1*3"
    cli_example: ClassVar[str] = "1,0.5,1,2*3,1*3"

    def __init__(self, n: int, speed: Any, deadline: float, shift: float = 0.0, rate: float = 1.0):
        s, deadline, shift, rate = law_inputs(n, speed, deadline, shift, rate)
        # the delay law's own per-worker checks (n, speed's length) through its parameters
        law = delay_model("shifted-exponential", n, shift=shift / s, rate=rate * s)
        slow = np.flatnonzero(s * deadline <= shift)
        if slow.size:
            j = int(slow[0])
            raise InvalidArgumentError(
                "deadline",
                f"worker {j} (speed {s[j]:g}) never arrives by {deadline:g}: s_j deadline <= shift = {shift:g}",
            )
        super().__init__(n, 1.0 - law.cdf(deadline))
        self.speed = s
        self.speed.setflags(write=False)
        self.deadline, self.shift, self.rate = deadline, shift, rate
        self.law = law

    @classmethod
    def spec_takes(cls, count: int) -> bool:
        return count >= 4

    @classmethod
    def from_spec(cls, values: Sequence[str], n: int, text: str) -> StragglerModel:
        """``speed:DEADLINE,SHIFT,RATE,S_1,...,S_n`` over ``n`` workers (``S*K``: ``K`` workers of speed ``S``).

        >>> SpeedModel.from_spec(["1", "0.5", "1", "2*2", "1"], 3, "speed:1,0.5,1,2*2,1").speed.tolist()
        [2.0, 2.0, 1.0]
        >>> SpeedModel.from_spec(["1", "0.5", "1", "2", "fast"], 2, "speed:1,0.5,1,2,fast")
        Traceback (most recent call last):
        ...
        gcsim.errors.InvalidArgumentError: stragglers: speed: S value 'fast' is not a number
        """
        if not cls.spec_takes(len(values)):
            raise InvalidArgumentError(
                "stragglers",
                f"{cls.model_kind} takes DEADLINE,SHIFT,RATE and one speed per worker, e.g. "
                f"{cls.model_kind}:{cls.spec_example} (n = 6), got {len(values)} value(s) in {text[:60]!r}",
            )
        deadline, shift, rate = spec_numbers(cls.model_kind, text, values[:3], (float, float, float), cls.spec_example)
        speed = per_worker_values(cls.model_kind, "S", values[3:], n)
        given = {"speed": speed, "deadline": deadline, "shift": shift, "rate": rate}
        # a refining kind's further parameters (the data fractions of "load-speed") take their defaults
        return cls.build(n, {**dict.fromkeys(cls.parameters), **given})

    def to_spec(self) -> str | None:
        """The spec :meth:`from_spec` reads back.

        >>> SpeedModel(3, speed=[2.0, 2.0, 1.0], deadline=1.0, shift=0.5, rate=1.0).to_spec()
        'speed:1.0,0.5,1.0,2.0*2,1.0'
        """
        head = ",".join(repr(float(v)) for v in (self.deadline, self.shift, self.rate))
        return f"{self.model_kind}:{head},{per_worker_text(self.speed)}"

    @property
    def params(self) -> Any:
        return SpeedParams(self.n, _scalar_or_list(self.speed), self.deadline, self.shift, self.rate)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {}  # rebuilt from its fields (the speeds are a list there)

    def describe(self) -> str:
        return (
            f"speeds in [{self.speed.min():g}, {self.speed.max():g}] (n={self.n}) under shifted-exponential "
            f"times (shift {self.shift:g}, rate {self.rate:g} at speed 1), deadline {self.deadline:g}: "
            f"p_j in [{self.p.min():.4g}, {self.p.max():.4g}]"
        )


MODELS = (SpeedModel,)
