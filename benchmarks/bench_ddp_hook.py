"""Benchmark: DDP step time with the CERAR hook versus plain DDP, and the collectives alone.

World size 4, gloo on loopback, one torch thread per rank. Part 1 times the collectives on a
gradient of the large model's size: ``dist.all_reduce``, gcsim's ring all-reduce and CERAR with
c = 4 (exact), 8 and 16 (perturbation); ratios against ``dist.all_reduce`` of the same run.
Part 2 trains each model with plain DDP, DDP + CERAR hook (exact design c = N = 4, with the
hook's defaults: the ring overlapping backward, encoding/decoding in the gradient dtype since the
design's coefficients are 0/1), the same with float64 encoding/decoding, the same synchronous
inside backward (``overlap=False``, float64: the old hook's mode), and DDP + CERAR c = 8
(perturbation design, defaults: overlapped, float64). ``--before`` keeps only the variants with
the hook's defaults, to time an older gcsim (its ``src`` first on ``PYTHONPATH``) the same way. All variants live in
the same processes and take their steps **interleaved** (one step of each in turn, the order
rotating), so load from other processes hits them alike; a step's time is the slowest rank's,
from the first forward to ``opt.step()`` returning, and the table reports medians, quartiles and
ratios to plain DDP.  Part 3 (``--small-batch``, default 32; 0 skips it) is the smaller-batch case
of issue #21: the large MLP at that per-rank batch, plain DDP against the hook with its defaults
and synchronous in the gradient dtype, ``--small-repeats`` launches (default 3) of ``--steps``
interleaved steps each; it reports each launch's ratio and their median (``--only-small`` runs
just this part). Prints tables and writes ``benchmarks/results/ddp_hook.json`` (atomically, with
provenance and the load average before and after).

Usage::

    .venv/bin/python benchmarks/bench_ddp_hook.py [--quick] [--steps 30] [--batch 64] [--small-batch 32]
    .venv/bin/python benchmarks/bench_ddp_hook.py --only-small --small-repeats 5   # the batch-32 case alone
    git archive <old commit> src | tar -x -C /tmp/old   # the code before, for comparison:
    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/bench_ddp_hook.py --before
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from gcsim.cerar import design
from gcsim.executor.experiments import run_collectives
from gcsim.executor.launcher import launch
from gcsim.io.manifest import atomic_write_text, dumps, provenance

MODELS = {
    "mlp-784-1024-1024-10": (784, 1024, 1024, 10),
    "mlp-64-128-10": (64, 128, 10),
}


def _as_dict(des):
    return {"N": des.N, "c": des.c, "encoders": des.encoders, "decoders": des.decoders, "method": des.method}


def _parameters(widths) -> int:
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:], strict=True))


def step_times_job(rank: int, world_size: int, spec: dict) -> dict:
    """One rank: every variant's DDP model, stepped in turn; returns per-variant step times."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.executor.ddp_hook import register_cerar_hook

    widths = spec["widths"]

    def make():
        torch.manual_seed(0)  # the same start in every variant and on every rank
        layers: list = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers[:-1])

    variants = {}
    states = []
    for name, v in spec["variants"].items():
        model = DDP(make(), bucket_cap_mb=spec["bucket_cap_mb"])
        if v["design"] is not None:
            states.append(register_cerar_hook(model, v["design"], **v["hook"]))
        variants[name] = (model, torch.optim.SGD(model.parameters(), lr=0.01))
    gen = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(spec["batch"], widths[0], generator=gen)
    y = torch.randint(0, widths[-1], (spec["batch"],), generator=gen)
    names = list(variants)
    times: dict[str, list[float]] = {n: [] for n in names}
    for step in range(spec["warmup"] + spec["steps"]):
        order = names[step % len(names) :] + names[: step % len(names)]  # rotate who goes first
        for n in order:
            model, opt = variants[n]
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()  # DDP waits for the hook's futures
            opt.step()
            dt = time.perf_counter() - t0
            if step >= spec["warmup"]:
                times[n].append(dt)
    dist.barrier()
    for s in states:
        if hasattr(s, "close"):
            s.close()
    return times


