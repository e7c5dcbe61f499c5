"""The classic ``m = 1`` codes: Tandon et al.'s fractional repetition and cyclic MDS codes, and ``B = A``.

``"fractional-repetition"``, ``"cyclic-mds"``
    Tandon, Lei, Dimakis & Karampatziakis (ICML 2017), ``m = 1`` exact codes for ``s`` stragglers
    (``s`` is read off the assignment).
``"bibd-optimal"``
    ``B = A`` with ``m = 1`` and optimal decoding (Kadhe, Koyluoglu & Ramchandran 2019).
``"expander"``
    ``B = A`` with ``m = 1`` (Raviv, Tamo, Tandon & Dimakis 2018; Glasgow & Wootters 2021).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_dense_size, check_int
from ...errors import InvalidArgumentError, VerificationError
from ._registry import Encoder

__all__ = ["fractional_repetition_assignment", "cyclic_repetition_assignment"]


def fractional_repetition_assignment(n: int, s: int) -> np.ndarray:
    """Tandon et al. fractional repetition assignment (``N = n`` parts, ``(s+1) | n``).

    Workers form ``n/(s+1)`` groups of ``s+1``; every worker of group ``g``
    holds the ``s+1`` parts ``g(s+1) .. g(s+1)+s``.

    Examples
    --------
    >>> fractional_repetition_assignment(4, 1).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    check_dense_size("n", n, n, "the n x n assignment")
    if n % (s + 1):
        raise InvalidArgumentError("s", f"fractional repetition needs (s+1) | n, got n={n}, s={s}")
    g = np.arange(n) // (s + 1)
    return (g[:, None] == g[None, :]).astype(np.int64)


def cyclic_repetition_assignment(n: int, s: int) -> np.ndarray:
    """Cyclic assignment: worker ``j`` holds parts ``j, j+1, .., j+s`` (mod n), ``N = n``.

    Examples
    --------
    >>> cyclic_repetition_assignment(3, 1).tolist()
    [[1, 0, 1], [1, 1, 0], [0, 1, 1]]
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    check_dense_size("n", n, n, "the n x n assignment")
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return (((i - j) % n) <= s).astype(np.int64)


def _m1(m: int, name: str) -> None:
    if m != 1:
        raise InvalidArgumentError("m", f"method {name!r} is an m = 1 code, got m = {m}")


def build_fractional(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``B = A`` on a fractional repetition assignment; reference decoder: one worker per group."""
    _m1(m, "fractional-repetition")
    N, n = A.shape
    load = A.sum(axis=0)
    cols = {tuple(c) for c in A.T.tolist()}
    supports = [np.array(c) for c in cols]
    disjoint = np.array_equal(np.sum(supports, axis=0), np.ones(N))
    if not (disjoint and np.all(load == load[0])):
        raise InvalidArgumentError(
            "assignment",
            "fractional repetition needs workers in groups with identical, disjoint "
            "supports covering all parts (see fractional_repetition_assignment)",
        )
    X0 = np.zeros((n, 1))
    for c in supports:
        X0[int(np.flatnonzero((A.T == c).all(axis=1))[0]), 0] = 1.0
    return A.astype(float), X0, None, {"s": int(A.sum(axis=1).min()) - 1}, {}


