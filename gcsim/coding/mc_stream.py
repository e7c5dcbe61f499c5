"""Streamed Monte Carlo draws in independent chunks, on any :mod:`gcsim.sweep` scheduler (theory §42.3).

:func:`gcsim.coding.evaluate.expected_error` estimates by Monte Carlo from *draws*: a draw is
``model.sample(count, seed)`` of a fixed-``s`` or Bernoulli model (one for plain Monte Carlo,
one per sampled stratum ``|S| = s`` for stratified Bernoulli).  This module evaluates a list of
draws without ever holding their masks: each draw is cut into *units*, row ranges
``[a, a + chunk)`` with ``chunk`` fixed by ``n`` alone (:func:`chunk_rows`), and a unit's masks are
drawn directly from its rows' place in the random stream (:func:`draw_rows`: PCG64 jump-ahead,
Corollary 42.3a of the theory), so a unit needs nothing from the units before it.  Units are
grouped into tasks and run with :func:`gcsim.sweep.run_sweep` (``"serial"``, a local Dask cluster,
a scheduler address or a client); the caller gets the values of every draw in row order.

**Same numbers everywhere.** Every unit is evaluated by one call of the evaluator on the same
masks whatever runs it and however units are grouped into tasks, so the values -- hence every mean,
interval and stratum weight computed from them -- are bit for bit those of the in-process run
(BLAS threads aside, as for every sweep: :mod:`gcsim.sweep`).  For the structured route (theory
§42) the units are exactly the chunks of :func:`gcsim.coding.structured.stream_errors`, so the
values are also those of the sequential stream.

Memory: one unit of masks (``chunk x n`` booleans and the evaluator's working set, about
``32 MiB``) per running task, plus the values (one float per draw row) in the caller.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._progress import progress_bar
from .._validation import check_bool, check_int
from ..errors import InvalidArgumentError
from ..sweep import check_scheduler, run_sweep
from . import structured as _structured
from .kernels import ErrorReport, eval_context, optimal_errors

__all__ = [
    "Draw",
    "ChunkEvaluator",
    "PairedEvaluator",
    "chunk_rows",
    "draw_rows",
    "units_of",
    "evaluate_draws",
    "streamable",
]

# the (masks x n) float64 working set of one unit: the chunk of structured.stream_errors
_UNIT_BYTES = _structured._CHUNK_BYTES
# evaluation contexts of dense schemes already built in this process (a Dask worker runs many
# tasks of one sweep: the SVD of B is made once per worker, not once per task)
_CONTEXTS: dict[str, Any] = {}
_CONTEXTS_MAX = 4


class Draw(NamedTuple):
    """``model.sample(size, seed)``, not drawn yet."""

    model: Any
    size: int
    seed: int


def streamable(model: Any) -> bool:
    """True for the models whose draws can be cut into independent units (fixed-``s``, Bernoulli)."""
    return bool(getattr(model, "streamable", False))


def chunk_rows(n: int) -> int:
    """Rows per unit for ``n`` workers: ``32 MiB / (8 n)``, the chunk of ``structured.stream_errors``.

    Examples
    --------
    >>> chunk_rows(9507)
    441
    """
    return max(1, _UNIT_BYTES // (8 * max(check_int("n", n), 1)))


def draw_rows(model: Any, seed: int, start: int, stop: int) -> np.ndarray:
    """Rows ``start .. stop - 1`` of ``model.sample(count, seed)`` (any ``count >= stop``), drawn alone.

    ``model.sample`` draws ``Generator(PCG64(seed)).random((count, n))`` and maps each row; the
    doubles are consecutive outputs of the PCG64 stream, one 64-bit output each, so row ``a``
    starts at output ``a n``: the generator is advanced there (``PCG64.advance``, ``O(log)``)
    instead of drawing the rows before it (Corollary 42.3a of the theory).

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> model = straggler_model("fixed", 12, s=3)
    >>> bool(np.array_equal(draw_rows(model, 5, 40, 47), model.sample(60, 5)[40:47]))
    True
    """
    if not streamable(model):
        raise InvalidArgumentError("model", f"{type(model).__name__} draws cannot be cut into independent chunks")
    seed = check_int("seed", seed, minimum=0)
    start = check_int("start", start, minimum=0)
    stop = check_int("stop", stop, minimum=start)
    n = model.n
    bits = np.random.PCG64(seed)
    if start:
        bits.advance(start * n)
    keys = np.random.Generator(bits).random((stop - start, n))
    return model.masks_from_keys(keys)


def units_of(draws: Sequence[Draw], chunk: int) -> list[tuple[int, int, int]]:
    """``(draw index, start, stop)`` of every unit: each draw cut at the multiples of ``chunk``.

    Examples
    --------
    >>> units_of([Draw(None, 5, 0), Draw(None, 0, 1), Draw(None, 2, 2)], 2)
    [(0, 0, 2), (0, 2, 4), (0, 4, 5), (2, 0, 2)]
    """
    return [(i, a, min(a + chunk, d.size)) for i, d in enumerate(draws) for a in range(0, d.size, chunk)]


class ChunkEvaluator:
    """A picklable function ``masks -> (raw values, unreliable, patterns)`` for the units of a sweep.

    Built by :meth:`structured`, :meth:`optimal` or :meth:`fixed`; ``unreliable`` and ``patterns``
    are the counts of :class:`gcsim.coding.kernels.ErrorReport` (the caller adds them to its own).
    """

    def __init__(self, kind: str, payload: tuple, key: str | None = None):
        self.kind = kind
        self.payload = payload
        self.key = key

    @classmethod
    def structured(cls, ctx: Any) -> ChunkEvaluator:
        """The structured route (theory §42) of a :class:`~gcsim.coding.structured.StructuredContext`."""
        return cls("structured", (ctx,))

    @classmethod
    def optimal(cls, scheme: Any, method: str) -> ChunkEvaluator:
        """Optimal decoding of a dense scheme by the kernels' ``method`` route."""
        B = np.ascontiguousarray(scheme.B)
        digest = hashlib.sha256(B.tobytes())
        digest.update(f"{B.shape}|{B.dtype}|{scheme.m}|{method}".encode())
        return cls("optimal", (scheme, method), digest.hexdigest())

    @classmethod
    def fixed(cls, scheme: Any, decoder: Any, rescale: Any, p: Any, error: Callable[..., Any]) -> ChunkEvaluator:
        """A fixed decoder: ``error(scheme, masks, decoder, rescale=, p=)``.

        ``error`` is :func:`gcsim.coding.evaluate.fixed_decoder_error` (passed in: the evaluator
        module imports this one); a module-level function, so the evaluator pickles for Dask.
        """
        return cls("fixed", (scheme, decoder, rescale, p, error))

    def _context(self, scheme: Any) -> Any:
        assert self.key is not None
        ctx = _CONTEXTS.get(self.key)
        if ctx is None:
            ctx = eval_context(scheme)
            if len(_CONTEXTS) >= _CONTEXTS_MAX:
                _CONTEXTS.pop(next(iter(_CONTEXTS)))
            _CONTEXTS[self.key] = ctx
        return ctx

    def __call__(self, masks: np.ndarray) -> tuple[np.ndarray, int, int]:
        if self.kind == "structured":
            (ctx,) = self.payload
            return np.clip(ctx.errors(masks), 0.0, ctx.total), 0, 0
        if self.kind == "optimal":
            scheme, method = self.payload
            ctx = self._context(scheme)
            report = ErrorReport()
            values = optimal_errors(ctx, masks, method=method, report=report)
            return np.clip(values, 0.0, ctx.total), report.unreliable, report.patterns
        scheme, decoder, rescale, p, error = self.payload
        return np.atleast_1d(error(scheme, masks, decoder, rescale=rescale, p=p)), 0, 0


