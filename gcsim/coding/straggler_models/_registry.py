"""The registry of straggler models: every kind found in the public modules of this package.

A public module (a name not starting with ``_``) declares its model classes in ``MODELS``; the
package finds it on import, with no import line to add anywhere.  A public module that declares
no ``MODELS`` (or one whose entries are not model classes with their own ``model_kind``) is an
error, not silence: a forgotten declaration would leave the kind absent from every command.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from types import MappingProxyType, ModuleType
from typing import Any

from ..._discovery import declared, public_modules
from ...errors import GcsimError, InvalidArgumentError
from ..straggler_base import StragglerModel

__all__ = [
    "discover_models",
    "module_models",
    "model_classes",
    "model_class",
    "model_kinds",
    "spec_kinds",
    "spec_grammar",
    "straggler_model",
    "parse_spec",
]

_registry: dict[str, type[StragglerModel]] = {}
_lock = threading.Lock()


def module_models(module: ModuleType) -> tuple[type[StragglerModel], ...]:
    """The model classes a module declares in ``MODELS`` (checked).

    Raises
    ------
    InvalidArgumentError
        No ``MODELS`` tuple, or an entry that is not a :class:`StragglerModel` subclass defining its
        own ``model_kind``.

    Examples
    --------
    >>> from gcsim.coding.straggler_models import markov
    >>> [c.model_kind for c in module_models(markov)]
    ['markov']
    """
    return declared(
        module,
        "MODELS",
        "model classes",
        entry=lambda c: isinstance(c, type) and issubclass(c, StragglerModel) and "model_kind" in vars(c),
        entry_is="a StragglerModel subclass with its own model_kind",
    )


def _register(classes: Iterable[type[StragglerModel]]) -> None:
    for cls in classes:
        kind = cls.model_kind
        if kind in _registry and _registry[kind] is not cls:
            raise InvalidArgumentError(
                "MODELS", f"straggler model kind {kind!r} is defined twice ({_registry[kind].__name__}, {cls.__name__})"
            )
        _registry[kind] = cls
    ordered = sorted(_registry.values(), key=lambda c: (c.order, c.model_kind))
    _registry.clear()
    _registry.update((c.model_kind, c) for c in ordered)


def discover_models(package: str | None = None) -> tuple[type[StragglerModel], ...]:
    """Register the models of every public module of ``package`` (default: this package).

    Called once for :mod:`gcsim.coding.straggler_models` when it is imported; a third-party
    package of models may call it for itself (registering a kind again is a no-op).

    Returns
    -------
    tuple of type
        The classes found, in module-name order.
    """
    name = package if package is not None else __name__.rpartition(".")[0]
    with _lock:
        found = [cls for module in public_modules(name) for cls in module_models(module)]
        _register(found)
    return tuple(found)


def model_classes() -> MappingProxyType[str, type[StragglerModel]]:
    """Kind -> class of every registered model, in listing order.

    >>> list(model_classes())[:3]
    ['fixed', 'bernoulli', 'all']
    """
    return MappingProxyType(_registry)


def model_kinds() -> tuple[str, ...]:
    """Every registered kind, in listing order (``gcsim.coding.stragglers.KINDS``)."""
    return tuple(_registry)


def model_class(kind: Any) -> type[StragglerModel]:
    """The class of a kind, or a refusal naming ``kind`` and listing the kinds.

    >>> model_class("markov").__name__
    'MarkovModel'
    """
    if not isinstance(kind, str) or kind not in _registry:
        raise InvalidArgumentError("kind", f"must be one of {model_kinds()}, got {kind!r}")
    return _registry[kind]


def spec_kinds() -> tuple[str, ...]:
    """The kinds a ``KIND:VALUES`` spec may name, in grammar order.

    >>> spec_kinds()[:5]
    ('fixed', 'all', 'worst', 'bernoulli', 'markov')
    """
    classes = [c for c in _registry.values() if c.spec_values is not None]
    return tuple(c.model_kind for c in sorted(classes, key=lambda c: (c.spec_order, c.model_kind)))


def spec_grammar() -> str:
    """The ``KIND:VALUES`` grammar of every kind that has one (``gcsim.advisor.core.STRAGGLER_SPEC``)."""
    return "KIND:VALUES: " + ", ".join(_registry[k].spec_grammar() for k in spec_kinds())


def straggler_model(kind: str, n: int | None = None, **params: Any) -> StragglerModel:
    """Build a straggler model of a registered kind (theory §5.2).

    Parameters
    ----------
    kind : str
        One of :func:`model_kinds`: ``"fixed"``, ``"bernoulli"``, ``"all"``, ``"worst"``,
        ``"markov"``, ``"trace"``, ``"delay"`` and any model added to this package.
    n : int
        Number of workers (for ``"trace"`` and ``"delay"`` it may be omitted).
    **params
        The kind's ``parameters``: ``s`` (fixed, all, worst, trace-first), ``p`` (bernoulli),
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
    return model_class(kind).build(n, params)


def parse_spec(text: Any, n: int) -> StragglerModel:
    """The straggler model over ``n`` workers that a ``KIND:VALUES`` spec names (:func:`spec_grammar`).

    >>> parse_spec("markov:0.05,0.5", 13).to_spec()
    'markov:0.05,0.5'
    >>> parse_spec("fixed", 13)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: fixed takes one value, e.g. fixed:10
    """
    if not isinstance(text, str):
        raise InvalidArgumentError("stragglers", f"must be a straggler model or a spec {spec_grammar()}")
    kind, _, values = text.partition(":")
    parts = [v for v in values.split(",") if v] if values else []
    if kind not in spec_kinds():
        raise InvalidArgumentError("stragglers", f"unknown kind {kind!r} in {text!r}; {spec_grammar()}")
    try:
        return _registry[kind].from_spec(parts, n, text)
    except GcsimError as exc:
        if isinstance(exc, InvalidArgumentError) and str(exc).startswith("stragglers:"):
            raise
        raise InvalidArgumentError("stragglers", f"{text!r}: {exc}") from None
