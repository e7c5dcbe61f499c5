"""The ``ddp`` stage of ``gcsim reproduce``: CERAR through the DDP hook vs exact all-reduce."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._progress import StageProgress
from ...io.manifest import atomic_path
from ..paths import repo_designs_dir


def ddp_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """CERAR in DDP training; it launches torch.distributed processes of its own, so it runs here
    whatever ``scheduler`` says.

    One training run per design (about 20 s each at the quick scale), with progress in the CLI's
    format (:class:`gcsim._progress.StageProgress`: a bar on a terminal, else a line per run and a
    heartbeat naming the run every ``GCSIM_PROGRESS_SECONDS``)."""
    import pandas as pd

    from ...cerar.factory import design
    from ...learning.ddp_cerar import ddp_cerar_experiment, plot_ddp

    designs: dict[str, Any] = {
        "exact all-reduce (DDP default)": None,
        "CERAR exact, c = 4": design(4, 4, "exact"),
        "CERAR perturbation, c = 8, ε = 0.01": design(4, 8, "perturbation", eps=0.01),
    }
    opt = repo_designs_dir() / "cerar" / "optimized_N4_c8_kappa10.json"
    if opt.exists():
        designs["CERAR optimized, c = 8, κ ≤ 10"] = str(opt)
    steps = 300 if full else 100
    bar = StageProgress(len(designs), "reproduce ddp", "training runs", progress)
    frames = []
    try:
        # one run per design (each independent, the same seed): the same table as one call with all of them
        for label, des in designs.items():
            bar.working_on(f"{label}, {steps} steps on 4 ranks")
            frames.append(ddp_cerar_experiment({label: des}, N=4, steps=steps, seed=seed))
            bar.step()
    finally:
        bar.close()
    # rebuilt from the rows, as one call builds it (the same dtypes: hook_bytes is float with NaN for exact)
    frame = pd.DataFrame([row for f in frames for row in f.to_dict("records")])
    # atomic writes: a killed run never leaves a half-written table or figure
    with atomic_path(out / "ddp_history.csv") as tmp:
        frame.to_csv(tmp, index=False)
    with atomic_path(out / "ddp.png") as tmp:
        plot_ddp(frame, tmp)
    last = frame[frame.step == frame.step.max()]
    summary = last.groupby("label", sort=False).agg(
        test_acc_mean=("test_acc", "mean"),
        test_acc_min=("test_acc", "min"),
        drift=("drift", "max"),
        hook_bytes=("hook_bytes", "max"),
    )
    with atomic_path(out / "ddp_summary.csv") as tmp:
        summary.to_csv(tmp)
    base = summary.iloc[0]["test_acc_mean"]
    exact = summary.loc["CERAR exact, c = 4"]
    ok = bool(exact["drift"] < 1e-3 and abs(exact["test_acc_mean"] - base) < 0.02)
    text = (
        "DDP on digits, N = 4 gloo ranks, final step: accuracy of the replicas, replica drift "
        "max_ij ||theta_i - theta_j||, bytes sent by each rank's hook\n"
        + summary.to_string(float_format=lambda x: f"{x:.4g}")
    )
    figures = {
        "ddp.png": "DDP on digits, 4 gloo ranks: test accuracy, its difference to exact all-reduce, and replica "
        "drift vs step, for exact all-reduce and the CERAR designs"
    }
    return {"ok": ok, "files": ["ddp_history.csv", "ddp_summary.csv", "ddp.png"], "figures": figures, "text": text}
