"""The straggler-model base class (docs/theory.md §5.2), shared by every kind of model.

It lives in its own module so that the concrete models (:mod:`gcsim.coding.stragglers`) and the
models driven by delays (:mod:`gcsim.coding.delays`) both build on it without importing each
other in a cycle: ``stragglers`` imports ``delays`` (its factory builds delay models), and both
import this module.

**Mask convention.**  ``sample(count, seed)`` returns boolean *non-straggler* masks of shape
``(count, n)``: ``mask[j] is True`` means worker ``j``'s transmission arrives (``j ∈ F``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int

__all__ = ["StragglerModel", "rng_from_seed"]


def rng_from_seed(seed: Any) -> np.random.Generator:
    """The generator of a non-negative integer seed (the one source of randomness of every model).

    Examples
    --------
    >>> float(rng_from_seed(0).random()) == float(np.random.default_rng(0).random())
    True
    """
    return np.random.default_rng(check_int("seed", seed, minimum=0))


class StragglerModel:
    """Base class.  ``sample(count, seed)`` -> bool ``(count, n)``, True = the worker arrives."""

    kind = "model"

    def __init__(self, n: int):
        self.n = check_int("n", n, minimum=1)

    @property
    def params(self) -> dict:
        """Parameters of the model (for manifests)."""
        return {"n": self.n}

    def sample(self, count: int, seed: int = 0) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        """One-line human description of the model."""
        return f"{self.kind} straggler model on n={self.n} workers"

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if np.isscalar(v))
        return f"{type(self).__name__}({args})"
