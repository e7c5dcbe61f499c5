"""Low-bandwidth interconnect emulation: one network namespace per rank, veth links, ``tc`` rate limits.

Topology (docs/guides/executor.md; root only).  A hub namespace holds a Linux bridge ``br0``; every rank
``i`` gets its own namespace ``<prefix>-r<i>`` joined to the hub by a veth pair
(``eth0`` on the rank side, ``v<i>`` on the hub side) with address ``10.213.0.<i+1>/24``.
Both directions of every link are shaped by a token bucket (``tc qdisc ... tbf rate R``),
so each rank sends and receives at most ``R``; optionally every packet between two ranks is
delayed by ``delay`` (one way), with ``netem delay`` on the rank's side of its link where the
kernel has ``sch_netem``, else by the user-space delayer of :mod:`gcsim.executor.netdelay` on
the packets each rank receives (``delay_backend``).  Nothing is created in the host's own
namespace: deleting the namespaces (done on exit, also after errors) removes every link.  The
ranks reach each other only through these addresses (gloo is pinned to ``eth0`` with ``GLOO_SOCKET_IFNAME``).

Use::

    with NetemTopology(4, rate="100mbit") as topo:
        res = run_collectives(4, d, designs=..., **topo.launch_kwargs())

:func:`netem_available` says whether this machine allows it (root, ``ip`` and ``tc``,
network namespaces) and why not otherwise; tests skip with that message.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from .._validation import check_int
from ..errors import GcsimError, InvalidArgumentError
from .netdelay import iptables_rule

__all__ = [
    "NetemTopology",
    "netem_available",
    "NetemError",
    "parse_rate",
    "shaping_commands",
    "tbf_burst",
    "NETEM_LIMIT",
    "TCP_FRAMING",
    "delay_seconds",
    "netem_delay_supported",
    "congestion_commands",
    "available_congestion",
    "SHARING",
]

_SUBNET = "10.213.0"


class NetemError(GcsimError, RuntimeError):
    """Setting up the emulated network failed (message has the failing command)."""


def parse_rate(rate: str) -> float:
    """Bits per second of a ``tc`` rate string (``"100mbit"``, ``"1gbit"``, ``"500kbit"``).

    Examples
    --------
    >>> parse_rate("100mbit"), parse_rate("1gbit")
    (100000000.0, 1000000000.0)
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(bit|kbit|mbit|gbit)\s*", str(rate).lower())
    if not m:
        raise InvalidArgumentError("rate", f"must look like '100mbit', '1gbit' or '500kbit', got {rate!r}")
    scale = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)]
    value = float(m.group(1)) * scale
    if value <= 0:
        raise InvalidArgumentError("rate", f"must be positive, got {rate!r}")
    return value


