"""``gcsim cerar design|optimize|simulate|rates|run``: CERAR from the shell."""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

EXIT_OK, EXIT_FAILURE = 0, 1


def _design_from_args(args: argparse.Namespace):
    from .constructions import design

    if getattr(args, "design", None):
        from .export import load_design
        return load_design(args.design)
    method = "optimized" if args.action == "optimize" else args.method
    kw: dict[str, Any] = {}
    if args.eps is not None:
        kw["eps"] = args.eps
    if args.kappa is not None:
        kw["kappa"] = args.kappa
    if method == "optimized":
        kw["progress"] = not args.json
        kw["max_iter"] = args.max_iter
        kw["objective"] = args.objective
    return design(args.N, args.c, method, seed=args.seed, **kw)


def _summary(des) -> dict[str, Any]:
    from .analysis import errors, rates

    e = errors(des)
    return {"N": des.N, "c": des.c, "L": des.L, "method": des.method,
            "worst_case_error": e.worst_case, "frobenius_error": e.frobenius,
            "mean_relative_mse": e.mean_relative_mse,
            "kappa_encoders_max": float(np.max(e.kappa_encoders)),
            "kappa_decoders_max": float(np.max(e.kappa_decoders)),
            "rates": rates(des.N, des.c),
            "params": {k: v for k, v in des.params.items() if np.isscalar(v) or v is None}}


def _text(s: dict[str, Any]) -> str:
    r = s["rates"]
    return (f"CERAR {s['method']} design, N = {s['N']}, c = {s['c']}, L = {s['L']} rounds\n"
            f"  worst-case operator-norm error  {s['worst_case_error']:.4g}\n"
            f"  Frobenius error sum ||E||_F^2   {s['frobenius_error']:.4g} "
            f"(mean relative MSE {s['mean_relative_mse']:.3g})\n"
            f"  max kappa(A_j) {s['kappa_encoders_max']:.4g}, max kappa(D_i) {s['kappa_decoders_max']:.4g}\n"
            f"  traffic per worker {r['rate']:.4g} d (ring all-reduce {r['ring_rate']:.4g} d), "
            f"storage {r['storage']:.4g} d")


def _cmd_cerar(args: argparse.Namespace) -> int:
    from ..cli import _emit

    if args.action == "rates":
        from .analysis import rates
        r = rates(args.N, args.c)
        _emit(args, r, "\n".join(f"  {k:<24} {v}" for k, v in r.items()))
        return EXIT_OK
    des = _design_from_args(args)
    payload = _summary(des)
    text = _text(payload)
    if args.action == "simulate":
        from .analysis import errors
        from .protocol import simulate
        rng = np.random.default_rng(args.seed)
        g = rng.standard_normal((des.N, args.d))
        res = simulate(des, g, dtype=args.dtype)
        exact = g.sum(axis=0)
        rel = np.linalg.norm(res.outputs - exact, axis=1) / max(np.linalg.norm(exact), 1e-300)
        payload.update(d=args.d, dtype=args.dtype, rounds=res.rounds, bytes_sent=res.bytes_sent,
                       packets_sent=res.packets_sent, peak_buffers=res.peak_buffers,
                       max_rel_error=float(rel.max()), per_worker_rel_error=rel,
                       predicted_rel_error=float(errors(des, g).empirical))
        text += (f"\n  simulated d = {args.d} ({args.dtype}): {res.rounds} rounds, bytes/worker "
                 f"{int(np.max(res.bytes_sent))}, max relative error {rel.max():.3g}")
    if args.export:
        from .export import export_design
        path = export_design(des, args.export, name=args.name, overwrite=args.force)
        payload["exported"] = str(path)
        text += f"\n  exported to {path}"
    _emit(args, payload, text)
    return EXIT_OK


def register(sub, add) -> None:
    p = add("cerar", _cmd_cerar, "CERAR coded all-reduce: design, optimize, simulate, rates (and `cerar run`)",
            "examples:\n  gcsim cerar rates --N 4 --c 8\n"
            "  gcsim cerar design --N 4 --c 8 --method perturbation --eps 0.01 --json\n"
            "  gcsim cerar optimize --N 4 --c 8 --kappa 20 --export designs/cerar\n"
            "  gcsim cerar simulate --N 4 --c 8 --method vandermonde --d 4096 --dtype float32\n"
            "  gcsim cerar run --engine gloo --workers 4 --c 8 --d 4096 --json")
    p.add_argument("action", choices=["design", "optimize", "simulate", "rates"],
                   help="`gcsim cerar run ...` (the real ring engine) is described by `gcsim run-cerar --help`")
    p.add_argument("--N", type=int, default=4, help="workers on the ring (default 4)")
    p.add_argument("--c", type=int, default=8, help="components per gradient (default 8)")
    p.add_argument("--method", default="perturbation", choices=["exact", "vandermonde", "perturbation", "optimized"])
    p.add_argument("--eps", type=float, default=None, help="perturbation / Vandermonde epsilon")
    p.add_argument("--kappa", type=float, default=None, help="condition-number cap (optimized)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-iter", type=int, default=30, help="optimize: alternating sweeps (default 30)")
    p.add_argument("--objective", default="frobenius", choices=["frobenius", "worst"], help="optimize: objective")
    p.add_argument("--d", type=int, default=1024, help="gradient length for simulate/run (default 1024)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32", "bfloat16"])
    p.add_argument("--design", help="load the design from a catalogue file instead of building it")
    p.add_argument("--export", metavar="DIR", help="export the design into DIR")
    p.add_argument("--name", help="catalogue name")
    p.add_argument("--force", action="store_true", help="overwrite an existing export")
