"""CERAR traffic, rounds and storage versus ring all-reduce: the formulas, once (docs/theory.md §50).

Per worker, CERAR sends L = c + N - 2 packets of w = ceil(d/c) scalars; the classic ring
all-reduce (reduce-scatter + all-gather) sends 2(N-1) packets of ceil(d/N) scalars.  The
analysis (:func:`rates`) and the executor's byte counters (:mod:`gcsim.executor.collectives`,
:mod:`gcsim.executor.experiments`) use these functions.
"""

from __future__ import annotations

from .._validation import check_int
from .ring import num_rounds, packet_size

__all__ = ["rates", "cerar_bytes", "ring_bytes", "predicted_byte_ratio"]


def cerar_bytes(N: int, c: int, d: int, itemsize: int) -> int:
    """Bytes one rank sends in CERAR: ``L · ceil(d/c) · itemsize`` with ``L = c + N − 2``.

    Examples
    --------
    >>> cerar_bytes(4, 8, 1000, 4)
    5000
    """
    d, itemsize = check_int("d", d, minimum=0), check_int("itemsize", itemsize, minimum=0)
    return num_rounds(N, c) * packet_size(d, c) * itemsize


def ring_bytes(N: int, d: int, itemsize: int) -> int:
    """Bytes one rank sends in ring all-reduce: ``2(N−1) · ceil(d/N) · itemsize``.

    Examples
    --------
    >>> ring_bytes(4, 1000, 4)
    6000
    """
    N, d = check_int("N", N, minimum=2), check_int("d", d, minimum=0)
    return 2 * (N - 1) * packet_size(d, N) * check_int("itemsize", itemsize, minimum=0)


def predicted_byte_ratio(N: int, c: int) -> float:
    """Ring / CERAR traffic ratio ``2(N−1)c / (N(c+N−2))`` (> 1 means CERAR sends less).

    Examples
    --------
    >>> predicted_byte_ratio(4, 4), predicted_byte_ratio(4, 8)
    (1.0, 1.2)
    """
    N, c = check_int("N", N, minimum=2), check_int("c", c, minimum=1)
    return 2 * (N - 1) * c / (N * num_rounds(N, c))


def rates(N: int, c: int) -> dict[str, float | int | bool]:
    """Traffic, rounds and storage of CERAR versus ring all-reduce (normalised by d).

    Keys: ``rounds`` L = c+N-2; ``rate`` 1+(N-2)/c (per-worker traffic / d);
    ``ring_rate`` 2(N-1)/N; ``byte_ratio`` ring / CERAR = 2(N-1)c / (N(c+N-2))
    (:func:`predicted_byte_ratio`); ``storage`` 1+N/c (abstract's accounting: c local + N-1 in
    flight + 1 receive packets); ``simulator_storage`` (2c+1)/c (peak of the schedule every engine
    runs); ``generic_storage_lower_bound`` (c + floor(L/2))/c (no linear schedule of a generic
    design, e.g. a κ-optimized one, holds less: docs/theory.md §51.1, so 1 + N/c is out of reach
    once c >= N + 4); ``structured_storage`` (c+N+2)/c (the lean schedule of §51.2, for the
    shift-structured exact, Vandermonde and perturbation designs); ``exact_possible`` (c <= N or
    N = 2).

    Examples
    --------
    >>> r = rates(4, 4)
    >>> r["rounds"], r["rate"], r["ring_rate"], r["byte_ratio"]
    (6, 1.5, 1.5, 1.0)
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    return {
        "rounds": num_rounds(N, c),
        "rate": 1 + (N - 2) / c,
        "ring_rate": 2 * (N - 1) / N,
        "byte_ratio": predicted_byte_ratio(N, c),
        "storage": 1 + N / c,
        "simulator_storage": (2 * c + 1) / c,
        "generic_storage_lower_bound": (c + num_rounds(N, c) // 2) / c,
        "structured_storage": (c + N + 2) / c,
        "exact_possible": c <= N or N == 2,
    }
