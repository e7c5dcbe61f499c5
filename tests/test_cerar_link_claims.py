"""The claims rows of the ``cerar-training`` stage (issue #32 items 1 and 5): each can fail.

The rows come from :func:`gcsim.learning.cerar_links.link_claims` over a
:func:`summarize_links` summary.  Planted timings show a row turning to "does not hold" when the
CERAR variant is slower (a planted slow implementation), to "not shown" when seeds disagree, and to
"holds" only when every seed's ratio lies well above 1; the expected intervals are computed here
from SciPy's Student-t quantile, not by the code under test.  The stage itself runs with the link
experiment replaced by a planted summary (no emulated links needed).
"""

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

pytest.importorskip("torch")

from gcsim.learning import cerar_links  # noqa: E402
from gcsim.learning.cerar_links import link_claims, summarize_links  # noqa: E402


def _timing(variant: str, seed: int, step: float, delay: str = "1ms") -> dict:
    return {
        "parameters": 1_000,
        "width": 8,
        "link": "100mbit",
        "delay": delay,
        "variant": variant,
        "seed": seed,
        "step_median_s": step,
        "payload_bytes_per_step": 100.0,
        "payload_formula_bytes_per_step": 100,
        "wire_bytes_per_step": None,
        "load_before": 0.5,
        "load_after": 0.6,
    }


def _summary(ring_steps, cerar_steps, ring_hits, cerar_hits):
    timing = [_timing("ring", s, t) for s, t in enumerate(ring_steps)]
    timing += [_timing("optimized c=16", s, t) for s, t in enumerate(cerar_steps)]
    accuracy = [{"width": 8, "variant": "ring", "seed": s, "step_at_target": h} for s, h in enumerate(ring_hits)]
    accuracy += [
        {"width": 8, "variant": "optimized c=16", "seed": s, "step_at_target": h} for s, h in enumerate(cerar_hits)
    ]
    return summarize_links(timing, accuracy)


def _t_interval(values):
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def test_claim_holds_when_every_seed_is_faster_and_matches_an_independent_interval():
    ring, cerar = [0.20, 0.22, 0.21], [0.15, 0.16, 0.15]
    (row,) = link_claims(_summary(ring, cerar, [40, 36, 48], [40, 36, 48]))
    ratios = [r / c for r, c in zip(ring, cerar, strict=True)]  # equal steps: time ratio = step ratio
    mean, lo, hi = _t_interval(ratios)
    assert row["measure"] == "time to target" and row["seeds"] == 3
    assert row["ring_over_variant"] == pytest.approx(mean, rel=1e-12)
    assert (row["lo"], row["hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    assert lo > 1.0 and row["verdict"] == "holds"


def test_claim_fails_on_a_planted_slow_implementation():
    # the same run with the CERAR step 30 % slower than the ring on every seed
    ring = [0.20, 0.22, 0.21]
    (row,) = link_claims(_summary(ring, [1.3 * t for t in ring], [40, 36, 48], [40, 36, 48]))
    assert row["hi"] < 1.0 and row["verdict"] == "does not hold"


def test_claim_fails_when_cerar_needs_more_steps():
    # a faster step does not rescue a design whose noise costs 60 % more steps to the target
    ring, cerar = [0.20, 0.22, 0.21], [0.18, 0.20, 0.19]
    (row,) = link_claims(_summary(ring, cerar, [40, 36, 48], [64, 58, 77]))
    assert row["verdict"] == "does not hold"


def test_claim_not_shown_when_seeds_disagree():
    (row,) = link_claims(_summary([0.20, 0.20, 0.20], [0.15, 0.26, 0.19], [40, 40, 40], [40, 40, 40]))
    assert row["lo"] < 1.0 < row["hi"] and row["verdict"] == "not shown"


def test_claim_per_step_when_the_target_is_not_reached_for_the_model():
    summary = _summary([0.20, 0.22, 0.21], [0.15, 0.16, 0.15], [], [])
    (row,) = link_claims(summary)
    assert row["measure"] == "per step" and row["verdict"] == "holds"


def test_stage_writes_claims_from_the_experiment(tmp_path: Path, monkeypatch):
    from gcsim.app.stages import cerar_training as stage
    from gcsim.executor import netem

    summary = _summary([0.20, 0.22, 0.21], [1.3 * t for t in (0.20, 0.22, 0.21)], [40, 36, 48], [40, 36, 48])
    seen = {}

    def fake_experiment(out, *, plan, design_cache, manifest_name, progress):
        seen["plan"] = plan
        return {"summary": summary, "manifest": {"files": ["summary.csv"]}}

    monkeypatch.setattr(netem, "netem_available", lambda: (True, ""))
    monkeypatch.setattr(cerar_links, "links_experiment", fake_experiment)
    res = stage.cerar_training_stage(tmp_path, full=False, seed=0, progress=False)
    assert seen["plan"] is cerar_links.STAGE_LINKS
    table = pd.read_csv(tmp_path / "claims.csv")
    assert list(table["verdict"]) == ["does not hold"]
    assert "does not hold" in res["text"] and "claims.csv" in res["files"]
    stage.cerar_training_stage(tmp_path, full=True, seed=0, progress=False)
    assert seen["plan"] is cerar_links.LINKS


def test_stage_plan_is_a_cut_of_the_full_plan():
    quick, full = cerar_links.STAGE_LINKS, cerar_links.LINKS
    assert quick["seeds"] == full["seeds"] and len(quick["seeds"]) >= 3
    assert quick["delays"] == full["delays"] and quick["target"] == full["target"]
    assert set(quick["accuracy"]["variants"]) <= set(full["accuracy"]["variants"])
    for t in quick["timing"]:
        assert any(f["width"] == t["width"] and f["rate"] == t["rate"] for f in full["timing"])
