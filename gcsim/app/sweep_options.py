"""The ``--scheduler`` and ``--workers`` flags of the commands that run sweeps (:mod:`gcsim.sweep`)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import UsageError, int_arg

__all__ = ["add_scheduler_flags", "scheduler_from_args", "SCHEDULER_FLAGS"]

#: API argument -> flag, for error messages (merge into a command's ``flags``)
SCHEDULER_FLAGS = {"scheduler": "--scheduler", "workers": "--workers"}


def _scheduler_arg(text: str) -> str:
    from ..errors import InvalidArgumentError
    from ..sweep import check_scheduler  # on use: `gcsim --help` stays cheap

    try:
        return check_scheduler(text)
    except InvalidArgumentError:
        raise argparse.ArgumentTypeError(
            f"must be serial, local or the address of a Dask scheduler like tcp://host:8786, got {text!r}"
        ) from None


_scheduler_arg.__name__ = "scheduler"


def add_scheduler_flags(p: argparse.ArgumentParser, what: str = "the tasks", workers_flag: str = "--workers") -> None:
    """Add ``--scheduler`` (default ``serial``) and ``workers_flag`` (the local cluster's size) to ``p``.

    A command whose ``--workers`` means something else (``gcsim advise``: the n of the question)
    names the cluster size ``--cluster-workers``; its value is stored as ``cluster_workers``.
    """
    p.add_argument(
        "--scheduler",
        type=_scheduler_arg,
        default="serial",
        help=f"where {what} run: serial (this process), local (a Dask cluster on this machine, "
        "pip install 'gcsim[dask]') or tcp://host:port of a running Dask scheduler; same results on each",
    )
    p.add_argument(
        workers_flag,
        dest=workers_flag.lstrip("-").replace("-", "_"),
        type=int_arg(1),
        default=None,
        help="worker processes of --scheduler local (default: the number of CPUs)",
    )


def scheduler_from_args(args: argparse.Namespace, workers_flag: str = "--workers") -> tuple[Any, int | None]:
    """``(scheduler, workers)`` from the flags; ``workers_flag`` without ``--scheduler local`` is a usage error."""
    workers = getattr(args, workers_flag.lstrip("-").replace("-", "_"))
    if workers is not None and args.scheduler != "local":
        raise UsageError(f"{workers_flag}: applies to --scheduler local only (a running cluster has its own workers)")
    return args.scheduler, workers
