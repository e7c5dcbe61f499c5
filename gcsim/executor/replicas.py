"""Replica drift under an approximate all-reduce, and periodic re-synchronisation (docs/guides/executor.md).

With an exact all-reduce every rank applies the same averaged gradient and the replicas of a
data-parallel model stay identical.  With an approximate CERAR design (``c > N``) rank ``i``
applies its own decoded average ``ĝ_i / N``, so after ``t`` steps the parameters ``θ_i`` differ:
the **drift** is ``max_i ‖θ_i − θ_0‖_∞`` (:func:`replica_drift`).  SGD with learning rate ``η``
moves each replica by ``η ĝ_i / N``, so one step adds at most ``η max_i ‖ĝ_i − ĝ_0‖_∞ / N`` to the
drift and ``t`` steps at most ``t`` times that: it grows linearly in the worst case.
:func:`resync_parameters` copies rank 0's parameters to every rank (one broadcast of the
flattened parameters per dtype), after which the replicas are bit-identical;
:class:`ReplicaSync` does it every ``K`` steps and records the drift it removed, so the drift
stays below ``K`` steps' worth.  Optimizer state (momentum,
Adam moments) is per rank and is not broadcast: it is a function of the gradients each rank saw.

Every function is a collective: call it on every rank of the group, in the same order.

Examples
--------
In a training loop (inside an initialized process group)::

    from gcsim.executor.replicas import ReplicaSync
    sync = ReplicaSync(model, resync_every=50, measure_every=10)
    for x, y in loader:
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
        sync.step()                     # after the optimizer step, on every rank
    print(sync.history[-1])             # {'step': ..., 'drift': ..., 'resynced': ...}
"""

from __future__ import annotations

from typing import Any

from .._optional import require
from .._validation import check_int
from ..errors import InvalidArgumentError

__all__ = ["replica_drift", "resync_parameters", "ReplicaSync"]


def _parameters(module: Any) -> list:
    if not hasattr(module, "parameters"):
        raise InvalidArgumentError("module", f"must be a torch.nn.Module, got {type(module).__name__}")
    params = [p for p in module.parameters()]
    if not params:
        raise InvalidArgumentError("module", "has no parameters")
    return params


def _source(group: Any) -> int:
    """The global rank of the group's rank 0 (the source of a broadcast)."""
    import torch.distributed as dist

    return 0 if group is None else int(dist.get_global_rank(group, 0))


def replica_drift(module: Any, *, group: Any = None) -> float:
    """``max_i max_k |θ_i[k] − θ_0[k]|`` over the ranks ``i`` of the group: how far the replicas are apart.

    Rank 0's parameters are broadcast and every rank compares its own with them in float64 (the
    difference of two float32 or bfloat16 values is exact there); the maximum over the ranks is
    an all-reduce, so every rank returns the same number.  0.0 exactly when the replicas are
    bit-identical.

    Parameters
    ----------
    module : torch.nn.Module
        The model (a ``DistributedDataParallel`` or the module it wraps).
    group : ProcessGroup, optional
        Default: the default group.

    Returns
    -------
    float
    """
    require("torch", "torch", "gcsim.executor.replicas.replica_drift")
    import torch
    import torch.distributed as dist

    params = _parameters(module)
    mine = torch.cat([p.detach().reshape(-1).to(torch.float64) for p in params])
    ref = mine.clone()
    dist.broadcast(ref, src=_source(group), group=group)
    drift = (mine - ref).abs().max().reshape(1)
    dist.all_reduce(drift, op=dist.ReduceOp.MAX, group=group)
    return float(drift.item())


def resync_parameters(module: Any, *, group: Any = None) -> None:
    """Copy the group's rank-0 parameters to every rank (one broadcast of the flattened parameters).

    After it the replicas are bit-identical: the broadcast carries the values in their own dtype.

    Parameters
    ----------
    module : torch.nn.Module
    group : ProcessGroup, optional
    """
    require("torch", "torch", "gcsim.executor.replicas.resync_parameters")
    import torch
    import torch.distributed as dist

    params = _parameters(module)
    by_dtype: dict[Any, list] = {}
    for p in params:
        by_dtype.setdefault(p.dtype, []).append(p)
    with torch.no_grad():
        for same in by_dtype.values():  # one flat buffer per dtype: the values travel unconverted
            flat = torch.cat([p.detach().reshape(-1) for p in same])
            dist.broadcast(flat, src=_source(group), group=group)
            offset = 0
            for p in same:
                p.copy_(flat[offset : offset + p.numel()].view_as(p))
                offset += p.numel()


class ReplicaSync:
    """Measure the replicas' drift every ``measure_every`` steps and re-synchronise every ``resync_every``.

    Call :meth:`step` once per training step, after the optimizer's step, on every rank.  At a
    step that is a multiple of ``measure_every`` or of ``resync_every`` the drift
    (:func:`replica_drift`) is measured and appended to :attr:`history`; at a multiple of
    ``resync_every`` the parameters are then broadcast from rank 0 (:func:`resync_parameters`),
    so the replicas are bit-identical right after it.

    Parameters
    ----------
    module : torch.nn.Module
    resync_every : int or None
        ``K >= 1``: re-synchronise every ``K`` steps; None: never (measure only).
    measure_every : int or None
        Measure the drift every this many steps too (None: only at re-synchronisations).
    group : ProcessGroup, optional

    Attributes
    ----------
    steps : int
        Calls to :meth:`step` so far.
    history : list of dict
        ``{"step": t, "drift": max |θ_i − θ_0| before any re-synchronisation at t, "resynced": bool}``.
    """

    def __init__(
        self, module: Any, resync_every: int | None = None, *, measure_every: int | None = None, group: Any = None
    ) -> None:
        _parameters(module)
        self.module = module
        self.resync_every = None if resync_every is None else check_int("resync_every", resync_every, minimum=1)
        self.measure_every = None if measure_every is None else check_int("measure_every", measure_every, minimum=1)
        self.group = group
        self.steps = 0
        self.history: list[dict[str, Any]] = []

    def step(self) -> float | None:
        """One training step done: measure and re-synchronise when due; returns the drift measured, or None."""
        self.steps += 1
        resync = self.resync_every is not None and self.steps % self.resync_every == 0
        measure = resync or (self.measure_every is not None and self.steps % self.measure_every == 0)
        if not measure:
            return None
        drift = replica_drift(self.module, group=self.group)
        if resync:
            resync_parameters(self.module, group=self.group)
        self.history.append({"step": self.steps, "drift": drift, "resynced": resync})
        return drift

    @property
    def max_drift(self) -> float:
        """The largest drift measured so far (0.0 before any measurement)."""
        return max((h["drift"] for h in self.history), default=0.0)

    def __repr__(self) -> str:
        return (
            f"ReplicaSync(resync_every={self.resync_every}, measure_every={self.measure_every}, steps={self.steps}, "
            f"max_drift={self.max_drift:.3g})"
        )
