"""The advisor's answer: :class:`Advice`, a ranked table of candidates with the reasons for the rest.

An :class:`Advice` is immutable.  ``rows`` holds one mapping per evaluated candidate, best first
by the objective; ``dropped_items`` one :class:`~gcsim.advisor.candidates.Dropped` per parameter
set or encoder that gave no candidate.  ``.table`` and ``.dropped`` are pandas DataFrames of them
(``pip install 'gcsim[plots]'``), ``.plot()`` draws the Pareto figure, ``.export(folder)`` writes
the chosen code (assignment, encoder, decoders, manifest) into the folder you name, ``.to_json()``
returns everything as JSON.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from .. import _html, _plotting, limits
from .._optional import require
from .._validation import check_bool, check_dense_size, check_int, check_mask
from ..catalogue.codes import (
    CODE_FORMAT,
    CODE_MANIFEST,
    ExportedCode,
    load_code,
    mask_digest,
    straggler_sets,
    table_masks,
)
from ..catalogue.objects import export_object, export_object_at
from ..coding.decoder_table import DecoderTable, decoder_table, pattern_count
from ..coding.encoders import get_encoder
from ..coding.evaluate import is_exact_method
from ..coding.schemes import Scheme, encode
from ..coding.sparse_routes import SparseSRG
from ..coding.structured import StructuredContext, StructuredRD
from ..errors import InvalidArgumentError, VerificationError
from ..io.bundle import check_bundle_name, check_path
from ..io.manifest import atomic_write_text, check_folder, dumps, provenance
from .candidates import Dropped

__all__ = [
    "Advice",
    "AdviceParams",
    "ExportedCode",
    "load_exported",
    "pareto_flags",
    "pareto_point",
    "ranking_key",
    "COLUMNS",
]

#: Columns of :attr:`Advice.table`, in order.
COLUMNS: tuple[str, ...] = (
    "rank",
    "name",
    "family",
    "structure",
    "encoder",
    "N",
    "n",
    "m",
    "load",
    "data_fraction",
    "replication",
    "error",
    "error_lo",
    "error_hi",
    "error_method",
    "worst_case",
    "worst_method",
    "lower_bound",
    "upper_bound",
    "spectral_bound",
    "bounds_over",
    "communication",
    "comm_bytes",
    "time",
    "decode_time",
    "pareto",
    "status",
    "equivalents",
    "tie",
    "notes",
)

#: Manifest file name of an export (the exported-code format of :mod:`gcsim.catalogue.codes`).
MANIFEST = CODE_MANIFEST
#: What :meth:`Advice.export` writes is read by the catalogue layer: ``gcsim.load_object(folder)``.
load_exported = load_code


class AdviceParams(NamedTuple):
    """The question: ``n`` workers, the load, ``m``, the objective (a tuple of criteria)."""

    n: int
    load: int | float
    m: int
    objective: tuple[str, ...]


def _dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


def pareto_flags(points: Sequence[Sequence[float]]) -> list[int | None]:
    """For each point, None if no other point dominates it, else the index of the first that does.

    ``a`` dominates ``b`` when ``a <= b`` in every coordinate and ``a < b`` in one (all minimized;
    NaN counts as +inf).

    Examples
    --------
    >>> pareto_flags([(1, 2), (2, 1), (2, 2), (1, 2)])
    [None, None, 0, None]
    """
    # every point is compared with every other: the pairs, counted before a point is read
    shape = limits.array_shape(points) if hasattr(points, "shape") else None
    count = shape[0] if shape else len(points)
    limits.check_entries("points", (count, count), "the pairwise comparisons of the points")
    clean = [tuple(math.inf if (isinstance(x, float) and math.isnan(x)) else float(x) for x in p) for p in points]
    out: list[int | None] = []
    for i, p in enumerate(clean):
        out.append(next((j for j, o in enumerate(clean) if j != i and _dominates(o, p)), None))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass(frozen=True, eq=False)
class Advice:
    """Ranked candidate codes for one question (docs/theory.md, advisor chapter).

    Attributes
    ----------
    question : Mapping
        ``n``, ``load``, ``m``, the straggler model's description, the links, the objective, the
        seed and the budgets.
    rows : tuple of Mapping
        One read-only mapping per candidate (the columns of :data:`COLUMNS`), best first.
    dropped_items : tuple of Dropped
        Every parameter set or encoder that gave no candidate, with its reason.
    schemes : tuple of Scheme
        The encoder of each row (same order).
    structures : tuple
        The assignment object of each row (a design, graph or baseline; same order).
    params : AdviceParams
    """

    kind = "advice"

    question: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]
    dropped_items: tuple[Dropped, ...]
    schemes: tuple[Scheme, ...] = field(repr=False)
    structures: tuple[Any, ...] = field(repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "question", MappingProxyType(dict(self.question)))
        object.__setattr__(self, "rows", tuple(MappingProxyType(dict(r)) for r in self.rows))
        object.__setattr__(self, "dropped_items", tuple(self.dropped_items))
        object.__setattr__(self, "schemes", tuple(self.schemes))
        object.__setattr__(self, "structures", tuple(self.structures))
        if not (len(self.rows) == len(self.schemes) == len(self.structures)):
            raise InvalidArgumentError("rows", "rows, schemes and structures must have one entry per candidate")

    # -- the contract ------------------------------------------------------------------------
    @property
    def params(self) -> AdviceParams:
        """``AdviceParams(n, load, m, objective)``."""
        q = self.question
        return AdviceParams(int(q["n"]), q["load"], int(q["m"]), tuple(q["objective"]))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def best(self) -> Mapping[str, Any]:
        """The top row (raises when no candidate was found)."""
        if not self.rows:
            raise InvalidArgumentError("rank", "no candidate fits the question (see .dropped for the reasons)")
        return self.rows[0]

    def verify(self) -> bool:
        """Check the ranking and the flags; returns True or raises :class:`VerificationError`.

        Rows are ranked ``1, 2, ...`` in the order of the objective's keys; the Pareto flags are
        recomputed from the rows; every scheme verifies and belongs to its row (``m``, ``N``, ``n``).
        """
        keys = [self._key(r) for r in self.rows]
        if keys != sorted(keys):
            raise VerificationError("advice: the rows are not sorted by the objective")
        if [r["rank"] for r in self.rows] != list(range(1, len(self.rows) + 1)):
            raise VerificationError("advice: ranks are not 1, 2, 3, ...")
        with_time = self.question.get("links") is not None
        flags = pareto_flags([pareto_point(r, with_time, self.exact_tol) for r in self.rows])
        if [f is None for f in flags] != [bool(r["pareto"]) for r in self.rows]:
            raise VerificationError("advice: the Pareto flags do not match the rows")
        for r, sch in zip(self.rows, self.schemes, strict=True):
            sch.verify()
            if (sch.m, sch.num_parts, sch.n) != (r["m"], r["N"], r["n"]):
                raise VerificationError(f"advice: the scheme of {r['name']!r} does not match its row")
        return True

    @property
    def exact_tol(self) -> float:
        """Errors at or below this are an exact code's round-off: they rank as 0."""
        return float(self.question.get("exact_tol", 0.0))

    def _key(self, row: Mapping[str, Any]) -> tuple:
        return ranking_key(row, tuple(self.question["objective"]), self.exact_tol)

    # -- views -------------------------------------------------------------------------------
    @property
    def table(self) -> Any:
        """The ranked candidates as a pandas DataFrame (columns :data:`COLUMNS`, index = rank)."""
        pd = require("pandas", "plots", "Advice.table")
        return pd.DataFrame([dict(r) for r in self.rows], columns=list(COLUMNS)).set_index("rank", drop=False)

    @property
    def dropped(self) -> Any:
        """Every parameter set or encoder that gave no candidate, with its reason (a DataFrame)."""
        pd = require("pandas", "plots", "Advice.dropped")
        return pd.DataFrame([d.as_dict() for d in self.dropped_items], columns=["family", "name", "encoder", "reason"])

    def to_json(self) -> str:
        """The question, the ranked rows and the dropped items as one JSON object (NaN -> null)."""
        payload = {
            "question": {k: _plain(v) for k, v in self.question.items()},
            "candidates": [{k: _plain(v) for k, v in r.items()} for r in self.rows],
            "dropped": [d.as_dict() for d in self.dropped_items],
        }
        return json.dumps(payload, indent=1, allow_nan=False)

    def __repr__(self) -> str:
        top = f", best {self.rows[0]['name']!r}" if self.rows else ""
        return (
            f"Advice(n={self.question['n']}, load={self.question['load']}, m={self.question['m']}, "
            f"{len(self.rows)} candidates, {len(self.dropped_items)} dropped{top})"
        )

    def _repr_html_(self) -> str:
        """Card: the question, the top candidates and a count of the dropped ones."""

        def build() -> str:
            q = self.question
            timed = q.get("links") is not None  # an iteration time needs links; without them it is NaN
            rows = [
                ("workers n", q["n"]),
                ("load", q["load"]),
                *((("max load", q["max_load"]),) if q.get("max_load") is not None else ()),
                ("m", q["m"]),
                ("stragglers", q["model"]),
                ("links", q["links"] if timed else "none: no iteration time (advise(..., links=...) gives one)"),
                ("objective", " then ".join(q["objective"])),
                ("candidates", len(self.rows)),
                ("dropped", len(self.dropped_items)),
            ]
            # "max load": the most parts one worker holds, of N (a non-symmetric code's can pass the average load)
            head: tuple[str, ...] = ("rank", "candidate", "error", "95% interval", "lower bound", "communication")
            head += ("max load",)
            head += ("time (s)", "status") if timed else ("status",)
            body = [
                (
                    f"={r['tie']}" if r.get("tie") else r["rank"],
                    r["name"],
                    r["error"],
                    interval_text(r),
                    r["lower_bound"],
                    r["communication"],
                    f"{r['load']}/{r['N']}",
                    *((r["time"],) if timed else ()),
                    r["status"],
                )
                for r in self.rows
            ]
            reasons = [f"{d.name}{' / ' + d.encoder if d.encoder else ''}: {d.reason}" for d in self.dropped_items]
            extra = _html.check_table(head, body, limit=10) + _html.html_list(reasons, limit=6)
            return _html.object_html(title="Advice", kind=self.kind, rows=rows, status=_html.verdict(self), extra=extra)

        return _html.safe_html(self, build)

    # -- the figure --------------------------------------------------------------------------
    def plot(self, *, label: int = 6) -> Any:
        """Pareto figure: expected error (log) against communication per worker and, with links, time.

        Every candidate is a point, coloured by family (Pareto-optimal filled, dominated hollow);
        the ``label`` best are numbered by rank (coinciding points share one label, ``1,2,3``) and
        named in the legend below.  Errors below the floor (exact codes: round-off) are drawn at the
        floor as down-pointing triangles, as the axis label states.  Returns a
        :class:`matplotlib.figure.Figure`.
        """
        require("matplotlib", "plots", "Advice.plot")
        label = check_int("label", label, minimum=0)
        panels = ("communication", "time") if self.question.get("links") else ("communication",)
        fig, axes = _plotting.new_figure(1, len(panels), figsize=(5.6 * len(panels), 5.2), squeeze=False)
        err = np.array([float(r["error"]) for r in self.rows], dtype=float)
        finite = err[np.isfinite(err) & (err > 1e-16)]
        floor = _plotting.log_floor(finite if finite.size else np.array([1e-3]))
        floored = ~(np.isfinite(err) & (err > floor))
        shown = np.where(floored, floor, err)
        families = sorted({r["family"] for r in self.rows})
        colour = {f: _plotting.PALETTE[i % len(_plotting.PALETTE)] for i, f in enumerate(families)}
        pareto = np.array([bool(r["pareto"]) for r in self.rows])
        handles: dict[str, Any] = {}
        for ax, what in zip(axes[0], panels, strict=True):
            raw = np.array([float(r[what]) for r in self.rows], dtype=float)
            x = raw
            if what == "communication":
                # candidates share a few communication values: spread each column a little, by rank
                x = raw * (1.0 + 0.05 * (np.arange(len(raw)) % 9 - 4) / 4)
            for fam in families:
                fam_idx = np.array([r["family"] == fam for r in self.rows])
                for marker, mask in (("o", ~floored), ("v", floored)):
                    for front in (True, False):
                        sel = fam_idx & mask & (pareto == front)
                        if not sel.any():
                            continue
                        face = colour[fam] if front else "none"
                        ax.scatter(
                            x[sel], shown[sel], marker=marker, s=38, facecolors=face, edgecolors=colour[fam],
                            zorder=3 if front else 2,
                        )  # fmt: skip
            spots: dict[tuple[float, float], list[int]] = {}
            for i in range(min(label, len(self.rows))):
                key = (round(float(raw[i]), 3), round(math.log10(shown[i]), 2))
                spots.setdefault(key, []).append(i)
            for members in spots.values():
                i = members[0]
                text = ",".join(str(self.rows[j]["rank"]) for j in members)
                ax.annotate(text, (x[i], shown[i]), textcoords="offset points", xytext=(5, 4), fontsize=7)
            ax.set_yscale("log")
            if what == "communication":
                ax.set_xscale("log")  # 1/m: equal steps for m = 1, 2, 4, ...
            ax.set_xlabel(
                "communication per worker (fraction of a gradient)"
                if what == "communication"
                else "expected time per iteration (s)"
            )
            ax.set_ylabel(_plotting.floor_label("expected error err/(mN)", floor, "errors"))
            ax.grid(True, which="both", alpha=0.3)
        for fam in families:  # legend swatches: one filled circle per family
            handles[fam] = axes[0][0].scatter([], [], marker="o", s=38, color=colour[fam])
        axes[0][0].set_title("filled: Pareto-optimal, hollow: dominated; numbers: rank", fontsize=8)
        names = [f"{r['rank']}: {_short_name(r['name'])}" for r in self.rows[:label]]
        labels = list(handles) + names
        artists = list(handles.values()) + [_invisible(axes[0][0]) for _ in names]
        _plotting.legend_below(fig, artists, labels, ncol=1 if names else min(4, len(labels)), fontsize=7)
        return fig

    # -- export ------------------------------------------------------------------------------
    def export(
        self,
        folder: str | os.PathLike,
        rank: int = 1,
        *,
        name: str | None = None,
        s_max: int | None = None,
        patterns: Any = None,
        overwrite: bool = False,
    ) -> Path:
        """Write the candidate of rank ``rank`` into ``folder/<name>``, atomically; returns that folder.

        Contents: the assignment (a catalogue bundle, ``<kind>/assignment``; a strongly regular
        graph kept sparse beyond the dense limit, :class:`~gcsim.coding.sparse_routes.SparseSRG`,
        as a ``"sparse_srg"`` bundle of its adjacency in CSR index form), the encoder
        (``encoder.npz/.json``: a dense ``"scheme"`` bundle, :meth:`Scheme.to_arrays`, or, for a
        structured or sparse encoder whose ``B`` is over :data:`gcsim.limits.MAX_DENSE_ENTRIES`,
        a ``"structured_scheme"`` bundle of its sparse incidence and diagonals; see
        :func:`exportable_scheme`), the decoders and ``advice.json`` (the question, the row, the
        files, the decoding rule of this encoder and provenance).  Decoders: a
        :class:`~gcsim.coding.decoder_table.DecoderTable` of every pattern with at most ``s_max``
        stragglers (default: the model's ``s``) when its pattern count is within
        :data:`gcsim.limits.MAX_PATTERNS` and its entries within
        :data:`gcsim.limits.MAX_DENSE_ENTRIES`, or of the patterns you choose (``patterns``; for a
        structured encoder a :class:`~gcsim.coding.decoder_table.StructuredDecoderTable` of gains,
        theory §47.7, at any size); otherwise ``advice.json`` states the decoding rule (the
        minimum-norm least-squares decoder ``X = B_F^+ T`` of the arrived workers, computed at run
        time; for a structured or sparse encoder, how it is computed without ``B``) and why no
        table was written.  A sparse encoder (theory §44) beyond the dense limit has no table.
        ``advice.json`` names the set of patterns in ``decoder_patterns``.  Everything is written
        into a hidden staging folder inside ``folder`` and renamed into place, so ``folder/<name>``
        is complete or absent; the decoders are computed (and every argument checked) before
        anything is written.

        Parameters
        ----------
        folder : path
            Parent folder (created if missing).
        rank : int >= 1
            Rank of the candidate to export (1: the first row of :attr:`table`).
        name : str, optional
            Name of the exported folder (default ``rank<rank>_<family>_<encoder>``).
        s_max : int, optional
            Table of every pattern with at most ``s_max`` stragglers (default: the model's ``s``).
        patterns : array_like of bool, shape (count, n) or (n,), optional
            A chosen set of non-straggler masks (True = the worker arrives; 0/1 integers are
            accepted), for codes whose every pattern up to ``s`` does not fit (the 54-worker
            question: ``C(54, <= 10)`` patterns).  The table holds exactly these patterns, in the
            order given (:func:`~gcsim.coding.decoder_table.decoder_table` with ``patterns=``);
            ``decoder_patterns`` in ``advice.json`` records ``"set": "chosen"``, their count, the
            SHA-256 of the ``(count, n)`` boolean array (C order, one byte per entry) and, up to
            1024 patterns, the straggler set of each row.  Not together with ``s_max``.
        overwrite : bool
            Replace an existing ``folder/<name>``.

        Returns
        -------
        pathlib.Path
            The exported folder (read it back with :func:`load_exported`).

        Raises
        ------
        InvalidArgumentError
            ``rank`` outside the table or of an assignment object without a catalogue bundle (no
            ``to_arrays``/``bundle_metadata``), a bad ``name`` or ``s_max``; ``patterns`` that are not
            boolean (or 0/1) masks over the ``n`` workers, ragged, empty, repeated, or given with
            ``s_max``; ``patterns`` for a sparse encoder beyond the dense limit (no table form).
        SizeLimitError
            More ``patterns`` than :data:`gcsim.limits.MAX_PATTERNS`, or a table beyond
            :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries.
        FileExistsError
            ``folder/<name>`` exists and ``overwrite`` is False.

        Examples
        --------
        >>> import tempfile
        >>> import numpy as np
        >>> import gcsim
        >>> from gcsim.advisor import advise, load_exported
        >>> adv = advise(13, 4, 2, gcsim.straggler_model("fixed", 13, s=1), families=["bibd"], progress=False)
        >>> chosen = np.ones((3, 13), dtype=bool)
        >>> chosen[1, [0, 5]] = False                 # workers 0 and 5 straggle
        >>> chosen[2, [2, 3, 11]] = False             # workers 2, 3 and 11 straggle
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     code = load_exported(adv.export(tmp, patterns=chosen))
        >>> len(code.decoders), code.decoders.row(chosen[2])
        (3, 2)
        >>> dict(code.manifest["decoder_patterns"], sha256="...")
        {'count': 3, 'set': 'chosen', 'sha256': '...', 'stragglers': [[], [0, 5], [2, 3, 11]]}
        """
        rank = check_int("rank", rank, minimum=1)
        if rank > len(self.rows):
            raise InvalidArgumentError("rank", f"must be <= {len(self.rows)} (the number of candidates), got {rank}")
        overwrite = check_bool("overwrite", overwrite)
        row, scheme, structure = self.rows[rank - 1], self.schemes[rank - 1], self.structures[rank - 1]
        missing = [a for a in ("to_arrays", "bundle_metadata", "verify", "params") if not hasattr(structure, a)]
        if missing:  # an object of no catalogue kind (a SparseSRG has one: "sparse_srg")
            raise InvalidArgumentError(
                "rank",
                f"the assignment of rank {rank} ({type(structure).__name__}) has no catalogue bundle (no "
                f".{missing[0]}), so it cannot be exported; nothing was written",
            )
        scheme = exportable_scheme(scheme, structure)
        stem = name if name is not None else f"rank{rank}_{row['family']}_{row['encoder']}"
        check_bundle_name("name", stem)
        table, pattern_set, decoding = _export_decoders(scheme, patterns, s_max, self.question.get("s"))
        question = {k: _plain(v) for k, v in self.question.items()}
        candidate = {k: _plain(v) for k, v in row.items()}
        return _write_code(
            folder, stem, overwrite, structure, scheme, table, question, candidate, decoding, pattern_set
        )


