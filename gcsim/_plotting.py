"""Shared figure style for every plot gcsim draws (``gcsim reproduce``, docs/results).

The helpers keep the figure defects of issue #12 §7 from coming back:

* **overlapping curves stay visible** — :func:`curve_styles` gives each curve its own colour
  (a colour-blind-safe cycle), marker and line style, and *layers* them: the first curve is drawn
  widest and lowest, each later one narrower and on top, so a curve lying exactly on an earlier
  one shows as a thin line inside a wider band of another colour instead of hiding it;
  markers are staggered along long curves so they do not sit on the same points;
* **meaningful log floors** — :func:`plot_floored` draws values below a stated floor (zeros,
  round-off) *at* the floor with a down-pointing marker instead of stretching a log axis down to
  ``1e-31``; :func:`floor_label` writes the floor into the axis label;
* **off-scale points** — :func:`plot_off_scale` keeps a log axis on the data that matters and draws
  the points beyond its end as edge markers, with a note giving their true range;
* **no clipping** — :func:`new_figure` uses constrained layout (titles, labels and legends placed
  outside the axes are inside the saved image); :func:`legend_below` puts a legend under the axes,
  where it cannot cover a line;
* **rendered maths** — labels use matplotlib mathtext (``$\\sum_{i,m}$``), never raw ``_{``.

Figures are :class:`matplotlib.figure.Figure` objects made without :mod:`matplotlib.pyplot`: no
global figure registry to leak into, nothing to close, any number of them in one process, and the
plotting functions can return the figure for inspection (``tests/test_figures.py``).

Examples
--------
>>> import numpy as np
>>> fig, ax = new_figure()
>>> x = np.arange(5.0)
>>> styles = curve_styles(2, points=len(x))
>>> a = ax.plot(x, x, label="a", **styles[0])
>>> b = ax.plot(x, x, label="b (same data, still visible)", **styles[1])
>>> styles[0]["linewidth"] > styles[1]["linewidth"] and styles[0]["zorder"] < styles[1]["zorder"]
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "PALETTE",
    "MARKERS",
    "LINESTYLES",
    "OFF_SCALE_FACTOR",
    "new_figure",
    "curve_styles",
    "legend_below",
    "legend_under",
    "log_floor",
    "floor_label",
    "plot_floored",
    "plot_off_scale",
    "save",
]

#: Okabe–Ito colours (colour-blind safe, minus the low-contrast yellow) followed by four of Paul Tol's.
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#882255",
    "#117733",
    "#999933",
    "#332288",
)
#: one marker shape per curve (filled shapes first: they read at small sizes)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
#: solid, dashed, dash-dot, dotted, then two dash patterns
LINESTYLES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (3, 1, 1, 1)))
#: an axis kept on the main data ends at most this factor beyond it (:func:`plot_off_scale`)
OFF_SCALE_FACTOR = 100.0


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - matplotlib is in the plots extra
        raise ImportError("drawing figures needs matplotlib: pip install 'gcsim[plots]'") from exc
    return Figure


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = (6.4, 4.6), **subplots: Any):
    """A constrained-layout :class:`~matplotlib.figure.Figure` and its axes (as ``Figure.subplots`` returns them).

    Constrained layout makes room for titles, axis labels and legends placed outside the axes, so
    nothing is cut off at the edge of the saved image.

    >>> fig, axes = new_figure(1, 2, figsize=(8, 3), sharey=True)
    >>> len(axes), fig.get_layout_engine() is not None
    (2, True)
    """
    Figure = _figure_class()
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, ncols, **subplots)
    return fig, axes


def curve_styles(n: int, *, points: int | Sequence[int] = 0, layered: bool = True) -> list[dict[str, Any]]:
    """Keyword arguments for ``Axes.plot``/``errorbar``, one dict per curve, all pairwise distinct.

    Parameters
    ----------
    n : int
        Number of curves.
    points : int or sequence of int
        Points per curve (one number for all, or one per curve); above 12, markers are drawn
        every few points, at a different offset for each curve, so the markers of overlapping
        curves do not cover each other.
    layered : bool
        Curve ``k`` gets a smaller line width and marker size and a higher ``zorder`` than curve
        ``k - 1``, and every second curve hollow markers: a curve lying on an earlier one is
        drawn inside it and both stay visible.

    >>> s = curve_styles(3)
    >>> [d["marker"] for d in s], [d["linestyle"] for d in s]
    (['o', 's', '^'], ['-', '--', '-.'])
    >>> s[0]["linewidth"] > s[1]["linewidth"] > s[2]["linewidth"], s[1]["markerfacecolor"]
    (True, 'none')
    """
    counts = [int(points)] * n if isinstance(points, (int, np.integer)) else [int(p) for p in points]
    if len(counts) != n:
        raise ValueError(f"points: {len(counts)} counts for {n} curves")
    out = []
    for k in range(n):
        frac = (n - 1 - k) / (n - 1) if (layered and n > 1) else 0.0
        style: dict[str, Any] = {
            "color": PALETTE[k % len(PALETTE)],
            "marker": MARKERS[k % len(MARKERS)],
            "linestyle": LINESTYLES[k % len(LINESTYLES)],
            "linewidth": 1.1 + 2.6 * frac,
            "markersize": 4.0 + 5.0 * frac,
            "zorder": 2.0 + 0.01 * k,
        }
        if layered and k % 2:
            # hollow: the marker of the curve underneath shows through
            style.update(markerfacecolor="none", markeredgewidth=1.4)
        step = max(1, math.ceil(counts[k] / 10)) if counts[k] > 12 else 1
        if step > 1:
            style["markevery"] = ((k * max(1, step // max(n, 1))) % step, step)
        out.append(style)
    return out


def legend_below(fig, handles=None, labels=None, *, ncol: int = 3, fontsize: float = 8, **kw: Any):
    """One legend for the whole figure, under the axes (constrained layout makes room for it).

    Below the axes a legend cannot hide a curve; ``handles``/``labels`` default to the unique
    labelled artists of all the axes, in drawing order.
    """
    if handles is None:
        seen: dict[str, Any] = {}
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
        labels, handles = list(seen), list(seen.values())
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=fontsize, **kw)


def legend_under(ax, *, ncol: int = 2, fontsize: float = 8, **kw: Any):
    """The legend of one axes, under it (below its x label); constrained layout makes room for it."""
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=ncol, fontsize=fontsize, **kw)


def log_floor(values: Sequence[float] | np.ndarray, decades_below: int = 1, default: float = 1e-16) -> float:
    """A power of ten ``decades_below`` decades under the smallest positive finite value.

    >>> log_floor([0.0, 3e-7, 0.02])
    1e-08
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return default
    return float(10.0 ** (math.floor(math.log10(v.min())) - decades_below))


