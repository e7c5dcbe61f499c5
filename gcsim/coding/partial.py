"""Partial gradient coding: an uncoded part and a coded part per worker (docs/theory.md §48.3).

The model (after the coded partial gradient computation of Ozfatura, Ulukus & Gündüz,
"Distributed gradient descent with coded partial gradient computations", ICASSP 2019, where each
worker first returns uncoded partial gradients and then coded ones; the formalization below is
gcsim's).  An assignment ``A`` (``N`` parts x ``n`` workers) and an **owner** for some parts,
``owner[i] ∈ N_i`` (a holder of part ``i``) or ``-1``:

* worker ``j`` sends the gradient ``g_i`` of every part it owns **uncoded** (``d`` scalars each);
* and one **coded** message ``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]`` (``⌈d/m⌉`` scalars) of the *rest* of
  its parts: ``B`` is supported on ``A_c = A`` without the entries ``(i, owner[i])``, built by any
  gcsim encoder (:func:`gcsim.coding.schemes.encode`) on the parts ``C`` that ``A_c`` still holds
  (a part owned by its only holder is sent uncoded only).

On the non-stragglers ``F`` the master adds every uncoded gradient that arrived (the parts
``U_F = {i : owner[i] ∈ F}``), subtracts their (known) contributions from the coded messages that
arrived, and decodes what is left for the parts ``R = [N] \\ U_F`` it still misses.  Its error is

.. math:: \\mathrm{err}_{\\mathrm{partial}}(F) = \\min_X \\|B_{R,F} X - T_R\\|_F^2 ,

``B_{R,F}`` the rows ``kN + i`` (``i ∈ R``) and columns ``F`` of ``B``, ``T_R`` those rows of
``T = I_m ⊗ 1_N``; the same number as the best linear estimate from all the arrived vectors
(theory §48.3, Theorem 48.4).  A part of ``R`` that no coded message holds costs ``m``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._validation import check_binary_matrix, check_bool, check_count, check_int, check_mask
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from ..limits import array_shape, check_entries
from .decoders import optimal_decoder
from .evaluate import optimal_error
from .schemes import Scheme, _as_assignment, encode
from .stragglers import combinations_masks

__all__ = [
    "PartialScheme",
    "PartialSchemeParams",
    "partial_scheme",
    "partial_error",
    "partial_error_all",
    "partial_decoder",
]


class PartialSchemeParams(NamedTuple):
    """``num_parts`` (``N``), ``n`` workers, ``m`` blocks of the coded message, ``uncoded`` owned parts."""

    num_parts: int
    n: int
    m: int
    uncoded: int


def _readonly(a: Any, dtype: Any) -> np.ndarray:
    out = np.array(a, dtype=dtype)
    out.setflags(write=False)
    return out


def _coded_support(A: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """``A_c``: ``A`` without the entries ``(i, owner[i])`` (what each worker codes)."""
    Ac = A.copy()
    owned = np.flatnonzero(owner >= 0)
    Ac[owned, owner[owned]] = 0
    return Ac


class PartialScheme:
    """A partial gradient code: owners of the uncoded parts and the coded encoder of the rest.

    Immutable (read-only arrays, no attribute can be set).  Build with :func:`partial_scheme`.

    Attributes
    ----------
    assignment : numpy.ndarray
        ``N x n`` 0/1 assignment (read-only int64).
    owner : numpy.ndarray
        ``(N,)`` int64: the worker that sends part ``i`` uncoded, or ``-1``.
    coded_parts : numpy.ndarray
        ``C``, the increasing indices of the parts some worker codes (read-only int64).
    coded : Scheme or None
        The encoder of the coded messages over the parts ``C`` (its assignment is ``A_c[C]``);
        None when ``C`` is empty (every part is sent uncoded only).
    m : int
        Blocks of the coded message (1 when there is none).

    Examples
    --------
    >>> from gcsim.combinatorics.baselines import cyclic_repetition
    >>> ps = partial_scheme(cyclic_repetition(4, 2), 1, "naive")
    >>> ps.params, ps.owner.tolist(), ps.communication().tolist()
    (PartialSchemeParams(num_parts=4, n=4, m=1, uncoded=4), [0, 1, 2, 3], [2.0, 2.0, 2.0, 2.0])
    """

    kind: ClassVar[str] = "partial_scheme"
    Params: ClassVar[type] = PartialSchemeParams

    assignment: np.ndarray
    owner: np.ndarray
    coded_parts: np.ndarray
    coded: Scheme | None
    m: int

    def __init__(self, assignment: Any, owner: Any, coded_parts: Any, coded: Scheme | None):
        A = _readonly(assignment, np.int64)
        set_ = object.__setattr__
        set_(self, "assignment", A)
        set_(self, "owner", _readonly(owner, np.int64))
        set_(self, "coded_parts", _readonly(np.asarray(coded_parts).reshape(-1), np.int64))
        set_(self, "coded", coded)
        set_(self, "m", int(coded.m) if coded is not None else 1)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"PartialScheme is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"PartialScheme is immutable: cannot delete {name!r}")

    # -- shape -------------------------------------------------------------------------------
    @property
    def num_parts(self) -> int:
        """``N``."""
        return int(self.assignment.shape[0])

    @property
    def n(self) -> int:
        """Number of workers."""
        return int(self.assignment.shape[1])

    @property
    def params(self) -> PartialSchemeParams:
        """``(num_parts, n, m, uncoded)``."""
        return PartialSchemeParams(self.num_parts, self.n, self.m, int(np.sum(self.owner >= 0)))

    def full_encoder(self) -> np.ndarray:
        """``B`` of the coded messages over all ``N`` parts, ``(mN, n)``: zero rows outside ``C``."""
        N, m = self.num_parts, self.m
        B = np.zeros((m * N, self.n))
        if self.coded is not None:
            rows = (np.arange(m)[:, None] * N + self.coded_parts[None, :]).ravel()
            B[rows] = self.coded.B
        return B

    def communication(self, d: int | None = None) -> np.ndarray:
        """Per-worker communication: ``u_j + c_j/m`` gradients (``d=None``), or ``u_j d + c_j ⌈d/m⌉`` scalars.

        ``u_j`` is the number of parts worker ``j`` owns and ``c_j = 1`` when it codes at least one
        part (it sends a coded message), else 0.

        Examples
        --------
        >>> A = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1]])
        >>> ps = partial_scheme(A, 2, "naive", owners="alone")
        >>> ps.owner.tolist(), ps.communication().tolist(), ps.communication(d=5).tolist()
        ([0, -1, -1], [1.5, 0.5, 0.5], [8, 3, 3])
        """
        u = np.bincount(self.owner[self.owner >= 0], minlength=self.n)
        sends = np.zeros(self.n, dtype=np.int64)
        if self.coded is not None:
            sends = (self.coded.assignment.sum(axis=0) > 0).astype(np.int64)
        if d is None:
            return u + sends / self.m
        d = check_int("d", d, minimum=1)
        return u * d + sends * (-(-d // self.m))

    # -- the contract ------------------------------------------------------------------------
    def verify(self) -> bool:
        """Check the defining identities; returns True or raises :class:`VerificationError`.

        ``A`` is 0/1 with every part held; ``owner[i] = -1`` or ``A[i, owner[i]] = 1``; ``C`` is the set
        of parts that ``A_c`` (``A`` without the owner entries) still holds, and every part is owned
        or coded; the coded scheme's assignment is ``A_c[C]`` and it verifies.
        """
        A, owner = self.assignment, self.owner
        N, n = A.shape if A.ndim == 2 else (0, 0)
        if A.ndim != 2 or not np.isin(A, (0, 1)).all() or (A.sum(axis=1) == 0).any():
            raise VerificationError("PartialScheme: the assignment is not a 0/1 matrix holding every part")
        if owner.shape != (N,) or np.any(owner < -1) or np.any(owner >= n):
            raise VerificationError(f"PartialScheme: owner must have N = {N} entries in -1..{n - 1}")
        owned = np.flatnonzero(owner >= 0)
        if np.any(A[owned, owner[owned]] != 1):
            raise VerificationError("PartialScheme: an owner does not hold the part it sends uncoded")
        Ac = _coded_support(A, owner)
        C = np.flatnonzero(Ac.sum(axis=1) > 0)
        if not np.array_equal(self.coded_parts, C):
            raise VerificationError("PartialScheme: coded_parts is not the set of parts A_c still holds")
        if np.any((owner < 0) & (Ac.sum(axis=1) == 0)):
            raise VerificationError("PartialScheme: a part is neither owned nor coded")
        if (self.coded is None) != (C.size == 0):
            raise VerificationError("PartialScheme: a coded scheme is needed exactly when some part is coded")
        if self.coded is not None:
            if not np.array_equal(self.coded.assignment, Ac[C]):
                raise VerificationError("PartialScheme: the coded scheme's assignment is not A_c[C]")
            self.coded.verify()
        return True

    def to_arrays(self) -> dict[str, np.ndarray]:
        """``assignment``, ``owner``, ``coded_parts`` and the coded scheme's arrays as ``coded.<name>``."""
        arrays = {"assignment": self.assignment, "owner": self.owner, "coded_parts": self.coded_parts}
        if self.coded is not None:
            arrays.update({f"coded.{k}": v for k, v in self.coded.to_arrays().items()})
        return arrays

    def bundle_metadata(self) -> dict[str, Any]:
        """``params``, ``construction`` and the coded scheme's metadata (``coded``, or null)."""
        return {
            "params": list(self.params),
            "construction": "partial" if self.coded is None else f"partial + {self.coded.method}",
            "arrays": sorted(self.to_arrays()),
            "coded": None if self.coded is None else self.coded.bundle_metadata(),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> PartialScheme:
        """Rebuild from :meth:`to_arrays` and :meth:`bundle_metadata`, checking everything.

        Raises
        ------
        CatalogueError
            Missing or malformed arrays, params that do not match them, or a scheme that does not verify.
        """
        for key in ("assignment", "owner", "coded_parts"):
            if key not in arrays:
                raise CatalogueError(f"partial_scheme: array {key!r} is missing")
        try:
            params = PartialSchemeParams(*metadata["params"])
            A = check_binary_matrix("assignment", arrays["assignment"])
            owner = np.asarray(arrays["owner"])
            parts = np.asarray(arrays["coded_parts"])
            if owner.dtype.kind not in "iu" or parts.dtype.kind not in "iu":
                raise CatalogueError("partial_scheme: owner and coded_parts must be integer arrays")
            sub = {k[len("coded.") :]: v for k, v in arrays.items() if k.startswith("coded.")}
            meta = metadata.get("coded")
            coded = None
            if meta is not None or sub:
                if meta is None or not sub:
                    raise CatalogueError("partial_scheme: the coded scheme's arrays and metadata must come together")
                coded = Scheme.from_arrays(sub, meta)
            ps = cls(A, owner, parts, coded)
        except (KeyError, TypeError, ValueError, InvalidArgumentError) as exc:
            if isinstance(exc, CatalogueError):
                raise
            raise CatalogueError(f"partial_scheme: malformed bundle ({exc})") from None
        if tuple(ps.params) != tuple(params):
            raise CatalogueError(f"partial_scheme: params {tuple(params)} do not match the arrays' {tuple(ps.params)}")
        try:
            ps.verify()
        except VerificationError as exc:
            raise CatalogueError(str(exc)) from None
        return ps

    def __repr__(self) -> str:
        method = None if self.coded is None else self.coded.method
        return f"PartialScheme(params={tuple(self.params)!r}, coded={method!r})"

    def _repr_html_(self) -> str:
        """Rich display: params, owners, communication, verification status, a heat map of the full ``B``."""
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="PartialScheme",
                kind=self.kind,
                params=self.params,
                rows=[
                    ("coded encoder", "none" if self.coded is None else self.coded.method),
                    ("coded parts", f"{self.coded_parts.size} of {self.num_parts}"),
                    ("communication per worker (gradients)", f"{float(self.communication().max()):.3g} at most"),
                ],
                status=_html.verdict(self),
                matrix=self.full_encoder(),
                caption="coded encoder B over all parts (zero rows: sent uncoded only)",
            ),
        )


