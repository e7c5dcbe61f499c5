"""The ``gcsim`` command line.

Exit codes scripts can rely on:

* 0 -- success;
* 1 -- the command ran but found a failure (an object that does not verify,
  a violated bound, a refused catalogue file, a solver or a distributed rank
  that failed or timed out);
* 2 -- bad usage or invalid input (one line on stderr, no traceback): an
  unknown flag, a value out of range (the message names the flag), a folder
  where a file is expected or the reverse, a path that cannot be written, an
  object beyond :mod:`gcsim.limits` (the message states the size and the limit).

Running out of memory anyway is exit 1 with one line.  Warnings are printed as
one ``gcsim: warning: ...`` line each.  Every command that produces numbers
accepts ``--json`` and then prints exactly one JSON object on stdout.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .errors import CatalogueError, GcsimError, InvalidArgumentError, VerificationError

__all__ = ["main", "build_parser", "UsageError", "int_arg", "float_arg", "path_errors", "check_output_dir",
           "check_input_path", "check_name"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

_EPILOG = """examples:
  gcsim construct bibd 91 10 1            # PG(2,9), verified
  gcsim construct srg 13 6 2 3 --json     # Paley(13) as JSON
  gcsim exists bibd 43 7 1                # False: Bruck-Ryser-Chowla
  gcsim construct coset 27 2 5 --export designs
  gcsim load designs/bibd/pg2_9           # re-verify a catalogue file
  gcsim catalogue                         # verify every named instance
  gcsim reproduce                         # the quick headline results (make demo)
"""


class UsageError(GcsimError):
    """Bad command-line usage (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2), naming the flag."""

    def error(self, message: str):  # noqa: D102 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# ---------------------------------------------------------------------------------------------
# argument types: argparse reports "argument --d: must be >= 1, got -5" (one line, exit 2)

def int_arg(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in ``[minimum, maximum]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def float_arg(minimum: float | None = None, maximum: float | None = None, *, strict_min: bool = False,
              strict_max: bool = False) -> Callable[[str], float]:
    """An argparse ``type`` for a finite real number in a range (NaN and inf are refused)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and (value < minimum or (strict_min and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict_min else '>='} {minimum:g}, got {value:g}")
        if maximum is not None and (value > maximum or (strict_max and value == maximum)):
            raise argparse.ArgumentTypeError(f"must be {'<' if strict_max else '<='} {maximum:g}, got {value:g}")
        return value
    parse.__name__ = "number"
    return parse


# ---------------------------------------------------------------------------------------------
# paths: check a flag's path before any work, and turn OS errors into one line naming the flag

def _os_reason(exc: OSError) -> str:
    """``"Not a directory: 'afile/bibd'"`` from an OSError, without the errno noise."""
    reason = exc.strerror or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    if where is None:
        return str(exc) or reason
    text = f"{reason}: {str(where)!r}"
    if getattr(exc, "filename2", None) is not None:
        text += f" -> {str(exc.filename2)!r}"
    return text


@contextlib.contextmanager
def path_errors(flag: str, action: str = "write") -> Iterator[None]:
    """Turn an OSError raised inside the block into a :class:`UsageError` naming ``flag``.

    >>> with path_errors("--out"):
    ...     open("/proc/no/such/file", "w")
    Traceback (most recent call last):
    ...
    gcsim.cli.UsageError: --out: cannot write: No such file or directory: '/proc/no/such/file'
    """
    try:
        yield
    except MemoryError:
        raise
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise UsageError(f"{flag}: cannot {action}: {_os_reason(exc)}") from None


def check_output_dir(flag: str, path: str | os.PathLike) -> Path:
    """A folder the command may create or write into, checked before any work.

    Refused (naming ``flag``): an existing non-folder, a path below a regular
    file, an existing ancestor that cannot be written.  Nothing is created here.

    >>> check_output_dir("--out", "/dev/null/x")
    Traceback (most recent call last):
    ...
    gcsim.cli.UsageError: --out: cannot create '/dev/null/x': '/dev/null' is not a folder
    """
    p = Path(path)
    if str(path) == "":
        raise UsageError(f"{flag}: the folder name is empty")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} exists and is not a folder")
    anc = p
    while not anc.exists() and anc != anc.parent:
        if anc.is_symlink():  # a dangling link: mkdir through it fails
            raise UsageError(f"{flag}: {str(anc)!r} is a broken symbolic link")
        anc = anc.parent
    if not anc.is_dir():
        raise UsageError(f"{flag}: cannot create {str(path)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise UsageError(f"{flag}: cannot write into {str(anc)!r}: permission denied")
    return p


def check_input_path(flag: str, path: str | os.PathLike, *, folder_ok: bool = True) -> Path:
    """An existing file or folder to read (``folder_ok=False``: a regular file only)."""
    p = Path(path)
    if str(path) == "":
        raise UsageError(f"{flag}: the path is empty")
    if not p.exists():
        raise UsageError(f"{flag}: no such file or folder: {str(path)!r}")
    if not folder_ok and p.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} is a folder, a file is expected")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{flag}: cannot read {str(path)!r}: permission denied")
    return p


