"""Kind ``"partial"``: workers that process their chunks in an order over a delay law (theory §59.1).

:class:`PartialStragglerModel` is the model of :mod:`gcsim.coding.partial_stragglers` (an assignment,
one processing order per worker, a :class:`~gcsim.coding.delay_laws.DelayModel`);
:class:`PartialStragglers` registers it as a straggler model with a deadline: its masks
(:meth:`~PartialStragglers.sample`) are the *classic* view, the workers that finished their whole
load by the deadline, so every evaluator of gcsim gives the classic protocol's error, and
:meth:`~PartialStragglers.sample_pieces` gives the (worker, chunk) pairs completed by then, from
which :func:`gcsim.coding.partial_stragglers.partial_error_from_coverage` gives the partial one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..._validation import check_binary_matrix, check_int, check_real
from ...errors import InvalidArgumentError, VerificationError
from ...limits import check_entries
from ..delay_laws import DelayModel, TraceDelays
from ..straggler_base import StragglerModel, readonly, rng_from_seed
from .delay import DelayStragglerModel

__all__ = [
    "CHUNK_TIMES",
    "PartialStragglerModel",
    "chunk_completion_times",
    "natural_orders",
    "random_orders",
    "latin_orders",
    "PartialParams",
    "PartialStragglers",
    "MODELS",
]

CHUNK_TIMES = ("linear", "independent")


def _cyclic(n: int, load: int) -> np.ndarray:
    """Worker ``j`` holds chunks ``j, .., j + load - 1`` (mod ``n``)."""
    i = np.arange(n)[:, None]
    return (((i - np.arange(n)[None, :]) % n) < load).astype(np.int64)


def _assignment(assignment: Any) -> np.ndarray:
    A = check_binary_matrix("assignment", assignment)
    if (A.sum(axis=0) == 0).any():
        raise InvalidArgumentError("assignment", "every worker must hold at least one chunk")
    if (A.sum(axis=1) == 0).any():
        raise InvalidArgumentError("assignment", "every chunk must be held by at least one worker")
    return A


def _orders(A: np.ndarray, orders: Any) -> tuple[np.ndarray, ...]:
    N, n = A.shape
    if len(orders) != n:
        raise InvalidArgumentError("orders", f"need one order per worker ({n}), got {len(orders)}")
    out = []
    for j, order in enumerate(orders):
        o = np.asarray(order)
        if o.ndim != 1 or not np.issubdtype(o.dtype, np.integer):
            raise InvalidArgumentError("orders", f"worker {j}'s order must be a 1-D integer array")
        if sorted(o.tolist()) != np.flatnonzero(A[:, j]).tolist():
            raise InvalidArgumentError("orders", f"worker {j}'s order must be a permutation of the chunks it holds")
        out.append(o.astype(np.int64))
    return tuple(out)


def _positions(A: np.ndarray, orders: tuple[np.ndarray, ...]) -> np.ndarray:
    """``pos[j, i]``: how many chunks worker ``j`` processes before chunk ``i`` (``-1``: not held)."""
    pos = np.full((A.shape[1], A.shape[0]), -1, dtype=np.int64)
    for j, o in enumerate(orders):
        pos[j, o] = np.arange(o.size)
    return pos


@dataclass(frozen=True, eq=False)
class PartialStragglerModel:
    """An assignment, one processing order per worker and the workers' delay law.

    Parameters
    ----------
    assignment : array_like
        ``N x n`` 0/1 matrix (chunks x workers); every row and column non-empty.
    orders : sequence of array_like
        ``orders[j]``: the chunks of worker ``j`` in processing order.
    delays : DelayModel
        One draw per worker (:func:`gcsim.coding.delays.delay_model` with ``n`` workers).
    chunk_times : {"linear", "independent"}
        ``"linear"``: the draw is the time of the whole load, chunks are equal; ``"independent"``:
        one draw per chunk, scaled by ``1 / load_j``.

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> A = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> m = PartialStragglerModel(A, natural_orders(A), delay_model("shifted-exponential", 3, shift=1.0, rate=1.0))
    >>> m.loads.tolist(), [o.tolist() for o in m.orders]
    ([2, 2, 2], [[0, 1], [1, 2], [0, 2]])
    """

    assignment: Any
    orders: Any
    delays: DelayModel
    chunk_times: str = "linear"

    def __post_init__(self) -> None:
        A = _assignment(self.assignment)
        object.__setattr__(self, "assignment", A)
        object.__setattr__(self, "orders", _orders(A, self.orders))
        if not isinstance(self.delays, DelayModel):
            raise InvalidArgumentError("delays", f"must be a DelayModel, got {type(self.delays).__name__}")
        if self.delays.n != A.shape[1]:
            raise InvalidArgumentError("delays", f"has {self.delays.n} workers, the assignment {A.shape[1]}")
        if self.chunk_times not in CHUNK_TIMES:
            raise InvalidArgumentError("chunk_times", f"must be one of {CHUNK_TIMES}, got {self.chunk_times!r}")

    @property
    def n(self) -> int:
        """Number of workers."""
        return int(self.assignment.shape[1])

    @property
    def num_chunks(self) -> int:
        """Number of chunks ``N``."""
        return int(self.assignment.shape[0])

    @property
    def loads(self) -> np.ndarray:
        """Chunks per worker."""
        return self.assignment.sum(axis=0)

    @classmethod
    def cyclic(
        cls, load: int, delays: DelayModel, orders: str = "latin", *, seed: int = 0, chunk_times: str = "linear"
    ) -> PartialStragglerModel:
        """The cyclic assignment (worker ``j`` holds chunks ``j..j+load-1`` mod ``n``, ``n = delays.n``).

        ``orders``: ``"latin"`` (:func:`latin_orders`), ``"natural"`` or ``"random"`` (``seed``).

        >>> from gcsim.coding.delays import delay_model
        >>> m = PartialStragglerModel.cyclic(2, delay_model("pareto", 4, scale=1.0, shape=2.0), "natural")
        >>> m.assignment.sum(axis=0).tolist(), m.orders[3].tolist()
        ([2, 2, 2, 2], [0, 3])
        """
        if not isinstance(delays, DelayModel):
            raise InvalidArgumentError("delays", f"must be a DelayModel, got {type(delays).__name__}")
        load = check_int("load", load, minimum=1, maximum=delays.n)
        A = _cyclic(delays.n, load)
        makers = {"latin": latin_orders, "natural": natural_orders, "random": lambda a: random_orders(a, seed)}
        if orders not in makers:
            raise InvalidArgumentError("orders", f"must be one of {sorted(makers)}, got {orders!r}")
        return cls(A, makers[orders](A), delays, chunk_times)

    def with_orders(self, orders: Any) -> PartialStragglerModel:
        """The same model with other orders.

        >>> from gcsim.coding.delays import delay_model
        >>> A = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]])
        >>> m = PartialStragglerModel(A, natural_orders(A), delay_model("pareto", 3, scale=1.0, shape=2.0))
        >>> m.with_orders(latin_orders(A)).orders[0].size
        2
        """
        return PartialStragglerModel(self.assignment, orders, self.delays, self.chunk_times)


def chunk_completion_times(model: PartialStragglerModel, draws: int, seed: int = 0) -> np.ndarray:
    """Times ``C[d, j, i]`` at which worker ``j`` completes chunk ``i`` in draw ``d`` (``inf``: not held).

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> A = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]])
    >>> m = PartialStragglerModel(A, natural_orders(A), delay_model("shifted-exponential", 3, shift=2.0, rate=1e9))
    >>> np.round(chunk_completion_times(m, 1)[0], 6).tolist()
    [[1.0, 2.0, inf], [inf, 1.0, 2.0], [1.0, inf, 2.0]]
    """
    draws = check_int("draws", draws, minimum=1)
    n, N = model.n, model.num_chunks
    check_entries("draws", (draws, n, N), "the draws x n x N completion times")
    loads = model.loads.astype(float)
    lmax = int(loads.max())
    if model.chunk_times == "linear":
        X = model.delays.sample_delays(draws, seed=seed)  # (draws, n)
        steps = X[:, :, None] / loads[None, :, None] * np.arange(1, lmax + 1)[None, None, :]
    else:
        X = model.delays.sample_delays(draws * lmax, seed=seed).reshape(draws, lmax, n)
        steps = np.cumsum(np.transpose(X, (0, 2, 1)) / loads[None, :, None], axis=2)
    pos = _positions(model.assignment, model.orders)
    held = pos >= 0
    C = np.full((draws, n, N), np.inf)
    jj, ii = np.nonzero(held)
    C[:, jj, ii] = steps[:, jj, pos[jj, ii]]
    return C


def natural_orders(assignment: Any) -> tuple[np.ndarray, ...]:
    """Each worker processes its chunks by increasing index.

    >>> [o.tolist() for o in natural_orders(np.array([[1, 1], [0, 1]]))]
    [[0], [0, 1]]
    """
    A = _assignment(assignment)
    return tuple(np.flatnonzero(A[:, j]).astype(np.int64) for j in range(A.shape[1]))


def random_orders(assignment: Any, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Independent uniform orders, one per worker (the baseline).

    >>> sorted(random_orders(np.ones((3, 2), dtype=int), seed=1)[0].tolist())
    [0, 1, 2]
    """
    rng = rng_from_seed(seed)
    return tuple(rng.permutation(o) for o in natural_orders(assignment))


