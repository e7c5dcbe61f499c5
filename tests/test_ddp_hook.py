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
            out["compute_dtype"] = str(state.compute_dtype)
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


@pytest.mark.parametrize("N", [3, 2])  # N = 2: one peer both ways, packets posted in pairs (tests/test_ring_of_two.py)
def test_ddp_hook_exact_design_matches_plain_allreduce(tmp_path, N):
    c, steps, lr = N, 3, 0.1
    des = design(N, c, "exact")
    path = export_design(des, tmp_path, f"hook{N}")
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
        # "auto": the exact design's coefficients are 0 or 1, so the hook computes in the wire dtype
        assert r["compute_dtype"] == "None"
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


class _Bucket:
    """What the hook reads of a DDP GradBucket."""

    def __init__(self, tensor, last=False):
        self._t, self._last = tensor, last

    def buffer(self):
        return self._t

    def is_last(self):
        return self._last


def _async_job(rank, world_size, spec):
    """Call the hook directly on a seeded bucket while rank 1 joins the ring ``delay`` s late."""
    import time

    from gcsim.executor.ddp_hook import CerarHookState, cerar_hook

    g = np.random.default_rng(spec["seed"]).standard_normal((world_size, spec["d"])).astype(np.float32)
    des = as_design(spec["design"])
    out = {}
    # overlapped (a bucket before the last), synchronous, and the last bucket with the thread idle
    for mode in (True, False, "last"):
        state = CerarHookState(design=des, compute_dtype=torch.float64, overlap=mode is not False)
        dist.barrier()
        if rank == 1:
            time.sleep(spec["delay"])
        buf = torch.tensor(g[rank])
        t0 = time.perf_counter()
        fut = cerar_hook(state, _Bucket(buf, last=mode == "last"))
        call = time.perf_counter() - t0
        done = fut.done()
        value = fut.wait()
        out[mode] = {
            "call": call,
            "done_at_return": done,
            "waited": time.perf_counter() - t0,
            "value": value.double().numpy(),
            "in_place": value is buf,
            "bytes": state.counter.sent,
        }
        state.close()

    class _Model:  # what register_cerar_hook needs of a DDP model
        def register_comm_hook(self, state, hook):
            pass

    out["auto"] = {
        name: str(register_cerar_hook(_Model(), d_).compute_dtype)
        for name, d_ in (("exact", des), ("perturbation", design(world_size, 5, "perturbation", eps=0.1)))
    }
    return out


