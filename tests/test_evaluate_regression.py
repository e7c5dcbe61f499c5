"""Regression: rank-deficient B whose column subsets are ill-conditioned (exact family on PG(2,9)).

B = P·H has rank n - s < n, so κ(B_F) is not bounded by κ(B); the Gram route once dropped
a small-but-nonzero eigenvalue of Γ_FF as zero and reported an error of ~1.7 instead of 0.
"""
import numpy as np
import pytest
from scipy.linalg import lstsq

import gcsim
from gcsim.coding.evaluate import optimal_error


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_family_auto_route_agrees_with_scipy(seed):
    A = gcsim.bibd(91, 10, 1).assignment
    sch = gcsim.encode(A, 2, "exact-gaussian", s=8, seed=seed)
    masks = gcsim.straggler_model("fixed", 91, s=8).sample(40, 1)
    got = optimal_error(sch, masks, progress=False)
    T = sch.target()
    ref = np.array([np.sum((sch.B[:, m] @ lstsq(sch.B[:, m], T)[0] - T) ** 2) for m in masks])
    assert np.max(np.abs(got - ref)) < 1e-6
    assert np.max(got) < 1e-6  # the exact family decodes every |F| = n - s pattern
