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
``"naive"``
    ``B = 1_m ⊗ A`` (theory §5.4): every block row equals ``A``.
``"rd"``
    Random diagonal RD(ε) (theory §5.4): block ``k`` is ``A diag(d_k)`` with
    ``d_k[j] = σ_kj (1 + ε ξ_kj)``, ``σ`` Rademacher, ``ξ ~ U[-1, 1]``
    (``dist="rademacher"``, default) or ``σ ~ N(0, 1)`` (``dist="gaussian"``).
``"ns"``
    Null-space / Hadamard construction (theory §40.4, reconstruction): draw a
    reference decoder ``X_0`` (columns = RD diagonals); the ``m`` rows of
    part ``i`` on its holders ``N_i`` are ``V_i^+`` with ``V_i = X_0[N_i, :]``,
    so that ``B X_0 = T`` exactly.  Needs ``r_i >= m``.
``"ns-worker"``
    Worker-scaled variant (theory §40.4): block ``k`` is ``A diag(v_k)`` with
    ``v_k`` in the (numerical) null space of every ``A diag(v_i)``, ``i < k``;
    decoder ``x_l = v_l``.  The residual ``‖B X_0 - T‖_F^2`` is reported in
    ``params`` (cross-talk and diagonal mismatch separately).
``"exact-vandermonde"``, ``"exact-gaussian"``
    Exact communication-efficient family (Ye & Abbe 2018; Kadhe et al. 2020;
    theory §40.5): ``B = P H`` with ``H`` in R^{(n-s) x n}, every (n-s)-column
    submatrix invertible; decodes exactly from any ``n - s`` workers.
    Needs ``r_i >= s + m``.  Option ``s`` (default 0).
``"fractional-repetition"``, ``"cyclic-mds"``
    Tandon, Lei, Dimakis & Karampatziakis (ICML 2017), ``m = 1`` exact codes
    for ``s`` stragglers (``s`` is read off the assignment).
``"bibd-optimal"``
    ``B = A`` with ``m = 1`` and optimal decoding (Kadhe, Koyluoglu &
    Ramchandran 2019).
``"expander"``
    ``B = A`` with ``m = 1`` (Raviv, Tamo, Tandon & Dimakis 2018; Glasgow &
    Wootters 2021).
``"weighted"``
    A weighted (integer multiplicity) assignment ``W`` (``N x n``, ``W >= 0``; an object's
    ``.weights``, e.g. :func:`gcsim.combinatorics.expanders.weighted_margulis_gabber_galil`, or
    the matrix itself), its support as the assignment: block ``k`` is ``W diag(d_k) / w̄`` with
    ``w̄ = (1/N) Σ_ij W_ij``.  For ``m = 1``, ``d_0 = 1``: ``B = W/d`` for a ``d``-regular multigraph,
    the normalized adjacency code of Raviv et al. 2018, with reference decoder ``1_n`` (rescaled by
    ``n/|F|`` it is theirs).  For ``m >= 2`` the ``d_k`` are RD(ε) diagonals (theory §48.2).