def latin_orders(assignment: Any) -> tuple[np.ndarray, ...]:
    """Every chunk at every position once: ``A`` split into perfect matchings, matching ``k`` = position ``k``.

    Needs a square ``A`` with every row and column sum ``δ`` (a ``δ``-regular bipartite graph, which
    König's theorem splits into ``δ`` perfect matchings).

    >>> from gcsim.coding.encoders.classic import cyclic_repetition_assignment
    >>> o = latin_orders(cyclic_repetition_assignment(4, 1))
    >>> pos = _positions(cyclic_repetition_assignment(4, 1), o)
    >>> sorted(pos[:, 0][pos[:, 0] >= 0].tolist())
    [0, 1]
    """
    A = _assignment(assignment)
    N, n = A.shape
    delta = int(A[:, 0].sum())
    if N != n or (A.sum(axis=0) != delta).any() or (A.sum(axis=1) != delta).any():
        raise InvalidArgumentError(
            "assignment", "latin_orders needs a square assignment with equal row and column sums"
        )
    left = A.copy()
    layers = []
    for _ in range(delta):
        match = maximum_bipartite_matching(csr_matrix(left.T), perm_type="column")  # worker -> chunk
        layers.append(match)
        left[match, np.arange(n)] = 0
    M = np.array(layers)  # (delta, n): chunk of worker j at position k
    return tuple(M[:, j].astype(np.int64) for j in range(n))


