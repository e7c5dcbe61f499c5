"""The CERAR link experiment: links with latency, several seeds, a 5 M-parameter model (issue #32 item 5).

Accuracy runs without shaping give each variant's steps to the target per seed; timed runs over
emulated links (rate and one-way delay) give its step time; :func:`summarize_links` combines them
into intervals over seeds of the ring's time over the variant's (docs/results/cerar_training.md,
"Links with latency").  The runs themselves are :mod:`gcsim.learning.cerar_runs`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._plotting import curve_styles, legend_below, new_figure, save
from .._progress import StageProgress
from .._stats import t_interval
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError
from ..executor.netem import netem_available
from ..io.manifest import atomic_write_text, provenance, to_jsonable
from .cerar_model import CONV_WIDTH, DATA, n_parameters, payload_bytes
from .cerar_runs import (
    HYPER,
    VARIANTS,
    Evaluator,
    _prepare_designs,
    experiment_designs,
    run_link,
    time_to_target,
)
from .mnist_full import MNIST_FULL, fetch_mnist_full

__all__ = [
    "BIG_WIDTH",
    "LINKS",
    "timing_row",
    "seed_interval",
    "verdict",
    "summarize_links",
    "BASELINE",
    "refresh_summary",
    "links_table",
    "STAGE_LINKS",
    "link_claims",
    "links_experiment",
    "plot_links",
]

#: The verdict of the ring's own rows in :func:`summarize_links`: the baseline every ratio divides by.
#: Its ratio to itself is 1 by definition, not a measurement, so its ratios are ``None`` and
#: :func:`links_table` prints this word in their place.
BASELINE = "baseline"

#: Units of the large model's fully connected layer: ``conv_net(BIG_WIDTH)`` has 5,057,610 parameters.
BIG_WIDTH = 3200

#: The link experiment (docs/results/cerar_training.md, "Links with latency").  ``accuracy``: every
#: variant trained once per seed without shaping (the arithmetic does not depend on the link: the
#: timing runs check it, bit for bit) with replica 0 evaluated at every step, which gives the steps
#: to ``target``; ``timing``: per model, link and delay, every listed variant once per seed in one
#: launch over the emulated link, ``steps`` steps of which the first ``warmup`` are not timed.
LINKS: dict[str, Any] = {
    "seeds": [0, 1, 2],
    "delays": ["1ms", "10ms"],
    "warmup": 2,
    "target": 0.90,
    "accuracy": {
        "steps": 80,
        "eval_every": 2,
        "drift_every": 20,
        "variants": ["ring", "exact c=4", "optimized c=8", "optimized c=16"],
    },
    "timing": [
        {"width": CONV_WIDTH, "rate": "20mbit", "variants": ["ring", "optimized c=16"], "steps": 6},
        {
            "width": CONV_WIDTH,
            "rate": "100mbit",
            "variants": ["ring", "exact c=4", "optimized c=8", "optimized c=16"],
            "steps": 10,
        },
        {"width": CONV_WIDTH, "rate": "1gbit", "variants": ["ring", "exact c=4", "optimized c=16"], "steps": 10},
        {"width": BIG_WIDTH, "rate": "100mbit", "variants": ["ring", "optimized c=16"], "steps": 6},
        {"width": BIG_WIDTH, "rate": "1gbit", "variants": ["ring", "exact c=4", "optimized c=16"], "steps": 6},
    ],
}


#: The quick plan of the ``cerar-training`` stage of ``gcsim reproduce --paper cerar``: :data:`LINKS`
#: cut to the 1.02 M-parameter model at 100 Mbit/s with 1 ms and 10 ms of delay, the ring against the
#: κ-optimized c = 16 design, 3 seeds (``--full`` runs :data:`LINKS` itself).
STAGE_LINKS: dict[str, Any] = {
    **LINKS,
    "accuracy": {**LINKS["accuracy"], "variants": ["ring", "optimized c=16"]},
    "timing": [{"width": CONV_WIDTH, "rate": "100mbit", "variants": ["ring", "optimized c=16"], "steps": 8}],
}

#: What a claims row of :func:`link_claims` says for each :func:`verdict`.
_CLAIM_VERDICT = {"CERAR sooner": "holds", "ring sooner": "does not hold", "not shown": "not shown"}


def link_claims(summary: list[dict]) -> list[dict]:
    """The paper's claim, one row per model, link, delay and CERAR variant of a :func:`summarize_links` summary.

    The claim: *the CERAR variant trains to the target sooner than the ring all-reduce over this
    link*.  It ``holds`` only when the 95 % interval over seeds of ring time / variant time lies
    above 1, ``does not hold`` when it lies below 1, and is ``not shown`` otherwise.  Where the
    accuracy runs give no steps to the target for this model, the row judges the step time alone
    and says so in ``measure`` ("per step": steps × step time with equal steps).

    Examples
    --------
    >>> row = {"parameters": 10, "width": 8, "link": "100mbit", "delay": "1ms", "variant": "optimized c=16",
    ...        "seeds": 3, "time_ratio": {"mean": 1.2, "lo": 1.05, "hi": 1.35}, "step_ratio": None}
    >>> [(c["measure"], c["verdict"]) for c in link_claims([row, {**row, "variant": "ring"}])]
    [('time to target', 'holds')]
    >>> slow = {**row, "time_ratio": {"mean": 0.8, "lo": 0.7, "hi": 0.9}}
    >>> link_claims([slow])[0]["verdict"]
    'does not hold'
    """
    rows = []
    for r in summary:
        if r["variant"] == "ring":
            continue
        ratio, measure = r.get("time_ratio"), "time to target"
        if ratio is None:
            ratio, measure = r.get("step_ratio"), "per step"
        rows.append(
            {
                "claim": f"{r['variant']} trains to the target sooner than the ring",
                "variant": r["variant"],
                "parameters": r["parameters"],
                "link": r["link"],
                "delay": r["delay"],
                "seeds": r["seeds"],
                "measure": measure,
                "ring_over_variant": None if ratio is None else ratio["mean"],
                "lo": None if ratio is None else ratio["lo"],
                "hi": None if ratio is None else ratio["hi"],
                "verdict": "not shown" if ratio is None else _CLAIM_VERDICT[verdict(ratio)],
            }
        )
    return rows


def _cell_steps(cell: dict) -> tuple[int, np.ndarray, list, list, list]:
    """A run's step count, the slowest rank's time of each step, each rank's wire and hook bytes, its buckets."""
    R = cell["results"]
    step_s = np.max([r["step_seconds"] for r in R], axis=0)  # the slowest rank's time of each step
    return (
        len(R[0]["step_seconds"]),
        step_s,
        [r["tx_bytes"] for r in R],
        [r["hook_bytes"] for r in R],
        R[0]["bucket_elements"],
    )


