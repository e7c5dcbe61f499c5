"""The starting points of the CERAR optimizer (:func:`gcsim.cerar.optimize.optimized_design`).

A start is a design projected onto the condition-number caps and gauge-fixed, with a record of
what it was before: the best member of each analytic family gcsim can build for ``(N, c)``
(exact, perturbation over an ``eps`` grid, real-node Vandermonde over a spacing grid), a random
start with least-squares decoders, or a given design.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ._optimize_blocks import _fix_gauge, _least_squares_decoders, _objective, clip_condition
from .constructions import exact_design, perturbation_design, vandermonde_design
from .design import CerarDesign
from .metrics import CERT_RTOL, condition_numbers

Grid = Sequence[float] | np.ndarray

_EPS_GRID = np.geomspace(1e-6, 1.0, 49)
#: the analytic families with a grid parameter (eps), built as the factory builds them
_FAMILIES = {"perturbation": perturbation_design, "vandermonde": vandermonde_design}


def _vandermonde_grid(c: int) -> np.ndarray:
    """Default node spacings of the Vandermonde start: 13 log-spaced values up to 0.95 * 2/(c-1).

    The real nodes ``1 + eps (k - (c-1)/2)`` stay positive only for ``eps < 2/(c-1)``.
    """
    return np.geomspace(1e-3, 0.95 * 2 / (c - 1) if c > 1 else 1.0, 13)


def _fits(A: np.ndarray, D: np.ndarray, kappa: float, kappa_D: float) -> tuple[bool, float, float]:
    """``(fits, kappa_A_max, kappa_D_max)``: does the design meet the caps (up to the certificate's rounding)?"""
    kA = float(np.max(condition_numbers(A)))
    kD = float(np.max(condition_numbers(D)))
    ok = kA <= kappa * (1 + CERT_RTOL) and (not math.isfinite(kappa_D) or kD <= kappa_D * (1 + CERT_RTOL))
    return ok, kA, kD


def _family_members(N: int, c: int, family: str, grid: Grid | None) -> list[tuple[CerarDesign, float | None]]:
    """The analytic designs of one family gcsim can build for (N, c): ``[(design, eps), ...]``.

    ``"exact"``: the exact design when it exists (``c <= N`` or ``N = 2``); ``"perturbation"`` and
    ``"vandermonde"``: one member per ``eps`` of the grid, skipping those whose encoders are
    singular in float64 or whose nodes leave the admissible range.
    """
    out: list[tuple[CerarDesign, float | None]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ill-conditioned members are expected
        if family == "exact":
            if c <= N or N == 2:
                out.append((exact_design(N, c), None))
            return out
        if grid is None:
            grid = _EPS_GRID if family == "perturbation" else _vandermonde_grid(c)
        for e in grid:
            try:
                out.append((_FAMILIES[family](N, c, float(e)), float(e)))
            except InvalidArgumentError:
                continue
    return out


def _best_member(
    members: list[tuple[CerarDesign, float | None]], kappa: float, kappa_D: float, objective: str
) -> tuple[CerarDesign, float | None, bool] | None:
    """Lowest-objective member that fits the caps; if none fits, the one closest to fitting.

    Returns ``(design, eps, fits)`` or None for an empty family. "Closest" is the smallest ratio
    ``max(kappa_A / kappa, kappa_D / kappa_D_cap)``; that member is then projected onto the caps.
    """
    best, best_key = None, None
    for d, e in members:
        ok, kA, kD = _fits(d.encoders, d.decoders, kappa, kappa_D)
        if ok:
            key = (0, _objective(d.encoders, d.decoders, objective))
        else:
            key = (1, max(kA / kappa, kD / kappa_D if math.isfinite(kappa_D) else 0.0))
        if best_key is None or key < best_key:
            best, best_key = (d, e, ok), key
    return best


def _require(
    best: tuple[CerarDesign, float | None, bool] | None, family: str
) -> tuple[CerarDesign, float | None, bool]:
    if best is None:
        raise InvalidArgumentError("eps", f"no {family} design of the grid can be built in float64")
    return best


def _clip_over(X: np.ndarray, cap: float) -> np.ndarray:
    """Clip (:func:`clip_condition`) only the matrices of a stack whose kappa exceeds the certificate.

    Matrices that already meet ``kappa <= cap (1 + CERT_RTOL)`` are kept bit for bit, so a start
    that fits the caps is not moved (an SVD round trip would change its last bits).
    """
    if not math.isfinite(cap):
        return X
    bad = condition_numbers(X) > cap * (1 + CERT_RTOL)
    if not np.any(bad):
        return X
    X = X.copy()
    X[bad] = clip_condition(X[bad], cap)
    return X


def _start(
    label: str,
    A: np.ndarray,
    D: np.ndarray | None,
    kappa: float,
    kappa_D: float,
    objective: str,
    eps: float | None = None,
) -> dict[str, Any]:
    """A start: the design projected onto the caps and gauge-fixed, with what it was before."""
    A = np.asarray(A, dtype=float)
    fits, kA, kD = (None, float(np.max(condition_numbers(A))), None) if D is None else _fits(A, D, kappa, kappa_D)
    A = _clip_over(A, kappa)
    if D is None:  # random start: Frobenius-optimal decoders for its encoders
        D = _least_squares_decoders(A)
    D = _clip_over(np.asarray(D, dtype=float), kappa_D)
    A, D = _fix_gauge(A, D)
    return {
        "label": label,
        "eps": eps,
        "A": A,
        "D": D,
        "fits_caps": fits,
        "kappa_A_max": kA,
        "kappa_D_max": kD,
        "objective_start": _objective(A, D, objective),
    }


def _analytic_starts(
    N: int,
    c: int,
    kappa: float,
    kappa_D: float,
    objective: str,
    eps: float | None = None,
    eps_grid: Grid | None = None,
    vandermonde_grid: Grid | None = None,
) -> list[dict[str, Any]]:
    """One start per analytic family gcsim can build (exact, perturbation, Vandermonde).

    Each family contributes its best member that fits the caps (lowest objective), or, if none
    fits, the member closest to fitting, projected onto the caps. Starts with identical arrays
    (for ``c <= N`` the perturbation design can coincide with the exact one) are kept once.
    """
    starts: list[dict[str, Any]] = []
    for family, grid in (
        ("exact", None),
        ("perturbation", [eps] if eps is not None else eps_grid),
        ("vandermonde", vandermonde_grid),
    ):
        best = _best_member(_family_members(N, c, family, grid), kappa, kappa_D, objective)
        if best is None:
            continue
        d, e, _ = best
        s = _start(family, d.encoders, d.decoders, kappa, kappa_D, objective, e)
        if any(np.array_equal(s["A"], t["A"]) and np.array_equal(s["D"], t["D"]) for t in starts):
            continue
        starts.append(s)
    return starts


def _initial_point(
    N: int, c: int, init: Any, eps: float | None, seed: int, kappa: float, kappa_D: float, objective: str = "frobenius"
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The single start of a named ``init`` (not ``"auto"``) or a design: ``(A, D, info)``, projected."""
    return _starts_for(N, c, init, eps, seed, kappa, kappa_D, objective)[0][1:]


def _starts_for(
    N: int, c: int, init: Any, eps: float | None, seed: int, kappa: float, kappa_D: float, objective: str
) -> list[tuple[dict[str, Any], np.ndarray, np.ndarray, dict]]:
    """Starts of ``optimized_design``: ``[(start, A, D, info), ...]``."""
    if isinstance(init, CerarDesign):
        if (init.N, init.c) != (N, c):
            raise InvalidArgumentError("init", f"design has (N, c) = {(init.N, init.c)}, expected {(N, c)}")
        starts = [
            _start(
                f"given design ({init.method})",
                init.encoders,
                init.decoders,
                kappa,
                kappa_D,
                objective,
                init.metadata.get("eps"),
            )
        ]
    elif init == "random":
        rng = np.random.default_rng(seed)
        starts = [_start("random", rng.standard_normal((N, c, c)), None, kappa, kappa_D, objective)]
    elif init == "auto":
        starts = _analytic_starts(N, c, kappa, kappa_D, objective, eps=eps)
    else:
        if init == "exact" and c > N and N > 2:
            raise InvalidArgumentError("init", f"'exact' needs c <= N (or N = 2), got N = {N}, c = {c}")
        if eps is not None:
            grid: Grid | None = [eps]
        elif init == "vandermonde":
            grid = _vandermonde_grid(c)
        else:
            grid = None
        if init == "exact":
            d, e = exact_design(N, c), None
        else:
            d, e, _ = _require(_best_member(_family_members(N, c, init, grid), kappa, kappa_D, objective), init)
        starts = [_start(init, d.encoders, d.decoders, kappa, kappa_D, objective, e)]
    out = []
    for s in starts:
        info = {"init": init if isinstance(init, str) else s["label"]}
        if s["eps"] is not None:
            info["eps"] = s["eps"]
        out.append((s, s["A"], s["D"], info))
    return out
