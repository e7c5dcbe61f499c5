"""The registry of all-reduce collectives: one :class:`Collective` per name, with its cost model (theory §56).

Every public module of this package exposes ``COLLECTIVES`` (a tuple of :class:`Collective`); they
are discovered and registered on first use, so adding a collective is adding a module -- no list is
kept by hand.  Each entry pairs the implementation (``run``, over ``torch.distributed`` point-to-point
operations, counting the bytes it hands to ``isend``) with the prediction of the alpha-beta model
(``cost``): the exact bytes each rank sends and the rounds on the critical path, split into the
rounds that can run before a late rank arrives (``early``) and those that cannot (``late``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import limits
from ..._discovery import declared, public_modules
from ..._validation import check_int, check_real
from ...errors import InvalidArgumentError

__all__ = [
    "summation_bound",
    "unit_roundoff",
    "Collective",
    "CollectiveCost",
    "collectives",
    "collective_names",
    "get_collective",
    "cost_table",
    "predicted_time",
]

_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def unit_roundoff(itemsize: int) -> float:
    """Unit round-off ``u`` of the IEEE float of ``itemsize`` bytes (2, 4 or 8).

    Examples
    --------
    >>> unit_roundoff(4) == 2.0**-24
    True
    """
    table = {2: 2.0**-11, 4: 2.0**-24, 8: 2.0**-53}
    if itemsize not in table:
        raise InvalidArgumentError("itemsize", f"must be 2, 4 or 8 bytes, got {itemsize!r}")
    return table[itemsize]


def gamma(k: int, u: float) -> float:
    """Higham's ``γ_k = k u / (1 − k u)``."""
    return k * u / (1 - k * u)


def summation_bound(g: Any, itemsize: int) -> np.ndarray:
    """Elementwise bound on the error of any summation order of the rows of ``g`` (theory §56.6).

    ``γ_{N−1} Σ_i |g_i|`` with ``u`` the unit round-off of the ``itemsize``-byte float (Higham, Thm 4.1
    and its tree form: every summation order uses ``N − 1`` additions, each entry of the output passes
    through at most ``N − 1`` of them).  The inputs ``g`` are the rounded vectors themselves.

    Examples
    --------
    >>> b = summation_bound(np.array([[1.0, -2.0], [3.0, 2.0]]), 4)
    >>> bool(np.allclose(b, [4 * 2.0**-24, 4 * 2.0**-24], rtol=1e-6))
    True
    """
    g = np.asarray(g, dtype=np.float64)
    return gamma(g.shape[0] - 1, unit_roundoff(int(itemsize))) * np.abs(g).sum(axis=0)


@dataclass(frozen=True)
class CollectiveCost:
    """Predicted traffic and rounds of one all-reduce of ``d`` scalars on ``N`` ranks (theory §56.1).

    Attributes
    ----------
    name : str
        The collective.
    N, d, itemsize : int
        Ranks, scalars, bytes per scalar.
    bytes_sent : tuple of int
        Exact payload bytes each rank hands to ``isend`` (index = group rank).
    early : tuple of int
        Rounds that run among the ranks that are on time, before a late rank arrives: for each, the
        largest number of bytes one rank sends or receives in it (empty for a bulk-synchronous
        collective).
    late : tuple of int
        The rounds of the critical path that need every rank, each with its largest per-rank bytes.

    Examples
    --------
    >>> c = CollectiveCost("x", 2, 4, 4, (8, 8), (), (8, 8))
    >>> c.rounds, c.time(alpha=1e-3, beta=8000.0), c.time(alpha=1e-3, beta=8000.0, delay=0.5)
    (2, 0.004, 0.504)
    """

    name: str
    N: int
    d: int
    itemsize: int
    bytes_sent: tuple[int, ...]
    early: tuple[int, ...]
    late: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in ("N", "d", "itemsize"):  # sizes: integers (2.5 or an array is no size)
            check_int(name, getattr(self, name), minimum=0)

    @property
    def rounds(self) -> int:
        """Rounds on the critical path, ``len(early) + len(late)``."""
        return len(self.early) + len(self.late)

    @property
    def max_bytes_sent(self) -> int:
        """The most bytes any rank sends."""
        return max(self.bytes_sent)

    def time(self, alpha: float, beta: float, delay: float = 0.0) -> float:
        """Predicted seconds from the first rank's start until every rank holds the sum (theory §56.1).

        ``T = max(delay, Σ_early (alpha + b/beta)) + Σ_late (alpha + b/beta)``: the early rounds overlap
        the late rank's ``delay``; a bulk-synchronous collective (no early rounds) pays ``delay`` in full.

        Parameters
        ----------
        alpha : float
            Seconds of latency per round (one-way link delay plus per-message overhead), >= 0.
        beta : float
            Bytes per second of one rank's link, each direction (> 0; ``inf`` for no bandwidth term).
        delay : float
            Seconds the late rank starts after the others (>= 0).
        """
        alpha = check_real("alpha", alpha, minimum=0.0)
        if not (isinstance(beta, float) and beta == math.inf):  # inf: latency only
            beta = check_real("beta", beta, minimum=0.0, strict_min=True)
        delay = check_real("delay", delay, minimum=0.0)

        def span(rounds: tuple[int, ...]) -> float:
            return sum(alpha + (0.0 if math.isinf(beta) else b / beta) for b in rounds)

        return max(delay, span(self.early)) + span(self.late)


