"""The link experiment's machinery (issue #32 item 5): latency, seeds, the 5 M-parameter model.

Nothing here depends on timing.  The ``tc`` commands are checked against hand-written ones; the
intervals over seeds against SciPy's Student-t quantile and the standard library's standard
deviation; the summary's ratios against exact rationals; the large model's parameter count against
torch's own count; the multi-seed launch against single-seed launches of the same seed (bit for
bit), and, where emulated links are allowed (root), a run behind a link with delay against the
same run without one (bit for bit: the link changes the time, not the arithmetic).
"""

import statistics
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from gcsim.errors import InvalidArgumentError
from gcsim.executor.netdelay import nfqueue_available
from gcsim.executor.netem import NETEM_LIMIT, netem_available, netem_delay_supported, shaping_commands

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")

from gcsim.learning.cerar_training import (  # noqa: E402
    BIG_WIDTH,
    LINKS,
    VARIANTS,
    Evaluator,
    conv_net,
    load_experiment_data,
    n_parameters,
    run_key,
    run_link,
    seed_interval,
    summarize_links,
    theta_digest,
    timing_row,
    verdict,
)

_OK, _WHY = netem_available()
PREFIX = ["ip", "netns", "exec", "ns", "tc", "qdisc", "add", "dev", "eth0"]


# ---------------------------------------------------------------------------------------------
# tc commands
# ---------------------------------------------------------------------------------------------


def test_shaping_commands_rate_and_delay():
    cmds = shaping_commands("ns", "eth0", "20mbit", "10ms")
    assert cmds == [
        PREFIX + ["root", "handle", "1:", "netem", "delay", "10ms", "limit", str(NETEM_LIMIT)],
        # 20 Mbit/s / 8 / 250 = 10,000 bytes a tick, below the 32 kB floor
        PREFIX + ["parent", "1:1", "handle", "10:", "tbf", "rate", "20mbit", "burst", "32768", "latency", "1s"],
    ]
    # 1 Gbit/s: one 4 ms tick of data is 500,000 bytes
    (only,) = shaping_commands("ns", "eth0", "1gbit", None)
    assert only == PREFIX + ["root", "tbf", "rate", "1gbit", "burst", "500000", "latency", "1s"]
    assert shaping_commands("ns", "eth0", None, "1ms") == [
        PREFIX + ["root", "netem", "delay", "1ms", "limit", str(NETEM_LIMIT)]
    ]
    assert shaping_commands("ns", "eth0", None, None) == []


@pytest.mark.parametrize("rate,delay,name", [("100mbit", "soon", "delay"), ("fast", "1ms", "rate")])
def test_shaping_commands_refuse_bad_values_by_name(rate, delay, name):
    with pytest.raises(InvalidArgumentError, match=name):
        shaping_commands("ns", "eth0", rate, delay)


# ---------------------------------------------------------------------------------------------
# intervals over seeds and the summary
# ---------------------------------------------------------------------------------------------


def test_seed_interval_against_scipy():
    y = [1.18, 1.25, 1.09, 1.31]
    r = seed_interval(y)
    half = stats.t.ppf(0.975, 3) * statistics.stdev(y) / 2.0
    assert r["mean"] == pytest.approx(statistics.fmean(y), rel=1e-15)
    assert r["lo"] == pytest.approx(statistics.fmean(y) - half, rel=1e-13)
    assert r["hi"] == pytest.approx(statistics.fmean(y) + half, rel=1e-13)
    assert (r["min"], r["max"], r["n"]) == (1.09, 1.31, 4)
    one = seed_interval([2.0])
    assert one["lo"] == -np.inf and one["hi"] == np.inf  # one seed: no interval
    with pytest.raises(InvalidArgumentError, match="values"):
        seed_interval([])


def _timing(width, link, variant, seed, step):
    return {
        "parameters": n_parameters(width),
        "width": width,
        "link": link,
        "delay": "1ms",
        "variant": variant,
        "seed": seed,
        "step_median_s": step,
        "payload_bytes_per_step": None,
        "payload_formula_bytes_per_step": 6e6,
        "wire_bytes_per_step": 6.3e6,
        "load_before": 1.0 + seed,
        "load_after": 2.0 + seed,
    }


