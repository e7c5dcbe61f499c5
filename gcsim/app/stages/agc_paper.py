"""The ``agc-paper`` stage of ``gcsim reproduce``: the paper's experiments in the authors' setups, and its claims.

The paper is "Communication-Efficient Approximate Gradient Coding" (arXiv 2603.22514); its public
scripts (repository ``smunim-47/CE-AGC``) fix the setups, which this stage follows with gcsim's own
code (:mod:`gcsim.coding`, :mod:`gcsim.coding.bounds`, :mod:`gcsim.coding.stragglers`):

* ``pg2_9_rd`` -- PG(2,9) (91 parts, 91 workers, 10 parts per worker), ``m = 2``, ±1 random
  diagonals (RD(0)): the mean optimal error over encoder draws and straggler sets at their 15
  straggler counts up to ``s/n = 0.25``, the baseline ``B = [A; A]``, the closed-form upper bound
  (theory §45, :func:`~gcsim.coding.bounds.bibd_rd_upper_bound`), the authors' closed-form lower
  bound (:func:`~gcsim.coding.bounds.partial_uncovering_lower_bound`) and gcsim's search lower bound
  (:func:`~gcsim.coding.bounds.worst_case_rank_lower_bound`);
* ``biregular_construction2`` -- their bi-regular graph (20 parts of degree 6 on 40 workers of
  degree 3, ``m = 2``) with Construction 2 (encoder ``hadamard-ns``, theory §41) for a Gaussian and
  a ±1 vector, the baseline and RD(0), at their 16 straggler counts from 0 to ``s/n = 0.25``, with
  the diagonal-dominance bound (theory §45, Theorem 8) on every pattern and the lower bounds;
* ``coset_s0`` -- coset bipartite graphs (theory §30) at ``s = 0``: RD(0.1) and Gaussian diagonals
  give an invertible ``B`` (Corollary 3), hence error 0; ±1 diagonals often do not (Proposition 5);
* the checks of the paper's theory (:mod:`gcsim.app.stages.agc_paper_checks`): a replication-1 design
  where the bounds are attained (``tight_r1``), RD on strongly regular graphs against Corollary 4
  (``srg_rd``), the RD estimator's unbiasedness and variance as exact expectations (``rd_unbiased``),
  and SGD against Theorem 7's rate over several runs (``sgd_convergence``);
* the MNIST training claims come from the ``training`` stage (its ``claims.csv``, read, not
  recomputed: run it first, as ``gcsim reproduce --paper agc`` does).

``claims.csv`` (and ``claims.md``) holds one row per claim: the claim in words, the measure,
gcsim's number, holds or not, whether it must hold, its basis, the figure (or table), the source
stage and the verdict (``holds``, ``FAILS``, ``does not hold``, or for the training claims, which are
intervals over seeds, ``not shown`` when the interval cannot tell).  A claim
*must hold* (basis ``theorem``) when a theorem of docs/theory proves it (a bound, an exactness
statement): if one fails, gcsim is wrong and the stage fails; each such row has a test that plants a
fault and sees it fail (``tests/test_reproduce_paper.py``); one function of
:data:`gcsim.app.stages.agc_paper_claims.CLAIM_ROWS` computes each row.  A row that cannot fail is labelled
``by construction``.  The paper's empirical comparisons (its codes beat the baselines, the training
claims) are reported as found, holding or not, without failing the stage.  Bound rows report where
the bound binds: the smallest relative gap over ``s > 0`` and where it is attained.

Quick scale (:data:`QUICK`) takes seconds; ``--full`` (:data:`FULL`) runs the authors' sizes (100
encoder draws x 1000 straggler sets per point on PG(2,9), 1000 sets per point on the bi-regular
graph), about an hour of one core: use ``--scheduler local``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._optional import require
from ...coding import bounds as bd
from ...io.manifest import atomic_path, atomic_write_text
from ...sweep import int_seed, run_sweep
from . import agc_paper_checks as ck
from .agc_paper_claims import (  # noqa: F401 (the claims' names, importable from here as before)
    BOUND_SLACK,
    CONSTRUCTION,
    EMPIRICAL,
    EQUAL_TOL,
    EXACT_NORMALIZED,
    EXACT_RAW,
    THEOREM,
    _number,
    _training_note,
    _verdict,
    claims_markdown,
    paper_claims,
    training_claims,
)

M = 2  # the paper's number of blocks in every experiment

#: Coset graphs (k, m, δ, group) at s = 0, p ∤ δ (theory §30.4): the named (27, 2, 5) and three more
COSET_INSTANCES: tuple[tuple[int, int, int, str], ...] = (
    (27, 2, 5, "cyclic"),
    (25, 2, 4, "cyclic"),
    (16, 2, 3, "elementary"),
    (27, 3, 4, "cyclic"),
)


@dataclass(frozen=True)
class Scale:
    """How much of each experiment to run.

    Attributes
    ----------
    rd_encoders, rd_patterns : int
        PG(2,9): RD encoder draws per straggler count, straggler sets per draw (authors: 100, 1000).
    baseline_patterns : int
        PG(2,9): straggler sets of the baseline per count (authors: 1000).
    biregular_patterns : int
        Bi-regular graph: straggler sets per count, shared by every encoder (authors: 1000).
    coset_draws : int
        Coset graphs: diagonal draws per instance and distribution at ``s = 0``.
    points : int
        Straggler counts up to ``s/n = 0.25`` (authors: 15).
    biregular_draws : int
        Bi-regular graph: draws of each randomized encoder (Construction 2, RD); the
        ``biregular_patterns`` straggler sets of a point are split among them (at least one each).
    tight_patterns, tight_draws : int
        Replication-1 design: straggler sets per count, draws of each RD encoder (±1, Gaussian).
    srg_draws, srg_patterns : int
        Strongly regular graphs: RD encoder draws per count, straggler sets per draw.
    sgd_seeds, sgd_steps : int
        SGD with the unbiased RD estimator: independent runs and their length ``T``.

    The intervals of randomized encoders are over their draws (theory §57.10): 20 draws or more
    give one that holds its level on skewed per-draw means (§57.11).
    """

    rd_encoders: int
    rd_patterns: int
    baseline_patterns: int
    biregular_patterns: int
    coset_draws: int
    points: int = 15
    biregular_draws: int = 20
    tight_patterns: int = 20
    tight_draws: int = 2
    srg_draws: int = 20
    srg_patterns: int = 5
    sgd_seeds: int = 10
    sgd_steps: int = 200


QUICK = Scale(rd_encoders=20, rd_patterns=10, baseline_patterns=50, biregular_patterns=200, coset_draws=10)
FULL = Scale(
    rd_encoders=100,
    rd_patterns=1000,
    baseline_patterns=1000,
    biregular_patterns=1000,
    coset_draws=100,
    biregular_draws=100,
    tight_patterns=200,
    tight_draws=10,
    srg_draws=100,
    srg_patterns=100,
    sgd_seeds=20,
    sgd_steps=1000,
)


def straggler_counts(n: int, points: int, *, zero: bool) -> list[int]:
    """The authors' straggler counts: ``linspace(0, n/4, points + 1)`` truncated to integers (``s = 0`` kept or not).

    Examples
    --------
    >>> straggler_counts(91, 15, zero=False)
    [1, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 22]
    >>> straggler_counts(40, 15, zero=True)[:6]
    [0, 0, 1, 2, 2, 3]
    """
    counts = [int(x) for x in np.linspace(0, 0.25 * n, points + 1).astype(int)]
    return counts if zero else counts[1:]


def _encoder_seed(seed: int, k: int) -> int:
    """The seed of encoder draw ``k``: the same draws at every straggler count, as in the authors' loops."""
    return int_seed(np.random.SeedSequence((seed, 0xA6C, k)))


