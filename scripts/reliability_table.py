"""Run every bad input and fault in ``scripts/reliability/cases_*.py``; write ``docs/reliability.md``.

Usage::

    .venv/bin/python scripts/reliability_table.py            # rewrite docs/reliability.md
    .venv/bin/python scripts/reliability_table.py --check    # exit 1 if a case misbehaves
    .venv/bin/python scripts/reliability_table.py --only files

Every case runs in a fresh Python process inside its own temporary folder, so a
case can neither see another's files nor leave anything behind, and a hang is
caught by the time limit.  A case *passes* when it gets what it expects: for
``expect="error"`` a deliberate exception (API) or exit status 1/2 with no
Python traceback (CLI), within the time limit.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from reliability import Case  # noqa: E402

_API_WRAPPER = r"""
import sys, traceback, warnings
warnings.simplefilter("always")
try:
    exec(compile(sys.argv[1], "<case>", "exec"), {"__name__": "__case__"})
except BaseException as exc:  # report the exception as the outcome
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    print(f"RAISED {type(exc).__module__}.{type(exc).__name__}: {msg}")
    sys.exit(3)
"""


def load_cases(only: str | None = None) -> list[Case]:
    import reliability

    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules(reliability.__path__), key=lambda i: i.name):
        if not info.name.startswith("cases_"):
            continue
        if only and info.name != f"cases_{only}":
            continue
        cases.extend(importlib.import_module(f"reliability.{info.name}").CASES)
    return cases


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line
    return ""


def run_case(case: Case, python: str = sys.executable) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="gcsim-rel-") as tmp:
        if case.setup:
            subprocess.run([python, "-c", case.setup], cwd=tmp, env=env, check=True, timeout=120, capture_output=True)
        if case.code is not None:
            cmd = [python, "-c", _API_WRAPPER, case.code]
        else:
            cmd = [python, "-m", "gcsim", *case.argv]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=case.timeout, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            return {"outcome": f"HANG (killed after {case.timeout:g} s)", "seconds": case.timeout, "ok": False}
        seconds = time.perf_counter() - t0
        out, err = proc.stdout, proc.stderr
        traceback_seen = "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out
        if case.code is not None:
            raised = [ln for ln in out.splitlines() if ln.startswith("RAISED ")]
            if raised:
                outcome = raised[-1][len("RAISED ") :]
                name = outcome.split(":", 1)[0]
                deliberate = name.startswith("gcsim.") or name.split(".")[-1] in (
                    "ValueError",
                    "TypeError",
                    "FileNotFoundError",
                    "PermissionError",
                    "IsADirectoryError",
                    "NotADirectoryError",
                    "TimeoutError",
                    "OverflowError",
                    "MemoryError",
                )
                ok = case.expect == "error" and deliberate and not name.endswith(("AssertionError", "MemoryError"))
            else:
                warn = _first_line(err) if "Warning" in err else ""
                outcome = ("warning: " + warn) if warn else ("ok: " + (_first_line(out) or "(no output)"))
                ok = (case.expect == "ok") or (case.expect == "warning" and bool(warn))
        else:
            if proc.returncode == 0:
                outcome = "exit 0: " + (_first_line(out) or _first_line(err) or "(no output)")
                ok = case.expect in ("ok", "warning")
            else:
                outcome = f"exit {proc.returncode}: " + (_first_line(err) or _first_line(out))
                ok = case.expect == "error" and proc.returncode in (1, 2) and not traceback_seen
            if traceback_seen:
                outcome += " [TRACEBACK]"
                ok = False
        return {"outcome": outcome, "seconds": seconds, "ok": ok}


def _cell(text: str, width: int = 160) -> str:
    # a table cell is Markdown: escape the pipe, and the brackets that would read as reference links
    text = text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def render(rows: list[tuple[Case, dict]]) -> str:
    lines = [
        "# Reliability: bad inputs and faults",
        "",
        "Every row is one bad input or fault tried against gcsim, and what gcsim answers. The table is",
        "produced by a script, not written by hand; regenerate it with",
        "",
        "```bash",
        ".venv/bin/python scripts/reliability_table.py          # rewrites this file",
        ".venv/bin/python scripts/reliability_table.py --check  # exit 1 if any case misbehaves",
        "```",
        "",
        "Each case runs in a fresh process in its own temporary folder with a time limit (a hang is a",
        "failure). *Expected* is what a clear answer looks like: `error` = a deliberate gcsim exception",
        "(API) or exit status 1/2 with one message line and no traceback (CLI); `ok` = it runs;",
        "`warning` = it runs and warns. The cases live in `scripts/reliability/cases_*.py`.",
        "",
        f"{sum(r['ok'] for _, r in rows)} of {len(rows)} cases behave as expected.",
        "",
        "| # | area | input or fault | expected | what gcsim answers | s | ok |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, (case, res) in enumerate(rows, 1):
        lines.append(
            f"| {i} | {case.area} | {_cell(case.fault, 90)} | {case.expect} | {_cell(res['outcome'])} "
            f"| {res['seconds']:.1f} | {'yes' if res['ok'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if a case misbehaves")
    ap.add_argument("--only", help="one area file (e.g. files for cases_files.py)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "reliability.md"))
    args = ap.parse_args(argv)
    rows = []
    for case in load_cases(args.only):
        res = run_case(case)
        rows.append((case, res))
        mark = "ok " if res["ok"] else "BAD"
        print(
            f"[{mark}] {case.area:9s} {case.fault[:60]:60s} {res['seconds']:6.1f}s  {res['outcome'][:100]}", flush=True
        )
    bad = [c for c, r in rows if not r["ok"]]
    if not args.check and not args.only:
        Path(args.out).write_text(render(rows))
        print(f"wrote {args.out}: {len(rows) - len(bad)}/{len(rows)} as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
