"""Strongly regular graphs SRG(v, k, lambda, mu) as gradient-coding assignments (docs/theory.md §20).

Entry points:

* :func:`srg` -- build a verified :class:`StronglyRegularGraph` with given
  parameters, or answer whether one exists (``existence=True``: True / False /
  None = unknown);
* :func:`srg_feasibility` -- the necessary conditions, each named, with whether it holds;
* :func:`buildable_srgs` -- every parameter set gcsim can build up to ``max_v``;
* the family constructors of ``srg_cayley``, ``srg_combinatorial``, ``srg_geometric``, ``srg_sporadic``
  (re-exported here): Paley, triangular, lattice, Latin square, polar,
  generalized quadrangle (and the dual of T2*(O)), affine polar, two-intersection, block graphs of
  Steiner systems, Johnson/Hamming distance unions, Petersen, Clebsch, Shrikhande, Schläfli,
  Hoffman-Singleton, Gewirtz, complements.

Theory and proofs: ``docs/theory/20_srg.md``; guide: ``docs/guides/srg.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache, partial
from math import isqrt

from .. import limits
from .._validation import check_bool, check_dense_size, check_int
from ..errors import NotConstructibleError, VerificationError
from .families import Member, on_registry_change, registered_families
from .srg_families import steiner_system_blocks
from .srg_feasibility import (
    complement_parameters,
    srg_feasibility,
)
from .srg_graph import StronglyRegularGraph

__all__ = [
    "srg",
    "srg_feasibility",
    "buildable_srgs",
    "srg_construction_name",
    "steiner_system_blocks",
    "KNOWN_EXISTING",
]

#: Parameter sets (k <= (v-1)/2 representative; complements implied) for which a graph
#: is known to exist although gcsim cannot build it, with a reference.
KNOWN_EXISTING: dict[tuple[int, int, int, int], str] = {
    (45, 22, 10, 11): (
        "Mathon, 'Symmetric conference matrices of order pq^2 + 1', Canad. J. Math. 30 "
        "(1978) 321-331 (pseudo-cyclic conference graph)"
    ),
}


# ----------------------------------------------------------------------------------------------
# the catalogue: the registered families (gcsim.combinatorics.families), complements added
# ----------------------------------------------------------------------------------------------


def _complement_of(build: Callable[[], StronglyRegularGraph]) -> StronglyRegularGraph:
    return build().complement()


def _family_entries(max_v: int, supplementary: bool = False) -> Iterator[Member]:
    """The members with v <= max_v of the primary (or the supplementary) families, in priority order."""
    for fam in registered_families("srg"):
        if fam.supplementary == supplementary:
            yield from fam.members(max_v)


def _family_entries_v(
    v: int, target: tuple[int, int, int, int] | None = None, supplementary: bool = False
) -> Iterator[Member]:
    """The entries of :func:`_family_entries` with exactly ``v`` vertices, in the same order.

    Each family's :meth:`~gcsim.combinatorics.families.Family.members_with_v` (a fast solver
    where the family has one), so this answers for any v without enumerating every smaller
    graph and without building anything; with ``target`` a family may skip members that can
    neither equal ``target`` nor be its complement.
    """
    for fam in registered_families("srg"):
        if fam.supplementary == supplementary:
            yield from fam.members_with_v(v, target)


@lru_cache(maxsize=1024)
def _catalogue_v(v: int, params: tuple[int, int, int, int] | None = None) -> dict[tuple[int, int, int, int], Member]:
    """The catalogue restricted to v vertices (complements have the same v): same entries, same names.

    With ``params`` the result is exact for looking up ``params`` (see :func:`_family_entries_v`).
    """
    return _merge(_family_entries_v(v, params), _family_entries_v(v, params, supplementary=True))


def _merge(primary: Iterable[Member], supplementary: Iterable[Member]) -> dict[tuple[int, int, int, int], Member]:
    """The primary families' entries with complements, then the supplementary ones' where still open.

    Naming rule: the first primary family that lists a parameter set names it; else the
    complement of the first primary entry with the complementary parameters; else the same
    two steps over the supplementary families.
    """
    cat = _with_complements(primary)
    for p, e in _with_complements(supplementary).items():
        cat.setdefault(p, e)
    return cat


def _with_complements(entries: Iterable[Member]) -> dict[tuple[int, int, int, int], Member]:
    """First entry per parameter tuple, then the complement of each where not already present."""
    cat: dict[tuple[int, int, int, int], Member] = {}
    for e in entries:
        cat.setdefault(e.params, e)  # type: ignore[arg-type]
    for e in list(cat.values()):
        cp = complement_parameters(*e.params)
        if cp[1] >= 1 and cp not in cat:
            cat[cp] = Member(cp, f"complement of {e.name}", partial(_complement_of, e.build))
    return cat


def _catalogue(max_v: int) -> dict[tuple[int, int, int, int], Member]:
    """Catalogue covering at least v <= max_v (cached per power-of-two bucket)."""
    bucket = 64
    while bucket < max_v:
        bucket *= 2
    return _catalogue_upto(bucket)


@lru_cache(maxsize=8)
def _catalogue_upto(max_v: int) -> dict[tuple[int, int, int, int], Member]:
    return _merge(_family_entries(max_v), _family_entries(max_v, supplementary=True))


@on_registry_change
def _clear_caches() -> None:
    """A family was registered or removed: every cached answer may change."""
    _catalogue_v.cache_clear()
    _catalogue_upto.cache_clear()


def buildable_srgs(max_v: int) -> list[tuple[int, int, int, int]]:
    """Sorted list of every ``(v, k, lam, mu)`` with ``v <= max_v`` that gcsim can build.

    Complements are included; imprimitive graphs (complete multipartite graphs
    and disjoint unions of cliques) too.

    Parameters
    ----------
    max_v : int
        Largest number of vertices (>= 1).  Graphs whose ``v x v`` adjacency
        matrix exceeds :data:`gcsim.limits.MAX_DENSE_ENTRIES` are not built by
        gcsim and are not listed, so ``max_v`` is in effect capped at
        ``isqrt(MAX_DENSE_ENTRIES)`` (4096; the listing then takes a few seconds).

    Examples
    --------
    >>> [p for p in buildable_srgs(10) if 0 < p[3] < p[1]]   # the primitive ones
    [(5, 2, 0, 1), (9, 4, 1, 2), (10, 3, 0, 1), (10, 6, 3, 4)]
    >>> (8, 1, 0, 0) in buildable_srgs(10)    # 4 K_2, imprimitive
    True
    """

    max_v = min(check_int("max_v", max_v, minimum=1), isqrt(limits.MAX_DENSE_ENTRIES))
    return sorted(p for p in _catalogue(max_v) if p[0] <= max_v)


def srg_construction_name(v: int, k: int, lam: int, mu: int) -> str | None:
    """Name of the construction gcsim uses for these parameters, or None if it cannot build them.

    >>> srg_construction_name(27, 16, 10, 8)
    'Schläfli graph'
    """
    v = check_int("v", v, minimum=1)
    key = (v, check_int("k", k), check_int("lam", lam), check_int("mu", mu))  # never truncated
    e = _catalogue_v(v, key).get(key)
    return None if e is None else e.name


_SUGGESTION_SPAN = 256  # how far (in v) suggestions are looked for


def _suggestions(params: tuple[int, int, int, int], count: int = 8) -> list[tuple[int, int, int, int]]:
    """Nearby buildable primitive parameter sets (within the size limits), nearest v first."""

    v, k, lam, mu = params

    def dist(p):
        return (abs(p[0] - v), abs(p[1] - k) + abs(p[2] - lam) + abs(p[3] - mu), p)

    pool: list[tuple[int, int, int, int]] = []
    for dv in range(0, _SUGGESTION_SPAN):
        for vv in sorted({v - dv, v + dv}):
            if vv >= 5 and vv * vv <= limits.MAX_DENSE_ENTRIES:
                pool.extend(p for p in _catalogue_v(vv) if 0 < p[3] < p[1])
        if len(pool) >= count:
            break
    return sorted(pool, key=dist)[:count]


def _known_existing_reference(params) -> str | None:
    return KNOWN_EXISTING.get(params) or KNOWN_EXISTING.get(complement_parameters(*params))


def srg(
    v: int, k: int, lam: int, mu: int, *, existence: bool = False, closed: bool = True
) -> StronglyRegularGraph | bool | None:
    """A strongly regular graph SRG(v, k, lam, mu), or whether one exists.

    Definition: ``Adj^2 = k I + lam Adj + mu (J - I - Adj)`` with ``1 <= k <= v - 2``
    (BvM §1.1).  Assignment (docs/theory.md §20): ``A = Adj + I`` when ``closed`` (worker j
    holds its own part and its neighbours'), else ``A = Adj``.

    Parameters
    ----------
    v, k, lam, mu : int
        The parameters.
    existence : bool, default False
        If True, return instead True (gcsim can build it, or it is known to
        exist: :data:`KNOWN_EXISTING`), False (a necessary condition fails or a
        non-existence theorem applies), or None (unknown to gcsim).
    closed : bool, default True
        Assignment convention (see above).

    Returns
    -------
    StronglyRegularGraph or bool or None
        The verified graph, or the existence answer.

    Raises
    ------
    InvalidArgumentError
        Bad input (names the argument).
    ImpossibleParametersError
        A necessary condition fails; ``.condition`` names it ("integrality of
        multiplicities", "Krein", "absolute bound", "k(k-lam-1) = (v-k-1)mu",
        "conference graph: v is a sum of two squares", "basic bounds", or
        "known nonexistence" with the reference in the message).
    NotConstructibleError
        Feasible, but gcsim cannot build it; ``.suggestions`` lists nearby
        buildable parameter sets.

    Examples
    --------
    >>> g = srg(16, 5, 0, 2)
    >>> g.construction, g.verify(), g.assignment.shape
    ('Clebsch graph (folded 5-cube)', True, (16, 16))
    >>> srg(28, 9, 0, 4, existence=True), srg(49, 16, 3, 6, existence=True)
    (False, False)
    >>> srg(99, 14, 1, 2, existence=True) is None
    True
    """
    v = check_int("v", v, minimum=3)
    k = check_int("k", k, minimum=1)
    lam = check_int("lam", lam, minimum=0)
    mu = check_int("mu", mu, minimum=0)
    existence = check_bool("existence", existence)
    closed = check_bool("closed", closed)
    rep = srg_feasibility(v, k, lam, mu)
    params = (v, k, lam, mu)
    if not rep.feasible:
        if existence:
            return False
        rep.raise_if_infeasible()
    if not existence:
        check_dense_size("v", v, v, f"the adjacency matrix of SRG{params}")
    entry = _catalogue_v(v, params).get(params)
    if existence:
        if entry is not None or _known_existing_reference(params) is not None:
            return True
        return None
    if entry is None:
        ref = _known_existing_reference(params)
        why = f" (it exists: {ref})" if ref else " (existence unknown to gcsim)"
        raise NotConstructibleError(f"gcsim cannot build an SRG{params}{why}", _suggestions(params))
    g = entry.build()
    if g.params != params:  # pragma: no cover - guarded by tests
        raise VerificationError(f"catalogue entry {entry.name!r} built {g.params}, expected {params}")
    g = g.with_closed(bool(closed))
    g.verify()
    return g
