"""Seeded sweeps of independent tasks: serially, or on Dask distributed, with the same results.

A *sweep* applies one function to a list of tasks and returns the results in task order::

    results = run_sweep(fn, tasks, seed=7, scheduler="local", workers=2)

Where the tasks run is chosen by ``scheduler``:

``"serial"`` (default)
    One after the other in this process (no extra dependency).
``"local"``
    A Dask ``LocalCluster`` created for the call and closed after it: ``workers`` processes with
    one thread each, no dashboard, scratch files in a temporary folder that is removed.
``"tcp://host:port"`` (or another Dask address such as ``tls://...``)
    The scheduler of a running Dask cluster; gcsim and the task's own modules must be
    importable on its workers.
a ``distributed.Client``
    An open client (left open): several sweeps share one cluster.

**Seeding rule.** With ``seed`` given, ``fn(task, seq)`` receives the
:class:`numpy.random.SeedSequence` of its task, ``SeedSequence(seed, spawn_key=(i,))`` for the
task at index ``i`` -- the ``i``-th child of ``SeedSequence(seed).spawn(...)`` (see
:func:`task_seed`).  It depends on the sweep's seed and the task's index only, not on the
worker, the number of workers, the order of completion or the retries, so a task computes the
same numbers wherever and whenever it runs, and a Dask sweep equals the serial sweep bit for bit
(for a function whose result depends only on its arguments; BLAS threads aside: Dask's workers
run one BLAS thread, and a kernel whose rounding depends on the thread count can differ in the
last bits from a multi-threaded serial run).  Without ``seed``, ``fn(task)`` is called.

**Lost workers.** Results are collected by the caller as the tasks finish
(``distributed.as_completed``), so a worker that dies takes with it only the tasks it was
running; the scheduler runs them again elsewhere (a task that was on
``distributed.scheduler.allowed-failures`` + 1 workers that died is given up: :class:`SweepWorkerError`).
``retries`` re-runs a task that *raised* (a transient ``OSError``, say); a task that raises on
its last try stops the sweep with its own exception.

**Checkpoints.** With ``checkpoint=folder``, each finished result is written atomically
(:func:`gcsim.io.manifest.atomic_write_bytes`) to ``folder/task_<i>.json``, in a data-only format:
canonical JSON, numbers stored by their bits (floats, complex, NumPy scalars and arrays, arrays as
base64 of their bytes), no pickle anywhere.  A checkpointed task may return ``None``, ``bool``,
``int``, ``float``, ``complex``, ``str``, NumPy numbers and bool/integer/float/complex arrays,
lists, tuples, dicts (and read-only mappingproxy views) of those, and gcsim's result records
(its dataclasses and named tuples holding such values); anything else is refused when it is
written, with a message.  Each file
holds its task's *identity* and a SHA-256 checksum of everything else it holds; the identity is

* the function: module, qualified name and the SHA-256 of its source (``inspect.getsource``; for a
  ``functools.partial``, of the function it wraps), and the SHA-256 of a canonical, data-only
  description of everything bound to it (a partial's arguments, defaults, closure values; arrays by
  their bytes; objects of Python classes by their class, its source, and their attributes);
* the gcsim version, the sweep's seed, the task's index and the SHA-256 of the task's description.

A rerun returns a stored result only when its identity and its checksum both match; any other
file (damaged, edited, another task's, another seed's, an older function body, another gcsim, a
pickle) is never returned and never executed: its task runs again and a :class:`CheckpointWarning`
says which tasks and why.  A directory, FIFO, device or socket in place of a task file is an
error (it is never opened).  Besides, ``folder/sweep.json`` names the sweep (function, a digest of
its bound arguments, seed, the number of tasks and a digest of their descriptions): a folder that
holds another sweep is refused, so that one sweep does not write over another's results.  A task
or bound argument without a data-only description (an open file, a random ``Generator``, a
function typed into an interactive session) cannot be checkpointed: the sweep is refused before
anything runs.  The checksum detects damage, not forgery: whoever can write the folder can write
results; what such a file can do is limited to holding numbers -- reading it runs no code.

Dask is an optional dependency (``pip install 'gcsim[dask]'``); ``"serial"`` needs nothing.

Examples
--------
>>> import numpy as np
>>> def draw(task, seq):
...     return task + float(np.random.default_rng(seq).random())
>>> a = run_sweep(draw, [0, 10, 20], seed=1, progress=False)
>>> a == [draw(t, task_seed(1, i)) for i, t in enumerate([0, 10, 20])]
True
>>> run_sweep(abs, [-1, 2, -3], progress=False)
[1, 2, 3]
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ._optional import require
from ._progress import progress_bar
from ._validation import check_bool, check_int
from .errors import GcsimError, InvalidArgumentError
from .io.checkpoint import (
    CHECKPOINT_FORMAT,
    MAX_CHECKPOINT_TASK_BYTES,
    TASK_FORMAT,
    CheckpointWarning,
    _Checkpoint,
    _fn_name,
)

__all__ = [
    "run_sweep",
    "sweep_client",
    "task_seed",
    "int_seed",
    "check_scheduler",
    "check_scheduler_and_workers",
    "SweepWorkerError",
    "CHECKPOINT_FORMAT",
    "TASK_FORMAT",
    "MAX_CHECKPOINT_TASK_BYTES",
    "CheckpointWarning",
]

_EXTRA = "dask"


class SweepWorkerError(GcsimError, RuntimeError):
    """A task of a Dask sweep was on workers that died more often than Dask allows (the sweep stops).

    ``index`` is the task's index in the sweep.  Dask gives a task up after
    ``distributed.scheduler.allowed-failures`` + 1 deaths of workers it was on (default 4).  The
    usual cause is a task (memory, a crash in native code), not the cluster: run the sweep with
    ``scheduler="serial"`` to see.
    """

    def __init__(self, index: int, message: str):
        self.index = index
        super().__init__(message)


def task_seed(seed: int, index: int) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of task ``index`` in a sweep seeded with ``seed``.

    Equal to ``SeedSequence(seed).spawn(index + 1)[index]``: independent streams for different
    tasks, the same stream for the same (seed, index) on every machine.

    >>> import numpy as np
    >>> task_seed(5, 2).spawn_key, task_seed(5, 2).entropy
    ((2,), 5)
    >>> task_seed(5, 2).generate_state(2).tolist() == np.random.SeedSequence(5).spawn(3)[2].generate_state(2).tolist()
    True
    """
    seed = check_int("seed", seed, minimum=0)
    index = check_int("index", index, minimum=0)
    return np.random.SeedSequence(seed, spawn_key=(index,))


