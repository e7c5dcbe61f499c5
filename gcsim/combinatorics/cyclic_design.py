"""Cyclic symmetric designs kept as their difference set: ``O(k)`` numbers at any size (theory §10.8).

A ``(v, k, λ)`` difference set ``D ⊂ Z_v`` develops into the symmetric 2-``(v, k, λ)`` design
whose blocks are the translates ``D + j``.  :class:`CyclicDesign` stores ``D`` only.  Its
incidence (:func:`~gcsim.combinatorics.difference_families.circulant_incidence`, sparse) is
built on request, and :meth:`CyclicDesign.verify` recounts the differences of ``D`` exactly in
``O(k²)``.  That one check proves ``AᵀA = (k − λ)I + λJ`` for the developed incidence (Lemma 9a),
so the catalogue bundle of PG(2, 317), with 100,807 workers, is 318 integers, checked in
milliseconds on load.  :func:`singer_plane` builds the projective planes of prime order.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_int, check_int_array, layout_version_problem
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from .difference_families import circulant_incidence, difference_set_lambda, singer_difference_set

__all__ = ["CyclicDesign", "CyclicDesignParams", "singer_plane"]

#: Version of the ``cyclic_design`` bundle layout (``metadata["cyclic_design_format_version"]``).
CYCLIC_DESIGN_BUNDLE_VERSION = 1


class CyclicDesignParams(NamedTuple):
    """A symmetric ``(v, k, λ)`` design: ``v`` points and blocks (parts and workers), blocks of ``k``."""

    v: int
    k: int
    lam: int


class CyclicDesign:
    """The symmetric design developed from a ``(v, k, λ)`` difference set ``D`` of ``Z_v``.

    Points are the parts, blocks the workers: worker ``j`` holds the parts ``D + j (mod v)``.
    ``base`` is ``D`` (sorted, read-only), ``incidence`` the ``v x v`` sparse CSC assignment
    (made on first use, ``v k`` stored entries within :data:`gcsim.limits.MAX_SPARSE_ENTRIES`),
    and ``assignment`` its dense copy, refused beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`.
    ``verify()`` recounts the ``k(k − 1)`` differences of ``D`` (:func:`difference_set_lambda`):
    by Lemma 9a (theory §10.8) that is exactly ``AᵀA = (k − λ)I + λJ`` for the incidence.
    :func:`gcsim.coding.structured.encode_structured` takes the object (through ``incidence``).
    Immutable once built.  ``v`` is at most :data:`gcsim.limits.MAX_DENSE_ENTRIES` (the check counts
    the differences per residue) and ``base`` holds integers only (no booleans, non-whole floats or
    strings), ``k x k`` within the same limit, checked before anything is allocated.

    Its catalogue bundle (kind ``"cyclic_design"``) is the array ``base`` and the metadata
    ``params``/``construction``.  :meth:`from_arrays` checks the residues, re-derives ``λ`` from
    them and compares it with the stored parameters.

    Examples
    --------
    >>> fano = CyclicDesign(7, [1, 2, 4], "Fano plane")
    >>> fano.params, fano.verify(), fano.incidence.nnz
    (CyclicDesignParams(v=7, k=3, lam=1), True, 21)
    >>> back = CyclicDesign.from_arrays(fano.to_arrays(), fano.bundle_metadata())
    >>> back.params == fano.params and back.base.tolist() == [1, 2, 4]
    True
    """

    kind: ClassVar[str] = "cyclic_design"
    Params = CyclicDesignParams
    base: np.ndarray
    params: CyclicDesignParams
    construction: str

    def __init__(self, v: int, base: Any, construction: str = ""):
        v = check_int("v", v, minimum=2)
        limits.check_entries("v", (v,), "the count of differences per residue of Z_v (one per point)")
        D = np.sort(check_int_array("base", base, ndim=1, what="the difference set"))
        if not 0 < D.size < v:
            raise InvalidArgumentError("base", f"must be a nonempty proper subset of Z_{v} (0 < k < v), got {D.size}")
        try:
            lam = difference_set_lambda(v, D.tolist())
        except InvalidArgumentError as exc:
            raise InvalidArgumentError("base", str(exc).partition(": ")[2]) from None
        if lam is None:
            raise InvalidArgumentError("base", f"{D.tolist()!s:.80} is not a difference set of Z_{v}")
        D.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "base", D)
        set_(self, "params", CyclicDesignParams(v, int(D.size), lam))
        set_(self, "construction", str(construction) or f"cyclic ({v}, {D.size}, {lam}) difference set")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"CyclicDesign is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CyclicDesign is immutable (cannot delete {name!r})")

    def __repr__(self) -> str:
        v, k, lam = self.params
        return f"CyclicDesign(v={v}, k={k}, lam={lam}, construction={self.construction!r})"

    @property
    def v(self) -> int:
        """Number of points (parts) and of blocks (workers)."""
        return self.params.v

    @cached_property
    def incidence(self) -> sp.csc_matrix:
        """The ``v x v`` 0/1 assignment, sparse CSC (column ``j``: the parts ``D + j``)."""
        return circulant_incidence(self.v, self.base.tolist())

    @property
    def assignment(self) -> np.ndarray:
        """Dense copy of :attr:`incidence` (refused beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`)."""
        limits.check_entries("design", (self.v, self.v), f"the dense assignment of {self.construction}")
        A = self.incidence.toarray()
        A.setflags(write=False)
        return A

    def verify(self) -> bool:
        """Every nonzero residue is a difference of ``base`` exactly ``λ`` times (exact, ``O(k²)``); or raises."""
        v, k, lam = self.params
        got = difference_set_lambda(v, self.base.tolist()) if self.base.size == k else None
        if got != lam:
            raise VerificationError(
                f"{self.construction}: the base block is not a ({v}, {k}, {lam}) difference set "
                f"(AᵀA != (k - λ)I + λJ for its development, Lemma 9a)"
            )
        return True

    # -- the catalogue bundle ---------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """``base``: the difference set, sorted, int64."""
        return {"base": np.array(self.base, dtype=np.int64)}

    def bundle_metadata(self) -> dict[str, Any]:
        """The parameters ``[v, k, λ]``, the construction and the layout's version."""
        return {
            "params": list(self.params),
            "construction": self.construction,
            "cyclic_design_format_version": CYCLIC_DESIGN_BUNDLE_VERSION,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], metadata: Mapping[str, Any]) -> CyclicDesign:
        """Rebuild from :meth:`to_arrays`; the stored ``[v, k, λ]`` must be what the residues give.

        Refused (CatalogueError) where the metadata or the array is malformed, the residues are
        not distinct in ``[0, v)``, ``base`` is not a difference set, or the stored ``k`` or
        ``λ`` differ from the ones the residues give.
        """
        if not isinstance(metadata, Mapping):
            raise CatalogueError(f"cyclic_design: metadata must be an object, got {type(metadata).__name__}")
        problem = layout_version_problem(metadata, "cyclic_design_format_version", CYCLIC_DESIGN_BUNDLE_VERSION)
        if problem:
            raise CatalogueError(f"cyclic_design: {problem}")
        params = metadata.get("params")
        if not isinstance(params, (list, tuple)) or len(params) != 3 or not all(type(p) is int for p in params):
            raise CatalogueError(f"cyclic_design: params must be three integers [v, k, lam], got {params!r:.80}")
        v, k, lam = params
        if "base" not in arrays:
            raise CatalogueError("cyclic_design: the array 'base' is missing")
        base = np.asarray(arrays["base"])
        if base.ndim != 1 or base.dtype.kind not in "iu" or base.size != k or not 0 < k < v:
            raise CatalogueError(
                f"cyclic_design: 'base' must hold k = {k} integers (0 < k < v = {v}), got shape {base.shape}, "
                f"dtype {base.dtype}"
            )
        try:
            obj = cls(v, base.tolist(), str(metadata.get("construction", "")))
        except InvalidArgumentError as exc:
            raise CatalogueError(f"cyclic_design: {exc}") from None
        if tuple(obj.params) != (v, k, lam):
            raise CatalogueError(
                f"cyclic_design: stored params {[v, k, lam]} but the base block gives {list(obj.params)}"
            )
        return obj


def singer_plane(q: int) -> CyclicDesign:
    """PG(2, q) as the development of Singer's difference set: a ``(q² + q + 1, q + 1, 1)`` cyclic design.

    For a prime ``q`` of any size up to :data:`gcsim.limits.MAX_DENSE_ENTRIES` points, and for
    prime powers with ``q³ <= 1024`` (:func:`~gcsim.combinatorics.difference_families.singer_difference_set`).

    >>> singer_plane(317).params                       # 100,807 workers, a 318-number bundle
    CyclicDesignParams(v=100807, k=318, lam=1)
    """
    q = check_int("q", q, minimum=2)
    return CyclicDesign(q * q + q + 1, singer_difference_set(2, q), f"Singer PG(2,{q})")
