"""DDP communication hook running a CERAR design: training matches plain DDP for exact designs.

Every comparison is against the exact mean of the ranks' local gradients, within a derived
rounding bound (float32 wire; tests/tolerances.py, Higham 2002).
"""

import numpy as np
import pytest

from gcsim.cerar.export import export_design
from gcsim.cerar.factory import design
from gcsim.errors import InvalidArgumentError
from gcsim.executor.collectives import as_design
from gcsim.executor.ddp_hook import register_cerar_hook
from gcsim.executor.launcher import launch
from tolerances import SAFETY, dot_tol, unit_roundoff

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)


def _record_job(rank, world_size, spec):
    """Train the same tiny MLP with plain DDP and with DDP + CERAR hook; record, per step, this
    rank's parameters, its local gradient (from a plain copy of the model) and the averaged
    gradient DDP leaves in ``p.grad`` (the hook's output for the CERAR run)."""
    import copy

    from torch.nn.parallel import DistributedDataParallel as DDP

    def make():
        torch.manual_seed(spec["seed"])
        return torch.nn.Sequential(
            torch.nn.Linear(spec["features"], spec["hidden"]), torch.nn.Tanh(), torch.nn.Linear(spec["hidden"], 1)
        )

    def flat(tensors):
        return torch.cat([t.detach().reshape(-1) for t in tensors]).double().numpy()

    g = torch.Generator().manual_seed(1000 + rank)
    xs = torch.randn(spec["steps"], spec["batch"], spec["features"], generator=g)
    ys = torch.randn(spec["steps"], spec["batch"], 1, generator=g)
    out = {"rank": rank}
    for name in ("plain", "cerar"):
        model = DDP(make())
        state = register_cerar_hook(model, spec["design"]) if name == "cerar" else None
        opt = torch.optim.SGD(model.parameters(), lr=spec["lr"])
        rec = {"theta": [], "local": [], "avg": []}
        for step in range(spec["steps"]):
            rec["theta"].append(flat(model.module.parameters()))
            local = copy.deepcopy(model.module)
            loss = torch.nn.functional.mse_loss(local(xs[step]), ys[step])
            rec["local"].append(flat(torch.autograd.grad(loss, list(local.parameters()))))
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xs[step]), ys[step]).backward()
            rec["avg"].append(flat(p.grad for p in model.module.parameters()))
            opt.step()
        rec["theta"].append(flat(model.module.parameters()))
        out[name] = {k: np.array(v) for k, v in rec.items()}
        if state is not None:
            out["hook_bytes"] = state.counter.sent
            out["hook_calls"] = state.calls
    return out


def _cerar_avg_tol(des, G, N):
    """Bound on |hook output − exact mean| (one scalar per rank), float32 wire and result.

    The ring's bound (encode c terms, 2L additions, decode L+1 terms: K = c + 2L + 2, Higham
    Lemma 3.3) on terms of size |G_i| + rowsum|D_i| · Σ_j Σ_rows |A_j||G_j|, taken at the largest
    entry since DDP's bucket layout assigns entries to components; then the division by N.
    """
    c, L = des.c, des.L
    gmax = np.abs(G).max(axis=1)  # per rank
    V = sum(np.abs(des.encoders[j]).sum() * gmax[j] for j in range(N))
    scale = gmax + np.abs(des.decoders).sum(axis=2).max(axis=1) * V
    return dot_tol(c + 2 * L + 2, scale, np.float32) / N


def _plain_avg_tol(G, N):
    """Bound on |DDP's average − exact mean|: a float32 sum of N terms, then the division."""
    return dot_tol(N, np.abs(G).sum(axis=0), np.float32) / N


def test_ddp_hook_exact_design_matches_plain_allreduce(tmp_path):
    N, c, steps, lr = 3, 3, 3, 0.1
    des = design(N, c, "exact")
    path = export_design(des, tmp_path, "hook3")
    spec = {"seed": 0, "features": 5, "hidden": 7, "steps": steps, "batch": 8, "lr": lr, "design": str(path)}
    res = launch(_record_job, N, (spec,), timeout=120).raise_on_failure()
    P = 5 * 7 + 7 + 7 * 1 + 1  # parameters of the MLP = one DDP bucket
    u32 = unit_roundoff(np.float32)
    R = res.results
    bounds = {"plain": [], "cerar": []}
    for run in ("plain", "cerar"):
        for t in range(steps):
            G = np.stack([r[run]["local"][t] for r in R])  # (N, P) local gradients, float32 values
            mean = G.sum(axis=0) / N  # float64: exact but for γ_N u64
            mean_tol = dot_tol(N + 1, np.abs(G).sum(axis=0)) / N
            for i, r in enumerate(R):
                avg = r[run]["avg"][t]
                tol = _plain_avg_tol(G, N) if run == "plain" else _cerar_avg_tol(des, G, N)[i]
                tol = tol + SAFETY * u32 * np.abs(avg) + mean_tol
                assert np.all(np.abs(avg - mean) <= tol), (run, t, i)
                bounds[run].append(tol)
    # one hook call per step, each L * ceil(P/c) float32 packets
    for r in R:
        assert r["hook_calls"] == steps
        assert r["hook_bytes"] == steps * (c + N - 2) * (-(-P // c)) * 4
        np.testing.assert_array_equal(r["plain"]["theta"][-1], R[0]["plain"]["theta"][-1])  # DDP replicas agree
        # step 1 starts from the same parameters and data in both runs
        np.testing.assert_array_equal(r["cerar"]["local"][0], r["plain"]["local"][0])
        # so after one SGD step θ − lr·avg (two float32 roundings per entry) the runs differ by at
        # most lr times both averages' bounds plus those roundings
        th0, a_c, a_p = r["plain"]["theta"][0], r["cerar"]["avg"][0], r["plain"]["avg"][0]
        i = r["rank"]
        step_tol = lr * (bounds["cerar"][i] + bounds["plain"][i]) + 2 * dot_tol(
            2, np.abs(th0) + lr * np.maximum(np.abs(a_c), np.abs(a_p)), np.float32
        )
        assert np.all(np.abs(r["cerar"]["theta"][1] - r["plain"]["theta"][1]) <= step_tol)
    # CERAR replicas decode the same sum each step: they drift apart by at most the sum over the
    # steps of lr · (both ranks' bounds) and the update roundings
    for r in R[1:]:
        drift_tol = sum(
            lr * (bounds["cerar"][t * N] + bounds["cerar"][t * N + r["rank"]])
            + 2 * dot_tol(2, np.abs(r["cerar"]["theta"][t]) + lr * np.abs(r["cerar"]["avg"][t]), np.float32)
            for t in range(steps)
        )
        assert np.all(np.abs(r["cerar"]["theta"][-1] - R[0]["cerar"]["theta"][-1]) <= drift_tol)
    # training actually moved the parameters, by more than the round-off bounds (not vacuous)
    moved = np.abs(R[0]["plain"]["theta"][-1] - R[0]["plain"]["theta"][0])
    assert moved.max() > step_tol.max()


def test_design_argument_is_validated(tmp_path):
    with pytest.raises(InvalidArgumentError, match="design"):
        as_design(42)
    d = as_design(
        {"N": 3, "c": 2, "encoders": design(3, 2, "exact").encoders, "decoders": design(3, 2, "exact").decoders}
    )
    assert (d.N, d.c) == (3, 2)
