"""The straggler-model base class (docs/theory.md §5.2), shared by every kind of model.

It lives in its own module so that the concrete models (:mod:`gcsim.coding.stragglers`) and the
models driven by delays (:mod:`gcsim.coding.delays`) both build on it without importing each
other in a cycle: ``stragglers`` imports ``delays`` (its factory builds delay models), and both
import this module.

**Mask convention.**  ``sample(count, seed)`` returns boolean *non-straggler* masks of shape
``(count, n)``: ``mask[j] is True`` means worker ``j``'s transmission arrives (``j ∈ F``).

**Object contract.**  A model is immutable once built (attributes cannot be set or deleted, its
arrays are read-only), ``params`` is a :class:`~typing.NamedTuple` of the model's class
(``BernoulliParams(n, p)``, ...), :meth:`~StragglerModel.verify` checks its invariants, and
``type(m).from_arrays(m.to_arrays(), m.bundle_metadata())`` rebuilds it.

**Registry contract.**  Every kind is a subclass with its own ``model_kind``, declared in the
``MODELS`` tuple of a public module of :mod:`gcsim.coding.straggler_models` (found there with no
import line to add).  Its class attributes and methods give what the rest of gcsim needs:
``parameters`` and :meth:`~StragglerModel.build` (:func:`gcsim.straggler_model`), ``spec_values``,
:meth:`~StragglerModel.from_spec` and :meth:`~StragglerModel.to_spec` (the ``KIND:VALUES``
grammar of the command lines and the advisor), the law of the patterns
(:meth:`~StragglerModel.subset_size`, :meth:`~StragglerModel.independent_p`,
:meth:`~StragglerModel.masks_from_keys`), :meth:`~StragglerModel.expectation` (which routes of
:func:`gcsim.coding.evaluate.expected_error` apply), :meth:`~StragglerModel.delay_parts` (decode
times) and the advisor's :meth:`~StragglerModel.exact_patterns`, :meth:`~StragglerModel.pattern_budget`
and :meth:`~StragglerModel.arrival_count_expectation`.  The defaults describe a model known only
by its :meth:`~StragglerModel.sample`: Monte Carlo everywhere.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._validation import check_declared_arrays, check_int
from ..errors import CatalogueError, GcsimError, InvalidArgumentError, VerificationError

__all__ = ["StragglerModel", "rng_from_seed", "readonly", "spec_numbers", "assignment_loads"]


def rng_from_seed(seed: Any) -> np.random.Generator:
    """The generator of a non-negative integer seed (the one source of randomness of every model).

    Examples
    --------
    >>> float(rng_from_seed(0).random()) == float(np.random.default_rng(0).random())
    True
    """
    return np.random.default_rng(check_int("seed", seed, minimum=0))


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` (a fresh copy when it is a view of someone else's data) with writing disabled."""
    out = np.array(a, copy=True)
    out.setflags(write=False)
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def assignment_loads(code: Any) -> tuple[np.ndarray, int]:
    """``(loads, N)``: the parts each worker of a code holds and the number of parts, for :meth:`StragglerModel.bind`.

    ``code``: a scheme or an assignment object (its ``N x n`` sparse ``incidence`` when it keeps one,
    else its dense ``assignment``).

    >>> from gcsim.combinatorics.weighted_cyclic import weighted_cyclic_repetition
    >>> loads, parts = assignment_loads(weighted_cyclic_repetition([3, 1, 2, 2], 4))
    >>> loads.tolist(), parts
    ([3, 1, 2, 2], 4)
    """
    inc = getattr(code, "incidence", None)
    if inc is not None and hasattr(inc, "getnnz"):
        return np.asarray(inc.getnnz(axis=0), dtype=np.int64), int(inc.shape[0])
    A = np.asarray(code.assignment)
    return np.count_nonzero(A, axis=0).astype(np.int64), int(A.shape[0])


def spec_numbers(kind: str, text: str, values: Sequence[str], casts: Sequence[type], example: str) -> list[Any]:
    """The values of a ``KIND:VALUES`` spec cast one by one, or a refusal naming ``stragglers``.

    >>> spec_numbers("markov", "markov:0.1,0.5", ["0.1", "0.5"], (float, float), "0.05,0.5")
    [0.1, 0.5]
    >>> spec_numbers("fixed", "fixed:x", ["x"], (int,), "10")
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: 'fixed:x': the values of fixed must be a whole number
    """
    count = len(casts)
    if len(values) != count:
        raise InvalidArgumentError(
            "stragglers", f"{kind} takes {'one value' if count == 1 else f'{count} values'}, e.g. {kind}:{example}"
        )
    try:
        return [cast(v) for cast, v in zip(casts, values, strict=True)]
    except ValueError:
        long = [v for v in values if v.strip().lstrip("+-").isdigit() and len(v) > 4000]
        if int in casts and long:  # int() refuses over sys.get_int_max_str_digits: too large, not "not whole"
            raise InvalidArgumentError(
                "stragglers", f"{kind}: a {len(long[0]):,}-digit value is too large (Python's limit for an integer)"
            ) from None
        what = "whole number" if int in casts else "number"
        shown = text if len(text) <= 60 else f"{kind}:..."
        raise InvalidArgumentError("stragglers", f"{shown!r}: the values of {kind} must be a {what}") from None


