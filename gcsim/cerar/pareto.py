"""The Pareto sweep of CERAR designs: error versus condition-number cap (docs/theory.md §55).

For each cap, the optimizer (:func:`gcsim.cerar.optimize.optimized_design`'s alternating scheme)
runs from the analytic designs and from the previous cap's optimum; every analytic family is
compared with it at equal kappa.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError, SolverError
from ..sweep import check_scheduler, run_sweep, sweep_client
from ._optimize_starts import _EPS_GRID, _analytic_starts, _family_members, _start, _vandermonde_grid
from .design import CerarDesign
from .metrics import CERT_RTOL, design_metrics
from .optimize import _OBJECTIVES, _check_caps, _check_solver, _optimize, _progress

__all__ = ["pareto_front"]


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


def _analytic_rows(N: int, c: int, member: tuple[str, float]) -> list[dict[str, Any]]:
    """The table row of one analytic design (``family``, ``eps``), or no row if it cannot be built."""
    family, e = member
    rows = []
    for d, eps in _family_members(N, c, family, [e]):
        m = design_metrics(d)
        rows.append(
            {
                "N": N,
                "c": c,
                "family": family,
                "kappa_cap": np.nan,
                "eps": eps,
                **{
                    k: m[k]
                    for k in ("kappa_A_max", "kappa_D_max", "kappa_max", "frobenius", "mean_relative_mse", "worst_case")
                },
            }
        )
    return rows


def _cap_point(
    N: int,
    c: int,
    prev: CerarDesign | None,
    families: dict[str, dict[str, np.ndarray]],
    settings: dict[str, Any],
    k: float,
) -> tuple[dict[str, Any], CerarDesign | None]:
    """One point of the front: optimize at cap ``k`` (from the analytic starts and ``prev``).

    Returns the table row and the optimized design (``None`` when every start failed).
    """
    t0 = time.perf_counter()  # measured where the task runs
    objective = settings["objective"]
    kD_arg = settings["kappa_D"]
    kA, kD = _check_caps(float(k), float(k) if kD_arg == "same" else kD_arg)
    cand = _analytic_starts(
        N,
        c,
        kA,
        kD,
        objective,
        eps_grid=settings["eps_grid"],
        vandermonde_grid=settings["vandermonde_grid"],
    )
    if prev is not None:  # the previous optimum is feasible for this larger cap
        cand.append(_start("previous cap", prev.encoders, prev.decoders, kA, kD, objective))
    st = [(s, s["A"], s["D"], {"init": "pareto", **({"eps": s["eps"]} if s["eps"] is not None else {})}) for s in cand]
    e0 = next((s["eps"] for s in cand if s["label"] == "perturbation"), np.nan)
    try:
        d = _optimize(
            N,
            c,
            st,
            kappa=kA,
            kappa_D=kD,
            objective=objective,
            solver=settings["solver"],
            solver_options=settings["solver_options"],
            max_iter=settings["max_iter"],
            tol=settings["tol"],
            on_failure=settings["on_failure"],
            verbose=settings["verbose"],
            progress=False,
            seed=settings["seed"],
            t0=t0,
            only_best=settings["only_best"],
        )
    except SolverError as exc:  # a cap where every start failed is recorded, not fatal to the sweep
        failed = {"N": N, "c": c, "family": "optimized", "kappa_cap": float(k), "eps": e0, "frobenius": np.nan}
        return {**failed, "stop_reason": str(exc)}, None
    p = d.metadata
    col = "kappa_max" if math.isfinite(kD) else "kappa_A_max"  # compare the capped matrices only
    pert, vand = families.get("perturbation", {}), families.get("vandermonde", {})
    pf = _best_under(pert[col], pert["frobenius"], k) if len(pert.get("frobenius", ())) else np.nan
    vf = _best_under(vand[col], vand["frobenius"], k) if len(vand.get("frobenius", ())) else np.nan
    row = {
        "N": N,
        "c": c,
        "family": "optimized",
        "kappa_cap": float(k),
        "eps": p.get("eps", e0),
        **{
            key: p[key]
            for key in ("kappa_A_max", "kappa_D_max", "kappa_max", "frobenius", "mean_relative_mse", "worst_case")
        },
        "iterations": p["iterations"],
        "time_s": p["time_s"],
        "stop_reason": p["stop_reason"],
        "start": p["start"],
        "pert_frobenius_at_cap": pf,
        "vand_frobenius_at_cap": vf,
        "ratio_opt_pert": p["frobenius"] / pf if pf and np.isfinite(pf) and pf > 0 else np.nan,
    }
    return row, d


def pareto_front(
    N: int,
    c: int,
    kappas: Sequence[float],
    *,
    eps_grid: Sequence[float] | None = None,
    vandermonde_grid: Sequence[float] | None = None,
    progress: bool = True,
    return_designs: bool = False,
    starts: str = "both",
    scheduler: Any = "serial",
    workers: int | None = None,
    **kw: Any,
):
    """Error versus condition-number cap: optimized designs against the analytic constructions.

    For each cap ``kappa`` in ``kappas`` (increasing), the alternating scheme of
    :func:`optimized_design` runs with ``kappa_D = kappa`` (unless ``kappa_D`` is given in ``kw``)
    from these starts: one per analytic family (the exact design when ``c <= N``; the best
    perturbation design over ``eps_grid``; the best real-node Vandermonde design over
    ``vandermonde_grid``; "best" = lowest error among the members that fit the cap, else the
    member closest to fitting, projected onto the cap) and the previous cap's optimum (feasible
    for the larger cap, so the optimized front is non-increasing in ``kappa``). ``starts="both"``
    (or ``"all"``) runs every start and keeps the best final result; ``"best"`` runs only the start
    with the lowest objective (the next one only if it fails at once). Either way the optimized
    error at a cap is never above the best analytic member of the grids that fits the cap, and
    the ``start`` column says which start won.
    The perturbation design is swept over ``eps_grid`` (default: 49 log-spaced values in
    ``[1e-6, 1]``) and the real-node Vandermonde design over ``vandermonde_grid`` (its ``eps``,
    default 13 values up to ``0.95 * 2/(c-1)``). Each analytic family is compared at equal kappa
    as the best error among its sampled designs whose ``kappa_max`` fits the cap.

    Parameters
    ----------
    scheduler, workers
        Where the work runs (:func:`gcsim.sweep.run_sweep`): ``"serial"`` (default), ``"local"``
        (a Dask cluster of ``workers`` processes for this call), a Dask address or a
        ``distributed.Client``.  Each analytic member and each cap of the front is one task; a cap
        starts from the previous cap's optimum, so the caps run one after another (on any
        worker), and the table equals the serial one except ``time_s``, the measured seconds.
        Fronts of several ``(N, c)`` run in parallel when submitted together (``gcsim
        reproduce --scheduler``).

    Returns
    -------
    pandas.DataFrame
        One row per (family, sample): ``N, c, family, kappa_cap, eps, kappa_A_max,
        kappa_D_max, kappa_max, frobenius, mean_relative_mse, worst_case, iterations, time_s,
        stop_reason``; optimized rows also carry ``start``, ``pert_frobenius_at_cap``,
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
    progress = check_bool("progress", progress)
    return_designs = check_bool("return_designs", return_designs)
    require("pandas", "plots", "gcsim.cerar.pareto.pareto_front")
    import pandas as pd  # optional dependency: only the sweep's table needs it

    if starts not in ("both", "all", "best"):
        raise InvalidArgumentError("starts", f"must be 'both', 'all' or 'best', got {starts!r}")
    only_best = starts == "best"
    check_scheduler(scheduler)
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    caps = np.sort(np.asarray([check_real("kappas", k, minimum=1.0) for k in kappas], dtype=float))
    if len(caps) == 0:
        raise InvalidArgumentError("kappas", "must be a non-empty sequence of caps >= 1")
    eps_values = _EPS_GRID if eps_grid is None else np.asarray(eps_grid, float)
    vand_values = _vandermonde_grid(c) if vandermonde_grid is None else np.asarray(vandermonde_grid, float)
    kw = dict(kw)
    for bad in ("init", "eps"):
        if bad in kw:
            raise InvalidArgumentError(
                bad, "is chosen per cap by pareto_front (analytic starts and the previous cap's optimum)"
            )
    objective = kw.pop("objective", "frobenius")
    if objective not in _OBJECTIVES:
        raise InvalidArgumentError("objective", f"must be one of {_OBJECTIVES}, got {objective!r}")
    kappa_D_kw = kw.pop("kappa_D", "same")
    solver, solver_options = _check_solver(kw.pop("solver", "SCS"), kw.pop("solver_options", None))
    seed = check_int("seed", kw.pop("seed", 0), minimum=0)
    max_iter = check_int("max_iter", kw.pop("max_iter", 30), minimum=0)
    tol = check_real("tol", kw.pop("tol", 1e-4), minimum=0.0)
    on_failure = kw.pop("on_failure", "stop")
    if on_failure not in ("stop", "raise"):
        raise InvalidArgumentError("on_failure", f"must be 'stop' or 'raise', got {on_failure!r}")
    verbose = bool(kw.pop("verbose", False))
    kw.pop("progress", None)
    if kw:
        raise InvalidArgumentError(", ".join(sorted(kw)), "unknown keyword argument(s) of pareto_front")

    settings = {
        "kappa_D": kappa_D_kw,
        "objective": objective,
        "solver": solver,
        "solver_options": solver_options,
        "max_iter": max_iter,
        "tol": tol,
        "on_failure": on_failure,
        "verbose": verbose,
        "seed": seed,
        "only_best": only_best,
        "eps_grid": eps_values,
        "vandermonde_grid": vand_values,
    }
    members = [
        (family, float(e))
        for family, grid in (("perturbation", eps_values), ("vandermonde", vand_values))
        for e in grid
    ]
    designs: list[CerarDesign] = []
    with sweep_client(scheduler, workers) as client:
        where = "serial" if client is None else client
        # the analytic members are independent: one task each
        per_member = run_sweep(functools.partial(_analytic_rows, N, c), members, scheduler=where, progress=False)
        rows: list[dict[str, Any]] = [row for member_rows in per_member for row in member_rows]
        analytic = pd.DataFrame(rows)
        families = {
            fam: {
                col: analytic[analytic.family == fam][col].to_numpy()
                for col in ("kappa_max", "kappa_A_max", "frobenius")
            }
            if len(analytic)
            else {}
            for fam in ("perturbation", "vandermonde")
        }
        prev: CerarDesign | None = None
        bar = _progress(len(caps), progress, f"Pareto N={N} c={c}")
        try:
            for k in caps:
                # each cap is one task; it starts from the previous cap's optimum, so the caps run in order
                task = functools.partial(_cap_point, N, c, prev, families, settings)
                [(row, d)] = run_sweep(task, [float(k)], scheduler=where, progress=False)
                bar.update(1)
                rows.append(row)
                if d is not None:
                    prev = d
                    designs.append(d)
        finally:
            bar.close()
    table = pd.DataFrame(rows)
    return (table, designs) if return_designs else table
