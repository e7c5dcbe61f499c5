"""Files: the generic bundle format (arrays + JSON manifest with SHA-256) and atomic writes.

* :mod:`gcsim.io.bundle` -- ``save_bundle`` / ``load_bundle`` with size bounds and checks;
* :mod:`gcsim.io.manifest` -- provenance, atomic files, JSON helpers.

What a kind of object is and how it is rebuilt lives with the kind (``from_arrays``);
:mod:`gcsim.catalogue` dispatches on it.
"""

import lazy_loader as _lazy

# public names listed in __init__.pyi, imported on first use
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
