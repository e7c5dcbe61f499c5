"""Files (issue #9 §4): nothing escapes the target folder, nothing hangs, nothing is half-written.

Every refusal is checked against an independent description of the bad input (the bytes
we wrote, ``hashlib``, ``zipfile``), never against gcsim's own reading of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gcsim
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import objects as catalogue
from gcsim.errors import CatalogueError, InvalidArgumentError
from gcsim.io import bundle as cat, manifest as mf

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, /dev/zero, fork and umask are POSIX")


from guards import deadline  # noqa: E402


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def fano_bundle(tmp_path: Path) -> Path:
    """The Fano plane exported into ``tmp_path``; returns its stem."""
    catalogue.export_object(gcsim.bibd(7, 3, 1), tmp_path, name="fano")
    return tmp_path / "bibd" / "fano"


def rewrite_consistently(stem: Path, arrays: dict, metadata: dict | None = None) -> None:
    """Replace a bundle's data *and* fix up its manifest (sha256, size, shapes, dtypes) by hand.

    This is what a forger does: the checksum matches, so only the content checks can refuse it.
    """
    manifest = json.loads(stem.with_suffix(".json").read_text())
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    data = buf.getvalue()
    stem.with_suffix(".npz").write_bytes(data)
    manifest.update(
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        data_file=stem.name + ".npz",
        arrays={k: {"shape": list(np.shape(v)), "dtype": np.asarray(v).dtype.str} for k, v in arrays.items()},
    )
    if metadata is not None:
        manifest["metadata"] = metadata
    stem.with_suffix(".json").write_text(json.dumps(manifest))


# ---------------------------------------------------------------------------
# names: nothing escapes the target folder

ABSOLUTE = "<absolute path in tmp_path>"
BAD_NAMES = ["../../x", "../x", ABSOLUTE, "a/b", "..", ".", ".hidden", "x\x00y", "", "a\\b", "x.json", "y" * 300]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_export_object_refuses_names_that_leave_the_folder(tmp_path, name):
    target = tmp_path / "cat" / "inner"
    if name == ABSOLUTE:
        name = str(tmp_path / "escaped")
    with pytest.raises(InvalidArgumentError, match="name"):
        catalogue.export_object(gcsim.bibd(7, 3, 1), target, name=name)
    # nothing at all was written, in the folder or around it
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


@pytest.mark.parametrize("name", ["../../x", ABSOLUTE, "a\\b", ".x", "x\x00"])
def test_export_design_refuses_names_that_leave_the_folder(tmp_path, name):
    from gcsim.cerar.export import export_design
    from gcsim.cerar.factory import design

    if name == ABSOLUTE:
        name = str(tmp_path / "escaped")
    with pytest.raises(InvalidArgumentError, match="name"):
        export_design(design(3, 5, "perturbation", eps=0.1), tmp_path / "d", name=name)
    assert list(tmp_path.rglob("*")) == []


def test_cli_export_refuses_traversal_names(tmp_path, capsys):
    folder = tmp_path / "a" / "b"
    code = cli_main(["construct", "srg", "10", "3", "0", "1", "--out", str(folder), "--name", "../../../evil"])
    err = capsys.readouterr().err
    assert code == 2 and "name" in err and "Traceback" not in err
    assert list(tmp_path.rglob("*")) == []


def test_export_into_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("not a folder")
    with pytest.raises(InvalidArgumentError, match="directory"):
        catalogue.export_object(gcsim.bibd(7, 3, 1), tmp_path / "f")


def test_export_over_a_directory_is_refused(tmp_path):
    (tmp_path / "bibd" / "fano.json").mkdir(parents=True)
    with pytest.raises(InvalidArgumentError, match="not a regular file"):
        catalogue.export_object(gcsim.bibd(7, 3, 1), tmp_path, name="fano", overwrite=True)
    assert sorted(p.name for p in (tmp_path / "bibd").iterdir()) == ["fano.json"]


# ---------------------------------------------------------------------------
# reading: nothing hangs, nothing explodes


@posix_only
@pytest.mark.parametrize("which", ["npz", "json"])
def test_fifo_is_refused_without_blocking(tmp_path, which):
    stem = fano_bundle(tmp_path)
    f = stem.with_suffix("." + which)
    f.unlink()
    os.mkfifo(f)
    with deadline(10), pytest.raises(CatalogueError, match="FIFO"):
        catalogue.load_object(stem)


@posix_only
@pytest.mark.parametrize("which", ["npz", "json"])
def test_symlink_to_dev_zero_is_refused(tmp_path, which):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    stem = fano_bundle(tmp_path)
    f = stem.with_suffix("." + which)
    f.unlink()
    f.symlink_to("/dev/zero")
    with deadline(10), pytest.raises(CatalogueError, match="character device"):
        catalogue.load_object(stem)


@pytest.mark.parametrize("which", ["npz", "json"])
def test_directory_in_place_of_a_file_is_refused(tmp_path, which):
    stem = fano_bundle(tmp_path)
    f = stem.with_suffix("." + which)
    f.unlink()
    f.mkdir()
    with pytest.raises(CatalogueError, match="directory"):
        catalogue.load_object(stem)


def test_symlink_to_a_regular_bundle_file_is_fine(tmp_path):
    stem = fano_bundle(tmp_path)
    real = tmp_path / "elsewhere.npz"
    stem.with_suffix(".npz").rename(real)
    stem.with_suffix(".npz").symlink_to(real)
    assert catalogue.load_object(stem).params == (7, 7, 3, 3, 1)


def test_oversized_manifest_is_refused_before_parsing(tmp_path, monkeypatch):
    stem = fano_bundle(tmp_path)
    size = stem.with_suffix(".json").stat().st_size
    monkeypatch.setattr(cat, "MAX_MANIFEST_BYTES", size - 1)
    with pytest.raises(CatalogueError, match="over the limit"):
        cat.load_bundle(stem)


def bomb(path: Path, member: str, n: int) -> None:
    """An ``.npz`` whose member ``member`` is an int8 array of ``n`` zeros (compresses ~1000:1)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|i1", "fortran_order": False, "shape": (n,)})
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open(member, "w", force_zip64=True) as fp:
            fp.write(header.getvalue())
            for _ in range(n // len(chunk)):
                fp.write(chunk)


def test_zip_bomb_is_refused_before_decompressing(tmp_path):
    """A small npz that decompresses to 64 MB, with a manifest fixed up to its checksum.

    The loader must refuse it from the zip directory alone: its peak memory stays far
    below the 64 MB the archive would expand to (measured with tracemalloc, which sees
    NumPy's allocations).
    """
    stem = fano_bundle(tmp_path)
    npz = stem.with_suffix(".npz")
    n = 64 << 20
    bomb(npz, "assignment.npy", n)
    data = npz.read_bytes()
    assert len(data) < n // 100  # really a bomb
    with zipfile.ZipFile(npz) as zf:  # independent view of what it expands to
        assert zf.getinfo("assignment.npy").file_size > n
    man = json.loads(stem.with_suffix(".json").read_text())
    man.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    stem.with_suffix(".json").write_text(json.dumps(man))
    tracemalloc.start()
    try:
        with pytest.raises(CatalogueError, match="decompress"):
            catalogue.load_object(stem)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n // 8, f"peak {peak} bytes: the archive was decompressed"


def test_declared_sizes_are_bounded_before_reading(tmp_path):
    stem = fano_bundle(tmp_path)
    # a manifest that declares a 10^12-byte array is refused from the manifest alone
    man = json.loads(stem.with_suffix(".json").read_text())
    man["arrays"]["assignment"]["shape"] = [10**6, 10**6]
    stem.with_suffix(".json").write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="over the limit"):
        cat.load_bundle(stem)
    # and the bound is the caller's: 49 bytes of int8 (7 x 7) are over max_bytes = 48
    stem2 = fano_bundle(tmp_path / "b")
    with pytest.raises(CatalogueError, match="over the limit"):
        cat.load_bundle(stem2, max_bytes=48)
    assert cat.load_bundle(stem2, max_bytes=10_000)[0]["assignment"].shape == (7, 7)
    with pytest.raises(InvalidArgumentError, match="max_bytes"):
        cat.load_bundle(stem2, max_bytes=0)


