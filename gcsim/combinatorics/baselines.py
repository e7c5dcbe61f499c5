"""Baseline assignments (docs/theory.md §30 App. B): repetition schemes and expander graphs.

* :func:`fractional_repetition` -- Tandon, Lei, Dimakis & Karampatziakis,
  "Gradient Coding: Avoiding Stragglers in Distributed Learning", ICML 2017:
  ``n`` workers in ``n/(s+1)`` groups of ``s+1``; the ``n`` parts are split into
  the same groups and every worker holds the ``s+1`` parts of its group, so
  ``A = I_{n/(s+1)} kron J_{s+1}`` (replication = load = ``s+1``).
* :func:`cyclic_repetition` -- worker ``j`` holds the ``ell`` consecutive parts
  ``j, j+1, ..., j+ell-1 (mod num_parts)`` (the support of Tandon et al.'s cyclic
  code when ``num_parts = n``, ``ell = s+1``).
* :func:`random_regular_assignment` -- ``A = Adj + I`` for a seeded random
  ``d``-regular graph (networkx; Steger & Wormald 1999), as in the expander
  codes of Raviv et al. 2020 / Glasgow & Wootters 2021.
* :func:`margulis_gabber_galil` -- the Margulis--Gabber--Galil expander on
  ``Z_m x Z_m`` (Gabber & Galil 1981): ``(x, y)`` is joined to
  ``(x +- 2y, y)``, ``(x +- (2y+1), y)``, ``(x, y +- 2x)``, ``(x, y +- (2x+1))``
  (mod m), an 8-regular multigraph with loops.  gcsim uses the simple 0/1
  assignment ``A = min(1, Adj + I)``: worker ``(x, y)`` holds its own part and
  the parts of its *distinct* neighbours (loops and parallel edges collapse),
  so loads are at most 9 and not all equal (5 to 9 for m >= 5).

Parts and workers are both indexed ``0..n-1`` (``(x, y) -> x*m + y`` for MGG).

Every baseline is fully determined by its parameters (and, for the random regular graph,
its seed), so ``from_arrays`` rebuilds it from them and compares the stored assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_dense_size, check_int
from ..errors import CatalogueError, GcsimError, ImpossibleParametersError
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    stored_binary,
    stored_construction,
    stored_params,
    stored_seed,
)

__all__ = [
    "FractionalRepetition",
    "FractionalRepetitionParams",
    "CyclicRepetition",
    "CyclicRepetitionParams",
    "RandomRegularAssignment",
    "RandomRegularParams",
    "MargulisGabberGalil",
    "MargulisGabberGalilParams",
    "fractional_repetition",
    "cyclic_repetition",
    "random_regular_assignment",
    "margulis_gabber_galil",
    "mgg_neighbours",
]


class FractionalRepetitionParams(NamedTuple):
    """``n`` workers (and parts) tolerating ``s`` stragglers."""

    n: int
    s: int


class CyclicRepetitionParams(NamedTuple):
    """``n`` workers holding ``ell`` consecutive parts each, of ``num_parts`` parts."""

    n: int
    ell: int
    num_parts: int


class RandomRegularParams(NamedTuple):
    """``n`` vertices (workers = parts) of degree ``d``."""

    n: int
    d: int


class MargulisGabberGalilParams(NamedTuple):
    """The side ``m`` of the torus ``Z_m x Z_m``."""

    m: int


def _rebuild(kind: str, stored: np.ndarray, factory: Any, *args: Any) -> Any:
    """``factory(*args)`` if it builds the stored assignment, else :class:`CatalogueError`."""
    try:
        obj = factory(*args)
    except GcsimError as exc:
        raise CatalogueError(f"stored {kind} parameters {args} are not buildable: {exc}") from None
    return same_assignment(obj, stored, kind)


class FractionalRepetition(CombinatorialObject):
    """Fractional repetition assignment (Tandon et al. 2017); ``params = (n, s)``.

    >>> fractional_repetition(6, 1).assignment
    array([[1, 1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0, 0],
           [0, 0, 1, 1, 0, 0],
           [0, 0, 1, 1, 0, 0],
           [0, 0, 0, 0, 1, 1],
           [0, 0, 0, 0, 1, 1]])
    """

    kind = "fractional_repetition"
    Params = FractionalRepetitionParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> FractionalRepetition:
        """Rebuild from ``(n, s)`` and compare with the stored assignment."""
        n, s = stored_params(metadata, 2, cls.kind)
        A = stored_binary(arrays, "assignment", cls.kind, (n, n))
        return _rebuild(cls.kind, A, fractional_repetition, n, s)

    def verify(self) -> bool:
        """``A = I_{n/(s+1)} kron J_{s+1}``, replication = load = ``s+1`` (exact)."""
        self._check_binary()
        n, s = self.params
        g = s + 1
        require(n % g == 0, f"(s+1) | n fails: {g} does not divide {n}")
        group = np.arange(n) // g
        require(
            np.array_equal(self.assignment, (group[:, None] == group[None, :]).astype(np.int64)),
            "assignment must be block diagonal with all-ones (s+1) x (s+1) blocks",
        )
        require(bool(np.all(self.replication == g) and np.all(self.loads == g)), f"replication and load must be {g}")
        return True


class CyclicRepetition(CombinatorialObject):
    """Cyclic repetition assignment; ``params = (n, ell, num_parts)``.

    >>> cyclic_repetition(4, 2).assignment
    array([[1, 0, 0, 1],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """

    kind = "cyclic_repetition"
    Params = CyclicRepetitionParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> CyclicRepetition:
        """Rebuild from ``(n, ell, num_parts)`` and compare with the stored assignment."""
        n, ell, parts = stored_params(metadata, 3, cls.kind)
        A = stored_binary(arrays, "assignment", cls.kind, (parts, n))
        return _rebuild(cls.kind, A, cyclic_repetition, n, ell, parts)

    def verify(self) -> bool:
        """``A[i, j] = 1`` iff ``(i - j) mod num_parts < ell`` (exact); load ``ell``."""
        self._check_binary()
        n, ell, parts = self.params
        require(self.assignment.shape == (parts, n), f"assignment must be {parts} x {n}")
        diff = (np.arange(parts)[:, None] - np.arange(n)[None, :]) % parts
        require(
            np.array_equal(self.assignment, (diff < ell).astype(np.int64)),
            "worker j must hold exactly the parts j..j+ell-1 (mod num_parts)",
        )
        require(bool(np.all(self.loads == ell)), f"every worker must hold ell = {ell} parts")
        return True


class RandomRegularAssignment(CombinatorialObject):
    """``A = Adj + I`` of a random ``d``-regular graph; ``params = (n, d)``, attribute ``seed``."""

    kind = "random_regular"
    Params = RandomRegularParams
    seed: int

    def __init__(self, assignment, params, construction, seed: int):
        super().__init__(assignment, params, construction, {"seed": seed})
        self._set("seed", seed)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> RandomRegularAssignment:
        """Rebuild from ``(n, d)`` and the recorded seed (the seed claim is re-derived)."""
        n, d = stored_params(metadata, 2, cls.kind)
        A = stored_binary(arrays, "assignment", cls.kind, (n, n))
        seed = stored_seed(metadata, cls.kind)
        if seed is None:
            raise CatalogueError(f"stored {cls.kind} lacks its seed")
        obj = _rebuild(cls.kind, A, random_regular_assignment, n, d, seed)
        if stored_construction(metadata) != obj.construction:
            raise CatalogueError(
                f"stored {cls.kind} construction {stored_construction(metadata)!r} differs from {obj.construction!r}"
            )
        return obj

    def verify(self) -> bool:
        """``A - I`` is a symmetric 0/1 matrix with zero diagonal and row sums ``d`` (exact)."""
        self._check_binary()
        n, d = self.params
        A = self.assignment
        require(A.shape == (n, n), f"assignment must be {n} x {n}")
        require(bool(np.all(np.diag(A) == 1)), "every worker must hold its own part (A = Adj + I)")
        adj = A - np.eye(n, dtype=np.int64)
        require(np.array_equal(adj, adj.T), "the graph must be undirected (A symmetric)")
        require(bool(np.all(adj.sum(axis=1) == d)), f"the graph must be {d}-regular")
        return True


class MargulisGabberGalil(CombinatorialObject):
    """``A = min(1, Adj + I)`` of the MGG expander on ``Z_m x Z_m``; ``params = (m,)``."""

    kind = "margulis_gabber_galil"
    Params = MargulisGabberGalilParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> MargulisGabberGalil:
        """Rebuild from ``(m,)`` and compare with the stored assignment."""
        (m,) = stored_params(metadata, 1, cls.kind)
        A = stored_binary(arrays, "assignment", cls.kind, (m * m, m * m))
        return _rebuild(cls.kind, A, margulis_gabber_galil, m)

    def verify(self) -> bool:
        """Recompute the MGG neighbourhoods and compare exactly; ``A`` symmetric."""
        self._check_binary()
        (m,) = self.params
        n = m * m
        A = self.assignment
        require(A.shape == (n, n), f"assignment must be {n} x {n}")
        expected = np.eye(n, dtype=np.int64)
        expected[np.repeat(np.arange(n), 8), mgg_neighbours(m).ravel()] = 1
        require(np.array_equal(A, expected), "assignment must be min(1, Adj + I) of the MGG graph")
        require(np.array_equal(A, A.T), "assignment must be symmetric")
        return True


def fractional_repetition(n: int, s: int) -> FractionalRepetition:
    """Fractional repetition scheme of Tandon et al. (2017) tolerating ``s`` stragglers.

    Parameters
    ----------
    n : int
        Number of workers and of parts (``N = n``).
    s : int
        Stragglers tolerated, ``0 <= s <= n-1``; needs ``(s+1) | n``.

    Raises
    ------
    ImpossibleParametersError
        If ``s+1`` does not divide ``n`` (condition ``"(s+1) | n"``).

    >>> fractional_repetition(6, 2).params, fractional_repetition(6, 2).verify()
    (FractionalRepetitionParams(n=6, s=2), True)
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    check_dense_size("n", n, n, "the fractional repetition assignment")
    g = s + 1
    if n % g:
        raise ImpossibleParametersError("(s+1) | n", f"n = {n} workers cannot be split into groups of s+1 = {g}")
    group = np.arange(n) // g
    A = (group[:, None] == group[None, :]).astype(np.int64)
    return FractionalRepetition(A, (n, s), f"fractional repetition, {n // g} groups of {g}")


def cyclic_repetition(n: int, ell: int, num_parts: int | None = None) -> CyclicRepetition:
    """Cyclic repetition: worker ``j`` holds parts ``j, ..., j+ell-1 (mod num_parts)``.

    Parameters
    ----------
    n : int
        Number of workers.
    ell : int
        Parts per worker, ``1 <= ell <= num_parts``.
    num_parts : int, optional
        Number of parts (default ``n``).  For ``num_parts = n`` every part has
        replication ``ell``; otherwise part ``i`` is held by the workers
        ``j < n`` with ``(i - j) mod num_parts < ell``.

    Examples
    --------
    >>> cyclic_repetition(5, 3).replication.tolist()
    [3, 3, 3, 3, 3]
    """
    n = check_int("n", n, minimum=1)
    parts = n if num_parts is None else check_int("num_parts", num_parts, minimum=1)
    ell = check_int("ell", ell, minimum=1, maximum=parts)
    check_dense_size("n", parts, n, "the cyclic repetition assignment")
    diff = (np.arange(parts)[:, None] - np.arange(n)[None, :]) % parts
    A = (diff < ell).astype(np.int64)
    return CyclicRepetition(A, (n, ell, parts), f"cyclic repetition, {ell} consecutive parts of {parts}")


def random_regular_assignment(n: int, d: int, seed: int = 0) -> RandomRegularAssignment:
    """``A = Adj + I`` for a seeded random ``d``-regular graph on ``n`` vertices.

    The graph is ``networkx.random_regular_graph(d, n, seed)`` (it need not be
    connected for small ``d``).  Parts = workers = vertices; worker ``j`` holds
    its own part and its ``d`` neighbours' parts (replication = load = ``d+1``).

    Raises
    ------
    ImpossibleParametersError
        ``n d`` odd (condition ``"n d even"``) or ``d >= n``.

    >>> g = random_regular_assignment(10, 3, seed=1)
    >>> set(g.loads.tolist()), g.verify()
    ({4}, True)
    """
    import networkx as nx

    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=0)
    seed = check_int("seed", seed, minimum=0)
    if d >= n:
        raise ImpossibleParametersError(
            "d < n", f"a simple {d}-regular graph needs more than {d} vertices, got n = {n}"
        )
    if (n * d) % 2:
        raise ImpossibleParametersError("n d even", f"n*d = {n * d} is odd: no {d}-regular graph on {n} vertices")
    check_dense_size("n", n, n, "the random regular assignment")
    G = nx.random_regular_graph(d, n, seed=seed)
    A = np.eye(n, dtype=np.int64)
    if G.number_of_edges():
        e = np.asarray(list(G.edges()), dtype=np.int64)
        A[e[:, 0], e[:, 1]] = 1
        A[e[:, 1], e[:, 0]] = 1
    return RandomRegularAssignment(A, (n, d), f"random {d}-regular graph + I (networkx, seed={seed})", seed)


def mgg_neighbours(m: int) -> np.ndarray:
    """The 8 MGG neighbours (with multiplicity) of every vertex ``x*m + y`` of ``Z_m x Z_m``.

    Returns an ``(m*m, 8)`` int64 array: images under ``(x +- 2y, y)``,
    ``(x +- (2y+1), y)``, ``(x, y +- 2x)``, ``(x, y +- (2x+1))``.

    >>> mgg_neighbours(3)[1].tolist()   # vertex (0, 1)
    [7, 4, 1, 1, 1, 1, 2, 0]
    """
    m = check_int("m", m, minimum=1)
    check_dense_size("m", m * m, 8, f"the neighbours of the Margulis-Gabber-Galil graph on Z_{m} x Z_{m}")
    x, y = np.divmod(np.arange(m * m, dtype=np.int64), m)
    nx_ = np.stack([x + 2 * y, x - 2 * y, x + 2 * y + 1, x - 2 * y - 1, x, x, x, x], axis=1) % m
    ny_ = np.stack([y, y, y, y, y + 2 * x, y - 2 * x, y + 2 * x + 1, y - 2 * x - 1], axis=1) % m
    return nx_ * m + ny_


def margulis_gabber_galil(m: int) -> MargulisGabberGalil:
    """Assignment ``A = min(1, Adj + I)`` of the Margulis--Gabber--Galil graph on ``Z_m x Z_m``.

    ``n = N = m**2``; see the module docstring for the edges and for how the
    8-regular multigraph becomes a 0/1 assignment.

    >>> g = margulis_gabber_galil(5)
    >>> g.assignment.shape, int(g.loads.max()), g.verify()
    ((25, 25), 9, True)
    """
    m = check_int("m", m, minimum=2)
    n = m * m
    check_dense_size("m", n, n, f"the Margulis-Gabber-Galil assignment on Z_{m} x Z_{m}")
    A = np.eye(n, dtype=np.int64)
    A[np.repeat(np.arange(n), 8), mgg_neighbours(m).ravel()] = 1
    return MargulisGabberGalil(A, (m,), f"Margulis-Gabber-Galil on Z_{m} x Z_{m}, min(1, Adj + I)")
