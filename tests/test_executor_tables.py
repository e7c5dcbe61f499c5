"""run_scheme with a decoder table (gcsim.executor.arrays, docs/guides/executor.md "Decoder tables").

The table's decoder of every pattern must give what ``decoder="optimal"`` gives, to tolerances from
the condition number of ``B_F`` (both are minimum-norm least-squares solutions computed by SVDs), and
the residual must match ``numpy.linalg.lstsq``'s on ``B_F`` (an independent solve).  A pattern the
table lacks is refused naming it, unless ``fallback="optimal"``; a table of another encoder is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends import BACKENDS
from exact_lstsq import lstsq_error
from executor_tolerances import target
from gcsim.coding.decoder_table import decoder_table, load_decoder_table
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.structured import encode_structured
from gcsim.combinatorics.bibd import bibd
from gcsim.combinatorics.geometries import pg_flats
from gcsim.errors import InvalidArgumentError
from gcsim.executor.arrays import run_scheme, to_numpy
from tolerances import SAFETY, cond, unit_roundoff


def _fr_scheme() -> Scheme:
    """Fractional repetition: workers 2p and 2p+1 hold part p (m = 1): B_F is rank deficient whenever both arrive."""
    A = np.kron(np.eye(3, dtype=np.int64), np.ones((1, 2), dtype=np.int64))
    return encode(A, 1, "naive")


def _schemes() -> dict[str, Scheme]:
    return {
        "rd-fano-m2": encode(bibd(7, 3), 2, "rd", seed=0),
        "rd-13-m3": encode(bibd(13, 4), 3, "rd", seed=1),
        "frc-rank-deficient": _fr_scheme(),
    }


def _solution_tol(BF: np.ndarray, m: int, X: np.ndarray) -> float:
    """Bound on ``‖X_1 − X_2‖_F`` for two backward-stable minimum-norm solutions (rank kept).

    Perturbation theory of the pseudo-inverse (Wedin; Higham Thm 20.1 for the rank-deficient case
    at fixed rank): relative error ``<= c rows cols u (κ + κ² ‖R‖ / (‖B_F‖ ‖X‖))`` for each, ``κ`` over
    the non-zero singular values; twice that for the difference of two.
    """
    rows, cols = BF.shape
    if cols == 0 or not np.any(BF):
        return 0.0
    T = target(m, rows // m)
    kappa = cond(BF, nonzero=True)
    nx = float(np.linalg.norm(X))
    nr = float(np.linalg.norm(BF @ X - T))
    nb = float(np.linalg.norm(BF, 2))
    rel = kappa + kappa**2 * nr / max(nb * nx, np.finfo(float).tiny)
    return 2 * SAFETY * rows * cols * unit_roundoff() * rel * max(nx, 1.0)


def _check_same(sch: Scheme, g: np.ndarray, mask: np.ndarray, a, b) -> None:
    B = np.asarray(sch.B)
    m = sch.m
    BF = B[:, mask]
    tol_x = _solution_tol(BF, m, np.asarray(a.decoder)[mask])
    assert np.linalg.norm(a.decoder - b.decoder) <= tol_x
    assert not np.any(a.decoder[~mask]) and not np.any(b.decoder[~mask])
    # decoded vectors: ĝ = X_Fᵀ g̃_F, so ‖Δĝ‖ <= ‖ΔX‖_F ‖g̃_F‖_F plus the rounding of both products
    tilde = to_numpy(a.transmissions)[mask]
    scale = float(np.linalg.norm(tilde)) * (tol_x + SAFETY * (mask.sum() + B.shape[0]) * unit_roundoff() * 4)
    assert np.linalg.norm(to_numpy(a.decoded) - to_numpy(b.decoded)) <= scale + 1e-300
    # the residual against numpy's lstsq on B_F (independent of both runs)
    ref = lstsq_error(B, mask, m)
    tol_r = 2 * np.sqrt(B.shape[0]) * (tol_x * float(np.linalg.norm(BF, 2)) + SAFETY * B.size * unit_roundoff())
    assert abs(a.residual - ref) <= tol_r + 1e-15
    assert abs(a.residual - b.residual) <= tol_r + 1e-15


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["rd-fano-m2", "rd-13-m3", "frc-rank-deficient"])
def test_table_equals_optimal_on_every_pattern(name, backend):
    sch = _schemes()[name]
    table = decoder_table(sch, s_max=2)
    g = np.random.default_rng(3).standard_normal((sch.num_parts, 7))
    for r in range(len(table)):
        mask = table.pattern(r)
        a = run_scheme(sch, g, mask, decoder=table, xp=backend)
        b = run_scheme(sch, g, mask, decoder="optimal", xp=backend)
        assert a.decoder_source == "table" and b.decoder_source == "optimal"
        # the table's decoder is used as stored, bit for bit
        assert np.array_equal(a.decoder, np.asarray(table.decoder(mask)))
        _check_same(sch, g, mask, a, b)


def test_rank_deficient_pattern_is_the_minimum_norm_decoder():
    """Both holders of part 0 arrive: the min-norm decoder splits the weight 1/2, 1/2 (exact by hand)."""
    sch = _fr_scheme()
    table = decoder_table(sch, s_max=1)
    mask = np.array([True, True, True, True, True, False])
    r = run_scheme(sch, np.ones((3, 2)), mask, decoder=table)
    assert np.allclose(r.decoder[:, 0], [0.5, 0.5, 0.5, 0.5, 1.0, 0.0], rtol=0, atol=1e-14)
    assert r.residual < 1e-28


def test_explicit_table_and_a_loaded_table(tmp_path):
    sch = _schemes()["rd-fano-m2"]
    S = [[0, 1, 2], [3], [6, 5]]
    table = decoder_table(sch, stragglers=S)
    g = np.random.default_rng(1).standard_normal((7, 5))
    loaded = load_decoder_table(table.export(tmp_path / "fano"))
    for s in S:
        mask = np.ones(7, dtype=bool)
        mask[s] = False
        a = run_scheme(sch, g, mask, decoder=table)
        b = run_scheme(sch, g, mask, decoder="optimal")
        _check_same(sch, g, mask, a, b)
        c = run_scheme(sch, g, mask, decoder=loaded)  # the loaded table's own Scheme is B entry for entry
        assert np.array_equal(c.decoder, a.decoder) and c.error == a.error


def test_structured_table_with_a_structured_scheme():
    """A StructuredDecoderTable (gains, theory §47.7) read by run_scheme on the StructuredRD (no dense B)."""
    enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    table = decoder_table(enc, s_max=2)
    dense = Scheme.from_matrix(np.array(enc.B), np.array(enc.assignment), 2, method="rd")
    g = np.random.default_rng(4).standard_normal((13, 6))
    for r in range(0, len(table), 7):
        mask = table.pattern(r)
        a = run_scheme(enc, g, mask, decoder=table)
        b = run_scheme(dense, g, mask, decoder="optimal")
        assert a.route == "structured" and b.route == "dense" and a.decoder_source == "table"
        _check_same(dense, g, mask, a, b)
        c = run_scheme(dense, g, mask, decoder=table)  # the dense Scheme of the same B takes the table too
        assert c.route == "dense" and np.array_equal(c.decoder, a.decoder)


def test_missing_pattern_is_refused_naming_it_unless_fallback():
    sch = _schemes()["rd-fano-m2"]
    table = decoder_table(sch, s_max=1)
    g = np.random.default_rng(0).standard_normal((7, 4))
    mask = np.array([True, False, True, True, False, True, True])
    with pytest.raises(InvalidArgumentError, match=r"straggler set \[1, 4\] is not in the decoder table") as exc:
        run_scheme(sch, g, mask, decoder=table)
    assert exc.value.argument == "nonstragglers"
    a = run_scheme(sch, g, mask, decoder=table, fallback="optimal")
    b = run_scheme(sch, g, mask, decoder="optimal")
    assert a.decoder_source == "table-fallback"
    assert np.array_equal(a.decoder, b.decoder) and a.error == b.error
    explicit = decoder_table(sch, stragglers=[[0]])
    with pytest.raises(InvalidArgumentError, match=r"straggler set \[1, 4\].*an explicit list"):
        run_scheme(sch, g, mask, decoder=explicit)


def test_bad_fallback_values():
    sch = _schemes()["rd-fano-m2"]
    table = decoder_table(sch, s_max=1)
    g = np.ones((7, 2))
    with pytest.raises(InvalidArgumentError, match="fallback: must be None or 'optimal'"):
        run_scheme(sch, g, np.ones(7, bool), decoder=table, fallback="solve")
    with pytest.raises(InvalidArgumentError, match="fallback: applies to a decoder table only"):
        run_scheme(sch, g, np.ones(7, bool), decoder="optimal", fallback="optimal")


def test_mismatched_table_is_refused():
    sch = encode(bibd(7, 3), 2, "rd", seed=0)
    other_seed = decoder_table(encode(bibd(7, 3), 2, "rd", seed=1), s_max=1)  # same shape, other diagonals
    other_m = decoder_table(encode(bibd(7, 3), 1, "rd", seed=0), s_max=1)
    other_n = decoder_table(encode(bibd(13, 4), 2, "rd", seed=0), s_max=1)
    g = np.ones((7, 4))
    mask = np.ones(7, dtype=bool)
    with pytest.raises(InvalidArgumentError, match="built for another encoder"):
        run_scheme(sch, g, mask, decoder=other_seed)
    with pytest.raises(
        InvalidArgumentError, match=r"\(N, n, m\) = \(7, 7, 1\), the scheme has \(N, n, m\) = \(7, 7, 2\)"
    ):
        run_scheme(sch, g, mask, decoder=other_m)
    with pytest.raises(InvalidArgumentError, match=r"\(N, n, m\) = \(13, 13, 2\)"):
        run_scheme(sch, g, mask, decoder=other_n)
    enc = encode_structured(pg_flats(2, 2), 2, seed=0, points=7)
    enc_other = encode_structured(pg_flats(2, 2), 2, seed=5, points=7)
    with pytest.raises(InvalidArgumentError, match="built for another encoder"):
        run_scheme(enc, g, mask, decoder=decoder_table(enc_other, s_max=1))
