"""Array backend (NumPy always, CuPy when a GPU is present): gradient codes and CERAR end to end."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcsim
from gcsim.cerar.constructions import design
from gcsim.cerar.protocol import simulate
from gcsim.coding.evaluate import expected_error, fixed_decoder_error, optimal_error
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.stragglers import FixedModel
from gcsim.errors import InvalidArgumentError
from gcsim.executor.arrays import batched_optimal_error, get_namespace, run_cerar, run_scheme, to_numpy


def _cupy_usable() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


BACKENDS = ["numpy", pytest.param("cupy", marks=pytest.mark.skipif(not _cupy_usable(),
                                                                     reason="CuPy/GPU not available"))]


def _brute_force(B, m, g, mask, X):
    """Worker transmissions and decoding by explicit loops (independent of arrays.py)."""
    N, d = g.shape
    n = B.shape[1]
    w = -(-d // m)
    gp = np.zeros((N, m * w))
    gp[:, :d] = g
    tilde = np.zeros((n, w))
    for j in range(n):
        for k in range(m):
            for i in range(N):
                tilde[j] += B[k * N + i, j] * gp[i, k * w:(k + 1) * w]
    ghat = np.zeros(m * w)
    for l in range(m):
        for j in range(n):
            if mask[j]:
                ghat[l * w:(l + 1) * w] += X[j, l] * tilde[j]
    return tilde, ghat, gp.sum(axis=0)


SCHEMES = [
    ("naive", 2, {}),
    ("rd", 1, {"seed": 1}),
    ("rd", 2, {"seed": 2, "eps": 0.1}),
    ("rd", 3, {"seed": 3}),
    ("ns", 2, {"seed": 0, "dist": "gaussian"}),
]


@pytest.mark.parametrize("xp", BACKENDS)
@pytest.mark.parametrize("method,m,kw", SCHEMES)
def test_run_scheme_matches_brute_force_and_prediction(xp, method, m, kw):
    A = gcsim.bibd(7, 3, 1).assignment
    sch = encode(A, m, method, **kw)
    rng = np.random.default_rng(11)
    g = rng.standard_normal((7, 10))       # d = 10: padded when m = 3
    mask = np.array([1, 0, 1, 1, 0, 1, 1], dtype=bool)
    r = run_scheme(sch, g, mask, xp=xp)
    tilde, ghat, true = _brute_force(sch.B, m, g, mask, r.decoder)
    np.testing.assert_allclose(to_numpy(r.transmissions), tilde, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_numpy(r.decoded), ghat[:10], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(to_numpy(r.gradient), g.sum(axis=0), rtol=1e-12)
    assert r.error == pytest.approx(np.sum((ghat - true) ** 2), rel=1e-9, abs=1e-18)
    assert r.error_truncated == pytest.approx(np.sum((ghat[:10] - true[:10]) ** 2), rel=1e-9, abs=1e-18)
    # measured = predicted to round-off; residual = the analysis layer's err(B, F)
    assert r.predicted_error == pytest.approx(r.error, rel=1e-9, abs=1e-18)
    assert r.residual == pytest.approx(optimal_error(sch, mask, method="svd"), rel=1e-9, abs=1e-12)


def test_fixed_decoder_residual_matches_analysis_layer():
    sch = encode(gcsim.bibd(7, 3, 1).assignment, 2, "ns", seed=0, dist="gaussian")
    mask = np.array([1, 1, 0, 1, 1, 0, 1], dtype=bool)
    g = np.random.default_rng(0).standard_normal((7, 8))
    r = run_scheme(sch, g, mask, decoder="fixed")
    assert r.residual == pytest.approx(fixed_decoder_error(sch, mask), rel=1e-12)
    assert r.error == pytest.approx(r.predicted_error, rel=1e-9)
    X = np.random.default_rng(1).standard_normal((7, 2))
    r2 = run_scheme(sch, g, mask, decoder=X)
    assert r2.residual == pytest.approx(fixed_decoder_error(sch, mask, X), rel=1e-12)
    # all workers + NS reference decoder: exact (SPEC 3.3, B X_0 = T)
    r3 = run_scheme(sch, g, np.ones(7, dtype=bool), decoder="fixed")
    assert r3.error < 1e-20 * max(1.0, float(np.sum(g.sum(0) ** 2)))


@pytest.mark.parametrize("xp", BACKENDS)
def test_isotropic_mean_matches_simulated_expected_error(xp):
    # E over isotropic gradients and uniform s-subsets of ‖ĝ − ∇L‖² / w is E_S[err(B, S)]
    sch = encode(gcsim.bibd(7, 3, 1).assignment, 2, "rd", seed=4)
    model = FixedModel(7, 2)
    exact = expected_error(sch, model, progress=False)
    assert exact.method == "exact"
    masks = model.sample(300, seed=9)
    rng = np.random.default_rng(5)
    vals = np.array([run_scheme(sch, rng.standard_normal((7, 16)), mk, xp=xp).error / 8 for mk in masks])
    se = vals.std(ddof=1) / math.sqrt(vals.size)
    assert abs(vals.mean() - exact.mean) < 4 * se + 1e-12


@pytest.mark.parametrize("xp", BACKENDS)
@pytest.mark.parametrize("N,c,method,eps", [(3, 3, "exact", None), (4, 2, "exact", None),
                                            (3, 5, "perturbation", 0.05), (4, 6, "vandermonde", 0.3)])
def test_run_cerar_matches_simulator_and_error_operators(xp, N, c, method, eps):
    des = design(N, c, method, eps=eps)
    g = np.random.default_rng(N * 10 + c).standard_normal((N, 23))
    r = run_cerar(des, g, xp=xp)
    sim = simulate(des, g)
    np.testing.assert_allclose(to_numpy(r.outputs), sim.outputs, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(r.bytes_sent, sim.bytes_sent)
    assert r.bytes_sent.tolist() == [(c + N - 2) * (-(-23 // c)) * 8] * N
    np.testing.assert_allclose(r.errors, np.sum((sim.outputs - g.sum(0)) ** 2, axis=1), rtol=1e-7, atol=1e-18)
    np.testing.assert_allclose(r.predicted_errors, r.errors, rtol=1e-7, atol=1e-18)
    if method == "exact":
        assert r.errors.max() < 1e-20 * np.sum(g.sum(0) ** 2) + 1e-24
    else:
        assert r.errors.min() >= 0 and r.errors.max() > 0


def test_run_cerar_isotropic_mean_matches_error_operators():
    des = design(3, 5, "perturbation", eps=0.2)
    E = des.error_operators()
    rng = np.random.default_rng(2)
    vals = np.array([run_cerar(des, rng.standard_normal((3, 10))).errors for _ in range(300)])  # w = 2
    expect = 2 * np.einsum("imab,imab->i", E, E)
    se = vals.std(axis=0, ddof=1) / math.sqrt(vals.shape[0])
    assert np.all(np.abs(vals.mean(axis=0) - expect) < 4 * se + 1e-20)   # worker N-1 is exact (SPEC §5)
    assert expect[-1] < 1e-20 < expect[0]


@pytest.mark.parametrize("xp", BACKENDS)
@pytest.mark.parametrize("route", ["auto", "solve", "eigh"])
def test_batched_evaluator_matches_scipy_route(xp, route):
    for sch, s in [(encode(gcsim.bibd(13, 4, 1).assignment, 2, "rd", seed=1), 3),
                   (encode(gcsim.bibd(13, 4, 1).assignment, 2, "naive"), 4),    # rank-deficient B
                   (encode(gcsim.bibd(7, 3, 1).assignment, 1, "rd", seed=0), 0)]:
        masks = FixedModel(sch.n, s).sample(40, seed=3)
        masks = np.vstack([masks, np.zeros((1, sch.n), dtype=bool)])             # empty F as well
        ref = np.array([_scipy_err(sch, mk) for mk in masks])
        got = batched_optimal_error(sch, masks, xp=xp, route=route, chunk=16)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got, optimal_error(sch, masks, method="svd", progress=False), atol=1e-9)


def _scipy_err(sch: Scheme, mask):
    import scipy.linalg

    T = sch.target()
    if not mask.any():
        return float(np.sum(T ** 2))
    X = scipy.linalg.lstsq(sch.B[:, mask], T)[0]
    return float(np.sum((sch.B[:, mask] @ X - T) ** 2))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 3), d=st.integers(1, 9))
def test_property_measured_equals_predicted(seed, m, d):
    rng = np.random.default_rng(seed)
    N, n = 5, 6
    A = (rng.random((N, n)) < 0.5).astype(int)
    A[np.arange(N), rng.integers(0, n, N)] = 1            # every part has a holder
    sch = encode(A, m, "rd", seed=seed)
    mask = rng.random(n) < 0.7
    g = rng.standard_normal((N, d))
    r = run_scheme(sch, g, mask)
    _, ghat, true = _brute_force(sch.B, m, g, mask, r.decoder)
    assert r.error == pytest.approx(np.sum((ghat - true) ** 2), rel=1e-8, abs=1e-12)
    assert r.predicted_error == pytest.approx(r.error, rel=1e-8, abs=1e-12)
    assert r.error_truncated <= r.error + 1e-12


def test_validation_names_the_argument():
    sch = encode(np.eye(3, dtype=int), 1, "naive")
    with pytest.raises(InvalidArgumentError, match="gradients"):
        run_scheme(sch, np.ones((2, 4)), [True] * 3)
    with pytest.raises(InvalidArgumentError, match="gradients"):
        run_scheme(sch, np.array([[np.nan], [1.0], [1.0]]), [True] * 3)
    with pytest.raises(InvalidArgumentError, match="nonstragglers"):
        run_scheme(sch, np.ones((3, 4)), [True, False])
    with pytest.raises(InvalidArgumentError, match="decoder"):
        run_scheme(sch, np.ones((3, 4)), [True] * 3, decoder=np.ones((2, 1)))
    with pytest.raises(InvalidArgumentError, match="scheme"):
        run_scheme("B", np.ones((3, 4)), [True] * 3)
    with pytest.raises(InvalidArgumentError, match="xp"):
        get_namespace("torch")
    with pytest.raises(InvalidArgumentError, match="design"):
        run_cerar(sch, np.ones((3, 4)))
    with pytest.raises(InvalidArgumentError, match="route"):
        batched_optimal_error(sch, [True] * 3, route="lu")


def test_cupy_request_without_gpu_is_a_clear_error():
    if _cupy_usable():
        pytest.skip("a GPU is present")
    with pytest.raises(InvalidArgumentError, match="CuPy"):
        get_namespace("cupy")


def test_gpu_check_script_syntax_and_numpy_dry_run(repo_root, capsys):
    import importlib.util
    import shutil
    import subprocess

    if shutil.which("bash"):
        p = subprocess.run(["bash", "-n", str(repo_root / "benchmarks" / "gpu_check.sh")], capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
    spec = importlib.util.spec_from_file_location("gpu_check", repo_root / "benchmarks" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--dry-run", "--patterns", "60", "--json"]) == 0
    import json
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["numpy_max_rel_diff_vs_analysis"] <= 1e-9
    assert "cupy_batched_s" not in report
