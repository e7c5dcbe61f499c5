"""Export CERAR designs to the ``designs/`` catalogue and load them back with validation.

A design is stored as a catalogue bundle (:mod:`gcsim.io.catalogue`): ``<stem>.npz`` holds
``encoders`` (N, c, c) and ``decoders`` (N, c, L) in float64, ``<stem>.json`` the checksummed
manifest. Its ``metadata`` records ``kind="cerar"``, ``N, c, L``, the construction ``method``,
the **kappa certificate** (SVD condition number of every ``A_j`` and ``D_i``, with the caps when
the design was optimized), the **error metrics** (Frobenius, relative MSE, worst case,
per-worker errors; see :func:`gcsim.cerar.optimize.design_metrics`), solver, seed, the
construction parameters and library versions.

Loading re-verifies everything from the arrays alone: file types, sizes, checksum and shapes
(by :func:`~gcsim.io.catalogue.load_bundle`, which refuses FIFOs, devices, oversized files and
zip bombs before reading), then the arrays must be finite real floating-point matrices, the
kappa certificate and the error metrics recomputed with NumPy must match the manifest within
tolerances derived from rounding-error bounds (so a design exported on a machine with another
BLAS kernel loads; see ``_metric_tolerances``), and the kappas must respect the recorded caps. Any mismatch raises
:class:`~gcsim.errors.CatalogueError`. Writing goes through
:func:`~gcsim.io.catalogue.save_bundle` (a reader sees the old bundle or the new one, even if
the writer is killed), and the file name must be a plain name inside ``directory``.
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
#: Constant of the O(.) in the rounding-error bounds below (as in the test suite's tolerances).
_SAFETY = 10.0
_U = float(np.finfo(np.float64).eps) / 2  # unit roundoff of float64
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
    from importlib import metadata

    from .. import __version__

    out: dict[str, Any] = {"gcsim": __version__, "numpy": np.__version__}
    for mod in ("cvxpy", "scs"):
        try:  # the installed distribution's version, without importing the (slow to import) solver
            out[mod] = metadata.version(mod)
        except Exception:  # optional in a loader-only environment
            out[mod] = None
    return out


def export_design(design: CerarDesign, directory: str | Path, name: str | None = None, *,
                  overwrite: bool = False) -> Path:
    """Write a CERAR design and its certificate as a catalogue bundle ``directory/name.{npz,json}``.

    Parameters
    ----------
    design : CerarDesign
    directory : path
        The folder to write into (created if missing); there is no default, so nothing
        is written into the current folder or a repository by accident.
    name : str, optional
        Plain file stem inside ``directory`` (no folders, no leading ``.``; see
        :func:`gcsim.io.catalogue.check_bundle_name`); default
        ``<method>_N<N>_c<c>[_kappa<k> | _eps<e>]``.
    overwrite : bool
        Replace an existing bundle (otherwise ``FileExistsError``).

    Returns
    -------
    Path
        The JSON manifest.

    Raises
    ------
    InvalidArgumentError
        Not a design, a name that is not a plain file name (``"../x"``, ``"/abs"``), or a
        ``directory`` that exists and is not a folder.
    FileExistsError
        The bundle exists and ``overwrite`` is false.

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
    from ..io.catalogue import check_bundle_name, save_bundle
    from ..io.manifest import check_folder

    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    if name is None:
        name = _default_name(design)
    check_bundle_name("name", name)
    check_folder("directory", directory)
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