def _step_quantiles(step_s: np.ndarray) -> dict[str, float]:
    """The median, 10th and 90th percentiles of a run's step times (the columns every run row has)."""
    return {
        "step_median_s": float(np.median(step_s)),
        "step_p10_s": float(np.percentile(step_s, 10)),
        "step_p90_s": float(np.percentile(step_s, 90)),
    }


def timing_row(
    cell: dict, *, rate: str, delay: str | None, label: str, c: int | None, N: int, seed: int, width: int, warmup: int
) -> dict:
    """One timing run: the median over its steps after ``warmup`` of the slowest rank's step time, and bytes per step.

    Examples
    --------
    >>> runs = [{"step_seconds": [9.0, 1.0, 2.0, 3.0], "load": [1.0, 2.0], "tx_bytes": 800, "hook_bytes": None,
    ...          "bucket_elements": [10]}, {"step_seconds": [9.0, 1.5, 1.0, 3.5], "load": [1.1, 2.1],
    ...          "tx_bytes": 900, "hook_bytes": None, "bucket_elements": [10]}]
    >>> cell = {"results": runs, "eval": {"final_acc": [0.5, 0.5], "final_drift_max_abs": 0.0}}
    >>> row = timing_row(cell, rate="1gbit", delay="1ms", label="ring", c=None, N=2, seed=0, width=8, warmup=1)
    >>> row["step_median_s"], row["timed_steps"], row["wire_bytes_per_step"], row["payload_formula_bytes_per_step"]
    (2.0, 3, 212.5, 40)
    """
    steps, step_s, tx, hook, buckets = _cell_steps(cell)
    warmup = check_int("warmup", warmup, minimum=0, maximum=steps - 1)
    step_s = step_s[warmup:]
    return {
        "parameters": n_parameters(width),
        "width": width,
        "link": rate,
        "delay": delay or "0",
        "variant": label,
        "c": c,
        "seed": int(seed),
        "steps": steps,
        "timed_steps": int(step_s.size),
        **_step_quantiles(step_s),
        "payload_bytes_per_step": None if hook[0] is None else max(hook) / steps,
        "payload_formula_bytes_per_step": payload_bytes(buckets, N, c if label != "ring" else None, 1),
        "wire_bytes_per_step": None if None in tx else float(np.mean(tx)) / steps,
        "final_acc_mean": float(np.mean(cell["eval"]["final_acc"])),
        "drift_max_abs": cell["eval"]["final_drift_max_abs"],
        "load_before": float(cell["results"][0]["load"][0]),
        "load_after": float(cell["results"][0]["load"][1]),
    }


