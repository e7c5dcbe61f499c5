"""Gradient-coded training jobs on the learning data sets: the models and the job of ``gcsim train --code``.

:class:`gcsim.executor.coded_training.CodedTrainer` trains any torch model; this module supplies the
ones ``gcsim train --code DIR`` and ``examples/train_coded.py`` use -- a small CNN for 28 x 28
images (:func:`small_cnn`, 117,858 parameters) and an MLP -- the data set as a torch
``TensorDataset`` (:func:`torch_dataset`), and :func:`coded_job`, the function every rank runs
(under :func:`gcsim.executor.launch` or ``torchrun``).  torch is imported when a function is called.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from .._optional import require
from .._validation import check_bool
from ..errors import InvalidArgumentError
from ..executor.coded_training import CodedStep, CodedTrainer
from .datasets import Dataset, load_dataset

__all__ = ["MODELS", "OPTIMIZERS", "DIED_EXIT", "small_cnn", "mlp", "torch_dataset", "build_model", "coded_job"]

#: ``--model`` of ``gcsim train --code``.
MODELS = ("cnn", "mlp")
#: ``--optimizer``.
OPTIMIZERS = ("sgd", "adam")
#: Exit status of a rank :func:`coded_job` kills on purpose (``die``).
DIED_EXIT = 17


def small_cnn() -> Any:
    """conv 1->16 (5x5), 2x2 max-pool, conv 16->32 (5x5), 2x2 max-pool, 512 -> 200 -> 10 (ReLU): 117,858 parameters.

    Input ``(batch, 1, 28, 28)``.

    Examples
    --------
    >>> sum(p.numel() for p in small_cnn().parameters())
    117858
    """
    torch = require("torch", "torch", "gcsim.learning.coded_training.small_cnn")
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(512, 200),
        nn.ReLU(),
        nn.Linear(200, 10),
    )


def mlp(features: int, hidden: int = 128, classes: int = 10) -> Any:
    """``features -> hidden -> classes`` with a ReLU (the MLP of ``gcsim train``).

    >>> sum(p.numel() for p in mlp(64).parameters())
    9610
    """
    torch = require("torch", "torch", "gcsim.learning.coded_training.mlp")
    return torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes))


def torch_dataset(data: Dataset, *, images: bool) -> Any:
    """The training split as a ``TensorDataset`` of float32 inputs (``(1, 28, 28)`` images when ``images``) and labels.

    Raises
    ------
    InvalidArgumentError
        ``images`` for a data set whose examples are not 784 pixels (the CNN needs 28 x 28 images).
    """
    images = check_bool("images", images)
    torch = require("torch", "torch", "gcsim.learning.coded_training.torch_dataset")
    x = torch.as_tensor(data.x_train, dtype=torch.float32)
    if images:
        if x.shape[1] != 784:
            raise InvalidArgumentError(
                "model", f"cnn needs 28 x 28 images; {data.name} has {x.shape[1]} features (use the mlp)"
            )
        x = x.reshape(-1, 1, 28, 28)
    return torch.utils.data.TensorDataset(x, torch.as_tensor(data.y_train, dtype=torch.long))


def build_model(name: str, data: Dataset) -> Any:
    """``"cnn"`` (:func:`small_cnn`) or ``"mlp"`` (:func:`mlp` over the data set's features)."""
    if name not in MODELS:
        raise InvalidArgumentError("model", f"must be one of {MODELS}, got {name!r}")
    return small_cnn() if name == "cnn" else mlp(int(data.x_train.shape[1]), classes=int(data.n_classes))


def _optimizer(name: str, params: Any, lr: float) -> Any:
    import torch

    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise InvalidArgumentError("optimizer", f"must be one of {OPTIMIZERS}, got {name!r}")


def coded_job(rank: int, world_size: int, spec: dict[str, Any]) -> dict[str, Any]:
    """One rank of ``gcsim train --code``: data, model, optimizer, :class:`CodedTrainer`, train; the report.

    ``spec``: ``code`` (path), ``dataset`` (``"mnist"`` or ``"digits"``), ``max_train``, ``model``,
    ``optimizer``, ``lr``, ``batch_size``, ``iterations``, ``stragglers`` (a straggler model, or
    None with ``deadline``), ``deadline``, ``seed``, ``collective``, ``log_every``, ``print_every``
    (rank 0 prints ``step  t  loss  err(F)/(mN)  rel. error`` every that many steps; 0: never),
    ``die`` and ``die_step`` (fault injection, ``gcsim gc run --workers-die``: the ranks listed exit
    with status :data:`DIED_EXIT` after step ``die_step``, without reporting; the others' next
    collective fails and the launch ends with an error naming them).  ``code`` is a path or the code
    itself (a scheme or decoder table, sent with the spec).
    Returns the report's :meth:`~gcsim.executor.coded_training.CodedTrainingReport.to_dict` (the
    test accuracy of the final model added as ``test_acc``).
    """
    import torch

    torch.set_num_threads(1)
    data = load_dataset(spec.get("dataset", "mnist"), seed=int(spec.get("seed", 0)))
    if spec.get("max_train") is not None:
        keep = int(spec["max_train"])
        data = Dataset(
            data.x_train[:keep], data.y_train[:keep], data.x_test, data.y_test, data.name, data.n_classes, data.info
        )
    torch.manual_seed(int(spec.get("seed", 0)))
    name = spec.get("model", "cnn")
    model = build_model(name, data)
    opt = _optimizer(spec.get("optimizer", "sgd"), model.parameters(), float(spec.get("lr", 0.05)))
    trainer = CodedTrainer(
        spec["code"],
        model,
        opt,
        torch_dataset(data, images=name == "cnn"),
        batch_size=int(spec.get("batch_size", 8)),
        seed=int(spec.get("seed", 0)),
        collective=spec.get("collective", "all-gather"),
    )
    every = int(spec.get("print_every", 0))
    dies = rank in spec.get("die", ())
    die_step = int(spec.get("die_step", 0))

    def show(rec: CodedStep) -> None:
        if dies and rec.step == die_step:
            sys.stdout.flush()
            os._exit(DIED_EXIT)  # a process that dies: no report, no clean-up (the launcher sees it)
        if rank == 0 and every and rec.step % every == 0:
            rel = "" if math.isnan(rec.rel_error) else f"{rec.rel_error:.3e}"
            loss = "" if math.isnan(rec.loss) else f"{rec.loss:.4f}"
            print(
                f"step {rec.step:5d}  stragglers {len(rec.stragglers):2d}  loss {loss:>8}  "
                f"err(F)/(mN) {rec.opt_error:.4f}  rel. error {rel:>9}  ({rec.source})",
                flush=True,
            )

    report = trainer.train(
        int(spec["iterations"]),
        spec.get("stragglers"),
        seed=int(spec.get("seed", 0)),
        deadline=spec.get("deadline"),
        log_every=int(spec.get("log_every", 1)),
        callback=show,
    )
    x = torch.as_tensor(data.x_test, dtype=torch.float32)
    if name == "cnn":
        x = x.reshape(-1, 1, 28, 28)
    with torch.no_grad():
        model.eval()
        acc = float((model(x).argmax(1).numpy() == data.y_test).mean())
    return {"rank": rank, **report.to_dict(), "test_acc": acc, "summary": report.summary(), "d": trainer.d}