def test_npy_header_that_differs_from_the_manifest_is_refused_unread(tmp_path):
    """Member sizes agree with the manifest, but the .npy header claims another shape."""
    stem = fano_bundle(tmp_path)
    buf = io.BytesIO()
    np.savez_compressed(buf, assignment=np.zeros(49, dtype=np.int8))  # (49,) instead of (7, 7)
    data = buf.getvalue()
    stem.with_suffix(".npz").write_bytes(data)
    man = json.loads(stem.with_suffix(".json").read_text())
    man.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    stem.with_suffix(".json").write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="shape"):
        cat.load_bundle(stem)


def test_extra_or_duplicate_members_are_refused(tmp_path):
    stem = fano_bundle(tmp_path)
    buf = io.BytesIO()
    A = gcsim.bibd(7, 3, 1).assignment.astype(np.int8)
    np.savez_compressed(buf, assignment=A, extra=np.ones(3))
    data = buf.getvalue()
    stem.with_suffix(".npz").write_bytes(data)
    man = json.loads(stem.with_suffix(".json").read_text())
    man.update(sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    stem.with_suffix(".json").write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="members"):
        cat.load_bundle(stem)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda m: m.update(format_version=True), "version"),  # True == 1 in Python
        (lambda m: m.update(format_version="1"), "version"),
        (lambda m: m.update(arrays=[1, 2]), "arrays"),
        (lambda m: m["arrays"]["assignment"].update(shape="77"), "shape"),
        (lambda m: m["arrays"]["assignment"].update(shape=[7, -7]), "shape"),
        (lambda m: m["arrays"]["assignment"].update(dtype="|O"), "dtype"),
        (lambda m: m["arrays"]["assignment"].update(dtype="no such dtype"), "dtype"),
        (lambda m: m.update(sha256=12), "sha256"),
        (lambda m: m.update(metadata=[1]), "metadata"),
        (lambda m: m.update(size_bytes="776"), "size_bytes"),
        (lambda m: m.update(data_file="../../etc/passwd"), "data_file"),
        (lambda m: m.update(data_file="/etc/passwd"), "data_file"),
    ],
)
def test_manifest_fields_of_the_wrong_type_are_refused(tmp_path, edit, needle):
    stem = fano_bundle(tmp_path)
    man = json.loads(stem.with_suffix(".json").read_text())
    edit(man)
    stem.with_suffix(".json").write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match=needle):
        catalogue.load_object(stem)


