"""Regression: rank-deficient B whose column subsets are ill-conditioned (exact family on PG(2,9)).

B = P·H has rank n - s < n, so κ(B_F) is not bounded by κ(B); the Gram route once dropped
a small-but-nonzero eigenvalue of Γ_FF as zero and reported an error of ~1.7 instead of 0.
Now ``auto`` takes the rank-deficient column-deletion route: rank(B_F) = rank(B) for every
|S| <= s, so it returns err([n]), accurate to SAFETY·max(mN, n)·u·κ̃·mN (module docstring).
"""

import numpy as np
import pytest
from scipy.linalg import lstsq

import gcsim
from gcsim.coding.evaluate import optimal_error
from test_evaluate_adversarial import kappa_nz, unit_columns
from tolerances import SAFETY, unit_roundoff


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_family_auto_route_agrees_with_scipy(seed):
    A = gcsim.bibd(91, 10, 1).assignment
    sch = gcsim.encode(A, 2, "exact-gaussian", s=8, seed=seed)
    masks = gcsim.straggler_model("fixed", 91, s=8).sample(40, 1)
    got = optimal_error(sch, masks, progress=False)
    T = sch.target()
    mN, n = sch.B.shape
    p = max(mN, n)
    k = 2 * kappa_nz(unit_columns(sch.B))
    tol = SAFETY * p * unit_roundoff() * k * mN
    assert np.max(got) <= tol  # the exact family decodes every |F| = n - s pattern
    ref = []
    for m in masks:
        BF = sch.B[:, m]
        # rank-deficient B_F through gelsd (kernel-dependent there), kept: the truth is 0 and `got` is
        # checked against 0 above; a wrong lstsq can only fail the bound below, never pass a wrong `got`
        ref.append(np.sum((BF @ lstsq(BF, T)[0] - T) ** 2))
        # lstsq (an orthogonal route) is within SAFETY·p·u·κ_F·mN of the truth 0
        assert ref[-1] <= SAFETY * p * unit_roundoff() * 2 * kappa_nz(unit_columns(BF)) * mN
    assert np.max(np.abs(got - np.array(ref))) <= tol + np.max(ref)
