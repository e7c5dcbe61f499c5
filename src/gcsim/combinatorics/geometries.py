"""Block sets of the finite geometries PG(n, q) and AG(n, q) over GF(q).

The functions here return plain block lists (sorted tuples of point indices);
:mod:`gcsim.combinatorics.bibd` wraps them into verified :class:`BIBD` objects.

Definitions (Hirschfeld, *Projective Geometries over Finite Fields*, 1998;
Beth, Jungnickel & Lenz, *Design Theory*, 1999, Ch. I.2 and XIII.2):

* PG(n, q): points are the 1-dimensional subspaces of GF(q)^{n+1}; the
  d-flats are the (d+1)-dimensional subspaces.  Points versus d-flats
  (1 <= d <= n-1) form a 2-design with
  ``v = [n+1 choose 1]_q``, ``k = [d+1 choose 1]_q``, ``lambda = [n-1 choose d-1]_q``.
* AG(n, q): points are the vectors of GF(q)^n; the d-flats are the cosets
  ``x + U`` of d-dimensional subspaces U.  Points versus d-flats form a
  2-design with ``v = q^n``, ``k = q^d``, ``lambda = [n-1 choose d-1]_q``.

Here ``[n choose d]_q`` is the Gaussian binomial coefficient (number of
d-dimensional subspaces of GF(q)^n).
"""
from __future__ import annotations

from functools import cache, lru_cache
from itertools import combinations

import numpy as np

from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError
from .fields import is_prime_power, prime_power_decomposition

__all__ = [
    "field_tables",
    "field_primitive_element",
    "gaussian_binomial",
    "projective_points",
    "subspaces",
    "pg_flats",
    "ag_flats",
    "pg_parameters",
    "ag_parameters",
]


def gaussian_binomial(n: int, d: int, q: int) -> int:
    """Gaussian binomial ``[n choose d]_q``: number of d-dim subspaces of GF(q)^n.

    >>> gaussian_binomial(3, 1, 2), gaussian_binomial(4, 2, 2)
    (7, 35)
    """
    if d < 0 or d > n:
        return 0
    num, den = 1, 1
    for i in range(d):
        num *= q ** (n - i) - 1
        den *= q ** (i + 1) - 1
    return num // den


def _monic_mod(poly: list[int], f: list[int], p: int) -> list[int]:
    """Remainder of ``poly`` modulo the monic ``f`` over Z_p (coefficients low degree first)."""
    r = list(poly)
    df = len(f) - 1
    while len(r) - 1 >= df:
        lead = r[-1] % p
        shift = len(r) - 1 - df
        if lead:
            for i, c in enumerate(f):
                r[shift + i] = (r[shift + i] - lead * c) % p
        r.pop()
    return r


