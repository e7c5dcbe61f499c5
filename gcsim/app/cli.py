"""The ``gcsim`` command line.

Exit codes scripts can rely on:

* 0 -- success;
* 1 -- the command ran but found a failure (an object that does not verify,
  a violated bound, a refused catalogue file, a solver or a distributed rank
  that failed or timed out);
* 2 -- bad usage or invalid input (one line on stderr, no traceback): an
  unknown flag, a value out of range (the message names the flag), a folder
  where a file is expected or the reverse, a path that cannot be written, an
  object beyond :mod:`gcsim.limits` (the message states the size and the limit);
* 3, 4 -- ``gcsim exists`` only: the object does not exist (3), its existence is
  unknown (4); it exists: 0.

Running out of memory anyway is exit 1 with one line.  Every line that says why a command stopped
starts ``gcsim: error:`` (a usage error of any subcommand, a refusal, a refused file, a failure);
warnings are printed as one ``gcsim: warning: ...`` line each.  Every command that produces numbers
accepts ``--json`` and then prints exactly one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence

from .. import limits
from .._progress import progress_lines
from .._version import __version__
from ..errors import CatalogueError, GcsimError, InvalidArgumentError, VerificationError
from .common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    HelpFormatter,
    Parser,
    emit,
    int_arg,
    os_reason,
    output_path,
    path_errors,
    show_progress,
)
from .flags import DEPRECATED_COMMANDS
from .help_texts import PAPER_ONLY, PAPERS
from .sweep_options import SCHEDULER_FLAGS, add_scheduler_flags, scheduler_from_args

__all__ = ["main", "build_parser", "COMMANDS"]

_EPILOG = """examples:
  gcsim construct bibd 91 10 1            # PG(2,9), verified
  gcsim construct srg 13 6 2 3 --json     # Paley(13) as JSON
  gcsim exists bibd 43 7 1                # does not exist (Bruck-Ryser-Chowla): exit status 3
  gcsim construct coset 27 2 5 --out designs
  gcsim load bibd/pg2_9                   # re-verify a packaged catalogue file
  gcsim load advice/rank1_bibd_rd         # a code exported by `gcsim advise --out advice`
  gcsim --limit MAX_PATTERNS=1e8 error --design pg2_9 --m 2 --stragglers all:5  # C(91,5) > 10^7: a bigger machine
  gcsim catalogue                         # verify every named instance
  gcsim reproduce                         # the quick headline results (make demo)
  gcsim reproduce --full --scheduler local  # paper scale, on a Dask cluster of this machine's cores
  gcsim reproduce --paper agc             # the experiments of the gradient-coding paper, and its claims
