"""Random diagonal encoder RD(ε) (theory §5.4): block ``k`` is ``A diag(d_k)``.

``d_k[j] = σ_kj (1 + ε ξ_kj)``, ``σ`` Rademacher (``dist="rademacher"``, default) or ``N(0, 1)``
(``dist="gaussian"``), ``ξ ~ U[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import VerificationError
from ..bounds import rd_moments
from ..decoders import rd_unbiased_decoders
from ._common import diagonals, second_moment, stack
from ._registry import Encoder, UnbiasedDecoder
from .classic import cyclic_repetition_assignment


def derive(rng: np.random.Generator, m: int, n: int, eps: float, options: Any) -> np.ndarray:
    """The ``(m, n)`` diagonals ``d_k[j] = σ_kj (1 + ε ξ_kj)``: the first draw from the seeded generator."""
    return diagonals(rng, m, n, eps, options.get("dist", "rademacher"))


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """RD(ε) blocks; unbiased-type reference decoder ``x_l = d_l / (r̄ E[d^2])`` (theory §45)."""
    dist = opts.pop("dist", "rademacher")
    D = derive(rng, m, A.shape[1], eps, {"dist": dist})
    B = stack(A.astype(float), D)
    X0 = D.T / (A.sum(axis=1).mean() * second_moment(eps, dist))
    return B, X0, D, {"dist": dist}, {}


def verify(scheme: Any, name: str) -> None:
    """With its diagonals, block ``k`` of ``B`` is exactly ``A diag(d_k)``."""
    D = scheme.diagonals
    if D is None:
        return
    A = np.asarray(scheme.assignment)
    if D.shape != (scheme.m, scheme.n) or not np.array_equal(stack(A.astype(float), D), scheme.B):
        raise VerificationError(f"{name}: B is not the stack of A diag(d_k) of its diagonals")


def unbiased_decoders(D: np.ndarray, masks: np.ndarray, r: int, p: np.ndarray, eps: float, options: Any) -> np.ndarray:
    """``X[j, l] = 1[j∈F] d_l[j] / ((1 − p_j) r μ₂)`` (theory §45, Theorem 5)."""
    mu2, _ = rd_moments(eps, options.get("dist", "rademacher"))
    return rd_unbiased_decoders(D, masks, r, p, mu2)


def draw(rng: np.random.Generator, count: int, A: np.ndarray, m: int, eps: float, options: Any):
    """``count`` RD encoders in one batch: block ``k`` of sample ``s`` is ``A diag(D[s, k])``."""
    N, n = A.shape
    D = diagonals(rng, count * m, n, eps, options.get("dist", "rademacher")).reshape(count, m, n)
    B = (A[None, None] * D[:, :, None, :]).reshape(count, m * N, n)
    return B, D


ENCODERS = (
    Encoder(
        "rd",
        build,
        "random diagonals RD(ε): block k is A diag(d_k), d_k Rademacher or Gaussian times (1 + ε ξ)",
        theory="§5.4",
        stores="diagonals",
        randomized=True,
        uses_eps=True,
        options=("dist",),
        verify=verify,
        advisor=2,
        column_scaled_m1=True,
        bounds=("rd_upper", "spectral_rd_upper"),
        diagonal_stack=True,
        derive=derive,
        unbiased=UnbiasedDecoder("RD", unbiased_decoders, draw, regular=True),
        example=lambda: (cyclic_repetition_assignment(6, 2), 2, {"seed": 1}),
        order=20,
    ),
)
