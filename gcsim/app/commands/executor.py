"""Command-line commands of the executor layer: ``gcsim run-cerar`` and ``gcsim run-gc``.

Registered through :data:`gcsim.cli._EXTRA_COMMANDS` (``register(subparsers, add)``).

``gcsim cerar run --engine gloo --workers N --c C [--d D] [--design FILE] [--eps E] --json``
    Runs the CERAR ring on ``N`` gloo ranks (or on NumPy buffers with ``--engine numpy``)
    over seeded Gaussian gradients and prints bytes sent per rank, itemsize, d, seconds
    and the maximum relative error against the exact sum (and against ``dist.all_reduce``).
``gcsim gc run --engine gloo --design NAME_OR_BUNDLE --m M --stragglers S [--workers-die K] --json``
    (also spelled ``gcsim gc run``) Parameter-server gradient coding on ``n + 1`` gloo ranks:
    seeded delays measured from a barrier, ``K`` seeded workers whose process dies, decoding
    from the first ``n − S`` arrivals on that simulated clock (so ``--seed`` fixes every
    number); prints who was used and missing, the decoded error, the predicted error and the
    simulated ``err(B, F)``.

Bad options are refused with a message naming the option (``--workers-die: ...``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._validation import check_dense_size
from ...coding.encoders import METHODS
from ...errors import InvalidArgumentError

__all__ = ["register"]

_CERAR_EPILOG = """examples:
  gcsim cerar run --engine gloo --workers 3 --c 3 --d 64 --json
  gcsim cerar run --engine gloo --workers 4 --c 8 --eps 0.001 --d 100000 --baselines
  gcsim cerar run --engine numpy --workers 4 --c 8 --d 4096    # ε predicted best for float32
  gcsim cerar run --engine gloo --workers 4 --c 8 --design designs/cerar/NAME.json   # a `cerar design --export` file
"""

_GC_EPILOG = """examples:
  gcsim gc run --engine gloo --design petersen --m 2 --stragglers 2 --workers-die 1 --json
  gcsim gc run --engine gloo --design bibd:7,3,1 --m 1 --stragglers 1 --method rd
  gcsim gc run --design bibd:7,3,1 --m 2 --stragglers fixed:2 --workers-die 1 --seed 4 --json  # same seed: same numbers
"""


# API argument name -> command-line option, so that an error names what the user typed
_CERAR_OPTIONS = {
    "N": "--workers",
    "d": "--d",
    "c": "--c",
    "seed": "--seed",
    "repeats": "--repeats",
    "timeout": "--timeout",
    "dtype": "--dtype",
    "eps": "--eps",
    "method": "--method",
    "engine": "--engine",
    "design": "--design",
    "path": "--design",
}
_GC_OPTIONS = {
    "stragglers": "--stragglers",
    "deadline": "--deadline",
    "die": "--workers-die",
    "decoder": "--decoder",
    "d": "--d",
    "seed": "--seed",
    "delay_scale": "--delay-scale",
    "wait_limit": "--wait-limit",
    "timeout": "--timeout",
    "m": "--m",
    "eps": "--eps",
    "method": "--method",
    "design": "--design",
    "s": "--stragglers",
}


def _naming_options(options: dict[str, str], run: Callable[[], Any]) -> Any:
    """Run ``run()``; re-raise an :class:`InvalidArgumentError` under the command-line option's name."""
    try:
        return run()
    except InvalidArgumentError as exc:
        option = options.get(exc.argument)
        if option is None:
            raise
        message = str(exc)[len(exc.argument) + 2 :] if str(exc).startswith(exc.argument + ": ") else str(exc)
        raise InvalidArgumentError(option, message) from None


def _cerar_design(args: argparse.Namespace):
    from ...cerar.export import load_design
    from ...cerar.factory import design as build

    if args.design:
        des = load_design(args.design)
        if args.c is not None and des.c != args.c:
            raise InvalidArgumentError("--c", f"{args.c} disagrees with the design file (c = {des.c})")
        if des.N != args.workers:
            raise InvalidArgumentError("--workers", f"{args.workers} disagrees with the design file (N = {des.N})")
        return des
    if args.c is None:
        raise InvalidArgumentError("--c", "give --c C or --design FILE")
    method = args.method or ("exact" if args.c <= args.workers else "perturbation")
    eps = args.eps
    if eps is None and method == "perturbation":  # the ε predicted best for the wire's precision
        from .cerar import default_eps

        eps, args.eps_choice = default_eps(args.workers, args.c, args.dtype)
    return build(args.workers, args.c, method, eps=eps)


