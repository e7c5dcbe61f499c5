"""``advise``: which code for ``n`` workers, this load, this ``m``, these stragglers and links.

The steps (docs/theory.md, advisor chapter):

1. enumerate the assignments of every family (:data:`gcsim.advisor.candidates.FAMILIES`, in
   order), keeping the reason of every parameter set that gives none;
2. encode each with every applicable encoder (:data:`gcsim.advisor.assess.ENCODERS` at ``m``
   and the family's ``m = 1`` classic code), keeping the reason of every encoder that does not apply;
3. measure each scheme (expected error, worst case where affordable, bounds, communication,
   time per iteration with links);
4. rank by the objective and flag the candidates another one dominates (Pareto on expected
   error, communication, fraction of the data per worker and, with links, time); dominated
   candidates stay in the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._validation import check_bool, check_int, check_real
from ..coding.schemes import Scheme
from ..coding.straggler_base import StragglerModel
from ..coding.stragglers import straggler_model
from ..errors import GcsimError, InvalidArgumentError
from ..sweep import check_scheduler, run_sweep
from .advice import Advice, pareto_flags, pareto_point, ranking_key
from .assess import Settings, assess, decode_time, question_patterns, schemes_of
from .candidates import FAMILY_NAMES, Dropped, Links, Question, Structure, check_load, structures

__all__ = ["advise", "OBJECTIVES", "STRAGGLER_SPEC", "straggler_spec"]

#: The straggler models a ``KIND:VALUES`` spec names (``advise(13, 4, 2, "fixed:2")``, ``gcsim advise``).
STRAGGLER_SPEC = "KIND:VALUES: fixed:S (S uniform stragglers), all:S, worst:S, bernoulli:P, markov:P_ENTER,P_LEAVE"


def straggler_spec(text: str, n: int) -> StragglerModel:
    """The straggler model over ``n`` workers that a ``KIND:VALUES`` spec names.

    ``fixed:S``, ``all:S`` and ``worst:S`` (``S`` stragglers), ``bernoulli:P`` (each worker
    straggles with probability ``P``), ``markov:P_ENTER,P_LEAVE`` (:func:`gcsim.straggler_model`).

    >>> straggler_spec("bernoulli:0.1", 13).describe()
    'Bernoulli: each of n=13 workers straggles independently with p=0.1'
    >>> straggler_spec("fixed", 13)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: stragglers: fixed takes one value, e.g. fixed:10
    """
    if not isinstance(text, str):
        raise InvalidArgumentError("stragglers", f"must be a straggler model or a spec {STRAGGLER_SPEC}")
    kind, _, values = text.partition(":")
    parts = [v for v in values.split(",") if v] if values else []

    def number(cast: type, count: int, example: str) -> list[Any]:
        if len(parts) != count:
            raise InvalidArgumentError(
                "stragglers", f"{kind} takes {'one value' if count == 1 else f'{count} values'}, e.g. {kind}:{example}"
            )
        try:
            return [cast(v) for v in parts]
        except ValueError:
            long = [v for v in parts if v.strip().lstrip("+-").isdigit() and len(v) > 4000]
            if cast is int and long:  # int() refuses over sys.get_int_max_str_digits: too large, not "not whole"
                raise InvalidArgumentError(
                    "stragglers", f"{kind}: a {len(long[0]):,}-digit value is too large (Python's limit for an integer)"
                ) from None
            what = "whole number" if cast is int else "number"
            shown = text if len(text) <= 60 else f"{kind}:..."
            raise InvalidArgumentError("stragglers", f"{shown!r}: the values of {kind} must be a {what}") from None

    try:
        if kind in ("fixed", "all", "worst"):
            return straggler_model(kind, n, s=number(int, 1, "10")[0])
        if kind == "bernoulli":
            return straggler_model("bernoulli", n, p=number(float, 1, "0.1")[0])
        if kind == "markov":
            p_enter, p_leave = number(float, 2, "0.05,0.5")
            return straggler_model("markov", n, p_enter=p_enter, p_leave=p_leave)
    except GcsimError as exc:
        if isinstance(exc, InvalidArgumentError) and str(exc).startswith("stragglers:"):
            raise
        raise InvalidArgumentError("stragglers", f"{text!r}: {exc}") from None
    raise InvalidArgumentError("stragglers", f"unknown kind {kind!r} in {text!r}; {STRAGGLER_SPEC}")


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
    return tuple(items)


def _assess_task(task: tuple) -> Any:
    """One candidate evaluation for :func:`gcsim.sweep.run_sweep`: the row and the scheme as arrays."""
    (structure, method, m_c, options, note), q, settings, patterns, decode = task
    out = assess(structure, q, method, m_c, options, note, settings, patterns, decode)
    if isinstance(out, Dropped):
        return out
    row, scheme = out
    return row, scheme.to_arrays(), scheme.bundle_metadata()


def _progress(items: Sequence[Any], enabled: bool) -> Any:
    if not enabled or len(items) <= 1:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, total=len(items), desc="advise", leave=False, disable=None)  # a bar only on a terminal


def advise(
    workers: int,
    load: int | float,
    m: int,
    stragglers: StragglerModel | str,
    *,
    relax_load: bool = False,
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
        and a candidate over the cap is dropped (with its reason).
    m : int
        Communication reduction: each worker sends ``d / m`` numbers.  The families' ``m = 1``
        classic codes are listed too, with their own communication (a full gradient).
    stragglers : StragglerModel or str
        :func:`gcsim.straggler_model` over ``n`` workers (fixed, all, worst, bernoulli, markov,
        trace, delay), or a spec :data:`STRAGGLER_SPEC` such as ``"fixed:2"`` or
        ``"bernoulli:0.1"`` (:func:`straggler_spec`, over the ``workers`` given).
    relax_load : bool
        Lift the data cap: an int ``load`` is then the number of parts per worker in every family
        (the column sums of ``A``), whatever the family's ``N``; a family with few parts gives
        each worker a larger share of the data (the table's ``data_fraction`` shows it).
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
        Monte Carlo draws, and the largest pattern count evaluated exactly
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
        A tqdm bar over the candidates (on a terminal).

    Returns
    -------
    Advice
        ``.table`` (ranked DataFrame), ``.dropped`` (reasons), ``.plot()``, ``.export(folder)``.

    Raises
    ------
    InvalidArgumentError
        A bad argument, named: ``workers < 2``, a load that is neither an int >= 1 nor a fraction
        in (0, 1), ``m < 1``, a straggler model over another number of workers, an unknown
        objective or family, ``objective="time"`` without links.

    Examples
    --------
    >>> adv = advise(13, 4, 2, "fixed:1", families=["bibd", "cyclic"], progress=False)
    >>> adv.rows[0]["name"]
    '2-(13,4,1) design [PG(2,3): points vs lines] / exact-gaussian (s=1)'
    >>> adv.rows[0]["error"] < 1e-20, adv.rows[0]["pareto"]
    (True, True)
    """
    progress = check_bool("progress", progress)
    n = check_int("workers", workers, minimum=2)
    load = check_load(load)
    m = check_int("m", m, minimum=1)
    relax_load = check_bool("relax_load", relax_load)
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
    settings = Settings(
        exact_limit=check_int("exact_limit", exact_limit, minimum=0),
        samples=check_int("samples", samples, minimum=2),
        worst_limit=check_int("worst_limit", worst_limit, minimum=0),
    )
    exact_tol = check_real("exact_tol", exact_tol, minimum=0.0, maximum=1.0)
    q = Question(n, load, m, stragglers, links_, seed, relax_load)
    patterns = question_patterns(q, settings)
    decode = decode_time(q)

    dropped: list[Dropped] = []
    jobs: list[tuple[Structure, str, int, dict[str, Any], str]] = []
    for item in structures(q, families_):
        if isinstance(item, Dropped):
            dropped.append(item)
            continue
        for enc in schemes_of(item, q):
            if isinstance(enc, Dropped):
                dropped.append(enc)
            else:
                jobs.append((item, *enc))
    measured = []
    if scheduler == "serial":
        outs = [
            assess(structure, q, method, m_c, options, note, settings, patterns, decode)
            for structure, method, m_c, options, note in _progress(jobs, progress)
        ]
    else:
        # the rows travel back with the schemes as arrays (rebuilt and re-verified here)
        tasks = [(job, q, settings, patterns, decode) for job in jobs]
        outs = []
        for out in run_sweep(_assess_task, tasks, scheduler=scheduler, workers=sweep_workers, progress=progress):
            outs.append(out if isinstance(out, Dropped) else (out[0], Scheme.from_arrays(out[1], out[2])))
    for (structure, *_), out in zip(jobs, outs, strict=True):
        if isinstance(out, Dropped):
            dropped.append(out)
        else:
            measured.append((out[0], out[1], structure.obj))
    measured.sort(key=lambda t: ranking_key(t[0], objective_, exact_tol))
    flags = pareto_flags([pareto_point(r, links_ is not None, exact_tol) for r, _, _ in measured])
    rows = []
    # ranks count from 1 (the first row is rank 1), as a reader counts a table
    for rank, ((row, _, _), flag) in enumerate(zip(measured, flags, strict=True), start=1):
        row = dict(row)
        row["rank"] = rank
        row["pareto"] = flag is None
        row["status"] = "Pareto-optimal" if flag is None else f"dominated by #{flag + 1} {measured[flag][0]['name']}"
        rows.append(row)
    question = {
        "n": n,
        "load": load,
        "relax_load": relax_load,
        "data_cap": q.data_cap,
        "m": m,
        "model": stragglers.describe(),
        "s": q.design_s,
        "links": links_.as_dict() if links_ is not None else None,
        "objective": objective_,
        "families": families_,
        "seed": seed,
        "samples": settings.samples,
        "exact_limit": settings.exact_limit,
        "worst_limit": settings.worst_limit,
        "exact_tol": exact_tol,
        "decode_time": decode[0] if links_ is not None else math.nan,
        "decode_time_method": decode[1] if links_ is not None else "",
        "bounds_over": patterns.how if patterns is not None else "",
    }
    return Advice(
        question=question,
        rows=tuple(rows),
        dropped_items=tuple(dropped),
        schemes=tuple(s for _, s, _ in measured),
        structures=tuple(o for _, _, o in measured),
    )
