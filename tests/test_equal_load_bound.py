"""The certified lower bound of Lemma 63.7 against every design at tiny sizes (#36 item 2; theory §63.7).

The independent computation: every 0/1 assignment with the given load (each worker ``l`` of ``N``
parts), its expected error over every straggler pattern with each pattern's probability and the
tests' least-squares reference (tests/exact_lstsq.py), for ``B = A`` at ``m = 1`` and for random
coefficients with the assignment's support at ``m = 2``.  The bound must lie below every one of
them, and equal the minimum where the theory says the LP optimum is a design (equal ``p``: the
fractional repetition).  The certificate must be rejected when a dual entry is raised.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from gcsim import limits
from gcsim.coding.bounds.equal_load import (
    check_load_certificate,
    equal_load_lower_bound,
    subset_costs,
)
from gcsim.coding.stragglers import straggler_model
from gcsim.errors import InvalidArgumentError, SizeLimitError, VerificationError
from tests.exact_lstsq import lstsq_error

EXAMPLE = [Fraction(1, 20)] * 3 + [Fraction(3, 5)] * 3  # theory §63.3


def _masks(n):
    return np.array(list(itertools.product([False, True], repeat=n)))  # True = arrived


def _weights(p, masks):
    p = np.asarray([float(v) for v in p])
    return np.prod(np.where(masks, 1.0 - p, p), axis=1)


def _equal_load_assignments(n, parts, load):
    """Every N x n 0/1 matrix whose columns each hold ``load`` parts, one per multiset of rows."""
    columns = [c for c in itertools.product([0, 1], repeat=parts) if sum(c) == load]
    seen = set()
    for choice in itertools.product(columns, repeat=n):
        A = np.array(choice, dtype=float).T
        key = tuple(sorted(map(tuple, A.astype(int).tolist())))
        if key not in seen:
            seen.add(key)
            yield A


def _expected(B, p, m):
    masks = _masks(B.shape[1])
    return float(_weights(p, masks) @ np.array([lstsq_error(B, f, m, normalized=True) for f in masks]))


@pytest.mark.parametrize(
    ("p", "parts", "load"),
    [
        ([Fraction(1, 5)] * 4, 4, 2),  # equal p, r = 2 divides n = 4: the fractional repetition reaches it
        ([Fraction(1, 10)] * 3, 3, 1),  # r = 1: the uncoded split reaches it
        ([0.05, 0.1, 0.5, 0.6], 4, 2),
        ([0.05, 0.1, 0.5, 0.6], 2, 1),
        ([0.02, 0.3, 0.7], 3, 2),
    ],
)
def test_the_bound_lies_below_every_assignment_of_that_load(p, parts, load):
    cert = equal_load_lower_bound(p, load, parts)
    errors = [_expected(A, p, 1) for A in _equal_load_assignments(len(p), parts, load)]
    assert errors and cert.bound <= min(errors) + 1e-12
    if all(isinstance(v, Fraction) for v in p) and len(set(p)) == 1:
        # equal p: LP = p^r (p^k is convex in k), reached by the fractional repetition (Lemma 63.2 tight)
        r = Fraction(load * len(p), parts)
        assert r.denominator == 1 and cert.value == p[0] ** int(r)
        assert min(errors) == pytest.approx(float(cert.value), abs=1e-13)


def test_the_bound_for_two_messages_lies_below_every_coded_design():
    """m = 2: any coefficients with the assignment's support (random Gaussian), every assignment."""
    p = [0.05, 0.2, 0.5, 0.6]
    cert = equal_load_lower_bound(p, 2, 3, m=2)
    rng = np.random.default_rng(7)
    worst_gap = math.inf
    for A in _equal_load_assignments(4, 3, 2):
        for _ in range(3):
            B = np.vstack([A * rng.standard_normal(A.shape) for _ in range(2)])  # row (l, i): support W_i
            worst_gap = min(worst_gap, _expected(B, p, 2) - cert.bound)
        # the rank bound of Theorem 1 itself, averaged by enumeration: the LP bounds it too
        c = _masks(4).astype(int) @ A.T.astype(int)  # c[F, i] = |W_i ∩ F|
        rank = float(_weights(p, _masks(4)) @ np.maximum(2 - c, 0).sum(axis=1)) / (2 * A.shape[0])
        assert cert.bound <= rank + 1e-12
    assert worst_gap >= -1e-12


