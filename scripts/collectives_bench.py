#!/usr/bin/env python
"""Collectives side by side: ring, tree, halving-doubling, straggler-aware, CERAR over emulated links.

For each link ``RATE:DELAY`` (a :class:`gcsim.executor.netem.NetemTopology`: every rank's link shaped
to RATE each way, DELAY one way; root only), each vector length and each straggler delay (the last
rank starts that many seconds late; 0 = none), the registered collectives
(:mod:`gcsim.executor.allreduce`) run on the same seeded float32 vectors.  Reported per row: the mean
time over ``--repeats`` runs with its 95 % t interval, the prediction of the alpha-beta model of
theory §56.1 (``beta`` = RATE, ``alpha`` = DELAY + ``--overhead``), their ratio, and the bytes each rank
sent (counted) beside the predicted ones.  Without root (or without ``ip``/``tc``) it prints why
and exits 0 with nothing run.

Example (a few minutes; root)::

    .venv/bin/python scripts/collectives_bench.py --links 100mbit:1ms 20mbit:10ms --sizes 262144 \\
        --delays 0 0.3 --repeats 5 --out results/collectives
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def _link(text: str) -> tuple[str, str | None]:
    rate, _, delay = text.partition(":")
    return rate, (delay or None)


def table_markdown(result: dict) -> str:
    """The result table in Markdown (one row per link, size, straggler delay and collective)."""
    head = (
        "| link | d | straggler delay s | collective | rounds | mean s [95 % CI] | predicted s | measured/predicted "
        "| within 15 % | bytes sent per rank (measured = predicted) |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in result["rows"]:
        lo, hi = r["ci"]
        link = f"{r['link']} / {r['link_delay'] or '0'}"
        sent = "/".join(str(b) for b in r["bytes_sent"])
        lines.append(
            f"| {link} | {r['d']} | {r['delay']:g} | {r['collective']} | {r['rounds']} "
            f"| {r['mean_s']:.4f} [{lo:.4f}, {hi:.4f}] | {r['predicted_s']:.4f} | {r['ratio']:.2f} "
            f"| {'yes' if r['within_15pct'] else 'no'} | {sent} ({'yes' if r['bytes_match'] else 'NO'}) |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=4, help="ranks N (default 4)")
    p.add_argument("--links", nargs="+", default=["100mbit:1ms"], help="RATE:DELAY per link (default 100mbit:1ms)")
    p.add_argument("--sizes", nargs="+", type=int, default=[262144], help="float32 scalars per vector")
    p.add_argument("--delays", nargs="+", type=float, default=[0.0, 0.3], help="straggler delays, seconds")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overhead", type=float, default=0.0, help="seconds added to alpha per round (default 0)")
    p.add_argument("--collectives", nargs="+", default=None, help="registered names (default: all)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--out", type=Path, default=None, help="write results.json and table.md here")
    args = p.parse_args(argv)

    from gcsim.executor.collectives_bench import collectives_table

    result = collectives_table(
        args.workers,
        args.sizes,
        links=[_link(x) for x in args.links],
        delays=args.delays,
        repeats=args.repeats,
        warmup=args.warmup,
        seed=args.seed,
        overhead=args.overhead,
        collectives=args.collectives,
    )
    result["command"] = "scripts/collectives_bench.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if result["skipped"]:
        print(f"skipped: {result['skipped']}", file=sys.stderr)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "table.md").write_text(table_markdown(result))
    if args.json:
        print(json.dumps(result, indent=1))
    elif not result["skipped"]:
        print(table_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
