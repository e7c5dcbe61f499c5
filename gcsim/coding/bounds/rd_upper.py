"""The scaled-sign decoder's upper bound on the expected error of random-diagonal encoding (theory §45.2, Theorem 2).

For the random-diagonal encoder RD(eps) (theory §5.4) and a fixed non-straggler set ``F`` the
scaled-sign decoder ``x_l = alpha (d_l)_F`` has the exact expected error of
:func:`rd_scaled_sign_error` (Lemma 2); at the best scale :func:`rd_optimal_scale` it gives
``E_D err(B, F) <= m [N - mu2^2 S1^2 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)]``
(:func:`rd_upper_bound`), ``S1 = sum_i c_i``, ``S2 = sum_i c_i^2``, ``mu_q = E d^q``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_finite_array
from ...errors import InvalidArgumentError
from ._args import BoundArgs, _counts, _out, bound_args
from .registry import proved_for, rd_params, register_bound

__all__ = ["rd_optimal_scale", "rd_scaled_sign_error", "rd_upper_bound"]


def _rd_sums(a: BoundArgs) -> tuple[np.ndarray, np.ndarray]:
    """``S1 = sum_i c_i(F)`` and ``S2 = sum_i c_i(F)^2`` of every checked mask, as floats."""
    c = _counts(a.masks, a.A).astype(float)
    return c.sum(axis=1), (c**2).sum(axis=1)


def _rd_quadratic(mu2, mu4, m, S1, S2):
    """Q = mu2^2 S2 + (mu4 + (m-2) mu2^2) S1, the alpha^2 coefficient (divided by m)."""
    return mu2**2 * S2 + (mu4 + (m - 2) * mu2**2) * S1


def _rd_bound_from_sums(N, m, S1, S2, mu2, mu4):
    S1 = np.asarray(S1, dtype=float)
    Q = _rd_quadratic(mu2, mu4, m, S1, np.asarray(S2, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(Q > 0, mu2**2 * S1**2 / np.where(Q > 0, Q, 1.0), 0.0)
    return m * (N - gain)


def rd_optimal_scale(
    assignment: Any, m: int, nonstragglers: Any, eps: float = 0.0, dist: str = "rademacher", *, moments: Any = None
):
    """Optimal scale ``alpha* = mu2 S1 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)`` of the scaled-sign decoder.

    At ``eps = 0`` (Rademacher) ``alpha* = S1 / (S2 + (m-1) S1)`` (theory §45).
    Returns 0 where no part is covered (``S1 = 0``).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_optimal_scale(A, 2, [True, True, True])   # S1 = 6, S2 = 12
    0.3333333333333333
    """
    a = bound_args(assignment, m, nonstragglers=nonstragglers, rd=(eps, dist, moments))
    S1, S2 = _rd_sums(a)
    mu2, mu4 = a.moments
    Q = _rd_quadratic(mu2, mu4, a.m, S1, S2)
    alpha = np.where(Q > 0, mu2 * S1 / np.where(Q > 0, Q, 1.0), 0.0)
    return _out(alpha, a.single)


def rd_scaled_sign_error(
    assignment: Any,
    m: int,
    nonstragglers: Any,
    alpha: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
):
    """Exact ``E_D ||B_F X_alpha - T||_F^2`` of the scaled-sign decoder ``x_l = alpha (d_l)_F``.

    ``= m [N - 2 alpha mu2 S1 + alpha^2 (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)]``
    (Lemma 2 of ``docs/theory/45_bounds.md``), the expectation over the RD draw
    ``D`` for a fixed non-straggler set ``F``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_scaled_sign_error(A, 2, [True, True, True], 0.0)   # X = 0: error m N
    6.0
    """
    a = bound_args(assignment, m, nonstragglers=nonstragglers, rd=(eps, dist, moments))
    S1, S2 = _rd_sums(a)
    m, (mu2, mu4) = a.m, a.moments
    alpha = check_finite_array("alpha", alpha)
    if alpha.ndim > 1 or (alpha.ndim == 1 and alpha.shape[0] != S1.shape[0]):
        raise InvalidArgumentError("alpha", f"must be a scalar or have one entry per pattern, got shape {alpha.shape}")
    N = a.A.shape[0]
    val = m * (N - 2 * alpha * mu2 * S1 + alpha**2 * _rd_quadratic(mu2, mu4, m, S1, S2))
    return _out(np.asarray(val, dtype=float), a.single)


def rd_upper_bound(
    assignment: Any,
    m: int,
    nonstragglers: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    normalized: bool = False,
):
    r"""Upper bound on the expected optimal error of RD(eps) via the scaled-sign decoder.

    For a fixed non-straggler set ``F`` (chosen independently of the draw ``D``),

    .. math:: E_D\,err(B, F) \le E_D\,err_{X_{\alpha^*}}(B, F)
              = m\Big[N - \frac{\mu_2^2 S_1^2}{\mu_2^2 S_2 + (\mu_4 + (m-2)\mu_2^2) S_1}\Big],

    with ``S1 = sum_i c_i(F) = sum_{j in F} l_j`` and
    ``S2 = sum_i c_i(F)^2 = 1_F^T A^T A 1_F`` (Theorem 2).  For ``eps = 0`` it
    reads ``m [N - S1^2 / (S2 + (m-1) S1)]``; for Gaussian entries
    ``m [N - S1^2 / (S2 + (m+1) S1)]``.  It bounds an *expectation over the
    encoder draw*: a single draw may exceed it.

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
    m : int >= 1
    nonstragglers : bool array (n,) or (count, n)
    eps : float >= 0
        Multiplicative jitter of RD(eps).
    dist : {"rademacher", "gaussian"}
    moments : (float, float), optional
        ``(E d^2, E d^4)`` of any other mean-zero entry distribution; overrides
        ``eps``/``dist``.
    normalized : bool
        Divide by ``m N``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_upper_bound(A, 2, [True, True, True])      # 2 [3 - 36 / 18]
    2.0
    >>> rd_upper_bound(A, 1, [True, True, True])      # m = 1, all arrive: exact decoding
    0.0
    """
    a = bound_args(assignment, m, nonstragglers=nonstragglers, normalized=normalized, rd=(eps, dist, moments))
    S1, S2 = _rd_sums(a)
    m, N = a.m, a.A.shape[0]
    val = _rd_bound_from_sums(N, m, S1, S2, *a.moments)
    if a.normalized:
        val = val / (m * N)
    return _out(val, a.single)


@register_bound(
    "rd_upper",
    "upper",
    "expectation",
    "E_D err <= m [N - mu2^2 S1^2 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)] (Theorem 2)",
)
def _rd_upper(scheme, masks):
    method = getattr(scheme, "method", None)
    if not proved_for(scheme, "rd_upper"):
        raise InvalidArgumentError("bounds", f"'rd_upper' applies to RD schemes, got method {method!r}")
    eps, dist = rd_params(scheme)
    return rd_upper_bound(scheme.assignment, scheme.m, masks, eps, dist)
