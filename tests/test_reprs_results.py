"""Every public result object has a compact ``repr`` and a Jupyter card (issue #34 item 10).

A ``repr`` is one line of at most :data:`MAX_REPR` characters that never prints an array, even
for 1000-worker objects; a card parses as well-formed HTML (tests/test_reprs.py's parser), names
its class and does not fall back to the plain ``repr``.  The numbers a card shows are checked
against independent computations (the perturbation design's seam error from its formula, the
advice's times from its rows, the straggler picture against the model's own draws).
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import gcsim
from gcsim import _html, limits
from gcsim.advisor import advise, load_exported
from gcsim.advisor.core import Links
from gcsim.cerar import design as cerar_design, errors as cerar_errors
from gcsim.coding.delays import arrival_rule, delay_model
from gcsim.coding.evaluate import expected_error, expected_error_over_seeds, worst_case_error
from gcsim.coding.sparse_routes import encode_sparse, lattice_graph_sparse
from gcsim.coding.structured import encode_structured
from gcsim.combinatorics import baselines
from test_reprs import decode_picture, parse, text_of

#: The longest one-line repr a result object may have.
MAX_REPR = 300

FANO = gcsim.bibd(7, 3, 1)
RD = gcsim.encode(FANO, 2, "rd", seed=0)
FIXED = gcsim.straggler_model("fixed", 13, s=1)
FIXED_7 = gcsim.straggler_model("fixed", 7, s=2)


def _advice(links=None):
    return advise(13, 4, 2, FIXED, links=links, families=["bibd"], progress=False)


def _exported():
    with tempfile.TemporaryDirectory() as tmp:
        return load_exported(_advice().export(tmp))


def models():
    n = 1000
    return [
        ("fixed", lambda: gcsim.straggler_model("fixed", n, s=3)),
        ("all", lambda: gcsim.straggler_model("all", 7, s=2)),
        ("worst", lambda: gcsim.straggler_model("worst", n, s=3)),
        ("bernoulli", lambda: gcsim.straggler_model("bernoulli", n, p=0.1)),
        ("bernoulli per worker", lambda: gcsim.straggler_model("bernoulli", n, p=np.linspace(0, 0.5, n))),
        ("markov", lambda: gcsim.straggler_model("markov", n, p_enter=0.05, p_leave=0.5)),
        ("trace", lambda: gcsim.straggler_model("trace", delays=np.arange(n * 20.0).reshape(n, 20) % 7, s=2)),
        (
            "delay",
            lambda: gcsim.straggler_model(
                "delay",
                delays=delay_model("shifted-exponential", n, shift=1.0, rate=2.0),
                rule=arrival_rule("first", s=3),
            ),
        ),
    ]


def results():
    big = baselines.cyclic_repetition(1000, 3)
    return [
        ("design", lambda: big),
        ("scheme", lambda: gcsim.encode(big, 1, "naive")),
        ("structured RD", lambda: encode_structured(gcsim.bibd(57, 8, 1), 2, seed=0)),
        ("sparse RD", lambda: encode_sparse(lattice_graph_sparse(30), 2, seed=0)),
        ("decoder table", lambda: gcsim.decoder_table(RD, 1)),
        ("expected error", lambda: expected_error(RD, gcsim.straggler_model("fixed", 7, s=2), progress=False)),
        ("worst case", lambda: worst_case_error(RD, 2, progress=False)),
        ("worst case at scale", lambda: worst_case_error(gcsim.encode(big, 1, "naive"), 1, progress=False)),
        ("over seeds", lambda: expected_error_over_seeds(FANO.assignment, 2, "rd", FIXED_7, [0, 1])),
        ("cerar design", lambda: cerar_design(32, 32, "exact")),
        ("cerar errors", lambda: cerar_errors(cerar_design(32, 64, "perturbation", eps=0.01))),
        ("advice", _advice),
        ("exported code", _exported),
        *models(),
    ]


@pytest.mark.parametrize("label, factory", results(), ids=[label for label, _ in results()])
def test_a_compact_repr_and_a_card(label, factory):
    obj = factory()
    text = repr(obj)
    assert len(text) <= MAX_REPR and "\n" not in text, (len(text), text)
    assert "array(" not in text and "[[" not in text and "..." not in text, text
    assert text.startswith(type(obj).__name__), text
    markup = obj._repr_html_()
    parse(markup)
    shown = text_of(markup)
    assert type(obj).__name__ in shown and "rich display failed" not in shown
    assert len(markup) < 40_000, len(markup)
    if hasattr(obj, "verify") and label != "worst":  # the worst-case model has a verify too: all must pass
        assert "✓ verified" in shown, shown[:300]


def test_the_cerar_errors_card_shows_the_seam_error_of_its_formula():
    N, c, eps = 3, 5, 0.1
    e = cerar_errors(cerar_design(N, c, "perturbation", eps=eps))
    r_star = -(-c // N) - 1
    seam = 1 - (1 + eps) ** (-N * r_star)  # theory §50: the seam error of the perturbation design
    shown = text_of(e._repr_html_())
    assert f"max pair norm ‖E_i,m‖₂ {_html.fmt(seam)}" in shown
    assert f"workers N, components c {N}, {c}" in shown and "empirical max_i ‖ĝ_i − g‖/‖g‖ not run" in shown
    # the picture is the (N, N - 1) table of pair norms: workers past the seam blank (exact), the others shaded
    level = decode_picture(parse(e._repr_html_()))
    inner = np.arange(N)[:, None] >= np.arange(1, N)[None, :]  # i >= m: the path does not cross the seam
    # shades are |entry| / max in eighths: the seam pairs (all the seam error) full, the others round-off
    assert level.shape == (N, N - 1) and np.all(level[~inner] == 1.0) and np.all(level[inner] <= 1 / 8)


def test_the_cerar_design_repr_keeps_the_metadata_short():
    d = cerar_design(4, 8, "perturbation", eps=0.01)
    text = repr(d)
    assert text.startswith("CerarDesign(N=4, c=8, L=10, method='perturbation', encoders (4, 8, 8), decoders (4, 8, 10)")
    assert "'eps': 0.01" in text


def test_the_straggler_card_draws_the_models_own_sample():
    model = gcsim.straggler_model("bernoulli", 9, p=0.3)
    level = decode_picture(parse(model._repr_html_()))
    assert np.array_equal(level, model.sample(16, seed=0).astype(float))
    worst = text_of(gcsim.straggler_model("worst", 9, s=2)._repr_html_())
    assert "kind straggler_model" in worst and "s 2" in worst and "worst case" in worst


def test_the_advice_card_shows_a_time_only_with_links():
    plain = text_of(_advice()._repr_html_())
    assert "nan" not in plain.lower() and "time (s)" not in plain
    assert "no iteration time" in plain
    links = Links(bandwidth=1e8, latency=1e-3, gradient_bytes=4e6, compute_time=0.5)
    adv = _advice(links)
    timed = text_of(adv._repr_html_())
    assert "time (s)" in timed and "nan" not in timed.lower()
    assert all(np.isfinite(r["time"]) and _html.fmt(r["time"]) in timed for r in adv.rows[:10])


def test_the_structured_card_draws_the_assignment_without_b(monkeypatch):
    enc = encode_structured(FANO, 2, seed=0)
    level = decode_picture(parse(enc._repr_html_()))
    assert np.array_equal(level, np.asarray(FANO.assignment, dtype=float))
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 50)  # B (14 x 7) over the limit: the card needs no B
    text = text_of(gcsim.encode(FANO, 2, "rd", seed=0)._repr_html_())
    assert "StructuredRD" in text and "never formed" in text and "✓ verified" in text


def test_the_exported_code_card_names_the_candidate_and_its_parts():
    code = _exported()
    text = text_of(code._repr_html_())
    assert str(code.manifest["candidate"]["name"])[:40] in text
    assert f"DecoderTable of {len(code.decoders)} patterns" in text and "✓ verified" in text
    level = decode_picture(parse(code._repr_html_()))
    assert np.array_equal(level, np.asarray(code.assignment.assignment, dtype=float))


def test_a_per_worker_model_shows_its_values_in_one_line() -> None:
    """BernoulliModel with a per-worker p read ``BernoulliModel(n=5)``, hiding p: its range is shown now."""
    p = np.array([0.1, 0.25, 0.1, 0.3, 0.05])
    text = repr(gcsim.straggler_model("bernoulli", 5, p=p))
    assert text == f"BernoulliModel(n=5, p=[{p.min():g} .. {p.max():g}] over 5)"
    assert repr(gcsim.straggler_model("bernoulli", 1000, p=np.full(1000, 0.05))) == "BernoulliModel(n=1000, p=0.05)"
    assert len(repr(gcsim.straggler_model("bernoulli", 10**5, p=np.linspace(0, 0.5, 10**5)))) < 80
