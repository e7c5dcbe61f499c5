#!/usr/bin/env python
"""Mutation testing of the analysis core with mutmut (``make mutation``; issue #32 item 7).

For each module of :data:`TARGETS` this runs ``mutmut run`` in its own work directory
``.mutation/<name>/`` (git-ignored, inside the repository): a ``pyproject.toml`` written there
selects the module to mutate and only the test files that test it, and mutmut's copy of the
package (``mutants/``), its caches and its results stay in that directory.  ``gcsim``, ``tests``
and ``designs`` are symbolic links to the repository's, so a run always sees the current code.

Every mutant is then classified by comparing its function with the original, node by node
(Python's ``ast``):

* **message-only** -- the change lies inside text a user reads and no computation uses: the
  message of a raised exception (for gcsim's errors: not the ``argument`` / ``condition`` field,
  which callers and tests inspect), the text arguments of :data:`_TEXT_ARGUMENTS` (what
  ``check_entries`` calls the array in its size error), the text or the ``stacklevel`` value of ``warnings.warn``, a
  docstring, the body of ``__repr__`` / ``__str__``, or the functions of :data:`TEXT_FUNCTIONS`
  (the explanation texts ``bibd_existence`` builds for its errors);
* **number-changing** -- every other mutant: it can change a returned value, a raised error's
  type or field, a warning's category, or whether something is raised at all.

The score printed per module is number-changing killed / number-changing total (a mutant that
times out counts as killed, one no selected test reaches counts as survived).  Message-only
mutants are counted apart, and so are the equivalent mutants of :data:`EQUIVALENT` (mutants that
cannot change any output, each with its reason); an entry whose mutant no longer changes the
recorded line is reported as stale and not applied.

Runs are slow (each mutant reruns the tests that reach its function), so mutmut runs under
``nice -n 19`` with at most ``--max-children`` (default 2) test processes.  ``--functions
GLOB,...`` restricts a run to the functions whose names match (a glob ``f`` also takes the
functions whose names extend it: ``optimal_error`` takes ``optimal_error_all``); the report then
says how many of the module's mutants ran.  ``--tests FILE,...`` replaces the module's test files.
The large modules (``coding.evaluate``, ``coding.bounds``, ``coding.partial``, ``coding.quantize``:
thousands of mutants) are measured on a random sample by default (``Target.sample``: 100
number-changing mutants of ``--seed`` 0's draw, with an exact 95 % interval, then every message-only
mutant apart), and so is ``coding.equal_load`` (600 mutants, each rerunning LPs: 60 of them);
``--sample K`` sets the size (``0``: every mutant); with ``--functions``, or on a target that names its
functions, it draws from those functions' mutants only.
Results are kept between runs with ``--resume``; the default starts fresh.  After a module changed,
``--resume`` drops mutmut's stale map from functions to tests (:func:`_refresh_test_map`) and runs by
name the mutants mutmut left unrun (:func:`_run_left_unrun`); a mutant still unrun is not counted.
Each worker is forked from mutmut's process; a pytest plugin (``_PLUGIN``) empties gcsim's function caches before every
test.

Example (each of the two small modules took about a quarter of an hour with one test process on
a loaded two-core machine)::

    .venv/bin/python scripts/mutation.py cerar.constructions combinatorics.bibd_existence
    .venv/bin/python scripts/mutation.py --list-survivors cerar.constructions   # the survivors' diffs

Exit status 0 when every module that ran reaches ``--threshold`` (default 0.85), 1 otherwise.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# the parts live in scripts/mutation_core/ (targets, classification, report); re-exported here, where
# make mutation, the docs' commands and tests/test_mutation_sample.py reach them
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_core.classify import Mutant, _classify  # noqa: E402
from mutation_core.report import _draw, _report, _report_sample, clopper_pearson  # noqa: E402, F401
from mutation_core.targets import EQUIVALENT, ROOT, TARGETS, TEXT_FUNCTIONS, WORK, Target  # noqa: E402, F401

# A pytest plugin loaded in every test run of mutmut: it empties the caches of gcsim's functions
# (functools.lru_cache / cache) before each test.  Without it a test meets values cached by an
# earlier test, so mutmut's map from functions to the tests that reach them (made in one process)
# misses tests, and a mutant behind a cache (bibd_existence._violations_list) looks unreached.
_PLUGIN = """
import sys