def _export_decoders(
    scheme: Any, patterns: Any, s_max: Any, model_s: int | None
) -> tuple[DecoderTable | None, dict[str, Any], str]:
    """The decoders :meth:`Advice.export` writes: the table (or None), ``decoder_patterns`` and ``decoding``.

    A table of the chosen ``patterns``, or of every pattern with at most ``s_max`` stragglers
    (default ``model_s``, the model's ``s``) where it fits; otherwise None and the reason.
    Every argument is checked here, before anything is written.
    """
    table: DecoderTable | None = None
    decoders_note = ""
    tabulable = _tabulable(scheme)
    if patterns is not None:
        if s_max is not None:
            raise InvalidArgumentError("patterns", "give s_max (every pattern up to s_max) or patterns, not both")
        if not tabulable:
            raise InvalidArgumentError(
                "patterns",
                f"the {type(scheme).__name__} (theory §44) over MAX_DENSE_ENTRIES has no decoder table: dense "
                "decoders do not fit and the gain tables of theory §47.7 need AᵀA = aI + λJ; export without "
                "patterns= (advice.json states the decoding rule)",
            )
        table = decoder_table(scheme, patterns=_check_patterns(patterns, scheme.n))
        chosen = table_masks(table)
        pattern_set: dict[str, Any] = {"set": "chosen", "count": len(table), "sha256": mask_digest(chosen)}
        if len(table) <= _LISTED_PATTERNS:
            pattern_set["stragglers"] = straggler_sets(chosen)
        decoding = (
            f"DecoderTable of {len(table)} chosen patterns (decoders/, rows in the order given; see "
            "decoder_patterns); other patterns: the rule below"
        )
    else:
        if s_max is None:
            s_max = model_s
        if s_max is not None and not tabulable:
            s_max = check_int("s_max", s_max, minimum=0, maximum=scheme.n)
            decoders_note = (
                f"no table: the {type(scheme).__name__} (theory §44) over MAX_DENSE_ENTRIES has no table form "
                "(dense decoders do not fit; gain tables need AᵀA = aI + λJ, theory §47.7)"
            )
        elif s_max is not None:
            s_max = check_int("s_max", s_max, minimum=0, maximum=scheme.n)
            count = pattern_count(scheme.n, s_max)
            # entries per pattern: a dense decoder (n m), or a structured table's gain and error (m² + 1)
            per = scheme.m * scheme.m + 1 if isinstance(scheme, StructuredRD) else scheme.n * scheme.m
            if count > limits.MAX_PATTERNS or count * per > limits.MAX_DENSE_ENTRIES:
                decoders_note = (
                    f"no table: {count:,} patterns with at most {s_max} stragglers (x {per} entries) exceed "
                    "gcsim.limits.MAX_PATTERNS / MAX_DENSE_ENTRIES (pass patterns= for a table of chosen patterns)"
                )
            else:
                table = decoder_table(scheme, s_max)
        else:
            decoders_note = (
                "no table: the straggler model has no fixed s (pass s_max= for a table up to s_max, or "
                "patterns= for chosen patterns)"
            )
        if table is not None:
            pattern_set = {"set": "all-up-to-s", "s_max": s_max, "count": len(table)}
            decoding = (
                f"DecoderTable of every pattern with at most {s_max} stragglers (decoders/); other patterns: "
                "the rule below"
            )
        else:
            pattern_set = {"set": "none", "count": 0}
            decoding = decoders_note
    return table, pattern_set, decoding


