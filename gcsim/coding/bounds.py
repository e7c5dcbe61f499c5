"""Bounds, closed forms and estimator theory for approximate gradient coding (theory §45).

Notation (theory §5.1): assignment ``A`` in {0,1}^{N x n}; ``N_i`` the holders of
part ``i``; a straggler pattern is given by its boolean *non-straggler* mask
``F`` (True = the worker arrived); ``c_i(F) = |N_i ∩ F|``.  Errors are raw
squared errors ``err(B, F) = min_X ||B_F X - T||_F^2`` with ``T = I_m ⊗ 1_N``
unless a function says ``normalized`` (divided by ``m N``).

Every statement implemented here is proved in ``docs/theory/45_bounds.md``:

* :func:`rank_lower_bound` -- ``err(B, F) >= sum_i (m - c_i(F))^+`` for *every*
  encoder respecting the support of ``A`` (Theorem 1);
  :func:`worst_case_rank_lower_bound` maximizes it over ``|S| = s``.
* :func:`rd_upper_bound` -- for the random-diagonal encoder RD(eps) (theory §5.4)
  the scaled-sign decoder ``x_l = alpha (d_l)_F`` gives
  ``E_D err(B, F) <= m [N - mu2^2 S1^2 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)]``,
  ``S1 = sum_i c_i``, ``S2 = sum_i c_i^2``, ``mu_q = E d^q`` (Theorem 2); at
  ``eps = 0`` this is theory §45's ``m [N - S1^2 / (S2 + (m-1) S1)]``.
  Specializations :func:`bibd_rd_upper_bound` and :func:`srg_rd_upper_bound`.
* :func:`bibd_optimal_error_m1` / :func:`bibd_naive_error` -- closed forms for
  symmetric BIBDs (Theorem 4).
* :func:`rd_estimator_variance`, :func:`ns_estimator_variance` -- the variance of
  the unbiased straggler-compensated estimators (Theorems 5, 6) as returned, i.e.
  of the length-``d`` estimate (the padding coordinates of the ``m ceil(d/m)``
  blocks are discarded; :func:`block_multiplicities`), and
  :func:`sgd_convergence_bound` (Theorem 7).

Spectral bounds for regular-graph assignments (Raviv, Tamo, Tandon & Dimakis) are proved in
``docs/theory/46_spectral.md``: :func:`second_singular_value` (``σ(A) = ‖A (I - J/n)‖₂``, the
second-largest absolute eigenvalue of a symmetric regular ``A``), :func:`spectral_upper_bound`
(``err <= σ² n s / (r² (n - s))`` for ``B = A``, theory §46.2), :func:`spectral_decoder_upper_bound`
(any encoder and reference decoder, §46.1), :func:`spectral_rd_upper_bound` (RD, §46.4),
:func:`arrival_decoder_mean_error` (§46.5) and the worst-case :func:`uncovering_lower_bound` (§46.6).

The statements are our formalization of the model of theory §5.1 (reconstruction:
the source papers were available only as abstracts).

References
----------
* C. Eckart and G. Young, "The approximation of one matrix by another of lower
  rank", Psychometrika 1(3), 1936 (Theorem 1).
* M. Glasgow and M. Wootters, "Approximate gradient coding with optimal
  decoding", IEEE JSAIT 2(3), 2021 (the ``m = 1`` optimal-decoding setting).
* A. E. Brouwer and W. H. Haemers, *Spectra of Graphs*, Springer 2012, §9.1
  (SRG eigenvalues, Lemma 3).
* N. Raviv, I. Tamo, R. Tandon and A. G. Dimakis, "Gradient coding from cyclic MDS codes and
  expander graphs", IEEE Trans. Inf. Theory 66(12), 2020 (ICML 2018) (chapter 46).
* L. Bottou, F. E. Curtis and J. Nocedal, "Optimization methods for large-scale
  machine learning", SIAM Review 60(2), 2018, Thm. 4.10 (Theorem 7).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._validation import (
    check_binary_matrix,
    check_bool,
    check_dense_size,
    check_finite_array,
    check_int,
    check_mask,
    check_real,
)
from ..combinatorics.srg_feasibility import srg_eigenvalues
from ..errors import ImpossibleParametersError, InvalidArgumentError
from ..limits import check_entries

__all__ = [
    "part_coverage",
    "rank_lower_bound",
    "WorstCaseResult",
    "worst_case_rank_lower_bound",
    "partial_uncovering_lower_bound",
    "diagonal_dominance_upper_bound",
    "rd_moments",
    "rd_optimal_scale",
    "rd_scaled_sign_error",
    "rd_upper_bound",
    "worst_case_rd_upper_bound",
    "bibd_rd_upper_bound",
    "srg_edge_range",
    "srg_rd_upper_bound",
    "bibd_optimal_error_m1",
    "bibd_naive_error",
    "split_blocks",
    "block_multiplicities",
    "resolve_moments",
    "straggling_probabilities",
    "rd_estimator_variance",
    "rd_variance_bound",
    "ns_estimator_variance",
    "sgd_convergence_bound",
    "second_singular_value",
    "spectral_upper_bound",
    "spectral_decoder_upper_bound",
    "spectral_rd_upper_bound",
    "arrival_decoder_mean_error",
    "uncovering_lower_bound",
]

_DISTS = ("rademacher", "gaussian")


# ----------------------------------------------------------------------------------------------
# argument helpers
# ----------------------------------------------------------------------------------------------


def _assignment(value: Any, name: str = "assignment") -> np.ndarray:
    """The 0/1 assignment of an array, a combinatorial object or a scheme."""
    arr = getattr(value, "assignment", value)
    A = check_binary_matrix(name, arr)
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise InvalidArgumentError(name, f"must have at least one part and one worker, got shape {A.shape}")
    return A


def _counts(masks: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``c[t, i] = |F_t ∩ W_i|``, the non-stragglers holding part ``i``, as int64.

    A float64 BLAS product (exact: every partial sum is an integer <= n < 2^53), some 50 times
    faster than NumPy's integer matmul at n ~ 10^3 (which has no BLAS kernel).
    """
    return np.rint(masks.astype(np.float64) @ A.T.astype(np.float64)).astype(np.int64)


def _masks(name: str, value: Any, n: int) -> tuple[np.ndarray, bool]:
    """Masks as a 2-D boolean batch, and whether the input was a single 1-D mask."""
    arr = check_mask(name, value, n)
    single = arr.ndim == 1
    return np.atleast_2d(arr), single


def _out(values: np.ndarray, single: bool):
    return values[0].item() if single else values


def part_coverage(assignment: Any, nonstragglers: Any) -> np.ndarray:
    """Coverage counts ``c_i(F) = |N_i ∩ F|`` of every part under every pattern.

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
        0/1 assignment matrix (parts x workers).
    nonstragglers : bool array (n,) or (count, n)
        True where the worker arrived (the set ``F``).

    Returns
    -------
    numpy.ndarray of int64, shape (N,) or (count, N)

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1]]
    >>> part_coverage(A, [True, False, True]).tolist()
    [1, 1]
    """
    A = _assignment(assignment)
    masks, single = _masks("nonstragglers", nonstragglers, A.shape[1])
    c = masks.astype(np.int64) @ A.T
    return c[0] if single else c


# ----------------------------------------------------------------------------------------------
# Theorem 1: the per-part rank lower bound
# ----------------------------------------------------------------------------------------------


