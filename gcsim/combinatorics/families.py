"""The registry of design and graph families behind :func:`gcsim.srg` and :func:`gcsim.bibd`.

A *family* is one construction with its own parameters (the Paley graphs P(q), the
projective geometries PG(n, q), ...).  It is an object (a subclass of :class:`SRGFamily` or
:class:`BIBDFamily`) that declares

* its ``name``, its ``parameters`` (the names of its own parameters, e.g. ``("q",)``), a
  one-line ``construction`` with its reference, and an ``example`` (the parameters of a small
  member, which the conformance, oracle and size-limit tests build);
* :meth:`Family.members`: every member with at most ``max_v`` points, as :class:`Member`
  (parameter tuple, construction name, builder);
* :meth:`Family.members_with_v`: the members on exactly ``v`` points.  The default is the
  generic search (the members up to ``v``, filtered); a family may supply a fast solver, and
  ``tests/test_family_registry.py`` checks that it agrees with the generic search, in
  entries, names and order, up to a bound;
* :meth:`Family.lookup`: the member with given parameters, or None (derived from the above;
  for block designs this direct match is what a family supplies, and the listing is derived).

Families are *discovered*: every public module of the package ``gcsim.combinatorics`` (a name
not starting with ``_``) that declares a module-level ``FAMILIES`` tuple of family instances has
them registered on the registry's first use, in the order of the module names, so a new
family is one new module and nothing else (:func:`discover_families`).  A module that defines a
concrete family class (one with a ``name``) but no ``FAMILIES`` is an error, not silence.
:func:`register_family` adds one at run time (after the built-in ones).  The catalogue listing
(:func:`gcsim.combinatorics.buildable_srgs`), the reverse lookup behind ``gcsim.srg``,
``gcsim.bibd`` and their existence answers, and the tests loop over
:func:`registered_families`.  The order is the priority: when two families build the same
parameters, the one with the smaller ``priority`` (then the earlier registration) names the
construction.

Examples
--------
A toy family (the 5-cycle, SRG(5, 2, 0, 1), already the Paley graph P(5)) registered at run
time and removed again:

>>> from gcsim.combinatorics.families import Member, SRGFamily, register_family, unregister_family
>>> from gcsim.combinatorics.srg_cayley import paley_graph
>>> class Pentagon(SRGFamily):
...     name = "pentagon"
...     parameters = ()
...     construction = "the 5-cycle"
...     example = (5, 2, 0, 1)
...     priority = 1
...     def members(self, max_v):
...         if max_v >= 5:
...             yield Member((5, 2, 0, 1), "pentagon", lambda: paley_graph(5))
>>> fam = register_family(Pentagon())
>>> import gcsim
>>> from gcsim.combinatorics.srg import srg_construction_name
>>> srg_construction_name(5, 2, 0, 1)
'pentagon'
>>> _ = unregister_family("pentagon")
>>> srg_construction_name(5, 2, 0, 1)
'Paley graph P(5)'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count
from types import ModuleType
from typing import Any, ClassVar

from .._discovery import public_modules
from .._validation import check_bool
from ..errors import InvalidArgumentError

__all__ = [
    "Member",
    "Family",
    "SRGFamily",
    "BIBDFamily",
    "register_family",
    "unregister_family",
    "registered_families",
    "get_family",
    "on_registry_change",
    "discover_families",
    "module_families",
    "FAMILY_KINDS",
]

#: kind -> length of its parameter tuple: (v, k, lam, mu) for graphs, (v, k, lam) for designs
FAMILY_KINDS: dict[str, int] = {"srg": 4, "bibd": 3}


@dataclass(frozen=True)
class Member:
    """One member of a family: its parameter tuple, its construction name and its builder.

    ``build()`` returns the object (a :class:`~gcsim.combinatorics.srg_graph.StronglyRegularGraph`
    or a :class:`~gcsim.combinatorics.bibd_design.BIBD`); the factories verify it.
    """

    params: tuple[int, ...]
    name: str
    build: Callable[[], Any]


class Family:
    """A registered design or graph family (subclass :class:`SRGFamily` or :class:`BIBDFamily`).

    Class attributes to set: ``name`` (unique), ``parameters`` (the family's own parameter
    names), ``construction`` (one line, with its reference), ``example`` (the parameters of a
    small member) and optionally ``priority`` (smaller first; built-in families use 10..960)
    and ``supplementary``.
    """

    kind: ClassVar[str] = ""
    name: str = ""
    parameters: tuple[str, ...] = ()
    construction: str = ""
    example: tuple[int, ...] = ()
    priority: int = 1000
    #: a supplementary family only fills parameter sets that the primary families, with their
    #: complements, leave open (it never renames a graph an earlier construction already builds)
    supplementary: bool = False

    def members(self, max_v: int) -> Iterator[Member]:
        """Every member with ``v <= max_v``, in the family's order (parameters of a family grow)."""
        raise NotImplementedError(f"family {self.name!r} declares no members()")

    def members_with_v(self, v: int, target: tuple[int, ...] | None = None) -> Iterator[Member]:
        """The members with exactly ``v`` points, in the order of :meth:`members`.

        The generic search: the members up to ``v``, filtered.  ``target`` (a parameter
        tuple being looked up) lets a fast override skip members that can neither equal
        ``target`` nor be its complement; the result must still contain every such member.
        """
        for m in self.members(v):
            if m.params[0] == v:
                yield m

    def lookup(self, params: tuple[int, ...]) -> Member | None:
        """The member with exactly these parameters, or None."""
        params = tuple(params)
        for m in self.members_with_v(params[0], params):
            if m.params == params:
                return m
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.kind}, priority {self.priority})>"