"""

#: The command groups (modules of :mod:`gcsim.app.commands`), in the order ``gcsim --help`` lists
#: them: each module's ``register(sub, add)`` adds its subcommands.  The modules are imported when
#: the parser is built and import their implementations only when a command runs, so that
#: ``gcsim --help`` and ``gcsim --version`` start at once (``tests/test_cli_startup.py``).
COMMANDS = ("combinatorics", "coding", "delays", "advise", "cerar", "executor", "learning")


def _command_module(name: str):
    return importlib.import_module(f"{__package__}.commands.{name}")


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import INDEX_NAME, PAPERS, available_stages, closing_lines, demo_stages, run_reproduce

    # the one output-path rule, for every folder and file reproduce writes directly under --out
    known = available_stages()  # an unknown --stage or --paper is refused by run_reproduce, naming the flag
    papers = [p for p in args.paper or () if p in PAPERS]
    default = [s for p in papers for s in PAPERS[p]] if papers else demo_stages()
    for part in [*(s for s in (args.stage or default) if s in known), "manifest.json", INDEX_NAME]:
        output_path("--out", args.out, part)

    def echo(text: str) -> None:  # each stage's summary as the stage ends, not all at the end
        print(text, flush=True)

    scheduler, workers = scheduler_from_args(args)
    with path_errors("--out"):
        summary = run_reproduce(
            out=args.out,
            full=args.full,
            force=args.force,
            seed=args.seed,
            stages=args.stage,
            papers=args.paper,
            progress=show_progress(args),
            echo=None if args.json else echo,
            scheduler=scheduler,
            workers=workers,
        )
    emit(args, summary, lambda: closing_lines(summary["out"], summary["index"]))
    return EXIT_OK if summary.get("ok", False) else EXIT_FAILURE


def _limit_arg(text: str) -> tuple[str, int]:
    """``NAME=VALUE`` of ``--limit``: a limit of :mod:`gcsim.limits` (``MAX_`` and case optional) and its value."""
    name, sep, value = text.partition("=")
    key = name.strip().upper().replace("-", "_").removeprefix("GCSIM_")
    key = key if key.startswith("MAX_") else f"MAX_{key}"
    if not sep or key not in limits.DEFAULTS:
        raise argparse.ArgumentTypeError(
            f"must be NAME=VALUE with NAME one of {', '.join(limits.DEFAULTS)}, got {text[:60]!r}"
        )
    try:
        return key, limits.parse_limit(key, value)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_limit_arg.__name__ = "limit"


@contextlib.contextmanager
def _limits_set(pairs: Sequence[tuple[str, int]] | None) -> Iterator[None]:
    """The ``--limit`` values while the command runs, the previous ones after (main() may run in a process that
    goes on)."""
    before = {name: getattr(limits, name) for name in limits.DEFAULTS}
    try:
        for name, value in pairs or ():
            setattr(limits, name, value)
        yield
    finally:
        for name, value in before.items():
            setattr(limits, name, value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gcsim`` command (exposed for documentation and tests)."""
    parser = Parser(
        prog="gcsim",
        description="Coding theory for distributed learning: designs, approximate gradient codes, coded all-reduce.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gcsim {__version__}")
    parser.add_argument(
        "--limit",
        action="append",
        type=_limit_arg,
        metavar="NAME=VALUE",
        help="raise (or lower) a size limit of gcsim.limits for this command, e.g. --limit MAX_DENSE_ENTRIES=2**26 "
        f"(repeatable; names: {', '.join(limits.DEFAULTS)}; the environment's GCSIM_<NAME> sets the default)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func, help_text: str, epilog: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=epilog,
            formatter_class=HelpFormatter,
        )
        p.set_defaults(func=func)
        p.add_argument("--json", action="store_true", help="print one JSON object")
        return p

    for name in COMMANDS:
        _command_module(name).register(sub, add)
    # the ring engine among the CERAR actions: `gcsim cerar run` (commands/executor.py)
    _command_module("executor").add_cerar_run(sub.choices["cerar"].get_default("cerar_actions"))
    p = add(
        "reproduce",
        _cmd_reproduce,
        "regenerate the headline results (quick scale by default)",
        "examples:\n  gcsim reproduce                      # what `make demo` runs\n  gcsim reproduce --full\n"
        "  gcsim reproduce --paper agc          # one paper's experiments\n"
        "  gcsim reproduce --paper agc --stage training  # one of them\n\n"
        "papers and their stages:\n"
        + "".join(f"  {name}: {', '.join(stages)}\n" for name, stages in PAPERS.items())
        + (
            f"not in the default run (only by --paper or --stage): {', '.join(sorted(PAPER_ONLY))}\n"
            if PAPER_ONLY
            else ""
        ),
    )
    p.add_argument("--out", default="results", help="output folder")
    p.add_argument("--full", action="store_true", help="paper-scale runs (slow)")
    p.add_argument(
        "--force", action="store_true", help="replace existing results: recompute stages whose results exist"
    )
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed passed to every stage")
    p.add_argument(
        "--stage",
        action="append",
        help="run only this stage (repeatable; default: every stage this install can run, except the paper-only "
        "ones); with --paper, a stage of that paper",
    )
    p.add_argument(
        "--paper",
        action="append",
        choices=sorted(PAPERS),
        help="run the stages of this paper's experiments (repeatable; --stage narrows them)",
    )
    add_scheduler_flags(p, "the stages' experiments, fronts and training runs", old_flag="--workers")
    p.set_defaults(
        flags={
            "stage": "--stage",
            "paper": "--paper",
            "out": "--out",
            "seed": "--seed",
            "full": "--full",
            "force": "--force",
        }
        | SCHEDULER_FLAGS
    )

    return parser


def _command_index(argv: Sequence[str]) -> int | None:
    """Where the command word is in ``argv``: after the global options (``--limit NAME=VALUE``)."""
    i = 0
    while i < len(argv):
        if argv[i] == "--limit":
            i += 2
        elif argv[i].startswith("--limit="):
            i += 1
        else:
            return i
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    A Ctrl-C at any time, the start-up's imports included, ends it with status 130 and the one
    line ``gcsim: interrupted`` (no traceback).
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("gcsim: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # deprecated one-word spellings of the engine commands: `gcsim run-cerar` is `gcsim cerar run`
    start = _command_index(argv)
    if start is not None and argv[start] in DEPRECATED_COMMANDS:
        new = DEPRECATED_COMMANDS[argv[start]]
        print(f"gcsim: warning: `gcsim {argv[start]}` is deprecated: use `gcsim {' '.join(new)}`", file=sys.stderr)
        argv = [*argv[:start], *new, *argv[start + 1 :]]
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "command", None):  # the error line first, as for any usage error, then a short usage
        print("gcsim: error: a command is required (`gcsim --help` lists them)", file=sys.stderr)
        print(parser.format_usage().rstrip(), file=sys.stderr)
        return EXIT_USAGE
    problems = limits.environment_problems()
    if problems:  # `import gcsim` only warns; a command refuses to run under a limit it cannot read
        print(f"gcsim: error: {next(iter(problems.values()))}", file=sys.stderr)
        return EXIT_USAGE
    with _one_line_warnings(), _limits_set(args.limit), progress_lines(True):
        return _run(args)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


