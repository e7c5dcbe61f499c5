"""Floating-point trade-off of the perturbation design (docs/theory.md §50.5).

With perturbation eps the exact-arithmetic error is about a N r* eps (seam error
1 - (1+eps)^{-N r*}) while round-off contributes about b kappa u with kappa(A_j) =
Theta(eps^{-r*}) and u the unit round-off.  Minimising a N r* eps + b' eps^{-r*} u over eps
gives eps* = (b' u / (a N))^{1/(r*+1)} ~ u^{1/(r*+1)}; below eps* the error grows like
eps^{-r*} u and the protocol collapses once kappa u ~ 1.  :func:`epsilon_sweep` measures
this on real arrays with :func:`gcsim.cerar.protocol.simulate` (float64, float32 or
emulated bfloat16).

**Which κ for a wire dtype** (:func:`kappa_for_dtype`, :func:`precision_check`).  A design with
condition numbers at most κ, run in a dtype of unit round-off ``u``, carries two errors relative
to the sum: its approximation error ``a`` (exact arithmetic; ``a = sqrt(mean_relative_mse)`` for
isotropic gradients) and the rounding of the coded symbols, amplified by the encoders and
decoders, of order ``κ u``.  A cap κ is worth raising while ``κ u`` stays below the approximation
error it buys, and no further.  The perturbation design shows where the two meet: at
``ε* = u^{1/(r*+1)}`` its approximation error is ``Θ(ε*)`` and its κ is ``Θ(ε*^{-r*})``, so
``κ u = Θ(u^{1/(r*+1)})`` too.  The rule: ``κ_dtype`` is the largest condition number (encoders
and decoders) of the perturbation design at ``ε*``, of order ``u^{-r*/(r*+1)}`` -- 4098 to 5018
for float32 at (N, c) = (4, 8), 19 to 22 for bfloat16, 1 when ``c <= N`` (the exact design).  The
perturbation design at ``ε*`` is then within the cap, so a design optimized under it (its starts
include the analytic designs, :mod:`gcsim.cerar.optimize`) is no worse in the optimizer's
objective.  The dtype's **rounding level** for ``(N, c)`` is ``ρ = κ_dtype u``: the error of a
CERAR all-reduce in that dtype at that cap (``u`` itself when ``c <= N``).  A design whose
expected error ``a + κ(design) u`` exceeds ``ρ`` by a large factor is far less accurate than the
dtype allows (κ too small, as ``kappa=20`` in float32: about 76 ρ) or rounding-dominated (κ too
large for the dtype: the float32 design in bfloat16), and :func:`precision_check` warns.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .constructions import _check_design_size, perturbation_design, r_star
from .metrics import condition_numbers, design_metrics
from .protocol import resolve_dtype, simulate, unit_roundoff

__all__ = [
    "EpsilonSweep",
    "epsilon_sweep",
    "predicted_optimal_eps",
    "wire_unit_roundoff",
    "kappa_for_dtype",
    "PrecisionCheck",
    "CerarPrecisionWarning",
    "precision_check",
]

#: Unit round-off ``u = 2^-p`` of the wire dtypes a DDP bucket may have (p = the significand bits).
WIRE_UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def wire_unit_roundoff(dtype: Any) -> float:
    """The unit round-off ``u`` of a wire dtype: a name, a NumPy dtype or a ``torch.dtype``.

    ``2^-53`` (float64), ``2^-24`` (float32), ``2^-11`` (float16), ``2^-8`` (bfloat16).

    Examples
    --------
    >>> wire_unit_roundoff("float32") == 2.0**-24, wire_unit_roundoff("float16") == 2.0**-11
    (True, True)
    """
    name = str(dtype).removeprefix("torch.")
    if name not in WIRE_UNIT_ROUNDOFF:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = ""
    if name not in WIRE_UNIT_ROUNDOFF:
        raise InvalidArgumentError("dtype", f"must be one of {sorted(WIRE_UNIT_ROUNDOFF)}, got {dtype!r}")
    return WIRE_UNIT_ROUNDOFF[name]


def predicted_optimal_eps(N: int, c: int, dtype: Any = "float32") -> float:
    """u^{1/(r*+1)}, the order of the best perturbation for a dtype (1.0 if r* = 0).

    Examples
    --------
    >>> predicted_optimal_eps(3, 5, "float32") == 2.0 ** -12
    True
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    rs = r_star(N, c)
    return 1.0 if rs == 0 else float(unit_roundoff(dtype) ** (1.0 / (rs + 1)))


