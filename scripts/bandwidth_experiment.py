#!/usr/bin/env python
"""Low-bandwidth interconnect experiment: ring all-reduce vs CERAR on rate-limited links (docs/guides/executor.md).

N ranks (default 4) live in their own network namespaces, joined through a bridge by veth
links whose both directions are shaped with ``tc tbf`` to a given rate
(:class:`gcsim.executor.netem.NetemTopology`; root only).  For each link rate and message
size the ranks run, on the same float32 gradients:

* ``allreduce`` -- gloo's ``dist.all_reduce`` (library baseline),
* ``ring``      -- our ring all-reduce (reduce-scatter + all-gather),
* ``cerar_c<c>``-- CERAR with ``c`` components: exact design for ``c <= N``, else the
  multiplicative perturbation design with ``eps = u^(1/(r*+1))`` (u = float32 unit round-off,
  the rule of thumb of theory §50.5 for the best float32 ``eps``); ``--design PATH ...`` runs
  exported designs instead (``cerar_<stem>`` each; their ``N`` must be ``--workers``), e.g. one
  optimized with ``--kappa`` from :func:`gcsim.cerar.floating.kappa_for_dtype`.

Reported per (rate, size, algorithm): median time of the slowest rank, algbw = S/t and
busbw = algbw·2(N−1)/N (nccl-tests conventions, S = message bytes), bytes sent per rank
(counted) and expected (formula), the time ratio ring/CERAR next to the predicted byte ratio
2(N−1)c/(N(c+N−2)), and CERAR's relative error.  ``--rates unlimited`` runs the same namespaces
without a rate limit.  The compute time per step is reported separately (``compute_seconds``):
the encode/strip/decode arithmetic of one rank, timed in one process with torch on the same
float32 gradients (all N ranks' arithmetic at once through ``gcsim.executor.run_cerar``, divided
by N; 0 for the uncoded rings, whose only arithmetic is d additions).  A (rate, size) whose ring
would need more than ``--max-seconds`` at the link rate is skipped (and listed as skipped).

Outputs (``--out``, default ``results/bandwidth``): ``results.csv``, ``results.json``,
``figure.png``, ``manifest.json``; ``--docs DIR`` also copies the small files there.

Example (a few minutes; must run as root)::

    .venv/bin/python scripts/bandwidth_experiment.py --docs docs/results/bandwidth
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np


def _designs(N: int, cs: list[int]) -> dict:
    from gcsim.cerar.constructions import r_star
    from gcsim.cerar.factory import design

    u = 2.0**-24
    out = {}
    for c in cs:
        if c <= N:
            out[f"cerar_c{c}"] = design(N, c, "exact")
        else:
            eps = u ** (1.0 / (r_star(N, c) + 1))
            out[f"cerar_c{c}"] = design(N, c, "perturbation", eps=eps)
    return out


def _loaded_designs(paths: list[str], N: int) -> dict:
    """Exported CERAR designs (``--design``), re-verified by :func:`gcsim.load_object`; each must be for ``N``."""
    import gcsim
    from gcsim.cerar.design import CerarDesign
    from gcsim.errors import InvalidArgumentError

    out = {}
    for p in paths:
        des = gcsim.load_object(p)
        if not isinstance(des, CerarDesign):
            raise InvalidArgumentError("--design", f"{p} holds a {type(des).__name__}, not a CERAR design")
        if des.N != N:
            raise InvalidArgumentError("--design", f"{p} is a design for N = {des.N}, --workers is {N}")
        out[f"cerar_{Path(p).name.removesuffix('.json').removesuffix('.npz')}"] = des
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--c", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument(
        "--design", nargs="+", default=None, help="exported CERAR designs to run instead of building one per --c"
    )
    ap.add_argument("--rates", nargs="+", default=["20mbit", "100mbit", "1gbit"])
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1 << 18, 1 << 20, 1 << 22],
        help="message sizes in bytes (float32, so d = size/4)",
    )
    ap.add_argument(
        "--d",
        type=float,
        nargs="+",
        default=None,
        help="tensor sizes in float32 elements, e.g. 1e5 1e6 1e7 (instead of --sizes)",
    )
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="skip a (rate, size) whose ring all-reduce needs longer than this at the link rate",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--delay", default=None, help="extra one-way delay per link direction, e.g. 1ms")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/bandwidth")
    ap.add_argument("--docs", default=None, help="also copy the small results into this folder")
    ap.add_argument("--replot", action="store_true", help="only redraw figure.png from --out/results.json")
    args = ap.parse_args(argv)
    if args.replot:
        import pandas as pd

        out = Path(args.out)
        df = pd.DataFrame(json.loads((out / "results.json").read_text()))
        _figure(df, args.workers, out / "figure.png")
        if args.docs:
            shutil.copyfile(out / "figure.png", Path(args.docs) / "figure.png")
        return 0

    from gcsim.cerar.traffic import predicted_byte_ratio
    from gcsim.executor.experiments import run_collectives
    from gcsim.executor.netem import NetemTopology, netem_available
    from gcsim.io.manifest import atomic_write_text, provenance, to_jsonable

    N = args.workers
    try:
        designs = _loaded_designs(args.design, N) if args.design else _designs(N, args.c)
    except Exception as exc:  # a refused file: a usage error that names the flag
        ap.error(f"--design: {str(exc).removeprefix('--design: ')}")
    ok, why = netem_available()
    if not ok:
        print(f"bandwidth experiment skipped: {why}", file=sys.stderr)
        return 3
    ds = [int(x) for x in args.d] if args.d else [size // 4 for size in args.sizes]
    compute = {d: _compute_seconds(designs, N, d, args.seed) for d in ds}
    rows = []
    skipped = []
    load_before = os.getloadavg()
    t_start = time.time()
    link_settings = []  # as each topology had them (the host's TCP congestion control included)
    for rate in args.rates:
        with NetemTopology(N, rate=rate, delay=args.delay) as topo:
            link_settings.append(topo.link_settings())
            for d in ds:
                ring_bits = 2 * (N - 1) * -(-d // N) * 4 * 8
                if ring_bits / topo.rate_bps > args.max_seconds:
                    skipped.append({"rate": rate, "d": d, "ring_seconds_at_rate": ring_bits / topo.rate_bps})
                    print(f"{rate:>9} d = {d:.0e}: skipped (ring needs {ring_bits / topo.rate_bps:.0f} s)")
                    continue
                t0 = time.time()
                res = run_collectives(
                    N,
                    d,
                    designs=designs,
                    dtype="float32",
                    seed=args.seed,
                    repeats=args.repeats,
                    warmup=args.warmup,
                    timeout=600,
                    **topo.launch_kwargs(),
                )
                S = res["summary"]
                t_ring = S["ring"]["seconds"]
                for algo, v in S.items():
                    c = v.get("c")
                    rows.append(
                        {
                            "rate": rate,
                            "size_bytes": d * 4,
                            "d": d,
                            "algorithm": algo,
                            "c": c,
                            "seconds": v["seconds"],
                            "seconds_all": v["seconds_all"],
                            "algbw_MBps": v["algbw"] / 1e6,
                            "busbw_MBps": v["busbw"] / 1e6,
                            "bytes_sent_per_rank": None if v["bytes_sent"][0] is None else int(v["bytes_sent"][0]),
                            "expected_bytes": v["expected_bytes"],
                            "time_ratio_ring_over": t_ring / v["seconds"],
                            "predicted_byte_ratio": None if c is None else predicted_byte_ratio(N, c),
                            "max_rel_error": v["max_rel_error"],
                            "compute_seconds": compute[d].get(algo, 0.0),
                        }
                    )
                print(
                    f"{rate:>9} d = {d:.0e}: "
                    + ", ".join(f"{a} {S[a]['seconds'] * 1e3:.1f} ms" for a in S)
                    + f"  ({time.time() - t0:.1f} s)",
                    flush=True,
                )
    elapsed = time.time() - t_start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    atomic_write_text(out / "results.csv", df.drop(columns=["seconds_all"]).to_csv(index=False))
    atomic_write_text(out / "results.json", json.dumps(to_jsonable(rows), indent=1))
    command = "sudo .venv/bin/python scripts/bandwidth_experiment.py " + " ".join(
        shlex.quote(a) for a in (argv or sys.argv[1:])
    )
    import torch

    manifest = {
        "provenance": provenance(),
        "torch": torch.__version__,
        "command": command,
        "load_average_before_after": [load_before, os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "seed": args.seed,
        "elapsed_seconds": elapsed,
        "skipped": skipped,
        "params": {
            "workers": N,
            "c": args.c,
            "rates": args.rates,
            "d": ds,
            "max_seconds": args.max_seconds,
            "repeats": args.repeats,
            "warmup": args.warmup,
            "delay": args.delay,
            "dtype": "float32",
        },
        "link_settings": link_settings,
        "designs": {k: {"method": v.method, "c": v.c, "eps": v.metadata.get("eps")} for k, v in designs.items()},
        "files": ["results.csv", "results.json", "figure.png"],
    }
    _figure(df, N, out / "figure.png")
    atomic_write_text(out / "manifest.json", json.dumps(to_jsonable(manifest), indent=1))
    if args.docs:
        dst = Path(args.docs)
        dst.mkdir(parents=True, exist_ok=True)
        for name in ("results.csv", "results.json", "figure.png", "manifest.json"):
            shutil.copyfile(out / name, dst / name)
    print(f"wrote {out} in {elapsed:.0f} s")
    return 0


def _compute_seconds(designs: dict, N: int, d: int, seed: int, repeats: int = 3) -> dict:
    """Per-rank compute time of each CERAR design at size d (median of ``repeats``), in seconds."""
    import torch

    from gcsim.executor.cerar_arrays import run_cerar

    g = torch.from_numpy(np.random.default_rng(seed).standard_normal((N, d)).astype(np.float32))
    out = {}
    for name, des in designs.items():
        times = []
        for _ in range(repeats + 1):  # the first run warms up
            t0 = time.perf_counter()
            run_cerar(des, g, dtype="float32")
            times.append(time.perf_counter() - t0)
        out[name] = float(np.median(times[1:])) / N
    return out


def _figure(df, N: int, path: Path) -> None:
    from gcsim._plotting import curve_styles, legend_below, new_figure

    rates = list(dict.fromkeys(df["rate"]))
    # a grid of at most two panels per row (four links: 2 x 2), each panel wide enough to read
    ncols = min(2, len(rates))
    nrows = -(-len(rates) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(6.4 * ncols, 4.8 * nrows), squeeze=False, sharey=True)
    for ax in axes.ravel()[len(rates) :]:
        ax.set_visible(False)
    cer = df[df["algorithm"].str.startswith("cerar")]
    sizes = sorted({int(s) for s in cer["size_bytes"]})
    styles = dict(zip(sizes, curve_styles(len(sizes)), strict=True))  # one style per tensor size, all panels
    for ax, rate in zip(axes.ravel(), rates, strict=False):
        sub = cer[cer["rate"] == rate]
        for size, grp in sub.groupby("size_bytes"):
            grp = grp.sort_values("c")
            ax.plot(
                grp["c"], grp["time_ratio_ring_over"], label=f"measured, d = {int(size) // 4:.0e}", **styles[int(size)]
            )
        cs = np.array(sorted({int(c) for c in sub["c"]}))
        ratio = [2 * (N - 1) * c / (N * (c + N - 2)) for c in cs]
        ax.plot(cs, ratio, "k:", lw=1.4, zorder=5, label="predicted byte ratio $2(N-1)c/(N(c+N-2))$")
        ax.axhline(1.0, color="grey", lw=0.8, zorder=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(cs, [str(c) for c in cs])
        ax.set_xlabel("c (components)")
        ax.set_title(f"N = {N}, link {rate}")
        ax.grid(True, alpha=0.3)
    for row in axes:
        row[0].set_ylabel("time ratio  ring / CERAR (> 1: CERAR faster)")
    legend_below(fig, ncol=2, fontsize=10)  # under the panels: no legend over a curve
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
