"""Collectives to call inside an initialized process group: CERAR, the ring all-reduce, the library's.

:func:`cerar_all_reduce` runs the CERAR ring (docs/theory.md §50) over ``isend``/``irecv``
(``L = c + N − 2`` rounds of ``ceil(d/c)`` scalars) with the symbol arithmetic of
:mod:`gcsim.cerar.ring` (encode, packet, strip, decode: the lines the simulator runs);
:func:`ring_all_reduce` is reduce-scatter + all-gather (``2(N−1)`` steps of ``ceil(d/N)``
scalars); :func:`library_all_reduce` is ``dist.all_reduce``.  A :class:`ByteCounter` counts the
bytes each rank actually hands to ``isend``: CERAR ``L·ceil(d/c)·itemsize``, ring
``2(N−1)·ceil(d/N)·itemsize`` (:mod:`gcsim.cerar.traffic`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .._optional import require
from ..cerar.design import CerarDesign
from ..cerar.export import load_design
from ..cerar.ring import decode, encode, packet, packet_size, strip
from ..errors import GcsimError, InvalidArgumentError
from .launcher import GLOO_SOURCE

__all__ = ["RingFailureError", "ByteCounter", "cerar_all_reduce", "ring_all_reduce", "library_all_reduce", "as_design"]


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


def _group_info(group):
    require("torch", "torch", "gcsim.executor.collectives")
    import torch.distributed as dist

    N = dist.get_world_size(group)
    me = dist.get_rank(group)
    glob = (lambda r: r) if group is None else (lambda r: dist.get_global_rank(group, r))
    return N, me, glob


def _exchange(send, recv, dst: int, src: int, what: str, step: int, counter: ByteCounter | None) -> None:
    """isend ``send`` to ``dst`` and irecv into ``recv`` from ``src``; clear error on failure."""
    require("torch", "torch", "gcsim.executor.collectives")
    import torch.distributed as dist

    try:
        ws = dist.isend(send, dst)
        wr = dist.irecv(recv, src)
        assert ws is not None and wr is not None  # None only for a rank outside the group
        wr.wait()
        ws.wait()
    except RuntimeError as exc:
        why = GLOO_SOURCE.sub("", str(exc).splitlines()[0])
        raise RingFailureError(
            f"{what}: step {step}: exchange with ring neighbours (send to rank {dst}, "
            f"receive from rank {src}) failed: {why}"
        ) from None
    if counter is not None:
        counter.add(send, recv)


def cerar_all_reduce(tensor, design: Any, *, group=None, counter: ByteCounter | None = None, compute_dtype=None):
    """Approximate sum of ``tensor`` over the ranks by the CERAR ring protocol (docs/theory.md §50).

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
    require("torch", "torch", "gcsim.executor.collectives.cerar_all_reduce")
    import torch

    design = as_design(design)
    N, me, glob = _group_info(group)
    if design.N != N:
        raise InvalidArgumentError("design", f"is for N = {design.N} workers, the group has {N} ranks")
    c, L = design.c, design.L
    flat = tensor.reshape(-1)
    d = flat.numel()
    w = packet_size(d, c)
    cd = flat.dtype if compute_dtype is None else compute_dtype
    dev = flat.device  # CPU for gloo, the rank's GPU for NCCL
    G = torch.zeros(c * w, dtype=cd, device=dev)
    G[:d] = flat.to(cd)
    G = G.reshape(c, w)
    A = torch.tensor(design.encoders[me], dtype=cd, device=dev)  # a copy: the design's arrays are read-only
    D = torch.tensor(design.decoders[me], dtype=cd, device=dev)
    X = encode(A, G).to(flat.dtype)  # c coded symbols, in the wire dtype
    nxt, prv = glob((me + 1) % N), glob((me - 1) % N)
    u = torch.zeros(w, dtype=flat.dtype, device=dev)
    U = torch.empty(L, w, dtype=flat.dtype, device=dev)
    for t in range(1, L + 1):  # the rounds of gcsim.cerar.ring, over the network
        s = packet(X, u, t)
        r = torch.empty(w, dtype=flat.dtype, device=dev)
        _exchange(s, r, nxt, prv, "cerar_all_reduce", t, counter)
        u = strip(r, X, t, N)
        U[t - 1] = u
    out = decode(G, D, U.to(cd))
    return out.reshape(-1)[:d].to(flat.dtype).reshape(tensor.shape)


def ring_all_reduce(tensor, *, group=None, counter: ByteCounter | None = None):
    """Exact sum by the classic ring all-reduce: reduce-scatter then all-gather.

    The flattened tensor is zero-padded into ``N`` chunks of ``w = ceil(d/N)``; each of the
    ``2(N−1)`` steps sends one chunk to the next rank (``2(N−1)·w·itemsize`` bytes).

    Returns a new tensor of the same shape and dtype.
    """
    require("torch", "torch", "gcsim.executor.collectives.ring_all_reduce")
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
    for k in range(N - 1):  # reduce-scatter
        send_i, recv_i = (me - k) % N, (me - k - 1) % N
        _exchange(chunks[send_i].clone(), tmp, nxt, prv, "ring_all_reduce (reduce-scatter)", k + 1, counter)
        chunks[recv_i] += tmp
    for k in range(N - 1):  # all-gather: rank me owns chunk me+1
        send_i, recv_i = (me + 1 - k) % N, (me - k) % N
        _exchange(chunks[send_i].clone(), tmp, nxt, prv, "ring_all_reduce (all-gather)", N + k, counter)
        chunks[recv_i] = tmp
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
