"""Property-based fuzzing of the ``gcsim`` command line, generated from its parser (issue #19 item 8).

The command lines are drawn from :func:`gcsim.app.cli.build_parser` itself: the test walks the
parser and its subparsers, collects each command's positionals and options with their types,
choices and ``nargs``, and draws valid-ish and invalid values for them (values for untyped
options come from the command's own ``--help`` examples, mutated, and from a pool of specs,
names and paths that are often wrong).  A command added to the parser is fuzzed without a change
here.  Each command line runs in-process, ``gcsim.app.cli.main(argv)``, in a fresh folder with
stdout and stderr captured.  The property:

* it returns 0, 1 or 2 (the exit codes of ``docs/guides/cli.md`` and :mod:`gcsim.app.cli`; ``exists``
  also 3/4), status 2 comes with a message on stderr, status 1 with one on stderr or a report on stdout;
* it never raises, never prints a Python traceback, never runs past the time bound;
* with ``--json`` and status 0 it prints exactly one JSON object on stdout;
* it writes nothing outside the folders the command line names (``--out``, ``--export``,
  ``--dir``) or, when it names none, outside its working folder: the sandbox around the working
  folder and the packaged catalogue are snapshotted before and after each example, the
  repository's ``git status`` before and after the whole test (``fuzz-long``: every example;
  not under ``make test``'s parallel workers, where other test files write at the same time).

Excluded or bounded commands (the bound is part of the generated grammar):

* ``reproduce`` -- excluded: it runs every experiment stage (minutes even at the quick scale);
* ``gc run`` -- excluded: it launches torch.distributed (gloo) rank processes; its
  bad-input cases are in ``scripts/reliability/cases_executor.py`` and ``tests/test_executor_faults.py``;
* every command with an ``--engine`` option -- bounded to ``--engine numpy`` where that is a choice
  (``cerar run``: in-process buffers), else excluded (rule applied to whatever the walk finds);
* ``--limit NAME=VALUE`` (a global option) -- only lowered or malformed limits;
* ``train`` -- on the digits data (``--dataset digits``: MNIST loads 5,000 images first), bounded
  to ``--iterations`` <= 3 and ``--max-train`` <= 200 (a full run trains for minutes);
* ``--scheduler`` -- only ``serial`` and malformed values: ``local`` starts a Dask cluster of
  worker processes and an address would wait for a scheduler.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fuzzing import EXAMPLE_SECONDS, LONG, bounded, changed, fuzz_settings, repo_changes, repo_status, snapshot
from hypothesis import given, strategies as st

from gcsim.app.cli import build_parser, main
from gcsim.app.paths import packaged_catalogue

DESIGNS = packaged_catalogue()  # the catalogue gcsim ships (designs/ in a checkout): never written here

#: Commands never run by the fuzzer, and why (see the module docstring).
EXCLUDED = {
    ("reproduce",): "runs every experiment stage (minutes)",
    ("gc", "run"): "launches torch.distributed rank processes",
}
#: Always added to these commands' argv (so a drawn line without the flag is bounded too).
ALWAYS = {("train",): ["--iterations", "2", "--max-train", "100", "--dataset", "digits"]}
#: Put before the drawn options (argparse keeps the last value, so a drawn value still wins): defaults
#: that would make a valid line slow (the cvxpy optimizer runs 30 iterations over 4 kappas by default).
FIRST = {
    ("cerar", "optimize"): ["--max-iter", "2", "--workers", "3", "--c", "4"],
    ("cerar", "pareto"): ["--max-iter", "2", "--kappas", "5", "--workers", "3", "--c", "4"],
    ("cerar", "design"): ["--max-iter", "2"],
    ("cerar", "simulate"): ["--max-iter", "2"],
}
_SMALL_ITER = st.sampled_from(["1", "2", "0", "-1", "x", "1e9"]).map(lambda v: ["--max-iter", v])
_SMALL_RING = {
    flag: st.sampled_from(["2", "3", "4", "0", "1", "-1", "x", "10" + "0" * 30]).map(lambda v, f=flag: [f, v])
    for flag in ("--workers", "--c")
}
#: Options pinned to a bounded strategy for one command (flag -> strategy of argv values).
BOUNDED: dict[tuple[str, ...], dict[str, st.SearchStrategy[list[str]]]] = {
    ("cerar", "optimize"): {"--max-iter": _SMALL_ITER, **_SMALL_RING},
    ("cerar", "pareto"): {"--max-iter": _SMALL_ITER, **_SMALL_RING},
    ("cerar", "design"): {"--max-iter": _SMALL_ITER},
    ("cerar", "simulate"): {"--max-iter": _SMALL_ITER},
    ("train",): {
        "--iterations": st.sampled_from(["1", "2", "3", "0", "-1", "x"]).map(lambda v: ["--iterations", v]),
        "--max-train": st.sampled_from(["50", "200", "0", "-5", "1e9"]).map(lambda v: ["--max-train", v]),
    },
}


@dataclass(frozen=True)
class KnownCliDefect:
    """An open CLI defect (strict xfail in ``test_fuzz_found.py``): the fuzzer looks past it."""

    name: str
    matches: Callable[[list[str], int, str, str], bool]  # (argv, status, stdout, stderr)


#: None open: ``gcsim load ' '`` printed its refusal on stdout until de0e30c (#19 item 7).
KNOWN_CLI_DEFECTS: tuple[KnownCliDefect, ...] = ()
SCHEDULER_VALUES = ["serial", "", "nope", "local:0", "SERIAL"]
#: Option destinations that name an output folder: writes below them are allowed.
OUTPUT_DESTS = ("out", "export", "dir")


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    positionals: tuple[argparse.Action, ...]
    options: tuple[argparse.Action, ...]
    examples: dict[str, tuple[str, ...]]  # option -> values seen in the command's --help examples


def _examples(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """``--flag value`` pairs in the epilog's example lines."""
    found: dict[str, set[str]] = {}
    for line in (parser.epilog or "").splitlines():
        words = line.split("#")[0].split()
        for flag, value in zip(words, words[1:], strict=False):
            if flag.startswith("-") and not value.startswith("-"):
                found.setdefault(flag, set()).add(value)
    return {k: tuple(sorted(v)) for k, v in found.items()}


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[Command]:
    """Every runnable command of the parser (a leaf of the subparser tree)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        out = []
        for action in subs:
            for name, child in action.choices.items():
                out.extend(walk(child, (*path, name)))
        return out
    actions = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
    return [
        Command(
            path,
            tuple(a for a in actions if not a.option_strings),
            tuple(a for a in actions if a.option_strings),
            _examples(parser),
        )
    ]


def _engine_rule(command: Command) -> str | None:
    """Commands with an ``--engine``: pinned to ``numpy`` (in-process) where it is a choice, else excluded.

    Applied to every command the walk finds, so a new engine command cannot launch rank processes
    from the fuzzer by default.
    """
    for action in command.options:
        if "--engine" in action.option_strings:
            if action.choices and "numpy" in action.choices:
                ALWAYS[command.path] = ALWAYS.get(command.path, []) + ["--engine", "numpy"]
                BOUNDED.setdefault(command.path, {})["--engine"] = st.just(["--engine", "numpy"])
                return None
            return f"launches rank processes (--engine {'/'.join(map(str, action.choices or ()))})"
    return None


for _command in walk(build_parser()):
    if _command.path not in EXCLUDED and (_why := _engine_rule(_command)):
        EXCLUDED[_command.path] = _why
COMMANDS = [c for c in walk(build_parser()) if c.path not in EXCLUDED]
#: Options of the ``gcsim`` parser itself (before the command), e.g. ``--limit NAME=VALUE``.
ROOT_OPTIONS = tuple(
    a
    for a in build_parser()._actions
    if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))
)
#: ``--limit`` values that lower a limit or are malformed (raising one lets valid inputs run long).
LIMIT_VALUES = ["MAX_DENSE_ENTRIES=1000", "MAX_PATTERNS=10", "MAX_DENSE_ENTRIES=0", "NOPE=5", "MAX_PATTERNS", "=3"]

# --------------------------------------------------------------------------- values


def _huge() -> str:
    return "9" * 5000


INT_VALUES = st.one_of(
    st.integers(0, 12).map(str),
    st.integers(0, 12).map(str),
    st.sampled_from(["-1", "0", "10" + "0" * 30, "2147483648", "1e3", "3.5", "nan", "inf", "x", "", " 3", "0x10"]),
    st.builds(_huge),
)
NUMBER_VALUES = st.one_of(
    st.floats(0, 2, allow_nan=False).map(repr),
    st.sampled_from(["0", "0.1", "1", "-1", "nan", "inf", "-inf", "1e400", "1e-320", "x", "", "1,2", "1e30"]),
)
#: Specs, names and paths that are right, nearly right or wrong, for options the parser types as str.
STRING_POOL = [
    "",
    " ",
    "x",
    "-",
    "bibd:7,3,1",
    "bibd:13,4,1",
    "bibd:7,3,1,9",
    "bibd:7,3",
    "bibd:7,3,x",
    "bibd:10000001,3,1",
    "srg:10,3,0,1",
    "srg:10,3,0",
    "coset:27,2,5",
    "coset:27,2,5,1,1",
    "biregular:40,20,3",
    "biregular:40,20,3,6",
    "pg2_9",
    "petersen",
    "paley13",
    "nope_design",
    "bernoulli:0.1",
    "bernoulli:2",
    "fixed:2",
    "fixed:-1",
    "fixed:2,3",
    "shifted-exponential:shift=1,rate=1",
    "shifted-exponential:shift=1,rate=1,rate=2",
    "pareto:scale=1,shape=nan",
    "bimodal:p_slow=0.5",
    "trace:delays.npy",
    "trace:complex.npy",
    "trace:fifo",
    "trace:missing.npy",
    "first:s=2",
    "first:s=100",
    "deadline:deadline=2.5",
    "relative:mu=-1",
    "bandwidth=1e9,latency=1e-4,gradient-bytes=4e6",
    "bandwidth=-1",
    "error,time",
    "data",
    "rank_lower,rd_upper",
    "uncoded,rd",
    "3,10",
    "out",
    "sub/dir",
    "../escape",
    "a/../../escape",
    "fifo",
    "file.txt",
    "dir",
    "mine/bibd/fano",
    "mine/bibd/fano.json",
    "mine/bibd/tampered",
    "/dev/null",
    "/dev/zero",
    "/proc/self/status",
    "nul\x01l",
    "é",
]


def _mutate(value: str, how: int, edge: str) -> str:
    """A harvested example value, nearly right: a number replaced, a part dropped or repeated."""
    numbers = list(re.finditer(r"\d+(\.\d+)?(e-?\d+)?", value))
    if how == 0 and numbers:
        m = numbers[len(numbers) // 2]
        return value[: m.start()] + edge + value[m.end() :]
    if how == 1 and "," in value:
        return value.rsplit(",", 1)[0]
    if how == 2:
        return value + ("," + value.split(",")[-1] if "," in value else ",1")
    if how == 3 and ":" in value:
        return value.split(":", 1)[0] + ":"
    return value.upper()


def _string_values(examples: tuple[str, ...]) -> st.SearchStrategy[str]:
    pool = st.sampled_from(STRING_POOL)
    if not examples:
        return pool
    good = st.sampled_from(examples)
    edges = st.sampled_from(["0", "-1", "nan", "1e400", "10" + "0" * 30, "x", ""])
    return st.one_of(good, good, st.builds(_mutate, good, st.integers(0, 4), edges), pool)


def _values(action: argparse.Action, examples: dict[str, tuple[str, ...]]) -> st.SearchStrategy[str]:
    type_name = getattr(action.type, "__name__", None)
    if action.choices:
        return st.one_of(st.sampled_from(sorted(map(str, action.choices))), st.sampled_from(["", "nope"]))
    if type_name == "scheduler":
        return st.sampled_from(SCHEDULER_VALUES)
    if type_name == "integer" or action.type is int:
        return INT_VALUES
    if type_name in ("number", "_load") or action.type is float:
        return st.one_of(NUMBER_VALUES, INT_VALUES)
    seen = tuple(v for flag in action.option_strings for v in examples.get(flag, ()))
    return _string_values(seen)


def _option_argv(action: argparse.Action, examples) -> st.SearchStrategy[list[str]]:
    flag = st.sampled_from(action.option_strings)
    if action.nargs == 0:  # store_true / store_const
        return flag.map(lambda f: [f])
    value = _values(action, examples)
    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return st.builds(lambda f, vs: [f, *vs], flag, st.lists(value, min_size=0, max_size=4))
    if isinstance(action, argparse._AppendAction):
        return st.builds(lambda f, vs: [x for v in vs for x in (f, v)], flag, st.lists(value, min_size=1, max_size=2))
    # sometimes the flag without its value, or with the value glued on by '='
    return st.one_of(
        st.builds(lambda f, v: [f, v], flag, value),
        st.builds(lambda f, v: [f, v], flag, value),
        st.builds(lambda f, v: [f"{f}={v}"] if f.startswith("--") else [f, v], flag, value),
        flag.map(lambda f: [f]),
    )


def _positional_argv(action: argparse.Action, examples) -> st.SearchStrategy[list[str]]:
    value = _values(action, examples)
    if action.nargs in ("+", "*"):
        # the families' parameter counts (2 to 5) and a few wrong ones
        return st.lists(value, min_size=0 if action.nargs == "*" else 1, max_size=6)
    return value.map(lambda v: [v])


def _command_lines(command: Command) -> st.SearchStrategy[list[str]]:
    bounded_opts = BOUNDED.get(command.path, {})
    options = [
        bounded_opts[a.option_strings[0]] if a.option_strings[0] in bounded_opts else _option_argv(a, command.examples)
        for a in command.options
    ]
    positionals = st.tuples(*[_positional_argv(a, command.examples) for a in command.positionals])

    @st.composite
    def line(draw):
        chosen = draw(st.lists(st.sampled_from(range(len(options))), max_size=6, unique=True)) if options else []
        argv: list[str] = []
        for pos in draw(positionals):
            argv.extend(pos)
        for i in chosen:
            argv.extend(draw(options[i]))
        if draw(st.integers(0, 9)) == 0 and len(argv) > 1:  # now and then a word dropped
            del argv[draw(st.integers(0, len(argv) - 1))]
        root: list[str] = []
        for action in ROOT_OPTIONS:  # now and then a global option before the command
            if draw(st.integers(0, 7)) == 0:
                if "--limit" in action.option_strings:
                    root += ["--limit", draw(st.sampled_from(LIMIT_VALUES))]
                elif action.nargs == 0:
                    root += [action.option_strings[0]]
        return [*root, *command.path, *FIRST.get(command.path, []), *argv, *ALWAYS.get(command.path, [])]

    return line()


COMMAND_LINES = st.one_of(
    *[_command_lines(c) for c in COMMANDS],
    st.sampled_from([[], ["--version"], ["nope"], ["cerar"], ["bounds"], ["--json"], ["construct", "--help"]]),
)

# --------------------------------------------------------------------------- the sandbox


def _prepare(work: Path, template: Path) -> None:
    """Files that the string pool names: a trace, a complex trace, a FIFO, bundles, a folder."""
    np.save(work / "delays.npy", np.arange(1.0, 61.0).reshape(6, 10))
    np.save(work / "complex.npy", np.ones((6, 10), dtype=complex))
    (work / "file.txt").write_text("not a bundle\n")
    (work / "dir").mkdir()
    os.mkfifo(work / "fifo")
    shutil.copytree(template / "mine", work / "mine")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A catalogue folder made once: the Fano plane, and a copy with one flipped data byte."""
    import gcsim

    root = tmp_path_factory.mktemp("fuzz-cli-template")
    folder = root / "mine" / "bibd"
    gcsim.export_object(gcsim.bibd(7, 3, 1), root / "mine", "fano")  # into mine/<kind>/
    (folder / "tampered.json").write_text((folder / "fano.json").read_text())
    data = bytearray((folder / "fano.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "tampered.npz").write_bytes(bytes(data))
    return root


def _allowed_roots(argv: list[str], cwd: Path) -> list[Path]:
    """The output folders the command line names (resolved in ``cwd``), else ``cwd`` itself."""
    dests = {}
    for command in COMMANDS:
        if list(command.path) == argv[: len(command.path)]:
            dests = {s: a.dest for a in command.options for s in a.option_strings}
    roots = []
    for i, word in enumerate(argv):
        flag, eq, glued = word.partition("=")
        if dests.get(flag) in OUTPUT_DESTS:
            value = glued if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if value:
                roots.append(Path(os.path.abspath(cwd / value)))
    return roots or [cwd]


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), bounded(EXAMPLE_SECONDS):
            rc = main(argv)
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@fuzz_settings(3)
@given(COMMAND_LINES)
def test_command_lines(template, argv):
    with tempfile.TemporaryDirectory(dir=template.parent, prefix="fuzz-cli-") as box:
        sandbox = Path(box)
        cwd = sandbox / "cwd"
        cwd.mkdir()
        _prepare(cwd, template)
        watched = sandbox.parent  # the sandbox, its siblings (other examples' leftovers) and the template
        before, designs_before = snapshot(watched), snapshot(DESIGNS)
        repo_before = repo_status() if LONG else None
        rc, out, err = _run(argv, cwd)
        if any(known.matches(argv, rc, out, err) for known in KNOWN_CLI_DEFECTS):
            return
        # `gcsim exists` answers with its status: 3 does not exist, 4 unknown
        assert rc in (0, 1, 2) or (argv[:1] == ["exists"] and rc in (3, 4)), f"exit status {rc!r}"
        assert "Traceback (most recent call last)" not in out + err, err[-2000:]
        if rc == 2 or (rc == 1 and len(out.strip().splitlines()) < 2):
            # a usage error or a failure message goes to stderr; exit 1 may instead come with the
            # command's report on stdout (catalogue's table, bounds verify: "ran, found a failure")
            assert err.strip(), f"exit {rc} with nothing on stderr (stdout: {out[:300]!r})"
        if rc == 0 and "--json" in argv and not {"-h", "--help", "--version"} & set(argv):
            assert isinstance(json.loads(out), dict), "--json printed something other than one JSON object"
        roots = _allowed_roots(argv, cwd)
        # inside a named folder, or a folder made on the way to one (mkdir -p)
        outside = [
            p
            for p in changed(before, snapshot(watched))
            if not any(_within(Path(p), r) or (_within(r, Path(p)) and Path(p).is_dir()) for r in roots)
        ]
        assert not outside, f"wrote outside {[str(r) for r in roots]}: {outside[:5]}"
        assert not changed(designs_before, snapshot(DESIGNS)), "wrote into the packaged catalogue"
        if repo_before is not None:
            assert not repo_changes(repo_before, repo_status()), "changed the repository"


@pytest.fixture(scope="module", autouse=True)
def _repository_untouched():
    """No new entry in the repository's ``git status`` across the whole CLI fuzz run.

    Not under ``make test``'s xdist workers: there, other test files run at the same time and
    their own files would be blamed on this one (the per-example checks still run).
    """
    check = LONG or not os.environ.get("PYTEST_XDIST_WORKER")
    before = repo_status() if check else set()
    yield
    if check:
        assert not repo_changes(before, repo_status())


def test_every_command_is_fuzzed_or_excluded():
    """The walk finds every command of the parser; the excluded ones are named with a reason, and no
    fuzzed command can launch rank processes (its --engine is pinned to numpy)."""
    found = {c.path for c in walk(build_parser())}
    assert ("reproduce",) in found and ("reproduce",) in EXCLUDED
    assert {("construct",), ("cerar", "design"), ("decoder-table",), ("advise",)} <= {c.path for c in COMMANDS}
    assert set(BOUNDED) <= found and set(ALWAYS) <= found and set(FIRST) <= found
    for command in COMMANDS:
        if any("--engine" in a.option_strings for a in command.options):
            assert ALWAYS[command.path][-2:] == ["--engine", "numpy"], command.path
