"""Faults of the torch.distributed executor (gcsim.executor, ``gcsim gc run`` / ``cerar run``).

Every case must end quickly with a clear, deliberate error (no hang: each has a time limit
far below the launch timeouts it sets), except the ``ok`` row that checks "same seed, same
numbers".  A rank body must be importable by the rank processes, so cases that need their
own write it as a small module into the case's folder first (``setup``).
"""

from reliability import Case

_TD = "from gcsim import executor as td\nimport numpy as np, gcsim\n"

# rank bodies importable by the ranks (the case's folder is put on sys.path)
_JOBS = """
import os, time

def stall(rank, world_size):
    if rank == 1:
        time.sleep(600)
    return rank

def stall_in_ring(rank, world_size):
    import torch
    from gcsim.executor.collectives import ring_all_reduce
    if rank == 1:
        time.sleep(600)
    return float(ring_all_reduce(torch.ones(4)).sum())

def boom(rank, world_size):
    import torch.distributed as dist
    if rank == 1:
        raise ValueError("boom from rank 1")
    dist.barrier()
    return rank

def lock(rank, world_size):
    import threading
    import torch.distributed as dist
    dist.barrier()
    return threading.Lock()

def noisy(rank, world_size):
    import torch.distributed as dist
    os.write(2, b"[Gloo] Rank %d is connected to 1 peer ranks (gcsim case)\\n" % rank)
    dist.barrier()  # neither rank exits while the other is still in the rendezvous
    return rank
"""
_SETUP = f"open('jobs.py', 'w').write({_JOBS!r})"
_PATH = "import os, sys\nsys.path.insert(0, os.getcwd())\nimport jobs\n"

