"""``gcsim reproduce --paper``: the paper registry, the agc-paper stage and its claims table (issue #20 item 8).

The real stages take minutes; here the registry is exercised with small fake stages, and the
agc-paper stage runs at a tiny scale (its ``scale`` knob) beside a fake training stage that writes
a claims table of the training stage's schema.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from exact_lstsq import lstsq_error
from gcsim.app import reproduce as rep
from gcsim.app.cli import main
from gcsim.app.stages import agc_paper
from gcsim.errors import InvalidArgumentError

# 3 RD draws: the interval is over draws (theory §57.10), and one draw gives none
TINY = agc_paper.Scale(
    rd_encoders=3,
    rd_patterns=3,
    baseline_patterns=3,
    biregular_patterns=4,
    coset_draws=1,
    points=2,
    biregular_draws=2,
    tight_patterns=3,
    tight_draws=1,
    srg_draws=3,
    srg_patterns=2,
    sgd_seeds=3,
    sgd_steps=20,
)
CLAIM_COLUMNS = ["claim", "measure", "value", "holds", "must_hold", "basis", "figure", "source", "verdict"]
TRAINING_CLAIMS = pd.DataFrame(
    {
        "claim": ["1. faster (Bernoulli clock)", "2a. the interpolation code breaks in float32"],
        "measure": ["time ratio", "error ratio"],
        "value": [0.9, 80.0],
        "holds": [True, True],
        "figure": ["training.png", "precision.png"],
    }
)


def _stage(tag, log, reads=None):
    def stage(out, full, seed, progress):
        log.append(tag)
        (out / f"{tag}.txt").write_text(tag)
        result = {"ok": True, "files": [f"{tag}.txt"], "text": tag}
        if reads:
            result["inputs"] = [reads]
        return result

    return stage


@pytest.fixture
def fakes(monkeypatch):
    """Stages a, b, c; papers p = [a, b] and q = [c]; c is paper-only.  Returns the run log."""
    log: list[str] = []
    monkeypatch.setattr(rep, "STAGES", {t: _stage(t, log, "a/a.txt" if t == "b" else None) for t in "abc"})
    monkeypatch.setattr(rep, "PAPERS", {"p": ["b", "a"], "q": ["c"]})
    monkeypatch.setattr(rep, "PAPER_ONLY", {"c"})
    monkeypatch.setattr(rep, "provenance", lambda: {"test": True})
    return log


def test_the_registry_names_registered_stages():
    for paper, stages in rep.PAPERS.items():
        assert stages and all(s in rep.STAGES for s in stages), paper
    assert rep.PAPERS["agc"] == ["training", "agc-paper"] and rep.PAPERS["cerar"][:2] == ["cerar", "ddp"]
    assert rep.PAPER_ONLY <= set(rep.STAGES)
    # agc-paper reads the training stage's claims: it comes after it
    order = list(rep.STAGES)
    assert order.index("training") < order.index("agc-paper")
    assert rep.paper_stages("agc") == ["training", "agc-paper"]


def test_plain_run_is_the_demo_and_a_paper_runs_its_stages(tmp_path, fakes):
    assert rep.demo_stages() == ["a", "b"]
    assert rep.paper_stages(["q", "p"]) == ["a", "b", "c"]  # STAGES order, union
    rep.run_reproduce(tmp_path / "demo", progress=False)
    assert fakes == ["a", "b"]
    fakes.clear()
    rep.run_reproduce(tmp_path / "q", papers="q", progress=False)
    assert fakes == ["c"]
    fakes.clear()
    summary = rep.run_reproduce(tmp_path / "p", papers=["p"], stages=["b"], progress=False)  # --stage narrows
    assert fakes == ["b"] and list(summary["stages"]) == ["b"]


def test_contradictory_or_unknown_selections_are_refused(tmp_path, fakes):
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="p", stages=["c"], progress=False)
    assert exc.value.argument == "stage" and "not experiments of paper p" in str(exc.value)
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="nope", progress=False)
    assert exc.value.argument == "paper"
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers=[], progress=False)
    assert exc.value.argument == "paper"
    with pytest.raises(InvalidArgumentError) as exc:
        rep.run_reproduce(tmp_path, papers="p", stages=["zz"], progress=False)
    assert exc.value.argument == "stage" and "unknown" in str(exc.value)
    assert fakes == []


def test_a_stage_runs_again_when_an_input_from_another_stage_changes(tmp_path, fakes):
    rep.run_reproduce(tmp_path, papers="p", progress=False)
    man = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert set(man["inputs"]) == {"a/a.txt"} and man["inputs"]["a/a.txt"] is not None
    fakes.clear()
    rep.run_reproduce(tmp_path, papers="p", progress=False)
    assert fakes == []  # both reused
    (tmp_path / "a" / "a.txt").write_text("edited")  # a's manifest now refuses a; b's input changed
    summary = rep.run_reproduce(tmp_path, stages=["b"], progress=False)
    assert fakes == ["b"] and summary["stages"]["b"]["status"] == "ok"
    (tmp_path / "a" / "a.txt").unlink()
    assert "input a/a.txt disappeared" in rep.check_stage_outputs(tmp_path / "b", {"full": False, "seed": 0})


def test_cli_paper_flag_parsing(tmp_path, capsys):
    assert main(["reproduce", "--paper", "nope", "--out", str(tmp_path)]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["reproduce", "--paper", "agc", "--stage", "cerar", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcsim: error: --stage:") and "agc-paper" in err
    assert not any(tmp_path.iterdir())  # refused before anything ran
    assert main(["reproduce", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--paper {agc,cerar}" in text and "agc: training, agc-paper" in text


# ----------------------------------------------------------------------------------------------
# the agc-paper stage at a tiny scale
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_paper(monkeypatch):
    """``--paper agc`` at the tiny scale, with a fake training stage writing a claims table."""
    runs: list[str] = []

    def training(out, full, seed, progress):
        runs.append("training")
        TRAINING_CLAIMS.to_csv(out / "claims.csv", index=False)
        for figure in TRAINING_CLAIMS.figure:
            (out / figure).write_bytes(b"\x89PNG fake")
        return {"ok": True, "files": ["claims.csv", *TRAINING_CLAIMS.figure], "text": "fake training"}

    monkeypatch.setattr(agc_paper, "QUICK", TINY)
    monkeypatch.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    monkeypatch.setattr(rep, "STAGES", {**rep.STAGES, "training": training})
    return runs


@pytest.mark.timeout(300)
def test_paper_agc_writes_the_claims_table(tmp_path, tiny_paper, capsys):
    assert main(["reproduce", "--paper", "agc", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[agc-paper] ok" in out and "holds: Construction 2 (Gaussian and ±1) is exact at s = 0" in out
    # the training claims are printed by the training stage (a fake one here), not again under [agc-paper]
    assert TRAINING_CLAIMS.claim[0] not in out and "and the training stage's 2 claims" in out
    # the results index lists every figure written, each on its own line
    index = (tmp_path / "index.md").read_text()
    for png in tmp_path.rglob("*.png"):
        assert index.count(f"(<{png.relative_to(tmp_path).as_posix()}>)") == 1, png
    stage = tmp_path / "agc-paper"
    claims = pd.read_csv(stage / "claims.csv")
    assert list(claims.columns) == CLAIM_COLUMNS
    assert claims.holds.dtype == bool and claims.must_hold.dtype == bool
    assert claims.must_hold.sum() >= 5 and claims[claims.must_hold].holds.all()
    for figure in claims.figure:
        assert (stage / figure).is_file(), figure  # every figure named exists, the training ones included
    training = claims[claims.source == "training"]
    assert list(training.claim) == list(TRAINING_CLAIMS.claim) and not training.must_hold.any()
    md = (stage / "claims.md").read_text()
    assert md.count("\n") == len(claims) + 2 and "[pg2_9_rd.png](pg2_9_rd.png)" in md
    pg = pd.read_csv(stage / "pg2_9_rd.csv")
    assert list(pg.s) == [11, 22]  # the authors' counts: linspace(0, 91/4, 3)[1:] as integers
    assert np.all(pg.upper_closed > pg.lower_closed) and np.all(pg.lower_search >= pg.lower_closed)
    bi = pd.read_csv(stage / "biregular_construction2.csv")
    assert list(bi.s) == [0, 5, 10]
    assert bi.construction2_signs_max[0] <= agc_paper.EXACT_RAW
    manifest = json.loads((stage / "manifest.json").read_text())
    assert manifest["status"] == "ok" and set(manifest["inputs"]) == {"training/claims.csv"}
    # a rerun reuses both; a new training table makes agc-paper run again (its claims came from it)
    assert main(["reproduce", "--paper", "agc", "--out", str(tmp_path)]) == 0
    assert "existing results not reused" not in capsys.readouterr().out and tiny_paper == ["training"]
    TRAINING_CLAIMS.assign(holds=[False, True]).to_csv(tmp_path / "training" / "claims.csv", index=False)
    assert main(["reproduce", "--paper", "agc", "--stage", "agc-paper", "--out", str(tmp_path)]) == 0
    assert "input training/claims.csv changed" in capsys.readouterr().out
    claims = pd.read_csv(stage / "claims.csv")
    assert not claims[claims.source == "training"].holds.iloc[0]  # reported, the stage still ok
    # the training claims over seeds: "not shown" where the interval cannot tell, carried to both tables
    TRAINING_CLAIMS.assign(holds=[False, True], verdict=["not shown", "holds"]).to_csv(
        tmp_path / "training" / "claims.csv", index=False
    )
    assert main(["reproduce", "--paper", "agc", "--stage", "agc-paper", "--out", str(tmp_path)]) == 0
    text = json.loads((stage / "manifest.json").read_text())["text"]
    assert "not shown" in text.split("the training stage's 2 claims")[1]  # the one line naming their verdicts
    claims = pd.read_csv(stage / "claims.csv")
    assert list(claims[claims.source == "training"].verdict) == ["not shown", "holds"]
    assert set(claims[claims.source != "training"].verdict) <= {"holds", "does not hold"}
    assert (
        "| 1. faster (Bernoulli clock) | time ratio | 0.9 | not shown | no | empirical |"
        in (stage / "claims.md").read_text()
    )


@pytest.mark.timeout(300)
def test_a_failing_must_hold_claim_fails_the_stage(tmp_path, monkeypatch):
    from gcsim.coding import bounds

    monkeypatch.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    monkeypatch.setattr(bounds, "bibd_rd_upper_bound", lambda *a, **k: 1.0)  # a wrong bound: RD exceeds it
    out = tmp_path / "agc-paper"
    out.mkdir()
    result = agc_paper.agc_paper_stage(out, False, 0, False, scale=TINY)
    assert not result["ok"] and "FAILS: RD (±1 diagonals) on PG(2,9)" in result["text"]
    claims = pd.read_csv(out / "claims.csv")
    row = claims[claims.claim.str.startswith("RD (±1 diagonals) on PG(2,9)")].iloc[0]
    assert row.must_hold and not row.holds and row.value < 0  # the relative gap: negative, the mean above
    assert "not run" in result["text"]  # no training table beside it: one row says so


# ----------------------------------------------------------------------------------------------
# every "must hold" row can fail (issue #32 item 1): a planted fault turns it to "fails"
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_tables():
    """The stage's tables at the tiny scale (one coset graph), computed once for the fault tests."""
    mp = pytest.MonkeyPatch()
    mp.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    try:
        yield agc_paper.compute_tables(TINY, 0)
    finally:
        mp.undo()


