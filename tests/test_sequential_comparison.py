"""scripts/sequential_comparison.py: selective repeat's least-squares error of a job (theory §5.1, §62.2)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sequential_comparison import repeat_errors  # noqa: E402

from exact_lstsq import checked_lstsq  # noqa: E402
from gcsim.coding.schemes import encode  # noqa: E402
from gcsim.coding.sequential import SelectiveRepeat, job_masks, markov_masks, simulate_selective_repeat  # noqa: E402
from tolerances import lstsq_tol  # noqa: E402


@pytest.mark.parametrize("params", [(6, 1, 3, 2), (8, 2, 5, 3), (20, 2, 5, 6)])
@pytest.mark.parametrize("forgive", ["oldest", "newest"])
def test_repeat_errors_match_lstsq_of_the_arrived_tasks(params, forgive):
    n, B, W, lam = params
    code = SelectiveRepeat(n, B, W, lam, forgive=forgive)
    # the per-round code's columns, data for this check: min ||B_F x - 1||^2 / n by lstsq (exact where deficient)
    Bm = encode(code.assignment(), 1, "cyclic-mds", seed=0).B
    seen = 0
    for seed in range(4):
        masks = markov_masks(n, 60, p_enter=0.2, p_leave=0.4, seed=seed)
        run = simulate_selective_repeat(code, masks)
        err = repeat_errors(code, run, masks)
        arrived = job_masks(run, masks)
        for t in range(run.decoded.size):
            F = arrived[t]
            # decoded within the delay exactly when n - s tasks arrived (§62.2); then the error is 0
            assert (run.decoded[t] >= 0) == (int(F.sum()) >= n - code.s)
            if run.decoded[t] >= 0:
                assert err[t] == 0.0
                continue
            value, kappa = checked_lstsq(Bm[:, F], np.ones(n))
            # two orthogonal solves (gcsim's and lstsq), each within lstsq_tol of the exact residual
            assert abs(err[t] - value / n) <= 2 * lstsq_tol(kappa, n, max(int(F.sum()), 1), 1.0)
            assert 0.0 < err[t] <= 1.0
            seen += 1
    assert seen > 0  # the masks leave some job undecoded