def int_seed(seq: np.random.SeedSequence) -> int:
    """A non-negative integer seed (below ``2**63``) drawn from ``seq``, for APIs that take ints.

    >>> int_seed(task_seed(0, 0)) == int_seed(task_seed(0, 0)) != int_seed(task_seed(0, 1))
    True
    """
    if not isinstance(seq, np.random.SeedSequence):
        raise InvalidArgumentError("seq", f"must be a numpy.random.SeedSequence, got {type(seq).__name__}")
    return int(seq.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _is_client(obj: Any) -> bool:
    # a distributed.Client, recognised without importing distributed (an optional dependency)
    return type(obj).__name__ == "Client" and type(obj).__module__.startswith("distributed")


#: address schemes of Dask's communication layer (``distributed.comm``): anything else is refused
#: here, before a connection is tried
DASK_PROTOCOLS = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


def check_scheduler(scheduler: Any, argument: str = "scheduler") -> Any:
    """``scheduler`` if it is ``"serial"``, ``"local"``, a Dask address or a ``distributed.Client``.

    Raises :class:`~gcsim.errors.InvalidArgumentError` naming ``argument`` otherwise (a missing
    Dask is reported later, when a cluster is needed).

    >>> check_scheduler("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_scheduler("http://10.0.0.5:8786")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: scheduler: must be 'serial', 'local', a Dask scheduler address ... got 'http://10.0.0.5:8786'
    >>> check_scheduler("dask")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: scheduler: must be 'serial', 'local', a Dask scheduler address ... got 'dask'
    """
    if _is_client(scheduler):
        return scheduler
    if isinstance(scheduler, str):
        proto, sep, rest = scheduler.partition("://")
        if scheduler in ("serial", "local") or (sep and proto in DASK_PROTOCOLS and rest):
            return scheduler
    raise InvalidArgumentError(
        argument,
        "must be 'serial', 'local', a Dask scheduler address like tcp://host:8786 or a distributed.Client, "
        f"got {scheduler!r}",
    )


def check_scheduler_and_workers(scheduler: Any, workers: Any) -> tuple[Any, int | None]:
    """The checked scheduler and local-cluster size (``workers`` only goes with ``"local"``).

    What :func:`run_sweep`, :func:`sweep_client` and the evaluators that take ``scheduler`` and
    ``workers`` check first, before any work.

    >>> check_scheduler_and_workers("serial", None)
    ('serial', None)
    >>> check_scheduler_and_workers("local", 2)
    ('local', 2)
    """
    scheduler = check_scheduler(scheduler)
    if workers is not None:
        workers = check_int("workers", workers, minimum=1)
        if scheduler != "local":
            raise InvalidArgumentError(
                "workers", "applies to scheduler='local' only (a running cluster has the workers it was started with)"
            )
    return scheduler, workers


@contextlib.contextmanager
def sweep_client(scheduler: Any = "local", workers: int | None = None) -> Iterator[Any]:
    """A Dask client for ``scheduler`` (``None`` for ``"serial"``); what the block opened is closed after it.

    ``"local"`` starts a ``LocalCluster`` of ``workers`` processes (default: the CPUs it may use) with
    one thread each, no dashboard, and its scratch files in a temporary folder removed at the
    end; an address connects to that scheduler; a ``Client`` is yielded as it is and left
    open.  Use it to run several sweeps on one cluster::

        with sweep_client("local", workers=2) as client:
            a = run_sweep(f, tasks, scheduler=client)
            b = run_sweep(g, more, scheduler=client)

    Raises
    ------
    MissingDependencyError
        Dask distributed is not installed (``pip install 'gcsim[dask]'``).
    InvalidArgumentError
        A bad ``scheduler``, or ``workers`` given for anything but ``"local"``.
    """
    scheduler, workers = check_scheduler_and_workers(scheduler, workers)
    if scheduler == "serial":
        yield None
        return
    if _is_client(scheduler):
        yield scheduler
        return
    distributed = require("distributed", _EXTRA, "gcsim.sweep (a Dask scheduler)")
    if scheduler != "local":
        with distributed.Client(scheduler) as client:
            yield client
        return
    import logging

    n = workers if workers is not None else _cpu_count()
    with tempfile.TemporaryDirectory(prefix="gcsim-dask-") as scratch:
        with distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",  # this machine only
            dashboard_address=None,
            # the scheduler's HTTP routes (health, metrics) on a free local port, not 8787
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
            local_directory=scratch,
            silence_logs=logging.ERROR,
        ) as cluster:
            with distributed.Client(cluster) as client:
                yield client


