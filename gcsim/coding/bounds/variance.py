"""Unbiased straggler-compensated gradient estimators and their variance (theory §45.4, Theorems 5-6).

With Bernoulli(p_j) stragglers the RD estimator (redrawn every iteration, Theorem 5,
:func:`rd_estimator_variance`, uniform bound :func:`rd_variance_bound`) and the fixed-decoder
estimator of any encoder with ``B X_0 = T`` (Theorem 6, :func:`ns_estimator_variance`) are unbiased;
the variances are those of the returned length-``d`` estimate, whose ``m ceil(d/m)`` padded blocks
(:func:`split_blocks`) reach ``omega_c`` coordinates (:func:`block_multiplicities`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_bool, check_finite_array, check_int, check_real
from ...errors import InvalidArgumentError
from ...limits import check_entries
from ._args import _encoder_and_reference_decoder, _regular_replication, bound_args
from .moments import resolve_moments

__all__ = [
    "split_blocks",
    "block_multiplicities",
    "straggling_probabilities",
    "rd_estimator_variance",
    "rd_variance_bound",
    "ns_estimator_variance",
]


def split_blocks(gradients: Any, m: int) -> np.ndarray:
    """Split per-part gradients ``(N, d)`` into ``m`` contiguous zero-padded blocks ``(N, m, ceil(d/m))``.

    Block ``k`` of part ``i`` is ``g_i[k w : (k+1) w]`` with ``w = ceil(d / m)``,
    zero-padded at the end (theory §5.1).

    Examples
    --------
    >>> split_blocks([[1., 2., 3.]], 2).tolist()
    [[[1.0, 2.0], [3.0, 0.0]]]
    """
    G = check_finite_array("gradients", gradients, ndim=2)
    m = check_int("m", m, minimum=1)
    N, d = G.shape
    w = -(-d // m) if d else 0
    check_entries("m", (N, m * w), "the padded gradients (N x m ceil(d/m))")
    padded = np.zeros((N, m * w))
    padded[:, :d] = G
    return padded.reshape(N, m, w)


def straggling_probabilities(p: Any, n: int) -> np.ndarray:
    """``p`` as an ``(n,)`` array in ``[0, 1)`` (a scalar or one probability per worker)."""
    arr = np.asarray(p, dtype=float) if not isinstance(p, (bool, np.bool_)) else None
    if arr is None or arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n):
        raise InvalidArgumentError("p", f"must be a probability or an array of {n} probabilities, got {p!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr >= 1):
        raise InvalidArgumentError("p", f"straggling probabilities must lie in [0, 1), got {p!r}")
    return np.broadcast_to(arr, (n,)).astype(float)


def block_multiplicities(d: int, m: int) -> np.ndarray:
    r"""How many of the ``m`` blocks have a real (non-padding) coordinate at each coordinate's offset.

    With ``w = ceil(d / m)`` coordinate ``c < d`` sits at offset ``t = c mod w`` of block
    ``floor(c / w)``; block ``l`` has a real coordinate at offset ``t`` iff ``l w + t < d``, so

    .. math:: \omega_c = \#\{l\in[m] : l w + (c \bmod w) < d\} = \lceil (d - (c \bmod w)) / w \rceil
              \in [1, m].

    ``omega_c = m`` for every ``c`` iff ``m`` divides ``d`` (no padding).  This is the number of
    coordinates of the *returned* length-``d`` estimate that the block-mixing of one worker's
    transmission reaches from coordinate ``c`` (Theorem 5 of ``docs/theory/45_bounds.md``).

    Examples
    --------
    >>> block_multiplicities(5, 2).tolist()      # w = 3: blocks [0, 1, 2], [3, 4, pad]
    [2, 2, 1, 2, 2]
    >>> block_multiplicities(6, 3).tolist()      # m divides d
    [3, 3, 3, 3, 3, 3]
    """
    d = check_int("d", d, minimum=0)
    m = check_int("m", m, minimum=1)
    if d == 0:
        return np.zeros(0, dtype=np.int64)
    check_entries("d", (d,), "the block multiplicities")
    w = -(-d // m)
    t = np.arange(d, dtype=np.int64) % w
    return -(-(d - t) // w)


def _check_gradients(gradients: Any, N: int) -> np.ndarray:
    G = check_finite_array("gradients", gradients, ndim=2)
    if G.shape[0] != N:
        raise InvalidArgumentError("gradients", f"must have one row per part ({N}), got shape {G.shape}")
    return G


def rd_estimator_variance(
    assignment: Any,
    m: int,
    p: Any,
    gradients: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    padded: bool = False,
) -> float:
    r"""Variance ``E||g_hat - grad L||^2`` of the unbiased RD estimator (Theorem 5).

    RD redrawn every iteration, Bernoulli(p_j) stragglers independent of the
    draw, regular replication ``r``, decoder of :func:`gcsim.coding.decoders.rd_unbiased_decoder`; the
    estimate is the length-``d`` vector the simulator and the executors return
    (the decoded zero-padded length-``m w`` vector cut to its first ``d``
    coordinates, ``w = ceil(d/m)``):

    .. math:: E\|\hat g - \nabla L\|^2 = \sum_j \frac{1}{r^2} \sum_{c<d} h_j[c]^2
              \Big[\frac{\kappa - 1 + \omega_c}{1 - p_j} - 1\Big],
              \quad h_j = \sum_i A_{ij} g_i,\ \kappa = \mu_4/\mu_2^2,

    with ``omega_c`` of :func:`block_multiplicities` (the number of blocks that
    have a real coordinate at the offset of ``c``).  When ``m`` divides ``d``,
    ``omega_c = m`` and this is ``sum_j ||h_j||^2 / r^2 [(kappa + m - 1)/(1 - p_j) - 1]``
    (``kappa = 1`` for RD(0), so the bracket is ``m/(1-p) - 1``; ``kappa = 3`` for
    Gaussian).  When ``m`` does not divide ``d`` the decoded padding coordinates
    carry noise that the truncation discards, so the variance of the returned
    estimate is smaller; ``padded=True`` gives the variance of the zero-padded
    length-``m w`` vector instead (every ``omega_c`` replaced by ``m``), the
    quantity the executors report as ``error`` on the padded length.

    Parameters
    ----------
    assignment : array_like (N, n)
    m : int >= 1
    p : float or array (n,) in [0, 1)
    gradients : array (N, d)
        Partial gradients ``g_i`` (one row per part).
    eps, dist, moments
        The RD entry distribution (as in :func:`rd_upper_bound`).
    padded : bool
        Variance of the zero-padded length-``m ceil(d/m)`` estimate instead of the returned
        length-``d`` one (equal when ``m`` divides ``d``).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_estimator_variance(A, 1, 0.0, [[1.0], [2.0], [3.0]])   # m = 1, no stragglers: exact
    0.0
    >>> G = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]   # d = 3, m = 2: w = 2, omega = (2, 1, 2)
    >>> rd_estimator_variance(A, 2, 0.0, G), rd_estimator_variance(A, 2, 0.0, G, padded=True)
    (0.5, 0.5)
    >>> G = [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]   # the coordinate with omega = 1
    >>> rd_estimator_variance(A, 2, 0.0, G), rd_estimator_variance(A, 2, 0.0, G, padded=True)
    (0.0, 0.5)
    """
    a = bound_args(assignment, m)
    A, m = a.A, a.m
    N, n = A.shape
    G = _check_gradients(gradients, N)
    padded = check_bool("padded", padded)
    r = _regular_replication(A)
    q = straggling_probabilities(p, n)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    kappa = mu4 / mu2**2
    d = G.shape[1]
    omega = np.full(d, float(m)) if padded else block_multiplicities(d, m).astype(float)
    H2 = (A.T.astype(float) @ G) ** 2  # h_j[c]^2: (n, d)
    # (kappa - 1 + omega_c)/(1 - p_j) - 1 = (kappa - 2 + omega_c + p_j)/(1 - p_j): with kappa >= 1 and
    # omega_c >= 1 every term below is >= 0, so the sum has no cancellation and the exact case
    # (m = 1, p = 0, kappa = 1) gives exactly 0.0
    per_worker = (H2 @ (kappa - 2.0 + omega) + q * H2.sum(axis=1)) / (1.0 - q)
    return float(np.sum(per_worker) / r**2)


def rd_variance_bound(
    assignment: Any,
    m: int,
    p: Any,
    gradient_bound: float,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
) -> float:
    """Uniform bound ``M`` on the RD variance when every ``||g_i|| <= G``.

    ``||h_j|| <= l_j G`` gives
    ``Var <= M = G^2 sum_j (l_j / r)^2 [(kappa + m - 1)/(1 - p_j) - 1]``, so
    ``E||g_hat||^2 <= M + ||grad L||^2`` (``M_G = 1`` in Theorem 7).  It bounds the
    variance of the returned length-``d`` estimate for every ``d`` (that variance
    is at most the padded one, :func:`rd_estimator_variance` with ``omega_c <= m``).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_variance_bound(A, 2, 0.0, 1.0)      # 3 workers, l_j = r = 2, bracket m - 1 = 1
    3.0
    """
    a = bound_args(assignment, m)
    A, m = a.A, a.m
    G = check_real("gradient_bound", gradient_bound, minimum=0.0)
    r = _regular_replication(A)
    q = straggling_probabilities(p, A.shape[1])
    mu2, mu4 = resolve_moments(eps, dist, moments)
    kappa = mu4 / mu2**2
    loads = A.sum(axis=0).astype(float)
    return float(G**2 * np.sum((loads / r) ** 2 * ((kappa + m - 1) / (1.0 - q) - 1.0)))


def ns_estimator_variance(
    scheme_or_B: Any, p: Any, gradients: Any, *, decoder: Any = None, atol: float = 1e-8, padded: bool = False
) -> float:
    r"""Variance of the fixed-decoder estimator ``X = diag(1_F / (1 - p)) X_0`` (Theorem 6).

    For any encoder with ``B X_0 = T`` (NS guarantees it, theory §40.4) and
    Bernoulli(p_j) stragglers the estimate is unbiased and its length-``d``
    version (the decoded zero-padded vector cut to ``d`` coordinates, as
    returned by the simulator and the executors) has

    .. math:: E\|\hat g - \nabla L\|^2 = \sum_j \frac{p_j}{1-p_j}\sum_{l} X_0[j,l]^2
              \sum_{t < w_l} \tilde g_j[t]^2,
              \quad \tilde g_j = \sum_{k,i} B[kN+i, j]\, g_i[k],

    where ``w_l = min(w, max(d - l w, 0))`` is the number of real coordinates of
    block ``l`` (``w = ceil(d/m)``).  When ``m`` divides ``d`` every ``w_l = w`` and
    this is ``sum_j p_j/(1-p_j) ||X_0[j,:]||^2 ||g~_j||^2``; ``padded=True`` gives
    that expression (the variance of the zero-padded length-``m w`` vector) for
    every ``d``.

    Parameters
    ----------
    scheme_or_B : Scheme (with ``.B`` and ``.decoder``) or array (mN, n)
    p : float or array (n,) in [0, 1)
    gradients : array (N, d), split by :func:`split_blocks`
    decoder : array (n, m), optional
        ``X_0``; taken from the scheme when omitted.
    atol : float
        Refuse (``InvalidArgumentError``) when ``max |B X_0 - T| > atol``: the
        estimator would be biased.
    padded : bool
        Variance of the zero-padded estimate instead of the returned length-``d`` one.

    Examples
    --------
    >>> B = [[1.0, 1.0]]; X0 = [[0.5], [0.5]]          # m = N = 1, two replicas
    >>> ns_estimator_variance(B, 0.5, [[2.0]], decoder=X0)     # 2 * 1 * 0.25 * 4
    2.0
    """
    B, X0 = _encoder_and_reference_decoder(scheme_or_B, decoder)
    mN, n = B.shape
    m = X0.shape[1]
    atol = check_real("atol", atol, minimum=0.0)
    padded = check_bool("padded", padded)
    N = mN // m
    T = np.kron(np.eye(m), np.ones((N, 1)))
    resid = np.abs(B @ X0 - T).max()
    if resid > atol:
        raise InvalidArgumentError("decoder", f"B X_0 != T (max deviation {resid:.3g}); the estimator is biased")
    q = straggling_probabilities(p, n)
    G = _check_gradients(gradients, N)
    d = G.shape[1]
    Gb = split_blocks(G, m)  # (N, m, w)
    w = Gb.shape[2]
    sent = np.einsum("kij,ikw->jw", B.reshape(m, N, n), Gb)  # worker transmissions g~_j
    # real coordinates per block: block l of the returned estimate is cut to w_l = clip(d - l w, 0, w)
    widths = np.full(m, w) if padded else np.clip(d - w * np.arange(m), 0, w)
    prefix = np.concatenate([np.zeros((n, 1)), np.cumsum(sent**2, axis=1)], axis=1)  # sum_{t<u} g~_j[t]^2
    per_block = prefix[:, widths]  # (n, m)
    return float(np.sum(q / (1.0 - q) * np.sum(X0**2 * per_block, axis=1)))