Every randomized encoder is reproducible: the same ``seed`` gives the same ``B``.
"""

from __future__ import annotations

import warnings
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
from ..errors import CatalogueError, InvalidArgumentError, NotConstructibleError, VerificationError
from ..io._torch import to_torch_tensors

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

METHODS = (
    "naive",
    "rd",
    "ns",
    "ns-worker",
    "exact-vandermonde",
    "exact-gaussian",
    "fractional-repetition",
    "cyclic-mds",
    "bibd-optimal",
    "expander",
    "weighted",
)

_CLASSIC = ("fractional-repetition", "cyclic-mds", "bibd-optimal", "expander")


def target_matrix(m: int, N: int) -> np.ndarray:
    """The decoding target ``T = I_m ⊗ 1_N`` of shape ``(m*N, m)``.

    Examples
    --------
    >>> target_matrix(2, 2).astype(int).tolist()
    [[1, 0], [1, 0], [0, 1], [0, 1]]
    """
    m = check_int("m", m, minimum=1)
    N = check_int("N", N, minimum=1)
    check_dense_size("m", m * N, m, "the decoding target T = I_m ⊗ 1_N")
    return np.kron(np.eye(m), np.ones((N, 1)))


def _as_assignment(assignment_or_design: Any) -> np.ndarray:
    """The 0/1 assignment of a matrix or of any object with ``.assignment``."""
    obj = getattr(assignment_or_design, "assignment", assignment_or_design)
    if obj is None:
        raise InvalidArgumentError("assignment", "must be a 0/1 matrix or an object with .assignment")
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise InvalidArgumentError("assignment", f"cannot be read as a matrix ({exc})") from None
    if arr.dtype == object:
        raise InvalidArgumentError("assignment", "must be a numeric 0/1 matrix")
    if arr.size and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError("assignment", "contains NaN or inf")
    A = check_binary_matrix("assignment", arr)
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise InvalidArgumentError("assignment", f"must have at least one part and one worker, got shape {A.shape}")
    empty = np.flatnonzero(A.sum(axis=1) == 0)
    if empty.size:
        raise InvalidArgumentError("assignment", f"parts {_short(empty)} are held by no worker")
    return A


def _as_weights(assignment_or_design: Any) -> np.ndarray:
    """The non-negative integer weights ``W`` of an object's ``.weights``, else of ``.assignment`` or a matrix."""
    obj = getattr(assignment_or_design, "weights", None)
    if obj is None:
        obj = getattr(assignment_or_design, "assignment", assignment_or_design)
    if obj is None:
        raise InvalidArgumentError("assignment", "must be a non-negative integer matrix or an object with .weights")
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise InvalidArgumentError("assignment", f"cannot be read as a matrix ({exc})") from None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise InvalidArgumentError("assignment", f"weights must be a numeric 2-D matrix, got {arr.dtype} {arr.shape}")
    if arr.size and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidArgumentError("assignment", "weights contain NaN or inf")
    if arr.size and (np.any(arr < 0) or np.any(arr != np.round(arr))):
        raise InvalidArgumentError("assignment", "weights must be non-negative integers (edge multiplicities)")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InvalidArgumentError("assignment", f"must have at least one part and one worker, got shape {arr.shape}")
    if arr.size and float(np.abs(arr).max()) >= 2**31:
        raise InvalidArgumentError("assignment", "weights must be below 2**31")
    W = arr.astype(np.int64)
    empty = np.flatnonzero(W.sum(axis=1) == 0)
    if empty.size:
        raise InvalidArgumentError("assignment", f"parts {_short(empty)} are held by no worker")
    return W


