"""Worker-scaled null-space encoder (theory §40.4): block ``k`` is ``c_k A diag(v_k)``.

``v_k`` lies in the (numerical) null space of every ``A diag(v_i)``, ``i < k``, so the cross-talk
vanishes; one global factor ``c_k`` per block fits ``A (v_k ∘ v_k)`` to ``1`` in least squares and
the residual ``‖B X_0 - T‖_F^2`` is reported (cross-talk and diagonal mismatch separately).  The
authors' per-part normalization, exact at ``s = 0``, is ``"hadamard-ns"`` (theory §41).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import VerificationError
from ._common import diagonals, stack, target_matrix
from ._registry import Encoder
from .classic import cyclic_repetition_assignment
from .ns import needs_replication


def build(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """The null-space recursion of theory §40.4 with one least-squares scale per block."""
    dist = opts.pop("dist", "rademacher")
    N, n = A.shape
    Af = A.astype(float)
    D = diagonals(rng, m, n, eps, dist)
    V = np.zeros((m, n))
    V[0] = D[0]
    nullity = []
    for k in range(1, m):
        # constraints A diag(v_i) v_k = 0 for all i < k
        M = np.vstack([Af * V[i][None, :] for i in range(k)])
        _, sv, Vt = np.linalg.svd(M, full_matrices=True)
        tol = max(M.shape) * np.finfo(float).eps * (sv[0] if sv.size else 1.0)
        rank = int((sv > tol).sum())
        basis = Vt[rank:]
        if basis.shape[0] == 0:
            basis = Vt[-1:]  # no exact null space: least cross-talk direction
        nullity.append(int(Vt.shape[0] - rank))
        v = D[k] @ basis.T @ basis  # random element of the (approximate) null space
        if np.linalg.norm(v) <= 1e-12 * np.linalg.norm(D[k]):
            v = basis[0]  # the draw was (numerically) orthogonal to the null space
        V[k] = v / np.linalg.norm(v) * np.sqrt(n)
    # scale each v_k so that A (v_k o v_k) is as close to 1 as possible
    for k in range(m):
        a = Af @ (V[k] ** 2)
        if np.dot(a, a) > 0:
            V[k] *= np.sqrt(max(a.sum() / np.dot(a, a), 0.0))
    B = stack(Af, V)
    X0 = V.T.copy()
    R = B @ X0 - target_matrix(m, N)
    blocks = R.reshape(m, N, m)
    diag_mask = np.eye(m, dtype=bool)[:, None, :].repeat(N, axis=1)
    info = {
        "dist": dist,
        "residual": float(np.sum(R**2)),
        "diagonal_mismatch": float(np.sum(blocks[diag_mask] ** 2)),
        "crosstalk": float(np.sum(blocks[~diag_mask] ** 2)),
        "nullity": nullity,
    }
    return B, X0, V, info, {}


def verify(scheme: Any, name: str) -> None:
    """With its vectors, ``B`` is the stack of ``A diag(v_k)`` bit for bit and ``X_0 = [v_1, ..., v_m]``."""
    V = scheme.extras.get("vectors")
    if V is None:
        return
    V = np.asarray(V, dtype=float)
    if V.shape != (scheme.m, scheme.n) or not np.array_equal(stack(np.asarray(scheme.assignment, float), V), scheme.B):
        raise VerificationError(f"{name}: B is not the stack of A diag(v_k) of its vectors")
    if scheme.decoder is not None and not np.array_equal(scheme.decoder, V.T):
        raise VerificationError(f"{name}: the reference decoder is not X_0 = [v_1, ..., v_m]")


ENCODERS = (
    Encoder(
        "ns-worker",
        build,
        "worker-scaled null space: block k is c_k A diag(v_k), v_k in the null space of the earlier blocks",
        theory="§40.4",
        stores="vectors",
        randomized=True,
        uses_eps=True,
        options=("dist",),
        verify=verify,
        applies=needs_replication,
        advisor=4,
        example=lambda: (cyclic_repetition_assignment(6, 2), 2, {"eps": 0.1, "seed": 1}),
        order=40,
    ),
)