def test_hook_future_completes_when_the_ring_does_not_before():
    N, c, d, delay = 3, 3, 10, 1.5
    des = design(N, c, "exact")
    spec = {
        "seed": 3,
        "d": d,
        "delay": delay,
        "design": {"N": N, "c": c, "encoders": des.encoders, "decoders": des.decoders},
    }
    R = launch(_async_job, N, (spec,), timeout=120).raise_on_failure().results
    g = np.random.default_rng(3).standard_normal((N, d)).astype(np.float32).astype(np.float64)
    mean = g.sum(axis=0) / N
    ring = _cerar_avg_tol(des, g, N)  # per rank: the hook's float32 bound
    mean_tol = dot_tol(N + 1, np.abs(g).sum(axis=0)) / N  # the float64 reference mean
    for r in (0, 2):  # the ranks that did not sleep
        on, off, last = R[r][True], R[r][False], R[r]["last"]
        # overlapped: the hook returned at once with a pending future, which completed only after
        # rank 1 joined (delay); synchronous, and the last bucket with the thread idle: the hook
        # itself waited and returned a completed one
        assert on["call"] < delay / 2 and not on["done_at_return"] and on["waited"] > delay / 2
        assert off["done_at_return"] and off["call"] > delay / 2
        assert last["done_at_return"] and last["call"] > delay / 2
    for i, r in enumerate(R):
        for mode in (True, False, "last"):
            v = r[mode]["value"]
            assert np.all(np.abs(v - mean) <= ring[i] + mean_tol + SAFETY * unit_roundoff(np.float32) * np.abs(v))
            assert r[mode]["bytes"] == (c + N - 2) * (-(-d // c)) * 4
            assert r[mode]["in_place"]  # the average is written into DDP's bucket buffer
        # the thread changes when the ring runs, not its arithmetic
        np.testing.assert_array_equal(r[True]["value"], r[False]["value"])
        np.testing.assert_array_equal(r["last"]["value"], r[False]["value"])
        # compute_dtype="auto": the wire dtype for 0/1 coefficients, float64 for a dense design
        assert r["auto"] == {"exact": "None", "perturbation": "torch.float64"}


def _dying_training_job(rank, world_size, spec):
    import os

    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 1)))
    register_cerar_hook(model, spec["design"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        if step == 2 and rank == 1:
            os._exit(5)  # a ring member dies between two steps
        opt.zero_grad()
        model(torch.randn(8, 5)).sum().backward()  # waits for the hook's futures
        opt.step()
    return rank


def test_a_rank_dying_during_training_fails_its_neighbours_fast_naming_it():
    import time

    des = design(3, 3, "exact")
    spec = {"design": {"N": 3, "c": 3, "encoders": des.encoders, "decoders": des.decoders}}
    t0 = time.monotonic()
    res = launch(_dying_training_job, 3, (spec,), timeout=120)
    assert time.monotonic() - t0 < 60  # not the 120 s timeout: the error reached backward
    assert res.died == [1] and not res.stalled and set(res.errors) == {0, 2}
    # the communication thread's RingFailureError, re-raised by DDP in backward, names rank 1
    assert "receive from rank 1" in res.errors[2] and "send to rank 1" in res.errors[0]
    assert all("cerar_all_reduce: step" in res.errors[r] for r in (0, 2))


def test_overlap_argument_is_validated():
    class _Model:
        def register_comm_hook(self, state, hook):  # pragma: no cover - never reached
            raise AssertionError

    with pytest.raises(InvalidArgumentError, match="overlap"):
        register_cerar_hook(_Model(), design(3, 3, "exact"), overlap="yes")


def _two_models_job(rank, world_size, spec):
    """One backward through two DDP models hooked with CERAR on the same group, several buckets
    each (DDP rebuilds small buckets after the first step, so the communication thread runs):
    per step, this rank's local gradient (plain copies of both models) and DDP's averaged one."""
    import copy

    from torch.nn.parallel import DistributedDataParallel as DDP

    def make(seed):
        torch.manual_seed(seed)
        layers = []
        for _ in range(spec["layers"]):
            layers += [torch.nn.Linear(spec["width"], spec["width"]), torch.nn.Tanh()]
        return torch.nn.Sequential(*layers)

    def flat(tensors):
        return torch.cat([t.detach().reshape(-1) for t in tensors]).double().numpy()

    g = torch.Generator().manual_seed(1000 + rank)
    xs = torch.randn(spec["steps"], 8, spec["width"], generator=g)
    m1 = DDP(make(0), bucket_cap_mb=spec["cap_mb"])
    m2 = DDP(make(1), bucket_cap_mb=spec["cap_mb"])
    s1 = register_cerar_hook(m1, spec["design"])
    s2 = register_cerar_hook(m2, spec["design"])
    params = list(m1.module.parameters()) + list(m2.module.parameters())
    opt = torch.optim.SGD(list(m1.parameters()) + list(m2.parameters()), lr=0.05)
    local, avg = [], []
    for step in range(spec["steps"]):
        l1, l2 = copy.deepcopy(m1.module), copy.deepcopy(m2.module)
        loss = l2(l1(xs[step])).pow(2).mean()
        local.append(flat(torch.autograd.grad(loss, list(l1.parameters()) + list(l2.parameters()))))
        opt.zero_grad()
        m2(m1(xs[step])).pow(2).mean().backward()
        avg.append(flat(p.grad for p in params))
        opt.step()
    shared = s1._comm is not None and s1._comm is s2._comm
    s1.close()
    s2.close()
    return {"local": np.array(local), "avg": np.array(avg), "shared_thread": shared, "calls": s1.calls + s2.calls}


def test_two_hooked_models_in_one_backward_match_the_exact_mean(tmp_path):
    # each ring's packet k carries tag k: two models' rings running at once on one group paired
    # their packets (errors of the gradient's own size from the second step, silently); the hook
    # now queues every ring of a group on one thread, in the same order on every rank
    N = 4
    des = design(N, N, "exact")
    spec = {"design": str(export_design(des, tmp_path, "two")), "layers": 4, "width": 16, "cap_mb": 0.002, "steps": 4}
    R = launch(_two_models_job, N, (spec,), timeout=120).raise_on_failure().results
    u32 = unit_roundoff(np.float32)
    for t in range(spec["steps"]):
        G = np.stack([r["local"][t] for r in R])
        mean = G.sum(axis=0) / N
        mean_tol = dot_tol(N + 1, np.abs(G).sum(axis=0)) / N
        tols = _cerar_avg_tol(des, G, N)
        for i, r in enumerate(R):
            avg = r["avg"][t]
            tol = tols[i] + SAFETY * u32 * np.abs(avg) + mean_tol
            assert np.all(np.abs(avg - mean) <= tol), (t, i, np.abs(avg - mean).max())
    for r in R:
        assert r["shared_thread"]  # the thread ran (several buckets per model) and both states shared it
        assert r["calls"] > 2 * spec["steps"]  # more than one bucket per model and step
