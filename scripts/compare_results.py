"""Compare two ``gcsim reproduce`` result folders file by file, apart from what timing changes.

Used to show that a refactor left every number unchanged (issue #35: "the demo's results compared
file by file before and after"):

    .venv/bin/python -m gcsim reproduce --out /tmp/before      # at the old commit
    .venv/bin/python -m gcsim reproduce --out /tmp/after       # at the new one
    .venv/bin/python scripts/compare_results.py /tmp/before /tmp/after

Byte-identical files pass. Otherwise JSON files are compared without their keys naming times,
dates, the commit or the platform; CSV files without their columns naming times; Markdown with
``(12.3 s)`` durations masked. Paths of the result folder itself are made relative first.
Prints one line per differing file; exit 1 if any file differs beyond timings (or is missing).
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

IGNORED = re.compile(
    r"(time|seconds|created|git_sha|elapsed|wall|dirty|host|python|platform|duration|sha256|size_bytes)", re.I
)


def _json(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _json(v) for k, v in x.items() if not IGNORED.search(k)}
    if isinstance(x, list):
        return [_json(v) for v in x]
    return x


def _same(fa: Path, fb: Path, a: Path, b: Path) -> bool:
    ta, tb = (f.read_text(encoding="utf-8").replace(str(r), "<out>") for f, r in ((fa, a), (fb, b)))
    if fa.suffix == ".json":
        return bool(_json(json.loads(ta)) == _json(json.loads(tb)))
    if fa.suffix == ".csv":
        ra, rb = list(csv.reader(ta.splitlines())), list(csv.reader(tb.splitlines()))
        keep = [i for i, h in enumerate(ra[0] if ra else []) if not IGNORED.search(h)]
        return [[r[i] for i in keep] for r in ra] == [[r[i] for i in keep] for r in rb]
    if fa.suffix == ".md":
        mask = re.compile(r"\(\d+(\.\d+)? s\)")
        return mask.sub("(T s)", ta) == mask.sub("(T s)", tb)
    return ta == tb


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compare_results.py BEFORE AFTER", file=sys.stderr)
        return 2
    a, b = (Path(x).resolve() for x in argv)
    names = sorted(
        {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
        | {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    )
    bad = 0
    for name in names:
        fa, fb = a / name, b / name
        if not (fa.is_file() and fb.is_file()):
            print(f"missing on one side: {name}")
            bad += 1
        elif fa.read_bytes() != fb.read_bytes():
            binary = fa.suffix not in (".json", ".csv", ".md", ".txt")
            ok = not binary and _same(fa, fb, a, b)
            print(("same apart from timings: " if ok else "DIFFERS: ") + str(name))
            bad += not ok
    print(f"{len(names)} files, {bad} differ beyond timings")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