class StragglerModel:
    """Base class.  ``sample(count, seed)`` -> bool ``(count, n)``, True = the worker arrives.

    Attributes
    ----------
    kind : str
        The catalogue kind, ``"straggler_model"`` for every model.
    model_kind : str
        The kind of model (``"fixed"``, ``"bernoulli"``, ... of :func:`gcsim.coding.stragglers.straggler_model`).
    n : int
        Number of workers.
    """

    kind: ClassVar[str] = "straggler_model"
    model_kind: ClassVar[str] = "model"
    #: Place in the listings of kinds (``KINDS``, error messages) and in the ``KIND:VALUES`` grammar.
    order: ClassVar[int] = 1000
    spec_order: ClassVar[int] = 1000
    #: The constructor's parameters after ``n``, in order: ``straggler_model(kind, n, **params)`` needs them.
    parameters: ClassVar[tuple[str, ...]] = ()
    #: ``KIND:VALUES`` grammar: a (NAME, cast) per value, in the order of ``parameters``; None: no spec
    #: (the model is built from Python only, like a trace).
    spec_values: ClassVar[tuple[tuple[str, type], ...] | None] = None
    #: What the grammar says after ``KIND:NAMES`` (``" (S uniform stragglers)"``), and examples of the
    #: values: the advisor's refusals show ``spec_example``, the command lines' ``cli_example``.
    spec_note: ClassVar[str] = ""
    spec_example: ClassVar[str] = ""
    cli_example: ClassVar[str] = ""
    #: No distribution: an adversary picks the pattern (evaluated by its worst case, never averaged).
    adversarial: ClassVar[bool] = False
    #: Every pattern is evaluated, whatever the budgets (the all-patterns model).
    exhaustive: ClassVar[bool] = False
    #: :meth:`sample` maps ``Generator(PCG64(seed)).random((count, n))`` row by row
    #: (:meth:`masks_from_keys`): its draws can be cut into independent chunks (theory §42.3).
    streamable: ClassVar[bool] = False
    #: model_kind -> class, for :meth:`from_arrays` (filled as the classes are defined)
    _registry: ClassVar[dict[str, type[StragglerModel]]] = {}
    n: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "model_kind" in cls.__dict__:
            StragglerModel._registry[cls.model_kind] = cls
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def frozen_init(self: StragglerModel, *args: Any, **kw: Any) -> None:
            # the outermost constructor freezes the object once every __init__ in the chain is done
            depth = self.__dict__.get("_init_depth", 0)
            object.__setattr__(self, "_init_depth", depth + 1)
            try:
                init(self, *args, **kw)
            finally:
                object.__setattr__(self, "_init_depth", depth)
            if depth == 0:
                object.__setattr__(self, "_frozen", True)

        cls.__init__ = frozen_init  # type: ignore[method-assign]

    def __init__(self, n: int):
        self.n = check_int("n", n, minimum=1)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    # -- contract ---------------------------------------------------------------------------------
    @property
    def params(self) -> NamedTuple:  # pragma: no cover - abstract
        """Parameters of the model, a NamedTuple of its class (``._asdict()`` gives the dict)."""
        raise NotImplementedError

    def verify(self) -> bool:
        """Check the model's invariants; returns True or raises :class:`VerificationError`."""
        if not isinstance(self.n, int) or self.n < 1:
            raise VerificationError(f"{type(self).__name__}: n = {self.n!r} is not a positive integer")
        for name, a in self.to_arrays().items():
            if a.flags.writeable:
                raise VerificationError(f"{type(self).__name__}: array {name!r} is writable")
        self._verify()
        return True

    def _verify(self) -> None:
        """Kind-specific checks (override)."""

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array needed to rebuild the model (none for the models given by scalars)."""
        return {}

    def bundle_metadata(self) -> dict[str, Any]:
        """JSON-serializable rest: ``params`` (a list), ``construction`` (the model kind) and ``fields``."""
        fields = {k: _jsonable(v) for k, v in self.params._asdict().items()}
        return {
            "params": [fields[k] for k in fields],
            "construction": self.model_kind,
            "fields": fields,
            "arrays": sorted(self.to_arrays()),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> StragglerModel:
        """Rebuild a model from :meth:`to_arrays` and :meth:`bundle_metadata`.

        Raises
        ------
        CatalogueError
            Unknown construction, a class that does not match it, or parameters the model refuses.
        """
        construction = metadata.get("construction") if isinstance(metadata, Mapping) else None
        target = StragglerModel._registry.get(construction) if isinstance(construction, str) else None
        if target is None:
            raise CatalogueError(f"straggler model: unknown construction {construction!r}")
        if cls is not StragglerModel and not issubclass(target, cls):
            raise CatalogueError(f"straggler model: construction {construction!r} is not a {cls.__name__}")
        check_declared_arrays("straggler model", arrays, metadata)
        fields = metadata.get("fields")
        if not isinstance(fields, Mapping):
            raise CatalogueError("straggler model: metadata has no 'fields' mapping")
        try:
            model = target._rebuild(dict(fields), {k: np.asarray(v) for k, v in arrays.items()})
            model.verify()
        except (InvalidArgumentError, VerificationError, TypeError, ValueError, KeyError) as exc:
            raise CatalogueError(f"straggler model {construction!r}: {exc}") from None
        if list(model.bundle_metadata()["params"]) != list(metadata.get("params", [])):
            raise CatalogueError(
                f"straggler model {construction!r}: params {metadata.get('params')!r} do not "
                f"match the rebuilt model's {model.bundle_metadata()['params']!r}"
            )
        return model

    @classmethod
    def _rebuild(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> StragglerModel:
        """Construct from the fields of ``params`` and the arrays (override when the constructor differs)."""
        return cls(**{**fields, **arrays})

    # -- construction and grammar ------------------------------------------------------------------
    @classmethod
    def build(cls, n: int | None, params: dict[str, Any]) -> StragglerModel:
        """The model of ``straggler_model(kind, n, **params)``: ``n`` and every name of ``parameters``.

        Raises
        ------
        InvalidArgumentError
            ``n`` missing, a parameter missing (named), or a parameter the kind does not take.
        """
        kind = cls.model_kind
        if n is None:
            raise InvalidArgumentError("n", f"kind {kind!r} needs the number of workers n")
        args = []
        for name in cls.parameters:
            if name not in params:
                raise InvalidArgumentError(name, f"kind {kind!r} needs {name}=...")
            args.append(params.pop(name))
        model = cls(n, *args)
        if params:
            raise InvalidArgumentError("params", f"unknown parameter(s) for kind {kind!r}: {sorted(params)}")
        return model

    @classmethod
    def spec_grammar(cls) -> str:
        """The ``KIND:VALUES`` form of this kind, e.g. ``"markov:P_ENTER,P_LEAVE"`` ("" without one)."""
        if cls.spec_values is None:
            return ""
        return f"{cls.model_kind}:{','.join(name for name, _ in cls.spec_values)}{cls.spec_note}"

    @classmethod
    def spec_takes(cls, count: int) -> bool:
        """Whether a ``KIND:VALUES`` spec of this kind may have ``count`` values (the command lines' first check).

        One value per name of ``spec_values``; a kind whose last value may be one per worker says more.
        """
        return count == len(cls.spec_values or ())

    @classmethod
    def from_spec(cls, values: Sequence[str], n: int, text: str) -> StragglerModel:
        """The model over ``n`` workers of the values of a ``KIND:VALUES`` spec (``text``, for messages)."""
        if cls.spec_values is None:
            raise InvalidArgumentError("stragglers", f"kind {cls.model_kind!r} has no KIND:VALUES spec")
        casts = [cast for _, cast in cls.spec_values]
        numbers = spec_numbers(cls.model_kind, text, values, casts, cls.spec_example)
        return cls.build(n, dict(zip(cls.parameters, numbers, strict=True)))

    def to_spec(self) -> str | None:
        """The ``KIND:VALUES`` spec that builds this model back (None: no spec, or per-worker values)."""
        if self.spec_values is None:
            return None
        fields = self.params._asdict()
        values = [fields[name] for name in self.parameters]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return None
        return f"{self.model_kind}:{','.join(repr(v) for v in values)}"

    # -- the law of the patterns (what the evaluators and the advisor dispatch on) -------------------
    def subset_size(self) -> int | None:
        """``s`` when ``S`` is uniform among the ``s``-subsets of ``[n]`` (hypergeometric coverage), else None."""
        return None

    def independent_p(self) -> np.ndarray | None:
        """Per-worker straggling probabilities when every iteration's pattern has independent workers, else None."""
        return None

    def declared_p(self) -> np.ndarray | None:
        """The straggling probabilities the model is *given* (a Bernoulli ``p``), for decoders that assume one."""
        return None

    #: The law depends on the data each worker holds (theory §63.5): evaluators call :meth:`bind`.
    load_dependent: ClassVar[bool] = False

    def bind(self, loads: np.ndarray, parts: int) -> StragglerModel:
        """The model of the patterns of a code whose worker ``j`` holds ``loads[j]`` of ``parts`` parts.

        Itself for a law that does not depend on the loads (every built-in kind but ``"load-speed"``);
        ``expected_error`` and the advisor evaluate each code under ``model.bind(its loads, N)``.
        """
        return self

    def fixed_stragglers(self) -> int | None:
        """The number of stragglers when every pattern has the same (a code is designed for it), else None."""
        return None

    def masks_from_keys(self, keys: np.ndarray) -> np.ndarray:
        """The masks of ``(rows, n)`` uniforms (``streamable`` models: :meth:`sample` is this map of its keys)."""
        raise InvalidArgumentError("model", f"{type(self).__name__} draws cannot be cut into independent chunks")

    def delay_parts(self) -> tuple[Any, Any] | None:
        """``(delay model, arrival rule)`` of a model driven by delays (decode times), else None."""
        return None

    def expectation(self, routes: Any) -> Any:
        """``E_S[err]`` by the routes of :func:`gcsim.coding.evaluate.expected_error` that apply.

        ``routes`` offers ``exact(values, weights)``, ``evaluate(masks)``, ``all_subsets(s)``,
        ``separable()``, ``independent(p)`` (exact, by components, stratified or Monte Carlo for
        independent workers) and ``monte_carlo(model)``; the default is Monte Carlo of :meth:`sample`.
        """
        return routes.monte_carlo(self)

    def exact_patterns(self, limit: int) -> tuple[np.ndarray, np.ndarray, str] | None:
        """The whole law as ``(masks, probabilities, how)`` when it has at most ``limit`` patterns (advisor)."""
        return None

    def pattern_budget(self, exact_limit: int, samples: int, worst_limit: int) -> int:
        """Patterns the advisor's evaluation of one candidate costs under these budgets (default: ``samples``)."""
        return samples

    def arrival_count_expectation(self, values: np.ndarray) -> float | None:
        """``E[values[|F|]]`` when the law of the number of arrivals is known in closed form, else None."""
        return None

    # -- behaviour --------------------------------------------------------------------------------
    def sample(self, count: int, seed: int = 0) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        """One-line human description of the model."""
        return f"{self.model_kind} straggler model on n={self.n} workers"

    def __repr__(self) -> str:
        """One line: the scalar parameters, and a per-worker array by its one value or its range."""
        args = []
        for k, v in self.params._asdict().items():
            if np.isscalar(v):
                args.append(f"{k}={v!r}")
                continue
            a = np.asarray(v)
            if a.dtype.kind in "biuf" and a.ndim == 1 and a.size:  # per-worker numbers (Bernoulli p, ...)
                lo, hi = float(a.min()), float(a.max())
                args.append(f"{k}={lo:g}" if lo == hi else f"{k}=[{lo:g} .. {hi:g}] over {a.size}")
        return f"{type(self).__name__}({', '.join(args)})"

    #: Draws shown in the card's picture (:meth:`_repr_html_`), while ``draws x n`` stays within this many entries.
    _CARD_DRAWS: ClassVar[int] = 16
    _CARD_ENTRIES: ClassVar[int] = 1 << 20

    def _repr_html_(self) -> str:
        """Card in Jupyter: the parameters, the description, the verification status and 16 draws (seed 0).

        The picture is ``sample(16, seed=0)``: a row per draw, ink where the worker arrives; a model
        with nothing to sample (the worst case) or too many workers is shown without one.
        """

        def card() -> str:
            masks, caption = None, ""
            if self._CARD_DRAWS * self.n <= self._CARD_ENTRIES:
                try:
                    masks = self.sample(self._CARD_DRAWS, seed=0)
                    caption = f"sample({self._CARD_DRAWS}, seed=0): a row per draw, ink = the worker arrives"
                except (GcsimError, NotImplementedError):  # no distribution to draw from
                    masks = None
            return _html.object_html(
                title=type(self).__name__,
                kind=self.kind,
                params=self.params,
                rows=[("model", self.model_kind), ("description", self.describe())],
                status=_html.verdict(self),
                matrix=masks,
                binary=True,
                caption=caption,
            )

        return _html.safe_html(self, card)