def _cmd_run_cerar(args: argparse.Namespace) -> int:
    return _naming_options(_CERAR_OPTIONS, lambda: _run_cerar(args))


def _run_cerar(args: argparse.Namespace) -> int:
    from ...cerar.traffic import cerar_bytes
    from ..common import EXIT_OK, emit, fmt

    des = _cerar_design(args)
    N, d = args.workers, args.d
    item = np.dtype(args.dtype).itemsize
    # the NumPy engine holds all N gradients in one process; each gloo rank holds its own
    check_dense_size("--d", N if args.engine == "numpy" else 1, d, f"the gradients (--workers x --d, {args.engine})")
    if args.engine == "numpy":
        import time

        from ...executor.cerar_arrays import run_cerar

        g = np.random.default_rng(args.seed).standard_normal((N, d)).astype(args.dtype)
        t0 = time.perf_counter()
        r = run_cerar(des, g, dtype=args.dtype)
        secs = time.perf_counter() - t0
        total = g.astype(np.float64).sum(axis=0)
        rel = float(
            np.max(np.linalg.norm(np.asarray(r.outputs, dtype=np.float64) - total, axis=1)) / np.linalg.norm(total)
        )
        summ = {
            "bytes_sent": r.bytes_sent.tolist(),
            "seconds": secs,
            "max_rel_error": rel,
            "max_rel_error_vs_allreduce": None,
        }
        baselines: dict[str, Any] = {}
    else:
        from ...executor.experiments import run_collectives

        algos = ["cerar"] + (["ring", "allreduce"] if args.baselines else [])
        res = run_collectives(
            N,
            d,
            designs={"cerar": des},
            algorithms=algos,
            dtype=args.dtype,
            seed=args.seed,
            repeats=args.repeats,
            timeout=args.timeout,
            verbose=args.verbose,
        )
        summ = res["summary"]["cerar"]
        baselines = {
            a: {
                k: res["summary"][a][k]
                for k in ("bytes_sent", "expected_bytes", "seconds", "algbw", "busbw", "max_rel_error")
            }
            for a in algos[1:]
        }
    payload = {
        "engine": args.engine,
        "workers": N,
        "c": des.c,
        "L": des.L,
        "method": des.method,
        "d": d,
        "dtype": args.dtype,
        "itemsize": item,
        "bytes_sent": summ["bytes_sent"],
        "expected_bytes": cerar_bytes(N, des.c, d, item),
        "seconds": summ["seconds"],
        "max_rel_error": summ["max_rel_error"],
        "max_rel_error_vs_allreduce": summ.get("max_rel_error_vs_allreduce"),
        "baselines": baselines,
        "seed": args.seed,
    }
    text = (
        f"CERAR N = {N}, c = {des.c} ({des.method}) on {args.engine}: d = {d} {args.dtype}, "
        f"bytes/rank {summ['bytes_sent'][0]} (formula {payload['expected_bytes']}), "
        f"{fmt(summ['seconds'] * 1e3)} ms, max relative error {fmt(summ['max_rel_error'])}"
    )
    choice = getattr(args, "eps_choice", None)
    if choice is not None:
        payload.update(eps=float(des.metadata.get("eps", np.nan)), eps_choice=choice)
        text += f"\n  ε = {fmt(payload['eps'])}: {choice}"
    for a, b in baselines.items():
        text += (
            f"\n  {a}: {fmt(b['seconds'] * 1e3)} ms, bytes/rank {b['bytes_sent'][0]}, error {fmt(b['max_rel_error'])}"
        )
    emit(args, payload, text)
    return EXIT_OK


def _cmd_run_gc(args: argparse.Namespace) -> int:
    return _naming_options(_GC_OPTIONS, lambda: _run_gc(args))


