"""Bundles: round trip, and refusal of tampered, truncated or mismatched files."""

import json
import os

import numpy as np
import pytest

from gcsim.errors import CatalogueError, InvalidArgumentError
from gcsim.io import bundle as cat
from gcsim.io.manifest import atomic_write_bytes


@pytest.fixture
def bundle(tmp_path):
    arrays = {"A": np.arange(12, dtype=np.int8).reshape(3, 4), "x": np.linspace(0, 1, 5)}
    path = cat.save_bundle(tmp_path / "b", arrays, {"kind": "demo", "params": [3, 4]})
    return tmp_path / "b", arrays, path


def test_round_trip_preserves_arrays_and_metadata(bundle):
    stem, arrays, path = bundle
    for p in (stem, path, stem.with_suffix(".npz")):
        got, man = cat.load_bundle(p)
        assert set(got) == set(arrays)
        for k in arrays:
            np.testing.assert_array_equal(got[k], arrays[k])
            assert got[k].dtype == arrays[k].dtype
        assert man["metadata"] == {"kind": "demo", "params": [3, 4]}
        assert man["format"] == cat.BUNDLE_FORMAT and man["format_version"] == 1
        assert man["provenance"]["gcsim_version"]


def test_existing_bundle_is_not_overwritten(bundle):
    stem, arrays, _ = bundle
    with pytest.raises(FileExistsError):
        cat.save_bundle(stem, arrays, {})
    cat.save_bundle(stem, {"y": np.ones(2)}, {"kind": "other"}, overwrite=True)
    got, man = cat.load_bundle(stem)
    assert list(got) == ["y"] and man["metadata"]["kind"] == "other"


def test_tampered_data_is_refused(bundle):
    stem, _, _ = bundle
    npz = stem.with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.raises(CatalogueError, match="checksum"):
        cat.load_bundle(stem)


def test_truncated_data_is_refused(bundle):
    stem, _, _ = bundle
    npz = stem.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:40])
    with pytest.raises(CatalogueError, match="truncated"):
        cat.load_bundle(stem)


def test_truncated_manifest_is_refused(bundle):
    stem, _, path = bundle
    path.write_text(path.read_text()[:50])
    with pytest.raises(CatalogueError, match="not valid JSON"):
        cat.load_bundle(stem)


def test_manifest_that_lies_about_shapes_is_refused(bundle):
    stem, _, path = bundle
    man = json.loads(path.read_text())
    man["arrays"]["A"]["shape"] = [4, 3]
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="shape"):
        cat.load_bundle(stem)


def test_unknown_version_and_missing_files(bundle, tmp_path):
    stem, _, path = bundle
    man = json.loads(path.read_text())
    man["format_version"] = 99
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="version"):
        cat.load_bundle(stem)
    with pytest.raises(CatalogueError, match="not found"):
        cat.load_bundle(tmp_path / "nothing")
    man["format_version"] = 1
    path.write_text(json.dumps(man))
    stem.with_suffix(".npz").unlink()
    with pytest.raises(CatalogueError, match="not found"):
        cat.load_bundle(stem)


def test_bad_arrays_are_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="arrays"):
        cat.save_bundle(tmp_path / "x", {}, {})
    with pytest.raises(InvalidArgumentError, match="object"):
        cat.save_bundle(tmp_path / "x", {"a": np.array([{}, 1], dtype=object)}, {})
    with pytest.raises(InvalidArgumentError, match="identifiers"):
        cat.save_bundle(tmp_path / "x", {"a b": np.ones(1)}, {})
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new content")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_git_sha_is_this_checkouts_head():
    """Provenance names the commit of the checkout gcsim runs from (it was None after the layout move)."""
    import subprocess
    from pathlib import Path

    from gcsim.io.manifest import git_sha

    root = Path(__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    sha = git_sha()
    assert sha is not None and sha.removesuffix("-dirty") == head.stdout.strip()
