"""Exact parts of the expected error: the rank bound's law, separable codes, rare-event limits (theory §57).

:func:`gcsim.coding.evaluate.expected_error` reports an interval that must cover ``E_S[err]``.
Where the error is a rare event (near-exact codes: most patterns decode exactly, a few lose a
part) a plain Monte Carlo interval covers far less often than its level says.  This module holds
the three pieces the estimator uses instead (theory chapter 57):

* **The rank bound in closed form.** ``L(F) = Σ_i (m − c_i(F))^+`` (Theorem 1 of §45) is a lower
  bound on the error of every encoder supported on ``A`` and every decoder.  Its expectation under
  fixed-``s`` (hypergeometric), Bernoulli (binomial / Poisson-binomial) and stationary Markov
  stragglers is computed exactly (:func:`expected_rank_lower_bound`, Lemma 57.1); Monte Carlo then
  estimates only the excess ``D = err − L >= 0`` (a control variate with coefficient 1, Lemma 57.2),
  so no interval lies below the proven bound.
* **Separable codes exactly.** When the support of ``B`` splits into connected components
  (workers holding one part each, fractional repetition), ``err(F)`` is the sum of the
  components' errors (Lemma 57.3), each a function of a few workers: the expectation is a finite
  sum, computed exactly (:func:`separable_expectation`).
* **Few failures, one-sided.** A stratum whose sample shows fewer than :data:`RARE_FAILURES`
  patterns with ``D > τ`` reports the one-sided limit ``τ + D_max · CP(k, n)`` (Clopper–Pearson
  upper limit of the failure frequency, Lemma 57.4) instead of a ``t`` interval
  (:func:`combine_groups`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._stats import t_quantile
from .._validation import check_int, check_int_array
from ..errors import InvalidArgumentError
from ..limits import check_work
from .schemes import Scheme
from .straggler_models._common import every_mask, pattern_weights

__all__ = [
    "RARE_FAILURES",
    "FAILURE_TOL",
    "SEPARABLE_MAX_WORKERS",
    "SEPARABLE_BUDGET",
    "Group",
    "expected_rank_lower_bound",
    "stratum_rank_lower_bound",
    "part_loads",
    "every_mask",
    "has_closed_form_law",
    "rank_bound_function",
    "support_within_assignment",
    "components",
    "separable_expectation",
    "clopper_pearson_upper",
    "is_rare",
    "RARE_EXTEND",
    "combine_groups",
]

#: A stratum whose sample shows fewer patterns than this with ``D = err − L > τ`` is a rare-event
#: stratum: it reports a one-sided limit, not a ``t`` interval (theory §57.4).
RARE_FAILURES = 30
#: ``τ / (mN)``: excesses below this share of the largest error count as round-off, not failures.
FAILURE_TOL = 1e-10
#: Components of more workers than this are not enumerated (``2^w`` sub-patterns each).
SEPARABLE_MAX_WORKERS = 16
#: Sub-patterns ``Σ_c 2^{w_c}`` the exact route of §57.3 evaluates at least (``exact_limit`` when larger):
#: tiny problems of ``w_c`` columns, a fraction of a second in all.
SEPARABLE_BUDGET = 2**16


def has_closed_form_law(model: Any) -> bool:
    """Whether the law of the coverage counts ``c_i(F)`` is known in closed form (Lemma 57.1).

    Fixed-``s`` (and all-patterns), Bernoulli and Markov models; not delay models or traces.
    """
    return model.subset_size() is not None or model.independent_p() is not None


# ----------------------------------------------------------------------------------------------
# the rank bound's law (Lemma 57.1)
# ----------------------------------------------------------------------------------------------


def part_loads(assignment: Any) -> np.ndarray:
    """Replication ``r_i`` of every part (row sums of a dense or sparse 0/1 assignment)."""
    if sp.issparse(assignment):
        return np.asarray(assignment.sum(axis=1)).ravel().astype(np.int64)
    return np.asarray(assignment).sum(axis=1).astype(np.int64)


def _hypergeom_pmf(n: int, r: int, s: int, j: int) -> float:
    """``P(J = j)`` for ``J`` the stragglers among ``r`` holders when ``s`` of ``n`` straggle uniformly.

    ``C(r, j) (s)_j (n − s)_{r − j} / (n)_r`` as a product of ``r`` factors in ``[0, 1]``: relative
    error at most about ``2 r`` units of round-off, no big integers at any ``n``.

    >>> round(_hypergeom_pmf(10, 3, 4, 2), 12) == round(3 * 4 * 3 * 6 / (10 * 9 * 8), 12)
    True
    """
    if j < 0 or j > r or j > s or r - j > n - s:
        return 0.0
    out = float(math.comb(r, j))
    for a in range(j):
        out *= (s - a) / (n - a)
    for b in range(r - j):
        out *= (n - s - b) / (n - j - b)
    return out


def stratum_rank_lower_bound(loads: Any, m: int, n: int, s: int) -> float:
    """``E[L(F) | |S| = s]`` exactly (raw units): ``Σ_i Σ_j (m − r_i + j)^+ P(J_i = j)``, ``J_i`` hypergeometric.

    Parameters
    ----------
    loads : array_like of int
        Replication ``r_i`` of each part: integers in ``[0, n]`` (no booleans or fractions), at most
        :data:`gcsim.limits.MAX_DENSE_ENTRIES` of them.
    m, n, s : int
        Blocks, workers, stragglers (``0 <= s <= n``); the sum has at most ``min(m, n + 1)`` terms per
        distinct ``r_i``, within :data:`gcsim.limits.MAX_PATTERNS`.

    Examples
    --------
    >>> stratum_rank_lower_bound([2, 2, 2], 1, 3, 2)   # the triangle: each part lost iff both holders straggle
    1.0
    """
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n)
    loads = check_int_array("loads", loads, ndim=1, what="the replication of each part")
    if loads.size and (loads.min() < 0 or loads.max() > n):
        raise InvalidArgumentError("loads", f"must lie in [0, n = {n}] (workers holding each part)")
    total = 0.0
    values, counts = np.unique(loads, return_counts=True)
    # each distinct replication r sums at most min(m, r + 1) hypergeometric terms
    check_work("m", values.size * min(m, n + 1), "hypergeometric terms", limit_name="MAX_PATTERNS", unit="terms")
    for r, cnt in zip(values.tolist(), counts.tolist(), strict=True):
        # c = r − j arrived holders; (m − c)^+ > 0 needs j > r − m
        part = sum((m - r + j) * _hypergeom_pmf(n, r, s, j) for j in range(max(0, r - m + 1), min(r, s) + 1))
        total += cnt * part
    return float(total)


def _poisson_binomial_low(q: np.ndarray, m: int) -> np.ndarray:
    """``P(c = t)`` for ``t < m`` of ``c = Σ_k X_k``, ``X_k ~ Bernoulli(q[:, k])`` independent, per row.

    A dynamic programme over the holders kept to the states ``0 .. m − 1`` (the others never make
    ``(m − c)^+`` positive): ``O(rows · r · m)``.
    """
    rows, r = q.shape
    state = np.zeros((rows, m))
    state[:, 0] = 1.0
    for k in range(r):
        qk = q[:, k : k + 1]
        nxt = state * (1.0 - qk)
        nxt[:, 1:] += state[:, :-1] * qk
        state = nxt
    return state


def _bernoulli_rank_lower_bound(assignment: Any, m: int, p: np.ndarray) -> float:
    """``E[L]`` when worker ``j`` straggles independently with probability ``p_j``."""
    A = sp.csr_matrix(assignment) if not sp.issparse(assignment) else assignment.tocsr()
    loads = np.diff(A.indptr)
    total = 0.0
    if np.all(p == p[0]):
        from scipy import stats

        values, counts = np.unique(loads, return_counts=True)
        for r, cnt in zip(values.tolist(), counts.tolist(), strict=True):
            t = np.arange(min(r, m - 1) + 1) if r >= 0 else np.zeros(0, dtype=int)
            total += cnt * float(np.dot(m - t, stats.binom.pmf(t, r, 1.0 - float(p[0]))))
        return float(total)
    for r in np.unique(loads).tolist():
        rows = np.flatnonzero(loads == r)
        if r == 0:
            total += m * rows.size
            continue
        holders = np.stack([A.indices[A.indptr[i] : A.indptr[i + 1]] for i in rows])
        low = _poisson_binomial_low(1.0 - p[holders], m)
        total += float((low * (m - np.arange(m))[None, :]).sum())
    return float(total)


def expected_rank_lower_bound(assignment: Any, m: int, model: Any) -> float:
    """``E_S[L(F)]`` of the rank lower bound ``L(F) = Σ_i (m − c_i(F))^+`` exactly, in raw units.

    Lemma 57.1: ``c_i(F)`` is hypergeometric under fixed-``s`` stragglers (``s`` of ``n`` uniformly),
    binomial / Poisson-binomial under Bernoulli ones and, since the chains start stationary, under a
    Markov model at every iteration (with the stationary probabilities).  Divide by ``mN`` for the
    normalized error.

    Parameters
    ----------
    assignment : array_like (N, n) or scipy.sparse matrix
        The 0/1 assignment (parts x workers).
    m : int
        Blocks.
    model : StragglerModel
        One whose law is known in closed form (:func:`has_closed_form_law`: uniform ``s``-subsets or
        independent workers: fixed-``s``, all-patterns, Bernoulli, Markov).

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> expected_rank_lower_bound(A, 1, straggler_model("fixed", 3, s=2))   # one part lost on every pattern
    1.0
    >>> round(expected_rank_lower_bound(A, 1, straggler_model("bernoulli", 3, p=0.5)), 12)  # 3 parts x 1/4
    0.75
    """
    m = check_int("m", m, minimum=1)
    s = model.subset_size()
    if s is not None:  # uniform s-subsets: hypergeometric
        return stratum_rank_lower_bound(part_loads(assignment), m, model.n, s)
    p = model.independent_p()
    if p is not None:  # independent workers (Bernoulli, a stationary Markov chain): Poisson-binomial
        return _bernoulli_rank_lower_bound(assignment, m, np.asarray(p, dtype=float))
    raise InvalidArgumentError(
        "model",
        f"{type(model).__name__}: the rank bound's law is known in closed form "
        "for fixed-s, Bernoulli and Markov models only",
    )


class _RankBound:
    """Picklable ``masks -> L(F)`` per row (raw), from a sparse incidence (for Dask tasks)."""

    def __init__(self, incidence: sp.csr_matrix, m: int):
        self.incidence = incidence
        self.m = int(m)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        masks = np.atleast_2d(np.asarray(masks, dtype=bool))
        c = np.rint((self.incidence @ masks.T.astype(np.float64)).T)  # exact: integers <= n < 2^53
        return np.maximum(self.m - c, 0.0).sum(axis=1)


def rank_bound_function(assignment: Any, m: int) -> Callable[[np.ndarray], np.ndarray]:
    """``masks -> L(F)`` (raw, float64) for a dense or sparse assignment; picklable.

    >>> f = rank_bound_function(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]]), 2)
    >>> f(np.array([[True, True, False]])).tolist()     # c = (2, 1, 1)
    [2.0]
    """
    m = check_int("m", m, minimum=1)
    A = assignment.tocsr() if sp.issparse(assignment) else sp.csr_matrix(np.asarray(assignment, dtype=np.float64))
    return _RankBound(A.astype(np.float64), m)


def support_within_assignment(scheme: Any) -> Any:
    """The scheme's assignment (sparse or dense) when ``B`` is supported on it (Theorem 1 applies), else None.

    RD-type structured schemes (``incidence`` and ``diagonals``: ``B = A diag(d_l)`` blockwise) hold
    by construction; a dense scheme is checked entry for entry.
    """
    inc = getattr(scheme, "incidence", None)
    if inc is not None and sp.issparse(inc):
        return inc
    try:
        B = np.asarray(scheme.B)
        A = np.asarray(scheme.assignment)
    except Exception:  # noqa: BLE001 - a scheme without dense arrays: no control variate
        return None
    m = int(scheme.m)
    N, n = A.shape
    if B.shape != (m * N, n):
        return None
    support = np.any(B.reshape(m, N, n) != 0, axis=0)
    return A if not np.any(support & (A == 0)) else None


# ----------------------------------------------------------------------------------------------
# separable codes (Lemma 57.3)
# ----------------------------------------------------------------------------------------------


def components(scheme: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Connected components ``(parts, workers)`` of the support of ``B`` (parts joined to the workers
    whose column of ``B`` touches one of the part's ``m`` rows); isolated workers are left out.

    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.kron(np.eye(2, dtype=int), np.ones((1, 3), dtype=int)), 1, "naive")
    >>> [(p.tolist(), w.tolist()) for p, w in components(sch)]
    [([0], [0, 1, 2]), ([1], [3, 4, 5])]
    """
    from scipy.sparse.csgraph import connected_components

    B = np.asarray(scheme.B)
    m = int(scheme.m)
    N = B.shape[0] // m
    n = B.shape[1]
    support = sp.csr_matrix(np.any(B.reshape(m, N, n) != 0, axis=0).astype(np.int8))
    graph = sp.bmat([[None, support], [support.T, None]], format="csr")
    count, labels = connected_components(graph, directed=False)
    out = []
    for c in range(count):
        parts = np.flatnonzero(labels[:N] == c)
        workers = np.flatnonzero(labels[N:] == c)
        if parts.size:
            out.append((parts, workers))
    return out


