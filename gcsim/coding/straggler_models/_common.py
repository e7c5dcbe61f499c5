"""Helpers shared by the straggler models: per-worker probabilities and the ``s``-subsets of ``[n]``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validation import check_dense_size, check_int, check_probability
from ...errors import InvalidArgumentError
from ...limits import check_entries, check_power

__all__ = [
    "straggler_sets",
    "combinations_masks",
    "every_mask",
    "independent_patterns",
    "per_worker_values",
    "per_worker_text",
]


def _scalar_or_list(a: np.ndarray) -> Any:
    return float(a[0]) if np.all(a == a[0]) else a.tolist()


#: Digits of a repeat count ``K`` in ``V*K`` beyond which it is refused before ``int()`` reads it.
_COUNT_DIGITS = 18


def per_worker_values(kind: str, name: str, values: Sequence[str], n: int) -> np.ndarray:
    """The per-worker numbers of a ``KIND:...`` spec: ``V`` or ``V*K`` (``K`` workers of value ``V``), ``n`` in all.

    A refusal names ``stragglers``, the value it refuses and the spec's name for it (``name``).

    Examples
    --------
    >>> per_worker_values("bernoulli", "P", ["0.05*2", "0.6"], 3).tolist()
    [0.05, 0.05, 0.6]
    >>> per_worker_values("bernoulli", "P", ["0.05*2", "x"], 3)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: bernoulli: P value 'x' is not a number
    >>> per_worker_values("speed", "S", ["1*4"], 3)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: speed: '1*4' gives 4 values of S, one per worker for n = 3
    """
    out: list[float] = []
    for item in values:
        value, star, times = item.strip().partition("*")
        try:
            x = float(value)
        except ValueError:
            raise InvalidArgumentError(
                "stragglers", f"{kind}: {name} value {item.strip()[:40]!r} is not a number"
            ) from None
        count = 1
        if star:
            digits = times.strip()
            if not (digits.isascii() and digits.isdigit()) or int(digits[:_COUNT_DIGITS] or 0) < 1:
                raise InvalidArgumentError(
                    "stragglers", f"{kind}: in {item[:40]!r} the repeat count after * must be a whole number >= 1"
                )
            count = int(digits) if len(digits) <= _COUNT_DIGITS else n + 1  # too many either way
        if len(out) + count > n:  # before a list of count entries is built
            raise InvalidArgumentError(
                "stragglers",
                f"{kind}: {item[:40]!r} gives {len(out) + count} values of {name}, one per worker for n = {n}",
            )
        out.extend([x] * count)
    if len(out) != n:
        raise InvalidArgumentError(
            "stragglers", f"{kind}: {len(out)} values of {name} given, one per worker for n = {n}"
        )
    return np.asarray(out, dtype=float)


def per_worker_text(values: np.ndarray) -> str:
    """Per-worker numbers in the spec's form: runs of equal values as ``V*K`` (:func:`per_worker_values` reads it).

    >>> per_worker_text(np.array([0.05, 0.05, 0.6]))
    '0.05*2,0.6'
    """
    out = []
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and values[j + 1] == values[i]:
            j += 1
        text = repr(float(values[i]))
        out.append(text if j == i else f"{text}*{j - i + 1}")
        i = j + 1
    return ",".join(out)


def straggler_sets(n: int, s: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Straggler index sets ``S`` (lexicographic ``s``-subsets of ``[n]``) as an ``(count, s)`` array.

    ``start``/``stop`` select a slice of the lexicographic order (for chunked enumeration).

    Examples
    --------
    >>> straggler_sets(4, 2).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    """
    n = check_int("n", n, minimum=0)
    s = check_int("s", s, minimum=0, maximum=n)
    start = check_int("start", start, minimum=0)
    total = math.comb(n, s)
    stop = total if stop is None else min(check_int("stop", stop, minimum=0), total)
    count = max(stop - start, 0)
    check_dense_size("stop" if stop < total else "s", count, max(n, 1), f"{count:,} straggler patterns as masks")
    if s == 0:
        return np.zeros((count, 0), dtype=np.int64)
    it = itertools.islice(itertools.combinations(range(n), s), start, stop)
    flat = np.fromiter(itertools.chain.from_iterable(it), dtype=np.int64, count=count * s)
    return flat.reshape(count, s)


