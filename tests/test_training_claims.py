"""The training stage's claim 1 like for like (issue #32 item 4): equal bytes a step, seeds, intervals.

Claim 1 (the paper's m = 2 codes reach the target loss sooner) is three comparisons on each clock:
against the paper's m = 1 baselines (twice the bytes a step, labelled so), and at equal bytes against
naive stacking and the exact m = 2 codes.  Each is a t-interval over seeds of the per-seed difference
"slowest paper code - fastest baseline"; the row holds only when the interval lies below 0.

Here: the rules on made-up tables against an independent computation (the per-seed differences by
hand, the interval from scipy), censoring, and a planted fault per row on tiny real runs (digits,
MLP 64-16-10, 5 seeds), each turning a holding row to "not shown" (or, for the row that is not shown
unperturbed, moving it: the row is not stuck).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
stats = pytest.importorskip("scipy.stats")

from gcsim.app.stages import training as tr  # noqa: E402
from gcsim.learning.models import MLP  # noqa: E402
from gcsim.learning.train import WallClockModel  # noqa: E402

#: the module itself (the package attribute ``gcsim.learning.train`` is the function)
train_module = importlib.import_module("gcsim.learning.train")
SEEDS = [0, 1, 2, 3, 4]
#: the encoders of the exact m = 2 baselines (tr.EXACT_M2)
EXACT_METHODS = ("exact-gaussian", "exact-vandermonde")
CODES = (*tr.PAPER_CODES, *tr.M1_BASELINES, *tr.M2_BASELINES, *tr.EXACT_M2)


def _table(times: dict[str, list[float]], clock: str = "bernoulli", end: float = 100.0) -> pd.DataFrame:
    """A made-up time-to-target table: NaN is a censored run that ended at ``end``."""
    rows = []
    for label, per_seed in times.items():
        m = 1 if label in tr.M1_BASELINES else 2
        for seed, t in zip(SEEDS, per_seed, strict=True):
            rows.append(
                {
                    "clock": clock,
                    "label": label,
                    "m": m,
                    "bytes_per_step": 16 * 1000 // m * 4,
                    "seed": seed,
                    "wallclock_to_target": t,
                    "iterations_to_target": t,
                    "censored": bool(np.isnan(t)),
                    "end_clock": end,
                }
            )
    return pd.DataFrame(rows)


def _both_clocks(times: dict[str, list[float]], end: float = 100.0) -> pd.DataFrame:
    return pd.concat([_table(times, "bernoulli", end), _table(times, "delay", end)], ignore_index=True)


def _precision() -> pd.DataFrame:
    rows = [
        {"label": c, "precision": pr, "mean_rel_error": 1.0, "diverged": 0, "seeds": 1}
        for c in (*tr.STRUCTURED, tr.INTERPOLATION)
        for pr in ("float64", "float32", "bfloat16")
    ]
    return pd.DataFrame(rows)


def _claim1(ttt: pd.DataFrame, tag: str, clock: str = "Bernoulli") -> pd.Series:
    claims = tr._claims(ttt, _precision())
    hit = claims[claims.claim.str.startswith(f"{tag}.") & claims.claim.str.endswith(f"({clock} clock)")]
    assert len(hit) == 1, (tag, clock)
    return hit.iloc[0]


def _by_hand(times: dict[str, list[float]], codes, baselines, end: float = 100.0):
    """Per seed max over codes - min over baselines (censored at ``end``), its mean and scipy's 95 % t-interval."""
    diffs = []
    for k in range(len(SEEDS)):
        slowest = max(end if np.isnan(times[c][k]) else times[c][k] for c in codes)
        fastest = min(end if np.isnan(times[b][k]) else times[b][k] for b in baselines)
        diffs.append(slowest - fastest)
    d = np.array(diffs)
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    return d.mean(), low, high


def _times(paper, m1, m2, exact) -> dict[str, list[float]]:
    out = {c: list(paper) for c in tr.PAPER_CODES}
    out.update({c: list(m1) for c in tr.M1_BASELINES})
    out.update({c: list(m2) for c in tr.M2_BASELINES})
    out.update({c: list(exact) for c in tr.EXACT_M2})
    return out


