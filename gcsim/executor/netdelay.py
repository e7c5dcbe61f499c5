"""One-way link delay without ``sch_netem``: a user-space delayer on the kernel's NFQUEUE (root only).

Kernels built without ``CONFIG_NET_SCH_NETEM`` (``tc qdisc ... netem`` answers "Specified qdisc
kind is unknown") cannot add latency with ``tc``.  This module does it with netfilter instead:
an ``iptables-legacy`` rule in a rank's network namespace queues every packet the rank receives
on its link (``INPUT -i eth0 -j NFQUEUE``) and a small process in that namespace, :func:`serve`,
holds each packet for ``delay`` seconds before accepting it, in arrival order (one batch verdict
releases every packet up to the last one due).  The process asks for the packets' metadata only
(``NFQNL_COPY_META``, no payload copies) and for whole segmentation-offload packets
(``NFQA_CFG_F_GSO``), so a 1 Gbit/s link is a few thousand verdicts a second.  The packets are
held on the receiving side: held on the sending side they would still count against the
sender's TCP small-queue budget, and a bulk transfer with 10 ms of delay stalled that way here.

Used by :class:`gcsim.executor.netem.NetemTopology` (``delay_backend="nfqueue"``, or ``"auto"``
where ``netem`` is missing); :func:`nfqueue_available` says whether this machine allows it.
Accuracy: the delay is the time between the kernel queueing the packet and the verdict, at least
``delay`` plus the delayer's scheduling latency (recorded: :func:`serve` reports the mean and
maximum lateness of its verdicts when stopped).

The netlink messages follow ``linux/netfilter/nfnetlink_queue.h``.
"""

from __future__ import annotations

import collections
import os
import select
import shutil
import signal
import socket
import struct
import sys
import time

__all__ = [
    "nfqueue_available",
    "iptables_rule",
    "serve",
    "config_message",
    "verdict_message",
    "parse_packet_ids",
]

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_GSO = 4
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
#: Packets the kernel may hold in the queue (beyond it, packets are dropped).
QUEUE_MAXLEN = 100_000


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def _message(msg: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body


def config_message(queue: int, *, seq: int = 1) -> bytes:
    """The netlink message binding queue ``queue``: metadata only, whole GSO packets, :data:`QUEUE_MAXLEN`.

    Examples
    --------
    >>> m = config_message(0)
    >>> len(m), struct.unpack("=IHH", m[:8])
    (64, (64, 770, 5))
    """
    attrs = _attr(NFQA_CFG_CMD, struct.pack("=BxH", NFQNL_CFG_CMD_BIND, socket.htons(socket.AF_INET)))
    attrs += _attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))
    attrs += _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN))
    attrs += _attr(NFQA_CFG_MASK, struct.pack("!I", NFQA_CFG_F_GSO))
    attrs += _attr(NFQA_CFG_FLAGS, struct.pack("!I", NFQA_CFG_F_GSO))
    return _message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK, seq)


def verdict_message(queue: int, packet_id: int) -> bytes:
    """The batch verdict accepting every queued packet with an id up to ``packet_id``.

    Examples
    --------
    >>> m = verdict_message(0, 7)
    >>> struct.unpack("!II", m[-8:])  # NF_ACCEPT, id
    (1, 7)
    """
    return _message(NFQNL_MSG_VERDICT_BATCH, queue, _attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id)))


def parse_packet_ids(data: bytes) -> list[int]:
    """Packet ids of the ``NFQNL_MSG_PACKET`` messages in one netlink read (errors raise ``OSError``).

    Examples
    --------
    >>> hdr = _attr(NFQA_PACKET_HDR, struct.pack("!IHB", 42, 0x0800, 3))
    >>> parse_packet_ids(_message(NFQNL_MSG_PACKET, 0, hdr) * 2)
    [42, 42]
    """
    ids = []
    off = 0
    while off + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, off)
        if length < 16:
            break
        if kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, off + 16)
            if err != 0:
                raise OSError(-err, f"nfnetlink_queue: {os.strerror(-err)}")
        elif kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            a = off + 20
            end = off + length
            while a + 4 <= end:
                alen, akind = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if (akind & 0x7FFF) == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, a + 4)[0])
                    break
                a += (alen + 3) & ~3
        off += (length + 3) & ~3
    return ids


def iptables_rule(ifname: str, queue: int = 0, action: str = "-A") -> list[str]:
    """The ``iptables-legacy`` command that queues every packet received on ``ifname`` to ``queue``.

    Examples
    --------
    >>> " ".join(iptables_rule("eth0"))
    'iptables-legacy -w -A INPUT -i eth0 -j NFQUEUE --queue-num 0'
    """
    return ["iptables-legacy", "-w", action, "INPUT", "-i", ifname, "-j", "NFQUEUE", "--queue-num", str(int(queue))]


def nfqueue_available() -> tuple[bool, str]:
    """``(True, "")`` when ``iptables-legacy`` is installed and this process may open the netfilter queue socket.

    Examples
    --------
    >>> ok, why = nfqueue_available()
    >>> isinstance(ok, bool) and (ok or len(why) > 0)
    True
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False, "the user-space delayer needs root (netfilter queues)"
    if shutil.which("iptables-legacy") is None:
        return False, "the 'iptables-legacy' command is not installed (Debian: apt-get install iptables)"
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER).close()
    except OSError as exc:
        return False, f"netfilter netlink sockets not permitted here: {exc}"
    return True, ""


def serve(delay: float, queue: int = 0, ready=None) -> dict:
    """Hold every packet of ``queue`` for ``delay`` seconds, then accept it; runs until SIGTERM / SIGINT.

    ``ready``: called once the queue is bound.  Returns (and prints as JSON when run as a script)
    ``packets``, and the lateness of the verdicts beyond ``delay``: ``late_mean_s``, ``late_max_s``.
    """
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    try:
        sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE (root): 16 MB
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.bind((0, 0))
    sock.send(config_message(queue))
    parse_packet_ids(sock.recv(65536))  # the acknowledgement (an error raises)
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    if ready is not None:
        ready()
    pending: collections.deque = collections.deque()
    packets, late_sum, late_max = 0, 0.0, 0.0
    while not stop:
        now = time.monotonic()
        wait = 0.5 if not pending else max(0.0, pending[0][0] - now)
        try:
            readable, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if readable:
            while True:
                try:
                    data = sock.recv(1 << 20, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                t = time.monotonic() + delay
                pending.extend((t, i) for i in parse_packet_ids(data))
        now = time.monotonic()
        last = None
        while pending and pending[0][0] <= now:
            due, last = pending.popleft()
            late = now - due
            packets += 1
            late_sum += late
            late_max = max(late_max, late)
        if last is not None:
            sock.send(verdict_message(queue, last))
    if pending:
        sock.send(verdict_message(queue, pending[-1][1]))
    sock.close()
    return {"packets": packets, "late_mean_s": late_sum / packets if packets else 0.0, "late_max_s": late_max}


def main(argv: list[str] | None = None) -> int:
    """``python -m gcsim.executor.netdelay DELAY_SECONDS [QUEUE]``: :func:`serve`; prints ``ready`` once bound."""
    import json

    args = sys.argv[1:] if argv is None else argv
    try:  # verdicts on time while the ranks keep the cores busy: real-time priority, else a high nice
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (OSError, AttributeError):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, -10)
        except OSError:
            pass
    res = serve(float(args[0]), int(args[1]) if len(args) > 1 else 0, ready=lambda: print("ready", flush=True))
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
