"""Helpers shared by the encoders: reading an assignment, RD diagonals, block stacks (theory §5.4)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_binary_matrix, check_dense_size, check_int
from ...errors import InvalidArgumentError
from ...limits import check_entries

__all__ = ["target_matrix", "as_assignment", "as_weights", "diagonals", "stack", "second_moment", "short"]


def target_matrix(m: int, N: int) -> np.ndarray:
    """The decoding target ``T = I_m ⊗ 1_N`` of shape ``(m*N, m)``.

    Examples
    --------
    >>> target_matrix(2, 2).astype(int).tolist()
    [[1, 0], [1, 0], [0, 1], [0, 1]]
    """
    m = check_int("m", m, minimum=1)
    N = check_int("N", N, minimum=1)
    check_dense_size("m", m * N, m, "the decoding target T = I_m ⊗ 1_N")
    return np.kron(np.eye(m), np.ones((N, 1)))


def short(indices: Any, limit: int = 12) -> str:
    """``[i, j, ...]`` of at most ``limit`` indices (and how many in all), for error messages."""
    items = [int(i) for i in np.asarray(indices).ravel()]
    text = ", ".join(map(str, items[:limit]))
    if len(items) > limit:
        text += f", ... ({len(items)} in all)"
    return "[" + text + "]"


def as_assignment(assignment_or_design: Any) -> np.ndarray:
    """The 0/1 assignment of a matrix or of any object with ``.assignment`` (every part held)."""
    obj = getattr(assignment_or_design, "assignment", assignment_or_design)
    if obj is None:
        raise InvalidArgumentError("assignment", "must be a 0/1 matrix or an object with .assignment")
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise InvalidArgumentError("assignment", f"cannot be read as a matrix ({exc})") from None
    if arr.dtype == object:
        raise InvalidArgumentError("assignment", "must be a numeric 0/1 matrix")
    check_entries("assignment", arr.shape, "the 0/1 assignment")  # logical size, before isfinite copies
    if arr.size and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError("assignment", "contains NaN or inf")
    A = check_binary_matrix("assignment", arr)
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise InvalidArgumentError("assignment", f"must have at least one part and one worker, got shape {A.shape}")
    empty = np.flatnonzero(A.sum(axis=1) == 0)
    if empty.size:
        raise InvalidArgumentError("assignment", f"parts {short(empty)} are held by no worker")
    return A


def as_weights(assignment_or_design: Any) -> np.ndarray:
    """The non-negative integer weights ``W`` of an object's ``.weights``, else of ``.assignment`` or a matrix."""
    obj = getattr(assignment_or_design, "weights", None)
    if obj is None:
        obj = getattr(assignment_or_design, "assignment", assignment_or_design)
    if obj is None:
        raise InvalidArgumentError("assignment", "must be a non-negative integer matrix or an object with .weights")
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise InvalidArgumentError("assignment", f"cannot be read as a matrix ({exc})") from None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise InvalidArgumentError("assignment", f"weights must be a numeric 2-D matrix, got {arr.dtype} {arr.shape}")
    if arr.size and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError("assignment", "weights contain NaN or inf")
    if arr.size and (np.any(arr < 0) or np.any(arr != np.round(arr))):
        raise InvalidArgumentError("assignment", "weights must be non-negative integers (edge multiplicities)")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InvalidArgumentError("assignment", f"must have at least one part and one worker, got shape {arr.shape}")
    if arr.size and float(np.abs(arr).max()) >= 2**31:
        raise InvalidArgumentError("assignment", "weights must be below 2**31")
    W = arr.astype(np.int64)
    empty = np.flatnonzero(W.sum(axis=1) == 0)
    if empty.size:
        raise InvalidArgumentError("assignment", f"parts {short(empty)} are held by no worker")
    return W


def diagonals(rng: np.random.Generator, m: int, n: int, eps: float, dist: str) -> np.ndarray:
    """``d_k[j] = σ_kj (1 + ε ξ_kj)`` as an ``(m, n)`` array (theory §5.4).

    ``σ`` Rademacher (``dist="rademacher"``) or standard Gaussian (``dist="gaussian"``), ``ξ ~ U[-1, 1]``.
    """
    if dist == "rademacher":
        sigma = rng.choice(np.array([-1.0, 1.0]), size=(m, n))
    elif dist == "gaussian":
        sigma = rng.standard_normal((m, n))
    else:
        raise InvalidArgumentError("dist", f"must be 'rademacher' or 'gaussian', got {dist!r}")
    xi = rng.uniform(-1.0, 1.0, size=(m, n))
    return sigma * (1.0 + eps * xi)


def stack(A: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``B`` with block ``k`` equal to ``A diag(D[k])``."""
    return (A[None, :, :] * D[:, None, :]).reshape(D.shape[0] * A.shape[0], A.shape[1])


def second_moment(eps: float, dist: str) -> float:
    """``E[d^2]`` for one RD entry: ``E[σ^2] (1 + ε^2/3)`` with ``E[σ^2] = 1`` for both distributions."""
    return 1.0 + eps * eps / 3.0
