"""Delay models that generate stragglers, arrival rules, and the expected time to decode.

A *delay model* draws the time ``X_j >= 0`` at which worker ``j``'s transmission reaches the
master (``inf`` = never).  An *arrival rule* turns one row of delays into a non-straggler mask
(``True`` = the worker's transmission is used, the convention of :mod:`gcsim.coding.stragglers`)
and the time ``D`` at which the master decodes.  Proofs: ``docs/theory/47_delays.md``.

Delay models (build them with :func:`delay_model`; every parameter is a scalar or one value per
worker; workers are independent):

``"shifted-exponential"``  ``X_j = c_j + E_j / λ_j``, ``E_j ~ Exp(1)``: ``shift`` ``c_j >= 0``,
                           ``rate`` ``λ_j > 0``.
``"pareto"``               ``P(X_j > t) = (σ_j / t)^{α_j}`` for ``t >= σ_j``: ``scale`` ``σ_j > 0``,
                           ``shape`` ``α_j > 0`` (heavy tailed: ``E X_j`` is finite iff ``α_j > 1``).
``"bimodal"``              with probability ``p_slow`` the worker is slow: a mixture of two shifted
                           exponentials (``fast_shift``, ``fast_rate``) and (``slow_shift``, ``slow_rate``).
``"trace"``                replay of a measured ``workers x iterations`` delay matrix (``inf`` = never
                           arrives; the layout of :class:`gcsim.coding.stragglers.TraceModel`).

Arrival rules (:func:`arrival_rule`), for one row ``x`` of delays, ``x_(k)`` its ``k``-th smallest:

``"first"``     ``s``: use the first ``n - s`` arrivals (ties broken by worker index); the master
                decodes at ``D = x_(n-s)`` (``D = 0`` when ``s = n``).
``"deadline"``  ``deadline`` ``T >= 0``: use every ``j`` with ``x_j <= T``; the master decodes at
                ``D = min(T, x_(n))`` (it stops waiting once everyone has arrived).
``"relative"``  ``mu`` ``μ >= 0``: use every ``j`` with ``x_j <= (1 + μ) x_(1)``; the master decodes
                at ``D = min((1 + μ) x_(1), x_(n))``.

:class:`DelayStragglerModel` combines a delay model and a rule into a
:class:`~gcsim.coding.straggler_base.StragglerModel`, so it is accepted wherever gcsim takes a straggler
model (``expected_error(scheme, model)`` evaluates it by Monte Carlo).

:func:`expected_decode_time` computes ``E[D]``: by a closed form where one exists (i.i.d. shifted
exponential under ``"first"`` and ``"deadline"``, i.i.d. Pareto under ``"first"``), otherwise by
numerical integration of the survival function ``E[D] = ∫_0^∞ P(D > t) dt`` (``scipy.integrate.quad``;
the survival function of each rule is an explicit function of the workers' CDFs), exactly as an
average for a trace, and by Monte Carlo with a 95% interval on request.

Examples
--------
>>> dm = delay_model("shifted-exponential", 4, shift=1.0, rate=2.0)
>>> rule = arrival_rule("first", s=1)
>>> masks, times = rule.apply(dm.sample_delays(3, seed=0))
>>> masks.shape, times.shape, (~masks).sum(axis=1).tolist()
((3, 4), (3,), [1, 1, 1])
>>> res = expected_decode_time(dm, rule)      # 1 + (H_4 - H_1) / 2
>>> res.method, round(res.mean, 12)
('exact', 1.541666666667)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import limits
from .._stats import t_interval
from .._validation import check_bool, check_dense_size, check_int, check_probability, check_real
from ..errors import InvalidArgumentError, SizeLimitError, VerificationError
from ..limits import array_shape, check_entries, check_npy_file
from .straggler_base import StragglerModel, rng_from_seed

__all__ = [
    "DELAY_KINDS",
    "RULES",
    "QUAD_EPSREL",
    "DelayModel",
    "ShiftedExponentialDelays",
    "ParetoDelays",
    "BimodalDelays",
    "TraceDelays",
    "delay_model",
    "ArrivalRule",
    "arrival_rule",
    "DelayStragglerModel",
    "DelayParams",
    "DecodeTime",
    "expected_decode_time",
    "load_trace",
]

DELAY_KINDS = ("shifted-exponential", "pareto", "bimodal", "trace")
RULES = ("first", "deadline", "relative")

#: Relative accuracy requested from ``scipy.integrate.quad`` on every piece of the survival integral.
QUAD_EPSREL = 1e-10

# Monte Carlo draws are made in chunks of at most this many delay entries (memory bound).
_MC_CHUNK_ENTRIES = 1 << 20


def _per_worker(name: str, value: Any, n: int, *, minimum: float, strict: bool) -> np.ndarray:
    """A finite scalar or length-``n`` parameter as a read-only ``(n,)`` float array, or raise naming ``name``."""
    try:
        scalar = np.isscalar(value) or np.ndim(value) == 0
    except (TypeError, ValueError):  # a ragged nested list: not a scalar, refused by the array read below
        scalar = False
    if scalar:
        val = check_real(
            name, value.item() if isinstance(value, np.ndarray) else value, minimum=minimum, strict_min=strict
        )
        out = np.full(n, val)
    else:
        try:
            out = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidArgumentError(name, f"must be a real number or {n} real numbers, got {value!r}") from None
        if out.shape != (n,):
            raise InvalidArgumentError(name, f"must be a scalar or have length n = {n}, got shape {out.shape}")
        if not np.all(np.isfinite(out)):
            raise InvalidArgumentError(name, "every entry must be finite")
        bad = out <= minimum if strict else out < minimum
        if bad.any():
            op = ">" if strict else ">="
            raise InvalidArgumentError(
                name,
                f"every entry must be {op} {minimum:g}; worker {int(np.argmax(bad))} has {out[int(np.argmax(bad))]:g}",
            )
    out.setflags(write=False)
    return out


def _scalar_or_list(a: np.ndarray) -> Any:
    return float(a[0]) if a.size and np.all(a == a[0]) else a.tolist()


# ----------------------------------------------------------------------------------------------
# delay models
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DelayModel:
    """Base class: independent per-worker arrival delays ``X_j >= 0``.

    ``sample_delays(count, seed)`` returns a float array ``(count, n)``; the same seed gives the same
    delays.  Parametric models also give the per-worker CDF ``F_j(t) = P(X_j <= t)`` and survival
    function ``S_j(t) = 1 - F_j(t)`` (both computed without cancellation) used by
    :func:`expected_decode_time`.
    """

    n: int
    kind: ClassVar[str] = "delay"

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        # every model keeps per-worker arrays of n entries: refuse before allocating them
        check_entries("n", (self.n,), "the per-worker delay parameters (one per worker)")

    # -- interface ----------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """Parameters of the model (for manifests): scalars when every worker shares them."""
        return {"n": self.n}

    def describe(self) -> str:
        """One-line human description."""
        return f"{self.kind} delays on n={self.n} workers"

    def sample_delays(self, count: int, seed: int = 0) -> np.ndarray:
        """``count`` i.i.d. rows of delays, ``(count, n)`` float (rows independent, workers independent)."""
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} rows of delays")
        return self._draw(rng_from_seed(seed), count)

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- distribution (parametric models) -----------------------------------------------------
    def _param_rows(self) -> np.ndarray:  # pragma: no cover - abstract
        """Per-worker parameters, one row per worker: workers with equal rows are identical."""
        raise NotImplementedError

    def _cdf_sf(self, t: float, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        """``(F(t), S(t))`` for each parameter row of ``rows``."""
        raise NotImplementedError

    def _support_points(self, rows: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Points where some ``F_j`` is not smooth (lower ends of the supports)."""
        raise NotImplementedError

    def _length_scale(self, rows: np.ndarray) -> float:  # pragma: no cover - abstract
        """A characteristic spread of the delays (for placing integration breakpoints)."""
        raise NotImplementedError

    @property
    def homogeneous(self) -> bool:
        """True when every worker has the same delay distribution."""
        rows = self._param_rows()
        return bool(np.all(rows == rows[0]))

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct parameter rows and how many workers have each."""
        rows = self._param_rows()
        if np.all(rows == rows[0]):  # i.i.d. workers: O(n), no sort of n rows
            return rows[:1].copy(), np.array([self.n])
        rows, counts = np.unique(rows, axis=0, return_counts=True)
        return rows, counts

    def cdf(self, t: Any) -> np.ndarray:
        """``F_j(t) = P(X_j <= t)`` for every worker: shape ``(n,)`` (scalar ``t``) or ``t.shape + (n,)``."""
        tt = np.asarray(t, dtype=float)
        rows = self._param_rows()
        out = np.array([self._cdf_sf(float(x), rows)[0] for x in tt.ravel()]).reshape(tt.shape + (self.n,))
        return out

    def __repr__(self) -> str:
        """The parameters, a per-worker array shown by its one value (i.i.d.) or its shape and range.

        >>> delay_model("shifted-exponential", 1000, shift=1.0, rate=[1.0, 2.0] * 500)
        ShiftedExponentialDelays(n=1000, shift=1.0, rate=<(1000,) from 1 to 2>)
        """
        return f"{type(self).__name__}({', '.join(f'{k}={_short(v)}' for k, v in self.params.items())})"


def _short(value: Any) -> str:
    """``repr`` of a scalar; a per-worker array (or list) as its one value, or ``<shape from min to max>``."""
    if isinstance(value, (list, tuple)) and len(value) > 8:
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        return repr(value)
    if value.size and value.dtype.kind in "biuf" and np.all(value == value.flat[0]):
        return repr(value.flat[0].item())
    if value.size and value.dtype.kind in "biuf":
        return f"<{value.shape} from {value.min():.4g} to {value.max():.4g}>"
    return f"<array {value.shape}>"


def _exp_cdf_sf(t: float, shift: np.ndarray, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = np.maximum(t - shift, 0.0) * rate
    return -np.expm1(-z), np.exp(-z)


@dataclass(frozen=True, eq=False, repr=False)
class ShiftedExponentialDelays(DelayModel):
    """``X_j = shift_j + E_j / rate_j`` with ``E_j ~ Exp(1)`` i.i.d. (``shift >= 0``, ``rate > 0``).

    Examples
    --------
    >>> dm = ShiftedExponentialDelays(3, shift=0.5, rate=[1.0, 1.0, 4.0])
    >>> dm.sample_delays(2, seed=1).shape, dm.homogeneous
    ((2, 3), False)
    >>> ShiftedExponentialDelays(3, shift=0.5, rate=0.0)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: rate: must be > 0.0, got 0.0
    """

    shift: Any = 0.0
    rate: Any = 1.0
    kind: ClassVar[str] = "shifted-exponential"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shift", _per_worker("shift", self.shift, self.n, minimum=0.0, strict=False))
        object.__setattr__(self, "rate", _per_worker("rate", self.rate, self.n, minimum=0.0, strict=True))

    @property
    def params(self) -> dict:
        return {"n": self.n, "shift": _scalar_or_list(self.shift), "rate": _scalar_or_list(self.rate)}

    def describe(self) -> str:
        p = self.params
        return f"shifted exponential delays: shift {p['shift']}, rate {p['rate']}, n={self.n} workers"

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return self.shift[None, :] + rng.standard_exponential((count, self.n)) / self.rate[None, :]

    def _param_rows(self) -> np.ndarray:
        return np.column_stack([self.shift, self.rate])

    def _cdf_sf(self, t, rows):
        return _exp_cdf_sf(t, rows[:, 0], rows[:, 1])

    def _support_points(self, rows):
        return rows[:, 0]

    def _length_scale(self, rows):
        return float(np.max(1.0 / rows[:, 1]))


@dataclass(frozen=True, eq=False, repr=False)
class ParetoDelays(DelayModel):
    """Pareto delays: ``P(X_j > t) = (scale_j / t)^{shape_j}`` for ``t >= scale_j`` (``scale, shape > 0``).

    Drawn as ``X_j = scale_j U^{-1/shape_j}`` with ``U`` uniform on ``(0, 1]``.  ``E X_j`` is finite
    iff ``shape_j > 1``; order statistics have finite means under weaker conditions (see
    :func:`expected_decode_time`).

    Examples
    --------
    >>> dm = ParetoDelays(5, scale=1.0, shape=3.0)
    >>> bool((dm.sample_delays(100, seed=0) >= 1.0).all())
    True
    """

    scale: Any = 1.0
    shape: Any = 2.0
    kind: ClassVar[str] = "pareto"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "scale", _per_worker("scale", self.scale, self.n, minimum=0.0, strict=True))
        object.__setattr__(self, "shape", _per_worker("shape", self.shape, self.n, minimum=0.0, strict=True))

    @property
    def params(self) -> dict:
        return {"n": self.n, "scale": _scalar_or_list(self.scale), "shape": _scalar_or_list(self.shape)}

    def describe(self) -> str:
        p = self.params
        return f"Pareto delays: scale {p['scale']}, shape {p['shape']}, n={self.n} workers"

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        u = 1.0 - rng.random((count, self.n))  # in (0, 1]: finite delays
        return self.scale[None, :] * u ** (-1.0 / self.shape[None, :])

    def _param_rows(self) -> np.ndarray:
        return np.column_stack([self.scale, self.shape])

    def _cdf_sf(self, t, rows):
        scale, shape = rows[:, 0], rows[:, 1]
        with np.errstate(divide="ignore"):
            logs = np.where(t > scale, shape * np.log(scale / max(t, np.finfo(float).tiny)), 0.0)
        return -np.expm1(logs), np.exp(logs)

    def _support_points(self, rows):
        return rows[:, 0]

    def _length_scale(self, rows):
        return float(np.max(rows[:, 0]))


@dataclass(frozen=True, eq=False, repr=False)
class BimodalDelays(DelayModel):
    """Fast/slow mixture: with probability ``p_slow`` a worker's delay is ``slow_shift + Exp(slow_rate)``,
    otherwise ``fast_shift + Exp(fast_rate)`` (independently per worker and per row).

    Examples
    --------
    >>> dm = BimodalDelays(4, p_slow=0.25, fast_shift=1.0, fast_rate=10.0, slow_shift=5.0, slow_rate=1.0)
    >>> dm.sample_delays(2, seed=0).shape
    (2, 4)
    """

    p_slow: Any = 0.1
    fast_shift: Any = 0.0
    fast_rate: Any = 1.0
    slow_shift: Any = 0.0
    slow_rate: Any = 0.1
    kind: ClassVar[str] = "bimodal"

    def __post_init__(self) -> None:
        super().__post_init__()
        p = self.p_slow
        if np.ndim(p) == 0:
            val = check_probability("p_slow", p.item() if isinstance(p, np.ndarray) else p, allow_one=True)
            arr = np.full(self.n, val)
        else:
            arr = _per_worker("p_slow", p, self.n, minimum=0.0, strict=False)
            if np.any(arr > 1.0):
                raise InvalidArgumentError("p_slow", "every entry must lie in [0, 1]")
            arr = arr.copy()
        arr.setflags(write=False)
        object.__setattr__(self, "p_slow", arr)
        for name in ("fast_shift", "slow_shift"):
            object.__setattr__(self, name, _per_worker(name, getattr(self, name), self.n, minimum=0.0, strict=False))
        for name in ("fast_rate", "slow_rate"):
            object.__setattr__(self, name, _per_worker(name, getattr(self, name), self.n, minimum=0.0, strict=True))

    @property
    def params(self) -> dict:
        return {
            "n": self.n,
            **{
                k: _scalar_or_list(getattr(self, k))
                for k in ("p_slow", "fast_shift", "fast_rate", "slow_shift", "slow_rate")
            },
        }

    def describe(self) -> str:
        p = self.params
        return (
            f"bimodal delays: slow with probability {p['p_slow']} (shift {p['slow_shift']}, rate "
            f"{p['slow_rate']}), else fast (shift {p['fast_shift']}, rate {p['fast_rate']}), n={self.n} workers"
        )

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        slow = rng.random((count, self.n)) < self.p_slow[None, :]
        e = rng.standard_exponential((count, self.n))
        shift = np.where(slow, self.slow_shift[None, :], self.fast_shift[None, :])
        rate = np.where(slow, self.slow_rate[None, :], self.fast_rate[None, :])
        return shift + e / rate

    def _param_rows(self) -> np.ndarray:
        return np.column_stack([self.p_slow, self.fast_shift, self.fast_rate, self.slow_shift, self.slow_rate])

    def _cdf_sf(self, t, rows):
        p = rows[:, 0]
        Ff, Sf = _exp_cdf_sf(t, rows[:, 1], rows[:, 2])
        Fs, Ss = _exp_cdf_sf(t, rows[:, 3], rows[:, 4])
        return (1.0 - p) * Ff + p * Fs, (1.0 - p) * Sf + p * Ss

    def _support_points(self, rows):
        return np.concatenate([rows[:, 1], rows[:, 3]])

    def _length_scale(self, rows):
        return float(max(np.max(1.0 / rows[:, 2]), np.max(1.0 / rows[:, 4])))


@dataclass(frozen=True, eq=False, repr=False)
class TraceDelays(DelayModel):
    """Replay of a measured ``workers x iterations`` delay matrix (``inf`` = never arrives).

    ``sample_delays(count, seed)`` returns ``count`` consecutive iterations starting at iteration
    ``seed % iterations`` (cyclic replay), transposed to ``(count, n)``, as
    :class:`gcsim.coding.stragglers.TraceModel` does.  Delays must be ``>= 0`` (NaN is refused).

    Examples
    --------
    >>> tr = TraceDelays(3, [[1.0, 5.0], [2.0, 1.0], [3.0, np.inf]])
    >>> tr.sample_delays(3, seed=1).tolist()
    [[5.0, 1.0, inf], [1.0, 2.0, 3.0], [5.0, 1.0, inf]]
    >>> tr.cdf(2.0).tolist()
    [0.5, 1.0, 0.0]
    """

    trace: Any = None
    kind: ClassVar[str] = "trace"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.trace is None:
            raise InvalidArgumentError("delays", "the trace model needs delays=<workers x iterations matrix>")
        # logical size first: a zero-stride view counts every entry (the copy below would)
        check_entries("delays", array_shape(self.trace), "a trace of delays (workers x iterations)")
        try:
            is_complex = np.iscomplexobj(self.trace)  # reads the trace as an array: a ragged list raises
        except (TypeError, ValueError):
            raise InvalidArgumentError("delays", "must be a numeric workers x iterations matrix") from None
        if is_complex:  # the cast below would drop the imaginary part (numpy only warns)
            raise InvalidArgumentError("delays", "must be real numbers, got a complex trace")
        try:
            arr = np.array(self.trace, dtype=float)
        except (TypeError, ValueError):
            raise InvalidArgumentError("delays", "must be a numeric workers x iterations matrix") from None
        if arr.ndim != 2 or arr.shape[1] < 1:
            raise InvalidArgumentError(
                "delays",
                f"must be a 2-D workers x iterations matrix with at least one iteration, got shape {arr.shape}",
            )
        if arr.shape[0] != self.n:
            raise InvalidArgumentError("delays", f"must have n = {self.n} rows (workers), got {arr.shape[0]}")
        if np.isnan(arr).any():
            raise InvalidArgumentError("delays", "contains NaN (use inf for 'never arrives')")
        if (arr < 0).any():
            w, it = np.argwhere(arr < 0)[0]
            raise InvalidArgumentError(
                "delays",
                f"must be >= 0 (a delay is a time after the iteration starts); "
                f"worker {w} at iteration {it} has {arr[w, it]:g}",
            )
        arr.setflags(write=False)
        object.__setattr__(self, "trace", arr)

    @property
    def iterations(self) -> int:
        """Number of iterations recorded."""
        return int(self.trace.shape[1])

    @property
    def params(self) -> dict:
        return {"n": self.n, "iterations": self.iterations}

    def describe(self) -> str:
        return f"trace replay: {self.iterations} iterations of n={self.n} workers"

    def sample_delays(self, count: int, seed: int = 0) -> np.ndarray:
        count = check_int("count", count, minimum=0)
        seed = check_int("seed", seed, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} rows of delays")
        idx = (seed + np.arange(count)) % self.iterations
        return self.trace.T[idx]

    def rows(self) -> np.ndarray:
        """Every iteration once, ``(iterations, n)``."""
        return self.trace.T.copy()

    def cdf(self, t: Any) -> np.ndarray:
        """Empirical CDF of each worker: the fraction of iterations with delay ``<= t``."""
        tt = np.asarray(t, dtype=float)
        return (self.trace[None, :, :] <= tt.reshape(-1, 1, 1)).mean(axis=2).reshape(tt.shape + (self.n,))

    @property
    def homogeneous(self) -> bool:
        return False


def delay_model(kind: str, n: int | None = None, **params: Any) -> DelayModel:
    """Build a delay model.

    Parameters
    ----------
    kind : {"shifted-exponential", "pareto", "bimodal", "trace"}
    n : int
        Number of workers (for ``"trace"`` it may be omitted: the rows of ``delays``).
    **params
        ``shift``, ``rate`` (shifted-exponential); ``scale``, ``shape`` (pareto); ``p_slow``,
        ``fast_shift``, ``fast_rate``, ``slow_shift``, ``slow_rate`` (bimodal); ``delays``
        (trace, ``workers x iterations``).  Scalars, or one value per worker.

    Examples
    --------
    >>> delay_model("pareto", 10, scale=1.0, shape=2.5).describe()
    'Pareto delays: scale 1.0, shape 2.5, n=10 workers'
    >>> delay_model("pareto", 10, scale=1.0)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: shape: kind 'pareto' needs shape=...
    """
    if not isinstance(kind, str) or kind not in DELAY_KINDS:
        raise InvalidArgumentError("kind", f"must be one of {DELAY_KINDS}, got {kind!r}")
    params = dict(params)

    def need(name: str) -> Any:
        if name not in params:
            raise InvalidArgumentError(name, f"kind {kind!r} needs {name}=...")
        return params.pop(name)

    if kind == "trace":
        delays = need("delays")
        if n is None:
            shape = array_shape(delays)  # no copy: the model checks the size, then converts
            if shape is None:
                raise InvalidArgumentError("delays", "must be a numeric workers x iterations matrix")
            check_entries("delays", shape, "a trace of delays (workers x iterations)")
            n = shape[0] if len(shape) >= 1 and shape[0] >= 1 else 1
        model: DelayModel = TraceDelays(n, delays)
    else:
        if n is None:
            raise InvalidArgumentError("n", f"kind {kind!r} needs the number of workers n")
        if kind == "shifted-exponential":
            model = ShiftedExponentialDelays(n, shift=params.pop("shift", 0.0), rate=need("rate"))
        elif kind == "pareto":
            model = ParetoDelays(n, scale=need("scale"), shape=need("shape"))
        else:
            model = BimodalDelays(
                n,
                p_slow=need("p_slow"),
                fast_shift=params.pop("fast_shift", 0.0),
                fast_rate=need("fast_rate"),
                slow_shift=params.pop("slow_shift", 0.0),
                slow_rate=need("slow_rate"),
            )
    if params:
        raise InvalidArgumentError("params", f"unknown parameter(s) for kind {kind!r}: {sorted(params)}")
    return model


# ----------------------------------------------------------------------------------------------
# arrival rules
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# straggler model
# ----------------------------------------------------------------------------------------------


class DelayParams(NamedTuple):
    """Parameters of :class:`DelayStragglerModel`: ``delays`` = the delay model's kind and
    parameters, ``rule`` = the arrival rule's (``{"rule": kind, "s" | "deadline" | "mu": value}``)."""

    n: int
    delays: dict
    rule: dict