def _plain(value: Any) -> Any:
    """A JSON-serializable form of an option value (numpy scalars and arrays to Python)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _short(indices: np.ndarray, limit: int = 12) -> str:
    items = [int(i) for i in np.asarray(indices).ravel()]
    text = ", ".join(map(str, items[:limit]))
    if len(items) > limit:
        text += f", ... ({len(items)} in all)"
    return "[" + text + "]"


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
        setattr_(self, "m", int(self.m))
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
        part held; the reference decoder (if any) is finite of shape ``(n, m)``; for ``"rd"`` with its
        diagonals, block ``k`` of ``B`` is exactly ``A diag(d_k)``; for ``"naive"``, ``B = 1_m ⊗ A``; for the
        exact family (``H``, ``P`` in ``extras``) ``B = P H`` up to round-off.
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
        if self.method == "rd" and self.diagonals is not None:
            D = self.diagonals
            if D.shape != (self.m, self.n) or not np.array_equal(_stack(A.astype(float), D), B):
                raise VerificationError(f"{name}: B is not the stack of A diag(d_k) of its diagonals")
        if self.method == "weighted" and "weights" in self.extras:
            self._verify_weighted(name)
        if self.method == "naive" and not np.array_equal(B, np.tile(A.astype(float), (self.m, 1))):
            raise VerificationError(f"{name}: B is not 1_m ⊗ A")
        if self.method == "ns" and self.decoder is not None:
            self._verify_ns(name)
        if "H" in self.extras and "P" in self.extras:
            PH = self.extras["P"] @ self.extras["H"]
            tol = 1e3 * max(B.shape) * np.finfo(float).eps * max(1.0, float(np.abs(PH).max(initial=0.0)))
            if PH.shape != B.shape or np.abs(PH - B).max(initial=0.0) > tol:
                raise VerificationError(f"{name}: B differs from P H")
        return True

    def _verify_weighted(self, name: str) -> None:
        """Weighted encoder: ``W >= 0`` integer with support ``A``, and ``B = stack(W diag(d_k)) / w̄`` bit for bit."""
        W = np.asarray(self.extras["weights"])
        D = self.diagonals
        if W.shape != self.assignment.shape or W.dtype.kind not in "iu" or np.any(W < 0):
            raise VerificationError(f"{name}: the weights must be a non-negative integer N x n matrix")
        if not np.array_equal((W > 0).astype(np.int64), self.assignment):
            raise VerificationError(f"{name}: the assignment is not the support of the weights")
        if D is None or D.shape != (self.m, self.n):
            raise VerificationError(f"{name}: the diagonals d_k must be an (m, n) array")
        if not np.array_equal(_stack(W.astype(float), D) / _mean_weight(W), self.B):
            raise VerificationError(f"{name}: B is not the stack of W diag(d_k) / w̄")

    def _verify_ns(self, name: str) -> None:
        """NS (theory §40.4): ``C_i = V_i⁺`` with ``V_i = X_0[N_i, :]`` of rank m, so ``B X_0 = T``.

        Part ``i``'s m rows of ``B X_0 - T`` are ``C_i V_i - I_m``, which a backward-stable
        pseudo-inverse makes of size ``O(u κ(V_i))``; the bound below allows ``64 max(r_i, m)``
        such units, far below the O(1) residual of any other matrix on the same support.
        """
        A, X0, m, N = self.assignment, self.decoder, self.m, self.num_parts
        assert X0 is not None  # called only with a reference decoder
        R = (self.B @ X0 - target_matrix(m, N)).reshape(m, N, m)
        for i in range(N):
            V = X0[np.flatnonzero(A[i])]
            sv = np.linalg.svd(V, compute_uv=False)
            if sv.size < m or sv[-1] <= 0:
                raise VerificationError(f"{name}: V_{i} = X_0[N_{i}, :] has rank < m")
            tol = 64 * max(V.shape[0], m) * np.finfo(float).eps * (sv[0] / sv[-1])
            if np.abs(R[:, i, :]).max() > tol:
                raise VerificationError(
                    f"{name}: part {i}: B X_0 differs from T by {np.abs(R[:, i, :]).max():.3g} "
                    f"> {tol:.3g} (C_i is not the pseudo-inverse of V_i)"
                )

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


# ----------------------------------------------------------------------------------------------
# random diagonals
# ----------------------------------------------------------------------------------------------


def _diagonals(rng: np.random.Generator, m: int, n: int, eps: float, dist: str) -> np.ndarray:
    """``d_k[j] = σ_kj (1 + ε ξ_kj)`` as an ``(m, n)`` array (theory §5.4)."""
    if dist == "rademacher":
        sigma = rng.choice(np.array([-1.0, 1.0]), size=(m, n))
    elif dist == "gaussian":
        sigma = rng.standard_normal((m, n))
    else:
        raise InvalidArgumentError("dist", f"must be 'rademacher' or 'gaussian', got {dist!r}")
    xi = rng.uniform(-1.0, 1.0, size=(m, n))
    return sigma * (1.0 + eps * xi)


def _stack(A: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``B`` with block ``k`` equal to ``A diag(D[k])``."""
    return (A[None, :, :] * D[:, None, :]).reshape(D.shape[0] * A.shape[0], A.shape[1])