@dataclass(frozen=True, eq=False)
class EpsilonSweep:
    """Result of :func:`epsilon_sweep`.

    Attributes
    ----------
    eps : ndarray
        Perturbations tried (sorted ascending).
    error : ndarray
        Empirical error max_i ||g_hat_i - g|| / ||g|| in the working dtype.
    exact_error : ndarray
        The same on the same gradients in float64 (the approximation part, ~ N r* eps).
    kappa : ndarray
        max_j kappa(A_j) of each design.
    best_eps : float
        eps with the smallest ``error``.
    predicted_eps : float
        u^{1/(r*+1)}.
    r_star : int
    unit_roundoff : float
    dtype : str
    """

    eps: np.ndarray
    error: np.ndarray
    exact_error: np.ndarray
    kappa: np.ndarray
    best_eps: float
    predicted_eps: float
    r_star: int
    unit_roundoff: float
    dtype: str


def epsilon_sweep(
    N: int, c: int, eps_values: Any, dtype: Any = "float32", *, d: int = 256, seed: int = 0, gradients: Any = None
) -> EpsilonSweep:
    """Empirical error of the perturbation design versus eps in a given precision.

    Parameters
    ----------
    N, c : int
        Ring size and components (c > N for a non-trivial trade-off).
    eps_values : sequence of float > 0
        Perturbations to try.
    dtype : {"float32", "float64", "bfloat16"}
        Working precision of the simulated protocol.
    d : int
        Gradient length of the random test gradients (standard normal, ``seed``).
    gradients : array (N, d), optional
        Use these instead of random gradients.

    Examples
    --------
    >>> sw = epsilon_sweep(3, 5, [1e-6, 2.0 ** -12, 0.3], "float32", d=64)
    >>> bool(sw.error[1] < sw.error[0] and sw.error[1] < sw.error[2])
    True
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    _check_design_size(N, c)
    name = resolve_dtype(dtype)
    eps = np.atleast_1d(np.asarray(eps_values, dtype=float))
    if eps.ndim != 1 or eps.size == 0:
        raise InvalidArgumentError("eps_values", "must be a non-empty 1-D sequence")
    for e in eps:
        check_real("eps_values", float(e), minimum=0.0, strict_min=True)
    eps = np.sort(eps)
    if gradients is None:
        d = check_int("d", d, minimum=1)
        check_entries("d", (N, d), "the random test gradients (N x d)")
        g = np.random.default_rng(check_int("seed", seed)).standard_normal((N, d))
    else:
        g = np.asarray(gradients, dtype=float)
    total = g.sum(axis=0)
    nrm = np.linalg.norm(total)
    err, exact, kap = [], [], []
    for e in eps:
        try:
            with warnings.catch_warnings():  # the sweep visits ill-conditioned designs on purpose
                warnings.simplefilter("ignore", RuntimeWarning)
                des = perturbation_design(N, c, float(e))
        except InvalidArgumentError:  # encoders singular even in float64
            err.append(np.inf)
            exact.append(np.inf)
            kap.append(np.inf)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the collapse is the point here
            # the rounds (not the end-to-end operator): the sweep measures the protocol's own rounding
            lo = simulate(des, g, dtype=name, warn=False, accumulate="batched").outputs
            hi = simulate(des, g, dtype="float64", warn=False, accumulate="batched").outputs
        err.append(np.max(np.linalg.norm(lo - total, axis=1)) / nrm)
        exact.append(np.max(np.linalg.norm(hi - total, axis=1)) / nrm)
        kap.append(condition_numbers(des.encoders).max())
    err = np.nan_to_num(np.array(err), nan=np.inf, posinf=np.inf)
    return EpsilonSweep(
        eps=eps,
        error=err,
        exact_error=np.array(exact),
        kappa=np.array(kap),
        best_eps=float(eps[int(np.argmin(err))]),
        predicted_eps=predicted_optimal_eps(N, c, name),
        r_star=r_star(N, c),
        unit_roundoff=unit_roundoff(name),
        dtype=name,
    )


def kappa_for_dtype(dtype: Any, N: int, c: int) -> float:
    """The condition-number cap κ for CERAR designs on ``(N, c)`` whose packets travel in ``dtype``.

    The rule (module docstring): the largest condition number, over the encoders ``A_j`` and the
    decoders ``D_i``, of the perturbation design at ``ε* = u^{1/(r*+1)}``
    (:func:`predicted_optimal_eps`), where the approximation error ``Θ(ε*)`` and the amplified
    rounding ``κ u`` are of the same order.  It grows like ``u^{-r*/(r*+1)}``: a finer dtype
    affords a larger κ; ``c <= N`` (``r* = 0``) gives 1.  For a coarse dtype and ``r* >= 2``
    (bfloat16 and float16 at ``c >= N + 4``: ``ε* >= 0.15``) the perturbation design is outside its
    asymptotic range, κ is no longer monotone in ``u``, and no design is useful there anyway
    (docs/guides/cerar.md).

    Parameters
    ----------
    dtype : str, numpy or torch dtype
        The wire dtype (:func:`wire_unit_roundoff`): float64, float32, float16 or bfloat16.
    N, c : int
        Ring size (``>= 2``) and components (``>= 1``).

    Returns
    -------
    float
        κ, to pass as ``design(N, c, "optimized", kappa=...)`` or ``--kappa``.

    Examples
    --------
    >>> round(kappa_for_dtype("float32", 4, 8)), round(kappa_for_dtype("bfloat16", 4, 8))
    (5018, 22)
    >>> kappa_for_dtype("float32", 4, 4)
    1.0
    """
    u = wire_unit_roundoff(dtype)
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    rs = r_star(N, c)
    if rs == 0:
        return 1.0
    des = perturbation_design(N, c, float(u ** (1.0 / (rs + 1))))
    return float(max(condition_numbers(des.encoders).max(), condition_numbers(des.decoders).max()))


class CerarPrecisionWarning(UserWarning):
    """A CERAR design's expected error is far above the rounding level of its wire dtype."""


