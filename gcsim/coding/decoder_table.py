"""Decoder tables for deployment: the optimal decoder of every straggler pattern, precomputed.

A master that must decode within microseconds cannot solve a least-squares problem per
iteration.  A :class:`DecoderTable` stores, for every straggler set ``S`` with ``|S| <= s_max``
(or for an explicit list of patterns), the minimum-norm optimal decoder

.. math::  X^*(F) = B_F^{+} T \\in \\mathbb R^{n \\times m}\\quad(\\text{zero rows off } F = [n] \\setminus S),

and an index from a pattern to its row (Tandon et al. ship the same thing for their exact codes as
``getA`` + ``calculate_indexA``).  The table travels with its encoder: :meth:`DecoderTable.export`
writes ``B``, the assignment and the decoders as one checksummed gcsim bundle
(:func:`gcsim.io.bundle.save_bundle`), and :func:`load_decoder_table` reads it back bit-exactly.

Row order (documented, stable)
------------------------------
Patterns are ordered by the number of stragglers ``s = 0, 1, ..., s_max``, and within one ``s`` in
the lexicographic order of the sorted straggler set ``S = (c_1 < ... < c_s)`` -- the order of
``itertools.combinations(range(n), s)`` and of :func:`gcsim.coding.stragglers.straggler_sets`.
The row of ``S`` is

.. math::  \\mathrm{row}(S) = \\sum_{t < s} \\binom n t + \\binom n s - 1
           - \\sum_{i=1}^{s} \\binom{n-1-c_i}{s-i+1},

(combinatorial number system; proof in ``docs/theory/47_delays.md`` §6), ``O(s)`` additions of
precomputed binomials per lookup.  An explicit list of patterns keeps the order given and is
indexed by a hash of the mask.

Sizes are refused up front: more than :data:`gcsim.limits.MAX_PATTERNS` patterns, or more than
:data:`gcsim.limits.MAX_DENSE_ENTRIES` stored decoder entries (``patterns x n x m``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import _html, limits
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
from ..io.bundle import DEFAULT_MAX_BYTES, load_bundle, save_bundle
from ..io.manifest import to_jsonable
from .encoders import get_encoder, is_registered
from .schemes import Scheme
from .stragglers import straggler_sets
from .structured import StructuredRD, _check_same_diagonals, _rederived_diagonals, check_pair_gram

__all__ = [
    "STRUCTURED_LAYOUT",
    "STRUCTURED_FORMAT_VERSION",
    "StructuredDecoderTable",
    "structured_decoder_table",
    "gains",
    "TABLE_KIND",
    "TABLE_FORMAT_VERSION",
    "DecoderTable",
    "DecoderTableParams",
    "decoder_table",
    "load_decoder_table",
    "SampledVerificationWarning",
    "pattern_count",
    "pattern_row",
    "pattern_of_row",
    "DecoderLookup",
    "FALLBACKS",
    "certified_decoder",
]

#: ``metadata["kind"]`` of an exported table.
TABLE_KIND = "decoder_table"
#: Version of the table layout inside the bundle (see :meth:`DecoderTable.bundle_metadata`).
TABLE_FORMAT_VERSION = 1

_U = float(np.finfo(np.float64).eps) / 2.0
# working-set budget of one batched chunk of SVDs (bytes)
_CHUNK_BYTES = 48 * 2**20
# constant of the O(.) in the backward-error bounds used by verify() (as in the tests)
_SAFETY = 10.0


# ----------------------------------------------------------------------------------------------
# the combinatorial number system
# ----------------------------------------------------------------------------------------------


def pattern_count(n: int, s_max: int) -> int:
    """Number of straggler sets with at most ``s_max`` of ``n`` workers: ``Σ_{t<=s_max} C(n, t)``.

    Examples
    --------
    >>> pattern_count(5, 2)       # 1 + 5 + 10
    16
    """
    n = check_int("n", n, minimum=1)
    s_max = check_int("s_max", s_max, minimum=0, maximum=n)
    return sum(math.comb(n, t) for t in range(s_max + 1))


def pattern_row(n: int, stragglers: Any) -> int:
    """Row of the straggler set ``stragglers`` in the order of the module docstring (no table needed).

    Examples
    --------
    >>> [pattern_row(4, S) for S in ([], [0], [3], [0, 1], [0, 3], [2, 3])]
    [0, 1, 4, 5, 7, 10]
    """
    n = check_int("n", n, minimum=1)
    S = _check_set("stragglers", stragglers, n)
    s = len(S)
    base = sum(math.comb(n, t) for t in range(s))
    return base + math.comb(n, s) - 1 - sum(math.comb(n - 1 - c, s - i) for i, c in enumerate(S))


def pattern_of_row(n: int, row: int) -> np.ndarray:
    """The sorted straggler set of ``row`` (inverse of :func:`pattern_row`).

    Examples
    --------
    >>> pattern_of_row(4, 7).tolist()
    [0, 3]
    """
    n = check_int("n", n, minimum=1)
    row = check_int("row", row, minimum=0, maximum=2**n - 1)
    s = 0
    while row >= math.comb(n, s):
        row -= math.comb(n, s)
        s += 1
    colex = math.comb(n, s) - 1 - row
    out = []
    hi = n - 1
    for j in range(s, 0, -1):  # greedy: the largest a with C(a, j) <= colex
        a = hi
        while math.comb(a, j) > colex:
            a -= 1
        colex -= math.comb(a, j)
        out.append(n - 1 - a)
        hi = a - 1
    return np.array(out, dtype=np.int64)


def _check_set(name: str, stragglers: Any, n: int) -> list[int]:
    arr = np.asarray(stragglers)
    if arr.size == 0:
        return []
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgumentError(name, f"must be a 1-D list of worker indices, got {stragglers!r}")
    S = sorted(int(x) for x in arr)
    if S[0] < 0 or S[-1] >= n:
        raise InvalidArgumentError(name, f"worker indices must lie in [0, {n - 1}], got {S}")
    if len(set(S)) != len(S):
        raise InvalidArgumentError(name, f"repeats a worker: {S}")
    return S


# ----------------------------------------------------------------------------------------------
# computing decoders
# ----------------------------------------------------------------------------------------------


def _target(m: int, N: int) -> np.ndarray:
    return np.kron(np.eye(m), np.ones((N, 1)))


def _solve_group(B: np.ndarray, m: int, F: np.ndarray, rcond: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-norm decoders ``B_F^+ T`` (count, f, m) and errors ``‖B_F X - T‖²`` of one ``|F| = f`` group.

    Batched SVD ``B_F = U Σ Vᵀ``; singular values ``<= rcond σ_max`` count as zero (default
    ``rcond = max(mN, f) eps``, the rule of ``numpy.linalg.lstsq(rcond=None)``).
    """
    mN, n = B.shape
    N = mN // m
    count, f = F.shape
    if f == 0:
        return np.zeros((count, 0, m)), np.full(count, float(mN))
    BF = np.moveaxis(B.T[F], 1, 2)  # (count, mN, f)
    U, sv, Vt = np.linalg.svd(BF, full_matrices=False)  # U (count, mN, r), Vt (count, r, f)
    tol = (max(mN, f) * 2.0 * _U if rcond is None else rcond) * sv[:, :1]
    keep = sv > tol
    inv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
    UT = U.reshape(count, m, N, -1).sum(axis=2)  # (count, m, r): (Uᵀ T)ᵀ, block sums of U
    X = np.einsum("crf,cr,clr->cfl", Vt, inv, UT)  # V Σ⁺ Uᵀ T
    R = BF @ X
    R -= _target(m, N)[None]
    return X, np.einsum("cil,cil->c", R, R)