def _write_code(
    folder: Any,
    stem: str,
    overwrite: bool,
    structure: Any,
    scheme: Any,
    table: DecoderTable | None,
    question: dict[str, Any],
    candidate: dict[str, Any],
    decoding: str,
    pattern_set: dict[str, Any],
) -> Path:
    """Write an exported code into ``folder/<stem>`` through a hidden staging folder (complete or absent)."""
    base = check_folder("folder", check_path("folder", folder))
    base.mkdir(parents=True, exist_ok=True)
    target = base / stem
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists (pass overwrite=True to replace it)")
    staging = base / f".{stem}.partial-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        assignment_json = export_object(structure, staging, "assignment")
        export_object_at(scheme, staging / "encoder")  # `gcsim load <folder>/encoder` reads it alone
        files = {
            "assignment": str(assignment_json.relative_to(staging).with_suffix("")),
            "encoder": "encoder",
        }
        if table is not None:
            table.export(staging / "decoders")
            files["decoders"] = "decoders"
        manifest = {
            "format": CODE_FORMAT,
            "format_version": 1,
            "question": question,
            "candidate": candidate,
            "files": files,
            "decoding": decoding,
            "decoder_patterns": pattern_set,
            "decoding_rule": decoding_rule(scheme),
            "provenance": provenance(),
        }
        atomic_write_text(staging / MANIFEST, dumps(manifest))
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def exportable_scheme(scheme: Any, obj: Any) -> Any:
    """The encoder an exported code stores for a candidate's encoder: a dense Scheme where ``B`` fits.

    A dense scheme is itself.  A structured or sparse encoder (:class:`~gcsim.coding.structured.StructuredRD`,
    :class:`~gcsim.coding.sparse_routes.SparseRD`, the advisor's ``B = A`` encoder) whose dense
    ``B`` fits :data:`gcsim.limits.MAX_DENSE_ENTRIES` is stored as a scheme bundle (so small codes
    export as before): it is rebuilt by :func:`gcsim.coding.encode` on the candidate's object with
    the encoder's method and options (RD: the same ``seed``, ``eps``, ``dist``, so the same
    diagonals), and its ``B`` is checked equal to the structured encoder's, entry by entry.
    Beyond the limit it is itself: its ``"structured_scheme"`` bundle holds the sparse incidence
    and the diagonals (``O(nnz + m n)`` numbers), and :func:`gcsim.catalogue.codes.load_code`
    re-derives the diagonals from the options, re-checks the incidence's algebra (``AᵀA = aI +
    λJ``, or the lower bound of theory §44) and compares the incidence with the exported
    assignment.

    >>> from gcsim import limits
    >>> from gcsim.combinatorics.bibd import bibd
    >>> from gcsim.coding.structured import encode_structured
    >>> d = bibd(13, 4)
    >>> dense = exportable_scheme(encode_structured(d, 2, seed=3), d)
    >>> type(dense).__name__, dense.method, dense.options["seed"]
    ('Scheme', 'rd', 3)
    >>> enc, old = encode_structured(d, 2, seed=3), limits.MAX_DENSE_ENTRIES
    >>> limits.MAX_DENSE_ENTRIES = 300                      # B: 26 x 13 = 338 entries, over it
    >>> type(exportable_scheme(enc, d)).__name__
    'StructuredRD'
    >>> limits.MAX_DENSE_ENTRIES = old
    """
    if not isinstance(scheme, StructuredRD):
        return scheme
    if scheme.m * scheme.num_parts * scheme.n > limits.MAX_DENSE_ENTRIES:
        return scheme  # the structured bundle: no dense matrix
    check_dense_size(
        "B",
        scheme.m * scheme.num_parts,
        scheme.n,
        f"the dense encoder of the exported {type(scheme).__name__} (an exported code stores a Scheme bundle)",
    )
    # the candidate's object (its assignment is the exported one), or the dense matrix of a sparse SRG
    source = scheme.assignment if isinstance(obj, SparseSRG) else obj
    if get_encoder(scheme.method).structured_route(scheme.m) == "diagonals":  # RD: the same diagonals, same options
        dense = encode(source, scheme.m, "rd", **dict(scheme.options))
    else:  # B = A (m = 1), the advisor's StructuredAssignment
        dense = encode(source, scheme.m, scheme.method)
    if not np.array_equal(np.asarray(dense.B), np.asarray(scheme.B)):
        raise VerificationError(f"export: the dense {scheme.method} encoder differs from the structured one")
    return dense


