"""Minimum-norm decoders of straggler patterns and their certificates (the dense tables' arithmetic).

For a dense encoder ``B`` (``mN x n``) and the non-stragglers ``F`` the minimum-norm optimal decoder
is ``X*(F) = B_F⁺ T``: :func:`_solve_group` solves a stack of patterns with one ``|F|`` by batched
SVDs (the builder and the checks of :class:`~gcsim.coding.dense_table.DecoderTable`), and
:func:`certified_decoder` solves one pattern and certifies it a posteriori (the tables' fallback).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_mask, check_real
from ..errors import InvalidArgumentError, VerificationError
from .schemes import Scheme

__all__ = ["DecoderLookup", "FALLBACKS", "certified_decoder"]

_U = float(np.finfo(np.float64).eps) / 2.0
# working-set budget of one batched chunk of SVDs (bytes)
_CHUNK_BYTES = 48 * 2**20
# constant of the O(.) in the backward-error bounds used by verify() (as in the tests)
_SAFETY = 10.0


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


#: Values of ``fallback`` of :meth:`~gcsim.coding.dense_table.DecoderTable.lookup`.
FALLBACKS = ("optimal", "raise")


class DecoderLookup(NamedTuple):
    """What :meth:`~gcsim.coding.dense_table.DecoderTable.lookup` or :func:`certified_decoder` answers for a pattern.

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
        table was certified row by row when it was loaded:
        :func:`~gcsim.coding.decoder_table.load_decoder_table`).
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
