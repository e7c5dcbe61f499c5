"""``gcsim reproduce``: regenerate the headline results of every layer.

Each *stage* writes into ``<out>/<stage>/`` its tables (CSV/JSON), figures (PNG)
and a ``manifest.json`` (parameters, seed, provenance, timings, status). A stage
whose manifest exists with the same parameters is skipped unless ``force``
(the job is idempotent and resumable). ``<out>/manifest.json`` indexes the stages.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from .io.manifest import atomic_write_text, dumps, provenance

__all__ = ["run_reproduce", "STAGES", "register_stage", "repo_designs_dir"]

# name -> function(out_dir: Path, full: bool, seed: int, progress: bool) -> dict(summary lines, files, ok)
STAGES: dict[str, Callable[..., dict[str, Any]]] = {}


def register_stage(name: str):
    """Decorator registering a reproduce stage (kept in execution order)."""
    def deco(func):
        STAGES[name] = func
        return func
    return deco


def repo_designs_dir() -> Path:
    """The committed ``designs/`` catalogue next to the package (falls back to ./designs)."""
    here = Path(__file__).resolve().parents[1] / "designs"
    return here if here.is_dir() else Path("designs")


@register_stage("catalogue")
def _stage_catalogue(out: Path, full: bool, seed: int, progress: bool) -> dict[str, Any]:
    from .io.catalogue_report import catalogue_table, format_table, table_ok
    import pandas as pd

    rows = catalogue_table(repo_designs_dir())
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "catalogue.csv", index=False)
    ok = table_ok(rows)
    return {"ok": ok, "files": ["catalogue.csv"], "text": "Catalogue of named instances\n" + format_table(rows)}


def _load_optional_stages() -> None:
    import importlib
    import importlib.util

    for module in ("gcsim.coding.reproduce_stage", "gcsim.cerar.reproduce_stage",
                   "gcsim.learning.reproduce_stage", "gcsim.learning.ddp_stage"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    if importlib.util.find_spec("torch") is None:  # the ddp stage needs torch (optional); don't import it here
        STAGES.pop("ddp", None)


def run_reproduce(out: str | Path = "results", *, full: bool = False, force: bool = False, seed: int = 0,
                  stages: list[str] | None = None, progress: bool = True) -> dict[str, Any]:
    """Run the stages; returns a summary dict (``text``, ``ok``, per-stage status)."""
    from .errors import InvalidArgumentError

    _load_optional_stages()
    out = Path(out)
    chosen = list(STAGES) if not stages else stages
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise InvalidArgumentError("stage", f"unknown stage(s) {unknown}; known: {list(STAGES)}")
    params = {"full": full, "seed": seed}
    summary: dict[str, Any] = {"out": str(out), "stages": {}, "ok": True}
    texts = []
    for name in chosen:
        stage_dir = out / name
        manifest_path = stage_dir / "manifest.json"
        if manifest_path.exists() and not force:
            try:
                old = json.loads(manifest_path.read_text())
            except json.JSONDecodeError:
                old = {}
            if old.get("params") == params and old.get("status") == "ok":
                summary["stages"][name] = {"status": "skipped (results exist; --force to redo)",
                                           "ok": True}
                texts.append(f"[{name}] results exist in {stage_dir} (skipped; use --force)\n"
                             + old.get("text", ""))
                continue
        stage_dir.mkdir(parents=True, exist_ok=True)
        if progress:
            print(f"[{name}] running ...", flush=True)
        t0 = time.perf_counter()
        result = STAGES[name](stage_dir, full, seed, progress)
        seconds = time.perf_counter() - t0
        status = "ok" if result.get("ok", True) else "failed"
        record = {"stage": name, "params": params, "status": status, "seconds": round(seconds, 3),
                  "files": result.get("files", []), "text": result.get("text", ""),
                  "provenance": provenance()}
        atomic_write_text(manifest_path, dumps(record))
        summary["stages"][name] = {"status": status, "seconds": round(seconds, 2), "ok": status == "ok",
                                   "files": [str(stage_dir / f) for f in result.get("files", [])]}
        summary["ok"] &= status == "ok"
        texts.append(f"[{name}] {status} in {seconds:.1f} s -> {stage_dir}\n{result.get('text', '')}")
    atomic_write_text(out / "manifest.json", dumps({"params": params, "stages": summary["stages"],
                                                    "provenance": provenance()}))
    summary["text"] = "\n\n".join(texts) + f"\n\nAll results and manifests are in {out}/"
    return summary
