"""The ``"cyclic"`` layout of the ``"structured_scheme"`` bundle: an RD encoder on a cyclic design is
exported as its difference set (#35 item 5).

* ``encode_structured`` on a :class:`CyclicDesign` gives a :class:`CyclicStructuredRD` whose errors
  equal the :class:`StructuredRD` built on the same design's explicit incidence (same seed) and an
  independent dense least-squares computation;
* its bundle is ``k`` integers (no incidence, no diagonals): the diagonals are drawn again from the
  options, the difference set is recounted exactly on load (Lemma 9a);
* tampering is refused by name; ``Advice.export`` beyond the dense limit writes this layout for a
  Singer plane and the loaded code gives the same numbers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import gcsim
from exact_lstsq import lstsq_error
from gcsim import limits
from gcsim.advisor import advise, load_exported
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import export_object, load_object
from gcsim.coding.structured import CyclicStructuredRD, StructuredRD, encode_structured
from gcsim.combinatorics.cyclic_design import CyclicDesign, singer_plane
from gcsim.errors import CatalogueError

#: A forged row carries another encoder's measurements: cleared (load_code checks measurements it can re-derive)
_NOT_MEASURED = dict.fromkeys(("error", "error_lo", "error_hi", "worst_case", "lower_bound", "upper_bound"))


def _developed(v: int, base: list[int]) -> np.ndarray:
    """The development of ``base`` formed here from the definition: worker ``j`` holds ``base + j``."""
    A = np.zeros((v, v))
    for j in range(v):
        A[[(b + j) % v for b in base], j] = 1.0
    return A


PG23 = CyclicDesign(13, [0, 1, 3, 9], "PG(2,3) Singer")


def _masks(n: int, count: int, seed: int) -> np.ndarray:
    return gcsim.straggler_model("fixed", n, s=3).sample(count, seed=seed)


def test_errors_equal_the_explicit_incidence_and_lstsq() -> None:
    enc = encode_structured(PG23, 2, seed=4, eps=0.3, dist="gaussian")
    assert type(enc) is CyclicStructuredRD and enc.verify() is True
    plain = encode_structured(PG23.incidence, 2, seed=4, eps=0.3, dist="gaussian")
    assert type(plain) is StructuredRD
    assert enc.diagonals.tobytes() == plain.diagonals.tobytes() and tuple(enc.params) == tuple(plain.params)
    masks = _masks(13, 12, seed=2)
    assert np.array_equal(enc.context.errors(masks), plain.context.errors(masks))
    A = _developed(13, [0, 1, 3, 9])
    B = np.vstack([A * enc.diagonals[k][None, :] for k in range(2)])
    want = np.array([lstsq_error(B, mk, 2) for mk in masks])
    assert np.allclose(enc.context.errors(masks), want, rtol=1e-9, atol=1e-12)
    assert np.array_equal(enc.B, B) and (enc.incidence != PG23.incidence).nnz == 0


def test_round_trip_holds_the_difference_set_only(tmp_path) -> None:
    enc = encode_structured(singer_plane(7), 3, seed=11)  # PG(2,7): 57 workers, k = 8
    arrays, meta = enc.to_arrays(), enc.bundle_metadata()
    assert list(arrays) == ["difference_set"] and arrays["difference_set"].tolist() == enc.design.base.tolist()
    assert meta["layout"] == "cyclic" and meta["nnz"] == 57 * 8 and meta["pair_gram"] == [8, 1]
    json.dumps(meta)
    back = StructuredRD.from_arrays(arrays, meta)
    via_files = load_object(export_object(enc, tmp_path, "enc").with_suffix(""))
    masks = _masks(57, 8, seed=5)
    for got in (back, via_files):
        assert type(got) is CyclicStructuredRD and tuple(got.params) == (57, 57, 3)
        assert got.diagonals.tobytes() == enc.diagonals.tobytes() and dict(got.options) == dict(enc.options)
        assert np.array_equal(got.context.errors(masks), enc.context.errors(masks))
        assert got.verify() is True
    with pytest.raises(AttributeError, match="immutable"):
        back.m = 5


def _parts():
    enc = encode_structured(PG23, 2, seed=3)
    return {"difference_set": enc.to_arrays()["difference_set"].copy()}, json.loads(json.dumps(enc.bundle_metadata()))


def test_tampering_is_refused_by_name() -> None:
    arrays, meta = _parts()

    def refused(arr, md, match):
        with pytest.raises(CatalogueError, match=match):
            StructuredRD.from_arrays(arr, md)

    # not a difference set any more (the recount fails), a repeated residue, out of range
    refused({"difference_set": np.array([0, 1, 3, 8])}, meta, "does not verify")
    refused({"difference_set": np.array([0, 1, 3, 3])}, meta, "does not verify")
    refused({"difference_set": np.array([0, 1, 3, 13])}, meta, "does not verify")
    # another (v, k, λ): the stored certificate or sizes disagree
    refused(arrays, {**meta, "pair_gram": [4, 2]}, r"\(k, λ\) = \(4, 1\)")
    refused(arrays, {**meta, "nnz": 13 * 5}, "nnz = n k")
    refused(arrays, {**meta, "N": 14, "params": [14, 13, 2]}, "N = n")
    refused({"difference_set": arrays["difference_set"].astype(float)}, meta, "dtype float64")
    # arrays it does not hold: diagonals (they are drawn again) or an incidence
    refused({**arrays, "diagonals": np.ones((2, 13))}, meta, "stores no diagonals")
    refused({**arrays, "incidence_indices": np.zeros(52, dtype=np.int32)}, meta, "'difference_set' only")
    refused({}, meta, "'difference_set' is missing")
    refused(arrays, {**meta, "options": {"seed": 0}}, "exactly eps, seed and dist")
    # a seed changed: the encoder reported is the one that seed draws (nothing stored disagrees)
    other = StructuredRD.from_arrays(arrays, {**meta, "options": {**meta["options"], "seed": 4}})
    assert other.diagonals.tobytes() == encode_structured(PG23, 2, seed=4).diagonals.tobytes()


def test_advice_export_beyond_the_dense_limit_writes_the_cyclic_layout(monkeypatch, tmp_path, capsys) -> None:
    design = singer_plane(5)  # PG(2,5): 31 workers, B is 62 x 31
    enc = encode_structured(design, 2, seed=7)
    adv = advise(31, 6, 2, "fixed:1", families=["bibd"], progress=False)
    row = dict(adv.rows[0], encoder=enc.method, **_NOT_MEASURED)
    adv = type(adv)(adv.question, (row,), adv.dropped_items, (enc,), (design,))
    chosen = np.ones((3, 31), dtype=bool)
    chosen[1, [0, 5]] = False
    chosen[2, ::3] = False
    before = enc.context.errors(chosen)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1500)  # the assignment (961) fits, B does not
    folder = adv.export(tmp_path, patterns=chosen, name="big")
    meta = json.loads((folder / "encoder.json").read_text())["metadata"]
    assert meta["layout"] == "cyclic"
    code = load_exported(folder)
    assert type(code.scheme) is CyclicStructuredRD and code.verify()
    assert np.array_equal(code.scheme.context.errors(chosen), before)
    # the assignment beyond the limit too: the load and its summary never form a dense matrix
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 500)
    assert cli_main(["load", str(folder)]) == 0
    assert "cyclic_design [31, 6, 1], encoder rd (n = 31, m = 2)" in capsys.readouterr().out


def test_the_singer_candidate_of_the_advisor_is_cyclic(monkeypatch) -> None:
    """The advisor's structured route keeps a cyclic design cyclic (it used to pass the incidence)."""
    from gcsim.advisor.assess import Route, build_scheme
    from gcsim.advisor.candidates import Question, Structure

    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1500)
    design = singer_plane(5)
    structure = Structure("bibd", "PG(2,5) Singer", design)
    q = Question(31, 6, 2, gcsim.straggler_model("fixed", 31, s=1))
    route = Route("structured", "auto")
    enc = build_scheme(structure, q, "rd", 2, {}, route)
    assert type(enc) is CyclicStructuredRD and enc.design.base.tolist() == design.base.tolist()
