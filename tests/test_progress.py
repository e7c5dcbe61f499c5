"""Progress bars (tqdm.auto): drawn on a terminal, absent when the output is piped, off with progress=False.

Every bar is created with ``disable=None``: tqdm then draws it only when its stream (stderr) is a
terminal, and ``tqdm.auto`` picks the ipywidgets bar in a notebook (tests/test_notebooks.py sees the
widget).  Here stderr is replaced by a stream that says it is, or is not, a terminal.
"""

from __future__ import annotations

import io
import sys

import pytest

import gcsim
from gcsim.coding.evaluate import worst_case_error
from gcsim.coding.verify import verify_bounds
from gcsim.combinatorics.bibd import buildable_bibds

RD = gcsim.encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=0)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def _cerar(progress: bool) -> None:
    pytest.importorskip("cvxpy")
    from gcsim.cerar import design

    design(3, 4, "optimized", kappa=5.0, max_iter=2, progress=progress)


#: (name, call with progress=..., text of the bar)
CALLS = [
    (
        "verify_bounds",
        lambda p: verify_bounds(RD, gcsim.straggler_model("all", 7, s=2), draws=4, progress=p),
        "encoder redraws",
    ),
    (
        "worst_case_error",
        lambda p: worst_case_error(RD, 2, exact_limit=1, restarts=2, iterations=4, progress=p),
        "worst-case search",
    ),
    ("buildable_bibds", lambda p: buildable_bibds(401, k_range=[3], lam_range=[1], progress=p), "buildable BIBDs"),
    ("cerar optimize", _cerar, "CERAR opt N=3 c=4"),
]


@pytest.mark.parametrize("call, desc", [(c, d) for _, c, d in CALLS], ids=[n for n, _, _ in CALLS])
def test_a_bar_only_on_a_terminal(monkeypatch, call, desc):
    for stream, progress, shown in ((Terminal(), True, True), (Pipe(), True, False), (Terminal(), False, False)):
        monkeypatch.setattr(sys, "stderr", stream)
        call(progress)
        monkeypatch.undo()
        assert (desc in stream.getvalue()) == shown, (type(stream).__name__, progress, stream.getvalue())
        if not shown:
            assert stream.getvalue() == ""