@dataclass(frozen=True)
class Collective:
    """One registered all-reduce: its implementation and its cost model.

    Attributes
    ----------
    name : str
        Lower-case words joined by ``-``.
    run : callable
        ``run(tensor, *, group=None, counter=None, straggler=None, **options) -> tensor``: the sum over
        the group's ranks, called by every rank; ``counter`` a :class:`gcsim.executor.collectives.ByteCounter`
        that receives every byte handed to ``isend``; ``straggler`` the group rank that arrives late
        (read by straggler-aware collectives, accepted and ignored by the others).
    cost : callable
        ``cost(N, d, itemsize, *, straggler=None, **options) -> CollectiveCost``.
    summary : str
        One line for the tables.
    theory : str
        Where theory proves its counts (``"§56.3"``).
    options : tuple of str
        Keyword options ``run`` and ``cost`` accept.
    roundoff : callable, optional
        ``roundoff(g, itemsize, **options) -> bound``: elementwise bound (shape ``(d,)``) on
        ``|output − Σ_i g_i|`` for the inputs ``g`` (``N x d``, float64 copies of the ranks' vectors) in
        floats of ``itemsize`` bytes; default :func:`summation_bound` (any order of ``N − 1`` additions).
    schedule : callable, optional
        ``schedule(N, d, itemsize, *, straggler=None, **options) -> Schedule``: the messages of ``run`` in
        each rank's posting order, for the link-level time model (theory §56.7); None: the closed form only.
    order : int
        Position in :func:`collectives`.
    """

    name: str
    run: Callable[..., Any]
    cost: Callable[..., CollectiveCost]
    summary: str
    theory: str
    options: tuple[str, ...] = ()
    roundoff: Callable[..., Any] | None = None
    schedule: Callable[..., Any] | None = None
    order: int = 1000

    @property
    def straggler_aware(self) -> bool:
        """It starts without the late rank: its cost has early rounds."""
        return bool(self.cost(3, 6, 4).early)

    def bound(self, g: Any, itemsize: int, **options: Any) -> np.ndarray:
        """Elementwise round-off bound of this collective's output on inputs ``g`` (``roundoff``)."""
        g = np.asarray(g, dtype=np.float64)
        if self.roundoff is None:
            return summation_bound(g, itemsize)
        return np.asarray(self.roundoff(g, itemsize, **options), dtype=np.float64)

    def __repr__(self) -> str:
        return f"Collective({self.name!r})"


@functools.cache
def _discovered() -> dict[str, Collective]:
    """Every public module's ``COLLECTIVES``, by name, in their order (read once)."""
    package = __package__ or "gcsim.executor.allreduce"
    found = [
        col
        for module in public_modules(package)
        for col in declared(
            module, "COLLECTIVES", "collectives", entry=lambda c: isinstance(c, Collective), entry_is="a Collective"
        )
    ]
    registry: dict[str, Collective] = {}
    for col in sorted(found, key=lambda c: (c.order, c.name)):
        if not isinstance(col, Collective) or not _NAME.fullmatch(col.name):
            raise InvalidArgumentError("COLLECTIVES", f"malformed entry {col!r}")
        if col.name in registry:
            raise InvalidArgumentError("COLLECTIVES", f"collective {col.name!r} is defined twice")
        registry[col.name] = col
    return registry


