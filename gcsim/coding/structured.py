"""Structured evaluator: RD encoders on designs with ``AᵀA = aI + λJ`` (docs/theory.md §42).

For an RD encoder (block ``l`` of ``B`` is ``A diag(d_l)``, theory §5.4) on a 0/1 assignment
``A`` (``N`` parts x ``n`` workers) whose columns pairwise meet in ``λ`` parts and hold ``k``
parts each (``AᵀA = (k − λ) I + λ J``: every symmetric BIBD, theory §10), the Gram matrix
``Γ = BᵀB = a Δ + λ U Uᵀ`` is a diagonal plus rank ``m`` and ``H = BᵀT = k U``
(``a = k − λ``, ``U = Dᵀ`` the ``n x m`` diagonals, ``Δ = diag(‖u_j‖²)``).  Theorem 42.1:

.. math::
   \\mathrm{err}(B, F) = \\sum_{i=1}^m \\frac{N a - c\\,\\mu_i}{a + \\lambda \\mu_i},\\qquad
   c = k^2 - N\\lambda,

``μ_i`` the eigenvalues of the ``m x m`` matrix ``M_F = Σ_{j∈F, u_j≠0} û_j û_jᵀ`` of unit rows
``û_j = u_j/‖u_j‖`` (``c = a`` for a symmetric BIBD: ``err = a Σ (N − μ_i)/(a + λ μ_i)``).  One
pattern costs ``O(n m²)`` (one GEMM row of the masks against the ``n x m²`` outer products) plus
an ``m x m`` eigenvalue problem, instead of the dense routes' ``O(mN f²)``; ``B`` is never formed.

Accuracy (Theorem 42.2): with ``u = 2^-52``, ``f = |F|``,
``|Δ| <= β(f) = 4 m k² η / a + γ_{m+7} m (N + |c| min(2f/a, 1/λ))`` with
``η = (γ_{n+4m+3} + 2γ_{4m}) f`` and ``γ_t = t u / (1 − t u)``: for a symmetric BIBD ``k²/a =
1 + λN/a`` bounds the condition number of the ``m x m`` capacitance ``aI + λM_F``, so
``β ≈ 4 m κ_C n f u``.  The route is *certified* when ``β(n) <= GRAM_KAPPA_LIMIT² u mN`` (the
accuracy class of the ``"auto"`` Gram-type routes, :mod:`gcsim.coding.kernels`); ``"auto"``
takes it only then and otherwise uses the dense routes (or, when ``B`` cannot be formed, refuses
with the bound in the message).

Two entry points: :func:`structured_context` recognises a dense :class:`~gcsim.coding.Scheme` of
method ``"rd"`` on such an assignment (checked exactly, once, without forming ``AᵀA`` densely);
:func:`encode_structured` builds an RD encoder from a sparse incidence (or a block list) with the
diagonals :func:`gcsim.coding.encode` would draw for the same seed, without any dense matrix, for
designs far beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES` (PG(2, 97): 9,507 workers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property, wraps
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .. import _html, limits
from .._array_api import asarray, get_namespace, to_numpy
from .._validation import check_dense_size, check_int, check_real, layout_version_problem
from ..combinatorics.cyclic_design import CyclicDesign
from ..errors import CatalogueError, GcsimError, InvalidArgumentError, VerificationError
from ..io.manifest import to_jsonable
from .encoders import get_encoder, is_registered
from .kernels import GRAM_KAPPA_LIMIT
from .pair_gram import check_pair_gram, incidence_from_blocks
from .schemes import SchemeParams
from .sparse_evaluator import sparse_context
from .straggler_base import rng_from_seed

__all__ = [
    "StructuredContext",
    "StructuredRD",
    "CyclicStructuredRD",
    "STRUCTURED_KIND",
    "structured_context",
    "encode_structured",
    "incidence_from_blocks",
    "check_pair_gram",
    "stream_errors",
    "streamable",
    "evaluate",
    "LazySample",
    "STRUCTURED_LIMIT",
]

_U = float(np.finfo(np.float64).eps) / 2  # unit roundoff 2^-53 (γ_t below uses it)

#: Largest a-priori bound ``β(n) / (mN)`` (theory §42.2) for which ``method="auto"`` takes the
#: structured route: ``GRAM_KAPPA_LIMIT² u``, the accuracy class of the auto Gram-type routes.
STRUCTURED_LIMIT = GRAM_KAPPA_LIMIT**2 * float(np.finfo(np.float64).eps)

# masks per GEMM chunk: (chunk x n) float64 masks stay near 32 MiB
_CHUNK_BYTES = 32 * 2**20


def _gamma(t: int) -> float:
    tu = t * _U
    return tu / (1.0 - tu) if tu < 1 else float("inf")


# ----------------------------------------------------------------------------------------------
# the context: unit rows, outer products, the error formula
# ----------------------------------------------------------------------------------------------


class StructuredContext:
    """Precomputed data of the structured route (theory §42): ``O(n m²)`` memory, no ``B``.

    Parameters
    ----------
    D : numpy.ndarray (m, n)
        The RD diagonals (``B``'s block ``l`` is ``A diag(D[l])``).
    N, k, lam : int
        Parts, column sum and pair count of the assignment (``AᵀA = (k − λ)I + λJ``, checked by
        the caller with :func:`check_pair_gram`).

    Examples
    --------
    >>> ctx = StructuredContext(np.ones((1, 7)), 7, 3, 1)   # Fano plane, m = 1
    >>> ctx.errors(np.array([[True] * 7, [True] * 6 + [False]])).round(12).tolist()
    [0.0, 0.25]
    """

    def __init__(self, D: np.ndarray, N: int, k: int, lam: int):
        D = np.asarray(D, dtype=np.float64)
        self.m, self.n = D.shape
        self.N, self.k, self.lam = check_int("N", N), check_int("k", k), check_int("lam", lam)
        self.a = self.k - self.lam
        self.c = self.k * self.k - self.N * self.lam  # = a for a symmetric BIBD
        self.total = float(self.m * self.N)
        self.mN = self.m * self.N
        norms = np.linalg.norm(D, axis=0)
        self.nonzero = norms > 0
        W = np.zeros((self.n, self.m))
        W[self.nonzero] = (D[:, self.nonzero] / norms[self.nonzero]).T
        self.W = W
        # row j: the m² entries of û_j û_jᵀ (M_F = mask @ Q, one GEMM per chunk of patterns)
        self.Q = np.ascontiguousarray((W[:, :, None] * W[:, None, :]).reshape(self.n, self.m * self.m))
        self.bound_full = self.bound(self.n)  # β is increasing in f: the worst pattern is F = [n]
        self.certified = self.bound_full <= STRUCTURED_LIMIT * self.total
        self.kappa = 1.0 + self.lam * self.n / self.a  # bound on κ(aI + λ M_F)

    def bound(self, f: int) -> float:
        """A-priori bound ``β(f)`` on ``|err_computed − err|`` for ``|F| = f`` (Theorem 42.2).

        ``η = (γ_{n+4m+3} + 2γ_{4m}) f`` bounds the eigenvalue errors of ``M_F``; then
        ``β = 4 m k² η / a + γ_{m+7} m (N + |c| min(2f/a, 1/λ))`` (``inf`` unless ``λη <= a/2``).
        """
        m, n = self.m, self.n
        eta = (_gamma(n + 4 * m + 3) + 2 * _gamma(4 * m)) * f
        if self.lam * eta > self.a / 2:
            return float("inf")
        spread = 2.0 * f / self.a if self.lam == 0 else min(2.0 * f / self.a, 1.0 / self.lam)
        return float(4 * m * self.k**2 * eta / self.a + _gamma(m + 7) * m * (self.N + abs(self.c) * spread))

    def errors(self, masks: np.ndarray, xp: Any = None) -> np.ndarray:
        """Raw errors ``err(B, F)`` of a ``(count, n)`` stack of non-straggler masks (host NumPy out).

        The GEMM and the ``m x m`` eigenvalue problems run in the array namespace ``xp``
        (NumPy by default; CuPy or torch through :mod:`array_api_compat`).
        """
        ns = get_namespace(xp)
        masks = np.asarray(masks, dtype=bool)
        count = masks.shape[0]
        out = np.empty(count)
        step = max(1, _CHUNK_BYTES // (8 * max(self.n, 1)))
        Q = asarray(ns, self.Q)
        for a in range(0, count, step):
            mk = asarray(ns, masks[a : a + step].astype(np.float64))
            M = ns.reshape(mk @ Q, (-1, self.m, self.m))
            M = 0.5 * (M + ns.permute_dims(M, (0, 2, 1)))  # exact symmetrization of GEMM's rounding
            mu = ns.linalg.eigvalsh(M)
            num = self.N * self.a - self.c * mu
            vals = ns.sum(num / (self.a + self.lam * mu), axis=1)
            out[a : a + step] = to_numpy(vals)
        return out

    def errors_for_sets(self, S: np.ndarray) -> np.ndarray:
        """Raw errors of the patterns with straggler index sets ``S`` (``(count, s)``)."""
        count = S.shape[0]
        out = np.empty(count)
        step = max(1, _CHUNK_BYTES // max(self.n, 1))
        for a in range(0, count, step):
            sub = S[a : a + step]
            mk = np.ones((sub.shape[0], self.n), dtype=bool)
            if sub.shape[1]:
                np.put_along_axis(mk, sub, False, axis=1)
            out[a : a + sub.shape[0]] = self.errors(mk)
        return out


# ----------------------------------------------------------------------------------------------
# recognising a dense scheme
# ----------------------------------------------------------------------------------------------

#: Routes tried, in order, for an RD scheme whose assignment has no pair Gram ``aI + λJ``: callables
#: ``route(scheme, A, D)`` returning a context or None (theory §44's sparse route).
FALLBACK_ROUTES: tuple[Callable[[Any, np.ndarray, np.ndarray], Any], ...] = (sparse_context,)

# id(B) -> (B, context or None) for the most recent read-only encoders
_SEEN: dict[int, tuple[Any, Any]] = {}
_SEEN_MAX = 16


def _recognise(scheme: Any) -> Any:
    method = getattr(scheme, "method", None)  # an encoder whose B is the stack of A diag(d_k) (RD)
    held = get_encoder(method).structured_route(getattr(scheme, "m", 0)) if is_registered(method) else None
    if held != "diagonals" or getattr(scheme, "diagonals", None) is None:
        return None
    D = np.asarray(scheme.diagonals, dtype=np.float64)
    A = np.asarray(scheme.assignment)
    B = np.asarray(scheme.B)
    m = int(scheme.m)
    if A.ndim != 2 or D.shape != (m, A.shape[1]) or B.shape != (m * A.shape[0], A.shape[1]):
        return None
    if not np.all(np.isfinite(D)):
        return None
    # the theorem is about B exactly: block l must be A diag(d_l), entry for entry
    if not np.array_equal((A[None] * D[:, None, :]).reshape(B.shape), B):
        return None
    try:
        k, lam = check_pair_gram(sp.csc_matrix(A), "assignment")
    except VerificationError:
        for route in FALLBACK_ROUTES:  # theory §44: any sparse assignment, certified per pattern
            ctx = route(scheme, A, D)
            if ctx is not None:
                return ctx
        return None
    ctx = StructuredContext(D, A.shape[0], k, lam)
    return ctx if ctx.certified else None


def structured_context(scheme: Any) -> Any:
    """The structured route's context for ``scheme``, or None when the route does not apply.

    It applies to a :class:`StructuredRD` (always: it is built for it) and to a dense
    :class:`~gcsim.coding.Scheme` of method ``"rd"`` whose ``B`` is exactly the stack of
    ``A diag(d_l)`` of its diagonals and whose assignment has ``AᵀA = (k − λ)I + λJ``, ``k > λ``
    (checked exactly, once per scheme), when the route is certified (module docstring).
    Otherwise, for such a scheme on a sparse assignment (``n >= SPARSE_MIN_N``, density at most
    ``SPARSE_MAX_DENSITY``), the sparse route of theory §44
    (:class:`~gcsim.coding.sparse_evaluator.SparseRDContext`, which a
    :class:`~gcsim.coding.sparse_routes.SparseRD` also carries) when its Cholesky certificate
    proves a bound ``c > 0``.  Every context has ``n``, ``total``, ``errors(masks)`` and
    ``errors_for_sets(S)``.

    Examples
    --------
    >>> from gcsim.combinatorics.bibd import bibd
    >>> from gcsim.coding.schemes import encode
    >>> structured_context(encode(bibd(7, 3), 2, "rd", seed=0)) is not None
    True
    >>> structured_context(encode(bibd(7, 3), 2, "naive")) is None
    True
    """
    if isinstance(scheme, StructuredRD):
        return scheme.context
    B = getattr(scheme, "B", None)
    if not isinstance(B, np.ndarray):
        return None
    hit = _SEEN.get(id(B))
    if hit is not None and hit[0] is B:
        return hit[1]
    ctx = _recognise(scheme)
    if not B.flags.writeable:  # a Scheme's B is read-only, hence unchanging: cache by identity
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.pop(next(iter(_SEEN)))
        _SEEN[id(B)] = (B, ctx)
    return ctx


# ----------------------------------------------------------------------------------------------
# an RD encoder that never forms B
# ----------------------------------------------------------------------------------------------


#: Catalogue kind of the bundle of a :class:`StructuredRD` (or a subclass): the sparse incidence and
#: the diagonals, ``O(nnz + m n)`` numbers, never ``B``.
STRUCTURED_KIND = "structured_scheme"
#: Version of that bundle's layout (``metadata["structured_format_version"]``).
STRUCTURED_BUNDLE_VERSION = 1


def _freezing(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` that makes the instance immutable when it is the instance's own ``__init__`` (a subclass's
    ``super().__init__`` leaves it open until the subclass's returns)."""

    @wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if type(self).__init__ is __init__:
            object.__setattr__(self, "_frozen", True)

    return __init__


def _bad(msg: str) -> CatalogueError:
    return CatalogueError(f"structured scheme: {msg}")


def _stored_int(metadata: Mapping[str, Any], key: str, minimum: int = 1) -> int:
    v = metadata.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise _bad(f"metadata {key!r} must be an integer >= {minimum}, got {v!r:.60}")
    return v


def _stored_incidence(arrays: Mapping[str, Any], N: int, n: int, nnz: int) -> sp.csc_matrix:
    """The CSC incidence of ``arrays`` after every structural check, or CatalogueError naming the first failure."""
    for name in ("incidence_indices", "incidence_indptr"):
        if name not in arrays:
            raise _bad(f"array {name!r} is missing")
    ind, ptr = np.asarray(arrays["incidence_indices"]), np.asarray(arrays["incidence_indptr"])
    for name, arr, shape in (("incidence_indices", ind, (nnz,)), ("incidence_indptr", ptr, (n + 1,))):
        if arr.shape != shape or arr.dtype.kind not in "iu":
            raise _bad(
                f"array {name!r} has shape {arr.shape} and dtype {arr.dtype}, expected integers of shape {shape}"
            )
    ptr = ptr.astype(np.int64)
    ind = ind.astype(np.int64)
    if ptr[0] != 0 or ptr[-1] != nnz or np.any(np.diff(ptr) < 0):
        raise _bad(f"incidence_indptr is not a CSC pointer array (starts {int(ptr[0])}, ends {int(ptr[-1])} of {nnz})")
    if nnz and (ind.min() < 0 or ind.max() >= N):
        j = int(np.flatnonzero((ind < 0) | (ind >= N))[0])
        raise _bad(f"incidence index {j} is {int(ind[j])}, outside range({N})")
    col = np.repeat(np.arange(n), np.diff(ptr))
    unsorted = np.flatnonzero((col[1:] == col[:-1]) & (np.diff(ind) <= 0))
    if unsorted.size:
        j = int(unsorted[0])
        raise _bad(
            f"column {int(col[j])} of the incidence lists part {int(ind[j + 1])} after part {int(ind[j])} "
            "(indices must be strictly increasing: sorted, no duplicates)"
        )
    held = np.bincount(ind, minlength=N)
    if N and not np.all(held > 0):
        raise _bad(f"part {int(np.flatnonzero(held == 0)[0])} is held by no worker")
    # the entries are 1 by construction: the bundle stores the 0/1 pattern only
    return sp.csc_matrix((np.ones(nnz, dtype=np.int64), ind, ptr), shape=(N, n))


def _stored_diagonals(arrays: Mapping[str, Any], m: int, n: int) -> np.ndarray:
    if "diagonals" not in arrays:
        raise _bad("array 'diagonals' is missing")
    D = np.asarray(arrays["diagonals"])
    if D.shape != (m, n) or D.dtype != np.float64:
        raise _bad(f"array 'diagonals' has shape {D.shape} and dtype {D.dtype}, expected float64 of shape {(m, n)}")
    if not np.all(np.isfinite(D)):
        raise _bad("the diagonals contain NaN or inf")
    return D


def _rederived_diagonals(method: Any, m: int, n: int, options: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """The diagonals the encoder ``method`` builds from ``options`` (RD: the seeded draw; ``B = A``: ones)."""
    if not isinstance(method, str) or not is_registered(method):
        raise _bad(f"metadata 'method' {method!r:.60} is not a registered encoder")
    if not isinstance(options, dict):
        raise _bad(f"metadata 'options' must be an object, got {type(options).__name__}")
    if method == StructuredRD.method:  # RD(ε): d_k = σ_k (1 + ε ξ_k) from the seed (theory §5.4)
        if set(options) != {"eps", "seed", "dist"}:
            raise _bad(f"RD options must be exactly eps, seed and dist, got {sorted(options)}")
        try:
            eps = check_real("eps", options["eps"], minimum=0.0)
            seed = check_int("seed", options["seed"], minimum=0)
            dist = options["dist"]
            D = get_encoder(method).derived(m, n, eps, seed, {"dist": dist})
        except GcsimError as exc:
            raise _bad(f"RD options {options!r:.120}: {exc}") from None
        return D, {"eps": eps, "seed": seed, "dist": dist}
    if get_encoder(method).is_assignment_code(m) and not options:  # B = A: every diagonal 1
        return np.ones((1, n)), {}
    raise _bad(f"method {method!r} with m = {m} and options {options!r:.80} is not a structured encoder")


def _check_same_diagonals(D: np.ndarray, want: np.ndarray, options: Mapping[str, Any]) -> None:
    """Bit for bit: the stored diagonals are the ones the stated options draw."""
    same = D.view(np.uint64) == np.ascontiguousarray(want, dtype=np.float64).view(np.uint64)
    if not np.all(same):
        k, j = (int(x) for x in np.argwhere(~same)[0])
        raise _bad(
            f"diagonal entry ({k}, {j}) is {float(D[k, j])!r}, but the options {dict(options)} "
            f"draw {float(want[k, j])!r} "
            f"({int((~same).sum())} entries differ): the diagonals are not the encoder's"
        )


def _certified_on_load(enc: Any) -> Any:
    """``enc`` if the structured route's accuracy bound is certified for its design (§42.2); else the load fails."""
    if not enc.context.certified:
        raise _bad(
            f"the structured route's error bound {enc.context.bound_full:.3g} is not certified for this "
            "design (theory §42.2)"
        )
    return enc


class StructuredRD:
    """RD(ε) encoder on a design with ``AᵀA = (k − λ)I + λJ``, kept as a sparse incidence.

    Build it with :func:`encode_structured`.  It has the attributes the evaluators read
    (``m``, ``n``, ``num_parts``, ``params``, ``method = "rd"``, ``options``, ``diagonals``) and
    ``incidence`` (``scipy.sparse`` CSC, parts x workers).  ``B`` and ``assignment`` are dense
    arrays made on request, refused with :class:`~gcsim.errors.SizeLimitError` beyond
    :data:`gcsim.limits.MAX_DENSE_ENTRIES`; :func:`gcsim.coding.evaluate.optimal_error` and
    :func:`~gcsim.coding.evaluate.expected_error` take the structured route with
    ``method="auto"`` and need neither.  Immutable once built.

    Its catalogue bundle (kind ``"structured_scheme"``, :meth:`to_arrays`) holds the incidence
    in CSC index form and the diagonals: ``O(nnz + m n)`` numbers at any size.
    :meth:`from_arrays` trusts none of it: the CSC structure is checked (indices in range,
    strictly increasing in each column, every part held), the diagonals are drawn again from
    the stored options and compared bit for bit, and ``AᵀA = (k − λ)I + λJ`` is re-checked
    exactly (theory §42.4: then the loaded encoder is the one evaluated).

    Examples
    --------
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 3), 2, seed=4, points=13)
    >>> back = StructuredRD.from_arrays(enc.to_arrays(), enc.bundle_metadata())
    >>> type(back).__name__, bool(np.array_equal(back.diagonals, enc.diagonals)), back.context.lam
    ('StructuredRD', True, 1)
    """

    kind: ClassVar[str] = STRUCTURED_KIND
    method = "rd"
    #: ``metadata["layout"]`` of this class's bundle; subclasses with their own layout register here
    layout: ClassVar[str] = "structured"
    #: the bundle holds the diagonals (checked bit for bit against the re-drawn ones); a layout that
    #: stores none takes the re-drawn ones
    stores_diagonals: ClassVar[bool] = True
    _layouts: ClassVar[dict[str, type[StructuredRD]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "layout" in cls.__dict__:
            StructuredRD._layouts[cls.layout] = cls
        if "__init__" in cls.__dict__:  # immutable once the subclass's own __init__ returns
            setattr(cls, "__init__", _freezing(cls.__dict__["__init__"]))  # noqa: B010 - a method replaced

    def __init__(self, incidence: sp.csc_matrix, D: np.ndarray, k: int, lam: int, options: dict[str, Any]):
        self._set_encoder(incidence, D, options)
        self.context = StructuredContext(self.diagonals, incidence.shape[0], k, lam)

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot delete {name!r})")

    def _set_encoder(self, incidence: sp.csc_matrix | None, D: np.ndarray, options: dict[str, Any]) -> None:
        """The fields every RD encoder without a dense ``B`` has (read-only diagonals, no dense copies yet);
        ``incidence`` None: the subclass makes it on request."""
        if incidence is not None:
            self.incidence = incidence
        D = np.array(D, dtype=np.float64)
        D.setflags(write=False)
        self.diagonals = D
        self.m = int(D.shape[0])
        self.options = MappingProxyType(dict(options))
        self.decoder = None

    def _check_diagonals(self) -> None:
        if self.diagonals.shape != (self.m, self.n) or not np.all(np.isfinite(self.diagonals)):
            raise VerificationError(f"{type(self).__name__}: the diagonals must be a finite (m, n) array")

    @property
    def n(self) -> int:
        """Number of workers."""
        return int(self.incidence.shape[1])

    @property
    def num_parts(self) -> int:
        """Number of data parts ``N``."""
        return int(self.incidence.shape[0])

    @property
    def params(self) -> SchemeParams:
        """``(num_parts, n, m)``."""
        return SchemeParams(self.num_parts, self.n, self.m)

    @property
    def nnz(self) -> int:
        """Stored entries of the incidence (the parts held, summed over the workers)."""
        return int(self.incidence.nnz)

    @cached_property
    def assignment(self) -> np.ndarray:
        """Dense int64 assignment (read-only), refused beyond ``MAX_DENSE_ENTRIES``."""
        check_dense_size("assignment", self.num_parts, self.n, "the dense assignment of a structured encoder")
        A = self.incidence.toarray().astype(np.int64)
        A.setflags(write=False)
        return A

    @cached_property
    def B(self) -> np.ndarray:
        """Dense ``(mN, n)`` encoder ``B`` (block ``l`` is ``A diag(d_l)``), refused beyond ``MAX_DENSE_ENTRIES``."""
        check_dense_size("B", self.m * self.num_parts, self.n, "the dense encoder B of a structured encoder")
        A = self.assignment.astype(np.float64)
        B = (A[None] * self.diagonals[:, None, :]).reshape(self.m * self.num_parts, self.n)
        B.setflags(write=False)
        return B

    def target(self) -> np.ndarray:
        """``T = I_m ⊗ 1_N`` (refused like ``B`` when large)."""
        check_dense_size("T", self.m * self.num_parts, self.m, "the target T")
        return np.kron(np.eye(self.m), np.ones((self.num_parts, 1)))

    def verify(self) -> bool:
        """Exact check: 0/1 incidence with ``AᵀA = (k − λ)I + λJ`` (sparse), finite ``(m, n)`` diagonals."""
        k, lam = check_pair_gram(self.incidence, "StructuredRD.incidence")
        if (k, lam) != (self.context.k, self.context.lam):
            raise VerificationError(f"StructuredRD: (k, λ) = {(k, lam)} != the context's")
        self._check_diagonals()
        return True

    # -- the catalogue bundle ---------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The incidence in CSC index form (``incidence_indices`` int32, or int64 from ``2^31`` parts;
        ``incidence_indptr`` int64; sorted, no duplicates) and the ``(m, n)`` float64 ``diagonals``."""
        S = sp.csc_matrix(self.incidence, dtype=np.int64, copy=True)
        S.sum_duplicates()  # canonical: sorted indices, no duplicates
        wide = self.num_parts >= 2**31
        return {
            "incidence_indices": np.asarray(S.indices, dtype=np.int64 if wide else np.int32),
            "incidence_indptr": np.asarray(S.indptr, dtype=np.int64),
            "diagonals": np.asarray(self.diagonals, dtype=np.float64),
        }

    def _certificate(self) -> dict[str, Any]:
        """What the layout adds to the metadata (the structured layout: ``pair_gram = [k, λ]``)."""
        return {"pair_gram": [int(self.context.k), int(self.context.lam)]}

    def bundle_metadata(self) -> dict[str, Any]:
        """Parameters, the encoder's method and options (what the diagonals are re-drawn from) and the layout."""
        return {
            "params": list(self.params),
            "construction": f"{self.layout} {self.method} encoder (sparse incidence + diagonals)",
            "layout": self.layout,
            "structured_format_version": STRUCTURED_BUNDLE_VERSION,
            "method": self.method,
            "options": to_jsonable(dict(self.options)),
            "N": self.num_parts,
            "n": self.n,
            "m": self.m,
            "nnz": self.nnz,
            **self._certificate(),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, Any], metadata: dict[str, Any]) -> StructuredRD:
        """Rebuild the encoder from :meth:`to_arrays`, re-deriving what it rests on; CatalogueError otherwise.

        Sizes are checked against the metadata before anything is allocated (``N <= nnz``: every
        part is held; the ``n x m²`` work arrays within :data:`gcsim.limits.MAX_DENSE_ENTRIES`);
        then the CSC structure, the diagonals (finite, ``(m, n)`` float64, equal bit for bit to the
        ones the stored method and options draw) and the layout's certificate (structured:
        ``AᵀA = (k − λ)I + λJ`` exactly, with the stored ``(k, λ)``; sparse: the lower bound of
        theory §44 computed again from the incidence).
        """
        if not isinstance(metadata, dict):
            raise _bad(f"metadata must be an object, got {type(metadata).__name__}")
        problem = layout_version_problem(metadata, "structured_format_version", STRUCTURED_BUNDLE_VERSION)
        if problem:
            raise _bad(problem)
        layout = metadata.get("layout")
        target = StructuredRD._layouts.get(layout) if isinstance(layout, str) else None
        if target is None:
            raise _bad(f"unknown layout {layout!r:.40} (known: {sorted(StructuredRD._layouts)})")
        N, n, m, nnz = (_stored_int(metadata, key) for key in ("N", "n", "m", "nnz"))
        if N > nnz or nnz > N * n:  # every part is held by a worker; at most N n entries
            raise _bad(f"declared sizes N = {N}, n = {n}, nnz = {nnz} are inconsistent (need N <= nnz <= N n)")
        declared = metadata.get("params")
        if declared != [N, n, m]:
            raise _bad(f"params {declared!r:.60} do not match N, n, m = {[N, n, m]}")
        try:
            check_dense_size("m", n, m * m, "the n x m² work arrays of a structured encoder")
        except GcsimError as exc:
            raise _bad(str(exc)) from None
        want, options = _rederived_diagonals(metadata.get("method"), m, n, metadata.get("options"))
        if target.stores_diagonals:
            D = _stored_diagonals(arrays, m, n)
            _check_same_diagonals(D, want, options)
        elif "diagonals" in arrays:
            raise _bad(f"the {layout} layout stores no diagonals (they are drawn again from the options)")
        else:
            D = want
        obj = target._rebuild(target._stored_structure(arrays, N, n, nnz), D, options, metadata)
        if metadata["method"] != obj.method:  # B = A encoders (m = 1) keep their method's name
            object.__setattr__(obj, "method", metadata["method"])
        return obj

    @classmethod
    def _stored_structure(cls, arrays: Mapping[str, Any], N: int, n: int, nnz: int) -> Any:
        """What the layout's arrays describe, checked structurally (here: the CSC incidence)."""
        return _stored_incidence(arrays, N, n, nnz)

    @classmethod
    def _rebuild(cls, inc: sp.csc_matrix, D: np.ndarray, options: dict[str, Any], metadata: Mapping[str, Any]) -> Any:
        """The structured layout: ``AᵀA = (k − λ)I + λJ`` re-checked exactly, with the stored ``(k, λ)``."""
        try:
            k, lam = check_pair_gram(inc, "incidence")
        except VerificationError as exc:
            raise _bad(f"the incidence is not the structured route's: {exc}") from None
        if metadata.get("pair_gram") != [k, lam]:
            raise _bad(f"the incidence has (k, λ) = {(k, lam)}, the metadata says {metadata.get('pair_gram')!r:.40}")
        enc = cls(inc, D, k, lam, options)
        return _certified_on_load(enc)

    def __repr__(self) -> str:
        c = self.context
        return (
            f"StructuredRD(num_parts={self.num_parts}, n={self.n}, m={self.m}, k={c.k}, lam={c.lam}, "
            f"options={dict(self.options)})"
        )

    #: Most entries of the assignment drawn in the card (:meth:`_repr_html_`); beyond, no picture.
    _CARD_ENTRIES: ClassVar[int] = 1 << 22

    def _repr_html_(self) -> str:
        """Card in Jupyter: params, the route, the options, the verification status and the assignment.

        ``B`` is never formed: the picture is the assignment ``A`` (``B`` stacks ``A diag(d_l)``),
        drawn while it has at most 4M entries.  ``verify()`` (exact, on the sparse incidence)
        runs once, on first display.
        """

        def card() -> str:
            c = self.context
            route = getattr(c, "source", None)
            rows = [
                ("method", f"{self.method} (B = [A diag(d_1); …; A diag(d_m)], never formed)"),
                ("route", f"{type(self).__name__}: " + (str(route) if route else f"AᵀA = {c.k - c.lam}I + {c.lam}J")),
                ("incidence", f"{self.num_parts} × {self.n}, {self.incidence.nnz} ones (sparse)"),
                *_html.scalar_items(self.options, limit=8),
            ]
            small = self.num_parts * self.n <= self._CARD_ENTRIES
            return _html.object_html(
                title=type(self).__name__,
                kind=self.kind,
                params=self.params,
                rows=rows,
                status=_html.verdict(self),
                matrix=self.incidence.toarray() if small else None,
                binary=True,
                caption="the assignment A: rows are parts, columns workers",
            )

        return _html.safe_html(self, card)


StructuredRD._layouts[StructuredRD.layout] = StructuredRD
setattr(StructuredRD, "__init__", _freezing(StructuredRD.__dict__["__init__"]))  # noqa: B010 - a method replaced


class CyclicStructuredRD(StructuredRD):
    """RD(ε) on a cyclic symmetric design kept as its difference set: ``O(k)`` numbers at any size.

    :func:`encode_structured` returns one for a
    :class:`~gcsim.combinatorics.cyclic_design.CyclicDesign` (the Singer planes of
    :func:`~gcsim.combinatorics.cyclic_design.singer_plane`).  It evaluates like
    :class:`StructuredRD` (same diagonals, same context); ``incidence``, the development of the
    difference set, is built on first use only.  Its bundle (layout ``"cyclic"``) is the
    difference set alone: the diagonals are drawn again from the stored options, and the load's
    check is the exact ``O(k²)`` recount of the differences, which by Lemma 9a (theory §10.8) is
    ``AᵀA = (k − λ)I + λJ`` for the development: 318 integers for PG(2, 317), 100,807 workers.

    Examples
    --------
    >>> from gcsim.combinatorics.cyclic_design import CyclicDesign
    >>> enc = encode_structured(CyclicDesign(13, [0, 1, 3, 9]), 2, seed=5)
    >>> arrays = enc.to_arrays()
    >>> sorted(arrays), arrays["difference_set"].tolist()
    (['difference_set'], [0, 1, 3, 9])
    >>> back = StructuredRD.from_arrays(arrays, enc.bundle_metadata())
    >>> type(back).__name__, bool(np.array_equal(back.diagonals, enc.diagonals)), back.incidence.nnz
    ('CyclicStructuredRD', True, 52)
    """

    layout: ClassVar[str] = "cyclic"
    stores_diagonals: ClassVar[bool] = False

    def __init__(self, design: CyclicDesign, D: np.ndarray, options: dict[str, Any]):
        if not isinstance(design, CyclicDesign):
            raise InvalidArgumentError("design", f"must be a CyclicDesign, got {type(design).__name__}")
        self.design = design
        self._set_encoder(None, D, options)
        v, k, lam = design.params
        self.context = StructuredContext(self.diagonals, v, k, lam)

    @cached_property
    def incidence(self) -> sp.csc_matrix:
        """The development of the difference set, sparse CSC (made on first use, ``v k`` entries)."""
        return self.design.incidence

    @property
    def n(self) -> int:
        """Number of workers (``v``)."""
        return self.design.v

    @property
    def num_parts(self) -> int:
        """Number of data parts (``v``)."""
        return self.design.v

    @property
    def nnz(self) -> int:
        """``v k``: every worker holds ``k`` parts (no incidence is built to say so)."""
        return self.design.v * self.design.params.k

    def verify(self) -> bool:
        """Exact: the difference set's ``k(k − 1)`` differences recounted (Lemma 9a), finite ``(m, n)`` diagonals."""
        self.design.verify()
        if tuple(self.design.params[1:]) != (self.context.k, self.context.lam):
            raise VerificationError(f"CyclicStructuredRD: (k, λ) = {tuple(self.design.params[1:])} != the context's")
        self._check_diagonals()
        return True

    def to_arrays(self) -> dict[str, np.ndarray]:
        """``difference_set``: the sorted residues, int64 (the diagonals are drawn again on load)."""
        return {"difference_set": np.array(self.design.base, dtype=np.int64)}

    def _certificate(self) -> dict[str, Any]:
        return {"pair_gram": [int(self.context.k), int(self.context.lam)]}

    @classmethod
    def _stored_structure(cls, arrays: Mapping[str, Any], N: int, n: int, nnz: int) -> Any:
        """The difference set, recounted exactly (the :class:`CyclicDesign` constructor's check)."""
        extra = sorted(set(arrays) - {"difference_set"})
        if extra:
            raise _bad(f"the cyclic layout holds the array 'difference_set' only, got also {extra}")
        if "difference_set" not in arrays:
            raise _bad("array 'difference_set' is missing")
        base = np.asarray(arrays["difference_set"])
        if N != n or base.ndim != 1 or base.dtype.kind not in "iu" or nnz != n * base.size:
            raise _bad(
                f"a cyclic layout needs N = n and nnz = n k integers of a difference set, got N = {N}, n = {n}, "
                f"nnz = {nnz}, 'difference_set' of shape {base.shape} and dtype {base.dtype}"
            )
        try:
            return CyclicDesign(n, base.tolist())
        except GcsimError as exc:
            raise _bad(f"the difference set does not verify: {exc}") from None

    @classmethod
    def _rebuild(cls, design: Any, D: np.ndarray, options: dict[str, Any], metadata: Mapping[str, Any]) -> Any:
        """The cyclic layout: ``(k, λ)`` from the recounted differences must be the stored ``pair_gram``."""
        _, k, lam = design.params
        if metadata.get("pair_gram") != [k, lam]:
            stated = metadata.get("pair_gram")
            raise _bad(f"the difference set has (k, λ) = {(k, lam)}, the metadata says {stated!r:.40}")
        enc = cls(design, D, options)  # named by its parameters: no stored label is reported
        return _certified_on_load(enc)

    def __repr__(self) -> str:
        v, k, lam = self.design.params
        return f"CyclicStructuredRD(v={v}, k={k}, lam={lam}, m={self.m}, options={dict(self.options)})"


def _as_incidence(design: Any, points: int | None) -> sp.csc_matrix:
    inc = getattr(design, "incidence", None)
    if inc is not None and sp.issparse(inc):
        return sp.csc_matrix(inc, dtype=np.int64)
    if sp.issparse(design):
        return sp.csc_matrix(design, dtype=np.int64)
    blocks = getattr(design, "blocks", None)
    if blocks is not None:
        return incidence_from_blocks(int(design.params[0]), blocks)
    if isinstance(design, np.ndarray) or hasattr(design, "assignment"):
        A = np.asarray(getattr(design, "assignment", design))
        if A.ndim != 2:
            raise InvalidArgumentError("design", f"must be a 2-D 0/1 matrix, got shape {A.shape}")
        # a dense matrix (or a zero-stride view of one) is read entry by entry: its logical size first
        limits.check_entries(
            "design", A.shape, "the dense 0/1 matrix", hint="give a scipy.sparse matrix or the design's blocks"
        )
        return sp.csc_matrix(A, dtype=np.int64)
    if isinstance(design, Sequence) or isinstance(design, Iterable):
        if points is None:
            raise InvalidArgumentError("points", "a block list needs points=v (the number of parts)")
        return incidence_from_blocks(points, design)
    raise InvalidArgumentError(
        "design", f"must be a design, a sparse or dense 0/1 matrix or a block list, got {type(design).__name__}"
    )


def encode_structured(
    design: Any,
    m: int,
    *,
    eps: float = 0.0,
    seed: int = 0,
    dist: str = "rademacher",
    points: int | None = None,
) -> StructuredRD:
    """RD(ε) encoder of a design with ``AᵀA = (k − λ)I + λJ`` (a symmetric BIBD), without dense matrices.

    The diagonals are those of ``gcsim.coding.encode(design, m, "rd", eps=eps, seed=seed,
    dist=dist)`` (same generator, same order), so where both fit the two encoders have the same
    ``B`` entry for entry.

    Parameters
    ----------
    design : BIBD, CyclicDesign, scipy.sparse matrix, 0/1 array or list of blocks
        The assignment (parts x workers); a block list (worker ``j`` holds the parts of block
        ``j``) needs ``points``.  A :class:`~gcsim.combinatorics.cyclic_design.CyclicDesign` gives a
        :class:`CyclicStructuredRD` (kept and exported as its difference set).
    m : int
        Communication reduction.
    eps, seed, dist
        As for the ``"rd"`` encoder.
    points : int, optional
        Number of parts for a block list.

    Raises
    ------
    VerificationError
        The assignment does not have ``AᵀA = (k − λ)I + λJ`` with ``k > λ`` (checked exactly).
    InvalidArgumentError
        The structured route's accuracy bound (theory §42.2) is not certified for this design.
    SizeLimitError
        ``n m²`` beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`.

    Examples
    --------
    >>> from gcsim.combinatorics.geometries import pg_flats
    >>> enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    >>> enc.params, enc.context.k, enc.context.lam
    (SchemeParams(num_parts=13, n=13, m=2), 4, 1)
    """
    m = check_int("m", m, minimum=1)
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    if points is not None:
        points = check_int("points", points, minimum=1)
        limits.check_entries("points", (points,), "the points of the design (a row of the incidence each)")
    if isinstance(design, CyclicDesign):  # kept as its difference set (O(k) numbers, O(k²) check)
        v, k_c, lam_c = design.params  # the constructor recounted the differences (immutable since)
        check_dense_size("m", v, m * m, "the n x m² outer products of the structured route")
        D_c = get_encoder(StructuredRD.method).derived(m, v, eps, seed, {"dist": dist})
        cyc = CyclicStructuredRD(design, D_c, {"eps": eps, "seed": seed, "dist": dist})
        _check_certified(cyc.context, k_c, lam_c)
        return cyc
    A = _as_incidence(design, points)
    N, n = A.shape
    k, lam = check_pair_gram(A, "design")
    check_dense_size("m", n, m * m, "the n x m² outer products of the structured route")
    D = get_encoder(StructuredRD.method).derived(m, n, eps, seed, {"dist": dist})
    enc = StructuredRD(A, D, k, lam, {"eps": eps, "seed": seed, "dist": dist})
    _check_certified(enc.context, k, lam)
    return enc


def _check_certified(c: StructuredContext, k: int, lam: int) -> None:
    if not c.certified:
        raise InvalidArgumentError(
            "design",
            f"the structured route's error bound {c.bound_full:.3g} exceeds STRUCTURED_LIMIT mN = "
            f"{STRUCTURED_LIMIT * c.total:.3g} (k = {k}, λ = {lam}: κ(aI + λM) up to {c.kappa:.3g}; theory §42.2); "
            "use gcsim.coding.encode and the dense routes",
        )


# ----------------------------------------------------------------------------------------------
# streaming Monte Carlo: the masks of a model's sample(), drawn and evaluated chunk by chunk
# ----------------------------------------------------------------------------------------------


def _mask_chunks(model: Any, count: int, seed: int, chunk: int) -> Iterator[np.ndarray]:
    """The rows of ``model.sample(count, seed)`` in chunks, bit for bit, without holding them all.

    ``Generator.random((c, n))`` fills rows in order, so consecutive chunks of the same
    generator are the rows of one big draw; the fixed-s and Bernoulli samplers are row-wise.
    """
    rng = rng_from_seed(seed)
    n = model.n
    for a in range(0, count, chunk):
        c = min(chunk, count - a)
        keys = rng.random((c, n))
        yield model.masks_from_keys(keys)  # guarded by streamable()


def streamable(model: Any) -> bool:
    """True for the models whose samples :func:`stream_errors` can draw chunk by chunk."""
    return bool(getattr(model, "streamable", False))


def stream_errors(ctx: StructuredContext, model: Any, count: int, seed: int) -> np.ndarray:
    """``ctx.errors(model.sample(count, seed))`` in ``O(chunk · n)`` memory (same numbers).

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> ctx = StructuredContext(np.ones((1, 7)), 7, 3, 1)
    >>> model = straggler_model("bernoulli", 7, p=0.3)
    >>> bool(np.array_equal(stream_errors(ctx, model, 50, 3), ctx.errors(model.sample(50, 3))))
    True
    """
    count = check_int("count", count, minimum=0)
    limits.check_work(
        "count", count, "Monte Carlo patterns (one error kept each)", limit_name="MAX_MC_DRAWS", unit="draws"
    )
    out = np.empty(count)
    chunk = max(1, _CHUNK_BYTES // (8 * max(ctx.n, 1)))
    a = 0
    for mk in _mask_chunks(model, count, seed, chunk):
        out[a : a + mk.shape[0]] = ctx.errors(mk)
        a += mk.shape[0]
    return out


class LazySample:
    """``model.sample(count, seed)`` not yet drawn: :func:`evaluate` draws and evaluates it in chunks."""

    def __init__(self, model: Any, count: int, seed: int):
        if not streamable(model):
            raise InvalidArgumentError("model", f"{type(model).__name__} cannot be streamed")
        self.model = model
        self.count = check_int("count", count, minimum=0)
        self.seed = check_int("seed", seed, minimum=0)


def evaluate(ctx: StructuredContext, masks: Any) -> np.ndarray:
    """Raw errors of a ``(count, n)`` mask stack or of a :class:`LazySample` (streamed)."""
    if isinstance(masks, LazySample):
        return stream_errors(ctx, masks.model, masks.count, masks.seed)
    return ctx.errors(np.asarray(masks, dtype=bool))
