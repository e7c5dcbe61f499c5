"""Elementary designs (docs/theory.md §10): Steiner triple systems and complete designs."""

from __future__ import annotations

import math
from itertools import combinations

from .. import limits
from .._validation import check_dense_size, check_int
from .bibd_design import BIBD
from .steiner import steiner_triple_system_blocks

__all__ = ["steiner_triple_system", "complete_design"]


def _comb_capped(n: int, r: int, cap: int) -> int:
    """``C(n, r)`` if it is at most ``cap``, else ``cap + 1`` (never builds a huge integer)."""
    r = min(r, n - r)
    if r < 0:
        return 0
    out = 1
    for i in range(1, r + 1):
        out = out * (n - r + i) // i  # exact: a product of i consecutive integers / i!
        if out > cap:
            return cap + 1
    return out


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


def complete_design(v: int, k: int) -> BIBD:
    """The trivial design of all k-subsets of v points: a (v, k, C(v-2, k-2)) design.

    >>> complete_design(5, 3).params
    BIBDParams(v=5, b=10, r=6, k=3, lam=3)
    """
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2, maximum=v)
    b = _comb_capped(v, k, limits.MAX_DENSE_ENTRIES)  # C(v, k) without building a huge integer
    check_dense_size(
        "v",
        v,
        b,
        f"the complete design of all {k}-subsets of {v} points"
        + (" (C(v, k) blocks)" if b > limits.MAX_DENSE_ENTRIES else ""),
    )
    return BIBD(
        v,
        list(combinations(range(v), k)),
        f"complete design: all {k}-subsets of {v} points",
        lam=math.comb(v - 2, k - 2),
    )
