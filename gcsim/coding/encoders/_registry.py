"""The registry of encoders: one :class:`Encoder` object per method name (theory §5.4).

Everything that lists, dispatches on or compares encoder names asks this registry:
:func:`gcsim.coding.encode`'s dispatch, what a :class:`~gcsim.coding.Scheme` stores and how it
verifies, the advisor's candidates, the CLI's ``--method`` choices, the training code's unbiased
decoder and the bound engine.  The built-in encoders live one module each in this package (every
module whose name does not start with ``_`` exposes ``ENCODERS``) and are registered on first use;
:func:`register_encoder` adds one at run time.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from ..._discovery import declared, public_modules
from ...errors import InvalidArgumentError
from ._common import as_assignment, as_weights

__all__ = [
    "CUSTOM",
    "Encoder",
    "UnbiasedDecoder",
    "register_encoder",
    "unregister_encoder",
    "get_encoder",
    "is_registered",
    "encoders",
    "method_names",
    "proved_bounds",
    "MethodNames",
    "METHODS",
    "options_of",
    "method_table",
    "seeded_rng",
]

#: The method of a user-supplied matrix (:meth:`gcsim.coding.Scheme.from_matrix`); never registered.
CUSTOM = "custom"

#: What :func:`Encoder.build` returns: ``(B, X0, stored, info, extras)``.
BuildResult = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None", dict[str, Any], dict[str, Any]]

_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_STORES = (None, "diagonals", "vectors")
_READS = ("assignment", "weights")


def seeded_rng(seed: int) -> np.random.Generator:
    """The generator of ``seed`` that every seeded encoder draws from: ``numpy.random.default_rng(seed)``.

    The one derive-from-seed convention: :func:`gcsim.coding.encode` hands ``seeded_rng(seed)`` to
    ``build``, and whatever draws a stored array again from its recorded seed -- the structured and
    sparse encoders (:func:`gcsim.coding.structured.encode_structured`,
    :func:`gcsim.coding.sparse_routes.encode_sparse`) and the checks of a loaded bundle -- goes
    through :meth:`Encoder.derived`, which calls the encoder's ``derive`` with this generator.

    Examples
    --------
    >>> float(seeded_rng(3).random()) == float(np.random.default_rng(3).random())
    True
    """
    return np.random.default_rng(seed)


@dataclass(frozen=True)
class UnbiasedDecoder:
    """An encoder's unbiased reference decoder for training (theory §45, unbiasedness).

    Attributes
    ----------
    label : str
        Its name in messages ("RD").
    decoders : callable
        ``decoders(stored, masks, replication, p, eps, options) -> X`` of shape ``(count, n, m)``:
        ``stored`` the scheme's stored arrays (``(m, n)`` or ``(count, m, n)``), ``masks`` bool
        ``(count, n)``, ``replication`` the regular ``r``, ``p`` the straggling probabilities ``(n,)``.
    draw : callable, optional
        ``draw(rng, count, A, m, eps, options) -> (B, stored)``: ``count`` fresh encoders in one batch
        (``B`` of shape ``(count, m N, n)``), used when the code is redrawn every iteration.
    regular : bool
        The decoder needs regular replication ``r_i = r``.
    """

    label: str
    decoders: Callable[..., np.ndarray]
    draw: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None
    regular: bool = True


@dataclass(frozen=True)
class Encoder:
    """One encoder of :func:`gcsim.coding.encode`: its name, its construction and what it promises.

    Attributes
    ----------
    name : str
        The method name (lower case, words joined by ``-``).
    build : callable
        ``build(M, m, rng, eps, options) -> (B, X0, stored, info, extras)``: ``M`` the matrix read by
        ``reads`` (``N x n``), ``rng`` a seeded generator, ``options`` a dict the builder pops its
        options from (what is left is refused as unknown).  ``B`` is ``(m N, n)``, ``X0`` the reference
        decoder ``(n, m)`` or None, ``stored`` the array kept as ``stores`` says, ``info`` entries of
        ``Scheme.options``, ``extras`` entries of ``Scheme.extras``.
    summary : str
        One line for the guide's table and the CLI's help.
    theory : str
        Where it is defined and proved (``"§5.4"``).
    stores : {None, "diagonals", "vectors"}
        Where ``stored`` goes: ``Scheme.diagonals`` or ``Scheme.extras["vectors"]`` (or nowhere).
    randomized : bool
        ``B`` depends on the seed (other layers ask :meth:`depends_on_seed`: the bound engine redraws
        it for expectation bounds, the experiments draw it once per seed).
    uses_eps : bool
        It reads ``eps`` (the CLI passes ``--eps`` on only then).
    options : tuple of str
        The keyword options it accepts (kept in ``Scheme.options`` when it records them).
    reads : {"assignment", "weights"}
        Its input: a 0/1 assignment, or non-negative integer weights (``.weights``) whose support is
        the assignment.
    verify : callable, optional
        ``verify(scheme, name)`` raises :class:`gcsim.errors.VerificationError` when the scheme is not
        what this encoder builds (beyond the generic support and shape checks).
    applies : callable, optional
        ``applies(A, m) -> str | None``: why the advisor should not try it on ``A`` at ``m`` (None: try it).
    advisor : int, optional
        Its place in the advisor's list of encoders tried at the asked ``m`` (None: not tried there).
    needs_s : bool
        It takes option ``s``, the number of stragglers it is designed for (the CLI and the advisor set it).
    m1_only : bool
        An ``m = 1`` code.
    m1_is_assignment : bool
        At ``m = 1`` its matrix is ``B = A`` (the advisor skips it there: the naive row is the same code).
    column_scaled_m1 : bool
        At ``m = 1`` its matrix is ``B = A D`` with ``D`` diagonal and invertible (theory §46 applies).
    bounds : tuple of str
        Names of :data:`gcsim.coding.verify.BUILTIN_BOUNDS` proved for it specifically.
    unbiased : UnbiasedDecoder, optional
        Its unbiased reference decoder for training.
    baseline : bool
        The baseline the figures compare the codes with (naive stacking).
    diagonal_stack : bool
        ``B`` is exactly the stack of ``A diag(d_k)`` of its stored ``diagonals`` (RD): structured
        evaluators may use the diagonals instead of ``B``.
    derive : callable, optional
        ``derive(rng, m, n, eps, options) -> stored``: the array ``build`` stores, drawn from the
        seeded generator before anything else (RD: the diagonals); ``build`` draws it through this
        function and :meth:`derived` draws it again from a recorded seed (the one derive-from-seed
        path, :func:`seeded_rng`).
    example : callable, optional
        ``example() -> (assignment_or_design, m, options)``: a small instance for the tests
        (``encode(M, m, name, **options)``; ``options`` may hold ``eps`` and ``seed``).
    order : int
        Position in :data:`METHODS` (ties by registration order).
    """

    name: str
    build: Callable[..., BuildResult]
    summary: str
    theory: str = ""
    stores: str | None = None
    randomized: bool = True
    uses_eps: bool = False
    options: tuple[str, ...] = ()
    reads: str = "assignment"
    verify: Callable[[Any, str], None] | None = None
    applies: Callable[[np.ndarray, int], str | None] | None = None
    advisor: int | None = None
    needs_s: bool = False
    m1_only: bool = False
    m1_is_assignment: bool = False
    column_scaled_m1: bool = False
    bounds: tuple[str, ...] = ()
    unbiased: UnbiasedDecoder | None = None
    baseline: bool = False
    diagonal_stack: bool = False
    derive: Callable[..., np.ndarray] | None = None
    example: Callable[[], Any] | None = None
    order: int = 1000

    def read(self, assignment_or_design: Any) -> np.ndarray:
        """The matrix ``build`` receives: the 0/1 assignment, or the integer weights (``reads``)."""
        if self.reads == "weights":
            return as_weights(assignment_or_design)
        return as_assignment(assignment_or_design)

    def source(self, scheme: Any) -> np.ndarray:
        """What to encode again to redraw ``scheme`` (its weights, else its assignment)."""
        if self.reads == "weights":
            return np.asarray(scheme.extras["weights"])
        return np.asarray(scheme.assignment)

    # -- what other layers ask of an encoder (the flags above are the declarations they read) ------
    def structured_route(self, m: int) -> str | None:
        """How a structured route (theory §42–§44, §47.7) holds this encoder at ``m`` without ``B``.

        ``"diagonals"``: ``B`` is the stack of ``A diag(d_l)`` of its stored diagonals (RD,
        ``diagonal_stack``); ``"assignment"``: ``B = A`` at ``m = 1`` (``m1_is_assignment``, unit
        diagonals); None: only the dense ``B`` describes it.

        Examples
        --------
        >>> get_encoder("rd").structured_route(2), get_encoder("bibd-optimal").structured_route(1)
        ('diagonals', 'assignment')
        >>> get_encoder("naive").structured_route(1) is None   # naive is the baseline B = 1_m ⊗ A itself
        True
        """
        if self.diagonal_stack:
            return "diagonals"
        if m == 1 and self.m1_is_assignment:
            return "assignment"
        return None

    def is_assignment_code(self, m: int) -> bool:
        """True when its ``B`` at ``m`` is the assignment ``A`` itself (``m = 1``): the naive code under another name.

        Examples
        --------
        >>> get_encoder("bibd-optimal").is_assignment_code(1), get_encoder("bibd-optimal").is_assignment_code(2)
        (True, False)
        """
        return self.structured_route(m) == "assignment"

    def spectral_bound_applies(self, m: int, eps: float) -> bool:
        """Whether a spectral bound of theory §46 covers it: ``B = A D`` at ``m = 1``
        (``column_scaled_m1``), or the spectral RD bound at ``eps = 0`` (``"spectral_rd_upper"`` in ``bounds``).

        Examples
        --------
        >>> get_encoder("rd").spectral_bound_applies(2, 0.0), get_encoder("rd").spectral_bound_applies(2, 0.1)
        (True, False)
        """
        return (m == 1 and self.column_scaled_m1) or ("spectral_rd_upper" in self.bounds and eps == 0.0)

    def recorded_options(self, eps: float, seed: int) -> dict[str, Any]:
        """The options a built scheme records besides the builder's: ``eps`` only where ``build`` reads it.

        Examples
        --------
        >>> get_encoder("rd").recorded_options(0.1, 3), get_encoder("naive").recorded_options(0.1, 3)
        ({'eps': 0.1, 'seed': 3}, {'seed': 3})
        """
        return {"eps": eps, "seed": seed} if self.uses_eps else {"seed": seed}

    def design_options(self, s: int | None) -> dict[str, Any]:
        """The options that tell it the number of stragglers ``s`` it is designed for (``needs_s``), else none.

        Examples
        --------
        >>> get_encoder("exact-gaussian").design_options(2), get_encoder("rd").design_options(2)
        ({'s': 2}, {})
        """
        return {"s": s} if self.needs_s else {}

    def designed_for_stragglers(self) -> bool:
        """Whether it is built for a number of stragglers ``s`` (``needs_s``: :meth:`design_options` passes one).

        Examples
        --------
        >>> get_encoder("exact-gaussian").designed_for_stragglers(), get_encoder("rd").designed_for_stragglers()
        (True, False)
        """
        return self.needs_s

    def depends_on_seed(self) -> bool:
        """Whether its ``B`` depends on the seed (``randomized``): the bound engine redraws it for
        expectation bounds and the experiments draw it once per seed; a deterministic code's seed
        changes nothing.

        Examples
        --------
        >>> get_encoder("rd").depends_on_seed(), get_encoder("naive").depends_on_seed()
        (True, False)
        """
        return bool(self.randomized)

    def unread_options(self) -> tuple[str, ...]:
        """The recorded options its ``B`` does not depend on: ``eps`` where ``build`` reads none
        (``uses_eps``), ``seed`` for a deterministic code (:meth:`depends_on_seed`).

        Examples
        --------
        >>> get_encoder("rd").unread_options(), get_encoder("naive").unread_options()
        ((), ('eps', 'seed'))
        """
        return tuple(key for key, read in (("eps", self.uses_eps), ("seed", self.depends_on_seed())) if not read)

    def derived(self, m: int, n: int, eps: float, seed: int, options: Mapping[str, Any]) -> np.ndarray:
        """The array ``build`` stores for these arguments, drawn again: ``derive(seeded_rng(seed), ...)``.

        Raises
        ------
        InvalidArgumentError
            The encoder stores nothing drawn from the seed alone (no ``derive``), or a bad option.

        Examples
        --------
        >>> from gcsim.coding.schemes import encode
        >>> A = np.eye(3, dtype=int)
        >>> sch = encode(A, 2, "rd", eps=0.1, seed=4)
        >>> bool(np.array_equal(get_encoder("rd").derived(2, 3, 0.1, 4, {}), sch.diagonals))
        True
        """
        if self.derive is None:
            raise InvalidArgumentError("method", f"{self.name!r} stores no array drawn from the seed alone")
        return self.derive(seeded_rng(seed), m, n, eps, dict(options))

    def __repr__(self) -> str:
        return f"Encoder({self.name!r})"


_lock = threading.RLock()
_registry: dict[str, Encoder] = {}
_builtin: set[str] = set()
_loaded = False


def _check(encoder: Any) -> Encoder:
    if not isinstance(encoder, Encoder):
        raise InvalidArgumentError("encoder", f"must be a gcsim.coding.Encoder, got {type(encoder).__name__}")
    name = encoder.name
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == CUSTOM:
        raise InvalidArgumentError(
            "encoder", f"name must be lower-case words joined by '-' (not {CUSTOM!r}), got {name!r}"
        )
    if not callable(encoder.build):
        raise InvalidArgumentError("encoder", f"{name!r}: build must be callable")
    if encoder.stores not in _STORES:
        raise InvalidArgumentError("encoder", f"{name!r}: stores must be one of {_STORES}, got {encoder.stores!r}")
    if encoder.reads not in _READS:
        raise InvalidArgumentError("encoder", f"{name!r}: reads must be one of {_READS}, got {encoder.reads!r}")
    if not all(isinstance(o, str) for o in encoder.options):
        raise InvalidArgumentError("encoder", f"{name!r}: options must be a tuple of names")
    for attr in ("verify", "applies", "derive", "example"):
        value = getattr(encoder, attr)
        if value is not None and not callable(value):
            raise InvalidArgumentError("encoder", f"{name!r}: {attr} must be callable or None")
    return encoder


def _ensure_loaded() -> None:
    """Register the built-in encoders (every public module of this package) once."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        package = __package__ or "gcsim.coding.encoders"
        found = [enc for module in public_modules(package) for enc in declared(module, "ENCODERS", "encoders")]
        # user encoders registered before the first lookup keep their place after the built-ins
        user = dict(_registry)
        _registry.clear()
        for enc in sorted(found, key=lambda e: (e.order, e.name)):
            if enc.name in _registry:
                raise InvalidArgumentError("encoder", f"built-in encoder {enc.name!r} is defined twice")
            _registry[enc.name] = _check(enc)
            _builtin.add(enc.name)
        for name, enc in user.items():
            if name in _registry:
                raise InvalidArgumentError("encoder", f"{name!r} is a built-in encoder")
            _registry[name] = enc
        _loaded = True


