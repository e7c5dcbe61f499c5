"""The ``cerar`` stage of ``gcsim reproduce``: rates, the error-vs-κ front, floating-point trade-off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..._optional import require
from ...io.manifest import atomic_path


def _plot_front(table, path) -> None:
    require("matplotlib", "plots", "gcsim.app.stages.cerar")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    markers = {"optimized": "o", "perturbation": ".", "vandermonde": "x"}
    for (N, c), g in table.groupby(["N", "c"]):
        for fam, h in g.groupby("family"):
            h = h.sort_values("kappa_max")
            ax.loglog(
                h["kappa_max"],
                h["frobenius"],
                marker=markers.get(fam, "."),
                ls="-" if fam == "optimized" else "none",
                label=f"{fam} (N={N}, c={c})",
            )
    ax.set_xlabel("condition number κ = max over encoders and decoders of σ_max/σ_min")
    ax.set_ylabel("Frobenius error Σ_{i,m} ‖E_{i,m}‖_F²")
    ax.set_title("CERAR: error vs condition number")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_eps(sweeps, path, N: int = 4, c: int = 8) -> None:
    require("matplotlib", "plots", "gcsim.app.stages.cerar")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6), constrained_layout=True)
    for sw in sweeps:
        ax.loglog(sw.eps, sw.error, marker="o", ms=3, label=f"{sw.dtype} (u = {sw.unit_roundoff:.1e})")
        ax.axvline(sw.predicted_eps, ls=":", color=ax.lines[-1].get_color(), lw=1)
    ax.loglog(sweeps[0].eps, sweeps[0].exact_error, "k--", lw=1, label="exact arithmetic (float64 reference)")
    ax.set_xlabel("perturbation ε")
    ax.set_ylabel("max_i ‖ĝ_i − g‖ / ‖g‖")
    ax.set_title(
        f"Perturbation design N = {N}, c = {c}: round-off vs approximation (dotted: predicted best ε = u^(1/(r*+1)))",
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cerar_stage(out: Path, full: bool, seed: int, progress: bool) -> dict[str, Any]:
    require("pandas", "plots", "gcsim.app.stages.cerar.cerar_stage")
    import pandas as pd

    from ...cerar.floating import epsilon_sweep
    from ...cerar.pareto import pareto_front
    from ...cerar.traffic import rates

    lines = []
    rows = [dict(N=N, c=c, **rates(N, c)) for N in (4, 8) for c in (N // 2, N, 2 * N, 4 * N)]
    rt = pd.DataFrame(rows)
    # atomic writes: a killed run never leaves a half-written table or figure
    with atomic_path(out / "rates.csv") as tmp:
        rt.to_csv(tmp, index=False)
    lines.append(
        "Per-worker traffic (units of d) and rounds, CERAR vs ring all-reduce\n"
        + rt[["N", "c", "rounds", "rate", "ring_rate", "byte_ratio", "storage"]].to_string(index=False)
    )

    cases = [(4, 8), (4, 12), (8, 16)] if full else [(4, 8)]
    kappas = [3.0, 10.0, 30.0, 100.0] if not full else [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0]
    fronts = []
    for N, c in cases:
        fronts.append(
            pareto_front(
                N,
                c,
                kappas,
                progress=progress,
                seed=seed,
                max_iter=25 if not full else 40,
                starts="both" if not full else "best",
            )
        )
    front = pd.concat(fronts, ignore_index=True)
    with atomic_path(out / "pareto.csv") as tmp:
        front.to_csv(tmp, index=False)
    with atomic_path(out / "pareto.png") as tmp:
        _plot_front(front, tmp)
    opt = front[front.family == "optimized"]
    cols = [
        c
        for c in (
            "N",
            "c",
            "kappa_cap",
            "kappa_max",
            "frobenius",
            "pert_frobenius_at_cap",
            "vand_frobenius_at_cap",
            "ratio_opt_pert",
        )
        if c in opt.columns
    ]
    lines.append(
        "Error vs condition-number cap (optimized vs best analytic design at equal κ)\n"
        + opt[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}")
    )

    eps = np.logspace(-7, -0.5, 14 if not full else 30)
    sweeps = [epsilon_sweep(4, 8, eps, dtype, seed=seed) for dtype in ("float64", "float32", "bfloat16")]
    with atomic_path(out / "epsilon_sweep.csv") as tmp:
        pd.DataFrame(
            [
                dict(dtype=s.dtype, eps=e, error=err, exact_error=ex, kappa=k)
                for s in sweeps
                for e, err, ex, k in zip(s.eps, s.error, s.exact_error, s.kappa, strict=True)
            ]
        ).to_csv(tmp, index=False)
    with atomic_path(out / "epsilon_sweep.png") as tmp:
        _plot_eps(sweeps, tmp)
    lines.append(
        "Floating point, perturbation design N = 4, c = 8 (r* = 1): best ε per precision\n"
        + "\n".join(
            f"  {s.dtype:<9} best ε = {s.best_eps:.2e} (predicted u^(1/2) = {s.predicted_eps:.2e}),"
            f" error there {np.min(s.error):.2e}"
            for s in sweeps
        )
    )
    files = ["rates.csv", "pareto.csv", "pareto.png", "epsilon_sweep.csv", "epsilon_sweep.png"]
    ok = bool(len(opt)) and bool(np.all(opt["frobenius"] > 0))  # exactness theorem: c > N never exact
    return {"ok": ok, "files": files, "text": "\n\n".join(lines)}
