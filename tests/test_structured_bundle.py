"""The ``"structured_scheme"`` bundle: structured and sparse RD encoders exported without dense matrices.

* round trips are bit-identical (StructuredRD on BIBDs, SparseRD on sparse SRGs, on a design and
  with a Cholesky certificate), through ``from_arrays`` and through the files;
* loading verifies instead of trusting: a changed index, a changed diagonal entry, a wrong seed,
  a truncated array, absurd declared sizes, a wrong certificate are refused, each named;
* ``Advice.export`` writes this bundle when ``B`` is over ``MAX_DENSE_ENTRIES`` (the limit lowered
  here), and the loaded code's errors equal the encoder's before export and an independent dense
  least-squares computation (``B`` formed after the limit is restored); small codes still export a
  dense ``Scheme``.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import gcsim
from exact_lstsq import lstsq_error
from gcsim import limits
from gcsim.advisor import advise, load_exported
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import export_object, load_object
from gcsim.catalogue.kinds import KINDS
from gcsim.coding.sparse_routes import SparseRD, encode_sparse, lattice_graph_sparse, triangular_graph_sparse
from gcsim.coding.structured import STRUCTURED_KIND, StructuredRD, encode_structured
from gcsim.errors import CatalogueError, InvalidArgumentError
from gcsim.io.bundle import load_bundle, save_bundle

U = np.finfo(float).eps


#: A forged row carries another encoder's measurements: cleared (load_code checks measurements it can re-derive)
_NOT_MEASURED = dict.fromkeys(("error", "error_lo", "error_hi", "worst_case", "lower_bound", "upper_bound"))


def _rd_B(A: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``B`` with block ``l`` equal to ``A diag(D[l])``, formed here from the definition (theory §5.4)."""
    return np.vstack([A * D[l][None, :] for l in range(D.shape[0])])


def _encoders() -> dict[str, StructuredRD]:
    return {
        "structured PG(2,3)": encode_structured(gcsim.bibd(13, 4), 2, seed=3),
        "structured PG(2,4) gaussian": encode_structured(gcsim.bibd(21, 5), 3, seed=1, eps=0.25, dist="gaussian"),
        "sparse L(5)": encode_sparse(lattice_graph_sparse(5), 2, seed=2),
        "sparse T(7) open": encode_sparse(triangular_graph_sparse(7, closed=False), 2, seed=4, eps=0.1),
        "sparse on a design": encode_sparse(gcsim.bibd(13, 4).incidence, 2, seed=5),
        "sparse Cholesky": encode_sparse(gcsim.biregular_graph(12, 6, 2, 4, seed=1).incidence, 2, seed=6),
    }


ENCODERS = _encoders()


def _masks(n: int, count: int, seed: int) -> np.ndarray:
    return gcsim.straggler_model("fixed", n, s=2).sample(count, seed=seed)


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("label", list(ENCODERS))
def test_round_trip_is_bit_identical(label, tmp_path):
    enc = ENCODERS[label]
    arrays, meta = enc.to_arrays(), enc.bundle_metadata()
    assert type(enc).kind == STRUCTURED_KIND and KINDS[STRUCTURED_KIND] is StructuredRD
    assert arrays["incidence_indices"].dtype == np.int32 and arrays["incidence_indptr"].dtype == np.int64
    assert sum(a.size for a in arrays.values()) == enc.incidence.nnz + enc.n + 1 + enc.m * enc.n  # O(nnz + m n)
    json.dumps(meta)
    back = StructuredRD.from_arrays(arrays, meta)
    via_files = load_object(export_object(enc, tmp_path, "enc").with_suffix(""))
    masks = _masks(enc.n, 6, seed=1)
    for got in (back, via_files):
        assert type(got) is type(enc) and tuple(got.params) == tuple(enc.params)
        assert got.diagonals.tobytes() == enc.diagonals.tobytes()
        assert (got.incidence != enc.incidence).nnz == 0 and dict(got.options) == dict(enc.options)
        for key, value in got.to_arrays().items():
            assert value.dtype == arrays[key].dtype and value.tobytes() == arrays[key].tobytes(), key
        if isinstance(enc, SparseRD):
            assert got.context.lower == enc.context.lower and got.context.source == enc.context.source
        else:
            assert (got.context.k, got.context.lam) == (enc.context.k, enc.context.lam)
        assert np.array_equal(got.context.errors(masks), enc.context.errors(masks))
        assert got.verify() is True


