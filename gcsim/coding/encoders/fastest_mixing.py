r"""The fastest-mixing transition matrix as an encoder (theory §43.3; Boyd, Diaconis & Xiao 2004).

On a symmetric square assignment ``A`` (a graph's ``Adj + I``, or a regular graph's ``Adj``) the
encoder is the symmetric stochastic ``P >= 0`` supported on ``A`` that minimizes

.. math:: \mathrm{SLEM}(P) = \|P - J/n\|_2 = \max(\lambda_2(P), -\lambda_n(P)),

the fastest mixing Markov chain of Boyd, Diaconis & Xiao (SIAM Review 46, 2004), a semidefinite
program solved with cvxpy (SCS by default).  The solver's matrix is projected back onto the feasible
set exactly (symmetrized, clipped, row sums restored) and its SLEM recomputed with NumPy; it is
kept only when it beats the feasible reference chain (the max-degree chain, or ``A/r`` for a regular
``A`` without loops), so it never loses to that chain.  With the reference decoder ``1_n`` rescaled
by ``n/|F|`` every pattern's error is at most ``SLEM² n s / (n - s)`` (Corollary 43.3).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import limits
from ...errors import InvalidArgumentError, VerificationError
from ._cvx import check_solver, cvxpy, slem_symmetric, solve
from ._registry import Encoder

__all__ = ["reference_chain", "fastest_mixing_chain"]

_U = np.finfo(float).eps


def _check_graph(A: np.ndarray) -> np.ndarray:
    if A.shape[0] != A.shape[1] or not np.array_equal(A, A.T):
        raise InvalidArgumentError(
            "assignment", f"fastest-mixing needs a symmetric square assignment (a graph), got shape {A.shape}"
        )
    limits.check_work("assignment", A.shape[0], "the fastest-mixing SDP", limit_name="MAX_SDP_WORKERS", unit="workers")
    return A


def reference_chain(A: Any) -> np.ndarray:
    r"""A feasible chain on ``A``: the max-degree chain when every loop is allowed, else ``A/r``.

    With every ``A_ii = 1`` and ``Δ`` the largest number of off-diagonal neighbours,
    ``P = (A - I)/Δ + \mathrm{diag}(1 - \deg_i/Δ)``; without loops ``A`` must be regular and
    ``P = A/r``.  Otherwise no symmetric stochastic matrix need exist on ``A`` (the path on three
    vertices without loops has none) and the assignment is refused.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]])            # a path with loops
    >>> reference_chain(A).tolist()
    [[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]
    """
    A = _check_graph(np.asarray(A))
    n = A.shape[0]
    off = A.astype(float)
    np.fill_diagonal(off, 0.0)
    if np.all(np.diag(A) == 1):
        deg = off.sum(axis=1)
        top = deg.max()
        if top == 0:
            return np.eye(n)
        P = off / top
        P[np.arange(n), np.arange(n)] = 1.0 - deg / top
        return P
    r = A.sum(axis=1)
    if np.any(np.diag(A) == 1) or r.min() != r.max():
        raise InvalidArgumentError(
            "assignment",
            "fastest-mixing needs every loop A_ii = 1, or a regular assignment without loops "
            "(otherwise a symmetric stochastic matrix on A need not exist)",
        )
    return A / float(r[0])


def _restore(Q: np.ndarray, A: np.ndarray) -> np.ndarray | None:
    """A symmetric, non-negative matrix on ``A`` with unit row sums near ``Q``, or None."""
    n = A.shape[0]
    Q = (Q + Q.T) / 2
    Q = np.where(A == 1, np.clip(Q, 0.0, None), 0.0)
    if np.all(np.diag(A) == 1):
        off = Q.copy()
        np.fill_diagonal(off, 0.0)
        top = off.sum(axis=1).max()
        if top > 1:
            off /= top
        off = (off + off.T) / 2
        off[np.arange(n), np.arange(n)] = 1.0 - off.sum(axis=1)
        return off
    # no loops: symmetric Sinkhorn scaling D Q D (converges for a regular support, Q > 0 on it)
    if np.any(Q.sum(axis=1) <= 0):
        return None
    for _ in range(2000):
        r = Q.sum(axis=1)
        if np.max(np.abs(r - 1.0)) <= 4 * n * _U:
            return Q
        d = 1.0 / np.sqrt(r)
        Q = d[:, None] * Q * d[None, :]
        Q = (Q + Q.T) / 2
    return None


def fastest_mixing_chain(A: Any, *, solver: str = "SCS") -> tuple[np.ndarray, float, str]:
    r"""The symmetric stochastic ``P`` on ``A`` of least SLEM (Theorem 43.4), re-verified with NumPy.

    Solves ``min t`` subject to ``-t I ⪯ P - J/n ⪯ t I``, ``P = Pᵀ >= 0``, ``P 1 = 1``, ``P_ij = 0``
    off ``A``.  The solver's ``P`` is repaired (:func:`reference_chain` explains the feasible set)
    and kept only when its NumPy SLEM is a relative ``1e-12`` below the reference chain's.

    Returns
    -------
    P : numpy.ndarray (n, n)
        Symmetric (bit for bit), non-negative, supported on ``A``, rows summing to 1 within ``8 n u``.
    slem : float
        ``‖P - J/n‖₂`` by ``numpy.linalg.eigvalsh``.
    status : str
        The solver's status, or ``"reference"`` when the reference chain was kept.

    Examples
    --------
    >>> C5 = np.roll(np.eye(5, dtype=int), 1, axis=1) + np.roll(np.eye(5, dtype=int), -1, axis=1)
    >>> P, slem, status = fastest_mixing_chain(C5 + np.eye(5, dtype=int))
    >>> round(slem, 4), status        # 2/5 on every edge: 1/√5, where the max-degree chain has 0.8090
    (0.4472, 'optimal')
    """
    A = _check_graph(np.asarray(A))
    solver = check_solver(solver)
    n = A.shape[0]
    best = reference_chain(A)
    best_slem, status = slem_symmetric(best), "reference"
    if n <= 2:
        return best, best_slem, status
    cp = cvxpy("the fastest-mixing encoder")
    P = cp.Variable((n, n), symmetric=True)
    M = P - np.full((n, n), 1.0 / n)
    t = cp.Variable()
    constraints = [
        cp.multiply(P, 1 - A) == 0,
        P >= 0,
        cp.sum(P, axis=1) == 1,
        M << t * np.eye(n),
        M >> -t * np.eye(n),
    ]
    solved = solve(cp.Problem(cp.Minimize(t), constraints), solver)
    if P.value is not None and np.all(np.isfinite(P.value)):
        cand = _restore(np.asarray(P.value, dtype=float), A)
        if cand is not None:
            cand_slem = slem_symmetric(cand)
            if cand_slem < best_slem * (1 - 1e-12):
                best, best_slem, status = cand, cand_slem, solved
    return best, best_slem, status


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``B = P*`` of :func:`fastest_mixing_chain`; reference decoder ``X_0 = 1_n``."""
    if m != 1:
        raise InvalidArgumentError("m", f"fastest-mixing is an m = 1 code, got m = {m}")
    if eps:
        raise InvalidArgumentError("eps", "fastest-mixing draws nothing; eps must be 0")
    solver = check_solver(opts.pop("solver", "SCS"))
    P, slem, status = fastest_mixing_chain(A, solver=solver)
    return P, np.ones((A.shape[1], 1)), None, {"solver": solver, "slem": slem, "solver_status": status}, {}


def verify(scheme: Any, name: str) -> None:
    """``m = 1``, ``B`` symmetric bit for bit, non-negative, every row summing to 1 (to ``8 n u``)."""
    B = scheme.B
    n = scheme.n
    if scheme.m != 1 or B.shape != (n, n):
        raise VerificationError(f"{name}: B must be square with m = 1")
    if not np.array_equal(B, B.T):
        raise VerificationError(f"{name}: B is not symmetric")
    if np.any(B < 0):
        raise VerificationError(f"{name}: B has negative entries")
    if np.max(np.abs(B.sum(axis=1) - 1.0)) > 4 * n * _U:
        raise VerificationError(f"{name}: the rows of B do not sum to 1")


def applies(A: np.ndarray, m: int) -> str | None:
    """Why the advisor should not try it: ``m > 1``, not a graph, or more than 40 workers (an SDP)."""
    if m != 1:
        return "an m = 1 code"
    if A.shape[0] != A.shape[1] or not np.array_equal(A, A.T):
        return "needs a symmetric square assignment (a graph)"
    if A.shape[0] > 40:
        return "the semidefinite program is tried only up to 40 workers"
    return None


def _example() -> tuple[Any, int, dict[str, Any]]:
    C6 = np.roll(np.eye(6, dtype=np.int64), 1, axis=1) + np.roll(np.eye(6, dtype=np.int64), -1, axis=1)
    return C6 + np.eye(6, dtype=np.int64), 1, {}


ENCODERS = (
    Encoder(
        "fastest-mixing",
        build,
        "fastest mixing symmetric stochastic B on a graph assignment (Boyd-Diaconis-Xiao SDP, cvxpy; m = 1)",
        theory="§43.3",
        randomized=False,
        options=("solver",),
        verify=verify,
        applies=applies,
        advisor=None,
        m1_only=True,
        bounds=("spectral_decoder_upper",),
        example=_example,
        order=121,
    ),
)
