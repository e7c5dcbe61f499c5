"""RD encoders applied and decoded from their sparse structure, in any array namespace (theory §44.3).

An RD encoder (block ``l`` of ``B`` is ``A diag(d_l)``, theory §5.4) kept as a sparse 0/1
incidence ``A`` (``N`` parts x ``n`` workers) and its ``m x n`` diagonals -- a
:class:`~gcsim.coding.structured.StructuredRD` or a :class:`~gcsim.coding.sparse_routes.SparseRD`
-- never needs its dense ``B``:

.. math::
   (B^\\top Y)_j = \\sum_l d_l[j] \\sum_{i \\in A_{:,j}} Y_{lN+i},\\qquad
   (B X)_{lN+i} = \\sum_{j \\ni i} d_l[j]\\, X_j ,

two *gathers* (the parts of each worker, the workers of each part, padded with an index that
points at a zero row) followed by sums: :class:`RDOperator`.  Integer indexing is done with
``take``, so the same lines run on CuPy and torch; on NumPy the two sums are ``scipy.sparse``
products (the same numbers up to the order of the additions, 8-11x faster on a CPU).
Work arrays are cut into chunks of rows so that one chunk stays within
``budget`` bytes: encoding ``w``-long blocks costs ``O(n w + chunk k m w)`` memory.

The minimum-norm optimal decoder ``X*(F) = B_F⁺ T`` (Definition 2, §47.6) comes from the structure:

* on a design with ``AᵀA = (k − λ) I + λ J`` (:class:`~gcsim.coding.structured.StructuredContext`),
  Corollary 47.7: ``X* = diag(1_F) V G_F``, ``G_F = k (aI + λM_F)⁻¹`` (``m x m``), ``V`` the rows
  ``u_j/‖u_j‖²`` (zero for ``u_j = 0``: the min-norm solution when ``B_F`` has zero columns);
* on any sparse assignment with a proved ``c <= λ_min(SΓS)``
  (:class:`~gcsim.coding.sparse_evaluator.SparseRDContext`), preconditioned conjugate gradients on
  ``Γ_{F'F'} X = H_{F'}`` through :class:`RDOperator`, stopped by the certificate of Theorem 44.7:
  ``‖S⁻¹(X − X*)‖_F <= ‖S R‖_F / c`` and ``Q(X) − err(B, F) <= ‖S R‖_F² / c`` for the residual ``R``.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .._array_api import asarray, get_namespace, is_numpy, to_numpy
from .._validation import check_int, check_mask, check_real
from ..errors import InvalidArgumentError, VerificationError
from ._pcg import jacobi_pcg
from .sparse_evaluator import MAX_ITERATIONS, SparseRDContext
from .structured import StructuredContext

__all__ = ["RDOperator", "rd_operator", "StructuredDecoder", "structured_decoder", "DECODER_RTOL"]

#: CG stops when the certified bound on ``‖X − X*‖_F`` is at most ``DECODER_RTOL · ‖X‖_F``.
DECODER_RTOL = 1e-11

_BUDGET = 32 * 2**20  # bytes of one chunk's gathered work array


def _padded(indptr: np.ndarray, indices: np.ndarray, pad: int) -> np.ndarray:
    """Rows of a CSR/CSC structure as an ``(rows, width)`` int64 table padded with ``pad``."""
    counts = np.diff(indptr)
    rows = counts.size
    width = int(counts.max()) if rows else 0
    out = np.full((rows, max(width, 1)), pad, dtype=np.int64)
    owner = np.repeat(np.arange(rows), counts)
    pos = np.arange(indices.size) - np.repeat(indptr[:-1], counts)
    out[owner, pos] = indices
    return out


class RDOperator:
    """``B`` and ``Bᵀ`` of an RD encoder from its incidence and diagonals, by gathers in ``xp`` (module docstring).

    Parameters
    ----------
    incidence : scipy.sparse matrix (N, n)
        0/1 assignment (parts x workers).
    diagonals : numpy.ndarray (m, n)
        ``d_l[j]``, finite.
    xp : None, "numpy", "cupy" or module
        Namespace of the arrays the operator takes and returns.
    budget : int
        Bytes of one chunk's gathered work array.

    Examples
    --------
    >>> A = sp.csc_matrix(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]]))
    >>> op = RDOperator(A, np.array([[1.0, -1.0, 2.0]]))
    >>> B = A.toarray() * np.array([1.0, -1.0, 2.0])
    >>> bool(np.array_equal(op.apply(np.eye(3)), B)), bool(np.array_equal(op.apply_t(np.eye(3)), B.T))
    (True, True)
    """

    def __init__(self, incidence: Any, diagonals: Any, xp: Any = None, budget: int = _BUDGET):
        A = sp.csc_matrix(incidence, copy=True)  # a copy: the cleaning below is in place (the input may be read-only)
        A.sum_duplicates()
        A.eliminate_zeros()
        D = np.asarray(diagonals, dtype=np.float64)
        N, n = A.shape
        if D.ndim != 2 or D.shape[1] != n or not np.all(np.isfinite(D)):
            raise InvalidArgumentError("diagonals", f"must be a finite (m, {n}) array, got shape {D.shape}")
        if A.nnz and not np.all(A.data == 1):
            raise InvalidArgumentError("incidence", "must be a 0/1 matrix")
        self.budget = check_int("budget", budget, minimum=1)
        self.xp = get_namespace(xp)
        self.N, self.n, self.m = int(N), int(n), int(D.shape[0])
        self.mN = self.m * self.N
        csr = A.tocsr()
        self._structure = (A, csr)  # the gather tables are made from it on first use (not on NumPy's path)
        ns = self.xp
        self.Dt = asarray(ns, np.ascontiguousarray(D.T))  # (n, m)
        self.load = asarray(ns, np.diff(A.indptr).astype(np.float64))  # k_j
        # NumPy: the same two sums as scipy.sparse products (8-11x faster on the CPU than the gathers,
        # benchmarks/README.md); other namespaces (CuPy, torch) take the gathers
        self._sparse: tuple[sp.csr_matrix, sp.csr_matrix] | None = (
            (csr.astype(np.float64), A.T.tocsr().astype(np.float64)) if is_numpy(ns) else None
        )

    @cached_property
    def _tables(self) -> tuple[Any, Any]:
        """The gather tables in ``xp``: parts of each worker ``(n, k_max)``, workers of each part ``(N, r_max)``.

        Padded with ``N`` and ``n``: indices of a zero row.  Built on first use, so the NumPy path
        (``scipy.sparse`` products) never holds them.
        """
        A, csr = self._structure
        ns = self.xp
        parts = _padded(A.indptr, A.indices, self.N)
        workers = _padded(csr.indptr, csr.indices, self.n)
        return asarray(ns, parts, dtype=ns.int64), asarray(ns, workers, dtype=ns.int64)

    @property
    def parts(self) -> Any:
        """``(n, k_max)``: the parts of each worker, padded with ``N``."""
        return self._tables[0]

    @property
    def workers(self) -> Any:
        """``(N, r_max)``: the workers of each part, padded with ``n``."""
        return self._tables[1]

    @property
    def k_max(self) -> int:
        """Most parts a worker holds (width of :attr:`parts`)."""
        return int(self.parts.shape[1])

    @property
    def r_max(self) -> int:
        """Most workers a part has (width of :attr:`workers`)."""
        return int(self.workers.shape[1])

    def _step(self, width: int, cols: int) -> int:
        return max(1, self.budget // (8 * max(width, 1) * self.m * max(cols, 1)))

    def apply_t(self, Y: Any) -> Any:
        """``Bᵀ Y`` for ``Y`` of shape ``(mN, c)`` (rows block-major, ``lN + i``) -> ``(n, c)``."""
        ns = self.xp
        Y = asarray(ns, Y)
        c = Y.shape[1]
        if self._sparse is not None:  # Σ_l diag(d_l) Aᵀ Y_l
            At = self._sparse[1]
            Yl = np.reshape(Y, (self.m, self.N, c))
            return sum(self.Dt[:, l, None] * (At @ Yl[l]) for l in range(self.m))
        Yp = ns.permute_dims(ns.reshape(Y, (self.m, self.N, c)), (1, 0, 2))  # (N, m, c)
        Yp = ns.concat([Yp, ns.zeros((1, self.m, c), dtype=ns.float64)], axis=0)
        step = self._step(self.k_max, c)
        out = []
        for a in range(0, self.n, step):
            idx = self.parts[a : a + step, :]
            rows = idx.shape[0]
            got = ns.reshape(ns.take(Yp, ns.reshape(idx, (-1,)), axis=0), (rows, self.k_max, self.m, c))
            blocks = ns.sum(got, axis=1)  # (rows, m, c): Σ_{i ∈ parts(j)} Y_{lN+i}
            out.append(ns.sum(self.Dt[a : a + step, :, None] * blocks, axis=1))
        return ns.concat(out, axis=0) if out else ns.zeros((0, c), dtype=ns.float64)

    def apply(self, X: Any) -> Any:
        """``B X`` for ``X`` of shape ``(n, c)`` -> ``(mN, c)``."""
        ns = self.xp
        X = asarray(ns, X)
        c = X.shape[1]
        if self._sparse is not None:  # block l: A (d_l ∘ X)
            Acsr = self._sparse[0]
            return np.concatenate([Acsr @ (self.Dt[:, l, None] * X) for l in range(self.m)], axis=0)
        Z = self.Dt[:, :, None] * X[:, None, :]  # (n, m, c): d_l[j] X_j
        Z = ns.concat([Z, ns.zeros((1, self.m, c), dtype=ns.float64)], axis=0)
        step = self._step(self.r_max, c)
        out = []
        for a in range(0, self.N, step):
            idx = self.workers[a : a + step, :]
            rows = idx.shape[0]
            got = ns.reshape(ns.take(Z, ns.reshape(idx, (-1,)), axis=0), (rows, self.r_max, self.m, c))
            out.append(ns.sum(got, axis=1))  # (rows, m, c)
        P = ns.concat(out, axis=0)  # (N, m, c)
        return ns.reshape(ns.permute_dims(P, (1, 0, 2)), (self.mN, c))

    def target(self) -> Any:
        """``T = I_m ⊗ 1_N`` (``(mN, m)``) in the operator's namespace."""
        ns = self.xp
        eye = ns.eye(self.m, dtype=ns.float64)
        return ns.reshape(eye[:, None, :] * ns.ones((1, self.N, 1), dtype=ns.float64), (self.mN, self.m))