def _tabulable(scheme: Any) -> bool:
    """Whether a decoder table can be made: a dense scheme, or a structured encoder of theory §42 (gains, §47.7)."""
    return not isinstance(scheme, StructuredRD) or isinstance(scheme.context, StructuredContext)


def decoding_rule(scheme: Any) -> str:
    """``advice.json``'s ``decoding_rule``: the minimum-norm least-squares decoder and how ``scheme`` computes it.

    >>> from gcsim.combinatorics.bibd import bibd
    >>> from gcsim.coding.schemes import encode
    >>> decoding_rule(encode(bibd(7, 3), 1, "naive"))[:60]
    'X = pinv(B_F) T: the minimum-norm least-squares decoder of t'
    """
    if not isinstance(scheme, StructuredRD):
        return (
            "X = pinv(B_F) T: the minimum-norm least-squares decoder of the arrived workers F "
            "(numpy.linalg.lstsq, rcond=None), T = I_m kron 1_N"
        )
    if _tabulable(scheme):
        c = scheme.context
        return (
            "X = pinv(B_F) T = diag(1_F) V G_F with G_F = k (a I_m + lambda M_F)^-1 (theory §47.7, Corollary 47.7): "
            "the minimum-norm least-squares decoder of the arrived workers F, computed from the encoder's sparse "
            f"incidence (A^T A = aI + lambda J, k = {c.k}, lambda = {c.lam}, a = {c.a}) and its diagonals U = "
            "diagonals^T without forming B; V has rows u_j / |u_j|^2 (0 where u_j = 0), M_F = sum over j in F, "
            "u_j != 0 of u_j u_j^T / |u_j|^2; T = I_m kron 1_N"
        )
    sparse: Any = scheme.context  # a SparseRDContext: the bound c of theory §44 and its source
    return (
        "X = pinv(B_F) T: the minimum-norm least-squares decoder of the arrived workers F; its rows are 0 for the "
        "workers j with u_j = 0 and, on the others F', the unique solution of Gamma_F'F' X = H_F' with "
        "Gamma = (A^T A) o (U U^T), H = diag(k_j) U (U = diagonals^T, k_j the load of worker j): B_F' has full "
        f"column rank since lambda_min(S Gamma S) >= c = {sparse.lower:.6g} > 0 ({sparse.source}; "
        "theory §44). Computed from the sparse incidence and the diagonals without forming B (block conjugate "
        "gradients, each error enclosed by Theorem 44.2); T = I_m kron 1_N"
    )