def collectives() -> tuple[Collective, ...]:
    """Every registered collective, in their documented order.

    Examples
    --------
    >>> [c.name for c in collectives()]
    ['ring', 'tree', 'halving-doubling', 'straggler-aware', 'cerar']
    """
    return tuple(_discovered().values())


def collective_names() -> tuple[str, ...]:
    """The names of :func:`collectives`."""
    return tuple(c.name for c in collectives())


def get_collective(name: Any) -> Collective:
    """The collective registered as ``name``.

    Raises
    ------
    InvalidArgumentError
        ``name`` is not registered (the message lists the names).

    Examples
    --------
    >>> get_collective("tree").theory
    '§56.2'
    """
    col = _discovered().get(name) if isinstance(name, str) else None
    if col is None:
        raise InvalidArgumentError("collective", f"must be one of {collective_names()}, got {name!r}")
    return col


def check_sizes(N: Any, d: Any, itemsize: Any) -> tuple[int, int, int]:
    """``(N, d, itemsize)`` checked: ``N >= 2`` ranks, ``d >= 1`` scalars, ``itemsize >= 1`` bytes."""
    return check_int("N", N, minimum=2), check_int("d", d, minimum=1), check_int("itemsize", itemsize, minimum=1)


def check_straggler(straggler: Any, N: int) -> int:
    """The late rank (default ``N - 1``), checked against the group size."""
    return N - 1 if straggler is None else check_int("straggler", straggler, minimum=0, maximum=N - 1)


def predicted_time(
    col: Collective,
    N: int,
    d: int,
    itemsize: int = 4,
    *,
    alpha: float,
    beta: float,
    delay: float = 0.0,
    straggler: Any = None,
    burst: float = 0,
    framing: tuple[int, int] | None = None,
    rendezvous: bool = False,
    **options: Any,
) -> float:
    """Seconds of one all-reduce by the link-level schedule model (theory §56.7); the closed form without a schedule.

    ``burst``: bytes of each port direction's token bucket (:func:`simulate`; 0: a plain rate limit);
    ``framing``: ``(mss, header)``, the segment size and per-segment header bytes the links count
    (theory §56.10; default: payload bytes only); ``rendezvous``: a message leaves only once its receive
    is posted and the notice has crossed the link, as on gloo (theory §56.13; default: plain sockets).
    The closed form ignores all three.

    Examples
    --------
    >>> tree = get_collective("tree")
    >>> round(predicted_time(tree, 4, 1000, alpha=1e-3, beta=1e6), 6)     # 5 d b / beta + 4 alpha
    0.024
    >>> round(tree.cost(4, 1000, 4).time(1e-3, 1e6), 6)                  # the closed form: 4 rounds
    0.02
    """
    if col.schedule is None:
        return col.cost(N, d, itemsize, straggler=straggler, **options).time(alpha, beta, delay)
    s = check_straggler(straggler, check_int("N", N, minimum=2))
    return col.schedule(N, d, itemsize, straggler=s, **options).time(alpha, beta, delay, s, burst, framing, rendezvous)


def cost_table(
    N: int, d: int, itemsize: int = 4, *, alpha: float = 0.0, beta: float = math.inf, delay: float = 0.0
) -> str:
    """Markdown table of every collective's predicted rounds, bytes and time at ``(N, d)``.

    Examples
    --------
    >>> print(cost_table(4, 1000, alpha=1e-3, beta=1e6).splitlines()[2])
    | ring | 6 | 6000 | 0.01200 |
    """
    N, d, itemsize = check_int("N", N, minimum=2), check_int("d", d, minimum=0), check_int("itemsize", itemsize)
    limits.check_entries("N", (N,), "the bytes each collective's ranks send (one entry per rank)")
    rows = ["| collective | rounds | max bytes sent per rank | predicted s |", "|---|---|---|---|"]
    for col in collectives():
        c = col.cost(N, d, itemsize)
        rows.append(f"| {col.name} | {c.rounds} | {c.max_bytes_sent} | {c.time(alpha, beta, delay):.5f} |")
    return "\n".join(rows) + "\n"
