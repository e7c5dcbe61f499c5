"""Spectral upper bounds for regular-graph assignments (theory §46.1-46.5; Raviv, Tamo, Tandon & Dimakis).

:func:`second_singular_value` is ``σ(A) = ‖A (I - J/n)‖₂`` (§46.1); :func:`spectral_upper_bound` bounds
the error of ``B = A`` with ``s`` stragglers by ``σ² n s / (r² (n - s))`` (§46.2-46.3),
:func:`spectral_decoder_upper_bound` that of any encoder with its reference decoder (§46.1) and
:func:`spectral_rd_upper_bound` Theorem 2's RD bound for every pattern of a size at once (§46.4);
:func:`arrival_decoder_mean_error` is the exact mean those bounds are compared with (§46.5).  The
worst-case lower bound of §46.6 is :func:`gcsim.coding.bounds.worst_case_lower.uncovering_lower_bound`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..._validation import check_bool, check_dense_size
from ...errors import InvalidArgumentError
from ._args import _encoder_and_reference_decoder, _regular_replication, bound_args
from .rd_upper import _rd_bound_from_sums
from .registry import by_stragglers, irregular, not_applicable, proved_for, rd_params, register_bound

__all__ = [
    "second_singular_value",
    "spectral_upper_bound",
    "spectral_decoder_upper_bound",
    "spectral_rd_upper_bound",
    "arrival_decoder_mean_error",
]


_RESCALES = ("arrivals", "optimal")


def _spectral_norm_upper(M: np.ndarray) -> float:
    """``‖M‖₂`` computed by an SVD and enlarged past its rounding error.

    The computed singular values are those of ``M + E`` with ``‖E‖₂ <= c p u ‖M‖₂`` (backward stability
    of the bidiagonalization, ``p = max`` of the dimensions); by Weyl's inequality they differ from the
    exact ones by at most ``‖E‖₂``.  ``10 p u ‖M‖_F`` exceeds that, so the result is ``>= ‖M‖₂``.
    """
    if M.size == 0:
        return 0.0
    top = float(np.linalg.norm(M, 2))
    return top + 10.0 * max(M.shape) * np.finfo(float).eps * float(np.linalg.norm(M))


def _centred(A: np.ndarray) -> np.ndarray:
    """``A (I - J/n)``: every row minus its mean (``A`` restricted to ``1_n^⊥``)."""
    Af = A.astype(float)
    return Af - Af.mean(axis=1, keepdims=True)


def second_singular_value(assignment: Any) -> float:
    r"""``σ(A) = ‖A (I - J/n)‖₂``, the largest singular value of ``A`` on ``1_n^⊥`` (theory §46.1).

    ``σ(A)² = max_{w ⊥ 1, w ≠ 0} ‖A w‖² / ‖w‖²``.  When ``A`` is square and symmetric with constant
    row sums (a regular graph's ``Adj``, or gcsim's ``A = Adj + I``) the all-ones vector is an
    eigenvector and ``σ(A)`` is the **second-largest absolute eigenvalue of A itself**:
    ``max(|θ₂(A)|, |θ_n(A)|)``.  For ``A = Adj + I`` of a ``d``-regular graph with adjacency eigenvalues
    ``d = θ₁ >= θ₂ >= ... >= θ_n`` this is ``max(|θ₂ + 1|, |θ_n + 1|)``, not Raviv et al.'s
    ``λ = max(|θ₂|, |θ_n|)`` of the adjacency.  For a bi-regular ``A`` it is the square root of the
    second-largest eigenvalue of ``Aᵀ A`` (counted with multiplicity, so it equals the largest one,
    ``r ℓ``, when the bipartite graph is disconnected).

    Returns the float computed by an SVD (accurate to a few units of ``max(N, n) u ‖A‖_F``); the bounds
    of this chapter enlarge it past that rounding error before using it.

    Examples
    --------
    >>> import numpy as np
    >>> C5 = np.roll(np.eye(5, dtype=int), 1, axis=1) + np.roll(np.eye(5, dtype=int), -1, axis=1)
    >>> round(second_singular_value(C5), 6)            # cycle C5: eigenvalues 2 cos(2 pi k / 5)
    1.618034
    >>> round(second_singular_value(C5 + np.eye(5, dtype=int)), 6)   # A = Adj + I: |-1.618 + 1|, |0.618 + 1|
    1.618034
    """
    return float(np.linalg.norm(_centred(bound_args(assignment).A), 2))


def _regular_loads(A: np.ndarray) -> int | None:
    loads = A.sum(axis=0)
    return int(loads[0]) if loads.min() == loads.max() else None


def spectral_upper_bound(assignment: Any, s: int, *, rescale: str = "arrivals", normalized: bool = False) -> float:
    r"""Spectral upper bound on the error of ``B = A`` (``m = 1``) with ``s`` stragglers (theory §46.2).

    For an assignment with regular replication ``r`` (every part on ``r`` workers) and every
    non-straggler set ``F`` of size ``f = n - s >= 1``, the decoder ``x = (n / (f r)) 1_F`` (the
    reference decoder ``1/r`` rescaled by ``n/|F|``, ``rescale="arrivals"``) has

    .. math:: err_x(A, F) \le E := \frac{\sigma(A)^2}{r^2}\,\frac{n s}{n - s},

    and when the loads are regular too (``Aᵀ 1 = ℓ 1``) the best rescaling of that decoder per
    pattern (``rescale="optimal"``) has ``err <= N E / (N + E)``.  Either bounds the optimal error
    ``err(A, F)`` (Theorem 1 of §46.2 and Corollary 46.3), and so the optimal error of every encoder
    ``B = A D`` with ``D`` diagonal invertible (RD with ``m = 1``, ``"expander"``, ``"bibd-optimal"``).
    ``σ(A)`` is :func:`second_singular_value` (enlarged past its rounding error).  For ``A = Adj`` of
    a ``d``-regular graph, ``r = d`` and ``σ = λ``: ``E`` is the square of Raviv et al.'s
    ``(λ/d) √(n s / (n - s))``; for gcsim's ``A = Adj + I``, ``r = d + 1`` and ``σ = λ(Adj + I)``.
    ``f = 0`` gives ``N`` (nothing arrives: the error is ``N``).

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
    s : int
        Number of stragglers, ``0 <= s <= n``.
    rescale : {"arrivals", "optimal"}
        Which decoder the bound is proved for (see above).
    normalized : bool
        Divide by ``N``.

    Examples
    --------
    >>> import numpy as np
    >>> petersen = np.array([[1 if (i < 5 and j < 5 and (i - j) % 5 in (1, 4)) or
    ...     (i >= 5 and j >= 5 and (i - j) % 5 in (2, 3)) or abs(i - j) == 5 else 0
    ...     for j in range(10)] for i in range(10)])
    >>> A = petersen + np.eye(10, dtype=int)        # eigenvalues 4, 2, -1: sigma = 2, r = 4
    >>> round(spectral_upper_bound(A, 2), 6)        # (2/4)^2 * 10 * 2 / 8
    0.625
    >>> round(spectral_upper_bound(A, 2, rescale="optimal"), 6)   # N E / (N + E)
    0.588235
    """
    a = bound_args(assignment, s=s)
    A, s, f = a.A, a.s, a.f
    N, n = A.shape
    if rescale not in _RESCALES:
        raise InvalidArgumentError("rescale", f"must be one of {_RESCALES}, got {rescale!r}")
    normalized = check_bool("normalized", normalized)
    r = _regular_replication(A)
    if rescale == "optimal" and _regular_loads(A) is None:
        loads = A.sum(axis=0)
        raise InvalidArgumentError(
            "rescale",
            f"'optimal' needs regular loads (every worker holds the same number of parts; here "
            f"{loads.min()} to {loads.max()}): use rescale='arrivals'",
        )
    if f == 0:
        val = float(N)
    else:
        sigma = _spectral_norm_upper(_centred(A))
        E = sigma**2 * n * s / (r * r * f)
        val = float(E if rescale == "arrivals" else N * E / (N + E))
    return val / N if normalized else val


def spectral_decoder_upper_bound(scheme_or_B: Any, s: int, *, decoder: Any = None) -> float:
    r"""Spectral upper bound for any encoder and its reference decoder rescaled by ``n/|F|`` (theory §46.1).

    For every encoder ``B`` (``mN x n``), every ``X_0`` (``n x m``) and every ``F`` of size
    ``f = n - s >= 1``, the decoder ``X = (n/f) 1_F X_0`` (``fixed_decoder_error(...,
    rescale="arrivals")``) has

    .. math:: \|B X - T\|_F^2 \le \Big(\sigma_{X_0}\sqrt{\tfrac{n s}{f}} + \|B X_0 - T\|_F\Big)^2,
              \qquad \sigma_{X_0} = \big\|\,[B\,\mathrm{diag}(x_l)(I - J/n)]_{l \in [m]}\big\|_2,

    the spectral norm of the ``m`` blocks stacked vertically (``x_l`` column ``l`` of ``X_0``).  It
    bounds the optimal error too.  No regularity is needed; for ``B = A`` with regular
    replication ``r`` and ``X_0 = 1/r`` it is :func:`spectral_upper_bound` (``σ_{X_0} = σ(A)/r``,
    ``B X_0 = T``).  ``f = 0`` gives ``m N``.

    Parameters
    ----------
    scheme_or_B : Scheme (with ``.B`` and ``.decoder``) or array (mN, n)
    s : int
        Number of stragglers.
    decoder : array (n, m), optional
        ``X_0``; taken from the scheme when omitted.

    Examples
    --------
    >>> import numpy as np
    >>> B = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])   # C3 + I: r = 2, sigma = 1
    >>> round(spectral_decoder_upper_bound(B, 1, decoder=np.full((3, 1), 0.5)), 6)   # (1/2)^2 * 3 * 1 / 2
    0.375
    """
    B, X0 = _encoder_and_reference_decoder(scheme_or_B, decoder)
    mN, n = B.shape
    m = X0.shape[1]
    N = mN // m
    a = bound_args(s=s, workers=n)
    s, f = a.s, a.f
    if f == 0:
        return float(mN)
    # the m blocks B diag(x_l) stacked: refuse up front when that matrix would be oversize
    check_dense_size("scheme_or_B", m * mN, n, "the stacked blocks B diag(x_l) of the spectral bound")
    T = np.kron(np.eye(m), np.ones((N, 1)))
    rho = float(np.linalg.norm(B @ X0 - T))
    stacked = np.concatenate([B * X0[:, l][None, :] for l in range(m)], axis=0)
    sigma = _spectral_norm_upper(stacked - stacked.mean(axis=1, keepdims=True))
    # rho is the norm of a computed residual: its rounding error is far below sigma's margin
    return float((sigma * math.sqrt(n * s / f) + rho) ** 2)


def spectral_rd_upper_bound(
    assignment: Any,
    m: int,
    s: int,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    normalized: bool = False,
) -> float:
    r"""Spectral form of :func:`rd_upper_bound` for a bi-regular assignment: every ``|S| = s`` at once (§46.4).

    With replication ``r``, loads ``ℓ`` and ``f = n - s``, every ``F`` has ``S1 = f ℓ`` and
    ``S2 = ‖A 1_F‖² <= (f r / n)² N + σ(A)² f s / n``; the Theorem 2 bound is increasing in ``S2``, so

    .. math:: E_D\,err(B, F) \le m\Big[N - \frac{\mu_2^2 S_1^2}{\mu_2^2 S_2^{\rm cap}
              + (\mu_4 + (m-2)\mu_2^2) S_1}\Big]

    for every ``F`` of size ``f`` chosen independently of the RD draw (an expectation bound, like
    :func:`rd_upper_bound`).  For ``m = 1`` and ``mu4 = mu2^2`` (RD(0), Rademacher) it equals
    ``N E / (N + E)`` of :func:`spectral_upper_bound` with ``rescale="optimal"``.

    Examples
    --------
    >>> import numpy as np
    >>> B = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])          # C3 + I: r = l = 2, sigma = 1
    >>> bool(abs(spectral_rd_upper_bound(B, 1, 1) - spectral_upper_bound(B, 1, rescale="optimal")) < 1e-12)
    True
    >>> round(spectral_rd_upper_bound(B, 2, 1), 6)      # S1 = 4, S2 <= 16/3 + 2/3 = 6: 2 [3 - 16/10]
    2.8
    """
    a = bound_args(assignment, m, s=s, normalized=normalized, rd=(eps, dist, moments))
    A, m, s, f = a.A, a.m, a.s, a.f
    N, n = A.shape
    r = _regular_replication(A)
    ell = _regular_loads(A)
    if ell is None:
        loads = A.sum(axis=0)
        raise InvalidArgumentError(
            "assignment",
            f"needs regular loads (every worker holds the same number of parts; here {loads.min()} to "
            f"{loads.max()}): use rd_upper_bound per pattern or worst_case_rd_upper_bound",
        )
    sigma = _spectral_norm_upper(_centred(A))
    S1 = float(f * ell)
    S2cap = (f * r / n) ** 2 * N + sigma**2 * f * s / n
    val = float(_rd_bound_from_sums(N, m, S1, S2cap, *a.moments))
    return val / (m * N) if a.normalized else val


def arrival_decoder_mean_error(assignment: Any, s: int, *, exact: bool = False):
    r"""Exact mean over the ``C(n, s)`` straggler sets of the error of ``x = (n/(f r)) 1_F`` for ``B = A`` (§46.5).

    For regular replication ``r``, ``n >= 2`` and ``f = n - s >= 1``:

    .. math:: \binom ns^{-1}\sum_{|S| = s} err_x(A, [n]\setminus S) = \frac{s\,N\,(n - r)}{f\,r\,(n - 1)},

    whatever the graph: the spectrum only decides how the error spreads over the patterns.  The
    worst pattern is at least this mean, so :func:`spectral_upper_bound` (``rescale="arrivals"``) is
    within the factor ``σ(A)² n (n-1) / (r N (n - r))`` of that decoder's worst case.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> arrival_decoder_mean_error(A, 1, exact=True)          # 1 * 3 * 1 / (2 * 2 * 2)
    Fraction(3, 8)
    """
    exact = check_bool("exact", exact)
    A = bound_args(assignment).A
    N, n = A.shape
    if n < 2:
        raise InvalidArgumentError("assignment", f"needs at least 2 workers, got {n}")
    a = bound_args(s=s, workers=n)
    s, f = a.s, a.f
    if f == 0:
        raise InvalidArgumentError("s", f"must leave at least one worker (s <= {n - 1}): the decoder divides by f")
    r = _regular_replication(A)
    val = Fraction(s * N * (n - r), f * r * (n - 1))
    return val if exact else float(val)


def _column_scaled_blocks(scheme) -> str | None:
    """Why ``B`` is not ``1_m ⊗ (A diag(c))`` with ``c_j != 0`` (the form Prop. 5.5 reduces to ``B = A``), or None."""
    A = np.asarray(scheme.assignment)
    N, n = A.shape
    blocks = np.asarray(scheme.B, dtype=float).reshape(scheme.m, N, n)
    if any(not np.array_equal(blocks[k], blocks[0]) for k in range(1, scheme.m)):
        return "its m blocks B^(k) differ (only B = A diag(c), or naive stacking of it, has this bound)"
    first = blocks[0]
    if not np.array_equal(first != 0, A == 1):
        return "B is not non-zero exactly on the support of A"
    top = np.where(A == 1, first, -np.inf).max(axis=0)
    low = np.where(A == 1, first, np.inf).min(axis=0)
    held = A.any(axis=0)
    if not np.array_equal(top[held], low[held]):
        return "a column of B is not a constant multiple of the column of A (B != A diag(c))"
    return None


@register_bound(
    "spectral_upper",
    "upper",
    "pattern",
    "(m-1) N + E, E = sigma(A)^2 n s / (r^2 (n-s)); N E / (N + E) with regular loads "
    "(theory §46.2-46.3; B = A diag(c) or its naive stacking, regular replication r)",
)
def _spectral_upper(scheme, masks):
    A = np.asarray(scheme.assignment)
    why = _column_scaled_blocks(scheme) or irregular(A, 1)
    if why:
        raise not_applicable(
            "spectral_upper",
            f"{why}; it needs B = A diag(c) (or naive stacking of it) and regular replication -- "
            "'spectral_decoder_upper' applies to any scheme with a reference decoder, 'spectral_rd_upper' to RD",
        )
    rescale = "optimal" if irregular(A, 0) is None else "arrivals"
    base = float((scheme.m - 1) * A.shape[0])  # naive stacking: (m - 1) N + err(A, F) (theory §5.4, Prop. 5.5)
    return by_stragglers(masks, lambda s: base + spectral_upper_bound(A, s, rescale=rescale))


@register_bound(
    "spectral_decoder_upper",
    "upper",
    "pattern",
    "(sigma_X0 sqrt(n s / f) + ||B X_0 - T||_F)^2 (theory §46.1; any scheme with a reference decoder)",
)
def _spectral_decoder_upper(scheme, masks):
    if getattr(scheme, "decoder", None) is None:
        raise not_applicable("spectral_decoder_upper", "the scheme has no reference decoder X_0")
    return by_stragglers(masks, lambda s: spectral_decoder_upper_bound(scheme, s))


@register_bound(
    "spectral_rd_upper",
    "upper",
    "expectation",
    "Theorem 2 with S2 <= (f r / n)^2 N + sigma(A)^2 f s / n (theory §46.4; RD, bi-regular assignment)",
)
def _spectral_rd_upper(scheme, masks):
    method = getattr(scheme, "method", None)
    if not proved_for(scheme, "spectral_rd_upper"):
        raise not_applicable("spectral_rd_upper", f"it is proved for RD encoders, got method {method!r}")
    A = np.asarray(scheme.assignment)
    why = irregular(A, 1) or irregular(A, 0)
    if why:
        raise not_applicable(
            "spectral_rd_upper", f"{why}; it needs a bi-regular assignment -- use 'rd_upper' (per pattern)"
        )
    eps, dist = rd_params(scheme)
    return by_stragglers(masks, lambda s: spectral_rd_upper_bound(A, scheme.m, s, eps, dist))
