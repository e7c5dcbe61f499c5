"""Property-based fuzzing of the loaders on mutated bundle files (issue #19 item 8).

A genuine bundle of each kind (a BIBD, an SRG, an encoder, a decoder table, a CERAR design) is
written once; each example mutates a copy in a fresh folder and loads it with every loader that
could be handed it (``load_bundle``, ``load_object``, ``load_decoder_table``,
``gcsim.cerar.export.load_design``).  Two kinds of mutation:

* *bytes*: flipped, truncated, appended or zeroed bytes of the manifest or the data, either
  replaced by a folder, a FIFO, a symlink to ``/dev/zero`` or nothing; damaged data no longer
  matches its checksum, so every loader must refuse it; a damaged manifest may load only as the
  genuine object (its descriptive fields are not checksummed; the object is rebuilt from the data);
* *forgeries*: arrays and metadata changed and the bundle re-written with :func:`save_bundle`,
  so the checksum matches and only the object's own checks stand between the file and the caller.

Property: a loaded object or a gcsim error with a message, within the time bound; a file whose
bytes were damaged is never loaded; ``verify()`` of a loaded object never raises a raw exception,
and what a verifying loader (``load_object``, ``load_decoder_table`` by default) returns passes it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzzing import edge_scalars, fuzz_settings, outcome, refused
from hypothesis import given, strategies as st

import gcsim
from gcsim.cerar.export import export_design, load_design
from gcsim.io import load_bundle, save_bundle

pytestmark = pytest.mark.filterwarnings("ignore")

KINDS = ("bibd", "srg", "scheme", "table", "cerar")


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict[str, Path]:
    """One genuine bundle of each kind: kind -> its .json manifest."""
    root = tmp_path_factory.mktemp("fuzz-files-genuine")
    fano = gcsim.bibd(7, 3, 1)
    scheme = gcsim.encode(fano, 2, "rd", seed=1)
    return {
        "bibd": gcsim.export_object(fano, root / "o", "fano"),
        "srg": gcsim.export_object(gcsim.srg(10, 3, 0, 1), root / "o", "petersen"),
        "scheme": gcsim.export_object(scheme, root / "o", "rd"),
        "table": gcsim.decoder_table(scheme, 1).export(root / "t" / "table"),
        "cerar": export_design(gcsim.cerar.design(3, 4, "perturbation", eps=0.05), root / "c", "c34"),
    }


def _copy(manifest: Path, folder: Path) -> Path:
    """Copy a bundle's two files into ``folder``; returns the copied manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in (manifest, manifest.with_suffix(".npz")):
        shutil.copyfile(path, folder / path.name)
    return folder / manifest.name


def _loaders(path: Path):
    """(loader, whether it verifies the object in full before returning it)."""
    return [
        (lambda: load_bundle(path), False),
        (lambda: gcsim.load_object(path), True),
        (lambda: gcsim.load_decoder_table(path), True),
        (lambda: gcsim.load_decoder_table(path, sample=3), False),  # sampling: an explicit opt-in
        (lambda: load_design(path), False),
    ]


def _load_all(path: Path) -> list:
    results = []
    for load, verifies in _loaders(path):
        got = outcome(load)
        if not refused(got) and hasattr(got, "verify"):
            checked = outcome(got.verify)
            # what a verifying loader returns passes the object's own check
            assert not (verifies and refused(checked)), f"loaded, then failed verify(): {checked}"
        results.append(got)
    return results


# --------------------------------------------------------------------------- damaged bytes


BYTE_MUTATIONS = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(0)),
    st.tuples(st.just("append"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("zero"), st.floats(0, 1), st.just(0)),
    st.tuples(
        st.sampled_from(["folder", "fifo", "dev-zero", "missing", "empty", "self-link"]), st.just(0.0), st.just(0)
    ),
)


def _damage(path: Path, how: tuple[str, float, int]) -> None:
    op, where, byte = how
    data = bytearray(path.read_bytes())
    i = min(len(data) - 1, int(where * len(data)))
    if op == "flip":
        data[i] ^= byte
    elif op == "truncate":
        del data[i:]
    elif op == "append":
        data += bytes([byte]) * (1 + i % 64)
    elif op == "zero":
        data[i:] = bytes(len(data) - i)
    else:
        path.unlink()
        if op == "folder":
            path.mkdir()
        elif op == "fifo":
            os.mkfifo(path)
        elif op == "dev-zero":
            path.symlink_to("/dev/zero")
        elif op == "empty":
            path.write_bytes(b"")
        elif op == "self-link":
            path.symlink_to(path.name)
        return
    path.write_bytes(bytes(data))


