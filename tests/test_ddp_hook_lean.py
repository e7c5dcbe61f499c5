"""The lean CERAR schedule in the DDP hook (issue #31; theory §51.4): outputs and measured peak storage.

One launch of 3 gloo ranks: each rank runs one backward of the same MLP (one DDP bucket of 50
parameters) through the hook with the default schedule and with ``schedule="lean"``, for two
exact designs (c = N = 3 with a partial last component; roots of unity c = 2, full components).
The outputs are compared within the sum of two proved bounds (test_cerar_lean.lean_bound and
executor_tolerances.cerar_output_tol, taken at each rank's largest gradient entry, since DDP's
bucket layout decides which entries share a component), the storage with the count of §51.4:
the bucket itself plus ``min(N, c - 1) + 2`` packets of ``ceil(d/c)`` scalars (and the padded
copy of a partial last component), ``c + N + 2`` packets at most.
"""

import numpy as np
import pytest

from executor_tolerances import cerar_output_tol
from gcsim.catalogue.named import resolve_design
from gcsim.cerar.factory import design
from gcsim.errors import InvalidArgumentError
from gcsim.executor.ddp_hook import make_hook_state
from gcsim.executor.launcher import launch
from test_cerar_lean import lean_bound
from tolerances import SAFETY, unit_roundoff

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

FEATURES, HIDDEN = 5, 7
P = FEATURES * HIDDEN + HIDDEN + HIDDEN + 1  # the MLP's parameters: one DDP bucket


def _lean_hook_job(rank, world_size, spec):
    """Per design: this rank's local gradient, then DDP's averaged gradient with either schedule."""
    import copy

    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.executor.ddp_hook import register_cerar_hook

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    g = torch.Generator().manual_seed(100 + rank)
    x, y = torch.randn(8, FEATURES, generator=g), torch.randn(8, 1, generator=g)

    def flat(tensors):
        return torch.cat([t.detach().reshape(-1) for t in tensors]).double().numpy()

    local = copy.deepcopy(net)
    out = {"local": flat(torch.autograd.grad(torch.nn.functional.mse_loss(local(x), y), list(local.parameters())))}
    for name, (c, method) in spec["designs"].items():
        des = design(world_size, c, method)
        for schedule in ("default", "lean"):
            model = DDP(copy.deepcopy(net))
            # compute_dtype None: both schedules encode and decode in float32, the wire dtype
            state = register_cerar_hook(model, des, schedule=schedule, compute_dtype=None)
            torch.nn.functional.mse_loss(model(x), y).backward()
            out[name, schedule] = {
                "avg": flat(p.grad for p in model.module.parameters()),
                "calls": state.calls,
                "sent": state.counter.sent,
                "peak_bytes": state.peak_bytes,
                "peak_packets": state.peak_packets,
            }
            state.close()
    return out


def test_lean_hook_equals_the_default_hook_to_round_off_and_holds_few_packets():
    designs = {"exact3": (3, "exact"), "roots2": (2, "exact")}
    N = 3
    R = launch(_lean_hook_job, N, ({"designs": designs},), timeout=120).raise_on_failure().results
    G = np.stack([r["local"] for r in R])  # (N, P): float32 values
    u32 = unit_roundoff(np.float32)
    for name, (c, method) in designs.items():
        des = design(N, c, method)
        w = -(-P // c)
        # a uniform magnitude per rank bounds every entry whatever the bucket's layout (the bounds grow with |g|)
        Gmax = np.repeat(np.abs(G).max(axis=1, keepdims=True), P, axis=1)
        ring = lean_bound(des.encoders, des.decoders, Gmax, np.float32) + cerar_output_tol(
            des.encoders, des.decoders, Gmax, np.float32
        )
        for i, r in enumerate(R):
            lean, default = r[name, "lean"], r[name, "default"]
            assert lean["calls"] == default["calls"] == 1  # one bucket
            # the same packets on the wire: L of w float32 scalars
            assert lean["sent"] == default["sent"] == (c + N - 2) * w * 4
            # both divide by N (one rounding each)
            tol = SAFETY * ring[i].max() / N + 2 * u32 * np.maximum(np.abs(lean["avg"]), np.abs(default["avg"]))
            assert np.all(np.abs(lean["avg"] - default["avg"]) <= tol), (name, i)
            assert tol.max() < 1e-3 * np.abs(default["avg"]).max()  # not vacuous: far below the gradient
            # storage (theory §51.4): the bucket, the padded copy of a partial last component, the
            # min(N, c - 1) own symbols kept, the packet sent and the packet received
            expected = 4 * (P + (w if c * w != P else 0) + (min(N, c - 1) + 2) * w)
            assert lean["peak_bytes"] == expected, (name, lean["peak_bytes"], expected)
            assert lean["peak_packets"] == expected / (4 * w)
            assert lean["peak_packets"] <= c + N + 2 + (1 if c * w != P else 0)
            assert default["peak_bytes"] == 0 and default["peak_packets"] == 0.0  # measured by the lean ring only


def test_lean_hook_state_is_validated():
    lean = make_hook_state(design(3, 3, "exact"), schedule="lean")
    assert lean.schedule == "lean" and lean.compute_dtype is None
    assert make_hook_state(design(3, 5, "perturbation", eps=0.01), schedule="lean").compute_dtype is None
    with pytest.raises(InvalidArgumentError, match="schedule: must be one of"):
        make_hook_state(design(3, 3, "exact"), schedule="fast")
    with pytest.raises(InvalidArgumentError, match="compute_dtype: schedule='lean' encodes and decodes"):
        make_hook_state(design(3, 3, "exact"), schedule="lean", compute_dtype="float64")
    with pytest.raises(InvalidArgumentError, match="lean"):  # outside the shift pattern (theory §51.4)
        make_hook_state(resolve_design("cerar/optimized_N4_c8_kappa10"), schedule="lean")
