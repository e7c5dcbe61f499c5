"""``gcsim advise``: rank every code gcsim can build for a number of workers, a load, m and stragglers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from ...errors import GcsimError
from ..common import (
    EXIT_FAILURE,
    EXIT_OK,
    UsageError,
    check_output_dir,
    fmt,
    int_arg,
    output_path,
    path_errors,
    show_progress,
    straggler_arg,
    table,
)
from ..flags import deprecate
from ..help_texts import OBJECTIVES, straggler_spec
from ..sweep_options import add_scheduler_flags, scheduler_from_args
from .delays import DELAY_HELP, RULE_HELP, delays_and_rule

__all__ = ["register", "parse_stragglers", "parse_links"]

_STRAGGLER_HELP = "stragglers: S (= fixed:S) or " + straggler_spec()


def parse_stragglers(text: str, n: int):
    """``fixed:10`` / ``bernoulli:0.1`` / ``markov:0.05,0.5`` -> a straggler model over ``n`` workers.

    The grammar is :func:`gcsim.advisor.core.straggler_spec`'s; its refusals name ``--stragglers``.
    """
    from ...advisor.core import straggler_spec

    if text.isdigit():  # S stragglers, as in every command: fixed:S
        text = f"fixed:{text}"
    try:
        return straggler_spec(text, n)
    except GcsimError as exc:
        raise UsageError(f"--stragglers: {str(exc).removeprefix('stragglers: ')}") from None


_LINK_KEYS = {"bandwidth", "latency", "gradient-bytes", "compute-time"}


def parse_links(text: str | None) -> dict[str, float] | None:
    """``bandwidth=1e9,latency=1e-4,gradient-bytes=4e6[,compute-time=0.5]`` -> the ``links`` dict."""
    if text is None:
        return None
    out: dict[str, float] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _LINK_KEYS:
            raise UsageError(f"--links: expected KEY=VALUE with KEY in {sorted(_LINK_KEYS)}, got {item!r}")
        if key.replace("-", "_") in out:  # the last of repeated keys would win silently
            raise UsageError(f"--links: {key} is given twice in {text!r}")
        try:
            out[key.replace("-", "_")] = float(value)
        except ValueError:
            raise UsageError(f"--links: {key}={value!r} is not a number") from None
    if "bandwidth" not in out:
        raise UsageError("--links: needs bandwidth=<bytes per second>")
    return out


def _load(text: str) -> int | float:
    """``--load``: ``L`` (an int: parts per worker, L/n of the data), a fraction ``0.14`` or ``A/B`` (``8/57``).

    >>> _load("8"), _load("0.25"), _load("8/57") == 8 / 57
    (8, 0.25, True)
    >>> _load("57/8")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a fraction in (0, 1), got 57/8 = 7.125
    """
    from ..common import parse_integer

    if text.strip().lstrip("+-").isdigit():  # parts per worker: exact, and too long is "too large"
        try:
            return parse_integer(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    top, slash, bottom = text.partition("/")
    if slash:  # A/B: the fraction A/B of the data (8/57: what 8 of 57 workers' parts are)
        try:
            a, b = parse_integer(top), parse_integer(bottom)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a whole number of parts or a fraction in (0, 1) (0.14 or A/B, e.g. 8/57), got {text!r}"
            ) from None
        if b <= 0 or not 0 < a < b:
            shown = f"{a}/{b} = {a / b:g}" if b > 0 else f"{a}/{b}"
            raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1), got {shown}")
        return a / b
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of parts or a fraction in (0, 1) (0.14 or A/B, e.g. 8/57), got {text!r}"
        ) from None


_load.__name__ = "load"


def _stragglers_from_args(args: argparse.Namespace):
    """``--stragglers KIND:VALUES``, or a delay model and an arrival rule (``--delays``, ``--rule``)."""
    from ...coding.stragglers import straggler_model

    if (args.stragglers is None) == (args.delays is None):
        raise UsageError("give one of --stragglers KIND:VALUES or --delays KIND:key=value,... with --rule")
    if args.stragglers is not None:
        if args.rule is not None:
            raise UsageError("--rule: goes with --delays (a delay model), not with --stragglers")
        return parse_stragglers(args.stragglers, args.workers)
    if args.rule is None:
        raise UsageError("--rule: needed with --delays (first:s=S | deadline:deadline=T | relative:mu=MU)")
    delays, rule = delays_and_rule(args)
    if delays.n != args.workers:
        raise UsageError(f"--delays: the model is over {delays.n} workers, --workers is {args.workers}")
    return straggler_model("delay", delays=delays, rule=rule)


def _check_export_target(folder: str, rank: int, overwrite: bool) -> None:
    """Refuse ``--out FOLDER`` before the advice runs: a folder that cannot be written, or one
    holding an export of the same rank (``rank<R>_<family>_<encoder>``) without ``--force``.

    The name of the new export is known only once the candidates are ranked; an earlier export of
    the same rank is refused whatever its family and encoder, so that a long advice does not end in
    a refusal (the guide: output folders are checked before any work).
    """
    check_output_dir("--out", folder)
    if overwrite or not os.path.isdir(folder):
        return
    prefix = f"rank{rank}_"
    with path_errors("--out", "read"):
        earlier = sorted(e for e in os.listdir(folder) if e.startswith(prefix))
    if earlier:
        raise UsageError(
            f"--out: {folder!r} already holds {earlier[0]!r}, an export of rank {rank}: pass --force to "
            "replace it, or choose another folder or --rank"
        )


def _cmd_advise(args: argparse.Namespace) -> int:
    scheduler, cluster_workers = scheduler_from_args(args)
    model = _stragglers_from_args(args)
    links = parse_links(args.links)
    objective = tuple(args.objective.split(","))
    bad = [c for c in objective if c not in OBJECTIVES]
    if bad:
        raise UsageError(f"--objective: unknown criterion {bad[0]!r}; choose among {','.join(OBJECTIVES)}")
    if args.out is not None:
        _check_export_target(args.out, args.rank, args.overwrite)
    families = tuple(args.families.split(",")) if args.families else None
    from ...advisor import advise

    adv = advise(
        args.workers,
        args.load,
        args.m,
        model,
        relax_load=args.relax_load,
        relax_comm=args.relax_comm,
        max_load=args.max_load,
        links=links,
        objective=objective,
        families=families,
        seed=args.seed,
        samples=args.samples,
        progress=show_progress(args),
        scheduler=scheduler,
        sweep_workers=cluster_workers,
    )
    exported = _export(adv, args) if args.out is not None else None
    _load_note(adv, args, model)  # on stderr: --json's stdout stays one JSON object
    if args.json:
        payload = json.loads(adv.to_json())
        payload["exported"] = str(exported) if exported is not None else None
        print(json.dumps(payload, sort_keys=True))
        return EXIT_OK if adv.rows else _no_candidate(adv)
    _print_advice(adv, args, model.describe(), objective, links is not None)
    if exported is not None:
        print(f"exported rank {args.rank} to {exported}")
    return EXIT_OK if adv.rows else _no_candidate(adv)


def _export(adv, args: argparse.Namespace) -> Path:
    """``--out``: export the candidate of rank ``--rank`` into its folder; returns the folder."""
    name = None
    if args.rank <= len(adv.rows):  # the folder Advice.export would name, given explicitly and checked
        row = adv.rows[args.rank - 1]
        name = f"rank{args.rank}_{row['family']}_{row['encoder']}"
        output_path("--out", args.out, name)
    with path_errors("--out"):
        return adv.export(args.out, args.rank, name=name, overwrite=args.overwrite)


def _table_rows(adv, top: int, with_time: bool) -> list[list[str]]:
    """The printed table's cells of the first ``top`` rows (the time column only ``with_time``)."""
    from ...advisor.advice import interval_text
    from ...coding.evaluate import is_exact_method

    tol = adv.exact_tol

    def error_cell(r) -> str:
        # an exact code's error is round-off (1e-31 and the like): printing it would suggest an
        # order among codes that tie on error and rank on the next criteria; a Monte Carlo estimate
        # at round-off only says that no sampled pattern lost anything (its interval says how much could)
        err = r["error"]
        if err != err:
            return "-"
        if err > tol:
            return fmt(err)
        return "exact" if is_exact_method(str(r["error_method"])) else "~0"

    def rank_cell(r) -> str:
        return f"={r['tie']}" if r.get("tie") else str(r["rank"])

    return [
        [
            rank_cell(r),
            # candidates with the same error pattern by pattern (theory §49.5) are one row
            r["name"] + (f" (+{len(r['equivalents'].split('; '))} equivalent)" if r.get("equivalents") else ""),
            error_cell(r),
            interval_text(r),  # the 95% interval; "exact" rows have none (theory §57)
            fmt(r["communication"]),
            f"{r['data_fraction']:.1%}",
            f"{r['load']}/{r['N']}",
            *([fmt(r["time"]) if r["time"] == r["time"] else "-"] if with_time else []),
            "yes" if r["pareto"] else "no",
        ]
        for r in adv.rows[:top]
    ]


