"""Bi-regular bipartite graphs (v, b, r, k)  (docs/theory.md §30 App. A).

A bi-regular bipartite graph has ``v`` parts of degree ``r`` and ``b`` workers
of degree ``k``; counting edges gives the necessary condition ``v r = b k``.
As an assignment (docs/theory.md §5.1) it is a ``v x b`` 0/1 matrix with row sums ``r``
and column sums ``k``.  gcsim requires it to be *simple* (no repeated edge;
a 0/1 matrix) and *connected*, which needs ``r <= b`` (equivalently ``k <= v``) and
``v r >= v + b - 1`` (a connected graph on ``v + b`` vertices has at least
``v + b - 1`` edges).  These conditions are also sufficient: the seeded
construction below always succeeds when they hold.

Random construction (seeded, deterministic for a seed):

1. configuration model: ``v r`` part stubs are matched with a uniformly
   random permutation of the ``b k`` worker stubs (Bollobas 1980);
2. repeated edges are removed by random *double-edge switches*
   ``(u, w), (u', w') -> (u, w'), (u', w)`` that create no new repeat
   (McKay & Wormald 1990 style repair); if the repair stalls, the pairing is
   redrawn (at most ``max_tries`` pairings), and as a last resort the graph
   starts from the circulant ``A[i, (i r + t) mod b] = 1`` (``t < r``),
   randomized by ``10 v r`` accepted switches;
3. components are merged by switching a non-bridge edge ``(u1, w1)`` of a
   component that has a cycle with any edge ``(u2, w2)`` of another component:
   degrees are kept and the number of components drops by one.

Structured instances (e.g. the incidence matrix of a design) are accepted
through :func:`biregular_from_assignment`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .._validation import check_binary_matrix, check_bool, check_dense_size, check_int
from ..errors import CatalogueError, ImpossibleParametersError, InvalidArgumentError, NotConstructibleError
from .base import (
    CombinatorialObject,
    require,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
    stored_seed,
)

__all__ = [
    "BiregularGraph",
    "BiregularParams",
    "biregular_graph",
    "biregular_from_assignment",
    "is_connected_assignment",
]


def is_connected_assignment(assignment: Any) -> bool:
    """True iff the bipartite graph parts -- workers of a 0/1 matrix is connected.

    >>> is_connected_assignment([[1, 0], [1, 1]]), is_connected_assignment([[1, 0], [0, 1]])
    (True, False)
    """
    A = check_binary_matrix("assignment", assignment)
    v, b = A.shape
    if v + b == 0:
        return True
    return connected_components(_bipartite_adjacency(A), directed=False)[0] == 1


def _bipartite_adjacency(A: np.ndarray) -> csr_matrix:
    """Sparse (v+b) x (v+b) adjacency: parts 0..v-1, workers v..v+b-1 (edges stored one way)."""
    v, b = A.shape
    us, ws = np.nonzero(A)
    return csr_matrix((np.ones(us.size, dtype=np.int8), (us, ws + v)), shape=(v + b, v + b))


class BiregularParams(NamedTuple):
    """Parameters of a bi-regular bipartite graph: ``v`` parts of degree ``r``, ``b`` workers of degree ``k``."""

    v: int
    b: int
    r: int
    k: int


#: the construction text of a graph built by the configuration model (its seed claim is re-derived on loading)
_SEEDED_BIREGULAR = re.compile(r"configuration model \+ switch repair \(seed=(\d+), pairing (\d+)\)")


class BiregularGraph(CombinatorialObject):
    """Simple connected bi-regular bipartite graph as a ``v x b`` assignment.

    Attributes
    ----------
    seed : int or None
        Seed of the random construction (None for a given matrix).

    Examples
    --------
    >>> g = biregular_graph(40, 20, 3, 6, seed=1)
    >>> g.assignment.shape, g.params, g.verify()
    ((40, 20), BiregularParams(v=40, b=20, r=3, k=6), True)
    """

    kind = "biregular"
    Params = BiregularParams
    seed: int | None

    def __init__(
        self,
        assignment: np.ndarray,
        params: tuple,
        construction: str,
        seed: int | None,
        metadata: Mapping[str, Any] | None = None,
    ):
        super().__init__(assignment, params, construction, metadata)
        self._set("seed", seed)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> BiregularGraph:
        """Rebuild the graph from its stored assignment, re-deriving a recorded seed claim.

        The configuration model stops at the recorded pairing, so ``max_tries`` = that pairing
        rebuilds the graph from the seed; the rebuilt matrix must equal the stored one.

        Examples
        --------
        >>> g = biregular_graph(12, 6, 2, 4, seed=1)
        >>> BiregularGraph.from_arrays(g.to_arrays(), g.bundle_metadata()).params == g.params
        True
        """
        v, b, r, k = stored_params(metadata, 4, "biregular")
        A = stored_binary(arrays, "assignment", "biregular", (v, b))
        how = stored_construction(metadata)
        seed = stored_seed(metadata, "biregular")
        obj = cls(A, (v, b, r, k), how, seed, metadata=stored_object_metadata(metadata))
        m = _SEEDED_BIREGULAR.fullmatch(how)
        if m:
            built_seed, pairing = int(m.group(1)), int(m.group(2))
            if seed is not None and seed != built_seed:
                raise CatalogueError(f"stored biregular seed {seed} differs from the construction's seed {built_seed}")
            obj.verify()  # cheap exact checks first; the rebuild below is a construction
            try:
                fresh = biregular_graph(v, b, r, k, seed=built_seed, max_tries=max(pairing, 1)).assignment
            except Exception as exc:  # noqa: BLE001 - any failure means the claim cannot be re-derived
                raise CatalogueError(
                    f"seed claim cannot be re-derived: biregular_graph({v}, {b}, {r}, {k}, "
                    f"seed={built_seed}) fails: {exc}"
                ) from None
            if not np.array_equal(fresh, A):
                raise CatalogueError(
                    f"seed claim does not hold: biregular_graph({v}, {b}, {r}, {k}, "
                    f"seed={built_seed}) builds a different matrix "
                    f"({int((fresh != A).sum())} entries differ)"
                )
        elif seed is not None and "seed=" in how and f"seed={seed}" not in how:
            raise CatalogueError(f"stored biregular seed {seed} contradicts the construction {how!r}")
        return obj

    def verify(self) -> bool:
        """Check exactly: 0/1 (simple), shape ``v x b``, degrees ``r`` / ``k``, ``vr = bk``, connected.

        Connectivity is skipped only for graphs wrapped with ``require_connected=False``.
        """
        self._check_binary()
        v, b, r, k = self.params
        A = self.assignment
        require(A.shape == (v, b), f"assignment must be {v} x {b}, got {A.shape}")
        require(v * r == b * k, f"vr = bk fails: {v}*{r} != {b}*{k}")
        require(bool(np.all(A.sum(axis=1) == r)), f"every part must have degree r = {r}")
        require(bool(np.all(A.sum(axis=0) == k)), f"every worker must have degree k = {k}")
        if self.metadata.get("require_connected", True):
            require(is_connected_assignment(A), "the bipartite graph must be connected")
        return True


def _check_params(v: int, b: int, r: int, k: int) -> tuple[int, int, int, int]:
    v = check_int("v", v, minimum=1)
    b = check_int("b", b, minimum=1)
    r = check_int("r", r, minimum=1)
    k = check_int("k", k, minimum=1)
    if v * r != b * k:
        raise ImpossibleParametersError(
            "vr = bk", f"edge count differs: v*r = {v}*{r} = {v * r} but b*k = {b}*{k} = {b * k}"
        )
    if r > b:
        raise ImpossibleParametersError(
            "r <= b", f"a part of degree r = {r} needs r distinct workers, only b = {b} exist (no repeated edges)"
        )
    # k <= v follows: k / v = r / b <= 1
    if v * r < v + b - 1:
        raise ImpossibleParametersError(
            "vr >= v + b - 1",
            f"a connected graph on v + b = {v + b} vertices needs at least {v + b - 1} edges, got v*r = {v * r}",
        )
    return v, b, r, k


def _repair(parts: np.ndarray, workers: np.ndarray, v: int, b: int, rng: np.random.Generator, budget: int) -> bool:
    """Remove repeated edges in place by random double-edge switches; False if stalled."""
    E = parts.size
    count = np.zeros((v, b), dtype=np.int64)
    np.add.at(count, (parts, workers), 1)
    attempts = 0
    while True:
        dup = np.flatnonzero(count[parts, workers] > 1)
        if dup.size == 0:
            return True
        e1 = int(dup[0])
        u, w = int(parts[e1]), int(workers[e1])
        while True:
            attempts += 1
            if attempts > budget:
                return False
            e2 = int(rng.integers(E))
            u2, w2 = int(parts[e2]), int(workers[e2])
            if u2 != u and w2 != w and count[u, w2] == 0 and count[u2, w] == 0:
                break
        count[u, w] -= 1
        count[u2, w2] -= 1
        count[u, w2] += 1
        count[u2, w] += 1
        workers[e1], workers[e2] = w2, w


def _circulant_start(v: int, b: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """Deterministic simple start A[i, (i r + t) mod b] = 1, randomized by double-edge switches."""
    parts = np.repeat(np.arange(v), r)
    workers = (np.arange(v)[:, None] * r + np.arange(r)[None, :]).ravel() % b
    A = np.zeros((v, b), dtype=np.int64)
    A[parts, workers] = 1
    E = v * r
    accepted, attempts = 0, 0
    while accepted < 10 * E and attempts < 100 * E:
        attempts += 1
        e1, e2 = rng.integers(E, size=2)
        u, w, u2, w2 = parts[e1], workers[e1], parts[e2], workers[e2]
        if u != u2 and w != w2 and A[u, w2] == 0 and A[u2, w] == 0:
            A[u, w] = A[u2, w2] = 0
            A[u, w2] = A[u2, w] = 1
            workers[e1], workers[e2] = w2, w
            accepted += 1
    return A


def _connect(A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Merge components by switches with a non-bridge edge (degrees preserved)."""
    import networkx as nx

    v, b = A.shape
    while True:
        ncomp, labels = connected_components(_bipartite_adjacency(A), directed=False)
        if ncomp == 1:
            return A
        part_lab = labels[:v]
        # a component with at least as many edges as vertices has a cycle
        edges_per = np.bincount(part_lab, weights=A.sum(axis=1), minlength=ncomp)
        verts_per = np.bincount(labels, minlength=ncomp)
        cyc = np.flatnonzero(edges_per >= verts_per)
        c1 = int(cyc[0])
        us, ws = np.nonzero(A * (part_lab == c1)[:, None])
        G = nx.Graph()
        G.add_edges_from(zip(us.tolist(), (ws + v).tolist(), strict=False))
        bridges = {tuple(sorted(e)) for e in nx.bridges(G)}
        cand = [(u, w) for u, w in zip(us.tolist(), ws.tolist(), strict=False) if (u, w + v) not in bridges]
        u1, w1 = cand[int(rng.integers(len(cand)))]
        us2, ws2 = np.nonzero(A * (part_lab != c1)[:, None])
        i2 = int(rng.integers(us2.size))
        u2, w2 = int(us2[i2]), int(ws2[i2])
        A[u1, w1] = A[u2, w2] = 0
        A[u1, w2] = A[u2, w1] = 1


