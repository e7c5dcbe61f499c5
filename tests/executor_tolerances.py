"""Rounding-error bounds of the executor's computations (gradient coding, CERAR), for the tests.

Every bound is the standard "γ_K times the same computation on absolute values" bound of
N. J. Higham, *Accuracy and Stability of Numerical Algorithms* (2nd ed., SIAM 2002): a value
computed by K successive additions / multiplications (a dot product of length K, a sum of
K terms, a product of matrices with inner dimensions summing to K) differs from the exact
value by at most ``γ_K · (|factors| combined the same way)`` (Thm 3.1, 3.5, Lemma 3.3), and
:func:`tolerances.dot_tol` adds the constant ``SAFETY``.  Least-squares quantities use
:func:`tolerances.lstsq_tol` (Thm 20.3/20.4; κ², ``gram=True``, for routes through ``BᵀB``).

Nothing here calls gcsim: the bounds are built from the inputs (encoder, decoder,
gradients, design matrices) only.
"""

from __future__ import annotations

import numpy as np

from tolerances import SAFETY, cond, dot_tol, lstsq_tol, unit_roundoff


def padded_blocks(g: np.ndarray, m: int) -> np.ndarray:
    """Γ_G: rows ``kN + i`` = block ``k`` of ``g_i`` zero-padded to ``m·ceil(d/m)`` (shape ``(mN, w)``)."""
    N, d = g.shape
    w = -(-d // m)
    gp = np.zeros((N, m * w))
    gp[:, :d] = g
    return gp.reshape(N, m, w).transpose(1, 0, 2).reshape(m * N, w)


def target(m: int, N: int) -> np.ndarray:
    """T = I_m ⊗ 1_N."""
    return np.kron(np.eye(m), np.ones((N, 1)))


def transmission_tol(B: np.ndarray, g: np.ndarray, m: int, dtype=np.float64) -> np.ndarray:
    """Bound on ``|fl(g̃_j) − g̃_j|``, ``g̃ = Bᵀ Γ_G``: dot products of length ``mN`` (shape ``(n, w)``)."""
    GG = np.abs(padded_blocks(g, m))
    return dot_tol(B.shape[0], np.abs(B).T @ GG, dtype)


def decode_tol(
    B: np.ndarray, X: np.ndarray, mask: np.ndarray, g: np.ndarray, m: int, extra: int = 0, dtype=np.float64
) -> np.ndarray:
    """Bound on the error of ``ĝ − ∇L`` (padded blocks, shape ``(m, w)``) by either route.

    Route 1: ``ĝ[l] = Σ_{j∈F} X[j,l] g̃_j`` (``|F|`` terms after the ``mN``-term ``g̃_j``) minus
    ``∇L[l] = Σ_i g_i[l]`` (``N`` terms).  Route 2: ``𝒢(B_F X − T)`` (``R`` with ``|F| + 1`` terms,
    then ``mN``).  Both are sums of at most ``K = mN + n + N + 1 + extra`` rounded operations on
    terms whose absolute values add up to ``|X_F|ᵀ|B_F|ᵀ|Γ_G| + |Γ_G|ᵀ|T|`` (Higham Lemma 3.3):
    ``|computed − exact| <= γ_K · that``.  ``extra`` counts operations spent upstream (e.g. the
    ``p + rows`` of computing each partial gradient, whose own error then scales the same sums).
    """
    mask = np.asarray(mask, bool)
    mN, n = B.shape
    N = mN // m
    GG = np.abs(padded_blocks(g, m))
    scale = (np.abs(X[mask]).T @ np.abs(B[:, mask]).T @ GG) + (target(m, N).T @ GG)
    return dot_tol(mN + n + N + 1 + extra, scale, dtype)


def sq_diff_tol(ref_sq: float, delta: float, length: int, dtype=np.float64) -> float:
    """Bound on ``|‖a‖² − ‖b‖²|`` for computed squared norms when ``‖a − b‖ <= delta``.

    ``‖a‖² − ‖b‖² = (a − b)·(a + b)``, so ``|…| <= delta (2‖b‖ + delta)``; each squared norm is
    a sum of ``length`` squares with relative rounding ``γ_length`` (Higham Thm 3.1).
    """
    nb = np.sqrt(max(ref_sq, 0.0))
    spread = delta * (2 * nb + delta)
    return spread + 2 * dot_tol(max(length, 1), ref_sq + spread, dtype)


def lsq_err_tol(BF: np.ndarray, m: int, *, gram: bool = False) -> float:
    """Bound on the error of a computed ``min_X ‖B_F X − T‖_F²``.

    The residual of a backward-stable least-squares solve is within ``c rows cols u κ ‖T‖`` of the
    exact one (κ over the numerically non-zero singular values; κ² through the Gram matrix),
    and ``‖r‖ <= ‖T‖_F = √(mN)``, so ``‖r‖²`` moves by at most ``2 √(mN) · lstsq_tol(κ, ., ., √(mN))``.
    """
    rows, cols = BF.shape
    if cols == 0 or not np.any(BF):
        return 0.0
    return 2 * lstsq_tol(cond(BF, nonzero=True), rows, cols, float(rows), gram=gram)


def lstsq_solution_tol(BF: np.ndarray, m: int) -> float:
    """Bound on ``‖fl(X) − X‖_F`` for the least-squares decoder ``X = argmin ‖B_F X − T‖_F``.

    (Full column rank.)

    Higham Thm 20.3: relative error ``<= c rows cols u (κ + κ² ‖R‖/(‖B_F‖ ‖X‖))``, with ``R = B_F X − T``.
    """
    rows, cols = BF.shape
    if cols == 0:
        return 0.0
    T = target(m, rows // m)
    X = np.linalg.lstsq(BF, T, rcond=None)[0]
    kappa = cond(BF)
    nx = float(np.linalg.norm(X))
    nr = float(np.linalg.norm(BF @ X - T))
    nb = float(np.linalg.norm(BF, 2))
    rel = kappa + kappa**2 * nr / max(nb * nx, np.finfo(float).tiny)
    return SAFETY * rows * cols * unit_roundoff() * rel * nx


def fixed_residual_tol(B: np.ndarray, X: np.ndarray, mask: np.ndarray, m: int) -> float:
    """Bound on ``|fl(‖B_F X_F − T‖²) − ‖B_F X_F − T‖²|`` for a given decoder ``X`` (``(n, m)``).

    Each entry of ``R = B_F X_F − T`` is a sum of ``|F| + 1`` terms (Higham Lemma 3.3), then
    :func:`sq_diff_tol` for the squared norm.
    """
    mask = np.asarray(mask, bool)
    T = target(m, B.shape[0] // m)
    R = B[:, mask] @ X[mask] - T
    dR = dot_tol(int(mask.sum()) + 1, np.abs(B[:, mask]) @ np.abs(X[mask]) + T)
    return sq_diff_tol(float(np.sum(R**2)), float(np.linalg.norm(dR)), R.size)


def relative_tol(tol: np.ndarray, reference: np.ndarray, dtype=np.float64) -> float:
    """Bound on a computed ``‖a − ref‖ / ‖ref‖`` when ``|a − exact| <= tol`` elementwise (``ref`` exact
    up to the same kind of bound, folded into ``tol`` by the caller); the two norms and the quotient
    add a relative ``γ_{2 len + 1}`` (Higham Thm 3.1)."""
    nref = float(np.linalg.norm(reference))
    return float(np.linalg.norm(tol)) / nref * (1 + dot_tol(2 * np.size(reference) + 1, 1.0, dtype))


# ----------------------------------------------------------------------------------------------
# CERAR (docs/theory.md §50)
# ----------------------------------------------------------------------------------------------


def cerar_blocks(g: np.ndarray, c: int) -> np.ndarray:
    """``G_i`` as ``(N, c, w)``, zero-padded to ``c·ceil(d/c)``."""
    N, d = g.shape
    w = -(-d // c)
    gp = np.zeros((N, c * w))
    gp[:, :d] = g
    return gp.reshape(N, c, w)


def cerar_output_tol(encoders: np.ndarray, decoders: np.ndarray, g: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Bound on ``|fl(ĝ_i) − ĝ_i|`` of the CERAR ring, shape ``(N, c, w)``.

    Encoding ``x = A_j G_j`` (``c`` terms), ``L`` ring rounds each adding or removing one symbol
    (every ``u^(t)`` is a signed sum of symbols, so ``|u^(t)| <= Σ_j Σ_rows |A_j||G_j| =: V``),
    then ``ĝ_i = G_i + D_i U_i`` (``L + 1`` terms): at most ``K = c + 2L + 2`` roundings on terms of
    size ``|G_i| + rowsum|D_i| · V`` (Higham Lemma 3.3).  With a ``float32`` wire the same bound in
    ``float32`` units covers the casts of the packets.
    """
    N, c, L = decoders.shape
    G = np.abs(cerar_blocks(g, c))
    V = np.einsum("jab,jbw->w", np.abs(encoders), G)
    scale = G + np.abs(decoders).sum(axis=2)[:, :, None] * V[None, None, :]
    return dot_tol(c + 2 * L + 2, scale, dtype)


def sum_tol(g: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Bound on the error of ``Σ_i g_i`` (``N`` terms), shape ``(d,)``."""
    return dot_tol(g.shape[0], np.abs(g).sum(axis=0), dtype)


def cerar_error_operator_tol(encoders: np.ndarray, decoders: np.ndarray) -> np.ndarray:
    """Bound on ``|fl(E_{i,m}) − E_{i,m}|``, ``E = D_i[:, m-1:m-1+c] A_{i-m} − I``: ``c + 1`` terms."""
    N, c, L = decoders.shape
    out = np.zeros((N, N - 1, c, c))
    for i in range(N):
        for mm in range(1, N):
            W = np.abs(decoders[i][:, mm - 1 : mm - 1 + c])
            out[i, mm - 1] = dot_tol(c + 1, W @ np.abs(encoders[(i - mm) % N]) + np.eye(c))
    return out


def cerar_predicted_tol(encoders: np.ndarray, decoders: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Bound on ``|fl(Σ_m E_{i,m} G_{i−m}) − Σ_m E_{i,m} G_{i−m}|``, shape ``(N, c, w)``.

    ``E`` itself carries ``c + 1`` roundings, then ``(N − 1) c`` more terms: ``K = Nc + 1`` on
    ``Σ_m (|W_{i,m}||A_{i−m}| + I)|G_{i−m}|``.
    """
    N, c, L = decoders.shape
    G = np.abs(cerar_blocks(g, c))
    out = np.zeros_like(G)
    for i in range(N):
        acc = np.zeros_like(G[0])
        for mm in range(1, N):
            W = np.abs(decoders[i][:, mm - 1 : mm - 1 + c])
            acc += (W @ np.abs(encoders[(i - mm) % N]) + np.eye(c)) @ G[(i - mm) % N]
        out[i] = dot_tol(N * c + 1, acc)
    return out


def cerar_operator_tol(encoders: np.ndarray, decoders: np.ndarray, g: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Bound on ``|fl(Ω G)_i − ĝ_i|`` of the end-to-end operator route, shape ``(N, c, w)`` (theory §52.2).

    ``M_{i,m} = D_i S_{m−1} A_{i−m}``: each entry a length-``c`` dot product, ``|ΔM| <= γ_c |W||A|``
    (``W = D_i S_{m−1}``, the column window); then ``Ω̂ G`` with inner dimension ``Nc`` and
    ``|Ω̂| <= (1 + γ_c) Φ``, ``Φ`` = ``Ω`` with ``|W||A|`` blocks.  Together (Higham Lemma 3.3,
    ``γ_a + γ_b + γ_a γ_b <= γ_{a+b}``): ``γ_{(N+1)c} · (|G_i| + Σ_m |W_{i,m}||A_{i−m}||G_{i−m}|)``.
    """
    N, c, L = decoders.shape
    G = np.abs(cerar_blocks(g, c))
    scale = G.copy()
    for i in range(N):
        for mm in range(1, N):
            W = np.abs(decoders[i][:, mm - 1 : mm - 1 + c])
            scale[i] += W @ np.abs(encoders[(i - mm) % N]) @ G[(i - mm) % N]
    return dot_tol((N + 1) * c, scale, dtype)
