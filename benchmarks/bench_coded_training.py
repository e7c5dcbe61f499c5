"""Step time of gradient-coded training against plain DDP: same CNN, same ranks, same data per step.

Run::

    .venv/bin/python benchmarks/bench_coded_training.py --ranks 4 --steps 30 --code DIR

(``DIR`` from ``gcsim advise --workers 13 --load 4 --m 2 --stragglers bernoulli:0.1 --out codes``).
Prints one JSON object: per step (median over the steps after a warm-up) the coded and the DDP step
times, their ratio, the bytes each rank sends per step (coded: the all-gather of its workers'
messages, ring count; DDP: the ring all-reduce of ``d`` float32), and the coded path's own
overhead -- encode + decoder lookup + decode -- as a fraction of the coded step.  DDP computes the
gradient of the same images once per rank (its shard of the ``N`` parts' batches); the coded
path computes each part held by a rank's coded workers (the load ``ℓ`` times more backward work,
the price of redundancy that no implementation removes).  No assertion: the numbers are reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np


def _job(rank: int, world: int, spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.coding.stragglers import straggler_model
    from gcsim.executor.coded_training import CodedTrainer
    from gcsim.learning.coded_training import small_cnn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    n_img, b = 13 * 64, spec["batch"]
    data = torch.utils.data.TensorDataset(torch.randn(n_img, 1, 28, 28), torch.randint(0, 10, (n_img,)))
    net = small_cnn()
    trainer = CodedTrainer(spec["code"], net, torch.optim.SGD(net.parameters(), lr=0.01), data, batch_size=b)
    masks = straggler_model("bernoulli", trainer.n, p=0.1).sample(spec["steps"], 0)
    coded, own = [], []
    for t in range(spec["steps"]):
        dist.barrier()
        t0 = time.perf_counter()
        rec = trainer.step(masks[t], log=False, check=False)
        coded.append(time.perf_counter() - t0)
        own.append(rec.seconds["encode"] + rec.seconds["decoder"] + rec.seconds["decode"])
    sent = rec.bytes_sent
    # plain DDP: each rank the same number of images per step as its share of the N parts' batches
    per_rank = trainer.N * b // world
    model = DDP(small_cnn())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = data.tensors[0][:per_rank], data.tensors[1][:per_rank]
    ddp = []
    for _ in range(spec["steps"]):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        ddp.append(time.perf_counter() - t0)
    d = trainer.d
    return {
        "coded": coded,
        "own": own,
        "ddp": ddp,
        "coded_bytes": sent,
        "ddp_bytes": int(2 * (world - 1) * d * 4 / world),
        "d": d,
        "parts_on_rank": int(trainer.parts.size),
        "n": trainer.n,
        "m": trainer.m,
    }


def main() -> None:
    from gcsim.executor.launcher import launch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--code", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=4, help="images per part per step")
    args = p.parse_args()
    res = launch(_job, args.ranks, ({"code": args.code, "steps": args.steps, "batch": args.batch},), timeout=900)
    R = res.raise_on_failure().results
    warm = min(5, args.steps // 3)

    def med(key: str) -> float:
        return statistics.median(float(np.max([r[key][t] for r in R])) for t in range(warm, args.steps))

    coded, ddp = med("coded"), med("ddp")
    own = statistics.median(float(np.mean([r["own"][t] for r in R])) for t in range(warm, args.steps))
    out = {
        "ranks": args.ranks,
        "n": R[0]["n"],
        "m": R[0]["m"],
        "d": R[0]["d"],
        "batch_per_part": args.batch,
        "coded_step_s": coded,
        "ddp_step_s": ddp,
        "ratio": coded / ddp,
        "coded_bytes_per_rank": max(r["coded_bytes"] for r in R),
        "ddp_bytes_per_rank": R[0]["ddp_bytes"],
        "encode_decode_s": own,
        "overhead_fraction": own / coded,
        "parts_per_rank": [r["parts_on_rank"] for r in R],
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
