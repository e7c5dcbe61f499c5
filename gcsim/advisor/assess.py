"""Encoders of a candidate assignment and the numbers the advisor reports for each scheme.

For every :class:`~gcsim.advisor.candidates.Structure` the advisor tries the encoders of
:data:`ENCODERS` at the asked ``m`` and the ``m = 1`` classic code of its family
(:data:`CLASSIC`); an encoder that does not apply becomes a
:class:`~gcsim.advisor.candidates.Dropped` with the reason (the rank condition
``r_i >= s + m`` of the exact family, ``r_i >= m`` of NS, an unlucky or ill-conditioned draw).
Each scheme is then measured with gcsim's public evaluators (one kernel):

* the expected optimal-decoding error ``E_S[err]/(mN)`` (:func:`gcsim.coding.evaluate.expected_error`:
  exact when the pattern count is within ``exact_limit``, else Monte Carlo with a 95% interval);
* the worst case over ``|S| = s`` (:func:`~gcsim.coding.evaluate.worst_case_error`), only for a
  subset model and only when ``C(n, s) <= worst_limit``, else a stated skip;
* the proved bounds of :mod:`gcsim.coding.bounds` averaged over the question's patterns: the rank
  lower bound (every encoder on the assignment), the RD scaled-sign upper bound (RD(0) only;
  an expectation over the encoder draw) and the spectral upper bounds of regular assignments
  (:func:`spectral_bound`);
* the communication per worker ``1/m`` of a gradient and, with links, the expected time per
  iteration ``E[D] + (l_max/N) C + latency + bytes/(m bandwidth)`` (docs/theory.md, advisor chapter).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_int
from ..coding.bounds import (
    rank_lower_bound,
    rd_upper_bound,
    spectral_decoder_upper_bound,
    spectral_rd_upper_bound,
    spectral_upper_bound,
)
from ..coding.delays import expected_decode_time
from ..coding.encoders import MethodNames, encoders, get_encoder
from ..coding.estimators import expected_rank_lower_bound, has_closed_form_law, rank_bound_function
from ..coding.evaluate import MIN_MC_SAMPLES, expected_error, worst_case_error
from ..coding.schemes import Scheme, encode
from ..coding.sparse_routes import SPARSE_SRG_KIND, SparseRD, encode_sparse
from ..coding.straggler_base import assignment_loads
from ..coding.structured import StructuredRD, encode_structured
from ..combinatorics.cyclic_design import CyclicDesign
from ..errors import GcsimError
from .candidates import Dropped, Question, Structure, _why

__all__ = [
    "ENCODERS",
    "advisor_encoders",
    "CLASSIC",
    "WEIGHTED",
    "spectral_bound",
    "spectral_cost",
    "SPECTRAL_BUDGET",
    "Settings",
    "bound_question",
    "SCREEN_FRACTION",
    "screen_settings",
    "measure_error",
    "Patterns",
    "question_patterns",
    "design_s",
    "schemes_of",
    "EXACT_BUILD_BUDGET",
    "EVAL_BUDGET",
    "PRUNE_COST",
    "dense_eval_cost",
    "evaluated_patterns",
    "Route",
    "route_of",
    "SPARSE_ROUTES",
    "sparse_rd_route",
    "StructuredAssignment",
    "m1_closed_form",
    "exact_build_cost",
    "build_scheme",
    "decode_time",
    "iteration_time",
    "assess",
]


def advisor_encoders() -> tuple[str, ...]:
    """The registered encoders with an ``advisor`` place, in that order (those tried at the asked ``m``)."""
    tried = [(e.advisor, e.name) for e in encoders() if e.advisor is not None]
    return tuple(name for _, name in sorted(tried, key=lambda t: t[0]))


#: Encoders tried at the asked ``m`` on every assignment, in this order (live: it reads the registry).
ENCODERS: Sequence[str] = MethodNames(advisor_encoders)
#: The ``m = 1`` classic code of a family (``B = A`` or Tandon et al.'s codes), tried beside them.
CLASSIC: dict[str, str] = {
    "bibd": "bibd-optimal",
    "random-regular": "expander",
    "mgg": "expander",
    "fractional": "fractional-repetition",
    "cyclic": "cyclic-mds",
    "weighted-mgg": "weighted",
    "chordal-cycle": "weighted",
}
#: Families whose objects carry multiplicities: the ``"weighted"`` encoder is tried at ``m`` too.
WEIGHTED: tuple[str, ...] = ("weighted-mgg", "chordal-cycle")


@dataclass(frozen=True)
class Settings:
    """Evaluation budgets: exact below ``exact_limit`` patterns, else ``samples`` Monte Carlo draws."""

    exact_limit: int = 20000
    samples: int = 2000
    worst_limit: int = 20000


#: The screening pass draws this fraction of the budget (``samples // SCREEN_FRACTION`` draws and
#: ``exact_limit // SCREEN_FRACTION`` enumerated patterns, at least ``MIN_MC_SAMPLES`` of each).
SCREEN_FRACTION = 8


def screen_settings(settings: Settings) -> Settings | None:
    """The budgets of the first, screening pass of every candidate (None: the full budget is as small).

    Every candidate is first measured with about ``1/SCREEN_FRACTION`` of the draws and of the
    enumerated patterns; only those whose interval overlaps the leader's get the full budget
    (:func:`gcsim.advisor.core.undecided`).  The screen's numbers are themselves a valid result (an
    estimate with its 95 % interval), only wider.

    >>> screen_settings(Settings())
    Settings(exact_limit=2500, samples=250, worst_limit=20000)
    >>> screen_settings(Settings(samples=100)) is None          # no smaller budget gives a t interval
    True
    """
    samples = max(MIN_MC_SAMPLES, settings.samples // SCREEN_FRACTION)
    if samples >= settings.samples:
        return None
    exact_limit = min(settings.exact_limit, max(MIN_MC_SAMPLES, settings.exact_limit // SCREEN_FRACTION))
    return Settings(exact_limit=exact_limit, samples=samples, worst_limit=settings.worst_limit)


@dataclass(frozen=True)
class Patterns:
    """The question's non-straggler patterns for the bounds: masks, weights (summing to 1) and how."""

    masks: np.ndarray
    weights: np.ndarray
    how: str


