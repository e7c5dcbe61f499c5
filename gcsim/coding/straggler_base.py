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
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .. import _html
from .._validation import check_declared_arrays, check_int
from ..errors import CatalogueError, GcsimError, InvalidArgumentError, VerificationError

__all__ = ["StragglerModel", "rng_from_seed", "readonly"]


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
