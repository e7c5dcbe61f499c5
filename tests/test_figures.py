"""Every plotting function, on small synthetic data made to provoke the defects of issue #12 §7.

The data put curves exactly (or within 1 %) on top of each other, make an exact method's error 0 or
1e-31, and add a family whose condition number is 1e19.  The checks are computed here from the
drawn artists, not from ``gcsim._plotting``:

* no two lines with (nearly) the same data and the same style, and where two coincide the one
  drawn on top is narrower or broken (dashed), so the one underneath shows;
* every text, and the figure's tight bounding box, inside the figure after drawing (no clipping);
* no literal ``_{`` or ``^{`` outside ``$...$`` (raw TeX instead of rendered maths);
* no legend over a line (sampled along every segment, in display coordinates);
* log axes not stretched by zeros / round-off / off-scale points beyond a stated factor.
"""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from gcsim.app.stages.cerar import _plot_eps, _plot_front  # noqa: E402
from gcsim.app.stages.training import _plot, _plot_error, _plot_precision, _precision_table  # noqa: E402
from gcsim.coding.experiments import plot_error_curves, plot_instability  # noqa: E402
from gcsim.learning.ddp_cerar import plot_ddp  # noqa: E402

#: an off-scale family may leave the axis at most this factor beyond the data that matters
STRETCH = 100.0
#: a floor for zeros / round-off sits at most two decades under the smallest genuine value (plus margins)
FLOOR_STRETCH = 1000.0


# ---------------------------------------------------------------------------- synthetic data


def error_frame() -> pd.DataFrame:
    """Two schemes 0.5 % apart and their two upper bounds identical (the coset (27,2,5) case)."""
    rows = []
    for sweep, xs in (("s", [0, 4, 8, 12]), ("p", [0.0, 0.1, 0.2, 0.3])):
        for i, x in enumerate(xs):
            base = 0.05 * (i + 1)
            for curve, kind, mean in (
                ("RD(0.1)", "scheme", base),
                ("RD(0) Rademacher", "scheme", base * 1.005),
                ("upper bound (RD(0.1))", "upper", base + 0.1),
                ("upper bound (RD(0) Rademacher)", "upper", base + 0.1),
                ("naive stacking", "baseline", 0.5),
                ("rank lower bound", "lower", 0.0),
                ("exact family (Gaussian H, s=8)" if sweep == "p" else "exact family (Gaussian H)", "baseline", 0.0),
            ):
                rows.append(
                    dict(sweep=sweep, x=x, curve=curve, kind=kind, mean=mean, ci_low=mean - 0.01, ci_high=mean + 0.01)
                )
    return pd.DataFrame(rows)


def instability_frame() -> pd.DataFrame:
    rows = []
    for n in (8, 12, 16):
        for kind, kappa in (("vandermonde", 10.0**n), ("gaussian", 30.0)):
            for dt, err in (("float64", 0.0 if n == 8 else 1e-28), ("float32", 1e-12)):
                rows.append(dict(n=n, H=kind, dtype=dt, kappa=kappa, error=err, constructible=True))
    rows.append(dict(n=20, H="vandermonde", dtype="float64", kappa=np.nan, error=np.nan, constructible=False))
    return pd.DataFrame(rows)


def pareto_frame() -> pd.DataFrame:
    eps = np.logspace(-5, -1, 20)
    rows = [dict(N=4, c=8, family="perturbation", eps=e, kappa_max=1 / e, frobenius=e**2) for e in eps]
    rows += [dict(N=4, c=8, family="optimized", eps=np.nan, kappa_max=k, frobenius=1 / k**2) for k in (3, 10, 30)]
    # the Vandermonde family: κ from 1e9 to 1e19 (the defect: it stretched the κ axis over 19 decades)
    rows += [dict(N=4, c=8, family="vandermonde", eps=np.nan, kappa_max=10.0**k, frobenius=1.0) for k in (9, 14, 19)]
    return pd.DataFrame(rows)


def eps_sweeps() -> list[SimpleNamespace]:
    eps = np.logspace(-7, -0.5, 14)
    exact = 2.5 * eps
    out = []
    for dtype, u in (("float64", 2.0**-53), ("float32", 2.0**-24), ("bfloat16", 2.0**-8)):
        # float64 equals exact arithmetic at every ε: the line hid under the reference before
        err = exact if dtype == "float64" else exact + u / eps
        out.append(
            SimpleNamespace(dtype=dtype, eps=eps, error=err, exact_error=exact, unit_roundoff=u, predicted_eps=u**0.5)
        )
    return out


def history_frame() -> pd.DataFrame:
    rows = []
    it = np.arange(0, 60, 5)
    for label, err in (("uncoded", 0.3), ("NS m=2", 0.1), ("NS copy", 0.1), ("fractional repetition", 1e-31)):
        for i in it:
            rows.append(
                dict(
                    label=label,
                    iteration=i,
                    wallclock=0.02 * i,
                    train_loss=np.exp(-i / 20),
                    test_acc=1 - np.exp(-i / 10),
                    rel_error=err * (1 + 0.1 * np.sin(i)),
                )
            )
    return pd.DataFrame(rows)


