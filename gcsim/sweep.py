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

import base64
import contextlib
import dataclasses
import enum
import functools
import hashlib
import inspect
import json
import math
import os
import platform
import re
import secrets
import stat
import struct
import sys
import tempfile
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from ._optional import require
from ._progress import progress_bar
from ._validation import check_bool, check_int
from ._version import __version__
from .errors import GcsimError, InvalidArgumentError
from .io.manifest import (
    FileRefusedError,
    atomic_write_bytes,
    atomic_write_text,
    check_folder,
    dumps,
    file_kind,
    parse_json_object,
    read_json_object,
    read_regular_file,
)

__all__ = [
    "run_sweep",
    "sweep_client",
    "task_seed",
    "int_seed",
    "check_scheduler",
    "SweepWorkerError",
    "CHECKPOINT_FORMAT",
    "TASK_FORMAT",
    "MAX_CHECKPOINT_TASK_BYTES",
    "CheckpointWarning",
]

#: the ``format`` field of a checkpoint folder's ``sweep.json``
CHECKPOINT_FORMAT = "gcsim-sweep-checkpoint"
_CHECKPOINT_VERSION = 2  # 1: pickled task_*.pkl files (never read any more)
_MAX_CHECKPOINT_MANIFEST = 1 << 20
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


def _check_scheduler_and_workers(scheduler: Any, workers: Any) -> tuple[Any, int | None]:
    """The checked scheduler and local-cluster size (``workers`` only goes with ``"local"``)."""
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
    scheduler, workers = _check_scheduler_and_workers(scheduler, workers)
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


def _fn_name(fn: Callable[..., Any]) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


# ---------------------------------------------------------------------------
# checkpoints: a data-only format, each result bound to its task's identity


class CheckpointWarning(UserWarning):
    """Stored results of a checkpoint folder were not used: their tasks ran again.

    The message names each such task and why: the file is damaged or was edited (checksum), it is
    not a task file of this format, or it holds the result of another task, seed, function source,
    bound arguments or gcsim version (the fields of the identity that differ).  A stored result is
    returned only when its identity and its checksum both match.
    """


class _NotData(Exception):
    """A value without a data-only form: ``where`` locates it (``tasks[3][1]``), ``what`` says why."""

    def __init__(self, where: str, what: str):
        self.where = where
        self.what = what
        super().__init__(f"{where}: {what}")


#: ``format`` field of every ``task_<i>.json`` file of a checkpoint folder
TASK_FORMAT = "gcsim-sweep-task"
#: largest task file read or written (bytes); a larger result is refused when it is written
MAX_CHECKPOINT_TASK_BYTES = 256 << 20
_MAX_DEPTH = 64
_ARRAY_KINDS = "biufc"  # bool, integers, floats, complex: no objects, strings or structured records
_SMALL_INT = 2**63  # larger integers are stored in hexadecimal (no JSON reader limit applies)
_RESULT_TYPES = (
    "None, bool, int, float, complex, str, numpy numbers and numeric/bool arrays, and lists, tuples, dicts "
    "(and read-only mappingproxy views) of those, or gcsim result records (dataclasses and named tuples of "
    "gcsim) holding them"
)


