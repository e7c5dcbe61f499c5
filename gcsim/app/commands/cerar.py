"""``gcsim cerar design|optimize|simulate|rates|pareto|run``: CERAR from the shell.

Each action is a subcommand with its own flags and help (``gcsim cerar design --help``); ``run``
is the real ring engine (:mod:`gcsim.app.commands.executor`; ``gcsim run-cerar`` is its deprecated name).

Without ``--eps``, a perturbation design takes the ε that docs/theory.md §50.5 predicts best for
the precision it runs in, :func:`gcsim.cerar.floating.predicted_optimal_eps` (``u^(1/(r*+1))``):
``--dtype`` of ``simulate``, or of ``design`` (the precision the design is meant for, float32 by
default).  The output says which ε was taken and why.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

EXIT_OK, EXIT_FAILURE = 0, 1

#: API argument -> the flag that sets it (errors name the flag)
_FLAGS = {
    "N": "--workers",
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
    "overwrite": "--force",
    "kappas": "--kappas",
    "scheduler": "--scheduler",
    "workers": "--processes",
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
        "--workers",
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


def default_eps(N: int, c: int, dtype: str) -> tuple[float, str]:
    """The ε a perturbation design gets when ``--eps`` is not given, and the sentence that says why.

    The predicted optimum ``u^(1/(r*+1))`` of docs/theory.md §50.5 for the working precision
    ``dtype`` (unit roundoff ``u``): a smaller ε amplifies rounding by κ ~ ε^(-r*), a larger one
    leaves an approximation error ~ ε.

    >>> eps, why = default_eps(4, 8, "float32")
    >>> eps == 2.0 ** -12, why
    (True, 'predicted optimal for float32: u^(1/(r*+1)) with r* = 1 (docs/theory.md §50.5); --eps overrides')
    """
    from ...cerar.floating import predicted_optimal_eps, r_star

    eps = predicted_optimal_eps(N, c, dtype)
    why = (
        f"predicted optimal for {dtype}: u^(1/(r*+1)) with r* = {r_star(N, c)} (docs/theory.md §50.5); --eps overrides"
    )
    return eps, why


def _design_from_args(args: argparse.Namespace):
    from ...cerar.factory import design

    if getattr(args, "design", None):
        from pathlib import Path

        from ...cerar.export import load_design
        from ...errors import CatalogueError
        from ..common import check_input_path, path_errors

        if not (Path(args.design).exists() or Path(f"{args.design}.json").exists()):  # a bundle stem is fine
            check_input_path("--design", args.design, folder_ok=False)  # refused, naming the flag
        with path_errors("--design", "read"):
            try:
                return load_design(args.design)
            except CatalogueError as exc:  # a refused bundle stays exit 1, its message names the flag
                raise CatalogueError(f"--design: {exc}") from None
    _check_sizes(args)
    from ..common import show_progress

    method = "optimized" if args.action == "optimize" else args.method
    kw: dict[str, Any] = {}
    if args.eps is not None:
        kw["eps"] = args.eps
    elif method == "perturbation":
        kw["eps"], args.eps_choice = default_eps(args.N, args.c, args.dtype)
    if args.kappa is not None:
        kw["kappa"] = args.kappa
    if method == "optimized":
        kw["progress"] = show_progress(args)
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
    from ..common import fmt

    r = s["rates"]
    return (
        f"CERAR {s['method']} design, N = {s['N']}, c = {s['c']}, L = {s['L']} rounds\n"
        f"  worst-case operator-norm error  {fmt(s['worst_case_error'])}\n"
        f"  Frobenius error Σ ‖E‖_F²        {fmt(s['frobenius_error'])} "
        f"(mean relative MSE {fmt(s['mean_relative_mse'])})\n"
        f"  max κ(A_j) {fmt(s['kappa_encoders_max'])}, max κ(D_i) {fmt(s['kappa_decoders_max'])}\n"
        f"  traffic per worker {fmt(r['rate'])} d (ring all-reduce {fmt(r['ring_rate'])} d), "
        f"storage {fmt(r['storage'])} d"
    )


def load_summary(des) -> tuple[dict[str, Any], str]:
    """What ``gcsim load`` reports for a CERAR design file: N, c, L, the construction and κ.

    Returns the JSON payload and one line of text; κ are the largest condition numbers of the
    encoders A_j and decoders D_i (:func:`gcsim.cerar.metrics.errors`).

    >>> from gcsim.cerar.factory import design
    >>> payload, text = load_summary(design(3, 3, "exact"))
    >>> payload["N"], payload["c"], payload["L"]
    (3, 3, 4)
    >>> text.startswith("cerar exact design, N = 3, c = 3, L = 4 rounds, max κ(A_j) ")
    True
    """
    from ..common import fmt

    s = _summary(des)
    payload = {
        "kind": "cerar",
        "N": s["N"],
        "c": s["c"],
        "L": s["L"],
        "method": s["method"],
        "kappa_encoders_max": s["kappa_encoders_max"],
        "kappa_decoders_max": s["kappa_decoders_max"],
        "worst_case_error": s["worst_case_error"],
        "verified": True,
    }
    text = (
        f"cerar {s['method']} design, N = {s['N']}, c = {s['c']}, L = {s['L']} rounds, "
        f"max κ(A_j) {fmt(s['kappa_encoders_max'])}, max κ(D_i) {fmt(s['kappa_decoders_max'])}, "
        f"worst-case error {fmt(s['worst_case_error'])}"
    )
    return payload, text


def _cmd_pareto(args: argparse.Namespace) -> int:
    """``gcsim cerar pareto``: the error-vs-κ front, each analytic member and cap a task on --scheduler."""
    from ...cerar.pareto import pareto_front
    from ..common import UsageError, emit, fmt, show_progress
    from ..sweep_options import scheduler_from_args

    try:
        kappas = [float(x) for x in args.kappas.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--kappas: must be comma-separated numbers >= 1, got {args.kappas!r}") from None
    if args.N is None:  # --workers not given: the ring of 4
        args.N = 4
    elif args.scheduler == "local" and args.processes is None:  # --workers meant the Dask processes here before
        print(
            f"gcsim: warning: --workers {args.N} is the ring size N (the Dask processes of cerar pareto are "
            "--processes now)",
            file=sys.stderr,
        )
    scheduler, workers = scheduler_from_args(args)
    table = pareto_front(
        args.N,
        args.c,
        kappas,
        max_iter=args.max_iter,
        objective=args.objective,
        seed=args.seed,
        progress=show_progress(args),
        scheduler=scheduler,
        workers=workers,
    )
    opt = table[table.family == "optimized"]
    cols = [c for c in ("kappa_cap", "kappa_max", "frobenius", "pert_frobenius_at_cap", "ratio_opt_pert") if c in opt]
    payload = {"N": args.N, "c": args.c, "rows": table.to_dict(orient="records")}
    shown = opt[cols].to_string(index=False, float_format=lambda x: fmt(x), na_rep="-")
    text = f"CERAR error vs condition-number cap, N = {args.N}, c = {args.c} (optimized designs)\n{shown}"
    text += "\n" + "\n".join(_pareto_notes(opt))
    emit(args, payload, text)
    return EXIT_OK


def _pareto_notes(opt: Any) -> list[str]:
    """What the columns of the pareto table mean, and why a cell is empty ('-', NaN in --json)."""
    from ..common import fmt

    notes = [
        "kappa_cap: the cap; kappa_max: the optimized design's largest condition number; frobenius: its error;",
        "pert_frobenius_at_cap: the least error of a perturbation design on the ε grid with kappa <= the cap; "
        "ratio_opt_pert: their ratio",
    ]
    if "pert_frobenius_at_cap" in opt and opt["pert_frobenius_at_cap"].isna().any():
        caps = ", ".join(fmt(k) for k in opt.loc[opt["pert_frobenius_at_cap"].isna(), "kappa_cap"])
        notes.append(
            f"-: at kappa_cap {caps} no perturbation design of the ε grid is that well conditioned "
            "(only the optimized design meets the cap), so there is nothing to compare"
        )
    if "frobenius" in opt and opt["frobenius"].isna().any():
        notes.append("-  in frobenius: every optimizer start failed at that cap (--json gives the reason)")
    return notes


def _cmd_cerar(args: argparse.Namespace) -> int:
    from ..common import emit, fmt

    if args.action == "pareto":
        return _cmd_pareto(args)

    if args.action == "rates":
        from ...cerar.traffic import rates

        r = rates(args.N, args.c)
        width = max(map(len, r))
        lines = [f"CERAR traffic, N = {args.N}, c = {args.c}"]
        lines += [f"  {k:<{width}}  {v if isinstance(v, int) else fmt(v)}" for k, v in r.items()]
        emit(args, r, "\n".join(lines))
        return EXIT_OK
    from ..common import UsageError, check_name, check_not_exported, check_output_dir, output_path, path_errors

    check_name("--name", args.name)
    if args.out is not None:  # before the (possibly long) optimization: the folder, an earlier export there
        check_output_dir("--out", args.out)
        name = args.name
        method = "optimized" if args.action == "optimize" else args.method
        if name is None and method == "optimized" and args.kappa is not None and not getattr(args, "design", None):
            name = f"optimized_N{args.N}_c{args.c}_kappa{float(args.kappa):g}"  # the design's name (cerar.export)
        if name is not None:
            target = output_path("--out", args.out, name, name_flag="--name", suffixes=(".json", ".npz"))
            check_not_exported("--out", target, force=args.force, name_flag="--name")
    des = _design_from_args(args)
    if args.out is not None and args.name is None:  # the default name is the design's: known now, before simulating
        from ...cerar.export import _default_name

        target = output_path("--out", args.out, _default_name(des), suffixes=(".json", ".npz"))
        check_not_exported("--out", target, force=args.force, name_flag="--name")
    payload = _summary(des)
    text = _text(payload)
    choice = getattr(args, "eps_choice", None)
    if choice is not None:
        payload.update(eps=float(des.metadata.get("eps", np.nan)), eps_choice=choice)
        text += f"\n  ε = {fmt(payload['eps'])}: {choice}"
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
            f"{int(np.max(res.bytes_sent))}, max relative error {fmt(rel.max())}"
        )
    if args.out:
        from ...cerar.export import _default_name, export_design

        name = args.name if args.name is not None else _default_name(des)
        output_path("--out", args.out, name, name_flag="--name", suffixes=(".json", ".npz"))
        with path_errors("--out"):
            path = export_design(des, args.out, name=name, overwrite=args.force)
        payload["exported"] = str(path)
        text += f"\n  exported to {path}"
    emit(args, payload, text)
    return EXIT_OK


def _action(actions: Any, name: str, help_text: str, epilog: str) -> argparse.ArgumentParser:
    """Add the action ``name`` to ``gcsim cerar`` with the flags every action takes (--json, --workers, --c)."""
    from ..common import HelpFormatter, int_arg
    from ..flags import deprecate

    q = actions.add_parser(name, help=help_text, description=help_text, epilog=epilog, formatter_class=HelpFormatter)
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.add_argument(
        "--workers",
        dest="N",
        type=int_arg(2),
        default=None if name == "pareto" else 4,
        help="number of workers n: the ring size N" + (" (default: 4)" if name == "pareto" else ""),
    )
    deprecate(q, "--N", "--workers", note="the number of workers n, the ring size")
    q.add_argument("--c", type=int_arg(1), default=8, help="components per gradient")
    q.set_defaults(flags=_FLAGS)
    return q


def _optimizer_flags(q: argparse.ArgumentParser, when: str = "") -> None:
    """The optimizer's flags (--kappa, --max-iter, --objective); ``when`` says when they apply."""
    from ..common import float_arg, int_arg

    q.add_argument("--kappa", type=float_arg(1.0), default=None, help=f"condition-number cap, >= 1{when}")
    q.add_argument("--max-iter", type=int_arg(1), default=30, help=f"alternating sweeps per start{when}")
    q.add_argument(
        "--objective",
        default="frobenius",
        choices=["frobenius", "worst"],
        help=f"objective: what to minimize{when}",
    )