def _sub_pattern_weights(model: Any, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Probability of each arrival pattern ``G`` of the component's ``w`` workers (``masks``: all ``2^w``)."""
    w = workers.size
    s = model.subset_size()
    if s is not None:
        n = model.n
        # P(F ∩ W = G) = C(n − w, s − j) / C(n, s), j = w − |G| stragglers in the component
        per_j = np.array([_hypergeom_pmf(n, w, s, j) / math.comb(w, j) for j in range(w + 1)])
        return per_j[w - masks.sum(axis=1)]
    return pattern_weights(np.asarray(model.independent_p())[workers], masks)


def separable_expectation(
    scheme: Any, model: Any, budget: int, error: Callable[[Any, np.ndarray], Any]
) -> tuple[float, str] | None:
    """``E_S[err]`` (raw) of a scheme whose support of ``B`` splits into components, exactly; None otherwise.

    Lemma 57.3: ``err(F) = Σ_c err_c(F ∩ W_c)`` (the optimal decoder separates), and ``F ∩ W_c``
    has a law known in closed form under fixed-``s``, Bernoulli and stationary Markov stragglers, so
    ``E[err] = Σ_c Σ_G P(F ∩ W_c = G) err_c(G)``: ``Σ_c 2^{w_c}`` evaluations (identical components
    are evaluated once).  None when the support is connected, a component has more than
    :data:`SEPARABLE_MAX_WORKERS` workers or ``Σ_c 2^{w_c}`` exceeds ``budget`` and
    :data:`SEPARABLE_BUDGET`.

    ``error(sub_scheme, masks)`` evaluates the optimal error of a component's scheme.
    """
    if not has_closed_form_law(model):
        return None
    comps = components(scheme)
    if len(comps) < 2 or any(w.size > SEPARABLE_MAX_WORKERS for _, w in comps):
        return None
    if sum(2 ** int(w.size) for _, w in comps) > max(budget, SEPARABLE_BUDGET):
        return None
    B = np.asarray(scheme.B)
    A = np.asarray(scheme.assignment)
    m = int(scheme.m)
    N = A.shape[0]
    covered = np.zeros(N, dtype=bool)
    total = 0.0
    seen: dict[bytes, np.ndarray] = {}
    sizes = []
    for parts, workers in comps:
        covered[parts] = True
        rows = (np.arange(m)[:, None] * N + parts[None, :]).ravel()
        Bc = B[np.ix_(rows, workers)]
        if workers.size == 0:  # parts nobody holds: lost on every pattern
            total += m * parts.size
            continue
        sizes.append(int(workers.size))
        w = workers.size
        masks = every_mask(w)
        key = Bc.tobytes() + repr(Bc.shape).encode()
        if key not in seen:
            sub = Scheme(Bc, A[np.ix_(parts, workers)], m)
            seen[key] = np.asarray(error(sub, masks), dtype=float)
        errs = seen[key]
        weights = _sub_pattern_weights(model, workers, masks)
        total += float(np.dot(weights, errs))
    total += m * int((~covered).sum())
    sizes_txt = ", ".join(f"{c} x {w}" for w, c in sorted(_counts(sizes).items()))
    return total, f"exact by components ({len(comps)} components, workers per component: {sizes_txt})"


def _counts(values: Sequence[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


# ----------------------------------------------------------------------------------------------
# combining strata: t where failures are common, one-sided where rare (Lemmas 57.2, 57.4)
# ----------------------------------------------------------------------------------------------


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided ``1 − alpha`` Clopper–Pearson upper limit of a binomial proportion from ``k`` of ``n``.

    ``P(Bin(n, π) <= k) >= alpha`` for every ``π`` below the limit (the Beta quantile
    ``B^{-1}(1 − alpha; k + 1, n − k)``, 1 when ``k = n``).

    >>> round(clopper_pearson_upper(0, 100, 0.05), 6)     # 1 - 0.05 ** (1 / 100)
    0.029513
    """
    k, n = check_int("k", k, minimum=0), check_int("n", n, minimum=0)
    if k >= n:
        return 1.0
    from scipy import stats

    return float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))


#: A rare-event stratum is drawn again, once, with this many times its draws; its estimate and limit
#: then use the new draws alone (theory §57.4: the decision depends on the first draws only).
RARE_EXTEND = 4


def is_rare(excess: np.ndarray, tol: float) -> bool:
    """Fewer than :data:`RARE_FAILURES` excesses above ``tol``, and fewer than half the draws.

    >>> is_rare(np.zeros(100), 1e-9), is_rare(np.ones(100), 1e-9), is_rare(np.ones(4), 1e-9)
    (True, False, False)
    """
    k = int(np.count_nonzero(excess > tol))
    return k < RARE_FAILURES and 2 * k < excess.size


@dataclass(frozen=True)
class Group:
    """One sampled stratum (or pool of strata) of the estimator.

    ``weight``: its probability ``w_g``; ``lower``: ``E[L | g]`` exactly (raw); ``excess``: the
    sampled ``D = err − L`` (raw, clipped at 0); ``errors``: the sampled ``err`` (raw), for the
    monotone bound of Lemma 57.5 (only on single strata of the optimal decoder, None otherwise).
    Groups are given in increasing number of stragglers.
    """

    weight: float
    lower: float
    excess: np.ndarray
    errors: np.ndarray | None = None


def _rare_limit(groups: Sequence[Group], g: int, tol: float, alpha: float) -> tuple[float, str]:
    """Upper ``1 − alpha`` limit of ``P(D > tol)`` in group ``g`` (Lemmas 57.4, 57.5).

    The group's own failures ``k`` of ``n`` (Clopper–Pearson); and, where group ``g`` is a single
    stratum of the optimal decoder, for every later window ``g..t`` the err-failures of all its
    draws: ``err`` is non-increasing in ``F``, so ``P(err > τ | |S| = s)`` is non-decreasing in
    ``s`` and the window's failure count dominates ``Bin(N, π_g)`` (Lemma 57.5).  The minimum over
    the ``1 + T`` limits, each at level ``1 − alpha / (1 + T)`` (union bound).
    """
    own = groups[g]
    k = int(np.count_nonzero(own.excess > tol))
    windows: list[tuple[int, int]] = []
    if own.errors is not None:
        fails = draws = 0
        for h in range(g, len(groups)):
            errs = groups[h].errors
            if errs is None:
                break
            fails += int(np.count_nonzero(errs > tol))
            draws += errs.size
            windows.append((fails, draws))
    a = alpha / (1 + len(windows))
    best = clopper_pearson_upper(k, own.excess.size, a)
    how = "own"
    for f, d in windows:
        limit = clopper_pearson_upper(f, d, a)
        if limit < best:
            best, how = limit, "monotone"
    return best, how


def combine_groups(
    groups: Sequence[Group], exact: float, d_max: float, tol: float, slack: float = 0.0, level: float = 0.95
) -> tuple[float, tuple[float, float], float, str]:
    """Point estimate, interval, standard error and a note of ``exact + Σ_g w_g (E[L|g] + E[D|g])``.

    Groups with at least :data:`RARE_FAILURES` excesses above ``tol`` (or failures in at least
    half their draws) share a Student-``t`` interval (Welch–Satterthwaite degrees of freedom) of
    ``Σ w_g D̄_g``, clipped below at 0 because ``D >= 0`` (Lemma 57.2).  A group with fewer
    failures contributes ``[0, w_g (tol + d_max π̂_g)]`` with ``π̂_g`` the one-sided limit of
    :func:`_rare_limit` (Lemmas 57.4, 57.5).  The miss probabilities add up to ``1 − level``
    (union bound): half to the ``t`` part and half to the rare groups in proportion to their
    weights when both kinds are present.  ``slack`` (the weight of skipped strata times
    ``d_max``) widens the upper end.

    >>> g = Group(1.0, 0.0, np.zeros(1000))          # no failure in 1000 draws, errors at most 1
    >>> mean, (lo, hi), se, note = combine_groups([g], 0.0, 1.0, 1e-10)
    >>> mean, lo, round(hi, 4)                      # one-sided: 1 - 0.05 ** (1 / 1000), plus tol
    (0.0, 0.0, 0.003)
    """
    alpha = 1.0 - level
    if not groups:
        return exact, (exact, exact + slack), 0.0, ""
    rare: list[int] = []
    common: list[int] = []
    for i, g in enumerate(groups):
        (rare if is_rare(g.excess, tol) else common).append(i)
    a_t = alpha if not rare else (alpha / 2 if common else 0.0)
    a_r = alpha - a_t
    lower_part = exact + sum(g.weight * g.lower for g in groups)
    mean = lower_part + sum(g.weight * float(g.excess.mean()) for g in groups)
    lo_d, hi_d, se = 0.0, 0.0, 0.0
    if common:
        terms = [
            (
                groups[i].weight ** 2 * float(groups[i].excess.var(ddof=1)) / groups[i].excess.size,
                groups[i].excess.size - 1,
            )
            for i in common
        ]
        var = sum(v for v, _ in terms)
        se = math.sqrt(var)
        denom = sum(v * v / d for v, d in terms if d > 0)
        df = var * var / denom if denom > 0 else float(max(sum(d for _, d in terms), 1))
        half = t_quantile(df, 1.0 - a_t) * se
        mid = sum(groups[i].weight * float(groups[i].excess.mean()) for i in common)
        lo_d, hi_d = max(0.0, mid - half), mid + half
    w_rare = sum(groups[i].weight for i in rare)
    monotone = 0
    for i in rare:
        a_g = a_r * groups[i].weight / w_rare if w_rare > 0 else a_r / len(rare)
        limit, how = _rare_limit(groups, i, tol, a_g)
        monotone += int(how == "monotone")
        hi_d += groups[i].weight * (tol + d_max * limit)
    note = ""
    if rare:
        fails = sum(int(np.count_nonzero(groups[i].excess > tol)) for i in rare)
        draws = int(sum(groups[i].excess.size for i in rare))
        note = (
            f"{len(rare)} rare-event strata ({fails} failures in {draws} draws): one-sided Clopper-Pearson "
            "limit x the largest possible error" + (f", {monotone} by monotonicity in |S|" if monotone else "")
        )
    lo = lower_part + lo_d
    hi = min(lower_part + hi_d + slack, max(d_max, lower_part))
    return float(mean), (float(lo), float(max(hi, mean))), float(se), note
