"""The advisor at cluster scale (issue #22 item 3; theory §49.5, §49.6).

Equivalent candidates (Theorem 49.5) are checked against per-pattern least squares (lstsq at
full column rank, exact rationals where ``B_F`` is rank-deficient: tests/exact_lstsq.py) on
designs with proportional ``(a, λ, N)``; the closed form of ``B = A`` (Proposition 49.6a) against
an enumeration with ``lstsq``; the structured route beyond the dense limit against the dense
evaluation of the same candidate; the pruning rule (Proposition 49.6b) against the table without it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gcsim
from exact_lstsq import lstsq_error
from executor_tolerances import lsq_err_tol
from gcsim import limits
from gcsim.advisor import advise, assess as assess_mod, core as core_mod
from gcsim.advisor.assess import Settings, evaluated_patterns, m1_closed_form
from gcsim.advisor.candidates import Question
from gcsim.coding.encoders._common import diagonals
from gcsim.coding.stragglers import straggler_model
from tolerances import dot_tol


def _lstsq_tol(B: np.ndarray, mask: np.ndarray, m: int) -> float:
    """Bound on the rounding of :func:`lstsq_error` (any backward-stable orthogonal route; 0 is exact):
    ``2 c mN f u κ(B_F)``, executor_tolerances.lsq_err_tol over ``mN``."""
    B = np.asarray(B, dtype=float)
    return lsq_err_tol(B[:, mask], m) / B.shape[0]


def _rd(A: np.ndarray, D: np.ndarray) -> np.ndarray:
    return (A[None] * D[:, None, :]).reshape(D.shape[0] * A.shape[0], A.shape[1]).astype(float)


def _gram(A: np.ndarray) -> tuple[int, int]:
    G = A.T @ A
    k, lam = int(G[0, 0]), int(G[0, 1])
    assert np.array_equal(G, (k - lam) * np.eye(A.shape[1], dtype=int) + lam), "not aI + λJ"
    return k, lam


def test_equivalent_designs_have_equal_errors():
    rng = np.random.default_rng(5)
    # n = 7: the Fano plane (workers as blocks), the duals of the 2-(7,3,2) design (derived from
    # PG(3,2)) and of the 2-(7,3,3) design (STS(7) + derived), and the Fano plane stacked twice;
    # n = 13: PG(2,3) and the dual of the 2-(13,4,2) radical difference family
    families = {
        7: [
            gcsim.bibd(7, 3, 1).assignment,
            gcsim.bibd(7, 3, 2).assignment.T,
            gcsim.bibd(7, 3, 3).assignment.T,
            np.vstack([gcsim.bibd(7, 3, 1).assignment] * 2),
        ],
        13: [gcsim.bibd(13, 4, 1).assignment, gcsim.bibd(13, 4, 2).assignment.T],
    }
    for n, mats in families.items():
        keys = set()
        for A in mats:
            k, lam = _gram(A)
            a, N = k - lam, A.shape[0]
            g = math.gcd(math.gcd(a, lam), N)
            keys.add((a // g, lam // g, N // g))
        assert len(keys) == 1, keys  # proportional (a, λ, N): one class
        for m in (1, 2, 3):
            D = rng.standard_normal((m, n))
            D[0, 0] = 0.0  # a worker with a zero diagonal row in block 0 (u_j != 0 still)
            masks = rng.random((40, n)) > 0.35
            masks[0] = True
            errs = np.array([[lstsq_error(_rd(A, D), mk, m, normalized=True) for mk in masks] for A in mats])
            tols = np.array([[_lstsq_tol(_rd(A, D), mk, m) for mk in masks] for A in mats])
            assert np.all(np.abs(errs - errs[0]) <= tols + tols[0]), (n, m, errs)
            assert errs.std() > 0 or m == 1  # the patterns differ: the equality is not trivial


def test_advise_names_equivalent_candidates_once():
    adv = advise(7, 3, 2, "fixed:1", families=["bibd", "bibd-dual"], progress=False)
    names = [r["name"] for r in adv.rows]
    rd = [r for r in adv.rows if r["encoder"] == "rd"]
    assert len(rd) == 1, names
    assert rd[0]["structure"].startswith("2-(7,3,1) design")
    assert "dual of the 2-(7,3,2) design" in rd[0]["equivalents"]
    assert "theory §49.5" in rd[0]["notes"]
    # other encoders are evaluated per assignment: the dual keeps its NS-worker row
    assert any(r["structure"] == "dual of the 2-(7,3,2) design" and r["encoder"] == "ns-worker" for r in adv.rows)
    # the merged rows had the same error: evaluate one dual's RD directly
    dual = gcsim.bibd(7, 3, 2).assignment.T
    D = diagonals(np.random.default_rng(0), 2, 7, 0.0, "rademacher")
    masks = straggler_model("fixed", 7, s=1).enumerate()
    direct = np.mean([lstsq_error(_rd(dual, D), mk, 2, normalized=True) for mk in masks])
    tol = np.mean([_lstsq_tol(_rd(dual, D), mk, 2) for mk in masks])  # the reference's own rounding
    assert abs(rd[0]["error"] - direct) <= 1e-9 * direct + 1e-14 + tol


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_closed_form_m1_against_lstsq(p):
    A = gcsim.bibd(13, 4, 1).assignment
    n = N = 13
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
    f = masks.sum(axis=1)
    # err depends on F only through |F|: one lstsq per f
    first = {int(x): masks[np.flatnonzero(f == x)[0]] for x in np.unique(f)}
    per_f = {x: lstsq_error(A.astype(float), mk, 1, normalized=True) for x, mk in first.items()}
    # the references' rounding (κ(A_F) <= κ(A) = 4/√3 for PG(2,3)), weights summing to 1, then a
    # 2^13-term weighted sum; the closed form's own few operations are far below
    tol = max(_lstsq_tol(A, mk, 1) for mk in first.values())
    weights = (1 - p) ** f * p ** (n - f)
    expected = float(sum(w * per_f[int(x)] for w, x in zip(weights, f, strict=True)))
    got = m1_closed_form(N, 4, 1, n, straggler_model("bernoulli", n, p=p))
    assert abs(got["error"] - expected) <= tol + dot_tol(2**n, 1.0)
    for s in (0, 1, 3):
        sub = [mk for mk in masks if mk.sum() == n - s][:20]
        ref = np.mean([lstsq_error(A.astype(float), mk, 1, normalized=True) for mk in sub])
        closed = m1_closed_form(N, 4, 1, n, straggler_model("fixed", n, s=s))["error"]
        assert abs(closed - ref) <= tol + dot_tol(20, 1.0)
    assert m1_closed_form(N, 4, 1, n, straggler_model("markov", n, p_enter=0.1, p_leave=0.5)) is None


def test_evaluated_patterns_counts_the_stratified_draws():
    from scipy import stats

    q = Question(993, 32, 2, straggler_model("bernoulli", 993, p=0.1))
    S = Settings(samples=250, exact_limit=2500)
    w = stats.binom.pmf(np.arange(994), 993, 0.1)
    kept = w[w >= 1e-15]  # no stratum fits 2500 patterns (C(993, s) for s >= 2 is larger)
    assert evaluated_patterns(q, S) == sum(max(2, int(round(250 * x / kept.sum()))) for x in kept)
    small = Question(10, 3, 2, straggler_model("bernoulli", 10, p=0.1))
    assert evaluated_patterns(small, S) == 2**10
    fixed = Question(20, 3, 2, straggler_model("fixed", 20, s=2))
    assert evaluated_patterns(fixed, S) == math.comb(20, 2)


def test_beyond_the_dense_limit_the_structured_route_gives_the_dense_numbers(monkeypatch):
    kw = dict(families=["bibd"], samples=100, exact_limit=100, relax_comm=True, progress=False)
    dense = advise(183, 14, 2, "bernoulli:0.1", **kw)
    # PG(2,13): its 183 x 183 assignment (33,489 entries) within the limit, its 366 x 183 RD encoder
    # over it (the 100 x 183 masks fit too)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 40000)
    sparse = advise(183, 14, 2, "bernoulli:0.1", **kw)
    d = {r["name"]: r for r in dense.rows}
    s = {r["name"]: r for r in sparse.rows}
    rd = "2-(183,14,1) design [PG(2,13): points vs lines] / rd"
    assert rd in s and "evaluated without dense matrices" in s[rd]["notes"]
    assert type(sparse.schemes[[r["name"] for r in sparse.rows].index(rd)]).__name__ == "StructuredRD"
    for key in ("error", "error_lo", "error_hi"):
        assert s[rd][key] == pytest.approx(d[rd][key], rel=1e-9)
    # B = A with m = 1 fits (33,489 entries): the same row
    m1 = "2-(183,14,1) design [PG(2,13): points vs lines] / bibd-optimal (m=1)"
    assert s[m1]["error"] == pytest.approx(d[m1]["error"], rel=1e-9)
    # the encoders that need the dense B are dropped with the reason
    reasons = [x.reason for x in sparse.dropped_items if x.encoder == "ns-worker"]
    assert reasons and "over MAX_DENSE_ENTRIES" in reasons[0]


def test_closed_form_row_when_the_dense_evaluation_is_expensive(monkeypatch):
    q = dict(families=["bibd"], samples=400, relax_comm=True, progress=False)  # the m = 1 rows too
    before = {r["name"]: r for r in advise(31, 6, 2, "bernoulli:0.2", **q).rows}
    monkeypatch.setattr(assess_mod, "PRUNE_COST", 0.0)  # every dense evaluation counts as expensive
    monkeypatch.setattr(core_mod, "PRUNE_COST", 0.0)
    after = {r["name"]: r for r in advise(31, 6, 2, "bernoulli:0.2", **q).rows}
    m1 = "2-(31,6,1) design [PG(2,5): points vs lines] / bibd-optimal (m=1)"
    assert before[m1]["error_method"].startswith("monte-carlo")
    assert after[m1]["error_method"] == "exact" and "exact in closed form" in after[m1]["notes"]
    lo, hi = before[m1]["error_lo"], before[m1]["error_hi"]  # Monte Carlo before: the exact value inside
    assert lo - 1e-12 <= after[m1]["error"] <= hi + 1e-12


def test_settled_candidates_are_not_evaluated(monkeypatch):
    kw = dict(families=["bibd", "cyclic", "coset"], progress=False)
    full = advise(13, 4, 2, "fixed:1", **kw)
    monkeypatch.setattr(assess_mod, "PRUNE_COST", 0.0)  # every dense evaluation counts as expensive
    monkeypatch.setattr(core_mod, "PRUNE_COST", 0.0)
    pruned = advise(13, 4, 2, "fixed:1", **kw)
    skipped = [d for d in pruned.dropped_items if d.reason.startswith("not evaluated (theory §49.6, §57.7)")]
    assert skipped
    rows = {r["name"]: r for r in pruned.rows}
    every = {r["name"]: r for r in full.rows}
    tol = pruned.exact_tol
    for d in skipped:
        name = f"{d.name} / {d.encoder}"
        cand = next(r for n, r in every.items() if n.startswith(name))  # its row without pruning
        leader = next(r for n, r in rows.items() if n in d.reason)
        assert leader["error_lo"] <= tol  # the leader's interval starts at 0: nothing can lie below it
        for c in ("communication", "data_fraction"):
            assert leader[c] <= cand[c]
        assert cand["error"] >= 0 and cand["name"] not in rows
        # evaluated anyway, the candidate's interval is not below the leader's: at best a tie
        assert not cand["error_hi"] < leader["error_lo"] - tol
    # the evaluated rows are the same numbers, and the first rows tie (exact codes, error 0)
    for n, r in rows.items():
        assert r["error"] == pytest.approx(every[n]["error"], rel=1e-12, abs=1e-15)
    assert pruned.rows[0]["error"] <= tol and full.rows[0]["error"] <= tol


def test_pattern_independent_draws_are_the_encoders():
    # Theorem 49.5 needs the same diagonals for every assignment with the same n: RD draws them
    # from (seed, m, n, eps, dist) alone
    a = gcsim.encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=3)
    b = gcsim.encode(gcsim.bibd(7, 3, 2).assignment.T.copy(), 2, "rd", seed=3)
    assert np.array_equal(a.diagonals, b.diagonals)


def test_building_progress_lines(capsys):
    advise(13, 4, 2, "fixed:1", families=["bibd", "cyclic"], progress=True)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "gcsim: progress: advise building: 0/2 families (0%), 0 s elapsed", err
    assert any(line.startswith("gcsim: progress: advise building: 2/2 families (100%), ") for line in err), err


def test_every_pair_of_candidates_in_a_class_ties_on_every_criterion():
    adv = advise(13, 4, 2, "bernoulli:0.1", families=["bibd", "bibd-dual"], samples=200, progress=False)
    rd = [r for r in adv.rows if r["encoder"] == "rd"]
    assert len(rd) == 1 and rd[0]["equivalents"], [r["name"] for r in adv.rows]
    for name in rd[0]["equivalents"].split("; "):
        v, k, lam = (int(x) for x in name.split("(")[1].split(")")[0].split(","))
        b, r = v * (lam * (v - 1) // (k - 1)) // k, lam * (v - 1) // (k - 1)
        assert r / b == pytest.approx(rd[0]["data_fraction"])  # the same data fraction k/N


def test_structured_assignment_is_b_equals_a():
    enc = assess_mod.StructuredAssignment(gcsim.bibd(13, 4, 1).incidence, "bibd-optimal", 4, 1)
    assert enc.verify() and enc.m == 1
    A = gcsim.bibd(13, 4, 1).assignment
    assert np.array_equal(enc.B, A)
    res = gcsim.expected_error(enc, straggler_model("fixed", 13, s=2), normalized=True)
    masks = [np.array([j not in S for j in range(13)]) for S in itertools.combinations(range(13), 2)]
    ref = np.mean([lstsq_error(A.astype(float), mk, 1, normalized=True) for mk in masks])
    # the reference's rounding and gcsim's Gram route (κ(A)² with κ(A) = 4/√3), both far below 1e-12
    tol = max(_lstsq_tol(A, mk, 1) for mk in masks)
    assert abs(res.mean - ref) <= 1e-12 * ref + tol


def test_expensive_exact_builds_are_pruned_before_they_are_built(monkeypatch):
    # n = 183 spent 94 % of its time in the exact codes' per-part least squares of candidates an
    # exact row settles (Proposition 49.6b): their route cost now counts the construction, so with
    # every evaluation cheap and every exact build dear the settled builds are never reached
    import importlib

    exact = importlib.import_module("gcsim.coding.encoders.exact")
    q = Question(13, 4, 2, straggler_model("fixed", 13, s=1))
    kw = dict(families=["bibd", "cyclic", "coset"], progress=False)
    from gcsim.advisor.candidates import Structure, structures

    settings = Settings()
    evaluation = assess_mod.dense_eval_cost(13, 13, 2, settings, evaluated_patterns(q, settings))
    pg3 = next(x for x in structures(q, ("bibd",)) if isinstance(x, Structure))
    route = assess_mod.route_of(pg3, "exact-gaussian", 2, q, settings)
    assert route.cost == pytest.approx(evaluation + assess_mod.exact_build_cost(pg3.incidence, 1, 2))
    assert assess_mod.route_of(pg3, "ns", 2, q, settings).cost == pytest.approx(evaluation)
    full = advise(13, 4, 2, "fixed:1", **kw)
    built = []
    real = exact._build
    monkeypatch.setattr(exact, "_build", lambda *a, **k: (built.append(1), real(*a, **k))[1])
    monkeypatch.setattr(assess_mod, "PRUNE_COST", evaluation * 1.01)  # evaluations cheap, exact builds dear
    monkeypatch.setattr(core_mod, "PRUNE_COST", evaluation * 1.01)
    pruned = advise(13, 4, 2, "fixed:1", **kw)
    exact_rows = [r for r in full.rows if r["encoder"].startswith("exact")]
    skipped = [
        d for d in pruned.dropped_items if d.encoder.startswith("exact") and d.reason.startswith("not evaluated")
    ]
    assert len(exact_rows) == 6 and skipped  # three assignments x two exact encoders, some settled
    assert len(built) == len(exact_rows) - len(skipped)  # counted: a settled candidate is never built
    assert all("dense build and evaluation" in d.reason for d in skipped)
    rows = {r["name"]: r for r in pruned.rows}
    for r in full.rows:  # the rows that stay are the same numbers; the settled ones tie at best
        if r["name"] in rows:
            assert rows[r["name"]]["error"] == pytest.approx(r["error"], rel=1e-12, abs=1e-15)
    assert pruned.rows[0]["error"] <= pruned.exact_tol and full.rows[0]["error"] <= full.exact_tol


def _rows(adv) -> dict:
    return {r["name"]: r for r in adv.rows}


def test_srg_beyond_the_dense_limit_is_built_sparse_and_equals_the_dense_answer(monkeypatch):
    # L(5) = SRG(25, 8, 3, 2) with A = Adj + I: dense, then with the limit under n^2 = 625 entries,
    # where the SRG family builds the sparse L(5) and RD takes the certified route of theory §44
    # (a trace of 20 iterations: its 20 x 25 masks fit the lowered limit)
    from gcsim.coding.stragglers import TraceModel

    model = TraceModel(np.random.default_rng(5).exponential(size=(25, 20)), policy="deadline", deadline=2.0)
    kw = dict(families=["srg"], progress=False)
    dense = advise(25, 9, 2, model, **kw)
    rd = "SRG(25,8,3,2) with A = Adj + I ["
    d = next(r for n, r in _rows(dense).items() if n.startswith(rd) and n.endswith("/ rd"))
    assert type(dense.schemes[dense.rows.index(d)]).__name__ == "Scheme"
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 600)
    sparse = advise(25, 9, 2, model, **kw)
    (s,) = [r for r in sparse.rows if r["encoder"] == "rd"]
    scheme = sparse.schemes[sparse.rows.index(s)]
    assert type(scheme).__name__ == "SparseRD" and type(sparse.structures[0]).__name__ == "SparseSRG"
    assert "theory §44" in s["notes"] and "SRG(25, 8, 3, 2) spectrum" in s["notes"]
    assert s["error_method"] == d["error_method"] == "exact"  # the trace's 20 iterations
    assert s["error"] == pytest.approx(d["error"], rel=1e-9)  # each pattern certified to 1e-10
    # independent: B of the sparse encoder (L(5) with its diagonals), pattern by pattern lstsq
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**24)
    B = _rd(np.asarray(gcsim.srg(25, 8, 3, 2).assignment), scheme.diagonals)
    masks = np.asarray(model.masks(), dtype=bool)
    want = np.mean([lstsq_error(B, mk, 2, normalized=True) for mk in masks])
    tol = np.mean([_lstsq_tol(B, mk, 2) for mk in masks])  # the reference's own rounding
    assert abs(s["error"] - want) <= 1e-9 * want + tol


def test_coset_and_biregular_take_the_sparse_route_when_dense_is_dear(monkeypatch):
    kw = dict(families=["coset", "biregular"], samples=400, progress=False)
    dense = _rows(advise(26, 8, 2, "bernoulli:0.1", **kw))
    monkeypatch.setattr(assess_mod, "PRUNE_COST", 0.0)  # every dense evaluation counts as expensive
    monkeypatch.setattr(core_mod, "PRUNE_COST", 0.0)
    adv = advise(26, 8, 2, "bernoulli:0.1", **kw)
    sparse = _rows(adv)
    rd = [n for n in sparse if n.endswith("/ rd")]
    assert rd
    kinds = {n: type(adv.schemes[[r["name"] for r in adv.rows].index(n)]).__name__ for n in rd}
    assert "SparseRD" in kinds.values()
    for n in rd:
        if kinds[n] == "SparseRD":
            assert "Cholesky certificate" in sparse[n]["notes"]
        for key in ("error", "error_lo", "error_hi"):
            assert sparse[n][key] == pytest.approx(dense[n][key], rel=1e-9, abs=1e-15)


def test_export_of_sparse_and_structured_candidates(monkeypatch, tmp_path):
    from gcsim.advisor import load_exported
    from gcsim.coding.structured import encode_structured

    monkeypatch.setattr(assess_mod, "PRUNE_COST", 0.0)  # the sparse route for RD on the bi-regular graph
    monkeypatch.setattr(core_mod, "PRUNE_COST", 0.0)
    adv = advise(26, 8, 2, "fixed:2", families=["biregular"], progress=False)
    rank = next(i for i, s in enumerate(adv.schemes, start=1) if type(s).__name__ == "SparseRD")
    sparse = adv.schemes[rank - 1]
    code = load_exported(adv.export(tmp_path, rank))
    # read back as the dense Scheme with the same B (the diagonals of the same seed), its table re-solved
    assert type(code.scheme).__name__ == "Scheme" and np.array_equal(code.scheme.B, sparse.B)
    assert np.array_equal(code.scheme.assignment, sparse.incidence.toarray())
    assert len(code.decoders) == 1 + 26 + 325  # every pattern with at most s = 2 stragglers
    masks = straggler_model("fixed", 26, s=2).sample(10, seed=2)
    N = sparse.num_parts
    want = [lstsq_error(np.asarray(code.scheme.B), mk, 2, normalized=True) for mk in masks]  # the read-back B
    tol = [_lstsq_tol(np.asarray(code.scheme.B), mk, 2) for mk in masks]  # the reference's own rounding
    got = sparse.context.errors(masks) / (2 * N)
    assert np.all(np.abs(got - np.asarray(want)) <= 1e-9 * np.abs(want) + 1e-13 + np.asarray(tol))
    # beyond the dense limit the encoder is written as its "structured_scheme" bundle (sparse
    # incidence + diagonals; tests/test_structured_bundle.py checks it in full)
    pg3 = gcsim.bibd(13, 4)
    adv2 = advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False)
    structured = encode_structured(pg3, 2, seed=0)
    rows = list(adv2.rows)
    # the row names the encoder exported (load_code checks it); the measurements were another encoder's: cleared
    not_measured = dict.fromkeys(("error", "error_lo", "error_hi", "worst_case", "lower_bound", "upper_bound"))
    rows[0] = dict(rows[0], encoder=structured.method, **not_measured)
    forged = type(adv2)(adv2.question, tuple(rows[:1]), adv2.dropped_items, (structured,), (pg3,))
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 300)
    big = load_exported(forged.export(tmp_path / "big"))
    assert type(big.scheme).__name__ == "StructuredRD"
    assert big.scheme.diagonals.tobytes() == structured.diagonals.tobytes()


def test_a_plane_beyond_the_sparse_block_lists_is_built_as_its_singer_set(monkeypatch):
    # with the limit at 2**15, PG(2,13)'s 2,562 non-zeros are over keep_sparse's 2,048: gcsim.bibd would refuse
    # it, the advisor builds the plane as a CyclicDesign (theory §10.8) and gets the same numbers (Theorem 49.5)
    kw = dict(families=["bibd"], samples=100, exact_limit=100, progress=False)
    dense = {r["encoder"]: r for r in advise(183, 14, 2, "bernoulli:0.1", **kw).rows}
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 2**15)
    adv = advise(183, 14, 2, "bernoulli:0.1", **kw)
    rows = {r["encoder"]: r for r in adv.rows}
    assert "rd" in rows and "Singer PG(2,13)" in rows["rd"]["name"]
    assert type(adv.structures[[r["encoder"] for r in adv.rows].index("rd")]).__name__ == "CyclicDesign"
    for key in ("error", "error_lo", "error_hi"):
        assert rows["rd"][key] == pytest.approx(dense["rd"][key], rel=1e-9)
