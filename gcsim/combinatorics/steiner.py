"""Steiner triple systems STS(v) for every admissible v (v = 1, 3 mod 6).

Constructions (Lindner & Rodger, *Design Theory*, 2nd ed., 2008, §1.2-1.3;
Colbourn & Rosa, *Triple Systems*, 1999):

* **Bose** (v = 6n + 3): points Z_{2n+1} x Z_3, with the idempotent commutative
  quasigroup ``x o y = (n + 1)(x + y) mod (2n + 1)``; blocks
  ``{(x,0),(x,1),(x,2)}`` and ``{(x,i),(y,i),(x o y,i+1)}`` for ``x < y``.
* **Skolem** (v = 6n + 1): points ``{inf} u Z_{2n} x Z_3``, with the
  half-idempotent commutative quasigroup ``x o y = s((x + y) mod 2n)``,
  ``s(2i) = i``, ``s(2i+1) = n + i``; blocks ``{(x,0),(x,1),(x,2)}`` for
  ``0 <= x < n``, ``{inf,(x+n,i),(x,i+1)}`` for ``0 <= x < n``, and
  ``{(x,i),(y,i),(x o y,i+1)}`` for ``x < y``.

Point ``(x, i)`` is numbered ``x + i * m`` (m = quasigroup order); ``inf`` is
``v - 1``.  Proofs: ``docs/theory/10_bibd.md``.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..errors import ImpossibleParametersError

__all__ = ["steiner_triple_system_blocks", "bose_sts_blocks", "skolem_sts_blocks"]


def _quasigroup_blocks(table: np.ndarray) -> np.ndarray:
    """Blocks {(x,i),(y,i),(x o y, i+1)} for x < y, i in Z_3, as point numbers."""
    m = table.shape[0]
    x, y = np.triu_indices(m, 1)
    i = np.arange(3)[:, None]
    blocks = np.stack([x[None, :] + i * m, y[None, :] + i * m,
                       table[x, y][None, :] + ((i + 1) % 3) * m], axis=-1)
    return blocks.reshape(-1, 3)


def bose_sts_blocks(v: int) -> list[tuple[int, int, int]]:
    """Bose's STS(v) for v = 3 mod 6.

    >>> len(bose_sts_blocks(9))
    12
    """
    v = check_int("v", v, minimum=3)
    if v % 6 != 3:
        raise ImpossibleParametersError("divisibility", f"Bose's construction needs v = 3 mod 6, got {v}")
    m = v // 3
    n = (m - 1) // 2
    e = np.arange(m)
    table = ((n + 1) * (e[:, None] + e[None, :])) % m
    vertical = np.stack([e, e + m, e + 2 * m], axis=-1)
    blocks = np.concatenate([vertical, _quasigroup_blocks(table)])
    return sorted(tuple(sorted(b)) for b in blocks.tolist())


def skolem_sts_blocks(v: int) -> list[tuple[int, int, int]]:
    """Skolem's STS(v) for v = 1 mod 6.

    >>> len(skolem_sts_blocks(7))
    7
    """
    v = check_int("v", v, minimum=7)
    if v % 6 != 1:
        raise ImpossibleParametersError("divisibility", f"Skolem's construction needs v = 1 mod 6, got {v}")
    n = (v - 1) // 6
    m = 2 * n
    e = np.arange(m)
    s = np.where(e % 2 == 0, e // 2, n + e // 2)
    table = s[(e[:, None] + e[None, :]) % m]
    inf = v - 1
    x = np.arange(n)
    vertical = np.stack([x, x + m, x + 2 * m], axis=-1)
    i = np.arange(3)[:, None]
    with_inf = np.stack([np.full((3, n), inf), (x + n)[None, :] + i * m,
                         x[None, :] + ((i + 1) % 3) * m], axis=-1).reshape(-1, 3)
    blocks = np.concatenate([vertical, with_inf, _quasigroup_blocks(table)])
    return sorted(tuple(sorted(b)) for b in blocks.tolist())


def steiner_triple_system_blocks(v: int) -> list[tuple[int, int, int]]:
    """Blocks of an STS(v): Bose for v = 3 mod 6, Skolem for v = 1 mod 6.

    >>> steiner_triple_system_blocks(7)[:3]
    [(0, 1, 3), (0, 2, 4), (0, 5, 6)]
    """
    v = check_int("v", v, minimum=3)
    if v % 6 == 3:
        return bose_sts_blocks(v)
    if v % 6 == 1:
        return skolem_sts_blocks(v)
    raise ImpossibleParametersError("divisibility", f"an STS(v) exists iff v = 1 or 3 mod 6, got v = {v}")