def _rows(tables) -> pd.DataFrame:
    return pd.DataFrame(agc_paper.paper_claims(tables))


def _row(claims: pd.DataFrame, start: str) -> pd.Series:
    hit = claims[claims.claim.str.startswith(start)]
    assert len(hit) == 1, start
    return hit.iloc[0]


#: the must-hold rows, by the start of their text, and the test that plants a fault in each
MUST_HOLD = {
    "RD (±1 diagonals) on PG(2,9)": "test_fault_pg_upper_bound_normalized",
    "RD (±1 diagonals) on strongly regular graphs": "test_fault_srg_bound_for_the_wrong_m",
    "the upper bounds are tight in certain cases": "test_fault_upper_bounds_tight_rows",
    "the rank lower bound is tight": "test_fault_rank_bound_on_the_stragglers",
    "no encoder beats the lower bounds": "test_fault_closed_form_lower_bound_without_replication",
    "Construction 2 (Gaussian and ±1) is exact at s = 0": "test_fault_construction2_perturbed",
    "Construction 2 (±1)'s error stays below": "test_fault_diagonal_dominance_normalized",
    "Construction 2 (Gaussian)'s error stays below": "test_fault_diagonal_dominance_normalized",
    "RD with continuous diagonals": "test_fault_coset_encoder_with_a_lost_column",
    "the RD estimator with Theorem 5's decoder is unbiased": "test_fault_unbiased_decoder_faults",
    "its variance E‖ĝ - ∇L‖² is Theorem 5's closed form": "test_fault_unbiased_decoder_faults",
    "SGD with the unbiased RD estimator": "test_fault_sgd_variance_for_the_wrong_straggler_law",
}


