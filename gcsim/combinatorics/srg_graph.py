"""The strongly regular graph object (docs/theory.md §20).

A graph is *strongly regular* with parameters ``(v, k, lam, mu)`` if its
adjacency matrix satisfies ``Adj^2 = k I + lam Adj + mu (J - I - Adj)``
(Brouwer & Van Maldeghem, *Strongly Regular Graphs*, CUP 2022 -- "BvM" below).
As an assignment there are ``v`` parts and workers and worker ``j`` holds its own part
and its neighbours' (``A = Adj + I``, default) or only its neighbours' (``A = Adj``).

The families of constructions are in ``srg_cayley`` (Paley and other Cayley graphs),
``srg_combinatorial`` (triangular, lattice, Latin-square, imprimitive and block graphs),
``srg_sporadic`` (named graphs) and ``srg_geometric`` (polar spaces, generalized
quadrangles, two-intersection sets); every constructor returns a
:class:`StronglyRegularGraph` whose ``verify()`` re-checks the identity exactly.
Why each family is strongly regular: ``docs/theory/20_srg.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_bool
from ..errors import InvalidArgumentError, VerificationError
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
)
from .srg_feasibility import complement_parameters, srg_eigenvalues

__all__ = ["srg_parameters_of", "SRGParams", "StronglyRegularGraph"]


def _exact_square(adj: np.ndarray) -> np.ndarray:
    """Adj @ Adj exactly.

    Entries of a 0/1 product are integers <= v, and every partial sum of the
    BLAS product is such an integer, so floating point is exact while v fits
    the mantissa: float32 (v < 2^24, every graph within gcsim's size limits;
    twice as fast as float64) or float64 (v < 2^53); both much faster than
    NumPy's non-BLAS int64 matmul.
    """
    v = adj.shape[0]
    if v < 2**24:
        a = adj.astype(np.float32)
        return (a @ a).astype(np.int64)
    if v < 2**52:  # pragma: no cover - beyond gcsim.limits.MAX_DENSE_ENTRIES
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
    >>> from gcsim.combinatorics import petersen_graph
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

    def __init__(
        self,
        adjacency,
        params: Sequence[int],
        construction: str,
        *,
        closed: bool = True,
        metadata: Mapping[str, Any] | None = None,
    ):
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
        >>> from gcsim.combinatorics import petersen_graph
        >>> g = petersen_graph()
        >>> StronglyRegularGraph.from_arrays(g.to_arrays(), g.bundle_metadata()).params == g.params
        True
        """
        params = stored_params(metadata, 4, "srg")
        n = params[0]
        adj = stored_binary(arrays, "adjacency", "srg", (n, n))
        A = stored_binary(arrays, "assignment", "srg", (n, n))
        closed = bool(np.array_equal(A, adj + np.eye(n, dtype=np.int64)))
        obj = cls(adj, params, stored_construction(metadata), closed=closed, metadata=stored_object_metadata(metadata))
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
        >>> from gcsim.combinatorics import petersen_graph
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

        >>> from gcsim.combinatorics import paley_graph
        >>> paley_graph(13).eigenvalues()[1]
        (-1/2 + sqrt(13)/2, 6)
        """
        return srg_eigenvalues(*self._params)

    def complement(self) -> StronglyRegularGraph:
        """The complement graph, an SRG with :func:`complement_parameters`.

        >>> from gcsim.combinatorics import clebsch_graph
        >>> clebsch_graph().complement().params
        SRGParams(v=16, k=10, lam=6, mu=6)
        """
        v = self._params[0]
        comp = 1 - self._adjacency - np.eye(v, dtype=np.int64)
        return StronglyRegularGraph(
            comp,
            complement_parameters(*self._params),
            f"complement of {self.construction}",
            closed=self.closed,
            metadata=dict(self.metadata),
        )

    def with_closed(self, closed: bool) -> StronglyRegularGraph:
        """Same graph with the other assignment convention."""
        return StronglyRegularGraph(
            self._adjacency, self._params, self.construction, closed=closed, metadata=dict(self.metadata)
        )

    def __repr__(self) -> str:
        return f"StronglyRegularGraph(params={self.params!r}, construction={self.construction!r}, closed={self.closed})"


def _make(adj: np.ndarray, name: str, expected: tuple | None = None, **meta) -> StronglyRegularGraph:
    """Wrap an adjacency matrix, computing its parameters by brute force (and checking them)."""
    params = srg_parameters_of(adj)
    if params is None:
        raise VerificationError(f"{name}: construction did not produce a strongly regular graph")
    if expected is not None and tuple(expected) != params:
        raise VerificationError(f"{name}: expected parameters {tuple(expected)}, got {params}")
    return StronglyRegularGraph(adj, params, name, metadata=meta)