@dataclass(frozen=True)
class PrecisionCheck:
    """The expected error of a design in a wire dtype, against the dtype's rounding level.

    Attributes
    ----------
    approximation : float
        ``sqrt(mean_relative_mse)``: the relative error in exact arithmetic, isotropic gradients.
    rounding : float
        ``κ u``, κ the design's largest condition number (encoders and decoders).
    expected : float
        ``approximation + rounding``.
    level : float
        The dtype's rounding level ``ρ = kappa_for_dtype(dtype, N, c) · u``.
    ratio : float
        ``expected / level``.
    kappa, kappa_dtype, unit_roundoff : float
    dtype : str
    factor : float
        The ratio above which :func:`precision_check` warns.
    """

    approximation: float
    rounding: float
    expected: float
    level: float
    ratio: float
    kappa: float
    kappa_dtype: float
    unit_roundoff: float
    dtype: str
    factor: float

    @property
    def ok(self) -> bool:
        """``ratio <= factor``."""
        return self.ratio <= self.factor

    def message(self) -> str:
        """One line: the numbers and what to change."""
        return (
            f"CERAR design (N, c) error in {self.dtype}: expected {self.expected:.3g} (approximation "
            f"{self.approximation:.3g} + rounding kappa u = {self.kappa:.3g} x {self.unit_roundoff:.3g}), "
            f"{self.ratio:.3g} times the {self.dtype} rounding level {self.level:.3g}; a design with kappa near "
            f"kappa_for_dtype = {self.kappa_dtype:.4g} (e.g. design(N, c, 'optimized', kappa={self.kappa_dtype:.4g})) "
            "is as accurate as this dtype allows"
        )


def precision_check(design: Any, dtype: Any = "float32", *, factor: float = 10.0, warn: bool = True) -> PrecisionCheck:
    """Compare a design's expected error in ``dtype`` with the dtype's rounding level; warn when far above.

    ``expected = sqrt(mean_relative_mse) + κ u`` against ``ρ = kappa_for_dtype(dtype, N, c) · u``
    (module docstring); a :class:`CerarPrecisionWarning` when ``expected > factor ρ`` and ``warn``.

    Parameters
    ----------
    design : CerarDesign
    dtype : str, numpy or torch dtype
        The wire dtype (the gradients' dtype).
    factor : float
        Ratio above which the design counts as far above the dtype's rounding (``>= 1``).
    warn : bool
        Emit the warning (else only return the numbers).

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> precision_check(design(4, 8, "perturbation", eps=predicted_optimal_eps(4, 8)), "float32").ok
    True
    >>> precision_check(design(4, 8, "perturbation", eps=0.3), "float32", warn=False).ok
    False
    """
    if getattr(type(design), "kind", None) != "cerar":
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    factor = check_real("factor", factor, minimum=1.0)
    warn = check_bool("warn", warn)
    u = wire_unit_roundoff(dtype)
    name = next(k for k, v in WIRE_UNIT_ROUNDOFF.items() if v == u)
    kappa_dtype = kappa_for_dtype(name, design.N, design.c)
    kappa = float(max(condition_numbers(design.encoders).max(), condition_numbers(design.decoders).max()))
    approx = math.sqrt(max(float(design_metrics(design)["mean_relative_mse"]), 0.0))
    expected = approx + kappa * u
    level = kappa_dtype * u
    out = PrecisionCheck(approx, kappa * u, expected, level, expected / level, kappa, kappa_dtype, u, name, factor)
    if warn and not out.ok:
        warnings.warn(out.message().replace("(N, c)", f"(N={design.N}, c={design.c})"), CerarPrecisionWarning, 3)
    return out
