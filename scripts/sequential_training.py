#!/usr/bin/env python
"""Training with sequential (selective-repeat) vs per-round gradient codes under bursty stragglers (§62).

Writes its section of docs/results/sequential.md. The setting is the one Krishnan, Ebrahimi &
Khisti train in: ``B + 1`` models are trained concurrently, job ``t`` (round ``t``) computes a
gradient of model ``t mod (B + 1)``, so a job decoded by round ``t + B`` is applied before that
model's next job and no gradient is stale. Every model is an MLP (64 -> 32 -> 10) on sklearn's
digits, trained by :func:`gcsim.learning.train.train` (full-batch SGD) with the cyclic repetition
code of ``n`` parts: the per-round code of the scheme. The master decodes each job from the workers
whose task of it arrived within the code's delay (:func:`gcsim.coding.sequential.job_masks`; the
trainer replays these masks as the registry's ``"trace"`` kind) with the optimal (least squares)
decoder: exact when ``n - s`` arrived, an approximation otherwise.

Stragglers: each ``--stragglers`` spec (registry kinds, the ``"markov"`` Gilbert–Elliott chains by
default), a round costing its code's normalized load (one time unit = one full gradient); and with
``--trace FILE``, a measured delay trace (scripts/record_delay_trace.py) under the deadline rule at
the ``--quantile`` of its delays (the registry's ``"delay"`` kind with a ``"trace"`` delay model):
a round lasts until the deadline or the last arrival, scaled by the code's load relative to the
traced task's. Model time of an update = the end of the round its job is decoded in.

Two modes: stragglers lost (as above), or the master waits for every worker in a round that would
lose a job (every job exact, the round longer: ``--wait-cost`` under Markov, until the last arrival
on the trace). Round times scale with the code's normalized load (a per-round code for ``λ``
stragglers computes more per round).

Reported at time budgets (fractions of the selective-repeat run's time with stragglers lost, the
same budgets for every code and both modes): training loss and test
accuracy averaged over the ``B + 1`` models, mean [95 % t interval over seeds] (unit = seed: the
straggler masks under Markov, the partition and initial parameters always), and the paired
difference of each code against the per-round code of equal load, with what the interval supports.

Run (a few minutes on a shared 2-core machine)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/sequential_training.py \\
        --trace docs/results/sequential_trace.csv --out docs/results/sequential.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _results_sections import replace_section

from gcsim._stats import t_interval
from gcsim.coding.arrival_rules import arrival_rule
from gcsim.coding.delay_laws import delay_model, load_trace
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.sequential import (
    SelectiveRepeat,
    job_masks,
    simulate_classic,
    simulate_selective_repeat,
    straggler_masks,
)
from gcsim.coding.straggler_models import straggler_model
from gcsim.learning.datasets import load_digits
from gcsim.learning.models import MLP
from gcsim.learning.train import CodeSpec, train

# a straggler source: for (seed, rounds), the masks (R, n), each round's time at the selective-repeat
# code's load, and what waiting for every worker adds to a round (at that load)
Source = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _markov(spec: str, n: int, load: float, wait_cost: float) -> Source:
    return lambda seed, rounds: (
        straggler_masks(spec, n, rounds, seed=seed),
        np.full(rounds, load),
        np.full(rounds, wait_cost),
    )


def trace_source(path: Path, quantile: float, n: int) -> tuple[Source, str]:
    """The rounds of a measured trace under the deadline rule at its ``quantile``, and a line describing them."""
    delays = load_trace(path)
    deadline = float(np.quantile(delays, quantile))
    model = straggler_model(
        "delay", n, delays=delay_model("trace", n, delays=delays), rule=arrival_rule("deadline", deadline=deadline)
    )
    parts = model.delay_parts()
    assert parts is not None  # a delay kind has its delays and rule

    def source(seed: int, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # the trace replayed from its first round for every seed (seeds vary the training only); a round
        # lasts until the deadline or the last arrival, waiting lasts until the last arrival
        raw = parts[0].sample_delays(rounds, 0)
        masks, times = parts[1].apply(raw)
        return masks, times, raw.max(axis=1) - times

    strag = delays > deadline
    follow = float((strag[:, 1:] & strag[:, :-1]).sum() / max(strag[:, :-1].sum(), 1))
    note = (
        f"measured trace `{path}` ({delays.shape[0]} workers x {delays.shape[1]} rounds of real gradient "
        f"computations on this 2-core VM, scripts/record_delay_trace.py), deadline = its {quantile:g} quantile, "
        f"{deadline * 1e3:.1f} ms: a worker straggles in {strag.mean():.3f} of the rounds, in {follow:.3f} of "
        f"the rounds after one it straggled in; at most {int(strag.sum(axis=0).max())} stragglers in a round "
        "(a slow round of the whole machine)"
    )
    return source, note


def _interval(values: np.ndarray, digits: int, top: float = float("inf")) -> str:
    # clipped to the quantity's range [0, top] (a loss, an accuracy)
    a = np.asarray(values, dtype=float)
    lo, hi = t_interval(float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)), a.size - 1)
    lo, hi = max(lo, 0.0), min(hi, top)
    return f"{a.mean():.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _difference(values: np.ndarray, above: str, below: str) -> str:
    # the paired difference's interval and what it supports: above zero, below zero, or neither
    a = np.asarray(values, dtype=float)
    lo, hi = t_interval(float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)), a.size - 1)
    return f"{a.mean():+.4f} [{lo:+.4f}, {hi:+.4f}] ({above if lo > 0 else below if hi < 0 else 'not shown'})"


def _curves(spec: CodeSpec, jobs: np.ndarray, seed: int, models: int, args: argparse.Namespace, data) -> list:
    """Train the ``models`` interleaved models on their jobs' masks: one history per model."""
    out = []
    for k in range(models):
        own = jobs[k::models]
        delays = np.where(own.T, 0.0, np.inf)
        # the trace kind replays from round seed % iterations: roll so that the replay starts at job k
        replay = straggler_model("trace", delays=np.roll(delays, seed, axis=1), policy="deadline", deadline=0.0)
        res = train(
            spec,
            data,
            model=MLP((data.n_features, 32, data.n_classes)),
            iterations=len(own),
            eval_every=1,
            lr=args.lr,
            seed=seed,
            init_seed=1000 * seed + k,
            stragglers=replay,
        )
        out.append(res.history)
    return out


