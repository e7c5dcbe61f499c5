"""The CERAR ring on real arrays: all ``N`` workers at once, round by round, in any array namespace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array_api import asarray as _asarray, check_gradients as _check_gradients, infer_namespace as _infer, to_numpy
from ..cerar.design import CerarDesign
from ..cerar.ring import SCHEDULES, check_lean, encode, packet_size, run_ring, run_ring_lean
from ..cerar.traffic import cerar_bytes
from ..errors import InvalidArgumentError

__all__ = ["run_cerar", "CerarRun"]


@dataclass(frozen=True, eq=False)
class CerarRun:
    """Result of :func:`run_cerar`.

    Attributes
    ----------
    outputs : array (N, d)
        ``ĝ_i`` of every worker.
    errors : numpy.ndarray (N,)
        Measured ``‖ĝ_i − Σ_j g_j‖²``.
    predicted_errors : numpy.ndarray (N,)
        ``‖Σ_m E_{i,m} G_{i−m}‖_F²`` from the design's error operators.
    expected_isotropic : numpy.ndarray (N,)
        ``w Σ_m ‖E_{i,m}‖_F²``: mean of ``errors`` over isotropic unit-variance gradients.
    bytes_sent : numpy.ndarray (N,)
        ``L · w · itemsize`` per worker (:func:`gcsim.cerar.traffic.cerar_bytes`).
    rounds : int
    packet_size : int
        ``w = ceil(d/c)``.
    backend : str
    schedule : str
        ``"default"`` or ``"lean"`` (docs/theory.md §51.4).
    """

    outputs: Any
    errors: np.ndarray
    predicted_errors: np.ndarray
    expected_isotropic: np.ndarray
    bytes_sent: np.ndarray
    rounds: int
    packet_size: int
    backend: str
    schedule: str = "default"


def run_cerar(
    design: Any, gradients: Any, *, xp: Any = None, dtype: str = "float64", schedule: str = "default"
) -> CerarRun:
    """Run the CERAR ring protocol on ``N`` real buffers (all workers at once, round by round).

    Worker ``i`` sends ``s_i^(t) = x_i^(t) + u_i^(t−1)`` to ``i+1``, strips its own symbol
    ``x_i^(t−N+1)`` from what it receives and accumulates ``D_i[:, t] u_i^(t)``
    (docs/theory.md §50), through :func:`gcsim.cerar.ring.run_ring`: the same lines as the
    simulator, in the namespace ``xp``.  Each worker sends ``L`` packets of ``w`` scalars.

    Parameters
    ----------
    design : gcsim.cerar.design.CerarDesign
    gradients : array (N, d)
    xp : None, "numpy", "cupy" or module
        Array namespace (default: CuPy for CuPy gradients, else NumPy).
    dtype : {"float64", "float32"}
        Working precision of the buffers.
    schedule : {"default", "lean"}
        ``"default"``: all ``c`` symbols encoded up front, the stripped sums decoded at the end
        (``3c + L + 2`` packets per worker, docs/theory.md §51.3).  ``"lean"``: each packet formed
        from the output state, ``s^(t) = A_i[t, :] a`` (:func:`gcsim.cerar.ring.run_ring_lean`):
        ``c + N + 2`` packets per worker at the peak, for designs with the shift pattern only
        (exact, Vandermonde, perturbation; others are refused, :func:`gcsim.cerar.ring.check_lean`).
        The same outputs in exact arithmetic; in floating point within the bounds of §51.4.

    Examples
    --------
    >>> from gcsim.cerar.factory import design
    >>> g = np.arange(12.0).reshape(3, 4)
    >>> r = run_cerar(design(3, 2, "exact"), g)
    >>> bool(r.errors.max() < 1e-20), r.bytes_sent.tolist(), r.rounds
    (True, [48, 48, 48], 3)
    >>> lean = run_cerar(design(3, 2, "exact"), g, schedule="lean")
    >>> bool(np.abs(lean.outputs - r.outputs).max() < 1e-12), lean.schedule
    (True, 'lean')
    """
    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    if dtype not in ("float64", "float32"):
        raise InvalidArgumentError("dtype", f"must be 'float64' or 'float32', got {dtype!r}")
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise InvalidArgumentError("schedule", f"must be one of {SCHEDULES}, got {schedule!r}")
    if schedule == "lean":
        check_lean(design.encoders, design.decoders)
    N, c, L = design.N, design.c, design.L
    ns = _infer(xp, gradients)
    host = _check_gradients(gradients, N)
    d = host.shape[1]
    w = packet_size(d, c)
    wd = ns.float64 if dtype == "float64" else ns.float32
    item = 8 if dtype == "float64" else 4
    g = _asarray(ns, gradients, dtype=wd)
    if w * c != d:
        g = ns.concat([g, ns.zeros((N, w * c - d), dtype=wd)], axis=1)
    G = ns.reshape(g, (N, c, w))
    A = _asarray(ns, np.array(design.encoders), dtype=wd)  # writable copies: torch refuses read-only memory
    D = _asarray(ns, np.array(design.decoders), dtype=wd)
    if schedule == "lean":  # the state starts as a copy of G (G itself is needed for the errors below)
        state = ns.asarray(G, copy=True)
        run_ring_lean([state[:, k, :] for k in range(c)], design.encoders, design.decoders, xp=ns)
        out = state
    else:
        X = encode(A, G)  # all c symbols: (N, c, w)
        out = run_ring(X, G, D, xp=ns)  # the ring of gcsim.cerar.ring, in namespace ns
    sent = np.full(N, cerar_bytes(N, c, d, item), dtype=np.int64)  # L packets of w scalars per worker
    total = ns.sum(G, axis=0)
    diff = out - total[None, :, :]
    errors = to_numpy(ns.sum(ns.reshape(diff * diff, (N, c * w)), axis=1)).astype(np.float64)
    # prediction from the error operators: Σ_m E_{i,m} G_{i-m}
    E = _asarray(ns, design.error_operators(), dtype=ns.float64)  # (N, N-1, c, c)
    G64 = ns.astype(G, ns.float64)
    src = (np.arange(N)[:, None] - np.arange(1, N)[None, :]) % N  # (N, N-1)
    Gsrc = G64[_asarray(ns, src.reshape(-1), dtype=ns.int64), ...]
    Gsrc = ns.reshape(Gsrc, (N, N - 1, c, w))
    P = ns.sum(E @ Gsrc, axis=1)  # (N, c, w)
    predicted = to_numpy(ns.sum(ns.reshape(P * P, (N, c * w)), axis=1)).astype(np.float64)
    Eh = design.error_operators()
    expected = w * np.sum(Eh * Eh, axis=(1, 2, 3))
    outputs = ns.reshape(out, (N, c * w))[:, :d]
    return CerarRun(
        outputs=outputs,
        errors=errors,
        predicted_errors=predicted,
        expected_isotropic=expected,
        bytes_sent=sent,
        rounds=L,
        packet_size=w,
        backend=ns.__name__,
        schedule=schedule,
    )
