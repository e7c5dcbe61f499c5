"""The CERAR design object: encoders A_i and decoders D_i of a ring of N workers.

Protocol recap (SPEC §5, a reconstruction consistent with the source abstract):
worker i splits its gradient into c components (rows of G_i in R^{c x w}),
sends coded symbols x_i^(tau) = A_i[tau,:] G_i (tau = 1..c) around the ring for
L = c + N - 2 rounds, and decodes with D_i in R^{c x L}.  The error operator from
worker i-m to worker i is

    E_{i,m} = D_i S_{m-1} A_{i-m} - I_c,      m = 1..N-1,

with the shift matrix S_s in {0,1}^{L x c}, (S_s)[tau+s, tau] = 1 (0-based).
The output of worker i is  g_hat_i = sum_j G_j + sum_m E_{i,m} G_{i-m}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_int
from ..errors import InvalidArgumentError

__all__ = ["CerarDesign", "shift_matrix", "num_rounds", "error_operators"]


def num_rounds(N: int, c: int) -> int:
    """L = c + N - 2, the number of communication rounds."""
    return int(c) + int(N) - 2


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


@dataclass
class CerarDesign:
    """Encoders and decoders of a CERAR ring.

    Attributes
    ----------
    N : int
        Number of workers on the ring (N >= 2).
    c : int
        Number of components each gradient is split into (c >= 1).
    encoders : ndarray, shape (N, c, c)
        ``encoders[j]`` is A_j; coded symbol tau of worker j is ``A_j[tau] @ G_j``.
    decoders : ndarray, shape (N, c, L)
        ``decoders[i]`` is D_i.
    method : str
        Construction name ("exact", "vandermonde", "perturbation", "optimized", ...).
    params : dict
        Construction parameters (eps, kappa, seed, solver, ...).
    """

    N: int
    c: int
    encoders: np.ndarray
    decoders: np.ndarray
    method: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.N = check_int("N", self.N, minimum=2)
        self.c = check_int("c", self.c, minimum=1)
        enc = np.asarray(self.encoders)
        dec = np.asarray(self.decoders)
        for name, arr in (("encoders", enc), ("decoders", dec)):
            if np.iscomplexobj(arr) or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
                raise InvalidArgumentError(name, f"must be a real numeric array, got dtype {arr.dtype}")
        enc = enc.astype(float)
        dec = dec.astype(float)
        if enc.shape != (self.N, self.c, self.c):
            raise InvalidArgumentError("encoders", f"must have shape (N, c, c) = {(self.N, self.c, self.c)}, got {enc.shape}")
        if dec.shape != (self.N, self.c, self.L):
            raise InvalidArgumentError("decoders", f"must have shape (N, c, L) = {(self.N, self.c, self.L)}, got {dec.shape}")
        for name, arr in (("encoders", enc), ("decoders", dec)):
            bad = ~np.isfinite(arr)
            if np.any(bad):
                where = tuple(int(x) for x in np.argwhere(bad)[0])
                raise InvalidArgumentError(name, f"contain NaN or inf ({int(bad.sum())} entries, first at "
                                                 f"index {where})")
        self.encoders = enc
        self.decoders = dec

    @property
    def L(self) -> int:
        """Number of rounds, c + N - 2."""
        return num_rounds(self.N, self.c)

    def error_operators(self) -> np.ndarray:
        """E[i, m-1] = D_i S_{m-1} A_{(i-m) mod N} - I_c, shape (N, N-1, c, c)."""
        return error_operators(self.encoders, self.decoders)


def error_operators(encoders: np.ndarray, decoders: np.ndarray) -> np.ndarray:
    """Batched error operators E_{i,m} = D_i S_{m-1} A_{i-m} - I (shape (N, N-1, c, c)).

    D_i S_{m-1} is the column window D_i[:, m-1 : m-1+c], so no shift matrix is formed.
    """
    N, c, _ = encoders.shape
    m = np.arange(1, N)
    i = np.arange(N)
    # windows[i, m-1] = D_i[:, m-1 : m-1+c]
    cols = (m - 1)[:, None] + np.arange(c)[None, :]            # (N-1, c)
    windows = decoders[:, :, cols]                             # (N, c, N-1, c)
    windows = np.moveaxis(windows, 2, 1)                       # (N, N-1, c, c)
    src = (i[:, None] - m[None, :]) % N                        # (N, N-1)
    prod = windows @ encoders[src]                             # (N, N-1, c, c)
    return prod - np.eye(c)
