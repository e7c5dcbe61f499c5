"""Tests of the decoder table (gcsim.coding.decoder_table).

Independent references: the row order is checked against ``itertools.combinations`` enumerated
here; every decoder against the minimum-norm ``B_F⁺ T`` of tests/exact_lstsq.py (lstsq where ``B_F``
has full column rank, exact rationals where not; tolerance: the least-squares perturbation bound
with κ(B_F), Higham Thm 20.1); decoded
gradients against the plain sum of the part gradients; the export/load round trip byte for byte.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import FANO
from exact_lstsq import check_min_norm_decoder as lstsq_decoder_check, min_norm_tol, reference_min_norm
from gcsim import limits
from gcsim.coding.decoder_table import (
    DecoderTable,
    decoder_table,
    load_decoder_table,
    pattern_count,
    pattern_of_row,
    pattern_row,
)
from gcsim.coding.schemes import Scheme, cyclic_repetition_assignment, encode, fractional_repetition_assignment
from gcsim.errors import CatalogueError, InvalidArgumentError, VerificationError
from tolerances import SAFETY, gamma


def reference_order(n: int, s_max: int) -> list[tuple[int, ...]]:
    """The documented order: |S| ascending, then itertools.combinations (lexicographic)."""
    return [S for s in range(s_max + 1) for S in itertools.combinations(range(n), s)]


def mask_of(S, n):
    mk = np.ones(n, dtype=bool)
    mk[list(S)] = False
    return mk


# ----------------------------------------------------------------------------------------------
# the index
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 8))
def test_index_is_the_documented_bijection(n):
    for s_max in range(n + 1):
        order = reference_order(n, s_max)
        assert pattern_count(n, s_max) == len(order)
        assert [pattern_row(n, S) for S in order] == list(range(len(order)))
        assert [tuple(pattern_of_row(n, r).tolist()) for r in range(len(order))] == order
    # a table built on any scheme indexes the same way, one mask at a time and in batches
    sch = encode(np.eye(n, dtype=int), 1, "naive")
    s_max = min(n, 3)
    table = decoder_table(sch, s_max=s_max)
    order = reference_order(n, s_max)
    masks = np.array([mask_of(S, n) for S in order])
    assert [table.row(mk) for mk in masks] == list(range(len(order)))
    assert table.rows(masks).tolist() == list(range(len(order)))
    assert [tuple(np.flatnonzero(~table.pattern(r))) for r in range(len(order))] == order
    rows_seen = []
    for a, chunk in table.iter_patterns(chunk=3):
        assert np.array_equal(chunk, masks[a : a + chunk.shape[0]])
        rows_seen += list(range(a, a + chunk.shape[0]))
    assert rows_seen == list(range(len(order)))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), data=st.data())
def test_index_round_trip_large_n(n, data):
    s = data.draw(st.integers(0, min(n, 6)))
    S = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=s, max_size=s)))
    r = pattern_row(n, S)
    assert pattern_of_row(n, r).tolist() == S
    # rows of the next set in lexicographic order differ by one (the bijection is monotone)
    assert r < pattern_count(n, s) and (s == 0 or r >= pattern_count(n, s - 1))
    assert pattern_row(n, S[::-1]) == r  # order of the given indices does not matter


def test_row_lookup_refusals():
    table = decoder_table(encode(FANO, 1, "naive"), s_max=2)
    with pytest.raises(InvalidArgumentError, match="s_max = 2") as info:
        table.row(mask_of([0, 1, 2], 7))
    assert info.value.argument == "mask"
    with pytest.raises(InvalidArgumentError) as info:
        table.rows(np.array([mask_of([0], 7), mask_of([0, 1, 2], 7)]))
    assert info.value.argument == "masks"
    with pytest.raises(InvalidArgumentError) as info:
        table.row_of_stragglers([1, 1])
    assert info.value.argument == "stragglers"
    with pytest.raises(InvalidArgumentError) as info:
        table.row_of_stragglers([7])
    assert info.value.argument == "stragglers"
    with pytest.raises(InvalidArgumentError) as info:
        table.row(np.ones(6, dtype=bool))
    assert info.value.argument == "mask"
    with pytest.raises(InvalidArgumentError) as info:
        table.decoder(mask_of([0], 7), fallback="guess")
    assert info.value.argument == "fallback"


# ----------------------------------------------------------------------------------------------
# the decoders
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label, scheme, s_max",
    [
        ("rd m=2 (full column rank B_F)", encode(FANO, 2, "rd", seed=3), 3),
        ("ns eps=0.2", encode(FANO, 2, "ns", eps=0.2, seed=1), 2),
        ("naive m=3 (m > r: rank-deficient targets)", encode(FANO, 3, "naive"), 2),
        (
            "fractional repetition (repeated columns: B_F rank deficient)",
            encode(fractional_repetition_assignment(6, 2), 1, "fractional-repetition"),
            3,
        ),
        ("exact-gaussian s=2", encode(cyclic_repetition_assignment(8, 3), 2, "exact-gaussian", s=2, seed=0), 3),
        ("every worker may straggle", encode(np.eye(4, dtype=int), 2, "rd", seed=0), 4),
    ],
)
def test_decoders_equal_lstsq_per_pattern(label, scheme, s_max):
    table = decoder_table(scheme, s_max=s_max)
    assert table.decoders.shape == (pattern_count(scheme.n, s_max), scheme.n, scheme.m)
    for r, S in enumerate(reference_order(scheme.n, s_max)):
        lstsq_decoder_check(scheme.B, scheme.m, mask_of(S, scheme.n), table.decoders[r], float(table.errors[r]))
    report = table.verification_report(sample=None)
    assert report["checked"] + report["skipped_near_rank_cutoff"] == len(table)
    assert report["max_ratio"] <= 1.0


def test_exact_scheme_table_decodes_exactly():
    """Up to s stragglers an exact code's table recovers the gradient sum: Σ_j X_jl g̃_j = Σ_i g_i[l]."""
    n, s, m, L = 8, 2, 2, 5
    A = cyclic_repetition_assignment(n, s + 1)  # r_i = 4 = s + m
    sch = encode(A, m, "exact-gaussian", s=s, seed=2)
    table = decoder_table(sch, s_max=s)
    rng = np.random.default_rng(0)
    g = rng.standard_normal((sch.num_parts, m, L))  # g_i[k]: block k (length L) of part i's gradient
    Bk = sch.B.reshape(m, sch.num_parts, n)
    sent = np.einsum("kij,ikl->jl", Bk, g)  # g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]
    truth = g.sum(axis=0)  # (m, L)
    scale = np.abs(g).sum(axis=0).max()  # max over (k, entry) of Σ_i |g_i[k]|
    for S in reference_order(n, s):
        mk = mask_of(S, n)
        junk = sent.copy()
        junk[~mk] = np.nan  # what a straggler "sent" is never read
        est = table.decode(mk, junk)
        X = table.decoder(mk)
        f = int(mk.sum())
        # est - truth = Σ_{k,i} (BX - T)[kN+i, l] g_i[k] + rounding.  |BX - T| <= the computed residual
        # + γ_f f max|B| max|X| (its own rounding); forming g̃ (mN terms) and Xᵀ g̃ (n terms) adds
        # γ_{n+mN} n max|X| max|B| Σ_{k,i} |g_i[k]|, and Σ_{k,i} |g_i[k]| <= m max_k Σ_i |g_i[k]|
        resid = np.abs(sch.B @ X - sch.target()).max()
        bX, bB = np.abs(X).max(), np.abs(sch.B).max()
        bound = m * scale * (resid + SAFETY * (gamma(f) * f + gamma(n + m * sch.num_parts) * n) * bB * bX)
        assert np.abs(est - truth).max() <= bound
    with pytest.raises(InvalidArgumentError) as info:
        table.decode(mask_of([0], n), np.full((n, 3), np.nan))
    assert info.value.argument == "transmissions"