def build_cyclic_mds(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """Tandon et al.'s cyclic MDS code: columns in ``null(H_c)``, ``H_c 1 = 0``, so any ``n - s`` columns span 1."""
    _m1(m, "cyclic-mds")
    N, n = A.shape
    s = int(A.sum(axis=0)[0]) - 1
    if N != n or not np.array_equal(A, cyclic_repetition_assignment(n, s)):
        raise InvalidArgumentError(
            "assignment",
            "cyclic-mds needs the cyclic repetition assignment (worker j holds parts "
            "j..j+s mod n; see cyclic_repetition_assignment)",
        )
    Hc = rng.standard_normal((s, n))
    Hc[:, -1] = -Hc[:, :-1].sum(axis=1)
    B = np.zeros((N, n))
    for j in range(n):
        sup = (j + np.arange(s + 1)) % n
        b = np.ones(s + 1)
        if s:
            b[1:] = np.linalg.solve(Hc[:, sup[1:]], -Hc[:, sup[0]])
        B[sup, j] = b
    X0 = np.linalg.lstsq(B, np.ones((N, 1)), rcond=None)[0]
    return B, X0, None, {"s": s}, {}


def _build_assignment(name: str):
    def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
        """``B = A`` (``m = 1``); reference decoder ``1 / r̄``."""
        _m1(m, name)
        return A.astype(float), np.full((A.shape[1], 1), 1.0 / A.sum(axis=1).mean()), None, {}, {}

    return build


def verify_assignment(scheme: Any, name: str) -> None:
    """``B = A`` bit for bit (``m = 1``)."""
    if scheme.m != 1 or not np.array_equal(scheme.B, np.asarray(scheme.assignment, dtype=float)):
        raise VerificationError(f"{name}: B is not the assignment A (m = 1)")


def verify_cyclic_mds(scheme: Any, name: str) -> None:
    """The cyclic assignment, ``B[j, j] = 1`` (each column's leading coefficient) and ``1_N`` in the span of ``B``."""
    A = np.asarray(scheme.assignment)
    N, n = A.shape
    s = int(A.sum(axis=0)[0]) - 1
    if scheme.m != 1 or N != n or not np.array_equal(A, cyclic_repetition_assignment(n, s)):
        raise VerificationError(f"{name}: the assignment is not a cyclic repetition assignment (m = 1)")
    B = scheme.B
    if not np.array_equal(B[np.arange(n), np.arange(n)], np.ones(n)):
        raise VerificationError(f"{name}: the leading coefficient B[j, j] of some column is not 1")
    x = np.linalg.lstsq(B, np.ones(N), rcond=None)[0]
    # 1 is a combination of the columns (Tandon et al.'s code decodes exactly with no straggler)
    if np.linalg.norm(B @ x - 1.0) > 1e3 * n * np.finfo(float).eps * max(1.0, np.linalg.norm(x) * np.abs(B).max()):
        raise VerificationError(f"{name}: 1_N is not in the column span of B")


def verify_fractional(scheme: Any, name: str) -> None:
    """``B = A`` and the reference decoder (one worker per group) decodes exactly: ``B X_0 = 1``."""
    verify_assignment(scheme, name)
    X0 = scheme.decoder
    if X0 is not None and not np.array_equal(scheme.B @ X0, np.ones((scheme.num_parts, 1))):
        raise VerificationError(f"{name}: the reference decoder does not give B X_0 = 1")


ENCODERS = (
    Encoder(
        "fractional-repetition",
        build_fractional,
        "Tandon et al.'s fractional repetition code (m = 1, exact for s stragglers)",
        theory="§5.4",
        randomized=False,
        verify=verify_fractional,
        m1_only=True,
        example=lambda: (fractional_repetition_assignment(6, 1), 1, {}),
        order=70,
    ),
    Encoder(
        "cyclic-mds",
        build_cyclic_mds,
        "Tandon et al.'s cyclic MDS code (m = 1, exact for s stragglers; random H_c)",
        theory="§5.4",
        randomized=True,
        verify=verify_cyclic_mds,
        m1_only=True,
        example=lambda: (cyclic_repetition_assignment(6, 2), 1, {"seed": 1}),
        order=80,
    ),
    Encoder(
        "bibd-optimal",
        _build_assignment("bibd-optimal"),
        "B = A with m = 1 and optimal decoding (Kadhe, Koyluoglu & Ramchandran 2019)",
        theory="§5.4",
        randomized=False,
        verify=verify_assignment,
        m1_only=True,
        m1_is_assignment=True,
        column_scaled_m1=True,
        example=lambda: (cyclic_repetition_assignment(6, 2), 1, {}),
        order=90,
    ),
    Encoder(
        "expander",
        _build_assignment("expander"),
        "B = A with m = 1 (Raviv, Tamo, Tandon & Dimakis 2018; Glasgow & Wootters 2021)",
        theory="§5.4",
        randomized=False,
        verify=verify_assignment,
        m1_only=True,
        m1_is_assignment=True,
        column_scaled_m1=True,
        example=lambda: (cyclic_repetition_assignment(6, 2), 1, {}),
        order=100,
    ),
)
