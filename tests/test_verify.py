"""Tests of the bound verification engine gcsim.coding.verify.

Simulated errors and violation sets are recomputed here by brute force
(numpy lstsq), never taken from the engine itself.
"""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np
import pytest

from conftest import FANO
from exact_lstsq import reference_error
from gcsim.coding import bounds as bd
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.verify import Bound, BoundReport, builtin_bound, verify_bounds
from gcsim.errors import InvalidArgumentError
from test_evaluate_adversarial import stated_bounds
from tolerances import unit_roundoff


def eval_tol(B, m, mask):
    """What the engine's evaluator (``auto``) and the brute-force lstsq may each be off by."""
    b = stated_bounds(np.asarray(B), m, mask)
    return b["auto"] + b["svd"]


def engine_tol(bound, err):
    """The engine's documented pattern tolerance with its defaults (atol=1e-9, rtol=1e-7)."""
    return 1e-9 + 1e-7 * max(1.0, abs(bound), abs(err))


def all_masks(n, s):
    out = []
    for S in itertools.combinations(range(n), s):
        mask = np.ones(n, bool)
        mask[list(S)] = False
        out.append(mask)
    return np.array(out)


def cyclic(n, r):
    A = np.zeros((n, n), dtype=np.int64)
    for j in range(n):
        for t in range(r):
            A[(j + t) % n, j] = 1
    return A


def rd_scheme(A, m, seed, eps=0.0):
    """Own RD encoder (independent of gcsim.coding.schemes.encode), wrapped in a Scheme."""
    rng = np.random.default_rng(seed)
    D = rng.choice([-1.0, 1.0], size=(m, A.shape[1])) * (1 + eps * rng.uniform(-1, 1, size=(m, A.shape[1])))
    B = np.vstack([A * D[k][None] for k in range(m)])
    X0 = D.T / (A.sum(axis=1)[0] * (1 + eps**2 / 3))
    return Scheme.from_matrix(B, A, m, method="rd", decoder=X0, options={"eps": eps, "dist": "rademacher"})


def bad_lower(scheme, masks):
    return 1.5 * bd.rank_lower_bound(scheme.assignment, scheme.m, masks) + 1.0


@pytest.mark.parametrize("m,s", [(2, 3), (3, 2), (4, 3)])
def test_wrong_lower_bound_is_caught_with_the_offending_patterns(m, s):
    sch = rd_scheme(FANO, m, seed=m)
    masks = all_masks(7, s)
    rep = verify_bounds(sch, masks, ["rank_lower", ("bad_lower", "lower", "pattern", bad_lower)])
    errs = np.array([reference_error(np.asarray(sch.B), m, mk) for mk in masks])
    wrong = 1.5 * np.maximum(m - masks.astype(int) @ FANO.T, 0).sum(axis=1) + 1.0
    offending = {
        tuple(np.flatnonzero(~mk)) for mk, w, e in zip(masks, wrong, errs, strict=True) if w - e > engine_tol(w, e)
    }
    assert offending, "the deliberately wrong bound must fail somewhere"
    assert not rep.ok
    assert rep.check("rank_lower").ok
    bad = rep.check("bad_lower")
    assert {v.stragglers for v in bad.violations} == offending
    for v in bad.violations:
        assert abs(v.simulated - reference_error(np.asarray(sch.B), m, v.mask)) <= eval_tol(sch.B, m, v.mask)
        assert v.bound_value > v.simulated and v.excess > 0
        assert tuple(np.flatnonzero(~v.mask)) == v.stragglers
    assert len(rep.violations) == len(bad.violations)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_correct_pattern_bounds_hold_everywhere(m):
    sch = rd_scheme(FANO, m, seed=10 + m)
    for s in (0, 2, 5):
        masks = all_masks(7, s)
        rep = verify_bounds(sch, masks, ["rank_lower", "trivial_upper", "reference_decoder_upper"])
        assert rep.ok, rep.summary()
        lower = rep.check("rank_lower")
        tol = np.array([eval_tol(sch.B, m, mk) for mk in masks])
        # a tight bound (bound = err) may exceed the computed err by the evaluator's error
        pos = lower.simulated > 0
        rel = float(np.max(tol[pos] / lower.simulated[pos])) if pos.any() else 0.0
        assert lower.tightness["ratio_max"] <= 1.0 + rel
        assert rep.check("trivial_upper").tightness["ratio_min"] >= 1.0 - rel
        errs = np.array([reference_error(np.asarray(sch.B), m, mk) for mk in masks])
        assert np.all(np.abs(lower.simulated - errs) <= tol)


