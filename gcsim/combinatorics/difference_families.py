"""Difference sets and difference families over abelian groups, and their development.

A family of k-subsets ``B_1..B_t`` ("base blocks") of an abelian group G of order
n is an (n, k, lambda) *difference family* when every nonzero g in G occurs
exactly lambda times among the differences ``x - y`` (x != y in the same
``B_i``).  Developing the family (all translates ``B_i + g``) then gives a
2-(n, k, lambda) design (Beth, Jungnickel & Lenz, *Design Theory*, 1999,
§VII.1; Colbourn & Dinitz (eds.), *Handbook of Combinatorial Designs*, 2nd ed.,
2007, §VI.16).  A single base block with ``t = 1`` is a difference set and gives
a symmetric design; the cyclic difference sets (Paley, Singer) and their circulant
incidences are in :mod:`gcsim.combinatorics.difference_sets` (re-exported here).

Generalizations used here (all checked by developing and verifying):

* *short orbits*: a base block fixed by a subgroup S of G develops into only
  ``n/|S|`` blocks; its differences then count with weight ``1/|S|``;
* *fixed points* ``inf_0, inf_1, ...`` (codes ``n, n+1, ...``) that every
  translation fixes, e.g. 1-rotational families over ``Z_{v-1} u {inf}``.

Groups are products of cyclic groups ``Z_{n_1} x ... x Z_{n_s}``; an element is
coded in mixed radix, first factor most significant.  The additive group of
GF(p^a) is ``(Z_p)^a`` with the codes of
:func:`gcsim.combinatorics.fields.field_tables`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

from .. import limits
from .._validation import check_int, check_int_array
from ..errors import InvalidArgumentError
from .difference_sets import (
    circulant_incidence,
    circulant_pair_gram,
    difference_set_lambda,
    paley_difference_set,
    primitive_polynomial,
    singer_difference_set,
)
from .fields import field_tables, prime_power, prime_power_decomposition, primitive_element

__all__ = [
    "develop",
    "group_elements",
    "paley_difference_set",
    "singer_difference_set",
    "primitive_polynomial",
    "difference_set_lambda",
    "circulant_incidence",
    "circulant_pair_gram",
    "radical_difference_family",
    "search_difference_family",
    "cyclotomic_difference_family",
    "multiplier_difference_family",
    "DIFFERENCE_FAMILIES",
]


def _check_moduli(moduli) -> tuple[int, ...]:
    if isinstance(moduli, numbers.Real) or (isinstance(moduli, np.ndarray) and moduli.ndim == 0):
        moduli = (moduli,)  # one cyclic factor (a float one is refused as such below)
    arr = check_int_array("moduli", moduli, ndim=1, what="the cyclic factors")
    out = tuple(check_int("moduli", m, minimum=1) for m in arr.tolist())
    if not out:
        raise InvalidArgumentError("moduli", "must not be empty")
    limits.check_entries("moduli", (math.prod(out), len(out)), "the group's elements (|G| x factors)")
    return out


def group_elements(moduli: tuple[int, ...]) -> np.ndarray:
    """Digits of every element of ``Z_{n_1} x ... x Z_{n_s}`` in code order, shape (n, s).

    >>> group_elements((2, 3)).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    """
    moduli = _check_moduli(moduli)
    n = int(np.prod(moduli)) if moduli else 1
    codes = np.arange(n, dtype=np.int64)
    weights = np.array([int(np.prod(moduli[i + 1 :])) for i in range(len(moduli))], dtype=np.int64)
    return (codes[:, None] // weights[None, :]) % np.asarray(moduli, dtype=np.int64)[None, :]


def develop(moduli, base_blocks, n_fixed: int = 0) -> list[tuple[int, ...]]:
    """Develop base blocks over ``G = Z_{n_1} x ... x Z_{n_s}`` (plus fixed points).

    Each base block is replaced by its orbit ``{B + g : g in G}`` (a block fixed
    by a subgroup gives a short orbit; repeated base blocks give repeated
    orbits).  Codes ``>= |G|`` are fixed points.

    Parameters
    ----------
    moduli : int or tuple of int
        Orders of the cyclic factors (an int means the cyclic group Z_n).
    base_blocks : sequence of sequences of int
        Element codes of each base block.
    n_fixed : int
        Number of fixed points (codes ``|G|..|G|+n_fixed-1``).

    Returns
    -------
    list of tuple
        The blocks, each sorted, in orbit order.

    Examples
    --------
    >>> develop(7, [[0, 1, 3]])[:3]
    [(0, 1, 3), (1, 2, 4), (2, 3, 5)]
    >>> len(develop(6, [[0, 2, 4]]))   # short orbit: stabilizer {0, 2, 4}
    2
    """
    moduli = _check_moduli(moduli)
    n_fixed = check_int("n_fixed", n_fixed, minimum=0)
    n = int(np.prod(moduli))
    elems = group_elements(moduli)
    weights = np.array([int(np.prod(moduli[i + 1 :])) for i in range(len(moduli))], dtype=np.int64)
    mods = np.asarray(moduli, dtype=np.int64)
    out: list[tuple[int, ...]] = []
    if not hasattr(base_blocks, "__len__"):
        raise InvalidArgumentError("base_blocks", f"must be a list of blocks, got {type(base_blocks).__name__}")
    limits.check_entries("base_blocks", (len(base_blocks), n), "the developed blocks (base blocks x |G|)")
    for base in base_blocks:
        base = check_int_array("base_blocks", base, ndim=1, what="a base block")
        limits.check_entries("base_blocks", (n, base.size), "the orbit of a base block (|G| x its size)")
        if np.any(base < 0) or np.any(base >= n + n_fixed):
            raise InvalidArgumentError("base_blocks", f"codes must lie in [0, {n + n_fixed}), got {base.tolist()}")
        finite = base[base < n]
        fixed = base[base >= n]
        shifted = ((elems[:, None, :] + elems[finite][None, :, :]) % mods) @ weights  # (n, |finite|)
        blocks = np.concatenate([shifted, np.broadcast_to(fixed, (n, fixed.size))], axis=1)
        blocks = np.sort(blocks, axis=1)
        # keep each block of the orbit once (short orbits), in first-seen order
        _, first = np.unique(blocks, axis=0, return_index=True)
        out.extend(tuple(b) for b in blocks[np.sort(first)].tolist())
    return out


def _subgroup(q: int, order: int) -> list[int]:
    """The multiplicative subgroup of GF(q)^* of the given order (codes)."""
    _, mul = field_tables(q)
    g = primitive_element(q)
    h = 1
    step = 1
    for _ in range((q - 1) // order):
        step = int(mul[step, g])
    out = []
    for _ in range(order):
        out.append(h)
        h = int(mul[h, step])
    return sorted(out)


@cache
def _radical_cached(q: int, k: int, lam: int):
    fam = _radical(q, k, lam)
    return None if fam is None else tuple(tuple(b) for b in fam)


def radical_difference_family(q: int, k: int, lam: int = 1) -> list[list[int]] | None:
    """A multiplicative ("radical") difference family in GF(q), or None.

    Wilson's construction (R. M. Wilson, *Cyclotomy and difference families in
    elementary abelian groups*, J. Number Theory 4 (1972) 17-47), extended to
    any lambda: let ``B0 = C_k`` (the k-th roots of unity, k odd) or
    ``B0 = {0} u C_{k-1}`` (k even), let ``C`` be the multiplicative group
    generated by those roots of unity and -1 (so ``Delta B0`` is a union of
    cosets of C), ``t = lam (q-1) / (k (k-1))`` and ``e = (q-1) / (t |C|)``.
    The base blocks are ``w^{e i} B0`` for ``0 <= i < t`` (w primitive); they
    form a difference family iff the cosets ``C delta`` making up ``Delta B0``
    are spread evenly over the cosets of the subgroup of index e (Wilson's
    condition).  This function tries it with an exact check and returns the base
    blocks or None.

    >>> radical_difference_family(13, 3)
    [[1, 3, 9], [2, 5, 6]]
    """
    q = check_int("q", q, minimum=3)
    k = check_int("k", k, minimum=3)
    lam = check_int("lam", lam, minimum=1)
    fam = _radical_cached(q, k, lam)
    return None if fam is None else [list(b) for b in fam]


def _radical(q: int, k: int, lam: int) -> list[list[int]] | None:

    pa = prime_power_decomposition(q)
    if pa is None or (lam * (q - 1)) % (k * (k - 1)) != 0:
        return None
    t = lam * (q - 1) // (k * (k - 1))
    root_order = k if k % 2 == 1 else k - 1
    if (q - 1) % root_order != 0:
        return None
    c_order = root_order * (2 if q % 2 == 1 else 1)
    if (q - 1) % (t * c_order) != 0:
        return None
    e = (q - 1) // (t * c_order)
    if pa[1] == 1:
        # prime field: codes are residues mod q, so modular arithmetic replaces the q x q tables
        if q > limits.MAX_EXISTENCE_ORDER:
            return None  # the O(q) check below is refused; callers fall back to other results
        return _radical_prime(q, k, lam, t, root_order, e)
    if q * q > limits.MAX_DENSE_ENTRIES:
        return None  # GF(p^a) needs table arithmetic; too large to check here
    B0 = _subgroup(q, root_order) + ([0] if k % 2 == 0 else [])
    _, mul = field_tables(q)
    w = primitive_element(q)
    we = 1
    for _ in range(e):
        we = int(mul[we, w])
    family, m = [], 1
    for _ in range(t):
        family.append(sorted(int(mul[m, b]) for b in B0))
        m = int(mul[m, we])
    if not _is_difference_family(q, family, lam):
        return None
    return family


def _radical_prime(q: int, k: int, lam: int, t: int, root_order: int, e: int) -> list[list[int]] | None:
    """Wilson's radical family in GF(q), q prime, by modular arithmetic: O(lam q) time, O(q) memory.

    Same base blocks as the table route (same primitive element, same order of
    the blocks), checked exactly: every nonzero residue occurs lam times as a
    difference.  A k-subset of Z_q (1 < k < q, q prime) always has a full orbit.
    """
    if k >= q:
        return None
    w = primitive_element(q)
    step = pow(w, (q - 1) // root_order, q)
    B0 = sorted(pow(step, i, q) for i in range(root_order)) + ([0] if k % 2 == 0 else [])
    we = pow(w, e, q)
    multipliers = np.empty(t, dtype=np.int64)
    m = 1
    for i in range(t):  # t = lam (q-1) / (k (k-1)) multipliers, one modular product each
        multipliers[i] = m
        m = m * we % q
    base = np.asarray(B0, dtype=np.int64)
    counts = np.zeros(q, dtype=np.int64)
    off = ~np.eye(k, dtype=bool)
    chunk = max(1, 2**20 // (k * k))  # bounded temporaries
    for a in range(0, t, chunk):
        blocks = (multipliers[a : a + chunk, None] * base[None, :]) % q  # (chunk, k)
        diff = (blocks[:, :, None] - blocks[:, None, :]) % q
        counts += np.bincount(diff[:, off].ravel(), minlength=q)
    if counts[0] != 0 or not np.all(counts[1:] == lam):
        return None
    return [sorted(int(m * b % q) for b in B0) for m in multipliers.tolist()]


def _is_difference_family(q: int, family, lam: int) -> bool:
    """Exact check over the additive group (Z_p)^a of GF(q): full orbits and every difference lam times."""
    p, a = prime_power(q)
    moduli = (p,) * a
    if len(develop(moduli, family)) != q * len(family):
        return False  # some base block has a short orbit
    elems = group_elements(moduli)
    weights = p ** np.arange(a - 1, -1, -1, dtype=np.int64)
    counts = np.zeros(q, dtype=np.int64)
    for blk in family:
        d = elems[np.asarray(blk)]
        diff = ((d[:, None, :] - d[None, :, :]) % p) @ weights
        np.add.at(counts, diff[~np.eye(len(blk), dtype=bool)], 1)
    return bool(counts[0] == 0 and np.all(counts[1:] == lam))


def search_difference_family(
    n: int,
    k: int,
    lam: int = 1,
    *,
    fixed=(),
    n_fixed: int = 0,
    seed: int = 0,
    max_nodes: int = 2_000_000,
    restarts: int = 50,
) -> list[list[int]] | None:
    """Seeded backtracking search for full-orbit base blocks over Z_n completing ``fixed``.

    Finds base blocks ``B_1..B_t`` (each containing 0, trivial stabilizer) such
    that, together with the given ``fixed`` base blocks (which may contain fixed
    points ``>= n`` and may have short orbits), every nonzero difference of Z_n
    is covered exactly ``lam`` times and every fixed point meets every element of
    Z_n exactly ``lam`` times.  The next block always covers the smallest
    difference still missing (so the search is complete for one restart);
    candidate order is shuffled by ``numpy.random.default_rng(seed)`` per
    restart, each restart stops after ``max_nodes // restarts`` nodes.
    Deterministic for a given seed.

    Returns the full list of base blocks (``fixed`` first) or None.

    >>> search_difference_family(13, 4, 1)
    [[0, 1, 8, 10]]
    """
    n = check_int("n", n, minimum=2)
    k = check_int("k", k, minimum=2)
    lam = check_int("lam", lam, minimum=1)
    limits.check_entries("n", (n,), "the difference counts over Z_n")
    need = np.full(n, lam, dtype=np.int64)
    need[0] = 0
    fixed = [list(map(int, b)) for b in fixed]
    # contributions of the fixed blocks, counted on their (possibly short) orbits
    if fixed:
        cnt = np.zeros(n, dtype=np.int64)
        for blk in develop(n, fixed, n_fixed):
            fin = np.asarray([x for x in blk if x < n], dtype=np.int64)
            # pairs {x, y} of this block with y - x = d: the number of blocks containing {0, d}
            # equals (1/n) * sum over blocks of ordered pairs with difference d
            diff = (fin[:, None] - fin[None, :]) % n
            np.add.at(cnt, diff[~np.eye(len(fin), dtype=bool)], 1)
        if np.any(cnt % n):
            return None
        need = need - cnt // n
        need[0] = 0
        if np.any(need < 0):
            return None
        fixed_cov = np.zeros(n_fixed, dtype=np.int64)
        for blk in develop(n, fixed, n_fixed):
            count = sum(1 for x in blk if x < n)
            for x in blk:
                if x >= n:
                    fixed_cov[x - n] += count
        if n_fixed and np.any(fixed_cov != lam * n):
            return None
    elif n_fixed:
        return None
    total = int(need.sum())
    if total % (k * (k - 1)) != 0:
        return None
    t = total // (k * (k - 1))
    rng = np.random.default_rng(seed)
    per_restart = max(1, max_nodes // max(1, restarts))

    for _ in range(max(1, restarts)):
        order = rng.permutation(np.arange(1, n)).tolist()
        found = _cyclic_search(n, k, t, need.copy(), order, per_restart)
        if found is not None:
            return fixed + found
    return None


def _backtrack(
    k: int,
    num_blocks: int,
    order: list[int],
    remaining: list[int],
    key: Sequence[int],
    diff: Callable[[int, int], int],
    openings: Callable[[list[list[int]], list[int]], list[tuple[int, int]]],
    accept: Callable[[list[int]], bool],
    budget: int,
) -> list[list[int]] | None:
    """Depth-first search for ``num_blocks`` base blocks of size ``k`` that use up ``remaining`` exactly.

    The one backtracking routine of the difference-family searches.  Every ordered pair
    ``(x, y)`` of distinct points of a block consumes one unit of the bucket
    ``key[diff(x, y)]`` (``remaining`` holds what each bucket may still take; a placement
    that drives a bucket below 0 is undone).  A block starts as ``[0, x]`` for each
    ``(x, start)`` that ``openings(blocks, remaining)`` proposes, then grows by the points
    ``order[start:]`` in that order (later points only); a full block is kept if
    ``accept(block)``.  The search stops after ``budget`` nodes.

    Returns the blocks (points in the order they were placed) or None.
    """
    blocks: list[list[int]] = []
    nodes = [0]

    def place(block: list[int], x: int, sign: int) -> bool:
        ok = True
        for y in block:
            for d in (diff(x, y), diff(y, x)):
                c = key[d]
                remaining[c] -= sign
                if remaining[c] < 0:
                    ok = False
        return ok

    def grow(block: list[int], start: int) -> bool:
        nodes[0] += 1
        if nodes[0] > budget:
            return False
        if len(block) == k:
            if not accept(block):
                return False
            blocks.append(list(block))
            if open_block():
                return True
            blocks.pop()
            return False
        for idx in range(start, len(order)):
            x = order[idx]
            if x in block:
                continue
            if place(block, x, 1):
                block.append(x)
                if grow(block, idx + 1):
                    return True
                block.pop()
            place(block, x, -1)
            if nodes[0] > budget:
                return False
        return False

    def open_block() -> bool:
        if len(blocks) == num_blocks:
            return all(c == 0 for c in remaining)
        for x, start in openings(blocks, remaining):
            block = [0]
            if place(block, x, 1):
                block.append(x)
                if grow(block, start):
                    return True
                block.pop()
            place(block, x, -1)
        return False

    return blocks if open_block() else None


def _cyclic_search(n: int, k: int, t: int, need: np.ndarray, order: list[int], budget: int) -> list[list[int]] | None:
    """t full-orbit base blocks over Z_n consuming ``need`` exactly, each new block covering the smallest
    difference still missing (so the search is complete within its budget)."""

    def stabilized(block: list[int]) -> bool:
        s = set(block)
        return any(all((x + g) % n in s for x in block) for g in range(1, n) if (block[0] + g) % n in s)

    def smallest_missing(blocks: list[list[int]], remaining: list[int]) -> list[tuple[int, int]]:
        d = next((i for i in range(1, n) if remaining[i] > 0), None)
        return [] if d is None else [(d, 0)]

    found = _backtrack(
        k,
        t,
        order,
        need.tolist(),
        range(n),
        lambda x, y: (x - y) % n,
        smallest_missing,
        lambda block: not stabilized(block),
        budget,
    )
    return None if found is None else [sorted(b) for b in found]


def cyclotomic_difference_family(
    q: int, k: int, lam: int = 1, *, seeds: int | None = None, max_nodes: int = 2_000_000
) -> list[list[int]] | None:
    """Search a difference family ``{m B_j : m in M, j < s}`` in GF(q), M a multiplicative subgroup.

    With ``t = lam (q-1) / (k (k-1))`` base blocks in all, ``s`` "seed" blocks
    ``B_j`` and M the subgroup of order ``t/s``: the translates of the blocks
    ``m B_j`` cover a nonzero g once for every ``delta`` in the difference
    multiset ``Delta B_0 + ... + Delta B_{s-1}`` lying in the coset ``g M``.  So
    the family is a (q, k, lam) difference family iff every coset of M contains
    exactly lam of those differences (counted with multiplicity) -- the
    cyclotomic condition of Wilson (1972) and Buratti (1995).  Translating a seed
    or multiplying it by an element of M does not change the family's
    differences, and multiplying *all* seeds by a constant permutes the cosets, so
    ``B_0 = {0, 1, ...}`` and ``B_j = {0, w^i, ...}`` (``i`` below the number of
    cosets) without loss of generality.  The rest is an exhaustive depth-first
    search in increasing order (deterministic), stopped after ``max_nodes``
    nodes; ``seeds=None`` tries s = 1, 2, ... (divisors of t, at most 4).

    >>> cyclotomic_difference_family(29, 4, 3)[0]
    [0, 1, 2, 3]
    """
    q = check_int("q", q, minimum=3)
    k = check_int("k", k, minimum=3)
    lam = check_int("lam", lam, minimum=1)
    if prime_power_decomposition(q) is None or (lam * (q - 1)) % (k * (k - 1)):
        return None
    t = lam * (q - 1) // (k * (k - 1))
    if seeds is None:
        for s in range(1, min(t, 4) + 1):
            if t % s == 0 and (q - 1) % (t // s) == 0:
                fam = cyclotomic_difference_family(q, k, lam, seeds=s, max_nodes=max_nodes)
                if fam is not None:
                    return fam
        return None
    s = check_int("seeds", seeds, minimum=1)
    if t % s or (q - 1) % (t // s):
        return None
    size_m = t // s
    e = (q - 1) // size_m  # number of cosets of M
    add, mul = field_tables(q)
    neg = np.argmin(add, axis=1)
    w = primitive_element(q)
    log = np.zeros(q, dtype=np.int64)
    powers = []
    x = 1
    for i in range(q - 1):
        log[x] = i
        powers.append(x)
        x = int(mul[x, w])
    coset = (log % e).tolist()
    sub = add[:, neg].tolist()  # sub[x][y] = x - y
    cosets = sorted(set(powers[:e]))

    def openings(blocks: list[list[int]], remaining: list[int]) -> list[tuple[int, int]]:
        # B_0 = {0, 1, ...}; B_j = {0, w^i, ...} with i below the number of cosets (see above)
        return [(x, 1) for x in ([1] if not blocks else cosets)]

    blocks = _backtrack(
        k, s, list(range(q)), [lam] * e, coset, lambda x, y: sub[x][y], openings, lambda block: True, max_nodes
    )
    if blocks is None:
        return None
    step = 1
    for _ in range(e):
        step = int(mul[step, w])
    M, m = [], 1
    for _ in range(size_m):
        M.append(m)
        m = int(mul[m, step])
    return [[int(mul[m, b]) for b in B] for B in blocks for m in M]


def multiplier_difference_family(
    n: int, k: int, lam: int, multiplier: int, *, max_nodes: int = 2_000_000
) -> list[list[int]] | None:
    """Search a cyclic difference family over Z_n whose base blocks are unions of multiplier orbits.

    Every base block is fixed by ``x -> multiplier * x`` (a unit of Z_n), i.e.
    is a union of orbits of the cyclic group generated by the multiplier; its
    difference multiset is then also multiplier-invariant.  The search picks
    ``t = lam (n-1) / (k (k-1))`` such blocks (repeats allowed, each with trivial
    translation stabilizer) by depth-first search, always covering the
    smallest difference still missing; exhaustive and deterministic up to
    ``max_nodes`` nodes.  (Multiplier-invariant base blocks are the classical
    way to shrink DF searches; HCD VI.16.)

    >>> multiplier_difference_family(13, 4, 1, 3)
    [[0, 1, 3, 9]]
    """
    n = check_int("n", n, minimum=3)
    k = check_int("k", k, minimum=3)
    lam = check_int("lam", lam, minimum=1)
    m = check_int("multiplier", multiplier, minimum=1) % n
    if np.gcd(m, n) != 1:
        raise InvalidArgumentError("multiplier", f"must be a unit mod {n}, got {multiplier}")
    if (lam * (n - 1)) % (k * (k - 1)):
        return None
    t = lam * (n - 1) // (k * (k - 1))
    seen: set[int] = set()
    orbits: list[tuple[int, ...]] = []
    for x in range(n):
        if x in seen:
            continue
        orb, y = [], x
        while y not in orb:
            orb.append(y)
            y = (y * m) % n
        seen.update(orb)
        orbits.append(tuple(orb))
    # candidate blocks: unions of orbits of total size k, trivial stabilizer
    cands: list[tuple[int, ...]] = []

    def unions(i: int, acc: list[int]) -> None:
        if len(acc) == k:
            cands.append(tuple(sorted(acc)))
            return
        for j in range(i, len(orbits)):
            if len(acc) + len(orbits[j]) <= k:
                unions(j + 1, acc + list(orbits[j]))

    unions(0, [])
    diffs = []
    keep = []
    for B in cands:
        arr = np.asarray(B)
        if any(set(((arr + g) % n).tolist()) == set(B) for g in range(1, n) if (B[0] + g) % n in B):
            continue
        d = np.bincount(((arr[:, None] - arr[None, :]) % n)[~np.eye(k, dtype=bool)], minlength=n)
        if d.max() > lam:
            continue
        keep.append(B)
        diffs.append(d.tolist())
    need = [lam] * n
    need[0] = 0
    by_diff: list[list[int]] = [[] for _ in range(n)]
    for idx, d in enumerate(diffs):
        for g in range(1, n):
            if d[g]:
                by_diff[g].append(idx)
    chosen: list[int] = []
    nodes = [0]

    def dfs(min_idx_for: dict) -> bool:
        nodes[0] += 1
        if nodes[0] > max_nodes:
            return False
        g = next((x for x in range(1, n) if need[x] > 0), None)
        if g is None:
            return len(chosen) == t
        if len(chosen) == t:
            return False
        for idx in by_diff[g]:
            d = diffs[idx]
            if any(d[x] > need[x] for x in range(1, n) if d[x]):
                continue
            for x in range(1, n):
                need[x] -= d[x]
            chosen.append(idx)
            if dfs(min_idx_for):
                return True
            chosen.pop()
            for x in range(1, n):
                need[x] += d[x]
            if nodes[0] > max_nodes:
                return False
        return False

    if not dfs({}):
        return None
    return [list(keep[i]) for i in chosen]


#: Tabulated difference families: (v, k, lam) -> (moduli, n_fixed, base blocks, source).
#: Entries marked "search" were found by :func:`search_difference_family` with the
#: recorded arguments (see tests/test_bibd_search.py, which reproduces some).
DIFFERENCE_FAMILIES: dict[tuple[int, int, int], tuple[tuple[int, ...], int, list[list[int]], str]] = {
    (17, 4, 3): (
        (17,),
        0,
        [[0, 1, 3, 12], [0, 1, 3, 8], [0, 1, 4, 8], [0, 2, 6, 12]],
        "search_difference_family(17, 4, 3, seed=0, max_nodes=3_000_000, restarts=30)",
    ),
    (21, 4, 3): (
        (21,),
        0,
        [[0, 1, 5, 20], [0, 1, 5, 14], [0, 2, 5, 12], [0, 2, 8, 17], [0, 3, 11, 14]],
        "search_difference_family(21, 4, 3, seed=0, max_nodes=3_000_000, restarts=30)",
    ),
    (21, 6, 3): (
        (21,),
        0,
        [[0, 1, 5, 10, 18, 20], [0, 1, 3, 7, 10, 15]],
        "search_difference_family(21, 6, 3, seed=0, max_nodes=2000000, restarts=20)",
    ),
    (22, 4, 2): (
        (22,),
        0,
        [[0, 1, 11, 12], [0, 1, 17, 19], [0, 2, 9, 16], [0, 3, 13, 17]],
        "search_difference_family(22, 4, 2, fixed=[[0, 1, 11, 12]], seed=0, max_nodes=300_000, restarts=3)",
    ),
    (28, 3, 2): (
        (28,),
        0,
        [[0, 1, 20], [0, 1, 20], [0, 2, 5], [0, 2, 5], [0, 4, 17], [0, 4, 17], [0, 6, 18], [0, 6, 18], [0, 7, 21]],
        "search_difference_family(28, 3, 2, seed=0, max_nodes=3_000_000, restarts=30)",
    ),
    (29, 4, 3): (
        (29,),
        0,
        [
            [0, 1, 2, 3],
            [0, 16, 3, 19],
            [0, 24, 19, 14],
            [0, 7, 14, 21],
            [0, 25, 21, 17],
            [0, 23, 17, 11],
            [0, 20, 11, 2],
        ],
        "cyclotomic_difference_family(29, 4, 3)",
    ),
    (34, 4, 2): (
        (34,),
        0,
        [[0, 1, 17, 18], [0, 1, 3, 11], [0, 2, 6, 11], [0, 3, 15, 27], [0, 4, 13, 20], [0, 5, 20, 26]],
        "search_difference_family(34, 4, 2, fixed=[[0, 1, 17, 18]], seed=0, max_nodes=300_000, restarts=3)",
    ),
    (35, 5, 2): (
        (35,),
        0,
        [[0, 7, 14, 21, 28], [0, 7, 14, 21, 28], [0, 1, 3, 20, 26], [0, 1, 3, 13, 30], [0, 4, 15, 26, 31]],
        "search_difference_family(35, 5, 2, fixed=[[0, 7, 14, 21, 28], [0, 7, 14, 21, 28]], seed=0, "
        "max_nodes=2000000, restarts=20)",
    ),
    (37, 4, 1): ((37,), 0, [[0, 1, 3, 24], [0, 26, 4, 32], [0, 10, 30, 18]], "cyclotomic_difference_family(37, 4, 1)"),
    (37, 4, 3): (
        (37,),
        0,
        [
            [0, 1, 2, 6],
            [0, 16, 32, 22],
            [0, 34, 31, 19],
            [0, 26, 15, 8],
            [0, 9, 18, 17],
            [0, 33, 29, 13],
            [0, 10, 20, 23],
            [0, 12, 24, 35],
            [0, 7, 14, 5],
        ],
        "cyclotomic_difference_family(37, 4, 3)",
    ),
    (40, 3, 2): (
        (40,),
        0,
        [
            [0, 1, 22],
            [0, 1, 22],
            [0, 2, 5],
            [0, 2, 5],
            [0, 4, 11],
            [0, 4, 11],
            [0, 6, 20],
            [0, 6, 30],
            [0, 8, 17],
            [0, 8, 17],
            [0, 10, 24],
            [0, 12, 25],
            [0, 12, 25],
        ],
        "search_difference_family(40, 3, 2, seed=0, max_nodes=3_000_000, restarts=30)",
    ),
    (41, 4, 3): (
        (41,),
        0,
        [
            [0, 1, 2, 3],
            [0, 10, 20, 30],
            [0, 18, 36, 13],
            [0, 16, 32, 7],
            [0, 37, 33, 29],
            [0, 6, 3, 20],
            [0, 19, 30, 36],
            [0, 26, 13, 32],
            [0, 14, 7, 33],
            [0, 17, 29, 2],
        ],
        "cyclotomic_difference_family(41, 4, 3)",
    ),
    (46, 4, 2): (
        (46,),
        0,
        [
            [0, 1, 23, 24],
            [0, 1, 3, 35],
            [0, 2, 5, 35],
            [0, 4, 19, 24],
            [0, 4, 12, 18],
            [0, 6, 15, 25],
            [0, 7, 16, 33],
            [0, 7, 28, 36],
        ],
        "search_difference_family(46, 4, 2, fixed=[[0, 1, 23, 24]], seed=0, max_nodes=300_000, restarts=3)",
    ),
    (49, 4, 1): (
        (49,),
        0,
        [[0, 1, 5, 19], [0, 2, 12, 38], [0, 3, 20, 28], [0, 6, 15, 22]],
        "search_difference_family(49, 4, 1, seed=0, max_nodes=3_000_000, restarts=30)",
    ),
    (49, 4, 3): (
        (7, 7),
        0,
        [
            [0, 1, 2, 7],
            [0, 4, 1, 28],
            [0, 2, 4, 14],
            [0, 7, 15, 22],
            [0, 28, 11, 39],
            [0, 14, 30, 44],
            [0, 9, 15, 33],
            [0, 29, 11, 20],
            [0, 18, 30, 10],
            [0, 9, 19, 36],
            [0, 29, 13, 46],
            [0, 18, 31, 23],
        ],
        "cyclotomic_difference_family(49, 4, 3)",
    ),
    # (49, 9, 3) and (51, 6, 3): literature data (Handbook of Combinatorial Designs, 2nd ed., 2007,
    # and J. R. Abel's tables), as tabulated in SageMath's design database; re-verified by
    # tests/test_bibd_missing.py (pair count and difference count, independent of gcsim).
    (49, 9, 3): (
        (49,),
        0,
        [[0, 1, 3, 5, 9, 14, 19, 25, 37], [0, 2, 12, 13, 16, 19, 34, 41, 42]],
        "cyclic DF, Colbourn & Dinitz (eds.), Handbook of Combinatorial Designs, 2nd ed. (2007) / J. "
        "R. Abel, "
        "as tabulated in SageMath's design database",
    ),
    (51, 5, 2): (
        (51,),
        0,
        [[0, 1, 4, 28, 46], [0, 1, 4, 35, 46], [0, 2, 16, 28, 38], [0, 2, 10, 17, 31], [0, 7, 19, 32, 40]],
        "search_difference_family(51, 5, 2, seed=0, max_nodes=2000000, restarts=20)",
    ),
    (51, 6, 3): (
        (51,),
        0,
        [
            [15, 17, 18, 27, 34, 48],
            [3, 17, 30, 34, 42, 45],
            [9, 17, 24, 33, 34, 39],
            [3, 25, 41, 43, 44, 48],
            [3, 5, 25, 29, 43, 48],
        ],
        "cyclic DF, Colbourn & Dinitz (eds.), Handbook of Combinatorial Designs, 2nd ed. (2007) / J. "
        "R. Abel, "
        "as tabulated in SageMath's design database",
    ),
    (52, 4, 1): (
        (51,),
        1,
        [[0, 17, 34, 51], [0, 1, 19, 24], [0, 2, 31, 39], [0, 3, 38, 45], [0, 4, 15, 25]],
        "search_difference_family(51, 4, 1, fixed=[[0, 17, 34, 51]], n_fixed=1, seed=0)",
    ),
    (53, 4, 3): (
        (53,),
        0,
        [
            [0, 1, 2, 3],
            [0, 16, 32, 48],
            [0, 44, 35, 26],
            [0, 15, 30, 45],
            [0, 28, 3, 31],
            [0, 24, 48, 19],
            [0, 13, 26, 39],
            [0, 49, 45, 41],
            [0, 42, 31, 20],
            [0, 36, 19, 2],
            [0, 46, 39, 32],
            [0, 47, 41, 35],
            [0, 10, 20, 30],
        ],
        "cyclotomic_difference_family(53, 4, 3)",
    ),
    (57, 7, 3): (
        (57,),
        0,
        [[0, 1, 5, 7, 17, 35, 49], [0, 1, 7, 12, 18, 27, 49], [0, 2, 10, 13, 14, 34, 41], [0, 4, 23, 25, 28, 44, 47]],
        "multiplier_difference_family(57, 7, 3, 7, max_nodes=200_000)",
    ),
}
