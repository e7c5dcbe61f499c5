"""The ``"sparse_srg"`` bundle: strongly regular graphs kept sparse, exported and loaded without ``v x v`` arrays.

* round trips are bit-identical (L(5), T(7), open and closed, and L(40) beyond a lowered
  ``MAX_DENSE_ENTRIES``), through ``from_arrays`` and through the files;
* loading verifies instead of trusting: a moved index (symmetry), a symmetric edge swap (the SRG
  identity), a longer row, a self-loop, wrong parameters (infeasible, or feasible but another
  graph's), truncated arrays and absurd declared sizes are refused, each named;
* ``Advice.export`` of an L(q) candidate beyond a lowered dense limit writes the assignment as
  this bundle; ``load_exported`` reads it back verified, its incidence compared with the
  encoder's, and the errors on a few patterns equal those before export (and an independent
  dense least-squares computation once the limit is restored);
* a structured decoder table of the advisor's ``B = A`` encoder records that encoder's method
  (it recorded ``"rd"``), and an exported code whose table names another method is refused.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

import gcsim
from exact_lstsq import reference_error
from gcsim import limits
from gcsim.advisor import advise, load_exported
from gcsim.advisor.assess import StructuredAssignment
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import export_object, load_object
from gcsim.catalogue.kinds import KINDS
from gcsim.coding.decoder_table import DecoderTable, StructuredDecoderTable, decoder_table
from gcsim.coding.sparse_routes import (
    SPARSE_SRG_KIND,
    SparseRD,
    SparseSRG,
    lattice_graph_sparse,
    triangular_graph_sparse,
)
from gcsim.coding.stragglers import TraceModel
from gcsim.errors import CatalogueError
from gcsim.io.bundle import load_bundle, save_bundle

GRAPHS = {
    "L(5)": lambda: lattice_graph_sparse(5),
    "L(5) open": lambda: lattice_graph_sparse(5, closed=False),
    "T(7)": lambda: triangular_graph_sparse(7),
    "T(7) open": lambda: triangular_graph_sparse(7, closed=False),
}


#: A forged row carries another encoder's measurements: cleared (load_code checks measurements it can re-derive)
_NOT_MEASURED = dict.fromkeys(("error", "error_lo", "error_hi", "worst_case", "lower_bound", "upper_bound"))


def _same_graph(got: SparseSRG, want: SparseSRG) -> None:
    assert type(got) is SparseSRG and got.params == want.params and got.closed is want.closed
    assert got.construction == want.construction
    assert (got.adjacency != want.adjacency).nnz == 0 and (got.incidence != want.incidence).nnz == 0
    arrays = want.to_arrays()
    for key, value in got.to_arrays().items():
        assert value.dtype == arrays[key].dtype and value.tobytes() == arrays[key].tobytes(), key


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("label", list(GRAPHS))
def test_round_trip_is_bit_identical(label, tmp_path):
    g = GRAPHS[label]()
    arrays, meta = g.to_arrays(), g.bundle_metadata()
    assert KINDS[SPARSE_SRG_KIND] is SparseSRG and type(g).kind == SPARSE_SRG_KIND
    assert arrays["adjacency_indices"].dtype == np.int32 and arrays["adjacency_indptr"].dtype == np.int64
    v, k = g.params[0], g.params[1]
    assert sum(a.size for a in arrays.values()) == v * k + v + 1  # O(v k): never v x v
    json.dumps(meta)
    _same_graph(SparseSRG.from_arrays(arrays, meta), g)
    back = load_object(export_object(g, tmp_path, "g").with_suffix(""))
    _same_graph(back, g)
    assert back.verify() is True
    assert cli_main(["load", str(tmp_path / SPARSE_SRG_KIND / "g")]) == 0


def test_round_trip_beyond_the_dense_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1000)  # L(40): v² = 2,560,000 entries
    g = lattice_graph_sparse(40)
    back = load_object(export_object(g, tmp_path, "L40").with_suffix(""))
    _same_graph(back, g)
    assert back.params == (1600, 78, 38, 2) and back.incidence.nnz == 1600 * 79


def test_a_sparse_srg_is_immutable():
    g = lattice_graph_sparse(4)
    for name in ("adjacency", "params", "closed", "construction", "incidence"):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(g, name, None)
    with pytest.raises(AttributeError, match="immutable"):
        del g.params


# ---------------------------------------------------------------------------------------------
# tampering


def _parts(label: str = "L(5)"):
    g = GRAPHS[label]()
    return {k: np.array(v, copy=True) for k, v in g.to_arrays().items()}, json.loads(json.dumps(g.bundle_metadata()))


def _refused(arrays, meta, match):
    with pytest.raises(CatalogueError, match=match):
        SparseSRG.from_arrays(arrays, meta)


def test_a_changed_index_breaks_symmetry():
    arrays, meta = _parts()  # L(5): row 0 is [1, 2, 3, 4, 5, 10, 15, 20]
    ind = arrays["adjacency_indices"]
    assert ind[:8].tolist() == [1, 2, 3, 4, 5, 10, 15, 20]
    ind[7] = 24  # still sorted, still degree 8: (20, 0) lost its (0, 20), (0, 24) has no (24, 0)
    _refused(arrays, meta, r"not symmetric: it holds the edge \(20, 0\) but not \(0, 20\)")  # the first pair
    arrays, meta = _parts()
    arrays["adjacency_indices"][0] = 0
    _refused(arrays, meta, "vertex 0 is adjacent to itself")
    arrays, meta = _parts()
    arrays["adjacency_indices"][0] = 25
    _refused(arrays, meta, r"outside range\(25\)")
    arrays, meta = _parts()
    arrays["adjacency_indices"][1] = 1  # [1, 1, 3, ...]: a repeated neighbour
    _refused(arrays, meta, "strictly increasing")


def test_a_symmetric_edge_swap_breaks_the_srg_identity():
    g = lattice_graph_sparse(5)
    A = g.adjacency.tolil()
    # (0, 1) and (6, 7) are edges, (0, 6) and (1, 7) are not: swap them (degrees and symmetry kept)
    assert A[0, 1] == A[6, 7] == 1 and A[0, 6] == A[1, 7] == 0
    for i, j, x in ((0, 1, 0), (6, 7, 0), (0, 6, 1), (1, 7, 1)):
        A[i, j] = A[j, i] = x
    A = sp.csr_matrix(A)
    A.sort_indices()
    arrays = {
        "adjacency_indices": A.indices.astype(np.int32),
        "adjacency_indptr": A.indptr.astype(np.int64),
    }
    _refused(arrays, g.bundle_metadata(), r"not an SRG\(25, 8, 3, 2\).*Adj²")


def test_a_longer_row_is_refused():
    arrays, meta = _parts()
    ptr = arrays["adjacency_indptr"]
    ptr[1] += 1  # row 0 takes row 1's first neighbour
    _refused(arrays, meta, "vertex 0 9 neighbours.*degree k = 8")
    arrays, meta = _parts()
    longer = np.insert(arrays["adjacency_indices"], 8, 21)  # a ninth neighbour in row 0
    ptr = arrays["adjacency_indptr"].copy()
    ptr[1:] += 1
    _refused(dict(adjacency_indices=longer, adjacency_indptr=ptr), meta, r"adjacency_indices.*shape \(201,\)")


def test_wrong_parameters_are_refused():
    arrays, meta = _parts()
    _refused(arrays, {**meta, "params": [25, 8, 3, 1]}, r"infeasible: k\(k − 1 − λ\) = 32 != \(v − k − 1\)μ = 16")
    # feasible (8 · 2 = 16 · 1) but another graph's: the SRG identity names the entry
    _refused(arrays, {**meta, "params": [25, 8, 5, 1]}, r"not an SRG\(25, 8, 5, 1\).*Adj²\)\[0, 1\] = 3, expected 5")
    _refused(arrays, {**meta, "params": [25, 8, 3]}, "four integers")
    _refused(arrays, {**meta, "params": [25, 8, True, 2]}, "four integers")
    _refused(arrays, {**meta, "params": [25, 8, 8, 2]}, "not those of a strongly regular graph")
    _refused(arrays, {**meta, "closed": "yes"}, "'closed' must be true or false")
    _refused(arrays, {**meta, "sparse_srg_format_version": 2}, "sparse_srg_format_version")
    _refused(arrays, {**meta, "construction": 5}, "construction")


def test_truncated_missing_and_mistyped_arrays_are_refused():
    arrays, meta = _parts()
    _refused(dict(arrays, adjacency_indices=arrays["adjacency_indices"][:-1]), meta, "adjacency_indices.*shape")
    _refused(dict(arrays, adjacency_indptr=arrays["adjacency_indptr"][:-1]), meta, "adjacency_indptr.*shape")
    _refused(dict(arrays, adjacency_indices=arrays["adjacency_indices"].astype(float)), meta, "integers")
    _refused({"adjacency_indptr": arrays["adjacency_indptr"]}, meta, "'adjacency_indices' is missing")


def test_absurd_declared_sizes_are_refused_before_allocating():
    arrays, meta = _parts()
    q = 10**5  # L(10^5): feasible, 10^10 vertices of degree 199,998
    _refused(arrays, {**meta, "params": [q * q, 2 * (q - 1), q - 2, 2]}, "MAX_SPARSE_ENTRIES")
    _refused(arrays, {**meta, "params": [-25, 8, 3, 2]}, "not those of a strongly regular graph")


def test_a_tampered_file_is_refused(tmp_path):
    g = lattice_graph_sparse(5)
    stem = export_object(g, tmp_path, "g").with_suffix("")
    arrays, manifest = load_bundle(stem)
    ind = np.array(arrays["adjacency_indices"], copy=True)
    ind[7] = 24
    save_bundle(tmp_path / "forged", {**arrays, "adjacency_indices": ind}, manifest["metadata"])  # re-checksummed
    with pytest.raises(CatalogueError, match="not symmetric"):
        load_object(tmp_path / "forged")
    assert cli_main(["load", str(tmp_path / "forged")]) != 0


# ---------------------------------------------------------------------------------------------
# Advice.export of an L(q) candidate beyond the dense limit


def test_export_of_a_sparse_srg_candidate_beyond_the_dense_limit(monkeypatch, tmp_path):
    # L(5) with A = Adj + I; under the lowered limit (v² = 625 > 600) the advisor builds it sparse
    model = TraceModel(np.random.default_rng(5).exponential(size=(25, 20)), policy="deadline", deadline=2.0)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 600)
    adv = advise(25, 9, 2, model, families=["srg"], progress=False)
    rank = next(i for i, s in enumerate(adv.schemes, start=1) if type(s) is SparseRD)
    graph, enc = adv.structures[rank - 1], adv.schemes[rank - 1]
    assert type(graph) is SparseSRG and graph.closed
    masks = gcsim.straggler_model("fixed", 25, s=3).sample(6, seed=1)
    before = enc.context.errors(masks)
    folder = adv.export(tmp_path, rank, name="L5")
    meta = json.loads((folder / SPARSE_SRG_KIND / "assignment.json").read_text())["metadata"]
    assert meta["kind"] == SPARSE_SRG_KIND and meta["params"] == [25, 8, 3, 2] and meta["closed"] is True
    assert json.loads((folder / "advice.json").read_text())["files"]["assignment"] == "sparse_srg/assignment"
    code = load_exported(folder)
    assert type(code.assignment) is SparseSRG and type(code.scheme) is SparseRD and code.verify()
    _same_graph(code.assignment, graph)
    assert (code.scheme.incidence != code.assignment.incidence).nnz == 0  # Adj + I
    after = code.scheme.context.errors(masks)
    assert np.allclose(after, before, rtol=1e-9, atol=0)
    assert cli_main(["load", str(folder)]) == 0
    # the same candidate with the open graph's assignment beside its encoder: refused
    other = tmp_path / "open"
    export_object(lattice_graph_sparse(5, closed=False), other, "assignment")
    for suffix in (".json", ".npz"):
        shutil.copy(other / SPARSE_SRG_KIND / f"assignment{suffix}", folder / SPARSE_SRG_KIND / f"assignment{suffix}")
    with pytest.raises(CatalogueError, match="assignment differs"):
        load_exported(folder)
    # independent: B formed from the definition once the limit is back, a least-squares reference per pattern
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**24)
    A = graph.incidence.toarray().astype(float)
    B = np.vstack([A * code.scheme.diagonals[l][None, :] for l in range(2)])
    want = np.array([reference_error(B, 2, mk) for mk in masks])  # independent of gcsim's evaluators
    # B_F well conditioned: the SRG spectrum bounds λ_min(AᵀA) >= 1 (theory Lemma 44.3)
    assert np.allclose(after, want, rtol=1e-9, atol=1e-12 * 2 * 25)


# ---------------------------------------------------------------------------------------------
# a structured table records its encoder's method


def _b_equals_a():
    d = gcsim.bibd(31, 6)  # PG(2,5): B = A has 961 entries
    return d, StructuredAssignment(d.incidence, "bibd-optimal", 6, 1)


def test_a_b_equals_a_table_records_its_method():
    _, enc = _b_equals_a()
    table = decoder_table(enc, 1)
    assert type(table) is StructuredDecoderTable
    meta = table.bundle_metadata()
    assert meta["scheme_method"] == "bibd-optimal"  # was "rd" whatever the encoder
    back = DecoderTable.from_arrays(table.to_arrays(), meta)
    assert back.scheme.method == "bibd-optimal" and np.array_equal(back.gains, table.gains)
    assert DecoderTable.from_arrays(table.to_arrays(), {**meta, "scheme_method": "rd"}).scheme.method == "rd"
    for method, match in (
        ("no-such-encoder", "not a registered encoder"),
        ("ns", "not a structured encoder"),
    ):
        with pytest.raises(CatalogueError, match=match):
            DecoderTable.from_arrays(table.to_arrays(), {**meta, "scheme_method": method})
    D = table.to_arrays()
    D["diagonals"] = D["diagonals"] * 2.0
    with pytest.raises(CatalogueError, match="unit diagonals"):
        DecoderTable.from_arrays(D, meta)


def test_an_exported_table_of_another_method_is_refused(monkeypatch, tmp_path):
    design, enc = _b_equals_a()
    adv = advise(31, 6, 1, "fixed:1", families=["bibd"], progress=False)
    row = dict(adv.rows[0], encoder=enc.method, **_NOT_MEASURED)  # the encoder exported (load_code checks it)
    forged = type(adv)(adv.question, (row,), adv.dropped_items, (enc,), (design,))
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 950)  # B = A: 961 entries, over it
    chosen = np.ones((3, 31), dtype=bool)
    chosen[1, [0, 5]] = False
    chosen[2, ::3] = False
    folder = forged.export(tmp_path, name="ba", patterns=chosen)
    assert json.loads((folder / "encoder.json").read_text())["metadata"]["kind"] == "structured_scheme"
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**24)  # the dense BIBD assignment loads again
    code = load_exported(folder)
    assert code.scheme.method == code.decoders.scheme.method == "bibd-optimal"
    assert type(code.decoders) is StructuredDecoderTable and len(code.decoders) == 3
    # the same table stored as the old code wrote it ("rd"), re-checksummed: another encoder's
    arrays, manifest = load_bundle(folder / "decoders")
    save_bundle(folder / "decoders", arrays, {**manifest["metadata"], "scheme_method": "rd"}, overwrite=True)
    with pytest.raises(CatalogueError, match="another encoder"):
        load_exported(folder)
