#!/usr/bin/env python
"""On the wire: capture every rank's link of an emulated topology while a command runs (theory §56.12).

The capture: ``tcpdump`` (headers only) on the hub's side of each rank's link (``v<i>`` in the hub
namespace of the :class:`gcsim.executor.netem.NetemTopology` the command creates): a rank's uplink
as the hub receives it, after the rank's token bucket, and its downlink as the hub sends it, after
the downlink's bucket. The report: the *calls* are the straggler's (by default the last rank's)
bursts of data segments, apart by more than ``--gap`` seconds, each until the links fall idle for
``--idle`` seconds; per call, when the straggler's first byte came after the others' first (their traffic before it:
a reduce-scatter during its delay), for every other rank the span from its first to its last data segment
sent and how busy its uplink was in that span (bytes with TCP's per-segment headers over the rate),
the same for the straggler's downlink, and the data segments seen twice on a link (retransmissions).
Needs root and ``tcpdump``; without them it says why and exits 0 having run nothing.

Run as root::

    nice -n -10 .venv/bin/python scripts/wire_capture.py --out /tmp/wire -- .venv/bin/python \\
        scripts/collectives_bench.py --links 100mbit:1ms --sizes 262144 --delays 0.3 \\
        --collectives straggler-aware --repeats 3 --warmup 1 --congestion bbr
    .venv/bin/python scripts/wire_capture.py --report /tmp/wire --rate 100mbit
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from gcsim.executor.allreduce import wire_bytes
from gcsim.executor.netem import TCP_FRAMING, parse_rate

_SEGMENT = re.compile(r"([\d.]+) IP (\d+\.\d+\.\d+\.(\d+))\.\d+ > (\d+\.\d+\.\d+\.(\d+))\.\d+: .*?seq (\d+):(\d+)")
_HUB = re.compile(r"gcsim-\d+-hub")


def parse(text: str) -> list[tuple[float, int, int, int, int]]:
    """Data segments of ``tcpdump -n -tt -S`` output as ``(time, src rank, dst rank, seq, end)``; a
    rank is its address's last byte minus 1 (the topology's numbering)."""
    out = []
    for line in text.splitlines():
        m = _SEGMENT.match(line)
        if m:
            t, _, src, _, dst, a, b = m.groups()
            out.append((float(t), int(src) - 1, int(dst) - 1, int(a), int(b)))
    return out


def report(
    links: dict[int, list[tuple[float, int, int, int, int]]],
    rate_bps: float,
    straggler: int,
    gap: float,
    min_bytes: int = 1000,
    idle: float = 0.05,
) -> str:
    """The per-call table of the module docstring from the parsed captures (``links[i]``: rank ``i``'s
    link); the calls and the spans count only segments of at least ``min_bytes`` payload bytes (the
    collective's data, not gloo's small control messages and barriers)."""
    beta = rate_bps / 8
    bulk = {r: [x for x in segs if x[4] - x[3] >= min_bytes] for r, segs in links.items()}
    starts: list[list[float]] = []
    for t, src, *_ in bulk.get(straggler, []):
        if src == straggler:
            if not starts or t - starts[-1][1] > gap:
                starts.append([t, t])
            starts[-1][1] = t
    lines = []
    times = sorted(x[0] for segs in bulk.values() for x in segs)
    among = sorted(x[0] for segs in bulk.values() for x in segs if straggler not in (x[1], x[2]))
    prev_end = float("-inf")
    for k, (t0, _) in enumerate(starts):
        # the call's completion: its data from the straggler's first segment until the links fall idle
        t_end = t0
        for t in times[bisect.bisect_left(times, t0) :]:
            if t - t_end > idle:
                break
            t_end = t
        t_end += 1e-9
        cells = []
        early = [t for t in among if prev_end < t < t0]
        if early:  # the ready ranks' own traffic before the straggler's (a reduce-scatter during its delay)
            cells.append(f"straggler's first byte {1000 * (t0 - early[0]):.1f} ms after the others' first")
        prev_end = t_end
        for rank in sorted(bulk):
            seg = [s for s in bulk[rank] if t0 <= s[0] < t_end]
            up = [s for s in seg if s[1] == rank] if rank != straggler else []
            down = [s for s in seg if s[2] == rank] if rank == straggler else []
            for name, xs in (("uplink", up), ("downlink", down)):
                if len(xs) > 1:
                    a, b = xs[0][0], xs[-1][0]
                    busy = sum(wire_bytes(e - s, TCP_FRAMING) for *_, s, e in xs) / (beta * (b - a))
                    span = f"{1000 * (a - t0):.0f}-{1000 * (b - t0):.0f} ms"
                    cells.append(f"rank {rank} {name} {span} {100 * busy:.0f} %")
        lines.append(f"call {k}: " + "; ".join(cells))
    twice = 0
    total = 0
    for segs in links.values():
        seen: dict[tuple[int, int], set] = collections.defaultdict(set)
        for _, src, dst, a, b in segs:
            total += 1
            twice += (a, b) in seen[(src, dst)]
            seen[(src, dst)].add((a, b))
    lines.append(f"data segments seen twice on a link (retransmissions): {twice} of {total}")
    return "\n".join(lines)


def _hubs() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return set(_HUB.findall(out))


def capture(out: Path, command: list[str], wait: float = 60.0) -> int:
    """Run ``command``; once its topology's hub namespace exists, ``tcpdump`` every ``v<i>`` into ``out``."""
    before = _hubs()
    proc = subprocess.Popen(command)
    dumps: list[subprocess.Popen] = []
    deadline = time.monotonic() + wait
    while proc.poll() is None and not dumps and time.monotonic() < deadline:
        new = _hubs() - before
        if new:
            hub = new.pop()
            time.sleep(0.5)  # the rank links are added right after the hub
            links = subprocess.run(["ip", "-n", hub, "-o", "link"], capture_output=True, text=True).stdout
            for dev in sorted(set(re.findall(r"\d+: (v\d+)@", links))):
                cmd = ["ip", "netns", "exec", hub, "tcpdump", "-i", dev, "-n", "-s", "96", "-B", "16384"]
                dumps.append(subprocess.Popen([*cmd, "-w", str(out / f"{dev}.pcap")], stderr=subprocess.DEVNULL))
        time.sleep(0.02)
    rc = proc.wait()
    for d in dumps:
        d.terminate()
        d.wait(timeout=30)
    return rc


