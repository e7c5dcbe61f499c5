"""Floating-point tolerances derived from the problem, not from one BLAS kernel.

Every tolerance in the tests is ``(constant) x (dimension factor) x u x (condition) x (scale)``,
from the standard rounding-error bounds (N. J. Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., SIAM 2002; chapter numbers below):

* sums and dot products of length ``n``: ``|fl(x·y) - x·y| <= γ_n |x|·|y|``, ``γ_n = n u / (1 - n u)``
  (Thm 3.1/3.5);
* linear systems by a backward-stable solver: relative forward error ``<= c n u κ(A)`` (Thm 7.2,
  with the backward error of LU/Cholesky, Thm 9.4/10.4);
* least squares by Householder QR / SVD: relative error of the solution ``<= c m n u (κ + κ² ‖r‖/(‖A‖‖x‖))``
  and of the residual ``<= c m n u κ`` (Thm 20.3/20.4); any route through the Gram matrix
  ``AᵀA`` squares κ (Sec. 20.4).

The constant ``c`` hides the small integers of those theorems; :data:`SAFETY` = 10 is used
throughout, so a tolerance is never tuned to what one kernel happened to give.  Different BLAS
kernels (SkylakeX, Haswell, Prescott, ...) change the order of floating-point operations, which
these bounds cover by construction.
"""

from __future__ import annotations

import numpy as np

#: Constant of the O(.) in the backward-error bounds above.
SAFETY = 10.0


def unit_roundoff(dtype=np.float64) -> float:
    """u = eps / 2 (2^-53 for float64, 2^-24 for float32)."""
    return float(np.finfo(dtype).eps) / 2.0


def gamma(n: int, dtype=np.float64) -> float:
    """γ_n = n u / (1 - n u): relative error bound of a length-n sum or dot product."""
    nu = n * unit_roundoff(dtype)
    if nu >= 1:
        raise ValueError(f"n u = {nu} >= 1: no bound")
    return nu / (1.0 - nu)


def cond(A, *, nonzero: bool = False) -> float:
    """2-norm condition number σ_max/σ_min (over the numerically non-zero σ if ``nonzero``)."""
    A = np.asarray(A)
    if not np.iscomplexobj(A):
        A = A.astype(float)
    sv = np.linalg.svd(A, compute_uv=False)
    if sv.size == 0 or sv[0] == 0:
        return 1.0
    if nonzero:
        sv = sv[sv > max(np.shape(A)) * np.finfo(float).eps * sv[0]]
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")


def dot_tol(n: int, scale: float, dtype=np.float64) -> float:
    """Absolute tolerance of a length-n dot product/sum whose |terms| sum to ``scale``."""
    return SAFETY * gamma(n, dtype) * scale


def solve_tol(kappa: float, n: int, scale: float, dtype=np.float64) -> float:
    """Absolute tolerance of the solution of an n x n system of condition κ, ``scale = ‖x‖``."""
    return SAFETY * n * unit_roundoff(dtype) * kappa * scale


def lstsq_tol(kappa: float, rows: int, cols: int, scale: float, *, gram: bool = False, dtype=np.float64) -> float:
    """Absolute tolerance of a least-squares residual quantity of size ``scale``.

    Orthogonal routes (QR/SVD): ``c m n u κ``; Gram routes (normal equations): κ².
    """
    k = kappa * kappa if gram else kappa
    return SAFETY * rows * cols * unit_roundoff(dtype) * k * scale
