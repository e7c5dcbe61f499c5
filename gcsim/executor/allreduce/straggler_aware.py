"""A straggler-aware all-reduce in the manner of StragglAR (arXiv 2505.23523): start without the late rank (§56.4).

One rank ``s`` (the *straggler*, known in advance: a persistent one) reaches the collective late.
The ``M = N − 1`` ready ranks do not wait for it: they run a ring reduce-scatter among themselves on
``M`` chunks of ``w = ceil(d/M)`` scalars (``M − 1`` rounds), so that ready rank ``i`` holds chunk
``(i + 1) mod M`` summed over the ready ranks.  Once the straggler has arrived and the ready ranks'
reduce-scatter is over, a short completion phase merges its vector: it streams its ``M`` chunks, cut
into ``P`` pieces and sent piece by piece round-robin, each piece to the chunk's owner; the owner adds
the piece to its partial sum and forwards the finished piece to the ``M`` other ranks.  Every port then
carries about ``d`` scalars each way after the straggler arrives (``M(w + ceil(w/P))`` on the critical
path), where a bulk-synchronous ring starts all of its ``2(N−1)ceil(d/N)`` only then.

The *gate* keeps a straggler that arrives early from streaming into a ready rank's port while its
reduce-scatter still needs it (theory §56.12, §56.13): ``"receive"`` (default) -- each ready rank posts
its receives of the straggler's pieces only when its reduce-scatter is over, and the transport holds a
message until its receive is posted (gloo does: a rendezvous); no extra message, and nothing to wait
for when the straggler is late.  ``"signal"`` -- each ready rank sends the straggler a one-scalar ready
signal, and the straggler streams once it holds all of them (on gloo the signal itself waits for the
straggler to post its receive: two one-way delays when it is late).  ``"none"`` -- the straggler
streams as soon as it arrives.  On a transport that sends at once (NCCL's eager protocol for small
messages, plain sockets) ``"receive"`` gates nothing.

An optional *window* (theory §56.14) lets the straggler send piece ``j`` to an owner only once the
owner's finished piece ``j − window`` is back, so its connections cannot drift more than ``window``
pieces apart; :func:`straggler_aware_window` gives a window that Proposition 56.7 proves costs a
late straggler nothing on a link.

The completion phase is this module's own pipelined scatter-and-forward (any-to-any links, as the
paper assumes), not the paper's synthesized schedule; the reduce-scatter during the delay is the
paper's idea.
"""

from __future__ import annotations

import math
from typing import Any

from ..._validation import check_int, check_real
from ...cerar.ring import segment_bounds
from ...errors import InvalidArgumentError
from ..collectives import ByteCounter
from ._linkmodel import Post, Recv, Schedule, Send
from ._p2p import padded, start
from ._registry import Collective, CollectiveCost, check_sizes, check_straggler

__all__ = [
    "straggler_aware_all_reduce",
    "straggler_aware_cost",
    "straggler_aware_schedule",
    "straggler_aware_window",
    "PIECES",
    "GATES",
    "COLLECTIVES",
]

#: Default number of pieces each chunk is streamed in after the straggler arrives (pipeline depth).
PIECES = 8

#: What holds the straggler's stream until the ready ranks' reduce-scatter is over (module docstring).
GATES = ("receive", "signal", "none")


def _check_gate(gate: Any) -> str:
    if not isinstance(gate, str) or gate not in GATES:
        raise InvalidArgumentError("gate", f"must be one of {GATES}, got {gate!r}")
    return gate


def _check_window(window: Any) -> int | None:
    return None if window is None else check_int("window", window, minimum=1)


def _lag(P: int, window: int | None) -> int:
    """How many pieces the straggler's stream to an owner may run ahead of that owner's finished pieces."""
    return P if window is None else min(window, P)