def seed_interval(values: list[float], level: float = 0.95) -> dict:
    """Mean over seeds with its Student-t interval (``n - 1`` degrees of freedom), and the range.

    Examples
    --------
    >>> r = seed_interval([1.0, 2.0, 3.0])
    >>> r["mean"], round(r["lo"], 4), round(r["hi"], 4), r["min"], r["max"], r["n"]
    (2.0, -0.4841, 4.4841, 1.0, 3.0, 3)
    """
    y = np.asarray(values, dtype=float)
    if y.size == 0:
        raise InvalidArgumentError("values", "must hold at least one seed's value")
    mean = float(y.mean())
    if y.size < 2:
        lo, hi = float("-inf"), float("inf")
    else:
        lo, hi = t_interval(mean, float(y.std(ddof=1) / np.sqrt(y.size)), y.size - 1, level)
    return {
        "mean": mean,
        "lo": float(lo),
        "hi": float(hi),
        "min": float(y.min()),
        "max": float(y.max()),
        "n": int(y.size),
    }


def verdict(ratio: dict) -> str:
    """``"CERAR sooner"`` when the interval of ring time / CERAR time lies above 1, ``"ring sooner"`` below it.

    Otherwise ``"not shown"``.

    Examples
    --------
    >>> verdict({"lo": 1.02, "hi": 1.2}), verdict({"lo": 0.5, "hi": 0.9}), verdict({"lo": 0.9, "hi": 1.1})
    ('CERAR sooner', 'ring sooner', 'not shown')
    """
    if ratio["lo"] > 1.0:
        return "CERAR sooner"
    if ratio["hi"] < 1.0:
        return "ring sooner"
    return "not shown"


def summarize_links(timing: list[dict], accuracy: list[dict]) -> list[dict]:
    """One row per model, link, delay and variant: intervals over seeds of the step time, of the ring's step
    time over the variant's (paired by seed), and, where the accuracy runs give the steps to the target
    (same width), of the time to target = steps × median step time and its ring / variant ratio.

    ``timing``: :func:`timing_row` rows; ``accuracy``: rows with ``width``, ``variant``, ``seed`` and
    ``step_at_target`` (None: not reached).  Intervals: :func:`seed_interval`; verdicts: :func:`verdict`.
    The ring's rows are the baseline: no ratios (``None``) and the verdict :data:`BASELINE`.
    """
    reach = {(a["width"], a["variant"], a["seed"]): a["step_at_target"] for a in accuracy}
    by = {(t["width"], t["link"], t["delay"], t["variant"], t["seed"]): t for t in timing}
    cells = list(dict.fromkeys((t["width"], t["link"], t["delay"], t["variant"]) for t in timing))
    out = []
    for w, link, delay, variant in cells:
        rows = [t for k, t in by.items() if k[:4] == (w, link, delay, variant)]
        seeds = [t["seed"] for t in rows]
        ring = [by.get((w, link, delay, "ring", s)) for s in seeds]
        step = seed_interval([t["step_median_s"] for t in rows])
        row: dict[str, Any] = {
            "parameters": rows[0]["parameters"],
            "width": w,
            "link": link,
            "delay": delay,
            "variant": variant,
            "seeds": len(rows),
            "step_s": step,
            "payload_MB_per_step": (rows[0]["payload_bytes_per_step"] or rows[0]["payload_formula_bytes_per_step"])
            / 1e6,
            "wire_MB_per_step": None
            if rows[0]["wire_bytes_per_step"] is None
            else float(np.mean([t["wire_bytes_per_step"] for t in rows])) / 1e6,
            "load_range": [min(t["load_before"] for t in rows), max(t["load_after"] for t in rows)],
            "step_ratio": None,
            "steps_to_target": None,
            "time_to_target_s": None,
            "time_ratio": None,
            "verdict": None,
        }
        baseline = variant == "ring"
        ring_steps = [r["step_median_s"] for r in ring if r is not None]
        if not baseline and len(ring_steps) == len(rows):
            row["step_ratio"] = seed_interval([a / t["step_median_s"] for a, t in zip(ring_steps, rows, strict=True)])
        hits = [float(h) for s in seeds if (h := reach.get((w, variant, s))) is not None]
        ring_hits = [float(h) for s in seeds if (h := reach.get((w, "ring", s))) is not None]
        if len(hits) == len(rows):
            row["steps_to_target"] = seed_interval(hits)
            times = [h * t["step_median_s"] for h, t in zip(hits, rows, strict=True)]
            row["time_to_target_s"] = seed_interval(times)
            if not baseline and len(ring_steps) == len(rows) and len(ring_hits) == len(rows):
                ring_times = [h * r for h, r in zip(ring_hits, ring_steps, strict=True)]
                row["time_ratio"] = seed_interval([a / b for a, b in zip(ring_times, times, strict=True)])
                row["verdict"] = verdict(row["time_ratio"])
        elif any((w, variant, s) in reach for s in seeds):
            row["verdict"] = "target not reached"
        if row["verdict"] is None and row["step_ratio"] is not None:
            row["verdict"] = verdict(row["step_ratio"]) + " (per step)"
        if baseline and row["verdict"] is None:
            row["verdict"] = BASELINE
        out.append(row)
    return out