def test_the_example_of_theory_63_3_is_certified_exactly():
    cert = equal_load_lower_bound(EXAMPLE, 2, 6)
    assert cert.value == Fraction(3, 100) and cert.bound == 0.03
    assert cert.verify() == Fraction(3, 100)
    assert cert.solver_value == pytest.approx(0.03, abs=1e-12)
    floats = equal_load_lower_bound([float(v) for v in EXAMPLE], 2, 6)  # p lowered by 2^-40
    assert floats.value < Fraction(3, 100) and floats.bound == pytest.approx(0.03, rel=1e-11)


def test_a_raised_dual_entry_is_rejected():
    cert = equal_load_lower_bound(EXAMPLE, 2, 6)
    dual = list(cert.dual)
    for k in range(len(dual)):  # every entry is tight somewhere: the value is the LP optimum
        raised = dual.copy()
        raised[k] += Fraction(1, 10**12)
        with pytest.raises(VerificationError, match="dual: infeasible at the subset T = "):
            check_load_certificate(cert.p, cert.fractions, 1, raised)
    lowered = [dual[0] - Fraction(1, 100), *dual[1:]]  # still feasible, a weaker bound
    assert check_load_certificate(cert.p, cert.fractions, 1, lowered) == Fraction(3, 100) - Fraction(1, 100)
    with pytest.raises(VerificationError, match="exact rationals"):
        check_load_certificate(cert.p, cert.fractions, 1, [float(v) for v in dual])


def test_the_costs_are_the_probabilities_of_losing_a_part():
    p = [Fraction(1, 3), Fraction(1, 4), Fraction(1, 2)]
    masks = _masks(3)
    for m in (1, 2, 3):
        costs = subset_costs(p, m)
        for T in range(8):
            # E[(m - |T ∩ F|)^+] / m over the 8 patterns, by enumeration
            inside = [j for j in range(3) if T >> j & 1]
            ref = sum(
                math.prod((1 - p[j]) if f[j] else p[j] for j in range(3)) * max(m - sum(f[j] for j in inside), 0)
                for f in masks.tolist()
            ) / Fraction(m)
            assert costs[T] == ref, (m, T)


def test_a_load_dependent_model_is_bound_at_the_loads():
    speed, law = [3.0, 2.0, 2.0, 1.0, 1.0, 1.0], {"deadline": 0.5, "shift": 0.5, "rate": 1.0}
    model = straggler_model("load-speed", 6, speed=speed, fractions=None, **law)
    cert = equal_load_lower_bound(model, 2, 6)
    p = model.bind(np.full(6, 2), 6).independent_p()
    assert cert.bound == equal_load_lower_bound(list(p), 2, 6).bound
    assert cert.bound == pytest.approx(0.0198740062830984, abs=1e-12)  # tests/test_load_allocation.py's own LP


def test_per_worker_loads_and_more_data_give_a_lower_bound():
    p = [0.05, 0.1, 0.5, 0.6]
    equal = equal_load_lower_bound(p, 2, 4).bound
    more = equal_load_lower_bound(p, [2, 2, 3, 2], 4).bound
    assert more <= equal + 1e-15  # §63.7 (ii): a worker holding more data cannot raise the bound
    errors = [_expected(A, p, 1) for A in _per_worker_assignments([2, 2, 3, 2], 4)]
    assert more <= min(errors) + 1e-12


def _per_worker_assignments(loads, parts):
    per = [[c for c in itertools.product([0, 1], repeat=parts) if sum(c) == ell] for ell in loads]
    for choice in itertools.product(*per):
        yield np.array(choice, dtype=float).T


