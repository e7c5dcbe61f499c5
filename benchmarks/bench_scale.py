"""Scaling benchmark (#22): time and peak memory against n for each evaluation route.

Workload: the projective planes PG(2, q) (symmetric (q²+q+1, q+1, 1) designs), q = 9, 31, 47, 97, 173
(n = 91, 993, 2,257, 9,507, 30,103 workers), m = 2, RD(0), seed 0, Bernoulli(p = 0.1) stragglers.
Routes:

* ``structured`` (theory §42): the encoder from the sparse incidence (``encode_structured``: exact
  pair check included), then ``P`` streamed Bernoulli patterns, then the stratified expected error
  with ``--samples`` draws (its relative 95% half-width is reported);
* ``downdate`` and ``svd`` (theory §40.3, the dense routes ``auto`` used before): the dense ``B``, its
  SVD (setup) and a few patterns each, only where ``B`` fits ``MAX_DENSE_ENTRIES`` (n <= 2,257).

``--sparse`` measures the sparse route of theory §44 on a non-BIBD family instead: the lattice (rook's)
graphs L(q) = SRG(q², 2(q − 1), q − 2, 2) with the closed assignment, q = 10, 32, 47, 100 (n = 100, 1,024,
2,209, 10,000 workers), built sparsely (``lattice_graph_sparse``, exact sparse ``verify()``), encoded by
``encode_sparse`` (the bound c from the SRG spectrum), ``P`` streamed patterns, the stratified expected
error, and the column-deletion route on a few patterns where ``B`` fits.  Its rows go to
``sparse_rows`` of the same JSON (the PG rows are kept), its line to the same figure.

``--singer`` builds the planes as developed Singer difference sets instead (``circulant_incidence``: no
block list; the exact pair check in ``O(nnz + k²)``, theory §10.8 Lemma 9a), q = 31, 97, 173, 317 (up to
n = 100,807 workers), and for q <= 97 compares their streamed errors with the planes from ``pg_flats``
(Theorem 49.5: the same (N, k, λ) and diagonals give the same errors).  Rows go to ``singer_rows``.

Per design: setup time, time per pattern and peak traced memory (``tracemalloc``: NumPy's buffers
included) of each route, the largest relative difference between the structured and the dense
values on the same patterns, and log-log slopes of the time per pattern against n.  Ratios are
taken against the structured route in the same run; nothing here is a timed test.

Usage::

    .venv/bin/python benchmarks/bench_scale.py            # full run (several minutes on 2 cores)
    .venv/bin/python benchmarks/bench_scale.py --quick    # q = 9, 31 only
    .venv/bin/python benchmarks/bench_scale.py --sparse --samples 300   # L(q), the sparse route
    .venv/bin/python benchmarks/bench_scale.py --singer   # PG(2, q) as Singer sets, up to 100,807 workers

Writes ``benchmarks/results/scale.json`` (atomically) and ``benchmarks/results/scale.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gcsim  # noqa: E402
from gcsim.catalogue import export_object, load_object  # noqa: E402
from gcsim.coding.evaluate import expected_error, optimal_error  # noqa: E402
from gcsim.coding.kernels import eval_context  # noqa: E402
from gcsim.coding.schemes import encode  # noqa: E402
from gcsim.coding.sparse_routes import encode_sparse, lattice_graph_sparse  # noqa: E402
from gcsim.coding.stragglers import straggler_model  # noqa: E402
from gcsim.coding.structured import encode_structured, stream_errors  # noqa: E402
from gcsim.combinatorics.cyclic_design import CyclicDesign  # noqa: E402
from gcsim.combinatorics.difference_families import circulant_incidence, singer_difference_set  # noqa: E402
from gcsim.combinatorics.geometries import pg_flats  # noqa: E402
from gcsim.limits import MAX_DENSE_ENTRIES  # noqa: E402

M = 2
P_BERNOULLI = 0.1


CPU: dict[int, float] = {}  # id of the last result -> its CPU seconds (the VM is shared: wall is not enough)


def measured(fn, *args, trace=True, **kw):
    """(result, wall seconds, peak traced bytes) of one call; CPU seconds in ``CPU[id(result)]``.

    ``trace=False`` skips tracemalloc (its bookkeeping slows Python-heavy code such as the block
    construction several-fold); the peak is then None.
    """
    if trace:
        tracemalloc.start()
        tracemalloc.reset_peak()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    if trace:
        tracemalloc.stop()
    CPU[id(out)] = dc
    return out, dt, peak


def dense_patterns(n: int) -> int:
    """Patterns the dense routes get (their per-pattern cost grows like n³)."""
    return 400 if n <= 100 else 20 if n <= 1000 else 3


def structured_record(enc, model, setup: tuple, streamed: tuple, patterns: int, samples: int) -> dict:
    """The structured route's record: setup and streamed-pattern costs, then the stratified expected error.

    ``setup`` and ``streamed`` are ``(wall seconds, peak traced bytes, CPU seconds)``.
    """
    (t_enc, mem_enc, cpu_enc), (t_eval, mem_eval, cpu_eval) = setup, streamed
    res, t_mc, _ = measured(expected_error, enc, model, samples=samples, seed=0, progress=False, trace=False)
    half = (res.ci[1] - res.ci[0]) / 2
    return {
        "setup_seconds": t_enc,
        "setup_cpu_seconds": cpu_enc,
        "setup_peak_bytes": mem_enc,
        "patterns": patterns,
        "per_pattern_seconds": t_eval / patterns,
        "per_pattern_cpu_seconds": cpu_eval / patterns,
        "peak_bytes": max(mem_enc, mem_eval),
        "expected_error": {
            "mean": res.mean,
            "ci": list(res.ci),
            "relative_half_width": half / res.mean,
            "count": res.count,
            "seconds": t_mc,
            "cpu_seconds": CPU[id(res)],
        },
    }


def one_design(q: int, patterns: int, samples: int) -> dict:
    v = q * q + q + 1
    row: dict = {"q": q, "n": v, "m": M}
    blocks, t_build, _ = measured(pg_flats, 2, q, trace=False)
    row["build"] = {"seconds": t_build, "cpu_seconds": CPU[id(blocks)]}
    enc, t_enc, mem_enc = measured(encode_structured, blocks, M, seed=0, points=v)
    model = straggler_model("bernoulli", v, p=P_BERNOULLI)
    cpu_enc = CPU[id(enc)]
    vals, t_eval, mem_eval = measured(stream_errors, enc.context, model, patterns, 1)
    cpu_eval = CPU[id(vals)]
    setup, streamed = (t_enc, mem_enc, cpu_enc), (t_eval, mem_eval, cpu_eval)
    row["structured"] = structured_record(enc, model, setup, streamed, patterns, samples)
    row["structured"]["bound_over_mN"] = enc.context.bound_full / enc.context.total
    if M * v * v > MAX_DENSE_ENTRIES:
        row["dense"] = f"not run: B would be {M * v} x {v} = {M * v * v:,} entries > MAX_DENSE_ENTRIES"
        return row
    D = gcsim.bibd(v, q + 1, 1)
    sch = encode(D, M, "rd", seed=0)
    assert np.array_equal(sch.B, enc.B), "encode_structured must give encode's B"
    ctx, t_ctx, mem_ctx = measured(eval_context, sch)
    cpu_ctx = CPU[id(ctx)]
    P = dense_patterns(v)
    masks = model.sample(P, 1)
    struct_vals = enc.context.errors(masks)  # the first P streamed patterns (Lemma 42.3), as one batch
    for route in ("downdate", "svd"):
        got, t_r, mem_r = measured(optimal_error, sch, masks, method=route, progress=False)
        cpu_r = CPU[id(got)]
        rel = float(np.max(np.abs(got - struct_vals) / np.maximum(got, 1e-300)))
        row[route] = {
            "setup_seconds": t_ctx,
            "setup_cpu_seconds": cpu_ctx,
            "setup_peak_bytes": mem_ctx,
            "patterns": P,
            "per_pattern_seconds": t_r / P,
            "per_pattern_cpu_seconds": cpu_r / P,
            "peak_bytes": max(mem_ctx, mem_r),
            "max_relative_difference_to_structured": rel,
        }
    return row


def _circulant_plane(q: int):
    D = singer_difference_set(2, q)
    return circulant_incidence(q * q + q + 1, D)


def cyclic_export_record(q: int) -> dict:
    """The encoder kept as its difference set (layout "cyclic"): export and fully verified load, timed."""
    enc = encode_structured(CyclicDesign(q * q + q + 1, singer_difference_set(2, q)), M, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        stem = export_object(enc, tmp, "code").with_suffix("")
        t_export = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
        t0 = time.perf_counter()
        back = load_object(stem)  # verify=True: the difference set recounted, the diagonals drawn again
        t_load = time.perf_counter() - t0
    assert back.diagonals.tobytes() == enc.diagonals.tobytes()
    layout = enc.bundle_metadata()["layout"]
    return {"layout": layout, "export_seconds": t_export, "bytes": size, "load_seconds": t_load}


def one_singer(q: int, patterns: int, samples: int, compare_flats: bool) -> dict:
    """PG(2, q) as a developed Singer set (circulant incidence, Lemma 9a's O(nnz + k²) pair check), m = 2, RD(0)."""
    v = q * q + q + 1
    row: dict = {"family": f"PG(2,{q}) Singer", "q": q, "n": v, "m": M}
    S, t_build, _ = measured(_circulant_plane, q, trace=False)
    row["build"] = {"seconds": t_build, "cpu_seconds": CPU[id(S)], "stored_entries": int(S.nnz)}
    enc, t_enc, mem_enc = measured(encode_structured, S, M, seed=0)
    cpu_enc = CPU[id(enc)]
    model = straggler_model("bernoulli", v, p=P_BERNOULLI)
    vals, t_eval, mem_eval = measured(stream_errors, enc.context, model, patterns, 1)
    cpu_eval = CPU[id(vals)]
    setup, streamed = (t_enc, mem_enc, cpu_enc), (t_eval, mem_eval, cpu_eval)
    row["structured"] = structured_record(enc, model, setup, streamed, patterns, samples)
    row["export"] = cyclic_export_record(q)
    if compare_flats:  # the same plane from its flats: the same (N, k, λ) and diagonals, so the same errors
        flats = encode_structured(pg_flats(2, q), M, seed=0, points=v)
        other = stream_errors(flats.context, model, patterns, 1)
        row["max_relative_difference_to_flats"] = float(np.max(np.abs(other - vals) / np.maximum(other, 1e-300)))
    return row


def main_singer(args) -> None:
    qs = args.q or [31, 97, 173, 317]
    one_singer(3, 50, 200, False)  # warm-up (not timed)
    rows = []
    for q in qs:
        row = one_singer(q, args.patterns, args.samples, compare_flats=q <= 97)
        rows.append(row)
        s = row["structured"]
        cmp = row.get("max_relative_difference_to_flats")
        print(
            f"n = {row['n']:7d}  build {row['build']['seconds']:6.2f} s  setup {s['setup_seconds']:6.2f} s, "
            f"{s['per_pattern_cpu_seconds'] * 1e6:8.1f} µs CPU/pattern, E[err] = {s['expected_error']['mean']:.7g} "
            f"± {s['expected_error']['relative_half_width']:.1e} rel in {s['expected_error']['seconds']:.1f} s"
            + ("" if cmp is None else f"; vs the flats' plane: max rel diff {cmp:.1e}")
            + f"; export {row['export']['export_seconds']:.2f} s, {row['export']['bytes']:,} bytes, "
            f"verified load {row['export']['load_seconds']:.2f} s",
            flush=True,
        )
    data = json.loads(args.out.read_text()) if args.out.exists() else {"benchmark": "scale"}
    data["singer_rows"] = rows
    pts = [(r["n"], r["structured"]["per_pattern_cpu_seconds"]) for r in rows]
    data["slopes_time_per_pattern_singer"] = slope([n for n, _ in pts], [t for _, t in pts])
    data["singer_workload"] = (
        f"PG(2,q) as circulant Singer incidences, m = {M}, RD(0) seed 0, Bernoulli(p = {P_BERNOULLI}), "
        f"{args.patterns} streamed patterns, {args.samples} draws"
    )
    data["singer_date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    write_json(data, args.out)
    print("log-log slope of CPU time per pattern against n (Singer):", data["slopes_time_per_pattern_singer"])
    print(f"wrote {args.out}")


def one_lattice(q: int, patterns: int, samples: int) -> dict:
    """The sparse route (theory §44) on L(q), closed assignment, m = 2, RD(0) seed 0, Bernoulli(0.1)."""
    v = q * q
    row: dict = {"family": f"L({q})", "q": q, "n": v, "m": M}
    g, t_build, _ = measured(lattice_graph_sparse, q, trace=False)
    _, t_verify, _ = measured(g.verify, trace=False)
    row["build"] = {"seconds": t_build, "verify_seconds": t_verify, "params": list(g.params)}
    enc, t_enc, mem_enc = measured(encode_sparse, g, M, seed=0)
    cpu_enc = CPU[id(enc)]
    model = straggler_model("bernoulli", v, p=P_BERNOULLI)
    vals, t_eval, mem_eval = measured(stream_errors, enc.context, model, patterns, 1)
    cpu_eval = CPU[id(vals)]
    res, t_mc, mem_mc = measured(expected_error, enc, model, samples=samples, seed=0, progress=False)
    half = (res.ci[1] - res.ci[0]) / 2
    row["sparse"] = {
        "setup_seconds": t_enc,
        "setup_cpu_seconds": cpu_enc,
        "setup_peak_bytes": mem_enc,
        "lower_bound_c": enc.context.lower,
        "patterns": patterns,
        "per_pattern_seconds": t_eval / patterns,
        "per_pattern_cpu_seconds": cpu_eval / patterns,
        "peak_bytes": max(mem_enc, mem_eval),
        "cg_iterations_last_batch": enc.context.last_iterations,
        "expected_error": {
            "mean": res.mean,
            "ci": list(res.ci),
            "relative_half_width": half / res.mean,
            "count": res.count,
            "seconds": t_mc,
            "cpu_seconds": CPU[id(res)],
            "peak_bytes": mem_mc,
        },
    }
    if M * v * v > MAX_DENSE_ENTRIES:
        row["dense"] = f"not run: B would be {M * v} x {v} = {M * v * v:,} entries > MAX_DENSE_ENTRIES"
        return row
    P = dense_patterns(v)
    masks = model.sample(P, 1)
    sparse_vals = enc.context.errors(masks)
    ctx, t_ctx, mem_ctx = measured(eval_context, enc)
    got, t_r, mem_r = measured(optimal_error, enc, masks, method="downdate", progress=False)
    row["downdate"] = {
        "setup_seconds": t_ctx,
        "setup_cpu_seconds": CPU[id(ctx)],
        "setup_peak_bytes": mem_ctx,
        "patterns": P,
        "per_pattern_seconds": t_r / P,
        "per_pattern_cpu_seconds": CPU[id(got)] / P,
        "peak_bytes": max(mem_ctx, mem_r),
        "max_relative_difference_to_sparse": float(np.max(np.abs(got - sparse_vals) / np.maximum(got, 1e-300))),
    }
    return row


def main_sparse(args) -> None:
    qs = args.q or [10, 32, 47, 100]
    one_lattice(4, 20, 200)  # warm-up (not timed)
    data = json.loads(args.out.read_text()) if args.out.exists() else {"rows": []}
    rows: list[dict] = []
    for q in qs:
        row = one_lattice(q, args.patterns, args.samples)
        rows.append(row)
        s = row["sparse"]
        e = s["expected_error"]
        line = (
            f"L({q}) n = {row['n']:6d}  build+verify {row['build']['seconds'] + row['build']['verify_seconds']:6.2f} s"
            f"  sparse: setup {s['setup_seconds']:6.2f} s, {s['per_pattern_cpu_seconds'] * 1e3:8.2f} ms CPU/pattern, "
            f"E[err] = {e['mean']:.6g} (95% CI {e['ci'][0]:.6g} .. {e['ci'][1]:.6g}, rel half-width "
            f"{e['relative_half_width']:.1e}, {e['count']} patterns) in {e['seconds']:.1f} s wall, "
            f"{e['cpu_seconds']:.1f} s CPU, peak {e['peak_bytes'] / 2**20:.0f} MiB"
        )
        if isinstance(row.get("downdate"), dict):
            d = row["downdate"]
            line += (
                f"; downdate: setup {d['setup_seconds']:.2f} s, "
                f"{d['per_pattern_cpu_seconds'] * 1e3:.2f} ms CPU/pattern, "
                f"max rel diff {d['max_relative_difference_to_sparse']:.1e}"
            )
        print(line, flush=True)
        data["sparse_rows"] = rows
        pts = [(r["n"], r["sparse"]["per_pattern_cpu_seconds"]) for r in rows]
        data["slopes_time_per_pattern_sparse"] = slope([n for n, _ in pts], [t for _, t in pts])
        data["sparse_workload"] = (
            f"L(q) closed, m = {M}, RD(0) seed 0, Bernoulli(p = {P_BERNOULLI}), {args.samples} draws"
        )
        data["sparse_date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        write_json(data, args.out)
    print("log-log slope of CPU time per pattern against n (sparse):", data["slopes_time_per_pattern_sparse"])
    try:
        figure(data.get("rows", []), args.out.with_suffix(".png"), rows)
    except ImportError:
        print("matplotlib not installed: no figure (pip install 'gcsim[plots]')")
    print(f"wrote {args.out}")


def slope(ns: list[int], ts: list[float]) -> float | None:
    if len(ns) < 2:
        return None
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def figure(rows: list[dict], path: Path, sparse_rows: list[dict] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for route, style in (("structured", "o-"), ("downdate", "s--"), ("svd", "^:")):
        pts = [(r["n"], r[route]) for r in rows if isinstance(r.get(route), dict)]
        if not pts:
            continue
        ns = [n for n, _ in pts]
        ax[0].loglog(ns, [d["per_pattern_cpu_seconds"] for _, d in pts], style, label=route)
        ax[1].loglog(ns, [d["peak_bytes"] / 2**20 for _, d in pts], style, label=route)
    sparse_rows = sparse_rows or []
    if sparse_rows:
        ns = [r["n"] for r in sparse_rows]
        ax[0].loglog(
            ns, [r["sparse"]["per_pattern_cpu_seconds"] for r in sparse_rows], "D-", label="sparse (L(q), §44)"
        )
        ax[1].loglog(ns, [r["sparse"]["peak_bytes"] / 2**20 for r in sparse_rows], "D-", label="sparse (L(q), §44)")
    ax[0].set(xlabel="workers n", ylabel="CPU seconds per pattern", title="time per pattern (m = 2, RD)")
    ax[1].set(xlabel="workers n", ylabel="peak traced MiB", title="peak memory (setup + patterns)")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="q = 9, 31 only")
    ap.add_argument("--patterns", type=int, default=2000, help="streamed patterns of the structured route")
    ap.add_argument("--samples", type=int, default=2000, help="Monte Carlo draws of the expected error")
    ap.add_argument("--q", type=int, nargs="*", help="orders of the planes (default 9 31 47 97 173)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    ap.add_argument("--sparse", action="store_true", help="the sparse route on L(q) (theory §44)")
    ap.add_argument(
        "--singer", action="store_true", help="PG(2, q) as circulant Singer incidences (default q 31 97 173 317)"
    )
    args = ap.parse_args()
    if args.sparse:
        main_sparse(args)
        return
    if args.singer:
        main_singer(args)
        return
    qs = args.q or ([9, 31] if args.quick else [9, 31, 47, 97, 173])
    one_design(3, 50, 200)  # warm-up: imports, numba's compiled loops, scipy.stats (not timed)
    rows = []
    for q in qs:
        row = one_design(q, args.patterns, args.samples)
        rows.append(row)
        s = row["structured"]
        line = (
            f"n = {row['n']:6d}  build {row['build']['seconds']:7.2f} s  structured: setup "
            f"{s['setup_seconds']:6.2f} s, {s['per_pattern_cpu_seconds'] * 1e6:8.1f} µs CPU/pattern, "
            f"E[err] = {s['expected_error']['mean']:.6g} ± {s['expected_error']['relative_half_width']:.1e} rel "
            f"in {s['expected_error']['seconds']:.1f} s"
        )
        for route in ("downdate", "svd"):
            if isinstance(row.get(route), dict):
                d = row[route]
                line += (
                    f"; {route}: setup {d['setup_seconds']:.2f} s, "
                    f"{d['per_pattern_cpu_seconds'] * 1e3:.2f} ms CPU/pattern "
                    f"({d['per_pattern_cpu_seconds'] / s['per_pattern_cpu_seconds']:.0f}x), "
                    f"max rel diff {d['max_relative_difference_to_structured']:.1e}"
                )
        print(line, flush=True)
        save(rows, args.out)  # after every design: a long run keeps what it measured
    slopes = save(rows, args.out)
    print(
        "log-log slopes of CPU time per pattern against n:",
        {k: None if v is None else round(v, 2) for k, v in slopes.items()},
    )
    try:
        old = json.loads(args.out.read_text()).get("sparse_rows") if args.out.exists() else None
        figure(rows, args.out.with_suffix(".png"), old)
    except ImportError:
        print("matplotlib not installed: no figure (pip install 'gcsim[plots]')")
    print(f"wrote {args.out}")


def save(rows: list[dict], out: Path) -> dict:
    """Write the JSON (atomically) and return the log-log slopes of CPU time per pattern against n."""
    slopes = {}
    for route in ("structured", "downdate", "svd"):
        pts = [(r["n"], r[route]["per_pattern_cpu_seconds"]) for r in rows if isinstance(r.get(route), dict)]
        slopes[route] = slope([n for n, _ in pts], [t for _, t in pts])
    previous = json.loads(out.read_text()) if out.exists() else {}
    data = {
        "benchmark": "scale",
        "workload": f"PG(2,q), m = {M}, RD(0) seed 0, Bernoulli(p = {P_BERNOULLI})",
        "rows": rows,
        "slopes_time_per_pattern": slopes,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    for key in ("sparse_rows", "slopes_time_per_pattern_sparse", "sparse_workload", "sparse_date"):
        if key in previous:  # the --sparse run's rows are kept
            data[key] = previous[key]
    write_json(data, out)
    return slopes


def write_json(data: dict, out: Path) -> None:
    """Write ``data`` to ``out`` atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".scale-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