def test_explicit_patterns_and_stragglers():
    sch = encode(FANO, 2, "rd", seed=5)
    full = decoder_table(sch, s_max=3)
    sets = [[4, 0], [], [6, 5, 3], [2]]
    t1 = decoder_table(sch, stragglers=sets)
    t2 = decoder_table(sch, patterns=np.array([mask_of(S, 7) for S in sets]))
    assert len(t1) == 4 and t1.explicit
    for r, S in enumerate(sets):
        mk = mask_of(S, 7)
        assert t1.row(mk) == r == t2.row(mk) == t1.row_of_stragglers(S)
        assert np.array_equal(t1.pattern(r), mk)
        # the same computation per pattern: identical bits whatever the batch
        assert np.array_equal(t1.decoder(mk), full.decoder(mk))
        lstsq_decoder_check(sch.B, 2, mk, t1.decoder(mk), float(t1.errors[r]))
    assert t1.rows(np.array([mask_of(S, 7) for S in sets[::-1]])).tolist() == [3, 2, 1, 0]
    with pytest.raises(InvalidArgumentError, match="not in the table"):
        t1.row(mask_of([1], 7))
    # a missing pattern can be solved on demand
    X = t1.decoder(mask_of([1], 7), fallback="solve")
    assert np.array_equal(X, full.decoder(mask_of([1], 7)))
    with pytest.raises(InvalidArgumentError, match="repeats pattern 0") as info:
        decoder_table(sch, stragglers=[[1, 2], [2, 1]])
    assert info.value.argument == "stragglers"


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        ({}, "s_max"),
        ({"s_max": 1, "stragglers": [[0]]}, "s_max"),
        ({"s_max": 8}, "s_max"),
        ({"s_max": -1}, "s_max"),
        ({"stragglers": [[0, 7]]}, "stragglers[0]"),
        ({"stragglers": "01"}, "stragglers"),
        ({"patterns": np.zeros((0, 7), dtype=bool)}, "patterns"),
        ({"patterns": np.ones((2, 6), dtype=bool)}, "patterns"),
        ({"s_max": 1, "rcond": 0.0}, "rcond"),
    ],
)
def test_bad_table_arguments_are_named(kwargs, arg):
    with pytest.raises(InvalidArgumentError) as info:
        decoder_table(encode(FANO, 1, "naive"), **kwargs)
    assert info.value.argument == arg