def test_claim1_rows_against_scipy_intervals():
    paper = [4.0, 4.2, 3.9, 4.1, 4.4]
    times = _times(paper, [8.1, 8.5, 7.9, 8.0, 8.6], [5.0, 4.1, 5.3, 4.0, 5.1], [4.1, 4.4, 3.8, 4.0, 4.6])
    times["coset (8,2,3) RD(0.1) m=2"] = [4.3, 4.0, 4.4, 4.5, 4.2]  # the slowest paper code differs by seed
    ttt = _both_clocks(times)
    for tag, baselines, verdict in (
        ("1a", tr.M1_BASELINES, "holds"),
        ("1b", tr.M2_BASELINES, "not shown"),
        ("1c", tr.EXACT_M2, "not shown"),
    ):
        mean, low, high = _by_hand(times, tr.PAPER_CODES, baselines)
        for clock in ("Bernoulli", "delay-model"):
            row = _claim1(ttt, tag, clock)
            np.testing.assert_allclose([row.value, row.low, row.high], [mean, low, high], rtol=1e-12)
            assert row.verdict == verdict and row.holds == (verdict == "holds") and row.seeds == 5
    # the labels carry the bytes a step: m = 2 codes half of the m = 1 baselines'
    row = _claim1(ttt, "1a")
    assert "0.032 MB a step" in row.claim and "0.064 MB a step" in row.claim and "unequal bytes" in row.claim
    assert "at equal bytes (0.032 MB a step)" in _claim1(ttt, "1b").claim


def test_claim1_does_not_hold_when_the_interval_is_above_zero():
    times = _times([6.0, 6.1, 5.9, 6.2, 6.0], [8.0] * 5, [5.0, 5.1, 4.8, 5.2, 4.9], [5.5, 5.4, 5.6, 5.5, 5.3])
    ttt = _both_clocks(times)
    assert _claim1(ttt, "1b").verdict == "does not hold" and _claim1(ttt, "1c").verdict == "does not hold"
    assert _claim1(ttt, "1a").verdict == "holds"


def test_censored_runs():
    """A paper code that never reached the target forbids "holds"; a censored baseline counts at its end time."""
    times = _times([4.0, 4.2, 3.9, 4.1, 4.4], [8.1, 8.5, 7.9, 8.0, 8.6], [5.0] * 5, [5.0] * 5)
    times["NS m=2"] = [4.0, np.nan, 3.9, 4.1, 4.4]  # never reached on seed 1, the run ended at 4.5 s
    row = _claim1(_both_clocks(times, end=4.5), "1a")
    assert row.low < row.high < 0 and row.verdict == "not shown" and "1 paper-code and 0 baseline runs" in row.measure
    times = _times([4.0, 4.2, 3.9, 4.1, 4.4], [8.1, 8.5, np.nan, 8.0, 8.6], [5.0] * 5, [5.0] * 5)
    row = _claim1(_both_clocks(times, end=9.0), "1a")
    mean, low, high = _by_hand(times, tr.PAPER_CODES, tr.M1_BASELINES, end=9.0)
    np.testing.assert_allclose([row.value, row.low, row.high], [mean, low, high], rtol=1e-12)
    assert row.verdict == "holds" and "0 paper-code and 2 baseline runs" in row.measure  # both m = 1 baselines


def test_summary_and_comparisons_tables():
    times = _times([4.0, 4.2, 3.9, 4.1, 4.4], [8.1, 8.5, 7.9, 8.0, 8.6], [5.0, 4.1, 5.3, 4.0, 5.1], [4.0] * 5)
    ttt = _both_clocks(times)
    comp = tr._comparisons(ttt)
    assert len(comp) == 2 * len(tr.PAPER_CODES) * (len(CODES) - len(tr.PAPER_CODES))
    row = comp[(comp.clock == "delay") & (comp.code == "NS m=2") & (comp.baseline == "naive stacking m=2")].iloc[0]
    d = np.array(times["NS m=2"]) - np.array(times["naive stacking m=2"])
    low, high = stats.t.interval(0.95, 4, loc=d.mean(), scale=stats.sem(d))
    np.testing.assert_allclose([row["mean"], row.low, row.high], [d.mean(), low, high], rtol=1e-12)
    assert row.verdict == "not shown" and row.code_bytes_per_step == row.baseline_bytes_per_step == 32000
    row = comp[(comp.clock == "bernoulli") & (comp.code == "RD(0) m=2") & (comp.baseline == tr.M1_BASELINES[0])]
    assert row.verdict.iloc[0] == "sooner" and row.baseline_bytes_per_step.iloc[0] == 64000