def _second_moment(eps: float, dist: str) -> float:
    """``E[d^2]`` for one RD entry: ``E[σ^2] (1 + ε^2/3)``."""
    return 1.0 + eps * eps / 3.0


# ----------------------------------------------------------------------------------------------
# encoders
# ----------------------------------------------------------------------------------------------


def _encode_naive(A, m, rng, eps, opts):
    B = np.tile(A.astype(float), (m, 1))
    # best decoder of the form alpha * 1: alpha = 1/(m r) for regular replication r
    X0 = np.full((A.shape[1], m), 1.0 / (m * A.sum(axis=1).mean()))
    return B, X0, None, {}, {}


def _mean_weight(W: np.ndarray) -> float:
    """``w̄ = (1/N) Σ_ij W_ij``, the mean weighted replication (``d`` for a ``d``-regular multigraph)."""
    return float(W.sum()) / W.shape[0]


def _encode_weighted(W, m, rng, eps, opts):
    n = W.shape[1]
    if m == 1:
        if eps:
            raise InvalidArgumentError("eps", "the m = 1 weighted code B = W/w̄ draws nothing; eps must be 0")
        D = np.ones((1, n))
        second = 1.0
        info: dict[str, Any] = {}
    else:
        dist = opts.pop("dist", "rademacher")
        D = _diagonals(rng, m, n, eps, dist)
        second = _second_moment(eps, dist)
        info = {"dist": dist}
    w = _mean_weight(W)
    B = _stack(W.astype(float), D) / w
    # x_l = d_l / E[d²]: B X0 = T when every row of W sums to w̄ and m = 1 (theory §48.2)
    X0 = D.T / second
    info["mean_weight"] = w
    return B, X0, D, info, {"weights": W}


def _encode_rd(A, m, rng, eps, opts):
    dist = opts.pop("dist", "rademacher")
    D = _diagonals(rng, m, A.shape[1], eps, dist)
    B = _stack(A.astype(float), D)
    # unbiased-type reference decoder x_l = d_l / (r E[d^2]) (theory §45, unbiasedness)
    X0 = D.T / (A.sum(axis=1).mean() * _second_moment(eps, dist))
    return B, X0, D, {"dist": dist}, {}


def _encode_ns(A, m, rng, eps, opts):
    dist = opts.pop("dist", "rademacher")
    N, n = A.shape
    r = A.sum(axis=1)
    low = np.flatnonzero(r < m)
    if low.size:
        raise NotConstructibleError(
            f"NS encoder needs replication r_i >= m = {m}; parts {_short(low)} have r_i = {_short(r[low])}"
        )
    X0 = _diagonals(rng, m, n, eps, dist).T  # (n, m), columns x_l = d_l
    B = np.zeros((m * N, n))
    bad = []
    # batch the pseudo-inverses over parts of equal replication
    for ri in np.unique(r):
        parts = np.flatnonzero(r == ri)
        holders = np.array([np.flatnonzero(A[i]) for i in parts])  # (p, ri)
        V = X0[holders]  # (p, ri, m)
        sv = np.linalg.svd(V, compute_uv=False)
        deficient = sv[:, -1] <= sv[:, 0] * max(ri, m) * np.finfo(float).eps * 10
        bad.extend(parts[deficient].tolist())
        C = np.linalg.pinv(V)  # (p, m, ri), C_i V_i = I_m when rank V_i = m
        rows = np.arange(m)[None, :, None] * N + parts[:, None, None]  # (p, m, 1)
        B[rows, holders[:, None, :]] = C
    if bad:
        raise NotConstructibleError(
            f"NS encoder: V_i = X_0[N_i, :] has rank < m for parts {_short(np.array(bad))} "
            f"(unlucky draw); try another seed, eps > 0 or dist='gaussian'"
        )
    return B, X0, X0.T.copy(), {"dist": dist}, {}


