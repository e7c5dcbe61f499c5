"""Collectives side by side: measured time and bytes against the alpha-beta prediction (docs/guides/collectives.md).

:func:`run_side_by_side` launches ``N`` gloo ranks and runs every registered collective
(:mod:`gcsim.executor.allreduce`) on seeded vectors, with the straggler rank starting ``delay`` seconds
after the others.  Every run starts at one instant on every rank: rank 0 picks a start time on the
shared monotonic clock (the ranks are processes of one machine) and broadcasts it, and each rank
sleeps until then (the straggler ``delay`` longer); the run's time is the last rank's finish minus that
start.  Each rank counts the bytes it sends and checks its output against the exact sum with the
round-off bound of theory §56.6.

:func:`collectives_table` runs it over emulated links (:class:`gcsim.executor.netem.NetemTopology`,
root only; skipped with the reason otherwise) and puts the measured time and bytes beside the
prediction of :meth:`gcsim.executor.allreduce.CollectiveCost.time`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._stats import median_interval, t_interval
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .allreduce import collective_names, get_collective, predicted_time
from .collectives import ByteCounter
from .launcher import launch
from .netem import TCP_FRAMING, NetemTopology, delay_seconds, netem_available, parse_rate, tbf_burst

__all__ = [
    "side_by_side_job",
    "run_side_by_side",
    "collectives_table",
    "summarize",
    "predict",
    "fit_overhead",
    "resummarize",
    "LINK_BOUND_SHARE",
    "BUCKET_MODELS",
]


def _vectors(seed: int, N: int, d: int, dtype: str) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((N, d)).astype(dtype)


def side_by_side_job(rank: int, world_size: int, spec: dict) -> dict:
    """Rank body of :func:`run_side_by_side` (module level, for the launcher)."""
    require("torch", "torch", "gcsim.executor.collectives_bench")
    import torch
    import torch.distributed as dist

    N, d = world_size, int(spec["d"])
    g = _vectors(int(spec["seed"]), N, d, spec["dtype"])
    g64 = g.astype(np.float64)
    exact = g64.sum(axis=0)
    mine = torch.as_tensor(g[rank])
    s = int(spec["straggler"])
    runs = []
    for name, options in spec["collectives"]:
        col = get_collective(name)
        bound = col.bound(g64, g.dtype.itemsize, **options)
        for delay in spec["delays"]:
            seconds, late_starts, sent, msgs, worst = [], 0, None, None, -math.inf
            for rep in range(int(spec["warmup"]) + int(spec["repeats"])):
                dist.barrier()
                start = torch.tensor([time.monotonic() + float(spec["margin"])], dtype=torch.float64)
                dist.broadcast(start, 0)  # one start instant on the machine's shared monotonic clock
                t0 = float(start[0])
                wake = t0 + (float(delay) if rank == s else 0.0)
                late_starts += time.monotonic() > t0
                time.sleep(max(0.0, wake - time.monotonic()))
                counter = ByteCounter()
                out = col.run(mine, counter=counter, straggler=s, **options)
                t1 = time.monotonic()
                if rep >= int(spec["warmup"]):
                    seconds.append(t1 - t0)
                    sent, msgs = counter.sent, counter.packets
                    err = np.abs(out.numpy().astype(np.float64) - exact)
                    worst = max(worst, float(np.max(err / np.maximum(bound, np.finfo(float).tiny))))
            runs.append(
                {
                    "collective": name,
                    "options": dict(options),
                    "delay": float(delay),
                    "finish_seconds": seconds,
                    "bytes_sent": sent,
                    "messages_sent": msgs,
                    "late_starts": late_starts,
                    "error_over_bound": worst,
                }
            )
    return {"rank": rank, "runs": runs}


def _check_options(collectives: Sequence[str] | None, options: dict | None) -> tuple[list[str], dict]:
    """``(names, options)``: the collectives run (default all) and their options, every name registered
    and every option one its collective takes."""
    names = list(collective_names() if collectives is None else collectives)
    opts = dict(options or {})
    for name in names:
        get_collective(name)
    for name, kw in opts.items():
        if name not in names:
            raise InvalidArgumentError("options", f"names {name!r}, which is not among the collectives run {names}")
        unknown = sorted(set(kw) - set(get_collective(name).options))
        if unknown:
            raise InvalidArgumentError("options", f"{name!r} takes {list(get_collective(name).options)}, not {unknown}")
    return names, opts


def run_side_by_side(
    N: int,
    d: int,
    *,
    collectives: Sequence[str] | None = None,
    options: dict | None = None,
    delays: Sequence[float] = (0.0,),
    straggler: int | None = None,
    repeats: int = 1,
    warmup: int = 0,
    seed: int = 0,
    dtype: str = "float32",
    margin: float = 0.05,
    timeout: float = 120.0,
    **launch_kw: Any,
) -> list[dict]:
    """Run the registered collectives on ``N`` gloo ranks; one row per collective and straggler delay.

    Parameters
    ----------
    N, d : int
        Ranks (>= 2) and scalars per vector.
    collectives : list of str, optional
        Registered names (default: all, :func:`gcsim.executor.allreduce.collective_names`).
    options : dict name -> dict, optional
        Keyword options of a collective (``{"straggler-aware": {"pieces": 4}}``).
    delays : list of float
        Seconds the straggler starts after the others; each collective runs once per delay.
    straggler : int, optional
        The late rank (default ``N − 1``).
    repeats, warmup : int
        Timed and untimed runs per row.
    seed : int
        Seed of the vectors (rank ``i`` holds row ``i`` of a standard normal ``N x d`` draw).
    dtype : {"float32", "float64"}
    margin : float
        Seconds between rank 0 picking the start instant and the start (covers the broadcast).
    timeout : float
        Seconds the whole launch may take.
    **launch_kw
        Passed to :func:`gcsim.executor.launcher.launch` (``netns``, ``init_method``, ``rank_env``).

    Returns
    -------
    list of dict
        Per row: ``collective``, ``delay``, ``seconds`` (per repeat: the last rank's finish after the
        start), ``bytes_sent`` (per rank), ``predicted_bytes`` (per rank, the registry's cost),
        ``rounds``, ``late_starts`` (runs where a rank got the start instant after it had passed),
        ``error_over_bound`` (the largest ratio of an output entry's error to the collective's round-off
        bound, :meth:`~gcsim.executor.allreduce.Collective.bound`, over ranks and repeats: at most 1).
    """
    N = check_int("N", N, minimum=2)
    d = check_int("d", d, minimum=1)
    check_entries("d", (N, d), "the seeded vectors each rank draws (N x d)")
    if dtype not in ("float32", "float64"):
        raise InvalidArgumentError("dtype", f"must be 'float32' or 'float64', got {dtype!r}")
    names, opts = _check_options(collectives, options)
    s = N - 1 if straggler is None else check_int("straggler", straggler, minimum=0, maximum=N - 1)
    delays = [check_real("delays", x, minimum=0.0) for x in delays]
    if not delays:
        raise InvalidArgumentError("delays", "must list at least one delay (0.0: no straggler)")
    runs: list[tuple[str, dict]] = [(name, dict(opts.get(name, {}))) for name in names]
    spec = {
        "d": d,
        "seed": check_int("seed", seed, minimum=0),
        "dtype": dtype,
        "straggler": s,
        "collectives": runs,
        "delays": delays,
        "repeats": check_int("repeats", repeats, minimum=1),
        "warmup": check_int("warmup", warmup, minimum=0),
        "margin": check_real("margin", margin, minimum=0.0),
    }
    res = launch(side_by_side_job, N, (spec,), timeout=timeout, **launch_kw).raise_on_failure()
    item = np.dtype(dtype).itemsize
    rows = []
    for k, (name, o) in enumerate(runs):
        for j, delay in enumerate(delays):
            per = [r["runs"][k * len(delays) + j] for r in res.results]
            cost = get_collective(name).cost(N, d, item, straggler=s, **o)
            rows.append(
                {
                    "collective": name,
                    "options": o,
                    "N": N,
                    "d": d,
                    "itemsize": item,
                    "delay": delay,
                    "straggler": s,
                    "seconds": np.max([p["finish_seconds"] for p in per], axis=0).tolist(),
                    "bytes_sent": [p["bytes_sent"] for p in per],
                    "predicted_bytes": list(cost.bytes_sent),
                    "messages_sent": [p["messages_sent"] for p in per],
                    "rounds": cost.rounds,
                    "late_starts": max(p["late_starts"] for p in per),
                    "error_over_bound": max(p["error_over_bound"] for p in per),
                }
            )
    return rows


#: A row is *link-bound* when the bandwidth term is at least this share of its predicted time after the
#: straggler's delay (theory §56.8): ``(T(alpha, beta) − T(alpha, ∞)) >= LINK_BOUND_SHARE · (T(alpha, beta) − delay)``.
LINK_BOUND_SHARE = 0.5


def predict(
    row: dict,
    alpha: float,
    beta: float,
    burst: float = 0,
    framing: tuple[int, int] | None = None,
    rendezvous: bool = False,
) -> tuple[float, float, float]:
    """``(schedule model, latency only, closed form)`` seconds of one row of :func:`run_side_by_side`.

    The schedule model is the link-level one of theory §56.7 (:func:`gcsim.executor.allreduce.predicted_time`,
    ports with token buckets of ``burst`` bytes, messages framed as ``framing``, §56.10, messages held
    for their receive with ``rendezvous``, §56.13); ``latency only`` the same with ``beta = ∞``; the
    closed form :meth:`CollectiveCost.time` (§56.1).
    """
    col = get_collective(row["collective"])
    args = (row["N"], row["d"], row["itemsize"])
    s, opts = row.get("straggler"), row["options"]
    closed = col.cost(*args, straggler=s, **opts).time(alpha, beta, row["delay"])
    delay = row["delay"]
    same = {"delay": delay, "straggler": s, "rendezvous": rendezvous, **opts}
    model = predicted_time(col, *args, alpha=alpha, beta=beta, burst=burst, framing=framing, **same)
    latency = predicted_time(col, *args, alpha=alpha, beta=math.inf, **same)
    return model, latency, closed


def _within(ratio: float) -> bool:
    """Whether a measured/predicted ``ratio`` is within 15 % of 1 (the table's criterion, theory §56.8)."""
    return bool(abs(ratio - 1) <= 0.15)


def _after_ratio(median: float, predicted: float, delay: float) -> float:
    """(median − delay) / (predicted − delay): the comparison of the time after the straggler's arrival."""
    return (median - delay) / (predicted - delay) if predicted > delay else math.nan


def summarize(
    rows: list[dict],
    *,
    alpha: float,
    beta: float,
    burst: float = 0,
    level: float = 0.95,
    overhead: float | None = None,
    framing: tuple[int, int] | None = None,
    rendezvous: bool = False,
) -> list[dict]:
    """Add the predictions and robust statistics of the measured time to each row of :func:`run_side_by_side`.

    ``predicted_s``: the link-level schedule model (theory §56.7) at ``alpha``, ``beta`` (bytes/s), the
    links' token buckets of ``burst`` bytes, the messages' ``framing`` (theory §56.10) and the row's
    delay, messages held for their receive when ``rendezvous`` (gloo, §56.13); ``closed_form_s``: the closed form of
    §56.1; ``bandwidth_share``: the share of ``predicted_s − delay`` that the bandwidth term makes
    (``predicted_s`` less the model at ``beta = ∞``); ``link_bound``: that share >=
    :data:`LINK_BOUND_SHARE` (§56.8).  ``median_s`` with ``median_ci``, the order-statistic interval of
    the median (:func:`gcsim._stats.median_interval`, its exact ``median_ci_coverage``), and ``mean_s``,
    ``ci`` (t interval of the mean) over the repeats; ``ratio`` = median / predicted and
    ``within_15pct`` = ``|ratio − 1| <= 0.15``; ``after_ratio`` = (median − delay) / (predicted − delay),
    the same comparison for the time after the straggler's arrival, which a delay in both terms
    hides (NaN when the model has nothing after the delay), and ``after_within_15pct`` (§56.8).  With
    ``overhead`` (seconds per message, fitted on a separate calibration run, :func:`fit_overhead`):
    ``calibrated_s``, the schedule model at ``alpha + overhead``, ``calibrated_within_15pct`` and
    ``calibrated_after_within_15pct``.  ``bytes_match``: measured bytes equal the
    predicted ones on every rank.

    Examples
    --------
    >>> row = {"collective": "ring", "options": {}, "N": 2, "d": 4, "itemsize": 4, "delay": 0.0,
    ...        "seconds": [0.011, 0.013, 0.012, 0.012, 0.014, 0.010, 0.012],
    ...        "bytes_sent": [16, 16], "predicted_bytes": [16, 16]}
    >>> out = summarize([row], alpha=0.005, beta=8000.0)[0]
    >>> round(out["predicted_s"], 4), out["median_ci"], out["bytes_match"], out["within_15pct"], out["link_bound"]
    (0.012, [0.01, 0.014], True, True, False)
    >>> late = summarize([{**row, "delay": 0.5, "seconds": [s + 0.505 for s in row["seconds"]]}], alpha=0.005,
    ...                  beta=8000.0)[0]
    >>> round(late["ratio"], 3), round(late["after_ratio"], 3), late["within_15pct"], late["after_within_15pct"]
    (1.01, 1.417, True, False)
    """
    out = []
    for r in rows:
        pred, latency, closed = predict(r, alpha, beta, burst, framing, rendezvous)
        y = np.asarray(r["seconds"], dtype=float)
        mean, median = float(y.mean()), float(np.median(y))
        se = float(y.std(ddof=1) / math.sqrt(len(y))) if len(y) > 1 else math.inf
        lo, hi, cover = median_interval(y, level) if len(y) >= 6 else (math.nan, math.nan, math.nan)
        ratio = median / pred if pred > 0 else math.inf
        after = _after_ratio(median, pred, r["delay"])
        share = (pred - latency) / (pred - r["delay"]) if pred > r["delay"] else 0.0
        row = {
            **r,
            "predicted_s": pred,
            "burst_bytes": burst,
            "framing": list(framing) if framing else None,
            "rendezvous": rendezvous,
            "closed_form_s": closed,
            "bandwidth_share": share,
            "link_bound": share >= LINK_BOUND_SHARE,
            "median_s": median,
            "median_ci": [lo, hi],
            "median_ci_coverage": cover,
            "mean_s": mean,
            "ci": list(t_interval(mean, se, len(y) - 1, level)) if len(y) > 1 else [mean, mean],
            "ratio": ratio,
            "within_15pct": _within(ratio),
            "after_ratio": after,
            "after_within_15pct": _within(after),
            "bytes_match": r["bytes_sent"] == r["predicted_bytes"],
        }
        if overhead is not None:
            cal = predict(r, alpha + overhead, beta, burst, framing, rendezvous)[0]
            row.update(overhead_s=overhead, calibrated_s=cal, calibrated_within_15pct=_within(median / cal))
            row["calibrated_after_within_15pct"] = _within(_after_ratio(median, cal, r["delay"]))
        out.append(row)
    return out


def fit_overhead(result: dict) -> dict[str, float]:
    """Per link, the software cost per message that makes the schedule model meet a calibration run.

    From the ``ring`` rows without a straggler at the smallest size of a :func:`collectives_table`
    result: ``(median − predicted) / (2(N − 1))``, the ring having ``2(N − 1)`` deliveries on its
    critical path (so the ring's calibrated prediction equals that median); at least 0.  Keys are
    ``"RATE:DELAY"``.  Fit on one run and judge another (docs/results/collectives.md).

    Examples
    --------
    >>> rows = [{"collective": "ring", "delay": 0.0, "d": 16, "N": 4, "median_s": 0.014,
    ...          "predicted_s": 0.008, "link": "100mbit", "link_delay": "1ms"}]
    >>> fit_overhead({"rows": rows})
    {'100mbit:1ms': 0.001}
    """
    fits: dict[str, float] = {}
    rings = [r for r in result["rows"] if r["collective"] == "ring" and r["delay"] == 0]
    for r in rings:
        key = f"{r['link']}:{r['link_delay'] or ''}"
        if r["d"] == min(x["d"] for x in rings if f"{x['link']}:{x['link_delay'] or ''}" == key):
            fits[key] = round(max(0.0, (r["median_s"] - r["predicted_s"]) / (2 * (r["N"] - 1))), 9)
    return fits


def collectives_table(
    N: int,
    sizes: Sequence[int],
    *,
    links: Sequence[tuple[str, str | None]] = (("100mbit", "2ms"),),
    delays: Sequence[float] = (0.0, 0.5),
    repeats: int = 5,
    warmup: int = 1,
    seed: int = 0,
    overhead: float = 0.0,
    port: int = 29631,
    timeout: float = 600.0,
    collectives: Sequence[str] | None = None,
    calibration: dict[str, float] | None = None,
    bucket: str = "wire",
    congestion: str | None = None,
    sharing: str = "fifo",
    options: dict | None = None,
    rendezvous: bool = True,
) -> dict:
    """The side-by-side table over emulated links: each link ``(rate, one-way delay)`` in a
    :class:`~gcsim.executor.netem.NetemTopology`, every collective, vector length (``sizes``, scalars)
    and straggler delay, one launch per link and size.

    The prediction takes ``beta`` = the link rate in bytes/s, ``alpha`` = the one-way delay plus
    ``overhead`` (seconds per message of software latency, 0 by default: the link's own numbers only)
    and the port model ``bucket`` (:data:`BUCKET_MODELS`; default ``"wire"``, the judged one of theory
    §56.10: the links' token buckets, :func:`gcsim.executor.netem.tbf_burst`, and TCP's segment headers);
    ``rendezvous`` (default True: the ranks run gloo, whose sends wait for the receive to be posted,
    §56.13) holds each message in the model until its receive's notice has crossed the link.
    Where emulated links are not available (root, ``ip``/``tc``; the delay also needs ``netem`` or the
    NFQUEUE delayer) nothing runs and ``skipped`` says why.  ``calibration`` (``"RATE:DELAY"`` -> seconds per
    message, :func:`fit_overhead` of another run) adds the calibrated prediction to that link's rows.
    ``congestion`` (TCP congestion control of the rank namespaces; None: the host's) and ``sharing``
    go to :class:`~gcsim.executor.netem.NetemTopology`; ``options`` (collective name -> keyword options,
    as for :func:`run_side_by_side`) to every launch.  Each row records the links' settings as
    they were (``link_settings``: rate, burst, delay and how, the effective congestion control,
    theory §56.11).

    Returns
    -------
    dict
        ``{"rows": [...], "skipped": None or reason, "N", "sizes", "links", "delays"}``; rows as
        :func:`summarize` with ``link`` and ``link_delay`` added.
    """
    N = check_int("N", N, minimum=2)
    overhead = check_real("overhead", overhead, minimum=0.0)
    bucket = _check_bucket(bucket)
    rendezvous = check_bool("rendezvous", rendezvous)
    sizes = [check_int("sizes", d, minimum=1) for d in sizes]
    meta: dict[str, Any] = {"N": N, "sizes": sizes, "links": [list(x) for x in links], "delays": list(delays)}
    meta.update(congestion=congestion, sharing=sharing)
    _check_options(collectives, options)
    NetemTopology(N, rate=None, congestion=congestion, sharing=sharing)  # refuses bad settings before anything runs
    ok, why = netem_available()
    if not ok:
        return {**meta, "rows": [], "skipped": why}
    rows: list[dict] = []
    for rate, link_delay in links:
        alpha, beta, burst, framing = _link_params(rate, link_delay, overhead, bucket)
        for d in sizes:
            with NetemTopology(N, rate=rate, delay=link_delay, congestion=congestion, sharing=sharing) as topo:
                settings = topo.link_settings()
                raw = run_side_by_side(
                    N,
                    d,
                    collectives=collectives,
                    options=options,
                    delays=delays,
                    repeats=repeats,
                    warmup=warmup,
                    seed=seed,
                    margin=0.2 + 20 * alpha,
                    timeout=timeout,
                    **topo.launch_kwargs(port),
                )
            sigma = (calibration or {}).get(f"{rate}:{link_delay or ''}")
            summary = summarize(
                raw, alpha=alpha, beta=beta, burst=burst, overhead=sigma, framing=framing, rendezvous=rendezvous
            )
            rows += [{**r, "link": rate, "link_delay": link_delay, "link_settings": settings} for r in summary]
    return {
        **meta,
        "rows": rows,
        "skipped": None,
        "calibration": dict(calibration or {}),
        "bucket": bucket,
        "rendezvous": rendezvous,
    }


#: ``bucket`` values (the port model): ``"none"``, ports limited to ``beta`` counting payload bytes;
#: ``"frame"``, the same counting TCP's per-segment headers (:data:`gcsim.executor.netem.TCP_FRAMING`);
#: ``"tbf"``, ports as the emulated links' token buckets (theory §56.7, assumption 6); ``"wire"``, the
#: buckets and the headers, the model judged
#: since theory §56.10
BUCKET_MODELS = ("none", "frame", "tbf", "wire")


def _link_params(
    rate: str, link_delay: str | None, overhead: float, bucket: str
) -> tuple[float, float, int, tuple[int, int] | None]:
    """``(alpha, beta, burst, framing)`` of an emulated link: one-way delay + overhead, bytes/s, token
    bucket bytes, ``(mss, header)`` bytes."""
    alpha = (delay_seconds(link_delay) if link_delay else 0.0) + overhead
    burst = tbf_burst(rate) if bucket in ("tbf", "wire") else 0
    return alpha, parse_rate(rate) / 8, burst, (TCP_FRAMING if bucket in ("frame", "wire") else None)


def _check_bucket(bucket: Any) -> str:
    if not isinstance(bucket, str) or bucket not in BUCKET_MODELS:
        raise InvalidArgumentError("bucket", f"must be one of {BUCKET_MODELS}, got {bucket!r}")
    return bucket


def resummarize(
    result: dict,
    *,
    overhead: float = 0.0,
    calibration: dict[str, float] | None = None,
    bucket: str = "wire",
    rendezvous: bool | None = None,
) -> dict:
    """A :func:`collectives_table` result with every row's predictions and statistics computed again.

    The measured fields (``seconds``, bytes, messages, round-off) are kept; everything :func:`summarize`
    adds is recomputed with the current model, ``overhead``, ``calibration``, ``bucket`` and
    ``rendezvous`` (as for :func:`collectives_table`; None: as the result records it, False for results
    recorded before the model had it, theory §56.13).  Nothing runs.

    Examples
    --------
    >>> row = {"collective": "ring", "options": {}, "N": 2, "d": 4, "itemsize": 4, "delay": 0.0,
    ...        "seconds": [0.011] * 7, "bytes_sent": [16, 16], "predicted_bytes": [16, 16],
    ...        "link": "1mbit", "link_delay": "5ms", "predicted_s": 1.0}
    >>> round(resummarize({"rows": [row]}, bucket="none")["rows"][0]["predicted_s"], 4)  # 2 (alpha + 8 B / 125 kB/s)
    0.0101
    >>> round(resummarize({"rows": [row]}, bucket="frame")["rows"][0]["predicted_s"], 6)  # 2 (alpha + 74 B / 125 kB/s)
    0.011184
    >>> round(resummarize({"rows": [row]})["rows"][0]["predicted_s"], 4)   # 8 B + 66 B of headers fit the bucket
    0.01
    """
    overhead = check_real("overhead", overhead, minimum=0.0)
    bucket = _check_bucket(bucket)
    held = check_bool("rendezvous", result.get("rendezvous", False) if rendezvous is None else rendezvous)
    rows = []
    for r in result["rows"]:
        alpha, beta, burst, framing = _link_params(r["link"], r["link_delay"], overhead, bucket)
        sigma = (calibration or {}).get(f"{r['link']}:{r['link_delay'] or ''}")
        (row,) = summarize([r], alpha=alpha, beta=beta, burst=burst, overhead=sigma, framing=framing, rendezvous=held)
        if sigma is None:
            for key in ("overhead_s", "calibrated_s", "calibrated_within_15pct", "calibrated_after_within_15pct"):
                row.pop(key, None)
        rows.append(row)
    return {**result, "rows": rows, "calibration": dict(calibration or {}), "bucket": bucket, "rendezvous": held}