@pytest.mark.parametrize("text", ["[1, 2, 3]", '"a string"', "null", "[" * 100_000, '{"a": 1e999999}x', "\xff\xfe"])
def test_manifest_that_is_not_a_json_object_is_refused(tmp_path, text):
    stem = fano_bundle(tmp_path)
    stem.with_suffix(".json").write_bytes(text.encode("latin-1"))
    with pytest.raises(CatalogueError):
        catalogue.load_object(stem)


@posix_only
def test_list_catalogue_skips_fifos_and_junk_without_hanging(tmp_path):
    fano_bundle(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "junk.json").write_text("[1, 2]")
    (tmp_path / "dir.json").mkdir()
    with deadline(10):
        rows = catalogue.list_catalogue(tmp_path)
    assert [r["kind"] for r in rows] == ["bibd"]


# ---------------------------------------------------------------------------
# content: dtypes, exact 0/1 values, declared invariants


def test_bibd_stored_as_float_with_1_7_is_refused(tmp_path):
    """The old loader cast to int first, so 1.7 became 1 and the BIBD loaded as verified."""
    stem = fano_bundle(tmp_path)
    A = gcsim.bibd(7, 3, 1).assignment.astype(np.float64)
    A[A == 1] = 1.7
    rewrite_consistently(stem, {"assignment": A})
    with pytest.raises(CatalogueError, match="dtype"):
        catalogue.load_object(stem)


def test_exact_0_1_floats_are_refused_too(tmp_path):
    stem = fano_bundle(tmp_path)
    rewrite_consistently(stem, {"assignment": gcsim.bibd(7, 3, 1).assignment.astype(np.float64)})
    with pytest.raises(CatalogueError, match="integers"):
        catalogue.load_object(stem)