def test_every_must_hold_row_has_a_fault_test_and_holds_unperturbed(tiny_tables):
    claims = _rows(tiny_tables)
    must = claims[claims.must_hold]
    assert sorted(must.claim.map(lambda c: next(k for k in MUST_HOLD if c.startswith(k)))) == sorted(MUST_HOLD)
    assert must.holds.all() and (must.basis == "theorem").all()
    for test in set(MUST_HOLD.values()):
        assert test in globals(), test
    # the row that cannot fail is labelled, not counted among the theorems
    row = _row(claims, "gcsim's search lower bound is never below")
    assert row.basis == "by construction" and not row.must_hold
    assert set(claims.basis) == {"theorem", "by construction", "empirical"}


def _fails(claims: pd.DataFrame, start: str) -> None:
    row = _row(claims, start)
    assert row.must_hold and not row.holds, (start, row.value, row.measure)


def test_fault_pg_upper_bound_normalized(tiny_tables, monkeypatch):
    from gcsim.coding import bounds

    orig = bounds.bibd_rd_upper_bound
    # the bound of the normalized error err / (mN) compared with the raw error
    monkeypatch.setattr(
        bounds, "bibd_rd_upper_bound", lambda v, k, lam, m, s, **kw: orig(v, k, lam, m, s, **kw) / (m * v)
    )
    tables = tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("pg",))
    _fails(_rows(tables), "RD (±1 diagonals) on PG(2,9)")


