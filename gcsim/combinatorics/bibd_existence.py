"""Necessary conditions for 2-(v, k, lambda) designs (docs/theory.md §10).

Divisibility (``r = lambda (v-1)/(k-1)`` and ``b = v r / k`` integers), Fisher's
inequality ``b >= v``, the Bruck-Ryser-Chowla theorem for symmetric designs (through
the Hilbert symbol and the Hasse-Minkowski theorem), and known nonexistence results.
References: Beth, Jungnickel & Lenz, *Design Theory* (1999) [BJL]; Colbourn & Dinitz,
*Handbook of Combinatorial Designs* (2007) [HCD].
"""

from __future__ import annotations

import math
from functools import lru_cache

import sympy

from .._validation import check_int
from ..errors import (
    InvalidArgumentError,
)

__all__ = ["KNOWN_NONEXISTENT_BIBDS", "ternary_form_isotropic", "bruck_ryser_chowla", "bibd_necessary_conditions"]


#: Known nonexistence results beyond divisibility / Fisher / BRC, within the
#: parameters gcsim reasons about.  (v, k, lam) -> reference.
KNOWN_NONEXISTENT_BIBDS: dict[tuple[int, int, int], str] = {
    (111, 11, 1): "Lam, Thiel & Swiercz, 'The non-existence of finite projective planes of order 10', "
    "Canad. J. Math. 41 (1989) 1117-1123",
    (46, 6, 1): "Houghten, Thiel, Janssen & Lam, 'The (46,6,1) block design does not exist', "
    "J. Combin. Des. 9 (2001) 60-71",
}


def _squarefree_part(n: int) -> int:
    return math.prod(int(p) for p, e in sympy.factorint(abs(n)).items() if e % 2)


