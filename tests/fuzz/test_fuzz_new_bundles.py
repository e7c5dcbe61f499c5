"""Property-based forgeries of the newer bundle kinds and export folders (issue #33).

One genuine file (or folder) of each: a ``cyclic_design``, a ``structured_scheme`` (explicit incidence,
and the cyclic layout that stores only the difference set), a ``sparse_srg``, a structured decoder
table, a CERAR design (an exact closed form and a perturbation design), and an advice export (the
folder ``Advice.export`` writes).  Each example forges a copy: arrays and metadata edited and the
bundle written again with :func:`~gcsim.io.save_bundle` (so the checksum matches and only the
object's own checks stand between the file and the caller), or, for the advice export, the
``advice.json`` fields (which carry no checksum) edited in place.

Properties:

* every load gives an object or a gcsim error with a message, within the time and memory bound of
  :func:`fuzzing.outcome` (never a raw exception, a hang or a huge allocation);
* a loaded object passes its own ``verify()``;
* a bundle whose *metadata* alone was forged loads as the genuine object reports it (every field
  but the free text re-derived or checked: class 2's rule), or is refused;
* an advice export whose ``advice.json`` alone was forged reports the genuine measurements
  (:attr:`gcsim.catalogue.codes.ExportedCode.measurements`, re-derived from the verified table), or
  is refused.

``make test`` runs the fixed derandomized profile; ``make fuzz`` the long random one (``fuzzing.py``).
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzzing import edge_scalars, fuzz_settings, outcome, refused
from hypothesis import given, strategies as st
from test_fuzz_files import FORGED_VALUES, _edit_metadata, _forge_array, metadata_edit

import gcsim
from gcsim.advisor import advise
from gcsim.catalogue.codes import load_code
from gcsim.catalogue.objects import export_object_at, load_object
from gcsim.cerar.export import export_design, load_design
from gcsim.coding.decoder_table import load_decoder_table, structured_decoder_table
from gcsim.coding.sparse_routes import lattice_graph_sparse
from gcsim.coding.structured import encode_structured
from gcsim.combinatorics.cyclic_design import CyclicDesign
from gcsim.combinatorics.geometries import pg_flats
from gcsim.io import load_bundle, save_bundle

pytestmark = pytest.mark.filterwarnings("ignore")

#: Metadata a loaded object does not report (descriptions, provenance, dispatch keys) -- as in
#: tests/test_loaded_labels.py; a design's display name ("construction") is the writer's label.
FREE_TEXT = frozenset(
    {"decoder", "ordering", "verified", "class", "bundle_arrays", "kind", "closed", "versions", "solver", "seed"}
)
NAME = frozenset({"construction"})

KINDS = ("cyclic_design", "structured", "cyclic_structured", "sparse_srg", "structured_table", "cerar_exact", "cerar")


def _loader(kind: str):
    if kind == "structured_table":
        return load_decoder_table
    if kind.startswith("cerar"):
        return load_design
    return load_object


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict[str, Path]:
    """kind -> the stem of one genuine bundle."""
    root = tmp_path_factory.mktemp("fuzz-new-genuine")
    cyclic = CyclicDesign(13, [0, 1, 3, 9])
    structured = encode_structured(pg_flats(2, 3), 2, seed=2, points=13)
    stems = {
        "cyclic_design": export_object_at(cyclic, root / "cyclic"),
        "structured": export_object_at(structured, root / "structured"),
        "cyclic_structured": export_object_at(encode_structured(cyclic, 2, seed=1), root / "cyclic_structured"),
        "sparse_srg": export_object_at(lattice_graph_sparse(5), root / "srg"),
        "structured_table": structured_decoder_table(structured, s_max=1).export(root / "table"),
        "cerar_exact": export_design(gcsim.cerar.design(3, 3, "exact"), root / "c", "exact33"),
        "cerar": export_design(gcsim.cerar.design(3, 4, "perturbation", eps=0.05), root / "c", "c34"),
    }
    return {k: Path(v).with_suffix("") for k, v in stems.items()}


def _report(kind: str, obj) -> str:
    """What a loaded object reports of its metadata (the free text and display names left out)."""
    meta = obj.bundle_metadata() if hasattr(obj, "bundle_metadata") else {}
    skip = FREE_TEXT | (NAME if kind in ("cyclic_design", "sparse_srg") else frozenset())
    return json.dumps({k: v for k, v in meta.items() if k not in skip}, sort_keys=True, default=str)


@fuzz_settings(2)
@given(
    st.sampled_from(KINDS),
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), FORGED_VALUES), max_size=2),
    st.lists(metadata_edit(), max_size=3),
    st.sampled_from([None, "drop", "extra"]),
)
def test_forged_new_bundles(genuine, kind, array_edits, metadata_edits, structure):
    stem = genuine[kind]
    arrays, manifest = load_bundle(stem)
    arrays = {k: np.array(v) for k, v in arrays.items()}
    names = sorted(arrays)
    for which, op, value in array_edits:
        name = names[which % len(names)]
        arrays[name] = _forge_array(arrays[name], op, value)
    if structure == "drop" and len(names) > 1:
        del arrays[names[-1]]
    elif structure == "extra":
        arrays["extra"] = np.ones(3)
    meta = copy.deepcopy(manifest["metadata"])
    for edit in metadata_edits:
        _edit_metadata(meta, edit)
    if not (array_edits or metadata_edits or structure):
        return
    load = _loader(kind)
    with tempfile.TemporaryDirectory(dir=stem.parent.parent) as box:
        try:
            path = save_bundle(Path(box) / stem.name, arrays, meta)
        except gcsim.GcsimError:  # an array save_bundle itself refuses
            return
        got = outcome(load, Path(path).with_suffix(""))
        if refused(got):
            return
        checked = outcome(got.verify)
        assert not refused(checked), f"a forged {kind} loaded, then failed verify(): {checked}"
        if not array_edits and not structure and kind != "cerar" and kind != "cerar_exact":
            # the arrays are the genuine ones: every reported field is the genuine object's
            assert _report(kind, got) == _report(kind, load(stem)), f"a forged {kind} label was reported: {meta}"


# --------------------------------------------------------------------------- advice exports


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, dict]:
    """An advice export with a positive error (fixed s = 3 > the design's 2) and what it reports."""
    adv = advise(13, 4, 2, "fixed:3", families=["bibd"], progress=False)
    folder = adv.export(tmp_path_factory.mktemp("fuzz-new-export") / "out", 1)
    return folder, dict(load_code(folder).measurements)


def _json_leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _json_leaves(v, (*path, k))
    elif isinstance(node, list) and node:
        for i, v in enumerate(node):
            yield from _json_leaves(v, (*path, i))
    else:
        yield path


ADVICE_VALUES = st.one_of(
    edge_scalars(),
    st.floats(0, 1),  # a plausible measurement
    st.just("<delete>"),
    st.sampled_from([None, [], {}, "../../etc/passwd", "encoder", "fixed-s uniform: s=3"]),
)


@fuzz_settings(1)
@given(st.lists(st.tuples(st.integers(0, 200), ADVICE_VALUES), min_size=1, max_size=3))
def test_forged_advice_json(export, edits):
    folder, measured = export
    manifest = json.loads((folder / "advice.json").read_text())
    leaves = list(_json_leaves(manifest))
    for index, value in edits:
        *parents, key = leaves[index % len(leaves)]
        node = manifest
        for p in parents:
            node = node[p]
        if value == "<delete>":
            del node[key]
        else:
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                value = repr(value)
            node[key] = value
    with tempfile.TemporaryDirectory(dir=folder.parent) as box:
        copy_ = Path(box) / folder.name
        shutil.copytree(folder, copy_)
        (copy_ / "advice.json").write_text(json.dumps(manifest, default=str))
        got = outcome(load_code, copy_)
        if refused(got):
            return
        assert not refused(outcome(got.verify))
        # only the re-derived measurements are reported, and they are the genuine ones
        assert set(got.measurements) <= set(measured)
        for key, value in got.measurements.items():
            assert value == pytest.approx(measured[key], rel=1e-9, abs=1e-12), (key, edits)