def _owners(A: np.ndarray, owners: Any) -> np.ndarray:
    N, n = A.shape
    if isinstance(owners, str):
        if owners == "own":
            if N != n or not np.all(np.diag(A) == 1):
                raise InvalidArgumentError(
                    "owners", "'own' needs a square assignment with A[i, i] = 1 (worker i holds part i)"
                )
            return np.arange(N, dtype=np.int64)
        if owners == "alone":
            single = A.sum(axis=1) == 1
            return np.where(single, np.argmax(A, axis=1), -1).astype(np.int64)
        raise InvalidArgumentError("owners", f"must be 'own', 'alone' or an array of N owners, got {owners!r}")
    try:
        arr = np.asarray(owners)
    except (TypeError, ValueError):  # ragged nested lists: refused as any other wrong shape
        arr = np.empty((0, 0))
    if arr.shape != (N,) or arr.dtype.kind not in "iu":
        raise InvalidArgumentError("owners", f"must be an integer array of length N = {N} (-1 = none)")
    if np.any(arr < -1) or np.any(arr >= n):
        raise InvalidArgumentError("owners", f"entries must lie in -1..{n - 1}")
    owned = np.flatnonzero(arr >= 0)
    bad = owned[A[owned, arr[owned]] != 1]
    if bad.size:
        raise InvalidArgumentError(
            "owners", f"part {int(bad[0])} is owned by worker {int(arr[bad[0]])}, which does not hold it"
        )
    return arr.astype(np.int64)


