"""The registry of message quantizers: one :class:`Quantizer` per name (theory §58.1).

A quantizer maps a worker's coded message ``y ∈ R^w`` to one of ``2^b`` levels per coordinate,
evenly spaced on ``[-s, s]`` with ``s`` the message's *scale* (sent beside it in 32 bits), by
stochastic rounding: a coordinate between the neighbouring levels ``l ≤ v ≤ l + Δ`` becomes
``l + Δ`` with probability ``(v - l)/Δ`` and ``l`` otherwise, independently of every other
coordinate and message.  Quantizers differ only in the scale.  The built-in ones live in the
public modules of this package (each exposes ``QUANTIZERS``) and are registered on first use.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._discovery import declared, public_modules
from ..._validation import check_bool, check_finite_array, check_int
from ...errors import InvalidArgumentError

__all__ = [
    "MAX_BITS",
    "Quantizer",
    "register_quantizer",
    "unregister_quantizer",
    "get_quantizer",
    "quantizers",
    "quantizer_names",
    "as_bits",
]

#: The most bits per coordinate a quantizer takes (``2^b`` levels stay exact in float64 indices).
MAX_BITS = 32

_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def as_bits(bits: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``bits`` (an int or an integer array broadcastable to ``shape``) as an int64 array of ``shape``.

    Every entry must lie in ``1..MAX_BITS``; the error names ``bits``.

    Examples
    --------
    >>> as_bits(3, (2,)).tolist(), as_bits([1, 4], (2,)).tolist()
    ([3, 3], [1, 4])
    """
    if isinstance(bits, (int, np.integer)) and not isinstance(bits, (bool, np.bool_)):
        check_int("bits", bits, minimum=1, maximum=MAX_BITS)
    arr = np.asarray(bits)
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise InvalidArgumentError("bits", f"must be integers in 1..{MAX_BITS}, got {bits!r:.80}")
    if arr.size and (arr.min() < 1 or arr.max() > MAX_BITS):
        raise InvalidArgumentError("bits", f"must be integers in 1..{MAX_BITS}, got {bits!r:.80}")
    try:
        return np.broadcast_to(arr.astype(np.int64), shape).copy()
    except ValueError:
        raise InvalidArgumentError("bits", f"must broadcast to {shape} (one a message), got {arr.shape}") from None