def test_fault_srg_bound_for_the_wrong_m(tiny_tables, monkeypatch):
    from gcsim.coding import bounds

    orig = bounds.srg_rd_upper_bound
    monkeypatch.setattr(
        bounds, "srg_rd_upper_bound", lambda v, k, lam, mu, m, s, **kw: orig(v, k, lam, mu, m - 1, s, **kw)
    )
    tables = tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("srg",))
    _fails(_rows(tables), "RD (±1 diagonals) on strongly regular graphs")


def test_fault_upper_bounds_tight_rows(tiny_tables, monkeypatch):
    from gcsim.coding import bounds

    start = "the upper bounds are tight in certain cases"
    orig = bounds.rd_upper_bound

    def off_by_one_in_m(A, m, masks, eps=0.0, dist="rademacher", **kw):
        mu2, mu4 = bounds.rd_moments(eps, dist)  # mu4 + (m - 1) mu2^2 where Theorem 2 has (m - 2)
        return orig(A, m, masks, moments=(mu2, mu4 + mu2**2))

    with monkeypatch.context() as mp:
        mp.setattr(bounds, "rd_upper_bound", off_by_one_in_m)
        _fails(_rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("tight",))), start)
    orig_dd = bounds.diagonal_dominance_upper_bound
    with monkeypatch.context() as mp:  # the diagonal-dominance bound on the wrong set: one more straggler
        mp.setattr(
            bounds,
            "diagonal_dominance_upper_bound",
            lambda sch, masks, **kw: orig_dd(sch, np.asarray(masks) & (np.arange(np.shape(masks)[-1]) != 0), **kw),
        )
        _fails(_rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("tight",))), start)


