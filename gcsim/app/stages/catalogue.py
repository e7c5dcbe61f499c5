"""The ``catalogue`` stage of ``gcsim reproduce``: build and verify every named instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._optional import require
from ...io.manifest import atomic_path
from ..catalogue_report import catalogue_table, format_table, table_ok
from ..paths import repo_designs_dir


def catalogue_stage(out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial") -> dict[str, Any]:
    """Rebuild the named instances, compare them with the committed files, write ``catalogue.csv``.

    A few seconds of work in all: it runs here whatever ``scheduler`` says.
    """
    require("pandas", "plots", "gcsim.app.stages.catalogue.catalogue_stage")
    import pandas as pd

    rows = catalogue_table(repo_designs_dir())
    frame = pd.DataFrame(rows)
    with atomic_path(out / "catalogue.csv") as tmp:
        frame.to_csv(tmp, index=False)
    ok = table_ok(rows)
    return {"ok": ok, "files": ["catalogue.csv"], "text": "Catalogue of named instances\n" + format_table(rows)}
