"""Coset bipartite graphs (k, m, delta) over abelian p-groups  [reconstruction].

Definition (docs/theory.md §30; our formalization of the construction of Munim &
Ramamoorthy 2026, known to us only from its abstract -- a *reconstruction*).
Let ``G`` be an abelian group of order ``k = p**a``: the cyclic group ``Z_k``
(``group="cyclic"``) or the additive group of ``GF(p**a)``
(``group="elementary"``, isomorphic to ``(Z_p)**a``).  Group elements are the
integers ``0..k-1`` (for GF(p**a) the integer whose base-p digits are the
polynomial coefficients, as in :mod:`galois`).

* Parts: ``G`` (``N = k``).
* Workers: ``[m] x G`` (``n = m*k``); worker ``(c, y)`` is column ``c*k + y``.
* Worker ``(c, y)`` holds the parts ``{y + t : t in S_c}`` where
  ``S_0..S_{m-1}`` are *connection sets* of size ``delta``.
* ``A = [M_0 | ... | M_{m-1}]`` with the group-developed matrices
  ``M_c[x, y] = 1  iff  x - y in S_c``.

Every part has replication ``m*delta`` and every worker load ``delta``.

**Theorem (invertibility).** If ``p`` does not divide ``delta`` then every
``M_c`` is invertible over the rationals.  Consequently, with the random
diagonal encoding of docs/theory.md §5.4, ``B`` (``mk x mk``) is invertible for almost
every choice of the diagonal entries (probability 1 for any distribution with
a density).  Proofs: ``docs/theory/30_coset.md``.

The invertibility of ``M_c`` is decided here *exactly* through the character
sums: the eigenvalues of ``M_c`` are ``sum_{t in S_c} chi(t)`` over the
characters ``chi`` of ``G``; with ``chi(t) = zeta_E**phi(t)`` (``E`` the
exponent of ``G``, ``zeta_E`` a primitive ``E``-th root of unity) such a sum
``sum_j n_j zeta_E**j`` vanishes iff for every residue ``r`` modulo ``E/p``
the counts ``n_{r + i E/p}`` (``i = 0..p-1``) are all equal (a multiple of
the cyclotomic polynomial ``Phi_E(x) = sum_i x**(i E/p)``).
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_bool, check_int, check_int_array
from ..errors import CatalogueError, ImpossibleParametersError, InvalidArgumentError, NotConstructibleError
from ..limits import array_shape, check_entries
from .base import (
    CombinatorialObject,
    require,
    same_assignment,
    stored_binary,
    stored_construction,
    stored_object_metadata,
    stored_params,
    stored_seed,
)
from .fields import finite_field, prime_power, prime_power_decomposition

__all__ = [
    "GROUPS",
    "CosetBipartiteGraph",
    "CosetParams",
    "InvertibilityCertificate",
    "coset_graph",
    "interval_connection_sets",
    "certify_invertibility",
    "encoded_matrix",
    "encoded_matrix_is_invertible",
    "encoded_matrix_obstruction",
    "exact_rank",
    "integer_determinant",
]

#: Supported groups of order ``k = p**a``.
GROUPS = ("cyclic", "elementary")
#: the construction text of a graph drawn from a seed (its claim is re-derived on loading)
_SEEDED_COSET = re.compile(r".*random connection sets \(seed=(\d+)\)")

#: Default prime of the modular (Schwartz--Zippel) certificate: 2**31 - 1.
DEFAULT_PRIME = 2_147_483_647

#: Random draws per connection set before ``require_invertible`` looks further.
RANDOM_DRAWS = 64

#: Largest number of candidate sets the exhaustive invertibility search examines
#: (``C(k - 1, min(delta, k - delta) - 1)``, see :func:`_invertible_pool`).
EXHAUSTIVE_LIMIT = 200_000

#: Further random draws per connection set when the exhaustive search is too large.
RANDOM_BUDGET = 4096


# ---------------------------------------------------------------------------
# exact integer linear algebra (fraction-free Gaussian elimination)
# ---------------------------------------------------------------------------


def _bareiss(mat: np.ndarray) -> tuple[int, int]:
    """Rank and determinant of an integer matrix by Bareiss elimination.

    Fraction-free: after step r every entry is an (r+1)x(r+1) minor, so the
    divisions by the previous pivot are exact (Bareiss 1968).  The
    determinant is returned as 0 unless the matrix is square of full rank.

    Written here rather than taken from sympy because it is measured faster on the
    matrices gcsim certifies: integer 20/60/120-square matrices of rank n-1 took 0.9/16/206 ms
    here against 7/83/1130 ms with ``sympy.polys.matrices.DomainMatrix`` over ZZ (rank and
    det; no python-flint installed), and :func:`_rank_mod_prime` 0.6/5/15 ms against
    8/180/1435 ms over GF(p).  The tests check both against sympy.
    """
    a = np.array(mat, dtype=object)
    rows, cols = int(a.shape[0]), int(a.shape[1])
    prev, sign, r = 1, 1, 0
    for c in range(cols):
        if r == rows:
            break
        nz = np.flatnonzero(a[r:, c] != 0)
        if nz.size == 0:
            continue
        piv = r + int(nz[0])
        if piv != r:
            a[[r, piv]] = a[[piv, r]]
            sign = -sign
        p = a[r, c]
        if r + 1 < rows and c + 1 < cols:
            a[r + 1 :, c + 1 :] = (p * a[r + 1 :, c + 1 :] - np.multiply.outer(a[r + 1 :, c], a[r, c + 1 :])) // prev
        a[r + 1 :, c] = 0
        prev = p
        r += 1
    det = int(sign * a[rows - 1, cols - 1]) if rows == cols == r else 0
    return r, det


def _rank_mod_prime(ints: np.ndarray, prime: int = DEFAULT_PRIME) -> int:
    """Rank over GF(prime) of an integer matrix (vectorized elimination in int64).

    ``prime < 2**31`` keeps every product below ``2**62``.  The rank modulo a
    prime never exceeds the rank over Q (a minor that is nonzero mod P is a
    nonzero integer), so a full rank here is an exact certificate.
    """
    shape: tuple[int, ...] = np.shape(ints)
    a = np.array([int(x) % prime for x in np.asarray(ints, dtype=object).ravel()], dtype=np.int64).reshape(shape)
    rows, cols = shape
    r = 0
    for c in range(cols):
        if r == rows:
            break
        nz = np.flatnonzero(a[r:, c])
        if nz.size == 0:
            continue
        piv = r + int(nz[0])
        if piv != r:
            a[[r, piv]] = a[[piv, r]]
        a[r] = a[r] * pow(int(a[r, c]), prime - 2, prime) % prime
        a[r + 1 :] = (a[r + 1 :] - np.outer(a[r + 1 :, c], a[r]) % prime) % prime
        r += 1
    return r


def _exact_rank_int(ints: np.ndarray) -> int:
    """Exact rank over Q of an integer (object) matrix: fast modular path, Bareiss if needed."""
    if ints.size == 0:
        return 0
    if _rank_mod_prime(ints) == min(ints.shape):
        return min(ints.shape)
    return _bareiss(ints)[0]


def _to_fraction(x: Any) -> Fraction:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, numbers.Real):
        xf = float(x)
        if not math.isfinite(xf):
            raise ValueError("not finite")
        return Fraction(xf)  # exact: a binary float is a dyadic rational
    raise TypeError(f"not a real number: {x!r}")


def _rational_to_integer_matrix(name: str, value: Any) -> np.ndarray:
    """Exact integer matrix with the same rank (rows scaled by a common denominator)."""
    arr = np.asarray(value, dtype=object)
    if arr.ndim != 2:
        raise InvalidArgumentError(name, f"must be a 2-D matrix, got shape {arr.shape}")
    try:
        fr = [_to_fraction(x) for x in arr.ravel()]
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(name, f"entries must be finite real numbers ({exc})") from None
    den = math.lcm(*(f.denominator for f in fr)) if fr else 1
    ints = np.array([int(f * den) for f in fr], dtype=object).reshape(arr.shape)
    return ints


def exact_rank(matrix: Any) -> int:
    """Exact rank over the rationals of a matrix of integers, fractions or floats.

    Floats are converted exactly (``fractions.Fraction(x)``) and the matrix is
    scaled to integers, so no rounding happens anywhere.  A full rank modulo
    the prime ``2**31 - 1`` (fast, vectorized) already proves full rank over Q;
    otherwise the rank is computed by fraction-free (Bareiss) elimination on
    Python integers.

    Examples
    --------
    >>> exact_rank([[1, 2], [2, 4]]), exact_rank([[0.1, 0.2], [0.3, 0.6000000000000001]])
    (1, 2)
    """
    return _exact_rank_int(_rational_to_integer_matrix("matrix", matrix))


def integer_determinant(matrix: Any) -> int:
    """Exact determinant of a square integer matrix (Bareiss elimination).

    >>> integer_determinant([[2, 1], [1, 3]])
    5
    """
    arr = np.asarray(matrix)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InvalidArgumentError("matrix", f"must be square, got shape {arr.shape}")
    if arr.size == 0:
        return 1
    obj = np.asarray(matrix, dtype=object)
    if not all(isinstance(x, (numbers.Integral,)) and not isinstance(x, (bool, np.bool_)) for x in obj.ravel()):
        raise InvalidArgumentError("matrix", "must contain integers only")
    return _bareiss(np.vectorize(int, otypes=[object])(obj))[1]


# ---------------------------------------------------------------------------
# groups
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    k: int
    p: int
    a: int
    kind: str
    add: np.ndarray  # add[x, y] = x + y
    neg: np.ndarray  # neg[x] = -x
    phi: np.ndarray  # phi[chi, t] in Z_E: chi(t) = zeta_E ** phi[chi, t]
    exponent: int  # E

    def sub(self) -> np.ndarray:
        """sub[x, y] = x - y."""
        return self.add[:, self.neg]


@lru_cache(maxsize=32)
def _group(k: int, kind: str) -> _Group:
    p, a = prime_power(k)
    x = np.arange(k, dtype=np.int64)
    if kind == "cyclic":
        add = (x[:, None] + x[None, :]) % k
        neg = (-x) % k
        phi = (x[:, None] * x[None, :]) % k  # chi_j(t) = zeta_k^(j t)
        exponent = k
    else:
        # galois labels a + b x + ... of GF(p^a) by the integer a + b p + ...;
        # field addition is coefficientwise mod p, so it is computed on the
        # base-p digits directly (same table as finite_field(k), see tests;
        # avoids the seconds-long JIT set-up of an extension field).
        weights = p ** np.arange(a, dtype=np.int64)
        digits = (x[:, None] // weights[None, :]) % p
        add = ((digits[:, None, :] + digits[None, :, :]) % p) @ weights
        neg = ((-digits) % p) @ weights
        phi = (digits @ digits.T) % p  # chi_u(t) = zeta_p^(<u, t>)
        exponent = p
    for arr in (add, neg, phi):
        arr.setflags(write=False)
    return _Group(k, p, a, kind, add, neg, phi, exponent)


# ---------------------------------------------------------------------------
# the graph
# ---------------------------------------------------------------------------


class CosetParams(NamedTuple):
    """Parameters of a coset bipartite graph: group order ``k = p**a``, ``m`` cosets, set size ``delta``."""

    k: int
    m: int
    delta: int


class CosetBipartiteGraph(CombinatorialObject):
    """Coset bipartite graph (k, m, delta): parts ``G``, workers ``[m] x G``.

    Attributes
    ----------
    k, m, delta : int
        Group order ``k = p**a``, number of cosets, connection-set size.
    p, a : int
        ``k = p**a``.
    group : str
        ``"cyclic"`` or ``"elementary"``.
    connection_sets : tuple of tuple of int
        ``S_0..S_{m-1}`` (sorted integer labels of group elements).

    Examples
    --------
    >>> g = coset_graph(9, 2, 2, connection_sets=[[0, 1], [0, 3]])
    >>> g.assignment.shape, g.verify(), bool(g.blocks_invertible().all())
    ((9, 18), True, True)
    """

    kind = "coset"
    Params = CosetParams
    k: int
    m: int
    delta: int
    p: int
    a: int
    group: str
    connection_sets: tuple[tuple[int, ...], ...]
    _grp: _Group

    def __init__(
        self,
        k: int,
        m: int,
        delta: int,
        group: str,
        connection_sets: Sequence[Iterable[int]],
        construction: str,
        metadata: Mapping[str, Any] | None = None,
    ):
        grp = _group(k, group)
        sets = check_int_array("connection_sets", connection_sets, what="the connection sets")
        if sets.size != int(m) * int(delta):
            raise InvalidArgumentError(
                "connection_sets", f"must hold m x delta = {m} x {delta} integers, got {sets.shape}"
            )
        sets = sets.reshape(m, delta)
        # worker (c, y) holds y + S_c: rows add[y, t] of column c*k + y
        cols = np.arange(m)[:, None, None] * k + np.arange(k)[None, :, None]
        rows = grp.add[np.arange(k)[None, :, None], sets[:, None, :]]
        A = np.zeros((k, m * k), dtype=np.int64)
        A[rows.ravel(), np.broadcast_to(cols, rows.shape).ravel()] = 1
        super().__init__(A, (k, m, delta), construction, metadata)
        for name, value in (
            ("k", int(k)),
            ("m", int(m)),
            ("delta", int(delta)),
            ("p", grp.p),
            ("a", grp.a),
            ("group", group),
            ("connection_sets", tuple(tuple(int(t) for t in s) for s in sets)),
            ("_grp", grp),
        ):
            self._set(name, value)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The assignment (int8, 0/1) and the connection sets (int64, ``m x delta``)."""
        return {
            "assignment": self.assignment.astype(np.int8),
            "connection_sets": np.asarray(self.connection_sets, dtype=np.int64).reshape(self.m, self.delta),
        }

    def bundle_metadata(self) -> dict[str, Any]:
        """The common entries and the ``group``."""
        return {**super().bundle_metadata(), "group": self.group}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> CosetBipartiteGraph:
        """Rebuild the graph from its connection sets, re-deriving a recorded seed or interval rule.

        The rebuilt assignment must equal the stored one; a graph built from a seed must be
        exactly what :func:`coset_graph` builds from that seed, and one built from interval
        connection sets must hold the intervals.

        Examples
        --------
        >>> g = coset_graph(7, 2, 3, seed=1)
        >>> CosetBipartiteGraph.from_arrays(g.to_arrays(), g.bundle_metadata()).connection_sets == g.connection_sets
        True
        """
        k, m, delta = stored_params(metadata, 3, "coset")
        A = stored_binary(arrays, "assignment", "coset", (k, m * k))
        group = metadata.get("group")
        if group not in GROUPS:
            raise CatalogueError(f"stored coset group must be one of {GROUPS}, got {group!r}")
        if "connection_sets" not in arrays:
            raise CatalogueError("stored coset lacks the array 'connection_sets'")
        sets = np.asarray(arrays["connection_sets"])
        if sets.dtype.kind not in "iu" or sets.shape != (m, delta):
            raise CatalogueError(
                f"stored coset connection_sets must be integers of shape ({m}, {delta}), got "
                f"dtype {sets.dtype} shape {sets.shape}"
            )
        if sets.size and (sets.min() < 0 or sets.max() >= k):
            raise CatalogueError(f"stored coset connection sets must lie in [0, {k})")
        if k < 2 or prime_power_decomposition(k) is None:
            raise CatalogueError(f"stored coset group order k = {k} is not a prime power")
        how = stored_construction(metadata)
        obj = cls(k, m, delta, group, sets.astype(np.int64).tolist(), how, metadata=stored_object_metadata(metadata))
        same_assignment(obj, A, "coset")
        # declared invariants: the recorded seed (or the interval rule) must give exactly these sets
        stored = [list(s) for s in obj.connection_sets]
        seeded = _SEEDED_COSET.fullmatch(how)
        if seeded:
            seed = int(seeded.group(1))
            claimed = stored_seed(metadata, "coset")
            if claimed is not None and claimed != seed:
                raise CatalogueError(f"stored coset seed {claimed} differs from the construction's seed {seed}")
            options: list[list[list[int]]] = []
            for invertible in (False, True):  # require_invertible changes the redraws; the text does not say
                try:
                    options.append(
                        [
                            list(s)
                            for s in coset_graph(
                                k, m, delta, group, seed=seed, require_invertible=invertible
                            ).connection_sets
                        ]
                    )
                except Exception:  # noqa: BLE001 - a claim that cannot be rebuilt is simply not matched
                    continue
                if options[-1] == stored:
                    break
            if stored not in options:
                raise CatalogueError(
                    f"seed claim does not hold: coset_graph({k}, {m}, {delta}, {group!r}, "
                    f"seed={seed}) builds connection sets "
                    f"{options[0] if options else '(none)'}, the file stores {stored}"
                )
        elif how.endswith("interval connection sets"):
            if stored != [sorted(s) for s in interval_connection_sets(k, m, delta)]:
                raise CatalogueError(f"stored coset claims interval connection sets but stores {stored}")
        return obj

    @property
    def blocks(self) -> list[np.ndarray]:
        """The ``m`` group-developed blocks ``M_c`` (k x k, read-only views)."""
        k = self.k
        return [self.assignment[:, c * k : (c + 1) * k] for c in range(self.m)]

    def worker_index(self, c: int, y: int) -> int:
        """Column of worker ``(c, y)``: ``c*k + y``."""
        c = check_int("c", c, minimum=0, maximum=self.m - 1)
        y = check_int("y", y, minimum=0, maximum=self.k - 1)
        return c * self.k + y

    def block_character_counts(self) -> np.ndarray:
        """Integer counts ``n[c, chi, j] = #{t in S_c : phi_chi(t) = j}``, j in Z_E.

        The eigenvalue of ``M_c`` belonging to the character ``chi`` is
        ``sum_j n[c, chi, j] * zeta_E**(-j)`` (E = exponent of G).
        """
        g = self._grp
        sets = np.asarray(self.connection_sets, dtype=np.int64)  # (m, delta)
        vals = g.phi[:, sets]  # (k, m, delta)
        idx = (np.arange(self.m)[None, :, None] * self.k + np.arange(self.k)[:, None, None]) * g.exponent + vals
        counts = np.bincount(idx.ravel(), minlength=self.m * self.k * g.exponent)
        return counts.reshape(self.m, self.k, g.exponent)

    def vanishing_characters(self) -> np.ndarray:
        """Boolean ``(m, k)``: True where the character sum of ``S_c`` is exactly 0.

        Exact test (no floating point): ``sum_j n_j zeta_E**j = 0`` iff the
        counts are constant on each residue class modulo ``E/p`` (see module
        docstring and docs/theory/30_coset.md, Lemma 2).
        """
        g = self._grp
        h = self.block_character_counts().reshape(self.m, self.k, g.p, g.exponent // g.p)
        return np.all(h == h[:, :, :1, :], axis=(2, 3))

    def blocks_invertible(self) -> np.ndarray:
        """Boolean array of length ``m``: ``M_c`` invertible over Q (exact)."""
        return np.asarray(~self.vanishing_characters().any(axis=1))

    def block_eigenvalues(self) -> np.ndarray:
        """Complex ``(m, k)`` eigenvalues of the blocks (floating point, for plots).

        Row ``c`` lists ``sum_{t in S_c} conj(chi(t))`` over the characters chi.
        """
        g = self._grp
        sets = np.asarray(self.connection_sets, dtype=np.int64)
        return np.exp(-2j * np.pi * g.phi[:, sets] / g.exponent).sum(axis=2).T

    def verify(self) -> bool:
        """Check the defining identities exactly (integer arithmetic).

        Each block equals the group-developed matrix of its connection set
        (``M_c[x, y] = 1 iff x - y in S_c``, recomputed from the subtraction
        table), block row and column sums equal ``delta``, replication
        ``m*delta`` and load ``delta``.
        """
        self._check_binary()
        k, m, d = self.k, self.m, self.delta
        A = self.assignment
        require(A.shape == (k, m * k), f"assignment must be {k} x {m * k}, got {A.shape}")
        sub = self._grp.sub()
        for c, S in enumerate(self.connection_sets):
            require(len(S) == d and len(set(S)) == d, f"S_{c} must have {d} distinct elements")
            require(all(0 <= t < k for t in S), f"S_{c} must lie in the group [0, {k})")
            expected = np.isin(sub, np.asarray(S)).astype(np.int64)
            require(np.array_equal(A[:, c * k : (c + 1) * k], expected), f"block M_{c} is not developed from S_{c}")
            blk = A[:, c * k : (c + 1) * k]
            require(
                bool(np.all(blk.sum(axis=0) == d) and np.all(blk.sum(axis=1) == d)),
                f"block M_{c} must have row and column sums {d}",
            )
        require(bool(np.all(self.replication == m * d)), f"every part must have replication {m * d}")
        require(bool(np.all(self.loads == d)), f"every worker must have load {d}")
        return True


def interval_connection_sets(k: int, m: int, delta: int) -> list[list[int]]:
    """The interval sets ``S_c = {c*delta, ..., c*delta + delta - 1} (mod k)``.

    Integer labels: in ``Z_k`` these are intervals; for ``group="elementary"``
    the same integers label field elements.  All ``S_c`` are translates of
    ``S_0`` in ``Z_k``, so worker ``(c, y)`` then holds the same parts as
    worker ``(0, y + c*delta)`` -- use this option for transparent examples, the
    seeded default for diverse workers.  In ``Z_k`` an interval's blocks are
    invertible iff ``gcd(delta, k) = 1`` (i.e. ``p`` does not divide ``delta``, for
    ``delta < k``), so intervals show that the theorem's hypothesis is sharp.

    >>> interval_connection_sets(9, 2, 3)
    [[0, 1, 2], [3, 4, 5]]
    """
    k = check_int("k", k, minimum=1)
    m = check_int("m", m, minimum=1)
    delta = check_int("delta", delta, minimum=1, maximum=k)
    return [sorted(((c * delta + np.arange(delta)) % k).tolist()) for c in range(m)]


def _is_translate(grp: _Group, S: np.ndarray, earlier: list[np.ndarray]) -> bool:
    if not earlier:
        return False
    shifts = np.sort(grp.add[S][:, :].T, axis=1)  # row g: sorted S + g
    for T in earlier:
        if np.any(np.all(shifts == T[None, :], axis=1)):
            return True
    return False


def _invertible_batch(grp: _Group, sets: np.ndarray) -> np.ndarray:
    """Vectorized :func:`_set_invertible` for sets ``(C, delta)``: True where no character sum vanishes."""
    C, delta = sets.shape
    out = np.empty(C, dtype=bool)
    chunk = max(1, (1 << 22) // (grp.k * max(grp.exponent, delta)))  # bounds the (chunk, k, E) counts
    for a in range(0, C, chunk):
        part = sets[a : a + chunk]
        c = part.shape[0]
        vals = grp.phi[:, part]  # (k, c, delta)
        idx = (np.arange(c)[None, :, None] * grp.k + np.arange(grp.k)[:, None, None]) * grp.exponent + vals
        counts = np.bincount(idx.ravel(), minlength=c * grp.k * grp.exponent)
        h = counts.reshape(c, grp.k, grp.p, grp.exponent // grp.p)
        out[a : a + c] = ~np.all(h == h[:, :, :1, :], axis=(2, 3)).any(axis=1)
    return out


def _set_invertible(grp: _Group, S: np.ndarray) -> bool:
    """``M_S`` invertible over Q: no character sum of ``S`` vanishes.

    Exact count test (``docs/theory/30_coset.md``, Lemmas 2 and 4).
    """
    return bool(_invertible_batch(grp, np.asarray(S, dtype=np.int64)[None])[0])


def _candidates(k: int, delta: int) -> int:
    """Number of sets :func:`_invertible_pool` examines: ``C(k - 1, e - 1)``, ``e = min(delta, k - delta)``."""
    e = min(delta, k - delta)
    return math.comb(k - 1, e - 1) if e > 0 else 0


def _invertible_pool(grp: _Group, delta: int) -> np.ndarray | None:
    """Every invertible ``delta``-set up to translation, or None when that search is too large.

    A translate ``S + g`` multiplies each character sum by ``chi(g) != 0`` and the
    complement ``G \\ S`` has the character sums ``-chi(S)`` (``chi != 1``) and ``k - delta``
    (``chi = 1``), so for ``0 < delta < k`` an invertible ``delta``-set exists iff an
    invertible set of size ``e = min(delta, k - delta)`` containing ``0`` does: the
    ``C(k - 1, e - 1)`` candidates are enumerated exactly when at most
    :data:`EXHAUSTIVE_LIMIT`.  Returns the invertible ``delta``-sets obtained
    (``(count, delta)``, possibly empty = proof that none exists).
    """
    k = grp.k
    e = min(delta, k - delta)
    if e == 0:  # S = G: every non-trivial character sums to 0 over the group (k >= 2)
        return np.zeros((0, delta), dtype=np.int64)
    if _candidates(k, delta) > EXHAUSTIVE_LIMIT:
        return None
    combos = np.array(list(itertools.combinations(range(1, k), e - 1)), dtype=np.int64).reshape(-1, e - 1)
    cand = np.concatenate([np.zeros((combos.shape[0], 1), dtype=np.int64), combos], axis=1)
    good = cand[_invertible_batch(grp, cand)]
    if e == delta:
        return good
    universe = np.arange(k)
    return np.array([np.setdiff1d(universe, T) for T in good], dtype=np.int64).reshape(-1, delta)


def _random_connection_sets(
    grp: _Group, m: int, delta: int, rng: np.random.Generator, require_invertible: bool, seed: int
) -> list[np.ndarray]:
    """``m`` random ``delta``-sets, pairwise not translates when possible (and invertible if required).

    With ``require_invertible``: :data:`RANDOM_DRAWS` random draws per set; if
    none is invertible, the exhaustive search of :func:`_invertible_pool` decides
    (an empty result proves that no invertible set exists:
    :class:`~gcsim.errors.ImpossibleParametersError`); when that search is too
    large, :data:`RANDOM_BUDGET` further draws, and then
    :class:`~gcsim.errors.NotConstructibleError` (a search that gave up proves
    nothing).
    """
    sets: list[np.ndarray] = []
    pool: np.ndarray | None = None
    for _ in range(m):
        fallback: np.ndarray | None = None
        S: np.ndarray | None
        if pool is None:
            for _attempt in range(RANDOM_DRAWS):
                S = np.sort(rng.choice(grp.k, size=delta, replace=False)).astype(np.int64)
                if require_invertible and not _set_invertible(grp, S):
                    continue
                if fallback is None:
                    fallback = S
                if not _is_translate(grp, S, sets):
                    break
            else:
                S = fallback
        else:
            S = None
        if S is None:
            pool = _invertible_pool(grp, delta) if pool is None else pool
            S = _draw_invertible(grp, delta, rng, sets, pool, seed)
        sets.append(S)
    return sets


def _draw_invertible(
    grp: _Group, delta: int, rng: np.random.Generator, sets: list[np.ndarray], pool: np.ndarray | None, seed: int
) -> np.ndarray:
    """An invertible set after the first random draws failed: from the exhaustive pool, or more draws."""
    k, p = grp.k, grp.p
    where = f"the {grp.kind} group of order k = {k} = {p}^{grp.a}"
    if pool is not None:
        if pool.shape[0] == 0:
            raise ImpossibleParametersError(
                "an invertible connection set exists",
                f"no delta = {delta} element subset of {where} has all character sums non-zero: an exhaustive "
                f"search over all {_candidates(k, delta)} candidates up to translation "
                f"and complement found none, so every block M_c would be singular (p = {p} divides "
                f"delta = {delta}, so the invertibility theorem does not apply). Use delta not divisible by {p}, "
                f"or the other group",
            )
        fallback = None
        for _attempt in range(RANDOM_DRAWS):  # a random member of the pool, shifted by a random element
            S = np.sort(grp.add[pool[rng.integers(pool.shape[0])], rng.integers(k)]).astype(np.int64)
            fallback = S if fallback is None else fallback
            if not _is_translate(grp, S, sets):
                return S
        assert fallback is not None  # the first of the RANDOM_DRAWS >= 1 draws set it
        return fallback
    batch = 256
    for _start in range(0, RANDOM_BUDGET, batch):
        cand = np.sort(np.argsort(rng.random((batch, k)), axis=1)[:, :delta], axis=1).astype(np.int64)
        good = cand[_invertible_batch(grp, cand)]
        if good.shape[0]:
            fresh = [S for S in good if not _is_translate(grp, S, sets)]
            return fresh[0] if fresh else good[0]
    raise NotConstructibleError(
        f"coset_graph(require_invertible=True): no invertible connection set of size delta = {delta} in "
        f"{RANDOM_DRAWS + RANDOM_BUDGET} random draws for {where} (seed = {seed}). p = {p} divides delta, so "
        f"invertibility is not guaranteed, but invertible sets may exist: the search gave up, it proved "
        f"nothing (an exhaustive search would examine {_candidates(k, delta)} sets, "
        f"more than EXHAUSTIVE_LIMIT = {EXHAUSTIVE_LIMIT}). Try another seed, the other group, explicit "
        f"connection_sets, or delta not divisible by {p}"
    )


def coset_graph(
    k: int,
    m: int,
    delta: int,
    group: str = "cyclic",
    *,
    connection_sets: Sequence[Sequence[int]] | str | None = None,
    require_invertible: bool = False,
    seed: int = 0,
) -> CosetBipartiteGraph:
    """Build the coset bipartite graph (k, m, delta)  [reconstruction, docs/theory.md §30].

    Parameters
    ----------
    k : int
        Group order, a prime power ``p**a`` (``k >= 2``).
    m : int
        Number of cosets / blocks (``m >= 1``); ``n = m*k`` workers.
    delta : int
        Size of every connection set, ``1 <= delta <= k``; the load of a worker.
    group : {"cyclic", "elementary"}
        ``Z_k`` or the additive group of ``GF(p**a)``.
    connection_sets : sequence of m sequences of delta ints, "intervals" or None
        ``S_0..S_{m-1}`` as integer labels in ``[0, k)``.  ``None`` (default):
        each ``S_c`` is a uniformly random ``delta``-subset drawn with
        ``numpy.random.default_rng(seed)``, redrawn (up to 64 times) when it is
        a translate of an earlier set (a translate only relabels workers inside
        a coset, so it would duplicate workers across cosets).
        ``"intervals"``: :func:`interval_connection_sets`.
    require_invertible : bool
        Demand that every block ``M_c`` be invertible (checked exactly).  When
        ``p`` does not divide ``delta`` the theorem guarantees it.  Otherwise
        invertibility is *not* guaranteed: default sets are drawn at random
        (:data:`RANDOM_DRAWS` per set) and, if none is invertible, found by an
        exhaustive search up to translation and complement when that examines
        at most :data:`EXHAUSTIVE_LIMIT` sets, else by :data:`RANDOM_BUDGET`
        more draws.  Explicit sets (and ``"intervals"``) are checked.
    seed : int
        Seed of the default connection sets.

    Returns
    -------
    CosetBipartiteGraph

    Raises
    ------
    InvalidArgumentError
        ``k`` not a prime power, bad ``m``/``delta``/``group``/sets.
        With ``require_invertible``, explicit (or interval) connection sets with a
        singular block (argument ``"connection_sets"``).
    ImpossibleParametersError
        ``delta > k`` (condition ``"delta <= k"``) or, with
        ``require_invertible``, when the exhaustive search *proves* that no
        ``delta``-subset of the group gives an invertible block (condition
        ``"an invertible connection set exists"``; e.g. ``delta = k``, or
        ``(k, delta) = (9, 3)`` in ``(Z_3)^2``).
    NotConstructibleError
        With ``require_invertible``, when the random search gave up and the
        exhaustive search is too large: invertible sets may exist; the message
        says how many draws were made and what to change (seed, group, sets).

    Examples
    --------
    Named instance (27, 2, 5): ``3`` does not divide ``5``, so every block is invertible.

    >>> g = coset_graph(27, 2, 5)
    >>> g.num_parts, g.num_workers, set(g.replication.tolist()), set(g.loads.tolist())
    (27, 54, {10}, {5})
    >>> bool(g.blocks_invertible().all())
    True
    >>> coset_graph(4, 1, 2, connection_sets=[[0, 2]]).blocks_invertible().tolist()
    [False]
    """
    k = check_int("k", k, minimum=2)
    pa = prime_power_decomposition(k)
    if pa is None:
        raise InvalidArgumentError("k", f"must be a prime power p**a (order of an abelian p-group), got {k}")
    p, a = pa
    m = check_int("m", m, minimum=1)
    delta = check_int("delta", delta, minimum=1)
    if delta > k:
        raise ImpossibleParametersError(
            "delta <= k",
            f"a connection set of delta = {delta} distinct elements does not fit in a group of order k = {k}",
        )
    if not isinstance(group, str) or group not in GROUPS:
        raise InvalidArgumentError("group", f"must be one of {GROUPS}, got {group!r}")
    require_invertible = check_bool("require_invertible", require_invertible)
    seed = check_int("seed", seed, minimum=0)
    # before the k x k group tables and the k x mk incidence are allocated (the advisor asks for
    # k = 14,401 at 100,807 workers: 10.8 GiB)
    check_entries("k", (k, m * k), "the k x mk incidence of the coset graph")
    grp = _group(k, group)

    if connection_sets is None:
        sets = _random_connection_sets(grp, m, delta, np.random.default_rng(seed), bool(require_invertible), seed)
        how = f"random connection sets (seed={seed})"
    elif isinstance(connection_sets, str):
        if connection_sets != "intervals":
            raise InvalidArgumentError("connection_sets", f"string option must be 'intervals', got {connection_sets!r}")
        sets = [np.asarray(s, dtype=np.int64) for s in interval_connection_sets(k, m, delta)]
        how = "interval connection sets"
    else:
        sets = _check_sets(connection_sets, k, m, delta)
        how = "given connection sets"
    if require_invertible:
        bad = [c for c, S in enumerate(sets) if not _set_invertible(grp, S)]
        if bad:
            # these sets fail; other sets of the same size may be invertible, so the parameters are not impossible
            raise InvalidArgumentError(
                "connection_sets",
                f"with require_invertible=True every block must be invertible, but M_c for c in {bad} is "
                f"singular (a character sum of S_c vanishes). k = {k} = {p}^{a} and p = {p} divides "
                f"delta = {delta}, so the invertibility theorem (docs/theory.md §30) does not apply to these "
                "sets; pass "
                f"other sets, or connection_sets=None to let coset_graph search for invertible ones",
            )
    construction = f"coset graph over {'Z_' + str(k) if group == 'cyclic' else 'GF(' + str(k) + ')+'}, {how}"
    return CosetBipartiteGraph(
        k,
        m,
        delta,
        group,
        [np.sort(S) for S in sets],
        construction,
        metadata={"seed": seed if connection_sets is None else None},
    )


def _check_sets(connection_sets: Any, k: int, m: int, delta: int) -> list[np.ndarray]:
    check_entries("connection_sets", array_shape(connection_sets), "the connection sets")
    if hasattr(connection_sets, "__len__") and len(connection_sets) != m:
        raise InvalidArgumentError("connection_sets", f"must contain m = {m} sets, got {len(connection_sets)}")
    try:
        seq = list(connection_sets)
    except TypeError:
        raise InvalidArgumentError("connection_sets", "must be a sequence of m sequences of integers") from None
    if len(seq) != m:
        raise InvalidArgumentError("connection_sets", f"must contain m = {m} sets, got {len(seq)}")
    out = []
    for c, S in enumerate(seq):
        if hasattr(S, "__len__") and len(S) != delta:
            raise InvalidArgumentError("connection_sets", f"set {c} must have delta = {delta} distinct elements")
        try:
            vals = [check_int(f"connection_sets[{c}]", t) for t in S]
        except TypeError:
            raise InvalidArgumentError("connection_sets", f"set {c} must be a sequence of integers") from None
        if len(vals) != delta or len(set(vals)) != delta:
            raise InvalidArgumentError(
                "connection_sets", f"set {c} must have delta = {delta} distinct elements, got {vals}"
            )
        if any(t < 0 or t >= k for t in vals):
            raise InvalidArgumentError("connection_sets", f"set {c} has elements outside the group [0, {k}): {vals}")
        out.append(np.sort(np.asarray(vals, dtype=np.int64)))
    return out


# ---------------------------------------------------------------------------
# the random-diagonal encoded matrix B (docs/theory.md §5.4) and exact certificates
# ---------------------------------------------------------------------------


def _check_graph(graph: Any) -> CosetBipartiteGraph:
    if not isinstance(graph, CosetBipartiteGraph):
        raise InvalidArgumentError("graph", f"must be a CosetBipartiteGraph, got {type(graph).__name__}")
    return graph


def encoded_matrix(graph: CosetBipartiteGraph, diagonals: Any) -> np.ndarray:
    """Floating-point ``B`` (mk x mk): block row ``l`` is ``A @ diag(diagonals[l])``.

    >>> g = coset_graph(3, 2, 1, connection_sets=[[0], [1]])
    >>> encoded_matrix(g, np.ones((2, 6))).shape
    (6, 6)
    """
    graph = _check_graph(graph)
    d = np.asarray(diagonals, dtype=float)
    if d.shape != (graph.m, graph.num_workers) or not np.all(np.isfinite(d)):
        raise InvalidArgumentError("diagonals", f"must be a finite array of shape ({graph.m}, {graph.num_workers})")
    A = graph.assignment.astype(float)
    return (A[None, :, :] * d[:, None, :]).reshape(graph.m * graph.k, graph.num_workers)


def encoded_matrix_is_invertible(graph: CosetBipartiteGraph, diagonals: Any) -> bool:
    """Exact test over Q that ``B = [A diag(d_0); ...; A diag(d_{m-1})]`` is invertible.

    Parameters
    ----------
    graph : CosetBipartiteGraph
    diagonals : array-like, shape (m, n)
        Row ``l`` is ``d_l`` (docs/theory.md §5.4).  Integers, ``fractions.Fraction`` or
        floats; floats are taken as the exact binary rationals they are.

    Examples
    --------
    Equal diagonals in both block rows make ``B`` singular (rank <= k):

    >>> g = coset_graph(3, 2, 1, connection_sets=[[0], [1]])
    >>> encoded_matrix_is_invertible(g, [[1, 1, 1, 1, 1, 1]] * 2)
    False
    >>> encoded_matrix_is_invertible(g, [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
    True
    """
    graph = _check_graph(graph)
    m, n, k = graph.m, graph.num_workers, graph.k
    d = _rational_to_integer_matrix("diagonals", diagonals)
    if d.shape != (m, n):
        raise InvalidArgumentError("diagonals", f"must have shape ({m}, {n}), got {d.shape}")
    A = graph.assignment.astype(object)
    B = (A[None, :, :] * d[:, None, :]).reshape(m * k, n)
    return _exact_rank_int(B) == n


def encoded_matrix_obstruction(graph: CosetBipartiteGraph, diagonals: Any) -> np.ndarray | None:
    """A set of workers that forces ``B`` to be singular, or None.

    Columns ``j`` whose diagonal vectors ``(d_{0,j}, ..., d_{m-1,j})`` are
    proportional form a class ``C``; the columns of ``B`` in ``C`` are
    ``w (x) A[:, j]`` scaled, so ``rank B[:, C] <= rank A[:, C]``.  If some class
    has ``rank A[:, C] < |C|`` (in particular ``|C| > k``), ``B`` is singular;
    this returns the first such class (sorted worker indices), checked exactly.
    With Rademacher (+-1) entries there are only ``2**(m-1)`` classes, so for
    ``m = 2`` some class has more than ``k`` columns unless the sign vector
    ``d_0 * d_1`` is exactly balanced (docs/theory/30_coset.md, Proposition 5).
    For ``m = 2`` "no obstruction" is also sufficient for invertibility when
    the entries are +-1.

    >>> g = coset_graph(3, 2, 1, connection_sets=[[0], [1]])
    >>> encoded_matrix_obstruction(g, [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, -1, -1]]).tolist()
    [0, 1, 2, 3]
    >>> encoded_matrix_obstruction(g, [[1, 1, 1, 1, 1, 1], [1, 1, -1, -1, 1, -1]]) is None
    True
    """
    graph = _check_graph(graph)
    m, n = graph.m, graph.num_workers
    d = _rational_to_integer_matrix("diagonals", diagonals)
    if d.shape != (m, n):
        raise InvalidArgumentError("diagonals", f"must have shape ({m}, {n}), got {d.shape}")
    # canonical representative of each column's direction: divide by the gcd, fix the sign
    keys = []
    for j in range(n):
        col = [int(x) for x in d[:, j]]
        gcd = math.gcd(*col)
        if gcd == 0:
            return np.array([j])  # a zero column: B is singular
        col = [x // gcd for x in col]
        lead = next(x for x in col if x != 0)
        keys.append(tuple(x if lead > 0 else -x for x in col))
    classes: dict[tuple, list[int]] = {}
    for j, key in enumerate(keys):
        classes.setdefault(key, []).append(j)
    A = graph.assignment
    for members in classes.values():
        if len(members) > 1 and _exact_rank_int(A[:, members].astype(object)) < len(members):
            return np.array(members)
    return None


@dataclass(frozen=True)
class InvertibilityCertificate:
    """Exact certificate that ``det B`` is a nonzero polynomial in the diagonals.

    Attributes
    ----------
    method : str
        ``"rational"`` (exact arithmetic over Q) or ``"modular"`` (over GF(P)).
    certified : bool
        True: ``det B`` (entries ``d_{l,j}`` as indeterminates) is proven to be
        a nonzero polynomial -- ``B`` is invertible for almost every diagonal
        choice, with probability 1 under any distribution with a density
        (e.g. RD(eps), eps > 0).  A positive verdict is a proof in both methods:
        a nonzero value (over Q, or mod P at an integer point) of the integer
        polynomial ``det B`` shows it is not the zero polynomial.
    rank : int
        Largest rank of ``B`` seen at the evaluation points (over ``field``).
    size : int
        ``m*k``.
    field : str
        ``"Q"`` or ``"GF(P)"``.
    points : int
        Evaluation points used (stops at the first full-rank point).
    degree : int
        Total degree ``m*k`` of ``det B`` (multilinear in the ``d_{l,j}``).
    sample_size : int
        Size of the set the random coordinates were drawn from.
    error_probability : float
        Bound on the probability that the verdict is wrong: 0 when
        certified; otherwise ``(degree / sample_size) ** random_points``
        (Schwartz--Zippel: a nonzero polynomial vanishes at a uniform point of
        ``S**n`` with probability at most ``degree/|S|``); for the modular
        method this assumes ``det B`` is nonzero mod P.
    block_determinants : tuple
        ``det M_c`` exactly (rational) or ``det M_c mod P`` (modular).
    blocks_invertible : tuple
        ``M_c`` invertible: True/False (rational); True or None when
        ``det M_c = 0 mod P`` (modular: inconclusive).
    seed : int
    """

    method: str
    certified: bool
    rank: int
    size: int
    field: str
    points: int
    degree: int
    sample_size: int
    error_probability: float
    block_determinants: tuple
    blocks_invertible: tuple
    seed: int


def certify_invertibility(
    graph: CosetBipartiteGraph,
    method: str = "rational",
    *,
    points: int = 3,
    seed: int = 0,
    prime: int = DEFAULT_PRIME,
    sample_bound: int = 2**20,
) -> InvertibilityCertificate:
    """Certify without floating point that the random-diagonal ``B`` is generically invertible.

    ``B(d)`` has block ``(l, c)`` equal to ``M_c diag(d_{l,c})``; ``det B`` is a
    polynomial of degree ``m*k`` in the ``m*n`` entries ``d``.

    * ``method="rational"``: exact integer determinants ``det M_c`` (Bareiss)
      and exact rank over Q (:func:`exact_rank`) of ``B`` first at the block-indicator point
      ``d_{l,j} = [j in coset l]`` (where ``B`` is ``diag(M_0, ..., M_{m-1})``,
      so ``det B = prod det M_c``), then at up to ``points`` random integer
      points with coordinates uniform in ``[-sample_bound, sample_bound]``.
    * ``method="modular"``: rank over ``GF(prime)`` (galois) of ``B`` at up to
      ``points`` uniformly random points of ``GF(prime)**(m n)``, and
      ``det M_c mod prime``.  Schwartz--Zippel: if ``det B`` is nonzero mod P,
      one random point misses it with probability at most ``m k / P``.

    Examples
    --------
    >>> cert = certify_invertibility(coset_graph(9, 2, 2, connection_sets=[[0, 1], [0, 3]]))
    >>> cert.certified, cert.rank, cert.block_determinants, cert.error_probability
    (True, 18, (2, 8), 0.0)
    """
    graph = _check_graph(graph)
    if method not in ("rational", "modular"):
        raise InvalidArgumentError("method", f"must be 'rational' or 'modular', got {method!r}")
    points = check_int("points", points, minimum=0 if method == "rational" else 1)
    seed = check_int("seed", seed, minimum=0)
    m, k, n = graph.m, graph.k, graph.num_workers
    size = m * k
    rng = np.random.default_rng(seed)
    blocks = graph.blocks
    A = graph.assignment
    if method == "rational":
        sample_bound = check_int("sample_bound", sample_bound, minimum=1)
        dets = tuple(_bareiss(M.astype(object))[1] for M in blocks)
        binv: tuple[bool | None, ...] = tuple(dt != 0 for dt in dets)
        # block-indicator point: B is block diagonal, rank = sum of block ranks
        rank = sum(_exact_rank_int(M.astype(object)) for M in blocks) if not all(binv) else size
        used, random_used = 1, 0
        while rank < size and random_used < points:
            d = rng.integers(-sample_bound, sample_bound + 1, size=(m, n))
            B = (A.astype(object)[None, :, :] * d.astype(object)[:, None, :]).reshape(size, n)
            rank = max(rank, _exact_rank_int(B))
            used += 1
            random_used += 1
        sample_size, field = 2 * sample_bound + 1, "Q"
    else:
        prime = check_int("prime", prime, minimum=3)
        if prime_power_decomposition(prime) != (prime, 1):
            raise InvalidArgumentError("prime", f"must be a prime, got {prime}")
        if prime <= size:
            raise InvalidArgumentError("prime", f"must exceed the degree m*k = {size} for a useful bound")
        GF = finite_field(prime)
        dets_gf = [int(np.linalg.det(GF(M))) for M in blocks]
        dets = tuple(dets_gf)
        binv = tuple(True if dt != 0 else None for dt in dets)
        Agf = GF(A)
        rank, used, random_used = 0, 0, 0
        while rank < size and random_used < points:
            d = GF(rng.integers(0, prime, size=(m, n)))
            B = (Agf[None, :, :] * d[:, None, :]).reshape(size, n)
            rank = max(rank, int(np.linalg.matrix_rank(B)))
            used += 1
            random_used += 1
        sample_size, field = prime, f"GF({prime})"
    certified = rank == size
    err = 0.0 if certified else (min(1.0, size / sample_size) ** random_used if random_used else 1.0)
    return InvertibilityCertificate(
        method, certified, int(rank), size, field, used, size, sample_size, float(err), dets, binv, seed
    )