class SRGFamily(Family):
    """A family of strongly regular graphs: declare :meth:`members` (parameters ``(v, k, lam, mu)``).

    Complements are added by the catalogue (a family lists one graph of each pair, or both).
    """

    kind: ClassVar[str] = "srg"


class BIBDFamily(Family):
    """A family of 2-(v, k, lam) designs: declare :meth:`lookup` (parameters ``(v, k, lam)``).

    The planner of :func:`gcsim.bibd` asks each family, in priority order, for a direct
    construction of the requested parameters (number theory, no building), then tries its
    recursive rules (complement, residual, derived, unions).  :meth:`members` is derived: the
    generic search over ``2 <= k <= v`` and ``lam`` in :attr:`listing_lams`.
    """

    kind: ClassVar[str] = "bibd"
    #: the lambdas the generic listing of :meth:`members` runs over
    listing_lams: tuple[int, ...] = (1, 2, 3)

    def lookup(self, params: tuple[int, ...]) -> Member | None:  # pragma: no cover - abstract
        raise NotImplementedError(f"family {self.name!r} declares no lookup()")

    def members_with_v(self, v: int, target: tuple[int, ...] | None = None) -> Iterator[Member]:
        if target is not None:
            m = self.lookup(tuple(target))
            if m is not None:
                yield m
            return
        for k in range(2, v + 1):
            for lam in self.listing_lams:
                m = self.lookup((v, k, lam))
                if m is not None:
                    yield m

    def members(self, max_v: int) -> Iterator[Member]:
        for v in range(2, max_v + 1):
            yield from self.members_with_v(v)


# ----------------------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------------------

_REGISTRY: dict[str, tuple[int, Family]] = {}  # name -> (registration index, family)
_COUNTER = count()
_LISTENERS: list[Callable[[], None]] = []
_DISCOVERY_LOCK = threading.RLock()
_discovered = False


def module_families(module: ModuleType) -> tuple[Family, ...]:
    """The families a module declares in ``FAMILIES`` (checked), or ``()`` if it declares none.

    Raises
    ------
    InvalidArgumentError
        ``FAMILIES`` is not a tuple or list of family instances, or the module defines a concrete
        family class (a subclass of :class:`Family` with a ``name``) but no ``FAMILIES``: a
        misspelt or forgotten declaration would otherwise leave the family silently absent.

    Examples
    --------
    >>> from gcsim.combinatorics import srg_payne_gq
    >>> [f.name for f in module_families(srg_payne_gq)]
    ['Payne-derived generalized quadrangles']
    """
    declared = getattr(module, "FAMILIES", None)
    if declared is None:
        defined = sorted(
            obj.__name__
            for obj in vars(module).values()
            if isinstance(obj, type)
            and issubclass(obj, Family)
            and obj.__module__ == module.__name__
            and isinstance(obj.name, str)
            and obj.name
        )
        if defined:
            raise InvalidArgumentError(
                "FAMILIES",
                f"module {module.__name__} defines the family class(es) {defined} but no FAMILIES tuple; "
                "declare FAMILIES = (YourFamily(), ...) so that the registry finds them",
            )
        return ()
    if not isinstance(declared, (tuple, list)) or not all(isinstance(f, Family) for f in declared):
        raise InvalidArgumentError(
            "FAMILIES", f"module {module.__name__}: FAMILIES must be a tuple of family instances, got {declared!r:.80}"
        )
    return tuple(declared)