# ----------------------------------------------------------------------------------------------
# planted faults on tiny real runs: every claim-1 row can change its verdict
# ----------------------------------------------------------------------------------------------

#: target loss of the tiny runs (digits, MLP 64-16-10: the codes reach it at iteration 20-45 of 60)
TINY_TARGET = 0.3


def _tiny_ttt() -> pd.DataFrame:
    from gcsim.learning.datasets import load_digits

    ds = load_digits(seed=0)
    model = MLP((ds.n_features, 16, ds.n_classes))
    ttt, _ = tr.claim_runs(ds, model, SEEDS, target=TINY_TARGET, iterations=60, batch=16, every=5)
    return ttt


@pytest.fixture(scope="module")
def tiny_ttt():
    pytest.importorskip("sklearn")
    return _tiny_ttt()


def _verdicts(ttt: pd.DataFrame) -> dict[tuple[str, str], str]:
    return {
        (tag, clock): _claim1(ttt, tag, clock).verdict
        for tag in ("1a", "1b", "1c")
        for clock in ("Bernoulli", "delay-model")
    }


def test_tiny_runs_unperturbed(tiny_ttt):
    assert not tiny_ttt.censored.any() and set(tiny_ttt.seed) == set(SEEDS)
    v = _verdicts(tiny_ttt)
    assert v[("1a", "Bernoulli")] == v[("1a", "delay-model")] == "holds"
    assert v[("1b", "Bernoulli")] == v[("1b", "delay-model")] == "holds"
    assert v[("1c", "Bernoulli")] == v[("1c", "delay-model")] == "not shown"  # the exact codes tie with RD
    # stopped runs: each seed's time is its first evaluation at or below the target, as in a full-length run
    full, _ = tr.claim_runs(
        *_digits_model(), [3], target=TINY_TARGET, iterations=60, batch=16, every=5, curve_seeds=[3], codes=_ns_only()
    )
    stopped = tiny_ttt[(tiny_ttt.seed == 3) & (tiny_ttt.label == "NS m=2")]
    for clock in ("bernoulli", "delay"):
        a = full[full.clock == clock].iloc[0]
        b = stopped[stopped.clock == clock].iloc[0]
        assert (a.wallclock_to_target, a.iterations_to_target) == (b.wallclock_to_target, b.iterations_to_target)


def _digits_model():
    from gcsim.learning.datasets import load_digits

    ds = load_digits(seed=0)
    return ds, MLP((ds.n_features, 16, ds.n_classes))


def _ns_only():
    from gcsim.learning.experiments import default_codes

    return [c for c in default_codes() if c.label == "NS m=2"]


def test_fault_clock_charges_m2_codes_the_m1_message(tiny_ttt, monkeypatch):
    """Row 1a: a wall clock whose message time ignores m (the m = 2 codes pay for d scalars) is not "holds"."""
    orig = WallClockModel.message_time
    monkeypatch.setattr(WallClockModel, "message_time", lambda self, d, m: orig(self, d, 1))
    v = _verdicts(_tiny_ttt())
    assert v[("1a", "Bernoulli")] != "holds" and v[("1a", "delay-model")] != "holds", v


def test_fault_naive_stacking_runs_the_rd_encoder(tiny_ttt, monkeypatch):
    """Row 1b: a baseline that silently runs RD(0) (the naive encoder replaced) ties with it: "not shown"."""
    orig = train_module.encode

    def encode(A, m, method="naive", *args, **kwargs):
        return orig(A, m, "rd" if method == "naive" and m == 2 else method, *args, **kwargs)

    monkeypatch.setattr(train_module, "encode", encode)
    v = _verdicts(_tiny_ttt())
    assert v[("1b", "Bernoulli")] == v[("1b", "delay-model")] == "not shown", v


def test_fault_exact_codes_fall_back_to_naive_stacking(tiny_ttt, monkeypatch):
    """Row 1c (not shown unperturbed): exact codes whose encoder falls back to naive stacking lose: "holds"."""
    orig = train_module.encode

    def encode(A, m, method="naive", *args, **kwargs):
        if method in EXACT_METHODS:
            kwargs.pop("s", None)
            return orig(A, m, "naive", *args, **kwargs)
        return orig(A, m, method, *args, **kwargs)

    monkeypatch.setattr(train_module, "encode", encode)
    v = _verdicts(_tiny_ttt())
    assert v[("1c", "Bernoulli")] == v[("1c", "delay-model")] == "holds", v
