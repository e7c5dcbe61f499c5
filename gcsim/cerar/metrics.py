"""CERAR error metrics, condition numbers and the certificate (docs/theory.md §50, §55).

One function per quantity; the analysis, the optimizer, the catalogue and the executor all use
these.  Error operators E_{i,m} = D_i S_{m-1} A_{i-m} - I_c (m = 1..N-1) give
g_hat_i - sum_j G_j = sum_m E_{i,m} G_{i-m}.  Metrics:

* ``worst_case`` = max_i ||[E_{i,1} ... E_{i,N-1}]||_2 (:func:`worst_worker_error`) -- the largest
  possible error of any worker divided by the norm of the stacked inputs [G_{i-1}; ...; G_{i-N+1}];
* ``pair_norms[i, m-1]`` = ||E_{i,m}||_2 and their maximum ``max_pair_norm``;
* ``frobenius`` = sum_{i,m} ||E_{i,m}||_F^2 (:func:`frobenius_error`, the optimizer's objective);
* ``relative_mse[i]`` = sum_m ||E_{i,m}||_F^2 / (N c): for isotropic gradients (i.i.d. entries)
  E||g_hat_i - g||^2 / E||G||_F^2 with G the N stacked inputs; ``mean_relative_mse`` averages it;
* ``empirical`` = max_i ||g_hat_i - g|| / ||g|| on given gradients (float64 ring);
* kappa(X) = sigma_1 / sigma_r, r = min(rows, cols) (:func:`condition_numbers`).

The **certificate** of a stored design is its kappas and error metrics; :func:`certificate_problems`
recomputes them from the arrays and compares within tolerances derived from rounding-error bounds
(:func:`metric_tolerances`), so a design written on a machine with another BLAS kernel is accepted
and a value off by more than float64 can explain is not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .. import _html
from ..errors import InvalidArgumentError
from .ring import check_host_gradients, encode, num_rounds, run_ring, split_gradients

__all__ = [
    "CERT_RTOL",
    "SAFETY",
    "error_operators",
    "condition_numbers",
    "worker_norms",
    "frobenius_error",
    "worst_worker_error",
    "design_metrics",
    "CerarErrors",
    "errors",
    "gamma",
    "kappa_tolerance",
    "pair_tolerances",
    "metric_tolerances",
    "certificate_problems",
    "METRIC_KEYS",
]

#: Relative tolerance of a certificate ``kappa_svd <= cap * (1 + CERT_RTOL)``; it covers only the
#: rounding of the SVD itself (about ``c * u * kappa``).
CERT_RTOL = 1e-9
#: Constant of the O(.) in the rounding-error bounds below (as in the test suite's tolerances).
SAFETY = 10.0
_U = float(np.finfo(np.float64).eps) / 2  # unit roundoff of float64
#: The error metrics a certificate records.
METRIC_KEYS = ("frobenius", "mean_relative_mse", "worst_case", "worker_errors")


def _check_design(design: Any) -> Any:
    # the design class sits above this module: recognise it by its catalogue kind
    if getattr(type(design), "kind", None) != "cerar":
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    return design


def error_operators(encoders: np.ndarray, decoders: np.ndarray) -> np.ndarray:
    """Batched error operators E_{i,m} = D_i S_{m-1} A_{i-m} - I (shape (N, N-1, c, c)).

    D_i S_{m-1} is the column window D_i[:, m-1 : m-1+c], so no shift matrix is formed.

    Examples
    --------
    >>> error_operators(np.ones((2, 1, 1)), 2 * np.ones((2, 1, 1))).ravel().tolist()
    [1.0, 1.0]
    """
    N, c, _ = encoders.shape
    m = np.arange(1, N)
    i = np.arange(N)
    cols = (m - 1)[:, None] + np.arange(c)[None, :]  # (N-1, c)
    windows = decoders[:, :, cols]  # (N, c, N-1, c)
    windows = np.moveaxis(windows, 2, 1)  # (N, N-1, c, c)
    src = (i[:, None] - m[None, :]) % N  # (N, N-1)
    prod = windows @ encoders[src]  # (N, N-1, c, c)
    return prod - np.eye(c)


def condition_numbers(X: np.ndarray) -> np.ndarray:
    """2-norm condition numbers ``sigma_1 / sigma_r`` of a stack of matrices, ``r = min(p, q)``.

    Parameters
    ----------
    X : array_like, shape (..., p, q)

    Returns
    -------
    ndarray, shape (...)
        ``inf`` where the ``r``-th singular value is zero.

    Examples
    --------
    >>> condition_numbers(np.diag([4.0, 2.0])).round(12)
    np.float64(2.0)
    >>> condition_numbers(np.array([[[1.0, 0, 0], [0, 0.5, 0]]])).round(12)
    array([2.])
    """
    sv = np.linalg.svd(np.asarray(X, dtype=float), compute_uv=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = sv[..., 0] / sv[..., -1]
    return np.where(sv[..., -1] > 0, k, np.inf)


def worker_norms(E: np.ndarray) -> np.ndarray:
    """||[E_{i,1} ... E_{i,N-1}]||_2 for each worker i (E of shape (N, N-1, c, c))."""
    N, M, c, _ = E.shape
    rows = np.moveaxis(E, 1, 2).reshape(N, c, M * c)  # [E_{i,1} ... E_{i,N-1}]
    return np.linalg.svd(rows, compute_uv=False)[:, 0]


def frobenius_error(design: Any) -> float:
    """``F = sum_{i,m} ||E_{i,m}||_F^2`` (divide by ``N c`` for the per-worker relative MSE).

    Examples
    --------
    >>> from gcsim.cerar.design import CerarDesign
    >>> frobenius_error(CerarDesign(2, 1, np.ones((2, 1, 1)), np.ones((2, 1, 1))))
    0.0
    """
    E = _check_design(design).error_operators()
    return float(np.sum(E * E))


def worst_worker_error(design: Any) -> float:
    """``max_i ||[E_{i,1} ... E_{i,N-1}]||_2`` (spectral norm of each worker's block row).

    Examples
    --------
    >>> from gcsim.cerar.design import CerarDesign
    >>> worst_worker_error(CerarDesign(2, 1, np.ones((2, 1, 1)), 2 * np.ones((2, 1, 1))))
    1.0
    """
    return float(np.max(worker_norms(_check_design(design).error_operators())))


def design_metrics(design: Any) -> dict[str, Any]:
    """Error metrics and SVD condition numbers of a design (JSON-ready floats and lists).

    Keys: ``frobenius``, ``mean_relative_mse`` (``frobenius / (N^2 c)``: the worker average of
    ``sum_m ||E_{i,m}||_F^2 / (N c)``, the relative MSE for isotropic gradients),
    ``worst_case``, ``worker_errors`` (per-worker spectral norms), ``kappa_A`` / ``kappa_D``
    (per matrix), ``kappa_A_max``, ``kappa_D_max``, ``kappa_max``.
    """
    design = _check_design(design)
    E = design.error_operators()
    kA = condition_numbers(design.encoders)
    kD = condition_numbers(design.decoders)
    fro = float(np.sum(E * E))
    w = worker_norms(E)
    return {
        "frobenius": fro,
        "mean_relative_mse": fro / (design.N**2 * design.c),
        "worst_case": float(np.max(w)),
        "worker_errors": [float(x) for x in w],
        "kappa_A": [float(x) for x in kA],
        "kappa_D": [float(x) for x in kD],
        "kappa_A_max": float(np.max(kA)),
        "kappa_D_max": float(np.max(kD)),
        "kappa_max": float(max(np.max(kA), np.max(kD))),
    }


@dataclass(frozen=True, eq=False)
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

    kind: ClassVar[str] = "cerar errors"

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @property
    def kappa(self) -> float:
        """max(kappa(A_j), kappa(D_i)) over all workers."""
        return float(max(self.kappa_encoders.max(), self.kappa_decoders.max()))

    @property
    def N(self) -> int:
        """Number of workers on the ring."""
        return int(self.operators.shape[0])

    @property
    def c(self) -> int:
        """Number of components of each gradient."""
        return int(self.operators.shape[2])

    def __repr__(self) -> str:
        """The key numbers and the shape of the operators; never the arrays.

        >>> from gcsim.cerar import design
        >>> errors(design(3, 5, "perturbation", eps=0.1))  # doctest: +ELLIPSIS
        CerarErrors(N=3, c=5, operators (3, 2, 5, 5), worst_case=0.3..., frobenius=..., kappa=..., empirical=None)
        """
        return _html.repr_line(
            "CerarErrors",
            ("N", self.N),
            ("c", self.c),
            f"operators {self.operators.shape}",
            ("worst_case", self.worst_case),
            ("frobenius", self.frobenius),
            ("kappa", self.kappa),
            ("empirical", self.empirical),
            digits=4,
        )

    def _repr_html_(self) -> str:
        """Card in Jupyter: the error metrics, the condition numbers and a heat map of ``‖E_{i,m}‖₂``."""
        return _html.safe_html(
            self,
            lambda: _html.object_html(
                title="CerarErrors",
                kind=self.kind,
                rows=[
                    ("workers N, components c", f"{self.N}, {self.c}"),
                    ("worst case max_i ‖[E_i,1 … E_i,N-1]‖₂", self.worst_case),
                    ("max pair norm ‖E_i,m‖₂", self.max_pair_norm),
                    ("Frobenius Σ ‖E_i,m‖_F²", self.frobenius),
                    ("mean relative MSE", self.mean_relative_mse),
                    (
                        "max κ(A_j), max κ(D_i)",
                        f"{_html.fmt(self.kappa_encoders.max())}, {_html.fmt(self.kappa_decoders.max())}",
                    ),
                    ("empirical max_i ‖ĝ_i − g‖/‖g‖", self.empirical if self.empirical is not None else "not run"),
                ],
                matrix=self.pair_norms,
                caption="‖E_i,m‖₂: row i is the worker, column m − 1 the hop (blank: exactly 0)",
            ),
        )


def errors(design: Any, gradients: Any = None) -> CerarErrors:
    """All error metrics of a design, and the empirical error on ``gradients`` if given.

    The empirical error runs the ring (:func:`gcsim.cerar.ring.run_ring`) in float64, as
    :func:`gcsim.cerar.protocol.simulate` does with ``accumulate="batched"``.

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
    rows = np.moveaxis(E, 1, 2).reshape(N, c, (N - 1) * c)  # [E_{i,1} ... E_{i,N-1}]
    per_worst = np.linalg.norm(rows, 2, axis=(1, 2))
    pair = np.linalg.norm(E, 2, axis=(2, 3))
    fro_w = np.sum(E**2, axis=(1, 2, 3))
    kA, kD = condition_numbers(design.encoders), condition_numbers(design.decoders)
    per = empirical = None
    if gradients is not None:
        g = check_host_gradients(gradients, N)
        d = g.shape[1]
        G = split_gradients(g, c)
        xp = np  # the ring on host float64 arrays
        out = run_ring(encode(design.encoders.astype(np.float64), G), G, design.decoders.astype(np.float64), xp=xp)
        outputs = out.reshape(N, -1)[:, :d]
        total = g.sum(axis=0)
        nrm = np.linalg.norm(total)
        diff = np.linalg.norm(outputs - total, axis=1)
        per = diff / nrm if nrm > 0 else np.where(diff > 0, np.inf, 0.0)
        empirical = float(per.max())
    return CerarErrors(
        operators=E,
        worst_case=float(per_worst.max()),
        per_worker_worst=per_worst,
        pair_norms=pair,
        max_pair_norm=float(pair.max()) if pair.size else 0.0,
        frobenius=float(fro_w.sum()),
        per_worker_frobenius=fro_w,
        relative_mse=fro_w / (N * c),
        mean_relative_mse=float(fro_w.sum() / (N * N * c)),
        kappa_encoders=kA,
        kappa_decoders=kD,
        empirical=empirical,
        per_worker_empirical=per,
    )


# ----------------------------------------------------------------------------------------------
# rounding-error tolerances and the certificate
# ----------------------------------------------------------------------------------------------


def gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u) (u = 2^-53), the relative error bound of a length-n sum or dot product.

    Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1; infinite when n u >= 1.
    """
    nu = n * _U
    return nu / (1.0 - nu) if nu < 1 else math.inf


def kappa_tolerance(kappa: Any, p: int) -> np.ndarray:
    """Absolute tolerance between two float64 evaluations of ``kappa = s_1 / s_r`` (SVD of p-dimensional matrices).

    A backward-stable SVD returns singular values with ``|ds| <= p u s_1`` (Weyl), so
    ``|dkappa| <= kappa * p u kappa / (1 - p u kappa)``; two machines (BLAS kernels) may each
    err by that much.  Where ``SAFETY p u kappa >= 1`` float64 cannot reproduce kappa at all
    and the tolerance is infinite (the caps are checked separately).
    """
    kappa = np.asarray(kappa, dtype=float)
    rel = SAFETY * p * _U * kappa
    with np.errstate(over="ignore", invalid="ignore"):
        tol = np.where(rel < 1, 2 * kappa * rel / np.maximum(1 - rel, 1e-300), np.inf)
    return np.where(np.isfinite(kappa), tol, 0.0)


def pair_tolerances(encoders: np.ndarray, decoders: np.ndarray) -> np.ndarray:
    """delta_{i,m} = gamma_c ||D_i||_F ||A_{i-m}||_F, the rounding bound of ``||E_{i,m}||_F`` (shape (N, N-1)).

    Each ``E_{i,m} = D_i S_{m-1} A_{i-m} - I`` is a c x c product of length-c dot products
    (Higham, Thm 3.5).
    """
    N, c, _ = encoders.shape
    src = (np.arange(N)[:, None] - np.arange(1, N)[None, :]) % N
    return gamma(c) * np.linalg.norm(decoders, axis=(1, 2))[:, None] * np.linalg.norm(encoders, axis=(1, 2))[src]


def metric_tolerances(design: Any, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Absolute tolerances between two float64 evaluations of the error metrics (any BLAS kernel).

    With ``delta_{i,m}`` of :func:`pair_tolerances`,
    ``|d frobenius| <= sum (2 ||E_{i,m}||_F delta_{i,m} + delta_{i,m}^2) + gamma_M frobenius``
    (M terms summed), and for the per-worker spectral norms (Weyl, plus the SVD's own
    backward error) ``|dw_i| <= sqrt(sum_m delta_{i,m}^2) + q u w_i`` with ``q = (N-1) c``.
    The stored and the recomputed values may each carry that error, hence the factor 2.
    """
    A, D, N, c = design.encoders, design.decoders, design.N, design.c
    L = num_rounds(N, c)
    E = design.error_operators()  # (N, N-1, c, c)
    delta = pair_tolerances(A, D)
    e_norm = np.linalg.norm(E, axis=(2, 3))
    fro = float(np.sum(E * E))
    tol_fro = 2 * SAFETY * (float(np.sum(2 * e_norm * delta + delta**2)) + gamma(E.size) * fro)
    w = np.asarray(metrics["worker_errors"], dtype=float)
    tol_w = 2 * SAFETY * (np.sqrt(np.sum(delta**2, axis=1)) + (N - 1) * c * _U * w)
    return {
        "frobenius": tol_fro,
        "mean_relative_mse": tol_fro / (N**2 * c),
        "worst_case": float(np.max(tol_w)),
        "worker_errors": tol_w,
        "kappa_A": kappa_tolerance(metrics["kappa_A"], c),
        "kappa_D": kappa_tolerance(metrics["kappa_D"], L),
        "kappa_A_max": float(np.max(kappa_tolerance(metrics["kappa_A"], c))),
        "kappa_D_max": float(np.max(kappa_tolerance(metrics["kappa_D"], L))),
    }


