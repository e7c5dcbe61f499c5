"""Encoders of communication-efficient approximate gradient coding (theory §5.1, §5.4).

An *encoder* turns an assignment matrix ``A`` (``N`` parts x ``n`` workers,
``A[i, j] = 1`` iff worker ``j`` holds part ``i``) and a communication
reduction ``m >= 1`` into an encoding matrix ``B`` of shape ``(m*N, n)``.
Rows are block-major: row ``k*N + i`` tells how block ``k`` of part ``i``
enters each worker's transmission,

.. math::  \\tilde g_j = \\sum_k \\sum_i B[kN+i, j]\\, g_i[k] \\in \\mathbb{R}^{d/m},

and ``B[kN+i, j] != 0`` only if ``A[i, j] = 1`` (support constraint).
The target of decoding is ``T = I_m ⊗ 1_N`` (shape ``(m*N, m)``).

Methods of :func:`encode`
-------------------------
Each method is a registered :class:`gcsim.coding.Encoder` (one module each in
:mod:`gcsim.coding.encoders`, defined and proved where its ``theory`` says); :data:`METHODS`
lists them, live (so this text names none: a list here would go stale as encoders are added), and
:func:`gcsim.coding.register_encoder` adds one.  docs/guides/coding.md tabulates the built-in ones
(its table is :func:`gcsim.coding.encoders.method_table`, checked by the tests).

Every randomized encoder is reproducible: the same ``seed`` gives the same ``B``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._threads import batched_blas
from .._validation import (
    check_binary_matrix,
    check_declared_arrays,
    check_dense_size,
    check_finite_array,
    check_int,
    check_mask,
    check_real,
)
from ..errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError
from ..io._torch import to_torch_tensors
from .encoders import METHODS, get_encoder, is_registered, seeded_rng
from .encoders._common import as_assignment, diagonals, target_matrix
from .encoders.classic import cyclic_repetition_assignment, fractional_repetition_assignment
from .scheme_labels import rederived_options

__all__ = [
    "Scheme",
    "SchemeParams",
    "encode",
    "METHODS",
    "target_matrix",
    "exact_decoder",
    "fractional_repetition_assignment",
    "cyclic_repetition_assignment",
]

# kept for the modules that import them from here (gcsim.coding.partial, gcsim.learning.train)
_as_assignment = as_assignment
_diagonals = diagonals


def _plain(value: Any) -> Any:
    """A JSON-serializable form of an option value (numpy scalars and arrays to Python)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class SchemeParams(NamedTuple):
    """Parameters of a :class:`Scheme`: ``num_parts`` data parts (``N``), ``n`` workers, ``m`` blocks."""

    num_parts: int
    n: int
    m: int


def _frozen_array(name: str, value: Any, dtype: Any) -> np.ndarray:
    try:
        out = np.array(value, dtype=dtype)
    except (OverflowError, TypeError, ValueError) as exc:  # e.g. an int beyond float64's range
        raise InvalidArgumentError(
            name, f"cannot be converted to {np.dtype(dtype).name} (an entry is beyond its range or not a number)"
        ) from exc
    out.setflags(write=False)
    return out


def _frozen_mapping(mapping: Any) -> Mapping[str, Any]:
    """A read-only mapping whose array values are read-only copies."""
    items = {}
    for key, value in dict(mapping or {}).items():
        if isinstance(value, np.ndarray):
            value = np.array(value)
            value.setflags(write=False)
        items[str(key)] = value
    return MappingProxyType(items)


