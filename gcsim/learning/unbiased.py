r"""Empirical unbiasedness check of decoded gradients (theory §45 "Unbiasedness", §7).

Given ``S`` i.i.d. decoded gradients ``ĝ_1..ĝ_S ∈ R^d`` (fresh stragglers — and a
fresh RD draw for redrawn codes — in each) and the true gradient ``g = Σ_i g_i``,
:func:`unbiasedness_test` tests ``H_0: E[ĝ] = g`` two ways:

* **per coordinate**: ``z_k = (mean_k - g_k) / (s_k / √S)`` with the sample
  standard deviation ``s_k``; the Bonferroni p-value
  ``min(1, d · 2 (1 - Φ(max_k |z_k|)))`` (normal approximation of the mean);
* **norm-based**: ``Q = S ‖mean - g‖²``.  Under ``H_0``, ``√S (mean - g)`` is
  approximately ``N(0, Σ)``, so ``Q ≈ Σ_k λ_k χ²_1`` with ``λ`` the eigenvalues
  of ``Σ``; the Satterthwaite–Welch (Box 1954) approximation matches the first
  two moments with ``c χ²_ν``, ``c = tr Σ² / tr Σ``, ``ν = (tr Σ)² / tr Σ²``.
  ``tr Σ`` and ``tr Σ²`` are estimated from the centred samples ``C``
  (``tr Σ² = ‖C Cᵀ‖_F² / (S-1)²``, using the smaller of ``C Cᵀ`` and ``Cᵀ C``).

The two p-values are combined by Bonferroni, ``p = min(1, 2 min(p_coord, p_norm))``,
and the check *passes* when ``p >= alpha``: under ``H_0`` the probability that
either test rejects is at most the sum of their levels, so ``alpha`` is the
level of the whole check (requiring each p-value ``>= alpha`` would give a level
up to ``2 alpha``).  A zero-variance coordinate (an exact code without
stragglers) passes only if its mean equals ``g_k`` to round-off, i.e. within
``roundoff`` (default ``1e-9``) times the largest magnitude in the data.  Both
tests are approximate (CLT, plug-in traces): their level is only asymptotic, and
estimators with heavy tails need more samples (see ``docs/theory/60_learning.md`` §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_finite_array, check_int, check_real
from ..coding.stragglers import straggler_model
from ..errors import InvalidArgumentError
from .train import CodedGradient, CodeSpec, _straggling_probabilities

__all__ = ["UnbiasednessResult", "unbiasedness_test", "decoded_samples", "check_unbiased"]


@dataclass
class UnbiasednessResult:
    """Outcome of :func:`unbiasedness_test`.

    Attributes
    ----------
    samples, d : int
    mean, target, stderr : numpy.ndarray
        Sample mean, true gradient and standard error of the mean per coordinate.
    max_abs_z : float
    coordinate_pvalue : float
        Bonferroni-corrected p-value of the largest ``|z|``.
    norm_statistic : float
        ``Q / (c ν)`` — about 1 under ``H_0``.
    norm_df : float
        ``ν``.
    norm_pvalue : float
    relative_bias : float
        ``‖mean - g‖ / ‖g‖``.
    alpha : float
    passed : bool
        ``pvalue >= alpha``.
    pvalue : float
        Bonferroni combination ``min(1, 2 min(coordinate_pvalue, norm_pvalue))``: the
        p-value of the whole check.
    """

    samples: int
    d: int
    mean: np.ndarray
    target: np.ndarray
    stderr: np.ndarray
    max_abs_z: float
    coordinate_pvalue: float
    norm_statistic: float
    norm_df: float
    norm_pvalue: float
    relative_bias: float
    alpha: float
    passed: bool
    pvalue: float

    def summary(self) -> str:
        """One line: verdict, p-values, relative bias."""
        verdict = "consistent with unbiased" if self.passed else "BIASED"
        return (
            f"{verdict} (p={self.pvalue:.3g}, alpha={self.alpha:g}): S={self.samples}, d={self.d}, "
            f"max|z|={self.max_abs_z:.2f} "
            f"(Bonferroni p={self.coordinate_pvalue:.3g}), norm test p={self.norm_pvalue:.3g} "
            f"(Q/E[Q]={self.norm_statistic:.3f}, df={self.norm_df:.1f}), "
            f"relative bias {self.relative_bias:.3g}"
        )


def unbiasedness_test(
    estimates: Any, target: Any, *, alpha: float = 0.01, roundoff: float = 1e-9
) -> UnbiasednessResult:
    """Test ``E[ĝ] = g`` from samples ``(S, d)`` (see the module docstring).

    Parameters
    ----------
    estimates : array (S, d), S >= 2
    target : array (d,)
    alpha : float in (0, 1)
        Level of the whole check (Bonferroni over its two tests).
    roundoff : float in [0, 1)
        Relative size of floating-point noise: a coordinate whose standard error is
        below ``roundoff * scale / sqrt(S)`` (``scale`` = the largest magnitude in the
        data) counts as deterministic and must match ``g_k`` within ``roundoff * scale``.
        The default 1e-9 leaves ~10^7 units of round-off (2^-53 each) for the decoding
        sums, far more than their ``gamma_n`` error bound for any realistic ``n``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.array([1.0, -2.0, 0.5])
    >>> unbiasedness_test(g + rng.standard_normal((4000, 3)), g).passed
    True
    >>> unbiasedness_test(g + 0.2 + rng.standard_normal((4000, 3)), g).passed
    False
    """
    from scipy.special import chdtrc, ndtr  # lighter than scipy.stats: chi2.sf and norm.sf

    E = check_finite_array("estimates", estimates, ndim=2)
    S, d = E.shape
    if S < 2 or d < 1:
        raise InvalidArgumentError("estimates", f"needs at least 2 samples of a non-empty vector, got {E.shape}")
    g = check_finite_array("target", target, ndim=1)
    if g.shape != (d,):
        raise InvalidArgumentError("target", f"must have shape ({d},), got {g.shape}")
    alpha = check_real("alpha", alpha, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
    roundoff = check_real("roundoff", roundoff, minimum=0.0, maximum=1.0, strict_max=True)
    mean = E.mean(axis=0)
    C = E - mean
    var = (C**2).sum(axis=0) / (S - 1)
    se = np.sqrt(var / S)
    diff = mean - g
    scale = max(np.abs(g).max(), np.abs(E).max(), 1e-300)
    tol = roundoff * scale  # round-off of a zero-variance coordinate
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > tol / np.sqrt(S), diff / se, np.where(np.abs(diff) <= tol, 0.0, np.inf))
    max_z = float(np.abs(z).max())
    coord_p = float(min(1.0, d * 2.0 * ndtr(-max_z)))
    tr1 = float(var.sum())
    gram = C @ C.T if S <= d else C.T @ C
    tr2 = float(np.sum(gram**2)) / (S - 1) ** 2
    Q = S * float(diff @ diff)
    if tr1 <= (tol**2) * d or tr2 <= 0:
        norm_stat, nu = (0.0 if Q <= S * d * tol**2 else np.inf), 0.0
        norm_p = 1.0 if norm_stat == 0.0 else 0.0
    else:
        c, nu = tr2 / tr1, tr1**2 / tr2
        norm_stat = Q / tr1
        norm_p = float(chdtrc(nu, Q / c))
    rel = float(np.linalg.norm(diff) / max(np.linalg.norm(g), 1e-300))
    pvalue = min(1.0, 2.0 * min(coord_p, norm_p))  # Bonferroni over the two tests: level alpha overall
    return UnbiasednessResult(
        S,
        d,
        mean,
        g,
        se,
        max_z,
        coord_p,
        float(norm_stat),
        float(nu),
        norm_p,
        rel,
        alpha,
        bool(pvalue >= alpha),
        float(pvalue),
    )


def decoded_samples(
    code: CodedGradient | CodeSpec,
    gradients: Any,
    p: float,
    *,
    samples: int = 2000,
    seed: int = 0,
    coords: Any = None,
    batch: int = 256,
) -> np.ndarray:
    """``samples`` decoded gradients of fixed part gradients under Bernoulli(p) stragglers.

    ``p`` is a probability or an array of ``n`` per-worker probabilities.

    Each sample uses fresh stragglers and, for a redrawn code, a fresh
    encoder draw (RD diagonals drawn in batches).  ``coords`` keeps only some
    coordinates (memory: ``samples x len(coords)``).

    Examples
    --------
    >>> spec = CodeSpec("u", np.eye(3, dtype=int), decoder="fixed")
    >>> decoded_samples(spec, np.ones((3, 2)), 0.0, samples=2).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    if isinstance(code, CodeSpec):
        code = CodedGradient(code, p, seed)
    if not isinstance(code, CodedGradient):
        raise InvalidArgumentError("code", f"must be a CodeSpec or CodedGradient, got {type(code).__name__}")
    if not np.array_equal(code.p, _straggling_probabilities(p, code.spec.n)):
        raise InvalidArgumentError("p", f"differs from the code's p = {code.p.tolist()}")
    samples = check_int("samples", samples, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    G = check_finite_array("gradients", gradients, ndim=2)
    keep = np.arange(G.shape[1]) if coords is None else np.asarray(coords, dtype=np.int64)
    masks = straggler_model("bernoulli", code.spec.n, p=code.p).sample(samples, seed)
    rng = np.random.default_rng([seed, 2])
    out = np.empty((samples, keep.size))
    for a in range(0, samples, batch):  # batches bound the memory of the (count, mN, n) stacks
        sl = slice(a, min(a + batch, samples))
        out[sl] = code.estimates(G, masks[sl], draws=np.arange(sl.start, sl.stop), rng=rng)[:, keep]
    return out


def check_unbiased(
    code: CodedGradient | CodeSpec,
    gradients: Any,
    p: float,
    *,
    samples: int = 2000,
    seed: int = 0,
    alpha: float = 0.01,
    coords: Any = None,
) -> UnbiasednessResult:
    """Decode ``samples`` times and run :func:`unbiasedness_test` against ``Σ_i g_i``.

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> G = np.random.default_rng(0).standard_normal((3, 4))
    >>> good = CodeSpec("rd", A, m=2, method="rd", decoder="unbiased", redraw=True)
    >>> check_unbiased(good, G, 0.3, samples=4000).passed
    True
    >>> bad = CodeSpec("naive", A, m=2, method="naive", decoder="fixed")   # averages the blocks
    >>> check_unbiased(bad, G, 0.3, samples=4000).passed
    False
    """
    G = check_finite_array("gradients", gradients, ndim=2)
    E = decoded_samples(code, G, p, samples=samples, seed=seed, coords=coords)
    target = G.sum(axis=0)
    if coords is not None:
        target = target[np.asarray(coords, dtype=np.int64)]
    return unbiasedness_test(E, target, alpha=alpha)