def collectives(d: int, repeats: int) -> list[dict]:
    designs = {
        "cerar c=4 (exact)": design(4, 4, "exact"),
        "cerar c=8 (perturbation)": design(4, 8, "perturbation", eps=0.01),
        "cerar c=16 (perturbation)": design(4, 16, "perturbation", eps=0.01),
    }
    res = run_collectives(4, d, designs=designs, dtype="float32", repeats=repeats, warmup=2, timeout=600)
    S = res["summary"]
    base = S["allreduce"]["seconds"]
    rows = []
    for name, v in S.items():
        rows.append(
            {
                "algorithm": name,
                "median_seconds": v["seconds"],
                "ratio_to_allreduce": v["seconds"] / base,
                "bytes_per_rank": v["bytes_sent"][0],
                "max_rel_error": v["max_rel_error"],
            }
        )
    return rows


def _train_table(widths, batch, steps, warmup, bucket_cap_mb, variants) -> list[dict]:
    """One launch of :func:`step_times_job`: per variant the slowest rank's median step, quartiles, ratio."""
    spec = {
        "widths": list(widths),
        "batch": batch,
        "steps": steps,
        "warmup": warmup,
        "bucket_cap_mb": bucket_cap_mb,
        "variants": variants,
    }
    res = launch(step_times_job, 4, (spec,), timeout=1200).raise_on_failure()
    slowest = {n: np.max(np.array([r[n] for r in res.results]), axis=0) for n in variants}
    base = float(np.median(slowest["plain DDP"]))
    rows = []
    print(f"{'variant':<38} {'median step [ms]':>17} {'/ plain DDP':>12}")
    for n in variants:
        med = float(np.median(slowest[n]))
        q25, q75 = (float(q) for q in np.percentile(slowest[n], [25, 75]))
        rows.append(
            {"variant": n, "median_step_seconds": med, "quartiles_seconds": [q25, q75], "ratio_to_plain": med / base}
        )
        print(f"{n:<38} {1e3 * med:17.2f} {med / base:12.2f}   (quartiles {1e3 * q25:.1f}-{1e3 * q75:.1f} ms)")
    return rows


