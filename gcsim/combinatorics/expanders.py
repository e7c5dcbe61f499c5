"""Weighted expander assignments: multigraphs kept with their multiplicities (docs/theory.md §48.1).

The expander codes of Raviv, Tamo, Tandon & Dimakis ("Gradient coding from cyclic MDS codes and
expander graphs", ICML 2018; IEEE Trans. Inf. Theory 66(12), 2020) encode with the normalized
adjacency matrix ``W/d`` of a ``d``-regular graph in which parallel edges and loops count with their
multiplicity.  The 0/1 versions in :mod:`gcsim.combinatorics.baselines` collapse them; the objects
here keep them:

* :func:`weighted_margulis_gabber_galil` -- the Margulis--Gabber--Galil graph on ``Z_m x Z_m``
  (Gabber & Galil 1981): the eight maps ``(x, y) -> (x +- 2y, y)``, ``(x +- (2y+1), y)``,
  ``(x, y +- 2x)``, ``(x, y +- (2x+1))`` (mod m), four maps and their inverses.  ``W[u, v]`` is the
  number of the eight maps sending ``u`` to ``v``: symmetric, every row sum 8, and every eigenvalue
  other than the trivial 8 is at most ``5 sqrt(2)`` in absolute value (Gabber & Galil 1981;
  Hoory, Linial & Wigderson, "Expander graphs and their applications", Bull. AMS 43 (2006),
  Thm 8.1).
* :func:`chordal_cycle` -- Lubotzky's chordal cycle on ``Z_p``, ``p`` prime (Lubotzky, *Discrete
  Groups, Expanding Graphs and Invariant Measures*, Birkhäuser 1994, Thm 4.4.2): the maps
  ``x -> x + 1``, ``x -> x - 1`` and the involution ``x -> x^{-1}`` (``0 -> 0``); ``W[u, v]`` is the
  number of the three maps sending ``u`` to ``v``: symmetric, 3-regular, loops at ``0, 1, p-1``.

Vertices are both the parts and the workers (``(x, y) -> x*m + y`` for MGG): worker ``j`` holds
part ``i`` iff ``W[i, j] > 0``, so ``assignment`` is the support of ``W`` (a worker holds its
neighbours' parts, and its own only when it has a loop).  ``weights`` is ``W`` itself, the matrix
the weighted encoder ``encode(obj, 1, "weighted")`` turns into ``B = W/d``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from .. import _html
from .._validation import check_dense_size, check_int
from ..errors import CatalogueError, GcsimError, ImpossibleParametersError
from .base import CombinatorialObject, require, same_assignment, stored_binary, stored_params
from .baselines import mgg_neighbours
from .fields import is_prime

__all__ = [
    "WeightedGraphAssignment",
    "WeightedMargulisGabberGalil",
    "WeightedMargulisGabberGalilParams",
    "ChordalCycle",
    "ChordalCycleParams",
    "weighted_margulis_gabber_galil",
    "chordal_cycle",
    "chordal_cycle_neighbours",
    "MGG_LAMBDA_BOUND",
]

#: Gabber--Galil's bound on the non-trivial eigenvalues of the 8-regular MGG multigraph: ``5 sqrt(2)``
MGG_LAMBDA_BOUND = 5.0 * math.sqrt(2.0)

#: largest vertex count whose spectrum ``verify()`` computes (a dense symmetric eigensolve, seconds)
_SPECTRUM_LIMIT = 4096


class WeightedMargulisGabberGalilParams(NamedTuple):
    """The side ``m`` of the torus ``Z_m x Z_m``."""

    m: int


class ChordalCycleParams(NamedTuple):
    """The prime ``p`` (number of vertices)."""

    p: int


def _multiplicities(images: np.ndarray) -> np.ndarray:
    """``W[u, v] = #{k : images[u, k] = v}`` as an int64 ``n x n`` matrix."""
    n, d = images.shape
    W = np.zeros((n, n), dtype=np.int64)
    np.add.at(W, (np.repeat(np.arange(n), d), images.ravel()), 1)
    return W


