"""Compare two ``gcsim reproduce`` output folders number by number.

    .venv/bin/python scripts/compare_results.py OLD_RESULTS NEW_RESULTS

Every CSV is compared column by column (timing columns are skipped: they measure the machine,
not the code), every other file byte by byte (figures included: the same numbers draw the same
PNG with the same matplotlib).  Absolute paths inside the catalogue table are compared by their
part below the checkout (the two folders may come from two checkouts).  Exit status 1 when
anything differs.  Used to confirm that a restructuring leaves every published number unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_TIMING = ("time", "second", "elapsed")


def _is_timing(column: str) -> bool:
    return any(word in column.lower() for word in _TIMING)


def compare_csv(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return [f"columns/shape differ: {list(a.columns)} {a.shape} vs {list(b.columns)} {b.shape}"]
    problems = []
    for column in a.columns:
        if _is_timing(column):
            continue
        x, y = a[column], b[column]
        if x.dtype.kind in "fiub" and y.dtype.kind in "fiub":
            xv, yv = x.to_numpy(float), y.to_numpy(float)
            if not np.array_equal(xv, yv, equal_nan=True):
                rel = np.nanmax(np.abs(xv - yv) / np.maximum(np.abs(xv), np.finfo(float).tiny))
                problems.append(f"{column}: max relative difference {rel:.3g}")
        else:
            xs, ys = x.astype(str), y.astype(str)
            if column == "path":  # absolute paths of two checkouts (or layouts): compare the bundle stems
                pattern = r"^.*?/(?:designs|gcsim/designs|gcsim/catalogue/data)/"
                xs, ys = xs.str.replace(pattern, "", regex=True), ys.str.replace(pattern, "", regex=True)
            if not xs.equals(ys):
                problems.append(f"{column}: {int((xs != ys).sum())} rows differ")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    differ = 0
    for f in sorted(p for p in args.old.rglob("*") if p.is_file() and p.name != "manifest.json"):
        rel = f.relative_to(args.old)
        g = args.new / rel
        if not g.is_file():
            print(f"missing   {rel}")
            differ += 1
            continue
        if f.suffix == ".csv":
            problems = compare_csv(pd.read_csv(f), pd.read_csv(g))
        else:
            problems = [] if f.read_bytes() == g.read_bytes() else ["bytes differ"]
        print(f"{'same' if not problems else 'DIFFERS':9s} {rel}" + "".join(f"\n          {p}" for p in problems))
        differ += bool(problems)
    print(f"{differ} file(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
