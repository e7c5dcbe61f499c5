"""Rich Jupyter displays (``_repr_html_``) of gcsim's objects and results (gcsim._html).

Each card must parse as well-formed HTML, name the kind and every parameter, stay small for a
1000 x 1000 object, show "verification failed" for a corrupted object instead of raising, and
draw the object's own matrix: the SVG picture is decoded back into a 0/1 pattern here and
compared with the assignment.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

import gcsim
from gcsim import _html
from gcsim.cerar import design as cerar_design
from gcsim.cerar.design import CerarDesign
from gcsim.coding.decoder_table import DecoderTable
from gcsim.coding.evaluate import expected_error, expected_error_over_seeds, worst_case_error
from gcsim.coding.schemes import Scheme
from gcsim.coding.verify import verify_bounds
from gcsim.combinatorics import baselines
from gcsim.combinatorics.bibd_design import BIBD

VOID = {"br", "rect", "path", "img", "hr", "meta", "input", "col"}


class Card(HTMLParser):
    """Checks that every tag is closed in order and collects the text and the SVG paths."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.paths: list[dict[str, str]] = []
        self.svgs: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "path":
            self.paths.append(a)
        if tag == "svg":
            self.svgs.append(a)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        if tag == "path":
            self.paths.append({k: v or "" for k, v in attrs})

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(markup: str) -> Card:
    card = Card()
    card.feed(markup)
    card.close()
    assert not card.stack, f"unclosed tags {card.stack}"
    return card


def text_of(markup: str) -> str:
    return " ".join(" ".join(parse(markup).text).split())


def decode_picture(card: Card) -> np.ndarray:
    """The shade level of every cell, read back from the SVG paths (0 = blank)."""
    (svg,) = card.svgs
    _, _, nc, nr = (int(x) for x in svg["viewbox"].split())
    level = np.zeros((nr, nc), dtype=float)
    for p in card.paths:
        opacity = float(p["fill-opacity"])
        for x, y, w in re.findall(r"M(\d+) (\d+)h(\d+)v1h-\d+z", p["d"]):
            x, y, w = int(x), int(y), int(w)
            assert np.all(level[y, x : x + w] == 0), "a cell drawn twice"
            level[y, x : x + w] = opacity if p["fill"] != "#c62828" else -1.0
    return level


# ---------------------------------------------------------------------------------------------
# one card per kind

FANO = gcsim.bibd(7, 3, 1)
RD = gcsim.encode(FANO, 2, "rd", seed=0)


def objects():
    return [
        ("bibd", lambda: FANO),
        ("srg", lambda: gcsim.srg(10, 3, 0, 1)),
        ("coset", lambda: gcsim.coset_graph(7, 2, 3)),
        ("biregular", lambda: gcsim.biregular_graph(12, 6, 2, 4, seed=1)),
        ("cyclic repetition", lambda: baselines.cyclic_repetition(6, 2)),
        ("scheme", lambda: RD),
        ("decoder table", lambda: gcsim.decoder_table(RD, 1)),
        ("cerar", lambda: cerar_design(4, 8, "perturbation", eps=0.01)),
    ]


@pytest.mark.parametrize("label, factory", objects(), ids=[label for label, _ in objects()])
def test_object_card_names_kind_params_and_status(label, factory):
    obj = factory()
    markup = obj._repr_html_()
    text = text_of(markup)
    assert f"kind {obj.kind}" in text
    assert type(obj).__name__ in text
    for name, value in obj.params._asdict().items():
        assert f"{name} {_html.fmt(value)}" in text, (name, value, text)
    assert "✓ verified" in text
    assert len(parse(markup).svgs) == 1


def test_picture_is_the_assignment():
    # decoded independently from the SVG: every 1 of the incidence matrix is a full-shade cell
    shown: list[Any] = [FANO, gcsim.srg(10, 3, 0, 1), gcsim.coset_graph(7, 2, 3)]
    for obj in shown:
        level = decode_picture(parse(obj._repr_html_()))
        assert np.array_equal(level, np.asarray(obj.assignment, dtype=float))


def test_heat_map_of_a_real_matrix():
    B = np.array([[4.0, 0.0, -2.0], [0.0, 1e-300, 2.9]])
    level = decode_picture(parse(_html.matrix_svg(B)))
    # |entry| / max, rounded up to eighths (2.9/4 = 5.8/8 -> 6/8); exact zeros stay blank, tiny ones do not
    assert np.array_equal(level, np.array([[1.0, 0.0, 0.5], [0.0, 0.125, 0.75]]))


def test_large_matrix_is_shown_in_blocks():
    # 1000 x 500, ones in the top-left 500 x 250 quarter: a 64 x 32 picture, ones in its top-left quarter
    A = np.zeros((1000, 500), dtype=int)
    A[:500, :250] = 1
    level = decode_picture(parse(_html.matrix_svg(A, binary=True)))
    assert level.shape == (64, 32)
    assert np.all(level[:32, :16] == 1.0) and np.all(level[32:, :] == 0) and np.all(level[:, 16:] == 0)


