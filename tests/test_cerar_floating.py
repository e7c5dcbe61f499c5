"""Floating-point behaviour of CERAR: bfloat16 emulation, precision of the simulator, and the
eps trade-off of the perturbation design (optimum near u^(1/(r*+1)), collapse below)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gcsim.cerar import design, epsilon_sweep, simulate
from gcsim.cerar.floating import predicted_optimal_eps
from gcsim.cerar.protocol import round_bfloat16, unit_roundoff
from gcsim.errors import InvalidArgumentError
from test_cerar_protocol import naive_ring, ring_tol
from tolerances import SAFETY, unit_roundoff as np_unit_roundoff


def bf16_reference(x):
    """Round to 8 significant bits with ties to even, through exact scaling (np.round is
    half-to-even); independent of the bit-twiddling implementation."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    nz = x != 0
    e = np.floor(np.log2(np.abs(x[nz])))
    spacing = 2.0 ** (np.maximum(e, -126) - 7)  # subnormals: fixed spacing 2^-133
    out[nz] = np.round(x[nz] / spacing) * spacing
    return out


def test_round_bfloat16_ties_and_specials():
    one = np.float32(1.0)
    cases = np.array(
        [1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 2**-8), 0.0, -0.0, np.inf, -np.inf, 3.4e38],
        dtype=np.float32,
    )
    got = round_bfloat16(cases)
    assert got.dtype == np.float32
    assert got[0] == one and got[1] == np.float32(1 + 2**-6) and got[2] == np.float32(1 + 2**-7)
    assert got[3] == -one
    assert got[4] == 0 and got[6] == np.inf and got[7] == -np.inf
    assert got[8] == np.inf  # beyond bfloat16's largest finite value
    assert np.isnan(round_bfloat16(np.array([np.nan], dtype=np.float32)))[0]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.floats(float(np.float32(-1e30)), float(np.float32(1e30)), allow_nan=False, width=32), min_size=1, max_size=30
    )
)
def test_round_bfloat16_matches_reference(values):
    x = np.array(values, dtype=np.float32)
    got = round_bfloat16(x).astype(np.float64)
    want = bf16_reference(x.astype(np.float64))
    assert np.array_equal(got, want)
    # result has at most 8 significant bits
    assert np.all((got.astype(np.float32).view(np.uint32) & 0xFFFF) == 0)


@pytest.mark.parametrize("N,c", [(3, 5), (4, 4), (2, 3)])
def test_bfloat16_simulation_bitwise_equals_naive_rounded_reference(N, c):
    des = design(N, c, "perturbation", eps=0.1)
    g = np.random.default_rng(c).standard_normal((N, 11))
    res = simulate(des, g, dtype="bfloat16", warn=False)
    ref = naive_ring(des.encoders, des.decoders, g, rnd=round_bfloat16, dtype=np.float32)[0]
    assert np.array_equal(res.outputs, ref)
    assert np.all((res.outputs.astype(np.float32).view(np.uint32) & 0xFFFF) == 0)


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_exact_design_precision(dtype):
    N, c = 4, 4
    g = np.random.default_rng(0).standard_normal((N, 64))
    des = design(N, c, "exact")  # permutation encoders: entries 0/1, exact
    # the protocol's own arithmetic, in the protocol's order ("auto" in float64 would apply the
    # end-to-end operator, which for this design is J (x) I exactly: the same sum as g.sum(0))
    out = simulate(des, g, dtype=dtype, accumulate="rounds").outputs
    total = g.sum(0)
    rel = np.max(np.linalg.norm(out - total, axis=1)) / np.linalg.norm(total)
    # forward bound of the ring in the working precision (ring_tol, per entry, over d entries),
    # relative to ||sum g||
    u = unit_roundoff(dtype)
    bound = ring_tol(des.encoders, des.decoders, g, u)[0] * np.sqrt(g.shape[1]) / np.linalg.norm(total)
    assert rel <= bound
    # and really computed in that precision: rounding the 256 random inputs to it alone leaves a
    # relative error of about u / sqrt(3) (uniform rounding errors), far above u / 100
    assert rel > u / 100


