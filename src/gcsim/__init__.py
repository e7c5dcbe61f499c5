"""gcsim: coding theory for distributed learning.

Layers (data flows one way):

* :mod:`gcsim.combinatorics` -- BIBDs, strongly regular graphs, coset bipartite
  graphs, bi-regular graphs, finite fields;
* :mod:`gcsim.coding` -- approximate gradient coding: encoders, straggler
  models, error evaluators, bounds;
* :mod:`gcsim.cerar` -- ring-based coded approximate all-reduce;
* :mod:`gcsim.executor` -- the codes on real arrays and engines;
* :mod:`gcsim.io` -- the design catalogue (export / load with manifests).

The public names below are loaded lazily so that ``import gcsim`` stays fast
(galois and cvxpy are only imported when needed).
"""
from __future__ import annotations

import importlib

from .errors import (
    CatalogueError,
    GcsimError,
    ImpossibleParametersError,
    InvalidArgumentError,
    NotConstructibleError,
    SizeLimitError,
    SolverError,
    VerificationError,
)

__version__ = "0.1.0"

# public name -> (module, attribute)
_LAZY = {
    # combinatorics
    "bibd": ("gcsim.combinatorics.bibd", "bibd"),
    "srg": ("gcsim.combinatorics.srg", "srg"),
    "coset_graph": ("gcsim.combinatorics.coset", "coset_graph"),
    "biregular_graph": ("gcsim.combinatorics.biregular", "biregular_graph"),
    "finite_field": ("gcsim.combinatorics.fields", "finite_field"),
    # coding
    "encode": ("gcsim.coding.schemes", "encode"),
    "optimal_error": ("gcsim.coding.evaluate", "optimal_error"),
    "straggler_model": ("gcsim.coding.stragglers", "straggler_model"),
    "fixed_decoder_error": ("gcsim.coding.evaluate", "fixed_decoder_error"),
    "expected_error": ("gcsim.coding.evaluate", "expected_error"),
    "worst_case_error": ("gcsim.coding.evaluate", "worst_case_error"),
    "verify_bounds": ("gcsim.coding.verify", "verify_bounds"),
    "delay_model": ("gcsim.coding.delays", "delay_model"),
    "arrival_rule": ("gcsim.coding.delays", "arrival_rule"),
    "expected_decode_time": ("gcsim.coding.delays", "expected_decode_time"),
    "decoder_table": ("gcsim.coding.decoder_table", "decoder_table"),
    "load_decoder_table": ("gcsim.coding.decoder_table", "load_decoder_table"),
    # executor
    "run_scheme": ("gcsim.executor.arrays", "run_scheme"),
    # io
    "export_object": ("gcsim.catalogue", "export_object"),
    "load_object": ("gcsim.catalogue", "load_object"),
}

_SUBMODULES = {"combinatorics", "coding", "cerar", "executor", "learning", "io", "errors", "limits"}

__all__ = sorted(list(_LAZY) + list(_SUBMODULES) + [
    "GcsimError", "InvalidArgumentError", "ImpossibleParametersError", "NotConstructibleError",
    "VerificationError", "CatalogueError", "SolverError", "SizeLimitError", "__version__"])


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        value = importlib.import_module(f"gcsim.{name}")
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gcsim' has no attribute {name!r}")


def __dir__():
    return __all__
