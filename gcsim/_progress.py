"""One progress helper for every long loop: a bar on a terminal, lines on a pipe, nothing otherwise.

:func:`progress_bar` is what the sweeps, the evaluators, the optimizer and the experiments call.
On a terminal (or in a notebook) it is a tqdm bar on stderr, as before.  When stderr is not a
terminal, it prints nothing unless *lines* are switched on (:func:`progress_lines`; the ``gcsim``
command switches them on, so ``gcsim cerar pareto 2> log`` is not silent for a minute): then it
prints one line on stderr when it starts, at most every ``GCSIM_PROGRESS_SECONDS`` seconds
(default 10) and when it ends::

    gcsim: progress: Pareto N=4 c=8: 2/4 (50%), 31 s elapsed, about 31 s left

Nothing is ever written to stdout.

:class:`StageProgress` is the same mechanism for a loop of named items (the advisor's stages):
a bar on a terminal or in a notebook, lines in the same format on any other stream (whether or
not :func:`progress_lines` is on), the unit after the count::

    gcsim: progress: advise screening: 12/60 candidates (20%), 34 s elapsed, about 2.3 min left

:func:`progress_line` writes every such line: the one progress format of gcsim.  One decision
picks the bar for both: :func:`wants_bar` (the stream is a terminal, or this process is a
Jupyter kernel).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "progress_bar",
    "progress_line",
    "progress_lines",
    "lines_enabled",
    "StageProgress",
    "wants_bar",
    "on_terminal",
    "in_notebook",
]

_LINES = False
#: Seconds between two progress lines (``GCSIM_PROGRESS_SECONDS`` overrides; 0: a line per step).
DEFAULT_INTERVAL = 10.0


def lines_enabled() -> bool:
    """Whether progress lines are printed when stderr is not a terminal."""
    return _LINES


@contextlib.contextmanager
def progress_lines(enabled: bool = True) -> Iterator[None]:
    """Print progress lines on a non-terminal stderr while the block runs (the ``gcsim`` command's mode)."""
    global _LINES
    before = _LINES
    _LINES = bool(enabled)
    try:
        yield
    finally:
        _LINES = before


def _interval() -> float:
    text = os.environ.get("GCSIM_PROGRESS_SECONDS")
    try:
        value = float(text) if text is not None else DEFAULT_INTERVAL
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value >= 0 and value == value else DEFAULT_INTERVAL


def on_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (default: the current ``sys.stderr``) is a terminal; False for a replaced or closed one."""
    try:
        return bool((sys.stderr if stream is None else stream).isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel's (not merely one that imported ipykernel, as nbmake's
    test runner does)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def wants_bar(stream: Any = None) -> bool:
    """The one terminal/notebook decision: a bar on a terminal ``stream`` (default stderr) or in a notebook."""
    return on_terminal(stream) or in_notebook()


def _seconds(x: float) -> str:
    return f"{x:.0f} s" if x < 120 else f"{x / 60:.1f} min"


def progress_line(
    desc: str, done: int, total: int | None, elapsed: float, unit: str = "", *, left: float | None = None
) -> str:
    """The one progress line of gcsim: ``gcsim: progress: <desc>: <done>/<total> [unit] (<pct>%), ...``.

    ``total`` None or 0: ``<done> [unit] done``.  The time left is ``left`` when given (a caller's
    own estimate, :meth:`StageProgress.left`), else estimated from the rate so far once something
    is done and something is left.

    >>> progress_line("advise screening", 12, 60, 34.0, "candidates")
    'gcsim: progress: advise screening: 12/60 candidates (20%), 34 s elapsed, about 2.3 min left'
    >>> progress_line("demo", 3, None, 1.0)
    'gcsim: progress: demo: 3 done, 1 s elapsed'
    >>> progress_line("demo", 4, 4, 9.0, left=30.0)
    'gcsim: progress: demo: 4/4 (100%), 9 s elapsed, about 30 s left'
    """
    unit = f" {unit}" if unit else ""
    if total:
        text = f"{done}/{total}{unit} ({100 * done // total}%), {_seconds(elapsed)} elapsed"
        if left is None and 0 < done < total:
            left = elapsed * (total - done) / done
        if left is not None:
            text += f", about {_seconds(left)} left"
    else:
        text = f"{done}{unit} done, {_seconds(elapsed)} elapsed"
    return f"gcsim: progress: {desc}: {text}"


class _Lines:
    """Progress as lines on stderr: at the start, at most every ``interval`` seconds, at the end."""

    def __init__(self, iterable: Iterable[Any] | None, total: int | None, desc: str, initial: int) -> None:
        self.iterable, self.total, self.desc = iterable, total, desc
        self.n, self.start, self.interval = int(initial), time.monotonic(), _interval()
        self.last = -float("inf")
        self.closed = False
        self._emit(force=True)

    def _emit(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        try:
            sys.stderr.write(progress_line(self.desc, self.n, self.total, now - self.start) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth a crash
            pass

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        self._emit(force=self.total is not None and self.n >= self.total)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.total is None or self.n < self.total:
                self._emit(force=True)

    def __iter__(self) -> Iterator[Any]:
        try:
            for item in () if self.iterable is None else self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Silent:
    """No progress: iterates, counts nothing, prints nothing."""

    def __init__(self, iterable: Iterable[Any] | None) -> None:
        self.iterable = iterable

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        return iter(() if self.iterable is None else self.iterable)

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    enabled: bool = True,
    initial: int = 0,
) -> Any:
    """A progress display over ``iterable`` (or updated by hand with ``update(n)`` / ``close()``).

    ``enabled=False``: nothing.  On a terminal or in a notebook: a tqdm bar on stderr.  Otherwise
    progress lines when :func:`progress_lines` is on (the ``gcsim`` command), else nothing.

    >>> list(progress_bar([1, 2, 3], desc="demo", enabled=False))
    [1, 2, 3]
    """
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if not enabled:
        return _Silent(iterable)
    if _LINES and not wants_bar():
        return _Lines(iterable, total, desc, initial)
    from tqdm.auto import tqdm

    # disable=None: a bar only on a terminal (or a notebook's widget)
    return tqdm(iterable, total=total, initial=initial, desc=desc, leave=False, disable=None)


class StageProgress:
    """Progress over ``total`` items of one stage: a live tqdm bar where :func:`wants_bar`, else lines.

    The lines (on ``stream``, default stderr) are :func:`progress_line`'s, the format of every
    gcsim progress line (``gcsim: progress: <desc>: <done>/<total> <unit> (<pct>%), ...``): one
    when the stage starts, then at most every ``every`` seconds (default ``GCSIM_PROGRESS_SECONDS``,
    10) and always after the last item, so a long stage on a pipe or in a log is never silent.
    While one item takes longer than ``every`` seconds a heartbeat line repeats the count with the
    item named by :meth:`working_on` (``... elapsed (evaluating X)``).  ``enabled=False`` or
    ``total = 0``: nothing.

    ``follow_up`` names work that follows each item's and that the count does not show (the
    scoring of a training run's snapshots after its SGD steps): each piece, run inside
    :meth:`following`, is timed on ``clock``, and the time left (:meth:`left`) is the rate of the
    items without that time plus its measured time per item for the items not yet followed up.

    >>> import io
    >>> out = io.StringIO()
    >>> p = StageProgress(2, "advise screening", "candidates", True, stream=out, every=1e9)
    >>> p.update(); p.update(); p.close()
    >>> print(out.getvalue(), end="")
    gcsim: progress: advise screening: 0/2 candidates (0%), 0 s elapsed
    gcsim: progress: advise screening: 2/2 candidates (100%), 0 s elapsed
    """

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        enabled: bool,
        *,
        stream: Any = None,
        every: float | None = None,
        follow_up: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.desc, self.unit = int(total), desc, unit
        self.every = _interval() if every is None else float(every)
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.clock, self.follow_up = clock, follow_up
        self.followed = 0  # items whose follow-up is done
        self.follow_seconds = 0.0  # the time those follow-ups took
        self._follow_start: float | None = None  # the follow-up in progress began then
        self.start = self.last = clock()
        self.bar: Any = None
        self.lines = False
        self.current = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if enabled and self.total > 0:
            if wants_bar(self.stream):  # a bar (a notebook's widget)
                from tqdm.auto import tqdm

                self.bar = tqdm(total=self.total, desc=desc, unit=f" {unit}", leave=False, file=self.stream)
            else:
                self.lines = True
                self._line()
                if 0 < self.every < 1e6:
                    self._beat = threading.Thread(target=self._heartbeat, daemon=True)
                    self._beat.start()

    def _line(self, current: str = "") -> None:
        with self._lock:
            now = self.clock()
            self.last = now
            left = self.left(now)
            text = progress_line(self.desc, self.done, self.total, now - self.start, self.unit, left=left)
            if left is not None and self.follow_up is not None and not self.followed:
                text += f" + {self.follow_up} (not yet timed)"
            try:
                print(text + (f" ({current})" if current else ""), file=self.stream, flush=True)
            except (OSError, ValueError):  # the stream closed: progress is not worth a crash
                self.lines = False

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.every):
            if self.lines and self.clock() - self.last >= self.every:
                self._line(self.current)

    def left(self, now: float | None = None) -> float | None:
        """Seconds left, estimated (None before the first item, and once every item is done and followed up).

        Without ``follow_up``: ``elapsed (total - done) / done``, the rate so far.  With it: the
        items' rate over the time not spent following up, times the items left, plus the
        follow-up's measured seconds per item times the items not yet followed up, less the time
        into the follow-up in progress.

        >>> t = [0.0]
        >>> p = StageProgress(40, "demo", "steps", False, follow_up="scoring", clock=lambda: t[0])
        >>> t[0] = 10.0
        >>> p.update(10)                     # 10 steps in 10 s
        >>> with p.following(10, "scoring run 1"):
        ...     t[0] = 15.0                  # their scoring: 5 s
        >>> p.left()                         # 30 steps at 1 s and 30 steps' scoring at 0.5 s
        45.0
        """
        now = self.clock() if now is None else now
        if self.follow_up is None:
            return (now - self.start) * (self.total - self.done) / self.done if 0 < self.done < self.total else None
        if self.done <= 0 or self.followed >= self.total:
            return None
        current = 0.0 if self._follow_start is None else now - self._follow_start
        training = max(now - self.start - self.follow_seconds - current, 0.0)
        left = training * (self.total - self.done) / self.done
        if self.followed:
            left += max(self.follow_seconds / self.followed * (self.total - self.followed) - current, 0.0)
        return left

    @contextlib.contextmanager
    def following(self, items: int, label: str) -> Iterator[None]:
        """Run the follow-up of ``items`` counted items, named ``label`` by the heartbeat and timed for :meth:`left`."""
        self.working_on(label)
        self._follow_start = start = self.clock()
        try:
            yield
        finally:
            self.follow_seconds += self.clock() - start
            self.followed += int(items)
            self._follow_start = None

    def working_on(self, label: str) -> None:
        """Name the item in progress (shown by the heartbeat lines and, on a bar, as its postfix)."""
        self.current = label
        if self.bar is not None:
            self.bar.set_postfix_str(label[:40], refresh=True)

    def update(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.done += int(n)
        self.current = ""
        if self.bar is not None:
            self.bar.update(int(n))
        elif self.lines and (self.clock() - self.last >= self.every or self.done >= self.total):
            self._line()

    def step(self) -> None:
        """One item done."""
        self.update(1)

    def close(self) -> None:
        """End the bar or the heartbeat (the last line was written by the last update)."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None
