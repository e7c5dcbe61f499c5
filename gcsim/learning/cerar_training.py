"""The CERAR paper's training experiment: DDP on MNIST over emulated slow links (docs/results/cerar_training.md).

``N`` gloo ranks train a convolutional network of about 1.02 M parameters (:func:`conv_net`:
two 3 x 3 convolutions of 16 and 32 channels, each followed by 2 x 2 max-pooling, a fully
connected layer of ``width`` units and the 10 logits) on the 5,000-image MNIST subset
(:func:`gcsim.learning.datasets.load_mnist_subset`), each rank on its own shard, with
``DistributedDataParallel``: the gradient all-reduce is gloo's own (plain DDP) or CERAR through
:func:`gcsim.executor.ddp_hook.register_cerar_hook`.  The model is mostly its wide fully
connected layer, so a step costs little arithmetic (about 60 ms on the 2-core machine, 4 ranks)
and many bytes (4.1 MB of float32 gradients): at 20 and 100 Mbit/s the link is the bottleneck.

Per run the ranks record (:func:`cerar_training_job`)

* the wall time of every SGD step (forward, backward with the all-reduce, update), measured
  around the step only: the parameter snapshots taken every ``eval_every`` steps are written
  outside the clock and evaluated afterwards by the launching process (:func:`evaluate_run`),
  so evaluation costs no link time and the same run gives the same curve at any eval cadence;
* the bytes the rank sent: its interface's transmit counter (``/proc/net/dev`` of its network
  namespace: payload, TCP/IP headers and acknowledgements), the hook's payload counter, and the
  gradient bucket sizes, from which :func:`payload_bytes` gives the payload formula;
* its parameters at step 0, every ``eval_every`` steps and the last step: the launching process
  computes the test accuracy of replica 0 at each of them, of every replica at the end, and the
  replica drift ``max_ij max_k |θ_i[k] − θ_j[k]|`` (and its Euclidean version).

Same seed: the same initialization (``torch.manual_seed`` before the model is built, on every
rank) and the same data order (rank ``r`` draws its batches from ``Generator(seed·1000 + r)``)
in every variant.

The pieces are in :mod:`gcsim.learning.cerar_model` (network, data, bytes),
:mod:`gcsim.learning.cerar_runs` (rank jobs, evaluation, designs, one link's launch) and
:mod:`gcsim.learning.cerar_links` (the link experiment); every public name is re-exported here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._plotting import curve_styles, legend_below, new_figure, save
from .._progress import StageProgress
from .._validation import check_bool, check_int
from ..executor.netem import netem_available
from ..io.manifest import atomic_write_text, provenance, to_jsonable
from .cerar_links import (
    BASELINE,
    BIG_WIDTH,
    LINKS,
    STAGE_LINKS,
    _cell_steps,
    _step_quantiles,
    link_claims,
    links_experiment,
    links_table,
    plot_links,
    refresh_summary,
    seed_interval,
    summarize_links,
    timing_row,
    verdict,
)
from .cerar_model import (
    CONV_WIDTH,
    conv_net,
    interface_tx_bytes,
    load_experiment_data,
    n_parameters,
    payload_bytes,
    write_training_split,
)
from .cerar_runs import (
    HYPER,
    KAPPAS,
    OPTIMIZER_OPTIONS,
    VARIANTS,
    Evaluator,
    _prepare_designs,
    cerar_training_job,
    design_error_job,
    evaluate_run,
    experiment_designs,
    measure_design_errors,
    run_key,
    run_link,
    theta_digest,
    time_to_target,
)

__all__ = [
    "CONV_WIDTH",
    "conv_net",
    "n_parameters",
    "interface_tx_bytes",
    "payload_bytes",
    "cerar_training_job",
    "design_error_job",
    "evaluate_run",
    "write_training_split",
    "Evaluator",
    "run_link",
    "summarize_cell",
    "experiment_designs",
    "measure_design_errors",
    "VARIANTS",
    "KAPPAS",
    "OPTIMIZER_OPTIONS",
    "time_to_target",
    "run_key",
    "theta_digest",
    "load_experiment_data",
    "BIG_WIDTH",
    "LINKS",
    "STAGE_LINKS",
    "link_claims",
    "timing_row",
    "seed_interval",
    "verdict",
    "summarize_links",
    "BASELINE",
    "refresh_summary",
    "links_table",
    "links_experiment",
    "plot_links",
]


def summarize_cell(cell: dict, *, rate: str, label: str, c: int | None, N: int, target: float, repeat: int = 0) -> dict:
    """One table row of a cell: times, accuracy, drift, bytes (counted and by formula), step times."""
    steps, step_s, tx, hook, buckets = _cell_steps(cell)
    t_target, s_target = time_to_target(cell["eval"]["curve"], target)
    return {
        "link": rate,
        "variant": label,
        "c": c,
        "repeat": repeat,
        "steps": steps,
        "target_acc": target,
        "time_to_target_s": t_target,
        "step_at_target": s_target,
        "train_seconds": float(step_s.sum()),
        "final_acc_mean": float(np.mean(cell["eval"]["final_acc"])),
        "final_acc_min": float(np.min(cell["eval"]["final_acc"])),
        "drift_max_abs": cell["eval"]["final_drift_max_abs"],
        "drift_l2": cell["eval"]["final_drift_l2"],
        **_step_quantiles(step_s),
        "payload_bytes_per_rank": None if hook[0] is None else int(max(hook)),
        "payload_formula_bytes": payload_bytes(buckets, N, c if label != "ring" else None, steps),
        "wire_bytes_per_rank": None if None in tx else int(np.mean(tx)),
        "wire_bytes_max_rank": None if None in tx else int(max(tx)),
        "buckets": len(buckets),
        "wall_seconds": cell["wall_seconds"],
        "load_before": cell["load_before"][0],
        "load_after": cell["load_after"][0],
    }


#: The quick scale (committed results, sized for the shared 2-core machine): every variant over
#: 100 Mbit/s; the ring, the exact design and the κ-optimized c = 16 design over 1 Gbit/s and unlimited
#: links; the ring and κ-optimized c = 16 over 20 Mbit/s (a ring step there costs 2.4 s of link time);
#: then the key cell (100 Mbit/s, ring and κ-optimized c = 16) three times more.  ``full`` runs every
#: variant everywhere, for longer, and the key cell twice more.
QUICK: dict[str, Any] = {
    "steps": 40,
    "eval_every": 4,
    "rates": {
        "20mbit": ["ring", "optimized c=16"],
        "100mbit": list(VARIANTS),
        "1gbit": ["ring", "exact c=4", "optimized c=16"],
        "unlimited": ["ring", "exact c=4", "optimized c=16"],
    },
    "key_repeats": 3,
}
FULL: dict[str, Any] = {
    "steps": 150,
    "eval_every": 5,
    "rates": {rate: list(VARIANTS) for rate in ("20mbit", "100mbit", "1gbit", "unlimited")},
    "key_repeats": 2,
}
#: Target test accuracy of the time-to-target column (docs/results/cerar_training.md says why 0.90).
TARGET = 0.85
#: The acceptance cell: this link, the ring against this variant.
KEY_RATE, KEY_VARIANT = "100mbit", "optimized c=16"


def cerar_training_experiment(
    out: str | Path,
    *,
    full: bool = False,
    N: int = 4,
    design_cache: str | Path | None = None,
    rates: list[str] | None = None,
    steps: int | None = None,
    manifest_name: str = "manifest.json",
    log=print,
    progress: bool = True,
) -> dict:
    """Run the experiment (root only: emulated links), write its files into ``out``; returns the summary.

    Files: ``results.csv`` / ``results.json`` (one row per link, variant and repeat:
    :func:`summarize_cell`), ``curves.csv`` (test accuracy of replica 0 and drift at every
    evaluated step, with the cumulative step time), ``designs.json`` (each design's κ and measured
    relative error), ``figure.png`` (:func:`plot_training`), ``manifest_name`` (command, versions,
    parameters, load averages, timings, the key cell's verdict :func:`key_cell`).  ``rates`` /
    ``steps`` override the scale's (for a smaller run); ``design_cache`` is the folder of the
    κ-optimized designs (computed there when missing).  ``progress``: the SGD steps of all links on a
    bar (a terminal, a notebook) or as lines on stderr, naming the link and variant in training.
    """
    import json
    import os
    import shutil
    import tempfile

    ok, why = netem_available()
    if not ok:
        raise RuntimeError(f"the CERAR training experiment needs emulated links: {why}")
    progress = check_bool("progress", progress)
    scale = FULL if full else QUICK
    steps = int(scale["steps"] if steps is None else check_int("steps", steps, minimum=1))
    plan = {r: v for r, v in scale["rates"].items() if rates is None or r in rates}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    load_start = os.getloadavg()
    designs = experiment_designs(N, None if design_cache is None else Path(design_cache), log=log)
    work = Path(tempfile.mkdtemp(prefix="gcsim-cerar-training-"))
    bar: StageProgress | None = None
    try:
        paths, dtypes, design_rows = _prepare_designs(designs, work, N, log)
        spec = {**HYPER, "steps": steps, "eval_every": int(scale["eval_every"]), "compute_dtype": dtypes}
        evaluator = Evaluator(spec["width"], data_seed=spec["data_seed"])
        rows, curves = [], []
        port = 29631
        jobs = [(rate, labels, 0) for rate, labels in plan.items()]
        if KEY_RATE in plan:
            jobs += [(KEY_RATE, ["ring", KEY_VARIANT], k + 1) for k in range(int(scale["key_repeats"]))]
        bar = StageProgress(
            sum(len(labels) for _, labels, _ in jobs) * steps,
            "cerar-training",
            "SGD steps",
            progress,
            every=30.0,
            follow_up="scoring",
        )
        for rate, labels, repeat in jobs:
            port += 1
            t0 = time.time()
            variants = [(lab, paths.get(lab)) for lab in labels]
            cells = run_link(rate, variants, N=N, spec=spec, work=work, evaluator=evaluator, port=port, progress=bar)
            for lab, cell in cells.items():
                c = VARIANTS[lab][1] if VARIANTS[lab][0] is not None else None
                row = summarize_cell(cell, rate=rate, label=lab, c=c, N=N, target=TARGET, repeat=repeat)
                rows.append(row)
                curves += [{"link": rate, "variant": lab, "repeat": repeat, **p} for p in cell["eval"]["curve"]]
            log(
                f"{rate:>9} (repeat {repeat}): "
                + ", ".join(f"{r['variant']} {r['step_median_s'] * 1e3:.0f} ms/step" for r in rows[-len(cells) :])
                + f"  ({time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f})"
            )
    finally:
        if bar is not None:
            bar.close()
        shutil.rmtree(work, ignore_errors=True)
    import pandas as pd

    table = pd.DataFrame(rows)
    atomic_write_text(out / "results.csv", table.to_csv(index=False))
    atomic_write_text(out / "results.json", json.dumps(to_jsonable(rows), indent=1))
    atomic_write_text(out / "curves.csv", pd.DataFrame(curves).to_csv(index=False))
    atomic_write_text(out / "designs.json", json.dumps(to_jsonable(design_rows), indent=1))
    plot_training(pd.DataFrame(curves), TARGET, out / "figure.png")
    import torch

    manifest = {
        "provenance": provenance(),
        "torch": torch.__version__,
        "scale": "full" if full else "quick",
        "N": N,
        "steps": steps,
        "eval_every": scale["eval_every"],
        "plan": plan,
        "key_cell": {"link": KEY_RATE, "variants": ["ring", KEY_VARIANT], "repeats": scale["key_repeats"]},
        "hyper": HYPER,
        "target_acc": TARGET,
        "parameters": n_parameters(HYPER["width"]),
        "designs": design_rows,
        "evaluations": evaluator.evaluations,
        "cpu_count": os.cpu_count(),
        "load_average_start_end": [load_start, os.getloadavg()],
        "elapsed_seconds": time.time() - t_start,
        "key_cell_result": key_cell(rows),
        "files": ["results.csv", "results.json", "curves.csv", "designs.json", "figure.png"],
    }
    atomic_write_text(out / manifest_name, json.dumps(to_jsonable(manifest), indent=1))
    return {"rows": rows, "designs": design_rows, "manifest": manifest}


def key_cell(rows: list[dict]) -> dict:
    """The acceptance check on the table: at :data:`KEY_RATE` the :data:`KEY_VARIANT` design against the ring.

    Medians over the repeats of the time to target; ``holds`` when the design reaches the target
    sooner and its final mean accuracy is within 0.5 points of the ring's.

    Examples
    --------
    >>> rows = [{"link": "100mbit", "variant": "ring", "time_to_target_s": 30.0, "final_acc_mean": 0.94},
    ...         {"link": "100mbit", "variant": "optimized c=16", "time_to_target_s": 24.0, "final_acc_mean": 0.938}]
    >>> key_cell(rows)["holds"]
    True
    """

    def pick(variant: str, key: str) -> list[float]:
        return [r[key] for r in rows if r["link"] == KEY_RATE and r["variant"] == variant]

    t_ring, t_key = pick("ring", "time_to_target_s"), pick(KEY_VARIANT, "time_to_target_s")
    a_ring, a_key = pick("ring", "final_acc_mean"), pick(KEY_VARIANT, "final_acc_mean")
    reached = bool(t_ring) and bool(t_key) and None not in t_ring + t_key
    tr = float(np.median(t_ring)) if reached else None
    tk = float(np.median(t_key)) if reached else None
    gap = 100.0 * (float(np.median(a_ring)) - float(np.median(a_key))) if a_ring and a_key else None
    holds = bool(tr is not None and tk is not None and tk < tr and gap is not None and gap <= 0.5)
    return {"ring_seconds": tr, "key_seconds": tk, "accuracy_gap_points": gap, "holds": holds}


def plot_training(curves, target: float, path=None):
    """Test accuracy (replica 0) against cumulative step time, one panel per link, one curve per variant."""
    require("matplotlib", "plots", "gcsim.learning.cerar_training.plot_training")

    curves = curves[curves["repeat"] == 0]
    links = list(dict.fromkeys(curves["link"]))
    labels = [v for v in VARIANTS if v in set(curves["variant"])]
    ncols = min(2, len(links))
    nrows = -(-len(links) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(6.4 * ncols, 4.6 * nrows), squeeze=False, sharey=True)
    for ax in axes.ravel()[len(links) :]:
        ax.set_visible(False)
    styles = dict(
        zip(
            labels, curve_styles(len(labels), points=int(curves.groupby(["link", "variant"]).size().max())), strict=True
        )
    )
    for ax, link in zip(axes.ravel(), links, strict=False):
        sub = curves[curves["link"] == link]
        for lab in labels:
            g = sub[sub["variant"] == lab].sort_values("step")
            if len(g):
                ax.plot(g["seconds"], g["test_acc"], label=lab, **styles[lab])
        ax.axhline(target, color="grey", lw=0.9, ls=":", zorder=1, label=f"target {target:.0%}")
        ax.set_title(f"N = 4 ranks, link {link}")
        ax.set_xlabel("cumulative step time (s)")
        ax.set_ylim(0.0, 1.0)
        ax.grid(True, alpha=0.3)
    for row in axes:
        row[0].set_ylabel("test accuracy (replica 0)")
    handles, names = [], []
    for ax in axes.ravel():
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    legend_below(fig, handles, names, ncol=4, fontsize=10)
    if path is not None:
        save(fig, path)
    return fig
