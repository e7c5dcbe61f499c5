"""Bundles: versioned files of named arrays with a checksummed manifest.

This is the generic storage format of gcsim.  What an object kind stores in a bundle and
how it is rebuilt lives with the kind (its ``to_arrays``, ``bundle_metadata`` and
``from_arrays``); :mod:`gcsim.catalogue` exports and loads objects of every kind.

A *bundle* is two files sharing a stem:

``<stem>.npz``
    the arrays (NumPy ``savez_compressed``, no pickled objects);
``<stem>.json``
    the manifest: format name and version, the name of the data file, its size
    and SHA-256, name/shape/dtype of every array, provenance (gcsim version, git
    SHA, library versions, creation time) and free-form ``metadata`` (kind,
    parameters, construction, seed, certificates, ...).

Reading trusts nothing in the files
-----------------------------------
:func:`load_bundle` refuses, with a :class:`~gcsim.errors.CatalogueError` that
says what is wrong, and *before* doing any expensive work:

* a manifest or data file that is not a regular file (a FIFO cannot hang the
  reader, a link to ``/dev/zero`` cannot exhaust memory), or larger than its
  bound (``MAX_MANIFEST_BYTES``; the data file must have exactly the recorded
  ``size_bytes``, at most ``max_bytes``);
* a manifest that is not a JSON object of the known format and version, or whose
  fields have the wrong types; array dtypes other than bool/integer/float/complex;
* arrays whose declared sizes add up to more than ``max_bytes`` (default
  :data:`DEFAULT_MAX_BYTES`);
* a data file whose SHA-256 differs from the manifest's (the checksum is computed
  on the very bytes that are then parsed);
* a zip member list other than one ``<name>.npy`` per declared array, a member
  whose size in the zip directory exceeds what its declared shape and dtype need
  (a "zip bomb" is refused before anything is decompressed), or an ``.npy`` header
  whose shape or dtype differs from the manifest.

Writing: a reader sees the old bundle or the new one
----------------------------------------------------
The manifest is the commit point, and it always names, by file name and
checksum, a data file that is complete.  :func:`save_bundle` writes

1. the data to a content-addressed file ``<stem>.<sha256[:16]>.npz``;
2. the manifest naming that file (atomic rename: the new bundle is now visible);
3. the data to ``<stem>.npz`` (atomic rename);
4. the manifest naming ``<stem>.npz``;
5. and removes the content-addressed file.

Every file is written to a temporary file, ``fsync``-ed and renamed
(:func:`~gcsim.io.manifest.atomic_write_bytes`), so a writer killed at any
instant leaves either the old bundle or the new one loadable, never a new
``.npz`` beside an old ``.json``.  Writers to one folder are serialized by an
advisory lock on the folder (POSIX ``flock``), under which leftovers of killed
writers (temporary and content-addressed files) are removed.  New files get
the usual permissions (``0o666`` minus the umask).

Format history
--------------
version 1 (gcsim 0.1): the layout above.  Readers honour ``data_file`` (older
readers always read ``<stem>.npz``, which holds the same bytes except in the
instant between steps 2 and 4).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_bool
from ..errors import CatalogueError, InvalidArgumentError
from .manifest import (
    FileRefusedError,
    atomic_write_bytes,
    atomic_write_text,
    check_folder,
    dumps,
    parse_json_object,
    provenance,
    read_json_object,
    read_regular_file,
    sha256_bytes,
)

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "DEFAULT_MAX_BYTES",
    "MAX_MANIFEST_BYTES",
    "save_bundle",
    "load_bundle",
    "bundle_paths",
    "check_bundle_name",
    "check_path",
]

BUNDLE_FORMAT = "gcsim-bundle"
BUNDLE_VERSION = 1
_SUPPORTED_VERSIONS = {1}

#: Largest manifest read (bytes); the CERAR manifests of ``designs/`` are ~20 KB.
MAX_MANIFEST_BYTES = 16 << 20
#: Default bound on the data file and on the total bytes of the arrays a bundle may declare.
DEFAULT_MAX_BYTES = 256 << 20
#: Largest ``.npy`` header accepted (NumPy's own default for untrusted files).
_MAX_NPY_HEADER = 10_000
#: dtype kinds a bundle may hold: bool, signed/unsigned integer, float, complex.
_DTYPE_KINDS = "biufc"
_MAX_NDIM = 32
_HASH_CHARS = 16
_HEX = re.compile(r"[0-9a-f]{64}")
_NAME_MAX = 200  # leaves room for ".<16 hex>.npz" and temporary-file decorations within NAME_MAX = 255


# ---------------------------------------------------------------------------
# names and paths


def check_bundle_name(argument: str, name: Any) -> str:
    """Validate a bundle file name (a stem without folder): return it, or raise ``InvalidArgumentError``.

    A name must be a non-empty string of at most 200 characters without path separators,
    NUL or control characters, must not start with ``.`` (hidden and relative names such
    as ``..``) and must not end in ``.npz``/``.json``.  This is what keeps
    ``gcsim.catalogue.export_object(..., name="../../x")`` or an absolute name from writing outside the
    target folder.

    Examples
    --------
    >>> check_bundle_name("name", "pg2_9")
    'pg2_9'
    >>> check_bundle_name("name", "../x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: name: must be a plain file name inside the target folder, got '../x' ...
    """
    if not isinstance(name, str):
        raise InvalidArgumentError(argument, f"must be a string, got {type(name).__name__}")
    problem = None
    if not name:
        problem = "empty"
    elif "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        problem = "contains a path separator"
    elif any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        problem = "contains a NUL or control character"
    elif name.startswith("."):
        problem = "starts with '.'"
    elif len(name) > _NAME_MAX:
        problem = f"longer than {_NAME_MAX} characters"
    elif name.endswith((".npz", ".json")):
        problem = "ends in .npz or .json (give the stem)"
    elif Path(name).is_absolute() or Path(name).drive:
        problem = "is an absolute path"
    if problem:
        raise InvalidArgumentError(
            argument, f"must be a plain file name inside the target folder, got {name!r} ({problem})"
        )
    return name


def check_path(argument: str, path: Any) -> Path:
    """``path`` as a :class:`~pathlib.Path`: a non-empty ``str`` or ``os.PathLike`` without NUL characters.

    Raises :class:`~gcsim.errors.InvalidArgumentError` naming ``argument`` otherwise.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(argument, f"must be a path (str or os.PathLike), got {type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        raise InvalidArgumentError(argument, "must be a str path, not bytes")
    if not text or "\x00" in text:
        raise InvalidArgumentError(argument, f"must be a non-empty path without NUL characters, got {text!r}")
    return Path(text)


def bundle_paths(path: str | Path) -> tuple[Path, Path]:
    """``(npz_path, json_path)`` of the bundle named by a stem, ``.npz`` or ``.json`` path."""
    path = Path(path)
    if path.suffix in (".npz", ".json"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".npz"), path.with_name(path.name + ".json")


def _staged_name(name: str, sha: str) -> str:
    """Content-addressed data file of the bundle ``name`` (step 1 of the write protocol)."""
    return f"{name}.{sha[:_HASH_CHARS]}.npz"


def _is_staged_of(name: str, filename: str) -> bool:
    return re.fullmatch(re.escape(name) + rf"\.[0-9a-f]{{{_HASH_CHARS}}}\.npz", filename) is not None


def _resolve(path: Any) -> tuple[Path, Path]:
    """Bundle paths for ``path``, accepting the content-addressed data file name too."""
    path = check_path("path", path)
    npz_path, json_path = bundle_paths(path)
    if not os.path.lexists(json_path):
        m = re.fullmatch(rf"(.+)\.[0-9a-f]{{{_HASH_CHARS}}}", npz_path.name[:-4])
        if m:
            alt_npz, alt_json = bundle_paths(npz_path.with_name(m.group(1)))
            if os.path.lexists(alt_json):
                return alt_npz, alt_json
    return npz_path, json_path


# ---------------------------------------------------------------------------
# writing


@contextlib.contextmanager
def _folder_lock(folder: Path):
    """Exclusive advisory lock on ``folder`` (serializes bundle writers; no-op where flock is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # pragma: no cover - unreadable but writable folder: write unlocked
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - file systems without flock
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def _clean_leftovers(folder: Path, name: str, keep: set[str]) -> None:
    """Remove what killed writers of bundle ``name`` left behind (call with the folder lock held)."""
    temp = re.compile(rf"\.{re.escape(name)}(\.npz|\.json|\.[0-9a-f]{{{_HASH_CHARS}}}\.npz)\.[0-9a-f]{{12}}\.tmp")
    try:
        entries = os.listdir(folder)
    except OSError:  # pragma: no cover
        return
    for entry in entries:
        if entry in keep:
            continue
        stale = temp.fullmatch(entry) is not None
        # a content-addressed data file, unless it is really the data of another bundle named like that
        stale |= _is_staged_of(name, entry) and not os.path.lexists(folder / (entry[:-4] + ".json"))
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(folder / entry)


def _check_arrays(arrays: Any) -> dict[str, np.ndarray]:
    if not isinstance(arrays, dict) or not arrays:
        raise InvalidArgumentError("arrays", "must be a non-empty dict of name -> array")
    clean: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgumentError("arrays", f"array names must be identifiers, got {name!r}")
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise InvalidArgumentError("arrays", f"array {name!r} has dtype object (not storable safely)")
        if arr.dtype.kind not in _DTYPE_KINDS or arr.dtype.fields is not None:
            raise InvalidArgumentError(
                "arrays", f"array {name!r} has dtype {arr.dtype}; bundles hold bool, integer, float or complex arrays"
            )
        if arr.ndim > _MAX_NDIM:
            raise InvalidArgumentError("arrays", f"array {name!r} has {arr.ndim} dimensions (at most {_MAX_NDIM})")
        clean[name] = arr
    return clean


def save_bundle(
    stem: str | Path, arrays: dict[str, Any], manifest: dict[str, Any] | None = None, *, overwrite: bool = False
) -> Path:
    """Write ``arrays`` and a manifest as the bundle ``<stem>.npz`` + ``<stem>.json``.

    The write is atomic as a pair (see the module docstring): a reader, even after
    the writer is killed at any instant, sees the old bundle or the new one.

    Parameters
    ----------
    stem : path
        File name without extension, e.g. ``designs/bibd/pg2_9``.  The folder is created.
    arrays : dict of str -> array_like
        Numeric arrays (bool, integer, float, complex; object arrays are refused: bundles
        never hold pickles).
    manifest : dict, optional
        JSON-serializable metadata stored under ``manifest["metadata"]`` (kind, params, seed, ...).
    overwrite : bool
        Replace an existing bundle; otherwise an existing one raises ``FileExistsError``.

    Returns
    -------
    Path of the JSON manifest.

    Raises
    ------
    InvalidArgumentError
        Bad arrays or metadata, or a stem whose files or folder are not regular files/folders.
    FileExistsError
        The bundle exists and ``overwrite`` is false.
    OSError
        The folder cannot be written (nothing half-written is left behind).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> p = save_bundle(f"{d}/eye", {"I": np.eye(2)}, {"kind": "demo"})
    >>> arrays, man = load_bundle(p)
    >>> arrays["I"].tolist(), man["metadata"]["kind"]
    ([[1.0, 0.0], [0.0, 1.0]], 'demo')
    """
    overwrite = check_bool("overwrite", overwrite)
    stem = check_path("stem", stem)
    clean = _check_arrays(arrays)
    if manifest is not None and not isinstance(manifest, dict):
        raise InvalidArgumentError("manifest", f"must be a dict of metadata, got {type(manifest).__name__}")
    npz_path, json_path = bundle_paths(stem)
    name = npz_path.name[:-4]
    if name in ("", ".", "..") or name.startswith("."):
        raise InvalidArgumentError("stem", f"must end in a plain file name, got {os.fspath(stem)!r}")
    folder = check_folder("stem", npz_path.parent)
    buf = io.BytesIO()
    np.savez_compressed(buf, **clean)  # type: ignore[arg-type]  # numpy's stub types **kwds like allow_pickle
    data = buf.getvalue()
    sha = sha256_bytes(data)
    staged = _staged_name(name, sha)
    record = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "data_file": staged,
        "sha256": sha,
        "size_bytes": len(data),
        "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in clean.items()},
        "provenance": provenance(),
        "metadata": manifest or {},
    }
    try:  # serialize before touching the disk: bad metadata must not leave anything behind
        staged_text = dumps(record)
        final_text = dumps({**record, "data_file": npz_path.name})
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError("manifest", f"metadata must be JSON-serializable: {exc}") from None
    folder.mkdir(parents=True, exist_ok=True)
    with _folder_lock(folder):
        for target in (npz_path, json_path):
            if os.path.lexists(target) and not (target.is_symlink() or target.is_file()):
                raise InvalidArgumentError("stem", f"{target} exists and is not a regular file")
        if not overwrite and (os.path.lexists(npz_path) or os.path.lexists(json_path)):
            raise FileExistsError(f"bundle {npz_path.with_suffix('')} exists (pass overwrite=True to replace it)")
        old_data = None
        if os.path.lexists(json_path):
            with contextlib.suppress(OSError, ValueError):
                old = read_json_object(json_path, MAX_MANIFEST_BYTES).get("data_file")
                if isinstance(old, str) and _is_staged_of(name, old):
                    old_data = old
        _clean_leftovers(folder, name, keep={old_data or "", staged})
        atomic_write_bytes(folder / staged, data)  # 1. complete data under a fresh name
        atomic_write_text(json_path, staged_text)  # 2. commit: the manifest names it
        atomic_write_bytes(npz_path, data)  # 3. the usual name gets the same bytes
        atomic_write_text(json_path, final_text)  # 4. the manifest names <stem>.npz
        for leftover in {staged, old_data or staged} - {npz_path.name}:
            with contextlib.suppress(FileNotFoundError):  # 5. nothing names them any more
                os.unlink(folder / leftover)
    return json_path


# ---------------------------------------------------------------------------
# reading


def _check_max_bytes(max_bytes: Any) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 1:
        raise InvalidArgumentError("max_bytes", f"must be a positive integer, got {max_bytes!r}")
    return int(max_bytes)


def _read_manifest(json_path: Path) -> tuple[bytes, dict[str, Any]]:
    try:
        raw = read_regular_file(json_path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise CatalogueError(f"manifest {json_path} not found") from None
    except FileRefusedError as exc:
        raise CatalogueError(f"manifest {exc.path} {exc.reason}") from None
    try:
        value = parse_json_object(raw, str(json_path), expected=f"not a {BUNDLE_FORMAT} manifest")
    except ValueError as exc:
        raise CatalogueError(f"manifest {exc}") from None
    return raw, value


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _array_specs(manifest: dict[str, Any], where: Path, max_bytes: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Validate the manifest's fields; return ``name -> (shape, dtype)`` of the declared arrays."""
    if manifest.get("format") != BUNDLE_FORMAT:
        raise CatalogueError(f"{where} is not a {BUNDLE_FORMAT} manifest (format {manifest.get('format')!r})")
    version = manifest.get("format_version")
    if not _is_int(version) or version not in _SUPPORTED_VERSIONS:
        raise CatalogueError(
            f"{where}: format version {version!r} is not supported (this gcsim reads {sorted(_SUPPORTED_VERSIONS)})"
        )
    for key in ("sha256", "arrays", "metadata"):
        if key not in manifest:
            raise CatalogueError(f"{where}: manifest lacks the field {key!r}")
    if not isinstance(manifest["sha256"], str) or not _HEX.fullmatch(manifest["sha256"]):
        raise CatalogueError(f"{where}: sha256 must be 64 lowercase hex digits, got {manifest['sha256']!r}")
    if not isinstance(manifest["metadata"], dict):
        raise CatalogueError(f"{where}: metadata must be a JSON object, got {type(manifest['metadata']).__name__}")
    size = manifest.get("size_bytes")
    if size is not None and (not _is_int(size) or size < 0):
        raise CatalogueError(f"{where}: size_bytes must be a non-negative integer, got {size!r}")
    if size is not None and size > max_bytes:
        raise CatalogueError(
            f"{where}: the data file is {size} bytes, over the limit of {max_bytes} "
            "(pass max_bytes to load larger bundles)"
        )
    declared = manifest["arrays"]
    if not isinstance(declared, dict) or not declared:
        raise CatalogueError(f"{where}: arrays must be a non-empty JSON object of name -> {{shape, dtype}}")
    specs: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    total = 0
    for name, spec in declared.items():
        if not name.isidentifier():
            raise CatalogueError(f"{where}: array name {name!r} is not an identifier")
        if not isinstance(spec, dict):
            raise CatalogueError(f"{where}: array {name!r} must be described by {{shape, dtype}}, got {spec!r}")
        shape, dt = spec.get("shape"), spec.get("dtype")
        if not isinstance(shape, list) or len(shape) > _MAX_NDIM or not all(_is_int(s) and s >= 0 for s in shape):
            raise CatalogueError(f"{where}: array {name!r} has an invalid shape {shape!r}")
        try:
            dtype = np.dtype(dt) if isinstance(dt, str) else None
        except (TypeError, ValueError, SyntaxError):
            dtype = None
        if dtype is None or dtype.kind not in _DTYPE_KINDS or dtype.fields is not None or dtype.hasobject:
            raise CatalogueError(
                f"{where}: array {name!r} has dtype {dt!r}; bundles hold bool, integer, float or complex arrays"
            )
        total += math.prod(shape) * dtype.itemsize
        specs[name] = (tuple(shape), dtype)
    if total > max_bytes:
        raise CatalogueError(
            f"{where}: the arrays declare {total} bytes, over the limit of {max_bytes} "
            "(pass max_bytes to load larger bundles)"
        )
    return specs


def _data_path(manifest: dict[str, Any], json_path: Path, npz_path: Path) -> Path:
    """The data file the manifest names: ``<stem>.npz`` or its content-addressed sibling, never elsewhere."""
    data_file = manifest.get("data_file")
    if data_file is None:
        return npz_path
    if (
        not isinstance(data_file, str)
        or not data_file
        or "/" in data_file
        or "\\" in data_file
        or "\x00" in data_file
        or data_file.startswith(".")
        or not data_file.endswith(".npz")
    ):
        raise CatalogueError(
            f"{json_path}: data_file must be a .npz file name in the manifest's folder, got {data_file!r}"
        )
    name = npz_path.name[:-4]
    if data_file == npz_path.name or _is_staged_of(name, data_file):
        return json_path.parent / data_file
    return npz_path  # a bundle renamed after export: its data file was renamed with it


class _CountingReader:
    """File-like wrapper counting the bytes read (to locate the end of an ``.npy`` header)."""

    def __init__(self, fp):
        self.fp = fp
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.fp.read(size)
        self.count += len(data)
        return data


def _parse_npz(data: bytes, specs: dict[str, tuple[tuple[int, ...], np.dtype]], where: Path) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` held in memory, every size bounded by the manifest before decompressing."""
    from numpy.lib import format as npy

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:  # untrusted bytes: any parser failure is a refusal
        raise CatalogueError(f"{where}: unreadable array data (not a zip archive: {exc})") from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        expected = {f"{k}.npy" for k in specs}
        if len(names) != len(set(names)) or set(names) != expected:
            raise CatalogueError(
                f"{where}: archive members {sorted(names)[:10]} differ from the manifest's arrays {sorted(expected)}"
            )
        arrays: dict[str, np.ndarray] = {}
        for info in infos:
            name = info.filename[:-4]
            shape, dtype = specs[name]
            nbytes = math.prod(shape) * dtype.itemsize
            if info.flag_bits & 0x1:
                raise CatalogueError(f"{where}: member {info.filename} is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise CatalogueError(
                    f"{where}: member {info.filename} uses compression method "
                    f"{info.compress_type} (only stored/deflated)"
                )
            if info.file_size > nbytes + _MAX_NPY_HEADER:
                raise CatalogueError(
                    f"{where}: member {info.filename} would decompress to {info.file_size} bytes, "
                    f"but shape {list(shape)} dtype {dtype.str} needs {nbytes} (refused unread)"
                )
            try:
                with zf.open(info) as raw:  # a ZipExtFile: readinto reads without a copy
                    fp = _CountingReader(raw)
                    version = npy.read_magic(fp)
                    if version == (1, 0):
                        h_shape, fortran, h_dtype = npy.read_array_header_1_0(fp, max_header_size=_MAX_NPY_HEADER)
                    elif version == (2, 0):
                        h_shape, fortran, h_dtype = npy.read_array_header_2_0(fp, max_header_size=_MAX_NPY_HEADER)
                    else:
                        raise CatalogueError(f"{where}: member {info.filename} has .npy version {version}")
                    if tuple(h_shape) != shape or h_dtype != dtype:
                        raise CatalogueError(
                            f"{where}: array {name!r} has shape {tuple(h_shape)} dtype "
                            f"{np.dtype(h_dtype).str}, manifest says shape {list(shape)} dtype "
                            f"{dtype.str}"
                        )
                    if info.file_size != fp.count + nbytes:
                        raise CatalogueError(
                            f"{where}: member {info.filename} holds {info.file_size - fp.count} "
                            f"data bytes, shape and dtype need {nbytes}"
                        )
                    buf = bytearray(nbytes)
                    view, got = memoryview(buf), 0
                    while got < nbytes:
                        n = raw.readinto(view[got:])  # type: ignore[attr-defined]  # IO[bytes] stub lacks it
                        if not n:
                            break
                        got += n
                    if got != nbytes:
                        raise CatalogueError(f"{where}: array {name!r} is truncated ({got} of {nbytes} bytes)")
                    raw.read(1)  # reach the end of the member so that zipfile checks its CRC-32
            except CatalogueError:
                raise
            except Exception as exc:  # untrusted bytes: corrupt deflate stream, bad CRC, bad header ...
                raise CatalogueError(f"{where}: unreadable array {name!r}: {exc}") from None
            arr = np.frombuffer(buf, dtype=dtype) if nbytes else np.zeros(0, dtype=dtype)
            arrays[name] = arr.reshape(shape, order="F" if fortran else "C")
    return arrays


def load_bundle(
    path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load and validate a bundle; returns ``(arrays, manifest)``.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    max_bytes : int
        Largest data file, and largest total size of the declared arrays, accepted
        (default :data:`DEFAULT_MAX_BYTES` = 256 MiB); checked before reading.

    Raises
    ------
    CatalogueError
        Missing file; a manifest or data file that is not a regular file (FIFO, device,
        directory) or too large; invalid or truncated JSON; unknown format or version;
        fields of the wrong type; size or checksum mismatch (tampered or truncated data);
        unreadable ``.npz``; members or arrays that differ from the manifest's names,
        shapes or dtypes, or that would decompress beyond their declared size.
    InvalidArgumentError
        ``path`` or ``max_bytes`` is not valid.
    """
    max_bytes = _check_max_bytes(max_bytes)
    npz_path, json_path = _resolve(path)
    for attempt in range(3):
        raw, manifest = _read_manifest(json_path)
        specs = _array_specs(manifest, json_path, max_bytes)
        data_path = _data_path(manifest, json_path, npz_path)
        try:
            data = read_regular_file(data_path, max_bytes, expected_size=manifest.get("size_bytes"))
            problem = None
        except FileNotFoundError:
            problem = f"data file {data_path} not found (manifest {json_path.name} has no data)"
        except FileRefusedError as exc:
            problem = f"data file {exc.path} {exc.reason}"
        if problem is None:
            actual = sha256_bytes(data)
            if actual == manifest["sha256"]:
                return _parse_npz(data, specs, data_path), manifest
            problem = (
                f"{data_path}: checksum mismatch (sha256 {actual[:12]}..., manifest says "
                f"{manifest['sha256'][:12]}...): the file was modified or truncated"
            )
        # a writer may have replaced the bundle between our two reads: retry with the new manifest
        try:
            changed = read_regular_file(json_path, MAX_MANIFEST_BYTES) != raw
        except (OSError, FileRefusedError):
            changed = False
        if not changed or attempt == 2:
            raise CatalogueError(problem)
    raise AssertionError("unreachable")  # pragma: no cover