import pytest


@pytest.fixture(autouse=True)
def _gcsim_fresh_caches():
    for name, module in list(sys.modules.items()):
        if name == "gcsim" or name.startswith("gcsim."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and hasattr(value, "cache_info"):
                    clear()
    yield
"""


def _write_config(work: Path, target: Target) -> None:
    # the project's own pyproject.toml (pytest's options), with mutmut's section for this module
    lines = [
        (ROOT / "pyproject.toml").read_text(),
        "",
        "[tool.mutmut]",
        'source_paths = ["gcsim"]',
        f"only_mutate = {json.dumps(list(target.paths))}",
        f"pytest_add_cli_args_test_selection = {json.dumps([t for t in target.tests if (ROOT / t).exists()])}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "mutation_fresh_caches", "-q"]',
        'also_copy = ["mutation_fresh_caches.py"]',
        "use_git_change_detection = false",
        # workers fork from mutmut's own process (fast); the plugin below empties gcsim's caches
        # before each test, so nothing cached by the stats run reaches a mutant
        'process_isolation = "fork"',
        # a test run is stopped after (estimated seconds + 10) x 5 of wall time: mutmut's default (+1) x 15
        # stops healthy runs on a loaded machine under nice 19, and a stopped run counts as a kill
        "timeout_multiplier = 5.0",
        "timeout_constant = 10.0",
        "",
    ]
    (work / "pyproject.toml").write_text("\n".join(lines))
    (work / "mutation_fresh_caches.py").write_text(_PLUGIN.lstrip())


def _prepare(name: str, target: Target, *, resume: bool) -> Path:
    work = WORK / name
    if not resume and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for link in ("gcsim", "tests", "designs"):
        if not (work / link).exists():
            (work / link).symlink_to(ROOT / link)
    _write_config(work, target)
    return work


def _function_globs(modules: list[str], functions: list[str]) -> list[str]:
    # mutmut names a function module.x_name (a method module.xǁClassǁname) and its mutants
    # <that>__mutmut_<n>; one glob <that>* selects both (and any function whose name extends it)
    names = []
    for f in functions:
        for mangled in (f"x_{f}", f"xǁ*ǁ{f}") if "." not in f else (f"xǁ{f.replace('.', 'ǁ')}",):
            names += [f"{module}.{mangled}*" for module in modules]
    return names


def _matches(name: str, globs: list[str]) -> bool:
    """Whether mutmut's ``mutmut run GLOB ...`` selects the mutant ``name`` (its own test: fnmatch)."""
    return any(fnmatch.fnmatch(name, g) for g in globs)


_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


def _run_mutmut(work: Path, names: list[str], max_children: int, *, log_mode: str = "w") -> int:
    """``mutmut run`` in ``work`` on the mutants ``names`` (globs or exact names; none: all)."""
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = ["nice", "-n", "19", str(mutmut), "run", "--max-children", str(max_children), *names]
    # mutmut redraws a progress line many times a second: its output goes to a log, not the terminal
    with open(work / "mutmut.log", log_mode) as log:
        return subprocess.run(
            cmd, cwd=work, env=dict(os.environ, **_ENV), stdout=log, stderr=subprocess.STDOUT
        ).returncode


# mutmut's own first step (``mutmut run`` before it runs any test): copy the package, write the
# mutants and their ``.meta`` files.  The sample mode needs the list of mutants before it runs any.
_GENERATE = """
import os
import mutmut.__main__ as m
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
m.copy_src_dir()
m.copy_also_copy_files()
m.setup_source_paths()
m.store_lines_covered_by_tests()
m.create_mutants(1)
"""


def _generate(work: Path) -> int:
    cmd = ["nice", "-n", "19", sys.executable, "-c", _GENERATE]
    with open(work / "mutmut.log", "w") as log:
        return subprocess.run(
            cmd, cwd=work, env=dict(os.environ, **_ENV), stdout=log, stderr=subprocess.STDOUT
        ).returncode


def _generate_or_exit(work: Path) -> None:
    rc = _generate(work)
    if rc != 0:
        raise SystemExit(f"mutant generation failed (status {rc}); its output: {work / 'mutmut.log'}")


# --- after a module changed: mutmut's map from functions to tests, and the mutants it left unrun ---
#
# mutmut maps each function to the tests that reach it once (``mutants/mutmut-stats.json``) and on a
# later run maps only tests that are new.  After a module changes, the regenerated mutants of a new or
# changed function (the generation resets their results) find no tests, or stale ones, in that map:
# mutmut records "no tests" without running them, or leaves them "not checked".  And the first
# ``mutmut run`` after the generation saves the new function hashes into the map, so the change cannot
# be seen afterwards: it is checked right after the generation, before any run.


def _function_hashes(work: Path, target: Target) -> dict[str, str]:
    """mutmut's hash of each mutated function's source as generated now, by ``module.x_name``."""
    out: dict[str, str] = {}
    for path, module in zip(target.paths, target.modules, strict=True):
        meta = work / "mutants" / f"{path}.meta"
        if meta.exists():
            hashes = json.loads(meta.read_text()).get("hash_by_function_name", {})
            out |= {f"{module}.{function}": digest for function, digest in hashes.items()}
    return out


def _stale_map(current: dict[str, str], recorded: dict[str, str], mutants: list[Mutant], names: list[str]) -> list[str]:
    """Why mutmut's map from functions to tests must be collected again before ``names`` run (empty: it need not).

    ``current``: the functions' hashes now (:func:`_function_hashes`); ``recorded``: those the map
    was saved with (its ``function_hashes``).  A function new or changed since then may be reached by
    tests the map does not list; a mutant of ``names`` recorded "no tests" may have been judged
    with such a map (its function's change is no longer visible once a run saved the new hashes).
    """
    changed = sorted(f for f, digest in current.items() if recorded.get(f) != digest)
    wanted = set(names)
    no_tests = sorted(m.name for m in mutants if m.name in wanted and m.status == "no tests")
    reasons = []
    if changed:
        reasons.append(
            f"{len(changed)} functions new or changed since it was collected ({', '.join(changed[:3])}, ...)"
        )
    if no_tests:
        reasons.append(f"{len(no_tests)} mutants to run recorded 'no tests' ({', '.join(no_tests[:3])}, ...)")
    return reasons


def _refresh_test_map(work: Path, target: Target, mutants: list[Mutant], names: list[str]) -> bool:
    """Drop mutmut's map from functions to tests where :func:`_stale_map` says it is stale; True if dropped.

    The next ``mutmut run`` then maps every test afresh (the module's tests run once, as in a fresh
    run); the results already recorded stay.
    """
    stats = work / "mutants" / "mutmut-stats.json"
    if not stats.exists():
        return False
    recorded = json.loads(stats.read_text()).get("function_hashes", {})
    reasons = _stale_map(_function_hashes(work, target), recorded, mutants, names)
    if reasons:
        print("mutmut's map from functions to tests is collected again: " + "; ".join(reasons))
        stats.unlink()
    return bool(reasons)


def _unrun(mutants: list[Mutant], names: list[str]) -> list[str]:
    """The mutants of ``names`` (in their order) that mutmut has not run."""
    status = {m.name: m.status for m in mutants}
    return [n for n in names if status.get(n) == "not run"]


def _run_by_name(work: Path, names: list[str], batch: int, max_children: int) -> int:
    """``mutmut run`` on ``names``, ``batch`` per call, in their order; the first failing status, else 0."""
    for i in range(0, len(names), batch):
        rc = _run_mutmut(work, names[i : i + batch], max_children, log_mode="a")
        if rc != 0:
            print(f"mutmut exited with status {rc}; its output: {work / 'mutmut.log'}")
            return rc
    return 0


def _run_left_unrun(work: Path, target: Target, names: list[str], batch: int, max_children: int) -> list[str]:
    """Run by name the mutants of ``names`` mutmut left "not checked"; return those still unrun.

    A report counts a mutant only once it ran: one still unrun is neither killed nor survived.
    """
    left = _unrun(_classify(work, target), names)
    if not left:
        return []
    print(f"{len(left)} mutants left unrun by mutmut; running them by name")
    if _run_by_name(work, left, batch, max_children) == 0:
        left = _unrun(_classify(work, target), left)
    if left:
        print(f"  {len(left)} still not run (not counted): {', '.join(left[:5])}" + (", ..." if len(left) > 5 else ""))
    return left


def _selected(work: Path, target: Target, globs: list[str]) -> list[Mutant]:
    """The module's mutants, classified; only those of the functions ``globs`` selects, where there are any."""
    return [m for m in _classify(work, target) if not globs or _matches(m.name, globs)]


def _run_sample(
    work: Path,
    target: Target,
    size: int,
    seed: int,
    batch: int,
    max_children: int,
    *,
    resume: bool,
    globs: list[str] | None = None,
) -> list[str]:
    """Draw ``size`` number-changing mutants, run them in batches of ``batch`` in the drawn order.

    Then every message-only mutant of the module (a few dozen): they are counted apart, not sampled.
    ``globs`` (:func:`_function_globs`) narrows both to the functions it selects: the draw is then the
    module's draw with the other functions' mutants left out (each mutant's place depends on its name
    alone, :func:`_draw`).
    """
    _generate_or_exit(work)
    mutants = _selected(work, target, globs or [])
    # the population: every number-changing mutant, the listed equivalents included (one drawn is then
    # not counted: the rest is a uniform sample of the others)
    sample = _draw(mutants, seed)[:size]
    (work / "sample.json").write_text(json.dumps({"seed": seed, "size": size, "names": sample}, indent=1))
    # --resume keeps the kills and reruns the survivors (tests may have been added since)
    # (and does not rerun a listed equivalent mutant: it is not counted)
    done = {m.name for m in mutants if m.status in ("killed", "timeout") or m.name in EQUIVALENT} if resume else set()
    todo = [n for n in sample if n not in done]
    message = [m.name for m in mutants if m.kind == "message" and m.name not in done]
    if resume:  # the module may have changed since the map from functions to tests was made
        _refresh_test_map(work, target, mutants, todo + message)
    # batches in the drawn order: an interrupted run still leaves a finished prefix of the draw,
    # itself a uniform sample (mutmut runs the mutants of one call fastest first, not in our order)
    if _run_by_name(work, todo, batch, max_children) == 0 and _run_by_name(work, message, batch, max_children) == 0:
        _run_left_unrun(
            work, target, todo + message + _reset_by_mutmut(work, target, sample, mutants, done), batch, max_children
        )
    return sample


def _reset_by_mutmut(work: Path, target: Target, sample: list[str], before: list[Mutant], done: set[str]) -> list[str]:
    """The results ``--resume`` kept (``done``) that mutmut has since reset to "not checked", in draw order.

    mutmut 3 resets every recorded result when its test selection or test options changed (a test file
    added to the target, say); ``--resume`` did not run those mutants again, so the report would count
    them neither killed nor survived.  They run again by name instead.
    """
    kept = [n for n in sample if n in done and n not in EQUIVALENT]
    kept += [m.name for m in before if m.kind == "message" and m.name in done and m.name not in EQUIVALENT]
    reset = _unrun(_classify(work, target), kept)
    if reset:
        print(
            f"mutmut reset {len(reset)} results kept by --resume (its test selection or options changed); "
            "running them again"
        )
    return reset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (default: all): {', '.join(TARGETS)}")
    parser.add_argument("--functions", default="", metavar="GLOB,...", help="only these functions (globs)")
    parser.add_argument("--tests", default="", metavar="FILE,...", help="these test files instead of the module's own")
    parser.add_argument("--max-children", type=int, default=2, help="parallel test processes (default 2)")
    parser.add_argument("--resume", action="store_true", help="keep the results of the last run, run the rest")
    parser.add_argument("--report-only", action="store_true", help="print the last run's scores, run nothing")
    parser.add_argument("--list-survivors", action="store_true", help="print each number-changing survivor's diff")
    parser.add_argument("--threshold", type=float, default=0.85, help="score each module must reach (default 0.85)")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="K",
        help="run K number-changing mutants drawn at random (0: all; default: 100 for coding.evaluate, "
        "coding.bounds, coding.partial and coding.quantize, 60 for coding.equal_load and "
        "coding.sequential_multiplexed, all for the others)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    parser.add_argument(
        "--batch", type=int, default=20, help="--sample, and mutants run by name: mutants per mutmut call (default 20)"
    )
    args = parser.parse_args(argv)
    if not args.report_only and not Path(sys.executable).with_name("mutmut").exists():
        parser.error(
            f"mutmut is not installed beside {sys.executable}: pip install -e '.[mutation]' (make mutation does)"
        )
    unknown = [m for m in args.modules if m not in TARGETS]
    if unknown:
        parser.error(f"modules: unknown {unknown}; known: {', '.join(TARGETS)}")
    if args.max_children < 1:
        parser.error(f"--max-children must be >= 1, got {args.max_children}")
    if not 0 <= args.threshold <= 1:
        parser.error(f"--threshold must be in [0, 1], got {args.threshold}")
    tests = tuple(t for t in args.tests.split(",") if t)
    missing = [t for t in tests if not (ROOT / t).is_file()]
    if missing:
        parser.error(f"--tests: no such file {missing}")
    if (args.sample is not None and args.sample < 0) or args.batch < 1:
        parser.error(f"--sample must be >= 0 and --batch >= 1, got {args.sample} and {args.batch}")
    given = [f for f in args.functions.split(",") if f]
    scores = {}
    for name in args.modules or list(TARGETS):
        target = TARGETS[name]
        if tests:
            target = Target(target.paths, tests, functions=target.functions)
        work = WORK / name
        functions = given or list(target.functions)
        globs = _function_globs(target.modules, functions)
        # --functions runs every mutant of those functions; otherwise the module's own default (a sample
        # of the large modules) unless --sample says (then drawn from those functions' mutants)
        size = args.sample if args.sample is not None else (0 if functions else target.sample)
        if size:
            if args.report_only:
                drawn = json.loads((work / "sample.json").read_text()) if (work / "sample.json").exists() else {}
                if (drawn.get("seed"), drawn.get("size")) != (args.seed, size):
                    parser.error(f"{name}: the last run drew no sample of {size} with seed {args.seed}")
                sample = drawn["names"]
            else:
                work = _prepare(name, target, resume=args.resume)
                sample = _run_sample(
                    work, target, size, args.seed, args.batch, args.max_children, resume=args.resume, globs=globs
                )
            scores[name] = _report_sample(
                name,
                _selected(work, target, globs),
                sample,
                threshold=args.threshold,
                list_survivors=args.list_survivors,
                scope=f"functions' ({', '.join(functions)})" if functions else "module's",
            )
            continue
        if not args.report_only:
            work = _prepare(name, target, resume=args.resume)
            if args.resume:  # generate first: a change of the module is seen before mutmut's map is saved
                _generate_or_exit(work)
                _refresh_test_map(work, target, _classify(work, target), [])
            rc = _run_mutmut(work, globs, args.max_children)
            if rc != 0:
                print(f"{name}: mutmut exited with status {rc}; its output: {work / 'mutmut.log'}")
            else:
                selected = [m.name for m in _classify(work, target) if not globs or _matches(m.name, globs)]
                _run_left_unrun(work, target, selected, args.batch, args.max_children)
        scores[name] = _report(name, _classify(work, target), list_survivors=args.list_survivors)
    failing = [n for n, s in scores.items() if s is None or s < args.threshold]
    if failing:
        print(f"below {100 * args.threshold:.0f} % (or no mutant ran): {', '.join(failing)}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