def refresh_summary(folder: str | Path) -> list[dict]:
    """:func:`summarize_links` again from a finished run's ``timing.csv`` and ``accuracy.csv`` in ``folder``.

    No training and no root: the summary is recomputed from the per-run rows and written back to
    ``summary.json`` and ``summary.csv`` there (empty CSV cells are ``None`` again, as in the rows
    the run summarized); returns it.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> folder = Path(tempfile.mkdtemp())
    >>> run = {"parameters": 10, "width": 8, "link": "1gbit", "delay": "1ms", "seed": 0, "step_median_s": 0.5,
    ...        "payload_bytes_per_step": None, "payload_formula_bytes_per_step": 40, "wire_bytes_per_step": 42.0,
    ...        "load_before": 1.0, "load_after": 2.0}
    >>> runs = [{**run, "variant": "ring"}, {**run, "variant": "exact c=4", "step_median_s": 0.25}]
    >>> pd.DataFrame(runs).to_csv(folder / "timing.csv", index=False)
    >>> reached = [{"width": 8, "variant": v, "seed": 0, "step_at_target": 30} for v in ("ring", "exact c=4")]
    >>> pd.DataFrame(reached).to_csv(folder / "accuracy.csv", index=False)
    >>> [(r["variant"], r["time_ratio"] and r["time_ratio"]["mean"], r["verdict"]) for r in refresh_summary(folder)]
    [('ring', None, 'baseline'), ('exact c=4', 2.0, 'not shown')]
    >>> sorted(p.name for p in folder.iterdir())
    ['accuracy.csv', 'summary.csv', 'summary.json', 'timing.csv']
    """
    import pandas as pd

    folder = Path(folder)
    for name in ("timing.csv", "accuracy.csv"):
        if not (folder / name).is_file():
            raise InvalidArgumentError("folder", f"has no {name}: not a finished link run ({folder})")

    def rows(name: str) -> list[dict]:
        frame = pd.read_csv(folder / name)
        return [{k: None if v is None or v != v else v for k, v in r.items()} for r in frame.to_dict("records")]

    summary = summarize_links(rows("timing.csv"), rows("accuracy.csv"))
    _write_summary(folder, summary)
    return summary


#: The :func:`seed_interval` fields of a :func:`summarize_links` row, and each interval's keys.
_INTERVALS = ("step_s", "step_ratio", "steps_to_target", "time_to_target_s", "time_ratio")
_INTERVAL_KEYS = ("mean", "lo", "hi", "min", "max", "n")


def _write_summary(out: Path, summary: list[dict]) -> None:
    """``summary.json`` and ``summary.csv`` into ``out``.

    The CSV flattens each interval to ``step_s.mean``, ``step_s.lo`` ... with the same columns in
    every row (empty where the row has no such interval: the ring's ratios, a model without
    accuracy runs).
    """
    import json

    import pandas as pd

    rows = to_jsonable(summary)
    flat = [
        {k: v for k, v in r.items() if k not in _INTERVALS}
        | {f"{k}.{f}": None if r[k] is None else r[k][f] for k in _INTERVALS for f in _INTERVAL_KEYS}
        for r in rows
    ]
    atomic_write_text(out / "summary.json", json.dumps(rows, indent=1))
    atomic_write_text(out / "summary.csv", pd.DataFrame(flat, dtype=object).to_csv(index=False))


