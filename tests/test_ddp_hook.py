"""DDP communication hook running a CERAR design: training matches plain DDP for exact designs."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from gcsim.cerar.constructions import design
from gcsim.cerar.export import export_design
from gcsim.errors import InvalidArgumentError
from gcsim.executor.ddp_hook import ddp_compare_job
from gcsim.executor.torchdist import _as_design, launch


def test_ddp_hook_exact_design_matches_plain_allreduce(tmp_path):
    N, c, steps = 3, 3, 3
    path = export_design(design(N, c, "exact"), tmp_path, "hook3")
    spec = {"seed": 0, "features": 5, "hidden": 7, "steps": steps, "batch": 8, "lr": 0.1, "design": str(path)}
    res = launch(ddp_compare_job, N, (spec,), timeout=90).raise_on_failure()
    P = 5 * 7 + 7 + 7 * 1 + 1                          # parameters of the MLP = one DDP bucket
    start = None
    for r in res.results:
        np.testing.assert_allclose(r["cerar"], r["plain"], rtol=0, atol=1e-5)
        np.testing.assert_array_equal(r["plain"], res.results[0]["plain"])   # DDP replicas agree
        assert np.max(np.abs(r["cerar"] - res.results[0]["cerar"])) < 1e-6
        # one hook call per step, each L * ceil(P/c) float32 packets
        assert r["hook_calls"] == steps
        assert r["hook_bytes"] == steps * (c + N - 2) * (-(-P // c)) * 4
    # training actually moved the parameters (the comparison is not vacuous)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 1))
    start = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).double().numpy()
    assert np.max(np.abs(res.results[0]["plain"] - start)) > 1e-3


def test_design_argument_is_validated(tmp_path):
    with pytest.raises(InvalidArgumentError, match="design"):
        _as_design(42)
    d = _as_design({"N": 3, "c": 2, "encoders": design(3, 2, "exact").encoders,
                    "decoders": design(3, 2, "exact").decoders})
    assert (d.N, d.c) == (3, 2)
