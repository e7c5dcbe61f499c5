"""CERAR error metrics, condition numbers and traffic/storage formulas (SPEC §5).

Error operators E_{i,m} = D_i S_{m-1} A_{i-m} - I_c (m = 1..N-1) give
g_hat_i - sum_j G_j = sum_m E_{i,m} G_{i-m}.  Metrics (each says what it is):

* ``worst_case`` = max_i ||[E_{i,1} ... E_{i,N-1}]||_2 -- the largest possible error of
  any worker divided by the norm of the stacked inputs [G_{i-1}; ...; G_{i-N+1}];
* ``pair_norms[i, m-1]`` = ||E_{i,m}||_2 and their maximum ``max_pair_norm``;
* ``frobenius`` = sum_{i,m} ||E_{i,m}||_F^2 (the optimizer's objective);
* ``relative_mse[i]`` = sum_m ||E_{i,m}||_F^2 / (N c): for isotropic gradients (i.i.d.
  entries) E||g_hat_i - g||^2 / E||G||_F^2 with G the N stacked inputs;
  ``mean_relative_mse`` averages it over workers;
* ``empirical`` = max_i ||g_hat_i - g|| / ||g|| on given gradients (float64 simulation).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int
from .design import CerarDesign, num_rounds
from .protocol import _check_design, check_gradients, simulate

__all__ = ["CerarErrors", "errors", "rates", "condition_numbers"]


@dataclass
class CerarErrors:
    """Error metrics and condition numbers of a CERAR design (see module docstring).

    Attributes
    ----------
    operators : ndarray (N, N-1, c, c)
        E[i, m-1] = E_{i,m}.
    worst_case : float
        max_i ||[E_{i,1} ... E_{i,N-1}]||_2.
    per_worker_worst : ndarray (N,)
        ||[E_{i,1} ... E_{i,N-1}]||_2 for each worker i.
    pair_norms : ndarray (N, N-1)
        ||E_{i,m}||_2.
    max_pair_norm : float
        max_{i,m} ||E_{i,m}||_2.
    frobenius : float
        sum_{i,m} ||E_{i,m}||_F^2.
    per_worker_frobenius : ndarray (N,)
        sum_m ||E_{i,m}||_F^2.
    relative_mse : ndarray (N,)
        per_worker_frobenius / (N c).
    mean_relative_mse : float
        frobenius / (N^2 c).
    kappa_encoders, kappa_decoders : ndarray (N,)
        sigma_max / sigma_min of A_j (c x c) and of D_i (c x L).
    empirical : float or None
        max_i ||g_hat_i - g|| / ||g|| for the given gradients (None without gradients).
    per_worker_empirical : ndarray (N,) or None
    """

    operators: np.ndarray
    worst_case: float
    per_worker_worst: np.ndarray
    pair_norms: np.ndarray
    max_pair_norm: float
    frobenius: float
    per_worker_frobenius: np.ndarray
    relative_mse: np.ndarray
    mean_relative_mse: float
    kappa_encoders: np.ndarray
    kappa_decoders: np.ndarray
    empirical: float | None = None
    per_worker_empirical: np.ndarray | None = None

    @property
    def kappa(self) -> float:
        """max(kappa(A_j), kappa(D_i)) over all workers."""
        return float(max(self.kappa_encoders.max(), self.kappa_decoders.max()))


def condition_numbers(design: CerarDesign) -> tuple[np.ndarray, np.ndarray]:
    """(kappa(A_j) for each j, kappa(D_i) for each i), 2-norm, via batched SVD.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> kA, kD = condition_numbers(design(4, 4, "exact"))
    >>> kA.tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    design = _check_design(design)
    sA = np.linalg.svd(design.encoders, compute_uv=False)
    sD = np.linalg.svd(design.decoders, compute_uv=False)
    with np.errstate(divide="ignore"):
        return sA[:, 0] / sA[:, -1], sD[:, 0] / sD[:, -1]


def errors(design: CerarDesign, gradients: Any = None) -> CerarErrors:
    """All error metrics of a design, and the empirical error on ``gradients`` if given.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> e = errors(design(3, 5, "perturbation", eps=0.1))
    >>> round(e.max_pair_norm, 6) == round(1 - 1.1 ** -3, 6)      # 1 - (1+eps)^(-N r*)
    True
    >>> bool(np.isclose(e.worst_case, np.sqrt(2) * e.max_pair_norm))  # sqrt(N-1) times it
    True
    >>> float(e.per_worker_worst[-1]) < 1e-12                         # worker N-1 is exact
    True
    """
    design = _check_design(design)
    N, c = design.N, design.c
    E = design.error_operators()
    rows = np.moveaxis(E, 1, 2).reshape(N, c, (N - 1) * c)          # [E_{i,1} ... E_{i,N-1}]
    per_worst = np.linalg.norm(rows, 2, axis=(1, 2))
    pair = np.linalg.norm(E, 2, axis=(2, 3))
    fro_w = np.sum(E ** 2, axis=(1, 2, 3))
    kA, kD = condition_numbers(design)
    out = CerarErrors(
        operators=E, worst_case=float(per_worst.max()), per_worker_worst=per_worst,
        pair_norms=pair, max_pair_norm=float(pair.max()) if pair.size else 0.0,
        frobenius=float(fro_w.sum()), per_worker_frobenius=fro_w,
        relative_mse=fro_w / (N * c), mean_relative_mse=float(fro_w.sum() / (N * N * c)),
        kappa_encoders=kA, kappa_decoders=kD)
    if gradients is not None:
        g = check_gradients(gradients, N)
        res = simulate(design, g, dtype="float64")
        total = g.sum(axis=0)
        nrm = np.linalg.norm(total)
        diff = np.linalg.norm(res.outputs - total, axis=1)
        per = diff / nrm if nrm > 0 else np.where(diff > 0, np.inf, 0.0)
        out.per_worker_empirical = per
        out.empirical = float(per.max())
    return out


def rates(N: int, c: int) -> dict[str, float | int | bool]:
    """Traffic, rounds and storage of CERAR versus ring all-reduce (normalised by d).

    Keys: ``rounds`` L = c+N-2; ``rate`` 1+(N-2)/c (per-worker traffic / d);
    ``ring_rate`` 2(N-1)/N; ``byte_ratio`` ring / CERAR = 2(N-1)c / (N(c+N-2));
    ``storage`` 1+N/c (abstract's accounting: c local + N-1 in flight + 1 receive packets);
    ``simulator_storage`` (2c+1)/c (peak of the simulator's schedule); ``exact_possible``
    (c <= N or N = 2).

    Examples
    --------
    >>> r = rates(4, 4)
    >>> r["rounds"], r["rate"], r["ring_rate"], r["byte_ratio"]
    (6, 1.5, 1.5, 1.0)
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    L = num_rounds(N, c)
    return {
        "rounds": L,
        "rate": 1 + (N - 2) / c,
        "ring_rate": 2 * (N - 1) / N,
        "byte_ratio": 2 * (N - 1) * c / (N * L),
        "storage": 1 + N / c,
        "simulator_storage": (2 * c + 1) / c,
        "exact_possible": c <= N or N == 2,
    }
