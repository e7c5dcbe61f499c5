"""Cluster scale (#22): sparse designs beyond the dense limit, streamed Monte Carlo (theory §42.3).

The big checks (PG(2,97) at 9,507 workers, n >= 30,000) are in benchmarks/bench_scale.py; these
tests are small and fast and make the dense limit small instead (it is read at call time).
"""

from __future__ import annotations

import numpy as np
import pytest

import gcsim
import gcsim.limits as limits
from gcsim.coding import structured
from gcsim.coding.evaluate import expected_error
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.structured import LazySample, StructuredContext, encode_structured, evaluate, stream_errors
from gcsim.combinatorics.bibd_design import BIBD
from gcsim.combinatorics.geometries import pg_flats
from gcsim.errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError


@pytest.mark.parametrize(
    "model",
    [
        straggler_model("bernoulli", 57, p=0.2),
        straggler_model("bernoulli", 57, p=np.linspace(0.0, 0.5, 57)),
        straggler_model("fixed", 57, s=9),
        straggler_model("fixed", 57, s=0),
    ],
    ids=["bernoulli", "heterogeneous", "fixed", "fixed-0"],
)
def test_streamed_draws_are_the_model_samples_bit_for_bit(model, monkeypatch):
    """Lemma 42.3: chunked draws of one generator are the rows of one draw."""
    ctx = StructuredContext(np.random.default_rng(0).standard_normal((2, 57)), 57, 8, 1)
    masks = model.sample(250, 11)
    # the lemma is about the draws: the chunks are the rows of one draw, bit for bit
    assert np.array_equal(np.concatenate(list(structured._mask_chunks(model, 250, 11, 7))), masks)
    # the errors are compared chunk for chunk: OpenBLAS may round a GEMM row differently with the
    # batch's row count (seen: 1e-14 on 23 of 250 rows), so equal numbers need equal batches
    whole = np.concatenate([ctx.errors(masks[a : a + 7]) for a in range(0, 250, 7)])
    monkeypatch.setattr(structured, "_CHUNK_BYTES", 8 * 57 * 7)  # 7 masks a chunk
    assert np.array_equal(stream_errors(ctx, model, 250, 11), whole)
    assert np.array_equal(evaluate(ctx, LazySample(model, 250, 11)), whole)
    assert np.allclose(whole, ctx.errors(masks), rtol=1e-12, atol=0)
    with pytest.raises(InvalidArgumentError, match="cannot be streamed"):
        LazySample(straggler_model("markov", 57, p_enter=0.1, p_leave=0.5), 10, 0)


def test_monte_carlo_beyond_the_dense_limit_streams(monkeypatch):
    """Fixed-s Monte Carlo with samples x n over the limit: the dense route refuses the masks, the
    structured route streams them and gets the dense estimate computed under the normal limit."""
    sch = encode(gcsim.bibd(57, 8, 1), 2, "rd", seed=4)
    model = straggler_model("fixed", 57, s=12)
    ref = expected_error(sch, model, samples=600, seed=2, method="downdate", progress=False)
    enc = encode_structured(gcsim.bibd(57, 8, 1), 2, seed=4)
    bern = expected_error(enc, straggler_model("bernoulli", 57, p=0.1), samples=300, seed=1, progress=False)
    assert bern.ci[0] <= bern.mean <= bern.ci[1] and "stratified" in bern.method
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 600 * 57 - 1)
    with pytest.raises(SizeLimitError):
        model.sample(600, 2)
    res = expected_error(enc, model, samples=600, seed=2, progress=False)
    assert res.count == ref.count == 600 and res.method == ref.method
    assert res.mean == pytest.approx(ref.mean, rel=1e-9) and res.ci == pytest.approx(ref.ci, rel=1e-9)


def test_design_over_the_dense_limit_is_kept_sparse(monkeypatch):
    """PG(2,7) with the limit below 57 x 57: built, verified and exported without a dense matrix."""
    assert not gcsim.bibd(57, 8, 1).is_sparse  # within the limit: dense as before
    blocks = pg_flats(2, 7)
    # a limit below 57 x 57, and (for so small a design) every over-limit incidence kept sparse
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 57 * 57 - 1)
    monkeypatch.setattr(limits, "keep_sparse", lambda r, c, nz: r * c > limits.MAX_DENSE_ENTRIES)
    D = BIBD(57, blocks, "PG(2,7)", lam=1)
    assert D.is_sparse and D.incidence.nnz == 57 * 8 and D.verify()
    assert D.replication.tolist() == [8] * 57 and D.loads.tolist() == [8] * 57
    with pytest.raises(SizeLimitError, match="dense assignment"):
        _ = D.assignment
    arrays = D.to_arrays()
    assert sorted(arrays) == ["blocks"] and arrays["blocks"].shape == (57, 8)
    again = BIBD.from_arrays(arrays, D.bundle_metadata())
    assert again.is_sparse and again.blocks == D.blocks
    G = D.to_networkx()
    assert G.number_of_edges() == 57 * 8
    # the structured encoder takes it as it is
    enc = encode_structured(D, 2, seed=0)
    assert enc.context.k == 8 and enc.context.lam == 1
    # a corrupted sparse design fails its sparse verification
    bad = [tuple(b) for b in blocks]
    bad[0] = (bad[0][0],) + tuple(x for x in bad[1][1:])  # now block 0 meets block 1 in 7 points
    with pytest.raises(VerificationError, match="A A\\^T"):
        BIBD(57, bad, "corrupted", lam=1).verify()
    with pytest.raises(CatalogueError, match="point outside"):
        BIBD.from_arrays({"blocks": arrays["blocks"] + 57}, D.bundle_metadata())


def test_factory_keeps_a_projective_plane_over_the_dense_limit_sparse():
    """PG(2,64): 4,161 x 4,161 = 17.3M dense entries (over 2^24), 270k non-zeros: kept sparse."""
    D = gcsim.bibd(4161, 65, 1)
    assert D.is_sparse and D.params == (4161, 4161, 65, 65, 1)
    with pytest.raises(SizeLimitError):
        _ = D.assignment
    with pytest.raises(SizeLimitError):
        encode(D, 2, "rd")  # the dense encoder is refused up front, as before
    enc = encode_structured(D, 2, seed=0)
    val = gcsim.optimal_error(enc, np.ones(4161, dtype=bool), progress=False)
    # F = [n]: err = a sum_i (N - mu_i) / (a + mu_i) with mu_1 + mu_2 = n (Theorem 42.1)
    mu = np.linalg.eigvalsh(enc.context.W.T @ enc.context.W)
    assert val == pytest.approx(float(np.sum(64 * (4161 - mu) / (64 + mu))), rel=1e-12)
    assert 0 < val < 2 * 4161
    # still refused: no sparse representation within the limit
    with pytest.raises(SizeLimitError):
        gcsim.bibd(2000, 2, 1)
