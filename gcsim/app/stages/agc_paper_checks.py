"""The agc-paper stage's checks of the paper's theory: where its bounds are tight, SRG codes, unbiasedness, SGD.

Four experiments beside the authors' three (:mod:`gcsim.app.stages.agc_paper`), each a sweep task:

* ``tight_r1`` -- a design with one holder per part (replication 1), where theory says the bounds
  are attained: the rank lower bound (theory §45.1, Remark 2b), the RD bound of Theorem 2 with ±1
  diagonals (§45.2, Remark 4) and the diagonal-dominance bound (§45.7, Theorem 8: orthogonal
  columns) equal the optimal error on every straggler set; Theorem 2 with Gaussian diagonals
  (kurtosis 3) keeps a gap;
* ``srg_rd`` -- RD(0) on strongly regular graphs (``gcsim.srg``, ``A = Adj + I``) against the closed
  form of Corollary 4 evaluated at each straggler set's edge count (§45.2.2), and the lower bounds;
* ``rd_unbiased`` -- the unbiased RD estimator of Theorem 5 (§45.4): ``E[ĝ]`` and
  ``E‖ĝ - ∇L‖²`` as exact expectations over the straggler law (every mask, with its Bernoulli
  weight) and the encoder draw (every sign pattern, and Gauss quadrature for continuous entries);
* ``sgd`` -- SGD with that estimator on PG(2,9) and a quadratic loss, against Theorem 7's rate
  (§45.5) and the exact expected trajectory of Corollary 7a, over several seeds.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...coding import bounds as bd

M = 2  # the paper's number of blocks

#: Loads of the replication-1 design: 12 workers holding 1, 2, 3, 1, 2, 3, ... parts (N = 24)
R1_LOADS: tuple[int, ...] = (1, 2, 3) * 4
#: Strongly regular graphs of the stage (v, k, λ, μ): the lattice graph L2(4) and the polar graph O-(6,2)
SRG_INSTANCES: tuple[tuple[int, int, int, int], ...] = ((16, 6, 2, 2), (27, 10, 1, 5))
#: Checkpoints ``T`` of the SGD runs (those up to the run's length)
SGD_CHECKPOINTS: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def replication_one_assignment(loads: tuple[int, ...] = R1_LOADS) -> np.ndarray:
    """The ``(N, n)`` assignment in which worker ``j`` alone holds ``loads[j]`` consecutive parts.

    Examples
    --------
    >>> replication_one_assignment((1, 2)).tolist()
    [[1, 0], [0, 1], [0, 1]]
    """
    owner = np.repeat(np.arange(len(loads)), loads)
    return (owner[:, None] == np.arange(len(loads))[None, :]).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# tight cases
# ----------------------------------------------------------------------------------------------


def tight_point(s: int, masks: np.ndarray, seeds: list[int]) -> dict[str, Any]:
    """The replication-1 design at ``s`` stragglers: each bound against the optimal error, set by set.

    ``masks`` are the straggler sets (rows, True = arrived), ``seeds`` the encoder draws of RD with
    ±1 and with Gaussian diagonals. Deviations are ``|err - bound| / (mN)``; the Gaussian gap is
    ``(bound - err) / bound``, Theorem 2's bound with kurtosis 3.
    """
    from ...coding.evaluate import optimal_error
    from ...coding.schemes import encode

    A = replication_one_assignment()
    top = float(M * A.shape[0])
    signs = [encode(A, M, "rd", eps=0.0, dist="rademacher", seed=sd) for sd in seeds]
    gauss = [encode(A, M, "rd", eps=0.0, dist="gaussian", seed=sd) for sd in seeds]
    naive = encode(A, M, "naive")
    errs = {
        id(sch): np.asarray(optimal_error(sch, masks, progress=False), dtype=float) for sch in [*signs, *gauss, naive]
    }
    rank = np.asarray(bd.rank_lower_bound(A, M, masks), dtype=float)
    rd_signs = np.asarray(bd.rd_upper_bound(A, M, masks), dtype=float)
    rd_gauss = np.asarray(bd.rd_upper_bound(A, M, masks, dist="gaussian"), dtype=float)
    every = [*signs, *gauss, naive]
    return {
        "s": s,
        "patterns": int(masks.shape[0]),
        "error_mean": float(np.mean([errs[id(sch)].mean() for sch in signs])),
        "lower_dev": max(float(np.abs(errs[id(sch)] - rank).max()) for sch in every) / top,
        "rd_upper_dev": max(float(np.abs(errs[id(sch)] - rd_signs).max()) for sch in signs) / top,
        "dd_dev": max(
            float(np.abs(errs[id(sch)] - np.asarray(bd.diagonal_dominance_upper_bound(sch, masks))).max())
            for sch in every
        )
        / top,
        "rd_gaussian_gap": min(float(((rd_gauss - errs[id(sch)]) / rd_gauss).min()) for sch in gauss),
        "rd_gaussian_bound_mean": float(rd_gauss.mean()),
    }


# ----------------------------------------------------------------------------------------------
# strongly regular graphs
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def srg_assignment(instance: tuple[int, int, int, int]) -> np.ndarray:
    """``A = Adj + I`` of ``gcsim.srg(*instance)`` (gcsim's default, theory §20.1)."""
    from ...combinatorics.srg import srg

    g = srg(*instance)
    return np.asarray(g.assignment, dtype=np.int64)  # type: ignore[union-attr]


def srg_edges(instance: tuple[int, int, int, int], masks: np.ndarray) -> np.ndarray:
    """``e(F)``, the number of edges of the graph with both ends in each ``F`` (rows of ``masks``)."""
    A = srg_assignment(instance)
    adj = (A - np.eye(A.shape[0], dtype=np.int64)).astype(np.int64)
    F = masks.astype(np.int64)
    return np.einsum("cj,jk,ck->c", F, adj, F) // 2


def srg_pattern_bounds(instance: tuple[int, int, int, int], s: int, masks: np.ndarray) -> np.ndarray:
    """Corollary 4 at each straggler set: :func:`~gcsim.coding.bounds.srg_rd_upper_bound` at its ``e(F)``."""
    v, k, lam, mu = instance
    return np.array([bd.srg_rd_upper_bound(v, k, lam, mu, M, s, edges=int(e)) for e in srg_edges(instance, masks)])


# ----------------------------------------------------------------------------------------------
# unbiasedness: exact expectations
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnbiasedCase:
    """One exact unbiasedness check: a design, the RD entry law, per-worker straggling probabilities.

    Attributes
    ----------
    label : str
    design : str
        ``"cyclic"`` (5 parts, 5 workers, worker ``j`` holds parts ``j, j+1, j+2``) or ``"triangle"``
        (3 parts, 3 workers, each part on 2).
    eps, dist : float, str
        RD(ε) entries ``b (1 + ε ξ)``, ``b`` Rademacher or Gaussian, ``ξ ~ U[-1, 1]``.
    p : tuple of float
        Straggling probability of each worker (Bernoulli, independent).
    d : int
        Gradient length (3: ``m = 2`` does not divide it, so Theorem 5's ``ω_c`` matter).
    """

    label: str
    design: str
    eps: float
    dist: str
    p: tuple[float, ...]
    d: int = 3


UNBIASED_CASES: tuple[UnbiasedCase, ...] = (
    UnbiasedCase("cyclic (5 workers, r = 3), RD(0) ±1", "cyclic", 0.0, "rademacher", (0.1, 0.2, 0.25, 0.3, 0.4)),
    UnbiasedCase("triangle, RD(0.5) ±1", "triangle", 0.5, "rademacher", (0.1, 0.25, 0.4)),
    UnbiasedCase("triangle, Gaussian", "triangle", 0.0, "gaussian", (0.2, 0.3, 0.5)),
)


def _case_assignment(design: str) -> np.ndarray:
    from ...coding.encoders.classic import cyclic_repetition_assignment

    return cyclic_repetition_assignment(5, 2) if design == "cyclic" else cyclic_repetition_assignment(3, 1)


def entry_law(eps: float, dist: str) -> tuple[np.ndarray, np.ndarray]:
    """Values and weights of one RD entry whose moments up to order 5 are exact (theory §45.4).

    ±1 entries with ``ε = 0`` are their two values; ``ε > 0`` multiplies them by ``1 + ε ξ`` at the
    3-point Gauss-Legendre nodes of ``U[-1, 1]``; Gaussian ``b`` takes the 3-point Gauss-Hermite
    nodes ``0, ±√3`` (weights 2/3, 1/6, 1/6). A 3-point rule integrates polynomials of degree 5
    exactly, and ``‖ĝ - ∇L‖²`` has degree 4 in each entry.

    Examples
    --------
    >>> v, w = entry_law(0.5, "rademacher")
    >>> round(float(w @ v**2), 12), round(float(w @ v**4), 12)      # 1 + ε²/3, 1 + 2ε² + ε⁴/5
    (1.083333333333, 1.5125)
    """
    if dist == "gaussian":
        base, bw = np.array([-np.sqrt(3.0), 0.0, np.sqrt(3.0)]), np.array([1 / 6, 2 / 3, 1 / 6])
    else:
        base, bw = np.array([-1.0, 1.0]), np.array([0.5, 0.5])
    if eps == 0.0:
        return base, bw
    xi, xw = np.array([-np.sqrt(0.6), 0.0, np.sqrt(0.6)]), np.array([5 / 18, 8 / 18, 5 / 18])
    return (base[:, None] * (1 + eps * xi[None, :])).ravel(), (bw[:, None] * xw[None, :]).ravel()


def unbiased_case(case: UnbiasedCase, seed: int = 0, chunk: int = 1024) -> dict[str, Any]:
    """``E[ĝ]`` and ``E‖ĝ - ∇L‖²`` of RD's unbiased estimator by enumeration, and Theorem 5's closed form.

    Every encoder draw (every combination of the entry law's values over the ``m n`` entries) and
    every straggler mask (with its Bernoulli weight) is decoded by the library's path: RD's
    registered unbiased decoder (:func:`gcsim.coding.decoders.rd_unbiased_decoders`) and the
    workers' messages (:func:`gcsim.learning.train.transmissions`).
    """
    from ...coding.encoders import get_encoder
    from ...learning.train import transmissions

    A = _case_assignment(case.design)
    N, n = A.shape
    r = int(A.sum(axis=1)[0])
    p = np.asarray(case.p, dtype=float)
    G = np.random.default_rng([seed, 0x0B1A5]).integers(-3, 4, size=(N, case.d)).astype(float)
    grad = G.sum(axis=0)
    blocks = bd.split_blocks(G, M)
    masks = np.array(list(itertools.product([False, True], repeat=n)))
    mask_w = np.prod(np.where(masks, 1.0 - p, p), axis=1)
    vals, wts = entry_law(case.eps, case.dist)
    combos = np.array(list(itertools.product(range(len(vals)), repeat=M * n)))
    unbiased = get_encoder("rd").unbiased
    assert unbiased is not None  # RD registers its unbiased decoder
    mean = np.zeros(case.d)
    second = 0.0
    for a in range(0, combos.shape[0], chunk):
        idx = combos[a : a + chunk]
        D = vals[idx].reshape(-1, M, n)
        wD = np.prod(wts[idx], axis=1)
        B = (A[None, None] * D[:, :, None, :]).reshape(D.shape[0], M * N, n)  # block k = A diag(d_k)
        sent = transmissions(B, blocks)  # (c, n, w)
        c, k = D.shape[0], masks.shape[0]
        X = unbiased.decoders(
            np.repeat(D, k, axis=0), np.tile(masks, (c, 1)), r, np.asarray(p), case.eps, {"dist": case.dist}
        )
        est = np.matmul(np.swapaxes(X, 1, 2), np.repeat(sent, k, axis=0)).reshape(c * k, -1)[:, : case.d]
        w = (wD[:, None] * mask_w[None, :]).ravel()
        mean += w @ est
        second += float(w @ ((est - grad) ** 2).sum(axis=1))
    closed = bd.rd_estimator_variance(A, M, p, G, case.eps, case.dist)
    return {
        "case": case.label,
        "workers": n,
        "encoder_draws": int(combos.shape[0]),
        "masks": int(masks.shape[0]),
        "grad_norm": float(np.linalg.norm(grad)),
        "bias": float(np.abs(mean - grad).max() / np.linalg.norm(grad)),
        "variance_enumerated": second,
        "variance_theorem5": float(closed),
        "variance_rel_dev": abs(second - closed) / closed,
    }


# ----------------------------------------------------------------------------------------------
# SGD (Theorem 7, Corollary 7a)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SGDProblem:
    """The quadratic of Corollary 7a on an assignment: ``L(θ) = Σ_i (β / 2N) ‖θ - c_i‖²``.

    Attributes
    ----------
    A : numpy.ndarray
        The (bi-regular) assignment.
    centres : numpy.ndarray (N, d)
        The ``c_i``; ``θ* = mean c_i`` and ``L* = L(θ*)``.
    theta1 : numpy.ndarray (d,)
        The starting point.
    beta, p : float
        Smoothness (every part's Hessian is ``β I / N``) and the straggling probability.
    M, M_G : float
        ``E‖ĝ‖² = M + M_G ‖∇L‖²`` exactly (Corollary 7a).
    eta : float
        The step ``1 / (β M_G)``, the largest Theorem 7 allows.
    """

    A: np.ndarray
    centres: np.ndarray
    theta1: np.ndarray
    beta: float
    p: float
    M: float
    M_G: float
    eta: float

    def gradients(self, theta: np.ndarray) -> np.ndarray:
        """The per-part gradients ``g_i = (β / N)(θ - c_i)`` (rows)."""
        return self.beta / self.A.shape[0] * (theta[None, :] - self.centres)

    def gap(self) -> float:
        """``L(θ_1) - L*`` ``= ‖∇L(θ_1)‖² / (2β)``."""
        return float(self.gradients(self.theta1).sum(axis=0) @ self.gradients(self.theta1).sum(axis=0)) / (
            2 * self.beta
        )

    def bound(self, T: int) -> float:
        """Theorem 7's bound on ``(1/T) Σ_{t≤T} E‖∇L(θ_t)‖²`` (:func:`~gcsim.coding.bounds.sgd_convergence_bound`)."""
        return bd.sgd_convergence_bound(self.beta, self.eta, T, self.gap(), self.M, self.M_G)

    def expected(self, T: int) -> float:
        """The exact ``(1/T) Σ_{t≤T} E‖∇L(θ_t)‖²`` of Corollary 7a's recursion."""
        a = 2 * self.beta * self.gap()
        rho = 1 - 2 * self.eta * self.beta + (self.eta * self.beta) ** 2 * self.M_G
        floor = (self.eta * self.beta) ** 2 * self.M
        total = 0.0
        for _ in range(T):
            total += a
            a = rho * a + floor
        return total / T


@functools.lru_cache(maxsize=2)
def sgd_problem(p: float = 0.2, d: int = 4, spread: float = 10.0, seed: int = 0) -> SGDProblem:
    """PG(2,9), ``m = 2``, RD(0) redrawn every step, Bernoulli(``p``) stragglers, ``d`` coordinates.

    ``M`` is Theorem 5's variance at ``θ*`` (:func:`~gcsim.coding.bounds.rd_estimator_variance`),
    ``M_G = 1 + c n ℓ² / N²`` with ``c = ((κ + m - 1)/(1 - p) - 1) / r²`` (Corollary 7a; ``m | d``).
    """
    from ...combinatorics.bibd import bibd

    A = np.asarray(bibd(91, 10, 1).assignment, dtype=np.int64)
    N, n = A.shape
    r, load = int(A.sum(axis=1)[0]), int(A.sum(axis=0)[0])
    rng = np.random.default_rng([seed, 0x5D6])
    centres = spread * rng.standard_normal((N, d))
    theta1 = centres.mean(axis=0) + rng.standard_normal(d)
    beta = 1.0
    base = SGDProblem(A, centres, theta1, beta, p, 0.0, 1.0, 1.0)
    M_var = bd.rd_estimator_variance(A, M, p, base.gradients(centres.mean(axis=0)))
    kappa = 1.0  # RD(0) ±1 entries
    c = ((kappa + M - 1) / (1 - p) - 1) / r**2
    M_G = 1.0 + c * n * load**2 / N**2
    return SGDProblem(A, centres, theta1, beta, p, float(M_var), float(M_G), 1.0 / (beta * M_G))


def sgd_run(problem: SGDProblem, steps: int, seed: int) -> np.ndarray:
    """``‖∇L(θ_t)‖²`` for ``t = 1..steps`` of one SGD run with RD's unbiased estimator (the training path).

    Each step draws Bernoulli(p) stragglers and a fresh RD encoder and decodes with
    :class:`gcsim.learning.train.CodedGradient` (decoder ``"unbiased"``, ``redraw=True``).
    """
    from ...learning.train import CodedGradient, CodeSpec

    spec = CodeSpec("rd", problem.A, m=M, method="rd", decoder="unbiased", redraw=True, options={"eps": 0.0})
    code = CodedGradient(spec, problem.p, seed=seed)
    rng = np.random.default_rng([seed, 0x56D])
    theta = problem.theta1.copy()
    out = np.empty(steps)
    for t in range(steps):
        G = problem.gradients(theta)
        out[t] = float(G.sum(axis=0) @ G.sum(axis=0))
        mask = np.asarray(rng.random(problem.A.shape[1]) >= problem.p, dtype=bool)
        est = code.estimates(G, mask[None, :], draws=[t], rng=rng)[0]
        theta = theta - problem.eta * est
    return out