def test_too_big_tables_are_refused_up_front():
    sch = encode(np.eye(91, dtype=int), 1, "naive")
    count = sum(math.comb(91, t) for t in range(21))
    with pytest.raises(InvalidArgumentError) as info:
        decoder_table(sch, s_max=20)
    assert info.value.argument == "s_max"
    assert f"{count:,}" in str(info.value) and f"{limits.MAX_PATTERNS:,}" in str(info.value)
    # few patterns, but patterns x n x m stored entries over MAX_DENSE_ENTRIES
    big = encode(np.eye(200, dtype=int), 5, "naive")
    count = pattern_count(200, 2)
    assert count * 200 * 5 > limits.MAX_DENSE_ENTRIES
    with pytest.raises(InvalidArgumentError, match="MAX_DENSE_ENTRIES") as info:
        decoder_table(big, s_max=2)
    assert info.value.argument == "s_max"


def test_rank_cutoff_follows_lstsq():
    """A tiny but non-zero singular value (column scaled by 1e-10) is kept, as by lstsq(rcond=None);
    an explicit rcond above it drops it, as lstsq(rcond=...) does."""
    B = encode(FANO, 1, "naive").B.copy()
    B[:, 6] *= 1e-10
    sch = Scheme.from_matrix(B, FANO, 1)
    for rcond in (None, 1e-8):
        table = decoder_table(sch, s_max=1, rcond=rcond)
        T = np.ones((7, 1))
        for r, S in enumerate(reference_order(7, 1)):
            mk = mask_of(S, 7)
            # the truncated problem's B_F⁺ T: lstsq at full rank (κ ~ 1e10 under rcond=None, in the
            # bound), the 50-digit truncated SVD where rcond cuts the 1e-10 column (tests/exact_lstsq.py)
            Xl = reference_min_norm(B[:, mk], T, rcond)
            tol = 2 * min_norm_tol(B[:, mk], T, Xl, rcond)  # the table's solver and the reference's
            assert np.linalg.norm(table.decoders[r][mk] - Xl) <= tol
        assert table.verification_report(sample=None)["max_ratio"] <= 1.0
    big = decoder_table(sch, s_max=0)
    assert np.abs(big.decoders[0][6]).max() > 1e8  # the tiny column is used (weight ~ 1e10)