def _run_gc(args: argparse.Namespace) -> int:
    from ..._validation import check_int
    from ...coding.encoders import get_encoder
    from ...coding.evaluate import optimal_error
    from ...coding.schemes import encode
    from ...executor.experiments import run_parameter_server
    from ..common import EXIT_OK, emit, fmt, normalize_stragglers

    seed = check_int("seed", args.seed, minimum=0)
    from ..specs import design_arg

    obj = design_arg("--design", args.design)
    kw = {"seed": seed}
    if get_encoder(args.method).uses_eps:  # the encoder reads eps (gcsim.coding.encoders)
        kw["eps"] = args.eps
    sch = encode(obj, args.m, args.method, **kw)
    n = sch.n
    check_int("--workers-die", args.workers_die, minimum=0, maximum=n)
    normalize_stragglers(args, ("fixed",))  # the first n - S arrivals: S stragglers, chosen by the delays
    check_int("stragglers", args.stragglers, minimum=0, maximum=n)
    # the dying workers are seeded too: the same --seed kills the same processes
    die = sorted(np.random.default_rng(seed + 1).permutation(n)[: args.workers_die].tolist())
    rep = run_parameter_server(
        sch,
        stragglers=args.stragglers,
        deadline=args.deadline,
        die=die,
        decoder=args.decoder,
        d=args.d,
        seed=seed,
        delay_scale=args.delay_scale,
        wait_limit=args.wait_limit,
        timeout=args.timeout,
        verbose=args.verbose,
    )
    mask = np.zeros(n, dtype=bool)
    mask[rep["used"]] = True
    simulated = float(optimal_error(sch, mask, progress=False)) if args.decoder == "optimal" else None
    payload = {
        "engine": args.engine,
        "design": args.design,
        "method": sch.method,
        "m": sch.m,
        "num_parts": sch.num_parts,
        "n": n,
        "d": args.d,
        "stragglers": args.stragglers,
        "deadline": args.deadline,
        "workers_died": die,
        "used": rep["used"],
        "missing": rep["missing"],
        "late": rep["late"],
        "silent": rep["silent"],
        "arrival_order": rep["arrival_order"],
        "scheduled_arrival": rep["scheduled_arrival"],
        "decision_time": rep["decision_time"],
        "decoder": args.decoder,
        "error": rep["error"],
        "predicted_error": rep["predicted_error"],
        "residual": rep["residual"],
        "simulated_error": simulated,
        "relative_error": float(np.sqrt(rep["error"]) / max(np.linalg.norm(rep["gradient"]), 1e-300)),
        "decoded": [float(x) for x in rep["decoded"]],
        "seed": seed,
        # wall-clock measurements: they vary from run to run (nothing above depends on them)
        "decision_seconds": rep["decision_seconds"],
        "arrival_seconds": {str(j): t for j, t in sorted(rep["arrival_seconds"].items())},
        "seconds": rep["seconds"],
    }
    text = (
        f"gradient coding {sch.method} m={sch.m} on {n} workers + PS ({args.engine}): used {len(rep['used'])}, "
        f"missing {rep['missing']} (died {die}); error {fmt(rep['error'], 6)}, "
        f"predicted {fmt(rep['predicted_error'], 6)}, ‖B_F X − T‖² = {fmt(rep['residual'], 6)}"
        + (f" (simulated err {fmt(simulated, 6)})" if simulated is not None else "")
    )
    emit(args, payload, text)
    return EXIT_OK


