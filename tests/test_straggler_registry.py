"""The straggler-model registry (#35 item 2): kinds found by discovery, one grammar, dispatch by the model."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from gcsim.advisor.core import STRAGGLER_SPEC, straggler_spec
from gcsim.coding import straggler_models as sm
from gcsim.coding.straggler_base import StragglerModel
from gcsim.coding.straggler_models import _registry
from gcsim.coding.stragglers import KINDS, straggler_model
from gcsim.errors import InvalidArgumentError

SPECS = ["fixed:2", "all:1", "worst:3", "bernoulli:0.1", "markov:0.05,0.5"]


def test_the_built_in_kinds_in_their_order():
    # a model added to the package lists after (or between) these, by its order and spec_order
    builtin = ("fixed", "bernoulli", "all", "worst", "markov", "trace", "delay")
    assert KINDS == sm.model_kinds() and [k for k in KINDS if k in builtin] == list(builtin)
    with_spec = ("fixed", "all", "worst", "bernoulli", "markov")
    assert [k for k in sm.spec_kinds() if k in with_spec] == list(with_spec)
    assert STRAGGLER_SPEC == sm.spec_grammar()
    assert STRAGGLER_SPEC.startswith(
        "KIND:VALUES: fixed:S (S uniform stragglers), all:S, worst:S, bernoulli:P (or P_1,...,P_n per worker; P*K: K "
        "workers), markov:P_ENTER,P_LEAVE"
    )


@pytest.mark.parametrize("spec", SPECS)
def test_a_spec_prints_back_and_parses_to_the_same_model(spec):
    model = straggler_spec(spec, 9)
    assert model.to_spec() == spec
    assert straggler_spec(model.to_spec(), 9).params == model.params
    assert type(model) is sm.model_class(spec.partition(":")[0])


def test_models_without_a_spec_print_none():
    trace = straggler_model("trace", delays=np.ones((3, 2)), s=1)
    assert trace.to_spec() is None and type(trace).spec_grammar() == ""


@pytest.mark.parametrize(
    "spec,p",
    [
        ("bernoulli:0.05*3,0.6*3", [0.05] * 3 + [0.6] * 3),
        ("bernoulli:0.1,0.2,0.3,0.1*2,0", [0.1, 0.2, 0.3, 0.1, 0.1, 0.0]),
        ("bernoulli:0.25*6", [0.25] * 6),
    ],
)
def test_per_worker_bernoulli_specs_parse_and_print_back(spec, p):
    model = straggler_spec(spec, 6)
    assert model.p.tolist() == p
    again = straggler_spec(model.to_spec(), 6)
    assert type(again) is type(model) and again.params == model.params


@pytest.mark.parametrize(
    "spec,shown",
    [
        ("bernoulli:0.1,0.2", "2 values of P given, one per worker for n = 6"),
        ("bernoulli:0.1*5,x", "P value 'x' is not a number"),
        ("bernoulli:0.1*5,1.5", "got 1.5 for worker 5"),
        ("bernoulli:0.1*0,0.1*6", "'0.1*0' the repeat count"),
        ("bernoulli:0.1*9" + "9" * 40, "gives 7 values of P"),
        ("speed:1,0.5,1,2*3,1*2", "5 values of S given"),
        ("speed:1,0.5,1,2*3,slow*3", "S value 'slow*3' is not a number"),
        ("speed:1,0.5", "speed takes DEADLINE,SHIFT,RATE and one speed per worker"),
        ("speed:x,0.5,1,1*6", "'speed:x,0.5,1,1*6': the values of speed must be a number"),
        ("speed:1,0.5,1,2*3,0.25*3", "worker 3 (speed 0.25) never arrives by 1"),
    ],
)
def test_per_worker_specs_refuse_naming_the_value(spec, shown):
    with pytest.raises(InvalidArgumentError, match="^stragglers: ") as err:
        straggler_spec(spec, 6)
    assert shown in str(err.value)


def test_an_unknown_kind_is_refused_with_the_registered_ones():
    with pytest.raises(InvalidArgumentError, match=r"kind: must be one of \('fixed', 'bernoulli'"):
        straggler_model("nope", 5)
    with pytest.raises(InvalidArgumentError, match="unknown kind 'trace'"):
        straggler_spec("trace:1", 5)


def _package(tmp_path, name, modules):
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    for mod, text in modules.items():
        (root / f"{mod}.py").write_text(textwrap.dedent(text))
    return name


@pytest.fixture
def isolated_registry(monkeypatch):
    # the kinds, and the classes from_arrays rebuilds (filled as classes are defined), restored afterwards
    monkeypatch.setattr(_registry, "_registry", dict(_registry._registry))
    monkeypatch.setattr(StragglerModel, "_registry", dict(StragglerModel._registry))
    yield
    for name in [m for m in sys.modules if m.startswith("extra_models")]:
        del sys.modules[name]


def test_a_new_module_is_found_and_dispatched_with_no_import_line(tmp_path, isolated_registry, monkeypatch):
    name = _package(
        tmp_path,
        "extra_models_ok",
        {
            "half": """
            from typing import ClassVar
            from gcsim.coding.straggler_models.bernoulli import BernoulliModel

            class HalfModel(BernoulliModel):
                model_kind: ClassVar[str] = "half"
                order: ClassVar[int] = 90
                spec_order: ClassVar[int] = 90
                parameters: ClassVar[tuple] = ()
                spec_values: ClassVar[tuple] = ()

                def __init__(self, n):
                    super().__init__(n, 0.5)

            MODELS = (HalfModel,)
            """
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = sm.discover_models(name)
    assert [c.model_kind for c in found] == ["half"]
    assert sm.model_kinds()[-1] == "half" and sm.spec_kinds()[-1] == "half"
    model = sm.parse_spec("half:", 4)
    assert model.to_spec() == "half:" and np.all(model.independent_p() == 0.5)


def test_a_public_module_without_models_is_an_error(tmp_path, isolated_registry, monkeypatch):
    name = _package(tmp_path, "extra_models_bad", {"oops": "X = 1\n", "_helper": "Y = 2\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidArgumentError, match=r"extra_models_bad.oops declares no MODELS tuple"):
        sm.discover_models(name)


def test_a_kind_defined_twice_is_an_error(tmp_path, isolated_registry, monkeypatch):
    name = _package(
        tmp_path,
        "extra_models_twice",
        {
            "again": """
            from typing import ClassVar
            from gcsim.coding.straggler_models.subsets import FixedModel

            class Again(FixedModel):
                model_kind: ClassVar[str] = "fixed"

            MODELS = (Again,)
            """
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="kind 'fixed' is defined twice"):
        sm.discover_models(name)


def test_an_entry_that_is_not_a_model_class_is_an_error(tmp_path, isolated_registry, monkeypatch):
    name = _package(tmp_path, "extra_models_entry", {"entry": "MODELS = (int,)\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="not a StragglerModel subclass"):
        sm.discover_models(name)


def test_the_law_each_built_in_kind_declares():
    n = 6
    fixed, every = straggler_model("fixed", n, s=2), straggler_model("all", n, s=2)
    bern, markov = straggler_model("bernoulli", n, p=0.2), straggler_model("markov", n, p_enter=0.1, p_leave=0.4)
    worst = straggler_model("worst", n, s=2)
    assert fixed.subset_size() == every.subset_size() == 2 and worst.subset_size() is None
    assert np.array_equal(bern.independent_p(), bern.p) and np.array_equal(markov.independent_p(), markov.stationary)
    assert (fixed.streamable, every.streamable, bern.streamable, markov.streamable) == (True, False, True, False)
    assert worst.adversarial and every.exhaustive and not fixed.adversarial
    assert fixed.fixed_stragglers() == worst.fixed_stragglers() == 2 and bern.fixed_stragglers() is None
    assert np.array_equal(bern.sample(4, seed=3), bern.masks_from_keys(np.random.default_rng(3).random((4, n))))
    assert np.array_equal(fixed.sample(4, seed=3), fixed.masks_from_keys(np.random.default_rng(3).random((4, n))))


def test_the_classes_from_arrays_rebuilds_are_the_registered_ones():
    assert {k: StragglerModel._registry[k] for k in sm.model_kinds()} == dict(sm.model_classes())
