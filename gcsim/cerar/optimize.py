"""Condition-number-constrained optimization of CERAR encoders and decoders.

Problem (docs/theory.md §55.1, a reconstruction; the source paper is known to us only by its
abstract). With error operators ``E_{i,m} = D_i S_{m-1} A_{i-m} - I_c``
(see :mod:`gcsim.cerar.design`), minimise either

* the Frobenius objective ``F = sum_i sum_{m=1}^{N-1} ||E_{i,m}||_F^2``, or
* the worst-case objective ``W = max_i ||[E_{i,1} ... E_{i,N-1}]||_2``,

subject to ``kappa(A_j) <= kappa_A`` for every encoder and ``kappa(D_i) <= kappa_D``
for every decoder (``kappa(X) = sigma_max / sigma_min``, with ``sigma_min`` the
``min(rows, cols)``-th singular value, so the ``c``-th one for the ``c x L`` decoder).

The problem is bilinear, hence non-convex. We alternate

* a **D-step** (all ``D_i`` given ``A``): decouples into ``N`` independent problems,
  one per worker ``i``;
* an **A-step** (all ``A_j`` given ``D``): for the Frobenius objective it decouples
  into ``N`` problems, one per encoder ``j`` (``A_j`` only meets ``D_{j+m}``); the
  worst-case objective couples the encoders through the max over workers and is
  solved as one joint SDP.

Each block is convex after replacing the non-convex constraint ``sigma_min(X) >= t``
by the convex inner approximation ``sym(X Q^T) >= t I`` (``Q`` the polar factor of the
current iterate, re-centred every step; Kovalsky, Aigerman, Basri & Lipman, "Controlling
singular values with semidefinite programming", SIGGRAPH 2014), and ``sigma_max(X) <= kappa t``
by the Schur LMI ``[[kappa t I, X], [X^T, kappa t I]] >= 0``. The scale variable ``t``
makes each block's feasible set a cone, so the constraint is exactly the scale-invariant
``kappa(X) <= kappa``; the global gauge ``A -> s A, D -> D / s`` (which leaves every
``E_{i,m}`` unchanged) is fixed by ``t_j >= 1`` for the encoders. Proofs (inner
approximation, monotonicity, scale invariance) are in ``docs/theory/55_cerar_opt.md``.

At a cap of 1 the cone is a ray ``{t Q}`` with no interior: the SDP blocks then use the
equality ``X = t Q``, the Frobenius A-step is a scaled orthogonal Procrustes problem and the
Frobenius D-step a monotone majorization-minimization on the scaled co-isometries. By default
(``init="auto"``) the scheme runs from every analytic design gcsim can build (exact,
perturbation, Vandermonde; projected onto the caps) and keeps the best, so it is never worse
than any of them that meets the caps; ``metadata["start"]`` says which start won. The stopping
rule has an absolute floor, the rounding level of the computed objective.

Every accepted step is re-checked with NumPy: the condition numbers by SVD (the
*certificate*) and the objective from the arrays. A step whose objective does not
decrease is rejected, so the recorded objective history is monotone non-increasing
by construction (and asserted).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._progress import progress_bar
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError, SolverError
from .constructions import _check_design_size, exact_design, perturbation_design, vandermonde_design
from .design import CerarDesign
from .metrics import CERT_RTOL, condition_numbers, design_metrics, error_operators, gamma, worker_norms
from .ring import num_rounds

__all__ = [
    "clip_condition",
    "optimized_design",
    "KAPPA_SLACK",
]

#: Relative slack allowed between the cap and the SVD-measured kappa of a raw solver
#: output. Beyond it the step counts as a solver failure; within it the matrix is
#: repaired by :func:`clip_condition` (SCS solves to ~1e-6, so overshoots are ~1e-5).
KAPPA_SLACK = 1e-3

_OBJECTIVES = ("frobenius", "worst")
#: a grid of eps values (a sequence or a 1-D array)
Grid = Sequence[float] | np.ndarray
_INITS = ("auto", "perturbation", "vandermonde", "exact", "random")


# ---------------------------------------------------------------------------
# metrics


def clip_condition(X: np.ndarray, kappa: float) -> np.ndarray:
    """Nearest matrix with ``kappa(X) <= kappa`` that keeps ``sigma_max``: raise the small singular values.

    ``X = U diag(sigma) V^T`` becomes ``U diag(max(sigma, sigma_1 / kappa')) V^T`` with
    ``kappa' = max(1, kappa (1 - 1e-10))`` (a hair inside the cap so that the SVD
    re-check passes). Among matrices with the same singular vectors and ``sigma_1``
    this is the Frobenius-nearest one with the cap. Works on stacks ``(..., p, q)``.

    Examples
    --------
    >>> Y = clip_condition(np.diag([10.0, 1.0]), 4.0)
    >>> bool(condition_numbers(Y) <= 4.0)
    True
    """
    X = np.asarray(X, dtype=float)
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    target = max(1.0, float(kappa) * (1.0 - 1e-10))
    s = np.maximum(s, s[..., :1] / target)
    return (U * s[..., None, :]) @ Vt


def _objective(A: np.ndarray, D: np.ndarray, objective: str) -> float:
    E = error_operators(A, D)
    if objective == "frobenius":
        return float(np.sum(E * E))
    return float(np.max(worker_norms(E)))


# ---------------------------------------------------------------------------
# block data


def _windows(D: np.ndarray, N: int) -> np.ndarray:
    """``U[i, m-1] = D_i S_{m-1}`` (the c x c column window), shape (N, N-1, c, c)."""
    c = D.shape[1]
    cols = np.arange(N - 1)[:, None] + np.arange(c)[None, :]
    return np.moveaxis(D[:, :, cols], 2, 1)


def _d_data(A: np.ndarray) -> np.ndarray:
    """``W_i = [S_0 A_{i-1}, ..., S_{N-2} A_{i-N+1}]`` of shape (N, L, (N-1)c): E_i = D_i W_i - [I ... I]."""
    N, c, _ = A.shape
    L = num_rounds(N, c)
    W = np.zeros((N, L, (N - 1) * c))
    i = np.arange(N)
    for m in range(1, N):  # N-1 slices, each batched over workers
        W[:, m - 1 : m - 1 + c, (m - 1) * c : m * c] = A[(i - m) % N]
    return W


def _a_data(D: np.ndarray) -> np.ndarray:
    """``M_j`` of shape (N, (N-1)c, c): the stacked windows ``D_{j+m} S_{m-1}``, m = 1..N-1."""
    N, c, _ = D.shape
    U = _windows(D, N)  # U[i, m-1]
    j = np.arange(N)[:, None]
    m = np.arange(1, N)[None, :]
    blocks = U[(j + m) % N, m - 1]  # (N, N-1, c, c)
    return blocks.reshape(N, (N - 1) * c, c)


def _polar_factor(X: np.ndarray) -> np.ndarray:
    """Co-isometric polar factor ``Q = U V^T`` of ``X = U Sigma V^T`` (thin SVD), stacked."""
    U, _, Vt = np.linalg.svd(X, full_matrices=False)
    return U @ Vt


# ---------------------------------------------------------------------------
# convex blocks (cvxpy, built once and re-solved with new parameter values)


def _cp():
    require("cvxpy", "optimize", "gcsim.cerar.optimize (CERAR encoder optimization)")
    import cvxpy as cp  # imported lazily: cvxpy is slow to import

    return cp


def _norm_lmi(cp, X, bound, p: int, q: int):
    """``||X||_2 <= bound`` as the Schur LMI ``[[bound I_p, X], [X^T, bound I_q]] >= 0`` (X is p x q)."""
    return cp.bmat([[bound * np.eye(p), X], [X.T, bound * np.eye(q)]]) >> 0


def _kappa_constraints(cp, X, Q, t, kappa: float, p: int, q: int) -> list:
    """Inner approximation of ``kappa(X) <= kappa`` around the iterate with polar factor ``Q`` (p <= q).

    ``sym(X Q^T) >= t I_p`` implies ``sigma_p(X) >= t`` and the Schur LMI gives
    ``sigma_1(X) <= kappa t``. At ``kappa = 1`` this set is exactly the ray ``{t Q}`` (both LMIs
    hold with equality, docs/theory.md §55.4): the LMIs then have no interior, which
    stalls an interior/first-order solver, so the ray is written as the linear equality ``X = t Q``.
    """
    if kappa == 1.0:
        return [X == t * Q]
    M = X @ Q.T
    return [(M + M.T) / 2 - t * np.eye(p) >> 0, _norm_lmi(cp, X, kappa * t, p, q)]


def _solve(problem, solver: str, opts: dict) -> str:
    """Solve (warm-started); an SCS ``optimal_inaccurate`` gets one retry with 5x the iterations.

    Returns the final status string (``"error: ..."`` if the solver raised).
    """
    try:
        with warnings.catch_warnings():  # cvxpy warns on inaccurate solutions: the status is checked
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=solver, warm_start=True, **opts)
            if solver == "SCS" and problem.status == "optimal_inaccurate":
                retry = dict(opts)
                retry["max_iters"] = 5 * int(opts.get("max_iters", 100000))
                problem.solve(solver=solver, warm_start=True, **retry)
    except Exception as exc:  # cvxpy.error.SolverError and numerical failures
        return f"error: {type(exc).__name__}: {exc}"
    return str(problem.status)


class _Block:
    """One convex subproblem ``min_X obj(X) s.t. kappa(X) <= kappa`` with data parameter(s)."""

    def __init__(self, problem, X, params: dict, solver: str, solver_opts: dict):
        self.problem, self.X, self.params = problem, X, params
        self.solver, self.solver_opts = solver, solver_opts

    def solve(self, values: dict) -> tuple[str, np.ndarray | None]:
        for k, v in values.items():
            self.params[k].value = v
        status = _solve(self.problem, self.solver, self.solver_opts)
        if status.startswith("error"):
            return status, None
        if self.X.value is None:
            return status, None
        return status, np.array(self.X.value, dtype=float)


def _d_block(N: int, c: int, kappa_D: float, objective: str, solver: str, opts: dict) -> _Block:
    """Decoder block of one worker: X is c x L, data W (L x (N-1)c), target [I ... I]."""
    cp = _cp()
    L = num_rounds(N, c)
    K = (N - 1) * c
    X = cp.Variable((c, L))
    W = cp.Parameter((L, K))
    T = np.tile(np.eye(c), (1, N - 1))
    R = X @ W - T
    cons: list = []
    params = {"W": W}
    if math.isfinite(kappa_D):
        Q = cp.Parameter((c, L))
        s = cp.Variable(nonneg=True)  # free scale: the constraint set is a cone
        cons += _kappa_constraints(cp, X, Q, s, kappa_D, c, L)
        params["Q"] = Q
    if objective == "frobenius":
        obj = cp.sum_squares(R)
    else:
        tau = cp.Variable(nonneg=True)
        cons.append(_norm_lmi(cp, R, tau, c, K))
        obj = tau
    return _Block(cp.Problem(cp.Minimize(obj), cons), X, params, solver, opts)


def _a_block(N: int, c: int, kappa_A: float, solver: str, opts: dict) -> _Block:
    """Encoder block of one encoder j (Frobenius objective): X is c x c, data M_j ((N-1)c x c)."""
    cp = _cp()
    K = (N - 1) * c
    X = cp.Variable((c, c))
    M = cp.Parameter((K, c))
    Q = cp.Parameter((c, c))
    t = cp.Variable()
    T = np.tile(np.eye(c), (N - 1, 1))
    cons = _kappa_constraints(cp, X, Q, t, kappa_A, c, c) + [t >= 1]  # t >= 1 fixes the gauge
    prob = cp.Problem(cp.Minimize(cp.sum_squares(M @ X - T)), cons)
    return _Block(prob, X, {"M": M, "Q": Q}, solver, opts)


class _JointWorstA:
    """A-step of the worst-case objective: one SDP over all encoders (they share the max over workers)."""

    def __init__(self, N: int, c: int, kappa_A: float, solver: str, opts: dict):
        cp = _cp()
        self.N, self.c = N, c
        self.X = [cp.Variable((c, c)) for _ in range(N)]
        self.Q = [cp.Parameter((c, c)) for _ in range(N)]
        self.U = cp.Parameter((N * (N - 1) * c, c))  # all windows D_i S_{m-1}, stacked
        t = cp.Variable(N)
        tau = cp.Variable(nonneg=True)
        cons = [t >= 1]
        for j in range(N):
            cons += _kappa_constraints(cp, self.X[j], self.Q[j], t[j], kappa_A, c, c)
        I = np.eye(c)
        for i in range(N):
            blocks = []
            for m in range(1, N):
                r = (i * (N - 1) + m - 1) * c
                blocks.append(self.U[r : r + c, :] @ self.X[(i - m) % N] - I)
            cons.append(_norm_lmi(cp, cp.hstack(blocks), tau, c, (N - 1) * c))
        self.problem = cp.Problem(cp.Minimize(tau), cons)
        self.solver, self.opts = solver, opts

    def solve(self, D: np.ndarray, A: np.ndarray) -> tuple[str, np.ndarray | None]:
        self.U.value = _windows(D, self.N).reshape(-1, self.c)
        Q = _polar_factor(A)
        for j in range(self.N):
            self.Q[j].value = Q[j]
        status = _solve(self.problem, self.solver, self.opts)
        if status.startswith("error") or any(x.value is None for x in self.X):
            return str(self.problem.status), None
        return str(self.problem.status), np.stack([np.array(x.value, dtype=float) for x in self.X])


# ---------------------------------------------------------------------------
# closed-form block steps


def _least_squares_decoders(A: np.ndarray) -> np.ndarray:
    """Unconstrained Frobenius-optimal decoders given A: D_i = [I ... I] W_i^+ (batched)."""
    N, c, _ = A.shape
    W = _d_data(A)
    T = np.tile(np.eye(c), (1, N - 1))
    return T @ np.linalg.pinv(W)


#: Majorization-minimization iterations of one Frobenius D-step at ``kappa_D = 1``.
UNIT_D_ITERS = 50


def _ray_scale(O: np.ndarray, W: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Optimal ``s >= 0`` of ``min_s ||s O_i W_i - T||_F^2`` per worker: ``<O W, T> / ||O W||_F^2``."""
    OW = O @ W
    num = np.sum(OW * T, axis=(1, 2))
    den = np.sum(OW * OW, axis=(1, 2))
    return np.where(den > 0, np.maximum(num, 0.0) / np.where(den > 0, den, 1.0), 0.0)


def _unit_kappa_decoders(A: np.ndarray, D: np.ndarray, iters: int = UNIT_D_ITERS) -> np.ndarray:
    """Frobenius D-step at ``kappa_D = 1``: ``min ||s O W_i - T||_F^2`` over ``s >= 0``, ``O O^T = I_c``.

    The feasible decoders are the scaled co-isometries ``s O`` (``O`` is ``c x L``), a non-convex set
    on which the SDP block has no interior. We descend on it by alternating the exact scale
    (:func:`_ray_scale`) with one majorization-minimization step in ``O`` (the "unbalanced
    Procrustes" majorizer, Kiers 1990): with ``P = W W^T`` and ``lambda >= lambda_max(P)``,
    ``tr(O P O^T) <= lambda c - tr(O M O^T)`` linearised at ``O_k`` (``M = lambda I - P >= 0``) gives
    a surrogate that touches the objective at ``O_k`` and is minimised by the polar factor of
    ``s O_k M + T W^T``. Every step is non-increasing, starting from the polar factor of the current
    ``D`` (docs/theory.md §55.4), so the step is monotone like the SDP blocks.
    """
    N, c, _ = A.shape
    W = _d_data(A)  # (N, L, K)
    T = np.tile(np.eye(c), (1, N - 1))
    P = W @ np.swapaxes(W, 1, 2)
    lam = np.linalg.eigvalsh(P)[:, -1]
    M = lam[:, None, None] * np.eye(P.shape[1]) - P
    TW = T @ np.swapaxes(W, 1, 2)  # T W^T, (N, c, L)
    O = _polar_factor(D)
    for _ in range(iters):
        s = _ray_scale(O, W, T)
        O = _polar_factor(s[:, None, None] * (O @ M) + TW)
    return _ray_scale(O, W, T)[:, None, None] * O


def _procrustes_encoders(D: np.ndarray) -> np.ndarray:
    """Frobenius A-step at kappa = 1: ``min_{t, O^T O = I} ||M_j t O - T||_F^2`` for every j (batched).

    Expanding, ``t^2 ||M||_F^2 - 2 t tr(O^T M^T T) + const``: ``O = U V^T`` from the SVD
    ``M^T T = U Sigma V^T`` (orthogonal Procrustes) and ``t = tr(Sigma) / ||M||_F^2``.
    """
    N, c, _ = D.shape
    M = _a_data(D)
    B = np.swapaxes(M, 1, 2) @ np.tile(np.eye(c), (N - 1, 1))  # M_j^T T = sum of windows^T
    U, sig, Vt = np.linalg.svd(B)
    nrm = np.sum(M * M, axis=(1, 2))
    t = np.where(nrm > 0, sig.sum(axis=1) / np.where(nrm > 0, nrm, 1.0), 1.0)
    t = np.where(t > 0, t, 1.0)
    return t[:, None, None] * (U @ Vt)


# ---------------------------------------------------------------------------
# rounding level of the objective (the stopping rule's absolute floor)


def _objective_noise(A: np.ndarray, D: np.ndarray, objective: str, value: float) -> tuple[float, float]:
    """``(zero, noise)``: rounding levels of the objective computed from ``(A, D)`` in float64.

    Each entry of ``E_{i,m} = (D_i S_{m-1}) A_{i-m} - I`` is a length-``c`` dot product followed
    by one subtraction, so its computed value is off by at most
    ``Delta = gamma_{c+1} (|D_i S_{m-1}| |A_{i-m}| + I)`` entrywise (Higham, Thm 3.5 / eq. 3.11).

    * Frobenius: with ``e = ||Delta||_F`` and ``n`` the number of entries, the computed
      ``F = sum E^2`` is within ``noise = 2 sqrt(F) e + e^2 + gamma_{n+1} F`` of the exact one, and
      an exact design (``E = 0``) evaluates to at most ``zero = e^2 (1 + gamma_{n+1})``.
    * worst case: the block row of worker ``i`` is off by ``e_i = ||Delta_i||_F`` in 2-norm, and the
      SVD's backward error adds ``p u ||row||_2`` with ``p = (N-1) c^2`` (LAPACK Users' Guide §4.9):
      ``noise = max_i e_i + gamma_p W``, ``zero = max_i e_i (1 + gamma_p)``.

    A decrease smaller than the sum of the noise levels of the two values compared is not a
    decrease of the exact objective, and a value below ``zero`` cannot be told from 0.
    """
    N, c, _ = A.shape
    U = np.abs(_windows(D, N))  # |D_i S_{m-1}|, (N, N-1, c, c)
    src = (np.arange(N)[:, None] - np.arange(1, N)[None, :]) % N
    delta = gamma(c + 1) * (U @ np.abs(A)[src] + np.eye(c))
    if objective == "frobenius":
        g = gamma(delta.size + 1)
        e2 = float(np.sum(delta * delta))
        return e2 * (1.0 + g), 2.0 * math.sqrt(max(value, 0.0) * e2) + e2 + g * value
    g = gamma((N - 1) * c * c)
    e = float(np.max(np.sqrt(np.sum(delta * delta, axis=(1, 2, 3)))))
    return e * (1.0 + g), e + g * value


# ---------------------------------------------------------------------------
# starting points

_EPS_GRID = np.geomspace(1e-6, 1.0, 49)
#: the analytic families with a grid parameter (eps), built as the factory builds them
_FAMILIES = {"perturbation": perturbation_design, "vandermonde": vandermonde_design}


def _vandermonde_grid(c: int) -> np.ndarray:
    """Default node spacings of the Vandermonde start: 13 log-spaced values up to 0.95 * 2/(c-1).

    The real nodes ``1 + eps (k - (c-1)/2)`` stay positive only for ``eps < 2/(c-1)``.
    """
    return np.geomspace(1e-3, 0.95 * 2 / (c - 1) if c > 1 else 1.0, 13)


def _fits(A: np.ndarray, D: np.ndarray, kappa: float, kappa_D: float) -> tuple[bool, float, float]:
    """``(fits, kappa_A_max, kappa_D_max)``: does the design meet the caps (up to the certificate's rounding)?"""
    kA = float(np.max(condition_numbers(A)))
    kD = float(np.max(condition_numbers(D)))
    ok = kA <= kappa * (1 + CERT_RTOL) and (not math.isfinite(kappa_D) or kD <= kappa_D * (1 + CERT_RTOL))
    return ok, kA, kD


def _family_members(N: int, c: int, family: str, grid: Grid | None) -> list[tuple[CerarDesign, float | None]]:
    """The analytic designs of one family gcsim can build for (N, c): ``[(design, eps), ...]``.

    ``"exact"``: the exact design when it exists (``c <= N`` or ``N = 2``); ``"perturbation"`` and
    ``"vandermonde"``: one member per ``eps`` of the grid, skipping those whose encoders are
    singular in float64 or whose nodes leave the admissible range.
    """
    out: list[tuple[CerarDesign, float | None]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ill-conditioned members are expected
        if family == "exact":
            if c <= N or N == 2:
                out.append((exact_design(N, c), None))
            return out
        if grid is None:
            grid = _EPS_GRID if family == "perturbation" else _vandermonde_grid(c)
        for e in grid:
            try:
                out.append((_FAMILIES[family](N, c, float(e)), float(e)))
            except InvalidArgumentError:
                continue
    return out


def _best_member(
    members: list[tuple[CerarDesign, float | None]], kappa: float, kappa_D: float, objective: str
) -> tuple[CerarDesign, float | None, bool] | None:
    """Lowest-objective member that fits the caps; if none fits, the one closest to fitting.

    Returns ``(design, eps, fits)`` or None for an empty family. "Closest" is the smallest ratio
    ``max(kappa_A / kappa, kappa_D / kappa_D_cap)``; that member is then projected onto the caps.
    """
    best, best_key = None, None
    for d, e in members:
        ok, kA, kD = _fits(d.encoders, d.decoders, kappa, kappa_D)
        if ok:
            key = (0, _objective(d.encoders, d.decoders, objective))
        else:
            key = (1, max(kA / kappa, kD / kappa_D if math.isfinite(kappa_D) else 0.0))
        if best_key is None or key < best_key:
            best, best_key = (d, e, ok), key
    return best


def _require(
    best: tuple[CerarDesign, float | None, bool] | None, family: str
) -> tuple[CerarDesign, float | None, bool]:
    if best is None:
        raise InvalidArgumentError("eps", f"no {family} design of the grid can be built in float64")
    return best


def _clip_over(X: np.ndarray, cap: float) -> np.ndarray:
    """Clip (:func:`clip_condition`) only the matrices of a stack whose kappa exceeds the certificate.

    Matrices that already meet ``kappa <= cap (1 + CERT_RTOL)`` are kept bit for bit, so a start
    that fits the caps is not moved (an SVD round trip would change its last bits).
    """
    if not math.isfinite(cap):
        return X
    bad = condition_numbers(X) > cap * (1 + CERT_RTOL)
    if not np.any(bad):
        return X
    X = X.copy()
    X[bad] = clip_condition(X[bad], cap)
    return X


def _start(
    label: str,
    A: np.ndarray,
    D: np.ndarray | None,
    kappa: float,
    kappa_D: float,
    objective: str,
    eps: float | None = None,
) -> dict[str, Any]:
    """A start: the design projected onto the caps and gauge-fixed, with what it was before."""
    A = np.asarray(A, dtype=float)
    fits, kA, kD = (None, float(np.max(condition_numbers(A))), None) if D is None else _fits(A, D, kappa, kappa_D)
    A = _clip_over(A, kappa)
    if D is None:  # random start: Frobenius-optimal decoders for its encoders
        D = _least_squares_decoders(A)
    D = _clip_over(np.asarray(D, dtype=float), kappa_D)
    A, D = _fix_gauge(A, D)
    return {
        "label": label,
        "eps": eps,
        "A": A,
        "D": D,
        "fits_caps": fits,
        "kappa_A_max": kA,
        "kappa_D_max": kD,
        "objective_start": _objective(A, D, objective),
    }


def _analytic_starts(
    N: int,
    c: int,
    kappa: float,
    kappa_D: float,
    objective: str,
    eps: float | None = None,
    eps_grid: Grid | None = None,
    vandermonde_grid: Grid | None = None,
) -> list[dict[str, Any]]:
    """One start per analytic family gcsim can build (exact, perturbation, Vandermonde).

    Each family contributes its best member that fits the caps (lowest objective), or, if none
    fits, the member closest to fitting, projected onto the caps. Starts with identical arrays
    (for ``c <= N`` the perturbation design can coincide with the exact one) are kept once.
    """
    starts: list[dict[str, Any]] = []
    for family, grid in (
        ("exact", None),
        ("perturbation", [eps] if eps is not None else eps_grid),
        ("vandermonde", vandermonde_grid),
    ):
        best = _best_member(_family_members(N, c, family, grid), kappa, kappa_D, objective)
        if best is None:
            continue
        d, e, _ = best
        s = _start(family, d.encoders, d.decoders, kappa, kappa_D, objective, e)
        if any(np.array_equal(s["A"], t["A"]) and np.array_equal(s["D"], t["D"]) for t in starts):
            continue
        starts.append(s)
    return starts


def _initial_point(
    N: int, c: int, init: Any, eps: float | None, seed: int, kappa: float, kappa_D: float, objective: str = "frobenius"
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The single start of a named ``init`` (not ``"auto"``) or a design: ``(A, D, info)``, projected."""
    return _starts_for(N, c, init, eps, seed, kappa, kappa_D, objective)[0][1:]


def _starts_for(
    N: int, c: int, init: Any, eps: float | None, seed: int, kappa: float, kappa_D: float, objective: str
) -> list[tuple[dict[str, Any], np.ndarray, np.ndarray, dict]]:
    """Starts of ``optimized_design``: ``[(start, A, D, info), ...]``."""
    if isinstance(init, CerarDesign):
        if (init.N, init.c) != (N, c):
            raise InvalidArgumentError("init", f"design has (N, c) = {(init.N, init.c)}, expected {(N, c)}")
        starts = [
            _start(
                f"given design ({init.method})",
                init.encoders,
                init.decoders,
                kappa,
                kappa_D,
                objective,
                init.metadata.get("eps"),
            )
        ]
    elif init == "random":
        rng = np.random.default_rng(seed)
        starts = [_start("random", rng.standard_normal((N, c, c)), None, kappa, kappa_D, objective)]
    elif init == "auto":
        starts = _analytic_starts(N, c, kappa, kappa_D, objective, eps=eps)
    else:
        if init == "exact" and c > N and N > 2:
            raise InvalidArgumentError("init", f"'exact' needs c <= N (or N = 2), got N = {N}, c = {c}")
        if eps is not None:
            grid: Grid | None = [eps]
        elif init == "vandermonde":
            grid = _vandermonde_grid(c)
        else:
            grid = None
        if init == "exact":
            d, e = exact_design(N, c), None
        else:
            d, e, _ = _require(_best_member(_family_members(N, c, init, grid), kappa, kappa_D, objective), init)
        starts = [_start(init, d.encoders, d.decoders, kappa, kappa_D, objective, e)]
    out = []
    for s in starts:
        info = {"init": init if isinstance(init, str) else s["label"]}
        if s["eps"] is not None:
            info["eps"] = s["eps"]
        out.append((s, s["A"], s["D"], info))
    return out


# ---------------------------------------------------------------------------
# the alternating scheme


def _certify(X: np.ndarray, cap: float) -> tuple[np.ndarray | None, int]:
    """Apply the kappa certificate to a stack of solver outputs.

    Returns ``(X', repaired)``; ``X' is None`` when some matrix overshoots the cap by more
    than :data:`KAPPA_SLACK` (a solver failure) or cannot be repaired.
    """
    if not np.all(np.isfinite(X)):
        return None, 0
    if not math.isfinite(cap):
        return X, 0
    k = condition_numbers(X)
    if not np.all(np.isfinite(k)) or np.any(k > cap * (1 + KAPPA_SLACK)):
        return None, 0
    bad = k > cap * (1 + CERT_RTOL)
    if np.any(bad):
        X = X.copy()
        X[bad] = clip_condition(X[bad], cap)
        if np.any(condition_numbers(X[bad]) > cap * (1 + CERT_RTOL)):
            return None, 0
    return X, int(np.count_nonzero(bad))


class _Engine:
    """The D- and A-steps of one ``(N, c, caps, objective, solver)``; cvxpy blocks built on first use.

    The blocks are parametrised (DPP), so every start of a call re-uses the same compiled problems.
    """

    def __init__(self, N: int, c: int, kappa: float, kappa_D: float, objective: str, solver: str, opts: dict):
        self.N, self.c, self.kappa, self.kappa_D = N, c, kappa, kappa_D
        self.objective, self.solver, self.opts = objective, solver, opts
        frob = objective == "frobenius"
        # closed forms: least squares (kappa_D = inf), the MM step on the scaled co-isometries
        # (kappa_D = 1: the SDP has no interior), scaled orthogonal Procrustes (kappa_A = 1)
        self.d_mode = "lstsq" if frob and not math.isfinite(kappa_D) else "unit" if frob and kappa_D == 1.0 else "sdp"
        self.a_mode = "procrustes" if frob and kappa == 1.0 else "sdp"
        self._d_blocks: list[_Block] | None = None
        self._a_blocks: list[_Block] | None = None
        self._a_joint: _JointWorstA | None = None

    def d_step(self, A: np.ndarray, D: np.ndarray) -> tuple[list[str], np.ndarray | None]:
        if self.d_mode == "lstsq":
            return ["closed_form"], _least_squares_decoders(A)
        if self.d_mode == "unit":
            return ["closed_form"], _unit_kappa_decoders(A, D)
        if self._d_blocks is None:
            self._d_blocks = [
                _d_block(self.N, self.c, self.kappa_D, self.objective, self.solver, self.opts) for _ in range(self.N)
            ]
        W = _d_data(A)
        Q = _polar_factor(D) if math.isfinite(self.kappa_D) else None
        out: list[np.ndarray | None] = []
        st: list[str] = []
        for i, blk in enumerate(self._d_blocks):
            vals = {"W": W[i]}
            if Q is not None:
                vals["Q"] = Q[i]
            s, X = blk.solve(vals)
            st.append(s)
            out.append(X)
        if any(s != "optimal" for s in st) or any(x is None for x in out):
            return st, None
        return st, np.stack([x for x in out if x is not None])

    def a_step(self, A: np.ndarray, D: np.ndarray) -> tuple[list[str], np.ndarray | None]:
        if self.a_mode == "procrustes":
            return ["closed_form"], _procrustes_encoders(D)
        if self.objective == "worst":
            if self._a_joint is None:
                self._a_joint = _JointWorstA(self.N, self.c, self.kappa, self.solver, self.opts)
            s, X = self._a_joint.solve(D, A)
            return [s], (X if s == "optimal" else None)
        if self._a_blocks is None:
            self._a_blocks = [_a_block(self.N, self.c, self.kappa, self.solver, self.opts) for _ in range(self.N)]
        M = _a_data(D)
        Q = _polar_factor(A)
        out: list[np.ndarray | None] = []
        st: list[str] = []
        for j, blk in enumerate(self._a_blocks):
            s, X = blk.solve({"M": M[j], "Q": Q[j]})
            st.append(s)
            out.append(X)
        if any(s != "optimal" for s in st) or any(x is None for x in out):
            return st, None
        return st, np.stack([x for x in out if x is not None])


def _run(
    engine: _Engine, start: dict[str, Any], *, max_iter: int, tol: float, on_failure: str, verbose: bool, bar
) -> dict[str, Any]:
    """Alternate D- and A-steps from one start; returns the final iterate and its record.

    Stopping rule after each sweep: ``zero objective`` when the objective is below the rounding
    level of an exact design, ``converged`` when the sweep's decrease is at most
    ``max(tol * F_start, noise(F_start) + noise(F))`` (:func:`_objective_noise`: a smaller
    decrease cannot be told from rounding, whatever the BLAS kernel), else ``max_iter``.
    """
    objective = engine.objective
    A, D = start["A"], start["D"]
    F = _objective(A, D, objective)
    history = [F]
    statuses: list[dict[str, Any]] = []
    repaired = 0
    iterations = 0
    failure = None
    zero, noise = _objective_noise(A, D, objective, F)
    stop_reason = "zero objective" if F <= zero else "max_iter"
    for it in range(1, max_iter + 1):
        if stop_reason == "zero objective":
            break
        F_start, noise_start = F, noise
        for step in ("D", "A"):
            st, X = engine.d_step(A, D) if step == "D" else engine.a_step(A, D)
            cap = engine.kappa_D if step == "D" else engine.kappa
            nrep = 0
            if X is not None:
                X, nrep = _certify(X, cap)
            if X is None:
                failure = (
                    f"{step}-step of sweep {it}: solver status {sorted(set(st))} (or kappa overshoot > {KAPPA_SLACK})"
                )
                statuses.append(
                    {"sweep": it, "step": step, "statuses": sorted(set(st)), "accepted": False, "objective": F}
                )
                if on_failure == "raise":
                    raise SolverError(failure)
                break
            newA, newD = (A, X) if step == "D" else _fix_gauge(X, D)
            F_new = _objective(newA, newD, objective)
            accepted = F_new <= F  # rejecting non-decreasing steps keeps the history monotone
            if accepted:
                A, D, F = newA, newD, F_new
                repaired += nrep
            history.append(F)
            statuses.append(
                {"sweep": it, "step": step, "statuses": sorted(set(st)), "accepted": bool(accepted), "objective": F}
            )
        if failure is not None:
            stop_reason = f"solver failure: {failure}"
            break
        iterations = it
        bar.update(1)
        if verbose:
            print(f"[{start['label']}] sweep {it}: objective {F:.6e}")
        zero, noise = _objective_noise(A, D, objective, F)
        if F <= zero:
            stop_reason = "zero objective"
            break
        if F_start - F <= max(tol * F_start, noise_start + noise):
            stop_reason = "converged"
            break
    assert all(b <= a for a, b in zip(history, history[1:], strict=False)), "objective history must be monotone"
    return {
        "A": A,
        "D": D,
        "history": history,
        "statuses": statuses,
        "iterations": iterations,
        "stop_reason": stop_reason,
        "repaired": repaired,
        "failure": failure,
        "failed_first": failure is not None and iterations == 0,
    }


def _optimize(
    N: int,
    c: int,
    starts: list[tuple[dict[str, Any], np.ndarray, np.ndarray, dict]],
    *,
    kappa: float,
    kappa_D: float,
    objective: str,
    solver: str,
    solver_options: dict,
    max_iter: int,
    tol: float,
    on_failure: str,
    verbose: bool,
    progress: bool,
    seed: int,
    t0: float,
    only_best: bool = False,
) -> CerarDesign:
    """Run the scheme from every start (or, ``only_best``, from the lowest-objective start, the next
    one only if it fails at once) and return the best final design with the record of all runs."""
    engine = _Engine(N, c, kappa, kappa_D, objective, solver, solver_options)
    # lowest starting objective first: with only_best it is the one run, and a run that reaches
    # the rounding level of zero makes the remaining starts pointless (F >= 0)
    order = sorted(range(len(starts)), key=lambda k: (starts[k][0]["objective_start"], k))
    bar = _progress(max_iter * (1 if only_best else len(starts)), progress, f"CERAR opt N={N} c={c} kappa={kappa:g}")
    runs: dict[int, dict[str, Any]] = {}
    try:
        for k in order:
            runs[k] = _run(
                engine, starts[k][0], max_iter=max_iter, tol=tol, on_failure=on_failure, verbose=verbose, bar=bar
            )
            if (only_best and not runs[k]["failed_first"]) or runs[k]["stop_reason"] == "zero objective":
                break
    finally:
        bar.close()
    if all(r["failed_first"] for r in runs.values()):
        raise SolverError("; ".join(f"start {starts[k][0]['label']}: {r['failure']}" for k, r in runs.items()))
    # the best final objective wins (a start whose first sweep failed competes with its start
    # point); finals within the rounding level of the best are ties, won by the earlier start in
    # the order given (exact, perturbation, Vandermonde, previous cap), not by rounding noise
    best = min(runs, key=lambda k: (runs[k]["history"][-1], k))
    F_best = runs[best]["history"][-1]
    _, tie = _objective_noise(runs[best]["A"], runs[best]["D"], objective, F_best)
    win = min(k for k in runs if runs[k]["history"][-1] <= F_best + tie)
    r = runs[win]
    s0, _, _, info = starts[win]
    metrics = design_metrics(CerarDesign(N, c, r["A"], r["D"], method="optimized"))
    cert_ok = metrics["kappa_A_max"] <= kappa * (1 + CERT_RTOL) and (
        not math.isfinite(kappa_D) or metrics["kappa_D_max"] <= kappa_D * (1 + CERT_RTOL)
    )
    if not cert_ok:  # cannot happen after _certify/clip; kept as the last line of defence
        raise SolverError(f"kappa certificate failed: {metrics['kappa_A_max']}, {metrics['kappa_D_max']}")
    record = []
    for k, (s, _, _, _) in enumerate(starts):
        row = {
            "label": s["label"],
            "eps": s["eps"],
            "fits_caps": s["fits_caps"],
            "kappa_A_max": s["kappa_A_max"],
            "kappa_D_max": s["kappa_D_max"],
            "objective_start": s["objective_start"],
        }
        if k in runs:
            row.update(
                objective_final=runs[k]["history"][-1],
                iterations=runs[k]["iterations"],
                stop_reason=runs[k]["stop_reason"],
            )
        else:
            row.update(objective_final=None, iterations=0, stop_reason="not run")
        record.append(row)
    # the design is built once, complete with its record (designs are immutable)
    return CerarDesign(
        N,
        c,
        r["A"],
        r["D"],
        method="optimized",
        metadata={
            "kappa": kappa,
            "kappa_D_cap": kappa_D if math.isfinite(kappa_D) else None,
            "objective": objective,
            "history": r["history"],
            "statuses": r["statuses"],
            "iterations": r["iterations"],
            "stop_reason": r["stop_reason"],
            "start": s0["label"],
            "starts": record,
            "solver": solver,
            "solver_options": dict(solver_options),
            "seed": seed,
            "max_iter": max_iter,
            "tol": tol,
            "repaired": r["repaired"],
            "kappa_slack": KAPPA_SLACK,
            "cert_rtol": CERT_RTOL,
            "time_s": time.perf_counter() - t0,
            **info,
            **metrics,
        },
    )


def _check_caps(kappa: Any, kappa_D: Any) -> tuple[float, float]:
    kappa = check_real("kappa", 10.0 if kappa is None else kappa, minimum=1.0)
    if kappa_D is None:
        kappa_D = kappa
    elif not (isinstance(kappa_D, (int, float)) and kappa_D == math.inf):
        kappa_D = check_real("kappa_D", kappa_D, minimum=1.0)
    return float(kappa), float(kappa_D)


def _check_solver(solver: Any, solver_options: Any) -> tuple[str, dict]:
    if not isinstance(solver, str):
        raise InvalidArgumentError("solver", f"must be a solver name, got {solver!r}")
    cp = _cp()
    if solver.upper() not in cp.installed_solvers():
        raise InvalidArgumentError("solver", f"{solver!r} is not installed (have {cp.installed_solvers()})")
    solver = solver.upper()
    if solver_options is None:
        solver_options = {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 20000} if solver == "SCS" else {}
    if not isinstance(solver_options, dict):
        raise InvalidArgumentError("solver_options", "must be a dict")
    return solver, solver_options


def optimized_design(
    N: int,
    c: int,
    *,
    kappa: float | None = 10.0,
    kappa_D: float | None = None,
    objective: str = "frobenius",
    init: str | CerarDesign = "auto",
    eps: float | None = None,
    seed: int = 0,
    max_iter: int = 30,
    tol: float = 1e-4,
    solver: str = "SCS",
    solver_options: dict | None = None,
    on_failure: str = "stop",
    verbose: bool = False,
    progress: bool = True,
) -> CerarDesign:
    r"""Encoders/decoders minimising the CERAR error under condition-number caps (alternating SDPs).

    Minimises ``F = sum_{i,m} ||D_i S_{m-1} A_{i-m} - I||_F^2`` (``objective="frobenius"``) or
    ``max_i ||[E_{i,1} ... E_{i,N-1}]||_2`` (``objective="worst"``) subject to
    ``kappa(A_j) <= kappa`` and ``kappa(D_i) <= kappa_D`` by alternating convex D-steps and
    A-steps (see the module docstring and ``docs/theory/55_cerar_opt.md``; a reconstruction
    of the optimization announced in the CERAR abstract, theory §55).

    Parameters
    ----------
    N, c : int
        Ring size (``N >= 2``) and number of components (``c >= 1``).
    kappa : float
        Cap on the condition number of every encoder ``A_j`` (``>= 1``; ``None`` means 10).
    kappa_D : float, optional
        Cap on every decoder ``D_i`` (``c x L``; its ``c``-th singular value is its
        ``sigma_min``). ``None``: same as ``kappa``. ``math.inf``: decoders unconstrained
        (the Frobenius D-step is then closed-form least squares). Note that an exact design
        with ``kappa(A_j) = 1`` has ``kappa(D_i) = sqrt(ceil(L/c) / floor(L/c))`` (``sqrt 2`` for
        ``(N, c) = (4, 4)``), so ``kappa=1`` with the default decoder cap excludes it unless
        ``c | L`` (docs/theory/50_cerar.md, Proposition 2b).
    objective : {"frobenius", "worst"}
    init : {"auto", "perturbation", "vandermonde", "exact", "random"} or CerarDesign
        Starting point(s); each is projected onto the caps with :func:`clip_condition` (only the
        matrices above a cap are touched). ``"auto"`` (default) starts from every analytic family
        gcsim can build for ``(N, c)`` -- the exact design (``c <= N`` or ``N = 2``), the best
        perturbation design (49 values of ``eps`` in ``[1e-6, 1]``) and the best real-node
        Vandermonde design (13 node spacings), "best" meaning the lowest objective among the
        members that meet the caps, or the member closest to meeting them -- runs the scheme
        from each and keeps the lowest final objective. Since the scheme is monotone, the result
        is never worse than any analytic design of these grids that meets the caps.
        ``metadata["start"]`` names the winning start and ``metadata["starts"]`` records every start
        (whether it met the caps before projection, its kappas, starting and final objective,
        sweeps, stop reason). A family name runs from that family's best member only.
    eps : float, optional
        Fixes ``eps`` of the perturbation start (``init="auto"`` or ``"perturbation"``) or the node
        spacing of the Vandermonde start (``init="vandermonde"``) instead of scanning a grid.
    seed : int
        Seed of ``init="random"`` (the rest is deterministic).
    max_iter : int
        Maximum number of sweeps (one D-step and one A-step each) per start.
    tol : float
        Stop when a sweep decreases the objective by at most ``tol`` relative -- or by no more
        than the rounding level of the objective (an absolute floor derived from the data, so
        the rule also fires at an exact design whatever the BLAS kernel); an objective at the
        rounding level of zero stops with ``"zero objective"``.
    solver : str
        cvxpy solver for the SDP blocks, default ``"SCS"`` (CLARABEL's SDP cost explodes with the
        LMI size on small machines).
    solver_options : dict, optional
        Passed to ``problem.solve``; default for SCS ``eps_abs = eps_rel = 1e-7, max_iters = 20000``.
    on_failure : {"stop", "raise"}
        A solver status other than ``"optimal"`` (``"optimal_inaccurate"`` included), or a kappa
        overshoot beyond :data:`KAPPA_SLACK`: keep the previous iterate and stop that start, or
        raise :class:`~gcsim.errors.SolverError`. If every start fails before its first sweep
        completes, ``SolverError`` is raised (nothing was optimized).
    verbose, progress : bool
        Print one line per sweep; show a tqdm progress bar.

    Returns
    -------
    CerarDesign
        ``method="optimized"``; ``metadata`` records the caps, objective, the winning run's objective
        ``history`` (monotone non-increasing, asserted), per-step ``statuses``, ``iterations``,
        ``stop_reason``, ``start`` and ``starts``, solver and options, seed, init (and eps),
        ``time_s``, number of ``repaired`` matrices, and the SVD certificate ``kappa_A`` /
        ``kappa_D`` (per matrix) with the error metrics (see :func:`design_metrics`).

    Raises
    ------
    InvalidArgumentError
        ``kappa < 1``, ``kappa_D < 1``, ``N < 2``, ``c < 1``, unknown objective/init/solver,
        ``init="exact"`` with ``c > N >= 3``.
    SolverError
        Every start fails in its first sweep, or any step fails with ``on_failure="raise"``.

    Examples
    --------
    >>> d = optimized_design(3, 4, kappa=4.0, init="random", max_iter=3, progress=False)
    >>> d.method, bool(max(d.metadata["kappa_A"]) <= 4.0 * (1 + 1e-9))
    ('optimized', True)
    >>> h = d.metadata["history"]; all(b <= a for a, b in zip(h, h[1:]))
    True
    >>> e = optimized_design(4, 2, kappa=1.0, progress=False)      # exact, kappa(A) = kappa(D) = 1
    >>> e.metadata["start"], e.metadata["stop_reason"], e.metadata["frobenius"] == 0.0
    ('exact', 'zero objective', True)
    """
    progress = check_bool("progress", progress)
    verbose = check_bool("verbose", verbose)
    t0 = time.perf_counter()
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    kappa, kappa_D = _check_caps(kappa, kappa_D)
    if objective not in _OBJECTIVES:
        raise InvalidArgumentError("objective", f"must be one of {_OBJECTIVES}, got {objective!r}")
    if not isinstance(init, CerarDesign) and not (isinstance(init, str) and init in _INITS):
        raise InvalidArgumentError("init", f"must be a CerarDesign or one of {_INITS}, got {init!r}")
    if eps is not None:
        eps = check_real("eps", eps, minimum=0.0, strict_min=True)
    seed = check_int("seed", seed, minimum=0)
    max_iter = check_int("max_iter", max_iter, minimum=0)
    tol = check_real("tol", tol, minimum=0.0)
    if on_failure not in ("stop", "raise"):
        raise InvalidArgumentError("on_failure", f"must be 'stop' or 'raise', got {on_failure!r}")
    solver, solver_options = _check_solver(solver, solver_options)
    starts = _starts_for(N, c, init, eps, seed, kappa, kappa_D, objective)
    return _optimize(
        N,
        c,
        starts,
        kappa=kappa,
        kappa_D=kappa_D,
        objective=objective,
        solver=solver,
        solver_options=solver_options,
        max_iter=max_iter,
        tol=tol,
        on_failure=on_failure,
        verbose=verbose,
        progress=progress,
        seed=seed,
        t0=t0,
    )


def _project(d: CerarDesign, kappa: float, kappa_D: float) -> CerarDesign:
    """The design with every encoder (decoder) above the cap ``kappa`` (``kappa_D``) clipped to it."""
    return CerarDesign(
        d.N, d.c, _clip_over(d.encoders, kappa), _clip_over(d.decoders, kappa_D), method=d.method, metadata=d.metadata
    )


def _fix_gauge(A: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rescale ``A -> A / g, D -> D g`` with ``g = min_j sigma_min(A_j)`` (E unchanged, kappa unchanged)."""
    g = float(np.min(np.linalg.svd(A, compute_uv=False)[:, -1]))
    if not (g > 0 and math.isfinite(g)):
        return A, D
    return A / g, D * g


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return _NoBar()
    return progress_bar(total=total, desc=desc)  # a bar on a terminal, lines on a pipe (gcsim._progress)
