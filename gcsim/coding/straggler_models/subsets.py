"""Subset models: ``|S| = s`` stragglers among ``n`` (kinds ``"fixed"``, ``"all"`` and ``"worst"``).

``"fixed"``: ``S`` uniform among the ``s``-subsets; ``"all"``: every ``s``-subset once (exhaustive);
``"worst"``: an adversary picks ``S`` (no distribution: :func:`gcsim.coding.evaluate.worst_case_error`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..._validation import check_count, check_dense_size, check_int
from ...errors import InvalidArgumentError, VerificationError
from ..straggler_base import StragglerModel, rng_from_seed
from ._common import combinations_masks

__all__ = ["FixedParams", "AllPatternsParams", "WorstCaseParams", "FixedModel", "AllPatternsModel", "WorstCaseModel"]


class FixedParams(NamedTuple):
    """Parameters of :class:`FixedModel`: ``s`` of the ``n`` workers straggle."""

    n: int
    s: int


class AllPatternsParams(NamedTuple):
    """Parameters of :class:`AllPatternsModel`: every ``s``-subset of the ``n`` workers."""

    n: int
    s: int


class WorstCaseParams(NamedTuple):
    """Parameters of :class:`WorstCaseModel`: ``s`` adversarial stragglers among ``n``."""

    n: int
    s: int


class _SubsetModel(StragglerModel):
    """``|S| = s`` stragglers among ``n`` workers: the implementation shared by the fixed-``s``,
    all-patterns and worst-case models (they differ in what they do with the subsets)."""

    _params_type: ClassVar[type] = FixedParams
    parameters: ClassVar[tuple[str, ...]] = ("s",)
    spec_values: ClassVar[tuple[tuple[str, type], ...] | None] = (("S", int),)
    spec_example: ClassVar[str] = "10"
    cli_example: ClassVar[str] = "2"

    def __init__(self, n: int, s: int):
        super().__init__(n)
        self.s = check_int("s", s, minimum=0, maximum=self.n)

    @property
    def params(self) -> Any:
        return self._params_type(self.n, self.s)

    @property
    def count(self) -> int:
        """Number of distinct patterns, ``C(n, s)``."""
        return math.comb(self.n, self.s)

    def fixed_stragglers(self) -> int | None:
        return int(self.s)

    def _verify(self) -> None:
        if not (isinstance(self.s, int) and 0 <= self.s <= self.n):
            raise VerificationError(f"{type(self).__name__}: s = {self.s!r} must lie in [0, n = {self.n}]")


class FixedModel(_SubsetModel):
    """``S`` uniform among the ``s``-subsets of ``[n]`` (fixed-s uniform model).

    Examples
    --------
    >>> masks = FixedModel(5, 2).sample(3, seed=0)
    >>> masks.shape, (~masks).sum(axis=1).tolist()
    ((3, 5), [2, 2, 2])
    """

    model_kind: ClassVar[str] = "fixed"
    order: ClassVar[int] = 10
    spec_order: ClassVar[int] = 10
    spec_note: ClassVar[str] = " (S uniform stragglers)"
    streamable: ClassVar[bool] = True

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        return self.masks_from_keys(rng.random((count, self.n)))

    def masks_from_keys(self, keys: np.ndarray) -> np.ndarray:
        """The ``s`` smallest of ``n`` i.i.d. uniforms form a uniform ``s``-subset: they straggle."""
        masks = np.ones(keys.shape, dtype=bool)
        if self.s:
            S = np.argpartition(keys, self.s - 1, axis=1)[:, : self.s]
            np.put_along_axis(masks, S, False, axis=1)
        return masks

    def subset_size(self) -> int | None:
        return int(self.s)

    def expectation(self, routes: Any) -> Any:
        # every s-subset when C(n, s) fits the budget (always for the all-patterns model), else by
        # components of B's support (theory §57.3), else Monte Carlo
        if self.exhaustive or math.comb(self.n, self.s) <= routes.exact_limit:
            return routes.all_subsets(self.s)
        found = routes.separable()
        return found if found is not None else routes.monte_carlo(self)

    def exact_patterns(self, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
        n, s = self.n, self.s
        if math.comb(n, s) > limit:
            return None
        masks = np.concatenate(list(self.iter_chunks())) if math.comb(n, s) else np.ones((1, n), bool)
        return masks, np.full(len(masks), 1.0 / len(masks)), f"all C({n},{s}) patterns"

    def pattern_budget(self, exact_limit: int, samples: int, worst_limit: int) -> int:
        total = math.comb(self.n, self.s)
        return total if total <= exact_limit else samples

    def arrival_count_expectation(self, values: np.ndarray) -> float | None:
        return float(values[self.n - self.s])

    def enumerate(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """All non-straggler masks ``(C(n, s), n)`` in lexicographic order of ``S`` (or a slice).

        Refused beyond :data:`gcsim.limits.MAX_PATTERNS` patterns (whole
        enumeration) or :data:`gcsim.limits.MAX_DENSE_ENTRIES` mask entries (one slice).
        """
        if stop is None and start == 0:
            self._check_enumerable()
        return combinations_masks(self.n, self.s, start, stop)

    def _check_enumerable(self) -> None:
        check_count(
            "s",
            self.count,
            f"straggler patterns C({self.n}, {self.s})",
            hint="use the 'fixed' model (Monte Carlo) instead of enumerating every pattern",
        )

    def iter_chunks(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        """Yield the masks of :meth:`enumerate` in chunks of at most ``chunk`` rows (up to MAX_PATTERNS in all)."""
        chunk = check_int("chunk", chunk, minimum=1)
        self._check_enumerable()
        for start in range(0, self.count, chunk):
            yield self.enumerate(start, start + chunk)

    def describe(self) -> str:
        return f"fixed-s uniform: s={self.s} of n={self.n} workers straggle (uniform subset)"


class AllPatternsModel(FixedModel):
    """Every ``s``-subset exactly once (exhaustive enumeration).

    Exhaustive evaluation walks through all ``C(n, s)`` patterns, so the model
    is refused up front when ``C(n, s)`` exceeds :data:`gcsim.limits.MAX_PATTERNS`
    (the error states both numbers); use ``"fixed"`` (Monte Carlo) instead.

    Examples
    --------
    >>> model = AllPatternsModel(4, 1)
    >>> model.count, model.enumerate().shape
    (4, (4, 4))
    >>> AllPatternsModel(91, 20)
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: s: 65,341,512,186,912,471,510 straggler patterns C(91, 20) to enumerate, over \
gcsim's limit of 10,000,000 (gcsim.limits.MAX_PATTERNS); use the 'fixed' model (Monte Carlo) instead of \
enumerating every pattern
    """

    model_kind: ClassVar[str] = "all"
    _params_type: ClassVar[type] = AllPatternsParams
    order: ClassVar[int] = 30
    spec_order: ClassVar[int] = 20
    spec_note: ClassVar[str] = ""
    exhaustive: ClassVar[bool] = True
    streamable: ClassVar[bool] = False

    def arrival_count_expectation(self, values: np.ndarray) -> float | None:
        return None  # asked for every pattern: evaluated pattern by pattern, not by the law of |F|

    def __init__(self, n: int, s: int):
        super().__init__(n, s)
        self._check_enumerable()

    def describe(self) -> str:
        return f"all patterns: every one of the C({self.n},{self.s}) = {self.count} straggler sets"


class WorstCaseModel(_SubsetModel):
    """Adversarial stragglers, ``|S| = s``: no distribution; evaluate with ``worst_case_error``."""

    model_kind: ClassVar[str] = "worst"
    _params_type: ClassVar[type] = WorstCaseParams
    order: ClassVar[int] = 40
    spec_order: ClassVar[int] = 30
    adversarial: ClassVar[bool] = True

    def expectation(self, routes: Any) -> Any:
        raise InvalidArgumentError("model", "the worst case is not an expectation; use worst_case_error(scheme, s)")

    def pattern_budget(self, exact_limit: int, samples: int, worst_limit: int) -> int:
        return min(math.comb(self.n, self.s), worst_limit)

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        raise InvalidArgumentError(
            "model",
            "the worst-case model has no distribution to sample; use gcsim.coding.evaluate.worst_case_error(scheme, s)",
        )

    def describe(self) -> str:
        return f"worst case: adversarial choice of s={self.s} stragglers among n={self.n}"


MODELS = (FixedModel, AllPatternsModel, WorstCaseModel)
