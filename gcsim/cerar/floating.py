"""Floating-point trade-off of the perturbation design (docs/theory.md §50.5).

With perturbation eps the exact-arithmetic error is about a N r* eps (seam error
1 - (1+eps)^{-N r*}) while round-off contributes about b kappa u with kappa(A_j) =
Theta(eps^{-r*}) and u the unit round-off.  Minimising a N r* eps + b' eps^{-r*} u over eps
gives eps* = (b' u / (a N))^{1/(r*+1)} ~ u^{1/(r*+1)}; below eps* the error grows like
eps^{-r*} u and the protocol collapses once kappa u ~ 1.  :func:`epsilon_sweep` measures
this on real arrays with :func:`gcsim.cerar.protocol.simulate` (float64, float32 or
emulated bfloat16).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_real
from ..errors import InvalidArgumentError
from .constructions import perturbation_design, r_star
from .metrics import condition_numbers
from .protocol import resolve_dtype, simulate, unit_roundoff

__all__ = ["EpsilonSweep", "epsilon_sweep", "predicted_optimal_eps"]


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
    name = resolve_dtype(dtype)
    eps = np.atleast_1d(np.asarray(eps_values, dtype=float))
    if eps.ndim != 1 or eps.size == 0:
        raise InvalidArgumentError("eps_values", "must be a non-empty 1-D sequence")
    for e in eps:
        check_real("eps_values", float(e), minimum=0.0, strict_min=True)
    eps = np.sort(eps)
    if gradients is None:
        d = check_int("d", d, minimum=1)
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
