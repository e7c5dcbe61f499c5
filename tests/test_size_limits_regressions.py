"""The calls issue #33's size sweep found misbehaving, pinned: each refused by gcsim, small and in one line.

``tests/test_api_size_sweep.py`` builds its calls from the docstring examples, so a changed example
would drop a call from it unseen; the 34 calls it listed as failures before #33 was closed (hangs,
NumPy ``MemoryError``, accepted non-integers, raw ``TypeError``) are written out here.  They run in
one child process under an address-space limit (an allocation of gigabytes fails there, not on the
machine), and for each the child reports the error, its message and the growth of the peak resident
memory (``VmHWM``, reset through ``/proc/self/clear_refs`` before the call).  Each must be a
:class:`~gcsim.errors.InvalidArgumentError` (a :class:`~gcsim.errors.SizeLimitError` for a size over
a limit) whose one-line message starts with the argument it names, with the peak at most
``PEAK_MIB`` above where it started: the size is checked before anything is allocated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Most the peak resident memory may grow during one refused call (MiB): generous (a refusal
#: allocates nothing; the sizes refused here are gigabytes to terabytes).
PEAK_MIB = 256

#: The argument the message must name, then the call (``Z(x)``: a zero-stride view of ``x`` standing
#: for 10^9 entries; ``OVER``: 10^12), one former failure a line.
_TABLE = """
points | advice.pareto_flags(np.broadcast_to(np.ones(2), (10**9, 2)))
N | floating.epsilon_sweep(OVER, 5, [0.1], d=64)
c | floating.epsilon_sweep(3, OVER, [0.1], d=64)
d | floating.epsilon_sweep(3, 5, [0.1], d=OVER)
m | bounds.partial_uncovering_lower_bound(np.eye(4, dtype=int), OVER, 1)
n | decoder_table.pattern_of_row(OVER, 7)
m | decoders.optimal_decoders(np.eye(2), np.array([[True, False]]), Z(1))
samples | delays.expected_decode_time(DM, RULE, samples=Z(200000))
samples | sweeps.expected_error_sweep(SCH, FIXED, samples=OVER, progress=False)
draws | verify.verify_bounds(SCH, ALL, ['rank_lower'], draws=OVER)
m | baselines.mgg_neighbours(OVER)
moduli | bibd_difference.difference_family_design(2.5, [[0, 1, 3, 9]])
moduli | bibd_difference.difference_family_design(Z(13), [[0, 1, 3, 9]])
n | bibd_geometries.singer_design(OVER, 2)
k | coset.CosetBipartiteGraph(Z(9), 2, 2, 'cyclic', [[0, 1], [0, 3]], 'x')
m | coset.CosetBipartiteGraph(9, 2.5, 2, 'cyclic', [[0, 1], [0, 3]], 'x')
m | coset.CosetBipartiteGraph(9, Z(2), 2, 'cyclic', [[0, 1], [0, 3]], 'x')
m | coset.interval_connection_sets(9, OVER, 3)
n | difference_families.search_difference_family(OVER, 4, 1)
n | difference_families.singer_difference_set(OVER, 2)
D | srg_distance_union.distance_union_parameters('J', 9, 4, Z(1))
D | srg_distance_union.hamming_distance_union_graph(4, 2, Z(1))
d | srg_distance_union.hamming_distance_union_graph(OVER, 2, (1, 4))
D | srg_distance_union.johnson_distance_union_graph(9, 4, Z(1))
q | srg_distance_union.scheme_eigenmatrix('H', 2, Z(3))
q | srg_distance_union.strongly_regular_distance_sets('H', 4, 2.5)
q | srg_distance_union.strongly_regular_distance_sets('H', 4, Z(2))
m | srg_geometric.affine_polar_graph(-1, OVER, 2)
n | srg_geometric.polar_graph('Sp', OVER, 2)
n | srg_geometric.polar_graph_parameters('Sp', OVER, 3)
m | srg_geometric.symplectic_graph(OVER)
points | srg_geometric.two_intersection_graph(3, [[0.5, 1], [1, 0]])
points | srg_geometric.two_intersection_graph(3, Z([0, 1]))
n | srg_nonisotropic.nonisotropic_graph_parameters(OVER, -1)
"""
CASES: list[tuple[str, str]] = [
    (name.strip(), call.strip()) for name, call in (line.split(" | ", 1) for line in _TABLE.strip().splitlines())
]

#: The child: the cases' expressions evaluated one by one under an address-space limit.
_CHILD = r"""
import importlib, json, resource, sys
import numpy as np
import gcsim
from gcsim.coding.schemes import encode
from gcsim.coding.stragglers import straggler_model

# the modules by their path (a package may re-export a function under a module's name)
for path in (
    "gcsim.advisor.advice gcsim.cerar.floating gcsim.coding.bounds gcsim.coding.decoder_table "
    "gcsim.coding.decoders gcsim.coding.delays gcsim.coding.sweeps gcsim.coding.verify "
    "gcsim.combinatorics.baselines gcsim.combinatorics.bibd_difference gcsim.combinatorics.bibd_geometries "
    "gcsim.combinatorics.coset gcsim.combinatorics.difference_families gcsim.combinatorics.srg_distance_union "
    "gcsim.combinatorics.srg_geometric gcsim.combinatorics.srg_nonisotropic"
).split():
    globals()[path.rsplit(".", 1)[1]] = importlib.import_module(path)

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))

def Z(x):
    x = np.asarray(x, dtype=np.int64)
    return np.broadcast_to(x, (10**9, *x.shape))

OVER = 10**12
DM = delays.delay_model("pareto", 5, scale=1.0, shape=3.0)
RULE = delays.arrival_rule("first", s=1)
SCH = encode(np.eye(4, dtype=int), 1, "naive")
FIXED = straggler_model("fixed", 4, s=1)
ALL = straggler_model("all", 4, s=1)
resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") * 1024 + (4 << 30), resource.RLIM_INFINITY))
rows = []
for expression in json.loads(sys.argv[1]):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident size
    base = status("VmHWM")
    try:
        eval(expression)
        error = None
    except BaseException as exc:  # the outcome being judged
        error = exc
    rows.append({
        "error": None if error is None else f"{type(error).__module__}.{type(error).__name__}",
        "gcsim": isinstance(error, gcsim.errors.InvalidArgumentError),
        "message": "" if error is None else str(error),
        "peak_mib": (status("VmHWM") - base) / 1024,
    })
print(json.dumps(rows))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="peak memory read from Linux's /proc")
def test_former_sweep_failures_are_refused_small_and_named(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([call for _, call in CASES])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(rows) == len(CASES)
    bad = []
    for (name, label), row in zip(CASES, rows, strict=True):
        message = row["message"].strip()
        if not row["gcsim"]:
            bad.append(f"{label}: {row['error']}: {message[:160]}")
        elif "\n" in message or not message.startswith(f"{name}: "):
            bad.append(f"{label}: the message should be one line naming {name!r}: {message[:160]!r}")
        if row["peak_mib"] > PEAK_MIB:
            bad.append(f"{label}: peak resident memory grew {row['peak_mib']:.0f} MiB (limit {PEAK_MIB})")
    assert not bad, "\n".join(bad)
