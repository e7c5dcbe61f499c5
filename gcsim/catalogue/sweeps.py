"""Bound verification over the whole catalogue, one task per (instance, encoder, s).

:func:`verify_catalogue_bounds` runs :func:`gcsim.coding.verify.verify_bounds` for every named
assignment of the catalogue (:data:`~gcsim.catalogue.named.NAMED_INSTANCES`), every encoder
method and every number of stragglers asked for, as the tasks of a :func:`gcsim.sweep.run_sweep`
sweep: serially, or on a Dask cluster.  Each task builds its instance from the catalogue's
factory, encodes it and checks the bounds with the seed of its task (:func:`gcsim.sweep.task_seed`
turned into an integer by :func:`gcsim.sweep.int_seed`), so the reports are the same on every
scheduler.  The CERAR designs of the catalogue are not gradient codes and are not part of it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_int
from ..coding.schemes import encode
from ..coding.stragglers import straggler_model
from ..coding.verify import BoundReport, verify_bounds
from ..errors import InvalidArgumentError
from ..sweep import check_scheduler, int_seed, run_sweep
from .named import NAMED_INSTANCES, build_named

__all__ = ["CatalogueBoundCase", "verify_catalogue_bounds", "default_stragglers"]


class CatalogueBoundCase(NamedTuple):
    """The bound report of one catalogue instance, encoder and number of stragglers."""

    name: str
    method: str
    s: int
    seed: int
    report: BoundReport


def default_stragglers(n: int) -> tuple[int, ...]:
    """The numbers of stragglers checked by default for ``n`` workers: 1, ``n // 4`` and ``n // 2``.

    >>> default_stragglers(91), default_stragglers(3)
    ((1, 22, 45), (1,))
    """
    n = check_int("n", n, minimum=2)
    return tuple(sorted({1, max(1, n // 4), max(1, n // 2)}))


def _check_one(
    m: int, samples: int, draws: int, case: tuple[str, str, int], seq: np.random.SeedSequence
) -> CatalogueBoundCase:
    """One task: build, encode and check one (instance, method, s)."""
    name, method, s = case
    seed = int_seed(seq)
    scheme = encode(build_named(name), m, method, seed=seed)
    report = verify_bounds(scheme, straggler_model("fixed", scheme.n, s=s), samples=samples, seed=seed, draws=draws)
    return CatalogueBoundCase(name, method, s, seed, report)


def verify_catalogue_bounds(
    names: Sequence[str] | None = None,
    *,
    m: int = 2,
    methods: Sequence[str] = ("rd",),
    stragglers: Sequence[int] | None = None,
    samples: int = 200,
    draws: int = 32,
    seed: int = 0,
    scheduler: Any = "serial",
    workers: int | None = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
) -> list[CatalogueBoundCase]:
    """Check ``lower <= err <= upper`` for every catalogue instance, encoder and ``s`` (module docstring).

    Parameters
    ----------
    names : sequence of str, optional
        Named instances (default: all of :data:`~gcsim.catalogue.named.NAMED_INSTANCES`).
    m : int >= 1
        Communication reduction of the encoders.
    methods : sequence of str
        Encoder methods of :func:`gcsim.coding.encode` (``"rd"``, ``"ns"``, ...).
    stragglers : sequence of int, optional
        Numbers of stragglers ``s`` (each below the instance's ``n``); default
        :func:`default_stragglers` of each instance.
    samples, draws : int
        Straggler patterns per check (uniform ``s``-subsets) and encoder redraws for the bounds
        on expectations (:func:`~gcsim.coding.verify.verify_bounds`).
    seed : int >= 0
        Seed of the sweep: the task ``i`` encodes and samples with ``int_seed(task_seed(seed, i))``.
    scheduler, workers, progress, checkpoint
        As in :func:`gcsim.sweep.run_sweep`.

    Returns
    -------
    list of CatalogueBoundCase
        One per (name, method, s) in that order; ``all(c.report.ok for c in cases)`` when every
        bound holds.

    Examples
    --------
    >>> cases = verify_catalogue_bounds(["petersen"], stragglers=[1, 3], draws=4, progress=False)
    >>> [(c.name, c.s, c.report.ok) for c in cases]
    [('petersen', 1, True), ('petersen', 3, True)]
    """
    chosen = list(NAMED_INSTANCES) if names is None else list(names)
    unknown = [x for x in chosen if x not in NAMED_INSTANCES]
    if not chosen or unknown:
        raise InvalidArgumentError(
            "names", f"must name catalogue instances ({', '.join(NAMED_INSTANCES)}), got {unknown or chosen!r}"
        )
    if isinstance(methods, str) or not methods or not all(isinstance(x, str) for x in methods):
        raise InvalidArgumentError("methods", f"must be a non-empty sequence of encoder names, got {methods!r}")
    m = check_int("m", m, minimum=1)
    samples = check_int("samples", samples, minimum=1)
    draws = check_int("draws", draws, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    check_scheduler(scheduler)
    if stragglers is not None:
        stragglers = [check_int("stragglers", s, minimum=0) for s in stragglers]
        if not stragglers:
            raise InvalidArgumentError("stragglers", "must be a non-empty sequence of straggler counts")
    cases: list[tuple[str, str, int]] = []
    for name in chosen:
        workers_n = _n_of(name)
        for s in default_stragglers(workers_n) if stragglers is None else stragglers:
            if s >= workers_n:
                raise InvalidArgumentError("stragglers", f"{s} is not below n = {workers_n} workers of {name}")
            cases.extend((name, method, s) for method in methods)
    task = functools.partial(_check_one, m, samples, draws)
    return run_sweep(
        task,
        cases,
        seed=seed,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        checkpoint=checkpoint,
        desc="catalogue bounds",
    )


def _n_of(name: str) -> int:
    """The number of workers ``n`` of a catalogue instance (the columns of its assignment)."""
    return int(encode(build_named(name), 1, "naive").n)