@fuzz_settings(1.5)
@given(st.sampled_from(KINDS), st.sampled_from([".json", ".npz"]), BYTE_MUTATIONS)
def test_damaged_bundles(genuine, kind, suffix, how):
    with tempfile.TemporaryDirectory(dir=genuine[kind].parent.parent) as box:
        manifest = _copy(genuine[kind], Path(box))
        target = manifest.with_suffix(suffix)
        before = target.read_bytes()
        _damage(target, how)
        if target.is_file() and not target.is_symlink() and target.read_bytes() == before:
            return  # the mutation did nothing
        results = _load_all(manifest)
        loaded = [r for r in results if not refused(r)]
        if suffix == ".npz":  # damaged data (covered by the checksum): nothing may load
            assert not loaded, f"a damaged {kind} data file loaded: {[type(r).__name__ for r in loaded]}"
        else:
            # the manifest's descriptive fields (provenance, construction text) are not checksummed: it
            # may load, but only as the genuine object, rebuilt and verified from the intact data
            reference = [outcome(load) for load, _ in _loaders(genuine[kind])]
            for got, ref in zip(results, reference, strict=True):
                if not refused(got):
                    assert not refused(ref) and _fingerprint(got) == _fingerprint(ref), (
                        f"a damaged {kind} manifest loaded as a different object"
                    )


def _fingerprint(loaded) -> tuple:
    """What identifies a loaded object: its kind, parameters and arrays (bytes, dtype, shape)."""
    if isinstance(loaded, tuple):  # load_bundle: (arrays, manifest); the manifest is not checksummed
        arrays = loaded[0]
        head: tuple = ("bundle",)
    else:
        arrays = loaded.to_arrays()
        head = (type(loaded).__name__, repr(loaded.params))
    return head + tuple((k, v.dtype.str, v.shape, v.tobytes()) for k, v in sorted(arrays.items()))


# --------------------------------------------------------------------------- forgeries


def _forge_array(arr: np.ndarray, op: int, value) -> np.ndarray:
    a = np.array(arr)
    if op == 0 and a.size:  # one entry changed
        flat = a.reshape(-1).astype(np.result_type(a.dtype, np.asarray(value).dtype), copy=True)
        flat[len(flat) // 2] = value
        return flat.reshape(a.shape)
    if op == 1:
        return a.T
    if op == 2:
        return a[:-1] if a.ndim and a.shape[0] else a
    if op == 3:
        return a.astype(np.complex128)
    if op == 4:
        return a.astype(np.float16)
    if op == 5:
        return a.reshape(-1)
    if op == 6:
        return a[None]
    if op == 7:
        return np.zeros((0,) + a.shape[1:], dtype=a.dtype)
    if op == 8:
        return a.astype(bool)
    return -a if a.dtype.kind in "fic" else a


FORGED_VALUES = st.sampled_from([2, -1, 0, 1, np.nan, np.inf, 1e300, 0.5, 1e-300])


@st.composite
def metadata_edit(draw):
    """A path into the metadata and a new value (or deletion)."""
    return draw(st.integers(0, 50)), draw(st.one_of(edge_scalars(), st.just("<delete>"), st.integers(-3, 30)))


def _edit_metadata(meta, edit):
    """Walk to the ``index``-th leaf of the metadata (depth first) and replace or delete it."""
    index, value = edit
    leaves = []

    def walk(node, parent, key):
        if isinstance(node, dict):
            for k in list(node):
                walk(node[k], node, k)
        elif isinstance(node, list) and node:
            for k in range(len(node)):
                walk(node[k], node, k)
        else:
            leaves.append((parent, key))

    walk(meta, None, None)
    if not leaves:
        return
    parent, key = leaves[index % len(leaves)]
    if parent is None:
        return
    if value == "<delete>":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    else:
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        parent[key] = value


@fuzz_settings(2)
@given(
    st.sampled_from(KINDS),
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), FORGED_VALUES), max_size=2),
    st.lists(metadata_edit(), max_size=2),
    st.sampled_from([None, "drop", "extra"]),
)
def test_forged_bundles(genuine, kind, array_edits, metadata_edits, structure):
    arrays, manifest = load_bundle(genuine[kind])
    arrays = {k: np.array(v) for k, v in arrays.items()}
    names = sorted(arrays)
    for which, op, value in array_edits:
        name = names[which % len(names)]
        arrays[name] = _forge_array(arrays[name], op, value)
    if structure == "drop" and len(names) > 1:
        del arrays[names[-1]]
    elif structure == "extra":
        arrays["extra"] = np.ones(3)
    meta = json.loads(json.dumps(manifest["metadata"]))
    for edit in metadata_edits:
        _edit_metadata(meta, edit)
    if not (array_edits or metadata_edits or structure):
        return
    with tempfile.TemporaryDirectory(dir=genuine[kind].parent.parent) as box:
        try:
            path = save_bundle(Path(box) / genuine[kind].stem, arrays, meta)
        except gcsim.GcsimError:  # e.g. an array save_bundle itself refuses
            return
        _load_all(path)
