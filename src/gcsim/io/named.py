"""The named instances used throughout gcsim (SPEC §2) and their catalogue names.

Each entry builds the object from its factory with fixed arguments (and seed),
so the committed files under ``designs/`` can be regenerated and compared.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["NAMED_INSTANCES", "FAMILIES", "build_named", "build_family", "resolve_design"]


def _pg29():
    from ..combinatorics.bibd import bibd
    return bibd(91, 10, 1)


def _coset():
    from ..combinatorics.coset import coset_graph
    return coset_graph(27, 2, 5)


def _biregular():
    from ..combinatorics.biregular import biregular_graph
    return biregular_graph(40, 20, 3, 6, seed=0)


def _paley13():
    from ..combinatorics.srg import srg
    return srg(13, 6, 2, 3)


def _petersen():
    from ..combinatorics.srg import srg
    return srg(10, 3, 0, 1)


#: catalogue name -> (description, factory)
NAMED_INSTANCES: dict[str, tuple[str, Callable[[], Any]]] = {
    "pg2_9": ("(91,91,10,10,1) BIBD: points vs lines of PG(2,9)", _pg29),
    "coset_27_2_5": ("(27,2,5) coset bipartite graph over Z_27", _coset),
    "biregular_40_20_3_6": ("(40,20,3,6) bi-regular bipartite graph, seed 0", _biregular),
    "paley13": ("Paley(13) strongly regular graph (13,6,2,3)", _paley13),
    "petersen": ("Petersen graph (10,3,0,1)", _petersen),
}


def build_named(name: str):
    """Build the named instance ``name`` (a key of :data:`NAMED_INSTANCES`)."""
    from ..errors import InvalidArgumentError

    if name not in NAMED_INSTANCES:
        raise InvalidArgumentError("name", f"unknown named instance {name!r}; known: {sorted(NAMED_INSTANCES)}")
    return NAMED_INSTANCES[name][1]()


#: family -> factory (module, function); the parameters are positional integers
FAMILIES = {
    "bibd": ("gcsim.combinatorics.bibd", "bibd"),
    "srg": ("gcsim.combinatorics.srg", "srg"),
    "coset": ("gcsim.combinatorics.coset", "coset_graph"),
    "biregular": ("gcsim.combinatorics.biregular", "biregular_graph"),
}


def build_family(family: str, params, *, seed: int = 0, group: str = "cyclic", existence: bool = False):
    """Build ``family`` with positional ``params`` (or answer existence for bibd/srg).

    ``seed`` goes to the bi-regular construction and ``group`` to the coset graph.
    """
    import importlib

    from ..errors import InvalidArgumentError

    if family not in FAMILIES:
        raise InvalidArgumentError("family", f"unknown family {family!r} ({', '.join(FAMILIES)})")
    module, name = FAMILIES[family]
    factory = getattr(importlib.import_module(module), name)
    if family in ("bibd", "srg"):
        return factory(*params, existence=existence)
    if existence:
        raise InvalidArgumentError("existence", f"existence queries are for bibd and srg, not {family}")
    if family == "coset":
        return factory(*params, group=group)
    return factory(*params, seed=seed)


def resolve_design(spec: str):
    """An assignment object from a command-line style spec.

    Accepted forms: a named instance (``pg2_9``), a family with parameters
    (``bibd:91,10,1``, ``srg:13,6,2,3``, ``coset:27,2,5``, ``biregular:40,20,3,6[,seed]``),
    or the path of a catalogue bundle.
    """
    from pathlib import Path

    from ..errors import InvalidArgumentError

    if spec in NAMED_INSTANCES:
        return build_named(spec)
    if ":" in spec:
        family, _, rest = spec.partition(":")
        try:
            nums = [int(x) for x in rest.split(",") if x.strip()]
        except ValueError:
            raise InvalidArgumentError("design", f"parameters must be integers in {spec!r}") from None
        if family not in FAMILIES:
            raise InvalidArgumentError("design", f"unknown family {family!r} ({', '.join(FAMILIES)})")
        if family == "biregular":
            return build_family(family, nums[:4], seed=nums[4] if len(nums) > 4 else 0)
        return build_family(family, nums)
    path = Path(spec)
    if path.with_suffix(".json").exists() or path.exists() or Path(str(path) + ".json").exists():
        from .catalogue import load_object
        return load_object(path)
    raise InvalidArgumentError("design", f"{spec!r} is neither a named instance ({', '.join(NAMED_INSTANCES)}), "
                               "a family spec like bibd:91,10,1, nor a catalogue file")
