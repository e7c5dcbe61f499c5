"""Pareto front of CERAR designs: error versus condition-number cap (theory §55).

For each (N, c), the condition-number-constrained optimizer (gcsim.cerar.optimize) runs at a
list of caps kappa (on every encoder A_j and decoder D_i); the perturbation design is swept
over eps and the real-node Vandermonde design over its node spacing; the optimized Frobenius
error is compared with the best analytic design whose kappa fits the same cap.

Run (from the repository root):

    .venv/bin/python scripts/cerar_pareto.py            # --quick (default): (4, 8), 4 caps, ~1 min
    .venv/bin/python scripts/cerar_pareto.py --full     # (4,8), (4,12), (8,16); tens of minutes
    options: --out DIR (default results/cerar_pareto/<mode>), --export DIR (catalogue the optima),
             --seed S, --no-progress

Outputs in the output folder: pareto.csv and pareto.json (tidy table, one row per design),
summary.csv (ratio optimized / perturbation at equal kappa), pareto.png (made from the saved
CSV), manifest.json (version, git SHA, seed, parameters, solver statuses, timings).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gcsim.io.manifest import atomic_write_text, dumps, provenance  # noqa: E402

QUICK = {
    "cases": [(4, 8)],
    "kappas": {(4, 8): [3.0, 10.0, 30.0, 100.0]},
    "max_iter": {(4, 8): 25},
    "starts": {(4, 8): "both"},
}
FULL = {
    "cases": [(4, 8), (4, 12), (8, 16)],
    "kappas": {
        (4, 8): [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0, 1000.0],
        (4, 12): [3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
        (8, 16): [10.0, 20.0, 50.0, 100.0],
    },
    "max_iter": {(4, 8): 40, (4, 12): 30, (8, 16): 12},
    # "both" runs the two starts per cap and keeps the better result; "best" only the one with
    # the lower starting error (half the time; used for the larger cases)
    "starts": {(4, 8): "both", (4, 12): "both", (8, 16): "best"},
}


_STARTS_NOTE = " of (analytic starts: exact when c <= N, best perturbation, best Vandermonde; previous cap's optimum)"


def run(
    mode: str, out: Path, seed: int, progress: bool, export: Path | None, cases: list[tuple[int, int]] | None = None
) -> dict:
    import pandas as pd

    from gcsim.cerar.pareto import pareto_front

    cfg = dict(QUICK if mode == "quick" else FULL)
    if cases:
        unknown = [k for k in cases if k not in cfg["kappas"]]
        if unknown:
            raise SystemExit(f"--cases {unknown} not in the {mode} configuration {cfg['cases']}")
        cfg["cases"] = cases
    tables, timings = [], {}
    res: dict = {}
    for N, c in cfg["cases"]:
        t0 = time.perf_counter()
        df = pareto_front(
            N,
            c,
            cfg["kappas"][(N, c)],
            max_iter=cfg["max_iter"][(N, c)],
            seed=seed,
            progress=progress,
            return_designs=export is not None,
            starts=cfg["starts"][(N, c)],
        )
        if export is not None:
            df, designs = df
            from gcsim.cerar.export import export_design

            for d in designs:
                export_design(d, export, overwrite=True)
        timings[f"{N},{c}"] = time.perf_counter() - t0
        tables.append(df)
        print(f"(N, c) = ({N}, {c}) done in {timings[f'{N},{c}']:.1f} s", flush=True)
        # save after every case, so an interrupted --full run keeps what it finished
        res = save(pd.concat(tables, ignore_index=True), out, mode, seed, cfg, timings)
    return res


def save(table, out: Path, mode: str, seed: int, cfg: dict, timings: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "pareto.csv", table.to_csv(index=False))
    atomic_write_text(out / "pareto.json", dumps(json.loads(table.to_json(orient="records"))))
    opt = table[table.family == "optimized"]
    summary = opt[
        [
            "N",
            "c",
            "kappa_cap",
            "kappa_max",
            "frobenius",
            "pert_frobenius_at_cap",
            "vand_frobenius_at_cap",
            "ratio_opt_pert",
            "worst_case",
            "iterations",
            "stop_reason",
            "start",
        ]
    ]
    atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    plot(out / "pareto.csv", out / "pareto.png")
    manifest = {
        "experiment": "cerar_pareto",
        "mode": mode,
        "command": " ".join([".venv/bin/python", "scripts/cerar_pareto.py", *sys.argv[1:]]),
        "seed": seed,
        "parameters": {
            "cases": cfg["cases"],
            "kappas": {f"{k[0]},{k[1]}": v for k, v in cfg["kappas"].items()},
            "starts": {f"{k[0]},{k[1]}": v + _STARTS_NOTE for k, v in cfg["starts"].items()},
            "max_iter": {f"{k[0]},{k[1]}": v for k, v in cfg["max_iter"].items()},
            "kappa_D": "same as kappa",
            "objective": "frobenius",
            "solver": "SCS",
            "solver_options": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 20000},
        },
        "cases_done": sorted({(int(n), int(c)) for n, c in zip(table.N, table.c, strict=True)}),
        "stop_reasons": opt.stop_reason.tolist(),
        "timings_s": timings,
        "files": ["pareto.csv", "pareto.json", "summary.csv", "pareto.png"],
        "provenance": provenance(),
    }
    atomic_write_text(out / "manifest.json", dumps(manifest))
    return {"summary": summary, "manifest": manifest}


def plot(csv: Path, png: Path) -> None:
    """Error vs kappa, log-log, one panel per (N, c), from the saved table."""
    import pandas as pd

    from gcsim._plotting import legend_below, new_figure

    t = pd.read_csv(csv)
    cases = sorted({(int(n), int(c)) for n, c in zip(t.N, t.c, strict=True)})
    fig, axes = new_figure(1, len(cases), figsize=(5.2 * len(cases), 4.8), squeeze=False)
    for ax, (N, c) in zip(axes[0], cases, strict=True):
        s = t[(t.N == N) & (t.c == c)]
        p = s[s.family == "perturbation"].sort_values("eps")
        v = s[s.family == "vandermonde"].sort_values("eps")
        o = s[s.family == "optimized"].sort_values("kappa_cap")
        ax.plot(
            p.kappa_max,
            p.frobenius,
            "s-",
            ms=3,
            lw=0.8,
            color="tab:orange",
            label="perturbation (sweep of $\\varepsilon$)",
        )
        if len(v):
            ax.plot(v.kappa_max, v.frobenius, "^-", ms=3, lw=0.8, color="tab:green", label="Vandermonde (real nodes)")
        ax.plot(o.kappa_max, o.frobenius, "o-", ms=5, color="tab:blue", label="optimized (achieved $\\kappa$)")
        ax.plot(
            o.kappa_cap, o.frobenius, "o", ms=7, mfc="none", color="tab:blue", alpha=0.5, label="optimized (at its cap)"
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        xmax = max(1e4, o.kappa_cap.max() * 3)
        ax.set_xlim(1, xmax)
        shown = s[(s.kappa_max <= xmax) & (s.frobenius > 0)].frobenius
        if len(shown):
            ax.set_ylim(shown.min() / 3, shown.max() * 3)
        if len(v) and v.kappa_max.min() > xmax:  # the Vandermonde family lives far to the right
            ax.text(
                0.03,
                0.03,
                f"Vandermonde: all samples have $\\kappa \\geq$ {v.kappa_max.min():.1e}\n"
                f"(best error there {v.frobenius.min():.2g}), off the chart",
                transform=ax.transAxes,
                fontsize=7,
                va="bottom",
            )
        ax.set_xlabel("condition number $\\kappa$ = max over $A_j$, $D_i$")
        ax.set_ylabel("Frobenius error $\\sum_{i,m}\\|E_{i,m}\\|_F^2$")
        ax.set_title(f"CERAR N = {N}, c = {c}")
        ax.grid(True, which="both", alpha=0.3)
    legend_below(fig, ncol=4)  # one legend under the panels: it cannot cover a curve
    png.parent.mkdir(parents=True, exist_ok=True)
    tmp = png.with_name("." + png.name + ".tmp.png")
    fig.savefig(tmp, dpi=130)
    tmp.replace(png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="small run (default)")
    g.add_argument("--full", action="store_true", help="all (N, c), all caps")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--export", type=Path, default=None, help="also export every optimum to this catalogue folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default=None, help='subset of the (N, c) cases, e.g. "4,8;8,16"')
    ap.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="merge the pareto.csv of these output folders into --out (no optimization)",
    )
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument(
        "--replot", type=Path, default=None, help="only redraw pareto.png from the pareto.csv in this folder"
    )
    args = ap.parse_args(argv)
    if args.replot is not None:
        plot(args.replot / "pareto.csv", args.replot / "pareto.png")
        print(f"redrew {args.replot / 'pareto.png'}")
        return 0
    mode = "full" if args.full else "quick"
    out = args.out or ROOT / "results" / "cerar_pareto" / mode
    if args.merge:
        import pandas as pd

        table = pd.concat([pd.read_csv(d / "pareto.csv") for d in args.merge], ignore_index=True)
        timings, parts = {}, []
        for d in args.merge:
            part = json.loads((d / "manifest.json").read_text())
            timings.update(part.get("timings_s", {}))
            parts.append(
                {
                    "folder": str(d),
                    "command": part.get("command"),
                    "git_sha": part.get("provenance", {}).get("git_sha"),
                    "created": part.get("provenance", {}).get("created"),
                }
            )
        cfg = QUICK if mode == "quick" else FULL
        res = save(table, out, mode, args.seed, cfg, timings)
        res["manifest"]["merged_from"] = parts
        atomic_write_text(out / "manifest.json", dumps(res["manifest"]))
    else:
        cases = None
        if args.cases:
            cases = [tuple(int(x) for x in part.split(",")) for part in args.cases.split(";") if part.strip()]
        res = run(mode, out, args.seed, not args.no_progress, args.export, cases)
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(res["summary"].to_string(index=False))
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
