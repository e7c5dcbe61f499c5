"""Pattern indexing of decoder tables: straggler sets <-> rows (the combinatorial number system).

A decoder table (:mod:`gcsim.coding.decoder_table`) stores one row per straggler pattern; this
module is its index, shared by the dense and the structured tables (:class:`PatternIndex`).

Row order (documented, stable)
------------------------------
Patterns are ordered by the number of stragglers ``s = 0, 1, ..., s_max``, and within one ``s`` in
the lexicographic order of the sorted straggler set ``S = (c_1 < ... < c_s)`` -- the order of
``itertools.combinations(range(n), s)`` and of :func:`gcsim.coding.stragglers.straggler_sets`.
The row of ``S`` is

.. math::  \\mathrm{row}(S) = \\sum_{t < s} \\binom n t + \\binom n s - 1
           - \\sum_{i=1}^{s} \\binom{n-1-c_i}{s-i+1},

(combinatorial number system; proof in ``docs/theory/47_delays.md`` §6), ``O(s)`` additions of
precomputed binomials per lookup.  An explicit list of patterns keeps the order given and is
indexed by a hash of the mask.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import limits
from .._validation import check_count, check_dense_size, check_int, check_mask
from ..errors import InvalidArgumentError
from .stragglers import straggler_sets

__all__ = ["pattern_count", "pattern_row", "pattern_of_row", "PatternIndex"]

_U = float(np.finfo(np.float64).eps) / 2.0


def pattern_count(n: int, s_max: int) -> int:
    """Number of straggler sets with at most ``s_max`` of ``n`` workers: ``Σ_{t<=s_max} C(n, t)``.

    Examples
    --------
    >>> pattern_count(5, 2)       # 1 + 5 + 10
    16
    """
    n = check_int("n", n, minimum=1)
    s_max = check_int("s_max", s_max, minimum=0, maximum=n)
    return sum(math.comb(n, t) for t in range(s_max + 1))


def pattern_row(n: int, stragglers: Any) -> int:
    """Row of the straggler set ``stragglers`` in the order of the module docstring (no table needed).

    Examples
    --------
    >>> [pattern_row(4, S) for S in ([], [0], [3], [0, 1], [0, 3], [2, 3])]
    [0, 1, 4, 5, 7, 10]
    """
    n = check_int("n", n, minimum=1)
    S = _check_set("stragglers", stragglers, n)
    s = len(S)
    base = sum(math.comb(n, t) for t in range(s))
    return base + math.comb(n, s) - 1 - sum(math.comb(n - 1 - c, s - i) for i, c in enumerate(S))


def pattern_of_row(n: int, row: int) -> np.ndarray:
    """The sorted straggler set of ``row`` (inverse of :func:`pattern_row`).

    Examples
    --------
    >>> pattern_of_row(4, 7).tolist()
    [0, 3]
    """
    n = check_int("n", n, minimum=1)
    # the walk takes up to n steps and the set is a mask's worth of workers: bounded like a mask
    limits.check_entries("n", (n,), "the workers of a straggler mask")
    row = check_int("row", row, minimum=0, maximum=2**n - 1)
    s = 0
    while row >= math.comb(n, s):
        row -= math.comb(n, s)
        s += 1
    colex = math.comb(n, s) - 1 - row
    out = []
    hi = n - 1
    for j in range(s, 0, -1):  # greedy: the largest a with C(a, j) <= colex
        a = hi
        while math.comb(a, j) > colex:
            a -= 1
        colex -= math.comb(a, j)
        out.append(n - 1 - a)
        hi = a - 1
    return np.array(out, dtype=np.int64)


def _check_set(name: str, stragglers: Any, n: int) -> list[int]:
    arr = np.asarray(stragglers)
    if arr.size == 0:
        return []
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgumentError(name, f"must be a 1-D list of worker indices, got {stragglers!r}")
    S = sorted(int(x) for x in arr)
    if S[0] < 0 or S[-1] >= n:
        raise InvalidArgumentError(name, f"worker indices must lie in [0, {n - 1}], got {S}")
    if len(set(S)) != len(S):
        raise InvalidArgumentError(name, f"repeats a worker: {S}")
    return S


def _masks_from_sets(S: np.ndarray, n: int) -> np.ndarray:
    masks = np.ones((S.shape[0], n), dtype=bool)
    if S.shape[1]:
        np.put_along_axis(masks, S, False, axis=1)
    return masks


def _complement(S: np.ndarray, n: int) -> np.ndarray:
    masks = _masks_from_sets(S, n)
    return np.nonzero(masks)[1].reshape(S.shape[0], n - S.shape[1])


def _explicit_masks(n: int, patterns: Any, stragglers: Any) -> tuple[np.ndarray, str]:
    """The ``(count, n)`` masks of an explicit table and the argument's name (shared by both routes).

    ``patterns`` (masks) or, when it is None, ``stragglers`` (sets of worker indices); refused when
    empty, over ``MAX_PATTERNS`` patterns (masks of a straggler list: over ``MAX_DENSE_ENTRIES``) or
    with a repeated pattern (both indices and the first 20 stragglers named).
    """
    if patterns is not None:
        masks = check_mask("patterns", patterns, n)
        masks = (masks[None] if masks.ndim == 1 else masks).copy()
        name = "patterns"
    else:
        if isinstance(stragglers, (str, bytes)) or not hasattr(stragglers, "__iter__"):
            raise InvalidArgumentError("stragglers", "must be a list of straggler sets (lists of worker indices)")
        sets = list(stragglers)
        check_count("stragglers", len(sets), "decoder-table patterns")
        check_dense_size("stragglers", len(sets), n, f"{len(sets):,} straggler masks")
        masks = np.ones((len(sets), n), dtype=bool)
        for i, S in enumerate(sets):
            masks[i, _check_set(f"stragglers[{i}]", S, n)] = False
        name = "stragglers"
    count = masks.shape[0]
    if count == 0:
        raise InvalidArgumentError(name, "must list at least one pattern")
    check_count(name, count, "decoder-table patterns")
    seen: dict[bytes, int] = {}
    for i, mk in enumerate(masks):
        key = np.packbits(mk).tobytes()
        if key in seen:
            S = np.flatnonzero(~mk).tolist()
            more = ", ..." if len(S) > 20 else ""
            raise InvalidArgumentError(
                name, f"pattern {i} repeats pattern {seen[key]} (stragglers {str(S[:20])[:-1]}{more}])"
            )
        seen[key] = i
    return masks, name


def _stored_s_max(metadata: dict[str, Any], n: int, count: int, bad: Any) -> int:
    """``metadata["s_max"]`` of a stored all-up-to-s table, checked against ``n`` and the row count."""
    s_max = metadata.get("s_max")
    if isinstance(s_max, bool) or not isinstance(s_max, int) or not 0 <= s_max <= n:
        raise bad(f"metadata 's_max' must be an integer in [0, {n}], got {s_max!r}")
    if pattern_count(n, s_max) != count:
        raise bad(f"count {count} differs from sum_(t<={s_max}) C({n}, t) = {pattern_count(n, s_max)}")
    return s_max


def _check_stored_errors(E: np.ndarray, mN: int, bad: Any) -> None:
    """Stored errors lie in ``[0, mN]`` (up to the rounding of a sum of ``mN`` terms)."""
    if np.any(E < 0) or np.any(E > mN * (1 + 4 * mN * _U)):
        raise bad(f"errors must lie in [0, mN = {mN}]")


# ----------------------------------------------------------------------------------------------
# the index of a table
# ----------------------------------------------------------------------------------------------


class PatternIndex:
    """The pattern -> row index of a decoder table (a base of :class:`~gcsim.coding.dense_table.DecoderTable`).

    Set up by ``_setup_index(n, s_max, patterns)``: the binomials of every pattern with
    ``|S| <= s_max`` in the order of the module docstring, or a hash of each mask of an explicit
    list (kept in the order given).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> from gcsim.coding.decoder_table import decoder_table
    >>> t = decoder_table(encode(np.eye(4, dtype=int), 1, "naive"), s_max=2)
    >>> isinstance(t, PatternIndex), t.row_of_stragglers([0, 3]), t.pattern(7).tolist()
    (True, 7, [False, True, True, False])
    """

    s_max: int | None
    _patterns: np.ndarray | None
    _index: dict[bytes, int] | None
    _binom: np.ndarray
    _offsets: np.ndarray
    _index_n: int

    def __len__(self) -> int:
        return int(self._patterns.shape[0]) if self._patterns is not None else int(self._offsets[-1])

    def _setup_index(self, n: int, s_max: int | None, patterns: np.ndarray | None) -> None:
        """The pattern -> row index: a hash of each explicit mask, or the binomials of ``s_max``."""
        self._index_n = n
        if patterns is not None:
            self._patterns = patterns
            self._patterns.setflags(write=False)
            self._index = {np.packbits(mk).tobytes(): r for r, mk in enumerate(patterns)}
        else:
            assert s_max is not None  # the builders pass s_max or patterns
            self._patterns = None
            self._index = None
            # C(x, j) for x < n, j <= s_max (all <= the pattern count, so int64 is exact)
            self._binom = np.array([[math.comb(x, j) for j in range(s_max + 2)] for x in range(n + 1)], dtype=np.int64)
            self._offsets = np.cumsum(np.array([0] + [math.comb(n, t) for t in range(s_max + 1)], dtype=np.int64))
            self._binom.setflags(write=False)
            self._offsets.setflags(write=False)

    @property
    def explicit(self) -> bool:
        """True when the table holds an explicit list of patterns."""
        return self._patterns is not None

    # -- index --------------------------------------------------------------------------------------
    def row(self, mask: Any) -> int:
        """Row of the non-straggler mask (True = arrived).

        ``O(n)`` to read the mask and ``O(s)`` for the index (explicit tables: a hash of the mask).

        Raises
        ------
        InvalidArgumentError
            A pattern the table does not cover (more than ``s_max`` stragglers, or not in the list).
        """
        mk = check_mask("mask", mask, self._index_n)
        if mk.ndim != 1:
            raise InvalidArgumentError("mask", "must be a single mask of shape (n,); use rows() for a batch")
        if self._index is not None:
            row = self._index.get(np.packbits(mk).tobytes())
            if row is None:
                raise InvalidArgumentError(
                    "mask", f"straggler set {np.flatnonzero(~mk).tolist()} is not in the table's {len(self)} patterns"
                )
            return row
        return self.row_of_stragglers(np.flatnonzero(~mk))

    def row_of_stragglers(self, stragglers: Any) -> int:
        """Row of a straggler set given as worker indices (``O(s log s)`` to sort, ``O(s)`` to index)."""
        S = _check_set("stragglers", stragglers, self._index_n)
        if self._index is not None:
            mk = np.ones(self._index_n, dtype=bool)
            mk[S] = False
            return self.row(mk)
        s = len(S)
        assert self.s_max is not None  # explicit tables were answered above
        if s > self.s_max:
            raise InvalidArgumentError("mask", f"has {s} stragglers; the table covers at most s_max = {self.s_max}")
        b, n = self._binom, self._index_n
        colex = 0
        for i, c in enumerate(S):
            colex += int(b[n - 1 - c, s - i])
        return int(self._offsets[s]) + math.comb(n, s) - 1 - colex

    def rows(self, masks: Any) -> np.ndarray:
        """Rows of a ``(count, n)`` batch of masks (vectorized per number of stragglers)."""
        mk = check_mask("masks", masks, self._index_n)
        mk = mk[None] if mk.ndim == 1 else mk
        out = np.empty(mk.shape[0], dtype=np.int64)
        if self._index is not None:
            for i, row in enumerate(mk):
                out[i] = self.row(row)
            return out
        n = self._index_n
        sizes = n - mk.sum(axis=1)
        if mk.shape[0] and sizes.max() > self.s_max:
            bad = int(np.argmax(sizes > self.s_max))
            raise InvalidArgumentError(
                "masks", f"row {bad} has {int(sizes[bad])} stragglers; the table covers at most s_max = {self.s_max}"
            )
        for s in np.unique(sizes):
            idx = np.flatnonzero(sizes == s)
            s = int(s)
            # stable argsort puts the stragglers (False) first, in index order
            S = np.argsort(mk[idx], axis=1, kind="stable")[:, :s]
            colex = self._binom[n - 1 - S, s - np.arange(s)[None, :]].sum(axis=1) if s else 0
            out[idx] = self._offsets[s] + math.comb(n, s) - 1 - colex
        return out

    def pattern(self, row: int) -> np.ndarray:
        """Non-straggler mask of ``row`` (inverse of :meth:`row`)."""
        row = check_int("row", row, minimum=0, maximum=len(self) - 1)
        if self._patterns is not None:
            return self._patterns[row].copy()
        mk = np.ones(self._index_n, dtype=bool)
        mk[pattern_of_row(self._index_n, row)] = False
        return mk

    def iter_patterns(self, chunk: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, masks)`` chunks of every pattern in row order.

        ``chunk`` masks at a time (default ``min(65536, MAX_DENSE_ENTRIES // n)``: a chunk of masks
        stays within the dense limit at any ``n``, e.g. 1,764 masks at ``n = 9,507``).
        """
        chunk = max(1, min(65536, limits.MAX_DENSE_ENTRIES // max(self._index_n, 1))) if chunk is None else chunk
        chunk = check_int("chunk", chunk, minimum=1)
        if self._patterns is not None:
            for a in range(0, len(self), chunk):
                yield a, self._patterns[a : a + chunk].copy()
            return
        assert self.s_max is not None  # a table without explicit patterns has s_max
        for s in range(self.s_max + 1):
            total = math.comb(self._index_n, s)
            for a in range(0, total, chunk):
                S = straggler_sets(self._index_n, s, a, a + chunk)
                yield int(self._offsets[s]) + a, _masks_from_sets(S, self._index_n)

    def _checked_rows(
        self, sample: int | None, seed: int, chunk: int | None = None
    ) -> tuple[Iterator[tuple[np.ndarray, np.ndarray]], int]:
        """The ``(rows, masks)`` pieces a table's verification checks, and how many rows they hold.

        Every row in :meth:`iter_patterns` chunks (``sample=None``), or one piece: the first and
        the last row and ``sample`` rows drawn without replacement by ``default_rng(seed)``.
        """
        seed = check_int("seed", seed, minimum=0)
        count = len(self)
        if sample is None:
            chunks = ((a + np.arange(mk.shape[0]), mk) for a, mk in self.iter_patterns(chunk))
            return chunks, count
        sample = check_int("sample", sample, minimum=1)
        rng = np.random.default_rng(seed)
        k = min(sample, count)
        rows = np.unique(np.concatenate([[0, count - 1], rng.choice(count, size=k, replace=False)]))
        masks = np.array([self.pattern(int(r)) for r in rows]).reshape(rows.size, self._index_n)
        return iter([(rows, masks)]), int(rows.size)
