"""Build, verify and compare the named instances with the catalogue files (by default, the packaged ones)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_bool
from ..catalogue.named import NAMED_INSTANCES
from ..catalogue.objects import export_object, load_object
from ..errors import CatalogueError, InvalidArgumentError
from ..io.bundle import bundle_paths
from .common import output_path, table
from .paths import inside_installed_package, packaged_catalogue

__all__ = ["catalogue_table", "format_table", "table_ok"]


def catalogue_table(
    directory: str | Path | None = None,
    *,
    export: bool = False,
    force: bool = False,
    names: list[str] | None = None,
    flag: str = "directory",
) -> list[dict[str, Any]]:
    """One row per named instance: parameters, construction, verification and catalogue-file status.

    ``directory`` is the catalogue folder to compare with (default: the catalogue shipped
    with gcsim, :func:`gcsim.catalogue.named.packaged_catalogue`).  ``file`` is "matches"
    (the file loads, re-verifies and holds the same matrix), "differs", "refused: ..."
    (invalid file), "missing", or "exported" (``export`` writes missing files, ``force``
    rewrites them; never into an installed gcsim package).  Each file is written where
    :func:`gcsim.app.common.output_path` allows (``flag`` names the folder in its refusals).
    """
    export = check_bool("export", export)
    force = check_bool("force", force)
    directory = packaged_catalogue() if directory is None else Path(directory)
    if (export or force) and inside_installed_package(directory):
        raise InvalidArgumentError(
            "directory",
            f"{str(directory)!r} is inside the installed gcsim package (read-only): export to a folder of your own",
        )
    _check_folder_readable(directory, flag)
    rows = []
    for name in names or list(NAMED_INSTANCES):
        desc, factory = NAMED_INSTANCES[name]
        t0 = time.perf_counter()
        row: dict[str, Any] = {"name": name, "description": desc}
        try:
            obj = factory()
            obj.verify()
            row.update(
                kind=obj.kind,
                params=list(obj.params),
                construction=obj.construction,
                parts=int(obj.assignment.shape[0]),
                workers=int(obj.assignment.shape[1]),
                verified=True,
            )
        except Exception as exc:  # report, don't crash the table
            row.update(kind=None, params=None, construction=None, verified=False, error=str(exc))
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            continue
        stem = Path(directory) / obj.kind / name
        _, json_path = bundle_paths(stem)
        if force or (export and not json_path.exists()):
            output_path(flag, directory, obj.kind, name, suffixes=(".json", ".npz"))
            export_object(obj, directory, name=name, overwrite=True)
            row["file"] = "exported"
        elif (unreadable := _unreadable(json_path)) is not None:  # a link loop, a dangling link, no access
            row["file"] = f"refused: {unreadable}"
        elif json_path.exists():
            try:
                stored = load_object(stem)
                row["file"] = "matches" if np.array_equal(stored.assignment, obj.assignment) else "differs"
            except CatalogueError as exc:
                row["file"] = f"refused: {exc}"
        else:
            row["file"] = "missing"
        row["path"] = str(stem)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
    return rows


def _unreadable(path: Path) -> str | None:
    """Why ``path``, which exists as a name, cannot be read (a symbolic-link loop, a dangling link, no
    access); None when it can be, or when nothing of that name exists."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.lexists(path):
            return f"{str(path)!r} is a symbolic link to nothing ({os.readlink(path)!r})"
        return None
    except OSError as exc:
        return f"{str(path)!r} cannot be read: {exc.strerror or type(exc).__name__}"
    return None


def _check_folder_readable(directory: Path, flag: str) -> None:
    """A catalogue folder that exists as a name but cannot be read is refused (naming ``flag``); a missing
    folder is not (every file is then "missing")."""
    problem = _unreadable(Path(directory))
    if problem is not None:
        raise InvalidArgumentError(flag, problem)


def table_ok(rows: list[dict[str, Any]]) -> bool:
    """Every object verifies and no committed file was refused or differs from a fresh build."""
    return all(r["verified"] and r.get("file") in ("matches", "missing", "exported") for r in rows)


def format_table(rows: list[dict[str, Any]]) -> str:
    """Plain-text table of :func:`catalogue_table` rows."""
    header = ["name", "kind", "params", "parts x workers", "construction", "verified", "catalogue file"]
    body = []
    for r in rows:
        size = f"{r['parts']} x {r['workers']}" if r.get("parts") is not None else "-"
        body.append(
            [
                r["name"],
                str(r.get("kind")),
                str(tuple(r["params"])) if r.get("params") else "-",
                size,
                str(r.get("construction") or r.get("error", "-")),
                "yes" if r["verified"] else "NO",
                str(r.get("file", "-")),
            ]
        )
    # long cells wrap at spaces (never cut mid-word)
    return table(header, body, wrap={"construction": 48, "catalogue file": 40})
