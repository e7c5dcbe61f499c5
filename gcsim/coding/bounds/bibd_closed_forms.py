"""Closed forms of the optimal error of symmetric BIBD codes (theory §45.3, Theorem 4).

For a symmetric ``(v, k, λ)`` BIBD, ``Γ_FF = (k - λ) I + λ J`` and ``H_F = k 1`` for every ``F``, so the
optimal error of ``B = A`` with ``m = 1`` (:func:`bibd_optimal_error_m1`) and of naive stacking
``B = 1_m ⊗ A`` (:func:`bibd_naive_error`) depend on the number of stragglers only.
"""

from __future__ import annotations

from fractions import Fraction

from ..._validation import check_bool
from ._args import _check_symmetric_bibd, bound_args

__all__ = ["bibd_optimal_error_m1", "bibd_naive_error"]


def bibd_optimal_error_m1(v: int, k: int, lam: int, s: int, *, exact: bool = False):
    """Optimal-decoding error of a symmetric (v, k, lambda) BIBD code with ``m = 1``, ``B = A``.

    ``err(F) = v - (v - s) k^2 / (k - lambda + lambda (v - s))`` for every F with
    ``|F| = v - s`` (Theorem 4; ``Gamma_FF = (k - lambda) I + lambda J``,
    ``H_F = k 1``).  The same holds for RD with ``m = 1`` and any non-zero
    diagonal (the column span of ``B_F`` does not change).

    Parameters
    ----------
    exact : bool
        Return a :class:`fractions.Fraction` instead of a float.

    Examples
    --------
    >>> bibd_optimal_error_m1(7, 3, 1, 2, exact=True)      # Fano plane, 2 stragglers
    Fraction(4, 7)
    """
    exact = check_bool("exact", exact)
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    f = bound_args(s=s, workers=v).f
    val = Fraction(v) if f == 0 else v - Fraction(f * k * k, k - lam + lam * f)
    return val if exact else float(val)


def bibd_naive_error(v: int, k: int, lam: int, m: int, s: int, *, exact: bool = False):
    """Optimal-decoding error of naive stacking ``B = 1_m ⊗ A`` on a symmetric BIBD.

    ``err(F) = m v - (v - s) k^2 / (k - lambda + lambda (v - s))`` (Theorem 4(b)):
    stacking gains exactly what ``m = 1`` gains, once, not ``m`` times.

    Examples
    --------
    >>> bibd_naive_error(7, 3, 1, 2, 0, exact=True)
    Fraction(7, 1)
    """
    exact = check_bool("exact", exact)
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    a = bound_args(m=m, s=s, workers=v)
    m, f = a.m, a.f
    val = Fraction(m * v) if f == 0 else m * v - Fraction(f * k * k, k - lam + lam * f)
    return val if exact else float(val)
