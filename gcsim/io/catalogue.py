"""The design catalogue: versioned bundles of arrays with a checksummed manifest.

A *bundle* is two files sharing a stem:

``<stem>.npz``
    the arrays (NumPy ``savez_compressed``, no pickled objects);
``<stem>.json``
    the manifest: format name and version, the SHA-256 of the ``.npz`` bytes,
    name/shape/dtype of every array, provenance (gcsim version, git SHA,
    library versions, creation time) and free-form ``metadata`` (kind,
    parameters, construction, seed, certificates, ...).

Loading re-computes the checksum and compares every array's shape and dtype
with the manifest, so a tampered, truncated or mismatched file is refused with
a :class:`~gcsim.errors.CatalogueError` that says what is wrong. Both files are
written through a temporary file and an atomic rename, so an interrupted
export never leaves a half-written file behind.

Format history
--------------
version 1 (gcsim 0.1): the layout above.
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import CatalogueError, InvalidArgumentError
from .manifest import atomic_write_bytes, atomic_write_text, dumps, provenance, sha256_file

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "save_bundle",
    "load_bundle",
    "bundle_paths",
    "export_object",
    "load_object",
    "register_loader",
    "list_catalogue",
]

BUNDLE_FORMAT = "gcsim-bundle"
BUNDLE_VERSION = 1
_SUPPORTED_VERSIONS = {1}


def bundle_paths(path: str | Path) -> tuple[Path, Path]:
    """``(npz_path, json_path)`` of the bundle named by a stem, ``.npz`` or ``.json`` path."""
    path = Path(path)
    if path.suffix in (".npz", ".json"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".npz"), path.with_name(path.name + ".json")


def save_bundle(stem: str | Path, arrays: dict[str, Any], manifest: dict[str, Any] | None = None, *,
                overwrite: bool = False) -> Path:
    """Write ``arrays`` and a manifest as the bundle ``<stem>.npz`` + ``<stem>.json``.

    Parameters
    ----------
    stem : path
        File name without extension, e.g. ``designs/bibd/pg2_9``.
    arrays : dict of str -> array_like
        Numeric arrays (object arrays are refused: bundles never hold pickles).
    manifest : dict, optional
        Metadata stored under ``manifest["metadata"]`` (kind, params, seed, ...).
    overwrite : bool
        Replace an existing bundle; otherwise an existing one raises ``FileExistsError``.

    Returns
    -------
    Path of the JSON manifest.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> p = save_bundle(f"{d}/eye", {"I": np.eye(2)}, {"kind": "demo"})
    >>> arrays, man = load_bundle(p)
    >>> arrays["I"].tolist(), man["metadata"]["kind"]
    ([[1.0, 0.0], [0.0, 1.0]], 'demo')
    """
    if not isinstance(arrays, dict) or not arrays:
        raise InvalidArgumentError("arrays", "must be a non-empty dict of name -> array")
    clean: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgumentError("arrays", f"array names must be identifiers, got {name!r}")
        arr = np.asarray(value)
        if arr.dtype == object:
            raise InvalidArgumentError("arrays", f"array {name!r} has dtype object (not storable safely)")
        clean[name] = arr
    npz_path, json_path = bundle_paths(stem)
    if not overwrite and (npz_path.exists() or json_path.exists()):
        raise FileExistsError(f"bundle {npz_path.with_suffix('')} exists (pass overwrite=True to replace it)")
    buf = io.BytesIO()
    np.savez_compressed(buf, **clean)
    data = buf.getvalue()
    atomic_write_bytes(npz_path, data)
    record = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "data_file": npz_path.name,
        "sha256": sha256_file(npz_path),
        "size_bytes": len(data),
        "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in clean.items()},
        "provenance": provenance(),
        "metadata": manifest or {},
    }
    atomic_write_text(json_path, dumps(record))
    return json_path


def load_bundle(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load and validate a bundle; returns ``(arrays, manifest)``.

    Raises
    ------
    CatalogueError
        Missing file, invalid or truncated JSON, unknown format or version,
        checksum mismatch (tampered or truncated data), unreadable ``.npz``,
        or arrays that differ from the manifest's names, shapes or dtypes.
    """
    npz_path, json_path = bundle_paths(path)
    if not json_path.exists():
        raise CatalogueError(f"manifest {json_path} not found")
    if not npz_path.exists():
        raise CatalogueError(f"data file {npz_path} not found (manifest {json_path.name} has no data)")
    try:
        manifest = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogueError(f"manifest {json_path} is not valid JSON (truncated or edited?): {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise CatalogueError(f"{json_path} is not a {BUNDLE_FORMAT} manifest")
    version = manifest.get("format_version")
    if version not in _SUPPORTED_VERSIONS:
        raise CatalogueError(f"{json_path}: format version {version!r} is not supported "
                             f"(this gcsim reads {sorted(_SUPPORTED_VERSIONS)})")
    for key in ("sha256", "arrays", "metadata"):
        if key not in manifest:
            raise CatalogueError(f"{json_path}: manifest lacks the field {key!r}")
    actual = sha256_file(npz_path)
    if actual != manifest["sha256"]:
        raise CatalogueError(f"{npz_path}: checksum mismatch (sha256 {actual[:12]}..., manifest says "
                             f"{str(manifest['sha256'])[:12]}...): the file was modified or truncated")
    try:
        with np.load(npz_path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise CatalogueError(f"{npz_path}: unreadable array data: {exc}") from None
    expected = manifest["arrays"]
    if set(arrays) != set(expected):
        raise CatalogueError(f"{npz_path}: arrays {sorted(arrays)} differ from the manifest's {sorted(expected)}")
    for name, spec in expected.items():
        arr = arrays[name]
        if list(arr.shape) != list(spec.get("shape", [])) or arr.dtype.str != spec.get("dtype"):
            raise CatalogueError(f"{npz_path}: array {name!r} has shape {arr.shape} dtype {arr.dtype.str}, "
                                 f"manifest says {spec}")
    return arrays, manifest


# ---------------------------------------------------------------------------
# combinatorial objects

# kind -> function(arrays, metadata) -> object (must re-verify the object)
_LOADERS: dict[str, Callable[[dict[str, np.ndarray], dict[str, Any]], Any]] = {}


def register_loader(kind: str, loader: Callable[[dict[str, np.ndarray], dict[str, Any]], Any]) -> None:
    """Register how to rebuild objects of ``kind`` from a bundle's arrays and metadata."""
    _LOADERS[kind] = loader


def _object_arrays(obj: Any) -> dict[str, np.ndarray]:
    arrays = {"assignment": np.asarray(obj.assignment, dtype=np.int8)}
    adjacency = getattr(obj, "adjacency", None)
    if adjacency is not None:
        arrays["adjacency"] = np.asarray(adjacency, dtype=np.int8)
    return arrays


def export_object(obj: Any, directory: str | Path = "designs", name: str | None = None, *,
                  overwrite: bool = False, extra_metadata: dict[str, Any] | None = None) -> Path:
    """Verify a combinatorial object and export it as a bundle under ``directory/<kind>/<name>``.

    The object is verified before anything is written (a failing object is never
    exported). The manifest records kind, parameters, construction, seed (if any),
    the verification result and provenance.
    """
    for attr in ("assignment", "params", "verify"):
        if not hasattr(obj, attr):
            raise InvalidArgumentError("obj", f"must be a gcsim combinatorial object (no .{attr})")
    obj.verify()
    kind = getattr(obj, "kind", type(obj).__name__.lower())
    if name is None:
        name = "_".join(str(p) for p in obj.params)
    meta = {
        "kind": kind,
        "class": f"{type(obj).__module__}.{type(obj).__qualname__}",
        "params": list(obj.params),
        "construction": getattr(obj, "construction", None),
        "seed": getattr(obj, "seed", None) if getattr(obj, "seed", None) is not None
        else getattr(obj, "metadata", {}).get("seed"),
        "object_metadata": getattr(obj, "metadata", {}),
        "verified": True,
    }
    if hasattr(obj, "group"):
        meta["group"] = obj.group
    if hasattr(obj, "catalogue_metadata"):
        meta.update(obj.catalogue_metadata())
    if extra_metadata:
        meta.update(extra_metadata)
    arrays = _object_arrays(obj)
    if hasattr(obj, "connection_sets"):
        arrays["connection_sets"] = np.asarray(obj.connection_sets, dtype=np.int64)
    if hasattr(obj, "catalogue_arrays"):
        arrays.update(obj.catalogue_arrays())
    return save_bundle(Path(directory) / kind / name, arrays, meta, overwrite=overwrite)


def load_object(path: str | Path, *, verify: bool = True) -> Any:
    """Load an exported combinatorial object and re-verify it from the file alone."""
    arrays, manifest = load_bundle(path)
    meta = manifest["metadata"]
    kind = meta.get("kind")
    _ensure_default_loaders()
    if kind not in _LOADERS:
        raise CatalogueError(f"{path}: no loader for kind {kind!r} (known: {sorted(_LOADERS)})")
    try:
        obj = _LOADERS[kind](arrays, meta)
        if verify:
            obj.verify()
    except CatalogueError:
        raise
    except Exception as exc:  # a loaded object that does not verify is refused
        raise CatalogueError(f"{path}: stored {kind} does not verify: {exc}") from exc
    if tuple(obj.params) != tuple(meta.get("params", ())):
        raise CatalogueError(f"{path}: parameters {tuple(obj.params)} of the stored matrix differ from the "
                             f"manifest's {tuple(meta.get('params', ()))}")
    return obj


def list_catalogue(directory: str | Path = "designs") -> list[dict[str, Any]]:
    """One summary dict per bundle found under ``directory`` (not validated; see :func:`load_bundle`)."""
    rows = []
    for json_path in sorted(Path(directory).rglob("*.json")):
        try:
            man = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(man, dict) and man.get("format") == BUNDLE_FORMAT:
            md = man.get("metadata", {})
            rows.append({"path": str(json_path.with_suffix("")), "kind": md.get("kind"),
                         "params": md.get("params"), "construction": md.get("construction")})
    return rows


_DEFAULTS_LOADED = False


def _ensure_default_loaders() -> None:
    global _DEFAULTS_LOADED
    if _DEFAULTS_LOADED:
        return
    from . import loaders  # noqa: F401  (registers the built-in kinds)

    _DEFAULTS_LOADED = True
