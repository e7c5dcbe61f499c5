"""Faults of the torch.distributed executor: no hang, clear messages, same seed -> same numbers.

Each test injects one fault (a port in use, a stalled rank, a rank that raises or dies, a
launcher that is killed, a parameter-server worker that never delivers) and checks that the
launch ends quickly with a message naming the rank and saying what happened.  The
parameter-server tests check that the set of used workers is a deterministic function of
the seed: the decision is taken on the simulated clock (seeded delays measured from a
barrier), never on a wall-clock race.

Time bounds below are loose on purpose (a 2-core CI machine with every process starting
torch); each is far below the timeout that the code before the fix waited for.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import gcsim
from gcsim import executor as td
from gcsim.errors import InvalidArgumentError
from gcsim.executor import launcher

pytestmark = pytest.mark.distributed  # spawns torch.distributed (gloo) processes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)


# ----------------------------------------------------------------------------------------------
# rank bodies (module level: the launcher pickles them)
# ----------------------------------------------------------------------------------------------


def _rank_id(rank, world_size):
    return rank


def _rank1_sleeps(rank, world_size):
    if rank == 1:
        time.sleep(600)  # stalled: alive, never reports
    return rank


def _ring_with_stalled_rank1(rank, world_size):
    if rank == 1:
        time.sleep(600)
    return float(td.ring_all_reduce(torch.ones(4)).sum())


def _rank1_raises(rank, world_size):
    if rank == 1:
        raise ValueError("boom from rank 1")
    dist.barrier()  # would wait for rank 1 until the process-group timeout
    return rank


def _rank1_dies(rank, world_size):
    if rank == 1:
        os._exit(5)
    dist.barrier()
    return rank


def _write_pid_and_sleep(rank, world_size, folder):
    with open(os.path.join(folder, f"rank{rank}.pid"), "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(600)
    return rank


def _returns_a_lock(rank, world_size):
    import threading

    dist.barrier()  # both ranks are past the rendezvous: neither one's exit breaks the other's
    return threading.Lock()  # cannot be pickled to reach the launcher


def _noisy(rank, world_size):
    # what gloo and c10 write from native code, straight to the file descriptors
    os.write(2, b"[Gloo] Rank %d is connected to 1 peer ranks (gcsim test)\n" % rank)
    os.write(2, b"[W1202 04:46:01.123456 123 ProcessGroupGloo.cpp:42] Warning: native noise\n")
    os.write(1, b"[rank%d]:[E1202 04:46:01.123456 1 socket.cpp:7] more native noise\n" % rank)
    print(f"user line from rank {rank}", flush=True)
    dist.barrier()  # neither rank exits while the other is still in the rendezvous
    return rank


def _all_sleep(rank, world_size):
    time.sleep(600)


def _listening_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s, s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has exited: it only waits to be reaped by its parent
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------
# launcher
# ----------------------------------------------------------------------------------------------


def test_port_in_use_fails_at_once():
    s, port = _listening_socket()
    with s:
        t0 = time.monotonic()
        with pytest.raises(InvalidArgumentError, match=r"init_method.*in use"):
            td.launch(_rank_id, 2, init_method=f"tcp://127.0.0.1:{port}", timeout=60)
        assert time.monotonic() - t0 < 5  # before the fix: the full 60 s timeout


@pytest.mark.parametrize(
    "bad", ["tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://127.0.0.1:70000", "udp://127.0.0.1:5000", 5000]
)
def test_malformed_init_method_is_refused(bad):
    with pytest.raises(InvalidArgumentError, match="init_method"):
        td.launch(_rank_id, 2, init_method=bad, timeout=10)


def test_the_default_rendezvous_cannot_collide_on_a_port():
    # a "free" port found by bind-then-release may be taken by someone else before rank 0 listens
    # on it (several test sessions share a machine): gcsim has no such helper, the default
    # rendezvous is a private file store, so launching works while ports are being taken
    assert not hasattr(launcher, "free_port")
    s, _ = _listening_socket()
    with s:
        t0 = time.monotonic()
        res = td.launch(_rank_id, 2, timeout=60)
    assert res.ok and res.results == [0, 1]
    assert time.monotonic() - t0 < 45


def test_stalled_rank_is_named_in_a_timeout_message():
    # the deadline covers starting the ranks too: leave room for a loaded machine to start two
    res = td.launch(_rank1_sleeps, 2, timeout=30)
    assert res.results[0] == 0 and res.results[1] is None
    assert res.timed_out and res.stalled == [1] and 1 in res.killed
    with pytest.raises(td.LaunchTimeoutError) as info:
        res.raise_on_failure()
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, td.RankFailure)
    first = str(info.value).splitlines()[0]
    assert "timed out" in first and "rank 1" in first and "stalled" in first and "30 s" in first


def test_stalled_peer_in_a_collective_is_named_and_ends_fast():
    t0 = time.monotonic()
    res = td.launch(_ring_with_stalled_rank1, 3, timeout=120, op_timeout=3)
    took = time.monotonic() - t0
    assert took < 60  # before: the full 120 s launch timeout
    assert res.stalled == [1] and set(res.errors) == {0, 2}
    with pytest.raises(td.LaunchTimeoutError) as info:
        res.raise_on_failure()
    msg = str(info.value)
    assert "rank 1 stalled" in msg.splitlines()[0]
    assert "Timed out" in msg and "RingFailureError" in msg  # the neighbours' gloo timeouts


def test_a_raising_rank_ends_the_launch_fast():
    t0 = time.monotonic()
    res = td.launch(_rank1_raises, 2, timeout=120)
    assert time.monotonic() - t0 < 60  # before: rank 0 waited in barrier for 120 s
    assert 1 in res.errors and res.results[1] is None
    with pytest.raises(td.RankFailure) as info:
        res.raise_on_failure()
    first = str(info.value).splitlines()[0]
    assert "rank 1 raised ValueError: boom from rank 1" in first
    assert "Traceback" not in str(info.value)  # one clear message; tracebacks on the exception
    assert "boom from rank 1" in info.value.tracebacks[1] and "Traceback" in info.value.tracebacks[1]


def test_a_dead_rank_ends_the_launch_fast():
    t0 = time.monotonic()
    res = td.launch(_rank1_dies, 2, timeout=120)
    assert time.monotonic() - t0 < 60
    assert res.died == [1] and res.exitcodes[1] == 5
    with pytest.raises(td.RankFailure, match=r"rank 1 died without reporting \(exit code 5\)"):
        res.raise_on_failure()


def test_ranks_die_with_their_launcher(tmp_path, repo_root):
    # SIGKILL the launching process: its ranks must not live on (no orphans holding ports)
    code = (
        "import sys; from tests.test_executor_faults import _write_pid_and_sleep; "
        "from gcsim.executor.launcher import launch; "
        f"launch(_write_pid_and_sleep, 2, ({str(tmp_path)!r},), timeout=300)"
    )
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=repo_root, env=env)
    try:
        deadline = time.monotonic() + 90
        while len(list(tmp_path.glob("rank*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        pids = [int(p.read_text()) for p in sorted(tmp_path.glob("rank*.pid"))]
        assert len(pids) == 2, "ranks did not start"
        assert all(_alive(p) for p in pids)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids), "ranks outlived their launcher"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tmp_path.glob("rank*.pid"):
            try:
                os.kill(int(p.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


@pytest.mark.parametrize(
    "kw,arg",
    [
        ({"world_size": 0}, "world_size"),
        ({"world_size": 2.5}, "world_size"),
        ({"world_size": "2"}, "world_size"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"op_timeout": -1}, "op_timeout"),
        ({"grace_after_failure": -1}, "grace_after_failure"),
        ({"may_die": [7]}, "may_die"),
    ],
)
def test_launch_arguments_are_validated(kw, arg):
    args = {"world_size": 2, **kw}
    with pytest.raises(InvalidArgumentError, match=arg):
        td.launch(_rank_id, **args)


def test_unpicklable_rank_body_is_refused_before_any_process_starts():
    with pytest.raises(InvalidArgumentError, match="fn"):
        td.launch(lambda rank, ws: rank, 2)


# ----------------------------------------------------------------------------------------------
# parameter server: the simulated clock decides
# ----------------------------------------------------------------------------------------------


def _first_arrivals(delays, die, need):
    """Independent rule: live workers sorted by (delay, index), the first ``need`` of them."""
    live = [j for j in range(len(delays)) if j not in set(die)]
    return sorted(sorted(live, key=lambda j: (delays[j], j))[:need])


def test_simulated_schedule_by_hand():
    delays = [0.3, 0.1, 0.1, 0.7, 0.2]
    plan = td.simulated_schedule(delays, die=[2], need=3)
    assert plan["order"] == [1, 4, 0, 3] and plan["used"] == [0, 1, 4]
    assert plan["late"] == [3] and plan["silent"] == [2] and plan["decision_time"] == 0.3
    plan = td.simulated_schedule(delays, die=[], deadline=0.2)
    assert plan["used"] == [1, 2, 4] and plan["late"] == [0, 3] and plan["decision_time"] == 0.2
    plan = td.simulated_schedule(delays, die=[], need=0)
    assert plan["used"] == [] and plan["decision_time"] == 0.0
    with pytest.raises(InvalidArgumentError, match="die"):
        td.simulated_schedule(delays, die=[0, 1, 2], need=3)


def test_parameter_server_same_seed_same_numbers():
    sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, "rd", eps=0.1, seed=0)
    n, s = 7, 2
    runs = [td.run_parameter_server(sch, stragglers=s, seed=seed, d=6, drain=0.3, timeout=90) for seed in (4, 4)]
    a, b = runs
    expected = _first_arrivals(td.seeded_delays(n, 4, 0.05), [], n - s)
    assert a["used"] == b["used"] == expected
    assert a["arrival_order"] == b["arrival_order"]
    np.testing.assert_array_equal(a["decoded"], b["decoded"])  # bitwise: same F, same arithmetic
    assert a["error"] == b["error"] and a["predicted_error"] == b["predicted_error"]


def test_parameter_server_different_seeds_can_differ():
    sch = gcsim.encode(np.eye(4, dtype=int), 1, "naive")
    n, s = 4, 2
    # two seeds whose seeded delays pick different first-arrival sets (found by the rule itself)
    sets = {seed: _first_arrivals(td.seeded_delays(n, seed, 0.05), [], n - s) for seed in range(20)}
    a = 0
    b = next(seed for seed in range(1, 20) if sets[seed] != sets[a])
    ra = td.run_parameter_server(sch, stragglers=s, seed=a, d=3, drain=0.3, timeout=90)
    rb = td.run_parameter_server(sch, stragglers=s, seed=b, d=3, drain=0.3, timeout=90)
    assert ra["used"] == sets[a] and rb["used"] == sets[b] and ra["used"] != rb["used"]


def test_dead_workers_beyond_the_tolerance_are_refused_at_once():
    sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 1, "rd", seed=0)
    t0 = time.monotonic()
    with pytest.raises(InvalidArgumentError, match=r"die.*3 workers die.*s = 2"):
        td.run_parameter_server(sch, stragglers=2, die=[0, 1, 2])
    assert time.monotonic() - t0 < 1  # refused before any process starts
    # with a deadline any number may die: the PS decodes what arrived
    rep = td.run_parameter_server(sch, deadline=0.5, die=[0, 1, 2], delays=[0.0] * 7, d=4, drain=0.2, timeout=90)
    assert rep["used"] == [3, 4, 5, 6] and rep["silent"] == [0, 1, 2]


def test_a_used_worker_that_never_delivers_is_a_named_timeout():
    sch = gcsim.encode(np.eye(3, dtype=int), 1, "naive")
    t0 = time.monotonic()
    with pytest.raises(td.LaunchTimeoutError) as info:
        td.run_parameter_server(sch, stragglers=0, stall=[1], delays=[0.0] * 3, wait_limit=2.0, d=2, timeout=120)
    assert time.monotonic() - t0 < 60
    first = str(info.value).splitlines()[0]
    assert "worker 1 (rank 2)" in first and "timed out" in first


@pytest.mark.parametrize(
    "kw,arg",
    [
        ({"deadline": -1.0}, "deadline"),
        ({"deadline": float("nan")}, "deadline"),
        ({"seed": "4"}, "seed"),
        ({"seed": 4.5}, "seed"),
        ({"seed": True}, "seed"),
        ({"delay_scale": -0.1}, "delay_scale"),
        ({"wait_limit": 0}, "wait_limit"),
        ({"timeout": 0}, "timeout"),
        ({"stall": [9]}, "stall"),
        ({"die": [1], "stall": [1]}, "stall"),
        ({"delays": ["a", 0, 0]}, "delays"),
    ],
)
def test_parameter_server_arguments_are_validated(kw, arg):
    sch = gcsim.encode(np.eye(3, dtype=int), 1, "naive")
    t0 = time.monotonic()
    with pytest.raises(InvalidArgumentError, match=arg):
        td.run_parameter_server(sch, **kw)
    assert time.monotonic() - t0 < 1


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------


def _run_cli(argv, capsys):
    from gcsim.app.cli import main

    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _without_timings(payload: dict) -> dict:
    """The payload less the wall-clock measurements (each step's ``seconds``: they vary from run to run)."""
    out = dict(payload)
    out["records"] = [{k: v for k, v in r.items() if k != "seconds"} for r in payload["records"]]
    return out


def test_cli_gc_run_same_seed_same_numbers(capsys):
    """``gc run --design`` with fixed S: the coded trainer on 3 ranks (was the PS on n + 1), twice, bit for bit.

    The code is built in memory with the decoder table of every pattern with at most S stragglers (what
    ``decoder-table --s-max 2`` exports): every step's decoder comes from the table, and its error is
    NumPy's lstsq on B_F for the masks the fixed model draws with the same seed.
    """
    from gcsim.coding.stragglers import straggler_model

    steps, seed = 3, 4
    argv = ["gc", "run", "--design", "bibd:7,3,1", "--m", "2", "--stragglers", "2", "--seed", str(seed)]
    argv += ["--iterations", str(steps), "--ranks", "3", "--json"]
    outs = []
    for _ in range(2):
        rc, out, err = _run_cli(argv, capsys)
        assert rc == 0, err
        outs.append(json.loads(out))
    a, b = (_without_timings(o) for o in outs)
    assert a == b  # every number, the parameters' digest included, bit for bit
    assert a["executor"] == "coded-trainer" and a["ranks"] == 3 and a["n"] == 7 and a["replicas_identical"]
    assert a["table"] == 1 + 7 + 21 and a["table_lookups"] == steps and a["fallbacks"] == 0
    masks = straggler_model("fixed", 7, s=2).sample(steps, seed)
    assert [r["stragglers"] for r in a["records"]] == [np.flatnonzero(~mk).tolist() for mk in masks]
    B = gcsim.encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=seed, eps=0.0).B
    got = [r["opt_error"] for r in a["records"]]
    # imported here: the ranks import this module by path, where tests/ is not on sys.path
    from exact_lstsq import lstsq_error

    np.testing.assert_allclose(got, [lstsq_error(B, mk, 2, normalized=True) for mk in masks], rtol=0, atol=1e-10)