def test_warns_when_kappa_exceeds_dtype():
    des = design(3, 5, "perturbation", eps=1e-6)  # kappa ~ 2e6
    g = np.ones((3, 5))
    with pytest.warns(RuntimeWarning, match="kappa"):
        simulate(des, g, dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(des, g, dtype="float64")


def test_epsilon_sweep_float32_shape():
    """float32, r* = 1: error ~ a N r* eps + b kappa u; optimum near u^(1/2) = 2^-12."""
    N, c = 3, 5
    eps = np.geomspace(1e-8, 0.3, 12)
    sw = epsilon_sweep(N, c, eps, "float32", d=48, seed=1)
    # u^(1/2) = (2^-24)^(1/2) = 2^-12: pow of a power of two, within one rounding
    assert sw.r_star == 1 and sw.predicted_eps == pytest.approx(2.0**-12, rel=SAFETY * np_unit_roundoff())
    # The next three are claims about the trade-off (docs/theory/50_cerar.md §5), not rounding
    # tolerances: a two-decade gap on both sides of the optimum, and a collapse (error > 1/2, i.e.
    # most of the gradient lost) at eps = 1e-8 where kappa u32 ~ 6 > 1.
    best = sw.error.min()
    assert best < 0.01 * sw.error[0]  # collapse for tiny eps ...
    assert best < 0.01 * sw.error[-1]  # ... and approximation error for large eps
    assert sw.error[0] > 0.5  # tiny eps: nothing left of the gradient
    # the optimum is Theta(u^(1/2)) with the constants a, b of the model unknown: within a decade
    assert sw.predicted_eps / 10 <= sw.best_eps <= sw.predicted_eps * 10
    # above the optimum float32 round-off is negligible: the float32 and float64 errors differ by at
    # most the float32 ring rounding (ring_tol per entry over d entries, relative to ||sum g||)
    g = np.random.default_rng(1).standard_normal((N, 48))
    nrm = np.linalg.norm(g.sum(0))
    for k in range(len(eps) - 4, len(eps)):
        des = design(N, c, "perturbation", eps=float(eps[k]))
        t32 = ring_tol(des.encoders, des.decoders, g, unit_roundoff("float32"))[0]
        t64 = ring_tol(des.encoders, des.decoders, g)[0]
        assert abs(sw.error[k] - sw.exact_error[k]) <= (t32 + t64) * np.sqrt(48) / nrm
    # kappa(A_j) ~ eps^-1 (Proposition 5): the log-log slope is -r* + O(eps_max) with an O(eps)
    # constant of order N r* (see test_kappa_grows_like_eps_power)
    assert np.polyfit(np.log(eps[:8]), np.log(sw.kappa[:8]), 1)[0] == pytest.approx(-1, abs=N * eps[7])


def test_epsilon_sweep_optimum_moves_with_precision():
    N, c = 3, 5
    eps = np.geomspace(1e-9, 0.3, 15)
    e32 = epsilon_sweep(N, c, eps, "float32", d=32).best_eps
    e16 = epsilon_sweep(N, c, eps, "bfloat16", d=32).best_eps
    e64 = epsilon_sweep(N, c, eps, "float64", d=32).best_eps
    assert e64 < e32 < e16
    # (2^-8)^(1/2) = 2^-4: pow of a power of two, within one rounding
    assert predicted_optimal_eps(N, c, "bfloat16") == pytest.approx(2.0**-4, rel=SAFETY * np_unit_roundoff())
    assert predicted_optimal_eps(4, 4, "float32") == 1.0


def test_epsilon_sweep_deterministic_and_validated():
    a = epsilon_sweep(3, 4, [1e-3, 1e-2], "float32", d=16, seed=4)
    b = epsilon_sweep(3, 4, [1e-2, 1e-3], "float32", d=16, seed=4)
    assert np.array_equal(a.error, b.error) and np.array_equal(a.eps, [1e-3, 1e-2])
    for bad in ([], [0.0], [-1e-3], [[1e-3]]):
        with pytest.raises(InvalidArgumentError, match="eps_values"):
            epsilon_sweep(3, 4, bad, "float32", d=8)
    with pytest.raises(InvalidArgumentError, match="dtype"):
        epsilon_sweep(3, 4, [1e-2], "int8", d=8)


def test_epsilon_sweep_does_not_warn_about_the_designs_it_visits_on_purpose():
    """The sweep visits kappa > 1e13 designs by design (the collapse is what it measures); the
    construction's kappa warning was leaking out of it, once per such eps."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        epsilon_sweep(3, 5, [1e-15, 1e-3], "float32", d=8)


def test_round_bfloat16_equals_torch_bfloat16():
    # torch's own bfloat16 cast is the library reference; gcsim keeps its 6-line rounding so that
    # bfloat16 simulation needs no optional dependency (torch is an extra)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    x = np.concatenate(
        [
            rng.standard_normal(20000).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, 20000),
            np.array([0.0, -0.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 3.389e38, -3.4e38, 1e-40], dtype=np.float32),
        ]
    ).astype(np.float32)
    want = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
    assert np.array_equal(round_bfloat16(x), want)