def test_fault_rank_bound_on_the_stragglers(tiny_tables, monkeypatch):
    from gcsim.coding import bounds

    orig = bounds.rank_lower_bound
    monkeypatch.setattr(bounds, "rank_lower_bound", lambda A, m, masks: orig(A, m, ~np.asarray(masks, dtype=bool)))
    _fails(_rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("tight",))), "the rank lower bound is tight")


def test_fault_closed_form_lower_bound_without_replication(tiny_tables, monkeypatch):
    import dataclasses

    from gcsim.coding import bounds

    orig = bounds.partial_uncovering_lower_bound

    def forgets_the_replication(A, m, s):  # floor(N (s + m - 1 - j) / n): R = n d2 written n
        A = np.asarray(A)
        N, n = A.shape
        value = max((j + 1) * min(N, (N * (s + m - 1 - j)) // n) for j in range(m))
        return dataclasses.replace(orig(A, m, s), value=float(value))

    monkeypatch.setattr(bounds, "partial_uncovering_lower_bound", forgets_the_replication)
    tables = tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("pg", "biregular"))
    _fails(_rows(tables), "no encoder beats the lower bounds")


def _perturbed_encode(monkeypatch, method: str, how):
    """``encode`` whose ``method`` schemes have their B replaced by ``how(B)`` (the support is kept)."""
    import dataclasses

    from gcsim.coding import schemes

    orig = schemes.encode

    def encode(A, m, name, **kw):
        sch = orig(A, m, name, **kw)
        return dataclasses.replace(sch, B=how(np.array(sch.B))) if name == method else sch

    monkeypatch.setattr(schemes, "encode", encode)


def test_fault_construction2_perturbed(tiny_tables, monkeypatch):
    def second_block_copied(B):  # the null-space step skipped: Q = P
        B[B.shape[0] // 2 :] = B[: B.shape[0] // 2]
        return B

    _perturbed_encode(monkeypatch, "hadamard-ns", second_block_copied)
    tables = tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("biregular",))
    _fails(_rows(tables), "Construction 2 (Gaussian and ±1) is exact at s = 0")


def test_fault_diagonal_dominance_normalized(tiny_tables, monkeypatch):
    from gcsim.coding import bounds

    orig = bounds.diagonal_dominance_upper_bound
    monkeypatch.setattr(
        bounds, "diagonal_dominance_upper_bound", lambda sch, masks, **kw: orig(sch, masks, normalized=True)
    )
    claims = _rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("biregular",)))
    _fails(claims, "Construction 2 (±1)'s error stays below")
    _fails(claims, "Construction 2 (Gaussian)'s error stays below")


def test_fault_coset_encoder_with_a_lost_column(tiny_tables, monkeypatch):
    def lose_column(B):
        B[:, 0] = 0.0  # worker 0's encoding lost: B singular
        return B

    _perturbed_encode(monkeypatch, "rd", lose_column)
    monkeypatch.setattr(agc_paper, "COSET_INSTANCES", agc_paper.COSET_INSTANCES[:1])
    _fails(_rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("coset",))), "RD with continuous diagonals")


def test_fault_unbiased_decoder_faults(tiny_tables, monkeypatch):
    from gcsim.coding.encoders import rd

    orig = rd.rd_unbiased_decoders
    unbiased = "the RD estimator with Theorem 5's decoder is unbiased"
    variance = "its variance E‖ĝ - ∇L‖² is Theorem 5's closed form"
    for fault in (
        lambda D, masks, r, p, mu2: orig(D, masks, r, p, 1.0),  # no 1/E d^2 (RD(0.5): biased by 1 + 1/12)
        lambda D, masks, r, p, mu2: orig(D, masks, r, np.full_like(p, p.mean()), mu2),  # one p for every worker
        lambda D, masks, r, p, mu2: orig(D, masks, r + 1, p, mu2),  # off by one in r
    ):
        with monkeypatch.context() as mp:
            mp.setattr(rd, "rd_unbiased_decoders", fault)
            claims = _rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("unbiased",)))
            _fails(claims, unbiased)
            _fails(claims, variance)
    from gcsim.coding import bounds

    orig_var = bounds.rd_estimator_variance
    with monkeypatch.context() as mp:  # the padded variance where the returned d = 3 coordinates are meant
        mp.setattr(bounds, "rd_estimator_variance", lambda *a, **kw: orig_var(*a, **kw, padded=True))
        claims = _rows(tiny_tables | agc_paper.compute_tables(TINY, 0, kinds=("unbiased",)))
        assert _row(claims, unbiased).holds
        _fails(claims, variance)