def load(out: Path) -> dict[int, list[tuple[float, int, int, int, int]]]:
    """The captures of :func:`capture` in ``out``, parsed, by rank."""
    links = {}
    for path in sorted(out.glob("v*.pcap")):
        text = subprocess.run(["tcpdump", "-r", str(path), "-n", "-tt", "-S"], capture_output=True, text=True).stdout
        links[int(path.stem[1:])] = parse(text)
    return links


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="capture into this folder, running the command after --")
    p.add_argument("--report", type=Path, help="print the report of a folder of captures")
    p.add_argument("--rate", default="100mbit", help="the links' rate, for how busy a port was (default 100mbit)")
    p.add_argument("--straggler", type=int, default=None, help="the straggler's rank (default: the last)")
    p.add_argument("--gap", type=float, default=0.25, help="seconds between two calls' straggler bursts")
    p.add_argument("--idle", type=float, default=0.05, help="seconds without data that end a call")
    p.add_argument("--min-bytes", type=int, default=1000, help="payload bytes of a segment that counts (default 1000)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- and the command that creates the topology")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if (args.out is None) == (args.report is None):
        p.error("give --out DIR -- COMMAND ... or --report DIR")
    if shutil.which("tcpdump") is None:
        print("skipped: tcpdump is not installed (Debian: apt-get install tcpdump)")
        return 0
    if args.out is not None:
        if not command:
            p.error("--out needs the command after --")
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            print("skipped: capturing in the topology's namespaces needs root")
            return 0
        args.out.mkdir(parents=True, exist_ok=True)
        rc = capture(args.out, command)
        if rc != 0:
            return rc
    folder = args.out if args.out is not None else args.report
    links = load(folder)
    if not links:
        raise SystemExit(f"no captures (v<i>.pcap) in {folder}")
    straggler = max(links) if args.straggler is None else args.straggler
    print(report(links, parse_rate(args.rate), straggler, args.gap, args.min_bytes, args.idle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
