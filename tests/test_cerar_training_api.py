"""CERAR in training (issue #31 item 5): κ for the wire dtype, the precision warning, the public hook
state, replica drift and periodic re-synchronisation.

References computed here, not by the code under test: condition numbers by ``numpy.linalg.svd``,
the error operators ``E_{i,m} = D_i[:, m-1:m-1+c] A_{i-m} − I`` and the relative MSE by NumPy, the
unit round-offs written out as powers of two, and the drift as the largest difference of the
replicas' parameters gathered from every rank (float64, exact for float32 values).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gcsim.cerar import design, r_star
from gcsim.cerar.floating import CerarPrecisionWarning, kappa_for_dtype, precision_check
from gcsim.errors import InvalidArgumentError

U = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def _kappa(X):
    s = np.linalg.svd(X, compute_uv=False)
    return float(s[..., 0].max() / s[..., -1].min()) if X.ndim == 2 else max(_kappa(x) for x in X)


def _relative_mse(des):
    N, c = des.N, des.c
    total = []
    for i in range(N):
        e = 0.0
        for m in range(1, N):
            E = des.decoders[i][:, m - 1 : m - 1 + c] @ des.encoders[(i - m) % N] - np.eye(c)
            e += float(np.sum(E**2))
        total.append(e / (N * c))
    return float(np.mean(total))


@pytest.mark.parametrize("N, c", [(4, 8), (3, 5), (4, 16)])
def test_kappa_for_dtype_is_the_float_optimal_perturbation_designs_kappa(N, c):
    rs = r_star(N, c)
    got = {dt: kappa_for_dtype(dt, N, c) for dt in U}
    for dt, u in U.items():
        des = design(N, c, "perturbation", eps=u ** (1.0 / (rs + 1)))
        assert got[dt] == pytest.approx(max(_kappa(des.encoders), _kappa(des.decoders)), rel=1e-9)
    # a finer dtype affords a larger cap, of order u^(-r*/(r*+1)): the slope between float64 and float32
    # (bfloat16 against float16 only for r* = 1: at r* >= 2 their ε* >= 0.15 is outside the asymptotic
    # range, where no ε gives a useful result in bfloat16 anyway, docs/guides/cerar.md)
    assert got["float64"] > got["float32"] > got["float16"] >= 1.0 and got["float32"] > got["bfloat16"] >= 1.0
    assert rs > 1 or got["float16"] > got["bfloat16"]
    slope = math.log2(got["float64"] / got["float32"]) / 29.0  # log2(u32 / u64) = 29
    assert slope == pytest.approx(rs / (rs + 1), abs=0.05)


def test_kappa_for_dtype_is_1_for_exact_designs_and_accepts_torch_dtypes():
    torch = pytest.importorskip("torch")
    assert kappa_for_dtype("float32", 4, 4) == 1.0 == kappa_for_dtype(torch.bfloat16, 5, 3)
    assert kappa_for_dtype(torch.float32, 4, 8) == kappa_for_dtype(np.float32, 4, 8) == kappa_for_dtype("float32", 4, 8)


def test_precision_check_numbers_against_numpy_and_the_warning():
    N, c = 4, 8
    best = design(N, c, "perturbation", eps=2.0**-12)  # the float32 optimum u^(1/2)
    coarse = design(N, c, "perturbation", eps=0.3)  # a low-accuracy design, as kappa=20 in the issue
    for des in (best, coarse):
        chk = precision_check(des, "float32", warn=False)
        kappa = max(_kappa(des.encoders), _kappa(des.decoders))
        approx = math.sqrt(_relative_mse(des))
        assert chk.approximation == pytest.approx(approx, rel=1e-9)
        assert chk.rounding == pytest.approx(kappa * U["float32"], rel=1e-9)
        assert chk.level == pytest.approx(kappa_for_dtype("float32", N, c) * U["float32"], rel=1e-12)
        assert chk.ratio == pytest.approx((approx + kappa * U["float32"]) / chk.level, rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert precision_check(best, "float32").ok  # no warning
    with pytest.warns(CerarPrecisionWarning, match=r"kappa_for_dtype = 50\d\d"):
        assert not precision_check(coarse, "float32").ok
    # the float32 design in bfloat16: its kappa u is far above the bfloat16 level
    with pytest.warns(CerarPrecisionWarning, match="bfloat16"):
        chk = precision_check(best, "bfloat16")
    assert chk.rounding > 100 * chk.approximation


def test_the_expected_error_matches_the_simulated_float32_ring():
    # the check's number predicts the real error: the simulated float32 ring on isotropic
    # gradients has a root-mean-square relative error near the approximation term (the rounding
    # κu is 2e-5 of it here); 2,500 packet columns per rank: a few per cent of sampling error
    from gcsim.cerar import simulate

    N, c, d = 4, 8, 20000
    des = design(N, c, "perturbation", eps=0.05)
    chk = precision_check(des, "float32", warn=False)
    g = np.random.default_rng(0).standard_normal((N, d))
    out = simulate(des, g, dtype="float32").outputs
    mse = np.mean(np.sum((out - g.sum(axis=0)) ** 2, axis=1)) / np.sum(g**2)
    assert math.sqrt(mse) == pytest.approx(chk.approximation, rel=0.05)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: kappa_for_dtype("int8", 4, 8), "dtype"),
        (lambda: kappa_for_dtype("float32", 1, 8), "N"),
        (lambda: precision_check(design(3, 3, "exact"), "float32", factor=0.5), "factor"),
        (lambda: precision_check("not a design", "float32"), "design"),
    ],
)
def test_bad_inputs_name_the_argument(call, argument):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == argument


def test_public_hook_state_api():
    torch = pytest.importorskip("torch")
    from gcsim.executor import CerarHookState, make_hook_state, resolve_compute_dtype

    exact, approx = design(3, 3, "exact"), design(3, 5, "perturbation", eps=0.01)
    assert resolve_compute_dtype(exact) is None and resolve_compute_dtype(approx) is torch.float64
    assert resolve_compute_dtype(approx, "float32") is torch.float32 and resolve_compute_dtype(approx, None) is None
    st = make_hook_state(approx, overlap=False, check_precision=False)
    assert isinstance(st, CerarHookState) and st.compute_dtype is torch.float64 and not st.overlap
    assert (st.calls, st.wire_dtype, st.precision) == (0, None, None)
    with pytest.raises(InvalidArgumentError) as info:
        resolve_compute_dtype(approx, "float16")
    assert info.value.argument == "compute_dtype"
    with pytest.raises(InvalidArgumentError) as info:
        make_hook_state(approx, check_precision="yes")
    assert info.value.argument == "check_precision"


def test_replica_sync_refuses_bad_periods():
    torch = pytest.importorskip("torch")
    from gcsim.executor.replicas import ReplicaSync

    for kw, argument in (({"resync_every": 0}, "resync_every"), ({"measure_every": -1}, "measure_every")):
        with pytest.raises(InvalidArgumentError) as info:
            ReplicaSync(torch.nn.Linear(2, 1), **kw)
        assert info.value.argument == argument
    with pytest.raises(InvalidArgumentError) as info:
        ReplicaSync(object(), 3)
    assert info.value.argument == "module"


# ----------------------------------------------------------------------------------------------
# gloo: drift and re-synchronisation
# ----------------------------------------------------------------------------------------------


def _drift_job(rank, world_size, spec):
    """Train a tiny MLP with an approximate CERAR design, with and without re-synchronisation.

    Every step, every rank's parameters are gathered before and after ``ReplicaSync.step``.
    """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.executor.ddp_hook import register_cerar_hook
    from gcsim.executor.replicas import ReplicaSync

    def gathered(module):
        flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
        parts = [torch.empty_like(flat) for _ in range(world_size)]
        dist.all_gather(parts, flat)
        return torch.stack(parts).double().numpy()

    g = torch.Generator().manual_seed(1000 + rank)
    xs = torch.randn(spec["steps"], 8, 5, generator=g)
    ys = torch.randn(spec["steps"], 8, 1, generator=g)
    out = {"rank": rank}
    for name, every in (("resync", spec["K"]), ("free", None)):
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 1)))
        state = register_cerar_hook(model, spec["design"], overlap=False)
        sync = ReplicaSync(model, resync_every=every, measure_every=1)
        opt = torch.optim.SGD(model.parameters(), lr=0.2)
        before, after = [], []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for step in range(spec["steps"]):
                opt.zero_grad()
                torch.nn.functional.mse_loss(model(xs[step]), ys[step]).backward()
                opt.step()
                before.append(gathered(model.module))
                sync.step()
                after.append(gathered(model.module))
        out[name] = {
            "before": np.array(before),
            "after": np.array(after),
            "history": list(sync.history),
            "warned": any(issubclass(w.category, CerarPrecisionWarning) for w in caught),
            "wire_dtype": str(state.wire_dtype),
            "ratio": state.precision.ratio,
        }
    return out


def test_resync_makes_replicas_bit_identical_and_the_drift_is_reported(tmp_path):
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
        pytest.skip("torch.distributed with gloo is not available")
    from gcsim.cerar.export import export_design
    from gcsim.executor.launcher import launch

    N, K, steps = 3, 2, 5
    des = design(N, 6, "perturbation", eps=0.05)  # approximate: every rank decodes its own ĝ_i
    path = str(export_design(des, tmp_path, "drift"))
    res = launch(_drift_job, N, ({"design": path, "K": K, "steps": steps},), timeout=120).raise_on_failure()
    R = res.results
    for run in ("resync", "free"):
        before, after = R[0][run]["before"], R[0][run]["after"]
        for r in R[1:]:  # every rank gathered the same arrays
            np.testing.assert_array_equal(r[run]["before"], before)
        drift = np.abs(before - before[:, :1]).max(axis=(1, 2))  # per step: max over ranks and entries
        for r in R:
            hist = r[run]["history"]
            assert [h["step"] for h in hist] == list(range(1, steps + 1))
            assert [h["drift"] for h in hist] == drift.tolist()  # exact: float32 differences in float64
            assert [h["resynced"] for h in hist] == [run == "resync" and t % K == 0 for t in range(1, steps + 1)]
            # the design's expected error is far above float32's level: the hook warned, once per run
            assert r[run]["warned"] and r[run]["ratio"] > 10 and r[run]["wire_dtype"] == "torch.float32"
        for t in range(steps):
            same = bool((after[t] == after[t][0]).all())
            if run == "resync" and (t + 1) % K == 0:
                assert same, t  # bit-identical right after each re-synchronisation, equal to rank 0's
                np.testing.assert_array_equal(after[t][0], before[t][0])
            else:
                np.testing.assert_array_equal(after[t], before[t])  # no re-synchronisation: untouched
        assert drift[0] > 0  # an approximate design: the replicas differ after one step
    free = np.abs(R[0]["free"]["before"] - R[0]["free"]["before"][:, :1]).max(axis=(1, 2))
    assert free[-1] > 0 and not (R[0]["free"]["after"][-1] == R[0]["free"]["after"][-1][0]).all()
    del torch


def test_bandwidth_script_loads_designs_and_refuses_a_wrong_one(tmp_path, capsys):
    from gcsim.cerar.export import export_design
    from guards import load_script

    mod = load_script("scripts/bandwidth_experiment.py", "bandwidth_experiment")
    des = design(4, 8, "perturbation", eps=0.01)
    path = export_design(des, tmp_path, "mine")
    got = mod._loaded_designs([str(path)], 4)
    assert list(got) == ["cerar_mine"] and np.array_equal(got["cerar_mine"].encoders, des.encoders)
    with pytest.raises(SystemExit) as info:
        mod.main(["--workers", "3", "--design", str(path)])
    assert info.value.code == 2 and "--design: " in capsys.readouterr().err
