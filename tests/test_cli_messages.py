"""The flags that messages and docs tell a user to type exist, on that command (review leftovers, item 2).

The catalogue's refusals said ``give --dir DIR ... to export`` after ``--export DIR`` became the
way to export.  Two checks: every ``gcsim <command> ... --flag`` written in the docs, the examples,
the scripts and the string constants of the package names an option of that command (not a
deprecated spelling); and every refusal of ``gcsim catalogue`` names only options of ``catalogue``
and, when it asks for a folder to write into, asks for ``--out DIR`` (``--export DIR`` before #34).
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from gcsim.app import paths
from gcsim.app.cli import build_parser, main
from gcsim.app.flags import DeprecatedAlias, RemovedFlag

ROOT = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w-])--?[a-zA-Z][a-zA-Z0-9-]*")
#: ``gcsim [--limit X]... WORD [WORD] REST``: a command line in prose or code (not gcsim.x, gcsim/x)
CALL = re.compile(r"(?<![\w./-])gcsim((?:\s+--limit[ =]\S+)*)\s+([a-z][a-z0-9-]*)(?:\s+([a-z][a-z0-9-]*))?([^`\n\"']*)")


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name))


#: command words -> option -> True when it is a deprecated (or removed) spelling
OPTIONS = {
    words: {o: isinstance(a, (DeprecatedAlias, RemovedFlag)) for a in p._actions for o in a.option_strings}
    for words, p in _commands(build_parser())
}


def _wrong_flags(text: str) -> list[str]:
    """The flags of each ``gcsim <command> ...`` in ``text`` that the command lacks or deprecates."""
    out = []
    for m in CALL.finditer(text):
        first, second, rest = m.group(2), m.group(3), m.group(4)
        if (first,) not in OPTIONS:
            continue
        words = (first, second) if second and (first, second) in OPTIONS else (first,)
        if second and len(words) == 1:
            rest = f" {second}{rest}"
        rest = re.split(r"\s[#|;]|&&|\|", rest)[0]  # up to a comment or the next command
        for flag in FLAG.findall(rest):
            deprecated = OPTIONS[words].get(flag, OPTIONS[()].get(flag))
            if deprecated is None or deprecated:
                out.append(f"gcsim {' '.join(words)} {flag} ({'deprecated' if deprecated else 'no such option'})")
    return out


def test_the_check_can_fail():
    assert _wrong_flags("run `gcsim catalogue --dirs D --json`") == ["gcsim catalogue --dirs (no such option)"]
    assert _wrong_flags("gcsim --limit MAX_PATTERNS=1e8 error --design pg2_9 --bogus 3") == [
        "gcsim error --bogus (no such option)"
    ]
    assert _wrong_flags("gcsim decode-time --method rd") == ["gcsim decode-time --method (deprecated)"]
    assert _wrong_flags("gcsim cerar run --workers 4  # and gcsim.cerar --x") == []


def test_command_lines_in_docs_and_messages_use_the_commands_flags():
    found, calls = [], 0
    texts = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]
    texts += [*(ROOT / "scripts").rglob("*.py")]
    for path in texts:
        if path.name in ("theory.md", "reliability.md"):  # assembled from chapters / recorded outputs
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "deprecated" in line:  # names the old spelling on purpose
                continue
            calls += len(CALL.findall(line))
            found += [f"{path.relative_to(ROOT)}:{i}: {w}" for w in _wrong_flags(line)]
    for path in sorted((ROOT / "gcsim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "deprecated" not in node.value:
                calls += len(CALL.findall(node.value))
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {w}" for w in _wrong_flags(node.value)]
    assert calls > 200, calls  # the walk sees the command lines
    assert not found, "\n".join(found)


def _catalogue_flags(err: str) -> set[str]:
    return set(FLAG.findall(err.split("gcsim: error:", 1)[-1]))


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["catalogue", "--force"], "--force"),
        (["catalogue", "--export"], "--out"),  # the deprecated bare --export, without --dir
        (["catalogue", "--export", "--force", "--json"], "--out"),
    ],
)
def test_a_write_without_a_folder_asks_for_export_dir(tmp_path, monkeypatch, capsys, argv, flag):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"gcsim: error: {flag}: ") and "--out DIR" in err, err
    assert _catalogue_flags(err) <= {o for o, old in OPTIONS[("catalogue",)].items() if not old}, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["--out", "{d}"], ["--dir", "{d}", "--force"]])
def test_the_installed_package_refusal_asks_for_export_dir(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.setattr(paths, "inside_installed_package", lambda path: True)
    assert main(["catalogue", *(a.format(d=tmp_path / "cat") for a in argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert "inside the installed gcsim package" in err and "give --out DIR" in err, err
    assert "--dir DIR" not in err, err
    assert not (tmp_path / "cat").exists()
