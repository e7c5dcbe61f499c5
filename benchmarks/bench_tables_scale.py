"""Decoder tables at cluster scale (#22 item 4): time and peak memory of structured tables.

Workload: the projective planes PG(2, q), m = 2, RD(0), seed 0; for each q two tables:

* ``s<=1``: every pattern of at most one straggler (``s_max=1``: n + 1 patterns, no masks stored);
* ``bernoulli``: ``--patterns`` distinct Bernoulli(0.1) patterns (an explicit list, packed masks).

For each table: build time, certification time (``verification_report``: Theorem 47.7b on every
row), export, ``load_decoder_table`` (checksum, exact ``AᵀA`` check of the stored incidence and every
row certified again) and one ``decode`` of random transmissions; peak traced memory (``tracemalloc``,
NumPy's buffers included) per step and the process's peak RSS.  Baselines in the same run: the
error-only evaluation of the same masks (``StructuredContext.errors``: the table's extra cost is
the gains), and, where the dense route fits (q = 13 every pattern; q = 31 a sample), the dense SVD
table on the same patterns, with the largest relative difference of decoders and errors.

Usage::

    .venv/bin/python benchmarks/bench_tables_scale.py              # q = 13, 31, 97 (a few minutes)
    .venv/bin/python benchmarks/bench_tables_scale.py --q 13 31    # the small ones only

Writes ``benchmarks/results/tables_scale.json`` atomically.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_scale  # noqa: E402

import gcsim  # noqa: E402
from gcsim.coding.decoder_table import decoder_table, load_decoder_table  # noqa: E402
from gcsim.coding.schemes import encode  # noqa: E402
from gcsim.coding.structured import encode_structured  # noqa: E402

M = 2
P_BERNOULLI = 0.1


def measured(fn, *args, trace=True, **kw):
    """(result, wall seconds, CPU seconds, peak traced MiB or None) of one call (``bench_scale.measured``)."""
    out, dt, peak = bench_scale.measured(fn, *args, trace=trace, **kw)
    return out, dt, bench_scale.CPU.pop(id(out), None), None if peak is None else peak / 2**20


def bernoulli_masks(n: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    masks = np.unique(rng.random((count, n)) >= P_BERNOULLI, axis=0)
    while masks.shape[0] < count:  # distinct patterns (a repeat is refused by the table)
        masks = np.unique(np.concatenate([masks, rng.random((count, n)) >= P_BERNOULLI]), axis=0)
    return masks[:count]


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-300))


def one_table(enc, name: str, kwargs: dict, folder: Path) -> dict:
    row: dict = {"table": name}
    table, row["build_s"], row["build_cpu_s"], row["build_peak_mib"] = measured(decoder_table, enc, **kwargs)
    row["patterns"] = len(table)
    rep, row["verify_s"], _, row["verify_peak_mib"] = measured(table.verification_report)
    row["verify_checked"], row["max_gain_relerr"] = rep["checked"], rep["max_gain_relerr"]
    path, row["export_s"], _, _ = measured(table.export, folder / name, trace=False)
    row["bundle_mib"] = sum(p.stat().st_size for p in folder.glob(f"{name}.*")) / 2**20
    loaded, row["load_s"], _, row["load_peak_mib"] = measured(load_decoder_table, path)
    assert np.array_equal(loaded.gains, table.gains) and np.array_equal(loaded.errors, table.errors)
    mk = table.pattern(len(table) - 1)
    g = np.random.default_rng(0).standard_normal((enc.n, 4))
    est, row["decode_s"], _, _ = measured(loaded.decode, mk, g, trace=False)
    row["decode_shape"] = list(est.shape)
    row["errors_only_s"] = 0.0
    for _, masks in table.iter_patterns(512):
        row["errors_only_s"] += measured(enc.context.errors, masks, trace=False)[1]
    row["build_over_errors_only"] = row["build_s"] / max(row["errors_only_s"], 1e-9)
    row["max_error_normalized"] = float(table.errors.max() / (M * enc.num_parts))
    return row


def dense_check(design, enc, masks: np.ndarray) -> dict:
    dense = encode(design, M, "rd", seed=0)
    st, t_st, _, _ = measured(decoder_table, enc, patterns=masks, trace=False)
    dt, t_dt, _, _ = measured(decoder_table, dense, patterns=masks, trace=False)
    return {
        "patterns": int(masks.shape[0]),
        "structured_s": t_st,
        "dense_s": t_dt,
        "dense_over_structured": t_dt / max(t_st, 1e-9),
        "max_rel_diff_decoders": rel_diff(st.decoders, dt.decoders),
        "max_rel_diff_errors": float(np.max(np.abs(st.errors - dt.errors) / dt.errors)),
    }


def one_design(q: int, patterns: int, folder: Path) -> dict:
    n = q * q + q + 1
    out: dict = {"q": q, "n": n, "m": M}
    design, out["design_s"], out["design_cpu_s"], _ = measured(gcsim.bibd, n, q + 1, 1, trace=False)
    out["design_sparse"] = bool(design.is_sparse)
    enc, out["encode_s"], _, out["encode_peak_mib"] = measured(encode_structured, design, M, seed=0)
    masks = bernoulli_masks(n, patterns, seed=q)
    decoder_table(enc, patterns=masks[:1])  # warm-up: imports and first-call costs out of the timings
    out["tables"] = [
        one_table(enc, "s_le_1", {"s_max": 1}, folder),
        one_table(enc, "bernoulli", {"patterns": masks}, folder),
    ]
    if q <= 13:
        out["dense_check"] = dense_check(design, enc, np.concatenate([masks[:200], np.eye(n, dtype=bool) ^ True]))
    elif M * n * n <= gcsim.limits.MAX_DENSE_ENTRIES:  # q = 31: a sample (one SVD of 1,986 x ~990 each)
        out["dense_check"] = dense_check(design, enc, np.concatenate([masks[:20], ~np.eye(n, dtype=bool)[:20]]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--q", type=int, nargs="+", default=[13, 31, 97])
    ap.add_argument("--patterns", type=int, default=1000, help="Bernoulli(0.1) patterns per design")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tables_scale.json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for q in args.q:
            folder = Path(tmp) / f"q{q}"
            folder.mkdir()
            row = one_design(q, args.patterns, folder)
            rows.append(row)
            for t in row["tables"]:
                print(
                    f"PG(2,{q}) n={row['n']:>5} {t['table']:>9}: {t['patterns']:>5} patterns, "
                    f"build {t['build_s']:.2f} s "
                    f"(peak {t['build_peak_mib']:.1f} MiB, {t['build_over_errors_only']:.2f}x errors only), "
                    f"verify {t['verify_s']:.2f} s, load+verify {t['load_s']:.2f} s, bundle {t['bundle_mib']:.2f} MiB",
                    flush=True,
                )
            if "dense_check" in row:
                d = row["dense_check"]
                print(
                    f"PG(2,{q}) dense check on {d['patterns']} patterns: max rel diff decoders "
                    f"{d['max_rel_diff_decoders']:.2e}, errors {d['max_rel_diff_errors']:.2e}; dense/structured time "
                    f"{d['dense_over_structured']:.1f}x",
                    flush=True,
                )
    data = {
        "benchmark": "bench_tables_scale",
        "command": "python benchmarks/bench_tables_scale.py " + " ".join(sys.argv[1:]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
    }
    bench_scale.write_json(data, args.out)
    print(f"peak RSS {data['peak_rss_mib']:.0f} MiB; wrote {args.out}")


if __name__ == "__main__":
    main()