def biregular_graph(v: int, b: int, r: int, k: int, seed: int = 0, *, max_tries: int = 100) -> BiregularGraph:
    """Seeded random simple connected bi-regular bipartite graph (v, b, r, k).

    Parameters
    ----------
    v, b : int
        Numbers of parts and workers.
    r, k : int
        Part degree (replication) and worker degree (load); ``v r = b k``.
    seed : int
        Seed of ``numpy.random.default_rng``; the result is a function of the seed.
    max_tries : int
        Pairings of the configuration model tried before falling back to the
        switch chain from the circulant start (see module docstring).

    Raises
    ------
    ImpossibleParametersError
        ``vr = bk``, ``r <= b`` (equivalently ``k <= v``) or ``vr >= v + b - 1`` fails.

    Examples
    --------
    >>> g = biregular_graph(40, 20, 3, 6, seed=0)
    >>> set(g.replication.tolist()), set(g.loads.tolist())
    ({3}, {6})
    """
    v, b, r, k = _check_params(v, b, r, k)
    check_dense_size("(v, b)", v, b, f"the ({v}, {b}, {r}, {k}) bi-regular assignment")
    seed = check_int("seed", seed, minimum=0)
    max_tries = check_int("max_tries", max_tries, minimum=1)
    rng = np.random.default_rng(seed)
    E = v * r
    parts = np.repeat(np.arange(v), r)
    A = None
    for attempt in range(max_tries):
        workers = rng.permutation(np.repeat(np.arange(b), k))
        if _repair(parts, workers, v, b, rng, budget=50 * E):
            A = np.zeros((v, b), dtype=np.int64)
            A[parts, workers] = 1
            how = f"configuration model + switch repair (seed={seed}, pairing {attempt + 1})"
            break
    if A is None:
        A = _circulant_start(v, b, r, rng)
        how = f"circulant start + random switches (seed={seed})"
    if not bool(np.all(A.sum(axis=1) == r) and np.all(A.sum(axis=0) == k)):  # pragma: no cover - defensive
        raise NotConstructibleError(f"could not build a simple ({v}, {b}, {r}, {k}) bi-regular graph")
    A = _connect(A, rng)
    return BiregularGraph(A, (v, b, r, k), how, seed)


