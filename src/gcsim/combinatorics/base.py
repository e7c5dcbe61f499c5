"""Common interface of every combinatorial object in gcsim.

Every object (design, graph, bipartite graph) describes an *assignment* of data
parts to workers (SPEC §1): a 0/1 matrix ``A`` of shape ``(parts, workers)``
with ``A[i, j] = 1`` iff part ``i`` is held by worker ``j``.

Subclasses provide

* ``assignment`` -- the 0/1 ``numpy.ndarray`` (dtype int64), parts x workers;
* ``params`` -- a tuple of the defining parameters;
* ``construction`` -- a short human-readable name of how it was built;
* ``verify()`` -- checks the defining identities in exact integer arithmetic,
  raises :class:`gcsim.errors.VerificationError` on failure, returns ``True``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import VerificationError

__all__ = ["CombinatorialObject", "require"]


def require(condition: bool, message: str) -> None:
    """Raise :class:`VerificationError` with ``message`` unless ``condition`` holds."""
    if not bool(condition):
        raise VerificationError(message)


class CombinatorialObject:
    """Base class: an assignment matrix with parameters and an exact verifier."""

    #: family name used in catalogues ("bibd", "srg", "coset", "biregular", ...)
    kind: str = "object"

    def __init__(self, assignment: np.ndarray, params: tuple, construction: str,
                 metadata: dict[str, Any] | None = None):
        arr = np.asarray(assignment, dtype=np.int64)
        arr.setflags(write=False)
        self._assignment = arr
        self._params = tuple(int(p) if isinstance(p, (int, np.integer)) else p for p in params)
        self.construction = str(construction)
        self.metadata: dict[str, Any] = dict(metadata or {})

    @property
    def assignment(self) -> np.ndarray:
        """0/1 assignment matrix, parts x workers (read-only int64 array)."""
        return self._assignment

    @property
    def params(self) -> tuple:
        """Defining parameters of the object."""
        return self._params

    @property
    def num_parts(self) -> int:
        """N, the number of data parts (rows of the assignment)."""
        return int(self._assignment.shape[0])

    @property
    def num_workers(self) -> int:
        """n, the number of workers (columns of the assignment)."""
        return int(self._assignment.shape[1])

    @property
    def replication(self) -> np.ndarray:
        """r_i = number of workers holding part i."""
        return self._assignment.sum(axis=1)

    @property
    def loads(self) -> np.ndarray:
        """l_j = number of parts held by worker j."""
        return self._assignment.sum(axis=0)

    def to_networkx(self) -> Any:
        """The incidence (assignment) graph as a :class:`networkx.Graph`.

        Bipartite: node ``("part", i)`` (attribute ``bipartite=0``) for every data part,
        ``("worker", j)`` (``bipartite=1``) for every worker, and an edge per 1 of the
        assignment (part ``i`` held by worker ``j``).  For a BIBD these are the points and
        blocks (its Levi graph).  ``G.graph`` carries ``kind``, ``params`` and ``construction``.

        Examples
        --------
        >>> from gcsim.combinatorics.bibd import bibd
        >>> G = bibd(7, 3, 1).to_networkx()
        >>> G.number_of_nodes(), G.number_of_edges()
        (14, 21)
        >>> sorted(d for _, d in G.degree(("part", i) for i in range(7)))
        [3, 3, 3, 3, 3, 3, 3]
        """
        import networkx as nx

        A = self._assignment
        G = nx.Graph(kind=self.kind, params=self.params, construction=self.construction)
        G.add_nodes_from((("part", i) for i in range(A.shape[0])), bipartite=0)
        G.add_nodes_from((("worker", j) for j in range(A.shape[1])), bipartite=1)
        rows, cols = np.nonzero(A)
        G.add_edges_from(zip((("part", int(i)) for i in rows), (("worker", int(j)) for j in cols)))
        return G

    def verify(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_binary(self) -> None:
        a = self._assignment
        require(a.ndim == 2, f"assignment must be 2-D, got shape {a.shape}")
        require(bool(np.all((a == 0) | (a == 1))), "assignment must be a 0/1 matrix")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(params={self.params}, construction={self.construction!r})"
