"""The exact communication-efficient family (Ye & Abbe 2018; Kadhe et al. 2020; theory §40.5).

``B = P H`` with ``H`` in ``R^{(n-s) x n}``, every ``(n-s)``-column submatrix invertible; it decodes
exactly from any ``n - s`` workers.  Needs ``r_i >= s + m``.  Option ``s`` (default 0);
``"exact-vandermonde"`` also takes ``nodes`` ("chebyshev" | "equispaced" | an array).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..._validation import check_finite_array, check_int
from ...errors import InvalidArgumentError, NotConstructibleError, VerificationError
from ._common import short, target_matrix
from ._registry import Encoder
from .classic import cyclic_repetition_assignment


def _vandermonde_nodes(n: int, nodes: Any) -> np.ndarray:
    if isinstance(nodes, str):
        # zero is never a node: H[:, j] = e_0 would clash with p[:m] = e_k (see _build)
        if nodes == "chebyshev":
            deg = n + (n % 2)  # an even degree has no root at 0
            return np.cos(np.pi * (2 * np.arange(deg) + 1) / (2 * deg))[:n]
        if nodes == "equispaced":
            pts = np.linspace(-1.0, 1.0, n + (n % 2) + 1)
            return pts[np.abs(pts) > 1e-12][:n]
        raise InvalidArgumentError("nodes", f"must be 'chebyshev', 'equispaced' or an array, got {nodes!r}")
    z = check_finite_array("nodes", nodes, ndim=1)
    if z.shape != (n,):
        raise InvalidArgumentError("nodes", f"must have length n = {n}, got {z.shape}")
    if np.unique(z).size != n:
        raise InvalidArgumentError("nodes", "must be distinct")
    if np.any(z == 0):
        raise InvalidArgumentError("nodes", "must be non-zero (a zero node cannot be orthogonalized away)")
    return z


def _build(A: np.ndarray, m: int, rng: np.random.Generator, opts: dict[str, Any], vandermonde: bool):
    N, n = A.shape
    s = check_int("s", opts.pop("s", 0), minimum=0, maximum=n - m)
    r = A.sum(axis=1)
    low = np.flatnonzero(r < s + m)
    if low.size:
        raise NotConstructibleError(
            f"exact family needs replication r_i >= s + m = {s + m}; parts {short(low)} have r_i = {short(r[low])}"
        )
    f = n - s
    if vandermonde:
        z = _vandermonde_nodes(n, opts.pop("nodes", "chebyshev"))
        H = z[None, :] ** np.arange(f)[:, None]  # H[a, j] = z_j^a
        extras: dict[str, Any] = {"nodes": z}
        kappa = float(np.linalg.cond(H[:, :f]))
        if not np.isfinite(kappa) or kappa > 1e-3 / np.finfo(float).eps:
            warnings.warn(
                f"exact-vandermonde: κ(H_F) ≈ {kappa:.3g} for F = the first n - s workers; float64 "
                "cannot carry it (decoding will be inaccurate); consider 'exact-gaussian'",
                RuntimeWarning,
                stacklevel=4,
            )
    else:
        H = rng.standard_normal((f, n))
        extras = {}
    P = np.zeros((m * N, f))
    bad_parts: list[int] = []
    for i in range(N):
        out = np.flatnonzero(A[i] == 0)
        # rows of P for part i: p[:m] = e_k, p . H[:, j] = 0 for j outside N_i
        P[np.arange(m) * N + i, np.arange(m)] = 1.0
        if out.size:
            rhs = -H[:m, out].T  # (|out|, m): one right-hand side per block k
            M = H[m:, out].T
            sol, *_ = np.linalg.lstsq(M, rhs, rcond=None)
            resid = np.linalg.norm(M @ sol - rhs) / max(np.linalg.norm(rhs), 1.0)
            if not np.isfinite(resid) or resid > 1e-6:
                bad_parts.append(i)
            P[np.arange(m) * N + i, m:] = sol.T
    if bad_parts:
        raise NotConstructibleError(
            f"exact family: the support equations of parts {short(np.array(bad_parts))} have no solution "
            "(H is too ill-conditioned or degenerate); use fewer workers or 'exact-gaussian'"
        )
    B = P @ H
    B[np.tile(A, (m, 1)) == 0] = 0.0  # exact zeros off the support (round-off)
    extras.update({"H": H, "P": P})
    X0 = np.linalg.lstsq(B, target_matrix(m, N), rcond=None)[0]
    return B, X0, None, {"s": s}, extras


def build_vandermonde(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``H[a, j] = z_j^a`` on the nodes ``z`` (Chebyshev by default)."""
    return _build(A, m, rng, opts, vandermonde=True)


def build_gaussian(A: np.ndarray, m: int, rng: np.random.Generator, eps: float, opts: dict[str, Any]):
    """``H`` with i.i.d. standard Gaussian entries."""
    return _build(A, m, rng, opts, vandermonde=False)


def verify(scheme: Any, name: str) -> None:
    """With ``H`` and ``P`` in ``extras``, ``B = P H`` up to round-off."""
    extras = scheme.extras
    if "H" not in extras or "P" not in extras:
        return
    B = scheme.B
    PH = extras["P"] @ extras["H"]
    tol = 1e3 * max(B.shape) * np.finfo(float).eps * max(1.0, float(np.abs(PH).max(initial=0.0)))
    if PH.shape != B.shape or np.abs(PH - B).max(initial=0.0) > tol:
        raise VerificationError(f"{name}: B differs from P H")


_EXAMPLE = lambda: (cyclic_repetition_assignment(6, 2), 2, {"s": 1, "seed": 1})  # noqa: E731

ENCODERS = (
    Encoder(
        "exact-vandermonde",
        build_vandermonde,
        "exact family B = P H, H Vandermonde on Chebyshev nodes: exact from any n - s workers (r_i >= s + m)",
        theory="§40.5",
        randomized=False,
        options=("s", "nodes"),
        verify=verify,
        advisor=6,
        needs_s=True,
        example=_EXAMPLE,
        order=50,
    ),
    Encoder(
        "exact-gaussian",
        build_gaussian,
        "exact family B = P H, H Gaussian: exact from any n - s workers (r_i >= s + m)",
        theory="§40.5",
        randomized=True,
        options=("s",),
        verify=verify,
        advisor=5,
        needs_s=True,
        example=_EXAMPLE,
        order=60,
    ),
)
