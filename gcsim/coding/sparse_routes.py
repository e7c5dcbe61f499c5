"""RD encoders kept sparse on any sparse assignment, and sparse strongly regular graphs (docs/theory.md §44).

The sparse route's evaluator -- certified per-pattern errors without a dense ``B`` (Theorem 44.2),
:class:`SparseRDContext`, the lower bounds on ``λ_min(SΓS)`` and :func:`sparse_context` -- lives in
:mod:`gcsim.coding.sparse_evaluator` (its names are importable from here too).  This module holds
what is built on it: :func:`encode_sparse` (an RD encoder kept as a sparse incidence,
:class:`SparseRD`, for SRGs, coset and bi-regular graphs, designs) and sparse strongly regular graphs
at ``n ≈ 10⁴`` that no dense matrix holds: :func:`lattice_graph_sparse` (``L(100)``: 10,000
workers), :func:`triangular_graph_sparse` (``T(141)``: 9,870 workers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeGuard

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_bool, check_dense_size, check_int, check_real, layout_version_problem
from ..combinatorics.srg_graph import SRGParams
from ..errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError
from ..limits import check_entries
from .encoders import get_encoder
from .sparse_evaluator import (
    MAX_ITERATIONS,
    SPARSE_ATOL,
    SPARSE_MAX_DENSITY,
    SPARSE_MIN_N,
    SPARSE_RTOL,
    SparseRDContext,
    _dense_fallback,
    _gamma,
    gram_lower_cholesky,
    sparse_context,
    srg_gram_lower,
)
from .structured import StructuredRD, _as_incidence, check_pair_gram

__all__ = [
    "SparseRDContext",
    "SparseRD",
    "SparseSRG",
    "SPARSE_SRG_KIND",
    "encode_sparse",
    "sparse_context",
    "srg_gram_lower",
    "gram_lower_cholesky",
    "lattice_graph_sparse",
    "triangular_graph_sparse",
    "SPARSE_RTOL",
    "SPARSE_ATOL",
    "MAX_ITERATIONS",
    "SPARSE_MIN_N",
    "SPARSE_MAX_DENSITY",
]


# ----------------------------------------------------------------------------------------------
# sparse strongly regular graphs at n ≈ 10⁴
# ----------------------------------------------------------------------------------------------


#: Catalogue kind of a :class:`SparseSRG` bundle (the adjacency in CSR index form, never ``v x v``).
SPARSE_SRG_KIND = "sparse_srg"
#: Version of that bundle's layout (``metadata["sparse_srg_format_version"]``).
SPARSE_SRG_BUNDLE_VERSION = 1


def _srg_bad(msg: str) -> CatalogueError:
    return CatalogueError(f"sparse SRG: {msg}")


def _four_ints(value: Any) -> TypeGuard[list[int]]:
    """Whether a stored value is a list of four integers (SRG parameters; booleans are not integers here)."""
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    )


class SparseSRG:
    """A strongly regular graph kept as a sparse adjacency: no ``v x v`` array (theory §20, §44).

    ``incidence`` is the assignment ``Adj + I`` (``closed``) or ``Adj`` as ``scipy.sparse`` CSC;
    :meth:`verify` checks ``Adj² = kI + λAdj + μ(J − I − Adj)`` exactly, one block of rows at a
    time.  Built by :func:`lattice_graph_sparse` and :func:`triangular_graph_sparse`.  Immutable
    once built.

    Its catalogue bundle (kind ``"sparse_srg"``, :meth:`to_arrays`) holds the adjacency in CSR
    index form, ``v k + v + 1`` integers; :meth:`from_arrays` trusts none of it (theory §44.4):
    the parameters must be feasible, every index in range, strictly increasing along its row and
    off the diagonal, every row of length ``k``, the pattern symmetric (its sorted pairs equal
    their transposes), and then the SRG identity is checked exactly by :meth:`verify`.

    Examples
    --------
    >>> g = lattice_graph_sparse(3)
    >>> g.params, g.kind, sorted(g.to_arrays())
    (SRGParams(v=9, k=4, lam=1, mu=2), 'sparse_srg', ['adjacency_indices', 'adjacency_indptr'])
    >>> back = SparseSRG.from_arrays(g.to_arrays(), g.bundle_metadata())
    >>> back.params == g.params, (back.incidence != g.incidence).nnz, back.closed
    (True, 0, True)
    """

    kind: ClassVar[str] = SPARSE_SRG_KIND
    Params = SRGParams
    adjacency: sp.csr_matrix
    incidence: sp.csc_matrix
    params: SRGParams
    construction: str
    closed: bool

    def __init__(self, adjacency: sp.spmatrix, params: Sequence[int], construction: str, closed: bool):
        closed = check_bool("closed", closed)
        if len(tuple(params)) != 4:
            raise InvalidArgumentError("params", f"must be (v, k, lam, mu), got {params!r:.80}")
        adj = sp.csr_matrix(adjacency, dtype=np.int64, copy=True)
        adj.sum_duplicates()  # canonical: sorted indices, no duplicates
        set_ = object.__setattr__
        set_(self, "adjacency", adj)
        set_(self, "params", SRGParams(*(int(p) for p in params)))
        set_(self, "construction", str(construction))
        set_(self, "closed", closed)
        inc = adj + sp.identity(adj.shape[0], dtype=np.int64, format="csr") if closed else adj
        set_(self, "incidence", sp.csc_matrix(inc, dtype=np.int64))
        set_(self, "_frozen", True)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"SparseSRG is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SparseSRG is immutable (cannot delete {name!r})")

    @property
    def v(self) -> int:
        """Number of vertices (workers and parts)."""
        return self.params[0]

    def verify(self) -> bool:
        """Exact sparse check of the SRG identity, symmetry, zero diagonal, degrees and the assignment; or raises."""
        v, k, lam, mu = self.params
        a = self.adjacency
        if a.shape != (v, v):
            raise VerificationError(f"{self.construction}: adjacency has shape {a.shape}, expected ({v}, {v})")
        if a.nnz and not np.all(a.data == 1):
            raise VerificationError(f"{self.construction}: adjacency must be 0/1")
        if (a != a.T).nnz or a.diagonal().any():
            raise VerificationError(f"{self.construction}: adjacency must be symmetric with zero diagonal")
        if not np.all(np.diff(a.indptr) == k):
            raise VerificationError(f"{self.construction}: every degree must be k = {k}")
        want = a + sp.identity(v, dtype=np.int64, format="csr") if self.closed else a
        if self.incidence.shape != (v, v) or (self.incidence != want).nnz:
            raise VerificationError(
                f"{self.construction}: the incidence is not the assignment {'Adj + I' if self.closed else 'Adj'}"
            )
        step = max(1, min(v, 2**22 // max(v, 1)))
        for s0 in range(0, v, step):
            sq = (a[s0 : s0 + step] @ a).toarray()
            rows = np.arange(sq.shape[0])
            adj_rows = a[s0 : s0 + step].toarray()
            expect = np.where(adj_rows == 1, lam, mu)
            expect[rows, s0 + rows] = k
            if not np.array_equal(sq, expect):
                i, j = np.argwhere(sq != expect)[0]
                raise VerificationError(
                    f"{self.construction}: (Adj²)[{s0 + int(i)}, {int(j)}] = {int(sq[i, j])}, "
                    f"expected {int(expect[i, j])} (Adj² != kI + λAdj + μ(J − I − Adj))"
                )
        return True

    def gram_split(self) -> tuple[sp.csr_matrix, float]:
        """``(S, μ)`` with ``AᵀA = S + μJ`` and ``S`` as sparse as ``Adj + I`` (Lemma 44.1).

        Closed: ``(Adj + I)² = (k + 1 − μ)I + (λ + 2 − μ)Adj + μJ``; open: ``Adj² = (k − μ)I + (λ − μ)Adj + μJ``.
        """
        return _srg_split(self.adjacency, self.params, self.closed)

    def gram_lower(self) -> float:
        """Proved lower bound on ``λ_min(AᵀA)`` of the assignment (:func:`srg_gram_lower`)."""
        v, k, lam, mu = self.params
        return srg_gram_lower(v, k, lam, mu, self.closed)

    # -- the catalogue bundle ---------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The adjacency in CSR index form: ``adjacency_indices`` (int32, or int64 from ``2^31``
        vertices; sorted along each row, no duplicates) and ``adjacency_indptr`` (int64)."""
        a = self.adjacency
        wide = self.v >= 2**31
        return {
            "adjacency_indices": np.array(a.indices, dtype=np.int64 if wide else np.int32),
            "adjacency_indptr": np.array(a.indptr, dtype=np.int64),
        }

    def bundle_metadata(self) -> dict[str, Any]:
        """The parameters ``[v, k, λ, μ]``, the construction, ``closed`` and the layout's version."""
        return {
            "params": list(self.params),
            "construction": self.construction,
            "closed": self.closed,
            "sparse_srg_format_version": SPARSE_SRG_BUNDLE_VERSION,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], metadata: Mapping[str, Any]) -> SparseSRG:
        """Rebuild the graph from :meth:`to_arrays`, checking everything; CatalogueError naming the first failure.

        In order: the metadata (format version, four integer parameters satisfying
        ``k(k − 1 − λ) = (v − k − 1)μ``, ``closed``), the size ``v k`` against
        :data:`gcsim.limits.MAX_SPARSE_ENTRIES` (before any array is converted), the arrays'
        shapes and dtypes, the CSR structure (``indptr`` steps of exactly ``k``, indices in
        ``range(v)``, strictly increasing along each row, no self-loop), symmetry (the sorted
        pair keys ``i v + j`` equal those of the transposed pairs) and, last, :meth:`verify`
        (the SRG identity in exact integer arithmetic).
        """
        if not isinstance(metadata, Mapping):
            raise _srg_bad(f"metadata must be an object, got {type(metadata).__name__}")
        problem = layout_version_problem(metadata, "sparse_srg_format_version", SPARSE_SRG_BUNDLE_VERSION)
        if problem:
            raise _srg_bad(problem)
        params = metadata.get("params")
        if not _four_ints(params):
            raise _srg_bad(f"metadata 'params' must be four integers [v, k, λ, μ], got {params!r:.80}")
        v, k, lam, mu = params
        if not (v >= 2 and 1 <= k < v and 0 <= lam < k and 0 <= mu <= k):
            raise _srg_bad(
                f"params {params} are not those of a strongly regular graph (need 0 <= λ < k < v, 0 <= μ <= k)"
            )
        if k * (k - 1 - lam) != (v - k - 1) * mu:  # two-step walks from a vertex, counted twice (BvM §1.1)
            raise _srg_bad(
                f"params {params} are infeasible: k(k − 1 − λ) = {k * (k - 1 - lam)} != "
                f"(v − k − 1)μ = {(v - k - 1) * mu}"
            )
        closed = metadata.get("closed")
        if not isinstance(closed, bool):
            raise _srg_bad(f"metadata 'closed' must be true or false, got {closed!r:.40}")
        construction = metadata.get("construction")
        if not isinstance(construction, str):
            raise _srg_bad(f"metadata 'construction' must be a string, got {type(construction).__name__}")
        nnz = v * k
        try:
            check_entries(
                "params", (v, k), "the adjacency of a sparse SRG (v k entries)", limit_name="MAX_SPARSE_ENTRIES"
            )
        except SizeLimitError as exc:
            raise _srg_bad(str(exc)) from None
        for name in ("adjacency_indices", "adjacency_indptr"):
            if name not in arrays:
                raise _srg_bad(f"array {name!r} is missing")
        ind, ptr = np.asarray(arrays["adjacency_indices"]), np.asarray(arrays["adjacency_indptr"])
        for name, arr, shape in (("adjacency_indices", ind, (nnz,)), ("adjacency_indptr", ptr, (v + 1,))):
            if arr.shape != shape or arr.dtype.kind not in "iu":
                raise _srg_bad(
                    f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected integers of shape {shape} "
                    f"(v = {v} vertices of degree k = {k})"
                )
        ptr = ptr.astype(np.int64)
        ind = ind.astype(np.int64)
        steps = np.diff(ptr)
        if ptr[0] != 0 or np.any(steps != k):
            i = int(np.flatnonzero(steps != k)[0]) if np.any(steps != k) else 0
            raise _srg_bad(
                f"adjacency_indptr gives vertex {i} {int(steps[i])} neighbours (starts at {int(ptr[0])}); every "
                f"vertex must have degree k = {k}"
            )
        if ind.min() < 0 or ind.max() >= v:
            j = int(np.flatnonzero((ind < 0) | (ind >= v))[0])
            raise _srg_bad(f"adjacency index {j} is {int(ind[j])}, outside range({v})")
        row = np.repeat(np.arange(v, dtype=np.int64), k)
        unsorted = np.flatnonzero((row[1:] == row[:-1]) & (np.diff(ind) <= 0))
        if unsorted.size:
            j = int(unsorted[0])
            raise _srg_bad(
                f"row {int(row[j])} of the adjacency lists vertex {int(ind[j + 1])} after vertex {int(ind[j])} "
                "(indices must be strictly increasing: sorted, no duplicates)"
            )
        loops = np.flatnonzero(ind == row)
        if loops.size:
            raise _srg_bad(f"vertex {int(row[loops[0]])} is adjacent to itself (a self-loop)")
        keys = row * v + ind  # sorted: rows ascend, indices strictly increase along a row
        flipped = np.sort(ind * v + row)
        odd = np.flatnonzero(keys != flipped)
        if odd.size:
            i, j = divmod(int(keys[odd[0]]), v)
            i2, j2 = divmod(int(flipped[odd[0]]), v)
            first = (i, j) if keys[odd[0]] < flipped[odd[0]] else (j2, i2)
            raise _srg_bad(f"the adjacency is not symmetric: it holds the edge {first} but not {first[::-1]}")
        adj = sp.csr_matrix((np.ones(nnz, dtype=np.int64), ind, ptr), shape=(v, v))
        graph = cls(adj, (v, k, lam, mu), construction, closed)
        try:
            graph.verify()  # the SRG identity, exactly (one implementation: SparseSRG.verify)
        except VerificationError as exc:
            raise _srg_bad(f"the stored graph is not an SRG{tuple(params)}: {exc}") from None
        return graph

    def __repr__(self) -> str:
        return f"SparseSRG(params={tuple(self.params)}, construction={self.construction!r}, closed={self.closed})"


