"""Kind ``"trace"``: replay of a measured ``workers x iterations`` delay matrix under a waiting policy."""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..._validation import check_dense_size, check_int, check_real
from ...errors import InvalidArgumentError, VerificationError
from ...limits import array_shape, check_entries
from ..straggler_base import StragglerModel, readonly

__all__ = ["TraceParams", "TraceModel"]


class TraceParams(NamedTuple):
    """Parameters of :class:`TraceModel` (the delays are its array)."""

    n: int
    iterations: int
    policy: str
    s: int | None
    deadline: float | None


class TraceModel(StragglerModel):
    """Replay of a measured delay trace.

    Parameters
    ----------
    delays : array_like, shape (n, iterations)
        Arrival delay of each worker at each iteration (``inf`` = never arrives).
    policy : {"first", "deadline"}
        ``"first"``: the PS waits for the first ``n - s`` arrivals (ties by
        worker index); ``"deadline"``: everything with delay ``<= deadline``.

    Examples
    --------
    >>> d = np.array([[1.0, 5.0], [2.0, 1.0], [3.0, 2.0]])
    >>> TraceModel(d, policy="first", s=1).masks().astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    >>> TraceModel(d, policy="deadline", deadline=2.0).masks().astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    """

    model_kind: ClassVar[str] = "trace"
    order: ClassVar[int] = 60

    @classmethod
    def build(cls, n: int | None, params: dict[str, Any]) -> TraceModel:
        if "delays" not in params:
            raise InvalidArgumentError("delays", "trace model needs delays=<workers x iterations matrix>")
        delays = params.pop("delays")
        policy = params.pop("policy", "first")
        return cls(delays, policy, n=n, **params)

    def expectation(self, routes: Any) -> Any:
        return routes.exact(routes.evaluate(self.masks()))  # the average over the recorded iterations

    def exact_patterns(self, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
        masks = np.asarray(self.masks(), dtype=bool)
        return masks, np.full(len(masks), 1.0 / len(masks)), f"the trace's {len(masks)} iterations"

    def __init__(
        self,
        delays: Any,
        policy: str = "first",
        *,
        s: int | None = None,
        deadline: float | None = None,
        n: int | None = None,
    ):
        check_entries("delays", array_shape(delays), "a trace of delays (workers x iterations)")
        try:
            raw = np.asarray(delays)
        except (TypeError, ValueError) as exc:  # ragged nested lists, objects numpy cannot read
            raise InvalidArgumentError("delays", f"cannot be read as an array ({exc})") from None
        # a complex trace would lose its imaginary part (numpy warns), strings fail in the cast
        if (
            raw.dtype == object
            or np.iscomplexobj(raw)
            or not (np.issubdtype(raw.dtype, np.number) or raw.dtype == bool)
        ):
            raise InvalidArgumentError("delays", f"must be real numbers, got dtype {raw.dtype}")
        arr = raw.astype(float)
        if arr.ndim != 2 or arr.shape[1] < 1:
            raise InvalidArgumentError("delays", f"must be a 2-D workers x iterations matrix, got shape {arr.shape}")
        if np.isnan(arr).any():
            raise InvalidArgumentError("delays", "contains NaN (use inf for 'never arrives')")
        if n is not None and check_int("n", n, minimum=1) != arr.shape[0]:
            raise InvalidArgumentError("delays", f"must have n = {n} rows, got {arr.shape[0]}")
        super().__init__(arr.shape[0])
        self.delays = readonly(arr)
        self.s: int | None
        self.deadline: float | None
        if policy == "first":
            if s is None:
                raise InvalidArgumentError("s", "policy 'first' needs s (wait for the first n - s arrivals)")
            self.s = check_int("s", s, minimum=0, maximum=self.n)
            self.deadline = None
        elif policy == "deadline":
            if deadline is None:
                raise InvalidArgumentError("deadline", "policy 'deadline' needs deadline=...")
            self.deadline = check_real("deadline", deadline)
            self.s = None
        else:
            raise InvalidArgumentError("policy", f"must be 'first' or 'deadline', got {policy!r}")
        self.policy = policy
        self._masks = readonly(self._compute())

    @property
    def iterations(self) -> int:
        """Number of iterations in the trace."""
        return int(self.delays.shape[1])

    @property
    def params(self) -> TraceParams:
        return TraceParams(self.n, self.iterations, self.policy, self.s, self.deadline)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"delays": self.delays}

    @classmethod
    def _rebuild(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> TraceModel:
        return cls(arrays["delays"], fields["policy"], s=fields["s"], deadline=fields["deadline"], n=fields["n"])

    def _verify(self) -> None:
        if self.delays.shape != (self.n, self.iterations) or np.isnan(self.delays).any():
            raise VerificationError("TraceModel: delays must be an (n, iterations) matrix without NaN")
        if not np.array_equal(self._masks, self._compute()):
            raise VerificationError("TraceModel: stored masks differ from the policy applied to the delays")

    def _compute(self) -> np.ndarray:
        D = self.delays.T  # (iterations, n)
        if self.policy == "deadline":
            return D <= self.deadline
        assert self.s is not None  # policy "first" sets s
        order = np.argsort(D, axis=1, kind="stable")
        masks = np.zeros(D.shape, dtype=bool)
        np.put_along_axis(masks, order[:, : self.n - self.s], True, axis=1)
        return masks & np.isfinite(D)

    def masks(self) -> np.ndarray:
        """The non-straggler mask of every iteration, ``(iterations, n)``."""
        return self._masks.copy()

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        """``count`` consecutive iterations starting at ``seed % iterations`` (cyclic replay)."""
        count = check_int("count", count, minimum=0)
        seed = check_int("seed", seed, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        idx = (seed + np.arange(count)) % self.iterations
        return self._masks[idx]

    def describe(self) -> str:
        how = (
            f"first n-s = {self.n - (self.s or 0)} arrivals"
            if self.policy == "first"
            else f"deadline {self.deadline:g}"
        )
        return f"trace replay: {self.iterations} iterations of n={self.n} workers, policy {how}"


MODELS = (TraceModel,)
