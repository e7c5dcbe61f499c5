"""Encoders of approximate gradient coding as registered objects (theory §5.4).

Each built-in encoder is one module of this package exposing ``ENCODERS`` (a tuple of
:class:`Encoder`); :func:`register_encoder` adds one at run time.  See ``docs/contributing.md``.
"""

from ._registry import (
    CUSTOM,
    METHODS,
    Encoder,
    MethodNames,
    UnbiasedDecoder,
    encoders,
    get_encoder,
    is_registered,
    method_names,
    method_table,
    options_of,
    proved_bounds,
    register_encoder,
    seeded_rng,
    unregister_encoder,
)

__all__ = [
    "CUSTOM",
    "METHODS",
    "Encoder",
    "MethodNames",
    "UnbiasedDecoder",
    "encoders",
    "get_encoder",
    "is_registered",
    "method_names",
    "method_table",
    "options_of",
    "proved_bounds",
    "register_encoder",
    "seeded_rng",
    "unregister_encoder",
]