def test_sparse_sources_are_named_not_their_numbers():
    kinds = {label: enc.bundle_metadata().get("lower", {}).get("kind") for label, enc in ENCODERS.items()}
    assert kinds == {
        "structured PG(2,3)": None,
        "structured PG(2,4) gaussian": None,
        "sparse L(5)": "srg",
        "sparse T(7) open": "srg",
        "sparse on a design": "pair_gram",
        "sparse Cholesky": "cholesky",
    }
    assert ENCODERS["sparse T(7) open"].bundle_metadata()["lower"]["closed"] is False
    for enc in ENCODERS.values():  # c itself is never stored: it is derived again on load
        assert not any(isinstance(v, float) for v in (enc.bundle_metadata().get("lower") or {}).values())


def test_the_advisors_b_equals_a_encoder_round_trips():
    from gcsim.advisor.assess import StructuredAssignment

    d = gcsim.bibd(13, 4)
    enc = StructuredAssignment(d.incidence, "bibd-optimal", 4, 1)
    back = StructuredRD.from_arrays(enc.to_arrays(), enc.bundle_metadata())
    assert back.method == "bibd-optimal" and np.array_equal(back.diagonals, np.ones((1, 13)))
    assert np.array_equal(back.B, d.assignment)


def test_an_encoder_is_immutable():
    enc = ENCODERS["structured PG(2,3)"]
    with pytest.raises(AttributeError, match="immutable"):
        enc.m = 5
    with pytest.raises(AttributeError, match="immutable"):
        enc.extra = 1
    assert not enc.diagonals.flags.writeable and not enc.B.flags.writeable


# ---------------------------------------------------------------------------------------------
# tampering


def _parts(label: str):
    enc = ENCODERS[label]
    arrays = {k: np.array(v, copy=True) for k, v in enc.to_arrays().items()}
    return arrays, json.loads(json.dumps(enc.bundle_metadata()))


