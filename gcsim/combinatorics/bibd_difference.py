"""Designs developed from difference sets and difference families (docs/theory.md §10).

Paley designs (quadratic residues of GF(q)), designs from tabulated or searched
difference families over abelian groups (with fixed points), and the 5q design.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_dense_size, check_int
from ..errors import (
    InvalidArgumentError,
)
from .bibd_design import BIBD
from .difference_families import (
    _check_moduli,
    develop,
    paley_difference_set,
)
from .fields import field_tables, is_prime_power, prime_power, primitive_element

__all__ = ["paley_design", "difference_family_design", "five_q_design"]


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
    p, a = prime_power(q)
    return BIBD(
        q,
        develop((p,) * a, [S]),
        f"Paley difference set in GF({q})",
        lam=(q - 3) // 4,
        metadata={"family": "Paley", "q": q, "base_blocks": [S]},
    )


def difference_family_design(
    moduli, base_blocks, n_fixed: int = 0, lam: int | None = None, name: str = "difference family"
) -> BIBD:
    """Develop base blocks over ``Z_{n_1} x ... x Z_{n_s}`` (plus fixed points) into a design.

    See :func:`gcsim.combinatorics.difference_families.develop`.  The result is
    *not* verified here; call ``verify()``.

    >>> D = difference_family_design(13, [[0, 1, 3, 9]])
    >>> D.params, D.verify()
    (BIBDParams(v=13, b=13, r=4, k=4, lam=1), True)
    """
    moduli = _check_moduli(moduli)  # integers, the group's size bounded, before anything is read
    n_fixed = check_int("n_fixed", n_fixed, minimum=0)
    v = math.prod(moduli) + n_fixed
    if hasattr(base_blocks, "__len__"):  # at most |G| blocks per base block
        check_dense_size("moduli", v, math.prod(moduli) * len(base_blocks), "the incidence matrix")
    group = " x ".join(f"Z_{m}" for m in moduli) + (f" + {n_fixed} fixed" if n_fixed else "")
    return BIBD(
        v,
        develop(moduli, base_blocks, n_fixed),
        f"{name} over {group}",
        lam=lam,
        metadata={"moduli": tuple(moduli), "n_fixed": n_fixed, "base_blocks": [list(map(int, b)) for b in base_blocks]},
    )


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
                blocks.append(
                    [
                        i * q + b,
                        ((i + 1) % 5) * q + int(add[a1, b]),
                        ((i + 1) % 5) * q + int(add[neg[a1], b]),
                        ((i + 4) % 5) * q + int(add[a2, b]),
                        ((i + 4) % 5) * q + int(add[neg[a2], b]),
                    ]
                )
    return BIBD(5 * q, blocks, f"(5q,5,1) construction with q = {q}", lam=1)
