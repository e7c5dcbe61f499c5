"""Size limits: the largest objects gcsim builds and the most patterns it enumerates.

gcsim refuses, *before* allocating anything, an input whose dense matrices or
enumerations would exceed these limits, with an :class:`~gcsim.errors.InvalidArgumentError`
that names the argument, states the requested size and the limit.  They are
sized for a machine with 24 GiB of memory shared with other work:

``MAX_DENSE_ENTRIES = 2**24`` (16,777,216 entries; a 4096 x 4096 matrix)
    Largest dense matrix gcsim materializes: an incidence / assignment /
    adjacency matrix (``v x b``), an encoding matrix ``B`` (``mN x n``), a
    ``q x q`` finite-field table.  One int64 copy is 128 MiB; building and
    exactly verifying an object keeps about six such arrays alive (the matrix,
    a float copy, its Gram matrix, the expected Gram matrix, comparison masks),
    so the peak stays near 1 GiB, and the exact Gram product ``A A^T`` costs at
    most ``4096^3 ≈ 6.9e10`` multiply-adds (a few seconds on one core).
``MAX_PATTERNS = 10**7``
    Most straggler patterns an exhaustive enumeration (``AllPatternsModel``)
    walks through: ``C(n, s) <= 10^7`` patterns of one ``s x s`` solve each
    stay within minutes; beyond that use Monte Carlo (the ``"fixed"`` model).
``MAX_EXISTENCE_ORDER = MAX_DENSE_ENTRIES``
    Largest group order for which an existence question runs an explicit
    cyclotomic (radical difference family) check: O(q) integer operations and
    memory, no field tables.  Larger orders are answered from number theory
    alone (divisibility, Bruck-Ryser-Chowla, parameter families, theorems).

Existence questions (``bibd(..., existence=True)``, ``srg(..., existence=True)``)
never build the object nor a ``q x q`` table: they answer for any size.

The limits are module attributes read at call time, so a user with a bigger
machine may raise them (``gcsim.limits.MAX_DENSE_ENTRIES = 2**26``).

>>> MAX_DENSE_ENTRIES == 4096 * 4096
True
"""

from __future__ import annotations

__all__ = ["MAX_DENSE_ENTRIES", "MAX_PATTERNS", "MAX_EXISTENCE_ORDER"]

MAX_DENSE_ENTRIES: int = 2**24
MAX_PATTERNS: int = 10**7
MAX_EXISTENCE_ORDER: int = 2**24
