"""The lean CERAR schedule in the torch ring (gloo): peak storage per rank and outputs (theory §51.4).

Each launch starts a few processes (about 1 s each), so there are two, of 3 and 4 ranks; every
launch has a timeout, so a dead rank fails the test instead of hanging it.  The outputs are
compared with the default schedule within the sum of two proved bounds (test_cerar_lean.lean_bound
and executor_tolerances.cerar_output_tol), the storage with c + N + 2 packets of ceil(d/c) scalars.
"""

from __future__ import annotations

import numpy as np
import pytest

from executor_tolerances import cerar_output_tol
from gcsim.cerar.factory import design
from gcsim.cerar.traffic import cerar_bytes
from gcsim.executor.launcher import launch
from test_cerar_lean import lean_bound

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)


def _lean_job(rank, world_size, spec):
    """Each case: the default ring on a copy, then the lean ring in place (out = the tensor) with a
    StorageMeter and a ByteCounter; returns both outputs, the peak and the bytes."""
    from gcsim.errors import InvalidArgumentError
    from gcsim.executor.collectives import ByteCounter, StorageMeter, cerar_all_reduce

    out = {}
    for name, (c, method, d) in spec["cases"].items():
        des = design(world_size, c, method)
        g = np.random.default_rng(spec["seed"] + c).standard_normal((world_size, d)).astype(np.float32)
        default = cerar_all_reduce(torch.tensor(g[rank]), des).numpy()
        meter, cnt = StorageMeter(), ByteCounter()
        buf = torch.tensor(g[rank])
        res = cerar_all_reduce(buf, des, schedule="lean", meter=meter, counter=cnt, out=buf)
        out[name] = {
            "default": default,
            "lean": res.numpy().copy(),
            "in_place": res is buf,
            "peak_bytes": meter.peak_bytes,
            "packet_bytes": meter.packet_bytes,
            "probes": meter.probes,
            "sent": cnt.sent,
            "received": cnt.received,
        }
    # refused before any packet moves (every rank refuses alike: nothing to hang on)
    try:
        cerar_all_reduce(torch.ones(8), design(world_size, 3, "exact"), schedule="lean", compute_dtype=torch.float64)
    except InvalidArgumentError as exc:
        out["refused"] = str(exc)
    return out


def _check(R, N, cases, seed):
    for name, (c, method, d) in cases.items():
        des = design(N, c, method)
        w, L = -(-d // c), c + N - 2
        g = np.random.default_rng(seed + c).standard_normal((N, d)).astype(np.float32).astype(np.float64)
        tol = lean_bound(des.encoders, des.decoders, g, np.float32).reshape(N, -1)[:, :d]
        tol = tol + cerar_output_tol(des.encoders, des.decoders, g, np.float32).reshape(N, -1)[:, :d]
        for i, r in enumerate(R):
            x = r[name]
            assert x["in_place"]
            assert np.all(np.abs(x["lean"] - x["default"]) <= tol[i]), (name, i)
            # the same packets on the wire: L of w scalars
            assert x["sent"] == x["received"] == cerar_bytes(N, c, d, 4) == L * w * 4
            assert x["packet_bytes"] == 4 * w and x["probes"] == 2 * L
            # storage: the acceptance bound, and the count of Proposition 7 (the state is the
            # caller's tensor, d scalars; a partial last component adds its padded copy, w)
            assert x["peak_bytes"] <= (c + N + 2) * w * 4 + (w * 4 if d % w else 0)
            expected = 4 * (d + (w if c * w != d else 0) + (min(N, c - 1) + 2) * w)
            assert x["peak_bytes"] == expected, (name, x["peak_bytes"], expected)
        assert "compute_dtype" in R[0]["refused"]


def test_lean_ring_three_ranks():
    cases = {"exact3": (3, "exact", 30), "roots2": (2, "exact", 21)}  # unit vectors; roots of unity (3, 2)
    R = launch(_lean_job, 3, ({"cases": cases, "seed": 4},), timeout=120).raise_on_failure().results
    _check(R, 3, cases, 4)


def test_lean_ring_four_ranks():
    cases = {"exact4": (4, "exact", 40), "exact2": (2, "exact", 41)}  # c = N; c | N with a partial component
    R = launch(_lean_job, 4, ({"cases": cases, "seed": 9},), timeout=120).raise_on_failure().results
    _check(R, 4, cases, 9)