def _construction_flags(q: argparse.ArgumentParser, dtype_default: str, dtype_help: str) -> None:
    """The flags that choose a construction: --method, --eps, --dtype and the optimizer's."""
    from ..common import float_arg

    q.add_argument(
        "--method",
        default="perturbation",
        choices=["exact", "vandermonde", "perturbation", "optimized"],
        help="encoder: the CERAR construction (exact needs c <= N)",
    )
    q.add_argument(
        "--eps",
        type=float_arg(0.0),
        default=None,
        help="encoder ε: perturbation ε / Vandermonde node spacing (default for perturbation: the ε predicted "
        "optimal for --dtype, docs/theory.md §50.5)",
    )
    q.add_argument("--dtype", default=dtype_default, choices=["float64", "float32", "bfloat16"], help=dtype_help)
    _optimizer_flags(q, " (with --method optimized)")


def _output_flags(q: argparse.ArgumentParser) -> None:
    """The flags of an action that exports its design: --seed, --out, --name, --force."""
    from ..common import int_arg
    from ..flags import deprecate

    q.add_argument("--seed", type=int_arg(0), default=0, help="seed (optimized starts, simulated gradients)")
    q.add_argument("--out", metavar="DIR", help="output folder DIR: the design is exported into it, a bundle")
    deprecate(q, "--export", "--out", note="--out is the output folder of every command")
    q.add_argument("--name", help="the name of the bundle (default: from the method and parameters)")
    q.add_argument("--force", action="store_true", help="replace an existing export")


