"""The CERAR design object: encoders A_i and decoders D_i of a ring of N workers (docs/theory.md §50).

Protocol recap (a reconstruction consistent with the source abstract; :mod:`gcsim.cerar.ring`):
worker i splits its gradient into c components (rows of G_i in R^{c x w}),
sends coded symbols x_i^(tau) = A_i[tau,:] G_i (tau = 1..c) around the ring for
L = c + N - 2 rounds, and decodes with D_i in R^{c x L}.  The error operator from
worker i-m to worker i is

    E_{i,m} = D_i S_{m-1} A_{i-m} - I_c,      m = 1..N-1,

with the shift matrix S_s in {0,1}^{L x c}, (S_s)[tau+s, tau] = 1 (0-based).
The output of worker i is  g_hat_i = sum_j G_j + sum_m E_{i,m} G_{i-m}.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._validation import check_int
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from ..io._torch import to_torch_tensors
from .metrics import (
    METRIC_KEYS,
    SAFETY,
    certificate_problems,
    design_metrics,
    error_operators,
    gamma,
)
from .ring import num_rounds

__all__ = ["CerarDesign", "CerarParams", "CERAR_SCHEMA"]

#: Version of the bundle metadata layout of a CERAR design (independent of the bundle format):
#: 2 has ``params`` = [N, c, L] and the construction's parameters in ``construction_params``;
#: 1 (still read) had them in ``params``.
CERAR_SCHEMA = 2
_SCHEMAS = (1, 2)
_U = float(np.finfo(np.float64).eps) / 2
#: construction metadata that the certificate / metrics carry already (not repeated in the bundle)
_CERTIFIED = (*METRIC_KEYS, "kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max", "kappa_max")
#: constructions whose E_{i,m} vanish for i >= m (the path i-m -> i does not cross the seam)
_SEAMLESS = ("exact", "vandermonde", "perturbation")


class CerarParams(NamedTuple):
    """Parameters of a CERAR ring: N workers, c components, L = c + N - 2 rounds."""

    N: int
    c: int
    L: int


@dataclass(frozen=True, eq=False)
class CerarDesign:
    """Encoders and decoders of a CERAR ring (immutable; arrays are read-only).

    Attributes
    ----------
    N : int
        Number of workers on the ring (N >= 2).
    c : int
        Number of components each gradient is split into (c >= 1).
    encoders : ndarray, shape (N, c, c)
        ``encoders[j]`` is A_j; coded symbol tau of worker j is ``A_j[tau] @ G_j``.
    decoders : ndarray, shape (N, c, L)
        ``decoders[i]`` is D_i.
    method : str
        Construction name ("exact", "vandermonde", "perturbation", "optimized", ...).
    metadata : mapping
        Construction parameters and records, read-only (eps, kappa, seed, solver, the optimizer's
        history, ...).
    """

    kind: ClassVar[str] = "cerar"

    N: int
    c: int
    encoders: np.ndarray
    decoders: np.ndarray
    method: str = "custom"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        N = check_int("N", self.N, minimum=2)
        c = check_int("c", self.c, minimum=1)
        L = num_rounds(N, c)
        enc = np.asarray(self.encoders)
        dec = np.asarray(self.decoders)
        for name, arr in (("encoders", enc), ("decoders", dec)):
            if np.iscomplexobj(arr) or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
                raise InvalidArgumentError(name, f"must be a real numeric array, got dtype {arr.dtype}")
        enc = enc.astype(float)
        dec = dec.astype(float)
        if enc.shape != (N, c, c):
            raise InvalidArgumentError("encoders", f"must have shape (N, c, c) = {(N, c, c)}, got {enc.shape}")
        if dec.shape != (N, c, L):
            raise InvalidArgumentError("decoders", f"must have shape (N, c, L) = {(N, c, L)}, got {dec.shape}")
        for name, arr in (("encoders", enc), ("decoders", dec)):
            bad = ~np.isfinite(arr)
            if np.any(bad):
                where = tuple(int(x) for x in np.argwhere(bad)[0])
                raise InvalidArgumentError(
                    name, f"contain NaN or inf ({int(bad.sum())} entries, first at index {where})"
                )
            arr.setflags(write=False)
        if not isinstance(self.metadata, Mapping):
            raise InvalidArgumentError("metadata", f"must be a mapping, got {type(self.metadata).__name__}")
        # frozen: the validated values are set once, here
        object.__setattr__(self, "N", N)
        object.__setattr__(self, "c", c)
        object.__setattr__(self, "encoders", enc)
        object.__setattr__(self, "decoders", dec)
        object.__setattr__(self, "method", str(self.method))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    @property
    def L(self) -> int:
        """Number of rounds, c + N - 2."""
        return num_rounds(self.N, self.c)

    @property
    def params(self) -> CerarParams:
        """``CerarParams(N, c, L)``."""
        return CerarParams(self.N, self.c, self.L)

    def error_operators(self) -> np.ndarray:
        """E[i, m-1] = D_i S_{m-1} A_{(i-m) mod N} - I_c, shape (N, N-1, c, c)."""
        return error_operators(self.encoders, self.decoders)

    # ------------------------------------------------------------------------------------------
    # verification

    def verify(self) -> bool:
        """Check the identities the construction promises (docs/theory.md §50); True or raise.

        Every design: shapes (N, c, c) and (N, c, L) and finite entries.  Constructions
        "exact", "vandermonde" and "perturbation" build ``D_i S_{m-1} = B_{i-m}`` and
        ``A_j = B_j^{-1}``, so ``E_{i,m} = 0`` whenever the path ``i-m -> i`` does not cross the
        seam (``i >= m``); "exact" makes every ``E_{i,m}`` vanish; "perturbation" with ``eps`` has
        seam error ``||E_{i,m}||_2 = 1 - (1+eps)^{-N r*}`` for ``i < m``.  These are checked
        within the rounding bound ``SAFETY (gamma_c + 2 c u) ||D_i||_F ||A_{i-m}||_F`` (the
        products, plus the backward error of the inversion ``A_j = B_j^{-1}``).  A certificate in
        the metadata (a loaded design) must match the arrays (:func:`gcsim.cerar.metrics.certificate_problems`).

        Raises
        ------
        VerificationError
            Naming the identity that failed.

        Examples
        --------
        >>> from gcsim.cerar import design
        >>> design(3, 5, "perturbation", eps=0.1).verify()
        True
        """
        N, c, L = self.N, self.c, self.L
        if self.encoders.shape != (N, c, c) or self.decoders.shape != (N, c, L):
            raise VerificationError(
                f"CERAR design: arrays of shapes {self.encoders.shape}, {self.decoders.shape} for N = {N}, c = {c}"
            )
        if not (np.all(np.isfinite(self.encoders)) and np.all(np.isfinite(self.decoders))):
            raise VerificationError("CERAR design: non-finite encoder or decoder entries")
        if self.method in _SEAMLESS:
            E = self.error_operators()
            norms = np.linalg.norm(E, axis=(2, 3))  # Frobenius, (N, N-1)
            src = (np.arange(N)[:, None] - np.arange(1, N)[None, :]) % N
            scale = (
                np.linalg.norm(self.decoders, axis=(1, 2))[:, None] * np.linalg.norm(self.encoders, axis=(1, 2))[src]
            )
            tol = SAFETY * (gamma(c) + 2 * c * _U) * scale
            inner = np.arange(N)[:, None] >= np.arange(1, N)[None, :]  # i >= m: no seam
            must_vanish = np.ones_like(inner) if self.method == "exact" else inner
            bad = must_vanish & (norms > tol)
            if np.any(bad):
                i, m = (int(x) for x in np.argwhere(bad)[0])
                raise VerificationError(
                    f"CERAR {self.method} design: E_{{{i},{m + 1}}} = D_i S_m-1 A_i-m - I has "
                    f"norm {norms[i, m]:.3g} > {tol[i, m]:.3g}, but it vanishes for this "
                    "construction"
                )
            eps = self.metadata.get("eps")
            if self.method == "perturbation" and isinstance(eps, (int, float)) and eps > 0:
                r_star = -(-c // N) - 1
                seam = 1 - (1 + float(eps)) ** (-N * r_star)
                spec = np.linalg.norm(E, 2, axis=(2, 3))
                off = ~inner & (np.abs(spec - seam) > tol)
                if np.any(off):
                    i, m = (int(x) for x in np.argwhere(off)[0])
                    raise VerificationError(
                        f"CERAR perturbation design: seam error ||E_{{{i},{m + 1}}}||_2 = "
                        f"{spec[i, m]:.6g}, expected 1 - (1+eps)^(-N r*) = {seam:.6g}"
                    )
        cert, stored = self.metadata.get("certificate"), self.metadata.get("metrics")
        if isinstance(cert, Mapping) and isinstance(stored, Mapping):
            problems = certificate_problems(self, cert, stored)
            if problems:
                raise VerificationError(f"CERAR design: {problems[0]}")
        return True

    def __repr__(self) -> str:
        """Parameters, shapes and the scalar metadata; never the arrays (``encoders``, ``decoders`` hold them).

        >>> from gcsim.cerar import design
        >>> design(4, 8, "perturbation", eps=0.01)  # doctest: +ELLIPSIS
        CerarDesign(N=4, c=8, L=10, method='perturbation', encoders (4, 8, 8), decoders (4, 8, 10), metadata={...})
        """
        meta = _html.repr_items(self.metadata)
        return (
            f"CerarDesign(N={self.N}, c={self.c}, L={self.L}, method={self.method!r}, "
            f"encoders {self.encoders.shape}, decoders {self.decoders.shape}, metadata={meta})"
        )

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: params, method, κ of the encoders, verification status, the encoders.

        The picture puts ``|A_0| | |A_1| | ... | |A_{N-1}|`` side by side (c × N·c).  ``verify()`` runs
        once, on first display (the design is immutable); a failure is shown as
        "verification failed: ...", never raised (see :mod:`gcsim._html`).
        """

        def card() -> str:
            with np.errstate(divide="ignore", invalid="ignore"):
                sv = np.linalg.svd(self.encoders, compute_uv=False)
                kappa = float(np.max(sv[:, 0] / sv[:, -1]))
            return _html.object_html(
                title="CerarDesign",
                kind=self.kind,
                params=self.params,
                rows=[
                    ("method", self.method),
                    ("encoders, decoders", f"{self.encoders.shape}, {self.decoders.shape}"),
                    ("max κ(A_j)", kappa),
                    *_html.scalar_items(self.metadata, limit=8),
                ],
                status=_html.verdict(self),
                matrix=np.concatenate(list(self.encoders), axis=1),
                caption="encoders A_0 | A_1 | … | A_{N-1} side by side (c × N·c)",
            )

        return _html.safe_html(self, card)

    # ------------------------------------------------------------------------------------------
    # arrays round trip (the catalogue bundle)

    def to_torch(self, dtype: Any = None, device: Any = None) -> dict[str, Any]:
        """``encoders`` (N, c, c) and ``decoders`` (N, c, L) as new torch tensors.

        Parameters
        ----------
        dtype : str or torch.dtype, optional
            Floating dtype (``"float32"``, ``torch.bfloat16``, ...); default float64, the design's own.
        device : str or torch.device, optional
            E.g. ``"cuda:0"`` for the GPU that runs the ring; default torch's default device.

        Raises
        ------
        MissingDependencyError
            torch is not installed (``pip install 'gcsim[torch]'``).

        Examples
        --------
        >>> from gcsim.cerar import design
        >>> t = design(3, 5, "perturbation", eps=0.01).to_torch(dtype="float32")
        >>> tuple(t["encoders"].shape), tuple(t["decoders"].shape), t["encoders"].dtype
        ((3, 5, 5), (3, 5, 6), torch.float32)
        """
        return to_torch_tensors(self.to_arrays(), dtype=dtype, device=device, what="CerarDesign.to_torch")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """``encoders`` (N, c, c) and ``decoders`` (N, c, L), float64."""
        return {
            "encoders": np.ascontiguousarray(self.encoders, dtype=np.float64),
            "decoders": np.ascontiguousarray(self.decoders, dtype=np.float64),
        }

    def bundle_metadata(self, versions: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """JSON metadata of the bundle: params, construction, the kappa certificate and error metrics.

        ``kind``, ``schema``, ``params`` ``[N, c, L]``, ``construction`` (= ``method``), ``N, c, L``,
        ``method``, ``certificate`` (SVD condition number of every ``A_j`` and ``D_i``, their
        maxima, the caps of an optimized design), ``metrics`` (:data:`~gcsim.cerar.metrics.METRIC_KEYS`),
        ``solver``, ``seed``, ``construction_params`` (the construction metadata without what the
        certificate carries) and ``versions`` when given.
        """
        p = dict(self.metadata)
        metrics = design_metrics(self)
        caps = {
            "kappa_A": p.get("kappa"),
            "kappa_D": p.get("kappa_D_cap", p.get("kappa")) if self.method == "optimized" else None,
        }
        meta: dict[str, Any] = {
            "kind": self.kind,
            "schema": CERAR_SCHEMA,
            "params": list(self.params),
            "construction": self.method,
            "N": self.N,
            "c": self.c,
            "L": self.L,
            "method": self.method,
            "certificate": {
                "kappa_A": metrics["kappa_A"],
                "kappa_D": metrics["kappa_D"],
                "kappa_A_max": metrics["kappa_A_max"],
                "kappa_D_max": metrics["kappa_D_max"],
                "caps": caps,
                "method": KAPPA_METHOD,
            },
            "metrics": {k: metrics[k] for k in METRIC_KEYS},
            "solver": p.get("solver"),
            "seed": p.get("seed"),
            # the per-matrix arrays already live in the certificate / metrics: keep it lean
            "construction_params": {k: v for k, v in p.items() if k not in _CERTIFIED},
        }
        if versions is not None:
            meta["versions"] = dict(versions)
        return meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> CerarDesign:
        """Rebuild a design from its bundle and re-verify the certificate from the arrays alone.

        The arrays must be exactly ``encoders`` and ``decoders``, finite real floating point, of
        shapes consistent with ``N, c, L``; the kappa certificate and the error metrics recomputed
        with NumPy must match the metadata within rounding-error tolerances, the kappas must
        respect the recorded caps, and the construction's identities must hold (:meth:`verify`).

        Raises
        ------
        CatalogueError
            On any of these failures (the message says which).
        """
        meta = metadata
        if not isinstance(meta, Mapping) or meta.get("kind") != cls.kind:
            kind = meta.get("kind") if isinstance(meta, Mapping) else None
            raise CatalogueError(f"not a CERAR design (kind {kind!r})")
        if meta.get("schema") not in _SCHEMAS:
            raise CatalogueError(f"CERAR metadata schema {meta.get('schema')!r} is not supported")
        for key in ("N", "c", "L", "method", "certificate", "metrics"):
            if key not in meta:
                raise CatalogueError(f"manifest metadata lacks {key!r}")
        if set(arrays) != {"encoders", "decoders"}:
            raise CatalogueError(f"expected arrays encoders/decoders, found {sorted(arrays)}")
        for key in ("N", "c", "L"):
            if not isinstance(meta[key], int) or isinstance(meta[key], bool):
                raise CatalogueError(f"{key} must be an integer, got {meta[key]!r}")
        for key, arr in arrays.items():
            # export writes float64; an integer or complex array was not written by gcsim, and a
            # non-finite entry would make every certificate meaningless
            if arr.dtype.kind != "f":
                raise CatalogueError(f"{key} has dtype {arr.dtype}, expected real floating point (float64)")
            if not np.all(np.isfinite(arr)):
                raise CatalogueError(f"{key} has non-finite entries")
        for key in ("certificate", "metrics"):
            if not isinstance(meta[key], Mapping):
                raise CatalogueError(f"{key} must be a JSON object, got {type(meta[key]).__name__}")
        # every entry reported is recomputed (certificate_problems) or is the exporter's constant text
        if (
            set(meta["certificate"]) - _CERTIFICATE_KEYS
            or meta["certificate"].get("method", KAPPA_METHOD) != KAPPA_METHOD
        ):
            raise CatalogueError(
                f"certificate entries {sorted(meta['certificate'])} (method {meta['certificate'].get('method')!r:.60}) "
                f"are not the ones gcsim writes and recomputes ({sorted(_CERTIFICATE_KEYS)}, method {KAPPA_METHOD!r})"
            )
        if set(meta["metrics"]) != set(METRIC_KEYS):
            raise CatalogueError(f"metrics {sorted(meta['metrics'])} are not the recomputed {sorted(METRIC_KEYS)}")
        if meta["schema"] == 2 and meta.get("construction", meta["method"]) != meta["method"]:
            raise CatalogueError(
                f"construction {meta.get('construction')!r:.40} differs from method {meta['method']!r:.40}"
            )
        if meta["schema"] == 2 and meta.get("params") != [meta["N"], meta["c"], meta["L"]]:
            raise CatalogueError(
                f"params must be [N, c, L] = {[meta['N'], meta['c'], meta['L']]}, got {meta.get('params')!r}"
            )
        construction = (meta.get("construction_params") if meta["schema"] == 2 else meta.get("params")) or {}
        if not isinstance(construction, Mapping):
            raise CatalogueError(f"construction_params must be a JSON object, got {type(construction).__name__}")
        try:
            design = cls(
                meta["N"],
                meta["c"],
                arrays["encoders"],
                arrays["decoders"],
                method=str(meta["method"]),
                metadata={**construction, "certificate": meta["certificate"], "metrics": meta["metrics"]},
            )
        except (InvalidArgumentError, TypeError, ValueError) as exc:
            raise CatalogueError(f"arrays do not form a CERAR design: {exc}") from None
        if design.L != meta["L"]:
            raise CatalogueError(f"L = {meta['L']} in the manifest, but c + N - 2 = {design.L}")
        caps = meta["certificate"].get("caps")
        if caps is not None and not isinstance(caps, Mapping):
            raise CatalogueError(f"certificate caps must be a JSON object, got {caps!r}")
        try:
            design.verify()
        except VerificationError as exc:
            raise CatalogueError(str(exc).removeprefix("CERAR design: ")) from None
        return _check_construction_label(design)


#: How the kappa certificate is computed (the text a bundle's ``certificate.method`` must hold).
KAPPA_METHOD = "numpy.linalg.svd, kappa = sigma_1 / sigma_c"
#: The entries of a bundle's kappa certificate (each recomputed on load, or the text above).
_CERTIFICATE_KEYS = frozenset({"kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max", "caps", "method"})

#: Closed-form constructions a loaded design's label is re-derived for: the keyword each reads.
_REBUILT = {"exact": ("basis",), "vandermonde": ("eps",), "perturbation": ("eps",)}

#: ``method -> build(N, c, **params)`` for the constructions of :data:`_REBUILT`, registered by
#: :mod:`gcsim.cerar.factory` (which imports this module, so it is not imported from here; the
#: package's ``__init__`` imports the factory, so every load of a design finds them).
CLOSED_FORMS: dict[str, Any] = {}


def _check_construction_label(design: CerarDesign) -> CerarDesign:
    """A closed-form label (``method`` and its ``construction_params``) is the arrays' construction, or CatalogueError.

    The design is built again from ``(N, c)``, the stated method and its parameters, and the
    arrays are compared with the rebuilt ones, relative to their Frobenius norms, within
    ``1e-9 * max(1, kappa)`` (``kappa``: the largest condition number of the rebuilt
    encoders, which scales the round-off of another machine's inversion).  A design whose
    rebuilt encoders keep under 6 digits (``kappa > 1e10``) is not compared (its label cannot be
    told from its arrays in float64) and keeps ``"optimized"``-style trust: its certificate and
    metrics only.  ``"optimized"`` is a search, not rebuilt, and any other name (a user's
    ``"custom"`` design) claims no construction: their certificate is what is verified.
    A numeric parameter the arrays do not determine (``eps`` of a perturbation design with
    ``r* = 0``: every ``eps`` builds the same arrays) is not reported: the design is returned
    without it.
    """
    method = design.method
    if method not in _REBUILT:  # "optimized", or a user's own name ("custom"): no closed form is claimed
        return design
    build = CLOSED_FORMS.get(method)
    if build is None:
        raise CatalogueError(f"the {method!r} label cannot be checked: gcsim.cerar.factory has not registered it")
    params = {k: design.metadata[k] for k in _REBUILT[method] if k in design.metadata}
    try:
        again = build(design.N, design.c, **params)
    except (InvalidArgumentError, TypeError, ValueError) as exc:
        raise CatalogueError(f"method {method!r} with {params} does not build a design here: {exc}") from None
    with np.errstate(all="ignore"):
        kappa = float(np.max(np.linalg.cond(again.encoders))) if again.encoders.size else 1.0
    if not np.isfinite(kappa) or kappa > 1e10:
        return design
    tol = 1e-9 * max(1.0, kappa)

    def same_arrays(other: CerarDesign) -> str | None:
        for name, got, want in (
            ("encoders", design.encoders, other.encoders),
            ("decoders", design.decoders, other.decoders),
        ):
            scale = max(float(np.linalg.norm(want)), 1.0)
            if got.shape != want.shape or float(np.linalg.norm(got - want)) > tol * scale:
                return name
        return None

    name = same_arrays(again)
    if name is not None:
        raise CatalogueError(
            f"the {name} are not the {method} construction's with {params} (N = {design.N}, c = {design.c}): "
            "the label does not match the arrays"
        )
    stated = {k for k in design.metadata if k not in ("certificate", "metrics")}
    if stated != set(again.metadata):
        raise CatalogueError(
            f"construction_params {sorted(stated)} are not the {method} construction's {sorted(again.metadata)}"
        )
    for key, value in again.metadata.items():  # derived construction parameters (r_star, nodes, basis)
        stored = design.metadata[key]
        if isinstance(value, str) or isinstance(stored, str):
            same = stored == value
        else:
            try:
                a, b = np.asarray(stored, dtype=float), np.asarray(value, dtype=float)
                same = a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=0.0))
            except (TypeError, ValueError):
                same = False
        if not same:
            raise CatalogueError(f"construction parameter {key!r} = {stored!r:.60}, but {method} gives {value!r:.60}")
    undetermined = []
    for key, value in params.items():  # a number every value of which builds these arrays is not reported
        if isinstance(value, float) and key in again.metadata:
            try:
                other = build(design.N, design.c, **{**params, key: value * 1.5 + 0.01})
            except (InvalidArgumentError, TypeError, ValueError):
                continue
            if same_arrays(other) is None:
                undetermined.append(key)
    if not undetermined:
        return design
    kept = {k: v for k, v in design.metadata.items() if k not in undetermined}
    return dataclasses.replace(design, metadata=kept)
