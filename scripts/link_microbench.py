"""Raw-socket microbenchmarks of the emulated links (theory §56.9): what the token buckets and TCP do.

Each experiment is a :class:`gcsim.executor.allreduce.Schedule` (one program of sends and blocking
receives per rank) replayed on plain TCP sockets between the namespaces of a
:class:`gcsim.executor.netem.NetemTopology`: one connection per pair of ranks, one sender thread per
connection taking its messages in posting order (a send never blocks the program, as in gloo), one
receiver thread per connection logging every ``recv`` (instant, bytes so far).  Every repeat starts at
one instant of the machine's shared monotonic clock, ``--gap`` seconds after the last, so the links
are idle (their buckets full) at each start.  No torch, no gloo: what is left is the links and TCP.

The experiments: ``burst-M`` (one message of ``M`` bytes over an idle link), ``pingpong`` (six 256
KiB messages back and forth: each port idle while the other direction sends), ``fanin`` (two 1 MiB
flows into one rank's downlink at once: the arrival log shows how they share it), and the
collectives' own schedules at ``d = 262144`` and ``4096`` (``ring``, ``tree``, ``straggler-aware``
without a delay; ``straggler-aware-unsignalled`` without its ready signals, theory §56.12), and
``straggler-aware-completion-262144``, what is left of the straggler-aware schedule once a late
straggler arrives (the ready ranks' reduce-scatter and signals over), and ``alltoall-262144``, every
rank sending ``4 ceil(262144/3)`` bytes to each of the three others at once (the completion's bytes on
every port, three connections each way, without its pipeline). For each: the median of the
repeats, and the schedule model's prediction (theory §56.7, §56.10) with a plain rate limit on
payload bytes (``rate``), with the links' token buckets (``tbf``) and with the buckets and TCP's
segment headers (``wire``, the judged model); and the bytes each port's token bucket passed (``tc
-s``) against the payload.

Run as root::

    nice -n -10 .venv/bin/python scripts/link_microbench.py --link 100mbit:1ms --repeats 7 --out /tmp/mb
    .venv/bin/python scripts/link_microbench.py --from-results /tmp/mb/results.json   # the table again
"""

from __future__ import annotations

import argparse
import functools
import json
import queue
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _link_settings import add_link_settings

from gcsim.executor.allreduce import Recv, Schedule, Send, get_collective, wire_bytes
from gcsim.executor.allreduce._linkmodel import simulate
from gcsim.executor.netem import TCP_FRAMING, NetemTopology, delay_seconds, netem_available, parse_rate, tbf_burst

PORT = 29700


