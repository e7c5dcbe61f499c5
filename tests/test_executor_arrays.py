"""Array backend (NumPy always, CuPy when a GPU is present): gradient codes and CERAR end to end."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gcsim
from backends import BACKENDS, cupy_usable
from exact_lstsq import reference_residual
from executor_tolerances import (
    cerar_error_operator_tol,
    cerar_operator_tol,
    cerar_output_tol,
    cerar_predicted_tol,
    decode_tol,
    fixed_residual_tol,
    lsq_err_tol,
    padded_blocks,
    sq_diff_tol,
    sum_tol,
    target,
    transmission_tol,
)
from gcsim.cerar.factory import design
from gcsim.cerar.protocol import simulate
from gcsim.coding.evaluate import expected_error, fixed_decoder_error, optimal_error
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.stragglers import FixedModel
from gcsim.errors import InvalidArgumentError
from gcsim.executor.arrays import batched_optimal_error, get_namespace, run_scheme, to_numpy
from gcsim.executor.cerar_arrays import run_cerar
from guards import load_script
from tolerances import SAFETY, cond, dot_tol, gamma, lstsq_tol, unit_roundoff


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
                tilde[j] += B[k * N + i, j] * gp[i, k * w : (k + 1) * w]
    ghat = np.zeros(m * w)
    for l in range(m):
        for j in range(n):
            if mask[j]:
                ghat[l * w : (l + 1) * w] += X[j, l] * tilde[j]
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
    g = rng.standard_normal((7, 10))  # d = 10: padded when m = 3
    mask = np.array([1, 0, 1, 1, 0, 1, 1], dtype=bool)
    r = run_scheme(sch, g, mask, xp=xp)
    tilde, ghat, true = _brute_force(sch.B, m, g, mask, r.decoder)
    _check_against_brute_force(r, sch, g, mask, m, tilde, ghat, true)
    # residual = the analysis layer's err(B, F) (SVD route there, pinv route here): each within
    # the least-squares residual bound of the exact value
    assert abs(r.residual - optimal_error(sch, mask, method="svd")) <= 2 * lsq_err_tol(sch.B[:, mask], m)


def _check_against_brute_force(r, sch, g, mask, m, tilde, ghat, true):
    """run_scheme's numbers against the loop implementation, each within its rounding bound."""
    d = g.shape[1]
    B, X = sch.B, r.decoder
    # transmissions: two evaluations of the same length-mN dot products, each within dot_tol
    assert np.all(np.abs(to_numpy(r.transmissions) - tilde) <= 2 * transmission_tol(B, g, m))
    # ĝ − ∇L (padded blocks): both routes within decode_tol of the exact value (Higham Lemma 3.3)
    delta = decode_tol(B, X, mask, g, m)  # (m, w)
    flat = delta.reshape(-1)  # block-major, like ĝ
    assert np.all(np.abs(to_numpy(r.decoded) - ghat[:d]) <= 2 * flat[:d])
    assert np.all(np.abs(to_numpy(r.gradient) - g.sum(axis=0)) <= 2 * sum_tol(g))
    ref = float(np.sum((ghat - true) ** 2))
    ref_trunc = float(np.sum((ghat[:d] - true[:d]) ** 2))
    assert abs(r.error - ref) <= sq_diff_tol(ref, 2 * np.linalg.norm(flat), flat.size)
    assert abs(r.error_truncated - ref_trunc) <= sq_diff_tol(ref_trunc, 2 * np.linalg.norm(flat[:d]), d)
    # measured = predicted: both approximate the same exact vector 𝒢(B_F X − T) (theory §5.1)
    assert abs(r.predicted_error - r.error) <= sq_diff_tol(r.error, 2 * np.linalg.norm(flat), flat.size)
    # the truncated error is a partial sum of the same squares: <= the full sum up to the
    # relative rounding γ_{mw} of each of the two sums
    assert r.error_truncated <= r.error * (1 + 2 * SAFETY * gamma(flat.size))


