"""gcsim.coding.bounds (the part run by ``scripts/mutation.py coding.bounds``) against independent computations.

Issue #32 item 7.  The symmetric-BIBD closed forms (Theorem 4 of docs/theory/45_bounds.md) are
checked against least squares on incidence matrices built here from cyclic difference sets, in
exact rationals (sympy) and in floating point (numpy.linalg.lstsq), for every straggler count;
the block helpers against their definitions written as loops.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
import sympy

from exact_lstsq import lstsq_error
from gcsim.coding.bounds import (
    bibd_naive_error,
    bibd_optimal_error_m1,
    block_multiplicities,
    ns_estimator_variance,
    rd_scaled_sign_error,
    rd_upper_bound,
    rd_variance_bound,
    registry,
    sgd_convergence_bound,
    split_blocks,
    srg_edge_range,
    straggling_probabilities,
    worst_case_rd_upper_bound,
)
from gcsim.errors import ImpossibleParametersError, InvalidArgumentError, SizeLimitError

# cyclic difference sets: (v, k, lam) -> D, incidence A[i, j] = 1 iff (i - j) mod v in D
DIFFERENCE_SETS = {
    (7, 3, 1): (0, 1, 3),
    (13, 4, 1): (0, 1, 3, 9),
    (11, 5, 2): (1, 3, 4, 5, 9),
    (4, 3, 2): (1, 2, 3),
}


def _incidence(v: int, D: tuple[int, ...]) -> np.ndarray:
    return np.array([[1 if (i - j) % v in D else 0 for j in range(v)] for i in range(v)])


def _exact_error(A: np.ndarray, F: tuple[int, ...], m: int) -> Fraction:
    """min_X ||B_F X - T||_F^2 with B = 1_m (x) A, T = I_m (x) 1, in exact rationals."""
    v = A.shape[0]
    if not F:
        return Fraction(m * v)
    B = sympy.Matrix(np.kron(np.ones((m, 1), dtype=int), A[:, list(F)]).tolist())
    T = sympy.Matrix(np.kron(np.eye(m, dtype=int), np.ones((v, 1), dtype=int)).tolist())
    X = (B.T * B).LUsolve(B.T * T)  # B_F has full column rank for a symmetric BIBD with lam >= 1
    R = B * X - T
    total = sum(R[i, j] ** 2 for i in range(R.rows) for j in range(R.cols))
    return Fraction(int(sympy.fraction(total)[0]), int(sympy.fraction(total)[1]))


def _float_error(A: np.ndarray, F: tuple[int, ...], m: int) -> float:
    """The naive code's ``err(F)`` (``B = 1_m ⊗ A``) by least squares in floating point."""
    return lstsq_error(np.kron(np.ones((m, 1)), A.astype(float)), np.isin(np.arange(A.shape[1]), F), m)


@pytest.mark.parametrize("params", list(DIFFERENCE_SETS))
def test_bibd_m1_error_against_exact_least_squares(params):
    v, k, lam = params
    A = _incidence(v, DIFFERENCE_SETS[params])
    assert (A.T @ A == (k - lam) * np.eye(v, dtype=int) + lam).all()  # the design is what it claims
    for s in range(v + 1):
        F = tuple(range(s, v))  # the closed form holds for every F of size v - s
        expected = _exact_error(A, F, 1)
        assert bibd_optimal_error_m1(v, k, lam, s, exact=True) == expected, s
        got = bibd_optimal_error_m1(v, k, lam, s)
        assert isinstance(got, float) and got == pytest.approx(_float_error(A, F, 1), abs=1e-9)
    # another F of the same size: the same value (Gamma_FF depends on |F| only)
    F = tuple(range(0, v, 2))
    assert bibd_optimal_error_m1(v, k, lam, v - len(F), exact=True) == _exact_error(A, F, 1)


@pytest.mark.parametrize("params", [(7, 3, 1), (4, 3, 2)])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_bibd_naive_error_against_exact_least_squares(params, m):
    v, k, lam = params
    A = _incidence(v, DIFFERENCE_SETS[params])
    for s in range(v + 1):
        F = tuple(range(v - s))
        expected = _exact_error(A, F, m)
        assert bibd_naive_error(v, k, lam, m, s, exact=True) == expected, (m, s)
        got = bibd_naive_error(v, k, lam, m, s)
        assert isinstance(got, float) and got == pytest.approx(_float_error(A, F, m), abs=1e-9)


