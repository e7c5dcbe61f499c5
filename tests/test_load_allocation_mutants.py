"""Tests that make mutants of the heterogeneous loads fail (gcsim/coding/load_allocation.py and the speed
models it plans on, theory §63.4-§63.6).

The starting loads are written out by hand from the largest-remainder rule; the objective of each
start is the evaluator's expected error of the weighted cyclic repetition at those loads; every
refusal names its argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcsim.coding.load_allocation import load_error, optimize_loads
from gcsim.coding.straggler_models.load_speed import LoadSpeedModel
from gcsim.coding.straggler_models.speed import SpeedModel, law_inputs
from gcsim.coding.stragglers import straggler_model
from gcsim.errors import InvalidArgumentError
from tests.guards import refused_argument


def test_the_starts_are_the_three_named_loads_with_their_own_error():
    # p = exp(-(s_j - 0.5)): 0.2231, 0.2231, 0.6065, 0.6065
    model = SpeedModel(4, speed=[2.0, 2.0, 1.0, 1.0], deadline=1.0, shift=0.5, rate=1.0)
    plan = optimize_loads(model, 8, 4)
    # speed 2:2:1:1 of 8 copies: 2.67, 2.67, 1.33, 1.33 -> floors 2, 2, 1, 1, the two units left to the
    # largest remainders (workers 0, 1); 1 - p_j = 0.777, 0.777, 0.393, 0.393 gives the same split
    assert {k: v[0] for k, v in plan.starts.items()} == {
        "proportional to speed": [3, 3, 1, 1],
        "proportional to 1 - p_j": [3, 3, 1, 1],
        "symmetric": [2, 2, 2, 2],
    }
    for loads, err in plan.starts.values():
        assert err == load_error(model, loads, 4).mean
    # 7 copies over 4 workers: no symmetric design
    assert "symmetric" not in optimize_loads(model, 7, 4).starts


def test_a_model_without_speeds_has_no_speed_start():
    plan = optimize_loads(straggler_model("bernoulli", 4, p=[0.1, 0.1, 0.5, 0.5]), 8, 4)
    assert set(plan.starts) == {"proportional to 1 - p_j", "symmetric"}
    # 0.9 : 0.9 : 0.5 : 0.5 of 8: 2.57, 2.57, 1.43, 1.43 -> 2, 2, 1, 1 and the two units to workers 0, 1
    assert plan.starts["proportional to 1 - p_j"][0] == [3, 3, 1, 1]


def test_capped_starts_give_what_the_cap_took_to_the_workers_with_room():
    # load-dependent: no 1 - p_j start (p_j depends on the split); speed 3:1:1:1 of 8 -> 4, 2, 1, 1,
    # capped at 2 -> 2, 2, 1, 1, then the two units to the most room, first index first: workers 2, 3
    m = LoadSpeedModel(4, speed=[3, 1, 1, 1], deadline=1.0, shift=0.5, rate=2.0)
    plan = optimize_loads(m, 8, 4, max_load=2)
    assert {k: v[0] for k, v in plan.starts.items()} == {
        "proportional to speed": [2, 2, 2, 2],
        "symmetric": [2, 2, 2, 2],
    }
    # a cap of 3 over 9 copies: 4.5, 1.5, 1.5, 1.5 -> 4, 1, 1, 1 and 2 units by remainder (workers 1, 2)
    # -> 4, 2, 2, 1, capped 3, 2, 2, 1: the unit the cap took goes to worker 3 (room 2, the most)
    plan = optimize_loads(m, 9, 4, max_load=3)
    assert plan.starts["proportional to speed"][0] == [3, 2, 2, 2]


def test_the_plans_loads_are_read_only():
    plan = optimize_loads(straggler_model("bernoulli", 4, p=[0.1, 0.1, 0.5, 0.5]), 8, 4)
    assert not plan.loads.flags.writeable
    with pytest.raises(ValueError):
        plan.loads[0] = 5


def test_speed_models_default_to_no_shift_and_unbound_data():
    a = SpeedModel(3, speed=[1.0, 2.0, 3.0], deadline=1.0)
    b = SpeedModel(3, speed=[1.0, 2.0, 3.0], deadline=1.0, shift=0.0, rate=1.0)
    assert a.shift == 0.0 and np.array_equal(a.p, b.p)
    # no shift: P(Exp(rate s_j) > D) = exp(-s_j D)
    np.testing.assert_allclose(a.p, np.exp(-np.array([1.0, 2.0, 3.0])), rtol=1e-14)
    c = LoadSpeedModel(3, speed=[1.0, 2.0, 3.0], deadline=1.0)
    assert c.shift == 0.0 and not c.bound and np.array_equal(c.p, LoadSpeedModel(3, [1.0, 2.0, 3.0], 1.0, 0.0).p)
    # without a shift every worker can hold every part: the cap is N
    assert c.max_load(4).tolist() == [4, 4, 4]
    assert "unbound" in c.describe() and "at data fractions" not in c.describe()
    assert "at data fractions 0.5,0.25*2" in c.bind(np.array([2, 1, 1]), 4).describe()


def test_refusals_name_their_argument():
    assert refused_argument(law_inputs, 2, "abc", 1.0, 0.0, 1.0) == "speed"  # a scalar that is no number
    assert refused_argument(law_inputs, 0, 1.0, 1.0, 0.0, 1.0) == "n"
    assert refused_argument(law_inputs, 10**9, 1.0, 1.0, 0.0, 1.0) == "n"  # over the dense limit, before any array
    assert refused_argument(SpeedModel, 2, speed=[1.0, 0.25], deadline=1.0, shift=0.5) == "deadline"
    assert refused_argument(LoadSpeedModel, 2, speed=1.0, deadline=1.0, fractions="abc") == "fractions"
    with pytest.raises(InvalidArgumentError, match="speed:x,0.5,1,2"):  # the spec quoted in the message
        SpeedModel.from_spec(["x", "0.5", "1", "2"], 1, "speed:x,0.5,1,2")
    m = straggler_model("bernoulli", 4, p=0.1)
    assert refused_argument(optimize_loads, m, 17, 4) == "total"  # more than n N = 16 copies
