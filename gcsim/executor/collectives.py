"""Collectives to call inside an initialized process group: CERAR, the ring all-reduce, the library's.

:func:`cerar_all_reduce` runs the CERAR ring (docs/theory.md §50) over ``isend``/``irecv``
(``L = c + N − 2`` rounds of ``ceil(d/c)`` scalars): the rounds of :func:`gcsim.cerar.ring.run_ring`
(encode, packet, strip, decode: the lines the simulator runs) in torch, on the tensor's own
device, with a :class:`RingTransport` that posts every send and receive asynchronously -- the
receive of round ``t + 1`` is posted before round ``t``'s packet is awaited (at ``N >= 3``; a ring
of two posts each packet's send and receive as one pair, :class:`RingTransport`), and the next
symbol is encoded while the current packet travels (docs/theory.md §52.4).  :func:`ring_all_reduce` is
reduce-scatter + all-gather (``2(N−1)`` steps of ``ceil(d/N)`` scalars) over the same transport;
:func:`library_all_reduce` is ``dist.all_reduce``.  A :class:`ByteCounter` counts the bytes each
rank actually hands to ``isend``: CERAR ``L·ceil(d/c)·itemsize``, ring
``2(N−1)·ceil(d/N)·itemsize`` (:mod:`gcsim.cerar.traffic`).

Every wait is bounded by the process group's timeout (the launcher sets it, ``op_timeout``): a
neighbour that died or stalled makes :class:`RingFailureError` name the step and both neighbours.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array_api import get_namespace
from .._optional import require
from ..cerar.design import CerarDesign
from ..cerar.export import load_design
from ..cerar.ring import SCHEDULES, check_lean, packet_size, run_ring, run_ring_lean, segment_bounds
from ..errors import GcsimError, InvalidArgumentError
from .launcher import GLOO_SOURCE

__all__ = [
    "RingFailureError",
    "ByteCounter",
    "StorageMeter",
    "RingTransport",
    "cerar_all_reduce",
    "ring_all_reduce",
    "library_all_reduce",
    "as_design",
]


#: Default largest piece of a CERAR packet on the wire (bytes): larger packets are pipelined.
#: Large on purpose: on gloo over loopback with 4 ranks on 2 cores, pieces of 128 KiB - 1 MiB made
#: a 1.86 M-float32 CERAR (c = 4) 1.4-2x slower (more Python per byte where the CPU is the
#: bottleneck); pipelining pays where the wire is (a real network), for packets of many MiB.
SEGMENT_BYTES = 1 << 23


class RingFailureError(GcsimError, RuntimeError):
    """A ring neighbour failed (died or timed out) during a ring collective."""


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


@dataclass
class StorageMeter:
    """Peak bytes of the buffers a rank's lean CERAR ring holds (docs/theory.md §51.4), by storage accounting.

    :func:`cerar_all_reduce` with ``schedule="lean"`` calls :meth:`probe` after every receive and
    after every round with the tensors the schedule holds (the state's rows, the own symbols kept,
    the packet sent and the packet received) and adds the transport's (every send not yet
    completed, every receive buffer posted); the bytes of their *distinct storages* are summed (a
    view counts its whole storage, once).  The schedule works in place (no temporaries: sums are
    formed with ``add_``), and these are the moments the live set is largest -- after a buffer has
    been received and before one is freed -- so the peak over the probes is the peak of the
    buffers the ring holds.  The caller's tensor counts when the state lives in it (``out``).

    Attributes
    ----------
    peak_bytes : int
        Largest sum seen.
    packet_bytes : int
        Bytes of one packet, ``ceil(d/c) · itemsize`` (set by the ring).
    probes : int
        Number of probes.
    """

    peak_bytes: int = 0
    packet_bytes: int = 0
    probes: int = 0

    @property
    def peak_packets(self) -> float:
        """``peak_bytes / packet_bytes``: the peak in packets of ``ceil(d/c)`` scalars."""
        return self.peak_bytes / self.packet_bytes if self.packet_bytes else 0.0

    def probe(self, held, transport=None) -> int:
        """Sum the bytes of the distinct storages of ``held`` (and the transport's buffers); returns it."""
        tensors = list(held) + (list(transport.held()) if transport is not None else [])
        seen: dict[int, int] = {}
        for t in tensors:
            if t is None:
                continue
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        total = int(sum(seen.values()))
        self.peak_bytes = max(self.peak_bytes, total)
        self.probes += 1
        return total


def group_object(group):
    """The process group that ``group`` names (the default group for None): the key of per-group state.

    Per-group tables (ring locks here, the DDP hook's communication threads) key on its ``id`` and
    keep the object itself, so that a key cannot be reused by a later group.
    """
    import torch.distributed as dist

    return dist.group.WORLD if group is None else group


_GROUP_LOCKS: dict[int, tuple[Any, threading.Lock]] = {}
_GROUP_LOCKS_LOCK = threading.Lock()


@contextmanager
def _one_ring_per_group(group):
    """Run one ring collective at a time per process group in this process.

    Packet ``k`` of every ring carries the tag ``k``: two rings running at once on one group
    (two threads, two hooked models) would pair one's packets with the other's receives.
    """
    key = group_object(group)
    with _GROUP_LOCKS_LOCK:
        entry = _GROUP_LOCKS.get(id(key))
        if entry is None or entry[0] is not key:  # the group object is kept alive with its lock
            entry = (key, threading.Lock())
            _GROUP_LOCKS[id(key)] = entry
    with entry[1]:
        yield


def _group_info(group):
    require("torch", "torch", "gcsim.executor.collectives")
    import torch.distributed as dist

    N = dist.get_world_size(group)
    me = dist.get_rank(group)
    glob = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
    return N, me, glob


class RingTransport:
    """One rank's ring link: packets go to rank ``nxt`` by ``isend``, come from ``prv`` by ``irecv``.

    The transport of :func:`gcsim.cerar.ring.run_ring` on a real network.  ``send(k, s)`` posts
    packet ``k`` and returns at once (the tensor is kept alive until ``close``); receives are
    posted ``ahead`` packets in advance (``recv(k)`` posts packet ``k + ahead``'s, then waits for
    packet ``k``; ``ahead=0`` posts each receive when it is awaited, holding no buffer in advance);
    ``flush()`` waits for the sends posted so far and lets their buffers go; ``close()`` waits for
    every send.  Packet ``k`` carries the tag ``k``, so it can
    only be matched with its own receive.  Receive buffers for packet ``k`` have ``sizes(k)``
    elements of ``dtype``; ``step(k)`` names the step of packet ``k`` in error messages.

    When ``nxt == prv`` (a ring of two ranks) both directions go to one peer, and NCCL matches
    the operations to one peer in the order they are posted (tags are ignored): a receive posted
    ahead could be paired with the wrong packet or queue behind this rank's own sends.  Then
    nothing is posted ahead: ``send(k, s)`` posts packet ``k``'s send *and* its receive together
    in one ``torch.distributed.batch_isend_irecv`` (docs/guides/executor.md, "A ring of two"),
    so both ranks post the same sequence of (send ``k``, receive ``k``) pairs; ``recv(k)`` of a
    packet not yet sent is a programming error.

    Every wait is bounded by the process group's timeout; a failure raises
    :class:`RingFailureError` naming ``what``, the step and both neighbours (global ranks).
    """

    def __init__(
        self,
        what: str,
        nxt: int,
        prv: int,
        sizes,
        dtype,
        device,
        packets: int,
        *,
        ahead: int = 1,
        step=None,
        group=None,
        counter=None,
    ):
        require("torch", "torch", "gcsim.executor.collectives.RingTransport")
        self.what, self.nxt, self.prv = what, nxt, prv
        self.sizes = sizes if callable(sizes) else (lambda k, _w=int(sizes): _w)
        self.step = step if step is not None else (lambda k: k)
        self.dtype, self.device, self.packets, self.ahead = dtype, device, int(packets), max(0, int(ahead))
        self.group, self.counter = group, counter
        self._recvs: dict[int, tuple[list[Any], Any]] = {}
        self._sends: list[tuple[int, list[Any], Any]] = []
        #: one peer both ways: each packet's send and receive are posted as one pair, none ahead
        self.paired = nxt == prv
        if not self.paired:
            for k in range(1, min(self.ahead, self.packets) + 1):
                self._post_recv(k)

    def _fail(self, step: int, exc: BaseException) -> RingFailureError:
        why = GLOO_SOURCE.sub("", (str(exc).splitlines() or [type(exc).__name__])[0])
        return RingFailureError(
            f"{self.what}: step {self.step(step)}: exchange with ring neighbours (send to rank {self.nxt}, "
            f"receive from rank {self.prv}) failed: {why}"
        )

    def _post_recv(self, t: int) -> None:
        import torch
        import torch.distributed as dist

        buf = torch.empty(self.sizes(t), dtype=self.dtype, device=self.device)
        try:
            work = dist.irecv(buf, self.prv, group=self.group, tag=t)
        except RuntimeError as exc:
            raise self._fail(t, exc) from None
        assert work is not None  # None only for a rank outside the group
        self._recvs[t] = ([work], buf)

    def send(self, t: int, s) -> None:
        import torch
        import torch.distributed as dist

        s = s.contiguous()
        try:
            if self.paired:  # packet t's send and receive in one batch (NCCL: one group call)
                buf = torch.empty(self.sizes(t), dtype=self.dtype, device=self.device)
                works = list(
                    dist.batch_isend_irecv(
                        [
                            dist.P2POp(dist.isend, s, self.nxt, group=self.group, tag=t),
                            dist.P2POp(dist.irecv, buf, self.prv, group=self.group, tag=t),
                        ]
                    )
                )
                if len(works) == 2:  # gloo: one work each
                    self._recvs[t] = ([works[1]], buf)
                    works = [works[0]]
                else:  # NCCL coalesces the pair into one work: the receive waits for it, once
                    self._recvs[t] = (works, buf)
            else:
                work = dist.isend(s, self.nxt, group=self.group, tag=t)
                assert work is not None
                works = [work]
        except RuntimeError as exc:
            raise self._fail(t, exc) from None
        self._sends.append((t, works, s))  # s stays alive until its send has completed
        if self.counter is not None:
            self.counter.add(s)

    def recv(self, t: int):
        if self.paired and t not in self._recvs:
            raise RuntimeError(f"{self.what}: packet {t} received before it was sent (a ring of two pairs them)")
        if not self.paired and t not in self._recvs:  # ahead = 0: posted when awaited
            self._post_recv(t)
        works, buf = self._recvs.pop(t)
        if not self.paired and self.ahead and t + self.ahead <= self.packets:
            self._post_recv(t + self.ahead)  # ready before the neighbour can send it
        try:
            for work in works:
                work.wait()  # bounded by the process group's timeout
        except RuntimeError as exc:
            raise self._fail(t, exc) from None
        works.clear()  # a coalesced pair's work is shared with the send's entry: waited (gloo: hangs twice)
        if self.counter is not None:
            self.counter.received += buf.numel() * buf.element_size()
        return buf

    def held(self) -> list:
        """The buffers the transport holds: every send not yet completed, every receive posted."""
        return [s for _, _, s in self._sends] + [buf for _, buf in self._recvs.values()]

    def flush(self) -> None:
        """Wait for every send posted so far (each bounded by the group's timeout) and drop its buffer."""
        sends, self._sends = self._sends, []
        for t, works, _ in sends:
            try:
                for work in works:
                    work.wait()
            except RuntimeError as exc:
                raise self._fail(t, exc) from None

    def close(self, failed: bool = False) -> None:
        """Wait for every send (each bounded by the group's timeout); after a failure, drop them.

        After a failed round nothing is awaited: the error is already on its way, and a send
        to a dead or stalled neighbour would only add another timeout before it is reported.
        """
        self._recvs.clear()
        if failed:
            self._sends = []
            return
        self.flush()


def cerar_all_reduce(
    tensor,
    design: Any,
    *,
    group=None,
    counter: ByteCounter | None = None,
    compute_dtype=None,
    segment_bytes: int = SEGMENT_BYTES,
    out=None,
    schedule: str = "default",
    meter: StorageMeter | None = None,
):
    """Approximate sum of ``tensor`` over the ranks by the CERAR ring protocol (docs/theory.md §50).

    Rank ``i`` (ring position = group rank) splits its flattened tensor into ``c``
    components (zero-padded to ``c·w``, ``w = ceil(d/c)``) and runs the ``L = c + N − 2``
    rounds of :func:`gcsim.cerar.ring.run_ring`: send ``x_i^(t) + u_i^(t−1)`` to ``i+1``,
    receive from ``i−1``, strip ``x_i^(t−N+1)``; the output is ``G_i + D_i U_i``.  Everything
    runs in torch on the tensor's device; sends and receives are posted asynchronously
    (:class:`RingTransport`) and symbol ``x_i^(t+1) = A_i[t+1, :] G_i`` is encoded while round
    ``t``'s packet travels.  A sparse design (the exact one: permutation encoders, 0/1
    decoders) in the tensor's own dtype moves no more than the ring does: its symbols are
    the components themselves (views), packets are stripped where they were received and the
    decoder's terms are added into the output's rows; only a last, partial component is padded.

    Parameters
    ----------
    tensor : torch.Tensor
        Local gradient (any shape; floating dtype).  Not modified (unless it is ``out``).
    design : CerarDesign or path of an exported design
        ``design.N`` must equal the group size.
    group : ProcessGroup, optional
    counter : ByteCounter, optional
        Adds ``L`` packets of ``w`` elements (``L·w·itemsize`` bytes).
    compute_dtype : torch.dtype, optional
        Encoding/decoding precision (default: the tensor's dtype; packets always travel in
        the tensor's dtype).
    segment_bytes : int
        A packet larger than this travels in ``ceil(w·itemsize / segment_bytes)`` pieces, each
        forwarded as soon as it has arrived (pipelining; same bytes, same arithmetic).
    out : torch.Tensor, optional
        Contiguous tensor of the same shape, dtype and device to write the result into; may be
        ``tensor`` itself (reduced in place, as ``dist.all_reduce`` does).  Default: a new one.
    schedule : {"default", "lean"}
        ``"default"``: the schedule above.  ``"lean"``: each packet is formed from the output state,
        ``s^(t) = A_i[t, :] a`` (:func:`gcsim.cerar.ring.run_ring_lean`, docs/theory.md §51.4), in the
        result's own buffer (``out``, or the new result), keeping only the own symbols that come
        back: at most ``c + N + 2`` packets of ``ceil(d/c)`` scalars at any moment (``c + N``
        between rounds), the result's buffer counted as the ``c`` state packets; when the last
        component is partial its padded copy adds at most one packet.  For designs with the shift
        pattern only (exact, Vandermonde, perturbation; :func:`gcsim.cerar.ring.check_lean` refuses
        the others), whole packets (no pieces), and ``compute_dtype`` None or the tensor's dtype.
        Same outputs in exact arithmetic; in floating point within the bound of §51.4.
    meter : StorageMeter, optional
        With ``schedule="lean"``: records the peak bytes of the buffers the ring holds.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``tensor`` (``out`` when given).

    Raises
    ------
    RingFailureError
        A neighbour died or timed out (message names both neighbours and the round).
    """
    require("torch", "torch", "gcsim.executor.collectives.cerar_all_reduce")
    import torch

    design = as_design(design)
    N, me, glob = _group_info(group)
    if design.N != N:
        raise InvalidArgumentError("design", f"is for N = {design.N} workers, the group has {N} ranks")
    if out is not None:
        if not isinstance(out, torch.Tensor) or (out.shape, out.dtype, out.device) != (
            tensor.shape,
            tensor.dtype,
            tensor.device,
        ):
            raise InvalidArgumentError("out", "must be a tensor of the input's shape, dtype and device")
        if not out.is_contiguous():
            raise InvalidArgumentError("out", "must be contiguous (the result is written through a flat view)")
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise InvalidArgumentError("schedule", f"must be one of {SCHEDULES}, got {schedule!r}")
    if meter is not None and not isinstance(meter, StorageMeter):
        raise InvalidArgumentError("meter", f"must be a StorageMeter, got {type(meter).__name__}")
    if schedule == "lean":
        check_lean(design.encoders, design.decoders)
        if compute_dtype is not None and compute_dtype != tensor.dtype:
            raise InvalidArgumentError(
                "compute_dtype",
                f"schedule='lean' computes in the tensor's own dtype ({tensor.dtype}), got {compute_dtype}: its "
                "state is the result buffer; use compute_dtype=None or schedule='default'",
            )
        with _one_ring_per_group(group):
            return _cerar_lean(tensor, design, group, counter, out, meter, N, me, glob)
    elif meter is not None:
        raise InvalidArgumentError("meter", "is read by schedule='lean' only")
    with _one_ring_per_group(group):
        return _cerar_ring(tensor, design, group, counter, compute_dtype, segment_bytes, out, N, me, glob)


def _result_rows(tensor, out, c: int, w: int, cd):
    """The result buffer (``out`` or a new one, holding the input) and its c components as rows of w.

    Component k is a view of the result's flat buffer when it is full and ``cd`` is its dtype; a
    partial or cast one is a zero-padded copy in ``cd``, listed in ``copied`` as (k, lo, hi) to be
    written back.  Returns ``(res, res_flat, rows, copied)``.
    """
    import torch

    flat = tensor.reshape(-1)
    d = flat.numel()
    res = out if out is not None else torch.empty_like(tensor, memory_format=torch.contiguous_format)
    res_flat = res.reshape(-1)
    if res_flat.data_ptr() != flat.data_ptr():
        res_flat.copy_(flat)
    rows, copied = [], []
    for k in range(c):
        lo, hi = min(k * w, d), min((k + 1) * w, d)
        if hi - lo == w and cd == res_flat.dtype:
            rows.append(res_flat[lo:hi])
        else:
            row = torch.empty(w, dtype=cd, device=res_flat.device)
            row[: hi - lo] = res_flat[lo:hi]
            row[hi - lo :] = 0  # only the padding zero-filled: one pass over the row, not two
            rows.append(row)
            copied.append((k, lo, hi))
    return res, res_flat, rows, copied


def _cerar_lean(tensor, design, group, counter, out, meter, N, me, glob):
    """The lean schedule of :func:`cerar_all_reduce` (docs/theory.md §51.4), under the group's ring lock.

    The state is the result itself: its c components are views of the result's flat buffer (a last,
    partial component is a padded copy, written back at the end); packets are whole (no pieces) and
    no receive is posted in advance.
    """
    import torch

    c, L = design.c, design.L
    flat = tensor.reshape(-1)
    d = flat.numel()
    w = packet_size(d, c)
    dev = flat.device
    res, res_flat, rows, copied = _result_rows(tensor, out, c, w, flat.dtype)
    link = RingTransport(
        "cerar_all_reduce (lean)",
        glob((me + 1) % N),
        glob((me - 1) % N),
        w,
        flat.dtype,
        dev,
        L,
        ahead=0,
        group=group,
        counter=counter,
    )
    probe = None
    if meter is not None:
        meter.packet_bytes = w * flat.element_size()

        def probe(held):
            meter.probe(held, link)

    run_ring_lean(
        rows,
        design.encoders[me],
        design.decoders[me],
        xp=get_namespace(torch),
        transport=link,
        N=N,
        probe=probe,
    )
    for k, lo, hi in copied:
        res_flat[lo:hi] = rows[k][: hi - lo]
    return res


def _cerar_ring(tensor, design, group, counter, compute_dtype, segment_bytes, out, N, me, glob):
    """The body of :func:`cerar_all_reduce` (arguments checked), under the group's ring lock."""
    import torch

    c, L = design.c, design.L
    flat = tensor.reshape(-1)
    d = flat.numel()
    w = packet_size(d, c)
    wire = flat.dtype
    cd = wire if compute_dtype is None else compute_dtype
    dev = flat.device  # CPU for gloo, the rank's GPU for NCCL
    A_host, D_host = design.encoders[me], design.decoders[me]
    # sparse design (the exact one: permutation encoders, one decoder entry per round): products
    # term by term over the nonzero coefficients, else dense products on the device
    sparse = int(np.count_nonzero(A_host)) + int(np.count_nonzero(D_host)) <= 2 * (c + L)
    # packets of more than segment_bytes travel in S pieces, each forwarded as soon as it arrives
    pieces = segment_bounds(w, -(-w * flat.element_size() // max(int(segment_bytes), 1)))
    S = len(pieces)
    link = RingTransport(
        "cerar_all_reduce",
        glob((me + 1) % N),
        glob((me - 1) % N),
        lambda k: pieces[(k - 1) % S][1] - pieces[(k - 1) % S][0],
        wire,
        dev,
        L * S,
        # receives posted in advance: a whole round's (dense path), every round's (sparse path: it keeps
        # every received buffer until the decode anyway, so posting them all at once holds no more at
        # the peak, and no packet waits for its receive to be posted: 1.6-1.8x -> 1.5-1.6x dist.all_reduce
        # on the 1.86 M-float32 gradient, c = N = 4, gloo, loaded 2-core VM)
        ahead=L * S if sparse else S,
        step=lambda k: (k - 1) // S + 1,  # errors name the round
        group=group,
        counter=counter,
    )
    if sparse:
        # the result is decoded into the rows of `res` (the output): component k is a view of its
        # slice when full and in the compute dtype; a partial or cast one works on a copy
        res, res_flat, rows, copied = _result_rows(tensor, out, c, w, cd)
        run_ring(
            None if cd == wire else torch.empty(c, w, dtype=wire, device=dev),
            rows,
            None,
            xp=get_namespace(torch),
            transport=link,
            N=N,
            segments=S,
            host_coefficients=(A_host, D_host),
        )
        for k, lo, hi in copied:
            res_flat[lo:hi] = rows[k][: hi - lo]  # cast back to the wire dtype
        return res
    if d == c * w and cd == wire:
        G = flat.reshape(c, w)  # no padding, no cast: the rows are the components (never written)
    else:
        G = torch.zeros(c * w, dtype=cd, device=dev)
        G[:d] = flat  # cast to the compute dtype
        G = G.reshape(c, w)
    A = torch.tensor(A_host, dtype=cd, device=dev)  # a copy: the arrays are read-only
    D = torch.tensor(D_host, dtype=cd, device=dev)
    X = torch.empty(c, w, dtype=wire, device=dev)  # filled one symbol per round
    ghat = run_ring(X, G, D, xp=get_namespace(torch), transport=link, N=N, encoder=A, segments=S)
    result = ghat.reshape(-1)[:d].to(wire).reshape(tensor.shape)
    return result if out is None else out.copy_(result)


def ring_all_reduce(tensor, *, group=None, counter: ByteCounter | None = None):
    """Exact sum by the classic ring all-reduce: reduce-scatter then all-gather.

    The flattened tensor is zero-padded into ``N`` chunks of ``w = ceil(d/N)``; each of the
    ``2(N−1)`` steps sends one chunk to the next rank (``2(N−1)·w·itemsize`` bytes), over a
    :class:`RingTransport` (the next step's receive posted before this one is awaited).

    Returns a new tensor of the same shape and dtype.
    """
    require("torch", "torch", "gcsim.executor.collectives.ring_all_reduce")
    N, me, glob = _group_info(group)
    with _one_ring_per_group(group):
        return _classic_ring(tensor, group, counter, N, me, glob)


def _classic_ring(tensor, group, counter, N, me, glob):
    """The body of :func:`ring_all_reduce`, under the group's ring lock."""
    import torch

    flat = tensor.reshape(-1)
    d = flat.numel()
    w = packet_size(d, N)
    buf = torch.zeros(N * w, dtype=flat.dtype, device=flat.device)
    buf[:d] = flat
    chunks = buf.reshape(N, w)
    link = RingTransport(
        "ring_all_reduce",
        glob((me + 1) % N),
        glob((me - 1) % N),
        w,
        flat.dtype,
        flat.device,
        2 * (N - 1),
        group=group,
        counter=counter,
    )
    failed = True
    try:
        for k in range(N - 1):  # reduce-scatter
            link.what = "ring_all_reduce (reduce-scatter)"
            send_i, recv_i = (me - k) % N, (me - k - 1) % N
            link.send(k + 1, chunks[send_i].clone())  # a copy: the chunk is overwritten while it may travel
            chunks[recv_i] += link.recv(k + 1)
        for k in range(N - 1):  # all-gather: rank me owns chunk me+1
            link.what = "ring_all_reduce (all-gather)"
            send_i, recv_i = (me + 1 - k) % N, (me - k) % N
            link.send(N + k, chunks[send_i].clone())
            chunks[recv_i] = link.recv(N + k)
        failed = False
    finally:
        link.close(failed=failed)
    return buf[:d].reshape(tensor.shape).clone()


def library_all_reduce(tensor, *, group=None):
    """``dist.all_reduce`` (SUM) on a copy: the library baseline."""
    require("torch", "torch", "gcsim.executor.collectives.library_all_reduce")
    import torch.distributed as dist

    out = tensor.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    return out


def as_design(design: Any):
    if isinstance(design, CerarDesign):
        return design
    if isinstance(design, (str, os.PathLike)):
        return load_design(os.fspath(design))
    if isinstance(design, dict) and {"encoders", "decoders"} <= set(design):
        return CerarDesign(
            int(design["N"]),
            int(design["c"]),
            design["encoders"],
            design["decoders"],
            method=str(design.get("method", "custom")),
        )
    raise InvalidArgumentError(
        "design", f"must be a CerarDesign, an exported design path or a dict, got {type(design).__name__}"
    )
