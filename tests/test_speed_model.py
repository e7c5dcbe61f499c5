"""Kind "speed" (#36 item 2): per-worker speeds under the shifted-exponential law, a deadline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gcsim.advisor.core import straggler_spec
from gcsim.coding.delays import delay_model
from gcsim.coding.evaluate import expected_error
from gcsim.coding.schemes import encode
from gcsim.coding.straggler_models.speed import SpeedModel
from gcsim.coding.stragglers import straggler_model
from gcsim.combinatorics.baselines import fractional_repetition
from gcsim.errors import InvalidArgumentError


def test_p_is_the_scaled_law_survival_at_the_deadline():
    m = straggler_model("speed", 3, speed=[1.0, 2.0, 4.0], deadline=1.0, shift=0.5, rate=2.0)
    assert isinstance(m, SpeedModel) and m.independent_p() is m.p
    by_hand = [math.exp(-2.0 * (s * 1.0 - 0.5)) for s in (1.0, 2.0, 4.0)]
    assert m.p.tolist() == pytest.approx(by_hand, rel=1e-14)
    # the same numbers from the delay law's per-worker parameters (shift / s, rate s)
    s = np.array([1.0, 2.0, 4.0])
    law = delay_model("shifted-exponential", 3, shift=0.5 / s, rate=2.0 * s)
    assert np.array_equal(m.p, 1.0 - law.cdf(1.0))


def test_spec_and_export_round_trips():
    m = straggler_model("speed", 4, speed=[1.0, 1.0, 3.0, 3.0], deadline=2.0, shift=1.0, rate=1.0)
    assert m.to_spec() == "speed:2.0,1.0,1.0,1.0*2,3.0*2"
    assert type(m).spec_grammar() == "speed:DEADLINE,SHIFT,RATE,S_1,...,S_n (S*K for K workers of speed S)"
    assert straggler_spec(m.to_spec(), 4).params == m.params
    again = type(m).from_arrays(m.to_arrays(), m.bundle_metadata())
    assert again.params == m.params and np.array_equal(again.p, m.p) and again.verify()


def test_expected_error_by_hand():
    m = straggler_model("speed", 4, speed=[2.0, 1.0, 2.0, 1.0], deadline=1.0, shift=0.0, rate=1.0)
    fr = fractional_repetition(4, 1)  # groups {0, 1}, {2, 3}: a group's two parts lost when both straggle
    res = expected_error(encode(fr, 1, "naive"), m)
    both = math.exp(-2.0) * math.exp(-1.0)  # p = exp(-(s deadline)): e^-2 (speed 2) and e^-1 (speed 1)
    # err = ||A_F x - 1||^2 unnormalized: 2 parts per lost group, 2 groups
    assert res.method == "exact" and res.mean == pytest.approx(2 * 2 * both, abs=1e-12)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"speed": [1.0, 0.2], "deadline": 1.0, "shift": 0.5, "rate": 1.0}, "deadline"),
        ({"speed": [1.0, -1.0], "deadline": 1.0, "shift": 0.0, "rate": 1.0}, "speed"),
        ({"speed": [1.0, 1.0], "deadline": 0.0, "shift": 0.0, "rate": 1.0}, "deadline"),
        ({"speed": [1.0, 1.0], "deadline": 1.0, "shift": 0.0, "rate": 0.0}, "rate"),
        ({"speed": [1.0, 1.0, 1.0], "deadline": 1.0, "shift": 0.0, "rate": 1.0}, "shift|speed|n"),
    ],
)
def test_bad_inputs_are_named(kwargs, name):
    with pytest.raises(InvalidArgumentError, match=name):
        straggler_model("speed", 2, **kwargs)


def test_the_command_lines_take_per_worker_specs(capsys):
    """``--stragglers speed:...`` and ``bernoulli:P_1,...`` reach the model of the Python API; bad values named."""
    import json

    from gcsim.app.cli import main

    base = ["error", "--design", "bibd:4,2,1", "--m", "1", "--method", "naive", "--json", "--stragglers"]
    assert main([*base, "speed:1,0.5,1,3,2*2,1*3"]) == 0
    got = json.loads(capsys.readouterr().out)
    model = straggler_model("speed", 6, speed=[3, 2, 2, 1, 1, 1], deadline=1.0, shift=0.5, rate=1.0)
    assert main([*base, "bernoulli:" + ",".join(repr(float(x)) for x in model.p)]) == 0
    same_p = json.loads(capsys.readouterr().out)
    assert got["mean"] == same_p["mean"] and got["evaluation"] == "exact" and got["count"] == 64
    for spec, shown in [
        ("speed:1,0.5,1,3,2*2,fast", "S value 'fast' is not a number"),
        ("bernoulli:0.1*5,2", "got 2.0 for worker 5"),
        ("speed:1,0.5", "speed takes DEADLINE,SHIFT,RATE,S_1,...,S_n"),
    ]:
        assert main([*base, spec]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gcsim: error: --stragglers: ") and shown in err, err
