"""One output-path rule for every command that writes (issue #19 item 3).

The writing commands are *enumerated from the argument parser* (every leaf command with a folder
flag: ``--out``, ``--dir``), so a new writing command without a sample here fails
:func:`test_every_writing_command_has_a_sample`, and each sample is then run against links planted
where it writes: a command that does not go through :func:`gcsim.app.common.output_path` writes
through them (or is not refused) and fails.  The rule itself is checked on its own cases, against
``os.path.realpath`` (an independent resolution), not against itself.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gcsim.app.cli import build_parser, main
from gcsim.app.common import UsageError, output_path

posix_only = pytest.mark.skipif(os.name != "posix", reason="symbolic links")

#: flags whose value is a folder a command writes into
FOLDER_FLAGS = ("--out", "--dir")
#: value-taking flags whose help speaks of folders or files but that name nothing written
READ_ONLY = {
    ("advise", "--rank"),  # which candidate --out exports
    ("train", "--mnist"),
    ("load", "path"),
    ("cerar", "simulate", "--design"),
    ("cerar", "run", "--design"),
    ("error", "--design"),
    ("bounds", "--design"),
    ("decoder-table", "--design"),
    ("gc", "run", "--design"),
    ("decode-time", "--delays"),
    ("advise", "--delays"),
    ("train", "--delays"),
    ("gc", "run", "--delays"),
    ("decoder-table", "--code"),  # the exported code: read, verified, never written
    ("train", "--code"),
    ("gc", "run", "--code"),
}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and path:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def writing_commands() -> dict[tuple[str, ...], str]:
    """Every leaf command of the parser that writes, and its folder flag."""
    found = {}
    for path, parser in _leaves(build_parser()):
        for action in parser._actions:
            flags = [f for f in action.option_strings if f in FOLDER_FLAGS]
            if flags and _takes_value(action):
                found[path] = flags[0]
    return found


def test_no_unclassified_path_flag():
    """A value flag whose help mentions writing, a folder or a file is a folder flag or known read-only."""
    unclassified = []
    for path, parser in _leaves(build_parser()):
        for action in parser._actions:
            if not _takes_value(action) or isinstance(action, argparse._HelpAction):
                continue
            names = action.option_strings or [action.dest]
            if any(n in FOLDER_FLAGS for n in names):
                continue
            if re.search(r"\b(write|writes|folder|directory|file|export|save)\b", action.help or "", re.I):
                if not any((*path, n) in READ_ONLY for n in names):
                    unclassified.append((*path, names[0]))
    assert unclassified == [], f"classify these flags (folder flag or READ_ONLY): {unclassified}"


#: each writing command, as a fast run into the folder given (the folder flag comes last)
SAMPLES: dict[tuple[str, ...], Callable[[str], list[str]]] = {
    ("construct",): lambda f: ["construct", "bibd", "7", "3", "1", "--out", f],
    ("cerar", "design"): lambda f: [
        "cerar",
        "design",
        "--workers",
        "3",
        "--c",
        "3",
        "--method",
        "exact",
        "--out",
        f,
    ],
    ("cerar", "optimize"): lambda f: [
        "cerar",
        "optimize",
        "--workers",
        "3",
        "--c",
        "4",
        "--kappa",
        "5",
        "--max-iter",
        "1",
        "--out",
        f,
    ],
    ("cerar", "simulate"): lambda f: [
        "cerar",
        "simulate",
        "--workers",
        "3",
        "--c",
        "3",
        "--method",
        "exact",
        "--d",
        "8",
        "--out",
        f,
    ],
    ("decoder-table",): lambda f: ["decoder-table", "--design", "bibd:7,3,1", "--s-max", "1", "--out", f],
    ("advise",): lambda f: [
        "advise",
        "--workers",
        "13",
        "--load",
        "4",
        "--m",
        "2",
        "--stragglers",
        "fixed:1",
        "--families",
        "bibd",
        "--samples",
        "100",
        "--out",
        f,
    ],
    ("catalogue",): lambda f: ["catalogue", "--out", f],
    ("reproduce",): lambda f: ["reproduce", "--stage", "catalogue", "--out", f],
    ("train",): lambda f: ["train", "--iterations", "2", "--codes", "uncoded", "--out", f],
}


def _has_flag(path: tuple[str, ...], flag: str) -> bool:
    parser = dict(_leaves(build_parser()))[path]
    return any(flag in a.option_strings for a in parser._actions)


def test_every_writing_command_has_a_sample():
    """The parser's writing commands are exactly the sampled ones: a new writer must be added (and checked)."""
    writers = writing_commands()
    assert set(writers) == set(SAMPLES), (
        f"writing commands without a sample: {sorted(set(writers) - set(SAMPLES))}; "
        f"samples of no writing command: {sorted(set(SAMPLES) - set(writers))}"
    )
    assert len(writers) >= 9


