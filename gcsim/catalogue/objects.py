"""Export and load gcsim objects of every kind as catalogue bundles.

An object is written as a bundle (:mod:`gcsim.io.bundle`) under ``<directory>/<kind>/<name>``:
its ``to_arrays()`` go to the ``.npz``, its ``bundle_metadata()`` (plus the kind, the class
and the verification result) to the manifest's ``metadata``.  Loading dispatches on the
recorded kind to the class of :data:`gcsim.catalogue.kinds.KINDS`, whose ``from_arrays``
checks every array and re-derives every declared invariant, and then re-verifies the
object from the file alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_bool
from ..errors import CatalogueError, InvalidArgumentError
from ..io.bundle import (
    BUNDLE_FORMAT,
    DEFAULT_MAX_BYTES,
    MAX_MANIFEST_BYTES,
    bundle_paths,
    check_bundle_name,
    check_path,
    load_bundle,
    save_bundle,
)
from ..io.manifest import check_folder, read_json_object, to_jsonable
from .kinds import KINDS

__all__ = [
    "export_object",
    "export_object_at",
    "load_object",
    "load_problem",
    "list_catalogue",
    "register_folder_loader",
]

_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: How a dot in an array name (a scheme's ``extras.<key>``) is written in a bundle (as the advisor does).
_DOT = "__"
#: The array a bundle holds for an object without arrays (a bundle holds at least one).
_NO_ARRAYS = "no_arrays"


def _bundle_arrays(arrays: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The arrays under bundle names (identifiers) and the map back, None when no name changes."""
    if not arrays:
        return {_NO_ARRAYS: np.zeros(0, dtype=np.int8)}, {}
    stored = {name.replace(".", _DOT): value for name, value in arrays.items()}
    if len(stored) != len(arrays):
        raise InvalidArgumentError("obj", f"array names {sorted(arrays)} collide once '.' is written {_DOT!r}")
    if all(s == name for s, name in zip(stored, arrays, strict=True)):
        return stored, None
    return stored, dict(zip(stored, arrays, strict=True))


