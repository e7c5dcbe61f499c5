"""Balanced incomplete block designs (SPEC §2.1).

A 2-(v, k, lambda) design, or (v, b, r, k, lambda)-BIBD, is a set of v points
and b blocks (k-subsets of the points, repeats allowed) such that every pair of
distinct points lies in exactly lambda blocks.  Then every point lies in
``r = lambda (v-1)/(k-1)`` blocks and ``b = v r / k``.  In gcsim the points are
the data parts and the blocks are the workers: the assignment matrix is the
v x b point-block incidence matrix ``A``, with

* ``b k = v r`` and ``lambda (v-1) = r (k-1)``;
* ``A A^T = (r - lambda) I + lambda J`` and every column sums to k;
* for symmetric designs (``v = b``) also ``A^T A = (k - lambda) I + lambda J``.

References: Beth, Jungnickel & Lenz, *Design Theory* (2nd ed., 1999) [BJL];
Colbourn & Dinitz (eds.), *Handbook of Combinatorial Designs* (2nd ed., 2007)
[HCD]; Stinson, *Combinatorial Designs* (2004).  Proofs of every construction
and necessary condition used here: ``docs/theory/10_bibd.md``.

Entry point: :func:`bibd`.  Example: the projective plane of order 9,

>>> D = bibd(91, 10, 1)
>>> D.params, D.construction
(BIBDParams(v=91, b=91, r=10, k=10, lam=1), 'PG(2,9): points vs lines')
>>> D.verify()
True
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np
import sympy

from .. import limits
from .._validation import check_bool, check_dense_size, check_int
from ..errors import (
    CatalogueError,
    ImpossibleParametersError,
    InvalidArgumentError,
    NotConstructibleError,
    SizeLimitError,
)
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
)
from .difference_families import (
    DIFFERENCE_FAMILIES,
    develop,
    paley_difference_set,
    radical_difference_family,
    singer_difference_set,
)
from .fields import field_tables, is_prime_power, prime_power_decomposition, primitive_element
from .geometries import (
    _codes,
    _spans,
    ag_flats,
    ag_parameters,
    gaussian_binomial,
    pg_flats,
    pg_parameters,
    projective_points,
    subspaces,
)
from .steiner import steiner_triple_system_blocks, triple_system_hill_climb

__all__ = [
    "BIBD",
    "BIBDParams",
    "bibd",
    "bibd_necessary_conditions",
    "bruck_ryser_chowla",
    "buildable_bibds",
    "projective_geometry_design",
    "projective_plane",
    "affine_geometry_design",
    "affine_plane",
    "steiner_triple_system",
    "paley_design",
    "singer_design",
    "difference_family_design",
    "complete_design",
    "union_design",
    "hermitian_unital",
    "five_q_design",
    "mcfarland_design",
    "hyperoval_biplane",
    "KNOWN_NONEXISTENT",
]


# --------------------------------------------------------------------------------------
# The design object
# --------------------------------------------------------------------------------------

class BIBDParams(NamedTuple):
    """Parameters of a 2-design: ``v`` points, ``b`` blocks, replication ``r``, block size ``k``, ``lam``."""

    v: int
    b: int
    r: int
    k: int
    lam: int


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

    Examples
    --------
    >>> D = BIBD(7, [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6), (0, 4, 5), (1, 5, 6), (0, 2, 6)], "Fano")
    >>> D.params, D.is_symmetric, D.verify()
    (BIBDParams(v=7, b=7, r=3, k=3, lam=1), True, True)
    """

    kind = "bibd"
    Params = BIBDParams
    _blocks: tuple[tuple[int, ...], ...]

    def __init__(self, v: int, blocks: Sequence[Sequence[int]], construction: str,
                 lam: int | None = None, metadata: dict[str, Any] | None = None):
        v = check_int("v", v, minimum=2)
        if hasattr(blocks, "__len__"):  # refuse before building the tuples
            check_dense_size("blocks", v, len(blocks), "the incidence matrix")
        blocks_t = tuple(tuple(sorted(int(x) for x in blk)) for blk in blocks)
        check_dense_size("blocks", v, len(blocks_t), "the incidence matrix")
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
        >>> D = bibd(7, 3)
        >>> BIBD.from_arrays(D.to_arrays(), D.bundle_metadata()).params == D.params
        True
        """
        v, b, _, _, lam = stored_params(metadata, 5, "bibd")
        A = stored_binary(arrays, "assignment", "bibd", (v, b))
        blocks = [tuple(np.flatnonzero(A[:, j]).tolist()) for j in range(A.shape[1])]
        try:
            obj = cls(A.shape[0], blocks, stored_construction(metadata), lam=lam,
                      metadata=stored_object_metadata(metadata))
        except InvalidArgumentError as exc:
            raise CatalogueError(f"stored bibd does not form a design: {exc}") from None
        return same_assignment(obj, A, "bibd")

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
        A = self.assignment
        require(A.shape == (v, b), f"assignment shape {A.shape} != (v, b) = {(v, b)}")
        require(b * k == v * r, f"b k = {b * k} != v r = {v * r}")
        require(lam * (v - 1) == r * (k - 1), f"lam (v-1) = {lam * (v - 1)} != r (k-1) = {r * (k - 1)}")
        require(bool(np.all(A.sum(axis=0) == k)), "some block does not have k points")
        # BLAS products of 0/1 matrices are exact integers while every partial sum (<= max(v, b))
        # fits the mantissa: float32 (2^24) within gcsim's size limits, else float64 (2^53)
        Af = A.astype(np.float32 if max(v, b) < 2 ** 24 else np.float64)
        G = (Af @ Af.T).astype(np.int64)
        expect = (r - lam) * np.eye(v, dtype=np.int64) + lam
        require(bool(np.array_equal(G, expect)), "A A^T != (r - lam) I + lam J")
        if v == b:
            H = (Af.T @ Af).astype(np.int64)
            expect = (k - lam) * np.eye(b, dtype=np.int64) + lam
            require(bool(np.array_equal(H, expect)), "symmetric design but A^T A != (k - lam) I + lam J")
        return True

    # -- derived designs -----------------------------------------------------------------
    def complement(self) -> BIBD:
        """Complementary design: blocks ``V \\ B``; a (v, b, b-r, v-k, b-2r+lam)-BIBD [BJL, Prop. II.2.3].

        >>> bibd(7, 3).complement().params
        BIBDParams(v=7, b=7, r=4, k=4, lam=2)
        """
        v, b, r, k, lam = self.params
        if v - k < 2 or b - 2 * r + lam < 1:
            raise ImpossibleParametersError(
                "complement", f"the complement of a ({v},{k},{lam}) design is degenerate "
                              f"(block size {v - k}, lambda {b - 2 * r + lam})")
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

        >>> bibd(91, 10).residual().params
        BIBDParams(v=81, b=90, r=10, k=9, lam=1)
        """
        B = self._symmetric_block(block_index)
        v, _, _, k, lam = self.params
        if k - lam < 2:
            raise ImpossibleParametersError("residual", f"residual of a ({v},{k},{lam}) design has blocks of size {k - lam}")
        keep = np.setdiff1d(np.arange(v), B)
        relabel = -np.ones(v, dtype=np.int64)
        relabel[keep] = np.arange(keep.size)
        Bset = set(B)
        blocks = [relabel[[x for x in blk if x not in Bset]] for i, blk in enumerate(self._blocks) if i != block_index]
        return BIBD(v - k, blocks, f"residual of [{self.construction}]", lam=lam)

    def derived(self, block_index: int = 0) -> BIBD:
        """Derived design of a symmetric design w.r.t. block B: points B, blocks ``B' n B``.

        A symmetric (v, k, lam) design with lam >= 2 gives a (k, lam, lam-1) design [BJL, Thm. II.3.5].

        >>> bibd(16, 6, 2).derived().params
        BIBDParams(v=6, b=15, r=5, k=2, lam=1)
        """
        B = self._symmetric_block(block_index)
        v, _, _, k, lam = self.params
        if lam < 2:
            raise ImpossibleParametersError("derived", f"the derived design of a ({v},{k},{lam}) design has lambda - 1 = {lam - 1} < 1")
        relabel = -np.ones(v, dtype=np.int64)
        relabel[list(B)] = np.arange(k)
        Bset = set(B)
        blocks = [relabel[[x for x in blk if x in Bset]] for i, blk in enumerate(self._blocks) if i != block_index]
        return BIBD(k, blocks, f"derived of [{self.construction}]", lam=lam - 1)