def _print_advice(adv, args: argparse.Namespace, model: str, objective: tuple[str, ...], with_time: bool) -> None:
    """The text answer: the question, the ranked table, its legend and notes (``model``: the model described)."""
    from ...coding.evaluate import is_exact_method

    tol = adv.exact_tol
    rows = _table_rows(adv, args.top, with_time)  # the time column only when links give the times
    shown = min(args.top, len(adv.rows))
    cap = (
        f"load = {args.load} parts per worker (relaxed: no data cap)"
        if args.relax_load and isinstance(args.load, int)
        else f"load <= {adv.question['data_cap']:.1%} of the data per worker"
    )
    comm = (
        f"m = {args.m} (relaxed: m = 1 codes too)"
        if args.relax_comm and args.m > 1
        else f"m = {args.m} (at most 1/{args.m} of a gradient per worker)"
    )
    print(
        f"{len(adv.rows)} candidates for n = {args.workers}, {cap}, {comm}, {model}; "
        f"ranked by {' then '.join(objective)}"
        + (f"; the top {shown} shown (--top, --json for all)" if shown < len(adv.rows) else "")
    )
    print(
        table(
            [
                "rank",
                "candidate",
                "error",
                "interval",
                "comm",
                "data",
                "load",
                *(["time"] if with_time else []),
                "Pareto",
            ],
            rows,
            wrap={"candidate": 52},
            right=["rank", "error", "comm", "data", "load", "time"],
        )
    )
    for line in COLUMN_LEGEND:
        if with_time or not line.startswith("time"):
            print(line)
    if any(r["error"] <= tol for r in adv.rows[: args.top]):
        print(
            f"exact: error at round-off (<= {tol:g}; --json gives the value); exact codes tie on error "
            "and rank on the next criteria, then by name"
        )
    if any(r["error"] <= tol and not is_exact_method(str(r["error_method"])) for r in adv.rows[: args.top]):
        print(
            "~0: no sampled pattern lost anything; the interval's upper end is what the sample cannot exclude "
            "(a one-sided limit, theory §57.4)"
        )
    bound = adv.question.get("load_bound")
    if bound:  # heterogeneous independent workers: the certified bound of every design of this load (§63.7)
        print(bound.get("statement") or f"no certified bound of the designs of this load: {bound['skipped']}")
    _data_hint(adv.rows, objective)
    print(f"{len(adv.dropped_items)} dropped (--json lists every reason)")


