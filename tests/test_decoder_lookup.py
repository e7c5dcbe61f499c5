"""The decoder table's lookup with its certified fallback (DecoderTable.lookup, certified_decoder).

Independent references: the minimum-norm decoder ``B_F⁺ T`` and its error from ``numpy.linalg.pinv``
/ ``lstsq`` computed here (dense), and the error ``‖B_F X − T‖²`` of the returned decoder recomputed
here; the counts against the number of patterns asked outside the table.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import FANO
from gcsim.coding.decoder_table import certified_decoder, decoder_table
from gcsim.coding.schemes import cyclic_repetition_assignment, encode
from gcsim.coding.structured import encode_structured
from gcsim.combinatorics.bibd import bibd
from gcsim.errors import InvalidArgumentError, VerificationError


def _reference(B: np.ndarray, mask: np.ndarray, m: int) -> tuple[np.ndarray, float]:
    T = np.kron(np.eye(m), np.ones((B.shape[0] // m, 1)))
    X = np.zeros((B.shape[1], m))
    X[mask] = np.linalg.pinv(B[:, mask]) @ T
    return X, float(np.sum((B @ X - T) ** 2))


@pytest.mark.parametrize(
    ("method", "kw"), [("rd", {"eps": 0.1}), ("naive", {}), ("exact-gaussian", {"s": 2}), ("ns-worker", {})]
)
def test_fallback_is_the_min_norm_decoder(method, kw):
    A = cyclic_repetition_assignment(9, 4)
    sch = encode(A, 2, method, seed=2, **kw)
    table = decoder_table(sch, s_max=1)
    B = np.asarray(sch.B)
    sources = {"table": 0, "fallback": 0}
    for S in itertools.chain(itertools.combinations(range(9), 1), itertools.combinations(range(9), 3)):
        mask = np.ones(9, dtype=bool)
        mask[list(S)] = False
        got = table.lookup(mask)
        sources[got.source] += 1
        X, E = _reference(B, mask, 2)
        np.testing.assert_allclose(got.decoder, X, rtol=0, atol=1e-9 * max(1.0, np.abs(X).max()))
        assert got.error == pytest.approx(E, abs=1e-9)
        assert np.all(got.decoder[~mask] == 0)
        assert got.source == ("table" if len(S) == 1 else "fallback")
        if got.source == "fallback":
            assert got.row is None
            cert = got.certificate
            assert cert["normal_equations_ratio"] <= 1 and cert["error_ratio"] <= 1
            # the decoder's own residual is its error, and its gap to the optimum is certified small
            T = np.kron(np.eye(2), np.ones((9, 1)))
            assert np.sum((B @ got.decoder - T) ** 2) == pytest.approx(got.error, abs=cert["residual_bound"] + 1e-12)
            assert cert["optimality_gap"] < 1e-6
        else:
            assert got.row == table.row(mask) and got.certificate is None
    assert sources == {"table": 9, "fallback": 84}


def test_lookup_by_stragglers_and_refusals():
    sch = encode(FANO, 1, "naive")
    table = decoder_table(sch, s_max=1)
    assert table.lookup(stragglers=[2]).row == table.row_of_stragglers([2])
    with pytest.raises(InvalidArgumentError, match="stragglers .* is not in|covers at most s_max = 1"):
        table.lookup(stragglers=[0, 1], fallback="raise")
    with pytest.raises(InvalidArgumentError, match="fallback: must be one of"):
        table.lookup(stragglers=[0], fallback="solve")
    with pytest.raises(InvalidArgumentError, match="give the pattern as mask= .* or stragglers="):
        table.lookup()
    with pytest.raises(InvalidArgumentError, match="give the pattern as mask="):
        table.lookup(np.ones(7, bool), stragglers=[1])
    with pytest.raises(InvalidArgumentError, match="repeats a worker"):
        table.lookup(stragglers=[1, 1])
    with pytest.raises(InvalidArgumentError, match="scheme: must be a dense Scheme"):
        certified_decoder(table, np.ones(7, bool))
    # every worker straggles: the zero decoder and the whole target lost
    got = certified_decoder(sch, np.zeros(7, bool))
    assert got.error == 7.0 and not got.decoder.any()


def test_fallback_certificate_refuses_a_wrong_decoder(monkeypatch):
    """A solver that returns a non-optimal decoder fails the normal-equations certificate."""
    import importlib

    dt = importlib.import_module("gcsim.coding.table_solve")  # where certified_decoder finds _solve_group

    sch = encode(cyclic_repetition_assignment(7, 3), 2, "rd", eps=0.1, seed=0)
    solve = dt._solve_group

    def skewed(B, m, F, rcond):
        X, E = solve(B, m, F, rcond)
        return X * 1.001, E

    monkeypatch.setattr(dt, "_solve_group", skewed)
    mask = np.ones(7, bool)
    mask[[0, 3]] = False
    with pytest.raises(VerificationError, match=r"fallback decoder of stragglers \[0, 3\] fails its certificate"):
        certified_decoder(sch, mask)


def test_structured_table_fallback():
    enc = encode_structured(bibd(13, 4), 2, seed=0)
    table = decoder_table(enc, s_max=1)
    B = np.asarray(enc.B)
    mask = np.ones(13, bool)
    mask[[1, 5, 8]] = False
    got = table.lookup(mask)
    X, E = _reference(B, mask, 2)
    assert got.source == "fallback" and got.certificate["ratio"] <= 1
    np.testing.assert_allclose(got.decoder, X, rtol=0, atol=1e-10)
    assert got.error == pytest.approx(E, abs=1e-9)
    assert table.lookup(stragglers=[4]).source == "table"