def _run(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetemError(f"{' '.join(cmd)}: {exc}") from None
    if p.returncode != 0:
        raise NetemError(f"{' '.join(cmd)}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def netem_available() -> tuple[bool, str]:
    """``(True, "")`` when namespaces, veth links and ``tc`` can be used here, else ``(False, why)``.

    Creates and deletes one probe namespace with a shaped veth link.

    Examples
    --------
    >>> ok, why = netem_available()
    >>> isinstance(ok, bool) and (ok or len(why) > 0)
    True
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False, "network emulation needs root (network namespaces, veth links, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return False, f"the '{tool}' command (iproute2) is not installed"
    name = f"gcsim-probe-{os.getpid()}"
    try:
        _run(["ip", "netns", "add", name])
        try:
            _run(["ip", "-n", name, "link", "add", "a0", "type", "veth", "peer", "name", "a1"])
            _run(
                [
                    "ip",
                    "netns",
                    "exec",
                    name,
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    "a0",
                    "root",
                    "tbf",
                    "rate",
                    "10mbit",
                    "burst",
                    "32kb",
                    "latency",
                    "100ms",
                ]
            )
        finally:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
    except NetemError as exc:
        return False, f"network namespaces / veth / tc not permitted here: {exc}"
    return True, ""


#: Packets the ``netem`` stage may hold (its default, 1000, drops packets on a 1 Gbit/s link with
#: 10 ms of delay: 1.25 MB in flight is about 830 full-size packets before segmentation offload).
NETEM_LIMIT = 100_000

#: ``(mss, header)`` of the TCP segments on the emulated links (theory §56.10): the veth links have the
#: default MTU of 1500 bytes, so a segment carries at most 1500 − 20 (IPv4) − 20 (TCP) − 12 (the
#: timestamp option, on by default) = 1448 payload bytes, and the token bucket counts each segment with
#: its 14 + 20 + 20 + 12 = 66 header bytes (``tc`` counts the Ethernet frame; segmentation offload
#: counts every segment's headers).
TCP_FRAMING = (1448, 66)


def tbf_burst(rate: str) -> int:
    """Bytes of the token bucket :func:`shaping_commands` gives a link of ``rate``.

    At least one 4 ms tick of data at the rate (kernel HZ 250, so that the bucket can sustain the
    rate) and at least 32 KiB.  The link-level time model reads it (theory §56.9).

    Examples
    --------
    >>> tbf_burst("100mbit"), tbf_burst("20mbit")
    (50000, 32768)
    """
    return max(32 * 1024, int(parse_rate(rate) / 8 / 250))


def shaping_commands(
    ns: str, dev: str, rate: str | None, delay: str | None, *, fair: tuple[str, Sequence[str]] | None = None
) -> list[list[str]]:
    """The ``tc`` commands that shape one direction of a link (device ``dev`` in namespace ``ns``).

    ``rate`` None: unshaped (only the ``netem delay``, if any).  With a delay, ``netem`` is the root
    qdisc (holding up to :data:`NETEM_LIMIT` packets) and the token bucket its child, the layout of
    the netem documentation's rate-and-delay example; the token bucket's burst is at least one 4 ms
    tick of data at the rate (kernel HZ 250) and 32 kB.

    ``fair`` = ``(key, addresses)``, ``key`` ``"dst"`` or ``"src"``: behind the token bucket, one
    queue per peer address instead of one FIFO, served round robin a packet's worth at a time (an
    ``htb`` whose classes never limit, one per address, chosen by ``u32`` on the IPv4 ``key``
    address; anything else, e.g. ARP, its own class): the connections crossing the port share it
    evenly whatever their senders keep queued (theory §56.11).  The token bucket is the same.

    Examples
    --------
    >>> for cmd in shaping_commands("ns0", "eth0", "100mbit", "10ms"):
    ...     print(" ".join(cmd[4:]))
    tc qdisc add dev eth0 root handle 1: netem delay 10ms limit 100000
    tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 100mbit burst 50000 latency 1s
    >>> shaping_commands("ns0", "eth0", None, None)
    []
    >>> for cmd in shaping_commands("ns0", "eth0", "100mbit", None, fair=("dst", ["10.0.0.2"])):
    ...     print(" ".join(cmd[4:]))
    tc qdisc add dev eth0 root handle 10: tbf rate 100mbit burst 50000 latency 1s
    tc qdisc add dev eth0 parent 10:1 handle 20: htb default ff
    tc class add dev eth0 parent 20: classid 20:ff htb rate 100gbit quantum 1514
    tc qdisc add dev eth0 parent 20:ff pfifo limit 100000
    tc class add dev eth0 parent 20: classid 20:1 htb rate 100gbit quantum 1514
    tc qdisc add dev eth0 parent 20:1 pfifo limit 100000
    tc filter add dev eth0 parent 20: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 20:1
    """
    if delay is not None and not re.fullmatch(r"[0-9]*\.?[0-9]+(us|ms|s)", str(delay)):
        raise InvalidArgumentError("delay", f"must look like '1ms', got {delay!r}")
    base = ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev]
    netem = ["netem", "delay", str(delay), "limit", str(NETEM_LIMIT)]
    if rate is None:
        return [base + ["root", *netem]] if delay else []
    tbf = ["tbf", "rate", str(rate), "burst", str(tbf_burst(rate)), "latency", "1s"]
    if delay:
        cmds = [base + ["root", "handle", "1:", *netem], base + ["parent", "1:1", "handle", "10:", *tbf]]
    elif fair is not None:
        cmds = [base + ["root", "handle", "10:", *tbf]]
    else:
        return [base + ["root", *tbf]]
    return cmds + ([] if fair is None else _fair_commands(ns, dev, *fair))


def _fair_commands(ns: str, dev: str, key: str, addresses: Sequence[str]) -> list[list[str]]:
    """An ``htb`` under the token bucket ``10:`` with one never-limiting class per address (see
    :func:`shaping_commands`): a class's packets wait in its own FIFO, and ``htb`` takes the classes
    in turn, ``quantum`` bytes each (deficit round robin)."""
    if key not in ("dst", "src"):
        raise InvalidArgumentError("fair", f"key must be 'dst' or 'src', got {key!r}")
    tc = ["ip", "netns", "exec", ns, "tc"]
    cmds = [tc + ["qdisc", "add", "dev", dev, "parent", "10:1", "handle", "20:", "htb", "default", "ff"]]
    for minor in ["ff", *(f"{k + 1:x}" for k in range(len(addresses)))]:
        cmds.append(tc + ["class", "add", "dev", dev, "parent", "20:", "classid", f"20:{minor}", "htb"])
        cmds[-1] += ["rate", "100gbit", "quantum", "1514"]
        cmds.append(tc + ["qdisc", "add", "dev", dev, "parent", f"20:{minor}", "pfifo", "limit", str(NETEM_LIMIT)])
    for k, addr in enumerate(addresses):
        match = ["u32", "match", "ip", key, f"{addr}/32", "flowid", f"20:{k + 1:x}"]
        cmds.append(tc + ["filter", "add", "dev", dev, "parent", "20:", "protocol", "ip", "prio", "1", *match])
    return cmds


def delay_seconds(delay: str) -> float:
    """Seconds of a ``tc`` time string (``"10ms"``, ``"500us"``, ``"1s"``).

    Examples
    --------
    >>> delay_seconds("10ms"), delay_seconds("500us"), delay_seconds("2s")
    (0.01, 0.0005, 2.0)
    """
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)(us|ms|s)", str(delay))
    if not m:
        raise InvalidArgumentError("delay", f"must look like '1ms', got {delay!r}")
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


@functools.lru_cache(maxsize=1)
def netem_delay_supported() -> bool:
    """Whether this kernel has the ``netem`` qdisc (probed once in a scratch namespace; root only)."""
    name = f"gcsim-netem-probe-{os.getpid()}"
    try:
        _run(["ip", "netns", "add", name])
    except NetemError:
        return False
    try:
        _run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])
        return True
    except NetemError:
        return False
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)


#: How the connections crossing one port direction share it behind its token bucket: ``"fifo"``, one
#: queue (whoever keeps more queued gets more); ``"fair"``, one queue per peer taken in turn
#: (:func:`shaping_commands`, theory §56.11).
SHARING = ("fifo", "fair")

#: Where the kernel lists the TCP congestion control algorithms it has (loaded or built in).
_AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"
_ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
_CC_SYSCTL = "net.ipv4.tcp_congestion_control"
_CC_SYSCTL_PATH = "/proc/sys/net/ipv4/tcp_congestion_control"


def _read_list(path: str) -> tuple[str, ...] | None:
    try:
        with open(path) as fh:
            return tuple(fh.read().split())
    except OSError:
        return None


def available_congestion() -> tuple[str, ...] | None:
    """The TCP congestion control algorithms a rank namespace may take, or None where the kernel does not
    say (not Linux).

    A network namespace other than the host's may only make an algorithm its default when the host
    allows it to everyone (``net.ipv4.tcp_allowed_congestion_control``; the kernel answers EPERM
    otherwise, even to root), so this is the kernel's available algorithms that are also allowed.

    Examples
    --------
    >>> algs = available_congestion()
    >>> algs is None or "reno" in algs     # reno is built in and always allowed
    True
    """
    have, allowed = _read_list(_AVAILABLE_CC), _read_list(_ALLOWED_CC)
    if have is None:
        return None
    return tuple(a for a in have if allowed is None or a in allowed)


def congestion_commands(ns: str, congestion: str | None) -> list[list[str]]:
    """The commands that set namespace ``ns``'s TCP congestion control (theory §56.11).

    The setting is per network namespace and a new namespace inherits the host's, so ``None`` (keep
    the inherited one) sets nothing.  It applies to the connections a rank opens or accepts after it is
    set: the sender's algorithm decides how much it keeps in flight.

    Examples
    --------
    >>> congestion_commands("ns0", "reno")
    [['ip', 'netns', 'exec', 'ns0', 'sysctl', '-q', '-w', 'net.ipv4.tcp_congestion_control=reno']]
    >>> congestion_commands("ns0", None)
    []
    """
    return _congestion_commands(ns, _check_congestion(congestion))


def _congestion_commands(ns: str, checked: str | None) -> list[list[str]]:
    """:func:`congestion_commands` for a setting already checked (by :class:`NetemTopology`)."""
    return [] if checked is None else [["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{_CC_SYSCTL}={checked}"]]


def _check_congestion(congestion: Any) -> str | None:
    """``congestion`` as given when it is None or an algorithm this kernel has, else InvalidArgumentError."""
    if congestion is None:
        return None
    if not isinstance(congestion, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,15}", congestion):
        raise InvalidArgumentError(
            "congestion", f"must be None or a TCP congestion control name like 'cubic', got {congestion!r}"
        )
    usable, have = available_congestion(), _read_list(_AVAILABLE_CC)
    if usable is not None and have is not None and congestion not in usable:
        why = (
            "not in this kernel"
            if congestion not in have
            else "restricted on this host (a network namespace may only take one of "
            "net.ipv4.tcp_allowed_congestion_control)"
        )
        raise InvalidArgumentError("congestion", f"{congestion!r} is {why}; usable here: {', '.join(usable)}")
    return congestion


class NetemTopology:
    """Star of ``N`` rank namespaces around a bridge, every link shaped to ``rate`` (context manager).

    Parameters
    ----------
    N : int
        Number of ranks (1..250).
    rate : str or None
        ``tc`` rate of each link direction, e.g. ``"100mbit"``; ``None`` (or ``"unlimited"``) leaves
        the links unshaped (the same namespaces and bridge, at the speed of veth links).
    delay : str, optional
        One-way delay between two ranks, e.g. ``"1ms"`` (``"10ms"``: 20 ms round trips).
    delay_backend : {"auto", "netem", "nfqueue"}
        How: ``netem`` on each rank's outgoing side, or the NFQUEUE delayer
        (:mod:`gcsim.executor.netdelay`) on each rank's incoming packets; ``auto`` takes netem where
        the kernel has it (:func:`netem_delay_supported`), else the delayer.
    prefix : str, optional
        Namespace name prefix (default ``gcsim-<pid>``).
    congestion : str, optional
        TCP congestion control of every rank's namespace (``"cubic"``, ``"reno"``, ``"bbr"``: one of
        :func:`available_congestion`); None keeps the host's, which new namespaces inherit.  The
        effective one is read back into :attr:`congestion_used` (theory §56.11).
    sharing : {"fifo", "fair"}
        How the connections through one port share it behind its token bucket (:data:`SHARING`):
        one FIFO (default) or one queue per peer taken in turn (theory §56.11).

    Attributes
    ----------
    netns : list of str
        Namespace of each rank.
    addresses : list of str
        IPv4 address of each rank.
    congestion_used : str or None
        The congestion control the ranks' namespaces have once set up (None before).
    """

    ifname = "eth0"

    def __init__(
        self,
        N: int,
        rate: str | None = "100mbit",
        *,
        delay: str | None = None,
        prefix: str | None = None,
        delay_backend: str = "auto",
        congestion: str | None = None,
        sharing: str = "fifo",
    ):
        self.N = check_int("N", N, minimum=1, maximum=250)
        unlimited = rate is None or str(rate).strip().lower() == "unlimited"
        self.rate = "unlimited" if unlimited else str(rate)
        self.rate_bps = math.inf if unlimited else parse_rate(str(rate))
        if delay is not None and not re.fullmatch(r"[0-9]*\.?[0-9]+(us|ms|s)", str(delay)):
            raise InvalidArgumentError("delay", f"must look like '1ms', got {delay!r}")
        self.delay = delay
        if delay_backend not in ("auto", "netem", "nfqueue"):
            raise InvalidArgumentError("delay_backend", f"must be 'auto', 'netem' or 'nfqueue', got {delay_backend!r}")
        self.delay_backend = delay_backend
        self.congestion = _check_congestion(congestion)
        if sharing not in SHARING:
            raise InvalidArgumentError("sharing", f"must be one of {SHARING}, got {sharing!r}")
        self.sharing = sharing
        self.congestion_used: str | None = None
        #: the delayers' reports after close (packets, lateness of the verdicts), one per rank
        self.delay_stats: list[dict] = []
        self._delayers: list[subprocess.Popen] = []
        self.prefix = prefix or f"gcsim-{os.getpid()}"
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", self.prefix):
            raise InvalidArgumentError("prefix", f"must be a short plain name, got {self.prefix!r}")
        self.hub = f"{self.prefix}-hub"
        self.netns = [f"{self.prefix}-r{i}" for i in range(self.N)]
        self.addresses = [f"{_SUBNET}.{i + 1}" for i in range(self.N)]
        self._created: list[str] = []

    def _shape(self, ns: str, dev: str, delay: str | None, key: str) -> None:
        fair = (key, self.addresses) if self.sharing == "fair" else None
        for cmd in shaping_commands(ns, dev, None if math.isinf(self.rate_bps) else self.rate, delay, fair=fair):
            _run(cmd)

    def _start_delayer(self, ns: str) -> None:
        _run(["ip", "netns", "exec", ns, *iptables_rule(self.ifname)])
        cmd = [
            "ip",
            "netns",
            "exec",
            ns,
            sys.executable,
            "-m",
            "gcsim.executor.netdelay",
            str(delay_seconds(str(self.delay))),
        ]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._delayers.append(p)
        line = p.stdout.readline() if p.stdout is not None else ""
        if line.strip() != "ready":
            err = p.stderr.read() if p.stderr is not None else ""
            raise NetemError(f"{' '.join(cmd)}: the delayer did not start ({line.strip() or err})")

    def __enter__(self) -> NetemTopology:
        backend = self.delay_backend
        if self.delay and backend == "auto":
            backend = "netem" if netem_delay_supported() else "nfqueue"
        self.delay_backend_used = backend if self.delay else None
        try:
            _run(["ip", "netns", "add", self.hub])
            self._created.append(self.hub)
            _run(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
            _run(["ip", "-n", self.hub, "link", "set", "br0", "up"])
            for i, ns in enumerate(self.netns):
                _run(["ip", "netns", "add", ns])
                self._created.append(ns)
                # create the pair inside the hub, then move the rank end into its namespace
                _run(["ip", "-n", self.hub, "link", "add", f"v{i}", "type", "veth", "peer", "name", f"p{i}"])
                _run(["ip", "-n", self.hub, "link", "set", f"p{i}", "netns", ns])
                _run(["ip", "-n", ns, "link", "set", f"p{i}", "name", self.ifname])
                _run(["ip", "-n", ns, "addr", "add", f"{self.addresses[i]}/24", "dev", self.ifname])
                _run(["ip", "-n", ns, "link", "set", self.ifname, "up"])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
                for cmd in _congestion_commands(ns, self.congestion):  # checked in __init__
                    _run(cmd)
                _run(["ip", "-n", self.hub, "link", "set", f"v{i}", "master", "br0"])
                _run(["ip", "-n", self.hub, "link", "set", f"v{i}", "up"])
                self._shape(ns, self.ifname, self.delay if backend == "netem" else None, "dst")  # rank -> hub
                self._shape(self.hub, f"v{i}", None, "src")  # hub -> rank
                if backend == "nfqueue":
                    self._start_delayer(ns)
            self.congestion_used = self._read_congestion()
        except BaseException:
            self.close()
            raise
        return self

    def _read_congestion(self) -> str:
        """The congestion control every rank's namespace has (NetemError if they differ)."""
        got = {_run(["ip", "netns", "exec", ns, "sysctl", "-n", _CC_SYSCTL]).strip() for ns in self.netns}
        if len(got) != 1:
            raise NetemError(f"the rank namespaces have different congestion controls: {sorted(got)}")
        return got.pop()

    def link_settings(self) -> dict:
        """What shapes the links, for a results file: rate, burst, delay and how, TCP congestion control.

        Examples
        --------
        >>> NetemTopology(4, "100mbit", delay="1ms", congestion="reno").link_settings()["tbf_burst"]
        50000
        """
        shaped = not math.isinf(self.rate_bps)
        return {
            "rate": self.rate,
            "tbf_burst": tbf_burst(self.rate) if shaped else None,
            "delay": self.delay,
            "delay_backend": getattr(self, "delay_backend_used", None),
            "congestion": self.congestion,
            "congestion_used": self.congestion_used,
            "sharing": self.sharing,
        }

    def close(self) -> None:
        """Delete every namespace this topology created (and with them its links).

        Never raises: a namespace that cannot be deleted (a hung ``ip``, a vanished binary)
        must not hide the error that led here nor keep the others from being deleted.
        """
        for p in self._delayers:
            try:
                p.terminate()
                out, _ = p.communicate(timeout=10)
                self.delay_stats.append(json.loads(out.strip().splitlines()[-1]))
            except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
                p.kill()
        self._delayers.clear()
        for ns in reversed(self._created):
            try:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._created.clear()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def launch_kwargs(self, port: int = 29611) -> dict:
        """Keyword arguments for :func:`gcsim.executor.launcher.launch` / ``run_collectives``."""
        return {
            "netns": list(self.netns),
            "init_method": f"tcp://{self.addresses[0]}:{int(port)}",
            "rank_env": [{"GLOO_SOCKET_IFNAME": self.ifname} for _ in range(self.N)],
        }
