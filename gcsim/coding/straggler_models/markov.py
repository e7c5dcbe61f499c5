"""Kind ``"markov"``: one two-state chain per worker across iterations, started in its stationary law."""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..._validation import check_dense_size, check_int
from ...errors import VerificationError
from ..straggler_base import StragglerModel, readonly, rng_from_seed
from ._common import _probabilities, _scalar_or_list, independent_patterns

__all__ = ["MarkovParams", "MarkovModel"]


class MarkovParams(NamedTuple):
    """Parameters of :class:`MarkovModel` (floats, or lists of one per worker)."""

    n: int
    p_enter: Any
    p_leave: Any


class MarkovModel(StragglerModel):
    """Per-worker two-state Markov chain across iterations.

    ``p_enter`` = P(arriving worker starts straggling next iteration), in [0, 1);
    ``p_leave`` = P(straggler recovers next iteration), in (0, 1].  Chains are
    independent across workers and start from their stationary law, so at every
    iteration worker ``j`` straggles with probability
    ``π_j = p_enter / (p_enter + p_leave)``.

    Examples
    --------
    >>> m = MarkovModel(3, p_enter=0.1, p_leave=0.5)
    >>> m.sample(4, seed=0).shape, round(float(m.stationary[0]), 4)
    ((4, 3), 0.1667)
    """

    model_kind: ClassVar[str] = "markov"
    order: ClassVar[int] = 50
    spec_order: ClassVar[int] = 50
    parameters: ClassVar[tuple[str, ...]] = ("p_enter", "p_leave")
    spec_values: ClassVar[tuple[tuple[str, type], ...] | None] = (("P_ENTER", float), ("P_LEAVE", float))
    spec_example: ClassVar[str] = "0.05,0.5"
    cli_example: ClassVar[str] = "0.05,0.5"

    def __init__(self, n: int, p_enter: Any, p_leave: Any):
        super().__init__(n)
        self.p_enter = readonly(_probabilities("p_enter", p_enter, self.n))
        self.p_leave = readonly(_probabilities("p_leave", p_leave, self.n, allow_zero=False, allow_one=True))

    @property
    def stationary(self) -> np.ndarray:
        """Stationary straggling probability of each worker."""
        return self.p_enter / (self.p_enter + self.p_leave)

    def independent_p(self) -> np.ndarray | None:
        # the chains start stationary and are independent across workers: every iteration's pattern
        # is Bernoulli(π_j) (Lemma 8, §40.6)
        return self.stationary

    def expectation(self, routes: Any) -> Any:
        # i.i.d. draws of the stationary law: no correlated iterations, no batch means
        return routes.independent(self.stationary)

    def exact_patterns(self, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
        return independent_patterns(self.stationary, limit)

    def pattern_budget(self, exact_limit: int, samples: int, worst_limit: int) -> int:
        return 2**self.n if self.n < 63 and 2**self.n <= exact_limit else samples

    @property
    def params(self) -> MarkovParams:
        return MarkovParams(self.n, _scalar_or_list(self.p_enter), _scalar_or_list(self.p_leave))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"p_enter": self.p_enter, "p_leave": self.p_leave}

    def _verify(self) -> None:
        ok = (
            self.p_enter.shape == self.p_leave.shape == (self.n,)
            and np.all((self.p_enter >= 0) & (self.p_enter < 1))
            and np.all((self.p_leave > 0) & (self.p_leave <= 1))
        )
        if not ok:
            raise VerificationError("MarkovModel: p_enter must lie in [0, 1) and p_leave in (0, 1], one per worker")

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        """``count`` consecutive iterations (rows) of the chains."""
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        u = rng.random((count, self.n))
        out = np.empty((count, self.n), dtype=bool)
        if count == 0:
            return out
        straggling = u[0] < self.stationary
        out[0] = ~straggling
        for t in range(1, count):  # sequential in t, vectorized over workers
            straggling = np.where(straggling, u[t] >= self.p_leave, u[t] < self.p_enter)
            out[t] = ~straggling
        return out

    def describe(self) -> str:
        return (
            f"Markov: per-worker two-state chains, p_enter={self.params.p_enter}, "
            f"p_leave={self.params.p_leave}, stationary straggle prob "
            f"{self.stationary.mean():.4g} (mean), n={self.n}"
        )


MODELS = (MarkovModel,)
