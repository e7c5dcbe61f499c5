"""The launcher: ``fn(rank, world_size, *args)`` in one process per rank, never hanging (docs/guides/executor.md).

:func:`launch` starts ``world_size`` processes (multiprocessing, ``forkserver`` with torch
preloaded, or ``spawn``), initializes a process group in each (gloo on CPU; NCCL when asked),
runs a module-level function and collects what each rank returns.  It never hangs and leaves
nothing behind: the process-group timeout bounds the rendezvous, every collective and every
point-to-point wait; a rank that raises or dies ends the launch after a short grace; a rank
still running at its deadline is killed and reported as *stalled* (:class:`LaunchTimeoutError`
names it); the deadline covers the whole run, starting the processes included, and killed
ranks are reaped together within a bounded time; a given port that is already in use, a host
that does not resolve or is not an address of this machine is refused before any process
starts; each rank exits by itself if the launching process is killed, and the rendezvous
folder it leaves behind is removed by the next launch (only gcsim's own: a marker file names
its launcher's pid, and that process is gone).

What the ranks return reaches the launcher through a multiprocessing pipe (never a file); a
return value that cannot be pickled is reported as such.  The native libraries' own log lines
(gloo's ``[Gloo] Rank 3 is connected to 91 peer ranks``, c10's ``[W1202 ...]``) are dropped
from the ranks' standard output and error unless ``verbose=True`` (``--verbose`` on the
command line); everything else a rank prints passes through.

Ranks exit with ``os._exit`` after reporting, so that no library destructor can block on
an operation a dead peer will never complete.

Why not ``torch.multiprocessing.spawn``: with ``join=True`` it waits without a deadline (a
stalled rank hangs it), it does not report which rank stalled, and ranks outlive a launching
process that is killed (SIGKILL); those behaviours are what the executor's fault tests check
(tests/test_executor_faults.py).  ``torchrun`` (torch.distributed.elastic) is the launcher for
real jobs and works with gcsim unchanged (examples/train_cerar_ddp.py is tested under it).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import multiprocessing as mp
import os
import pickle
import queue as queue_mod
import re
import shutil
import socket
import stat
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from .._optional import require_installed
from .._validation import check_bool, check_int, check_real
from ..errors import GcsimError, InvalidArgumentError

__all__ = [
    "launch",
    "LaunchResult",
    "RankFailure",
    "LaunchTimeoutError",
    "exception_line",
    "clean_stale_rendezvous",
    "GLOO_SOURCE",
    "NATIVE_LOG",
    "REAP_TIMEOUT",
    "RESOLVE_TIMEOUT",
]


class RankFailure(GcsimError, RuntimeError):
    """A launched rank raised, died without reporting, or stalled past the launcher's deadline.

    The message has one line per fact (``rank 1 raised ValueError: ...``, ``rank 2 died
    without reporting (exit code 17)``, ``rank 3 stalled: ...``) and no tracebacks; the
    full tracebacks of the ranks that raised are in :attr:`tracebacks`.

    Attributes
    ----------
    result : LaunchResult or None
        What the launcher collected (None when the failure was detected in the parent).
    tracebacks : dict
        rank -> traceback text of every rank that raised.
    """

    def __init__(self, message: str, *, result: LaunchResult | None = None):
        super().__init__(message)
        self.result = result
        self.tracebacks: dict = dict(result.errors) if result is not None else {}


class LaunchTimeoutError(RankFailure, TimeoutError):
    """A rank stalled: it was still running, without a report, when its deadline passed (then killed).

    Also a :class:`TimeoutError`, so ``except TimeoutError`` catches it.
    """


def _ranks(ranks: Sequence[int]) -> str:
    """``rank 3``, ``ranks 2, 3``, ``ranks 0-23, 40`` (runs of three or more as ranges: 92 ranks fit a line).

    >>> _ranks([3]), _ranks([2, 3]), _ranks([*range(24), 40, 41])
    ('rank 3', 'ranks 2, 3', 'ranks 0-23, 40, 41')
    """
    ranks = list(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts += [f"{ranks[i]}-{ranks[j]}"] if j - i >= 2 else [str(r) for r in ranks[i : j + 1]]
        i = j + 1
    return "ranks " + ", ".join(parts)


GLOO_SOURCE = re.compile(r"\[/[^\]\s]*:\d+\] ?")


def exception_line(tb: str, limit: int = 300) -> str:
    """``ExcType: first message line`` of a formatted traceback (module prefix dropped)."""
    lines = tb.rstrip().splitlines()
    start = 0
    for i, line in enumerate(lines):  # the exception follows the last frame
        if line.startswith("  File "):
            start = i + 1
    while start < len(lines) and lines[start].startswith((" ", "\t")):
        start += 1  # the frame's source line(s)
    text = next((ln for ln in lines[start:] if ln.strip()), lines[-1] if lines else "unknown error")
    head, sep, rest = text.partition(":")
    if sep and " " not in head:  # "pkg.mod.ExcType: message"
        text = head.rsplit(".", 1)[-1] + sep + rest
    text = GLOO_SOURCE.sub("", text)  # "[/__w/.../pair.cc:534] " locations of C++ errors
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class LaunchResult:
    """What :func:`launch` collected.

    Every rank ends in exactly one of four states: it reported a result, it raised (its
    traceback is in :attr:`errors`), it **died** (exited without reporting), or it
    **stalled** (still running without a report at its deadline, then killed).

    Attributes
    ----------
    results : list
        Return value of each rank (None when the rank failed or did not report).
    errors : dict
        rank -> traceback text of ranks that raised, in the order the launcher received them
        (the first is usually the cause, the others its consequences).
    exitcodes : list
        Process exit codes (negative = killed by that signal).
    killed : list
        Ranks the launcher had to kill (stalled ranks, and reported ranks slow to exit).
    timed_out : bool
        True when some rank stalled (see :attr:`stalled`) or was not started (:attr:`unstarted`).
    seconds : float
        Wall time of the launch.
    stalled : list
        Ranks still running without a report at the deadline (killed).
    died : list
        Ranks that exited without reporting (a crash, ``os._exit``, a signal).
    deadline_reason : str
        Which deadline ended the wait, e.g. ``"the 60 s launch timeout"``,
        ``"3 s after rank 1 failed"`` or ``"1 s after rank 0 reported"``.
    unstarted : list
        Ranks whose process was not started because the deadline passed while the launcher
        was still starting processes (the deadline covers the start-up too).
    """

    results: list
    errors: dict
    exitcodes: list
    killed: list
    timed_out: bool
    seconds: float
    stalled: list = field(default_factory=list)
    died: list = field(default_factory=list)
    deadline_reason: str = ""
    unstarted: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every rank reported a result (none raised, died, stalled or was left unstarted)."""
        return not self.errors and not self.stalled and not self.died and not self.unstarted

    def failure_message(self) -> str:
        """One summary line (``launch of N ranks failed: ...``) and one line per failed rank."""
        short, detail = [], []
        if self.unstarted:
            short.append(
                f"{_ranks(self.unstarted)} not started: {self.deadline_reason} passed while the launcher was "
                f"starting {len(self.results)} processes"
            )
        if self.stalled:
            short.append(
                f"{_ranks(self.stalled)} stalled: timed out, did not report within {self.deadline_reason}; killed"
            )
        for r in self.errors:  # in the order they were reported: the cause first
            line = exception_line(self.errors[r])
            short.append(f"rank {r} raised {line.split(chr(10))[0][:160]}")
            detail.append(f"  rank {r}: {line}")
        for r in self.died:
            short.append(f"rank {r} died without reporting (exit code {self.exitcodes[r]})")
        head = f"launch of {len(self.results)} ranks failed: " + "; ".join(short)
        return "\n".join([head, *detail])

    def raise_on_failure(self) -> LaunchResult:
        """Raise unless :attr:`ok`: :class:`LaunchTimeoutError` when a rank stalled, else :class:`RankFailure`.

        The message names every failed rank and what happened to it; tracebacks are on
        the exception's ``tracebacks`` attribute.
        """
        if not self.ok:
            cls = LaunchTimeoutError if self.stalled or self.unstarted else RankFailure
            raise cls(self.failure_message(), result=self)
        return self


