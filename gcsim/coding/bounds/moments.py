"""Moments of one entry of the random-diagonal encoder RD(eps) (theory §5.4).

Theorem 2 (theory §45.2) and Theorem 5 (§45.4) depend on the entry distribution only through
``mu2 = E d²`` and ``mu4 = E d⁴``: :func:`rd_moments` gives them for RD(eps) with Rademacher or
Gaussian base entries, and :func:`resolve_moments` takes any other pair, checked.
"""

from __future__ import annotations

from typing import Any

from ..._validation import check_real
from ...errors import InvalidArgumentError

__all__ = ["rd_moments", "resolve_moments"]

_DISTS = ("rademacher", "gaussian")


def rd_moments(eps: float = 0.0, dist: str = "rademacher") -> tuple[float, float]:
    """Second and fourth moments ``(E d^2, E d^4)`` of one RD diagonal entry.

    RD(eps) (theory §5.4) draws ``d = b (1 + eps xi)`` with ``xi ~ U[-1, 1]``
    independent of the base sign/scale ``b``: Rademacher ``b = ±1`` (moments 1, 1)
    or standard Gaussian ``b ~ N(0, 1)`` (moments 1, 3).  With
    ``E xi^2 = 1/3`` and ``E xi^4 = 1/5``:
    ``E (1 + eps xi)^2 = 1 + eps^2/3``, ``E (1 + eps xi)^4 = 1 + 2 eps^2 + eps^4/5``.

    Examples
    --------
    >>> rd_moments(0.0)
    (1.0, 1.0)
    >>> rd_moments(0.0, "gaussian")
    (1.0, 3.0)
    >>> [round(x, 6) for x in rd_moments(0.3)]
    [1.03, 1.18162]
    """
    eps = check_real("eps", eps, minimum=0.0)
    if dist not in _DISTS:
        raise InvalidArgumentError("dist", f"must be one of {_DISTS}, got {dist!r}")
    base2, base4 = (1.0, 1.0) if dist == "rademacher" else (1.0, 3.0)
    return base2 * (1.0 + eps**2 / 3.0), base4 * (1.0 + 2.0 * eps**2 + eps**4 / 5.0)


def resolve_moments(eps: float, dist: str, moments: Any) -> tuple[float, float]:
    """``(E d², E d⁴)``: the given pair ``moments`` (checked), else :func:`rd_moments` of ``(eps, dist)``.

    Examples
    --------
    >>> resolve_moments(0.0, "rademacher", (1.0, 3.0))     # Gaussian entries' pair, given directly
    (1.0, 3.0)
    """
    if moments is None:
        return rd_moments(eps, dist)
    try:
        mu2, mu4 = moments
    except (TypeError, ValueError):
        raise InvalidArgumentError("moments", f"must be a pair (E d^2, E d^4), got {moments!r}") from None
    mu2 = check_real("moments[0]", mu2, minimum=0.0, strict_min=True)
    mu4 = check_real("moments[1]", mu4, minimum=0.0)
    if mu4 < mu2**2 * (1 - 1e-12):
        raise InvalidArgumentError("moments", f"E d^4 = {mu4} < (E d^2)^2 = {mu2**2} is impossible (Jensen)")
    return mu2, mu4