def _encode_ns_worker(A, m, rng, eps, opts):
    dist = opts.pop("dist", "rademacher")
    N, n = A.shape
    Af = A.astype(float)
    D = _diagonals(rng, m, n, eps, dist)
    V = np.zeros((m, n))
    V[0] = D[0]
    nullity = []
    for k in range(1, m):
        # constraints A diag(v_i) v_k = 0 for all i < k
        M = np.vstack([Af * V[i][None, :] for i in range(k)])
        _, sv, Vt = np.linalg.svd(M, full_matrices=True)
        tol = max(M.shape) * np.finfo(float).eps * (sv[0] if sv.size else 1.0)
        rank = int((sv > tol).sum())
        basis = Vt[rank:]
        if basis.shape[0] == 0:
            basis = Vt[-1:]  # no exact null space: least cross-talk direction
        nullity.append(int(Vt.shape[0] - rank))
        v = D[k] @ basis.T @ basis  # random element of the (approximate) null space
        if np.linalg.norm(v) <= 1e-12 * np.linalg.norm(D[k]):
            v = basis[0]  # the draw was (numerically) orthogonal to the null space
        V[k] = v / np.linalg.norm(v) * np.sqrt(n)
    # scale each v_k so that A (v_k o v_k) is as close to 1 as possible
    for k in range(m):
        a = Af @ (V[k] ** 2)
        if np.dot(a, a) > 0:
            V[k] *= np.sqrt(max(a.sum() / np.dot(a, a), 0.0))
    B = _stack(Af, V)
    X0 = V.T.copy()
    R = B @ X0 - target_matrix(m, N)
    blocks = R.reshape(m, N, m)
    diag_mask = np.eye(m, dtype=bool)[:, None, :].repeat(N, axis=1)
    info = {
        "dist": dist,
        "residual": float(np.sum(R**2)),
        "diagonal_mismatch": float(np.sum(blocks[diag_mask] ** 2)),
        "crosstalk": float(np.sum(blocks[~diag_mask] ** 2)),
        "nullity": nullity,
    }
    return B, X0, V, info, {}


def _vandermonde_nodes(n: int, nodes: Any) -> np.ndarray:
    if isinstance(nodes, str):
        # zero is never a node: H[:, j] = e_0 would clash with p[:m] = e_k (see _encode_exact)
        if nodes == "chebyshev":
            deg = n + (n % 2)  # an even degree has no root at 0
            return np.cos(np.pi * (2 * np.arange(deg) + 1) / (2 * deg))[:n]
        if nodes == "equispaced":
            pts = np.linspace(-1.0, 1.0, n + (n % 2) + 1)
            return pts[np.abs(pts) > 1e-12][:n]
        raise InvalidArgumentError("nodes", f"must be 'chebyshev', 'equispaced' or an array, got {nodes!r}")
    z = check_finite_array("nodes", nodes, ndim=1)
    if z.shape != (n,):
        raise InvalidArgumentError("nodes", f"must have length n = {n}, got {z.shape}")
    if np.unique(z).size != n:
        raise InvalidArgumentError("nodes", "must be distinct")
    if np.any(z == 0):
        raise InvalidArgumentError("nodes", "must be non-zero (a zero node cannot be orthogonalized away)")
    return z


