"""``gcsim --help`` and ``gcsim --version`` start at once: building the parser imports no heavy module.

The parser's choices and help texts come from :mod:`gcsim.app.help_texts` (checked here against
the modules they stand for); each command imports its implementation when it runs.  A Ctrl-C at
start-up is one line and status 130.  The start-up time itself is measured by
``benchmarks/bench_cli_startup.py`` (no timed test).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from gcsim.app import cli, help_texts

#: modules that building the parser must not import (numpy-heavy subpackages, optional dependencies)
HEAVY = (
    "gcsim.advisor",
    "gcsim.catalogue",
    "gcsim.coding",
    "gcsim.cerar",
    "gcsim.combinatorics",
    "gcsim.executor",
    "gcsim.learning",
    "gcsim.app.reproduce",
    "scipy",
    "sympy",
    "galois",
    "cvxpy",
    "torch",
)


def _imported(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_building_the_parser_imports_nothing_heavy():
    modules = _imported("from gcsim.app.cli import build_parser\nbuild_parser()")
    assert _heavy(modules) == []


def test_version_imports_nothing_heavy():
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gcsim", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and run.stdout.startswith("gcsim ")
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "gcsim.app.cli" in imported
    assert _heavy(imported) == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["construct", "--help"], ["advise", "--help"]])
def test_help_and_version_import_nothing_heavy_in_process(argv, capsys):
    before = set(sys.modules)
    if _heavy(before):  # another test of this session imported them already: check in a fresh process
        modules = _imported(f"from gcsim.app.cli import main\nmain({argv!r})")
        assert _heavy(modules) == []
        return
    assert cli.main(argv) == 0
    assert _heavy(set(sys.modules) - before) == []
    assert capsys.readouterr().out


def test_help_texts_name_what_the_modules_define():
    from gcsim.advisor.core import OBJECTIVES, STRAGGLER_SPEC
    from gcsim.app.reproduce import PAPER_ONLY, PAPERS
    from gcsim.coding.encoders import method_names

    assert help_texts.METHODS == method_names()
    assert help_texts.OBJECTIVES == OBJECTIVES
    # the static grammar of the built-in kinds (for --help without importing) is the registry's for them
    from gcsim.coding.straggler_models import model_class

    kinds = [g.partition(":")[0] for g in help_texts.STRAGGLER_SPEC.removeprefix("KIND:VALUES: ").split(", ")]
    assert help_texts.STRAGGLER_SPEC == "KIND:VALUES: " + ", ".join(model_class(k).spec_grammar() for k in kinds)
    assert help_texts.straggler_spec() == STRAGGLER_SPEC  # the registry is imported: every kind
    assert (help_texts.PAPERS, help_texts.PAPER_ONLY) == (PAPERS, PAPER_ONLY)


def test_a_ctrl_c_during_start_up_is_one_line_and_status_130(monkeypatch, capsys):
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["--version"]) == 130
    err = capsys.readouterr().err
    assert err == "gcsim: interrupted\n"


def test_a_ctrl_c_while_a_command_is_imported_is_one_line_and_status_130(monkeypatch, capsys):
    real = cli._command_module

    def module(name: str):
        if name == "advise":
            raise KeyboardInterrupt
        return real(name)

    monkeypatch.setattr(cli, "_command_module", module)
    assert cli.main(["advise", "--help"]) == 130
    assert capsys.readouterr().err == "gcsim: interrupted\n"