@pytest.mark.parametrize(
    "fn,args,name",
    [
        (bibd_optimal_error_m1, (1, 1, 0, 0), "v"),
        (bibd_optimal_error_m1, (7, 0, 1, 0), "k"),
        (bibd_optimal_error_m1, (7, 8, 1, 0), "k"),
        (bibd_optimal_error_m1, (7, 3, -1, 0), "lam"),
        (bibd_optimal_error_m1, (7, 3, 4, 0), "lam"),
        (bibd_optimal_error_m1, (7, 3, 1, -1), "s"),
        (bibd_optimal_error_m1, (7, 3, 1, 8), "s"),
        (bibd_naive_error, (7, 3, 1, 0, 1), "m"),
        (bibd_naive_error, (7, 3, 1, 2, 8), "s"),
        (bibd_naive_error, (7, 3, 1, 2, -1), "s"),
        (bibd_naive_error, (1, 3, 1, 2, 0), "v"),
    ],
)
def test_bibd_closed_forms_bad_input_names_it(fn, args, name):
    with pytest.raises(InvalidArgumentError) as info:
        fn(*args)
    assert info.value.argument == name


def test_bibd_closed_forms_refuse_non_symmetric_parameters():
    for fn, args in [(bibd_optimal_error_m1, (7, 3, 2, 1)), (bibd_naive_error, (9, 3, 1, 2, 1))]:
        with pytest.raises(ImpossibleParametersError):
            fn(*args)
    with pytest.raises(InvalidArgumentError) as info:
        bibd_optimal_error_m1(7, 3, 1, 1, exact="yes")
    assert info.value.argument == "exact"
    with pytest.raises(InvalidArgumentError) as info:
        bibd_naive_error(7, 3, 1, 2, 1, exact=1.0)
    assert info.value.argument == "exact"
    # the edge cases of the checks: k = v (lam = v) and lam = 0 (k = 1) are symmetric and allowed
    assert bibd_optimal_error_m1(3, 3, 3, 1, exact=True) == Fraction(3) - Fraction(2 * 9, 0 + 3 * 2)
    assert bibd_optimal_error_m1(2, 1, 0, 1, exact=True) == Fraction(1)
    # every worker straggles on the trivial (3, 3, 3) design, where k - lam + lam f = 0 at f = 0
    assert bibd_optimal_error_m1(3, 3, 3, 3, exact=True) == 3 and bibd_naive_error(3, 3, 3, 2, 3) == 6.0


