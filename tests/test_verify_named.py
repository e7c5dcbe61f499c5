"""The bound-verification engine finds no violation on the named instances (theory §45, issue 3)."""

import numpy as np
import pytest

import gcsim
from gcsim.coding.verify import verify_bounds
from tolerances import lstsq_tol


def _error_tolerance(obj, method, opts, seed, draws):
    """Floating-point tolerance of the simulated optimal errors, derived from the encoders.

    verify_bounds evaluates err(B, F) = mN - ||P_F T||^2 by the evaluator's "auto" route: Gram-type routes
    (relative error ~ kappa~^2 u of mN, kappa~ = condition number of the column-equilibrated B) or the
    SVD route (~ kappa u), with kappa(B_F) <= kappa(B) by interlacing when B has full column rank
    (asserted).  So |computed - exact| <= 2 lstsq_tol(kappa, mN, n, mN, gram=True) with kappa the larger
    of kappa(B), kappa~(B), over the base encoder and the `draws` re-encodings verify_bounds makes
    (seeds from SeedSequence(seed), as documented for its default redraw).
    """
    seeds = [0] + [int(s) for s in np.random.SeedSequence(seed).generate_state(draws)]
    kappa = 0.0
    for s in seeds:
        B = gcsim.encode(obj, 2, method, seed=s, **opts).B
        assert np.linalg.matrix_rank(B) == B.shape[1]
        kappa = max(kappa, np.linalg.cond(B), np.linalg.cond(B / np.linalg.norm(B, axis=0)))
    mN, n = B.shape
    return 2 * lstsq_tol(kappa, mN, n, mN, gram=True)


@pytest.mark.parametrize(
    "name,method,opts,bounds",
    [
        ("pg2_9", "rd", {"eps": 0.0}, ["rank_lower", "rd_upper", "trivial_upper"]),
        ("coset_27_2_5", "rd", {"eps": 0.1}, ["rank_lower", "rd_upper"]),
        ("biregular_40_20_3_6", "ns", {"dist": "gaussian"}, ["rank_lower", "reference_decoder_upper"]),
    ],
)
def test_no_violation_on_named_instances(name, method, opts, bounds):
    from gcsim.catalogue.named import build_named

    obj = build_named(name)
    scheme = gcsim.encode(obj, 2, method, seed=0, **opts)
    model = gcsim.straggler_model("fixed", scheme.n, s=10 if scheme.n > 40 else 4)
    atol = _error_tolerance(obj, method, opts, seed=1, draws=16)
    report = verify_bounds(
        scheme, model, bounds, samples=60, seed=1, draws=16, expectation_patterns=16, atol=atol, rtol=0.0
    )
    assert report.ok, report.summary()
    assert not report.violations
