"""Decoders: each one once, batched over straggler patterns (docs/theory.md §5.1, §5.4, §45).

The parameter server receives ``g̃_j`` from the non-stragglers ``F`` and outputs block ``l`` as
``ĝ[l] = Σ_{j∈F} X[j, l] g̃_j``; a decoder is the ``(n, m)`` matrix ``X``, zero on the
stragglers.  Every function takes a stack of non-straggler masks ``(count, n)`` (True = arrives)
and returns a stack of decoders ``(count, n, m)``, except the scalars of :func:`arrival_scale`
and :func:`best_scale`.

``optimal``          ``X* = B_F⁺ T``: the minimum-norm least-squares decoder; its residual
                     ``‖B_F X* − T‖_F²`` is the optimal error ``err(B, F)`` (theory §5.1).
``rd_unbiased``      ``X[j, l] = 1[j∈F] d_l[j] / ((1 − p_j) r E d²)`` for RD with diagonals
                     ``d_l`` redrawn every iteration (Theorem 5, theory §45).
``bernoulli``        ``X = 1_F X_0 / (1 − p)`` for a reference decoder ``B X_0 = T`` (unbiased
                     under Bernoulli stragglers, Theorem 6).
``arrivals``         ``X = 1_F X_0 · n/|F|``: "ignore the stragglers and rescale" (with ``A = I``,
                     ``m = 1``: the uncoded baseline).
``best scale``       ``c X_F`` with the best scalar ``c = ⟨B_F X_F, T⟩ / ‖B_F X_F‖²`` per pattern.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array_api import asarray, get_namespace
from .._validation import check_finite_array, check_int, check_mask
from ..errors import InvalidArgumentError
from .bounds import resolve_moments, straggling_probabilities
from .schemes import target_matrix

__all__ = [
    "optimal_decoders",
    "optimal_decoder",
    "rd_unbiased_decoders",
    "rd_unbiased_decoder",
    "bernoulli_rescaled",
    "arrival_scale",
    "best_scale",
]


def optimal_decoders(B: Any, masks: np.ndarray, m: int, *, xp: Any = None) -> Any:
    """Stacked minimum-norm optimal decoders ``X* = B_F⁺ T``, zero rows off ``F``.

    ``B_F⁺`` is the pseudo-inverse of ``B`` with the straggler columns zeroed (one batched call for
    the whole stack).  Its rows for the stragglers are zero up to round-off of the SVD (about
    ``u κ(B_F)``); :func:`optimal_decoder` sets them to exactly zero, the training simulator
    (:mod:`gcsim.learning.train`) uses the stack as it is.

    Parameters
    ----------
    B : array (mN, n) or (count, mN, n)
        One encoder, or one per pattern (redrawn codes).
    masks : numpy.ndarray of bool (count, n)
    m : int
    xp : None, "numpy", "cupy" or module
        Namespace of the computation (the result stays in it).

    Examples
    --------
    >>> B = np.array([[1.0, 1.0], [0.0, 1.0]])
    >>> optimal_decoders(B, np.array([[True, False]]), 1).round(12).tolist()
    [[[1.0], [0.0]]]
    """
    m = check_int("m", m, minimum=1)
    ns = get_namespace(xp)
    Bx = asarray(ns, B)
    mN = Bx.shape[-2]
    T = asarray(ns, target_matrix(m, mN // m))
    mk = asarray(ns, np.asarray(masks, dtype=np.float64))
    return ns.linalg.pinv(Bx * mk[:, None, :]) @ T


def optimal_decoder(scheme: Any, nonstragglers: Any) -> np.ndarray:
    """The minimum-norm optimal decoder ``X* = B_F⁺ T`` of one pattern, ``(n, m)`` (zero rows off ``F``).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> optimal_decoder(sch, [True, False]).tolist()
    [[1.0], [0.0]]
    """
    B = getattr(scheme, "B", None)
    if B is None or not hasattr(scheme, "m"):
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    B = check_finite_array("scheme.B", B, ndim=2)
    mask = check_mask("nonstragglers", nonstragglers, B.shape[1])
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    X = np.array(optimal_decoders(B, mask[None, :], int(scheme.m))[0])
    X[~mask] = 0.0
    return X


def rd_unbiased_decoders(
    diagonals: np.ndarray, masks: np.ndarray, replication: int, p: np.ndarray, mu2: float
) -> np.ndarray:
    """Stacked unbiased RD decoders ``X[j, l] = 1[j∈F] d_l[j] / ((1 − p_j) r μ₂)`` (Theorem 5).

    Parameters
    ----------
    diagonals : array (m, n) or (count, m, n)
        The RD diagonals ``d_l`` (one draw, or one per pattern).
    masks : numpy.ndarray of bool (count, n)
    replication : int
        ``r``, the (regular) replication of every part.
    p : numpy.ndarray (n,)
        Straggling probability of every worker.
    mu2 : float
        ``E d²`` of one diagonal entry (1 for RD(0); :func:`gcsim.coding.bounds.rd_moments`).
    """
    count = masks.shape[0]
    m, n = diagonals.shape[-2:]
    Dt = np.broadcast_to(diagonals, (count, m, n)).transpose(0, 2, 1)
    return np.where(masks[:, :, None], Dt / ((1.0 - p)[None, :, None] * replication * mu2), 0.0)


def rd_unbiased_decoder(
    diagonals: Any,
    nonstragglers: Any,
    replication: int,
    p: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
) -> np.ndarray:
    """Unbiased RD decoder ``X[j, l] = 1[j in F] d_l[j] / ((1 - p_j) r E d^2)`` of one pattern.

    Returns an ``(n, m)`` decoder (zero rows for stragglers).  With RD redrawn
    every iteration and Bernoulli(p) stragglers independent of the draw, the
    estimate is unbiased (Theorem 5).  ``E d^2 = 1`` for RD(0) and Gaussian
    entries, so there the decoder is ``(d_l)_F / ((1 - p) r)``.

    Examples
    --------
    >>> D = [[1., -1., 1.], [-1., -1., 1.]]          # (m, n) diagonals
    >>> rd_unbiased_decoder(D, [True, False, True], 2, 0.5).tolist()
    [[1.0, -1.0], [0.0, 0.0], [1.0, 1.0]]
    """
    D = check_finite_array("diagonals", diagonals, ndim=2)
    n = D.shape[1]
    masks = check_mask("nonstragglers", nonstragglers, n)
    if masks.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    r = check_int("replication", replication, minimum=1)
    q = straggling_probabilities(p, n)
    mu2, _ = resolve_moments(eps, dist, moments)
    return rd_unbiased_decoders(D, masks[None, :], r, q, mu2)[0]


def bernoulli_rescaled(X0: Any, p: np.ndarray) -> Any:
    """``X_0 / (1 − p)`` row by row (``X_0`` of shape ``(..., n, m)``); mask it with ``1_F`` (Theorem 6)."""
    return X0 / (1.0 - p)[..., :, None]


def arrival_scale(masks: np.ndarray) -> np.ndarray:
    """``n / |F|`` per pattern (``n`` when nothing arrives), the "ignore the stragglers" rescale.

    Examples
    --------
    >>> arrival_scale(np.array([[True, True, False, False]])).tolist()
    [2.0]
    """
    n = masks.shape[-1]
    return n / np.maximum(masks.sum(axis=-1), 1)


def best_scale(R: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Best scalar ``c = ⟨R, T⟩ / ‖R‖²`` per pattern for ``R = B_F X_F`` of shape ``(count, mN, m)`` (0 if ``R = 0``).

    Examples
    --------
    >>> best_scale(np.array([[[2.0], [0.0]]]), np.array([[1.0], [1.0]])).tolist()
    [0.5]
    """
    num = np.einsum("cil,il->c", R, T)
    den = np.einsum("cil,cil->c", R, R)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