def _srg_split(adjacency: Any, params: tuple[int, ...], closed: bool) -> tuple[sp.csr_matrix, float]:
    v, k, lam, mu = (int(p) for p in params)
    adj = sp.csr_matrix(adjacency, dtype=np.int64)
    eye = sp.identity(v, dtype=np.int64, format="csr")
    if closed:
        return sp.csr_matrix((k + 1 - mu) * eye + (lam + 2 - mu) * adj), float(mu)
    return sp.csr_matrix((k - mu) * eye + (lam - mu) * adj), float(mu)


def _from_pairs(v: int, rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
    keep = rows != cols
    M = sp.coo_matrix((np.ones(int(keep.sum()), dtype=np.int64), (rows[keep], cols[keep])), shape=(v, v)).tocsr()
    M.sum_duplicates()
    M.data[:] = 1
    return M


def lattice_graph_sparse(q: int, *, closed: bool = True) -> SparseSRG:
    """Lattice (rook's) graph ``L(q) = K_q x K_q`` as a sparse SRG(q², 2(q − 1), q − 2, 2).

    Vertex ``(i, j)`` is ``i q + j``, adjacent to the other cells of its row and column (BvM
    §1.1.6; the same graph as :func:`gcsim.combinatorics.lattice_graph`).  ``O(q³)`` memory.

    Examples
    --------
    >>> g = lattice_graph_sparse(4)
    >>> tuple(g.params), g.incidence.nnz, g.verify()
    ((16, 6, 2, 2), 112, True)
    """
    closed = check_bool("closed", closed)
    q = check_int("q", q, minimum=2)
    limits.check_entries(
        "q", (q * q, 2 * q), "the stored adjacency (q^2 vertices x 2q)", limit_name="MAX_SPARSE_ENTRIES"
    )
    v = q * q
    x = np.arange(v)
    i, j = x // q, x % q
    t = np.arange(q)
    rows = np.concatenate([np.repeat(x, q), np.repeat(x, q)])
    cols = np.concatenate([(i[:, None] * q + t[None, :]).ravel(), (t[None, :] * q + j[:, None]).ravel()])
    adj = _from_pairs(v, rows, cols)
    return SparseSRG(adj, (v, 2 * (q - 1), q - 2, 2), f"lattice graph L({q}) (sparse)", closed)


def triangular_graph_sparse(n: int, *, closed: bool = True) -> SparseSRG:
    """Triangular graph ``T(n) = J(n, 2)`` as a sparse SRG(n(n − 1)/2, 2(n − 2), n − 2, 4).

    Vertices are the pairs ``i < j`` in lexicographic order, adjacent iff they meet (BvM §1.1.7;
    the same graph as :func:`gcsim.combinatorics.triangular_graph`).

    Examples
    --------
    >>> g = triangular_graph_sparse(6)
    >>> tuple(g.params), g.verify()
    ((15, 8, 4, 4), True)
    """
    closed = check_bool("closed", closed)
    n = check_int("n", n, minimum=4)
    limits.check_entries(
        "n", (n * (n - 1) // 2, 2 * n), "the stored adjacency (n(n-1)/2 vertices x 2n)", limit_name="MAX_SPARSE_ENTRIES"
    )
    iu, ju = np.triu_indices(n, 1)
    v = iu.size
    index = np.full((n, n), -1, dtype=np.int64)
    index[iu, ju] = np.arange(v)
    index[ju, iu] = np.arange(v)
    rows, cols = [], []
    for end in (iu, ju):  # pairs through either end of each pair
        nb = index[end]  # (v, n): the pair {end, t}; -1 at t = end
        r = np.repeat(np.arange(v), n)
        c = nb.ravel()
        ok = c >= 0
        rows.append(r[ok])
        cols.append(c[ok])
    adj = _from_pairs(v, np.concatenate(rows), np.concatenate(cols))
    return SparseSRG(adj, (v, 2 * (n - 2), n - 2, 4), f"triangular graph T({n}) (sparse)", closed)


# ----------------------------------------------------------------------------------------------
# the encoder and the recognition of dense schemes
# ----------------------------------------------------------------------------------------------


class SparseRD(StructuredRD):
    """RD(ε) encoder on any sparse assignment, evaluated by the sparse route (theory §44).

    Build it with :func:`encode_sparse`.  The same attributes as
    :class:`~gcsim.coding.structured.StructuredRD` (``incidence``, ``diagonals``, ``B`` and
    ``assignment`` on request); ``context`` is a :class:`SparseRDContext`.  Its bundle (layout
    ``"sparse"`` of the ``"structured_scheme"`` kind) names where the bound ``c`` comes from
    (``lower``: an SRG's parameters, ``AᵀA = aI + λJ`` or the Cholesky certificate), never the
    number: :meth:`from_arrays` computes ``c`` again from the stored incidence (the SRG identity
    checked exactly first) and the diagonals.

    Examples
    --------
    >>> enc = encode_sparse(lattice_graph_sparse(4), 2, seed=1)
    >>> enc.bundle_metadata()["lower"]
    {'kind': 'srg', 'params': [16, 6, 2, 2], 'closed': True}
    >>> back = SparseRD.from_arrays(enc.to_arrays(), enc.bundle_metadata())
    >>> type(back).__name__, back.context.lower == enc.context.lower, back.context.source
    ('SparseRD', True, 'SRG(16, 6, 2, 2) spectrum')
    """

    layout = "sparse"

    def __init__(
        self,
        incidence: sp.csc_matrix,
        D: np.ndarray,
        lower: float,
        source: str,
        options: dict[str, Any],
        fallback: bool = True,
        gram: tuple[Any, float] | None = None,
    ):
        fallback = check_bool("fallback", fallback)
        self._set_encoder(incidence, D, options)
        self.fallback = fallback
        fb = _dense_fallback(self) if fallback and self._dense_fits() else None
        self.context: SparseRDContext = SparseRDContext(incidence, self.diagonals, lower, source, fb, gram)

    def _dense_fits(self) -> bool:
        return self.m * self.num_parts * self.n <= limits.MAX_DENSE_ENTRIES

    def verify(self) -> bool:
        """0/1 incidence and finite ``(m, n)`` diagonals (the bound ``c`` is checked where it is made)."""
        S = self.incidence
        if S.nnz and not np.all(S.data == 1):
            raise VerificationError("SparseRD.incidence: not a 0/1 matrix")
        self._check_diagonals()
        return True

    def _certificate(self) -> dict[str, Any]:
        """``lower``: where ``c`` comes from (from :attr:`SparseRDContext.source`), and ``fallback``."""
        source = self.context.source
        hit = _SRG_SOURCE.fullmatch(source)
        lower: dict[str, Any]
        if hit is not None:
            closed = bool(self.num_parts == self.n and np.all(self.incidence.diagonal() == 1))
            lower = {"kind": "srg", "params": [int(x) for x in hit.groups()], "closed": closed}
        elif _PAIR_SOURCE.fullmatch(source):
            lower = {"kind": "pair_gram"}
        elif source == _CHOLESKY_SOURCE:
            lower = {"kind": "cholesky"}
        else:
            raise InvalidArgumentError("source", f"a SparseRD bound from {source!r} has no bundle form")
        return {"lower": lower, "fallback": self.fallback}

    @classmethod
    def _rebuild(cls, inc: sp.csc_matrix, D: np.ndarray, options: dict[str, Any], metadata: Any) -> SparseRD:
        """The sparse layout: the bound ``c`` of Theorem 44.2 derived again from the incidence (Lemmas 44.3, 44.4)."""

        def bad(msg: str) -> CatalogueError:
            return CatalogueError(f"structured scheme (sparse): {msg}")

        fallback = metadata.get("fallback")
        if not isinstance(fallback, bool):
            raise bad(f"metadata 'fallback' must be true or false, got {fallback!r:.40}")
        cert = metadata.get("lower")
        kind = cert.get("kind") if isinstance(cert, dict) else None
        N, n = inc.shape
        gram: tuple[Any, float] | None = None
        try:
            if kind == "srg":
                params, closed = cert.get("params"), cert.get("closed")
                if not _four_ints(params) or not isinstance(closed, bool):
                    raise bad(f"metadata 'lower' must give four integer SRG parameters and closed, got {cert!r:.80}")
                if params[0] != N or N != n:
                    raise bad(f"SRG{tuple(params)} does not fit a {N} x {n} incidence")
                adj = sp.csr_matrix(inc, dtype=np.int64)
                if closed:
                    if not np.all(adj.diagonal() == 1):
                        raise bad("closed SRG (A = Adj + I): the incidence's diagonal is not all 1")
                    adj = adj - sp.identity(n, dtype=np.int64, format="csr")
                    adj.eliminate_zeros()
                graph = SparseSRG(adj, tuple(params), f"stored SRG{tuple(params)}", closed)
                graph.verify()  # exact: the identity the spectrum, hence c, rests on
                lower = _scaled_lower(graph.gram_lower(), D.T)
                source, gram = f"SRG{tuple(params)} spectrum", graph.gram_split()
            elif kind == "pair_gram":
                k, lam = check_pair_gram(inc, "incidence")
                lower, source = _scaled_lower(float(k - lam), D.T), f"AᵀA = {k - lam}I + {lam}J"
                gram = (sp.identity(n, format="csr") * (k - lam), float(lam))
            elif kind == "cholesky":
                lower, source = gram_lower_cholesky(inc, D.T), _CHOLESKY_SOURCE
            else:
                raise bad(f"metadata 'lower' names no known bound (srg, pair_gram, cholesky): {cert!r:.80}")
        except (VerificationError, SizeLimitError) as exc:
            raise bad(f"the lower bound c ({kind}) cannot be derived again: {exc}") from None
        if not lower > 0:
            raise bad(f"the {source} proves no c > 0 for these diagonals (theory §44)")
        return cls(inc, D, lower, source, options, fallback, gram)

    def __repr__(self) -> str:
        c = self.context
        return (
            f"SparseRD(num_parts={self.num_parts}, n={self.n}, m={self.m}, lower={c.lower:.3g} ({c.source}), "
            f"options={dict(self.options)})"
        )


_SRG_SOURCE = re.compile(r"SRG\((\d+), (\d+), (\d+), (\d+)\) spectrum")
_PAIR_SOURCE = re.compile(r"AᵀA = \d+I \+ \d+J")
_CHOLESKY_SOURCE = "Cholesky certificate"


def _algebraic_lower(design: Any, A: sp.csc_matrix) -> tuple[float, str, tuple[Any, float] | None] | None:
    """``λ_min(AᵀA)`` lower bound, its source and the split ``AᵀA = S + μJ``, from the object's algebra, or None."""
    params = getattr(design, "params", None)
    srg = isinstance(design, SparseSRG) or getattr(design, "kind", None) == "srg"
    if srg and params is not None and len(tuple(params)) == 4:
        design.verify()  # exact: the identity the bound rests on
        closed = bool(getattr(design, "closed", True))
        v, k, lam, mu = (int(x) for x in params)
        split = _srg_split(design.adjacency, (v, k, lam, mu), closed)
        return srg_gram_lower(v, k, lam, mu, closed), f"SRG{(v, k, lam, mu)} spectrum", split
    try:
        k, lam = check_pair_gram(A, "design")
    except VerificationError:
        return None
    n = A.shape[1]
    return float(k - lam), f"AᵀA = {k - lam}I + {lam}J", (sp.identity(n, format="csr") * (k - lam), float(lam))


def _scaled_lower(g: float, U: np.ndarray) -> float:
    """``c = g min_j s_j² ‖u_j‖²`` over ``u_j ≠ 0`` (Lemma 44.3), rounded down."""
    norms = np.linalg.norm(U, axis=1)
    nz = norms > 0
    if not nz.any():
        return float("inf")
    s = 1.0 / norms[nz]
    ratio = float(np.min((s * s) * np.sum(U[nz] ** 2, axis=1)))
    return g * ratio * (1.0 - 2 * _gamma(U.shape[1] + 6))


def encode_sparse(
    design: Any,
    m: int,
    *,
    eps: float = 0.0,
    seed: int = 0,
    dist: str = "rademacher",
    points: int | None = None,
    fallback: bool = True,
) -> SparseRD:
    """RD(ε) encoder of a sparse assignment, evaluated by the certified sparse route (theory §44).

    The diagonals are those of ``gcsim.coding.encode(design, m, "rd", eps=eps, seed=seed, dist=dist)``
    (same generator, same order).  The bound ``c`` of Theorem 44.2 comes from the object's algebra
    when it has one (a strongly regular graph: its spectrum, after an exact ``verify()``; an
    assignment with ``AᵀA = aI + λJ``: ``a``), else from a Cholesky certificate
    (:func:`gram_lower_cholesky`, needs ``n² <= MAX_DENSE_ENTRIES``).

    Parameters
    ----------
    design : SRG (dense or :class:`SparseSRG`), coset or bi-regular graph, design, 0/1 matrix or block list
        The assignment (parts x workers); a matrix may be dense or ``scipy.sparse``.
    m : int
        Communication reduction.
    eps, seed, dist
        As for the ``"rd"`` encoder.
    points : int, optional
        Number of parts for a block list.
    fallback : bool
        Send uncertified patterns to the dense kernels when ``B`` fits (default); else raise.

    Raises
    ------
    InvalidArgumentError
        No proved ``c > 0`` (``λ_min(AᵀA) = 0`` or a failed certificate) and no algebra to replace it.
    SizeLimitError
        No algebra, and the Cholesky certificate's ``n x n`` matrix is over the dense limit.

    Examples
    --------
    >>> enc = encode_sparse(lattice_graph_sparse(5), 2, seed=0)
    >>> enc.params, enc.context.lower > 0.99, enc.context.source
    (SchemeParams(num_parts=25, n=25, m=2), True, 'SRG(25, 8, 3, 2) spectrum')
    """
    m = check_int("m", m, minimum=1)
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    fallback = check_bool("fallback", fallback)
    if points is not None:
        points = check_int("points", points, minimum=1)
    A = _as_incidence(design, points)
    S = sp.csc_matrix(A, dtype=np.int64)
    if S.nnz and not np.all(S.data == 1):
        raise VerificationError("design: not a 0/1 matrix")
    N, n = S.shape
    check_dense_size("m", n, m * m, "the n x m² work arrays of the sparse route")
    D = get_encoder(StructuredRD.method).derived(m, n, eps, seed, {"dist": dist})
    alg = _algebraic_lower(design, S)
    gram = None if alg is None else alg[2]
    if alg is not None and alg[0] > 0:
        lower, source = _scaled_lower(alg[0], D.T), alg[1]
    else:
        lower, source = gram_lower_cholesky(S, D.T), "Cholesky certificate"
    if not lower > 0:
        raise InvalidArgumentError(
            "design",
            f"the sparse route has no proved lower bound on λ_min(SΓS) ({source if alg is None else alg[1]}: "
            f"{lower:.3g}; theory §44): B may be rank deficient; use gcsim.coding.encode and the dense routes",
        )
    return SparseRD(S, D, lower, source, {"eps": eps, "seed": seed, "dist": dist}, fallback, gram)
