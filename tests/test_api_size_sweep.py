"""Every sized argument of the public API and of the CLI, fed what a hostile caller would (issue #33).

The public API is enumerated, not listed: every callable of ``gcsim.__all__``, of each
subpackage's ``__all__`` and of each public module's ``__all__`` (below ``gcsim.app``,
``gcsim.learning`` and ``gcsim.executor`` only their packages': their modules' examples train
models and launch processes) with a parameter named like a size (``v``, ``n``, ``samples``, ``k``, ...).
A valid call of each comes from its own docstring example: the example runs (as the doctests do)
with the callable replaced by a recorder, and the first call it makes is the template.  Each sized
argument of that call whose example value is an integer (or an integer array) is then replaced, in
turn, by

* ``over``: an over-limit value (``10**12``), or for an array an entry of ``10**12``;
* ``zero-stride``: ``np.broadcast_to`` of the value to 10^9 entries (a few bytes that stand for
  8 GB);
* ``non-integer``: ``2.5`` (for an array, its first entry plus 0.5).

A ``zero-stride`` or ``non-integer`` value must be refused with a gcsim
:class:`~gcsim.errors.InvalidArgumentError` in one line; an ``over`` value refused so, answered
with a gcsim error (``ImpossibleParametersError``: no such design) or answered (a closed form
needs no array); each within a second of CPU time, with the process's peak resident
memory (``VmHWM``, reset before each call through ``/proc/self/clear_refs``) at most
``PEAK_MIB`` above where it started.  The calls run in a child process (``python
tests/test_api_size_sweep.py --worker``) under an address-space limit, so a call that would
allocate gigabytes fails there, not on the machine; a call that hangs is killed and named.

The CLI is swept the same way from each command's help examples (``gcsim <command> --help``):
every integer flag value of an example is replaced by ``1e12``, ``2.5`` and ``-1``; each must be one
``gcsim: error:`` line and exit status 2 within the same time.
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import importlib
import inspect
import io
import json
import os
import pkgutil
import resource
import shlex
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Parameter names that state a size, a count or a number of items.
SIZED = frozenset(
    "v n N k b m s q d c L t samples patterns count counts order workers iterations steps draws points "
    "moduli base D blocks rounds size".split()
)
#: Below these only the packages' ``__all__`` is swept: their modules' examples train and launch.
PACKAGES_ONLY = ("gcsim.app.", "gcsim.learning.", "gcsim.executor.")
#: A call may take this long (seconds), refusal or answer.
SECONDS = 1.0
#: Wall-clock seconds without a line from the sweep's worker after which its current call counts as hung.
QUIET = 60
#: A call still running after this many CPU seconds is stopped (by an alarm) and counted as a failure.
STOP = 2.0
#: Most the peak resident memory may grow during one call (MiB).
PEAK_MIB = 512
#: Address space the sweep's process may add to what it holds after its imports (bytes).
HEADROOM = 6 << 30
ZERO_STRIDE_LENGTH = 10**9

# what goes wrong in a known failure (or why a flagged outcome is right)
_HANGS = "hangs in C code (not run)"
_NOT_A_SIZE = "not a size: coordinates (floats are valid)"
#: (callable, parameter, variant) whose outcome this sweep flags and that stays (issue #33), each
#: with what goes wrong or why it is correct; a call that "hangs in C code" is not run (it would
#: hold the sweep for QUIET seconds).  The test fails on any failure not listed here; remove an
#: entry once it is fixed.  The 34 calls listed here before issue #33 was closed are pinned by
#: tests/test_size_limits_regressions.py.
KNOWN: dict[tuple[str, str, str], str] = {
    # correct behaviour, not a failure: the points are objective values (error, time, load, ...),
    # so a float coordinate is valid; their number is what is bounded (the zero-stride case)
    ("gcsim.advisor.advice.pareto_flags", "points", "non-integer"): _NOT_A_SIZE,
}


# ---------------------------------------------------------------------------------------------
# the worker (a child process): enumerate, record, sweep


def public_callables() -> dict[str, tuple[Any, list[str]]]:
    """``"module.qualname" -> (callable, sized parameters)`` over gcsim.__all__ and the subpackages'."""
    import gcsim

    packages = ["gcsim"] + [
        info.name
        for info in pkgutil.walk_packages(gcsim.__path__, "gcsim.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
        and (info.name.count(".") == 1 or not info.name.startswith(PACKAGES_ONLY))
    ]
    found: dict[str, tuple[Any, list[str]]] = {}
    for package in packages:
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if obj is None or not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            key = f"{getattr(obj, '__module__', package)}.{getattr(obj, '__qualname__', name)}"
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            sized = [p for p in params if p in SIZED]
            if sized and key not in found:
                found[key] = (obj, sized)
    return found


def record_call(obj: Any) -> tuple[tuple, dict] | None:
    """The first call of ``obj`` its own docstring example makes, or None (no example calls it)."""
    doc = inspect.getdoc(obj) or ""
    if ">>>" not in doc:
        return None
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    name = getattr(obj, "__name__", None)
    if module is None or name is None:
        return None
    calls: list[tuple[tuple, dict]] = []

    def recorder(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, dict(kwargs)))
        return obj(*args, **kwargs)

    try:
        test = doctest.DocTestParser().get_doctest(doc, dict(vars(module)), name, None, 0)
    except ValueError:
        return None
    test.globs[name] = recorder
    import gcsim

    patched = [m for m in {module, gcsim, *_packages_holding(obj, name)} if getattr(m, name, None) is obj]
    for m in patched:
        setattr(m, name, recorder)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS).run(test, out=lambda _: None)
    except Exception:  # an example that fails is the doctests' business; a call made before it counts
        pass
    finally:
        for m in patched:
            setattr(m, name, obj)
    return calls[0] if calls else None