def register(sub, add) -> None:
    from ..common import float_arg, int_arg
    from ..sweep_options import add_scheduler_flags

    p = add(
        "cerar",
        _cmd_cerar,
        "CERAR coded all-reduce: design, optimize, simulate, rates (and `cerar run`)",
        "examples:\n  gcsim cerar rates --workers 4 --c 8\n"
        "  gcsim cerar design --workers 4 --c 8 --method perturbation --eps 0.01 --json\n"
        "  gcsim cerar optimize --workers 4 --c 8 --kappa 20 --out designs/cerar\n"
        "  gcsim cerar simulate --workers 4 --c 8 --method vandermonde --d 4096 --dtype float32\n"
        "  gcsim cerar run --engine gloo --workers 4 --c 8 --d 4096 --json   # see `gcsim cerar run --help`\n"
        "\n`gcsim cerar ACTION --help` lists each action's flags.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    q = _action(
        actions,
        "design",
        "build a CERAR design and print its error, condition numbers and traffic",
        "examples:\n  gcsim cerar design --workers 4 --c 8                       # ε predicted best for float32\n"
        "  gcsim cerar design --workers 4 --c 8 --eps 0.01 --json\n"
        "  gcsim cerar design --workers 3 --c 5 --method vandermonde --out designs/cerar",
    )
    _construction_flags(q, "float32", "precision the design is meant for; picks the default --eps")
    _output_flags(q)

    q = _action(
        actions,
        "optimize",
        "condition-number-constrained optimization of the encoders (docs/theory.md §55)",
        "examples:\n  gcsim cerar optimize --workers 4 --c 8 --kappa 20 --out designs/cerar\n"
        "  gcsim cerar optimize --workers 3 --c 4 --kappa 5 --max-iter 3 --objective worst --json",
    )
    _optimizer_flags(q)
    q.add_argument(
        "--eps",
        type=float_arg(0.0),
        default=None,
        help="encoder ε of the perturbation start instead of scanning a grid (default: scan)",
    )
    q.set_defaults(method="optimized", dtype="float64")
    _output_flags(q)

    q = _action(
        actions,
        "simulate",
        "run the packet-level ring protocol on seeded Gaussian gradients in a chosen precision",
        "examples:\n  gcsim cerar simulate --workers 4 --c 8 --dtype float32 --d 4096\n"
        "  gcsim cerar simulate --workers 4 --c 8 --method vandermonde --d 4096 --dtype float32\n"
        "      # fails on purpose: Vandermonde encoders in float32 lose everything (relative error ~60; theory §50)\n"
        "  gcsim cerar simulate --design designs/cerar/optimized_N4_c8_kappa10.json --d 1024 --json",
    )
    _construction_flags(q, "float64", "precision of the simulated ring; picks the default --eps")
    q.add_argument("--d", type=int_arg(1), default=1024, help="gradient length")
    q.add_argument("--design", help="the design: a catalogue file, loaded instead of building it")
    _output_flags(q)

    q = _action(
        actions,
        "pareto",
        "error versus condition-number cap: optimized designs against the analytic families",
        "examples:\n  gcsim cerar pareto --workers 4 --c 8 --kappas 3,10,30,100\n"
        "  gcsim cerar pareto --workers 8 --c 16 --kappas 5,50 --scheduler local --processes 4 --json",
    )
    q.add_argument("--kappas", default="3,10,30,100", help="condition-number caps, comma-separated, each >= 1")
    q.add_argument("--max-iter", type=int_arg(1), default=25, help="alternating sweeps per start and cap")
    q.add_argument(
        "--objective", default="frobenius", choices=["frobenius", "worst"], help="objective: what to minimize"
    )
    q.add_argument("--seed", type=int_arg(0), default=0, help="seed of the optimized starts")
    add_scheduler_flags(q, "the analytic members and the caps")

    p.set_defaults(cerar_actions=actions)  # gcsim.app.cli adds `run` (the ring engine, commands/executor.py)

    q = _action(
        actions,
        "rates",
        "traffic per worker, rounds and storage of CERAR against the ring all-reduce (formulas)",
        "example:\n  gcsim cerar rates --workers 4 --c 8 --json",
    )
