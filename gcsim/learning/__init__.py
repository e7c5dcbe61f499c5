"""Learning experiments with coded gradients (theory §60).

* :mod:`gcsim.learning.datasets` — scikit-learn digits, MNIST from local IDX/NPZ files;
* :mod:`gcsim.learning.models` — NumPy MLP with batched per-part gradients;
* :mod:`gcsim.learning.train` — SGD/Adam with coded gradients under Bernoulli
  stragglers, optimal or unbiased decoding, communication-aware wall clock;
* :mod:`gcsim.learning.experiments` — the codes compared in theory §60 and their side-by-side runs;
* :mod:`gcsim.learning.unbiased` — empirical unbiasedness check of decoders;
* the ``training`` stage of ``gcsim reproduce`` lives in :mod:`gcsim.app.stages.training`.

Examples
--------
>>> from gcsim.learning import CodeSpec, MLP, load_digits, train
>>> import numpy as np
>>> res = train(CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals"), load_digits(),
...             model=MLP((64, 8, 10)), iterations=5, eval_every=5)
>>> list(res.history.columns)[:4]
['iteration', 'wallclock', 'train_loss', 'train_acc']
"""

from .datasets import Dataset, DatasetFormatError, load_digits, load_mnist, read_idx, write_idx
from .experiments import compare, default_codes
from .models import MLP, cross_entropy, numerical_gradient
from .train import (
    DECODERS,
    SGD,
    Adam,
    CodedGradient,
    CodeSpec,
    TrainResult,
    WallClockModel,
    partition,
    simulate_transmissions,
    train,
)
from .unbiased import UnbiasednessResult, check_unbiased, decoded_samples, unbiasedness_test

__all__ = [
    "Dataset",
    "DatasetFormatError",
    "load_digits",
    "load_mnist",
    "read_idx",
    "write_idx",
    "MLP",
    "cross_entropy",
    "numerical_gradient",
    "DECODERS",
    "SGD",
    "Adam",
    "CodedGradient",
    "CodeSpec",
    "TrainResult",
    "WallClockModel",
    "compare",
    "default_codes",
    "partition",
    "simulate_transmissions",
    "train",
    "UnbiasednessResult",
    "check_unbiased",
    "decoded_samples",
    "unbiasedness_test",
]