def register_encoder(encoder: Encoder, *, replace: bool = False) -> Encoder:
    """Add an encoder to the registry; :func:`gcsim.coding.encode` and everything built on it see it.

    Parameters
    ----------
    encoder : Encoder
    replace : bool
        Replace a user encoder of the same name (built-ins cannot be replaced).

    Returns
    -------
    Encoder
        The encoder registered.

    Raises
    ------
    InvalidArgumentError
        Not an :class:`Encoder`, a malformed name or field, or a name already taken.

    Examples
    --------
    >>> import numpy as np
    >>> from gcsim.coding import Encoder, encode, register_encoder, unregister_encoder
    >>> def build(A, m, rng, eps, opts):          # every block is A / r: the averaging code
    ...     B = np.tile(A / A.sum(axis=1, keepdims=True), (m, 1))
    ...     return B, None, None, {}, {}
    >>> _ = register_encoder(Encoder("average", build, "B = 1_m ⊗ (A / r)", randomized=False))
    >>> encode(np.eye(2, dtype=int), 1, "average").B.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> unregister_encoder("average")
    """
    encoder = _check(encoder)
    _ensure_loaded()
    with _lock:
        if encoder.name in _builtin:
            raise InvalidArgumentError("encoder", f"{encoder.name!r} is a built-in encoder and cannot be replaced")
        if encoder.name in _registry and not replace:
            raise InvalidArgumentError("encoder", f"{encoder.name!r} is already registered (pass replace=True)")
        _registry[encoder.name] = encoder
    return encoder


