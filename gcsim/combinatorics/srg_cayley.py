"""Strongly regular Cayley graphs on abelian groups (docs/theory.md §20).

:func:`paley_graph` (P(q), q = 1 mod 4 a prime power, over gcsim's GF(q)),
:func:`abelian_cayley_graph` (any connection set in Z_{n_1} x ... x Z_{n_s}) and the
(36, 15, 6, 6) graph of a Menon difference set in Z_6 x Z_6; the Cayley-graph and
quadratic-form helpers the geometric families share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from .._validation import check_dense_size, check_int, check_int_array
from ..errors import InvalidArgumentError, VerificationError
from .fields import field_tables, is_prime_power, prime_power
from .srg_graph import StronglyRegularGraph, _make, srg_parameters_of

__all__ = ["paley_graph", "abelian_cayley_graph", "MENON_36_CONNECTION", "menon_graph_36"]


def _digits(N: int, p: int, D: int) -> np.ndarray:
    """Base-p digits (most significant first) of 0..N-1, shape (N, D)."""
    x = np.arange(N, dtype=np.int64)
    return np.stack([(x // p ** (D - 1 - d)) % p for d in range(D)], axis=1) if D else np.zeros((N, 0), np.int64)


def _cayley_adjacency(p: int, D: int, connection: Iterable[int]) -> np.ndarray:
    """Cayley graph of (Z_p^D, +) with connection set given by element indices.

    Element index = digits base p (big-endian).  ``connection`` must be
    symmetric (closed under negation) and must not contain 0.
    """
    N = p**D
    check_dense_size("q", N, N, f"the Cayley graph on GF({p})^{D}")
    ind = np.zeros(N, dtype=bool)
    conn = check_int_array("connection", connection, ndim=1, what="the connection set")
    if conn.size and (conn.min() < 0 or conn.max() >= N):
        raise InvalidArgumentError("connection", f"must hold element indices in [0, {N})")
    ind[conn] = True
    X = _digits(N, p, D)
    idx = np.zeros((N, N), dtype=np.int64)
    for d in range(D):
        idx = idx * p + (X[:, d][:, None] - X[:, d][None, :]) % p
    adj = ind[idx].astype(np.int64)
    neg = (-X) % p @ (p ** np.arange(D - 1, -1, -1))
    if ind[0] or not np.array_equal(ind, ind[neg]):
        raise VerificationError("connection set must be symmetric and avoid 0")
    return adj


def _vector_index(vecs: np.ndarray, q: int) -> np.ndarray:
    """Index in [0, q^n) of vectors over GF(q) given by integer representations (last axis)."""
    n = vecs.shape[-1]
    return (np.asarray(vecs, dtype=np.int64) * (q ** np.arange(n - 1, -1, -1))).sum(axis=-1)


def _form_values(q: int, X: np.ndarray, Y: np.ndarray, terms) -> np.ndarray:
    """``sum_t c_t X[:, a_t] Y[:, b_t]`` over GF(q) for all pairs of rows, shape (len X, len Y)."""
    add, mul = field_tables(q)
    acc = np.zeros((len(X), len(Y)), dtype=np.int64)
    for a, b, c in terms:
        left = mul[c, X[:, a]]
        acc = add[acc, mul[left[:, None], Y[:, b][None, :]]]
    return acc


def _quadratic_values(q: int, X: np.ndarray, terms) -> np.ndarray:
    """``Q(x) = sum_t c_t x_a x_b`` over GF(q) for every row x of X."""
    add, mul = field_tables(q)
    acc = np.zeros(len(X), dtype=np.int64)
    for a, b, c in terms:
        acc = add[acc, mul[mul[c, X[:, a]], X[:, b]]]
    return acc


def paley_graph(q: int) -> StronglyRegularGraph:
    """Paley graph P(q): vertices GF(q), ``x ~ y`` iff ``x - y`` is a nonzero square.

    For a prime power ``q = 1 mod 4``, ``-1`` is a square so the relation is
    symmetric; P(q) is a conference graph SRG(q, (q-1)/2, (q-5)/4, (q-1)/4)
    (Paley 1933; BvM §1.1.8).  Built over the field GF(q), so it is correct
    for prime powers too (unlike ``networkx.paley_graph``, which uses integers
    mod q and returns a directed graph).

    Parameters
    ----------
    q : int
        Prime power with ``q = 1 (mod 4)``.

    Examples
    --------
    >>> g = paley_graph(9)
    >>> g.params, g.verify()
    (SRGParams(v=9, k=4, lam=1, mu=2), True)
    """
    q = check_int("q", q, minimum=5)
    if not is_prime_power(q) or q % 4 != 1:
        raise InvalidArgumentError("q", f"must be a prime power with q = 1 (mod 4), got {q}")
    check_dense_size("q", q, q, f"the adjacency matrix of the Paley graph P({q})")
    p, a = prime_power(q)
    _, mul = field_tables(q)
    squares = np.unique(mul.diagonal()[1:])
    adj = _cayley_adjacency(p, a, squares)
    return _make(adj, f"Paley graph P({q})", (q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4), q=q)


def abelian_cayley_graph(
    moduli: Sequence[int], connection: Iterable[Sequence[int]], *, name: str | None = None
) -> StronglyRegularGraph:
    """Cayley graph of Z_{m_1} x ... x Z_{m_t} with a symmetric connection set, if strongly regular.

    Vertices are the tuples ``x`` (numbered in mixed radix, last coordinate
    fastest); ``x ~ y`` iff ``x - y`` is in ``connection``.  The connection set
    must be closed under negation and avoid 0 (then the graph is undirected);
    it is strongly regular iff the set is a (regular) partial difference set
    (Ma 1994, *Des. Codes Cryptogr.* 4).

    >>> abelian_cayley_graph([5], [[1], [4]]).params      # the pentagon
    SRGParams(v=5, k=2, lam=0, mu=1)
    """
    if isinstance(moduli, (str, bytes)) or not hasattr(moduli, "__len__"):
        raise InvalidArgumentError("moduli", "must be a sequence of integers >= 2")
    mods = [check_int("moduli", m, minimum=2) for m in check_int_array("moduli", moduli, ndim=1).tolist()]
    if not mods:
        raise InvalidArgumentError("moduli", "must be non-empty")
    sizes = np.array(mods, dtype=np.int64)
    v = math.prod(mods)
    check_dense_size("moduli", v, v, "the Cayley graph's adjacency matrix")
    C = check_int_array("connection", connection, what="the connection set")
    if C.size == 0 or (C.ndim == 1 and len(mods) == 1):
        C = C.reshape(-1, len(mods))
    if C.ndim != 2 or C.shape[1] != len(mods):
        raise InvalidArgumentError(
            "connection", f"must be a list of {len(mods)}-tuples of integers, got shape {C.shape}"
        )
    C %= sizes
    radix = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]])
    ind = np.zeros(v, dtype=bool)
    ind[C @ radix] = True
    if (
        ind[0]
        or not np.array_equal(np.sort((-C % sizes) @ radix), np.sort(np.unique(C @ radix)))
        or len(np.unique(C @ radix)) != len(C)
    ):
        raise InvalidArgumentError("connection", "must be distinct elements, closed under negation, without 0")
    X = np.stack(np.unravel_index(np.arange(v), tuple(mods)), axis=1)
    diff = ((X[:, None, :] - X[None, :, :]) % sizes) @ radix
    adj = ind[diff].astype(np.int64)
    params = srg_parameters_of(adj)
    if params is None:
        raise InvalidArgumentError(
            "connection", "is not a partial difference set: the Cayley graph is not strongly regular"
        )
    return StronglyRegularGraph(
        adj,
        params,
        name or f"Cayley graph on Z_{'xZ_'.join(map(str, mods))}",
        metadata={"moduli": mods, "connection": C.tolist()},
    )


#: A (36, 15, 6) Menon difference set D in Z_6 x Z_6 with D = -D and 0 in D, minus 0
#: (found by exhaustive search over symmetric sets; property checked in tests).
MENON_36_CONNECTION = (
    (0, 3),
    (3, 0),
    (0, 1),
    (0, 5),
    (1, 0),
    (5, 0),
    (1, 1),
    (5, 5),
    (1, 3),
    (5, 3),
    (2, 2),
    (4, 4),
    (3, 1),
    (3, 5),
)


def menon_graph_36() -> StronglyRegularGraph:
    """SRG(36, 14, 4, 6) as a Cayley graph on Z_6 x Z_6.

    ``D = S u {0}`` (S = :data:`MENON_36_CONNECTION`) is a symmetric (36, 15, 6)
    Menon (Hadamard) difference set, so ``(Adj + I)^2 = 9 I + 6 J``, i.e.
    ``Adj^2 = 14 I + 4 Adj + 6 (J - I - Adj)`` (docs/theory/20_srg.md §20.7).

    >>> menon_graph_36().params
    SRGParams(v=36, k=14, lam=4, mu=6)
    """
    g = abelian_cayley_graph([6, 6], MENON_36_CONNECTION)
    if g.params != (36, 14, 4, 6):  # pragma: no cover
        raise VerificationError(f"Menon graph: got {g.params}")
    return StronglyRegularGraph(
        g.adjacency,
        g.params,
        "Cayley graph of a symmetric (36,15,6) Menon difference set in Z_6 x Z_6",
        metadata=g.metadata,
    )