_CLONE_NEWNET = 0x40000000


def _enter_netns(name: str) -> None:
    """Move this (single-threaded) process into the network namespace ``name`` (setns(2))."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({name}) failed: {os.strerror(err)}")
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (an exited, unreaped zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: trust kill(0)


def _watch_launcher(launcher_pid: int, period: float = 0.5) -> None:
    """Exit this rank at once when the launching process is gone, so that no rank outlives it.

    The launcher kills its ranks on every path it controls; this covers the one it does not
    (the launcher itself killed by a signal).  A rank notices either its parent changing (it
    was re-parented: its parent -- the launcher, or the forkserver that dies with the
    launcher -- is gone) or the launcher's pid no longer running.
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(period)
            if os.getppid() != parent or not _pid_alive(launcher_pid):
                os._exit(70)  # EX_SOFTWARE: orphaned

    threading.Thread(target=watch, name="gcsim-launcher-watch", daemon=True).start()


#: Log lines of the native libraries (gloo, c10) a rank writes to its fds 1 and 2: gloo's
#: ``[Gloo] Rank 0 is connected to ...``, c10's ``[W1202 04:46:01.123 file.cpp:42] ...`` (newer
#: torch prefixes ``[rank3]:``) and the older ``[W file.cpp:42] ...``.
NATIVE_LOG = re.compile(rb"^(\[rank\d+\]:)?\[(Gloo\]|[IWEF]\d{4} \d\d:\d\d:\d\d|[IWEF] [\w.]+:\d+\])")