def _fields(scheme: Any) -> tuple[Any, np.ndarray, Any]:
    inc, D, ctx = (
        getattr(scheme, "incidence", None),
        getattr(scheme, "diagonals", None),
        getattr(scheme, "context", None),
    )
    if inc is None or not sp.issparse(inc) or D is None or not isinstance(ctx, (StructuredContext, SparseRDContext)):
        raise InvalidArgumentError(
            "scheme",
            "must be an RD encoder kept sparse: a StructuredRD (gcsim.coding.structured.encode_structured) "
            f"or a SparseRD (gcsim.coding.sparse_routes.encode_sparse), got {type(scheme).__name__}",
        )
    return inc, np.asarray(D, dtype=np.float64), ctx


def rd_operator(scheme: Any, xp: Any = None) -> RDOperator:
    """The :class:`RDOperator` of a :class:`~gcsim.coding.structured.StructuredRD` or a ``SparseRD``.

    Examples
    --------
    >>> from gcsim.coding.structured import encode_structured
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 2), 2, seed=0, points=7)
    >>> bool(np.array_equal(rd_operator(enc).apply(np.eye(7)), enc.B))
    True
    """
    inc, D, _ = _fields(scheme)
    return RDOperator(inc, D, xp)


class StructuredDecoder(NamedTuple):
    """The optimal decoder of one pattern from the structure (:func:`structured_decoder`).

    ``decoder`` is ``(n, m)`` in the namespace asked for (exact zeros off ``F``); ``route`` is
    ``"closed-form"`` (Corollary 47.7) or ``"cg"`` (Theorem 44.7); ``iterations`` the CG steps (0 for
    the closed form); ``bound`` a bound on ``‖X − X*‖_F`` in exact arithmetic of the final residual
    (0.0 for the closed form, whose accuracy is that of an ``m x m`` solve) and ``gap`` the bound
    ``‖S R‖_F²/c`` on ``Q(X) − err(B, F)`` (0.0 for the closed form).
    """

    decoder: Any
    route: str
    iterations: int
    bound: float
    gap: float


