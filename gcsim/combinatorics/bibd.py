"""Balanced incomplete block designs (docs/theory.md §10).

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
from functools import lru_cache
from typing import Any

import sympy

from .. import limits
from .._validation import check_bool, check_dense_size, check_int
from ..errors import (
    ImpossibleParametersError,
    NotConstructibleError,
    SizeLimitError,
)
from .bibd_design import BIBD, union_design
from .bibd_existence import _validate, _violations
from .bibd_families import geometry_match as _geometry_match  # noqa: F401 - the old private name
from .families import get_family, on_registry_change, registered_families
from .steiner import triple_system_hill_climb

__all__ = ["bibd", "buildable_bibds"]


# --------------------------------------------------------------------------------------
# Planning: which construction builds (v, k, lam)?
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _plan_direct(v: int, k: int, lam: int):
    """A direct (non-recursive) recipe for (v, k, lam), or None: the first registered design family
    (:mod:`gcsim.combinatorics.bibd_families`, in priority order) whose ``lookup`` matches.

    Number theory and tables only (no field tables except inside the radical check, which is
    table-free for prime v); the recipe is ``("family", name, (v, k, lam))``.
    """
    params = (v, k, lam)
    for fam in registered_families("bibd"):
        if fam.lookup(params) is not None:
            return ("family", fam.name, params)
    return None


_PLANS: dict[tuple[int, int, int], Any] = {}


@on_registry_change
def _clear_caches() -> None:
    """A family was registered or removed: every plan may change."""
    _PLANS.clear()
    _plan_direct.cache_clear()
    _execute.cache_clear()
    _build_verified.cache_clear()


_MAX_HILL_CLIMB_V = 100  # triple systems up to this v are built by hill climbing (< 1 s each)
_UNION_SPLIT_MAX = 12  # lam > this: lam-fold designs as copies of a g-fold one (g | lam) first
_MAX_PLAN_DEPTH = 64  # recursion guard of the planner (a cut counts like a cycle cut)
_cuts = [0]  # number of cycle/depth cuts so far (a None found without one is cached)


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
        _PLANS[key] = plan  # a None that no cut influenced does not depend on the recursion stack
    return plan


def _divisors(n: int, limit: int = 4096) -> list[int]:
    """Sorted divisors of n >= 1, at most the ``limit`` smallest (from the factorization, any size of n)."""
    divs = [1]
    for p, e in sorted((int(p), int(e)) for p, e in sympy.factorint(n).items()):
        divs = [d * p**i for d in divs for i in range(e + 1)]
        if len(divs) > 4 * limit:  # keep the work bounded for highly composite n
            divs = sorted(divs)[: 4 * limit]
    out = sorted(set(divs))
    if n not in out:
        out.append(n)  # the planner skips n itself; keep the list's last element n
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
        total_b = sum(_design_size(*p)[1] for p in parts) if kind == "union" else _design_size(*plan[1])[1] * plan[2]
        return max([v * total_b] + [_plan_peak(_plan(*p)) for p in parts])
    return -1  # leaves: the caller uses the design's own size


@lru_cache(maxsize=256)
def _execute(plan) -> BIBD:
    kind = plan[0]
    if kind == "family":
        member = get_family(plan[1]).lookup(plan[2])
        if member is None:  # pragma: no cover - the family was replaced after planning
            raise NotConstructibleError(f"family {plan[1]!r} no longer builds a 2-{plan[2]} design")
        return member.build()
    if kind == "triple-hc":
        _, v, lam = plan
        return BIBD(
            v,
            triple_system_hill_climb(v, lam, seed=0),
            f"{lam}-fold triple system by hill climbing (Stinson), seed 0",
            lam=lam,
            metadata={"seed": 0},
        )
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

    Notes
    -----
    Only incomplete designs (``k < v``) are listed.

    Examples
    --------
    >>> buildable_bibds(9, lam_range=[1])
    [(7, 3, 1), (9, 3, 1)]
    """

    max_v = check_int("max_v", max_v, minimum=2)
    progress = check_bool("progress", progress)
    lams = [1, 2, 3] if lam_range is None else [check_int("lam", x, minimum=1) for x in lam_range]
    ks = None if k_range is None else sorted({check_int("k", x, minimum=2) for x in k_range})
    top = min(max_v, math.isqrt(limits.MAX_DENSE_ENTRIES))  # b >= v (Fisher): v^2 <= v b entries
    vs = range(2, top + 1)
    if progress and top > 400:
        from tqdm.auto import tqdm

        vs = tqdm(vs, desc="buildable BIBDs", leave=False, disable=None)  # None: a bar only on a terminal
    out = []
    for v in vs:
        for k in ks if ks is not None else range(3, v // 2 + 1):
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
    >>> bibd(20029, 4, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: (v, k, lam): a 2-(20029,4,1) design would be a dense 20,029 x 33,428,401 matrix ...
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
        # the result alone is too large: refuse before planning or building anything (unless it is
        # kept sparse: gcsim.limits.keep_sparse, bibd_design.BIBD)
        v_, b_ = _design_size(v, k, lam)
        if not limits.keep_sparse(v_, b_, b_ * k):
            check_dense_size("(v, k, lam)", v_, b_, f"a 2-({v},{k},{lam}) design")
    plan = _plan(v, k, lam)
    if existence:
        return True if plan is not None else None
    if plan is None:
        raise NotConstructibleError(
            f"a 2-({v},{k},{lam}) design may exist, but gcsim has no construction for it", _suggestions(v, k, lam)
        )
    peak = _plan_peak(plan)
    if peak > 0:
        if peak > limits.MAX_DENSE_ENTRIES:
            raise SizeLimitError(
                "(v, k, lam)",
                f"gcsim builds a 2-({v},{k},{lam}) design from a larger design with {peak:,} "
                f"incidence entries, over gcsim's limit of {limits.MAX_DENSE_ENTRIES:,} entries "
                "(gcsim.limits.MAX_DENSE_ENTRIES)",
                requested=peak,
                limit=limits.MAX_DENSE_ENTRIES,
                limit_name="MAX_DENSE_ENTRIES",
            )
    D = _build_verified(plan)
    return D  # immutable: the cached object itself


@lru_cache(maxsize=256)
def _build_verified(plan) -> BIBD:
    """Build and verify once per process (the object is immutable)."""
    D = _execute(plan)
    D.verify()
    return D
