"""Training with CERAR through the DDP communication hook (docs/theory.md §60).

N ranks (torch.distributed, gloo) train the MLP 64-128-10 on scikit-learn's digits with
``DistributedDataParallel``; each rank holds its own shard of the training set. The gradient
all-reduce is either DDP's own (exact) or CERAR through
:func:`gcsim.executor.ddp_hook.register_cerar_hook` with a given design. With an approximate
design (c > N) every rank receives its *own* approximation ĝ_i of the average gradient, so the
replicas θ_i drift apart; we record the **replica drift** max_{i,j} ‖θ_i − θ_j‖ (gathered with
``all_gather``) together with loss and test accuracy of every replica.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._plotting import curve_styles, floor_label, legend_below, log_floor, new_figure, plot_floored, save
from .._validation import check_bool, check_int, check_real
from ..cerar.export import export_design
from ..errors import InvalidArgumentError
from ..executor.ddp_hook import register_cerar_hook
from ..executor.launcher import launch
from .datasets import load_digits

__all__ = ["ddp_training_job", "ddp_cerar_experiment"]


def ddp_training_job(rank: int, world_size: int, spec: dict) -> dict:
    """One rank of a DDP training run (module level, so the launcher can pickle it).

    With ``spec["record"]`` the rank also returns, per SGD step, its parameters before the
    step, its *local* gradient (from an undistributed copy of the model: what it hands to the
    all-reduce) and the averaged gradient DDP leaves in ``p.grad`` (the hook's output), all
    flattened in parameter order -- enough to check every all-reduce against the exact mean.
    """
    import copy

    require("torch", "torch", "gcsim.learning.ddp_cerar.ddp_training_job")
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    data = load_digits(seed=spec["seed"])
    xtr = torch.tensor(data.x_train[rank::world_size], dtype=torch.float32)
    ytr = torch.tensor(data.y_train[rank::world_size], dtype=torch.long)
    xte = torch.tensor(data.x_test, dtype=torch.float32)
    yte = torch.tensor(data.y_test, dtype=torch.long)
    torch.manual_seed(spec["seed"])  # identical initialization on every rank
    net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    model = DDP(net)
    state = None
    if spec.get("design") is not None:
        state = register_cerar_hook(model, spec["design"])
    opt = torch.optim.SGD(model.parameters(), lr=spec["lr"])
    gen = torch.Generator().manual_seed(spec["seed"] * 1000 + rank)
    record = bool(spec.get("record", False))
    rec: dict = {"theta": [], "local": [], "avg": []}

    def flat(tensors) -> np.ndarray:
        return torch.cat([t.detach().reshape(-1) for t in tensors]).numpy().copy()

    history = []
    for step in range(spec["steps"] + 1):
        if step % spec["eval_every"] == 0 or step == spec["steps"]:
            with torch.no_grad():
                theta = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
                gathered = [torch.empty_like(theta) for _ in range(world_size)]
                dist.all_gather(gathered, theta)
                stack = torch.stack(gathered).double()
                drift = float(torch.cdist(stack, stack).max())
                logits = net(xte)
                acc = float((logits.argmax(1) == yte).float().mean())
                train_loss = float(torch.nn.functional.cross_entropy(net(xtr), ytr))
            history.append({"step": step, "rank": rank, "test_acc": acc, "train_loss": train_loss, "drift": drift})
        if record:
            rec["theta"].append(flat(net.parameters()))
        if step == spec["steps"]:
            break
        idx = torch.randint(0, xtr.shape[0], (spec["batch"],), generator=gen)
        if record:
            local = copy.deepcopy(net)
            loss = torch.nn.functional.cross_entropy(local(xtr[idx]), ytr[idx])
            rec["local"].append(flat(torch.autograd.grad(loss, list(local.parameters()))))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
        if record:
            rec["avg"].append(flat(p.grad for p in net.parameters()))
        opt.step()
    out: dict[str, Any] = {
        "history": history,
        "hook_bytes": None if state is None else state.counter.sent,
        "hook_calls": None if state is None else state.calls,
    }
    if record:
        out["record"] = {k: np.stack(v) for k, v in rec.items()}
    return out


def ddp_cerar_experiment(
    designs: dict[str, Any],
    *,
    N: int = 4,
    steps: int = 100,
    lr: float = 0.1,
    batch: int = 32,
    eval_every: int = 10,
    seed: int = 0,
    timeout: float = 300.0,
    record: bool = False,
):
    """Train once per entry of ``designs`` (label -> CerarDesign, exported path, or None for exact
    all-reduce); returns a tidy DataFrame (label, step, rank, test_acc, train_loss, drift, hook_bytes).

    With ``record=True`` the frame's ``attrs["records"]`` holds, per label, each rank's per-step
    parameters, local gradients and averaged gradients (float32 arrays, see
    :func:`ddp_training_job`), for checking every all-reduce against the exact mean.
    """
    record = check_bool("record", record)
    require("pandas", "learning", "gcsim.learning.ddp_cerar.ddp_cerar_experiment")
    import pandas as pd  # optional dependency: only the tidy table needs it

    if not isinstance(designs, dict) or not designs:
        raise InvalidArgumentError("designs", "must be a non-empty dict label -> design (or None)")
    N = check_int("N", N, minimum=2)
    steps = check_int("steps", steps, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    lr = check_real("lr", lr, minimum=0.0, strict_min=True)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    rows: list[dict[str, Any]] = []
    records: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp(prefix="gcsim-ddp-"))
    try:
        for label, des in designs.items():
            if des is not None and not isinstance(des, str):
                des = str(export_design(des, tmp, name=f"design{len(records)}"))
            spec = {
                "seed": seed,
                "steps": steps,
                "lr": lr,
                "batch": batch,
                "eval_every": eval_every,
                "design": des,
                "record": bool(record),
            }
            res = launch(ddp_training_job, N, (spec,), timeout=timeout).raise_on_failure()
            records[label] = [r.get("record") for r in res.results]
            for r in res.results:
                for h in r["history"]:
                    rows.append({"label": label, **h, "hook_bytes": r["hook_bytes"]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    frame = pd.DataFrame(rows)
    if record:
        frame.attrs["records"] = records
    return frame


def plot_ddp(frame, path=None):
    """Test accuracy, its difference to the first run, and replica drift vs step; returns the figure.

    The accuracies of all runs agree to within a few 1e-3 (exact CERAR bit for bit): the first
    panel draws them layered (:func:`gcsim._plotting.curve_styles`, earlier runs wider underneath),
    the second shows the difference to the first run (the exact all-reduce) in percentage points,
    where the runs separate.  A drift of exactly 0 is drawn at a stated floor (▼), not at 1e-12.
    Saves a PNG at ``path`` if given.
    """
    require("matplotlib", "plots", "gcsim.learning.ddp_cerar.plot_ddp")
    fig, axes = new_figure(1, 3, figsize=(15, 5.0))
    groups = []
    for label, g in frame.groupby("label", sort=False):
        m = g.groupby("step").agg(acc=("test_acc", "mean"), drift=("drift", "max")).reset_index()
        groups.append((label, m))
    styles = curve_styles(len(groups), points=max(len(m) for _, m in groups))
    base = groups[0][1].set_index("step")["acc"]
    floor = log_floor(np.concatenate([m.drift.to_numpy() for _, m in groups]))
    axes[2].set_yscale("log")
    for style, (label, m) in zip(styles, groups, strict=True):
        axes[0].plot(m.step, m.acc, label=label, **style)
        diff = 100.0 * (m.set_index("step")["acc"] - base.reindex(m.step).to_numpy())
        axes[1].plot(m.step, diff.to_numpy(), label=label, **style)
        plot_floored(axes[2], m.step, m.drift, floor, label=label, **style)
    axes[0].set_ylabel("test accuracy (mean over replicas)")
    axes[1].set_ylabel(f"test accuracy − {groups[0][0]}\n(percentage points)")
    drift = r"replica drift $\max_{ij} \|\theta_i - \theta_j\|$"
    zero = any((m.drift <= floor).any() for _, m in groups)
    axes[2].set_ylabel(floor_label(drift, floor, "0") if zero else drift)
    for ax in axes:
        ax.set_xlabel("SGD step")
        ax.grid(alpha=0.3, which="both")
    legend_below(fig, ncol=4)
    fig.suptitle("DDP on digits (MLP 64-128-10), $N$ = 4 gloo ranks: exact all-reduce vs CERAR hook")
    if path is not None:
        save(fig, path)
    return fig
