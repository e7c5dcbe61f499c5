"""AGC experiment curves and the reproduce job (small instances, independent checks)."""
import json

import numpy as np
import pytest

import gcsim
from gcsim.coding.experiments import (InstanceSpec, SchemeSpec, error_curves, exact_family_instability,
                                      plot_error_curves)
from gcsim.coding.stragglers import straggler_model


@pytest.fixture(scope="module")
def small_frame():
    A = gcsim.srg(13, 6, 2, 3).assignment  # closed Paley(13): r = 7
    spec = InstanceSpec("paley13", "test", A, 2,
                        [SchemeSpec("RD(0)", "rd", {"eps": 0.0}, upper="rd"), SchemeSpec("naive", "naive")],
                        s_values=[0, 3, 6], p_values=[0.2])
    return A, error_curves(spec, samples=30, seeds=2, seed=5)


def test_curve_table_shape(small_frame):
    _, frame = small_frame
    assert set(frame.sweep) == {"s", "p"}
    assert set(frame.kind) == {"scheme", "baseline", "lower", "upper"}
    assert np.all(frame.ci_low <= frame["mean"] + 1e-15) and np.all(frame["mean"] <= frame.ci_high + 1e-15)


def test_naive_point_matches_independent_lstsq(small_frame):
    A, frame = small_frame
    # recompute the naive curve at s = 3 on the same patterns with scipy
    from scipy.linalg import lstsq
    B = np.vstack([A, A]).astype(float)
    T = np.kron(np.eye(2), np.ones((13, 1)))
    vals = []
    for k in range(2):
        masks = straggler_model("fixed", 13, s=3).sample(30, 10_000 * (k + 1) + 5)
        for mask in masks:
            X = lstsq(B[:, mask], T)[0]
            vals.append(np.sum((B[:, mask] @ X - T) ** 2) / 26)
    got = frame[(frame.sweep == "s") & (frame.x == 3) & (frame.curve == "naive")]["mean"].item()
    assert got == pytest.approx(np.mean(vals), rel=1e-10)


def test_bounds_sandwich_the_scheme(small_frame):
    _, frame = small_frame
    for (sweep, x), g in frame.groupby(["sweep", "x"]):
        lower = g[g.kind == "lower"]["mean"].item()
        assert (g[g.kind.isin(["scheme", "baseline"])]["mean"] >= lower - 1e-12).all()
        rd = g[g.curve == "RD(0)"].iloc[0]
        up = g[g.curve == "upper bound (RD(0))"].iloc[0]
        assert rd.ci_low <= up.ci_high  # the upper bound holds in expectation over draws


def test_exact_family_is_exact_where_feasible(small_frame):
    _, frame = small_frame
    ex = frame[frame.curve.str.startswith("exact family") & (frame.sweep == "s")]
    assert set(ex.x) == {0, 3}  # r = 7 >= s + m only for s <= 5
    assert (ex["mean"] < 1e-10).all()  # zero up to round-off


def test_plot_is_written(small_frame, tmp_path):
    _, frame = small_frame
    plot_error_curves(frame, "t", tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000


def test_vandermonde_condition_grows_faster_than_gaussian():
    f = exact_family_instability(n_values=(8, 16, 20), patterns=5)
    v = f[(f.H == "vandermonde") & (f.dtype == "float64")].set_index("n")["kappa"]
    g = f[(f.H == "gaussian") & (f.dtype == "float64")].set_index("n")["kappa"]
    assert v[20] > 1e5 and v[20] > 1000 * g[20]
    v32 = f[(f.H == "vandermonde") & (f.dtype == "float32")].set_index("n")["error"]
    assert v32[20] > 1e3 * v32[8]


def test_reproduce_catalogue_stage_is_resumable(tmp_path, capsys):
    from gcsim.reproduce import run_reproduce
    s1 = run_reproduce(tmp_path, stages=["catalogue"], progress=False)
    assert s1["ok"] and (tmp_path / "catalogue" / "catalogue.csv").exists()
    man = json.loads((tmp_path / "manifest.json").read_text())
    assert man["stages"]["catalogue"]["status"] == "ok" and man["provenance"]["gcsim_version"]
    s2 = run_reproduce(tmp_path, stages=["catalogue"], progress=False)
    assert s2["stages"]["catalogue"]["status"].startswith("skipped")
    s3 = run_reproduce(tmp_path, stages=["catalogue"], progress=False, force=True)
    assert s3["stages"]["catalogue"]["status"] == "ok"
    with pytest.raises(gcsim.InvalidArgumentError, match="stage"):
        run_reproduce(tmp_path, stages=["nope"], progress=False)
