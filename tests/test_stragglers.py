"""Tests of the straggler models (gcsim.coding.stragglers)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from gcsim.coding.stragglers import (
    AllPatternsModel,
    BernoulliModel,
    FixedModel,
    MarkovModel,
    TraceModel,
    WorstCaseModel,
    combinations_masks,
    straggler_model,
    straggler_sets,
)
from gcsim.errors import InvalidArgumentError
from tolerances import dot_tol


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), data=st.data())
def test_straggler_sets_match_itertools(n, data):
    s = data.draw(st.integers(0, n))
    S = straggler_sets(n, s)
    assert S.tolist() == [list(c) for c in itertools.combinations(range(n), s)]
    masks = combinations_masks(n, s)
    assert masks.shape == (math.comb(n, s), n)
    assert np.all((~masks).sum(axis=1) == s)
    # slices agree with the full enumeration
    a = data.draw(st.integers(0, S.shape[0]))
    assert np.array_equal(straggler_sets(n, s, a, a + 3), S[a : a + 3])


def test_fixed_exactly_s_and_uniform():
    model = straggler_model("fixed", 5, s=2)
    masks = model.sample(20000, seed=4)
    assert masks.dtype == np.bool_ and masks.shape == (20000, 5)
    assert np.all((~masks).sum(axis=1) == 2)
    # every one of the 10 subsets equally likely: chi-square goodness of fit
    codes = (~masks).astype(int) @ (1 << np.arange(5))
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == 10
    # a significance level, not a rounding tolerance: a correct sampler fails 1 run in 10^4
    assert stats.chisquare(counts).pvalue > 1e-4


def test_fixed_determinism():
    m = FixedModel(9, 3)
    assert np.array_equal(m.sample(50, seed=1), m.sample(50, seed=1))
    assert not np.array_equal(m.sample(50, seed=1), m.sample(50, seed=2))


def test_fixed_edge_cases():
    assert FixedModel(4, 0).sample(3, 0).all()
    assert not FixedModel(4, 4).sample(3, 0).any()


def test_bernoulli_frequencies_heterogeneous():
    p = np.array([0.0, 0.1, 0.5, 0.9])
    model = straggler_model("bernoulli", 4, p=p)
    masks = model.sample(40000, seed=0)
    freq = 1 - masks.mean(axis=0)
    # sampling error, not rounding: sd <= sqrt(0.25 / 40000) = 0.0025, so 0.012 is 4.8 sd
    assert np.all(np.abs(freq - p) < 0.012)
    assert not model.homogeneous and "heterogeneous" in model.describe()


def log_weight_rtol(p, mask):
    """Relative rounding of ``exp(Σ_j log q_j)``, ``q_j = 1 − p_j`` (arrives) or ``p_j`` (straggles).

    Each logarithm is within a few ulps, the sum of ``n`` of them within ``γ_n Σ|log q_j|`` (Higham
    Thm 3.1), and ``exp`` turns an absolute error ``δ`` of its argument into a relative one
    ``e^δ − 1 ≈ δ``, plus its own ulp: ``SAFETY γ_{n+2} (1 + Σ_j |log q_j|)``.
    """
    p = np.asarray(p, dtype=float)
    q = np.where(mask, 1 - p, p)
    return dot_tol(p.size + 2, 1.0 + float(np.sum(np.abs(np.log(q)))))


def test_bernoulli_weights_sum_to_one():
    p = [0.1, 0.2, 0.3, 0.4, 0.0]
    model = BernoulliModel(5, p)
    masks = np.array(list(itertools.product([False, True], repeat=5)))
    w = model.weights(masks)
    # worker 4 has p = 0: a mask where it straggles has log 0 = −inf, weight exactly 0
    possible = masks[:, 4]
    assert np.all(w[~possible] == 0)
    # the sum of 32 non-negative weights: each within its log_weight_rtol, then γ_31 of the sum
    wtol = sum(wi * log_weight_rtol(p, mk) for wi, mk in zip(w[possible], masks[possible], strict=True))
    assert abs(w.sum() - 1.0) <= wtol + dot_tol(masks.shape[0] - 1, float(w.sum()))
    # independent formula for one mask: 4 multiplications (γ_4, Higham Thm 3.1)
    mk = np.array([True, False, True, False, True])
    direct = 0.9 * 0.2 * 0.7 * 0.4 * 1.0
    assert abs(model.weights(mk[None])[0] - direct) <= direct * (log_weight_rtol(p, mk) + dot_tol(4, 1.0))


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5, float("nan"), [0.1, 1.0, 0.2], [0.1, 0.2]])
def test_bernoulli_validation(p):
    with pytest.raises(InvalidArgumentError) as info:
        straggler_model("bernoulli", 3, p=p)
    assert info.value.argument == "p"


def test_all_patterns_enumeration():
    model = straggler_model("all", 6, s=2)
    assert isinstance(model, AllPatternsModel) and model.count == 15
    masks = model.enumerate()
    sets = {tuple(np.flatnonzero(~mk)) for mk in masks}
    assert sets == set(itertools.combinations(range(6), 2))
    chunks = list(model.iter_chunks(4))
    assert [c.shape[0] for c in chunks] == [4, 4, 4, 3]
    assert np.array_equal(np.vstack(chunks), masks)


def test_worst_has_no_sampler():
    model = straggler_model("worst", 5, s=2)
    assert isinstance(model, WorstCaseModel)
    with pytest.raises(InvalidArgumentError, match="worst_case_error"):
        model.sample(3, 0)


def test_markov_stationary_and_transitions():
    model = straggler_model("markov", 50, p_enter=0.1, p_leave=0.4)
    masks = model.sample(4000, seed=2)
    strag = ~masks
    # sampling thresholds (50 x 4000 draws, correlated in time), not rounding tolerances
    assert abs(strag.mean() - 0.2) < 0.01
    prev, nxt = strag[:-1], strag[1:]
    enter = (nxt & ~prev).sum() / (~prev).sum()
    leave = (~nxt & prev).sum() / prev.sum()
    assert abs(enter - 0.1) < 0.01 and abs(leave - 0.4) < 0.015
    assert np.array_equal(masks, model.sample(4000, seed=2))


def test_markov_validation():
    with pytest.raises(InvalidArgumentError, match="^p_leave"):
        MarkovModel(3, 0.1, 0.0)
    with pytest.raises(InvalidArgumentError, match="^p_enter"):
        MarkovModel(3, 1.0, 0.5)


def test_trace_first_and_deadline():
    delays = np.array([[0.3, 2.0, np.inf], [0.1, 0.5, 1.0], [0.2, 0.5, 2.0], [0.9, 0.1, 3.0]])
    first = straggler_model("trace", delays=delays, policy="first", s=1)
    assert first.n == 4 and first.iterations == 3
    assert first.masks().astype(int).tolist() == [[1, 1, 1, 0], [0, 1, 1, 1], [0, 1, 1, 1]]
    dl = straggler_model("trace", 4, delays=delays, policy="deadline", deadline=0.5)
    assert dl.masks().astype(int).tolist() == [[1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0]]
    # cyclic replay from the seed offset
    assert np.array_equal(first.sample(4, seed=2), first.masks()[[2, 0, 1, 2]])


def test_trace_never_arrives():
    delays = np.array([[np.inf], [np.inf], [1.0]])
    # waiting for n - s = 2 arrivals but only one ever arrives
    assert TraceModel(delays, "first", s=1).masks().astype(int).tolist() == [[0, 0, 1]]


@pytest.mark.parametrize(
    "kw,arg",
    [
        (dict(delays=np.array([[np.nan, 1.0]]), policy="first", s=0), "delays"),
        (dict(delays=np.array([1.0, 2.0]), policy="first", s=0), "delays"),
        (dict(delays=np.ones((2, 2)), policy="first"), "s"),
        (dict(delays=np.ones((2, 2)), policy="deadline"), "deadline"),
        (dict(delays=np.ones((2, 2)), policy="last", s=1), "policy"),
        (dict(delays=np.ones((2, 2)), policy="first", s=3), "s"),
    ],
)
def test_trace_validation(kw, arg):
    with pytest.raises(InvalidArgumentError) as info:
        straggler_model("trace", **kw)
    assert info.value.argument == arg


@pytest.mark.parametrize(
    "kind,n,kw,arg",
    [
        ("magic", 4, {}, "kind"),
        ("fixed", 4, {"s": 5}, "s"),
        ("fixed", 4, {}, "s"),
        ("fixed", 0, {"s": 0}, "n"),
        ("fixed", 4, {"s": 1, "p": 0.1}, "params"),
        ("bernoulli", None, {"p": 0.1}, "n"),
    ],
)
def test_factory_validation(kind, n, kw, arg):
    with pytest.raises(InvalidArgumentError) as info:
        straggler_model(kind, n, **kw)
    assert info.value.argument == arg


def test_sample_validation():
    with pytest.raises(InvalidArgumentError, match="^count"):
        FixedModel(3, 1).sample(-1, 0)
    with pytest.raises(InvalidArgumentError, match="^seed"):
        BernoulliModel(3, 0.1).sample(2, seed=-5)


def test_describe_and_params():
    for model in (
        FixedModel(5, 1),
        AllPatternsModel(5, 1),
        BernoulliModel(5, 0.2),
        WorstCaseModel(5, 1),
        MarkovModel(5, 0.1, 0.5),
        TraceModel(np.ones((5, 2)), "first", s=1),
    ):
        assert isinstance(model.describe(), str) and model.params.n == 5
        assert type(model).__name__ in repr(model)


def _every_model():
    from gcsim.coding.delays import DelayStragglerModel, arrival_rule, delay_model

    trace = np.array([[1.0, 5.0], [2.0, 1.0], [3.0, np.inf]])
    return [
        FixedModel(5, 2),
        AllPatternsModel(4, 1),
        WorstCaseModel(5, 2),
        BernoulliModel(4, 0.25),
        BernoulliModel(3, [0.1, 0.2, 0.3]),
        MarkovModel(3, 0.1, [0.5, 0.4, 0.3]),
        TraceModel(trace, "first", s=1),
        TraceModel(trace, "deadline", deadline=2.0),
        DelayStragglerModel(delay_model("pareto", 6, scale=1.0, shape=2.0), arrival_rule("first", s=2)),
        DelayStragglerModel(delay_model("trace", 3, delays=trace), arrival_rule("deadline", deadline=2.0)),
    ]


@pytest.mark.parametrize("model", _every_model(), ids=lambda m: type(m).__name__)
def test_object_contract(model):
    from gcsim.coding.straggler_base import StragglerModel
    from gcsim.errors import CatalogueError

    assert model.kind == "straggler_model" and model.verify() is True
    assert type(model.params).__name__.endswith("Params") and hasattr(model.params, "_asdict")
    with pytest.raises(AttributeError):
        model.n = 99
    with pytest.raises(AttributeError):
        del model.n
    arrays = model.to_arrays()
    for a in arrays.values():
        assert not a.flags.writeable
    import json

    meta = json.loads(json.dumps(model.bundle_metadata()))  # JSON-serializable
    assert isinstance(meta["params"], list) and isinstance(meta["construction"], str)
    for cls in (type(model), StragglerModel):
        back = cls.from_arrays(arrays, meta)
        assert type(back) is type(model) and back.params == model.params
        assert all(np.array_equal(back.to_arrays()[k], v) for k, v in arrays.items())
        assert np.array_equal(back.sample(3, seed=1), model.sample(3, seed=1)) if model.model_kind != "worst" else True
    with pytest.raises(CatalogueError):
        type(model).from_arrays(arrays, {**meta, "construction": "nope"})
    with pytest.raises(CatalogueError):
        type(model).from_arrays(arrays, {**meta, "params": meta["params"][:-1] + ["x"]})
