r"""The SLEM-optimized circulant encoder (theory §43.2; Munim & Ramamoorthy's CVX_AGC).

On a circulant assignment ``A_ij = [(j - i) mod n ∈ S]`` (``N = n``; worker ``j`` holds the parts
``j - t`` for ``t ∈ S``) the encoder is the circulant ``B_ij = c_{(j-i) mod n}`` with ``c >= 0``,
``Σ c = 1``, ``c`` zero off ``S``, that minimizes the second-largest eigenvalue modulus

.. math:: \mathrm{SLEM}(c) = \max_{1 \le k < n} \Big|\sum_{t \in S} c_t\, \omega^{tk}\Big|,
          \qquad \omega = e^{2\pi i/n},

a second-order cone program (Theorem 43.2) solved with cvxpy (SCS by default) and re-verified with
NumPy's FFT.  ``B`` is doubly stochastic and normal, so with the reference decoder ``1_n`` rescaled
by ``n/|F|`` every pattern's error is at most ``SLEM² n s / (n - s)`` (Corollary 43.3, the
``spectral_decoder_upper`` bound of §46.1).  :func:`best_circulant` repeats the authors' search
over random supports of size ``d``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import limits
from ..._validation import check_int
from ...errors import InvalidArgumentError, VerificationError
from ._common import short
from ._cvx import check_solver, cvxpy, slem_circulant, solve
from ._registry import Encoder

__all__ = ["circulant_assignment", "circulant_support", "optimize_circulant", "best_circulant"]


def circulant_assignment(n: int, support: Any) -> np.ndarray:
    """The circulant assignment ``A_ij = [(j - i) mod n ∈ support]`` (``n x n``, ``|support|``-regular).

    Examples
    --------
    >>> circulant_assignment(4, [0, 1]).tolist()
    [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]]
    """
    n = check_int("n", n, minimum=1)
    limits.check_entries("n", (n, n), "the circulant assignment (n x n)")
    S = _support(support, n)
    offsets = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    return np.isin(offsets, S).astype(np.int64)


def _support(support: Any, n: int) -> np.ndarray:
    try:
        S = np.asarray(support)
    except Exception:  # pragma: no cover - exotic inputs
        S = np.asarray([], dtype=object)
    if S.ndim != 1 or S.size == 0 or S.dtype.kind not in "iu":
        raise InvalidArgumentError("support", f"must be a non-empty 1-D list of integers, got {support!r}")
    if S.min() < 0 or S.max() >= n or np.unique(S).size != S.size:
        raise InvalidArgumentError("support", f"must hold distinct offsets in 0..{n - 1}, got {short(S)}")
    return np.sort(S.astype(np.int64))


def circulant_support(A: np.ndarray) -> np.ndarray | None:
    """The offsets ``S`` when ``A`` is the circulant assignment of ``S``, else None.

    Examples
    --------
    >>> circulant_support(circulant_assignment(5, [0, 2])).tolist()
    [0, 2]
    >>> circulant_support(np.ones((2, 3), dtype=int)) is None
    True
    """
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        return None
    S = np.flatnonzero(A[0])
    if S.size == 0 or not np.array_equal(A, circulant_assignment(A.shape[0], S)):
        return None
    return S


def optimize_circulant(n: int, support: Any, *, solver: str = "SCS") -> tuple[np.ndarray, float, str]:
    r"""The weights ``c`` on ``support`` minimizing the SLEM of the circulant they define (Theorem 43.2).

    Solves ``min t`` subject to ``‖(Re λ_k, Im λ_k)‖₂ <= t`` for ``k = 1..⌊n/2⌋``, ``λ_k = Σ_t c_t
    ω^{tk}``, ``c >= 0``, ``Σ c = 1`` (the other ``k`` are conjugates).  The solver's ``c`` is
    projected back onto the feasible set (negative entries clipped, renormalized) and its SLEM is
    recomputed with NumPy's FFT; when that is not below the uniform weights' ``1/|S|`` on ``S`` (a
    feasible point), the uniform weights are returned instead, so the result never loses to them.

    Returns
    -------
    c : numpy.ndarray (n,)
        The weights, zero off ``support``, non-negative, summing to 1.
    slem : float
        ``max_{k ≠ 0} |fft(c)_k|`` computed by NumPy (never the solver's value).
    status : str
        The solver's status, or ``"uniform"`` when the uniform weights were kept.

    Examples
    --------
    >>> c, slem, status = optimize_circulant(7, [0, 1, 3])       # a perfect difference set mod 7
    >>> round(slem, 4), status                                   # uniform weights are optimal: √2/3
    (0.4714, 'uniform')
    """
    n = check_int("n", n, minimum=1)
    S = _support(support, n)
    solver = check_solver(solver)
    limits.check_work("n", n, "the SLEM program", limit_name="MAX_SDP_WORKERS", unit="workers")
    uniform = np.zeros(n)
    uniform[S] = 1.0 / S.size
    best, best_slem, status = uniform, slem_circulant(uniform), "uniform"
    if S.size == 1 or n <= 2:
        return best, best_slem, status
    cp = cvxpy("the slem-circulant encoder")
    k = np.arange(1, n // 2 + 1)
    angle = 2 * np.pi * np.outer(k, S) / n
    c = cp.Variable(S.size, nonneg=True)
    t = cp.Variable()
    eig = cp.vstack([np.cos(angle) @ c, np.sin(angle) @ c])  # (2, n//2): Re and Im of λ_k
    problem = cp.Problem(cp.Minimize(t), [cp.sum(c) == 1, cp.norm(eig, 2, axis=0) <= t])
    solved = solve(problem, solver)
    if c.value is not None and np.all(np.isfinite(c.value)):
        w = np.clip(np.asarray(c.value, dtype=float), 0.0, None)
        if w.sum() > 0:
            cand = np.zeros(n)
            cand[S] = w / w.sum()
            cand_slem = slem_circulant(cand)
            # a relative 1e-12 below the uniform weights: less is rounding noise, not an improvement
            if cand_slem < best_slem * (1 - 1e-12):
                best, best_slem, status = cand, cand_slem, solved
    return best, best_slem, status


def circulant_matrix(c: np.ndarray) -> np.ndarray:
    """``C_ij = c_{(j - i) mod n}`` (row ``i`` is ``c`` rolled by ``i``)."""
    n = c.size
    return c[(np.arange(n)[None, :] - np.arange(n)[:, None]) % n]


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``B = circ(c*)`` with ``c*`` of :func:`optimize_circulant` on ``A``'s offsets; ``X_0 = 1_n``."""
    if m != 1:
        raise InvalidArgumentError("m", f"slem-circulant is an m = 1 code, got m = {m}")
    if eps:
        raise InvalidArgumentError("eps", "slem-circulant draws nothing; eps must be 0")
    S = circulant_support(A)
    if S is None:
        raise InvalidArgumentError(
            "assignment",
            "slem-circulant needs a circulant assignment A_ij = [(j - i) mod n in S] "
            "(see gcsim.coding.encoders.slem_circulant.circulant_assignment)",
        )
    solver = check_solver(opts.pop("solver", "SCS"))
    c, slem, status = optimize_circulant(A.shape[0], S, solver=solver)
    B = circulant_matrix(c)
    return B, np.ones((A.shape[1], 1)), None, {"solver": solver, "slem": slem, "solver_status": status}, {}


def verify(scheme: Any, name: str) -> None:
    """``m = 1``, ``B`` circulant, non-negative, rows summing to 1 (to ``8 n u``: n terms, two orders)."""
    B = scheme.B
    n = scheme.n
    if scheme.m != 1 or B.shape != (n, n):
        raise VerificationError(f"{name}: B must be square with m = 1")
    if not np.array_equal(B, circulant_matrix(B[0])):
        raise VerificationError(f"{name}: B is not circulant")
    if np.any(B < 0):
        raise VerificationError(f"{name}: B has negative entries")
    if np.max(np.abs(B.sum(axis=1) - 1.0)) > 4 * n * np.finfo(float).eps:
        raise VerificationError(f"{name}: the rows of B do not sum to 1")


def applies(A: np.ndarray, m: int) -> str | None:
    """Why the advisor should not try it: ``m > 1``, a non-circulant assignment or more than 64 workers."""
    if m != 1:
        return "an m = 1 code"
    if A.shape[0] != A.shape[1] or A.shape[1] > 64:
        return "optimized only for square assignments of at most 64 workers"
    if circulant_support(A) is None:
        return "needs a circulant assignment"
    return None


def best_circulant(
    n: int, d: int, *, tries: int = 10, seed: int = 0, solver: str = "SCS"
) -> tuple[np.ndarray, np.ndarray, float]:
    """The authors' search: ``tries`` random supports of size ``d``, the one of least optimized SLEM.

    Each support is ``d`` distinct offsets drawn uniformly from ``0..n-1`` by
    ``numpy.random.default_rng(seed)``; each is optimized by :func:`optimize_circulant` (the first
    support wins ties).  ``encode(assignment, 1, "slem-circulant")`` builds its scheme.

    Returns
    -------
    assignment : numpy.ndarray (n, n)
        The circulant assignment of the best support.
    c : numpy.ndarray (n,)
        Its optimized weights.
    slem : float
        Their SLEM (NumPy's).

    Examples
    --------
    >>> A, c, slem = best_circulant(12, 4, tries=3)
    >>> A.sum(axis=0).tolist() == [4] * 12, slem < 0.6
    (True, True)
    """
    n = check_int("n", n, minimum=2)
    limits.check_work("n", n, "the SLEM program", limit_name="MAX_SDP_WORKERS", unit="workers")
    d = check_int("d", d, minimum=1, maximum=n)
    tries = check_int("tries", tries, minimum=1, maximum=10_000)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    solver = check_solver(solver)
    best_S, best_c, best_slem = None, np.zeros(n), np.inf
    for _ in range(tries):
        S = np.sort(rng.choice(n, size=d, replace=False))
        c, slem, _status = optimize_circulant(n, S, solver=solver)
        if best_S is None or slem < best_slem:
            best_S, best_c, best_slem = S, c, slem
    return circulant_assignment(n, best_S), best_c, float(best_slem)


def _example() -> tuple[Any, int, dict[str, Any]]:
    return circulant_assignment(8, [0, 1, 3]), 1, {}


ENCODERS = (
    Encoder(
        "slem-circulant",
        build,
        "circulant B on a circulant assignment, weights minimizing the SLEM (cvxpy SOCP; m = 1)",
        theory="§43.2",
        randomized=False,
        options=("solver",),
        verify=verify,
        applies=applies,
        advisor=None,
        m1_only=True,
        bounds=("spectral_decoder_upper",),
        example=_example,
        order=120,
    ),
)
