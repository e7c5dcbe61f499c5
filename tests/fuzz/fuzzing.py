"""What every fuzz test shares: the hypothesis profiles, the time and memory bound, the property, edge values.

The property (issue #19 item 8): any input gives a result or one of gcsim's exceptions
(:class:`gcsim.errors.GcsimError`, whose subclasses also derive from the built-in exception a
user expects, e.g. ``InvalidArgumentError`` is a ``ValueError``) with a non-empty message, within a
time bound; never a raw exception (``TypeError``, ``IndexError``, ``ZeroDivisionError``, numpy's
``LinAlgError``, ``MemoryError``, ...) and never a hang.

Profiles (selected by the environment variable ``GCSIM_FUZZ_PROFILE``):

* ``fuzz-ci`` (default, what ``make test`` runs): derandomized, so the same examples every run,
  a fixed budget per test, no example database;
* ``fuzz-long`` (``make fuzz``): 20 times the examples, random (hypothesis prints the seed and a
  reproduction blob on failure), the example database in ``.hypothesis/`` replays past failures
  first.  ``GCSIM_FUZZ_EXAMPLES`` overrides the base count of either profile, ``GCSIM_FUZZ_SECONDS``
  the time bound of one example (default 20 s).
"""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from gcsim.errors import GcsimError

REPO = Path(__file__).resolve().parents[2]
GCSIM_DIR = REPO / "gcsim"

_BASE = int(os.environ.get("GCSIM_FUZZ_EXAMPLES", "0") or 0)
_COMMON = dict(
    deadline=None,  # our own wall-clock bound below (hypothesis' deadline would flag first-call imports)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("fuzz-ci", max_examples=_BASE or 40, derandomize=True, database=None, **_COMMON)
settings.register_profile(
    "fuzz-long",
    max_examples=_BASE or 800,
    derandomize=False,
    database=DirectoryBasedExampleDatabase(str(REPO / ".hypothesis" / "fuzz")),  # absolute: examples chdir
    **_COMMON,
)
PROFILE = os.environ.get("GCSIM_FUZZ_PROFILE", "fuzz-ci")
if PROFILE not in ("fuzz-ci", "fuzz-long"):
    raise RuntimeError(f"GCSIM_FUZZ_PROFILE={PROFILE!r}: use fuzz-ci or fuzz-long")
LONG = PROFILE == "fuzz-long"


def fuzz_settings(weight: float = 1.0) -> settings:
    """The selected profile with ``weight`` times its example count (cheap tests get more examples)."""
    base = settings.get_profile(PROFILE)
    return settings(base, max_examples=max(5, round(base.max_examples * weight)))


#: Seconds one example may take before it counts as a hang (the CI machine has 2 shared cores).
EXAMPLE_SECONDS = float(os.environ.get("GCSIM_FUZZ_SECONDS", "20"))
#: Address space one example may add (a regression that allocates a huge array fails here, not the machine).
EXAMPLE_BYTES = 3 << 30


class ExampleTimeout(BaseException):
    """An example ran past :data:`EXAMPLE_SECONDS`.

    A ``BaseException``, not an ``Exception``: gcsim code that turns unexpected exceptions into
    its own (``except Exception: raise CatalogueError(...)``) cannot hide a hang.
    """


def _vm_bytes() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        return None
    return None  # pragma: no cover


@contextlib.contextmanager
def bounded(seconds: float = EXAMPLE_SECONDS) -> Iterator[None]:
    """Run the block under a wall-clock bound and an address-space cap.

    SIGALRM raises :class:`ExampleTimeout` in the main thread at ``seconds``; should the block be
    stuck in C code that never returns to the interpreter, faulthandler dumps every thread's stack
    and ends the process at ``2 * seconds + 30`` (a failed run, never a stuck CI job).
    """
    if not hasattr(signal, "setitimer") or sys.platform != "linux":  # pragma: no cover
        yield
        return

    def on_alarm(signum, frame):
        raise ExampleTimeout(f"the example ran past {seconds:g} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = _vm_bytes()
    cap = None if vm is None else vm + EXAMPLE_BYTES
    if cap is not None and (soft == resource.RLIM_INFINITY or cap < soft):
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    faulthandler.dump_traceback_later(2 * seconds + 30, exit=True, file=sys.__stderr__)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, old_handler)


@dataclass(frozen=True)
class KnownDefect:
    """A defect the fuzzer found that is not fixed yet (each has a strict xfail in ``test_fuzz_found.py``).

    The fuzz tests tolerate exactly this raw exception raised from exactly this gcsim function, so
    that they keep looking for the next defect; once the owner fixes it, the strict xfail passes
    and fails the run, and the entry is removed.
    """

    exception: type[BaseException] | tuple[type[BaseException], ...]
    path: str  # file of the innermost gcsim frame, relative to the repository
    function: str
    reason: str


#: Defects found by this suite in files other engineers were changing at the time (issue #19).
#: None open at the end of issue #19: the zero-stride assignment and mask (MemoryError) were fixed
#: with their strict xfails turned into tests.  Add an entry (and a strict xfail) for the next one.
KNOWN_DEFECTS: tuple[KnownDefect, ...] = ()


class Tolerated:
    """What :func:`outcome` returns for a :class:`KnownDefect` (neither a result nor a refusal)."""

    def __init__(self, defect: KnownDefect):
        self.defect = defect


def _innermost_gcsim_frame(exc: BaseException) -> tuple[str, str] | None:
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        if GCSIM_DIR in path.parents:
            found = (path.relative_to(REPO).as_posix(), frame.name)
    return found


def outcome(fn: Callable[..., Any], *args: Any, seconds: float = EXAMPLE_SECONDS, **kwargs: Any) -> Any:
    """Call ``fn``; return its result, or the :class:`GcsimError` it raised (checked to carry a message).

    Any other exception propagates, so hypothesis reports the input that raised it (a
    :class:`KnownDefect` comes back as :class:`Tolerated`).
    """
    with bounded(seconds):
        try:
            return fn(*args, **kwargs)
        except GcsimError as exc:
            assert str(exc).strip(), f"{type(exc).__name__} raised with an empty message"
            return exc
        except Exception as exc:
            where = _innermost_gcsim_frame(exc)
            for known in KNOWN_DEFECTS:
                if isinstance(exc, known.exception) and where == (known.path, known.function):
                    return Tolerated(known)
            raise


def refused(result: Any) -> bool:
    """Whether :func:`outcome` got no object back (a refusal or a tolerated known defect)."""
    return isinstance(result, (GcsimError, Tolerated))


# --------------------------------------------------------------------------- edge values

#: Integers at the edges: zero, negatives, the 32/64-bit boundaries, astronomically large.
EDGE_INTS = (0, -1, 1, 2, -(10**30), 10**30, 2**31, 2**63, 2**64 + 1, int("9" * 60))
EDGE_FLOATS = (math.nan, math.inf, -math.inf, -0.0, 0.5, -0.5, 1e-320, 1e308, 2.5)


def edge_scalars() -> st.SearchStrategy[Any]:
    """Values of the wrong kind or at the edge, for any scalar parameter."""
    return st.one_of(
        st.sampled_from(EDGE_INTS),
        st.sampled_from(EDGE_FLOATS),
        st.booleans(),  # a bool where an int is expected
        st.sampled_from(["", "3", "abc", "nan", "1e400", "7,3,1"]),
        st.none(),
        st.sampled_from([np.int64(3), np.float64(2.0), np.bool_(True), np.uint8(255), np.float16(1.5)]),
        st.sampled_from([3 + 0j, 1j, complex("nan+nanj")]),
        st.sampled_from([[7], (3,), {}, {"v": 7}, b"7", object()]),
    )


def ints(lo: int, hi: int) -> st.SearchStrategy[Any]:
    """Mostly valid integers in ``[lo, hi]``, sometimes an edge value."""
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), st.integers(lo, hi), edge_scalars())


