"""The collectives side by side (gcsim.executor.allreduce): exact sums, bytes exactly as predicted.

Every registered collective runs on 2, 3 and 4 gloo ranks (halving-doubling on 3: the fold of a
non-power of two) with and without a late rank; each rank counts the bytes and messages it hands to ``isend``
and checks its output against the exact float64 sum with the collective's round-off bound
(theory §56.6).  No timing is asserted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")

from gcsim.errors import InvalidArgumentError
from gcsim.executor.allreduce import CollectiveCost, collective_names, collectives, cost_table, get_collective
from gcsim.executor.allreduce._registry import summation_bound
from gcsim.executor.allreduce.halving_doubling import halving_doubling_cost
from gcsim.executor.allreduce.straggler_aware import straggler_aware_cost
from gcsim.executor.allreduce.tree import tree_children, tree_cost
from gcsim.executor.collectives_bench import collectives_table, run_side_by_side, summarize

ALL = ("ring", "tree", "halving-doubling", "straggler-aware", "cerar")


def test_registry_discovers_every_module():
    assert collective_names() == ALL
    assert [c.straggler_aware for c in collectives()] == [False, False, False, True, False]
    with pytest.raises(InvalidArgumentError, match="^collective: must be one of"):
        get_collective("butterfly")


def test_theory_sections_exist():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "theory.md").read_text()
    for col in collectives():
        assert f"## {col.theory.lstrip('§')} " in text, col.theory


@pytest.mark.parametrize("N", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("d", [1, 5, 37])
def test_costs_against_independent_counts(N, d):
    """Each total against a count made another way (theory §56.2-§56.4)."""
    b = 4
    # tree: every edge of the spanning tree carries d scalars once up and once down
    assert sum(tree_cost(N, d, b).bytes_sent) == 2 * (N - 1) * d * b
    assert sum(len(tree_children(r, N)) for r in range(N)) == N - 1
    # halving-doubling: p ranks exchange 2(p-1)ceil(d/p), the N-p folded pairs add 2d
    p = 2 ** int(math.log2(N))
    hd = halving_doubling_cost(N, d, b)
    assert sum(hd.bytes_sent) == p * 2 * (p - 1) * -(-d // p) * b + 2 * (N - p) * d * b
    assert hd.rounds == 2 * int(math.log2(p)) + (2 if N != p else 0)
    # straggler-aware: the reduce-scatter moves (M-1) M w, the completion M w + M (M w), the ready signals M
    M = N - 1
    w = -(-d // M)
    signalled = straggler_aware_cost(N, d, b, pieces=3, gate="signal")
    assert sum(signalled.bytes_sent) == ((M - 1) * M * w + M + M * w + M * M * w) * b
    assert len(signalled.early) == M and len(signalled.late) == 2
    for gate in ("receive", "none"):  # no message of their own
        sa = straggler_aware_cost(N, d, b, pieces=3, gate=gate)
        assert sum(sa.bytes_sent) == ((M - 1) * M * w + M * w + M * M * w) * b
        assert len(sa.early) == M - 1 and len(sa.late) == 2


def test_cost_time_model():
    c = CollectiveCost("x", 3, 1, 4, (1, 1, 1), (100, 100), (50,))
    # early rounds overlap the delay; late ones follow it
    assert c.time(0.0, 100.0, delay=0.0) == pytest.approx(2.5)
    assert c.time(0.0, 100.0, delay=5.0) == pytest.approx(5.5)
    assert c.time(0.1, math.inf) == pytest.approx(0.3)
    with pytest.raises(InvalidArgumentError, match="^beta: "):
        c.time(0.0, 0.0)
    with pytest.raises(InvalidArgumentError, match="^delay: "):
        c.time(0.0, 1.0, delay=-1.0)
    assert cost_table(4, 1000, alpha=1e-3, beta=1e6).count("\n") == len(ALL) + 2


def test_bad_inputs_named():
    with pytest.raises(InvalidArgumentError, match="^N: "):
        tree_cost(1, 5, 4)
    with pytest.raises(InvalidArgumentError, match="^straggler: "):
        straggler_aware_cost(3, 5, 4, straggler=3)
    with pytest.raises(InvalidArgumentError, match="^pieces: "):
        straggler_aware_cost(3, 5, 4, pieces=0)
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(InvalidArgumentError, match="^window: "):
            straggler_aware_cost(3, 5, 4, window=bad)
    for bad in ("signals", True, None):
        with pytest.raises(InvalidArgumentError, match=r"^gate: must be one of \('receive', 'signal', 'none'\)"):
            straggler_aware_cost(3, 5, 4, gate=bad)
    with pytest.raises(InvalidArgumentError, match="^c: "):
        get_collective("cerar").cost(3, 5, 4, c=4)
    with pytest.raises(InvalidArgumentError, match="^options: "):
        run_side_by_side(2, 3, collectives=["ring"], options={"tree": {}})
    # an option the collective does not take is refused before anything launches (no root needed)
    with pytest.raises(InvalidArgumentError, match=r"^options: 'straggler-aware' takes \['pieces', 'gate', 'window'\]"):
        run_side_by_side(2, 3, options={"straggler-aware": {"piece": 4}})
    with pytest.raises(InvalidArgumentError, match="^options: "):
        collectives_table(2, [3], collectives=["tree"], options={"ring": {}})
    with pytest.raises(InvalidArgumentError, match="^delays: "):
        run_side_by_side(2, 3, delays=[-0.1])


def test_summation_bound_covers_float32_sums():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((4, 1000)).astype(np.float32)
    exact = g.astype(np.float64).sum(axis=0)
    bound = summation_bound(g, 4)
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        acc = g[order[0]].copy()
        for i in order[1:]:
            acc = acc + g[i]
        assert np.all(np.abs(acc.astype(np.float64) - exact) <= bound)
    tree = (g[0] + g[1]) + (g[2] + g[3])
    assert np.all(np.abs(tree.astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("N", [2, 3, 4])
def test_every_collective_sums_exactly_and_sends_the_predicted_bytes(N):
    """Outputs within the round-off bound, bytes equal to the prediction on every rank."""
    for d in (1, 37):
        rows = run_side_by_side(N, d, delays=[0.0, 0.02], repeats=1, seed=N + d, timeout=180)
        assert {r["collective"] for r in rows} == set(ALL)
        for r in rows:
            assert r["bytes_sent"] == r["predicted_bytes"], r
            assert r["error_over_bound"] <= 1.0, r
            # the schedule of the time model (theory §56.7) has the messages the ranks counted
            sch = get_collective(r["collective"]).schedule(N, d, 4, straggler=r["straggler"], **r["options"])
            assert r["messages_sent"] == list(sch.messages), r


@pytest.mark.parametrize("gate, window", [("signal", None), ("none", 1)])  # the defaults run above
def test_straggler_aware_other_rank_and_pieces(gate, window):
    rows = run_side_by_side(
        4,
        50,
        collectives=["straggler-aware", "halving-doubling"],
        options={"straggler-aware": {"pieces": 3, "gate": gate, "window": window}},
        straggler=1,
        delays=[0.02],
        repeats=2,
        warmup=1,
        timeout=180,
    )
    for r in rows:
        assert r["bytes_sent"] == r["predicted_bytes"] and r["error_over_bound"] <= 1.0, r
    sa = rows[0]
    assert sa["bytes_sent"][1] == 3 * 17 * 4 and len(sa["seconds"]) == 2
    assert sa["bytes_sent"][0] == (5 * 17 + (gate == "signal")) * 4
    sch = get_collective("straggler-aware").schedule(4, 50, 4, straggler=1, pieces=3, gate=gate, window=window)
    assert sa["messages_sent"] == list(sch.messages)
    out = summarize(rows, alpha=1e-4, beta=1e8)
    assert all(o["bytes_match"] for o in out) and all(o["predicted_s"] > 0.02 for o in out)


def _bench_script(monkeypatch, name: str = "collectives_bench"):
    """scripts/NAME.py as a module (its helper ``_link_settings`` on the path)."""
    from guards import ROOT, load_script

    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    return load_script(f"scripts/{name}.py")


def test_microbench_alltoall_loads_every_port_like_the_completion(monkeypatch):
    """link_microbench's all-to-all: each port carries the straggler-aware completion's bytes, three
    connections each way, and on plain ports every port is full from the start to the end, so it takes
    one delay plus three messages at the rate (by hand, exact rationals)."""
    from fractions import Fraction

    from gcsim.executor.allreduce import Recv, Send
    from gcsim.executor.allreduce._linkmodel import simulate

    exps = _bench_script(monkeypatch, "link_microbench")._experiments()
    a2a, comp = exps["alltoall-262144"], exps["straggler-aware-completion-262144"]
    assert a2a.bytes_sent == (3 * 349528,) * 4 == comp.bytes_sent[3:] * 4
    for r, prog in enumerate(a2a.programs):
        assert sorted(op.dst for op in prog if isinstance(op, Send)) == [j for j in range(4) if j != r]
        assert sorted(op.src for op in prog if isinstance(op, Recv)) == [j for j in range(4) if j != r]
    alpha, beta = Fraction(1, 1000), Fraction(12_500_000)
    assert max(simulate(a2a, alpha, beta)) == alpha + 3 * 349528 / beta


def test_bench_script_offers_every_port_model(monkeypatch, capsys):
    from gcsim.executor.collectives_bench import BUCKET_MODELS

    with pytest.raises(SystemExit):
        _bench_script(monkeypatch).main(["--help"])
    assert "--bucket {" + ",".join(BUCKET_MODELS) + "}" in capsys.readouterr().out.replace("\n", " ")


def test_bench_script_reads_options(monkeypatch):
    """scripts/collectives_bench.py --option NAME:KEY=VALUE: JSON values, strings kept, bad items refused."""
    mod = _bench_script(monkeypatch)
    got = mod._options(["straggler-aware:gate=none", "straggler-aware:pieces=4", "cerar:c=3", "x:flag=false"])
    assert got == {"straggler-aware": {"gate": "none", "pieces": 4}, "cerar": {"c": 3}, "x": {"flag": False}}
    assert mod._options(["x:mode=fast"]) == {"x": {"mode": "fast"}}
    for bad in ("straggler-aware", "straggler-aware:pieces", ":pieces=4", "straggler-aware:=4"):
        with pytest.raises(SystemExit, match="NAME:KEY=VALUE"):
            mod._options([bad])
