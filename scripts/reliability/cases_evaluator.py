"""Bad inputs and numerically hostile schemes for the error evaluators (gcsim.coding.evaluate)."""

from __future__ import annotations

from . import Case

_TANDON = """
import numpy as np
from gcsim.coding.schemes import Scheme
rng = np.random.default_rng(0)
n, s = 20, 5
H = rng.standard_normal((s, n)); H[:, -1] = -H[:, :-1].sum(axis=1)
B = np.zeros((n, n))
for j in range(n):
    sup = (j + np.arange(s + 1)) % n
    b = np.ones(s + 1); b[1:] = np.linalg.solve(H[:, sup[1:]], -H[:, sup[0]])
    B[sup, j] = b
sch = Scheme.from_matrix(B, (B != 0).astype(np.int64), 1)
from gcsim.coding.stragglers import combinations_masks
masks = combinations_masks(n, s)
"""

CASES = [
    Case(
        "api",
        "optimal_error_all with C(91,20) = 6.5e19 patterns (PG(2,9), s = 20)",
        code="import gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(91, 10, 1).assignment, 2, 'rd', seed=0)\n"
        "from gcsim.coding.evaluate import optimal_error_all\noptimal_error_all(sch, 20)\n",
    ),
    Case(
        "api",
        "method='gram' on a rank-deficient B (Tandon cyclic MDS n=20, s=5; truth 0)",
        code=_TANDON + "from gcsim.coding.evaluate import optimal_error\n"
        "print(optimal_error(sch, masks, method='gram', progress=False).max())\n",
        expect="warning",
    ),
    Case(
        "api",
        "method='auto' on the same rank-deficient B: all 15504 patterns, truth 0",
        code=_TANDON + "from gcsim.coding.evaluate import optimal_error\n"
        # the error itself is round-off (1e-29 on one BLAS kernel, 3e-29 on another): the row shows the check
        "print('max error below 1e-20:', bool(optimal_error(sch, masks, progress=False).max() < 1e-20))\n",
        expect="ok",
    ),
    Case(
        "api",
        "method='downdate' with κ(B) ≈ 2e7 > GRAM_KAPPA_LIMIT (exact-vandermonde, bibd(13,4,1))",
        code="import gcsim\nfrom gcsim.coding.evaluate import optimal_error_all\n"
        "sch = gcsim.encode(gcsim.bibd(13, 4, 1).assignment, 1, 'exact-vandermonde', s=0, seed=0)\n"
        "print(optimal_error_all(sch, 4, method='downdate', progress=False).max())\n",
        expect="warning",
    ),
    Case(
        "api",
        "unknown evaluation method name",
        code="import numpy as np, gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "from gcsim.coding.evaluate import optimal_error\n"
        "optimal_error(sch, np.ones(7, bool), method='cholesky')\n",
    ),
    Case(
        "api",
        "NaN written into scheme.B after encoding",
        code="import numpy as np, gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "import dataclasses\nB = sch.B.copy(); B[0, 0] = np.nan; sch = dataclasses.replace(sch, B=B)\n"
        "from gcsim.coding.evaluate import optimal_error\noptimal_error(sch, np.ones(7, bool))\n",
    ),
    Case(
        "api",
        "non-straggler mask of the wrong length (6 for n = 7)",
        code="import numpy as np, gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "from gcsim.coding.evaluate import optimal_error\noptimal_error(sch, np.ones(6, bool))\n",
    ),
    Case(
        "api",
        "scheme.B with an integer beyond the float64 range (10**400)",
        code="import numpy as np, gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 1, 'bibd-optimal')\n"
        "import dataclasses\nB = sch.B.astype(object); B[0, 0] = 10 ** 400; sch = dataclasses.replace(sch, B=B)\n"
        "from gcsim.coding.evaluate import optimal_error\noptimal_error(sch, np.ones(7, bool))\n",
    ),
    Case(
        "api",
        "B with entries 1e300 (finite, Γ = BᵀB would overflow): value of the unscaled B",
        code="import numpy as np, gcsim\nfrom gcsim.coding.schemes import Scheme\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "big = Scheme.from_matrix(sch.B * 1e300, sch.assignment, 2)\n"
        "mk = np.array([1, 1, 0, 1, 1, 0, 1], bool)\n"
        "from gcsim.coding.evaluate import optimal_error as ev\n"
        # 12 significant digits: the last ones are round-off and differ between BLAS kernels
        "print(f'{ev(big, mk):.12g} vs {ev(sch, mk):.12g}')\n",
        expect="ok",
    ),
    Case(
        "api",
        "fixed decoder whose error overflows float64 (decoder entries 1e300)",
        code="import numpy as np, gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "from gcsim.coding.evaluate import fixed_decoder_error\n"
        "fixed_decoder_error(sch, np.ones(7, bool), np.full((7, 2), 1e300))\n",
    ),
    Case(
        "api",
        "expected_error Monte Carlo with 20 draws (below MIN_MC_SAMPLES, t interval)",
        code="import gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "gcsim.expected_error(sch, gcsim.straggler_model('fixed', 7, s=3), exact_limit=0, samples=20)\n",
    ),
    Case(
        "api",
        "expected_error with 20 draws and ci_method='betting' (valid at any budget)",
        code="import gcsim\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, 'rd', seed=0)\n"
        "r = gcsim.expected_error(sch, gcsim.straggler_model('fixed', 7, s=3), exact_limit=0, samples=20,\n"
        "                         ci_method='betting', progress=False)\n"
        "print(r.mean, r.ci, r.method)\n",
        expect="ok",
    ),
]
