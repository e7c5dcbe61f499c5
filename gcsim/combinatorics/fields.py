"""Finite fields GF(q): one encoding of the elements, one cached table layer, and the number theory.

The encoding
------------
gcsim writes every element of ``GF(q)``, ``q = p**a``, as an integer ``0..q-1`` in one way,
used by every construction (geometries, difference families, strongly regular graphs,
coset graphs) and by :func:`finite_field`: the element is the polynomial
``sum_j c_j x^j`` (``c_j`` in ``Z_p``) modulo the *defining polynomial* of ``GF(q)``, coded as
``sum_j c_j p^j``.  So addition is digitwise modulo ``p``, and ``0`` and ``1`` are coded
``0`` and ``1``.  For a prime ``q`` the codes are the residues modulo ``q``.

The defining polynomial (:func:`defining_polynomial`) is the Conway polynomial ``C_{p,a}``
(galois' default, so that codes agree with :mod:`galois`), with one exception kept for
reproducibility: ``GF(9) = Z_3[x]/(x^2 + 1)``, the field with which the committed catalogue
design PG(2, 9) (``designs/bibd/pg2_9``) and the results built on it were constructed.

Tables, not a JIT
-----------------
Designs and graphs need elementwise arithmetic in small fields.  :func:`field_tables` builds
the addition and multiplication tables with NumPy in milliseconds and caches them; creating
a galois field JIT-compiles its arithmetic (measured: 5-24 s for ``GF(9)`` with a
non-default polynomial, 0.3 s for a default ``GF(81)``; the tables take 7 ms for ``GF(81)``).
:func:`finite_field` returns the galois class for callers that want field objects; it
has the same encoding.

Number theory (primality, factorization, integer roots, perfect powers) is sympy's.
"""

from __future__ import annotations

from functools import cache, lru_cache, wraps
from typing import Any

import numpy as np
import sympy

from .._validation import check_dense_size, check_int, check_int_array
from ..errors import InvalidArgumentError

__all__ = [
    "CONWAY_POLYNOMIALS",
    "is_prime",
    "is_prime_power",
    "prime_power_decomposition",
    "prime_power",
    "defining_polynomial",
    "field_tables",
    "primitive_element",
    "finite_field",
    "nonzero_squares",
    "multiplicative_cosets",
    "additive_cosets",
]


def is_prime(n: int) -> bool:
    """Whether ``n`` is prime (sympy's test: deterministic below 2^64, BPSW beyond).

    >>> [n for n in range(30) if is_prime(n)]
    [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    >>> is_prime(2 ** 61 - 1), is_prime(3215031751)
    (True, False)
    """
    return bool(sympy.isprime(check_int("n", n)))


def int_cache(func: Any = None, *, maxsize: int | None = None) -> Any:
    """:func:`functools.cache` (with ``maxsize``: :func:`functools.lru_cache`) for a function of
    integers: an argument the cache cannot hash (an array, a list) is refused by
    :func:`~gcsim._validation.check_int` naming its parameter, not by the cache's ``TypeError:
    unhashable type``.

    >>> @int_cache
    ... def square(q):
    ...     return q * q
    >>> square(3)
    9
    >>> square([3])
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: q: must be an integer, got [3]
    """
    if func is None:  # @int_cache(maxsize=...)
        return lambda f: int_cache(f, maxsize=maxsize)
    cached = cache(func) if maxsize is None else lru_cache(maxsize=maxsize)(func)
    names = func.__code__.co_varnames[: func.__code__.co_argcount]

    @wraps(func)
    def wrapper(*args: Any) -> Any:
        for name, value in zip(names, args, strict=False):
            try:
                hash(value)
            except TypeError:
                check_int(name, value)  # raises: an integer is hashable
        return cached(*args)

    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return wrapper


