"""``gcsim cerar design|optimize|simulate|rates|run``: CERAR from the shell."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

EXIT_OK, EXIT_FAILURE = 0, 1

#: API argument -> the flag that sets it (errors name the flag)
_FLAGS = {
    "N": "--N",
    "c": "--c",
    "eps": "--eps",
    "kappa": "--kappa",
    "seed": "--seed",
    "max_iter": "--max-iter",
    "d": "--d",
    "dtype": "--dtype",
    "objective": "--objective",
    "method": "--method",
    "name": "--name",
}

#: largest finite value of each simulation dtype (bfloat16 has float32's exponent range)
_DTYPE_MAX = {
    "float64": float(np.finfo(np.float64).max),
    "float32": float(np.finfo(np.float32).max),
    "bfloat16": 3.3895313892515355e38,
}


def _check_sizes(args: argparse.Namespace) -> None:
    """Refuse, before building, a design whose arrays exceed gcsim.limits (the error names the flag).

    The analysis forms the N(N-1) error operators E_{i,m} (c x c each), the largest array of a design;
    simulate also holds the N x d gradients.
    """
    from ..._validation import check_dense_size

    N, c = args.N, args.c
    check_dense_size(
        "--N",
        N * (N - 1),
        c * c,
        f"the N(N-1) = {N * (N - 1):,} error operators (c x c each) of a CERAR design with N = {N}, c = {c}",
    )
    if args.action == "simulate":
        check_dense_size("--d", N, args.d, f"the simulated gradients (N x d = {N} x {args.d})")


def _check_dtype_range(des, dtype: str) -> None:
    """Refuse a simulation whose design coefficients overflow the dtype (they would turn into inf/NaN)."""
    from ..common import UsageError

    big = max(float(np.max(np.abs(des.encoders))), float(np.max(np.abs(des.decoders))))
    if not np.isfinite(big):
        raise UsageError("the design has non-finite coefficients (inf or NaN); choose another --eps or --method")
    if big > _DTYPE_MAX[dtype]:
        raise UsageError(
            f"--dtype {dtype}: the design's coefficients reach {big:.3g}, beyond {dtype}'s largest "
            f"finite value {_DTYPE_MAX[dtype]:.3g} (they would become inf); use --dtype float64 "
            "or a better conditioned design (smaller --c, larger --eps)"
        )


def _design_from_args(args: argparse.Namespace):
    from ...cerar.factory import design

    if getattr(args, "design", None):
        from ...cerar.export import load_design
        from ..common import path_errors

        with path_errors("--design", "read"):
            return load_design(args.design)
    _check_sizes(args)
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
    from ...cerar.metrics import errors
    from ...cerar.traffic import rates

    e = errors(des)
    return {
        "N": des.N,
        "c": des.c,
        "L": des.L,
        "method": des.method,
        "worst_case_error": e.worst_case,
        "frobenius_error": e.frobenius,
        "mean_relative_mse": e.mean_relative_mse,
        "kappa_encoders_max": float(np.max(e.kappa_encoders)),
        "kappa_decoders_max": float(np.max(e.kappa_decoders)),
        "rates": rates(des.N, des.c),
        "params": {k: v for k, v in des.metadata.items() if np.isscalar(v) or v is None},
    }


def _text(s: dict[str, Any]) -> str:
    r = s["rates"]
    return (
        f"CERAR {s['method']} design, N = {s['N']}, c = {s['c']}, L = {s['L']} rounds\n"
        f"  worst-case operator-norm error  {s['worst_case_error']:.4g}\n"
        f"  Frobenius error sum ||E||_F^2   {s['frobenius_error']:.4g} "
        f"(mean relative MSE {s['mean_relative_mse']:.3g})\n"
        f"  max kappa(A_j) {s['kappa_encoders_max']:.4g}, max kappa(D_i) {s['kappa_decoders_max']:.4g}\n"
        f"  traffic per worker {r['rate']:.4g} d (ring all-reduce {r['ring_rate']:.4g} d), "
        f"storage {r['storage']:.4g} d"
    )


def _cmd_cerar(args: argparse.Namespace) -> int:
    from ..common import emit

    if args.action == "rates":
        from ...cerar.traffic import rates

        r = rates(args.N, args.c)
        emit(args, r, "\n".join(f"  {k:<24} {v}" for k, v in r.items()))
        return EXIT_OK
    from ..common import UsageError, check_name, check_output_dir, path_errors

    if args.export is not None:  # before the (possibly long) optimization
        check_output_dir("--export", args.export)
    check_name("--name", args.name)
    des = _design_from_args(args)
    payload = _summary(des)
    text = _text(payload)
    if args.action == "simulate":
        from ..._validation import check_dense_size
        from ...cerar.metrics import errors
        from ...cerar.protocol import simulate

        check_dense_size("--d", des.N, args.d, f"the simulated gradients (N x d = {des.N} x {args.d})")
        _check_dtype_range(des, args.dtype)
        rng = np.random.default_rng(args.seed)
        g = rng.standard_normal((des.N, args.d))
        res = simulate(des, g, dtype=args.dtype)
        exact = g.sum(axis=0)
        if not np.all(np.isfinite(res.outputs)):
            raise UsageError(
                f"--dtype {args.dtype}: the simulated outputs overflowed (inf/NaN); the design is too "
                "ill-conditioned for this dtype; use --dtype float64"
            )
        rel = np.linalg.norm(res.outputs - exact, axis=1) / max(np.linalg.norm(exact), 1e-300)
        payload.update(
            d=args.d,
            dtype=args.dtype,
            rounds=res.rounds,
            bytes_sent=res.bytes_sent,
            packets_sent=res.packets_sent,
            peak_buffers=res.peak_buffers,
            max_rel_error=float(rel.max()),
            per_worker_rel_error=rel,
            predicted_rel_error=errors(des, g).empirical,
        )
        text += (
            f"\n  simulated d = {args.d} ({args.dtype}): {res.rounds} rounds, bytes/worker "
            f"{int(np.max(res.bytes_sent))}, max relative error {rel.max():.3g}"
        )
    if args.export:
        from ...cerar.export import export_design

        with path_errors("--export"):
            path = export_design(des, args.export, name=args.name, overwrite=args.force)
        payload["exported"] = str(path)
        text += f"\n  exported to {path}"
    emit(args, payload, text)
    return EXIT_OK


def register(sub, add) -> None:
    p = add(
        "cerar",
        _cmd_cerar,
        "CERAR coded all-reduce: design, optimize, simulate, rates (and `cerar run`)",
        "examples:\n  gcsim cerar rates --N 4 --c 8\n"
        "  gcsim cerar design --N 4 --c 8 --method perturbation --eps 0.01 --json\n"
        "  gcsim cerar optimize --N 4 --c 8 --kappa 20 --export designs/cerar\n"
        "  gcsim cerar simulate --N 4 --c 8 --method vandermonde --d 4096 --dtype float32\n"
        "  gcsim cerar run --engine gloo --workers 4 --c 8 --d 4096 --json",
    )
    p.add_argument(
        "action",
        choices=["design", "optimize", "simulate", "rates"],
        help="`gcsim cerar run ...` (the real ring engine) is described by `gcsim run-cerar --help`",
    )
    from ..common import float_arg, int_arg

    p.add_argument("--N", type=int_arg(2), default=4, help="workers on the ring (default 4)")
    p.add_argument("--c", type=int_arg(1), default=8, help="components per gradient (default 8)")
    p.add_argument("--method", default="perturbation", choices=["exact", "vandermonde", "perturbation", "optimized"])
    p.add_argument("--eps", type=float_arg(0.0), default=None, help="perturbation / Vandermonde epsilon")
    p.add_argument("--kappa", type=float_arg(1.0), default=None, help="condition-number cap (optimized), >= 1")
    p.add_argument("--seed", type=int_arg(0), default=0)
    p.add_argument("--max-iter", type=int_arg(1), default=30, help="optimize: alternating sweeps (default 30)")
    p.add_argument("--objective", default="frobenius", choices=["frobenius", "worst"], help="optimize: objective")
    p.add_argument("--d", type=int_arg(1), default=1024, help="gradient length for simulate/run (default 1024)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32", "bfloat16"])
    p.add_argument("--design", help="load the design from a catalogue file instead of building it")
    p.add_argument("--export", metavar="DIR", help="export the design into DIR")
    p.add_argument("--name", help="catalogue name")
    p.add_argument("--force", action="store_true", help="overwrite an existing export")
    p.set_defaults(flags=_FLAGS)
