"""Common interface of every combinatorial object in gcsim.

Every object (design, graph, bipartite graph) describes an *assignment* of data
parts to workers (docs/theory.md §5.1): a 0/1 matrix ``A`` of shape ``(parts, workers)``
with ``A[i, j] = 1`` iff part ``i`` is held by worker ``j``.

The object contract
-------------------
Every subclass

* is immutable once built: attributes cannot be set or deleted, the stored arrays
  are read-only and ``metadata`` is a read-only mapping;
* names its catalogue ``kind`` (a class attribute) and its parameter type ``Params``
  (a :class:`typing.NamedTuple`, one per kind: ``params`` is an instance of it);
* checks its defining identities in exact integer arithmetic with ``verify()``, which
  raises :class:`gcsim.errors.VerificationError` on failure and returns ``True``;
* round-trips through arrays: ``to_arrays()`` gives every array needed to rebuild it,
  ``bundle_metadata()`` the JSON-serializable rest (``params`` as a list,
  ``construction``, ``seed``, ``object_metadata`` and what the kind needs), and the
  classmethod ``from_arrays(arrays, metadata)`` rebuilds it, refusing malformed input
  with :class:`gcsim.errors.CatalogueError`.

Sparse incidence (theory §42, issue #22): an object may be built from a ``scipy.sparse`` matrix
(a design whose dense incidence is over :data:`gcsim.limits.MAX_DENSE_ENTRIES`, e.g. PG(2, 89) with
8,011 x 8,011 entries and 721k non-zeros).  Then only the sparse matrix is kept: :attr:`incidence`
is it, ``assignment`` makes the dense array on request (refused with
:class:`~gcsim.errors.SizeLimitError` while over the limit), and ``replication``, ``loads``,
``to_networkx`` and the display work from the sparse matrix.  Every object has :attr:`incidence`.

Nothing stored is taken on trust by ``from_arrays``: an incidence or adjacency matrix
must be stored as integers (or booleans) whose values are exactly 0 or 1 (a float matrix
holding ``1.7`` is refused, not rounded), the parameters must be integers consistent with
the array shapes *before* anything is built, the object is rebuilt from its defining data
and compared with the stored assignment, and every declared invariant that can be
re-derived from the file (a seed claim) is re-derived.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .. import _html
from .._validation import check_dense_size
from ..errors import CatalogueError, VerificationError
from ..io.manifest import to_jsonable

__all__ = ["CombinatorialObject", "require", "sparse_gram_equals"]


def require(condition: bool, message: str) -> None:
    """Raise :class:`VerificationError` with ``message`` unless ``condition`` holds."""
    if not bool(condition):
        raise VerificationError(message)


class CombinatorialObject:
    """Base class: an immutable assignment matrix with parameters and an exact verifier.

    Parameters
    ----------
    assignment : array_like
        The 0/1 matrix, parts x workers (stored as a read-only int64 array).
    params : tuple
        The defining parameters, in the order of the subclass's ``Params`` fields.
    construction : str
        A short human-readable name of how the object was built.
    metadata : mapping, optional
        Extra information (base blocks, seed, ...), stored as a read-only mapping.
    """

    #: family name used in catalogues ("bibd", "srg", "coset", "biregular", ...)
    kind: ClassVar[str] = "object"
    #: the parameter type of the kind (a NamedTuple class; typed Any: each kind's has its own fields)
    Params: ClassVar[Any]

    _assignment: np.ndarray | None
    _incidence: Any
    _params: Any
    construction: str
    metadata: Mapping[str, Any]

    def __init__(
        self, assignment: np.ndarray, params: tuple, construction: str, metadata: Mapping[str, Any] | None = None
    ):
        if sp.issparse(assignment):
            # kept sparse only (the dense array is made on request): a private read-only CSC copy
            S = sp.csc_matrix(assignment, dtype=np.int64, copy=True)
            S.sort_indices()
            for a in (S.data, S.indices, S.indptr):
                a.setflags(write=False)
            self._set("_assignment", None)
            self._set("_incidence", S)
        else:
            arr = np.array(assignment, dtype=np.int64)  # a private copy: nobody else holds a writeable view
            arr.setflags(write=False)
            self._set("_assignment", arr)
            self._set("_incidence", None)
        values = tuple(int(p) if isinstance(p, (int, np.integer)) else p for p in params)
        self._set("_params", self.Params(*values))
        self._set("construction", str(construction))
        self._set("metadata", MappingProxyType(dict(metadata or {})))

    # -- immutability ------------------------------------------------------------------------
    def _set(self, name: str, value: Any) -> None:
        """Set an attribute while the object is being built (the only way to write one)."""
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    # -- the assignment ------------------------------------------------------------------------
    @property
    def assignment(self) -> np.ndarray:
        """0/1 assignment matrix, parts x workers (read-only int64 array).

        For an object kept sparse (:attr:`is_sparse`) the dense array is made on the first request
        and kept; refused with :class:`~gcsim.errors.SizeLimitError` over
        :data:`gcsim.limits.MAX_DENSE_ENTRIES`.
        """
        if self._assignment is None:
            rows, cols = self._incidence.shape
            check_dense_size(
                "assignment", rows, cols, f"the dense assignment of {type(self).__name__}{tuple(self.params)}"
            )
            arr = self._incidence.toarray()
            arr.setflags(write=False)
            self._set("_assignment", arr)
            return arr
        return self._assignment

    @property
    def incidence(self) -> sp.csc_matrix:
        """The assignment as a ``scipy.sparse`` CSC matrix (int64 0/1, parts x workers; cached).

        Examples
        --------
        >>> from gcsim.combinatorics.bibd import bibd
        >>> bibd(7, 3).incidence.nnz
        21
        """
        if self._incidence is None:
            S = sp.csc_matrix(self._assignment)
            for a in (S.data, S.indices, S.indptr):
                a.setflags(write=False)
            self._set("_incidence", S)
        return self._incidence

    @property
    def is_sparse(self) -> bool:
        """True when only the sparse :attr:`incidence` is kept (no dense array built yet)."""
        return self._assignment is None

    @property
    def params(self) -> Any:
        """Defining parameters of the object (an instance of the kind's ``Params`` named tuple)."""
        return self._params

    @property
    def num_parts(self) -> int:
        """The number of data parts (rows of the assignment)."""
        return int((self._assignment if self._assignment is not None else self._incidence).shape[0])

    @property
    def num_workers(self) -> int:
        """n, the number of workers (columns of the assignment)."""
        return int((self._assignment if self._assignment is not None else self._incidence).shape[1])

    @property
    def replication(self) -> np.ndarray:
        """r_i = number of workers holding part i."""
        if self._assignment is None:
            return np.asarray(self._incidence.sum(axis=1)).ravel()
        return self._assignment.sum(axis=1)

    @property
    def loads(self) -> np.ndarray:
        """l_j = number of parts held by worker j."""
        if self._assignment is None:
            return np.diff(self._incidence.indptr).astype(np.int64)
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
        import networkx as nx  # optional dependency: imported only when asked for

        G = nx.Graph(kind=self.kind, params=self.params, construction=self.construction)
        G.add_nodes_from((("part", i) for i in range(self.num_parts)), bipartite=0)
        G.add_nodes_from((("worker", j) for j in range(self.num_workers)), bipartite=1)
        rows, cols = np.nonzero(self._assignment) if self._assignment is not None else self._incidence.nonzero()
        G.add_edges_from(zip((("part", int(i)) for i in rows), (("worker", int(j)) for j in cols), strict=False))
        return G

    def verify(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_binary(self) -> None:
        if self._assignment is None:
            S = self._incidence
            dup = sp.csc_matrix(S, copy=True)
            dup.sum_duplicates()
            require(dup.nnz == S.nnz and bool(np.all(S.data == 1)), "assignment must be a 0/1 matrix")
            return
        a = self._assignment
        require(a.ndim == 2, f"assignment must be 2-D, got shape {a.shape}")
        require(bool(np.all((a == 0) | (a == 1))), "assignment must be a 0/1 matrix")

    # -- round trip through arrays --------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array needed to rebuild the object: here the assignment (int8, 0/1)."""
        return {"assignment": self.assignment.astype(np.int8)}

    def bundle_metadata(self) -> dict[str, Any]:
        """JSON-serializable description: ``params`` (list), ``construction``, ``seed``, ``object_metadata``."""
        seed = getattr(self, "seed", None)
        if seed is None:
            seed = self.metadata.get("seed")
        return {
            "kind": self.kind,
            "params": [to_jsonable(p) for p in self.params],
            "construction": self.construction,
            "seed": to_jsonable(seed),
            "object_metadata": to_jsonable(dict(self.metadata)),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> Any:
        """Rebuild an object from :meth:`to_arrays` and :meth:`bundle_metadata` (checked, see the module)."""
        raise NotImplementedError  # pragma: no cover - every kind defines its own

    def __repr__(self) -> str:
        return f"{type(self).__name__}(params={self.params!r}, construction={self.construction!r})"

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: kind, params, construction, verification status, incidence picture.

        ``verify()`` runs once, on first display (the object is immutable, so the outcome is kept);
        a failure is shown as "verification failed: ...", never raised (see :mod:`gcsim._html`).
        """
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title=type(self).__name__,
                kind=self.kind,
                params=self.params,
                rows=[
                    ("construction", self.construction),
                    ("parts × workers", f"{self.num_parts} × {self.num_workers}"),
                    *_html.scalar_items(self.metadata, limit=6),
                ],
                status=_html.verdict(self),
                matrix=self._assignment,  # None (no picture) for an object kept sparse
                binary=True,
                caption="assignment: parts (rows) × workers (columns)",
            ),
        )


def sparse_gram_equals(S: Any, diag: int, off: int) -> tuple[int, int] | None:
    """None if ``S Sᵀ`` equals ``(diag - off) I + off J``, else the first entry that differs (pass ``S.T`` for ``SᵀS``).

    Exact integer arithmetic from the sparse matrix, one ``chunk x size`` block of the product at
    a time (no ``size x size`` array is kept): ``O(nnz · row weight)`` work.

    Examples
    --------
    >>> S = sp.csc_matrix(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]]))
    >>> sparse_gram_equals(S, 2, 1) is None, sparse_gram_equals(S, 2, 0)
    (True, (0, 1))
    """
    R = sp.csr_matrix(S, dtype=np.int64)
    C = R.T.tocsc()
    size = R.shape[0]
    step = max(1, min(size, 2**22 // max(size, 1)))
    for a in range(0, size, step):
        G = (R[a : a + step] @ C).toarray()
        idx = np.arange(G.shape[0])
        G[idx, a + idx] -= diag - off
        bad = np.argwhere(G != off)
        if bad.size:
            return a + int(bad[0][0]), int(bad[0][1])
    return None


# ---------------------------------------------------------------------------------------------
# checks shared by the kinds' ``from_arrays``


def stored_params(meta: Mapping[str, Any], count: int, kind: str) -> list[int]:
    """The ``count`` non-negative integer parameters declared by ``meta["params"]``."""
    params = meta.get("params")
    if (
        not isinstance(params, (list, tuple))
        or len(params) != count
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in params)
    ):
        raise CatalogueError(f"{kind} manifest params must be {count} non-negative integers, got {params!r}")
    return list(params)


def stored_binary(
    arrays: Mapping[str, np.ndarray], name: str, kind: str, shape: tuple[int, ...] | None = None
) -> np.ndarray:
    """The stored 0/1 matrix ``name`` as int64, after checking dtype, shape and values exactly."""
    if name not in arrays:
        raise CatalogueError(f"stored {kind} lacks the array {name!r}")
    arr = np.asarray(arrays[name])
    if arr.dtype.kind not in "biu":
        raise CatalogueError(
            f"stored {kind} {name} has dtype {arr.dtype}; a 0/1 matrix must be stored as "
            "integers (a float matrix would be rounded on loading)"
        )
    if arr.ndim != 2 or (shape is not None and arr.shape != shape):
        raise CatalogueError(
            f"stored {kind} {name} has shape {arr.shape}, expected {shape if shape is not None else 'a 2-D matrix'}"
        )
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise CatalogueError(f"stored {kind} {name} is not a 0/1 matrix: entry ({i}, {j}) = {arr[i, j]}")
    return arr.astype(np.int64)


def same_assignment(obj: Any, stored: np.ndarray, kind: str) -> Any:
    """``obj`` if its assignment equals the stored one, else :class:`CatalogueError`."""
    if not np.array_equal(np.asarray(obj.assignment), stored):
        raise CatalogueError(f"stored {kind} assignment differs from the one rebuilt from its defining data")
    return obj


def stored_object_metadata(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``object_metadata`` mapping (or None), refused unless it is a JSON object."""
    om = meta.get("object_metadata")
    if om is not None and not isinstance(om, Mapping):
        raise CatalogueError(f"object_metadata must be a JSON object, got {type(om).__name__}")
    return dict(om) if om is not None else None


def stored_construction(meta: Mapping[str, Any]) -> str:
    """The recorded construction text (``"loaded"`` when absent)."""
    how = meta.get("construction")
    if how is not None and not isinstance(how, str):
        raise CatalogueError(f"construction must be a string, got {how!r}")
    return how or "loaded"


def stored_seed(meta: Mapping[str, Any], kind: str) -> int | None:
    """The recorded seed: a non-negative integer or None."""
    seed = meta.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise CatalogueError(f"stored {kind} seed must be a non-negative integer or null, got {seed!r}")
    return seed
