"""Difference sets: the Paley and Singer sets, their check and their circulant incidence.

A ``k``-subset ``D`` of an abelian group of order ``v`` is a ``(v, k, λ)`` *difference set*
when every nonzero element occurs exactly ``λ`` times among the differences ``x - y``
(``x != y`` in ``D``): a difference family with a single base block
(:mod:`gcsim.combinatorics.difference_families`), whose development is a symmetric design.
Here: the Paley sets (nonzero squares of GF(q), ``q = 3 mod 4``, in the additive group of
GF(q)) and Singer's sets in ``Z_v`` (a hyperplane of PG(n, q)), with the primitive
polynomials behind them; the exact ``O(k²)`` test :func:`difference_set_lambda` in ``Z_v``;
and the ``v x v`` circulant incidence of a set in ``Z_v``, built and checked in column
chunks so that it scales to ``v`` in the hundreds of thousands (Beth, Jungnickel & Lenz,
*Design Theory*, 1999, §VI).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_int, check_int_array
from ..errors import InvalidArgumentError, VerificationError
from .fields import field_tables, prime_power, prime_power_decomposition, primitive_element

__all__ = [
    "paley_difference_set",
    "singer_difference_set",
    "primitive_polynomial",
    "difference_set_lambda",
    "circulant_incidence",
    "circulant_pair_gram",
]


def paley_difference_set(q: int) -> list[int]:
    """Nonzero squares of GF(q), q = 3 mod 4: a (q, (q-1)/2, (q-3)/4) difference set.

    Paley (1933); Beth-Jungnickel-Lenz, Thm VI.1.12.  Codes as in
    :func:`gcsim.combinatorics.fields.field_tables` (additive group
    ``(Z_p)^a``).

    >>> paley_difference_set(11)
    [1, 3, 4, 5, 9]
    """
    q = check_int("q", q, minimum=7)
    if prime_power_decomposition(q) is None or q % 4 != 3:
        raise InvalidArgumentError("q", f"must be a prime power = 3 mod 4, got {q}")
    _, mul = field_tables(q)
    return sorted(set(int(x) for x in np.diag(mul)[1:]))


def singer_difference_set(n: int, q: int) -> list[int]:
    """Singer's cyclic difference set in Z_v, v = (q^{n+1}-1)/(q-1).

    With w a primitive element of GF(q^{n+1}) and H a GF(q)-hyperplane of it,
    ``D = {i mod v : w^i ∈ H}``: the map ``i -> <w^i>`` identifies Z_v with the
    points of PG(n, q) and multiplication by w (a collineation, acting regularly
    on points and on hyperplanes) acts as ``i -> i + 1``, so the translates of D
    are the hyperplanes and D is a ``(v, (q^n-1)/(q-1), (q^{n-1}-1)/(q-1))``
    difference set (Singer 1938; BJL Thm VI.1.6).  For ``q^{n+1} <= 1024`` the
    field tables give w and H = ker Tr; beyond them, for a *prime* q, GF(q^{n+1}) is
    ``GF(q)[x]/(f)`` with a primitive f found by :func:`primitive_polynomial`, w = x and
    H the elements whose coefficient of ``x^n`` is 0 (``O(v n)`` work; ``v`` up to
    :data:`gcsim.limits.MAX_DENSE_ENTRIES`).  Check a result with
    :func:`difference_set_lambda` (exact, ``O(k²)``).

    >>> singer_difference_set(2, 2)
    [1, 2, 4]
    >>> D = singer_difference_set(2, 101)           # PG(2, 101): 10,303 points, lines of 102
    >>> len(D), difference_set_lambda(101**2 + 101 + 1, D)
    (102, 1)
    """
    n = check_int("n", n, minimum=2)
    q = check_int("q", q, minimum=2)
    if prime_power_decomposition(q) is None:
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    Q = limits.check_power("n", q, n + 1, "q^(n+1) (PG(n, q) has (q^(n+1) - 1) / (q - 1) points)")
    if Q > 1024:
        if prime_power(q)[1] != 1:  # GF(q^(n+1)) for a prime power q would need GF(q) arithmetic first
            raise InvalidArgumentError(
                "q", f"q^(n+1) = {Q} is too large for table arithmetic (max 1024) and q = {q} is not a prime"
            )
        return _singer_prime(n, q)
    add, mul = field_tables(Q)
    x = np.arange(Q)
    frob = np.ones(Q, dtype=np.int64)
    for _ in range(q):
        frob = mul[frob, x]  # x^q for every x
    trace = x.copy()
    conj = x.copy()
    for _ in range(n):
        conj = frob[conj]
        trace = add[trace, conj]
    w = primitive_element(Q)
    v = (Q - 1) // (q - 1)
    D, y = [], 1
    for i in range(v):
        if trace[y] == 0:
            D.append(i)
        y = int(mul[y, w])
    return D


def _polmulmod(a: list[int], b: list[int], f: list[int], p: int) -> list[int]:
    """``a b mod f`` over GF(p): coefficient lists, lowest degree first, ``f`` monic of degree ``len(f) - 1``."""
    d = len(f) - 1
    prod = [0] * (2 * d - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                prod[i + j] += x * y
    for t in range(len(prod) - 1, d - 1, -1):  # x^t = x^(t-d) (x^d - f(x)): fold the top terms down
        c = prod[t] % p
        if c:
            for j in range(d):
                prod[t - d + j] -= c * f[j]
        prod[t] = 0
    return [c % p for c in prod[:d]]


def _x_power(e: int, f: list[int], p: int) -> list[int]:
    """``x^e mod f`` over GF(p) by repeated squaring."""
    d = len(f) - 1
    result = [1] + [0] * (d - 1)
    base = [0, 1] + [0] * (d - 2) if d > 1 else [(-f[0]) % p]
    while e:
        if e & 1:
            result = _polmulmod(result, base, f, p)
        base = _polmulmod(base, base, f, p)
        e >>= 1
    return result


def primitive_polynomial(p: int, d: int) -> list[int]:
    """The first monic primitive polynomial of degree ``d`` over GF(p) (``p`` prime), lowest coefficient first.

    Candidates ``x^d + c_{d-1} x^{d-1} + ... + c_0`` are tried in the lexicographic order of
    ``(c_0, ..., c_{d-1})`` (``c_0 != 0``); ``f`` is kept when ``x`` has multiplicative order
    exactly ``p^d - 1`` modulo ``f`` (``x^{p^d-1} = 1`` and ``x^{(p^d-1)/r} != 1`` for every prime
    ``r | p^d - 1``).  That alone proves f irreducible: modulo a reducible f the ring
    ``GF(p)[x]/(f)`` has a nonzero non-unit, so its unit group has fewer than ``p^d - 1``
    elements and no element of that order.  The returned list has ``d + 1`` entries, the last 1.

    >>> primitive_polynomial(2, 3)
    [1, 1, 0, 1]
    """
    p = check_int("p", p, minimum=2)
    d = check_int("d", d, minimum=1)
    pa = prime_power_decomposition(p)
    if pa is None or pa[1] != 1:
        raise InvalidArgumentError("p", f"must be a prime, got {p}")
    # p^d - 1 is factored and up to p^d candidates tried: bounded like the points of PG(d - 1, p)
    points = (limits.check_power("d", p, d, "p^d, the order of GF(p^d)") - 1) // (p - 1)
    limits.check_entries("d", (points,), f"the points of PG({d - 1}, {p}) (the nonzero elements of GF(p^d) / GF(p)*)")
    from itertools import product

    from sympy import factorint

    order = p**d - 1
    cofactors = [order // r for r in factorint(order)]
    for tail in product(range(p), repeat=d):
        c = list(reversed(tail))  # c_0 varies slowest: (c_0, ..., c_{d-1}) in lexicographic order
        if c[0] == 0:
            continue
        f = c + [1]
        one = [1] + [0] * (d - 1)
        if _x_power(order, f, p) == one and all(_x_power(e, f, p) != one for e in cofactors):
            return f
    raise AssertionError(f"no primitive polynomial of degree {d} over GF({p})")  # GF(p^d) has one: unreachable


def _singer_prime(n: int, p: int) -> list[int]:
    """Singer's difference set for a prime ``p`` by the recurrence of ``x^i mod f`` (:func:`singer_difference_set`)."""
    d = n + 1
    v = (p**d - 1) // (p - 1)
    limits.check_entries("q", (v,), f"the points of PG({n}, {p}) (one coefficient of x^n each)")
    f = primitive_polynomial(p, d)
    low = [(-c) % p for c in f[:d]]  # x^d = sum_j low[j] x^j
    w = np.zeros(d, dtype=np.int64)
    w[0] = 1  # x^0
    top = np.empty(v, dtype=np.int64)  # coefficient of x^n in x^i, i < v
    for i in range(v):
        top[i] = w[d - 1]
        carry = int(w[d - 1])
        w[1:] = w[:-1]
        w[0] = 0
        if carry:
            w = (w + carry * np.asarray(low, dtype=np.int64)) % p
    return [int(i) for i in np.flatnonzero(top == 0)]