def partial_scheme(
    assignment_or_design: Any,
    m: int = 1,
    method: str = "rd",
    *,
    owners: Any = "own",
    eps: float = 0.0,
    seed: int = 0,
    **options: Any,
) -> PartialScheme:
    """Build a partial gradient code (theory §48.3).

    Parameters
    ----------
    assignment_or_design : array_like or object with ``.assignment``
        ``N x n`` 0/1 assignment.
    m : int
        Blocks of the coded message (``⌈d/m⌉`` scalars).
    method : str
        The encoder of the coded messages (one of :data:`gcsim.coding.schemes.METHODS` that builds on
        the coded support ``A_c[C]``).
    owners : "own", "alone" or array_like of int
        ``"own"``: worker ``i`` sends part ``i`` uncoded (square ``A`` with ``A[i, i] = 1``, e.g. an
        ``Adj + I`` assignment); ``"alone"``: every part held by one worker only is sent uncoded by it
        (a data split into an uncoded and a replicated share); an array: ``owner[i]`` or ``-1``.
    eps, seed, **options
        Passed to :func:`gcsim.coding.schemes.encode`.

    Raises
    ------
    InvalidArgumentError
        Bad assignment or owners (an owner that does not hold its part), ``m > 1`` with no coded
        message, or what :func:`encode` refuses (e.g. ``r_i < m`` on the coded support for ``"ns"``).

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])   # N = n = 3, A[i, i] = 1
    >>> ps = partial_scheme(A, 1, "naive")
    >>> ps.coded.assignment.tolist()                     # worker j codes the part it does not own
    [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    >>> partial_error(ps, [True, False, True])           # part 1 arrives coded from worker 2
    0.0
    """
    A = _as_assignment(assignment_or_design)
    owner = _owners(A, owners)
    Ac = _coded_support(A, owner)  # a part nobody owns keeps its (non-empty) row of A: it is coded
    C = np.flatnonzero(Ac.sum(axis=1) > 0)
    coded = encode(Ac[C], m, method, eps=eps, seed=seed, **options) if C.size else None
    if coded is None:
        m = check_int("m", m, minimum=1)
        if m != 1:
            raise InvalidArgumentError("m", "every part is sent uncoded only: there is no coded message, use m = 1")
    ps = PartialScheme(A, owner, C, coded)
    ps.verify()
    return ps