#: Up to this many chosen patterns, ``advice.json`` lists the straggler set of each.
_LISTED_PATTERNS = 1024


def _check_patterns(patterns: Any, n: int) -> np.ndarray:
    """``patterns`` as a ``(count, n)`` boolean array of non-straggler masks, or InvalidArgumentError."""
    try:
        arr = np.asarray(patterns)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InvalidArgumentError(
            "patterns", f"must be a (count, {n}) array of boolean masks (True = the worker arrives): {exc}"
        ) from None
    if arr.size == 0:
        raise InvalidArgumentError("patterns", "must list at least one pattern")
    if arr.dtype.kind not in "biu":
        raise InvalidArgumentError(
            "patterns", f"must be boolean masks (True = the worker arrives) or 0/1 integers, got dtype {arr.dtype}"
        )
    masks = check_mask("patterns", arr, n)
    return masks[None] if masks.ndim == 1 else masks


_COLUMN = {"worst-case": "worst_case", "data": "data_fraction"}


def interval_text(row: Mapping[str, Any]) -> str:
    """A row's error interval as text: ``"exact"``, ``"[lo, hi]"`` (theory §57), or ``"-"`` without an expectation.

    >>> interval_text(dict(error=0.5, error_lo=0.4, error_hi=0.6, error_method="monte-carlo n=100"))
    '[0.4, 0.6]'
    >>> interval_text(dict(error=0.5, error_lo=0.5, error_hi=0.5, error_method="exact"))
    'exact'
    """
    err = float(row["error"])
    if err != err:
        return "-"
    if is_exact_method(str(row.get("error_method", ""))):
        return "exact"
    return f"[{float(row['error_lo']):.4g}, {float(row['error_hi']):.4g}]"


