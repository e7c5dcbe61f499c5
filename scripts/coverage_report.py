"""Compare gcsim's BIBD / SRG existence answers and constructions with the Sage oracle.

Runs in the gcsim virtual environment (no Sage needed)::

    .venv/bin/python scripts/coverage_report.py            # rewrites docs/coverage.md
    .venv/bin/python scripts/coverage_report.py --check    # exit 1 if docs/coverage.md is stale

It reads the fixtures ``tests/fixtures/sage_bibd.json`` and
``tests/fixtures/sage_srg.json`` written by ``scripts/sage_oracle.py`` and, for
every parameter set in them, asks ``gcsim.bibd(..., existence=True)`` /
``gcsim.srg(..., existence=True)``, calls the constructor too and checks the
result (``params`` and ``verify()``, or the documented exception:
ImpossibleParametersError for False, NotConstructibleError for None). "gcsim builds" below means: the
existence answer is ``True`` *and* the constructor returns an object with the
right ``params`` whose ``verify()`` returns ``True``. The report is
deterministic apart from its "Generated" line, so ``tests/test_oracle.py`` can
check that the committed ``docs/coverage.md`` is current.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
DOC = REPO / "docs" / "coverage.md"
SRG_VMAX = 130  # the fixtures' range (their header says; scripts/sage_oracle.py)
SRG_BAND = 32  # rows of the SRG table: v in bands of this width
SUSPECT = "handbook-exception-lambda>1(suspect)"


# --------------------------------------------------------------------------- fixtures
def load_fixture(name: str, root: Path = FIXTURES) -> dict:
    """Load ``sage_<name>.json`` (``name`` in {"bibd", "srg"})."""
    with open(root / f"sage_{name}.json") as fh:
        return json.load(fh)


def sage_builds(entry: dict) -> bool:
    """Sage answers True *and* its construction was built and verified by the oracle."""
    return entry["sage"] is True and entry.get("build") == "ok"


def sage_impossible(entry: dict) -> bool:
    """Sage answers False for a reason that is a theorem (not its suspect lambda>1 rule)."""
    return entry["sage"] is False and entry.get("reason") != SUSPECT


def bibd_key(e: dict) -> tuple[int, int, int]:
    return (e["v"], e["k"], e["lambda"])


def srg_key(e: dict) -> tuple[int, int, int, int]:
    return (e["v"], e["k"], e["lambda"], e["mu"])


def bibd_params(v: int, k: int, lam: int) -> tuple[int, int, int, int, int]:
    """(v, b, r, k, lam) from (v, k, lam) (exact integer division; admissible input)."""
    r = lam * (v - 1) // (k - 1)
    return (v, v * r // k, r, k, lam)


def srg_bands(vmax: int) -> list[tuple[int, int]]:
    """(lo, hi) bands of width SRG_BAND covering 1..vmax (the last one ends at vmax)."""
    return [(lo, min(lo + SRG_BAND - 1, vmax)) for lo in range(1, vmax + 1, SRG_BAND)]


def srg_family_of(params: tuple[int, int, int, int]) -> str | None:
    """The registered gcsim family that names this parameter set (gcsim.combinatorics.families):
    the first primary family listing it, else listing its complement, then the same over the
    supplementary families (the catalogue's naming rule)."""
    from gcsim.combinatorics.families import registered_families
    from gcsim.combinatorics.srg_feasibility import complement_parameters

    fams = registered_families("srg")
    for tier in (False, True):
        for p in (tuple(params), complement_parameters(*params)):
            for f in fams:
                if f.supplementary == tier and f.lookup(p) is not None:
                    return f.name
    return None


def srg_off_list(srg_entries: list[dict], vmax: int = SRG_VMAX) -> list[tuple[int, int, int, int]]:
    """Tuples with ``v <= vmax``, ``0 < mu < k <= v - 2``, ``k(k-lam-1) = mu(v-k-1)`` that are
    *not* in Sage's list of apparently feasible parameters, i.e. that Sage's feasibility
    filter rejects (its list is exactly the tuples of this form passing the filter)."""
    listed = {srg_key(e) for e in srg_entries}
    out = []
    for v in range(4, vmax + 1):
        for k in range(2, v - 1):
            for lam in range(0, k - 1):
                num = k * (k - lam - 1)
                if num % (v - k - 1):
                    continue
                mu = num // (v - k - 1)
                if 0 < mu < k and (v, k, lam, mu) not in listed:
                    out.append((v, k, lam, mu))
    return out


# --------------------------------------------------------------------------- gcsim side
def _ask(fn: Callable[..., Any], args: tuple) -> Any:
    """gcsim's existence answer; exceptions are recorded as a string."""
    try:
        ans = fn(*args, existence=True)
    except Exception as exc:  # noqa: BLE001 - recorded, tests fail on it
        return f"error: {type(exc).__name__}: {exc}"[:200]
    return ans


def _build(fn: Callable[..., Any], args: tuple, expected: tuple) -> str:
    """'ok' if the object is built, has ``params == expected`` and ``verify()`` is True;
    'not-constructible' if gcsim raises NotConstructibleError (its ``existence=True`` also
    answers True for objects known to exist that it cannot build)."""
    from gcsim.errors import NotConstructibleError

    try:
        obj = fn(*args)
    except NotConstructibleError:
        return "not-constructible"
    except Exception as exc:  # noqa: BLE001
        return f"raises {type(exc).__name__}"
    try:
        if tuple(obj.params) != tuple(expected):
            return f"wrong params {tuple(obj.params)}"
        if obj.verify() is not True:
            return "verify() is not True"
    except Exception as exc:  # noqa: BLE001
        return f"verify raises {type(exc).__name__}"
    return "ok"


def collect(
    bibd_exist: Callable, bibd_build: Callable, srg_exist: Callable, srg_build: Callable, root: Path = FIXTURES
) -> dict:
    """Ask gcsim about every fixture entry. The callables let tests pass cached versions."""
    out: dict[str, Any] = {"bibd": [], "srg": [], "srg_off_list": []}
    fb, fs = load_fixture("bibd", root), load_fixture("srg", root)
    out["bibd_header"], out["srg_header"] = fb["header"], fs["header"]
    for e in fb["entries"]:
        key = bibd_key(e)
        ans = _ask(bibd_exist, key)
        built = _build(bibd_build, key, bibd_params(*key)) if ans in (True, False, None) else None
        out["bibd"].append({"entry": e, "gcsim": ans, "built": built})
    for e in fs["entries"]:
        key = srg_key(e)
        ans = _ask(srg_exist, key)
        built = _build(srg_build, key, key) if ans in (True, False, None) else None
        family = srg_family_of(key) if built == "ok" else None
        out["srg"].append({"entry": e, "gcsim": ans, "built": built, "family": family})
    for key in srg_off_list(fs["entries"], fs["header"]["ranges"]["v"][1]):
        out["srg_off_list"].append({"params": key, "gcsim": _ask(srg_exist, key)})
    return out


def collect_gcsim(root: Path = FIXTURES) -> dict:
    """:func:`collect` with the real gcsim functions (a missing module is reported per call)."""
    import gcsim

    def lazy(name: str) -> Callable:
        def call(*args, **kwargs):
            return getattr(gcsim, name)(*args, **kwargs)

        return call

    return collect(lazy("bibd"), lazy("bibd"), lazy("srg"), lazy("srg"), root)


# --------------------------------------------------------------------------- report
def _fmt(x: Any) -> str:
    """True / False / None, or 'error' for a recorded exception."""
    if isinstance(x, str):
        return "error"
    return {True: "True", False: "False", None: "None"}.get(x, repr(x))


def _gbuilds(row: dict) -> bool:
    """gcsim answers True and builds a verified object."""
    return row["gcsim"] is True and row["built"] == "ok"


def summary(data: dict) -> dict:
    """Headline numbers (also used by the tests)."""
    b, s = data["bibd"], data["srg"]
    return {
        "bibd_entries": len(b),
        "bibd_sage_builds": sum(sage_builds(r["entry"]) for r in b),
        "bibd_gcsim_builds": sum(_gbuilds(r) for r in b),
        "bibd_both_build": sum(sage_builds(r["entry"]) and _gbuilds(r) for r in b),
        "srg_entries": len(s),
        "srg_sage_builds": sum(sage_builds(r["entry"]) for r in s),
        "srg_gcsim_builds": sum(_gbuilds(r) for r in s),
        "srg_both_build": sum(sage_builds(r["entry"]) and _gbuilds(r) for r in s),
    }


def conflict_pairs(data: dict) -> list[tuple[str, str]]:
    """(parameter set, problem) for every disagreement that is a bug in gcsim (or Sage)."""
    bad = []
    for fam, keyf in (("bibd", bibd_key), ("srg", srg_key)):
        for r in data[fam]:
            e, g = r["entry"], r["gcsim"]
            key = f"{fam}{keyf(e)}"
            if isinstance(g, str) or g not in (True, False, None):
                bad.append((key, f"existence answer is not True/False/None: {g!r}"))
            elif sage_builds(e) and g is False:
                bad.append((key, "gcsim says False but Sage builds it"))
            elif sage_impossible(e) and g is True:
                bad.append(
                    (key, f"gcsim says True but Sage says impossible ({e.get('reason') or e.get('sage_source')})")
                )
            if g is True and r["built"] not in ("ok", "not-constructible"):
                bad.append((key, f"gcsim says True but building gives: {r['built']}"))
            elif g is False and r["built"] != "raises ImpossibleParametersError":
                bad.append((key, f"gcsim says False but building gives: {r['built']}"))
            elif g is None and r["built"] != "not-constructible":
                bad.append((key, f"gcsim says None but building gives: {r['built']}"))
    for r in data["srg_off_list"]:
        if r["gcsim"] is True:
            bad.append((f"srg{tuple(r['params'])}", "gcsim says True but Sage's feasibility conditions reject it"))
    return bad


def conflicts(data: dict) -> list[str]:
    """Disagreements that are bugs in gcsim (or in Sage): must be empty."""
    return [f"{key}: {msg}" for key, msg in conflict_pairs(data)]


def render(data: dict, generated: str) -> str:
    """Markdown report. Deterministic except for the ``generated`` line."""
    import gcsim

    fb, fs = data["bibd_header"], data["srg_header"]
    lines = [
        "# gcsim coverage against the SageMath oracle",
        "",
        f"Generated: {generated}",
        "",
        "Regenerate with `.venv/bin/python scripts/coverage_report.py` (a few seconds to a "
        "minute; no Sage needed). `tests/test_oracle.py` fails when this file is stale.",
        f"gcsim {gcsim.__version__}; oracle fixtures from passagemath {fb.get('sage_version')} "
        f"(BIBD fixture of {fb.get('date')}, SRG fixture of {fs.get('date')}), written by "
        "`scripts/sage_oracle.py` (see `scripts/README.md`).",
        "",
        '"Sage builds": Sage\'s `existence=True` answer is True and the oracle built the object '
        'and verified it independently. "gcsim builds": `gcsim.bibd`/`gcsim.srg` answers True, '
        "and the object it returns has the right `params` and `verify()` is True (gcsim's True "
        "also covers objects known to exist that it cannot build; those are listed).",
        "",
        "## Summary",
        "",
        "| family | parameter sets | Sage builds | gcsim builds | both | Sage only | gcsim only |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fam in ("bibd", "srg"):
        rows = data[fam]
        sb = sum(sage_builds(r["entry"]) for r in rows)
        gb = sum(_gbuilds(r) for r in rows)
        both = sum(sage_builds(r["entry"]) and _gbuilds(r) for r in rows)
        lines.append(f"| {fam.upper()} | {len(rows)} | {sb} | {gb} | {both} | {sb - both} | {gb - both} |")
    bad = conflict_pairs(data)
    nc = [
        f"{fam}{keyf(r['entry'])}"
        for fam, keyf in (("bibd", bibd_key), ("srg", srg_key))
        for r in data[fam]
        if r["gcsim"] is True and r["built"] == "not-constructible"
    ]
    lines += [
        "",
        f"gcsim answers True (known to exist) but cannot build ({len(nc)}): " + (", ".join(nc) or "none") + ".",
    ]
    lines += [
        "",
        f"Conflicts (gcsim False where Sage builds, gcsim True where Sage proves "
        f"impossibility, a gcsim object failing its check, or an error): **{len(bad)}**",
    ]
    by_msg: dict[str, list[str]] = {}
    for key, msg in bad:
        by_msg.setdefault(msg, []).append(key)
    lines += [f"- {msg}: {', '.join(keys)}" for msg, keys in by_msg.items()]

    # ---- BIBD per (k, lambda)
    bv, sv = fb["ranges"]["v"][1], fs["ranges"]["v"][1]
    lines += [
        "",
        f"## BIBDs: admissible (v, k, λ), v ≤ {bv}, 3 ≤ k ≤ v/2, λ ≤ 3",
        "",
        "Admissible = λ(v−1) ≡ 0 mod (k−1) and λv(v−1) ≡ 0 mod k(k−1). Columns "
        '"Sage T/F/?" and "gcsim T/F/?" count the existence answers True / False / '
        "None (unknown).",
        "",
        "| k | λ | sets | Sage T/F/? | Sage builds | gcsim T/F/? | gcsim builds | both |",
        "|---:|---:|---:|---|---:|---|---:|---:|",
    ]
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in data["bibd"]:
        groups.setdefault((r["entry"]["k"], r["entry"]["lambda"]), []).append(r)

    def tfn(vals) -> str:
        c = Counter(_fmt(x) for x in vals)
        out = f"{c['True']}/{c['False']}/{c['None']}"
        return out + (f" (+{c['error']} errors)" if c["error"] else "")

    for k, lam in sorted(groups):
        rows = groups[(k, lam)]
        lines.append(
            f"| {k} | {lam} | {len(rows)} | {tfn(r['entry']['sage'] for r in rows)} | "
            f"{sum(sage_builds(r['entry']) for r in rows)} | {tfn(r['gcsim'] for r in rows)} | "
            f"{sum(_gbuilds(r) for r in rows)} | "
            f"{sum(sage_builds(r['entry']) and _gbuilds(r) for r in rows)} |"
        )
    for lam in sorted({lam for _, lam in groups}):
        rows = [r for (k, la), rs in groups.items() if la == lam for r in rs]
        lines.append(
            f"| all | {lam} | {len(rows)} | {tfn(r['entry']['sage'] for r in rows)} | "
            f"{sum(sage_builds(r['entry']) for r in rows)} | {tfn(r['gcsim'] for r in rows)} | "
            f"{sum(_gbuilds(r) for r in rows)} | "
            f"{sum(sage_builds(r['entry']) and _gbuilds(r) for r in rows)} |"
        )
    lines += _lists(data["bibd"], bibd_key, "(v, k, λ)", source=True)

    # ---- SRG per v band
    lines += [
        "",
        f"## Strongly regular graphs: Sage's apparently feasible (v, k, λ, μ), v ≤ {sv}",
        "",
        f"Sage's list `apparently_feasible_parameters({sv + 1})` (0 < μ < k; closed under "
        "complement). Sage's False here always comes from Brouwer's table.",
        "",
        "| v | sets | Sage T/F/? | Sage builds | gcsim T/F/? | gcsim builds | both |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    for lo, hi in srg_bands(sv):
        rows = [r for r in data["srg"] if lo <= r["entry"]["v"] <= hi]
        lines.append(
            f"| {lo}–{hi} | {len(rows)} | {tfn(r['entry']['sage'] for r in rows)} | "
            f"{sum(sage_builds(r['entry']) for r in rows)} | {tfn(r['gcsim'] for r in rows)} | "
            f"{sum(_gbuilds(r) for r in rows)} | "
            f"{sum(sage_builds(r['entry']) and _gbuilds(r) for r in rows)} |"
        )
    lines += _lists(data["srg"], srg_key, "(v, k, λ, μ)", source=True)
    sage_built = [r for r in data["srg"] if sage_builds(r["entry"])]
    fam_counts = Counter(r["family"] for r in sage_built if _gbuilds(r))
    lines += [
        "",
        f"Coverage: gcsim builds {sum(fam_counts.values())} of the {len(sage_built)} SRG parameter sets "
        f"with v ≤ {sv} that Sage builds. The gcsim family that builds them "
        "(`gcsim.combinatorics.registered_families`; a parameter set counts for the family that "
        "names it, complements included):",
        "",
        "| gcsim family | parameter sets Sage builds |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {n} |" for name, n in sorted(fam_counts.items(), key=lambda x: (-x[1], str(x[0])))]
    off = data["srg_off_list"]
    c = Counter(_fmt(r["gcsim"]) for r in off)
    lines += [
        "",
        f"Parameter sets with v ≤ {sv}, 0 < μ < k and k(k−λ−1) = μ(v−k−1) that Sage's "
        f"feasibility conditions reject: {len(off)}; gcsim answers False for "
        f"{c['False']}, None for {c['None']}, True for {c['True']} (must be 0)"
        + (f", error for {c['error']}" if c["error"] else "")
        + ".",
    ]
    return "\n".join(lines) + "\n"


def _lists(rows: list[dict], keyf: Callable, label: str, source: bool = False) -> list[str]:
    sage_only = [r for r in rows if sage_builds(r["entry"]) and not _gbuilds(r)]
    more = [r for r in rows if r["entry"]["sage"] is None and r["gcsim"] in (True, False)]
    suspect = [r for r in rows if r["entry"].get("reason") == SUSPECT]
    out = [
        "",
        f"Sage builds, gcsim does not ({len(sage_only)}): "
        + (
            ", ".join(
                f"{keyf(r['entry'])} [gcsim: {_fmt(r['gcsim'])}"
                + (f", {r['entry'].get('sage_source')}" if source else "")
                + "]"
                for r in sage_only
            )
            or "none"
        )
        + ".",
    ]
    out += [
        "",
        f"gcsim knows more than Sage (Sage: unknown; gcsim True or False) ({len(more)}): "
        + (
            ", ".join(
                f"{keyf(r['entry'])} [gcsim: {_fmt(r['gcsim'])}" + (", builds" if _gbuilds(r) else "") + "]"
                for r in more
            )
            or "none"
        )
        + ".",
    ]
    if suspect:
        out += [
            "",
            f"Sage says False only by applying a λ = 1 exception list to λ > 1 (not a "
            f"theorem; not used as a test oracle) ({len(suspect)}): "
            + ", ".join(f"{keyf(r['entry'])} [gcsim: {_fmt(r['gcsim'])}]" for r in suspect)
            + ".",
        ]
    return out


def strip_generated(text: str) -> str:
    """The report without its 'Generated:' line (for staleness checks)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("Generated:"))


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only check docs/coverage.md is current")
    ap.add_argument("--out", type=Path, default=DOC)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    data = collect_gcsim()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    text = render(data, now)
    if args.check:
        old = args.out.read_text() if args.out.exists() else ""
        if strip_generated(old) != strip_generated(text):
            print(f"{args.out} is stale: run scripts/coverage_report.py")
            return 1
        print(f"{args.out} is current")
        return 0
    _write_atomic(args.out, text)
    print(f"wrote {args.out}")
    print(json.dumps(summary(data)))
    for line in conflicts(data):
        print("CONFLICT", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