def _close(stored: Any, recomputed: Any, tol: Any) -> bool:
    """``|stored - recomputed| <= tol`` entrywise (equal infinities match; shapes must agree)."""
    try:
        a = np.asarray(stored, dtype=float)
        b = np.asarray(recomputed, dtype=float)
    except (TypeError, ValueError):
        return False
    if a.shape != b.shape or np.isnan(a).any():
        return False
    with np.errstate(invalid="ignore"):
        ok = (a == b) | (np.abs(a - b) <= np.asarray(tol, dtype=float))
    return bool(np.all(ok))


def certificate_problems(design: Any, certificate: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[str]:
    """What of a stored certificate and error metrics the arrays do not reproduce (empty: all good).

    ``certificate`` holds ``kappa_A``, ``kappa_D`` (per matrix), their maxima and ``caps``
    (``kappa_A``/``kappa_D``, or None); ``metrics`` the :data:`METRIC_KEYS`.  Each stored value
    must match the value recomputed from the arrays within :func:`metric_tolerances`, and the
    kappas must respect the caps (the optimizer certified ``kappa <= cap (1 + CERT_RTOL)`` on its
    machine; here kappa is recomputed with this machine's rounding, which may add the SVD bound).
    """
    m = design_metrics(design)
    tol = metric_tolerances(design, m)
    problems = []
    for key in ("kappa_A", "kappa_D", "kappa_A_max", "kappa_D_max"):
        if not _close(certificate.get(key), m[key], tol[key]):
            problems.append(
                f"kappa certificate {key} does not match the arrays "
                f"(stored {certificate.get(key)}, recomputed {m[key]})"
            )
    for key in METRIC_KEYS:
        if not _close(metrics.get(key), m[key], tol[key]):
            problems.append(
                f"error metric {key} does not match the arrays (stored {metrics.get(key)}, recomputed {m[key]})"
            )
    if problems:
        return problems[:1]
    caps = certificate.get("caps") or {}
    if not isinstance(caps, Mapping):
        return [f"certificate caps must be a JSON object, got {caps!r}"]
    for key, achieved in (("kappa_A", m["kappa_A_max"]), ("kappa_D", m["kappa_D_max"])):
        cap = caps.get(key)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))):
            return [f"the recorded cap {key} must be a number, got {cap!r}"]
        if cap is not None and (
            not math.isfinite(float(cap)) or achieved > float(cap) * (1 + CERT_RTOL) + tol[f"{key}_max"]
        ):
            return [f"{key} = {achieved} exceeds the recorded cap {cap}"]
    return []