def biregular_from_assignment(
    assignment: Any, *, require_connected: bool = True, construction: str = "given assignment"
) -> BiregularGraph:
    """Wrap a bi-regular 0/1 matrix (e.g. a design's incidence matrix) as a :class:`BiregularGraph`.

    Parameters
    ----------
    assignment : array-like, shape (v, b)
        0/1 matrix with constant row sums ``r`` and constant column sums ``k``.
    require_connected : bool
        Refuse a disconnected graph (default True).

    Examples
    --------
    The Fano plane's incidence matrix (7 points, 7 lines, 3 points per line):

    >>> lines = [[0, 1, 2], [0, 3, 4], [0, 5, 6], [1, 3, 5], [1, 4, 6], [2, 3, 6], [2, 4, 5]]
    >>> A = np.zeros((7, 7), dtype=int)
    >>> for j, L in enumerate(lines): A[L, j] = 1
    >>> biregular_from_assignment(A).params
    BiregularParams(v=7, b=7, r=3, k=3)
    """
    require_connected = check_bool("require_connected", require_connected)
    A = check_binary_matrix("assignment", assignment)
    v, b = A.shape
    if v == 0 or b == 0:
        raise InvalidArgumentError("assignment", f"must be non-empty, got shape {A.shape}")
    rows, cols = A.sum(axis=1), A.sum(axis=0)
    if np.any(rows != rows[0]) or np.any(cols != cols[0]):
        raise InvalidArgumentError(
            "assignment",
            f"must be bi-regular: row sums {sorted(set(rows.tolist()))}, column sums {sorted(set(cols.tolist()))}",
        )
    if rows[0] == 0:
        raise InvalidArgumentError("assignment", "must have nonzero degrees")
    if require_connected and not is_connected_assignment(A):
        raise InvalidArgumentError(
            "assignment", "the bipartite graph is not connected (pass require_connected=False to accept it)"
        )
    g = BiregularGraph(
        A,
        (v, b, int(rows[0]), int(cols[0])),
        construction,
        None,
        metadata={"require_connected": bool(require_connected)},
    )
    return g
