"""``gcsim error`` and ``gcsim bounds verify``: the analysis layer from the shell.

``gcsim error --scheduler S`` evaluates the Monte Carlo draws of ``expected_error`` (stratified
for homogeneous Bernoulli) in independent chunks on ``S`` (:mod:`gcsim.coding.mc_stream`): the
serial numbers, bit for bit.  ``gcsim error --chunk K`` estimates the expected error by plain
Monte Carlo in seeded chunks of ``K`` patterns (:func:`gcsim.coding.sweeps.expected_error_sweep`),
the same numbers on every scheduler; ``gcsim bounds verify --catalogue`` checks every named
instance (:func:`gcsim.catalogue.sweeps.verify_catalogue_bounds`), one task per instance and ``s``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..help_texts import method_names

EXIT_OK, EXIT_FAILURE = 0, 1

_DESIGN_HELP = (
    "the design: named instance (pg2_9, coset_27_2_5, biregular_40_20_3_6, paley13, petersen), "
    "family spec (bibd:91,10,1 | srg:13,6,2,3 | coset:27,2,5 | biregular:40,20,3,6[,seed]) "
    "or a catalogue file"
)


def _scheme_and_model(args: argparse.Namespace):
    from ...coding.encoders import get_encoder
    from ...coding.schemes import encode
    from ...coding.straggler_models import model_class, parse_spec, straggler_model
    from ...errors import GcsimError, InvalidArgumentError
    from ..common import UsageError
    from ..specs import design_arg

    design = design_arg("--design", args.design)
    options: dict[str, Any] = {}
    if args.dist:
        options["dist"] = args.dist
    # the exact family is designed for --design-s (or -s) stragglers
    options.update(get_encoder(args.method).design_options(args.stragglers if args.design_s is None else args.design_s))
    try:
        scheme = encode(design, args.m, args.method, eps=args.eps, seed=args.seed, **options)
    except InvalidArgumentError as exc:
        if exc.argument == "s":  # the exact family's s comes from --design-s (or -s)
            flag = "--design-s" if args.design_s is not None else "--stragglers"
            raise UsageError(f"{flag}: {str(exc)[len('s: ') :]}") from None
        raise
    n = scheme.n
    if getattr(args, "straggler_spec", None):  # a kind with its own grammar: its class builds it over n
        try:
            return design, scheme, parse_spec(args.straggler_spec, n)
        except GcsimError as exc:
            raise UsageError(f"--stragglers: {str(exc).removeprefix('stragglers: ')}") from None
    takes = model_class(args.model).parameters
    if takes == ("s",) and args.stragglers > n:
        raise UsageError(f"--stragglers: must be <= n = {n} (the workers of {args.design}), got {args.stragglers}")
    try:
        model = straggler_model(args.model, n, **{takes[0]: args.p if takes == ("p",) else args.stragglers})
    except InvalidArgumentError as exc:
        if exc.argument == "s":
            raise UsageError(
                f"--stragglers: {str(exc)[len('s: ') :]}"
                + ("; try --stragglers fixed:S" if args.model == "all" and "fixed" not in str(exc) else "")
            ) from None
        raise
    return design, scheme, model


#: API argument -> the flag that sets it (errors name the flag)
_FLAGS = {
    "m": "--m",
    "eps": "--eps",
    "seed": "--seed",
    "p": "--stragglers",
    "samples": "--samples",
    "draws": "--draws",
    "method": "--method",
    "dist": "--dist",
    "bounds": "--bounds",
    "design": "--design",
    "s": "--stragglers",
    "model": "--stragglers",
    "chunk": "--chunk",
    "scheduler": "--scheduler",
    "workers": "--processes",
    "stragglers": "--stragglers",
}


def _common(p: argparse.ArgumentParser, design_required: bool = True) -> None:
    from ..common import float_arg, int_arg, straggler_arg
    from ..flags import DeprecatedAlias

    p.add_argument("--design", required=design_required, help=_DESIGN_HELP)
    p.add_argument(
        "--m",
        type=int_arg(1),
        default=None,
        help="communication reduction m: every worker sends 1/m of a gradient (default 1, as in every command)",
    )
    p.add_argument(
        "--method",
        default="rd",
        metavar="METHOD",
        # the registry (gcsim.coding.encoders); encode() refuses other names, naming the flag
        help=f"encoder: {', '.join(method_names())} (docs/guides/coding.md)",
    )
    p.add_argument("--eps", type=float_arg(0.0), default=0.0, help="encoder ε: the RD/NS jitter")
    p.add_argument(
        "--dist", choices=["rademacher", "gaussian"], help="RD/NS entry distribution (default: the method's own)"
    )
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of the encoder and of the straggler draws")
    p.add_argument(
        "--stragglers",
        "-s",
        type=straggler_arg,
        default="0",
        help="stragglers: S (= fixed:S, S uniform stragglers) or KIND:VALUE: fixed:S, all:S (every pattern, up to "
        "gcsim.limits.MAX_PATTERNS), worst:S (the worst pattern), bernoulli:P (0 <= P < 1), markov:P_ENTER,P_LEAVE "
        "(any registered straggler model's KIND:VALUES)",
    )
    # the spellings before --stragglers KIND:VALUE, hidden: --model all -s 2 is all:2, --model bernoulli --p P
    # is bernoulli:P (normalize_stragglers joins them). Its choices stay the four kinds --model offered when it
    # was deprecated (0752bf5), not the registry's: a kind registered since has only the new spelling, and the
    # parser imports no straggler model (gcsim --help stays light, tests/test_cli_startup.py)
    p.add_argument(
        "--model",
        action=DeprecatedAlias,
        new="--stragglers KIND:S",
        note="--model all -s 2 is --stragglers all:2",
        default="fixed",
        choices=["fixed", "bernoulli", "all", "worst"],
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--p",
        action=DeprecatedAlias,
        new="--stragglers bernoulli:P",
        type=float_arg(0.0, 1.0, strict_max=True),
        default=0.1,
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--design-s",
        type=int_arg(0),
        default=None,
        help="exact family: stragglers it is designed for (default: --stragglers)",
    )
    p.add_argument("--samples", type=int_arg(1), default=2000, help="Monte Carlo patterns")
    p.set_defaults(flags=_FLAGS)


def _cmd_error(args: argparse.Namespace) -> int:
    from ...coding.evaluate import expected_error, worst_case_error
    from ..common import emit, fmt, m_from_args, m_note, normalize_stragglers, show_progress

    normalize_stragglers(args)  # every registered kind with a KIND:VALUES spec
    m_from_args(args, was=2)

    design, scheme, model = _scheme_and_model(args)
    norm = scheme.m * scheme.num_parts
    if model.adversarial:
        if args.chunk is not None or args.scheduler != "serial":
            from ..common import UsageError

            raise UsageError("--chunk/--scheduler: the chunked Monte Carlo needs --stragglers fixed:S or bernoulli:P")
        res = worst_case_error(scheme, args.stragglers, seed=args.seed)
        payload = {
            "design": args.design,
            "params": list(design.params),
            "m": scheme.m,
            "method": scheme.method,
            "model": "worst",
            "s": args.stragglers,
            "worst_error": res.value,
            "normalized": res.value / norm,
            "stragglers_set": [int(i) for i in (~res.mask).nonzero()[0]],
            "evaluation": res.method,
        }
        text = (
            f"worst-case optimal error over |S| = {args.stragglers}: {fmt(res.value, 6)} "
            f"(normalized err/(mN) = {fmt(res.value / norm)}; {res.method}); S = {payload['stragglers_set']}"
        )
    else:
        if args.chunk is not None:
            from ...coding.sweeps import expected_error_sweep
            from ..common import UsageError
            from ..sweep_options import scheduler_from_args

            if not model.streamable:
                raise UsageError("--chunk: the chunked Monte Carlo needs --stragglers fixed:S or bernoulli:P")
            scheduler, workers = scheduler_from_args(args)
            exp = expected_error_sweep(
                scheme,
                model,
                samples=args.samples,
                chunk=args.chunk,
                seed=args.seed,
                scheduler=scheduler,
                workers=workers,
                progress=show_progress(args),
            )
        elif args.scheduler != "serial" or args.processes is not None:
            from ..sweep_options import scheduler_from_args

            # the Monte Carlo draws in independent chunks on the scheduler: the serial numbers (mc_stream)
            scheduler, workers = scheduler_from_args(args)
            exp = expected_error(
                scheme,
                model,
                samples=args.samples,
                seed=args.seed,
                progress=show_progress(args),
                scheduler=scheduler,
                workers=workers,
            )
        else:
            exp = expected_error(scheme, model, samples=args.samples, seed=args.seed, progress=show_progress(args))
        payload = {
            "design": args.design,
            "params": list(design.params),
            "m": scheme.m,
            "method": scheme.method,
            "model": model.describe() if hasattr(model, "describe") else args.model,
            "mean": exp.mean,
            "ci95": list(exp.ci),
            "normalized_mean": exp.mean / norm,
            "evaluation": exp.method,
            "count": exp.count,
            "raw_squared": True,
        }
        text = (
            f"E[optimal error] = {fmt(exp.mean, 6)} (95% CI {fmt(exp.ci[0], 6)} .. {fmt(exp.ci[1], 6)}; "
            f"normalized err/(mN) = {fmt(exp.mean / norm)}; {exp.method})"
        )
    m_note(args)
    emit(args, payload, text)
    return EXIT_OK


def _cmd_bounds(args: argparse.Namespace) -> int:
    from ...coding.verify import verify_bounds
    from ..common import UsageError, emit, m_from_args, m_note, normalize_stragglers, show_progress

    normalize_stragglers(args)  # verify_bounds checks the patterns of any model: every kind with a spec
    m_from_args(args, was=2)

    if args.action != "verify":
        raise UsageError(f"unknown bounds action {args.action!r} (use: gcsim bounds verify ...)")
    if args.catalogue:
        return _cmd_bounds_catalogue(args)
    if args.design is None:
        raise UsageError("--design: required (or --catalogue for every named instance)")
    if args.scheduler != "serial" or args.processes is not None:
        raise UsageError("--scheduler: one scheme is one task; use it with --catalogue")
    _, scheme, model = _scheme_and_model(args)
    bounds = args.bounds.split(",") if args.bounds else None
    samples = None if model.adversarial or model.exhaustive else args.samples
    report = verify_bounds(
        scheme, model, bounds, samples=samples, seed=args.seed, draws=args.draws, progress=show_progress(args)
    )
    m_note(args)
    emit(args, report.to_dict(), report.summary)
    return EXIT_OK if report.ok else EXIT_FAILURE


def _cmd_bounds_catalogue(args: argparse.Namespace) -> int:
    """``gcsim bounds verify --catalogue``: every named instance, one task per (instance, s)."""
    from ...catalogue.sweeps import verify_catalogue_bounds
    from ..common import UsageError, emit, m_note, show_progress
    from ..sweep_options import scheduler_from_args

    if args.design is not None:
        raise UsageError("--design: not with --catalogue (it checks every named instance)")
    if args.model != "fixed" or args.bounds or args.eps or args.dist or args.design_s is not None:
        raise UsageError("--catalogue: takes --m, --method, --stragglers, --samples, --draws and --seed only")
    scheduler, workers = scheduler_from_args(args)
    cases = verify_catalogue_bounds(
        m=args.m,
        methods=[args.method],
        stragglers=None if args.stragglers == 0 else [args.stragglers],
        samples=args.samples,
        draws=args.draws,
        seed=args.seed,
        scheduler=scheduler,
        workers=workers,
        progress=show_progress(args),
    )
    rows = [
        {"name": c.name, "method": c.method, "s": c.s, "seed": c.seed, "ok": c.report.ok, "report": c.report.to_dict()}
        for c in cases
    ]
    ok = all(c.report.ok for c in cases)
    lines = [f"bounds over the catalogue (m = {args.m}, {args.method}): {'all hold' if ok else 'VIOLATIONS'}"]
    lines += [
        f"  {c.name:<22} s = {c.s:<3} {'ok' if c.report.ok else f'{len(c.report.violations)} violation(s)'}"
        for c in cases
    ]
    m_note(args)
    emit(args, {"ok": ok, "cases": rows}, "\n".join(lines))
    return EXIT_OK if ok else EXIT_FAILURE


def _int1(text: str) -> int:
    from ..common import int_arg

    return int_arg(1)(text)


_int1.__name__ = "integer"


def register(sub, add) -> None:
    from ..sweep_options import add_scheduler_flags

    p = add(
        "error",
        _cmd_error,
        "optimal-decoding error of a scheme: expected (exact or Monte Carlo) or worst case",
        "examples:\n  gcsim error --design pg2_9 --m 2 --method rd -s 20 --samples 5000\n"
        "  gcsim error --design coset_27_2_5 --m 2 --method rd --eps 0.1 --stragglers bernoulli:0.2 --json\n"
        "  gcsim error --design petersen --m 1 --method naive --stragglers worst:3\n"
        "  gcsim error --design pg2_9 --m 2 --method rd -s 20 --samples 100000000 --scheduler local",
    )
    _common(p)
    add_scheduler_flags(p, "the Monte Carlo chunks", old_flag="--workers")
    p.add_argument(
        "--chunk",
        type=_int1,
        default=None,
        help="plain Monte Carlo in seeded chunks of this many patterns (any --scheduler gives the same numbers; "
        "without --chunk, the scheduler runs expected_error's own draws in chunks: the serial numbers)",
    )
    p = add(
        "bounds",
        _cmd_bounds,
        "check lower <= simulated <= upper for a scheme (exit 1 on a violation)",
        "examples:\n  gcsim bounds verify --design pg2_9 --m 2 --method rd -s 20 --json\n"
        "  gcsim bounds verify --design paley13 --m 2 --method rd --stragglers all:2 "
        "--bounds rank_lower,rd_upper\n"
        "  gcsim bounds verify --catalogue --m 2 --method rd --scheduler local",
    )
    p.add_argument("action", choices=["verify"], help="the only action")
    _common(p, design_required=False)
    p.set_defaults(samples=200)
    p.add_argument(
        "--catalogue",
        action="store_true",
        help="check every named instance instead of --design (with -s 0: s = 1, n/4, n/2 each)",
    )
    add_scheduler_flags(p, "the catalogue checks", old_flag="--workers")
    p.add_argument("--bounds", help="comma-separated bound names (default: all applicable built-ins)")
    p.add_argument("--draws", type=_int1, default=32, help="encoder redraws for bounds on expectations")
