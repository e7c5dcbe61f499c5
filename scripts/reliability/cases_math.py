"""Bad inputs and edge cases of the statistical and mathematical functions (bounds, coset search, unbiasedness)."""

from __future__ import annotations

from reliability import Case

_BD = "from gcsim.coding import bounds as bd; import numpy as np; "
_FANO = (
    "A = [[1,1,0,1,0,0,0],[0,1,1,0,1,0,0],[0,0,1,1,0,1,0],[0,0,0,1,1,0,1],[1,0,0,0,1,1,0],"
    "[0,1,0,0,0,1,1],[1,0,1,0,0,0,1]]; "
)
_COSET = "from gcsim.combinatorics.coset import coset_graph; "

CASES = [
    # coset connection sets: a search that gave up is not a proof of impossibility
    Case(
        "api",
        "coset require_invertible, random search gives up, (Z_2)^6, delta=32 (too large to enumerate)",
        code=_COSET + "coset_graph(64, 1, 32, 'elementary', require_invertible=True)",
    ),
    Case(
        "api",
        "coset require_invertible, no invertible 3-set of (Z_3)^2 (proved by exhaustive search)",
        code=_COSET + "coset_graph(9, 1, 3, 'elementary', require_invertible=True)",
    ),
    Case(
        "api",
        "coset require_invertible, (Z_2)^4, delta=6, a seed whose 64 random draws all fail",
        code=_COSET + "g = coset_graph(16, 2, 6, 'elementary', require_invertible=True, seed=10); "
        "print('invertible blocks:', g.blocks_invertible().tolist(), g.connection_sets)",
        expect="ok",
    ),
    Case(
        "api",
        "coset require_invertible with singular explicit connection sets",
        code=_COSET + "coset_graph(9, 1, 3, connection_sets=[[0, 3, 6]], require_invertible=True)",
    ),
    Case(
        "api",
        "coset require_invertible with singular interval sets (p | delta)",
        code=_COSET + "coset_graph(9, 2, 3, connection_sets='intervals', require_invertible=True)",
    ),
    # estimator variances
    Case(
        "api",
        "RD estimator variance with m not dividing d (returned vs padded estimate)",
        code=_BD + _FANO + "G = np.random.default_rng(0).standard_normal((7, 9)); "
        "print('returned', bd.rd_estimator_variance(A, 2, 0.1, G), "
        "'padded', bd.rd_estimator_variance(A, 2, 0.1, G, padded=True))",
        expect="ok",
    ),
    Case(
        "api",
        "RD estimator variance, straggling probability p = 1",
        code=_BD + _FANO + "bd.rd_estimator_variance(A, 2, 1.0, np.ones((7, 4)))",
    ),
    Case(
        "api",
        "RD estimator variance, p = NaN",
        code=_BD + _FANO + "bd.rd_estimator_variance(A, 2, float('nan'), np.ones((7, 4)))",
    ),
    Case(
        "api",
        "RD estimator variance, per-worker p of the wrong length",
        code=_BD + _FANO + "bd.rd_estimator_variance(A, 2, [0.1, 0.2], np.ones((7, 4)))",
    ),
    Case(
        "api",
        "RD estimator variance, negative p",
        code=_BD + _FANO + "bd.rd_estimator_variance(A, 2, -0.1, np.ones((7, 4)))",
    ),
    Case(
        "api",
        "RD estimator variance, irregular replication",
        code=_BD + "bd.rd_estimator_variance([[1, 1], [0, 1]], 2, 0.1, np.ones((2, 3)))",
    ),
    Case(
        "api",
        "RD estimator variance, padded='yes'",
        code=_BD + _FANO + "bd.rd_estimator_variance(A, 2, 0.1, np.ones((7, 3)), padded='yes')",
    ),
    Case(
        "api",
        "NS estimator variance with a decoder that does not satisfy B X0 = T (biased)",
        code=_BD + "bd.ns_estimator_variance([[1.0, 1.0]], 0.5, [[2.0]], decoder=[[1.0], [1.0]])",
    ),
    Case(
        "api",
        "RD moments violating Jensen (E d^4 < (E d^2)^2)",
        code=_BD + _FANO + "bd.rd_upper_bound(A, 2, np.ones(7, bool), moments=(2.0, 1.0))",
    ),
    Case("api", "block_multiplicities with m = 0", code=_BD + "bd.block_multiplicities(5, 0)"),
    # worst case without enumeration: a certified bound, not a search value
    Case(
        "api",
        "worst-case RD bound when C(n, s) exceeds exact_limit (search mode)",
        code=_COSET + _BD + "A = coset_graph(27, 2, 5).assignment; r = bd.worst_case_rd_upper_bound(A, 2, 10); "
        "print('value', round(r.value, 4), 'attained', round(r.attained, 4), 'exact', r.exact)",
        expect="ok",
    ),
    Case("api", "worst-case RD bound with s larger than n", code=_BD + _FANO + "bd.worst_case_rd_upper_bound(A, 2, 8)"),
    Case(
        "api",
        "SRG bound with impossible parameters (k(k-lam-1) != (v-k-1) mu)",
        code=_BD + "bd.srg_rd_upper_bound(10, 3, 1, 1, 2, 1)",
    ),
    # unbiasedness check
    Case(
        "api",
        "unbiasedness_test with roundoff = 2",
        code="import numpy as np; from gcsim.learning.unbiased import unbiasedness_test; "
        "unbiasedness_test(np.ones((4, 3)), np.ones(3), roundoff=2.0)",
    ),
    Case(
        "api",
        "unbiasedness_test with alpha = 0",
        code="import numpy as np; from gcsim.learning.unbiased import unbiasedness_test; "
        "unbiasedness_test(np.ones((4, 3)), np.ones(3), alpha=0.0)",
    ),
]