def _packages_holding(obj: Any, name: str) -> list[Any]:
    return [m for n, m in list(sys.modules.items()) if n.startswith("gcsim") and getattr(m, name, None) is obj]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def variants(value: Any) -> dict[str, Any]:
    """The hostile values for an argument whose example value is ``value`` (none: not a size)."""
    if _is_int(value):
        return {
            "over": 10**12,
            "zero-stride": np.broadcast_to(np.int64(value), (ZERO_STRIDE_LENGTH,)),
            "non-integer": 2.5,
        }
    if isinstance(value, (list, tuple, np.ndarray)) and not isinstance(value, str):
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):
            return {}
        if arr.size == 0 or arr.ndim not in (1, 2) or arr.dtype.kind not in "iu":
            return {}
        over = arr.astype(np.int64).copy()
        over.flat[0] = 10**12
        nonint = arr.astype(np.float64).copy()
        nonint.flat[0] += 0.5
        return {
            "over": over.tolist() if isinstance(value, (list, tuple)) else over,
            "zero-stride": np.broadcast_to(arr[0], (ZERO_STRIDE_LENGTH, *arr.shape[1:])),
            "non-integer": nonint.tolist() if isinstance(value, (list, tuple)) else nonint,
        }
    return {}


class _Slow(BaseException):
    """Raised by the CPU-time alarm in a call that runs past its time (no ``except Exception`` catches it)."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Slow


def _peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def judge(variant: str, error: BaseException | None, seconds: float, peak: float, base: float) -> str:
    """'' when the call behaved, else what went wrong."""
    from gcsim.errors import GcsimError, InvalidArgumentError

    problems = []
    if isinstance(error, _Slow):
        return f"still running after {STOP:g} s (stopped)"
    if seconds > SECONDS:
        problems.append(f"took {seconds:.2f} s")
    if peak - base > PEAK_MIB:
        problems.append(f"peak RSS {peak - base:.0f} MiB above the start")
    if error is None:
        if variant != "over":
            problems.append("accepted")
    elif not isinstance(error, InvalidArgumentError if variant != "over" else GcsimError):
        problems.append(f"{type(error).__module__}.{type(error).__name__}: {str(error)[:160]}")
    elif "\n" in str(error).strip():
        problems.append("a message of several lines")
    return "; ".join(problems)


def sweep(out: Path, start: int) -> None:
    """The worker: one JSON line per call into ``out`` ('started' first, so a hang is named)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    found = public_callables()
    cases = []
    progress = open(str(out) + ".recording", "w")  # a line per example run: the parent sees the worker live
    for key in sorted(found):
        obj, sized = found[key]
        progress.write(key + "\n")
        progress.flush()
        call = record_call(obj)
        if call is None:
            cases.append((key, None, None, None, None))
            continue
        args, kwargs = call
        try:
            bound = inspect.signature(obj).bind(*args, **kwargs)
        except TypeError:
            continue
        bound.apply_defaults()
        for param in sized:
            for variant, bad in variants(bound.arguments.get(param)).items():
                cases.append((key, param, variant, bound, bad))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + HEADROOM, hard))
    signal.signal(signal.SIGPROF, _alarm)
    with open(out, "a") as f:
        if start == 0:
            f.write(json.dumps({"total": len(cases)}) + "\n")
        for index in range(start, len(cases)):
            key, param, variant, bound, bad = cases[index]
            row: dict[str, Any] = {"index": index, "callable": key, "param": param, "variant": variant}
            if bound is None:
                f.write(json.dumps({**row, "problem": "no example call"}) + "\n")
                f.flush()
                continue
            if KNOWN.get((key, param, variant)) == _HANGS:
                f.write(json.dumps({**row, "problem": KNOWN[(key, param, variant)]}) + "\n")
                f.flush()
                continue
            f.write(json.dumps({**row, "started": True}) + "\n")
            f.flush()
            arguments = dict(bound.arguments)
            arguments[param] = bad
            call_args, call_kwargs = _split(found[key][0], arguments)
            error: BaseException | None = None
            _peak_reset()
            base = _peak_mib()
            t0 = time.process_time()
            signal.setitimer(signal.ITIMER_PROF, STOP)
            try:
                with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                    warnings.simplefilter("ignore")
                    found[key][0](*call_args, **call_kwargs)
            except BaseException as exc:  # the outcome being judged
                error = exc
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            seconds = time.process_time() - t0
            peak = _peak_mib()
            problem = judge(variant, error, seconds, peak, base)
            f.write(json.dumps({**row, "problem": problem, "seconds": round(seconds, 3)}) + "\n")
            f.flush()
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _split(obj: Any, arguments: dict[str, Any]) -> tuple[list, dict]:
    """Positional and keyword arguments for ``obj`` from a bound-arguments mapping."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in inspect.signature(obj).parameters.values():
        if p.name not in arguments:
            continue
        value = arguments[p.name]
        if p.kind is p.VAR_POSITIONAL:
            args.extend(value)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(value)
        elif p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not kwargs):
            args.append(value)
        else:
            kwargs[p.name] = value
    return args, kwargs


# ---------------------------------------------------------------------------------------------
# the test: run the worker (again after a call that hangs), then judge


def _run_sweep(tmp: Path) -> list[dict]:
    out = tmp / "sweep.jsonl"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    start = 0
    hangs = []
    for _ in range(50):
        proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(out), "--start", str(start)], cwd=tmp, env=env
        )
        recording = Path(str(out) + ".recording")

        def size(files: tuple[Path, ...] = (out, recording)) -> int:
            return sum(p.stat().st_size for p in files if p.exists())

        last = size()
        quiet_since = time.monotonic()
        while proc.poll() is None:  # no line for QUIET s: the call that started last hangs (in C)
            time.sleep(0.5)
            now = size()
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since > QUIET:
                proc.kill()
                proc.wait()
                break
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        if proc.returncode == 0 and rows and "problem" in rows[-1]:
            break
        started = [r for r in rows if r.get("started")]
        if not started:
            raise AssertionError(f"the sweep's worker failed before its first call (status {proc.returncode})")
        hung = started[-1]
        if any(r.get("index") == hung["index"] and "problem" in r for r in rows):
            raise AssertionError(f"the sweep's worker died after call {hung} (status {proc.returncode})")
        hangs.append({**hung, "problem": f"hangs (killed after {QUIET} s without an answer)"})
        with open(out, "a") as f:
            f.write(json.dumps(hangs[-1]) + "\n")
        start = hung["index"] + 1
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [r for r in rows if "problem" in r]


@pytest.fixture(scope="module")
def api_rows(tmp_path_factory) -> list[dict]:
    return _run_sweep(tmp_path_factory.mktemp("sweep"))


def test_every_public_callable_with_a_size_is_swept(api_rows):
    swept = {r["callable"] for r in api_rows if r["problem"] != "no example call"}
    none = sorted(r["callable"] for r in api_rows if r["problem"] == "no example call")
    assert len(swept) >= 200, len(swept)
    # the callables whose docstring example does not call them (classes documented by their
    # factories, result records): counted, so that the list cannot grow unseen
    assert len(none) <= 120, none


def test_each_sized_argument_is_refused_or_answered_quickly_and_small(api_rows):
    failures = {
        (r["callable"], r["param"], r["variant"]): r["problem"]
        for r in api_rows
        if r["problem"] and r["problem"] != "no example call"
    }
    new = {k: v for k, v in failures.items() if k not in KNOWN}
    lines = [f"{c}({p}=<{v}>): {why}" for (c, p, v), why in sorted(new.items())]
    assert not new, f"{len(new)} calls misbehave (not in KNOWN):\n" + "\n".join(lines)
    swept = {(r["callable"], r["param"], r["variant"]) for r in api_rows if r["problem"] != "no example call"}
    assert set(KNOWN) <= swept, f"KNOWN entries the sweep no longer makes: {sorted(set(KNOWN) - swept)}"


# ---------------------------------------------------------------------------------------------
# the CLI: every integer flag of every command's help examples


def cli_examples() -> list[tuple[list[str], int]]:
    """``(argv, i)``: every example line of every command's help, with the position ``i`` of the value
    of a flag whose type is an integer (its parser refuses ``2.5``) and whose example value is one."""
    from gcsim.app.cli import build_parser

    found = []
    for action in build_parser()._actions:
        for sub in (getattr(action, "choices", None) or {}).values():
            if not isinstance(sub, argparse.ArgumentParser):
                continue
            types = {s: a.type for a in sub._actions for s in a.option_strings if callable(a.type)}
            for line in (sub.epilog or "").splitlines():
                line = line.split("#", 1)[0].strip()
                if not line.startswith("gcsim "):
                    continue
                argv = shlex.split(line)[1:]
                for i in range(1, len(argv)):
                    if argv[i - 1] in types and argv[i].isdigit() and not _accepts(types[argv[i - 1]], "2.5"):
                        found.append((argv, i))
    return found


def _accepts(kind: Any, text: str) -> bool:
    try:
        kind(text)
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return False
    return True


#: The CLI sweep's child: each command line under a CPU-time alarm, its status and CPU seconds.
_CLI_CHILD = r"""
import json, signal, sys, time
from gcsim.app.cli import main

