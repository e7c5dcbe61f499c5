"""Train a CNN on MNIST with an exported gradient code: torchrun, or the script's own launcher.

The code comes from the advisor (``gcsim advise ... --out DIR``) or a decoder table
(``gcsim decoder-table ... --out DIR``); every rank loads it from the files alone and re-verifies
it.  The ``n`` coded workers are laid over the ranks (``n >= ranks``), the data is cut into the
code's ``N`` parts, every step draws a straggler pattern from the model given (the same on every
rank), decodes with the code's table or the certified optimal fallback, and applies the same
update on every rank (gcsim.executor.coded_training.CodedTrainer).  Rank 0 prints each logged
step and, at the end, the mean decoding error against the analysis' expected error; the script
checks that every rank holds bit-identical parameters and writes ``report.json`` into ``--out``.

Run::

    gcsim advise --workers 13 --load 4 --m 2 --stragglers bernoulli:0.1 --out codes
    torchrun --nproc_per_node=4 --standalone examples/train_coded.py \\
        --code codes/rank1_cyclic_ns-worker --stragglers bernoulli:0.1 --out runs/coded
    python examples/train_coded.py --world-size 4 --code codes/rank1_cyclic_ns-worker \\
        --stragglers markov:0.05,0.45 --out runs/coded-markov

(the folder name is the one ``gcsim advise`` prints).  Exit status 0 on success, 1 when the
replicas differ or a rank fails, 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--code", required=True, help="the exported code: a folder of gcsim advise --out, or a bundle")
    p.add_argument("--stragglers", default="bernoulli:0.1", help="straggler model KIND:VALUES (default bernoulli:0.1)")
    p.add_argument("--world-size", type=int, default=None, help="ranks to start (without torchrun)")
    p.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    p.add_argument("--batch-size", type=int, default=8, help="mini-batch of each data part (default 8)")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9)")
    p.add_argument("--max-train", type=int, default=1000, help="training images used (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data, the model and the stragglers")
    p.add_argument("--out", required=True, help="output folder: report.json")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before the ranks are stopped")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "max_train"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}: must be >= 1")
    if args.seed < 0:
        p.error("--seed: must be >= 0")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        p.error(f"--out: {out} is not a folder")
    if not Path(args.code).exists() and not Path(args.code + ".json").exists():  # a folder, a file or a bundle stem
        p.error(f"--code: {args.code} does not exist")
    return args


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    import gcsim
    from gcsim.app.commands.advise import parse_stragglers
    from gcsim.executor.coded_training import load_training_code

    scheme, _ = load_training_code(args.code)  # re-verified from the files (every rank does it again)
    try:
        model = parse_stragglers(args.stragglers, scheme.n)
    except (gcsim.errors.GcsimError, SystemExit) as exc:
        raise SystemExit(f"train_coded.py: error: --stragglers: {exc}") from None
    return {
        "code": str(Path(args.code).resolve()),
        "dataset": "mnist",
        "max_train": args.max_train,
        "model": "cnn",
        "optimizer": "sgd",
        "lr": args.lr,
        "batch_size": args.batch_size,
        "iterations": args.steps,
        "stragglers": model,
        "seed": args.seed,
        "print_every": max(1, args.steps // 10),
    }


def _finish(reports: list[dict[str, Any]], out: Path) -> int:
    digests = sorted({r["digest"] for r in reports})
    first = reports[0]
    print(first["summary"])
    same = len(digests) == 1
    print(
        f"{len(reports)} ranks, {first['d']:,} parameters, test accuracy {first['test_acc']:.3f}; replicas "
        + ("bit-identical" if same else f"DIFFER ({len(digests)} digests)")
    )
    out.mkdir(parents=True, exist_ok=True)
    body = {k: v for k, v in first.items() if k != "rank"}
    (out / "report.json").write_text(json.dumps({**body, "ranks": len(reports), "digests": digests}, indent=1))
    return 0 if same else 1


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    spec = _spec(args)
    from gcsim.learning.coded_training import coded_job

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        from datetime import timedelta

        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
        report = coded_job(rank, world, spec)
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, report)
        dist.destroy_process_group()
        return _finish(gathered, Path(args.out)) if rank == 0 else 0
    if args.world_size is None:
        print("train_coded.py: error: --world-size is required without torchrun", file=sys.stderr)
        return 2
    from gcsim.executor.launcher import RankFailure, launch

    try:
        result = launch(coded_job, args.world_size, (spec,), timeout=args.timeout).raise_on_failure()
    except RankFailure as exc:
        print(f"train_coded.py: {exc}", file=sys.stderr)
        return 1
    return _finish(result.results, Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
