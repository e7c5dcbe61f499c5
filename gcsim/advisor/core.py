"""``advise``: which code for ``n`` workers, this load, this ``m``, these stragglers and links.

The steps (docs/theory.md, advisor chapter):

1. enumerate the assignments of every family (:data:`gcsim.advisor.candidates.FAMILIES`, in
   order), keeping the reason of every parameter set that gives none;
2. encode each with every applicable encoder (:data:`gcsim.advisor.assess.ENCODERS` at ``m``
   and the family's ``m = 1`` classic code), keeping the reason of every encoder that does not apply;
   ``m`` is a cap on the communication like the load on the data: a code that sends more than
   ``1/m`` of a gradient per worker (the ``m = 1`` classic codes when ``m > 1``) is dropped with
   its reason unless ``relax_comm`` (:func:`comm_reason`);
3. measure each scheme (expected error, worst case where affordable, bounds, communication,
   time per iteration with links);
4. rank by the objective and flag the candidates another one dominates (Pareto on expected
   error, communication, fraction of the data per worker and, with links, time); dominated
   candidates stay in the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from .. import limits
from .._progress import StageProgress
from .._validation import check_bool, check_int, check_real
from ..coding.bounds.equal_load import equal_load_lower_bound
from ..coding.encoders import get_encoder
from ..coding.evaluate import is_exact_method
from ..coding.schemes import Scheme
from ..coding.straggler_base import StragglerModel
from ..coding.straggler_models import parse_spec, spec_grammar
from ..coding.structured import structured_context
from ..errors import GcsimError, InvalidArgumentError
from ..sweep import check_scheduler, run_sweep
from .advice import Advice, _value as _criterion, pareto_flags, pareto_point, ranking_key
from .assess import (
    EVAL_BUDGET,
    PRUNE_COST,
    Route,
    Settings,
    assess,
    bound_question,
    decode_time,
    dense_eval_cost,
    evaluated_patterns,
    measure_error,
    question_patterns,
    route_of,
    schemes_of,
    screen_settings,
)
from .candidates import (
    FAMILY_NAMES,
    SYMMETRIC_FAMILIES,
    Dropped,
    Links,
    Question,
    Structure,
    check_load,
    structures,
)

__all__ = [
    "advise",
    "OBJECTIVES",
    "STRAGGLER_SPEC",
    "straggler_spec",
    "Progress",
    "undecided",
    "settled_by",
    "mark_ties",
    "equivalence_key",
    "PRUNE_COST",
    "comm_reason",
    "load_bound",
]

#: The straggler models a ``KIND:VALUES`` spec names (``advise(13, 4, 2, "fixed:2")``, ``gcsim advise``): the
#: grammar of every registered kind that has one (:func:`gcsim.coding.straggler_models.spec_grammar`).
STRAGGLER_SPEC = spec_grammar()


def straggler_spec(text: str, n: int) -> StragglerModel:
    """The straggler model over ``n`` workers that a ``KIND:VALUES`` spec names.

    ``fixed:S``, ``all:S`` and ``worst:S`` (``S`` stragglers), ``bernoulli:P`` (each worker
    straggles with probability ``P``), ``markov:P_ENTER,P_LEAVE`` (:func:`gcsim.straggler_model`),
    and the spec of any other registered kind (its class's ``from_spec``).

    >>> straggler_spec("bernoulli:0.1", 13).describe()
    'Bernoulli: each of n=13 workers straggles independently with p=0.1'
    >>> straggler_spec("fixed", 13)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: fixed takes one value, e.g. fixed:10
    """
    return parse_spec(text, n)


#: Criteria an objective may name (all minimized): expected error, communication per worker,
#: expected time per iteration (needs links), fraction of the data per worker, worst-case error
#: over ``|S| = s``.
OBJECTIVES: tuple[str, ...] = ("error", "communication", "time", "data", "worst-case")


def _check_objective(objective: Any, links: Links | None) -> tuple[str, ...]:
    items = (objective,) if isinstance(objective, str) else objective
    if not isinstance(items, (tuple, list)) or not items:
        raise InvalidArgumentError("objective", f"must be one of {OBJECTIVES} or a sequence of them, got {objective!r}")
    out: list[str] = []
    for c in items:
        if not isinstance(c, str) or c not in OBJECTIVES:
            raise InvalidArgumentError("objective", f"must name criteria among {OBJECTIVES}, got {c!r}")
        if c in out:
            raise InvalidArgumentError("objective", f"names {c!r} twice")
        out.append(c)
    if "time" in out and links is None:
        raise InvalidArgumentError("objective", "'time' needs links= (bandwidth, latency, gradient_bytes)")
    return tuple(out)


def _check_links(links: Any) -> Links | None:
    if links is None or isinstance(links, Links):
        return links
    if isinstance(links, Mapping):
        unknown = sorted(set(links) - {"bandwidth", "latency", "gradient_bytes", "compute_time"})
        if unknown:
            raise InvalidArgumentError("links", f"unknown key(s) {unknown}")
        if "bandwidth" not in links:
            raise InvalidArgumentError("links", "needs 'bandwidth' (bytes per second)")
        return Links(**links)
    raise InvalidArgumentError("links", f"must be a Links, a dict or None, got {type(links).__name__}")


def _check_families(families: Any) -> tuple[str, ...]:
    if families is None:
        return FAMILY_NAMES
    items = (families,) if isinstance(families, str) else families
    if not isinstance(items, (tuple, list)) or not items:
        raise InvalidArgumentError("families", f"must be a sequence of names among {FAMILY_NAMES}")
    for f in items:
        if f not in FAMILY_NAMES:
            raise InvalidArgumentError("families", f"unknown family {f!r}; known: {FAMILY_NAMES}")
    return tuple(dict.fromkeys(items))  # a family named twice is searched once


def _assess_task(task: tuple) -> Any:
    """One candidate evaluation for :func:`gcsim.sweep.run_sweep`: the row and the scheme as arrays."""
    (structure, method, m_c, options, note), q, settings, patterns, decode = task
    out = assess(structure, q, method, m_c, options, note, settings, patterns, decode)
    if isinstance(out, Dropped):
        return out
    row, scheme = out
    return row, scheme.to_arrays(), scheme.bundle_metadata()


class Progress(StageProgress):
    """Progress over the candidates of one stage (:class:`gcsim._progress.StageProgress`).

    A live tqdm bar on a terminal (or in a notebook); on a piped or redirected stderr (a log, CI,
    ``gcsim advise ... 2>log``) gcsim's progress lines, such as
    ``gcsim: progress: advise screening: 12/60 candidates (20%), 34 s elapsed, about 2.3 min left``,
    when the stage starts, at most every ``every`` seconds (default ``GCSIM_PROGRESS_SECONDS``, 10)
    and after its last candidate, so a long question is never silent.

    >>> import io
    >>> out = io.StringIO()
    >>> p = Progress(2, "screening", True, stream=out, every=1e9)
    >>> p.step(); p.step(); p.close()
    >>> out.getvalue().splitlines()[-1].startswith("gcsim: progress: advise screening: 2/2 candidates (100%), ")
    True
    """

    def __init__(
        self,
        total: int,
        stage: str,
        enabled: bool,
        *,
        stream: Any = None,
        every: float | None = None,
        unit: str = "candidates",
    ) -> None:
        super().__init__(total, f"advise {stage}", unit, enabled, stream=stream, every=every)


def undecided(rows: Sequence[Mapping[str, Any]], objective: tuple[str, ...], exact_tol: float = 1e-12) -> list[int]:
    """Indices of the screened rows whose expected error the full Monte Carlo budget must settle.

    A row is *settled* by the screen when its error is exact (the full budget gives the same number),
    when its 95 % interval lies at or below ``exact_tol`` (it ranks as 0 whatever the full budget
    gives), or when its 95 % interval lies wholly above the interval of the leader of its groups: the rows
    that tie with it on the ranking criteria the objective puts before the error (all rows, for the
    default objective), and the rows with the same Pareto coordinates other than the error
    (communication, data fraction, time).  Such a row can rank first in neither, so its screen
    estimate stands; every other row (the leaders included) is re-measured with the full budget.

    >>> rows = [dict(error=1.0, error_lo=0.9, error_hi=1.1, error_method="mc", communication=0.5, data=0.1),
    ...         dict(error=1.05, error_lo=0.95, error_hi=1.2, error_method="mc", communication=0.5, data=0.1),
    ...         dict(error=3.0, error_lo=2.0, error_hi=4.0, error_method="mc", communication=0.5, data=0.1)]
    >>> undecided([dict(r, name=str(i), data_fraction=0.1, time=float("nan")) for i, r in enumerate(rows)], ("error",))
    [0, 1]
    """
    crit = list(objective) + [c for c in ("error", "communication", "time", "data") if c not in objective]
    before = crit[: crit.index("error")]
    groupings = [before, ["communication", "data", "time"]]

    def value(row: Mapping[str, Any], c: str) -> float:
        return _criterion(row, c, exact_tol)

    def bound(row: Mapping[str, Any], key: str) -> float:
        x = float(row[key])
        if math.isnan(x):
            return math.inf
        return 0.0 if x <= exact_tol else x

    out: set[int] = set()
    for grouping in groupings:
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(tuple(value(r, c) for c in grouping), []).append(i)
        for members in groups.values():
            leader_hi = min(bound(rows[i], "error_hi") for i in members)
            for i in members:
                r = rows[i]
                settled = is_exact_method(r["error_method"]) or bound(r, "error_lo") > leader_hi
                if not settled and bound(r, "error_hi") > 0:
                    out.add(i)
    return sorted(out)


Job = tuple[Structure, str, int, dict[str, Any], str]


def comm_reason(m_code: int, m: int) -> str | None:
    """Why a code with ``m_code`` blocks is over the communication cap of the question ``m``, or None.

    A worker of a code with ``m_code`` blocks sends ``d / m_code`` numbers, ``1/m_code`` of a
    gradient; the question allows ``1/m``.  The code is over the cap when ``1/m_code > 1/m``,
    i.e. ``m_code < m`` (compared in integers).

    >>> comm_reason(2, 2) is None, comm_reason(3, 2) is None
    (True, True)
    >>> comm_reason(1, 2).startswith("an m = 1 code: a worker sends 1/1 of a gradient, over the communication cap 1/2")
    True
    """
    m_code, m = check_int("m_code", m_code), check_int("m", m)
    if m_code >= m:
        return None
    return (
        f"an m = {m_code} code: a worker sends 1/{m_code} of a gradient, over the communication cap 1/{m} "
        f"(m = {m}; relax_comm=True, or --relax-comm, lifts the cap)"
    )


def mark_ties(rows: Sequence[dict[str, Any]], objective: tuple[str, ...], exact_tol: float = 1e-12) -> None:
    """Set ``row["tie"]``: the rank of the row it cannot be told apart from on error, or None.

    Rows come ranked by their point estimates; when error is the first criterion, a row whose 95%
    interval overlaps that of the first row of its group (``error_lo <= leader's error_hi``, two
    exact errors equal within ``exact_tol``) ties with it: the data cannot order them.  A row that
    does not starts the next group.  Other objectives: no ties are marked.

    >>> rows = [dict(rank=1, error=1.0, error_lo=0.9, error_hi=1.1), dict(rank=2, error=1.05, error_lo=0.95,
    ...         error_hi=1.2), dict(rank=3, error=3.0, error_lo=2.0, error_hi=4.0)]
    >>> mark_ties(rows, ("error",)); [r["tie"] for r in rows]
    [None, 1, None]
    """
    leader: dict[str, Any] | None = None
    for row in rows:
        row["tie"] = None
        if not objective or objective[0] != "error" or not row["error"] == row["error"]:
            continue
        lo = float(row["error_lo"])
        if leader is not None and lo <= float(leader["error_hi"]) + exact_tol:
            row["tie"] = int(leader["rank"])
        else:
            leader = row


def _known_point(job: Job, q: Question, decode: float) -> dict[str, float]:
    """The coordinates of a candidate known before it is evaluated: communication, data fraction, time."""
    structure, _, m_c = job[0], job[1], job[2]
    fraction = float(structure.loads.max()) / structure.shape[0]
    time_ = math.nan
    if q.links is not None:
        time_ = decode + fraction * q.links.compute_time + q.links.transfer_time(m_c)
    return {"communication": 1.0 / m_c, "data_fraction": fraction, "time": time_}


def settled_by(
    point: Mapping[str, float], rows: Sequence[Mapping[str, Any]], objective: tuple[str, ...], exact_tol: float
) -> int | None:
    """The index of an evaluated row that makes evaluating a candidate pointless, or None (theory §49.6).

    Row ``L`` settles a candidate ``c`` whose communication, data fraction and time are ``point``
    when the lower end of ``L``'s 95 % error interval is at or below ``exact_tol`` (errors that
    small rank as 0) and ``L`` is at most ``c`` on communication, data fraction and time.  Then
    no interval of ``c`` can lie below ``L``'s (its lower end is at least 0), so ``c`` ranks at best
    as a tie with ``L`` (theory §57.7: overlapping intervals tie) and evaluating it cannot change
    the answer.  This holds with honest intervals: a near-exact ``L`` whose sample saw no failure
    has a one-sided interval ``[0, hi]`` with ``hi`` well above ``exact_tol`` (§57.4), and still
    settles ``c``.  It says nothing of which of the two has the smaller true error; the dropped
    candidate's reason says so.  Only for objectives made of these criteria (a ``"worst-case"``
    objective ranks on a number ``L`` does not bound).

    >>> L = dict(error=0.0, error_lo=0.0, error_hi=0.012, communication=0.5, data_fraction=0.03, time=float("nan"))
    >>> settled_by(dict(communication=0.5, data_fraction=0.032, time=float("nan")), [L], ("error",), 1e-12)
    0
    >>> settled_by(dict(communication=0.5, data_fraction=0.02, time=float("nan")), [L], ("error",), 1e-12) is None
    True
    """
    if "worst-case" in objective:
        return None

    def le(x: float, y: float) -> bool:
        return (math.isnan(x) and math.isnan(y)) or x <= y

    for i, r in enumerate(rows):
        lo = float(r["error_lo"])
        if not (lo == lo and lo <= exact_tol):
            continue
        if all(le(float(r[c]), float(point[c])) for c in ("communication", "data_fraction", "time")):
            return i
    return None


def equivalence_key(job: Job) -> tuple | None:
    """The class of candidates with the same error pattern by pattern (theory §49.5), or None.

    For an encoder whose ``B`` stacks ``A diag(d_l)`` with diagonals drawn from the question alone
    (RD) or ``B = A`` (``m = 1``), on an assignment with ``AᵀA = aI + λJ``: the encoder, ``m``, its
    options and the triple ``(a, λ, N)`` divided by its greatest common divisor.
    """
    structure, method, m_c, options, _ = job
    enc = get_encoder(method)
    if enc.structured_route(m_c) is None:
        return None
    gram = structure.pair_gram()
    if gram is None:
        return None
    return _key(method, m_c, options, structure.shape[0], *gram)


def _key(method: str, m: int, options: Mapping[str, Any], N: int, k: int, lam: int) -> tuple:
    a = k - lam
    g = math.gcd(math.gcd(a, lam), N)
    return (method, m, tuple(sorted(options.items())), (a // g, lam // g, N // g))


def _evaluate(
    jobs: list[Job],
    q: Question,
    settings: Settings,
    patterns: Any,
    decode: tuple[float, str],
    scheduler: Any,
    sweep_workers: int | None,
    progress: bool,
    cache: dict[tuple, float],
    stage: str,
    objective: tuple[str, ...] = ("error",),
    exact_tol: float = 1e-12,
) -> list[Any]:
    """Every job's row and scheme (or :class:`Dropped`), serially or on :func:`gcsim.sweep.run_sweep`.

    The cheap jobs first (structured routes, closed forms, dense evaluations within
    :data:`PRUNE_COST`), in their order; then the expensive dense ones, those that could settle
    the most others first (least communication, then data fraction, RD first, then cost), each
    skipped (a :class:`Dropped` naming the row) when an evaluated row settles it (:func:`settled_by`).
    Structured encoders are evaluated in this process (they are cheap and kept sparse).
    """
    tick = Progress(len(jobs), stage, progress)
    outs: list[Any] = [None] * len(jobs)
    routes = [route_of(j[0], j[1], j[2], q, settings) for j in jobs]
    cost = [r.cost if isinstance(r, Route) else 0.0 for r in routes]
    cheap = [i for i in range(len(jobs)) if cost[i] <= PRUNE_COST]
    # the expensive ones that could settle the most others first (§49.6): least communication,
    # then least data, RD first (the encoder most often exact), then the cheapest
    points = [_known_point(j, q, decode[0]) for j in jobs]
    dear = sorted(
        (i for i in range(len(jobs)) if cost[i] > PRUNE_COST),
        key=lambda i: (
            points[i]["communication"],
            points[i]["data_fraction"],
            get_encoder(jobs[i][1]).structured_route(jobs[i][2]) != "diagonals",
            cost[i],
        ),
    )
    here = [i for i in cheap if scheduler == "serial" or getattr(routes[i], "build", "dense") != "dense"]

    def run_here(i: int) -> None:
        structure, method, m_c, options, note = jobs[i]
        tick.working_on(f"{structure.name} / {method}")
        outs[i] = assess(structure, q, method, m_c, options, note, settings, patterns, decode, cache)
        tick.step()

    def run_there(idx: list[int]) -> None:
        # the rows travel back with the schemes as arrays (rebuilt and re-verified here)
        tasks = [(jobs[i], q, settings, patterns, decode) for i in idx]
        for i, out in zip(
            idx, run_sweep(_assess_task, tasks, scheduler=scheduler, workers=sweep_workers, progress=False), strict=True
        ):
            outs[i] = out if isinstance(out, Dropped) else (out[0], Scheme.from_arrays(out[1], out[2]))
            tick.step()

    def rows() -> list[Mapping[str, Any]]:
        return [o[0] for o in outs if o is not None and not isinstance(o, Dropped)]

    def prune(i: int) -> bool:
        done = rows()
        hit = settled_by(points[i], done, objective, exact_tol)
        if hit is None:
            return False
        structure, method = jobs[i][0], jobs[i][1]
        outs[i] = Dropped(
            structure.family,
            structure.name,
            method,
            f"not evaluated (theory §49.6, §57.7): {done[hit]['name']} has no more communication, data or time "
            f"and an error interval starting at 0 ([{done[hit]['error_lo']:.2g}, {done[hit]['error_hi']:.2g}]): "
            "this candidate's interval cannot lie below it, so it ranks at best as a tie (which of the two has "
            f"the smaller true error is not known; its dense build and evaluation: about {cost[i]:.3g} flops)",
        )
        tick.step()
        return True

    for i in here:
        run_here(i)
    rest = [i for i in cheap if i not in set(here)]
    if rest:
        run_there(rest)
    if scheduler == "serial":
        for i in dear:
            if not prune(i):
                run_here(i)
    else:
        left = [i for i in dear if not prune(i)]
        for i in left:  # a sparse route's encoder stays here (kept sparse, it has no array bundle)
            if getattr(routes[i], "build", "dense") != "dense":
                run_here(i)
        left = [i for i in left if getattr(routes[i], "build", "dense") == "dense"]
        if left:
            run_there(left)
    tick.close()
    return outs


def _build_jobs(
    q: Question, families: tuple[str, ...], settings: Settings, relax_comm: bool, progress: bool
) -> tuple[list[Job], list[Dropped], dict[int, list[str]]]:
    """Steps 1 and 2 of :func:`advise`: the candidates to evaluate, those dropped (with reasons) and the equivalents.

    Candidates with the same error pattern by pattern (theory §49.5) form a class: the first is
    evaluated, the others are named in its entry of the returned ``same`` (by the candidate's index
    in the jobs), and so is a design left unbuilt (over the dense limit) whose parameters put it in
    a class.
    """
    dropped: list[Dropped] = []
    jobs: list[Job] = []
    classes: dict[tuple, int] = {}
    same: dict[int, list[str]] = {}
    unbuilt: list[Dropped] = []
    tick = Progress(len(families), "building", progress, unit="families")
    for family in families:
        tick.working_on(family)
        for item in structures(q, (family,)):
            if isinstance(item, Dropped):
                dropped.append(item)
                if item.gram is not None:
                    unbuilt.append(item)
                continue
            for enc in schemes_of(item, q, settings):
                if isinstance(enc, Dropped):
                    dropped.append(enc)
                    continue
                too_much = None if relax_comm else comm_reason(enc[1], q.m)
                if too_much is not None:
                    dropped.append(Dropped(item.family, item.name, enc[0], too_much))
                    continue
                job: Job = (item, *enc)
                key = equivalence_key(job)
                if key is not None and key in classes:
                    same[classes[key]].append(item.name)
                    continue
                if key is not None:
                    classes[key] = len(jobs)
                    same[len(jobs)] = []
                jobs.append(job)
        tick.step()
    tick.close()
    for d in unbuilt:  # a design left unbuilt (over the dense limit) whose parameters put it in a class
        assert d.gram is not None
        for method in ("rd",):
            hit = classes.get(_key(method, q.m, {}, *d.gram))
            if hit is not None:
                same[hit].append(f"{d.name} (not built: {d.reason})")
    return jobs, dropped, same


def _measured(
    jobs: list[Job], outs: list[Any], same: dict[int, list[str]], dropped: list[Dropped]
) -> list[tuple[dict[str, Any], Scheme, Any]]:
    """Step 3's results: each evaluated job's row (its equivalents named), scheme and structure.

    A job :func:`_evaluate` dropped goes to ``dropped``.
    """
    measured = []
    for i, ((structure, *_), out) in enumerate(zip(jobs, outs, strict=True)):
        if isinstance(out, Dropped):
            dropped.append(out)
            continue
        row = dict(out[0])
        names = same.get(i, [])
        row["equivalents"] = "; ".join(names)
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            note = (
                f"the same error pattern by pattern as {len(names)} equivalent candidate(s), not listed (theory "
                f"§49.5: AᵀA = aI + λJ with (a, λ, N) proportional, the same diagonals): {shown}"
            )
            row["notes"] = "; ".join(t for t in (row["notes"], note) if t)
        measured.append((row, out[1], structure.obj))
    return measured


def _against_symmetric(rows: list[dict[str, Any]]) -> None:
    """Note, in place, on each non-symmetric row what it buys against the best symmetric one (theory §63.3).

    The difference of the expected errors ``err(this) - err(best symmetric)``: exact when both are
    exact, else the interval ``[lo - hi', hi - lo']`` of the two rows' intervals. No note when the
    advisor ranked no symmetric candidate, or for a homogeneous model (no non-symmetric row).
    """
    symmetric = [r for r in rows if r["family"] in SYMMETRIC_FAMILIES and math.isfinite(r["error"])]
    if not symmetric or len(symmetric) == len(rows):
        return
    best = min(symmetric, key=lambda r: (r["error"], r["error_hi"]))
    for row in rows:
        if row["family"] in SYMMETRIC_FAMILIES or not math.isfinite(row["error"]):
            continue
        diff = row["error"] - best["error"]
        rel = f" ({100 * diff / best['error']:+.4g} %)" if best["error"] > 0 else ""
        if is_exact_method(row["error_method"]) and is_exact_method(best["error_method"]):
            told = f"{diff:+.6g}{rel} (exact)"
        else:
            lo, hi = row["error_lo"] - best["error_hi"], row["error_hi"] - best["error_lo"]
            # the ratio of two positive quantities in their intervals: [lo/hi', hi/lo'] (unbounded above at lo' = 0)
            top = f"{100 * (row['error_hi'] / best['error_lo'] - 1):+.4g} %" if best["error_lo"] > 0 else "+inf"
            span = f", relative [{100 * (row['error_lo'] / best['error_hi'] - 1):+.4g} %, {top}]" if rel else ""
            told = f"{diff:+.6g}{rel}, 95% interval [{lo:+.6g}, {hi:+.6g}]{span}"
        note = f"expected error minus the best symmetric candidate's ({best['name']}, {best['error']:.6g}): {told}"
        row["notes"] = "; ".join(t for t in (row["notes"], note) if t)


def load_bound(q: Question) -> dict[str, Any] | None:
    """Lemma 63.7's certified bound on every design of the question's load (theory §63.7), or None.

    Only for a heterogeneous model of independent workers (the questions with non-symmetric
    candidates) under a data cap (not ``relax_load``).  ``value`` is proved (a dual solution checked
    in exact rationals, :func:`~gcsim.coding.bounds.equal_load.equal_load_lower_bound`); for a law
    that does not depend on the loads it bounds every design whose workers hold *at most* the cap,
    for a load-dependent one those holding it exactly.  ``skipped`` says why there is no value
    (``2^n`` over :data:`gcsim.limits.MAX_LP_SUBSETS`, a refused load).

    Examples
    --------
    >>> from gcsim.coding.stragglers import straggler_model
    >>> q = Question(6, 2, 1, straggler_model("bernoulli", 6, p=[0.05] * 3 + [0.6] * 3))
    >>> load_bound(q)["statement"]
    'no design in which each worker holds at most 1/3 of the data can beat 0.03 (certified, Lemma 63.7)'
    >>> load_bound(Question(6, 2, 1, straggler_model("bernoulli", 6, p=0.2))) is None  # alike workers
    True
    """
    p = q.model.independent_p()
    if p is None or float(p.min()) == float(p.max()) or q.parts_load is not None:
        return None
    f = Fraction(q.load, q.n) if isinstance(q.load, int) else Fraction(q.load)
    shown = str(f) if f.denominator < 10**6 else f"{float(f):.6g}"
    who = "exactly" if q.model.load_dependent else "at most"
    out: dict[str, Any] = {
        "fraction": shown,
        "m": q.m,
        "covers": f"every design in which each worker holds {who} {shown} of the data "
        "(any number of parts, coefficients with support in the assignment, labelling)",
    }
    if 2**q.n > limits.MAX_LP_SUBSETS:
        out["skipped"] = f"2^{q.n} subsets of the workers, over gcsim.limits.MAX_LP_SUBSETS = {limits.MAX_LP_SUBSETS}"
        return out
    try:
        cert = equal_load_lower_bound(q.model, f.numerator, f.denominator, q.m)
    except GcsimError as exc:  # a load-dependent worker that cannot arrive at this load, a failed solve
        out["skipped"] = str(exc)
        return out
    out.update(
        value=cert.bound,
        certified=True,
        solver_value=cert.solver_value,
        statement=f"no design in which each worker holds {who} {shown} of the data can beat "
        f"{cert.bound:.6g} (certified, Lemma 63.7)",
    )
    return out


def _against_load_bound(rows: list[dict[str, Any]], q: Question) -> dict[str, Any] | None:
    """:func:`load_bound`, and a note, in place, on each row of the question's ``m``: its expected error minus it.

    Exact when the row is, else with the row's 95 % interval; the note says whether the bound
    covers the row's own loads (a row it does not cover, a non-symmetric one, may lie below it).
    """
    bound = load_bound(q)
    if bound is None or "value" not in bound:
        return bound
    X, f = float(bound["value"]), Fraction(q.load, q.n) if isinstance(q.load, int) else Fraction(q.load)
    for row in rows:
        if row["m"] != q.m or not math.isfinite(row["error"]):
            continue
        share = Fraction(int(row["load"]), int(row["N"]))
        if q.model.load_dependent:
            covered = share == f and row["family"] in SYMMETRIC_FAMILIES
        else:
            covered = share <= f
        diff = row["error"] - X
        rel = f" ({100 * diff / X:+.4g} %)" if X > 0 else ""
        if is_exact_method(row["error_method"]):
            told = f"{diff:+.6g}{rel} (exact)"
        else:
            told = f"{diff:+.6g}{rel}, 95% interval [{row['error_lo'] - X:+.6g}, {row['error_hi'] - X:+.6g}]"
        which = "its load" if covered else f"load {bound['fraction']}, not this design's loads"
        note = f"expected error minus the certified bound of every design of {which} ({X:.6g}, Lemma 63.7): {told}"
        row["notes"] = "; ".join(t for t in (row["notes"], note) if t)
    return bound


def _refine(
    measured: list[tuple[dict[str, Any], Scheme, Any]],
    q: Question,
    settings: Settings,
    screen: Settings,
    objective: tuple[str, ...],
    exact_tol: float,
    progress: bool,
) -> None:
    """Re-measure, in place, the screened rows the ranking needs (:func:`undecided`) with the full budget.

    The others keep the screen's estimate and a note says so; a dense evaluation over
    :data:`EVAL_BUDGET`, or a refused larger budget, keeps it too, with its reason.
    """
    refine = undecided([r for r, _, _ in measured], objective, exact_tol)
    tick = Progress(len(refine), "refining", progress)
    full_patterns = evaluated_patterns(q, settings)
    for i in range(len(measured)):
        row, scheme, obj = measured[i]
        row = dict(row)
        if i in refine:
            tick.working_on(str(row["name"]))
            N_, n_, m_ = int(row["N"]), int(row["n"]), int(row["m"])
            over = structured_context(scheme) is None and (
                dense_eval_cost(N_, n_, m_, settings, full_patterns) > EVAL_BUDGET
            )
            if over:
                full: Any = (
                    {},
                    [
                        f"the full budget was not spent: its dense evaluation, about "
                        f"{dense_eval_cost(N_, n_, m_, settings, full_patterns):.3g} flops, is over EVAL_BUDGET; "
                        f"the screen's estimate ({screen.samples} draws) stands"
                    ],
                )
            else:
                full = measure_error(scheme, bound_question(q, scheme), settings)
            if isinstance(full, str):  # a refusal of the larger budget: the screen's result stands
                full = ({}, [f"the full budget was refused ({full}); the screen's estimate stands"])
            fields, extra = full
            row.update(fields)
            notes = [t for t in (row["notes"], *extra) if t]
            row["notes"] = "; ".join(dict.fromkeys(notes))
            tick.step()
        elif not is_exact_method(row["error_method"]):
            notes = [row["notes"]] if row["notes"] else []
            notes.append(
                f"screened with {screen.samples} draws: its interval lies above the leader's or at most "
                "exact_tol, the full budget would not change its rank among the first"
            )
            row["notes"] = "; ".join(notes)
        measured[i] = (row, scheme, obj)
    tick.close()


def _ranked_rows(
    ranked: list[dict[str, Any]], objective: tuple[str, ...], exact_tol: float, with_links: bool
) -> list[dict[str, Any]]:
    """Step 4: the rows in ranking order with their rank, Pareto flag, status and tie (:func:`mark_ties`)."""
    flags = pareto_flags([pareto_point(r, with_links, exact_tol) for r in ranked])
    rows = []
    # ranks count from 1 (the first row is rank 1), as a reader counts a table
    for rank, (row, flag) in enumerate(zip(ranked, flags, strict=True), start=1):
        row = dict(row)
        row["rank"] = rank
        row["pareto"] = flag is None
        row["status"] = "Pareto-optimal" if flag is None else f"dominated by #{flag + 1} {ranked[flag]['name']}"
        rows.append(row)
    mark_ties(rows, objective, exact_tol)
    return rows


def advise(
    workers: int,
    load: int | float,
    m: int,
    stragglers: StragglerModel | str,
    *,
    relax_load: bool = False,
    relax_comm: bool = False,
    max_load: int | None = None,
    links: Links | Mapping[str, float] | None = None,
    objective: str | Sequence[str] = "error",
    families: Sequence[str] | None = None,
    seed: int = 0,
    samples: int = 2000,
    exact_limit: int = 20000,
    worst_limit: int = 20000,
    exact_tol: float = 1e-12,
    scheduler: Any = "serial",
    sweep_workers: int | None = None,
    progress: bool = True,
    adaptive: bool = True,
) -> Advice:
    """Rank every code gcsim can build for ``workers`` workers of this load, ``m`` and stragglers.

    Model (docs/theory.md, advisor chapter): an assignment ``A`` (``N`` parts x ``n`` workers)
    and an encoder ``B`` (``mN x n``) of :class:`gcsim.coding.Scheme`; the master decodes the
    arrived workers ``F`` optimally, with error ``err(B, F) = min_X ||B_F X - T||_F^2``, reported
    normalized by ``mN`` (the fraction of the target lost, comparable across ``N`` and ``m``).

    Parameters
    ----------
    workers : int
        ``n``, the number of workers (every candidate has exactly ``n`` columns).
    load : int or float
        The most data a worker may hold, a constraint on every candidate. An int ``L`` allows
        ``L / n`` of the data (``L`` parts of an ``n``-part split), a float in ``(0, 1)`` that
        fraction; a family with ``N`` parts is built with ``floor(fraction N)`` parts per worker,
        and a candidate over the cap is dropped (with its reason).  For the non-symmetric
        ``"weighted-cyclic"`` candidates (``N = n``, their loads searched or apportioned) it is the
        *average* load: the total ``n l`` is the symmetric codes', one worker may hold more
        (``max_load`` caps it; the row's ``load`` is always the largest load of the code).
    m : int
        Communication reduction: each worker sends ``d / m`` numbers.  A constraint, like the
        load: a code whose workers send more than ``1/m`` of a gradient (the families' ``m = 1``
        classic codes, a full gradient, when ``m > 1``) is dropped with its reason
        (:func:`comm_reason`), so every row, and the export of rank 1, meets the question.
    stragglers : StragglerModel or str
        :func:`gcsim.straggler_model` over ``n`` workers (fixed, all, worst, bernoulli, markov,
        trace, delay), or a spec :data:`STRAGGLER_SPEC` such as ``"fixed:2"`` or
        ``"bernoulli:0.1"`` (:func:`straggler_spec`, over the ``workers`` given).
    relax_load : bool
        Lift the data cap: an int ``load`` is then the number of parts per worker in every family
        (the column sums of ``A``), whatever the family's ``N``; a family with few parts gives
        each worker a larger share of the data (the table's ``data_fraction`` shows it).
    relax_comm : bool
        Lift the communication cap: the families' ``m = 1`` classic codes (a full gradient per
        worker) are ranked beside the codes at ``m``, with their own ``communication``.
    max_load : int, optional
        A cap on every worker's parts for the non-symmetric candidates (an int ``>=`` the load, in
        parts of the ``n``-part split): only load vectors with every ``l_j <= max_load`` are
        apportioned and searched (:func:`gcsim.coding.load_allocation.optimize_loads`).  The
        symmetric candidates are unaffected.  None (default): the load is their average only.
    links : Links or dict, optional
        ``bandwidth`` (bytes/s per worker link), ``latency`` (s), ``gradient_bytes`` (bytes of a
        full gradient), ``compute_time`` (s for the gradient of the whole data set).  Adds the bytes
        sent per worker and the expected time per iteration
        ``E[D] + (l_max / N) compute_time + latency + gradient_bytes / (m bandwidth)``.
    objective : str or sequence of str
        The ranking: ``"error"`` (expected error, default), ``"time"`` (needs ``links``),
        ``"communication"``, ``"data"`` (fraction of the data per worker), ``"worst-case"`` (worst
        case over ``|S| = s``; NaN ranks last), or a sequence of them compared lexicographically;
        ties then break on error, communication, time, data and the name.  Errors at or below
        ``exact_tol`` rank as 0 (an exact code's error is round-off).
    families : sequence of str, optional
        Restrict the enumeration to these families (:data:`gcsim.advisor.candidates.FAMILY_NAMES`).
    seed : int
        Seed of every random choice (constructions, encoders, Monte Carlo draws).
    samples, exact_limit : int
        Monte Carlo draws per candidate (at most :data:`gcsim.limits.MAX_MC_DRAWS`, checked before
        any candidate is built), and the largest pattern count evaluated exactly
        (:func:`gcsim.coding.evaluate.expected_error`).
    worst_limit : int
        Worst case only when ``C(n, s) <= worst_limit`` (else the row says it was skipped).
    exact_tol : float
        Normalized errors at or below it count as 0 when ranking and comparing (default 1e-12).
    scheduler, sweep_workers
        Where the candidate evaluations run (:func:`gcsim.sweep.run_sweep`): ``"serial"`` (default,
        in this process), ``"local"`` (a Dask cluster of ``sweep_workers`` processes), a Dask
        address or a ``distributed.Client``.  Every evaluation uses the same ``seed``, so the table
        does not depend on where it ran.
    progress : bool
        Progress on stderr: a live tqdm bar on a terminal, else a line such as ``gcsim: progress:
        advise screening: 12/60 candidates (20%), 34 s elapsed, about 2.3 min left`` at most every
        ``GCSIM_PROGRESS_SECONDS`` (10 s) and at the end of each stage (:class:`Progress`).
    adaptive : bool
        Sequential Monte Carlo (default): every candidate is first screened with about 1/8 of
        ``samples`` and ``exact_limit`` (:func:`gcsim.advisor.assess.screen_settings`); only those
        whose 95 % interval overlaps the leader's (:func:`undecided`) are re-measured with the full
        budget, and the rest keep the screen's estimate and interval (a note says so).  False: the
        full budget for every candidate.  Both are deterministic functions of the question and ``seed``.

    Returns
    -------
    Advice
        ``.table`` (ranked DataFrame), ``.dropped`` (reasons), ``.plot()``, ``.export(folder)``.
        For workers straggling independently with unequal ``p_j``, ``.question["load_bound"]`` is
        the certified bound of every design of the load (:func:`load_bound`, theory §63.7) and each
        row of the question's ``m`` notes its expected error minus it.

    Raises
    ------
    InvalidArgumentError
        A bad argument, named: ``workers < 2``, a load that is neither an int >= 1 nor a fraction
        in (0, 1), ``m < 1``, a ``relax_load`` or ``relax_comm`` not a bool, a straggler model over
        another number of workers, an unknown objective or family, ``objective="time"`` without links.

    Examples
    --------
    >>> adv = advise(13, 4, 2, "fixed:1", families=["bibd", "cyclic"], progress=False)
    >>> adv.rows[0]["name"]
    '2-(13,4,1) design [PG(2,3): points vs lines] / exact-gaussian (s=1)'
    >>> adv.rows[0]["error"] < 1e-20, adv.rows[0]["pareto"]
    (True, True)
    >>> sorted({r["m"] for r in adv.rows})  # m = 2 is a cap: the m = 1 codes are dropped
    [2]
    >>> relaxed = advise(13, 4, 2, "fixed:1", families=["bibd"], relax_comm=True, progress=False)
    >>> sorted({r["m"] for r in relaxed.rows})
    [1, 2]
    >>> def top_load(**kw):  # the largest worker load of the best non-symmetric code (average load 2)
    ...     p = "bernoulli:0.02*2,0.3*2,0.6*2"
    ...     return advise(6, 2, 1, p, families=["weighted-cyclic"], progress=False, **kw).rows[0]["load"]
    >>> top_load(), top_load(max_load=3)
    (6, 3)
    """
    progress = check_bool("progress", progress)
    adaptive = check_bool("adaptive", adaptive)
    n = check_int("workers", workers, minimum=2)
    load = check_load(load)
    m = check_int("m", m, minimum=1)
    relax_load = check_bool("relax_load", relax_load)
    relax_comm = check_bool("relax_comm", relax_comm)
    if isinstance(stragglers, str):
        stragglers = straggler_spec(stragglers, n)
    if not isinstance(stragglers, StragglerModel):
        raise InvalidArgumentError("stragglers", "must be a straggler model (see gcsim.straggler_model)")
    if stragglers.n != n:
        raise InvalidArgumentError("stragglers", f"is a model of {stragglers.n} workers, workers = {n}")
    links_ = _check_links(links)
    objective_ = _check_objective(objective, links_)
    families_ = _check_families(families)
    seed = check_int("seed", seed, minimum=0)
    scheduler = check_scheduler(scheduler)
    if sweep_workers is not None:
        sweep_workers = check_int("sweep_workers", sweep_workers, minimum=1)
    samples = check_int("samples", samples, minimum=2)
    limits.check_work("samples", samples, "Monte Carlo draws per candidate", limit_name="MAX_MC_DRAWS", unit="draws")
    settings = Settings(
        exact_limit=check_int("exact_limit", exact_limit, minimum=0),
        samples=samples,
        worst_limit=check_int("worst_limit", worst_limit, minimum=0),
    )
    exact_tol = check_real("exact_tol", exact_tol, minimum=0.0, maximum=1.0)
    q = Question(n, load, m, stragglers, links_, seed, relax_load, max_load)
    patterns = question_patterns(q, settings)
    decode = decode_time(q)

    # sequential Monte Carlo: a screening pass with a fraction of the budget for every candidate,
    # the full budget only where the ranking is undecided (same seed, same numbers: every pass is
    # a deterministic function of the question)
    screen = screen_settings(settings) if adaptive and not stragglers.adversarial else None
    first = screen if screen is not None else settings
    jobs, dropped, same = _build_jobs(q, families_, first, relax_comm, progress)
    cache: dict[tuple, float] = {}
    stage = "screening" if screen else "evaluating"
    outs = _evaluate(
        jobs, q, first, patterns, decode, scheduler, sweep_workers, progress, cache, stage, objective_, exact_tol
    )
    measured = _measured(jobs, outs, same, dropped)
    if screen is not None and measured:
        _refine(measured, q, settings, screen, objective_, exact_tol, progress)
    _against_symmetric([r for r, _, _ in measured])
    bound = _against_load_bound([r for r, _, _ in measured], q)
    measured.sort(key=lambda t: ranking_key(t[0], objective_, exact_tol))
    rows = _ranked_rows([r for r, _, _ in measured], objective_, exact_tol, links_ is not None)
    question = {
        "n": n,
        "load": load,
        "relax_load": relax_load,
        "max_load": q.max_load,
        "data_cap": q.data_cap,
        "m": m,
        "relax_comm": relax_comm,
        "comm_cap": 1.0 if relax_comm else 1.0 / m,
        "model": stragglers.describe(),
        "s": q.design_s,
        "links": links_.as_dict() if links_ is not None else None,
        "objective": objective_,
        "families": families_,
        "seed": seed,
        "samples": settings.samples,
        "screen_samples": screen.samples if screen is not None else None,
        "exact_limit": settings.exact_limit,
        "worst_limit": settings.worst_limit,
        "exact_tol": exact_tol,
        "decode_time": decode[0] if links_ is not None else math.nan,
        "decode_time_method": decode[1] if links_ is not None else "",
        "bounds_over": patterns.how if patterns is not None else "",
        "load_bound": bound,
    }
    return Advice(
        question=question,
        rows=tuple(rows),
        dropped_items=tuple(dropped),
        schemes=tuple(s for _, s, _ in measured),
        structures=tuple(o for _, _, o in measured),
    )