@pytest.mark.parametrize("value", [2, -1])
def test_integer_entries_other_than_0_1_are_refused(tmp_path, value):
    stem = fano_bundle(tmp_path)
    A = gcsim.bibd(7, 3, 1).assignment.astype(np.int8)
    A[0, np.flatnonzero(A[0])[0]] = value
    rewrite_consistently(stem, {"assignment": A})
    with pytest.raises(CatalogueError):
        catalogue.load_object(stem)


def test_srg_adjacency_as_float_is_refused(tmp_path):
    g = gcsim.srg(10, 3, 0, 1)
    catalogue.export_object(g, tmp_path, name="p")
    stem = tmp_path / "srg" / "p"
    adj = np.asarray(g.adjacency, dtype=np.float32)
    rewrite_consistently(stem, {"adjacency": adj, "assignment": np.asarray(g.assignment, dtype=np.int8)})
    with pytest.raises(CatalogueError, match="dtype"):
        catalogue.load_object(stem)


def test_forged_parameters_cannot_make_the_loader_allocate(tmp_path):
    """A coset manifest claiming k = 10^6 is refused from the array shapes, before building anything."""
    g = gcsim.coset_graph(9, 2, 2, seed=0)
    catalogue.export_object(g, tmp_path, name="c")
    path = tmp_path / "coset" / "c.json"
    man = json.loads(path.read_text())
    man["metadata"]["params"] = [10**6, 2, 2]
    path.write_text(json.dumps(man))
    tracemalloc.start()
    try:
        with pytest.raises(CatalogueError, match="shape"):
            catalogue.load_object(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20


def test_biregular_seed_claim_is_rederived(tmp_path):
    g = gcsim.biregular_graph(12, 6, 2, 4, seed=3)
    catalogue.export_object(g, tmp_path, name="g")
    path = tmp_path / "biregular" / "g.json"
    assert catalogue.load_object(path).seed == 3
    other = gcsim.biregular_graph(12, 6, 2, 4, seed=4)
    assert not np.array_equal(other.assignment, g.assignment)  # the claim is a real claim
    man = json.loads(path.read_text())
    good = json.loads(json.dumps(man))
    # claim seed 4 everywhere (seed field and construction text): the matrix is seed 3's
    man["metadata"]["seed"] = 4
    man["metadata"]["construction"] = man["metadata"]["construction"].replace("seed=3", "seed=4")
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="seed"):
        catalogue.load_object(path)
    # a seed field that contradicts the construction text is refused as well
    good["metadata"]["seed"] = 4
    path.write_text(json.dumps(good))
    with pytest.raises(CatalogueError, match="seed"):
        catalogue.load_object(path)


def test_coset_seed_and_interval_claims_are_rederived(tmp_path):
    g = gcsim.coset_graph(9, 2, 2, seed=0)
    catalogue.export_object(g, tmp_path, name="c")
    path = tmp_path / "coset" / "c.json"
    assert catalogue.load_object(path).connection_sets == g.connection_sets
    other = gcsim.coset_graph(9, 2, 2, seed=5)
    assert other.connection_sets != g.connection_sets
    man = json.loads(path.read_text())
    md = man["metadata"]
    md["construction"] = md["construction"].replace("seed=0", "seed=5")
    md["seed"] = 5
    md["object_metadata"] = {"seed": 5}
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="seed claim"):
        catalogue.load_object(path)
    # a file that claims interval connection sets must store the intervals
    md["construction"] = "coset graph over Z_9, interval connection sets"
    md["seed"] = None
    md["object_metadata"] = {"seed": None}
    path.write_text(json.dumps(man))
    with pytest.raises(CatalogueError, match="interval"):
        catalogue.load_object(path)
    catalogue.export_object(gcsim.coset_graph(9, 2, 2, connection_sets="intervals"), tmp_path, name="iv")
    assert catalogue.load_object(tmp_path / "coset" / "iv").params == (9, 2, 2)


def test_cerar_arrays_must_be_finite_floats(tmp_path):
    from gcsim.cerar.export import export_design, load_design
    from gcsim.cerar.factory import design

    d = design(3, 5, "perturbation", eps=0.1)
    export_design(d, tmp_path, "d")
    rewrite_consistently(tmp_path / "d", {"encoders": d.encoders.astype(np.complex128), "decoders": d.decoders})
    with pytest.raises(CatalogueError, match="dtype"):
        load_design(tmp_path / "d")


