"""Exception hierarchy of gcsim.

Every exception raised on purpose by gcsim derives from :class:`GcsimError`, and
also from the built-in exception a user would expect (``ValueError`` for bad
values, ``NotImplementedError`` for things gcsim cannot build), so that both
``except gcsim.GcsimError`` and ``except ValueError`` work.
"""

from __future__ import annotations

__all__ = [
    "GcsimError",
    "InvalidArgumentError",
    "SizeLimitError",
    "ImpossibleParametersError",
    "NotConstructibleError",
    "VerificationError",
    "CatalogueError",
    "SolverError",
    "MissingDependencyError",
]


class GcsimError(Exception):
    """Base class of every error gcsim raises deliberately."""


class InvalidArgumentError(GcsimError, ValueError):
    """An argument has the wrong type, shape or value.

    The message always names the argument, e.g. ``"m must be >= 1, got 0"``.
    """

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class SizeLimitError(InvalidArgumentError):
    """A valid input whose dense objects or enumerations exceed a limit of :mod:`gcsim.limits`.

    Raised *before* anything is allocated.  ``requested`` is the size asked for,
    ``limit`` the limit and ``limit_name`` its name in :mod:`gcsim.limits` (raise it
    there on a bigger machine).
    """

    def __init__(self, argument: str, message: str, *, requested: int, limit: int, limit_name: str):
        self.requested = int(requested)
        self.limit = int(limit)
        self.limit_name = limit_name
        super().__init__(argument, message)


class ImpossibleParametersError(GcsimError, ValueError):
    """No object with these parameters exists: a necessary condition fails.

    ``condition`` names the violated condition (e.g. ``"Fisher's inequality"``,
    ``"Bruck-Ryser-Chowla"``, ``"divisibility"``, ``"Krein"``).
    """

    def __init__(self, condition: str, message: str):
        self.condition = condition
        super().__init__(f"impossible parameters ({condition}): {message}")


class NotConstructibleError(GcsimError, NotImplementedError):
    """The object may exist, but gcsim does not know how to build it.

    ``suggestions`` lists nearby parameter tuples gcsim can build.
    """

    def __init__(self, message: str, suggestions: list | tuple = ()):
        self.suggestions = list(suggestions)
        if self.suggestions:
            shown = ", ".join(str(tuple(s)) for s in self.suggestions[:8])
            message = f"{message}; gcsim can build nearby: {shown}"
        super().__init__(message)


class VerificationError(GcsimError, AssertionError):
    """An object failed the exact check of its defining identities."""


class CatalogueError(GcsimError, ValueError):
    """A catalogue file is missing, truncated, tampered with or of an unknown version."""


class SolverError(GcsimError, RuntimeError):
    """A numerical solver did not return an optimal, verified solution."""


class MissingDependencyError(GcsimError, ImportError):
    """An optional dependency is not installed; the message names the extra that provides it.

    ``module`` is the missing top-level module, ``extra`` the gcsim extra
    (``pip install 'gcsim[<extra>]'``) and ``what`` the function or command that needs it.
    Raised by :func:`gcsim._optional.require`.

    >>> str(MissingDependencyError("cvxpy", "optimize", "optimize_encoder"))
    "optimize_encoder needs cvxpy: pip install 'gcsim[optimize]'"
    """

    def __init__(self, module: str, extra: str, what: str, *, cause: str | None = None):
        self.module = module
        self.extra = extra
        self.what = what
        message = f"{what} needs {module}: pip install 'gcsim[{extra}]'"
        if cause:
            message += f" ({module} is installed but failed to import: {cause})"
        super().__init__(message, name=module)
