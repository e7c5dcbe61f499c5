"""Analytic CERAR constructions: exact, ring-indexed Vandermonde, multiplicative perturbation.

All three constructions share one structure (proved in ``docs/theory/50_cerar.md``):
pick a *column function* ``f : Z -> R^c`` and set

    B_j[:, tau] = f(j - tau),     A_j = B_j^{-1},     D_i[:, l] = f(i - 1 - l)

(0-based ``tau = 0..c-1``, ``l = 0..L-1``).  Then the window ``D_i S_{m-1}`` equals
``[f(i - m - tau)]_tau`` and ``E_{i,m} = D_i S_{m-1} A_{i-m} - I`` vanishes whenever the
window is ``B_{(i-m) mod N}``, i.e. whenever ``f(k) = f(k + N)`` on the indices it
touches.  With ``f(k) = R^k v`` (``R`` block-diagonal, theory §50.4) the window is
``R^{i-m} W`` and ``B_{(i-m) mod N} = R^{(i-m) mod N} W`` with the Krylov matrix
``W = [v, R^{-1} v, ..., R^{1-c} v]``, so

    E_{i,m} = 0            if i >= m,
    E_{i,m} = R^{-N} - I   if i <  m   (the path i-m -> i crosses the seam N-1 -> 0).

Everything here is a reconstruction of the constructions named in the CERAR abstract
(docs/theory.md §50); the formulas are ours.
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations
from typing import Any

import numpy as np

from .. import limits
from .._validation import check_dense_size, check_int, check_real
from ..errors import ImpossibleParametersError, InvalidArgumentError
from .design import CerarDesign
from .ring import num_rounds

__all__ = [
    "exact_design",
    "vandermonde_design",
    "perturbation_design",
    "vandermonde_complex",
    "perturbation_nodes",
    "r_star",
]


def _check_design_size(N: int, c: int) -> None:
    """Refuse, before building, a design whose ``N(N-1)`` encoder and decoder blocks of ``c x c``
    coefficients pass ``gcsim.limits.MAX_DENSE_ENTRIES`` (named by the larger factor)."""
    check_dense_size(
        "N" if N * (N - 1) >= c * c else "c",
        N * (N - 1),
        c * c,
        f"the coefficients of a CERAR design with N = {N}, c = {c}",
    )


def r_star(N: int, c: int) -> int:
    """r* = ceil(c / N) - 1, the highest perturbation level (0 iff c <= N)."""
    return -(-int(c) // int(N)) - 1


# --------------------------------------------------------------------------------------
# column functions
# --------------------------------------------------------------------------------------


def _conjugate_closed(N: int, k: int) -> list[int]:
    """A conjugate-closed set of ``k <= N`` exponents s of N-th roots of unity omega^s.

    Low frequencies first: s = 0 (if k is odd), then pairs (1, N-1), (2, N-2), ...;
    all N exponents when k = N.  Returned sorted as blocks: reals first, then pairs.
    """
    if k == N:
        return list(range(N))
    out: list[int] = [0] if k % 2 == 1 else []
    p = 1
    while len(out) < k:
        out += [p, N - p]
        p += 1
    return out


def _blocks(N: int, exponents: list[int]) -> list[tuple[int, str]]:
    """Group exponents into real blocks ("r": s = 0 or s = N/2) and conjugate pairs ("p")."""
    seen: set[int] = set()
    blocks: list[tuple[int, str]] = []
    for s in sorted(exponents, key=lambda s: (min(s, N - s) if s else -1, s)):
        if s in seen:
            continue
        if s == 0 or 2 * s == N:
            blocks.append((s, "r"))
            seen.add(s)
        else:
            t = min(s, N - s)
            blocks.append((t, "p"))
            seen.update({t, N - t})
    return blocks


def perturbation_nodes(N: int, c: int, eps: float) -> np.ndarray:
    """Complex nodes z_{s,q} = omega^s (1+eps)^q of the perturbation design, in block order.

    Level q = 0..r* holds min(N, c - qN) nodes; level 0 is filled (all N-th roots) before
    level 1; every level is conjugate-closed.  Conjugate pairs are listed as (z, conj z).

    Examples
    --------
    >>> np.round(perturbation_nodes(3, 4, 0.5), 3)
    array([ 1. +0.j   , -0.5+0.866j, -0.5-0.866j,  1.5+0.j   ])
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    limits.check_entries("c", (c,), "the nodes (one per component)")
    eps = check_real("eps", eps, minimum=0.0)
    z: list[complex] = []
    for q, s, kind in _level_blocks(N, c):
        rho = (1.0 + eps) ** q
        w = np.exp(2j * np.pi * s / N)
        z += [rho * w] if kind == "r" else [rho * w, rho * np.conj(w)]
    return np.array(z)


