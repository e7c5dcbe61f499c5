"""The committed catalogue: named instances load, re-verify and equal fresh constructions."""

import json
import re
import shutil

import numpy as np
import pytest

import gcsim
from gcsim.catalogue import NAMED_INSTANCES, build_named, export_object, load_object
from gcsim.errors import CatalogueError, VerificationError
from gcsim.io.bundle import load_bundle

KINDS = {
    "pg2_9": "bibd",
    "coset_27_2_5": "coset",
    "biregular_40_20_3_6": "biregular",
    "paley13": "srg",
    "petersen": "srg",
}


@pytest.mark.parametrize("name", sorted(NAMED_INSTANCES))
def test_committed_file_loads_verifies_and_matches(repo_root, name):
    stem = repo_root / "designs" / KINDS[name] / name
    stored = load_object(stem)
    fresh = build_named(name)
    assert stored.params == fresh.params
    np.testing.assert_array_equal(stored.assignment, fresh.assignment)
    _, manifest = load_bundle(stem)
    meta = manifest["metadata"]
    assert meta["kind"] == KINDS[name] and meta["verified"] is True
    assert len(manifest["sha256"]) == 64 and manifest["provenance"]["gcsim_version"]


def test_named_parameters(repo_root):
    pg = build_named("pg2_9")
    assert pg.params == (91, 91, 10, 10, 1)
    coset = build_named("coset_27_2_5")
    assert coset.assignment.shape == (27, 54)
    bi = build_named("biregular_40_20_3_6")
    assert bi.assignment.shape == (40, 20)
    assert set(bi.assignment.sum(axis=1)) == {3} and set(bi.assignment.sum(axis=0)) == {6}


@pytest.mark.parametrize("name", ["petersen", "coset_27_2_5", "biregular_40_20_3_6"])
def test_tampered_copy_is_refused(repo_root, tmp_path, name):
    src = repo_root / "designs" / KINDS[name]
    for ext in (".npz", ".json"):
        shutil.copy(src / (name + ext), tmp_path / (name + ext))
    npz = tmp_path / f"{name}.npz"
    raw = bytearray(npz.read_bytes())
    raw[-30] ^= 0x01
    npz.write_bytes(bytes(raw))
    with pytest.raises(CatalogueError):
        load_object(tmp_path / name)


def test_consistently_forged_matrix_is_refused(tmp_path):
    """A file whose checksum is fixed up after editing the matrix is still refused by verification."""
    g = gcsim.srg(10, 3, 0, 1)
    path = export_object(g, tmp_path, name="p")
    arrays, manifest = load_bundle(path)
    adj = arrays["adjacency"].copy()
    adj[0, 1] = adj[1, 0] = 1 - adj[0, 1]
    from gcsim.io.bundle import save_bundle

    save_bundle(
        tmp_path / "srg" / "p",
        {"assignment": (adj + np.eye(10, dtype=adj.dtype)).astype(np.int8), "adjacency": adj},
        manifest["metadata"],
        overwrite=True,
    )
    with pytest.raises(CatalogueError, match="does not verify"):
        load_object(tmp_path / "srg" / "p")


def test_manifest_params_must_match_matrix(tmp_path):
    path = export_object(gcsim.bibd(7, 3, 1), tmp_path, name="fano")
    man = json.loads(path.read_text())
    man["metadata"]["params"] = [7, 7, 3, 3, 2]
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError):
        load_object(path)


def test_object_that_fails_verification_is_never_written(tmp_path):
    class Broken:
        kind = "bibd"
        params = (3, 3, 1, 1, 0)
        assignment = np.eye(3, dtype=int)

        def verify(self):
            raise VerificationError("broken on purpose")

        def to_arrays(self):
            return {"assignment": self.assignment}

        def bundle_metadata(self):
            return {"params": list(self.params), "construction": "broken on purpose"}

    with pytest.raises(VerificationError):
        export_object(Broken(), tmp_path)
    assert list(tmp_path.rglob("*")) == []


def test_every_committed_bundle_reverifies_from_its_file(repo_root):
    """All of the packaged catalogue (combinatorial objects and CERAR designs) loads and re-verifies."""
    from gcsim.catalogue import list_catalogue
    from gcsim.cerar.export import load_design

    rows = list_catalogue(repo_root / "designs")
    kinds = {r["kind"] for r in rows}
    assert {"bibd", "srg", "coset", "biregular", "cerar"} <= kinds
    for row in rows:
        if row["kind"] == "cerar":
            des = load_design(row["path"])
            assert des.encoders.shape == (des.N, des.c, des.c)
        else:
            load_object(row["path"])


def test_committed_catalogue_is_in_its_final_state(repo_root):
    """No bundle in the packaged catalogue was committed in the middle of a write: every manifest names
    <stem>.npz, and no temporary or content-addressed data files are lying around."""
    folder = repo_root / "designs"
    for json_path in folder.rglob("*.json"):
        man = json.loads(json_path.read_text())
        assert man["data_file"] == json_path.with_suffix(".npz").name, json_path
        assert man["size_bytes"] == json_path.with_suffix(".npz").stat().st_size
    leftovers = [
        p
        for p in folder.rglob("*")
        if p.name.startswith(".") or p.name.endswith(".tmp") or re.search(r"\.[0-9a-f]{16}\.npz$", p.name)
    ]
    assert leftovers == []


def test_catalogue_force_rewrites_loadable_bundles(repo_root, tmp_path):
    """`gcsim catalogue --force` semantics on a copy: every bundle is rewritten with the pair protocol
    and loads back equal to a fresh build."""
    from gcsim.app.catalogue_report import catalogue_table, table_ok

    shutil.copytree(repo_root / "designs", tmp_path / "designs")
    rows = catalogue_table(tmp_path / "designs", force=True, names=["petersen", "coset_27_2_5"])
    assert [r["file"] for r in rows] == ["exported", "exported"]
    rows = catalogue_table(tmp_path / "designs", names=["petersen", "coset_27_2_5"])
    assert table_ok(rows) and [r["file"] for r in rows] == ["matches", "matches"]
    assert sorted(p.name for p in (tmp_path / "designs" / "srg").iterdir()) == [
        "paley13.json",
        "paley13.npz",
        "petersen.json",
        "petersen.npz",
    ]
