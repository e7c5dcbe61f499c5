"""The object kinds a catalogue bundle may hold: kind name -> class.

A written table (no registration at import time): adding a kind means adding its class
here.  Every class provides ``to_arrays()``, ``bundle_metadata()`` and the classmethod
``from_arrays(arrays, metadata)`` of the object contract, and an exact ``verify()``.
``tests/test_encoder_registry.py`` finds every class of gcsim with that contract and checks
that its kind is here and that an exported object of it loads.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ..cerar.design import CerarDesign
from ..coding.decoder_table import DecoderTable
from ..coding.partial import PartialScheme
from ..coding.schemes import Scheme
from ..coding.sparse_routes import SparseRD, SparseSRG
from ..coding.straggler_base import StragglerModel
from ..coding.structured import StructuredRD
from ..combinatorics.baselines import (
    CyclicRepetition,
    FractionalRepetition,
    MargulisGabberGalil,
    RandomRegularAssignment,
)
from ..combinatorics.bibd_design import BIBD
from ..combinatorics.biregular import BiregularGraph
from ..combinatorics.coset import CosetBipartiteGraph
from ..combinatorics.cyclic_design import CyclicDesign
from ..combinatorics.expanders import ChordalCycle, WeightedMargulisGabberGalil
from ..combinatorics.srg_graph import StronglyRegularGraph
from ..combinatorics.weighted_cyclic import WeightedCyclicRepetition

__all__ = ["KINDS"]

# the layouts of the "structured_scheme" kind (imported for the table below to read them all)
_STRUCTURED_LAYOUTS = (StructuredRD, SparseRD)

#: catalogue kind -> class rebuilding it (``cls.kind`` equals the key)
KINDS: MappingProxyType[str, Any] = MappingProxyType(
    {
        cls.kind: cls
        for cls in (
            BIBD,
            CyclicDesign,
            StronglyRegularGraph,
            SparseSRG,  # an SRG kept as a sparse adjacency (L(q), T(t) beyond the dense limit)
            CosetBipartiteGraph,
            BiregularGraph,
            FractionalRepetition,
            CyclicRepetition,
            WeightedCyclicRepetition,
            RandomRegularAssignment,
            MargulisGabberGalil,
            WeightedMargulisGabberGalil,
            ChordalCycle,
            CerarDesign,
            Scheme,
            StructuredRD,  # its layouts: "structured" and SparseRD's "sparse" (from_arrays dispatches)
            PartialScheme,
            DecoderTable,
            StragglerModel,
        )
    }
)