def test_block_multiplicities_by_counting():
    for d in range(0, 25):
        for m in range(1, 9):
            got = block_multiplicities(d, m)
            if d == 0:
                assert got.shape == (0,)
                continue
            w = -(-d // m)
            expected = [sum(1 for l in range(m) if l * w + (c % w) < d) for c in range(d)]
            assert got.tolist() == expected, (d, m)
    for args, name in [((-1, 2), "d"), ((4, 0), "m"), ((4.5, 2), "d")]:
        with pytest.raises(InvalidArgumentError) as info:
            block_multiplicities(*args)
        assert info.value.argument == name


def test_split_blocks_by_loops():
    rng = np.random.default_rng(3)
    for d in (1, 4, 5, 7):
        for m in (1, 2, 3, 4):
            G = rng.normal(size=(3, d))
            w = -(-d // m)
            expected = np.zeros((3, m, w))
            for i in range(3):
                for c in range(d):
                    expected[i, c // w, c % w] = G[i, c]
            np.testing.assert_array_equal(split_blocks(G, m), expected)
    assert split_blocks(np.zeros((2, 0)), 3).shape == (2, 3, 0)
    for args, name in [((np.ones(3), 2), "gradients"), ((np.ones((2, 3)), 0), "m"), (([[np.nan]], 1), "gradients")]:
        with pytest.raises(InvalidArgumentError) as info:
            split_blocks(*args)
        assert info.value.argument == name


def test_straggling_probabilities_broadcast_and_refusals():
    np.testing.assert_array_equal(straggling_probabilities(0.25, 3), [0.25, 0.25, 0.25])
    np.testing.assert_array_equal(straggling_probabilities([0.0, 0.5, 0.9], 3), [0.0, 0.5, 0.9])
    assert straggling_probabilities(0, 2).dtype == float
    for p in (1.0, -0.1, np.nan, np.inf, [0.1, 0.2], [[0.1, 0.2, 0.3]], True, [0.1, 1.0, 0.2]):
        with pytest.raises(InvalidArgumentError) as info:
            straggling_probabilities(p, 3)
        assert info.value.argument == "p", p


def test_every_straggler_set_of_the_fano_plane_gives_the_closed_form():
    A = _incidence(7, DIFFERENCE_SETS[(7, 3, 1)])
    for size in (2, 5):
        for F in combinations(range(7), size):
            assert _float_error(A, F, 1) == pytest.approx(bibd_optimal_error_m1(7, 3, 1, 7 - size), abs=1e-9)


def test_refusals_name_the_argument_and_condition():
    with pytest.raises(ImpossibleParametersError) as info:
        bibd_optimal_error_m1(7, 3, 2, 1)
    assert info.value.condition == "symmetric BIBD identity lambda (v - 1) = k (k - 1)"
    # sizes past gcsim.limits.MAX_DENSE_ENTRIES are refused before anything is allocated
    with pytest.raises(SizeLimitError) as info:
        split_blocks(np.ones((2, 3)), 10**12)
    assert info.value.argument == "m"
    with pytest.raises(SizeLimitError) as info:
        block_multiplicities(10**12, 2)
    assert info.value.argument == "d"


def test_block_multiplicities_are_integers_even_when_empty():
    assert block_multiplicities(0, 3).dtype == np.int64 and block_multiplicities(5, 2).dtype == np.int64


# --- survivors of the sampled run (scripts/mutation.py --sample 300 --seed 0 coding.bounds) ----------


def test_straggling_probabilities_refuse_every_bool():
    # a bool is not a probability (True would read as 1.0, False as 0.0): both are refused by type
    for p in (False, True, np.False_, np.True_):
        with pytest.raises(InvalidArgumentError) as info:
            straggling_probabilities(p, 3)
        assert info.value.argument == "p", p


def test_register_bound_records_what_it_was_given(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    def trial(scheme, masks):
        return np.zeros(masks.shape[0])

    assert registry.register_bound("trial_lower", "lower", "worst", "a trial")(trial) is trial
    record = registry.builtin_bounds()["trial_lower"]
    assert (record.name, record.kind, record.scope, record.function, record.description) == (
        "trial_lower",
        "lower",
        "worst",
        trial,
        "a trial",
    )
    # the same function again (a module reloaded) is accepted; another one under that name is not
    registry.register_bound("trial_lower", "lower", "worst", "a trial")(trial)
    with pytest.raises(InvalidArgumentError) as info:
        registry.register_bound("trial_lower", "lower", "worst", "a trial")(lambda scheme, masks: masks)
    assert info.value.argument == "bounds"


def test_bound_refuses_a_function_that_is_not_callable():
    with pytest.raises(InvalidArgumentError) as info:
        registry.Bound("trial", "lower", "pattern", 42)
    assert info.value.argument == "bounds"


def test_rd_params_defaults_without_options():
    # an RD scheme's options default to eps = 0 and Rademacher entries (the encoders' own defaults)
    class NoOptions:
        pass

    class EmptyOptions:
        options: dict = {}

    for scheme in (NoOptions(), EmptyOptions()):
        eps, dist = registry.rd_params(scheme)
        assert (eps, dist) == (0.0, "rademacher") and isinstance(eps, float)


def test_sgd_convergence_bound_step_limit_and_names():
    # Theorem 7 needs eta <= 1 / (beta M_G); a step a relative 1e-12 above it is round-off and accepted
    beta, M_G, T, gap, M = 4.0, 2.0, 10, Fraction(3), Fraction(5, 2)
    for eta in (Fraction(1, 8), Fraction(1, 8) * (1 + Fraction(1, 10**12))):
        got = sgd_convergence_bound(beta, float(eta), T, float(gap), float(M), M_G)
        e = Fraction(float(eta))
        assert got == pytest.approx(float(e * Fraction(beta) * M + 2 * gap / (T * e)), rel=1e-15)
    with pytest.raises(InvalidArgumentError) as info:
        sgd_convergence_bound(beta, 0.125 * (1 + 1e-9), T, 3.0, 2.5, M_G)
    assert info.value.argument == "eta"
    for kwargs, name in [({"eta": 0.0}, "eta"), ({"M_G": 0.5}, "M_G"), ({"beta": -1.0}, "beta")]:
        args = {"beta": 1.0, "eta": 0.1, "iterations": 10, "initial_gap": 1.0, "M": 1.0, "M_G": 1.0} | kwargs
        with pytest.raises(InvalidArgumentError) as info:
            sgd_convergence_bound(**args)
        assert info.value.argument == name


def test_srg_edge_range_names_f():
    for f in (-1, 11):
        with pytest.raises(InvalidArgumentError) as info:
            srg_edge_range(10, 3, 0, 1, f)  # the Petersen graph: 0 <= f <= 10
        assert info.value.argument == "f"


def test_irregular_by_counting():
    # regular: every row (axis 1) or column (axis 0) sum the same positive number, one included
    for A in (np.eye(3, dtype=int), np.ones((2, 4), dtype=int), _incidence(7, DIFFERENCE_SETS[(7, 3, 1)])):
        for axis in (0, 1):
            assert registry.irregular(A, axis) is None, (A.tolist(), axis)
    A = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]])  # column sums 1, 2, 2; row sums 2, 2, 1
    assert registry.irregular(A, 0) is not None and registry.irregular(A, 1) is not None
    assert registry.irregular(np.zeros((2, 2), dtype=int), 0) is not None  # nobody holds anything


def test_rd_variance_bound_against_exact_rationals():
    # M = G^2 sum_j (l_j / r)^2 [(kappa + m - 1) / (1 - p_j) - 1]: regular replication r = 2, loads 3, 3, 2, 2
    A = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 0]])
    loads, r = [Fraction(int(x)) for x in A.sum(axis=0)], 2
    p = [0.125, 0.25, 0.0, 0.5]
    for dist, kappa in (("rademacher", 1), ("gaussian", 3)):  # E x^4 / (E x^2)^2
        for m in (1, 3):
            expected = Fraction(3, 2) ** 2 * sum(
                (l / r) ** 2 * ((kappa + m - 1) / (1 - Fraction(q)) - 1) for l, q in zip(loads, p, strict=True)
            )
            got = rd_variance_bound(A, m, p, 1.5, dist=dist)
            assert got == pytest.approx(float(expected), rel=1e-12), (dist, m)


