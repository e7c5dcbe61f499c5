"""Exported codes: a folder holding an assignment, its encoder, its decoders and a manifest.

:meth:`gcsim.advisor.Advice.export` writes one such folder per chosen code::

    <folder>/
      advice.json             format "gcsim-advice-export": the question, the candidate, the files
      <kind>/assignment.*     the assignment (a catalogue bundle of its kind)
      encoder.{json,npz}      the encoder: a "scheme" bundle (dense B) or, when B is over
                              gcsim.limits.MAX_DENSE_ENTRIES, a "structured_scheme" bundle
                              (sparse incidence + diagonals, never B)
      decoders.{json,npz}     the decoder table (when one was written)

Every part is a catalogue bundle, so the folder is read here, in the catalogue layer, below
the advisor that writes it: :func:`gcsim.catalogue.load_object` on such a folder returns an
:class:`ExportedCode` whose every part was re-verified from the files alone, and ``gcsim load
FOLDER`` reports it.  The manifest's file entries are plain relative paths inside the folder
(a manifest naming ``../x`` or an absolute path is refused, never followed).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import _html
from ..coding.decoder_table import DecoderTable, load_decoder_table
from ..coding.schemes import Scheme
from ..coding.structured import CyclicStructuredRD, StructuredRD
from ..combinatorics.cyclic_design import CyclicDesign
from ..errors import CatalogueError
from ..io.bundle import DEFAULT_MAX_BYTES, MAX_MANIFEST_BYTES, check_path, load_bundle
from ..io.manifest import read_json_object
from .objects import load_object, register_folder_loader

__all__ = [
    "CODE_FORMAT",
    "CODE_MANIFEST",
    "ExportedCode",
    "load_code",
    "is_code_folder",
    "mask_digest",
    "straggler_sets",
    "table_masks",
]

#: Manifest file name of an exported code.
CODE_MANIFEST = "advice.json"
#: The ``format`` its manifest declares.
CODE_FORMAT = "gcsim-advice-export"
#: How the dot of a scheme's ``extras.<key>`` array names is written in a bundle.
_DOT = "__"


@dataclass(frozen=True)
class ExportedCode:
    """An exported code loaded back: assignment object, encoder, decoder table (or None), manifest.

    ``kind`` is ``"code"``; :attr:`params` are the assignment's; :meth:`verify` re-checks the
    three parts (each was verified when loaded).  ``scheme`` is a dense
    :class:`~gcsim.coding.Scheme`, or a :class:`~gcsim.coding.structured.StructuredRD` (or its
    sparse subclass) for a code exported beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`.
    """

    assignment: Any
    scheme: Scheme | StructuredRD
    decoders: DecoderTable | None
    manifest: Mapping[str, Any]
    #: The candidate's measurements :func:`load_code` re-derived from the verified decoder table
    #: (``error``, ``error_lo``, ``error_hi`` for a fixed-s uniform model measured exactly;
    #: ``worst_case`` over every pattern of ``s`` stragglers): the only ones a loaded code reports.
    measurements: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    kind = "code"

    @property
    def params(self) -> Any:
        """The assignment's parameters."""
        return self.assignment.params

    def verify(self) -> bool:
        """Re-verify the assignment, the encoder and the decoder table; True or VerificationError."""
        self.assignment.verify()
        self.scheme.verify()
        if self.decoders is not None:
            self.decoders.verify()
        return True

    def _candidate(self) -> Mapping[str, Any]:
        cand = self.manifest.get("candidate")
        return cand if isinstance(cand, Mapping) else {}

    def __repr__(self) -> str:
        """The candidate's name, the assignment's kind and parameters, the encoder, the table's size; never arrays."""
        table = "none" if self.decoders is None else f"{len(self.decoders)} patterns"
        name = str(self._candidate().get("name", "?"))[:60]
        return (
            f"ExportedCode({name!r}, {getattr(self.assignment, 'kind', type(self.assignment).__name__)} "
            f"{self.params}, encoder {type(self.scheme).__name__}(method={self.scheme.method!r}, "
            f"m={self.scheme.m}), decoders {table})"
        )

    def _repr_html_(self) -> str:
        """Card in Jupyter: the candidate, the question, the three parts, the decoding rule, the status, the assignment.

        ``verify()`` (every part again) runs once, on first display; the picture is the assignment
        where it is kept dense (a design kept sparse is shown without one).
        """

        def card() -> str:
            cand, question = self._candidate(), self.manifest.get("question")
            question = question if isinstance(question, Mapping) else {}
            obj = self.assignment
            dense = not getattr(obj, "is_sparse", False) and hasattr(obj, "assignment")
            table = self.decoders
            rows = [
                ("candidate", cand.get("name", "?")),
                (
                    "question",
                    f"n = {question.get('n', '?')}, load {question.get('load', '?')}, m = "
                    f"{question.get('m', '?')}, {question.get('model', '?')}",
                ),
                ("error", cand.get("error", "?")),
                ("assignment", f"{type(obj).__name__} {getattr(obj, 'params', '')}"),
                ("encoder", f"{type(self.scheme).__name__}, method {self.scheme.method}, m = {self.scheme.m}"),
                ("decoders", "none (the rule below)" if table is None else f"DecoderTable of {len(table)} patterns"),
                ("decoding", self.manifest.get("decoding", "?")),
            ]
            return _html.object_html(
                title="ExportedCode",
                kind=self.kind,
                params=self.params,
                rows=rows,
                status=_html.verdict(self),
                matrix=obj.assignment if dense else None,
                binary=True,
                caption="the assignment: rows are parts, columns workers",
            )

        return _html.safe_html(self, card)


def straggler_sets(masks: np.ndarray) -> list[list[int]]:
    """The stragglers (False entries) of each non-straggler mask, as lists of worker indices.

    >>> straggler_sets(np.array([[True, False, True], [False, False, True]]))
    [[1], [0, 1]]
    """
    return [np.flatnonzero(~mk).tolist() for mk in masks]


def table_masks(table: DecoderTable) -> np.ndarray:
    """The ``(count, n)`` boolean masks of a decoder table's rows, in row order (dense or structured table)."""
    parts = [mk for _, mk in table.iter_patterns()]
    return np.concatenate(parts).astype(bool) if parts else np.zeros((0, table.n), dtype=bool)


def mask_digest(masks: np.ndarray) -> str:
    """SHA-256 of a ``(count, n)`` boolean array (C order, one byte per entry)."""
    return hashlib.sha256(np.ascontiguousarray(masks, dtype=bool).tobytes()).hexdigest()


def is_code_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding an exported code's manifest (nothing else is read)."""
    p = Path(path)
    return p.is_dir() and (p / CODE_MANIFEST).is_file()


def _part(root: Path, files: Mapping[str, Any], key: str) -> Path:
    """The part ``files[key]`` as a path inside ``root``: a plain relative path, or CatalogueError."""
    value = files.get(key)
    if not isinstance(value, str) or not value:
        raise CatalogueError(f"{root}: {CODE_MANIFEST} 'files.{key}' must be a relative path, got {value!r:.80}")
    rel = PurePosixPath(value)
    if rel.is_absolute() or ".." in rel.parts or "\\" in value or any(ord(ch) < 32 for ch in value):
        raise CatalogueError(f"{root}: {CODE_MANIFEST} 'files.{key}' = {value!r:.80} leaves the folder; refused")
    return root.joinpath(*rel.parts)


def load_code(folder: str | os.PathLike, *, verify: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> ExportedCode:
    """Load an exported code folder, re-verifying every part from the files alone.

    The assignment and the encoder are loaded as catalogue bundles
    (:func:`gcsim.catalogue.load_object`), the decoders by
    :func:`~gcsim.coding.decoder_table.load_decoder_table` (every pattern re-solved); the
    encoder's assignment must be the exported assignment (compared as sparse incidences for a
    ``"structured_scheme"`` encoder or a ``"sparse_srg"`` assignment, whose incidence is ``Adj + I``
    or ``Adj``: no dense matrix), the table's encoder must be the encoder (the same method and
    the same ``B``; a structured table: the same incidence and diagonals, bit for bit), and the
    table must hold the patterns the manifest names (``decoder_patterns``), and the candidate's
    structural fields (``n``, ``N``, ``m``, ``encoder``, ``load``, ``data_fraction``,
    ``replication``) and the question's ``n`` must be the verified encoder's.  The candidate's
    measurements (``error``, its interval, bounds, ``worst_case``) must be finite, non-negative and
    consistent (``error_lo <= error <= error_hi``, ``lower_bound <= error_hi``), and each one the
    verified decoder table determines is re-derived from it and compared: ``worst_case`` over every
    pattern of ``s`` stragglers, and ``error`` for a fixed-s uniform model measured exactly
    (:attr:`ExportedCode.measurements` holds those; the others stay the advisor's record in
    :attr:`ExportedCode.manifest`, reported by nothing).

    Parameters
    ----------
    folder : path
        The folder :meth:`gcsim.advisor.Advice.export` returned.
    verify : bool
        Run each part's exact ``verify()`` and re-solve the decoder table (default).  With
        False the checksums and structural checks still run.
    max_bytes : int
        Size bound of each bundle read (:func:`gcsim.io.bundle.load_bundle`).

    Raises
    ------
    CatalogueError
        A missing or malformed manifest, a file entry outside the folder, or a part that does
        not load or verify.
    """
    root = check_path("folder", folder)
    try:
        manifest = read_json_object(root / CODE_MANIFEST, MAX_MANIFEST_BYTES)
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"{root}: no readable {CODE_MANIFEST} ({exc})") from None
    if manifest.get("format") != CODE_FORMAT:
        raise CatalogueError(f"{root}: {CODE_MANIFEST} is not an exported code (format {manifest.get('format')!r:.60})")
    files = manifest.get("files")
    if not isinstance(files, dict) or "assignment" not in files or "encoder" not in files:
        raise CatalogueError(f"{root}: {CODE_MANIFEST} lists no assignment and encoder")
    obj = load_object(_part(root, files, "assignment"), verify=verify, max_bytes=max_bytes)
    scheme = _load_encoder(_part(root, files, "encoder"), verify, max_bytes)
    if not _same_assignment(scheme, obj):
        raise CatalogueError(f"{root}: the encoder's assignment differs from the exported assignment")
    table = None
    if "decoders" in files:
        table = load_decoder_table(_part(root, files, "decoders"), verify=verify, max_bytes=max_bytes)
        if not _same_encoder(table.scheme, scheme):
            raise CatalogueError(f"{root}: the decoder table was made for another encoder than the exported one")
    _check_pattern_set(root, manifest.get("decoder_patterns"), table)
    derived = _check_candidate(root, manifest, scheme)
    measured = _check_measurements(root, manifest, table, derived["m"] * derived["N"])
    return ExportedCode(obj, scheme, table, MappingProxyType(manifest), MappingProxyType(measured))


#: The candidate's measurements: finite non-negative numbers (or null) when present.
_MEASURES = ("error", "error_lo", "error_hi", "worst_case", "lower_bound", "upper_bound", "spectral_bound")
#: Relative (and absolute, in units of the normalized error) tolerance of a re-derived measurement.
_REL, _ABS = 1e-9, 1e-12
_WORST = re.compile(r"exact over C\((\d+), ?(\d+)\)")


def _check_measurements(root: Path, manifest: Mapping[str, Any], table: Any, mN: int) -> dict[str, float]:
    """The candidate's measured numbers: consistent with each other, and re-derived where the table allows.

    Always: each of ``error``, its interval, the bounds and ``worst_case`` is null or a finite number
    >= 0 (never a bool), ``error_lo <= error <= error_hi``, ``lower_bound <= error_hi`` and
    ``error_lo <= upper_bound``.  From the verified decoder table (every pattern re-solved on load),
    when it holds every pattern of ``s`` stragglers: ``worst_case`` measured ``exact over C(n, s)`` is
    the largest of their errors / mN, and ``error`` (with its interval, a point) measured exactly for
    a fixed-s uniform model is their mean / mN.  A mismatch is a CatalogueError naming the field;
    the re-derived values are returned (what :attr:`ExportedCode.measurements` reports).
    """
    cand = manifest.get("candidate", {})
    values: dict[str, float] = {}
    for key in _MEASURES:
        if cand.get(key) is None:
            continue
        x = cand[key]
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise CatalogueError(f"{root}: {CODE_MANIFEST} candidate.{key} = {x!r:.40} is not a finite number >= 0")
        values[key] = float(x)

    def close(a: float, b: float) -> bool:
        return abs(a - b) <= _REL * max(abs(a), abs(b)) + _ABS

    def at_most(a: str, b: str) -> None:
        if a in values and b in values and values[a] > values[b] and not close(values[a], values[b]):
            raise CatalogueError(
                f"{root}: {CODE_MANIFEST} candidate.{a} = {values[a]!r} exceeds candidate.{b} = {values[b]!r}"
            )

    for a, b in (
        ("error_lo", "error"),
        ("error", "error_hi"),
        ("lower_bound", "error_hi"),
        ("error_lo", "upper_bound"),
    ):
        at_most(a, b)
    measured: dict[str, float] = {}
    if table is None or table.explicit or table.s_max is None:
        return measured
    n = table.n

    def errors_of(s: int) -> np.ndarray | None:  # the table's rows of exactly s stragglers, in row order
        if not 0 <= s <= table.s_max:
            return None
        start = sum(math.comb(n, t) for t in range(s))
        return np.asarray(table.errors[start : start + math.comb(n, s)], dtype=np.float64)

    found = _WORST.match(str(cand.get("worst_method", "")))
    if "worst_case" in values and found and int(found.group(1)) == n:
        errs = errors_of(int(found.group(2)))
        if errs is not None and errs.size:
            worst = float(errs.max()) / mN
            if not close(values["worst_case"], worst):
                raise CatalogueError(
                    f"{root}: {CODE_MANIFEST} candidate.worst_case = {values['worst_case']!r}, but the verified "
                    f"decoder table gives {worst!r} (the largest error over C({n}, {found.group(2)}) patterns / mN)"
                )
            measured["worst_case"] = worst
    question = manifest.get("question", {})
    s = question.get("s")
    fixed = str(question.get("model", "")).startswith("fixed-s uniform")
    if "error" in values and cand.get("error_method") == "exact" and fixed and type(s) is int:
        errs = errors_of(s)
        if errs is not None and errs.size:
            error = float(errs.mean()) / mN
            for key in ("error", "error_lo", "error_hi"):
                if key in values and not close(values[key], error):
                    raise CatalogueError(
                        f"{root}: {CODE_MANIFEST} candidate.{key} = {values[key]!r}, but the verified decoder "
                        f"table gives {error!r} (the mean error over C({n}, {s}) patterns / mN, measured exactly)"
                    )
                if key in values:
                    measured[key] = error
    return measured


def _same_number(stored: Any, derived: int | float) -> bool:
    """A stored number equal to the derived one (an int exactly; a float to 1e-12 relative); never a bool."""
    if isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return False
    if isinstance(derived, int):
        return type(stored) is int and stored == derived
    return abs(float(stored) - derived) <= 1e-12 * max(1.0, abs(derived))


def _check_candidate(root: Path, manifest: Mapping[str, Any], scheme: Any) -> dict[str, Any]:
    """The candidate's and the question's structural fields are the verified encoder's, or CatalogueError.

    ``candidate.n``, ``N``, ``m``, ``encoder``, ``load`` (most parts a worker holds),
    ``data_fraction`` (``load / N``) and ``replication`` (fewest workers holding a part) are
    recomputed from the encoder's assignment; ``question.n`` must be the encoder's ``n``.
    A field absent from an older manifest is not checked.
    """
    cand = manifest.get("candidate", {})
    question = manifest.get("question", {})
    if not isinstance(cand, dict) or not isinstance(question, dict):
        raise CatalogueError(f"{root}: {CODE_MANIFEST} 'candidate' and 'question' must be objects")
    if isinstance(scheme, CyclicStructuredRD):  # every worker holds k parts, every part k workers hold
        v, k, _ = scheme.design.params
        N, n, load, replication = v, v, k, k
    else:
        inc = _incidence(scheme)  # parts x workers, 0/1
        loads = np.asarray(inc.sum(axis=0)).ravel()
        holders = np.asarray(inc.sum(axis=1)).ravel()
        N, n = inc.shape
        load = int(loads.max()) if loads.size else 0
        replication = int(holders.min()) if holders.size else 0
    derived: dict[str, Any] = {
        "n": int(n),
        "N": int(N),
        "m": int(scheme.m),
        "load": load,
        "data_fraction": float(load / N) if N else 0.0,
        "replication": replication,
    }
    for key, want in derived.items():
        if key in cand and not _same_number(cand[key], want):
            raise CatalogueError(
                f"{root}: {CODE_MANIFEST} candidate.{key} = {cand[key]!r:.40}, but the verified encoder gives {want!r}"
            )
    if "encoder" in cand and cand["encoder"] != scheme.method:
        raise CatalogueError(
            f"{root}: {CODE_MANIFEST} candidate.encoder = {cand['encoder']!r:.40}, but the encoder is {scheme.method!r}"
        )
    if "n" in question and not _same_number(question["n"], derived["n"]):
        raise CatalogueError(
            f"{root}: {CODE_MANIFEST} question.n = {question['n']!r:.40}, but the verified encoder has n = {n}"
        )
    return derived


def _incidence(obj: Any) -> sp.csc_matrix:
    """The 0/1 pattern of an object's assignment as a canonical CSC matrix (its sparse ``incidence`` if it has one)."""
    inc = getattr(obj, "incidence", None)
    S = sp.csc_matrix(inc if sp.issparse(inc) else np.asarray(obj.assignment), dtype=np.int64, copy=True)
    S.sum_duplicates()
    S.eliminate_zeros()
    return S


def _same_assignment(scheme: Any, obj: Any) -> bool:
    """Whether the encoder's assignment is the object's: sparsely for a structured encoder or an object kept
    sparse (a :class:`~gcsim.coding.sparse_routes.SparseSRG`: its ``incidence`` ``Adj + I`` or ``Adj``), else dense."""
    cyclic = [x.design if isinstance(x, CyclicStructuredRD) else x for x in (scheme, obj)]
    if all(isinstance(x, CyclicDesign) for x in cyclic):  # both developed from a difference set: compare the sets
        return cyclic[0].v == cyclic[1].v and bool(np.array_equal(cyclic[0].base, cyclic[1].base))
    if not isinstance(scheme, StructuredRD) and not sp.issparse(getattr(obj, "incidence", None)):
        return bool(np.array_equal(scheme.assignment, np.asarray(obj.assignment)))
    a, b = _incidence(scheme), _incidence(obj)
    return a.shape == b.shape and (a != b).nnz == 0


def _same_encoder(table_scheme: Any, scheme: Any) -> bool:
    """Whether a loaded table's encoder is the loaded encoder: the same method and the same ``B`` (structured:
    incidence and diagonals; a ``B = A`` table read by an RD encoder, or the reverse, is another encoder's)."""
    if getattr(table_scheme, "method", None) != getattr(scheme, "method", None):
        return False
    if isinstance(scheme, StructuredRD) or isinstance(table_scheme, StructuredRD):
        if not (isinstance(scheme, StructuredRD) and isinstance(table_scheme, StructuredRD)):
            return False
        D1, D2 = np.asarray(table_scheme.diagonals), np.asarray(scheme.diagonals)
        return (
            _same_assignment(table_scheme, scheme)
            and D1.shape == D2.shape
            and bool(np.array_equal(D1.view(np.uint64), D2.view(np.uint64)))
        )
    return bool(np.array_equal(np.asarray(table_scheme.B), np.asarray(scheme.B)))


def _load_encoder(path: Path, verify: bool, max_bytes: int) -> Scheme | StructuredRD:
    """The encoder bundle as a Scheme or a StructuredRD (also a Scheme written before bundles named their arrays)."""
    _, man = load_bundle(path, max_bytes=max_bytes)
    if "bundle_arrays" in man["metadata"] or "class" in man["metadata"]:
        scheme = load_object(path, verify=verify, max_bytes=max_bytes)
        if not isinstance(scheme, (Scheme, StructuredRD)):
            raise CatalogueError(f"{path}: the encoder is a {type(scheme).__name__}, not a Scheme or StructuredRD")
        return scheme
    # exports of gcsim <= 0.x wrote "extras.H" as "extras__H" without the map back
    stored, man = load_bundle(path, max_bytes=max_bytes)
    arrays = {k.replace(_DOT, ".", 1): v for k, v in stored.items()}
    try:
        scheme = Scheme.from_arrays(arrays, man["metadata"])
        if verify:
            scheme.verify()
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - an encoder that does not verify is refused, whatever failed
        raise CatalogueError(f"{path}: stored scheme does not verify: {exc}") from exc
    return scheme


def _check_pattern_set(root: Path, declared: Any, table: DecoderTable | None) -> None:
    """The table holds the patterns ``decoder_patterns`` names (absent in older exports: not checked)."""
    if declared is None:
        return
    kind = declared.get("set") if isinstance(declared, dict) else None
    if kind == "none" and table is None:
        return
    if table is not None and kind == "all-up-to-s" and not table.explicit and declared.get("s_max") == table.s_max:
        return
    if table is not None and kind == "chosen" and table.explicit:
        masks = table_masks(table)
        if declared.get("count") == len(table) and declared.get("sha256") == mask_digest(masks):
            listed = declared.get("stragglers")
            if listed is None or listed == straggler_sets(masks):
                return
    raise CatalogueError(
        f"{root}: the decoder table does not hold the patterns {CODE_MANIFEST} names ({declared!r:.200})"
    )


register_folder_loader(CODE_MANIFEST, load_code)
