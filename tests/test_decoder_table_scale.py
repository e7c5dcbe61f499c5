"""Decoder tables at cluster scale (issue #22 item 4, theory §47.6c and §47.7).

* ``gcsim decoder-table`` takes the structured route (no dense ``B``) beyond the dense limit, with
  the same flags and files, and its table equals the dense command's to 1e-9 relative;
* the structured table equals the dense table entry for entry (1e-9 relative) on PG(2, q), q <= 13,
  for every pattern of up to one straggler and Bernoulli(0.1) patterns;
* rows near the rank cutoff of a dense table are no longer skipped: the rank-free certificate of
  Proposition 47.6c holds against the exact (rational) residual of the stored decoder and refuses a
  changed decoder or error.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import gcsim
from gcsim.app.cli import main
from gcsim.coding.decoder_table import DecoderTable, decoder_table, load_decoder_table
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.structured import encode_structured
from gcsim.coding.structured_tables import StructuredDecoderTable, structured_decoder_table
from gcsim.coding.table_solve import _rank_free_bound, _rank_free_ratio
from gcsim.errors import VerificationError

U = np.finfo(np.float64).eps / 2


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    scale = max(float(np.abs(b).max()), 1e-300)
    return float(np.abs(a - b).max()) / scale


@pytest.mark.parametrize("q", [3, 5, 7, 9, 13])
def test_structured_table_equals_the_dense_table(q):
    """Every stored decoder and error of the structured table equals the dense (SVD) table's to 1e-9."""
    n = q * q + q + 1
    design = gcsim.bibd(n, q + 1, 1)
    enc = encode_structured(design, 2, seed=q)
    dense = encode(design, 2, "rd", seed=q)
    for kwargs in ({"s_max": 1}, {"patterns": np.unique(np.random.default_rng(q).random((40, n)) >= 0.1, axis=0)}):
        st = decoder_table(enc, **kwargs)
        dt = decoder_table(dense, **kwargs)
        assert isinstance(st, StructuredDecoderTable) and len(st) == len(dt)
        assert _rel(st.decoders, dt.decoders) <= 1e-9
        assert np.max(np.abs(st.errors - dt.errors) / np.maximum(dt.errors, 1e-300)) <= 1e-9
        assert st.verification_report()["checked"] == len(st)


def _cli(tmp_path, *extra: str) -> dict:
    out = tmp_path / "out"
    return ["decoder-table", "--design", "bibd:183,14,1", "--m", "2", "--s-max", "1", "--out", str(out), *extra]


def test_cli_takes_the_structured_route_beyond_the_dense_limit(tmp_path, capsys):
    """PG(2, 13) with MAX_DENSE_ENTRIES below m N n: the structured route, same files and payload keys."""
    args = _cli(tmp_path, "--json", "--name", "big")
    assert main(["--limit", "MAX_DENSE_ENTRIES=60000", *args]) == 0  # m N n = 66,978 > 60,000
    big = json.loads(capsys.readouterr().out)
    assert main(_cli(tmp_path, "--json", "--name", "small")) == 0
    small = json.loads(capsys.readouterr().out)
    assert big["route"] == "structured" and small["route"] == "dense"
    assert set(big) == set(small) and big["patterns"] == small["patterns"] == 184
    assert big["max_error"] == pytest.approx(small["max_error"], rel=1e-9)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["big.json", "big.npz", "small.json", "small.npz"]
    st, dt = load_decoder_table(big["path"]), load_decoder_table(small["path"])
    assert isinstance(st, StructuredDecoderTable) and not isinstance(dt, StructuredDecoderTable)
    assert _rel(st.decoders, dt.decoders) <= 1e-9
    assert np.max(np.abs(st.errors - dt.errors) / dt.errors) <= 1e-9


def test_cli_refuses_a_dense_method_beyond_the_limit(tmp_path, capsys):
    assert main(["--limit", "MAX_DENSE_ENTRIES=60000", *_cli(tmp_path, "--method", "ns", "--eps", "0.1")]) == 2
    err = capsys.readouterr().err
    assert "--method" in err and "--method rd" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _near_scheme(frac: float) -> Scheme:
    """3 workers holding 3 parts, m = 1; B_F of F = {0, 1} has σ_2 = frac x its rank cutoff."""
    cut = 3 * 2 * U * np.sqrt(2.0)  # max(mN, f) eps σ_1 with σ_1 ≈ √2
    delta = frac * cut * np.sqrt(2.0)
    B = np.array([[1.0, 1.0, 0.0], [0.0, delta, 0.0], [0.0, 0.0, 1.0]])
    return Scheme.from_matrix(B, np.ones((3, 3), dtype=int), 1)


def _exact_residual(B: np.ndarray, X: np.ndarray, m: int) -> Fraction:
    mN, n = B.shape
    N = mN // m
    total = Fraction(0)
    for i in range(mN):
        for col in range(m):
            r = sum(Fraction(float(B[i, j])) * Fraction(float(X[j, col])) for j in range(n)) - (i // N == col)
            total += r * r
    return total


@pytest.mark.parametrize("which", ["near 0.5", "near 2.0", "rd fano m=2"])
def test_near_cutoff_rows_get_the_rank_free_certificate(which):
    """Proposition 47.6c against exact rationals: |E − ‖B_F X − T‖²| <= ρ for the stored X, E; no row skipped."""
    if which.startswith("near"):
        scheme, m, s_max = _near_scheme(float(which.split()[1])), 1, 1
    else:
        scheme, m, s_max = encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=4), 2, 2
    table = decoder_table(scheme, s_max=s_max)
    rep = table.verification_report()
    assert rep["checked"] == len(table) and rep["skipped_near_rank_cutoff"] == 0
    assert rep["rank_free"] >= (1 if which.startswith("near") else 0)
    B = scheme.B
    for r in range(len(table)):
        mk = table.pattern(r)
        X = table.decoders[r]
        exact = _exact_residual(B, X, m)
        BF, XF = B[:, mk][None], X[mk][None]
        E = float(table.errors[r])
        assert float(_rank_free_ratio(BF, XF, np.array([E]), m)[0]) <= 1.0
        r_hat, rho = (float(x[0]) for x in _rank_free_bound(BF, XF, m))
        # the bound covers the exact residual of the stored decoder and the stored error
        assert abs(Fraction(r_hat) ** 2 - exact) <= Fraction(rho)
        assert abs(Fraction(E) - exact) <= Fraction(rho)


