"""``gcsim reproduce`` stage "training": coded-gradient SGD on the digits (theory §60).

Writes into the stage directory:

* ``history.csv`` — tidy table, one row per (code, evaluation): iteration,
  simulated wall clock (s), train/test loss and accuracy, mean relative
  decoding error ``‖ĝ - g‖²/‖g‖²`` and mean number of arrivals;
* ``summary.csv`` — one row per code: final numbers, mean decoding error,
  simulated seconds per iteration, wall-clock time to reach the target loss;
* ``unbiasedness.csv`` — empirical unbiasedness checks on the real digits
  part gradients (decoders that are unbiased by Theorems 5-6, and two that are not);
* ``training.png`` — loss and accuracy vs iteration and vs simulated wall clock;
* ``decoding_error.png`` — relative decoding error vs iteration.

Quick mode: 150 iterations of mini-batch SGD (16 examples per part per
iteration), one seed; full mode: 1000 iterations (32 per part), three seeds
(curves are seed means; ``summary.csv`` has the standard deviations), more
unbiasedness samples.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any

import numpy as np

from ..._optional import require
from ..._plotting import curve_styles, floor_label, legend_below, log_floor, new_figure, plot_floored
from ...io.manifest import atomic_write_bytes, atomic_write_text
from ...learning.datasets import load_digits
from ...learning.experiments import default_codes
from ...learning.models import MLP
from ...learning.train import CodeSpec, WallClockModel, partition, train
from ...learning.unbiased import check_unbiased
from ...sweep import run_sweep

__all__ = ["run_training_stage", "unbiasedness_specs", "TARGET_LOSS"]

#: Training loss whose first crossing defines "time to target" in ``summary.csv``.
TARGET_LOSS = 0.05


def _single_thread():
    """Limit BLAS to one thread (the stage must run on one core; oversubscription is slow)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(1)


def unbiasedness_specs() -> list[tuple[CodeSpec, bool]]:
    """(code, expected unbiased?) pairs checked by the stage, on the 16-worker instances of :func:`default_codes`."""
    codes = {c.label: c for c in default_codes()}
    bibd = codes["NS m=2"].assignment
    eye = codes["uncoded (ignore stragglers)"].assignment
    return [
        (CodeSpec("RD(0) redrawn, unbiased decoder", bibd, 2, "rd", "unbiased", redraw=True), True),
        (CodeSpec("NS, X0/(1-p)", bibd, 2, "ns", "unbiased", options={"dist": "gaussian"}), True),
        (CodeSpec("exact Gaussian (s=4), X0/(1-p)", bibd, 2, "exact-gaussian", "unbiased", options={"s": 4}), True),
        (CodeSpec("uncoded, 1/(1-p)", eye, 1, "naive", "fixed"), True),
        (CodeSpec("naive stacking, X0/(1-p) [biased]", bibd, 2, "naive", "fixed"), False),
        (CodeSpec("RD(0) redrawn, optimal decoder [biased]", bibd, 2, "rd", "optimal", redraw=True), False),
    ]