def _received(ps: PartialScheme, masks: np.ndarray) -> np.ndarray:
    """``(count, N)`` bool: part ``i`` arrived uncoded (its owner is in ``F``)."""
    owned = ps.owner >= 0
    got = np.zeros((masks.shape[0], ps.num_parts), dtype=bool)
    got[:, owned] = masks[:, ps.owner[owned]]
    return got


def _zeroed_scheme(ps: PartialScheme, B: np.ndarray, received: np.ndarray) -> Scheme:
    """The full encoder with the rows of the received parts zeroed (they need no decoding)."""
    Bz = B.copy()
    rows = (np.arange(ps.m)[:, None] * ps.num_parts + np.flatnonzero(received)[None, :]).ravel()
    Bz[rows] = 0.0
    return Scheme.from_matrix(Bz, ps.assignment, ps.m, method="partial")


def partial_error(
    ps: PartialScheme, nonstragglers: Any, *, normalized: bool = False, method: str = "auto"
) -> float | np.ndarray:
    """Error of partial gradient coding ``min_X ‖B_{R,F} X - T_R‖_F²`` per pattern (theory §48.3).

    Computed as ``err(B', F) - m |U_F|`` with ``B'`` the full encoder whose rows of the received
    parts ``U_F`` are zeroed (Theorem 48.4), by :func:`gcsim.coding.evaluate.optimal_error`; patterns
    that receive the same uncoded parts share one evaluation.

    Parameters
    ----------
    ps : PartialScheme
    nonstragglers : array_like of bool, shape (n,) or (count, n)
    normalized : bool
        Divide by ``mN``.
    method : str
        Route of :func:`optimal_error`.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> ps = partial_scheme(A, 1, "naive")
    >>> partial_error(ps, [[True, True, True], [True, False, False], [False, False, False]]).tolist()
    [0.0, 1.0, 3.0]
    """
    normalized = check_bool("normalized", normalized)
    if not isinstance(ps, PartialScheme):
        raise InvalidArgumentError("ps", "must be a PartialScheme (see partial_scheme)")
    check_entries("nonstragglers", array_shape(nonstragglers), "a batch of straggler masks")  # before any copy
    masks = check_mask("nonstragglers", nonstragglers, ps.n)
    single = masks.ndim == 1
    masks2 = masks[None, :] if single else masks
    got = _received(ps, masks2)
    out = np.empty(masks2.shape[0])
    B = ps.full_encoder()
    keys, inverse = np.unique(got, axis=0, return_inverse=True)
    for g, key in enumerate(keys):
        idx = np.flatnonzero(inverse.reshape(-1) == g)
        sch = _zeroed_scheme(ps, B, key)
        vals = np.atleast_1d(optimal_error(sch, masks2[idx], method=method, progress=False))
        # the zeroed rows of the received parts cost exactly ‖T_U‖² = m |U_F|
        out[idx] = np.maximum(vals - ps.m * int(key.sum()), 0.0)
    if normalized:
        out = out / (ps.m * ps.num_parts)
    return float(out[0]) if single else out