def test_results_and_reports():
    fixed = gcsim.straggler_model("fixed", 7, s=2)
    exp = expected_error(RD, fixed, progress=False)
    worst = worst_case_error(RD, 2, progress=False)
    seeds = expected_error_over_seeds(FANO.assignment, 2, "rd", fixed, [0, 1])
    report = verify_bounds(RD, gcsim.straggler_model("all", 7, s=2), draws=4, progress=False)
    text = text_of(exp._repr_html_())
    assert "kind expected error" in text and f"mean {exp.mean:.6g}" in text and exp.method in text
    text = text_of(worst._repr_html_())
    assert "kind worst-case error" in text and f"value {worst.value:.6g}" in text
    level = decode_picture(parse(worst._repr_html_()))
    assert np.array_equal(level[0], worst.mask.astype(float))
    text = text_of(seeds._repr_html_())
    assert "kind expected error over seeds" in text and f"mean {seeds.mean:.6g}" in text
    text = text_of(report._repr_html_())
    assert "kind bound verification" in text
    assert ("every bound held" in text) == report.ok
    for check in report.checks:
        assert check.name in text


# ---------------------------------------------------------------------------------------------
# size, escaping, failures


def big_objects():
    A = baselines.cyclic_repetition(1000, 3)
    # a decoder table solves least squares per pattern: 1000 parts on 100 workers keeps it fast
    tall = np.zeros((1000, 100), dtype=int)
    tall[np.arange(1000), np.arange(1000) % 100] = 1
    tall[np.arange(1000), (np.arange(1000) + 1) % 100] = 1
    table = gcsim.decoder_table(Scheme.from_matrix(tall, tall, 1), patterns=np.ones((1, 100), dtype=bool))
    return [A, gcsim.encode(A, 1, "naive"), table, cerar_design(32, 32, "exact")]


def test_a_1000_by_1000_card_stays_small():
    for obj in big_objects():
        markup = obj._repr_html_()
        card = parse(markup)
        assert len(markup) < 40_000, (type(obj).__name__, len(markup))
        _, _, nc, nr = (int(x) for x in card.svgs[0]["viewbox"].split())
        assert max(nc, nr) <= _html.MAX_CELLS
        assert "shown in blocks" in text_of(markup)


def test_text_is_escaped():
    obj = BIBD(7, FANO.blocks, construction="<script>alert('x')</script>", lam=1)
    markup = obj._repr_html_()
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    long = _html.escape("y" * 10_000)
    assert len(long) < _html.MAX_TEXT + 40


def corrupted():
    bad_blocks = [tuple(b) for b in FANO.blocks]
    bad_blocks[0] = tuple(sorted({*bad_blocks[0][:2], next(x for x in range(7) if x not in bad_blocks[0])}))
    B = np.array(RD.B)
    B[np.nonzero(np.tile(RD.assignment, (2, 1)) == 0)[0][0], np.nonzero(np.tile(RD.assignment, (2, 1)) == 0)[1][0]] = 1
    nan = np.array(RD.B)
    nan[0, np.flatnonzero(RD.assignment[0])[0]] = np.nan
    ex = cerar_design(4, 4, "exact")
    table = gcsim.decoder_table(RD, 1)
    return [
        ("bibd", BIBD(7, bad_blocks, "corrupted", lam=1)),
        ("scheme support", Scheme(B=B, assignment=RD.assignment, m=2, method="rd")),
        ("scheme nan", Scheme(B=nan, assignment=RD.assignment, m=2, method="rd")),
        ("cerar", CerarDesign(4, 4, ex.encoders * 1.5, ex.decoders, method="exact")),
        ("decoder table", DecoderTable(RD, np.array(table.decoders) * 2, np.array(table.errors), s_max=1)),
    ]


@pytest.mark.parametrize("label, obj", corrupted(), ids=[label for label, _ in corrupted()])
def test_corrupted_object_shows_verification_failed(label, obj):
    with pytest.raises(gcsim.errors.VerificationError) as info:
        obj.verify()
    text = text_of(obj._repr_html_())
    assert "✗ verification failed: VerificationError" in text
    assert " ".join(str(info.value).split())[:100] in text  # the failure text itself, unescaped by the parser


def test_nan_is_drawn_red():
    (_, obj) = corrupted()[2]
    level = decode_picture(parse(obj._repr_html_()))
    assert level[0, np.flatnonzero(RD.assignment[0])[0]] == -1.0
    assert np.count_nonzero(level == -1.0) == 1


def test_verify_runs_once_and_any_failure_is_shown(monkeypatch):
    calls = []

    def broken(self):
        calls.append(self)
        raise RuntimeError("disk on fire")

    obj = BIBD(7, FANO.blocks, "Fano plane, rebuilt", lam=1)  # built before verify() is broken
    monkeypatch.setattr(BIBD, "verify", broken)
    first, second = obj._repr_html_(), obj._repr_html_()
    assert first == second and len(calls) == 1
    assert "verification failed: RuntimeError: disk on fire" in text_of(first)
    with pytest.raises(RuntimeError):
        obj.verify()  # verify() itself is not cached
    assert len(calls) == 2


def test_a_failing_card_falls_back_to_the_plain_repr(monkeypatch):
    def boom(**_):
        raise ValueError("no card today")

    monkeypatch.setattr(_html, "object_html", boom)
    for _, factory in objects():
        obj = factory()
        text = text_of(obj._repr_html_())
        assert "rich display failed: ValueError: no card today" in text
        assert type(obj).__name__ in text


def test_verdict_is_dropped_with_its_object():
    obj = BIBD(7, FANO.blocks, "Fano plane, rebuilt", lam=1)  # held by nobody else (no builder cache)
    assert _html.verdict(obj) == (True, "verified")
    key = id(obj)
    assert key in _html._VERDICTS
    del obj
    assert key not in _html._VERDICTS
