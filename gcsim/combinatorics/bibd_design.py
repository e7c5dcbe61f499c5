"""The block design object: :class:`BIBD` and its parameters (docs/theory.md §10).

A 2-(v, k, lambda) design, or (v, b, r, k, lambda)-BIBD, is a set of v points
and b blocks (k-subsets of the points, repeats allowed) such that every pair of
distinct points lies in exactly lambda blocks.  In gcsim the points are the data
parts and the blocks are the workers: the assignment matrix is the v x b
point-block incidence matrix ``A``, with

* ``b k = v r`` and ``lambda (v-1) = r (k-1)``;
* ``A A^T = (r - lambda) I + lambda J`` and every column sums to k;
* for symmetric designs (``v = b``) also ``A^T A = (k - lambda) I + lambda J``.

Designs built from designs (complement, residual, derived, union) live here too; the
families of constructions are in ``bibd_geometries``, ``bibd_difference`` and
``bibd_elementary``, the existence conditions in ``bibd_existence`` and the factory
:func:`gcsim.combinatorics.bibd.bibd` in ``bibd``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_dense_size, check_int, check_int_array
from ..errors import (
    CatalogueError,
    ImpossibleParametersError,
    InvalidArgumentError,
)
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    sparse_gram_equals,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
)

__all__ = ["BIBDParams", "BIBD", "union_design"]


class BIBDParams(NamedTuple):
    """Parameters of a 2-design: ``v`` points, ``b`` blocks, replication ``r``, block size ``k``, ``lam``."""

    v: int
    b: int
    r: int
    k: int
    lam: int


def _rectangular(blocks: Any) -> Any:
    """``blocks`` itself when NumPy reads it as a 2-D array (one block a row), else None (ragged, or no length)."""
    if isinstance(blocks, np.ndarray):
        return blocks if blocks.ndim == 2 else None
    if not isinstance(blocks, (list, tuple)) or not blocks or not all(isinstance(b, (list, tuple)) for b in blocks):
        return None
    width = len(blocks[0])
    return blocks if width and all(len(b) == width for b in blocks) else None


class BIBD(CombinatorialObject):
    """A (v, b, r, k, lambda) balanced incomplete block design.

    Parameters
    ----------
    v : int
        Number of points (data parts), labelled ``0..v-1``.
    blocks : sequence of sequences of int
        The blocks (workers); each a k-subset of ``range(v)``.  Repeated blocks
        are allowed.
    construction : str
        Human-readable name of the construction.
    lam : int, optional
        The claimed lambda; default: computed from ``v``, ``b``, ``k``.
    metadata : mapping, optional
        Extra information (base blocks, group, ...).

    Notes
    -----
    ``assignment`` is the v x b incidence matrix (points = rows = data parts,
    blocks = columns = workers), int64 0/1.  ``params = (v, b, r, k, lam)``.
    Construction does not verify; call :meth:`verify` (``bibd`` always does).

    A design whose dense incidence would exceed :data:`gcsim.limits.MAX_DENSE_ENTRIES` is kept
    sparse (``incidence``, ``b k`` non-zeros, refused beyond the limit itself): ``verify`` checks it
    sparsely, ``to_arrays`` exports its ``(b, k)`` block array, ``assignment`` is refused
    (:class:`~gcsim.errors.SizeLimitError`) and the structured evaluator
    (:func:`gcsim.coding.structured.encode_structured`) encodes it without dense matrices.

    Examples
    --------
    >>> D = BIBD(7, [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6), (0, 4, 5), (1, 5, 6), (0, 2, 6)], "Fano")
    >>> D.params, D.is_symmetric, D.verify()
    (BIBDParams(v=7, b=7, r=3, k=3, lam=1), True, True)
    """

    kind = "bibd"
    Params = BIBDParams
    _blocks: tuple[tuple[int, ...], ...]

    def __init__(
        self,
        v: int,
        blocks: Sequence[Iterable[int]],
        construction: str,
        lam: int | None = None,
        metadata: dict[str, Any] | None = None,
    ):
        v = check_int("v", v, minimum=2)
        if hasattr(blocks, "__len__"):  # refuse before building the tuples (unless kept sparse)
            head = blocks[0] if len(blocks) else ()
            first = len(head) if isinstance(head, Sized) else 0
            if not limits.keep_sparse(v, len(blocks), len(blocks) * first):
                check_dense_size("blocks", v, len(blocks), "the incidence matrix")
        # integers only (4.5 or True never become a point): read without truncation, as one array
        # when the blocks are rectangular (one pass), else block by block
        rect = _rectangular(blocks)
        blocks_t = (
            tuple(tuple(sorted(row)) for row in check_int_array("blocks", rect, ndim=2, what="the blocks").tolist())
            if rect is not None
            else tuple(tuple(sorted(check_int_array("blocks", blk, ndim=1, what="a block").tolist())) for blk in blocks)
        )
        if not blocks_t:
            raise InvalidArgumentError("blocks", "must contain at least one block")
        k = len(blocks_t[0])
        if any(len(blk) != k for blk in blocks_t):
            raise InvalidArgumentError("blocks", "all blocks must have the same size")
        if any(len(set(blk)) != k for blk in blocks_t):
            raise InvalidArgumentError("blocks", "a block repeats a point")
        flat = np.fromiter((x for blk in blocks_t for x in blk), dtype=np.int64, count=k * len(blocks_t))
        if flat.size and (flat.min() < 0 or flat.max() >= v):
            raise InvalidArgumentError("blocks", f"points must lie in range({v})")
        b = len(blocks_t)
        A: Any
        if limits.keep_sparse(v, b, b * k):
            # kept sparse: CSC with the sorted points of block j in column j (no dense matrix)
            A = sp.csc_matrix(
                (np.ones(flat.size, dtype=np.int64), flat, np.arange(b + 1, dtype=np.int64) * k), shape=(v, b)
            )
        else:
            check_dense_size("blocks", v, b, "the incidence matrix")
            A = np.zeros((v, b), dtype=np.int64)
            A[flat, np.repeat(np.arange(b), k)] = 1
        r = (b * k) // v
        if lam is None:
            lam = (r * (k - 1)) // (v - 1) if v > 1 else 0
        self._set("_blocks", blocks_t)
        super().__init__(A, (v, b, r, k, int(lam)), construction, metadata)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> BIBD:
        """Rebuild a design from its stored incidence matrix (dtype, shape and 0/1 values checked).

        Examples
        --------
        >>> from gcsim.combinatorics.bibd import bibd
        >>> D = bibd(7, 3)
        >>> BIBD.from_arrays(D.to_arrays(), D.bundle_metadata()).params == D.params
        True
        """
        v, b, _, k, lam = stored_params(metadata, 5, "bibd")
        if "assignment" not in arrays and "blocks" in arrays:
            return cls._from_blocks(arrays["blocks"], metadata, v, b, k, lam)
        A = stored_binary(arrays, "assignment", "bibd", (v, b))
        blocks = [tuple(np.flatnonzero(A[:, j]).tolist()) for j in range(A.shape[1])]
        try:
            obj = cls(
                A.shape[0], blocks, stored_construction(metadata), lam=lam, metadata=stored_object_metadata(metadata)
            )
        except InvalidArgumentError as exc:
            raise CatalogueError(f"stored bibd does not form a design: {exc}") from None
        return same_assignment(obj, A, "bibd")

    @classmethod
    def _from_blocks(cls, stored: Any, metadata: Mapping[str, Any], v: int, b: int, k: int, lam: int) -> BIBD:
        """Rebuild a sparse design from its stored ``(b, k)`` block array (integers, in range, checked)."""
        arr = np.asarray(stored)
        if arr.dtype.kind not in "iu" or arr.shape != (b, k):
            raise CatalogueError(f"stored bibd blocks must be an integer ({b}, {k}) array, got {arr.dtype} {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= v):
            raise CatalogueError(f"stored bibd blocks have a point outside range({v})")
        try:
            obj = cls(
                v, arr.tolist(), stored_construction(metadata), lam=lam, metadata=stored_object_metadata(metadata)
            )
        except InvalidArgumentError as exc:
            raise CatalogueError(f"stored bibd does not form a design: {exc}") from None
        if tuple(obj.params) != (v, b, obj.r, k, lam):
            raise CatalogueError(f"stored bibd params {(v, b, k, lam)} do not match its blocks {tuple(obj.params)}")
        return obj

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The incidence as ``assignment`` (int8); a design kept sparse exports its ``(b, k)`` ``blocks``.

        Examples
        --------
        >>> D = BIBD(7, [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6), (0, 4, 5), (1, 5, 6), (0, 2, 6)], "Fano")
        >>> sorted(D.to_arrays())
        ['assignment']
        """
        if self.is_sparse:
            return {"blocks": np.array(self._blocks, dtype=np.int32 if self.v < 2**31 else np.int64)}
        return super().to_arrays()

    # -- basic accessors ---------------------------------------------------------------
    @property
    def blocks(self) -> tuple[tuple[int, ...], ...]:
        """The blocks as sorted tuples of points."""
        return self._blocks

    @property
    def v(self) -> int:
        """Number of points."""
        return self.params[0]

    @property
    def b(self) -> int:
        """Number of blocks."""
        return self.params[1]

    @property
    def r(self) -> int:
        """Replication number (blocks through a point)."""
        return self.params[2]

    @property
    def k(self) -> int:
        """Block size."""
        return self.params[3]

    @property
    def lam(self) -> int:
        """Pair multiplicity lambda."""
        return self.params[4]

    @property
    def is_symmetric(self) -> bool:
        """True iff ``b == v`` (equivalently ``r == k``)."""
        return self.params[0] == self.params[1]

    # -- verification ------------------------------------------------------------------
    def verify(self) -> bool:
        """Exact check of the BIBD identities (integer arithmetic).

        Checks ``b k = v r``, ``lam (v-1) = r (k-1)``, the column sums,
        ``A A^T = (r - lam) I + lam J`` and, for symmetric designs,
        ``A^T A = (k - lam) I + lam J``.  Raises
        :class:`~gcsim.errors.VerificationError` on failure.
        """
        self._check_binary()
        v, b, r, k, lam = self.params
        if self.is_sparse:
            return self._verify_sparse()
        A = self.assignment
        require(A.shape == (v, b), f"assignment shape {A.shape} != (v, b) = {(v, b)}")
        require(b * k == v * r, f"b k = {b * k} != v r = {v * r}")
        require(lam * (v - 1) == r * (k - 1), f"lam (v-1) = {lam * (v - 1)} != r (k-1) = {r * (k - 1)}")
        require(bool(np.all(A.sum(axis=0) == k)), "some block does not have k points")
        # BLAS products of 0/1 matrices are exact integers while every partial sum (<= max(v, b))
        # fits the mantissa: float32 (2^24) within gcsim's size limits, else float64 (2^53)
        Af = A.astype(np.float32 if max(v, b) < 2**24 else np.float64)
        G = (Af @ Af.T).astype(np.int64)
        expect = (r - lam) * np.eye(v, dtype=np.int64) + lam
        require(bool(np.array_equal(G, expect)), "A A^T != (r - lam) I + lam J")
        if v == b:
            H = (Af.T @ Af).astype(np.int64)
            expect = (k - lam) * np.eye(b, dtype=np.int64) + lam
            require(bool(np.array_equal(H, expect)), "symmetric design but A^T A != (k - lam) I + lam J")
        return True

    def _verify_sparse(self) -> bool:
        """The checks of :meth:`verify` on the sparse incidence (exact integers, chunked products)."""
        v, b, r, k, lam = self.params
        S = self.incidence
        require(S.shape == (v, b), f"incidence shape {S.shape} != (v, b) = {(v, b)}")
        require(b * k == v * r, f"b k = {b * k} != v r = {v * r}")
        require(lam * (v - 1) == r * (k - 1), f"lam (v-1) = {lam * (v - 1)} != r (k-1) = {r * (k - 1)}")
        require(bool(np.all(self.loads == k)), "some block does not have k points")
        bad = sparse_gram_equals(S, r, lam)
        require(bad is None, f"A A^T != (r - lam) I + lam J (entry {bad})")
        if v == b:
            bad = sparse_gram_equals(S.T, k, lam)
            require(bad is None, f"symmetric design but A^T A != (k - lam) I + lam J (entry {bad})")
        return True

    # -- derived designs -----------------------------------------------------------------
    def complement(self) -> BIBD:
        """Complementary design: blocks ``V \\ B``; a (v, b, b-r, v-k, b-2r+lam)-BIBD [BJL, Prop. II.2.3].

        >>> from gcsim.combinatorics.bibd import bibd
        >>> bibd(7, 3).complement().params
        BIBDParams(v=7, b=7, r=4, k=4, lam=2)
        """
        v, b, r, k, lam = self.params
        if v - k < 2 or b - 2 * r + lam < 1:
            raise ImpossibleParametersError(
                "complement",
                f"the complement of a ({v},{k},{lam}) design is degenerate "
                f"(block size {v - k}, lambda {b - 2 * r + lam})",
            )
        everything = set(range(v))
        blocks = [sorted(everything.difference(blk)) for blk in self._blocks]
        return BIBD(v, blocks, f"complement of [{self.construction}]", lam=b - 2 * r + lam)

    def _symmetric_block(self, block_index: int) -> tuple[int, ...]:
        if not self.is_symmetric:
            raise InvalidArgumentError("self", "residual/derived designs need a symmetric design (v == b)")
        block_index = check_int("block_index", block_index, minimum=0, maximum=self.b - 1)
        return self._blocks[block_index]

    def residual(self, block_index: int = 0) -> BIBD:
        """Residual design of a symmetric design w.r.t. block B: points ``V \\ B``, blocks ``B' \\ B``.

        A symmetric (v, k, lam) design gives a (v-k, k-lam, lam) design [BJL, Thm. II.3.5].

        >>> from gcsim.combinatorics.bibd import bibd
        >>> bibd(91, 10).residual().params
        BIBDParams(v=81, b=90, r=10, k=9, lam=1)
        """
        B = self._symmetric_block(block_index)
        v, _, _, k, lam = self.params
        if k - lam < 2:
            raise ImpossibleParametersError(
                "residual", f"residual of a ({v},{k},{lam}) design has blocks of size {k - lam}"
            )
        keep = np.setdiff1d(np.arange(v), B)
        relabel = -np.ones(v, dtype=np.int64)
        relabel[keep] = np.arange(keep.size)
        Bset = set(B)
        blocks = [relabel[[x for x in blk if x not in Bset]] for i, blk in enumerate(self._blocks) if i != block_index]
        return BIBD(v - k, blocks, f"residual of [{self.construction}]", lam=lam)

    def derived(self, block_index: int = 0) -> BIBD:
        """Derived design of a symmetric design w.r.t. block B: points B, blocks ``B' n B``.

        A symmetric (v, k, lam) design with lam >= 2 gives a (k, lam, lam-1) design [BJL, Thm. II.3.5].

        >>> from gcsim.combinatorics.bibd import bibd
        >>> bibd(16, 6, 2).derived().params
        BIBDParams(v=6, b=15, r=5, k=2, lam=1)
        """
        B = self._symmetric_block(block_index)
        v, _, _, k, lam = self.params
        if lam < 2:
            raise ImpossibleParametersError(
                "derived", f"the derived design of a ({v},{k},{lam}) design has lambda - 1 = {lam - 1} < 1"
            )
        relabel = -np.ones(v, dtype=np.int64)
        relabel[list(B)] = np.arange(k)
        Bset = set(B)
        blocks = [relabel[[x for x in blk if x in Bset]] for i, blk in enumerate(self._blocks) if i != block_index]
        return BIBD(k, blocks, f"derived of [{self.construction}]", lam=lam - 1)


def union_design(*designs: BIBD, name: str | None = None) -> BIBD:
    """Union (block multiset sum) of designs on the same points with the same k: lambdas add.

    ``name`` is the construction text (default: the designs' constructions joined by ``+``).

    >>> from gcsim.combinatorics.bibd import bibd
    >>> union_design(bibd(7, 3), bibd(7, 3)).params
    BIBDParams(v=7, b=14, r=6, k=3, lam=2)
    """
    if not designs:
        raise InvalidArgumentError("designs", "need at least one design")
    v, k = designs[0].v, designs[0].k
    for D in designs:
        if not isinstance(D, BIBD) or D.v != v or D.k != k:
            raise InvalidArgumentError("designs", "all designs must be BIBDs with the same v and k")
    check_dense_size("designs", v, sum(D.b for D in designs), "the union's incidence matrix")
    blocks = [blk for D in designs for blk in D.blocks]
    how = " + ".join(f"[{D.construction}]" for D in designs) if name is None else name
    return BIBD(v, blocks, how, lam=sum(D.lam for D in designs))