def test_cli_gc_run_a_dying_rank_ends_the_run_with_an_error(capsys):
    """--workers-die on the coded trainer: the seeded rank exits halfway; the others' collective fails and the
    command exits 1 naming it (the launcher's grace after a death bounds the wait: never a hang)."""
    t0 = time.monotonic()
    argv = ["gc", "run", "--design", "bibd:7,3,1", "--stragglers", "1", "--ranks", "3", "--iterations", "4"]
    rc, out, err = _run_cli([*argv, "--workers-die", "1", "--seed", "2", "--timeout", "100", "--json"], capsys)
    dead = int(np.random.default_rng(3).permutation(3)[0])  # the rank --seed 2 kills (seed + 1)
    assert rc == 1 and out == "" and "Traceback" not in err
    assert f"--workers-die: rank {dead} killed at step 2 as asked" in err
    assert f"rank {dead} died without reporting (exit code 17)" in err
    assert time.monotonic() - t0 < 90  # ended by the death, not by the 100 s launch timeout


def test_cli_refuses_more_dead_ranks_than_ranks(capsys):
    rc, out, err = _run_cli(["gc", "run", "--design", "bibd:7,3,1", "--ranks", "3", "--workers-die", "4"], capsys)
    assert rc == 2 and "--workers-die: must be <= 3" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--deadline", "-1"], "--deadline"),
        (["--timeout", "0"], "--timeout"),
        # the parameter server's flags: refused with the reason (gc run runs the coded trainer)
        (["--delay-scale", "nan"], "--delay-scale: removed"),
        (["--wait-limit", "0"], "--wait-limit: removed"),
        (["--d", "0"], "--d: removed"),
        (["--decoder", "fixed"], "--decoder: removed"),
        (["--decoder"], "--decoder: removed"),
    ],
)
def test_cli_names_the_option(capsys, extra, message):
    rc, out, err = _run_cli(["gc", "run", "--design", "bibd:7,3,1", *extra], capsys)
    assert rc == 2 and message in err and "Traceback" not in err


