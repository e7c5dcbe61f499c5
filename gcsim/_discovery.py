"""Plug-in discovery, the one loop behind every registry of gcsim.

A registry (encoders, straggler models, quantizers, bounds, collectives, design families) keeps no
list of its entries: every *public* module of its package (a name not starting with ``_``) is
imported on first use and read.  :func:`public_modules` is that walk; :func:`declared` reads the
tuple a module declares (``ENCODERS``, ``MODELS``, ...), so that a misspelt or forgotten
declaration is an error naming the module instead of an entry silently absent.  What an entry must
be, how entries are ordered and what a name registered twice means stay with each registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["public_modules", "declared"]


def public_modules(package: Any) -> tuple[ModuleType, ...]:
    """Every module of ``package`` whose name does not start with ``_``, imported, in name order.

    Parameters
    ----------
    package : str
        The package's dotted name (its ``__path__`` may list several folders).

    Raises
    ------
    InvalidArgumentError
        ``package`` is not a dotted name, cannot be imported, or is a module and not a package.

    Examples
    --------
    >>> "gcsim.coding.quantizers.stochastic" in [m.__name__ for m in public_modules("gcsim.coding.quantizers")]
    True
    """
    if not isinstance(package, str) or not package:
        raise InvalidArgumentError("package", f"expected a package's dotted name, got {package!r}")
    try:
        paths = importlib.import_module(package).__path__
    except ImportError as exc:
        raise InvalidArgumentError("package", f"cannot import {package!r}: {exc}") from None
    except AttributeError:
        raise InvalidArgumentError("package", f"{package!r} is a module, not a package") from None
    infos = sorted(pkgutil.iter_modules(list(paths)), key=lambda i: i.name)
    return tuple(importlib.import_module(f"{package}.{i.name}") for i in infos if not i.name.startswith("_"))


def declared(
    module: ModuleType,
    attribute: str,
    what: str,
    *,
    entry: Callable[[Any], bool] | None = None,
    entry_is: str = "",
) -> tuple[Any, ...]:
    """The entries ``module`` declares in its tuple ``attribute`` (a list is accepted), checked.

    Parameters
    ----------
    module : module
        A public module of a registry's package.
    attribute : str
        The name of the declaration (``"ENCODERS"``).
    what : str
        What the entries are, for the message (``"encoders"``).
    entry : callable, optional
        ``entry(item) -> bool``: whether an item is a valid entry (default: every item is).
    entry_is : str
        What a valid entry is, for the message (``"a StragglerModel subclass with its own model_kind"``).

    Raises
    ------
    InvalidArgumentError
        The module declares no tuple ``attribute``, or an entry fails ``entry``; the message names
        the module.

    Examples
    --------
    >>> from gcsim.coding.quantizers import stochastic
    >>> "maxabs" in [q.name for q in declared(stochastic, "QUANTIZERS", "quantizers")]
    True
    >>> declared(stochastic, "ENCODERS", "encoders")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: ENCODERS: module gcsim.coding.quantizers.stochastic declares no ENCODERS ...
    """
    value = getattr(module, attribute, None)
    if not isinstance(value, (tuple, list)):
        package = module.__name__.rpartition(".")[0]
        raise InvalidArgumentError(
            attribute,
            f"module {module.__name__} declares no {attribute} tuple (got {value!r:.60}); every public module of "
            f"{package} lists its {what} there (helpers go in modules named _...)",
        )
    if entry is not None:
        for item in value:
            if not entry(item):
                raise InvalidArgumentError(attribute, f"module {module.__name__}: {item!r:.60} is not {entry_is}")
    return tuple(value)
