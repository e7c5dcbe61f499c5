"""Train a model with DDP whose gradient all-reduce is CERAR: design, export, load, train, measure.

The whole workflow of docs/guides/executor.md §2 ("DDP communication hook") in one script:

1. rank 0 designs a CERAR encoder for ``N`` = world size ranks and ``c`` components
   (:func:`gcsim.cerar.design`, ``"perturbation"``; ε defaults to
   :func:`gcsim.cerar.floating.predicted_optimal_eps` for float32 gradients, docs/theory.md §50.5)
   and exports it into ``--out`` (:func:`gcsim.cerar.export.export_design`); or ``--design PATH``
   names a design exported before (``gcsim cerar optimize --kappa K --out DIR``, an optimized
   design with κ from :func:`gcsim.cerar.floating.kappa_for_dtype`), and nothing is designed;
2. after a barrier every rank loads it back (:func:`gcsim.load_object`, which re-verifies the
   certificate from the file alone); the hook warns when the design's expected error is far
   above float32's rounding level (:func:`gcsim.cerar.floating.precision_check`);
3. every rank trains the digits MLP 64-32-10 on its own shard, wrapped in
   ``DistributedDataParallel`` with the CERAR hook
   (:func:`gcsim.executor.ddp_hook.register_cerar_hook`);
4. once, at the end, every rank's hook output is compared with the exact mean of the ranks'
   local gradients and with ``dist.all_reduce`` of the same gradients; rank 0 prints the
   relative error next to the worst-case bound and, the pass/fail check, the error the
   design's own analysis predicts on these gradients with its interval (below), and writes the
   arrays and a JSON report into ``--out``.

**The check.**  The hook is wrapped (the public state, :func:`gcsim.executor.make_hook_state`)
to record the bucket buffers DDP hands it at the measured step: the ranks' inputs ``G_b`` in
the ring's own layout.  The simulator (:func:`gcsim.cerar.simulate`, float64) runs the design on
them: ``ĝ_i^pred``, the output in exact arithmetic up to float64, so the predicted error
``e_i = ‖ĝ_i^pred − g‖ / ‖g‖`` is what the approximation gives on these very gradients (not a
worst case).  The measured error must lie in ``[e_i − r_i, e_i + r_i]``, ``r_i`` the rounding
bound of float32 below (triangle inequality: the float32 ring differs from the float64 one by
its rounding); the interval is as narrow as the rounding, so the check is not vacuous.  The
report also gives the design's expected error for isotropic gradients, ``sqrt(mean_relative_mse)``.

Run it with torchrun (one process per rank; gloo on CPU)::

    torchrun --nproc_per_node=2 --standalone examples/train_cerar_ddp.py --out runs/cerar

or, where there is no torchrun, let the script start its own ranks
(:func:`gcsim.executor.launcher.launch`: gloo, timeouts, no process left behind)::

    python examples/train_cerar_ddp.py --world-size 2 --out runs/cerar

Needs ``pip install 'gcsim[torch,learning]'`` (torch, and scikit-learn for the digits).

The predicted bound on ``‖ĝ_i/N − g/N‖ / ‖g/N‖`` for rank ``i`` (``g = Σ_j g_j``) has two terms:

* approximation (exact arithmetic, theory §50.1): ``ĝ_i − g = Σ_m E_{i,m} G_{i−m}``, so
  ``‖ĝ_i − g‖ ≤ ‖[E_{i,1} … E_{i,N−1}]‖₂ · (Σ_{j≠i} ‖g_j‖²)^{1/2}`` whatever DDP's bucket layout;
* rounding of the wire dtype (unit round-off ``u``, Higham 2002, Lemma 3.3): the coded symbols
  ``A_j G_j`` are rounded to the wire dtype once after the float64 encoding; a stripped sum
  ``u_i^(t)`` ends a chain of at most ``2t`` rounded additions and subtractions whose partial
  sums hold at most one symbol per worker, so ``|Δu_i^(t)| ≤ γ_{2t+1} Σ_j max_τ |A_j| |G_j|``
  entrywise, ``‖ΔU_i‖_F ≤ γ_{2L+1} √L Σ_j ‖|A_j|‖₂ ‖g_j‖``, and the decoder multiplies this by
  ``‖D_i‖₂``; the last rounding of the output adds ``u ‖ĝ_i‖``, and the constant
  :data:`gcsim.cerar.metrics.SAFETY` covers the float64 encoding and decoding and the small
  integers of these bounds.  A worst-case bound: the measured rounding error (random signs)
  is typically two to three orders of magnitude smaller.

Large encoders (``‖A_j‖ ≈ ε^{−r*}``) make the rounding term grow as ε shrinks while the
approximation term shrinks with ε: the default ε balances the two (theory §50.5).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

import gcsim
from gcsim.cerar.design import CerarDesign
from gcsim.cerar.export import export_design
from gcsim.cerar.floating import precision_check, predicted_optimal_eps
from gcsim.cerar.metrics import SAFETY, worker_norms
from gcsim.cerar.protocol import unit_roundoff

#: Files the script writes into ``--out`` besides the design bundle.
MEASUREMENT = "measurement.npz"
REPORT = "report.json"
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def design_name(N: int, c: int) -> str:
    """Stem of the exported design bundle in ``--out``."""
    return f"cerar_N{N}_c{c}"


def predicted_bound(design: CerarDesign, local: np.ndarray, wire: str = "float32") -> dict[str, np.ndarray]:
    """Bound on each rank's relative all-reduce error, from the design and the local gradients.

    Parameters
    ----------
    design : CerarDesign
    local : ndarray, shape (N, d)
        The ranks' local gradients (the all-reduce's inputs), in any order of the ``d``
        entries (the bound uses norms only, so DDP's bucket layout does not matter).
    wire : str
        dtype of the packets on the wire (the gradient dtype).

    Returns
    -------
    dict
        ``approximation``, ``rounding`` and ``total``: arrays of shape (N,), relative to
        ``‖Σ_j g_j‖`` (see the module docstring for the derivation).

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> b = predicted_bound(design(2, 2, "exact"), np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> [float(x) for x in b["approximation"]]
    [0.0, 0.0]
    """
    L = design.L
    g = np.asarray(local, dtype=np.float64)
    norms = np.linalg.norm(g, axis=1)
    total = float(np.linalg.norm(g.sum(axis=0)))
    if total == 0.0:
        raise ValueError("the exact sum of the gradients is 0: a relative error is undefined")
    others = np.sqrt(np.maximum(np.sum(norms**2) - norms**2, 0.0))  # (Σ_{j≠i} ‖g_j‖²)^{1/2}
    approx = worker_norms(design.error_operators()) * others
    u = unit_roundoff(wire)
    n = 2 * L + 1  # roundings along the longest chain of a stripped sum
    gamma_n = n * u / (1.0 - n * u)
    abs_enc = sum(float(np.linalg.norm(np.abs(A), 2)) * float(nj) for A, nj in zip(design.encoders, norms, strict=True))
    dec = np.linalg.norm(design.decoders, 2, axis=(1, 2))
    rounding = SAFETY * gamma_n * math.sqrt(L) * dec * abs_enc + u * (total + approx)
    return {"approximation": approx / total, "rounding": rounding / total, "total": (approx + rounding) / total}


# ----------------------------------------------------------------------------------------------
# one rank
# ----------------------------------------------------------------------------------------------


def predicted_interval(design: CerarDesign, buckets: list[np.ndarray], local: np.ndarray) -> dict[str, np.ndarray]:
    """Each rank's relative all-reduce error predicted by the design on these gradients, and its interval.

    Parameters
    ----------
    design : CerarDesign
    buckets : list of ndarray, shape (N, P_b) each
        The ranks' inputs of every DDP bucket, in the bucket's layout (the ring splits each
        bucket into ``c`` components on its own).
    local : ndarray, shape (N, d)
        The same gradients in any layout (for the rounding bound, which uses norms only).

    Returns
    -------
    dict
        ``predicted`` ``‖ĝ^pred_i − g‖ / ‖g‖`` (the float64 simulated ring), ``rounding`` (the
        float32 rounding bound of :func:`predicted_bound`), ``lo`` and ``hi`` = predicted ∓ rounding.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> b = predicted_interval(design(2, 2, "exact"), [g], g)
    >>> [float(x) for x in b["predicted"]]
    [0.0, 0.0]
    """
    from gcsim.cerar import simulate

    err = np.zeros(design.N)
    total = 0.0
    for G in buckets:
        G = np.asarray(G, dtype=np.float64)
        out = simulate(design, G, dtype="float64").outputs
        err += np.sum((out - G.sum(axis=0)) ** 2, axis=1)
        total += float(np.sum(G.sum(axis=0) ** 2))
    predicted = np.sqrt(err / total)
    rounding = predicted_bound(design, local, "float32")["rounding"]
    return {
        "predicted": predicted,
        "rounding": rounding,
        "lo": np.maximum(predicted - rounding, 0.0),
        "hi": predicted + rounding,
    }


def _export_on_rank0(rank: int, world_size: int, opts: dict[str, Any]) -> str:
    """Rank 0 designs and exports; every rank learns the path (or rank 0's error) by a broadcast."""
    import torch.distributed as dist

    if opts.get("design") is not None:  # --design: an existing bundle, nothing to design
        return opts["design"]
    msg: list[Any] = [None]
    if rank == 0:
        try:
            des = gcsim.cerar.design(world_size, opts["c"], "perturbation", eps=opts["eps"])
            path = export_design(des, opts["out"], design_name(world_size, opts["c"]), overwrite=opts["force"])
            msg = [{"path": str(path)}]
        except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
            msg = [{"error": f"{type(exc).__name__}: {exc}"}]
    dist.broadcast_object_list(msg, src=0)
    if "error" in msg[0]:
        raise RuntimeError(f"rank 0 could not design or export the CERAR encoder: {msg[0]['error']}")
    return msg[0]["path"]


def train(rank: int, world_size: int, opts: dict[str, Any]) -> dict[str, Any]:
    """One rank, inside an initialized process group: export, load, train, measure (module level).

    Returns rank 0's report (other ranks return their final loss).
    """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.executor.ddp_hook import cerar_hook, make_hook_state
    from gcsim.learning.datasets import load_digits

    path = _export_on_rank0(rank, world_size, opts)
    dist.barrier()  # the bundle is complete on disk before anyone reads it
    des = gcsim.load_object(path)  # re-verifies the certificate from the file alone
    if not isinstance(des, CerarDesign):
        raise TypeError(f"{path} holds a {type(des).__name__}, not a CERAR design")
    if des.N != world_size:
        raise ValueError(f"{path} is a design for N = {des.N} ranks, the world size is {world_size}")

    data = load_digits(seed=opts["seed"])
    xtr = torch.tensor(data.x_train[rank::world_size], dtype=torch.float32)  # this rank's shard
    ytr = torch.tensor(data.y_train[rank::world_size], dtype=torch.long)
    xte = torch.tensor(data.x_test, dtype=torch.float32)
    yte = torch.tensor(data.y_test, dtype=torch.long)
    torch.manual_seed(opts["seed"])  # the same initial parameters on every rank
    net = torch.nn.Sequential(torch.nn.Linear(64, opts["hidden"]), torch.nn.ReLU(), torch.nn.Linear(opts["hidden"], 10))
    model = DDP(net)
    state = make_hook_state(des)  # the public hook state: the hook is wrapped to record its inputs
    recorded: list[torch.Tensor] = []
    recording = [False]

    def recording_hook(st, bucket):  # no annotations: DDP compares them with real types
        if recording[0]:
            recorded.append(bucket.buffer().detach().clone())
        return cerar_hook(st, bucket)

    model.register_comm_hook(state, recording_hook)
    opt = torch.optim.SGD(model.parameters(), lr=opts["lr"])
    loss_fn = torch.nn.functional.cross_entropy
    gen = torch.Generator().manual_seed(opts["seed"] * 1000 + rank)

    def batch():
        idx = torch.randint(0, xtr.shape[0], (opts["batch"],), generator=gen)
        return xtr[idx], ytr[idx]

    def flat(tensors) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1) for t in tensors])

    for step in range(opts["steps"]):
        x, y = batch()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # the hook CERAR-reduces every gradient bucket here
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)  # for the printout only
        if rank == 0 and (step % opts["log_every"] == 0 or step == opts["steps"] - 1):
            print(f"step {step:4d}  loss {float(mean_loss) / world_size:.4f}", flush=True)

    # the measurement, once: the same gradients through the hook, exactly and through dist.all_reduce
    x, y = batch()
    local_net = copy.deepcopy(net)  # an undistributed copy: its gradient is this rank's input to the all-reduce
    local = flat(torch.autograd.grad(loss_fn(local_net(x), y), list(local_net.parameters())))
    opt.zero_grad()
    recording[0] = True
    loss_fn(model(x), y).backward()
    recording[0] = False
    hook = flat(p.grad for p in net.parameters())  # what DDP + CERAR hook left: the average ĝ_i / N
    library = local.clone()
    dist.all_reduce(library)
    library /= world_size
    gathered = {}
    for name, t in (("local", local), ("hook", hook)):
        parts = [torch.empty_like(t) for _ in range(world_size)]
        dist.all_gather(parts, t)
        gathered[name] = torch.stack(parts).double().numpy()
    buckets = []
    for t in recorded:  # every rank's input of each bucket, in the ring's layout
        parts = [torch.empty_like(t) for _ in range(world_size)]
        dist.all_gather(parts, t)
        buckets.append(torch.stack(parts).double().numpy())
    with torch.no_grad():
        acc = float((net(xte).argmax(1) == yte).float().mean())
    if rank != 0:
        return {"rank": rank}

    local_g, hook_g = gathered["local"], gathered["hook"]
    exact = local_g.sum(axis=0) / world_size  # float64: exact up to γ_N u64
    lib = library.double().numpy()
    rel = np.linalg.norm(hook_g - exact, axis=1) / np.linalg.norm(exact)
    rel_lib = np.linalg.norm(hook_g - lib, axis=1) / np.linalg.norm(lib)
    bound = predicted_bound(des, local_g, "float32")
    interval = predicted_interval(des, buckets, local_g)
    inside = (rel >= interval["lo"]) & (rel <= interval["hi"])
    check = precision_check(des, "float32", warn=False)
    eps = des.metadata.get("eps")
    report = {
        "N": world_size,
        "c": des.c,
        "L": des.L,
        "eps": None if eps is None else float(eps),
        "method": des.method,
        "design": path,
        "steps": opts["steps"],
        "final_loss": float(mean_loss) / world_size,
        "test_accuracy": acc,
        "relative_error": [float(v) for v in rel],
        "relative_error_vs_all_reduce": [float(v) for v in rel_lib],
        "bound_approximation": [float(v) for v in bound["approximation"]],
        "bound_rounding": [float(v) for v in bound["rounding"]],
        "bound": [float(v) for v in bound["total"]],
        "hook_calls": state.calls,
        "hook_bytes": state.counter.sent,
        "within_bound": bool(np.all(rel <= bound["total"])),
        "predicted_error": [float(v) for v in interval["predicted"]],
        "interval_lo": [float(v) for v in interval["lo"]],
        "interval_hi": [float(v) for v in interval["hi"]],
        "within_interval": bool(np.all(inside)),
        "expected_error_isotropic": check.approximation,
        "kappa": check.kappa,
        "kappa_for_float32": check.kappa_dtype,
        "float32_level": check.level,
        "precision_ratio": check.ratio,
    }
    out = Path(opts["out"])
    out.mkdir(parents=True, exist_ok=True)  # with --design nothing was exported into it yet
    np.savez(out / MEASUREMENT, local=local_g, hook=hook_g, all_reduce=lib)
    (out / REPORT).write_text(json.dumps(report, indent=2) + "\n")
    shown = "" if eps is None else f", eps = {float(eps):.3g}"
    print(f"design: {path} (N = {world_size}, c = {des.c}, {des.method}{shown}, kappa = {check.kappa:.4g})")
    print(
        f"expected error (isotropic gradients) {check.approximation:.3e} + rounding {check.rounding:.1e}: "
        f"{check.ratio:.3g} x the float32 level {check.level:.2e} (kappa_for_dtype float32 = {check.kappa_dtype:.4g})"
    )
    print(f"test accuracy (rank 0's replica): {acc:.3f}")
    print(f"hook: {state.calls} calls, {state.counter.sent} bytes sent by rank 0")
    for i in range(world_size):
        print(
            f"rank {i}: all-reduce relative error {rel[i]:.3e} (vs dist.all_reduce {rel_lib[i]:.3e}); "
            f"predicted bound {bound['total'][i]:.3e} "
            f"= approximation {bound['approximation'][i]:.3e} + rounding {bound['rounding'][i]:.3e}"
        )
    for i in range(world_size):
        print(
            f"rank {i}: predicted on these gradients {interval['predicted'][i]:.4e}, interval "
            f"[{interval['lo'][i]:.4e}, {interval['hi'][i]:.4e}]; measured {rel[i]:.4e}: "
            f"{'inside' if inside[i] else 'OUTSIDE'}"
        )
    print(f"max relative error {rel.max():.3e} <= predicted bound {bound['total'].max():.3e}: {report['within_bound']}")
    print(f"every rank within the design's predicted interval: {report['within_interval']}")
    print(f"report: {out / REPORT}", flush=True)
    return report


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Design, export and load a CERAR encoder, then train the digits MLP with DDP and the CERAR hook.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Under torchrun the world size is torchrun's --nproc_per_node; without torchrun give --world-size.",
    )
    p.add_argument("--out", required=True, help="folder for the design bundle, measurement.npz and report.json")
    p.add_argument("--world-size", type=_positive_int, help="start this many gloo ranks (only without torchrun)")
    p.add_argument(
        "--design",
        help="an exported CERAR design (its .json) to load instead of designing one; its N must be the world size",
    )
    p.add_argument("--c", type=_positive_int, help="gradient components of the design (default: 2 x world size)")
    p.add_argument("--eps", type=_positive_float, help="perturbation (default: the float32 optimum u^(1/(r*+1)))")
    p.add_argument("--steps", type=_positive_int, default=30, help="SGD steps")
    p.add_argument("--lr", type=_positive_float, default=0.1, help="learning rate")
    p.add_argument("--batch", type=_positive_int, default=32, help="examples per rank and step")
    p.add_argument("--hidden", type=_positive_int, default=32, help="hidden units of the MLP")
    p.add_argument("--log-every", type=_positive_int, default=10, help="print the loss every this many steps")
    p.add_argument("--seed", type=int, default=0, help="seed of the data split, the initialization and the batches")
    p.add_argument("--timeout", type=_positive_float, default=120.0, help="seconds before a silent rank is an error")
    p.add_argument("--force", action="store_true", help="replace a design bundle already in --out")
    return p


