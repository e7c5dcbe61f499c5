"""Provenance records and safe file primitives shared by every writer and reader in gcsim.

A manifest says what produced a file: gcsim version, git commit, library
versions, platform, creation time, seed and parameters.

The file primitives guarantee three things for every result, design and table
gcsim writes or reads:

* **nothing half-written** -- :func:`atomic_write_bytes`, :func:`atomic_write_text`
  and :func:`atomic_path` write into a fresh temporary file in the target's folder,
  ``fsync`` it and ``os.replace`` it onto the target (atomic on POSIX), so a
  reader, even after ``kill -9`` at any instant, sees the old content or the new,
  never a mixture; the rename is then made durable by an ``fsync`` of the folder;
* **normal permissions** -- the temporary file is created with mode ``0o666``
  filtered by the process umask (like ``open(path, "w")``), not the ``0o600`` of
  :func:`tempfile.mkstemp`;
* **nothing hangs or explodes** -- :func:`read_regular_file` refuses FIFOs,
  devices, sockets and directories *before* reading (the open is non-blocking, so
  a FIFO with no writer cannot hang it) and never reads more than a stated number
  of bytes, so a symlink to ``/dev/zero`` or a multi-gigabyte file is refused
  instead of exhausting memory.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import platform
import secrets
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InvalidArgumentError

__all__ = [
    "provenance",
    "sha256_file",
    "sha256_bytes",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_path",
    "read_regular_file",
    "read_json_object",
    "file_kind",
    "to_jsonable",
    "dumps",
    "git_sha",
    "FileRefusedError",
    "check_folder",
]


class FileRefusedError(OSError):
    """A path that must be a readable regular file of bounded size is not.

    Raised by :func:`read_regular_file`; callers translate it into their own
    error (``CatalogueError`` for bundles).  ``reason`` is a short phrase such as
    ``"is a FIFO, not a regular file"`` or ``"is 2147483648 bytes, over the limit of 16777216"``.
    """

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path} {reason}")


def git_sha() -> str | None:
    """Commit SHA of the gcsim checkout (``None`` outside a git work tree, and for an installed gcsim).

    The checkout is the folder holding the package ``gcsim/`` and the ``pyproject.toml`` that builds
    it; an installed gcsim (site-packages) has no such file, so a git repository that merely
    encloses the environment is not reported.
    """
    root = Path(__file__).resolve().parents[2]  # this file is <root>/gcsim/io/manifest.py
    project = root / "pyproject.toml"
    if not project.is_file() or 'name = "gcsim"' not in project.read_text(encoding="utf-8"):
        return None

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    try:
        out = git("rev-parse", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    if out.returncode != 0 or not sha:
        return None
    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return sha
    return sha + ("-dirty" if dirty.stdout.strip() else "")


def provenance() -> dict[str, Any]:
    """Versions and environment of this run (JSON-serializable)."""
    import scipy

    info = {
        "gcsim_version": __version__,
        "git_sha": git_sha(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "platform": platform.platform(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return info


# ---------------------------------------------------------------------------
# reading


def file_kind(mode: int) -> str:
    """Human name of the file type in an ``st_mode`` ("regular file", "FIFO", "directory", ...)."""
    for test, name in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return name
    return "special file"


def _open_regular(path: str | os.PathLike) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only without blocking; return ``(fd, fstat)`` of a regular file or refuse.

    The type is checked with ``stat`` *before* opening (opening a device can have side
    effects) and again with ``fstat`` on the descriptor actually opened (the path may
    have been swapped in between).  ``O_NONBLOCK`` makes opening a FIFO return at once
    instead of waiting for a writer.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileRefusedError(path, f"cannot be inspected: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefusedError(path, f"is a {file_kind(st.st_mode)}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileRefusedError(path, f"cannot be opened: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefusedError(path, f"is a {file_kind(st.st_mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular_file(path: str | os.PathLike, max_bytes: int, *, expected_size: int | None = None) -> bytes:
    """All bytes of the regular file ``path``, refusing anything else before reading.

    Parameters
    ----------
    path : path
        File to read; a symbolic link is followed, and what it points to must be a regular file.
    max_bytes : int
        Largest size accepted.  The size from ``fstat`` is checked before reading, and the read
        itself stops after ``max_bytes + 1`` bytes (a file that grows meanwhile is refused too).
    expected_size : int, optional
        Exact size the caller knows the file must have (e.g. from a manifest); checked
        against ``fstat`` before reading anything.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    FileRefusedError
        Not a regular file (directory, FIFO, device, socket), unreadable, larger than
        ``max_bytes`` or of a size other than ``expected_size``.
    """
    fd, st = _open_regular(path)
    try:
        if expected_size is not None and st.st_size != expected_size:
            raise FileRefusedError(
                path, f"is {st.st_size} bytes, but {expected_size} were recorded (truncated or replaced)"
            )
        if st.st_size > max_bytes:
            raise FileRefusedError(path, f"is {st.st_size} bytes, over the limit of {max_bytes}")
        chunks, total = [], 0
        while total <= max_bytes:
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            except BlockingIOError:  # pragma: no cover - regular files never block
                continue
            except OSError as exc:
                raise FileRefusedError(path, f"cannot be read: {exc.strerror or exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise FileRefusedError(path, f"grew beyond the limit of {max_bytes} bytes while being read")
        data = b"".join(chunks)
        if expected_size is not None and len(data) != expected_size:
            raise FileRefusedError(path, f"changed size while being read ({len(data)} bytes, {expected_size} recorded)")
        return data
    finally:
        os.close(fd)


def read_json_object(path: str | os.PathLike, max_bytes: int = 16 << 20) -> dict[str, Any]:
    """Parse the small JSON file ``path`` (read with :func:`read_regular_file`); it must hold an object.

    Raises
    ------
    FileNotFoundError, FileRefusedError
        As :func:`read_regular_file`.
    ValueError
        Not UTF-8, not JSON (truncated, edited), nested too deeply, or not a JSON object.
    """
    return parse_json_object(read_regular_file(path, max_bytes), os.fspath(path))


def parse_json_object(raw: bytes, name: str, *, expected: str = "") -> dict[str, Any]:
    """Parse the bytes ``raw`` of the JSON file ``name``; they must hold an object.

    ``expected`` is appended to the not-an-object message (e.g. ``"not a gcsim-bundle manifest"``).

    Raises
    ------
    ValueError
        Not UTF-8, not JSON (truncated, edited), nested too deeply, or not a JSON object.
    """
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} is not UTF-8 text: {exc}") from None
    except RecursionError:
        raise ValueError(f"{name} nests JSON too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and integers beyond Python's digit limit
        raise ValueError(f"{name} is not valid JSON (truncated or edited?): {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(
            f"{name} holds a JSON {type(value).__name__}, not an object" + (f" ({expected})" if expected else "")
        )
    return value


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, max_bytes: int | None = None) -> str:
    """Hex SHA-256 digest of the regular file ``path``.

    A FIFO, device or directory is refused with :class:`FileRefusedError` instead of
    hanging or reading forever; ``max_bytes`` (default: no limit) bounds the size.
    """
    fd, st = _open_regular(path)
    try:
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileRefusedError(path, f"is {st.st_size} bytes, over the limit of {max_bytes}")
        h = hashlib.sha256()
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if max_bytes is not None and total > max_bytes:
                raise FileRefusedError(path, f"grew beyond the limit of {max_bytes} bytes while being read")
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# writing


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every platform can open folders)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temp_name(path: Path, suffix: str = ".tmp") -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}{suffix}")


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path``; its mode is ``0o666`` minus the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = _temp_name(path)
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file", str(path))  # pragma: no cover


def _check_target(path: Path) -> None:
    """Refuse to replace a directory, FIFO or device with a file (``os.replace`` would fail or surprise)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file that can be replaced", str(path))
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise FileExistsError(errno.EEXIST, f"is a {file_kind(st.st_mode)}, not a file that can be replaced", str(path))


