"""Arrays of gcsim objects as torch tensors: the one conversion behind every ``to_torch()`` method.

``Scheme.to_torch``, ``CerarDesign.to_torch`` and ``DecoderTable.to_torch`` (docs/guides/executor.md
§2) hand their NumPy arrays to :func:`to_torch_tensors`, which copies them into new tensors
(the objects' arrays are read-only; a tensor sharing their memory would be writable), casts the
floating-point ones to the requested dtype and places everything on the requested device.
Integer and boolean arrays (assignments, straggler patterns) keep their dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._optional import require
from ..errors import InvalidArgumentError

__all__ = ["to_torch_tensors", "FLOAT_DTYPES"]

#: names accepted for ``dtype`` (besides a floating ``torch.dtype``)
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _float_dtype(torch: Any, dtype: Any) -> Any:
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in FLOAT_DTYPES:
        return getattr(torch, dtype)
    if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
        return dtype
    raise InvalidArgumentError("dtype", f"must be one of {FLOAT_DTYPES} or a floating torch.dtype, got {dtype!r}")


def to_torch_tensors(
    arrays: Mapping[str, np.ndarray], *, dtype: Any = None, device: Any = None, what: str = "to_torch"
) -> dict[str, Any]:
    """Copy NumPy arrays into torch tensors (floating ones cast to ``dtype``), on ``device``.

    Parameters
    ----------
    arrays : mapping of str to ndarray
    dtype : str or torch.dtype, optional
        Floating dtype of the floating arrays (``"float32"``, ``torch.bfloat16``, ...); None keeps
        theirs (float64).  Integer and boolean arrays keep their dtype.
    device : str or torch.device, optional
        Where the tensors live (``"cpu"``, ``"cuda:0"``, ...); None: torch's default device.
    what : str
        The caller, named in the message when torch is missing.

    Returns
    -------
    dict of str to torch.Tensor
        Same keys, new tensors (writable; changing them leaves the object alone).

    Raises
    ------
    MissingDependencyError
        torch is not installed (``pip install 'gcsim[torch]'``).
    InvalidArgumentError
        A ``dtype`` that is not a floating dtype, or a ``device`` torch does not know or cannot use.

    Examples
    --------
    >>> t = to_torch_tensors({"A": np.eye(2), "mask": np.array([True, False])}, dtype="float32")
    >>> t["A"].dtype, t["mask"].dtype
    (torch.float32, torch.bool)
    """
    torch = require("torch", "torch", what)
    fdtype = _float_dtype(torch, dtype)
    try:
        dev = None if device is None else torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InvalidArgumentError("device", f"is not a torch device: {device!r} ({exc})") from None
    out: dict[str, Any] = {}
    for key, value in arrays.items():
        a = np.asarray(value)
        target = fdtype if (fdtype is not None and np.issubdtype(a.dtype, np.floating)) else None
        try:
            out[key] = torch.tensor(a, dtype=target, device=dev)  # a copy, never a view of read-only memory
        except (RuntimeError, AssertionError) as exc:  # e.g. "Torch not compiled with CUDA enabled"
            raise InvalidArgumentError("device", f"{device!r} cannot be used here ({exc})") from None
    return out