def _load_note(adv, args: argparse.Namespace, model) -> None:
    """One ``gcsim: note:`` line on stderr when the top candidate puts more parts on a worker than ``--load``.

    Only a non-symmetric code can (its loads average ``--load``); the note names ``--max-load``.
    """
    from ...advisor import Question

    if not adv.rows or args.max_load is not None:
        return
    top = adv.rows[0]
    allowed = Question(args.workers, args.load, args.m, model, relax_load=args.relax_load).parts_per_worker(top["N"])
    if top["load"] > allowed:
        print(
            f"gcsim: note: the top candidate puts {top['load']} of its {top['N']} parts on one worker, over the "
            f"load {allowed}: --load is the average load of its non-symmetric loads; --max-load {allowed} "
            "caps every worker",
            file=sys.stderr,
        )


def _no_candidate(adv) -> int:
    """No candidate fits: say so on stderr with the commonest reasons, and exit 1 (an answer-less question)."""
    counts = Counter(d.reason for d in adv.dropped_items)
    common = "; ".join(f"{n} x {reason[:140]}" for reason, n in counts.most_common(3))
    print(
        f"gcsim: error: no candidate fits the question: all {len(adv.dropped_items)} were dropped"
        + (f" (the commonest reasons: {common})" if common else ""),
        file=sys.stderr,
    )
    return EXIT_FAILURE


#: What each column of the printed table means (printed under it; the advisor guide has the same list)
COLUMN_LEGEND = (
    "rank: 1 = the best by the objective; =k: tied with rank k (their error intervals overlap)",
    "candidate: assignment / encoder (m=1, with --relax-comm: a classic m = 1 code, sending a full gradient)",
    "error: expected optimal-decoding error err/(mN), the fraction of the gradient lost (exact: round-off)",
    "interval: the 95% interval of the expected error (never below the rank bound); exact: computed exactly",
    "comm: numbers each worker sends, as a fraction of a gradient (1/m)",
    "data: the largest share of the data a worker holds",
    "load: the most parts one worker holds, of N (weighted cyclic: --load is their average, --max-load caps them)",
    "time: expected seconds per iteration with --links (delay + compute + latency + bytes/bandwidth)",
    "Pareto: yes if no other candidate is at least as good in every column and better in one",
)