class WeightedGraphAssignment(CombinatorialObject):
    """A ``d``-regular multigraph kept with multiplicities: ``weights`` ``W`` and its support ``assignment``.

    Parameters
    ----------
    weights : array_like
        The ``n x n`` non-negative integer multiplicity matrix ``W`` (symmetric, row sums ``d``).
    params : tuple
        The kind's defining parameters.
    construction : str
        How the graph was built.
    degree : int
        ``d``, the common row sum of ``W``.
    """

    _weights: np.ndarray
    _lambda: float | None
    degree: int

    def __init__(self, weights: np.ndarray, params: tuple, construction: str, degree: int):
        W = np.array(weights, dtype=np.int64)
        super().__init__((W > 0).astype(np.int64), params, construction, {"degree": int(degree)})
        W.setflags(write=False)
        self._set("_weights", W)
        self._set("degree", int(degree))
        self._set("_lambda", None)

    @property
    def weights(self) -> np.ndarray:
        """``W``: ``W[i, j]`` = number of edges (with loops counted per map) joining ``i`` and ``j``; read-only."""
        return self._weights

    def nontrivial_eigenvalue(self) -> float:
        """``λ(G) = max |λ_i|`` over the eigenvalues of ``W`` on ``1^⊥`` (``d`` when ``G`` is disconnected).

        ``W 1 = d 1`` and ``W`` is symmetric, so these are the eigenvalues of ``W - (d/n) J``
        (which has ``0`` on ``1``).  A dense ``eigvalsh``: refused beyond 4096 vertices
        (:class:`gcsim.errors.SizeLimitError`); computed once and kept (the object is immutable).
        """
        if self._lambda is None:
            n = self.num_workers
            check_dense_size("n", n, n, "the spectrum of the weighted adjacency matrix")
            M = self._weights.astype(np.float64) - self.degree / n
            self._set("_lambda", float(np.max(np.abs(np.linalg.eigvalsh(M)))))
        assert self._lambda is not None  # set just above
        return self._lambda

    def _lambda_margin(self) -> float:
        """Backward-error bound on the computed eigenvalues: ``10 n u ‖W‖₂`` with ``‖W‖₂ = d``."""
        return 10.0 * self.num_workers * (np.finfo(np.float64).eps / 2) * 2 * self.degree

    def _verify_weights(self, expected: np.ndarray) -> None:
        """Exact checks shared by the kinds: ``W`` as rebuilt, symmetric, ``d``-regular; ``A = [W > 0]``."""
        W = self._weights
        n = expected.shape[0]
        require(W.shape == (n, n), f"weights must be {n} x {n}, got {W.shape}")
        require(bool(np.all(W >= 0)), "weights must be non-negative multiplicities")
        require(np.array_equal(W, expected), "weights differ from the multiplicities of the defining maps")
        require(np.array_equal(W, W.T), "weights must be symmetric (each map comes with its inverse)")
        require(bool(np.all(W.sum(axis=1) == self.degree)), f"every row of the weights must sum to d = {self.degree}")
        self._check_binary()
        require(np.array_equal(self.assignment, (W > 0).astype(np.int64)), "assignment must be the support of W")

    # -- arrays --------------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """``assignment`` (int8, 0/1) and ``weights`` (int64 multiplicities)."""
        return {"assignment": self.assignment.astype(np.int8), "weights": np.array(self._weights)}

    @classmethod
    def _rebuild_weighted(
        cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any], factory: Any, n_of: Any
    ) -> Any:
        (param,) = stored_params(metadata, 1, cls.kind)
        n = n_of(param)
        if n > 1 << 24:
            raise CatalogueError(f"stored {cls.kind} parameter {param} is too large")
        A = stored_binary(arrays, "assignment", cls.kind, (n, n))
        if "weights" not in arrays:
            raise CatalogueError(f"stored {cls.kind} lacks the array 'weights'")
        W = np.asarray(arrays["weights"])
        if W.dtype.kind not in "iu" or W.shape != (n, n):
            raise CatalogueError(
                f"stored {cls.kind} weights must be an integer {n} x {n} matrix, got {W.dtype} {W.shape}"
            )
        try:
            obj = factory(param)
        except GcsimError as exc:
            raise CatalogueError(f"stored {cls.kind} parameter {param} is not buildable: {exc}") from None
        same_assignment(obj, A, cls.kind)
        if not np.array_equal(obj.weights, W):
            raise CatalogueError(f"stored {cls.kind} weights differ from the ones rebuilt from its parameters")
        return obj

    def _repr_html_(self) -> str:
        """Rich display: params, degree, loops and parallel edges, verification status, a heat map of ``W``."""

        def build() -> str:
            W = self._weights
            return _html.object_html(
                title=type(self).__name__,
                kind=self.kind,
                params=self.params,
                rows=[
                    ("construction", self.construction),
                    ("vertices (parts = workers)", self.num_workers),
                    ("degree d (with multiplicity)", self.degree),
                    ("loops (sum of diagonal)", int(np.trace(W))),
                    ("largest multiplicity", int(W.max(initial=0))),
                ],
                status=_html.verdict(self),
                matrix=W,
                caption="weights W: multiplicity of each edge (loops on the diagonal)",
            )

        return _html.safe_html(self, build)