def _cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _call(fn: Callable[..., Any], task: Any, seed: int | None, index: int) -> Any:
    """One task: ``fn(task)``, or ``fn(task, task_seed(seed, index))`` for a seeded sweep."""
    if seed is None:
        return fn(task)
    return fn(task, np.random.SeedSequence(seed, spawn_key=(index,)))


def _check_picklable(fn: Callable[..., Any], tasks: Sequence[Any], todo: Sequence[int]) -> None:
    """Fail before submitting anything if the function or a task cannot be sent to a worker."""
    import cloudpickle  # installed with distributed

    try:
        cloudpickle.dumps(fn)
    except Exception as exc:
        raise InvalidArgumentError(
            "fn", f"must be picklable to run on Dask workers ({_fn_name(fn)}: {type(exc).__name__}: {exc})"
        ) from exc
    for i in todo:
        try:
            cloudpickle.dumps(tasks[i])
        except Exception as exc:
            raise InvalidArgumentError(
                "tasks", f"must be picklable to run on Dask workers (task {i}: {type(exc).__name__}: {exc})"
            ) from exc


def _progress_bar(total: int, initial: int, enabled: bool, desc: str):
    # a bar on a terminal, lines on a pipe under the gcsim command (gcsim._progress)
    return progress_bar(total=total, initial=initial, desc=desc, enabled=enabled)