def _level_blocks(N: int, c: int) -> list[tuple[int, int, str]]:
    out = []
    for q in range(r_star(N, c) + 1):
        k = min(N, c - q * N)
        out += [(q, s, kind) for s, kind in _blocks(N, _conjugate_closed(N, k))]
    return out


def _column_function(N: int, blocks: list[tuple[float, float, str]], k: np.ndarray) -> np.ndarray:
    """f(k) = R^k v in closed form, shape (c, len(k)).

    ``blocks`` lists (rho, theta, kind): a real block rho*cos(theta) (theta in {0, pi}) with
    v = 1, or a 2x2 block rho*Rot(theta) with v = (sqrt 2, 0), whose powers are
    rho^k sqrt2 (cos k theta, sin k theta).  Closed form avoids powering an ill-conditioned R.
    """
    k = np.asarray(k, dtype=float)
    rows = []
    for rho, theta, kind in blocks:
        mag = rho**k
        if kind == "r":
            rows.append(mag * np.cos(theta * k))  # (+-1)^k for theta in {0, pi}
        else:
            rows.append(math.sqrt(2.0) * mag * np.cos(theta * k))
            rows.append(math.sqrt(2.0) * mag * np.sin(theta * k))
    return np.array(rows).reshape(-1, k.size)


def _design_from_f(N: int, c: int, f, method: str, params: dict[str, Any]) -> CerarDesign:
    """Build (A_j, D_i) from a column function f(k) (vectorized over integer k)."""
    L = num_rounds(N, c)
    tau = np.arange(c)
    j = np.arange(N)
    B = np.stack([f(jj - tau) for jj in j])  # (N, c, c)
    l = np.arange(L)
    D = np.stack([f(ii - 1 - l) for ii in j])  # (N, c, L)
    try:
        A = np.linalg.inv(B)
    except np.linalg.LinAlgError:
        A = None
    arg = "eps" if "eps" in params else "nodes"
    if A is None or not np.all(np.isfinite(A)):
        raise InvalidArgumentError(arg, f"encoders are numerically singular in float64 for {params}; increase eps")
    kappa = float(np.max(np.linalg.cond(B)))
    if kappa > 1e13:  # docs/reliability.md: warn when kappa exceeds what float64 can carry
        warnings.warn(
            f"CERAR {method} design has kappa(A_j) = {kappa:.3g}: float64 keeps only "
            f"~{max(0.0, 16 - np.log10(kappa)):.0f} digits of the encoders",
            RuntimeWarning,
            stacklevel=3,
        )
    return CerarDesign(N, c, A, D, method=method, metadata=params)


# --------------------------------------------------------------------------------------
# exact design (c <= N)
# --------------------------------------------------------------------------------------


def _roots_kappa(N: int, c: int, exps: list[int]) -> float:
    """kappa of the complex Vandermonde [z^{-tau}] with z = omega^s, s in exps (= kappa(A_j))."""
    z = np.exp(2j * np.pi * np.array(exps) / N)
    V = z[:, None] ** (-np.arange(c))[None, :]
    return float(np.linalg.cond(V))