def prime_power_decomposition(q: int) -> tuple[int, int] | None:
    """Return ``(p, a)`` with ``q = p**a`` for a prime ``p``, or ``None``.

    Number theory only (:func:`sympy.perfect_power`, :func:`sympy.isprime`), so it answers
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
    if sympy.isprime(q):
        return (q, 1)
    power = sympy.perfect_power(q)  # (b, e) with the largest e, so b is not itself a power
    if power and sympy.isprime(power[0]):
        return (int(power[0]), int(power[1]))
    return None


def prime_power(q: int) -> tuple[int, int]:
    """``(p, a)`` with ``q = p**a`` for a prime power ``q``; :class:`InvalidArgumentError` otherwise.

    >>> prime_power(9)
    (3, 2)
    """
    pa = prime_power_decomposition(q)
    if pa is None:
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    return pa


def is_prime_power(q: int) -> bool:
    """True iff ``q = p**a`` with ``p`` prime and ``a >= 1``.

    >>> [q for q in range(2, 20) if is_prime_power(q)]
    [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19]
    """
    return prime_power_decomposition(q) is not None  # a non-integer q is refused, never answered False


def _check_q(q: Any) -> tuple[int, int, int]:
    q = check_int("q", q, minimum=2)
    pa = prime_power_decomposition(q)
    if pa is None:
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    return q, pa[0], pa[1]


#: Conway polynomials C_{p,a} (coefficients, highest degree first) -- the default defining
#: polynomials of galois' GF(p^a).  Prime powers q = p^a <= 1024, a >= 2, written out so that the
#: common fields need no galois import; derived from galois.conway_poly, and tests/test_fields.py
#: checks every entry against it.
CONWAY_POLYNOMIALS: dict[int, tuple[int, ...]] = {
    4: (1, 1, 1),
    8: (1, 0, 1, 1),
    9: (1, 2, 2),
    16: (1, 0, 0, 1, 1),
    25: (1, 4, 2),
    27: (1, 0, 2, 1),
    32: (1, 0, 0, 1, 0, 1),
    49: (1, 6, 3),
    64: (1, 0, 1, 1, 0, 1, 1),
    81: (1, 2, 0, 0, 2),
    121: (1, 7, 2),
    125: (1, 0, 3, 3),
    128: (1, 0, 0, 0, 0, 0, 1, 1),
    169: (1, 12, 2),
    243: (1, 0, 0, 0, 2, 1),
    256: (1, 0, 0, 0, 1, 1, 1, 0, 1),
    289: (1, 16, 3),
    343: (1, 6, 0, 4),
    361: (1, 18, 2),
    512: (1, 0, 0, 0, 0, 1, 0, 0, 0, 1),
    529: (1, 21, 5),
    625: (1, 0, 4, 4, 2),
    729: (1, 0, 2, 0, 1, 2, 2),
    841: (1, 24, 2),
    961: (1, 29, 3),
    1024: (1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1),
}

#: Defining polynomials that are not the Conway polynomial (highest degree first): GF(9) is
#: Z_3[x]/(x^2 + 1), the field of the committed PG(2, 9) catalogue design (see the module docstring).
_EXCEPTIONS: dict[int, tuple[int, ...]] = {9: (1, 0, 1)}


@int_cache
def defining_polynomial(q: int) -> tuple[int, ...]:
    """The monic polynomial defining gcsim's ``GF(q)`` (coefficients, highest degree first).

    ``(1, 0)`` (the polynomial ``x``) for a prime field; the Conway polynomial for
    ``q = p^a``, ``a >= 2`` -- except ``x^2 + 1`` for ``GF(9)``; beyond the tabulated
    Conway polynomials, galois' Conway database, and where that has none the first monic
    irreducible polynomial in lexicographic order.

    >>> defining_polynomial(7), defining_polynomial(9), defining_polynomial(25)
    ((1, 0), (1, 0, 1), (1, 4, 2))
    """
    q, p, a = _check_q(q)
    if a == 1:
        return (1, 0)
    if q in _EXCEPTIONS:
        return _EXCEPTIONS[q]
    if q in CONWAY_POLYNOMIALS:
        return CONWAY_POLYNOMIALS[q]
    import galois  # heavy import, only for fields beyond the table

    try:
        return tuple(int(c) for c in galois.conway_poly(p, a).coeffs)
    except LookupError:
        # galois' "min" is the lexicographically first monic irreducible polynomial (highest first)
        return tuple(int(c) for c in galois.irreducible_poly(p, a, method="min").coeffs)


@int_cache
def field_tables(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Addition and multiplication tables of gcsim's ``GF(q)`` (read-only int64, ``q x q``).

    Element codes as in the module docstring: ``sum_j c_j x^j`` is coded ``sum_j c_j p^j``,
    modulo :func:`defining_polynomial`.  Cached per process.

    >>> add, mul = field_tables(4)
    >>> int(add[2, 3]), int(mul[2, 3]), int(mul[2, 2])
    (1, 1, 3)

    Raises
    ------
    InvalidArgumentError
        ``q`` is not a prime power.
    SizeLimitError
        The two ``q x q`` tables exceed :data:`gcsim.limits.MAX_DENSE_ENTRIES` (checked before
        anything is allocated).
    """
    q, p, a = _check_q(q)
    check_dense_size("q", q, q, f"the arithmetic table of GF({q})")
    e = np.arange(q, dtype=np.int64)
    if a == 1:
        add = (e[:, None] + e[None, :]) % p
        mul = (e[:, None] * e[None, :]) % p
    else:
        f = list(defining_polynomial(q)[::-1])  # low degree first, leading 1 last
        pw = p ** np.arange(a, dtype=np.int64)
        D = (e[:, None] // pw[None, :]) % p  # digits, low degree first
        layers = [D]
        for _ in range(a - 1):  # layers[i][b] = x^i * b
            prev = layers[-1]
            top = prev[:, -1:]
            shifted = np.concatenate([np.zeros((q, 1), dtype=np.int64), prev[:, :-1]], axis=1)
            layers.append((shifted - top * np.asarray(f[:-1], dtype=np.int64)[None, :]) % p)
        T = np.stack(layers)  # (a, q, a)
        add = ((D[:, None, :] + D[None, :, :]) % p) @ pw
        mul = (np.einsum("xi,iyj->xyj", D, T) % p) @ pw
    add.setflags(write=False)
    mul.setflags(write=False)
    return add, mul


@int_cache
def primitive_element(q: int) -> int:
    """Smallest code of a generator of the multiplicative group of ``GF(q)``.

    For a prime ``q`` the smallest primitive root modulo ``q`` (:func:`sympy.primitive_root`:
    no tables, any size of ``q``); otherwise found in the multiplication table.

    >>> primitive_element(7), primitive_element(9), primitive_element(25), primitive_element(20029)
    (3, 4, 5, 2)
    """
    q, _, a = _check_q(q)
    if a == 1:
        return 1 if q == 2 else int(sympy.primitive_root(q))
    _, mul = field_tables(q)
    for g in range(2, q) if q > 2 else [1]:
        x, order = g, 1
        while x != 1:
            x = int(mul[x, g])
            order += 1
        if order == q - 1:
            return g
    raise AssertionError("no primitive element")  # pragma: no cover


@int_cache
def _field(q: int) -> Any:
    import galois  # optional heavy import (JIT-compiled arithmetic): only for callers that want field objects

    default = galois.GF(q)
    p, a = prime_power_decomposition(q)  # type: ignore[misc]  # q was checked by the caller
    poly = defining_polynomial(q)
    if a == 1 or tuple(int(c) for c in default.irreducible_poly.coeffs) == poly:
        return default  # residues mod p, or galois' default polynomial: the codes agree
    # gcsim's polynomial differs from galois' default (GF(9)): same codes as field_tables
    g = primitive_element(q)
    coeffs = [(g // p**j) % p for j in range(a)][::-1]
    return galois.GF(
        q,
        irreducible_poly=galois.Poly(list(poly), field=galois.GF(p)),
        primitive_element=galois.Poly(coeffs, field=galois.GF(p)),
        verify=False,
    )


def finite_field(q: int) -> Any:
    """The Galois field GF(q) as a cached ``galois`` field class, in gcsim's encoding.

    Its integer representation is the code of :func:`field_tables` (the same defining
    polynomial), and its ``primitive_element`` is :func:`primitive_element`.

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
    >>> GF = finite_field(7)
    >>> GF.order, GF.characteristic, int(GF.primitive_element)
    (7, 7, 3)
    """
    q, _, _ = _check_q(q)
    return _field(q)


def _powers(q: int) -> np.ndarray:
    """``g^0, g^1, ..., g^(q-2)`` for the primitive element ``g`` (codes)."""
    _, mul = field_tables(q)
    g = primitive_element(q)
    out = np.empty(q - 1, dtype=np.int64)
    x = 1
    for i in range(q - 1):
        out[i] = x
        x = int(mul[x, g])
    return out


def nonzero_squares(q: int) -> np.ndarray:
    """Sorted codes of the nonzero squares of GF(q).

    For odd q these are the (q-1)/2 even powers of a primitive element; for
    even q squaring is a bijection (Frobenius), so every nonzero element is a square.

    >>> nonzero_squares(13).tolist()
    [1, 3, 4, 9, 10, 12]
    """
    _, mul = field_tables(q)
    return np.unique(mul.diagonal()[1:])


def multiplicative_cosets(q: int, index: int) -> list[np.ndarray]:
    """Cosets of the subgroup of index ``index`` in GF(q)^*.

    The subgroup is generated by ``g**index`` (g = :func:`primitive_element`); coset ``j``
    is ``g**j * <g**index>``. Returns ``index`` sorted integer arrays.

    >>> [c.tolist() for c in multiplicative_cosets(7, 2)]
    [[1, 2, 4], [3, 5, 6]]
    """
    q, _, _ = _check_q(q)
    index = check_int("index", index, minimum=1)
    if (q - 1) % index != 0:
        raise InvalidArgumentError("index", f"must divide q - 1 = {q - 1}, got {index}")
    _, mul = field_tables(q)
    pw = _powers(q)
    sub = pw[::index]
    return [np.unique(mul[sub, pw[j]]) for j in range(index)]


def additive_cosets(q: int, subgroup: Any) -> list[np.ndarray]:
    """Cosets of an additive subgroup ``H`` of GF(q) (given by codes).

    Returns the distinct cosets ``x + H`` as sorted integer arrays, ordered by
    their smallest element.

    >>> [c.tolist() for c in additive_cosets(4, [0, 1])]
    [[0, 1], [2, 3]]
    """
    q, _, _ = _check_q(q)
    add, _ = field_tables(q)
    H = np.unique(check_int_array("subgroup", subgroup, what="the subgroup's codes"))
    if H.size == 0 or H.min() < 0 or H.max() >= q:
        raise InvalidArgumentError("subgroup", f"must be elements of GF({q}) (codes in [0, {q}))")
    members = set(H.tolist())
    if 0 not in members or not set(add[np.ix_(H, H)].ravel().tolist()) <= members:
        raise InvalidArgumentError("subgroup", "must be an additive subgroup of GF(q) (closed under +, contains 0)")
    seen: set[int] = set()
    cosets = []
    for x in range(q):
        if x in seen:
            continue
        coset = np.unique(add[x, H])
        seen.update(coset.tolist())
        cosets.append(coset)
    return cosets
