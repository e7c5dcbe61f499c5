"""Point-to-point plumbing shared by the collectives of this package: posted receives, counted sends.

:class:`Exchange` posts receives ahead (every buffer a collective will receive is allocated and its
``irecv`` posted before the first send, so no message waits for its receive to be posted; the one
exception is on purpose, the straggler-aware collective's receive gate, theory §56.13), sends with
``isend`` keeping each tensor alive until it has gone, counts the payload bytes in a
:class:`~gcsim.executor.collectives.ByteCounter`, and turns a failed wait into a
:class:`CollectiveFailureError` naming the collective, the message and the peer.  Every wait is bounded
by the process group's timeout.  Message tags are unique within one collective call; the operations
between two ranks are posted in the same order on both sides, so a backend that ignores tags and
matches in order (NCCL) pairs them the same way.
"""

from __future__ import annotations

from typing import Any

from ..._optional import require
from ..collectives import ByteCounter, RingFailureError
from ..launcher import GLOO_SOURCE
from ._registry import check_straggler


class CollectiveFailureError(RingFailureError):
    """A peer failed (died or timed out) during one of the collectives of :mod:`gcsim.executor.allreduce`."""


class Exchange:
    """One rank's messages in one collective call (``what`` names it in errors).

    ``glob`` maps a group rank to the global rank that ``torch.distributed`` addresses.
    """

    def __init__(self, what: str, glob, dtype, device, group=None, counter: ByteCounter | None = None):
        self.what, self.glob, self.dtype, self.device = what, glob, dtype, device
        self.group, self.counter = group, counter
        self._recvs: dict[int, tuple[Any, Any, int]] = {}
        self._sends: list[tuple[int, int, Any, Any]] = []

    def _fail(self, tag: int, peer: int, exc: BaseException) -> CollectiveFailureError:
        why = GLOO_SOURCE.sub("", (str(exc).splitlines() or [type(exc).__name__])[0])
        return CollectiveFailureError(f"{self.what}: message {tag} with rank {peer} failed: {why}")

    def post_recv(self, peer: int, n: int, tag: int) -> None:
        """Post the receive of message ``tag`` (``n`` scalars) from group rank ``peer``."""
        import torch
        import torch.distributed as dist

        buf = torch.empty(int(n), dtype=self.dtype, device=self.device)
        try:
            work = dist.irecv(buf, self.glob(peer), group=self.group, tag=tag)
        except RuntimeError as exc:
            raise self._fail(tag, peer, exc) from None
        self._recvs[tag] = (work, buf, peer)

    def recv(self, tag: int):
        """Wait for message ``tag`` (posted by :meth:`post_recv`) and return its buffer."""
        work, buf, peer = self._recvs.pop(tag)
        try:
            work.wait()  # bounded by the process group's timeout
        except RuntimeError as exc:
            raise self._fail(tag, peer, exc) from None
        if self.counter is not None:
            self.counter.received += buf.numel() * buf.element_size()
        return buf

    def send(self, peer: int, tensor, tag: int) -> None:
        """Post message ``tag`` to group rank ``peer``; ``tensor`` is kept until the send has completed."""
        import torch.distributed as dist

        t = tensor.contiguous()
        try:
            work = dist.isend(t, self.glob(peer), group=self.group, tag=tag)
        except RuntimeError as exc:
            raise self._fail(tag, peer, exc) from None
        self._sends.append((tag, peer, work, t))
        if self.counter is not None:
            self.counter.sent += t.numel() * t.element_size()
            self.counter.packets += 1

    def flush(self) -> None:
        """Wait for every send posted so far (each bounded by the group's timeout)."""
        sends, self._sends = self._sends, []
        for tag, peer, work, _ in sends:
            try:
                work.wait()
            except RuntimeError as exc:
                raise self._fail(tag, peer, exc) from None

    def close(self, failed: bool = False) -> None:
        """Wait for every send (after a failure: drop them, the error is already on its way)."""
        self._recvs.clear()
        if failed:
            self._sends = []
            return
        self.flush()


def group_info(group):
    """``(N, me, glob)`` of the process group (default: the world)."""
    import torch.distributed as dist

    N = dist.get_world_size(group)
    me = dist.get_rank(group)
    if group is None:
        return N, me, lambda r: r
    return N, me, lambda r: dist.get_global_rank(group, r)


def padded(tensor, length: int):
    """The flattened ``tensor`` zero-padded to ``length`` scalars (a new buffer)."""
    import torch

    flat = tensor.reshape(-1)
    buf = torch.zeros(int(length), dtype=flat.dtype, device=flat.device)
    buf[: flat.numel()] = flat
    return buf


def start(what: str, tensor, group, counter: ByteCounter | None, straggler: Any):
    """The opening of every collective here: ``(N, me, straggler, flat, exchange)``.

    ``straggler`` checked against the group (default ``N − 1``), ``flat`` the flattened input (a view),
    ``exchange`` an :class:`Exchange` named ``what`` on the input's dtype and device.
    """
    require("torch", "torch", f"gcsim.executor.allreduce ({what})")
    N, me, glob = group_info(group)
    s = check_straggler(straggler, N)
    flat = tensor.reshape(-1)
    return N, me, s, flat, Exchange(what, glob, flat.dtype, flat.device, group, counter)
