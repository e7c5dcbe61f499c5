"""The groups and connection sets of the coset bipartite graphs (k, m, delta)  [reconstruction].

The graphs themselves are in :mod:`gcsim.combinatorics.coset` (definitions and theorem in its
docstring and docs/theory.md §30).  Here: the abelian group of order ``k = p**a`` (``Z_k`` or
the additive group of ``GF(p**a)``) as addition, negation and character tables; the exact
invertibility test of a block ``M_S`` through its character sums; and the choice of the
connection sets ``S_0..S_{m-1}`` -- intervals, given sets (checked), or random sets that are
pairwise not translates, redrawn or found by an exhaustive search when every block must be
invertible.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .._validation import check_int
from ..errors import ImpossibleParametersError, InvalidArgumentError, NotConstructibleError
from ..limits import array_shape, check_entries
from .fields import prime_power

__all__ = ["GROUPS", "interval_connection_sets"]

#: Supported groups of order ``k = p**a``.
GROUPS = ("cyclic", "elementary")

#: Random draws per connection set before ``require_invertible`` looks further.
RANDOM_DRAWS = 64

#: Largest number of candidate sets the exhaustive invertibility search examines
#: (``C(k - 1, min(delta, k - delta) - 1)``, see :func:`_invertible_pool`).
EXHAUSTIVE_LIMIT = 200_000

#: Further random draws per connection set when the exhaustive search is too large.
RANDOM_BUDGET = 4096


# ---------------------------------------------------------------------------
# groups
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    k: int
    p: int
    a: int
    kind: str
    add: np.ndarray  # add[x, y] = x + y
    neg: np.ndarray  # neg[x] = -x
    phi: np.ndarray  # phi[chi, t] in Z_E: chi(t) = zeta_E ** phi[chi, t]
    exponent: int  # E

    def sub(self) -> np.ndarray:
        """sub[x, y] = x - y."""
        return self.add[:, self.neg]


@lru_cache(maxsize=32)
def _group(k: int, kind: str) -> _Group:
    p, a = prime_power(k)
    x = np.arange(k, dtype=np.int64)
    if kind == "cyclic":
        add = (x[:, None] + x[None, :]) % k
        neg = (-x) % k
        phi = (x[:, None] * x[None, :]) % k  # chi_j(t) = zeta_k^(j t)
        exponent = k
    else:
        # galois labels a + b x + ... of GF(p^a) by the integer a + b p + ...;
        # field addition is coefficientwise mod p, so it is computed on the
        # base-p digits directly (same table as finite_field(k), see tests;
        # avoids the seconds-long JIT set-up of an extension field).
        weights = p ** np.arange(a, dtype=np.int64)
        digits = (x[:, None] // weights[None, :]) % p
        add = ((digits[:, None, :] + digits[None, :, :]) % p) @ weights
        neg = ((-digits) % p) @ weights
        phi = (digits @ digits.T) % p  # chi_u(t) = zeta_p^(<u, t>)
        exponent = p
    for arr in (add, neg, phi):
        arr.setflags(write=False)
    return _Group(k, p, a, kind, add, neg, phi, exponent)


# ---------------------------------------------------------------------------
# connection sets
# ---------------------------------------------------------------------------


def interval_connection_sets(k: int, m: int, delta: int) -> list[list[int]]:
    """The interval sets ``S_c = {c*delta, ..., c*delta + delta - 1} (mod k)``.

    Integer labels: in ``Z_k`` these are intervals; for ``group="elementary"``
    the same integers label field elements.  All ``S_c`` are translates of
    ``S_0`` in ``Z_k``, so worker ``(c, y)`` then holds the same parts as
    worker ``(0, y + c*delta)`` -- use this option for transparent examples, the
    seeded default for diverse workers.  In ``Z_k`` an interval's blocks are
    invertible iff ``gcd(delta, k) = 1`` (i.e. ``p`` does not divide ``delta``, for
    ``delta < k``), so intervals show that the theorem's hypothesis is sharp.

    >>> interval_connection_sets(9, 2, 3)
    [[0, 1, 2], [3, 4, 5]]
    """
    k = check_int("k", k, minimum=1)
    m = check_int("m", m, minimum=1)
    delta = check_int("delta", delta, minimum=1, maximum=k)
    check_entries("m", (m, delta), "the connection sets (m x delta)")
    return [sorted(((c * delta + np.arange(delta)) % k).tolist()) for c in range(m)]


def _is_translate(grp: _Group, S: np.ndarray, earlier: list[np.ndarray]) -> bool:
    if not earlier:
        return False
    shifts = np.sort(grp.add[S][:, :].T, axis=1)  # row g: sorted S + g
    for T in earlier:
        if np.any(np.all(shifts == T[None, :], axis=1)):
            return True
    return False


def _invertible_batch(grp: _Group, sets: np.ndarray) -> np.ndarray:
    """Vectorized :func:`_set_invertible` for sets ``(C, delta)``: True where no character sum vanishes."""
    C, delta = sets.shape
    out = np.empty(C, dtype=bool)
    chunk = max(1, (1 << 22) // (grp.k * max(grp.exponent, delta)))  # bounds the (chunk, k, E) counts
    for a in range(0, C, chunk):
        part = sets[a : a + chunk]
        c = part.shape[0]
        vals = grp.phi[:, part]  # (k, c, delta)
        idx = (np.arange(c)[None, :, None] * grp.k + np.arange(grp.k)[:, None, None]) * grp.exponent + vals
        counts = np.bincount(idx.ravel(), minlength=c * grp.k * grp.exponent)
        h = counts.reshape(c, grp.k, grp.p, grp.exponent // grp.p)
        out[a : a + c] = ~np.all(h == h[:, :, :1, :], axis=(2, 3)).any(axis=1)
    return out


def _set_invertible(grp: _Group, S: np.ndarray) -> bool:
    """``M_S`` invertible over Q: no character sum of ``S`` vanishes.

    Exact count test (``docs/theory/30_coset.md``, Lemmas 2 and 4).
    """
    return bool(_invertible_batch(grp, np.asarray(S, dtype=np.int64)[None])[0])


def _candidates(k: int, delta: int) -> int:
    """Number of sets :func:`_invertible_pool` examines: ``C(k - 1, e - 1)``, ``e = min(delta, k - delta)``."""
    e = min(delta, k - delta)
    return math.comb(k - 1, e - 1) if e > 0 else 0


def _invertible_pool(grp: _Group, delta: int) -> np.ndarray | None:
    """Every invertible ``delta``-set up to translation, or None when that search is too large.

    A translate ``S + g`` multiplies each character sum by ``chi(g) != 0`` and the
    complement ``G \\ S`` has the character sums ``-chi(S)`` (``chi != 1``) and ``k - delta``
    (``chi = 1``), so for ``0 < delta < k`` an invertible ``delta``-set exists iff an
    invertible set of size ``e = min(delta, k - delta)`` containing ``0`` does: the
    ``C(k - 1, e - 1)`` candidates are enumerated exactly when at most
    :data:`EXHAUSTIVE_LIMIT`.  Returns the invertible ``delta``-sets obtained
    (``(count, delta)``, possibly empty = proof that none exists).
    """
    k = grp.k
    e = min(delta, k - delta)
    if e == 0:  # S = G: every non-trivial character sums to 0 over the group (k >= 2)
        return np.zeros((0, delta), dtype=np.int64)
    if _candidates(k, delta) > EXHAUSTIVE_LIMIT:
        return None
    combos = np.array(list(itertools.combinations(range(1, k), e - 1)), dtype=np.int64).reshape(-1, e - 1)
    cand = np.concatenate([np.zeros((combos.shape[0], 1), dtype=np.int64), combos], axis=1)
    good = cand[_invertible_batch(grp, cand)]
    if e == delta:
        return good
    universe = np.arange(k)
    return np.array([np.setdiff1d(universe, T) for T in good], dtype=np.int64).reshape(-1, delta)


def _random_connection_sets(
    grp: _Group, m: int, delta: int, rng: np.random.Generator, require_invertible: bool, seed: int
) -> list[np.ndarray]:
    """``m`` random ``delta``-sets, pairwise not translates when possible (and invertible if required).

    With ``require_invertible``: :data:`RANDOM_DRAWS` random draws per set; if
    none is invertible, the exhaustive search of :func:`_invertible_pool` decides
    (an empty result proves that no invertible set exists:
    :class:`~gcsim.errors.ImpossibleParametersError`); when that search is too
    large, :data:`RANDOM_BUDGET` further draws, and then
    :class:`~gcsim.errors.NotConstructibleError` (a search that gave up proves
    nothing).
    """
    sets: list[np.ndarray] = []
    pool: np.ndarray | None = None
    for _ in range(m):
        fallback: np.ndarray | None = None
        S: np.ndarray | None
        if pool is None:
            for _attempt in range(RANDOM_DRAWS):
                S = np.sort(rng.choice(grp.k, size=delta, replace=False)).astype(np.int64)
                if require_invertible and not _set_invertible(grp, S):
                    continue
                if fallback is None:
                    fallback = S
                if not _is_translate(grp, S, sets):
                    break
            else:
                S = fallback
        else:
            S = None
        if S is None:
            pool = _invertible_pool(grp, delta) if pool is None else pool
            S = _draw_invertible(grp, delta, rng, sets, pool, seed)
        sets.append(S)
    return sets


def _draw_invertible(
    grp: _Group, delta: int, rng: np.random.Generator, sets: list[np.ndarray], pool: np.ndarray | None, seed: int
) -> np.ndarray:
    """An invertible set after the first random draws failed: from the exhaustive pool, or more draws."""
    k, p = grp.k, grp.p
    where = f"the {grp.kind} group of order k = {k} = {p}^{grp.a}"
    if pool is not None:
        if pool.shape[0] == 0:
            raise ImpossibleParametersError(
                "an invertible connection set exists",
                f"no delta = {delta} element subset of {where} has all character sums non-zero: an exhaustive "
                f"search over all {_candidates(k, delta)} candidates up to translation "
                f"and complement found none, so every block M_c would be singular (p = {p} divides "
                f"delta = {delta}, so the invertibility theorem does not apply). Use delta not divisible by {p}, "
                f"or the other group",
            )
        fallback = None
        for _attempt in range(RANDOM_DRAWS):  # a random member of the pool, shifted by a random element
            S = np.sort(grp.add[pool[rng.integers(pool.shape[0])], rng.integers(k)]).astype(np.int64)
            fallback = S if fallback is None else fallback
            if not _is_translate(grp, S, sets):
                return S
        assert fallback is not None  # the first of the RANDOM_DRAWS >= 1 draws set it
        return fallback
    batch = 256
    for _start in range(0, RANDOM_BUDGET, batch):
        cand = np.sort(np.argsort(rng.random((batch, k)), axis=1)[:, :delta], axis=1).astype(np.int64)
        good = cand[_invertible_batch(grp, cand)]
        if good.shape[0]:
            fresh = [S for S in good if not _is_translate(grp, S, sets)]
            return fresh[0] if fresh else good[0]
    raise NotConstructibleError(
        f"coset_graph(require_invertible=True): no invertible connection set of size delta = {delta} in "
        f"{RANDOM_DRAWS + RANDOM_BUDGET} random draws for {where} (seed = {seed}). p = {p} divides delta, so "
        f"invertibility is not guaranteed, but invertible sets may exist: the search gave up, it proved "
        f"nothing (an exhaustive search would examine {_candidates(k, delta)} sets, "
        f"more than EXHAUSTIVE_LIMIT = {EXHAUSTIVE_LIMIT}). Try another seed, the other group, explicit "
        f"connection_sets, or delta not divisible by {p}"
    )


def _check_sets(connection_sets: Any, k: int, m: int, delta: int) -> list[np.ndarray]:
    check_entries("connection_sets", array_shape(connection_sets), "the connection sets")
    if hasattr(connection_sets, "__len__") and len(connection_sets) != m:
        raise InvalidArgumentError("connection_sets", f"must contain m = {m} sets, got {len(connection_sets)}")
    try:
        seq = list(connection_sets)
    except TypeError:
        raise InvalidArgumentError("connection_sets", "must be a sequence of m sequences of integers") from None
    if len(seq) != m:
        raise InvalidArgumentError("connection_sets", f"must contain m = {m} sets, got {len(seq)}")
    out = []
    for c, S in enumerate(seq):
        if hasattr(S, "__len__") and len(S) != delta:
            raise InvalidArgumentError("connection_sets", f"set {c} must have delta = {delta} distinct elements")
        try:
            vals = [check_int(f"connection_sets[{c}]", t) for t in S]
        except TypeError:
            raise InvalidArgumentError("connection_sets", f"set {c} must be a sequence of integers") from None
        if len(vals) != delta or len(set(vals)) != delta:
            raise InvalidArgumentError(
                "connection_sets", f"set {c} must have delta = {delta} distinct elements, got {vals}"
            )
        if any(t < 0 or t >= k for t in vals):
            raise InvalidArgumentError("connection_sets", f"set {c} has elements outside the group [0, {k}): {vals}")
        out.append(np.sort(np.asarray(vals, dtype=np.int64)))
    return out