def test_sizes_and_bad_inputs_are_refused_by_name(monkeypatch):
    monkeypatch.setattr(limits, "MAX_LP_SUBSETS", 2**5)
    with pytest.raises(SizeLimitError, match=r"model: .*64 subsets.*MAX_LP_SUBSETS"):
        equal_load_lower_bound([0.1] * 6, 2, 6)
    monkeypatch.setattr(limits, "MAX_LP_SUBSETS", 2**16)
    for args, match in [
        (([0.1, 1.5], 1, 2), "model: entry 1 must lie in"),
        (([0.1, "x"], 1, 2), "model: entry 1 must be a real number"),
        ((0.1, 1, 2), "model: must be a sequence"),
        (([0.1, 0.2], 3, 2), "load"),
        (([0.1, 0.2], [1], 2), "load: must give 2 loads"),
        (([0.1, 0.2], 1, 0), "parts"),
    ]:
        with pytest.raises(InvalidArgumentError, match=match):
            equal_load_lower_bound(*args)
    with pytest.raises(InvalidArgumentError, match="m: "):
        equal_load_lower_bound([0.1, 0.2], 1, 2, m=0)
    with pytest.raises(InvalidArgumentError, match="needs independent workers"):
        equal_load_lower_bound(straggler_model("fixed", 3, s=1), 1, 3)


@pytest.mark.parametrize(("m", "load"), [(1, 3), (2, 3), (1, [1, 2, 3, 4, 5, 2, 1, 6])])
def test_column_generation_reaches_the_whole_programmes_optimum(m, load):
    """The library prices columns in; the whole LP over all 256 subsets, solved here at once, agrees."""
    from scipy.optimize import linprog

    n = 8
    p = np.random.default_rng(3).uniform(0.02, 0.8, n)
    f = np.full(n, 3 / 8) if isinstance(load, int) else np.array(load) / 8
    T = _masks(n)  # every subset, any order
    cost = np.array([_cost_by_patterns(p, np.flatnonzero(t), m) for t in T])
    A_eq = np.vstack([np.ones(len(T)), T.T.astype(float)])
    whole = linprog(cost, A_eq=A_eq, b_eq=[1.0, *f], bounds=(0, None), method="highs")
    cert = equal_load_lower_bound(list(p), load, 8, m=m)
    assert cert.solver_value == pytest.approx(whole.fun, abs=1e-12)
    assert whole.fun - 1e-11 < cert.bound <= whole.fun + 1e-12


def _cost_by_patterns(p, workers, m):
    """E[(m - |T ∩ F|)^+] / m over the 2^|T| arrival patterns of the workers of T."""
    out = 0.0
    for arrived in itertools.product([False, True], repeat=len(workers)):
        prob = math.prod((1 - p[j]) if a else p[j] for j, a in zip(workers, arrived, strict=True))
        out += prob * max(m - sum(arrived), 0)
    return out / m


def test_m_is_checked_and_large_m_costs_no_memory():
    """``|T ∩ F| <= n``, so for ``m > n`` every ``(m - c)^+`` is ``m - c`` and ``g_m(T) = 1 - E|T ∩ F| / m``
    (written out here from the ``p_j``); a huge ``m`` must not allocate ``m`` counts per subset."""
    from fractions import Fraction

    import pytest

    from gcsim.coding.bounds.equal_load import check_load_certificate, subset_costs
    from gcsim.errors import InvalidArgumentError

    p = [Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)]
    m = 10**9
    for T, g in enumerate(subset_costs(p, m)):
        arrivals = sum((1 - p[j] for j in range(3) if T >> j & 1), Fraction(0))
        assert g == 1 - arrivals / m
    floats = subset_costs([float(q) for q in p], m)
    assert all(abs(a - float(b)) < 1e-12 for a, b in zip(floats, subset_costs(p, m), strict=True))
    for bad in (0, 1.5, "2", -3):
        with pytest.raises(InvalidArgumentError, match="m"):
            subset_costs(p, bad)
        with pytest.raises(InvalidArgumentError, match="m"):
            check_load_certificate(p, [Fraction(1, 3)] * 3, bad, [Fraction(0)] * 4)


def test_the_costs_of_all_subsets_are_enumerated_once(monkeypatch):
    """The exact pass feeds both the solver (rounded to floats) and the exact check: one enumeration of 2^n."""
    from gcsim.coding.bounds import equal_load

    calls = []
    exact = equal_load._scaled_costs
    monkeypatch.setattr(equal_load, "_scaled_costs", lambda p, m: calls.append(m) or exact(p, m))
    monkeypatch.setattr(equal_load, "_arrival_counts", lambda *a: pytest.fail("a second, float enumeration"))
    cert = equal_load.equal_load_lower_bound([0.05, 0.1, 0.5, 0.6], 2, 4, m=2)
    assert calls == [2]
    assert cert.verify() == cert.value  # the public check, from scratch, agrees
