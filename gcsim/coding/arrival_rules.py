"""Arrival rules: which transmissions the master uses of one row of delays, and when it decodes.

The rules are listed in :mod:`gcsim.coding.delays`; proofs: ``docs/theory/47_delays.md``.

Examples
--------
>>> arrival_rule("first", s=1).apply([2.0, 1.0, 3.0])
(array([ True,  True, False]), 2.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_real
from ..errors import InvalidArgumentError

__all__ = ["RULES", "ArrivalRule", "arrival_rule"]

RULES = ("first", "deadline", "relative")


@dataclass(frozen=True)
class ArrivalRule:
    """When the master stops waiting, and which transmissions it uses (module docstring).

    Attributes
    ----------
    kind : {"first", "deadline", "relative"}
    value : float or int
        ``s`` (first ``n - s`` arrivals), the deadline ``T >= 0``, or ``μ >= 0``.
    """

    kind: str
    value: Any

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in RULES:
            raise InvalidArgumentError("rule", f"must be one of {RULES}, got {self.kind!r}")
        if self.kind == "first":
            object.__setattr__(self, "value", check_int("s", self.value, minimum=0))
        elif self.kind == "deadline":
            object.__setattr__(self, "value", check_real("deadline", self.value, minimum=0.0))
        else:
            object.__setattr__(self, "value", check_real("mu", self.value, minimum=0.0))

    @property
    def params(self) -> dict:
        """``{"rule": kind, "s" | "deadline" | "mu": value}``."""
        name = {"first": "s", "deadline": "deadline", "relative": "mu"}[self.kind]
        return {"rule": self.kind, name: self.value}

    def describe(self) -> str:
        """One-line description."""
        if self.kind == "first":
            return f"wait for the first n - {self.value} arrivals"
        if self.kind == "deadline":
            return f"use the arrivals up to the deadline {self.value:g}"
        return f"use the arrivals within (1 + {self.value:g}) x the fastest delay"

    def check_n(self, n: int) -> None:
        """Refuse a rule that cannot apply to ``n`` workers (``s > n``)."""
        if self.kind == "first" and self.value > n:
            raise InvalidArgumentError("s", f"must be <= n = {n}, got {self.value}")

    def apply(self, delays: Any) -> tuple[np.ndarray, Any]:
        """Non-straggler masks and decode times of a batch of delays.

        Parameters
        ----------
        delays : array_like, shape (n,) or (count, n)
            Arrival delays (``>= 0``; ``inf`` = never arrives).

        Returns
        -------
        masks : numpy.ndarray of bool, shape (n,) or (count, n)
            True = the worker's transmission is used.
        times : float or numpy.ndarray, shape (count,)
            Time at which the master decodes (``inf`` when the rule waits for a transmission that
            never arrives).

        Examples
        --------
        >>> x = [3.0, 1.0, 2.0, 1.0]
        >>> arrival_rule("first", s=2).apply(x)
        (array([False,  True, False,  True]), 1.0)
        >>> arrival_rule("deadline", deadline=2.5).apply(x)
        (array([False,  True,  True,  True]), 2.5)
        >>> arrival_rule("relative", mu=1.0).apply(x)
        (array([False,  True,  True,  True]), 2.0)
        """
        arr = np.asarray(delays, dtype=float)
        if arr.ndim not in (1, 2) or arr.shape[-1] < 1:
            raise InvalidArgumentError("delays", f"must have shape (n,) or (count, n), got {arr.shape}")
        if np.isnan(arr).any():
            raise InvalidArgumentError("delays", "contains NaN (use inf for 'never arrives')")
        if (arr < 0).any():
            raise InvalidArgumentError("delays", "must be >= 0")
        single = arr.ndim == 1
        D = arr[None, :] if single else arr
        n = D.shape[1]
        self.check_n(n)
        count = D.shape[0]
        if count == 0:
            masks, times = np.zeros((0, n), dtype=bool), np.zeros(0)
        elif self.kind == "first":
            k = n - self.value
            masks = np.zeros(D.shape, dtype=bool)
            if k == 0:
                times = np.zeros(count)
            else:
                # stable sort: equal delays keep the worker-index order (ties by index)
                order = np.argsort(D, axis=1, kind="stable")
                np.put_along_axis(masks, order[:, :k], True, axis=1)
                masks &= np.isfinite(D)
                times = np.take_along_axis(D, order[:, k - 1 : k], axis=1)[:, 0]
        elif self.kind == "deadline":
            masks = D <= self.value
            times = np.minimum(self.value, D.max(axis=1))
        else:
            fastest = D.min(axis=1)
            with np.errstate(invalid="ignore", over="ignore"):
                limit = (1.0 + self.value) * fastest
            masks = (D <= limit[:, None]) & np.isfinite(D)
            times = np.minimum(limit, D.max(axis=1))
        if single:
            return masks[0], float(times[0])
        return masks, times


def arrival_rule(kind: str, **params: Any) -> ArrivalRule:
    """Build an arrival rule: ``arrival_rule("first", s=...)``, ``("deadline", deadline=...)``,
    ``("relative", mu=...)``.

    Examples
    --------
    >>> arrival_rule("relative", mu=0.5).describe()
    'use the arrivals within (1 + 0.5) x the fastest delay'
    >>> arrival_rule("deadline")
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: deadline: rule 'deadline' needs deadline=...
    """
    if not isinstance(kind, str) or kind not in RULES:
        raise InvalidArgumentError("rule", f"must be one of {RULES}, got {kind!r}")
    name = {"first": "s", "deadline": "deadline", "relative": "mu"}[kind]
    if name not in params:
        raise InvalidArgumentError(name, f"rule {kind!r} needs {name}=...")
    value = params.pop(name)
    if params:
        raise InvalidArgumentError("params", f"unknown parameter(s) for rule {kind!r}: {sorted(params)}")
    return ArrivalRule(kind, value)
