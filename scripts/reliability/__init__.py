"""Bad inputs and faults tried against gcsim, one file of cases per area.

Each ``cases_<area>.py`` defines ``CASES``, a list of :class:`Case`.  The runner
``scripts/reliability_table.py`` executes every case in a fresh process inside a
throw-away folder, with a time limit, and writes ``docs/reliability.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One bad input or fault.

    Attributes
    ----------
    area : str
        "api", "cli", "files" or "executor".
    fault : str
        What is tried, in a few words (one table row).
    code : str, optional
        Python source run with ``python -c`` in the case's folder (API cases).
        It must *raise* for a refused input; the runner reports the exception's
        type and first message line.  A case that is expected to succeed
        (e.g. a clear warning) prints what it got.
    argv : list of str, optional
        ``gcsim`` arguments (CLI cases), run as ``python -m gcsim *argv``.
    setup : str, optional
        Python source run first in the same folder (to make bad files, FIFOs, ...).
    expect : str
        "error" (a clear error: exception without traceback noise for the CLI,
        exit status 1 or 2), "ok" (runs and prints), or "warning".
    timeout : float
        Seconds before the case counts as a hang.
    """

    area: str
    fault: str
    code: str | None = None
    argv: list[str] = field(default_factory=list)
    setup: str | None = None
    expect: str = "error"
    timeout: float = 60.0
