"""The link-level schedule model of the collectives' time: per-port fair sharing of each direction (theory §56.7).

A collective's *schedule* is one program per rank, the sequence of its sends and (blocking) receives
in the order the implementation posts them (:class:`Send`, :class:`Recv`).  :func:`simulate` plays
the programs on ``N`` full-duplex ports of ``beta`` bytes per second each way:

* a rank starts its program at its start time (the straggler ``delay`` after the others) and runs it
  until a receive whose message has not been delivered; a send never blocks (the socket buffer takes
  the message), so the rank goes on at once;
* the messages from one rank to another travel in posting order on one connection (TCP, FIFO): only
  the oldest unfinished one of each connection is on the wire;
* the connections on the wire share the ports max-min fairly: rank ``r``'s uplink carries at most
  ``beta`` bytes per second over all its outgoing connections, its downlink at most ``beta`` over all
  its incoming ones, and no connection can be given more without taking from one that has no more;
* a message is delivered ``alpha`` seconds after its last byte has left the sender;
* optionally (``rendezvous``) a message leaves only once its receive is posted and the receiver's
  notice of it has crossed the link (``alpha``), as gloo's transport does: the receive is posted where
  the receiver's program has a :class:`Post` for it, else when the receiver starts (theory §56.13);
* optionally (``burst``) each port direction is a token bucket of rate ``beta`` and ``burst`` bytes, as
  ``tc tbf`` shapes the emulated links: bytes covered by tokens at both ends pass at once; the buckets
  carry their tokens through the whole schedule (an idle port refills, a busy one is rate-limited);
* optionally (``framing = (mss, header)``) a message of ``B`` payload bytes occupies
  ``B + header * ceil(B / mss)`` bytes of the ports and buckets: TCP cuts it into segments of at most
  ``mss`` bytes and the shaper counts each segment's headers (theory §56.10).

The time is exact: every quantity is a :class:`fractions.Fraction` (inputs given as floats are taken
at their exact binary values).  The collective's time is the last delivery (the last rank's finish).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..._validation import check_bool, check_int, check_real
from ...errors import InvalidArgumentError

__all__ = ["Send", "Recv", "Post", "Schedule", "simulate", "max_min_rates", "ring_pattern", "wire_bytes"]


@dataclass(frozen=True)
class Send:
    """Post message ``tag`` of ``nbytes`` bytes to rank ``dst`` (non-blocking)."""

    dst: int
    nbytes: int
    tag: int


@dataclass(frozen=True)
class Recv:
    """Wait until message ``tag`` from rank ``src`` has been delivered."""

    src: int
    tag: int


@dataclass(frozen=True)
class Post:
    """Post the receive of message ``tag`` from rank ``src`` here (non-blocking; theory §56.13).

    Only a rendezvous transport cares (:func:`simulate` with ``rendezvous=True``, gloo): the sender's
    message leaves once this post's notice has crossed the link.  A receive without a ``Post`` in its
    rank's program is posted when the rank starts; a ``Post`` comes before its :class:`Recv`.
    """

    src: int
    tag: int


Op = Send | Recv | Post


Port = tuple[str, int]


def _ports(flow: tuple[int, int]) -> tuple[Port, Port]:
    return ("up", flow[0]), ("down", flow[1])


def _fill(
    flows: list[tuple[int, int]], capacity: dict[Port, Fraction | None], demand: list[Fraction | None]
) -> list[Fraction]:
    """Progressive filling: every unfrozen flow grows at the same speed until a port it uses is full
    (``capacity`` None: unlimited) or it has its ``demand`` (None: unlimited).  Max-min fair."""
    amount = [Fraction(0)] * len(flows)
    left = dict(capacity)
    free = {i for i, x in enumerate(demand) if x is None or x > 0}
    while free:
        users: dict[Port, list[int]] = {}
        for i in free:
            for p in _ports(flows[i]):
                if left[p] is not None:
                    users.setdefault(p, []).append(i)
        steps = [x / len(u) for p, u in users.items() if (x := left[p]) is not None]
        steps += [x - amount[i] for i in free if (x := demand[i]) is not None]
        if not steps:
            raise InvalidArgumentError("schedule", "a connection with no limit on either port")
        step = min(steps)
        for i in free:
            amount[i] += step
        full = set()
        for p, u in users.items():
            x = left[p]
            if x is not None:
                left[p] = x - step * len(u)
                if left[p] == 0:
                    full.add(p)
        free = {
            i for i in free if not full.intersection(_ports(flows[i])) and (demand[i] is None or amount[i] != demand[i])
        }
    return amount


def max_min_rates(flows: list[tuple[int, int]], N: int) -> list[Fraction]:
    """Max-min fair shares (in units of ``beta``) of connections ``(src, dst)`` on ``N`` full-duplex ports.

    Progressive filling: every unfrozen connection grows at the same speed; when a port (``src``'s
    uplink or ``dst``'s downlink, capacity 1 each) is full, its connections freeze.

    Examples
    --------
    >>> [str(x) for x in max_min_rates([(0, 1), (0, 2), (3, 2)], 4)]      # 0's uplink and 2's downlink
    ['1/2', '1/2', '1/2']
    >>> [str(x) for x in max_min_rates([(0, 1), (0, 2), (0, 3), (1, 2)], 4)]
    ['1/3', '1/3', '1/3', '2/3']
    """
    check_int("N", N, minimum=1)
    return _fill(flows, {p: Fraction(1) for f in flows for p in _ports(f)}, [None] * len(flows))


@dataclass(frozen=True)
class Schedule:
    """One program per rank: the collective's messages in the order each rank posts them.

    Examples
    --------
    >>> ring2 = Schedule("ring", ((Send(1, 8, 0), Recv(1, 0)), (Send(0, 8, 0), Recv(0, 0))))
    >>> ring2.bytes_sent, ring2.messages, ring2.time(alpha=0.5, beta=4.0)
    ((8, 8), (1, 1), 2.5)
    """

    name: str
    programs: tuple[tuple[Op, ...], ...]

    @property
    def N(self) -> int:
        """Ranks."""
        return len(self.programs)

    @property
    def bytes_sent(self) -> tuple[int, ...]:
        """Payload bytes each rank sends."""
        return tuple(sum(op.nbytes for op in prog if isinstance(op, Send)) for prog in self.programs)

    @property
    def messages(self) -> tuple[int, ...]:
        """Messages each rank sends."""
        return tuple(sum(isinstance(op, Send) for op in prog) for prog in self.programs)

    def time(
        self,
        alpha: float,
        beta: float,
        delay: float = 0.0,
        straggler: int | None = None,
        burst: float = 0,
        framing: tuple[int, int] | None = None,
        rendezvous: bool = False,
    ) -> float:
        """Seconds until every rank holds the sum: :func:`simulate`'s last finish, as a float."""
        finish = simulate(
            self, alpha, beta, delay=delay, straggler=straggler, burst=burst, framing=framing, rendezvous=rendezvous
        )
        return float(max(finish))


def _exact(name: str, x: Any, *, positive: bool = False) -> Fraction:
    if isinstance(x, Fraction):
        if x < 0 or (positive and x == 0):
            raise InvalidArgumentError(name, f"must be {'> 0' if positive else '>= 0'}, got {x}")
        return x
    return Fraction(check_real(name, x, minimum=0.0, strict_min=positive))


def _check(schedule: Schedule) -> None:
    """Every send has its receive on the other side, each (src, dst, tag) once."""
    N = schedule.N
    sends: set[tuple[int, int, int]] = set()
    recvs: set[tuple[int, int, int]] = set()
    posts: set[tuple[int, int, int]] = set()
    for r, prog in enumerate(schedule.programs):
        for op in prog:
            if isinstance(op, Post):
                key = (op.src, r, op.tag)
                if key in posts or key in recvs:
                    raise InvalidArgumentError(
                        "schedule", f"{schedule.name}: post of {key} repeated or after its receive"
                    )
                posts.add(key)
                continue
            peer = op.dst if isinstance(op, Send) else op.src
            check_int("peer", peer, minimum=0, maximum=N - 1)
            key = (r, op.dst, op.tag) if isinstance(op, Send) else (op.src, r, op.tag)
            seen = sends if isinstance(op, Send) else recvs
            if key in seen or peer == r:
                raise InvalidArgumentError("schedule", f"{schedule.name}: message {key} repeated or to itself")
            seen.add(key)
    if sends != recvs:
        raise InvalidArgumentError("schedule", f"{schedule.name}: unmatched messages {sorted(sends ^ recvs)}")
    if posts - recvs:
        raise InvalidArgumentError("schedule", f"{schedule.name}: posts without a receive {sorted(posts - recvs)}")


def _framing(framing: Any) -> tuple[int, int] | None:
    if framing is None:
        return None
    if not isinstance(framing, tuple) or len(framing) != 2:
        raise InvalidArgumentError("framing", f"must be None or (mss, header), got {framing!r}")
    return check_int("framing mss", framing[0], minimum=1), check_int("framing header", framing[1], minimum=0)


def wire_bytes(nbytes: int, framing: tuple[int, int] | None) -> int:
    """Bytes a message of ``nbytes`` payload bytes occupies on a link: ``nbytes + header * ceil(nbytes / mss)``.

    Examples
    --------
    >>> wire_bytes(3000, (1448, 66)), wire_bytes(3000, None)      # three segments of TCP over Ethernet
    (3198, 3000)
    """
    f = _framing(framing)
    return nbytes if f is None else nbytes + f[1] * -(-nbytes // f[0])


def _posted_at_start(schedule: Schedule, start: list[Fraction]) -> dict[tuple[int, int, int], Fraction]:
    """The receives a program posts when its rank starts (those without a :class:`Post`), at that instant."""
    explicit = {(op.src, r, op.tag) for r, prog in enumerate(schedule.programs) for op in prog if isinstance(op, Post)}
    return {
        (op.src, r, op.tag): start[r]
        for r, prog in enumerate(schedule.programs)
        for op in prog
        if isinstance(op, Recv) and (op.src, r, op.tag) not in explicit
    }


def _pass_bursts(on: list[tuple[int, int]], wire: dict, tokens: dict[Port, Fraction]) -> bool:
    """What both ends' buckets allow passes at once, shared max-min (the connections ``on`` the wire);
    True if any byte passed."""
    burst_now = _fill(on, {p: tokens[p] for c in on for p in _ports(c)}, [wire[c][0][1] for c in on])
    for c, x in zip(on, burst_now, strict=True):
        wire[c][0][1] -= x
        for p in _ports(c):
            tokens[p] -= x
    return any(burst_now)


def simulate(
    schedule: Schedule,
    alpha: Any,
    beta: Any,
    *,
    delay: Any = 0,
    straggler: int | None = None,
    burst: Any = 0,
    framing: tuple[int, int] | None = None,
    rendezvous: bool = False,
) -> tuple[Fraction, ...]:
    """Each rank's finish time (exact) when the schedule plays on ports of ``beta`` B/s with latency ``alpha``.

    Parameters
    ----------
    schedule : Schedule
    alpha : float or Fraction
        Seconds from a message's last byte leaving the sender to its delivery (>= 0).
    beta : float or Fraction
        Bytes per second of each port, each direction (> 0; ``math.inf``: transfers take no time).
    delay : float or Fraction
        Seconds the straggler starts after the others (>= 0).
    straggler : int, optional
        The late rank (default ``N − 1``).
    burst : int or Fraction
        Bytes of each port direction's token bucket (>= 0; 0: a plain rate limit).  A token bucket of
        rate ``beta`` and size ``burst`` (``tc tbf``) lets a port pass up to its tokens at once; it
        refills at ``beta`` while the port sends less than ``beta``, up to ``burst``, and keeps its
        tokens from one message to the next.  Full at the start.
    framing : (int, int), optional
        ``(mss, header)``: each message occupies :func:`wire_bytes` bytes of the ports (default: its
        payload bytes).
    rendezvous : bool
        A message leaves only once its receive is posted (a :class:`Post` in the receiver's program, else
        the receiver's start) and ``alpha`` has passed for the notice to reach the sender, as gloo's
        transport does (theory §56.13); messages held so do not block the connection behind them.
        Default False: every send goes on the wire when posted (plain sockets).

    Returns
    -------
    tuple of Fraction
        Per rank, the instant its program ends (all its receives delivered), from the others' start.

    Examples
    --------
    Two ranks exchange 10 bytes at 2 B/s, 1 s latency; the second starts 3 s late:

    >>> s = Schedule("x", ((Send(1, 10, 0), Recv(1, 0)), (Send(0, 10, 0), Recv(0, 0))))
    >>> [str(t) for t in simulate(s, 1, 2, delay=3)]
    ['9', '6']
    >>> [str(t) for t in simulate(s, 1, 2, delay=3, burst=4)]     # 4 bytes pass at once: 2 s saved
    ['7', '4']
    >>> [str(t) for t in simulate(s, 1, 2, delay=3, framing=(4, 1))]   # 3 segments, 13 bytes each way
    ['21/2', '15/2']
    >>> [str(t) for t in simulate(s, 1, 2, delay=3, rendezvous=True)]  # 0's message waits for 1's notice
    ['9', '10']
    """
    _check(schedule)
    N = schedule.N
    a = _exact("alpha", alpha)
    infinite = isinstance(beta, float) and beta == math.inf
    b = Fraction(1) if infinite else _exact("beta", beta, positive=True)
    K = _exact("burst", burst)
    f = _framing(framing)
    s = N - 1 if straggler is None else check_int("straggler", straggler, minimum=0, maximum=N - 1)
    start = [_exact("delay", delay) if r == s else Fraction(0) for r in range(N)]
    gated = check_bool("rendezvous", rendezvous)
    posted = _posted_at_start(schedule, start) if gated else {}  # (src, dst, tag) -> when its receive was posted
    held: list[tuple[tuple[int, int, int], Fraction]] = []  # sent, waiting for the receiver's notice
    pc = [0] * N
    finish: list[Fraction | None] = [None] * N
    wire: dict[tuple[int, int], deque[list]] = {}  # connection -> [tag, bytes left] in posting order
    tokens = {(side, r): K for side in ("up", "down") for r in range(N)}
    delivered: set[tuple[int, int, int]] = set()
    arriving: list[tuple[Fraction, tuple[int, int, int]]] = []
    t = Fraction(0)

    def run(r: int) -> bool:  # rank r runs until it blocks; True if it moved
        prog, moved = schedule.programs[r], False
        while pc[r] < len(prog):
            op = prog[pc[r]]
            if isinstance(op, Recv):
                if (op.src, r, op.tag) not in delivered:
                    break
            elif isinstance(op, Post):
                if gated:
                    posted[(op.src, r, op.tag)] = t
            else:
                left = Fraction(0) if infinite else Fraction(wire_bytes(op.nbytes, f))
                if gated:
                    held.append(((r, op.dst, op.tag), left))
                else:
                    wire.setdefault((r, op.dst), deque()).append([op.tag, left])
            pc[r] += 1
            moved = True
        if pc[r] == len(prog) and finish[r] is None:
            finish[r] = t
        return moved

    def settle() -> None:  # the instant t: starts, finished transfers, deliveries, until nothing moves
        changed = True
        while changed:
            changed = False
            for r in range(N):
                if start[r] <= t and run(r):
                    changed = True
            for key, left in [x for x in held if x[0] in posted and posted[x[0]] + a <= t]:
                held.remove((key, left))  # the receiver's notice is here: on the wire, in posting order
                wire.setdefault(key[:2], deque()).append([key[2], left])
                changed = True
            for (src, dst), q in wire.items():
                while q and q[0][1] == 0:
                    arriving.append((t + a, (src, dst, q.popleft()[0])))
                    changed = True
            for when, key in [x for x in arriving if x[0] <= t]:
                arriving.remove((when, key))
                delivered.add(key)
                changed = True

    while True:
        settle()
        if all(f is not None for f in finish):
            return tuple(f for f in finish if f is not None)
        on = [c for c, q in wire.items() if q]
        if K > 0 and on and _pass_bursts(on, wire, tokens):
            continue
        # a port with tokens left limits nothing now; an empty bucket passes beta
        capacity = {p: (None if tokens[p] > 0 else b) for c in on for p in _ports(c)}
        rates = _fill(on, capacity, [None] * len(on))
        through: dict[Port, Fraction] = dict.fromkeys(tokens, Fraction(0))
        for c, v in zip(on, rates, strict=True):
            for p in _ports(c):
                through[p] += v
        events = [x for x in start if x > t] + [w for w, _ in arriving]
        events += [posted[k] + a for k, _ in held if k in posted]
        events += [t + wire[c][0][1] / v for c, v in zip(on, rates, strict=True)]
        events += [t + tokens[p] / (through[p] - b) for p in tokens if tokens[p] > 0 and through[p] > b]
        if not events:
            raise InvalidArgumentError("schedule", f"{schedule.name}: deadlock (a receive that no send can satisfy)")
        nxt = min(events)
        for c, v in zip(on, rates, strict=True):
            wire[c][0][1] -= v * (nxt - t)
        for p in tokens:
            tokens[p] = min(K, tokens[p] + (b - through[p]) * (nxt - t))
        t = nxt


def ring_pattern(name: str, N: int, rounds: int, nbytes: int, ahead: int | None = None) -> Schedule:
    """``rounds`` rounds around the ring: in each, every rank sends ``nbytes`` to the next, then receives.

    The schedule of the ring all-reduce and of CERAR: round ``k``'s packet depends on round
    ``k − 1``'s (theory §56.1, §56.5).  ``ahead``: receives are posted that many rounds in advance, as
    :class:`gcsim.executor.collectives.RingTransport` posts them (the first ``ahead`` at the start,
    round ``k + ahead``'s just before round ``k``'s is awaited: a :class:`Post`); None: all at the start.

    Examples
    --------
    >>> ring_pattern("ring", 3, 2, 8).programs[0]
    (Send(dst=1, nbytes=8, tag=0), Recv(src=2, tag=0), Send(dst=1, nbytes=8, tag=1), Recv(src=2, tag=1))
    >>> for op in ring_pattern("ring", 3, 2, 8, ahead=1).programs[0]:
    ...     print(op)
    Send(dst=1, nbytes=8, tag=0)
    Post(src=2, tag=1)
    Recv(src=2, tag=0)
    Send(dst=1, nbytes=8, tag=1)
    Recv(src=2, tag=1)
    """
    A = None if ahead is None else check_int("ahead", ahead, minimum=1)
    programs = []
    for r in range(N):
        prev = (r - 1) % N
        prog: list[Op] = []
        for k in range(rounds):
            prog.append(Send((r + 1) % N, nbytes, k))
            if A is not None and k + A < rounds:
                prog.append(Post(prev, k + A))
            prog.append(Recv(prev, k))
        programs.append(tuple(prog))
    return Schedule(name, tuple(programs))
