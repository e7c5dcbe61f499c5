"""The naive encoder ``B = 1_m ⊗ A`` (theory §5.4): every block row equals the assignment."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import VerificationError
from ._registry import Encoder
from .classic import cyclic_repetition_assignment


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``B = 1_m ⊗ A``; reference decoder ``X_0 = 1 / (m r̄)`` (the best multiple of ``1`` for regular ``r``)."""
    B = np.tile(A.astype(float), (m, 1))
    X0 = np.full((A.shape[1], m), 1.0 / (m * A.sum(axis=1).mean()))
    return B, X0, None, {}, {}


def verify(scheme: Any, name: str) -> None:
    """``B`` equals ``1_m ⊗ A`` bit for bit."""
    A = np.asarray(scheme.assignment)
    if not np.array_equal(scheme.B, np.tile(A.astype(float), (scheme.m, 1))):
        raise VerificationError(f"{name}: B is not 1_m ⊗ A")


def example() -> tuple[Any, int, dict[str, Any]]:
    """``(assignment, m, options)`` of a small instance: the cyclic (6, 2) assignment at ``m = 2``."""
    return cyclic_repetition_assignment(6, 2), 2, {}


ENCODERS = (
    Encoder(
        "naive",
        build,
        "B = 1_m ⊗ A: every block row is the assignment (the baseline)",
        theory="§5.4",
        randomized=False,
        verify=verify,
        advisor=1,
        column_scaled_m1=True,
        baseline=True,
        example=example,
        order=10,
    ),
)
