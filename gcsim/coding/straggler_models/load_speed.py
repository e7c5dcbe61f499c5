"""Kind ``"load-speed"``: a worker's straggling depends on its speed *and* on the data it holds (theory §63.5).

Worker ``j`` of relative speed ``s_j`` holding a fraction ``f_j`` of the data finishes at

    ``T_j = (f_j / s_j) (shift + E_j / rate)``,  ``E_j ~ Exp(1)`` independent,

(``shift + E_j / rate``: the time of the *whole* data set at speed 1, shifted exponential).  The
master waits ``deadline`` seconds; worker ``j`` straggles when ``T_j > deadline``:

    ``p_j(f_j) = exp(-rate (s_j deadline / f_j - shift))``  (``s_j deadline > shift f_j``;
    ``p_j(0) = 0``),

so the law of the patterns is a :class:`~gcsim.coding.straggler_models.bernoulli.BernoulliModel`
once the fractions are known.  They are a property of the code: :meth:`LoadSpeedModel.bind` gives
the model at a code's loads (``f_j = l_j / N``), and ``expected_error`` and the advisor evaluate
every code at its own loads, exactly when the ``2^n`` patterns fit the budget.  Unbound (``fractions``
not given) the model is the law at the uncoded split ``f_j = 1/n``.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ._common import _scalar_or_list, per_worker_text
from .bernoulli import BernoulliModel
from .speed import SpeedModel, law_inputs

__all__ = ["LoadSpeedParams", "LoadSpeedModel", "load_probabilities", "MODELS"]


class LoadSpeedParams(NamedTuple):
    """Parameters of :class:`LoadSpeedModel`; ``fractions`` None: the uncoded split ``1/n`` (unbound)."""

    n: int
    speed: Any
    deadline: float
    shift: float
    rate: float
    fractions: Any


def load_probabilities(
    speed: np.ndarray, fractions: np.ndarray, deadline: float, shift: float, rate: float
) -> np.ndarray:
    """``p_j = P[(f_j/s_j)(shift + Exp(rate)) > deadline]`` per worker (0 where ``f_j = 0``; 1 where never in time).

    Examples
    --------
    ``e^-(2 * 1 / 0.5 - 0.5)`` and ``e^-(1 * 1 / 0.5 - 0.5)``:

    >>> load_probabilities(np.array([2.0, 1.0]), np.array([0.5, 0.5]), 1.0, 0.5, 1.0).round(6).tolist()
    [0.030197, 0.22313]
    >>> load_probabilities(np.array([1.0, 1.0]), np.array([0.0, 1.0]), 1.0, 0.0, 1.0).round(6).tolist()
    [0.0, 0.367879]
    """
    f = np.asarray(fractions, dtype=float)
    held = f > 0
    margin = np.where(held, speed * deadline - shift * f, 1.0)  # s_j D - c f_j: > 0 iff it can arrive
    with np.errstate(divide="ignore", invalid="ignore"):
        expo = rate * np.where(held, margin / np.where(held, f, 1.0), np.inf)
    p = np.where(margin > 0, np.exp(-expo), 1.0)
    return np.where(held, p, 0.0)


class LoadSpeedModel(SpeedModel):
    """Independent workers whose straggling grows with their share of the data (speed ``s_j``, fraction ``f_j``).

    Examples
    --------
    >>> m = LoadSpeedModel(3, speed=[2.0, 1.0, 1.0], deadline=1.0, shift=0.5, rate=1.0)
    >>> m.fractions.round(4).tolist(), m.p.round(6).tolist()  # unbound: f_j = 1/3
    ([0.3333, 0.3333, 0.3333], [0.004087, 0.082085, 0.082085])
    >>> bound = m.bind(np.array([2, 1, 1]), 3)  # loads proportional to speed: one law for every worker
    >>> bound.p.round(6).tolist()
    [0.082085, 0.082085, 0.082085]
    >>> LoadSpeedModel(2, speed=1.0, deadline=1.0, shift=1.5).bind(np.array([2, 1]), 2)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: fractions: worker 0 (speed 1, fraction 1) never arrives by 1: s_j deadline \