def test_fixed_decoder_residual_matches_analysis_layer():
    sch = encode(gcsim.bibd(7, 3, 1).assignment, 2, "ns", seed=0, dist="gaussian")
    mask = np.array([1, 1, 0, 1, 1, 0, 1], dtype=bool)
    g = np.random.default_rng(0).standard_normal((7, 8))
    r = run_scheme(sch, g, mask, decoder="fixed")
    X0 = np.asarray(sch.decoder)
    # two evaluations of ‖B_F X − T‖²: each within the rounding bound of the exact value
    assert abs(r.residual - fixed_decoder_error(sch, mask)) <= 2 * fixed_residual_tol(sch.B, X0, mask, 2)
    delta = np.linalg.norm(decode_tol(sch.B, X0, mask, g, 2))
    assert abs(r.error - r.predicted_error) <= sq_diff_tol(r.error, 2 * delta, 8)
    X = np.random.default_rng(1).standard_normal((7, 2))
    r2 = run_scheme(sch, g, mask, decoder=X)
    assert abs(r2.residual - fixed_decoder_error(sch, mask, X)) <= 2 * fixed_residual_tol(sch.B, X, mask, 2)
    # all workers + NS reference decoder: exact (theory §40.4, B X_0 = T), so the error is round-off:
    # ĝ − ∇L = 𝒢(B X_0 − T) + rounding, with B X_0 − T itself a computed residual of X_0's construction
    full = np.ones(7, dtype=bool)
    r3 = run_scheme(sch, g, full, decoder="fixed")
    R0 = sch.B @ X0 - target(2, 7)
    dR0 = dot_tol(8, np.abs(sch.B) @ np.abs(X0) + target(2, 7))
    GG = padded_blocks(g, 2)
    bound = (
        np.linalg.norm(GG.T @ R0)
        + np.linalg.norm(np.abs(GG).T @ dR0)
        + np.linalg.norm(decode_tol(sch.B, X0, full, g, 2))
    )
    assert r3.error <= bound**2


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
    # statistical: 4 standard errors of a seeded Monte-Carlo mean (two-sided normal tail 6e-5);
    # plus the floating-point error of the exact mean, an average of least-squares residuals
    fp = max(lsq_err_tol(sch.B[:, mk], 2) for mk in model.sample(21, seed=0))
    assert abs(vals.mean() - exact.mean) < 4 * se + fp