def _cells(x: dict | None, digits: int, scale: float = 1.0) -> str:
    """``mean [lo, hi]`` of a :func:`seed_interval`, times ``scale``; "–" where there is none."""
    if x is None:
        return "–"
    return f"{x['mean'] * scale:.{digits}f} [{x['lo'] * scale:.{digits}f}, {x['hi'] * scale:.{digits}f}]"


def links_table(summary: list[dict], target: float = 0.9) -> str:
    """The Markdown table of a :func:`summarize_links` summary, one row per model, link, delay and variant.

    Means over seeds [95 % t intervals]; the ring's rows are the :data:`BASELINE` every ratio
    divides by and say so instead of a ratio (theirs to themselves is 1 by definition); "–" where
    the summary has no number (a model without accuracy runs has no steps to ``target``).  A
    parameters column only when the summary holds more than one model.

    Examples
    --------
    >>> run = {"parameters": 1015370, "width": 640, "link": "100mbit", "delay": "1ms", "seed": 0,
    ...        "payload_bytes_per_step": None, "payload_formula_bytes_per_step": 6092232,
    ...        "wire_bytes_per_step": 6.14e6, "load_before": 6.0, "load_after": 7.0}
    >>> timing = [{**run, "variant": v, "seed": s, "step_median_s": t}
    ...           for v, ts in (("ring", (0.6, 0.5, 0.55)), ("optimized c=16", (0.5, 0.42, 0.46)))
    ...           for s, t in enumerate(ts)]
    >>> table = links_table(summarize_links(timing, [])).splitlines()
    >>> print(table[2])
    | 100mbit | 1ms | ring | – | 550 [426, 674] | baseline | – | baseline |  | 6.09 | 6.14 | 6.0–7.0 |
    >>> table[3].split(" | ")[4:9]
    ['460 [361, 559]', '1.20 [1.18, 1.21]', '–', '–', 'CERAR sooner (per step)']
    """
    target = check_real("target", target, minimum=0.0, maximum=1.0)
    many = len({r["parameters"] for r in summary}) > 1
    goal = f"{target * 100:g} %"
    head = ["link", "one-way delay", "variant", f"steps to {goal}", "step ms", "ring / variant, per step"]
    head += [f"time to {goal} (s)", f"ring / variant, to {goal}", "verdict", "payload MB / step", "wire MB / step"]
    head += ["load average"]
    align = ["---"] * 3 + ["---:"] * 5 + ["---", "---:", "---:", "---"]
    if many:
        head, align = ["parameters", *head], ["---", *align]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in summary:
        base = r["verdict"] == BASELINE
        cells = [r["link"], r["delay"], r["variant"], _cells(r["steps_to_target"], 1), _cells(r["step_s"], 0, 1e3)]
        cells += [BASELINE if base else _cells(r["step_ratio"], 2), _cells(r["time_to_target_s"], 1)]
        cells += [BASELINE if base else _cells(r["time_ratio"], 2), "" if base else r["verdict"] or ""]
        wire = r["wire_MB_per_step"]
        cells += [f"{r['payload_MB_per_step']:.2f}", "–" if wire is None else f"{wire:.2f}"]
        cells += ["{:.1f}–{:.1f}".format(*r["load_range"])]
        if many:
            cells = [f"{r['parameters'] / 1e6:.2f} M", *cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def links_experiment(
    out: str | Path,
    *,
    N: int = 4,
    plan: dict | None = None,
    design_cache: str | Path | None = None,
    mnist: str | Path | None = None,
    data: str = "subset",
    log=print,
    progress: bool = True,
    manifest_name: str = "manifest.json",
) -> dict:
    """The link experiment of :data:`LINKS` (or ``plan``, the same keys): root only; files into ``out``.

    Files: ``accuracy.csv`` (per variant and seed: steps to the target, final accuracy, drift),
    ``accuracy_curves.csv`` (replica 0's test accuracy at every step), ``timing.csv`` (one
    :func:`timing_row` per model, link, delay, variant and seed, with the check ``same_arithmetic``:
    the timed run's last parameters equal, bit for bit, the unshaped run's at that step),
    ``summary.csv`` / ``summary.json`` (:func:`summarize_links`), ``designs.json``,
    ``figure.png`` (:func:`plot_links`) and ``manifest_name`` (command, versions, plan, load averages,
    elapsed time).  ``data="mnist-full"``: train on full MNIST's 60,000 images and test on its 10,000
    (:func:`gcsim.learning.mnist_full.fetch_mnist_full`: downloaded once into the cache folder,
    before any rank starts); ``mnist``: the same from local files (:func:`load_experiment_data`);
    default the 5,000-image subset, 1,250 test images.
    """
    import os
    import shutil
    import tempfile

    progress = check_bool("progress", progress)
    if not isinstance(data, str) or data not in DATA:
        raise InvalidArgumentError("data", f"must be one of {DATA}, got {data!r}")
    if data == "mnist-full" and mnist is not None:
        raise InvalidArgumentError("mnist", "names local files; it does not go with data='mnist-full'")
    ok, why = netem_available()
    if not ok:
        raise RuntimeError(f"the CERAR link experiment needs emulated links: {why}")
    if data == "mnist-full":
        # fetched once here; the evaluators and the training split then read the extracted folder
        mnist = fetch_mnist_full()
    plan = dict(LINKS if plan is None else plan)
    seeds = [check_int("seeds", x, minimum=0) for x in plan["seeds"]]
    warmup = int(plan["warmup"])
    target = check_real("target", plan["target"], minimum=0.0, maximum=1.0)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    load_start = os.getloadavg()
    designs = experiment_designs(N, None if design_cache is None else Path(design_cache), log=log)
    work = Path(tempfile.mkdtemp(prefix="gcsim-cerar-links-"))
    base = {**HYPER, "mnist": None if mnist is None else str(mnist)}
    acc = plan["accuracy"]
    total = len(acc["variants"]) * len(seeds) * int(acc["steps"])
    total += sum(len(t["variants"]) * len(seeds) * int(t["steps"]) for t in plan["timing"]) * len(plan["delays"])
    bar = StageProgress(total, "cerar-links", "SGD steps", progress, every=30.0, follow_up="scoring")
    evaluators: dict[int, Evaluator] = {}
    try:
        paths, dtypes, design_rows = _prepare_designs(designs, work, N, log)
        evaluators[CONV_WIDTH] = Evaluator(CONV_WIDTH, data_seed=base["data_seed"], mnist=mnist)
        setup = _LinkSetup(N, seeds, paths, dtypes, work, bar, log)
        # the unshaped launch on port 29732, then one launch per link and delay on the next ports
        accuracy, curves, digests = _accuracy_runs(setup, acc, base, target, evaluators[CONV_WIDTH], port=29732)
        timing = _timing_runs(setup, plan, base, warmup, evaluators, digests, mnist=mnist, port=29732)
    finally:
        bar.close()
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize_links(timing, accuracy)
    tables = {"accuracy": accuracy, "curves": curves, "timing": timing, "designs": design_rows}
    run = {"N": N, "plan": plan, "mnist": mnist, "data": data, "load_start": load_start, "t_start": t_start}
    manifest = _write_links(out, manifest_name, summary, tables, evaluators, run)
    return {"summary": summary, "timing": timing, "accuracy": accuracy, "manifest": manifest}


@dataclass(frozen=True)
class _LinkSetup:
    """What every launch of the link experiment shares: ranks, seeds, design paths and compute dtypes
    (label -> ...), the work folder, the progress bar and the log."""

    N: int
    seeds: list[int]
    paths: dict
    dtypes: dict
    work: Path
    bar: StageProgress
    log: Callable[[str], Any]


def _accuracy_runs(
    setup: _LinkSetup, acc: dict, base: dict, target: float, evaluator: Evaluator, *, port: int
) -> tuple[list[dict], list[dict], dict[tuple, dict]]:
    """The unshaped runs of ``plan["accuracy"]``, every variant once per seed in one launch.

    Returns the accuracy rows, replica 0's curve rows and the snapshot digests
    ``(width, label, seed) -> {step: digest}`` the timing runs are compared with.
    """
    import os

    N, seeds, paths, work, bar, log = setup.N, setup.seeds, setup.paths, setup.work, setup.bar, setup.log
    spec = {**base, "steps": int(acc["steps"]), "eval_every": int(acc["eval_every"]), "compute_dtype": setup.dtypes}
    spec["drift_every"] = int(acc["drift_every"])
    accuracy: list[dict] = []
    curves: list[dict] = []
    digests: dict[tuple, dict] = {}
    # one launch: replica 0's snapshots of every evaluated step, about 2 GB at the default plan
    t0 = time.time()
    variants = [(lab, paths.get(lab)) for lab in acc["variants"]]
    cells = run_link(
        "unshaped", variants, N=N, spec=spec, work=work, evaluator=evaluator, port=port,
        netem=False, progress=bar, seeds=seeds,
    )  # fmt: skip
    for (lab, s), cell in cells.items():
        t_hit, s_hit = time_to_target(cell["eval"]["curve"], target)
        digests[(CONV_WIDTH, lab, s)] = cell["eval"]["digests"]
        accuracy.append(
            {
                "width": CONV_WIDTH,
                "parameters": n_parameters(CONV_WIDTH),
                "variant": lab,
                "seed": s,
                "steps": int(spec["steps"]),
                "target_acc": target,
                "step_at_target": s_hit,
                "final_acc_replica0": cell["eval"]["curve"][-1]["test_acc"],
                "final_acc_mean": float(np.mean(cell["eval"]["final_acc"])),
                "final_acc_min": float(np.min(cell["eval"]["final_acc"])),
                "drift_max_abs": cell["eval"]["final_drift_max_abs"],
                "test_images": evaluator.n_test,
            }
        )
        curves += [
            {"variant": lab, "seed": s, "step": p["step"], "test_acc": p["test_acc"]} for p in cell["eval"]["curve"]
        ]
    log(
        "accuracy runs: "
        + ", ".join(f"{a['variant']} step {a['step_at_target']}" for a in accuracy[-len(cells) :])
        + f"  ({time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f})"
    )
    return accuracy, curves, digests


def _timing_runs(
    setup: _LinkSetup,
    plan: dict,
    base: dict,
    warmup: int,
    evaluators: dict[int, Evaluator],
    digests: dict[tuple, dict],
    *,
    mnist: str | Path | None,
    port: int,
) -> list[dict]:
    """The timed runs of ``plan["timing"]``: per model, link and delay one launch (on the port after
    ``port``, then the next ones) of every listed variant once per seed; one :func:`timing_row` each.

    ``evaluators`` (width -> :class:`Evaluator`) gains the widths it lacks.
    """
    import os

    N, seeds, paths, work, bar, log = setup.N, setup.seeds, setup.paths, setup.work, setup.bar, setup.log
    timing: list[dict] = []
    for entry in plan["timing"]:
        width = int(entry["width"])
        if width not in evaluators:
            evaluators[width] = Evaluator(width, data_seed=base["data_seed"], mnist=mnist)
        tspec = {**base, "width": width, "steps": int(entry["steps"]), "eval_every": int(entry["steps"])}
        tspec["compute_dtype"] = setup.dtypes
        for delay in [None if str(x).lower() in ("none", "0", "0ms") else str(x) for x in plan["delays"]]:
            port += 1
            t0 = time.time()
            variants = [(lab, paths.get(lab)) for lab in entry["variants"]]
            cells = run_link(
                entry["rate"], variants, N=N, spec=tspec, work=work, evaluator=evaluators[width], port=port,
                progress=bar, delay=delay, seeds=seeds,
            )  # fmt: skip
            for (lab, s), cell in cells.items():
                c = VARIANTS[lab][1] if VARIANTS[lab][0] is not None else None
                row = timing_row(
                    cell, rate=entry["rate"], delay=delay, label=lab, c=c, N=N, seed=s, width=width, warmup=warmup
                )
                ref = digests.get((width, lab, s), {}).get(row["steps"])
                row["same_arithmetic"] = None if ref is None else ref == cell["eval"]["digests"][row["steps"]]
                row["wall_seconds"] = cell["wall_seconds"]
                row["delay_backend"] = cell["delay"]["backend"]
                row["delay_late_mean_s"] = cell["delay"]["late_mean_s"]
                row["delay_late_max_s"] = cell["delay"]["late_max_s"]
                row["tcp_congestion"] = cell["delay"].get("congestion")  # the ranks' TCP congestion control
                timing.append(row)
            med = {
                lab: np.median([t["step_median_s"] for t in timing[-len(cells) :] if t["variant"] == lab])
                for lab in entry["variants"]
            }
            log(
                f"{n_parameters(width):,} parameters, {entry['rate']} + {delay}: "
                + ", ".join(f"{lab} {m * 1e3:.0f} ms" for lab, m in med.items())
                + f"  ({time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f})"
            )
    return timing


def _write_links(
    out: Path, manifest_name: str, summary: list[dict], tables: dict, evaluators: dict[int, Evaluator], run: dict
) -> dict:
    """Write the link experiment's files and its manifest into ``out``; returns the manifest.

    ``tables``: the ``accuracy``, ``curves`` and ``timing`` rows and the ``designs`` record;
    ``run``: ``N``, ``plan``, ``mnist``, ``load_start`` and ``t_start`` of the experiment.
    """
    import json
    import os

    import pandas as pd

    timing = tables["timing"]
    atomic_write_text(out / "accuracy.csv", pd.DataFrame(tables["accuracy"]).to_csv(index=False))
    atomic_write_text(out / "accuracy_curves.csv", pd.DataFrame(tables["curves"]).to_csv(index=False))
    atomic_write_text(out / "timing.csv", pd.DataFrame(timing).to_csv(index=False))
    _write_summary(out, summary)
    atomic_write_text(out / "designs.json", json.dumps(to_jsonable(tables["designs"]), indent=1))
    plot_links(summary, out / "figure.png")
    import torch

    manifest = {
        "provenance": provenance(),
        "torch": torch.__version__,
        "N": run["N"],
        "plan": run["plan"],
        "hyper": HYPER,
        "data": (
            f"mnist-full ({MNIST_FULL.url}, sha256 {MNIST_FULL.sha256})"
            if run["data"] == "mnist-full"
            else "mnist (local files)"
            if run["mnist"] is not None
            else "mnist-5k subset"
        ),
        "test_images": evaluators[CONV_WIDTH].n_test,
        "parameters": {w: n_parameters(w) for w in evaluators},
        "designs": tables["designs"],
        "cpu_count": os.cpu_count(),
        "load_average_start_end": [run["load_start"], os.getloadavg()],
        "elapsed_seconds": time.time() - run["t_start"],
        "same_arithmetic": [t["same_arithmetic"] for t in timing],
        "files": ["accuracy.csv", "accuracy_curves.csv", "timing.csv", "summary.csv", "summary.json"]
        + ["designs.json", "figure.png"],
    }
    atomic_write_text(out / manifest_name, json.dumps(to_jsonable(manifest), indent=1))
    return manifest


def plot_links(summary: list[dict], path=None):
    """Ring step time / variant step time (mean and 95 % interval over seeds), one panel per model."""
    require("matplotlib", "plots", "gcsim.learning.cerar_training.plot_links")

    widths = list(dict.fromkeys(r["width"] for r in summary))
    fig, axes = new_figure(1, len(widths), figsize=(6.4 * len(widths), 4.6), squeeze=False, sharey=True)
    labels = [v for v in VARIANTS if v != "ring" and any(r["variant"] == v for r in summary)]
    styles = dict(zip(labels, curve_styles(len(labels), points=8), strict=True))
    for ax, w in zip(axes[0], widths, strict=True):
        rows = [r for r in summary if r["width"] == w]
        cells = list(dict.fromkeys(f"{r['link']}\n+{r['delay']}" for r in rows))
        for k, lab in enumerate(labels):
            pts = [(cells.index(f"{r['link']}\n+{r['delay']}"), r["step_ratio"]) for r in rows if r["variant"] == lab]
            pts = [(x, q) for x, q in pts if q is not None]
            if pts:
                x = np.array([p[0] for p in pts]) + 0.08 * (k - (len(labels) - 1) / 2)
                m = np.array([p[1]["mean"] for p in pts])
                err = np.array([[p[1]["mean"] - p[1]["lo"] for p in pts], [p[1]["hi"] - p[1]["mean"] for p in pts]])
                ax.errorbar(x, m, yerr=err, label=lab, capsize=3, **styles[lab])
        ax.axhline(1.0, color="grey", lw=0.9, ls=":", zorder=1)
        ax.set_xticks(range(len(cells)), cells)
        ax.set_title(f"{rows[0]['parameters']:,} parameters, N = 4 ranks")
        ax.set_ylabel("ring step time / variant step time")
        ax.grid(True, alpha=0.3)
    legend_below(fig, ncol=4, fontsize=10)
    if path is not None:
        save(fig, path)
    return fig
