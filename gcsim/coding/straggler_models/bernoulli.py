"""Kind ``"bernoulli"``: every worker straggles independently with probability ``p_j``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..._validation import check_dense_size, check_int
from ...errors import VerificationError
from ..straggler_base import StragglerModel, readonly, rng_from_seed
from ._common import (
    _probabilities,
    _scalar_or_list,
    independent_patterns,
    pattern_weights,
    per_worker_text,
    per_worker_values,
)

__all__ = ["BernoulliParams", "BernoulliModel"]


def _comb_at_most(n: int, s: int, limit: int) -> int | None:
    """``C(n, s)`` when it is at most ``limit``, else None (decided from ``lgamma`` when far above).

    >>> _comb_at_most(10, 3, 200), _comb_at_most(10, 3, 100)
    (120, None)
    """
    log = math.lgamma(n + 1) - math.lgamma(s + 1) - math.lgamma(n - s + 1)
    if log > math.log(max(limit, 1)) + 1.0:
        return None
    c = math.comb(n, s)
    return c if c <= limit else None


class BernoulliParams(NamedTuple):
    """Parameters of :class:`BernoulliModel` (``p`` a float, or a list of one per worker)."""

    n: int
    p: Any


class BernoulliModel(StragglerModel):
    """Each worker straggles independently with probability ``p_j`` (``p`` scalar or per worker).

    Examples
    --------
    >>> m = BernoulliModel(4, 0.25)
    >>> m.sample(2, seed=0).shape, m.homogeneous
    ((2, 4), True)
    >>> BernoulliModel(3, 1.0)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: p: must be < 1.0, got 1.0
    """

    model_kind: ClassVar[str] = "bernoulli"
    order: ClassVar[int] = 20
    spec_order: ClassVar[int] = 40
    parameters: ClassVar[tuple[str, ...]] = ("p",)
    spec_values: ClassVar[tuple[tuple[str, type], ...] | None] = (("P", float),)
    spec_note: ClassVar[str] = " (or P_1,...,P_n per worker; P*K: K workers)"
    spec_example: ClassVar[str] = "0.1"
    cli_example: ClassVar[str] = "0.1"
    streamable: ClassVar[bool] = True

    def __init__(self, n: int, p: Any):
        super().__init__(n)
        self.p = readonly(_probabilities("p", p, self.n))

    # the grammar ``bernoulli:P`` or ``bernoulli:P_1,...,P_n`` (``P*K``: K workers of P); a kind that
    # refines this one with its own ``spec_values`` keeps the base grammar
    @classmethod
    def _per_worker_grammar(cls) -> bool:
        return cls.spec_values is BernoulliModel.spec_values

    @classmethod
    def spec_takes(cls, count: int) -> bool:
        return count >= 1 if cls._per_worker_grammar() else super().spec_takes(count)

    @classmethod
    def from_spec(cls, values: Sequence[str], n: int, text: str) -> StragglerModel:
        """``bernoulli:P``, or one ``P`` per worker: ``bernoulli:0.05*3,0.6*3`` (n = 6).

        >>> BernoulliModel.from_spec(["0.05*2", "0.6"], 3, "bernoulli:0.05*2,0.6").p.tolist()
        [0.05, 0.05, 0.6]
        >>> BernoulliModel.from_spec(["0.05", "1.5"], 2, "bernoulli:0.05,1.5")
        Traceback (most recent call last):
        ...
        gcsim.errors.InvalidArgumentError: p: every entry must lie in [0, 1), got 1.5 for worker 1
        """
        if not cls._per_worker_grammar() or (len(values) == 1 and "*" not in values[0]):
            return super().from_spec(values, n, text)
        return cls.build(n, {"p": per_worker_values(cls.model_kind, "P", values, n)})

    def to_spec(self) -> str | None:
        """``bernoulli:P``, or the per-worker form (:meth:`from_spec` reads it back).

        >>> BernoulliModel(4, [0.1, 0.1, 0.1, 0.5]).to_spec()
        'bernoulli:0.1*3,0.5'
        """
        if not self._per_worker_grammar() or self.homogeneous:
            return super().to_spec()
        return f"{self.model_kind}:{per_worker_text(self.p)}"

    @property
    def homogeneous(self) -> bool:
        """True when every worker has the same ``p``."""
        return bool(np.all(self.p == self.p[0]))

    @property
    def params(self) -> BernoulliParams:
        return BernoulliParams(self.n, _scalar_or_list(self.p))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"p": self.p}

    def _verify(self) -> None:
        if self.p.shape != (self.n,) or not np.all((self.p >= 0.0) & (self.p < 1.0)):
            raise VerificationError(f"BernoulliModel: p must be {self.n} probabilities in [0, 1)")

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        return self.masks_from_keys(rng.random((count, self.n)))

    def masks_from_keys(self, keys: np.ndarray) -> np.ndarray:
        return keys >= self.p[None, :]

    def weights(self, masks: np.ndarray) -> np.ndarray:
        """Probability of each non-straggler mask: ``Π_{j∈F}(1-p_j) Π_{j∈S} p_j``."""
        return pattern_weights(self.p, masks)

    def independent_p(self) -> np.ndarray | None:
        return self.p

    def declared_p(self) -> np.ndarray | None:
        return self.p

    def expectation(self, routes: Any) -> Any:
        return routes.independent(self.p)

    def exact_patterns(self, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
        return independent_patterns(self.p, limit)

    def pattern_budget(self, exact_limit: int, samples: int, worst_limit: int) -> int:
        n = self.n
        if n < 63 and 2**n <= exact_limit:
            return 2**n
        if not self.homogeneous:
            return samples
        from scipy import stats

        # the strata of the stratified estimator: enumerated within the budget, the rest sampled
        w = stats.binom.pmf(np.arange(n + 1), n, float(self.p[0]))
        budget, enumerated = exact_limit, 0
        sampled: list[float] = []
        for s in np.argsort(-w, kind="stable"):
            if w[s] < 1e-15:
                continue
            c = _comb_at_most(n, int(s), budget)
            if c is not None:
                budget -= c
                enumerated += c
            else:
                sampled.append(float(w[s]))
        weight = math.fsum(sampled)
        return enumerated + sum(max(2, int(round(samples * x / weight))) for x in sampled)

    def arrival_count_expectation(self, values: np.ndarray) -> float | None:
        if not self.homogeneous:
            return None
        from scipy import stats

        return float(stats.binom.pmf(np.arange(self.n + 1), self.n, 1.0 - float(self.p[0])) @ values)

    def describe(self) -> str:
        if self.homogeneous:
            return f"Bernoulli: each of n={self.n} workers straggles independently with p={self.p[0]:g}"
        return (
            f"Bernoulli (heterogeneous): worker j straggles independently with p_j in "
            f"[{self.p.min():g}, {self.p.max():g}], n={self.n}"
        )


MODELS = (BernoulliModel,)
