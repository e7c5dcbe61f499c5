"""Convergence of SGD with an unbiased coded gradient estimate (theory §45.5, Theorem 7).

Bottou, Curtis & Nocedal's bound for a ``beta``-smooth loss and an estimate with
``E||g_hat||^2 <= M + M_G ||grad L||^2`` (for RD, ``M`` from :func:`gcsim.coding.bounds.rd_variance_bound`).
"""

from __future__ import annotations

from ..._validation import check_int, check_real
from ...errors import InvalidArgumentError

__all__ = ["sgd_convergence_bound"]


def sgd_convergence_bound(
    beta: float, eta: float, iterations: int, initial_gap: float, M: float, M_G: float = 1.0
) -> float:
    r"""Bound on ``(1/T) sum_t E||grad L(theta_t)||^2`` for SGD with an unbiased estimate (Theorem 7).

    If ``L`` is ``beta``-smooth and bounded below by ``L*``, ``E[g_hat | theta] = grad L(theta)``
    and ``E[||g_hat||^2 | theta] <= M + M_G ||grad L(theta)||^2``, then for a
    constant step ``0 < eta <= 1 / (beta M_G)``

    .. math:: \frac1T\sum_{t=1}^T E\|\nabla L(\theta_t)\|^2 \le \eta\beta M + \frac{2(L(\theta_1) - L^*)}{T\eta}.

    (Bottou, Curtis & Nocedal, SIAM Review 60(2), 2018, Thm. 4.10.)  For RD,
    ``M_G = 1`` and ``M`` is a bound on the variance, e.g. :func:`rd_variance_bound`.

    Examples
    --------
    >>> sgd_convergence_bound(beta=2.0, eta=0.1, iterations=100, initial_gap=5.0, M=3.0)
    1.6
    """
    beta = check_real("beta", beta, minimum=0.0, strict_min=True)
    eta = check_real("eta", eta, minimum=0.0, strict_min=True)
    T = check_int("iterations", iterations, minimum=1)
    gap = check_real("initial_gap", initial_gap, minimum=0.0)
    M = check_real("M", M, minimum=0.0)
    M_G = check_real("M_G", M_G, minimum=1.0)
    if eta > 1.0 / (beta * M_G) * (1 + 1e-12):
        raise InvalidArgumentError("eta", f"must be <= 1/(beta M_G) = {1.0 / (beta * M_G):.6g}, got {eta}")
    return eta * beta * M + 2.0 * gap / (T * eta)