def combinations_masks(n: int, s: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Non-straggler masks of the straggler sets of :func:`straggler_sets` (``(count, n)``, True = arrives).

    Examples
    --------
    >>> combinations_masks(3, 1).astype(int).tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    """
    S = straggler_sets(n, s, start, stop)
    masks = np.ones((S.shape[0], n), dtype=bool)
    np.put_along_axis(masks, S, False, axis=1)
    return masks


def _probabilities(name: str, p: Any, n: int, *, allow_zero: bool = True, allow_one: bool = False) -> np.ndarray:
    check_entries("n", (n,), "the per-worker probabilities")  # before np.full(n, ...) allocates them
    try:
        arr = np.asarray(p, dtype=float) if not np.isscalar(p) else None
    except (TypeError, ValueError):  # a dict, a ragged list, a non-numeric string
        raise InvalidArgumentError(name, f"must be a probability or one per worker, got {p!r:.60}") from None
    if arr is None:
        val = check_probability(name, p, allow_one=allow_one)
        out = np.full(n, val)
    else:
        if arr.shape not in ((n,), ()):
            raise InvalidArgumentError(name, f"must be a scalar or have length n = {n}, got shape {arr.shape}")
        out = np.broadcast_to(arr, (n,)).astype(float)
        hi_ok = out <= 1.0 if allow_one else out < 1.0
        if not np.all(np.isfinite(out)) or not np.all((out >= 0.0) & hi_ok):
            rng = "[0, 1]" if allow_one else "[0, 1)"
            bad = int(np.flatnonzero(~(np.isfinite(out) & (out >= 0.0) & hi_ok))[0])
            raise InvalidArgumentError(name, f"every entry must lie in {rng}, got {float(out[bad])!r} for worker {bad}")
    if not allow_zero and np.any(out == 0.0):
        raise InvalidArgumentError(name, "must be > 0")
    return out


def every_mask(n: int) -> np.ndarray:
    """All ``2^n`` non-straggler masks of ``n`` workers, row ``t`` the bits of ``t`` (worker ``j``: bit ``j``).

    >>> every_mask(2).astype(int).tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1]]
    """
    n = check_int("n", n, minimum=0)
    check_entries("n", (check_power("n", 2, n, "2^n, the masks of n workers"), n), "every mask (2^n x n)")
    return ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def pattern_weights(p: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Probability of each non-straggler mask when worker ``j`` straggles independently with ``p_j``.

    ``Π_{j∈F}(1-p_j) Π_{j∈S} p_j``.

    >>> [round(w, 12) for w in pattern_weights(np.array([0.5, 0.25]), every_mask(2)).tolist()]
    [0.125, 0.125, 0.375, 0.375]
    """
    masks = np.asarray(masks, dtype=bool)
    with np.errstate(divide="ignore"):
        logq = np.log1p(-p)
        logp = np.log(p)
    terms = np.where(masks, logq[None, :], logp[None, :])
    return np.exp(terms.sum(axis=1))


def independent_patterns(p: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Every pattern of independent workers (straggling with ``p_j``) and its probability, within ``limit``.

    >>> masks, weights, how = independent_patterns(np.array([0.5, 0.5]), 4)
    >>> weights.tolist(), how
    ([0.25, 0.25, 0.25, 0.25], 'all 2^2 patterns, weighted')
    >>> independent_patterns(np.full(3, 0.1), 7) is None
    True
    """
    n = p.size
    if not (n < 63 and 2**n <= limit):
        return None
    masks = every_mask(n)
    return masks, pattern_weights(p, masks), f"all 2^{n} patterns, weighted"