# ---------------------------------------------------------------------------
# permissions


@posix_only
@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path, mask):
    with umask(mask):
        json_path = catalogue.export_object(gcsim.bibd(7, 3, 1), tmp_path, name="fano")
        text = mf.atomic_write_text(tmp_path / "t.txt", "x")
        with mf.atomic_path(tmp_path / "p.csv") as tmp:
            tmp.write_text("a\n")
    expected = 0o666 & ~mask  # what open(path, "w") gives
    for p in (json_path, json_path.with_suffix(".npz"), text, tmp_path / "p.csv"):
        assert stat.S_IMODE(os.stat(p).st_mode) == expected, p


# ---------------------------------------------------------------------------
# writing: a reader sees the old bundle or the new one

OLD = {"A": np.arange(12, dtype=np.int64).reshape(3, 4)}
NEW = {"A": -np.arange(20, dtype=np.int64).reshape(4, 5), "B": np.ones(3)}


def _which(stem: Path) -> str:
    """ "old", "new" or "none" (no bundle yet); any other state fails the test."""
    try:
        arrays, man = cat.load_bundle(stem)
    except CatalogueError as exc:
        if "not found" in str(exc) and "manifest" in str(exc):
            return "none"
        raise
    for label, ref in (("old", OLD), ("new", NEW)):
        if set(arrays) == set(ref) and all(np.array_equal(arrays[k], ref[k]) for k in ref):
            assert man["metadata"]["label"] == label
            return label
    raise AssertionError(f"mixed bundle: {sorted(arrays)}")


def _kill_at(k: int, stem: Path, overwrite: bool) -> bool:
    """Fork a writer of NEW that SIGKILLs itself at its k-th file-system call; True if it was killed."""
    pid = os.fork()
    if pid == 0:  # child: no cleanup of any kind may run, exactly like kill -9
        code = 0
        try:
            count = [0]

            def hook(real):
                def wrapper(*args, **kwargs):
                    count[0] += 1
                    if count[0] == k:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return real(*args, **kwargs)

                return wrapper

            for name in ("open", "replace", "unlink", "fsync", "rename", "mkdir"):
                setattr(os, name, hook(getattr(os, name)))
            cat.save_bundle(stem, NEW, {"label": "new"}, overwrite=overwrite)
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        assert os.WEXITSTATUS(status) == 0, "the writer failed without being killed"
        return False
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return True


@pytest.fixture
def quick_provenance(monkeypatch):
    """Provenance runs git twice per write; atomicity tests write hundreds of bundles."""
    monkeypatch.setattr(cat, "provenance", lambda: {"gcsim_version": gcsim.__version__})


@posix_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("first_write", [False, True])
def test_writer_killed_at_every_step_leaves_old_or_new(tmp_path, first_write, quick_provenance):
    seen = set()
    k = 1
    while True:
        folder = tmp_path / f"k{k}"
        stem = folder / "b"
        if not first_write:
            cat.save_bundle(stem, OLD, {"label": "old"})
        killed = _kill_at(k, stem, overwrite=True)
        state = _which(stem)
        seen.add(state)
        # the next writer cleans up whatever was left and succeeds
        cat.save_bundle(stem, NEW, {"label": "new"}, overwrite=True)
        assert _which(stem) == "new"
        assert sorted(p.name for p in folder.iterdir()) == ["b.json", "b.npz"]
        if not killed:
            break
        k += 1
        assert k < 200
    assert k > 5  # the protocol really has several steps to be killed at
    assert seen == ({"none", "new"} if first_write else {"old", "new"})


@pytest.mark.parametrize("fail_at", range(1, 7))
def test_failed_rename_at_each_step_leaves_old_or_new(tmp_path, monkeypatch, fail_at, quick_provenance):
    stem = tmp_path / "b"
    cat.save_bundle(stem, OLD, {"label": "old"})
    calls = [0]
    real = os.replace

    def flaky(src, dst):
        calls[0] += 1
        if calls[0] == fail_at:
            raise OSError("disk full")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    try:
        cat.save_bundle(stem, NEW, {"label": "new"}, overwrite=True)
    except OSError:
        pass
    monkeypatch.undo()
    assert _which(stem) in ("old", "new")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