def _sci(x: float) -> str:
    """``1e-08`` as mathtext ``$10^{-8}$`` (powers of ten) or ``$2.2\\times10^{8}$``."""
    mant, exp = f"{x:.1e}".split("e")
    e = int(exp)
    return f"$10^{{{e}}}$" if mant == "1.0" else f"${mant}\\times10^{{{e}}}$"


def floor_label(label: str, floor: float, what: str = "values") -> str:
    """``label`` plus a note that ``what`` below ``floor`` are drawn at the floor with a ▼ marker.

    >>> floor_label("drift", 1e-8, "0")
    'drift\\n(0 and values below $10^{-8}$ drawn at it, ▼)'
    """
    return f"{label}\n({what} and values below {_sci(floor)} drawn at it, ▼)"


def plot_floored(ax, x, y, floor: float, **style: Any):
    """``ax.plot`` of ``max(y, floor)``; the clipped points get a down-pointing triangle at the floor.

    Returns the line.  The ▼ markers are data at the floor: autoscaling keeps them in view.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    below = ~(y > floor)  # NaN counts as below: drawn at the floor, not dropped silently
    (line,) = ax.plot(x, np.where(below, floor, y), **style)
    if below.any():
        ax.plot(
            x[below],
            np.full(int(below.sum()), floor),
            linestyle="none",
            marker="v",
            color=line.get_color(),
            markersize=max(4.0, float(line.get_markersize())),
            zorder=line.get_zorder() + 0.005,
        )
    return line


def plot_off_scale(ax, x, y, *, limit: float, axis: str = "x", label: str = "", what: str = "", **style: Any):
    """Draw points whose ``axis`` coordinate exceeds ``limit`` as edge markers, not at their true place.

    The points inside the limit are drawn normally; the others are drawn at the axis end with a
    ``>`` (or ``^``) marker at their other coordinate, and their legend entry gives their true
    range, so one outlier family (κ ≈ 1e17) does not squash the rest of a log axis.  The axis end
    is set to ``limit``.  Returns the list of lines drawn.

    >>> fig, ax = new_figure()
    >>> ax.set_xscale("log")
    >>> lines = plot_off_scale(ax, [1.0, 10.0, 1e17], [1.0, 2.0, 3.0], limit=1e3, label="v", what="x")
    >>> float(ax.get_xlim()[1]), lines[-1].get_label()
    (1000.0, 'v: 1 point off scale, x at $10^{17}$, drawn at the edge ▶')
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    coord = x if axis == "x" else y
    off = coord > limit
    lines = []
    if (~off).any():
        lines += ax.plot(x[~off], y[~off], label=label, **style)
        label = f"_{label}"  # one legend entry per family: the edge markers' entry carries the range
    if not off.any():
        return lines
    lo, hi = float(coord[off].min()), float(coord[off].max())
    span = _sci(lo) if lo == hi else f"{_sci(lo)} to {_sci(hi)}"
    count = "1 point" if off.sum() == 1 else f"{int(off.sum())} points"
    edge_label = (
        f"{label.lstrip('_')}: {count} off scale, {what} at {span}, drawn at the edge {'▶' if axis == 'x' else '▲'}"
    )
    edge_style = {k: v for k, v in style.items() if k in ("color", "zorder")}
    n = int(off.sum())
    ex, ey = (np.full(n, limit), y[off]) if axis == "x" else (x[off], np.full(n, limit))
    lines += ax.plot(
        ex,
        ey,
        linestyle="none",
        marker=">" if axis == "x" else "^",
        markersize=7,
        clip_on=False,
        label=edge_label,
        **edge_style,
    )
    if axis == "x":
        ax.set_xlim(right=limit)
    else:
        ax.set_ylim(top=limit)
    return lines


def save(fig, path, dpi: int = 120) -> None:
    """Write the figure as a PNG at ``path`` (a path or a writable binary file)."""
    fig.savefig(path, dpi=dpi, format="png")
