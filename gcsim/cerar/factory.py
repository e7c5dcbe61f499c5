"""The CERAR design factory: one entry point for every construction (docs/theory.md §50, §55)."""

from __future__ import annotations

import functools
from typing import Any

from .._validation import check_int, check_real
from ..errors import InvalidArgumentError
from .constructions import _check_design_size, exact_design, perturbation_design, vandermonde_design
from .design import CLOSED_FORMS, CerarDesign
from .optimize import optimized_design

__all__ = ["design", "METHODS"]

METHODS = ("exact", "vandermonde", "perturbation", "optimized")


def design(
    N: int, c: int, method: str, *, eps: float | None = None, kappa: float | None = None, seed: int = 0, **kw: Any
) -> CerarDesign:
    """Build a CERAR design by name.

    Parameters
    ----------
    N, c : int
        Ring size (N >= 2) and number of gradient components (c >= 1).
    method : {"exact", "vandermonde", "perturbation", "optimized"}
        "exact" (c <= N, or N = 2), "vandermonde" (real nodes 1 + eps (k - (c-1)/2)),
        "perturbation" (default eps = 0.05), "optimized" (delegates to
        :func:`gcsim.cerar.optimize.optimized_design` ``(N, c, kappa=..., seed=..., **kw)``).
    eps : float, optional
        Perturbation ("perturbation", > 0 when c > N) or node spacing ("vandermonde");
        ignored by "exact"; passed on to "optimized" when given.
    kappa : float, optional
        Condition-number bound (>= 1), only for "optimized".
    seed : int
        Seed, only for "optimized".

    Examples
    --------
    >>> design(4, 4, "exact").L
    6
    >>> design(3, 5, "perturbation", eps=0.01).method
    'perturbation'
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    if eps is not None:
        eps = check_real("eps", eps, minimum=0.0)
    if kappa is not None:
        kappa = check_real("kappa", kappa, minimum=1.0)
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidArgumentError("method", f"must be one of {METHODS}, got {method!r}")
    if method != "optimized" and kappa is not None:
        raise InvalidArgumentError("kappa", f"only used by method='optimized', not {method!r}")
    allowed = {"exact": {"basis"}}.get(method, set()) if method != "optimized" else None
    if allowed is not None and set(kw) - allowed:
        raise InvalidArgumentError(
            ", ".join(sorted(set(kw) - allowed)), f"unknown keyword argument(s) for method={method!r}"
        )
    if method == "exact":  # eps is accepted and ignored (uniform call sites)
        return exact_design(N, c, **kw)
    if method == "vandermonde":
        return vandermonde_design(N, c, eps, **kw)
    if method == "perturbation":
        return perturbation_design(N, c, 0.05 if eps is None else eps, **kw)
    if eps is not None:
        kw["eps"] = eps
    return optimized_design(N, c, kappa=kappa, seed=check_int("seed", seed), **kw)


# the loader re-derives a closed-form label from these (gcsim.cerar.design._check_construction_label)
for _method in ("exact", "vandermonde", "perturbation"):
    CLOSED_FORMS[_method] = functools.partial(design, method=_method)
