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

Three modes. Stragglers lost, least squares (as above for the codes with one task per worker and
round; M-SGC: a job it decodes is exact, one it does not is taken at its deadline ``t + T`` as the
least-squares combination of its arrived mini-tasks over its ``N`` equal sub-parts,
``simulate_multiplexed(partial="least-squares")``, §62.5, the gradient at the parameters of the
job's start, each example weighted by its sub-part's coefficient). Stragglers lost, exact gradients:
a job's gradient is the full gradient at the parameters its model had when the job started, applied
at the end of the round the simulator decodes it in (its run's ``decoded``), and a job the simulator
does not decode is dropped, the same rule for every code; this mode includes the multiplexed scheme
M-SGC (§62.4, whose recovery is exact: every uncoded chunk and ``n - λ`` coded tasks of each group
give the sum, Theorem 62.8), which decodes job ``t`` in round ``t + W - 2 + B``, after its model's
next job started (one update stale); a second M-SGC row trains ``T + 1`` models interleaved instead
(job ``t`` trains model ``t mod (T + 1)``), so every job is applied before its model's next job
starts (no staleness), on the same masks and budgets (each model then gets fewer updates). Master
waits (exact gradients as in the second mode): for every worker in a round that would lose a job
(the simulators' wait rules, every job decoded; the round longer: ``--wait-cost`` under Markov,
until the last arrival on the trace). Round times scale with the code's normalized load (a per-round
code for ``λ`` stragglers computes more per round; M-SGC's first and last rounds hold fewer
mini-tasks).

Reported at time budgets (fractions of the selective-repeat run's time with stragglers lost, the
same budgets for every code and every mode): training loss and test
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
from typing import Any

import numpy as np
from _results_sections import replace_section

from gcsim._stats import t_interval
from gcsim.coding.arrival_rules import arrival_rule
from gcsim.coding.delay_laws import delay_model, load_trace
from gcsim.coding.encoders.classic import cyclic_repetition_assignment
from gcsim.coding.sequential import (
    SelectiveRepeat,
    SequentialRun,
    job_masks,
    simulate_classic,
    simulate_selective_repeat,
    straggler_masks,
)
from gcsim.coding.sequential_multiplexed import MultiplexedSGC, simulate_multiplexed
from gcsim.coding.straggler_models import straggler_model
from gcsim.learning.datasets import load_digits
from gcsim.learning.models import MLP
from gcsim.learning.train import CodeSpec, partition, train

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
    if np.all(a == a[0]):  # a zero-width t interval would claim a precision the seeds do not show
        return f"{a[0]:.{digits}f} (every seed; no interval)"
    lo, hi = t_interval(float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)), a.size - 1)
    lo, hi = max(lo, 0.0), min(hi, top)
    return f"{a.mean():.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _difference(values: np.ndarray, above: str, below: str) -> str:
    # the paired difference's interval and what it supports: above zero, below zero, or neither
    a = np.asarray(values, dtype=float)
    if np.all(a == a[0]):  # the same difference on every seed: no interval, and nothing shown by it
        return f"{a[0]:+.4f} on every seed (no interval)"
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


def _paired(a: np.ndarray, b: np.ndarray, what: str) -> str:
    """A bullet: the paired (same seed) difference ``a - b`` of loss and accuracy (``(seeds, 2)`` each)."""
    dl, da = a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]
    return (
        f"* {what}: loss {_difference(dl, 'higher loss', 'lower loss')}, "
        f"accuracy {_difference(da, 'higher accuracy', 'lower accuracy')}"
    )


MODES = (
    "Stragglers lost, each job decoded by least squares from what arrived within the delay (M-SGC: a job it does "
    "not decode taken at round t + T as the least-squares combination of its arrived mini-tasks, §62.5)",
    "Stragglers lost, exact gradients: a job is applied at its decode round if its code decodes it, dropped "
    "otherwise (the same rule for every code)",
    "Master waits for every worker in a round that would lose a job (every job exact; a waited round lasts "
    "--wait-cost longer under Markov, until the last arrival on the trace, times the code's relative load)",
)