def small_batch(batch: int, launches: int, steps: int, warmup: int, bucket_cap_mb: float, exact: dict) -> dict:
    """Part 3: the large MLP at a small per-rank batch, ``launches`` launches; each one's ratios and their median."""
    widths = MODELS["mlp-784-1024-1024-10"]
    variants = {
        "plain DDP": {"design": None, "hook": {}},
        "CERAR c=4 exact (default)": {"design": exact, "hook": {}},
        "CERAR c=4 exact, synchronous": {"design": exact, "hook": {"overlap": False}},
    }
    runs = []
    for k in range(launches):
        load = os.getloadavg()[0]
        print(f"\nmlp-784-1024-1024-10, batch {batch} per rank, launch {k + 1}/{launches} (load average {load:.2f})")
        runs.append({"load_average": load, "rows": _train_table(widths, batch, steps, warmup, bucket_cap_mb, variants)})
    summary = {}
    for j, n in enumerate(variants):
        ratios = [r["rows"][j]["ratio_to_plain"] for r in runs]
        summary[n] = {"median_ratio_to_plain": float(np.median(ratios)), "ratios": ratios}
    print(f"\nbatch {batch}: median over {launches} launches of the ratio to plain DDP")
    for n, v in summary.items():
        print(f"{n:<38} {v['median_ratio_to_plain']:6.2f}   ({', '.join(f'{r:.2f}' for r in v['ratios'])})")
    return {"batch": batch, "parameters": _parameters(widths), "launches": runs, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repeats (smoke run)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per variant (default 30)")
    ap.add_argument("--batch", type=int, default=64, help="per-rank batch size (default 64)")
    ap.add_argument("--small-batch", type=int, default=32, help="per-rank batch of part 3 (default 32; 0 skips it)")
    ap.add_argument("--small-repeats", type=int, default=3, help="launches of part 3 (default 3)")
    ap.add_argument("--only-small", action="store_true", help="run part 3 only")
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket cap, MB (default 25, DDP's)")
    ap.add_argument(
        "--before",
        action="store_true",
        help="only the variants with the hook's defaults (to time an older gcsim put first on PYTHONPATH)",
    )
    ap.add_argument("--out", default=None, help="default benchmarks/results/ddp_hook[_before].json")
    args = ap.parse_args()
    if args.only_small and args.small_batch <= 0:
        ap.error("--only-small needs --small-batch > 0")
    if args.out is None:
        name = (
            "ddp_hook_before.json" if args.before else ("ddp_hook_small.json" if args.only_small else "ddp_hook.json")
        )
        args.out = str(Path(__file__).parent / "results" / name)
    steps, warmup, repeats = (5, 2, 3) if args.quick else (args.steps, 3, 10)
    load_before = os.getloadavg()
    exact, pert = _as_dict(design(4, 4, "exact")), _as_dict(design(4, 8, "perturbation", eps=0.01))
    variants = {
        "plain DDP": {"design": None, "hook": {}},
        "CERAR c=4 exact (default)": {"design": exact, "hook": {}},
        "CERAR c=4 exact, float64 compute": {"design": exact, "hook": {"compute_dtype": "float64"}},
        "CERAR c=4 exact, synchronous f64": {"design": exact, "hook": {"overlap": False, "compute_dtype": "float64"}},
        "CERAR c=8 perturbation (default)": {"design": pert, "hook": {}},
    }
    if args.before:  # an older gcsim on PYTHONPATH: its hook takes no such options
        variants = {k: v for k, v in variants.items() if not v["hook"]}
    d_large = _parameters(MODELS["mlp-784-1024-1024-10"])
    print(f"load average {load_before[0]:.2f}; world size 4, gloo, loopback, 1 torch thread per rank")
    coll: list = []
    tables = {}
    if not args.only_small:
        print(f"\ncollectives on d = {d_large:,} float32 (the large MLP's gradient), median of {repeats}")
        coll = collectives(d_large, repeats)
        print(f"{'algorithm':<28} {'median [s]':>11} {'/ allreduce':>12} {'bytes/rank':>12}")
        for r in coll:
            b = r["bytes_per_rank"] or 0
            print(f"{r['algorithm']:<28} {r['median_seconds']:11.4f} {r['ratio_to_allreduce']:12.2f} {b:12,}")
        for mname, widths in MODELS.items():
            print(f"\n{mname} ({_parameters(widths):,} parameters), batch {args.batch} per rank, {steps} steps each")
            rows = _train_table(widths, args.batch, steps, warmup, args.bucket_cap_mb, variants)
            tables[mname] = {"parameters": _parameters(widths), "rows": rows}
    small = None
    if args.small_batch > 0 and not args.before:
        small = small_batch(
            args.small_batch, 1 if args.quick else args.small_repeats, steps, warmup, args.bucket_cap_mb, exact
        )
    load_after = os.getloadavg()
    print(f"\nload average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    result = {
        "benchmark": "ddp_hook_step_time",
        "world_size": 4,
        "backend": "gloo",
        "batch": args.batch,
        "bucket_cap_mb": args.bucket_cap_mb,
        "steps": steps,
        "warmup": warmup,
        "collectives": coll,
        "training": tables,
        "small_batch": small,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "argv": sys.argv[1:],
        "gcsim_source": str(Path(__import__("gcsim").__file__).parent),
        "provenance": provenance(),
    }
    atomic_write_text(args.out, dumps(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
