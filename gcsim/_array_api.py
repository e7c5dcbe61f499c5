"""Array namespaces: one code path for NumPy, CuPy and torch (the array API standard).

Functions written against the array API take an ``xp`` argument: ``None`` means
NumPy, ``"numpy"``/``"cupy"`` or a module select one explicitly.  Namespaces come
from :mod:`array_api_compat`, so the same lines run on NumPy on the CPU and on
CuPy on a GPU.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from array_api_compat import array_namespace

from .errors import InvalidArgumentError

__all__ = ["get_namespace", "infer_namespace", "is_numpy", "to_numpy", "asarray", "check_gradients"]


def get_namespace(xp: Any = None):
    """The array-API namespace for ``xp`` (None or "numpy" -> NumPy, "cupy" -> CuPy, or a module).

    Raises
    ------
    InvalidArgumentError
        Unknown name, or CuPy requested but not importable (no GPU / not installed).

    Examples
    --------
    >>> get_namespace().__name__.endswith("numpy")
    True
    """
    if xp is None or xp == "numpy":
        return array_namespace(np.empty(0))
    if isinstance(xp, str):
        if xp != "cupy":
            raise InvalidArgumentError("xp", f"must be None, 'numpy', 'cupy' or an array module, got {xp!r}")
        try:
            mod = importlib.import_module("cupy")
        except Exception as exc:  # ImportError or a CUDA runtime failure
            raise InvalidArgumentError("xp", f"CuPy is not usable here ({exc})") from None
        return array_namespace(mod.empty(0))
    try:
        return array_namespace(xp.empty(0))
    except Exception as exc:
        raise InvalidArgumentError("xp", f"is not an array module ({exc})") from None


def infer_namespace(xp: Any, array: Any):
    """``xp`` if given, else the namespace of ``array`` (CuPy stays CuPy), else NumPy."""
    if xp is not None:
        return get_namespace(xp)
    if hasattr(array, "__cuda_array_interface__"):
        return array_namespace(array)
    return get_namespace(None)


def is_numpy(xp) -> bool:
    return "numpy" in getattr(xp, "__name__", "")


def to_numpy(a: Any, name: str | None = None) -> np.ndarray:
    """Copy an array of any supported namespace to host NumPy.

    With ``name``, input NumPy cannot read (a ragged nested list, an object without an array
    interface) is refused as :class:`InvalidArgumentError` naming it, not numpy's own error.

    Examples
    --------
    >>> to_numpy([1.0, 2.0]).tolist()
    [1.0, 2.0]
    >>> to_numpy([[0], [0, 0]], "mask")
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: mask: cannot be read as an array (...)
    """
    try:
        # CuPy: a device array with .get(); a dict also has .get, hence the interface check
        if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get") and not isinstance(a, np.ndarray):
            return np.asarray(a.get())
        return np.asarray(a)
    except (TypeError, ValueError) as exc:
        if name is None:
            raise
        raise InvalidArgumentError(name, f"cannot be read as an array ({exc})") from None


def asarray(xp, a: Any, dtype=None):
    dtype = xp.float64 if dtype is None else dtype
    if not is_numpy(xp) and isinstance(a, np.ndarray):
        return xp.asarray(a, dtype=dtype)
    return xp.asarray(to_numpy(a) if is_numpy(xp) else a, dtype=dtype)


def check_gradients(gradients: Any, N: int) -> np.ndarray | Any:
    """Shape/finiteness check that works for NumPy and CuPy inputs (device arrays stay on the device)."""
    if hasattr(gradients, "__cuda_array_interface__"):
        xp = array_namespace(gradients)
        shape = tuple(gradients.shape)
        if len(shape) != 2 or shape[0] != N:
            raise InvalidArgumentError("gradients", f"must have shape (N, d) = ({N}, d), got {shape}")
        if not xp.isdtype(gradients.dtype, "real floating") and not xp.isdtype(gradients.dtype, "integral"):
            raise InvalidArgumentError("gradients", f"must be a real numeric array, got dtype {gradients.dtype}")
        if gradients.size and not bool(xp.all(xp.isfinite(gradients))):
            raise InvalidArgumentError("gradients", "contains NaN or inf")
        return np.empty((N, shape[1]))  # shape carrier only
    host = to_numpy(gradients, "gradients")
    if host.dtype == object or np.iscomplexobj(host) or not np.issubdtype(host.dtype, np.number):
        raise InvalidArgumentError("gradients", f"must be a real numeric array, got dtype {host.dtype}")
    if host.ndim != 2 or host.shape[0] != N:
        raise InvalidArgumentError("gradients", f"must have shape (N, d) = ({N}, d), got {host.shape}")
    if host.size and not np.all(np.isfinite(host)):
        raise InvalidArgumentError("gradients", "contains NaN or inf")
    return host
