"""The bounds :func:`gcsim.coding.verify.verify_bounds` knows by name, each registered beside its function.

A module of this package registers a bound with :func:`register_bound` on the function that
evaluates it on a scheme, ``function(scheme, masks) -> array`` (one value per non-straggler
mask); :func:`builtin_bounds` imports every public module of the package (found, not listed) and
returns the records, which :data:`gcsim.coding.verify.BUILTIN_BOUNDS` holds.  This module also
registers the two bounds every scheme has: ``m N`` (the decoder ``X = 0``) and the error of the
scheme's own reference decoder, both upper bounds on the optimal error ``min_X`` (theory §5.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._discovery import public_modules
from ...errors import InvalidArgumentError
from ..encoders import CUSTOM, proved_bounds

__all__ = ["KINDS", "SCOPES", "Bound", "register_bound", "builtin_bounds"]

KINDS = ("lower", "upper")
SCOPES = ("pattern", "expectation", "worst")


@dataclass(frozen=True)
class Bound:
    """A bound to verify.

    Attributes
    ----------
    name : str
    kind : {"lower", "upper"}
        ``lower``: bound <= err; ``upper``: err <= bound.
    scope : {"pattern", "expectation", "worst"}
        ``pattern``: holds for the given scheme and every pattern;
        ``expectation``: holds for ``E_D err(B, F)`` over the encoder's random draw;
        ``worst``: holds for ``max_{|S|=s} err(B, F)``, the worst pattern with the same
        number of stragglers (its value must depend on ``s`` only).
    function : callable ``(scheme, masks) -> array (count,)``
        Bound value for each non-straggler mask (rows of ``masks``, True = arrived).
    description : str
    """

    name: str
    kind: str
    scope: str
    function: Callable[[Any, np.ndarray], Any]
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentError("bounds", f"bound name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise InvalidArgumentError("bounds", f"bound {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.scope not in SCOPES:
            raise InvalidArgumentError(
                "bounds", f"bound {self.name!r}: scope must be one of {SCOPES}, got {self.scope!r}"
            )
        if not callable(self.function):
            raise InvalidArgumentError("bounds", f"bound {self.name!r}: function must be callable")


#: name -> Bound, in the order the modules registered them
_REGISTRY: dict[str, Bound] = {}


def register_bound(name: str, kind: str, scope: str, description: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``function(scheme, masks) -> array`` as the built-in bound ``name``.

    Parameters
    ----------
    name : str
        The name :func:`gcsim.coding.verify.verify_bounds` takes; unique.
    kind, scope : str
        As :class:`Bound`.
    description : str
        The statement, with the theorem that proves it.

    Examples
    --------
    >>> from gcsim.coding.bounds.registry import builtin_bounds
    >>> builtin_bounds()["trivial_upper"].description
    'm N = ||T||_F^2 (decoder X = 0)'
    """

    def register(function: Callable) -> Callable:
        bound = Bound(name, kind, scope, function, description)
        known = _REGISTRY.get(name)
        same = known is not None and (known.function.__module__, known.function.__qualname__) == (
            function.__module__,
            function.__qualname__,
        )  # a module imported again (importlib.reload) registers its own bound again
        if known is not None and not same:
            raise InvalidArgumentError("bounds", f"bound {name!r} is registered twice ({known.function.__module__})")
        _REGISTRY[name] = bound
        return function

    return register


def builtin_bounds() -> dict[str, Bound]:
    """Every registered bound, name -> :class:`Bound`, after importing each public module of this package.

    Examples
    --------
    >>> bounds = builtin_bounds()
    >>> bounds["rank_lower"].kind, bounds["rd_upper"].scope
    ('lower', 'expectation')
    """
    public_modules(__name__.rpartition(".")[0])  # each registers its bounds when imported
    return dict(_REGISTRY)


# ----------------------------------------------------------------------------------------------
# what the bounds' scheme-level functions share
# ----------------------------------------------------------------------------------------------


def rd_params(scheme) -> tuple[float, str]:
    """``(eps, dist)`` of an RD scheme's options (defaults ``0.0``, ``"rademacher"``)."""
    options = getattr(scheme, "options", {}) or {}
    return float(options.get("eps", 0.0)), str(options.get("dist", "rademacher"))


def proved_for(scheme, bound: str) -> bool:
    """Whether ``bound`` is proved for the scheme's encoder (an unnamed or custom matrix is the caller's claim)."""
    method = getattr(scheme, "method", None)
    return method is None or method == CUSTOM or bound in proved_bounds(method)


def by_stragglers(masks: np.ndarray, value: Callable[[int], float]) -> np.ndarray:
    """``value(s)`` for every mask, ``s`` its number of stragglers (one call per distinct ``s``)."""
    s_of = masks.shape[1] - masks.sum(axis=1)
    out = np.empty(masks.shape[0])
    for s in np.unique(s_of):
        out[s_of == s] = value(int(s))
    return out


def not_applicable(name: str, why: str) -> InvalidArgumentError:
    """The error of a bound that does not apply to the scheme it was asked for."""
    return InvalidArgumentError("bounds", f"{name!r} does not apply to this scheme: {why}")


def irregular(A: np.ndarray, axis: int) -> str | None:
    """Why ``A`` is not regular along ``axis`` (0: loads, 1: replication), or None."""
    sums = A.sum(axis=axis)
    if sums.min() == sums.max() and sums[0] > 0:
        return None
    what = "part is held by" if axis == 1 else "worker holds"
    unit = "workers" if axis == 1 else "parts"
    return f"not every {what} the same number of {unit} (from {sums.min()} to {sums.max()})"


# ----------------------------------------------------------------------------------------------
# the bounds every scheme has (theory §5.1: the optimal error is at most any decoder's error)
# ----------------------------------------------------------------------------------------------


@register_bound("trivial_upper", "upper", "pattern", "m N = ||T||_F^2 (decoder X = 0)")
def _trivial_upper(scheme, masks):
    return np.full(masks.shape[0], float(scheme.m * scheme.assignment.shape[0]))


@register_bound(
    "reference_decoder_upper", "upper", "pattern", "||B_F X_0[F] - T||_F^2 of the scheme's reference decoder"
)
def _reference_decoder_upper(scheme, masks):
    X0 = getattr(scheme, "decoder", None)
    if X0 is None:
        raise InvalidArgumentError("bounds", "'reference_decoder_upper' needs a scheme with a reference decoder")
    B = np.asarray(scheme.B, dtype=float)
    m = scheme.m
    T = np.kron(np.eye(m), np.ones((scheme.assignment.shape[0], 1)))
    # B_F X_F = B (diag(1_F) X_0), batched over patterns
    R = np.einsum("rj,cjl->crl", B, masks[:, :, None] * np.asarray(X0, dtype=float)[None]) - T[None]
    return (R**2).sum(axis=(1, 2))