def _stats(per_draw: list[Any], top: float, *, randomized: bool, exact: bool = False) -> dict[str, Any]:
    """Mean, its 95 % interval (``interval`` says how, ``draws`` over how many draws), min and max.

    ``per_draw[k]`` holds the errors (in ``[0, top]``, ``top = mN``) of encoder draw ``k`` on its
    straggler sets. A randomized encoder's interval is over its draws (theory §57.10:
    :func:`gcsim._stats.draw_level_interval` of the per-draw means); a deterministic one's is the t
    interval over its i.i.d. straggler sets. ``exact``: one straggler set is possible (``s = 0``):
    a deterministic encoder's values are then the mean itself (zero width), while a randomized
    one's exact per-draw means that agree still leave unseen draws open (the range interval).
    """
    from ..._stats import draw_level_interval

    per_draw = [np.clip(np.asarray(v, dtype=float).ravel(), 0.0, top) for v in per_draw]  # round-off only
    v = np.concatenate(per_draw)
    if randomized:
        res = draw_level_interval([float(d.mean()) for d in per_draw], exact=exact, bounds=(0.0, top))
        unit = res.method
    else:
        # the unit is the straggler set; no draw, so with one possible set each value is the mean
        res = draw_level_interval(v, method="t", exact=exact, invariant=exact, bounds=(0.0, top))
        unit = "exact: one possible straggler set, no encoder draw (zero width)" if exact else res.method
        unit = unit.replace("draws", "straggler sets")
    return {
        "mean": res.mean,
        "ci_low": res.ci[0],
        "ci_high": res.ci[1],
        "min": float(v.min()),
        "max": float(v.max()),
        "interval": unit,
        "draws": len(per_draw) if randomized else 1,
    }


