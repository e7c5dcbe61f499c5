"""CERAR: ring-based coded approximate all-reduce (SPEC §5, a reconstruction).

Public API: :func:`design` (constructions; "optimized" is delegated lazily to
``gcsim.cerar.optimize.optimized_design``), :func:`simulate` (round-by-round ring simulator),
:func:`errors` (error metrics and condition numbers), :func:`rates` (traffic, rounds,
storage formulas), :func:`epsilon_sweep` (floating-point trade-off), :class:`CerarDesign`.
Theory: ``docs/theory/50_cerar.md``; guide: ``docs/guides/cerar.md``.

Examples
--------
>>> import numpy as np
>>> from gcsim.cerar import design, simulate, errors, rates
>>> des = design(3, 5, "perturbation", eps=0.01)
>>> g = np.random.default_rng(0).standard_normal((3, 100))
>>> res = simulate(des, g)
>>> res.rounds, rates(3, 5)["rate"]
(6, 1.2)
>>> bool(errors(des, g).empirical < 0.05)
True
"""
from __future__ import annotations

from .analysis import CerarErrors, errors, rates
from .constructions import design, r_star
from .design import CerarDesign, error_operators, num_rounds, shift_matrix
from .floating import EpsilonSweep, epsilon_sweep
from .protocol import SimulationResult, simulate

__all__ = ["CerarDesign", "design", "simulate", "errors", "rates", "epsilon_sweep",
           "SimulationResult", "CerarErrors", "EpsilonSweep", "error_operators", "num_rounds",
           "shift_matrix", "r_star"]