def _value(row: Mapping[str, Any], criterion: str, exact_tol: float) -> float:
    x = float(row[_COLUMN.get(criterion, criterion)])
    if math.isnan(x):
        return math.inf
    return 0.0 if criterion in ("error", "worst-case") and x <= exact_tol else x


def _short_name(name: str, limit: int = 90) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _invisible(ax: Any) -> Any:
    """An empty legend handle (a text-only legend entry)."""
    (line,) = ax.plot([], [], linestyle="none", marker="none")
    return line


def ranking_key(row: Mapping[str, Any], objective: tuple[str, ...], exact_tol: float = 1e-12) -> tuple:
    """Sort key of a row: the objective's criteria in order, then error, communication, time, data, name.

    NaN ranks last; errors at or below ``exact_tol`` count as 0.
    """
    crit = list(objective) + [c for c in ("error", "communication", "time", "data") if c not in objective]
    return (*[_value(row, c, exact_tol) for c in crit], str(row["name"]))


def pareto_point(row: Mapping[str, Any], with_time: bool, exact_tol: float = 1e-12) -> tuple[float, ...]:
    """The minimized coordinates of a row: error, communication, data fraction and, with links, time."""
    with_time = check_bool("with_time", with_time)
    crit = ("error", "communication", "data", "time") if with_time else ("error", "communication", "data")
    return tuple(_value(row, c, exact_tol) for c in crit)