def _closed_form(ctx: StructuredContext, D: np.ndarray, f: Any, ns: Any) -> Any:
    """``diag(1_F) V k (aI + λM_F)⁻¹`` (Corollary 47.7) in ``ns``; ``f`` the float mask ``(n,)``."""
    m = ctx.m
    Q = asarray(ns, ctx.Q)  # rows vec(û_j û_jᵀ)
    M = ns.reshape(f[None, :] @ Q, (m, m))
    M = 0.5 * (M + M.T)
    eye = ns.eye(m, dtype=ns.float64)
    G = ns.linalg.solve(ctx.a * eye + ctx.lam * M, ctx.k * eye)
    norms2 = np.sum(D * D, axis=0)
    V = np.zeros((ctx.n, m))
    nz = norms2 > 0
    V[nz] = (D[:, nz] / norms2[nz]).T  # u_j / ‖u_j‖², zero rows for u_j = 0 (zero columns of B)
    return f[:, None] * (asarray(ns, V) @ G)


def _cg(ctx: SparseRDContext, op: RDOperator, f: Any, rtol: float, max_iter: int) -> StructuredDecoder:
    """Jacobi-preconditioned CG on ``Γ_{F'F'} X = H_{F'}`` (``m`` columns), certified by Theorem 44.7."""
    ns = op.xp
    c = ctx.lower
    if not c > 0:
        raise VerificationError(
            f"the sparse route has no proved lower bound c > 0 on λ_min(SΓS) ({ctx.source}): the decoder "
            "cannot be certified (theory §44.3); use a dense Scheme"
        )
    fz = f * asarray(ns, ctx.nonzero.astype(np.float64))  # F': zero columns dropped exactly
    s = asarray(ns, ctx.s)[:, None]
    s_max = float(np.max(ctx.s[ctx.nonzero])) if ctx.nonzero.any() else 0.0
    H = op.load[:, None] * op.Dt * fz[:, None]  # diag(k_j) U on F'
    Minv = (asarray(ns, ctx.pinv) * fz)[:, None]

    def gram(P: Any, idx: Any = None) -> Any:
        return fz[:, None] * op.apply_t(op.apply(P))

    X = ns.zeros((op.n, op.m), dtype=ns.float64)
    R = H * 1.0  # jacobi_pcg updates R in place: not H itself
    it = 0

    def certificate(R: Any, X: Any) -> tuple[float, float, bool]:
        SR = s * R
        gap = float(ns.sum(SR * SR)) / c
        bound = s_max * math.sqrt(gap / c)  # ‖X − X*‖_F <= s_max ‖S⁻¹(X − X*)‖_F <= s_max ‖SR‖_F / c
        xn = math.sqrt(float(ns.sum(X * X)))
        return bound, gap, bound <= rtol * xn

    def stop(it: int, idx: Any) -> bool:
        est, _, done = certificate(R, X)
        return done or est == 0.0

    bound, gap, ok = certificate(R, X)
    while not ok and it < max_iter:  # restarts from the true residual when the recurrence is done
        it = jacobi_pcg(gram, Minv, X, R, stop, max_iter=max_iter, it=it, ns=ns)
        R = H - gram(X)  # the true residual: the certificate rests on it, not on the recurrence
        bound, gap, ok = certificate(R, X)
    if not ok:
        raise VerificationError(
            f"conjugate gradients reached a certified decoder error bound of {bound:.3g} after {it} iterations, "
            f"above rtol ‖X‖_F (rtol = {rtol:g}; λ_min bound c = {c:.3g} from {ctx.source}; theory §44.3)"
        )
    return StructuredDecoder(X, "cg", it, bound, gap)