def _encode_exact(A, m, rng, eps, opts, kind):
    N, n = A.shape
    s = check_int("s", opts.pop("s", 0), minimum=0, maximum=n - m)
    r = A.sum(axis=1)
    low = np.flatnonzero(r < s + m)
    if low.size:
        raise NotConstructibleError(
            f"exact family needs replication r_i >= s + m = {s + m}; parts {_short(low)} have r_i = {_short(r[low])}"
        )
    f = n - s
    if kind == "vandermonde":
        z = _vandermonde_nodes(n, opts.pop("nodes", "chebyshev"))
        H = z[None, :] ** np.arange(f)[:, None]  # H[a, j] = z_j^a
        extras = {"nodes": z}
        kappa = float(np.linalg.cond(H[:, :f]))
        if not np.isfinite(kappa) or kappa > 1e-3 / np.finfo(float).eps:
            warnings.warn(
                f"exact-vandermonde: κ(H_F) ≈ {kappa:.3g} for F = the first n - s workers; float64 "
                "cannot carry it (decoding will be inaccurate); consider 'exact-gaussian'",
                RuntimeWarning,
                stacklevel=3,
            )
    else:
        H = rng.standard_normal((f, n))
        extras = {}
    P = np.zeros((m * N, f))
    bad_parts: list[int] = []
    for i in range(N):
        out = np.flatnonzero(A[i] == 0)
        # rows of P for part i: p[:m] = e_k, p . H[:, j] = 0 for j outside N_i
        P[np.arange(m) * N + i, np.arange(m)] = 1.0
        if out.size:
            rhs = -H[:m, out].T  # (|out|, m): one right-hand side per block k
            M = H[m:, out].T
            sol, *_ = np.linalg.lstsq(M, rhs, rcond=None)
            resid = np.linalg.norm(M @ sol - rhs) / max(np.linalg.norm(rhs), 1.0)
            if not np.isfinite(resid) or resid > 1e-6:
                bad_parts.append(i)
            P[np.arange(m) * N + i, m:] = sol.T
    if bad_parts:
        raise NotConstructibleError(
            f"exact family: the support equations of parts {_short(np.array(bad_parts))} have no solution "
            "(H is too ill-conditioned or degenerate); use fewer workers or 'exact-gaussian'"
        )
    B = P @ H
    B[np.tile(A, (m, 1)) == 0] = 0.0  # exact zeros off the support (round-off)
    extras.update({"H": H, "P": P})
    X0 = np.linalg.lstsq(B, target_matrix(m, N), rcond=None)[0]
    return B, X0, None, {"s": s}, extras


def fractional_repetition_assignment(n: int, s: int) -> np.ndarray:
    """Tandon et al. fractional repetition assignment (``N = n`` parts, ``(s+1) | n``).

    Workers form ``n/(s+1)`` groups of ``s+1``; every worker of group ``g``
    holds the ``s+1`` parts ``g(s+1) .. g(s+1)+s``.

    Examples
    --------
    >>> fractional_repetition_assignment(4, 1).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    if n % (s + 1):
        raise InvalidArgumentError("s", f"fractional repetition needs (s+1) | n, got n={n}, s={s}")
    g = np.arange(n) // (s + 1)
    return (g[:, None] == g[None, :]).astype(np.int64)


def cyclic_repetition_assignment(n: int, s: int) -> np.ndarray:
    """Cyclic assignment: worker ``j`` holds parts ``j, j+1, .., j+s`` (mod n), ``N = n``.

    Examples
    --------
    >>> cyclic_repetition_assignment(3, 1).tolist()
    [[1, 0, 1], [1, 1, 0], [0, 1, 1]]
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return (((i - j) % n) <= s).astype(np.int64)