def _data_hint(rows, objective) -> None:
    """Say so when the best candidate holds far more data per worker than the leanest one.

    An integer load is parts per worker, and families differ in their number of parts: a code
    with few parts gives each worker a large share of the data and a small error.  Not for a
    non-symmetric top row: ``--load`` is its average, and :func:`_load_note` names ``--max-load``.
    """
    from ...advisor.candidates import SYMMETRIC_FAMILIES

    if not rows or "data" in objective or rows[0]["family"] not in SYMMETRIC_FAMILIES:
        return
    top, least = rows[0]["data_fraction"], min(r["data_fraction"] for r in rows)
    if top >= 2 * least:
        print(
            f"note: rank 1 holds {top:.0%} of the data per worker, the leanest candidate {least:.0%}; "
            f"--objective data,error ranks by data first, --load {least:.3g} caps the data fraction"
        )


def register(sub, add) -> None:
    p = add(
        "advise",
        _cmd_advise,
        "which code for n workers, this load, m and these stragglers: a ranked table of every candidate",
        "examples:\n  gcsim advise --workers 91 --load 10 --m 2 --stragglers bernoulli:0.1\n"
        "  gcsim advise --workers 54 --load 5 --m 2 --stragglers fixed:10 --json --out advice\n"
        "  gcsim advise --workers 57 --load 8/57 --m 2 --stragglers bernoulli:0.05   # a load fraction\n"
        "  gcsim advise --workers 91 --load 10 --m 2 --stragglers fixed:5 "
        "--links bandwidth=1e9,latency=1e-4,gradient-bytes=4e6 --objective time\n"
        "  gcsim advise --workers 13 --load 4 --m 2 --delays shifted-exponential:shift=0.05,rate=20 "
        "--rule first:s=2 --links bandwidth=1.25e9,latency=2e-4,gradient-bytes=4e7 --objective time,error",
    )
    p.add_argument("--workers", "-n", type=int_arg(2), required=True, help="number of workers n")
    p.add_argument(
        "--load",
        type=_load,
        required=True,
        help="the most data a worker may hold: L (int) = L/n of the data, or a fraction in (0, 1): 0.14 or A/B (8/57)",
    )
    p.add_argument(
        "--relax-load",
        action="store_true",
        help="an int --load is the parts per worker in every family, whatever its number of parts (no data cap)",
    )
    p.add_argument(
        "--max-load",
        type=int_arg(1),
        default=None,
        help="a cap on every worker's parts for the non-symmetric codes (weighted cyclic: --load is their average "
        "load; an integer >= --load; default: no cap beyond N)",
    )
    p.add_argument(
        "--m",
        type=int_arg(1),
        default=1,
        help="communication reduction m: a cap, every worker sends at most 1/m of a gradient",
    )
    p.add_argument(
        "--relax-comm",
        action="store_true",
        help="m = 1 codes (a full gradient per worker) are candidates too, beside those at --m (no communication cap)",
    )
    p.add_argument("--stragglers", type=straggler_arg, help=_STRAGGLER_HELP + " (or --delays with --rule)")
    p.add_argument("--delays", help="delay model instead of --stragglers: " + DELAY_HELP)
    p.add_argument("--rule", help="arrival rule with --delays: " + RULE_HELP)
    p.add_argument("--links", help="bandwidth=B/s,latency=s,gradient-bytes=B[,compute-time=s]")
    p.add_argument(
        "--objective", default="error", help=f"objective: criteria, comma-separated, among {','.join(OBJECTIVES)}"
    )
    p.add_argument("--families", help="restrict to these families, comma-separated")
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of constructions, encoders and draws")
    p.add_argument("--samples", type=int_arg(100), default=2000, help="Monte Carlo draws per candidate")
    p.add_argument("--top", type=int_arg(1), default=15, help="rows printed (--json prints all)")
    p.add_argument("--out", help="output folder: the chosen code is exported into it (gcsim load FOLDER/NAME reads it)")
    deprecate(p, "--export", "--out", note="--out is the output folder of every command")
    p.add_argument("--rank", type=int_arg(1), default=1, help="rank of the candidate --out exports (1 = best)")
    p.add_argument("--force", dest="overwrite", action="store_true", help="replace an earlier export of the same name")
    add_scheduler_flags(p, "the candidates' evaluations", old_flag="--cluster-workers")
    p.set_defaults(
        flags={
            "workers": "--workers",
            "load": "--load",
            "max_load": "--max-load",
            "m": "--m",
            "stragglers": "--stragglers",
            "links": "--links",
            "objective": "--objective",
            "families": "--families",
            "samples": "--samples",
            "rank": "--rank",
            "folder": "--out",
            "overwrite": "--force",
            "scheduler": "--scheduler",
            "sweep_workers": "--processes",
        }
    )