def _save(fig, path: Path) -> None:
    """Save a figure as PNG through an atomic rename."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic_write_bytes(path, buf.getvalue())


def _plot(frame, path: Path | None = None, runs: int = 1):
    """Loss and accuracy vs iteration and simulated wall clock; saves a PNG at ``path`` if given, returns the figure.

    Nine codes overlap in places: each has its own colour, marker and line style, earlier codes
    drawn wider underneath (:func:`gcsim._plotting.curve_styles`); the legend is under the panels.
    """
    require("matplotlib", "plots", "gcsim.app.stages.training")
    fig, axes = new_figure(2, 2, figsize=(13, 10), sharey="row")
    groups = list(frame.groupby("label", sort=False))
    styles = curve_styles(len(groups), points=max(len(g) for _, g in groups))
    # the codes' accuracies differ by a few points near the top, which a linear 0-1 axis squashes
    # into one line: the lower row shows the test error 1 - accuracy on a log axis (a perfect score
    # drawn at the stated floor)
    miss = 1.0 - frame["test_acc"].to_numpy(dtype=float)
    floor = log_floor(miss[np.isfinite(miss) & (miss > 0)], default=1e-3)
    for style, (label, g) in zip(styles, groups, strict=True):
        kw = {"label": label, **style}
        axes[0, 0].plot(g.iteration, g.train_loss, **kw)
        axes[0, 1].plot(g.wallclock, g.train_loss, **kw)
        plot_floored(axes[1, 0], g.iteration.to_numpy(), 1.0 - g.test_acc.to_numpy(), floor, **kw)
        plot_floored(axes[1, 1], g.wallclock.to_numpy(), 1.0 - g.test_acc.to_numpy(), floor, **kw)
    for ax in axes[0]:
        ax.set_yscale("log")
        ax.set_ylabel("training loss (cross-entropy)")
    for ax in axes[1]:
        ax.set_yscale("log")
        label = "test error  1 - accuracy"
        ax.set_ylabel(floor_label(label, floor, "perfect scores") if (miss <= floor).any() else label)
    for ax in axes[:, 0]:
        ax.set_xlabel("iteration")
    for ax in axes[:, 1]:
        ax.set_xlabel("simulated wall clock (s)")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    legend_below(fig, ncol=3, fontsize=9)
    extra = f" (mean of {runs} seeds)" if runs > 1 else ""
    fig.suptitle("MLP 64-128-10 on digits, $n$ = 16 workers, Bernoulli($p$) stragglers: coded gradients" + extra)
    if path is not None:
        _save(fig, path)
    return fig


def _plot_error(frame, path: Path | None = None, roundoff: float = 1e-12):
    """Running mean of the relative decoding error per code; saves a PNG at ``path`` if given, returns the figure.

    An exact decode has error at round-off level (about 1e-31 in float64); drawn at its true value
    it would stretch the log axis over 30 decades and flatten every other curve.  Values below
    ``roundoff`` count as round-off; the axis ends one decade under the smallest error
    above it and the round-off curves are drawn at that floor with ▼ markers, as the label says.
    """
    require("matplotlib", "plots", "gcsim.app.stages.training")
    fig, ax = new_figure(figsize=(8, 6.2))
    ax.set_yscale("log")
    groups = list(frame.groupby("label", sort=False))
    running = {}
    for label, g in groups:
        g = g[g.iteration > 0]
        # running mean over the run so far (evaluation windows have equal length but the last)
        width = np.diff(np.concatenate([[0], g.iteration.to_numpy()]))
        running[label] = (g.iteration.to_numpy(), np.cumsum(g.rel_error.to_numpy() * width) / np.cumsum(width))
    values = np.concatenate([r for _, r in running.values()]) if running else np.array([])
    floor = log_floor(values[values > roundoff], default=roundoff)
    styles = curve_styles(len(groups), points=max((len(x) for x, _ in running.values()), default=0))
    for style, (label, (x, r)) in zip(styles, running.items(), strict=True):
        plot_floored(ax, x, r, floor, label=label, **style)
    ax.set_xlabel("iteration")
    ylabel = r"running mean of $\|\hat g - g\|^2 / \|g\|^2$"
    ax.set_ylabel(floor_label(ylabel, floor, "round-off (exact decoding)") if (values <= floor).any() else ylabel)
    ax.grid(alpha=0.3)
    ax.set_title("decoding error of each code during training")
    legend_below(fig, ncol=2)
    if path is not None:
        _save(fig, path)
    return fig


def _run_metrics(g) -> dict:
    """Metrics of one (code, seed) history."""
    last = g.iloc[-1]
    hit = g[g.train_loss <= TARGET_LOSS]
    return {
        "final_train_loss": last.train_loss,
        "final_test_acc": last.test_acc,
        "mean_rel_error": float(np.nanmean(g.rel_error)),
        "seconds_per_iteration": last.wallclock / max(last.iteration, 1),
        "wallclock_to_target": float(hit.wallclock.iloc[0]) if len(hit) else np.nan,
        "iterations_to_target": float(hit.iteration.iloc[0]) if len(hit) else np.nan,
    }


def _summary(frame):
    """One row per code: metrics averaged over the seeds, with the standard deviation of the final loss/accuracy."""
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    for label, g in frame.groupby("label", sort=False):
        runs = pd.DataFrame([_run_metrics(r) for _, r in g.groupby("seed", sort=True)])
        row = {"label": label, "seeds": len(runs)}
        row.update(runs.mean(axis=0).to_dict())  # NaN-skipping: "to target" over the runs that reached it
        row["reached_target"] = int(runs.wallclock_to_target.notna().sum())
        row["final_train_loss_std"] = float(runs.final_train_loss.std(ddof=1)) if len(runs) > 1 else 0.0
        row["final_test_acc_std"] = float(runs.final_test_acc.std(ddof=1)) if len(runs) > 1 else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_curves(frame):
    """Curves averaged over seeds (iteration, wall clock and metrics), for the plots."""
    cols = ["wallclock", "train_loss", "train_acc", "test_loss", "test_acc", "rel_error"]
    return frame.groupby(["label", "iteration"], sort=False)[cols].mean().reset_index()


def _format(summary) -> str:
    head = f"{'code':40s} {'loss':>7s} {'acc':>6s} {'dec.err':>8s} {'s/iter':>7s} {'t->loss' + str(TARGET_LOSS):>11s}"
    lines = [head]
    for r in summary.itertuples():
        reach = f"{r.wallclock_to_target:9.2f} s" if np.isfinite(r.wallclock_to_target) else "      never"
        lines.append(
            f"{r.label:40s} {r.final_train_loss:7.4f} {r.final_test_acc:6.3f} {r.mean_rel_error:8.3g} "
            f"{r.seconds_per_iteration:7.4f} {reach:>11s}"
        )
        if r.seeds > 1:
            lines[-1] += (
                f"   (sd over {r.seeds} seeds: loss {r.final_train_loss_std:.4f}, "
                f"acc {r.final_test_acc_std:.3f}; target reached {r.reached_target}/{r.seeds})"
            )
    return "\n".join(lines)


def _train_run(ds, model, p, iterations, batch, every, wallclock, say, run):
    """One training run (a task): code ``spec`` from seed ``run_seed``; its history table."""
    spec, run_seed = run
    if say:
        print(f"  training: {spec.label} (seed {run_seed})", flush=True)
    with _single_thread():
        res = train(
            spec,
            ds,
            model=model,
            p=p,
            iterations=iterations,
            optimizer="sgd",
            lr=0.1,
            momentum=0.9,
            batch_per_part=batch,
            eval_every=every,
            seed=run_seed,
            wallclock=wallclock,
        )
    return res.history


def run_training_stage(
    out_dir: Path,
    full: bool = False,
    seed: int = 0,
    progress: bool = False,
    *,
    iterations: int | None = None,
    samples: int | None = None,
    scheduler: Any = "serial",
) -> dict[str, Any]:
    """Run the comparison and the unbiasedness checks; write CSV + PNG into ``out_dir``.

    ``iterations`` and ``samples`` override the mode's defaults (tests use tiny values).  The
    training runs (one per code and seed, each seeded by its own seed) are the tasks of a
    :func:`gcsim.sweep.run_sweep` on ``scheduler``; the tables are the same on every scheduler.
    """
    require("pandas", "plots", "gcsim.app.stages.training.run_training_stage")
    import pandas as pd

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = 0.2
    default_iterations, batch, every = (1000, 32, 20) if full else (150, 16, 5)
    iterations = default_iterations if iterations is None else int(iterations)
    every = min(every, iterations)
    samples = (10000 if full else 2000) if samples is None else int(samples)
    wallclock = WallClockModel()
    with _single_thread():
        ds = load_digits(seed=seed)
        model = MLP((ds.n_features, 128, ds.n_classes))
        seeds = [seed + k for k in range(3 if full else 1)]
        # same data split and code family per code; each (code, seed) run is a task: new init, stragglers, batches
        runs = [(spec, run_seed) for spec in default_codes() for run_seed in seeds]
        one_run = functools.partial(
            _train_run, ds, model, p, iterations, batch, every, wallclock, progress and scheduler == "serial"
        )
        histories = run_sweep(
            one_run, runs, scheduler=scheduler, progress=progress and scheduler != "serial", desc="training runs"
        )
        frames = [
            h.assign(label=spec.label, seed=run_seed) for (spec, run_seed), h in zip(runs, histories, strict=True)
        ]
        frame = pd.concat(frames, ignore_index=True)
        # unbiasedness on the real part gradients at the initial parameters (a random subset of coordinates)
        parts = partition(ds.n_train, 16, seed)
        G = model.part_gradients(model.init(seed), ds.x_train[parts], ds.y_train[parts])
        coords = np.sort(np.random.default_rng([seed, 3]).choice(model.d, 400, replace=False))
        urows = []
        for spec, expected in unbiasedness_specs():
            verdict = check_unbiased(spec, G, p, samples=samples, seed=seed, alpha=0.001, coords=coords)
            urows.append(
                {
                    "decoder": spec.label,
                    "expected_unbiased": expected,
                    "verdict_unbiased": verdict.passed,
                    "pvalue": verdict.pvalue,
                    "coordinate_pvalue": verdict.coordinate_pvalue,
                    "norm_pvalue": verdict.norm_pvalue,
                    "relative_bias": verdict.relative_bias,
                    "samples": samples,
                    "coords": coords.size,
                }
            )
    unb = pd.DataFrame(urows)
    summary = _summary(frame)
    # atomic writes: an interrupted stage never leaves a half-written table or figure (docs/reliability.md)
    atomic_write_text(out_dir / "history.csv", frame.to_csv(index=False))
    atomic_write_text(out_dir / "summary.csv", summary.to_csv(index=False))
    atomic_write_text(out_dir / "unbiasedness.csv", unb.to_csv(index=False))
    curves = _mean_curves(frame)
    _plot(curves, out_dir / "training.png", len(seeds))
    _plot_error(curves, out_dir / "decoding_error.png")
    finite = bool(np.all(np.isfinite(frame.train_loss)))
    unbiased_ok = bool((unb.expected_unbiased == unb.verdict_unbiased).all())
    text = (
        f"Coded-gradient SGD on digits (MLP 64-128-10, d={model.d}), n=16 workers, p={p}, "
        f"{iterations} iterations, {batch} examples/part/iteration, lr=0.1, momentum=0.9, seeds={seeds}\n"
        f"wall clock: {wallclock.seconds_per_example:g} s/example, {wallclock.bandwidth:g} B/s per link, "
        f"{wallclock.bytes_per_scalar} B/scalar, latency {wallclock.latency:g} s\n"
        + _format(summary)
        + f"\nUnbiasedness ({samples} samples, 400 coordinates, alpha=0.001): "
        + "; ".join(f"{r.decoder}: {'unbiased' if r.verdict_unbiased else 'biased'}" for r in unb.itertuples())
        + ("" if unbiased_ok else "  <-- MISMATCH with theory")
    )
    return {
        "ok": finite and unbiased_ok,
        "files": ["history.csv", "summary.csv", "unbiasedness.csv", "training.png", "decoding_error.png"],
        "text": text,
    }


def training_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """The training stage at its default settings."""
    return run_training_stage(out, full, seed, progress, scheduler=scheduler)