def _plan(
    N: int, d: int, pieces: Any, gate: Any, window: Any = None
) -> tuple[int, int, list[tuple[int, int]], str, int | None]:
    """``(M, w, bounds, gate, window)``: ready ranks, chunk length, the pieces' column ranges within a
    chunk, the gate, the straggler's window."""
    M = N - 1
    w = -(-d // M)
    return M, w, segment_bounds(w, check_int("pieces", pieces, minimum=1)), _check_gate(gate), _check_window(window)


def straggler_aware_cost(
    N: int,
    d: int,
    itemsize: int,
    *,
    straggler: Any = None,
    pieces: int = PIECES,
    gate: str = "receive",
    window: int | None = None,
) -> CollectiveCost:
    """Bytes and rounds of :func:`straggler_aware_all_reduce` (theory §56.4).

    A ready rank sends ``(2M − 1) w`` scalars, the straggler ``M w``; ``M − 1`` early rounds of ``w``
    and two late rounds: the straggler's stream (``M w``) and the last piece's forward (``M ceil(w/P)``).
    ``gate="signal"``: each ready rank also sends a one-scalar ready signal, a round of ``M`` scalars
    into the straggler.

    Examples
    --------
    >>> c = straggler_aware_cost(4, 12, 4, pieces=2)       # M = 3, w = 4
    >>> c.bytes_sent, c.early, c.late
    ((80, 80, 80, 48), (16, 16), (48, 24))
    >>> straggler_aware_cost(4, 12, 4, pieces=2, gate="signal").bytes_sent
    (84, 84, 84, 48)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    s = check_straggler(straggler, N)
    M, w, bounds, gate, _ = _plan(N, d, pieces, gate, window)  # the window moves no byte
    signal = gate == "signal"
    q = max(b - a for a, b in bounds)
    sent = tuple((M * w if r == s else (2 * M - 1) * w + signal) * itemsize for r in range(N))
    early = (w * itemsize,) * (M - 1) + ((M * itemsize,) if signal else ())  # the straggler takes M signals
    return CollectiveCost("straggler-aware", N, d, itemsize, sent, early, (M * w * itemsize, M * q * itemsize))


def straggler_aware_window(N: int, d: int, itemsize: int, *, alpha: float, beta: float, pieces: int = PIECES) -> int:
    """The window of :func:`straggler_aware_all_reduce` that costs a late straggler nothing (theory §56.14).

    With ``window = k`` the straggler sends piece ``j`` of a chunk only once its owner's finished piece
    ``j − k`` is back.  A round of pieces leaves the straggler's port in ``τ = M q b / β`` and a finished
    piece is back ``2τ + 2α`` after its piece left, so ``k ≥ 2 + 2α/τ`` never holds a send back
    (Proposition 56.7): ``k* = 2 + ⌈2αβ / (M q b)⌉``, at most ``P`` (``P`` pieces: no window).  A
    smaller window evens out how the straggler's connections share its port at the price of idle time.

    Parameters
    ----------
    N, d, itemsize : int
        Ranks, scalars per vector, bytes per scalar.
    alpha : float
        One-way delay of a link, seconds (>= 0).
    beta : float
        Bytes per second of a port (> 0).
    pieces : int
        Pieces per chunk, as for the collective.

    Examples
    --------
    >>> straggler_aware_window(4, 262144, 4, alpha=1e-3, beta=12.5e6)     # 100 Mbit/s, 1 ms
    3
    >>> straggler_aware_window(4, 262144, 4, alpha=10e-3, beta=12.5e6)    # 100 Mbit/s, 10 ms
    4
    >>> straggler_aware_window(4, 262144, 4, alpha=0.1, beta=12.5e6)      # every piece in flight
    8
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    alpha = check_real("alpha", alpha, minimum=0.0)
    beta = check_real("beta", beta, minimum=0.0, strict_min=True)
    M, w, bounds, _, _ = _plan(N, d, pieces, "receive")
    P = len(bounds)
    q = max(b - a for a, b in bounds)
    return min(P, 2 + math.ceil(2 * alpha * beta / (M * q * itemsize)))


def _roles(N: int, s: int, P: int):
    """``(ready, owner, tag, signal_tag)``: the ready ranks, each chunk's owner, the tag of finished piece
    ``j`` of chunk ``c``, the tag of ready rank ``i``'s signal (tags: 1..M−1 the reduce-scatter, M..M+P−1
    the straggler's pieces, then the finished pieces, then the signals)."""
    M = N - 1
    ready = [r for r in range(N) if r != s]
    owner = [ready[(c - 1) % M] for c in range(M)]  # ready index i ends the reduce-scatter with chunk i + 1

    def tag(c: int, j: int) -> int:
        return M + P + c * P + j

    def signal_tag(i: int) -> int:
        return M + P + M * P + i

    return ready, owner, tag, signal_tag


def straggler_aware_schedule(
    N: int,
    d: int,
    itemsize: int,
    *,
    straggler: Any = None,
    pieces: int = PIECES,
    gate: str = "receive",
    window: int | None = None,
) -> Schedule:
    """The messages of :func:`straggler_aware_all_reduce` in each rank's posting order (theory §56.7).

    The straggler posts its ``M P`` pieces at once (round-robin over the owners) and then waits for the
    finished pieces; a ready rank runs the reduce-scatter, then per piece waits for the straggler's and
    forwards the sum to the ``M`` others, then waits for the other owners' pieces.  The gate
    ``"receive"``: a ready rank posts its receives of the straggler's pieces (:class:`Post`) when its
    reduce-scatter is over; ``"signal"``: it sends the straggler a signal then, and the straggler waits
    for every signal before streaming.

    Examples
    --------
    >>> sch = straggler_aware_schedule(3, 4, 4, pieces=1)            # M = 2 ready ranks, w = 2
    >>> for op in sch.programs[0]:                                    # a ready rank: the gate after its reduce-scatter
    ...     print(op)
    Send(dst=1, nbytes=8, tag=1)
    Recv(src=1, tag=1)
    Post(src=2, tag=2)
    Recv(src=2, tag=2)
    Send(dst=1, nbytes=8, tag=4)
    Send(dst=2, nbytes=8, tag=4)
    Recv(src=1, tag=3)
    >>> for op in straggler_aware_schedule(3, 4, 4, pieces=1, gate="signal").programs[2]:     # the straggler
    ...     print(op)
    Recv(src=0, tag=5)
    Recv(src=1, tag=6)
    Send(dst=1, nbytes=8, tag=2)
    Send(dst=0, nbytes=8, tag=2)
    Recv(src=1, tag=3)
    Recv(src=0, tag=4)
    >>> sch.bytes_sent == straggler_aware_cost(3, 4, 4, pieces=1).bytes_sent
    True
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    s = check_straggler(straggler, N)
    M, w, bounds, gate, window = _plan(N, d, pieces, gate, window)
    P = len(bounds)
    ready, owner, tag, signal_tag = _roles(N, s, P)
    sizes = [(b - a) * itemsize for a, b in bounds]
    programs: list[tuple] = [()] * N
    lag = _lag(P, window)
    programs[s] = (
        tuple(Recv(r, signal_tag(i)) for i, r in enumerate(ready) if gate == "signal")
        + tuple(
            op
            for j in range(P)
            for c in range(M)
            for op in ((Recv(owner[c], tag(c, j - lag)),) if j >= lag else ()) + (Send(owner[c], sizes[j], M + j),)
        )
        + tuple(Recv(owner[c], tag(c, j)) for c in range(M) for j in range(max(P - lag, 0), P))
    )
    for i, r in enumerate(ready):
        mine = (i + 1) % M
        nxt, prv = ready[(i + 1) % M], ready[(i - 1) % M]
        receivers = [ready[(i + 1 + t) % M] for t in range(M - 1)] + [s]
        prog: list = []
        for k in range(M - 1):
            prog += [Send(nxt, w * itemsize, 1 + k), Recv(prv, 1 + k)]
        prog += [Send(s, itemsize, signal_tag(i))] if gate == "signal" else []
        prog += [Post(s, M + j) for j in range(P)] if gate == "receive" else []
        for j in range(P):
            prog += [Recv(s, M + j)] + [Send(x, sizes[j], tag(mine, j)) for x in receivers]
        prog += [Recv(owner[c], tag(c, j)) for c in range(M) if c != mine for j in range(P)]
        programs[r] = tuple(prog)
    return Schedule("straggler-aware", tuple(programs))


def straggler_aware_all_reduce(
    tensor,
    *,
    group=None,
    counter: ByteCounter | None = None,
    straggler: Any = None,
    pieces: int = PIECES,
    gate: str = "receive",
    window: int | None = None,
):
    """Sum of ``tensor`` over the group, the ready ranks starting before the straggler arrives.

    Called by every rank as usual; the straggler simply calls it late.  Ready rank ``i`` (the ``i``-th
    rank other than ``straggler``) owns chunk ``(i + 1) mod M``.  Every receive is posted before the
    rank's first send, except, with ``gate="receive"``, a ready rank's receives of the straggler's
    pieces, posted when its reduce-scatter is over.

    Parameters
    ----------
    tensor, group, counter
        As for every registered ``run`` (:class:`~gcsim.executor.allreduce.Collective`): ``counter`` adds
        :func:`straggler_aware_cost`'s ``bytes_sent[rank]``.
    straggler : int, optional
        Group rank of the late rank (default ``N − 1``); every rank must pass the same.
    pieces : int
        Pieces per chunk in the completion phase (>= 1; at most ``w``): more pieces, a shorter pipeline
        tail, more messages.
    gate : {"receive", "signal", "none"}
        What holds the straggler's stream until the ready ranks' reduce-scatter is over (module
        docstring, theory §56.13): their receives posted then (default; a rendezvous transport such as
        gloo holds the stream until then), a ready signal the straggler waits for, or nothing.  Every
        rank must pass the same.
    window : int, optional
        The straggler sends piece ``j`` of a chunk only once the owner's finished piece ``j − window``
        is back (>= 1; default None: no window).  It moves no byte and no message (the straggler
        receives every finished piece anyway) and keeps its connections to the owners within
        ``window`` pieces of each other (theory §56.14); :func:`straggler_aware_window` gives a
        window that costs a late straggler nothing on a link.  Every rank may pass its own:
        only the straggler reads it.

    Returns
    -------
    torch.Tensor
        The sum, a new tensor of the input's shape and dtype.
    """
    _check_gate(gate)  # before anything needs torch or a process group
    _check_window(window)
    N, me, s, flat, ex = start("straggler_aware_all_reduce", tensor, group, counter, straggler)
    d = flat.numel()
    M, w, bounds, gate, window = _plan(N, d, pieces, gate, window)
    P = len(bounds)
    lag = _lag(P, window)
    ready, owner, tag, signal_tag = _roles(N, s, P)
    signal = gate == "signal"

    buf = padded(flat, M * w).reshape(M, w)
    failed = True
    try:
        if me == s:
            for i, r in enumerate(ready if signal else ()):
                ex.post_recv(r, 1, signal_tag(i))
            for c in range(M):  # the finished pieces, in the order each owner sends them
                for j, (a, b) in enumerate(bounds):
                    ex.post_recv(owner[c], b - a, tag(c, j))
            for i in range(M if signal else 0):  # every ready rank's reduce-scatter is over
                ex.recv(signal_tag(i))
            out = buf.new_empty(M, w)
            for j, (a, b) in enumerate(bounds):  # round-robin over the owners: every port busy at once
                for c in range(M):
                    if j >= lag:  # the window: owner c has finished piece j - lag
                        x, y = bounds[j - lag]
                        out[c, x:y] = ex.recv(tag(c, j - lag))
                    ex.send(owner[c], buf[c, a:b], M + j)
            for c in range(M):
                for j, (a, b) in enumerate(bounds[P - lag :], start=P - lag):
                    out[c, a:b] = ex.recv(tag(c, j))
            buf = out
        else:
            i = ready.index(me)
            mine = (i + 1) % M
            nxt, prv = ready[(i + 1) % M], ready[(i - 1) % M]
            for k in range(M - 1):
                ex.post_recv(prv, w, 1 + k)
            if gate != "receive":
                for j, (a, b) in enumerate(bounds):
                    ex.post_recv(s, b - a, M + j)
            others = [c for c in range(M) if c != mine]
            for c in others:
                for j, (a, b) in enumerate(bounds):
                    ex.post_recv(owner[c], b - a, tag(c, j))
            for k in range(M - 1):  # reduce-scatter among the ready ranks, during the delay
                ex.send(nxt, buf[(i - k) % M], 1 + k)  # never written again (theory §56.4)
                buf[(i - k - 1) % M] += ex.recv(1 + k)
            if signal:
                ex.send(s, buf.new_zeros(1), signal_tag(i))
            if gate == "receive":  # the gate: the straggler's pieces may come now
                for j, (a, b) in enumerate(bounds):
                    ex.post_recv(s, b - a, M + j)
            receivers = [ready[(i + 1 + t) % M] for t in range(M - 1)] + [s]
            for j, (a, b) in enumerate(bounds):  # completion: add the straggler's piece, forward it
                buf[mine, a:b] += ex.recv(M + j)
                for r in receivers:
                    ex.send(r, buf[mine, a:b], tag(mine, j))
            for c in others:
                for j, (a, b) in enumerate(bounds):
                    buf[c, a:b] = ex.recv(tag(c, j))
        failed = False
    finally:
        ex.close(failed)
    return buf.reshape(-1)[:d].reshape(tensor.shape)


COLLECTIVES = (
    Collective(
        "straggler-aware",
        straggler_aware_all_reduce,
        straggler_aware_cost,
        "StragglAR-style: ring reduce-scatter among the ready ranks during the delay, then a pipelined completion",
        "§56.4",
        options=("pieces", "gate", "window"),
        schedule=straggler_aware_schedule,
        order=40,
    ),
)
