"""Straggler models (theory §5.2).

**Mask convention.**  Every model produces boolean *non-straggler* masks:
``mask[j] is True`` means worker ``j``'s transmission **arrives** (``j ∈ F``);
``False`` means ``j`` is a straggler (``j ∈ S``).  ``sample(count, seed)``
returns an array of shape ``(count, n)``.  The same seed gives the same masks.

Kinds (build them with :func:`straggler_model`):

``"fixed"``      ``S`` uniform among the ``s``-subsets of ``[n]``.
``"bernoulli"``  every worker straggles independently with probability ``p``
                 (scalar, or one ``p_j`` per worker), ``p ∈ [0, 1)``.
``"all"``        every ``s``-subset once (exhaustive; ``enumerate()``/``count``);
                 ``sample`` draws uniformly like ``"fixed"``.
``"worst"``      adversarial ``|S| = s``; it has no distribution -- use
                 :func:`gcsim.coding.evaluate.worst_case_error`.
``"markov"``     one two-state chain per worker across iterations:
                 ``p_enter`` = P(arrives -> straggles), ``p_leave`` =
                 P(straggles -> arrives); chains start in their stationary law,
                 ``sample`` returns *consecutive* iterations.
``"trace"``      replay of a ``workers x iterations`` delay matrix with the
                 waiting policy ``"first"`` (the first ``n - s`` arrivals,
                 ties broken by worker index) or ``"deadline"`` (arrivals with
                 delay ``<= deadline``); ``inf`` = never arrives.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .._validation import check_count, check_dense_size, check_int, check_probability, check_real
from ..errors import InvalidArgumentError, VerificationError
from ..limits import array_shape, check_entries
from .delays import DelayStragglerModel
from .straggler_base import StragglerModel, readonly, rng_from_seed

__all__ = [
    "FixedModel",
    "BernoulliModel",
    "AllPatternsModel",
    "WorstCaseModel",
    "MarkovModel",
    "TraceModel",
    "straggler_model",
    "KINDS",
    "FixedParams",
    "AllPatternsParams",
    "WorstCaseParams",
    "BernoulliParams",
    "MarkovParams",
    "TraceParams",
    "combinations_masks",
    "straggler_sets",
]

KINDS = ("fixed", "bernoulli", "all", "worst", "markov", "trace", "delay")


class FixedParams(NamedTuple):
    """Parameters of :class:`FixedModel`: ``s`` of the ``n`` workers straggle."""

    n: int
    s: int


class AllPatternsParams(NamedTuple):
    """Parameters of :class:`AllPatternsModel`: every ``s``-subset of the ``n`` workers."""

    n: int
    s: int


class WorstCaseParams(NamedTuple):
    """Parameters of :class:`WorstCaseModel`: ``s`` adversarial stragglers among ``n``."""

    n: int
    s: int


class BernoulliParams(NamedTuple):
    """Parameters of :class:`BernoulliModel` (``p`` a float, or a list of one per worker)."""

    n: int
    p: Any


class MarkovParams(NamedTuple):
    """Parameters of :class:`MarkovModel` (floats, or lists of one per worker)."""

    n: int
    p_enter: Any
    p_leave: Any


class TraceParams(NamedTuple):
    """Parameters of :class:`TraceModel` (the delays are its array)."""

    n: int
    iterations: int
    policy: str
    s: int | None
    deadline: float | None


def _scalar_or_list(a: np.ndarray) -> Any:
    return float(a[0]) if np.all(a == a[0]) else a.tolist()


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


class _SubsetModel(StragglerModel):
    """``|S| = s`` stragglers among ``n`` workers: the implementation shared by the fixed-``s``,
    all-patterns and worst-case models (they differ in what they do with the subsets)."""

    _params_type: ClassVar[type] = FixedParams

    def __init__(self, n: int, s: int):
        super().__init__(n)
        self.s = check_int("s", s, minimum=0, maximum=self.n)

    @property
    def params(self) -> Any:
        return self._params_type(self.n, self.s)

    @property
    def count(self) -> int:
        """Number of distinct patterns, ``C(n, s)``."""
        return math.comb(self.n, self.s)

    def _verify(self) -> None:
        if not (isinstance(self.s, int) and 0 <= self.s <= self.n):
            raise VerificationError(f"{type(self).__name__}: s = {self.s!r} must lie in [0, n = {self.n}]")


class FixedModel(_SubsetModel):
    """``S`` uniform among the ``s``-subsets of ``[n]`` (fixed-s uniform model).

    Examples
    --------
    >>> masks = FixedModel(5, 2).sample(3, seed=0)
    >>> masks.shape, (~masks).sum(axis=1).tolist()
    ((3, 5), [2, 2, 2])
    """

    model_kind: ClassVar[str] = "fixed"

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        # the s smallest of n i.i.d. uniforms form a uniform s-subset
        keys = rng.random((count, self.n))
        masks = np.ones((count, self.n), dtype=bool)
        if self.s:
            S = np.argpartition(keys, self.s - 1, axis=1)[:, : self.s]
            np.put_along_axis(masks, S, False, axis=1)
        return masks

    def enumerate(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """All non-straggler masks ``(C(n, s), n)`` in lexicographic order of ``S`` (or a slice).

        Refused beyond :data:`gcsim.limits.MAX_PATTERNS` patterns (whole
        enumeration) or :data:`gcsim.limits.MAX_DENSE_ENTRIES` mask entries (one slice).
        """
        if stop is None and start == 0:
            self._check_enumerable()
        return combinations_masks(self.n, self.s, start, stop)

    def _check_enumerable(self) -> None:
        check_count(
            "s",
            self.count,
            f"straggler patterns C({self.n}, {self.s})",
            hint="use the 'fixed' model (Monte Carlo) instead of enumerating every pattern",
        )

    def iter_chunks(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        """Yield the masks of :meth:`enumerate` in chunks of at most ``chunk`` rows (up to MAX_PATTERNS in all)."""
        chunk = check_int("chunk", chunk, minimum=1)
        self._check_enumerable()
        for start in range(0, self.count, chunk):
            yield self.enumerate(start, start + chunk)

    def describe(self) -> str:
        return f"fixed-s uniform: s={self.s} of n={self.n} workers straggle (uniform subset)"


class AllPatternsModel(FixedModel):
    """Every ``s``-subset exactly once (exhaustive enumeration).

    Exhaustive evaluation walks through all ``C(n, s)`` patterns, so the model
    is refused up front when ``C(n, s)`` exceeds :data:`gcsim.limits.MAX_PATTERNS`
    (the error states both numbers); use ``"fixed"`` (Monte Carlo) instead.

    Examples
    --------
    >>> model = AllPatternsModel(4, 1)
    >>> model.count, model.enumerate().shape
    (4, (4, 4))
    >>> AllPatternsModel(91, 20)
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: s: 65,341,512,186,912,471,510 straggler patterns C(91, 20) to enumerate, over \
gcsim's limit of 10,000,000 (gcsim.limits.MAX_PATTERNS); use the 'fixed' model (Monte Carlo) instead of \
enumerating every pattern
    """

    model_kind: ClassVar[str] = "all"
    _params_type: ClassVar[type] = AllPatternsParams

    def __init__(self, n: int, s: int):
        super().__init__(n, s)
        self._check_enumerable()

    def describe(self) -> str:
        return f"all patterns: every one of the C({self.n},{self.s}) = {self.count} straggler sets"


class WorstCaseModel(_SubsetModel):
    """Adversarial stragglers, ``|S| = s``: no distribution; evaluate with ``worst_case_error``."""

    model_kind: ClassVar[str] = "worst"
    _params_type: ClassVar[type] = WorstCaseParams

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        raise InvalidArgumentError(
            "model",
            "the worst-case model has no distribution to sample; use gcsim.coding.evaluate.worst_case_error(scheme, s)",
        )

    def describe(self) -> str:
        return f"worst case: adversarial choice of s={self.s} stragglers among n={self.n}"


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
            raise InvalidArgumentError(name, f"every entry must lie in {rng}")
    if not allow_zero and np.any(out == 0.0):
        raise InvalidArgumentError(name, "must be > 0")
    return out


class BernoulliModel(StragglerModel):
    """Each worker straggles independently with probability ``p_j`` (``p`` scalar or per worker).

    Examples
    --------
    >>> m = BernoulliModel(4, 0.25)
    >>> m.sample(2, seed=0).shape, m.homogeneous
    ((2, 4), True)
    >>> BernoulliModel(3, 1.0)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: p: must be < 1.0, got 1.0
    """

    model_kind: ClassVar[str] = "bernoulli"

    def __init__(self, n: int, p: Any):
        super().__init__(n)
        self.p = readonly(_probabilities("p", p, self.n))

    @property
    def homogeneous(self) -> bool:
        """True when every worker has the same ``p``."""
        return bool(np.all(self.p == self.p[0]))

    @property
    def params(self) -> BernoulliParams:
        return BernoulliParams(self.n, _scalar_or_list(self.p))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"p": self.p}

    def _verify(self) -> None:
        if self.p.shape != (self.n,) or not np.all((self.p >= 0.0) & (self.p < 1.0)):
            raise VerificationError(f"BernoulliModel: p must be {self.n} probabilities in [0, 1)")

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        return rng.random((count, self.n)) >= self.p[None, :]

    def weights(self, masks: np.ndarray) -> np.ndarray:
        """Probability of each non-straggler mask: ``Π_{j∈F}(1-p_j) Π_{j∈S} p_j``."""
        masks = np.asarray(masks, dtype=bool)
        with np.errstate(divide="ignore"):
            logq = np.log1p(-self.p)
            logp = np.log(self.p)
        terms = np.where(masks, logq[None, :], logp[None, :])
        return np.exp(terms.sum(axis=1))

    def describe(self) -> str:
        if self.homogeneous:
            return f"Bernoulli: each of n={self.n} workers straggles independently with p={self.p[0]:g}"
        return (
            f"Bernoulli (heterogeneous): worker j straggles independently with p_j in "
            f"[{self.p.min():g}, {self.p.max():g}], n={self.n}"
        )


class MarkovModel(StragglerModel):
    """Per-worker two-state Markov chain across iterations.

    ``p_enter`` = P(arriving worker starts straggling next iteration), in [0, 1);
    ``p_leave`` = P(straggler recovers next iteration), in (0, 1].  Chains are
    independent across workers and start from their stationary law, so at every
    iteration worker ``j`` straggles with probability
    ``π_j = p_enter / (p_enter + p_leave)``.

    Examples
    --------
    >>> m = MarkovModel(3, p_enter=0.1, p_leave=0.5)
    >>> m.sample(4, seed=0).shape, round(float(m.stationary[0]), 4)
    ((4, 3), 0.1667)
    """

    model_kind: ClassVar[str] = "markov"

    def __init__(self, n: int, p_enter: Any, p_leave: Any):
        super().__init__(n)
        self.p_enter = readonly(_probabilities("p_enter", p_enter, self.n))
        self.p_leave = readonly(_probabilities("p_leave", p_leave, self.n, allow_zero=False, allow_one=True))

    @property
    def stationary(self) -> np.ndarray:
        """Stationary straggling probability of each worker."""
        return self.p_enter / (self.p_enter + self.p_leave)

    @property
    def params(self) -> MarkovParams:
        return MarkovParams(self.n, _scalar_or_list(self.p_enter), _scalar_or_list(self.p_leave))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"p_enter": self.p_enter, "p_leave": self.p_leave}

    def _verify(self) -> None:
        ok = (
            self.p_enter.shape == self.p_leave.shape == (self.n,)
            and np.all((self.p_enter >= 0) & (self.p_enter < 1))
            and np.all((self.p_leave > 0) & (self.p_leave <= 1))
        )
        if not ok:
            raise VerificationError("MarkovModel: p_enter must lie in [0, 1) and p_leave in (0, 1], one per worker")

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        """``count`` consecutive iterations (rows) of the chains."""
        count = check_int("count", count, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        rng = rng_from_seed(seed)
        u = rng.random((count, self.n))
        out = np.empty((count, self.n), dtype=bool)
        if count == 0:
            return out
        straggling = u[0] < self.stationary
        out[0] = ~straggling
        for t in range(1, count):  # sequential in t, vectorized over workers
            straggling = np.where(straggling, u[t] >= self.p_leave, u[t] < self.p_enter)
            out[t] = ~straggling
        return out

    def describe(self) -> str:
        return (
            f"Markov: per-worker two-state chains, p_enter={self.params.p_enter}, "
            f"p_leave={self.params.p_leave}, stationary straggle prob "
            f"{self.stationary.mean():.4g} (mean), n={self.n}"
        )


class TraceModel(StragglerModel):
    """Replay of a measured delay trace.

    Parameters
    ----------
    delays : array_like, shape (n, iterations)
        Arrival delay of each worker at each iteration (``inf`` = never arrives).
    policy : {"first", "deadline"}
        ``"first"``: the PS waits for the first ``n - s`` arrivals (ties by
        worker index); ``"deadline"``: everything with delay ``<= deadline``.

    Examples
    --------
    >>> d = np.array([[1.0, 5.0], [2.0, 1.0], [3.0, 2.0]])
    >>> TraceModel(d, policy="first", s=1).masks().astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    >>> TraceModel(d, policy="deadline", deadline=2.0).masks().astype(int).tolist()
    [[1, 1, 0], [0, 1, 1]]
    """

    model_kind: ClassVar[str] = "trace"

    def __init__(
        self,
        delays: Any,
        policy: str = "first",
        *,
        s: int | None = None,
        deadline: float | None = None,
        n: int | None = None,
    ):
        check_entries("delays", array_shape(delays), "a trace of delays (workers x iterations)")
        try:
            raw = np.asarray(delays)
        except (TypeError, ValueError) as exc:  # ragged nested lists, objects numpy cannot read
            raise InvalidArgumentError("delays", f"cannot be read as an array ({exc})") from None
        # a complex trace would lose its imaginary part (numpy warns), strings fail in the cast
        if (
            raw.dtype == object
            or np.iscomplexobj(raw)
            or not (np.issubdtype(raw.dtype, np.number) or raw.dtype == bool)
        ):
            raise InvalidArgumentError("delays", f"must be real numbers, got dtype {raw.dtype}")
        arr = raw.astype(float)
        if arr.ndim != 2 or arr.shape[1] < 1:
            raise InvalidArgumentError("delays", f"must be a 2-D workers x iterations matrix, got shape {arr.shape}")
        if np.isnan(arr).any():
            raise InvalidArgumentError("delays", "contains NaN (use inf for 'never arrives')")
        if n is not None and check_int("n", n, minimum=1) != arr.shape[0]:
            raise InvalidArgumentError("delays", f"must have n = {n} rows, got {arr.shape[0]}")
        super().__init__(arr.shape[0])
        self.delays = readonly(arr)
        self.s: int | None
        self.deadline: float | None
        if policy == "first":
            if s is None:
                raise InvalidArgumentError("s", "policy 'first' needs s (wait for the first n - s arrivals)")
            self.s = check_int("s", s, minimum=0, maximum=self.n)
            self.deadline = None
        elif policy == "deadline":
            if deadline is None:
                raise InvalidArgumentError("deadline", "policy 'deadline' needs deadline=...")
            self.deadline = check_real("deadline", deadline)
            self.s = None
        else:
            raise InvalidArgumentError("policy", f"must be 'first' or 'deadline', got {policy!r}")
        self.policy = policy
        self._masks = readonly(self._compute())

    @property
    def iterations(self) -> int:
        """Number of iterations in the trace."""
        return int(self.delays.shape[1])

    @property
    def params(self) -> TraceParams:
        return TraceParams(self.n, self.iterations, self.policy, self.s, self.deadline)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"delays": self.delays}

    @classmethod
    def _rebuild(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> TraceModel:
        return cls(arrays["delays"], fields["policy"], s=fields["s"], deadline=fields["deadline"], n=fields["n"])

    def _verify(self) -> None:
        if self.delays.shape != (self.n, self.iterations) or np.isnan(self.delays).any():
            raise VerificationError("TraceModel: delays must be an (n, iterations) matrix without NaN")
        if not np.array_equal(self._masks, self._compute()):
            raise VerificationError("TraceModel: stored masks differ from the policy applied to the delays")

    def _compute(self) -> np.ndarray:
        D = self.delays.T  # (iterations, n)
        if self.policy == "deadline":
            return D <= self.deadline
        assert self.s is not None  # policy "first" sets s
        order = np.argsort(D, axis=1, kind="stable")
        masks = np.zeros(D.shape, dtype=bool)
        np.put_along_axis(masks, order[:, : self.n - self.s], True, axis=1)
        return masks & np.isfinite(D)

    def masks(self) -> np.ndarray:
        """The non-straggler mask of every iteration, ``(iterations, n)``."""
        return self._masks.copy()

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
        """``count`` consecutive iterations starting at ``seed % iterations`` (cyclic replay)."""
        count = check_int("count", count, minimum=0)
        seed = check_int("seed", seed, minimum=0)
        check_dense_size("count", count, self.n, f"{count:,} straggler masks")
        idx = (seed + np.arange(count)) % self.iterations
        return self._masks[idx]

    def describe(self) -> str:
        how = (
            f"first n-s = {self.n - (self.s or 0)} arrivals"
            if self.policy == "first"
            else f"deadline {self.deadline:g}"
        )
        return f"trace replay: {self.iterations} iterations of n={self.n} workers, policy {how}"


def straggler_model(kind: str, n: int | None = None, **params: Any) -> StragglerModel:
    """Build a straggler model (theory §5.2).

    Parameters
    ----------
    kind : {"fixed", "bernoulli", "all", "worst", "markov", "trace", "delay"}
    n : int
        Number of workers (for ``"trace"`` and ``"delay"`` it may be omitted).
    **params
        ``s`` (fixed, all, worst, trace-first), ``p`` (bernoulli),
        ``p_enter``/``p_leave`` (markov), ``delays``/``policy``/``deadline`` (trace),
        ``delays=<DelayModel>``/``rule=<ArrivalRule>`` (delay: stragglers generated by a
        delay model and an arrival rule, see :mod:`gcsim.coding.delays`).

    Returns
    -------
    StragglerModel
        ``.sample(count, seed)`` returns non-straggler masks: True = arrives.

    Examples
    --------
    >>> straggler_model("bernoulli", 10, p=0.1).describe()
    'Bernoulli: each of n=10 workers straggles independently with p=0.1'
    >>> straggler_model("fixed", 4, s=5)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: s: must be <= 4, got 5
    """
    if kind not in KINDS:
        raise InvalidArgumentError("kind", f"must be one of {KINDS}, got {kind!r}")
    if kind == "trace":
        if "delays" not in params:
            raise InvalidArgumentError("delays", "trace model needs delays=<workers x iterations matrix>")
        delays = params.pop("delays")
        policy = params.pop("policy", "first")
        model: StragglerModel = TraceModel(delays, policy, n=n, **params)
        return model
    if kind == "delay":
        if "delays" not in params or "rule" not in params:
            raise InvalidArgumentError(
                "delays",
                "kind 'delay' needs delays=<DelayModel> and rule=<ArrivalRule> "
                "(see gcsim.delay_model and gcsim.arrival_rule)",
            )
        model = DelayStragglerModel(params.pop("delays"), params.pop("rule"))
        if n is not None and check_int("n", n, minimum=1) != model.n:
            raise InvalidArgumentError("n", f"must equal the delay model's number of workers {model.n}, got {n}")
        if params:
            raise InvalidArgumentError("params", f"unknown parameter(s) for kind 'delay': {sorted(params)}")
        return model
    if n is None:
        raise InvalidArgumentError("n", f"kind {kind!r} needs the number of workers n")

    def need(name):
        if name not in params:
            raise InvalidArgumentError(name, f"kind {kind!r} needs {name}=...")
        return params.pop(name)

    if kind == "fixed":
        model = FixedModel(n, need("s"))
    elif kind == "all":
        model = AllPatternsModel(n, need("s"))
    elif kind == "worst":
        model = WorstCaseModel(n, need("s"))
    elif kind == "bernoulli":
        model = BernoulliModel(n, need("p"))
    else:
        model = MarkovModel(n, need("p_enter"), need("p_leave"))
    if params:
        raise InvalidArgumentError("params", f"unknown parameter(s) for kind {kind!r}: {sorted(params)}")
    return model
