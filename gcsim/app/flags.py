"""One meaning per flag: the vocabulary of the ``gcsim`` command line, and its deprecated spellings.

Every option of every command is listed in :data:`VOCABULARY` with the one thing it means and
its type; the help text of each of its uses begins with that meaning (``tests/test_cli_flags.py``
walks the parser and checks both, so a flag cannot mean two things in two commands, and a new
flag must be added here).  ``docs/guides/cli.md`` shows the table (:func:`vocabulary_table`).

Old spellings stay for one release as hidden aliases (:func:`deprecate`): they set the new
flag and print one line on stderr naming it, e.g. ``gcsim: warning: --N is deprecated: use
--workers (the number of workers)``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NamedTuple

__all__ = [
    "Flag",
    "VOCABULARY",
    "DEPRECATED_COMMANDS",
    "DeprecatedAlias",
    "RemovedFlag",
    "deprecate",
    "remove",
    "type_class",
]


class Flag(NamedTuple):
    """What a flag means (the start of its help in every command) and its type class."""

    meaning: str
    type: str  # "switch", "integer", "number", "text" (choices included) or a named type


#: flag -> its one meaning and type, for every command (help texts start with ``meaning``)
VOCABULARY: dict[str, Flag] = {
    "--json": Flag("print one JSON object", "switch"),
    "--limit": Flag("raise (or lower) a size limit", "limit"),
    "--version": Flag("show program's version", "switch"),
    # the question: workers, load, stragglers, delays
    "--workers": Flag("number of workers n", "integer"),
    "-n": Flag("number of workers n", "integer"),
    "--load": Flag("the most data a worker may hold", "load"),
    "--relax-load": Flag("an int --load is the parts per worker", "switch"),
    "--max-load": Flag("a cap on every worker's parts for the non-symmetric codes", "integer"),
    "--relax-comm": Flag("m = 1 codes (a full gradient per worker) are candidates too", "switch"),
    "--m": Flag("communication reduction m", "integer"),
    "--stragglers": Flag("stragglers", "straggler spec"),
    "-s": Flag("stragglers", "straggler spec"),
    "--delays": Flag("delay model", "text"),
    "--rule": Flag("arrival rule", "text"),
    "--links": Flag("bandwidth=B/s,latency=s,gradient-bytes=B", "text"),
    # the code
    "--design": Flag("the design", "text"),
    "--design-s": Flag("exact family: stragglers it is designed for", "integer"),
    "--method": Flag("encoder", "text"),
    "--eps": Flag("encoder ε", "number"),
    "--dist": Flag("RD/NS entry distribution", "text"),
    "--families": Flag("restrict to these families", "text"),
    "--group": Flag("coset graphs: group", "text"),
    "--c": Flag("components per gradient", "integer"),
    "--kappa": Flag("condition-number cap", "number"),
    "--kappas": Flag("condition-number caps", "text"),
    "--max-iter": Flag("alternating sweeps per start", "integer"),
    "--objective": Flag("objective", "text"),
    "--dtype": Flag("precision", "text"),
    "--d": Flag("gradient length", "integer"),
    "--s-max": Flag("largest number of stragglers tabulated", "integer"),
    # how it is computed
    "--evaluation": Flag("how the expected time is computed", "text"),
    "--samples": Flag("Monte Carlo", "integer"),
    "--chunk": Flag("plain Monte Carlo in seeded chunks", "integer"),
    "--draws": Flag("encoder redraws", "integer"),
    "--seed": Flag("seed", "integer"),
    "--scheduler": Flag("where", "scheduler"),
    "--processes": Flag("worker processes of --scheduler local", "integer"),
    "--bounds": Flag("comma-separated bound names", "text"),
    "--catalogue": Flag("check every named instance", "switch"),
    "--top": Flag("rows printed", "integer"),
    "--rank": Flag("rank of the candidate", "integer"),
    # files
    "--dir": Flag("catalogue folder", "text"),
    "--out": Flag("output folder", "text"),
    "--name": Flag("the name of the bundle", "text"),
    "--force": Flag("replace", "switch"),
    "--matrix": Flag("print the 0/1 assignment matrix", "switch"),
    "--mnist": Flag("folder of the full MNIST IDX files or an .npz", "text"),
    "--dataset": Flag("mnist", "text"),
    # engines and runs
    "--engine": Flag("engine", "text"),
    "--timeout": Flag("launcher timeout in seconds", "number"),
    "--verbose": Flag("let gloo's and c10's own log lines through", "switch"),
    "--baselines": Flag("also run", "switch"),
    "--repeats": Flag("timed repetitions", "integer"),
    "--workers-die": Flag("number of (seeded) worker processes that die", "integer"),
    "--deadline": Flag("instead: decode what arrives within this many seconds", "number"),
    "--codes": Flag("comma-separated label prefixes", "text"),
    "--iterations": Flag("training iterations", "integer"),
    "--lr": Flag("learning rate", "number"),
    "--optimizer": Flag("update rule", "text"),
    "--max-train": Flag("use only this many training examples", "integer"),
    "--code": Flag("the exported code", "text"),
    "--ranks": Flag("torch.distributed ranks", "integer"),
    "--network": Flag("the network trained with --code", "text"),
    "--batch-size": Flag("mini-batch of each data part", "integer"),
    "--collective": Flag("how the coded messages meet", "text"),
    "--full": Flag("paper-scale runs", "switch"),
    "--stage": Flag("run only this stage", "text"),
    "--paper": Flag("run the stages of this paper's experiments", "text"),
}

#: old command -> the command it is now (``gcsim run-cerar`` -> ``gcsim cerar run``)
DEPRECATED_COMMANDS: dict[str, tuple[str, ...]] = {"run-cerar": ("cerar", "run"), "run-gc": ("gc", "run")}


def type_class(action: argparse.Action) -> str:
    """The type class of an option: switch, integer, number, text, or the name of its type function."""
    if action.nargs == 0:
        return "switch"
    kind = getattr(action.type, "__name__", None) if action.type is not None else None
    if kind is None or kind == "str":
        return "text"
    return str(kind)


class DeprecatedAlias(argparse.Action):
    """A hidden old spelling: sets the new flag's value and prints one line naming the new flag."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, note: str = "", **kwargs: Any) -> None:
        self.new, self.note = new, note
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string=None):
        extra = f" ({self.note})" if self.note else ""
        print(f"gcsim: warning: {option_string} is deprecated: use {self.new}{extra}", file=sys.stderr)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        seen = getattr(namespace, "_deprecated", None) or []
        namespace._deprecated = [*seen, option_string]