def difference_set_lambda(v: int, D: Sequence[int]) -> int | None:
    """``λ`` if ``D`` is a ``(v, |D|, λ)`` difference set in Z_v, else None (exact, ``O(|D|²)``).

    Every nonzero residue must occur exactly ``λ`` times among the differences ``a - b``
    (``a != b`` in ``D``); ``D`` must consist of distinct residues in ``[0, v)``, given as integers
    (a boolean, a non-whole float or a string is refused, never truncated).  Sizes: ``v`` counts
    (one int64 per residue) and the ``k x k`` difference table are each within
    :data:`gcsim.limits.MAX_DENSE_ENTRIES`, checked before anything is allocated; a ``(v, k)``
    with ``k(k - 1)`` not a multiple of ``v - 1`` is no difference set and returns None at once.

    >>> difference_set_lambda(7, [1, 2, 4]), difference_set_lambda(7, [0, 1, 2])
    (1, None)
    """
    v = check_int("v", v, minimum=1)
    limits.check_entries("v", (v,), "the count of differences per residue of Z_v")
    arr = check_int_array("D", D, what="the residues")
    if arr.ndim != 1 or arr.size == 0 or np.any(arr < 0) or np.any(arr >= v) or np.unique(arr).size != arr.size:
        raise InvalidArgumentError("D", f"must list distinct residues in [0, {v}), got {arr.size} entries")
    k = int(arr.size)
    limits.check_entries("D", (k, k), "the difference table (k x k, counted 1024 rows at a time)")
    if v == 1:
        return 0
    if (k * (k - 1)) % (v - 1):  # k(k - 1) = λ(v - 1) fails: no difference set, nothing to count
        return None
    counts = np.zeros(v, dtype=np.int64)
    for start in range(0, k, 1024):  # rows of the difference table, 1024 at a time
        counts += np.bincount(((arr[start : start + 1024, None] - arr[None, :]) % v).ravel(), minlength=v)
    counts[0] -= k  # the a = b terms
    lam = int(counts[1])
    return lam if np.all(counts[1:] == lam) else None


