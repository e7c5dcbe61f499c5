"""Condition-number-constrained optimization of CERAR encoders and decoders.

Problem (SPEC §5, a reconstruction; the source paper is known to us only by its
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

Every accepted step is re-checked with NumPy: the condition numbers by SVD (the
*certificate*) and the objective from the arrays. A step whose objective does not
decrease is rejected, so the recorded objective history is monotone non-increasing
by construction (and asserted).
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Any, Sequence

import numpy as np

from .._validation import check_int, check_real
from ..errors import InvalidArgumentError, SolverError
from .design import CerarDesign, error_operators, num_rounds

__all__ = [
    "condition_numbers",
    "clip_condition",
    "frobenius_error",
    "worst_case_error",
    "design_metrics",
    "optimized_design",
    "pareto_front",
    "KAPPA_SLACK",
    "CERT_RTOL",
]

#: Relative slack allowed between the cap and the SVD-measured kappa of a raw solver
#: output. Beyond it the step counts as a solver failure; within it the matrix is
#: repaired by :func:`clip_condition` (SCS solves to ~1e-6, so overshoots are ~1e-5).
KAPPA_SLACK = 1e-3
#: Relative tolerance of the final certificate ``kappa_svd <= cap * (1 + CERT_RTOL)``;
#: it covers only the rounding of the SVD itself (about ``c * u * kappa``).
CERT_RTOL = 1e-9

_OBJECTIVES = ("frobenius", "worst")
_INITS = ("perturbation", "vandermonde", "exact", "random")


# ---------------------------------------------------------------------------
# metrics (pure NumPy)

def condition_numbers(X: np.ndarray) -> np.ndarray:
    """2-norm condition numbers ``sigma_1 / sigma_r`` of a stack of matrices, ``r = min(p, q)``.

    Parameters
    ----------
    X : array_like, shape (..., p, q)

    Returns
    -------
    ndarray, shape (...)
        ``inf`` where the ``r``-th singular value is zero.

    Examples
    --------
    >>> condition_numbers(np.diag([4.0, 2.0])).round(12)
    np.float64(2.0)
    >>> condition_numbers(np.array([[[1.0, 0, 0], [0, 0.5, 0]]])).round(12)
    array([2.])
    """
    sv = np.linalg.svd(np.asarray(X, dtype=float), compute_uv=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = sv[..., 0] / sv[..., -1]
    return np.where(sv[..., -1] > 0, k, np.inf)


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


def frobenius_error(design: CerarDesign) -> float:
    """``F = sum_{i,m} ||E_{i,m}||_F^2`` (divide by ``N c`` for the per-worker relative MSE).

    Examples
    --------
    >>> from gcsim.cerar.design import CerarDesign
    >>> d = CerarDesign(2, 1, np.ones((2, 1, 1)), np.ones((2, 1, 1)))
    >>> frobenius_error(d)
    0.0
    """
    E = design.error_operators()
    return float(np.sum(E * E))


def worst_case_error(design: CerarDesign) -> float:
    """``max_i ||[E_{i,1} ... E_{i,N-1}]||_2`` (spectral norm of each worker's block row).

    Examples
    --------
    >>> from gcsim.cerar.design import CerarDesign
    >>> d = CerarDesign(2, 1, np.ones((2, 1, 1)), 2 * np.ones((2, 1, 1)))
    >>> worst_case_error(d)
    1.0
    """
    return float(np.max(_worker_norms(design.error_operators())))


def _worker_norms(E: np.ndarray) -> np.ndarray:
    N, M, c, _ = E.shape
    rows = np.moveaxis(E, 1, 2).reshape(N, c, M * c)        # [E_{i,1} ... E_{i,N-1}]
    return np.linalg.svd(rows, compute_uv=False)[:, 0]


def design_metrics(design: CerarDesign) -> dict[str, Any]:
    """Error metrics and SVD condition numbers of a design (JSON-ready floats and lists).

    Keys: ``frobenius``, ``mean_relative_mse`` (``frobenius / (N^2 c)``: the worker average of
    ``sum_m ||E_{i,m}||_F^2 / (N c)``, the relative MSE for isotropic gradients, as in
    :mod:`gcsim.cerar.analysis`), ``worst_case``, ``worker_errors`` (per-worker spectral norms), ``kappa_A`` / ``kappa_D`` (per matrix),
    ``kappa_A_max``, ``kappa_D_max``, ``kappa_max``.
    """
    E = design.error_operators()
    kA = condition_numbers(design.encoders)
    kD = condition_numbers(design.decoders)
    fro = float(np.sum(E * E))
    w = _worker_norms(E)
    return {
        "frobenius": fro,
        "mean_relative_mse": fro / (design.N ** 2 * design.c),
        "worst_case": float(np.max(w)),
        "worker_errors": [float(x) for x in w],
        "kappa_A": [float(x) for x in kA],
        "kappa_D": [float(x) for x in kD],
        "kappa_A_max": float(np.max(kA)),
        "kappa_D_max": float(np.max(kD)),
        "kappa_max": float(max(np.max(kA), np.max(kD))),
    }


def _objective(A: np.ndarray, D: np.ndarray, objective: str) -> float:
    E = error_operators(A, D)
    if objective == "frobenius":
        return float(np.sum(E * E))
    return float(np.max(_worker_norms(E)))


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
    for m in range(1, N):               # N-1 slices, each batched over workers
        W[:, m - 1:m - 1 + c, (m - 1) * c:m * c] = A[(i - m) % N]
    return W


def _a_data(D: np.ndarray) -> np.ndarray:
    """``M_j`` of shape (N, (N-1)c, c): the stacked windows ``D_{j+m} S_{m-1}``, m = 1..N-1."""
    N, c, _ = D.shape
    U = _windows(D, N)                                    # U[i, m-1]
    j = np.arange(N)[:, None]
    m = np.arange(1, N)[None, :]
    blocks = U[(j + m) % N, m - 1]                        # (N, N-1, c, c)
    return blocks.reshape(N, (N - 1) * c, c)


def _polar_factor(X: np.ndarray) -> np.ndarray:
    """Co-isometric polar factor ``Q = U V^T`` of ``X = U Sigma V^T`` (thin SVD), stacked."""
    U, _, Vt = np.linalg.svd(X, full_matrices=False)
    return U @ Vt


# ---------------------------------------------------------------------------
# convex blocks (cvxpy, built once and re-solved with new parameter values)

def _cp():
    import cvxpy as cp  # imported lazily: cvxpy is slow to import

    return cp


def _norm_lmi(cp, X, bound, p: int, q: int):
    """``||X||_2 <= bound`` as the Schur LMI ``[[bound I_p, X], [X^T, bound I_q]] >= 0`` (X is p x q)."""
    return cp.bmat([[bound * np.eye(p), X], [X.T, bound * np.eye(q)]]) >> 0


def _kappa_constraints(cp, X, Q, t, kappa: float, p: int, q: int) -> list:
    """Inner approximation of ``kappa(X) <= kappa`` around the iterate with polar factor ``Q`` (p <= q).

    ``sym(X Q^T) >= t I_p`` implies ``sigma_p(X) >= t`` and the Schur LMI gives
    ``sigma_1(X) <= kappa t``.
    """
    M = X @ Q.T
    return [(M + M.T) / 2 - t * np.eye(p) >> 0, _norm_lmi(cp, X, kappa * t, p, q)]


def _solve(problem, solver: str, opts: dict) -> str:
    """Solve (warm-started); an SCS ``optimal_inaccurate`` gets one retry with 5x the iterations.

    Returns the final status string (``"error: ..."`` if the solver raised).
    """
    try:
        with warnings.catch_warnings():   # cvxpy warns on inaccurate solutions: the status is checked
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
        s = cp.Variable(nonneg=True)          # free scale: the constraint set is a cone
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
    cons = _kappa_constraints(cp, X, Q, t, kappa_A, c, c) + [t >= 1]   # t >= 1 fixes the gauge
    prob = cp.Problem(cp.Minimize(cp.sum_squares(M @ X - T)), cons)
    return _Block(prob, X, {"M": M, "Q": Q}, solver, opts)


class _JointWorstA:
    """A-step of the worst-case objective: one SDP over all encoders (they share the max over workers)."""

    def __init__(self, N: int, c: int, kappa_A: float, solver: str, opts: dict):
        cp = _cp()
        self.N, self.c = N, c
        self.X = [cp.Variable((c, c)) for _ in range(N)]
        self.Q = [cp.Parameter((c, c)) for _ in range(N)]
        self.U = cp.Parameter((N * (N - 1) * c, c))          # all windows D_i S_{m-1}, stacked
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
                blocks.append(self.U[r:r + c, :] @ self.X[(i - m) % N] - I)
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
# initial points

def _least_squares_decoders(A: np.ndarray) -> np.ndarray:
    """Unconstrained Frobenius-optimal decoders given A: D_i = [I ... I] W_i^+ (batched)."""
    N, c, _ = A.shape
    W = _d_data(A)
    T = np.tile(np.eye(c), (1, N - 1))
    return T @ np.linalg.pinv(W)


_EPS_GRID = np.geomspace(1e-6, 1.0, 49)


def _matched_perturbation(N: int, c: int, kappa: float, kappa_D: float, eps: float | None,
                          objective: str = "frobenius", grid: Sequence[float] | None = None
                          ) -> tuple[CerarDesign, float]:
    """The perturbation design with ``eps`` given, or (``eps=None``) the best one that fits the caps.

    ``kappa(A_j) = Theta(eps^{-r*})`` for small ``eps`` but the spread ``(1+eps)^q`` makes kappa grow
    again for large ``eps``, so kappa is not monotone in ``eps``: scan a grid (default 49 log-spaced
    values in ``[1e-6, 1]``) and keep the lowest-objective design whose kappas fit the caps (if none fits,
    the one with the smallest kappa; the caller clips it).
    """
    from . import constructions

    if eps is not None:
        return constructions.design(N, c, "perturbation", eps=eps), float(eps)
    best, best_key = None, None
    for e in (_EPS_GRID if grid is None else grid):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # ill-conditioned members are expected
            d = constructions.design(N, c, "perturbation", eps=float(e))
        kA = float(np.max(condition_numbers(d.encoders)))
        kD = float(np.max(condition_numbers(d.decoders))) if math.isfinite(kappa_D) else 1.0
        fits = kA <= kappa and kD <= kappa_D
        key = (0, _objective(d.encoders, d.decoders, objective)) if fits else (1, max(kA / kappa, kD / kappa_D))
        if best_key is None or key < best_key:
            best, best_key = (d, float(e)), key
    return best


def _initial_point(N: int, c: int, init: Any, eps: float | None, seed: int, kappa: float,
                   kappa_D: float, objective: str = "frobenius") -> tuple[np.ndarray, np.ndarray, dict]:
    info: dict[str, Any] = {}
    if isinstance(init, CerarDesign):
        if (init.N, init.c) != (N, c):
            raise InvalidArgumentError("init", f"design has (N, c) = {(init.N, init.c)}, expected {(N, c)}")
        A, D = init.encoders.copy(), init.decoders.copy()
        info["init"] = init.method
    elif init == "random":
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((N, c, c))
        D = None
        info["init"] = "random"
    elif init == "perturbation":
        d, e = _matched_perturbation(N, c, kappa, kappa_D, eps, objective)
        A, D = d.encoders.copy(), d.decoders.copy()
        info.update(init="perturbation", eps=e)
    elif init in ("vandermonde", "exact"):
        from . import constructions

        kw = {} if eps is None else {"eps": eps}
        d = constructions.design(N, c, init, **kw)
        A, D = d.encoders.copy(), d.decoders.copy()
        info["init"] = init
    else:
        raise InvalidArgumentError("init", f"must be a CerarDesign or one of {_INITS}, got {init!r}")
    A = clip_condition(A, kappa)
    if D is None:
        D = _least_squares_decoders(A)
    if math.isfinite(kappa_D):
        D = clip_condition(D, kappa_D)
    return A, D, info


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


def optimized_design(N: int, c: int, *, kappa: float | None = 10.0, kappa_D: float | None = None,
                     objective: str = "frobenius", init: str | CerarDesign = "perturbation",
                     eps: float | None = None, seed: int = 0, max_iter: int = 30, tol: float = 1e-4,
                     solver: str = "SCS", solver_options: dict | None = None,
                     on_failure: str = "stop", verbose: bool = False,
                     progress: bool = True) -> CerarDesign:
    r"""Encoders/decoders minimising the CERAR error under condition-number caps (alternating SDPs).

    Minimises ``F = sum_{i,m} ||D_i S_{m-1} A_{i-m} - I||_F^2`` (``objective="frobenius"``) or
    ``max_i ||[E_{i,1} ... E_{i,N-1}]||_2`` (``objective="worst"``) subject to
    ``kappa(A_j) <= kappa`` and ``kappa(D_i) <= kappa_D`` by alternating convex D-steps and
    A-steps (see the module docstring and ``docs/theory/55_cerar_opt.md``; a reconstruction
    of the optimization announced in the CERAR abstract, SPEC §5).

    Parameters
    ----------
    N, c : int
        Ring size (``N >= 2``) and number of components (``c >= 1``).
    kappa : float
        Cap on the condition number of every encoder ``A_j`` (``>= 1``; ``None`` means 10).
    kappa_D : float, optional
        Cap on every decoder ``D_i`` (``c x L``; its ``c``-th singular value is its
        ``sigma_min``). ``None``: same as ``kappa``. ``math.inf``: decoders unconstrained
        (the Frobenius D-step is then closed-form least squares).
    objective : {"frobenius", "worst"}
    init : {"perturbation", "vandermonde", "exact", "random"} or CerarDesign
        Starting point; it is first projected onto the caps with :func:`clip_condition`.
        ``"perturbation"`` with ``eps=None`` picks the smallest ``eps`` whose design already
        satisfies the caps (bisection), which makes the result never worse than that design.
    eps : float, optional
        ``eps`` of the perturbation initial design.
    seed : int
        Seed of ``init="random"`` (the rest is deterministic).
    max_iter : int
        Maximum number of sweeps (one D-step and one A-step each).
    tol : float
        Stop when a sweep decreases the objective by less than ``tol`` relative.
    solver : str
        cvxpy solver for the SDP blocks, default ``"SCS"`` (CLARABEL's SDP cost explodes with the
        LMI size on small machines).
    solver_options : dict, optional
        Passed to ``problem.solve``; default for SCS ``eps_abs = eps_rel = 1e-7, max_iters = 20000``.
    on_failure : {"stop", "raise"}
        A solver status other than ``"optimal"`` (``"optimal_inaccurate"`` included), or a kappa
        overshoot beyond :data:`KAPPA_SLACK`: keep the previous iterate and stop, or raise
        :class:`~gcsim.errors.SolverError`. A failure before the first sweep completes always
        raises (nothing was optimized).
    verbose, progress : bool
        Print one line per sweep; show a tqdm progress bar.

    Returns
    -------
    CerarDesign
        ``method="optimized"``; ``params`` records the caps, objective, objective ``history``
        (monotone non-increasing, asserted), per-step ``statuses``, ``iterations``,
        ``stop_reason``, solver and options, seed, init (and eps), ``time_s``, number of
        ``repaired`` matrices, and the SVD certificate ``kappa_A`` / ``kappa_D`` (per matrix)
        with the error metrics (see :func:`design_metrics`).

    Raises
    ------
    InvalidArgumentError
        ``kappa < 1``, ``kappa_D < 1``, ``N < 2``, ``c < 1``, unknown objective/init/solver.
    SolverError
        The solver fails in the first step, or at any step with ``on_failure="raise"``.

    Examples
    --------
    >>> d = optimized_design(3, 4, kappa=4.0, init="random", max_iter=3, progress=False)
    >>> d.method, bool(max(d.params["kappa_A"]) <= 4.0 * (1 + 1e-9))
    ('optimized', True)
    >>> h = d.params["history"]; all(b <= a for a, b in zip(h, h[1:]))
    True
    """
    t0 = time.perf_counter()
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    kappa = check_real("kappa", 10.0 if kappa is None else kappa, minimum=1.0)
    if kappa_D is None:
        kappa_D = kappa
    elif not (isinstance(kappa_D, (int, float)) and kappa_D == math.inf):
        kappa_D = check_real("kappa_D", kappa_D, minimum=1.0)
    kappa_D = float(kappa_D)
    if objective not in _OBJECTIVES:
        raise InvalidArgumentError("objective", f"must be one of {_OBJECTIVES}, got {objective!r}")
    if not isinstance(init, CerarDesign) and not (isinstance(init, str) and init in _INITS):
        raise InvalidArgumentError("init", f"must be a CerarDesign or one of {_INITS}, got {init!r}")
    seed = check_int("seed", seed, minimum=0)
    max_iter = check_int("max_iter", max_iter, minimum=0)
    tol = check_real("tol", tol, minimum=0.0)
    if on_failure not in ("stop", "raise"):
        raise InvalidArgumentError("on_failure", f"must be 'stop' or 'raise', got {on_failure!r}")
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

    A, D, info = _initial_point(N, c, init, eps, seed, kappa, kappa_D, objective)
    A, D = _fix_gauge(A, D)
    F = _objective(A, D, objective)
    history = [F]
    statuses: list[dict[str, Any]] = []
    repaired = 0

    closed_form_D = (not math.isfinite(kappa_D)) and objective == "frobenius"
    # kappa = 1: the feasible encoders are the scaled orthogonal matrices, where the SDP has no
    # interior (SCS stalls) but the Frobenius A-step is a scaled orthogonal Procrustes problem.
    procrustes_A = kappa == 1.0 and objective == "frobenius"
    d_blocks = None if closed_form_D else [_d_block(N, c, kappa_D, objective, solver, solver_options)
                                           for _ in range(N)]
    if procrustes_A:
        pass
    elif objective == "frobenius":
        a_blocks = [_a_block(N, c, kappa, solver, solver_options) for _ in range(N)]
    else:
        a_joint = _JointWorstA(N, c, kappa, solver, solver_options)

    def fail(step: str, it: int, st: list[str]) -> str:
        msg = f"{step}-step of sweep {it}: solver status {sorted(set(st))} (or kappa overshoot > {KAPPA_SLACK})"
        if on_failure == "raise" or iterations == 0:
            raise SolverError(msg)
        return msg

    def d_step() -> tuple[list[str], np.ndarray | None]:
        if closed_form_D:
            return ["closed_form"], _least_squares_decoders(A)
        W = _d_data(A)
        Q = _polar_factor(D) if math.isfinite(kappa_D) else None
        out, st = [], []
        for i, blk in enumerate(d_blocks):
            vals = {"W": W[i]}
            if Q is not None:
                vals["Q"] = Q[i]
            s, X = blk.solve(vals)
            st.append(s)
            out.append(X)
        if any(s != "optimal" for s in st):
            return st, None
        return st, np.stack(out)

    def a_step() -> tuple[list[str], np.ndarray | None]:
        if procrustes_A:
            return ["closed_form"], _procrustes_encoders(D)
        if objective == "worst":
            s, X = a_joint.solve(D, A)
            return [s], (X if s == "optimal" else None)
        M = _a_data(D)
        Q = _polar_factor(A)
        out, st = [], []
        for j, blk in enumerate(a_blocks):
            s, X = blk.solve({"M": M[j], "Q": Q[j]})
            st.append(s)
            out.append(X)
        if any(s != "optimal" for s in st):
            return st, None
        return st, np.stack(out)

    stop_reason = "max_iter"
    iterations = 0
    bar = _progress(max_iter, progress, f"CERAR opt N={N} c={c} kappa={kappa:g}")
    try:
        for it in range(1, max_iter + 1):
            F_start = F
            failed = None
            for step in ("D", "A"):
                st, X = d_step() if step == "D" else a_step()
                cap = kappa_D if step == "D" else kappa
                if X is not None:
                    X, nrep = _certify(X, cap)
                if X is None:
                    failed = fail(step, it, st)
                    statuses.append({"sweep": it, "step": step, "statuses": sorted(set(st)),
                                     "accepted": False, "objective": F})
                    break
                newA, newD = (A, X) if step == "D" else _fix_gauge(X, D)
                F_new = _objective(newA, newD, objective)
                accepted = F_new <= F          # rejecting non-decreasing steps keeps the history monotone
                if accepted:
                    A, D, F = newA, newD, F_new
                    repaired += nrep
                history.append(F)
                statuses.append({"sweep": it, "step": step, "statuses": sorted(set(st)),
                                 "accepted": bool(accepted), "objective": F})
            if failed is not None:
                stop_reason = f"solver failure: {failed}"
                break
            iterations = it
            bar.update(1)
            if verbose:
                print(f"sweep {it}: objective {F:.6e}")
            if F_start - F <= tol * max(F_start, np.finfo(float).tiny):
                stop_reason = "converged" if F_start > 0 else "zero objective"
                break
    finally:
        bar.close()

    assert all(b <= a for a, b in zip(history, history[1:])), "objective history must be monotone"
    design = CerarDesign(N, c, A, D, method="optimized")
    metrics = design_metrics(design)
    cert_ok = metrics["kappa_A_max"] <= kappa * (1 + CERT_RTOL) and (
        not math.isfinite(kappa_D) or metrics["kappa_D_max"] <= kappa_D * (1 + CERT_RTOL))
    if not cert_ok:   # cannot happen after _certify/clip; kept as the last line of defence
        raise SolverError(f"kappa certificate failed: {metrics['kappa_A_max']}, {metrics['kappa_D_max']}")
    design.params = {
        "kappa": kappa,
        "kappa_D_cap": kappa_D if math.isfinite(kappa_D) else None,
        "objective": objective,
        "history": history,
        "statuses": statuses,
        "iterations": iterations,
        "stop_reason": stop_reason,
        "solver": solver,
        "solver_options": dict(solver_options),
        "seed": seed,
        "max_iter": max_iter,
        "tol": tol,
        "repaired": repaired,
        "kappa_slack": KAPPA_SLACK,
        "cert_rtol": CERT_RTOL,
        "time_s": time.perf_counter() - t0,
        **info,
        **metrics,
    }
    return design


def _procrustes_encoders(D: np.ndarray) -> np.ndarray:
    """Frobenius A-step at kappa = 1: ``min_{t, O^T O = I} ||M_j t O - T||_F^2`` for every j (batched).

    Expanding, ``t^2 ||M||_F^2 - 2 t tr(O^T M^T T) + const``: ``O = U V^T`` from the SVD
    ``M^T T = U Sigma V^T`` (orthogonal Procrustes) and ``t = tr(Sigma) / ||M||_F^2``.
    """
    N, c, _ = D.shape
    M = _a_data(D)
    B = np.swapaxes(M, 1, 2) @ np.tile(np.eye(c), (N - 1, 1))       # M_j^T T = sum of windows^T
    U, sig, Vt = np.linalg.svd(B)
    nrm = np.sum(M * M, axis=(1, 2))
    t = np.where(nrm > 0, sig.sum(axis=1) / np.where(nrm > 0, nrm, 1.0), 1.0)
    t = np.where(t > 0, t, 1.0)
    return t[:, None, None] * (U @ Vt)


def _project(d: CerarDesign, kappa: float, kappa_D: float) -> CerarDesign:
    """The design with every encoder (decoder) clipped to the cap ``kappa`` (``kappa_D``)."""
    D = clip_condition(d.decoders, kappa_D) if math.isfinite(kappa_D) else d.decoders
    return CerarDesign(d.N, d.c, clip_condition(d.encoders, kappa), D, method=d.method, params=dict(d.params))


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
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False)


# ---------------------------------------------------------------------------
# Pareto front

def _interp_loglog(x: np.ndarray, y: np.ndarray, x0: float) -> float:
    """Log-log interpolation of a curve y(x) at x0 (NaN outside the sampled range)."""
    order = np.argsort(x)
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    if len(x) == 0 or x0 < x[0] or x0 > x[-1]:
        return float("nan")
    return float(np.exp(np.interp(np.log(x0), np.log(x), np.log(y))))


def _best_under(kappas: np.ndarray, errors: np.ndarray, cap: float) -> float:
    """Smallest error among the sampled designs with kappa <= cap (the achievable front at cap)."""
    ok = kappas <= cap * (1 + CERT_RTOL)
    return float(np.min(errors[ok])) if np.any(ok) else float("nan")


def pareto_front(N: int, c: int, kappas: Sequence[float], *, eps_grid: Sequence[float] | None = None,
                 vandermonde_grid: Sequence[float] | None = None, progress: bool = True,
                 return_designs: bool = False, starts: str = "both", **kw: Any):
    """Error versus condition-number cap: optimized designs against the analytic constructions.

    For each cap ``kappa`` in ``kappas`` (increasing), :func:`optimized_design` runs with
    ``kappa_D = kappa`` (unless ``kappa_D`` is given in ``kw``) from two starts: the best
    perturbation design that fits the cap, and the previous cap's optimum (feasible for the
    larger cap, so the optimized front is non-increasing in ``kappa``); the better final
    result is kept (``starts="both"``), or only the start with the lower objective is run
    (``starts="best"``, half the cost).
    The perturbation design is swept over ``eps_grid`` (default: 49 log-spaced values in
    ``[1e-6, 1]``; the same grid supplies the matched start, so the optimized error is never
    above the best perturbation design that fits the cap) and, when the constructions module
    provides it, the real-node Vandermonde design over ``vandermonde_grid`` (its ``eps``).
    Each analytic family is compared at equal kappa as the best error among its sampled
    designs whose ``kappa_max`` fits the cap.

    Returns
    -------
    pandas.DataFrame
        One row per (family, sample): ``N, c, family, kappa_cap, eps, kappa_A_max,
        kappa_D_max, kappa_max, frobenius, mean_relative_mse, worst_case, iterations, time_s,
        stop_reason``; optimized rows also carry ``pert_frobenius_at_cap``,
        ``vand_frobenius_at_cap`` and ``ratio_opt_pert`` (optimized / perturbation Frobenius
        error at equal kappa).
    list of CerarDesign
        Only with ``return_designs=True``: the optimized designs of the caps whose optimization
        succeeded, in increasing cap (the return value is then ``(table, designs)``). A cap where
        every start raised :class:`~gcsim.errors.SolverError` gets a row with NaN errors and the
        messages in ``stop_reason``.

    Examples
    --------
    >>> t = pareto_front(3, 4, [5.0], max_iter=2, progress=False, eps_grid=[0.1, 0.3])
    >>> sorted(set(t.family)), int((t.family == "optimized").sum())
    (['optimized', 'perturbation', 'vandermonde'], 1)
    """
    import pandas as pd

    from . import constructions

    if starts not in ("both", "best"):
        raise InvalidArgumentError("starts", f"must be 'both' or 'best', got {starts!r}")
    starts_mode = starts
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    kappas = np.sort(np.asarray([check_real("kappas", k, minimum=1.0) for k in kappas], dtype=float))
    if len(kappas) == 0:
        raise InvalidArgumentError("kappas", "must be a non-empty sequence of caps >= 1")
    eps_grid = _EPS_GRID if eps_grid is None else np.asarray(eps_grid, float)
    if vandermonde_grid is None:   # real nodes 1 + eps (k - (c-1)/2) must stay positive: eps < 2/(c-1)
        vandermonde_grid = np.geomspace(1e-3, 0.95 * 2 / (c - 1) if c > 1 else 1.0, 13)
    vandermonde_grid = np.asarray(vandermonde_grid, float)

    rows: list[dict[str, Any]] = []

    def analytic_row(family: str, d: CerarDesign, e: float) -> dict[str, Any]:
        m = design_metrics(d)
        return {"N": N, "c": c, "family": family, "kappa_cap": np.nan, "eps": e,
                **{k: m[k] for k in ("kappa_A_max", "kappa_D_max", "kappa_max", "frobenius",
                                     "mean_relative_mse", "worst_case")}}

    with warnings.catch_warnings():   # the sweep deliberately visits ill-conditioned designs
        warnings.simplefilter("ignore", RuntimeWarning)
        for e in eps_grid:
            rows.append(analytic_row("perturbation", constructions.design(N, c, "perturbation", eps=float(e)),
                                     float(e)))
        for e in vandermonde_grid:
            try:
                d = constructions.design(N, c, "vandermonde", eps=float(e))
            except (TypeError, NotImplementedError, ValueError):   # nodes out of range or singular
                continue
            rows.append(analytic_row("vandermonde", d, float(e)))

    analytic = pd.DataFrame(rows)
    pert = analytic[analytic.family == "perturbation"]
    vand = analytic[analytic.family == "vandermonde"]
    prev: CerarDesign | None = None
    kw = dict(kw)
    kw["progress"] = False
    objective = kw.get("objective", "frobenius")
    designs: list[CerarDesign] = []
    bar = _progress(len(kappas), progress, f"Pareto N={N} c={c}")
    for k in kappas:
        kD = kw.get("kappa_D", k)
        kD = math.inf if kD is None else float(kD)
        start, e0 = _matched_perturbation(N, c, float(k), kD, None, objective, eps_grid)
        starts = [_project(start, float(k), kD)]
        starts_label_pert = starts[0]
        if prev is not None:   # the previous optimum is feasible for this larger cap
            starts.append(prev)
        if starts_mode == "best":   # lower objective first; the other one only as a fallback
            starts.sort(key=lambda s: _objective(s.encoders, s.decoders, objective))
        opts = {key: v for key, v in kw.items() if key not in ("kappa_D", "init", "eps")}
        runs, labels, failures = [], [], []
        for s in starts:
            label = "perturbation" if s is starts_label_pert else "previous cap"
            try:
                runs.append(optimized_design(N, c, kappa=float(k), kappa_D=kD, init=s, **opts))
                labels.append(label)
            except SolverError as exc:   # a failed start is recorded, not fatal to the sweep
                failures.append(f"{label}: {exc}")
                continue
            if starts_mode == "best":
                break
        bar.update(1)
        if not runs:
            rows.append({"N": N, "c": c, "family": "optimized", "kappa_cap": float(k), "eps": e0,
                         "frobenius": np.nan, "stop_reason": "; ".join(failures)})
            continue
        best = int(np.argmin([r.params["history"][-1] for r in runs]))
        d = runs[best]
        d.params["start"] = labels[best]
        d.params["failed_starts"] = failures
        prev = d
        designs.append(d)
        p = d.params
        col = "kappa_max" if math.isfinite(kD) else "kappa_A_max"   # compare the capped matrices only
        pf = _best_under(pert[col].to_numpy(), pert.frobenius.to_numpy(), k)
        vf = _best_under(vand[col].to_numpy(), vand.frobenius.to_numpy(), k) if len(vand) else np.nan
        rows.append({"N": N, "c": c, "family": "optimized", "kappa_cap": float(k), "eps": e0,
                     **{key: p[key] for key in ("kappa_A_max", "kappa_D_max", "kappa_max", "frobenius",
                                                "mean_relative_mse", "worst_case")},
                     "iterations": p["iterations"], "time_s": sum(r.params["time_s"] for r in runs),
                     "stop_reason": p["stop_reason"], "start": p["start"],
                     "pert_frobenius_at_cap": pf, "vand_frobenius_at_cap": vf,
                     "ratio_opt_pert": p["frobenius"] / pf if pf and np.isfinite(pf) and pf > 0 else np.nan})
    bar.close()
    table = pd.DataFrame(rows)
    return (table, designs) if return_designs else table
