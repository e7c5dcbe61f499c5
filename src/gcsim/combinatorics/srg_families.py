"""Strongly regular graphs: the graph class and its families.

A graph is *strongly regular* with parameters ``(v, k, lam, mu)`` if its
adjacency matrix satisfies ``Adj^2 = k I + lam Adj + mu (J - I - Adj)``
(Brouwer & Van Maldeghem, *Strongly Regular Graphs*, CUP 2022 -- "BvM" below).
As an assignment (docs/theory.md §20) there are ``N = n = v`` parts and workers and
worker ``j`` holds its own part and its neighbours' (``A = Adj + I``, default)
or only its neighbours' (``A = Adj``).

Every constructor here builds the graph explicitly and returns a
:class:`StronglyRegularGraph` whose ``verify()`` re-checks the identity in exact
integer arithmetic.  Why each family is strongly regular is proved in
``docs/theory/20_srg.md``.

Families (all over finite fields through :func:`gcsim.combinatorics.fields.finite_field`):

* :func:`paley_graph` -- Paley graph P(q), q = 1 mod 4 a prime power (undirected).
* :func:`triangular_graph` T(n) = J(n, 2), :func:`kneser_graph_2` (its complement).
* :func:`lattice_graph` L2(n) (rook's graph), :func:`latin_square_graph` LS_m(n).
* :func:`complete_multipartite_graph`, :func:`disjoint_cliques` (imprimitive SRGs).
* :func:`petersen_graph`, :func:`clebsch_graph`, :func:`shrikhande_graph`,
  :func:`schlafli_graph`, :func:`hoffman_singleton_graph`, :func:`gewirtz_graph`.
* :func:`block_graph` of a Steiner system S(2, k, v) given by its blocks.
* :func:`polar_graph` (collinearity graphs of the finite classical polar spaces
  Sp, O, O+, O-, U), :func:`generalized_quadrangle_graph`,
  :func:`symplectic_graph` (Sp(2m, 2) non-orthogonality graph).
* :func:`two_intersection_graph` (Cayley graph of a projective two-intersection
  set), :func:`affine_polar_graph` VO^eps(2m, q), :func:`hyperoval_gq_graph`
  T2*(O) = GQ(q-1, q+1).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from itertools import combinations
from math import isqrt
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_bool, check_dense_size, check_int
from ..errors import InvalidArgumentError, NotConstructibleError, VerificationError
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
)
from .fields import field_tables, is_prime_power, prime_power_decomposition
from .geometries import projective_points
from .srg_feasibility import complement_parameters, srg_eigenvalues

__all__ = [
    "StronglyRegularGraph",
    "SRGParams",
    "srg_parameters_of",
    "paley_graph",
    "triangular_graph",
    "kneser_graph_2",
    "lattice_graph",
    "latin_square_graph",
    "complete_multipartite_graph",
    "disjoint_cliques",
    "petersen_graph",
    "clebsch_graph",
    "shrikhande_graph",
    "schlafli_graph",
    "hoffman_singleton_graph",
    "gewirtz_graph",
    "block_graph",
    "polar_graph",
    "polar_graph_parameters",
    "generalized_quadrangle_graph",
    "symplectic_graph",
    "two_intersection_graph",
    "affine_polar_graph",
    "hyperoval_gq_graph",
    "abelian_cayley_graph",
    "menon_graph_36",
]


# ----------------------------------------------------------------------------------------------
# the graph object
# ----------------------------------------------------------------------------------------------

def _exact_square(adj: np.ndarray) -> np.ndarray:
    """Adj @ Adj exactly.

    Entries of a 0/1 product are integers <= v, and every partial sum of the
    BLAS product is such an integer, so floating point is exact while v fits
    the mantissa: float32 (v < 2^24, every graph within gcsim's size limits;
    twice as fast as float64) or float64 (v < 2^53); both much faster than
    NumPy's non-BLAS int64 matmul.
    """
    v = adj.shape[0]
    if v < 2 ** 24:
        a = adj.astype(np.float32)
        return (a @ a).astype(np.int64)
    if v < 2 ** 52:  # pragma: no cover - beyond gcsim.limits.MAX_DENSE_ENTRIES
        a = adj.astype(np.float64)
        return np.rint(a @ a).astype(np.int64)
    return adj @ adj  # pragma: no cover - absurdly large


def srg_parameters_of(adjacency) -> tuple[int, int, int, int] | None:
    """``(v, k, lam, mu)`` if ``adjacency`` is a (non-trivial) strongly regular graph, else None.

    Brute force: counts the common neighbours of every pair (independent of
    any construction).

    >>> import numpy as np
    >>> c5 = np.roll(np.eye(5, dtype=int), 1, 0) + np.roll(np.eye(5, dtype=int), -1, 0)
    >>> srg_parameters_of(c5)
    (5, 2, 0, 1)
    """
    a = np.asarray(adjacency)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 3:
        return None
    a = a.astype(np.int64)
    if not (np.all((a == 0) | (a == 1)) and np.array_equal(a, a.T) and not a.diagonal().any()):
        return None
    v = a.shape[0]
    deg = a.sum(axis=1)
    k = int(deg[0])
    if not np.all(deg == k) or k < 1 or k > v - 2:
        return None
    sq = _exact_square(a)
    off = ~np.eye(v, dtype=bool)
    adj_vals = np.unique(sq[(a == 1) & off])
    non_vals = np.unique(sq[(a == 0) & off])
    if len(adj_vals) != 1 or len(non_vals) != 1:
        return None
    return (v, k, int(adj_vals[0]), int(non_vals[0]))


class SRGParams(NamedTuple):
    """Parameters of a strongly regular graph: ``v`` vertices, degree ``k``, ``lam`` and ``mu``."""

    v: int
    k: int
    lam: int
    mu: int


class StronglyRegularGraph(CombinatorialObject):
    """A strongly regular graph SRG(v, k, lam, mu) seen as a gradient-coding assignment.

    Definition: ``Adj^2 = k I + lam Adj + mu (J - I - Adj)``, ``Adj`` symmetric
    0/1 with zero diagonal (BvM §1.1).  Assignment (docs/theory.md §20): ``N = n = v``;
    ``A = Adj + I`` (``closed=True``: worker j holds its own part and its
    neighbours') or ``A = Adj`` (``closed=False``).

    Parameters
    ----------
    adjacency : array_like
        ``v x v`` 0/1 symmetric matrix with zero diagonal.
    params : tuple of 4 ints
        The claimed ``(v, k, lam, mu)`` (checked by :meth:`verify`).
    construction : str
        Human-readable description of how the graph was built.
    closed : bool
        Assignment ``Adj + I`` (True) or ``Adj`` (False).

    Examples
    --------
    >>> g = petersen_graph()
    >>> g.params, g.kind, g.assignment.sum(axis=0)[:3].tolist()
    (SRGParams(v=10, k=3, lam=0, mu=1), 'srg', [4, 4, 4])
    >>> g.verify()
    True
    >>> g.eigenvalues()
    ((3, 1), (1, 5), (-2, 4))
    >>> g.complement().params
    SRGParams(v=10, k=6, lam=3, mu=4)
    """

    kind = "srg"
    Params = SRGParams
    _adjacency: np.ndarray
    closed: bool

    def __init__(self, adjacency, params: Sequence[int], construction: str, *, closed: bool = True,
                 metadata: Mapping[str, Any] | None = None):
        adj = np.asarray(adjacency)
        if adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
            raise InvalidArgumentError("adjacency", f"must be a square matrix, got shape {adj.shape}")
        if adj.size and not np.all((adj == 0) | (adj == 1)):
            raise InvalidArgumentError("adjacency", "must contain only 0 and 1 entries")
        closed = check_bool("closed", closed)
        if len(tuple(params)) != 4:
            raise InvalidArgumentError("params", f"must be (v, k, lam, mu), got {params!r}")
        adj = adj.astype(np.int64)
        adj.setflags(write=False)
        self._set("_adjacency", adj)
        self._set("closed", bool(closed))
        assignment = adj + np.eye(adj.shape[0], dtype=np.int64) if self.closed else adj
        super().__init__(assignment, tuple(int(p) for p in params), construction, metadata)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The assignment and the adjacency matrix (int8, 0/1)."""
        return {"assignment": self.assignment.astype(np.int8), "adjacency": self._adjacency.astype(np.int8)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> StronglyRegularGraph:
        """Rebuild the graph from its stored adjacency; the assignment must be ``Adj + I`` or ``Adj``.

        Examples
        --------
        >>> g = petersen_graph()
        >>> StronglyRegularGraph.from_arrays(g.to_arrays(), g.bundle_metadata()).params == g.params
        True
        """
        params = stored_params(metadata, 4, "srg")
        n = params[0]
        adj = stored_binary(arrays, "adjacency", "srg", (n, n))
        A = stored_binary(arrays, "assignment", "srg", (n, n))
        closed = bool(np.array_equal(A, adj + np.eye(n, dtype=np.int64)))
        obj = cls(adj, params, stored_construction(metadata), closed=closed,
                  metadata=stored_object_metadata(metadata))
        return same_assignment(obj, A, "srg")

    @property
    def adjacency(self) -> np.ndarray:
        """The ``v x v`` 0/1 adjacency matrix (read-only int64)."""
        return self._adjacency

    @property
    def v(self) -> int:
        """Number of vertices."""
        return self._params[0]

    def to_networkx(self, *, incidence: bool = False) -> Any:
        """The graph itself as a :class:`networkx.Graph` on vertices ``0..v-1``.

        ``incidence=True`` gives the bipartite assignment graph instead (parts x workers,
        see :meth:`CombinatorialObject.to_networkx`).  ``G.graph`` carries ``kind``,
        ``params`` and ``construction``.

        Examples
        --------
        >>> from gcsim.combinatorics.srg import srg
        >>> G = srg(10, 3, 0, 1).to_networkx()          # the Petersen graph
        >>> import networkx as nx
        >>> nx.is_isomorphic(G, nx.petersen_graph())
        True
        """
        if check_bool("incidence", incidence):
            return super().to_networkx()
        import networkx as nx

        G = nx.from_numpy_array(self._adjacency)
        G.graph.update(kind=self.kind, params=self.params, construction=self.construction)
        return G

    def verify(self) -> bool:
        """Check the SRG identity exactly; raise :class:`VerificationError` otherwise.

        Checks: 0/1 entries, symmetry, zero diagonal, row sums ``k``,
        ``Adj^2 = k I + lam Adj + mu (J - I - Adj)`` in integer arithmetic, and that
        the assignment is ``Adj + I`` or ``Adj`` as declared.
        """
        a = self._adjacency
        v, k, lam, mu = self._params
        require(a.shape == (v, v), f"adjacency has shape {a.shape}, expected ({v}, {v})")
        require(bool(np.all((a == 0) | (a == 1))), "adjacency must be 0/1")
        require(np.array_equal(a, a.T), "adjacency must be symmetric")
        require(not a.diagonal().any(), "adjacency must have zero diagonal")
        require(bool(np.all(a.sum(axis=1) == k)), f"every row sum must be k = {k}")
        eye = np.eye(v, dtype=np.int64)
        rhs = k * eye + lam * a + mu * (np.ones((v, v), dtype=np.int64) - eye - a)
        require(np.array_equal(_exact_square(a), rhs), f"Adj^2 != kI + lam Adj + mu(J - I - Adj) for {self._params}")
        expected = a + eye if self.closed else a
        require(np.array_equal(self.assignment, expected), "assignment must be Adj + I (closed) or Adj")
        self._check_binary()
        return True

    def eigenvalues(self) -> tuple:
        """Exact spectrum ``((k, 1), (r, f), (s, g))`` with ``r > s``.

        Irrational eigenvalues (conference graphs on a non-square number of
        vertices) are returned as sympy expressions.

        >>> paley_graph(13).eigenvalues()[1]
        (-1/2 + sqrt(13)/2, 6)
        """
        return srg_eigenvalues(*self._params)

    def complement(self) -> StronglyRegularGraph:
        """The complement graph, an SRG with :func:`complement_parameters`.

        >>> clebsch_graph().complement().params
        SRGParams(v=16, k=10, lam=6, mu=6)
        """
        v = self._params[0]
        comp = 1 - self._adjacency - np.eye(v, dtype=np.int64)
        return StronglyRegularGraph(comp, complement_parameters(*self._params),
                                    f"complement of {self.construction}", closed=self.closed,
                                    metadata=dict(self.metadata))

    def with_closed(self, closed: bool) -> StronglyRegularGraph:
        """Same graph with the other assignment convention."""
        return StronglyRegularGraph(self._adjacency, self._params, self.construction, closed=closed,
                                    metadata=dict(self.metadata))

    def __repr__(self) -> str:
        return (f"StronglyRegularGraph(params={self.params!r}, construction={self.construction!r}, "
                f"closed={self.closed})")


def _make(adj: np.ndarray, name: str, expected: tuple | None = None, **meta) -> StronglyRegularGraph:
    """Wrap an adjacency matrix, computing its parameters by brute force (and checking them)."""
    params = srg_parameters_of(adj)
    if params is None:
        raise VerificationError(f"{name}: construction did not produce a strongly regular graph")
    if expected is not None and tuple(expected) != params:
        raise VerificationError(f"{name}: expected parameters {tuple(expected)}, got {params}")
    return StronglyRegularGraph(adj, params, name, metadata=meta)


# ----------------------------------------------------------------------------------------------
# Cayley graphs on elementary abelian groups F_p^D (the additive group of GF(q)^n)
# ----------------------------------------------------------------------------------------------

def _digits(N: int, p: int, D: int) -> np.ndarray:
    """Base-p digits (most significant first) of 0..N-1, shape (N, D)."""
    x = np.arange(N, dtype=np.int64)
    return np.stack([(x // p ** (D - 1 - d)) % p for d in range(D)], axis=1) if D else np.zeros((N, 0), np.int64)


def _cayley_adjacency(p: int, D: int, connection: Iterable[int]) -> np.ndarray:
    """Cayley graph of (Z_p^D, +) with connection set given by element indices.

    Element index = digits base p (big-endian).  ``connection`` must be
    symmetric (closed under negation) and must not contain 0.
    """
    N = p ** D
    check_dense_size("q", N, N, f"the Cayley graph on GF({p})^{D}")
    ind = np.zeros(N, dtype=bool)
    ind[np.asarray(list(connection), dtype=np.int64)] = True
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


# ----------------------------------------------------------------------------------------------
# infinite families
# ----------------------------------------------------------------------------------------------

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
    p, a = prime_power_decomposition(q)
    _, mul = field_tables(q)
    squares = np.unique(mul.diagonal()[1:])
    adj = _cayley_adjacency(p, a, squares)
    return _make(adj, f"Paley graph P({q})", (q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4), q=q)


def triangular_graph(n: int) -> StronglyRegularGraph:
    """Triangular graph T(n) = J(n, 2): the 2-subsets of [n], adjacent iff they meet.

    SRG(n(n-1)/2, 2(n-2), n-2, 4) for n >= 4 (BvM §1.1.7).  Vertices are the
    pairs ``(i, j), i < j`` in lexicographic order.  (The Johnson graphs J(n, d)
    with 3 <= d <= n - 3 have diameter >= 3, so T(n) = J(n, 2) ~ J(n, n-2) and its
    complement, the Kneser graph K(n, 2), are the strongly regular Johnson/Kneser graphs.)

    >>> triangular_graph(5).params
    SRGParams(v=10, k=6, lam=3, mu=4)
    """
    n = check_int("n", n, minimum=4)
    check_dense_size("n", n * (n - 1) // 2, n * (n - 1) // 2, f"the adjacency matrix of T({n})")
    pairs = np.array(list(combinations(range(n), 2)), dtype=np.int64)
    inc = np.zeros((len(pairs), n), dtype=np.int64)
    inc[np.arange(len(pairs))[:, None], pairs] = 1
    meet = inc @ inc.T
    adj = (meet == 1).astype(np.int64)
    return _make(adj, f"triangular graph T({n})", (n * (n - 1) // 2, 2 * (n - 2), n - 2, 4), n=n)


def kneser_graph_2(n: int) -> StronglyRegularGraph:
    """Kneser graph K(n, 2): 2-subsets of [n], adjacent iff disjoint; the complement of T(n).

    SRG(n(n-1)/2, (n-2)(n-3)/2, (n-4)(n-5)/2, (n-3)(n-4)/2) for n >= 5.

    >>> kneser_graph_2(5).params
    SRGParams(v=10, k=3, lam=0, mu=1)
    """
    n = check_int("n", n, minimum=5)
    g = triangular_graph(n).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"Kneser graph K({n},2)", metadata={"n": n})


def lattice_graph(n: int) -> StronglyRegularGraph:
    """Lattice (rook's) graph L2(n) = K_n x K_n: cells of an n x n grid, adjacent iff same row or column.

    SRG(n^2, 2(n-1), n-2, 2) for n >= 2 (BvM §1.1.6).  Vertex ``(i, j)`` is ``i*n + j``.

    >>> lattice_graph(4).params
    SRGParams(v=16, k=6, lam=2, mu=2)
    """
    n = check_int("n", n, minimum=2)
    return latin_square_graph(2, n)


def latin_square_graph(m: int, n: int) -> StronglyRegularGraph:
    """Latin square graph LS_m(n) from m-2 mutually orthogonal Latin squares of order n.

    Vertices are the n^2 cells ``(i, j)``; two cells are adjacent iff they share
    a row, a column, or a symbol in one of the m-2 squares.  It is an
    SRG(n^2, m(n-1), (m-1)(m-2) + n - 2, m(m-1)) for 2 <= m <= n (BvM §1.1.6;
    Bose 1963).  gcsim uses: m = 2 (the lattice graph), m = 3 with the cyclic
    square ``L[i, j] = i + j mod n`` (any n), and for a prime power n the
    ``m`` parallel classes of lines of AG(2, n) with slopes ``inf, 0, 1, a, ...``
    (i.e. the Desarguesian complete set of MOLS).

    Parameters
    ----------
    m : int
        Number of "directions" (2 <= m <= n).
    n : int
        Order of the squares.

    Raises
    ------
    NotConstructibleError
        If ``m >= 4`` and ``n`` is not a prime power.

    Examples
    --------
    >>> latin_square_graph(3, 6).params
    SRGParams(v=36, k=15, lam=6, mu=6)
    >>> latin_square_graph(4, 5).params
    SRGParams(v=25, k=16, lam=9, mu=12)
    """
    n = check_int("n", n, minimum=2)
    m = check_int("m", m, minimum=2, maximum=n)
    check_dense_size("n", n * n, n * n, f"the adjacency matrix of LS_{m}({n})")
    expected = (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1))
    if m <= 3:
        i, j = np.divmod(np.arange(n * n), n)
        labels = [i, j, (i + j) % n][:m]
        adj = np.zeros((n * n, n * n), dtype=np.int64)
        for lab in labels:
            adj |= (lab[:, None] == lab[None, :]).astype(np.int64)
        adj[np.diag_indices(n * n)] = 0
        name = "lattice graph L2(%d)" % n if m == 2 else f"Latin square graph LS_3({n}) (cyclic square)"
        return _make(adj, name, expected, m=m, n=n)
    if not is_prime_power(n):
        raise NotConstructibleError(f"LS_{m}({n}) needs {m - 2} MOLS of order {n}; gcsim only has them "
                                    f"for prime powers n (and m <= 3 for any n)",
                                    [(n * n, mm * (n - 1), (mm - 1) * (mm - 2) + n - 2, mm * (mm - 1))
                                     for mm in (2, 3)])
    # m points of PG(1, n): (0,1) [vertical], (1,0), (1,1), (1,2), ...
    pts = np.array([[0, 1]] + [[1, t] for t in range(m - 1)], dtype=np.int64)
    g = two_intersection_graph(n, pts)
    return StronglyRegularGraph(g.adjacency, expected, f"Latin square graph LS_{m}({n}) from AG(2,{n})",
                                metadata={"m": m, "n": n})


def complete_multipartite_graph(m: int, n: int) -> StronglyRegularGraph:
    """Complete multipartite graph K_{m x n} (m parts of size n): SRG(mn, (m-1)n, (m-2)n, (m-1)n).

    Imprimitive (its complement m K_n is disconnected).  m, n >= 2.

    >>> complete_multipartite_graph(3, 2).params
    SRGParams(v=6, k=4, lam=2, mu=4)
    """
    m = check_int("m", m, minimum=2)
    n = check_int("n", n, minimum=2)
    check_dense_size("m", m * n, m * n, f"the adjacency matrix of K_{{{m}x{n}}}")
    part = np.arange(m * n) // n
    adj = (part[:, None] != part[None, :]).astype(np.int64)
    return _make(adj, f"complete multipartite graph K_{{{m}x{n}}}", (m * n, (m - 1) * n, (m - 2) * n, (m - 1) * n),
                 m=m, n=n)


def disjoint_cliques(m: int, n: int) -> StronglyRegularGraph:
    """m disjoint copies of K_n: SRG(mn, n-1, n-2, 0) (imprimitive). m, n >= 2.

    >>> disjoint_cliques(2, 3).params
    SRGParams(v=6, k=2, lam=1, mu=0)
    """
    m = check_int("m", m, minimum=2)
    n = check_int("n", n, minimum=2)
    g = complete_multipartite_graph(m, n).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"{m} disjoint copies of K_{n}", metadata={"m": m, "n": n})


# ----------------------------------------------------------------------------------------------
# sporadic graphs
# ----------------------------------------------------------------------------------------------

def petersen_graph() -> StronglyRegularGraph:
    """Petersen graph = Kneser graph K(5, 2): SRG(10, 3, 0, 1) (unique; BvM §10.1).

    >>> petersen_graph().verify()
    True
    """
    g = kneser_graph_2(5)
    return StronglyRegularGraph(g.adjacency, g.params, "Petersen graph (Kneser K(5,2))")


def clebsch_graph() -> StronglyRegularGraph:
    """Clebsch graph = folded 5-cube: SRG(16, 5, 0, 2) (unique; BvM §10.7).

    Cayley graph of GF(2)^4 with connection set ``{e1, e2, e3, e4, 1111}``.

    >>> clebsch_graph().params
    SRGParams(v=16, k=5, lam=0, mu=2)
    """
    adj = _cayley_adjacency(2, 4, [8, 4, 2, 1, 15])
    return _make(adj, "Clebsch graph (folded 5-cube)", (16, 5, 0, 2))


def shrikhande_graph() -> StronglyRegularGraph:
    """Shrikhande graph: Cayley graph of Z_4 x Z_4 with connection set ``{+-(1,0), +-(0,1), +-(1,1)}``.

    SRG(16, 6, 2, 2), same parameters as L2(4) but not isomorphic to it
    (Shrikhande 1959; BvM §10.6).  Vertex ``(a, b)`` is ``4a + b``.

    >>> shrikhande_graph().params
    SRGParams(v=16, k=6, lam=2, mu=2)
    """
    a, b = np.divmod(np.arange(16), 4)
    da = (a[:, None] - a[None, :]) % 4
    db = (b[:, None] - b[None, :]) % 4
    conn = {(1, 0), (3, 0), (0, 1), (0, 3), (1, 1), (3, 3)}
    adj = np.zeros((16, 16), dtype=np.int64)
    for x, y in conn:
        adj |= ((da == x) & (db == y)).astype(np.int64)
    return _make(adj, "Shrikhande graph", (16, 6, 2, 2))


def schlafli_graph() -> StronglyRegularGraph:
    """Schläfli graph SRG(27, 16, 10, 8) (unique; BvM §10.10).

    Built as the complement of the collinearity graph of GQ(2, 4) = the
    elliptic quadric Q^-(5, 2) (:func:`polar_graph` ``("O-", 6, 2)``).

    >>> schlafli_graph().params
    SRGParams(v=27, k=16, lam=10, mu=8)
    """
    g = polar_graph("O-", 6, 2).complement()
    return StronglyRegularGraph(g.adjacency, g.params, "Schläfli graph (complement of GQ(2,4))")


def hoffman_singleton_graph() -> StronglyRegularGraph:
    """Hoffman-Singleton graph SRG(50, 7, 0, 1) (Hoffman & Singleton 1960; unique).

    Robertson's construction: pentagons ``P_h`` and pentagrams ``Q_i``
    (h, i in Z_5) on vertices ``P_{h,j}``, ``Q_{i,j}`` (j in Z_5) with
    ``P_{h,j} ~ P_{h,j+-1}``, ``Q_{i,j} ~ Q_{i,j+-2}`` and
    ``P_{h,j} ~ Q_{i, h i + j}``.  Vertex ``P_{h,j}`` is ``5h + j``, ``Q_{i,j}`` is ``25 + 5i + j``.

    >>> hoffman_singleton_graph().params
    SRGParams(v=50, k=7, lam=0, mu=1)
    """
    adj = np.zeros((50, 50), dtype=np.int64)
    h, j = np.divmod(np.arange(25), 5)
    # pentagons and pentagrams
    for step, off in ((1, 0), (2, 25)):
        same = h[:, None] == h[None, :]
        dist = (j[:, None] - j[None, :]) % 5
        adj[off:off + 25, off:off + 25] = (same & ((dist == step) | (dist == 5 - step))).astype(np.int64)
    i = h  # Q_{i, j'} with i = index // 5
    jq = j
    cross = (jq[None, :] == (h[:, None] * i[None, :] + j[:, None]) % 5).astype(np.int64)
    adj[:25, 25:] = cross
    adj[25:, :25] = cross.T
    return _make(adj, "Hoffman-Singleton graph (Robertson)", (50, 7, 0, 1))


@lru_cache(maxsize=1)
def _golay_octads() -> np.ndarray:
    """The 759 octads of the extended binary Golay code, as a (759, 24) 0/1 array.

    The [23, 12, 7] binary Golay code is the cyclic code generated by
    ``g(x) = 1 + x^2 + x^4 + x^5 + x^6 + x^10 + x^11`` (a factor of x^23 - 1 over
    GF(2); MacWilliams & Sloane ch. 16); appending a parity bit gives the
    extended [24, 12, 8] code.
    """
    g = np.zeros(23, dtype=np.int64)
    g[[0, 2, 4, 5, 6, 10, 11]] = 1
    G = np.stack([np.roll(g, i) for i in range(12)])                  # cyclic shifts: generator rows
    msgs = _digits(2 ** 12, 2, 12)
    words = (msgs @ G) % 2
    words = np.concatenate([words, words.sum(axis=1, keepdims=True) % 2], axis=1)
    wt = words.sum(axis=1)
    counts = {int(w): int(c) for w, c in zip(*np.unique(wt, return_counts=True))}
    require(counts == {0: 1, 8: 759, 12: 2576, 16: 759, 24: 1},
            f"Golay code weight distribution wrong: {counts}")
    return words[wt == 8]


def gewirtz_graph() -> StronglyRegularGraph:
    """Gewirtz graph SRG(56, 10, 0, 2) (Gewirtz 1969; unique; BvM §10.20).

    From the Golay code: the octads through two fixed points, restricted to the
    other 22 points, are the 77 blocks of S(3, 6, 22); the 56 blocks avoiding a
    third point, adjacent iff disjoint, form the Gewirtz graph.

    >>> gewirtz_graph().params
    SRGParams(v=56, k=10, lam=0, mu=2)
    """
    oct_ = _golay_octads()
    sel = oct_[(oct_[:, 0] == 1) & (oct_[:, 1] == 1) & (oct_[:, 2] == 0)][:, 3:]
    meet = sel @ sel.T
    adj = (meet == 0).astype(np.int64)
    return _make(adj, "Gewirtz graph (from S(3,6,22))", (56, 10, 0, 2))


def abelian_cayley_graph(moduli: Sequence[int], connection: Iterable[Sequence[int]], *,
                         name: str | None = None) -> StronglyRegularGraph:
    """Cayley graph of Z_{m_1} x ... x Z_{m_t} with a symmetric connection set, if strongly regular.

    Vertices are the tuples ``x`` (numbered in mixed radix, last coordinate
    fastest); ``x ~ y`` iff ``x - y`` is in ``connection``.  The connection set
    must be closed under negation and avoid 0 (then the graph is undirected);
    it is strongly regular iff the set is a (regular) partial difference set
    (Ma 1994, *Des. Codes Cryptogr.* 4).

    >>> abelian_cayley_graph([5], [[1], [4]]).params      # the pentagon
    SRGParams(v=5, k=2, lam=0, mu=1)
    """
    try:
        mods = [check_int("moduli", m, minimum=2) for m in moduli]
    except TypeError:
        raise InvalidArgumentError("moduli", "must be a sequence of integers >= 2") from None
    if not mods:
        raise InvalidArgumentError("moduli", "must be non-empty")
    sizes = np.array(mods, dtype=np.int64)
    try:
        C = np.array([list(c) for c in connection], dtype=np.int64).reshape(-1, len(mods))
    except (TypeError, ValueError):
        raise InvalidArgumentError("connection", f"must be a list of {len(mods)}-tuples of integers") from None
    C %= sizes
    v = int(np.prod(sizes))
    check_dense_size("moduli", v, v, "the Cayley graph's adjacency matrix")
    radix = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]])
    ind = np.zeros(v, dtype=bool)
    ind[C @ radix] = True
    if ind[0] or not np.array_equal(np.sort((-C % sizes) @ radix), np.sort(np.unique(C @ radix))) \
            or len(np.unique(C @ radix)) != len(C):
        raise InvalidArgumentError("connection", "must be distinct elements, closed under negation, without 0")
    X = np.stack(np.unravel_index(np.arange(v), tuple(mods)), axis=1)
    diff = ((X[:, None, :] - X[None, :, :]) % sizes) @ radix
    adj = ind[diff].astype(np.int64)
    params = srg_parameters_of(adj)
    if params is None:
        raise InvalidArgumentError("connection", "is not a partial difference set: the Cayley graph is not "
                                                 "strongly regular")
    return StronglyRegularGraph(adj, params, name or f"Cayley graph on Z_{'xZ_'.join(map(str, mods))}",
                                metadata={"moduli": mods, "connection": C.tolist()})


#: A (36, 15, 6) Menon difference set D in Z_6 x Z_6 with D = -D and 0 in D, minus 0
#: (found by exhaustive search over symmetric sets; property checked in tests).
MENON_36_CONNECTION = ((0, 3), (3, 0), (0, 1), (0, 5), (1, 0), (5, 0), (1, 1), (5, 5), (1, 3), (5, 3),
                       (2, 2), (4, 4), (3, 1), (3, 5))


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
    return StronglyRegularGraph(g.adjacency, g.params, "Cayley graph of a symmetric (36,15,6) Menon difference "
                                "set in Z_6 x Z_6", metadata=g.metadata)


# ----------------------------------------------------------------------------------------------
# block graphs of Steiner systems
# ----------------------------------------------------------------------------------------------

def block_graph(blocks: Sequence[Iterable[int]], *, name: str | None = None) -> StronglyRegularGraph:
    """Block graph of a Steiner system S(2, K, V): blocks adjacent iff they meet.

    For a Steiner 2-design with ``b`` blocks of size ``K`` on ``V`` points
    (``r = (V-1)/(K-1)`` blocks per point) the block graph is an
    SRG(b, K(r-1), r - 2 + (K-1)^2, K^2) unless it is complete (projective
    planes, b = V) (BvM §1.1.9; Goethals & Seidel 1970).

    Parameters
    ----------
    blocks : sequence of sequences of ints
        The blocks; points are arbitrary hashable integers.  Checked: all
        blocks have the same size ``K >= 2`` and every pair of points lies in
        exactly one block.
    name : str, optional
        Description used as ``construction``.

    Examples
    --------
    >>> from itertools import combinations
    >>> block_graph(list(combinations(range(6), 2))).params   # S(2,2,6): T(6)
    SRGParams(v=15, k=8, lam=4, mu=4)
    """
    try:
        blist = [tuple(int(x) for x in b) for b in blocks]
    except (TypeError, ValueError):
        raise InvalidArgumentError("blocks", "must be a sequence of sequences of integers") from None
    if len(blist) < 2:
        raise InvalidArgumentError("blocks", "need at least 2 blocks")
    sizes = {len(b) for b in blist}
    if len(sizes) != 1 or min(sizes) < 2 or any(len(set(b)) != len(b) for b in blist):
        raise InvalidArgumentError("blocks", "all blocks must have the same size K >= 2 and no repeated points")
    K = sizes.pop()
    check_dense_size("blocks", len(blist), len(blist), "the block graph's adjacency matrix")
    points = sorted({x for b in blist for x in b})
    pos = {x: i for i, x in enumerate(points)}
    V, b = len(points), len(blist)
    inc = np.zeros((b, V), dtype=np.int64)
    rows = np.repeat(np.arange(b), K)
    cols = np.array([pos[x] for blk in blist for x in blk], dtype=np.int64)
    inc[rows, cols] = 1
    pair = inc.T @ inc
    off = ~np.eye(V, dtype=bool)
    if not np.all(pair[off] == 1):
        raise InvalidArgumentError("blocks", "not a Steiner system S(2, K, V): some pair of points is not in "
                                             "exactly one block")
    meet = inc @ inc.T
    adj = ((meet > 0) & ~np.eye(b, dtype=bool)).astype(np.int64)
    if adj.sum(axis=1).min() == b - 1:
        raise InvalidArgumentError("blocks", "the block graph is complete (a projective plane or a single "
                                             "block) and complete graphs are not strongly regular here")
    r = (V - 1) // (K - 1)
    expected = (b, K * (r - 1), r - 2 + (K - 1) ** 2, K * K)
    return _make(adj, name or f"block graph of S(2,{K},{V})", expected, V=V, K=K)


# ----------------------------------------------------------------------------------------------
# classical polar spaces
# ----------------------------------------------------------------------------------------------

def _irreducible_quadratic_c(q: int) -> int:
    """Smallest c in GF(q) (integer repr) with t^2 + t + c irreducible over GF(q)."""
    add, mul = field_tables(q)
    t = np.arange(q)
    tt = add[mul[t, t], t]
    for c in range(1, q):
        if not np.any(add[tt, c] == 0):
            return c
    raise VerificationError(f"no irreducible t^2 + t + c over GF({q})")  # pragma: no cover


#: polar space types -> (description, e) in the convention of BvM §2.5 / Brouwer's tables
_POLAR_E = {"Sp": 1.0, "O": 1.0, "O+": 0.0, "O-": 2.0, "U": None}


def polar_graph_parameters(kind: str, n: int, q: int) -> tuple[int, int, int, int]:
    """Parameters of the collinearity graph of a classical polar space of rank d >= 2.

    With the standard exponent ``e`` (O+(2d, q): 0; Sp(2d, q), O(2d+1, q): 1;
    O-(2d+2, q): 2; U(2d, q): 1/2; U(2d+1, q): 3/2, for U the field has order
    ``q`` = a square), the graph is SRG(v, k, lam, mu) with
    ``v = (q^d - 1)(q^{d+e-1} + 1)/(q - 1)``,
    ``k = q (q^{d-1} - 1)(q^{d+e-2} + 1)/(q - 1)``,
    ``lam = q^2 (q^{d-2} - 1)(q^{d+e-3} + 1)/(q - 1) + q - 1``,
    ``mu = (q^{d-1} - 1)(q^{d+e-2} + 1)/(q - 1)`` (BvM Thm 2.2.12).

    >>> polar_graph_parameters("Sp", 4, 3), polar_graph_parameters("U", 4, 4)
    ((40, 12, 2, 4), (45, 12, 3, 3))
    """
    kind, n, q, d, e2 = _polar_check(kind, n, q)
    r = isqrt(q)
    # q^(x/2) for integer x (e2 = 2e), exact
    def qh(x2: int) -> int:
        if x2 < 0:  # only multiplies a vanishing factor (d = 2)
            return 0
        return q ** (x2 // 2) if x2 % 2 == 0 else r ** x2
    v = (q ** d - 1) * (qh(2 * d + e2 - 2) + 1) // (q - 1)
    k = q * (q ** (d - 1) - 1) * (qh(2 * d + e2 - 4) + 1) // (q - 1)
    lam = q * q * (q ** (d - 2) - 1) * (qh(2 * d + e2 - 6) + 1) // (q - 1) + q - 1
    mu = (q ** (d - 1) - 1) * (qh(2 * d + e2 - 4) + 1) // (q - 1)
    return (v, k, lam, mu)


def _polar_check(kind, n, q):
    if kind not in _POLAR_E:
        raise InvalidArgumentError("kind", f"must be one of {sorted(_POLAR_E)}, got {kind!r}")
    n = check_int("n", n, minimum=3)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    if kind == "Sp":
        if n % 2:
            raise InvalidArgumentError("n", f"Sp(n, q) needs even n, got {n}")
        d, e2 = n // 2, 2
    elif kind == "O":
        if n % 2 == 0:
            raise InvalidArgumentError("n", f"O(n, q) (parabolic) needs odd n, got {n}")
        d, e2 = (n - 1) // 2, 2
    elif kind == "O+":
        if n % 2:
            raise InvalidArgumentError("n", f"O+(n, q) needs even n, got {n}")
        d, e2 = n // 2, 0
    elif kind == "O-":
        if n % 2:
            raise InvalidArgumentError("n", f"O-(n, q) needs even n, got {n}")
        d, e2 = n // 2 - 1, 4
    else:  # unitary: field GF(q), q a square
        r = isqrt(q)
        if r * r != q:
            raise InvalidArgumentError("q", f"U(n, q) needs a square field order q, got {q}")
        d, e2 = (n // 2, 1) if n % 2 == 0 else ((n - 1) // 2, 3)
    if d < 2:
        raise InvalidArgumentError("n", f"{kind}({n}, {q}) has rank {d} < 2 (no lines; graph trivial)")
    return kind, n, q, d, e2


def _quadratic_terms(kind: str, n: int, q: int) -> list[tuple[int, int, int]]:
    """Terms (a, b, c) of the quadratic form Q(x) = sum c x_a x_b of type O+, O- or O."""
    h = n // 2 if kind == "O+" else (n // 2 - 1 if kind == "O-" else (n - 1) // 2)
    terms = [(2 * i, 2 * i + 1, 1) for i in range(h)]
    if kind == "O-":
        terms += [(n - 2, n - 2, 1), (n - 2, n - 1, 1), (n - 1, n - 1, _irreducible_quadratic_c(q))]
    elif kind == "O":
        terms += [(n - 1, n - 1, 1)]
    return terms


def _polarize(terms) -> list[tuple[int, int, int]]:
    """Terms of the bilinear form B(x, y) = Q(x + y) - Q(x) - Q(y): c x_a y_b + c x_b y_a."""
    return [t for a, b, c in terms for t in ((a, b, c), (b, a, c))]


def polar_graph(kind: str, n: int, q: int) -> StronglyRegularGraph:
    """Collinearity graph of a finite classical polar space of rank >= 2.

    Points are the singular (isotropic) points of PG(n-1, q) for the form below;
    two distinct points are adjacent iff they are orthogonal (equivalently, the
    line joining them is totally singular).  Forms on ``x = (x_0, ..., x_{n-1})``:

    * ``"Sp"`` (n even): symplectic ``B(x,y) = sum_i x_{2i} y_{2i+1} - x_{2i+1} y_{2i}``.
    * ``"O+"`` (n even): ``Q(x) = sum_{i<n/2} x_{2i} x_{2i+1}`` (hyperbolic).
    * ``"O-"`` (n even): ``Q(x) = sum_{i<n/2-1} x_{2i} x_{2i+1} + x_{n-2}^2 + x_{n-2} x_{n-1} + c x_{n-1}^2``
      with ``t^2 + t + c`` irreducible (elliptic).
    * ``"O"`` (n odd): ``Q(x) = x_{n-1}^2 + sum_{i<(n-1)/2} x_{2i} x_{2i+1}`` (parabolic).
    * ``"U"``: Hermitian ``H(x, y) = sum_i x_i y_i^r`` over GF(q), q = r^2.

    Parameters are given by :func:`polar_graph_parameters` (BvM §2.5; Hubaut 1975).
    Examples: ``("Sp", 4, q)`` is GQ(q, q); ``("O-", 6, q)`` is GQ(q, q^2);
    ``("U", 4, r^2)`` is GQ(r^2, r); ``("Sp", 6, 2)`` is SRG(63, 30, 13, 15).

    >>> polar_graph("Sp", 4, 2).params
    SRGParams(v=15, k=6, lam=1, mu=3)
    >>> polar_graph("O-", 6, 2).params
    SRGParams(v=27, k=10, lam=1, mu=5)
    """
    kind, n, q, d, e2 = _polar_check(kind, n, q)
    v = polar_graph_parameters(kind, n, q)[0]   # the form is evaluated on pairs of singular points only
    check_dense_size("q", v, v, f"the collinearity graph of the polar space {kind}({n},{q})")
    add, mul = field_tables(q)
    P = projective_points(n, q)
    if kind == "Sp":
        minus_one = int(np.flatnonzero(add[1] == 0)[0])
        terms = [t for i in range(n // 2) for t in ((2 * i, 2 * i + 1, 1), (2 * i + 1, 2 * i, minus_one))]
        pts = np.arange(len(P))
        gram = _form_values(q, P, P, terms)
    elif kind == "U":
        r = isqrt(q)
        frob = np.arange(q)
        for _ in range(r - 1):  # y -> y^r
            frob = mul[frob, np.arange(q)]
        PF = frob[P]
        # isotropic points first (H(x, x) = 0), then the form on pairs of them only
        norm = np.zeros(len(P), dtype=np.int64)
        for i in range(n):
            norm = add[norm, mul[P[:, i], PF[:, i]]]
        pts = np.flatnonzero(norm == 0)
        gram = _form_values(q, P[pts], PF[pts], [(i, i, 1) for i in range(n)])
    else:
        qterms = _quadratic_terms(kind, n, q)
        pts = np.flatnonzero(_quadratic_values(q, P, qterms) == 0)
        S = P[pts]
        gram = _form_values(q, S, S, _polarize(qterms))
    adj = (np.asarray(gram) == 0).astype(np.int64)
    adj[np.diag_indices(len(pts))] = 0
    names = {"Sp": "W", "O": "Q", "O+": "Q+", "O-": "Q-", "U": "H"}
    return _make(adj, f"polar graph {kind}({n},{q}) (collinearity graph of {names[kind]}({n - 1},{q}))",
                 polar_graph_parameters(kind, n, q), kind=kind, n=n, q=q)


def symplectic_graph(m: int) -> StronglyRegularGraph:
    """Symplectic graph Sp(2m, 2): nonzero vectors of GF(2)^{2m}, ``x ~ y`` iff ``B(x, y) = 1``.

    ``B`` is the standard symplectic form.  SRG(2^{2m} - 1, 2^{2m-1},
    2^{2m-2}, 2^{2m-2}); it is the complement of :func:`polar_graph` ``("Sp", 2m, 2)``
    (over GF(2) projective points are nonzero vectors).  m >= 2.

    >>> symplectic_graph(2).params
    SRGParams(v=15, k=8, lam=4, mu=4)
    """
    m = check_int("m", m, minimum=2)
    check_dense_size("m", 4 ** m - 1, 4 ** m - 1, f"the adjacency matrix of Sp({2 * m},2)")
    g = polar_graph("Sp", 2 * m, 2).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"symplectic graph Sp({2 * m},2)", metadata={"m": m})


def generalized_quadrangle_graph(s: int, t: int) -> StronglyRegularGraph:
    """Collinearity graph of a generalized quadrangle GQ(s, t): SRG((s+1)(st+1), s(t+1), s-1, t+1).

    Supported orders (Payne & Thas, *Finite Generalized Quadrangles*, 2009):
    ``(q, q)`` = W(3, q); ``(q, q^2)`` = Q^-(5, q); ``(q^2, q)`` = H(3, q^2);
    ``(q - 1, q + 1)`` = T2*(O) for q a power of 2 (:func:`hyperoval_gq_graph`);
    ``(s, 1)`` = the grid, i.e. L2(s+1); ``(1, t)`` = the dual grid K_{t+1,t+1}.

    >>> generalized_quadrangle_graph(2, 4).params
    SRGParams(v=27, k=10, lam=1, mu=5)
    >>> generalized_quadrangle_graph(3, 5).params
    SRGParams(v=64, k=18, lam=2, mu=6)
    """
    s = check_int("s", s, minimum=1)
    t = check_int("t", t, minimum=1)
    expected = ((s + 1) * (s * t + 1), s * (t + 1), s - 1, t + 1)
    check_dense_size("s", expected[0], expected[0], f"the collinearity graph of GQ({s},{t})")
    rs = isqrt(s)
    if s == t and is_prime_power(s):
        g = polar_graph("Sp", 4, s)
    elif t == s * s and is_prime_power(s):
        g = polar_graph("O-", 6, s)
    elif rs * rs == s and t == rs and is_prime_power(t):
        g = polar_graph("U", 4, s)
    elif t == s + 2 and is_prime_power(s + 1) and (s + 1) % 2 == 0 and s >= 3:
        g = hyperoval_gq_graph(s + 1)
    elif t == 1 and s >= 1:
        g = lattice_graph(s + 1)
    elif s == 1:  # dual grid: complete bipartite K_{t+1, t+1}
        g = complete_multipartite_graph(2, t + 1)
    else:
        raise NotConstructibleError(f"gcsim cannot build GQ({s},{t})",
                                    [((x + 1) * (x * x + 1), x * (x + 1), x - 1, x + 1)
                                     for x in (2, 3, 4, 5, 7) if x != s])
    if g.params != expected:  # pragma: no cover - guarded by tests
        raise VerificationError(f"GQ({s},{t}) built with parameters {g.params}, expected {expected}")
    return StronglyRegularGraph(g.adjacency, g.params, f"GQ({s},{t}): {g.construction}", metadata={"s": s, "t": t})


# ----------------------------------------------------------------------------------------------
# Cayley graphs from projective two-intersection sets (Delsarte 1972; Calderbank & Kantor 1986)
# ----------------------------------------------------------------------------------------------

def two_intersection_graph(q: int, points, *, name: str | None = None) -> StronglyRegularGraph:
    """Cayley graph on GF(q)^n whose connection set is the set of nonzero multiples of ``points``.

    If ``O`` is a set of points of PG(n-1, q) met by every hyperplane in either
    ``h1`` or ``h2`` points (a projective two-intersection set), the graph with
    vertices GF(q)^n and ``x ~ y`` iff ``x - y`` spans a point of ``O`` is
    strongly regular with eigenvalues ``k = |O|(q-1)``, ``q h_i - |O|``
    (Delsarte 1972; Calderbank & Kantor 1986, Thm 3.2; BvM §7.1).

    Parameters
    ----------
    q : int
        Prime power.
    points : array_like of shape (m, n)
        Representatives of distinct projective points (galois integer
        representations of GF(q) elements), n >= 2.

    Raises
    ------
    InvalidArgumentError
        If the points are not distinct projective points or the graph is not
        strongly regular (``O`` is not a two-intersection set).

    Examples
    --------
    >>> two_intersection_graph(3, [[0, 1], [1, 0]]).params      # L2(3)
    SRGParams(v=9, k=4, lam=1, mu=2)
    """
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    P = np.asarray(points)
    if P.ndim != 2 or P.shape[1] < 2 or len(P) < 1 or np.any(P < 0) or np.any(P >= q):
        raise InvalidArgumentError("points", f"must be an (m, n) array of field elements 0..{q - 1}, n >= 2")
    n = P.shape[1]
    check_dense_size("points", q ** n, q ** n, f"the Cayley graph on GF({q})^{n}")
    _, mul = field_tables(q)
    p, a = prime_power_decomposition(q)
    mult = mul[np.arange(1, q)[:, None, None], P.astype(np.int64)[None, :, :]]   # (q-1, m, n)
    idx = _vector_index(mult, q).ravel()
    if np.any(np.all(P == 0, axis=1)) or len(np.unique(idx)) != len(idx):
        raise InvalidArgumentError("points", "must be nonzero vectors spanning distinct projective points")
    adj = _cayley_adjacency(p, a * n, idx)
    params = srg_parameters_of(adj)
    if params is None:
        raise InvalidArgumentError("points", "is not a projective two-intersection set: the Cayley graph is "
                                             "not strongly regular")
    return StronglyRegularGraph(adj, params, name or f"two-intersection graph over GF({q})^{n} (|O| = {len(P)})",
                                metadata={"q": q, "n": n, "O": P.tolist()})


def affine_polar_graph(eps: int, m: int, q: int) -> StronglyRegularGraph:
    """Affine polar graph VO^eps(2m, q): GF(q)^{2m}, ``x ~ y`` iff ``Q(x - y) = 0`` (x != y).

    ``Q`` is the hyperbolic (eps = +1) or elliptic (eps = -1) quadratic form of
    :func:`polar_graph`.  SRG(q^{2m}, (q^m - eps)(q^{m-1} + eps),
    q(q^{m-1} - eps)(q^{m-2} + eps) + q - 2, q^{m-1}(q^{m-1} + eps)) (BvM §3.3.1).
    The connection set is the quadric, a projective two-intersection set.

    >>> affine_polar_graph(-1, 2, 2).params   # the Clebsch graph
    SRGParams(v=16, k=5, lam=0, mu=2)
    >>> affine_polar_graph(-1, 3, 2).params
    SRGParams(v=64, k=27, lam=10, mu=12)
    """
    eps = check_int("eps", eps)
    if eps not in (1, -1):
        raise InvalidArgumentError("eps", f"must be +1 or -1, got {eps}")
    m = check_int("m", m, minimum=2)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    n = 2 * m
    check_dense_size("q", q ** n, q ** n, f"the adjacency matrix of VO({n},{q})")
    P = projective_points(n, q)
    O = P[_quadratic_values(q, P, _quadratic_terms("O+" if eps == 1 else "O-", n, q)) == 0]
    expected = (q ** n, (q ** m - eps) * (q ** (m - 1) + eps),
                q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2, q ** (m - 1) * (q ** (m - 1) + eps))
    g = two_intersection_graph(q, O)
    if g.params != expected:
        raise VerificationError(f"VO^{eps}({n},{q}): got {g.params}, expected {expected}")
    sign = "+" if eps == 1 else "-"
    return StronglyRegularGraph(g.adjacency, g.params, f"affine polar graph VO{sign}({n},{q})",
                                metadata={"eps": eps, "m": m, "q": q})


def hyperoval_gq_graph(q: int) -> StronglyRegularGraph:
    """Collinearity graph of the generalized quadrangle T2*(O), q = 2^h >= 4: GQ(q-1, q+1).

    O = conic ``{(1, t, t^2)} u {(0, 0, 1)}`` plus its nucleus ``(0, 1, 0)``, a
    hyperoval of PG(2, q) (every line meets it in 0 or 2 points).  Points of
    the GQ are the vectors of GF(q)^3, collinear iff their difference spans a
    point of O (Payne & Thas 3.1.3), giving SRG(q^3, (q-1)(q+2), q-2, q+2).

    >>> hyperoval_gq_graph(4).params
    SRGParams(v=64, k=18, lam=2, mu=6)
    """
    q = check_int("q", q, minimum=4)
    pp = prime_power_decomposition(q)
    if pp is None or pp[0] != 2:
        raise InvalidArgumentError("q", f"must be a power of 2 (>= 4), got {q}")
    check_dense_size("q", q ** 3, q ** 3, f"the collinearity graph of T2*(O) over GF({q})")
    _, mul = field_tables(q)
    t = np.arange(q)
    conic = np.stack([np.ones(q, dtype=np.int64), t, mul[t, t]], axis=1)
    O = np.concatenate([conic, [[0, 0, 1], [0, 1, 0]]])
    g = two_intersection_graph(q, O)
    expected = (q ** 3, (q - 1) * (q + 2), q - 2, q + 2)
    if g.params != expected:
        raise VerificationError(f"T2*(O) over GF({q}): got {g.params}, expected {expected}")
    return StronglyRegularGraph(g.adjacency, g.params, f"GQ({q - 1},{q + 1}) = T2*(O), hyperoval in PG(2,{q})",
                                metadata={"q": q})