def deprecate(p: argparse.ArgumentParser, old: str, new: str, *, note: str = "") -> None:
    """Accept ``old`` on ``p`` for one release as a hidden alias of its flag ``new``."""
    target = next(a for a in p._actions if new in a.option_strings)
    options: dict[str, Any] = {"nargs": 0} if target.nargs == 0 else {"type": target.type or str}
    if target.choices is not None:  # the old spelling refuses what the new one refuses, naming itself
        options["choices"] = target.choices
    p.add_argument(
        old,
        dest=target.dest,
        action=DeprecatedAlias,
        new=new,
        note=note,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        **options,
    )


class RemovedFlag(argparse.Action):
    """A hidden flag a command no longer has: giving it is a usage error (exit 2) that says why and what to use."""

    def __init__(self, option_strings: list[str], dest: str, *, why: str, **kwargs: Any) -> None:
        self.why = why
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string=None):
        parser.error(f"{option_string}: {self.why}")


def remove(p: argparse.ArgumentParser, old: str, why: str) -> None:
    """Refuse ``old`` on ``p`` with ``why`` (a removed flag; its value, if given, is read and ignored)."""
    p.add_argument(
        old,
        dest=f"_removed_{old.lstrip('-').replace('-', '_')}",
        action=RemovedFlag,
        why=why,
        nargs="?",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def deprecated_options(p: argparse.ArgumentParser) -> dict[str, str]:
    """old spelling -> new flag, of the hidden aliases of ``p``."""
    return {o: a.new for a in p._actions if isinstance(a, DeprecatedAlias) for o in a.option_strings}


def vocabulary_table() -> str:
    """The vocabulary as the Markdown table of ``docs/guides/cli.md`` (flag | meaning | type)."""
    rows = ["| flag | meaning | type |", "| --- | --- | --- |"]
    rows += [f"| `{flag}` | {f.meaning} | {f.type} |" for flag, f in VOCABULARY.items()]
    return "\n".join(rows)
