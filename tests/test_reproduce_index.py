"""The results index of ``gcsim reproduce`` (issue #34 item 7): every figure with one line, then the tables.

Fake stages stand in for the real ones (minutes each).  The figures the index must list are found
by walking the results tree for image files (not from the manifests the index is built from), and
each must appear on exactly one line, as a link that resolves to the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gcsim.app import reproduce as rep
from gcsim.app.cli import main

LINK = re.compile(r"\[([^\]]*)\]\(<([^>]*)>\)")


@pytest.fixture
def stages(monkeypatch):
    def plots(out, full, seed, progress):
        (out / "curves.csv").write_text("x,y\n1,2\n")
        (out / "curves.png").write_bytes(b"\x89PNG fake")
        (out / "nested").mkdir(exist_ok=True)
        (out / "nested" / "second figure.png").write_bytes(b"\x89PNG other")
        return {
            "ok": True,
            "files": ["curves.csv", "curves.png", "nested/second figure.png"],
            "figures": {"curves.png": "error vs stragglers,\n  with bounds", "unlisted.png": "not an output"},
            "text": "plots stage",
        }

    def tables(out, full, seed, progress):
        (out / "table.json").write_text("{}")
        (out / "uncaptioned.svg").write_text("<svg/>")
        return {"ok": True, "files": ["table.json", "uncaptioned.svg"], "text": "tables stage"}

    monkeypatch.setattr(rep, "STAGES", {"plots": plots, "tables": tables})
    monkeypatch.setattr(rep, "provenance", lambda: {"test": True})


def _figures_on_disk(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*") if p.suffix in (".png", ".svg", ".pdf")}


def _lines_linking(text: str, target: str) -> list[str]:
    return [line for line in text.splitlines() if any(t == target for _, t in LINK.findall(line))]


def test_the_index_lists_every_figure_once_with_its_caption(tmp_path, stages):
    summary = rep.run_reproduce(tmp_path, stages=["plots", "tables"], progress=False)
    index = tmp_path / "index.md"
    assert summary["index"] == str(index)
    assert summary["text"].splitlines()[-1].endswith(str(index))
    text = index.read_text()
    figures = _figures_on_disk(tmp_path)
    assert figures == {"plots/curves.png", "plots/nested/second figure.png", "tables/uncaptioned.svg"}
    for figure in figures:
        lines = _lines_linking(text, figure)
        assert len(lines) == 1, (figure, lines)
        assert lines[0].startswith("- ") and (tmp_path / figure).is_file()
    assert _lines_linking(text, "plots/curves.png")[0].endswith(": error vs stragglers, with bounds")
    assert _lines_linking(text, "tables/uncaptioned.svg")[0].endswith(": a figure of the tables stage")
    assert "unlisted.png" not in text  # a caption for a file the stage did not write is dropped
    for other in ("plots/curves.csv", "tables/table.json", "plots/manifest.json", "tables/manifest.json"):
        assert len(_lines_linking(text, other)) == 1
    # every link resolves inside the results folder
    for _, target in LINK.findall(text):
        assert (tmp_path / target).is_file(), target
    assert "3 figures from 2 stages" in text


def test_a_skipped_stage_keeps_its_lines_and_a_broken_one_is_named(tmp_path, stages):
    rep.run_reproduce(tmp_path, stages=["plots", "tables"], progress=False)
    first = (tmp_path / "index.md").read_text()
    summary = rep.run_reproduce(tmp_path, stages=["plots"], progress=False)
    assert summary["stages"]["plots"]["status"].startswith("skipped")
    assert (tmp_path / "index.md").read_text() == first  # the tables stage is still indexed
    (tmp_path / "tables" / "manifest.json").unlink()
    text = Path(rep.write_results_index(tmp_path)).read_text()
    assert "## tables\n\nNo stage manifest" in text and "tables/uncaptioned.svg" not in text


def test_the_command_ends_by_naming_the_index(tmp_path, stages, capsys):
    assert main(["reproduce", "--out", str(tmp_path), "--stage", "plots"]) == 0
    out = capsys.readouterr().out.rstrip().splitlines()
    assert out[-1] == f"Index of every figure (one line each), table and manifest: {tmp_path / 'index.md'}"
    assert main(["reproduce", "--out", str(tmp_path), "--stage", "plots", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["index"] == str(tmp_path / "index.md")
