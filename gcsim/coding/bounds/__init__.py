"""Bounds, closed forms and estimator theory for approximate gradient coding (theory §45).

Notation (theory §5.1): assignment ``A`` in {0,1}^{N x n}; ``N_i`` the holders of
part ``i``; a straggler pattern is given by its boolean *non-straggler* mask
``F`` (True = the worker arrived); ``c_i(F) = |N_i ∩ F|``.  Errors are raw
squared errors ``err(B, F) = min_X ||B_F X - T||_F^2`` with ``T = I_m ⊗ 1_N``
unless a function says ``normalized`` (divided by ``m N``).

A package, one module per theorem, each bound registered beside its function for
:func:`gcsim.coding.verify.verify_bounds` (:mod:`~gcsim.coding.bounds.registry`): ``rank`` (theory §45.1),
``rd_upper`` (§45.2), ``rd_closed_forms`` (§45.2.1-45.2.2), ``bibd_closed_forms`` (§45.3),
``variance`` (§45.4), ``convergence`` (§45.5), ``diagonal_dominance`` (§45.7), ``worst_case_lower``
and ``rd_worst_case`` (§45.8, §46.6), ``spectral`` (§46.1-46.5), with ``moments`` (§5.4) and
``worst_case`` (the search over straggler sets), and ``equal_load`` (theory §63.7: the certified
lower bound of every design of a given load under independent stragglers, not pattern by
pattern).  Every name below is importable from here.
Every other statement implemented here is proved in ``docs/theory/45_bounds.md``:

* :func:`rank_lower_bound` -- ``err(B, F) >= sum_i (m - c_i(F))^+`` for *every*
  encoder respecting the support of ``A`` (Theorem 1);
  :func:`worst_case_rank_lower_bound` maximizes it over ``|S| = s``.
* :func:`rd_upper_bound` -- for the random-diagonal encoder RD(eps) (theory §5.4)
  the scaled-sign decoder ``x_l = alpha (d_l)_F`` gives
  ``E_D err(B, F) <= m [N - mu2^2 S1^2 / (mu2^2 S2 + (mu4 + (m-2) mu2^2) S1)]``,
  ``S1 = sum_i c_i``, ``S2 = sum_i c_i^2``, ``mu_q = E d^q`` (Theorem 2); at
  ``eps = 0`` this is theory §45's ``m [N - S1^2 / (S2 + (m-1) S1)]``.
  Specializations :func:`bibd_rd_upper_bound` and :func:`srg_rd_upper_bound`.
* :func:`bibd_optimal_error_m1` / :func:`bibd_naive_error` -- closed forms for
  symmetric BIBDs (Theorem 4).
* :func:`rd_estimator_variance`, :func:`ns_estimator_variance` -- the variance of
  the unbiased straggler-compensated estimators (Theorems 5, 6) as returned, i.e.
  of the length-``d`` estimate (the padding coordinates of the ``m ceil(d/m)``
  blocks are discarded; :func:`block_multiplicities`), and
  :func:`sgd_convergence_bound` (Theorem 7).

Spectral bounds for regular-graph assignments (Raviv, Tamo, Tandon & Dimakis) are proved in
``docs/theory/46_spectral.md``: :func:`second_singular_value` (``σ(A) = ‖A (I - J/n)‖₂``, the
second-largest absolute eigenvalue of a symmetric regular ``A``), :func:`spectral_upper_bound`
(``err <= σ² n s / (r² (n - s))`` for ``B = A``, theory §46.2), :func:`spectral_decoder_upper_bound`
(any encoder and reference decoder, §46.1), :func:`spectral_rd_upper_bound` (RD, §46.4),
:func:`arrival_decoder_mean_error` (§46.5) and the worst-case :func:`uncovering_lower_bound` (§46.6).

The statements are our formalization of the model of theory §5.1 (reconstruction:
the source papers were available only as abstracts).

References
----------
* C. Eckart and G. Young, "The approximation of one matrix by another of lower
  rank", Psychometrika 1(3), 1936 (Theorem 1).
* M. Glasgow and M. Wootters, "Approximate gradient coding with optimal
  decoding", IEEE JSAIT 2(3), 2021 (the ``m = 1`` optimal-decoding setting).
* A. E. Brouwer and W. H. Haemers, *Spectra of Graphs*, Springer 2012, §9.1
  (SRG eigenvalues, Lemma 3).
* N. Raviv, I. Tamo, R. Tandon and A. G. Dimakis, "Gradient coding from cyclic MDS codes and
  expander graphs", IEEE Trans. Inf. Theory 66(12), 2020 (ICML 2018) (chapter 46).
* L. Bottou, F. E. Curtis and J. Nocedal, "Optimization methods for large-scale
  machine learning", SIAM Review 60(2), 2018, Thm. 4.10 (Theorem 7).
"""

from __future__ import annotations

from .bibd_closed_forms import bibd_naive_error, bibd_optimal_error_m1
from .convergence import sgd_convergence_bound
from .diagonal_dominance import diagonal_dominance_upper_bound
from .equal_load import LoadBoundCertificate, check_load_certificate, equal_load_lower_bound, subset_costs
from .moments import rd_moments, resolve_moments
from .rank import part_coverage, rank_lower_bound
from .rd_closed_forms import bibd_rd_upper_bound, srg_edge_range, srg_rd_upper_bound
from .rd_upper import rd_optimal_scale, rd_scaled_sign_error, rd_upper_bound
from .rd_worst_case import worst_case_rd_upper_bound
from .spectral import (
    arrival_decoder_mean_error,
    second_singular_value,
    spectral_decoder_upper_bound,
    spectral_rd_upper_bound,
    spectral_upper_bound,
)
from .variance import (
    block_multiplicities,
    ns_estimator_variance,
    rd_estimator_variance,
    rd_variance_bound,
    split_blocks,
    straggling_probabilities,
)
from .worst_case import WorstCaseResult
from .worst_case_lower import partial_uncovering_lower_bound, uncovering_lower_bound, worst_case_rank_lower_bound

__all__ = [
    "part_coverage",
    "rank_lower_bound",
    "WorstCaseResult",
    "worst_case_rank_lower_bound",
    "partial_uncovering_lower_bound",
    "diagonal_dominance_upper_bound",
    "rd_moments",
    "rd_optimal_scale",
    "rd_scaled_sign_error",
    "rd_upper_bound",
    "worst_case_rd_upper_bound",
    "bibd_rd_upper_bound",
    "srg_edge_range",
    "srg_rd_upper_bound",
    "bibd_optimal_error_m1",
    "bibd_naive_error",
    "split_blocks",
    "block_multiplicities",
    "resolve_moments",
    "straggling_probabilities",
    "rd_estimator_variance",
    "rd_variance_bound",
    "ns_estimator_variance",
    "sgd_convergence_bound",
    "second_singular_value",
    "spectral_upper_bound",
    "spectral_decoder_upper_bound",
    "spectral_rd_upper_bound",
    "arrival_decoder_mean_error",
    "uncovering_lower_bound",
    "LoadBoundCertificate",
    "equal_load_lower_bound",
    "check_load_certificate",
    "subset_costs",
]
