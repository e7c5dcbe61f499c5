"""Run every bad input and fault in ``scripts/reliability/cases_*.py``; write ``docs/reliability.md``.

Usage::

    .venv/bin/python scripts/reliability_table.py            # rewrite docs/reliability.md
    .venv/bin/python scripts/reliability_table.py --check    # exit 1 if a case misbehaves or the table differs
    .venv/bin/python scripts/reliability_table.py --only files
    .venv/bin/python scripts/reliability_table.py --json results.json --jobs 2

``tests/test_reliability.py`` runs the same cases (``make test``): each case must behave as
expected, and ``docs/reliability.md`` must be the table this script renders from that run.

Every case runs in its own process inside its own temporary folder, so a case can neither see
another's files nor leave anything behind, and a hang is caught by the time limit (the case's
process group is killed).  The processes are forked from one parent that has imported NumPy,
SciPy and gcsim once (a case's own work is all it pays for; the cases did not start 317 Python
interpreters), with stdin on ``/dev/null`` and stdout/stderr on files, as a piped ``python -m gcsim``
would have them.  A case *passes* when it gets what it expects: for ``expect="error"`` a
deliberate exception (API) or exit status 1/2 with no Python traceback (CLI), within the time
limit.  The table holds no timings and the case folder is written ``<case>``, so the same code
gives the same table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from reliability import Case  # noqa: E402

#: Where the table lives.
TABLE = ROOT / "docs" / "reliability.md"
#: Modules the parent imports once before forking the cases (their import time is not the cases').
_PRELOAD = (
    "numpy",
    "scipy.sparse",
    "scipy.linalg",
    "scipy.stats",
    "gcsim",
    "gcsim.coding",
    "gcsim.combinatorics",
    "gcsim.advisor",
    "gcsim.cerar",
    "gcsim.catalogue",
    "gcsim.app.cli",
)
#: Exceptions a case may raise as a deliberate refusal besides gcsim's own.
_DELIBERATE = (
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
#: Exit status of an API case that raised (its stdout's last ``RAISED`` line says what).
_RAISED = 3
#: Seconds a case's setup may take on top of the case's own time limit.
_SETUP_SECONDS = 60.0


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


#: Exit status of a case whose setup failed (its setup log says why).
_SETUP_FAILED = 4


def _child(case: Case, folder: str, logs: str) -> None:
    """In the forked process: the case's folder and streams, its setup, then the case; never returns."""
    status = 1
    try:
        os.setpgid(0, 0)  # the case and whatever it starts: one group, killed together on a time-out
        os.chdir(folder)
        _redirect(os.devnull, os.path.join(logs, "setup.out"), os.path.join(logs, "setup.err"))
        if case.setup:
            try:
                exec(compile(case.setup, "<setup>", "exec"), {"__name__": "__setup__"})
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(_SETUP_FAILED)
        sys.stdout.flush()
        sys.stderr.flush()
        _redirect(os.devnull, os.path.join(logs, "out"), os.path.join(logs, "err"))
        status = _run_in_child(case.code, case.argv)
    except BaseException:  # the harness itself failed: say so on the case's stderr
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _redirect(stdin: str, stdout: str, stderr: str) -> None:
    """Point file descriptors 0, 1 and 2 at these files (created for writing)."""
    for fd, path, mode in (
        (0, stdin, os.O_RDONLY),
        (1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        target = os.open(path, mode, 0o600)
        os.dup2(target, fd)
        os.close(target)


def _run_in_child(code: str | None, argv: list[str] | None) -> int:
    """Run API source (a raise is reported as ``RAISED <type>: <first line>``) or the ``gcsim`` command."""
    import warnings

    if code is not None:
        warnings.simplefilter("always")
        try:
            exec(compile(code, "<case>", "exec"), {"__name__": "__case__"})
        except BaseException as exc:  # report the exception as the outcome
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            print(f"RAISED {type(exc).__module__}.{type(exc).__name__}: {msg}")
            return _RAISED
        return 0
    from gcsim.app.cli import main  # as python -m gcsim does (gcsim/__main__.py)

    sys.argv = ["gcsim", *(argv or [])]
    try:
        result = main()
    except SystemExit as exc:
        result = exc.code
    except BaseException:  # what the interpreter would print for an uncaught exception
        traceback.print_exc()
        return 1
    if result is None:
        return 0
    if isinstance(result, int):
        return result
    print(result, file=sys.stderr)
    return 1


class _Running:
    """One forked case: its process, folder, capture files and deadline."""

    def __init__(self, index: int, case: Case) -> None:
        self.index, self.case = index, case
        self.folder = tempfile.mkdtemp(prefix="gcsim-rel-")
        self.logs = tempfile.mkdtemp(prefix="gcsim-rel-log-")  # outside the case's folder
        sys.stdout.flush()
        sys.stderr.flush()
        self.start = time.perf_counter()
        self.deadline = self.start + case.timeout + (_SETUP_SECONDS if case.setup else 0.0)
        pid = os.fork()
        if pid == 0:
            _child(case, self.folder, self.logs)
        self.pid = pid

    def kill(self) -> None:
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
            except OSError:
                pass

    def text(self, name: str) -> str:
        try:
            with open(os.path.join(self.logs, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def cleanup(self) -> None:
        try:  # whatever the case's processes left in its group
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        for folder in (self.folder, self.logs):
            _remove_tree(folder)


def _remove_tree(folder: str) -> None:
    import shutil

    def force(func, path, _exc):  # a case may leave a read-only folder behind
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(folder, onexc=force) if sys.version_info >= (3, 12) else shutil.rmtree(folder, onerror=force)


def _outcome(case: Case, status: int, out: str, err: str, folder: str) -> dict:
    """What the case got and whether that is what it expects (the rules of the table's header)."""

    def clean(text: str) -> str:  # the case's own folder, whatever its random name: <case>
        for name in {folder, os.path.realpath(folder)}:
            text = text.replace(name, "<case>")
        # what changes from run to run without meaning: object addresses, the free port a case took
        text = re.sub(r"\b0x[0-9a-f]{6,}\b", "0x...", text)
        # a warning's "/path/to/file.py:LINE: " prefix names the installation (its folder, Python and
        # NumPy versions), not the case: the category and the message are what the table shows
        text = re.sub(r"(?m)^\S+\.py:\d+: (?=[A-Za-z]*Warning\b)", "", text)
        return re.sub(r"\bport \d+ on\b", "port <port> on", text)

    out, err = clean(out), clean(err)
    traceback_seen = "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out
    if case.code is not None:
        raised = [ln for ln in out.splitlines() if ln.startswith("RAISED ")]
        if raised and status == _RAISED:
            outcome = raised[-1][len("RAISED ") :]
            name = outcome.split(":", 1)[0]
            deliberate = name.startswith("gcsim.") or name.split(".")[-1] in _DELIBERATE
            ok = case.expect == "error" and deliberate and not name.endswith(("AssertionError", "MemoryError"))
        elif status != 0:
            outcome = f"exit {status}: " + (_first_line(err) or _first_line(out) or "(no output)")
            ok = False
        else:
            warn = _first_line(err) if "Warning" in err else ""
            outcome = ("warning: " + warn) if warn else ("ok: " + (_first_line(out) or "(no output)"))
            ok = (case.expect == "ok") or (case.expect == "warning" and bool(warn))
    else:
        if status == 0:
            outcome = "exit 0: " + (_first_line(out) or _first_line(err) or "(no output)")
            ok = case.expect in ("ok", "warning")
        else:
            outcome = f"exit {status}: " + (_first_line(err) or _first_line(out))
            ok = case.expect == "error" and status in (1, 2) and not traceback_seen
        if traceback_seen:
            outcome += " [TRACEBACK]"
            ok = False
    return {"outcome": outcome, "ok": ok}


def _wait(job: _Running, block: bool) -> int | None:
    """The job's exit status (a signal n as 128 + n), or None while it runs."""
    pid, status = os.waitpid(job.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def run_cases(cases: list[Case], jobs: int = 1, echo: bool = False) -> list[dict]:
    """Run ``cases``, ``jobs`` at a time (an executor case alone), each in its own forked process and folder.

    A result holds ``outcome`` (the table's answer), ``ok`` and ``seconds`` (wall clock, not in the table).
    """
    for name in _PRELOAD:
        importlib.import_module(name)
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    results: list[dict] = [{} for _ in cases]
    todo = list(enumerate(cases))[::-1]
    running: list[_Running] = []
    while todo or running:
        # an executor case (ranks, rendezvous, time-outs of its own) runs alone: its timings are its own
        while todo and len(running) < max(1, int(jobs)):
            alone = todo[-1][1].area == "executor" or any(job.case.area == "executor" for job in running)
            if alone and running:
                break
            running.append(_Running(*todo.pop()))
        time.sleep(0.005)
        for job in list(running):
            status = _wait(job, block=False)
            if status is None and time.perf_counter() < job.deadline:
                continue
            if status is None:
                job.kill()
                _wait(job, block=True)
            running.remove(job)
            seconds = time.perf_counter() - job.start
            if status is None:
                res = {"outcome": f"HANG (killed after {job.case.timeout:g} s)", "ok": False}
            elif status == _SETUP_FAILED and not job.text("out") and not job.text("err"):
                res = {"outcome": f"setup failed: {_last_line(job.text('setup.err'))}", "ok": False}
            else:
                res = _outcome(job.case, status, job.text("out"), job.text("err"), job.folder)
            res["seconds"] = round(seconds, 3)
            results[job.index] = res
            job.cleanup()
            if echo:
                mark = "ok " if res["ok"] else "BAD"
                case = job.case
                print(
                    f"[{mark}] {case.area:9s} {case.fault[:60]:60s} {seconds:6.1f}s  {res['outcome'][:100]}", flush=True
                )
    return results


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _cell(text: str, width: int = 160) -> str:
    # a table cell is Markdown: escape the pipe, and the brackets that would read as reference links
    text = text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def render(rows: list[tuple[Case, dict]]) -> str:
    """The Markdown table of ``docs/reliability.md`` (no timings: the same code gives the same table)."""
    lines = [
        "# Reliability: bad inputs and faults",
        "",
        "Every row is one bad input or fault tried against gcsim, and what gcsim answers. The table is",
        "produced by a script from the cases' run, not written by hand; `make test` runs the same cases",
        "(`tests/test_reliability.py`) and fails when a case misbehaves or this page is not the table",
        "that run renders. Regenerate it with",
        "",
        "```bash",
        ".venv/bin/python scripts/reliability_table.py          # rewrites this file",
        ".venv/bin/python scripts/reliability_table.py --check  # exit 1 if a case misbehaves or this file differs",
        "```",
        "",
        "Each case runs in its own process in its own temporary folder (written `<case>` below) with a time",
        "limit, the *limit s* column (a hang is a failure); the executor's cases run one at a time, and their",
        "answers may differ between runs in the words after the exception's name (which rank failed first:",
        "the test compares that name only). *Expected* is what a clear answer looks like:",
        "`error` = a deliberate gcsim exception (API) or exit status 1/2 with one message line and no",
        "traceback (CLI); `ok` = it runs; `warning` = it runs and warns. The cases live in",
        "`scripts/reliability/cases_*.py`.",
        "",
        f"{sum(r['ok'] for _, r in rows)} of {len(rows)} cases behave as expected.",
        "",
        "| # | area | input or fault | expected | what gcsim answers | limit s | ok |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, (case, res) in enumerate(rows, 1):
        lines.append(
            f"| {i} | {case.area} | {_cell(case.fault, 90)} | {case.expect} | {_cell(res['outcome'])} "
            f"| {case.timeout:g} | {'yes' if res['ok'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if a case misbehaves or the table differs"
    )
    ap.add_argument("--only", help="one area file (e.g. files for cases_files.py); the table is not written")
    ap.add_argument("--out", default=str(TABLE))
    ap.add_argument("--jobs", type=int, default=1, help="cases run at a time (default 1)")
    ap.add_argument("--json", metavar="FILE", help="also write every case's result (with its seconds) to FILE")
    ap.add_argument("--quiet", action="store_true", help="no line per case")
    args = ap.parse_args(argv)
    cases = load_cases(args.only)
    t0 = time.perf_counter()
    results = run_cases(cases, jobs=args.jobs, echo=not args.quiet)
    wall = time.perf_counter() - t0
    rows = list(zip(cases, results, strict=True))
    bad = [c for c, r in rows if not r["ok"]]
    text = render(rows)
    if args.json:
        payload = {
            "cases": [{"area": c.area, "fault": c.fault, "expect": c.expect, **r} for c, r in rows],
            "table": None if args.only else text,
            "wall_seconds": round(wall, 1),
        }
        Path(args.json).write_text(json.dumps(payload, indent=1))
    print(f"{len(rows) - len(bad)}/{len(rows)} cases as expected in {wall:.0f} s ({args.jobs} at a time)")
    if args.check and not args.only and Path(args.out).read_text() != text:
        print(f"{args.out} is not the table this run renders: rerun without --check to regenerate it")
        return 1
    if not args.check and not args.only:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
