"""Finite fields GF(q) through galois, cached per process.

galois JIT-compiles its arithmetic (numba) the first time a field is used in a
process, so every field is created once and shared (:func:`finite_field`).
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from .._validation import check_int
from ..errors import InvalidArgumentError

__all__ = [
    "is_prime",
    "is_prime_power",
    "prime_power_decomposition",
    "finite_field",
    "primitive_element",
    "nonzero_squares",
    "multiplicative_cosets",
    "additive_cosets",
]


_SMALL_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)


def is_prime(n: int) -> bool:
    """Deterministic primality test (Miller-Rabin; exact for every ``n`` gcsim can meet).

    The first 13 primes as bases are a proof of primality for ``n < 3.3 * 10^24``
    (Sorenson & Webster 2015); beyond that sympy's BPSW test is used (no known
    counterexample).  Runs in microseconds where trial division up to ``sqrt(n)``
    would not finish.

    >>> [n for n in range(30) if is_prime(n)]
    [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    >>> is_prime(2 ** 61 - 1), is_prime(3215031751)
    (True, False)
    """
    n = check_int("n", n)
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    if n < 3_317_044_064_679_887_385_961_981:
        d, s = n - 1, 0
        while d % 2 == 0:
            d //= 2
            s += 1
        for a in _SMALL_PRIMES:
            x = pow(a, d, n)
            if x in (1, n - 1):
                continue
            for _ in range(s - 1):
                x = x * x % n
                if x == n - 1:
                    break
            else:
                return False
        return True
    from sympy import isprime  # pragma: no cover - numbers beyond 3.3e24

    return bool(isprime(n))  # pragma: no cover


_TRIAL_BOUND = 1000
_TRIAL_PRIMES = tuple(p for p in range(2, _TRIAL_BOUND) if all(p % d for d in range(2, int(p ** 0.5) + 1)))


def _iroot(x: int, n: int) -> int:
    """Largest integer r with ``r**n <= x`` (x >= 0, n >= 1), exact for integers of any size.

    Integer Newton iteration from an overestimate decreases monotonically to the
    floor of the root (no float rounding, so it is exact beyond 2^53 too).

    >>> _iroot(10 ** 40, 2), _iroot(10 ** 300 + 1, 3) == 10 ** 100, _iroot(2 ** 1197, 7) == 2 ** 171
    (100000000000000000000, True, True)
    """
    if x < 2 or n == 1:
        return x
    if n == 2:
        return math.isqrt(x)
    r = 1 << -(-x.bit_length() // n)          # 2^ceil(bits/n) >= x^(1/n)
    while True:
        y = ((n - 1) * r + x // r ** (n - 1)) // n
        if y >= r:
            return r
        r = y


def _factor(n: int) -> dict[int, int]:
    """Prime factorization of n >= 1: trial division below 10^12, sympy's Pollard rho / ECM beyond
    (where trial division up to sqrt(n) would not finish)."""
    n = abs(n)
    if n >= 10 ** 12:
        from sympy import factorint
        return {int(p): int(e) for p, e in factorint(n).items()}
    out: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def prime_power_decomposition(q: int) -> tuple[int, int] | None:
    """Return ``(p, a)`` with ``q = p**a`` for a prime ``p``, or ``None``.

    Number theory only (exact integer roots and :func:`is_prime`), so it answers
    at once for any size of ``q``.

    >>> prime_power_decomposition(81)
    (3, 4)
    >>> prime_power_decomposition(12) is None
    True
    >>> prime_power_decomposition(2 ** 89 - 1)
    (618970019642690137449562111, 1)
    """
    q = check_int("q", q)
    if q < 2:
        return None
    for p in _TRIAL_PRIMES:            # a small prime factor settles it at once
        if p * p > q:
            return (q, 1)
        if q % p == 0:
            a = 0
            while q % p == 0:
                q //= p
                a += 1
            return (p, a) if q == 1 else None
    # no prime factor below _TRIAL_BOUND: q = r^a with r > _TRIAL_BOUND, so a < log(q)/log(_TRIAL_BOUND)
    if is_prime(q):
        return (q, 1)
    a = 2
    while _TRIAL_BOUND ** a < q:
        r = _iroot(q, a)
        if r ** a == q and is_prime(r):
            return (r, a)
        a += 1
    return None


def is_prime_power(q: int) -> bool:
    """True iff ``q = p**a`` with ``p`` prime and ``a >= 1``.

    >>> [q for q in range(2, 20) if is_prime_power(q)]
    [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19]
    """
    try:
        return prime_power_decomposition(q) is not None
    except InvalidArgumentError:
        return False


@cache
def _field(q: int):
    import galois

    return galois.GF(q)


def finite_field(q: int):
    """The Galois field GF(q) as a cached ``galois`` field class.

    Parameters
    ----------
    q : int
        A prime power.

    Raises
    ------
    InvalidArgumentError
        If ``q`` is not a prime power.

    Examples
    --------
    >>> GF = finite_field(9)
    >>> GF.order, GF.characteristic
    (9, 3)
    """
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    return _field(q)


def primitive_element(q: int) -> int:
    """Integer representation of the primitive element of GF(q) chosen by galois.

    >>> primitive_element(7)
    3
    """
    return int(finite_field(q).primitive_element)


def nonzero_squares(q: int) -> np.ndarray:
    """Sorted integer representations of the nonzero squares of GF(q).

    For odd q these are the (q-1)/2 even powers of a primitive element; for
    even q squaring is a bijection (Frobenius), so every nonzero element is a square.

    >>> nonzero_squares(13).tolist()
    [1, 3, 4, 9, 10, 12]
    """
    GF = finite_field(q)
    g = GF.primitive_element
    powers = g ** ((2 * np.arange(q - 1)) % (q - 1))
    return np.unique(np.asarray(powers, dtype=np.int64))


def multiplicative_cosets(q: int, index: int) -> list[np.ndarray]:
    """Cosets of the subgroup of index ``index`` in GF(q)^*.

    The subgroup is generated by ``g**index`` (g primitive); coset ``j`` is
    ``g**j * <g**index>``. Returns ``index`` sorted integer arrays.

    >>> [c.tolist() for c in multiplicative_cosets(7, 2)]
    [[1, 2, 4], [3, 5, 6]]
    """
    index = check_int("index", index, minimum=1)
    if (q - 1) % index != 0:
        raise InvalidArgumentError("index", f"must divide q - 1 = {q - 1}, got {index}")
    GF = finite_field(q)
    g = GF.primitive_element
    sub = g ** np.arange(0, q - 1, index)
    return [np.unique(np.asarray(sub * g ** j, dtype=np.int64)) for j in range(index)]


def additive_cosets(q: int, subgroup) -> list[np.ndarray]:
    """Cosets of an additive subgroup ``H`` of GF(q) (given by integer representations).

    Returns the distinct cosets ``x + H`` as sorted integer arrays, ordered by
    their smallest element.

    >>> [c.tolist() for c in additive_cosets(4, [0, 1])]
    [[0, 1], [2, 3]]
    """
    GF = finite_field(q)
    H = GF(np.unique(np.asarray(subgroup, dtype=np.int64)))
    if 0 not in set(int(h) for h in H) or any(int(a + b) not in set(int(h) for h in H) for a in H for b in H):
        raise InvalidArgumentError("subgroup", "must be an additive subgroup of GF(q) (closed under +, contains 0)")
    seen: set[int] = set()
    cosets = []
    for x in range(q):
        if x in seen:
            continue
        coset = np.unique(np.asarray(GF(x) + H, dtype=np.int64))
        seen.update(int(c) for c in coset)
        cosets.append(coset)
    return cosets