class PairedEvaluator:
    """``masks -> ([err, L] per row, unreliable, patterns)``: a :class:`ChunkEvaluator` and a bound beside it.

    ``lower`` maps masks to a per-pattern lower bound (the rank bound of theory §45, for the control
    variate of theory §57.2); both must pickle for Dask.  The values of a draw come back as an
    array of shape ``(size, 2)``.
    """

    def __init__(self, evaluator: Any, lower: Callable[[np.ndarray], np.ndarray]):
        self.evaluator = evaluator
        self.lower = lower

    def __call__(self, masks: np.ndarray) -> tuple[np.ndarray, int, int]:
        values, bad, seen = self.evaluator(masks)
        pairs = np.column_stack([np.asarray(values, dtype=np.float64), self.lower(masks)])
        return pairs, bad, seen


def _run_task(evaluator: Any, units: tuple[tuple[Any, int, int, int], ...]) -> list[tuple]:
    """One task: its units ``(model, seed, start, stop)``, each drawn and evaluated alone."""
    return [evaluator(draw_rows(model, seed, a, b)) for model, seed, a, b in units]


def evaluate_draws(
    evaluator: ChunkEvaluator | PairedEvaluator,
    draws: Sequence[Draw],
    *,
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = False,
    tasks: int | None = None,
) -> tuple[list[np.ndarray], int, int]:
    """Values of every draw (in row order), and the summed ``(unreliable, patterns)`` of the units.

    Parameters
    ----------
    evaluator : ChunkEvaluator or PairedEvaluator
        What a unit's masks are turned into (a :class:`PairedEvaluator`: ``(size, 2)`` values per draw).
    draws : sequence of Draw
        Fixed-``s`` or Bernoulli draws (:func:`streamable` models).
    scheduler : None, "serial", "local", a Dask address or a distributed.Client
        None or ``"serial"``: the units run here, one after the other.  Otherwise the units are
        grouped into about ``tasks`` tasks (default ``4 x workers``, or 16) of consecutive units
        and run by :func:`gcsim.sweep.run_sweep` (``workers``: the local cluster's processes).
        The values are the same bit for bit (module docstring).
    progress : bool
        A bar (lines on a pipe) over units (serial) or tasks (Dask).

    Examples
    --------
    >>> from gcsim.coding.structured import StructuredContext, stream_errors
    >>> from gcsim.coding.stragglers import straggler_model
    >>> ctx = StructuredContext(np.ones((1, 7)), 7, 3, 1)          # the Fano plane, m = 1
    >>> model = straggler_model("bernoulli", 7, p=0.3)
    >>> (values,), _, _ = evaluate_draws(ChunkEvaluator.structured(ctx), [Draw(model, 50, 3)])
    >>> bool(np.array_equal(values, stream_errors(ctx, model, 50, 3)))
    True
    """
    progress = check_bool("progress", progress)
    draws = [Draw(*d) for d in draws]
    for d in draws:
        if not streamable(d.model):
            raise InvalidArgumentError("model", f"{type(d.model).__name__} draws cannot be cut into independent chunks")
    if not draws:
        return [], 0, 0
    n = draws[0].model.n
    units = units_of(draws, chunk_rows(n))
    specs = [(draws[i].model, draws[i].seed, a, b) for i, a, b in units]
    if scheduler is None or (isinstance(scheduler, str) and check_scheduler(scheduler) == "serial"):
        show = progress and len(specs) > 1
        loop = progress_bar(specs, total=len(specs), desc="Monte Carlo chunks") if show else specs
        results = [evaluator(draw_rows(model, seed, a, b)) for model, seed, a, b in loop]
    else:
        target = tasks if tasks is not None else 4 * (workers or 4)
        target = check_int("tasks", target, minimum=1)
        size = max(1, math.ceil(len(specs) / target))
        groups = [tuple(specs[a : a + size]) for a in range(0, len(specs), size)]
        parts = run_sweep(
            functools.partial(_run_task, evaluator),
            groups,
            scheduler=scheduler,
            workers=workers,
            progress=progress,
            desc="Monte Carlo chunks",
        )
        results = [r for part in parts for r in part]
    out: list[list[np.ndarray]] = [[] for _ in draws]
    unreliable = patterns = 0
    for (i, _, _), (values, bad, seen) in zip(units, results, strict=True):
        out[i].append(np.asarray(values, dtype=np.float64))
        unreliable += int(bad)
        patterns += int(seen)
    empty = np.zeros((0, 2)) if isinstance(evaluator, PairedEvaluator) else np.zeros(0)
    return [np.concatenate(v) if v else empty for v in out], unreliable, patterns