def run_sweep(
    fn: Callable[..., Any],
    tasks: Iterable[Any],
    *,
    seed: int | None = None,
    scheduler: Any = "serial",
    workers: int | None = None,
    progress: bool = True,
    retries: int = 0,
    checkpoint: str | os.PathLike | None = None,
    desc: str = "sweep",
) -> list[Any]:
    """Apply ``fn`` to every task, serially or on Dask; the results in task order.

    Parameters
    ----------
    fn : callable
        ``fn(task)``, or ``fn(task, seq)`` when ``seed`` is given, with ``seq`` the task's
        :class:`numpy.random.SeedSequence` (:func:`task_seed`; :func:`int_seed` turns it into an
        integer seed).  On Dask it must be picklable (a module-level function, a
        ``functools.partial`` of one, or anything cloudpickle can send); what it captures travels
        with every task, so keep that small (a scheme, not a data set).
    tasks : iterable
        The tasks (picklable for Dask; described by data -- numbers, strings, arrays, containers,
        plain objects -- for ``checkpoint``).
    seed : int >= 0, optional
        Seed of the sweep; task ``i`` gets ``SeedSequence(seed, spawn_key=(i,))`` whatever runs it.
    scheduler : "serial", "local", a Dask address ("tcp://host:8786") or a distributed.Client
        Where the tasks run (module docstring).
    workers : int >= 1, optional
        Worker processes of the ``"local"`` cluster (default: the CPU count).
    progress : bool
        A tqdm bar over finished tasks (shown on a terminal).
    retries : int >= 0
        Extra tries of a task that raised (Dask only; lost workers are handled by Dask anyway).
    checkpoint : path, optional
        Folder of finished results (module docstring): written as tasks finish, in a data-only
        format bound to each task's identity; a rerun returns the stored results that match their
        task and runs the others again (a :class:`CheckpointWarning` names those it did not use).
    desc : str
        Label of the progress bar.

    Returns
    -------
    list
        ``[fn(tasks[0], ...), fn(tasks[1], ...), ...]``.

    Raises
    ------
    InvalidArgumentError
        A bad argument, an unpicklable function or task (Dask), a checkpoint folder of another sweep
        (or with a directory, FIFO or device in place of a task file), a sweep without a data-only
        identity, or a task result that cannot be stored, with ``checkpoint``.
    MissingDependencyError
        A Dask scheduler without Dask installed (``pip install 'gcsim[dask]'``).
    SweepWorkerError
        A task that kept killing its workers.

    Warns
    -----
    CheckpointWarning
        Stored results that were not used (damaged, edited, another task's, seed's or function's):
        their tasks ran again.
    Exception
        The exception a task raised (the sweep stops; finished results stay in ``checkpoint``).

    Examples
    --------
    >>> def square(x):
    ...     return x * x
    >>> run_sweep(square, range(5), progress=False)
    [0, 1, 4, 9, 16]
    """
    if not callable(fn):
        raise InvalidArgumentError("fn", f"must be callable, got {type(fn).__name__}")
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Iterable):
        raise InvalidArgumentError("tasks", f"must be an iterable of tasks, got {type(tasks).__name__}")
    items = list(tasks)
    seed = None if seed is None else check_int("seed", seed, minimum=0)
    scheduler, workers = check_scheduler_and_workers(scheduler, workers)
    progress = check_bool("progress", progress)
    retries = check_int("retries", retries, minimum=0)
    if not isinstance(desc, str):
        raise InvalidArgumentError("desc", f"must be a string, got {type(desc).__name__}")
    store = None if checkpoint is None else _Checkpoint(checkpoint, fn, items, seed)
    results: dict[int, Any] = {} if store is None else store.load(len(items))
    todo = [i for i in range(len(items)) if i not in results]
    if scheduler == "serial":
        bar = _progress_bar(len(items), len(results), progress, desc)
        try:
            for i in todo:
                results[i] = _call(fn, items[i], seed, i)
                if store is not None:
                    store.save(i, results[i])
                bar.update(1)
        finally:
            bar.close()
    elif todo:
        with sweep_client(scheduler, workers) as client:
            _run_on_dask(client, fn, items, seed, todo, results, store, progress, retries, desc)
    return [results[i] for i in range(len(items))]


def _run_on_dask(
    client: Any,
    fn: Callable[..., Any],
    items: list[Any],
    seed: int | None,
    todo: list[int],
    results: dict[int, Any],
    store: _Checkpoint | None,
    progress: bool,
    retries: int,
    desc: str,
) -> None:
    distributed = require("distributed", _EXTRA, "gcsim.sweep (a Dask scheduler)")
    _check_picklable(fn, items, todo)
    token = secrets.token_hex(8)  # fresh keys: never reuse another sweep's results on the cluster
    futures = client.map(
        functools.partial(_call, fn),
        [items[i] for i in todo],
        [seed] * len(todo),
        todo,
        key=[f"gcsim-sweep-{token}-{i}" for i in todo],
        retries=retries,
        pure=False,
    )
    index = {f.key: i for f, i in zip(futures, todo, strict=True)}
    pending = set(futures)
    bar = _progress_bar(len(items), len(items) - len(todo), progress, desc)
    try:
        for fut in distributed.as_completed(futures):
            i = index[fut.key]
            try:
                value = fut.result()
            except distributed.KilledWorker as exc:
                raise SweepWorkerError(
                    i,
                    f"task {i} of the sweep was on workers that died too often (the task itself, or one beside "
                    f"it on those workers, crashes them; {exc}); try it with scheduler='serial'",
                ) from exc
            results[i] = value
            if store is not None:
                store.save(i, value)
            pending.discard(fut)
            fut.release()  # the result is here now: the cluster may forget it
            bar.update(1)
    finally:
        bar.close()
        if pending:  # a task failed: stop the rest
            with contextlib.suppress(Exception):
                client.cancel(list(pending))
