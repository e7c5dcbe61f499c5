"""The named instances used throughout gcsim (docs/theory.md §10–§30) and their catalogue names.

Each entry builds the object from its factory with fixed arguments (and seed),
so the files of the packaged catalogue (:func:`packaged_catalogue`, package data
``designs/<kind>/<name>.{json,npz}`` of the source tree, installed as ``gcsim.designs``) can be
regenerated and compared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..combinatorics.bibd import bibd
from ..combinatorics.biregular import biregular_graph
from ..combinatorics.coset import coset_graph
from ..combinatorics.srg import srg
from ..errors import CatalogueError, InvalidArgumentError
from .objects import load_object

__all__ = [
    "NAMED_INSTANCES",
    "FAMILIES",
    "build_named",
    "build_family",
    "resolve_design",
    "packaged_catalogue",
    "catalogue_path",
]


#: catalogue name -> (description, factory)
NAMED_INSTANCES: dict[str, tuple[str, Callable[[], Any]]] = {
    "pg2_9": ("(91,91,10,10,1) BIBD: points vs lines of PG(2,9)", lambda: bibd(91, 10, 1)),
    "coset_27_2_5": ("(27,2,5) coset bipartite graph over Z_27", lambda: coset_graph(27, 2, 5)),
    "biregular_40_20_3_6": (
        "(40,20,3,6) bi-regular bipartite graph, seed 0",
        lambda: biregular_graph(40, 20, 3, 6, seed=0),
    ),
    "paley13": ("Paley(13) strongly regular graph (13,6,2,3)", lambda: srg(13, 6, 2, 3)),
    "petersen": ("Petersen graph (10,3,0,1)", lambda: srg(10, 3, 0, 1)),
}


def packaged_catalogue() -> Path:
    """The folder of the catalogue shipped with gcsim (package data, read-only).

    It holds the named instances (``<kind>/<name>``, e.g. ``bibd/pg2_9``) and the optimized
    CERAR designs (``cerar/optimized_N4_c8_kappa10``, ...), read with :mod:`importlib.resources`
    so that it is found from a wheel as well as from a source checkout.

    >>> (packaged_catalogue() / "bibd" / "pg2_9.json").is_file()
    True
    """
    folder = resources.files("gcsim.designs")
    if not isinstance(folder, Path) or not folder.is_dir():  # e.g. gcsim imported from a zip file
        raise CatalogueError(f"gcsim's packaged catalogue is not a folder on disk ({folder}); reinstall gcsim")
    return folder


def catalogue_path(spec: str | Path) -> Path:
    """A bundle path: ``spec`` itself if it names a bundle on disk, else the packaged one.

    ``spec`` may be a path (stem, ``.json`` or ``.npz``), a stem inside the packaged
    catalogue (``bibd/pg2_9``, ``cerar/optimized_N4_c8_kappa10``) or a named instance
    (``pg2_9``).  A path that exists always wins; when nothing matches, ``spec`` is
    returned unchanged (loading it then says what is missing).

    >>> catalogue_path("pg2_9").relative_to(packaged_catalogue()).as_posix()
    'bibd/pg2_9'
    """
    path = Path(spec)
    if path.exists() or Path(f"{path}.json").exists():
        return path
    if path.is_absolute() or ".." in path.parts:
        return path
    try:
        root = packaged_catalogue()
    except CatalogueError:
        return path
    stem = path.with_suffix("") if path.suffix in (".json", ".npz") else path
    if (root / f"{stem}.json").is_file():
        return root / stem
    if len(stem.parts) == 1:  # a bare name: the named instance (or CERAR design) of that name
        found = sorted(root.glob(f"*/{stem.name}.json"))
        if len(found) == 1:
            return found[0].with_suffix("")
    return path


def build_named(name: str) -> Any:
    """Build the named instance ``name`` (a key of :data:`NAMED_INSTANCES`).

    >>> build_named("petersen").params
    SRGParams(v=10, k=3, lam=0, mu=1)
    """
    if name not in NAMED_INSTANCES:
        raise InvalidArgumentError("name", f"unknown named instance {name!r}; known: {sorted(NAMED_INSTANCES)}")
    return NAMED_INSTANCES[name][1]()


#: family -> factory; the parameters are positional integers
FAMILIES: dict[str, Callable[..., Any]] = {
    "bibd": bibd,
    "srg": srg,
    "coset": coset_graph,
    "biregular": biregular_graph,
}


def build_family(
    family: str, params: Sequence[int], *, seed: int = 0, group: str = "cyclic", existence: bool = False
) -> Any:
    """Build ``family`` with positional ``params`` (or answer existence for bibd/srg).

    ``seed`` goes to the bi-regular construction and ``group`` to the coset graph.

    >>> build_family("bibd", [7, 3, 1]).params
    BIBDParams(v=7, b=7, r=3, k=3, lam=1)
    >>> build_family("srg", [10, 3, 0, 1], existence=True)
    True
    """
    if family not in FAMILIES:
        raise InvalidArgumentError("family", f"unknown family {family!r} ({', '.join(FAMILIES)})")
    factory = FAMILIES[family]
    if family in ("bibd", "srg"):
        return factory(*params, existence=existence)
    if existence:
        raise InvalidArgumentError("existence", f"existence queries are for bibd and srg, not {family}")
    if family == "coset":
        return factory(*params, group=group)
    return factory(*params, seed=seed)


def resolve_design(spec: str) -> Any:
    """An assignment object from a command-line style spec.

    Accepted forms: a named instance (``pg2_9``), a family with parameters
    (``bibd:91,10,1``, ``srg:13,6,2,3``, ``coset:27,2,5``, ``biregular:40,20,3,6[,seed]``),
    the path of a catalogue bundle, or a stem of the packaged catalogue (``srg/petersen``).

    >>> resolve_design("srg:13,6,2,3").params
    SRGParams(v=13, k=6, lam=2, mu=3)
    """
    if not isinstance(spec, str) or not spec.strip():  # Path("") is "." and would be looked up as a file
        raise InvalidArgumentError("design", f"must be a non-empty name, family spec or path, got {spec!r}")
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
    path = catalogue_path(spec)
    if path.with_suffix(".json").exists() or path.exists() or Path(str(path) + ".json").exists():
        return load_object(path)
    raise InvalidArgumentError(
        "design",
        f"{spec!r} is neither a named instance ({', '.join(NAMED_INSTANCES)}), "
        "a family spec like bibd:91,10,1, nor a catalogue file",
    )