def check_name(flag: str, name: str | None) -> str | None:
    """A catalogue name: one path component (no separators, not empty, not '.' or '..')."""
    if name is None:
        return None
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise UsageError(f"{flag}: must be a plain file name (no folders), got {name!r}")
    return name


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str | Callable[[], str]) -> None:
    from .io.manifest import to_jsonable

    if getattr(args, "json", False):
        print(json.dumps(to_jsonable(payload), sort_keys=True))
    else:
        print(text() if callable(text) else text)


def _object_summary(obj: Any) -> dict[str, Any]:
    return {
        "kind": getattr(obj, "kind", type(obj).__name__),
        "params": list(obj.params),
        "construction": getattr(obj, "construction", None),
        "parts": int(obj.assignment.shape[0]),
        "workers": int(obj.assignment.shape[1]),
    }


_FAMILIES = {
    "bibd": ("v k [lam]", 2, 3),
    "srg": ("v k lam mu", 4, 4),
    "coset": ("k m delta", 3, 3),
    "biregular": ("v b r k", 4, 4),
}


def _build(family: str, numbers: list[int], args: argparse.Namespace, existence: bool = False):
    from .io.named import build_family

    usage, lo, hi = _FAMILIES[family]
    if not lo <= len(numbers) <= hi:
        raise UsageError(f"{family} takes parameters {usage}, got {len(numbers)} numbers")
    return build_family(family, numbers, seed=getattr(args, "seed", 0), group=getattr(args, "group", "cyclic"),
                        existence=existence)


def _cmd_construct(args: argparse.Namespace) -> int:
    if args.export is not None:  # before the (possibly long) construction
        check_output_dir("--export", args.export)
    check_name("--name", args.name)
    obj = _build(args.family, args.params, args)
    obj.verify()
    payload = _object_summary(obj)
    payload["verified"] = True
    if args.export:
        from .io.catalogue import export_object
        with path_errors("--export"):
            payload["exported"] = str(export_object(obj, args.export, name=args.name, overwrite=args.force))
    if args.matrix:
        payload["assignment"] = obj.assignment
    text = (f"{payload['kind']} {tuple(obj.params)} via {payload['construction']}: "
            f"{payload['parts']} parts x {payload['workers']} workers, verified")
    if args.export:
        text += f"\nexported to {payload['exported']}"
    if args.matrix:
        text += "\n" + "\n".join("".join(str(int(x)) for x in row) for row in obj.assignment)
    _emit(args, payload, text)
    return EXIT_OK


def _cmd_exists(args: argparse.Namespace) -> int:
    answer = _build(args.family, args.params, args, existence=True)
    word = {True: "exists", False: "does not exist", None: "unknown"}[answer]
    reason = None
    if answer is False:
        try:
            _build(args.family, args.params, args)
        except GcsimError as exc:
            reason = str(exc)
    _emit(args, {"family": args.family, "params": args.params, "exists": answer, "reason": reason},
          f"{args.family} {tuple(args.params)}: {word}" + (f" ({reason})" if reason else ""))
    return EXIT_OK