@dataclass(frozen=True, eq=False)
class Scheme:
    """An encoding matrix together with its assignment (docs/theory.md §5.1, §5.4).

    Immutable: the arrays are read-only and ``options``/``extras`` are read-only mappings.

    Attributes
    ----------
    B : numpy.ndarray
        float64, shape ``(m*N, n)``, block-major rows (row ``k*N + i`` = block
        ``k`` of part ``i``); read-only.
    assignment : numpy.ndarray
        int64 0/1 matrix, ``N x n``; read-only.
    m : int
        Communication reduction (number of blocks).
    method : str
        Name of the encoder (one of :data:`METHODS`, or ``"custom"``).
    options : Mapping
        Encoder options and diagnostics (``eps``, ``seed``, ``dist``, ``s``, ... and
        e.g. the NS-worker residual).
    decoder : numpy.ndarray or None
        Reference decoder ``X_0`` of shape ``(n, m)`` (used by fixed-decoder
        error), or None.
    diagonals : numpy.ndarray or None
        For ``"rd"``: the diagonals ``d_k`` as an ``(m, n)`` array.
    extras : Mapping
        Construction data (e.g. ``H`` and ``P`` of the exact family, the NS ``vectors``).
    params : SchemeParams
        ``(num_parts, n, m)``.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> sch = encode(A, 2, "naive")
    >>> sch.B.shape, sch.num_parts, sch.n, sch.m
    ((6, 3), 3, 3, 2)
    >>> sch.params
    SchemeParams(num_parts=3, n=3, m=2)
    >>> sch.target().shape
    (6, 2)
    """

    kind: ClassVar[str] = "scheme"

    B: np.ndarray
    assignment: np.ndarray
    m: int
    method: str = "custom"
    options: Mapping[str, Any] = field(default_factory=dict)
    decoder: np.ndarray | None = None
    diagonals: np.ndarray | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "B", _frozen_array("B", self.B, np.float64))
        setattr_(self, "assignment", _frozen_array("assignment", self.assignment, np.int64))
        setattr_(self, "m", check_int("m", self.m, minimum=1))  # 2.5 was truncated to 2
        setattr_(self, "method", str(self.method))
        if self.decoder is not None:
            setattr_(self, "decoder", _frozen_array("decoder", self.decoder, np.float64))
        if self.diagonals is not None:
            setattr_(self, "diagonals", _frozen_array("diagonals", self.diagonals, np.float64))
        setattr_(self, "options", _frozen_mapping(self.options))
        setattr_(self, "extras", _frozen_mapping(self.extras))

    # -- shape -------------------------------------------------------------------------------
    @property
    def params(self) -> SchemeParams:
        """``SchemeParams(num_parts, n, m)``."""
        return SchemeParams(self.num_parts, self.n, self.m)

    @property
    def num_parts(self) -> int:
        """Number of data parts ``N``."""
        return int(self.assignment.shape[0])

    @property
    def n(self) -> int:
        """Number of workers."""
        return int(self.assignment.shape[1])

    @property
    def replication(self) -> np.ndarray:
        """``r_i``, the number of holders of each part."""
        return self.assignment.sum(axis=1)

    def target(self) -> np.ndarray:
        """``T = I_m ⊗ 1_N`` (shape ``(m*N, m)``)."""
        return target_matrix(self.m, self.num_parts)

    def block(self, k: int) -> np.ndarray:
        """The ``N x n`` block ``B^{(k)}`` (rows ``k*N .. k*N+N-1``)."""
        k = check_int("k", k, minimum=0, maximum=self.m - 1)
        return self.B[k * self.num_parts : (k + 1) * self.num_parts]

    def check_support(self) -> bool:
        """Raise :class:`InvalidArgumentError` if ``B`` has an entry outside the support.

        ``B[k*N+i, j]`` must be 0 whenever ``A[i, j] = 0``.  Returns True.
        """
        B, A, N = self.B, self.assignment, self.num_parts
        if B.shape != (self.m * N, self.n):
            raise InvalidArgumentError("B", f"must have shape (m*N, n) = {(self.m * N, self.n)}, got {B.shape}")
        outside = (np.tile(A, (self.m, 1)) == 0) & (B != 0)
        if outside.any():
            rows, cols = np.nonzero(outside)
            pairs = [(int(r // N), int(r % N), int(c)) for r, c in zip(rows[:5], cols[:5], strict=True)]
            raise InvalidArgumentError(
                "B", f"support violation at {int(outside.sum())} entries, e.g. (block, part, worker) = {pairs}"
            )
        return True

    def verify(self) -> bool:
        """Check the defining identities; returns True or raises :class:`VerificationError`.

        ``B`` is finite, of shape ``(mN, n)`` and supported on ``1_m ⊗ A``; ``A`` is 0/1 with every
        part held; the reference decoder (if any) is finite of shape ``(n, m)``; then the registered
        encoder of :attr:`method` checks its own identities (:attr:`gcsim.coding.Encoder.verify`: e.g.
        RD's block ``k`` is exactly ``A diag(d_k)``, naive's ``B = 1_m ⊗ A``, the exact family's
        ``B = P H`` up to round-off).
        """
        name = f"Scheme({self.method!r})"
        A, B = self.assignment, self.B
        if A.ndim != 2 or not np.isin(A, (0, 1)).all() or (A.shape[0] and (A.sum(axis=1) == 0).any()):
            raise VerificationError(f"{name}: the assignment is not a 0/1 matrix holding every part")
        if not np.all(np.isfinite(B)):
            raise VerificationError(f"{name}: B has NaN or inf entries")
        try:
            self.check_support()
        except InvalidArgumentError as exc:
            raise VerificationError(f"{name}: {exc}") from None
        if self.decoder is not None and (
            self.decoder.shape != (self.n, self.m) or not np.all(np.isfinite(self.decoder))
        ):
            raise VerificationError(f"{name}: the reference decoder must be a finite (n, m) matrix")
        # the encoder's own identities (diagonal stacks, pseudo-inverses, B = P H, ...)
        if is_registered(self.method):
            check = get_encoder(self.method).verify
            if check is not None:
                check(self, name)
        return True

    # -- arrays ------------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """``B``, ``assignment`` and, when present, ``decoder``, ``diagonals`` and ``extras.<key>``."""
        arrays = {"B": self.B, "assignment": self.assignment}
        if self.decoder is not None:
            arrays["decoder"] = self.decoder
        if self.diagonals is not None:
            arrays["diagonals"] = self.diagonals
        for key, value in self.extras.items():
            if isinstance(value, np.ndarray):
                arrays[f"extras.{key}"] = value
        return arrays

    def to_torch(self, dtype: Any = None, device: Any = None) -> dict[str, Any]:
        """The encoder ``B`` (``(m N, n)``) and, when present, the reference ``decoder`` (``(n, m)``) as torch tensors.

        Parameters
        ----------
        dtype : str or torch.dtype, optional
            Floating dtype (``"float32"``, ``torch.bfloat16``, ...); default float64, the scheme's own.
        device : str or torch.device, optional
            Default torch's default device.

        Returns
        -------
        dict
            ``{"B": tensor}``, plus ``"decoder"`` when the scheme has one; new tensors.

        Raises
        ------
        MissingDependencyError
            torch is not installed (``pip install 'gcsim[torch]'``).

        Examples
        --------
        >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
        >>> t = encode(A, 2, "naive").to_torch(dtype="float32")
        >>> tuple(t["B"].shape), t["B"].dtype
        ((6, 3), torch.float32)
        """
        arrays = {"B": self.B} if self.decoder is None else {"B": self.B, "decoder": self.decoder}
        return to_torch_tensors(arrays, dtype=dtype, device=device, what="Scheme.to_torch")

    def bundle_metadata(self) -> dict[str, Any]:
        """``params``, ``construction`` (the method), ``options`` and the non-array ``extras``."""
        return {
            "params": list(self.params),
            "construction": self.method,
            "arrays": sorted(self.to_arrays()),
            "options": {k: _plain(v) for k, v in self.options.items()},
            "extras": {k: _plain(v) for k, v in self.extras.items() if not isinstance(v, np.ndarray)},
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> Scheme:
        """Rebuild a scheme from :meth:`to_arrays` and :meth:`bundle_metadata`, checking it.

        Raises
        ------
        CatalogueError
            Missing or malformed arrays, parameters that do not match them, or a scheme that
            does not verify.
        """
        check_declared_arrays("scheme", arrays, metadata)
        try:
            params = SchemeParams(*metadata["params"])
            method = str(metadata["construction"])
            extras = dict(metadata.get("extras") or {})
            extras.update({k[len("extras.") :]: np.asarray(v) for k, v in arrays.items() if k.startswith("extras.")})
            for key in ("B", "assignment"):
                if key not in arrays:
                    raise CatalogueError(f"scheme: array {key!r} is missing")
            B = np.asarray(arrays["B"])
            if B.dtype.kind not in "fiu":
                raise CatalogueError(f"scheme: B has dtype {B.dtype}, expected float64")
            sch = cls(
                B=B,
                assignment=check_binary_matrix("assignment", arrays["assignment"]),
                m=params.m,
                method=method,
                options=dict(metadata.get("options") or {}),
                decoder=arrays.get("decoder"),
                diagonals=arrays.get("diagonals"),
                extras=extras,
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CatalogueError):
                raise
            raise CatalogueError(f"scheme: malformed bundle ({exc})") from None
        if sch.params != params:
            raise CatalogueError(f"scheme: params {tuple(params)} do not match the arrays' {tuple(sch.params)}")
        try:
            sch.verify()
        except VerificationError as exc:
            raise CatalogueError(str(exc)) from None
        # the options reported are re-derived from the arrays (issue #33)
        object.__setattr__(sch, "options", _frozen_mapping(rederived_options(sch, sch.options, encode)))
        return sch

    def exact_decoder(self, nonstragglers: Any) -> np.ndarray:
        """Exact decoder of an exact-family scheme for the non-straggler mask (see :func:`exact_decoder`)."""
        return exact_decoder(self, nonstragglers)

    @classmethod
    def from_matrix(
        cls,
        B: Any,
        assignment: Any,
        m: int,
        *,
        method: str = "custom",
        decoder: Any = None,
        options: Mapping[str, Any] | None = None,
    ) -> Scheme:
        """Wrap a user-supplied encoder after validating it.

        Parameters
        ----------
        B : array_like
            ``(m*N, n)`` real matrix, block-major rows, finite entries.
        assignment : array_like or object with ``.assignment``
            ``N x n`` 0/1 matrix.
        m : int
            Communication reduction, ``m >= 1``.
        decoder : array_like, optional
            Reference decoder ``(n, m)``.

        Raises
        ------
        InvalidArgumentError
            Wrong shapes, NaN/inf, non-binary assignment, support violation.

        Examples
        --------
        >>> A = np.eye(2, dtype=int)
        >>> Scheme.from_matrix(np.eye(2), A, 1).method
        'custom'
        >>> Scheme.from_matrix([[1.0, 1.0], [0.0, 1.0]], A, 1)
        Traceback (most recent call last):
        ...
        gcsim.errors.InvalidArgumentError: B: support violation at 1 entries, e.g. (block, part, worker) = [(0, 0, 1)]
        """
        m = check_int("m", m, minimum=1)
        A = _as_assignment(assignment)
        Bm = check_finite_array("B", B, ndim=2)
        if Bm.shape != (m * A.shape[0], A.shape[1]):
            raise InvalidArgumentError(
                "B", f"must have shape (m*N, n) = {(m * A.shape[0], A.shape[1])}, got {Bm.shape}"
            )
        X = None
        if decoder is not None:
            X = check_finite_array("decoder", decoder, ndim=2)
            if X.shape != (A.shape[1], m):
                raise InvalidArgumentError("decoder", f"must have shape (n, m) = {(A.shape[1], m)}, got {X.shape}")
        sch = cls(B=Bm, assignment=A, m=m, method=str(method), options=dict(options or {}), decoder=X)
        sch.check_support()
        return sch

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.options.items() if np.isscalar(v) or v is None}
        return f"Scheme(method={self.method!r}, num_parts={self.num_parts}, n={self.n}, m={self.m}, options={shown})"

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: params, method, options, verification status, a heat map of ``|B|``.

        ``verify()`` runs once, on first display (the scheme is immutable); a failure is shown as
        "verification failed: ...", never raised (see :mod:`gcsim._html`).
        """
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="Scheme",
                kind=self.kind,
                params=self.params,
                rows=[
                    ("method", self.method),
                    ("B", f"{self.B.shape[0]} × {self.B.shape[1]} (m·N rows, block-major × n workers)"),
                    ("reference decoder", "yes" if self.decoder is not None else "no"),
                    *_html.scalar_items(self.options, limit=8),
                ],
                status=_html.verdict(self),
                matrix=self.B,
                caption="encoder B: block k of part i is row k·N + i; columns are workers",
            ),
        )


def _beyond_dense_hint(method: str, diagonal_stack: bool) -> str:
    """What builds an encoder beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES` (the routes without a dense ``B``).

    >>> print(_beyond_dense_hint("rd", True))  # doctest: +ELLIPSIS
    without dense matrices, RD is built by gcsim.coding.structured.encode_structured(design, m, eps=..., seed=...) ...
    """
    routes = (
        "gcsim.coding.structured.encode_structured(design, m, eps=..., seed=...) (a symmetric BIBD, AᵀA = aI + λJ) "
        "or gcsim.coding.sparse_routes.encode_sparse(design, m, eps=..., seed=...) (any sparse assignment): the "
        "same diagonals as encode(..., 'rd') of the same seed, taken by gcsim.expected_error as the CLI takes them "
        "(theory §42, §44); or raise the limit on a bigger machine"
    )
    if diagonal_stack:
        return f"without dense matrices, RD is built by {routes}"
    return f"method {method!r} needs the dense B; beyond this limit only method='rd' has a route without it: {routes}"


def encode(
    assignment_or_design: Any, m: int, method: str = "rd", *, eps: float = 0.0, seed: int = 0, **options: Any
) -> Scheme:
    """Build the encoding matrix ``B`` of a scheme (theory §5.4).

    Parameters
    ----------
    assignment_or_design : array_like or object with ``.assignment``
        ``N x n`` 0/1 assignment (parts x workers).  For ``method="weighted"``: a non-negative
        integer matrix of multiplicities, or an object with ``.weights`` (else ``.assignment``).
    m : int
        Communication reduction ``m >= 1`` (each worker sends ``d/m`` scalars).
    method : str
        One of :data:`METHODS`: a registered encoder (:func:`gcsim.coding.get_encoder`; see the module
        docstring and :func:`gcsim.coding.register_encoder`).
    eps : float
        Perturbation ``ε >= 0`` of the random diagonals, for the encoders with ``uses_eps`` (``rd``,
        ``ns``, ...).  Another encoder ignores it, and its ``options`` hold no ``eps``.
    seed : int
        Seed of every random choice; the same seed gives the same ``B``.
    **options
        ``dist`` ("rademacher" | "gaussian") for ``rd``/``ns``/``ns-worker``/``hadamard-ns`` and ``weighted``
        with ``m >= 2``; ``s`` and ``nodes`` ("chebyshev" | "equispaced" | array) for the exact family;
        ``support`` and ``vectors`` for ``hadamard-ns`` (each encoder's ``options``).

    Returns
    -------
    Scheme

    Raises
    ------
    InvalidArgumentError
        Bad assignment, ``m < 1``, unknown method or option, or a ``B`` with
        more than :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries (``m N n``),
        refused before anything is allocated.
    SizeLimitError
        An assignment or a ``B`` beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`; the message names
        the encoders without dense matrices (``encode_structured``, ``encode_sparse``) for RD.
    NotConstructibleError
        Replication too small for ``ns`` (``r_i < m``) or the exact family
        (``r_i < s + m``); the message names the parts.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> sch = encode(A, 2, "rd", seed=1)
    >>> sch.B.shape, sch.diagonals.shape
    ((6, 3), (2, 3))
    >>> bool(np.all(np.abs(sch.B[np.tile(A, (2, 1)) == 1]) == 1))
    True
    >>> ns = encode(A, 2, "ns", eps=0.1, seed=1)
    >>> bool(np.allclose(ns.B @ ns.decoder, ns.target()))
    True
    >>> W = np.array([[2, 1, 0], [1, 0, 2], [0, 2, 1]])   # a 3-regular multigraph with loops
    >>> wt = encode(W, 1, "weighted")
    >>> (wt.B * 3).astype(int).tolist(), wt.assignment.tolist()
    ([[2, 1, 0], [1, 0, 2], [0, 2, 1]], [[1, 1, 0], [1, 0, 1], [0, 1, 1]])
    """
    m = check_int("m", m, minimum=1)
    encoder = get_encoder(method)
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    try:
        M = encoder.read(assignment_or_design)
        A = (M > 0).astype(np.int64) if encoder.reads == "weights" else M
        # B is (m N) x n float64 (plus same-size temporaries): refuse before drawing anything
        check_dense_size(
            "m", m * A.shape[0], A.shape[1], f"the encoding matrix B of m = {m} blocks for N = {A.shape[0]} parts"
        )
    except SizeLimitError as exc:  # beyond the dense limit: name the calls that work (as the CLI takes them)
        raise SizeLimitError(
            exc.argument,
            f"{str(exc).removeprefix(f'{exc.argument}: ')}; "
            f"{_beyond_dense_hint(method, encoder.structured_route(m) == 'diagonals')}",
            requested=exc.requested,
            limit=exc.limit,
            limit_name=exc.limit_name,
        ) from None
    rng = seeded_rng(seed)
    opts = dict(options)
    # the encoders solve many small least-squares problems: one BLAS thread is faster (gcsim._threads)
    with batched_blas():
        B, X0, stored, info, extras = encoder.build(M, m, rng, eps, opts)
    if opts:
        raise InvalidArgumentError("options", f"unknown option(s) for method {method!r}: {sorted(opts)}")
    if (stored is None) != (encoder.stores is None):  # a forgotten declaration would drop the arrays silently
        raise InvalidArgumentError(
            "method",
            f"encoder {method!r} declares stores={encoder.stores!r} but its build returned {type(stored).__name__}",
        )
    # eps is recorded only where the build reads it: an encoder without perturbed diagonals has
    # no eps, whatever was passed (a sweep may pass one eps to every method)
    options = encoder.recorded_options(eps, seed)
    options.update(info)
    if encoder.stores == "vectors":
        extras = {**extras, "vectors": stored}
    sch = Scheme(
        B=B,
        assignment=A,
        m=m,
        method=method,
        options=options,
        decoder=X0,
        diagonals=stored if encoder.stores == "diagonals" else None,
        extras=extras,
    )
    sch.check_support()
    return sch


def exact_decoder(scheme: Scheme, nonstragglers: Any) -> np.ndarray:
    """Exact decoder ``X = H_F^{-1} [I_m; 0]`` of an exact-family scheme (theory §40.5).

    Parameters
    ----------
    scheme : Scheme
        Built with ``"exact-vandermonde"`` or ``"exact-gaussian"``.
    nonstragglers : array_like of bool, shape (n,)
        True = the worker's transmission arrived; at least ``n - s`` must be
        True (the first ``n - s`` arrivals, by index, are used).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` decoder, zero outside the workers used; ``B_F X_F = T``.

    Examples
    --------
    >>> A = np.ones((3, 4), dtype=int)
    >>> sch = encode(A, 2, "exact-gaussian", s=1, seed=0)
    >>> X = exact_decoder(sch, [True, False, True, True])
    >>> bool(np.allclose(sch.B @ X, sch.target()))
    True
    """
    if "H" not in getattr(scheme, "extras", {}):
        raise InvalidArgumentError(
            "scheme", "exact_decoder needs an exact-family scheme ('exact-vandermonde' or 'exact-gaussian')"
        )
    mask = check_mask("nonstragglers", nonstragglers, scheme.n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    H = scheme.extras["H"]
    f = H.shape[0]
    used = np.flatnonzero(mask)[:f]
    if used.size < f:
        raise InvalidArgumentError("nonstragglers", f"needs at least n - s = {f} non-stragglers, got {mask.sum()}")
    rhs = np.zeros((f, scheme.m))
    rhs[: scheme.m] = np.eye(scheme.m)
    X = np.zeros((scheme.n, scheme.m))
    X[used] = np.linalg.solve(H[:, used], rhs)
    return X
