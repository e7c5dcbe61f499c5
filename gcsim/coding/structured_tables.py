"""Decoder tables of structured RD encoders, without a dense ``B`` (theory §47.7, a corollary of §42).

:class:`StructuredDecoderTable` is a :class:`~gcsim.coding.dense_table.DecoderTable` (same index,
lookups and checks) registered for the bundle layout ``"structured-rd"``, so
:meth:`~gcsim.coding.dense_table.DecoderTable.from_arrays` and
:func:`~gcsim.coding.decoder_table.load_decoder_table` rebuild it from its bundle;
:func:`~gcsim.coding.decoder_table.decoder_table` builds it for a
:class:`~gcsim.coding.structured.StructuredRD`.

For an RD encoder on a design with ``AᵀA = aI + λJ`` (:class:`~gcsim.coding.structured.StructuredRD`)
the minimum-norm optimal decoder of the non-stragglers ``F`` is (Corollary 47.7)

.. math::  X^*(F) = B_F^{+} T = \\Delta_{F'}^{+}\\, U\\, G_F,\\qquad
           G_F = k\\,(aI_m + \\lambda M_F)^{-1} \\in \\mathbb R^{m \\times m},

``U`` the ``n x m`` diagonals, ``Δ = diag(‖u_j‖²)`` (its pseudo-inverse restricted to
``F' = {j ∈ F: u_j ≠ 0}``) and ``M_F`` the ``m x m`` matrix of theory §42.1.  So a table stores,
per pattern, the ``m x m`` *gain* ``G_F`` and the error, and once the sparse incidence and the
diagonals: at PG(2, 97) (9,507 workers, ``m = 2``) a pattern costs 32 bytes of gains plus its
packed mask (1,189 bytes), where a dense decoder would be 152 kB.  Decoders are made on request,
one pattern at a time (:meth:`StructuredDecoderTable.decoder`); :meth:`~StructuredDecoderTable.decode`
never forms one.

:func:`structured_decoder_table` builds a table (all patterns with ``|S| <= s_max``, or an explicit
list), :meth:`StructuredDecoderTable.export` writes it as a gcsim bundle (``layout``
``"structured-rd"``), and :func:`gcsim.coding.decoder_table.load_decoder_table` reads it back and
re-checks every row with the certificate of Theorem 47.7b (:meth:`~StructuredDecoderTable.verification_report`):
no row is skipped -- the structured route has no rank decision (theory §42.1, Remark (i)).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .. import _html
from .._validation import check_count, check_dense_size, check_int, check_mask, layout_version_problem
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from ..io._torch import to_torch_tensors
from ..io.manifest import to_jsonable
from .dense_table import TABLE_KIND, DecoderTable, DecoderTableParams, _table_card
from .encoders import get_encoder, is_registered
from .stragglers import straggler_sets
from .structured import StructuredRD, _check_same_diagonals, _rederived_diagonals, check_pair_gram
from .table_patterns import _check_stored_errors, _explicit_masks, _masks_from_sets, _stored_s_max, pattern_count
from .table_solve import DecoderLookup, _gamma

__all__ = [
    "STRUCTURED_LAYOUT",
    "STRUCTURED_FORMAT_VERSION",
    "StructuredDecoderTable",
    "structured_decoder_table",
    "gains",
]

#: ``metadata["layout"]`` of an exported structured table.
STRUCTURED_LAYOUT = "structured-rd"
#: Version of the structured layout (see :meth:`StructuredDecoderTable.bundle_metadata`).
STRUCTURED_FORMAT_VERSION = 1
# masks per chunk: (chunk x n) float64 masks near 32 MiB, as the structured route's
_STRUCTURED_CHUNK_BYTES = 32 * 2**20


def _gram_blocks(ctx: Any, masks: np.ndarray) -> np.ndarray:
    """``M_F`` of each mask (``(count, m, m)``): one GEMM against the outer products, symmetrized exactly."""
    m = ctx.m
    M = (masks.astype(np.float64) @ ctx.Q).reshape(-1, m, m)
    return 0.5 * (M + np.swapaxes(M, 1, 2))


def _capacitance(ctx: Any, M: np.ndarray) -> np.ndarray:
    return ctx.a * np.eye(ctx.m)[None] + ctx.lam * M


def gains(ctx: Any, masks: np.ndarray) -> np.ndarray:
    """The gains ``G_F = k (aI + λM_F)⁻¹`` (``(count, m, m)``) of a stack of non-straggler masks.

    ``ctx`` is a :class:`~gcsim.coding.structured.StructuredContext`; one GEMM and ``count``
    ``m x m`` LU solves (``numpy.linalg.solve``).

    Examples
    --------
    >>> from gcsim.coding.structured import StructuredContext
    >>> ctx = StructuredContext(np.ones((1, 7)), 7, 3, 1)   # Fano plane, m = 1: G = 3 / (2 + f)
    >>> gains(ctx, np.array([[True] * 7, [False] * 7])).ravel().tolist()
    [0.3333333333333333, 1.5]
    """
    m = ctx.m
    C = _capacitance(ctx, _gram_blocks(ctx, masks))
    rhs = np.broadcast_to(ctx.k * np.eye(m), C.shape)
    return np.linalg.solve(C, rhs)


class StructuredDecoderTable(DecoderTable):
    """A decoder table of a :class:`~gcsim.coding.structured.StructuredRD` encoder (module docstring).

    Build it with :func:`structured_decoder_table` (or :func:`gcsim.coding.decoder_table.decoder_table`
    on a ``StructuredRD``).  Same index, lookups and checks as :class:`DecoderTable`; it stores the
    gains (``gains``, ``(count, m, m)``) instead of dense decoders.  ``decoders`` is the dense
    ``(count, n, m)`` stack made on request (refused beyond ``MAX_DENSE_ENTRIES``).

    Examples
    --------
    >>> from gcsim.coding.structured import encode_structured
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    >>> t = structured_decoder_table(enc, s_max=1)
    >>> len(t), t.gains.shape, t.verification_report()["checked"]
    (14, (14, 2, 2), 14)
    """

    layout: ClassVar[str] = STRUCTURED_LAYOUT
    scheme: Any  # a StructuredRD
    gains: np.ndarray
    _V: np.ndarray
    _ctx: Any

    def __init__(
        self,
        scheme: StructuredRD,
        gains: np.ndarray,
        errors: np.ndarray,
        *,
        s_max: int | None = None,
        patterns: np.ndarray | None = None,
    ):
        set_ = object.__setattr__
        set_(self, "scheme", scheme)
        set_(self, "s_max", s_max)
        set_(self, "rcond", None)
        set_(self, "gains", gains)
        set_(self, "errors", errors)
        gains.setflags(write=False)
        errors.setflags(write=False)
        ctx = scheme.context
        norms2 = np.sum(np.asarray(scheme.diagonals) ** 2, axis=0)
        V = np.zeros((scheme.n, scheme.m))
        nz = norms2 > 0
        V[nz] = (scheme.diagonals[:, nz] / norms2[nz]).T  # rows u_j / ‖u_j‖² (zero where u_j = 0)
        V.setflags(write=False)
        set_(self, "_V", V)
        set_(self, "_ctx", ctx)
        self._setup_index(scheme.n, s_max, patterns)
        set_(self, "_frozen", True)

    # -- size -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.gains.shape[0])

    @property
    def params(self) -> DecoderTableParams:
        """``DecoderTableParams(num_parts, n, m, num_patterns, s_max)``."""
        return DecoderTableParams(self.scheme.num_parts, self.n, self.m, len(self), self.s_max)

    @property
    def decoders(self) -> np.ndarray:  # type: ignore[override]
        """Dense ``(count, n, m)`` decoders, made on request (refused beyond ``MAX_DENSE_ENTRIES``)."""
        count = len(self)
        check_dense_size("decoders", count, self.n * self.m, "the dense decoders of a structured table")
        out = np.zeros((count, self.n, self.m))
        for a, masks in self.iter_patterns():
            for i, mk in enumerate(masks):  # the same products as decoder(): the same numbers
                out[a + i] = np.where(mk[:, None], self._V @ self.gains[a + i], 0.0)
        out.setflags(write=False)
        return out

    def __repr__(self) -> str:
        what = "explicit patterns" if self.explicit else f"s_max={self.s_max}"
        return f"StructuredDecoderTable({len(self)} patterns, {what}, n={self.n}, m={self.m}, scheme={self.scheme!r})"

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: params, the errors' range, verification status (no dense matrix drawn)."""

        def card() -> str:
            stored = ("stored per pattern", f"{self.m} x {self.m} gain + error")
            return _table_card(self, "StructuredDecoderTable", before_errors=[stored])

        return _html.safe_html(self, card)

    # -- lookups ------------------------------------------------------------------------------------
    def gain(self, mask: Any) -> np.ndarray:
        """The stored ``m x m`` gain ``G_F`` of a non-straggler mask (a read-only view)."""
        return self.gains[self.row(mask)]

    def decoder(self, mask: Any, *, fallback: str = "raise") -> np.ndarray:
        """The optimal decoder ``(n, m)`` of a mask, ``Δ_{F'}⁺ U G_F`` (made from the stored gain).

        ``fallback="solve"`` computes the gain of a pattern the table does not cover instead of raising.
        """
        if fallback not in ("raise", "solve"):
            raise InvalidArgumentError("fallback", f"must be 'raise' or 'solve', got {fallback!r}")
        mk = check_mask("mask", mask, self.n)
        try:
            G = self.gains[self.row(mk)]
        except InvalidArgumentError:
            if fallback == "raise":
                raise
            G = gains(self._ctx, mk[None])[0]
        return np.where(mk[:, None], self._V @ G, 0.0)  # exact zeros on stragglers

    def _fallback(self, mask: np.ndarray) -> DecoderLookup:
        """The gain of a pattern outside the table, solved now and certified as the stored rows are.

        ``G_F = k (aI + λM_F)⁻¹`` and the error of Theorem 42.1, then the check of
        :meth:`verification_report` (Theorem 47.7b: the gain's residual within its bound);
        ``certificate["gain_relerr"]`` is the certified relative accuracy of the gain.
        """
        G = gains(self._ctx, mask[None])
        E = np.clip(self._ctx.errors(mask[None]), 0.0, self._ctx.total)
        ratio, relerr, what = self._certify(np.zeros(1, dtype=np.int64), mask[None], G, E)
        if not ratio[0] <= 1.0:
            S = np.flatnonzero(~mask).tolist()
            raise VerificationError(f"fallback gain of stragglers {S[:20]}: {what[0]}")
        X = np.where(mask[:, None], self._V @ G[0], 0.0)
        X.setflags(write=False)
        cert = {"ratio": float(ratio[0]), "gain_relerr": float(relerr[0])}
        return DecoderLookup(X, float(E[0]), "fallback", None, cert)

    def decode(self, mask: Any, transmissions: Any) -> np.ndarray:
        """Decode received transmissions: ``G_Fᵀ Σ_{j∈F} (u_j / ‖u_j‖²) g̃_j`` (``(m, L)``), no dense decoder.

        Parameters and result as :meth:`DecoderTable.decode`.
        """
        mk = check_mask("mask", mask, self.n)
        Gt = np.asarray(transmissions, dtype=float)
        if Gt.ndim != 2 or Gt.shape[0] != self.n:
            raise InvalidArgumentError("transmissions", f"must have shape (n, L) = ({self.n}, L), got {Gt.shape}")
        G = self.gains[self.row(mk)]
        Gf = Gt[mk]
        if not np.all(np.isfinite(Gf)):
            raise InvalidArgumentError("transmissions", "an arrived transmission contains NaN or inf")
        return G.T @ (self._V[mk].T @ Gf)

    # -- checks -------------------------------------------------------------------------------------
    def verification_report(self, sample: int | None = None, seed: int = 0) -> dict:
        """Certify every row (Theorem 47.7b): the gain by its residual, the error against Theorem 42.1.

        For each pattern, ``M̂_F`` and ``Ĉ = fl(aI + λM̂_F)`` are recomputed from the mask and the
        computed residual ``R̂ = fl(Ĉ G − kI)`` of the stored gain ``G`` must satisfy
        ``‖R̂‖_F <= ρ = 2λ γ_{n+4m+3} f ‖G‖_F + 2m (γ_{3m}(1 + m² 2^m) + γ_{m+1}) ‖Ĉ‖_F ‖G‖_F
        + γ_{m+1} k √m`` (what a backward-stable solve on another machine can leave); then
        ``‖G − G*‖_2 <= ε_G`` (returned per row as ``max_gain_bound``) holds rigorously, with
        ``ε_G = 1.01 (‖R̂‖_F + γ_{m+1} ‖|Ĉ||G| + kI‖_F + (λ γ_{n+4m+3} f + γ_{m²+4} ‖Ĉ‖_F) ‖G‖_F) / a``.
        The stored error must lie within ``2 β(f)`` (Theorem 42.2) of the error recomputed by
        Theorem 42.1.  No row is skipped (no rank decision: theory §42.1, Remark (i)).

        Returns
        -------
        dict
            ``checked``, ``skipped_near_rank_cutoff`` and ``rank_free`` (always 0), ``unchecked`` (rows outside a
            sample), ``max_ratio`` (largest ``‖R̂‖/ρ`` or ``|ΔE|/2β``) and ``max_gain_relerr``
            (largest ``ε_G / ‖G‖_2``: the certified relative accuracy of the stored gains).

        Raises
        ------
        VerificationError
            A row whose gain or error is off its bound (the first is named, with the count).
        """
        count = len(self)
        chunks, total = self._checked_rows(sample, seed, self._chunk())
        worst = worst_gain = 0.0
        failures = 0
        first: str | None = None
        for rows, masks in chunks:
            ratio, relerr, what = self._certify(rows, masks)
            if ratio.size:
                worst = max(worst, float(ratio.max()))
                worst_gain = max(worst_gain, float(relerr.max()))
            bad = np.flatnonzero(ratio > 1.0)
            if bad.size:
                failures += int(bad.size)
                if first is None:
                    r = int(rows[bad[0]])
                    S = np.flatnonzero(~masks[bad[0]]).tolist()
                    more = "..." if len(S) > 20 else ""
                    first = f"structured decoder table row {r} (stragglers {S[:20]}{more}): {what[bad[0]]}"
        if first is not None:
            raise VerificationError(f"{first} ({failures} of the {total} rows checked fail)")
        return {
            "checked": total,
            "skipped_near_rank_cutoff": 0,
            "rank_free": 0,
            "unchecked": count - total,
            "max_ratio": float(worst),
            "max_gain_relerr": float(worst_gain),
        }

    def _chunk(self) -> int:
        return max(1, _STRUCTURED_CHUNK_BYTES // (8 * max(self.n, 1)))

    def _certify(
        self, rows: np.ndarray, masks: np.ndarray, G: np.ndarray | None = None, E: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Per row: ratio (> 1 fails), certified relative gain error, and what failed (stored rows, or ``G``, ``E``)."""
        ctx, m = self._ctx, self.m
        a, lam, k = float(ctx.a), float(ctx.lam), float(ctx.k)
        G = self.gains[rows] if G is None else G
        E = self.errors[rows] if E is None else E
        f = masks.sum(axis=1).astype(np.float64)
        Chat = _capacitance(ctx, _gram_blocks(ctx, masks))
        R = Chat @ G - k * np.eye(m)[None]
        rn = np.sqrt(np.einsum("cij,cij->c", R, R))
        cn = np.sqrt(np.einsum("cij,cij->c", Chat, Chat))
        gn = np.sqrt(np.einsum("cij,cij->c", G, G))
        dM = _gamma(self.n + 4 * m + 3) * f  # ‖M̂ - M_F‖_2 (Theorem 42.2's proof)
        g3 = _gamma(3 * m) * (1 + m * m * 2**m) + _gamma(m + 1)
        rho = 2 * lam * dM * gn + 2 * m * g3 * cn * gn + _gamma(m + 1) * k * math.sqrt(m)
        absprod = np.abs(Chat) @ np.abs(G) + k * np.eye(m)[None]
        eps_g = (
            1.01
            * (
                rn
                + _gamma(m + 1) * np.sqrt(np.einsum("cij,cij->c", absprod, absprod))
                + (lam * dM + _gamma(m * m + 4) * cn) * gn
            )
            / a
        )
        g2 = np.linalg.norm(G, ord=2, axis=(1, 2)) if G.size else gn
        relerr = np.where(g2 > 0, eps_g / np.where(g2 > 0, g2, 1.0), np.inf)
        err = np.clip(ctx.errors(masks), 0.0, ctx.total)
        beta = np.array([ctx.bound(int(x)) for x in f])
        dev_e = np.abs(E - err)
        ratio_g = rn / rho
        ratio_e = np.where(beta > 0, dev_e / (2 * np.where(beta > 0, beta, 1.0)), np.where(dev_e == 0, 0.0, np.inf))
        finite = np.all(np.isfinite(G), axis=(1, 2)) & np.isfinite(E)
        ratio = np.where(finite, np.maximum(ratio_g, ratio_e), np.inf)
        what = [
            f"stored gain has residual ‖Ĉ G − kI‖_F = {rn[i]:.3g} > its bound {rho[i]:.3g}"
            if ratio_g[i] > 1 or not finite[i]
            else f"stored error {E[i]!r} differs from the recomputed {err[i]!r} by more than 2β(f) = {2 * beta[i]:.3g}"
            for i in range(rows.size)
        ]
        return ratio, relerr, what

    # -- serialization ------------------------------------------------------------------------------
    def to_torch(self, dtype: Any = None, device: Any = None) -> dict[str, Any]:
        """The gains, diagonals, patterns and errors as torch tensors (no dense decoders).

        ``gains`` ``(count, m, m)``, ``scaled_diagonals`` ``(n, m)`` (rows ``u_j / ‖u_j‖²``: the
        decoder of row ``r`` is ``patterns[r][:, None] * scaled_diagonals @ gains[r]``), ``patterns``
        (bool ``(count, n)``) and ``errors``.
        """
        patterns = np.concatenate([mk for _, mk in self.iter_patterns()]) if len(self) else np.zeros((0, self.n), bool)
        arrays = {"gains": self.gains, "scaled_diagonals": self._V, "patterns": patterns, "errors": self.errors}
        return to_torch_tensors(arrays, dtype=dtype, device=device, what="StructuredDecoderTable.to_torch")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The table's arrays: the encoder's sparse incidence (CSC ``indices`` int32 and ``indptr``
        int64), ``diagonals`` ``(m, n)``, ``gains`` ``(count, m, m)``, ``errors`` ``(count,)`` and, for an
        explicit list, ``patterns_packed`` (``numpy.packbits`` of the masks along workers, uint8)."""
        inc = self.scheme.incidence
        arrays: dict[str, np.ndarray] = {
            "incidence_indices": np.asarray(inc.indices, dtype=np.int32),
            "incidence_indptr": np.asarray(inc.indptr, dtype=np.int64),
            "diagonals": np.asarray(self.scheme.diagonals, dtype=np.float64),
            "gains": self.gains,
            "errors": self.errors,
        }
        if self._patterns is not None:
            arrays["patterns_packed"] = np.packbits(self._patterns, axis=1)
        return arrays

    def bundle_metadata(self) -> dict[str, Any]:
        """As :meth:`DecoderTable.bundle_metadata`, with ``layout = "structured-rd"``, its version, ``k``, ``lam``;
        ``scheme_method`` is the encoder's own method (``"rd"``, or the ``B = A`` encoder's name)."""
        ctx = self._ctx
        return {
            "params": list(self.params),
            "construction": "explicit" if self.explicit else "all-up-to-s",
            "kind": TABLE_KIND,
            "layout": STRUCTURED_LAYOUT,
            "structured_format_version": STRUCTURED_FORMAT_VERSION,
            "n": self.n,
            "m": self.m,
            "N": self.scheme.num_parts,
            "k": int(ctx.k),
            "lam": int(ctx.lam),
            "count": len(self),
            "s_max": self.s_max,
            "explicit": self.explicit,
            "decoder": "row r: X = diag(mask) diag(1/|u_j|^2) U gains[r], U = diagonals^T (theory §47.7)",
            "ordering": (
                "explicit list (row = position in 'patterns_packed')"
                if self.explicit
                else "by |S| ascending, then lexicographic S (itertools.combinations)"
            ),
            "scheme_method": self.scheme.method,  # "rd", or a B = A encoder's name (m = 1, unit diagonals)
            "scheme_params": to_jsonable(dict(self.scheme.options)),
        }

    @classmethod
    def _rebuild(cls, arrays: dict[str, Any], metadata: dict[str, Any]) -> StructuredDecoderTable:
        """The structured layout of :meth:`~gcsim.coding.dense_table.DecoderTable.from_arrays`: shapes, dtypes,
        the incidence (exactly) and the invariants checked.

        Raises
        ------
        CatalogueError
            Missing or malformed arrays/metadata, an incidence without ``AᵀA = (k − λ)I + λJ`` or
            with other ``(k, λ)``, non-finite values, errors outside ``[0, mN]``, a count that does not
            match ``s_max``, duplicate explicit patterns, a ``scheme_method`` that is neither ``"rd"``
            nor a ``B = A`` encoder with ``m = 1``, no options and unit diagonals, ``scheme_params``
            (eps, seed, dist) that do not draw the stored diagonals bit for bit (theory §5.4: the
            options reported are re-derived, never taken on trust).
        """

        def bad(msg: str) -> CatalogueError:
            return CatalogueError(f"structured decoder table: {msg}")

        problem = layout_version_problem(metadata, "structured_format_version", STRUCTURED_FORMAT_VERSION)
        if problem:
            raise bad(problem)
        for name in ("incidence_indices", "incidence_indptr", "diagonals", "gains", "errors"):
            if name not in arrays:
                raise bad(f"array {name!r} is missing")
        ints = {}
        for key in ("n", "m", "N", "count", "k", "lam"):
            v = metadata.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if key == "lam" else 1):
                raise bad(
                    f"metadata {key!r} must be a {'non-negative' if key == 'lam' else 'positive'} integer, got {v!r}"
                )
            ints[key] = v
        n, m, N, count = ints["n"], ints["m"], ints["N"], ints["count"]
        ind, ptr = np.asarray(arrays["incidence_indices"]), np.asarray(arrays["incidence_indptr"])
        D, G, E = np.asarray(arrays["diagonals"]), np.asarray(arrays["gains"]), np.asarray(arrays["errors"])
        for name, arr, shape, kinds in (
            ("incidence_indptr", ptr, (n + 1,), "iu"),
            ("diagonals", D, (m, n), "f"),
            ("gains", G, (count, m, m), "f"),
            ("errors", E, (count,), "f"),
        ):
            if arr.shape != shape or arr.dtype.kind not in kinds:
                raise bad(f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected {shape}")
        if (
            ind.ndim != 1
            or ind.dtype.kind not in "iu"
            or ptr[0] != 0
            or ptr[-1] != ind.size
            or np.any(np.diff(ptr) < 0)
        ):
            raise bad("the incidence's indices/indptr are not a CSC structure")
        if ind.size and (ind.min() < 0 or ind.max() >= N):
            raise bad(f"an incidence index lies outside range({N})")
        if not (np.all(np.isfinite(D)) and np.all(np.isfinite(G)) and np.all(np.isfinite(E))):
            raise bad("diagonals, gains or errors contain NaN or inf")
        inc = sp.csc_matrix(
            (np.ones(ind.size, dtype=np.int64), ind.astype(np.int64), ptr.astype(np.int64)), shape=(N, n)
        )
        try:
            k, lam = check_pair_gram(inc, "incidence")
        except VerificationError as exc:
            raise bad(f"stored encoder is invalid: {exc}") from None
        if (k, lam) != (ints["k"], ints["lam"]):
            raise bad(f"the incidence has (k, λ) = {(k, lam)}, the metadata says {(ints['k'], ints['lam'])}")
        declared_options = metadata.get("scheme_params", {})
        if not isinstance(declared_options, dict):
            raise bad(f"metadata 'scheme_params' must be an object, got {type(declared_options).__name__}")
        options: dict[str, Any] = dict(declared_options)
        method = _structured_table_method(metadata.get("scheme_method", StructuredRD.method), m, D, options, bad)
        if options:  # reported only once re-derived: the stated options must draw the stored diagonals
            try:
                want, options = _rederived_diagonals(method, m, n, options)
                _check_same_diagonals(np.asarray(D, dtype=np.float64), want, options)
            except CatalogueError as exc:
                raise bad(f"scheme_params: {str(exc).partition(': ')[2]}") from None
        scheme = StructuredRD(inc, D, k, lam, options)
        if method != scheme.method:  # a B = A encoder (m = 1) keeps its method's name
            object.__setattr__(scheme, "method", method)
        explicit = metadata.get("explicit")
        if not isinstance(explicit, bool):
            raise bad(f"metadata 'explicit' must be true or false, got {explicit!r}")
        P: np.ndarray | None
        if explicit:
            packed = np.asarray(arrays.get("patterns_packed"))
            width = (n + 7) // 8
            if "patterns_packed" not in arrays or packed.shape != (count, width) or packed.dtype != np.uint8:
                raise bad(f"explicit table needs uint8 array 'patterns_packed' of shape {(count, width)}")
            P = np.unpackbits(packed, axis=1, count=n).astype(bool)
            if len({bytes(row) for row in packed}) != count:
                raise bad("explicit patterns contain duplicates")
            s_max = None
        else:
            s_max = _stored_s_max(metadata, n, count, bad)
            P = None
        _check_stored_errors(E, m * N, bad)
        table = cls(scheme, G.astype(np.float64, copy=True), E.astype(np.float64, copy=True), s_max=s_max, patterns=P)
        declared = metadata.get("params")
        if declared is not None and list(declared) != list(table.params):
            raise bad(f"params {declared!r} do not match the arrays' {list(table.params)!r}")
        return table


def _structured_table_method(method: Any, m: int, D: np.ndarray, options: dict[str, Any], bad: Any) -> str:
    """The stored ``scheme_method`` of a structured table, checked against its encoder's arrays.

    ``"rd"`` (absent in older tables), or a registered encoder whose ``B`` is ``A`` at ``m = 1``
    (``m1_is_assignment``), stored with no options and every diagonal exactly 1.
    """
    if method == StructuredRD.method:
        return method
    if not isinstance(method, str) or not is_registered(method):
        raise bad(f"metadata 'scheme_method' {method!r:.60} is not a registered encoder")
    if not get_encoder(method).is_assignment_code(m):
        raise bad(f"scheme_method {method!r} with m = {m} is not a structured encoder (RD, or B = A with m = 1)")
    if options or not np.all(D == 1.0):
        raise bad(f"scheme_method {method!r} is B = A: it needs no options and unit diagonals (the stored ones differ)")
    return method


def structured_decoder_table(
    scheme: StructuredRD, s_max: int | None = None, *, patterns: Any = None, stragglers: Any = None
) -> StructuredDecoderTable:
    """The gains and errors of every pattern with ``|S| <= s_max`` (or of a given list), without a dense ``B``.

    Parameters as :func:`gcsim.coding.decoder_table.decoder_table` (no ``rcond``: the structured
    route has no rank decision).  Cost ``O(n m²)`` a pattern; memory one chunk of masks plus the
    table (``m² + 1`` floats a pattern, and the masks of an explicit list).

    Raises
    ------
    InvalidArgumentError
        Not exactly one of ``s_max``/``patterns``/``stragglers``, more than ``MAX_PATTERNS`` patterns,
        duplicate patterns.

    Examples
    --------
    >>> from gcsim.coding.structured import encode_structured
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    >>> t = structured_decoder_table(enc, stragglers=[[0, 5], [3]])
    >>> t.row_of_stragglers([3]), t.decoder(t.pattern(0))[[0, 5]].tolist()
    (1, [[0.0, 0.0], [0.0, 0.0]])
    """
    if not isinstance(scheme, StructuredRD):
        raise InvalidArgumentError("scheme", "must be a StructuredRD (see gcsim.coding.structured.encode_structured)")
    given = [x is not None for x in (s_max, patterns, stragglers)]
    if sum(given) != 1:
        raise InvalidArgumentError("s_max", "give exactly one of s_max, patterns or stragglers")
    n, ctx = scheme.n, scheme.context
    chunk = max(1, _STRUCTURED_CHUNK_BYTES // (8 * max(n, 1)))
    m = scheme.m
    if s_max is not None:
        s_max = check_int("s_max", s_max, minimum=0, maximum=n)
        count = pattern_count(n, s_max)
        check_count(
            "s_max",
            count,
            f"decoder-table patterns (sum over t <= {s_max} of C({n}, t))",
            hint="choose a smaller s_max or list the patterns (patterns=...)",
        )
        G, E = np.empty((count, m, m)), np.empty(count)
        offset = 0
        for s in range(s_max + 1):
            total = math.comb(n, s)
            for a in range(0, total, chunk):
                mk = _masks_from_sets(straggler_sets(n, s, a, a + chunk), n)
                r = offset + a
                G[r : r + mk.shape[0]] = gains(ctx, mk)
                E[r : r + mk.shape[0]] = np.clip(ctx.errors(mk), 0.0, ctx.total)
            offset += total
        return StructuredDecoderTable(scheme, G, E, s_max=s_max)
    masks, _ = _explicit_masks(n, patterns, stragglers)
    count = masks.shape[0]
    G, E = np.empty((count, m, m)), np.empty(count)
    for a in range(0, count, chunk):
        mk = masks[a : a + chunk]
        G[a : a + mk.shape[0]] = gains(ctx, mk)
        E[a : a + mk.shape[0]] = np.clip(ctx.errors(mk), 0.0, ctx.total)
    return StructuredDecoderTable(scheme, G, E, patterns=masks)
