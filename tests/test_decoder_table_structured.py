"""Structured decoder tables (gcsim.coding.structured_tables, theory §47.7): gains instead of dense decoders.

Corollary 47.7 (X* = Δ⁺ U k (aI + λM_F)⁻¹) is checked against a kernel-independent minimum-norm reference per pattern,
against the dense decoder table and, on the Fano plane, against exact rationals; Theorem 47.7b's
certificate passes on correct tables and catches changed gains and errors; export/load round trips
without a dense matrix (the dense limit made small).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import gcsim
import gcsim.limits as limits
from exact_lstsq import check_min_norm_decoder
from gcsim.coding.decoder_table import decoder_table, load_decoder_table, pattern_row
from gcsim.coding.schemes import encode
from gcsim.coding.structured import StructuredRD, check_pair_gram, encode_structured
from gcsim.coding.structured_tables import StructuredDecoderTable, gains, structured_decoder_table
from gcsim.combinatorics.geometries import pg_flats
from gcsim.errors import CatalogueError, InvalidArgumentError, SizeLimitError, VerificationError
from gcsim.io.bundle import load_bundle, save_bundle

FANO = [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6), (0, 4, 5), (1, 5, 6), (0, 2, 6)]


def _random_masks(n: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    masks = rng.random((count, n)) >= rng.uniform(0.0, 0.9, size=(count, 1))
    masks[0] = True
    masks[1] = False
    return masks


@pytest.mark.parametrize("v,k,m,eps", [(13, 4, 2, 0.0), (21, 5, 3, 0.2), (57, 8, 2, 0.0), (31, 6, 1, 0.5)])
def test_decoders_are_the_minimum_norm_lstsq_solutions(v, k, m, eps):
    """Corollary 47.7 against the minimum-norm reference per pattern and against the dense table."""
    design = gcsim.bibd(v, k, 1)
    enc = encode_structured(design, m, eps=eps, seed=3)
    dense = encode(design, m, "rd", eps=eps, seed=3)
    masks = np.unique(_random_masks(v, 40, v), axis=0)
    table = structured_decoder_table(enc, patterns=masks)
    ref_table = decoder_table(dense, patterns=masks)
    B, T = dense.B, dense.target() if hasattr(dense, "target") else np.kron(np.eye(m), np.ones((v, 1)))
    for r, mk in enumerate(masks):
        X = table.decoder(mk)
        # the minimum-norm B_F⁺ T against a kernel-independent reference, tolerance from κ(B_F) (tests/exact_lstsq.py)
        check_min_norm_decoder(np.asarray(B), m, mk, X, float(table.errors[r]))
        scale = max(1.0, float(np.abs(X).max()))
        assert np.abs(X - ref_table.decoders[r]).max() <= 1e-11 * scale
        assert np.all(X[~mk] == 0)
        err = float(np.sum((B @ X - T) ** 2))
        assert table.errors[r] == pytest.approx(err, rel=1e-10, abs=1e-10)
    assert np.array_equal(table.decoders, np.stack([table.decoder(mk) for mk in masks]))


def test_fano_gains_are_exact_rationals():
    """Fano plane, m = 2, ±1 diagonals: the decoder of every |S| <= 2 pattern against exact
    rational least squares (normal equations of the full-column-rank B_F, in Fractions)."""
    enc = encode_structured(FANO, 2, seed=1, points=7)
    table = structured_decoder_table(enc, s_max=2)
    D = enc.diagonals.astype(int)
    A = enc.incidence.toarray()
    B = [[Fraction(int(A[i, j] * D[l, j])) for j in range(7)] for l in range(2) for i in range(7)]
    T = [[Fraction(1 if r // 7 == c else 0) for c in range(2)] for r in range(14)]
    for row in range(len(table)):
        mk = table.pattern(row)
        F = np.flatnonzero(mk).tolist()
        f = len(F)
        # Γ_FF x = H_F: Gaussian elimination in Fractions
        G = [[sum(B[r][a] * B[r][b] for r in range(14)) for b in F] for a in F]
        H = [[sum(B[r][a] * T[r][c] for r in range(14)) for c in range(2)] for a in F]
        aug = [G[i] + H[i] for i in range(f)]
        for c in range(f):
            p = next(i for i in range(c, f) if aug[i][c] != 0)
            aug[c], aug[p] = aug[p], aug[c]
            for i in range(f):
                if i != c and aug[i][c] != 0:
                    t = aug[i][c] / aug[c][c]
                    aug[i] = [x - t * y for x, y in zip(aug[i], aug[c], strict=True)]
        X = table.decoder(mk)
        for i, j in enumerate(F):
            for c in range(2):
                exact = aug[i][f + c] / aug[i][i]
                assert abs(X[j, c] - float(exact)) <= 1e-14, (row, j, c)


def test_zero_diagonals_get_zero_rows():
    inc = sp.csc_matrix(gcsim.bibd(13, 4, 1).assignment)
    D = np.random.default_rng(0).choice([-1.0, 1.0], size=(2, 13))
    D[:, [2, 7]] = 0.0
    k, lam = check_pair_gram(inc)
    enc = StructuredRD(inc, D, k, lam, {})
    masks = _random_masks(13, 12, 1)
    table = structured_decoder_table(enc, patterns=np.unique(masks, axis=0))
    B = (inc.toarray()[None] * D[:, None, :]).reshape(26, 13)
    for r in range(len(table)):
        mk = table.pattern(r)
        X = table.decoder(mk)
        assert np.all(X[:, :][[2, 7]] == 0)
        check_min_norm_decoder(B, 2, mk, X, float(table.errors[r]))  # B_F has zero columns: rank-deficient
    table.verify()


def test_s_max_rows_follow_the_documented_order_and_decode():
    enc = encode_structured(gcsim.bibd(21, 5, 1), 2, seed=0)
    table = decoder_table(enc, s_max=2)  # dispatches on a StructuredRD
    assert isinstance(table, StructuredDecoderTable) and len(table) == 1 + 21 + 210
    rng = np.random.default_rng(4)
    for S in ([], [3], [0, 20], [5, 9]):
        mk = np.ones(21, bool)
        mk[S] = False
        row = table.row(mk)
        assert row == pattern_row(21, S) == table.row_of_stragglers(S)
        g = rng.standard_normal((21, 3))
        assert np.allclose(table.decode(mk, g), table.decoder(mk)[mk].T @ g[mk], rtol=1e-13, atol=1e-13)
        assert np.allclose(table.gain(mk), gains(enc.context, mk[None])[0], rtol=1e-14, atol=0)
    with pytest.raises(InvalidArgumentError):
        table.row_of_stragglers([0, 1, 2])
    far = np.ones(21, bool)
    far[:3] = False
    assert table.decoder(far, fallback="solve")[~far].tolist() == [[0.0, 0.0]] * 3
    with pytest.raises(InvalidArgumentError, match="rank cutoff"):
        decoder_table(enc, s_max=1, rcond=1e-10)


def test_certificate_passes_and_catches_changes(tmp_path):
    """Theorem 47.7b: every row certified (none skipped); a gain changed by 1e-8 relative, or an
    error by 1e-6, fails load_decoder_table."""
    enc = encode_structured(pg_flats(2, 7), 2, seed=2, points=57)
    table = structured_decoder_table(enc, patterns=np.unique(_random_masks(57, 60, 9), axis=0))
    rep = table.verification_report()
    assert rep["checked"] == len(table) and rep["skipped_near_rank_cutoff"] == 0 and rep["unchecked"] == 0
    assert rep["max_ratio"] <= 1.0 and rep["max_gain_relerr"] < 1e-12
    path = table.export(tmp_path / "t")
    loaded = load_decoder_table(path)
    assert isinstance(loaded, StructuredDecoderTable)
    assert np.array_equal(loaded.gains, table.gains) and np.array_equal(loaded.errors, table.errors)
    assert np.array_equal(loaded.decoders, table.decoders)
    arrays, manifest = load_bundle(path)
    for name, change in (("gains", 1 + 1e-8), ("errors", 1 + 1e-6)):
        bad = {k: np.array(v) for k, v in arrays.items()}
        bad[name].reshape(-1)[7] *= change
        save_bundle(tmp_path / name, bad, manifest["metadata"])
        with pytest.raises(CatalogueError, match="do not verify"):
            load_decoder_table(tmp_path / name)
    bad = {k: np.array(v) for k, v in arrays.items()}
    bad["incidence_indices"][[0, 1]] = bad["incidence_indices"][[1, 0]] + 1  # another incidence
    save_bundle(tmp_path / "inc", bad, manifest["metadata"])
    with pytest.raises(CatalogueError):
        load_decoder_table(tmp_path / "inc")
    with pytest.raises(VerificationError):
        changed = table.gains * (1 + 1e-6)
        StructuredDecoderTable(enc, changed, table.errors.copy(), patterns=table._patterns.copy()).verify()


def test_no_dense_matrix_is_made(tmp_path, monkeypatch):
    """PG(2, 31) (993 workers) with the dense limit below n²: built, exported, loaded and verified."""
    enc = encode_structured(pg_flats(2, 31), 2, seed=0, points=993)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 900 * 993)
    with pytest.raises(SizeLimitError):
        enc.B  # noqa: B018
    masks = np.random.default_rng(1).random((50, 993)) >= 0.1
    table = structured_decoder_table(enc, patterns=masks)
    loaded = load_decoder_table(table.export(tmp_path / "big"))
    assert loaded.verification_report()["checked"] == 50
    assert loaded.decoder(masks[3]).shape == (993, 2)
