"""The link experiment's summary files and results-page table, rebuilt offline (no training, no root).

:func:`gcsim.learning.cerar_links.refresh_summary` recomputes a run's summary from its per-run
CSV files; :func:`gcsim.learning.cerar_links.links_table` prints the page's table.  The ring is the
baseline every ratio divides by: its rows carry no ratio (``None``) and the table prints the word
``baseline`` where a measured ratio would stand.  The committed tables of
docs/results/cerar_training.md are checked against the committed summaries.
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from gcsim.errors import InvalidArgumentError
from gcsim.learning.cerar_links import BASELINE, links_table, refresh_summary, summarize_links

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "results" / "cerar_training"


def _timing(variant: str, seed: int, step: float, width: int = 8) -> dict:
    return {
        "parameters": 1_000 * width,
        "width": width,
        "link": "100mbit",
        "delay": "10ms",
        "variant": variant,
        "seed": seed,
        "step_median_s": step,
        "payload_bytes_per_step": None if variant == "ring" else 75.0,
        "payload_formula_bytes_per_step": 100,
        "wire_bytes_per_step": 104.5,
        "load_before": 0.5 + seed,
        "load_after": 0.75 + seed,
    }


def _planted():
    steps = {"ring": (0.5, 0.6, 0.55), "optimized c=16": (0.7, 0.8, 0.75)}
    timing = [_timing(v, s, t) for v, ts in steps.items() for s, t in enumerate(ts)]
    timing += [_timing(v, s, 2 * t, width=40) for v, ts in steps.items() for s, t in enumerate(ts)]
    accuracy = [{"width": 8, "variant": v, "seed": s, "step_at_target": 30 + s} for v in steps for s in range(3)]
    return timing, accuracy


def test_baseline_rows_print_the_label_not_a_ratio():
    summary = summarize_links(*_planted())
    lines = links_table(summary).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]]
    assert [r["variant"] for r in rows] == ["ring", "optimized c=16"] * 2
    for r in rows:
        ratios = (r["ring / variant, per step"], r["ring / variant, to 90 %"])
        if r["variant"] == "ring":
            assert ratios == (BASELINE, BASELINE) and r["verdict"] == ""
        else:
            assert BASELINE not in ratios and "1.00 [1.00, 1.00]" not in ratios
    assert "1.00 [1.00, 1.00]" not in "\n".join(lines)
    # two models: a parameters column; the larger has no accuracy runs, so no steps or time to target
    assert rows[0]["parameters"] == "0.01 M" and rows[2]["parameters"] == "0.04 M"
    assert rows[3]["steps to 90 %"] == "–" and rows[3]["ring / variant, to 90 %"] == "–"
    assert rows[3]["verdict"] == "ring sooner (per step)"
    # the variant's per-step ratio, seed by seed: 0.5/0.7, 0.6/0.8, 0.55/0.75
    mean = (0.5 / 0.7 + 0.6 / 0.8 + 0.55 / 0.75) / 3
    assert rows[1]["ring / variant, per step"].startswith(f"{mean:.2f} [")
    assert rows[1]["load average"] == "0.5–2.8" and rows[1]["wire MB / step"] == "0.00"


def test_one_model_has_no_parameters_column_and_the_target_is_named():
    timing, accuracy = _planted()
    table = links_table(summarize_links([t for t in timing if t["width"] == 8], accuracy), target=0.85)
    assert table.startswith("| link | one-way delay | variant | steps to 85 % |")


def test_refresh_summary_from_the_run_files_equals_the_summary(tmp_path: Path):
    timing, accuracy = _planted()
    accuracy[-1]["step_at_target"] = None  # a seed that never reached the target: an empty CSV cell
    pd.DataFrame(timing).to_csv(tmp_path / "timing.csv", index=False)
    pd.DataFrame(accuracy).to_csv(tmp_path / "accuracy.csv", index=False)
    expected = json.loads(json.dumps(summarize_links(timing, accuracy)))
    assert json.loads(json.dumps(refresh_summary(tmp_path))) == expected
    assert json.loads((tmp_path / "summary.json").read_text()) == expected
    flat = pd.read_csv(tmp_path / "summary.csv")
    ring = flat.variant == "ring"
    ratio_cols = [c for c in flat.columns if c.startswith(("step_ratio.", "time_ratio."))]
    assert len(ratio_cols) == 12 and flat.loc[ring, ratio_cols].isna().all().all()
    assert (flat.verdict[ring] == BASELINE).all()
    assert flat.loc[~ring & (flat.width == 40), "step_ratio.n"].tolist() == [3]


@pytest.mark.parametrize("run", ["links", "links_mnist_full"])
def test_committed_page_tables_are_the_committed_summaries(run: str):
    summary = json.loads((RUNS / run / "summary.json").read_text())
    target = json.loads((RUNS / run / "manifest.json").read_text())["plan"]["target"]
    page = (RUNS.parent / "cerar_training.md").read_text(encoding="utf-8")
    assert links_table(summary, target) in page
    assert all(r["step_ratio"] is None and r["verdict"] == BASELINE for r in summary if r["variant"] == "ring")


def test_bad_inputs_are_named(tmp_path: Path):
    with pytest.raises(InvalidArgumentError, match="folder.*timing.csv"):
        refresh_summary(tmp_path)
    with pytest.raises(InvalidArgumentError, match="target"):
        links_table(summarize_links(*_planted()), target=90)
