"""Property-based fuzzing of the public API (issue #19 item 8).

Every public entry point gets arguments drawn mostly from its valid range and often from the
edges (0, negatives, 10**30, NaN/inf, bools where ints are expected, strings, wrong shapes, empty,
zero-stride, complex and object arrays).  The property, checked by :func:`fuzzing.outcome`: a
result or a :class:`gcsim.GcsimError` with a message, within the time bound, never a raw
exception or a hang.  Objects that come back are used once more (``verify()``, ``sample()``,
``decode()``), so a malformed object that was accepted fails here rather than later.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from fuzzing import edge_scalars, floats, fuzz_settings, ints, outcome, refused, weird_arrays
from hypothesis import given, strategies as st

import gcsim
from gcsim.coding.schemes import METHODS

pytestmark = pytest.mark.filterwarnings("ignore")  # warnings are answers too; the property is about raises

#: Parameter sets that exist and build fast, so the fuzzer reaches the constructions, not only the checks.
BIBD_PARAMS = [(7, 3, 1), (13, 4, 1), (9, 3, 1), (7, 4, 2), (16, 6, 2), (15, 7, 3), (6, 3, 2), (4, 3, 2), (21, 5, 1)]
SRG_PARAMS = [(13, 6, 2, 3), (10, 3, 0, 1), (9, 4, 1, 2), (16, 6, 2, 2), (5, 2, 0, 1), (15, 6, 1, 3), (28, 9, 0, 4)]
COSET_PARAMS = [(27, 2, 5), (9, 2, 2), (8, 2, 3), (16, 2, 3), (4, 2, 1)]
BIREGULAR_PARAMS = [(40, 20, 3, 6), (6, 6, 2, 2), (8, 4, 2, 4), (10, 5, 1, 2)]


def _tuple(params, arity):
    """A known-good tuple, one of its entries replaced by an edge value, or a tuple of edges."""
    good = st.sampled_from(params)

    def poke(t, i, x):
        t = list(t)
        t[i % arity] = x
        return tuple(t)

    return st.one_of(
        good,
        st.builds(poke, good, st.integers(0, arity - 1), edge_scalars()),
        st.builds(poke, good, st.integers(0, arity - 1), st.integers(-3, 40)),
        st.tuples(*[ints(0, 30) for _ in range(arity)]),
    )


@functools.cache
def fano():
    return gcsim.bibd(7, 3, 1)


@functools.cache
def scheme(method: str = "rd", m: int = 2):
    return gcsim.encode(fano(), m, method, eps=0.1 if method == "ns" else 0.0, seed=1)


SCHEMES = st.sampled_from([("rd", 2), ("rd", 1), ("naive", 1), ("ns", 2), ("bibd-optimal", 1)])


# --------------------------------------------------------------------------- factories


@fuzz_settings(2)
@given(_tuple(BIBD_PARAMS, 3), st.one_of(st.booleans(), edge_scalars()))
def test_bibd(params, existence):
    got = outcome(gcsim.bibd, *params, existence=existence)
    if not refused(got) and not isinstance(got, bool) and got is not None:
        outcome(got.verify)


@fuzz_settings(2)
@given(_tuple(SRG_PARAMS, 4), st.booleans(), st.one_of(st.booleans(), edge_scalars()))
def test_srg(params, existence, closed):
    got = outcome(gcsim.srg, *params, existence=existence, closed=closed)
    if not refused(got) and not isinstance(got, bool) and got is not None:
        outcome(got.verify)


@fuzz_settings(1)
@given(
    _tuple(COSET_PARAMS, 3),
    st.one_of(st.sampled_from(["cyclic", "elementary"]), edge_scalars()),
    st.one_of(st.none(), st.just("random"), st.lists(st.lists(st.integers(-3, 30), max_size=4), max_size=3)),
    st.one_of(st.booleans(), edge_scalars()),
    ints(0, 5),
)
def test_coset_graph(params, group, connection_sets, require_invertible, seed):
    got = outcome(
        gcsim.coset_graph,
        *params,
        group=group,
        connection_sets=connection_sets,
        require_invertible=require_invertible,
        seed=seed,
    )
    if not refused(got):
        outcome(got.verify)


@fuzz_settings(1)
@given(_tuple(BIREGULAR_PARAMS, 4), ints(0, 5), ints(1, 5))
def test_biregular_graph(params, seed, max_tries):
    got = outcome(gcsim.biregular_graph, *params, seed=seed, max_tries=max_tries)
    if not refused(got):
        outcome(got.verify)


@fuzz_settings(1)
@given(
    # valid sizes up to 30: verify() of the weighted MGG graph is a dense eigvalsh on m^2 vertices
    # (1600 at m = 40, seconds on a loaded 2-core machine; bounded by gcsim at 4096)
    st.sampled_from([gcsim.chordal_cycle, gcsim.weighted_margulis_gabber_galil, gcsim.finite_field]),
    ints(0, 30),
)
def test_small_factories(factory, x):
    got = outcome(factory, x)
    if not refused(got) and hasattr(got, "verify"):
        outcome(got.verify)


# --------------------------------------------------------------------------- encoders


def _assignments():
    return st.one_of(
        st.just(None).map(lambda _: fano()),
        st.just(None).map(lambda _: fano().assignment),
        weird_arrays((7, 7)),
    )


_OPTIONS = st.dictionaries(
    st.sampled_from(["dist", "s", "nodes", "colour", "p"]),
    st.one_of(st.sampled_from(["rademacher", "gaussian", "chebyshev", "equispaced"]), edge_scalars(), ints(0, 3)),
    max_size=2,
)


@fuzz_settings(2)
@given(
    _assignments(), ints(1, 4), st.one_of(st.sampled_from(METHODS), edge_scalars()), floats(0, 1), ints(0, 3), _OPTIONS
)
def test_encode(assignment, m, method, eps, seed, options):
    got = outcome(gcsim.encode, assignment, m, method, eps=eps, seed=seed, **options)
    if not refused(got):
        outcome(got.verify)


@fuzz_settings(1)
@given(
    _assignments(),
    ints(1, 3),
    st.one_of(st.sampled_from(["rd", "naive", "ns"]), edge_scalars()),
    st.one_of(st.sampled_from(["own", "alone", "first"]), weird_arrays((7, 1)), edge_scalars()),
    floats(0, 1),
)
def test_partial_scheme(assignment, m, method, owners, eps):
    got = outcome(gcsim.partial_scheme, assignment, m, method, owners=owners, eps=eps)
    if not refused(got):
        outcome(got.verify)


# --------------------------------------------------------------------------- evaluators


def _masks(n: int = 7):
    return st.one_of(
        st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
        st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=5).map(np.array),
        st.lists(st.integers(-1, 2), min_size=n, max_size=n).map(np.array),
        weird_arrays((3, n)),
    )


@fuzz_settings(2)
@given(
    SCHEMES,
    _masks(),
    st.one_of(st.booleans(), edge_scalars()),
    st.one_of(st.sampled_from(["auto", "gram", "svd", "deletion", "lstsq"]), edge_scalars()),
    st.one_of(st.none(), floats(0, 1e-3)),
    st.one_of(st.just(False), edge_scalars()),
)
def test_optimal_error(which, mask, normalized, method, rtol, progress):
    outcome(
        gcsim.optimal_error, scheme(*which), mask, normalized=normalized, method=method, rtol=rtol, progress=progress
    )


@fuzz_settings(1)
@given(
    SCHEMES,
    _masks(),
    st.one_of(st.none(), weird_arrays((7, 14)), st.sampled_from(["optimal", "fixed"])),
    st.one_of(st.none(), edge_scalars(), floats(0, 2)),
    st.one_of(st.none(), floats(0, 1)),
    st.one_of(st.booleans(), edge_scalars()),
)
def test_fixed_decoder_error(which, mask, decoder, rescale, p, normalized):
    outcome(gcsim.fixed_decoder_error, scheme(*which), mask, decoder, rescale=rescale, p=p, normalized=normalized)


def _straggler_kwargs():
    return st.one_of(
        st.tuples(st.just("fixed"), ints(0, 7), st.fixed_dictionaries({"s": ints(0, 7)})),
        st.tuples(st.just("bernoulli"), ints(0, 7), st.fixed_dictionaries({"p": floats(0, 1)})),
        st.tuples(st.sampled_from(["all", "worst"]), ints(0, 7), st.fixed_dictionaries({"s": ints(0, 7)})),
        st.tuples(
            st.just("markov"),
            ints(0, 7),
            st.fixed_dictionaries({"p_enter": floats(0, 1), "p_leave": floats(0, 1)}),
        ),
        st.tuples(
            st.just("trace"),
            st.one_of(st.none(), ints(0, 7)),
            st.fixed_dictionaries(
                {"delays": st.one_of(weird_arrays((7, 5)), st.just(np.arange(35.0).reshape(7, 5)))},
                optional={
                    "s": ints(0, 7),
                    "policy": st.sampled_from(["first", "deadline", "nope"]),
                    "deadline": floats(0, 40),
                },
            ),
        ),
        st.tuples(
            st.one_of(st.sampled_from(["delay", "nope", ""]), edge_scalars()),
            st.one_of(st.none(), ints(0, 7)),
            st.dictionaries(st.sampled_from(["s", "p", "delays", "rule", "q"]), edge_scalars(), max_size=2),
        ),
    )


@fuzz_settings(2)
@given(_straggler_kwargs(), ints(1, 20), ints(0, 3))
def test_straggler_model(spec, count, seed):
    kind, n, params = spec
    model = outcome(gcsim.straggler_model, kind, n, **params)
    if not refused(model):
        outcome(model.sample, count, seed=seed)
        outcome(model.verify)


@functools.cache
def _model(kind: str):
    return {
        "fixed": gcsim.straggler_model("fixed", 7, s=2),
        "bernoulli": gcsim.straggler_model("bernoulli", 7, p=0.3),
        "all": gcsim.straggler_model("all", 7, s=2),
        "worst": gcsim.straggler_model("worst", 7, s=2),
        "wrong-n": gcsim.straggler_model("fixed", 9, s=2),
    }[kind]


@fuzz_settings(1)
@given(
    SCHEMES,
    st.sampled_from(["fixed", "bernoulli", "all", "worst", "wrong-n"]),
    ints(0, 200),
    ints(1, 200),
    st.one_of(st.sampled_from(["optimal", "fixed"]), weird_arrays((7, 14)), edge_scalars()),
    st.one_of(st.booleans(), edge_scalars()),
    st.one_of(st.sampled_from(["t", "normal", "bootstrap"]), edge_scalars()),
)
def test_expected_error(which, model, exact_limit, samples, decoder, keep_values, ci_method):
    outcome(
        gcsim.expected_error,
        scheme(*which),
        _model(model),
        exact_limit=exact_limit,
        samples=samples,
        decoder=decoder,
        keep_values=keep_values,
        ci_method=ci_method,
        progress=False,
    )


@fuzz_settings(1)
@given(SCHEMES, ints(0, 8), ints(0, 100), ints(1, 5), ints(1, 3))
def test_worst_case_error(which, s, exact_limit, iterations, restarts):
    outcome(
        gcsim.worst_case_error,
        scheme(*which),
        s,
        exact_limit=exact_limit,
        iterations=iterations,
        restarts=restarts,
        progress=False,
    )


@fuzz_settings(1)
@given(
    SCHEMES,
    st.one_of(st.none(), ints(0, 8)),
    st.one_of(st.none(), _masks()),
    st.one_of(st.none(), st.lists(st.lists(st.integers(-1, 8), max_size=3), max_size=3)),
    st.one_of(st.none(), floats(0, 1e-3)),
)
def test_decoder_table(which, s_max, patterns, stragglers, rcond):
    table = outcome(gcsim.decoder_table, scheme(*which), s_max, patterns=patterns, stragglers=stragglers, rcond=rcond)
    if not refused(table):
        m, n = table.m, table.n
        outcome(table.decode, np.ones(n, dtype=bool), np.ones((n, 3)))
        outcome(table.decode, _arbitrary_mask(n), np.ones((n, max(1, 3 // m))))


def _arbitrary_mask(n):
    mask = np.ones(n, dtype=bool)
    mask[: n // 2] = False
    return mask


@fuzz_settings(1)
@given(
    SCHEMES,
    st.one_of(weird_arrays((7, 14)), st.just(np.ones((7, 6)))),
    _masks(),
    st.one_of(st.sampled_from(["optimal", "fixed"]), edge_scalars()),
)
def test_run_scheme(which, gradients, mask, decoder):
    outcome(gcsim.run_scheme, scheme(*which), gradients, mask, decoder=decoder)


# --------------------------------------------------------------------------- delay models


def _array_or_list(values):
    """``np.array(values)``, or the list itself when numpy cannot make an array of it (ragged)."""
    try:
        return np.array(values)
    except (TypeError, ValueError):
        return values


def _delay_kwargs():
    per_worker = st.one_of(floats(0, 5), st.lists(floats(0, 5), min_size=1, max_size=8).map(_array_or_list))
    return st.one_of(
        st.tuples(
            st.just("shifted-exponential"),
            ints(0, 12),
            st.fixed_dictionaries({}, optional={"shift": per_worker, "rate": per_worker}),
        ),
        st.tuples(
            st.just("pareto"),
            ints(0, 12),
            st.fixed_dictionaries({}, optional={"scale": per_worker, "shape": per_worker}),
        ),
        st.tuples(
            st.just("bimodal"),
            ints(0, 12),
            st.fixed_dictionaries(
                {},
                optional={k: per_worker for k in ("p_slow", "fast_shift", "fast_rate", "slow_shift", "slow_rate")},
            ),
        ),
        st.tuples(
            st.just("trace"),
            st.one_of(st.none(), ints(0, 8)),
            st.fixed_dictionaries(
                {"delays": st.one_of(weird_arrays((6, 5)), st.just(np.arange(30.0).reshape(6, 5) + 1))}
            ),
        ),
        st.tuples(
            st.one_of(st.just("nope"), edge_scalars()), ints(0, 5), st.dictionaries(st.just("rate"), edge_scalars())
        ),
    )


def _rules():
    return st.one_of(
        st.tuples(st.just("first"), st.fixed_dictionaries({}, optional={"s": ints(0, 12)})),
        st.tuples(st.just("deadline"), st.fixed_dictionaries({}, optional={"deadline": floats(0, 20)})),
        st.tuples(st.just("relative"), st.fixed_dictionaries({}, optional={"mu": floats(0, 3)})),
        st.tuples(
            st.one_of(st.just("nope"), edge_scalars()), st.dictionaries(st.sampled_from(["s", "x"]), edge_scalars())
        ),
    )


@fuzz_settings(2)
@given(
    _delay_kwargs(),
    _rules(),
    st.one_of(st.sampled_from(["auto", "exact", "quad", "monte-carlo"]), edge_scalars()),
    ints(1, 2000),
    ints(1, 20),
    st.one_of(st.booleans(), edge_scalars()),
)
def test_delay_models(spec, rule_spec, method, samples, count, keep_values):
    kind, n, params = spec
    model = outcome(gcsim.delay_model, kind, n, **params)
    rule = outcome(gcsim.arrival_rule, rule_spec[0], **rule_spec[1])
    if refused(model):
        return
    outcome(model.sample_delays, count)
    outcome(model.cdf, np.array([0.0, 1.0, np.inf, np.nan]))
    if not refused(rule):
        outcome(gcsim.expected_decode_time, model, rule, method=method, samples=samples, keep_values=keep_values)
        outcome(gcsim.straggler_model, "delay", delays=model, rule=rule)


# --------------------------------------------------------------------------- CERAR


@fuzz_settings(2)
@given(
    ints(1, 9),
    ints(0, 12),
    st.one_of(st.sampled_from(["exact", "vandermonde", "perturbation"]), edge_scalars()),
    st.one_of(st.none(), floats(0, 0.5)),
    st.one_of(
        st.none(),
        st.just("ones"),
        weird_arrays((8, 4)),
        st.sampled_from([np.full((8, 16), 1e300), np.full((8, 16), np.nan), np.ones((8, 16), dtype=np.float32)]),
    ),
    st.one_of(
        st.none(), st.sampled_from(["float64", "float32", "bfloat16", "int8", "float128", np.float16]), edge_scalars()
    ),
)
def test_cerar(N, c, method, eps, gradients, dtype):
    outcome(gcsim.cerar.rates, N, c)
    outcome(gcsim.cerar.num_rounds, N, c)
    design = outcome(gcsim.cerar.design, N, c, method, eps=eps)
    if refused(design):
        return
    outcome(design.verify)
    if isinstance(gradients, str):  # well-formed gradients for this design: N x (c d)
        gradients = np.ones((design.N, design.c * 4))
    if gradients is not None:
        outcome(gcsim.cerar.simulate, design, gradients, dtype=dtype)


# --------------------------------------------------------------------------- the advisor


@fuzz_settings(0.5)
@given(
    ints(1, 13),
    st.one_of(ints(1, 7), floats(0, 1)),
    ints(1, 3),
    st.sampled_from(["fixed", "bernoulli", "wrong-n", "edge"]),
    st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["bandwidth", "latency", "gradient_bytes", "x"]), floats(0, 1e9))
    ),
    st.one_of(st.sampled_from(["error", "time", "data", ("error", "time"), "nope"]), edge_scalars()),
    st.one_of(st.none(), st.lists(st.sampled_from(["bibd", "srg", "coset", "frc", "nope"]), max_size=2)),
)
def test_advise(workers, load, m, straggle, links, objective, families):
    if straggle == "edge":
        model = object()
    elif straggle == "wrong-n":
        model = gcsim.straggler_model("fixed", 5, s=1)
    else:
        n = workers if isinstance(workers, int) and not isinstance(workers, bool) and 1 <= workers <= 13 else 7
        model = (
            gcsim.straggler_model("fixed", n, s=1)
            if straggle == "fixed"
            else gcsim.straggler_model("bernoulli", n, p=0.1)
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome(
            gcsim.advise,
            workers,
            load,
            m,
            model,
            links=links,
            objective=objective,
            families=families,
            samples=50,
            exact_limit=200,
            worst_limit=200,
            progress=False,
        )
