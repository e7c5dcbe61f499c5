"""Test guards shared by the tests: a deadline that turns a hang into a failure, the argument a refusal names."""

from __future__ import annotations

import contextlib
import signal

import pytest

from gcsim.errors import InvalidArgumentError


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
