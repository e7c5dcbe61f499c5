"""The sparse incidence of a block list, and the exact check of ``AᵀA = (k − λ)I + λJ`` (theory §42).

The structured route (:mod:`gcsim.coding.structured`) applies to an RD encoder whose assignment
has a pair Gram ``aI + λJ``: :func:`check_pair_gram` proves it in integer arithmetic (or, for a
circulant incidence, by the difference-set count of theory §10.8); :func:`incidence_from_blocks`
builds the ``scipy.sparse`` incidence it reads.  Both are importable from
:mod:`gcsim.coding.structured` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_int, check_int_array
from ..combinatorics.difference_families import circulant_pair_gram
from ..errors import InvalidArgumentError, VerificationError

__all__ = ["incidence_from_blocks", "check_pair_gram"]


def incidence_from_blocks(v: int, blocks: Iterable[Iterable[int]]) -> sp.csc_matrix:
    """The ``v x b`` 0/1 incidence (points x blocks) of a block list, as a ``scipy.sparse`` CSC matrix.

    No dense matrix is formed.  Blocks must be sets of points in ``range(v)`` of one size, given as
    integers (a boolean, a fraction or a string is refused, never truncated); the block count and
    each block within :data:`gcsim.limits.MAX_SPARSE_ENTRIES`, checked before a block is copied.

    Examples
    --------
    >>> A = incidence_from_blocks(3, [(0, 1), (1, 2), (0, 2)])
    >>> A.shape, A.nnz, A.toarray().tolist()
    ((3, 3), 6, [[1, 0, 1], [1, 1, 0], [0, 1, 1]])
    """
    v = check_int("v", v, minimum=1)
    if isinstance(blocks, Sized):  # before a block is read (a zero-stride view counts)
        limits.check_entries("blocks", (len(blocks),), "the block list", limit_name="MAX_SPARSE_ENTRIES")
    rows = [
        np.unique(check_int_array("blocks", blk, ndim=1, what="a block", limit_name="MAX_SPARSE_ENTRIES"))
        for blk in blocks
    ]
    if not rows:
        raise InvalidArgumentError("blocks", "must contain at least one block")
    k = rows[0].size
    for j, r in enumerate(rows):
        if r.size != k:
            raise InvalidArgumentError("blocks", f"block {j} has {r.size} distinct points, block 0 has {k}")
        if r.size and (r[0] < 0 or r[-1] >= v):
            raise InvalidArgumentError("blocks", f"block {j} has a point outside range({v})")
    indices = np.concatenate(rows)
    indptr = np.arange(len(rows) + 1, dtype=np.int64) * k
    return sp.csc_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(v, len(rows)))


def check_pair_gram(A: Any, what: str = "A") -> tuple[int, int]:
    """``(k, λ)`` if the 0/1 matrix ``A`` has ``AᵀA = (k − λ) I + λ J`` with ``k > λ``, exactly.

    Column blocks of ``AᵀA`` are computed from the sparse incidence in integer arithmetic
    (``O(n k²)`` work, one ``chunk x n`` block at a time: no ``n x n`` matrix is kept).  A
    circulant incidence (column ``j`` is column 0 shifted by ``j``: a developed difference set,
    e.g. :func:`~gcsim.combinatorics.difference_families.circulant_incidence` of a Singer set) is
    checked by :func:`~gcsim.combinatorics.difference_families.circulant_pair_gram` instead, in
    ``O(nnz + k²)`` (theory §10.8, Lemma 9a): PG(2, 317), 100,807 workers, in seconds.

    Raises
    ------
    VerificationError
        ``A`` is not 0/1, its columns do not all hold ``k`` parts, two columns do not meet in
        exactly ``λ`` parts, or ``k == λ`` (all columns equal: the structured route needs ``a > 0``).

    Examples
    --------
    >>> check_pair_gram(incidence_from_blocks(7, [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6),
    ...                                             (0, 4, 5), (1, 5, 6), (0, 2, 6)]))
    (3, 1)
    """
    S = sp.csc_matrix(A, dtype=np.int64, copy=True)
    S.sum_duplicates()
    S.eliminate_zeros()
    if S.nnz and not np.all(S.data == 1):
        raise VerificationError(f"{what}: not a 0/1 matrix")
    N, n = S.shape
    if n == 0 or N == 0:
        raise VerificationError(f"{what}: empty assignment")
    col = np.diff(S.indptr)
    k = int(col[0])
    if not np.all(col == k):
        j = int(np.flatnonzero(col != k)[0])
        raise VerificationError(f"{what}: column {j} holds {int(col[j])} parts, column 0 holds {k}")
    lam = int((S[:, 0].T @ S[:, 1]).toarray()[0, 0]) if n > 1 else 0
    if k <= lam:
        raise VerificationError(f"{what}: k = {k} <= λ = {lam} (the structured route needs AᵀA = aI + λJ with a > 0)")
    try:  # a circulant incidence (a developed difference set): O(nnz + k²) by Lemma 9a, not O(n²)
        circulant = circulant_pair_gram(S)
    except VerificationError as exc:
        raise VerificationError(f"{what}: {exc}") from None
    if circulant is not None:
        return circulant
    St = S.T.tocsr()
    step = max(1, min(n, 2**22 // max(n, 1)))
    for a in range(0, n, step):
        G = (St[a : a + step] @ S).toarray()  # integer, exact
        G[np.arange(G.shape[0]), np.arange(a, a + G.shape[0])] -= k - lam
        if not np.all(G == lam):
            i, j = np.argwhere(G != lam)[0]
            raise VerificationError(
                f"{what}: columns {a + int(i)} and {int(j)} meet in "
                f"{int(G[i, j]) + (k - lam if a + i == j else 0)} parts, expected "
                f"{k if a + i == j else lam} (AᵀA != (k - λ)I + λJ)"
            )
    return k, lam