class _NativeLogFilter:
    """Route fds 1 and 2 of this rank through pipes that drop :data:`NATIVE_LOG` lines.

    Native code writes to the file descriptors directly, so the filter sits at the fd level:
    each fd is replaced by a pipe whose reader thread forwards every other line to the original
    stream.  :meth:`close` flushes Python's buffers, closes the pipes and waits (bounded) for
    the readers, so nothing printed before ``os._exit`` is lost.
    """

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        for fd in (1, 2):
            saved = os.dup(fd)
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
            t = threading.Thread(target=self._pump, args=(r, saved), name=f"gcsim-log-filter-{fd}", daemon=True)
            t.start()
            self._threads.append(t)

    @staticmethod
    def _pump(r: int, out: int) -> None:
        pending = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not NATIVE_LOG.match(line))
            if kept:
                os.write(out, kept)
        if pending and not NATIVE_LOG.match(pending):
            os.write(out, pending)
        os.close(r)

    def close(self, wait: float = 1.0) -> None:
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        for fd in (1, 2):
            os.close(fd)  # the pipe's last writer: its reader sees the end
        end = time.monotonic() + wait
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))


def _child(
    rank: int,
    world_size: int,
    fn: Callable,
    args: tuple,
    init_method: str,
    backend: str,
    op_timeout: float,
    q,
    env: dict | None,
    netns: str | None,
    threads: int,
    launcher_pid: int,
    verbose: bool = False,
) -> None:
    code = 0
    logs = None
    try:
        if netns:
            _enter_netns(netns)  # before any thread starts
        _watch_launcher(launcher_pid)
        if not verbose:
            logs = _NativeLogFilter()
        for k, v in (env or {}).items():
            os.environ[k] = str(v)
        import torch
        import torch.distributed as dist

        torch.set_num_threads(threads)
        if backend == "nccl":
            torch.cuda.set_device(rank % max(torch.cuda.device_count(), 1))  # one rank per GPU
        # the process-group timeout bounds the rendezvous and every collective / wait() after it
        dist.init_process_group(
            backend, init_method=init_method, rank=rank, world_size=world_size, timeout=timedelta(seconds=op_timeout)
        )
        # every rank connected before any job runs: a rank whose job returns at once must not tear its
        # group down while a peer is still in gloo's connectFullMesh ("Connection closed by peer")
        dist.barrier()
        out = fn(rank, world_size, *args)
        try:
            # the queue pickles in a feeder thread that drops what it cannot pickle: check here
            pickle.dumps(out)
        except Exception as exc:
            code = 1
            q.put(
                (
                    rank,
                    "error",
                    f"UnpicklableResult: rank {rank} returned {type(out).__name__!s}, which cannot "
                    f"be pickled to reach the launcher ({type(exc).__name__}: {exc}); return plain data\n",
                )
            )
        else:
            q.put((rank, "ok", out))
    except BaseException:  # report everything, including SystemExit from user code
        code = 1
        try:
            q.put((rank, "error", traceback.format_exc()))
        except Exception:
            pass
    finally:
        try:
            q.close()
            q.join_thread()
            if logs is not None:
                logs.close()
        finally:
            # no destroy_process_group: it may block on an operation of a dead peer
            os._exit(code)


