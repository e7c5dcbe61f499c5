"""Straggler models, one kind per class, found by discovery (theory §5.2).

Every public module of this package declares its classes in ``MODELS``; importing the package
registers them all (:mod:`gcsim.coding.straggler_models._registry`).  The factory
:func:`straggler_model`, the ``KIND:VALUES`` grammar (:func:`parse_spec`, :func:`spec_grammar`)
and every list of kinds in gcsim read this registry, so a new model is one module here (and its
test): see "Add a straggler model" in ``docs/contributing.md``.

Examples
--------
>>> model_kinds()[:7]  # the built-ins first; every module added here appends its kinds
('fixed', 'bernoulli', 'all', 'worst', 'markov', 'trace', 'delay')
"""

from ._registry import (
    discover_models,
    model_class,
    model_classes,
    model_kinds,
    module_models,
    parse_spec,
    spec_grammar,
    spec_kinds,
    straggler_model,
)

__all__ = [
    "discover_models",
    "model_class",
    "model_classes",
    "model_kinds",
    "module_models",
    "parse_spec",
    "spec_grammar",
    "spec_kinds",
    "straggler_model",
]

discover_models()