def _object_arrays(path: Any, stored: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The object's own array names again (inverse of :func:`_bundle_arrays`, from the manifest's map)."""
    names = meta.get("bundle_arrays")
    if names is None:
        return stored
    if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        raise CatalogueError(f"{path}: metadata 'bundle_arrays' must map bundle array names to names")
    extra = sorted(set(stored) - set(names) - ({_NO_ARRAYS} if not names else set()))
    if extra or set(names) - set(stored):
        raise CatalogueError(
            f"{path}: the stored arrays {sorted(stored)} do not match the manifest's bundle_arrays {sorted(names)}"
        )
    return {names[k]: v for k, v in stored.items() if k in names}


def export_object(
    obj: Any,
    directory: str | Path,
    name: str | None = None,
    *,
    overwrite: bool = False,
    extra_metadata: dict[str, Any] | None = None,
) -> Path:
    """Verify an object and export it as a bundle under ``directory/<kind>/<name>``.

    The object is verified before anything is written (a failing object is never
    exported). The manifest records kind, class, parameters, construction, seed (if any),
    what the kind adds (``bundle_metadata()``), the verification result and provenance.

    Parameters
    ----------
    obj : object of a catalogue kind
        A gcsim design, graph or CERAR design (``kind``, ``verify``, ``to_arrays``,
        ``bundle_metadata``).
    directory : path
        The folder you name (created if missing); there is no default, so nothing is ever
        written into the current folder or the installed package by accident.
    name : str, optional
        Plain file stem (no folders, no leading ``.``; see :func:`gcsim.io.bundle.check_bundle_name`);
        default: the parameters joined by ``_``.
    overwrite : bool
        Replace an existing bundle (otherwise ``FileExistsError``).
    extra_metadata : dict, optional
        JSON-serializable entries merged into the manifest's metadata.

    Returns
    -------
    Path of the JSON manifest.

    Examples
    --------
    >>> import tempfile
    >>> from gcsim.combinatorics.bibd import bibd
    >>> folder = tempfile.mkdtemp()
    >>> export_object(bibd(7, 3), folder, "fano").name
    'fano.json'
    >>> load_object(f"{folder}/bibd/fano").params
    BIBDParams(v=7, b=7, r=3, k=3, lam=1)
    """
    overwrite = check_bool("overwrite", overwrite)
    for attr in ("verify", "to_arrays", "bundle_metadata", "params"):
        if not hasattr(obj, attr):
            raise InvalidArgumentError("obj", f"must be a gcsim object of a catalogue kind (no .{attr})")
    directory = check_folder("directory", check_path("directory", directory))
    kind = getattr(type(obj), "kind", None)
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise InvalidArgumentError("obj", f"kind must be a lowercase identifier, got {kind!r}")
    if name is None:
        name = "_".join(str(p) for p in obj.params)
    check_bundle_name("name", name)
    return export_object_at(obj, directory / kind / name, overwrite=overwrite, extra_metadata=extra_metadata)


def export_object_at(
    obj: Any, stem: str | Path, *, overwrite: bool = False, extra_metadata: dict[str, Any] | None = None
) -> Path:
    """Verify an object and export it as the bundle ``<stem>.json`` + ``<stem>.npz``.

    The same bundle as :func:`export_object` writes under ``<kind>/<name>``, at a path of your
    choosing (the encoder of an exported code is ``<folder>/encoder``).

    Returns the path of the JSON manifest; :func:`load_object` reads it back.
    """
    overwrite = check_bool("overwrite", overwrite)
    for attr in ("verify", "to_arrays", "bundle_metadata", "params"):
        if not hasattr(obj, attr):
            raise InvalidArgumentError("obj", f"must be a gcsim object of a catalogue kind (no .{attr})")
    kind = getattr(type(obj), "kind", None)
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise InvalidArgumentError("obj", f"kind must be a lowercase identifier, got {kind!r}")
    if extra_metadata is not None and not isinstance(extra_metadata, dict):
        raise InvalidArgumentError("extra_metadata", f"must be a dict, got {type(extra_metadata).__name__}")
    obj.verify()
    arrays, names = _bundle_arrays(dict(obj.to_arrays()))
    meta = {
        "kind": kind,
        "class": f"{type(obj).__module__}.{type(obj).__qualname__}",
        **obj.bundle_metadata(),
        "verified": True,
    }
    if names is not None:
        meta["bundle_arrays"] = names
    if extra_metadata:
        meta.update(extra_metadata)
    return save_bundle(stem, arrays, meta, overwrite=overwrite)


#: manifest file name -> loader of a folder holding it (``gcsim.catalogue.codes`` registers the exported codes)
_FOLDER_LOADERS: dict[str, Callable[..., Any]] = {}


def register_folder_loader(manifest: str, loader: Callable[..., Any]) -> None:
    """Let :func:`load_object` load a folder that holds the file ``manifest`` with ``loader(folder, verify=,
    max_bytes=)`` (a layer that writes such folders registers its reader here)."""
    if not isinstance(manifest, str) or not manifest or "/" in manifest:
        raise InvalidArgumentError("manifest", f"must be a plain file name, got {manifest!r}")
    if not callable(loader):
        raise InvalidArgumentError("loader", f"must be callable, got {type(loader).__name__}")
    _FOLDER_LOADERS[manifest] = loader


#: At most this many exported codes are named when a folder holding them is given.
_LISTED = 8


def _folders_inside(folder: Path) -> list[str]:
    """The sub-folders of ``folder`` that a registered folder loader reads (an export's codes), sorted."""
    try:
        children = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for child in children:
        try:
            if child.is_dir() and any((Path(child.path) / m).is_file() for m in _FOLDER_LOADERS):
                found.append(child.name)
        except OSError:  # a link loop, an unreadable entry: not a code
            continue
    return found


def _listing(folder: Path, names: list[str]) -> str:
    shown = ", ".join(str(folder / name) for name in names[:_LISTED])
    more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return f"{shown}{more}"


def load_problem(path: str | Path) -> str | None:
    """Why ``path`` names nothing :func:`load_object` can read, found before anything is read; None otherwise.

    Two cases, each message naming ``path`` as given:

    * nothing of that name: no file or folder ``path``, no bundle ``path.json`` / ``path.npz``
      (with the exported codes of the folder above it, when it holds some: a mistyped code name);
    * a folder that holds none of the registered folder manifests (``advice.json``): when it is the
      folder given to ``gcsim advise --out`` / ``Advice.export``, the exported codes inside it.

    >>> load_problem("no/such/bundle")
    "'no/such/bundle' not found: no file or folder of that name, and no bundle 'no/such/bundle.json'"
    """
    given = Path(check_path("path", path))
    npz_path, json_path = bundle_paths(given)
    if given.is_dir() and not json_path.exists():
        if any((given / m).is_file() for m in _FOLDER_LOADERS):
            return None
        codes = _folders_inside(given)
        if codes:
            return (
                f"{str(path)!r} is a folder of {len(codes)} exported code(s), not one code: load one of "
                f"{_listing(given, codes)}"
            )
        return (
            f"{str(path)!r} is a folder holding none of {sorted(_FOLDER_LOADERS)}; give a bundle "
            "(<kind>/<name>, .json or .npz) or an exported code's folder"
        )
    if any(os.path.lexists(p) for p in (given, npz_path, json_path)):
        return None  # a file, a bundle, a content-addressed data file: load_bundle reads (or refuses) it
    text = f"{str(path)!r} not found: no file or folder of that name, and no bundle {str(json_path)!r}"
    parent = given.parent
    codes = _folders_inside(parent) if parent.is_dir() else []
    if codes:
        text += f"; {str(parent)!r} holds the exported code(s) {_listing(parent, codes)}"
    return text


def load_object(path: str | Path, *, verify: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Load an exported object of any catalogue kind and re-verify it from the file alone.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    verify : bool
        Run the object's exact ``verify()`` (default).  The dtype/value checks and the
        re-derivation of declared invariants (seed claims, certificates) always run.
    max_bytes : int
        Size bound passed to :func:`gcsim.io.bundle.load_bundle`.

    Raises
    ------
    CatalogueError
        Anything :func:`~gcsim.io.bundle.load_bundle` refuses; an unknown kind; arrays of a
        wrong dtype or shape, or with values other than 0/1 where an incidence matrix is
        expected; an object that does not verify; parameters or a seed claim that the arrays
        do not match.
    """
    verify = check_bool("verify", verify)
    folder = Path(check_path("path", path))
    if folder.is_dir() and not folder.with_name(folder.name + ".json").exists():
        # an exported code (advice.json), or another registered folder kind
        for manifest_name, loader in _FOLDER_LOADERS.items():
            if (folder / manifest_name).is_file():
                return loader(folder, verify=verify, max_bytes=max_bytes)
    problem = load_problem(folder)
    if problem is not None:  # nothing there, or a folder of exported codes: name what was given
        raise CatalogueError(problem)
    stored, manifest = load_bundle(path, max_bytes=max_bytes)
    meta = manifest["metadata"]
    kind = meta.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise CatalogueError(f"{path}: no loader for kind {kind!r} (known: {sorted(KINDS)})")
    arrays = _object_arrays(path, stored, meta)
    try:
        obj = KINDS[kind].from_arrays(arrays, meta)
        if verify:
            obj.verify()
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a loaded object that does not verify is refused, whatever failed
        raise CatalogueError(f"{path}: stored {kind} does not verify: {exc}") from exc
    declared = meta.get("params")
    if isinstance(declared, list) and [to_jsonable(p) for p in obj.params] != declared:
        raise CatalogueError(
            f"{path}: parameters {tuple(obj.params)} of the stored arrays differ from the manifest's {declared}"
        )
    return obj


def list_catalogue(directory: str | Path) -> list[dict[str, Any]]:
    """One summary dict per bundle found under ``directory`` (not validated; see :func:`load_object`).

    Only regular ``*.json`` files that hold a bundle manifest are listed; FIFOs, devices,
    oversized or malformed files are skipped without being read.
    """
    rows = []
    for json_path in sorted(check_path("directory", directory).rglob("*.json")):
        try:
            man = read_json_object(json_path, MAX_MANIFEST_BYTES)
        except (OSError, ValueError):
            continue
        if man.get("format") == BUNDLE_FORMAT:
            md = man.get("metadata")
            md = md if isinstance(md, dict) else {}
            rows.append(
                {
                    "path": str(json_path.with_suffix("")),
                    "kind": md.get("kind"),
                    "params": md.get("params"),
                    "construction": md.get("construction"),
                }
            )
    return rows
