"""Export CERAR designs to the ``designs/`` catalogue and load them back with validation.

A design is stored as a catalogue bundle (:mod:`gcsim.io.bundle`): ``<stem>.npz`` holds
``encoders`` (N, c, c) and ``decoders`` (N, c, L) in float64 (:meth:`CerarDesign.to_arrays`),
``<stem>.json`` the checksummed manifest, whose ``metadata`` is
:meth:`CerarDesign.bundle_metadata`: ``kind="cerar"``, ``params`` ``[N, c, L]``, the
construction ``method``, the **kappa certificate** (SVD condition number of every ``A_j`` and
``D_i``, with the caps when the design was optimized), the **error metrics** (Frobenius, relative
MSE, worst case, per-worker errors; :func:`gcsim.cerar.metrics.design_metrics`), solver, seed,
the construction parameters and library versions.

Loading re-verifies everything from the arrays alone: file types, sizes, checksum and shapes
(by :func:`~gcsim.io.bundle.load_bundle`, which refuses FIFOs, devices, oversized files and
zip bombs before reading), then :meth:`CerarDesign.from_arrays`: the arrays must be finite real
floating-point matrices, the kappa certificate and the error metrics recomputed with NumPy must
match the manifest within tolerances derived from rounding-error bounds (so a design exported on
a machine with another BLAS kernel loads; :func:`gcsim.cerar.metrics.metric_tolerances`), the
kappas must respect the recorded caps and the construction's identities must hold. Any mismatch
raises :class:`~gcsim.errors.CatalogueError`. Writing goes through
:func:`~gcsim.io.bundle.save_bundle` (a reader sees the old bundle or the new one, even if
the writer is killed), and the file name must be a plain name inside ``directory``.
"""

from __future__ import annotations

import dataclasses
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_bool
from .._version import __version__
from ..errors import CatalogueError, InvalidArgumentError
from ..io.bundle import DEFAULT_MAX_BYTES, check_bundle_name, load_bundle, save_bundle
from ..io.manifest import check_folder
from .design import CerarDesign

__all__ = ["export_design", "load_design"]


def _default_name(design: CerarDesign) -> str:
    name = f"{design.method}_N{design.N}_c{design.c}"
    p = design.metadata
    if p.get("kappa") is not None:
        name += f"_kappa{float(p['kappa']):g}"
    elif p.get("eps") is not None:
        name += f"_eps{float(p['eps']):g}"
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def _versions() -> dict[str, Any]:
    out: dict[str, Any] = {"gcsim": __version__, "numpy": np.__version__}
    for mod in ("cvxpy", "scs"):
        try:  # the installed distribution's version, without importing the (slow to import) solver
            out[mod] = metadata.version(mod)
        except Exception:  # optional in a loader-only environment
            out[mod] = None
    return out


def export_design(
    design: CerarDesign, directory: str | Path, name: str | None = None, *, overwrite: bool = False
) -> Path:
    """Write a CERAR design and its certificate as a catalogue bundle ``directory/name.{npz,json}``.

    Parameters
    ----------
    design : CerarDesign
    directory : path
        The folder to write into (created if missing); there is no default, so nothing
        is written into the current folder or a repository by accident.
    name : str, optional
        Plain file stem inside ``directory`` (no folders, no leading ``.``; see
        :func:`gcsim.io.bundle.check_bundle_name`); default
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
    >>> from gcsim.cerar.factory import design
    >>> d = design(3, 5, "perturbation", eps=0.1)
    >>> p = export_design(d, tempfile.mkdtemp())
    >>> p.name
    'perturbation_N3_c5_eps0.1.json'
    >>> e = load_design(p)
    >>> bool(np.array_equal(e.encoders, d.encoders)), e.method
    (True, 'perturbation')
    """
    overwrite = check_bool("overwrite", overwrite)
    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    if name is None:
        name = _default_name(design)
    check_bundle_name("name", name)
    check_folder("directory", directory)
    return save_bundle(
        Path(directory) / name, design.to_arrays(), design.bundle_metadata(versions=_versions()), overwrite=overwrite
    )


def load_design(path: str | Path, *, max_bytes: int | None = None) -> CerarDesign:
    """Load a CERAR design bundle and re-verify its certificate and metrics from the arrays alone.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    max_bytes : int, optional
        Size bound of :func:`gcsim.io.bundle.load_bundle` (default its ``DEFAULT_MAX_BYTES``).

    Raises
    ------
    CatalogueError
        Missing/tampered/truncated/non-regular/oversized files (checksum, format, shapes), a
        bundle of another kind, arrays that are not finite real floating-point matrices or are
        inconsistent with ``N, c, L``, or a kappa certificate / error metric that differs from
        the value recomputed from the arrays, or a kappa above its recorded cap.
    """
    arrays, manifest = load_bundle(path, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    try:
        design = CerarDesign.from_arrays(arrays, manifest.get("metadata", {}))
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    # where it came from, for reports (the metadata already holds the certificate and metrics)
    return dataclasses.replace(design, metadata={**design.metadata, "catalogue_path": str(Path(path))})