MODES = (
    "Stragglers lost (each job decoded from what arrived within the delay, least squares)",
    "Master waits for every worker in a round that would lose a job (every job exact; a waited round lasts "
    "--wait-cost longer under Markov, until the last arrival on the trace, times the code's relative load)",
)


def _plans(masks: np.ndarray, unit: np.ndarray, extra: np.ndarray, wait: float | None, codes: list) -> list:
    """Per code: the workers each job is decoded from, the round it is decoded in, each round's time, the spec.

    ``codes``: a :class:`SelectiveRepeat` or the ``s`` of a per-round code, with its ``CodeSpec``;
    round times scale with the code's load (``unit`` and ``extra`` are at the first code's load).
    """
    n = masks.shape[1]
    base = codes[0][0].load
    out = []
    for code, spec in codes:
        if isinstance(code, SelectiveRepeat):
            run = simulate_selective_repeat(code, masks, wait_cost=wait)
            late = np.arange(run.decoded.size) + code.delay  # a lost job is given up at its deadline
            decoded = np.where(run.decoded >= 0, run.decoded, late)
        else:
            run = simulate_classic(n, code, masks, wait_cost=wait)
            decoded = np.arange(masks.shape[0])
        scale = run.load / base
        arrived = masks | run.waited[:, None]
        out.append((job_masks(run, arrived), decoded, (unit + extra * run.waited) * scale, spec))
    return out


