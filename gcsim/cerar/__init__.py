"""CERAR: ring-based coded approximate all-reduce (docs/theory.md §50, a reconstruction).

Public API: :func:`design` (every construction, "optimized" included), :func:`simulate`
(round-by-round ring simulator), :func:`errors` (error metrics and condition numbers),
:func:`rates` (traffic, rounds, storage formulas), :func:`epsilon_sweep` (floating-point
trade-off), :class:`CerarDesign`.  Modules: :mod:`~gcsim.cerar.ring` (the protocol, once, for
every array namespace), :mod:`~gcsim.cerar.metrics`, :mod:`~gcsim.cerar.design`,
:mod:`~gcsim.cerar.constructions`, :mod:`~gcsim.cerar.optimize`, :mod:`~gcsim.cerar.pareto`,
:mod:`~gcsim.cerar.factory`, :mod:`~gcsim.cerar.traffic`, :mod:`~gcsim.cerar.floating`,
:mod:`~gcsim.cerar.export`, :mod:`~gcsim.cerar.storage` (how much a worker must hold, theory §51),
:mod:`~gcsim.cerar.exact` (high-precision evaluation, the Vandermonde limit, theory §53).  Theory:
``docs/theory/50_cerar.md``; guide: ``docs/guides/cerar.md``.

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

from .constructions import r_star
from .design import CerarDesign, CerarParams
from .factory import design
from .floating import EpsilonSweep, epsilon_sweep
from .metrics import CerarErrors, error_operators, errors
from .protocol import SimulationResult, simulate
from .ring import num_rounds, shift_matrix
from .traffic import rates

__all__ = [
    "CerarDesign",
    "CerarParams",
    "design",
    "simulate",
    "errors",
    "rates",
    "epsilon_sweep",
    "SimulationResult",
    "CerarErrors",
    "EpsilonSweep",
    "error_operators",
    "num_rounds",
    "shift_matrix",
    "r_star",
]