def unregister_encoder(name: str) -> None:
    """Remove an encoder added by :func:`register_encoder` (built-ins stay)."""
    _ensure_loaded()
    with _lock:
        if name in _builtin:
            raise InvalidArgumentError("name", f"{name!r} is a built-in encoder and cannot be removed")
        if name not in _registry:
            raise InvalidArgumentError("name", f"no encoder {name!r} is registered")
        del _registry[name]


def is_registered(name: Any) -> bool:
    """Whether ``name`` is the name of a registered encoder."""
    _ensure_loaded()
    return isinstance(name, str) and name in _registry


def get_encoder(name: Any) -> Encoder:
    """The encoder registered as ``name``.

    Raises
    ------
    InvalidArgumentError
        ``name`` is not a registered method (the message lists them).

    Examples
    --------
    >>> get_encoder("rd").uses_eps, get_encoder("naive").randomized
    (True, False)
    """
    _ensure_loaded()
    enc = _registry.get(name) if isinstance(name, str) else None
    if enc is None:
        raise InvalidArgumentError("method", f"must be one of {method_names()}, got {name!r}")
    return enc


def encoders() -> tuple[Encoder, ...]:
    """Every registered encoder, built-ins first in their documented order."""
    _ensure_loaded()
    return tuple(_registry.values())


