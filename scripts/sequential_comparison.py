#!/usr/bin/env python
"""Sequential (selective-repeat, multiplexed) vs per-round gradient codes under Markov stragglers (theory §62).

Writes its section of docs/results/sequential.md: for each straggler model (a ``KIND:VALUES`` spec
of the registry, as ``--stragglers`` takes it; by default gcsim's ``"markov"`` kind, one
Gilbert–Elliott chain per worker) and each code (selective repeat forgiving the oldest or the newest
debts, §62.2-§62.3, two per-round codes, and the multiplexed scheme M-SGC, §62.4, when
``B <= W - 1``), the fraction of jobs decoded within the code's delay when stragglers are lost, and the
completion time of all jobs when the master waits out a round that would lose a job (``--wait-cost``
time units per such round, a round's computation costing its normalized load). For selective repeat
(both orders) and M-SGC also the mean error of a job's gradient when a job not decoded is dropped or
decoded by least squares from what arrived (selective repeat: the optimal decoder of its per-round
cyclic MDS code, seed 0, on the workers whose task arrived within the delay, §5.1; M-SGC: §62.5, its
groups' code of seed 0). Intervals over the seeds (unit = seed): betting intervals for the shares and
normalized errors (valid at every number of seeds), the same for the per-round codes' completion
times (affine in their waited rounds), t for the others. With ``--trace``, the same on a measured
delay trace (scripts/record_delay_trace.py) under the deadline rule at ``--quantile``.

Run (about 3 minutes of CPU; 100 seeds, since an interval valid at every number of seeds is wide
over few)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/sequential_comparison.py --seeds 100 \
        --trace docs/results/sequential_trace.csv --out docs/results/sequential.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np
from _results_sections import replace_section
from sequential_training import code_arguments, trace_source

from gcsim._stats import betting_interval, t_interval
from gcsim.coding.delay_laws import load_trace
from gcsim.coding.evaluate import optimal_error
from gcsim.coding.schemes import encode
from gcsim.coding.sequential import (
    SelectiveRepeat,
    SequentialRun,
    is_bursty,
    job_masks,
    simulate_classic,
    simulate_selective_repeat,
    straggler_masks,
)
from gcsim.coding.sequential_multiplexed import MultiplexedSGC, simulate_multiplexed
from gcsim.coding.straggler_models import parse_spec


def _signed(values: list[float], digits: int) -> str:
    # a paired difference of two fractions, in [-1, 1]: the betting interval (any number of seeds)
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    lo, hi = betting_interval(a, -1.0, 1.0)
    verdict = "newest-first recovers more" if lo > 0 else "oldest-first recovers more" if hi < 0 else "not shown"
    return f"{mean:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}] ({verdict})"


def _share(values: list[float], digits: int, scale: float = 1.0) -> str:
    # a fraction in [0, 1] per seed (times ``scale`` when printed): the betting interval, valid at any
    # number of seeds and one-sided where every seed sits at 0 or 1 (theory §57.12)
    a = np.asarray(values, dtype=float)
    lo, hi = betting_interval(a, 0.0, 1.0)
    return f"{scale * float(a.mean()):.{digits}f} [{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]"


def _time(values: list[float], digits: int) -> str:
    # a time has no bound known in advance: the t interval (asymptotic), none when every seed agrees
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    if float(a.max() - a.min()) <= 1e-9 * max(1.0, abs(mean)):  # equal up to the round-off of a sum
        return f"{mean:.{digits}f} (equal on every seed: no interval)"
    lo, hi = t_interval(mean, float(a.std(ddof=1) / np.sqrt(a.size)), a.size - 1)
    return f"{mean:.{digits}f} [{max(lo, 0.0):.{digits}f}, {hi:.{digits}f}]"


def repeat_errors(code: SelectiveRepeat, run: SequentialRun, masks: np.ndarray) -> np.ndarray:
    """Each job's normalized error of a selective-repeat run whose stragglers are lost, decoded by least squares.

    0 for a job decoded within the delay (any ``n - s`` tasks of the cyclic MDS code give the sum, §5); for
    the others ``err(B, F) / n`` (§5.1) of the per-round code (cyclic MDS for ``s`` stragglers, seed 0, as
    M-SGC's groups take) on ``F``, the workers whose task of the job arrived within the delay
    (:func:`gcsim.coding.sequential.job_masks`): the gradient's error over the job's ``n`` equal parts.
    """
    out = np.zeros(run.decoded.size)
    late = run.decoded < 0
    if late.any():
        scheme = encode(code.assignment(), 1, "cyclic-mds", seed=0)
        out[late] = optimal_error(scheme, job_masks(run, masks)[late], normalized=True, progress=False)
    return out


def _add_errors(errors: dict[str, list[float]], dropped: np.ndarray, ls: np.ndarray, late: np.ndarray) -> None:
    # one seed's means: every job dropped / least squares, and least squares over the jobs not decoded (NaN: none)
    errors["drop"].append(float(dropped.mean()))
    errors["ls"].append(float(ls.mean()))
    errors["partial"].append(float(ls[late].mean()) if late.any() else float("nan"))


def _trace_errors(name: str, ref: str, dropped: float, ls: np.ndarray, late: np.ndarray) -> str:
    # one code's errors on the trace (one sequence: no interval)
    mean = float(ls[late].mean()) if late.any() else 0.0
    return (
        f"{name}, stragglers lost, mean normalized error of a job's gradient ({ref}): dropped {dropped:.4f}, "
        f"least squares {float(ls.mean()):.4f} (over the {int(late.sum())} jobs not decoded: {mean:.4f})."
    )


def _errors_line(name: str, errors: dict[str, list[float]], ref: str) -> str:
    # one code's drop / least-squares errors over the seeds; "partial" only over the seeds with a job not decoded
    part = [v for v in errors["partial"] if not np.isnan(v)]
    where = "" if len(part) == len(errors["partial"]) else f" (the {len(part)} seeds with one)"
    return (
        f"{name}, stragglers lost, mean normalized error of a job's gradient ({ref}; 0 decoded, 1 dropped): "
        f"dropped {_share(errors['drop'], 4)}, least squares {_share(errors['ls'], 4)}; "
        + (f"least-squares error of the jobs not decoded{where} {_share(part, 4)}." if part else "every job decoded.")
    )


TITLE = "Sequential vs per-round gradient codes"


def _trace_lines(
    args: argparse.Namespace,
    codes: list,
    code: SelectiveRepeat,
    newest: SelectiveRepeat,
    msgc: MultiplexedSGC | None,
) -> list[str]:
    """The codes on a measured trace: recovered jobs, and the completion time when the master waits."""
    source, note = trace_source(args.trace, args.quantile, args.n)
    masks, times, extra = source(0, load_trace(args.trace).shape[1])
    jobs = masks.shape[0] - args.B
    runs = [
        simulate_selective_repeat(code, masks, wait_cost=0.0),
        simulate_selective_repeat(newest, masks, wait_cost=0.0),
        simulate_classic(args.n, code.s, masks[:jobs], wait_cost=0.0),
        simulate_classic(args.n, args.lam, masks[:jobs], wait_cost=0.0),
    ]
    lost = [
        simulate_selective_repeat(code, masks),
        simulate_selective_repeat(newest, masks),
        simulate_classic(args.n, code.s, masks[:jobs]),
        simulate_classic(args.n, args.lam, masks[:jobs]),
    ]
    late = [run.decoded < 0 for run in lost[:2]]
    partial = [
        _trace_errors(
            f"Selective repeat ({order} debts forgiven)", "§5.1", float(d.mean()), repeat_errors(sr, run, masks), d
        )
        for order, sr, run, d in (("oldest", code, lost[0], late[0]), ("newest", newest, lost[1], late[1]))
    ]
    if msgc is not None:  # its first len - T jobs: the trace has no rounds to finish the others
        runs.append(simulate_multiplexed(msgc, masks, wait_cost=0.0))
        lost.append(simulate_multiplexed(msgc, masks))
        ls = simulate_multiplexed(msgc, masks, partial="least-squares")
        assert lost[-1].error is not None and ls.error is not None
        partial.append(_trace_errors("M-SGC", "§62.5", float(lost[-1].error.mean()), ls.error, ls.decoded < 0))
    lines = [
        f"### Measured trace `{args.trace.name}`",
        "",
        f"The {note}. Per-round times of the trace are the selective-repeat code's (its task was timed); "
        "the per-round code for λ stragglers computes (λ+1)/(s+1) times more, its times scaled so. A round lasts "
        "until the deadline or the last arrival; a waited round until the last arrival. One trace: no interval."
        + (
            f" M-SGC decodes the trace's first {masks.shape[0] - msgc.delay} jobs (delay T = {msgc.delay}), the "
            f"others {jobs}; its rounds are scaled by its load times the share of its {msgc.minitasks} mini-task "
            "slots that hold a job; it waits where a job would otherwise fail (§62.4 Remark 62.9)."
            if msgc is not None
            else ""
        ),
        "",
        "| code | load | delay | recovered within delay | waited rounds | completion time (s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (name, load, delay), run, gone in zip(codes, runs, lost, strict=True):
        rounds = int(run.decoded.max()) + 1
        # M-SGC's first and last rounds hold fewer mini-tasks: its round_time (no wait cost) scales them
        scale = run.round_time[:rounds] / code.load if run.tasks > 1 else load / code.load
        spent = float(((times[:rounds] + extra[:rounds] * run.waited[:rounds]) * scale).sum())
        lines.append(
            f"| {name} | {load:.3f} | {delay} | {gone.recovered_fraction:.4f} | {int(run.waited.sum())} | {spent:.2f} |"
        )
    return [*lines, "", *(x for line in partial for x in (line, ""))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    code_arguments(ap)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--wait-cost", type=float, default=1.0)
    ap.add_argument(
        "--stragglers",
        nargs="+",
        default=["markov:0.02,0.5", "markov:0.05,0.5", "markov:0.02,0.2"],
        help="straggler models, KIND:VALUES specs of the registry (the grammar of --stragglers)",
    )
    ap.add_argument("--trace", type=Path, default=None, help="a measured delay trace (scripts/record_delay_trace.py)")
    ap.add_argument("--quantile", type=float, default=0.9, help="the trace's deadline: this quantile of its delays")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    command = shlex.join(["scripts/sequential_comparison.py", *(argv if argv is not None else sys.argv[1:])])
    code = SelectiveRepeat(args.n, args.B, args.W, args.lam)
    newest = SelectiveRepeat(args.n, args.B, args.W, args.lam, forgive="newest")
    codes = [
        (f"selective repeat, s = {code.s}, T = {code.delay}", code.load, code.delay),
        (f"selective repeat, newest debts forgiven (§62.3), s = {code.s}, T = {code.delay}", code.load, code.delay),
        (f"per-round, s = {code.s} (equal load), T = 0", code.load, 0),
        (f"per-round, s = λ = {args.lam}, T = 0", (args.lam + 1) / args.n, 0),
    ]
    msgc = MultiplexedSGC(args.n, args.B, args.W, args.lam) if 1 <= args.B <= args.W - 1 else None
    if msgc is not None:
        codes.append((f"multiplexed (M-SGC, §62.4), T = {msgc.delay}", msgc.load, msgc.delay))
    lines = [
        "## Recovered jobs and completion time (Markov stragglers, a measured trace)",
        "",
        f"Generated by `{command}` (theory §62, guide [sequential gradient coding](../guides/sequential.md)).",
        "",
        f"n = {args.n} workers, bursty model (B, W, λ) = ({args.B}, {args.W}, {args.lam}), {args.jobs} jobs, "
        f"seeds 0..{args.seeds - 1}; wait cost {args.wait_cost} per waited round (a round's computation costs "
        "its normalized load). Recovered = fraction of jobs decoded within the code's delay when stragglers "
        "are lost; time = completion time of all jobs when the master waits out every round that would lose a "
        "job (M-SGC: a round after which some job would fail even if every worker arrived from then on, §62.4 "
        "Remark 62.9; its "
        "first and last T rounds cost the share of their mini-task slots that hold a job). Error of a job's "
        "gradient when stragglers are lost (0 decoded, 1 dropped): a job not decoded dropped, or decoded by least "
        "squares from what arrived within the delay (selective repeat: the optimal decoder of its per-round cyclic "
        "MDS code, seed 0, on the workers whose task arrived, §5.1; M-SGC: §62.5, its groups' code of seed 0). "
        "Cells: mean [95 % interval over seeds; the unit is the seed]: for the shares (recovered jobs, "
        "admissible windows, waited rounds as a share of the rounds, the normalized errors, and the paired "
        "difference) the betting "
        "interval of theory §57.12, valid at every number of seeds and one-sided where every seed is at 0 "
        "or 1; the completion time of a per-round code is its rounds × load plus the wait cost × its "
        "waited rounds, exactly, so its interval is theirs; the other completion times take the t interval "
        "(asymptotic: their rare waits can make it too narrow).",
        "",
    ]
    for spec in args.stragglers:
        model = parse_spec(spec, args.n)
        per_code: list[dict[str, list[float]]] = [{"rec": [], "time": [], "waits": [], "rounds": []} for _ in codes]
        # per code (selective repeat's two orders, M-SGC), stragglers lost: a job's error dropped / least squares
        errors: dict[str, dict[str, list[float]]] = {
            key: {"drop": [], "ls": [], "partial": []} for key in ("oldest", "newest", "msgc")
        }
        windows: list[float] = []
        for seed in range(args.seeds):
            # one sequence long enough for every code's delay (a prefix of it is the shorter one)
            longest = straggler_masks(model, args.n, args.jobs + max(args.B, msgc.delay if msgc else 0), seed=seed)
            masks = longest[: args.jobs + args.B]
            # each window of W rounds read alone (a whole long Markov sequence is never admissible)
            ok = [
                is_bursty(masks[r - args.W + 1 : r + 1], args.B, args.W, args.lam)
                for r in range(args.W - 1, len(masks))
            ]
            windows.append(float(np.mean(ok)))
            runs = [
                (
                    simulate_selective_repeat(code, masks),
                    simulate_selective_repeat(code, masks, wait_cost=args.wait_cost),
                ),
                (
                    simulate_selective_repeat(newest, masks),
                    simulate_selective_repeat(newest, masks, wait_cost=args.wait_cost),
                ),
                (
                    simulate_classic(args.n, code.s, masks[: args.jobs]),
                    simulate_classic(args.n, code.s, masks[: args.jobs], wait_cost=args.wait_cost),
                ),
                (
                    simulate_classic(args.n, args.lam, masks[: args.jobs]),
                    simulate_classic(args.n, args.lam, masks[: args.jobs], wait_cost=args.wait_cost),
                ),
            ]
            if msgc is not None:
                full = longest[: args.jobs + msgc.delay]
                runs.append(
                    (simulate_multiplexed(msgc, full), simulate_multiplexed(msgc, full, wait_cost=args.wait_cost))
                )
                ls = simulate_multiplexed(msgc, full, partial="least-squares")
                assert runs[-1][0].error is not None and ls.error is not None
                _add_errors(errors["msgc"], runs[-1][0].error, ls.error, ls.decoded < 0)
            for key, sr, (lost_run, _) in (("oldest", code, runs[0]), ("newest", newest, runs[1])):
                late = lost_run.decoded < 0
                _add_errors(errors[key], late.astype(float), repeat_errors(sr, lost_run, masks), late)
            for stats, (lost, waited) in zip(per_code, runs, strict=True):
                stats["rec"].append(lost.recovered_fraction)
                stats["time"].append(waited.completion_time)
                stats["waits"].append(float(waited.waited.mean()))  # a share of the rounds, in [0, 1]
                stats["rounds"].append(float(waited.waited.size))
        if model.model_kind == "markov":
            p_enter, p_leave = (float(getattr(model.params, k)) for k in ("p_enter", "p_leave"))  # a Markov model's
            law = (
                f"Stationary straggling probability {p_enter / (p_enter + p_leave):.4f}, mean burst "
                f"{1 / p_leave:.1f} rounds"
            )
        else:
            law = model.describe()
        lines += [
            f"### `{spec}`",
            "",
            f"{law}; windows of W rounds that satisfy the (B, W, λ) conditions: {_share(windows, 4)}.",
            "",
            "| code | load | delay | recovered within delay | waited rounds | completion time |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for i, ((name, load, delay), stats) in enumerate(zip(codes, per_code, strict=True)):
            rounds = stats["rounds"][0]
            if i in (2, 3):  # per-round codes: time = rounds * load + wait cost * waited rounds, exactly
                mean = float(np.mean(stats["time"]))
                lo, hi = (rounds * load + args.wait_cost * rounds * v for v in betting_interval(stats["waits"], 0, 1))
                time = f"{mean:.1f} [{lo:.1f}, {hi:.1f}]"
            else:
                time = _time(stats["time"], 1)
            lines.append(
                f"| {name} | {load:.3f} | {delay} | {_share(stats['rec'], 4)} "
                f"| {_share(stats['waits'], 1, rounds)} | {time} |"
            )
        # the two orders see the same masks: a paired interval of the difference (unit = seed)
        diff = [a - b for a, b in zip(per_code[1]["rec"], per_code[0]["rec"], strict=True)]
        lines += [
            "",
            f"Newest minus oldest debts forgiven, recovered within delay (paired over seeds): {_signed(diff, 4)}.",
            "",
        ]
        lines += [
            _errors_line("Selective repeat (oldest debts forgiven)", errors["oldest"], "§5.1"),
            "",
            _errors_line("Selective repeat (newest debts forgiven)", errors["newest"], "§5.1"),
            "",
        ]
        if msgc is not None:
            lines += [_errors_line("M-SGC", errors["msgc"], "§62.5"), ""]
    if args.trace is not None:
        lines += _trace_lines(args, codes, code, newest, msgc)
    text = "\n".join(lines)
    if args.out is not None:
        replace_section(args.out, "markov", text, title=TITLE)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
