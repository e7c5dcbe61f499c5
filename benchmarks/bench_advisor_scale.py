"""Benchmark: ``gcsim advise`` at cluster scale (issue #22 item 3; docs/guides/advisor.md).

Runs the command ``gcsim advise --workers N --load L --m 2 --stragglers bernoulli:0.1 --top 1000``
in a child process with stdout and stderr piped (not a terminal), for each question of
``QUESTIONS`` (n = 91, 183, 993 and PG(2,97) at n = 9,507, whose candidates the structured routes
of theory §42 evaluate without dense matrices; ``--quick`` leaves out n = 9,507), and records:

* the wall-clock and CPU time of the child (``resource.getrusage(RUSAGE_CHILDREN)``; the machine
  is shared, so the CPU time is the number to compare) and its peak resident memory;
* whether the expected symmetric design (PG(2, q), the question's ``target``) is among the ranked
  candidates, and the head of the table;
* the progress lines the child wrote on its piped stderr (``gcsim: progress: advise screening:
  12/60 candidates (20%), 34 s elapsed, ...``), their count and the first and last of them.

Writes ``benchmarks/results/advisor_scale.json`` (atomically, with provenance and the load
average) and prints one line per question.

Usage::

    .venv/bin/python benchmarks/bench_advisor_scale.py [--only 993 [--merge]] [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from gcsim.io.manifest import atomic_write_text, dumps, provenance

#: (n, load, the design that must be among the candidates, the time limit of the acceptance)
QUESTIONS = [
    (91, 10, "2-(91,10,1) design [PG(2,9)", 60.0),
    (183, 14, "2-(183,14,1) design [PG(2,13)", 60.0),
    (993, 32, "2-(993,32,1) design [PG(2,31)", 60.0),
    (9507, 98, "2-(9507,98,1) design [PG(2,97)", 600.0),
]


def run_question(n: int, load: int, target: str, limit: float, timeout: float) -> dict:
    """One ``gcsim advise`` in a child process with piped output: times, memory, candidates, progress."""
    argv = [sys.executable, "-m", "gcsim", "advise", "--workers", str(n), "--load", str(load), "--m", "2"]
    # the text table (--json turns progress off), every row of it
    argv += ["--stragglers", "bernoulli:0.1", "--top", "1000"]
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")  # a shared machine: multithreaded BLAS oversubscribes it
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [ln for ln in err.splitlines() if ln.startswith("gcsim: progress: advise ")]
    record = {
        "n": n,
        "load": load,
        "argv": argv[1:],
        "returncode": rc,
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # ru_maxrss: the largest child so far, in KiB on Linux
        "peak_rss_mib": after.ru_maxrss / 1024.0,
        "limit_s": limit,
        "within_limit": rc == 0 and wall <= limit,
        "progress_lines": len(lines),
        "first_progress": lines[0] if lines else None,
        "last_progress": lines[-1] if lines else None,
    }
    if rc == 0:
        table = out.splitlines()
        record.update(
            target=target,
            target_found=target in out,
            table_head=table[:12],
        )
    else:
        record["stderr_tail"] = err[-2000:]
    return record


def _run_info(result: dict) -> dict:
    keys = ("load_average_before", "load_average_after", "provenance")
    return {k: result[k] for k in keys if k in result}


def _merged(previous: dict, latest: dict) -> dict:
    """``previous`` with the records of ``latest``'s questions replaced; every record names its run."""
    fresh = {r["n"]: dict(r, run=_run_info(latest)) for r in latest["records"]}
    records = [fresh.pop(r["n"], None) or dict(r, run=r.get("run", _run_info(previous))) for r in previous["records"]]
    records += list(fresh.values())
    ns = ", ".join(str(n) for n in sorted(r["n"] for r in latest["records"]))
    note = f"the records of n = {ns} are from the latest run (--merge); each record's 'run': its load, provenance"
    return dict(latest, records=sorted(records, key=lambda r: r["n"]), note=note)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", type=int, action="append", help="run only the question(s) with this n")
    ap.add_argument("--quick", action="store_true", help="leave out PG(2,97) at n = 9,507 (about 2 minutes)")
    ap.add_argument("--large", action="store_true", help=argparse.SUPPRESS)  # the default now (was: opt-in)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a child is stopped")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "advisor_scale.json"))
    ap.add_argument(
        "--merge",
        action="store_true",
        help="replace only the records of the questions run in an existing --out (each record keeps its run's "
        "load averages and provenance under 'run')",
    )
    args = ap.parse_args()
    questions = [q for q in QUESTIONS if not (args.quick and q[0] > 5000)]
    if args.only:
        questions = [q for q in questions if q[0] in args.only]
    load_before = os.getloadavg()
    records = []
    for n, load, target, limit in questions:
        rec = run_question(n, load, target, limit, args.timeout)
        records.append(rec)
        print(
            f"n={n:>5} load={load:>3}: rc={rec['returncode']} wall {rec['wall_s']:.1f} s, cpu {rec['cpu_s']:.1f} s, "
            f"peak {rec['peak_rss_mib']:.0f} MiB, target found: {rec.get('target_found')}, "
            f"{rec['progress_lines']} progress lines",
            flush=True,
        )
    result = {
        "benchmark": "advisor_scale",
        "question": "gcsim advise --workers N --load L --m 2 --stragglers bernoulli:0.1 (stdout, stderr piped)",
        "records": records,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "provenance": provenance(),
    }
    if args.merge and Path(args.out).exists():
        result = _merged(json.loads(Path(args.out).read_text()), result)
    atomic_write_text(args.out, dumps(result))
    return 0 if all(r["returncode"] == 0 for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