@dataclass(frozen=True)
class Quantizer:
    """Stochastic rounding to ``2^b`` levels on ``[-s, s]``, with the scale ``s`` of :attr:`scale`.

    Attributes
    ----------
    name : str
        Lower-case words joined by ``-``.
    scale : callable
        ``scale(y) -> s``: ``y`` of shape ``(..., w)``, ``s`` of shape ``(...,)`` with
        ``s ≥ max_c |y_c|`` (so every coordinate lies on the grid's range).
    summary : str
        One line for the guide.
    theory : str
        Where the theory states its bound.
    order : int
        Position in :func:`quantizers` (ties by name).

    Examples
    --------
    >>> q = get_quantizer("maxabs")
    >>> y = np.array([[1.0, -0.5, 0.25]])
    >>> q.step(y, 2).tolist()                      # 4 levels on [-1, 1]: spacing 2/3
    [0.6666666666666666]
    >>> bool(np.allclose(q.expectation(y, 2), y))  # unbiased
    True
    """

    name: str
    scale: Callable[[np.ndarray], np.ndarray]
    summary: str
    theory: str = "§58.1"
    order: int = 1000

    def _messages(self, y: Any) -> np.ndarray:
        y = check_finite_array("messages", y)
        if y.ndim < 1:
            raise InvalidArgumentError("messages", "must have at least one axis (the coordinates of a message)")
        return y

    def _scale(self, y: np.ndarray) -> np.ndarray:
        s = np.asarray(self.scale(y), dtype=float)
        if s.shape != y.shape[:-1] or not np.all(s >= np.abs(y).max(axis=-1, initial=0.0)):
            raise InvalidArgumentError(
                "quantizer", f"{self.name!r}: its scale must have shape {y.shape[:-1]} and bound every |y_c|"
            )
        return s

    def step(self, y: Any, bits: Any) -> np.ndarray:
        """The spacing ``Δ = 2 s / (2^b - 1)`` of each message's grid (shape ``y.shape[:-1]``)."""
        y = self._messages(y)
        b = as_bits(bits, y.shape[:-1])
        return 2.0 * self._scale(y) / (2.0**b - 1.0)

    def outcomes(self, y: Any, bits: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lower, upper, prob_up)`` per coordinate: the two values ``Q(y_c)`` can take, and the
        probability of the upper one (shape of ``y``; ``lower == upper`` with probability 0 when the
        coordinate is a level or the message is zero).

        Examples
        --------
        >>> lo, up, pr = get_quantizer("maxabs").outcomes([1.0, 0.0], 1)   # levels -1 and 1
        >>> lo.tolist(), up.tolist(), pr.tolist()
        ([1.0, -1.0], [1.0, 1.0], [0.0, 0.5])
        """
        y = self._messages(y)
        b = as_bits(bits, y.shape[:-1])
        s = self._scale(y)[..., None]
        top = (2.0**b - 1.0)[..., None]  # index of the highest level
        delta = 2.0 * s / top
        safe = np.where(delta > 0, delta, 1.0)
        t = np.clip((y + s) / safe, 0.0, top)  # position on the grid, in steps
        k = np.minimum(np.floor(t), top - 1.0)
        frac = np.where(delta > 0, np.clip(t - k, 0.0, 1.0), 0.0)
        lower = np.where(delta > 0, -s + k * delta, 0.0)
        upper = np.where(delta > 0, lower + delta, 0.0)
        # a coordinate on a level: one outcome (keeps |Q| ≤ s at the top level)
        upper = np.where(frac == 0.0, lower, upper)
        lower = np.where(frac == 1.0, upper, lower)
        frac = np.where(lower == upper, 0.0, frac)
        return lower, upper, frac

    def quantize(self, y: Any, bits: Any, rng: Any) -> np.ndarray:
        """One stochastic rounding of the messages ``y`` (``(..., w)``; ``bits`` one per message).

        ``rng`` is a :class:`numpy.random.Generator` (or a seed): the same seed gives the same values.

        Examples
        --------
        >>> q = get_quantizer("maxabs")
        >>> v = q.quantize([[0.3, -1.0, 0.8]], 3, rng=0)
        >>> bool(np.all(np.isin(np.round(v * 7 + 7), np.arange(15))))   # on the grid k/7·2 - 1
        True
        """
        lower, upper, prob = self.outcomes(y, bits)
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(check_int("rng", rng, minimum=0))
        return np.where(gen.random(prob.shape) < prob, upper, lower)

    def expectation(self, y: Any, bits: Any) -> np.ndarray:
        """``E Q(y)`` coordinate-wise from :meth:`outcomes` (``y`` up to round-off: the rounding is unbiased)."""
        lower, upper, prob = self.outcomes(y, bits)
        return lower + prob * (upper - lower)

    def variance(self, y: Any, bits: Any) -> np.ndarray:
        """``Var Q(y_c) = (v - l)(l + Δ - v) = frac (1 - frac) Δ²`` per coordinate (shape of ``y``).

        Examples
        --------
        >>> get_quantizer("maxabs").variance([1.0, 0.0], 1).tolist()   # 0 is midway between -1 and 1
        [0.0, 1.0]
        """
        lower, upper, prob = self.outcomes(y, bits)
        return prob * (1.0 - prob) * (upper - lower) ** 2

    def variance_bound(self, y: Any, bits: Any) -> np.ndarray:
        """``w s² / (2^b - 1)²`` per message, ``≥ Σ_c Var Q(y_c)`` (theory §58.1, Lemma 58.1)."""
        y = self._messages(y)
        b = as_bits(bits, y.shape[:-1])
        return y.shape[-1] * self._scale(y) ** 2 / (2.0**b - 1.0) ** 2

    def __repr__(self) -> str:
        return f"Quantizer({self.name!r})"


def _check(quantizer: Any) -> Quantizer:
    if not isinstance(quantizer, Quantizer):
        raise InvalidArgumentError(
            "quantizer", f"must be a gcsim.coding.quantizers.Quantizer, got {type(quantizer).__name__}"
        )
    if not isinstance(quantizer.name, str) or not _NAME.fullmatch(quantizer.name):
        raise InvalidArgumentError("quantizer", f"name must be lower-case words joined by '-', got {quantizer.name!r}")
    if not callable(quantizer.scale):
        raise InvalidArgumentError("quantizer", f"{quantizer.name!r}: scale must be callable")
    return quantizer


class _Table:
    """Name → quantizer, the built-ins found in this package's public modules on first use."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.items: dict[str, Quantizer] = {}
        self.builtin: frozenset[str] | None = None  # None until the package has been scanned

    def _scan(self) -> list[Quantizer]:
        package = __package__ or "gcsim.coding.quantizers"
        found = [_check(q) for module in public_modules(package) for q in declared(module, "QUANTIZERS", "quantizers")]
        return sorted(found, key=lambda q: (q.order, q.name))

    def loaded(self) -> dict[str, Quantizer]:
        with self.lock:
            if self.builtin is None:
                found = self._scan()
                names = [q.name for q in found]
                clash = {x for x in names if names.count(x) > 1} | (set(names) & set(self.items))
                if clash:
                    raise InvalidArgumentError("quantizer", f"built-in quantizer names used twice: {sorted(clash)}")
                # user quantizers registered before the first lookup keep their place after the built-ins
                self.items = {q.name: q for q in found} | self.items
                self.builtin = frozenset(names)
            return self.items

    def put(self, quantizer: Quantizer, replace: bool) -> Quantizer:
        items = self.loaded()
        with self.lock:
            taken = "a built-in quantizer" if quantizer.name in (self.builtin or ()) else None
            if taken is None and quantizer.name in items and not replace:
                taken = "already registered (pass replace=True)"
            if taken:
                raise InvalidArgumentError("quantizer", f"{quantizer.name!r} is {taken}")
            items[quantizer.name] = quantizer
        return quantizer

    def remove(self, name: Any) -> None:
        items = self.loaded()
        if not isinstance(name, str):
            raise InvalidArgumentError("name", f"must be a quantizer name, got {name!r}")
        with self.lock:
            if name in (self.builtin or ()):
                raise InvalidArgumentError("name", f"{name!r} is a built-in quantizer and cannot be removed")
            if items.pop(name, None) is None:
                raise InvalidArgumentError("name", f"no quantizer {name!r} is registered")


