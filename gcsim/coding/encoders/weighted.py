"""Weighted graph codes (theory §48.2): block ``k`` is ``W diag(d_k) / w̄``.

``W`` (``N x n``, ``W >= 0`` integer: an object's ``.weights``, e.g.
:func:`gcsim.combinatorics.expanders.weighted_margulis_gabber_galil`, or the matrix itself) has
its support as the assignment and ``w̄ = (1/N) Σ_ij W_ij``.  For ``m = 1``, ``d_0 = 1``: ``B = W/d``
for a ``d``-regular multigraph, the normalized adjacency code of Raviv et al. 2018, with reference
decoder ``1_n`` (rescaled by ``n/|F|`` it is theirs).  For ``m >= 2`` the ``d_k`` are RD(ε) diagonals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidArgumentError, VerificationError
from ._common import diagonals, second_moment, stack
from ._registry import Encoder


def mean_weight(W: np.ndarray) -> float:
    """``w̄ = (1/N) Σ_ij W_ij``, the mean weighted replication (``d`` for a ``d``-regular multigraph)."""
    return float(W.sum()) / W.shape[0]


def build(W: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``W diag(d_k) / w̄``; reference decoder ``x_l = d_l / E[d²]`` (theory §48.2)."""
    n = W.shape[1]
    if m == 1:
        if eps:
            raise InvalidArgumentError("eps", "the m = 1 weighted code B = W/w̄ draws nothing; eps must be 0")
        D = np.ones((1, n))
        second = 1.0
        info: dict[str, Any] = {}
    else:
        dist = opts.pop("dist", "rademacher")
        D = diagonals(rng, m, n, eps, dist)
        second = second_moment(eps, dist)
        info = {"dist": dist}
    w = mean_weight(W)
    B = stack(W.astype(float), D) / w
    # x_l = d_l / E[d²]: B X0 = T when every row of W sums to w̄ and m = 1 (theory §48.2)
    X0 = D.T / second
    info["mean_weight"] = w
    return B, X0, D, info, {"weights": W}


def verify(scheme: Any, name: str) -> None:
    """``W >= 0`` integer with support ``A``, and ``B = stack(W diag(d_k)) / w̄`` bit for bit."""
    if "weights" not in scheme.extras:
        return
    W = np.asarray(scheme.extras["weights"])
    D = scheme.diagonals
    if W.shape != scheme.assignment.shape or W.dtype.kind not in "iu" or np.any(W < 0):
        raise VerificationError(f"{name}: the weights must be a non-negative integer N x n matrix")
    if not np.array_equal((W > 0).astype(np.int64), scheme.assignment):
        raise VerificationError(f"{name}: the assignment is not the support of the weights")
    if D is None or D.shape != (scheme.m, scheme.n):
        raise VerificationError(f"{name}: the diagonals d_k must be an (m, n) array")
    if not np.array_equal(stack(W.astype(float), D) / mean_weight(W), scheme.B):
        raise VerificationError(f"{name}: B is not the stack of W diag(d_k) / w̄")


def _example() -> tuple[Any, int, dict[str, Any]]:
    # a 3-regular multigraph with loops on 3 vertices (the module's doctest)
    return np.array([[2, 1, 0], [1, 0, 2], [0, 2, 1]]), 2, {"eps": 0.1, "seed": 1}


ENCODERS = (
    Encoder(
        "weighted",
        build,
        "weighted graph code: block k is W diag(d_k) / w̄ for integer multiplicities W (d_0 = 1 at m = 1)",
        theory="§48.2",
        stores="diagonals",
        randomized=True,
        uses_eps=True,
        options=("dist",),
        reads="weights",
        verify=verify,
        bounds=("spectral_decoder_upper",),
        example=_example,
        order=110,
    ),
)