def test_fault_sgd_variance_for_the_wrong_straggler_law(tiny_tables, monkeypatch):
    from gcsim.app.stages import agc_paper_checks as ck
    from gcsim.coding import bounds

    scale = agc_paper.Scale(**{**TINY.__dict__, "sgd_seeds": 8, "sgd_steps": 200})
    start = "SGD with the unbiased RD estimator"
    ck.sgd_problem.cache_clear()
    assert _row(_rows(tiny_tables | agc_paper.compute_tables(scale, 0, kinds=("sgd",))), start).holds
    orig = bounds.rd_estimator_variance
    monkeypatch.setattr(bounds, "rd_estimator_variance", lambda A, m, p, G, *a, **kw: orig(A, m, 0.0, G, *a, **kw))
    ck.sgd_problem.cache_clear()  # M of Corollary 7a computed as if nobody straggled
    try:
        _fails(_rows(tiny_tables | agc_paper.compute_tables(scale, 0, kinds=("sgd",))), start)
    finally:
        ck.sgd_problem.cache_clear()


# ----------------------------------------------------------------------------------------------
# the new tables against independent computations
# ----------------------------------------------------------------------------------------------


def test_replication_one_errors_are_the_closed_form_by_lstsq():
    from gcsim.app.stages import agc_paper_checks as ck

    A = ck.replication_one_assignment()
    N, n = A.shape
    loads = A.sum(axis=0)
    rng = np.random.default_rng(3)
    masks = rng.random((6, n)) > 0.3
    D = rng.choice([-1.0, 1.0], size=(2, n))
    B = np.vstack([A * D[0], A * D[1]])
    for mask in masks:
        err = lstsq_error(B, mask, 2)
        assert err == pytest.approx(2 * N - loads[mask].sum(), abs=1e-9)  # mN - S1 (theory §45.2, Remark 4)
    row = ck.tight_point(2, masks, [5])
    assert max(row["lower_dev"], row["rd_upper_dev"], row["dd_dev"]) <= 1e-12
    # Gaussian: Theorem 2 is mN - m S1 / (kappa + m - 1) = 2N - S1 / 2, the error 2N - S1
    S1 = np.array([loads[mk].sum() for mk in masks])
    assert row["rd_gaussian_gap"] == pytest.approx(float(((S1 / 2) / (2 * N - S1 / 2)).min()))


def test_unbiased_case_against_exact_rationals():
    from fractions import Fraction
    from itertools import product

    from gcsim.app.stages import agc_paper_checks as ck

    case = ck.UnbiasedCase("triangle ±1", "triangle", 0.0, "rademacher", (0.25, 0.5, 0.125))
    row = ck.unbiased_case(case, seed=4)
    A = [[1, 0, 1], [1, 1, 0], [0, 1, 1]]  # worker j holds parts j and j + 1 (mod 3)
    G = np.random.default_rng([4, 0x0B1A5]).integers(-3, 4, size=(3, 3))  # the function's gradients
    p = [Fraction(x) for x in case.p]
    w = 2  # ceil(d / m), d = 3, m = 2; block k of g_i is g_i[kw : kw + w] zero-padded
    blk = [[[int(G[i, k * w + t]) if k * w + t < 3 else 0 for t in range(w)] for k in range(2)] for i in range(3)]
    grad = [sum(int(G[i, c]) for i in range(3)) for c in range(3)]
    mean = [Fraction(0)] * 3
    second = Fraction(0)
    for signs in product([-1, 1], repeat=6):
        d = [signs[:3], signs[3:]]  # d[k][j]
        sent = [
            [sum(A[i][j] * d[k][j] * blk[i][k][t] for i in range(3) for k in range(2)) for t in range(w)]
            for j in range(3)
        ]
        for F in product([0, 1], repeat=3):
            weight = Fraction(1, 64)
            for j in range(3):
                weight *= (1 - p[j]) if F[j] else p[j]
            est = [
                sum(Fraction(F[j] * d[l][j], 1) / ((1 - p[j]) * 2) * sent[j][t] for j in range(3))
                for l in range(2)
                for t in range(w)
            ][:3]
            mean = [a + weight * e for a, e in zip(mean, est, strict=True)]
            second += weight * sum((e - g) ** 2 for e, g in zip(est, grad, strict=True))
    assert mean == [Fraction(g) for g in grad]  # unbiased, exactly
    assert row["bias"] <= 1e-14
    assert row["variance_enumerated"] == pytest.approx(float(second), rel=1e-13)
    assert row["variance_theorem5"] == pytest.approx(float(second), rel=1e-13)


