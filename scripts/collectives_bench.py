#!/usr/bin/env python
"""Collectives side by side: ring, tree, halving-doubling, straggler-aware, CERAR over emulated links.

For each link ``RATE:DELAY`` (a :class:`gcsim.executor.netem.NetemTopology`: every rank's link shaped
to RATE each way, DELAY one way; root only), each vector length and each straggler delay (the last
rank starts that many seconds late; 0 = none), the registered collectives
(:mod:`gcsim.executor.allreduce`) run on the same seeded float32 vectors.  Reported per row: the median
time over ``--repeats`` runs with its order-statistic 95 % interval, the prediction of the link-level
schedule model of theory §56.7 (``beta`` = RATE, ``alpha`` = DELAY + ``--overhead``) and the closed form of
§56.1, their ratio, whether the row is link-bound (§56.8), and the bytes each rank sent (counted)
beside the predicted ones.  ``--calibration`` takes the results.json of a separate run and fits a
per-message software cost per link from its ring rows, for the latency-bound rows.  Without root (or
without ``ip``/``tc``) it prints why and exits 0 with nothing run.

Example (a few minutes; root)::

    .venv/bin/python scripts/collectives_bench.py --links 100mbit:1ms 20mbit:10ms --sizes 262144 \\
        --delays 0 0.3 --repeats 9 --out results/collectives
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from _link_settings import add_link_settings


def _link(text: str) -> tuple[str, str | None]:
    rate, _, delay = text.partition(":")
    return rate, (delay or None)


def _yes(x: bool | None) -> str:
    return "–" if x is None else ("yes" if x else "no")


def table_markdown(result: dict) -> str:
    """The result table in Markdown (one row per link, size, straggler delay and collective)."""
    head = (
        "| link | d | straggler delay s | collective | median s [95 % CI] | predicted s (schedule) | closed form s "
        "| median/predicted | after arrival: (median − delay)/(predicted − delay) | bandwidth share | link-bound "
        "| within 15 % (whole run / after arrival) | calibrated s (within 15 %: whole / after) "
        "| bytes sent per rank (measured = predicted) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in result["rows"]:
        lo, hi = r["median_ci"]
        link = f"{r['link']} / {r['link_delay'] or '0'}"
        sent = "/".join(str(b) for b in r["bytes_sent"])
        cal = "–"
        if "calibrated_s" in r:
            cal = f"{r['calibrated_s']:.4f} ({_yes(r['calibrated_within_15pct'])} / {_yes(_cal_after(r))})"
        lines.append(
            f"| {link} | {r['d']} | {r['delay']:g} | {r['collective']} "
            f"| {r['median_s']:.4f} [{lo:.4f}, {hi:.4f}] | {r['predicted_s']:.4f} | {r['closed_form_s']:.4f} "
            f"| {r['ratio']:.2f} | {r['after_ratio']:.2f} | {r['bandwidth_share']:.2f} | {_yes(r['link_bound'])} "
            f"| {_yes(r['within_15pct'])} / {_yes(r['after_within_15pct'])} "
            f"| {cal} | {sent} ({'yes' if r['bytes_match'] else 'NO'}) |"
        )
    return head + "\n".join(lines) + "\n"


def _cal_after(r: dict) -> bool | None:
    return r.get("calibrated_after_within_15pct")


def tally(result: dict) -> str:
    """Counts of rows within 15 %: all, link-bound (schedule model), latency-bound (calibrated), closed form."""
    rows = result["rows"]
    link = [r for r in rows if r["link_bound"]]
    lat = [r for r in rows if not r["link_bound"]]
    closed = sum(abs(r["median_s"] / r["closed_form_s"] - 1) <= 0.15 for r in rows)
    settings = {(r.get("link_settings") or {}).get("congestion_used") for r in rows}
    cc = ", ".join(sorted(x for x in settings if x)) or "not recorded (the host's default)"
    out = [
        f"TCP congestion control in the rank namespaces: {cc}",
        f"model: ports {result.get('bucket', 'wire')}; each message waits for its receive to be posted "
        f"(rendezvous, §56.13): {'yes' if result.get('rendezvous') else 'no'}",
        f"bytes match: {sum(r['bytes_match'] for r in rows)}/{len(rows)}",
        f"within 15 % of the schedule model: {sum(r['within_15pct'] for r in rows)}/{len(rows)}",
        f"link-bound rows within 15 %: {sum(r['within_15pct'] for r in link)}/{len(link)}",
        f"link-bound rows within 15 % after the straggler's arrival: "
        f"{sum(r['after_within_15pct'] for r in link)}/{len(link)}",
        f"latency-bound rows within 15 % (uncalibrated): {sum(r['within_15pct'] for r in lat)}/{len(lat)}",
        f"median within 15 % of the closed form: {closed}/{len(rows)}",
    ]
    if all("calibrated_s" in r for r in lat) and lat:
        out.append(
            f"latency-bound rows within 15 % of the calibrated model: "
            f"{sum(r['calibrated_within_15pct'] for r in lat)}/{len(lat)} "
            f"(after the straggler's arrival: {sum(bool(_cal_after(r)) for r in lat)}/{len(lat)})"
        )
    worst = max((r.get("error_over_bound", 0.0) for r in rows), default=0.0)
    out.append(f"largest error/bound: {worst:.2f}; late starts: {sum(r.get('late_starts', 0) for r in rows)}")
    return "\n".join(out) + "\n"


def measure(args: argparse.Namespace, calibration: dict[str, float] | None, held: bool) -> dict:
    """Run the table over emulated links (``collectives_table``) with the script's arguments."""
    from gcsim.executor.collectives_bench import collectives_table

    same = ("delays", "repeats", "warmup", "seed", "overhead", "collectives", "bucket", "congestion", "sharing")
    kw = {name: getattr(args, name) for name in same}
    kw["rendezvous"] = held
    links = [_link(x) for x in args.links]
    options = _options(args.option)
    return collectives_table(args.workers, args.sizes, links=links, calibration=calibration, options=options, **kw)