def method_names() -> tuple[str, ...]:
    """The names of every registered encoder (the order of :func:`encoders`)."""
    return tuple(e.name for e in encoders())


def proved_bounds(method: Any) -> tuple[str, ...]:
    """The encoder-specific bounds proved for ``method`` (empty for ``"custom"`` or an unknown name)."""
    return get_encoder(method).bounds if is_registered(method) else ()


class MethodNames(Sequence[str]):
    """A live, read-only view of a list of method names (default :func:`method_names`).

    It sees encoders registered later and behaves like the tuple of names (``in``, iteration,
    ``len``, indexing, comparison with a tuple), so it can be an ``argparse`` ``choices`` list that
    imports the encoders only when used.

    Parameters
    ----------
    source : callable, optional
        ``source() -> tuple of str``, read on every use.

    Examples
    --------
    >>> "rd" in METHODS, METHODS[0]
    (True, 'naive')
    """

    def __init__(self, source: Callable[[], tuple[str, ...]] | None = None):
        self._source = source

    def _names(self) -> tuple[str, ...]:
        return method_names() if self._source is None else tuple(self._source())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return is_registered(name) if self._source is None else name in self._names()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MethodNames, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return repr(self._names())


#: The registered method names, live (see :class:`MethodNames`).
METHODS = MethodNames()


def options_of(encoder: Encoder, options: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``options`` (a scheme's) that ``encoder`` accepts as keyword options."""
    return {k: options[k] for k in encoder.options if k in options}


def method_table() -> str:
    """The Markdown table of the registered encoders (docs/guides/coding.md holds it; a test compares).

    Columns: the method, what it builds (its ``summary``), where the theory defines it, whether it
    is randomized, whether it reads ``eps``, and its options.

    Examples
    --------
    >>> method_table().splitlines()[0]
    '| method | what it builds | theory | randomized | ε | options |'
    """
    rows = ["| method | what it builds | theory | randomized | ε | options |", "|---|---|---|---|---|---|"]
    for e in encoders():
        options = ", ".join(f"`{o}`" for o in e.options) or "—"
        rows.append(
            f"| `{e.name}` | {e.summary} | {e.theory or '—'} | {'yes' if e.randomized else 'no'} "
            f"| {'yes' if e.uses_eps else '—'} | {options} |"
        )
    return "\n".join(rows) + "\n"