def test_expectation_bound_verified_in_expectation_not_per_draw():
    A, m = cyclic(6, 3), 3

    def redraw(seed):
        return rd_scheme(A, m, seed)

    masks = all_masks(6, 1)
    rep = verify_bounds(rd_scheme(A, m, 0), masks, ["rd_upper"], draws=48, redraw=redraw, seed=1)
    assert rep.ok, rep.summary()
    check = rep.check("rd_upper")
    assert check.scope == "expectation" and rep.draws == 48
    assert np.all(check.ci[:, 0] <= check.simulated) and np.all(check.simulated <= check.ci[:, 1])
    # single draws do exceed the bound (it bounds E_D err, not err): independently confirmed here
    seeds = np.random.SeedSequence(1).generate_state(48)
    per_draw = np.array([[reference_error(np.asarray(redraw(int(sd)).B), m, mk) for mk in masks] for sd in seeds])
    tol = max(eval_tol(redraw(int(sd)).B, m, mk) for sd in seeds[:4] for mk in masks)
    assert np.any(per_draw > check.bound_values[None] + tol)
    assert np.all(np.abs(per_draw.mean(axis=0) - check.simulated) <= tol)


def test_wrong_expectation_bound_is_caught():
    A, m = cyclic(6, 3), 2

    def redraw(seed):
        return rd_scheme(A, m, seed)

    half = Bound(
        "half_rd_upper",
        "upper",
        "expectation",
        lambda sch, masks: 0.5 * bd.rd_upper_bound(sch.assignment, sch.m, masks),
    )
    rep = verify_bounds(rd_scheme(A, m, 0), all_masks(6, 1), [half, "rd_upper"], draws=32, redraw=redraw)
    assert rep.check("rd_upper").ok
    viol = rep.check("half_rd_upper").violations
    assert viol and not rep.ok
    per_pattern = [v for v in viol if v.pattern is not None]
    assert per_pattern and all(len(v.stragglers) == 1 for v in per_pattern)
    assert any(v.pattern is None for v in viol)  # the pooled test also fires
    for v in per_pattern:
        assert v.ci[0] > v.bound_value


def test_hoeffding_intervals_are_wider_and_still_catch_gross_errors():
    A, m = cyclic(6, 3), 2

    def redraw(seed):
        return rd_scheme(A, m, seed)

    tiny = Bound("tiny", "upper", "expectation", lambda sch, masks: np.full(masks.shape[0], 0.1))
    masks = all_masks(6, 2)
    rep_t = verify_bounds(rd_scheme(A, m, 0), masks, ["rd_upper", tiny], draws=64, redraw=redraw)
    rep_h = verify_bounds(rd_scheme(A, m, 0), masks, ["rd_upper", tiny], draws=64, redraw=redraw, ci_method="hoeffding")
    assert rep_h.check("rd_upper").ok and not rep_h.check("tiny").ok
    wt = np.diff(rep_t.check("rd_upper").ci, axis=1)
    wh = np.diff(rep_h.check("rd_upper").ci, axis=1)
    # both widths are O(1) numbers formed with a few roundings each
    assert np.all(wh >= wt - 8 * unit_roundoff() * np.maximum(np.abs(wh), np.abs(wt)))


def test_report_is_json_serializable_and_deterministic():
    sch = rd_scheme(FANO, 2, seed=4)

    def redraw(seed):
        return rd_scheme(FANO, 2, seed)

    kwargs = dict(
        bounds=["rank_lower", "rd_upper", ("bad", "lower", "pattern", bad_lower)], draws=8, redraw=redraw, seed=3
    )
    a = verify_bounds(sch, all_masks(7, 4), **kwargs).to_dict(include_values=True)
    b = verify_bounds(sch, all_masks(7, 4), **kwargs).to_dict(include_values=True)
    text = json.dumps(a, allow_nan=False)
    assert json.loads(text) == b
    assert a["violations"] > 0 and a["checks"][2]["violations"][0]["stragglers"]