def test_summary_pairs_seeds_and_multiplies_steps_by_step_time():
    steps = {("ring", 0): 0.5, ("ring", 1): 0.6, ("ring", 2): 0.55, ("c16", 0): 0.4, ("c16", 1): 0.45, ("c16", 2): 0.5}
    hits = {("ring", 0): 30, ("ring", 1): 34, ("ring", 2): 32, ("c16", 0): 32, ("c16", 1): 30, ("c16", 2): 36}
    timing = [_timing(640, "100mbit", v, s, t) for (v, s), t in steps.items()]
    timing += [_timing(3200, "100mbit", v, s, 2 * t) for (v, s), t in steps.items()]  # no accuracy runs
    accuracy = [{"width": 640, "variant": v, "seed": s, "step_at_target": h} for (v, s), h in hits.items()]
    rows = {(r["width"], r["variant"]): r for r in summarize_links(timing, accuracy)}
    c16 = rows[(640, "c16")]

    # exact rationals, seed by seed: ring steps x ring step time / (variant steps x variant step time)
    def exact_time(v, s):
        return hits[(v, s)] * Fraction(str(steps[(v, s)]))

    ratios = [exact_time("ring", s) / exact_time("c16", s) for s in range(3)]
    assert c16["time_ratio"]["mean"] == pytest.approx(float(sum(ratios) / 3), rel=1e-14)
    assert c16["time_ratio"]["min"] == pytest.approx(float(min(ratios)), rel=1e-14)
    step_ratios = [Fraction(str(steps[("ring", s)])) / Fraction(str(steps[("c16", s)])) for s in range(3)]
    assert c16["step_ratio"]["mean"] == pytest.approx(float(sum(step_ratios) / 3), rel=1e-14)
    assert c16["steps_to_target"]["mean"] == pytest.approx(98 / 3, rel=1e-15)
    assert c16["time_to_target_s"]["max"] == pytest.approx(36 * 0.5, rel=1e-15)
    assert c16["verdict"] == verdict(c16["time_ratio"])
    # the ring is the baseline: its ratio to itself is not a measurement
    ring = rows[(640, "ring")]
    assert ring["time_ratio"] is None and ring["step_ratio"] is None and ring["verdict"] == "baseline"
    assert rows[(3200, "ring")]["step_ratio"] is None and rows[(3200, "ring")]["verdict"] == "baseline"
    assert c16["load_range"] == [1.0, 4.0] and c16["seeds"] == 3
    # the large model has no accuracy runs: per-step ratio only, said so in the verdict
    big = rows[(3200, "c16")]
    assert big["time_ratio"] is None and big["steps_to_target"] is None
    assert big["step_ratio"]["mean"] == pytest.approx(float(sum(step_ratios) / 3), rel=1e-14)
    assert big["verdict"].endswith("(per step)")
    # a seed that never reached the target: no time to target, said so
    accuracy[-1]["step_at_target"] = None
    rows = {(r["width"], r["variant"]): r for r in summarize_links(timing, accuracy)}
    assert rows[(640, "c16")]["time_to_target_s"] is None
    assert rows[(640, "c16")]["verdict"] == "target not reached"


def test_verdict_needs_the_whole_interval_on_one_side():
    assert verdict({"lo": 1.0001, "hi": 2.0}) == "CERAR sooner"
    assert verdict({"lo": 1.0, "hi": 2.0}) == "not shown"
    assert verdict({"lo": 0.2, "hi": 0.99}) == "ring sooner"