@pytest.mark.parametrize("label", ["structured PG(2,3)", "sparse L(5)"])
def test_tampered_arrays_are_refused_by_name(label):
    arrays, meta = _parts(label)
    N = meta["N"]

    def refused(arr, md, match):
        with pytest.raises(CatalogueError, match=match):
            StructuredRD.from_arrays(arr, md)

    # one index changed: out of range, repeated, or moved (sorted, but the algebra breaks)
    a = dict(arrays, incidence_indices=arrays["incidence_indices"].copy())
    a["incidence_indices"][0] = N
    refused(a, meta, rf"outside range\({N}\)")
    a = dict(arrays, incidence_indices=arrays["incidence_indices"].copy())
    a["incidence_indices"][1] = a["incidence_indices"][0]
    refused(a, meta, "strictly increasing")
    a = dict(arrays, incidence_indices=arrays["incidence_indices"].copy())
    ind, ptr = a["incidence_indices"], arrays["incidence_indptr"]
    col0 = set(ind[ptr[0] : ptr[1]].tolist())
    last = int(ind[ptr[1] - 1])
    free = next(p for p in range(last + 1, N) if p not in col0)  # a part column 0 lacks: still sorted
    ind[ptr[1] - 1] = free
    refused(a, meta, "not the structured route's" if "structured" in label else "SRG")
    # a diagonal entry changed, and a wrong seed in the metadata
    a = dict(arrays, diagonals=arrays["diagonals"].copy())
    a["diagonals"][1, 4] *= -1.0
    refused(a, meta, r"diagonal entry \(1, 4\)")
    refused(arrays, {**meta, "options": {**meta["options"], "seed": meta["options"]["seed"] + 1}}, "draw")
    refused(arrays, {**meta, "options": {**meta["options"], "eps": 0.5}}, "draw")
    refused(arrays, {**meta, "options": {**meta["options"], "dist": "uniform"}}, "dist")
    refused(arrays, {**meta, "options": {"seed": 0}}, "exactly eps, seed and dist")
    # truncated arrays, missing arrays, wrong dtypes
    refused(dict(arrays, incidence_indices=arrays["incidence_indices"][:-1]), meta, "incidence_indices.*shape")
    refused(dict(arrays, diagonals=arrays["diagonals"][:, :-1]), meta, "diagonals.*shape")
    refused(dict(arrays, diagonals=arrays["diagonals"].astype(np.float32)), meta, "float64")
    refused(dict(arrays, incidence_indptr=arrays["incidence_indptr"].astype(float)), meta, "integers")
    refused({k: v for k, v in arrays.items() if k != "diagonals"}, meta, "'diagonals' is missing")
    nan = dict(arrays, diagonals=arrays["diagonals"].copy())
    nan["diagonals"][0, 0] = np.nan
    refused(nan, meta, "NaN")
    # metadata: version, layout, method, params
    refused(arrays, {**meta, "structured_format_version": 2}, "structured_format_version")
    refused(arrays, {**meta, "layout": "dense"}, "unknown layout")
    refused(arrays, {**meta, "method": "no-such-encoder"}, "not a registered encoder")
    refused(arrays, {**meta, "method": "naive"}, "not a structured encoder")
    refused(arrays, {**meta, "params": [N + 1, meta["n"], meta["m"]]}, "params")


def test_absurd_declared_sizes_are_refused_before_allocating():
    arrays, meta = _parts("structured PG(2,3)")
    for key, value, match in (
        ("N", 10**15, "inconsistent"),  # N > nnz: some part would be held by no worker
        ("nnz", 10**15, "inconsistent"),  # more entries than N n
        ("m", 10**9, "work arrays"),  # n m² outer products
        ("n", 10**12, "work arrays"),  # refused before the indptr shape is even read
        ("N", -1, ">= 1"),
        ("m", True, ">= 1"),
    ):
        md = {**meta, key: value}
        if key in ("N", "n", "m") and not isinstance(value, bool) and value > 0:
            md["params"] = [md["N"], md["n"], md["m"]]
        with pytest.raises(CatalogueError, match=match):
            StructuredRD.from_arrays(arrays, md)


def test_a_part_held_by_no_worker_is_refused():
    arrays, meta = _parts("structured PG(2,3)")
    ind = arrays["incidence_indices"].copy()
    ind[ind == 12] = 11  # PG(2,3): part 12 sits last in its columns, part 11 never beside it
    with pytest.raises(CatalogueError, match="part 12 is held by no worker|strictly increasing"):
        StructuredRD.from_arrays(dict(arrays, incidence_indices=ind), meta)
    # a genuinely unheld part: one more part declared, nothing else changed
    md = {**meta, "N": 14, "params": [14, 13, 2]}
    with pytest.raises(CatalogueError, match="part 13 is held by no worker"):
        StructuredRD.from_arrays(arrays, md)


def test_wrong_certificates_are_refused():
    arrays, meta = _parts("structured PG(2,3)")
    with pytest.raises(CatalogueError, match=r"\(k, λ\) = \(4, 1\)"):
        StructuredRD.from_arrays(arrays, {**meta, "pair_gram": [4, 2]})
    arrays, meta = _parts("sparse L(5)")
    srg = meta["lower"]
    for lower, match in (
        ({**srg, "params": [25, 8, 3, 1]}, r"Adj²"),  # another SRG's identity fails on this graph
        ({**srg, "closed": False}, "adjacency must be symmetric with zero diagonal"),
        ({**srg, "params": [26, 8, 3, 2]}, "does not fit"),
        ({"kind": "pair_gram"}, "cannot be derived again"),  # L(5) has no AᵀA = aI + λJ
        ({"kind": "guess"}, "no known bound"),
        ({**srg, "params": [25, 8, 3]}, "four integer"),
    ):
        with pytest.raises(CatalogueError, match=match):
            StructuredRD.from_arrays(arrays, {**meta, "lower": lower})
    with pytest.raises(CatalogueError, match="fallback"):
        StructuredRD.from_arrays(arrays, {**meta, "fallback": "yes"})


