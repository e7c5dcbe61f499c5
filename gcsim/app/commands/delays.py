"""``gcsim decode-time`` and ``gcsim decoder-table``: delays, arrival rules and deployable decoders.

Delay models and rules are written ``KIND:key=value,...`` on the command line, with the names of
:func:`gcsim.coding.delays.delay_model` and :func:`gcsim.coding.delays.arrival_rule`:
``shifted-exponential:shift=1,rate=2``, ``pareto:scale=1,shape=2.5``,
``bimodal:p_slow=0.1,fast_shift=1,fast_rate=4,slow_shift=5,slow_rate=1``, ``trace:FILE`` (a
workers x iterations ``.npy`` or ``.csv`` of delays); ``first:s=2``, ``deadline:deadline=2.5``,
``relative:mu=0.5``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..help_texts import method_names

EXIT_OK = 0

DELAY_HELP = (
    "KIND:key=value,... e.g. shifted-exponential:shift=1,rate=2 | pareto:scale=1,shape=2.5 | "
    "bimodal:p_slow=0.1,fast_shift=1,fast_rate=4,slow_shift=5,slow_rate=1 | "
    "trace:FILE (.npy/.csv, workers x iterations)"
)
RULE_HELP = "first:s=S | deadline:deadline=T | relative:mu=MU"


def _spec(flag: str, text: str) -> tuple[str, dict[str, Any]]:
    """``KIND:key=value,...`` -> (kind, {key: float}, ``s`` an int); errors name ``flag``."""
    from ..common import UsageError, parse_integer

    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if not kind:
        raise UsageError(f"{flag}: expected KIND:key=value,..., got {text!r}")
    params: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"{flag}: expected key=value, got {item!r} in {text!r}")
        if key.strip() in params:  # the last of repeated keys would win silently
            raise UsageError(f"{flag}: {key.strip()} is given twice in {text!r}")
        key = key.strip()
        if key == "s" and value.strip().lstrip("+-").isdigit():  # a count: exact, and too long is "too large"
            try:
                params[key] = parse_integer(value)
            except ValueError as exc:
                raise UsageError(f"{flag}: s {exc}") from None
            continue
        try:
            number = float(value)
        except ValueError:
            shown = value if len(value) <= 40 else value[:40] + "..."
            raise UsageError(f"{flag}: {key}={shown!r} is not a number") from None
        params[key] = int(number) if key == "s" and number.is_integer() else number
    return kind, params


def _trace(flag: str, path: str):
    from ...coding.delays import load_trace
    from ...errors import InvalidArgumentError
    from ..common import UsageError, check_input_path, path_errors

    p = check_input_path(flag, path, folder_ok=False)
    with path_errors(flag, "read"):
        try:  # the size is checked from the .npy header (or the .csv length) before any data is read
            return load_trace(p, name=flag)
        except InvalidArgumentError as exc:
            raise UsageError(str(exc)) from None


def delays_and_rule(args: argparse.Namespace):
    from ...coding.delays import arrival_rule, delay_model
    from ...errors import InvalidArgumentError
    from ..common import UsageError

    kind, _, path = args.delays.partition(":")
    try:
        if kind.strip() == "trace":
            trace = _trace("--delays", path.strip())
            model = delay_model("trace", trace.shape[0] if args.workers is None else args.workers, delays=trace)
        else:
            kind, params = _spec("--delays", args.delays)
            if args.workers is None:
                raise UsageError("--workers: needed for a parametric delay model (a trace gives it)")
            model = delay_model(kind, args.workers, **params)
    except InvalidArgumentError as exc:  # the model's own names (shape=, rate=, ...) are written in --delays
        if exc.argument == "n":
            raise UsageError(f"--workers: {str(exc)[len('n: ') :]}") from None
        raise UsageError(f"--delays: {exc}") from None
    rule_kind, rule_params = _spec("--rule", args.rule)
    try:
        rule = arrival_rule(rule_kind, **rule_params)
        rule.check_n(model.n)
    except InvalidArgumentError as exc:
        raise UsageError(f"--rule: {exc}") from None
    return model, rule


def _cmd_decode_time(args: argparse.Namespace) -> int:
    from ...coding.delays import expected_decode_time
    from ..common import emit, fmt

    model, rule = delays_and_rule(args)
    res = expected_decode_time(model, rule, method=args.evaluation, samples=args.samples, seed=args.seed)
    payload = {
        "delays": model.describe(),
        "rule": rule.params,
        "mean": res.mean,
        "ci95": list(res.ci),
        "method": res.method,
        "abserr": res.abserr,
        "stderr": res.stderr,
        "reason": res.reason,
    }
    ci = "" if res.ci[0] == res.ci[1] else f" (interval {fmt(res.ci[0], 6)} .. {fmt(res.ci[1], 6)})"
    text = f"{model.describe()}; {rule.describe()}\nE[decode time] = {fmt(res.mean, 6)}{ci}; {res.method}"
    if res.reason:
        text += f"\n{res.reason}"
    emit(args, payload, text)
    return EXIT_OK


def _table_encoder(design: Any, args: argparse.Namespace) -> Any:
    """The encoder of ``gcsim decoder-table``: dense, or the structured RD encoder (theory §47.7).

    The structured route (:func:`gcsim.coding.structured.encode_structured`, no dense ``B``) is
    taken for ``--method rd`` when the design is kept sparse or its dense ``B`` (``m N x n``)
    would pass :data:`gcsim.limits.MAX_DENSE_ENTRIES`; it has the same diagonals as the dense RD
    encoder of the same seed.  Another method on such a design is refused naming ``--method``.
    """
    from ... import limits
    from ...coding.encoders import get_encoder
    from ...coding.schemes import encode
    from ...coding.structured import encode_structured
    from ..common import UsageError, m_from_args

    m_from_args(args, was=2)
    for key, default in (("method", "rd"), ("eps", 0.0), ("seed", 0)):
        if getattr(args, key) is None:
            setattr(args, key, default)
    N, n = int(getattr(design, "num_parts", 0)), int(getattr(design, "num_workers", 0))
    big = bool(getattr(design, "is_sparse", False)) or args.m * N * n > limits.MAX_DENSE_ENTRIES
    if not big:
        return encode(design, args.m, args.method, eps=args.eps, seed=args.seed)
    # the structured route is RD's (B stacks A diag(d_l))
    if get_encoder(args.method).structured_route(args.m) != "diagonals":
        raise UsageError(
            f"--method: {args.method!r} needs the dense encoder B ({args.m * N:,} x {n:,}), over "
            f"gcsim.limits.MAX_DENSE_ENTRIES; a design this large has a table only with --method rd "
            "(the structured route, theory §47.7)"
        )
    return encode_structured(design, args.m, eps=args.eps, seed=args.seed)


def _code_encoder(args: argparse.Namespace) -> Any:
    """The encoder of an exported code (``--code``: a folder of ``gcsim advise --out``, or a bundle), re-verified.

    Its own ``m``, method and seed are the code's: ``--m``, ``--method``, ``--eps`` and ``--seed`` are refused.
    """
    from ...catalogue import load_object
    from ...catalogue.codes import ExportedCode
    from ...coding.decoder_table import DecoderTable
    from ...coding.schemes import Scheme
    from ...coding.structured import StructuredRD
    from ...errors import CatalogueError
    from ..common import UsageError, check_input_path

    for flag, value in (("--m", args.m), ("--method", args.method), ("--eps", args.eps), ("--seed", args.seed)):
        if value is not None:
            raise UsageError(f"{flag}: not with --code (the exported code has its own encoder)")
    path = check_input_path("--code", args.code)
    try:
        obj = load_object(path)
    except CatalogueError as exc:
        raise UsageError(f"--code: {exc}") from None
    scheme = obj.scheme if isinstance(obj, (ExportedCode, DecoderTable)) else obj
    if not isinstance(scheme, (Scheme, StructuredRD)):
        raise UsageError(f"--code: {path} holds a {getattr(obj, 'kind', type(obj).__name__)!r}, not a code's encoder")
    return scheme


def _cmd_decoder_table(args: argparse.Namespace) -> int:
    from ...coding.decoder_table import decoder_table
    from ...coding.structured import StructuredRD
    from ...errors import CatalogueError
    from ..common import UsageError, check_not_exported, emit, fmt, m_note, output_path, path_errors
    from ..specs import design_arg

    # the output path first (a bad --out or --name, or an earlier table there, must not cost the
    # table), then again just before writing (a link planted meanwhile)
    name = args.name if args.name is not None else f"decoders_s{args.s_max}"
    target = output_path("--out", args.out, name, name_flag="--name", suffixes=(".json", ".npz"))
    check_not_exported("--out", target, force=args.force, name_flag="--name")
    if (args.design is None) == (args.code is None):
        raise UsageError("--design: give the design (and --m, --method) or --code (an exported code), one of them")
    if args.code is not None:
        scheme = _code_encoder(args)
    else:
        try:
            design = design_arg("--design", args.design)
        except CatalogueError as exc:  # a refused catalogue file stays exit 1; its message names the flag
            raise CatalogueError(f"--design: {exc}") from None
        scheme = _table_encoder(design, args)
    table = decoder_table(scheme, s_max=args.s_max)
    target = output_path("--out", args.out, name, name_flag="--name", suffixes=(".json", ".npz"))
    with path_errors("--out"):
        path = table.export(target, overwrite=args.force)
    norm = scheme.m * scheme.num_parts
    errors = table.errors
    payload = {
        "design": args.design,
        "code": args.code,
        "m": scheme.m,
        "method": scheme.method,
        "s_max": args.s_max,
        "patterns": len(table),
        "route": "structured" if isinstance(scheme, StructuredRD) else "dense",
        "max_error": float(errors.max()),
        "max_normalized_error": float(errors.max() / norm),
        "path": str(path),
    }
    text = (
        f"{payload['patterns']:,} patterns of up to {args.s_max} stragglers; largest optimal error "
        f"{fmt(payload['max_error'], 6)} (normalized {fmt(payload['max_normalized_error'])}); written to {path}"
    )
    m_note(args)
    emit(args, payload, text)
    return EXIT_OK


_TIME_FLAGS = {"method": "--evaluation", "samples": "--samples", "workers": "--workers"}

_FLAGS = {
    "method": "--method",
    "samples": "--samples",
    "s_max": "--s-max",
    "m": "--m",
    "eps": "--eps",
    "design": "--design",
}


def register(sub, add) -> None:
    from ..common import float_arg, int_arg
    from ..flags import deprecate

    p = add(
        "decode-time",
        _cmd_decode_time,
        "expected time until the master decodes, for a delay model and an arrival rule",
        "examples:\n  gcsim decode-time --workers 13 --delays shifted-exponential:shift=1,rate=1 --rule first:s=2\n"
        "  gcsim decode-time --workers 10 --delays pareto:scale=1,shape=2.5 --rule relative:mu=0.5 --json\n"
        "  gcsim decode-time --delays trace:delays.npy --rule deadline:deadline=2.5",
    )
    p.add_argument("--delays", required=True, help="delay model " + DELAY_HELP)
    p.add_argument("--rule", required=True, help="arrival rule: " + RULE_HELP)
    p.add_argument("--workers", type=int_arg(1), default=None, help="number of workers n (a trace gives it)")
    p.add_argument(
        "--evaluation",
        default="auto",
        choices=["auto", "exact", "quad", "monte-carlo"],
        help="how the expected time is computed: closed form, quadrature, or Monte Carlo (auto: exact, else quad)",
    )
    deprecate(p, "--method", "--evaluation", note="--method is the encoder in every other command")
    p.add_argument("--samples", type=int_arg(1), default=100_000, help="Monte Carlo draws")
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of the Monte Carlo draws")
    p.set_defaults(flags=_TIME_FLAGS)

    p = add(
        "decoder-table",
        _cmd_decoder_table,
        "precompute the optimal decoders of every pattern of up to s stragglers and export them with the encoder",
        "examples:\n  gcsim decoder-table --design bibd:13,4,1 --m 2 --method rd --s-max 2 --out tables\n"
        "  gcsim decoder-table --code advice/rank1_cyclic_ns-worker --s-max 2 --out tables  "
        "# a code exported for Bernoulli stragglers (no s: no table in the export)",
    )
    p.add_argument("--design", help="the design: named instance, family spec (bibd:13,4,1, ...) or a catalogue file")
    p.add_argument(
        "--code",
        help="the exported code instead of --design: a folder of gcsim advise --out (or a scheme bundle); its "
        "encoder is tabulated",
    )
    p.add_argument(
        "--m", type=int_arg(1), default=None, help="communication reduction m (default 1, as in every command)"
    )
    p.add_argument(
        "--method", default=None, metavar="METHOD", help=f"encoder: {', '.join(method_names())} (default rd)"
    )
    p.add_argument("--eps", type=float_arg(0.0), default=None, help="encoder ε: the RD/NS jitter (default 0)")
    p.add_argument("--seed", type=int_arg(0), default=None, help="seed of the encoder (default 0)")
    p.add_argument("--s-max", type=int_arg(0), required=True, help="largest number of stragglers tabulated")
    p.add_argument("--out", required=True, help="output folder: the bundle is written into it")
    p.add_argument("--name", help="the name of the bundle (default decoders_s<S>)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle")
    p.set_defaults(flags=_FLAGS)