def _options(items: list[str]) -> dict[str, dict]:
    """``NAME:KEY=VALUE`` items as ``{NAME: {KEY: VALUE}}``, VALUE read as JSON (``8``, ``false``) or kept a string."""
    out: dict[str, dict] = {}
    for item in items:
        name, sep, rest = item.partition(":")
        key, eq, value = rest.partition("=")
        if not (sep and eq and name and key):
            raise SystemExit(f"--option {item!r}: expected NAME:KEY=VALUE, e.g. straggler-aware:gate=none")
        try:
            out.setdefault(name, {})[key] = json.loads(value)
        except json.JSONDecodeError:
            out.setdefault(name, {})[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=4, help="ranks N (default 4)")
    p.add_argument("--links", nargs="+", default=["100mbit:1ms"], help="RATE:DELAY per link (default 100mbit:1ms)")
    p.add_argument("--sizes", nargs="+", type=int, default=[262144], help="float32 scalars per vector")
    p.add_argument("--delays", nargs="+", type=float, default=[0.0, 0.3], help="straggler delays, seconds")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overhead", type=float, default=0.0, help="seconds added to alpha per message (default 0)")
    p.add_argument("--collectives", nargs="+", default=None, help="registered names (default: all)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="a collective's option, e.g. straggler-aware:gate=none or straggler-aware:pieces=4 (repeatable)",
    )
    p.add_argument(
        "--calibration",
        type=Path,
        default=None,
        help="results.json of a separate calibration run: its ring rows fit a per-message cost per link",
    )
    p.add_argument(
        "--from-results",
        type=Path,
        default=None,
        help="recompute the predictions and statistics of a stored results.json with the current model (runs nothing)",
    )
    p.add_argument(
        "--bucket",
        choices=("none", "frame", "tbf", "wire"),  # gcsim.executor.collectives_bench.BUCKET_MODELS
        default="wire",
        help="port model: none = rate beta on payload bytes; frame = the same on payload and TCP's segment "
        "headers; tbf = the links' token buckets (§56.7); "
        "wire = the buckets and TCP's segment headers (default, judged; theory §56.10)",
    )
    p.add_argument(
        "--rendezvous",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="model each message as waiting until its receive is posted and the notice has crossed the link, "
        "as gloo sends (theory §56.13); default: on when measuring, as recorded with --from-results "
        "(off for results recorded before the model had it)",
    )
    add_link_settings(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--out", type=Path, default=None, help="write results.json and table.md here")
    args = p.parse_args(argv)

    from gcsim.executor.collectives_bench import fit_overhead, resummarize

    judged = json.loads(args.from_results.read_text()) if args.from_results is not None else None
    held = args.rendezvous
    if held is None:  # the judged run's model: as recorded, or gloo's when measuring
        held = judged.get("rendezvous", False) if judged is not None else True
    calibration = None
    if args.calibration is not None:  # the calibration run's predictions recomputed with the judged run's model
        stored = json.loads(args.calibration.read_text())
        calibration = fit_overhead(resummarize(stored, overhead=args.overhead, bucket=args.bucket, rendezvous=held))
    if judged is not None:
        result = resummarize(
            judged, overhead=args.overhead, calibration=calibration, bucket=args.bucket, rendezvous=held
        )
        result["measured_by"] = result.get("measured_by", result.get("command"))
    else:
        result = measure(args, calibration, held)
    result["command"] = "scripts/collectives_bench.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if result["skipped"]:
        print(f"skipped: {result['skipped']}", file=sys.stderr)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "table.md").write_text(table_markdown(result) + "\n" + tally(result))
    if args.json:
        print(json.dumps(result, indent=1))
    elif not result["skipped"]:
        print(table_markdown(result))
        print(tally(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
