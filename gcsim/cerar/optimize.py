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

# The pieces of the scheme (objective, block data, cvxpy blocks, closed-form steps, rounding
# level) are in _optimize_blocks, the starting points in _optimize_starts; this module runs the
# scheme, checks every step's solution and holds the public entry.

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._progress import progress_bar
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError, SolverError
from ._optimize_blocks import (
    _a_block,
    _a_data,
    _Block,
    _cp,
    _d_block,
    _d_data,
    _fix_gauge,
    _JointWorstA,
    _least_squares_decoders,
    _objective,
    _objective_noise,
    _polar_factor,
    _procrustes_encoders,
    _unit_kappa_decoders,
    clip_condition,
)
from ._optimize_starts import _starts_for
from .constructions import _check_design_size
from .design import CerarDesign
from .metrics import CERT_RTOL, condition_numbers, design_metrics

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
_INITS = ("auto", "perturbation", "vandermonde", "exact", "random")


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


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return _NoBar()
    return progress_bar(total=total, desc=desc)  # a bar on a terminal, lines on a pipe (gcsim._progress)