@functools.lru_cache(maxsize=2)
def _pg29() -> np.ndarray:
    from ...combinatorics.bibd import bibd

    return bibd(91, 10, 1).assignment


@functools.lru_cache(maxsize=2)
def _biregular() -> np.ndarray:
    from ...combinatorics.biregular import biregular_graph

    # the authors draw their graph with Python's unseeded random; a seeded one with their parameters
    return biregular_graph(20, 40, 6, 3, seed=0).assignment


def _patterns(n: int, s: int, count: int, seq: np.random.SeedSequence) -> np.ndarray:
    from ...coding.stragglers import straggler_model
    from ...sweep import int_seed

    return straggler_model("fixed", n, s=s).sample(count, int_seed(seq))


def _lower_bounds(A: np.ndarray, s: int, schemes: dict[str, Any]) -> dict[str, Any]:
    """The closed-form and search lower bounds at ``s``, and every scheme's error at their straggler sets.

    ``margin_at_lower`` is the smallest ``err - bound`` (``>= 0`` by Theorems 1 and 9);
    ``lower_rel_margin`` the smallest ``(err - bound) / bound`` over the bounds that are positive
    (NaN where both are 0: there they only say ``err >= 0``), ``lower_rel_where`` which one.
    """
    from ...coding.evaluate import optimal_error

    closed = bd.partial_uncovering_lower_bound(A, M, s)
    search = bd.worst_case_rank_lower_bound(A, M, s)
    row: dict[str, Any] = {"lower_closed": closed.value, "lower_search": search.value, "lower_exact": search.exact}
    gaps = [
        (float(optimal_error(sch, res.mask, progress=False)) - res.value, res.value, f"{name} at the {label} set")
        for name, sch in schemes.items()
        for label, res in (("closed-form", closed), ("search", search))
    ]
    row["margin_at_lower"] = min(g for g, _, _ in gaps)
    rel = [(g / b, where) for g, b, where in gaps if b > 0]
    row["lower_rel_margin"] = min(rel)[0] if rel else float("nan")
    row["lower_rel_where"] = min(rel)[1] if rel else ""
    return row


def _pg_point(s: int, seq: np.random.SeedSequence, *, scale: Scale, seed: int) -> dict[str, Any]:
    """PG(2,9), ``s`` stragglers: RD(0) over encoder draws and straggler sets, the baseline, the bounds."""
    from ...coding.evaluate import optimal_error
    from ...coding.schemes import encode

    A = _pg29()
    n = A.shape[1]
    streams = seq.spawn(scale.rd_encoders + 1)
    errs = []
    for k in range(scale.rd_encoders):
        sch = encode(A, M, "rd", eps=0.0, dist="rademacher", seed=_encoder_seed(seed, k))
        errs.append(optimal_error(sch, _patterns(n, s, scale.rd_patterns, streams[k]), progress=False))
    naive = encode(A, M, "naive")
    base = optimal_error(naive, _patterns(n, s, scale.baseline_patterns, streams[-1]), progress=False)
    first = encode(A, M, "rd", eps=0.0, dist="rademacher", seed=_encoder_seed(seed, 0))
    row: dict[str, Any] = {"s": s, "s_over_n": s / n}
    top = float(M * A.shape[0])
    row |= {f"rd_{key}": value for key, value in _stats(errs, top, randomized=True).items()}
    row |= {f"baseline_{key}": value for key, value in _stats([base], top, randomized=False).items()}
    row["baseline_closed"] = float(bd.bibd_naive_error(91, 10, 1, M, s))
    row["upper_closed"] = float(bd.bibd_rd_upper_bound(91, 10, 1, M, s))
    return row | _lower_bounds(A, s, {"rd": first, "baseline": naive})