def rank_lower_bound(assignment: Any, m: int, nonstragglers: Any):
    r"""Per-part rank lower bound ``sum_i (m - c_i(F))^+`` on the raw optimal error.

    For every encoder ``B`` whose support is contained in that of ``A`` (theory §5.1)
    and every decoder ``X``, the ``m`` rows of ``B_F X - T`` belonging to part
    ``i`` form ``M_i X - I_m`` with ``rank(M_i X) <= c_i(F)``, so by
    Eckart--Young their squared Frobenius norm is at least ``(m - c_i(F))^+``
    (Theorem 1 of ``docs/theory/45_bounds.md``).

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
    m : int >= 1
        Communication reduction (number of blocks).
    nonstragglers : bool array (n,) or (count, n)

    Returns
    -------
    int or numpy.ndarray of int64 (count,)

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rank_lower_bound(A, 2, [True, True, False])    # c = (2, 1, 1)
    2
    >>> rank_lower_bound(A, 2, [[True] * 3, [False] * 3]).tolist()
    [0, 6]
    """
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    masks, single = _masks("nonstragglers", nonstragglers, A.shape[1])
    c = _counts(masks, A)
    return _out(np.maximum(m - c, 0).sum(axis=1), single)


@dataclass(frozen=True)
class WorstCaseResult:
    """Maximum of a per-pattern bound over straggler sets of size ``s``.

    Attributes
    ----------
    value : float
        The number to use as the worst-case bound.  Exact mode: the maximum
        over all ``C(n, s)`` sets.  Search mode: for a *lower* bound
        (:func:`worst_case_rank_lower_bound`) the largest value found, which is
        attained by ``stragglers`` and therefore still a valid lower bound on
        the worst-case error; for an *upper* bound
        (:func:`worst_case_rd_upper_bound`) a certified upper bound on the
        maximum (a relaxation, ``>= attained``), so it is still a valid upper
        bound on the worst case.
    mask : numpy.ndarray of bool (n,)
        Non-straggler mask attaining ``attained``.
    stragglers : tuple of int
        The straggler set ``S`` (indices of False entries of ``mask``).
    exact : bool
        ``value`` is the exact maximum (enumerated, or certified because the
        relaxation is attained).
    method : str
        How ``value`` was obtained.
    attained : float
        The bound at ``stragglers``: the maximum when enumerated, otherwise the
        best value the greedy + swap local search found (a lower estimate of
        the maximum).
    """

    value: float
    mask: np.ndarray
    stragglers: tuple
    exact: bool
    method: str
    attained: float


def _enumerate_masks(n: int, s: int, chunk: int = 8192):
    """Yield batches of non-straggler masks for every s-subset S of [n] (lexicographic)."""
    it = itertools.combinations(range(n), s)
    while True:
        combos = list(itertools.islice(it, chunk))
        if not combos:
            return
        masks = np.ones((len(combos), n), dtype=bool)
        if s:
            idx = np.asarray(combos, dtype=np.int64)
            masks[np.arange(len(combos))[:, None], idx] = False
        yield masks


def _maximize_over_stragglers(
    objective: Callable[[np.ndarray], np.ndarray],
    n: int,
    s: int,
    exact_limit: int,
    seed: int,
    restarts: int,
    max_iter: int = 500,
    starts: tuple = (),
    start_names: str = "",
) -> WorstCaseResult:
    """Maximize a batched objective of non-straggler masks over all ``|S| = s``.

    Exact by enumeration when ``C(n, s) <= exact_limit``; otherwise greedy
    construction plus best-improvement swap local search from the greedy start,
    the given ``starts`` (masks with ``s`` stragglers, e.g. the constructive sets of
    closed-form bounds) and ``restarts - 1`` random ones, reported as a lower
    estimate of the maximum.  The local search never decreases the objective, so
    the result is at least the objective at every given start (theory §45.8).
    """
    total = math.comb(n, s)
    if total <= exact_limit:
        best_val, best_mask = -np.inf, None
        for masks in _enumerate_masks(n, s):
            vals = np.asarray(objective(masks), dtype=float)
            k = int(np.argmax(vals))
            if vals[k] > best_val:
                best_val, best_mask = float(vals[k]), masks[k].copy()
        assert best_mask is not None  # C(n, s) >= 1 patterns were enumerated
        return WorstCaseResult(
            best_val,
            best_mask,
            tuple(np.flatnonzero(~best_mask).tolist()),
            True,
            f"exact (enumerated {total} sets)",
            best_val,
        )

    rng = np.random.default_rng(seed)

    def local_search(mask: np.ndarray) -> tuple[float, np.ndarray]:
        val = float(objective(mask[None])[0])
        for _ in range(max_iter):
            out_idx = np.flatnonzero(~mask)  # stragglers that may return
            in_idx = np.flatnonzero(mask)  # workers that may straggle instead
            cand = np.repeat(mask[None], out_idx.size * in_idx.size, axis=0)
            rows = np.arange(cand.shape[0])
            cand[rows, np.repeat(out_idx, in_idx.size)] = True
            cand[rows, np.tile(in_idx, out_idx.size)] = False
            vals = np.asarray(objective(cand), dtype=float)
            k = int(np.argmax(vals))
            if vals[k] <= val + 1e-12:
                break
            val, mask = float(vals[k]), cand[k]
        return val, mask

    # greedy: add stragglers one at a time, each time the one that increases the objective most
    mask = np.ones(n, dtype=bool)
    for _ in range(s):
        idx = np.flatnonzero(mask)
        cand = np.repeat(mask[None], idx.size, axis=0)
        cand[np.arange(idx.size), idx] = False
        vals = np.asarray(objective(cand), dtype=float)
        top = np.flatnonzero(vals >= vals.max() - 1e-12)
        mask = cand[rng.choice(top)]
    starts_all = [mask, *starts]
    for _ in range(max(restarts - 1, 0)):
        start = np.ones(n, dtype=bool)
        start[rng.choice(n, size=s, replace=False)] = False
        starts_all.append(start)
    best_val, best_mask = -np.inf, None
    for start in starts_all:
        val, found = local_search(start)
        if val > best_val:
            best_val, best_mask = val, found
    assert best_mask is not None  # the greedy start is always evaluated
    return WorstCaseResult(
        best_val,
        best_mask,
        tuple(np.flatnonzero(~best_mask).tolist()),
        False,
        f"search (lower estimate of the maximum; greedy + swap local search, "
        f"{len(starts_all)} starts{start_names}, C(n,s)={total} > exact_limit={exact_limit})",
        best_val,
    )