def test_timing_row_median_after_warmup_of_the_slowest_rank():
    a = [5.0, 0.3, 0.9, 0.4, 0.2]
    b = [5.1, 0.5, 0.1, 0.6, 0.3]
    runs = [
        {"step_seconds": x, "load": [0.5, 1.5], "tx_bytes": tx, "hook_bytes": 400, "bucket_elements": [100]}
        for x, tx in ((a, 1000), (b, 1200))
    ]
    cell = {"results": runs, "eval": {"final_acc": [0.9, 0.8], "final_drift_max_abs": 1e-3}}
    row = timing_row(cell, rate="20mbit", delay="10ms", label="exact c=4", c=4, N=4, seed=2, width=8, warmup=1)
    slowest = [max(x, y) for x, y in zip(a, b, strict=True)][1:]
    assert row["step_median_s"] == statistics.median(slowest) and row["timed_steps"] == 4
    assert row["payload_bytes_per_step"] == 400 / 5 and row["wire_bytes_per_step"] == 1100 / 5
    # exact c = N = 4: L = c + N - 2 = 6 packets of ceil(100 / 4) = 25 float32
    assert row["payload_formula_bytes_per_step"] == 6 * 25 * 4
    assert (row["load_before"], row["load_after"], row["delay"], row["seed"]) == (0.5, 1.5, "10ms", 2)
    with pytest.raises(InvalidArgumentError, match="warmup"):
        timing_row(cell, rate="20mbit", delay=None, label="ring", c=None, N=4, seed=0, width=8, warmup=5)


# ---------------------------------------------------------------------------------------------
# the models, the data and the plan
# ---------------------------------------------------------------------------------------------


def test_large_model_has_at_least_5m_parameters():
    assert sum(p.numel() for p in conv_net(BIG_WIDTH).parameters()) == n_parameters(BIG_WIDTH) == 5_057_610
    assert {t["width"] for t in LINKS["timing"]} == {640, BIG_WIDTH}
    assert len(LINKS["seeds"]) >= 3 and LINKS["delays"] == ["1ms", "10ms"]
    assert {t["rate"] for t in LINKS["timing"]} == {"20mbit", "100mbit", "1gbit"}
    assert all(v in VARIANTS for t in LINKS["timing"] for v in t["variants"])
    assert all(t["steps"] > LINKS["warmup"] for t in LINKS["timing"])


def _fake_mnist(path: Path, side: int = 28) -> Path:
    rng = np.random.default_rng(3)
    np.savez(
        path,
        x_train=rng.integers(0, 256, (40, side, side), dtype=np.uint8),
        y_train=rng.integers(0, 10, 40).astype(np.uint8),
        x_test=rng.integers(0, 256, (10, side, side), dtype=np.uint8),
        y_test=rng.integers(0, 10, 10).astype(np.uint8),
    )
    return path


def test_full_mnist_option_reads_local_files(tmp_path):
    path = _fake_mnist(tmp_path / "mnist.npz")
    data = load_experiment_data(mnist=path)
    assert (len(data.y_train), len(data.y_test)) == (40, 10)
    ev = Evaluator(8, mnist=path)
    assert ev.n_test == 10
    theta = np.concatenate([p.detach().numpy().ravel() for p in conv_net(8).parameters()])
    acc = ev.accuracy(theta)
    # independent: the same network's predictions, computed here
    net = conv_net(8)
    off = 0
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(theta[off : off + p.numel()]).reshape(p.shape))
            off += p.numel()
        x = torch.tensor(data.x_test, dtype=torch.float32).reshape(-1, 1, 28, 28)
        hits = int((net(x).argmax(1) == torch.tensor(data.y_test)).sum())
    assert acc == hits / 10
    with pytest.raises(InvalidArgumentError, match="mnist"):
        load_experiment_data(mnist=_fake_mnist(tmp_path / "small.npz", side=8))


def test_theta_digest_tells_bit_level_differences():
    a = np.linspace(0, 1, 100, dtype=np.float32)
    b = a.copy()
    b[7] = np.nextafter(b[7], np.float32(2))
    assert theta_digest(a) == theta_digest(a.copy()) != theta_digest(b)


# ---------------------------------------------------------------------------------------------
# tiny launches: several seeds in one launch, and a link with delay
# ---------------------------------------------------------------------------------------------