def _irreducible(p: int, a: int) -> list[int]:
    """First monic irreducible polynomial of degree ``a`` over Z_p (lexicographic search)."""
    def monic(deg: int, code: int) -> list[int]:
        return [(code // p ** j) % p for j in range(deg)] + [1]

    for code in range(p ** a):
        f = monic(a, code)
        if f[0] == 0:
            continue  # divisible by x
        if all(any(_monic_mod(f, monic(d, c), p)) for d in range(1, a // 2 + 1) for c in range(p ** d)):
            return f
    raise AssertionError("no irreducible polynomial found")  # pragma: no cover


@cache
def field_tables(q: int, modulus: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Addition and multiplication tables of GF(q), elements coded 0..q-1.

    For ``q = p^a`` an element is the polynomial ``sum_j c_j x^j`` (``c_j`` in
    Z_p) modulo a monic irreducible polynomial of degree ``a``, coded as
    ``sum_j c_j p^j``; so addition is digitwise mod p, 0 and 1 are coded 0 and 1.
    The polynomial is ``modulus`` (coefficients low degree first, leading 1
    included; e.g. a Conway polynomial, galois' default) or, by default, the
    first monic irreducible one in lexicographic order. Pure NumPy table lookups
    are far cheaper than a JIT-compiled field for the small fields designs need.

    >>> add, mul = field_tables(4)
    >>> add[2, 3], mul[2, 3], mul[2, 2]
    (np.int64(1), np.int64(1), np.int64(3))
    """
    q = _check_q(q)
    # two q x q tables: refuse before allocating (existence questions never need them)
    check_dense_size("q", q, q, f"the arithmetic table of GF({q})")
    p, a = prime_power_decomposition(q)
    e = np.arange(q, dtype=np.int64)
    if a == 1:
        add = (e[:, None] + e[None, :]) % p
        mul = (e[:, None] * e[None, :]) % p
    else:
        f = list(modulus) if modulus is not None else _irreducible(p, a)
        if len(f) != a + 1 or f[-1] != 1:
            raise InvalidArgumentError("modulus", f"must be a monic polynomial of degree {a} (low degree first)")
        pw = p ** np.arange(a, dtype=np.int64)
        D = (e[:, None] // pw[None, :]) % p                      # digits, low degree first
        T = [D]
        for _ in range(a - 1):                                   # T[i][b] = x^i * b
            prev = T[-1]
            top = prev[:, -1:]
            shifted = np.concatenate([np.zeros((q, 1), dtype=np.int64), prev[:, :-1]], axis=1)
            T.append((shifted - top * np.asarray(f[:-1], dtype=np.int64)[None, :]) % p)
        T = np.stack(T)                                          # (a, q, a)
        add = ((D[:, None, :] + D[None, :, :]) % p) @ pw
        mul = (np.einsum("xi,iyj->xyj", D, T) % p) @ pw
    add.setflags(write=False)
    mul.setflags(write=False)
    return add, mul


def field_primitive_element(q: int) -> int:
    """Smallest code of a generator of the multiplicative group of GF(q) (tables of :func:`field_tables`).

    >>> field_primitive_element(7), field_primitive_element(9)
    (3, 4)
    """
    _, mul = field_tables(q)
    for g in range(2, q) if q > 2 else [1]:
        x, order = g, 1
        while x != 1:
            x = int(mul[x, g])
            order += 1
        if order == q - 1:
            return g
    raise AssertionError("no primitive element")  # pragma: no cover


def _check_q(q) -> int:
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    return q


def _codes(vectors: np.ndarray, q: int) -> np.ndarray:
    """Base-q integer code of each row (most significant coordinate first)."""
    v = np.asarray(vectors, dtype=np.int64)
    weights = q ** np.arange(v.shape[-1] - 1, -1, -1, dtype=np.int64)
    return v @ weights


def _all_vectors(q: int, N: int) -> np.ndarray:
    """All q**N vectors of GF(q)^N as integer rows, in code order."""
    codes = np.arange(q ** N, dtype=np.int64)
    digits = (codes[:, None] // (q ** np.arange(N - 1, -1, -1, dtype=np.int64))[None, :]) % q
    return digits


@lru_cache(maxsize=64)
def projective_points(N: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Points of PG(N-1, q) and the lookup table vector-code -> point index.

    Returns ``(points, table)``: ``points`` is an integer array of shape
    ``(P, N)``, ``P = (q^N - 1)/(q - 1)``, holding the representatives whose
    first nonzero coordinate is 1, in increasing code order; ``table[c]`` is the
    index of the point spanned by the nonzero vector with code ``c``
    (``table[0] = -1``).

    >>> pts, table = projective_points(3, 2)
    >>> len(pts), int(table[7])
    (7, 6)
    """
    N = check_int("N", N, minimum=1)
    q = _check_q(q)
    _, mul = field_tables(q)
    vecs = _all_vectors(q, N)
    nz = vecs != 0
    first = np.argmax(nz, axis=1)
    is_rep = nz.any(axis=1) & (vecs[np.arange(len(vecs)), first] == 1)
    points = vecs[is_rep]
    scalars = np.arange(1, q, dtype=np.int64)
    multiples = mul[scalars[:, None, None], points[None, :, :]]
    table = np.full(q ** N, -1, dtype=np.int64)
    table[_codes(multiples, q)] = np.broadcast_to(np.arange(len(points)), multiples.shape[:2])
    points.setflags(write=False)
    table.setflags(write=False)
    return points, table


def subspaces(N: int, m: int, q: int) -> np.ndarray:
    """Bases of all m-dimensional subspaces of GF(q)^N, in reduced row echelon form.

    Returns an integer array of shape ``(gaussian_binomial(N, m, q), m, N)``.
    Each subspace has exactly one RREF basis, so the list has no repeats.

    >>> subspaces(3, 2, 2).shape
    (7, 2, 3)
    """
    N = check_int("N", N, minimum=1)
    m = check_int("m", m, minimum=0, maximum=N)
    q = _check_q(q)
    out = []
    for pivots in combinations(range(N), m):
        # free entries: row i, columns after its pivot that are not pivots
        free = [(i, j) for i in range(m) for j in range(pivots[i] + 1, N) if j not in pivots]
        count = q ** len(free)
        mats = np.zeros((count, m, N), dtype=np.int64)
        mats[:, np.arange(m), list(pivots)] = 1
        if free:
            vals = _all_vectors(q, len(free))
            rows, cols = zip(*free)
            mats[:, list(rows), list(cols)] = vals
        out.append(mats)
    return np.concatenate(out, axis=0) if out else np.zeros((0, m, N), dtype=np.int64)


def _spans(bases: np.ndarray, q: int) -> np.ndarray:
    """All q^m vectors of each span: integer array (count, q^m, N)."""
    add, mul = field_tables(q)
    count, m, N = bases.shape
    coeffs = _all_vectors(q, m)                          # (q^m, m)
    span = np.zeros((count, q ** m, N), dtype=np.int64)
    for i in range(m):  # m is tiny; each step is a batched table lookup
        span = add[span, mul[coeffs[None, :, i, None], bases[:, None, i, :]]]
    return span


def pg_parameters(n: int, q: int, d: int) -> tuple[int, int, int]:
    """``(v, k, lambda)`` of the design of points vs d-flats of PG(n, q).

    >>> pg_parameters(2, 9, 1)
    (91, 10, 1)
    """
    return (gaussian_binomial(n + 1, 1, q), gaussian_binomial(d + 1, 1, q), gaussian_binomial(n - 1, d - 1, q))


def ag_parameters(n: int, q: int, d: int) -> tuple[int, int, int]:
    """``(v, k, lambda)`` of the design of points vs d-flats of AG(n, q).

    >>> ag_parameters(2, 3, 1)
    (9, 3, 1)
    """
    return (q ** n, q ** d, gaussian_binomial(n - 1, d - 1, q))


def pg_flats(n: int, q: int, d: int = 1) -> list[tuple[int, ...]]:
    """Blocks of points vs d-flats of PG(n, q) (points indexed as in :func:`projective_points`).

    >>> blocks = pg_flats(2, 2, 1)
    >>> len(blocks), blocks[0]
    (7, (0, 1, 2))
    """
    n = check_int("n", n, minimum=2)
    q = _check_q(q)
    d = check_int("d", d, minimum=1, maximum=n - 1)
    _, table = projective_points(n + 1, q)
    bases = subspaces(n + 1, d + 1, q)
    # chunks keep the span array (chunk, q^(d+1), n+1) at a few million entries
    chunk = max(1, 2_000_000 // (q ** (d + 1) * (n + 1)))
    blocks: set[tuple[int, ...]] = set()
    for start in range(0, len(bases), chunk):
        vecs = _spans(bases[start:start + chunk], q)
        idx = table[_codes(vecs, q)]                         # -1 for the zero vector
        # every projective point of the flat occurs q-1 times among the nonzero vectors
        idx = np.sort(idx, axis=1)[:, 1::q - 1]
        blocks.update(map(tuple, idx.tolist()))
    return sorted(blocks)


def ag_flats(n: int, q: int, d: int = 1) -> list[tuple[int, ...]]:
    """Blocks of points vs d-flats of AG(n, q) (point = base-q code of the vector).

    >>> blocks = ag_flats(2, 3, 1)
    >>> len(blocks), blocks[0]
    (12, (0, 1, 2))
    """
    n = check_int("n", n, minimum=2)
    q = _check_q(q)
    d = check_int("d", d, minimum=1, maximum=n - 1)
    add, _ = field_tables(q)
    bases = subspaces(n, d, q)
    U = _spans(bases, q)                                     # (count, q^d, n)
    X = _all_vectors(q, n)                                   # (q^n, n)
    blocks: set[tuple[int, ...]] = set()
    for u in U:  # one subspace at a time keeps memory at q^n * q^d
        cos = add[X[:, None, :], u[None, :, :]]
        codes = np.sort(_codes(cos, q), axis=1)
        blocks.update(map(tuple, np.unique(codes, axis=0).tolist()))
    return sorted(blocks)