def worst_case_rank_lower_bound(
    assignment: Any, m: int, s: int, *, exact_limit: int = 100_000, seed: int = 0, restarts: int = 8
) -> WorstCaseResult:
    """Worst case over ``|S| = s`` of :func:`rank_lower_bound`.

    ``max_{|S|=s} sum_i (m - c_i(F))^+`` is a lower bound on the worst-case
    optimal error ``max_{|S|=s} err(B, F)`` of every encoder with the support of
    ``A``.  Exact by enumeration when ``C(n, s) <= exact_limit``; otherwise a
    greedy + local search whose result is labelled a lower estimate of the
    maximum (it is still a valid lower bound on the worst-case error, because
    it is attained by the reported straggler set).

    The search starts from the straggler sets that attain the closed forms this
    maximum generalizes -- :func:`uncovering_lower_bound` (theory §46.6) and every
    term of :func:`partial_uncovering_lower_bound` (theory §45.8) -- besides the
    greedy and the random starts; the local search never decreases the rank bound,
    so ``value`` is never below either closed form (theory §45.8, Proposition 10).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> res = worst_case_rank_lower_bound(A, 2, 1)
    >>> res.value, res.exact
    (2.0, True)
    >>> import gcsim
    >>> pg = gcsim.bibd(91, 10, 1)                       # PG(2,9): the search, never below the closed forms
    >>> res = worst_case_rank_lower_bound(pg, 2, 20)
    >>> res.exact, res.value >= partial_uncovering_lower_bound(pg, 2, 20).value == 4.0
    (False, True)
    """
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    n = A.shape[1]
    s = check_int("s", s, minimum=0, maximum=n)
    exact_limit = check_int("exact_limit", exact_limit, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    restarts = check_int("restarts", restarts, minimum=1)
    At = A.T

    def objective(masks):
        return np.maximum(m - masks.astype(np.int64) @ At, 0).sum(axis=1)

    starts: tuple = ()
    if math.comb(n, s) > exact_limit:  # only the search needs them
        starts = (uncovering_lower_bound(A, m, s).mask, *_partial_uncovering_sets(A, m, s))
    return _maximize_over_stragglers(
        objective,
        n,
        s,
        exact_limit,
        seed,
        restarts,
        starts=starts,
        start_names=" (greedy, the closed forms' straggler sets of §46.6 and §45.8, random)",
    )


def _partial_uncovering_terms(A: np.ndarray, m: int, s: int) -> list[tuple[int, int, int]]:
    """``(j, t_j, (j + 1) t_j)`` for ``j = 0..m-1``, ``t_j = min(N, floor(N (s + m - 1 - j) / R))`` (Theorem 9)."""
    N = A.shape[0]
    R = int(A.sum())  # sum_i r_i = sum_j l_j, the number of (part, worker) pairs
    out = []
    for j in range(m):
        a = m - 1 - j
        t = N if R == 0 else min(N, (N * (s + a)) // R)  # exact integer floor
        out.append((j, t, (j + 1) * t))
    return out


def _partial_uncovering_set(A: np.ndarray, m: int, s: int, j: int, t: int) -> np.ndarray:
    """The straggler set of the proof of Theorem 9 for one ``j``, as a non-straggler mask with ``s`` stragglers.

    The ``t`` parts of smallest replication: every holder of the first ``t - 1`` straggles, and enough
    holders of the ``t``-th that at most ``a = m - 1 - j`` of them arrive; padded to ``s`` stragglers
    with the lowest-numbered remaining workers.
    """
    N, n = A.shape
    a = m - 1 - j
    order = np.argsort(A.sum(axis=1), kind="stable")[:t]
    out = np.zeros(n, dtype=bool)
    for i in order[:-1]:
        out |= A[i] == 1
    if t:
        left = np.flatnonzero((A[order[-1]] == 1) & ~out)  # holders of the t-th part still arriving
        out[left[: max(left.size - a, 0)]] = True
    if out.sum() > s:
        # only when every chosen part has r_i < a: then the bound holds at every pattern (proof, case 1)
        out = np.zeros(n, dtype=bool)
    out[np.flatnonzero(~out)[: s - int(out.sum())]] = True
    return ~out


def _partial_uncovering_sets(A: np.ndarray, m: int, s: int) -> list[np.ndarray]:
    return [_partial_uncovering_set(A, m, s, j, t) for j, t, _ in _partial_uncovering_terms(A, m, s) if t > 0]


def partial_uncovering_lower_bound(assignment: Any, m: int, s: int) -> WorstCaseResult:
    r"""Closed-form worst-case lower bound ``max_j (j+1) t_j`` for every scheme (theory §45.8, Theorem 9).

    With ``R = Σ_i r_i = Σ_j ℓ_j`` (the number of ones of ``A``), ``N`` parts and ``s`` stragglers,

    .. math:: \max_{|S|=s}\,err(B, F) \;\ge\; L(s) = \max_{0\le j<m}\,(j+1)\,t_j,\qquad
              t_j = \min\Big(N,\ \Big\lfloor\frac{N\,(s+m-1-j)}{R}\Big\rfloor\Big),

    for every encoder ``B`` with the support of ``A`` and every decoder: ``t_j`` parts can be brought
    to at most ``m - 1 - j`` arrived holders each (the first ``t_j - 1`` to none), and each then
    contributes at least ``j + 1`` to the rank bound of Theorem 1.  With regular loads ``ℓ_j = d₂``
    (``R = n d₂``) this is Munim & Ramamoorthy's lower bound
    ``max_j (j+1) ⌊N (s+m-1-j) / (n d₂)⌋`` (their ``d₂`` = parts per worker; for a square design
    ``⌊(s+m-1-j)/d₂⌋``); the cap at ``N`` can only matter when ``m > r̄ = R/N`` (or a worker holds no
    part), where the uncapped formula can exceed the largest possible error ``m N``.  Its ``j = m - 1``
    term is the uncovering bound ``m ⌊s / r⌋`` of :func:`uncovering_lower_bound` for regular
    replication ``r``.

    Returns
    -------
    WorstCaseResult
        ``value`` is ``L(s)`` (an exact integer, as a float); ``stragglers``/``mask`` the straggler set
        of the proof for the maximizing ``j``, and ``attained`` the rank bound there
        (``>= value``; at least ``(t_j - 1) m + j + 1`` when
        the ``t_j``-th part has at least ``m - 1 - j`` holders).

    Examples
    --------
    >>> import gcsim
    >>> pg = gcsim.bibd(91, 10, 1)                           # PG(2,9): r = d2 = 10
    >>> [partial_uncovering_lower_bound(pg, 2, s).value for s in (8, 9, 10, 19, 20)]
    [0.0, 1.0, 2.0, 2.0, 4.0]
    >>> res = partial_uncovering_lower_bound(pg, 2, 9)
    >>> len(res.stragglers), res.attained               # 9 of the 10 holders of one part straggle
    (9, 1.0)
    """
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    n = A.shape[1]
    s = check_int("s", s, minimum=0, maximum=n)
    j, t, value = max(_partial_uncovering_terms(A, m, s), key=lambda term: term[2])
    mask = _partial_uncovering_set(A, m, s, j, t)
    attained = float(rank_lower_bound(A, m, mask))
    how = (
        f"closed form max_j (j+1) min(N, floor(N (s+m-1-j) / R)), R = {int(A.sum())}: maximized at j = {j}, "
        f"t = {t}; attained = rank bound at the reported stragglers"
    )
    return WorstCaseResult(float(value), mask, tuple(np.flatnonzero(~mask).tolist()), False, how, attained)


# ----------------------------------------------------------------------------------------------
# Theorem 8: the diagonal-dominance upper bound (any encoder, every pattern)
# ----------------------------------------------------------------------------------------------


def _encoder_and_m(scheme_or_B: Any, m: Any) -> tuple[np.ndarray, int]:
    """``B`` (``mN x n``, finite) and ``m`` from a scheme (``.B``, ``.m``) or an array and ``m=``."""
    B = check_finite_array("scheme_or_B", getattr(scheme_or_B, "B", scheme_or_B), ndim=2)
    if m is None:
        m = getattr(scheme_or_B, "m", None)
        if m is None:
            raise InvalidArgumentError("m", "pass m= (the number of blocks) with a bare encoding matrix")
    m = check_int("m", m, minimum=1)
    if B.shape[0] == 0 or B.shape[1] == 0 or B.shape[0] % m:
        raise InvalidArgumentError("scheme_or_B", f"must have shape (m N, n) with m = {m} dividing mN, got {B.shape}")
    return B, m


def diagonal_dominance_upper_bound(scheme_or_B: Any, nonstragglers: Any, *, m: Any = None, normalized: bool = False):
    r"""Diagonal-dominance upper bound on the optimal error, for any encoder and every pattern (Theorem 8).

    Let ``Γ = B_Fᵀ B_F`` and ``H = B_Fᵀ T`` (row ``j``: the column sums of worker ``j``'s ``m`` blocks),
    and ``D = diag(Σ_{k ∈ F} |Γ_jk|)``, the absolute row sums of ``Γ``; ``D ⪰ Γ`` (Gershgorin).  Then

    .. math:: err(B, F) \;\le\; \|B_F D^+ H - T\|_F^2 \;\le\; mN - \sum_{j\in F,\ D_{jj}>0}
              \frac{\|H_{j,:}\|^2}{D_{jj}} ,

    the error of the decoder ``X = D⁺ H``.  For ``m = 2`` and ``B = [P; Q]`` it is Munim &
    Ramamoorthy's ``2N - 1ᵀP_F D⁻¹ P_Fᵀ 1 - 1ᵀQ_F D⁻¹ Q_Fᵀ 1`` with ``D`` the diagonal matrix of the
    absolute row sums of ``P_FᵀP_F + Q_FᵀQ_F`` (their Construction 2 bound).  Equality holds when the
    columns of ``B_F`` are orthogonal (``Γ`` diagonal).  It is a deterministic bound (no expectation).

    Parameters
    ----------
    scheme_or_B : Scheme (with ``.B`` and ``.m``) or array (mN, n)
    nonstragglers : bool array (n,) or (count, n)
        True where the worker arrived (the set ``F``).
    m : int, optional
        Number of blocks; taken from the scheme when omitted (required with a bare array).
    normalized : bool
        Divide by ``m N``.

    Returns
    -------
    float or numpy.ndarray (count,)

    Examples
    --------
    >>> import numpy as np
    >>> B = np.eye(3)                                   # orthogonal columns: the bound is the exact error
    >>> diagonal_dominance_upper_bound(B, [True, True, False], m=1)
    1.0
    >>> B = np.array([[1.0, 1.0], [1.0, -1.0]])         # m = 2, N = 1: orthogonal, exact decoding
    >>> diagonal_dominance_upper_bound(B, [True, True], m=2)
    0.0
    >>> A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])   # B = A, m = 1: err(F = [3]) = 0
    >>> diagonal_dominance_upper_bound(A, [True, True, True], m=1)          # Γ rows (2 1 1): 3 - 3 * 4 / 4
    0.0
    """
    B, m = _encoder_and_m(scheme_or_B, m)
    normalized = _check_padded_flag("normalized", normalized)
    mN, n = B.shape
    N = mN // m
    masks, single = _masks("nonstragglers", nonstragglers, n)
    # refuse up front what would not fit: the n x n Gram matrix and the (count x n) row sums
    check_dense_size("scheme_or_B", n, n, "the Gram matrix BᵀB of the diagonal-dominance bound")
    check_dense_size("nonstragglers", masks.shape[0], n, "the row sums of the diagonal-dominance bound")
    gram_abs = np.abs(B.T @ B)  # Γ of all workers; Γ_FF is its F x F block
    h2 = (B.reshape(m, N, n).sum(axis=1) ** 2).sum(axis=0)  # ‖H_{j,:}‖², H = Bᵀ T
    D = masks.astype(float) @ gram_abs  # D_jj(F) = Σ_{k ∈ F} |Γ_jk| (row j; used for j ∈ F only)
    use = masks & (D > 0)  # D_jj = 0 iff column j of B is zero, and then H_j = 0
    gain = np.where(use, h2[None, :] / np.where(use, D, 1.0), 0.0).sum(axis=1)
    val = mN - gain
    if normalized:
        val = val / mN
    return _out(np.asarray(val, dtype=float), single)


# ----------------------------------------------------------------------------------------------
# Theorem 2: the scaled-sign decoder upper bound for RD(eps)
# ----------------------------------------------------------------------------------------------


def rd_moments(eps: float = 0.0, dist: str = "rademacher") -> tuple[float, float]:
    """Second and fourth moments ``(E d^2, E d^4)`` of one RD diagonal entry.

    RD(eps) (theory §5.4) draws ``d = b (1 + eps xi)`` with ``xi ~ U[-1, 1]``
    independent of the base sign/scale ``b``: Rademacher ``b = ±1`` (moments 1, 1)
    or standard Gaussian ``b ~ N(0, 1)`` (moments 1, 3).  With
    ``E xi^2 = 1/3`` and ``E xi^4 = 1/5``:
    ``E (1 + eps xi)^2 = 1 + eps^2/3``, ``E (1 + eps xi)^4 = 1 + 2 eps^2 + eps^4/5``.

    Examples
    --------
    >>> rd_moments(0.0)
    (1.0, 1.0)
    >>> rd_moments(0.0, "gaussian")
    (1.0, 3.0)
    >>> [round(x, 6) for x in rd_moments(0.3)]
    [1.03, 1.18162]
    """
    eps = check_real("eps", eps, minimum=0.0)
    if dist not in _DISTS:
        raise InvalidArgumentError("dist", f"must be one of {_DISTS}, got {dist!r}")
    base2, base4 = (1.0, 1.0) if dist == "rademacher" else (1.0, 3.0)
    return base2 * (1.0 + eps**2 / 3.0), base4 * (1.0 + 2.0 * eps**2 + eps**4 / 5.0)


def resolve_moments(eps: float, dist: str, moments: Any) -> tuple[float, float]:
    """``(E d², E d⁴)``: the given pair ``moments`` (checked), else :func:`rd_moments` of ``(eps, dist)``."""
    if moments is None:
        return rd_moments(eps, dist)
    try:
        mu2, mu4 = moments
    except (TypeError, ValueError):
        raise InvalidArgumentError("moments", f"must be a pair (E d^2, E d^4), got {moments!r}") from None
    mu2 = check_real("moments[0]", mu2, minimum=0.0, strict_min=True)
    mu4 = check_real("moments[1]", mu4, minimum=0.0)
    if mu4 < mu2**2 * (1 - 1e-12):
        raise InvalidArgumentError("moments", f"E d^4 = {mu4} < (E d^2)^2 = {mu2**2} is impossible (Jensen)")
    return mu2, mu4


def _rd_sums(assignment, m, nonstragglers):
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    masks, single = _masks("nonstragglers", nonstragglers, A.shape[1])
    c = _counts(masks, A).astype(float)
    return A, m, c.sum(axis=1), (c**2).sum(axis=1), single


def _rd_quadratic(mu2, mu4, m, S1, S2):
    """Q = mu2^2 S2 + (mu4 + (m-2) mu2^2) S1, the alpha^2 coefficient (divided by m)."""
    return mu2**2 * S2 + (mu4 + (m - 2) * mu2**2) * S1


def _rd_bound_from_sums(N, m, S1, S2, mu2, mu4):
    S1 = np.asarray(S1, dtype=float)
    Q = _rd_quadratic(mu2, mu4, m, S1, np.asarray(S2, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(Q > 0, mu2**2 * S1**2 / np.where(Q > 0, Q, 1.0), 0.0)
    return m * (N - gain)


def rd_optimal_scale(
    assignment: Any, m: int, nonstragglers: Any, eps: float = 0.0, dist: str = "rademacher", *, moments: Any = None
):
    """Optimal scale ``alpha* = mu2 S1 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)`` of the scaled-sign decoder.

    At ``eps = 0`` (Rademacher) ``alpha* = S1 / (S2 + (m-1) S1)`` (theory §45).
    Returns 0 where no part is covered (``S1 = 0``).

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_optimal_scale(A, 2, [True, True, True])   # S1 = 6, S2 = 12
    0.3333333333333333
    """
    A, m, S1, S2, single = _rd_sums(assignment, m, nonstragglers)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    Q = _rd_quadratic(mu2, mu4, m, S1, S2)
    alpha = np.where(Q > 0, mu2 * S1 / np.where(Q > 0, Q, 1.0), 0.0)
    return _out(alpha, single)


def rd_scaled_sign_error(
    assignment: Any,
    m: int,
    nonstragglers: Any,
    alpha: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
):
    """Exact ``E_D ||B_F X_alpha - T||_F^2`` of the scaled-sign decoder ``x_l = alpha (d_l)_F``.

    ``= m [N - 2 alpha mu2 S1 + alpha^2 (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)]``
    (Lemma 2 of ``docs/theory/45_bounds.md``), the expectation over the RD draw
    ``D`` for a fixed non-straggler set ``F``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_scaled_sign_error(A, 2, [True, True, True], 0.0)   # X = 0: error m N
    6.0
    """
    A, m, S1, S2, single = _rd_sums(assignment, m, nonstragglers)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    alpha = check_finite_array("alpha", alpha)
    if alpha.ndim > 1 or (alpha.ndim == 1 and alpha.shape[0] != S1.shape[0]):
        raise InvalidArgumentError("alpha", f"must be a scalar or have one entry per pattern, got shape {alpha.shape}")
    N = A.shape[0]
    val = m * (N - 2 * alpha * mu2 * S1 + alpha**2 * _rd_quadratic(mu2, mu4, m, S1, S2))
    return _out(np.asarray(val, dtype=float), single)


def rd_upper_bound(
    assignment: Any,
    m: int,
    nonstragglers: Any,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    normalized: bool = False,
):
    r"""Upper bound on the expected optimal error of RD(eps) via the scaled-sign decoder.

    For a fixed non-straggler set ``F`` (chosen independently of the draw ``D``),

    .. math:: E_D\,err(B, F) \le E_D\,err_{X_{\alpha^*}}(B, F)
              = m\Big[N - \frac{\mu_2^2 S_1^2}{\mu_2^2 S_2 + (\mu_4 + (m-2)\mu_2^2) S_1}\Big],

    with ``S1 = sum_i c_i(F) = sum_{j in F} l_j`` and
    ``S2 = sum_i c_i(F)^2 = 1_F^T A^T A 1_F`` (Theorem 2).  For ``eps = 0`` it
    reads ``m [N - S1^2 / (S2 + (m-1) S1)]``; for Gaussian entries
    ``m [N - S1^2 / (S2 + (m+1) S1)]``.  It bounds an *expectation over the
    encoder draw*: a single draw may exceed it.

    Parameters
    ----------
    assignment : array_like (N, n) or object with ``.assignment``
    m : int >= 1
    nonstragglers : bool array (n,) or (count, n)
    eps : float >= 0
        Multiplicative jitter of RD(eps).
    dist : {"rademacher", "gaussian"}
    moments : (float, float), optional
        ``(E d^2, E d^4)`` of any other mean-zero entry distribution; overrides
        ``eps``/``dist``.
    normalized : bool
        Divide by ``m N``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> rd_upper_bound(A, 2, [True, True, True])      # 2 [3 - 36 / 18]
    2.0
    >>> rd_upper_bound(A, 1, [True, True, True])      # m = 1, all arrive: exact decoding
    0.0
    """
    normalized = check_bool("normalized", normalized)
    A, m, S1, S2, single = _rd_sums(assignment, m, nonstragglers)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    N = A.shape[0]
    val = _rd_bound_from_sums(N, m, S1, S2, mu2, mu4)
    if normalized:
        val = val / (m * N)
    return _out(val, single)


def _coverage_relaxation(A: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(S1(F), S2(F))`` with ``|F| = f`` satisfies ``S1 = b`` and ``S2 <= cap[b]`` for some row.

    Returns ``(b, cap)``: the integers ``b`` from ``S1_min`` (the ``f`` smallest
    loads) to ``S1_max`` (the ``f`` largest) and an integer cap on ``S2(F)`` for
    every ``F`` with ``S1(F) = b``, the smallest of three bounds (Lemma 2a of
    ``docs/theory/45_bounds.md``):

    (a) rows: ``(Gamma 1_F)_j <= Gamma_jj +`` the ``f - 1`` largest off-diagonal
        entries of row ``j`` of ``Gamma = A^T A``; sum over the ``f`` largest rows;
    (b) spectrum: ``S2 = 1_F^T Gamma 1_F <= g f^2 / n + theta f (n - f) / n`` when
        ``Gamma 1 = g 1`` (``theta`` the largest eigenvalue of ``Gamma`` on ``1^perp``),
        ``<= lambda_max f`` otherwise; computed in floating point and enlarged by
        ``n eps ||Gamma||_F``, which exceeds the eigenvalue error of a backward-stable
        symmetric eigensolver (Weyl's inequality);
    (c) parts: ``S2 = sum_i c_i^2`` with ``0 <= c_i <= min(r_i, f)`` and
        ``sum_i c_i = b``: filling the largest caps first gives a vector that
        weakly majorizes every such ``c`` (Tomić–Weyl for the convex increasing ``x^2``).
    """
    n = A.shape[1]
    loads = np.sort(A.sum(axis=0).astype(np.int64))
    if f == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    b = np.arange(int(loads[:f].sum()), int(loads[-f:].sum()) + 1, dtype=np.int64)
    gram = A.T.astype(np.int64) @ A.astype(np.int64)
    diag = np.diag(gram).copy()
    off = np.sort(gram - np.diag(diag), axis=1)
    rows = diag + (off[:, n - (f - 1) :].sum(axis=1) if f > 1 else 0)
    cap = int(np.sort(rows)[-f:].sum())  # (a)
    G = gram.astype(float)
    margin = n * np.finfo(float).eps * float(np.linalg.norm(G))
    col = gram.sum(axis=0)
    if np.all(col == col[0]):
        P = np.eye(n) - 1.0 / n
        theta = max(float(np.linalg.eigvalsh(P @ G @ P)[-1]), 0.0)
        spectral = col[0] * f * f / n + (theta + margin) * f * (n - f) / n
    else:
        spectral = (float(np.linalg.eigvalsh(G)[-1]) + margin) * f
    cap = min(cap, int(math.floor(spectral + margin * f)))  # (b)
    caps = np.sort(np.minimum(A.sum(axis=1).astype(np.int64), f))[::-1]  # (c)
    cum = np.concatenate([[0], np.cumsum(caps)])
    cumsq = np.concatenate([[0], np.cumsum(caps * caps)])
    full = np.searchsorted(cum, b, side="right") - 1  # caps filled completely
    rest = b - cum[full]
    parts = cumsq[full] + rest * rest
    return b, np.minimum(parts, cap)


def worst_case_rd_upper_bound(
    assignment: Any,
    m: int,
    s: int,
    eps: float = 0.0,
    dist: str = "rademacher",
    *,
    moments: Any = None,
    exact_limit: int = 100_000,
    seed: int = 0,
    restarts: int = 8,
) -> WorstCaseResult:
    """Upper bound on ``max_{|S|=s}`` of :func:`rd_upper_bound`, hence on ``max_{|S|=s} E_D err(B, F)``.

    Exact by enumeration when ``C(n, s) <= exact_limit``.  Otherwise ``value`` is
    a certified upper bound on the maximum: the Theorem 2 bound is increasing in
    ``S2``, so it is at most ``max_b bound(b, cap(b))`` over the possible values
    ``b`` of ``S1(F)`` and the caps ``S2(F) <= cap(b)`` of Lemma 2a; the greedy +
    swap local search reports the best straggler set it found in
    ``stragglers``/``attained`` (a lower estimate of the maximum).  When the two
    meet, ``exact`` is True (e.g. symmetric BIBDs, where ``S1`` and ``S2`` depend
    on ``s`` only).  The value is never above the closed forms this maximum generalizes
    where they apply -- :func:`bibd_rd_upper_bound` (symmetric BIBD), :func:`srg_rd_upper_bound`
    (``A = Adj + I`` or ``Adj`` of an SRG, recognized exactly) and :func:`spectral_rd_upper_bound`
    (bi-regular ``A``): the smallest of them and the relaxation is used (theory §45.8,
    Proposition 11), and ``method`` names it.

    This bounds ``max_{|S|=s} E_D err(B, F)`` (an oblivious adversary that does
    not see the draw), not ``E_D max_S err(B, F)``.

    Examples
    --------
    >>> A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    >>> res = worst_case_rd_upper_bound(A, 2, 1)
    >>> round(res.value, 6), res.exact
    (2.8, True)
    >>> res = worst_case_rd_upper_bound(A, 2, 1, exact_limit=1)   # search + certified relaxation
    >>> round(res.value, 6), round(res.attained, 6), res.exact
    (2.8, 2.8, True)
    """
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    n = A.shape[1]
    s = check_int("s", s, minimum=0, maximum=n)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    exact_limit = check_int("exact_limit", exact_limit, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    restarts = check_int("restarts", restarts, minimum=1)
    At, N = A.T, A.shape[0]

    def sums(masks):
        c = (masks.astype(np.int64) @ At).astype(float)
        return c.sum(axis=1), (c**2).sum(axis=1)

    def objective(masks):
        S1, S2 = sums(masks)
        return _rd_bound_from_sums(N, m, S1, S2, mu2, mu4)

    found = _maximize_over_stragglers(objective, n, s, exact_limit, seed, restarts)
    if found.exact:
        return found
    s1, s2cap = _coverage_relaxation(A, n - s)
    relaxed = _rd_bound_from_sums(N, m, s1.astype(float), s2cap.astype(float), mu2, mu4)
    best = int(np.argmax(relaxed))
    upper = float(relaxed[best])
    s1_found, s2_found = (float(x[0]) for x in sums(found.mask[None]))
    # certified optimal when the search attains the relaxation's maximizer (same sums, same float formula)
    certified = bool(s1_found == s1[best] and s2_found == s2cap[best])
    source = f"the relaxation of Lemma 2a (maximized at S1 = {int(s1[best])}, S2 <= {int(s2cap[best])})"
    # never weaker than the closed forms this maximum generalizes (theory §45.8, Proposition 11)
    for name, closed in _rd_closed_forms(A, m, s, (mu2, mu4)):
        if closed < upper:
            upper, source = closed, name
    certified = certified or found.attained >= upper
    value = found.attained if certified else max(upper, found.attained)
    how = (
        f"exact (the search attains {source})"
        if certified
        else f"upper bound from {source}; "
        f"the search attained {found.attained:.6g} at the reported stragglers "
        f"(greedy + swap local search, C(n,s)={math.comb(n, s)} > exact_limit={exact_limit})"
    )
    return WorstCaseResult(value, found.mask, found.stragglers, certified, how, found.attained)


def _srg_of_assignment(A: np.ndarray) -> tuple[int, int, int, int, bool] | None:
    """``(v, k, λ, μ, include_self)`` when ``A = Adj + I`` or ``A = Adj`` of a strongly regular graph, else None.

    Exact: ``Adj`` symmetric 0/1 with zero diagonal and constant degree ``k``, ``(Adj²)_ij = λ`` on every
    edge and ``μ`` on every non-edge (``Adj²`` is computed in floating point, exact for integers below
    ``2^53``), i.e. ``Adj² = k I + λ Adj + μ (J - I - Adj)``; complete and empty graphs are left out.
    """
    v, n = A.shape
    if v != n or v < 3 or not np.array_equal(A, A.T):
        return None
    diag = np.diag(A)
    if np.all(diag == 1):
        adj, include_self = A - np.eye(v, dtype=A.dtype), True
    elif np.all(diag == 0):
        adj, include_self = A, False
    else:
        return None
    deg = adj.sum(axis=1)
    k = int(deg[0])
    if np.any(deg != k) or k in (0, v - 1):
        return None
    sq = adj.astype(float) @ adj.astype(float)
    edge = adj == 1
    non_edge = ~edge & ~np.eye(v, dtype=bool)
    lam_vals, mu_vals = sq[edge], sq[non_edge]
    if lam_vals.min() != lam_vals.max() or mu_vals.min() != mu_vals.max():
        return None
    return v, k, int(lam_vals[0]), int(mu_vals[0]), include_self


def _rd_closed_forms(A: np.ndarray, m: int, s: int, moments: tuple[float, float]) -> list[tuple[str, float]]:
    """The closed-form upper bounds on ``max_{|S|=s}`` of the Theorem 2 bound that apply to ``A``.

    Corollary 3 (symmetric BIBD), Corollary 4 with Lemma 3 (SRG, ``A = Adj + I`` or ``Adj``) and the
    spectral form of §46.4 (bi-regular ``A``); each is an upper bound on the maximum (theory §45.8).
    """
    N, n = A.shape
    out: list[tuple[str, float]] = []
    gram = A.T.astype(np.int64) @ A.astype(np.int64)
    k_col = int(gram[0, 0])
    off = gram[~np.eye(n, dtype=bool)]
    if N == n and n >= 2 and np.all(np.diag(gram) == k_col) and off.min() == off.max():
        lam = int(off[0])
        if lam * (n - 1) == k_col * (k_col - 1) and np.all(A.sum(axis=1) == k_col):
            out.append(("Corollary 3 (symmetric BIBD)", bibd_rd_upper_bound(n, k_col, lam, m, s, moments=moments)))
    srg = _srg_of_assignment(A)
    if srg is not None:
        v, k, lam, mu, include_self = srg
        try:
            value = srg_rd_upper_bound(v, k, lam, mu, m, s, include_self=include_self, moments=moments)
        except (ImpossibleParametersError, InvalidArgumentError):  # degenerate parameters: no closed form
            pass
        else:
            out.append((f"Corollary 4 (SRG{(v, k, lam, mu)}, Lemma 3)", value))
    r, loads = A.sum(axis=1), A.sum(axis=0)
    if r.min() == r.max() > 0 and loads.min() == loads.max():
        out.append(("the spectral form of §46.4", spectral_rd_upper_bound(A, m, s, moments=moments)))
    return out


def _check_symmetric_bibd(v, k, lam):
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=1, maximum=v)
    lam = check_int("lam", lam, minimum=0, maximum=k)
    if lam * (v - 1) != k * (k - 1):
        raise ImpossibleParametersError(
            "symmetric BIBD identity lambda (v - 1) = k (k - 1)",
            f"(v, k, lam) = ({v}, {k}, {lam}): {lam}*{v - 1} != {k}*{k - 1}",
        )
    return v, k, lam


def bibd_rd_upper_bound(
    v: int, k: int, lam: int, m: int, s: int, eps: float = 0.0, dist: str = "rademacher", *, moments: Any = None
) -> float:
    """:func:`rd_upper_bound` for a symmetric (v, k, lambda) BIBD; depends on ``s`` only.

    With ``f = v - s`` arrived workers, ``S1 = f k`` and, from
    ``A^T A = (k - lambda) I + lambda J``, ``S2 = (k - lambda) f + lambda f^2``
    for *every* F (Corollary 3).  Hence the bound is also the worst case over
    ``|S| = s``.

    Examples
    --------
    >>> round(bibd_rd_upper_bound(91, 10, 1, 2, 20), 4)     # PG(2,9), m = 2, s = 20
    24.2222
    >>> bibd_rd_upper_bound(7, 3, 1, 1, 0)                   # Fano, m = 1, nobody straggles
    0.0
    """
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    m = check_int("m", m, minimum=1)
    s = check_int("s", s, minimum=0, maximum=v)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    f = v - s
    S1, S2 = f * k, (k - lam) * f + lam * f * f
    return float(_rd_bound_from_sums(v, m, S1, S2, mu2, mu4))


def _restricted_eigenvalues(v: int, k: int, lam: int, mu: int) -> tuple[float, float]:
    """Restricted eigenvalues ``(r, t)``, ``r >= t``, of an SRG(v, k, lambda, mu) as floats.

    Every eigenvector orthogonal to ``1`` has eigenvalue ``r`` or ``t``, the roots of
    ``x^2 - (lambda - mu) x - (k - mu) = 0``; the exact spectrum comes from
    :func:`gcsim.combinatorics.srg_feasibility.srg_eigenvalues` (rounded once to float).
    """
    _, (r, _), (t, _) = srg_eigenvalues(v, k, lam, mu)
    return float(r), float(t)


def _check_srg(v, k, lam, mu):
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=0, maximum=v - 1)
    lam = check_int("lam", lam, minimum=0)
    mu = check_int("mu", mu, minimum=0)
    if k * (k - lam - 1) != (v - k - 1) * mu:
        raise ImpossibleParametersError(
            "SRG identity k (k - lambda - 1) = (v - k - 1) mu", f"(v, k, lam, mu) = ({v}, {k}, {lam}, {mu})"
        )
    if (lam - mu) ** 2 + 4 * (k - mu) < 0:
        raise ImpossibleParametersError("real eigenvalues", f"(lam - mu)^2 + 4 (k - mu) < 0 for {(v, k, lam, mu)}")
    return v, k, lam, mu


def srg_edge_range(v: int, k: int, lam: int, mu: int, f: int) -> tuple[int, int]:
    """Range ``[e_min, e_max]`` containing the number of edges induced by any ``f``-vertex set of an SRG.

    Combines the eigenvalue (expander-mixing) bounds
    ``k f^2 / v + t f (v - f) / v <= 2 e(F) <= k f^2 / v + r f (v - f) / v``
    with the counting bounds ``2 e(F) <= f min(k, f - 1)`` and
    ``2 e(F) >= f k - (v - f) k`` (Lemma 3), rounded inward to integers.

    Examples
    --------
    >>> srg_edge_range(10, 3, 0, 1, 4)     # Petersen, 4 vertices: 0..3 edges (a path P4 exists)
    (0, 3)
    """
    v, k, lam, mu = _check_srg(v, k, lam, mu)
    f = check_int("f", f, minimum=0, maximum=v)
    r, t = _restricted_eigenvalues(v, k, lam, mu)
    base, spread = k * f * f / v, f * (v - f) / v
    hi = min(base + r * spread, f * min(k, max(f - 1, 0)))
    lo = max(base + t * spread, f * k - (v - f) * k, 0)
    return int(math.ceil(lo / 2 - 1e-9)), int(math.floor(hi / 2 + 1e-9))


def srg_rd_upper_bound(
    v: int,
    k: int,
    lam: int,
    mu: int,
    m: int,
    s: int,
    *,
    edges: int | None = None,
    include_self: bool = True,
    eps: float = 0.0,
    dist: str = "rademacher",
    moments: Any = None,
) -> float:
    """:func:`rd_upper_bound` for an SRG assignment, through the edge count inside ``F``.

    Assignment ``A = Adj + I`` (``include_self``, the default of theory §45) or ``A = Adj``.
    With ``f = v - s`` and ``e = e(F)`` edges induced by ``F``:
    ``S1 = f (k + 1)``, ``S2 = (k + 1 - mu) f + mu f^2 + (2 lambda - 2 mu + 4) e`` (with I), and
    ``S1 = f k``, ``S2 = (k - mu) f + mu f^2 + (2 lambda - 2 mu) e`` (without) (Corollary 4).
    If ``edges`` is given the value is exact for every F with that many edges
    (it must lie in the admissible range of :func:`srg_edge_range`);
    otherwise it is the maximum over the admissible range of :func:`srg_edge_range`,
    an upper bound on ``max_{|S|=s}`` of the bound (the bound is increasing in ``S2``).

    Examples
    --------
    >>> round(srg_rd_upper_bound(10, 3, 0, 1, 2, 2, edges=9), 4)   # Petersen, m = 2, s = 2
    5.1594
    >>> round(srg_rd_upper_bound(10, 3, 0, 1, 2, 2), 4)            # worst case: e <= 10
    5.3714
    """
    include_self = check_bool("include_self", include_self)
    v, k, lam, mu = _check_srg(v, k, lam, mu)
    m = check_int("m", m, minimum=1)
    s = check_int("s", s, minimum=0, maximum=v)
    mu2, mu4 = resolve_moments(eps, dist, moments)
    f = v - s
    if include_self:
        S1, base, coef = f * (k + 1), (k + 1 - mu) * f + mu * f * f, 2 * lam - 2 * mu + 4
    else:
        S1, base, coef = f * k, (k - mu) * f + mu * f * f, 2 * lam - 2 * mu
    e_lo, e_hi = srg_edge_range(v, k, lam, mu, f)
    if edges is None:
        e = e_hi if coef >= 0 else e_lo
    else:
        # outside [e_lo, e_hi] no f-vertex set of the graph exists (Lemma 3)
        e = check_int("edges", edges, minimum=e_lo, maximum=e_hi)
    return float(_rd_bound_from_sums(v, m, S1, base + coef * e, mu2, mu4))


# ----------------------------------------------------------------------------------------------
# Theorem 4: closed forms for symmetric BIBDs
# ----------------------------------------------------------------------------------------------


def bibd_optimal_error_m1(v: int, k: int, lam: int, s: int, *, exact: bool = False):
    """Optimal-decoding error of a symmetric (v, k, lambda) BIBD code with ``m = 1``, ``B = A``.

    ``err(F) = v - (v - s) k^2 / (k - lambda + lambda (v - s))`` for every F with
    ``|F| = v - s`` (Theorem 4; ``Gamma_FF = (k - lambda) I + lambda J``,
    ``H_F = k 1``).  The same holds for RD with ``m = 1`` and any non-zero
    diagonal (the column span of ``B_F`` does not change).

    Parameters
    ----------
    exact : bool
        Return a :class:`fractions.Fraction` instead of a float.

    Examples
    --------
    >>> bibd_optimal_error_m1(7, 3, 1, 2, exact=True)      # Fano plane, 2 stragglers
    Fraction(4, 7)
    """
    exact = check_bool("exact", exact)
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    s = check_int("s", s, minimum=0, maximum=v)
    f = v - s
    val = Fraction(v) if f == 0 else v - Fraction(f * k * k, k - lam + lam * f)
    return val if exact else float(val)


def bibd_naive_error(v: int, k: int, lam: int, m: int, s: int, *, exact: bool = False):
    """Optimal-decoding error of naive stacking ``B = 1_m ⊗ A`` on a symmetric BIBD.

    ``err(F) = m v - (v - s) k^2 / (k - lambda + lambda (v - s))`` (Theorem 4(b)):
    stacking gains exactly what ``m = 1`` gains, once, not ``m`` times.

    Examples
    --------
    >>> bibd_naive_error(7, 3, 1, 2, 0, exact=True)
    Fraction(7, 1)
    """
    exact = check_bool("exact", exact)
    v, k, lam = _check_symmetric_bibd(v, k, lam)
    m = check_int("m", m, minimum=1)
    s = check_int("s", s, minimum=0, maximum=v)
    f = v - s
    val = Fraction(m * v) if f == 0 else m * v - Fraction(f * k * k, k - lam + lam * f)
    return val if exact else float(val)


# ----------------------------------------------------------------------------------------------
# Theorems 5-6: unbiased estimators and their variance
# ----------------------------------------------------------------------------------------------


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


def _regular_replication(A: np.ndarray) -> int:
    r = A.sum(axis=1)
    if r.min() != r.max() or r[0] == 0:
        raise InvalidArgumentError(
            "assignment", f"needs regular replication r_i = r > 0 for every part, got r in [{r.min()}, {r.max()}]"
        )
    return int(r[0])


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


def _check_padded(padded: Any) -> bool:
    return check_bool("padded", padded)


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
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    N, n = A.shape
    G = _check_gradients(gradients, N)
    padded = _check_padded(padded)
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
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
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
    padded = _check_padded(padded)
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


# ----------------------------------------------------------------------------------------------
# Theorem 7: SGD convergence
# ----------------------------------------------------------------------------------------------


def sgd_convergence_bound(
    beta: float, eta: float, iterations: int, initial_gap: float, M: float, M_G: float = 1.0
) -> float:
    r"""Bound on ``(1/T) sum_t E||grad L(theta_t)||^2`` for SGD with an unbiased estimate (Theorem 7).

    If ``L`` is ``beta``-smooth and bounded below by ``L*``, ``E[g_hat | theta] = grad L(theta)``
    and ``E[||g_hat||^2 | theta] <= M + M_G ||grad L(theta)||^2``, then for a
    constant step ``0 < eta <= 1 / (beta M_G)``

    .. math:: \frac1T\sum_{t=1}^T E\|\nabla L(\theta_t)\|^2 \le \eta\beta M + \frac{2(L(\theta_1) - L^*)}{T\eta}.

    (Bottou, Curtis & Nocedal, SIAM Review 60(2), 2018, Thm. 4.10.)  For RD,
    ``M_G = 1`` and ``M`` is a bound on the variance, e.g. :func:`rd_variance_bound`.

    Examples
    --------
    >>> sgd_convergence_bound(beta=2.0, eta=0.1, iterations=100, initial_gap=5.0, M=3.0)
    1.6
    """
    beta = check_real("beta", beta, minimum=0.0, strict_min=True)
    eta = check_real("eta", eta, minimum=0.0, strict_min=True)
    T = check_int("iterations", iterations, minimum=1)
    gap = check_real("initial_gap", initial_gap, minimum=0.0)
    M = check_real("M", M, minimum=0.0)
    M_G = check_real("M_G", M_G, minimum=1.0)
    if eta > 1.0 / (beta * M_G) * (1 + 1e-12):
        raise InvalidArgumentError("eta", f"must be <= 1/(beta M_G) = {1.0 / (beta * M_G):.6g}, got {eta}")
    return eta * beta * M + 2.0 * gap / (T * eta)


# ----------------------------------------------------------------------------------------------
# Chapter 46: spectral bounds for regular-graph assignments (Raviv, Tamo, Tandon & Dimakis)
# ----------------------------------------------------------------------------------------------

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
    A = _assignment(assignment)
    return float(np.linalg.norm(_centred(A), 2))


def _regular_loads(A: np.ndarray) -> int | None:
    loads = A.sum(axis=0)
    return int(loads[0]) if loads.min() == loads.max() else None


def _encoder_and_reference_decoder(scheme_or_B: Any, decoder: Any) -> tuple[np.ndarray, np.ndarray]:
    """``B`` (``mN x n``) and ``X_0`` (``n x m``, ``m`` dividing ``mN``) from a scheme or arrays, checked."""
    B = check_finite_array("scheme_or_B", getattr(scheme_or_B, "B", scheme_or_B), ndim=2)
    if decoder is None:
        decoder = getattr(scheme_or_B, "decoder", None)
        if decoder is None:
            raise InvalidArgumentError("decoder", "the scheme has no reference decoder; pass decoder=")
    X0 = check_finite_array("decoder", decoder, ndim=2)
    mN, n = B.shape
    if X0.shape[0] != n or X0.shape[1] < 1 or mN % X0.shape[1]:
        raise InvalidArgumentError("decoder", f"must have shape ({n}, m) with m dividing {mN}, got {X0.shape}")
    return B, X0


def _stragglers_f(s: Any, n: int) -> tuple[int, int]:
    s = check_int("s", s, minimum=0, maximum=n)
    return s, n - s


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
    A = _assignment(assignment)
    N, n = A.shape
    s, f = _stragglers_f(s, n)
    if rescale not in _RESCALES:
        raise InvalidArgumentError("rescale", f"must be one of {_RESCALES}, got {rescale!r}")
    normalized = _check_padded_flag("normalized", normalized)
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


def _check_padded_flag(name: str, value: Any) -> bool:
    return check_bool(name, value)


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
    s, f = _stragglers_f(s, n)
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
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    N, n = A.shape
    s, f = _stragglers_f(s, n)
    normalized = _check_padded_flag("normalized", normalized)
    mu2, mu4 = resolve_moments(eps, dist, moments)
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
    val = float(_rd_bound_from_sums(N, m, S1, S2cap, mu2, mu4))
    return val / (m * N) if normalized else val


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
    A = _assignment(assignment)
    N, n = A.shape
    if n < 2:
        raise InvalidArgumentError("assignment", f"needs at least 2 workers, got {n}")
    s, f = _stragglers_f(s, n)
    if f == 0:
        raise InvalidArgumentError("s", f"must leave at least one worker (s <= {n - 1}): the decoder divides by f")
    r = _regular_replication(A)
    val = Fraction(s * N * (n - r), f * r * (n - 1))
    return val if exact else float(val)


def uncovering_lower_bound(assignment: Any, m: int, s: int) -> WorstCaseResult:
    r"""Worst-case lower bound ``max_{|S|=s} err(B, F) >= m t(s)`` for every encoder and decoder (§46.6).

    ``t(s)`` parts can be left with no arrived holder by ``s`` stragglers whenever their holder sets
    have a union of at most ``s`` workers; each such part contributes ``m`` to the error of every
    encoder with the support of ``A`` (Theorem 1 of theory §45).  Taking parts in increasing
    order of replication and straggling their holders while at most ``s`` workers are used gives
    ``t(s) >= max{t : r_(1) + ... + r_(t) <= s}`` (``floor(s / r)`` for regular replication ``r``:
    the error norm is at least ``sqrt(m floor(s / r))``, the ``√(s/d)``-type bound).  The returned
    ``value`` is :func:`rank_lower_bound` at that straggler set (``>= m t(s)``); it is a valid lower
    bound on the worst case because the set attains it.  :func:`worst_case_rank_lower_bound`
    maximizes the same quantity by enumeration or search and is never smaller when exact.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]])   # r = 2
    >>> res = uncovering_lower_bound(A, 1, 2)
    >>> res.value, res.stragglers
    (1.0, (0, 1))
    """
    A = _assignment(assignment)
    m = check_int("m", m, minimum=1)
    N, n = A.shape
    s, _ = _stragglers_f(s, n)
    r = A.sum(axis=1)
    out = np.zeros(n, dtype=bool)
    uncovered = 0
    for i in np.argsort(r, kind="stable"):  # cheapest parts first
        grown = out | (A[i] == 1)
        if grown.sum() <= s:
            out = grown
            uncovered += 1
    spare = np.flatnonzero(~out)[: s - int(out.sum())]  # fill S up to exactly s stragglers
    out[spare] = True
    mask = ~out
    guaranteed = int(np.searchsorted(np.cumsum(np.sort(r)), s, side="right"))
    value = float(rank_lower_bound(A, m, mask))
    how = (
        f"greedy uncovering: {uncovered} parts without an arrived holder (closed form guarantees "
        f"t(s) >= {guaranteed}); value = rank bound at the reported stragglers"
    )
    return WorstCaseResult(value, mask, tuple(np.flatnonzero(out).tolist()), False, how, value)