_CONTEXTS: dict[str, Any] = {}


def _context(start_method: str):
    if start_method not in _CONTEXTS:
        ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            # import torch once in the server; every rank is then a cheap fork of it
            ctx.set_forkserver_preload(
                [
                    "torch",
                    "torch.distributed",
                    "numpy",
                    "gcsim.executor.launcher",
                    "gcsim.executor.collectives",
                    "gcsim.executor.experiments",
                ]
            )
        _CONTEXTS[start_method] = ctx
    return _CONTEXTS[start_method]


#: Longest wait, in all, for the killed ranks of a launch to be reaped (SIGKILL is immediate; a
#: machine under load may take a moment per process, so they are killed first and joined together).
REAP_TIMEOUT = 5.0

#: Longest wait for the host name of a ``tcp://`` init method to resolve (a dead DNS server).
RESOLVE_TIMEOUT = 5.0


def _resolve(host: str, port: int, wait: float) -> list:
    """``getaddrinfo(host, port)`` within ``wait`` seconds, or raise naming the host."""
    found: list = []
    failed: list = []

    def run() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    t = threading.Thread(target=run, name="gcsim-resolve", daemon=True)
    t.start()
    t.join(wait)
    if t.is_alive():
        raise InvalidArgumentError("init_method", f"host {host!r} did not resolve within {wait:g} s")
    if failed or not found:
        why = failed[0].strerror if failed and failed[0].strerror else (str(failed[0]) if failed else "no address")
        raise InvalidArgumentError("init_method", f"host {host!r} does not resolve ({why}): no rank could reach it")
    return found


def _check_init_method(init_method: Any, probe: bool) -> None:
    """Refuse a malformed ``init_method``, a host that does not resolve, and (``probe``) a bad local port.

    The host is checked first: an IP literal must be valid (``256.1.1.1`` is not), a name must
    resolve within :data:`RESOLVE_TIMEOUT` -- otherwise every rank would wait for a rendezvous
    that never comes and the launch would end at its timeout blaming "stalled" ranks.  Rank 0
    (always on this machine) listens on ``host:port``: with ``probe``, a port another process
    already listens on, and an address that is not one of this machine's, are refused here.
    """
    if not isinstance(init_method, str):
        raise InvalidArgumentError("init_method", f"must be a string like 'tcp://127.0.0.1:29500', got {init_method!r}")
    if init_method.startswith(("env://", "file://")):
        return
    if not init_method.startswith("tcp://"):
        raise InvalidArgumentError("init_method", f"must start with tcp://, env:// or file://, got {init_method!r}")
    try:
        parts = urlsplit(init_method)
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # e.g. a port outside 0..65535
        raise InvalidArgumentError("init_method", f"{init_method!r}: {exc}") from None
    if not host or port is None or not 1 <= port <= 65535:
        raise InvalidArgumentError("init_method", f"needs a host and a port in 1..65535, got {init_method!r}")
    if re.fullmatch(r"[\d.]+", host) or ":" in host:  # an IP literal: valid or refused, no lookup
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise InvalidArgumentError("init_method", f"host {host!r} is not a valid IP address") from None
    infos = _resolve(host, port, RESOLVE_TIMEOUT)
    if not probe:
        return
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # like the store's listening socket: a port in TIME_WAIT is usable, a listening one is not
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InvalidArgumentError(
                    "init_method",
                    f"port {port} on {host} is already in use (another process listens there): "
                    "pick a free port, or omit init_method and gcsim picks one",
                ) from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise InvalidArgumentError(
                    "init_method",
                    f"host {host!r} is not an address of this machine: rank 0 runs here and must listen on it",
                ) from None
            # EACCES etc.: rank 0 will tell


#: Name prefix of the default rendezvous folders, and the marker file each one holds.
RDZV_PREFIX = "gcsim-rdzv-"
RDZV_MARKER = "gcsim-launcher.json"


def _new_rendezvous() -> str:
    """A fresh private rendezvous folder with a marker naming this launcher (data only: JSON)."""
    folder = tempfile.mkdtemp(prefix=RDZV_PREFIX)
    with open(os.path.join(folder, RDZV_MARKER), "w") as fh:
        json.dump({"gcsim": "rendezvous", "pid": os.getpid(), "created": time.time()}, fh)
    return folder


