"""The object contract for CerarDesign and the one CERAR ring (issue #10).

Immutability, ``params`` as a NamedTuple, ``verify()`` raising VerificationError on a broken
identity, the arrays round trip through ``to_arrays``/``bundle_metadata``/``from_arrays`` (with
the metadata through JSON, as in a bundle), and the ring of :mod:`gcsim.cerar.ring` giving the
same numbers in every namespace (NumPy here, torch CPU tensors where torch is installed).
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from gcsim.cerar import CerarDesign, CerarParams, design, simulate
from gcsim.cerar.metrics import condition_numbers, errors
from gcsim.cerar.ring import decode, encode, packet, strip
from gcsim.errors import CatalogueError, VerificationError
from gcsim.executor.cerar_arrays import run_cerar

DESIGNS = [
    (3, 2, "exact", None),
    (4, 4, "exact", None),
    (2, 5, "exact", None),
    (3, 5, "perturbation", 0.1),
    (4, 9, "perturbation", 1e-3),
    (5, 3, "vandermonde", 0.05),
    (4, 7, "vandermonde", None),
]


def build(N, c, method, eps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return design(N, c, method, eps=eps)


@pytest.fixture(params=DESIGNS, ids=lambda p: f"{p[2]}-N{p[0]}-c{p[1]}")
def des(request):
    return build(*request.param)


def test_kind_and_params(des):
    assert CerarDesign.kind == "cerar"
    assert isinstance(des.params, CerarParams) and des.params == (des.N, des.c, des.N + des.c - 2)
    N, c, L = des.params
    assert des.params._asdict() == {"N": N, "c": c, "L": L}


def test_immutable(des):
    with pytest.raises(dataclasses.FrozenInstanceError):
        des.N = 7
    with pytest.raises(ValueError):
        des.encoders[0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        des.decoders[...] = 0.0
    with pytest.raises(TypeError):
        des.metadata["eps"] = 1.0


def test_verify_holds_for_every_construction(des):
    assert des.verify() is True


def test_verify_names_a_broken_identity(des):
    if des.method == "exact":
        A = des.encoders.copy()
        A[0, 0, 0] += 1e-3
        broken = CerarDesign(des.N, des.c, A, des.decoders, method=des.method, metadata=des.metadata)
        with pytest.raises(VerificationError, match="vanishes"):
            broken.verify()
    if des.method == "perturbation":
        wrong = CerarDesign(
            des.N,
            des.c,
            des.encoders,
            des.decoders,
            method="perturbation",
            metadata={**des.metadata, "eps": 2 * des.metadata["eps"]},
        )
        with pytest.raises(VerificationError, match="seam"):
            wrong.verify()


def test_arrays_round_trip(des):
    arrays = des.to_arrays()
    meta = json.loads(json.dumps(des.bundle_metadata()))  # a bundle's manifest is JSON
    assert meta["params"] == list(des.params) and meta["construction"] == des.method
    back = type(des).from_arrays(arrays, meta)
    assert back.params == des.params and back.method == des.method
    np.testing.assert_array_equal(back.encoders, des.encoders)
    np.testing.assert_array_equal(back.decoders, des.decoders)
    assert back.verify()


def test_from_arrays_refuses_tampering(des):
    meta = json.loads(json.dumps(des.bundle_metadata()))
    arrays = des.to_arrays()
    bad = dict(arrays, encoders=arrays["encoders"] * (1 + 1e-6))
    with pytest.raises(CatalogueError, match="kappa certificate|error metric|vanishes|seam"):
        CerarDesign.from_arrays(bad, meta)
    with pytest.raises(CatalogueError, match="params"):
        CerarDesign.from_arrays(arrays, {**meta, "params": [des.N, des.c, des.L + 1]})
    with pytest.raises(CatalogueError, match="not a CERAR design"):
        CerarDesign.from_arrays(arrays, {**meta, "kind": "bibd"})


def test_optimized_record_is_built_complete():
    pytest.importorskip("cvxpy")
    from gcsim.cerar.optimize import optimized_design

    d = optimized_design(3, 4, kappa=4.0, init="random", max_iter=2, progress=False)
    assert d.metadata["start"] == "random" and d.metadata["history"]
    assert max(condition_numbers(d.encoders)) <= 4.0 * (1 + 1e-9)
    with pytest.raises(TypeError):
        d.metadata["start"] = "other"
    assert d.verify()


def test_result_records_are_frozen(des):
    g = np.random.default_rng(0).standard_normal((des.N, 11))
    for record in (simulate(des, g), errors(des, g), run_cerar(des, g)):
        field = dataclasses.fields(record)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, None)


def test_one_rank_at_a_time_equals_all_workers_at_once(des):
    # the collective's loop (one worker, a real exchange) and the in-memory ring run the same
    # functions; emulate the exchange with the other workers' packets
    N, c, L = des.params
    rng = np.random.default_rng(1)
    g = rng.standard_normal((N, 3 * c))
    G = g.reshape(N, c, 3)
    X = encode(des.encoders, G)
    u = np.zeros((N, 3))
    U = np.zeros((N, L, 3))
    for t in range(1, L + 1):
        s = np.stack([packet(X[i], u[i], t) for i in range(N)])
        u = np.stack([strip(s[(i - 1) % N], X[i], t, N) for i in range(N)])
        U[:, t - 1] = u
    out = np.stack([decode(G[i], des.decoders[i], U[i]) for i in range(N)]).reshape(N, -1)
    np.testing.assert_array_equal(out, simulate(des, g, accumulate="batched").outputs)  # the rounds, all at once


def test_torch_namespace_runs_the_same_ring(des):
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(2).standard_normal((des.N, 23))
    ref = run_cerar(des, g)
    got = run_cerar(des, torch.as_tensor(g), xp=torch)
    assert isinstance(got.outputs, torch.Tensor)
    scale = np.abs(des.encoders).max() * np.abs(des.decoders).max() * np.abs(g).sum(0).max() * des.L * des.c
    assert np.abs(got.outputs.numpy() - ref.outputs).max() <= 64 * np.finfo(float).eps * scale
    np.testing.assert_array_equal(got.bytes_sent, ref.bytes_sent)
