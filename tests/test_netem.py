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


# ------------------------------------------------ TCP congestion control and port sharing (theory §56.11)


def test_congestion_commands_set_the_namespace_default():
    from gcsim.executor.netem import congestion_commands

    assert congestion_commands("ns1", "reno") == [
        ["ip", "netns", "exec", "ns1", "sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"]
    ]
    assert congestion_commands("ns1", None) == []  # the namespace keeps what it inherited from the host


@pytest.mark.parametrize("bad", ["BBR", "cu bic", "", 3, "x" * 17])
def test_congestion_malformed_is_refused_by_name(bad):
    with pytest.raises(InvalidArgumentError, match="congestion"):
        NetemTopology(2, congestion=bad)


def test_congestion_unknown_or_restricted_is_refused_by_name(monkeypatch):
    import gcsim.executor.netem as netem

    lists = {netem._AVAILABLE_CC: ("reno", "cubic", "bbr"), netem._ALLOWED_CC: ("reno", "bbr")}
    monkeypatch.setattr(netem, "_read_list", lists.get)
    assert netem.available_congestion() == ("reno", "bbr")
    with pytest.raises(InvalidArgumentError, match="congestion.*'vegas' is not in this kernel"):
        NetemTopology(2, congestion="vegas")
    # the kernel lets a namespace other than the host's take only an allowed algorithm (EPERM otherwise)
    with pytest.raises(InvalidArgumentError, match="congestion.*'cubic' is restricted.*usable here: reno, bbr"):
        NetemTopology(2, congestion="cubic")
    assert NetemTopology(2, congestion="bbr").congestion == "bbr"
    monkeypatch.setattr(netem, "_read_list", lambda path: None)  # not Linux: nothing to check against
    assert netem.available_congestion() is None and NetemTopology(2, congestion="cubic").congestion == "cubic"


def test_sharing_is_checked_and_recorded():
    with pytest.raises(InvalidArgumentError, match="sharing"):
        NetemTopology(2, sharing="wfq")
    settings = NetemTopology(3, "20mbit", delay="10ms", congestion="reno", sharing="fair").link_settings()
    assert settings == {
        "rate": "20mbit",
        "tbf_burst": 32768,
        "delay": "10ms",
        "delay_backend": None,  # decided when the topology is entered
        "congestion": "reno",
        "congestion_used": None,
        "sharing": "fair",
    }
    assert NetemTopology(2, rate=None).link_settings()["tbf_burst"] is None


def test_fair_sharing_commands_one_queue_per_peer():
    from gcsim.executor.netem import NETEM_LIMIT, shaping_commands

    addrs = ["10.213.0.1", "10.213.0.2", "10.213.0.3"]
    plain = shaping_commands("ns", "eth0", "100mbit", None)
    fair = shaping_commands("ns", "v0", "100mbit", None, fair=("src", addrs))
    tbf = plain[0][plain[0].index("tbf") :]
    assert fair[0][-len(tbf) :] == tbf  # the same token bucket, now with a handle for the queues below it
    tc = [c[4:] for c in fair[1:]]
    assert tc[0] == ["tc", "qdisc", "add", "dev", "v0", "parent", "10:1", "handle", "20:", "htb", "default", "ff"]
    classes = [c[c.index("classid") + 1] for c in tc if "class" in c]
    assert classes == ["20:ff", "20:1", "20:2", "20:3"]
    leaves = [c for c in tc if "pfifo" in c]
    assert len(leaves) == 4 and all(c[-2:] == ["limit", str(NETEM_LIMIT)] for c in leaves)
    filters = [c for c in tc if "filter" in c]
    want = [(a + "/32", f"20:{k + 1}") for k, a in enumerate(addrs)]
    assert [(f[f.index("src") + 1], f[-1]) for f in filters] == want
    # with netem delay the token bucket is netem's child, and the queues hang below it alike
    delayed = shaping_commands("ns", "eth0", "100mbit", "1ms", fair=("dst", addrs))
    assert delayed[1][4:10] == ["tc", "qdisc", "add", "dev", "eth0", "parent"] and "10:" in delayed[1]
    assert delayed[2][4:] == tc[0][:4] + ["eth0", *tc[0][5:]]
    with pytest.raises(InvalidArgumentError, match="fair"):
        shaping_commands("ns", "eth0", "100mbit", None, fair=("port", addrs))


@pytest.mark.skipif(not _OK, reason=f"network emulation not available: {_WHY}")
def test_congestion_and_fair_queues_are_set_in_the_namespaces():
    import gcsim.executor.netem as netem

    with open(netem._CC_SYSCTL_PATH) as fh:
        host = fh.read().strip()
    with NetemTopology(2, "100mbit", prefix="gcsim-cctest") as topo:
        assert topo.congestion_used == host  # inherited, and recorded
    with NetemTopology(2, "100mbit", congestion="reno", sharing="fair", prefix="gcsim-cctest") as topo:
        assert topo.congestion_used == "reno" and topo.link_settings()["congestion_used"] == "reno"
        got = subprocess.run(
            ["ip", "netns", "exec", topo.netns[1], "sysctl", "-n", "net.ipv4.tcp_congestion_control"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert got == "reno"
        classes = subprocess.run(["tc", "-n", topo.hub, "class", "show", "dev", "v1"], capture_output=True, text=True)
        assert "htb 20:1 " in classes.stdout and "htb 20:2 " in classes.stdout
    with open(netem._CC_SYSCTL_PATH) as fh:
        assert fh.read().strip() == host  # the host's own setting is untouched