def floats(lo: float, hi: float) -> st.SearchStrategy[Any]:
    """Mostly valid floats in ``[lo, hi]``, sometimes an edge value."""
    good = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return st.one_of(good, good, good, edge_scalars())


def weird_arrays(shape_hint: tuple[int, int] = (7, 7)) -> st.SearchStrategy[Any]:
    """Arrays of the wrong shape, dtype or layout: empty, 1-D, 3-D, zero-stride, complex, object, NaN."""
    r, c = shape_hint

    def zero_stride(shape):
        return np.broadcast_to(np.ones((1, 1)), shape)

    return st.one_of(
        st.sampled_from(
            [
                np.zeros((0, 0)),
                np.zeros((0, c)),
                np.ones(c),
                np.ones((r, c, 2)),
                np.ones((r, c), dtype=complex),
                np.full((r, c), np.nan),
                np.full((r, c), np.inf),
                np.eye(r, c, dtype=object),
                np.array([["a"] * c] * r),
                np.ones((r, c), dtype=bool),
                -np.eye(r, c),
                np.full((r, c), 2),
                np.eye(r, c).astype(np.float16),
                np.eye(r, c)[:, ::-1],
                np.asfortranarray(np.eye(r, c)),
                np.zeros((r, c)),
            ]
        ),
        st.builds(zero_stride, st.sampled_from([(r, c), (10**6, 10**6), (10**9, 7), (7, 10**9)])),
        st.lists(st.lists(st.integers(-2, 2), min_size=1, max_size=4), min_size=1, max_size=4),
        edge_scalars(),
    )


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its (size, mtime_ns), symlinks not followed."""
    out: dict[str, tuple[int, int]] = {}
    if not folder.exists():
        return out
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = os.path.join(root, name)
            try:
                stt = os.lstat(p)
            except OSError:
                continue
            # a folder counts when it appears or goes; its mtime moves with every entry written inside
            out[p] = (stt.st_size, stt.st_mtime_ns) if name in files else (0, 0)
    return out


def changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """Paths created, modified or removed between two snapshots."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def repo_status() -> set[str]:
    """``git status`` of the repository (tracked changes, untracked and ignored entries)."""
    import subprocess

    proc = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--ignored"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return set(proc.stdout.splitlines()) if proc.returncode == 0 else set()


#: Tool caches other tests create in the repository (hypothesis' default database, pytest, linters).
_CACHES = (".hypothesis", ".pytest_cache", "__pycache__", ".mypy_cache", ".ruff_cache", ".ipynb_checkpoints")


def repo_changes(before: set[str], after: set[str]) -> list[str]:
    """New ``git status`` entries, except tool caches and ``.py``/``.md`` sources (gcsim never writes
    those; in a working tree shared with people editing, they are the people's)."""
    return sorted(
        e
        for e in after - before
        if not e.rstrip("/").endswith((".py", ".md"))
        and not any(c in e.split("/") or e.endswith(" " + c + "/") for c in _CACHES)
    )