def test_verify_catches_a_wrong_decoder():
    sch = encode(FANO, 2, "rd", seed=3)
    table = decoder_table(sch, s_max=1)
    arrays, meta = table.to_arrays(), table.bundle_metadata()
    X = arrays["decoders"].copy()
    mk = mask_of([3], 7)
    X[pattern_row(7, [3]), np.flatnonzero(mk)[0], 0] += 1e-6 * np.abs(X).max()
    bad = DecoderTable.from_arrays({**arrays, "decoders": X}, meta)
    with pytest.raises(VerificationError, match=r"stragglers \[3\]"):
        bad.verify(sample=None)


# ----------------------------------------------------------------------------------------------
# export / load
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("explicit", [False, True])
def test_export_load_round_trip_is_bit_exact(tmp_path, explicit):
    sch = encode(FANO, 2, "rd", seed=7)
    table = decoder_table(sch, stragglers=[[1], [0, 5], []]) if explicit else decoder_table(sch, s_max=2)
    path = table.export(tmp_path / "fano_rd")
    assert path.suffix == ".json"
    meta = json.loads(path.read_text())["metadata"]
    assert meta["kind"] == "decoder_table" and meta["count"] == len(table)
    back = load_decoder_table(tmp_path / "fano_rd")
    assert back.explicit == explicit and back.s_max == table.s_max and len(back) == len(table)
    for name in ("decoders", "errors"):
        a, b = getattr(table, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert back.scheme.B.tobytes() == sch.B.tobytes()
    assert np.array_equal(back.scheme.assignment, sch.assignment) and back.m == sch.m
    masks = np.array([back.pattern(r) for r in range(len(back))])
    assert back.rows(masks).tolist() == table.rows(masks).tolist() == list(range(len(table)))
    with pytest.raises(FileExistsError):
        table.export(tmp_path / "fano_rd")
    table.export(tmp_path / "fano_rd", overwrite=True)


def test_load_refuses_tampering_and_other_kinds(tmp_path):
    sch = encode(FANO, 1, "naive")
    table = decoder_table(sch, s_max=1)
    table.export(tmp_path / "t")
    npz = tmp_path / "t.npz"
    raw = bytearray(npz.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    npz.write_bytes(bytes(raw))
    with pytest.raises(CatalogueError, match="checksum"):
        load_decoder_table(tmp_path / "t")
    # a valid bundle of another kind
    from gcsim.io.bundle import save_bundle

    save_bundle(tmp_path / "other", {"x": np.eye(2)}, {"kind": "bibd"})
    with pytest.raises(CatalogueError, match="decoder_table"):
        load_decoder_table(tmp_path / "other")
    # structurally valid arrays whose decoders put weight on a straggler
    arrays, meta = table.to_arrays(), table.bundle_metadata()
    X = arrays["decoders"].copy()
    X[1, 0, 0] = 1.0  # row 1 = stragglers {0}
    save_bundle(tmp_path / "weight", {**arrays, "decoders": X}, meta)
    with pytest.raises(CatalogueError, match="non-zero weights on stragglers"):
        load_decoder_table(tmp_path / "weight", verify=False)  # refused by the structural checks alone
    # a count that contradicts s_max
    save_bundle(tmp_path / "count", arrays, {**meta, "s_max": 2})
    with pytest.raises(CatalogueError, match="count"):
        load_decoder_table(tmp_path / "count")
    # explicit patterns listed twice
    ex_table = decoder_table(sch, stragglers=[[1], [2]])
    ex_arrays, ex_meta = ex_table.to_arrays(), ex_table.bundle_metadata()
    P = ex_arrays["patterns"].copy()
    P[1] = P[0]
    save_bundle(tmp_path / "dup", {**ex_arrays, "patterns": P}, ex_meta)
    with pytest.raises(CatalogueError, match="duplicates"):
        load_decoder_table(tmp_path / "dup", verify=False)
    # a decoder that is valid in shape but not optimal: refused by the re-solve of every row
    X = arrays["decoders"].copy()
    X[0, 0, 0] += 0.5
    save_bundle(tmp_path / "wrong", {**arrays, "decoders": X}, meta)
    with pytest.raises(CatalogueError, match="do not verify"):
        load_decoder_table(tmp_path / "wrong")
    assert len(load_decoder_table(tmp_path / "wrong", verify=False)) == len(table)


@pytest.mark.parametrize("explicit", [False, True])
def test_object_contract(explicit):
    import json

    sch = encode(FANO, 2, "rd", seed=7)
    table = decoder_table(sch, stragglers=[[1], [2, 5]]) if explicit else decoder_table(sch, s_max=1)
    assert table.kind == "decoder_table" and table.verify(sample=None) is True
    assert table.params == (7, 7, 2, len(table), None if explicit else 1)
    with pytest.raises(AttributeError):
        table.s_max = 3
    with pytest.raises(AttributeError):
        del table.errors
    arrays = table.to_arrays()
    meta = json.loads(json.dumps(table.bundle_metadata()))
    assert meta["params"] == list(table.params) and isinstance(meta["construction"], str)
    back = DecoderTable.from_arrays(arrays, meta)
    assert back.params == table.params
    assert all(np.array_equal(back.to_arrays()[k], v) for k, v in arrays.items())
    with pytest.raises(CatalogueError, match="params"):
        DecoderTable.from_arrays(arrays, {**meta, "params": [7, 7, 2, len(table) + 1, 1]})


# ----------------------------------------------------------------------------------------------
# every row is verified on load (#19 item 2): a forged row outside any sample is refused
# ----------------------------------------------------------------------------------------------


def _old_default_sample(count: int) -> set[int]:
    """The rows the sampled check re-solved by default before (256 drawn with seed 0, first, last)."""
    rng = np.random.default_rng(0)
    return {0, count - 1, *rng.choice(count, size=min(256, count), replace=False).tolist()}


def _forge(table: DecoderTable, row: int, factor: float = 1.5) -> tuple[dict, dict]:
    """The table's arrays with ``row``'s decoder scaled (still zero off F) and its error made consistent.

    The stored error is recomputed here from the forged decoder, so every structural check passes;
    the bundle written from these arrays gets a fresh, valid checksum.
    """
    arrays, meta = table.to_arrays(), table.bundle_metadata()
    X, E = arrays["decoders"].copy(), arrays["errors"].copy()
    B, m = table.scheme.B, table.m
    T = np.kron(np.eye(m), np.ones((B.shape[0] // m, 1)))
    X[row] *= factor
    E[row] = float(np.sum((B @ X[row] - T) ** 2))
    return {**arrays, "decoders": X, "errors": E}, meta


@pytest.fixture(scope="module")
def table_378():
    """1 + 13 + 78 + 286 = 378 patterns: more rows than the old default sample of 256 (+2)."""
    sch = encode(cyclic_repetition_assignment(13, 3), 2, "rd", seed=0)
    return decoder_table(sch, s_max=3)


def test_a_forged_row_outside_the_old_sample_is_refused_by_default(tmp_path, table_378):
    from gcsim.coding.decoder_table import SampledVerificationWarning
    from gcsim.io.bundle import save_bundle

    table = table_378
    unsampled = sorted(set(range(len(table))) - _old_default_sample(len(table)))
    assert len(unsampled) > 50
    row = unsampled[len(unsampled) // 2]
    arrays, meta = _forge(table, row)
    save_bundle(tmp_path / "forged", arrays, meta)
    # the forged decoder really decodes worse than the genuine one (a wrong gradient, not a rounding)
    assert arrays["errors"][row] > table.errors[row] + 0.1
    with pytest.raises(CatalogueError, match=rf"do not verify: decoder table row {row} .*1 of the 378 rows"):
        load_decoder_table(tmp_path / "forged")
    with pytest.raises(CatalogueError, match=f"row {row} "):
        load_decoder_table(tmp_path / "forged", verify="all")
    # sampling is an explicit opt-in, and its warning says what it does not check
    k = len(_old_default_sample(len(table)))
    match = rf"re-solved {k} of the table's 378 rows.*other {378 - k} rows were NOT checked"
    with pytest.warns(SampledVerificationWarning, match=match):
        forged = load_decoder_table(tmp_path / "forged", verify="sample")
    with pytest.warns(SampledVerificationWarning, match=r"re-solved \d+ of the table's 378 rows"):
        load_decoder_table(tmp_path / "forged", sample=5)  # sample=k opts in as well
    assert forged.errors[row] == arrays["errors"][row]
    with pytest.raises(VerificationError, match=f"row {row} "):
        forged.verify()  # the object's own check covers every row as well
    assert "verification failed" in forged._repr_html_()  # and so does its HTML card
    # the catalogue loader behind `gcsim load` re-verifies every row too
    from gcsim.app.cli import main
    from gcsim.catalogue.objects import load_object

    with pytest.raises(CatalogueError, match=f"row {row} "):
        load_object(tmp_path / "forged")
    assert main(["load", str(tmp_path / "forged")]) == 1


@pytest.mark.parametrize("where", ["first", "s=1", "s=2", "s=3", "last"])
def test_every_row_is_checked(table_378, where):
    n = 13
    row = {"first": 0, "s=1": 5, "s=2": 1 + n + 40, "s=3": 1 + n + 78 + 100, "last": len(table_378) - 1}[where]
    arrays, meta = _forge(table_378, row, factor=1 + 1e-7)  # a small change, far above the rounding bound
    bad = DecoderTable.from_arrays(arrays, meta)
    with pytest.raises(VerificationError, match=rf"decoder table row {row} \(stragglers"):
        bad.verification_report()
    report = table_378.verification_report()
    assert report["checked"] + report["skipped_near_rank_cutoff"] == len(table_378) and report["unchecked"] == 0
    sampled = table_378.verification_report(sample=10)
    assert sampled["unchecked"] == len(table_378) - (sampled["checked"] + sampled["skipped_near_rank_cutoff"]) > 0


def test_load_verify_argument_is_checked(tmp_path):
    table = decoder_table(encode(FANO, 1, "naive"), s_max=1)
    table.export(tmp_path / "t")
    for bad in ("yes", 1, None, np.bool_(True), np.array([True, False])):
        with pytest.raises(InvalidArgumentError) as exc:
            load_decoder_table(tmp_path / "t", verify=bad)
        assert exc.value.argument == "verify"
    for verify in (False, "all"):
        with pytest.raises(InvalidArgumentError, match=f"sampled check, but verify={verify!r}") as exc:
            load_decoder_table(tmp_path / "t", verify=verify, sample=10)
        assert exc.value.argument == "sample"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sample that covers the table checks everything: no warning
        assert len(load_decoder_table(tmp_path / "t", verify="sample", sample=100)) == len(table)


def test_a_pattern_whose_b_f_is_zero_is_checked_exactly():
    """B_F = 0 (only a zero column arrives): the decoder must be 0 and the error mN, no rank question."""
    B = encode(np.eye(4, dtype=int), 1, "naive").B.copy()
    B[:, 3] = 0
    table = decoder_table(Scheme.from_matrix(B, np.eye(4, dtype=int), 1), s_max=3)
    row = table.row_of_stragglers([0, 1, 2])
    assert table.errors[row] == 4 and not table.decoders[row].any()
    report = table.verification_report()
    assert report["checked"] == len(table) and report["skipped_near_rank_cutoff"] == 0
    arrays, meta = table.to_arrays(), table.bundle_metadata()
    X = arrays["decoders"].copy()
    X[row, 3, 0] = 0.5  # weight on the zero column: same residual, not the minimum-norm decoder
    with pytest.raises(VerificationError, match=rf"row {row} \(stragglers \[0, 1, 2\]\)"):
        DecoderTable.from_arrays({**arrays, "decoders": X}, meta).verify()
