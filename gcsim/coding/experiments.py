"""Approximate-gradient-coding experiments (theory §45, issue: AGC analysis, item 6).

Each experiment returns a tidy :class:`pandas.DataFrame` (one row per curve
point) that :func:`plot_error_curves` turns into a figure. All errors are the
**normalized** optimal-decoding error ``err/(mN)`` in ``[0, 1]`` (theory §5.1), the
mean over straggler patterns *and* over encoder draws (construction seeds) for
randomized encoders, with a 95% confidence interval whose unit is the encoder draw for a
randomized encoder (per-draw means, :func:`gcsim._stats.draw_level_interval`, theory §57.10)
and the pattern for a deterministic one (t over i.i.d. patterns).

Curves per instance:

* the scheme under study (RD(ε) or NS), and the naive stacking baseline;
* the exact communication-efficient family (Gaussian ``H``, theory §40.5) where it
  is feasible (``min_i r_i >= s + m``); its optimal error is zero up to round-off;
* the per-part rank **lower bound** ``Σ_i (m - c_i(F))⁺`` (any scheme);
* an **upper bound**: the scaled-sign decoder bound ``E_D[err_X]`` for RD, or
  the reference-decoder error ``err_{X_0}`` for NS (``err <= err_X``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._optional import extra_imports, require
from .._plotting import curve_styles, floor_label, legend_below, legend_under, log_floor, new_figure, plot_floored, save
from .._progress import progress_bar
from .._stats import draw_level_interval
from .._validation import check_bool, check_int
from ..combinatorics.bibd import bibd
from ..combinatorics.biregular import biregular_graph
from ..combinatorics.coset import coset_graph
from ..combinatorics.srg import srg
from ..combinatorics.srg_graph import StronglyRegularGraph
from ..errors import InvalidArgumentError, NotConstructibleError
from .bounds import rank_lower_bound, rd_upper_bound
from .encoders import get_encoder
from .evaluate import fixed_decoder_error, optimal_error
from .schemes import encode
from .stragglers import straggler_model

with extra_imports("plots", "gcsim.coding.experiments (error curves)"):
    import pandas as pd

__all__ = [
    "SchemeSpec",
    "InstanceSpec",
    "error_curves",
    "plot_error_curves",
    "named_experiments",
    "exact_family_instability",
    "plot_instability",
]


@dataclass
class SchemeSpec:
    """A curve: encoder ``method`` with keyword options, and a label for the legend."""

    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)
    upper: str | None = None  # "rd" (scaled-sign bound) or "reference" (err_{X_0}) or None


@dataclass
class InstanceSpec:
    """An experiment: an assignment, m, the schemes to compare, and the sweeps."""

    name: str
    title: str
    assignment: np.ndarray
    m: int
    schemes: list[SchemeSpec]
    s_values: Sequence[int]
    p_values: Sequence[float]
    exact_family: bool = True

    def __post_init__(self) -> None:
        self.exact_family = check_bool("exact_family", self.exact_family)


#: encoder draws of the exact family's curve: its error is 0 in exact arithmetic (theory §40.5), the
#: curve shows round-off, and one Gaussian ``H`` costs ~0.1 s on PG(2,9)
EXACT_FAMILY_DRAWS = 5


def _draw_seeds(seed: int, k: int) -> tuple[int, int]:
    """The encoder seed and the pattern seed of encoder draw ``k``: independent streams of ``(seed, k)``.

    Distinct ``(seed, k)`` never share a stream, so runs with consecutive ``seed`` values are
    independent repetitions (a coverage benchmark needs that).

    >>> _draw_seeds(0, 1) == _draw_seeds(0, 1) != _draw_seeds(1, 0)
    True
    """
    enc, pat = np.random.SeedSequence((seed, 0xEC, k)).generate_state(2, np.uint64) >> np.uint64(1)
    return int(enc), int(pat)


def _interval(values: list[np.ndarray], *, randomized: bool, exact: bool, bounded: bool, seed: int) -> dict[str, Any]:
    """Mean and 95% interval of one curve point (theory §57.10): over draws if the curve is randomized.

    ``values[k]`` holds the normalized errors (in ``[0, 1]``) of draw ``k`` on its patterns. A
    randomized curve's unit is the draw: :func:`gcsim._stats.draw_level_interval` over the
    per-draw means; ``exact`` (one possible pattern) makes each an exact ``μ(D_k)``, but draws
    that agree still say nothing about unseen ones (the range interval, never zero width). A
    deterministic one (the encoder or the bound does not depend on the draw) has i.i.d. patterns:
    the t interval over all of them; with one possible pattern (``exact``) every value is the
    exact mean itself (zero width). ``bounded``: the values are optimal errors or the rank bound,
    in ``[0, 1]`` (clipped there against round-off), and so is the interval.
    """
    bounds = (0.0, 1.0) if bounded else None
    if bounded:
        values = [np.clip(v, 0.0, 1.0) for v in values]
    if randomized:
        units = np.array([float(np.mean(v)) for v in values])
        res = draw_level_interval(units, seed=seed, exact=exact, bounds=bounds)
    else:
        # the unit is the pattern; no draw, so with one possible pattern each value is the mean
        res = draw_level_interval(np.concatenate(values), method="t", exact=exact, invariant=exact, bounds=bounds)
        pat = "exact: one possible pattern, no encoder draw (zero width)" if exact else res.method
        res = replace(res, method=pat.replace("draws", "patterns"))
    return dict(
        mean=res.mean, ci_low=res.ci[0], ci_high=res.ci[1], interval=res.method, draws=len(values) if randomized else 1
    )


def _masks(kind: str, n: int, value, count: int, seed: int) -> np.ndarray:
    if kind == "s":
        return straggler_model("fixed", n, s=int(value)).sample(count, seed)
    return straggler_model("bernoulli", n, p=float(value)).sample(count, seed)


def error_curves(
    spec: InstanceSpec, *, samples: int = 15, seeds: int = 20, seed: int = 0, progress: bool = False
) -> pd.DataFrame:
    """Normalized expected optimal error vs s (fixed-s stragglers) and vs p (Bernoulli).

    For every sweep point, ``samples`` straggler patterns are drawn for each of ``seeds`` encoder
    draws (patterns differ per draw; draw ``k`` has its own encoder and pattern streams,
    :func:`_draw_seeds`); the bounds are evaluated on exactly the same patterns.

    Intervals (theory §57.10): for a randomized encoder (RD, NS, the Gaussian exact family, the
    upper bound of a fixed decoder drawn with it) the quantity is ``E_D E_S[err]`` and the unit of
    the interval is the encoder draw: patterns of one draw share it and are not independent. The
    interval is :func:`gcsim._stats.draw_level_interval` over the ``seeds`` per-draw means (t, or
    t ∪ bootstrap-t for few or skewed draws), clipped to ``[0, 1]``; so ``seeds`` should be at
    least 20 (more draws with fewer patterns each give a better interval at the same cost). A
    deterministic encoder (naive, bibd-optimal, ...) and the pattern-only bounds (the rank lower
    bound, RD's closed-form upper bound) have i.i.d. patterns: the t interval over all
    ``samples * seeds`` of them. The exact family's curve (zero up to round-off) uses the first
    :data:`EXACT_FAMILY_DRAWS` draws only. Every encoder draw is shared by all sweep points.

    At ``s = 0`` or ``p = 0`` (one possible pattern) each value is exact. Then a deterministic
    curve's interval has zero width; a randomized encoder's draws that agree still leave unseen
    draws open, so its interval is the range interval of theory §57.10 (never zero width from
    agreement alone).

    Returns
    -------
    DataFrame with columns ``instance, sweep ("s" | "p"), x, curve, kind
    ("scheme" | "baseline" | "lower" | "upper"), mean, ci_low, ci_high, interval, draws, samples``:
    ``interval`` says how the 95% interval was computed and over which unit (``"t ∪ bootstrap-t over
    20 draws (skewness 1.3)"``, ``"t over 300 patterns"``), ``draws`` the number of encoder draws
    behind it (1 for a deterministic curve), ``samples`` the patterns evaluated.

    Examples
    --------
    >>> from gcsim.combinatorics.bibd import bibd
    >>> spec = InstanceSpec("fano", "t", bibd(7, 3, 1).assignment, 2, [SchemeSpec("RD(0)", "rd")], [2], [],
    ...                     exact_family=False)
    >>> row = error_curves(spec, samples=5, seeds=20).iloc[0]
    >>> row.curve, int(row.draws), row.interval.split(" over ")[1].split(" (")[0]
    ('RD(0)', 20, '20 draws')
    >>> bool(row.ci_low < row["mean"] < row.ci_high)
    True
    """
    progress = check_bool("progress", progress)
    samples = check_int("samples", samples, minimum=1)
    seeds = check_int("seeds", seeds, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    A = np.asarray(spec.assignment)
    N, n = A.shape
    m = spec.m
    norm = m * N
    r_min = int(A.sum(axis=1).min())
    draw_seeds = [_draw_seeds(seed, k) for k in range(seeds)]
    # the same encoder draws at every sweep point (as the patterns' streams): encode each once
    encoded: dict[str, list[Any]] = {}
    for spec_scheme in spec.schemes:
        if get_encoder(spec_scheme.method).depends_on_seed():
            encoded[spec_scheme.label] = [
                encode(A, m, spec_scheme.method, seed=enc, **spec_scheme.options) for enc, _ in draw_seeds
            ]
        else:
            encoded[spec_scheme.label] = [encode(A, m, spec_scheme.method, seed=seed, **spec_scheme.options)] * seeds
    exact_draws = draw_seeds[:EXACT_FAMILY_DRAWS]
    exact_family: dict[int, list[Any]] = {}
    rows: list[dict[str, Any]] = []
    sweeps = [("s", v) for v in spec.s_values] + [("p", v) for v in spec.p_values]
    it = progress_bar(sweeps, desc=spec.name, enabled=bool(progress))  # a bar on a terminal, lines on a pipe
    for sweep, x in it:
        if sweep == "s" and not 0 <= int(x) <= n - 1:
            raise InvalidArgumentError("s_values", f"must lie in [0, n-1] = [0, {n - 1}], got {x}")
        # one straggler pattern is possible (s = 0, p = 0): every value is an exact expectation
        exact = float(x) == 0.0

        def add_row(
            curve: str,
            kind: str,
            values: list[np.ndarray],
            randomized: bool,
            sweep: str = sweep,
            x: Any = x,
            exact: bool = exact,
            bounded: bool = True,
        ) -> None:
            stats = _interval(values, randomized=randomized, exact=exact, bounded=bounded, seed=seed)
            rows.append(
                dict(instance=spec.name, sweep=sweep, x=x, curve=curve, kind=kind, **stats, samples=samples * seeds)
            )

        # one pattern batch per encoder draw k, shared by every curve and bound at this point
        masks_per_draw = [_masks(sweep, n, x, samples, seed=pat) for _, pat in draw_seeds]
        for spec_scheme in spec.schemes:
            encoder = get_encoder(spec_scheme.method)
            randomized = encoder.depends_on_seed()
            errs, uppers = [], []
            for sch, masks in zip(encoded[spec_scheme.label], masks_per_draw, strict=True):
                errs.append(optimal_error(sch, masks, progress=False) / norm)
                if spec_scheme.upper == "rd":
                    uppers.append(
                        np.asarray(
                            rd_upper_bound(
                                A,
                                m,
                                masks,
                                eps=spec_scheme.options.get("eps", 0.0),
                                dist=spec_scheme.options.get("dist", "rademacher"),
                            ),
                            dtype=float,
                        )
                        / norm
                    )
                elif spec_scheme.upper == "reference":
                    uppers.append(fixed_decoder_error(sch, masks) / norm)
            add_row(spec_scheme.label, "baseline" if encoder.baseline else "scheme", errs, randomized)
            if uppers:
                # RD's bound is the expectation over diagonals on each pattern (no draw in it), in [0, 1];
                # a fixed decoder's error is not bounded by mN
                rd = spec_scheme.upper == "rd"
                add_row(f"upper bound ({spec_scheme.label})", "upper", uppers, randomized and not rd, bounded=rd)
        # the rank lower bound depends only on the patterns
        add_row(
            "rank lower bound",
            "lower",
            [np.asarray(rank_lower_bound(A, m, masks), dtype=float) / norm for masks in masks_per_draw],
            False,
        )
        if spec.exact_family:
            s_design = int(x) if sweep == "s" else max(r_min - m, 0)
            if s_design + m <= r_min:
                try:
                    if s_design not in exact_family:
                        exact_family[s_design] = [
                            encode(A, m, "exact-gaussian", s=s_design, seed=enc) for enc, _ in exact_draws
                        ]
                except NotConstructibleError:
                    continue
                errs = [
                    optimal_error(sch, masks, progress=False) / norm
                    for sch, masks in zip(exact_family[s_design], masks_per_draw, strict=False)
                ]
                add_row(
                    f"exact family (Gaussian H, s={s_design})" if sweep == "p" else "exact family (Gaussian H)",
                    "baseline",
                    errs,
                    True,
                )
    return pd.DataFrame(rows)


def plot_error_curves(frame: pd.DataFrame, title: str, path=None):
    """Two panels (vs s, vs p) with 95% CI error bars; saves a PNG at ``path`` if given and returns the figure.

    Each curve has one style in both panels (:func:`gcsim._plotting.curve_styles`: its own colour
    and marker, earlier curves drawn wider and below later ones), so a scheme and its upper bound,
    or two schemes with near-equal errors, both stay visible where they overlap.  Schemes and
    baselines are solid, upper bounds dotted, the rank lower bound black dashed; the legend sits
    under the panels, where it hides no curve.
    """
    require("matplotlib", "plots", "gcsim.coding.experiments.plot_error_curves")
    fig, axes = new_figure(1, 2, figsize=(12, 5.6))
    keys = list(dict.fromkeys(_style_key(c) for c in frame["curve"]))
    styles = dict(zip(keys, curve_styles(len(keys)), strict=True))
    # one legend entry per style: a curve named differently in the two panels (the exact family is
    # designed for a fixed s in the p panel) shares the entry of its style, which names both
    entries: dict[str, tuple[Any, list[str]]] = {}
    for ax, sweep, xlabel in (
        (axes[0], "s", "number of stragglers $s$ (fixed-$s$ uniform)"),
        (axes[1], "p", "straggling probability $p$ (Bernoulli)"),
    ):
        sub = frame[frame.sweep == sweep]
        for curve, g in sub.groupby("curve", sort=False):
            g = g.sort_values("x")
            kind = g["kind"].iloc[0]
            key = _style_key(str(curve))
            style = dict(styles[key])
            style["linestyle"] = {"upper": ":", "lower": "--"}.get(kind, "-")
            if kind == "lower":
                style.update(color="k", marker="_")
            yerr = np.vstack([g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]])
            label = str(curve) if key not in entries else f"_{curve}"
            artist = ax.errorbar(g["x"], g["mean"], yerr=np.clip(yerr, 0, None), label=label, capsize=2, **style)
            if key not in entries:
                entries[key] = (artist, [str(curve)])
            elif str(curve) not in entries[key][1]:
                entries[key][1].append(str(curve))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(r"normalized optimal-decoding error $\mathrm{err}/(mN)$")
        ax.set_ylim(bottom=-0.02)
        ax.grid(alpha=0.3)
    for artist, names in entries.values():
        if len(names) > 1:
            artist.set_label(" / ".join(names))
    legend_below(fig, ncol=4)
    fig.suptitle(title)
    if path is not None:
        save(fig, path)
    return fig


def _style_key(curve: str) -> str:
    """The curve's name without its design parameter (``s=8``): one style across both panels."""
    head, sep, _ = curve.partition(", s=")
    return head + ")" if sep else curve


def _srg_assignment(v: int, k: int, lam: int, mu: int) -> np.ndarray:
    graph = srg(v, k, lam, mu)
    if not isinstance(graph, StronglyRegularGraph):  # srg() returns a bool only with existence=True
        raise NotConstructibleError(f"no construction of the SRG{(v, k, lam, mu)}")
    return graph.assignment


def named_experiments(*, full: bool = False) -> list[InstanceSpec]:
    """The experiments of the write-up: (a) PG(2,9) RD(0), (b) coset (27,2,5) RD(0.1) vs RD(0),
    (c) bi-regular (40,20,3,6) NS, (d) Paley(25) SRG RD(0); all with m = 2."""
    full = check_bool("full", full)
    step = 5 if full else 10
    p_values = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] if not full else list(np.round(np.arange(0, 0.61, 0.05), 2))
    m = 2
    return [
        InstanceSpec(
            "pg2_9",
            "(a) PG(2,9) = (91,91,10,10,1) BIBD, m = 2, RD(0)",
            bibd(91, 10, 1).assignment,
            m,
            [SchemeSpec("RD(0)", "rd", {"eps": 0.0}, upper="rd"), SchemeSpec("naive stacking", "naive")],
            sorted({0, 4, 8, *range(0, 61, step)}),
            p_values,
        ),
        InstanceSpec(
            "coset_27_2_5",
            "(b) coset graph (27,2,5), n = 54, m = 2: RD(0.1) vs Rademacher RD(0)",
            coset_graph(27, 2, 5).assignment,
            m,
            [
                SchemeSpec("RD(0.1)", "rd", {"eps": 0.1}, upper="rd"),
                SchemeSpec("RD(0) Rademacher", "rd", {"eps": 0.0}, upper="rd"),
                SchemeSpec("naive stacking", "naive"),
            ],
            sorted({0, 4, 8, *range(0, 41, step)}),
            p_values,
        ),
        InstanceSpec(
            "biregular_40_20_3_6",
            "(c) bi-regular (40,20,3,6), m = 2, NS (reference decoder X_0 Gaussian)",
            biregular_graph(40, 20, 3, 6, seed=0).assignment,
            m,
            [
                SchemeSpec("NS (Gaussian X_0)", "ns", {"dist": "gaussian"}, upper="reference"),
                SchemeSpec("naive stacking", "naive"),
            ],
            list(range(0, 13, 2)),
            p_values,
        ),
        InstanceSpec(
            "paley25",
            "(d) Paley(25) SRG (25,12,5,6), A = Adj + I, m = 2, RD(0)",
            _srg_assignment(25, 12, 5, 6),
            m,
            [SchemeSpec("RD(0)", "rd", {"eps": 0.0}, upper="rd"), SchemeSpec("naive stacking", "naive")],
            list(range(0, 21, 4 if not full else 2)),
            p_values,
        ),
    ]


def exact_family_instability(
    n_values: Sequence[int] = (8, 12, 16, 20, 24, 28, 32), *, s: int = 2, m: int = 2, patterns: int = 20, seed: int = 0
) -> pd.DataFrame:
    """κ(H_F) and decoding error of the exact family, Vandermonde vs Gaussian H, in float64 and float32.

    Assignment: cyclic repetition, worker ``j`` holds parts ``j..j+s+m-1 (mod n)``, so
    every ``r_i = s + m`` (the minimum the exact family needs). For random ``F``
    with ``|F| = n - s`` the decoder ``X = H_F^{-1}[I_m; 0]`` is computed in the
    given precision (B and H rounded to it) and its error ``‖B_F X − T‖_F²/(mN)``
    is evaluated in float64 against the exact ``B``.
    """
    rows = []
    rng = np.random.default_rng(seed)
    for n in n_values:
        ell = s + m
        A = np.zeros((n, n), dtype=np.int64)
        for j in range(n):
            A[(j + np.arange(ell)) % n, j] = 1
        for kind in ("vandermonde", "gaussian"):
            try:
                sch = encode(A, m, f"exact-{kind}", s=s, seed=seed)
            except NotConstructibleError:
                rows.append(dict(n=n, H=kind, dtype="float64", kappa=np.inf, error=np.nan, constructible=False))
                continue
            H = sch.extras["H"]
            T = sch.target()
            f = n - s
            kappas: list[float] = []
            errs: dict[str, list[float]] = {"float64": [], "float32": []}
            for _ in range(patterns):
                F = np.sort(rng.choice(n, size=f, replace=False))
                HF = H[:, F]
                kappas.append(np.linalg.cond(HF))
                rhs = np.zeros((f, m))
                rhs[:m, :m] = np.eye(m)
                for dt in (np.float64, np.float32):
                    try:
                        XF = np.linalg.solve(HF.astype(dt), rhs.astype(dt)).astype(np.float64)
                        e = float(np.sum((sch.B[:, F] @ XF - T) ** 2)) / (m * n)
                    except np.linalg.LinAlgError:
                        e = np.inf
                    errs[np.dtype(dt).name].append(e)
            for name, listed in errs.items():
                vals = np.asarray(listed)
                finite = vals[np.isfinite(vals)]
                rows.append(
                    dict(
                        n=n,
                        H=kind,
                        dtype=name,
                        kappa=float(np.median(kappas)),
                        error=float(np.median(finite)) if finite.size else np.inf,
                        error_max=float(finite.max()) if finite.size else np.inf,
                        singular=int((~np.isfinite(vals)).sum()),
                        constructible=True,
                    )
                )
    return pd.DataFrame(rows)


def plot_instability(frame: pd.DataFrame, path=None):
    """κ(H_F) and decoding error vs n (log scale) for Vandermonde and Gaussian H; returns the figure.

    Colour and marker follow ``H``; float32 is dashed, float64 solid.  Decoding errors of exactly
    zero (or below the stated floor) are drawn at the floor with a ▼ marker, named in the axis label.
    """
    require("matplotlib", "plots", "gcsim.coding.experiments.plot_instability")
    fig, axes = new_figure(1, 2, figsize=(11, 5.0))
    ok = frame[frame.constructible]
    kinds = sorted(ok["H"].unique())
    styles = dict(zip(kinds, curve_styles(len(kinds)), strict=True))
    for kind, g in ok[ok.dtype == "float64"].groupby("H"):
        axes[0].semilogy(g["n"], g["kappa"], label=f"{kind} $H$", **dict(styles[kind], linestyle="-"))
    axes[0].set_xlabel("number of workers $n$")
    axes[0].set_ylabel(r"median condition number $\kappa(H_F)$")
    axes[0].grid(alpha=0.3, which="both")
    legend_under(axes[0])
    floor = log_floor(ok["error"])
    axes[1].set_yscale("log")
    for (kind, dt), g in ok.groupby(["H", "dtype"]):
        style = dict(styles[kind], linestyle="-" if dt == "float64" else "--")
        plot_floored(axes[1], g["n"], g["error"], floor, label=f"{kind} $H$, {dt}", **style)
    axes[1].set_xlabel("number of workers $n$")
    ylabel = r"median decoding error $\|B_F X - T\|^2/(mN)$"
    axes[1].set_ylabel(floor_label(ylabel, floor, "0") if (ok["error"] <= floor).any() else ylabel)
    axes[1].grid(alpha=0.3, which="both")
    legend_under(axes[1])
    fig.suptitle("Exact communication-efficient family: Vandermonde (Ye–Abbe) vs Gaussian (Kadhe et al.) $H$")
    if path is not None:
        save(fig, path)
    return fig
