"""Delay models: the time ``X_j >= 0`` at which worker ``j``'s transmission reaches the master.

``inf`` means never.  Build them with :func:`delay_model`; every parameter is a scalar or one value
per worker; workers are independent (the kinds are listed in :mod:`gcsim.coding.delays`).  Proofs:
``docs/theory/47_delays.md``.

Examples
--------
>>> dm = delay_model("shifted-exponential", 4, shift=1.0, rate=2.0)
>>> dm.sample_delays(2, seed=0).shape
(2, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .. import limits
from .._validation import check_dense_size, check_int, check_probability, check_real
from ..errors import InvalidArgumentError, SizeLimitError
from ..limits import array_shape, check_entries, check_npy_file
from .straggler_base import rng_from_seed

__all__ = [
    "DELAY_KINDS",
    "DelayModel",
    "ShiftedExponentialDelays",
    "ParetoDelays",
    "BimodalDelays",
    "TraceDelays",
    "delay_model",
    "load_trace",
]

DELAY_KINDS = ("shifted-exponential", "pareto", "bimodal", "trace")


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