def _biregular_point(
    s: int, seq: np.random.SeedSequence, *, schemes: list[dict[str, Any]], scale: Scale
) -> dict[str, Any]:
    """The bi-regular graph, ``s`` stragglers: every encoder on the same straggler sets, the bounds.

    ``schemes[k]`` holds encoder draw ``k`` of every encoder; draw ``k`` is evaluated on its own
    straggler sets (the same for every encoder), the deterministic baseline on all of them.
    """
    from ...coding.encoders import get_encoder
    from ...coding.evaluate import optimal_error

    A = _biregular()
    per = max(1, scale.biregular_patterns // len(schemes))
    masks = [_patterns(A.shape[1], s, per, child) for child in seq.spawn(len(schemes))]
    row: dict[str, Any] = {"s": s, "s_over_n": s / A.shape[1]}
    top = float(M * A.shape[0])
    for name, first in schemes[0].items():
        errs, dds = [], []
        for draw, mk in zip(schemes, masks, strict=True):
            errs.append(np.asarray(optimal_error(draw[name], mk, progress=False), dtype=float))
            if name.startswith("construction2"):
                dds.append(np.asarray(bd.diagonal_dominance_upper_bound(draw[name], mk), dtype=float))
        randomized = get_encoder(first.method).depends_on_seed()
        row |= {f"{name}_{key}": value for key, value in _stats(errs, top, randomized=randomized, exact=s == 0).items()}
        if dds:
            dd, err = np.concatenate(dds), np.concatenate(errs)
            row |= {f"{name}_dd_mean": float(dd.mean()), f"{name}_dd_max": float(dd.max())}
            row[f"{name}_dd_excess"] = float((err - dd).max())  # <= 0 up to round-off (Theorem 8)
            # how close the bound comes: the smallest (bound - err) / bound, and the sets where they are equal
            pos = dd > BOUND_SLACK
            row[f"{name}_dd_rel_gap"] = float(((dd[pos] - err[pos]) / dd[pos]).min()) if pos.any() else float("nan")
            row[f"{name}_dd_equal"] = int(np.sum(np.abs(dd - err) <= BOUND_SLACK))
            row[f"{name}_dd_ratio"] = float(err.mean() / dd.mean()) if dd.mean() > 0 else float("nan")
    return row | _lower_bounds(A, s, schemes[0])


def _coset_instance(instance: tuple[int, int, int, str], seq: np.random.SeedSequence, *, scale: Scale) -> list[dict]:
    """One coset graph at ``s = 0``: the normalized optimal error of each diagonal draw, per distribution."""
    from ...coding.evaluate import optimal_error
    from ...coding.schemes import encode
    from ...combinatorics.coset import coset_graph
    from ...sweep import int_seed

    k, m, delta, group = instance
    A = coset_graph(k, m, delta, group).assignment
    everyone = np.ones(A.shape[1], dtype=bool)
    rows = []
    for label, options in (
        ("RD(0.1)", {"eps": 0.1}),
        ("Gaussian diagonals", {"dist": "gaussian"}),
        ("RD(0) ±1", {"eps": 0.0}),
    ):
        for draw, child in enumerate(seq.spawn(scale.coset_draws)):
            sch = encode(A, m, "rd", seed=int_seed(child), **options)
            err = float(optimal_error(sch, everyone, normalized=True, progress=False))
            rows.append(
                {"instance": f"coset ({k},{m},{delta}) {group}", "m": m, "diagonals": label, "draw": draw, "error": err}
            )
    return rows


def _tight_point(s: int, seq: np.random.SeedSequence, *, scale: Scale, seed: int) -> dict[str, Any]:
    """The replication-1 design at ``s`` stragglers (:func:`~gcsim.app.stages.agc_paper_checks.tight_point`)."""
    A = ck.replication_one_assignment()
    masks = _patterns(A.shape[1], s, scale.tight_patterns if s > 0 else 1, seq)
    return ck.tight_point(s, masks, [_encoder_seed(seed, k) for k in range(scale.tight_draws)])


def _srg_point(
    task: tuple[tuple[int, int, int, int], int], seq: np.random.SeedSequence, *, scale: Scale, seed: int
) -> dict[str, Any]:
    """RD(0) on an SRG at ``s`` stragglers: per draw, the error and Corollary 4 at each set's edge count.

    The bound is on ``E_D err(B, F)`` for each ``F`` (theory §45.2.2): the per-draw means of
    ``err - bound(F)`` over the draw's sets are i.i.d. with mean ``<= 0``, and their interval over
    the draws is the check (as the pooled test of theory §45.6).
    """
    from ...coding.evaluate import optimal_error
    from ...coding.schemes import encode

    instance, s = task
    A = ck.srg_assignment(instance)
    n = A.shape[1]
    top = float(M * A.shape[0])
    streams = seq.spawn(scale.srg_draws)
    errs, diffs, bounds = [], [], []
    for k, child in enumerate(streams):
        sch = encode(A, M, "rd", eps=0.0, dist="rademacher", seed=_encoder_seed(seed, k))
        masks = _patterns(n, s, scale.srg_patterns, child)
        err = np.asarray(optimal_error(sch, masks, progress=False), dtype=float)
        bound = ck.srg_pattern_bounds(instance, s, masks)
        errs.append(err)
        diffs.append(float((err - bound).mean()))
        bounds.append(bound)
    from ..._stats import draw_level_interval

    diff = draw_level_interval(diffs, bounds=(-top, top))
    row: dict[str, Any] = {"instance": "SRG" + str(instance), "v": instance[0], "s": s, "s_over_n": s / n}
    row |= {f"rd_{key}": value for key, value in _stats(errs, top, randomized=True).items()}
    row["bound_mean"] = float(np.concatenate(bounds).mean())
    row |= {"excess_mean": diff.mean, "excess_ci_low": diff.ci[0], "excess_ci_high": diff.ci[1]}
    row["upper_worst"] = bd.srg_rd_upper_bound(*instance, M, s)
    first = encode(A, M, "rd", eps=0.0, dist="rademacher", seed=_encoder_seed(seed, 0))
    return row | _lower_bounds(A, s, {"rd": first, "baseline": encode(A, M, "naive")})


def _task(
    task: tuple[str, Any], seq: np.random.SeedSequence, *, scale: Scale, seed: int, schemes: list[dict[str, Any]]
):
    """One independent item of the stage (a sweep task): a straggler count of a design, a coset graph, a check."""
    kind, value = task
    if kind == "pg":
        return _pg_point(value, seq, scale=scale, seed=seed)
    if kind == "biregular":
        return _biregular_point(value, seq, schemes=schemes, scale=scale)
    if kind == "tight":
        return _tight_point(value, seq, scale=scale, seed=seed)
    if kind == "srg":
        return _srg_point(value, seq, scale=scale, seed=seed)
    if kind == "unbiased":
        return ck.unbiased_case(ck.UNBIASED_CASES[value], seed)
    if kind == "sgd":
        runs = ck.sgd_run(ck.sgd_problem(), scale.sgd_steps, _encoder_seed(seed, value))
        return {"run": value, "sq_grad_norms": runs}
    return _coset_instance(value, seq, scale=scale)


def biregular_schemes(seed: int = 0, draw: int = 0) -> dict[str, Any]:
    """The bi-regular graph's encoders: Construction 2 (Gaussian, ±1), the baseline ``[A; A]`` and RD(0).

    ``draw`` selects the encoder draw of the randomized ones (the baseline has none).

    Examples
    --------
    >>> schemes = biregular_schemes()
    >>> sorted(schemes), schemes["construction2_signs"].B.shape
    (['baseline', 'construction2_gaussian', 'construction2_signs', 'rd'], (40, 40))
    """
    from ...coding.schemes import encode

    A = _biregular()
    es = _encoder_seed(seed, draw)
    return {
        "construction2_gaussian": encode(A, M, "hadamard-ns", dist="gaussian", support="full", seed=es),
        "construction2_signs": encode(A, M, "hadamard-ns", dist="rademacher", support="full", seed=es),
        "baseline": encode(A, M, "naive"),
        "rd": encode(A, M, "rd", eps=0.0, dist="rademacher", seed=es),
    }


# ----------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------


def _errorbars(ax, frame, prefix: str, label: str, style: dict[str, Any]) -> None:
    yerr = np.vstack(
        [frame[f"{prefix}_mean"] - frame[f"{prefix}_ci_low"], frame[f"{prefix}_ci_high"] - frame[f"{prefix}_mean"]]
    )
    ax.errorbar(frame.s_over_n, frame[f"{prefix}_mean"], yerr=np.clip(yerr, 0, None), label=label, capsize=2, **style)


def _finish(fig, ax, title: str, path: Path) -> None:
    from ..._plotting import legend_below, save

    ax.set_xlabel("straggler fraction $s/n$")
    ax.set_ylabel(r"optimal-decoding error $\mathrm{err}(B, F)$ (max $mN$)")
    ax.grid(alpha=0.3)
    legend_below(fig, ncol=2)
    fig.suptitle(title)
    with atomic_path(path) as tmp:
        save(fig, tmp)


def plot_pg(frame, path: Path, samples: str) -> None:
    """The PG(2,9) figure: RD(0) and the baseline between the upper and lower bounds."""
    from ..._plotting import new_figure

    fig, ax = new_figure(figsize=(9, 6.6))
    ax.plot(frame.s_over_n, frame.upper_closed, "o:", color="tab:green", label="upper bound (closed form, RD)")
    _errorbars(ax, frame, "rd", "RD ±1 diagonals: mean error (95 % CI)", {"color": "tab:blue", "marker": "^"})
    _errorbars(ax, frame, "baseline", "baseline $B = [A; A]$: mean error", {"color": "tab:red", "marker": "s"})
    ax.plot(frame.s_over_n, frame.lower_closed, "x--", color="tab:orange", label="lower bound (authors' closed form)")
    ax.plot(frame.s_over_n, frame.lower_search, "+-.", color="k", label="lower bound (gcsim's search)")
    _finish(fig, ax, f"PG(2,9): $n = N = 91$, $m = 2$, ±1 random diagonals\n{samples}", path)


def plot_biregular(frame, path: Path, samples: str) -> None:
    """The bi-regular figure: Construction 2 (Gaussian, ±1) with its diagonal-dominance bound, the baselines."""
    from ..._plotting import new_figure

    fig, ax = new_figure(figsize=(9, 6.6))
    for name, label, colour, marker in (
        ("construction2_signs", "Construction 2, ±1", "tab:blue", "^"),
        ("construction2_gaussian", "Construction 2, Gaussian", "tab:cyan", "*"),
    ):
        ax.plot(
            frame.s_over_n,
            frame[f"{name}_dd_max"],
            marker=marker,
            linestyle=":",
            color=colour,
            label=f"{label}: diagonal-dominance bound (max)",
        )
        _errorbars(ax, frame, name, f"{label}: mean error", {"color": colour, "marker": marker})
    _errorbars(ax, frame, "rd", "RD ±1 diagonals: mean error", {"color": "tab:purple", "marker": "d"})
    _errorbars(ax, frame, "baseline", "baseline $B = [A; A]$: mean error", {"color": "tab:red", "marker": "s"})
    ax.plot(frame.s_over_n, frame.lower_closed, "x--", color="tab:orange", label="lower bound (authors' closed form)")
    title = f"bi-regular graph: 20 parts (6 holders each), 40 workers (3 parts each), $m = 2$\n{samples}"
    _finish(fig, ax, title, path)


def plot_coset(frame, path: Path) -> None:
    """The coset figure: every draw's normalized error at ``s = 0`` (log scale, exact draws at the floor)."""
    from ..._plotting import legend_below, new_figure, save

    fig, ax = new_figure(figsize=(9, 5.6))
    floor = 1e-30
    instances = list(dict.fromkeys(frame.instance))
    for j, (label, colour, marker) in enumerate(
        (("RD(0.1)", "tab:green", "o"), ("Gaussian diagonals", "tab:blue", "s"), ("RD(0) ±1", "tab:red", "x"))
    ):
        sub = frame[frame.diagonals == label]
        x = np.array([instances.index(i) for i in sub.instance]) + (j - 1) * 0.22
        ax.scatter(x, np.maximum(sub.error, floor), color=colour, marker=marker, label=label, alpha=0.7)
    ax.set_yscale("log")
    ax.axhline(EXACT_NORMALIZED, color="k", linestyle=":", label=f"exact below {EXACT_NORMALIZED:g}")
    ax.set_xticks(range(len(instances)), [i.replace(") ", ")\n") for i in instances])
    ax.set_ylabel(
        "normalized error $\\mathrm{err}/(mN)$ at $s = 0$\n(0 and values below $10^{-30}$ drawn at $10^{-30}$)"
    )
    ax.grid(alpha=0.3, axis="y")
    legend_below(fig, ncol=4)
    fig.suptitle("coset bipartite graphs $(k, m, \\delta)$, no stragglers: one point per diagonal draw")
    with atomic_path(path) as tmp:
        save(fig, tmp)


def plot_srg(frame, path: Path, samples: str) -> None:
    """The SRG figure: RD's mean error and Corollary 4's bound (mean over the sets, and worst case) per graph."""
    from ..._plotting import new_figure

    fig, ax = new_figure(figsize=(9, 6.6))
    for (name, sub), colour in zip(frame.groupby("instance", sort=False), ("tab:blue", "tab:purple"), strict=False):
        _errorbars(ax, sub, "rd", f"{name}: RD ±1 mean error (95 % CI)", {"color": colour, "marker": "^"})
        ax.plot(sub.s_over_n, sub.bound_mean, "o:", color=colour, label=f"{name}: Corollary 4 at the sets (mean)")
        ax.plot(sub.s_over_n, sub.upper_worst, "x--", color=colour, alpha=0.6, label=f"{name}: Corollary 4, worst case")
    _finish(fig, ax, f"strongly regular graphs, $A = $Adj$ + I$, $m = 2$, ±1 random diagonals\n{samples}", path)


def plot_sgd(frame, path: Path) -> None:
    """The SGD figure: the runs' average squared gradient norm against ``T``, its exact expectation and the bound."""
    from ..._plotting import legend_below, new_figure, save

    fig, ax = new_figure(figsize=(9, 6))
    yerr = np.vstack([frame["mean"] - frame.ci95_low, frame.ci95_high - frame["mean"]])
    ax.errorbar(
        frame["T"], frame["mean"], yerr=np.clip(yerr, 0, None), marker="o", capsize=2, label="runs: mean (95 % CI)"
    )
    ax.plot(frame["T"], frame.expected, "k-", label="exact expectation (Corollary 7a)")
    ax.plot(frame["T"], frame.bound, "r--", label="Theorem 7's bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations $T$")
    ax.set_ylabel(r"$\frac{1}{T}\sum_{t \leq T} \|\nabla L(\theta_t)\|^2$")
    ax.grid(alpha=0.3)
    legend_below(fig, ncol=3)
    fig.suptitle(f"SGD with the unbiased RD estimator: PG(2,9), $m = 2$, {int(frame.runs.iloc[0])} runs")
    with atomic_path(path) as tmp:
        save(fig, tmp)


# ----------------------------------------------------------------------------------------------
# the SGD table (its claim, like every other, in agc_paper_claims)
# ----------------------------------------------------------------------------------------------


#: Level of the SGD check at each checkpoint (Bonferroni over the checkpoints: one 95 % statement)
SGD_LEVEL = 0.95


def sgd_summary(runs: list[np.ndarray], steps: int) -> Any:
    """The SGD table: at each checkpoint ``T``, the mean over runs of ``(1/T) Σ_{t≤T} ‖∇L(θ_t)‖²``,
    its interval over the runs, Corollary 7a's exact expectation and Theorem 7's bound.

    The interval is the one-sided ``t`` limit at level ``1 - (1 - SGD_LEVEL)/K`` for ``K``
    checkpoints (Bonferroni, so that the check over every ``T`` is one 95 % statement), reported
    as ``ci_low``; ``ci_high`` is the two-sided 95 % limit.
    """
    import pandas as pd
    from scipy import stats

    problem = ck.sgd_problem()
    checkpoints = [T for T in ck.SGD_CHECKPOINTS if T <= steps]
    R = np.vstack(runs)
    rows = []
    for T in checkpoints:
        avg = R[:, :T].mean(axis=1)
        se = float(avg.std(ddof=1) / np.sqrt(avg.size)) if avg.size > 1 else float("inf")
        one_sided = stats.t.ppf(1 - (1 - SGD_LEVEL) / len(checkpoints), max(avg.size - 1, 1))
        two_sided = stats.t.ppf(0.975, max(avg.size - 1, 1))
        mean = float(avg.mean())
        rows.append(
            {
                "T": T,
                "runs": int(avg.size),
                "mean": mean,
                "ci_low": mean - one_sided * se,
                "ci95_low": mean - two_sided * se,
                "ci95_high": mean + two_sided * se,
                "expected": problem.expected(T),
                "bound": problem.bound(T),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# the stage
# ----------------------------------------------------------------------------------------------


#: The stage's tables, in the order of :func:`compute_tables`
TABLE_KINDS: tuple[str, ...] = ("pg", "biregular", "coset", "tight", "srg", "unbiased", "sgd")


def compute_tables(
    scale: Scale, seed: int, *, kinds: tuple[str, ...] = TABLE_KINDS, scheduler: Any = "serial", progress: bool = False
) -> dict[str, Any]:
    """The stage's experiments as data frames (one sweep task per straggler count, graph, case or run).

    ``kinds`` selects tables (tests recompute one under a planted fault); the frames are those
    :func:`paper_claims` reads.
    """
    import pandas as pd

    n_r1 = len(ck.R1_LOADS)
    plan: dict[str, list[Any]] = {
        "pg": straggler_counts(91, scale.points, zero=False),
        "biregular": sorted(set(straggler_counts(40, scale.points, zero=True))),
        "coset": list(COSET_INSTANCES),
        "tight": sorted(set(straggler_counts(n_r1, min(scale.points, n_r1 // 4), zero=True))),
        "srg": [
            (g, s) for g in ck.SRG_INSTANCES for s in sorted(set(straggler_counts(g[0], scale.points, zero=False))) if s
        ],
        "unbiased": list(range(len(ck.UNBIASED_CASES))),
        "sgd": list(range(scale.sgd_seeds)),
    }
    tasks: list[tuple[str, Any]] = [(kind, value) for kind in kinds for value in plan[kind]]
    schemes = [biregular_schemes(seed, k) for k in range(scale.biregular_draws)] if "biregular" in kinds else []
    work = functools.partial(_task, scale=scale, seed=seed, schemes=schemes)
    done = run_sweep(work, tasks, seed=seed, scheduler=scheduler, progress=progress, desc="agc-paper")

    def rows(kind: str) -> list[Any]:
        return [r for t, r in zip(tasks, done, strict=True) if t[0] == kind]

    tables: dict[str, Any] = {}
    for kind in kinds:
        if kind == "coset":
            tables[kind] = pd.DataFrame([row for rs in rows("coset") for row in rs])
        elif kind == "sgd":
            tables[kind] = sgd_summary([r["sq_grad_norms"] for r in rows("sgd")], scale.sgd_steps)
        else:
            tables[kind] = pd.DataFrame(rows(kind))
    return tables


def agc_paper_stage(
    out: Path, full: bool, seed: int, progress: bool, scheduler: Any = "serial", *, scale: Scale | None = None
) -> dict[str, Any]:
    """The paper's experiments (one sweep task per straggler count or coset graph on ``scheduler``) and its claims.

    ``scale`` replaces :data:`QUICK` / :data:`FULL` (tests run tiny ones).
    """
    require("pandas", "plots", "gcsim.app.stages.agc_paper.agc_paper_stage")
    import pandas as pd

    scale = scale if scale is not None else (FULL if full else QUICK)
    tables = compute_tables(scale, seed, scheduler=scheduler, progress=progress)
    pg, biregular, coset, tight, srg = (tables[k] for k in ("pg", "biregular", "coset", "tight", "srg"))
    unbiased, sgd = tables["unbiased"], tables["sgd"]
    for name, frame in (
        ("pg2_9_rd", pg),
        ("biregular_construction2", biregular),
        ("coset_s0", coset),
        ("tight_r1", tight),
        ("srg_rd", srg),
        ("rd_unbiased", unbiased),
        ("sgd_convergence", sgd),
    ):
        atomic_write_text(out / f"{name}.csv", frame.to_csv(index=False))
    pg_samples = f"{scale.rd_encoders} draws x {scale.rd_patterns} straggler sets per point"
    plot_pg(pg, out / "pg2_9_rd.png", pg_samples)
    plot_biregular(
        biregular, out / "biregular_construction2.png", f"{scale.biregular_patterns} straggler sets per point"
    )
    plot_coset(coset, out / "coset_s0.png")
    plot_srg(srg, out / "srg_rd.png", f"{scale.srg_draws} draws x {scale.srg_patterns} straggler sets per point")
    plot_sgd(sgd, out / "sgd_convergence.png")
    claims = pd.DataFrame(paper_claims(tables) + training_claims(out.parent))
    atomic_write_text(out / "claims.csv", claims.to_csv(index=False))
    atomic_write_text(out / "claims.md", claims_markdown(claims))
    required = claims[claims.must_hold.astype(bool)]
    ok = bool(required.holds.astype(bool).all())
    table = pg[["s", "rd_mean", "baseline_mean", "upper_closed", "lower_closed", "lower_search"]]
    text = (
        f"PG(2,9), m = 2, RD ±1 ({pg_samples}): raw error err(B, F), max mN = 182\n"
        + table.to_string(index=False, float_format=lambda x: f"{x:.4g}")
        + f"\nBi-regular graph (20 parts x 40 workers), m = 2, {scale.biregular_patterns} straggler sets per point:\n"
        + biregular[
            [
                "s",
                "construction2_gaussian_mean",
                "construction2_signs_mean",
                "construction2_signs_dd_max",
                "baseline_mean",
            ]
        ].to_string(index=False, float_format=lambda x: f"{x:.4g}")
        + "\nThe paper's claims (all of them, the training stage's too, in claims.md):\n"
        + "\n".join(
            f"  {_verdict(r)}: {r.claim} -- {r.measure} = {_number(r.value)}"
            for r in claims.itertuples()
            if r.source != "training" or _verdict(r) == "not run"  # the training stage prints its own
        )
        + _training_note(claims)
    )
    files = ["pg2_9_rd.csv", "biregular_construction2.csv", "coset_s0.csv", "tight_r1.csv", "srg_rd.csv"]
    files += ["rd_unbiased.csv", "sgd_convergence.csv", "claims.csv", "claims.md"]
    files += ["pg2_9_rd.png", "biregular_construction2.png", "coset_s0.png", "srg_rd.png", "sgd_convergence.png"]
    figures = {  # one line each in the results index
        "pg2_9_rd.png": "PG(2,9), m = 2: RD(0) and the baseline between the upper and lower bounds vs s",
        "biregular_construction2.png": "Bi-regular graph (20 parts x 40 workers): Construction 2 (Gaussian, ±1) with "
        "its diagonal-dominance bound, and the baselines",
        "coset_s0.png": "Coset graphs at s = 0: every draw's normalized error (exact draws at the floor)",
        "srg_rd.png": "Strongly regular graphs: RD's mean error and Corollary 4's bound (mean and worst case)",
        "sgd_convergence.png": "SGD: the runs' average squared gradient norm vs T, its exact expectation and the bound",
    }
    return {"ok": ok, "files": files, "figures": figures, "text": text, "inputs": ["training/claims.csv"]}
