"""The dense decoder table: the optimal decoder ``X*(F) = B_F⁺ T`` of every pattern, stored.

:class:`DecoderTable` stores, per straggler pattern, the ``(n, m)`` minimum-norm optimal decoder
(rows off ``F`` exactly zero) and its error, indexed by :class:`~gcsim.coding.table_patterns.PatternIndex`;
it is also the base of the structured table (:mod:`gcsim.coding.structured_tables`) and the
registry of the table layouts a bundle may declare (:meth:`DecoderTable.from_arrays`).  Build one
with :func:`gcsim.coding.decoder_table.decoder_table`; the module :mod:`gcsim.coding.decoder_table`
documents the tables as a whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._validation import (
    check_bool,
    check_count,
    check_dense_size,
    check_int,
    check_mask,
    check_real,
    layout_version_problem,
)
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from ..io._torch import to_torch_tensors
from ..io.bundle import save_bundle
from ..io.manifest import to_jsonable
from .schemes import Scheme
from .stragglers import straggler_sets
from .table_patterns import (
    PatternIndex,
    _check_set,
    _check_stored_errors,
    _complement,
    _explicit_masks,
    _stored_s_max,
    pattern_count,
)
from .table_solve import (
    _SAFETY,
    _U,
    FALLBACKS,
    DecoderLookup,
    _chunk_rows,
    _rank_free_bound,
    _rank_free_ratio,
    _solve_group,
    _target,
    certified_decoder,
)

__all__ = ["TABLE_KIND", "TABLE_FORMAT_VERSION", "DecoderTable", "DecoderTableParams"]

#: ``metadata["kind"]`` of an exported table.
TABLE_KIND = "decoder_table"
#: Version of the table layout inside the bundle (see :meth:`DecoderTable.bundle_metadata`).
TABLE_FORMAT_VERSION = 1


def _bad(msg: str) -> CatalogueError:
    return CatalogueError(f"decoder table: {msg}")


def _table_card(
    table: Any,
    title: str,
    *,
    before_errors: Sequence[tuple[str, Any]] = (),
    after_errors: Sequence[tuple[str, Any]] = (),
    **kw: Any,
) -> str:
    """The Jupyter card of a decoder table (dense or structured): its patterns, scheme and errors' range."""
    err = table.errors
    spread = (float(err.min()), float(err.mean()), float(err.max())) if err.size else None
    rows = [
        ("patterns", "explicit list" if table.explicit else f"every |S| ≤ {table.s_max}"),
        ("scheme", repr(table.scheme)),
        *before_errors,
        ("error min, mean, max", spread),
        *after_errors,
    ]
    return _html.object_html(
        title=title, kind=table.kind, params=table.params, rows=rows, status=_html.verdict(table), **kw
    )


class DecoderTableParams(NamedTuple):
    """Parameters of a :class:`DecoderTable`: the encoder's shape, the pattern count and ``s_max``
    (None for an explicit list of patterns)."""

    num_parts: int
    n: int
    m: int
    num_patterns: int
    s_max: int | None