def precision_frame() -> pd.DataFrame:
    """Four codes whose float32 curves coincide, one that diverges in bfloat16 (inf loss) and one off scale."""
    rows = []
    it = np.arange(0, 60, 10)
    for label, err in (
        ("RD(0)", 0.03),
        ("NS", 0.01),
        ("NS copy", 0.01),
        ("exact Gaussian", 1e-30),
        ("Vandermonde", 1e-8),
    ):
        for precision in ("float64", "float32", "bfloat16"):
            for i in it:
                loss = np.exp(-i / 20)
                rel = err
                if label == "Vandermonde" and precision != "float64":
                    rel = 0.1 if precision == "float32" else 1e4
                    loss = loss if precision == "float32" else (np.inf if i >= 40 else 10.0 ** (i / 5))
                rows.append(
                    dict(
                        label=label,
                        precision=precision,
                        seed=0,
                        iteration=i,
                        train_loss=loss,
                        test_acc=0.9,
                        rel_error=rel * (1 + 0.1 * np.sin(i)),
                    )
                )
    return pd.DataFrame(rows)


def _precision_figure(path=None):
    frame = precision_frame()
    return _plot_precision(frame, _precision_table(frame), path, "precision experiment")


def ddp_frame() -> pd.DataFrame:
    rows = []
    for label, drift in (("exact all-reduce", 0.0), ("CERAR exact, c = 4", 0.0), ("CERAR perturbation", 1e-2)):
        for step in range(0, 50, 10):
            for rank in range(2):
                acc = 1 - np.exp(-step / 10) - (1e-3 if label == "CERAR perturbation" and step else 0.0)
                rows.append(dict(label=label, step=step, rank=rank, test_acc=acc, drift=drift * step))
    return pd.DataFrame(rows)


FIGURES = {
    "error_curves": lambda path=None: plot_error_curves(error_frame(), "(b) coset graph, $n$ = 54", path),
    "instability": lambda path=None: plot_instability(instability_frame(), path),
    "pareto": lambda path=None: _plot_front(pareto_frame(), path),
    "epsilon_sweep": lambda path=None: _plot_eps(eps_sweeps(), path),
    "training": lambda path=None: _plot(history_frame(), path),
    "decoding_error": lambda path=None: _plot_error(history_frame(), path),
    "ddp": lambda path=None: plot_ddp(ddp_frame(), path),
    "precision": _precision_figure,
}


@pytest.fixture(scope="module", params=sorted(FIGURES))
def drawn(request):
    fig = FIGURES[request.param]()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return request.param, fig, canvas.get_renderer()


# ---------------------------------------------------------------------------- checks


def _lines(ax):
    return [ln for ln in ax.get_lines() if ln.get_visible() and len(np.atleast_1d(ln.get_xdata())) > 0]


def _style(ln):
    return (
        str(ln.get_color()),
        str(ln.get_linestyle()),
        str(ln.get_marker()),
        round(float(ln.get_linewidth()), 3),
        round(float(ln.get_markersize()), 3),
        str(ln.get_markerfacecolor()),
    )


def _same_data(a, b) -> bool:
    xa, ya = (np.asarray(v, dtype=float) for v in a.get_data())
    xb, yb = (np.asarray(v, dtype=float) for v in b.get_data())
    if xa.shape != xb.shape or ya.shape != yb.shape:
        return False
    return bool(np.allclose(xa, xb, rtol=1e-2, atol=0) and np.allclose(ya, yb, rtol=1e-2, atol=0))


def test_coinciding_lines_stay_visible(drawn):
    name, fig, _ = drawn
    for ax in fig.axes:
        lines = _lines(ax)
        for i, j in itertools.combinations(range(len(lines)), 2):
            a, b = lines[i], lines[j]
            if not _same_data(a, b):
                continue
            assert _style(a) != _style(b), f"{name}: {a.get_label()!r} and {b.get_label()!r} drawn identically"
            # the line drawn later at equal zorder, or at higher zorder, is on top
            top, under = (b, a) if (b.get_zorder(), j) > (a.get_zorder(), i) else (a, b)
            narrower = top.get_linewidth() < under.get_linewidth()
            broken = top.get_linestyle() not in ("-", "solid")
            assert narrower or broken or top.get_linestyle() == "None", (
                f"{name}: {top.get_label()!r} hides {under.get_label()!r} (same data, as wide, solid, on top)"
            )


def test_nothing_is_clipped(drawn):
    name, fig, renderer = drawn
    w, h = fig.bbox.width, fig.bbox.height
    tight = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    assert tight.x0 >= -1 and tight.y0 >= -1 and tight.x1 <= w + 1 and tight.y1 <= h + 1, (name, tight, w, h)
    ticks = {id(t) for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()}
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or id(t) in ticks:
            continue
        box = t.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= w + 1 and box.y1 <= h + 1, (
            f"{name}: text {t.get_text()!r} at {box} outside the {w}x{h} figure"
        )


