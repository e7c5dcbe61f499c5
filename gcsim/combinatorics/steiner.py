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

from .._validation import check_dense_size, check_int
from ..errors import ImpossibleParametersError

__all__ = ["steiner_triple_system_blocks", "bose_sts_blocks", "skolem_sts_blocks", "triple_system_hill_climb"]


def _quasigroup_blocks(table: np.ndarray) -> np.ndarray:
    """Blocks {(x,i),(y,i),(x o y, i+1)} for x < y, i in Z_3, as point numbers."""
    m = table.shape[0]
    x, y = np.triu_indices(m, 1)
    i = np.arange(3)[:, None]
    blocks = np.stack([x[None, :] + i * m, y[None, :] + i * m, table[x, y][None, :] + ((i + 1) % 3) * m], axis=-1)
    return blocks.reshape(-1, 3)


def bose_sts_blocks(v: int) -> list[tuple[int, int, int]]:
    """Bose's STS(v) for v = 3 mod 6.

    >>> len(bose_sts_blocks(9))
    12
    """
    v = check_int("v", v, minimum=3)
    check_dense_size("v", v * (v - 1) // 6, 3, f"the block list of STS({v})")
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
    check_dense_size("v", v * (v - 1) // 6, 3, f"the block list of STS({v})")
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
    with_inf = np.stack(
        [np.full((3, n), inf), (x + n)[None, :] + i * m, x[None, :] + ((i + 1) % 3) * m], axis=-1
    ).reshape(-1, 3)
    blocks = np.concatenate([vertical, with_inf, _quasigroup_blocks(table)])
    return sorted(tuple(sorted(b)) for b in blocks.tolist())


def steiner_triple_system_blocks(v: int) -> list[tuple[int, int, int]]:
    """Blocks of an STS(v): Bose for v = 3 mod 6, Skolem for v = 1 mod 6.

    >>> steiner_triple_system_blocks(7)[:3]
    [(0, 1, 3), (0, 2, 4), (0, 5, 6)]
    """
    v = check_int("v", v, minimum=3)
    # v(v-1)/6 blocks of 3 points (and the (v/3)^2 quasigroup table): refuse before building them
    check_dense_size("v", v * (v - 1) // 6, 3, f"the block list of STS({v})")
    if v % 6 == 3:
        return bose_sts_blocks(v)
    if v % 6 == 1:
        return skolem_sts_blocks(v)
    raise ImpossibleParametersError("divisibility", f"an STS(v) exists iff v = 1 or 3 mod 6, got v = {v}")


def triple_system_hill_climb(
    v: int, lam: int, *, seed: int = 0, max_steps: int | None = None
) -> list[tuple[int, int, int]]:
    """A λ-fold triple system TS(v, λ) (a 2-(v, 3, λ) design, repeated blocks allowed) by hill climbing.

    Stinson's hill-climbing algorithm (D. R. Stinson, "Hill-climbing algorithms
    for the construction of combinatorial designs", Ann. Discrete Math. 26 (1985)
    321-334), in its λ-fold form: a pair {x, y} is *live* while it lies in fewer
    than λ blocks. Repeat: pick a point x with two live pairs {x, y}, {x, z}
    (y ≠ z); if {y, z} is live add the block {x, y, z}, otherwise remove a random
    block through {y, z} and add {x, y, z}. When x's deficit sits on a single pair
    (possible for λ >= 2) a random block through a full pair at x is removed first.
    The search stops when it holds λ v (v - 1) / 6 blocks (every pair covered λ
    times). Seeded and deterministic; existence for every admissible (v, λ) is
    Hanani's theorem (1961): λ(v − 1) ≡ 0 (mod 2) and λ v (v − 1) ≡ 0 (mod 6).

    Raises ``RuntimeError`` if ``max_steps`` is exhausted (the caller may retry with
    another seed; in practice v <= 100 finishes in well under a second).

    >>> blocks = triple_system_hill_climb(6, 2)
    >>> len(blocks)
    10
    """
    import random

    v = check_int("v", v, minimum=3)
    lam = check_int("lam", lam, minimum=1)
    if (lam * (v - 1)) % 2 or (lam * v * (v - 1)) % 6:
        raise ImpossibleParametersError(
            "divisibility", f"no TS({v}, {lam}): need lam(v-1) = 0 mod 2 and lam v(v-1) = 0 mod 6"
        )
    check_dense_size("v", v, v, "the pair-count table of the hill climb")
    check_dense_size("(v, lam)", lam * v * (v - 1) // 6, 3, f"the block list of TS({v}, {lam})")
    target = lam * v * (v - 1) // 6
    rng = random.Random(seed)
    count = [[0] * v for _ in range(v)]  # pair multiplicities
    deficit = [lam * (v - 1)] * v  # live pair-slots at each point
    blocks: dict[int, tuple[int, int, int]] = {}
    through: dict[tuple[int, int], list[int]] = {}
    next_id = 0

    def add(b):
        nonlocal next_id
        bid = next_id
        next_id += 1
        blocks[bid] = b
        for a, c in ((b[0], b[1]), (b[0], b[2]), (b[1], b[2])):
            count[a][c] += 1
            count[c][a] += 1
            through.setdefault((a, c), []).append(bid)
        for p in b:
            deficit[p] -= 2

    def remove(bid):
        b = blocks.pop(bid)
        for a, c in ((b[0], b[1]), (b[0], b[2]), (b[1], b[2])):
            count[a][c] -= 1
            count[c][a] -= 1
            through[(a, c)].remove(bid)
        for p in b:
            deficit[p] += 2

    steps = 0
    limit = max_steps if max_steps is not None else 400 * target + 10_000
    while len(blocks) < target:
        steps += 1
        if steps > limit:
            raise RuntimeError(f"hill climbing for TS({v},{lam}) did not finish in {limit} steps (seed {seed})")
        live_points = [p for p in range(v) if deficit[p] > 0]
        x = rng.choice(live_points)
        live = [y for y in range(v) if y != x and count[x][y] < lam]
        if len(live) < 2:
            # x's whole deficit sits on one pair {x, y} (possible when lam >= 2): free a
            # second pair at x by removing a random block through a full pair {x, z}
            full = [z for z in range(v) if z != x and count[x][z] == lam]
            z = rng.choice(full)
            remove(rng.choice(through[(min(x, z), max(x, z))]))
            continue
        y, z = rng.sample(live, 2)
        b = tuple(sorted((x, y, z)))
        if count[y][z] < lam:
            add(b)
        else:
            key = (min(y, z), max(y, z))
            remove(rng.choice(through[key]))
            add(b)
    return sorted(blocks.values())