def _canonical_json(obj: Any) -> bytes:
    """The one byte form of a JSON tree (sorted keys, no spaces, ASCII); the checksum is its SHA-256."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _name_of(obj: Any) -> str:
    return f"{getattr(obj, '__module__', None) or '?'}.{getattr(obj, '__qualname__', None) or type(obj).__qualname__}"


@functools.lru_cache(maxsize=1024)
def _source_sha256(obj: Any) -> str | None:
    """SHA-256 of the source text of a function or class (``None`` where Python cannot read it)."""
    try:
        return _sha(inspect.getsource(obj).encode("utf-8"))
    except (OSError, TypeError):
        return None


def _code_identity(obj: Any, where: str) -> list[Any]:
    """``[name, "source", sha256]`` of a function or class, or ``[name, "version", "<package> <version>"]``.

    Compiled functions and types (``abs``, ``math.fsum``, ``numpy.float64``) have no source; they are
    named with the version of the package that provides them (Python's for builtins).  A Python
    function whose source cannot be read (typed into an interactive session) cannot be bound to a
    result: :class:`_NotData`.
    """
    module = getattr(obj, "__module__", None) or ""
    if module != "builtins":
        digest = _source_sha256(obj)
        if digest is not None:
            return [_name_of(obj), "source", digest]
    if not isinstance(obj, types.FunctionType):
        top = module.partition(".")[0]
        version = platform.python_version() if top == "builtins" else getattr(sys.modules.get(top), "__version__", None)
        if isinstance(version, str):
            return [_name_of(obj), "version", f"{top} {version}"]
    raise _NotData(where, f"{_name_of(obj)}: its source cannot be read (define it in a module file)")


def _bytecode_sha256(code: types.CodeType) -> str:
    """SHA-256 of a code object's instructions, names, signature and constants (nested code included).

    Deterministic for one Python version (no addresses, no hash-ordered sets): a body compiled from
    other text gives another digest even where ``inspect.getsource`` returns the same line.
    """
    h = hashlib.sha256()

    def const(k: Any) -> None:
        if isinstance(k, types.CodeType):
            h.update(b"<code>")
            feed(k)
        elif isinstance(k, (tuple, frozenset)):
            items = list(k) if isinstance(k, tuple) else sorted(k, key=repr)
            h.update(f"<{type(k).__name__} {len(items)}>".encode())
            for x in items:
                const(x)
        else:
            h.update(f"{type(k).__name__}:{k!r};".encode())

    def feed(c: types.CodeType) -> None:
        h.update(c.co_code)
        sig = (c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_flags, c.co_names, c.co_varnames)
        h.update(repr(sig).encode())
        h.update(repr((c.co_freevars, c.co_cellvars)).encode())
        for k in c.co_consts:
            const(k)

    feed(code)
    return h.hexdigest()


def _float_hex(x: float) -> str:
    return struct.pack(">d", x).hex()  # the 64 bits: exact, NaN payloads and -0.0 included


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and type(obj) is not tuple and hasattr(type(obj), "_fields")


def _record_fields(obj: Any, where: str) -> dict[str, Any] | None:
    """The fields of a dataclass instance or named tuple (``None`` for anything else)."""
    if _is_namedtuple(obj):
        return dict(obj._asdict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        if any(not f.init for f in fields):
            raise _NotData(where, f"{_name_of(type(obj))} has fields its constructor does not take")
        return {f.name: getattr(obj, f.name) for f in fields}
    return None


class _Encoder:
    """Data-only JSON trees of results (``mode="result"``, decodable) and of task identities.

    ``mode="identity"`` describes tasks and functions for hashing: arrays by dtype, shape and the
    SHA-256 of their bytes; functions by name and source (or version) digest, with their defaults,
    closures and the arguments of a ``functools.partial``; plain objects by class (and its source)
    and attributes.  ``mode="arguments"`` is the same without the source digests: what a sweep *is*
    (its ``sweep.json``), as opposed to the code that computed it.
    """

    def __init__(self, mode: str):
        self.mode = mode
        self.active: set[int] = set()

    def __call__(self, obj: Any, where: str, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _NotData(where, f"nests more than {_MAX_DEPTH} levels deep")
        if obj is None or type(obj) in (bool, str):
            return obj
        t = type(obj)
        if t is int:
            return obj if -_SMALL_INT < obj < _SMALL_INT else {"int": hex(obj)}
        if t is float:
            return {"float": _float_hex(obj)}
        if t is complex:
            return {"complex": _float_hex(obj.real) + _float_hex(obj.imag)}
        if isinstance(obj, np.generic):
            dt = obj.dtype
            if dt.kind not in _ARRAY_KINDS:
                raise _NotData(where, f"a numpy scalar of dtype {dt} (only bool, integer, float and complex)")
            return {"scalar": [dt.str, obj.tobytes().hex()]}
        if isinstance(obj, np.ndarray):
            return self.array(obj, where)
        key = id(obj)
        if key in self.active:
            if isinstance(obj, types.FunctionType):  # a recursive closure: name it, do not follow it again
                return {"recursion": _name_of(obj)}
            raise _NotData(where, "contains itself")
        self.active.add(key)
        try:
            return self.container(obj, where, depth + 1)
        finally:
            self.active.discard(key)

    def array(self, a: np.ndarray, where: str) -> Any:
        if self.mode != "result":  # described by its bytes: any dtype without Python objects
            if a.dtype.hasobject:
                raise _NotData(where, f"an array of dtype {a.dtype} (Python objects have no data-only form)")
            return {"ndarray": [str(a.dtype.descr), list(a.shape), _sha(np.ascontiguousarray(a).tobytes())]}
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None or a.dtype.subdtype is not None:
            raise _NotData(where, f"an array of dtype {a.dtype} (only bool, integer, float and complex arrays)")
        data = np.ascontiguousarray(a).tobytes()
        return {"ndarray": [a.dtype.str, list(a.shape), base64.b64encode(data).decode("ascii")]}

    def container(self, obj: Any, where: str, depth: int) -> Any:
        t = type(obj)
        if t is list:
            return [self(x, f"{where}[{i}]", depth) for i, x in enumerate(obj)]
        if t is tuple:
            return {"tuple": [self(x, f"{where}[{i}]", depth) for i, x in enumerate(obj)]}
        if t is dict or t is types.MappingProxyType or (self.mode != "result" and isinstance(obj, dict)):
            tag = "mappingproxy" if t is types.MappingProxyType else "dict"  # a read-only mapping stays one
            return {tag: [[self(k, f"{where} key", depth), self(v, f"{where}[{k!r}]", depth)] for k, v in obj.items()]}
        fields = _record_fields(obj, where)
        if fields is not None:
            return self.record(obj, fields, where, depth)
        if self.mode == "result":
            raise _NotData(where, f"a {_name_of(t)} (a checkpointed result may hold {_RESULT_TYPES})")
        return self.described(obj, where, depth)

    def record(self, obj: Any, fields: dict[str, Any], where: str, depth: int) -> Any:
        t = type(obj)
        if self.mode == "result":
            if not (t.__module__ == "gcsim" or t.__module__.startswith("gcsim.")) or "<locals>" in t.__qualname__:
                raise _NotData(
                    where,
                    f"a {_name_of(t)} record (only gcsim's own records are stored; return a tuple or dict of "
                    "its fields)",
                )
            return {
                "record": [t.__module__, t.__qualname__, {k: self(v, f"{where}.{k}", depth) for k, v in fields.items()}]
            }
        return {"object": [self.code(t, where), {k: self(v, f"{where}.{k}", depth) for k, v in fields.items()}]}

    def code(self, obj: Any, where: str) -> list[Any]:
        ident = _code_identity(obj, where)
        return ident if self.mode == "identity" else ident[:1]

    def described(self, obj: Any, where: str, depth: int) -> Any:
        """Identity modes: functions, partials, methods, classes and plain objects."""
        t = type(obj)
        if isinstance(obj, functools.partial):
            return {
                "partial": [
                    self(obj.func, f"{where}.func", depth),
                    self(tuple(obj.args), f"{where}.args", depth),
                    self(dict(obj.keywords), f"{where}.keywords", depth),
                ]
            }
        if isinstance(obj, types.FunctionType):
            cells = [_cell(c) for c in obj.__closure__ or ()]
            return {
                "function": [
                    self.code(obj, where),
                    # the compiled body too: two lambdas on one line share their source text
                    _bytecode_sha256(obj.__code__) if self.mode == "identity" else None,
                    self(obj.__defaults__, f"{where}.__defaults__", depth),
                    self(obj.__kwdefaults__, f"{where}.__kwdefaults__", depth),
                    self(cells, f"{where}.<closure>", depth),
                ]
            }
        if isinstance(obj, types.MethodType):
            return {"method": [self(obj.__self__, f"{where}.__self__", depth), self(obj.__func__, where, depth)]}
        if isinstance(obj, (types.BuiltinFunctionType, type)):
            return {"code": self.code(obj, where)}
        if t in (set, frozenset):
            items = sorted((self(x, f"{where} item", depth) for x in obj), key=_canonical_json)
            return {t.__name__: items}
        if isinstance(obj, np.dtype):
            return {"dtype": obj.str if obj.fields is None else str(obj.descr)}
        if isinstance(obj, enum.Enum):
            return {"enum": [self.code(t, where), obj.name]}
        if isinstance(obj, (bytes, bytearray)):
            return {"bytes": _sha(bytes(obj))}
        if isinstance(obj, PurePath):
            return {"path": [t.__name__, str(obj)]}
        return self.plain(obj, where, depth)

    def plain(self, obj: Any, where: str, depth: int) -> Any:
        """An instance of a Python class whose state is its attributes (``__dict__``, ``__slots__``)."""
        t: Any = type(obj)  # a class (hashable), for the source cache
        default = t.__reduce_ex__ is object.__reduce_ex__ and t.__reduce__ is object.__reduce__
        if not default or _source_sha256(t) is None:
            raise _NotData(
                where,
                f"a {_name_of(t)} (no data-only form: it is not plain data, a function or an instance of a Python "
                "class whose state is its attributes)",
            )
        state = dict(sorted(vars(obj).items())) if hasattr(obj, "__dict__") else {}
        for klass in t.__mro__:
            slots = vars(klass).get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                    state[slot] = getattr(obj, slot)
        return {"object": [self.code(t, where), {k: self(v, f"{where}.{k}", depth) for k, v in state.items()}]}


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled (a closure over a name assigned later)
        return _EMPTY_CELL


_EMPTY_CELL = ("<empty cell>",)
_HEX_INT = re.compile(r"-?0x[0-9a-f]{1,100000}")


def _stored_dtype(code: Any, where: str) -> np.dtype:
    if not isinstance(code, str) or len(code) > 8:
        raise _NotData(where, f"dtype {code!r} is not a stored dtype")
    try:
        dt = np.dtype(code)
    except TypeError as exc:
        raise _NotData(where, f"dtype {code!r} is not a dtype ({exc})") from None
    if dt.kind not in _ARRAY_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise _NotData(where, f"dtype {dt} is not stored (only bool, integer, float and complex)")
    return dt


def _decode(tree: Any, where: str = "result", depth: int = 0) -> Any:
    """The value of a tree written by ``_Encoder("result")``; anything else: :class:`_NotData`."""
    if depth > _MAX_DEPTH + 2:
        raise _NotData(where, f"nests more than {_MAX_DEPTH} levels deep")
    if tree is None or type(tree) in (bool, str, int):
        return tree
    if type(tree) is list:
        return [_decode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(tree)]
    if type(tree) is not dict or len(tree) != 1:
        raise _NotData(where, f"{type(tree).__name__} is not a stored value")
    ((tag, v),) = tree.items()
    if tag == "int" and isinstance(v, str) and _HEX_INT.fullmatch(v):
        return int(v, 16)
    if tag in ("float", "complex") and isinstance(v, str) and len(v) == (16 if tag == "float" else 32):
        raw = bytes.fromhex(v)
        if tag == "float":
            return struct.unpack(">d", raw)[0]
        return complex(struct.unpack(">d", raw[:8])[0], struct.unpack(">d", raw[8:])[0])
    if tag == "scalar" and type(v) is list and len(v) == 2 and isinstance(v[1], str):
        dt = _stored_dtype(v[0], where)
        raw = bytes.fromhex(v[1])
        if len(raw) != dt.itemsize:
            raise _NotData(where, f"a {dt} scalar of {len(raw)} bytes")
        return np.frombuffer(raw, dt)[0]
    if tag == "ndarray" and type(v) is list and len(v) == 3 and type(v[1]) is list and isinstance(v[2], str):
        dt = _stored_dtype(v[0], where)
        shape = v[1]
        if len(shape) > 32 or not all(type(d) is int and 0 <= d < _SMALL_INT for d in shape):
            raise _NotData(where, f"shape {shape!r} is not an array shape")
        raw = base64.b64decode(v[2].encode("ascii"), validate=True)
        if len(raw) != math.prod(shape) * dt.itemsize:
            raise _NotData(where, f"{len(raw)} bytes for an array of shape {tuple(shape)} and dtype {dt}")
        return np.frombuffer(raw, dt).reshape(shape).copy()
    if tag == "tuple" and type(v) is list:
        return tuple(_decode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v))
    if tag in ("dict", "mappingproxy") and type(v) is list and all(type(p) is list and len(p) == 2 for p in v):
        d = {
            _decode(k, f"{where} key", depth + 1): _decode(x, f"{where}[{i}]", depth + 1) for i, (k, x) in enumerate(v)
        }
        return d if tag == "dict" else types.MappingProxyType(d)
    if tag == "record" and type(v) is list and len(v) == 3 and type(v[2]) is dict:
        return _decode_record(v[0], v[1], v[2], where, depth)
    raise _NotData(where, f"{tag!r} is not a stored value")


def _decode_record(module: Any, qualname: Any, fields: dict[str, Any], where: str, depth: int) -> Any:
    """A gcsim dataclass or named tuple, found among the modules already imported (nothing is imported)."""
    if not (
        isinstance(module, str) and isinstance(qualname, str) and (module == "gcsim" or module.startswith("gcsim."))
    ):
        raise _NotData(where, f"record {module!r}.{qualname!r} is not a gcsim record")
    cls: Any = sys.modules.get(module)
    for part in qualname.split("."):
        cls = None if cls is None else vars(cls).get(part)  # no module __getattr__, no descriptor runs
    ok = isinstance(cls, type) and cls.__module__ == module and cls.__qualname__ == qualname
    if ok and dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif ok and issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        raise _NotData(where, f"{module}.{qualname} is not a gcsim record of this gcsim")
    if sorted(names) != sorted(fields):
        raise _NotData(where, f"{module}.{qualname} has fields {names}, the file {sorted(fields)}")
    return cls(**{k: _decode(x, f"{where}.{k}", depth + 1) for k, x in fields.items()})


def _identity_digest(obj: Any, mode: str, where: str) -> tuple[str, Any]:
    """SHA-256 of the identity tree of ``obj``, and the tree."""
    tree = _Encoder(mode)(obj, where)
    return _sha(_canonical_json(tree)), tree


class _Checkpoint:
    """A folder of finished task results of one sweep (see the module docstring).

    Raises :class:`~gcsim.errors.InvalidArgumentError` (argument ``checkpoint``) when the sweep cannot
    be described by data (its function, bound arguments or tasks), or the folder holds another sweep.
    """

    def __init__(self, folder: Any, fn: Callable[..., Any], tasks: Sequence[Any], seed: int | None):
        self.folder = check_folder("checkpoint", folder)
        try:
            # what the sweep is (function name, bound arguments, defaults, closures), without the sources
            arguments, _ = _identity_digest(fn, "arguments", "fn")
            # the same with the source digests of the function and of the classes among its arguments
            function, _ = _identity_digest(fn, "identity", "fn")
            tasks_sha = [_identity_digest(t, "identity", f"tasks[{i}]")[0] for i, t in enumerate(tasks)]
            root = fn
            while isinstance(root, functools.partial):
                root = root.func
            plain = isinstance(root, (types.FunctionType, types.BuiltinFunctionType))
            source = _code_identity(root, "fn") if plain else None
        except _NotData as exc:
            raise InvalidArgumentError(
                "checkpoint",
                f"cannot be used with this sweep: {exc.where} is {exc.what}; a checkpoint binds every result "
                "to its task (the function's source, its bound arguments and the task, described by data); "
                "run without checkpoint, or pass data instead",
            ) from None
        self.name = _fn_name(fn)
        self.common = {
            "function": self.name,
            "function_source": None if source is None else source[2],
            "function_sha256": function,
            "gcsim": __version__,
            "seed": seed,
        }
        self.tasks_sha = tasks_sha
        self.header = {
            "format": CHECKPOINT_FORMAT,
            "version": _CHECKPOINT_VERSION,
            "function": self.name,
            "arguments_sha256": arguments,
            "seed": seed,
            "tasks": len(tasks),
            "tasks_sha256": _sha("".join(tasks_sha).encode("ascii")),
        }
        manifest = self.folder / "sweep.json"
        if os.path.lexists(manifest):
            try:
                old = read_json_object(manifest, _MAX_CHECKPOINT_MANIFEST)
            except (OSError, ValueError) as exc:
                raise InvalidArgumentError("checkpoint", f"{manifest} is unreadable ({exc})") from exc
            if old.get("format") == CHECKPOINT_FORMAT and old.get("version") == 1:
                raise InvalidArgumentError(
                    "checkpoint",
                    f"{self.folder} was written by an older gcsim (pickled task_*.pkl results, which gcsim no "
                    "longer reads); use a new folder or delete it",
                )
            if old != self.header:
                changed = sorted(k for k in set(old) | set(self.header) if old.get(k) != self.header.get(k))
                raise InvalidArgumentError(
                    "checkpoint",
                    f"{self.folder} holds the results of another sweep ({', '.join(changed)} differ); "
                    "use a new folder or delete it",
                )
        else:
            atomic_write_text(manifest, dumps(self.header))

    def path(self, index: int) -> Path:
        return self.folder / f"task_{index:08d}.json"

    def identity(self, index: int) -> dict[str, Any]:
        """What task ``index``'s result is bound to: function, its source and arguments, gcsim, seed, task."""
        return {**self.common, "index": index, "task_sha256": self.tasks_sha[index]}

    def load(self, count: int) -> dict[int, Any]:
        """The stored results that match their task; the others are reported (a warning) and run again.

        A directory, FIFO, device or socket in place of a task file is an error (nothing is opened
        that could block).
        """
        found: dict[int, Any] = {}
        stale: list[str] = []
        for i in range(count):
            p = self.path(i)
            try:
                st = os.stat(p)
            except FileNotFoundError:  # not run yet (or a dangling link: written over)
                continue
            except OSError as exc:
                raise InvalidArgumentError("checkpoint", f"{p} cannot be inspected ({exc.strerror or exc})") from None
            if not stat.S_ISREG(st.st_mode):
                raise InvalidArgumentError(
                    "checkpoint",
                    f"{p} is a {file_kind(st.st_mode)}, not a task file; remove it (or use another folder)",
                )
            try:
                raw = read_regular_file(p, MAX_CHECKPOINT_TASK_BYTES)
            except FileNotFoundError:
                continue
            except FileRefusedError as exc:
                stale.append(f"task {i} ({exc.reason})")
                continue
            value, reason = self._read(i, raw)
            if reason is None:
                found[i] = value
            else:
                stale.append(f"task {i} ({reason})")
        if stale:
            shown = "; ".join(stale[:8]) + (f"; and {len(stale) - 8} more" if len(stale) > 8 else "")
            warnings.warn(
                CheckpointWarning(
                    f"checkpoint {self.folder}: {len(stale)} stored result(s) not used, recomputed: {shown}"
                ),
                stacklevel=3,
            )
        return found

    def _read(self, index: int, raw: bytes) -> tuple[Any, str | None]:
        """``(result, None)`` for a file that matches task ``index``, else ``(None, reason)``."""
        try:
            doc = parse_json_object(raw, "the file")
        except ValueError:
            return None, "not a JSON task file: damaged, or not written by gcsim"
        if doc.get("format") != TASK_FORMAT or doc.get("version") != _CHECKPOINT_VERSION:
            return None, f"not a {TASK_FORMAT} file of version {_CHECKPOINT_VERSION}"
        stored = doc.pop("sha256", None)
        try:
            digest = _sha(_canonical_json(doc))
        except (TypeError, ValueError):
            digest = None
        if stored != digest:
            return None, "checksum mismatch: the file was changed or damaged"
        identity = doc.get("identity")
        expected = self.identity(index)
        if not isinstance(identity, dict):
            return None, "no identity"
        if _canonical_json(identity) != _canonical_json(expected):  # bytes: 1.0 or true is not the index 1
            keys = set(identity) | set(expected)
            changed = sorted(k for k in keys if _canonical_json(identity.get(k)) != _canonical_json(expected.get(k)))
            return None, f"computed for another task: {', '.join(changed)} differ"
        try:
            return _decode(doc.get("result")), None
        except Exception as exc:  # noqa: BLE001 - whatever fails in a file, its task runs again
            return None, f"result not readable ({type(exc).__name__}: {exc})"

    def save(self, index: int, result: Any) -> None:
        """Write task ``index``'s result, bound to its identity and checksummed; refuse what is not data."""
        try:
            tree = _Encoder("result")(result, "result")
        except _NotData as exc:
            raise InvalidArgumentError(
                "checkpoint",
                f"task {index} returned a result that cannot be stored ({exc.where} is {exc.what}); a checkpointed "
                f"task may return {_RESULT_TYPES}",
            ) from None
        body = {"format": TASK_FORMAT, "version": _CHECKPOINT_VERSION, "identity": self.identity(index), "result": tree}
        data = _canonical_json({**body, "sha256": _sha(_canonical_json(body))})
        if len(data) > MAX_CHECKPOINT_TASK_BYTES:
            raise InvalidArgumentError(
                "checkpoint",
                f"task {index}'s result takes {len(data):,} bytes stored, over the limit of "
                f"{MAX_CHECKPOINT_TASK_BYTES:,} (gcsim.sweep.MAX_CHECKPOINT_TASK_BYTES); return less per task",
            )
        atomic_write_bytes(self.path(index), data)


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
    scheduler, workers = _check_scheduler_and_workers(scheduler, workers)
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