def test_no_raw_tex_outside_mathtext(drawn):
    name, fig, _ = drawn
    for t in fig.findobj(Text):
        outside = re.sub(r"\$[^$]*\$", "", t.get_text())
        assert "_{" not in outside and "^{" not in outside, f"{name}: raw TeX in {t.get_text()!r}"


def test_legends_cover_no_line(drawn):
    name, fig, renderer = drawn
    for leg in fig.findobj(Legend):
        box = leg.get_window_extent(renderer).padded(-1)
        for ax in fig.axes:
            for ln in _lines(ax):
                xy = ln.get_transform().transform(np.column_stack(ln.get_data()).astype(float))
                xy = xy[np.all(np.isfinite(xy), axis=1)]
                if len(xy) > 1:  # sample every segment, not only the vertices
                    t = np.linspace(0, 1, 25)[:, None, None]
                    xy = (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)
                inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
                assert not inside.any(), f"{name}: the legend covers {ln.get_label()!r}"


# ---------------------------------------------------------------------------- log axes


def test_off_scale_family_does_not_stretch_the_kappa_axis():
    fig = _plot_front(pareto_frame(), None)
    (ax,) = fig.axes
    main = pareto_frame().query("family != 'vandermonde'")["kappa_max"].max()
    assert ax.get_xscale() == "log"
    assert ax.get_xlim()[1] <= STRETCH * main  # was 1e19 / 1e5 = 1e14 times the main data
    # the off-scale points are still there, at the edge, and their true κ range is written
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("3 points off scale" in s and "10^{19}" in s for s in labels), labels
    edge = [ln for ln in ax.get_lines() if "off scale" in ln.get_label()]
    assert len(edge) == 1 and np.allclose(edge[0].get_xdata(), ax.get_xlim()[1])


def test_zero_and_round_off_errors_sit_on_a_stated_floor():
    fig = _plot_error(history_frame(), None)
    (ax,) = fig.axes
    lo = ax.get_ylim()[0]
    smallest = 0.1 * 0.9  # the smallest genuine running mean in history_frame
    assert smallest / lo <= FLOOR_STRETCH, f"axis goes down to {lo:g} for data at {smallest:g}"
    # the exact code is drawn (at the floor) and the label says so
    exact = [ln for ln in ax.get_lines() if ln.get_label() == "fractional repetition"]
    assert exact and np.all(exact[0].get_ydata() > lo)
    assert "drawn at it" in ax.get_ylabel() and "round-off" in ax.get_ylabel()


def test_zero_drift_and_zero_error_floors():
    fig = plot_ddp(ddp_frame(), None)
    drift_ax = fig.axes[2]
    smallest = ddp_frame().query("drift > 0")["drift"].min()
    assert drift_ax.get_yscale() == "log" and smallest / drift_ax.get_ylim()[0] <= FLOOR_STRETCH
    assert "drawn at it" in drift_ax.get_ylabel()
    fig = plot_instability(instability_frame(), None)
    err_ax = fig.axes[1]
    assert 1e-28 / err_ax.get_ylim()[0] <= FLOOR_STRETCH and "drawn at it" in err_ax.get_ylabel()


def test_difference_panel_separates_equal_accuracies():
    # the accuracies agree to 1e-3: the second panel shows the difference to the first run, in points
    fig = plot_ddp(ddp_frame(), None)
    diff = {ln.get_label(): np.asarray(ln.get_ydata()) for ln in fig.axes[1].get_lines()}
    assert np.allclose(diff["exact all-reduce"], 0) and np.allclose(diff["CERAR exact, c = 4"], 0)
    assert np.allclose(diff["CERAR perturbation"][1:], -0.1)  # 1e-3 accuracy = 0.1 percentage points


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_saved_as_png(name, tmp_path):
    path = tmp_path / "f"  # no suffix: the stages save through a temporary name
    FIGURES[name](path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_legend_entries_are_distinguishable(drawn):
    """No two entries of a legend share colour, line style and marker (pg2_9.png had two)."""
    name, fig, _ = drawn
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for legend in legends:
        seen: dict[tuple, str] = {}
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if not hasattr(handle, "get_marker"):
                continue
            key = (str(handle.get_color()), str(handle.get_linestyle()), str(handle.get_marker()))
            assert key not in seen, f"{name}: {text.get_text()!r} looks like {seen[key]!r}"
            seen[key] = text.get_text()


def test_every_figure_has_a_title(drawn):
    name, fig, _ = drawn
    titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    titles += [ax.get_title() for ax in fig.axes]
    assert any(t.strip() for t in titles), name


def test_accuracy_panels_separate_close_accuracies():
    """The lower row shows 1 - accuracy on a log axis: codes a few points apart near 1 stay apart."""
    fig = _plot(history_frame())
    for ax in fig.axes[2:4]:
        assert ax.get_yscale() == "log" and "1 - accuracy" in ax.get_ylabel()