# ----------------------------------------------------------------------------------------------
# issue #19 item 6: deadline, logs, causes, cleanup
# ----------------------------------------------------------------------------------------------


def test_an_unpicklable_result_is_named():
    # before: the queue's feeder thread dropped the result and the rank exited 0:
    # "rank 0 died without reporting (exit code 0)"
    res = td.launch(_returns_a_lock, 2, timeout=60)
    assert not res.ok and sorted(res.errors) == [0, 1] and not res.died
    msg = res.failure_message()
    assert "died without reporting" not in msg
    assert "rank 0 raised UnpicklableResult: rank 0 returned lock, which cannot be pickled" in msg
    with pytest.raises(td.RankFailure, match="cannot pickle '_thread.lock' object"):
        res.raise_on_failure()


def test_native_logs_are_dropped_unless_verbose(repo_root):
    def run(verbose):
        code = (
            "from tests.test_executor_faults import _noisy; from gcsim.executor.launcher import launch; "
            f"print('results', launch(_noisy, 2, timeout=60, verbose={verbose}).results, flush=True)"
        )
        env = dict(os.environ, PYTHONPATH=str(repo_root))
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=repo_root, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0 and "results [0, 1]" in proc.stdout, proc.stderr
        return proc.stdout + proc.stderr

    quiet, loud = run(False), run(True)
    for rank in (0, 1):  # the ranks' own output passes, both times
        assert f"user line from rank {rank}" in quiet and f"user line from rank {rank}" in loud
    # no native line at all by default (gloo's real ones included); ours, once per rank, with verbose
    assert "[Gloo]" not in quiet and "native noise" not in quiet
    assert loud.count("(gcsim test)") == 2 and loud.count("native noise") == 4