def clean_stale_rendezvous(root: str | None = None) -> list[str]:
    """Remove the rendezvous folders of launchers that are gone; return the folders removed.

    A launcher killed by a signal (SIGKILL) cannot remove its folder; the next launch does.
    Only a folder that is certainly gcsim's own and stale is touched: a real folder (not a
    link) in ``root`` (default the temporary folder) named ``gcsim-rdzv-*``, owned by this
    user, holding the marker file ``gcsim-launcher.json`` whose ``pid`` is no longer running.
    Anything else -- another user's folder, a missing or unreadable marker, a live owner -- is
    left alone.
    """
    root = tempfile.gettempdir() if root is None else root
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(root) if n.startswith(RDZV_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            marker = os.path.join(path, RDZV_MARKER)
            if not stat.S_ISREG(os.lstat(marker).st_mode):
                continue
            with open(marker) as fh:
                info = json.load(fh)
            pid = info.get("pid") if isinstance(info, dict) and info.get("gcsim") == "rendezvous" else None
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or _pid_alive(pid):
                continue
        except (OSError, ValueError):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed


def launch(
    fn: Callable,
    world_size: int,
    args: Sequence = (),
    *,
    timeout: float = 60.0,
    op_timeout: float | None = None,
    backend: str = "gloo",
    init_method: str | None = None,
    env: dict | None = None,
    rank_env: Sequence[dict] | None = None,
    netns: Sequence[str] | None = None,
    start_method: str = "forkserver",
    threads: int = 1,
    grace_after_rank0: float | None = None,
    grace_after_failure: float = 3.0,
    may_die: Sequence[int] = (),
    verbose: bool = False,
) -> LaunchResult:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` processes with a process group.

    Never hangs, and never leaves a process behind:

    * the process-group timeout ``op_timeout`` bounds the rendezvous and every collective
      and ``wait()`` inside the ranks (a stalled peer makes the others raise);
    * the launcher waits at most ``timeout`` seconds in all, starting the processes included
      (ranks not started by then are reported as such); once a rank has raised or died
      unexpectedly the job has failed, and the others get ``grace_after_failure`` seconds
      to report (their error messages name the failed peer) before they are killed;
    * every rank still running at its deadline is killed and reported as **stalled**; the killed
      ranks are reaped together (at most :data:`REAP_TIMEOUT` seconds in all, not per rank);
    * each rank exits by itself when the launching process disappears (killed by a signal).

    Parameters
    ----------
    fn : callable
        A module-level (picklable) function; its return value must be picklable.
    world_size : int
        Number of ranks (>= 1).
    args : sequence
        Extra (picklable) arguments of ``fn``.
    timeout : float
        Seconds after which every process still alive is killed (reported as stalled).
    op_timeout : float, optional
        Process-group timeout (bounds init, every collective and every ``wait``);
        default ``timeout``.
    backend : {"gloo", "nccl"}
        "nccl" needs one GPU per rank.
    init_method : str, optional
        ``tcp://host:port``, ``env://`` or ``file://...``.  Default: a file store in a fresh
        private temporary folder (removed afterwards; one left by a killed launcher is removed
        by the next launch, see :func:`clean_stale_rendezvous`) -- no port to collide on.  A
        host that is not a valid address or does not resolve, a local TCP port that is already
        in use, or an address that is not this machine's is refused at once.
    env, rank_env : dict, list of dict
        Environment variables for all ranks / per rank (e.g. ``GLOO_SOCKET_IFNAME``).
    netns : list of str, optional
        Network namespace (``/var/run/netns/<name>``) of each rank (root only).
    start_method : {"forkserver", "spawn"}
    threads : int
        ``torch.set_num_threads`` in each rank.
    grace_after_rank0 : float, optional
        Once rank 0 (e.g. a parameter server) has reported, wait at most this long for
        the others, then kill them.
    grace_after_failure : float
        Once a rank has raised, or died without reporting (and is not in ``may_die``),
        wait at most this long for the others.
    may_die : sequence of int
        Ranks whose death is part of the experiment (fault injection): it does not end
        the launch early.
    verbose : bool
        Let the native libraries' own log lines (gloo, c10: :data:`NATIVE_LOG`) through the
        ranks' standard output and error; by default they are dropped.

    Returns
    -------
    LaunchResult
        Call :meth:`LaunchResult.raise_on_failure` for an exception naming failed ranks.

    Raises
    ------
    InvalidArgumentError
        Bad arguments, an unpicklable ``fn``/``args``, a host that does not resolve, or a given
        local port already in use.
    """
    require_installed("torch", "torch", "gcsim.executor.launcher.launch")  # the ranks import it, not the launcher
    world_size = check_int("world_size", world_size, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    op_timeout = timeout if op_timeout is None else check_real("op_timeout", op_timeout, minimum=0.0, strict_min=True)
    grace_after_failure = check_real("grace_after_failure", grace_after_failure, minimum=0.0)
    if grace_after_rank0 is not None:
        grace_after_rank0 = check_real("grace_after_rank0", grace_after_rank0, minimum=0.0)
    threads = check_int("threads", threads, minimum=1)
    dying = {check_int("may_die", r, minimum=0, maximum=world_size - 1) for r in may_die}
    verbose = check_bool("verbose", verbose)
    if backend not in ("gloo", "nccl"):
        raise InvalidArgumentError("backend", f"must be 'gloo' or 'nccl', got {backend!r}")
    if start_method not in ("forkserver", "spawn"):
        raise InvalidArgumentError("start_method", f"must be 'forkserver' or 'spawn', got {start_method!r}")
    if rank_env is not None and len(rank_env) != world_size:
        raise InvalidArgumentError("rank_env", f"needs one dict per rank ({world_size}), got {len(rank_env)}")
    if netns is not None and len(netns) != world_size:
        raise InvalidArgumentError("netns", f"needs one namespace per rank ({world_size}), got {len(netns)}")
    # pickled anyway when each rank starts; failing here means no process was started yet
    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise InvalidArgumentError("fn", f"must be a module-level function (picklable): {exc}") from None
    try:
        pickle.dumps(tuple(args))
    except Exception as exc:
        raise InvalidArgumentError("args", f"must be picklable: {exc}") from None
    folder = None
    if init_method is not None:
        _check_init_method(init_method, probe=netns is None)
    else:
        # default rendezvous: a file store in a fresh private folder.  No TCP port is involved,
        # so nothing can be taken between choosing a port and listening on it, and no other job
        # on this machine can walk into this job's rendezvous (or this job into theirs).
        clean_stale_rendezvous()  # folders of launchers killed by a signal
        folder = _new_rendezvous()
        init_method = "file://" + os.path.join(folder, "store")
    try:
        return _launch_once(
            fn,
            world_size,
            tuple(args),
            timeout=timeout,
            op_timeout=op_timeout,
            backend=backend,
            init_method=init_method,
            env=env,
            rank_env=rank_env,
            netns=netns,
            start_method=start_method,
            threads=threads,
            grace_after_rank0=grace_after_rank0,
            grace_after_failure=grace_after_failure,
            may_die=dying,
            verbose=verbose,
        )
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _launch_once(
    fn: Callable,
    world_size: int,
    args: tuple,
    *,
    timeout: float,
    op_timeout: float,
    backend: str,
    init_method: str,
    env: dict | None,
    rank_env: Sequence[dict] | None,
    netns: Sequence[str] | None,
    start_method: str,
    threads: int,
    grace_after_rank0: float | None,
    grace_after_failure: float,
    may_die: set,
    verbose: bool = False,
) -> LaunchResult:
    ctx = _context(start_method)
    q = ctx.Queue()
    procs: list = []
    reports = _Reports(world_size, timeout, grace_after_rank0, grace_after_failure)

    def child_args(r: int) -> tuple:
        e = dict(env or {})
        e.update((rank_env or [{}] * world_size)[r])
        netns_r = None if netns is None else netns[r]
        return (r, world_size, fn, args, init_method, backend, op_timeout, q, e, netns_r, threads, os.getpid(), verbose)

    finished = False
    unstarted: list = []
    try:
        unstarted = _start_ranks(ctx, procs, reports, world_size, child_args)
        if not unstarted:
            _wait_for_reports(q, procs, reports, world_size, may_die)
        while True:  # reports that raced with the deadline
            try:
                reports.take(q.get_nowait())
            except (queue_mod.Empty, OSError, EOFError):
                break
        finished = True
    finally:
        killed, stalled = _stop_ranks(procs, reports.reported, finished)
        q.close()
    exitcodes = [p.exitcode for p in procs] + [None] * len(unstarted)
    died_ranks = [r for r in range(len(procs)) if r not in reports.reported and r not in stalled]
    return LaunchResult(
        results=reports.results,
        errors=reports.errors,
        exitcodes=exitcodes,
        killed=killed,
        timed_out=bool(stalled or unstarted),
        seconds=time.monotonic() - reports.t0,
        stalled=stalled,
        died=died_ranks,
        deadline_reason=reports.reason if stalled or unstarted else "",
        unstarted=unstarted,
    )


class _Reports:
    """What the ranks of one launch reported, and its deadline: ``timeout`` after the start, brought
    forward to ``grace_after_failure`` after a failure and ``grace_after_rank0`` after rank 0's report."""

    def __init__(
        self, world_size: int, timeout: float, grace_after_rank0: float | None, grace_after_failure: float
    ) -> None:
        self.results: list = [None] * world_size
        self.errors: dict = {}
        self.reported: set = set()
        self.grace_after_rank0, self.grace_after_failure = grace_after_rank0, grace_after_failure
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout
        self.reason = f"the {timeout:g} s launch timeout"

    def shorten(self, seconds: float, why: str) -> None:
        """Bring the deadline forward to ``seconds`` from now (never later), saying why."""
        if time.monotonic() + seconds < self.deadline:
            self.deadline = time.monotonic() + seconds
            self.reason = f"{seconds:g} s after {why}"

    def take(self, item) -> None:
        """Record one rank's ``(rank, status, payload)`` report."""
        rank, status, payload = item
        self.reported.add(rank)
        if status == "ok":
            self.results[rank] = payload
        else:
            self.errors[rank] = payload
            self.shorten(self.grace_after_failure, f"rank {rank} failed")
        if rank == 0 and self.grace_after_rank0 is not None:
            self.shorten(self.grace_after_rank0, "rank 0 reported")


def _start_ranks(ctx, procs: list, reports: _Reports, world_size: int, child_args: Callable[[int], tuple]) -> list:
    """Start the ranks in order (appended to ``procs``); returns the ranks left unstarted at the deadline."""
    for r in range(world_size):
        if time.monotonic() >= reports.deadline:  # the deadline covers the start-up: stop starting
            return list(range(r, world_size))
        p = ctx.Process(target=_child, args=child_args(r), daemon=True)
        p.start()
        procs.append(p)
    return []


def _wait_for_reports(q, procs: list, reports: _Reports, world_size: int, may_die: set) -> None:
    """Take the ranks' reports until every rank reported, none is left who could, or the deadline."""
    dead_since: dict[int, float] = {}
    while len(reports.reported) < world_size:
        left = reports.deadline - time.monotonic()
        if left <= 0:
            break
        try:
            reports.take(q.get(timeout=min(left, 0.2)))
            continue
        except queue_mod.Empty:
            pass
        now = time.monotonic()
        pending = [r for r in range(world_size) if r not in reports.reported]
        gone = [r for r in pending if not procs[r].is_alive()]
        for r in gone:
            dead_since.setdefault(r, now)
        if len(gone) == len(pending):
            # nobody left who could report: collect what is still in the pipe, then stop
            try:
                reports.take(q.get(timeout=0.5))
                continue
            except queue_mod.Empty:
                break
        # a report is in the pipe before its rank exits: exited a while ago and still
        # unreported means it died; unless that was planned, the job has failed
        died = [r for r in gone if r not in may_die and now - dead_since[r] > 0.5]
        if died:
            reports.shorten(reports.grace_after_failure, f"rank {died[0]} died")


def _stop_ranks(procs: list, reported: set, finished: bool) -> tuple[list, list]:
    """End every rank: ``(killed, stalled)``, the ranks killed and those of them that never reported."""
    killed: list = []
    stalled: list = []
    # ranks that reported are exiting: give them a moment (one shared wait, not one per rank);
    # the others are dead or stuck
    settle = time.monotonic() + (2.0 if finished else 0.0)
    for r, p in enumerate(procs):
        if r in reported:
            p.join(timeout=max(0.0, settle - time.monotonic()))
    for r, p in enumerate(procs):  # kill every survivor first, then reap them together
        if p.is_alive():
            p.kill()
            killed.append(r)
            if r not in reported:
                stalled.append(r)
    reap = time.monotonic() + REAP_TIMEOUT
    for r in killed:
        procs[r].join(timeout=max(0.0, reap - time.monotonic()))
    return killed, stalled
