"""The CERAR ring protocol, written once against the array API (docs/theory.md §50).

Every implementation of the ring runs these lines: the simulator
(:func:`gcsim.cerar.protocol.simulate`, NumPy with optional bfloat16 emulation), the executor on
real arrays (:func:`gcsim.executor.cerar_arrays.run_cerar`, NumPy, CuPy or torch) and the
torch.distributed collective (:func:`gcsim.executor.collectives.cerar_all_reduce`, one rank at a
time).  They differ only in the array namespace passed and in how a packet travels (an in-memory
roll over the worker axis, or a real ``isend``/``irecv``).

Protocol (indices mod N, rounds t = 1..L, L = c + N - 2, packets of w = ceil(d/c) scalars):

* worker i holds G_i in R^{c x w} (row k = k-th contiguous chunk of its zero-padded gradient)
  and its coded symbols x_i^(tau) = A_i[tau, :] G_i (tau = 1..c);
* u_i^(0) = 0; in round t worker i sends s_i^(t) = x_i^(t) + u_i^(t-1) (just u_i^(t-1) once
  t > c) to worker i+1, receives r = s_{i-1}^(t) and strips its own symbol,
  u_i^(t) = r - x_i^(t-N+1) (when 1 <= t-N+1 <= c-1; x^(c) never comes back);
* output g_hat_i = G_i + sum_t D_i[:, t] u_i^(t) = G_i + D_i U_i.

Invariant: u_i^(t) = sum_{m=1}^{N-1} x_{i-m}^(t-m+1), so that
g_hat_i = sum_j G_j + sum_m E_{i,m} G_{i-m} with E_{i,m} = D_i S_{m-1} A_{i-m} - I_c.

Arrays carry the symbol axis second to last: ``X[..., tau, :]`` is symbol tau + 1, for one
worker (shape (c, w)) or all N at once (shape (N, c, w)).  ``rnd`` is applied after every
arithmetic step (identity in native precision; bfloat16 rounding in the simulator's emulation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_finite_array
from ..errors import InvalidArgumentError

__all__ = [
    "num_rounds",
    "packet_size",
    "shift_matrix",
    "check_host_gradients",
    "split_gradients",
    "encode",
    "packet",
    "strip",
    "decode",
    "accumulate_round",
    "run_ring",
]

Rounding = Callable[[Any], Any]


def _identity(a: Any) -> Any:
    return a


def num_rounds(N: int, c: int) -> int:
    """L = c + N - 2, the number of communication rounds."""
    return int(c) + int(N) - 2


def packet_size(d: int, c: int) -> int:
    """w = ceil(d / c), the scalars per packet (the gradient is zero-padded to c w)."""
    return -(-int(d) // int(c))


def shift_matrix(L: int, c: int, s: int) -> np.ndarray:
    """S_s in {0,1}^{L x c} with (S_s)[tau + s, tau] = 1 for tau = 0..c-1 (0-based).

    Examples
    --------
    >>> shift_matrix(4, 3, 1).astype(int)
    array([[0, 0, 0],
           [1, 0, 0],
           [0, 1, 0],
           [0, 0, 1]])
    """
    S = np.zeros((L, c))
    tau = np.arange(c)
    rows = tau + s
    ok = rows < L
    S[rows[ok], tau[ok]] = 1.0
    return S


def check_host_gradients(gradients: Any, N: int) -> np.ndarray:
    """Validate host gradients: a finite real array of shape (N, d), returned as float64."""
    g = np.asarray(gradients)
    if g.dtype == object or np.iscomplexobj(g) or not (np.issubdtype(g.dtype, np.number) or g.dtype == bool):
        raise InvalidArgumentError("gradients", f"must be a real numeric array, got dtype {g.dtype}")
    g = check_finite_array("gradients", g, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != N:
        raise InvalidArgumentError("gradients", f"must have shape (N, d) = ({N}, d), got {g.shape}")
    return g


def split_gradients(g: np.ndarray, c: int, dtype: Any = np.float64) -> np.ndarray:
    """G (N, c, w): each row of the host array ``g`` (N, d) zero-padded to c w and cut into c chunks."""
    N, d = g.shape
    w = packet_size(d, c)
    G = np.zeros((N, c * w), dtype=dtype)
    G[:, :d] = g
    return G.reshape(N, c, w)


def encode(A: Any, G: Any, *, xp: Any = None, rnd: Rounding | None = None) -> Any:
    """All c coded symbols X = A G (x^(tau) = A[tau, :] G), for one worker or stacked workers.

    With ``rnd`` (emulated low precision) the product is formed column by column, rounding each
    product ``A[tau, k] G[k]`` and each partial sum; ``xp`` (the namespace) is then needed for
    the zero start.

    Examples
    --------
    >>> encode(np.eye(2), np.arange(4.0).reshape(2, 2)).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    if rnd is None:
        return A @ G
    c = A.shape[-1]
    X = xp.zeros((*A.shape[:-1], G.shape[-1]), dtype=G.dtype)
    for k in range(c):  # one rounded product and one rounded add per column k
        X = rnd(X + rnd(A[..., :, k, None] * G[..., None, k, :]))
    return X