class DecoderTable(PatternIndex):
    """Precomputed optimal decoders with a pattern -> row index (build with :func:`decoder_table`).

    Immutable once built (its arrays are read-only; attributes cannot be set or deleted).

    Attributes
    ----------
    scheme : Scheme
        The encoder (``B``, assignment, ``m``).
    s_max : int or None
        All patterns with ``|S| <= s_max`` (None for an explicit list of patterns).
    decoders : numpy.ndarray, shape (count, n, m), read-only
        ``decoders[row]`` is ``X*(F)`` embedded in ``(n, m)``: rows off ``F`` are exactly zero.
    errors : numpy.ndarray, shape (count,), read-only
        ``‖B X*(F) - T‖_F²``, the optimal (raw) error of each pattern.
    rcond : float or None
        Relative singular-value cutoff used (None: ``max(mN, |F|) eps``).

    Examples
    --------
    >>> from gcsim.coding.decoder_table import decoder_table
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> table = decoder_table(encode(A, 1, "naive"), s_max=1)
    >>> len(table), table.row([True, False, True])
    (4, 2)
    >>> np.round(table.decoder([True, False, True]).ravel(), 12).tolist()   # x_0 = x_2 = 2/3
    [0.666666666667, 0.0, 0.666666666667]
    """

    kind: ClassVar[str] = "decoder_table"
    #: ``metadata["layout"]`` of this class's bundle (None: the dense table's, which has no ``layout``)
    layout: ClassVar[str | None] = None
    #: layout -> table class rebuilding it (:meth:`from_arrays` dispatches on the bundle's layout); a
    #: subclass with its own ``layout`` registers here when it is defined
    _layouts: ClassVar[dict[str | None, type[DecoderTable]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "layout" in cls.__dict__:
            DecoderTable._layouts[cls.layout] = cls

    def __init__(
        self,
        scheme: Scheme,
        decoders: np.ndarray,
        errors: np.ndarray,
        *,
        s_max: int | None = None,
        patterns: np.ndarray | None = None,
        rcond: float | None = None,
    ):
        self.scheme = scheme
        self.s_max = s_max
        self.rcond = rcond
        self.decoders = decoders
        self.errors = errors
        self.decoders.setflags(write=False)
        self.errors.setflags(write=False)
        self._setup_index(scheme.n, s_max, patterns)
        self._frozen = True

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"DecoderTable is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"DecoderTable is immutable: cannot delete {name!r}")

    @property
    def params(self) -> DecoderTableParams:
        """``DecoderTableParams(num_parts, n, m, num_patterns, s_max)``."""
        return DecoderTableParams(self.scheme.num_parts, self.n, self.m, len(self), self.s_max)

    # -- size -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.decoders.shape[0])

    @property
    def n(self) -> int:
        """Number of workers."""
        return self.scheme.n

    @property
    def m(self) -> int:
        """Communication reduction (columns of each decoder)."""
        return self.scheme.m

    def __repr__(self) -> str:
        what = "explicit patterns" if self.explicit else f"s_max={self.s_max}"
        return f"DecoderTable({len(self)} patterns, {what}, n={self.n}, m={self.m}, scheme={self.scheme.method!r})"

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: params, the errors' range, verification status, the encoder's ``|B|``.

        ``verify()`` (every row re-solved) runs once, on first display (the table is
        immutable); a failure is shown as "verification failed: ...", never raised (see :mod:`gcsim._html`).
        """

        def card() -> str:
            return _table_card(
                self,
                "DecoderTable",
                after_errors=[("rcond", self.rcond)],
                matrix=self.scheme.B,
                caption="the scheme's encoder B (m·N rows × n workers)",
            )

        return _html.safe_html(self, card)

    # -- lookups ------------------------------------------------------------------------------------
    def decoder(self, mask: Any, *, fallback: str = "raise") -> np.ndarray:
        """The stored optimal decoder ``(n, m)`` of a non-straggler mask (a read-only view).

        ``fallback="solve"`` computes the decoder of a pattern the table does not cover (same
        cutoff) instead of raising.
        """
        if fallback not in ("raise", "solve"):
            raise InvalidArgumentError("fallback", f"must be 'raise' or 'solve', got {fallback!r}")
        try:
            return self.decoders[self.row(mask)]
        except InvalidArgumentError:
            if fallback == "raise":
                raise
        mk = check_mask("mask", mask, self.n)
        F = np.flatnonzero(mk)[None]
        X = np.zeros((self.n, self.m))
        XF, _ = _solve_group(self.scheme.B, self.m, F, self.rcond)
        X[F[0]] = XF[0]
        return X

    def lookup(self, mask: Any = None, *, stragglers: Any = None, fallback: str = "optimal") -> DecoderLookup:
        """The decoder of a pattern, from the table or, outside it, from the certified fallback.

        Give the pattern as a non-straggler ``mask`` (True = arrived) or as ``stragglers`` (worker
        indices).  A pattern the table holds answers its stored row (``source="table"``); any
        other pattern, with ``fallback="optimal"`` (default), is solved now by
        :func:`certified_decoder` (the same minimum-norm decoder ``B_F⁺ T`` and cutoff the table
        would have stored, certified by its normal equations and residual;
        ``source="fallback"``); ``fallback="raise"`` refuses it.  The table stays immutable: count
        the answers' ``source`` where they are used (the coded trainer's report does).

        Raises
        ------
        InvalidArgumentError
            Both or neither of ``mask``/``stragglers``, a bad pattern, an unknown ``fallback``, or
            (``fallback="raise"``) a pattern outside the table.
        VerificationError
            A fallback decoder whose certificate fails.

        Examples
        --------
        >>> from gcsim.coding.decoder_table import decoder_table
        >>> from gcsim.coding.schemes import encode
        >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
        >>> t = decoder_table(encode(A, 1, "naive"), s_max=1)
        >>> t.lookup(stragglers=[1]).source, t.lookup(stragglers=[0, 1]).source
        ('table', 'fallback')
        """
        if fallback not in FALLBACKS:
            raise InvalidArgumentError("fallback", f"must be one of {FALLBACKS}, got {fallback!r}")
        if (mask is None) == (stragglers is None):
            raise InvalidArgumentError("mask", "give the pattern as mask= (non-stragglers) or stragglers= (indices)")
        if mask is None:
            mk = np.ones(self.n, dtype=bool)
            mk[_check_set("stragglers", stragglers, self.n)] = False
        else:
            mk = check_mask("mask", mask, self.n)
            if mk.ndim != 1:
                raise InvalidArgumentError("mask", f"must be a single mask of shape ({self.n},)")
        try:
            row = self.row(mk)
        except InvalidArgumentError:
            if fallback == "raise":
                raise
            return self._fallback(mk)
        return DecoderLookup(self.decoder(mk), float(self.errors[row]), "table", row, None)

    def _fallback(self, mask: np.ndarray) -> DecoderLookup:
        """The certified decoder of a pattern outside the table (dense: :func:`certified_decoder`)."""
        return certified_decoder(self.scheme, mask, rcond=self.rcond)

    def decode(self, mask: Any, transmissions: Any) -> np.ndarray:
        """Decode received transmissions: block ``l`` of the estimate is ``Σ_{j∈F} X_{jl} g̃_j``.

        Parameters
        ----------
        mask : array_like of bool, shape (n,)
            True = worker ``j``'s transmission arrived.
        transmissions : array_like, shape (n, L)
            Row ``j`` is ``g̃_j`` (rows of stragglers are ignored, they may hold anything finite or NaN).

        Returns
        -------
        numpy.ndarray, shape (m, L)
            Row ``l`` estimates ``Σ_i g_i[l]``, the ``l``-th block of the full gradient.
        """
        mk = check_mask("mask", mask, self.n)
        G = np.asarray(transmissions, dtype=float)
        if G.ndim != 2 or G.shape[0] != self.n:
            raise InvalidArgumentError("transmissions", f"must have shape (n, L) = ({self.n}, L), got {G.shape}")
        X = self.decoder(mk)
        Gf = G[mk]
        if not np.all(np.isfinite(Gf)):
            raise InvalidArgumentError("transmissions", "an arrived transmission contains NaN or inf")
        return X[mk].T @ Gf

    # -- checks -------------------------------------------------------------------------------------
    def verify(self, sample: int | None = None, seed: int = 0) -> bool:
        """The check of :meth:`verification_report` (the encoder verifies too); returns True.

        Every row by default; ``sample=k`` re-solves ``k`` random rows only (an explicit opt-in:
        the others are not checked, see :meth:`verification_report`).

        Raises
        ------
        VerificationError
            The encoder does not verify, or a re-solved decoder or error is off its bound.
        """
        self.scheme.verify()
        self.verification_report(sample, seed)
        return True

    def verification_report(self, sample: int | None = None, seed: int = 0) -> dict:
        """Re-solve every pattern (batched SVDs of the ``B_F`` stacks) and compare with the stored decoders.

        For each pattern, the stored decoder must have exactly zero rows off ``F`` and agree with the
        minimum-norm solution ``B_F^+ T`` re-solved here (batched SVD, singular values at or below
        the cutoff counted as zero) within the perturbation bound of least squares (Higham,
        *Accuracy and Stability of Numerical Algorithms*, Thm 20.1, for two backward-stable
        solvers): ``‖ΔX‖_F <= 2 c mN f u κ (2 + (κ + 1) ‖R‖_F / (σ_1 ‖X‖_F)) ‖X‖_F`` with
        ``κ = σ_1/σ_r`` of ``B_F`` (over its numerically non-zero singular values), ``c = 10``; the
        stored error must match the squared residual within ``4 c mN f u κ mN`` (residual bound of
        the same theorem) plus the rounding of the sum of squares.  A pattern none of whose
        singular values lies within a factor 10 of the rank cutoff is checked that way.  For the
        others the rank itself is not determined by the data (so is the minimum-norm decoder, and
        the bound above has ``κ`` near ``1/(max(mN, f) u)``: it is vacuous); they are checked by the
        rank-free certificate of Proposition 47.6c instead: the stored error must be the squared
        residual ``‖B_F X − T‖_F²`` of the stored decoder ``X`` within a rigorous rounding bound (so
        it is the error the deployed decoder has, and at least the optimum).  They are counted in
        ``rank_free``; no row is skipped.

        Parameters
        ----------
        sample : int or None
            None (default): every pattern.  An int ``k``: an explicit opt-in to check only ``k``
            patterns drawn at random (seeded by ``seed``) besides the first and the last row; the
            decoders and errors of the other rows are **not** checked at all (a changed row among
            them goes unnoticed).
        seed : int >= 0
            Seed of the sample.

        Returns
        -------
        dict
            ``checked`` (patterns compared with their bound: every row of the sample),
            ``rank_free`` (those of them near the rank cutoff, checked by Proposition 47.6c),
            ``skipped_near_rank_cutoff`` (0: kept for old callers), ``unchecked`` (rows outside the
            sample: 0 for a full check) and ``max_ratio`` (largest deviation / bound).

        Raises
        ------
        VerificationError
            A stored decoder that is not the optimal minimum-norm decoder of its pattern (the first
            such row is named, with the number of such rows among those checked).
        """
        count = len(self)
        chunks, total = self._checked_rows(sample, seed)
        worst, rank_free, failures = 0.0, 0, 0
        first: str | None = None
        for rows, masks in chunks:
            sizes = masks.sum(axis=1)
            for f in np.unique(sizes):
                idx = np.flatnonzero(sizes == f)
                step = _chunk_rows(self.scheme.B.shape[0], int(f), self.m)
                for a in range(0, idx.size, step):
                    part = idx[a : a + step]
                    ratio, near = self._check_rows(rows[part], masks[part])
                    rank_free += int(near.sum())
                    bad = np.flatnonzero(ratio > 1.0)
                    if ratio.size:
                        worst = max(worst, float(ratio.max()))
                    if bad.size:
                        failures += int(bad.size)
                        if first is None:
                            first = self._failure_text(int(rows[part][bad[0]]), masks[part][bad[0]])
        if first is not None:
            raise VerificationError(f"{first} ({failures} of the {total} rows checked fail)")
        return {
            "checked": total,
            "skipped_near_rank_cutoff": 0,
            "rank_free": rank_free,
            "unchecked": count - total,
            "max_ratio": float(worst),
        }

    def _check_rows(self, rows: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ratio, near_cutoff)`` per row of one ``|F| = f`` chunk: deviation / bound (> 1 fails).

        Rows near the rank cutoff get the ratio of the rank-free certificate (Proposition 47.6c);
        a failed structural check (weights on stragglers, or the error of an empty ``F`` other than
        ``mN``) gives ratio ``inf``.
        """
        B, m = self.scheme.B, self.m
        mN = B.shape[0]
        k, f = masks.shape[0], int(masks[0].sum()) if masks.shape[0] else 0
        X, E = self.decoders[rows], self.errors[rows]
        structural = np.any(X * ~masks[:, :, None] != 0, axis=(1, 2))
        if f == 0:
            return np.where(structural | (E != mN), np.inf, 0.0), np.zeros(k, bool)
        F = np.nonzero(masks)[1].reshape(k, f)
        BF = np.moveaxis(B.T[F], 1, 2)  # (k, mN, f)
        U, sv, Vt = np.linalg.svd(BF, full_matrices=False)
        cut = (max(mN, f) * 2.0 * _U if self.rcond is None else self.rcond) * sv[:, :1]
        near = (sv[:, 0] == 0) | np.any((sv > cut / 10) & (sv <= cut * 10), axis=1)
        keep = sv > cut
        inv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
        T = _target(m, mN // m)
        Xl = np.einsum("crf,cr,cir,il->cfl", Vt, inv, U, T, optimize=True)  # V Σ⁺ Uᵀ T
        R = BF @ Xl - T[None]
        rn = np.sqrt(np.einsum("cil,cil->c", R, R))
        xn = np.sqrt(np.einsum("cfl,cfl->c", Xl, Xl))
        low = np.where(keep, sv, np.inf).min(axis=1)
        kappa = np.where(np.isfinite(low), sv[:, 0] / np.where(np.isfinite(low), low, 1.0), 1.0)
        eta = 2 * _SAFETY * mN * f * _U * kappa
        rel = np.where(xn > 0, rn / np.where(xn > 0, sv[:, 0] * xn, 1.0), 0.0)
        bound_x = eta * (2.0 + (kappa + 1.0) * rel) * xn
        XF = np.take_along_axis(X, F[:, :, None], axis=1)
        dev = np.sqrt(np.einsum("cfl,cfl->c", XF - Xl, XF - Xl))
        # |‖r‖² - ‖r'‖²| <= (‖r‖ + ‖r'‖) ‖r - r'‖ <= 2 sqrt(mN) * eta sqrt(mN) (Thm 20.1, residual),
        # plus the rounding of a sum of mN m squares
        bound_e = 2 * eta * mN + _SAFETY * mN * m * 2 * _U * mN
        dev_e = np.abs(E - rn * rn)
        ratio_x = np.where(bound_x > 0, dev / np.where(bound_x > 0, bound_x, 1.0), np.where(dev == 0, 0.0, np.inf))
        ratio = np.maximum(ratio_x, dev_e / bound_e)
        # near the cutoff the rank (so the minimum-norm decoder) is not determined by the data:
        # those rows get the rank-free certificate of Proposition 47.6c instead (the stored error is
        # the squared residual of the stored decoder, within a rigorous rounding bound)
        if np.any(near):
            ratio = np.where(near, _rank_free_ratio(BF, XF, E, m), ratio)
        # B_F = 0 exactly: no rank question; the decoder must be 0 and the error mN, exactly
        zero = sv[:, 0] == 0
        ratio = np.where(zero, np.where(np.any(XF != 0, axis=(1, 2)) | (E != mN), np.inf, 0.0), ratio)
        return np.where(structural, np.inf, ratio), near & ~zero

    def _failure_text(self, row: int, mask: np.ndarray) -> str:
        """What is wrong with ``row``, re-derived for this one row (for the message)."""
        B, m = self.scheme.B, self.m
        mN = B.shape[0]
        X, S = self.decoders[row], np.flatnonzero(~mask).tolist()
        if np.any(X[~mask] != 0):
            return f"decoder table row {row} (stragglers {S}) has non-zero weights on stragglers"
        if not mask.any():
            return f"decoder table row {row} (every worker straggles): error {self.errors[row]!r}, expected mN = {mN}"
        BF = B[:, mask]
        sv = np.linalg.svd(BF, compute_uv=False)
        cut = (max(mN, BF.shape[1]) * 2.0 * _U if self.rcond is None else self.rcond) * sv[0]
        if np.any((sv > cut / 10) & (sv <= cut * 10)):  # near the cutoff: Proposition 47.6c failed
            r, rho = (float(x[0]) for x in _rank_free_bound(BF[None], X[mask][None], m))
            return (
                f"decoder table row {row} (stragglers {S}, near the rank cutoff): stored error "
                f"{float(self.errors[row]):.17g} is not the squared residual {r * r:.17g} of the stored decoder "
                f"(bound {rho:.3g}, Proposition 47.6c)"
            )
        Xl = np.linalg.lstsq(BF, _target(m, mN // m), rcond=self.rcond)[0]
        rn2 = float(np.sum((BF @ Xl - _target(m, mN // m)) ** 2))
        return (
            f"decoder table row {row} (stragglers {S}): stored decoder differs from the re-solved one by "
            f"{float(np.linalg.norm(X[mask] - Xl)):.3g}, stored error {float(self.errors[row]):.17g} vs residual "
            f"{rn2:.17g}"
        )

    # -- serialization ------------------------------------------------------------------------------
    def to_torch(self, dtype: Any = None, device: Any = None) -> dict[str, Any]:
        """The decoder stack and its index as torch tensors, for decoding on the device.

        Parameters
        ----------
        dtype : str or torch.dtype, optional
            Floating dtype of ``decoders`` and ``errors`` (default float64, the table's own).
        device : str or torch.device, optional
            Default torch's default device.

        Returns
        -------
        dict
            ``decoders`` (``(count, n, m)``), ``patterns`` (bool ``(count, n)``: row ``r`` holds the
            decoder of the non-straggler mask ``patterns[r]``, the inverse of :meth:`row`) and
            ``errors`` (``(count,)``); new tensors.

        Raises
        ------
        MissingDependencyError
            torch is not installed (``pip install 'gcsim[torch]'``).

        Examples
        --------
        >>> from gcsim.coding.decoder_table import decoder_table
        >>> from gcsim.coding.schemes import encode
        >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
        >>> t = decoder_table(encode(A, 1, "naive"), s_max=1).to_torch(dtype="float32")
        >>> tuple(t["decoders"].shape), t["patterns"][2].tolist()
        ((4, 3, 1), [True, False, True])
        """
        patterns = (
            np.concatenate([masks for _, masks in self.iter_patterns()]) if len(self) else np.zeros((0, self.n), bool)
        )
        arrays = {"decoders": self.decoders, "patterns": patterns, "errors": self.errors}
        return to_torch_tensors(arrays, dtype=dtype, device=device, what="DecoderTable.to_torch")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array of the table and its encoder (metadata: :meth:`bundle_metadata`).

        Arrays: ``B`` (float64 ``(mN, n)``), ``assignment`` (int8 ``(N, n)``), ``decoders`` (float64
        ``(count, n, m)``), ``errors`` (float64 ``(count,)``) and, for explicit tables, ``patterns``
        (bool ``(count, n)``).
        """
        arrays: dict[str, np.ndarray] = {
            "B": np.asarray(self.scheme.B, dtype=np.float64),
            "assignment": np.asarray(self.scheme.assignment, dtype=np.int8),
            "decoders": self.decoders,
            "errors": self.errors,
        }
        if self._patterns is not None:
            arrays["patterns"] = self._patterns
        return arrays

    def bundle_metadata(self) -> dict[str, Any]:
        """``params`` (a list), ``construction``, and ``kind``, ``table_format_version``, ``n``, ``m``,
        ``N`` (parts), ``count``, ``s_max``, ``explicit``, ``rcond``, ``ordering`` and the scheme's
        method/options."""
        return {
            "params": list(self.params),
            "construction": "explicit" if self.explicit else "all-up-to-s",
            "kind": TABLE_KIND,
            "table_format_version": TABLE_FORMAT_VERSION,
            "n": self.n,
            "m": self.m,
            "N": self.scheme.num_parts,
            "count": len(self),
            "s_max": self.s_max,
            "explicit": self.explicit,
            "rcond": self.rcond,
            "ordering": (
                "explicit list (row = position in 'patterns')"
                if self.explicit
                else "by |S| ascending, then lexicographic S (itertools.combinations); "
                "row(S) = sum_{t<s} C(n,t) + C(n,s) - 1 - sum_i C(n-1-c_i, s-i+1)"
            ),
            "scheme_method": self.scheme.method,
            "scheme_params": to_jsonable({k: v for k, v in self.scheme.options.items() if np.isscalar(v) or v is None}),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, Any], metadata: dict[str, Any]) -> DecoderTable:
        """Rebuild a table from :meth:`to_arrays` output, checking every shape, dtype and invariant.

        The bundle's ``layout`` (none: the dense table) names the table class that rebuilds it: the
        class registered with that ``layout`` (the structured table's ``"structured-rd"``,
        :mod:`gcsim.coding.structured_tables`), which must be ``cls`` or a subclass.

        Raises
        ------
        CatalogueError
            Missing or malformed arrays/metadata, an unknown layout, a count that does not match
            ``s_max``, non-finite values, non-zero decoder weights on stragglers, errors outside
            ``[0, mN]``, duplicate explicit patterns, or an encoder that violates its support.
        """
        if not isinstance(metadata, dict) or metadata.get("kind") != TABLE_KIND:
            raise _bad(
                f"metadata kind is {metadata.get('kind') if isinstance(metadata, dict) else None!r}, "
                f"expected {TABLE_KIND!r}"
            )
        layout = metadata.get("layout")
        target = DecoderTable._layouts.get(layout) if layout is None or isinstance(layout, str) else None
        if target is None:
            known = sorted(k for k in DecoderTable._layouts if k is not None)
            raise _bad(f"unknown layout {layout!r:.40} (known: none for the dense table, {known})")
        if not issubclass(target, cls):
            raise _bad(f"layout {layout!r} is a {target.__name__}, not a {cls.__name__}")
        return target._rebuild(arrays, metadata)

    @classmethod
    def _rebuild(cls, arrays: dict[str, Any], metadata: dict[str, Any]) -> DecoderTable:
        """The dense layout of :meth:`from_arrays` (the kind and the layout already checked)."""
        problem = layout_version_problem(metadata, "table_format_version", TABLE_FORMAT_VERSION)
        if problem:
            raise _bad(problem)
        for name in ("B", "assignment", "decoders", "errors"):
            if name not in arrays:
                raise _bad(f"array {name!r} is missing")
        ints = {}
        for key in ("n", "m", "N", "count"):
            v = metadata.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise _bad(f"metadata {key!r} must be a positive integer, got {v!r}")
            ints[key] = v
        n, m, N, count = ints["n"], ints["m"], ints["N"], ints["count"]
        B, A = np.asarray(arrays["B"]), np.asarray(arrays["assignment"])
        X, E = np.asarray(arrays["decoders"]), np.asarray(arrays["errors"])
        for name, arr, shape, kinds in (
            ("B", B, (m * N, n), "f"),
            ("assignment", A, (N, n), "iu"),
            ("decoders", X, (count, n, m), "f"),
            ("errors", E, (count,), "f"),
        ):
            if arr.shape != shape or arr.dtype.kind not in kinds:
                raise _bad(
                    f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected {shape} "
                    f"({'float' if kinds == 'f' else 'integer'})"
                )
        if not (np.all(np.isfinite(B)) and np.all(np.isfinite(X)) and np.all(np.isfinite(E))):
            raise _bad("B, decoders or errors contain NaN or inf")
        explicit = metadata.get("explicit")
        if not isinstance(explicit, bool):
            raise _bad(f"metadata 'explicit' must be true or false, got {explicit!r}")
        rcond = metadata.get("rcond")
        if rcond is not None:
            try:
                rcond = check_real("rcond", rcond, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
            except InvalidArgumentError as exc:
                raise _bad(str(exc)) from None
        try:
            scheme = Scheme.from_matrix(
                B.astype(np.float64, copy=False),
                A,
                m,
                method=str(metadata.get("scheme_method", "custom")),
                options=metadata.get("scheme_params") if isinstance(metadata.get("scheme_params"), dict) else None,
            )
        except InvalidArgumentError as exc:
            raise _bad(f"stored encoder is invalid: {exc}") from None
        if explicit:
            P = np.asarray(arrays.get("patterns"))
            if "patterns" not in arrays or P.shape != (count, n) or P.dtype != np.bool_:
                raise _bad(
                    f"explicit table needs bool array 'patterns' of shape {(count, n)}, got "
                    f"{P.shape if 'patterns' in arrays else 'none'}"
                )
            keys = {np.packbits(mk).tobytes() for mk in P}
            if len(keys) != count:
                raise _bad("explicit patterns contain duplicates")
            s_max = None
        else:
            s_max = _stored_s_max(metadata, n, count, _bad)
            P = None
        _check_stored_errors(E, m * N, _bad)
        table = cls(
            scheme,
            X.astype(np.float64, copy=True),
            E.astype(np.float64, copy=True),
            s_max=s_max,
            patterns=None if P is None else P.copy(),
            rcond=rcond,
        )
        for a, masks in table.iter_patterns():
            if np.any(X[a : a + masks.shape[0]][~masks]):
                raise _bad(f"a decoder in rows {a}..{a + masks.shape[0] - 1} has non-zero weights on stragglers")
        declared = metadata.get("params")
        if declared is not None and list(declared) != list(table.params):
            raise _bad(f"params {declared!r} do not match the arrays' {list(table.params)!r}")
        return table

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the table and its encoder as the gcsim bundle ``<path>.npz`` + ``<path>.json``.

        The write is atomic as a pair and checksummed (:func:`gcsim.io.bundle.save_bundle`).
        Returns the path of the JSON manifest.
        """
        overwrite = check_bool("overwrite", overwrite)
        return save_bundle(path, self.to_arrays(), self.bundle_metadata(), overwrite=overwrite)


# the dense table has no "layout" in its bundle
DecoderTable._layouts[None] = DecoderTable


def _dense_decoder_table(
    scheme: Scheme, s_max: int | None, *, patterns: Any, stragglers: Any, rcond: float | None
) -> DecoderTable:
    """The dense table of :func:`gcsim.coding.decoder_table.decoder_table` (its checks, then batched SVDs)."""
    B = getattr(scheme, "B", None)
    if not isinstance(scheme, Scheme) or B is None:
        raise InvalidArgumentError(
            "scheme", "must be a Scheme (see gcsim.coding.encode) or a StructuredRD (gcsim.coding.structured)"
        )
    given = [x is not None for x in (s_max, patterns, stragglers)]
    if sum(given) != 1:
        raise InvalidArgumentError("s_max", "give exactly one of s_max, patterns or stragglers")
    if rcond is not None:
        rcond = check_real("rcond", rcond, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    n, m = scheme.n, scheme.m
    mN = B.shape[0]
    if not np.all(np.isfinite(B)):
        raise InvalidArgumentError("scheme.B", "contains NaN or inf")
    if s_max is not None:
        s_max = check_int("s_max", s_max, minimum=0, maximum=n)
        count = pattern_count(n, s_max)
        what = f"decoder-table patterns (sum over t <= {s_max} of C({n}, t))"
        check_count("s_max", count, what, hint="choose a smaller s_max or list the patterns (patterns=...)")
        check_dense_size("s_max", count, n * m, f"the decoder table ({count:,} patterns x n*m = {n * m} entries)")
        decoders = np.zeros((count, n, m))
        errors = np.empty(count)
        offset = 0
        for s in range(s_max + 1):
            total, f = math.comb(n, s), n - s
            step = _chunk_rows(mN, f, m)
            for a in range(0, total, step):
                S = straggler_sets(n, s, a, a + step)
                F = _complement(S, n)
                XF, err = _solve_group(B, m, F, rcond)
                r = offset + a + np.arange(S.shape[0])
                decoders[r[:, None], F] = XF
                errors[r] = err
            offset += total
        return DecoderTable(scheme, decoders, errors, s_max=s_max, rcond=rcond)
    masks, name = _explicit_masks(n, patterns, stragglers)
    count = masks.shape[0]
    check_dense_size(name, count, n * m, f"the decoder table ({count:,} patterns x n*m = {n * m} entries)")
    decoders = np.zeros((count, n, m))
    errors = np.empty(count)
    sizes = masks.sum(axis=1)
    for f in np.unique(sizes):
        idx = np.flatnonzero(sizes == f)
        f = int(f)
        step = _chunk_rows(mN, f, m)
        for a in range(0, idx.size, step):
            rows = idx[a : a + step]
            F = np.nonzero(masks[rows])[1].reshape(rows.size, f)
            XF, err = _solve_group(B, m, F, rcond)
            decoders[rows[:, None], F] = XF
            errors[rows] = err
    return DecoderTable(scheme, decoders, errors, patterns=masks, rcond=rcond)