def test_with_library_encoder_and_straggler_models():
    sch = encode(FANO, 2, "rd", eps=0.1, seed=0)
    rep = verify_bounds(sch, straggler_model("all", 7, s=2), draws=12)
    assert isinstance(rep, BoundReport) and rep.patterns == 21 and rep.pattern_method.startswith("enumerated")
    assert {c.name for c in rep.checks} == {"rank_lower", "trivial_upper", "reference_decoder_upper", "rd_upper"}
    assert rep.ok, rep.summary()
    rep_b = verify_bounds(sch, straggler_model("bernoulli", 7, p=0.3), ["rank_lower"], samples=40, seed=2)
    assert rep_b.patterns == 40 and rep_b.pattern_method.startswith("sampled")
    rep_w = verify_bounds(sch, straggler_model("worst", 7, s=3), ["rank_lower"])
    assert rep_w.patterns == 35
    ns = encode(FANO, 2, "ns", seed=1, dist="gaussian")
    assert verify_bounds(ns, all_masks(7, 0), ["rank_lower", "reference_decoder_upper"]).ok


def test_validation_errors():
    sch = rd_scheme(FANO, 2, seed=0)
    masks = all_masks(7, 1)
    with pytest.raises(InvalidArgumentError, match="bounds"):
        verify_bounds(sch, masks, ["no_such_bound"])
    with pytest.raises(InvalidArgumentError, match="bounds"):
        verify_bounds(sch, masks, [("x", "middle", "pattern", bad_lower)])
    with pytest.raises(InvalidArgumentError, match="bounds"):
        verify_bounds(sch, masks, [("x", "lower", "always", bad_lower)])
    with pytest.raises(InvalidArgumentError, match="bounds"):
        verify_bounds(sch, masks, [("x", "lower", "pattern", lambda s, mk: np.zeros(3))])
    with pytest.raises(InvalidArgumentError, match="draws"):
        verify_bounds(sch, masks, ["rank_lower"], draws=1)
    with pytest.raises(InvalidArgumentError, match="confidence"):
        verify_bounds(sch, masks, ["rank_lower"], confidence=1.0)
    with pytest.raises(InvalidArgumentError, match="model"):
        verify_bounds(sch, np.ones((2, 5), bool), ["rank_lower"])
    with pytest.raises(InvalidArgumentError, match="scheme"):
        verify_bounds(object(), masks, ["rank_lower"])
    with pytest.raises(InvalidArgumentError, match="ci_method"):
        verify_bounds(sch, masks, ["rank_lower"], ci_method="bootstrap")
    naive = Scheme.from_matrix(np.tile(FANO, (2, 1)), FANO, 2, method="naive")
    with pytest.raises(InvalidArgumentError, match="redraw"):
        verify_bounds(naive, masks, [("e", "upper", "expectation", lambda s, mk: np.full(mk.shape[0], 14.0))])
    with pytest.raises(InvalidArgumentError, match="redraw"):
        verify_bounds(sch, masks, ["rd_upper"], redraw=lambda seed: rd_scheme(FANO, 3, seed))
    assert builtin_bound("rd_upper").scope == "expectation"


def test_svd_route_matches_bruteforce_on_a_zero_column():
    from gcsim.coding.evaluate import optimal_error

    rng = np.random.default_rng(2)
    A = cyclic(6, 3)
    B = rng.standard_normal((12, 6)) * np.tile(A, (2, 1))
    B[:, 0] = 0.0  # a zero column: rank-deficient B_F
    sch = Scheme.from_matrix(B, A, 2)
    masks = np.vstack([all_masks(6, 2), np.zeros((1, 6), bool)])
    expected = [reference_error(B, 2, mk) for mk in masks]
    got = optimal_error(sch, masks, method="svd", progress=False)
    tol = [2 * stated_bounds(B, 2, mk)["svd"] for mk in masks]  # two orthogonal routes
    assert np.all(np.abs(got - expected) <= tol)


