"""``gcsim train``: SGD/Adam with coded gradients under Bernoulli stragglers."""
from __future__ import annotations

import argparse

EXIT_OK = 0


def _cmd_train(args: argparse.Namespace) -> int:
    from ..cli import UsageError, _emit
    from ..io.manifest import atomic_write_text, dumps, provenance
    from .datasets import load_digits, load_mnist
    from .train import compare, default_codes

    codes = default_codes()
    if args.codes:
        wanted = [w.strip().lower() for w in args.codes.split(",") if w.strip()]
        chosen = [c for c in codes if any(c.label.lower().startswith(w) for w in wanted)]
        if not chosen:
            raise UsageError(f"--codes matched nothing; labels are: {[c.label for c in codes]}")
        codes = chosen
    data = load_mnist(args.mnist, max_train=args.max_train) if args.mnist else load_digits(seed=args.seed)
    table = compare(codes, data, p=args.p, iterations=args.iterations, optimizer=args.optimizer, lr=args.lr,
                    seed=args.seed)
    last = table.sort_values("iteration").groupby("label", sort=False).tail(1)
    rows = last[["label", "iteration", "wallclock", "train_loss", "test_acc", "rel_error"]].to_dict("records")
    payload = {"dataset": data.name, "p": args.p, "iterations": args.iterations, "optimizer": args.optimizer,
               "seed": args.seed, "final": rows}
    if args.out:
        from pathlib import Path
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "history.csv", table.to_csv(index=False))
        atomic_write_text(out / "manifest.json", dumps({"command": "gcsim train", "params": payload,
                                                         "provenance": provenance()}))
        payload["out"] = str(out)
    lines = [f"{data.name}: {args.iterations} iterations, Bernoulli p = {args.p}, {args.optimizer}, seed {args.seed}",
             f"{'code':<36} {'sim. seconds':>12} {'train loss':>10} {'test acc':>8} {'rel. error':>10}"]
    lines += [f"{r['label']:<36} {r['wallclock']:>12.3f} {r['train_loss']:>10.4f} {r['test_acc']:>8.3f} "
              f"{r['rel_error']:>10.3g}" for r in rows]
    _emit(args, payload, "\n".join(lines))
    return EXIT_OK


def register(sub, add) -> None:
    p = add("train", _cmd_train, "train an MLP (64-128-10) with coded gradients under Bernoulli stragglers",
            "examples:\n  gcsim train --iterations 100 --p 0.2\n  gcsim train --codes uncoded,rd --json\n"
            "  gcsim train --mnist ~/data/mnist --max-train 5000 --out results/train-mnist")
    p.add_argument("--codes", help="comma-separated label prefixes (default: all codes); e.g. uncoded,rd,ns")
    p.add_argument("--p", type=float, default=0.2, help="straggling probability (default 0.2)")
    p.add_argument("--iterations", type=int, default=150)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mnist", help="folder of MNIST IDX files or an .npz (default: scikit-learn digits)")
    p.add_argument("--max-train", type=int, default=None, help="MNIST: use only this many training images")
    p.add_argument("--out", help="write history.csv and a manifest into this folder")
