"""The streamed Monte Carlo in independent chunks (gcsim.coding.mc_stream, theory §42.3, Corollary 42.3a).

``expected_error(..., scheduler=...)`` cuts every fixed-s / Bernoulli draw into row chunks drawn
by PCG64 jump-ahead; serial and Dask (2 local processes) give the same numbers bit for bit, the
chunks are the rows of ``model.sample`` (an independent computation: the whole draw), and the
memory stays bounded for a sample count whose masks would not fit.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

import gcsim
from gcsim.coding import mc_stream
from gcsim.coding.bounds import rank_lower_bound
from gcsim.coding.evaluate import expected_error
from gcsim.coding.kernels import eval_context, optimal_errors
from gcsim.coding.mc_stream import ChunkEvaluator, Draw, draw_rows, evaluate_draws, units_of
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.structured import encode_structured, stream_errors
from gcsim.errors import InvalidArgumentError

TIMEOUT = 120


@pytest.mark.parametrize(
    "model",
    [
        straggler_model("bernoulli", 31, p=0.25),
        straggler_model("bernoulli", 31, p=np.linspace(0.0, 0.6, 31)),
        straggler_model("fixed", 31, s=7),
        straggler_model("fixed", 31, s=0),
    ],
    ids=["bernoulli", "heterogeneous", "fixed", "fixed-0"],
)
def test_draw_rows_are_the_rows_of_the_whole_sample(model):
    """Corollary 42.3a: rows a..b drawn alone (jump-ahead) are rows a..b of model.sample."""
    whole = model.sample(300, 17)
    for a, b in [(0, 300), (0, 1), (1, 2), (37, 38), (99, 250), (299, 300), (300, 300)]:
        assert np.array_equal(draw_rows(model, 17, a, b), whole[a:b])
    with pytest.raises(InvalidArgumentError, match="independent chunks"):
        draw_rows(straggler_model("markov", 31, p_enter=0.1, p_leave=0.5), 0, 0, 3)


def test_units_cover_every_row_once_in_order():
    draws = [Draw(None, c, 0) for c in (0, 1, 7, 9, 10)]
    units = units_of(draws, 3)
    for i, d in enumerate(draws):
        rows = [r for j, a, b in units if j == i for r in range(a, b)]
        assert rows == list(range(d.size))
    assert all(b - a <= 3 and a % 3 == 0 for _, a, b in units)


def test_structured_units_equal_the_sequential_stream(monkeypatch):
    """The structured route's units are stream_errors' chunks: identical values."""
    enc = encode_structured(gcsim.bibd(57, 8, 1), 2, seed=3)
    monkeypatch.setattr(mc_stream, "_UNIT_BYTES", 8 * 57 * 11)  # 11 rows a unit
    monkeypatch.setattr(gcsim.coding.structured, "_CHUNK_BYTES", 8 * 57 * 11)
    model = straggler_model("fixed", 57, s=13)
    (values,), bad, seen = evaluate_draws(ChunkEvaluator.structured(enc.context), [Draw(model, 120, 5)])
    assert np.array_equal(values, np.clip(stream_errors(enc.context, model, 120, 5), 0.0, enc.context.total))
    assert (bad, seen) == (0, 0)


def test_dense_chunks_equal_one_evaluation_of_the_whole_draw(monkeypatch):
    """Dense optimal route: the chunked values are those of optimal_errors on model.sample (to the bit
    here: its kernels treat each pattern alone), and the report counts every pattern."""
    sch = encode(gcsim.bibd(13, 4, 1), 2, "rd", seed=1)
    model = straggler_model("bernoulli", 13, p=0.3)
    monkeypatch.setattr(mc_stream, "_UNIT_BYTES", 8 * 13 * 17)
    (values,), bad, seen = evaluate_draws(ChunkEvaluator.optimal(sch, "auto"), [Draw(model, 200, 8)])
    ctx = eval_context(sch)
    ref = np.clip(optimal_errors(ctx, model.sample(200, 8)), 0.0, ctx.total)
    assert np.array_equal(values, ref) and seen == 200 and bad == 0


def _same(a, b) -> bool:
    return (a.mean, a.ci, a.stderr, a.count, a.method) == (b.mean, b.ci, b.stderr, b.count, b.method) and (
        np.array_equal(a.values, b.values)
    )


def test_expected_error_equals_the_whole_draw_computation():
    """The estimate from chunks equals the one from the whole draw (independent computation:
    model.sample + optimal_errors, and the control variate of theory §57.2 -- the rank bound's mean
    over all C(13, 4) patterns by enumeration plus the mean excess over the draws)."""
    sch = encode(gcsim.bibd(13, 4, 1), 2, "rd", seed=2)
    model = straggler_model("fixed", 13, s=4)
    kw = dict(samples=400, seed=6, exact_limit=10, keep_values=True, progress=False, method="svd")
    res = expected_error(sch, model, **kw)
    ctx = eval_context(sch)
    masks = model.sample(400, 6)
    ref = np.clip(optimal_errors(ctx, masks, method="svd"), 0.0, ctx.total)
    A = sch.assignment
    every = np.ones((715, 13), dtype=bool)
    for t, S in enumerate(itertools.combinations(range(13), 4)):
        every[t, list(S)] = False
    mean_lower = float(rank_lower_bound(A, 2, every).mean())
    excess = np.maximum(ref - rank_lower_bound(A, 2, masks), 0.0)
    assert np.array_equal(res.values, ref)
    assert res.mean == pytest.approx(mean_lower + float(excess.mean()), rel=1e-13, abs=0)


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from gcsim.sweep import sweep_client

    with sweep_client("local", workers=2) as c:
        yield c


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("route", ["structured", "dense", "fixed-decoder"])
def test_serial_equals_local_dask_bit_for_bit(client, route, monkeypatch):
    """serial == Dask (2 processes) for stratified Bernoulli and fixed-s, on a small design."""
    monkeypatch.setattr(mc_stream, "_UNIT_BYTES", 8 * 57 * 23)  # many units: several tasks
    design = gcsim.bibd(57, 8, 1)
    if route == "structured":
        sch, kw = encode_structured(design, 2, seed=5), {}
    elif route == "dense":
        sch, kw = encode(design, 2, "rd", seed=5), {"method": "downdate"}  # not the structured route
    else:
        sch = encode(design, 2, "rd", seed=5)
        kw = {"decoder": "reference", "rescale": "optimal"}
    for model in (straggler_model("bernoulli", 57, p=0.1), straggler_model("fixed", 57, s=9)):
        common = dict(samples=300, seed=4, exact_limit=100, keep_values=True, progress=False, **kw)
        here = expected_error(sch, model, **common)
        serial = expected_error(sch, model, scheduler="serial", **common)
        dask = expected_error(sch, model, scheduler=client, **common)
        assert "monte-carlo" in here.method
        assert _same(here, serial) and _same(here, dask)


@pytest.mark.timeout(TIMEOUT)
def test_pooled_strata_serial_equals_local_dask_bit_for_bit(client, monkeypatch):
    """Lemma 7a's pooled draws (each pool's multinomial split into per-stratum draws) on Dask, bit for bit."""
    from gcsim.coding import expected_routes

    monkeypatch.setattr(mc_stream, "_UNIT_BYTES", 8 * 57 * 23)
    monkeypatch.setattr(expected_routes, "POOL_FACTOR", 0.0)
    sch = encode_structured(gcsim.bibd(57, 8, 1), 2, seed=5)
    model = straggler_model("bernoulli", 57, p=0.1)
    common = dict(samples=120, seed=4, exact_limit=100, keep_values=True, progress=False)
    here = expected_error(sch, model, **common)
    assert "pools" in here.method
    assert _same(here, expected_error(sch, model, scheduler="serial", **common))
    assert _same(here, expected_error(sch, model, scheduler=client, **common))


@pytest.mark.timeout(TIMEOUT)
def test_cli_error_scheduler_without_chunk_is_the_stratified_estimate(client, capsys):
    import json

    from gcsim.app.cli import main

    argv = ["error", "--design", "bibd:57,8,1", "--method", "rd", "--stragglers", "bernoulli:0.1"]
    argv += ["--samples", "400", "--json"]
    assert main(argv) == 0
    serial = json.loads(capsys.readouterr().out)
    assert main([*argv, "--scheduler", client.scheduler.address]) == 0
    on_dask = json.loads(capsys.readouterr().out)
    assert serial == on_dask and "stratified" in serial["evaluation"]


def test_memory_stays_bounded_for_many_samples(monkeypatch):
    """10⁵ Bernoulli draws of 993 workers: their masks would be 99 MB (their uniforms 794 MB); with
    2 MiB units the run's traced peak stays under 12 MB, the values (0.8 MB) included."""
    from gcsim.combinatorics.geometries import pg_flats

    monkeypatch.setattr(mc_stream, "_UNIT_BYTES", 2 * 2**20)
    monkeypatch.setattr(gcsim.coding.structured, "_CHUNK_BYTES", 2 * 2**20)
    enc = encode_structured(pg_flats(2, 31), 2, seed=0, points=993)
    model = straggler_model("bernoulli", 993, p=np.linspace(0.05, 0.15, 993))  # plain Monte Carlo
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        res = expected_error(enc, model, samples=100_000, seed=1, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.count == 100_000 and res.ci[0] < res.mean < res.ci[1]
    assert peak < 12 * 2**20, peak


def test_scheduler_arguments_are_checked():
    sch = encode(gcsim.bibd(13, 4, 1), 1, "rd", seed=0)
    model = straggler_model("fixed", 13, s=3)
    with pytest.raises(InvalidArgumentError) as exc:
        expected_error(sch, model, scheduler="dask")
    assert exc.value.argument == "scheduler"
    with pytest.raises(InvalidArgumentError) as exc:
        expected_error(sch, model, workers=2)
    assert exc.value.argument == "workers"
    with pytest.raises(InvalidArgumentError) as exc:
        expected_error(sch, model, scheduler="serial", workers=2)
    assert exc.value.argument == "workers"
