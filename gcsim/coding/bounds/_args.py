"""Argument checks shared by the bound functions of this package.

Most bounds take some of one signature -- an assignment, ``m``, a non-straggler mask batch or a
number of stragglers ``s``, ``normalized``, the RD entry distribution ``(eps, dist, moments)`` and
the worst-case search's ``(exact_limit, seed, restarts)`` -- and :func:`bound_args` checks whichever
of them a bound takes, always in that order and with the same errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import check_binary_matrix, check_bool, check_finite_array, check_int, check_mask
from ...errors import ImpossibleParametersError, InvalidArgumentError
from .moments import resolve_moments

#: "this bound has no such argument" (``None`` is a value to refuse, not an absent argument)
_NA: Any = object()


@dataclass(frozen=True)
class BoundArgs:
    """The checked arguments of a bound (``None`` where the bound has no such argument)."""

    A: Any  # the 0/1 assignment (N, n), numpy.ndarray
    m: Any  # int >= 1
    masks: Any  # bool (count, n): the non-straggler masks as a 2-D batch
    single: bool  # the masks were given as one 1-D mask
    s: Any  # int, 0 <= s <= n
    f: Any  # n - s, the number of arrived workers
    normalized: bool
    moments: Any  # (E d^2, E d^4) of the RD entries
    exact_limit: Any
    seed: Any
    restarts: Any


def bound_args(
    assignment: Any = _NA,
    m: Any = _NA,
    *,
    nonstragglers: Any = _NA,
    s: Any = _NA,
    workers: int | None = None,
    normalized: Any = _NA,
    rd: tuple[Any, Any, Any] | None = None,
    search: tuple[Any, Any, Any] | None = None,
) -> BoundArgs:
    """Check a bound's arguments in the order ``assignment``, ``m``, ``nonstragglers``, ``s``,
    ``normalized``, ``rd = (eps, dist, moments)``, ``search = (exact_limit, seed, restarts)``.

    ``workers`` is the number of workers ``n`` when no ``assignment`` is given (closed forms).

    Examples
    --------
    >>> a = bound_args([[1, 1, 0], [0, 1, 1]], 2, s=1, rd=(0.0, "rademacher", None))
    >>> a.m, a.s, a.f, a.moments
    (2, 1, 2, (1.0, 1.0))
    """
    A = _assignment(assignment) if assignment is not _NA else None
    n = A.shape[1] if A is not None else workers
    if m is not _NA:
        m = check_int("m", m, minimum=1)
    masks, single = (None, False)
    if nonstragglers is not _NA:
        assert n is not None  # a bound with masks passes its assignment or workers=
        masks, single = _masks("nonstragglers", nonstragglers, n)
    f = None
    if s is not _NA:
        s = check_int("s", s, minimum=0, maximum=n)
        f = n - s
    flag = check_bool("normalized", normalized) if normalized is not _NA else False
    moments = resolve_moments(*rd) if rd is not None else None
    exact_limit = seed = restarts = None
    if search is not None:
        exact_limit = check_int("exact_limit", search[0], minimum=1)
        seed = check_int("seed", search[1], minimum=0)
        restarts = check_int("restarts", search[2], minimum=1)
    return BoundArgs(
        A,
        None if m is _NA else m,
        masks,
        single,
        None if s is _NA else s,
        f,
        flag,
        moments,
        exact_limit,
        seed,
        restarts,
    )


def _assignment(value: Any, name: str = "assignment") -> np.ndarray:
    """The 0/1 assignment of an array, a combinatorial object or a scheme."""
    arr = getattr(value, "assignment", value)
    A = check_binary_matrix(name, arr)
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise InvalidArgumentError(name, f"must have at least one part and one worker, got shape {A.shape}")
    return A


def _counts(masks: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``c[t, i] = |F_t ∩ W_i|``, the non-stragglers holding part ``i``, as int64.

    A float64 BLAS product (exact: every partial sum is an integer <= n < 2^53), some 50 times
    faster than NumPy's integer matmul at n ~ 10^3 (which has no BLAS kernel).
    """
    return np.rint(masks.astype(np.float64) @ A.T.astype(np.float64)).astype(np.int64)


def _masks(name: str, value: Any, n: int) -> tuple[np.ndarray, bool]:
    """Masks as a 2-D boolean batch, and whether the input was a single 1-D mask."""
    arr = check_mask(name, value, n)
    single = arr.ndim == 1
    return np.atleast_2d(arr), single


def _out(values: np.ndarray, single: bool):
    return values[0].item() if single else values


def _regular_replication(A: np.ndarray) -> int:
    r = A.sum(axis=1)
    if r.min() != r.max() or r[0] == 0:
        raise InvalidArgumentError(
            "assignment", f"needs regular replication r_i = r > 0 for every part, got r in [{r.min()}, {r.max()}]"
        )
    return int(r[0])


def _encoder_with(scheme_or_B: Any, name: str, value: Any, missing: str) -> tuple[np.ndarray, Any]:
    """``B`` (finite, 2-D) of a scheme or an array, and ``value``, else the scheme's attribute ``name``."""
    B = check_finite_array("scheme_or_B", getattr(scheme_or_B, "B", scheme_or_B), ndim=2)
    if value is None:
        value = getattr(scheme_or_B, name, None)
        if value is None:
            raise InvalidArgumentError(name, missing)
    return B, value


def _encoder_and_m(scheme_or_B: Any, m: Any) -> tuple[np.ndarray, int]:
    """``B`` (``mN x n``, finite) and ``m`` from a scheme (``.B``, ``.m``) or an array and ``m=``."""
    B, m = _encoder_with(scheme_or_B, "m", m, "pass m= (the number of blocks) with a bare encoding matrix")
    m = check_int("m", m, minimum=1)
    if B.shape[0] == 0 or B.shape[1] == 0 or B.shape[0] % m:
        raise InvalidArgumentError("scheme_or_B", f"must have shape (m N, n) with m = {m} dividing mN, got {B.shape}")
    return B, m


def _encoder_and_reference_decoder(scheme_or_B: Any, decoder: Any) -> tuple[np.ndarray, np.ndarray]:
    """``B`` (``mN x n``) and ``X_0`` (``n x m``, ``m`` dividing ``mN``) from a scheme or arrays, checked."""
    B, decoder = _encoder_with(scheme_or_B, "decoder", decoder, "the scheme has no reference decoder; pass decoder=")
    X0 = check_finite_array("decoder", decoder, ndim=2)
    mN, n = B.shape
    if X0.shape[0] != n or X0.shape[1] < 1 or mN % X0.shape[1]:
        raise InvalidArgumentError("decoder", f"must have shape ({n}, m) with m dividing {mN}, got {X0.shape}")
    return B, X0


def _check_symmetric_bibd(v, k, lam):
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=1, maximum=v)
    lam = check_int("lam", lam, minimum=0, maximum=k)
    if lam * (v - 1) != k * (k - 1):
        raise ImpossibleParametersError(
            "symmetric BIBD identity lambda (v - 1) = k (k - 1)",
            f"(v, k, lam) = ({v}, {k}, {lam}): {lam}*{v - 1} != {k}*{k - 1}",
        )
    return v, k, lam