CASES = [
    Case(
        area="executor",
        fault="launch with a tcp:// port another process listens on",
        code=_TD + "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "td.run_collectives(3, 8, init_method=f'tcp://127.0.0.1:{s.getsockname()[1]}', timeout=60)",
        timeout=30,
    ),
    Case(
        area="executor",
        fault="launch with init_method 'tcp://127.0.0.1' (no port)",
        code=_TD + "td.run_collectives(3, 8, init_method='tcp://127.0.0.1')",
    ),
    Case(area="executor", fault="launch with world_size = 0", code=_TD + "td.launch(td.collectives_job, 0)"),
    Case(area="executor", fault="launch with world_size = 2.5", code=_TD + "td.launch(td.collectives_job, 2.5)"),
    Case(
        area="executor",
        fault="launch of a lambda (cannot reach the rank processes)",
        code=_TD + "td.launch(lambda rank, ws: rank, 2)",
    ),
    Case(area="executor", fault="launch with timeout = 0", code=_TD + "td.launch(td.collectives_job, 2, timeout=0)"),
    Case(
        area="executor",
        fault="rank 1 stalls (sleeps), launch timeout 10 s: named as stalled, killed",
        setup=_SETUP,
        code=_TD + _PATH + "td.launch(jobs.stall, 2, timeout=10).raise_on_failure()",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="rank 1 stalls inside a ring all-reduce (process-group timeout 3 s)",
        setup=_SETUP,
        code=_TD + _PATH + "td.launch(jobs.stall_in_ring, 3, timeout=120, op_timeout=3).raise_on_failure()",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="rank 1 raises while rank 0 waits in a barrier (120 s timeout)",
        setup=_SETUP,
        code=_TD + _PATH + "td.launch(jobs.boom, 2, timeout=120).raise_on_failure()",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="a CERAR ring member's process dies before the collective",
        code=_TD + "from gcsim.cerar.factory import design\n"
        "td.run_collectives(3, 16, designs={'c': design(3, 3, 'exact')}, algorithms=['c'], "
        "die_rank=1, timeout=120)",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="parameter server: a used worker hangs (wait_limit 2 s)",
        code=_TD + "sch = gcsim.encode(np.eye(3, dtype=int), 1, 'naive')\n"
        "td.run_parameter_server(sch, stall=[1], delays=[0, 0, 0], wait_limit=2, d=2, timeout=120)",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="parameter server: 3 dead workers with s = 2 tolerated stragglers",
        code=_TD + "sch = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 1, 'rd')\n"
        "td.run_parameter_server(sch, stragglers=2, die=[0, 1, 2])",
    ),
    Case(
        area="executor",
        fault="parameter server with deadline = NaN",
        code=_TD + "sch = gcsim.encode(np.eye(3, dtype=int), 1, 'naive')\n"
        "td.run_parameter_server(sch, deadline=float('nan'))",
    ),
    Case(
        area="executor",
        fault="parameter server with seed = '4' (a string)",
        code=_TD + "sch = gcsim.encode(np.eye(3, dtype=int), 1, 'naive')\ntd.run_parameter_server(sch, seed='4')",
    ),
    Case(
        area="executor",
        fault="parameter server with a negative delay",
        code=_TD + "sch = gcsim.encode(np.eye(3, dtype=int), 1, 'naive')\n"
        "td.run_parameter_server(sch, delays=[0.1, -1.0, 0.0])",
    ),
    Case(
        area="executor",
        fault="parameter server twice with seed 4: same used set and decoded gradient",
        code=_TD + "sch = gcsim.encode(np.eye(5, dtype=int), 1, 'naive')\n"
        "a, b = (td.run_parameter_server(sch, stragglers=2, seed=4, d=4, drain=0.2) for _ in range(2))\n"
        "same = a['used'] == b['used'] and np.array_equal(a['decoded'], b['decoded'])\n"
        "assert same, (a['used'], b['used'])\n"
        "print('same used set', a['used'], 'and decoded gradient in both runs')",
        expect="ok",
        timeout=120,
    ),
    Case(
        area="executor",
        fault="gcsim gc run --workers-die 5 on 4 ranks (more dying ranks than ranks)",
        argv=["gc", "run", "--design", "bibd:7,3,1", "--stragglers", "1", "--workers-die", "5"],
    ),
    Case(
        area="executor",
        fault="gcsim gc run --workers-die 1: a rank of the coded trainer killed halfway (exit 1 naming it, no hang)",
        argv=["gc", "run", "--design", "bibd:7,3,1", "--stragglers", "1", "--ranks", "3", "--iterations", "4"]
        + ["--workers-die", "1", "--json"],
        timeout=120,
    ),
    Case(
        area="executor",
        fault="gcsim gc run --deadline -1",
        argv=["gc", "run", "--design", "bibd:7,3,1", "--deadline", "-1"],
    ),
    Case(area="executor", fault="gcsim gc run --seed -3", argv=["gc", "run", "--design", "bibd:7,3,1", "--seed", "-3"]),
    Case(
        area="executor", fault="gcsim gc run --seed abc", argv=["gc", "run", "--design", "bibd:7,3,1", "--seed", "abc"]
    ),
    Case(
        area="executor",
        fault="gcsim gc run --timeout 0",
        argv=["gc", "run", "--design", "bibd:7,3,1", "--timeout", "0"],
    ),
    Case(
        area="executor",
        fault="gcsim cerar run --workers 1 (a ring of one)",
        argv=["cerar", "run", "--workers", "1", "--c", "1"],
    ),
    # issue #19 item 6: deadline, logs, causes, cleanup
    Case(
        area="executor",
        fault="a rank returns an unpicklable value (a lock): named, not 'died without reporting'",
        setup=_SETUP,
        code=_TD + _PATH + "td.launch(jobs.lock, 2, timeout=60).raise_on_failure()",
        timeout=60,
    ),
    Case(
        area="executor",
        fault="launch with init_method tcp://256.1.1.1:29500 (not an IP address): refused before ranks start",
        code=_TD + "td.launch(td.collectives_job, 2, init_method='tcp://256.1.1.1:29500', timeout=60)",
        timeout=15,
    ),
    Case(
        area="executor",
        fault="launch with an unresolvable host (tcp://no-such-host.invalid:29500)",
        code=_TD + "td.launch(td.collectives_job, 2, init_method='tcp://no-such-host.invalid:29500', timeout=60)",
        timeout=15,
    ),
    Case(
        area="executor",
        fault="launch with a host that is not this machine's (tcp://192.0.2.1:29500, TEST-NET-1)",
        code=_TD + "td.launch(td.collectives_job, 2, init_method='tcp://192.0.2.1:29500', timeout=60)",
        timeout=15,
    ),
    Case(
        area="executor",
        fault="ranks print gloo's own '[Gloo] Rank ... connected' lines: dropped unless verbose=True",
        setup=_SETUP,
        code=_TD + _PATH + "import subprocess, sys\n"
        "src = 'import os, sys; sys.path.insert(0, os.getcwd()); import jobs; from gcsim import executor as td; '\n"
        "run = lambda v: subprocess.run([sys.executable, '-c', src + f'td.launch(jobs.noisy, 2, verbose={v})'],"
        " capture_output=True, text=True, timeout=120).stderr\n"
        "quiet, loud = run(False).count('[Gloo]'), run(True).count('(gcsim case)')\n"
        "assert (quiet, loud) == (0, 2), (quiet, loud)\n"
        "print('gloo lines: 0 by default, 2 with verbose=True')",
        expect="ok",
        timeout=120,
    ),
    Case(
        area="executor",
        fault="a SIGKILLed launcher's rendezvous folder: removed by the next launch",
        setup=_SETUP,
        code=_TD + _PATH + "import json, subprocess, sys, tempfile, time\n"
        "tmp = os.path.abspath('tmp'); os.makedirs(tmp)\n"
        "src = 'import os, sys; sys.path.insert(0, os.getcwd()); import jobs; from gcsim import executor as td; '\n"
        "p = subprocess.Popen([sys.executable, '-c', src + 'td.launch(jobs.stall, 2, timeout=300)'],"
        " env=dict(os.environ, TMPDIR=tmp), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "end = time.time() + 60\n"
        "while not [n for n in os.listdir(tmp) if n.startswith('gcsim-rdzv-')] and time.time() < end: time.sleep(0.2)\n"
        "time.sleep(1); p.kill(); p.wait()\n"
        "left = [n for n in os.listdir(tmp) if n.startswith('gcsim-rdzv-')]\n"
        "tempfile.tempdir = tmp\n"
        "assert td.launch(td.collectives_job, 1, ({'d': 1, 'seed': 0, 'dtype': 'float32', 'algorithms': [], "
        "'designs': {}, 'repeats': 1, 'warmup': 0, 'return_outputs': False},), timeout=60).ok\n"
        "now = [n for n in os.listdir(tmp) if n.startswith('gcsim-rdzv-')]\n"
        "assert len(left) == 1 and not now, (left, now)\n"
        "print('left by the killed launcher:', len(left), '; after the next launch:', len(now))",
        expect="ok",
        timeout=120,
    ),
    Case(
        area="executor",
        fault="--d 1000000000000 given to gc run (the parameter server's flag, removed): refused before any rank starts",  # noqa: E501 - the table shows the text as it is
        argv=["gc", "run", "--design", "bibd:7,3,1", "--d", "1000000000000"],
        timeout=30,
    ),
    Case(
        area="executor",
        fault="run_collectives with d = 10**12 (N x d gradients per rank): refused before any rank starts",
        code=_TD + "td.run_collectives(4, 10**12)",
        timeout=30,
    ),
]
