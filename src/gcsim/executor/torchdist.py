"""Gradient coding and CERAR on a real engine: torch.distributed, one process per rank (SPEC §6).

Pieces
------
:func:`launch`
    Starts ``world_size`` processes (multiprocessing, ``forkserver`` with torch preloaded,
    or ``spawn``), initializes a process group in each (gloo on CPU; NCCL when asked),
    runs a module-level function ``fn(rank, world_size, *args)`` and collects what each
    rank returns.  It never hangs and leaves nothing behind: the process-group timeout
    bounds the rendezvous, every collective and every point-to-point wait; a rank that
    raises or dies ends the launch after a short grace; a rank still running at its
    deadline is killed and reported as *stalled* (:class:`LaunchTimeoutError` names it);
    a given port that is already in use is refused before any process starts; and each
    rank exits by itself if the launching process is killed.
:func:`cerar_all_reduce`, :func:`ring_all_reduce`, :func:`library_all_reduce`
    Collectives to call inside an initialized group.  CERAR runs the ring protocol of
    SPEC §5 over ``isend``/``irecv`` (``L = c + N − 2`` rounds of ``ceil(d/c)`` scalars);
    the own ring all-reduce is reduce-scatter + all-gather (``2(N−1)`` steps of
    ``ceil(d/N)`` scalars); the library baseline is ``dist.all_reduce``.  A
    :class:`ByteCounter` counts the bytes each rank actually hands to ``isend``:
    CERAR ``L·ceil(d/c)·itemsize``, ring ``2(N−1)·ceil(d/N)·itemsize``.
:func:`run_collectives`
    Launch + run the chosen collectives on seeded gradients and compare each with the
    exact sum and with ``dist.all_reduce`` (relative error), with byte counts and timings
    (algbw = S/t, busbw = algbw·2(N−1)/N, as nccl-tests report them).
:func:`run_parameter_server`
    Gradient coding with a parameter server: rank 0 = PS, ranks 1..n = workers.  Worker
    ``j`` computes the partial gradients of its parts of a seeded least-squares problem,
    encodes ``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]`` and sends it a seeded delay after a common
    barrier (or its process dies).  The PS decides on that simulated clock
    (:func:`simulated_schedule`: the first ``n − s`` arrivals, or those by a deadline), so
    the same seed gives the same used set and the same numbers; it receives and decodes the
    real transmissions (optimal or fixed decoder) and reports who was missing, the measured
    error ``‖ĝ − ∇L‖²`` and the predicted ``‖𝒢(B_F X − T)‖²``.

Ranks exit with ``os._exit`` after reporting, so that no library destructor can block on
an operation a dead peer will never complete.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import re
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from .._validation import check_int, check_real
from ..errors import GcsimError, InvalidArgumentError

__all__ = [
    "launch",
    "LaunchResult",
    "RankFailure",
    "LaunchTimeoutError",
    "RingFailureError",
    "ByteCounter",
    "cerar_all_reduce",
    "ring_all_reduce",
    "library_all_reduce",
    "cerar_bytes",
    "ring_bytes",
    "predicted_byte_ratio",
    "run_collectives",
    "collectives_job",
    "run_parameter_server",
    "parameter_server_job",
    "seeded_delays",
    "simulated_schedule",
    "free_port",
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


class RingFailureError(GcsimError, RuntimeError):
    """A ring neighbour failed (died or timed out) during a ring collective."""


# ----------------------------------------------------------------------------------------------
# formulas
# ----------------------------------------------------------------------------------------------

def cerar_bytes(N: int, c: int, d: int, itemsize: int) -> int:
    """Bytes one rank sends in CERAR: ``L · ceil(d/c) · itemsize`` with ``L = c + N − 2``.

    Examples
    --------
    >>> cerar_bytes(4, 8, 1000, 4)
    5000
    """
    return (int(c) + int(N) - 2) * (-(-int(d) // int(c))) * int(itemsize)


def ring_bytes(N: int, d: int, itemsize: int) -> int:
    """Bytes one rank sends in ring all-reduce: ``2(N−1) · ceil(d/N) · itemsize``.

    Examples
    --------
    >>> ring_bytes(4, 1000, 4)
    6000
    """
    return 2 * (int(N) - 1) * (-(-int(d) // int(N))) * int(itemsize)


def predicted_byte_ratio(N: int, c: int) -> float:
    """Ring / CERAR traffic ratio ``2(N−1)c / (N(c+N−2))`` (> 1 means CERAR sends less).

    Examples
    --------
    >>> predicted_byte_ratio(4, 4), predicted_byte_ratio(4, 8)
    (1.0, 1.2)
    """
    N, c = int(N), int(c)
    return 2 * (N - 1) * c / (N * (c + N - 2))


# ----------------------------------------------------------------------------------------------
# launcher
# ----------------------------------------------------------------------------------------------

def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (bound by the OS, then released).

    Someone else may take it before it is used: :func:`launch` therefore rendezvouses
    through a private file store by default, and probes a given ``tcp://`` port.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ranks(ranks: Sequence[int]) -> str:
    ranks = list(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(str(r) for r in ranks)


_GLOO_SOURCE = re.compile(r"\[/[^\]\s]*:\d+\] ?")


def _exception_line(tb: str, limit: int = 300) -> str:
    """``ExcType: first message line`` of a formatted traceback (module prefix dropped)."""
    lines = tb.rstrip().splitlines()
    start = 0
    for i, line in enumerate(lines):                 # the exception follows the last frame
        if line.startswith("  File "):
            start = i + 1
    while start < len(lines) and lines[start].startswith((" ", "\t")):
        start += 1                                   # the frame's source line(s)
    text = next((ln for ln in lines[start:] if ln.strip()), lines[-1] if lines else "unknown error")
    head, sep, rest = text.partition(":")
    if sep and " " not in head:                      # "pkg.mod.ExcType: message"
        text = head.rsplit(".", 1)[-1] + sep + rest
    text = _GLOO_SOURCE.sub("", text)                # "[/__w/.../pair.cc:534] " locations of C++ errors
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
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
        True when some rank stalled (see :attr:`stalled`).
    seconds : float
        Wall time of the launch.
    stalled : list
        Ranks still running without a report at the deadline (killed).
    died : list
        Ranks that exited without reporting (a crash, ``os._exit``, a signal).
    deadline_reason : str
        Which deadline ended the wait, e.g. ``"the 60 s launch timeout"``,
        ``"3 s after rank 1 failed"`` or ``"1 s after rank 0 reported"``.
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

    @property
    def ok(self) -> bool:
        """Every rank reported a result (none raised, died or stalled)."""
        return not self.errors and not self.stalled and not self.died

    def failure_message(self) -> str:
        """One summary line (``launch of N ranks failed: ...``) and one line per failed rank."""
        short, detail = [], []
        if self.stalled:
            short.append(f"{_ranks(self.stalled)} stalled: timed out, did not report within "
                         f"{self.deadline_reason}; killed")
        for r in self.errors:                        # in the order they were reported: the cause first
            line = _exception_line(self.errors[r])
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
            cls = LaunchTimeoutError if self.stalled else RankFailure
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
        return True                                  # no /proc: trust kill(0)


def _watch_launcher(launcher_pid: int, period: float = 0.5) -> None:
    """Exit this rank at once when the launching process is gone, so that no rank outlives it.

    The launcher kills its ranks on every path it controls; this covers the one it does not
    (the launcher itself killed by a signal).  A rank notices either its parent changing (it
    was re-parented: its parent -- the launcher, or the forkserver that dies with the
    launcher -- is gone) or the launcher's pid no longer running.
    """
    import threading

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(period)
            if os.getppid() != parent or not _pid_alive(launcher_pid):
                os._exit(70)                         # EX_SOFTWARE: orphaned

    threading.Thread(target=watch, name="gcsim-launcher-watch", daemon=True).start()


def _child(rank: int, world_size: int, fn: Callable, args: tuple, init_method: str, backend: str,
           op_timeout: float, q, env: dict | None, netns: str | None, threads: int, launcher_pid: int) -> None:
    code = 0
    try:
        if netns:
            _enter_netns(netns)                      # before any thread starts
        _watch_launcher(launcher_pid)
        for k, v in (env or {}).items():
            os.environ[k] = str(v)
        import torch
        import torch.distributed as dist

        torch.set_num_threads(threads)
        if backend == "nccl":
            torch.cuda.set_device(rank % max(torch.cuda.device_count(), 1))  # one rank per GPU
        # the process-group timeout bounds the rendezvous and every collective / wait() after it
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=op_timeout))
        out = fn(rank, world_size, *args)
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
        finally:
            # no destroy_process_group: it may block on an operation of a dead peer
            os._exit(code)


_CONTEXTS: dict[str, Any] = {}


def _context(start_method: str):
    if start_method not in _CONTEXTS:
        ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            # import torch once in the server; every rank is then a cheap fork of it
            ctx.set_forkserver_preload(["torch", "torch.distributed", "numpy", "gcsim.executor.torchdist"])
        _CONTEXTS[start_method] = ctx
    return _CONTEXTS[start_method]


def _check_init_method(init_method: Any, probe: bool) -> None:
    """Refuse a malformed ``init_method``; with ``probe``, refuse a local TCP port that is taken.

    Rank 0 listens on the port of a ``tcp://host:port`` init method.  If another process
    already listens there, rank 0 fails at once but the other ranks would wait for a
    rendezvous that never comes until the process-group timeout; probing the port here
    turns that into an immediate, clear error.
    """
    import errno
    from urllib.parse import urlsplit

    if not isinstance(init_method, str):
        raise InvalidArgumentError("init_method", f"must be a string like 'tcp://127.0.0.1:29500', "
                                   f"got {init_method!r}")
    if init_method.startswith(("env://", "file://")):
        return
    if not init_method.startswith("tcp://"):
        raise InvalidArgumentError("init_method", f"must start with tcp://, env:// or file://, got {init_method!r}")
    try:
        parts = urlsplit(init_method)
        host, port = parts.hostname, parts.port
    except ValueError as exc:                        # e.g. a port outside 0..65535
        raise InvalidArgumentError("init_method", f"{init_method!r}: {exc}") from None
    if not host or port is None or not 1 <= port <= 65535:
        raise InvalidArgumentError("init_method", f"needs a host and a port in 1..65535, got {init_method!r}")
    if not probe:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return                                       # unresolvable here (e.g. a name inside a namespace)
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # like the store's listening socket: a port in TIME_WAIT is usable, a listening one is not
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InvalidArgumentError(
                    "init_method", f"port {port} on {host} is already in use (another process listens there): "
                    "pick a free port, or omit init_method and gcsim picks one") from None
            # EADDRNOTAVAIL etc.: not an address of this machine; rank 0 will tell


def launch(fn: Callable, world_size: int, args: Sequence = (), *, timeout: float = 60.0,
           op_timeout: float | None = None, backend: str = "gloo", init_method: str | None = None,
           env: dict | None = None, rank_env: Sequence[dict] | None = None,
           netns: Sequence[str] | None = None, start_method: str = "forkserver", threads: int = 1,
           grace_after_rank0: float | None = None, grace_after_failure: float = 3.0,
           may_die: Sequence[int] = ()) -> LaunchResult:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` processes with a process group.

    Never hangs, and never leaves a process behind:

    * the process-group timeout ``op_timeout`` bounds the rendezvous and every collective
      and ``wait()`` inside the ranks (a stalled peer makes the others raise);
    * the launcher waits at most ``timeout`` seconds in all; once a rank has raised or died
      unexpectedly the job has failed, and the others get ``grace_after_failure`` seconds
      to report (their error messages name the failed peer) before they are killed;
    * every rank still running at its deadline is killed and reported as **stalled**;
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
        private temporary folder (removed afterwards) -- no port to collide on.  A given
        local TCP port that is already in use is refused at once.
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

    Returns
    -------
    LaunchResult
        Call :meth:`LaunchResult.raise_on_failure` for an exception naming failed ranks.

    Raises
    ------
    InvalidArgumentError
        Bad arguments, an unpicklable ``fn``/``args``, or a given local port already in use.
    """
    world_size = check_int("world_size", world_size, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    op_timeout = timeout if op_timeout is None else check_real("op_timeout", op_timeout, minimum=0.0,
                                                                strict_min=True)
    grace_after_failure = check_real("grace_after_failure", grace_after_failure, minimum=0.0)
    if grace_after_rank0 is not None:
        grace_after_rank0 = check_real("grace_after_rank0", grace_after_rank0, minimum=0.0)
    threads = check_int("threads", threads, minimum=1)
    may_die = {check_int("may_die", r, minimum=0, maximum=world_size - 1) for r in may_die}
    if backend not in ("gloo", "nccl"):
        raise InvalidArgumentError("backend", f"must be 'gloo' or 'nccl', got {backend!r}")
    if start_method not in ("forkserver", "spawn"):
        raise InvalidArgumentError("start_method", f"must be 'forkserver' or 'spawn', got {start_method!r}")
    if rank_env is not None and len(rank_env) != world_size:
        raise InvalidArgumentError("rank_env", f"needs one dict per rank ({world_size}), got {len(rank_env)}")
    if netns is not None and len(netns) != world_size:
        raise InvalidArgumentError("netns", f"needs one namespace per rank ({world_size}), got {len(netns)}")
    import pickle

    # pickled anyway when each rank starts; failing here means no process was started yet
    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise InvalidArgumentError("fn", f"must be a module-level function (picklable): {exc}") from None
    try:
        pickle.dumps(tuple(args))
    except Exception as exc:
        raise InvalidArgumentError("args", f"must be picklable: {exc}") from None
    if init_method is not None:
        _check_init_method(init_method, probe=netns is None)
        return _launch_once(fn, world_size, tuple(args), timeout=timeout, op_timeout=op_timeout, backend=backend,
                            init_method=init_method, env=env, rank_env=rank_env, netns=netns,
                            start_method=start_method, threads=threads, grace_after_rank0=grace_after_rank0,
                            grace_after_failure=grace_after_failure, may_die=may_die)
    # default rendezvous: a file store in a fresh private folder.  No TCP port is involved,
    # so nothing can be taken between choosing a port and listening on it, and no other job
    # on this machine can walk into this job's rendezvous (or this job into theirs).
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="gcsim-rdzv-")
    try:
        return _launch_once(fn, world_size, tuple(args), timeout=timeout, op_timeout=op_timeout, backend=backend,
                            init_method="file://" + os.path.join(folder, "store"), env=env, rank_env=rank_env,
                            netns=netns, start_method=start_method, threads=threads,
                            grace_after_rank0=grace_after_rank0, grace_after_failure=grace_after_failure,
                            may_die=may_die)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _launch_once(fn: Callable, world_size: int, args: tuple, *, timeout: float, op_timeout: float, backend: str,
                 init_method: str, env: dict | None, rank_env: Sequence[dict] | None, netns: Sequence[str] | None,
                 start_method: str, threads: int, grace_after_rank0: float | None, grace_after_failure: float,
                 may_die: set) -> LaunchResult:
    ctx = _context(start_method)
    q = ctx.Queue()
    procs: list = []
    results: list = [None] * world_size
    errors: dict = {}
    reported: set = set()
    t0 = time.monotonic()
    deadline = t0 + timeout
    reason = f"the {timeout:g} s launch timeout"
    dead_since: dict[int, float] = {}

    def shorten(seconds: float, why: str) -> None:
        nonlocal deadline, reason
        if time.monotonic() + seconds < deadline:
            deadline = time.monotonic() + seconds
            reason = f"{seconds:g} s after {why}"

    def take(item) -> None:
        rank, status, payload = item
        reported.add(rank)
        if status == "ok":
            results[rank] = payload
        else:
            errors[rank] = payload
            shorten(grace_after_failure, f"rank {rank} failed")
        if rank == 0 and grace_after_rank0 is not None:
            shorten(grace_after_rank0, "rank 0 reported")

    finished = False
    try:
        for r in range(world_size):
            e = dict(env or {})
            e.update((rank_env or [{}] * world_size)[r])
            p = ctx.Process(target=_child, args=(r, world_size, fn, args, init_method, backend, op_timeout, q, e,
                                                 None if netns is None else netns[r], threads, os.getpid()),
                            daemon=True)
            p.start()
            procs.append(p)
        while len(reported) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                take(q.get(timeout=min(left, 0.2)))
                continue
            except queue_mod.Empty:
                pass
            now = time.monotonic()
            pending = [r for r in range(world_size) if r not in reported]
            gone = [r for r in pending if not procs[r].is_alive()]
            for r in gone:
                dead_since.setdefault(r, now)
            if len(gone) == len(pending):
                # nobody left who could report: collect what is still in the pipe, then stop
                try:
                    take(q.get(timeout=0.5))
                    continue
                except queue_mod.Empty:
                    break
            # a report is in the pipe before its rank exits: exited a while ago and still
            # unreported means it died; unless that was planned, the job has failed
            died = [r for r in gone if r not in may_die and now - dead_since[r] > 0.5]
            if died:
                shorten(grace_after_failure, f"rank {died[0]} died")
        while True:                                  # reports that raced with the deadline
            try:
                take(q.get_nowait())
            except (queue_mod.Empty, OSError, EOFError):
                break
        finished = True
    finally:
        killed: list = []
        stalled: list = []
        settle = time.monotonic() + (2.0 if finished else 0.0)
        for r, p in enumerate(procs):
            # ranks that reported are exiting: give them a moment; the others are dead or stuck
            if r in reported:
                p.join(timeout=max(0.0, settle - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(timeout=5.0)
                killed.append(r)
                if r not in reported:
                    stalled.append(r)
        q.close()
    exitcodes = [p.exitcode for p in procs]
    died_ranks = [r for r in range(world_size) if r not in reported and r not in stalled]
    return LaunchResult(results=results, errors=errors, exitcodes=exitcodes, killed=killed,
                        timed_out=bool(stalled), seconds=time.monotonic() - t0, stalled=stalled,
                        died=died_ranks, deadline_reason=reason if stalled else "")


# ----------------------------------------------------------------------------------------------
# collectives (call inside an initialized process group)
# ----------------------------------------------------------------------------------------------

@dataclass
class ByteCounter:
    """Bytes and packets this rank handed to ``isend`` (payload only, no headers)."""

    sent: int = 0
    received: int = 0
    packets: int = 0

    def add(self, sent_tensor, received_tensor=None) -> None:
        self.sent += sent_tensor.numel() * sent_tensor.element_size()
        self.packets += 1
        if received_tensor is not None:
            self.received += received_tensor.numel() * received_tensor.element_size()


def _group_info(group):
    import torch.distributed as dist

    N = dist.get_world_size(group)
    me = dist.get_rank(group)
    glob = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
    return N, me, glob


def _exchange(send, recv, dst: int, src: int, what: str, step: int, counter: ByteCounter | None) -> None:
    """isend ``send`` to ``dst`` and irecv into ``recv`` from ``src``; clear error on failure."""
    import torch.distributed as dist

    try:
        ws = dist.isend(send, dst)
        wr = dist.irecv(recv, src)
        wr.wait()
        ws.wait()
    except RuntimeError as exc:
        why = _GLOO_SOURCE.sub("", str(exc).splitlines()[0])
        raise RingFailureError(f"{what}: step {step}: exchange with ring neighbours (send to rank {dst}, "
                               f"receive from rank {src}) failed: {why}") from None
    if counter is not None:
        counter.add(send, recv)


def cerar_all_reduce(tensor, design: Any, *, group=None, counter: ByteCounter | None = None,
                     compute_dtype=None):
    """Approximate sum of ``tensor`` over the ranks by the CERAR ring protocol (SPEC §5).

    Rank ``i`` (ring position = group rank) splits its flattened tensor into ``c``
    components (zero-padded to ``c·w``, ``w = ceil(d/c)``), encodes with ``A_i`` and runs
    ``L = c + N − 2`` rounds: send ``x_i^(t) + u_i^(t−1)`` to ``i+1``, receive from ``i−1``,
    strip ``x_i^(t−N+1)``; the output is ``G_i + D_i U_i``.

    Parameters
    ----------
    tensor : torch.Tensor
        Local gradient (any shape; floating dtype).  Not modified.
    design : CerarDesign or path of an exported design
        ``design.N`` must equal the group size.
    group : ProcessGroup, optional
    counter : ByteCounter, optional
        Adds ``L`` packets of ``w`` elements (``L·w·itemsize`` bytes).
    compute_dtype : torch.dtype, optional
        Encoding/decoding precision (default: the tensor's dtype; packets always travel in
        the tensor's dtype).

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``tensor``.

    Raises
    ------
    RingFailureError
        A neighbour died or timed out (message names both neighbours and the round).
    """
    import torch

    design = _as_design(design)
    N, me, glob = _group_info(group)
    if design.N != N:
        raise InvalidArgumentError("design", f"is for N = {design.N} workers, the group has {N} ranks")
    c, L = design.c, design.L
    flat = tensor.reshape(-1)
    d = flat.numel()
    w = -(-d // c)
    cd = flat.dtype if compute_dtype is None else compute_dtype
    dev = flat.device                                 # CPU for gloo, the rank's GPU for NCCL
    G = torch.zeros(c * w, dtype=cd, device=dev)
    G[:d] = flat.to(cd)
    G = G.reshape(c, w)
    A = torch.as_tensor(design.encoders[me], dtype=cd, device=dev)
    D = torch.as_tensor(design.decoders[me], dtype=cd, device=dev)
    X = (A @ G).to(flat.dtype)                       # c coded symbols, in the wire dtype
    nxt, prv = glob((me + 1) % N), glob((me - 1) % N)
    u = torch.zeros(w, dtype=flat.dtype, device=dev)
    U = torch.empty(L, w, dtype=flat.dtype, device=dev)
    for t in range(1, L + 1):
        s = X[t - 1] + u if t <= c else u
        r = torch.empty(w, dtype=flat.dtype, device=dev)
        _exchange(s, r, nxt, prv, "cerar_all_reduce", t, counter)
        k = t - N                                    # own symbol x^(t-N+1) returns
        u = r - X[k] if 0 <= k < c - 1 else r
        U[t - 1] = u
    out = G + D @ U.to(cd)
    return out.reshape(-1)[:d].to(flat.dtype).reshape(tensor.shape)


def ring_all_reduce(tensor, *, group=None, counter: ByteCounter | None = None):
    """Exact sum by the classic ring all-reduce: reduce-scatter then all-gather.

    The flattened tensor is zero-padded into ``N`` chunks of ``w = ceil(d/N)``; each of the
    ``2(N−1)`` steps sends one chunk to the next rank (``2(N−1)·w·itemsize`` bytes).

    Returns a new tensor of the same shape and dtype.
    """
    import torch

    N, me, glob = _group_info(group)
    flat = tensor.reshape(-1)
    d = flat.numel()
    w = -(-d // N)
    buf = torch.zeros(N * w, dtype=flat.dtype, device=flat.device)
    buf[:d] = flat
    chunks = buf.reshape(N, w)
    nxt, prv = glob((me + 1) % N), glob((me - 1) % N)
    tmp = torch.empty(w, dtype=flat.dtype, device=flat.device)
    for k in range(N - 1):                           # reduce-scatter
        send_i, recv_i = (me - k) % N, (me - k - 1) % N
        _exchange(chunks[send_i].clone(), tmp, nxt, prv, "ring_all_reduce (reduce-scatter)", k + 1, counter)
        chunks[recv_i] += tmp
    for k in range(N - 1):                           # all-gather: rank me owns chunk me+1
        send_i, recv_i = (me + 1 - k) % N, (me - k) % N
        _exchange(chunks[send_i].clone(), tmp, nxt, prv, "ring_all_reduce (all-gather)", N + k, counter)
        chunks[recv_i] = tmp
    return buf[:d].reshape(tensor.shape).clone()


def library_all_reduce(tensor, *, group=None):
    """``dist.all_reduce`` (SUM) on a copy: the library baseline."""
    import torch.distributed as dist

    out = tensor.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    return out


def _as_design(design: Any):
    from ..cerar.design import CerarDesign

    if isinstance(design, CerarDesign):
        return design
    if isinstance(design, (str, os.PathLike)):
        from ..cerar.export import load_design
        return load_design(design)
    if isinstance(design, dict) and {"encoders", "decoders"} <= set(design):
        return CerarDesign(int(design["N"]), int(design["c"]), design["encoders"], design["decoders"],
                           method=str(design.get("method", "custom")))
    raise InvalidArgumentError("design", f"must be a CerarDesign, an exported design path or a dict, "
                               f"got {type(design).__name__}")


# ----------------------------------------------------------------------------------------------
# collectives benchmark / check job
# ----------------------------------------------------------------------------------------------

def _gradients(seed: int, N: int, d: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, d)).astype(dtype)


def collectives_job(rank: int, world_size: int, spec: dict) -> dict:
    """Rank body of :func:`run_collectives` (module level so that it can be launched)."""
    import torch
    import torch.distributed as dist

    N, d = world_size, int(spec["d"])
    g_all = _gradients(spec["seed"], N, d, spec["dtype"])
    dev = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    total = torch.as_tensor(g_all.astype(np.float64).sum(axis=0), device=dev)
    mine = torch.as_tensor(g_all[rank], device=dev)
    if spec.get("die_rank") == rank:
        os._exit(19)  # fault injection: this ring member crashes before the collectives
    barrier = dist.barrier if spec.get("barrier", True) else (lambda: None)
    ref = library_all_reduce(mine).to(torch.float64) if spec.get("compare_allreduce", True) else total
    out: dict = {"rank": rank, "algorithms": {}}
    designs = {key: _as_design(v) for key, v in spec.get("designs", {}).items()}
    for algo in spec["algorithms"]:
        times = []
        counter = ByteCounter()
        result = None
        for rep in range(int(spec.get("repeats", 1)) + int(spec.get("warmup", 0))):
            cnt = ByteCounter()
            barrier()
            t0 = time.perf_counter()
            if algo == "allreduce":
                result = library_all_reduce(mine)
            elif algo == "ring":
                result = ring_all_reduce(mine, counter=cnt)
            else:
                result = cerar_all_reduce(mine, designs[algo], counter=cnt)
            barrier()  # time until every rank holds its result
            dt = time.perf_counter() - t0
            if rep >= int(spec.get("warmup", 0)):
                times.append(dt)
                counter = cnt
        r64 = result.to(torch.float64)
        out["algorithms"][algo] = {
            "bytes_sent": None if algo == "allreduce" else counter.sent,
            "packets": None if algo == "allreduce" else counter.packets,
            "seconds": times,
            "rel_error_vs_sum": float(torch.linalg.norm(r64 - total) / torch.linalg.norm(total)),
            "rel_error_vs_allreduce": float(torch.linalg.norm(r64 - ref) / torch.linalg.norm(ref)),
            "sq_error_vs_sum": float(torch.sum((r64 - total) ** 2)),
        }
        if spec.get("return_outputs"):
            out["algorithms"][algo]["output"] = result.cpu().numpy().copy()
    return out


def run_collectives(N: int, d: int, *, designs: dict | None = None, algorithms: Sequence[str] | None = None,
                    dtype: str = "float32", seed: int = 0, repeats: int = 1, warmup: int = 0,
                    timeout: float = 120.0, return_outputs: bool = False, die_rank: int | None = None,
                    **launch_kw: Any) -> dict:
    """Launch ``N`` gloo ranks and run all-reduce collectives on seeded gradients.

    Parameters
    ----------
    N, d : int
        Ranks and gradient length.
    designs : dict name -> CerarDesign or exported path
        CERAR designs to run (each with ``design.N == N``); their names are algorithm names.
    algorithms : list of str
        Subset of ``"allreduce"``, ``"ring"`` and the design names (default: all).
    dtype : {"float32", "float64"}
    repeats, warmup : int
        Timed repetitions and untimed warm-up runs of each algorithm.
    return_outputs : bool
        Include every rank's output array.
    die_rank : int, optional
        Fault injection: this rank's process exits before the collectives; the others
        fail with :class:`RingFailureError` and the launch raises :class:`RankFailure`.
    **launch_kw
        Passed to :func:`launch` (``netns``, ``rank_env``, ``init_method``, ...).

    Returns
    -------
    dict
        ``{"N", "d", "itemsize", "ranks": [per-rank dict], "summary": {algo: {...}}}`` where
        the summary has ``bytes_sent`` (list per rank), ``expected_bytes`` (formula),
        ``seconds`` (median over repeats of the slowest rank), ``algbw``/``busbw`` (bytes/s),
        ``max_rel_error`` vs the exact sum and ``max_rel_error_vs_allreduce``.
    """
    N = check_int("N", N, minimum=2)
    d = check_int("d", d, minimum=1)
    if dtype not in ("float32", "float64"):
        raise InvalidArgumentError("dtype", f"must be 'float32' or 'float64', got {dtype!r}")
    designs = dict(designs or {})
    for name, des in list(designs.items()):
        des = _as_design(des)
        if des.N != N:
            raise InvalidArgumentError("designs", f"{name!r} is for N = {des.N}, not {N}")
        designs[name] = {"N": des.N, "c": des.c, "encoders": des.encoders, "decoders": des.decoders,
                         "method": des.method}
    algos = list(algorithms) if algorithms is not None else ["allreduce", "ring", *designs]
    for a in algos:
        if a not in ("allreduce", "ring") and a not in designs:
            raise InvalidArgumentError("algorithms", f"unknown algorithm {a!r} (designs: {sorted(designs)})")
    spec = {"d": d, "seed": check_int("seed", seed, minimum=0), "dtype": dtype, "algorithms": algos,
            "designs": designs, "repeats": check_int("repeats", repeats, minimum=1),
            "warmup": check_int("warmup", warmup, minimum=0), "return_outputs": bool(return_outputs)}
    if die_rank is not None:
        spec.update(die_rank=check_int("die_rank", die_rank, minimum=0, maximum=N - 1), barrier=False,
                    compare_allreduce=False)
    res = launch(collectives_job, N, (spec,), timeout=timeout, **launch_kw).raise_on_failure()
    item = np.dtype(dtype).itemsize
    S = d * item
    summary = {}
    for a in algos:
        per = [r["algorithms"][a] for r in res.results]
        secs = np.max(np.array([p["seconds"] for p in per]), axis=0)   # slowest rank per repeat
        t = float(np.median(secs))
        exp = (ring_bytes(N, d, item) if a == "ring" else None if a == "allreduce"
               else cerar_bytes(N, designs[a]["c"], d, item))
        summary[a] = {
            "bytes_sent": [p["bytes_sent"] for p in per],
            "expected_bytes": exp,
            "seconds": t,
            "seconds_all": secs.tolist(),
            "algbw": S / t,
            "busbw": S / t * 2 * (N - 1) / N,
            "max_rel_error": max(p["rel_error_vs_sum"] for p in per),
            "max_rel_error_vs_allreduce": max(p["rel_error_vs_allreduce"] for p in per),
            "sq_errors": [p["sq_error_vs_sum"] for p in per],
        }
        if a in designs:
            summary[a]["c"] = designs[a]["c"]
            summary[a]["predicted_byte_ratio"] = predicted_byte_ratio(N, designs[a]["c"])
    return {"N": N, "d": d, "itemsize": item, "dtype": dtype, "ranks": res.results, "summary": summary,
            "launch_seconds": res.seconds}


# ----------------------------------------------------------------------------------------------
# parameter-server gradient coding
# ----------------------------------------------------------------------------------------------

def _ls_problem(seed: int, N: int, p: int, rows: int):
    """Seeded least-squares data: part i has (X_i, y_i); loss Σ_i ½‖X_i θ − y_i‖², θ seeded."""
    rng = np.random.default_rng(seed)
    Xs = rng.standard_normal((N, rows, p))
    ys = rng.standard_normal((N, rows))
    theta = rng.standard_normal(p)
    return Xs, ys, theta


def _partial_gradients(Xs, ys, theta, parts) -> np.ndarray:
    """g_i = X_iᵀ (X_i θ − y_i) for the given parts (shape (len(parts), p))."""
    Xp = Xs[parts]
    resid = np.einsum("irp,p->ir", Xp, theta) - ys[parts]
    return np.einsum("irp,ir->ip", Xp, resid)


def simulated_schedule(delays: Any, die: Sequence[int] = (), *, need: int | None = None,
                       deadline: float | None = None) -> dict:
    """The parameter server's decision on the simulated clock: who is used, late and silent.

    Worker ``j`` starts when every rank has passed a common barrier and its transmission
    *arrives at simulated time* ``delays[j]`` (seconds after the barrier); a worker in
    ``die`` never arrives.  The PS decodes from

    * the first ``need = n − s`` arrivals (ties broken by the smaller worker index), or
    * with ``deadline``: every arrival at a simulated time ``<= deadline``.

    The decision is a function of ``(delays, die, need, deadline)`` alone -- not of which
    process happened to be scheduled first on a busy machine -- so the same seed gives the
    same used set (and the same decoded numbers).

    Parameters
    ----------
    delays : array (n,)
        Finite non-negative simulated arrival times.
    die : sequence of int
        Workers that never arrive.
    need : int, optional
        ``n − s``; required unless ``deadline`` is given.
    deadline : float, optional

    Returns
    -------
    dict
        ``order`` (live workers by simulated arrival), ``used`` (sorted), ``late`` (live,
        arriving after the decision), ``silent`` (the dead), ``decision_time`` (simulated:
        the ``need``-th arrival, or the deadline) and ``last_used_arrival``.

    Raises
    ------
    InvalidArgumentError
        ``need`` exceeds the number of live workers (the PS would wait for ever).

    Examples
    --------
    >>> simulated_schedule([0.3, 0.1, 0.2], die=[2], need=1)["used"]
    [1]
    >>> simulated_schedule([0.3, 0.1, 0.2], deadline=0.25)["used"]
    [1, 2]
    """
    delays = [float(x) for x in delays]
    n = len(delays)
    dead = sorted({check_int("die", j, minimum=0, maximum=n - 1) for j in die})
    order = sorted((j for j in range(n) if j not in set(dead)), key=lambda j: (delays[j], j))
    if deadline is None:
        if need is None:
            raise InvalidArgumentError("need", "give need (= n - s) or a deadline")
        need = check_int("need", need, minimum=0, maximum=n)
        if need > len(order):
            raise InvalidArgumentError(
                "die", f"{len(dead)} workers die but only s = {n - need} stragglers are tolerated: the PS "
                f"would wait for ever for n - s = {need} transmissions from {len(order)} live workers "
                "(give a deadline to decode from whatever arrives)")
        used = order[:need]
        decision = delays[used[-1]] if used else 0.0
    else:
        deadline = check_real("deadline", deadline, minimum=0.0)
        used = [j for j in order if delays[j] <= deadline]
        decision = deadline
    return {"order": order, "used": sorted(used), "late": sorted(set(order) - set(used)), "silent": dead,
            "decision_time": float(decision),
            "last_used_arrival": max((delays[j] for j in used), default=0.0)}


def parameter_server_job(rank: int, world_size: int, spec: dict) -> dict:
    """Rank body of :func:`run_parameter_server`: rank 0 = PS, rank j+1 = worker j.

    Every rank passes a monitored barrier first (a rank that does not arrive is named);
    the clock starts there.  Worker ``j`` then sleeps until its simulated arrival time
    ``delays[j]`` and sends ``g̃_j`` (or exits at once if it is to die, or hangs if it is
    to stall).  The PS waits for the transmissions of the workers its simulated schedule
    uses -- at most ``wait_limit`` seconds past the latest scheduled arrival -- decodes,
    then drains late workers for ``drain`` seconds so that they exit cleanly.
    """
    import torch
    import torch.distributed as dist

    B = np.asarray(spec["B"])
    A = np.asarray(spec["assignment"])
    m, N, n, d = int(spec["m"]), A.shape[0], A.shape[1], int(spec["d"])
    w = -(-d // m)
    Xs, ys, theta = _ls_problem(spec["seed"], N, d, int(spec["rows"]))
    barrier = timedelta(seconds=float(spec["barrier_timeout"]))
    if rank > 0:
        j = rank - 1
        # compute before the barrier: the delay alone decides when g̃_j is sent
        held = np.flatnonzero(A[:, j])
        g = np.zeros((held.size, m * w))
        g[:, :d] = _partial_gradients(Xs, ys, theta, held)
        blocks = g.reshape(held.size, m, w)
        coef = B.reshape(m, N, n)[:, held, j]          # (m, |held|): B[kN+i, j]
        tilde = np.einsum("ki,ikw->w", coef, blocks)   # g̃_j
        t = torch.as_tensor(tilde)
        dist.monitored_barrier(timeout=barrier, wait_all_ranks=True)
        start = time.monotonic()
        if j in spec["die"]:
            os._exit(17)                               # a crashed worker: no message, no goodbye
        if j in spec["stall"]:
            while True:                                # a hung worker: alive, silent, until killed
                time.sleep(3600)
        time.sleep(max(0.0, start + float(spec["delays"][j]) - time.monotonic()))
        try:
            work = dist.isend(t, 0)
            work.wait(timedelta(seconds=float(spec["wait_limit"]) + float(spec["drain"])))
        except RuntimeError as exc:  # the PS decided and left before this straggler arrived
            return {"rank": rank, "sent": False, "error": str(exc).splitlines()[0][:200]}
        return {"rank": rank, "sent": True, "bytes": t.numel() * t.element_size()}

    # ---- parameter server ----
    plan = spec["plan"]
    used = list(plan["used"])
    live = set(plan["order"])
    dist.monitored_barrier(timeout=barrier, wait_all_ranks=True)
    t0 = time.monotonic()
    arrived: dict[int, float] = {}
    bufs: dict[int, Any] = {}
    broken: list = []

    # gloo only marks a receive complete inside wait(), so the PS posts one any-source
    # receive at a time and waits on it with the time left; a gloo timeout closes the
    # pairs, so the first timeout ends all listening
    def receive(until: float) -> bool:
        left = until - time.monotonic()
        if left <= 0 or broken:
            return False
        buf = torch.empty(w, dtype=torch.float64)
        try:
            work = dist.irecv(buf)
            work.wait(timedelta(seconds=left))
        except RuntimeError as exc:
            broken.append(str(exc).splitlines()[0][:200])
            return False
        j = int(work._source_rank()) - 1
        arrived[j] = time.monotonic() - t0
        bufs[j] = buf
        return True

    wait_limit = float(spec["wait_limit"])
    limit = t0 + float(plan["last_used_arrival"]) + wait_limit
    while not set(used) <= set(arrived) and receive(limit):
        pass
    undelivered = sorted(set(used) - set(arrived))
    if undelivered:
        # a used worker did not deliver: a real fault, not a simulated straggler
        return {"rank": 0, "failure": "undelivered", "undelivered": undelivered, "wait_limit": wait_limit,
                "scheduled": {j: float(spec["delays"][j]) for j in undelivered},
                "waited_seconds": time.monotonic() - t0, "receive_error": broken[0] if broken else None}
    decided = time.monotonic() - t0
    F = np.asarray(used, dtype=int)
    T = np.kron(np.eye(m), np.ones((N, 1)))
    if spec["decoder"] == "optimal":
        XF = np.linalg.lstsq(B[:, F], T, rcond=None)[0] if F.size else np.zeros((0, m))
    else:
        XF = np.asarray(spec["decoder_matrix"])[F]
    tilde_F = np.stack([bufs[int(j)].numpy() for j in F]) if F.size else np.zeros((0, w))
    ghat_padded = (XF.T @ tilde_F).reshape(-1)
    g_all = np.zeros((N, m * w))
    g_all[:, :d] = _partial_gradients(Xs, ys, theta, np.arange(N))
    grad_padded = g_all.sum(axis=0)
    ghat, grad = ghat_padded[:d], grad_padded[:d]
    R = B[:, F] @ XF - T
    GG = g_all.reshape(N, m, w).transpose(1, 0, 2).reshape(m * N, w)
    pred = GG.T @ R
    # let late workers finish their sends (the PS already decided) so that they exit cleanly
    drain_end = time.monotonic() + float(spec["drain"])
    while not live <= set(arrived) and receive(drain_end):
        pass
    return {
        "rank": 0,
        "used": F.tolist(),
        "missing": sorted(set(range(n)) - set(F.tolist())),
        "arrival_order": list(plan["order"]),
        "late": list(plan["late"]),
        "silent": list(plan["silent"]),
        "decision_time": float(plan["decision_time"]),
        "scheduled_arrival": [float(x) for x in spec["delays"]],
        # wall-clock measurements (vary from run to run; the decision does not depend on them)
        "arrival_seconds": {int(j): float(t) for j, t in arrived.items()},
        "decision_seconds": decided,
        "drained": sorted(set(arrived) - set(used)),
        "decoded": ghat,
        "gradient": grad,
        # on the zero-padded length m·w (where the identity ĝ − ∇L = 𝒢(B_F X − T) holds); the
        # padding coordinates are discarded in practice: error_truncated counts only the first d
        "error": float(np.sum((ghat_padded - grad_padded) ** 2)),
        "error_truncated": float(np.sum((ghat - grad) ** 2)),
        "predicted_error": float(np.sum(pred ** 2)),
        "residual": float(np.sum(R ** 2)),
        "decoder": XF,
    }


def seeded_delays(n: int, seed: int = 0, scale: float = 0.05) -> np.ndarray:
    """Per-worker straggling delays ``scale · Exponential(1)`` in seconds, reproducible from ``seed``.

    Examples
    --------
    >>> bool(np.array_equal(seeded_delays(5, 3), seeded_delays(5, 3)))
    True
    >>> seeded_delays(3, 0, 0.0).tolist()
    [0.0, 0.0, 0.0]
    """
    n = check_int("n", n, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    scale = check_real("scale", scale, minimum=0.0)
    return np.random.default_rng(seed + 7919).exponential(1.0, size=n) * scale


def _worker_state(res: LaunchResult, rank: int) -> str:
    """What became of one rank, in words, for an error message."""
    if rank in res.errors:
        return f"it raised {_exception_line(res.errors[rank])}"
    if rank in res.stalled:
        return "it was still running (stalled) and was killed"
    if res.results[rank] is not None:
        return "it reported " + ("a failed send" if not res.results[rank].get("sent", True) else "a send")
    return f"it died (exit code {res.exitcodes[rank]})"


def run_parameter_server(scheme: Any, *, stragglers: int = 0, deadline: float | None = None,
                         delays: Any = None, die: Sequence[int] = (), stall: Sequence[int] = (),
                         decoder: str = "optimal", d: int = 16, rows: int = 4, seed: int = 0,
                         delay_scale: float = 0.05, wait_limit: float = 20.0, drain: float = 2.0,
                         timeout: float = 60.0, **launch_kw: Any) -> dict:
    """Gradient coding with a parameter server on ``n + 1`` gloo ranks.

    Who is used is decided on the **simulated clock** (:func:`simulated_schedule`): worker
    ``j``'s transmission arrives ``delays[j]`` seconds after a barrier that every rank
    passes, dead workers never arrive, and the PS decodes from the first ``n − s`` arrivals
    (or those by the deadline).  The workers really sleep their delays and really send;
    the PS really receives and decodes those transmissions.  But the decision does not
    depend on start-up skew or scheduling races, so the same seed gives the same used set
    and bitwise the same decoded gradient.

    Parameters
    ----------
    scheme : Scheme
        Encoder ``B`` ``(mN, n)``; worker ``j`` is rank ``j + 1``.
    stragglers : int
        ``s``: the PS decodes from the first ``n − s`` arrivals (ignored with ``deadline``).
        More dead workers than ``s`` is refused (the PS would wait for ever).
    deadline : float, optional
        Instead: decode from every transmission that arrives within ``deadline`` seconds
        (simulated) of the barrier.
    delays : array (n,), optional
        Per-worker delay in seconds before sending; default: seeded
        ``delay_scale · Exponential(1)`` (seed ``seed``, :func:`seeded_delays`).
    die : list of int
        Workers whose process exits (``os._exit(17)``) right after the barrier, without sending.
    stall : list of int
        Fault injection the schedule does *not* know about: workers that hang after the
        barrier (alive, never sending).  If the PS needs one, it times out after
        ``wait_limit`` and :class:`LaunchTimeoutError` names it.
    decoder : {"optimal", "fixed"}
        ``B_F⁺ T`` or the scheme's reference decoder restricted to ``F``.
    d, rows, seed : int
        Gradient length and rows per data part of the seeded least-squares problem.
    delay_scale : float
        Mean seeded delay (seconds).
    wait_limit : float
        How long past the latest scheduled arrival of a used worker the PS waits for the
        transmissions before it declares the missing ones failed (> 0).
    drain : float
        After deciding, the PS waits at most this long for late workers (clean exits).
    timeout : float
        Launcher timeout for the whole run.
    **launch_kw
        Passed to :func:`launch`.

    Returns
    -------
    dict
        The PS's report: ``used``, ``missing`` (not used), ``late`` (live, arriving after the
        decision), ``silent`` (dead), ``arrival_order`` and ``scheduled_arrival`` (simulated),
        ``decision_time`` (simulated), ``decoded``, ``gradient``, ``error`` (on the
        zero-padded length ``m·w``; ``error_truncated`` on the first ``d`` coordinates),
        ``predicted_error``, ``residual`` = ``‖B_F X − T‖_F²``; wall-clock measurements
        ``arrival_seconds``, ``decision_seconds``, ``seconds`` (these vary between runs);
        plus ``workers`` (each worker's report or None), ``exitcodes`` and ``delays``.

    Raises
    ------
    InvalidArgumentError
        Bad arguments (before any process starts), including more dead workers than ``s``.
    LaunchTimeoutError
        A used worker did not deliver within ``wait_limit`` (named), or the PS stalled.
    RankFailure
        The parameter server raised or died.
    """
    B = getattr(scheme, "B", None)
    if B is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    n = int(scheme.n)
    s = check_int("stragglers", stragglers, minimum=0, maximum=n)
    if deadline is not None:
        deadline = check_real("deadline", deadline, minimum=0.0)
    if decoder not in ("optimal", "fixed"):
        raise InvalidArgumentError("decoder", f"must be 'optimal' or 'fixed', got {decoder!r}")
    if decoder == "fixed" and scheme.decoder is None:
        raise InvalidArgumentError("decoder", f"scheme {scheme.method!r} has no reference decoder")
    die = sorted({check_int("die", j, minimum=0, maximum=n - 1) for j in die})
    stall = sorted({check_int("stall", j, minimum=0, maximum=n - 1) for j in stall})
    if set(stall) & set(die):
        raise InvalidArgumentError("stall", f"workers {sorted(set(stall) & set(die))} cannot both die and stall")
    seed = check_int("seed", seed, minimum=0)
    delay_scale = check_real("delay_scale", delay_scale, minimum=0.0)
    if delays is None:
        delays = seeded_delays(n, seed, delay_scale)
    else:
        try:
            delays = np.asarray(delays, dtype=float)
        except (TypeError, ValueError):
            raise InvalidArgumentError("delays", f"must be {n} finite non-negative seconds, got {delays!r}") from None
    if delays.shape != (n,) or not np.all(np.isfinite(delays)) or np.any(delays < 0):
        shown = delays.tolist() if delays.size <= 16 else f"an array of shape {delays.shape}"
        raise InvalidArgumentError("delays", f"must be {n} finite non-negative seconds, got {shown}")
    wait_limit = check_real("wait_limit", wait_limit, minimum=0.0, strict_min=True)
    drain = check_real("drain", drain, minimum=0.0)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    d = check_int("d", d, minimum=1)
    rows = check_int("rows", rows, minimum=1)
    plan = simulated_schedule(delays, die, need=n - s, deadline=deadline)
    spec = {"B": np.asarray(B), "assignment": np.asarray(scheme.assignment), "m": int(scheme.m),
            "d": d, "rows": rows, "seed": seed, "delays": delays.tolist(), "die": die, "stall": stall,
            "plan": plan, "decoder": decoder,
            "decoder_matrix": None if scheme.decoder is None else np.asarray(scheme.decoder),
            "wait_limit": wait_limit, "drain": drain,
            # the barrier names a rank that does not arrive, well before the launcher's deadline
            "barrier_timeout": 0.5 * timeout}
    launch_kw.setdefault("grace_after_rank0", 1.0)
    launch_kw["may_die"] = sorted(set(launch_kw.get("may_die", ())) | {j + 1 for j in die})
    res = launch(parameter_server_job, n + 1, (spec,), timeout=timeout, **launch_kw)
    ps = res.results[0]
    if ps is None:
        if 0 in res.stalled:
            raise LaunchTimeoutError(f"the parameter server (rank 0) stalled: timed out, no report within "
                                     f"{res.deadline_reason}; killed", result=res)
        why = (f"raised {_exception_line(res.errors[0])}" if 0 in res.errors
               else f"died (exit code {res.exitcodes[0]})")
        raise RankFailure(f"the parameter server (rank 0) {why}", result=res)
    if ps.get("failure") == "undelivered":
        who = "; ".join(f"worker {j} (rank {j + 1}), scheduled to arrive at {ps['scheduled'][j]:g} s: "
                        f"{_worker_state(res, j + 1)}" for j in ps["undelivered"])
        raise LaunchTimeoutError(
            f"parameter server timed out: no transmission within wait_limit = {wait_limit:g} s after the latest "
            f"scheduled arrival from {who}", result=res)
    out = dict(ps)
    out.update({"workers": res.results[1:], "exitcodes": res.exitcodes, "delays": delays.tolist(),
                "died": die, "stalled": stall, "killed": res.killed, "rank_errors": res.errors,
                "seconds": res.seconds, "m": int(scheme.m), "n": n, "N": int(scheme.N), "d": d,
                "stragglers": s, "deadline": deadline})
    return out
