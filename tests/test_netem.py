"""Low-bandwidth emulation: namespaces + veth + tc (root only; skipped with the reason otherwise)."""

import subprocess

import numpy as np
import pytest

from gcsim.errors import InvalidArgumentError
from gcsim.executor.netem import NetemTopology, netem_available, parse_rate


@pytest.mark.parametrize("text,bps", [("100mbit", 1e8), ("1gbit", 1e9), ("500kbit", 5e5), ("2.5mbit", 2.5e6)])
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("bad", ["fast", "10 MB", "0mbit", ""])
def test_parse_rate_rejects(bad):
    with pytest.raises(InvalidArgumentError, match="rate"):
        parse_rate(bad)


def test_topology_arguments_are_validated():
    with pytest.raises(InvalidArgumentError, match="N"):
        NetemTopology(0)
    with pytest.raises(InvalidArgumentError, match="delay"):
        NetemTopology(2, delay="soon")
    with pytest.raises(InvalidArgumentError, match="prefix"):
        NetemTopology(2, prefix="a b/c")


_OK, _WHY = netem_available()


@pytest.mark.skipif(not _OK, reason=f"network emulation not available: {_WHY}")
@pytest.mark.distributed
def test_ring_in_rate_limited_namespaces():
    torch = pytest.importorskip("torch")  # noqa: F841
    from gcsim.cerar.factory import design
    from gcsim.executor.experiments import run_collectives

    rate = 20e6  # 20 Mbit/s per link direction
    d = 1 << 15  # float32: ring sends 2(N-1)ceil(d/N)4 = 128 KiB
    with NetemTopology(2, rate="20mbit", prefix="gcsim-test") as topo:
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert all(ns in listed for ns in topo.netns)
        res = run_collectives(
            2,
            d,
            designs={"c2": design(2, 2, "exact")},
            algorithms=["ring", "c2"],
            repeats=1,
            timeout=60,
            **topo.launch_kwargs(),
        )
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "gcsim-test" not in listed  # everything was removed
    S = res["summary"]
    # float32 gradients of seed 0 (run_collectives' default): the own ring sums 2 terms, the exact
    # CERAR design c = N = 2 runs the ring's encode / 2L additions / decode, each within its
    # float32 rounding bound of the exact sum (tests/executor_tolerances.py)
    from executor_tolerances import cerar_output_tol, relative_tol, sum_tol

    g = np.random.default_rng(0).standard_normal((2, d)).astype(np.float32).astype(np.float64)
    total = g.sum(axis=0)
    des = design(2, 2, "exact")
    ctol = cerar_output_tol(des.encoders, des.decoders, g, np.float32).reshape(2, -1)[:, :d].max(axis=0)
    assert S["ring"]["max_rel_error"] <= relative_tol(sum_tol(g, np.float32) + sum_tol(g), total)
    assert S["c2"]["max_rel_error"] <= relative_tol(ctol + sum_tol(g), total)
    bits = S["ring"]["bytes_sent"][0] * 8
    assert bits == 2 * 1 * (d // 2) * 4 * 8
    # the shaped link cannot be faster than its rate: at most one token-bucket burst (32 KiB, as
    # NetemTopology sets it) can pass at once; the 10 % accounts for tc's rate granularity
    # (a timing tolerance, not a floating-point one)
    burst_bits = 32 * 1024 * 8
    assert S["ring"]["seconds"] >= 0.9 * (bits - burst_bits) / rate


def test_close_never_raises_and_tries_every_namespace(monkeypatch):
    # a hung or missing `ip` during cleanup must neither hide the original error nor stop the
    # deletion of the other namespaces
    import gcsim.executor.netem as netem

    tried = []

    def failing_run(cmd, **kw):
        tried.append(cmd[-1])
        raise subprocess.TimeoutExpired(cmd, kw.get("timeout", 0))

    topo = NetemTopology(2, prefix="gcsim-closetest")
    topo._created = ["a", "b", "c"]
    monkeypatch.setattr(netem.subprocess, "run", failing_run)
    topo.close()
    assert tried == ["c", "b", "a"] and topo._created == []


@pytest.mark.skipif(not _OK, reason=f"network emulation not available: {_WHY}")
def test_unlimited_topology_has_no_rate_limit():
    with NetemTopology(2, rate="unlimited", prefix="gcsim-unl") as topo:
        assert topo.rate == "unlimited" and topo.rate_bps == float("inf")
        qdiscs = subprocess.run(
            ["ip", "netns", "exec", topo.netns[0], "tc", "qdisc", "show", "dev", topo.ifname],
            capture_output=True,
            text=True,
        ).stdout
        assert "tbf" not in qdiscs
    assert NetemTopology(2, rate=None).rate == "unlimited"
