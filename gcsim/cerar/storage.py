"""How much a CERAR worker must hold: the Hankel lower bound on its storage (docs/theory.md §51).

A schedule of the ring (which buffers a worker keeps, when it encodes, where it accumulates) is
*linear* when every buffer holds a fixed linear combination of the worker's inputs (its split
gradient G_i and the packets it has received) -- every engine of gcsim is.  Between round t and
round t + 1 such a worker must keep enough to produce everything it will still emit: the packets
s^(t+1..L) and its output g_hat_i, as functions of the *past* inputs (G_i, u^(1..t)) once the
future inputs are set to zero.  That map is the worker's Hankel matrix H_t (rows: the L - t
future packets and the c rows of the output; columns: G_i's c rows and the t stripped sums), and
no linear schedule holds fewer than h_t = rank H_t packets after round t (§51.1).  Its peak
max_t h_t is a lower bound on the storage of *every* linear schedule of the protocol:

* h_t <= c + min(t, L - t) for every design, with equality for generic (random dense) designs,
  so the peak is c + floor(L/2) packets > c + N once c >= N + 4 (the κ-optimized designs reach it
  or nearly: 13 at (4, 8), 25 at (8, 16) from the catalogue);
* designs built from a column function (exact, Vandermonde, perturbation; §50) satisfy
  A_i D_i[:, t] = e_{t+1} for t < c ("shift structure"), so h_t <= c + N - 1 (§51.2) -- in exact
  arithmetic.  Their float64 entries satisfy it only to rounding, so the rational rank of the
  stored design is generic again while H_t lies within rounding of rank c + N - 1.

Hence two numbers per worker and round: the rank (exact, for the coefficients as stored) and
the relative distance sigma_{c+N+1}(H_t) / sigma_1(H_t) of H_t from the matrices of rank
<= c + N (Eckart-Young): no linear schedule holding c + N packets reproduces the future of the
protocol to a relative error below it (§51.1, Corollary).

:func:`storage_lower_bound` computes every h_t exactly: the design's floating-point entries are
dyadic rationals, and the rank of H_t over the rationals is bounded below by its rank modulo a
prime (every minor that vanishes over Q vanishes mod p), computed in integer arithmetic.  So the
returned ranks are *certified lower bounds* -- what an impossibility statement needs -- and equal
the rational rank unless the prime divides every maximal non-zero minor (the test checks
against exact fractions).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import limits
from .._validation import check_int
from ..errors import InvalidArgumentError
from .design import CerarDesign
from .ring import num_rounds

__all__ = ["StorageBound", "storage_lower_bound", "hankel_matrix", "shift_structured", "generic_storage_peak"]

#: The Mersenne prime 2^31 - 1: residues below it multiply without overflow in int64.
PRIME = 2**31 - 1


def generic_storage_peak(N: int, c: int) -> int:
    """c + floor(L/2), L = c + N - 2: the peak of h_t for a generic design (§51.1), in packets.

    Examples
    --------
    >>> generic_storage_peak(4, 16), 16 + 4
    (25, 20)
    """
    return check_int("c", c, minimum=1) + num_rounds(N, c) // 2


def _check(design: Any, worker: int | None = None) -> CerarDesign:
    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    if worker is not None and not (isinstance(worker, (int, np.integer)) and 0 <= int(worker) < design.N):
        raise InvalidArgumentError("worker", f"must be an integer in [0, {design.N}), got {worker!r}")
    return design


def _hankel(A: Any, D: Any, N: int, t: int, zero: Any) -> list[list[Any]]:
    """Rows of H_t over any field whose elements support + - * (floats, Fractions, residues).

    Columns: G's c rows, then u^(1..t).  Future inputs (received packets after round t) are
    zero, so a future stripped sum is u^(k) = -x^(k-N+1) and a future packet s^(k) = x^(k) +
    u^(k-1) (x^(k) = A[k] G for k <= c).  ``zero`` is the field's 0 (reduction is the caller's).
    """
    c = len(A)
    L = c + N - 2
    n = c + t

    def unit(j: int) -> list[Any]:
        row = [zero] * n
        row[j] = zero + 1
        return row

    def symbol(k: int) -> list[Any]:  # x^(k), 1-based, as a row over the columns
        return list(A[k - 1]) + [zero] * t

    def u(k: int) -> list[Any]:  # u^(k) with the future inputs set to zero
        if k <= 0:
            return [zero] * n
        if k <= t:
            return unit(c + k - 1)
        back = k - N + 1  # the returning own symbol x^(k-N+1), stripped when 1 <= back <= c-1
        return [-v for v in symbol(back)] if 1 <= back <= c - 1 else [zero] * n

    rows = []
    for k in range(t + 1, L + 1):  # the future packets
        prev = u(k - 1)
        rows.append([a + b for a, b in zip(symbol(k), prev, strict=True)] if k <= c else prev)
    out = [unit(r) for r in range(c)]  # the output g_hat = G + sum_k D[:, k] u^(k)
    for k in range(1, L + 1):
        uk = u(k)
        for r in range(c):
            dk = D[r][k - 1]
            if dk != 0:
                out[r] = [a + dk * b for a, b in zip(out[r], uk, strict=True)]
    return rows + out


def hankel_matrix(design: CerarDesign, worker: int, t: int) -> np.ndarray:
    """H_t of one worker in float64: the past-to-future map after round t (§51.1).

    Shape (L - t + c, c + t): rows are the packets s^(t+1..L) and the c output rows, columns the
    c rows of G_i and the stripped sums u^(1..t), with every later received packet set to zero.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> hankel_matrix(design(3, 2, "exact"), 0, 1).shape
    (4, 3)
    """
    design = _check(design, worker)
    L = design.L
    if not (isinstance(t, (int, np.integer)) and 0 <= int(t) <= L):
        raise InvalidArgumentError("t", f"must be an integer in [0, L = {L}], got {t!r}")
    A = design.encoders[int(worker)].tolist()
    D = design.decoders[int(worker)].tolist()
    return np.array(_hankel(A, D, design.N, int(t), 0.0), dtype=float).reshape(L - int(t) + design.c, design.c + int(t))


def _residue(x: float) -> int:
    """The dyadic rational x (a finite float) modulo PRIME."""
    num, den = Fraction(x).as_integer_ratio()
    return num % PRIME * pow(den, -1, PRIME) % PRIME


def _rank_mod_p(M: np.ndarray) -> int:
    """Rank of an integer matrix (entries in [0, PRIME)) over GF(PRIME), by row reduction."""
    M = M.copy()
    rows, cols = M.shape
    rank = 0
    for col in range(cols):
        if rank == rows:
            break
        nz = np.nonzero(M[rank:, col])[0]
        if nz.size == 0:
            continue
        piv = rank + int(nz[0])
        M[[rank, piv]] = M[[piv, rank]]
        inv = pow(int(M[rank, col]), -1, PRIME)
        M[rank] = M[rank] * inv % PRIME
        below = M[rank + 1 :, col].copy()
        M[rank + 1 :] = (M[rank + 1 :] - below[:, None] * M[rank][None, :]) % PRIME
        rank += 1
    return rank


def shift_structured(design: CerarDesign, *, rtol: float = 1e-9) -> bool:
    """Whether A_i D_i[:, t] = e_{t+1} (1-based t = 1..c-1) for every worker, to ``rtol`` (§51.2).

    True for designs built from a column function (exact, Vandermonde, perturbation:
    D_i[:, t] = B_i[:, t+1] with B_i = A_i^{-1}), which can hold at most c + N - 1 packets'
    worth of state; a check of the float64 product, so meant for well-conditioned designs.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> shift_structured(design(4, 8, "perturbation", eps=0.1))
    True
    """
    design = _check(design)
    c = design.c
    P = design.encoders @ design.decoders[:, :, : c - 1]  # (N, c, c-1)
    target = np.eye(c)[:, 1:]
    scale = np.abs(design.encoders).sum(axis=2).max() * np.abs(design.decoders).max()
    return bool(np.all(np.abs(P - target) <= rtol * max(scale, 1.0)))


@dataclass(frozen=True, eq=False)
class StorageBound:
    """Outcome of :func:`storage_lower_bound` (all counts in packets of w = ceil(d/c) scalars).

    Attributes
    ----------
    ranks : ndarray (N, L + 1) int
        Certified lower bounds of h_t = rank H_t, worker i after round t = 0..L (exact unless
        noted: the rank modulo 2^31 - 1, never above the rational rank).
    peak : ndarray (N,) int
        max_t ranks[i]: no linear schedule of worker i holds fewer packets at its fullest.
    target : int
        c + N, the abstract's storage (1 + N/c of d).
    generic : int
        c + floor(L/2), the value of ``peak`` for generic designs.
    distance : ndarray (N, L + 1) float
        sigma_{c+N+1}(H_t) / sigma_1(H_t) (0 where H_t has at most c + N rows or columns), in
        float64: the relative error below which no (c + N)-packet linear schedule can go.
    """

    ranks: np.ndarray
    peak: np.ndarray
    target: int
    generic: int
    distance: np.ndarray

    @property
    def target_distance(self) -> float:
        """max over workers and rounds of ``distance``: how far c + N packets fall short."""
        return float(self.distance.max(initial=0.0))


def storage_lower_bound(design: CerarDesign) -> StorageBound:
    """The least storage any linear schedule of the ring needs, per worker and round (§51.1).

    Parameters
    ----------
    design : CerarDesign

    Returns
    -------
    StorageBound

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> b = storage_lower_bound(design(4, 8, "perturbation", eps=0.1))
    >>> b.peak.tolist(), b.target, b.generic  # the float64 entries: generic rank
    ([13, 13, 13, 13], 12, 13)
    >>> bool(b.target_distance < 1e-12)  # ... but within rounding of rank <= c + N
    True
    """
    design = _check(design)
    N, c, L = design.N, design.c, design.L
    limits.check_work(
        "design",
        N * (L + 1) * c * L * (c + L),
        f"the Hankel ranks of N = {N}, c = {c}",
        limit_name="MAX_STORAGE_WORK",
        unit="coefficient operations",
    )
    ranks = np.zeros((N, L + 1), dtype=np.int64)
    distance = np.zeros((N, L + 1))
    for i in range(N):
        for t in range(L + 1):
            sv = np.linalg.svd(hankel_matrix(design, i, t), compute_uv=False)
            if sv.size > c + N and sv[0] > 0:
                distance[i, t] = sv[c + N] / sv[0]
        A = [[_residue(x) for x in row] for row in design.encoders[i].tolist()]
        D = [[_residue(x) for x in row] for row in design.decoders[i].tolist()]
        for t in range(L + 1):
            H = np.array(_hankel(A, D, N, t, 0), dtype=object).reshape(L - t + c, c + t)
            ranks[i, t] = _rank_mod_p((H % PRIME).astype(np.int64))
    return StorageBound(
        ranks=ranks, peak=ranks.max(axis=1), target=c + N, generic=generic_storage_peak(N, c), distance=distance
    )
