"""One Jacobi-preconditioned conjugate-gradient kernel with a pluggable stopping test (theory §44).

Both sparse RD routes solve ``Γ_{F'F'} X = H_{F'}`` (``m`` right-hand sides a pattern) by
Jacobi-preconditioned CG: the certified errors of
:class:`~gcsim.coding.sparse_evaluator.SparseRDContext` (a batch of patterns, each retired when
its enclosure is tight enough) and the decoders of
:func:`gcsim.coding.structured_decoders.structured_decoder` (one pattern, restarted from the true
residual until Theorem 44.7 certifies it).  :func:`jacobi_pcg` is the iteration they share, in
one order of operations; each caller supplies the operator, the preconditioner and its stopping
test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["jacobi_pcg"]


def _ratio(num: Any, den: Any, ns: Any) -> Any:
    """``num / den`` where ``den > 0``, else 0 (no division by a non-positive number is formed)."""
    pos = den > 0
    return ns.where(pos, num / ns.where(pos, den, ns.ones_like(den)), ns.zeros_like(den))


def jacobi_pcg(
    gram: Callable[[Any, Any], Any],
    Minv: Any,
    X: Any,
    R: Any,
    stop: Callable[[int, Any], Any],
    *,
    max_iter: int,
    it: int = 0,
    batched: bool = False,
    P: Any = None,
    rz: Any = None,
    ns: Any = np,
) -> int:
    """Jacobi-preconditioned CG steps on ``Γ X = H`` from ``X`` and its residual ``R`` (updated in place).

    One step, column by column: ``α = ⟨r, z⟩ / ⟨p, Γp⟩`` (0 where ``⟨p, Γp⟩ <= 0``),
    ``x += αp``, ``r −= αΓp``, ``z = M⁻¹r``, ``β = ⟨r', z'⟩ / ⟨r, z⟩`` (0 where ``⟨r, z⟩ <= 0``),
    ``p = z + βp``; then ``stop`` is asked.

    Parameters
    ----------
    gram : callable
        ``gram(P, idx) -> Γ P`` for the directions ``P`` of the members ``idx`` (``slice(None)``
        unless ``batched`` and some members are retired).
    Minv : array
        The inverse Jacobi diagonal, broadcast against ``R`` (zero off the rows solved for).
    X, R : array
        The iterate and its residual ``H − Γ X``, ``(n, c)`` or, ``batched``, ``(count, n, c)``;
        both are updated in place (the caller's arrays: ``R`` must not alias ``H``).
    stop : callable
        ``stop(it, idx) -> done`` after each step, ``X`` and ``R`` holding its values: a bool, or,
        ``batched``, a bool array over the members ``idx`` (those done are retired).
    max_iter : int
        Step count at which the iteration stops.
    it : int
        Steps already taken (a restart continues the count).
    batched : bool
        ``X`` and ``R`` stack independent systems along a leading axis (the reductions run over
        axis 1), each retired when ``stop`` says so.
    P, rz : array, optional
        The first direction and ``⟨r, z⟩`` per column (default ``M⁻¹R`` and ``Σ R ∘ M⁻¹R``).
    ns : namespace
        The array namespace of the arrays (NumPy by default).

    Returns
    -------
    int
        The step count reached.

    Examples
    --------
    >>> G = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> H = np.array([[1.0], [2.0]])
    >>> X, R = np.zeros((2, 1)), H.copy()
    >>> steps = jacobi_pcg(lambda P, idx: G @ P, 1 / np.diag(G)[:, None], X, R,
    ...                    lambda it, idx: float(np.abs(R).max()) < 1e-12, max_iter=10)
    >>> steps, np.allclose(G @ X, H)
    (2, True)
    """
    axis = 1 if batched else 0
    expand = (slice(None),) * axis + (None,)  # a per-column scalar against the (…, n, c) arrays
    if P is None:
        P = Minv * R
        rz = ns.sum(R * P, axis=axis)
    active = np.ones(R.shape[0], dtype=bool) if batched else None
    while it < max_iter and (active is None or active.any()):
        # a slice (views, no copies) while every member is active
        idx: Any = slice(None) if active is None or active.all() else np.flatnonzero(active)
        Pi = P[idx]
        AP = gram(Pi, idx)
        alpha = _ratio(rz[idx], ns.sum(Pi * AP, axis=axis), ns)[expand]
        X[idx] += alpha * Pi
        R[idx] -= alpha * AP
        Z = Minv[idx] * R[idx]
        rz2 = ns.sum(R[idx] * Z, axis=axis)
        P[idx] = Z + _ratio(rz2, rz[idx], ns)[expand] * Pi
        rz[idx] = rz2
        it += 1
        done = stop(it, idx)
        if active is None:
            if done:
                break
        else:
            active[np.arange(active.size)[idx][done]] = False
    return it