<= shift f_j = 1.5 (give it less data, or a later deadline)
    """

    model_kind: ClassVar[str] = "load-speed"
    order: ClassVar[int] = 76
    spec_order: ClassVar[int] = 76
    parameters: ClassVar[tuple[str, ...]] = ("speed", "deadline", "shift", "rate", "fractions")
    spec_note: ClassVar[str] = " (S*K for K workers of speed S; times scale with each code's data per worker)"
    spec_example: ClassVar[str] = "0.5,0.5,1,2*3,1*3"
    cli_example: ClassVar[str] = "0.5,0.5,1,2*3,1*3"
    load_dependent: ClassVar[bool] = True

    def __init__(
        self, n: int, speed: Any, deadline: float, shift: float = 0.0, rate: float = 1.0, fractions: Any = None
    ):
        s, deadline, shift, rate = law_inputs(n, speed, deadline, shift, rate)
        if fractions is None:
            f = np.full(s.size, 1.0 / max(s.size, 1))
        else:
            try:
                f = np.array(fractions, dtype=float)
            except (TypeError, ValueError):
                raise InvalidArgumentError("fractions", f"must be numbers in [0, 1], got {fractions!r:.60}") from None
            if f.shape != s.shape or not np.all(np.isfinite(f)) or np.any((f < 0) | (f > 1)):
                raise InvalidArgumentError(
                    "fractions", f"must be {s.size} numbers in [0, 1], one per worker, got {fractions!r:.60}"
                )
        slow = np.flatnonzero((f > 0) & (s * deadline <= shift * f))
        if slow.size:
            j = int(slow[0])
            raise InvalidArgumentError(
                "fractions",
                f"worker {j} (speed {s[j]:g}, fraction {f[j]:g}) never arrives by {deadline:g}: s_j deadline <= "
                f"shift f_j = {shift * f[j]:g} (give it less data, or a later deadline)",
            )
        BernoulliModel.__init__(self, n, load_probabilities(s, f, deadline, shift, rate))  # not SpeedModel's law
        self.speed, self.fractions = s, f
        self.speed.setflags(write=False)
        self.fractions.setflags(write=False)
        self.deadline, self.shift, self.rate = deadline, shift, rate
        self.bound = fractions is not None

    def bind(self, loads: np.ndarray, parts: int) -> LoadSpeedModel:
        """The law at a code's loads: worker ``j`` holds ``loads[j]`` of ``parts`` parts (``f_j = l_j / N``)."""
        ell = np.asarray(loads, dtype=float)
        return LoadSpeedModel(self.n, self.speed, self.deadline, self.shift, self.rate, fractions=ell / float(parts))

    def max_load(self, parts: int) -> np.ndarray:
        """The most parts of ``parts`` each worker may hold and still arrive with a positive probability.

        >>> LoadSpeedModel(2, speed=[2.0, 1.0], deadline=1.0, shift=0.5).max_load(4).tolist()
        [4, 4]
        >>> LoadSpeedModel(2, speed=[2.0, 1.0], deadline=1.0, shift=1.0).max_load(4).tolist()
        [4, 3]
        """
        # s_j D > c l / N  <=>  l < s_j D N / c
        if self.shift == 0:
            return np.full(self.n, int(parts), dtype=np.int64)
        bound = self.speed * self.deadline * parts / self.shift
        top = np.ceil(bound).astype(np.int64) - 1
        return np.clip(top, 0, int(parts))

    @property
    def params(self) -> Any:
        frac = _scalar_or_list(self.fractions) if self.bound else None
        return LoadSpeedParams(self.n, _scalar_or_list(self.speed), self.deadline, self.shift, self.rate, frac)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {}  # rebuilt from its fields

    def to_spec(self) -> str | None:
        """The spec of the unbound law (None once bound: the fractions come from a code, not from a spec)."""
        if self.bound:
            return None
        head = ",".join(repr(float(v)) for v in (self.deadline, self.shift, self.rate))
        return f"{self.model_kind}:{head},{per_worker_text(self.speed)}"

    def describe(self) -> str:
        where = (
            f"at data fractions {per_worker_text(np.round(self.fractions, 6))}"
            if self.bound
            else "unbound (each code evaluated at its own data per worker; here f_j = 1/n)"
        )
        return (
            f"load-dependent speeds in [{self.speed.min():g}, {self.speed.max():g}] (n={self.n}): time "
            f"(f_j/s_j)(shift {self.shift:g} + Exp(rate {self.rate:g})), deadline {self.deadline:g}, {where}: "
            f"p_j in [{self.p.min():.4g}, {self.p.max():.4g}]"
        )


MODELS = (LoadSpeedModel,)