def simulate(code: Any, masks: np.ndarray, wait: float | None) -> SequentialRun:
    """The simulator's run of ``code`` (a :class:`SelectiveRepeat`, an :class:`MultiplexedSGC` or the ``s`` of a
    per-round code) over ``masks``; ``wait``: None (stragglers lost) or a wait cost."""
    if isinstance(code, SelectiveRepeat):
        return simulate_selective_repeat(code, masks, wait_cost=wait)
    if isinstance(code, MultiplexedSGC):
        return simulate_multiplexed(code, masks, wait_cost=wait)
    return simulate_classic(masks.shape[1], code, masks, wait_cost=wait)


def round_times(run: SequentialRun, unit: np.ndarray, extra: np.ndarray, base: float) -> np.ndarray:
    """Each round's model time: the source's time at load ``base`` (plus ``extra`` if waited) scaled to the run's
    load; M-SGC's first and last rounds hold fewer mini-tasks (its ``round_time``, run with a wait cost of 0)."""
    scale = run.round_time / base if run.tasks > 1 else run.load / base
    return (unit + extra * run.waited) * scale


def _example_weights(job_weights: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Each example's weight ``(n, b)``: the ``n b`` examples in order cut into the ``N`` sub-parts of
    ``job_weights`` (as equal as they divide: ``numpy.array_split``), each taking its sub-part's weight."""
    count, N = shape[0] * shape[1], job_weights.size
    if count < N:
        raise SystemExit(f"{count} training examples cannot fill M-SGC's {N} sub-parts")
    sizes = [len(a) for a in np.array_split(np.arange(count), N)]
    return np.repeat(job_weights, sizes).reshape(shape)


def exact_training(
    data: Any,
    seed: int,
    k: int,
    lr: float,
    n: int,
    applied: np.ndarray,
    models: int,
    ends: np.ndarray,
    limits: list,
    job_weights: np.ndarray | None = None,
) -> list[tuple[float, float]]:
    """Model ``k``'s exact-gradient training: (training loss, test accuracy) at each of the increasing ``limits``.

    Model ``k``'s jobs are ``t = k, k + models, ...``; job ``t`` computes the full gradient at the parameters
    as they are when round ``t`` starts, and it is applied (SGD, ``lr``) at the end of round ``applied[t]``
    (the simulator's decode round) or never (``-1``: dropped).  A limit sees the updates of the rounds that
    end by it (``ends``: each round's end).  The parts, the model and its initial parameters are those of
    :func:`_curves` (``train`` with the same ``seed`` and ``init_seed``).  ``job_weights`` (M-SGC's
    least-squares decoding, §62.5): job ``t``'s gradient is instead ``Σ_p job_weights[t, p] g_p`` over its
    sub-parts (the exact gradient where every weight is 1).
    """
    parts = partition(data.n_train, n, seed)
    x, y = data.x_train[parts], data.y_train[parts]
    model = MLP((data.n_features, 32, data.n_classes))
    theta = model.init(1000 * seed + k)
    due: dict[int, list[np.ndarray]] = {}  # decode round -> the gradients applied at its end
    out: list[tuple[float, float]] = []

    def record() -> None:
        out.append((model.loss(theta, data.x_train, data.y_train), model.accuracy(theta, data.x_test, data.y_test)))

    for r in range(ends.size):
        while len(out) < len(limits) and ends[r] > limits[len(out)] + 1e-9:
            record()
        if len(out) == len(limits):  # every limit seen: later rounds change nothing reported
            return out
        if r % models == k and r < applied.size and applied[r] >= 0:
            w = None if job_weights is None or np.all(job_weights[r] == 1.0) else job_weights[r]
            ex = None if w is None else _example_weights(w, y.shape)
            due.setdefault(int(applied[r]), []).append(model.part_gradients(theta, x, y, weights=ex).sum(axis=0))
        for g in due.pop(r, []):
            theta = theta - lr * g
    while len(out) < len(limits):
        record()
    return out


def _least_squares(
    run: SequentialRun,
    code: Any,
    masks: np.ndarray,
    spec: CodeSpec | None,
    seed: int,
    models: int,
    args: argparse.Namespace,
    data: Any,
    ends: np.ndarray,
    limits: list,
) -> np.ndarray:
    """Mode 0: (loss, accuracy) per limit, averaged over the ``models``, each job decoded by least squares from
    what arrived within the delay and applied at its decode round, a job the code does not decode at its deadline
    ``t + T`` (every per-round job in its round). A per-round task code (``spec``): decoded by ``train`` from
    the workers whose task arrived. M-SGC (``spec`` None): a job it does not decode taken as the least-squares
    combination of its arrived mini-tasks (``simulate_multiplexed(partial="least-squares")``, §62.5)."""
    if isinstance(code, MultiplexedSGC):
        run = simulate_multiplexed(code, masks, partial="least-squares")
    late = np.arange(run.decoded.size) + run.delay  # a job not decoded: given up, or approximated, at its deadline
    decoded = np.where(run.decoded >= 0, run.decoded, late)
    if spec is None:
        hist = [
            exact_training(data, seed, k, args.lr, args.n, decoded, models, ends, limits, job_weights=run.weights)
            for k in range(models)
        ]
        return np.mean(hist, axis=0)
    histories = _curves(spec, job_masks(run, masks), seed, models, args, data)
    out = np.zeros((len(limits), 2))
    for b, limit in enumerate(limits):
        done = ends[decoded] <= limit + 1e-9  # the jobs applied by the budget
        rows = [h.iloc[int(done[k::models].sum())] for k, h in enumerate(histories)]
        out[b] = [np.mean([r.train_loss for r in rows]), np.mean([r.test_acc for r in rows])]
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
    msgc = MultiplexedSGC(n, B, args.W, args.lam)
    # M-SGC's rounds are cheaper: enough of them (the same masks first) to fill the largest budget
    rounds_m = int(np.ceil(1.1 * args.rounds * load_s / msgc.load)) + msgc.delay
    names = [
        f"selective repeat (oldest forgiven), s = {s}, T = {B}",
        f"selective repeat (newest forgiven), s = {s}, T = {B}",
        f"per-round, s = {s} (equal load), T = 0",
        f"per-round, s = λ = {args.lam}, T = 0",
        f"multiplexed (M-SGC, §62.4), load {msgc.load:.3f}, T = {msgc.delay}",
        f"multiplexed (M-SGC), {msgc.delay + 1} interleaved models (no staleness), T = {msgc.delay}",
    ]
    budgets = [float(b) for b in args.budgets.split(",")]
    codes: list[tuple[Any, CodeSpec | None]] = [
        (seq["oldest"], spec_s),
        (seq["newest"], spec_s),
        (s, spec_s),
        (args.lam, spec_lam),
        (msgc, None),  # no per-round task code: least squares over its sub-parts (§62.5)
        (msgc, None),
    ]
    # models trained concurrently, job t training model t mod count: T + 1 for the last row, so that every
    # M-SGC job is applied before its model's next job starts (the other rows: B + 1, as the paper's setting)
    counts = [models] * (len(codes) - 1) + [msgc.delay + 1]
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
        f"Gradient model. Least squares (first table, stragglers lost): `gcsim.learning.train.train` decodes each "
        "job from the workers whose task arrived within the delay. Exact (second and third tables): a job's "
        "gradient is the full gradient at the parameters its model had when the job started, applied at the end "
        "of the round the simulator decodes the job in (`decoded` of its run; M-SGC's recovery is exact, Theorem "
        "62.8 and Lemma 62.7: every uncoded chunk plus n - λ coded tasks of each group give the sum), and a job "
        "the simulator does not decode is dropped, for every code alike. Selective repeat and the per-round codes "
        f"decode a job by round t + {B}, before its model's next job; M-SGC decodes it in round t + {msgc.delay}, "
        f"so with {models} models its gradients are one update stale (computed before the model's previous job "
        f"was applied). Its rounds cost its load ({msgc.load:.3f}, against {load_s:.3f}) times the share of its "
        f"mini-task slots that hold a job, so it runs {rounds_m} rounds ({rounds_m - msgc.delay} jobs) to fill "
        f"the budgets: the first {args.rounds} have the other codes' stragglers, the rest continue the Markov "
        f"chains (on the trace: the trace again from its first round); the budgets end before round "
        f"{rounds_m} in every run. The last row trains {msgc.delay + 1} models interleaved with M-SGC (job t "
        f"trains model t mod {msgc.delay + 1}; averages over its {msgc.delay + 1} models): every job applied "
        f"before its model's next job starts, no staleness, each model updated {models}/{msgc.delay + 1} as often. "
        "Least squares "
        "for M-SGC (first table, §62.5): a job it does not decode by t + T is applied at t + T as the "
        f"least-squares combination of its arrived mini-tasks over its {msgc.subparts} equal sub-parts (each "
        "training example weighted by its sub-part's coefficient), the gradient at its job's start.",
        "",
    ]
    for title, note, source in sources:
        # per mode, code, budget, seed: (loss, accuracy); NaN where a mode does not apply to a code
        res = np.full((len(MODES), len(names), len(budgets), args.seeds, 2), np.nan)
        for seed in range(args.seeds):
            drawn = {R: source(seed, R) for R in (args.rounds, rounds_m)}  # a longer draw extends the shorter
            total = float(drawn[args.rounds][1].sum())  # the selective-repeat run's time when stragglers are lost
            limits = [frac * total for frac in budgets]
            for wait, modes in ((None, (0, 1)), (0.0, (2,))):
                for c, (code, spec) in enumerate(codes):
                    masks, unit, extra = drawn[rounds_m if code is msgc else args.rounds]
                    run = simulate(code, masks, wait)
                    ends = np.cumsum(round_times(run, unit, extra, load_s))  # end of each round, in model time
                    if code is msgc and ends[-1] < limits[-1]:
                        raise SystemExit(f"M-SGC's {rounds_m} rounds end before the largest budget")
                    exact = [
                        exact_training(data, seed, k, args.lr, n, run.decoded, counts[c], ends, limits)
                        for k in range(counts[c])
                    ]
                    res[modes[-1], c, :, seed] = np.mean(exact, axis=0)  # averaged over the models
                    if modes[0] == 0:
                        res[0, c, :, seed] = _least_squares(
                            run, code, masks, spec, seed, counts[c], args, data, ends, limits
                        )
        lines += [f"### {title}", "", f"{note}.", ""]
        for mode, how in enumerate(MODES):
            lines += [f"{how}:", "", "| budget | code | loss | accuracy |", "| --- | --- | --- | --- |"]
            for b, frac in enumerate(budgets):
                for c, name in enumerate(names):
                    if np.isnan(res[mode, c, b]).all():
                        continue
                    loss, acc = _interval(res[mode, c, b, :, 0], 4), _interval(res[mode, c, b, :, 1], 4, 1.0)
                    lines.append(f"| {frac:g} | {name} | {loss} | {acc} |")
            lines.append("")
            for b, frac in enumerate(budgets):
                for c in (0, 1, 3, 4, 5):
                    lines.append(
                        _paired(
                            res[mode, c, b], res[mode, 2, b], f"budget {frac:g}, {names[c]} minus per-round s = {s}"
                        )
                    )
                # the same masks and budgets: T + 1 interleaved models against B + 1 (stale) models
                lines.append(
                    _paired(
                        res[mode, 5, b],
                        res[mode, 4, b],
                        f"budget {frac:g}, M-SGC with {counts[5]} models minus M-SGC with {models}",
                    )
                )
            lines.append("")
        lines += ["M-SGC, least-squares decoding of the jobs it does not decode minus dropping them (§62.5):", ""]
        for b, frac in enumerate(budgets):
            for c in (4, 5):
                lines.append(_paired(res[0, c, b], res[1, c, b], f"budget {frac:g}, {names[c]}"))
        lines.append("")
    text = "\n".join(lines)
    if args.out is not None:
        replace_section(args.out, "training", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