def test_diagonal_dominance_and_partial_uncovering_bounds_registered():
    # the two bounds of theory §45.7-45.8: checked by the engine on every pattern (resp. the worst pattern of
    # each size), and recomputed here from lstsq (the worst case) and the closed formula (the values)
    A = cyclic(9, 3)
    m = 2
    for sch in (encode(A, m, "rd", seed=2), encode(A, m, "naive"), encode(A, m, "ns", eps=0.2, seed=1)):
        for s in (1, 3, 5):
            model = straggler_model("all", 9, s=s)
            rep = verify_bounds(sch, model, ["diagonal_dominance_upper", "partial_uncovering_lower"])
            assert rep.ok, rep.summary()
            dd = rep.check("diagonal_dominance_upper")
            assert dd.scope == "pattern" and dd.kind == "upper" and dd.bound_values.shape == (rep.patterns,)
            worst = max(reference_error(sch.B, m, mk) for mk in all_masks(9, s))
            low = rep.check("partial_uncovering_lower")
            expected = max((j + 1) * min(9, (9 * (s + m - 1 - j)) // 27) for j in range(m))  # R = 27 ones
            assert low.scope == "worst" and np.all(low.bound_values == expected) and expected <= worst + 1e-9
    assert builtin_bound("diagonal_dominance_upper").kind == "upper"
    assert builtin_bound("partial_uncovering_lower").scope == "worst"


def test_a_wrong_diagonal_dominance_bound_is_caught():
    # half the bound is no bound: the engine must report patterns where the lstsq error exceeds it, with their sets
    sch = encode(cyclic(9, 3), 2, "rd", seed=2)
    half = Bound("half_dd", "upper", "pattern", lambda sc, masks: 0.5 * bd.diagonal_dominance_upper_bound(sc, masks))
    rep = verify_bounds(sch, straggler_model("all", 9, s=2), [half])
    assert not rep.ok
    for v in rep.violations:
        assert reference_error(sch.B, 2, v.mask) > v.bound_value


def test_builtin_bounds_are_the_registry_of_the_bounds_package():
    """Every built-in bound is registered beside its function, by a module of gcsim.coding.bounds."""
    from gcsim.coding.bounds import registry
    from gcsim.coding.verify import BUILTIN_BOUNDS

    assert set(BUILTIN_BOUNDS) == set(registry.builtin_bounds()) >= {"rank_lower", "rd_upper", "spectral_upper"}
    for name, bound in BUILTIN_BOUNDS.items():
        assert bound.name == name
        assert bound.function.__module__.startswith("gcsim.coding.bounds."), name
    with pytest.raises(InvalidArgumentError, match="'rank_lower' is registered twice"):
        registry.register_bound("rank_lower", "lower", "pattern", "again")(lambda scheme, masks: masks.sum(axis=1))


def test_a_new_bound_module_is_found_without_an_import_line(tmp_path, monkeypatch):
    """A module dropped into the package registers its bound; nothing else is edited (docs/contributing.md)."""
    import gcsim.coding.bounds as package
    from gcsim.coding.bounds import registry

    (tmp_path / "my_trial_bound.py").write_text(
        "import numpy as np\n"
        "from gcsim.coding.bounds.registry import register_bound\n\n\n"
        "@register_bound('my_trial_upper', 'upper', 'pattern', 'm N again (a trial)')\n"
        "def _my_trial_upper(scheme, masks):\n"
        "    return np.full(masks.shape[0], float(scheme.m * scheme.assignment.shape[0]))\n"
    )
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.delitem(sys.modules, "gcsim.coding.bounds.my_trial_bound", raising=False)
    try:
        found = registry.builtin_bounds()
    finally:
        sys.modules.pop("gcsim.coding.bounds.my_trial_bound", None)
    assert found["my_trial_upper"].kind == "upper"
    sch = encode(FANO, 2, "rd", seed=0)
    rep = verify_bounds(sch, straggler_model("all", 7, s=1), [found["my_trial_upper"]])
    assert rep.ok and rep.check("my_trial_upper").tightness["ratio_min"] >= 1.0
