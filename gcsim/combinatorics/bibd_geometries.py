"""Designs from finite geometries (docs/theory.md §10).

Points versus flats of PG(n, q) and AG(n, q), Singer difference sets, the Hermitian
unital, McFarland designs and the (56, 11, 2) biplane from hyperovals of PG(2, 4).
Field arithmetic: :func:`gcsim.combinatorics.fields.field_tables`.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import numpy as np

from .. import limits
from .._validation import check_dense_size, check_int
from ..errors import (
    InvalidArgumentError,
)
from .bibd_design import BIBD
from .difference_families import (
    develop,
    singer_difference_set,
)
from .fields import field_tables, is_prime_power, prime_power
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

__all__ = [
    "projective_geometry_design",
    "projective_plane",
    "singer_design",
    "affine_geometry_design",
    "affine_plane",
    "hermitian_unital",
    "mcfarland_design",
    "hyperoval_biplane",
]


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
    b = gaussian_binomial(n + 1, dim + 1, q)
    if not limits.keep_sparse(v, b, b * k):  # else kept sparse (bibd_design.BIBD)
        check_dense_size("q", v, b, f"the incidence matrix of PG({n},{q})")
    what = "hyperplanes" if dim == n - 1 and n > 2 else ("lines" if dim == 1 else f"{dim}-flats")
    return BIBD(
        v,
        pg_flats(n, q, dim),
        f"PG({n},{q}): points vs {what}",
        lam=lam,
        metadata={"family": "PG", "n": n, "q": q, "dim": dim},
    )


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
    if limits.check_power("n", q, n + 1, "q^(n+1) (PG(n, q) has (q^(n+1) - 1) / (q - 1) points)") > 1024:
        return projective_geometry_design(n, q, n - 1)  # checks the size
    D = singer_difference_set(n, q)
    v = (q ** (n + 1) - 1) // (q - 1)
    lam = (q ** (n - 1) - 1) // (q - 1)
    return BIBD(
        v,
        develop(v, [D]),
        f"Singer difference set for PG({n},{q})",
        lam=lam,
        metadata={"family": "Singer", "n": n, "q": q, "base_blocks": [D]},
    )


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
    b = q ** (n - dim) * gaussian_binomial(n, dim, q)
    if not limits.keep_sparse(v, b, b * k):  # else kept sparse (bibd_design.BIBD)
        check_dense_size("q", v, b, f"the incidence matrix of AG({n},{q})")
    if k < 2:  # pragma: no cover - dim >= 1 and q >= 2
        raise InvalidArgumentError("dim", "flats must have at least 2 points")
    what = "lines" if dim == 1 else ("hyperplanes" if dim == n - 1 else f"{dim}-flats")
    return BIBD(
        v,
        ag_flats(n, q, dim),
        f"AG({n},{q}): points vs {what}",
        lam=lam,
        metadata={"family": "AG", "n": n, "q": q, "dim": dim},
    )


def affine_plane(q: int) -> BIBD:
    """The Desarguesian affine plane AG(2, q): a (q^2, q, 1) design.

    >>> affine_plane(4).params
    BIBDParams(v=16, b=20, r=5, k=4, lam=1)
    """
    return affine_geometry_design(2, q, 1)


def hermitian_unital(q: int) -> BIBD:
    """Hermitian unital in PG(2, q^2): a (q^3+1, q+1, 1) design.

    Built inside PG(2, q^2) with table arithmetic, so meant for small q
    (``bibd`` uses it for q <= 5).  Points: the ``q^3+1`` points of the Hermitian curve
    ``x^{q+1} + y^{q+1} + z^{q+1} = 0`` in PG(2, q^2); blocks: its intersections with the secant lines (each meets
    the curve in q+1 points) [BJL, Example I.2.18; HCD VI.7.3].

    >>> hermitian_unital(3).params
    BIBDParams(v=28, b=63, r=9, k=4, lam=1)
    """
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    check_dense_size("q", q**3 + 1, q * q * (q * q - q + 1), f"the incidence matrix of the Hermitian unital (q={q})")
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
    return BIBD(
        int(on_curve.size), blocks, f"Hermitian unital in PG(2,{Q})", lam=1, metadata={"family": "unital", "q": q}
    )


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
    p, a = prime_power(q)
    r = gaussian_binomial(d + 1, 1, q)
    check_dense_size("q", q ** (d + 1) * (r + 1), q ** (d + 1) * (r + 1), f"the McFarland design (q={q}, d={d})")
    hyper = _spans(subspaces(d + 1, d, q), q)  # (r, q^d, d+1) field codes
    # an element of E is a base-q integer whose digits are base-p field codes, i.e. a base-p
    # integer with a(d+1) digits, and field addition is digitwise mod p: E = (Z_p)^{a(d+1)}
    E = q ** (d + 1)
    D = [int(_codes(vec[None, :], q)[0]) * (r + 1) + i for i, H in enumerate(hyper) for vec in H]
    moduli = (p,) * (a * (d + 1)) + (r + 1,)
    D = sorted(D)
    blocks = develop(moduli, [D])
    lam = q**d * (q**d - 1) // (q - 1)
    return BIBD(
        E * (r + 1),
        blocks,
        f"McFarland difference set (q={q}, d={d})",
        lam=lam,
        metadata={"family": "McFarland", "moduli": moduli, "base_blocks": [D]},
    )


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
