"""λ-fold triple systems by hill climbing: every admissible (v, λ) builds; pairs counted independently."""

from collections import Counter
from itertools import combinations

import pytest

import gcsim
from gcsim.combinatorics.steiner import triple_system_hill_climb
from gcsim.errors import ImpossibleParametersError

ADMISSIBLE = [
    (v, lam) for lam in (2, 3) for v in range(3, 41) if (lam * (v - 1)) % 2 == 0 and (lam * v * (v - 1)) % 6 == 0
]


@pytest.mark.parametrize("v,lam", ADMISSIBLE)
def test_every_pair_covered_lambda_times(v, lam):
    blocks = triple_system_hill_climb(v, lam, seed=0)
    assert len(blocks) == lam * v * (v - 1) // 6
    pairs = Counter(p for b in blocks for p in combinations(sorted(b), 2))
    assert len(pairs) == v * (v - 1) // 2 and set(pairs.values()) == {lam}


def test_deterministic_by_seed_and_seeds_differ():
    assert triple_system_hill_climb(12, 2, seed=3) == triple_system_hill_climb(12, 2, seed=3)
    assert triple_system_hill_climb(12, 2, seed=3) != triple_system_hill_climb(12, 2, seed=4)


def test_inadmissible_is_refused():
    with pytest.raises(ImpossibleParametersError, match="divisibility"):
        triple_system_hill_climb(8, 2)


@pytest.mark.parametrize("v,lam", [(10, 2), (11, 3), (60, 2), (59, 3)])
def test_bibd_builds_previously_missing_triple_systems(v, lam):
    assert gcsim.bibd(v, 3, lam, existence=True) is True
    d = gcsim.bibd(v, 3, lam)
    assert d.params[0] == v and d.params[3:] == (3, lam) and d.verify()
