"""Experiment runners on torch.distributed: collectives, parameter-server GC (docs/guides/executor.md).

:func:`run_collectives`
    Launch + run the chosen collectives on seeded gradients and compare each with the
    exact sum and with ``dist.all_reduce`` (relative error), with byte counts and timings
    (algbw = S/t, busbw = algbw·2(N−1)/N, as nccl-tests report them).
:func:`run_parameter_server`
    Gradient coding with a parameter server (:mod:`gcsim.executor.parameter_server`) on
    ``n + 1`` ranks: who is used is decided on the simulated clock, so the same seed gives the
    same used set and the same numbers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool, check_int, check_real
from ..cerar.traffic import cerar_bytes, predicted_byte_ratio, ring_bytes
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .collectives import ByteCounter, as_design, cerar_all_reduce, library_all_reduce, ring_all_reduce
from .launcher import LaunchResult, LaunchTimeoutError, RankFailure, exception_line, launch
from .parameter_server import parameter_server_job, seeded_delays, simulated_schedule

__all__ = ["run_collectives", "collectives_job", "run_parameter_server"]


def _gradients(seed: int, N: int, d: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, d)).astype(dtype)


def collectives_job(rank: int, world_size: int, spec: dict) -> dict:
    """Rank body of :func:`run_collectives` (module level so that it can be launched)."""
    require("torch", "torch", "gcsim.executor.experiments.collectives_job")
    import torch
    import torch.distributed as dist

    N, d = world_size, int(spec["d"])
    g_all = _gradients(spec["seed"], N, d, spec["dtype"])
    dev = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    total = torch.as_tensor(g_all.astype(np.float64).sum(axis=0), device=dev)
    mine = torch.as_tensor(g_all[rank], device=dev)
    if spec.get("die_rank") == rank:
        os._exit(19)  # fault injection: this ring member crashes before the collectives
    barrier = dist.barrier if spec.get("barrier", True) else (lambda: None)
    ref = library_all_reduce(mine).to(torch.float64) if spec.get("compare_allreduce", True) else total
    out: dict = {"rank": rank, "algorithms": {}}
    designs = {key: as_design(v) for key, v in spec.get("designs", {}).items()}
    for algo in spec["algorithms"]:
        times = []
        counter = ByteCounter()
        result = None
        for rep in range(int(spec.get("repeats", 1)) + int(spec.get("warmup", 0))):
            cnt = ByteCounter()
            barrier()
            t0 = time.perf_counter()
            if algo == "allreduce":
                result = library_all_reduce(mine)
            elif algo == "ring":
                result = ring_all_reduce(mine, counter=cnt)
            else:
                result = cerar_all_reduce(mine, designs[algo], counter=cnt)
            barrier()  # time until every rank holds its result
            dt = time.perf_counter() - t0
            if rep >= int(spec.get("warmup", 0)):
                times.append(dt)
                counter = cnt
        assert result is not None  # repeats >= 1
        r64 = result.to(torch.float64)
        out["algorithms"][algo] = {
            "bytes_sent": None if algo == "allreduce" else counter.sent,
            "packets": None if algo == "allreduce" else counter.packets,
            "seconds": times,
            "rel_error_vs_sum": float(torch.linalg.norm(r64 - total) / torch.linalg.norm(total)),
            "rel_error_vs_allreduce": float(torch.linalg.norm(r64 - ref) / torch.linalg.norm(ref)),
            "sq_error_vs_sum": float(torch.sum((r64 - total) ** 2)),
        }
        if spec.get("return_outputs"):
            out["algorithms"][algo]["output"] = result.cpu().numpy().copy()
    return out


def run_collectives(
    N: int,
    d: int,
    *,
    designs: dict | None = None,
    algorithms: Sequence[str] | None = None,
    dtype: str = "float32",
    seed: int = 0,
    repeats: int = 1,
    warmup: int = 0,
    timeout: float = 120.0,
    return_outputs: bool = False,
    die_rank: int | None = None,
    **launch_kw: Any,
) -> dict:
    """Launch ``N`` gloo ranks and run all-reduce collectives on seeded gradients.

    Parameters
    ----------
    N, d : int
        Ranks and gradient length.
    designs : dict name -> CerarDesign or exported path
        CERAR designs to run (each with ``design.N == N``); their names are algorithm names.
    algorithms : list of str
        Subset of ``"allreduce"``, ``"ring"`` and the design names (default: all).
    dtype : {"float32", "float64"}
    repeats, warmup : int
        Timed repetitions and untimed warm-up runs of each algorithm.
    return_outputs : bool
        Include every rank's output array.
    die_rank : int, optional
        Fault injection: this rank's process exits before the collectives; the others
        fail with :class:`RingFailureError` and the launch raises :class:`RankFailure`.
    **launch_kw
        Passed to :func:`launch` (``netns``, ``rank_env``, ``init_method``, ...).

    Returns
    -------
    dict
        ``{"N", "d", "itemsize", "ranks": [per-rank dict], "summary": {algo: {...}}}`` where
        the summary has ``bytes_sent`` (list per rank), ``expected_bytes`` (formula),
        ``seconds`` (median over repeats of the slowest rank), ``algbw``/``busbw`` (bytes/s),
        ``max_rel_error`` vs the exact sum and ``max_rel_error_vs_allreduce``.
    """
    return_outputs = check_bool("return_outputs", return_outputs)
    N = check_int("N", N, minimum=2)
    d = check_int("d", d, minimum=1)
    # every rank draws all N seeded gradients: refuse here, before any process starts
    check_entries("d", (N, d), "the seeded gradients each rank draws (N x d)")
    if dtype not in ("float32", "float64"):
        raise InvalidArgumentError("dtype", f"must be 'float32' or 'float64', got {dtype!r}")
    designs = dict(designs or {})
    for name, des in list(designs.items()):
        des = as_design(des)
        if des.N != N:
            raise InvalidArgumentError("designs", f"{name!r} is for N = {des.N}, not {N}")
        designs[name] = {
            "N": des.N,
            "c": des.c,
            "encoders": des.encoders,
            "decoders": des.decoders,
            "method": des.method,
        }
    algos = list(algorithms) if algorithms is not None else ["allreduce", "ring", *designs]
    for a in algos:
        if a not in ("allreduce", "ring") and a not in designs:
            raise InvalidArgumentError("algorithms", f"unknown algorithm {a!r} (designs: {sorted(designs)})")
    spec = {
        "d": d,
        "seed": check_int("seed", seed, minimum=0),
        "dtype": dtype,
        "algorithms": algos,
        "designs": designs,
        "repeats": check_int("repeats", repeats, minimum=1),
        "warmup": check_int("warmup", warmup, minimum=0),
        "return_outputs": bool(return_outputs),
    }
    if die_rank is not None:
        spec.update(
            die_rank=check_int("die_rank", die_rank, minimum=0, maximum=N - 1), barrier=False, compare_allreduce=False
        )
    res = launch(collectives_job, N, (spec,), timeout=timeout, **launch_kw).raise_on_failure()
    item = np.dtype(dtype).itemsize
    S = d * item
    summary = {}
    for a in algos:
        per = [r["algorithms"][a] for r in res.results]
        secs = np.max(np.array([p["seconds"] for p in per]), axis=0)  # slowest rank per repeat
        t = float(np.median(secs))
        exp = (
            ring_bytes(N, d, item)
            if a == "ring"
            else None
            if a == "allreduce"
            else cerar_bytes(N, designs[a]["c"], d, item)
        )
        summary[a] = {
            "bytes_sent": [p["bytes_sent"] for p in per],
            "expected_bytes": exp,
            "seconds": t,
            "seconds_all": secs.tolist(),
            "algbw": S / t,
            "busbw": S / t * 2 * (N - 1) / N,
            "max_rel_error": max(p["rel_error_vs_sum"] for p in per),
            "max_rel_error_vs_allreduce": max(p["rel_error_vs_allreduce"] for p in per),
            "sq_errors": [p["sq_error_vs_sum"] for p in per],
        }
        if a in designs:
            summary[a]["c"] = designs[a]["c"]
            summary[a]["predicted_byte_ratio"] = predicted_byte_ratio(N, designs[a]["c"])
    return {
        "N": N,
        "d": d,
        "itemsize": item,
        "dtype": dtype,
        "ranks": res.results,
        "summary": summary,
        "launch_seconds": res.seconds,
    }


def _worker_state(res: LaunchResult, rank: int) -> str:
    """What became of one rank, in words, for an error message."""
    if rank in res.errors:
        return f"it raised {exception_line(res.errors[rank])}"
    if rank in res.stalled:
        return "it was still running (stalled) and was killed"
    if res.results[rank] is not None:
        return "it reported " + ("a failed send" if not res.results[rank].get("sent", True) else "a send")
    return f"it died (exit code {res.exitcodes[rank]})"


def run_parameter_server(
    scheme: Any,
    *,
    stragglers: int = 0,
    deadline: float | None = None,
    delays: Any = None,
    die: Sequence[int] = (),
    stall: Sequence[int] = (),
    decoder: str = "optimal",
    d: int = 16,
    rows: int = 4,
    seed: int = 0,
    delay_scale: float = 0.05,
    wait_limit: float = 20.0,
    drain: float = 2.0,
    timeout: float = 60.0,
    **launch_kw: Any,
) -> dict:
    """Gradient coding with a parameter server on ``n + 1`` gloo ranks: a **test fixture**.

    A seeded least-squares toy kept for the tests of the launcher's fault paths (dying and
    stalled ranks, ``may_die``, ``grace_after_rank0``, bounded point-to-point waits) and the
    reliability cases; no command runs it.  To run a gradient code, exported or built, with any
    straggler model on a real model, use :class:`gcsim.executor.coded_training.CodedTrainer`
    (``gcsim gc run``, ``gcsim train --code``).

    Who is used is decided on the **simulated clock** (:func:`simulated_schedule`): worker
    ``j``'s transmission arrives ``delays[j]`` seconds after a barrier that every rank
    passes, dead workers never arrive, and the PS decodes from the first ``n − s`` arrivals
    (or those by the deadline).  The workers really sleep their delays and really send;
    the PS really receives and decodes those transmissions.  But the decision does not
    depend on start-up skew or scheduling races, so the same seed gives the same used set
    and bitwise the same decoded gradient.

    Parameters
    ----------
    scheme : Scheme
        Encoder ``B`` ``(mN, n)``; worker ``j`` is rank ``j + 1``.
    stragglers : int
        ``s``: the PS decodes from the first ``n − s`` arrivals (ignored with ``deadline``).
        More dead workers than ``s`` is refused (the PS would wait for ever).
    deadline : float, optional
        Instead: decode from every transmission that arrives within ``deadline`` seconds
        (simulated) of the barrier.
    delays : array (n,), optional
        Per-worker delay in seconds before sending; default: seeded
        ``delay_scale · Exponential(1)`` (seed ``seed``, :func:`seeded_delays`).
    die : list of int
        Workers whose process exits (``os._exit(17)``) right after the barrier, without sending.
    stall : list of int
        Fault injection the schedule does *not* know about: workers that hang after the
        barrier (alive, never sending).  If the PS needs one, it times out after
        ``wait_limit`` and :class:`LaunchTimeoutError` names it.
    decoder : {"optimal", "fixed"}
        ``B_F⁺ T`` or the scheme's reference decoder restricted to ``F``.
    d, rows, seed : int
        Gradient length and rows per data part of the seeded least-squares problem.
    delay_scale : float
        Mean seeded delay (seconds).
    wait_limit : float
        How long past the latest scheduled arrival of a used worker the PS waits for the
        transmissions before it declares the missing ones failed (> 0).
    drain : float
        After deciding, the PS waits at most this long for late workers (clean exits).
    timeout : float
        Launcher timeout for the whole run.
    **launch_kw
        Passed to :func:`launch`.

    Returns
    -------
    dict
        The PS's report: ``used``, ``missing`` (not used), ``late`` (live, arriving after the
        decision), ``silent`` (dead), ``arrival_order`` and ``scheduled_arrival`` (simulated),
        ``decision_time`` (simulated), ``decoded``, ``gradient``, ``error`` (on the
        zero-padded length ``m·w``; ``error_truncated`` on the first ``d`` coordinates),
        ``predicted_error``, ``residual`` = ``‖B_F X − T‖_F²``; wall-clock measurements
        ``arrival_seconds``, ``decision_seconds``, ``seconds`` (these vary between runs);
        plus ``workers`` (each worker's report or None), ``exitcodes`` and ``delays``.

    Raises
    ------
    InvalidArgumentError
        Bad arguments (before any process starts), including more dead workers than ``s``.
    LaunchTimeoutError
        A used worker did not deliver within ``wait_limit`` (named), or the PS stalled.
    RankFailure
        The parameter server raised or died.
    """
    B = getattr(scheme, "B", None)
    if B is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    n = int(scheme.n)
    s = check_int("stragglers", stragglers, minimum=0, maximum=n)
    if deadline is not None:
        deadline = check_real("deadline", deadline, minimum=0.0)
    if decoder not in ("optimal", "fixed"):
        raise InvalidArgumentError("decoder", f"must be 'optimal' or 'fixed', got {decoder!r}")
    if decoder == "fixed" and scheme.decoder is None:
        raise InvalidArgumentError("decoder", f"scheme {scheme.method!r} has no reference decoder")
    die = sorted({check_int("die", j, minimum=0, maximum=n - 1) for j in die})
    stall = sorted({check_int("stall", j, minimum=0, maximum=n - 1) for j in stall})
    if set(stall) & set(die):
        raise InvalidArgumentError("stall", f"workers {sorted(set(stall) & set(die))} cannot both die and stall")
    seed = check_int("seed", seed, minimum=0)
    delay_scale = check_real("delay_scale", delay_scale, minimum=0.0)
    delays = _ps_delays(delays, n, seed, delay_scale)
    wait_limit = check_real("wait_limit", wait_limit, minimum=0.0, strict_min=True)
    drain = check_real("drain", drain, minimum=0.0)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    d = check_int("d", d, minimum=1)
    rows = check_int("rows", rows, minimum=1)
    # every rank draws the whole seeded least-squares problem: refuse here, before any process starts
    N_parts = int(np.asarray(scheme.assignment).shape[0])
    check_entries("d", (N_parts, rows, d), "the seeded least-squares data each rank draws (parts x rows x d)")
    plan = simulated_schedule(delays, die, need=n - s, deadline=deadline)
    spec = {
        "B": np.asarray(B),
        "assignment": np.asarray(scheme.assignment),
        "m": int(scheme.m),
        "d": d,
        "rows": rows,
        "seed": seed,
        "delays": delays.tolist(),
        "die": die,
        "stall": stall,
        "plan": plan,
        "decoder": decoder,
        "decoder_matrix": None if scheme.decoder is None else np.asarray(scheme.decoder),
        "wait_limit": wait_limit,
        "drain": drain,
        # the barrier names a rank that does not arrive, well before the launcher's deadline
        "barrier_timeout": 0.5 * timeout,
    }
    launch_kw.setdefault("grace_after_rank0", 1.0)
    launch_kw["may_die"] = sorted(set(launch_kw.get("may_die", ())) | {j + 1 for j in die})
    res = launch(parameter_server_job, n + 1, (spec,), timeout=timeout, **launch_kw)
    ps = _server_report(res, wait_limit)
    out = dict(ps)
    out.update(
        {
            "workers": res.results[1:],
            "exitcodes": res.exitcodes,
            "delays": delays.tolist(),
            "died": die,
            "stalled": stall,
            "killed": res.killed,
            "rank_errors": res.errors,
            "seconds": res.seconds,
            "m": int(scheme.m),
            "n": n,
            "num_parts": int(scheme.num_parts),
            "d": d,
            "stragglers": s,
            "deadline": deadline,
        }
    )
    return out


def _ps_delays(delays: Any, n: int, seed: int, delay_scale: float) -> np.ndarray:
    """The workers' delays (seconds): ``delays`` checked, or seeded ones (:func:`seeded_delays`)."""
    if delays is None:
        delays = seeded_delays(n, seed, delay_scale)
    else:
        try:
            delays = np.asarray(delays, dtype=float)
        except (TypeError, ValueError):
            raise InvalidArgumentError("delays", f"must be {n} finite non-negative seconds, got {delays!r}") from None
    if delays.shape != (n,) or not np.all(np.isfinite(delays)) or np.any(delays < 0):
        shown = delays.tolist() if delays.size <= 16 else f"an array of shape {delays.shape}"
        raise InvalidArgumentError("delays", f"must be {n} finite non-negative seconds, got {shown}")
    return delays


def _server_report(res: Any, wait_limit: float) -> dict:
    """The parameter server's report from a launch, or the error that says why there is none."""
    ps = res.results[0]
    if res.unstarted:  # the deadline passed while the processes were being started
        raise LaunchTimeoutError(res.failure_message(), result=res)
    if ps is None:
        if 0 in res.stalled:
            raise LaunchTimeoutError(
                f"the parameter server (rank 0) stalled: timed out, no report within {res.deadline_reason}; killed",
                result=res,
            )
        why = f"raised {exception_line(res.errors[0])}" if 0 in res.errors else f"died (exit code {res.exitcodes[0]})"
        raise RankFailure(f"the parameter server (rank 0) {why}", result=res)
    if ps.get("failure") == "undelivered":
        who = "; ".join(
            f"worker {j} (rank {j + 1}), scheduled to arrive at {ps['scheduled'][j]:g} s: {_worker_state(res, j + 1)}"
            for j in ps["undelivered"]
        )
        raise LaunchTimeoutError(
            f"parameter server timed out: no transmission within wait_limit = {wait_limit:g} s after the latest "
            f"scheduled arrival from {who}",
            result=res,
        )
    return ps
