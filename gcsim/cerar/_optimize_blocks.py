"""The pieces of the CERAR optimizer's alternating scheme (:mod:`gcsim.cerar.optimize`).

The objective and the cap projection (:func:`clip_condition`, re-exported by
:mod:`gcsim.cerar.optimize`), the data of the D- and A-blocks, the convex blocks assembled once
in cvxpy (DPP: re-solved with new parameter values), the closed-form block steps used where an
SDP block has no interior (caps of 1, or no decoder cap), the gauge fix and the rounding level of
the computed objective (the stopping rule's absolute floor).  Docs: docs/theory/55_cerar_opt.md.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._optional import require
from .metrics import error_operators, gamma, worker_norms
from .ring import num_rounds

__all__ = ["clip_condition"]


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
    >>> from gcsim.cerar.metrics import condition_numbers
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


def _fix_gauge(A: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rescale ``A -> A / g, D -> D g`` with ``g = min_j sigma_min(A_j)`` (E unchanged, kappa unchanged)."""
    g = float(np.min(np.linalg.svd(A, compute_uv=False)[:, -1]))
    if not (g > 0 and math.isfinite(g)):
        return A, D
    return A / g, D * g