# --------------------------------------------------------------------------------------
# Necessary conditions
# --------------------------------------------------------------------------------------

#: Known nonexistence results beyond divisibility / Fisher / BRC, within the
#: parameters gcsim reasons about.  (v, k, lam) -> reference.
KNOWN_NONEXISTENT: dict[tuple[int, int, int], str] = {
    (111, 11, 1): "Lam, Thiel & Swiercz, 'The non-existence of finite projective planes of order 10', "
                  "Canad. J. Math. 41 (1989) 1117-1123",
    (46, 6, 1): "Houghten, Thiel, Janssen & Lam, 'The (46,6,1) block design does not exist', "
                "J. Combin. Des. 9 (2001) 60-71",
}


def _squarefree_part(n: int) -> int:
    return math.prod(int(p) for p, e in sympy.factorint(abs(n)).items() if e % 2)


def _hilbert_symbol(a: int, b: int, p: int) -> int:
    """Hilbert symbol (a, b)_p for nonzero integers and a prime p (Serre, *A Course in Arithmetic*, III.1.2)."""
    def split(x: int) -> tuple[int, int]:
        e = 0
        while x % p == 0:
            x //= p
            e += 1
        return e, x

    alpha, u = split(a)
    beta, w = split(b)
    if p != 2:
        eps = (p - 1) // 2
        sign = (-1) ** (alpha * beta * eps)
        return sign * (int(sympy.legendre_symbol(u, p)) ** beta) * (int(sympy.legendre_symbol(w, p)) ** alpha)

    def e2(x: int) -> int:
        return ((x - 1) // 2) % 2

    def w2(x: int) -> int:
        return ((x * x - 1) // 8) % 2

    return (-1) ** ((e2(u) * e2(w) + alpha * w2(w) + beta * w2(u)) % 2)


def _prime_factors(n: int) -> list[int]:
    return sorted(int(p) for p in sympy.factorint(abs(n)))


def ternary_form_isotropic(a: int, b: int) -> bool:
    """Whether ``z^2 = a x^2 + b y^2`` has a nonzero integer solution (a, b nonzero integers).

    By the Hasse-Minkowski theorem (Legendre's theorem), iff the Hilbert symbol
    ``(a, b)_p = 1`` for every prime p and for p = infinity.

    >>> ternary_form_isotropic(2, 7), ternary_form_isotropic(6, -1)
    (True, False)
    """
    if a < 0 and b < 0:
        return False
    return all(_hilbert_symbol(a, b, p) == 1 for p in set(_prime_factors(2 * a * b)))


def bruck_ryser_chowla(v: int, k: int, lam: int) -> bool | None:
    """Bruck-Ryser-Chowla test for a symmetric (v, k, lam) design.

    Returns None if the parameters are not symmetric (``lam (v-1) != k (k-1)``),
    else whether the BRC condition holds: for v even, ``n = k - lam`` is a
    square; for v odd, ``z^2 = n x^2 + (-1)^((v-1)/2) lam y^2`` has a nonzero
    integer solution [BJL, Thm. II.3.6; HCD II.6.3].

    >>> bruck_ryser_chowla(43, 7, 1), bruck_ryser_chowla(91, 10, 1), bruck_ryser_chowla(22, 7, 2)
    (False, True, False)
    """
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2)
    lam = check_int("lam", lam, minimum=1)
    if lam * (v - 1) != k * (k - 1) or k >= v:
        return None
    n = k - lam
    if v % 2 == 0:
        return math.isqrt(n) ** 2 == n
    sign = 1 if (v - 1) // 2 % 2 == 0 else -1
    a = _squarefree_part(n)
    b = sign * _squarefree_part(lam)
    if a == 1 or b == 1:
        return True
    return ternary_form_isotropic(a, b)


@lru_cache(maxsize=1 << 16)
def _violations(v: int, k: int, lam: int) -> tuple[tuple[str, str], ...]:
    """Violated necessary conditions with messages (v, k, lam already validated, k <= v); cached."""
    return tuple(_violations_list(v, k, lam))


def _violations_list(v: int, k: int, lam: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if (lam * (v - 1)) % (k - 1) or (lam * v * (v - 1)) % (k * (k - 1)):
        out.append(("divisibility",
                    f"need (k-1) | lam (v-1) and k (k-1) | lam v (v-1); here lam(v-1) = {lam * (v - 1)}, "
                    f"k-1 = {k - 1}, lam v (v-1) = {lam * v * (v - 1)}, k(k-1) = {k * (k - 1)}"))
        return out
    r = lam * (v - 1) // (k - 1)
    b = v * r // k
    if k < v and b < v:
        out.append(("Fisher's inequality", f"b = {b} < v = {v}"))
        return out
    if k < v and b == v and bruck_ryser_chowla(v, k, lam) is False:
        out.append(("Bruck-Ryser-Chowla", f"no symmetric ({v},{k},{lam}) design: "
                    + (f"v even and k - lam = {k - lam} is not a square" if v % 2 == 0 else
                       f"z^2 = {k - lam} x^2 + {(-1) ** ((v - 1) // 2) * lam} y^2 has no nonzero integer solution")))
        return out
    # Hall-Connor: for lam <= 2 every quasi-residual design is residual, so it embeds into a
    # symmetric (v+k+lam, k+lam, lam) design; if that one cannot exist, neither can this one.
    if k < v and r == k + lam and lam <= 2:
        sym = (v + k + lam, k + lam, lam)
        why = ("violates Bruck-Ryser-Chowla" if bruck_ryser_chowla(*sym) is False else
               f"does not exist ({KNOWN_NONEXISTENT[sym]})" if sym in KNOWN_NONEXISTENT else None)
        if why is not None:
            out.append(("Hall-Connor (quasi-residual of a nonexistent symmetric design)",
                        f"a ({v},{k},{lam}) design is quasi-residual with lam <= 2, hence the residual of a "
                        f"symmetric {sym} design (Hall & Connor 1954), which {why}"))
            return out
    if (v, k, lam) in KNOWN_NONEXISTENT:
        out.append((f"known nonexistence ({KNOWN_NONEXISTENT[(v, k, lam)]})", f"no ({v},{k},{lam}) design exists"))
    return out


def _validate(v, k, lam) -> tuple[int, int, int]:
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2)
    lam = check_int("lam", lam, minimum=1)
    if k > v:
        raise InvalidArgumentError("k", f"must be <= v = {v}, got {k}")
    return v, k, lam


def bibd_necessary_conditions(v: int, k: int, lam: int = 1) -> list[str]:
    """Names of the violated necessary conditions for a 2-(v, k, lam) design (empty if none).

    Checked, in order: ``"divisibility"`` (``(k-1) | lam (v-1)``,
    ``k (k-1) | lam v (v-1)``), ``"Fisher's inequality"`` (``b >= v``),
    ``"Bruck-Ryser-Chowla"`` (symmetric designs), the Hall-Connor embedding of
    quasi-residual designs with lam <= 2 into BRC-excluded symmetric designs,
    and the tabulated :data:`KNOWN_NONEXISTENT` results.  Only the first
    violated condition is reported (later ones presuppose earlier ones).

    >>> bibd_necessary_conditions(43, 7, 1), bibd_necessary_conditions(8, 3, 1)
    (['Bruck-Ryser-Chowla'], ['divisibility'])
    >>> bibd_necessary_conditions(91, 10, 1)
    []
    """
    v, k, lam = _validate(v, k, lam)
    return [name for name, _ in _violations(v, k, lam)]


# --------------------------------------------------------------------------------------
# Named constructions
# --------------------------------------------------------------------------------------

def projective_geometry_design(n: int, q: int, dim: int | None = None) -> BIBD:
    """Points versus ``dim``-flats of PG(n, q) (default: hyperplanes, ``dim = n-1``).

    A 2-(v, k, lam) design with ``v = (q^{n+1}-1)/(q-1)``,
    ``k = (q^{dim+1}-1)/(q-1)``, ``lam = [n-1 choose dim-1]_q`` [BJL, Prop. I.2.15].
    With ``dim = n - 1`` it is symmetric (Singer's difference-set design up to isomorphism).

    >>> projective_geometry_design(3, 2).params
    BIBDParams(v=15, b=15, r=7, k=7, lam=3)
    >>> projective_geometry_design(3, 3, dim=1).params
    BIBDParams(v=40, b=130, r=13, k=4, lam=1)
    """
    n = check_int("n", n, minimum=2)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    dim = n - 1 if dim is None else check_int("dim", dim, minimum=1, maximum=n - 1)
    v, k, lam = pg_parameters(n, q, dim)
    check_dense_size("q", v, gaussian_binomial(n + 1, dim + 1, q), f"the incidence matrix of PG({n},{q})")
    what = "hyperplanes" if dim == n - 1 and n > 2 else ("lines" if dim == 1 else f"{dim}-flats")
    return BIBD(v, pg_flats(n, q, dim), f"PG({n},{q}): points vs {what}", lam=lam,
                metadata={"family": "PG", "n": n, "q": q, "dim": dim})


def projective_plane(q: int) -> BIBD:
    """The Desarguesian projective plane PG(2, q): a (q^2+q+1, q+1, 1) symmetric design.

    >>> projective_plane(9).params
    BIBDParams(v=91, b=91, r=10, k=10, lam=1)
    """
    return projective_geometry_design(2, q, 1)


def singer_design(n: int, q: int) -> BIBD:
    """Symmetric design of Singer's cyclic difference set (points vs hyperplanes of PG(n, q)).

    Develops :func:`~gcsim.combinatorics.difference_families.singer_difference_set`
    over Z_v, a ``((q^{n+1}-1)/(q-1), (q^n-1)/(q-1), (q^{n-1}-1)/(q-1))``
    design with a cyclic automorphism (Singer 1938).  For ``q^{n+1} > 1024``
    the isomorphic point-hyperplane design of the geometry is returned instead.

    >>> D = singer_design(2, 2)
    >>> D.params, D.blocks[0]
    (BIBDParams(v=7, b=7, r=3, k=3, lam=1), (1, 2, 4))
    """
    n = check_int("n", n, minimum=2)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    if q ** (n + 1) > 1024:
        return projective_geometry_design(n, q, n - 1)  # checks the size
    D = singer_difference_set(n, q)
    v = (q ** (n + 1) - 1) // (q - 1)
    lam = (q ** (n - 1) - 1) // (q - 1)
    return BIBD(v, develop(v, [D]), f"Singer difference set for PG({n},{q})", lam=lam,
                metadata={"family": "Singer", "n": n, "q": q, "base_blocks": [D]})


def affine_geometry_design(n: int, q: int, dim: int | None = None) -> BIBD:
    """Points versus ``dim``-flats of AG(n, q) (default: hyperplanes, ``dim = n-1``).

    A 2-(q^n, q^dim, [n-1 choose dim-1]_q) design [BJL, Prop. I.2.16].

    >>> affine_geometry_design(2, 3).params
    BIBDParams(v=9, b=12, r=4, k=3, lam=1)
    >>> affine_geometry_design(3, 2).params
    BIBDParams(v=8, b=14, r=7, k=4, lam=3)
    """
    n = check_int("n", n, minimum=2)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    dim = n - 1 if dim is None else check_int("dim", dim, minimum=1, maximum=n - 1)
    v, k, lam = ag_parameters(n, q, dim)
    check_dense_size("q", v, q ** (n - dim) * gaussian_binomial(n, dim, q), f"the incidence matrix of AG({n},{q})")
    if k < 2:  # pragma: no cover - dim >= 1 and q >= 2
        raise InvalidArgumentError("dim", "flats must have at least 2 points")
    what = "lines" if dim == 1 else ("hyperplanes" if dim == n - 1 else f"{dim}-flats")
    return BIBD(v, ag_flats(n, q, dim), f"AG({n},{q}): points vs {what}", lam=lam,
                metadata={"family": "AG", "n": n, "q": q, "dim": dim})


def affine_plane(q: int) -> BIBD:
    """The Desarguesian affine plane AG(2, q): a (q^2, q, 1) design.

    >>> affine_plane(4).params
    BIBDParams(v=16, b=20, r=5, k=4, lam=1)
    """
    return affine_geometry_design(2, q, 1)


def steiner_triple_system(v: int) -> BIBD:
    """Steiner triple system STS(v), v = 1 or 3 mod 6: Bose (3 mod 6) or Skolem (1 mod 6).

    See :mod:`gcsim.combinatorics.steiner` and [Lindner & Rodger, *Design
    Theory*, 2008, §1.2-1.3].

    >>> steiner_triple_system(15).params
    BIBDParams(v=15, b=35, r=7, k=3, lam=1)
    """
    v = check_int("v", v, minimum=3)
    check_dense_size("v", v, v * (v - 1) // 6, f"the incidence matrix of STS({v})")
    name = "Bose" if v % 6 == 3 else "Skolem"
    return BIBD(v, steiner_triple_system_blocks(v), f"STS({v}) ({name})", lam=1)


def paley_design(q: int) -> BIBD:
    """Paley difference-set design: q = 3 mod 4 prime power, a (q, (q-1)/2, (q-3)/4) symmetric design.

    Blocks are the translates ``x + S`` of the nonzero squares S of GF(q)
    [Paley 1933; BJL Thm. VI.1.12].

    >>> paley_design(11).params
    BIBDParams(v=11, b=11, r=5, k=5, lam=2)
    """
    q = check_int("q", q, minimum=7)
    check_dense_size("q", q, q, f"the incidence matrix of the Paley design of order {q}")
    S = paley_difference_set(q)
    p, a = prime_power_decomposition(q)
    return BIBD(q, develop((p,) * a, [S]), f"Paley difference set in GF({q})", lam=(q - 3) // 4,
                metadata={"family": "Paley", "q": q, "base_blocks": [S]})


def difference_family_design(moduli, base_blocks, n_fixed: int = 0, lam: int | None = None,
                             name: str = "difference family") -> BIBD:
    """Develop base blocks over ``Z_{n_1} x ... x Z_{n_s}`` (plus fixed points) into a design.

    See :func:`gcsim.combinatorics.difference_families.develop`.  The result is
    *not* verified here; call ``verify()``.

    >>> D = difference_family_design(13, [[0, 1, 3, 9]])
    >>> D.params, D.verify()
    (BIBDParams(v=13, b=13, r=4, k=4, lam=1), True)
    """
    if isinstance(moduli, (int, np.integer)):
        moduli = (int(moduli),)
    v = int(np.prod(moduli)) + int(n_fixed)
    if hasattr(base_blocks, "__len__"):  # at most |G| blocks per base block
        check_dense_size("moduli", v, int(np.prod(moduli)) * len(base_blocks), "the incidence matrix")
    group = " x ".join(f"Z_{m}" for m in moduli) + (f" + {n_fixed} fixed" if n_fixed else "")
    return BIBD(v, develop(moduli, base_blocks, n_fixed), f"{name} over {group}", lam=lam,
                metadata={"moduli": tuple(moduli), "n_fixed": n_fixed,
                          "base_blocks": [list(map(int, b)) for b in base_blocks]})


def complete_design(v: int, k: int) -> BIBD:
    """The trivial design of all k-subsets of v points: a (v, k, C(v-2, k-2)) design.

    >>> complete_design(5, 3).params
    BIBDParams(v=5, b=10, r=6, k=3, lam=3)
    """
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2, maximum=v)
    b = _comb_capped(v, k, limits.MAX_DENSE_ENTRIES)   # C(v, k) without building a huge integer
    check_dense_size("v", v, b, f"the complete design of all {k}-subsets of {v} points"
                     + (" (C(v, k) blocks)" if b > limits.MAX_DENSE_ENTRIES else ""))
    return BIBD(v, list(combinations(range(v), k)), f"complete design: all {k}-subsets of {v} points",
                lam=math.comb(v - 2, k - 2))


def union_design(*designs: BIBD, name: str | None = None) -> BIBD:
    """Union (block multiset sum) of designs on the same points with the same k: lambdas add.

    ``name`` is the construction text (default: the designs' constructions joined by ``+``).

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


def hermitian_unital(q: int) -> BIBD:
    """Hermitian unital in PG(2, q^2): a (q^3+1, q+1, 1) design.

    Built inside PG(2, q^2) with table arithmetic, so meant for small q
    (``bibd`` uses it for q <= 5).  Points: the ``q^3+1`` points of the Hermitian curve ``x^{q+1} + y^{q+1} + z^{q+1} = 0``
    in PG(2, q^2); blocks: its intersections with the secant lines (each meets
    the curve in q+1 points) [BJL, Example I.2.18; HCD VI.7.3].

    >>> hermitian_unital(3).params
    BIBDParams(v=28, b=63, r=9, k=4, lam=1)
    """
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    check_dense_size("q", q ** 3 + 1, q * q * (q * q - q + 1), f"the incidence matrix of the Hermitian unital (q={q})")
    Q = q * q
    _, mul = field_tables(Q)
    pts = projective_points(3, Q)

    def power(x: np.ndarray, e: int) -> np.ndarray:
        out = np.ones_like(x)
        for _ in range(e):
            out = mul[out, x]
        return out

    add, _ = field_tables(Q)
    h = power(pts, q + 1)
    norm = add[add[h[:, 0], h[:, 1]], h[:, 2]]
    on_curve = np.flatnonzero(norm == 0)
    relabel = -np.ones(len(pts), dtype=np.int64)
    relabel[on_curve] = np.arange(on_curve.size)
    blocks = []
    for line in pg_flats(2, Q, 1):
        sec = [int(relabel[x]) for x in line if relabel[x] >= 0]
        if len(sec) > 1:
            blocks.append(sec)
    return BIBD(int(on_curve.size), blocks, f"Hermitian unital in PG(2,{Q})", lam=1,
                metadata={"family": "unital", "q": q})


def five_q_design(q: int) -> BIBD:
    """A (5q, 5, 1) design for a prime power q = 1 mod 4 (Clayton Smith's Theorem 24 construction).

    Points ``Z_5 x GF(q)``; with w primitive and ``d = (q-1)/4``, blocks are
    ``Z_5 x {b}`` and ``{(i,b), (i+1, b +- w^j), (i+4, b +- w^{j+d})}`` for
    ``b`` in GF(q), ``i`` in Z_5, ``0 <= j < d``.  (Reference: the construction
    used by SageMath's ``BIBD_5q_5_for_q_prime_power``; verified exactly by
    ``verify()``.)

    >>> five_q_design(9).params
    BIBDParams(v=45, b=99, r=11, k=5, lam=1)
    """
    q = check_int("q", q, minimum=5)
    if not is_prime_power(q) or q % 4 != 1:
        raise InvalidArgumentError("q", f"must be a prime power = 1 mod 4, got {q}")
    check_dense_size("q", 5 * q, 5 * q * (5 * q - 1) // 20, f"the incidence matrix of the (5q,5,1) design (q={q})")
    add, mul = field_tables(q)
    neg = np.argmin(add, axis=1)  # add[x, neg[x]] == 0
    w = primitive_element(q)
    pw = [1]
    for _ in range(q - 2):
        pw.append(int(mul[pw[-1], w]))
    d = (q - 1) // 4
    blocks = [[i * q + b for i in range(5)] for b in range(q)]
    for b in range(q):
        for i in range(5):
            for j in range(d):
                a1, a2 = pw[j], pw[j + d]
                blocks.append([i * q + b,
                               ((i + 1) % 5) * q + int(add[a1, b]), ((i + 1) % 5) * q + int(add[neg[a1], b]),
                               ((i + 4) % 5) * q + int(add[a2, b]), ((i + 4) % 5) * q + int(add[neg[a2], b])])
    return BIBD(5 * q, blocks, f"(5q,5,1) construction with q = {q}", lam=1)


def mcfarland_design(q: int, d: int = 1) -> BIBD:
    """McFarland difference-set design (McFarland 1973).

    With ``r = (q^{d+1}-1)/(q-1)``, the group is ``E x Z_{r+1}``, E the additive
    group of GF(q)^{d+1}; the difference set is the union of ``H_i x {i}``
    (``i = 0..r-1``) over the r hyperplanes (d-dim subspaces) ``H_i`` of E.
    Parameters: ``v = q^{d+1}(r+1)``, ``k = q^d r``, ``lam = q^d (q^d - 1)/(q - 1)``
    [BJL, Thm. VI.9.1; HCD VI.18.4].

    >>> mcfarland_design(3).params
    BIBDParams(v=45, b=45, r=12, k=12, lam=3)
    """
    q = check_int("q", q, minimum=2)
    d = check_int("d", d, minimum=1)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    p, a = prime_power_decomposition(q)
    r = gaussian_binomial(d + 1, 1, q)
    check_dense_size("q", q ** (d + 1) * (r + 1), q ** (d + 1) * (r + 1), f"the McFarland design (q={q}, d={d})")
    hyper = _spans(subspaces(d + 1, d, q), q)                  # (r, q^d, d+1) field codes
    # an element of E is a base-q integer whose digits are base-p field codes, i.e. a base-p
    # integer with a(d+1) digits, and field addition is digitwise mod p: E = (Z_p)^{a(d+1)}
    E = q ** (d + 1)
    D = [int(_codes(vec[None, :], q)[0]) * (r + 1) + i for i, H in enumerate(hyper) for vec in H]
    moduli = (p,) * (a * (d + 1)) + (r + 1,)
    D = sorted(D)
    blocks = develop(moduli, [D])
    lam = q ** d * (q ** d - 1) // (q - 1)
    return BIBD(E * (r + 1), blocks, f"McFarland difference set (q={q}, d={d})", lam=lam,
                metadata={"family": "McFarland", "moduli": moduli, "base_blocks": [D]})


@lru_cache(maxsize=1)
def _hyperoval_class() -> tuple[tuple[int, ...], ...]:
    """One of the three classes of 56 hyperovals of PG(2, 4) (pairwise even intersections)."""
    lines = pg_flats(2, 4, 1)
    third: dict[tuple[int, int], set[int]] = {}
    for line in lines:
        for a, b in combinations(line, 2):
            third[(a, b)] = set(line)
    ovals: list[tuple[int, ...]] = []

    def grow(S: list[int], start: int) -> None:
        if len(S) == 6:
            ovals.append(tuple(S))
            return
        for x in range(start, 21):
            if all(x not in third[(a, b)] for a, b in combinations(S, 2)):
                grow(S + [x], x + 1)

    grow([], 0)
    O = np.zeros((len(ovals), 21), dtype=np.int64)
    for i, o in enumerate(ovals):
        O[i, list(o)] = 1
    inter = O @ O.T
    cls = np.flatnonzero(inter[0] % 2 == 0)
    return tuple(ovals[i] for i in cls)


def hyperoval_biplane() -> BIBD:
    """A symmetric (56, 11, 2) design (biplane of order 9) from the hyperovals of PG(2, 4).

    PG(2, 4) has 168 hyperovals (6 points, no three collinear) in three classes
    of 56; two hyperovals of one class meet in 0 or 2 points, and the graph
    "disjoint" on one class is the Gewirtz graph srg(56, 10, 0, 2).  For an
    srg(v, k, 0, 2), ``(Adj + I)^2 = (k - 1) I + 2 J``, so the closed
    neighbourhoods are the blocks of a symmetric (56, 11, 2) design
    [Hall, Lane & Wales, J. Algebra 14 (1970); Brouwer & Haemers, *Spectra of
    Graphs*, §10.20].

    >>> hyperoval_biplane().params
    BIBDParams(v=56, b=56, r=11, k=11, lam=2)
    """
    cls = _hyperoval_class()
    sets = [set(o) for o in cls]
    blocks = [[i] + [j for j in range(len(cls)) if not (sets[i] & sets[j])] for i in range(len(cls))]
    return BIBD(len(cls), blocks, "biplane from a class of 56 hyperovals of PG(2,4) (Gewirtz graph)", lam=2)


# --------------------------------------------------------------------------------------
# Planning: which construction builds (v, k, lam)?
# --------------------------------------------------------------------------------------

_MAX_COMPLETE_BLOCKS = 50_000


def _geometry_match(v: int, k: int, lam: int) -> tuple[str, int, int, int] | None:
    """The PG/AG design with parameters (v, k, lam), as (family, n, q, dim), by number theory.

    PG(n, q): ``v = 1 + q + ... + q^n`` and ``q^n < v < (q+1)^n`` (n >= 2), so
    ``q = floor(v^(1/n))``; AG(n, q): ``v = q^n``.  One integer root per n
    (``n <= log2 v``), no enumeration of fields, so it answers for any v.  When
    several geometries share (v, k, lam) the smallest q wins, PG before AG, then
    the smallest n and dim (the order gcsim has always used).
    """
    cands = []
    n = 2
    while 2 ** n <= v:
        q = int(sympy.integer_nthroot(v, n)[0])
        if q >= 2 and gaussian_binomial(n + 1, 1, q) == v and is_prime_power(q):
            for d in range(1, n):
                if pg_parameters(n, q, d) == (v, k, lam):
                    cands.append((q, 0, n, d))
        if q >= 2 and q ** n == v and is_prime_power(q):
            for d in range(1, n):
                if ag_parameters(n, q, d) == (v, k, lam):
                    cands.append((q, 1, n, d))
        n += 1
    if not cands:
        return None
    q, fam, n, d = min(cands)
    return ("PG" if fam == 0 else "AG", n, q, d)


def _comb_capped(n: int, r: int, cap: int) -> int:
    """``C(n, r)`` if it is at most ``cap``, else ``cap + 1`` (never builds a huge integer)."""
    r = min(r, n - r)
    if r < 0:
        return 0
    out = 1
    for i in range(1, r + 1):
        out = out * (n - r + i) // i   # exact: a product of i consecutive integers / i!
        if out > cap:
            return cap + 1
    return out


@lru_cache(maxsize=1 << 16)
def _plan_direct(v: int, k: int, lam: int):
    """A direct (non-recursive) recipe for (v, k, lam), or None (number theory; no field tables
    except inside the radical check, which is table-free for prime v)."""
    if k == v:
        return ("trivial-full", v, lam)
    if k == 2 and lam == 1:
        return ("complete", v, 2)
    if k == 3 and lam == 1 and v % 6 in (1, 3):
        return ("sts", v)
    geo = _geometry_match(v, k, lam)
    if geo is not None:
        return ("geometry",) + geo
    if v % 4 == 3 and is_prime_power(v) and k == (v - 1) // 2 and lam == (v - 3) // 4 and v >= 7:
        return ("paley", v)
    if (v, k, lam) in DIFFERENCE_FAMILIES:
        return ("table", v, k, lam)
    if k >= 3 and is_prime_power(v) and radical_difference_family(v, k, lam) is not None:
        return ("radical", v, k, lam)
    if k == 5 and lam == 1 and v % 5 == 0 and is_prime_power(v // 5) and (v // 5) % 4 == 1:
        return ("fiveq", v // 5)
    if lam == 1 and 3 <= k <= 6 and is_prime_power(k - 1) and v == (k - 1) ** 3 + 1:
        return ("unital", k - 1)
    for q in range(2, 16):
        if is_prime_power(q):
            for d in range(1, 4):
                r_ = gaussian_binomial(d + 1, 1, q)
                if (v, k, lam) == (q ** (d + 1) * (r_ + 1), q ** d * r_, q ** d * (q ** d - 1) // (q - 1)):
                    return ("mcfarland", q, d)
    if (v, k, lam) == (56, 11, 2):
        return ("biplane56",)
    if _comb_capped(v, k, _MAX_COMPLETE_BLOCKS) <= _MAX_COMPLETE_BLOCKS and lam == math.comb(v - 2, k - 2):
        return ("complete", v, k)
    return None


_PLANS: dict[tuple[int, int, int], Any] = {}
_MAX_HILL_CLIMB_V = 100  # triple systems up to this v are built by hill climbing (< 1 s each)
_UNION_SPLIT_MAX = 12    # lam > this: lam-fold designs as copies of a g-fold one (g | lam) first
_MAX_PLAN_DEPTH = 64     # recursion guard of the planner (a cut counts like a cycle cut)
_cuts = [0]              # number of cycle/depth cuts so far (a None found without one is cached)


def _plan(v: int, k: int, lam: int, _active: frozenset = frozenset()):
    """Recipe for (v, k, lam): a nested tuple, or None if gcsim cannot build it.

    Tries direct constructions, then (recursively) complement, residual of a
    symmetric design, derived design, copies of a design with a smaller lambda
    dividing lam, and unions lam = lam1 + lam2.  Parameters only: nothing is
    built, so existence questions answer fast for any size.
    """
    key = (v, k, lam)
    if key in _PLANS:
        return _PLANS[key]
    if _violations(v, k, lam):
        _PLANS[key] = None
        return None
    if key in _active or len(_active) >= _MAX_PLAN_DEPTH:
        _cuts[0] += 1
        return None
    cuts_before = _cuts[0]
    active = _active | {key}
    plan = _plan_direct(v, k, lam)
    r = lam * (v - 1) // (k - 1)
    b = v * r // k
    if plan is None and v - k >= 2:
        lam_c = b - 2 * r + lam
        if lam_c >= 1 and _plan_direct(v, v - k, lam_c) is not None:
            plan = ("complement", (v, v - k, lam_c))
    if plan is None and k - lam >= 2:
        # residual of a symmetric (v + k + lam, k + lam, lam) design
        V, K = v + k + lam, k + lam
        if lam * (V - 1) == K * (K - 1):
            sub = _plan(V, K, lam, active)
            if sub is not None:
                plan = ("residual", (V, K, lam))
    if plan is None and lam == k - 1 and v * (v - 1) % k == 0:
        # derived design of a symmetric (1 + v(v-1)/k, v, k) design
        V = 1 + v * (v - 1) // k
        if _plan(V, v, k, active) is not None:
            plan = ("derived", (V, v, k))
    if plan is None and lam > _UNION_SPLIT_MAX:
        # lam/g copies of a g-fold design: O(number of divisors) sub-plans, no deep recursion
        for g in _divisors(lam)[:-1]:
            if _plan(v, k, g, active) is not None:
                plan = ("multiple", (v, k, g), lam // g)
                break
    if plan is None:
        for lam1 in range(1, min(lam // 2, _UNION_SPLIT_MAX) + 1):
            lam2 = lam - lam1
            if _plan(v, k, lam1, active) is not None and _plan(v, k, lam2, active) is not None:
                plan = ("union", (v, k, lam1), (v, k, lam2))
                break
    if plan is None and v - k >= 2:
        lam_c = b - 2 * r + lam
        if lam_c >= 1 and (v, v - k, lam_c) not in active and _plan(v, v - k, lam_c, active) is not None:
            plan = ("complement", (v, v - k, lam_c))
    if plan is None and k == 3 and v <= _MAX_HILL_CLIMB_V:
        # every admissible lambda-fold triple system exists (Hanani 1961): build one by hill climbing
        plan = ("triple-hc", v, lam)
    if plan is not None or not _active or _cuts[0] == cuts_before:
        _PLANS[key] = plan   # a None that no cut influenced does not depend on the recursion stack
    return plan


def _divisors(n: int, limit: int = 4096) -> list[int]:
    """Sorted divisors of n >= 1, at most the ``limit`` smallest (from the factorization, any size of n)."""
    divs = [1]
    for p, e in sorted((int(p), int(e)) for p, e in sympy.factorint(n).items()):
        divs = [d * p ** i for d in divs for i in range(e + 1)]
        if len(divs) > 4 * limit:  # keep the work bounded for highly composite n
            divs = sorted(divs)[:4 * limit]
    out = sorted(set(divs))
    if n not in out:
        out.append(n)            # the planner skips n itself; keep the list's last element n
    return out[:limit] + ([n] if len(out) > limit else [])


def _design_size(v: int, k: int, lam: int) -> tuple[int, int]:
    """(v, b) of a 2-(v, k, lam) design (parameters already admissible)."""
    if k == v:
        return v, lam
    r = lam * (v - 1) // (k - 1)
    return v, v * r // k


def _plan_peak(plan) -> int:
    """Largest dense incidence matrix (entries) built while executing ``plan``."""
    kind = plan[0]
    if kind in ("complement", "residual", "derived"):
        sub = _plan(*plan[1])
        own = math.prod(_design_size(*plan[1]))
        return max(own, _plan_peak(sub))
    if kind in ("union", "multiple"):
        parts = [plan[1]] + ([plan[2]] if kind == "union" else [])
        v = plan[1][0]
        total_b = (sum(_design_size(*p)[1] for p in parts) if kind == "union"
                   else _design_size(*plan[1])[1] * plan[2])
        return max([v * total_b] + [_plan_peak(_plan(*p)) for p in parts])
    return -1  # leaves: the caller uses the design's own size


@lru_cache(maxsize=256)
def _execute(plan) -> BIBD:
    kind = plan[0]
    if kind == "trivial-full":
        _, v, lam = plan
        return BIBD(v, [tuple(range(v))] * lam, f"trivial: {lam} copies of the full block", lam=lam)
    if kind == "complete":
        return complete_design(plan[1], plan[2])
    if kind == "sts":
        return steiner_triple_system(plan[1])
    if kind == "geometry":
        _, fam, n, q, d = plan
        if fam == "PG":
            return projective_geometry_design(n, q, d)
        return affine_geometry_design(n, q, d)
    if kind == "paley":
        return paley_design(plan[1])
    if kind == "table":
        v, k, lam = plan[1:]
        moduli, n_fixed, base, source = DIFFERENCE_FAMILIES[(v, k, lam)]
        return difference_family_design(moduli, base, n_fixed, lam=lam, name=f"difference family ({source})")
    if kind == "radical":
        v, k, lam = plan[1:]
        p, a = prime_power_decomposition(v)
        fam = radical_difference_family(v, k, lam)
        return difference_family_design((p,) * a, fam, 0, lam=lam,
                                        name=f"radical difference family in GF({v}) (Wilson)")
    if kind == "triple-hc":
        _, v, lam = plan
        return BIBD(v, triple_system_hill_climb(v, lam, seed=0), f"{lam}-fold triple system by hill climbing "
                    "(Stinson), seed 0", lam=lam, metadata={"seed": 0})
    if kind == "fiveq":
        return five_q_design(plan[1])
    if kind == "unital":
        return hermitian_unital(plan[1])
    if kind == "mcfarland":
        return mcfarland_design(plan[1], plan[2])
    if kind == "biplane56":
        return hyperoval_biplane()
    if kind == "complement":
        return _execute(_plan(*plan[1])).complement()
    if kind == "residual":
        return _execute(_plan(*plan[1])).residual(0)
    if kind == "derived":
        return _execute(_plan(*plan[1])).derived(0)
    if kind == "union":
        return union_design(_execute(_plan(*plan[1])), _execute(_plan(*plan[2])))
    if kind == "multiple":
        D = _execute(_plan(*plan[1]))
        return union_design(*([D] * plan[2]), name=f"{plan[2]} copies of [{D.construction}]")
    raise AssertionError(f"unknown plan {plan!r}")  # pragma: no cover


def buildable_bibds(max_v: int, k_range=None, lam_range=None, *, progress: bool = True) -> list[tuple[int, int, int]]:
    """Sorted list of (v, k, lam) with v <= max_v that gcsim can build.

    Parameters
    ----------
    max_v : int
        Largest number of points.  Designs beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`
        (``v b`` incidence entries) are not built by gcsim and are not listed, so
        ``max_v`` is in effect capped at ``isqrt(MAX_DENSE_ENTRIES)`` (4096).
    k_range : iterable of int, optional
        Block sizes to consider (default: ``3 <= k <= v/2``).
    lam_range : iterable of int, optional
        Lambdas to consider (default: ``1, 2, 3``).
    progress : bool
        Show a progress bar for long listings (``max_v > 400``).

    Only incomplete designs (``k < v``) are listed.

    >>> buildable_bibds(9, lam_range=[1])
    [(7, 3, 1), (9, 3, 1)]
    """

    max_v = check_int("max_v", max_v, minimum=2)
    progress = check_bool("progress", progress)
    lams = [1, 2, 3] if lam_range is None else [check_int("lam", x, minimum=1) for x in lam_range]
    ks = None if k_range is None else sorted({check_int("k", x, minimum=2) for x in k_range})
    top = min(max_v, math.isqrt(limits.MAX_DENSE_ENTRIES))   # b >= v (Fisher): v^2 <= v b entries
    vs = range(2, top + 1)
    if progress and top > 400:
        from tqdm.auto import tqdm
        vs = tqdm(vs, desc="buildable BIBDs", leave=False)
    out = []
    for v in vs:
        for k in (ks if ks is not None else range(3, v // 2 + 1)):
            if k >= v:
                continue
            for lam in lams:
                if _fits(v, k, lam):
                    out.append((v, k, lam))
    return out


def _fits(v: int, k: int, lam: int) -> bool:
    """Whether the design and everything its plan builds stay within gcsim.limits.MAX_DENSE_ENTRIES."""

    plan = _plan(v, k, lam)
    return plan is not None and max(math.prod(_design_size(v, k, lam)), _plan_peak(plan)) <= limits.MAX_DENSE_ENTRIES


_SUGGESTION_SPAN = 600  # how far (in v) the suggestion search looks; bounds its work for large v


def _suggestions(v: int, k: int, lam: int, count: int = 6) -> list[tuple[int, int, int]]:
    """Nearby buildable parameters (within the size limits): same k and lam first, then other lam, then other k."""
    cands = []
    for dv in range(1, min(4 * v + 30, _SUGGESTION_SPAN)):
        for vv in (v - dv, v + dv):
            if vv < 2:
                continue
            for kk, ll in ((k, lam), (k, 1), (k, 2), (k, 3), (k - 1, lam), (k + 1, lam)):
                if 3 <= kk <= vv and ll >= 1 and (vv, kk, ll) not in cands and _fits(vv, kk, ll):
                    cands.append((vv, kk, ll))
        if len(cands) >= count:
            break
    for ll in range(1, lam + 4):
        if ll != lam and _fits(v, k, ll) and (v, k, ll) not in cands:
            cands.insert(0, (v, k, ll))
    return cands[:count]


def bibd(v: int, k: int, lam: int = 1, *, existence: bool = False):
    """Build a 2-(v, k, lam) design, or answer whether gcsim can.

    Parameters
    ----------
    v, k, lam : int
        Number of points, block size, pair multiplicity (``2 <= k <= v``, ``lam >= 1``).
    existence : bool
        If True return ``True`` (gcsim has a construction: the design exists),
        ``False`` (a necessary condition or known result excludes it) or
        ``None`` (unknown to gcsim).  Existence is decided from the parameters
        alone (number theory, tabulated families, a table-free cyclotomic
        check), without building anything, so it answers fast for any v; a
        ``True`` beyond the size limit below means "exists, too large to build".

    Returns
    -------
    BIBD or bool or None
        The verified design (``existence=False``).

    Raises
    ------
    InvalidArgumentError
        Bad input (non-integers, ``v < 2``, ``k < 2``, ``k > v``, ``lam < 1``,
        a non-bool ``existence``), or a design whose ``v x b`` incidence
        matrix (or an intermediate design of its construction) would exceed
        :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries; the message states the
        size and the limit.  Checked before anything is built.
    ImpossibleParametersError
        A named necessary condition fails (``.condition``).
    NotConstructibleError
        The design may exist but gcsim cannot build it; ``.suggestions`` lists
        nearby buildable (v, k, lam).

    Examples
    --------
    >>> bibd(91, 10).construction
    'PG(2,9): points vs lines'
    >>> bibd(13, 3).params
    BIBDParams(v=13, b=26, r=6, k=3, lam=1)
    >>> bibd(36, 6, 1, existence=True), bibd(51, 6, 1, existence=True)
    (False, None)
    >>> bibd(20029, 4, 1, existence=True)     # Wilson's radical family in GF(20029), nothing built
    True
    >>> bibd(20029, 4, 1)
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: (v, k, lam): a 2-(20029,4,1) design would be a dense 20,029 x 33,428,401 matrix (669,537,443,629 entries), over gcsim's limit of 16,777,216 entries (gcsim.limits.MAX_DENSE_ENTRIES)
    """
    v, k, lam = _validate(v, k, lam)
    existence = check_bool("existence", existence)
    bad = _violations(v, k, lam)
    if bad:
        if existence:
            return False
        name, msg = bad[0]
        raise ImpossibleParametersError(name, f"no 2-({v},{k},{lam}) design: {msg}")
    if not existence:
        # the result alone is too large: refuse before planning or building anything
        check_dense_size("(v, k, lam)", *_design_size(v, k, lam), f"a 2-({v},{k},{lam}) design")
    plan = _plan(v, k, lam)
    if existence:
        return True if plan is not None else None
    if plan is None:
        raise NotConstructibleError(
            f"a 2-({v},{k},{lam}) design may exist, but gcsim has no construction for it",
            _suggestions(v, k, lam))
    peak = _plan_peak(plan)
    if peak > 0:
        if peak > limits.MAX_DENSE_ENTRIES:
            raise SizeLimitError(
                "(v, k, lam)", f"gcsim builds a 2-({v},{k},{lam}) design from a larger design with {peak:,} "
                f"incidence entries, over gcsim's limit of {limits.MAX_DENSE_ENTRIES:,} entries "
                "(gcsim.limits.MAX_DENSE_ENTRIES)",
                requested=peak, limit=limits.MAX_DENSE_ENTRIES, limit_name="MAX_DENSE_ENTRIES")
    D = _build_verified(plan)
    return D  # immutable: the cached object itself


@lru_cache(maxsize=256)
def _build_verified(plan) -> BIBD:
    """Build and verify once per process (the object is immutable)."""
    D = _execute(plan)
    D.verify()
    return D
