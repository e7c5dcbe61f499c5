"""BLAS thread policy for batched small-matrix kernels.

OpenBLAS parallelises *inside* one LAPACK call.  gcsim's evaluators call LAPACK on
stacks of thousands of small matrices (``eigh``, ``svd``, ``cholesky`` of 10x10 to
200x200 Gram matrices), where every call is too small to split and the thread
hand-off dominates.  Measured on this project's 2-core machine
(``benchmarks/bench_threads.py``, 2026-12-01): idle, one and two threads are within
0.76-1.37x of each other on these stacks; with one other process busy on a core
(``--busy 1``: a shared node, a laptop, ``pytest -n 2``), two BLAS threads make a stack of
1000 70x70 ``eigh`` 3.1x slower and of 1000 140x70 ``svd`` 3.9x slower, because each call
waits for the thread on the busy core.  Large single GEMMs, on the other hand, gain from
every core (2000x2000: 0.54x the one-thread time, idle).

So the batched kernels run inside :func:`batched_blas`, which limits BLAS to
:func:`batched_threads` threads (default 1) for their duration and restores the
previous setting afterwards; everything else keeps the process's BLAS setting.

Set ``GCSIM_BATCHED_BLAS_THREADS`` to an integer to choose another limit, or to
``none`` to leave BLAS alone (e.g. to measure the difference).

Examples
--------
>>> from gcsim._threads import batched_blas, batched_threads
>>> batched_threads()
1
>>> with batched_blas():
...     pass
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["batched_blas", "batched_threads", "with_batched_blas"]

_ENV = "GCSIM_BATCHED_BLAS_THREADS"
_controller: Any = None
F = TypeVar("F", bound=Callable[..., Any])


def batched_threads() -> int | None:
    """BLAS threads used inside batched small-matrix kernels (``None``: BLAS left alone)."""
    raw = os.environ.get(_ENV, "").strip().lower()
    if not raw:
        return 1
    if raw in ("none", "off", "0"):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{_ENV} must be a positive integer or 'none', got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{_ENV} must be a positive integer or 'none', got {raw!r}")
    return value


def _get_controller() -> Any:
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        # scanning the loaded libraries costs ~5 ms: do it once per process
        _controller = ThreadpoolController()
    return _controller


@contextmanager
def batched_blas() -> Iterator[None]:
    """Limit BLAS to :func:`batched_threads` threads for the duration of the block."""
    limit = batched_threads()
    if limit is None:
        yield
        return
    with _get_controller().limit(limits=limit, user_api="blas"):
        yield


def with_batched_blas(func: F) -> F:
    """Decorator: run ``func`` inside :func:`batched_blas`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with batched_blas():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