def question_patterns(q: Question, settings: Settings) -> Patterns | None:
    """Masks that average a bound over the straggler model: all of them when affordable, else a sample.

    Fixed (and all-pattern) models: every ``s``-subset when ``C(n, s) <= exact_limit``; Bernoulli and
    Markov (stationary): all ``2^n`` patterns with their probabilities when ``2^n <= exact_limit``;
    a trace: its iterations; otherwise ``samples`` draws of ``model.sample(samples, seed)`` (fewer
    when ``samples x n`` masks would pass :data:`gcsim.limits.MAX_DENSE_ENTRIES`).
    None for the worst-case model (no distribution).
    """
    model, n = q.model, q.n
    if model.adversarial:
        return None
    whole = model.exact_patterns(settings.exact_limit)
    if whole is not None:
        return Patterns(*whole)
    # at most MAX_DENSE_ENTRIES mask entries (n ~ 10^4: 1,764 of the 2,000 draws)
    count = max(2, min(settings.samples, limits.MAX_DENSE_ENTRIES // max(n, 1)))
    masks = np.asarray(model.sample(count, q.seed), dtype=bool)
    return Patterns(masks, np.full(len(masks), 1.0 / len(masks)), f"{len(masks)} sampled patterns")


def design_s(q: Question, replication: int, m: int) -> tuple[int | None, str]:
    """Stragglers the exact family is designed for, and why (None: it cannot be built).

    A subset model's ``s``, a delay model's ``"first"`` rule's ``s``, otherwise the most any
    exact code on this assignment absorbs, ``r_min - m``.
    """
    s = q.design_s
    if s is not None:
        if replication < s + m:
            return None, (
                f"rank condition fails: the exact family needs every part on r_i >= s + m = {s + m} workers, "
                f"here r_min = {replication}"
            )
        return s, f"designed for the model's s = {s}"
    s = replication - m
    if s < 0:
        return None, f"rank condition fails: r_min = {replication} < m = {m}"
    return min(s, q.n - m), f"designed for s = r_min - m = {s} stragglers (the most it can absorb)"


#: The most work (``N n min(N, n)`` per SVD, one SVD per distinct ``s`` of the patterns) spent on the
#: spectral bound of one assignment; above it the column is NaN and the row says why.  At n = 993
#: (PG(2,31), ~70 distinct s among 2000 Bernoulli(0.1) draws) the SVDs alone would take about a minute.
SPECTRAL_BUDGET = 2e10


def spectral_cost(A: np.ndarray, patterns: Patterns) -> float:
    """``N n min(N, n)`` times the number of distinct straggler counts ``s`` among the patterns."""
    N, n = A.shape
    distinct = len(np.unique(patterns.masks.sum(axis=1)))
    return float(N) * n * min(N, n) * distinct


def spectral_bound(A: np.ndarray, method: str, m: int, eps: float, patterns: Patterns) -> float:
    """The spectral upper bound of §46 averaged over the patterns (NaN where it does not apply).

    It depends on the pattern only through ``s = n - |F|``, so it is evaluated once per distinct
    ``s``.  ``m = 1`` and ``B = A D`` (naive, RD, ``bibd-optimal``, ``expander``): the bound on the
    optimal error with the best rescaled arrival decoder (regular replication and loads);
    RD(0) with ``m >= 2``: the spectral form of the RD bound (an expectation over the draw).
    """
    enc = get_encoder(method)
    if not enc.spectral_bound_applies(m, eps):
        return math.nan
    if spectral_cost(A, patterns) > SPECTRAL_BUDGET:
        return math.nan
    n = A.shape[1]
    if m == 1:
        return _mean_over_s(patterns, n, lambda s: spectral_upper_bound(A, s, rescale="optimal", normalized=True))
    return _mean_over_s(patterns, n, lambda s: spectral_rd_upper_bound(A, m, s, normalized=True))


def _mean_over_s(patterns: Patterns, n: int, bound: Any) -> float:
    """``bound(s)`` averaged over the patterns' numbers of stragglers (NaN if a bound does not apply).

    A bound that depends on a pattern only through ``s = n - |F|`` is evaluated once per ``s``;
    ``bound`` raising a :class:`GcsimError` (irregular replication or loads, a stack too large to
    factor: the bound is not proved or not computed) gives NaN.
    """
    s_values = n - patterns.masks.sum(axis=1)
    total = 0.0
    for s in np.unique(s_values):
        try:
            value = bound(int(s))
        except GcsimError:
            return math.nan
        total += float(patterns.weights[s_values == s].sum()) * value
    return total


def weighted_spectral_bound(scheme: Any, patterns: Patterns) -> float:
    """The general decoder bound of §46.1 for the ``"weighted"`` encoder, averaged over the patterns.

    ``(σ_{X_0} sqrt(n s / f) + ||B X_0 - T||_F)^2 / (m N)`` with the scheme's reference decoder
    ``X_0`` rescaled by ``n/f``: it bounds the optimal error of every pattern with ``s`` stragglers
    (for ``m = 1`` and a regular multigraph it is Raviv et al.'s ``(λ/d)^2 n s / f``, Theorem 48.3).
    NaN without a reference decoder or when the stack is too large to factor.
    """
    if getattr(scheme, "decoder", None) is None:
        return math.nan
    scale = float(scheme.m * scheme.num_parts)
    return _mean_over_s(patterns, scheme.n, lambda s: spectral_decoder_upper_bound(scheme, s) / scale)


def _run_quietly(fn: Any) -> tuple[Any, list[str]]:
    """``fn()`` with its warnings caught and returned as text (the table carries them as notes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    notes = []
    for w in caught:
        text = str(w.message).split("\n")[0]
        if text not in notes:
            notes.append(text)
    return out, notes


#: The most work (flops, as :func:`exact_build_cost` counts them) the advisor spends building one
#: exact code (``"exact-gaussian"``, ``"exact-vandermonde"``): their construction solves one
#: ``(n - r_i) x (n - s - m)`` least-squares problem per part by the SVD (LAPACK ``gelsd``) --
#: 1.2e13 for PG(2,31) at ``s = 30``.  A candidate over it is dropped with the estimate, before
#: anything is built; a candidate under it whose build passes :data:`PRUNE_COST` is built after
#: the cheap ones, and not at all when an evaluated row settles it (theory §49.6).
EXACT_BUILD_BUDGET = 2e11


def _lstsq_flops(rows: np.ndarray | float, cols: np.ndarray | float, rhs: int) -> np.ndarray:
    """Flops of an SVD least-squares solve of ``rows x cols`` systems: ``4 p q^2 + 8 q^3 + 2 p q rhs``.

    ``p = max``, ``q = min`` of the two sizes (Golub & Van Loan, *Matrix Computations*, 4th ed.,
    Table 5.5.1: the R-SVD route; an under-determined system is the same count on its transpose).
    """
    p = np.maximum(rows, cols).astype(np.float64)
    q = np.minimum(rows, cols).astype(np.float64)
    return 4.0 * p * q * q + 8.0 * q**3 + 2.0 * p * q * rhs


def exact_build_cost(A: Any, s: int, m: int) -> float:
    """The flops of building the exact family on ``A`` for ``s`` stragglers (an estimate).

    One SVD least-squares solve per part ``i`` with ``n - r_i > 0`` of size
    ``(n - r_i) x (n - s - m)`` with ``m`` right-hand sides, and one of ``B`` (``mN x n``, ``m``
    right-hand sides) for the reference decoder (:func:`_lstsq_flops` each).  ``A`` dense or
    ``scipy.sparse``.  The measured time follows this count: at ``n = 183`` the ``169 x 169``
    per-part solves were 94 % of an advisor run when the estimate was ``N (n - r) (n - s - m)^2``,
    twelve times smaller.

    >>> exact_build_cost(np.ones((3, 4), dtype=int), 1, 2)     # every part on every worker: B's solve only
    992.0
    """
    s, m = check_int("s", s, minimum=0), check_int("m", m, minimum=1)
    N, n = A.shape
    r = np.asarray(A.sum(axis=1), dtype=np.float64).ravel()
    out = n - r
    f = float(max(n - s - m, 0))
    parts = _lstsq_flops(out[out > 0], np.full(int((out > 0).sum()), f), m).sum()
    return float(parts + _lstsq_flops(np.array([m * N]), np.array([n]), m)[0])


#: The most work (flops) the advisor spends on the dense evaluation of one candidate: about
#: ``m N n^2 + (samples + exact_limit) (n^3 / 3 + m n^2)`` (the Gram matrix once, then a Cholesky
#: factor and a solve per pattern).
#: A candidate over it with no structured route (theory §42) is dropped with the estimate before it
#: is built: at n = 993 one dense candidate takes ~1.3e12 flops, several minutes on a core.
EVAL_BUDGET = 3e11
#: A candidate whose dense evaluation is estimated above this many flops (a few seconds on a core)
#: takes a sparse route of :data:`SPARSE_ROUTES` when one applies, is evaluated after the cheap
#: ones, and not at all when an evaluated candidate already settles it (theory §49.6).
PRUNE_COST = 1e10


def dense_eval_cost(N: int, n: int, m: int, settings: Settings, patterns: int | None = None) -> float:
    """``m N n^2 + P (n^3 / 3 + m n^2)``: the flops of a dense evaluation of ``P`` patterns (an estimate).

    ``P`` defaults to ``samples + exact_limit``; the advisor passes :func:`evaluated_patterns`.

    >>> dense_eval_cost(13, 13, 2, Settings(samples=100, exact_limit=100))
    218460.6666666667
    """
    N, n, m = check_int("N", N), check_int("n", n), check_int("m", m)
    per_pattern = n**3 / 3.0 + float(m) * n * n
    count = settings.samples + settings.exact_limit if patterns is None else patterns
    return float(m) * N * n * n + float(count) * per_pattern


def evaluated_patterns(q: Question, settings: Settings) -> int:
    """How many patterns :func:`gcsim.coding.evaluate.expected_error` evaluates for this question (an estimate).

    Enumerated patterns count only where they are enumerated: every ``s``-subset when
    ``C(n, s) <= exact_limit``, all ``2^n`` Bernoulli patterns when ``2^n <= exact_limit``, the
    heaviest ``|S|`` strata of a homogeneous Bernoulli model that fit in ``exact_limit``; the
    sampled strata get their share of ``samples`` and at least 2 draws each (at n = 993, p = 0.1:
    148 strata of weight at least 1e-15, so 250 draws become 460); otherwise ``samples``.

    >>> from gcsim.coding.stragglers import straggler_model
    >>> q = Question(993, 32, 2, straggler_model("bernoulli", 993, p=0.1))
    >>> evaluated_patterns(q, Settings(samples=250, exact_limit=2500))
    460
    """
    key = (q.model.describe(), q.n, settings)
    if key not in _PATTERN_COUNTS:
        if len(_PATTERN_COUNTS) > 64:
            _PATTERN_COUNTS.clear()
        _PATTERN_COUNTS[key] = _evaluated_patterns(q, settings)
    return _PATTERN_COUNTS[key]


_PATTERN_COUNTS: dict[tuple, int] = {}


def _evaluated_patterns(q: Question, settings: Settings) -> int:
    return q.model.pattern_budget(settings.exact_limit, settings.samples, settings.worst_limit)


@dataclass(frozen=True)
class Route:
    """How one candidate is built and evaluated.

    ``build``: ``"dense"`` (:func:`gcsim.coding.encode`: a :class:`~gcsim.coding.Scheme`; its
    ``"auto"`` evaluation takes the structured route of theory §42 by itself where it applies) or
    ``"structured"`` (a sparse encoder that never forms ``B``: :func:`encode_structured` for RD,
    :class:`StructuredAssignment` for ``B = A``, or a route of :data:`SPARSE_ROUTES`).
    ``evaluate``: ``"auto"`` (:func:`gcsim.coding.evaluate.expected_error`) or ``"closed-form"``
    (:func:`m1_closed_form`: ``B = A``, ``m = 1`` on ``AᵀA = aI + λJ``, exact).  ``cost``: the
    estimated flops of a dense build and evaluation (:func:`dense_eval_cost` plus
    :func:`exact_build_cost` for the exact family; for a route of :data:`SPARSE_ROUTES` the dense
    evaluation it replaces; 0 for the pair-Gram and closed-form routes): over
    :data:`PRUNE_COST` the candidate is evaluated after the cheap ones, and only when no evaluated
    row settles it (theory §49.6).
    """

    build: str
    evaluate: str
    cost: float = 0.0
    sparse: Any = None


#: Sparse routes beyond theory §42, tried in order for a candidate that neither the dense
#: evaluation (within :data:`EVAL_BUDGET` and :data:`gcsim.limits.MAX_DENSE_ENTRIES`) nor the
#: pair-Gram route takes.  Each is a callable ``route(structure, method, m, q)`` returning None
#: (it does not apply) or a zero-argument builder of an encoder that
#: :func:`gcsim.coding.evaluate.expected_error` evaluates without dense matrices (its ``"auto"``
#: route must recognise it), with the attributes ``m``, ``n``, ``num_parts``, ``verify()``.  The
#: SRG, coset and bi-regular graph route of theory §44 (:func:`sparse_rd_route`) is the first.
SPARSE_ROUTES: list[Any] = []


def sparse_rd_route(structure: Structure, method: str, m: int, q: Question) -> Any:
    """RD on any sparse 0/1 assignment by the certified sparse route of theory §44, or None.

    The builder is :func:`gcsim.coding.sparse_routes.encode_sparse` on the structure's object (a
    strongly regular graph: the bound ``c`` of Theorem 44.2 from its spectrum, after an exact
    ``verify()``, at any size) or on its sparse incidence (a coset or bi-regular graph, any 0/1
    assignment: the Cholesky certificate of Lemma 44.4, which needs ``n^2 <=``
    :data:`gcsim.limits.MAX_DENSE_ENTRIES`; beyond it None, and the advisor says why no route
    applies).  The diagonals are those of ``encode(obj, m, "rd", seed=q.seed)``; a pattern the
    route does not certify goes to the dense kernels when ``B`` fits, else the candidate is
    dropped with the half-width; no proved ``c > 0`` at all: the dense RD scheme where ``B``
    fits (its ``"auto"`` route), else a drop with the reason.  None for another encoder or an
    assignment with multiplicities.

    >>> from gcsim.coding.stragglers import straggler_model
    >>> from gcsim.coding.sparse_routes import lattice_graph_sparse
    >>> g = Structure("srg", "L(5)", lattice_graph_sparse(5))
    >>> enc = sparse_rd_route(g, "rd", 2, Question(25, 9, 2, straggler_model("bernoulli", 25, p=0.1)))()
    >>> type(enc).__name__, enc.context.source
    ('SparseRD', 'SRG(25, 8, 3, 2) spectrum')
    """
    m = check_int("m", m)
    if get_encoder(method).structured_route(m) != "diagonals" or m < 1:  # RD: B stacks A diag(d_l)
        return None
    inc = structure.incidence
    if inc.nnz and not np.all(inc.data == 1):
        return None
    obj = structure.obj
    algebra = (
        getattr(obj, "kind", None) in ("srg", SPARSE_SRG_KIND) and hasattr(obj, "adjacency") and hasattr(obj, "params")
    )
    n = structure.shape[1]
    if not algebra and n * n > limits.MAX_DENSE_ENTRIES:
        return None
    design = obj if algebra else inc
    N = structure.shape[0]
    dense = structure.dense_fits and m * N * n <= limits.MAX_DENSE_ENTRIES

    def build() -> Any:
        try:
            return encode_sparse(design, m, seed=q.seed)
        except GcsimError:  # no proved c > 0 (B may be rank deficient): the dense RD where it fits
            if not dense:
                raise
            return encode(structure.obj, m, "rd", seed=q.seed)

    return build


SPARSE_ROUTES.append(sparse_rd_route)


def _m1_assignment(method: str, m: int) -> bool:
    return get_encoder(method).is_assignment_code(m)


def _closed_form_model(model: Any) -> bool:
    return model.arrival_count_expectation(np.zeros(model.n + 1)) is not None


def route_of(structure: Structure, method: str, m: int, q: Question, settings: Settings | None) -> Route | str:
    """The :class:`Route` of one candidate, or why none evaluates it within the budgets (cached per structure).

    In order: a route of :data:`SPARSE_ROUTES` when the dense evaluation would cost more than
    :data:`PRUNE_COST` (or ``B`` is beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`); ``B = A`` with
    ``m = 1`` on ``AᵀA = aI + λJ`` in the same case: the closed form (fixed-``s`` and homogeneous
    Bernoulli models); the dense route when ``B`` fits the limit and its evaluation
    :data:`EVAL_BUDGET` (for RD on ``AᵀA = aI + λJ`` whatever the cost: ``"auto"`` takes theory
    §42 on the dense scheme); RD or ``B = A`` on ``AᵀA = aI + λJ`` beyond the limit: the
    structured encoders.
    """
    cache: dict[Any, Any] = structure._cache  # type: ignore[attr-defined]
    # the budgets and the limit are read at call time (a changed limit changes the route)
    key = ("route", method, m, q.model.describe(), settings, EVAL_BUDGET, PRUNE_COST, limits.MAX_DENSE_ENTRIES)
    if key in cache:
        return cache[key]
    enc = get_encoder(method)
    N, n = structure.shape
    dense_ok = m * N * n <= limits.MAX_DENSE_ENTRIES and structure.dense_fits
    gram = structure.pair_gram() if enc.structured_route(m) is not None else None
    cost = dense_eval_cost(N, n, m, settings, evaluated_patterns(q, settings)) if settings is not None else 0.0
    out: Route | str = ""
    if gram is None and not (dense_ok and cost <= PRUNE_COST):  # a sparse route before a costly dense one
        for sparse_route in SPARSE_ROUTES:
            builder = sparse_route(structure, method, m, q)
            if builder is not None:
                # its work is not known in advance (CG iterations per pattern, uncertified patterns on
                # the dense kernels): it is ordered and pruned as the dense evaluation it replaces
                out = Route("structured", "auto", cost, builder)
                break
    dear = not dense_ok or cost > PRUNE_COST
    if out != "":
        pass
    elif gram is not None and _m1_assignment(method, m) and _closed_form_model(q.model) and dear:
        out = Route("dense" if dense_ok else "structured", "closed-form")
    elif dense_ok and (cost <= EVAL_BUDGET or (gram is not None and enc.structured_route(m) == "diagonals")):
        # the construction counts too: an exact code's per-part solves can cost more than its evaluation
        free = gram is not None and enc.structured_route(m) == "diagonals"
        out = Route("dense", "auto", 0.0 if free else cost + _build_cost(structure, enc, m, q))
    elif gram is not None:
        out = Route("structured", "auto")
    elif dense_ok:
        out = (
            f"evaluation over the advisor's budget: the dense route, about m N n^2 + P (n^3/3 + m n^2) = "
            f"{cost:.3g} flops for P = {evaluated_patterns(q, settings) if settings else 0} patterns > "
            f"EVAL_BUDGET = {EVAL_BUDGET:.3g}, and no structured route applies (theory §42: B = A diag(d) "
            "blocks on A with AᵀA = aI + λJ)"
        )
    else:
        out = (
            f"the dense encoder would have m N n = {m * N * n:,} entries, over MAX_DENSE_ENTRIES, and no "
            f"structured route evaluates {method} on it (theory §42: RD or B = A on AᵀA = aI + λJ)"
        )
    cache[key] = out
    return out


def _build_cost(structure: Structure, enc: Any, m: int, q: Question) -> float:
    """The estimated flops of building a dense encoder: :func:`exact_build_cost` for the exact family, else 0."""
    if not enc.designed_for_stragglers():
        return 0.0
    s, _ = design_s(q, int(structure.replication.min()), m)
    return 0.0 if s is None else exact_build_cost(structure.incidence, s, m)


class StructuredAssignment(StructuredRD):
    """``B = A`` (``m = 1``: ``"bibd-optimal"``, ``"expander"``) on ``AᵀA = aI + λJ``, kept sparse.

    The structured encoder of theory §42 with every diagonal 1 (``B = A diag(1)``): the evaluators
    take the structured route for it, and ``B``/``assignment`` are dense only on request.

    >>> from gcsim.combinatorics.bibd import bibd
    >>> enc = StructuredAssignment(bibd(7, 3).incidence, "bibd-optimal", 3, 1)
    >>> enc.method, enc.params, bool((enc.B == bibd(7, 3).assignment).all())
    ('bibd-optimal', SchemeParams(num_parts=7, n=7, m=1), True)
    """

    def __init__(self, incidence: Any, method: str, k: int, lam: int):
        super().__init__(sp.csc_matrix(incidence, dtype=np.int64), np.ones((1, incidence.shape[1])), k, lam, {})
        self.method = method


def m1_closed_form(N: int, k: int, lam: int, n: int, model: Any) -> dict[str, Any] | None:
    """The exact expected error of ``B = A`` (``m = 1``) on ``AᵀA = (k − λ)I + λJ``, normalized by ``N``.

    Theorem 42.1 with ``m = 1`` and unit diagonals: ``err(F) = (N a − c f) / (a + λ f)`` with
    ``f = |F|``, ``a = k − λ``, ``c = k² − Nλ``; it depends on ``F`` only through ``f``, so the
    expectation is a sum over the distribution of ``f``: one value for a fixed-``s`` model, the
    binomial ``f ~ Bin(n, 1 − p)`` for homogeneous Bernoulli stragglers.  None for other models.

    >>> from gcsim.coding.stragglers import straggler_model
    >>> m1_closed_form(7, 3, 1, 7, straggler_model("fixed", 7, s=1))["error"]     # Fano plane, one straggler
    0.03571428571428571
    """
    N, k, lam = check_int("N", N, minimum=1), check_int("k", k, minimum=1), check_int("lam", lam, minimum=0)
    n = check_int("n", n, minimum=1)
    limits.check_entries("n", (n + 1,), "the law of the number of arrivals |F| (n + 1 values)")
    a, c = k - lam, k * k - N * lam
    f = np.arange(n + 1, dtype=np.float64)
    err = (N * a - c * f) / (a + lam * f) / N
    found = model.arrival_count_expectation(err)  # err depends on F only through |F|
    if found is None:
        return None
    value = found
    return {"error": value, "error_lo": value, "error_hi": value, "error_method": "exact"}


def schemes_of(
    structure: Structure, q: Question, settings: Settings | None = None
) -> list[tuple[str, int, dict[str, Any], str] | Dropped]:
    """The encoders to try on one assignment: ``(method, m, options, note)`` or a :class:`Dropped`.

    With ``settings``, an encoder that no :class:`Route` evaluates within the budgets
    (:func:`route_of`: the dense evaluation over :data:`EVAL_BUDGET` or beyond
    :data:`gcsim.limits.MAX_DENSE_ENTRIES`, and no structured route) is dropped with the reason.
    """
    out = _schemes_of(structure, q)
    if settings is None:
        return out
    kept: list[tuple[str, int, dict[str, Any], str] | Dropped] = []
    for item in out:
        if not isinstance(item, Dropped):
            route = route_of(structure, item[0], item[1], q, settings)
            if isinstance(route, str):
                item = Dropped(structure.family, structure.name, item[0], route)
        kept.append(item)
    return kept


def _schemes_of(structure: Structure, q: Question) -> list[tuple[str, int, dict[str, Any], str] | Dropped]:
    r_min = int(structure.replication.min())
    A = structure.assignment if structure.dense_fits else None
    out: list[tuple[str, int, dict[str, Any], str] | Dropped] = []
    for method in advisor_encoders():
        enc = get_encoder(method)
        if A is None:  # kept sparse: only the encoders a structured route builds (route_of says which)
            if enc.structured_route(q.m) != "diagonals":
                out.append(
                    Dropped(
                        structure.family,
                        structure.name,
                        method,
                        f"the assignment ({structure.shape[0]:,} x {structure.shape[1]:,}) is kept sparse, over "
                        f"MAX_DENSE_ENTRIES: {method} needs the dense matrix",
                    )
                )
                continue
            out.append((method, q.m, {}, ""))
            continue
        why_not = enc.applies(A, q.m) if enc.applies is not None else None
        if why_not is not None:
            out.append(Dropped(structure.family, structure.name, method, why_not))
            continue
        if enc.designed_for_stragglers():
            s, why = design_s(q, r_min, q.m)
            if s is None:
                out.append(Dropped(structure.family, structure.name, method, why))
                continue
            cost = exact_build_cost(A, s, q.m)
            if cost > EXACT_BUILD_BUDGET:
                out.append(
                    Dropped(
                        structure.family,
                        structure.name,
                        method,
                        f"construction over the advisor's budget: one SVD least-squares solve of (n - r_i) x "
                        f"(n - s - m) per part, about {cost:.3g} flops > EXACT_BUILD_BUDGET = {EXACT_BUILD_BUDGET:.3g}",
                    )
                )
                continue
            out.append((method, q.m, {"s": s}, why))
            continue
        out.append((method, q.m, {}, ""))
    if structure.family in WEIGHTED and q.m > 1:
        out.append(("weighted", q.m, {}, "multiplicities kept, RD diagonals"))
    classic = CLASSIC.get(structure.family)
    if classic is not None and not get_encoder(classic).is_assignment_code(q.m):
        out.append((classic, 1, {}, "an m = 1 code"))
    return out


def build_scheme(
    structure: Structure, q: Question, method: str, m: int, options: dict[str, Any], route: Route | None = None
) -> Any:
    """Build one encoder by its :class:`Route`; a refusal or an ill-conditioned exact code becomes a :class:`Dropped`.

    The dense route: :func:`gcsim.coding.encode` (a :class:`~gcsim.coding.Scheme`); the structured
    one: :func:`gcsim.coding.structured.encode_structured` (RD, the diagonals ``encode`` would draw
    for the same seed), :class:`StructuredAssignment` (``B = A``) or the builder of a sparse route.
    """
    build: Any
    if route is None or route.build == "dense":
        build = lambda: encode(structure.obj, m, method, seed=q.seed, **options)  # noqa: E731
    elif route.sparse is not None:
        build = route.sparse
    elif _m1_assignment(method, m):
        k, lam = structure.pair_gram() or (0, 0)
        build = lambda: StructuredAssignment(structure.incidence, method, k, lam)  # noqa: E731
    else:
        # a cyclic design goes as itself: its encoder is kept (and exported) as the difference set
        source = structure.obj if isinstance(structure.obj, CyclicDesign) else structure.incidence
        build = lambda: encode_structured(source, m, seed=q.seed, **options)  # noqa: E731
    try:
        scheme, notes = _run_quietly(build)
    except GcsimError as exc:
        return Dropped(structure.family, structure.name, method, f"{type(exc).__name__}: {_why(exc)}")
    bad = [t for t in notes if "cannot carry" in t or "inaccurate" in t]
    if bad:
        return Dropped(structure.family, structure.name, method, f"ill-conditioned: {bad[0]}")
    return scheme


def decode_time(q: Question) -> tuple[float, str]:
    """``(E[D], how)``: the expected decode time of a delay model, 0 for a model without times.

    It depends on the question only (the arrival rule picks the workers, not the code), so the
    advisor computes it once.
    """
    if q.model.delay_parts() is not None:
        res, _ = _run_quietly(lambda: expected_decode_time(q.model))
        return float(res.mean), f"E[D] {res.method}"
    return 0.0, "the model has no times: E[D] = 0"


def iteration_time(q: Question, scheme: Scheme, decode: float) -> float:
    """``E[T] = E[D] + (l_max / N) C + latency + gradient_bytes / (m bandwidth)`` (NaN without links).

    ``D`` the decode time of the arrival rule, ``l_max / N`` the largest fraction of the data a
    worker holds, ``C`` the compute time of the whole data set (docs/theory.md, advisor chapter).
    """
    links = q.links
    if links is None:
        return math.nan
    inc = getattr(scheme, "incidence", None)
    A = inc if inc is not None else np.asarray(scheme.assignment)
    fraction = float(np.asarray(A.sum(axis=0)).max()) / A.shape[0]
    return decode + fraction * links.compute_time + links.transfer_time(scheme.m)


def _cached(cache: dict[tuple, float] | None, key: tuple, compute: Any) -> float:
    if cache is None:
        return float(compute())
    if key not in cache:
        cache[key] = float(compute())
    return cache[key]


def measure_error(
    scheme: Any, q: Question, settings: Settings, closed_form: tuple[int, int, int] | None = None
) -> tuple[dict[str, Any], list[str]] | str:
    """The expected-error columns of a row (``error``, ``error_lo``, ``error_hi``, ``error_method``) and notes.

    :func:`gcsim.coding.evaluate.expected_error` with the settings' budgets (its ``"auto"`` route:
    the structured evaluator of §42 where the scheme allows it); ``closed_form = (N, k, λ)``: the
    exact :func:`m1_closed_form` of ``B = A``.  The worst-case model has no expectation (NaN here,
    the worst case fills them in).  A gcsim refusal returns its message.
    """
    if q.model.adversarial:
        return {"error": math.nan, "error_lo": math.nan, "error_hi": math.nan, "error_method": "worst-case model"}, []
    if closed_form is not None:
        exact = m1_closed_form(*closed_form, q.n, q.model)
        if exact is not None:
            return exact, ["exact in closed form (theory §49.6a: B = A, m = 1, err depends on F only through |F|)"]
    try:
        res, notes = _run_quietly(
            lambda: expected_error(
                scheme,
                q.model,
                exact_limit=settings.exact_limit,
                samples=settings.samples,
                seed=q.seed,
                normalized=True,
                progress=False,
            )
        )
    except GcsimError as exc:
        return str(exc)
    fields = {"error": res.mean, "error_lo": float(res.ci[0]), "error_hi": float(res.ci[1]), "error_method": res.method}
    return fields, notes


def rank_bound_mean(structure: Structure, m: int, model: Any, patterns: Patterns) -> float:
    """``E_S[Σ_i (m − c_i(F))^+]``, the rank lower bound's mean (raw): exact where its law is known.

    Fixed-``s``, Bernoulli and Markov stragglers: the closed form of theory §57.1
    (:func:`gcsim.coding.estimators.expected_rank_lower_bound`), a proven lower bound on every
    encoder's expected error.  Other models (delays, traces): the average over the question's
    patterns (:func:`_rank_lower`).
    """
    if has_closed_form_law(model):
        return expected_rank_lower_bound(structure.incidence, m, model)
    return _rank_lower(structure, m, patterns)


def _rank_lower(structure: Structure, m: int, patterns: Patterns) -> float:
    """The rank lower bound of theory §45 averaged over the patterns, from the sparse incidence.

    ``Σ_i (m − c_i(F))^+`` with ``c_i(F)`` the arrived holders of part ``i``
    (:func:`gcsim.coding.bounds.rank_lower_bound`, whose dense product this is, chunk by chunk).
    """
    if structure.dense_fits:
        return float(patterns.weights @ rank_lower_bound(structure.assignment, m, patterns.masks))
    bound = rank_bound_function(structure.incidence, m)
    total = 0.0
    step = max(1, 2**22 // max(structure.shape[0], 1))
    for a in range(0, len(patterns.masks), step):
        total += float(patterns.weights[a : a + step] @ bound(patterns.masks[a : a + step]))
    return total


def _identity(structure: Structure, q: Question, method: str, m: int, options: dict[str, Any]) -> dict[str, Any]:
    """The first columns of a candidate's row: its name, family, structure, encoder and sizes."""
    N, n = structure.shape
    loads = structure.loads
    return {
        "name": f"{structure.name} / {method}"
        + (f" (s={options['s']})" if "s" in options else "")
        + (f" (m={m})" if m != q.m else ""),
        "family": structure.family,
        "structure": structure.name,
        "encoder": method,
        "N": N,
        "n": n,
        "m": m,
        "load": int(loads.max()),
        "data_fraction": float(loads.max() / N),
        "replication": int(structure.replication.min()),
    }


def _worst_case(scheme: Any, n: int, q: Question, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """``worst_case`` and ``worst_method`` of a row (over ``|S| = s`` of ``n`` workers, only where affordable), and
    notes."""
    s = q.design_s
    if s is None:
        return {"worst_case": math.nan, "worst_method": "skipped: the model has no fixed straggler count s"}, []
    if math.comb(n, s) > settings.worst_limit:
        why = f"skipped: C({n},{s}) = {math.comb(n, s):.3g} patterns > worst_limit = {settings.worst_limit}"
        return {"worst_case": math.nan, "worst_method": why}, []
    try:
        wc, extra = _run_quietly(
            lambda: worst_case_error(scheme, s, exact_limit=settings.worst_limit, normalized=True, progress=False)
        )
    except GcsimError as exc:
        return {"worst_case": math.nan, "worst_method": f"skipped: {_why(exc)}"}, []
    return {"worst_case": wc.value, "worst_method": f"exact over C({n},{s}) = {math.comb(n, s)} patterns"}, extra


def _bounds(
    structure: Structure,
    q: Question,
    method: str,
    m: int,
    scheme: Any,
    patterns: Patterns | None,
    cache: dict[tuple, float] | None,
) -> tuple[dict[str, Any], list[str]]:
    """A row's ``lower_bound``, ``upper_bound``, ``spectral_bound`` (means over the question's patterns) and
    ``bounds_over``, and the notes of the bounds skipped.

    The bounds depend on the assignment, ``m`` and the encoder's class only: computed once per
    structure through ``cache`` (an ``n ~ 10^3`` design has six encoders, and a spectral bound is
    one SVD per ``s``).
    """
    if patterns is None:
        how = "no distribution (worst-case model)"
        return {"lower_bound": math.nan, "upper_bound": math.nan, "spectral_bound": math.nan, "bounds_over": how}, []
    N, n = structure.shape
    notes: list[str] = []
    w = patterns.weights
    eps = float(scheme.options.get("eps", 0.0))
    enc = get_encoder(method)
    key = (structure.family, structure.name, m)
    lower = _cached(cache, (*key, "rank"), lambda: rank_bound_mean(structure, m, q.model, patterns) / (m * N))
    upper = math.nan
    dense = structure.dense_fits
    if "rd_upper" in enc.bounds and eps == 0.0 and dense:
        A = structure.assignment
        upper = _cached(cache, (*key, "rd"), lambda: float(w @ rd_upper_bound(A, m, patterns.masks, normalized=True)))
    elif "rd_upper" in enc.bounds and eps == 0.0:
        notes.append("RD upper bound skipped: it needs the dense assignment")
    if "spectral_decoder_upper" in enc.bounds:
        spectral = weighted_spectral_bound(scheme, patterns)
    else:
        applies = dense and enc.spectral_bound_applies(m, eps)
        kind = "m1" if m == 1 else "rd"  # the two bounds spectral_bound computes
        over = float(N) * n * min(N, n) * len(np.unique(patterns.masks.sum(axis=1))) > SPECTRAL_BUDGET
        spectral = (
            _cached(
                cache,
                (*key, "spectral", kind),
                lambda: spectral_bound(structure.assignment, method, m, eps, patterns),
            )
            if applies and not over
            else math.nan
        )
        if applies and over:
            notes.append(
                f"spectral bound skipped: {len(np.unique(patterns.masks.sum(axis=1)))} SVDs of a {N} x {n} "
                "matrix, over SPECTRAL_BUDGET"
            )
    how = patterns.how
    if has_closed_form_law(q.model):
        how += "; lower_bound: the rank bound's exact mean (theory §57.1)"
    return {"lower_bound": lower, "upper_bound": upper, "spectral_bound": spectral, "bounds_over": how}, notes


def bound_question(q: Question, code: Any) -> Question:
    """The question under the law of ``code``'s loads (:meth:`StragglerModel.bind`); itself for other models."""
    if not q.model.load_dependent:
        return q
    return replace(q, model=q.model.bind(*assignment_loads(code)))


def assess(
    structure: Structure,
    q: Question,
    method: str,
    m: int,
    options: dict[str, Any],
    note: str,
    settings: Settings,
    patterns: Patterns | None,
    decode: tuple[float, str] = (0.0, ""),
    cache: dict[tuple, float] | None = None,
) -> tuple[dict[str, Any], Any] | Dropped:
    """Build one scheme and measure it: one row of the advisor's table (and the scheme).

    The scheme is built and evaluated by its :class:`Route` (:func:`route_of`).  ``cache`` (a dict
    the caller keeps across the candidates of one question) holds the bounds of each assignment,
    which do not depend on the encoder within its class.
    """
    if q.model.load_dependent:  # this assignment's law and patterns (theory §63.5)
        try:
            q = bound_question(q, structure)
        except GcsimError as exc:
            return Dropped(structure.family, structure.name, method, f"not evaluable: {exc}")
        patterns = question_patterns(q, settings)
    route = route_of(structure, method, m, q, settings)
    if isinstance(route, str):
        return Dropped(structure.family, structure.name, method, route)
    built = build_scheme(structure, q, method, m, options, route)
    if isinstance(built, Dropped):
        return built
    scheme = built
    N, n = structure.shape
    notes = [t for t in (structure.note, note) if t]
    if isinstance(scheme, SparseRD):
        c = scheme.context
        notes.append(
            f"evaluated without dense matrices (SparseRD: theory §44, every pattern certified by Theorem 44.2; "
            f"c = {c.lower:.3g} from the {c.source})"
        )
    elif route.build == "structured":
        notes.append(f"evaluated without dense matrices ({type(scheme).__name__}: theory §42)")
    row = _identity(structure, q, method, m, options)
    # expected error (or, for the worst-case model, the worst case is the error)
    gram = structure.pair_gram() if route.evaluate == "closed-form" else None
    measured = measure_error(scheme, q, settings, (N, *gram) if gram is not None else None)
    if isinstance(measured, str):
        return Dropped(structure.family, structure.name, method, f"not evaluable: {measured}")
    for fields, extra in (measured, _worst_case(scheme, n, q, settings)):
        notes += extra
        row.update(fields)
    if q.model.adversarial:
        row.update(error=row["worst_case"], error_lo=row["worst_case"], error_hi=row["worst_case"])
    fields, extra = _bounds(structure, q, method, m, scheme, patterns, cache)
    notes += extra
    row.update(fields)
    # communication and time
    row["communication"] = 1.0 / m
    row["comm_bytes"] = q.links.gradient_bytes / m if q.links is not None else math.nan
    row["time"] = iteration_time(q, scheme, decode[0])
    row["decode_time"] = decode[0] if q.links is not None else math.nan
    row["notes"] = "; ".join(dict.fromkeys(notes))
    return row, scheme
