"""Training under straggler models other than Bernoulli, and the delay-model clock (theory §47, §60)."""

import numpy as np
import pytest

from exact_lstsq import checked_lstsq
from gcsim.coding.delays import DelayStragglerModel, arrival_rule, delay_model
from gcsim.coding.stragglers import BernoulliModel, straggler_model
from gcsim.errors import InvalidArgumentError
from gcsim.learning.datasets import Dataset, load_digits
from gcsim.learning.models import MLP
from gcsim.learning.train import CodeSpec, WallClockModel, train
from tolerances import lstsq_tol

N = 6


@pytest.fixture(scope="module")
def tiny():
    ds = load_digits(seed=0)
    return Dataset(ds.x_train[:240], ds.y_train[:240], ds.x_test[:100], ds.y_test[:100], "digits-small", 10)


def _spec(decoder="optimal"):
    # cyclic repetition: worker j holds parts j and j+1 (mod N)
    A = np.zeros((N, N), dtype=int)
    for j in range(N):
        A[j, j] = A[(j + 1) % N, j] = 1
    return CodeSpec("cyclic", A, m=1, method="rd", decoder=decoder)


KW = dict(model=MLP((64, 8, 10)), iterations=12, eval_every=4, lr=0.3, seed=3)


@pytest.mark.parametrize(
    "delays, rule",
    [
        (delay_model("shifted-exponential", N, shift=1.0, rate=2.0), arrival_rule("first", s=2)),
        (delay_model("pareto", N, scale=1.0, shape=3.0), arrival_rule("deadline", deadline=1.5)),
        (
            delay_model("bimodal", N, p_slow=0.3, fast_shift=1.0, fast_rate=4.0, slow_shift=5.0, slow_rate=1.0),
            arrival_rule("relative", mu=0.5),
        ),
    ],
)
def test_delay_clock_is_the_decode_time_of_each_iteration(tiny, delays, rule):
    model = DelayStragglerModel(delays, rule)
    res = train(_spec(), tiny, stragglers=model, **KW)
    # independent: the rule written out on the raw delays with numpy sorting
    X = delays.sample_delays(KW["iterations"], KW["seed"])
    if rule.kind == "first":
        times = np.sort(X, axis=1)[:, N - rule.value - 1]
        used = X <= times[:, None]
    elif rule.kind == "deadline":
        times = np.minimum(rule.value, X.max(axis=1))
        used = X <= rule.value
    else:
        limit = (1 + rule.value) * X.min(axis=1)
        times = np.minimum(limit, X.max(axis=1))
        used = X <= limit[:, None]
    clock = np.concatenate([[0.0], np.cumsum(times)])
    np.testing.assert_allclose(res.history.wallclock, clock[res.history.iteration], rtol=1e-12)
    # the "arrived" column averages |F| over each evaluation window
    counts = used.sum(axis=1)
    it = list(res.history.iteration)
    windows = [counts[a:b].mean() for a, b in zip(it[:-1], it[1:], strict=True)]
    np.testing.assert_allclose(res.history.arrived[1:], windows)
    assert res.params["stragglers"] == model.describe()


def test_a_bernoulli_model_equals_p(tiny):
    a = train(_spec("unbiased"), tiny, p=0.25, **KW)
    b = train(_spec("unbiased"), tiny, stragglers=BernoulliModel(N, 0.25), **KW)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.history.wallclock, b.history.wallclock)


def test_fixed_stragglers_use_the_wall_clock_model(tiny):
    wc = WallClockModel(seconds_per_example=1e-3, bandwidth=1e6, latency=0.0)
    res = train(_spec(), tiny, stragglers=straggler_model("fixed", N, s=2), wallclock=wc, **KW)
    assert np.all(res.history.arrived[1:] == N - 2)
    assert res.history.wallclock.iloc[-1] > 0


def test_bad_combinations_are_refused(tiny):
    model = DelayStragglerModel(delay_model("shifted-exponential", N, shift=1.0, rate=1.0), arrival_rule("first", s=1))
    with pytest.raises(InvalidArgumentError, match="wallclock"):
        train(_spec(), tiny, stragglers=model, wallclock=WallClockModel(), **KW)
    with pytest.raises(InvalidArgumentError, match="stragglers: has n = 5"):
        train(_spec(), tiny, stragglers=straggler_model("fixed", 5, s=1), **KW)
    with pytest.raises(InvalidArgumentError, match="p: the 'unbiased' decoder"):
        train(_spec("unbiased"), tiny, stragglers=model, **KW)
    with pytest.raises(InvalidArgumentError, match="p: differs"):
        train(_spec(), tiny, p=0.1, stragglers=BernoulliModel(N, 0.2), **KW)
    with pytest.raises(InvalidArgumentError, match="stragglers: must be a straggler model"):
        train(_spec(), tiny, stragglers="bernoulli", **KW)
    # a trace whose rule waits for a worker that never arrives never decodes
    trace = np.ones((N, KW["iterations"]))  # workers x iterations
    trace[0] = np.inf
    never = DelayStragglerModel(delay_model("trace", N, delays=trace), arrival_rule("first", s=0))
    with pytest.raises(InvalidArgumentError, match="never decodes"):
        train(_spec(), tiny, stragglers=never, **KW)


def test_unbiased_decoder_under_a_delay_model_with_the_exact_p(tiny):
    # homogeneous delays and "first n - s": by symmetry every worker straggles with probability s/N
    model = DelayStragglerModel(delay_model("shifted-exponential", N, shift=0.5, rate=1.0), arrival_rule("first", s=2))
    res = train(_spec("unbiased"), tiny, stragglers=model, p=2 / N, **KW)
    assert res.params["p"] == pytest.approx(2 / N)
    assert np.isfinite(res.history.train_loss).all()


def test_expected_error_of_a_delay_trace_is_the_exact_average_over_its_iterations():
    from gcsim.coding.evaluate import expected_error
    from gcsim.coding.schemes import encode

    A = _spec().assignment
    sch = encode(A, 2, "rd", seed=0)
    trace = np.random.default_rng(5).exponential(size=(N, 9)) + 1.0  # workers x iterations
    model = DelayStragglerModel(delay_model("trace", N, delays=trace), arrival_rule("first", s=2))
    res = expected_error(sch, model)
    # independent: per iteration the N - 2 fastest workers by numpy sort, then one lstsq per pattern
    T = sch.target()
    errs, kappa = [], 1.0
    for it in range(trace.shape[1]):
        used = np.zeros(N, bool)
        used[np.argsort(trace[:, it], kind="stable")[: N - 2]] = True
        # lstsq at full column rank, exact rationals / pivoted QR where B_F is rank-deficient
        # (tests/exact_lstsq.py); κ over B_F's non-zero singular values for the residual bound
        err, k = checked_lstsq(sch.B[:, used], T)
        errs.append(err)
        kappa = max(kappa, k)
    assert res.method == "exact" and res.count == trace.shape[1]
    assert abs(res.mean - np.mean(errs)) <= lstsq_tol(kappa, *sch.B.shape, float(np.sum(T**2)))