class _SlowContext:
    """A multiprocessing context whose processes start slowly and take 1 s to be reaped after kill().

    Models a loaded machine: real processes underneath, but each start costs ``start_delay`` and a
    killed process is reported gone only a second after its SIGKILL, as the issue's 92-rank run saw.
    """

    def __init__(self, ctx, start_delay=0.0, reap_delay=0.0):
        self._ctx, self.start_delay, self.reap_delay = ctx, start_delay, reap_delay

    def Queue(self):
        return self._ctx.Queue()

    def Process(self, **kw):
        outer = self

        class P:
            def __init__(self):
                self._p = outer._ctx.Process(**kw)
                self._killed_at = None

            def start(self):
                time.sleep(outer.start_delay)
                self._p.start()

            def kill(self):
                self._p.kill()
                self._killed_at = time.monotonic()

            def _gone_at(self):
                return None if self._killed_at is None else self._killed_at + outer.reap_delay

            def is_alive(self):
                gone = self._gone_at()
                return self._p.is_alive() or (gone is not None and time.monotonic() < gone)

            def join(self, timeout=None):
                end = time.monotonic() + (timeout if timeout is not None else 1e9)
                self._p.join(timeout)
                gone = self._gone_at()
                if gone is not None:
                    time.sleep(max(0.0, min(gone, end) - time.monotonic()))

            @property
            def exitcode(self):
                return self._p.exitcode

        return P()


