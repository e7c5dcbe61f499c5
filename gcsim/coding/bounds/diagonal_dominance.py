"""The diagonal-dominance upper bound, for any encoder and every pattern (theory §45.7, Theorem 8).

``err(B, F) <= mN - sum_{j in F, D_jj > 0} ||H_j||^2 / D_jj`` with ``H = B_F^T T`` and ``D`` the absolute
row sums of ``B_F^T B_F`` (Gershgorin): the error of the decoder ``X = D^+ H``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_bool, check_dense_size
from ._args import _encoder_and_m, _masks, _out
from .registry import register_bound

__all__ = ["diagonal_dominance_upper_bound"]


def diagonal_dominance_upper_bound(scheme_or_B: Any, nonstragglers: Any, *, m: Any = None, normalized: bool = False):
    r"""Diagonal-dominance upper bound on the optimal error, for any encoder and every pattern (Theorem 8).

    Let ``Γ = B_Fᵀ B_F`` and ``H = B_Fᵀ T`` (row ``j``: the column sums of worker ``j``'s ``m`` blocks),
    and ``D = diag(Σ_{k ∈ F} |Γ_jk|)``, the absolute row sums of ``Γ``; ``D ⪰ Γ`` (Gershgorin).  Then

    .. math:: err(B, F) \;\le\; \|B_F D^+ H - T\|_F^2 \;\le\; mN - \sum_{j\in F,\ D_{jj}>0}
              \frac{\|H_{j,:}\|^2}{D_{jj}} ,

    the error of the decoder ``X = D⁺ H``.  For ``m = 2`` and ``B = [P; Q]`` it is Munim &
    Ramamoorthy's ``2N - 1ᵀP_F D⁻¹ P_Fᵀ 1 - 1ᵀQ_F D⁻¹ Q_Fᵀ 1`` with ``D`` the diagonal matrix of the
    absolute row sums of ``P_FᵀP_F + Q_FᵀQ_F`` (their Construction 2 bound).  Equality holds when the
    columns of ``B_F`` are orthogonal (``Γ`` diagonal).  It is a deterministic bound (no expectation).

    Parameters
    ----------
    scheme_or_B : Scheme (with ``.B`` and ``.m``) or array (mN, n)
    nonstragglers : bool array (n,) or (count, n)
        True where the worker arrived (the set ``F``).
    m : int, optional
        Number of blocks; taken from the scheme when omitted (required with a bare array).
    normalized : bool
        Divide by ``m N``.

    Returns
    -------
    float or numpy.ndarray (count,)

    Examples
    --------
    >>> import numpy as np
    >>> B = np.eye(3)                                   # orthogonal columns: the bound is the exact error
    >>> diagonal_dominance_upper_bound(B, [True, True, False], m=1)
    1.0
    >>> B = np.array([[1.0, 1.0], [1.0, -1.0]])         # m = 2, N = 1: orthogonal, exact decoding
    >>> diagonal_dominance_upper_bound(B, [True, True], m=2)
    0.0
    >>> A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])   # B = A, m = 1: err(F = [3]) = 0
    >>> diagonal_dominance_upper_bound(A, [True, True, True], m=1)          # Γ rows (2 1 1): 3 - 3 * 4 / 4
    0.0
    """
    B, m = _encoder_and_m(scheme_or_B, m)
    normalized = check_bool("normalized", normalized)
    mN, n = B.shape
    N = mN // m
    masks, single = _masks("nonstragglers", nonstragglers, n)
    # refuse up front what would not fit: the n x n Gram matrix and the (count x n) row sums
    check_dense_size("scheme_or_B", n, n, "the Gram matrix BᵀB of the diagonal-dominance bound")
    check_dense_size("nonstragglers", masks.shape[0], n, "the row sums of the diagonal-dominance bound")
    gram_abs = np.abs(B.T @ B)  # Γ of all workers; Γ_FF is its F x F block
    h2 = (B.reshape(m, N, n).sum(axis=1) ** 2).sum(axis=0)  # ‖H_{j,:}‖², H = Bᵀ T
    D = masks.astype(float) @ gram_abs  # D_jj(F) = Σ_{k ∈ F} |Γ_jk| (row j; used for j ∈ F only)
    use = masks & (D > 0)  # D_jj = 0 iff column j of B is zero, and then H_j = 0
    gain = np.where(use, h2[None, :] / np.where(use, D, 1.0), 0.0).sum(axis=1)
    val = mN - gain
    if normalized:
        val = val / mN
    return _out(np.asarray(val, dtype=float), single)


@register_bound(
    "diagonal_dominance_upper",
    "upper",
    "pattern",
    "m N - sum_{j in F} ||(B_F^T T)_j||^2 / sum_{k in F} |(B_F^T B_F)_jk| "
    "(theory §45.7, Theorem 8; any encoder, every pattern)",
)
def _diagonal_dominance_upper(scheme, masks):
    return diagonal_dominance_upper_bound(scheme.B, masks, m=scheme.m)