def structured_decoder(
    scheme: Any,
    nonstragglers: Any,
    *,
    xp: Any = None,
    rtol: float = DECODER_RTOL,
    max_iter: int = MAX_ITERATIONS,
    operator: RDOperator | None = None,
) -> StructuredDecoder:
    """The minimum-norm optimal decoder ``X*(F) = B_F⁺ T`` of an RD encoder kept sparse, without ``B``.

    A :class:`~gcsim.coding.structured.StructuredRD` (``AᵀA = aI + λJ``) takes Corollary 47.7,
    ``X* = diag(1_F) V G_F`` with ``G_F = k(aI + λM_F)⁻¹``: one ``n x m²`` GEMM row and an ``m x m``
    solve.  A :class:`~gcsim.coding.sparse_routes.SparseRD` takes Jacobi-preconditioned conjugate
    gradients through :class:`RDOperator` (``O(m² nnz(A))`` a step), stopped when the certificate of
    Theorem 44.7 proves ``‖X − X*‖_F <= rtol ‖X‖_F`` (from the recomputed residual).  Both give exact
    zero rows off ``F`` and on workers with ``u_j = 0`` (``B``'s zero columns: the minimum-norm solution).

    Parameters
    ----------
    scheme : StructuredRD or SparseRD
    nonstragglers : array of bool (n,)
        True = worker ``j`` arrived.
    xp : None, "numpy", "cupy" or module
        Namespace of the computation and of the returned decoder.
    rtol : float
        Target of the CG certificate (not used by the closed form).
    max_iter : int
        CG iterations before :class:`~gcsim.errors.VerificationError`.
    operator : RDOperator, optional
        The scheme's operator in ``xp``, when the caller already has it.

    Returns
    -------
    StructuredDecoder

    Raises
    ------
    VerificationError
        CG did not reach the certified target within ``max_iter`` steps, or the sparse context has
        no proved ``c > 0``.

    Examples
    --------
    >>> from gcsim.coding.structured import encode_structured
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 2), 2, seed=0, points=7)
    >>> mask = np.array([True] * 5 + [False] * 2)
    >>> X = structured_decoder(enc, mask).decoder
    >>> BF = enc.B * mask
    >>> bool(np.allclose(X, np.linalg.pinv(BF) @ enc.target(), rtol=0, atol=1e-12))
    True
    """
    inc, D, ctx = _fields(scheme)
    n = inc.shape[1]
    mask = check_mask("nonstragglers", to_numpy(nonstragglers, "nonstragglers"), n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", f"must be one mask of shape (n,) = ({n},)")
    rtol = check_real("rtol", rtol, minimum=0.0, strict_min=True)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    ns = get_namespace(xp) if operator is None else operator.xp
    f = asarray(ns, mask.astype(np.float64))
    if isinstance(ctx, StructuredContext):
        return StructuredDecoder(_closed_form(ctx, D, f, ns), "closed-form", 0, 0.0, 0.0)
    op = RDOperator(inc, D, ns) if operator is None else operator
    return _cg(ctx, op, f, rtol, max_iter)
