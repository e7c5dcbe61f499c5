"""Small argument checks shared by every public entry point.

Each helper raises :class:`gcsim.errors.InvalidArgumentError` naming the argument.
The size checks read the limits of :mod:`gcsim.limits` at call time and state
both the requested size and the limit in their message.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from . import limits
from .errors import CatalogueError, InvalidArgumentError, SizeLimitError

__all__ = [
    "check_int",
    "check_real",
    "check_probability",
    "check_binary_matrix",
    "check_finite_array",
    "check_mask",
    "check_bool",
    "check_int_array",
    "check_dense_size",
    "check_count",
    "file_kind",
]


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name``.

    Booleans and non-integral floats are refused.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and float(value).is_integer():
            value = math.trunc(value)
        else:
            raise InvalidArgumentError(name, f"must be an integer, got {_shown_value(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(name, f"must be >= {minimum}, got {_shown_int(value)}")
    if maximum is not None and value > maximum:
        raise InvalidArgumentError(name, f"must be <= {maximum}, got {_shown_int(value)}")
    return value


def _shown_value(value: Any) -> str:
    """A refused value as a one-line message shows it: an array by its type and shape, never its entries.

    NumPy's ``repr`` of an array wraps onto several lines (and a zero-stride view of 10^9 entries
    is summarized, not small); the shape is what the caller got wrong.

    >>> _shown_value(2.5), _shown_value(np.broadcast_to(np.int64(200_000), (10**9,)))
    ('2.5', 'an array of shape (1000000000,)')
    """
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and shape:
        return f"an array of shape {shape}"
    return repr(value)


def _shown_int(value: int) -> str:
    """An integer as a message prints it: whole up to 30 digits, else as its number of digits.

    Python refuses to print an integer of over 4300 digits (``sys.get_int_max_str_digits``), and a
    message of a thousand digits says less than its length.

    >>> _shown_int(-12), _shown_int(10**40), _shown_int(-(10**5000))
    ('-12', 'a 41-digit integer', 'a negative integer of over 4,000 digits')
    """
    sign = "negative " if value < 0 else ""
    if value.bit_length() >= 13_000:  # about 3,900 digits: str() may refuse
        return f"{'a negative' if value < 0 else 'an'} integer of over 4,000 digits"
    digits = len(str(abs(value)))
    return str(value) if digits <= 30 else f"a {sign}{digits:,}-digit integer"


def check_real(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_min: bool = False,
    strict_max: bool = False,
) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(name, f"must be a real number, got {_shown_value(value)}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float64's range
        raise InvalidArgumentError(
            name, f"is too large for a float: {_shown_int(int(value))}, beyond float64's largest value 1.8e308"
        ) from None
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
    """Return a 2-D 0/1 integer matrix (dtype int64) or raise naming ``name``.

    Its logical size (a zero-stride view counts every entry) is checked against
    :data:`gcsim.limits.MAX_DENSE_ENTRIES` before any comparison or copy.
    """
    arr = np.asarray(value)
    if arr.ndim != 2:
        raise InvalidArgumentError(name, f"must be a 2-D matrix, got shape {arr.shape}")
    limits.check_entries(name, arr.shape, "the 0/1 matrix")
    if arr.size and not np.all((arr == 0) | (arr == 1)):
        raise InvalidArgumentError(name, "must contain only 0 and 1 entries")
    return arr.astype(np.int64)


def check_finite_array(name: str, value: Any, *, ndim: int | None = None, dtype=float) -> np.ndarray:
    """Return ``value`` as a NumPy array with only finite entries.

    >>> check_finite_array("B", [[10 ** 400]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: B: cannot be converted to float64 (an entry is beyond the range of float64 ...)
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (OverflowError, TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            name,
            f"cannot be converted to {np.dtype(dtype).name} (an entry is beyond the "
            f"range of {np.dtype(dtype).name} or not a number)",
        ) from exc
    if ndim is not None and arr.ndim != ndim:
        raise InvalidArgumentError(name, f"must be {ndim}-D, got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError(name, "contains NaN or inf")
    return arr


def check_mask(name: str, value: Any, n: int) -> np.ndarray:
    """A boolean mask of length ``n`` (1-D) or a batch of masks (2-D, ``(count, n)``)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists, objects numpy cannot read
        raise InvalidArgumentError(name, f"cannot be read as a mask ({exc})") from None
    limits.check_entries(name, arr.shape, "the straggler mask")  # logical size: a zero-stride view counts
    if arr.dtype != np.bool_:
        if arr.size and not np.all((arr == 0) | (arr == 1)):
            raise InvalidArgumentError(name, "must be a boolean mask (or 0/1 entries)")
        arr = arr.astype(bool)
    if arr.ndim not in (1, 2) or arr.shape[-1] != n:
        raise InvalidArgumentError(name, f"must have shape ({n},) or (count, {n}), got {arr.shape}")
    return arr


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` as a Python bool, or raise naming ``name``.

    Only ``True``/``False`` (and NumPy booleans) are accepted: a string such as
    ``"yes"`` or ``"False"``, or an integer, is truthy or falsy by accident and
    is refused.

    >>> check_bool("existence", False)
    False
    >>> check_bool("existence", "yes")
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: existence: must be True or False, got 'yes'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(name, f"must be True or False, got {value!r}")
    return bool(value)


def check_int_array(
    name: str,
    value: Any,
    *,
    ndim: int | None = None,
    what: str = "the integer array",
    limit_name: str = "MAX_DENSE_ENTRIES",
) -> np.ndarray:
    """Return ``value`` as an int64 array of integers, or raise naming ``name``.

    The logical size (a zero-stride view counts every entry; a list its length) is checked
    against ``gcsim.limits.<limit_name>`` before anything is copied or converted.  Only
    integers are accepted: a boolean (``True`` is not the integer 1 here), a float that is not
    whole (``4.5`` is never truncated to 4), a string (``'124'`` is not ``[1, 2, 4]``) or an
    entry beyond int64 is refused.  Whole floats (``4.0``) are accepted, as by :func:`check_int`.

    >>> check_int_array("base", [1, 2, 4.0]).tolist()
    [1, 2, 4]
    >>> check_int_array("base", [1, 2, 4.5])
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: base: must hold integers only, got 4.5
    >>> check_int_array("base", [True, 2, 4])
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: base: must hold integers only, got True
    """
    if isinstance(value, (str, bytes, bytearray)):
        raise InvalidArgumentError(name, f"must be an array of integers, got the string {value!r:.40}")
    if isinstance(value, (set, frozenset, range)) or (
        not hasattr(value, "shape") and not isinstance(value, (list, tuple)) and hasattr(value, "__iter__")
    ):
        if hasattr(value, "__len__"):
            limits.check_entries(name, (len(value),), what, limit_name=limit_name)
            value = list(value)
        else:
            raise InvalidArgumentError(name, f"must be a list or an array of integers, got {type(value).__name__}")
    elif isinstance(value, (list, tuple)):
        limits.check_entries(name, (len(value),), what, limit_name=limit_name)  # before NumPy measures it
    limits.check_entries(name, limits.array_shape(value), what, limit_name=limit_name)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(name, f"cannot be read as an array of integers ({exc})") from None
    if ndim is not None and arr.ndim != ndim:
        raise InvalidArgumentError(name, f"must be a {ndim}-D array of integers, got shape {arr.shape}")
    if not isinstance(value, np.ndarray) and arr.dtype.kind in "iuf" and arr.size:
        # a list mixing True with integers reads as int64: look at each entry's type (C-speed scan)
        entries = np.asarray(value, dtype=object).flat
        flags = [type(x) in (bool, np.bool_) for x in entries]
        if any(flags):
            raise InvalidArgumentError(name, f"must hold integers only, got {entries[flags.index(True)]!r}")
    kind = arr.dtype.kind
    if kind in "iu":
        if kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise InvalidArgumentError(name, "holds an entry beyond the range of int64")
        return arr.astype(np.int64)
    if kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.trunc(arr)) | (np.abs(arr) >= 2.0**63)
        if arr.size and np.any(bad):
            raise InvalidArgumentError(name, f"must hold integers only, got {float(arr[bad].flat[0])!r}")
        return arr.astype(np.int64)
    if kind == "O":
        out = np.empty(arr.shape, dtype=np.int64)
        flat = out.reshape(-1)
        for i, x in enumerate(arr.flat):
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
                raise InvalidArgumentError(name, f"must hold integers only, got {x!r:.40}")
            if not isinstance(x, numbers.Integral):
                if not math.isfinite(float(x)) or not float(x).is_integer():
                    raise InvalidArgumentError(name, f"must hold integers only, got {float(x)!r}")
            xi = int(x)  # type: ignore[call-overload]  # a numbers.Real, checked above
            if not -(2**63) <= xi < 2**63:
                raise InvalidArgumentError(name, f"holds an entry beyond the range of int64: {_shown_int(xi)}")
            flat[i] = xi
        return out
    shown = "True/False" if kind == "b" else arr.dtype.name
    raise InvalidArgumentError(name, f"must hold integers only, got an array of {shown}")


_fmt_count = limits._fmt  # one format for the counts of every size message


def check_dense_size(name: str, rows: int, cols: int, what: str = "the matrix") -> None:
    """Refuse a dense ``rows x cols`` matrix beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries.

    Called *before* anything is allocated; ``name`` is the argument that makes
    the object this large.

    >>> check_dense_size("v", 91, 91)
    >>> check_dense_size("v", 10009, 10009, "the adjacency matrix of SRG(10009, ...)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: v: ... would be a dense 10,009 x 10,009 matrix (100,180,081 entries), over ...
    """
    entries = int(rows) * int(cols)
    if entries > limits.MAX_DENSE_ENTRIES:
        raise SizeLimitError(
            name,
            f"{what} would be a dense {_fmt_count(int(rows))} x {_fmt_count(int(cols))} matrix "
            f"({_fmt_count(entries)} entries), over gcsim's limit of {_fmt_count(limits.MAX_DENSE_ENTRIES)} "
            "entries (gcsim.limits.MAX_DENSE_ENTRIES)",
            requested=entries,
            limit=limits.MAX_DENSE_ENTRIES,
            limit_name="MAX_DENSE_ENTRIES",
        )


def check_count(name: str, count: int, what: str, limit_name: str = "MAX_PATTERNS", hint: str = "") -> None:
    """Refuse an enumeration of ``count`` items beyond ``gcsim.limits.<limit_name>``.

    >>> check_count("s", 10, "straggler patterns")
    >>> check_count("s", 10 ** 19, "straggler patterns C(91, 20)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: s: 10,000,000,000,000,000,000 straggler patterns C(91, 20) to enumerate, over ...
    """
    limit = getattr(limits, limit_name)
    if int(count) > limit:
        count_text = f"{int(count):,}" if int(count) < 10**30 else _fmt_count(int(count))
        raise SizeLimitError(
            name,
            f"{count_text} {what} to enumerate, over gcsim's limit of {limit:,} "
            f"(gcsim.limits.{limit_name})" + (f"; {hint}" if hint else ""),
            requested=int(count),
            limit=limit,
            limit_name=limit_name,
        )


def layout_version_problem(metadata: Any, key: str, version: int) -> str | None:
    """Why ``metadata[key]`` is not the bundle layout ``version`` this gcsim reads, or None when it is.

    The version must be that integer itself: ``true`` (equal to 1 in Python) or ``1.0`` is refused.

    >>> layout_version_problem({"v": 1}, "v", 1) is None, layout_version_problem({}, "v", 1)
    (True, 'unknown v None (this gcsim reads 1)')
    >>> layout_version_problem({"v": True}, "v", 1)
    'unknown v True (this gcsim reads 1)'
    """
    got = metadata.get(key) if hasattr(metadata, "get") else None
    ok = type(got) is int and got == version
    return None if ok else f"unknown {key} {got!r:.40} (this gcsim reads {version})"


def check_declared_arrays(kind: str, arrays: Any, metadata: Any) -> None:
    """Refuse a bundle that lacks an array its metadata declares (``metadata["arrays"]``).

    Objects whose arrays are partly optional (a scheme's reference decoder, a model's per-worker
    probabilities) list the names they wrote, so a file that lost one is refused instead of being
    rebuilt as a different object.

    >>> check_declared_arrays("scheme", {"B": 1}, {"arrays": ["B", "decoder"]})
    Traceback (most recent call last):
    ...
    gcsim.errors.CatalogueError: scheme: the bundle lacks the array(s) ['decoder'] its metadata declares
    """
    declared = metadata.get("arrays") if hasattr(metadata, "get") else None
    if declared is None:
        return
    if not isinstance(declared, (list, tuple)) or not all(isinstance(a, str) for a in declared):
        raise CatalogueError(f"{kind}: metadata 'arrays' must be a list of array names, got {declared!r}")
    missing = sorted(set(declared) - set(arrays))
    if missing:
        raise CatalogueError(f"{kind}: the bundle lacks the array(s) {missing} its metadata declares")


def file_kind(path: Any) -> str | None:
    """What an existing path is when it is neither a regular file nor a folder, else None.

    A FIFO, a device or a socket (directly or through a symbolic link) is named as such, so a
    loader can say "is a FIFO (named pipe), not a regular file" instead of "no such file" or a
    misleading complaint about the bytes it would read (a link to ``/dev/zero`` reads as endless
    zeros).

    >>> file_kind("/dev/null"), file_kind("/"), file_kind("/no/such/path")
    ('a character device', None, None)
    """
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, word in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return word
    return "not a regular file"
