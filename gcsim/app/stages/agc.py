"""The ``agc`` stage of ``gcsim reproduce``: error curves with bounds, and the exact-family instability study."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..._optional import require
from ...io.manifest import atomic_path
from ...sweep import run_sweep


def agc_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """Error curves of the named experiments (one task each on ``scheduler``) and the instability study."""
    require("pandas", "plots", "gcsim.app.stages.agc.agc_stage")
    import pandas as pd

    from ...coding.experiments import (
        error_curves,
        exact_family_instability,
        named_experiments,
        plot_error_curves,
        plot_instability,
    )

    # the interval's unit is the encoder draw (theory §57.10): many draws, fewer patterns each
    samples, seeds = (200, 50) if full else (15, 20)
    frames, files, lines = [], [], []
    figures: dict[str, str] = {}  # figure -> its line in the results index
    specs = named_experiments(full=full)
    serial = scheduler == "serial"
    # each experiment is independent and carries its seed: one task each, the same tables anywhere
    curves = functools.partial(error_curves, samples=samples, seeds=seeds, seed=seed, progress=progress and serial)
    computed = run_sweep(curves, specs, scheduler=scheduler, progress=progress and not serial, desc="agc curves")
    for spec, frame in zip(specs, computed, strict=True):
        # atomic writes: a killed run never leaves a half-written table or figure
        with atomic_path(out / f"{spec.name}.csv") as tmp:
            frame.to_csv(tmp, index=False)
        with atomic_path(out / f"{spec.name}.png") as tmp:
            plot_error_curves(frame, spec.title, tmp)
        files += [f"{spec.name}.csv", f"{spec.name}.png"]
        figures[f"{spec.name}.png"] = f"{spec.title}: normalized expected optimal error with its bounds"
        frames.append(frame)
        sub = frame[frame.sweep == "s"]
        table = sub.pivot_table(index="x", columns="curve", values="mean", sort=False)
        lines.append(
            f"{spec.title}\n  normalized expected optimal error err/(mN), {samples} patterns x {seeds} "
            f"encoder draws per point\n" + table.round(4).to_string()
        )
    # bound check on every point: lower <= scheme curves <= upper (means)
    violations = []
    for frame in frames:
        for (sweep, x), g in frame.groupby(["sweep", "x"]):
            lower = g[g.kind == "lower"]["mean"].max()
            for _, row in g[g.kind.isin(["scheme", "baseline"])].iterrows():
                if row["mean"] < lower - 1e-9:
                    violations.append((row["instance"], sweep, x, row["curve"], "below the rank lower bound"))
            for _, up in g[g.kind == "upper"].iterrows():
                label = up["curve"].removeprefix("upper bound (").removesuffix(")")
                sch = g[g.curve == label]
                # the upper bound holds in expectation: compare CIs, not single draws
                if len(sch) and sch["ci_low"].iloc[0] > up["ci_high"] + 1e-9:
                    violations.append((up["instance"], sweep, x, label, "above its upper bound"))
    inst = exact_family_instability(
        n_values=(8, 12, 16, 20, 24, 28, 32) if not full else tuple(range(6, 41, 2)), seed=seed
    )
    with atomic_path(out / "exact_family_instability.csv") as tmp:
        inst.to_csv(tmp, index=False)
    with atomic_path(out / "exact_family_instability.png") as tmp:
        plot_instability(inst, tmp)
    files += ["exact_family_instability.csv", "exact_family_instability.png"]
    figures["exact_family_instability.png"] = (
        "Exact family (s = 2, m = 2): median condition number κ(H_F) and float decoding error vs n"
    )
    with atomic_path(out / "all_curves.csv") as tmp:
        pd.concat(frames).to_csv(tmp, index=False)
    files.append("all_curves.csv")
    v = inst[inst.constructible & (inst.dtype == "float32")].pivot_table(index="n", columns="H", values="error")
    lines.append(
        "Exact family, median float32 decoding error ‖B_F X − T‖²/(mN) vs n (s=2, m=2):\n"
        + v.to_string(float_format=lambda x: f"{x:.2e}")
    )
    lines.append(
        f"bound checks on all curve points: {len(violations)} violation(s)" + "".join(f"\n  {v}" for v in violations)
    )
    return {"ok": not violations, "files": files, "figures": figures, "text": "\n\n".join(lines)}
