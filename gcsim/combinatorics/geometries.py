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

from itertools import combinations

import numpy as np

from .. import limits
from .._validation import check_dense_size, check_int
from ..errors import InvalidArgumentError, SizeLimitError
from ..limits import check_work
from .fields import field_tables, int_cache, is_prime_power

__all__ = [
    "gaussian_binomial",
    "projective_points",
    "projective_point_index",
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
    n = check_int("n", n, minimum=0)
    d = check_int("d", d, minimum=0)
    q = check_int("q", q, minimum=2)
    if d > n:
        return 0
    # the numerator has about d (n - d/2) log2(q) bits: its size before it is computed
    check_work("n", min(d, n - d) * n * q.bit_length(), "bits of the Gaussian binomial", limit_name="MAX_EXACT_WORK")
    d = min(d, n - d)  # [n choose d]_q = [n choose n - d]_q
    num, den = 1, 1
    for i in range(d):
        num *= q ** (n - i) - 1
        den *= q ** (i + 1) - 1
    return num // den


def _check_q(q) -> int:
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    return q


def _power(name: str, q: int, e: int, what: str) -> int:
    """``q**e`` (the entries of an array gcsim would build), refused beyond ``MAX_DENSE_ENTRIES``
    before the power is computed (``q**(10**12)`` would not end)."""
    limit = limits.MAX_DENSE_ENTRIES
    if e * (q.bit_length() - 1) > limit.bit_length():  # q^e >= 2^(e (bits - 1)) > limit
        raise SizeLimitError(
            name,
            f"{what} has {q}^{e:,} entries, over gcsim's limit of {limit:,} entries "
            "(gcsim.limits.MAX_DENSE_ENTRIES; raise it there on a bigger machine)",
            requested=limit + 1,
            limit=limit,
            limit_name="MAX_DENSE_ENTRIES",
        )
    entries = q**e
    limits.check_entries(name, (entries,), what)
    return entries


def _codes(vectors: np.ndarray, q: int) -> np.ndarray:
    """Base-q integer code of each row (most significant coordinate first)."""
    v = np.asarray(vectors, dtype=np.int64)
    weights = q ** np.arange(v.shape[-1] - 1, -1, -1, dtype=np.int64)
    return v @ weights


def _all_vectors(q: int, N: int) -> np.ndarray:
    """All q**N vectors of GF(q)^N as integer rows, in code order."""
    codes = np.arange(q**N, dtype=np.int64)
    digits = (codes[:, None] // (q ** np.arange(N - 1, -1, -1, dtype=np.int64))[None, :]) % q
    return digits


def projective_points(n: int, q: int) -> np.ndarray:
    """Points of PG(n-1, q): the vectors of GF(q)^n whose first nonzero entry is 1.

    Returns an int array of shape ``((q^n - 1)/(q - 1), n)`` of element codes, in
    increasing order of the base-q code of the vector (most significant coordinate first).
    No field arithmetic is needed (normalized vectors are listed directly).

    >>> projective_points(2, 3).tolist()
    [[0, 1], [1, 0], [1, 1], [1, 2]]
    """
    n = check_int("n", n, minimum=1)
    q = _check_q(q)
    _power("n", q, n, f"GF({q})^{n}")
    check_dense_size("q", (q**n - 1) // (q - 1), n, f"the point list of PG({n - 1},{q})")
    blocks = []
    for lead in range(n - 1, -1, -1):  # vectors (0, .., 0, 1, *): increasing codes
        tail = n - 1 - lead
        vec = np.zeros((q**tail, n), dtype=np.int64)
        vec[:, lead] = 1
        vec[:, lead + 1 :] = _all_vectors(q, tail)
        blocks.append(vec)
    return np.concatenate(blocks)


@int_cache(maxsize=64)
def projective_point_index(n: int, q: int) -> np.ndarray:
    """Lookup table vector code -> index of the point of PG(n-1, q) it spans (``-1`` for 0).

    ``table[c]`` is the row of :func:`projective_points` spanned by the nonzero vector of
    GF(q)^n with base-q code ``c``.

    >>> int(projective_point_index(3, 2)[7])
    6
    """
    n = check_int("n", n, minimum=1)
    q = _check_q(q)
    _power("n", q, n, "the lookup table of GF(q)^n")
    _, mul = field_tables(q)
    points = projective_points(n, q)
    scalars = np.arange(1, q, dtype=np.int64)
    multiples = mul[scalars[:, None, None], points[None, :, :]]
    table = np.full(q**n, -1, dtype=np.int64)
    table[_codes(multiples, q)] = np.broadcast_to(np.arange(len(points)), multiples.shape[:2])
    table.setflags(write=False)
    return table


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
    # the result's shape before it is built: gaussian_binomial(N, m, q) x m x N
    count = gaussian_binomial(N, m, q)
    limits.check_entries("N", (count, m, N), f"the bases of the {m}-subspaces of GF({q})^{N}")
    out = []
    for pivots in combinations(range(N), m):
        # free entries: row i, columns after its pivot that are not pivots
        free = [(i, j) for i in range(m) for j in range(pivots[i] + 1, N) if j not in pivots]
        count = q ** len(free)
        mats = np.zeros((count, m, N), dtype=np.int64)
        mats[:, np.arange(m), list(pivots)] = 1
        if free:
            vals = _all_vectors(q, len(free))
            rows, cols = zip(*free, strict=False)
            mats[:, list(rows), list(cols)] = vals
        out.append(mats)
    return np.concatenate(out, axis=0) if out else np.zeros((0, m, N), dtype=np.int64)


def _spans(bases: np.ndarray, q: int) -> np.ndarray:
    """All q^m vectors of each span: integer array (count, q^m, N)."""
    add, mul = field_tables(q)
    count, m, N = bases.shape
    coeffs = _all_vectors(q, m)  # (q^m, m)
    span = np.zeros((count, q**m, N), dtype=np.int64)
    for i in range(m):  # m is tiny; each step is a batched table lookup
        span = add[span, mul[coeffs[None, :, i, None], bases[:, None, i, :]]]
    return span


def pg_parameters(n: int, q: int, d: int) -> tuple[int, int, int]:
    """``(v, k, lambda)`` of the design of points vs d-flats of PG(n, q).

    >>> pg_parameters(2, 9, 1)
    (91, 10, 1)
    """
    n = check_int("n", n, minimum=1)
    q = _check_q(q)
    d = check_int("d", d, minimum=1, maximum=n)
    return (gaussian_binomial(n + 1, 1, q), gaussian_binomial(d + 1, 1, q), gaussian_binomial(n - 1, d - 1, q))


def ag_parameters(n: int, q: int, d: int) -> tuple[int, int, int]:
    """``(v, k, lambda)`` of the design of points vs d-flats of AG(n, q).

    >>> ag_parameters(2, 3, 1)
    (9, 3, 1)
    """
    n = check_int("n", n, minimum=1)
    q = _check_q(q)
    d = check_int("d", d, minimum=1, maximum=n)
    check_work("n", n * q.bit_length(), "bits of v = q^n", limit_name="MAX_EXACT_WORK")
    lam = gaussian_binomial(n - 1, d - 1, q)  # refuses a size beyond MAX_EXACT_WORK bits first
    return (q**n, q**d, lam)


def pg_flats(n: int, q: int, d: int = 1) -> list[tuple[int, ...]]:
    """Blocks of points vs d-flats of PG(n, q) (points indexed as in :func:`projective_points`).

    >>> blocks = pg_flats(2, 2, 1)
    >>> len(blocks), blocks[0]
    (7, (0, 1, 2))
    """
    n = check_int("n", n, minimum=2)
    q = _check_q(q)
    d = check_int("d", d, minimum=1, maximum=n - 1)
    _power("n", q, n + 1, f"GF({q})^{n + 1}")
    table = projective_point_index(n + 1, q)
    bases = subspaces(n + 1, d + 1, q)
    # chunks keep the span array (chunk, q^(d+1), n+1) at a few million entries
    chunk = max(1, 2_000_000 // (q ** (d + 1) * (n + 1)))
    blocks: set[tuple[int, ...]] = set()
    for start in range(0, len(bases), chunk):
        vecs = _spans(bases[start : start + chunk], q)
        idx = table[_codes(vecs, q)]  # -1 for the zero vector
        # every projective point of the flat occurs q-1 times among the nonzero vectors
        idx = np.sort(idx, axis=1)[:, 1 :: q - 1]
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
    _power("n", q, n, f"the points of AG({n},{q})")
    add, _ = field_tables(q)
    bases = subspaces(n, d, q)
    U = _spans(bases, q)  # (count, q^d, n)
    X = _all_vectors(q, n)  # (q^n, n)
    blocks: set[tuple[int, ...]] = set()
    for u in U:  # one subspace at a time keeps memory at q^n * q^d
        cos = add[X[:, None, :], u[None, :, :]]
        codes = np.sort(_codes(cos, q), axis=1)
        blocks.update(map(tuple, np.unique(codes, axis=0).tolist()))
    return sorted(blocks)