def _under_torchrun() -> bool:
    return all(v in os.environ for v in TORCHRUN_VARS)


def options(argv: list[str] | None = None) -> tuple[int, dict[str, Any]]:
    """Parse and check the arguments; returns (world size, options of :func:`train`)."""
    p = parser()
    a = p.parse_args(argv)
    if _under_torchrun():
        world_size = int(os.environ["WORLD_SIZE"])
        if a.world_size is not None and a.world_size != world_size:
            p.error(f"--world-size {a.world_size} differs from torchrun's world size {world_size}; drop it")
    elif a.world_size is None:
        p.error("--world-size is required without torchrun (or run: torchrun --nproc_per_node=N ...)")
    else:
        world_size = a.world_size
    if world_size < 2:
        p.error(f"a CERAR ring needs at least 2 ranks, got a world size of {world_size}")
    if a.seed < 0:
        p.error(f"--seed must be >= 0, got {a.seed}")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        p.error(f"--out {out} exists and is not a folder")
    design_path = None
    if a.design is not None:
        if a.c is not None or a.eps is not None:
            p.error("--design: the design fixes c and eps; drop --c and --eps")
        try:
            des = gcsim.load_object(a.design)
        except Exception as exc:  # noqa: BLE001 - any refusal of the file is a usage error here
            p.error(f"--design: {exc}")
        if not isinstance(des, CerarDesign):
            p.error(f"--design: {a.design} holds a {type(des).__name__}, not a CERAR design")
        if des.N != world_size:
            p.error(f"--design: {a.design} is a design for N = {des.N} ranks, the world size is {world_size}")
        design_path, c, eps = str(Path(a.design).resolve()), des.c, None
    else:
        c = 2 * world_size if a.c is None else a.c
        eps = predicted_optimal_eps(world_size, c, "float32") if a.eps is None else a.eps
        if (out / f"{design_name(world_size, c)}.json").exists() and not a.force:
            p.error(f"--out {out} already holds {design_name(world_size, c)}.json; pass --force to replace it")
    opts = {
        "design": design_path,
        "out": str(out),
        "c": c,
        "eps": eps,
        "steps": a.steps,
        "lr": a.lr,
        "batch": a.batch,
        "hidden": a.hidden,
        "log_every": a.log_every,
        "seed": a.seed,
        "timeout": a.timeout,
        "force": a.force,
    }
    return world_size, opts


def main(argv: list[str] | None = None) -> int:
    world_size, opts = options(argv)
    if _under_torchrun():
        import torch.distributed as dist

        # the process-group timeout bounds the rendezvous and every collective: a lost peer is an error
        dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=opts["timeout"]))
        try:
            report = train(int(os.environ["RANK"]), world_size, opts)
            dist.barrier()  # every rank is done with its collectives before the group goes away
        finally:
            dist.destroy_process_group()
        code = 0 if report.get("within_interval", True) else 1
        # as gcsim's own launcher does: leave without running C++ destructors, which can abort
        # ("terminate called without an active exception") while gloo threads wind down
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    from gcsim.executor.launcher import RankFailure, launch

    # startup, training and measurement share one deadline (--timeout); ranks still running are killed
    try:
        res = launch(train, world_size, (opts,), timeout=opts["timeout"]).raise_on_failure()
    except RankFailure as exc:  # names every failed rank and what happened to it; no tracebacks
        print(f"train_cerar_ddp: error: {exc}", file=sys.stderr)
        return 1
    return 0 if res.results[0]["within_interval"] else 1


if __name__ == "__main__":
    sys.exit(main())