def _hilbert_symbol(a: int, b: int, p: int) -> int:
    """Hilbert symbol (a, b)_p for nonzero integers and a prime p (Serre, *A Course in Arithmetic*, III.1.2)."""

    def split(x: int) -> tuple[int, int]:
        e = 0
        while x % p == 0:
            x //= p
            e += 1
        return e, x

    alpha, u = split(a)
    beta, w = split(b)
    if p != 2:
        eps = (p - 1) // 2
        sign = (-1) ** (alpha * beta * eps)
        return sign * (int(sympy.legendre_symbol(u, p)) ** beta) * (int(sympy.legendre_symbol(w, p)) ** alpha)

    def e2(x: int) -> int:
        return ((x - 1) // 2) % 2

    def w2(x: int) -> int:
        return ((x * x - 1) // 8) % 2

    return (-1) ** ((e2(u) * e2(w) + alpha * w2(w) + beta * w2(u)) % 2)


def _prime_factors(n: int) -> list[int]:
    return sorted(int(p) for p in sympy.factorint(abs(n)))


def ternary_form_isotropic(a: int, b: int) -> bool:
    """Whether ``z^2 = a x^2 + b y^2`` has a nonzero integer solution (a, b nonzero integers).

    By the Hasse-Minkowski theorem (Legendre's theorem), iff the Hilbert symbol
    ``(a, b)_p = 1`` for every prime p and for p = infinity.

    >>> ternary_form_isotropic(2, 7), ternary_form_isotropic(6, -1)
    (True, False)
    """
    a = check_int("a", a)
    b = check_int("b", b)
    for name, value in (("a", a), ("b", b)):
        if value == 0:  # z^2 = b y^2 with x free: a degenerate form, not the ternary form of the theorem
            raise InvalidArgumentError(name, "must be a nonzero integer, got 0")
    if a < 0 and b < 0:
        return False
    return all(_hilbert_symbol(a, b, p) == 1 for p in set(_prime_factors(2 * a * b)))


def _ternary_form_text(a: int, b: int) -> str:
    """``z² = a x² + b y²`` as a reader writes it: no unit coefficients, a minus sign instead of ``+ -``.

    >>> _ternary_form_text(6, -1), _ternary_form_text(1, 2), _ternary_form_text(-3, -10)
    ('z² = 6x² − y²', 'z² = x² + 2y²', 'z² = −3x² − 10y²')
    """

    def term(coefficient: int, var: str) -> str:
        size = abs(coefficient)
        return f"{'' if size == 1 else size}{var}²"

    first = ("−" if a < 0 else "") + term(a, "x")
    return f"z² = {first} {'−' if b < 0 else '+'} {term(b, 'y')}"


def bruck_ryser_chowla(v: int, k: int, lam: int) -> bool | None:
    """Bruck-Ryser-Chowla test for a symmetric (v, k, lam) design.

    Returns None if the parameters are not symmetric (``lam (v-1) != k (k-1)``),
    else whether the BRC condition holds: for v even, ``n = k - lam`` is a
    square; for v odd, ``z^2 = n x^2 + (-1)^((v-1)/2) lam y^2`` has a nonzero
    integer solution [BJL, Thm. II.3.6; HCD II.6.3].

    >>> bruck_ryser_chowla(43, 7, 1), bruck_ryser_chowla(91, 10, 1), bruck_ryser_chowla(22, 7, 2)
    (False, True, False)
    """
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2)
    lam = check_int("lam", lam, minimum=1)
    if lam * (v - 1) != k * (k - 1) or k >= v:
        return None
    n = k - lam
    if v % 2 == 0:
        return math.isqrt(n) ** 2 == n
    sign = 1 if (v - 1) // 2 % 2 == 0 else -1
    a = _squarefree_part(n)
    b = sign * _squarefree_part(lam)
    if a == 1 or b == 1:
        return True
    return ternary_form_isotropic(a, b)


@lru_cache(maxsize=1 << 16)
def _violations(v: int, k: int, lam: int) -> tuple[tuple[str, str], ...]:
    """Violated necessary conditions with messages (v, k, lam already validated, k <= v); cached."""
    return tuple(_violations_list(v, k, lam))


def _violations_list(v: int, k: int, lam: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if (lam * (v - 1)) % (k - 1) or (lam * v * (v - 1)) % (k * (k - 1)):
        out.append(
            (
                "divisibility",
                f"need (k-1) | lam (v-1) and k (k-1) | lam v (v-1); here lam(v-1) = {lam * (v - 1)}, "
                f"k-1 = {k - 1}, lam v (v-1) = {lam * v * (v - 1)}, k(k-1) = {k * (k - 1)}",
            )
        )
        return out
    r = lam * (v - 1) // (k - 1)
    b = v * r // k
    if k < v and b < v:
        out.append(("Fisher's inequality", f"b = {b} < v = {v}"))
        return out
    if k < v and b == v and bruck_ryser_chowla(v, k, lam) is False:
        out.append(
            (
                "Bruck-Ryser-Chowla",
                f"no symmetric ({v},{k},{lam}) design: "
                + (
                    f"v even and k - lam = {k - lam} is not a square"
                    if v % 2 == 0
                    else f"{_ternary_form_text(k - lam, (-1) ** ((v - 1) // 2) * lam)} has no nonzero integer solution"
                ),
            )
        )
        return out
    # Hall-Connor: for lam <= 2 every quasi-residual design is residual, so it embeds into a
    # symmetric (v+k+lam, k+lam, lam) design; if that one cannot exist, neither can this one.
    if k < v and r == k + lam and lam <= 2:
        sym = (v + k + lam, k + lam, lam)
        why = (
            "violates Bruck-Ryser-Chowla"
            if bruck_ryser_chowla(*sym) is False
            else f"does not exist ({KNOWN_NONEXISTENT_BIBDS[sym]})"
            if sym in KNOWN_NONEXISTENT_BIBDS
            else None
        )
        if why is not None:
            out.append(
                (
                    "Hall-Connor (quasi-residual of a nonexistent symmetric design)",
                    f"a ({v},{k},{lam}) design is quasi-residual with lam <= 2, hence the residual of a "
                    f"symmetric {sym} design (Hall & Connor 1954), which {why}",
                )
            )
            return out
    if (v, k, lam) in KNOWN_NONEXISTENT_BIBDS:
        reason = KNOWN_NONEXISTENT_BIBDS[(v, k, lam)]
        out.append((f"known nonexistence ({reason})", f"no ({v},{k},{lam}) design exists"))
    return out


def _validate(v, k, lam) -> tuple[int, int, int]:
    v = check_int("v", v, minimum=2)
    k = check_int("k", k, minimum=2)
    lam = check_int("lam", lam, minimum=1)
    if k > v:
        raise InvalidArgumentError("k", f"must be <= v = {v}, got {k}")
    return v, k, lam


def bibd_necessary_conditions(v: int, k: int, lam: int = 1) -> list[str]:
    """Names of the violated necessary conditions for a 2-(v, k, lam) design (empty if none).

    Checked, in order: ``"divisibility"`` (``(k-1) | lam (v-1)``,
    ``k (k-1) | lam v (v-1)``), ``"Fisher's inequality"`` (``b >= v``),
    ``"Bruck-Ryser-Chowla"`` (symmetric designs), the Hall-Connor embedding of
    quasi-residual designs with lam <= 2 into BRC-excluded symmetric designs,
    and the tabulated :data:`KNOWN_NONEXISTENT_BIBDS` results.  Only the first
    violated condition is reported (later ones presuppose earlier ones).

    >>> bibd_necessary_conditions(43, 7, 1), bibd_necessary_conditions(8, 3, 1)
    (['Bruck-Ryser-Chowla'], ['divisibility'])
    >>> bibd_necessary_conditions(91, 10, 1)
    []
    """
    v, k, lam = _validate(v, k, lam)
    return [name for name, _ in _violations(v, k, lam)]
