"""The advisor's statuses for degenerate questions (issue #33 class 4)."""

from __future__ import annotations

import json

from gcsim.advisor import advise
from gcsim.app.cli import main


def test_a_family_named_twice_is_searched_once():
    once = advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False)
    twice = advise(13, 4, 2, "fixed:1", families=["bibd", "bibd"], progress=False)
    assert [r["name"] for r in twice.rows] == [r["name"] for r in once.rows]
    assert len(twice.dropped_items) == len(once.dropped_items)


def test_no_candidate_is_exit_1_with_the_reasons(capsys):
    code = main(["advise", "--workers", "13", "--load", "1e-300", "--m", "2", "--stragglers", "fixed:1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no candidate fits the question" in err and "commonest reasons" in err
    code = main(["advise", "--workers", "13", "--load", "1e-300", "--m", "2", "--stragglers", "fixed:1", "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and json.loads(out)["candidates"] == [] and "no candidate fits" in err
