"""What ``gcsim catalogue --dir`` and ``gcsim load`` say about paths they cannot read (issue #33 class 4,
issue #34 item 11): one line naming what the user gave, exit status 2.

A symbolic-link loop or a dangling link given as the catalogue folder is refused (it was read as a
missing folder: exit 0, every file "missing"); one inside the folder is that row's refusal.  ``gcsim
load`` of a path where nothing is names that path (it named a manifest the user never gave), and the
folder given to ``advise --export`` lists the codes inside it; ``load_object`` raises the same text.
"""

from __future__ import annotations

import json
import os

import pytest

from gcsim.advisor import advise
from gcsim.app.cli import main
from gcsim.catalogue.objects import load_object, load_problem
from gcsim.errors import CatalogueError


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gcsim: error: "), err
    return lines[0]


@pytest.fixture
def links(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("loop", "loop")  # loop -> loop
    os.symlink("nothere", "dangling")
    return tmp_path


@pytest.mark.parametrize(
    "flags", [["--dir", "loop"], ["--dir", "dangling"], ["--out", "loop"], ["--force", "--dir", "loop"]]
)
def test_catalogue_refuses_a_folder_it_cannot_read(links, capsys, flags):
    code = main(["catalogue", *flags])
    out, err = capsys.readouterr()
    line = _one_line(err)
    flag = "--out" if "--out" in flags else "--dir"
    assert code == 2 and out == ""
    assert line.startswith(f"gcsim: error: {flag}: '{flags[-1]}' ")
    assert "symbolic link" in line or "Too many levels" in line


def test_a_missing_catalogue_folder_is_still_every_file_missing(links, capsys):
    assert main(["catalogue", "--dir", "no_such_folder", "--json"]) == 0

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and {r["file"] for r in rows} == {"missing"}


def test_a_link_loop_inside_the_folder_is_that_files_refusal(links, capsys):
    (links / "cat" / "bibd").mkdir(parents=True)
    os.symlink("pg2_9.json", links / "cat" / "bibd" / "pg2_9.json")  # a file that is a loop of its own
    code = main(["catalogue", "--dir", "cat", "--json"])

    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert code == 1
    assert rows["pg2_9"]["file"].startswith("refused: 'cat/bibd/pg2_9.json' cannot be read: ")
    assert {r["file"] for name, r in rows.items() if name != "pg2_9"} == {"missing"}


@pytest.fixture(scope="module")
def export_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exp") / "advice57"
    adv = advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False)
    code = adv.export(folder)
    return folder, code.name


def test_load_of_the_export_folder_lists_its_codes(export_folder, capsys):
    folder, name = export_folder
    code = main(["load", str(folder)])
    line = _one_line(capsys.readouterr().err)
    assert code == 2
    assert line == (
        f"gcsim: error: path: {str(folder)!r} is a folder of 1 exported code(s), not one code: "
        f"load one of {folder / name}"
    )
    # the library says the same, as a refusal
    with pytest.raises(CatalogueError) as info:
        load_object(folder)
    assert str(info.value) == load_problem(folder) and str(folder / name) in str(info.value)
    # and the code it names loads
    assert main(["load", str(folder / name)]) == 0
    capsys.readouterr()


def test_load_of_nothing_names_what_was_given(export_folder, capsys):
    folder, name = export_folder
    given = f"{folder}/nope"
    code = main(["load", given])
    line = _one_line(capsys.readouterr().err)
    assert code == 2
    assert line.startswith(f"gcsim: error: path: {given!r} not found: ")
    assert f"{given}.json" in line and str(folder / name) in line  # the codes beside it, a likely typo
    assert "manifest" not in line
    with pytest.raises(CatalogueError, match="nope' not found: no file or folder of that name"):
        load_object(given)
    # a bare name: neither a path nor a packaged name
    assert main(["load", "no_such_name"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("gcsim: error: path: 'no_such_name' not found: ") and "packaged catalogue" in line


def test_load_problem_is_none_where_something_is(export_folder):
    folder, name = export_folder
    assert load_problem(folder / name) is None  # an exported code's folder
    assert load_problem(folder / name / "encoder") is None  # a bundle stem
    assert load_problem(folder / name / "encoder.json") is None
