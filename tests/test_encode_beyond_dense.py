"""``gcsim.encode`` at every size (issue #34 item 6): the dense route, or RD without dense matrices.

``gcsim.encode`` (:mod:`gcsim.coding.dispatch`) takes the structured route (theory §42) or the
sparse route (theory §44) beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`, as the CLI does; the
dense :func:`gcsim.coding.encode` still refuses there and names those calls.  Checked on small
designs under a lowered limit, each pattern's error against ``lstsq`` on the dense ``B`` of the
same seed (built before the limit is lowered: the same diagonals); the exact call of the issue,
``gcsim.bibd(8011, 90, 1)``, in one slow test.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gcsim
from exact_lstsq import checked_lstsq
from gcsim import limits
from gcsim.coding import encode as encode_dense
from gcsim.coding.dispatch import encode_route
from gcsim.coding.sparse_routes import SparseRD
from gcsim.coding.structured import StructuredRD, encode_structured
from gcsim.combinatorics.cyclic_design import singer_plane
from tolerances import lstsq_tol


@pytest.fixture
def small_limit(monkeypatch):
    # B of m = 2 blocks for the (13, 4, 1) design: 26 x 13 = 338 entries; the structured route: n m^2 = 52
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 200)


def _lstsq_errors(B: np.ndarray, T: np.ndarray, masks: np.ndarray) -> list[tuple[float, float]]:
    """``(min_X ‖B_F X − T‖², tolerance)`` per mask, by lstsq on the dense columns."""
    out = []
    for mask in masks:
        value, kappa = checked_lstsq(B[:, mask], T)
        out.append((value, lstsq_tol(kappa, *B.shape, scale=float(T.size))))
    return out


def _masks(n: int, stragglers: int) -> np.ndarray:
    rows = []
    for gone in itertools.combinations(range(n), stragglers):
        mask = np.ones(n, dtype=bool)
        mask[list(gone)] = False
        rows.append(mask)
    return np.array(rows)


def test_rd_on_a_symmetric_design_takes_the_structured_route(monkeypatch):
    design = gcsim.bibd(13, 4, 1)
    dense = encode_dense(design, 2, "rd", seed=5)  # before the limit is lowered: the reference B
    masks = _masks(13, 2)
    expected = _lstsq_errors(dense.B, dense.target(), masks)
    singles = _lstsq_errors(dense.B, dense.target(), _masks(13, 1))
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 200)
    assert encode_route(design, 2) == "structured"
    enc = gcsim.encode(design, 2, "rd", seed=5)
    assert type(enc) is StructuredRD
    assert enc.diagonals.tolist() == dense.diagonals.tolist()
    for mask, (want, tol) in zip(masks, expected, strict=True):  # one at a time: a batch is over the limit
        assert abs(gcsim.optimal_error(enc, mask, progress=False) - want) <= tol + 1e-12 * 26
    # the expectation over the 13 single stragglers (13 x 13 masks: under the limit) is the mean of lstsq's
    res = gcsim.expected_error(enc, gcsim.straggler_model("fixed", 13, s=1), progress=False)
    assert res.mean == pytest.approx(np.mean([w for w, _ in singles]), abs=max(t for _, t in singles) + 1e-11)


def test_rd_on_another_assignment_takes_the_sparse_route(monkeypatch):
    A = gcsim.coding.cyclic_repetition_assignment(12, 3)  # AᵀA is banded, not aI + λJ
    dense = encode_dense(A, 2, "rd", seed=2, dist="gaussian")
    masks = _masks(12, 3)[::7]
    expected = _lstsq_errors(dense.B, dense.target(), masks)
    # B: 24 x 12 = 288 entries refused; the Cholesky certificate's 12 x 12 = 144 fits
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 200)
    assert encode_route(A, 2) == "sparse"
    enc = gcsim.encode(A, 2, "rd", seed=2, dist="gaussian")
    assert type(enc) is SparseRD
    assert enc.diagonals.tolist() == dense.diagonals.tolist()
    for mask, (want, tol) in zip(masks, expected, strict=True):
        assert abs(gcsim.optimal_error(enc, mask, progress=False) - want) <= tol + 1e-10 * 24


def test_a_cyclic_design_takes_the_structured_route(monkeypatch):
    design = singer_plane(3)  # PG(2, 3) as a difference set: 13 points, no shape attribute
    dense = encode_dense(np.asarray(design.assignment), 2, "rd", seed=1)
    masks = _masks(13, 3)[::11]
    expected = _lstsq_errors(dense.B, dense.target(), masks)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 200)
    assert encode_route(design, 2) == "structured"
    enc = gcsim.encode(design, 2, "rd", seed=1)
    assert isinstance(enc, StructuredRD) and enc.diagonals.tolist() == dense.diagonals.tolist()
    for mask, (want, tol) in zip(masks, expected, strict=True):
        assert abs(gcsim.optimal_error(enc, mask, progress=False) - want) <= tol + 1e-12 * 26


def test_within_the_limit_it_is_the_dense_encoder():
    design = gcsim.bibd(13, 4, 1)
    assert encode_route(design, 2) == "dense"
    for method in ("rd", "ns"):
        got, want = gcsim.encode(design, 2, method, eps=0.1, seed=4), encode_dense(design, 2, method, eps=0.1, seed=4)
        assert type(got) is type(want) is gcsim.coding.Scheme
        assert got.B.tolist() == want.B.tolist()


def test_the_dense_encoder_still_names_the_calls_that_work(small_limit):
    design = gcsim.bibd(13, 4, 1)
    with pytest.raises(gcsim.SizeLimitError) as info:
        encode_dense(design, 2, "rd", seed=0)
    text = str(info.value)
    assert text.startswith("m: ") and "MAX_DENSE_ENTRIES" in text
    assert "gcsim.coding.structured.encode_structured(design, m" in text
    assert "gcsim.coding.sparse_routes.encode_sparse(design, m" in text
    assert (info.value.limit_name, info.value.limit) == ("MAX_DENSE_ENTRIES", 200)


def test_another_method_is_told_that_only_rd_has_a_route(small_limit):
    assert encode_route(gcsim.bibd(13, 4, 1), 2, "ns") == "dense"
    with pytest.raises(gcsim.SizeLimitError, match="only method='rd' has a route without it"):
        gcsim.encode(gcsim.bibd(13, 4, 1), 2, "ns", seed=0)


def test_an_option_the_routes_do_not_take_is_refused_by_name(small_limit):
    with pytest.raises(gcsim.InvalidArgumentError, match=r"^options: .*without dense matrices take dist.*\['s'\]"):
        gcsim.encode(gcsim.bibd(13, 4, 1), 2, "rd", s=1)
    with pytest.raises(gcsim.InvalidArgumentError, match="^eps: "):
        gcsim.encode(gcsim.bibd(13, 4, 1), 2, "rd", eps=-1.0)


def test_the_same_diagonals_where_both_fit():
    design = gcsim.bibd(13, 4, 1)
    dense = gcsim.encode(design, 2, "rd", seed=3)
    assert encode_structured(design, 2, seed=3).diagonals.tolist() == dense.diagonals.tolist()


@pytest.mark.slow
def test_the_issue_call_at_8011_workers():
    # PG(2, 89): the dense assignment alone would be 64M entries; one pattern through the evaluator
    design = gcsim.bibd(8011, 90, 1)
    enc = gcsim.encode(design, 2, "rd", seed=0)
    assert type(enc) is StructuredRD and enc.params == gcsim.coding.SchemeParams(num_parts=8011, n=8011, m=2)
    assert enc.diagonals.tolist() == encode_structured(design, 2, seed=0).diagonals.tolist()
    mask = np.ones(8011, dtype=bool)
    mask[::97] = False
    err = gcsim.optimal_error(enc, mask, progress=False)
    assert 0.0 < err < 2 * 8011