def _developed_columns(v: int, base: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows of columns ``start .. stop-1`` of the development of ``base`` over Z_v, each sorted: ``(stop-start, k)``."""
    return np.sort((base[None, :] + np.arange(start, stop, dtype=np.int64)[:, None]) % v, axis=1)


def _column_chunk(v: int, k: int) -> int:
    return max(1, min(v, 2**22 // max(k, 1)))


def circulant_incidence(v: int, D: Sequence[int]) -> sp.csc_matrix:
    """The ``v x v`` 0/1 incidence whose column ``j`` is the indicator of ``D + j`` (mod ``v``), sparse CSC.

    Rows: the points of Z_v (the data parts); columns: the translates of ``D`` (the workers).
    For a ``(v, k, λ)`` difference set (:func:`singer_difference_set`, :func:`paley_difference_set`
    for a prime ``q``) this is the incidence of the developed symmetric design, with
    ``AᵀA = (k − λ)I + λJ`` (theory §10.8, Lemma 9a); built in ``O(v k log k)`` with ``v k``
    stored entries, never a dense matrix.

    >>> circulant_incidence(7, [1, 2, 4]).toarray()[:, :2].T
    array([[0, 1, 1, 0, 1, 0, 0],
           [0, 0, 1, 1, 0, 1, 0]])
    """
    v = check_int("v", v, minimum=1)
    base = check_int_array("D", D, what="the residues", limit_name="MAX_SPARSE_ENTRIES")
    limits.check_entries("D", (v, base.size), "the incidence's stored entries (v x k)", limit_name="MAX_SPARSE_ENTRIES")
    if base.ndim != 1 or base.size == 0 or np.any(base < 0) or np.any(base >= v) or np.unique(base).size != base.size:
        raise InvalidArgumentError("D", f"must list distinct residues in [0, {v}), got {base.size} entries")
    k = base.size
    limits.check_entries("D", (v, k), "the incidence's stored entries (v x k)", limit_name="MAX_SPARSE_ENTRIES")
    index_dtype = np.int32 if v < 2**31 else np.int64
    indices = np.empty(v * k, dtype=index_dtype)
    step = _column_chunk(v, k)
    for a in range(0, v, step):
        b = min(v, a + step)
        indices[a * k : b * k] = _developed_columns(v, base, a, b).ravel()
    indptr = np.arange(v + 1, dtype=index_dtype) * k
    return sp.csc_matrix((np.ones(v * k, dtype=np.int64), indices, indptr), shape=(v, v))


def circulant_pair_gram(S: sp.spmatrix) -> tuple[int, int] | None:
    """``(k, λ)`` for a circulant 0/1 incidence with ``AᵀA = (k − λ)I + λJ``; None when ``S`` is not circulant.

    ``S`` is circulant when it is square (``v x v``) and column ``j`` is column 0 shifted by
    ``j`` (mod ``v``), checked entry by entry in ``O(v k log k)``.  Then (theory §10.8, Lemma 9a)
    ``(AᵀA)_{ij} = #{(a, b) ∈ D² : a − b ≡ j − i}`` with ``D`` the rows of column 0, so
    ``AᵀA = (k − λ)I + λJ`` exactly when ``D`` is a ``(v, k, λ)`` difference set
    (:func:`difference_set_lambda`, ``O(k²)``): ``O(v k + k²)`` work against the ``O(v²)`` entries of
    ``AᵀA``.

    Raises
    ------
    VerificationError
        ``S`` is circulant but column 0 is not a difference set (names two columns that meet in
        the wrong number of parts), or ``S`` is not a 0/1 matrix.

    >>> circulant_pair_gram(circulant_incidence(13, singer_difference_set(2, 3)))
    (4, 1)
    >>> print(circulant_pair_gram(sp.csc_matrix(np.ones((2, 3)))))     # not square: not circulant
    None
    """
    A = sp.csc_matrix(S)
    A.sum_duplicates()
    A.eliminate_zeros()
    v, n = A.shape
    if v != n or v == 0:
        return None
    if A.nnz and not np.all(A.data == 1):
        raise VerificationError("circulant_pair_gram: not a 0/1 matrix")
    col = np.diff(A.indptr)
    k = int(col[0])
    if k == 0 or not np.all(col == k):
        return None
    A.sort_indices()
    rows = A.indices.astype(np.int64).reshape(v, k)
    base = rows[0]
    step = _column_chunk(v, k)
    for a in range(0, v, step):
        b = min(v, a + step)
        if not np.array_equal(rows[a:b], _developed_columns(v, base, a, b)):
            return None
    lam = difference_set_lambda(v, base.tolist())
    if lam is None:
        counts = np.zeros(v, dtype=np.int64)
        np.add.at(counts, ((base[:, None] - base[None, :]) % v).ravel(), 1)
        j = int(np.flatnonzero(counts[1:] != counts[1])[0]) + 1
        raise VerificationError(
            f"circulant incidence: columns 0 and {j} meet in {int(counts[j])} parts, columns 0 and 1 in "
            f"{int(counts[1])}: column 0 is not a difference set (AᵀA != (k - λ)I + λJ)"
        )
    return k, lam