def _cmd_load(args: argparse.Namespace) -> int:
    from .io.catalogue import load_bundle, load_object

    try:
        _, manifest = load_bundle(args.path)
        kind = manifest["metadata"].get("kind")
        if kind == "cerar":
            from .cerar.export import load_design
            obj = load_design(args.path)
            payload = {"kind": "cerar", "N": obj.N, "c": obj.c, "method": obj.method, "verified": True}
        else:
            obj = load_object(args.path)
            payload = _object_summary(obj)
            payload["verified"] = True
    except CatalogueError as exc:
        _emit(args, {"path": args.path, "verified": False, "error": str(exc)}, f"refused: {exc}")
        return EXIT_FAILURE
    payload["path"] = args.path
    payload["sha256"] = manifest["sha256"]
    _emit(args, payload, f"{args.path}: {payload.get('kind')} {payload.get('params', '')} loaded and verified "
                         f"(sha256 {manifest['sha256'][:12]}...)")
    return EXIT_OK


def _cmd_catalogue(args: argparse.Namespace) -> int:
    from .io.catalogue_report import catalogue_table, format_table, table_ok

    if args.export or args.force:
        check_output_dir("--dir", args.dir)
    elif Path(args.dir).exists() and not Path(args.dir).is_dir():  # a missing folder: every file "missing"
        raise UsageError(f"--dir: {args.dir!r} exists and is not a folder")
    with path_errors("--dir"):
        rows = catalogue_table(directory=args.dir, export=args.export, force=args.force)
    ok = table_ok(rows)
    _emit(args, {"rows": rows, "ok": ok}, lambda: format_table(rows))
    return EXIT_OK if ok else EXIT_FAILURE


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import run_reproduce

    check_output_dir("--out", args.out)
    with path_errors("--out"):
        summary = run_reproduce(out=args.out, full=args.full, force=args.force, seed=args.seed,
                                stages=args.stage, progress=not args.json)
    _emit(args, summary, lambda: summary["text"])
    return EXIT_OK if summary.get("ok", False) else EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gcsim`` command (exposed for documentation and tests)."""
    parser = _Parser(
        prog="gcsim", description="Coding theory for distributed learning: designs, approximate gradient "
        "codes, coded all-reduce.", epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    parser.add_argument("--version", action="version", version=f"gcsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func, help_text: str, epilog: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        p.add_argument("--json", action="store_true", help="print one JSON object")
        return p

    p = add("construct", _cmd_construct, "build and verify a combinatorial object",
            "examples:\n  gcsim construct bibd 91 10 1\n  gcsim construct srg 10 3 0 1 --matrix\n"
            "  gcsim construct biregular 40 20 3 6 --seed 1 --export designs")
    p.add_argument("family", choices=sorted(_FAMILIES), help="bibd (v k [lam]), srg (v k lam mu), "
                   "coset (k m delta), biregular (v b r k)")
    p.add_argument("params", type=int_arg(), nargs="+", help="the family's integer parameters")
    p.add_argument("--group", default="cyclic", choices=["cyclic", "elementary"], help="coset graphs: group")
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of randomized constructions")
    p.add_argument("--export", metavar="DIR", help="also export it into the catalogue folder DIR")
    p.add_argument("--name", help="catalogue name (default: the parameters)")
    p.add_argument("--force", action="store_true", help="overwrite an existing catalogue file")
    p.add_argument("--matrix", action="store_true", help="print the 0/1 assignment matrix")

    p = add("exists", _cmd_exists, "three-valued existence: exists / does not exist / unknown",
            "examples:\n  gcsim exists bibd 43 7 1\n  gcsim exists srg 28 9 0 4 --json")
    p.add_argument("family", choices=["bibd", "srg"])
    p.add_argument("params", type=int_arg(), nargs="+")

    p = add("load", _cmd_load, "load a catalogue file and re-verify it from the file alone",
            "example:\n  gcsim load designs/bibd/pg2_9")
    p.add_argument("path", help="bundle stem, .json or .npz path")

    p = add("catalogue", _cmd_catalogue, "build, verify (and export) the named instances; print a table")
    p.add_argument("--dir", default="designs", help="catalogue folder (default: designs)")
    p.add_argument("--export", action="store_true", help="write missing catalogue files")
    p.add_argument("--force", action="store_true", help="rewrite catalogue files")

    p = add("reproduce", _cmd_reproduce, "regenerate the headline results (quick scale by default)",
            "example:\n  gcsim reproduce            # what `make demo` runs\n  gcsim reproduce --full")
    p.add_argument("--out", default="results", help="output folder (default: results)")
    p.add_argument("--full", action="store_true", help="paper-scale runs (slow)")
    p.add_argument("--force", action="store_true", help="recompute stages whose results exist")
    p.add_argument("--seed", type=int_arg(0), default=0)
    p.add_argument("--stage", action="append", help="run only this stage (repeatable)")

    for extra in _EXTRA_COMMANDS:
        extra(sub, add)
    if any(getattr(e, "__module__", "") == "gcsim.executor.cli_commands" for e in _EXTRA_COMMANDS):
        p = add("gc", lambda a: EXIT_USAGE, "gradient coding on a real engine: `gcsim gc run ...` "
                "(same as run-gc; see `gcsim run-gc --help`)")
        p.add_argument("action", choices=["run"])
    return parser


# Later layers register their subcommands here: callables (subparsers, add) -> None.
_EXTRA_COMMANDS: list[Callable] = []


def _load_extra_commands() -> None:
    import importlib

    for module in ("gcsim.coding.cli_commands", "gcsim.cerar.cli_commands", "gcsim.executor.cli_commands",
                   "gcsim.learning.cli_commands"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        if mod.register not in _EXTRA_COMMANDS:
            _EXTRA_COMMANDS.append(mod.register)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    _load_extra_commands()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # two-word spellings of the engine commands: `gcsim cerar run` / `gcsim gc run`
    if len(argv) >= 2 and argv[1] == "run" and argv[0] in ("cerar", "gc"):
        argv = [f"run-{argv[0]}"] + argv[2:]
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    with _one_line_warnings():
        return _run(args)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _flag_message(args: argparse.Namespace, exc: InvalidArgumentError) -> str:
    """The message with the API argument replaced by the command-line flag that set it."""
    flag = getattr(args, "flags", {}).get(exc.argument)
    text = _first_line(exc)
    if flag and text.startswith(f"{exc.argument}: "):
        text = f"{flag}: {text[len(exc.argument) + 2:]}"
    return text


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except VerificationError as exc:
        print(f"gcsim: verification failed: {_first_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except CatalogueError as exc:
        print(f"gcsim: refused: {_first_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except InvalidArgumentError as exc:
        print(f"gcsim: error: {_flag_message(args, exc)}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:
        # a run that failed (a solver, a rank, the ring), not bad usage: exit 1
        if not isinstance(exc, GcsimError):
            raise
        print(f"gcsim: failed: {_first_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except (GcsimError, ValueError) as exc:
        print(f"gcsim: error: {_first_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `gcsim ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except OSError as exc:  # a path the checks above could not foresee (e.g. /proc, a full disk)
        print(f"gcsim: error: {_os_reason(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as exc:
        from . import limits
        detail = _first_line(exc) if str(exc) else "allocation failed"
        print(f"gcsim: error: out of memory ({detail}); gcsim.limits.MAX_DENSE_ENTRIES = "
              f"{limits.MAX_DENSE_ENTRIES:,} bounds single objects, choose smaller parameters", file=sys.stderr)
        return EXIT_FAILURE
    except RecursionError:
        print("gcsim: error: the input is nested too deeply (recursion limit)", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gcsim: interrupted", file=sys.stderr)
        return 130


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Print each warning as one ``gcsim: warning: ...`` line (no source line) while a command runs."""
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        stream = sys.stderr if file is None else file
        text = str(message).strip()
        try:
            stream.write(f"gcsim: warning: {text.splitlines()[0] if text else category.__name__}\n")
        except (OSError, ValueError):  # stderr closed: a warning is not worth a crash
            pass

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous
