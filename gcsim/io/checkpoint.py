"""The checkpoint format of :func:`gcsim.sweep.run_sweep`: data only, each result bound to its task.

A checkpoint folder holds ``sweep.json`` (format :data:`CHECKPOINT_FORMAT`) and one
``task_<i>.json`` per finished task (format :data:`TASK_FORMAT`): canonical JSON of the task's
*identity* (the task, its seed, the function's source and bound arguments, the gcsim version) and
its *result* in a data-only encoding (numbers, strings, lists, dicts, NumPy arrays, named tuples
and dataclasses of such; floats as hexadecimal, large integers as hexadecimal strings), with a
SHA-256 checksum of the whole.  Reading a file runs no code (no pickle).  A stored result is used
only when its identity and its checksum both match; otherwise the task runs again and a
:class:`CheckpointWarning` says why.  :func:`gcsim.sweep.run_sweep` documents the user-facing
behaviour; this module is its codec and its folder.
"""

from __future__ import annotations

import base64
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
import stat
import struct
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InvalidArgumentError
from .manifest import (
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

__all__ = ["CHECKPOINT_FORMAT", "TASK_FORMAT", "MAX_CHECKPOINT_TASK_BYTES", "CheckpointWarning"]

#: the ``format`` field of a checkpoint folder's ``sweep.json``
CHECKPOINT_FORMAT = "gcsim-sweep-checkpoint"
_CHECKPOINT_VERSION = 2  # 1: pickled task_*.pkl files (never read any more)
_MAX_CHECKPOINT_MANIFEST = 1 << 20


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
                f"{MAX_CHECKPOINT_TASK_BYTES:,} (gcsim.io.checkpoint.MAX_CHECKPOINT_TASK_BYTES); return less per task",
            )
        atomic_write_bytes(self.path(index), data)
