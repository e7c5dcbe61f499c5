"""High-precision evaluator of Vandermonde-type CERAR designs (docs/theory.md §53).

Independent computations: the ring of §50.1 run in exact rational arithmetic (Fractions) on the
same dyadic nodes; the evaluator at a second, higher precision; the error bound of §50.4(4).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gcsim.cerar.exact import evaluate_exact, vandermonde_exact, vandermonde_limit
from gcsim.errors import InvalidArgumentError, SizeLimitError
from tolerances import SAFETY, gamma


def _inverse(M):
    n = len(M)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(M)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        p = aug[col][col]
        aug[col] = [x / p for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [a - f * b for a, b in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def _ring_in_rationals(N, c, h: Fraction, g: np.ndarray):
    """§50.3's real-node design with spacing h and §50.1's rounds, all in Fractions (w = d / c)."""
    z = [1 + h * Fraction(2 * k - (c - 1), 2) for k in range(c)]
    L = c + N - 2
    A = [_inverse([[z[k] ** (j - tau) for tau in range(c)] for k in range(c)]) for j in range(N)]
    # the design's rows are the nodes' coordinates: B_j[k, tau] = z_k^{j - tau}
    D = [[[z[k] ** (i - 1 - l) for l in range(L)] for k in range(c)] for i in range(N)]
    w = g.shape[1] // c
    G = [[[Fraction(float(x)) for x in g[i, r * w : (r + 1) * w]] for r in range(c)] for i in range(N)]
    X = [
        [[sum((A[i][k][j] * G[i][j][col] for j in range(c)), Fraction(0)) for col in range(w)] for k in range(c)]
        for i in range(N)
    ]
    out = [[list(row) for row in G[i]] for i in range(N)]
    u = [[Fraction(0)] * w for _ in range(N)]
    for t in range(1, L + 1):
        s = [[(X[i][t - 1][col] if t <= c else 0) + u[i][col] for col in range(w)] for i in range(N)]
        for i in range(N):
            back = t - N
            u[i] = [s[i - 1][col] - (X[i][back][col] if 0 <= back < c - 1 else 0) for col in range(w)]
            for k in range(c):
                out[i][k] = [out[i][k][col] + D[i][k][t - 1] * u[i][col] for col in range(w)]
    return out


def test_evaluator_equals_the_ring_in_exact_rationals():
    N, c, w = 4, 6, 2
    ed = vandermonde_exact(N, c, 1e-2)
    h = Fraction(ed.spacing)  # the float spacing is a dyadic rational, exact in both
    g = np.random.default_rng(3).standard_normal((N, c * w))
    out, err = evaluate_exact(ed, g)
    ref = _ring_in_rationals(N, c, h, g)
    ref_f = np.array([[float(ref[i][k][col]) for k in range(c) for col in range(w)] for i in range(N)])
    # both round one value that agrees to ~30 digits: equal or one rounding apart
    assert np.all(np.abs(out - ref_f) <= 2 * gamma(1) * np.abs(ref_f))
    total = [sum((Fraction(float(g[j, k])) for j in range(N)), Fraction(0)) for k in range(c * w)]
    diff = max(sum((ref[i][k // w][k % w] - total[k]) ** 2 for k in range(c * w)) for i in range(N)) / sum(
        x * x for x in total
    )
    assert err == pytest.approx(float(diff) ** 0.5, rel=SAFETY * gamma(4))


def test_two_precisions_agree_on_the_circle_family():
    g = np.random.default_rng(4).standard_normal((4, 40))
    lo = vandermonde_exact(4, 10, 1e-2, family="circle")
    hi = vandermonde_exact(4, 10, 1e-2, family="circle", dps=lo.dps + 25)
    (o1, e1), (o2, e2) = evaluate_exact(lo, g), evaluate_exact(hi, g)
    assert np.all(np.abs(o1 - o2) <= 2 * gamma(1) * np.abs(o2))
    assert e1 == pytest.approx(e2, rel=SAFETY * gamma(1))


def test_exact_errors_decrease_with_c_toward_rate_one():
    """The abstract's limit (§53.2): N = 4, c = 4 ... 32, exact seam error 1/c^2, rate 1 + 2/c."""
    cs = list(range(4, 33, 4))
    lim = vandermonde_limit(4, cs, families=("real",), dtypes=(), kappa=False, d=96)
    e = lim.exact_error["real"]
    assert np.all(np.diff(e) < 0) and np.all(e > 0)
    assert np.allclose(lim.seam_error["real"], [1 / c**2 for c in cs], rtol=1e-9)
    assert np.all(np.diff(lim.rate) < 0)
    # Proposition 4(4) of §50.4 for the Vandermonde family: the error is at most sqrt(N-1) seam ...
    assert np.all(e <= np.sqrt(3) * lim.seam_error["real"])
    # ... and the working precision grows with the digits the encoders lose (Gautschi)
    assert np.all(np.diff(lim.dps["real"]) > 0)


def test_kappa_reported_and_the_circle_buys_conditioning():
    lim = vandermonde_limit(4, [4, 8, 12], dtypes=("float64",), d=48)
    kr, kc = lim.kappa["real"], lim.kappa["circle"]
    assert np.all(np.isfinite(kr)) and np.all(np.isfinite(kc))
    assert kc[0] == pytest.approx(1.0, rel=1e-9)  # c = N: the exact roots-of-unity design
    assert lim.seam_error["circle"][0] == 0 and lim.exact_error["circle"][0] < 1e-25
    assert np.all(kc[1:] * 1e10 < kr[1:])  # equal exact seam error, kappa smaller by > 10 decades
    # float64 follows the circle family where kappa u is small, the real family parts at c = 8
    assert lim.parts_at[("circle", "float64")] is None
    assert lim.parts_at[("real", "float64")] == 8
    fe = lim.float_error[("real", "float64")]
    assert abs(fe[0] - lim.exact_error["real"][0]) <= 1e-6  # kappa ~ 1e7 at c = 4: ~1e-9 of rounding


def test_bad_inputs():
    with pytest.raises(InvalidArgumentError, match="family"):
        vandermonde_exact(4, 8, 1e-3, family="complex")
    with pytest.raises(InvalidArgumentError, match="error"):
        vandermonde_exact(4, 8, 1.5)
    with pytest.raises(InvalidArgumentError, match="error"):
        vandermonde_exact(4, 8, 0.0)
    with pytest.raises(InvalidArgumentError, match="design"):
        evaluate_exact("x", np.zeros((4, 8)))
    with pytest.raises(InvalidArgumentError, match="gradients"):
        evaluate_exact(vandermonde_exact(4, 4, 1e-3), np.zeros((3, 8)))
    out, err = evaluate_exact(vandermonde_exact(4, 5, 1e-3), np.zeros((4, 0)))  # d = 0: nothing to sum
    assert out.shape == (4, 0) and err == 0.0
    with pytest.raises(SizeLimitError, match="MAX_EXACT_WORK"):
        vandermonde_exact(4, 200, 1e-3)
    with pytest.raises(InvalidArgumentError, match="dps"):
        vandermonde_exact(4, 8, 1e-3, dps=10**5)
    with pytest.raises(InvalidArgumentError, match="families"):
        vandermonde_limit(4, [4], families=("x",))
    with pytest.raises(InvalidArgumentError, match="cs"):
        vandermonde_limit(4, [])