def _experiments(d_big: int = 262144, d_small: int = 4096) -> dict[str, Schedule]:
    out: dict[str, Schedule] = {}
    for m in (16384, 65536, 262144, 1048576):
        out[f"burst-{m}"] = Schedule(f"burst-{m}", ((Send(1, m, 0),), (Recv(0, 0),)))
    m = 262144
    a = tuple(op for k in range(0, 6, 2) for op in (Send(1, m, k), Recv(1, k + 1)))
    b = tuple(op for k in range(0, 6, 2) for op in (Recv(0, k), Send(0, m, k + 1)))
    out["pingpong"] = Schedule("pingpong", (a, b))
    out["fanin"] = Schedule("fanin", ((Send(2, 1 << 20, 0),), (Send(2, 1 << 20, 0),), (Recv(0, 0), Recv(1, 0))))
    for name in ("ring", "tree", "straggler-aware"):
        sched = get_collective(name).schedule
        assert sched is not None
        # plain sockets send at once, so the straggler-aware gate is its ready signal here (theory §56.13)
        opts = {"gate": "signal"} if name == "straggler-aware" else {}
        for d in (d_big, d_small):
            out[f"{name}-{d}"] = sched(4, d, 4, straggler=3, **opts)
    sa = get_collective("straggler-aware").schedule
    assert sa is not None
    for d in (d_big, d_small):  # the straggler streaming at once, without the ready signals (theory §56.12)
        out[f"straggler-aware-unsignalled-{d}"] = sa(4, d, 4, straggler=3, gate="none")
    out[f"straggler-aware-completion-{d_big}"] = _completion(sa(4, d_big, 4, straggler=3, gate="signal"))
    out[f"alltoall-{d_big}"] = _alltoall(4, -(-d_big // 3) * 4)
    return out


def _alltoall(N: int, nbytes: int) -> Schedule:
    """Every rank sends ``nbytes`` to every other at once, then receives theirs: each port carries
    ``N − 1`` connections each way, every connection crosses two shared ports, and no message waits
    for another (the straggler-aware completion's load, theory §56.12, without its pipeline)."""
    return Schedule(
        "alltoall",
        tuple(
            tuple(Send(j, nbytes, 0) for j in range(N) if j != i) + tuple(Recv(j, 0) for j in range(N) if j != i)
            for i in range(N)
        ),
    )


def _completion(sched: Schedule) -> Schedule:
    """The straggler-aware schedule after a late straggler arrives: the ready ranks' reduce-scatter and
    signals over (their programs from their first completion step), the straggler holding every signal."""
    s = sched.N - 1
    first = [next(i for i, op in enumerate(p) if isinstance(op, Recv) and op.src == s) for p in sched.programs[:s]]
    start = next(i for i, op in enumerate(sched.programs[s]) if isinstance(op, Send))
    programs = tuple(p[k:] for p, k in zip(sched.programs[:s], first, strict=True)) + (sched.programs[s][start:],)
    return Schedule(f"{sched.name}-completion", programs)


# ---------------------------------------------------------------- worker (inside one namespace)


def _arrived(got: dict[int, int], want: dict[int, int], peer: int) -> bool:
    return got[peer] >= want[peer]


def _worker(spec: dict) -> None:
    rank, addrs, program = spec["rank"], spec["addrs"], spec["program"]
    N = len(addrs)
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((addrs[rank], PORT))
    lst.listen(N)
    conns: dict[int, socket.socket] = {}
    for peer in range(rank + 1, N):
        for _ in range(200):
            try:
                c = socket.create_connection((addrs[peer], PORT), timeout=10)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"rank {rank}: cannot reach {peer}")
        c.sendall(bytes([rank]))
        conns[peer] = c
    lst.settimeout(30)
    while len(conns) < N - 1:
        c, _ = lst.accept()
        conns[c.recv(1)[0]] = c
    for c in conns.values():
        c.settimeout(None)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    got = dict.fromkeys(conns, 0)
    logs: dict[int, list[tuple[float, int]]] = {p: [] for p in conns}
    cond = threading.Condition()
    zeros = memoryview(bytearray(max([op[2] for op in program if op[0] == "send"] + [1])))

    def receiver(p: int) -> None:
        buf = bytearray(1 << 20)
        while True:
            k = conns[p].recv_into(buf)
            if k == 0:
                return
            t = time.monotonic()
            with cond:
                got[p] += k
                logs[p].append((t, got[p]))
                cond.notify_all()

    outq: dict[int, queue.Queue] = {p: queue.Queue() for p in conns}

    def sender(p: int) -> None:
        while (n := outq[p].get()) is not None:
            conns[p].sendall(zeros[:n])

    threads = [threading.Thread(target=receiver, args=(p,), daemon=True) for p in conns]
    threads += [threading.Thread(target=sender, args=(p,), daemon=True) for p in conns]
    for th in threads:
        th.start()
    print("ready", flush=True)
    t0 = float(sys.stdin.readline())
    want = dict.fromkeys(conns, 0)
    finish = []
    for k in range(spec["repeats"]):
        start = t0 + k * spec["gap"]
        time.sleep(max(0.0, start - time.monotonic()))
        for op, peer, n in program:
            if op == "send":
                outq[peer].put(n)
            else:
                want[peer] += n
                with cond:
                    if not cond.wait_for(functools.partial(_arrived, got, want, peer), timeout=60):
                        raise SystemExit(f"rank {rank}: timed out waiting for {peer}")
        finish.append(time.monotonic() - start)
    for p in conns:
        outq[p].put(None)
    for th in threads[len(conns) :]:  # every message handed to the kernel before the sockets close
        th.join(timeout=60)
    print(json.dumps({"finish": finish, "logs": {str(p): [(t - t0, b) for t, b in v] for p, v in logs.items()}}))
    sys.stdout.flush()


# ---------------------------------------------------------------- orchestration


def _flat(sched: Schedule, r: int) -> list[tuple[str, int, int]]:
    """Rank ``r``'s program as (op, peer, bytes); a receive waits for the message's bytes on its connection.

    Posts are left out: a socket takes bytes whether or not the receiver is waiting (no rendezvous)."""
    size = {(s, op.dst, op.tag): op.nbytes for s, p in enumerate(sched.programs) for op in p if isinstance(op, Send)}
    return [
        ("send", op.dst, op.nbytes) if isinstance(op, Send) else ("recv", op.src, size[(op.src, r, op.tag)])
        for op in sched.programs[r]
        if isinstance(op, Send | Recv)
    ]


def _tc_sent(ns: str, dev: str) -> int:
    """Bytes the token bucket of ``dev`` in ``ns`` has passed (``tc -s``: frames with their headers)."""
    out = subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", dev], capture_output=True, text=True).stdout
    tbf = out[out.index("qdisc tbf") :]
    return int(tbf.split("Sent ", 1)[1].split(" bytes", 1)[0])


def _port_bytes(topo: NetemTopology, N: int) -> list[tuple[int, int]]:
    """Per rank, (uplink, downlink) bytes passed so far."""
    return [(_tc_sent(topo.netns[r], topo.ifname), _tc_sent(topo.hub, f"v{r}")) for r in range(N)]


def run_experiment(topo: NetemTopology, sched: Schedule, repeats: int, gap: float) -> dict:
    before = _port_bytes(topo, sched.N)
    procs = []
    for r in range(sched.N):
        spec = {"rank": r, "addrs": topo.addresses[: sched.N], "program": _flat(sched, r), "repeats": repeats}
        spec["gap"] = gap
        cmd = ["ip", "netns", "exec", topo.netns[r], sys.executable, __file__, "--worker", json.dumps(spec)]
        procs.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    t0 = time.monotonic() + 0.3
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{t0!r}\n")
        p.stdin.flush()
    outs = [json.loads(p.communicate(timeout=60 + repeats * gap)[0]) for p in procs]
    per_repeat = [max(o["finish"][k] for o in outs) for k in range(repeats)]
    after = _port_bytes(topo, sched.N)
    ports = [[a - b for a, b in zip(x, y, strict=True)] for x, y in zip(after, before, strict=True)]
    return {"times": per_repeat, "median": statistics.median(per_repeat), "ranks": outs, "port_bytes": ports}


def predictions(link: str, name: str) -> dict[str, float]:
    """The schedule model's time of experiment ``name`` on ``link`` (``RATE:DELAY``): rate, tbf, wire."""
    rate, _, delay = link.partition(":")
    alpha, beta, K = delay_seconds(delay) if delay else 0.0, parse_rate(rate) / 8, tbf_burst(rate)
    sched = _experiments()[name]
    return {
        "rate": float(max(simulate(sched, alpha, beta))),
        "tbf": float(max(simulate(sched, alpha, beta, burst=K))),
        "wire": float(max(simulate(sched, alpha, beta, burst=K, framing=TCP_FRAMING))),
    }


def table(results: dict) -> str:
    """Markdown: per experiment the median [min, max] of the repeats, the three predictions, the ratio
    of the median to the judged one, and the uplinks' framed bytes over the payload."""
    cc = results.get("congestion") or "not recorded (the host's default)"
    lines = [
        f"link {results['link']}, TCP congestion control {cc}, "
        f"{len(next(iter(results['rows'].values()))['times'])} repeats",
        "",
        "| experiment | median s [min, max] | rate s | tbf s | wire s | median/wire | uplinks / payload "
        "| rank 0's uplink / its framed sends |",
        "|---|---|---|---|---|---|---|---|",
    ]
    exps = _experiments()
    for name, res in results["rows"].items():
        pred = predictions(results["link"], name)
        t = res["times"]
        payload = sum(exps[name].bytes_sent) * len(t)
        frames = sum(up for up, _ in res["port_bytes"])
        framed0 = sum(wire_bytes(op.nbytes, TCP_FRAMING) for op in exps[name].programs[0] if isinstance(op, Send))
        lines.append(
            f"| {name} | {res['median']:.4f} [{min(t):.4f}, {max(t):.4f}] | {pred['rate']:.4f} | "
            f"{pred['tbf']:.4f} | {pred['wire']:.4f} | {res['median'] / pred['wire']:.2f} | {frames / payload:.4f} "
            f"| {res['port_bytes'][0][0] / (framed0 * len(t)):.4f} |"
        )
    return "\n".join(lines)


def arrivals(results: dict, name: str, step_ms: int = 20) -> str:
    """Per receiving rank and connection, the kB received by each ``step_ms`` of every repeat of
    experiment ``name`` (from the receivers' logs): how the connections shared the ports over time."""
    res, gap = results["rows"][name], results["gap"]
    lines = []
    for k, total in enumerate(res["times"]):
        lines.append(f"repeat {k}: {total:.4f} s; kB by {step_ms} ms steps")
        steps = range(0, int(total * 1000) + 2 * step_ms, step_ms)
        for rank, out in enumerate(res["ranks"]):
            for src, log in out["logs"].items():
                before = [b for t, b in log if t < k * gap]
                base = before[-1] if before else 0
                mine = [(1000 * (t - k * gap), b - base) for t, b in log if k * gap <= t < (k + 1) * gap]
                if mine:
                    got = [max([b for t, b in mine if t <= ms], default=0) // 1000 for ms in steps]
                    lines.append(f"  rank {rank} from {src}: {got}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--link", default="100mbit:1ms", help="RATE:DELAY (default 100mbit:1ms)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--gap", type=float, default=0.5, help="seconds between repeat starts (idle links)")
    p.add_argument("--only", nargs="+", default=None, help="experiment names (default: all)")
    add_link_settings(p)
    p.add_argument("--out", type=Path, default=None, help="write results.json here")
    p.add_argument("--from-results", type=Path, default=None, help="print the table of a stored results.json")
    p.add_argument("--arrivals", default=None, help="with --from-results: the arrival curves of this experiment")
    args = p.parse_args(argv)
    if args.worker is not None:
        _worker(json.loads(args.worker))
        return 0
    if args.from_results is not None:
        stored = json.loads(args.from_results.read_text())
        print(arrivals(stored, args.arrivals) if args.arrivals else table(stored))
        return 0
    ok, why = netem_available()
    if not ok:
        print(f"skipped: {why}")
        return 0
    rate, _, delay = args.link.partition(":")
    alpha, beta, K = delay_seconds(delay) if delay else 0.0, parse_rate(rate) / 8, tbf_burst(rate)
    exps = _experiments()
    names = args.only or list(exps)
    results = {"link": args.link, "alpha": alpha, "beta": beta, "burst": K, "gap": args.gap, "rows": {}}
    with NetemTopology(4, rate, delay=delay or None, congestion=args.congestion, sharing=args.sharing) as topo:
        results["link_settings"] = topo.link_settings()
        results["congestion"] = topo.congestion_used
        print(f"TCP congestion control in the rank namespaces: {topo.congestion_used}", flush=True)
        for name in names:
            sched = exps[name]
            res = run_experiment(topo, sched, args.repeats, args.gap)
            res["rate_only"] = float(max(simulate(sched, alpha, beta)))
            res["bucket"] = float(max(simulate(sched, alpha, beta, burst=K)))
            results["rows"][name] = res
            payload = sum(sched.bytes_sent) * args.repeats
            frames = sum(up for up, _ in res["port_bytes"])
            print(
                f"{name:24s} uplinks passed {frames} bytes for {payload} payload bytes: {frames / payload:.4f}; "
                f"(up, down) per rank {res['port_bytes']}"
            )
            print(
                f"{name:24s} median {res['median']:.4f}  rate-only {res['rate_only']:.4f} "
                f"({res['median'] / res['rate_only']:.2f})  bucket {res['bucket']:.4f} "
                f"({res['median'] / res['bucket']:.2f})  all {[round(x, 4) for x in res['times']]}",
                flush=True,
            )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
