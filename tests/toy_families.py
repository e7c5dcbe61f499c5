"""The toy families the registry tests add: one graph family and one design family, written here.

``tests/test_family_registry.py`` registers them at run time (:func:`register_family`);
``tests/test_family_discovery.py`` drops a module declaring them into ``gcsim.combinatorics``
(:data:`DROP_IN_SRG`, :data:`DROP_IN_BIBD`) and lets discovery find it.  Both take a priority below
every built-in family's (``10..960``), so they name the constructions they build.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from conftest import FANO_LINES
from gcsim.combinatorics.bibd_design import BIBD
from gcsim.combinatorics.families import BIBDFamily, Member, SRGFamily
from gcsim.combinatorics.srg_graph import StronglyRegularGraph

TOY_GRAPHS = "toy: J(9,4) at {1,4}"
TOY_DESIGNS = "toy: Fano"


def j94_adjacency() -> np.ndarray:
    """J(9,4) at distances {1,4}, written here: 4-subsets of [9], adjacent when they share 3 or 0 points."""
    sets = [frozenset(c) for c in combinations(range(9), 4)]
    return np.array([[int(len(a & b) in (3, 0)) for b in sets] for a in sets], dtype=np.int64)


def _toy_graph() -> StronglyRegularGraph:
    return StronglyRegularGraph(j94_adjacency(), (126, 25, 8, 4), "toy graph")


class ToyGraphs(SRGFamily):
    name = TOY_GRAPHS
    parameters = ()
    construction = "a test's own adjacency matrix"
    example = (126, 25, 8, 4)
    priority = 5

    def members(self, max_v):
        if max_v >= 126:
            yield Member((126, 25, 8, 4), "toy graph", _toy_graph)


def _toy_fano() -> BIBD:
    return BIBD(7, [tuple(line) for line in FANO_LINES], "toy Fano plane", lam=1)


class ToyDesigns(BIBDFamily):
    name = TOY_DESIGNS
    parameters = ()
    construction = "the Fano lines of conftest"
    example = (7, 3, 1)
    priority = 1

    def lookup(self, params):
        return Member((7, 3, 1), "toy Fano", _toy_fano) if tuple(params) == (7, 3, 1) else None


#: a module of gcsim.combinatorics (or of a third-party package) that declares the toy graph family
DROP_IN_SRG = "from toy_families import ToyGraphs\n\nFAMILIES = (ToyGraphs(),)\n"
#: the same for the toy design family
DROP_IN_BIBD = "from toy_families import ToyDesigns\n\nFAMILIES = (ToyDesigns(),)\n"