def partial_error_all(ps: PartialScheme, s: int, *, normalized: bool = False, method: str = "auto") -> np.ndarray:
    """:func:`partial_error` of every straggler set ``|S| = s``, in lexicographic order of ``S``.

    More than :data:`gcsim.limits.MAX_PATTERNS` sets are refused up front.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> partial_error_all(partial_scheme(A, 1, "naive"), 2).tolist()   # one worker left: its own part + one coded
    [1.0, 1.0, 1.0]
    """
    normalized = check_bool("normalized", normalized)
    if not isinstance(ps, PartialScheme):
        raise InvalidArgumentError("ps", "must be a PartialScheme (see partial_scheme)")
    s = check_int("s", s, minimum=0, maximum=ps.n)
    check_count("s", math.comb(ps.n, s), f"straggler sets C({ps.n}, {s})")
    return np.atleast_1d(partial_error(ps, combinations_masks(ps.n, s), normalized=normalized, method=method))


def partial_decoder(ps: PartialScheme, nonstragglers: Any) -> tuple[np.ndarray, np.ndarray]:
    """The master's decoding on one pattern: the uncoded parts it adds and the coded decoder ``X``.

    Returns ``(received, X)``: ``received`` (``(N,)`` bool) marks the parts whose uncoded gradient
    arrived; ``X`` (``(n, m)``, zero rows off ``F``) is the minimum-norm ``B_{R,F}⁺ T_R``.  The
    estimate of block ``l`` is

    .. math:: \\sum_{i \\in U_F} g_i[l] + \\sum_{j \\in F} X_{jl}\\Big(\\tilde g_j
              - \\sum_{k}\\sum_{i \\in U_F} B_{kN+i,\\,j}\\, g_i[k]\\Big),

    the coded messages with the received parts' contributions removed (theory §48.3).

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> got, X = partial_decoder(partial_scheme(A, 1, "naive"), [True, False, True])
    >>> got.tolist(), X.round(12).ravel().tolist()
    ([True, False, True], [0.0, 0.0, 1.0])
    """
    if not isinstance(ps, PartialScheme):
        raise InvalidArgumentError("ps", "must be a PartialScheme (see partial_scheme)")
    check_entries("nonstragglers", array_shape(nonstragglers), "a batch of straggler masks")  # before any copy
    mask = check_mask("nonstragglers", nonstragglers, ps.n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    got = _received(ps, mask[None, :])[0]
    return got, optimal_decoder(_zeroed_scheme(ps, ps.full_encoder(), got), mask)
