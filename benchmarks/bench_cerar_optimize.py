"""Benchmark: CERAR encoder optimization for (N, c) = (4, 8) (target in benchmarks/README.md).

Measures, on this machine:

1. ``optimized_design(4, 8, kappa=20)`` for a fixed number of sweeps: total and per-sweep time
   (SCS, the N-way decoupled D- and A-steps, DPP-compiled problems re-solved with new parameters);
2. the baseline of one *joint* SDP per step (all D_i, resp. all A_j, in a single cvxpy problem,
   same constraints, same solver) against the decoupled blocks: ratio joint / decoupled for one
   D-step + A-step, and agreement of the objective values;
3. the same decoupled sweep with CLARABEL instead of SCS (ratio CLARABEL / SCS);
4. one quick Pareto sweep (4 caps, as ``scripts/cerar_pareto.py --quick``, one start per cap).

Run:  .venv/bin/python benchmarks/bench_cerar_optimize.py [--sweeps 10] [--out benchmarks/results]
Writes ``<out>/cerar_optimize.json`` (with provenance) and prints it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N, C, KAPPA = 4, 8, 20.0


def _joint_steps(A: np.ndarray, D: np.ndarray, kappa: float, solver: str) -> tuple[float, float, float]:
    """One D-step and one A-step as single joint SDPs; returns (seconds, F after D, F after A)."""
    import cvxpy as cp

    from gcsim.cerar._optimize_blocks import _a_data, _d_data, _kappa_constraints, _objective, _polar_factor

    opts = {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 20000} if solver == "SCS" else {}
    L = C + N - 2
    t0 = time.perf_counter()
    W, Qd = _d_data(A), _polar_factor(D)
    Xs = [cp.Variable((C, L)) for _ in range(N)]
    s = cp.Variable(N, nonneg=True)
    T = np.tile(np.eye(C), (1, N - 1))
    cons = sum((_kappa_constraints(cp, Xs[i], Qd[i], s[i], kappa, C, L) for i in range(N)), [])
    cp.Problem(cp.Minimize(sum(cp.sum_squares(Xs[i] @ W[i] - T) for i in range(N))), cons).solve(solver=solver, **opts)
    D1 = np.stack([x.value for x in Xs])
    F1 = _objective(A, D1, "frobenius")
    M, Qa = _a_data(D1), _polar_factor(A)
    Ys = [cp.Variable((C, C)) for _ in range(N)]
    t = cp.Variable(N)
    cons = [t >= 1] + sum((_kappa_constraints(cp, Ys[j], Qa[j], t[j], kappa, C, C) for j in range(N)), [])
    Tv = T.T
    cp.Problem(cp.Minimize(sum(cp.sum_squares(M[j] @ Ys[j] - Tv) for j in range(N))), cons).solve(solver=solver, **opts)
    A1 = np.stack([y.value for y in Ys])
    return time.perf_counter() - t0, F1, _objective(A1, D1, "frobenius")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=10)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)

    import cvxpy  # noqa: F401  (import time excluded from the measurements)

    from gcsim.cerar._optimize_blocks import _fix_gauge, _objective
    from gcsim.cerar._optimize_starts import _initial_point
    from gcsim.cerar.optimize import optimized_design
    from gcsim.cerar.pareto import pareto_front
    from gcsim.io.manifest import atomic_write_text, dumps, provenance

    res: dict = {"N": N, "c": C, "kappa": KAPPA, "sweeps": args.sweeps}
    # 1. the optimizer; every call compiles its 2N blocks once (DPP), at the first solve, so the
    #    per-sweep time is the difference between a long and a one-sweep call
    t0 = time.perf_counter()
    d = optimized_design(N, C, kappa=KAPPA, max_iter=args.sweeps, tol=0.0, init="perturbation", progress=False)
    res["optimizer_total_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    one = optimized_design(N, C, kappa=KAPPA, max_iter=1, tol=0.0, init="perturbation", progress=False)
    res["optimizer_one_sweep_with_setup_s"] = time.perf_counter() - t0
    res["optimizer_per_sweep_s"] = (res["optimizer_total_s"] - res["optimizer_one_sweep_with_setup_s"]) / max(
        d.metadata["iterations"] - 1, 1
    )
    res["optimizer_final_frobenius"] = d.metadata["frobenius"]
    res["optimizer_stop_reason"] = d.metadata["stop_reason"]

    # 2. decoupled blocks vs one joint SDP per step (from the same start)
    A0, D0, _ = _initial_point(N, C, "perturbation", None, 0, KAPPA, KAPPA)
    A0, D0 = _fix_gauge(A0, D0)
    t_joint, F1j, F2j = _joint_steps(A0, D0, KAPPA, "SCS")
    # both timings include building/compiling the cvxpy problems and one D- and A-step
    res["joint_one_sweep_with_setup_s"] = t_joint
    res["decoupled_one_sweep_with_setup_s"] = one.metadata["time_s"]
    res["ratio_joint_over_decoupled"] = t_joint / one.metadata["time_s"]
    res["objective_joint_after_sweep"] = F2j
    res["objective_decoupled_after_sweep"] = one.metadata["history"][-1]
    res["objective_start"] = _objective(A0, D0, "frobenius")

    # 3. CLARABEL instead of SCS (same decoupled blocks)
    t0 = time.perf_counter()
    try:
        dc = optimized_design(
            N, C, kappa=KAPPA, max_iter=2, tol=0.0, init="perturbation", solver="CLARABEL", progress=False
        )
        res["clarabel_two_sweeps_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        optimized_design(N, C, kappa=KAPPA, max_iter=2, tol=0.0, init="perturbation", progress=False)
        res["scs_two_sweeps_s"] = time.perf_counter() - t0
        res["ratio_clarabel_over_scs"] = res["clarabel_two_sweeps_s"] / res["scs_two_sweeps_s"]
        res["clarabel_stop_reason"] = dc.metadata["stop_reason"]
    except Exception as exc:  # report, do not fail the benchmark
        res["clarabel_error"] = f"{type(exc).__name__}: {exc}"

    # 4. quick Pareto sweep
    t0 = time.perf_counter()
    pareto_front(N, C, [3.0, 10.0, 30.0, 100.0], max_iter=25, progress=False, starts="best")
    res["pareto_quick_best_start_s"] = time.perf_counter() - t0

    res["provenance"] = provenance()
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "cerar_optimize.json", dumps(res))
    print(dumps(res))
    return 0


def test_bench_cerar_optimize_sweep(benchmark):  # pragma: no cover - only under pytest-benchmark
    from gcsim.cerar.optimize import optimized_design

    benchmark.pedantic(
        lambda: optimized_design(N, C, kappa=KAPPA, max_iter=3, tol=0.0, init="perturbation", progress=False),
        rounds=2,
        iterations=1,
    )


if __name__ == "__main__":
    raise SystemExit(main())
