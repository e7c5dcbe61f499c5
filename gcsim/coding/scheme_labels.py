"""The options a loaded scheme reports, re-derived from its verified arrays (issue #33, class 2).

A scheme bundle stores ``B`` and the assignment, which :meth:`gcsim.coding.Scheme.from_arrays`
verifies, and the ``options`` its encoder recorded (``eps``, ``seed``, ``dist``, ``s``, and what
the build measured: ``residual``, ``nullity``, ``slem``...).  Those labels are not in the arrays:
a file could say ``seed: 99`` over the ``B`` that seed 0 drew.  :func:`rederived_options` encodes
the stored assignment again with the stated options and keeps them only when they give the
stored ``B`` (and the measured entries agree); otherwise the bundle is refused.

The convex encoders (``"slem-circulant"``, ``"fastest-mixing"``: a semidefinite program per
build, minutes at :data:`gcsim.limits.MAX_SDP_WORKERS`) are not re-encoded on load: their
options are reported as ``{"solver": ...}`` only when the encoder's own ``verify`` holds, and their
measured entries are recomputed by nothing, so they are dropped (not reported).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CatalogueError, GcsimError
from .encoders import get_encoder, is_registered

__all__ = ["rederived_options"]

#: Encoders whose build is a convex program: not re-run on load (their measured options are dropped).
_CONVEX = frozenset({"slem-circulant", "fastest-mixing"})

#: Relative tolerance between the stored ``B`` and the one the options give again (one build's round-off).
B_RTOL = 1e-9


def _same_value(a: Any, b: Any) -> bool:
    """Equal labels: the same type family and value (floats to 1e-9 relative, lists entry by entry)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, numbers.Real) and isinstance(b, numbers.Real):
        if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
            return int(a) == int(b)
        fa, fb = float(a), float(b)
        return (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray)):
        la, lb = list(np.asarray(a, dtype=object).ravel()), list(np.asarray(b, dtype=object).ravel())
        return len(la) == len(lb) and all(_same_value(x, y) for x, y in zip(la, lb, strict=True))
    return bool(a == b) if type(a) is type(b) else False


def rederived_options(scheme: Any, stored: Mapping[str, Any], encode: Any) -> dict[str, Any]:
    """The options ``scheme`` may report: ``stored`` once re-derived from its arrays, else CatalogueError.

    ``encode`` is :func:`gcsim.coding.schemes.encode` (passed in: that module calls this one on load).

    Parameters
    ----------
    scheme : Scheme
        A scheme rebuilt from a bundle whose arrays verified (its ``B``, assignment, extras).
    stored : mapping
        The options the bundle's metadata states.

    Returns
    -------
    dict
        ``stored`` when encoding ``scheme``'s source again with its input options (``eps``,
        ``seed`` and the encoder's own) gives ``B`` within :data:`B_RTOL` and the same measured
        entries, less ``eps`` for an encoder that reads none and ``seed`` for a deterministic one
        (every value gives the same ``B``: not reported); ``{}`` for an unregistered method (a
        user's matrix: nothing to re-derive, nothing reported); for a convex encoder, its
        ``solver`` only.

    Raises
    ------
    CatalogueError
        The stated options give another ``B`` (another seed, ``eps``, ``dist``...), are malformed,
        or a measured entry differs from the one the build gives.
    """
    if not isinstance(stored, Mapping):
        raise CatalogueError(f"scheme: options must be an object, got {type(stored).__name__}")
    method = scheme.method
    if not is_registered(method):
        return {}
    enc = get_encoder(method)
    if method in _CONVEX:
        return {k: v for k, v in stored.items() if k == "solver"}
    # what the build does not read (eps where it has none, the seed of a deterministic code) is not
    # determined by B: it is not reported
    unread = set(enc.unread_options())
    stored = {k: v for k, v in stored.items() if k not in unread}
    inputs = {k: v for k, v in stored.items() if k in {"eps", "seed", *enc.options}}
    try:
        again = encode(enc.source(scheme), scheme.m, method, **inputs)
    except GcsimError as exc:
        shown = f"{dict(stored)!r:.120}"
        raise CatalogueError(f"scheme: the stated options {shown} do not build a {method} code: {exc}") from None
    B, want = np.asarray(scheme.B, dtype=np.float64), np.asarray(again.B, dtype=np.float64)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if B.shape != want.shape or not np.allclose(B, want, rtol=B_RTOL, atol=B_RTOL * max(scale, 1.0)):
        raise CatalogueError(
            f"scheme: the stated options {dict(inputs)!r:.120} build another B than the stored one "
            f"(the {method} code's labels are not its arrays')"
        )
    derived = {k: v for k, v in again.options.items() if k not in unread}
    if set(derived) != set(stored):
        raise CatalogueError(
            f"scheme: options {sorted(stored)} differ from the ones the {method} build records {sorted(derived)}"
        )
    for key in derived:
        if not _same_value(stored[key], derived[key]):
            raise CatalogueError(
                f"scheme: option {key!r} is {stored[key]!r:.60}, but the {method} build gives {derived[key]!r:.60}"
            )
    return dict(stored)
