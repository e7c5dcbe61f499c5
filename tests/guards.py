"""Test guards shared by the tests: a deadline that turns a hang into a failure, the argument a refusal names,
a script of the repository imported by path."""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gcsim.errors import InvalidArgumentError

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail with ``TimeoutError`` instead of hanging when the block runs longer than ``seconds``.

    SIGALRM interrupts a blocking ``open()`` of a FIFO, an endless read or a long computation,
    so a regression shows up as a failure, not as a stuck test run (no-op without SIGALRM).
    """
    if not hasattr(signal, "setitimer"):  # pragma: no cover - Windows
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def refused_argument(call, *args, **kwargs) -> str:
    """The ``argument`` field of the :class:`InvalidArgumentError` that ``call(*args, **kwargs)`` raises."""
    with pytest.raises(InvalidArgumentError) as info:
        call(*args, **kwargs)
    return info.value.argument


def load_script(path: str, name: str | None = None, *, register: bool = False) -> ModuleType:
    """A script of this repository (``"scripts/mutation.py"``), imported by path as a fresh module.

    Each call executes the file again, so a test may patch the module it gets. ``name``: the module's
    name (default: the file's stem and ``_script``); ``register`` puts the module in ``sys.modules``
    before it runs (a script that defines dataclasses needs it: they look their module up).
    """
    file = ROOT / path
    spec = importlib.util.spec_from_file_location(name or f"{file.stem}_script", file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