_WRITER = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[2])
from gcsim.io import bundle as cat
OLD = {"A": np.arange(12, dtype=np.int64).reshape(3, 4)}
NEW = {"A": -np.arange(20, dtype=np.int64).reshape(4, 5), "B": np.ones(3)}
print("ready", flush=True)
i = 0
while True:
    label = "new" if i % 2 == 0 else "old"
    cat.save_bundle(sys.argv[1], NEW if label == "new" else OLD, {"label": label}, overwrite=True)
    i += 1
"""


@posix_only
def test_writer_process_killed_at_random_times(tmp_path, repo_root):
    """A real process overwriting the bundle in a loop, killed with SIGKILL at random instants."""
    rng = random.Random(9)
    stem = tmp_path / "b"
    cat.save_bundle(stem, OLD, {"label": "old"})
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(stem), str(repo_root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.05, 0.4))
        finally:
            proc.kill()
            proc.wait(30)
            proc.stdout.close()
            proc.stderr.close()
        assert _which(stem) in ("old", "new")


def test_reader_during_concurrent_writes_sees_old_or_new(tmp_path, quick_provenance):
    stem = tmp_path / "b"
    cat.save_bundle(stem, OLD, {"label": "old"})
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        try:
            while not stop.is_set():
                label = "new" if i % 2 == 0 else "old"
                cat.save_bundle(stem, NEW if label == "new" else OLD, {"label": label}, overwrite=True)
                i += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    try:
        states = [_which(stem) for _ in range(60)]
    finally:
        stop.set()
        t.join(60)
    assert not errors
    assert set(states) <= {"old", "new"}


def test_content_addressed_data_file_name_loads(tmp_path):
    """While a write is in flight the manifest names <stem>.<sha16>.npz; that name loads too."""
    stem = tmp_path / "b"
    cat.save_bundle(stem, OLD, {"label": "old"})
    data = stem.with_suffix(".npz").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    staged = tmp_path / f"b.{sha[:16]}.npz"
    staged.write_bytes(data)
    man = json.loads(stem.with_suffix(".json").read_text())
    man["data_file"] = staged.name
    stem.with_suffix(".json").write_text(json.dumps(man))
    stem.with_suffix(".npz").write_bytes(b"stale")
    assert _which(stem) == "old"
    assert _which(staged) == "old"  # the data file's own name resolves to its bundle


def test_renamed_bundle_still_loads(tmp_path):
    stem = fano_bundle(tmp_path)
    for ext in (".npz", ".json"):
        stem.with_suffix(ext).rename(tmp_path / ("renamed" + ext))
    assert catalogue.load_object(tmp_path / "renamed").params == (7, 7, 3, 3, 1)


def test_atomic_write_refuses_to_replace_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        mf.atomic_write_bytes(tmp_path / "d", b"x")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_atomic_path_removes_the_temporary_file_on_error(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with mf.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


# ---------------------------------------------------------------------------
# the CLI answers one line, no traceback


@posix_only
def test_cli_load_refuses_fifo_quickly(tmp_path, capsys):
    stem = fano_bundle(tmp_path)
    stem.with_suffix(".npz").unlink()
    os.mkfifo(stem.with_suffix(".npz"))
    with deadline(20):
        code = cli_main(["load", str(stem)])
    out = capsys.readouterr()
    assert code == 1 and "FIFO" in out.out + out.err and "Traceback" not in out.err


@posix_only
def test_folder_below_a_file_is_refused_before_writing(tmp_path):
    """``/dev/null/x`` (or any path below a regular file) is a bad folder argument, not an OSError traceback."""
    from gcsim.app.reproduce import run_reproduce

    (tmp_path / "f").write_text("x")
    for folder in (tmp_path / "f" / "x", Path("/dev/null/x")):
        with pytest.raises(InvalidArgumentError, match="directory"):
            catalogue.export_object(gcsim.bibd(7, 3, 1), folder)
        with pytest.raises(InvalidArgumentError, match="out"):
            run_reproduce(folder, stages=["catalogue"], progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["f"]