class DelayStragglerModel(StragglerModel):
    """Stragglers generated by a delay model and an arrival rule (a :class:`StragglerModel`).

    ``sample(count, seed)`` draws ``count`` rows of delays with ``seed`` and returns the rule's
    non-straggler masks (True = used); :meth:`sample_with_times` also returns the decode times.
    ``expected_error(scheme, model)`` evaluates the model by Monte Carlo, and a trace of delays
    exactly: the average over its recorded iterations.

    Examples
    --------
    >>> model = DelayStragglerModel(delay_model("pareto", 6, scale=1.0, shape=2.0), arrival_rule("first", s=2))
    >>> model.sample(3, seed=0).sum(axis=1).tolist()
    [4, 4, 4]
    >>> model.describe()
    'Pareto delays: scale 1.0, shape 2.0, n=6 workers; wait for the first n - 2 arrivals'
    """

    model_kind: ClassVar[str] = "delay"

    def __init__(self, delays: DelayModel, rule: ArrivalRule):
        if not isinstance(delays, DelayModel):
            raise InvalidArgumentError("delays", f"must be a DelayModel (see delay_model), got {type(delays).__name__}")
        if not isinstance(rule, ArrivalRule):
            raise InvalidArgumentError("rule", f"must be an ArrivalRule (see arrival_rule), got {type(rule).__name__}")
        rule.check_n(delays.n)
        super().__init__(delays.n)
        self.delays = delays
        self.rule = rule

    @property
    def params(self) -> DelayParams:
        return DelayParams(self.n, {"kind": self.delays.kind, **self.delays.params}, self.rule.params)

    def to_arrays(self) -> dict[str, np.ndarray]:
        # a trace of delays is an array; the parametric models are given by their scalars
        return {"trace": self.delays.trace} if isinstance(self.delays, TraceDelays) else {}

    @classmethod
    def _rebuild(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> DelayStragglerModel:
        params = dict(fields["delays"])
        kind = params.pop("kind")
        params.pop("n", None)
        if kind == "trace":
            params = {"delays": arrays["trace"]}
        rule = dict(fields["rule"])
        return cls(delay_model(kind, fields["n"], **params), arrival_rule(rule.pop("rule"), **rule))

    def _verify(self) -> None:
        if self.delays.n != self.n:
            raise VerificationError(f"DelayStragglerModel: the delay model has n = {self.delays.n}, not {self.n}")
        self.rule.check_n(self.n)

    def sample_with_times(self, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(masks (count, n), decode times (count,))`` from ``count`` rows of delays."""
        return self.rule.apply(self.delays.sample_delays(count, seed))

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        return self.sample_with_times(count, seed)[0]

    def expected_time(self, **kwargs: Any) -> DecodeTime:
        """:func:`expected_decode_time` of this model's delays and rule."""
        return expected_decode_time(self.delays, self.rule, **kwargs)

    def describe(self) -> str:
        return f"{self.delays.describe()}; {self.rule.describe()}"

    def __repr__(self) -> str:
        return f"DelayStragglerModel({self.delays!r}, {self.rule!r})"


# ----------------------------------------------------------------------------------------------
# expected time to decode
# ----------------------------------------------------------------------------------------------


@dataclass
class DecodeTime:
    """Expected time at which the master decodes, ``E[D]``.

    Attributes
    ----------
    mean : float
        ``E[D]`` (``inf`` when it is infinite; ``reason`` says why).
    ci : tuple of float
        Exact: ``(mean, mean)``; quadrature: ``mean ± abserr``; Monte Carlo: 95% Student interval.
    method : str
        ``"exact"``, ``"quad"``, ``"trace average over <I> iterations"`` or ``"monte-carlo n=<draws>"``.
    abserr : float
        Quadrature error estimate (0 otherwise).
    stderr : float
        Monte Carlo standard error (0 otherwise).
    count : int
        Monte Carlo draws or trace iterations (0 for formulas).
    reason : str
        Why the mean is infinite, or the closed form used.
    """

    mean: float
    ci: tuple
    method: str
    abserr: float = 0.0
    stderr: float = 0.0
    count: int = 0
    reason: str = ""
    values: np.ndarray | None = field(default=None, repr=False)


_METHODS = ("auto", "exact", "quad", "monte-carlo")


def _infinite_reason(model: DelayModel, rule: ArrivalRule) -> str:
    """Why ``E[D] = inf`` (empty when it is finite); only heavy (Pareto) tails can make it infinite.

    ``P(X_(k) > t)`` decays like ``t^{-(sum of the n-k+1 smallest shapes)}`` and the relative rule
    satisfies ``X_(1) <= D <= (1+μ) X_(1)`` with ``P(X_(1) > t) = Π_j (σ_j/t)^{α_j}`` for large ``t``
    (docs/theory/47_delays.md, Proposition 6).
    """
    if not isinstance(model, ParetoDelays) or rule.kind == "deadline":
        return ""
    shapes = np.sort(model.shape)
    if rule.kind == "first":
        k = model.n - rule.value
        if k == 0:
            return ""
        j = model.n - k + 1
        tail = float(np.sum(shapes[:j]))
        what = "the smallest shape" if j == 1 else f"the sum of the {j} smallest shapes"
    else:
        tail = float(np.sum(shapes))
        what = "the sum of all shapes"
    if tail <= 1.0:
        return f"E[D] is infinite: P(D > t) decays like t^-{tail:g} ({what}), not faster than 1/t"
    return ""


def _exact(model: DelayModel, rule: ArrivalRule) -> tuple[float, str] | None:
    """Closed forms (docs/theory/47_delays.md, Theorems 3-5); None where there is none."""
    n = model.n
    if not model.homogeneous:
        return None
    if isinstance(model, ShiftedExponentialDelays):
        c, lam = float(model.shift[0]), float(model.rate[0])
        if rule.kind == "first":
            k = n - rule.value
            if k == 0:
                return 0.0, "no arrival needed (s = n)"
            # Rényi: E X_(k) = c + (H_n - H_{n-k}) / λ; sum of positive terms, largest last
            return c + float(
                np.sum(1.0 / np.arange(n, n - k, -1, dtype=float)[::-1])
            ) / lam, "shift + (H_n - H_(n-k)) / rate"
        if rule.kind == "deadline":
            T = rule.value
            if T <= c:
                return T, "deadline before the shift"
            # E min(T, X_(n)) = c + (1/λ) Σ_{i=1}^n V^i / i,  V = 1 - e^{-λ(T-c)}
            x = lam * (T - c)
            # log V without cancellation on either side of x = ln 2
            logV = math.log(-math.expm1(-x)) if x < math.log(2.0) else math.log1p(-math.exp(-x))
            i = np.arange(1, n + 1, dtype=float)
            return c + float(np.sum(np.exp(i * logV) / i)) / lam, "shift + (1/rate) Σ_i V^i / i"
        return None
    if isinstance(model, ParetoDelays) and rule.kind == "first":
        k = n - rule.value
        if k == 0:
            return 0.0, "no arrival needed (s = n)"
        sigma, alpha = float(model.scale[0]), float(model.shape[0])
        j = n - k + 1
        beta = 1.0 / alpha
        # E X_(k) = σ Π_{i=j}^{n} i / (i - 1/α), j = n - k + 1 (finite iff j > 1/α)
        i = np.arange(j, n + 1, dtype=float)
        return sigma * math.exp(-float(np.sum(np.log1p(-beta / i)))), "scale Π_(i=n-k+1)^n i / (i - 1/shape)"
    return None


def _survival(model: DelayModel, rule: ArrivalRule) -> Callable[[float], float]:
    """``t -> P(D > t)`` for independent workers (docs/theory/47_delays.md, Lemma 2)."""
    from scipy import special, stats

    rows, counts = model._groups()
    n = model.n
    if rule.kind == "first":
        k = n - rule.value
        if k == 0:  # no arrival needed: D = 0
            return lambda t: 0.0

        def sf(t: float) -> float:
            F, S = model._cdf_sf(t, rows)
            if rows.shape[0] == 1:
                # i.i.d.: the number of late workers M = n - N(t) ~ Binomial(n, S(t)), and
                # P(N(t) < k) = P(M > n - k); betainc on S (not 1 - F) keeps tiny tails accurate
                return float(stats.binom.sf(n - k, n, S[0]))
            # independent groups: P(N(t) = i), i < k, by adding one group at a time (a single worker:
            # p_i <- p_i S + p_{i-1} F; a group of c: convolution with its binomial pmf, each term
            # exp(log C(c, i) + i log F + (c - i) log S)); all terms >= 0, no 1 - F cancellation
            pmf = np.zeros(k)
            pmf[0] = 1.0
            top = 0  # pmf[top + 1:] is still zero
            with np.errstate(divide="ignore"):
                logF, logS = np.log(F), np.log(S)
            for Fg, Sg, lf, ls, c in zip(F, S, logF, logS, counts, strict=True):
                c = int(c)
                if c == 1:
                    hi = min(top + 1, k - 1)
                    pmf[1 : hi + 1] = pmf[1 : hi + 1] * Sg + pmf[:hi] * Fg
                    pmf[0] *= Sg
                else:
                    i = np.arange(min(c, k - 1) + 1, dtype=float)
                    logc = special.gammaln(c + 1) - special.gammaln(i + 1) - special.gammaln(c - i + 1)
                    with np.errstate(invalid="ignore"):
                        terms = logc + np.where(i > 0, i * lf, 0.0) + np.where(c - i > 0, (c - i) * ls, 0.0)
                    pmf = np.convolve(pmf[: top + 1], np.exp(terms))[:k]
                    pmf = np.concatenate([pmf, np.zeros(k - pmf.size)])
                    hi = min(top + c, k - 1)
                top = hi
            return float(min(1.0, pmf.sum()))

        return sf
    if rule.kind == "deadline":
        T = rule.value

        def sf(t: float) -> float:
            if t >= T:
                return 0.0
            F, _ = model._cdf_sf(t, rows)
            with np.errstate(divide="ignore"):
                logall = float(np.dot(counts, np.log(F)))
            return float(-math.expm1(logall)) if logall > -np.inf else 1.0

        return sf
    mu = rule.value

    def sf_relative(t: float) -> float:
        a = t / (1.0 + mu)
        _, Sa = model._cdf_sf(a, rows)
        _, St = model._cdf_sf(t, rows)
        with np.errstate(divide="ignore"):
            first = float(np.dot(counts, np.log(Sa)))  # P(X_(1) > a)
            inside = float(np.dot(counts, np.log(np.maximum(Sa - St, 0.0))))  # P(all X_j in (a, t])
        return max(0.0, math.exp(first) - math.exp(inside)) if first > -np.inf else 0.0

    return sf_relative


def _quad_terms(model: DelayModel, rule: ArrivalRule) -> int:
    """Work of one evaluation of ``P(D > t)`` in the units of :data:`gcsim.limits.MAX_QUAD_TERMS`.

    Under ``"first"`` the pmf of the number of arrivals (``k`` terms) is built group by group: a
    group of ``c`` workers costs a convolution of ``k x min(c, k)`` terms and a step in Python
    (5,000 terms); i.i.d. workers are one binomial tail.  The other rules cost 500 per group.
    """
    _, counts = model._groups()
    groups = int(counts.size)
    if rule.kind != "first":
        return 500 * groups
    k = model.n - int(rule.value)
    if groups == 1 or k == 0:
        return 0
    return int(sum(k * min(int(c), k) for c in counts.tolist())) + 5000 * groups


def _check_quad_size(model: DelayModel, rule: ArrivalRule) -> None:
    """Refuse, before integrating, a survival function beyond :data:`gcsim.limits.MAX_QUAD_TERMS`."""
    terms = _quad_terms(model, rule)
    if terms > limits.MAX_QUAD_TERMS:
        groups = int(model._groups()[1].size)
        raise SizeLimitError(
            "method",
            f"quadrature of E[D] for {groups:,} distinct worker distributions under the {rule.kind!r} rule costs "
            f"{terms:,} terms per evaluation of P(D > t) (a few hundred evaluations), over gcsim's limit of "
            f"{limits.MAX_QUAD_TERMS:,} (gcsim.limits.MAX_QUAD_TERMS; raise it there to wait longer); "
            "use method='monte-carlo'",
            requested=terms,
            limit=limits.MAX_QUAD_TERMS,
            limit_name="MAX_QUAD_TERMS",
        )


def _quad(model: DelayModel, rule: ArrivalRule) -> tuple[float, float, str]:
    """``∫_0^∞ P(D > t) dt`` piecewise: breaks at the support ends, geometric steps, then to ∞.

    Returns ``(value, abserr, note)``; ``note`` repeats any warning of ``quad`` (accuracy not reached).
    Pieces are integrated left to right; once part of the integral is known, each piece only needs
    an absolute accuracy of ``QUAD_EPSREL / 10`` of it (tiny tail pieces need no relative accuracy).
    """
    import warnings

    from scipy import integrate

    sf = _survival(model, rule)
    rows, _ = model._groups()
    kinks = np.unique(model._support_points(rows))
    if kinks.size > 64:  # many distinct workers: 64 quantiles of the kinks (quad adapts to the rest)
        kinks = np.unique(np.quantile(kinks, np.linspace(0.0, 1.0, 64)))
    pts = [0.0, *map(float, kinks)]
    if rule.kind == "relative":
        pts += [(1.0 + rule.value) * p for p in pts]
    upper = rule.value if rule.kind == "deadline" else np.inf
    t0 = max(pts) + model._length_scale(rows)  # beyond every kink, one spread further
    pts = sorted({p for p in pts + [t0] if p < upper})
    pts.append(float(upper) if np.isfinite(upper) else t0)
    # (integrand, a, b): linear pieces up to t0, then t = t0 e^u (u >= 0): a power-law tail t^-β
    # becomes e^{-(β-1) u}, an exponential tail decays even faster; pieces of length ln 4 in u
    pieces: list[tuple[Callable[[float], float], float, float]] = [(sf, a, b) for a, b in itertools.pairwise(pts)]
    if not np.isfinite(upper):

        def tail(u: float) -> float:
            if u > 700.0:  # t beyond 1e304: P(D > t) t -> 0 whenever E[D] is finite
                return 0.0
            t = t0 * math.exp(u)
            return sf(t) * t

        edges = [j * math.log(4.0) for j in range(9)]
        pieces += [(tail, a, b) for a, b in itertools.pairwise(edges)] + [(tail, edges[-1], np.inf)]
    total, err, notes = 0.0, 0.0, []
    for f, a, b in pieces:
        if f(a) == 0.0:  # P(D > t) is non-increasing: nothing left
            break
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", integrate.IntegrationWarning)
            v, e = integrate.quad(f, a, b, epsabs=0.1 * QUAD_EPSREL * total, epsrel=QUAD_EPSREL, limit=200)
        where = f"t in [{a:g}, {b:g}]" if f is sf else f"t in [{t0:g} e^{a:g}, {t0:g} e^{b:g}]"
        notes += [
            f"{where}: {str(w.message).splitlines()[0]}"
            for w in caught
            if issubclass(w.category, integrate.IntegrationWarning)
        ]
        total += v
        err += e
    return total, err, "; ".join(notes)


def _monte_carlo(model: DelayModel, rule: ArrivalRule, samples: int, seed: int, keep: bool) -> DecodeTime:

    rng = rng_from_seed(seed)
    step = max(1, _MC_CHUNK_ENTRIES // model.n)
    times = np.empty(samples)
    for a in range(0, samples, step):
        b = min(samples, a + step)
        if isinstance(model, TraceDelays):
            rows = model.sample_delays(b - a, seed + a)
        else:
            rows = model._draw(rng, b - a)
        times[a:b] = rule.apply(rows)[1]
    mean = float(times.mean())
    se = float(times.std(ddof=1) / math.sqrt(samples)) if samples > 1 else float("inf")
    ci = t_interval(mean, se, samples - 1) if np.isfinite(mean) else (mean, mean)
    return DecodeTime(mean, ci, f"monte-carlo n={samples}", 0.0, se, samples, "", times if keep else None)


def expected_decode_time(
    model: DelayModel | DelayStragglerModel,
    rule: ArrivalRule | None = None,
    *,
    method: str = "auto",
    samples: int = 100_000,
    seed: int = 0,
    keep_values: bool = False,
) -> DecodeTime:
    """Expected time ``E[D]`` at which the master decodes under a delay model and an arrival rule.

    Parameters
    ----------
    model : DelayModel or DelayStragglerModel
        Delays (a :class:`DelayStragglerModel` carries its rule; then ``rule`` must be omitted).
    rule : ArrivalRule
    method : {"auto", "exact", "quad", "monte-carlo"}
        ``"exact"``: a closed form (i.i.d. shifted exponential with ``"first"``:
        ``c + (H_n - H_{n-k})/λ``; with ``"deadline"``: ``min(T, c) + (1/λ) Σ_{i<=n} V^i/i``,
        ``V = 1 - e^{-λ(T-c)^+}``; i.i.d. Pareto with ``"first"``: ``σ Π_{i=n-k+1}^{n} i/(i - 1/α)``),
        or, for a trace, the average over its iterations; refused where there is none.
        ``"quad"``: ``∫_0^∞ P(D > t) dt`` by ``scipy.integrate.quad`` (relative accuracy
        :data:`QUAD_EPSREL` per piece) with the survival function of the rule for independent,
        possibly non-identical workers.  ``"monte-carlo"``: ``samples`` draws, 95% Student
        interval.  ``"auto"``: exact, else quad (a trace: its average).
    samples, seed : int
        Monte Carlo budget and seed.  ``samples`` is at most :data:`gcsim.limits.MAX_MC_DRAWS`:
        the delays are drawn in chunks of ``_MC_CHUNK_ENTRIES`` but one decode time per draw is held
        (8 bytes a draw, 1 GiB at the limit); checked before anything is drawn, whatever the method.
    keep_values : bool
        Keep the Monte Carlo (or trace) decode times in ``values``.

    Returns
    -------
    DecodeTime
        ``mean = inf`` (with ``reason``) when the expectation diverges: Pareto shapes whose relevant sum
        is ``<= 1``, or a trace whose rule waits for a transmission that never arrives.

    Examples
    --------
    >>> dm = delay_model("pareto", 5, scale=1.0, shape=3.0)
    >>> exact = expected_decode_time(dm, arrival_rule("first", s=1))
    >>> quad = expected_decode_time(dm, arrival_rule("first", s=1), method="quad")
    >>> abs(exact.mean - quad.mean) < 1e-8, exact.method, quad.method
    (True, 'exact', 'quad')
    """
    keep_values = check_bool("keep_values", keep_values)
    if isinstance(model, DelayStragglerModel):
        if rule is not None:
            raise InvalidArgumentError("rule", "the DelayStragglerModel carries its rule; omit rule=")
        rule = model.rule
        model = model.delays
    if not isinstance(model, DelayModel):
        raise InvalidArgumentError("model", f"must be a DelayModel or DelayStragglerModel, got {type(model).__name__}")
    if not isinstance(rule, ArrivalRule):
        raise InvalidArgumentError("rule", "must be an ArrivalRule (see arrival_rule)")
    if not isinstance(method, str) or method not in _METHODS:
        raise InvalidArgumentError("method", f"must be one of {_METHODS}, got {method!r}")
    samples = check_int("samples", samples, minimum=2)
    limits.check_work(
        "samples",
        samples,
        "Monte Carlo draws (delays drawn in chunks, one decode time kept each)",
        limit_name="MAX_MC_DRAWS",
        unit="draws",
    )
    seed = check_int("seed", seed, minimum=0)
    rule.check_n(model.n)
    if isinstance(model, TraceDelays):
        if method == "quad":
            raise InvalidArgumentError(
                "method", "a trace has no CDF to integrate; use 'exact' (its average) or 'monte-carlo'"
            )
        if method == "monte-carlo":
            return _monte_carlo(model, rule, samples, seed, keep_values)
        times = rule.apply(model.rows())[1]
        mean = float(times.mean())
        reason = "" if np.isfinite(mean) else "the rule waits for a transmission that never arrives (inf in the trace)"
        return DecodeTime(
            mean,
            (mean, mean),
            f"trace average over {model.iterations} iterations",
            0.0,
            0.0,
            model.iterations,
            reason,
            times if keep_values else None,
        )
    reason = _infinite_reason(model, rule)
    if reason:
        inf = float("inf")
        return DecodeTime(inf, (inf, inf), "exact", reason=reason)
    if method == "monte-carlo":
        return _monte_carlo(model, rule, samples, seed, keep_values)
    if method in ("auto", "exact"):
        ex = _exact(model, rule)
        if ex is not None:
            return DecodeTime(ex[0], (ex[0], ex[0]), "exact", reason=ex[1])
        if method == "exact":
            raise InvalidArgumentError(
                "method",
                f"no closed form for {model.kind} delays "
                f"({'heterogeneous' if not model.homogeneous else 'i.i.d.'}) under the {rule.kind!r} rule; "
                "use 'quad' or 'monte-carlo'",
            )
    _check_quad_size(model, rule)
    value, err, note = _quad(model, rule)
    if note:
        import warnings

        warnings.warn(
            f"quadrature of E[D] may be less accurate than requested (abserr {err:.2g}): {note}",
            RuntimeWarning,
            stacklevel=2,
        )
    return DecodeTime(value, (value - err, value + err), "quad", abserr=err, reason=note)


def load_trace(path: Any, *, name: str = "delays") -> np.ndarray:
    """Read a ``workers x iterations`` trace of delays from a ``.npy`` or ``.csv`` file.

    The size is checked before any data is read: a ``.npy`` file by its header (shape, dtype;
    :func:`gcsim.limits.check_npy_file`), so a header that declares more than
    :data:`gcsim.limits.MAX_DENSE_ENTRIES` entries is refused at once whatever the file's
    length (a sparse file costs no disk); a ``.csv`` file by its length: it is parsed only
    when it is at most 32 bytes per allowed entry (``32 * MAX_DENSE_ENTRIES``).  Pickled,
    complex and non-numeric data are refused; the result is a float64 array (check it with
    :func:`delay_model` ``("trace", delays=...)``).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` (NumPy format 1.0 / 2.0) or ``.csv`` (comma separated, one row per worker) file.
    name : str
        The argument named in errors (the CLI passes its flag).

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "trace.npy")
    >>> np.save(p, np.array([[1.0, 2.0], [3.0, np.inf]]))
    >>> load_trace(p).tolist()
    [[1.0, 2.0], [3.0, inf]]
    """
    import os

    text = os.fspath(path)
    suffix = os.path.splitext(text)[1].lower()
    if suffix == ".npy":
        header = check_npy_file(name, path, "a trace of delays")
        if header.dtype.kind not in "biuf":
            raise InvalidArgumentError(name, f"{text!r} holds {header.dtype} data; a trace is real numbers")
        try:
            arr = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InvalidArgumentError(name, f"{text!r} is not a plain .npy array ({exc})") from None
        return np.asarray(arr, dtype=float)
    if suffix == ".csv":
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            raise InvalidArgumentError(name, f"cannot read {text!r}: {exc.strerror or exc}") from None
        cap = 32 * limits.MAX_DENSE_ENTRIES
        if size > cap:
            raise SizeLimitError(
                name,
                f"{text!r} is {size:,} bytes, over the {cap:,} bytes read for a .csv trace (32 bytes per entry of "
                f"gcsim.limits.MAX_DENSE_ENTRIES = {limits.MAX_DENSE_ENTRIES:,}; raise it there); "
                "save a large trace as .npy",
                requested=size,
                limit=cap,
                limit_name="MAX_DENSE_ENTRIES",
            )
        try:
            arr = np.loadtxt(path, delimiter=",", ndmin=2)
        except (ValueError, OSError) as exc:
            raise InvalidArgumentError(name, f"{text!r}: {exc}") from None
        check_entries(name, arr.shape, f"a trace of delays in {text!r}")
        return arr
    raise InvalidArgumentError(name, f"a trace is a .npy or .csv file, got {text!r}")