def test_the_deadline_covers_starting_the_processes(monkeypatch):
    assert td.launch(_rank_id, 1, timeout=60).ok  # the forkserver is up: a start costs the 1 s below
    real = launcher._context("forkserver")
    monkeypatch.setattr(launcher, "_context", lambda method: _SlowContext(real, start_delay=1.0))
    t0 = time.monotonic()
    res = td.launch(_rank_id, 4, timeout=1.5)
    elapsed = time.monotonic() - t0
    # rank 0 starts at once, rank 1 at about 1 s (later on a loaded machine), then the 1.5 s deadline
    # has passed: the last ranks are never started (before: all four started, 4 s, then killed)
    k = 4 - len(res.unstarted)
    assert 1 <= k <= 2 and res.unstarted == list(range(k, 4)) and res.timed_out and not res.ok, res
    assert elapsed < 1.5 + 1.0 + 2.0 + launcher.REAP_TIMEOUT
    with pytest.raises(td.LaunchTimeoutError, match=r"not started: the 1.5 s launch timeout passed while"):
        res.raise_on_failure()


def test_killed_ranks_are_reaped_together(monkeypatch):
    assert td.launch(_rank_id, 1, timeout=60).ok  # the forkserver is up: the four starts are quick
    real = launcher._context("forkserver")
    monkeypatch.setattr(launcher, "_context", lambda method: _SlowContext(real, reap_delay=1.0))
    t0 = time.monotonic()
    res = td.launch(_all_sleep, 4, timeout=3.0)
    elapsed = time.monotonic() - t0
    assert res.stalled == [0, 1, 2, 3] and res.killed == [0, 1, 2, 3]
    # one shared reap of ~1 s, not 1 s per killed rank (before: kill, join, kill, join: >= 4 s)
    assert elapsed < 3.0 + 2.5, elapsed


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _rendezvous(root, name, marker):
    folder = root / name
    folder.mkdir()
    (folder / "store").write_text("")
    if marker is not None:
        (folder / launcher.RDZV_MARKER).write_text(marker)
    return folder