def _subcommand(group: Any, name: str, func, help_text: str, epilog: str) -> Any:
    from ..common import HelpFormatter

    p = group.add_parser(name, help=help_text, description=help_text, epilog=epilog, formatter_class=HelpFormatter)
    p.set_defaults(func=func)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def add_cerar_run(actions: Any) -> None:
    """Add ``run`` to the actions of ``gcsim cerar`` (``gcsim cerar run``; ``run-cerar`` is its deprecated name)."""
    from ..common import float_arg, int_arg  # typed flags: a bad value is one line naming the flag

    p = _subcommand(
        actions, "run", _cmd_run_cerar, "run the CERAR ring all-reduce on a real engine (gloo) or NumPy", _CERAR_EPILOG
    )
    p.add_argument(
        "--engine", choices=["gloo", "numpy"], default="gloo", help="engine: ranks on gloo, or NumPy buffers"
    )
    p.add_argument(
        "--workers", type=int_arg(2, 1024), required=True, help="number of workers n: the ring size N (ranks)"
    )
    p.add_argument("--c", type=int_arg(1, 4096), default=None, help="components per gradient")
    p.add_argument("--d", type=int_arg(1), default=1024, help="gradient length")
    p.add_argument("--design", help="the design: an exported CERAR design (bundle path) instead of building one")
    p.add_argument(
        "--method",
        choices=["exact", "vandermonde", "perturbation"],
        default=None,
        help="encoder: the CERAR construction (default: exact if c <= N, else perturbation)",
    )
    p.add_argument(
        "--eps",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="encoder ε: perturbation ε / Vandermonde node spacing (default for perturbation: the ε predicted "
        "optimal for --dtype, docs/theory.md §50.5)",
    )
    p.add_argument(
        "--dtype",
        choices=["float32", "float64"],
        default="float32",
        help="precision on the wire; picks the default --eps",
    )
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of the Gaussian gradients")
    p.add_argument("--repeats", type=int_arg(1, 10000), default=1, help="timed repetitions")
    p.add_argument("--baselines", action="store_true", help="also run the own ring and dist.all_reduce")
    p.add_argument("--timeout", type=float_arg(0.0, strict_min=True), default=120.0, help="launcher timeout in seconds")
    p.add_argument(
        "--verbose", action="store_true", help="let gloo's and c10's own log lines through (dropped by default)"
    )
    p.set_defaults(flags=_CERAR_OPTIONS)


def register(subparsers: Any, add) -> None:
    """Add ``gc`` (``gcsim gc run``; ``run-gc`` is its deprecated name) to the ``gcsim`` parser.

    ``gcsim cerar run`` is added by :func:`add_cerar_run`, among the CERAR actions.
    """
    from ..common import float_arg, int_arg, straggler_arg  # typed flags: a bad value is one line naming the flag

    group = add("gc", _cmd_run_gc, "gradient coding on a real engine: gcsim gc run ...", _GC_EPILOG)
    runs = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _subcommand(
        runs, "run", _cmd_run_gc, "gradient coding with a parameter server on a real engine (gloo)", _GC_EPILOG
    )
    p.add_argument("--engine", choices=["gloo"], default="gloo", help="engine: the torch.distributed backend")
    p.add_argument("--design", required=True, help="the design: named instance, family:params or catalogue bundle")
    p.add_argument("--m", type=int_arg(1), default=1, help="communication reduction m")
    p.add_argument("--method", default="rd", metavar="METHOD", help=f"encoder: {', '.join(METHODS)}")
    p.add_argument("--eps", type=float_arg(0.0), default=0.0, help="encoder ε: the RD/NS jitter")
    p.add_argument(
        "--stragglers",
        type=straggler_arg,
        default="0",
        help="stragglers: S or fixed:S, decode from the first n - S arrivals (simulated clock: seeded delays "
        "after a barrier)",
    )
    p.add_argument(
        "--deadline",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="instead: decode what arrives within this many seconds (simulated clock)",
    )
    p.add_argument(
        "--workers-die",
        type=int_arg(0),
        default=0,
        help="number of (seeded) worker processes that die; at most --stragglers without --deadline",
    )
    p.add_argument(
        "--decoder",
        choices=["optimal", "fixed"],
        default="optimal",
        help="optimal: B_F⁺ T (least squares); fixed: the scheme's reference decoder on the arrivals",
    )
    p.add_argument("--d", type=int_arg(1), default=16, help="gradient length")
    p.add_argument("--delay-scale", type=float_arg(0.0), default=0.05, help="mean seeded delay per worker (s)")
    p.add_argument(
        "--wait-limit",
        type=float_arg(0.0, strict_min=True),
        default=10.0,
        help="how long past the latest scheduled arrival the PS waits before a missing worker is a timeout (s)",
    )
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of the encoder, the delays and the dying workers")
    p.add_argument("--timeout", type=float_arg(0.0, strict_min=True), default=120.0, help="launcher timeout in seconds")
    p.add_argument(
        "--verbose", action="store_true", help="let gloo's and c10's own log lines through (dropped by default)"
    )
    p.set_defaults(flags=_GC_OPTIONS)