def test_ns_estimator_variance_refuses_a_negative_atol():
    B = np.eye(3)
    with pytest.raises(InvalidArgumentError) as info:
        ns_estimator_variance(B, 0.1, np.ones((3, 2)), decoder=np.eye(3), atol=-1e-3)
    assert info.value.argument == "atol"


def test_rd_scaled_sign_error_names_a_bad_alpha():
    A = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    for alpha in (np.nan, np.inf, [0.1, np.nan]):
        with pytest.raises(InvalidArgumentError) as info:
            rd_scaled_sign_error(A, 2, [[True, True, False], [True, False, True]], alpha)
        assert info.value.argument == "alpha", alpha


@pytest.mark.parametrize("exact_limit", [1, 10**6])
def test_worst_case_rd_upper_bound_of_an_all_zero_assignment(exact_limit):
    # an all-zero A satisfies the symmetric-BIBD identity lam (n - 1) = k (k - 1) with k = lam = 0;
    # it is no design, so no closed form applies: the value is the maximum of Theorem 2's bound over
    # every straggler set, enumerated here with rd_upper_bound
    A = np.zeros((3, 3), dtype=int)
    res = worst_case_rd_upper_bound(A, 1, 1, exact_limit=exact_limit)
    want = max(rd_upper_bound(A, 1, np.array([j not in S for j in range(3)])) for S in combinations(range(3), 1))
    assert res.value == want == 3.0


def _rd_max_by_enumeration(A: np.ndarray, m: int, s: int) -> float:
    n = A.shape[1]
    return max(rd_upper_bound(A, m, np.array([j not in S for j in range(n)])) for S in combinations(range(n), s))


def test_worst_case_rd_upper_bound_row_regular_but_not_column_regular():
    # every part on 2 workers, loads 4, 2, 1, 1, 2: not bi-regular, so the spectral form of §46.4
    # does not apply (it needs equal loads); the relaxation route still bounds the enumerated maximum
    A = np.array([[1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [1, 0, 0, 0, 1]])
    for s in (1, 2):
        want = _rd_max_by_enumeration(A, 1, s)
        res = worst_case_rd_upper_bound(A, 1, s, exact_limit=1)
        assert res.value >= want - 1e-12 and res.attained == pytest.approx(want, abs=1e-12)
        assert "spectral" not in res.method


def test_worst_case_rd_upper_bound_row_cap_meets_the_maximum():
    # Lemma 2a (a): S2(F) <= the sum over the f largest rows j of Gamma_jj + the f - 1 largest
    # off-diagonal entries of row j (Gamma = A^T A); written out here, it is 27 for f = 3, and the
    # straggler set {0, 1} has S1 = 11, S2 = 27: the relaxation meets the maximum, certified exact
    A = np.array(
        [[1, 0, 0, 0, 0], [0, 0, 1, 1, 1], [0, 0, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 0, 1, 0, 1],
         [0, 1, 0, 1, 1], [0, 1, 0, 0, 0]]
    )  # fmt: skip
    n, f = 5, 3
    gram = [[sum(int(A[i, a]) * int(A[i, b]) for i in range(A.shape[0])) for b in range(n)] for a in range(n)]
    rows = sorted(gram[j][j] + sum(sorted(gram[j][k] for k in range(n) if k != j)[-(f - 1) :]) for j in range(n))
    assert sum(rows[-f:]) == 27
    counts = [int(A[i, 2:].sum()) for i in range(A.shape[0])]  # F = {2, 3, 4}
    assert (sum(counts), sum(c * c for c in counts)) == (11, 27)
    for m in (1, 2):
        want = _rd_max_by_enumeration(A, m, 2)
        res = worst_case_rd_upper_bound(A, m, 2, exact_limit=1)
        assert res.exact and res.value == pytest.approx(want, rel=1e-12) and res.stragglers == (0, 1)
