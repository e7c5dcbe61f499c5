"""Helpers of the convex-optimized encoders (theory §43): the solver call and the SLEM.

cvxpy is imported lazily (``gcsim[optimize]``); every solution is re-verified with NumPy by the
encoders that call :func:`solve`, which never trust the solver's optimal value.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..._optional import require
from ...errors import InvalidArgumentError

__all__ = ["cvxpy", "solve", "slem_symmetric", "slem_circulant", "SOLVERS"]

#: Solvers the encoders accept (open-source ones installed with ``gcsim[optimize]``).
SOLVERS = ("SCS", "CLARABEL")


def cvxpy(what: str) -> Any:
    """Import cvxpy or raise :class:`gcsim.errors.MissingDependencyError` naming ``what``."""
    require("cvxpy", "optimize", what)
    import cvxpy as cp  # lazily: importing cvxpy takes a second

    return cp


def check_solver(value: Any) -> str:
    """The solver name, upper-cased; refused unless one of :data:`SOLVERS`."""
    if not isinstance(value, str) or value.upper() not in SOLVERS:
        raise InvalidArgumentError("solver", f"must be one of {SOLVERS}, got {value!r}")
    return value.upper()


def solve(problem: Any, solver: str) -> str:
    """Solve ``problem`` and return its status (``"error: ..."`` when the solver raised).

    An SCS ``optimal_inaccurate`` is retried once with more iterations and a tighter tolerance.
    """
    try:
        with warnings.catch_warnings():  # cvxpy warns on inaccurate solutions; the caller checks
            warnings.simplefilter("ignore", UserWarning)
            if solver == "SCS":
                problem.solve(solver="SCS", eps=1e-9, max_iters=20000)
                if problem.status == "optimal_inaccurate":
                    problem.solve(solver="SCS", eps=1e-10, max_iters=100000)
            else:
                problem.solve(solver=solver)
    except Exception as exc:  # cvxpy.error.SolverError and numerical failures
        return f"error: {type(exc).__name__}: {exc}"
    return str(problem.status)


def slem_symmetric(P: np.ndarray) -> float:
    """``‖P - J/n‖₂`` of a symmetric ``P`` by ``eigvalsh``: its SLEM when ``P 1 = 1`` (Lemma 43.1).

    Examples
    --------
    >>> C4 = (np.roll(np.eye(4), 1, axis=1) + np.roll(np.eye(4), -1, axis=1)) / 2
    >>> round(slem_symmetric(C4), 12)          # eigenvalues 1, 0, 0, -1: the cycle is bipartite
    1.0
    """
    n = P.shape[0]
    M = P - np.full((n, n), 1.0 / n)
    return float(np.max(np.abs(np.linalg.eigvalsh((M + M.T) / 2))))


def slem_circulant(c: np.ndarray) -> float:
    """``max_{k ≠ 0} |ĉ_k|``, ``ĉ = fft(c)``: the SLEM of the circulant ``C_ij = c_{(j-i) mod n}`` (Lemma 43.1).

    Examples
    --------
    >>> round(slem_circulant(np.array([0.5, 0.5, 0.0, 0.0])), 6)      # |1/2 + i^k/2|, k = 1: 1/√2
    0.707107
    """
    c = np.asarray(c, dtype=float)
    if c.size == 1:
        return 0.0
    return float(np.max(np.abs(np.fft.fft(c)[1:])))