def test_a_tampered_file_is_refused(tmp_path):
    enc = ENCODERS["sparse L(5)"]
    stem = export_object(enc, tmp_path, "enc").with_suffix("")
    arrays, manifest = load_bundle(stem)
    D = np.array(arrays["diagonals"], copy=True)
    D[0, 3] = -D[0, 3]
    save_bundle(tmp_path / "forged", {**arrays, "diagonals": D}, manifest["metadata"])  # re-checksummed
    with pytest.raises(CatalogueError, match=r"diagonal entry \(0, 3\)"):
        load_object(tmp_path / "forged")
    assert cli_main(["load", str(tmp_path / "forged")]) != 0


# ---------------------------------------------------------------------------------------------
# export at a size beyond the dense limit


def _forged_advice(design, enc):
    """An advice whose rank-1 candidate is ``enc`` on ``design`` (the row of a real advice on the same n)."""
    adv = advise(design.params[0], design.params[3], 2, "fixed:1", families=["bibd"], progress=False)
    row = dict(adv.rows[0], encoder=enc.method, **_NOT_MEASURED)  # the encoder exported (load_code checks it)
    return type(adv)(adv.question, (row,), adv.dropped_items, (enc,), (design,))


def test_export_beyond_the_dense_limit_writes_the_structured_bundle(monkeypatch, tmp_path):
    design = gcsim.bibd(31, 6)  # PG(2,5): B is 62 x 31 = 1,922 entries
    enc = encode_structured(design, 2, seed=7)
    adv = _forged_advice(design, enc)
    chosen = np.ones((4, 31), dtype=bool)
    chosen[1, [0, 5]] = False
    chosen[2, [2, 3, 11, 30]] = False
    chosen[3, ::2] = False
    before = enc.context.errors(chosen)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1500)  # the assignment (961) fits, B does not
    folder = adv.export(tmp_path, patterns=chosen, name="big")
    meta = json.loads((folder / "encoder.json").read_text())["metadata"]
    assert meta["kind"] == STRUCTURED_KIND and meta["layout"] == "structured"
    manifest = json.loads((folder / "advice.json").read_text())
    assert "Corollary 47.7" in manifest["decoding_rule"] and "without forming B" in manifest["decoding_rule"]
    code = load_exported(folder)
    assert type(code.scheme) is StructuredRD and code.verify()
    assert code.scheme.diagonals.tobytes() == enc.diagonals.tobytes()
    assert type(code.decoders).__name__ == "StructuredDecoderTable" and len(code.decoders) == 4
    after = code.scheme.context.errors(chosen)
    assert np.array_equal(after, before)  # the same encoder: the same numbers
    assert np.allclose(code.decoders.errors, before, rtol=1e-9, atol=0)
    assert cli_main(["load", str(folder)]) == 0
    # without patterns: every pattern with at most s = 1 straggler (gains, m² + 1 numbers a row)
    full = load_exported(adv.export(tmp_path, name="all"))
    assert len(full.decoders) == 1 + 31 and full.manifest["decoder_patterns"]["set"] == "all-up-to-s"
    # independent: B formed from the definition once the limit is back, numpy's lstsq per pattern
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**24)
    B = _rd_B(np.asarray(design.assignment, dtype=float), code.scheme.diagonals)
    want = np.array([lstsq_error(B, mk, 2) for mk in chosen])
    # B_F well conditioned here (Theorem 42.1's capacitance: κ <= 1 + λn/a = 1 + 31/5)
    assert np.allclose(after, want, rtol=1e-9, atol=1e-12 * 2 * 31)


