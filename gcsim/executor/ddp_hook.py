"""A DistributedDataParallel communication hook that all-reduces gradients with CERAR (docs/guides/executor.md).

DDP hands each gradient bucket (a flat tensor) to the hook; the hook runs the CERAR ring
(:func:`gcsim.executor.collectives.cerar_all_reduce`) over the bucket and returns the
*average* ``(1/N) Σ_i ĝ_i`` (what DDP's default all-reduce hook returns) as a
``torch.futures.Future``.  With an exact design (``c ≤ N``) training matches plain DDP up
to round-off; with ``c > N`` each rank receives its own approximation ``ĝ_i`` (replicas
may drift apart: measure ``max ‖θ_i − θ_j‖``).

The hook does not block backward: it hands the bucket to the communication thread of its
process group (one per group, shared by every hooked model on that group) and returns a future
that completes when that bucket's ring has finished (or carries its error), as DDP's own
all-reduce does.  So DDP overlaps the ring with the rest of backward and
waits for every future at the end of it.  The last bucket of a backward pass, once the thread
is idle, runs in the hook itself: nothing is left to overlap with it.  Buckets are reduced one
after another in the order the hooks hand them over, which is the same on every rank, each in
place in DDP's bucket buffer (as DDP's all-reduce does).  One thread per group, not per model:
the rings of two models hooked on one group (one backward through both) share the group's
point-to-point tags, so running them concurrently would pair one ring's packets with the
other's receives; queued on one thread they run in the same order on every rank.
(``overlap=False`` runs every ring inside the hook and returns a completed future.)

Usage in an ordinary training loop (inside an initialized process group of ``N`` ranks)::

    import gcsim
    from torch.nn.parallel import DistributedDataParallel as DDP
    from gcsim.executor.ddp_hook import register_cerar_hook
    model = DDP(net)
    state = register_cerar_hook(model, gcsim.cerar.design(4, 4, "exact"))  # or a bundle exported with it
    for x, y in loader:
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    print(state.counter.sent, "bytes sent by this rank's hook")

To wrap the hook (e.g. ``fp16_compress_wrapper``) or inspect it, build the state with
:func:`make_hook_state` (the same checks and ``compute_dtype`` rule as :func:`register_cerar_hook`,
:func:`resolve_compute_dtype`) and register it yourself::

    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_wrapper
    state = make_hook_state(design)                       # a CerarHookState
    model.register_comm_hook(state, fp16_compress_wrapper(cerar_hook))
    state.compute_dtype, state.wire_dtype, state.precision  # after the first backward

Approximate designs let the replicas drift apart: :mod:`gcsim.executor.replicas` measures the
drift and re-synchronises the parameters every ``K`` steps.

``schedule="lean"`` (:func:`register_cerar_hook`, :func:`make_hook_state`) runs each bucket's ring
with the lean schedule of docs/theory.md §51.4 (:func:`gcsim.executor.collectives.cerar_all_reduce`):
the ring's state is DDP's bucket buffer itself, and the ring holds at most ``c + N + 2`` packets of
``ceil(d/c)`` scalars, the buffer's ``c`` included (``state.peak_packets``, measured by storage
accounting); the same
outputs in exact arithmetic, within the bound of §51.4 in floating point.  For designs with the
shift pattern (exact, Vandermonde, perturbation), computing in the bucket's dtype.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool
from ..cerar.floating import WIRE_UNIT_ROUNDOFF, precision_check
from ..cerar.ring import SCHEDULES, check_lean
from ..errors import InvalidArgumentError
from .collectives import ByteCounter, StorageMeter, as_design, cerar_all_reduce, group_object

__all__ = ["CerarHookState", "cerar_hook", "register_cerar_hook", "make_hook_state", "resolve_compute_dtype"]


class _CommThread:
    """One daemon thread running submitted jobs in order; each job completes its own future.

    A job that raises completes its future with the exception (DDP re-raises it in backward);
    the thread itself never dies of a job.  Every wait inside a job is bounded by the process
    group's timeout, so a future always completes.
    """

    def __init__(self) -> None:
        import torch

        # OpenMP's thread count is per thread: a new thread would run its matrix products on
        # every core (spinning against the ranks' other processes) unless told the creator's
        self._threads = torch.get_num_threads()
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._pending = 0  # jobs submitted and not yet finished
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="gcsim-cerar-hook", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import torch

        torch.set_num_threads(self._threads)
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, fut = job
            try:
                result = fn()
            except BaseException as exc:  # the future carries it to the thread that waits
                with self._lock:
                    self._pending -= 1
                fut.set_exception(exc)
            else:
                with self._lock:
                    self._pending -= 1
                fut.set_result(result)

    def reserve(self) -> bool:
        """Claim the group for a ring run by the caller when the thread is idle (then :meth:`release`).

        While claimed the thread is not idle, so the group's rings still run one at a time in
        submission order (a job submitted meanwhile waits in the queue: the collectives'
        per-group lock keeps it from starting before the caller's ring has finished).
        """
        with self._lock:
            if self._pending:
                return False
            self._pending = 1
            return True

    def release(self) -> None:
        with self._lock:
            self._pending -= 1

    def submit(self, fn, fut) -> None:
        with self._lock:
            self._pending += 1
        self._jobs.put((fn, fut))

    def stop(self) -> None:
        self._jobs.put(None)


# the communication thread of each process group, shared by the hook states on it: (group, thread,
# number of states using it); keyed by the group object's id (the group is kept alive with it)
_GROUP_THREADS: dict[int, tuple[Any, _CommThread, int]] = {}
_GROUP_THREADS_LOCK = threading.Lock()


def _group_thread(group: Any, *, create: bool) -> _CommThread | None:
    """The group's communication thread (started and counted for one more state with ``create``)."""
    key = group_object(group)
    with _GROUP_THREADS_LOCK:
        entry = _GROUP_THREADS.get(id(key))
        if entry is None or entry[0] is not key:
            if not create:
                return None
            entry = (key, _CommThread(), 0)
        if not create:
            return entry[1]
        _GROUP_THREADS[id(key)] = (key, entry[1], entry[2] + 1)
        return entry[1]


def _release_group_thread(group: Any) -> None:
    """One state less on the group's thread; the last one stops it."""
    key = group_object(group)
    with _GROUP_THREADS_LOCK:
        entry = _GROUP_THREADS.get(id(key))
        if entry is None or entry[0] is not key:
            return
        if entry[2] <= 1:
            del _GROUP_THREADS[id(key)]
            entry[1].stop()
        else:
            _GROUP_THREADS[id(key)] = (entry[0], entry[1], entry[2] - 1)


@dataclass
class CerarHookState:
    """State of the CERAR hook (public): the design, the group, the precisions, byte counter and call count.

    Build it with :func:`make_hook_state` (or :func:`register_cerar_hook`, which also registers
    it); pass it with :func:`cerar_hook`, or a wrapper of it, to ``model.register_comm_hook``.

    Attributes
    ----------
    design : CerarDesign
        Its ``N`` is the group size.
    group : ProcessGroup or None
        The ring's group (None: the default group).
    compute_dtype : torch.dtype or None
        Precision of encoding and decoding (None: the bucket's dtype), as
        :func:`resolve_compute_dtype` chose it.
    counter : ByteCounter
        Bytes and packets this rank's hook sent (``counter.sent``); read it after backward.
    calls : int
        Buckets reduced so far.
    overlap : bool
        Run each bucket's ring on the communication thread of the group (default True; started
        at the first call and shared with the other states on the group; :meth:`close` releases
        it, the last state's close stops it) and return a future that completes with it; the
        last bucket of a backward pass runs in the hook when the thread is idle.
    wire_dtype : torch.dtype or None
        The dtype of the buckets the hook received (the packets' dtype), set at the first call.
    precision : PrecisionCheck or None
        The design's expected error against the wire dtype's rounding level
        (:func:`gcsim.cerar.floating.precision_check`), computed at the first call; a
        :class:`~gcsim.cerar.floating.CerarPrecisionWarning` is emitted then when it is far above
        (``check_precision``).
    check_precision : bool
        Check (and warn) at the first call (default True).
    schedule : {"default", "lean"}
        The ring's schedule (docs/theory.md §51.4; module docstring).
    peak_bytes : int
        With ``schedule="lean"``: the largest peak, over the buckets reduced so far, of the bytes the
        ring held (the bucket's buffer included; :class:`~gcsim.executor.collectives.StorageMeter`).
    peak_packets : float
        With ``schedule="lean"``: the largest, over the buckets, of that peak in packets of
        ``ceil(d/c)`` scalars of the bucket (``StorageMeter.peak_packets``; the bucket's buffer counts
        as its ``d/w <= c`` packets): at most ``c + min(N, c − 1) + 2 <= c + N + 2``, plus one for a
        partial last component (theory §51.4).
    """

    design: Any
    group: Any = None
    compute_dtype: Any = None
    counter: ByteCounter = field(default_factory=ByteCounter)
    calls: int = 0
    overlap: bool = True
    wire_dtype: Any = None
    precision: Any = None
    check_precision: bool = True
    schedule: str = "default"
    peak_bytes: int = 0
    peak_packets: float = 0.0
    _comm: _CommThread | None = field(default=None, repr=False, compare=False)

    def _first_call(self, dtype: Any) -> None:
        """Record the wire dtype and check the design's precision in it (once)."""
        self.wire_dtype = dtype
        if self.check_precision and str(dtype).removeprefix("torch.") in WIRE_UNIT_ROUNDOFF:
            self.precision = precision_check(self.design, dtype)

    def close(self) -> None:
        """Release the group's communication thread (after the last backward); a later call takes it again."""
        if self._comm is not None:
            self._comm = None
            _release_group_thread(self.group)


def _reduce_bucket(state: CerarHookState, buf, N: int, ready=None):
    """CERAR-reduce one bucket in place and divide by N (on the communication thread when overlapping).

    The bucket's buffer is DDP's own flat copy of the gradients, handed over to the hook until
    its future completes (DDP's all-reduce reduces it in place too): the ring decodes into it.
    """
    if ready is not None:  # CUDA: wait for the stream that produced the bucket
        import torch

        torch.cuda.set_device(buf.device)
        torch.cuda.current_stream().wait_event(ready)
    if state.schedule == "lean":
        meter = StorageMeter()
        cerar_all_reduce(
            buf, state.design, group=state.group, counter=state.counter, out=buf, schedule="lean", meter=meter
        )
        state.peak_bytes = max(state.peak_bytes, meter.peak_bytes)
        state.peak_packets = max(state.peak_packets, meter.peak_packets)
    else:
        cerar_all_reduce(
            buf, state.design, group=state.group, counter=state.counter, compute_dtype=state.compute_dtype, out=buf
        )
    buf.div_(N)
    if ready is not None:
        import torch

        torch.cuda.current_stream().synchronize()  # the result is complete when the future is
    return buf


def cerar_hook(state: CerarHookState, bucket):  # no annotations: DDP compares them with real types
    """DDP communication hook: CERAR-all-reduce the bucket and average over the ranks.

    With ``state.overlap`` the bucket's ring runs on the communication thread and the hook
    returns at once; the last bucket of a backward pass (``bucket.is_last()``) runs in the hook
    itself when the thread is idle: nothing is left to overlap with, and the hand-off to the
    thread and back would only add latency.  Buckets are reduced in DDP's order either way.

    Parameters
    ----------
    state : CerarHookState
    bucket : torch.distributed.GradBucket

    Returns
    -------
    torch.futures.Future
        Completes with the bucket's buffer, averaged in place, when this bucket's ring has
        finished (with its :class:`~gcsim.executor.collectives.RingFailureError` if a
        neighbour failed); already completed when the ring ran in the hook.
    """
    require("torch", "torch", "gcsim.executor.ddp_hook.cerar_hook")
    import torch
    import torch.distributed as dist

    buf = bucket.buffer()
    N = dist.get_world_size(state.group)
    if state.calls == 0:
        state._first_call(buf.dtype)
    state.calls += 1
    fut: torch.futures.Future = torch.futures.Future()
    # another state's rings may be queued on the group's thread: a ring run here must come after them
    comm = state._comm if state._comm is not None else _group_thread(state.group, create=False)
    inline = not state.overlap or bucket.is_last()
    if inline and (comm is None or comm.reserve()):
        try:
            result = _reduce_bucket(state, buf, N)
        except Exception as exc:  # the future carries it, as from the thread (DDP re-raises it)
            fut.set_exception(exc)
        else:
            fut.set_result(result)
        finally:
            if comm is not None:
                comm.release()
        return fut
    ready = None
    if buf.is_cuda:
        ready = torch.cuda.Event()
        ready.record()
    if state._comm is None:
        state._comm = _group_thread(state.group, create=True)
    assert state._comm is not None
    state._comm.submit(lambda: _reduce_bucket(state, buf, N, ready), fut)
    if not state.overlap:  # behind other states' rings on the group: wait for this one in the hook
        try:
            fut.wait()
        except Exception:  # noqa: S110 - the future carries the error to DDP, as in the other paths
            pass
    return fut


def resolve_compute_dtype(design: Any, compute_dtype: Any = "auto") -> Any:
    """The precision the hook encodes and decodes in: a ``torch.dtype``, or None for the bucket's dtype.

    ``"auto"``: None (the wire dtype) when every coefficient of the design is 0 or 1 (the exact
    design for ``c = N``: every product is exact and each output sums a few gradient values, as
    DDP's own all-reduce does), else ``torch.float64`` (designs whose products cancel);
    ``"float64"`` / ``"float32"``: that torch dtype; None or a ``torch.dtype``: itself.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> resolve_compute_dtype(design(3, 3, "exact")) is None
    True
    >>> str(resolve_compute_dtype(design(3, 5, "perturbation", eps=0.01)))
    'torch.float64'
    """
    require("torch", "torch", "gcsim.executor.ddp_hook.resolve_compute_dtype")
    import torch

    des = as_design(design)
    if compute_dtype is None or isinstance(compute_dtype, torch.dtype):
        return compute_dtype
    if not isinstance(compute_dtype, str) or compute_dtype not in ("auto", "float64", "float32"):
        raise InvalidArgumentError(
            "compute_dtype", f"must be 'auto', 'float64', 'float32', a torch.dtype or None, got {compute_dtype!r}"
        )
    if compute_dtype == "auto":
        unit = all(np.isin(a, (0.0, 1.0)).all() for a in (des.encoders, des.decoders))
        return None if unit else torch.float64
    return getattr(torch, compute_dtype)


def make_hook_state(
    design: Any,
    *,
    group: Any = None,
    compute_dtype: Any = "auto",
    overlap: bool = True,
    check_precision: bool = True,
    schedule: str = "default",
) -> CerarHookState:
    """A :class:`CerarHookState` for :func:`cerar_hook`, checked: to register it yourself, or wrapped.

    Parameters
    ----------
    design : CerarDesign, exported design path, or dict
        Its ``N`` must equal the group size (checked when a process group is initialized).
    group : ProcessGroup, optional
        Group of the ring (default: the default group).
    compute_dtype : "auto", "float64", "float32", torch.dtype or None
        :func:`resolve_compute_dtype` (the wire dtype stays the gradient dtype).
    overlap : bool
        See :class:`CerarHookState`.
    check_precision : bool
        At the first bucket, compare the design's expected error with the wire dtype's rounding
        level and warn when far above (:func:`gcsim.cerar.floating.precision_check`).
    schedule : {"default", "lean"}
        ``"lean"``: the lean ring of docs/theory.md §51.4 (module docstring), for designs with the
        shift pattern (:func:`gcsim.cerar.ring.check_lean`), computing in the bucket's own dtype
        (``compute_dtype`` ``"auto"`` or None).

    Returns
    -------
    CerarHookState

    Raises
    ------
    InvalidArgumentError
        A design for another group size; a bad ``schedule``; ``"lean"`` with a design outside
        the shift pattern or a ``compute_dtype`` other than ``"auto"``/None.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> st = make_hook_state(design(3, 3, "exact"))
    >>> st.design.N, st.compute_dtype, st.calls
    (3, None, 0)
    >>> lean = make_hook_state(design(3, 2, "exact"), schedule="lean")
    >>> lean.schedule, lean.compute_dtype, lean.peak_packets
    ('lean', None, 0.0)
    """
    overlap = check_bool("overlap", overlap)
    check_precision = check_bool("check_precision", check_precision)
    require("torch", "torch", "gcsim.executor.ddp_hook.make_hook_state")
    import torch.distributed as dist

    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise InvalidArgumentError("schedule", f"must be one of {SCHEDULES}, got {schedule!r}")
    des = as_design(design)
    if schedule == "lean":
        check_lean(des.encoders, des.decoders)
        if not (compute_dtype is None or (isinstance(compute_dtype, str) and compute_dtype == "auto")):
            raise InvalidArgumentError(
                "compute_dtype",
                f"schedule='lean' encodes and decodes in the bucket's own dtype (its state is DDP's bucket "
                f"buffer), got {compute_dtype!r}: use 'auto' or None, or schedule='default'",
            )
        compute_dtype = None
    if dist.is_available() and dist.is_initialized():
        N = dist.get_world_size(group)
        if des.N != N:
            raise InvalidArgumentError("design", f"is for N = {des.N} workers, the group has {N} ranks")
    return CerarHookState(
        design=des,
        group=group,
        compute_dtype=resolve_compute_dtype(des, compute_dtype),
        overlap=overlap,
        check_precision=check_precision,
        schedule=schedule,
    )


def register_cerar_hook(
    model: Any,
    design: Any,
    *,
    group: Any = None,
    compute_dtype: Any = "auto",
    overlap: bool = True,
    check_precision: bool = True,
    schedule: str = "default",
) -> CerarHookState:
    """Register :func:`cerar_hook` on a DDP model.

    Parameters
    ----------
    model : torch.nn.parallel.DistributedDataParallel
    design : CerarDesign, exported design path, or dict
        Its ``N`` must equal the group size.
    group : ProcessGroup, optional
        Group of the ring (default: the default group).
    compute_dtype : "auto", "float64", "float32", torch.dtype or None
        Precision of encoding/decoding (the wire dtype stays the gradient dtype):
        :func:`resolve_compute_dtype`.  "auto" (default): the gradient dtype for a design of 0/1
        coefficients, else float64.
    overlap : bool
        Run the rings on a communication thread and return pending futures, so that they
        overlap the rest of backward (default; the last bucket, with the thread idle, runs in
        the hook); False runs every ring inside the hook.
    check_precision : bool
        Warn at the first bucket when the design's expected error is far above the wire dtype's
        rounding level (:func:`gcsim.cerar.floating.precision_check`).
    schedule : {"default", "lean"}
        ``"lean"``: the lean ring of docs/theory.md §51.4, in DDP's bucket buffer, holding at most
        ``c + N + 2`` packets, the buffer's included (``state.peak_packets``); same outputs to round-off
        (:func:`make_hook_state`).

    Returns
    -------
    CerarHookState
        Holds the byte counter (``state.counter.sent``) and the number of hook calls
        (:func:`make_hook_state`).
    """
    overlap = check_bool("overlap", overlap)
    check_precision = check_bool("check_precision", check_precision)
    require("torch", "torch", "gcsim.executor.ddp_hook.register_cerar_hook")
    if not hasattr(model, "register_comm_hook"):
        raise InvalidArgumentError("model", "must be a torch DistributedDataParallel model")
    state = make_hook_state(
        design,
        group=group,
        compute_dtype=compute_dtype,
        overlap=overlap,
        check_precision=check_precision,
        schedule=schedule,
    )
    model.register_comm_hook(state, cerar_hook)
    return state


def ddp_compare_job(rank: int, world_size: int, spec: dict) -> dict:
    """Train a tiny MLP with plain DDP and with DDP + CERAR hook from the same start.

    Returns both final parameter vectors of this rank and the hook's byte count
    (module level so that :func:`gcsim.executor.launcher.launch` can run it).
    """
    require("torch", "torch", "gcsim.executor.ddp_hook.ddp_compare_job")
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    def make():
        torch.manual_seed(spec["seed"])
        return torch.nn.Sequential(
            torch.nn.Linear(spec["features"], spec["hidden"]), torch.nn.Tanh(), torch.nn.Linear(spec["hidden"], 1)
        )

    g = torch.Generator().manual_seed(1000 + rank)
    xs = torch.randn(spec["steps"], spec["batch"], spec["features"], generator=g)
    ys = torch.randn(spec["steps"], spec["batch"], 1, generator=g)
    out: dict = {"rank": rank}
    for name in ("plain", "cerar"):
        model = DDP(make())
        state = register_cerar_hook(model, spec["design"]) if name == "cerar" else None
        opt = torch.optim.SGD(model.parameters(), lr=spec["lr"])
        for step in range(spec["steps"]):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xs[step]), ys[step])
            loss.backward()
            opt.step()
        out[name] = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double().numpy()
        if state is not None:
            out["hook_bytes"] = state.counter.sent
            out["hook_calls"] = state.calls
    return out