def packet(X: Any, u: Any, t: int, rnd: Rounding = _identity) -> Any:
    """The packet sent in round t: s^(t) = x^(t) + u^(t-1) for t <= c, else u^(t-1)."""
    c = X.shape[-2]
    return rnd(X[..., t - 1, :] + u) if t <= c else u


def strip(r: Any, X: Any, t: int, N: int, rnd: Rounding = _identity) -> Any:
    """u^(t) from the received packet r: r - x^(t-N+1) when the own symbol comes back, else r."""
    c = X.shape[-2]
    k = t - N  # 0-based index of the returning symbol x^(t-N+1)
    return rnd(r - X[..., k, :]) if 0 <= k < c - 1 else r


def decode(G: Any, D: Any, U: Any) -> Any:
    """g_hat = G + D U with U (..., L, w) the stripped sums of every round (one batched product)."""
    return G + D @ U


def accumulate_round(state: Any, D: Any, u: Any, t: int, rnd: Rounding = _identity) -> Any:
    """Add round t's decoded contribution D[:, t] u^(t) to the output state (the protocol's order)."""
    return rnd(state + rnd(D[..., :, t - 1, None] * u[..., None, :]))


def run_ring(
    X: Any,
    G: Any,
    D: Any,
    *,
    xp: Any,
    rnd: Rounding = _identity,
    per_round: bool = False,
    on_round: Callable[[int, Any, Any], None] | None = None,
) -> Any:
    """All N workers at once, round by round: the in-memory ring (a packet moves by a roll).

    Parameters
    ----------
    X : array (N, c, w)
        Coded symbols of every worker (:func:`encode`).
    G : array (N, c, w)
        The workers' split gradients (the output state starts there).
    D : array (N, c, L)
        Decoders.
    xp : namespace
        Array namespace of the arrays (NumPy, CuPy, torch through array-api-compat).
    rnd : callable
        Rounding after every arithmetic step (identity for native precision).
    per_round : bool
        Accumulate D_i[:, t] u_i^(t) in every round (:func:`accumulate_round`), as a worker would;
        otherwise store the u_i^(t) and :func:`decode` once at the end (same value in exact
        arithmetic).
    on_round : callable, optional
        ``on_round(t, s, u)`` after round t with the packets sent and the stripped sums.

    Returns
    -------
    array (N, c, w)
        g_hat_i of every worker.
    """
    N, c, w = X.shape
    L = num_rounds(N, c)
    u = xp.zeros((N, w), dtype=X.dtype)
    state = G if per_round else None
    U = []
    for t in range(1, L + 1):
        s = packet(X, u, t, rnd)
        r = xp.roll(s, 1, axis=0)  # worker i receives from i-1
        u = strip(r, X, t, N, rnd)
        if per_round:
            state = accumulate_round(state, D, u, t, rnd)
        else:
            U.append(u)
        if on_round is not None:
            on_round(t, s, u)
    if per_round:
        return state
    return decode(G, D, xp.stack(U, axis=1))
