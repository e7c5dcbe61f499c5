"""How fast the ``gcsim`` command starts: ``gcsim --help`` and ``gcsim --version``, median of N runs.

Each run is a fresh process (the installed ``gcsim`` script next to this interpreter, else
``python -m gcsim``), timed from start to exit.  The goal of issue #34 is a median of at most
0.5 s for both; ``tests/test_cli_startup.py`` checks, without timing, that building the parser
imports no heavy module.

Usage::

    .venv/bin/python benchmarks/bench_cli_startup.py             # 5 runs of each
    .venv/bin/python benchmarks/bench_cli_startup.py --runs 11 --json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 0.5


def command() -> list[str]:
    """The ``gcsim`` entry point of this interpreter's environment (``python -m gcsim`` without one)."""
    script = Path(sys.executable).with_name("gcsim")
    if script.exists():
        return [str(script)]
    found = shutil.which("gcsim")
    return [found] if found else [sys.executable, "-m", "gcsim"]


def time_runs(argv: list[str], runs: int) -> list[float]:
    """Wall-clock seconds of ``runs`` fresh processes running ``argv`` (each must exit 0)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    base = command()
    rows: dict[str, dict[str, float]] = {}
    samples: dict[str, list[float]] = {}
    for flag in ("--help", "--version"):
        samples[flag] = times = time_runs([*base, flag], args.runs)
        rows[flag] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}
    ok = all(r["median_s"] <= GOAL_S for r in rows.values())
    if args.json:
        print(
            json.dumps({"command": base, "goal_s": GOAL_S, "ok": ok, "results": rows, "runs": samples}, sort_keys=True)
        )
    else:
        print(f"{' '.join(base)}  ({args.runs} runs each, goal: median <= {GOAL_S} s)")
        for flag, r in rows.items():
            print(f"  {flag:<10} median {r['median_s']:.3f} s  (min {r['min_s']:.3f}, max {r['max_s']:.3f})")
        print("goal met" if ok else "goal NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