N, STEPS, WIDTH = 2, 4, 8
SPEC = {"seed": 0, "steps": STEPS, "batch": 8, "lr": 0.1, "momentum": 0.9, "width": WIDTH, "eval_every": 1}
SPEC.update(data_seed=0, per_class=20, drift_every=2)


def _launch(tmp_path, name, **kw):
    work = tmp_path / name
    work.mkdir()
    ev = Evaluator(WIDTH, data_seed=0, per_class=20)
    return run_link(
        kw.pop("rate", "local"), [("ring", None)], N=N, spec=kw.pop("spec", SPEC), work=work, evaluator=ev,
        timeout=120, **kw,
    )  # fmt: skip


@pytest.mark.distributed
def test_seeds_in_one_launch_equal_single_seed_launches(tmp_path):
    multi = _launch(tmp_path, "multi", netem=False, seeds=[0, 1])
    assert set(multi) == {("ring", 0), ("ring", 1)}
    single = _launch(tmp_path, "single", netem=False, spec={**SPEC, "seed": 1})
    d_multi, d_single = multi[("ring", 1)]["eval"]["digests"], single["ring"]["eval"]["digests"]
    assert d_multi == d_single  # every step of seed 1, bit for bit
    assert d_multi[STEPS] != multi[("ring", 0)]["eval"]["digests"][STEPS]  # another seed, another run
    # replica 0 evaluated at every step, the drift only where every replica saved (every 2 steps, the last)
    curve = multi[("ring", 0)]["eval"]["curve"]
    assert [r["step"] for r in curve] == list(range(STEPS + 1))
    assert [r["drift_max_abs"] is not None for r in curve] == [True, False, True, False, True]
    for cell in multi.values():
        assert all(len(r["load"]) == 2 for r in cell["results"])
    assert run_key("ring", 1) == "ring | seed 1"


def _delay_possible() -> tuple[bool, str]:
    if not _OK:
        return False, f"network emulation not available: {_WHY}"
    if netem_delay_supported():
        return True, ""
    ok, why = nfqueue_available()
    return ok, f"no sch_netem in this kernel and {why}"


@pytest.mark.distributed
@pytest.mark.skipif(not _delay_possible()[0], reason=_delay_possible()[1])
def test_a_link_with_delay_changes_the_time_not_the_arithmetic(tmp_path):
    spec = {**SPEC, "eval_every": STEPS, "drift_every": STEPS}
    shaped = _launch(tmp_path, "shaped", rate="100mbit", delay="10ms", spec=spec, port=29771)
    plain = _launch(tmp_path, "plain", netem=False, spec=spec)
    assert shaped["ring"]["eval"]["digests"] == plain["ring"]["eval"]["digests"]
    tx = [r["tx_bytes"] for r in shaped["ring"]["results"]]
    assert all(t is not None and t > 0 for t in tx)  # counted on the rank's own interface


# ---------------------------------------------------------------------------------------------
# the user-space delayer (kernels without sch_netem)
# ---------------------------------------------------------------------------------------------