def test_a_changed_near_cutoff_row_is_refused():
    """Before, rows near the cutoff got the structural checks only: a changed decoder loaded."""
    table = decoder_table(_near_scheme(0.5), s_max=1)
    row = table.row_of_stragglers([2])  # F = {0, 1}: σ_2 = cut / 2, near the cutoff
    arrays, meta = table.to_arrays(), table.bundle_metadata()
    for name, change in (("decoders", 1 + 1e-7), ("errors", 1 + 1e-9)):
        bad = {k: np.array(v) for k, v in arrays.items()}
        bad[name][row] *= change
        with pytest.raises(VerificationError, match=rf"row {row} \(stragglers \[2\], near the rank cutoff\)"):
            DecoderTable.from_arrays(bad, meta).verification_report()
    assert DecoderTable.from_arrays(arrays, meta).verification_report()["rank_free"] == 2


def test_structured_table_round_trip_verifies_every_row(tmp_path):
    """A loaded structured table is certified (Theorem 47.7b), never trusted: a changed gain fails."""
    enc = encode_structured(gcsim.bibd(183, 14, 1), 2, seed=1)
    table = structured_decoder_table(enc, s_max=1)
    path = table.export(tmp_path / "t")
    loaded = load_decoder_table(path)
    assert np.array_equal(loaded.gains, table.gains)
    assert loaded.verification_report()["checked"] == len(table)


def test_catalogue_loader_reads_and_certifies_a_structured_table(tmp_path):
    """`gcsim load` / load_object take the structured layout too, and certify it: a changed gain is refused."""
    from gcsim.catalogue.objects import load_object
    from gcsim.io.bundle import load_bundle, save_bundle

    enc = encode_structured(gcsim.bibd(57, 8, 1), 2, seed=5)
    path = structured_decoder_table(enc, s_max=1).export(tmp_path / "t")
    obj = load_object(path)
    assert isinstance(obj, StructuredDecoderTable) and len(obj) == 58
    assert main(["load", str(path)]) == 0
    arrays, manifest = load_bundle(path)
    bad = {k: np.array(v) for k, v in arrays.items()}
    bad["gains"].reshape(-1)[3] *= 1 + 1e-8
    save_bundle(tmp_path / "bad", bad, manifest["metadata"])  # re-checksummed: only the certificate catches it
    with pytest.raises(gcsim.errors.CatalogueError, match="does not verify"):
        load_object(tmp_path / "bad")
    assert main(["load", str(tmp_path / "bad")]) == 1


def test_iter_patterns_chunks_stay_within_the_dense_limit(monkeypatch):
    """The default chunk of iter_patterns is MAX_DENSE_ENTRIES // n (at n = 9,507 65,536 masks were refused)."""
    import gcsim.limits as limits

    enc = encode_structured(gcsim.bibd(183, 14, 1), 2, seed=1)
    table = structured_decoder_table(enc, s_max=1)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 50 * 183)
    chunks = list(table.iter_patterns())
    assert max(mk.shape[0] for _, mk in chunks) == 50
    rows = np.concatenate([a + np.arange(mk.shape[0]) for a, mk in chunks])
    assert np.array_equal(rows, np.arange(len(table)))
    assert all(np.array_equal(table.rows(mk), a + np.arange(mk.shape[0])) for a, mk in chunks)


@pytest.mark.slow
def test_pg2_97_table_round_trip_without_dense_b(tmp_path):
    """PG(2, 97) (9,507 workers, m = 2): built, exported and loaded with every row certified, no dense
    matrix (B would be 180.8 M entries); a re-checksummed changed error is refused (about a minute)."""
    from gcsim.io.bundle import load_bundle, save_bundle

    design = gcsim.bibd(9507, 98, 1)
    assert design.is_sparse
    enc = encode_structured(design, 2, seed=0)
    masks = np.unique(np.random.default_rng(0).random((20, 9507)) >= 0.1, axis=0)
    table = decoder_table(enc, patterns=masks)
    assert isinstance(table, StructuredDecoderTable)
    path = table.export(tmp_path / "pg97")
    loaded = load_decoder_table(path)
    assert np.array_equal(loaded.gains, table.gains) and loaded.verification_report()["checked"] == 20
    g = np.random.default_rng(1).standard_normal((9507, 3))
    assert np.array_equal(loaded.decode(masks[4], g), table.decode(masks[4], g))
    arrays, manifest = load_bundle(path)
    bad = {k: np.array(v) for k, v in arrays.items()}
    bad["errors"][11] *= 1 + 1e-6
    save_bundle(tmp_path / "bad", bad, manifest["metadata"])
    with pytest.raises(gcsim.errors.CatalogueError, match="do not verify"):
        load_decoder_table(tmp_path / "bad")
