"""Names and help texts the ``gcsim`` parser shows, without importing what they name.

``gcsim --help`` and ``gcsim --version`` build the whole parser: its choices and help texts come
from here, so that building it imports neither the encoders, the advisor nor the reproduce stages
(each command imports its implementation when it runs).  ``tests/test_cli_startup.py`` checks that
every name here equals the one of the module it stands for.
"""

from __future__ import annotations

import sys

__all__ = ["METHODS", "OBJECTIVES", "STRAGGLER_SPEC", "PAPERS", "PAPER_ONLY", "method_names", "straggler_spec"]

#: The built-in encoders, in registry order (:data:`gcsim.coding.encoders.METHODS`).
METHODS: tuple[str, ...] = (
    "naive",
    "rd",
    "ns",
    "ns-worker",
    "hadamard-ns",
    "exact-vandermonde",
    "exact-gaussian",
    "fractional-repetition",
    "cyclic-mds",
    "bibd-optimal",
    "expander",
    "weighted",
    "slem-circulant",
    "fastest-mixing",
)


def method_names() -> tuple[str, ...]:
    """The encoders to list: the registry's own when it is already imported, else :data:`METHODS`.

    A process that registered an encoder (``gcsim.coding.register_encoder``) has imported the
    registry, so its ``--help`` lists that encoder too; a bare ``gcsim --help`` imports nothing.

    >>> "rd" in method_names()
    True
    """
    registry = sys.modules.get("gcsim.coding.encoders._registry")
    return tuple(registry.method_names()) if registry is not None else METHODS


#: The advisor's ranking criteria (:data:`gcsim.advisor.core.OBJECTIVES`).
OBJECTIVES: tuple[str, ...] = ("error", "communication", "time", "data", "worst-case")

#: The straggler grammar of the built-in kinds (:data:`gcsim.advisor.core.STRAGGLER_SPEC` lists every
#: registered kind; :func:`straggler_spec` gives it once the registry is imported).
STRAGGLER_SPEC = (
    "KIND:VALUES: fixed:S (S uniform stragglers), all:S, worst:S, bernoulli:P (or P_1,...,P_n per worker; P*K: K "
    "workers), markov:P_ENTER,P_LEAVE"
)


def straggler_spec() -> str:
    """The straggler grammar to show: the registry's when it is already imported, else :data:`STRAGGLER_SPEC`.

    >>> straggler_spec().startswith("KIND:VALUES: fixed:S")
    True
    """
    registry = sys.modules.get("gcsim.coding.straggler_models._registry")
    return registry.spec_grammar() if registry is not None else STRAGGLER_SPEC


#: The experiments of each paper: ``gcsim reproduce --paper NAME`` runs ``PAPERS[NAME]`` (in
#: :data:`gcsim.app.reproduce.STAGES` order).  A stage may belong to several papers and to the demo.
PAPERS: dict[str, list[str]] = {
    "agc": ["training", "agc-paper"],  # Munim & Ramamoorthy, Communication-Efficient Approximate Gradient Coding
    "cerar": ["cerar", "ddp", "cerar-training"],  # Munim et al., ring-based coded approximate all-reduce
}

#: Stages run only when asked for (``--paper`` or ``--stage``): plain ``gcsim reproduce`` (``make
#: demo``) runs every other stage this installation can run.
PAPER_ONLY: set[str] = {"cerar-training"}  # about 11 minutes, and root for the emulated links
