"""``gcsim.encode`` beyond the dense limit names the calls that work (issue #34 item 6).

The CLI takes the structured route by itself (``gcsim decoder-table``, theory §47.7); the Python
API refuses the dense ``B`` and its message names ``encode_structured`` / ``encode_sparse``, which
build the same RD encoder without dense matrices.  Checked on a small design under a lowered limit.
"""

from __future__ import annotations

import pytest

import gcsim
from gcsim import limits
from gcsim.coding.structured import encode_structured


@pytest.fixture
def small_limit(monkeypatch):
    # B of m = 2 blocks for the (13, 4, 1) design: 26 x 13 = 338 entries; the structured route: n m^2 = 52
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 200)


def test_rd_beyond_the_dense_limit_names_the_structured_call(small_limit):
    design = gcsim.bibd(13, 4, 1)
    with pytest.raises(gcsim.SizeLimitError) as info:
        gcsim.encode(design, 2, "rd", seed=0)
    text = str(info.value)
    assert text.startswith("m: ") and "MAX_DENSE_ENTRIES" in text
    assert "gcsim.coding.structured.encode_structured(design, m" in text
    assert "gcsim.coding.sparse_routes.encode_sparse(design, m" in text
    assert (info.value.limit_name, info.value.limit) == ("MAX_DENSE_ENTRIES", 200)
    # the call it names works under the same limit, and the evaluators take it
    enc = encode_structured(design, 2, seed=0)
    model = gcsim.straggler_model("fixed", 13, s=1)  # 13 masks of 13 workers: under the limit too
    res = gcsim.expected_error(enc, model, samples=50, seed=0, progress=False)
    assert res.mean >= 0.0


def test_another_method_is_told_that_only_rd_has_a_route(small_limit):
    with pytest.raises(gcsim.SizeLimitError, match="only method='rd' has a route without it"):
        gcsim.encode(gcsim.bibd(13, 4, 1), 2, "ns", seed=0)


def test_the_same_diagonals_where_both_fit():
    design = gcsim.bibd(13, 4, 1)
    dense = gcsim.encode(design, 2, "rd", seed=3)
    assert encode_structured(design, 2, seed=3).diagonals.tolist() == dense.diagonals.tolist()