class PartialParams(NamedTuple):
    """Parameters of :class:`PartialStragglers`: the delay law (kind and parameters), deadline, chunk times."""

    n: int
    delays: dict
    deadline: float
    chunk_times: str


class PartialStragglers(StragglerModel):
    """A :class:`PartialStragglerModel` stopped at a deadline, as a straggler model (kind ``"partial"``).

    ``sample`` gives the classic view (True = the worker finished its whole load by the deadline);
    :meth:`sample_pieces` the completed (worker, chunk) pairs on the same draws.

    Examples
    --------
    >>> from gcsim.coding.delays import delay_model
    >>> from gcsim.coding.straggler_models import straggler_model
    >>> chunks = PartialStragglerModel.cyclic(2, delay_model("shifted-exponential", 4, shift=1.0, rate=1.0))
    >>> m = straggler_model("partial", 4, chunks=chunks, deadline=1.5)
    >>> m.sample(2, seed=0).tolist(), m.sample_pieces(2, seed=0).sum(axis=(1, 2)).tolist()
    ([[False, False, True, True], [False, False, False, False]], [6, 4])
    """

    model_kind: ClassVar[str] = "partial"
    order: ClassVar[int] = 80
    parameters: ClassVar[tuple[str, ...]] = ("chunks", "deadline")

    def __init__(self, n: int, chunks: PartialStragglerModel, deadline: float):
        if not isinstance(chunks, PartialStragglerModel):
            raise InvalidArgumentError("chunks", f"must be a PartialStragglerModel, got {type(chunks).__name__}")
        n = check_int("n", n, minimum=1)
        if n != chunks.n:
            raise InvalidArgumentError("n", f"must equal the model's number of workers {chunks.n}, got {n}")
        super().__init__(n)
        self.chunks = chunks
        self.deadline = check_real("deadline", deadline, minimum=0.0)

    @property
    def params(self) -> PartialParams:
        dm = self.chunks.delays
        return PartialParams(self.n, {"kind": dm.kind, **dm.params}, self.deadline, self.chunks.chunk_times)

    def to_arrays(self) -> dict[str, np.ndarray]:
        c = self.chunks
        orders = np.full((c.n, int(c.loads.max())), -1, dtype=np.int64)
        for j, o in enumerate(c.orders):
            orders[j, : o.size] = o
        arrays = {"assignment": readonly(c.assignment.copy()), "orders": readonly(orders)}
        if isinstance(c.delays, TraceDelays):
            arrays["trace"] = c.delays.trace
        return arrays

    @classmethod
    def _rebuild(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> PartialStragglers:
        # the delay law is stored as the delay kind stores it: rebuild it through that kind
        rule = {"rule": "deadline", "deadline": float(fields["deadline"])}
        dm = DelayStragglerModel._rebuild({"n": fields["n"], "delays": fields["delays"], "rule": rule}, arrays).delays
        orders = [row[row >= 0] for row in np.asarray(arrays["orders"])]
        chunks = PartialStragglerModel(arrays["assignment"], orders, dm, fields["chunk_times"])
        return cls(fields["n"], chunks, fields["deadline"])

    def _verify(self) -> None:
        if self.chunks.n != self.n:
            raise VerificationError(f"PartialStragglers: the model has n = {self.chunks.n}, not {self.n}")

    def sample_pieces(self, count: int, seed: int = 0) -> np.ndarray:
        """``done[d, j, i]``: worker ``j`` completed chunk ``i`` by the deadline in draw ``d``."""
        return chunk_completion_times(self.chunks, count, seed) <= self.deadline

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        done = self.sample_pieces(count, seed)
        return done.sum(axis=2) == self.chunks.loads[None, :]

    def describe(self) -> str:
        return (
            f"partial stragglers: {self.chunks.num_chunks} chunks, {self.chunks.chunk_times} chunk times, "
            f"{self.chunks.delays.describe()}; deadline {self.deadline:g}"
        )

    def __repr__(self) -> str:
        return f"PartialStragglers(n={self.n}, deadline={self.deadline:g})"


MODELS = (PartialStragglers,)
