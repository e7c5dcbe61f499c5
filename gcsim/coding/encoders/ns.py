"""Null-space / Hadamard encoder NS (theory §40.4, reconstruction).

Draw a reference decoder ``X_0`` (columns = RD diagonals); the ``m`` rows of part ``i`` on its
holders ``N_i`` are ``V_i^+`` with ``V_i = X_0[N_i, :]``, so that ``B X_0 = T`` exactly.  Needs
``r_i >= m``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import NotConstructibleError, VerificationError
from ._common import diagonals, short, target_matrix
from ._registry import Encoder
from .classic import cyclic_repetition_assignment


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``C_i = V_i^+`` per part, batched over parts of equal replication; ``X_0`` the RD diagonals."""
    dist = opts.pop("dist", "rademacher")
    N, n = A.shape
    r = A.sum(axis=1)
    low = np.flatnonzero(r < m)
    if low.size:
        raise NotConstructibleError(
            f"NS encoder needs replication r_i >= m = {m}; parts {short(low)} have r_i = {short(r[low])}"
        )
    X0 = diagonals(rng, m, n, eps, dist).T  # (n, m), columns x_l = d_l
    B = np.zeros((m * N, n))
    bad = []
    for ri in np.unique(r):
        parts = np.flatnonzero(r == ri)
        holders = np.array([np.flatnonzero(A[i]) for i in parts])  # (p, ri)
        V = X0[holders]  # (p, ri, m)
        sv = np.linalg.svd(V, compute_uv=False)
        deficient = sv[:, -1] <= sv[:, 0] * max(ri, m) * np.finfo(float).eps * 10
        bad.extend(parts[deficient].tolist())
        C = np.linalg.pinv(V)  # (p, m, ri), C_i V_i = I_m when rank V_i = m
        rows = np.arange(m)[None, :, None] * N + parts[:, None, None]  # (p, m, 1)
        B[rows, holders[:, None, :]] = C
    if bad:
        raise NotConstructibleError(
            f"NS encoder: V_i = X_0[N_i, :] has rank < m for parts {short(np.array(bad))} "
            f"(unlucky draw); try another seed, eps > 0 or dist='gaussian'"
        )
    return B, X0, X0.T.copy(), {"dist": dist}, {}


def verify(scheme: Any, name: str) -> None:
    """``C_i = V_i⁺`` with ``V_i = X_0[N_i, :]`` of rank m, so ``B X_0 = T`` (theory §40.4).

    Part ``i``'s m rows of ``B X_0 - T`` are ``C_i V_i - I_m``, which a backward-stable
    pseudo-inverse makes of size ``O(u κ(V_i))``; the bound below allows ``64 max(r_i, m)``
    such units, far below the O(1) residual of any other matrix on the same support.
    """
    X0 = scheme.decoder
    if X0 is None:
        return
    A, m, N = np.asarray(scheme.assignment), scheme.m, scheme.num_parts
    R = (scheme.B @ X0 - target_matrix(m, N)).reshape(m, N, m)
    for i in range(N):
        V = X0[np.flatnonzero(A[i])]
        sv = np.linalg.svd(V, compute_uv=False)
        if sv.size < m or sv[-1] <= 0:
            raise VerificationError(f"{name}: V_{i} = X_0[N_{i}, :] has rank < m")
        tol = 64 * max(V.shape[0], m) * np.finfo(float).eps * (sv[0] / sv[-1])
        if np.abs(R[:, i, :]).max() > tol:
            raise VerificationError(
                f"{name}: part {i}: B X_0 differs from T by {np.abs(R[:, i, :]).max():.3g} "
                f"> {tol:.3g} (C_i is not the pseudo-inverse of V_i)"
            )


def needs_replication(A: np.ndarray, m: int) -> str | None:
    """Why NS-type encoders are not tried: a part held by fewer than ``m`` workers."""
    r_min = int(A.sum(axis=1).min())
    return f"needs replication r_i >= m = {m}; r_min = {r_min}" if r_min < m else None


ENCODERS = (
    Encoder(
        "ns",
        build,
        "null space: part i's rows are the pseudo-inverse of X_0 on its holders, so B X_0 = T (r_i >= m)",
        theory="§40.4",
        stores="vectors",
        randomized=True,
        uses_eps=True,
        options=("dist",),
        verify=verify,
        applies=needs_replication,
        advisor=3,
        example=lambda: (cyclic_repetition_assignment(6, 2), 2, {"eps": 0.1, "seed": 1}),
        order=30,
    ),
)