class WeightedMargulisGabberGalil(WeightedGraphAssignment):
    """The 8-regular MGG multigraph on ``Z_m x Z_m`` with multiplicities; ``params = (m,)``.

    >>> g = weighted_margulis_gabber_galil(3)
    >>> g.weights.sum(axis=1).tolist() == [8] * 9, g.verify()
    (True, True)
    """

    kind = "weighted_margulis_gabber_galil"
    Params = WeightedMargulisGabberGalilParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> WeightedMargulisGabberGalil:
        """Rebuild from ``(m,)`` and compare with the stored assignment and weights."""
        return cls._rebuild_weighted(arrays, metadata, weighted_margulis_gabber_galil, lambda m: m * m)

    def verify(self) -> bool:
        """``W`` = the multiplicities of the eight maps (exact), symmetric, 8-regular, ``A = [W > 0]``;
        and ``λ(G) <= 5 sqrt(2)`` (Gabber--Galil), checked in floating point with the backward-error
        margin ``10 n u d`` of the symmetric eigensolver, for up to 4096 vertices.
        """
        (m,) = self.params
        self._verify_weights(_multiplicities(mgg_neighbours(m)))
        if self.num_workers <= _SPECTRUM_LIMIT:
            lam = self.nontrivial_eigenvalue()
            require(
                lam + self._lambda_margin() <= MGG_LAMBDA_BOUND,
                f"non-trivial eigenvalue {lam:.6g} exceeds the Gabber-Galil bound 5 sqrt(2)",
            )
        return True


class ChordalCycle(WeightedGraphAssignment):
    """Lubotzky's 3-regular chordal cycle on ``Z_p`` with multiplicities; ``params = (p,)``.

    >>> g = chordal_cycle(7)
    >>> g.weights[0].tolist(), g.verify()   # 0 -> 1, 0 -> 6 and the loop 0 -> 0^{-1} = 0
    ([1, 1, 0, 0, 0, 0, 1], True)
    """

    kind = "chordal_cycle"
    Params = ChordalCycleParams

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> ChordalCycle:
        """Rebuild from ``(p,)`` and compare with the stored assignment and weights."""
        return cls._rebuild_weighted(arrays, metadata, chordal_cycle, lambda p: p)

    def verify(self) -> bool:
        """``p`` prime; ``W`` = the multiplicities of ``x±1, x^{-1}`` (exact), symmetric, 3-regular,
        ``A = [W > 0]``; and ``λ(G) < 3`` exactly: the graph is connected (the cycle) and has a loop
        (at 0), so it is not bipartite (docs/theory.md §48.1).  No uniform bound in ``p`` is checked:
        Lubotzky's theorem gives one, with a constant that is not explicit.
        """
        (p,) = self.params
        require(is_prime(p), f"p = {p} must be prime")
        self._verify_weights(_multiplicities(chordal_cycle_neighbours(p)))
        W = self._weights
        require(bool(np.all(W[np.arange(p), (np.arange(p) + 1) % p] > 0)), "the cycle x -> x+1 must be present")
        require(W[0, 0] > 0, "the loop at 0 must be present")
        return True


