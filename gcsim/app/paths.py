"""Where the application finds the catalogue, and where it may write one."""

from __future__ import annotations

import os
from pathlib import Path

from ..catalogue.named import packaged_catalogue

__all__ = ["repo_designs_dir", "packaged_catalogue", "inside_installed_package"]


def repo_designs_dir() -> Path:
    """The catalogue shipped with gcsim (:func:`gcsim.catalogue.named.packaged_catalogue`).

    In a source checkout it is the ``designs/`` folder at the top level; installed, it is the
    package data ``gcsim/designs``.
    """
    return packaged_catalogue()


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]  # .../gcsim (this file is gcsim/app/paths.py)


def inside_installed_package(path: str | Path) -> bool:
    """Whether writing to ``path`` would write into the installed gcsim package.

    A source checkout (``gcsim/`` next to the ``pyproject.toml`` that builds it) is not an
    installed package: there, regenerating the packaged catalogue in place is the maintainers'
    way of updating it (``gcsim catalogue --force --dir designs``).

    >>> inside_installed_package("/tmp/my_catalogue")
    False
    """
    root = _package_root()
    # os.path.realpath, not Path.resolve: a symbolic-link loop is left as it is (resolve raises), the
    # caller's checks then refuse it as a folder that cannot be written
    target = Path(os.path.realpath(Path(path).expanduser()))
    if target != root and root not in target.parents:
        return False
    project = root.parent / "pyproject.toml"
    in_checkout = project.is_file() and 'name = "gcsim"' in project.read_text()
    return not in_checkout