def test_only_stale_gcsim_rendezvous_folders_are_cleaned(tmp_path):
    dead = _dead_pid()
    mark = lambda pid: json.dumps({"gcsim": "rendezvous", "pid": pid, "created": 0})  # noqa: E731
    stale = _rendezvous(tmp_path, "gcsim-rdzv-stale", mark(dead))
    keep = [
        _rendezvous(tmp_path, "gcsim-rdzv-live", mark(os.getpid())),  # its launcher is running
        _rendezvous(tmp_path, "gcsim-rdzv-nomarker", None),  # not certainly gcsim's
        _rendezvous(tmp_path, "gcsim-rdzv-garbled", "not json"),
        _rendezvous(tmp_path, "gcsim-rdzv-foreign", json.dumps({"pid": dead})),  # not gcsim's marker
        _rendezvous(tmp_path, "other-folder", mark(dead)),  # not gcsim's name
    ]
    outside = _rendezvous(tmp_path, "target", mark(dead))
    (tmp_path / "gcsim-rdzv-link").symlink_to(outside)  # a link is never followed
    assert launcher.clean_stale_rendezvous(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and all(k.exists() for k in keep) and outside.exists()
    assert (tmp_path / "gcsim-rdzv-link").is_symlink()


def test_a_killed_launchers_rendezvous_is_removed_at_the_next_start(tmp_path, repo_root, monkeypatch):
    # a short TMPDIR: the forkserver's AF_UNIX socket lives there, and under pytest-xdist tmp_path
    # (…/popen-gw1/test_…) makes its path longer than the 108 bytes a socket path may have
    tmp = Path(tempfile.mkdtemp(prefix="gct", dir="/tmp"))
    code = (
        "from tests.test_executor_faults import _write_pid_and_sleep; from gcsim.executor.launcher import launch; "
        f"launch(_write_pid_and_sleep, 1, ({str(tmp_path)!r},), timeout=300)"
    )
    env = dict(os.environ, PYTHONPATH=str(repo_root), TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=repo_root, env=env)
    try:
        deadline = time.monotonic() + 90
        while not list(tmp_path.glob("rank*.pid")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(tmp_path.glob("rank*.pid")), "the rank did not start"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = list(tmp.glob("gcsim-rdzv-*"))
    assert len(left) == 1  # SIGKILL: the launcher could not remove it
    monkeypatch.setattr(launcher.tempfile, "tempdir", str(tmp))
    try:
        assert td.launch(_rank_id, 1, timeout=60).ok
        assert not left[0].exists() and not list(tmp.glob("gcsim-rdzv-*"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize(
    "init,why",
    [
        ("tcp://256.1.1.1:29500", "host '256.1.1.1' is not a valid IP address"),
        ("tcp://no-such-host.invalid:29500", "host 'no-such-host.invalid' (does not resolve|did not resolve)"),
        ("tcp://192.0.2.1:29500", "host '192.0.2.1' is not an address of this machine"),  # TEST-NET-1
    ],
)
def test_a_bad_host_is_named_before_any_process_starts(init, why):
    t0 = time.monotonic()
    with pytest.raises(InvalidArgumentError, match=f"^init_method: {why}"):
        td.launch(_rank_id, 2, init_method=init, timeout=60)
    # before: the full 60 s timeout, then "ranks 0, 1 stalled"
    assert time.monotonic() - t0 < launcher.RESOLVE_TIMEOUT + 2


def test_long_rank_lists_are_ranges_and_verbose_is_a_flag():
    res = launcher.LaunchResult(
        results=[None] * 92,
        errors={},
        exitcodes=[-9] * 24 + [None] * 68,
        killed=list(range(24)),
        timed_out=True,
        seconds=20.0,
        stalled=list(range(24)),
        deadline_reason="the 20 s launch timeout",
        unstarted=list(range(24, 92)),
    )
    assert res.failure_message() == (
        "launch of 92 ranks failed: ranks 24-91 not started: the 20 s launch timeout passed while the launcher "
        "was starting 92 processes; ranks 0-23 stalled: timed out, did not report within the 20 s launch "
        "timeout; killed"
    )
    from gcsim.app import cli

    for command in (["gc", "run"], ["cerar", "run"]):
        extra = ["--design", "bibd:7,3,1"] if command[0] == "gc" else ["--workers", "3", "--c", "3"]
        assert cli.build_parser().parse_args([*command, *extra, "--verbose"]).verbose is True
        assert cli.build_parser().parse_args([*command, *extra]).verbose is False
