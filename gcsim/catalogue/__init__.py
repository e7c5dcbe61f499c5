"""The catalogue: objects of every kind as verified bundles, and the named instances.

* :data:`~gcsim.catalogue.kinds.KINDS` -- kind name -> class (``from_arrays`` rebuilds it);
* :func:`export_object`, :func:`load_object`, :func:`list_catalogue` -- bundles of objects;
  :func:`load_object` also reads an exported code's folder (:mod:`~gcsim.catalogue.codes`);
* :data:`NAMED_INSTANCES`, :func:`build_named`, :func:`build_family`, :func:`resolve_design`
  -- the instances gcsim names and the command-line design specs.

The layer sits above :mod:`gcsim.combinatorics`, :mod:`gcsim.coding` and :mod:`gcsim.cerar`
(whose classes it dispatches to) and below the executor.
"""

from __future__ import annotations

from .codes import ExportedCode, load_code
from .kinds import KINDS
from .named import FAMILIES, NAMED_INSTANCES, build_family, build_named, resolve_design
from .objects import export_object, export_object_at, list_catalogue, load_object

__all__ = [
    "KINDS",
    "ExportedCode",
    "FAMILIES",
    "NAMED_INSTANCES",
    "build_family",
    "build_named",
    "export_object",
    "export_object_at",
    "list_catalogue",
    "load_code",
    "load_object",
    "resolve_design",
]