def test_delayer_messages_against_hand_packed_netlink():
    import socket
    import struct

    from gcsim.executor import netdelay

    # the batch verdict: nlmsghdr (len 32, type NFNL_SUBSYS_QUEUE << 8 | VERDICT_BATCH = 0x303, flags
    # NLM_F_REQUEST), nfgenmsg (AF_UNSPEC, version 0, queue 5 big-endian), one 12-byte attribute
    # NFQA_VERDICT_HDR = 2 holding NF_ACCEPT = 1 and the packet id, both big-endian
    expected = struct.pack("=IHHII", 32, 0x303, 1, 0, 0) + bytes([0, 0, 0, 5]) + struct.pack("=HH", 12, 2)
    expected += (1).to_bytes(4, "big") + (123456).to_bytes(4, "big")
    assert netdelay.verdict_message(5, 123456) == expected
    cfg = netdelay.config_message(0)
    # NFQA_CFG_CMD: BIND (1), pad, AF_INET big-endian; NFQA_CFG_PARAMS: copy range 0, NFQNL_COPY_META (1)
    assert struct.pack("=HH", 8, 1) + bytes([1, 0]) + socket.AF_INET.to_bytes(2, "big") in cfg
    assert struct.pack("=HH", 9, 2) + bytes(4) + bytes([1]) + bytes(3) in cfg
    assert struct.pack("=HH", 8, 5) + (4).to_bytes(4, "big") in cfg  # NFQA_CFG_FLAGS: F_GSO
    # a netlink error in the answer is raised, naming the errno
    err = struct.pack("=IHHII", 36, 2, 0, 0, 0) + struct.pack("=i", -1) + bytes(16)
    with pytest.raises(OSError, match="nfnetlink_queue"):
        netdelay.parse_packet_ids(err)
    ok = struct.pack("=IHHII", 36, 2, 0, 0, 0) + struct.pack("=i", 0) + bytes(16)
    assert netdelay.parse_packet_ids(ok) == []


def test_delay_strings_and_the_backend_argument():
    from gcsim.executor.netem import NetemTopology, delay_seconds

    assert [delay_seconds(x) for x in ("1ms", "10ms", "250us", "0.5s")] == [1e-3, 1e-2, 2.5e-4, 0.5]
    with pytest.raises(InvalidArgumentError, match="delay"):
        delay_seconds("ten")
    with pytest.raises(InvalidArgumentError, match="delay_backend"):
        NetemTopology(2, delay="1ms", delay_backend="magic")


_ND_OK, _ND_WHY = nfqueue_available() if _OK else (False, _WHY)

_ECHO = """
import socket, sys, time
if sys.argv[1] == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 29790)); s.listen(1); print("listening", flush=True)
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while (d := c.recv(1)):
        c.sendall(d)
else:
    c = socket.create_connection((sys.argv[2], 29790)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(5):
        t = time.perf_counter(); c.sendall(b"x"); c.recv(1); rtts.append(time.perf_counter() - t)
    print(min(rtts))
"""


@pytest.mark.skipif(not _ND_OK, reason=f"the user-space delayer cannot run here: {_ND_WHY}")
def test_nfqueue_delay_holds_every_packet_at_least_the_delay(tmp_path):
    import subprocess
    import sys

    from gcsim.executor.netem import NetemTopology

    script = tmp_path / "echo.py"
    script.write_text(_ECHO)
    with NetemTopology(2, rate=None, delay="20ms", delay_backend="nfqueue", prefix="gcsim-ndtest") as topo:
        rules = subprocess.run(
            ["ip", "netns", "exec", topo.netns[1], "iptables-legacy", "-S", "INPUT"], capture_output=True, text=True
        ).stdout
        assert "-A INPUT -i eth0 -j NFQUEUE --queue-num 0" in rules
        server = subprocess.Popen(
            ["ip", "netns", "exec", topo.netns[1], sys.executable, str(script), "server"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "listening"
            out = subprocess.run(
                ["ip", "netns", "exec", topo.netns[0], sys.executable, str(script), "client", topo.addresses[1]],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            server.kill()
            server.wait()
        assert topo.delay_backend_used == "nfqueue"
    # a round trip crosses two links, each holding the packet 20 ms at the receiver: at least 40 ms
    assert float(out.stdout.strip()) >= 0.040
    assert len(topo.delay_stats) == 2 and all(s["packets"] > 0 and s["late_max_s"] >= 0 for s in topo.delay_stats)


def test_the_script_refuses_the_link_experiment_without_emulated_links(tmp_path, monkeypatch, capsys):
    import gcsim.executor.netem as netem
    from guards import load_script

    mod = load_script("scripts/cerar_training.py")
    monkeypatch.setattr(netem, "netem_available", lambda: (False, "no namespaces in this test"))
    assert mod.main(["--links", "--out", str(tmp_path / "out")]) == 3
    assert "CERAR link experiment refused: no namespaces in this test" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing started