def check_folder(argument: str, path: str | os.PathLike) -> Path:
    """``path`` as a folder that exists or can be created: refuse it if it or an ancestor is a file.

    Raises :class:`~gcsim.errors.InvalidArgumentError` naming ``argument`` (e.g. ``"out"`` for
    ``/dev/null/results`` or a results "folder" that is a regular file) before anything is written.
    """
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path) or "\x00" in os.fspath(path):
        raise InvalidArgumentError(argument, f"must be a folder path, got {path!r}")
    folder = Path(path)
    for ancestor in (folder, *folder.parents):
        if os.path.lexists(ancestor):
            if not ancestor.is_dir():
                what = "" if ancestor == folder else f" (in {folder})"
                raise InvalidArgumentError(argument, f"{ancestor} exists and is not a folder{what}")
            break
    return folder


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers never see a half-written file: either the old content or the new, even if
    the process is killed at any point.  The new file gets the permissions of a
    normally created file (``0o666`` minus the umask).  Parent folders are created.

    Raises
    ------
    IsADirectoryError, FileExistsError
        ``path`` is a directory or another non-regular file (it is left alone).
    OSError
        The folder is not writable, the disk is full, ...; no temporary file is left behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _check_target(path)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Context manager for writers that want a file *name* (pandas ``to_csv``, matplotlib ``savefig``).

    Yields a temporary path in the target's folder with the same suffix (so format
    inference by extension still works); when the block exits normally the file is
    ``fsync``-ed and renamed onto ``path``; on an exception it is removed and ``path``
    keeps its old content.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "table.csv"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("a,b\\n1,2\\n")
    >>> target.read_text()
    'a,b\\n1,2\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _check_target(path)
    tmp = _temp_name(path, ".tmp" + path.suffix)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def to_jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays, tuples, paths and dataclasses into JSON-ready values."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        f = float(value)
        return f if np.isfinite(f) else str(f)
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, complex):
        return {"real": value.real, "imag": value.imag}
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(obj: Any) -> str:
    """Deterministic JSON (sorted keys, 2-space indent)."""
    return json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n"