def _encode_classic(A, m, rng, eps, opts, method):
    N, n = A.shape
    if m != 1:
        raise InvalidArgumentError("m", f"method {method!r} is an m = 1 code, got m = {m}")
    Af = A.astype(float)
    info: dict[str, Any] = {}
    if method == "fractional-repetition":
        load = A.sum(axis=0)
        cols = {tuple(c) for c in A.T.tolist()}
        supports = [np.array(c) for c in cols]
        disjoint = np.array_equal(np.sum(supports, axis=0), np.ones(N))
        if not (disjoint and np.all(load == load[0])):
            raise InvalidArgumentError(
                "assignment",
                "fractional repetition needs workers in groups with identical, disjoint "
                "supports covering all parts (see fractional_repetition_assignment)",
            )
        info["s"] = int(A.sum(axis=1).min()) - 1
        B = Af
        X0 = None
        # reference decoder: one worker per group (the first one)
        X0 = np.zeros((n, 1))
        for c in supports:
            X0[int(np.flatnonzero((A.T == c).all(axis=1))[0]), 0] = 1.0
    elif method == "cyclic-mds":
        s = int(A.sum(axis=0)[0]) - 1
        if N != n or not np.array_equal(A, cyclic_repetition_assignment(n, s)):
            raise InvalidArgumentError(
                "assignment",
                "cyclic-mds needs the cyclic repetition assignment (worker j holds parts "
                "j..j+s mod n; see cyclic_repetition_assignment)",
            )
        # Tandon et al.'s cyclic MDS construction: columns in null(Hc), Hc 1 = 0, so any n-s columns span 1
        Hc = rng.standard_normal((s, n))
        Hc[:, -1] = -Hc[:, :-1].sum(axis=1)
        B = np.zeros((N, n))
        for j in range(n):
            sup = (j + np.arange(s + 1)) % n
            b = np.ones(s + 1)
            if s:
                b[1:] = np.linalg.solve(Hc[:, sup[1:]], -Hc[:, sup[0]])
            B[sup, j] = b
        info["s"] = s
        X0 = np.linalg.lstsq(B, np.ones((N, 1)), rcond=None)[0]
    else:  # bibd-optimal, expander: B = A
        B = Af
        X0 = np.full((n, 1), 1.0 / A.sum(axis=1).mean())
    return B, X0, None, info, {}


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
        One of :data:`METHODS` (see the module docstring).
    eps : float
        Perturbation ``ε >= 0`` of the random diagonals (``rd``, ``ns``, ``ns-worker``).
    seed : int
        Seed of every random choice; the same seed gives the same ``B``.
    **options
        ``dist`` ("rademacher" | "gaussian") for ``rd``/``ns``/``ns-worker`` and ``weighted`` with ``m >= 2``;
        ``s`` and ``nodes`` ("chebyshev" | "equispaced" | array) for the exact family.

    Returns
    -------
    Scheme

    Raises
    ------
    InvalidArgumentError
        Bad assignment, ``m < 1``, unknown method or option, or a ``B`` with
        more than :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries (``m N n``),
        refused before anything is allocated.
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
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidArgumentError("method", f"must be one of {METHODS}, got {method!r}")
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    if method == "weighted":
        W = _as_weights(assignment_or_design)
        A = (W > 0).astype(np.int64)
    else:
        A = _as_assignment(assignment_or_design)
    # B is (m N) x n float64 (plus same-size temporaries): refuse before drawing anything
    check_dense_size(
        "m", m * A.shape[0], A.shape[1], f"the encoding matrix B of m = {m} blocks for N = {A.shape[0]} parts"
    )
    rng = np.random.default_rng(seed)
    opts = dict(options)
    # the encoders solve many small least-squares problems: one BLAS thread is faster (gcsim._threads)
    with batched_blas():
        if method == "naive":
            out = _encode_naive(A, m, rng, eps, opts)
        elif method == "rd":
            out = _encode_rd(A, m, rng, eps, opts)
        elif method == "ns":
            out = _encode_ns(A, m, rng, eps, opts)
        elif method == "ns-worker":
            out = _encode_ns_worker(A, m, rng, eps, opts)
        elif method == "exact-vandermonde":
            out = _encode_exact(A, m, rng, eps, opts, "vandermonde")
        elif method == "exact-gaussian":
            out = _encode_exact(A, m, rng, eps, opts, "gaussian")
        elif method == "weighted":
            out = _encode_weighted(W, m, rng, eps, opts)
        else:
            out = _encode_classic(A, m, rng, eps, opts, method)
    if opts:
        raise InvalidArgumentError("options", f"unknown option(s) for method {method!r}: {sorted(opts)}")
    B, X0, D, info, extras = out
    options = {"eps": eps, "seed": seed}
    options.update(info)
    if method in ("ns", "ns-worker"):
        extras = {**extras, "vectors": D}
    sch = Scheme(
        B=B,
        assignment=A,
        m=m,
        method=method,
        options=options,
        decoder=X0,
        diagonals=D if method in ("rd", "weighted") else None,
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
