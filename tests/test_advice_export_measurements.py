"""An advice export's measured error and bounds, checked on load (issue #33, class 2's rule: a loaded
object reports only what it verified).

The references are computed here, independently of gcsim's decoder tables: every straggler pattern's
least-squares error ``min_X ||B_F X - T||^2`` by ``numpy.linalg.lstsq`` on the exported ``B``
(tests/exact_lstsq.py's ``lstsq_error``), the
mean and the maximum over the ``C(n, s)`` patterns, divided by ``mN``.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from exact_lstsq import lstsq_error
from gcsim.advisor import advise
from gcsim.catalogue.codes import load_code
from gcsim.errors import CatalogueError


def _lstsq_errors(B: np.ndarray, m: int, s: int) -> np.ndarray:
    """Every pattern's least-squares error over the arrived workers F (all but s), by lstsq."""
    n = B.shape[1]
    masks = [~np.isin(np.arange(n), gone) for gone in itertools.combinations(range(n), s)]
    return np.array([lstsq_error(B, mask, m) for mask in masks])


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A fixed-s uniform question whose best code has a positive error (s = 3 > the design's 2)."""
    adv = advise(13, 4, 2, "fixed:3", families=["bibd"], progress=False)
    folder = adv.export(tmp_path_factory.mktemp("adv") / "out", 1)
    return folder


def _forged(export, tmp_path, **changes):
    """A copy of the export whose advice.json candidate has ``changes`` (the manifest has no checksum)."""
    import shutil

    folder = tmp_path / export.name
    shutil.copytree(export, folder)
    manifest = json.loads((folder / "advice.json").read_text())
    manifest["candidate"].update(changes)
    (folder / "advice.json").write_text(json.dumps(manifest))
    return folder


def test_a_fixed_s_export_reports_its_error_and_worst_case_re_derived(export):
    code = load_code(export)
    cand = code.manifest["candidate"]
    m, N, s = cand["m"], cand["N"], code.manifest["question"]["s"]
    errors = _lstsq_errors(np.asarray(code.scheme.B), m, s) / (m * N)
    assert len(errors) == math.comb(13, 3)
    assert errors.mean() > 0.01  # a question where the error is not roundoff
    assert code.measurements["error"] == pytest.approx(errors.mean(), rel=1e-9)
    assert code.measurements["error_lo"] == code.measurements["error_hi"] == code.measurements["error"]
    assert code.measurements["worst_case"] == pytest.approx(errors.max(), rel=1e-9)
    assert set(code.measurements) == {"error", "error_lo", "error_hi", "worst_case"}  # bounds: not re-derived


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"error": 0.01, "error_lo": 0.01, "error_hi": 0.01}, "candidate.error"),  # a better error than measured
        ({"worst_case": 0.05}, "candidate.worst_case"),
        ({"error_lo": 0.9}, "candidate.error_lo"),  # above the error
        ({"lower_bound": 5.0}, "candidate.lower_bound"),  # a lower bound above the error's interval
        ({"error": -0.1}, "candidate.error"),
        ({"error": float("nan")}, "candidate.error"),
        ({"worst_case": True}, "candidate.worst_case"),
        ({"error_hi": "0.2"}, "candidate.error_hi"),
    ],
)
def test_a_forged_measurement_is_refused_by_name(export, tmp_path, changes, field):
    with pytest.raises(CatalogueError, match=field.replace(".", r"\.")):
        load_code(_forged(export, tmp_path, **changes))


def test_an_unchanged_copy_loads(export, tmp_path):
    code = load_code(_forged(export, tmp_path))
    assert code.measurements["error"] > 0


def test_a_model_the_table_cannot_settle_reports_no_error(tmp_path):
    """Bernoulli stragglers reach patterns beyond the table's s_max: the error is not re-derived."""
    adv = advise(13, 4, 2, "bernoulli:0.1", families=["bibd"], progress=False)
    code = load_code(adv.export(tmp_path / "out", 1))
    assert "error" not in code.measurements
    assert code.manifest["candidate"]["error"] >= 0  # the advisor's record, kept as read