def _rank_free_bound(BF: np.ndarray, XF: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(r, ρ)`` of the rank-free certificate (Proposition 47.6c) for a stack of rows.

    ``R̂ = fl(B_F X − T)`` deviates from the exact residual by at most
    ``Δ = γ_{f+1} (|B_F||X| + |T|)`` entrywise, and so does the builder's; with ``r = ‖R̂‖_F`` and
    ``d = ‖Δ‖_F``, an error computed (on any machine) from the stored decoder lies within
    ``ρ = 1.01 (4 d (r + d) + 2 γ_{mNm} (r + 2d)²)`` of ``r²``, and so does the exact ``‖B_F X − T‖_F²``.
    """
    mN, f = BF.shape[1], BF.shape[2]
    T = _target(m, mN // m)
    R = BF @ XF - T[None]
    D = (np.abs(BF) @ np.abs(XF) + np.abs(T)[None]) * _gamma(f + 1)
    r = np.sqrt(np.einsum("cil,cil->c", R, R))
    d = np.sqrt(np.einsum("cil,cil->c", D, D))
    return r, 1.01 * (4 * d * (r + d) + 2 * _gamma(mN * m) * (r + 2 * d) ** 2)


def _rank_free_ratio(BF: np.ndarray, XF: np.ndarray, E: np.ndarray, m: int) -> np.ndarray:
    """``|E − r²| / ρ`` of :func:`_rank_free_bound` per row (> 1 fails)."""
    r, rho = _rank_free_bound(BF, XF, m)
    dev = np.abs(E - r * r)
    return np.where(rho > 0, dev / np.where(rho > 0, rho, 1.0), np.where(dev == 0, 0.0, np.inf))


def _gamma(t: int) -> float:
    """Higham's ``γ_t = t u / (1 − t u)``."""
    tu = t * _U
    return tu / (1.0 - tu) if tu < 1 else float("inf")


def _chunk_rows(mN: int, f: int, m: int) -> int:
    words = 3 * mN * f + 2 * f * f + 3 * mN * m + 4 * f
    return max(1, int(_CHUNK_BYTES // (8 * words + 64)))


def _masks_from_sets(S: np.ndarray, n: int) -> np.ndarray:
    masks = np.ones((S.shape[0], n), dtype=bool)
    if S.shape[1]:
        np.put_along_axis(masks, S, False, axis=1)
    return masks


def _complement(S: np.ndarray, n: int) -> np.ndarray:
    masks = _masks_from_sets(S, n)
    return np.nonzero(masks)[1].reshape(S.shape[0], n - S.shape[1])


def _explicit_masks(n: int, patterns: Any, stragglers: Any) -> tuple[np.ndarray, str]:
    """The ``(count, n)`` masks of an explicit table and the argument's name (shared by both routes).

    ``patterns`` (masks) or, when it is None, ``stragglers`` (sets of worker indices); refused when
    empty, over ``MAX_PATTERNS`` patterns (masks of a straggler list: over ``MAX_DENSE_ENTRIES``) or
    with a repeated pattern (both indices and the first 20 stragglers named).
    """
    if patterns is not None:
        masks = check_mask("patterns", patterns, n)
        masks = (masks[None] if masks.ndim == 1 else masks).copy()
        name = "patterns"
    else:
        if isinstance(stragglers, (str, bytes)) or not hasattr(stragglers, "__iter__"):
            raise InvalidArgumentError("stragglers", "must be a list of straggler sets (lists of worker indices)")
        sets = list(stragglers)
        check_count("stragglers", len(sets), "decoder-table patterns")
        check_dense_size("stragglers", len(sets), n, f"{len(sets):,} straggler masks")
        masks = np.ones((len(sets), n), dtype=bool)
        for i, S in enumerate(sets):
            masks[i, _check_set(f"stragglers[{i}]", S, n)] = False
        name = "stragglers"
    count = masks.shape[0]
    if count == 0:
        raise InvalidArgumentError(name, "must list at least one pattern")
    check_count(name, count, "decoder-table patterns")
    seen: dict[bytes, int] = {}
    for i, mk in enumerate(masks):
        key = np.packbits(mk).tobytes()
        if key in seen:
            S = np.flatnonzero(~mk).tolist()
            more = ", ..." if len(S) > 20 else ""
            raise InvalidArgumentError(
                name, f"pattern {i} repeats pattern {seen[key]} (stragglers {str(S[:20])[:-1]}{more}])"
            )
        seen[key] = i
    return masks, name


def _stored_s_max(metadata: dict[str, Any], n: int, count: int, bad: Any) -> int:
    """``metadata["s_max"]`` of a stored all-up-to-s table, checked against ``n`` and the row count."""
    s_max = metadata.get("s_max")
    if isinstance(s_max, bool) or not isinstance(s_max, int) or not 0 <= s_max <= n:
        raise bad(f"metadata 's_max' must be an integer in [0, {n}], got {s_max!r}")
    if pattern_count(n, s_max) != count:
        raise bad(f"count {count} differs from sum_(t<={s_max}) C({n}, t) = {pattern_count(n, s_max)}")
    return s_max


def _check_stored_errors(E: np.ndarray, mN: int, bad: Any) -> None:
    """Stored errors lie in ``[0, mN]`` (up to the rounding of a sum of ``mN`` terms)."""
    if np.any(E < 0) or np.any(E > mN * (1 + 4 * mN * _U)):
        raise bad(f"errors must lie in [0, mN = {mN}]")


# ----------------------------------------------------------------------------------------------
# the certified fallback: one pattern's optimal decoder, solved now
# ----------------------------------------------------------------------------------------------

#: Values of ``fallback`` of :meth:`DecoderTable.lookup`.
FALLBACKS = ("optimal", "raise")


class DecoderLookup(NamedTuple):
    """What :meth:`DecoderTable.lookup` (or :func:`certified_decoder`) answers for one pattern.

    Attributes
    ----------
    decoder : numpy.ndarray, shape (n, m)
        The minimum-norm optimal decoder ``X*(F) = B_F⁺ T`` (rows off ``F`` exactly zero).
    error : float
        Its raw error ``‖B_F X − T‖_F²`` (normalized: divide by ``mN``).
    source : str
        ``"table"`` (a stored row) or ``"fallback"`` (solved now, certified).
    row : int or None
        The table row (None for a fallback).
    certificate : dict or None
        The fallback's certificate (see :func:`certified_decoder`); None for a stored row (a loaded
        table was certified row by row when it was loaded: :func:`load_decoder_table`).
    """

    decoder: np.ndarray
    error: float
    source: str
    row: int | None = None
    certificate: dict | None = None


def _certify_solution(BF: np.ndarray, XF: np.ndarray, E: float, m: int, rcond: float | None) -> dict[str, float]:
    """A-posteriori certificate of one least-squares decoder ``X_F`` of ``B_F`` (no reference solve).

    Backward stability of the SVD solve (and the rank cutoff, which drops singular values below
    ``cut = rcond σ₁``) make ``X_F`` the exact minimizer for some ``B̃ = B_F + ΔB`` with
    ``‖ΔB‖₂ <= η σ₁``, ``η = c max(mN, f) u + cut/σ₁`` (``c = 10``).  Then
    ``B̃ᵀ(B̃ X − T) = 0`` gives, with ``R = B_F X − T``,

    .. math:: \\|B_F^\\top R\\|_F \\le \\eta\\sigma_1 (2\\sigma_1\\|X\\|_F + \\|R\\|_F) + O(u^2),

    and the computed ``N̂ = fl(B_Fᵀ R̂)`` must satisfy it plus the rounding of forming ``R̂`` and
    ``N̂`` (``d = ‖γ_{f+1}(|B_F||X| + |T|)‖_F``, ``γ_{mN} ‖|B_F|ᵀ|R̂|‖_F``): the ratio of the two
    (``normal_equations_ratio``) must be at most 1.  Because ``R − R* = B_F(X − X*)`` lies in the
    column space of ``B_F`` and ``R*`` is orthogonal to it,
    ``‖R‖² − err(F) = ‖P_F R‖² <= (‖B_Fᵀ R‖ / σ_r)²`` (``σ_r`` the smallest kept singular
    value): ``optimality_gap`` bounds how far the decoder's error lies above the optimum.  The
    reported error is the squared residual of the returned decoder within ``residual_bound``
    (the rank-free certificate, Proposition 47.6c).
    """
    mN, f = BF.shape
    T = _target(m, mN // m)
    R = BF @ XF - T
    sv = np.linalg.svd(BF, compute_uv=False) if f else np.zeros(0)
    s1 = float(sv[0]) if sv.size else 0.0
    cut = (max(mN, f) * 2.0 * _U if rcond is None else rcond) * s1
    kept = sv[sv > cut]
    eta = _SAFETY * max(mN, f) * _U + (cut / s1 if s1 > 0 else 0.0)
    rn, xn = float(np.linalg.norm(R)), float(np.linalg.norm(XF))
    d = float(np.linalg.norm(_gamma(f + 1) * (np.abs(BF) @ np.abs(XF) + np.abs(T))))
    ne = float(np.linalg.norm(BF.T @ R))
    bound = eta * s1 * (2 * s1 * xn + rn + d) + s1 * d + _gamma(mN) * float(np.linalg.norm(np.abs(BF).T @ np.abs(R)))
    ratio = ne / bound if bound > 0 else (0.0 if ne == 0 else math.inf)
    r, rho = _rank_free_bound(BF[None], XF[None], m)
    err_ratio = (
        abs(E - float(r[0]) ** 2) / float(rho[0]) if rho[0] > 0 else (0.0 if E == float(r[0]) ** 2 else math.inf)
    )
    low = float(kept[-1]) - eta * s1 if kept.size else 0.0
    gap = ((ne + bound) / low) ** 2 if low > 0 else (0.0 if not kept.size else math.inf)
    return {
        "normal_equations_ratio": ratio,
        "error_ratio": err_ratio,
        "residual_bound": float(rho[0]),
        "optimality_gap": float(gap),
    }


def certified_decoder(scheme: Scheme, mask: Any, *, rcond: float | None = None) -> DecoderLookup:
    """The minimum-norm optimal decoder of one pattern, solved now and certified (the tables' fallback).

    ``X = B_F⁺ T`` by an SVD of ``B_F`` (singular values at or below ``rcond σ₁`` count as zero;
    default ``rcond = max(mN, f) eps``, the rule of the tables and of ``numpy.linalg.lstsq``), and
    its error ``E = ‖B_F X − T‖_F²``.  Certified a posteriori, without a second solve:

    * the normal equations: ``‖B_Fᵀ(B_F X − T)‖_F`` within the bound a backward-stable solve
      leaves (``X`` is the exact least-squares decoder of a ``B_F`` perturbed by at most
      ``η ‖B_F‖₂``, ``η = 10 max(mN, f) u`` plus the cutoff);
    * the error: ``E`` is the squared residual of the returned ``X`` within a rigorous rounding
      bound (Proposition 47.6c), so it is the error the decoder really has;
    * the gap to the optimum: ``E − err(F) <= (‖B_Fᵀ R‖ / σ_r)²`` (plus the rounding above),
      ``σ_r`` the smallest kept singular value (``certificate["optimality_gap"]``).

    Parameters
    ----------
    scheme : Scheme
        A dense encoder (``scheme.B``).
    mask : array_like of bool, shape (n,)
        True = the worker's transmission arrived.
    rcond : float, optional
        Relative singular-value cutoff.

    Returns
    -------
    DecoderLookup
        ``source="fallback"``, ``row=None`` and the certificate's numbers.

    Raises
    ------
    VerificationError
        The certificate fails (a ratio above 1): the message names the stragglers.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> got = certified_decoder(encode(A, 1, "naive"), [True, False, True])
    >>> np.round(got.decoder.ravel(), 12).tolist(), got.source, round(got.error, 12)
    ([0.666666666667, 0.0, 0.666666666667], 'fallback', 0.333333333333)
    >>> got.certificate["normal_equations_ratio"] <= 1
    True
    """
    B = getattr(scheme, "B", None)
    if not isinstance(scheme, Scheme) or B is None:
        raise InvalidArgumentError("scheme", "must be a dense Scheme (see gcsim.coding.encode)")
    n, m = scheme.n, scheme.m
    mk = check_mask("mask", mask, n)
    if mk.ndim != 1:
        raise InvalidArgumentError("mask", f"must be a single mask of shape ({n},)")
    if rcond is not None:
        rcond = check_real("rcond", rcond, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    F = np.flatnonzero(mk)
    XF, err = _solve_group(np.asarray(B, dtype=np.float64), m, F[None], rcond)
    X = np.zeros((n, m))
    X[F] = XF[0]
    E = float(err[0])
    if F.size == 0:
        cert = {"normal_equations_ratio": 0.0, "error_ratio": 0.0, "residual_bound": 0.0, "optimality_gap": 0.0}
    else:
        cert = _certify_solution(np.asarray(B, dtype=np.float64)[:, F], XF[0], E, m, rcond)
    if not (cert["normal_equations_ratio"] <= 1.0 and cert["error_ratio"] <= 1.0):
        S = np.flatnonzero(~mk).tolist()
        raise VerificationError(
            f"fallback decoder of stragglers {S[:20]}{'...' if len(S) > 20 else ''} fails its certificate: "
            f"normal equations at {cert['normal_equations_ratio']:.3g} of their bound, error at "
            f"{cert['error_ratio']:.3g} of its bound"
        )
    X.setflags(write=False)
    return DecoderLookup(X, E, "fallback", None, cert)


# ----------------------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------------------


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


class DecoderTable:
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
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> table = decoder_table(encode(A, 1, "naive"), s_max=1)
    >>> len(table), table.row([True, False, True])
    (4, 2)
    >>> np.round(table.decoder([True, False, True]).ravel(), 12).tolist()   # x_0 = x_2 = 2/3
    [0.666666666667, 0.0, 0.666666666667]
    """

    kind: ClassVar[str] = "decoder_table"

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

    def _setup_index(self, n: int, s_max: int | None, patterns: np.ndarray | None) -> None:
        """The pattern -> row index: a hash of each explicit mask, or the binomials of ``s_max``."""
        self._patterns: np.ndarray | None
        self._index: dict[bytes, int] | None
        if patterns is not None:
            self._patterns = patterns
            self._patterns.setflags(write=False)
            self._index = {np.packbits(mk).tobytes(): r for r, mk in enumerate(patterns)}
        else:
            assert s_max is not None  # decoder_table() passes s_max or patterns
            self._patterns = None
            self._index = None
            # C(x, j) for x < n, j <= s_max (all <= the pattern count, so int64 is exact)
            self._binom = np.array([[math.comb(x, j) for j in range(s_max + 2)] for x in range(n + 1)], dtype=np.int64)
            self._offsets = np.cumsum(np.array([0] + [math.comb(n, t) for t in range(s_max + 1)], dtype=np.int64))
            self._binom.setflags(write=False)
            self._offsets.setflags(write=False)

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

    @property
    def explicit(self) -> bool:
        """True when the table holds an explicit list of patterns."""
        return self._patterns is not None

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

    # -- index --------------------------------------------------------------------------------------
    def row(self, mask: Any) -> int:
        """Row of the non-straggler mask (True = arrived).

        ``O(n)`` to read the mask and ``O(s)`` for the index (explicit tables: a hash of the mask).

        Raises
        ------
        InvalidArgumentError
            A pattern the table does not cover (more than ``s_max`` stragglers, or not in the list).
        """
        mk = check_mask("mask", mask, self.n)
        if mk.ndim != 1:
            raise InvalidArgumentError("mask", "must be a single mask of shape (n,); use rows() for a batch")
        if self._index is not None:
            row = self._index.get(np.packbits(mk).tobytes())
            if row is None:
                raise InvalidArgumentError(
                    "mask", f"straggler set {np.flatnonzero(~mk).tolist()} is not in the table's {len(self)} patterns"
                )
            return row
        return self.row_of_stragglers(np.flatnonzero(~mk))

    def row_of_stragglers(self, stragglers: Any) -> int:
        """Row of a straggler set given as worker indices (``O(s log s)`` to sort, ``O(s)`` to index)."""
        S = _check_set("stragglers", stragglers, self.n)
        if self._index is not None:
            mk = np.ones(self.n, dtype=bool)
            mk[S] = False
            return self.row(mk)
        s = len(S)
        assert self.s_max is not None  # explicit tables were answered above
        if s > self.s_max:
            raise InvalidArgumentError("mask", f"has {s} stragglers; the table covers at most s_max = {self.s_max}")
        b, n = self._binom, self.n
        colex = 0
        for i, c in enumerate(S):
            colex += int(b[n - 1 - c, s - i])
        return int(self._offsets[s]) + math.comb(n, s) - 1 - colex

    def rows(self, masks: Any) -> np.ndarray:
        """Rows of a ``(count, n)`` batch of masks (vectorized per number of stragglers)."""
        mk = check_mask("masks", masks, self.n)
        mk = mk[None] if mk.ndim == 1 else mk
        out = np.empty(mk.shape[0], dtype=np.int64)
        if self._index is not None:
            for i, row in enumerate(mk):
                out[i] = self.row(row)
            return out
        n = self.n
        sizes = n - mk.sum(axis=1)
        if mk.shape[0] and sizes.max() > self.s_max:
            bad = int(np.argmax(sizes > self.s_max))
            raise InvalidArgumentError(
                "masks", f"row {bad} has {int(sizes[bad])} stragglers; the table covers at most s_max = {self.s_max}"
            )
        for s in np.unique(sizes):
            idx = np.flatnonzero(sizes == s)
            s = int(s)
            # stable argsort puts the stragglers (False) first, in index order
            S = np.argsort(mk[idx], axis=1, kind="stable")[:, :s]
            colex = self._binom[n - 1 - S, s - np.arange(s)[None, :]].sum(axis=1) if s else 0
            out[idx] = self._offsets[s] + math.comb(n, s) - 1 - colex
        return out

    def pattern(self, row: int) -> np.ndarray:
        """Non-straggler mask of ``row`` (inverse of :meth:`row`)."""
        row = check_int("row", row, minimum=0, maximum=len(self) - 1)
        if self._patterns is not None:
            return self._patterns[row].copy()
        mk = np.ones(self.n, dtype=bool)
        mk[pattern_of_row(self.n, row)] = False
        return mk

    def iter_patterns(self, chunk: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, masks)`` chunks of every pattern in row order.

        ``chunk`` masks at a time (default ``min(65536, MAX_DENSE_ENTRIES // n)``: a chunk of masks
        stays within the dense limit at any ``n``, e.g. 1,764 masks at ``n = 9,507``).
        """
        chunk = max(1, min(65536, limits.MAX_DENSE_ENTRIES // max(self.n, 1))) if chunk is None else chunk
        chunk = check_int("chunk", chunk, minimum=1)
        if self._patterns is not None:
            for a in range(0, len(self), chunk):
                yield a, self._patterns[a : a + chunk].copy()
            return
        assert self.s_max is not None  # a table without explicit patterns has s_max
        for s in range(self.s_max + 1):
            total = math.comb(self.n, s)
            for a in range(0, total, chunk):
                S = straggler_sets(self.n, s, a, a + chunk)
                yield int(self._offsets[s]) + a, _masks_from_sets(S, self.n)

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
        seed = check_int("seed", seed, minimum=0)
        count = len(self)
        if sample is None:
            chunks: Iterator[tuple[np.ndarray, np.ndarray]] = (
                (a + np.arange(masks.shape[0]), masks) for a, masks in self.iter_patterns()
            )
            total = count
        else:
            sample = check_int("sample", sample, minimum=1)
            rng = np.random.default_rng(seed)
            k = min(sample, count)
            rows = np.unique(np.concatenate([[0, count - 1], rng.choice(count, size=k, replace=False)]))
            chunks = iter([(rows, np.array([self.pattern(int(r)) for r in rows]).reshape(rows.size, self.n))])
            total = int(rows.size)
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

        Raises
        ------
        CatalogueError
            Missing or malformed arrays/metadata, a count that does not match ``s_max``, non-finite
            values, non-zero decoder weights on stragglers, errors outside ``[0, mN]``, duplicate
            explicit patterns, or an encoder that violates its support.
        """

        def bad(msg: str) -> CatalogueError:
            return CatalogueError(f"decoder table: {msg}")

        if not isinstance(metadata, dict) or metadata.get("kind") != TABLE_KIND:
            raise bad(
                f"metadata kind is {metadata.get('kind') if isinstance(metadata, dict) else None!r}, "
                f"expected {TABLE_KIND!r}"
            )
        if "layout" in metadata:  # a structured table (theory §47.7): the catalogue loader lands here too
            if metadata["layout"] != STRUCTURED_LAYOUT:
                raise bad(f"unknown layout {metadata['layout']!r}")
            return StructuredDecoderTable.from_arrays(arrays, metadata)
        problem = layout_version_problem(metadata, "table_format_version", TABLE_FORMAT_VERSION)
        if problem:
            raise bad(problem)
        for name in ("B", "assignment", "decoders", "errors"):
            if name not in arrays:
                raise bad(f"array {name!r} is missing")
        ints = {}
        for key in ("n", "m", "N", "count"):
            v = metadata.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise bad(f"metadata {key!r} must be a positive integer, got {v!r}")
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
                raise bad(
                    f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected {shape} "
                    f"({'float' if kinds == 'f' else 'integer'})"
                )
        if not (np.all(np.isfinite(B)) and np.all(np.isfinite(X)) and np.all(np.isfinite(E))):
            raise bad("B, decoders or errors contain NaN or inf")
        explicit = metadata.get("explicit")
        if not isinstance(explicit, bool):
            raise bad(f"metadata 'explicit' must be true or false, got {explicit!r}")
        rcond = metadata.get("rcond")
        if rcond is not None:
            try:
                rcond = check_real("rcond", rcond, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
            except InvalidArgumentError as exc:
                raise bad(str(exc)) from None
        try:
            scheme = Scheme.from_matrix(
                B.astype(np.float64, copy=False),
                A,
                m,
                method=str(metadata.get("scheme_method", "custom")),
                options=metadata.get("scheme_params") if isinstance(metadata.get("scheme_params"), dict) else None,
            )
        except InvalidArgumentError as exc:
            raise bad(f"stored encoder is invalid: {exc}") from None
        if explicit:
            P = np.asarray(arrays.get("patterns"))
            if "patterns" not in arrays or P.shape != (count, n) or P.dtype != np.bool_:
                raise bad(
                    f"explicit table needs bool array 'patterns' of shape {(count, n)}, got "
                    f"{P.shape if 'patterns' in arrays else 'none'}"
                )
            keys = {np.packbits(mk).tobytes() for mk in P}
            if len(keys) != count:
                raise bad("explicit patterns contain duplicates")
            s_max = None
        else:
            s_max = _stored_s_max(metadata, n, count, bad)
            P = None
        _check_stored_errors(E, m * N, bad)
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
                raise bad(f"a decoder in rows {a}..{a + masks.shape[0] - 1} has non-zero weights on stragglers")
        declared = metadata.get("params")
        if declared is not None and list(declared) != list(table.params):
            raise bad(f"params {declared!r} do not match the arrays' {list(table.params)!r}")
        return table

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the table and its encoder as the gcsim bundle ``<path>.npz`` + ``<path>.json``.

        The write is atomic as a pair and checksummed (:func:`gcsim.io.bundle.save_bundle`).
        Returns the path of the JSON manifest.
        """
        overwrite = check_bool("overwrite", overwrite)
        return save_bundle(path, self.to_arrays(), self.bundle_metadata(), overwrite=overwrite)


def decoder_table(
    scheme: Scheme,
    s_max: int | None = None,
    *,
    patterns: Any = None,
    stragglers: Any = None,
    rcond: float | None = None,
) -> DecoderTable:
    """Precompute the minimum-norm optimal decoder of every pattern with ``|S| <= s_max`` (or a given list).

    Parameters
    ----------
    scheme : Scheme
        The encoder (see :func:`gcsim.coding.encode`).
    s_max : int, optional
        Every straggler set with at most ``s_max`` stragglers, in the order of the module docstring.
    patterns : array_like of bool, shape (count, n), optional
        Explicit non-straggler masks (True = arrived), kept in the order given.
    stragglers : sequence of sequences of int, optional
        Explicit straggler sets (worker indices), kept in the order given.
    rcond : float, optional
        Relative singular-value cutoff of ``B_F`` (default ``max(mN, |F|) eps``, as
        ``numpy.linalg.lstsq(rcond=None)``).

    Raises
    ------
    InvalidArgumentError
        Not exactly one of ``s_max``/``patterns``/``stragglers``; a table of more than
        :data:`gcsim.limits.MAX_PATTERNS` patterns or :data:`gcsim.limits.MAX_DENSE_ENTRIES` stored
        entries (refused before anything is computed, naming the count and the limit); duplicate patterns.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.ones((4, 4), dtype=int), 2, "exact-gaussian", s=2, seed=0)
    >>> t = decoder_table(sch, s_max=2)         # 1 + 4 + 6 patterns, exact for |S| <= 2
    >>> len(t), t.decoders.shape, round(float(t.errors.max()), 12)
    (11, (11, 4, 2), 0.0)
    >>> decoder_table(sch, s_max=2, stragglers=[[0]])
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: s_max: give exactly one of s_max, patterns or stragglers
    """
    if isinstance(scheme, StructuredRD):  # no dense B: the gains of theory §47.7
        if rcond is not None:
            raise InvalidArgumentError("rcond", "a structured RD table has no rank cutoff (theory §42.1, Remark (i))")
        return structured_decoder_table(scheme, s_max, patterns=patterns, stragglers=stragglers)
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


class SampledVerificationWarning(UserWarning):
    """A decoder table was loaded with ``verify="sample"``: only some rows were re-solved.

    The message says how many rows were checked and that the others were not.
    """


def load_decoder_table(
    path: str | Path, *, verify: bool | str = True, sample: int | None = None, max_bytes: int | None = None
) -> DecoderTable:
    """Load a table written by :meth:`DecoderTable.export`: checksum, shapes, invariants and every decoder checked.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    verify : True, "all", "sample" or False
        ``True`` or ``"all"`` (default): re-solve **every** pattern and compare it with its stored
        decoder and error (:meth:`DecoderTable.verification_report`: batched SVDs, about the cost
        of building the table).  ``"sample"`` (or ``sample=k``): an explicit opt-in to re-solve only
        ``k`` random rows (default 256) besides the first and the last; the decoders and errors of
        the other rows are not checked (a table whose other rows were changed and re-checksummed
        loads), and a :class:`SampledVerificationWarning` says so.  ``False``: no re-solve (the
        checksum and the structural checks only: shapes, dtypes, finite values, zero weights on
        stragglers, errors in ``[0, mN]``).
    sample : int, optional
        Rows re-solved by a sampled check; giving it opts in to sampling (refused with
        ``verify=False`` or ``verify="all"``).
    max_bytes : int, optional
        Size bound passed to :func:`gcsim.io.bundle.load_bundle` (default its ``DEFAULT_MAX_BYTES``).

    Raises
    ------
    InvalidArgumentError
        ``verify`` not one of the values above, or ``sample`` with ``verify=False`` or ``"all"``.
    CatalogueError
        Anything :func:`~gcsim.io.bundle.load_bundle` refuses (missing, tampered, truncated files),
        a bundle that is not a decoder table, malformed arrays, or decoders that do not verify.

    Examples
    --------
    >>> import tempfile
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> path = decoder_table(encode(A, 1, "naive"), s_max=2).export(tempfile.mkdtemp() + "/t")
    >>> len(load_decoder_table(path))          # every one of the 1 + 3 + 3 rows re-solved
    7
    >>> load_decoder_table(path, verify="all", sample=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: sample: asks for a sampled check, but verify='all' (sampling: ...)
    """
    if not isinstance(verify, (bool, str)) or verify not in (True, False, "all", "sample"):
        raise InvalidArgumentError("verify", f"must be True, 'all', 'sample' or False, got {verify!r}")
    if sample is not None and verify in (False, "all"):
        raise InvalidArgumentError(
            "sample", f"asks for a sampled check, but verify={verify!r} (sampling: sample=k, or verify='sample')"
        )
    if sample is not None or verify == "sample":  # the explicit opt-in: sample=k, or verify="sample" (256)
        verify = "sample"
        sample = 256 if sample is None else check_int("sample", sample, minimum=1)
    arrays, manifest = load_bundle(path, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    metadata = manifest.get("metadata") or {}
    try:
        table = DecoderTable.from_arrays(arrays, metadata)  # a structured layout dispatches itself
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    if verify is not False:
        try:
            table.scheme.verify()
            report = table.verification_report(sample if verify == "sample" else None)
        except VerificationError as exc:
            raise CatalogueError(f"{path}: stored decoders do not verify: {exc}") from None
        if report["unchecked"]:
            warnings.warn(
                SampledVerificationWarning(
                    f"{path}: verify='sample' re-solved {len(table) - report['unchecked']} of the table's "
                    f"{len(table)} rows; the decoders and errors of the other {report['unchecked']} rows were "
                    "NOT checked (only their shapes, finiteness, zero weights on stragglers and error range): "
                    "a changed row among them loads; use verify=True to check every row"
                ),
                stacklevel=2,
            )
    return table


# ----------------------------------------------------------------------------------------------
# structured RD tables (theory §47.7): gains instead of dense decoders
# ----------------------------------------------------------------------------------------------
#
# (in this module, not in structured_tables.py, so that the base table can dispatch to them
# without an import cycle; gcsim.coding.structured_tables re-exports them)

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
        seed = check_int("seed", seed, minimum=0)
        count = len(self)
        chunks: Iterator[tuple[np.ndarray, np.ndarray]]
        if sample is None:
            chunks = ((a + np.arange(mk.shape[0]), mk) for a, mk in self.iter_patterns(self._chunk()))
            total = count
        else:
            sample = check_int("sample", sample, minimum=1)
            rng = np.random.default_rng(seed)
            k = min(sample, count)
            rows = np.unique(np.concatenate([[0, count - 1], rng.choice(count, size=k, replace=False)]))
            chunks = iter([(rows, np.array([self.pattern(int(r)) for r in rows]).reshape(rows.size, self.n))])
            total = int(rows.size)
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
    def from_arrays(cls, arrays: dict[str, Any], metadata: dict[str, Any]) -> StructuredDecoderTable:
        """Rebuild a table from :meth:`to_arrays`, checking shapes, dtypes, the incidence (exactly) and invariants.

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
    if not (m == 1 and get_encoder(method).m1_is_assignment):
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
