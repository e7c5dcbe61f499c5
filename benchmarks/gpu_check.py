#!/usr/bin/env python
"""CuPy vs NumPy check of the executor's batched optimal-error evaluator (called by gpu_check.sh).

Workload (the reference workload of benchmarks/README.md): PG(2,9) = gcsim.bibd(91, 10, 1), m = 2,
RD(0), ``--patterns`` random straggler patterns with s = 20.  Runs
:func:`gcsim.executor.arrays.batched_optimal_error` on NumPy and (unless ``--dry-run`` or CuPy is
missing) on CuPy, checks that both agree with
:func:`gcsim.coding.evaluate.optimal_error` (≤ 1e-9 relative), runs one CERAR ring and one
gradient code end to end on both backends, and prints a short report (``--json`` for one
JSON object).  Exit status 0 = all checks passed, 1 = a mismatch, 2 = CuPy requested but
unusable.

    python benchmarks/gpu_check.py --dry-run --patterns 500     # CPU only (NumPy)
    python benchmarks/gpu_check.py                              # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _time(fn, repeats: int = 1):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patterns", type=int, default=10_000)
    ap.add_argument("--s", type=int, default=20)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--dry-run", action="store_true", help="NumPy only (no GPU needed)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import gcsim
    from gcsim.coding.evaluate import optimal_error
    from gcsim.coding.stragglers import FixedModel
    from gcsim.executor.arrays import batched_optimal_error, get_namespace, run_scheme
    from gcsim.executor.cerar_arrays import run_cerar

    report: dict = {"workload": f"PG(2,9) m={args.m} RD(0), {args.patterns} patterns, s={args.s}", "ok": True}
    sch = gcsim.encode(gcsim.bibd(91, 10, 1), args.m, "rd", eps=0.0, seed=args.seed)
    masks = FixedModel(sch.n, args.s).sample(args.patterns, seed=args.seed + 1)
    ref, t_ref = _time(lambda: optimal_error(sch, masks, progress=False))
    report["analysis_layer_numpy_s"] = t_ref
    backends = ["numpy"] if args.dry_run else ["numpy", "cupy"]
    for name in backends:
        try:
            xp = get_namespace(name)
        except Exception as exc:
            report["ok"] = False
            report[f"{name}_error"] = str(exc)
            _print(report, args.json)
            return 2
        if name == "cupy":  # warm-up: CUDA context, kernel compilation
            batched_optimal_error(sch, masks[:64], xp=xp, chunk=args.chunk)
        vals, t = _time(lambda: batched_optimal_error(sch, masks, xp=xp, chunk=args.chunk), repeats=2)
        if name == "cupy":
            import cupy

            cupy.cuda.Device().synchronize()
        rel = float(np.max(np.abs(vals - ref) / np.maximum(np.abs(ref), 1e-300)))
        report[f"{name}_batched_s"] = t
        report[f"{name}_max_rel_diff_vs_analysis"] = rel
        report[f"{name}_patterns_per_s"] = args.patterns / t
        if rel > 1e-9:
            report["ok"] = False
        # end-to-end: one gradient code and one CERAR ring on real arrays of this backend
        rng = np.random.default_rng(args.seed)
        g = xp.asarray(rng.standard_normal((sch.num_parts, 4096)))
        r = run_scheme(sch, g, masks[0], xp=xp)
        report[f"{name}_run_scheme_rel_diff"] = abs(r.error - r.predicted_error) / max(r.error, 1e-300)
        from gcsim.cerar.factory import design

        des = design(4, 8, "perturbation", eps=0.01)
        rc = run_cerar(des, xp.asarray(rng.standard_normal((4, 1 << 16))), xp=xp)
        # relative to the largest worker error: worker N-1 decodes exactly (its error is round-off)
        report[f"{name}_run_cerar_rel_diff"] = float(
            np.max(np.abs(rc.errors - rc.predicted_errors)) / max(float(np.max(rc.predicted_errors)), 1e-300)
        )
        if report[f"{name}_run_scheme_rel_diff"] > 1e-9 or report[f"{name}_run_cerar_rel_diff"] > 1e-6:
            report["ok"] = False
    if "cupy_batched_s" in report:
        report["speedup_cupy_over_numpy"] = report["numpy_batched_s"] / report["cupy_batched_s"]
    _print(report, args.json)
    return 0 if report["ok"] else 1


def _print(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, sort_keys=True))
        return
    print(f"gcsim GPU check -- {report['workload']}")
    for k in sorted(report):
        if k not in ("workload",):
            v = report[k]
            print(f"  {k:34s} {v:.4g}" if isinstance(v, float) else f"  {k:34s} {v}")


if __name__ == "__main__":
    sys.exit(main())