_TABLE = _Table()


def register_quantizer(quantizer: Quantizer, *, replace: bool = False) -> Quantizer:
    """Add a quantizer to the registry (built-ins cannot be replaced).

    Examples
    --------
    >>> q = register_quantizer(Quantizer("unit", lambda y: np.ones(y.shape[:-1]), "scale 1"))
    >>> "unit" in quantizer_names()
    True
    >>> unregister_quantizer("unit")
    """
    return _TABLE.put(_check(quantizer), check_bool("replace", replace))


def unregister_quantizer(name: str) -> None:
    """Remove a quantizer added by :func:`register_quantizer`."""
    _TABLE.remove(name)


def get_quantizer(name: Any) -> Quantizer:
    """The quantizer registered as ``name`` (a :class:`Quantizer` is returned as it is).

    Examples
    --------
    >>> get_quantizer("norm").name
    'norm'
    """
    if isinstance(name, Quantizer):
        return name
    q = _TABLE.loaded().get(name) if isinstance(name, str) else None
    if q is None:
        raise InvalidArgumentError("quantizer", f"must be one of {quantizer_names()}, got {name!r}")
    return q


def quantizers() -> tuple[Quantizer, ...]:
    """Every registered quantizer, built-ins first."""
    return tuple(_TABLE.loaded().values())


def quantizer_names() -> tuple[str, ...]:
    """The names of :func:`quantizers`.

    Examples
    --------
    >>> quantizer_names()[:2]
    ('maxabs', 'norm')
    """
    return tuple(q.name for q in quantizers())