def weighted_margulis_gabber_galil(m: int) -> WeightedMargulisGabberGalil:
    """The Margulis--Gabber--Galil multigraph on ``Z_m x Z_m``, kept with multiplicities.

    ``W[u, v]`` counts the maps among ``(x +- 2y, y)``, ``(x +- (2y+1), y)``, ``(x, y +- 2x)``,
    ``(x, y +- (2x+1))`` that send ``u = x*m + y`` to ``v``; a fixed point of a map and of its inverse
    gives a loop of weight 2 (the convention under which ``W`` is the operator Gabber and Galil bound).

    Parameters
    ----------
    m : int
        Side of the torus, ``m >= 2``; ``n = m**2`` vertices (parts = workers).

    Returns
    -------
    WeightedMargulisGabberGalil

    Raises
    ------
    InvalidArgumentError
        ``m < 2``.
    SizeLimitError
        ``m**4`` beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`.

    Examples
    --------
    >>> g = weighted_margulis_gabber_galil(5)
    >>> sorted(set(g.weights.sum(axis=1).tolist())), sorted(set(g.loads.tolist()))  # d = 8; 4..8 distinct parts
    ([8], [4, 5, 6, 7, 8])
    >>> round(g.nontrivial_eigenvalue(), 4), round(5 * 2 ** 0.5, 4)
    (5.3254, 7.0711)
    """
    m = check_int("m", m, minimum=2)
    n = m * m
    check_dense_size("m", n, n, f"the weighted Margulis-Gabber-Galil graph on Z_{m} x Z_{m}")
    W = _multiplicities(mgg_neighbours(m))
    return WeightedMargulisGabberGalil(W, (m,), f"Margulis-Gabber-Galil on Z_{m} x Z_{m}, multiplicities kept", 8)


def chordal_cycle_neighbours(p: int) -> np.ndarray:
    """The images of every ``x in Z_p`` under ``x + 1``, ``x - 1`` and ``x^{-1}`` (``0 -> 0``): ``(p, 3)`` int64.

    >>> chordal_cycle_neighbours(7)[3].tolist()   # 3 * 5 = 15 = 1 (mod 7)
    [4, 2, 5]
    """
    p = check_int("p", p, minimum=2)
    x = np.arange(p, dtype=np.int64)
    inverse = np.array([pow(int(v), -1, p) if v else 0 for v in x], dtype=np.int64)
    return np.stack([(x + 1) % p, (x - 1) % p, inverse], axis=1)


def chordal_cycle(p: int) -> ChordalCycle:
    """Lubotzky's chordal cycle on ``Z_p`` with multiplicities: ``x ~ x +- 1`` and ``x ~ x^{-1}``.

    ``W[u, v] = [v = u+1] + [v = u-1] + [v = u^{-1}]`` (``0^{-1} := 0``), so the fixed points
    ``0, 1, p-1`` of the inversion carry a loop of weight 1 and every row sums to 3.

    Parameters
    ----------
    p : int
        A prime, ``p >= 2``; ``n = p`` vertices (parts = workers).

    Raises
    ------
    ImpossibleParametersError
        ``p`` is not prime (condition ``"p prime"``).

    Examples
    --------
    >>> g = chordal_cycle(11)
    >>> g.degree, sorted(set(g.loads.tolist())), g.verify()
    (3, [2, 3], True)
    """
    p = check_int("p", p, minimum=2)
    if not is_prime(p):
        raise ImpossibleParametersError("p prime", f"the chordal cycle needs a prime number of vertices, got p = {p}")
    check_dense_size("p", p, p, f"the chordal cycle graph on Z_{p}")
    W = _multiplicities(chordal_cycle_neighbours(p))
    return ChordalCycle(W, (p,), f"chordal cycle on Z_{p} (x +- 1, x^-1), multiplicities kept", 3)
