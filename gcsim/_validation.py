"""Small argument checks shared by every public entry point.

Each helper raises :class:`gcsim.errors.InvalidArgumentError` naming the argument.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .errors import InvalidArgumentError

__all__ = [
    "check_int",
    "check_real",
    "check_probability",
    "check_binary_matrix",
    "check_finite_array",
    "check_mask",
]


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Booleans and non-integral floats are refused.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and float(value).is_integer():
            value = int(value)
        else:
            raise InvalidArgumentError(name, f"must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(name, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidArgumentError(name, f"must be <= {maximum}, got {value}")
    return value


def check_real(name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None,
               strict_min: bool = False, strict_max: bool = False) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(name, f"must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise InvalidArgumentError(name, f"must be finite, got {value}")
    if minimum is not None and (value < minimum or (strict_min and value == minimum)):
        op = ">" if strict_min else ">="
        raise InvalidArgumentError(name, f"must be {op} {minimum}, got {value}")
    if maximum is not None and (value > maximum or (strict_max and value == maximum)):
        op = "<" if strict_max else "<="
        raise InvalidArgumentError(name, f"must be {op} {maximum}, got {value}")
    return value


def check_probability(name: str, value: Any, *, allow_one: bool = False) -> float:
    """A probability in [0, 1) (or [0, 1] with ``allow_one``)."""
    return check_real(name, value, minimum=0.0, maximum=1.0, strict_max=not allow_one)


def check_binary_matrix(name: str, value: Any) -> np.ndarray:
    """Return a 2-D 0/1 integer matrix (dtype int64) or raise naming ``name``."""
    arr = np.asarray(value)
    if arr.ndim != 2:
        raise InvalidArgumentError(name, f"must be a 2-D matrix, got shape {arr.shape}")
    if arr.size and not np.all((arr == 0) | (arr == 1)):
        raise InvalidArgumentError(name, "must contain only 0 and 1 entries")
    return arr.astype(np.int64)


def check_finite_array(name: str, value: Any, *, ndim: int | None = None, dtype=float) -> np.ndarray:
    """Return ``value`` as a NumPy array with only finite entries."""
    arr = np.asarray(value, dtype=dtype)
    if ndim is not None and arr.ndim != ndim:
        raise InvalidArgumentError(name, f"must be {ndim}-D, got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError(name, "contains NaN or inf")
    return arr


def check_mask(name: str, value: Any, n: int) -> np.ndarray:
    """A boolean mask of length ``n`` (1-D) or a batch of masks (2-D, ``(count, n)``)."""
    arr = np.asarray(value)
    if arr.dtype != np.bool_:
        if arr.size and not np.all((arr == 0) | (arr == 1)):
            raise InvalidArgumentError(name, "must be a boolean mask (or 0/1 entries)")
        arr = arr.astype(bool)
    if arr.ndim not in (1, 2) or arr.shape[-1] != n:
        raise InvalidArgumentError(name, f"must have shape ({n},) or (count, {n}), got {arr.shape}")
    return arr
