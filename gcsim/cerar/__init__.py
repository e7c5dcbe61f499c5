"""CERAR: ring-based coded approximate all-reduce (SPEC §5, a reconstruction).

Public API: :func:`design` (constructions, "optimized" delegated lazily to
``gcsim.cerar.optimize``), :func:`simulate` (round-by-round ring simulator),
:func:`errors` (error metrics and condition numbers), :func:`rates` (traffic, rounds,
storage formulas), :func:`epsilon_sweep` (floating-point trade-off), :class:`CerarDesign`.
"""
from __future__ import annotations

from .design import CerarDesign, error_operators, num_rounds, shift_matrix
from .constructions import design, r_star

__all__ = ["CerarDesign", "design", "simulate", "errors", "rates", "epsilon_sweep",
           "SimulationResult", "CerarErrors", "error_operators", "num_rounds", "shift_matrix",
           "r_star"]


def __getattr__(name):  # lazy until the modules exist / to keep import light
    if name in ("simulate", "SimulationResult"):
        from . import protocol
        return getattr(protocol, name)
    if name in ("errors", "rates", "CerarErrors"):
        from . import analysis
        return getattr(analysis, name)
    if name == "epsilon_sweep":
        from . import floating
        return floating.epsilon_sweep
    raise AttributeError(f"module 'gcsim.cerar' has no attribute {name!r}")
