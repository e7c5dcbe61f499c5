"""The ``--scheduler`` and ``--processes`` flags of the commands that run sweeps (:mod:`gcsim.sweep`).

``--processes`` was ``--workers`` (``--cluster-workers`` in ``gcsim advise``) before ``--workers``
came to mean the number of workers n in every command; the old spellings are deprecated aliases.
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import UsageError, int_arg

__all__ = ["add_scheduler_flags", "scheduler_from_args", "SCHEDULER_FLAGS"]

#: API argument -> flag, for error messages (merge into a command's ``flags``)
SCHEDULER_FLAGS = {"scheduler": "--scheduler", "workers": "--processes"}


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


def add_scheduler_flags(p: argparse.ArgumentParser, what: str = "the tasks", old_flag: str | None = None) -> None:
    """Add ``--scheduler`` (default ``serial``) and ``--processes`` (the local cluster's size) to ``p``.

    ``old_flag``: the spelling the command used for ``--processes`` before (``--workers``,
    ``--cluster-workers``), kept as a deprecated alias.
    """
    from .flags import deprecate

    p.add_argument(
        "--scheduler",
        type=_scheduler_arg,
        default="serial",
        help=f"where {what} run: serial (this process), local (a Dask cluster on this machine, "
        "pip install 'gcsim[dask]') or tcp://host:port of a running Dask scheduler; same results on each",
    )
    p.add_argument(
        "--processes",
        dest="processes",
        type=int_arg(1),
        default=None,
        help="worker processes of --scheduler local (default: the number of CPUs)",
    )
    if old_flag is not None:
        deprecate(p, old_flag, "--processes", note="the Dask processes; --workers is the number of workers n")


def scheduler_from_args(args: argparse.Namespace) -> tuple[Any, int | None]:
    """``(scheduler, processes)`` from the flags; ``--processes`` without ``--scheduler local`` is a usage error."""
    processes = args.processes
    if processes is not None and args.scheduler != "local":
        raise UsageError("--processes: applies to --scheduler local only (a running cluster has its own workers)")
    return args.scheduler, processes
