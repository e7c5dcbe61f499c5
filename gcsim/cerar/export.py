"""Export CERAR designs to the ``designs/`` catalogue and load them back with validation.

A design is stored as a catalogue bundle (:mod:`gcsim.io.catalogue`): ``<stem>.npz`` holds
``encoders`` (N, c, c) and ``decoders`` (N, c, L) in float64, ``<stem>.json`` the checksummed
manifest. Its ``metadata`` records ``kind="cerar"``, ``N, c, L``, the construction ``method``,
the **kappa certificate** (SVD condition number of every ``A_j`` and ``D_i``, with the caps when
the design was optimized), the **error metrics** (Frobenius, relative MSE, worst case,
per-worker errors; see :func:`gcsim.cerar.optimize.design_metrics`), solver, seed, the
construction parameters and library versions.

Loading re-verifies everything from the arrays alone: checksum and shapes (by
:func:`~gcsim.io.catalogue.load_bundle`), then the kappa certificate and the error metrics
recomputed with NumPy must match the manifest (relative ``1e-9``), and the kappas must respect
the recorded caps. Any mismatch raises :class:`~gcsim.errors.CatalogueError`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CatalogueError, InvalidArgumentError
from .design import CerarDesign
from .optimize import CERT_RTOL, design_metrics

__all__ = ["export_design", "load_design", "CERAR_KIND", "CERAR_SCHEMA"]

CERAR_KIND = "cerar"
#: Version of the metadata layout below (independent of the bundle format version).
CERAR_SCHEMA = 1
_RTOL = 1e-9
_ATOL = 1e-12
_METRIC_KEYS = ("frobenius", "mean_relative_mse", "worst_case", "worker_errors")


def _default_name(design: CerarDesign) -> str:
    name = f"{design.method}_N{design.N}_c{design.c}"
    p = design.params or {}
    if p.get("kappa") is not None:
        name += f"_kappa{float(p['kappa']):g}"
    elif p.get("eps") is not None:
        name += f"_eps{float(p['eps']):g}"
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def _versions() -> dict[str, Any]:
    from .. import __version__

    out: dict[str, Any] = {"gcsim": __version__, "numpy": np.__version__}
    for mod in ("cvxpy", "scs"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # optional in a loader-only environment
            out[mod] = None
    return out


def export_design(design: CerarDesign, directory: str | Path = "designs/cerar", name: str | None = None, *,
                  overwrite: bool = False) -> Path:
    """Write a CERAR design and its certificate as a catalogue bundle ``directory/name.{npz,json}``.

    Parameters
    ----------
    design : CerarDesign
    directory : path
        Catalogue folder (default ``designs/cerar``).
    name : str, optional
        File stem; default ``<method>_N<N>_c<c>[_kappa<k> | _eps<e>]``.
    overwrite : bool
        Replace an existing bundle (otherwise ``FileExistsError``).

    Returns
    -------
    Path
        The JSON manifest.

    Examples
    --------
    >>> import tempfile
    >>> from gcsim.cerar.constructions import design
    >>> d = design(3, 5, "perturbation", eps=0.1)
    >>> p = export_design(d, tempfile.mkdtemp())
    >>> p.name
    'perturbation_N3_c5_eps0.1.json'
    >>> e = load_design(p)
    >>> bool(np.array_equal(e.encoders, d.encoders)), e.method
    (True, 'perturbation')
    """
    from ..io.catalogue import save_bundle

    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    if name is None:
        name = _default_name(design)
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise InvalidArgumentError("name", f"must be a plain file stem, got {name!r}")
    p = dict(design.params or {})
    metrics = design_metrics(design)
    caps = {"kappa_A": p.get("kappa"), "kappa_D": p.get("kappa_D_cap", p.get("kappa"))
            if design.method == "optimized" else None}
    # the per-matrix arrays already live in the certificate / metrics: keep params lean
    params = {k: v for k, v in p.items() if k not in (*_METRIC_KEYS, "kappa_A", "kappa_D", "kappa_A_max",
                                                      "kappa_D_max", "kappa_max")}
    meta = {
        "kind": CERAR_KIND,
        "schema": CERAR_SCHEMA,
        "N": design.N,
        "c": design.c,
        "L": design.L,
        "method": design.method,
        "certificate": {
            "kappa_A": metrics["kappa_A"],
            "kappa_D": metrics["kappa_D"],
            "kappa_A_max": metrics["kappa_A_max"],
            "kappa_D_max": metrics["kappa_D_max"],
            "caps": caps,
            "method": "numpy.linalg.svd, kappa = sigma_1 / sigma_c",
        },
        "metrics": {k: metrics[k] for k in _METRIC_KEYS},
        "solver": p.get("solver"),
        "seed": p.get("seed"),
        "params": params,
        "versions": _versions(),
    }
    arrays = {"encoders": np.ascontiguousarray(design.encoders, dtype=np.float64),
              "decoders": np.ascontiguousarray(design.decoders, dtype=np.float64)}
    return save_bundle(Path(directory) / name, arrays, meta, overwrite=overwrite)


def _close(a: Any, b: Any) -> bool:
    try:
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=_RTOL, atol=_ATOL))


def load_design(path: str | Path) -> CerarDesign:
    """Load a CERAR design bundle and re-verify its certificate and metrics from the arrays alone.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.

    Raises
    ------
    CatalogueError
        Missing/tampered/truncated files (checksum, format, shapes), a bundle of another kind,
        arrays inconsistent with ``N, c, L``, or a kappa certificate / error metric that differs
        from the value recomputed from the arrays, or a kappa above its recorded cap.
    """
    from ..io.catalogue import load_bundle

    arrays, manifest = load_bundle(path)
    meta = manifest.get("metadata", {})
    if not isinstance(meta, dict) or meta.get("kind") != CERAR_KIND:
        raise CatalogueError(f"{path}: not a CERAR design (kind {meta.get('kind') if isinstance(meta, dict) else None!r})")
    if meta.get("schema") != CERAR_SCHEMA:
        raise CatalogueError(f"{path}: CERAR metadata schema {meta.get('schema')!r} is not supported")
    for key in ("N", "c", "L", "method", "certificate", "metrics"):
        if key not in meta:
            raise CatalogueError(f"{path}: manifest metadata lacks {key!r}")
    if set(arrays) != {"encoders", "decoders"}:
        raise CatalogueError(f"{path}: expected arrays encoders/decoders, found {sorted(arrays)}")
    try:
        design = CerarDesign(meta["N"], meta["c"], arrays["encoders"], arrays["decoders"],
                             method=str(meta["method"]), params=dict(meta.get("params") or {}))
    except (InvalidArgumentError, TypeError, ValueError) as exc:
        raise CatalogueError(f"{path}: arrays do not form a CERAR design: {exc}") from None
    if design.L != meta["L"]:
        raise CatalogueError(f"{path}: L = {meta['L']} in the manifest, but c + N - 2 = {design.L}")
    m = design_metrics(design)
    cert, stored = meta["certificate"], meta["metrics"]
    for key in ("kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max"):
        if not _close(cert.get(key), m[key]):
            raise CatalogueError(f"{path}: kappa certificate {key} does not match the arrays "
                                 f"(stored {cert.get(key)}, recomputed {m[key]})")
    for key in _METRIC_KEYS:
        if not _close(stored.get(key), m[key]):
            raise CatalogueError(f"{path}: error metric {key} does not match the arrays "
                                 f"(stored {stored.get(key)}, recomputed {m[key]})")
    caps = cert.get("caps") or {}
    for key, achieved in (("kappa_A", m["kappa_A_max"]), ("kappa_D", m["kappa_D_max"])):
        cap = caps.get(key)
        if cap is not None and (not math.isfinite(float(cap)) or achieved > float(cap) * (1 + CERT_RTOL)):
            raise CatalogueError(f"{path}: {key} = {achieved} exceeds the recorded cap {cap}")
    design.params.update({"catalogue_path": str(Path(path)), "certificate": cert, "metrics": stored})
    return design