def test_corollary_7a_second_moment_by_enumeration():
    # E||g_hat||^2 = M + M_G ||grad L||^2 exactly on a bi-regular design, homogeneous p, m | d
    from itertools import product

    from gcsim.coding.encoders.classic import cyclic_repetition_assignment

    A = cyclic_repetition_assignment(5, 2).astype(float)  # r = l = 3
    N, n, r, m, p, d, beta = 5, 5, 3, 2, 0.25, 4, 1.0
    c0 = np.random.default_rng(1).standard_normal((N, d)) * 2
    c = ((1 + m - 1) / (1 - p) - 1) / r**2
    u = beta / N * (3 * c0.mean(axis=0)[None] - A.T @ c0)  # u_j = h_j - (l/N) grad L
    M, M_G = c * (u**2).sum(), 1 + c * n * 9 / N**2
    for theta in (c0.mean(axis=0), c0.mean(axis=0) + np.array([1.0, -2.0, 0.5, 3.0])):
        g = beta / N * (theta[None] - c0)
        grad = g.sum(axis=0)
        second = 0.0
        for signs in product([-1.0, 1.0], repeat=m * n):
            D = np.reshape(signs, (m, n))
            h = A.T @ g  # (n, d): worker sums
            sent = np.stack([sum(D[k, j] * h[j, k * 2 : k * 2 + 2] for k in range(m)) for j in range(n)])
            Fs = np.array(list(product([0.0, 1.0], repeat=n)))  # every mask, with its Bernoulli weight
            wF = np.prod(np.where(Fs > 0, 1 - p, p), axis=1) / 2 ** (m * n)
            est = np.einsum("fj,lj,jt->flt", Fs, D, sent) / ((1 - p) * r)
            second += float(wF @ (est**2).sum(axis=(1, 2)))
        assert second == pytest.approx(M + M_G * float(grad @ grad), rel=1e-12)


def test_sgd_bound_exceeds_the_exact_expectation_by_the_final_gap():
    # Theorem 7's proof is an equality here but for E L(theta_{T+1}) >= L*: bound - E avg = 2 (E L_{T+1} - L*) / (T eta)
    from gcsim.app.stages import agc_paper_checks as ck

    P = ck.sgd_problem()
    a = 2 * P.beta * P.gap()
    seq = []
    for _ in range(60):
        seq.append(a)
        a = (1 - P.eta * P.beta) ** 2 * a + (P.eta * P.beta) ** 2 * (P.M + (P.M_G - 1) * a)
    for T in (1, 5, 20, 59):
        assert P.expected(T) == pytest.approx(np.mean(seq[:T]), rel=1e-12)
        final_gap = seq[T] / (2 * P.beta)
        assert P.bound(T) - P.expected(T) == pytest.approx(2 * final_gap / (T * P.eta), rel=1e-9)


def test_srg_edges_by_counting_pairs():
    from gcsim.app.stages import agc_paper_checks as ck

    inst = ck.SRG_INSTANCES[0]
    A = ck.srg_assignment(inst)
    masks = np.random.default_rng(2).random((5, A.shape[1])) > 0.4
    for mask, e in zip(masks, ck.srg_edges(inst, masks), strict=True):
        F = np.flatnonzero(mask)
        assert e == sum(1 for a in F for b in F if a < b and A[a, b])