#: progress lines a long command prints on a piped stderr (gcsim._progress.progress_line's, one format)
_PROGRESS = re.compile(r"^gcsim: progress: ")


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr without its progress lines (what is left is the messages)."""
    code = main(argv)
    out, err = capsys.readouterr()
    err = "".join(line for line in err.splitlines(keepends=True) if not _PROGRESS.match(line))
    return code, out, err


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry below ``root`` (links not followed): relative path -> bytes of a file, None otherwise."""
    entries: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            entries[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return entries


def _argv(path: tuple[str, ...], folder: Path, force: bool = True) -> list[str]:
    argv = SAMPLES[path](str(folder))
    if force and _has_flag(path, "--force"):
        argv.append("--force")
    return argv


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[tuple[str, ...], dict[str, bytes | None]]:
    """What each sample writes into a fresh folder (run once per command)."""
    import contextlib
    import io

    trees = {}
    for path in SAMPLES:
        folder = tmp_path_factory.mktemp("plain") / "out"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(_argv(path, folder, force=False))
        assert code == 0, path
        trees[path] = _tree(folder)
        assert trees[path], f"{path} wrote nothing"
    return trees


def _plant(folder: Path, outside: Path, entries: list[str], is_dir: Callable[[str], bool]) -> None:
    """Make each of ``entries`` (relative paths) a link into ``outside``; a folder's link points at a folder."""
    for rel in entries:
        link = folder / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        target = outside / rel.replace(os.sep, "__")
        if is_dir(rel):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.write_bytes(b"sentinel: must not be overwritten\n")
        os.symlink(target, link)


@posix_only
@pytest.mark.parametrize("path", sorted(SAMPLES), ids=" ".join)
def test_a_link_planted_where_a_command_writes_is_refused(path, written, tmp_path, capsys):
    """Each top-level entry the command writes, made a link to a folder outside: refused naming the flag."""
    tree = written[path]
    folder, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    top = sorted({rel.split(os.sep)[0] for rel in tree})
    _plant(folder, outside, top, lambda rel: tree[rel] is None)
    before = _tree(outside)
    code, out, err = _run(capsys, _argv(path, folder))
    flag = writing_commands()[path]
    assert code == 2, (path, out, err)
    assert re.fullmatch(rf"gcsim: error: {flag}: '[^\n]*' is a symbolic link to '[^\n]*', outside [^\n]*\n", err), err
    assert _tree(outside) == before, "a write went through a planted link"


@posix_only
@pytest.mark.parametrize("path", sorted(SAMPLES), ids=" ".join)
def test_links_planted_at_every_file_are_never_written_through(path, written, tmp_path, capsys):
    """Every file the command writes (at any depth), made a link outside: refused, or the links are replaced."""
    tree = written[path]
    folder, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    for rel, content in tree.items():
        if content is None:
            (folder / rel).mkdir(parents=True, exist_ok=True)
    files = [rel for rel, content in tree.items() if content is not None]
    _plant(folder, outside, files, lambda rel: False)
    before = _tree(outside)
    code, out, err = _run(capsys, _argv(path, folder))
    assert _tree(outside) == before, "a write went through a planted link"
    if code == 0:  # written anyway: then atomically, the links replaced by the new files
        assert all(not (folder / rel).is_symlink() for rel in files)
    else:
        assert code == 2 and len(err.splitlines()) == 1 and "symbolic link" in err, err


def _name_commands() -> list[tuple[str, ...]]:
    return [p for p in sorted(SAMPLES) if _has_flag(p, "--name")]


def test_the_name_commands_are_enumerated():
    assert {("construct",), ("decoder-table",), ("cerar", "design")} <= set(_name_commands())


@pytest.mark.parametrize("path", _name_commands(), ids=" ".join)
@pytest.mark.parametrize("bad", ["../escaped", "ABSOLUTE", "", "..", ".", "a/b", "x\x00y"])
def test_name_outside_the_folder_is_refused(path, bad, tmp_path, capsys):
    """``--name ../x`` or an absolute name wrote outside --out (decoder-table); now one line, exit 2."""
    folder = tmp_path / "sub" / "out"
    name = str(tmp_path / "escaped") if bad == "ABSOLUTE" else bad
    code, out, err = _run(capsys, [*_argv(path, folder), "--name", name])
    assert code == 2, (out, err)
    assert err.startswith("gcsim: error: --name: ") and len(err.splitlines()) == 1, err
    assert not any(p.name.startswith("escaped") for p in tmp_path.rglob("*")), "written outside the folder"
    assert "PosixPath" not in err


# ----------------------------------------------------------------------------- the rule itself


def test_output_path_accepts_plain_names_inside(tmp_path):
    assert output_path("--out", tmp_path, "a", "b.json") == tmp_path / "a" / "b.json"
    (tmp_path / "inner").mkdir()
    os.symlink(tmp_path / "inner", tmp_path / "alias")  # a link that stays inside is fine
    assert output_path("--out", tmp_path, "alias", "x", suffixes=(".json", ".npz")) == tmp_path / "alias" / "x"


@posix_only
def test_output_path_refuses_links_out_at_any_depth(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "kind").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / "dirlink")
    os.symlink(outside / "nothing.json", root / "kind" / "dangling.json")  # dangling: still pointing out
    os.symlink("../../outside/f.npz", root / "kind" / "rel.npz")  # relative
    for parts, suffixes in [
        (("dirlink", "x"), ("",)),
        (("kind", "dangling"), (".json", ".npz")),
        (("kind", "rel"), (".json", ".npz")),
    ]:
        candidate = root.joinpath(*parts)
        with pytest.raises(UsageError, match=r"^--out: .* is a symbolic link to .*, outside "):
            output_path("--out", root, *parts, suffixes=suffixes)
        # independently: realpath of the offending entry is indeed outside the resolved root
        offending = [candidate.parent, *(candidate.with_name(candidate.name + s) for s in suffixes)]
        real_root = os.path.realpath(root)
        assert any(os.path.lexists(p) and not os.path.realpath(p).startswith(real_root + os.sep) for p in offending)


def test_output_path_names_the_name_flag(tmp_path):
    with pytest.raises(UsageError, match=r"^--name: must be a plain file name \(no folders\), got '\.\./x'$"):
        output_path("--out", tmp_path, "../x", name_flag="--name")
    with pytest.raises(UsageError, match=r"^--out: "):
        output_path("--out", tmp_path, "kind/sub", "x", name_flag="--name")
    with pytest.raises(UsageError, match=r"^--name: is empty, got ''$"):
        output_path("--out", tmp_path, "", name_flag="--name")


@posix_only
def test_output_path_refuses_a_loop_of_links(tmp_path):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    with pytest.raises(UsageError, match=r"^--out: '[^']*/a' is a (loop of symbolic links|symbolic link to)"):
        output_path("--out", tmp_path, "a", "x")
