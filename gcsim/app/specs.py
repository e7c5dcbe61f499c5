"""The one parser of design arguments on the command line: named instances, family specs, files.

Every command that takes a design (``--design`` of ``error``, ``bounds verify``, ``decoder-table``,
``gc run``; the positional ``FAMILY PARAMS...`` of ``construct`` and ``exists``) reads
it here, so a wrong number of parameters or a bad value is the same one line everywhere, naming
the flag and the expected form (exit status 2, never a traceback).

The grammar (docs/guides/cli.md, "Design arguments")::

    bibd:V,K[,LAM]                 2-(V, K, LAM) design, LAM = 1 by default
    srg:V,K,LAM,MU                 strongly regular graph
    coset:K,M,DELTA                coset bipartite graph over Z_K (cyclic group)
    biregular:V,B,R,K[,SEED]       seeded bi-regular bipartite graph, SEED = 0 by default

Parameters are decimal integers separated by commas (spaces around them are ignored); an
empty parameter (``bibd:7,,3``), a sign where none belongs, or too many digits are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError
from .common import UsageError, parse_integer

__all__ = ["FAMILY_FORMS", "FamilySpec", "family_form", "parse_family_spec", "check_family_params", "design_arg"]


@dataclass(frozen=True)
class _Form:
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    def text(self, family: str, sep: str = ",") -> str:
        names = [n.upper() for n in self.required]
        shown = sep.join(names)
        for n in self.optional:
            shown += f"[{sep}{n.upper()}]"
        return f"{family}:{shown}" if sep == "," else f"{family} {shown}"


#: family -> its parameters: required, then optional (the last of biregular is its seed)
FAMILY_FORMS: dict[str, _Form] = {
    "bibd": _Form(("v", "k"), ("lam",)),
    "srg": _Form(("v", "k", "lam", "mu")),
    "coset": _Form(("k", "m", "delta")),
    "biregular": _Form(("v", "b", "r", "k"), ("seed",)),
}


@dataclass(frozen=True)
class FamilySpec:
    """A parsed family spec: the family, its construction parameters and the seed (biregular)."""

    family: str
    params: tuple[int, ...]
    seed: int = 0

    def build(self, flag: str, *, group: str = "cyclic", existence: bool = False, positional: bool = False) -> Any:
        """Build the object (or answer existence); a refused value names ``flag`` and the form."""
        from ..catalogue.named import build_family

        try:
            return build_family(self.family, list(self.params), seed=self.seed, group=group, existence=existence)
        except InvalidArgumentError as exc:
            name = exc.argument
            detail = str(exc)[len(name) + 2 :] if str(exc).startswith(f"{name}: ") else str(exc)
            raise UsageError(
                f"{flag}: {name} {detail} (in {self.text()}; form {family_form(self.family, positional=positional)})"
            ) from None

    def text(self) -> str:
        from .._validation import _shown_int

        params = list(self.params) + ([self.seed] if self.family == "biregular" and self.seed else [])
        return f"{self.family}:{','.join(_shown_int(p) for p in params)}"  # a 400-digit v is not echoed whole


def family_form(family: str, *, positional: bool = False) -> str:
    """The expected form of a family spec, ``bibd:V,K[,LAM]`` (or ``bibd V K [LAM]`` for ``construct``).

    >>> family_form("biregular"), family_form("srg", positional=True)
    ('biregular:V,B,R,K[,SEED]', 'srg V K LAM MU')
    """
    form = FAMILY_FORMS[family]
    if not positional:
        return form.text(family)
    words = [n.upper() for n in form.required] + [f"[{n.upper()}]" for n in form.optional]
    return " ".join([family, *words])


def _families() -> str:
    return ", ".join(family_form(f) for f in FAMILY_FORMS)


def check_family_params(flag: str, family: str, numbers: list[int], *, positional: bool = False) -> FamilySpec:
    """Check the number of parameters of ``family``; returns the :class:`FamilySpec`.

    >>> check_family_params("--design", "bibd", [7, 3])
    FamilySpec(family='bibd', params=(7, 3), seed=0)
    >>> check_family_params("--design", "srg", [10, 3, 0])
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --design: srg takes 4 parameters (srg:V,K,LAM,MU), got 3
    """
    if family not in FAMILY_FORMS:
        raise UsageError(f"{flag}: unknown family {family!r}; the forms are {_families()}")
    form = FAMILY_FORMS[family]
    lo, hi = len(form.required), len(form.required) + len(form.optional)
    if not lo <= len(numbers) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise UsageError(
            f"{flag}: {family} takes {count} parameters ({family_form(family, positional=positional)}), "
            f"got {len(numbers)}"
        )
    if family == "biregular":
        return FamilySpec(family, tuple(numbers[:4]), numbers[4] if len(numbers) > 4 else 0)
    return FamilySpec(family, tuple(numbers))


def parse_family_spec(flag: str, text: str) -> FamilySpec:
    """``FAMILY:P1,P2,...`` -> a :class:`FamilySpec`; anything else is one line naming ``flag`` and the form.

    >>> parse_family_spec("--design", "biregular:40,20,3,6,1")
    FamilySpec(family='biregular', params=(40, 20, 3, 6), seed=1)
    >>> parse_family_spec("--design", "bibd:7,3,1,9")
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --design: bibd takes 2 to 3 parameters (bibd:V,K[,LAM]), got 4
    >>> parse_family_spec("--design", "coset:27,x,5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --design: parameter 2 of coset:27,x,5 must be an integer, got 'x' (form ...)
    """
    family, colon, rest = text.partition(":")
    family = family.strip()
    if not colon:
        raise UsageError(f"{flag}: expected FAMILY:PARAMS, got {text!r}")
    if family not in FAMILY_FORMS:
        raise UsageError(f"{flag}: unknown family {family!r}; the forms are {_families()}")
    items = [] if rest.strip() == "" else rest.split(",")
    numbers = []
    for i, item in enumerate(items, start=1):
        if item.strip() == "":
            raise UsageError(f"{flag}: parameter {i} of {text!r} is empty (form {family_form(family)})")
        try:
            numbers.append(parse_integer(item))
        except ValueError as exc:
            shown = text if len(text) <= 60 else f"{family}:..."
            raise UsageError(f"{flag}: parameter {i} of {shown} {exc} (form {family_form(family)})") from None
    return check_family_params(flag, family, numbers)


def design_arg(flag: str, text: str) -> Any:
    """The assignment object a design argument names: a named instance, a family spec or a catalogue file.

    Refused in one line naming ``flag``: an empty argument, a family spec of the wrong form or
    with values the family refuses, a name that is neither an instance nor a file.  A file is
    loaded and re-verified (:func:`gcsim.catalogue.named.resolve_design`); its refusals are
    :class:`~gcsim.errors.CatalogueError` (exit status 1).

    >>> design_arg("--design", "srg:10,3,0,1").params
    SRGParams(v=10, k=3, lam=0, mu=1)
    >>> design_arg("--design", "")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --design: is empty; give a named instance (pg2_9, ...), a family spec ...
    """
    from ..catalogue.named import NAMED_INSTANCES, resolve_design
    from ..catalogue.objects import load_object

    if not isinstance(text, str) or text.strip() == "":
        raise UsageError(
            f"{flag}: is empty; give a named instance ({next(iter(NAMED_INSTANCES))}, ...), "
            f"a family spec ({family_form('bibd')}, ...) or a catalogue file"
        )
    if text in NAMED_INSTANCES:
        return resolve_design(text)
    family = text.partition(":")[0].strip()
    if ":" in text and family in FAMILY_FORMS:
        return parse_family_spec(flag, text).build(flag)
    if ":" in text and (Path(text).exists() or Path(f"{text}.json").exists()):
        return load_object(text)  # a catalogue file whose path has a colon in it
    try:
        return resolve_design(text)
    except InvalidArgumentError as exc:
        if exc.argument != "design":
            raise
        detail = str(exc)[len("design: ") :] if str(exc).startswith("design: ") else str(exc)
        if ":" in text and not any(c in family for c in "/\\."):
            detail = f"unknown family {family!r}; the forms are {_families()}"
        raise UsageError(f"{flag}: {detail}") from None
