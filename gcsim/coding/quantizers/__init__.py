"""Quantizers of the coded messages as registered objects (theory §58).

Each built-in quantizer lives in a module of this package that exposes ``QUANTIZERS`` (a tuple of
:class:`Quantizer`); they are found on first use, as the encoders are
(:mod:`gcsim.coding.encoders`).  :func:`register_quantizer` adds one at run time.
"""

from ._registry import (
    MAX_BITS,
    Quantizer,
    as_bits,
    get_quantizer,
    quantizer_names,
    quantizers,
    register_quantizer,
    unregister_quantizer,
)

__all__ = [
    "MAX_BITS",
    "Quantizer",
    "as_bits",
    "get_quantizer",
    "quantizer_names",
    "quantizers",
    "register_quantizer",
    "unregister_quantizer",
]