def test_an_export_whose_parts_disagree_is_refused(monkeypatch, tmp_path):
    design = gcsim.bibd(13, 4)
    adv = _forged_advice(design, encode_structured(design, 2, seed=0))
    other = _forged_advice(design, encode_structured(design, 2, seed=1))
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 300)
    a = adv.export(tmp_path, name="a")
    b = other.export(tmp_path, name="b")
    for suffix in (".json", ".npz"):  # b's encoder beside a's decoder table
        shutil.copy(b / f"encoder{suffix}", a / f"encoder{suffix}")
    with pytest.raises(CatalogueError, match="another encoder"):
        load_exported(a)
    c = _forged_advice(gcsim.bibd(13, 4), encode_structured(gcsim.bibd(13, 4, 1).incidence[::-1], 2, seed=0))
    d = c.export(tmp_path, name="d", s_max=0)  # the encoder on the parts in reverse order
    with pytest.raises(CatalogueError, match="assignment differs"):
        load_exported(d)


def test_a_sparse_encoder_beyond_the_limit_exports_without_a_table(monkeypatch, tmp_path):
    graph = gcsim.srg(25, 8, 3, 2)
    enc = encode_sparse(graph, 2, seed=3)
    adv = advise(25, 9, 2, "fixed:1", families=["srg"], progress=False)
    row = dict(adv.rows[0], encoder=enc.method, **_NOT_MEASURED)  # the encoder exported (load_code checks it)
    forged = type(adv)(adv.question, (row,), adv.dropped_items, (enc,), (graph,))
    masks = _masks(25, 5, seed=4)
    before = enc.context.errors(masks)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1000)  # A: 625 entries; B: 1,250
    with pytest.raises(InvalidArgumentError, match="^patterns: .*no decoder table"):
        forged.export(tmp_path, patterns=masks)
    assert not any(tmp_path.iterdir())
    folder = forged.export(tmp_path)
    manifest = json.loads((folder / "advice.json").read_text())
    assert manifest["decoder_patterns"] == {"set": "none", "count": 0} and "theory §44" in manifest["decoding"]
    assert "SRG(25, 8, 3, 2) spectrum" in manifest["decoding_rule"]
    code = load_exported(folder)
    assert type(code.scheme) is SparseRD and code.decoders is None
    assert code.scheme.context.lower == enc.context.lower
    assert np.array_equal(code.scheme.context.errors(masks), before)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**24)
    B = _rd_B(np.asarray(graph.assignment, dtype=float), code.scheme.diagonals)
    want = np.array([lstsq_error(B, mk, 2) for mk in masks])
    assert np.allclose(before, want, rtol=1e-9, atol=1e-12)


def test_small_codes_still_export_a_dense_scheme(tmp_path):
    design = gcsim.bibd(13, 4)
    enc = encode_structured(design, 2, seed=0)
    folder = _forged_advice(design, enc).export(tmp_path)
    meta = json.loads((folder / "encoder.json").read_text())["metadata"]
    assert meta["kind"] == "scheme"
    code = load_exported(folder)
    assert type(code.scheme).__name__ == "Scheme" and np.array_equal(code.scheme.B, enc.B)
    assert "numpy.linalg.lstsq" in code.manifest["decoding_rule"]


def test_an_assignment_without_a_bundle_is_refused_before_writing(tmp_path):
    graph = lattice_graph_sparse(5)

    class NoBundle:  # an assignment object of no catalogue kind (a SparseSRG has one: "sparse_srg")
        params, incidence = graph.params, graph.incidence

    adv = advise(25, 9, 2, "fixed:1", families=["srg"], progress=False)
    forged = type(adv)(adv.question, tuple(adv.rows[:1]), adv.dropped_items, (encode_sparse(graph, 2),), (NoBundle(),))
    with pytest.raises(InvalidArgumentError, match=r"^rank: .*NoBundle.*no catalogue bundle"):
        forged.export(tmp_path)
    assert not any(tmp_path.iterdir())