#: API arguments every command spells the same way on the command line (a command's own
#: ``flags`` map, set with ``set_defaults(flags=...)``, takes precedence)
_COMMON_FLAGS = {
    "overwrite": "--force",
    "seed": "--seed",
    "name": "--name",
    "method": "--method",
    "dtype": "--dtype",
    "eps": "--eps",
}


def _flags(args: argparse.Namespace) -> dict[str, str]:
    return {**_COMMON_FLAGS, **getattr(args, "flags", {})}


def _cli_words(text: str, flags: dict[str, str]) -> str:
    """Python spellings of arguments in a library message, rewritten as the flags that set them.

    ``pass overwrite=True`` becomes ``pass --force``; ``use method='perturbation'`` becomes
    ``use --method perturbation`` (only for arguments the command maps to a flag).

    >>> _cli_words("bundle x exists (pass overwrite=True to replace it)", _COMMON_FLAGS)
    'bundle x exists (pass --force to replace it)'
    >>> _cli_words("Use method='perturbation', 'vandermonde' or 'optimized'", _COMMON_FLAGS)
    'Use --method perturbation, vandermonde or optimized'
    """

    def flag_value(m: re.Match) -> str:
        flag = flags.get(m.group(1))
        if flag is None:
            return m.group(0)
        value = m.group(2)
        if value == "True":  # a switch: the flag alone
            return flag
        rest = m.group(3) or ""
        # an enumeration of quoted alternatives after the first one: drop their quotes too
        rest = re.sub(r"'([^'\s]+)'", r"\1", rest)
        return f"{flag} {value.strip(chr(39))}{rest}"

    return re.sub(r"\b([A-Za-z_]\w*)=('[^']*'|True|[\w.+-]+)((?:,? (?:or )?'[^']*')*)", flag_value, text)


def _flag_message(args: argparse.Namespace, exc: BaseException) -> str:
    """The first line of the message, with API argument names replaced by the flags that set them."""
    flags = _flags(args)
    text = _first_line(exc)
    argument = getattr(exc, "argument", None)
    if isinstance(argument, str) and argument in flags and text.startswith(f"{argument}: "):
        flag = flags[argument]
        text = f"{flag}: {text[len(argument) + 2 :]}"
    return _cli_words(text, flags)


_LIMIT_NAME = re.compile(r"gcsim\.limits\.(MAX_[A-Z_]+)")


def _limit_hint(text: str) -> str:
    """A message naming a limit of :mod:`gcsim.limits`, with how to raise it from the shell.

    >>> print(_limit_hint("s: 10 patterns, over gcsim's limit of 5 (gcsim.limits.MAX_PATTERNS)"))
    s: 10 patterns, over gcsim's limit of 5 (gcsim.limits.MAX_PATTERNS); raise it: gcsim --limit MAX_PATTERNS=N ... \
or GCSIM_MAX_PATTERNS=N
    """
    found = _LIMIT_NAME.search(text)
    if found is None or found.group(1) not in limits.DEFAULTS:
        return text
    name = found.group(1)
    return f"{text}; raise it: gcsim --limit {name}=N ... or GCSIM_{name}=N"


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except VerificationError as exc:
        print(f"gcsim: error: verification failed: {_flag_message(args, exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except CatalogueError as exc:
        print(f"gcsim: error: refused: {_flag_message(args, exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except InvalidArgumentError as exc:
        print(f"gcsim: error: {_limit_hint(_flag_message(args, exc))}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:
        # a run that failed (a solver, a rank, the ring), not bad usage: exit 1
        if not isinstance(exc, GcsimError):
            raise
        print(f"gcsim: error: failed: {_flag_message(args, exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except (GcsimError, ValueError) as exc:
        print(f"gcsim: error: {_limit_hint(_flag_message(args, exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `gcsim ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except OSError as exc:  # a path the checks above could not foresee (e.g. /proc, a full disk)
        print(f"gcsim: error: {os_reason(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as exc:
        detail = _first_line(exc) if str(exc) else "allocation failed"
        print(
            f"gcsim: error: out of memory ({detail}); gcsim.limits.MAX_DENSE_ENTRIES = "
            f"{limits.MAX_DENSE_ENTRIES:,} bounds single objects, choose smaller parameters",
            file=sys.stderr,
        )
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
