"""CyclicDesign: a symmetric design kept as its difference set (theory §10.8, Lemma 9a).

Independent references: the dense developed incidence and its integer Gram matrix (small cases),
the flats of PG(2, q) (the same plane: the same errors, Theorem 49.5), and catalogue files
written and read back through gcsim.catalogue.objects.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcsim import limits
from gcsim.catalogue.objects import export_object, load_object
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.structured import encode_structured, stream_errors
from gcsim.combinatorics.cyclic_design import CyclicDesign, singer_plane
from gcsim.combinatorics.geometries import pg_flats
from gcsim.errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError


def _dense_gram(v: int, D: list[int]) -> np.ndarray:
    A = np.zeros((v, v), dtype=np.int64)
    for j in range(v):
        A[[(a + j) % v for a in D], j] = 1
    return A.T @ A


@pytest.mark.parametrize("q", [2, 3, 5, 7, 11])
def test_singer_plane_gram_is_pair_balanced(q):
    d = singer_plane(q)
    v, k, lam = d.params
    assert (v, k, lam) == (q * q + q + 1, q + 1, 1) and d.verify()
    G = _dense_gram(v, d.base.tolist())
    assert np.array_equal(G, (k - lam) * np.eye(v, dtype=np.int64) + lam)
    assert np.array_equal(np.asarray(d.assignment).T @ np.asarray(d.assignment), G)


def test_bad_bases_are_refused_by_name():
    for bad in ([0, 1, 2], [0, 0, 1], [7, 1, 2], [], list(range(7))):
        with pytest.raises(InvalidArgumentError, match="^base"):
            CyclicDesign(7, bad)


def test_structured_encoder_on_the_object_equals_the_planes_from_flats():
    q = 31
    cyc = encode_structured(singer_plane(q), 2, seed=4)
    flats = encode_structured(pg_flats(2, q), 2, seed=4, points=q * q + q + 1)
    model = straggler_model("bernoulli", cyc.n, p=0.1)
    assert np.array_equal(stream_errors(cyc.context, model, 200, 0), stream_errors(flats.context, model, 200, 0))


def test_bundle_round_trip_and_tampering(tmp_path):
    d = singer_plane(317)  # 100,807 workers: a 318-integer bundle
    path = export_object(d, tmp_path, "pg317")
    back = load_object(path)
    assert isinstance(back, CyclicDesign) and back.params == d.params
    assert np.array_equal(back.base, d.base)
    arrays, meta = d.to_arrays(), d.bundle_metadata()
    bent = {"base": arrays["base"].copy()}
    bent["base"][3] += 1  # no longer a difference set (or a repeated residue)
    with pytest.raises(CatalogueError):
        CyclicDesign.from_arrays(bent, meta)
    with pytest.raises(CatalogueError, match="stored params"):
        CyclicDesign.from_arrays(arrays, dict(meta, params=[100807, 318, 2]))
    with pytest.raises(CatalogueError, match="k = 318"):
        CyclicDesign.from_arrays({"base": arrays["base"][:-1]}, meta)  # a truncated base block
    with pytest.raises(CatalogueError, match="not a difference set"):
        CyclicDesign.from_arrays({"base": arrays["base"][:-1]}, dict(meta, params=[100807, 317, 1]))
    with pytest.raises(CatalogueError, match="format_version"):
        CyclicDesign.from_arrays(arrays, dict(meta, cyclic_design_format_version=99))


def test_verify_catches_a_forged_object():
    d = singer_plane(5)
    object.__setattr__(d, "params", d.params._replace(lam=2))  # forged past the immutability guard
    with pytest.raises(VerificationError, match="difference set"):
        d.verify()


def test_dense_assignment_refused_beyond_the_limit(monkeypatch):
    d = singer_plane(11)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 100)
    with pytest.raises(SizeLimitError):
        _ = d.assignment
    assert d.incidence.nnz == 133 * 12  # the sparse incidence stays available