@pytest.mark.parametrize("xp", BACKENDS)
@pytest.mark.parametrize(
    "N,c,method,eps",
    [(3, 3, "exact", None), (4, 2, "exact", None), (3, 5, "perturbation", 0.05), (4, 6, "vandermonde", 0.3)],
)
def test_run_cerar_matches_simulator_and_error_operators(xp, N, c, method, eps):
    des = design(N, c, method, eps=eps)
    g = np.random.default_rng(N * 10 + c).standard_normal((N, 23))
    r = run_cerar(des, g, xp=xp)
    sim = simulate(des, g)
    # this ring within the ring's rounding bound (encode c terms, 2L ring additions, decode L+1
    # terms) of the exact outputs; the simulator's default route here, the end-to-end operator,
    # within its own bound (theory §52.2)
    tol = cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :23]
    op_tol = cerar_operator_tol(des.encoders, des.decoders, g).reshape(N, -1)[:, :23]
    assert np.all(np.abs(to_numpy(r.outputs) - sim.outputs) <= tol + op_tol)
    np.testing.assert_array_equal(r.bytes_sent, sim.bytes_sent)
    assert r.bytes_sent.tolist() == [(c + N - 2) * (-(-23 // c)) * 8] * N
    total = g.sum(0)
    ref = np.sum((sim.outputs - total) ** 2, axis=1)
    delta = np.linalg.norm(tol + op_tol + sum_tol(g)[None, :], axis=1)  # both outputs and the sum
    for i in range(N):
        assert abs(r.errors[i] - ref[i]) <= sq_diff_tol(ref[i], delta[i], 23)
    # measured = predicted Σ_m E_{i,m} G_{i−m}: both approximate the same exact vector
    ptol = np.linalg.norm(cerar_predicted_tol(des.encoders, des.decoders, g).reshape(N, -1), axis=1)
    otol = np.linalg.norm(cerar_output_tol(des.encoders, des.decoders, g).reshape(N, -1), axis=1)
    stol = np.linalg.norm(sum_tol(g))
    for i in range(N):
        assert abs(r.predicted_errors[i] - r.errors[i]) <= sq_diff_tol(r.errors[i], ptol[i] + otol[i] + stol, 23)
    if method == "exact":
        # exact design: Σ_m E G = 0, so the measured error is round-off alone
        assert np.all(r.errors <= (otol + stol) ** 2)
    else:
        # a real approximation error: above what round-off alone could produce
        assert r.errors.min() >= 0 and r.errors.max() > ((otol + stol) ** 2).max()


def test_run_cerar_isotropic_mean_matches_error_operators():
    des = design(3, 5, "perturbation", eps=0.2)
    E = des.error_operators()
    rng = np.random.default_rng(2)
    samples = [rng.standard_normal((3, 10)) for _ in range(300)]
    vals = np.array([run_cerar(des, g).errors for g in samples])  # w = 2
    expect = 2 * np.einsum("imab,imab->i", E, E)
    se = vals.std(axis=0, ddof=1) / math.sqrt(vals.shape[0])
    # floating point: each sample's error within sq_diff_tol of its exact value; the computed
    # error operators within cerar_error_operator_tol (so expect within the same sq bound)
    fp = np.zeros(3)
    for g, errs in zip(samples, vals, strict=True):
        d = np.linalg.norm(cerar_output_tol(des.encoders, des.decoders, g).reshape(3, -1), axis=1)
        d = d + np.linalg.norm(sum_tol(g))
        fp = np.maximum(fp, [sq_diff_tol(v, d[i], 10) for i, v in enumerate(errs)])
    dE = np.linalg.norm(cerar_error_operator_tol(des.encoders, des.decoders).reshape(3, -1), axis=1)
    efp = np.array([sq_diff_tol(float(np.sum(E[i] ** 2)), dE[i], E[i].size) for i in range(3)]) * 2
    # statistical: 4 standard errors per worker (seeded Monte-Carlo)
    assert np.all(np.abs(vals.mean(axis=0) - expect) < 4 * se + fp + efp)
    # worker N-1 is exact (theory §50): its E is zero but for rounding; worker 0 is not
    assert expect[-1] <= 2 * dE[-1] ** 2 < expect[0]


@pytest.mark.parametrize("xp", BACKENDS)
@pytest.mark.parametrize("route", ["auto", "solve", "eigh"])
def test_batched_evaluator_matches_scipy_route(xp, route):
    for sch, s in [
        (encode(gcsim.bibd(13, 4, 1).assignment, 2, "rd", seed=1), 3),
        (encode(gcsim.bibd(13, 4, 1).assignment, 2, "naive"), 4),  # rank-deficient B
        (encode(gcsim.bibd(7, 3, 1).assignment, 1, "rd", seed=0), 0),
    ]:
        masks = FixedModel(sch.n, s).sample(40, seed=3)
        masks = np.vstack([masks, np.zeros((1, sch.n), dtype=bool)])  # empty F as well
        ref = np.array([_scipy_err(sch, mk) for mk in masks])
        got = batched_optimal_error(sch, masks, xp=xp, route=route, chunk=16)
        svd = optimal_error(sch, masks, method="svd", progress=False)
        # the batched evaluator goes through the Gram matrix (κ² of B_F; the downdate route
        # through Γ⁻¹ of the whole B, so κ(B) counts as well); scipy and the SVD route are
        # orthogonal (κ): each within its least-squares bound of the exact err(B, F)
        kB = lsq_err_tol(sch.B, sch.m, gram=True)
        for k, mk in enumerate(masks):
            gram = max(lsq_err_tol(sch.B[:, mk], sch.m, gram=True), kB)
            orth = lsq_err_tol(sch.B[:, mk], sch.m)
            assert abs(got[k] - ref[k]) <= gram + orth, (k, got[k], ref[k])
            assert abs(got[k] - svd[k]) <= gram + orth, (k, got[k], svd[k])


def _scipy_err(sch: Scheme, mask):
    # lstsq where B_F has full column rank, exact rationals where not (tests/exact_lstsq.py)
    return reference_residual(sch.B[:, mask], sch.target())


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 3), d=st.integers(1, 9))
def test_property_measured_equals_predicted(seed, m, d):
    rng = np.random.default_rng(seed)
    N, n = 5, 6
    A = (rng.random((N, n)) < 0.5).astype(int)
    A[np.arange(N), rng.integers(0, n, N)] = 1  # every part has a holder
    sch = encode(A, m, "rd", seed=seed)
    mask = rng.random(n) < 0.7
    g = rng.standard_normal((N, d))
    r = run_scheme(sch, g, mask)
    tilde, ghat, true = _brute_force(sch.B, m, g, mask, r.decoder)
    _check_against_brute_force(r, sch, g, mask, m, tilde, ghat, true)


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
    if cupy_usable():
        pytest.skip("a GPU is present")
    with pytest.raises(InvalidArgumentError, match="CuPy"):
        get_namespace("cupy")


def test_gpu_check_script_syntax_and_numpy_dry_run(repo_root, capsys):
    import shutil
    import subprocess

    if shutil.which("bash"):
        p = subprocess.run(
            ["bash", "-n", str(repo_root / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True
        )
        assert p.returncode == 0, p.stderr
    mod = load_script("benchmarks/gpu_check.py", "gpu_check")
    assert mod.main(["--dry-run", "--patterns", "60", "--json"]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and "cupy_batched_s" not in report
    # the script's workload, rebuilt here: batched (Gram route) vs analysis layer, each within its
    # least-squares bound of the exact err(B, F), relative to err(B, F) >= its computed value − bound
    sch = gcsim.encode(gcsim.bibd(91, 10, 1), 2, "rd", eps=0.0, seed=0)
    masks = FixedModel(sch.n, 20).sample(60, seed=1)
    kB = lsq_err_tol(sch.B, 2, gram=True)
    rel = 0.0
    for mk, ref in zip(masks, optimal_error(sch, masks, progress=False), strict=True):
        bound = max(lsq_err_tol(sch.B[:, mk], 2, gram=True), kB) + lsq_err_tol(sch.B[:, mk], 2)
        rel = max(rel, bound / (ref - bound))
    assert report["numpy_max_rel_diff_vs_analysis"] <= rel


# ----------------------------------------------------------------------------------------------
# the array-API evaluator on adversarial encoders (issue #9 §2: no silent wrong number)
# ----------------------------------------------------------------------------------------------


def _adversarial_cases():
    from test_evaluate_adversarial import (
        case_kappa,
        case_near_duplicate,
        case_rank_deficient,
        case_scaled_columns,
        tandon_cyclic_mds,
    )

    B = tandon_cyclic_mds(10, 3, 0)
    return {
        "tandon-10-3": (B, 1),
        "kappa-1e8": case_kappa(1e8),
        "near-duplicate-1e-8": case_near_duplicate(1e-8),
        "rank-deficient": case_rank_deficient(),
        "scaled-columns": case_scaled_columns(),
    }


@pytest.mark.parametrize("route", ["auto", "solve", "eigh"])
@pytest.mark.parametrize(
    "name", ["tandon-10-3", "kappa-1e8", "near-duplicate-1e-8", "rank-deficient", "scaled-columns"]
)
def test_batched_optimal_error_is_certified_or_falls_back(name, route):
    # Before the fix the executor's Gram evaluator returned 9.06 on Tandon's code (truth 0), 1.9 at
    # κ = 1e8 and 2.6 on columns scaled 1e-9, silently.  Reference: exact rational arithmetic.
    from gcsim.coding.schemes import Scheme
    from test_evaluate_adversarial import exact_error, stated_bounds

    B, m = _adversarial_cases()[name]
    n = B.shape[1]
    sch = Scheme.from_matrix(B, np.ones((B.shape[0] // m, n), dtype=int), m)
    rng = np.random.default_rng(7)
    masks = rng.random((12, n)) > 0.35
    got = batched_optimal_error(sch, masks, route=route)
    for mk, val in zip(masks, got, strict=True):
        exact = float(exact_error(B, m, mk))
        # the certified Gram bound (κ(B_F) <= 1e4 squared) or the SVD route's stated bound, whichever
        # is larger: both are proved in docs/theory.md (error identities §3)
        bound = max(stated_bounds(B, m, mk)["svd"], SAFETY * mk.sum() * unit_roundoff() * 1e8 * B.shape[0])
        assert abs(val - exact) <= bound, (name, route, val, exact, bound)


@pytest.mark.parametrize("route", ["auto", "downdate", "solve", "eigh", "svd"])
@pytest.mark.parametrize("name", ["tandon-10-3", "kappa-1e8", "rank-deficient", "scaled-columns"])
def test_one_kernel_runs_on_torch_tensors(name, route):
    # the executor's evaluator is the analysis kernel; only the namespace differs, so torch (CPU
    # tensors through array-api-compat) gives the certified numbers as well
    torch = pytest.importorskip("torch")
    from gcsim.coding.schemes import Scheme
    from test_evaluate_adversarial import exact_error, stated_bounds

    B, m = _adversarial_cases()[name]
    n = B.shape[1]
    sch = Scheme.from_matrix(B, np.ones((B.shape[0] // m, n), dtype=int), m)
    masks = np.random.default_rng(7).random((12, n)) > 0.35
    got = batched_optimal_error(sch, masks, route=route, xp=torch)
    assert isinstance(got, np.ndarray) and got.shape == (12,)
    for mk, val in zip(masks, got, strict=True):
        exact = float(exact_error(B, m, mk))
        bound = max(stated_bounds(B, m, mk)["svd"], SAFETY * mk.sum() * unit_roundoff() * 1e8 * B.shape[0])
        assert abs(val - exact) <= bound, (name, route, val, exact, bound)


def test_numpy_executor_and_analysis_are_the_same_function():
    # on NumPy with the analysis' route the executor returns the analysis' numbers bit for bit
    sch = encode(gcsim.bibd(13, 4, 1).assignment, 2, "rd", seed=1)
    masks = FixedModel(sch.n, 4).sample(50, seed=0)
    for route, method in [("downdate", "downdate"), ("svd", "svd")]:
        assert np.array_equal(
            batched_optimal_error(sch, masks, route=route), optimal_error(sch, masks, method=method, progress=False)
        )
    # "auto": the analysis takes the structured route of a symmetric BIBD with RD (theory §42), the
    # executor's array-API evaluator its certified Gram / SVD routes: equal within the lstsq bound
    auto = optimal_error(sch, masks, method="auto", progress=False)
    executor = batched_optimal_error(sch, masks, route="auto")
    tol = lstsq_tol(cond(sch.B, nonzero=True), *sch.B.shape, float(sch.num_parts * sch.m))
    assert np.max(np.abs(auto - executor)) <= tol
