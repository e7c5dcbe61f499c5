"""The code advisor: which code for these workers, this load, these stragglers and links.

:func:`advise` enumerates every assignment gcsim can build that fits the question (BIBDs and
their duals, strongly regular graphs, coset and bi-regular graphs, repetition codes,
expanders), encodes each with every applicable encoder (naive, RD, NS, NS-worker, the exact
communication-efficient family, the ``m = 1`` classic codes), measures each scheme with gcsim's
evaluators and bounds, and returns an :class:`Advice`: a ranked table, the reasons of every
dropped candidate, a Pareto figure and a one-call export of the chosen code.

Modules: ``candidates`` (the question and one generator per family), ``assess`` (encoders and
measurements), ``advice`` (the result), ``core`` (:func:`advise`).
"""

from __future__ import annotations

from .advice import COLUMNS, Advice, AdviceParams, ExportedCode, load_exported, pareto_flags
from .assess import CLASSIC, ENCODERS, Settings
from .candidates import FAMILIES, FAMILY_NAMES, Dropped, Links, Question, Structure
from .core import OBJECTIVES, advise

__all__ = [
    "Advice",
    "AdviceParams",
    "CLASSIC",
    "COLUMNS",
    "Dropped",
    "ENCODERS",
    "ExportedCode",
    "FAMILIES",
    "FAMILY_NAMES",
    "Links",
    "OBJECTIVES",
    "Question",
    "Settings",
    "Structure",
    "advise",
    "load_exported",
    "pareto_flags",
]