def _gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u), the relative error bound of a length-n sum or dot product."""
    nu = n * _U
    return nu / (1.0 - nu) if nu < 1 else math.inf


def _kappa_tolerance(kappa: np.ndarray, p: int) -> np.ndarray:
    """Absolute tolerance between two float64 evaluations of ``kappa = s_1 / s_r`` (SVD of p-dimensional matrices).

    A backward-stable SVD returns singular values with ``|ds| <= p u s_1`` (Weyl), so
    ``|dkappa| <= kappa * p u kappa / (1 - p u kappa)``; two machines (BLAS kernels) may each
    err by that much.  Where ``SAFETY p u kappa >= 1`` float64 cannot reproduce kappa at all
    and the tolerance is infinite (the caps are checked separately).
    """
    kappa = np.asarray(kappa, dtype=float)
    rel = _SAFETY * p * _U * kappa
    with np.errstate(over="ignore", invalid="ignore"):
        tol = np.where(rel < 1, 2 * kappa * rel / np.maximum(1 - rel, 1e-300), np.inf)
    return np.where(np.isfinite(kappa), tol, 0.0)


def _metric_tolerances(design: CerarDesign, metrics: dict[str, Any]) -> dict[str, Any]:
    """Absolute tolerances between two float64 evaluations of the error metrics (any BLAS kernel).

    Each ``E_{i,m} = D_i S_{m-1} A_{i-m} - I`` is a c x c product of length-c dot products,
    so (Higham, Thm 3.5) ``||dE_{i,m}||_F <= gamma_c ||D_i||_F ||A_{i-m}||_F =: delta_{i,m}``.
    Then ``|d frobenius| <= sum (2 ||E_{i,m}||_F delta_{i,m} + delta_{i,m}^2) + gamma_M frobenius``
    (M terms summed), and for the per-worker spectral norms (Weyl, plus the SVD's own
    backward error) ``|dw_i| <= sqrt(sum_m delta_{i,m}^2) + q u w_i`` with ``q = (N-1) c``.
    The stored and the recomputed values may each carry that error, hence the factor 2.
    """
    A, D, N, c = design.encoders, design.decoders, design.N, design.c
    E = design.error_operators()                                       # (N, N-1, c, c)
    src = (np.arange(N)[:, None] - np.arange(1, N)[None, :]) % N
    delta = _gamma(c) * np.linalg.norm(D, axis=(1, 2))[:, None] * np.linalg.norm(A, axis=(1, 2))[src]
    e_norm = np.linalg.norm(E, axis=(2, 3))
    fro = float(np.sum(E * E))
    tol_fro = 2 * _SAFETY * (float(np.sum(2 * e_norm * delta + delta ** 2)) + _gamma(E.size) * fro)
    w = np.asarray(metrics["worker_errors"], dtype=float)
    tol_w = 2 * _SAFETY * (np.sqrt(np.sum(delta ** 2, axis=1)) + (N - 1) * c * _U * w)
    return {"frobenius": tol_fro, "mean_relative_mse": tol_fro / (N ** 2 * c),
            "worst_case": float(np.max(tol_w)), "worker_errors": tol_w,
            "kappa_A": _kappa_tolerance(metrics["kappa_A"], c),
            "kappa_D": _kappa_tolerance(metrics["kappa_D"], design.L),
            "kappa_A_max": float(np.max(_kappa_tolerance(metrics["kappa_A"], c))),
            "kappa_D_max": float(np.max(_kappa_tolerance(metrics["kappa_D"], design.L)))}


def _close(stored: Any, recomputed: Any, tol: Any) -> bool:
    """``|stored - recomputed| <= tol`` entrywise (equal infinities match; shapes must agree)."""
    try:
        a = np.asarray(stored, dtype=float)
        b = np.asarray(recomputed, dtype=float)
    except (TypeError, ValueError):
        return False
    if a.shape != b.shape or np.isnan(a).any():
        return False
    with np.errstate(invalid="ignore"):
        ok = (a == b) | (np.abs(a - b) <= np.asarray(tol, dtype=float))
    return bool(np.all(ok))


def load_design(path: str | Path, *, max_bytes: int | None = None) -> CerarDesign:
    """Load a CERAR design bundle and re-verify its certificate and metrics from the arrays alone.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    max_bytes : int, optional
        Size bound of :func:`gcsim.io.catalogue.load_bundle` (default its ``DEFAULT_MAX_BYTES``).

    Raises
    ------
    CatalogueError
        Missing/tampered/truncated/non-regular/oversized files (checksum, format, shapes), a
        bundle of another kind, arrays that are not finite real floating-point matrices or are
        inconsistent with ``N, c, L``, or a kappa certificate / error metric that differs from
        the value recomputed from the arrays, or a kappa above its recorded cap.
    """
    from ..io.catalogue import DEFAULT_MAX_BYTES, load_bundle

    arrays, manifest = load_bundle(path, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
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
    for key in ("N", "c", "L"):
        if not isinstance(meta[key], int) or isinstance(meta[key], bool):
            raise CatalogueError(f"{path}: {key} must be an integer, got {meta[key]!r}")
    for key, arr in arrays.items():
        # export writes float64; an integer or complex array was not written by gcsim, and a
        # non-finite entry would make every certificate meaningless
        if arr.dtype.kind != "f":
            raise CatalogueError(f"{path}: {key} has dtype {arr.dtype}, expected real floating point (float64)")
        if not np.all(np.isfinite(arr)):
            raise CatalogueError(f"{path}: {key} has non-finite entries")
    for key in ("certificate", "metrics"):
        if not isinstance(meta[key], dict):
            raise CatalogueError(f"{path}: {key} must be a JSON object, got {type(meta[key]).__name__}")
    if not isinstance(meta.get("params") or {}, dict):
        raise CatalogueError(f"{path}: params must be a JSON object, got {type(meta['params']).__name__}")
    try:
        design = CerarDesign(meta["N"], meta["c"], arrays["encoders"], arrays["decoders"],
                             method=str(meta["method"]), params=dict(meta.get("params") or {}))
    except (InvalidArgumentError, TypeError, ValueError) as exc:
        raise CatalogueError(f"{path}: arrays do not form a CERAR design: {exc}") from None
    if design.L != meta["L"]:
        raise CatalogueError(f"{path}: L = {meta['L']} in the manifest, but c + N - 2 = {design.L}")
    m = design_metrics(design)
    # tolerances from rounding-error bounds: a design exported on another machine (BLAS kernel)
    # loads, and a stored value off by more than float64 can explain is refused
    tol = _metric_tolerances(design, m)
    cert, stored = meta["certificate"], meta["metrics"]
    for key in ("kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max"):
        if not _close(cert.get(key), m[key], tol[key]):
            raise CatalogueError(f"{path}: kappa certificate {key} does not match the arrays "
                                 f"(stored {cert.get(key)}, recomputed {m[key]})")
    for key in _METRIC_KEYS:
        if not _close(stored.get(key), m[key], tol[key]):
            raise CatalogueError(f"{path}: error metric {key} does not match the arrays "
                                 f"(stored {stored.get(key)}, recomputed {m[key]})")
    caps = cert.get("caps") or {}
    if not isinstance(caps, dict):
        raise CatalogueError(f"{path}: certificate caps must be a JSON object, got {caps!r}")
    for key, achieved in (("kappa_A", m["kappa_A_max"]), ("kappa_D", m["kappa_D_max"])):
        cap = caps.get(key)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))):
            raise CatalogueError(f"{path}: the recorded cap {key} must be a number, got {cap!r}")
        # the optimizer certified kappa <= cap (1 + CERT_RTOL) on its machine; here kappa is
        # recomputed with this machine's rounding, which may add up to the SVD bound
        if cap is not None and (not math.isfinite(float(cap))
                                or achieved > float(cap) * (1 + CERT_RTOL) + tol[f"{key}_max"]):
            raise CatalogueError(f"{path}: {key} = {achieved} exceeds the recorded cap {cap}")
    design.params.update({"catalogue_path": str(Path(path)), "certificate": cert, "metrics": stored})
    return design
