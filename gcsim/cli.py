"""The ``gcsim`` command line.

Exit codes scripts can rely on:

* 0 -- success;
* 1 -- the command ran but found a failure (an object that does not verify,
  a violated bound, a refused catalogue file);
* 2 -- bad usage or invalid input (one line on stderr, no traceback).

Every command that produces numbers accepts ``--json`` and then prints exactly
one JSON object on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Sequence

from .errors import CatalogueError, GcsimError, VerificationError

__all__ = ["main", "build_parser"]

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
    obj = _build(args.family, args.params, args)
    obj.verify()
    payload = _object_summary(obj)
    payload["verified"] = True
    if args.export:
        from .io.catalogue import export_object
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

    rows = catalogue_table(directory=args.dir, export=args.export, force=args.force)
    ok = table_ok(rows)
    _emit(args, {"rows": rows, "ok": ok}, lambda: format_table(rows))
    return EXIT_OK if ok else EXIT_FAILURE


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import run_reproduce

    summary = run_reproduce(out=args.out, full=args.full, force=args.force, seed=args.seed,
                            stages=args.stage, progress=not args.json)
    _emit(args, summary, lambda: summary["text"])
    return EXIT_OK if summary.get("ok", False) else EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gcsim`` command (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
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
    p.add_argument("params", type=int, nargs="+", help="the family's integer parameters")
    p.add_argument("--group", default="cyclic", choices=["cyclic", "elementary"], help="coset graphs: group")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized constructions")
    p.add_argument("--export", metavar="DIR", help="also export it into the catalogue folder DIR")
    p.add_argument("--name", help="catalogue name (default: the parameters)")
    p.add_argument("--force", action="store_true", help="overwrite an existing catalogue file")
    p.add_argument("--matrix", action="store_true", help="print the 0/1 assignment matrix")

    p = add("exists", _cmd_exists, "three-valued existence: exists / does not exist / unknown",
            "examples:\n  gcsim exists bibd 43 7 1\n  gcsim exists srg 28 9 0 4 --json")
    p.add_argument("family", choices=["bibd", "srg"])
    p.add_argument("params", type=int, nargs="+")

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
    p.add_argument("--seed", type=int, default=0)
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
    try:
        return int(args.func(args))
    except VerificationError as exc:
        print(f"gcsim: verification failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except CatalogueError as exc:
        print(f"gcsim: refused: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except (GcsimError, ValueError, FileExistsError, FileNotFoundError) as exc:
        print(f"gcsim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `gcsim ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        print("gcsim: interrupted", file=sys.stderr)
        return 130