def _best_roots(N: int, c: int, max_subsets: int = 4096) -> list[int]:
    """Conjugate-closed c-subset of N-th roots with the smallest kappa (search when cheap)."""
    default = _conjugate_closed(N, c)
    pairs = list(range(1, (N - 1) // 2 + 1))
    reals = [0] + ([N // 2] if N % 2 == 0 else [])
    cands = []
    for nr in range(len(reals) + 1):
        if (c - nr) % 2 or (c - nr) // 2 > len(pairs) or c - nr < 0:
            continue
        if math.comb(len(reals), nr) * math.comb(len(pairs), (c - nr) // 2) > max_subsets:
            return default
        for rs in combinations(reals, nr):
            for ps in combinations(pairs, (c - nr) // 2):
                cands.append(list(rs) + [x for p in ps for x in (p, N - p)])
    if not cands:
        return default
    return min(cands, key=lambda e: (round(_roots_kappa(N, c, e), 9), e))


def exact_design(N: int, c: int, *, basis: str = "auto") -> CerarDesign:
    """Exact CERAR design, all E_{i,m} = 0 (possible iff c <= N or N = 2).

    ``basis="unit"`` (needs c | N): f(k) = e_{k mod c}; every A_j is a permutation matrix
    (kappa = 1) -- this is ring all-reduce when c = N.  ``basis="roots"``: f(k) = R^k v with
    c conjugate-closed N-th roots of unity (the real rotation-block form), chosen to minimise
    kappa(A_j) among conjugate-closed subsets (searched when small).  ``"auto"`` uses "unit"
    when c | N and "roots" otherwise.  kappa(A_j) = 1 is achievable iff c | N
    (docs/theory/50_cerar.md); e.g. (N, c) = (3, 2) has optimum sqrt(3).

    For N = 2 there is only one hop, so every c is exact (unit basis, A_j = I).

    Examples
    --------
    >>> d = exact_design(4, 2)
    >>> float(abs(d.error_operators()).max())
    0.0
    >>> float(np.linalg.cond(d.encoders[0]))
    1.0
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    if basis not in ("auto", "unit", "roots"):
        raise InvalidArgumentError("basis", f"must be 'auto', 'unit' or 'roots', got {basis!r}")
    if N == 2:
        # only m = 1: D_i S_0 = A_{i-1}^{-1}; take A = I, D = [I] (L = c).
        A = np.broadcast_to(np.eye(c), (N, c, c)).copy()
        D = np.broadcast_to(np.eye(c), (N, c, c)).copy()
        return CerarDesign(N, c, A, D, method="exact", metadata={"basis": "unit"})
    if c > N:
        raise ImpossibleParametersError(
            "CERAR exactness theorem",
            f"no exact CERAR design exists for c = {c} > N = {N} (N >= 3): the decoder windows "
            "D_i S_{m-1} must equal A_{i-m}^{-1} and overlap, which forces the columns of every "
            "A_j^{-1} to be N-periodic, so an A_j with c > N columns would be singular. "
            "Use method='perturbation', 'vandermonde' or 'optimized' for c > N.",
        )
    if basis == "auto":
        basis = "unit" if N % c == 0 else "roots"
    if basis == "unit":
        if N % c:
            raise InvalidArgumentError("basis", f"'unit' needs c | N, got N = {N}, c = {c}")
        eye = np.eye(c)
        f = lambda k: eye[:, np.mod(k, c)]  # noqa: E731
        return _design_from_f(N, c, f, "exact", {"basis": "unit"})
    exps = _best_roots(N, c)
    blocks = [(1.0, 2 * np.pi * s / N, kind) for s, kind in _blocks(N, exps)]
    f = lambda k: _column_function(N, blocks, k)  # noqa: E731
    return _design_from_f(N, c, f, "exact", {"basis": "roots", "exponents": sorted(exps)})


# --------------------------------------------------------------------------------------
# ring-indexed Vandermonde family
# --------------------------------------------------------------------------------------


def vandermonde_complex(N: int, nodes: Any) -> tuple[np.ndarray, np.ndarray]:
    """Complex ring-indexed Vandermonde family (theory §50.3) for arbitrary non-zero nodes.

    Returns ``(A, D)`` with ``A[j] = B_j^{-1}``, ``B_j = Z^j V``, ``V[k, tau] = z_k^{-tau}``
    (0-based tau, i.e. z_k^{1-tau} in 1-based indexing) and ``D[i][k, l] = z_k^{i-1-l}``
    (0-based l).  Then ``D_i S_{m-1} A_{i-m} = I`` for i >= m and ``Z^{-N}`` for i < m.

    Examples
    --------
    >>> A, D = vandermonde_complex(3, [1.0, 1j, -1.0])
    >>> A.shape, D.shape
    ((3, 3, 3), (3, 3, 4))
    """
    N = check_int("N", N, minimum=2)
    limits.check_entries("nodes", limits.array_shape(nodes), "the nodes")  # before a complex copy
    z = np.asarray(nodes, dtype=complex).ravel()
    if z.size < 1 or not np.all(np.isfinite(z)) or np.any(z == 0):
        raise InvalidArgumentError("nodes", "must be a non-empty vector of finite non-zero numbers")
    if np.unique(np.round(z, 14)).size != z.size:
        raise InvalidArgumentError("nodes", "must be distinct")
    c = z.size
    _check_design_size(N, c)
    L = num_rounds(N, c)
    tau = np.arange(c)
    B = np.stack([z[:, None] ** (j - tau)[None, :] for j in range(N)])
    D = np.stack([z[:, None] ** (i - 1 - np.arange(L))[None, :] for i in range(N)])
    return np.linalg.inv(B), D


def vandermonde_design(N: int, c: int, eps: float | None = None) -> CerarDesign:
    """Real-node ring-indexed Vandermonde design: z_k = 1 + eps (k - (c-1)/2), k = 0..c-1.

    Nodes are symmetric around 1 with spacing ``eps`` (default ``eps = 0.5 / c``); they must
    stay positive, so ``eps < 2 / (c-1)``.  Seam error E_{i,m} = Z^{-N} - I (i < m), whose
    norm max_k |z_k^{-N} - 1| -> 0 as eps -> 0, while kappa(A_j) explodes like a clustered
    Vandermonde matrix (about eps^{-(c-1)}).  Exact only for c = 1.

    Examples
    --------
    >>> d = vandermonde_design(3, 2, eps=0.01)
    >>> bool(abs(d.error_operators()).max() < 0.02)
    True
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    eps = 0.5 / c if eps is None else check_real("eps", eps, minimum=0.0, strict_min=True)
    if c > 1 and eps * (c - 1) / 2 >= 1:
        raise InvalidArgumentError("eps", f"must be < 2/(c-1) = {2 / (c - 1):.4g} to keep nodes positive, got {eps}")
    z = 1.0 + eps * (np.arange(c) - (c - 1) / 2)
    f = lambda k: z[:, None] ** np.asarray(k, dtype=float)[None, :]  # noqa: E731
    return _design_from_f(N, c, f, "vandermonde", {"eps": eps, "nodes": z.tolist()})


# --------------------------------------------------------------------------------------
# multiplicative perturbation
# --------------------------------------------------------------------------------------


def perturbation_design(N: int, c: int, eps: float = 0.05) -> CerarDesign:
    """Multiplicative-perturbation design in real rotation-block form (any N, c, eps > 0).

    Nodes z_{s,q} = omega^s (1+eps)^q (:func:`perturbation_nodes`); R is block-diagonal with
    1x1 blocks (1+eps)^q * (+-1) and 2x2 blocks (1+eps)^q Rot(2 pi s / N); v has 1 for 1x1
    blocks and (sqrt 2, 0) for 2x2 blocks; B_j[:, tau] = R^{j-tau} v (0-based tau),
    D_i[:, l] = R^{i-1-l} v.  Seam error R^{-N} - I = diag((1+eps)^{-N q} - 1), so

    * ||E_{i,m}||_2 = 1 - (1+eps)^{-N r*} for i < m, 0 for i >= m (worker N-1 is exact);
    * worst-case block-row norm max_i ||[E_{i,1} .. E_{i,N-1}]||_2
      = sqrt(N-1) (1 - (1+eps)^{-N r*})  (worker 0);
    * kappa(A_j) = Theta(eps^{-r*}), r* = ceil(c/N) - 1.

    For c <= N (r* = 0) it is exact with roots-of-unity nodes.

    Examples
    --------
    >>> d = perturbation_design(3, 5, eps=0.1)
    >>> E = d.error_operators()
    >>> round(float(np.linalg.norm(E[0, 1], 2)), 6) == round(1 - 1.1 ** -3, 6)
    True
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    eps = check_real("eps", eps, minimum=0.0)
    if eps == 0 and c > N:
        raise InvalidArgumentError("eps", "must be > 0 when c > N (eps = 0 repeats nodes: singular encoders)")
    blocks = [((1.0 + eps) ** q, 2 * np.pi * s / N, kind) for q, s, kind in _level_blocks(N, c)]
    f = lambda k: _column_function(N, blocks, k)  # noqa: E731
    return _design_from_f(N, c, f, "perturbation", {"eps": eps, "r_star": r_star(N, c)})
