"""The ``cerar`` stage of ``gcsim reproduce``: rates, the error-vs-κ front, floating-point trade-off."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from ..._optional import require
from ..._plotting import OFF_SCALE_FACTOR, curve_styles, legend_below, new_figure, plot_off_scale, save
from ...io.manifest import atomic_path
from ...sweep import run_sweep


def _plot_front(table, path=None):
    """Frobenius error vs κ for each family and (N, c); saves a PNG at ``path`` if given, returns the figure.

    The κ axis ends at most :data:`gcsim._plotting.OFF_SCALE_FACTOR` beyond the optimized and
    perturbation designs; Vandermonde designs with larger κ (up to 1e17) are drawn at the right
    edge (▶), their true κ range in the legend, so they do not squash the front that matters.
    """
    require("matplotlib", "plots", "gcsim.app.stages.cerar")
    fig, ax = new_figure(figsize=(6.8, 5.4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    main = table[table.family != "vandermonde"]["kappa_max"]
    # one decade of room past the main data, never more than OFF_SCALE_FACTOR
    limit = min(10.0 ** (np.ceil(np.log10(main.max())) + 1), OFF_SCALE_FACTOR * main.max()) if len(main) else np.inf
    groups = list(table.groupby(["N", "c", "family"], sort=True))
    styles = curve_styles(len(groups), points=[len(h) for _, h in groups])
    for style, ((N, c, fam), h) in zip(styles, groups, strict=True):
        # the perturbation family is a sweep of ε: connect it in ε order, not κ order
        h = h.sort_values("eps" if fam == "perturbation" and "eps" in h else "kappa_max")
        style = dict(style, linestyle="none" if fam == "vandermonde" else style["linestyle"])
        label = f"{fam} ($N$={N}, $c$={c})"
        plot_off_scale(ax, h["kappa_max"], h["frobenius"], limit=limit, label=label, what=r"$\kappa$", **style)
    ax.set_xlabel(r"condition number $\kappa = \max\ \sigma_{\max}/\sigma_{\min}$ over encoders and decoders")
    ax.set_ylabel(r"Frobenius error $\sum_{i,m} \|E_{i,m}\|_F^2$")
    ax.set_title("CERAR: error vs condition number")
    ax.grid(alpha=0.3, which="both")
    legend_below(fig, ncol=1)
    if path is not None:
        save(fig, path)
    return fig


def _plot_eps(sweeps, path=None, N: int = 4, c: int = 8):
    """Decoding error vs ε per precision; saves a PNG at ``path`` if given, returns the figure.

    In float64 the error equals the exact-arithmetic error at every ε: that curve is drawn wide
    underneath and the exact reference as a thin black dashed line on top, so both show.
    """
    require("matplotlib", "plots", "gcsim.app.stages.cerar")
    from matplotlib.lines import Line2D

    fig, ax = new_figure(figsize=(6.8, 5.6))
    styles = curve_styles(len(sweeps) + 1, points=max(len(sw.eps) for sw in sweeps))
    for sw, style in zip(sweeps, styles, strict=False):
        ax.loglog(sw.eps, sw.error, label=f"{sw.dtype} ($u$ = {sw.unit_roundoff:.1e})", **style)
        ax.axvline(sw.predicted_eps, ls=":", color=style["color"], lw=1)
    exact = dict(styles[-1], color="k", linestyle="--", marker="none")
    ax.loglog(sweeps[0].eps, sweeps[0].exact_error, label="exact arithmetic (float64 reference)", **exact)
    predicted = Line2D([], [], color="0.4", ls=":", lw=1, label=r"predicted best $\varepsilon = u^{1/(r^*+1)}$")
    ax.set_xlabel(r"perturbation $\varepsilon$")
    ax.set_ylabel(r"$\max_i \|\hat g_i - g\| / \|g\|$")
    ax.set_title(f"Perturbation design $N$ = {N}, $c$ = {c}: round-off vs approximation")
    ax.grid(alpha=0.3, which="both")
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, [*handles, predicted], [*labels, predicted.get_label()], ncol=2)
    if path is not None:
        save(fig, path)
    return fig


def _front(kappas: list[float], seed: int, full: bool, progress: bool, case: tuple[int, int]):
    """The Pareto front of one ``(N, c)`` (a task of the stage)."""
    from ...cerar.pareto import pareto_front

    N, c = case
    return pareto_front(
        N,
        c,
        kappas,
        progress=progress,
        seed=seed,
        max_iter=25 if not full else 40,
        starts="both" if not full else "best",
    )


def cerar_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """Traffic rates, the error-vs-κ fronts and the ε sweeps; the fronts of the ``(N, c)`` cases and the
    ε sweeps of the three precisions are tasks on ``scheduler`` (the same tables on every scheduler,
    except the measured ``time_s`` of the fronts)."""
    require("pandas", "plots", "gcsim.app.stages.cerar.cerar_stage")
    import pandas as pd

    from ...cerar.floating import epsilon_sweep
    from ...cerar.traffic import rates

    serial = scheduler == "serial"
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
    fronts = run_sweep(
        functools.partial(_front, kappas, seed, full, progress and serial),
        cases,
        scheduler=scheduler,
        progress=progress and not serial,
        desc="Pareto fronts",
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
    sweeps = run_sweep(
        functools.partial(epsilon_sweep, 4, 8, eps, seed=seed),
        ["float64", "float32", "bfloat16"],
        scheduler=scheduler,
        progress=False,
    )
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
    figures = {
        "pareto.png": "CERAR: Frobenius error vs condition number κ, optimized designs against the analytic ones",
        "epsilon_sweep.png": "CERAR perturbation design N = 4, c = 8: relative error vs ε in float64, float32 "
        "and bfloat16, with the predicted best ε",
    }
    return {"ok": ok, "files": files, "figures": figures, "text": "\n\n".join(lines)}