class Stopped(BaseException):
    pass

def stop(*_):
    raise Stopped

signal.signal(signal.SIGPROF, stop)
rows = []
for argv in json.loads(sys.argv[1]):
    t0 = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, float(sys.argv[2]))
    try:
        code = main(argv)
    except Stopped:
        code = "stopped"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    rows.append([code, time.process_time() - t0])
    print("\x00", flush=True, file=sys.stderr)
print(json.dumps(rows))
"""


def test_cli_integer_flags_refuse_hostile_values(tmp_path):
    examples = cli_examples()
    assert len(examples) >= 20, examples
    calls = [[*argv[:i], bad, *argv[i + 1 :]] for argv, i in examples for bad in ("1e12", "2.5", "-1")]
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_CHILD, json.dumps(calls), str(STOP)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
    )
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    messages = proc.stderr.split("\x00\n")
    assert len(results) == len(calls)
    bad = []
    for argv, (code, seconds), err in zip(calls, results, messages, strict=False):
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith("gcsim: progress: ")]
        if code != 2 or len(lines) != 1 or not lines[0].startswith("gcsim: error: ") or seconds > SECONDS:
            bad.append(f"gcsim {shlex.join(argv)}: exit {code}, {seconds:.2f} s CPU, {lines[:2]}")
    assert not bad, f"{len(bad)} of {len(calls)} command lines misbehave:\n" + "\n".join(bad)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--start", type=int, default=0)
    ns = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sweep(Path(ns.worker), ns.start)