def code_arguments(ap: argparse.ArgumentParser) -> None:
    """The workers and the bursty model, ``--n --B --W --lam`` (the sequential scripts share them)."""
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--B", type=int, default=2)
    ap.add_argument("--W", type=int, default=5)
    ap.add_argument("--lam", type=int, default=6)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    code_arguments(ap)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--budgets", default="0.25,0.5,1", help="time budgets, fractions of the sequential run's time")
    ap.add_argument("--stragglers", nargs="*", default=["markov:0.05,0.5", "markov:0.02,0.2"])
    ap.add_argument("--wait-cost", type=float, default=1.0, help="time a waited Markov round adds")
    ap.add_argument("--trace", type=Path, default=None)
    ap.add_argument("--quantile", type=float, default=0.9)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    command = shlex.join(["scripts/sequential_training.py", *(argv if argv is not None else sys.argv[1:])])
    n, B = args.n, args.B
    models = B + 1
    data = load_digits(seed=0)
    seq = {f: SelectiveRepeat(n, B, args.W, args.lam, forgive=f) for f in ("oldest", "newest")}
    s = seq["oldest"].s
    spec_s = CodeSpec(f"cyclic s={s}", cyclic_repetition_assignment(n, s), method="cyclic-mds")
    spec_lam = CodeSpec(f"cyclic s={args.lam}", cyclic_repetition_assignment(n, args.lam), method="cyclic-mds")
    load_s = (s + 1) / n
    names = [
        f"selective repeat (oldest forgiven), s = {s}, T = {B}",
        f"selective repeat (newest forgiven), s = {s}, T = {B}",
        f"per-round, s = {s} (equal load), T = 0",
        f"per-round, s = λ = {args.lam}, T = 0",
    ]
    budgets = [float(b) for b in args.budgets.split(",")]
    codes = [(seq["oldest"], spec_s), (seq["newest"], spec_s), (s, spec_s), (args.lam, spec_lam)]
    sources: list[tuple[str, str, Source]] = [
        (f"`{sp}`", "Markov stragglers", _markov(sp, n, load_s, args.wait_cost)) for sp in args.stragglers
    ]
    if args.trace is not None:
        src, note = trace_source(args.trace, args.quantile, n)
        sources.append((f"trace `{args.trace.name}`", note + "; the same trace for every seed", src))

    lines = [
        "## Training: loss and accuracy against model time",
        "",
        f"Generated by `{command}` (theory §62; the setting and the model time are in the script's docstring).",
        "",
        f"n = {n} workers, (B, W, λ) = ({B}, {args.W}, {args.lam}), {models} models trained concurrently "
        f"(job t trains model t mod {models}), MLP 64-32-10 on sklearn digits, full-batch SGD lr {args.lr}, "
        f"{args.rounds} rounds of the selective-repeat code, seeds 0..{args.seeds - 1}. Loss = training loss, "
        f"accuracy = test accuracy, averaged over the {models} models at each budget; cells: mean [95 % t "
        "interval over seeds]; differences are paired (same seed), code minus the per-round code of equal load.",
        "",
    ]
    for title, note, source in sources:
        # per mode, code, budget, seed: (loss, accuracy)
        res = np.zeros((len(MODES), len(names), len(budgets), args.seeds, 2))
        for seed in range(args.seeds):
            masks, unit, extra = source(seed, args.rounds)
            total = float(unit.sum())  # the selective-repeat run's time when stragglers are lost
            for mode, wait in enumerate((None, 0.0)):
                for c, (jobs, decoded, times, spec) in enumerate(_plans(masks, unit, extra, wait, codes)):
                    ends = np.cumsum(times)  # end of each round, in model time
                    histories = _curves(spec, jobs, seed, models, args, data)
                    for b, frac in enumerate(budgets):
                        done = ends[decoded] <= frac * total + 1e-9  # the jobs applied by the budget
                        rows = [h.iloc[int(done[k::models].sum())] for k, h in enumerate(histories)]
                        res[mode, c, b, seed] = [
                            np.mean([r.train_loss for r in rows]),
                            np.mean([r.test_acc for r in rows]),
                        ]
        lines += [f"### {title}", "", f"{note}.", ""]
        for mode, how in enumerate(MODES):
            lines += [f"{how}:", "", "| budget | code | loss | accuracy |", "| --- | --- | --- | --- |"]
            for b, frac in enumerate(budgets):
                for c, name in enumerate(names):
                    loss, acc = _interval(res[mode, c, b, :, 0], 4), _interval(res[mode, c, b, :, 1], 4, 1.0)
                    lines.append(f"| {frac:g} | {name} | {loss} | {acc} |")
            lines.append("")
            for b, frac in enumerate(budgets):
                for c in (0, 1, 3):
                    dl = res[mode, c, b, :, 0] - res[mode, 2, b, :, 0]
                    da = res[mode, c, b, :, 1] - res[mode, 2, b, :, 1]
                    lines.append(
                        f"* budget {frac:g}, {names[c]} minus per-round s = {s}: "
                        f"loss {_difference(dl, 'higher loss', 'lower loss')}, "
                        f"accuracy {_difference(da, 'higher accuracy', 'lower accuracy')}"
                    )
            lines.append("")
    text = "\n".join(lines)
    if args.out is not None:
        replace_section(args.out, "training", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