def discover_families(package: str | None = None) -> tuple[Family, ...]:
    """Register the families of every public module of ``package`` (default: this package).

    Each module whose name does not start with ``_`` is imported and its :func:`module_families`
    registered (a name already registered is replaced in place, so a second call changes
    nothing).  The registry calls this once, on its first use, for ``gcsim.combinatorics``; a
    third-party package of families may call it for itself.

    Parameters
    ----------
    package : str, optional
        A package's dotted name.

    Returns
    -------
    tuple of Family
        The families found, in discovery order (module names sorted, then ``FAMILIES`` order).
    """
    global _discovered
    own = package is None
    name = __package__ if own else package
    with _DISCOVERY_LOCK:
        if own:
            if _discovered:
                return ()
            _discovered = True  # first: importing the modules may ask the registry again
        found = [family for module in public_modules(name) for family in module_families(module)]
        for family in found:
            _register(family, replace=True)
        return tuple(found)


def _ensure_discovered() -> None:
    if not _discovered:
        discover_families()


def _changed() -> None:
    for fn in _LISTENERS:
        fn()


def on_registry_change(fn: Callable[[], None]) -> Callable[[], None]:
    """Call ``fn()`` after every registration or removal (the factories clear their caches)."""
    _LISTENERS.append(fn)
    return fn


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Register a design or graph family, so that ``gcsim.srg`` / ``gcsim.bibd`` find it.

    Parameters
    ----------
    family : SRGFamily or BIBDFamily
        An instance.  Its ``name`` must be new (unless ``replace``), its ``example`` a tuple
        of integers of the kind's length (4 for graphs, 3 for designs).
    replace : bool, default False
        Replace a registered family of the same name (keeping its place in the order).

    Returns
    -------
    Family
        ``family`` (so the call can decorate an instance's creation).

    Raises
    ------
    InvalidArgumentError
        Not a family instance, an unknown kind, an empty or taken name, a bad ``example``,
        ``parameters`` not a tuple of strings, or a non-integer ``priority``.
    """
    replace = check_bool("replace", replace)
    _ensure_discovered()  # the built-in families first: a user's family comes after them
    return _register(family, replace=replace)


def _register(family: Family, *, replace: bool) -> Family:
    if not isinstance(family, Family):
        raise InvalidArgumentError("family", f"expected an SRGFamily or BIBDFamily instance, got {family!r}")
    if family.kind not in FAMILY_KINDS:
        raise InvalidArgumentError("family", f"unknown family kind {family.kind!r} (one of {sorted(FAMILY_KINDS)})")
    name = family.name
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError("family.name", f"a family needs a non-empty name, got {name!r}")
    if not isinstance(family.parameters, tuple) or not all(isinstance(p, str) for p in family.parameters):
        raise InvalidArgumentError("family.parameters", f"expected a tuple of names, got {family.parameters!r}")
    ex = family.example
    if (
        not isinstance(ex, tuple)
        or len(ex) != FAMILY_KINDS[family.kind]
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in ex)
    ):
        raise InvalidArgumentError(
            "family.example", f"expected {FAMILY_KINDS[family.kind]} integers for a {family.kind} family, got {ex!r}"
        )
    if not isinstance(family.priority, int) or isinstance(family.priority, bool):
        raise InvalidArgumentError("family.priority", f"expected an integer, got {family.priority!r}")
    if name in _REGISTRY and not replace:
        raise InvalidArgumentError("family.name", f"a family named {name!r} is already registered (replace=True)")
    index = _REGISTRY[name][0] if name in _REGISTRY else next(_COUNTER)
    _REGISTRY[name] = (index, family)
    _changed()
    return family


def unregister_family(name: str) -> Family:
    """Remove the family ``name`` from the registry and return it."""
    _ensure_discovered()
    if name not in _REGISTRY:
        raise InvalidArgumentError("name", f"no family named {name!r} is registered")
    _, family = _REGISTRY.pop(name)
    _changed()
    return family


def registered_families(kind: str | None = None) -> tuple[Family, ...]:
    """The registered families (of ``kind``, "srg" or "bibd", if given), in priority order.

    >>> [f.name for f in registered_families("srg")][:2]
    ['sporadic graphs', 'Paley graphs']
    """
    if kind is not None and kind not in FAMILY_KINDS:
        raise InvalidArgumentError("kind", f"unknown family kind {kind!r} (one of {sorted(FAMILY_KINDS)})")
    _ensure_discovered()
    rows = sorted(_REGISTRY.values(), key=lambda r: (r[1].priority, r[0]))
    return tuple(f for _, f in rows if kind is None or f.kind == kind)


def get_family(name: str) -> Family:
    """The registered family called ``name``."""
    _ensure_discovered()
    if name not in _REGISTRY:
        raise InvalidArgumentError("name", f"no family named {name!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[name][1]
