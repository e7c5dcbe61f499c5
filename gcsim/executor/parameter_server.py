"""Parameter-server gradient coding on a simulated clock: the rank body and its schedule (docs/guides/executor.md).

A **test fixture** (with :func:`gcsim.executor.experiments.run_parameter_server`): it exercises
the launcher's fault paths on a seeded least-squares toy; ``gcsim gc run`` runs
:class:`gcsim.executor.coded_training.CodedTrainer` instead.

Rank 0 is the parameter server (PS), ranks 1..n the workers.  Worker ``j`` computes the partial
gradients of its parts of a seeded least-squares problem, encodes
``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]`` and sends it a seeded delay after a common barrier (or its
process dies).  The PS decides on that simulated clock (:func:`simulated_schedule`: the first
``n − s`` arrivals, or those by a deadline), so the same seed gives the same used set and the
same numbers; it receives and decodes the real transmissions (optimal or fixed decoder) and
reports who was missing, the measured error ``‖ĝ − ∇L‖²`` and the predicted ``‖𝒢(B_F X − T)‖²``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_int, check_real
from ..errors import InvalidArgumentError
from ..limits import check_entries

__all__ = ["simulated_schedule", "seeded_delays", "parameter_server_job"]


def _ls_problem(seed: int, N: int, p: int, rows: int):
    """Seeded least-squares data: part i has (X_i, y_i); loss Σ_i ½‖X_i θ − y_i‖², θ seeded."""
    rng = np.random.default_rng(seed)
    Xs = rng.standard_normal((N, rows, p))
    ys = rng.standard_normal((N, rows))
    theta = rng.standard_normal(p)
    return Xs, ys, theta


def _partial_gradients(Xs, ys, theta, parts) -> np.ndarray:
    """g_i = X_iᵀ (X_i θ − y_i) for the given parts (shape (len(parts), p))."""
    Xp = Xs[parts]
    resid = np.einsum("irp,p->ir", Xp, theta) - ys[parts]
    return np.einsum("irp,ir->ip", Xp, resid)


def simulated_schedule(
    delays: Any, die: Sequence[int] = (), *, need: int | None = None, deadline: float | None = None
) -> dict:
    """The parameter server's decision on the simulated clock: who is used, late and silent.

    Worker ``j`` starts when every rank has passed a common barrier and its transmission
    *arrives at simulated time* ``delays[j]`` (seconds after the barrier); a worker in
    ``die`` never arrives.  The PS decodes from

    * the first ``need = n − s`` arrivals (ties broken by the smaller worker index), or
    * with ``deadline``: every arrival at a simulated time ``<= deadline``.

    The decision is a function of ``(delays, die, need, deadline)`` alone -- not of which
    process happened to be scheduled first on a busy machine -- so the same seed gives the
    same used set (and the same decoded numbers).

    Parameters
    ----------
    delays : array (n,)
        Finite non-negative simulated arrival times.
    die : sequence of int
        Workers that never arrive.
    need : int, optional
        ``n − s``; required unless ``deadline`` is given.
    deadline : float, optional

    Returns
    -------
    dict
        ``order`` (live workers by simulated arrival), ``used`` (sorted), ``late`` (live,
        arriving after the decision), ``silent`` (the dead), ``decision_time`` (simulated:
        the ``need``-th arrival, or the deadline) and ``last_used_arrival``.

    Raises
    ------
    InvalidArgumentError
        ``need`` exceeds the number of live workers (the PS would wait for ever).

    Examples
    --------
    >>> simulated_schedule([0.3, 0.1, 0.2], die=[2], need=1)["used"]
    [1]
    >>> simulated_schedule([0.3, 0.1, 0.2], deadline=0.25)["used"]
    [1, 2]
    """
    delays = [float(x) for x in delays]
    n = len(delays)
    dead = sorted({check_int("die", j, minimum=0, maximum=n - 1) for j in die})
    order = sorted((j for j in range(n) if j not in set(dead)), key=lambda j: (delays[j], j))
    if deadline is None:
        if need is None:
            raise InvalidArgumentError("need", "give need (= n - s) or a deadline")
        need = check_int("need", need, minimum=0, maximum=n)
        if need > len(order):
            raise InvalidArgumentError(
                "die",
                f"{len(dead)} workers die but only s = {n - need} stragglers are tolerated: the PS "
                f"would wait for ever for n - s = {need} transmissions from {len(order)} live workers "
                "(give a deadline to decode from whatever arrives)",
            )
        used = order[:need]
        decision = delays[used[-1]] if used else 0.0
    else:
        deadline = check_real("deadline", deadline, minimum=0.0)
        used = [j for j in order if delays[j] <= deadline]
        decision = deadline
    return {
        "order": order,
        "used": sorted(used),
        "late": sorted(set(order) - set(used)),
        "silent": dead,
        "decision_time": float(decision),
        "last_used_arrival": max((delays[j] for j in used), default=0.0),
    }


def parameter_server_job(rank: int, world_size: int, spec: dict) -> dict:
    """Rank body of :func:`run_parameter_server`: rank 0 = PS, rank j+1 = worker j.

    Every rank passes a monitored barrier first (a rank that does not arrive is named);
    the clock starts there.  Worker ``j`` then sleeps until its simulated arrival time
    ``delays[j]`` and sends ``g̃_j`` (or exits at once if it is to die, or hangs if it is
    to stall).  The PS waits for the transmissions of the workers its simulated schedule
    uses -- at most ``wait_limit`` seconds past the latest scheduled arrival -- decodes,
    then drains late workers for ``drain`` seconds so that they exit cleanly.
    """
    require("torch", "torch", "gcsim.executor.parameter_server.parameter_server_job")

    B = np.asarray(spec["B"])
    A = np.asarray(spec["assignment"])
    m, N, n, d = int(spec["m"]), A.shape[0], A.shape[1], int(spec["d"])
    w = -(-d // m)
    Xs, ys, theta = _ls_problem(spec["seed"], N, d, int(spec["rows"]))
    barrier = timedelta(seconds=float(spec["barrier_timeout"]))
    if rank > 0:
        return _worker_rank(rank, spec, B, A, m, w, d, (Xs, ys, theta), barrier)
    return _server_rank(spec, B, m, N, n, d, w, (Xs, ys, theta), barrier)


def _worker_rank(
    rank: int, spec: dict, B: np.ndarray, A: np.ndarray, m: int, w: int, d: int, problem: tuple, barrier: timedelta
) -> dict:
    """Worker ``rank - 1`` of :func:`parameter_server_job`: compute ``g̃_j``, pass the barrier, then die,
    stall, or send it at its simulated arrival time."""
    import torch
    import torch.distributed as dist

    Xs, ys, theta = problem
    N, n = A.shape
    j = rank - 1
    # compute before the barrier: the delay alone decides when g̃_j is sent
    held = np.flatnonzero(A[:, j])
    g = np.zeros((held.size, m * w))
    g[:, :d] = _partial_gradients(Xs, ys, theta, held)
    blocks = g.reshape(held.size, m, w)
    coef = B.reshape(m, N, n)[:, held, j]  # (m, |held|): B[kN+i, j]
    tilde = np.einsum("ki,ikw->w", coef, blocks)  # g̃_j
    t = torch.as_tensor(tilde)
    dist.monitored_barrier(timeout=barrier, wait_all_ranks=True)
    start = time.monotonic()
    if j in spec["die"]:
        os._exit(17)  # a crashed worker: no message, no goodbye
    if j in spec["stall"]:
        while True:  # a hung worker: alive, silent, until killed
            time.sleep(3600)
    time.sleep(max(0.0, start + float(spec["delays"][j]) - time.monotonic()))
    try:
        work = dist.isend(t, 0)
        assert work is not None  # None only for a rank outside the group
        work.wait(timedelta(seconds=float(spec["wait_limit"]) + float(spec["drain"])))
    except RuntimeError as exc:  # the PS decided and left before this straggler arrived
        return {"rank": rank, "sent": False, "error": str(exc).splitlines()[0][:200]}
    return {"rank": rank, "sent": True, "bytes": t.numel() * t.element_size()}


def _server_rank(
    spec: dict, B: np.ndarray, m: int, N: int, n: int, d: int, w: int, problem: tuple, barrier: timedelta
) -> dict:
    """The parameter server (rank 0) of :func:`parameter_server_job`: wait for the used workers, decode,
    then drain the late ones."""
    import torch
    import torch.distributed as dist

    plan = spec["plan"]
    used = list(plan["used"])
    live = set(plan["order"])
    dist.monitored_barrier(timeout=barrier, wait_all_ranks=True)
    t0 = time.monotonic()
    arrived: dict[int, float] = {}
    bufs: dict[int, Any] = {}
    broken: list = []

    # gloo only marks a receive complete inside wait(), so the PS posts one any-source
    # receive at a time and waits on it with the time left; a gloo timeout closes the
    # pairs, so the first timeout ends all listening
    def receive(until: float) -> bool:
        left = until - time.monotonic()
        if left <= 0 or broken:
            return False
        buf = torch.empty(w, dtype=torch.float64)
        try:
            work = dist.irecv(buf)
            assert work is not None
            work.wait(timedelta(seconds=left))
        except RuntimeError as exc:
            broken.append(str(exc).splitlines()[0][:200])
            return False
        j = int(work._source_rank()) - 1
        arrived[j] = time.monotonic() - t0
        bufs[j] = buf
        return True

    wait_limit = float(spec["wait_limit"])
    limit = t0 + float(plan["last_used_arrival"]) + wait_limit
    while not set(used) <= set(arrived) and receive(limit):
        pass
    undelivered = sorted(set(used) - set(arrived))
    if undelivered:
        # a used worker did not deliver: a real fault, not a simulated straggler
        return {
            "rank": 0,
            "failure": "undelivered",
            "undelivered": undelivered,
            "wait_limit": wait_limit,
            "scheduled": {j: float(spec["delays"][j]) for j in undelivered},
            "waited_seconds": time.monotonic() - t0,
            "receive_error": broken[0] if broken else None,
        }
    decided = time.monotonic() - t0
    F = np.asarray(used, dtype=int)
    XF, ghat_padded, grad_padded, R, pred = _decode_at_server(spec, B, F, bufs, m, N, d, w, problem)
    ghat, grad = ghat_padded[:d], grad_padded[:d]
    # let late workers finish their sends (the PS already decided) so that they exit cleanly
    drain_end = time.monotonic() + float(spec["drain"])
    while not live <= set(arrived) and receive(drain_end):
        pass
    return {
        "rank": 0,
        "used": F.tolist(),
        "missing": sorted(set(range(n)) - set(F.tolist())),
        "arrival_order": list(plan["order"]),
        "late": list(plan["late"]),
        "silent": list(plan["silent"]),
        "decision_time": float(plan["decision_time"]),
        "scheduled_arrival": [float(x) for x in spec["delays"]],
        # wall-clock measurements (vary from run to run; the decision does not depend on them)
        "arrival_seconds": {int(j): float(t) for j, t in arrived.items()},
        "decision_seconds": decided,
        "drained": sorted(set(arrived) - set(used)),
        "decoded": ghat,
        "gradient": grad,
        # on the zero-padded length m·w (where the identity ĝ − ∇L = 𝒢(B_F X − T) holds); the
        # padding coordinates are discarded in practice: error_truncated counts only the first d
        "error": float(np.sum((ghat_padded - grad_padded) ** 2)),
        "error_truncated": float(np.sum((ghat - grad) ** 2)),
        "predicted_error": float(np.sum(pred**2)),
        "residual": float(np.sum(R**2)),
        "decoder": XF,
    }


def _decode_at_server(
    spec: dict, B: np.ndarray, F: np.ndarray, bufs: dict, m: int, N: int, d: int, w: int, problem: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The PS's decoding from the received ``g̃_F``: ``(X_F, ĝ, ∇L, R = B_F X_F − T, 𝒢 R)`` on the
    zero-padded length ``m·w`` (``∇L`` and ``𝒢`` from the partial gradients, for the error identity)."""
    Xs, ys, theta = problem
    T = np.kron(np.eye(m), np.ones((N, 1)))
    if spec["decoder"] == "optimal":
        XF = np.linalg.lstsq(B[:, F], T, rcond=None)[0] if F.size else np.zeros((0, m))
    else:
        XF = np.asarray(spec["decoder_matrix"])[F]
    tilde_F = np.stack([bufs[int(j)].numpy() for j in F]) if F.size else np.zeros((0, w))
    ghat_padded = (XF.T @ tilde_F).reshape(-1)
    g_all = np.zeros((N, m * w))
    g_all[:, :d] = _partial_gradients(Xs, ys, theta, np.arange(N))
    grad_padded = g_all.sum(axis=0)
    R = B[:, F] @ XF - T
    GG = g_all.reshape(N, m, w).transpose(1, 0, 2).reshape(m * N, w)
    pred = GG.T @ R
    return XF, ghat_padded, grad_padded, R, pred


def seeded_delays(n: int, seed: int = 0, scale: float = 0.05) -> np.ndarray:
    """Per-worker straggling delays ``scale · Exponential(1)`` in seconds, reproducible from ``seed``.

    Examples
    --------
    >>> bool(np.array_equal(seeded_delays(5, 3), seeded_delays(5, 3)))
    True
    >>> seeded_delays(3, 0, 0.0).tolist()
    [0.0, 0.0, 0.0]
    """
    n = check_int("n", n, minimum=1)
    check_entries("n", (n,), "the workers' delays")
    seed = check_int("seed", seed, minimum=0)
    scale = check_real("scale", scale, minimum=0.0)
    return np.random.default_rng(seed + 7919).exponential(1.0, size=n) * scale
