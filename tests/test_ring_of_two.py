"""A ring of two ranks (next == previous rank): send and receive of each packet posted as one pair.

At world size 2 both ring directions go to one peer; NCCL matches operations to one peer in
posting order (tags ignored), so :class:`gcsim.executor.collectives.RingTransport` posts each
packet's send and receive together in one ``batch_isend_irecv`` and no receive ahead
(docs/guides/executor.md, "A ring of two").  A recording shim of ``torch.distributed`` checks
the posting order in-process (no processes); one gloo launch at world size 2 checks every ring
path against the library's all-reduce and the NumPy simulator.
"""

import numpy as np
import pytest

from executor_tolerances import cerar_output_tol, sum_tol
from gcsim.cerar.factory import design
from gcsim.cerar.protocol import simulate
from gcsim.executor.launcher import launch

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

DESIGNS = {  # the sparse path (permutation encoders) and the dense one (a perturbation design)
    "sparse": (2, 2, "exact", {}),
    "dense": (2, 3, "perturbation", {"eps": 0.05}),
}


class _Work:
    def __init__(self, log):
        self.waits = 0
        log.append(self)

    def wait(self):
        self.waits += 1  # gloo: a second wait on a completed work times out
        return True


class _Op:
    def __init__(self, op, tensor, peer, group=None, tag=0):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


class _Recorder:
    """Fake ``torch.distributed`` for rank 0 of ``N``: records every posted (kind, peer, tag, batch)."""

    def __init__(self, N, coalesce=False):
        self.N, self.events, self.batches, self.coalesce, self.works = N, [], 0, coalesce, []

    def isend(self, tensor, dst, group=None, tag=0, _batch=None):
        self.events.append(("send", dst, tag, _batch))
        return _Work(self.works)

    def irecv(self, tensor, src, group=None, tag=0, _batch=None):
        tensor.zero_()  # a defined packet: the arithmetic runs, only the order is checked
        self.events.append(("recv", src, tag, _batch))
        return _Work(self.works)

    def batch_isend_irecv(self, ops):
        self.batches += 1
        works = [op.op(op.tensor, op.peer, tag=op.tag, _batch=self.batches) for op in ops]
        return [_Work(self.works)] if self.coalesce else works  # NCCL: one work for the group

    def install(self, monkeypatch):
        for name in ("isend", "irecv", "batch_isend_irecv"):
            monkeypatch.setattr(dist, name, getattr(self, name))
        monkeypatch.setattr(dist, "P2POp", _Op)
        monkeypatch.setattr(dist, "get_world_size", lambda group=None: self.N)
        monkeypatch.setattr(dist, "get_rank", lambda group=None: 0)


def _handed_back(rec):
    """The works the transport got: per op (gloo), or one per batch (coalesced)."""
    if not rec.coalesce:
        return rec.works
    return rec.works[2::3]  # each batch: the two ops' works, then the one handed back


def _receives_never_ahead_of_their_send(events):
    """The order a ring of two needs: receive ``k`` from a peer comes with (same batch) or after
    send ``k`` to it, and no receive for a later packet than the last one sent."""
    sent: dict[int, set] = {}
    for kind, peer, tag, _batch in events:
        if kind == "send":
            sent.setdefault(peer, set()).add(tag)
            continue
        if tag not in sent.get(peer, ()) or tag != max(sent[peer]):
            return False
    return True


def _run_paths():
    """Every ring path RingTransport serves, on rank 0's gradient (values irrelevant here)."""
    from gcsim.executor.collectives import cerar_all_reduce, ring_all_reduce

    g = torch.arange(1.0, 12.0, dtype=torch.float64)  # d = 11: padded for c = 2, 3 and N = 2
    yield "ring", lambda: ring_all_reduce(g)
    for name, (n, c, method, kw) in DESIGNS.items():
        des = design(n, c, method, **kw)
        for seg in (1 << 30, 16):  # whole packets, and pieces of 2 float64
            yield f"{name}/{seg}", lambda des=des, seg=seg: cerar_all_reduce(g, des, segment_bytes=seg)


@pytest.mark.parametrize("coalesce", [False, True], ids=["gloo-works", "nccl-one-work"])
@pytest.mark.parametrize("path", ["ring", "sparse/1073741824", "sparse/16", "dense/1073741824", "dense/16"])
def test_two_ranks_post_no_receive_before_its_send(monkeypatch, path, coalesce):
    rec = _Recorder(2, coalesce)
    rec.install(monkeypatch)
    run = dict(_run_paths())[path]
    run()
    sends = [e for e in rec.events if e[0] == "send"]
    recvs = [e for e in rec.events if e[0] == "recv"]
    assert sends and len(sends) == len(recvs)  # every packet sent and received, all to/from rank 1
    assert {e[1] for e in rec.events} == {1}
    assert _receives_never_ahead_of_their_send(rec.events), rec.events[:6]
    # each packet's send and receive went out as one batch, the send listed first
    assert [(s[2], s[3]) for s in sends] == [(r[2], r[3]) for r in recvs]
    assert all(b is not None for *_, b in rec.events)
    # every work handed back is waited exactly once (receive, send or their coalesced pair)
    assert [w.waits for w in _handed_back(rec)] == [1] * len(_handed_back(rec))


def test_three_ranks_still_post_receives_ahead(monkeypatch):
    # N >= 3: two different peers; the receive of the next packet is posted before its send (as before)
    rec = _Recorder(3)
    rec.install(monkeypatch)
    from gcsim.executor.collectives import ring_all_reduce

    ring_all_reduce(torch.arange(1.0, 8.0, dtype=torch.float64))
    assert rec.events[0] == ("recv", 2, 1, None) and rec.batches == 0
    assert {(k, p) for k, p, *_ in rec.events} == {("send", 1), ("recv", 2)}


def test_the_order_check_can_fail():
    # a receive posted ahead of its send (what the transport did at N = 2 before) is refused
    assert not _receives_never_ahead_of_their_send([("recv", 1, 1, None), ("send", 1, 1, None)])
    assert not _receives_never_ahead_of_their_send([("send", 1, 1, 1), ("recv", 1, 1, 1), ("recv", 1, 2, None)])
    assert _receives_never_ahead_of_their_send([("send", 1, 1, 1), ("recv", 1, 1, 1)])


def _two_rank_job(rank, world_size, spec):
    """Every ring path at world size 2 on one seeded gradient (gloo), and the library all-reduce."""
    from gcsim.executor.collectives import cerar_all_reduce, library_all_reduce, ring_all_reduce

    g = np.random.default_rng(spec["seed"]).standard_normal((world_size, spec["d"]))
    mine = torch.tensor(g[rank])
    out = {"library": library_all_reduce(mine).numpy(), "ring": ring_all_reduce(mine).numpy()}
    for name, des in spec["designs"].items():
        for seg in (1 << 30, 16):
            out[f"{name}/{seg}"] = cerar_all_reduce(mine, des, segment_bytes=seg).numpy()
    return out


@pytest.mark.distributed
def test_two_rank_ring_paths_match_library_and_simulator():
    if not dist.is_available() or not dist.is_gloo_available():  # pragma: no cover
        pytest.skip("torch.distributed with gloo is not available")
    N, d, seed = 2, 11, 5
    designs = {name: design(n, c, method, **kw) for name, (n, c, method, kw) in DESIGNS.items()}
    spec = {
        "seed": seed,
        "d": d,
        "designs": {
            k: {"N": v.N, "c": v.c, "encoders": v.encoders, "decoders": v.decoders} for k, v in designs.items()
        },
    }
    R = launch(_two_rank_job, N, (spec,), timeout=90).raise_on_failure().results
    g = np.random.default_rng(seed).standard_normal((N, d))
    total = g.sum(axis=0)
    ssum = sum_tol(g)  # a sum of N terms, the reference's own rounding included below
    for r in R:
        for algo in ("library", "ring"):
            assert np.all(np.abs(r[algo] - total) <= 2 * ssum), algo
    exact = designs["sparse"]
    tol_exact = cerar_output_tol(exact.encoders, exact.decoders, g).reshape(N, -1)[:, :d]
    dense = designs["dense"]
    sim = simulate(dense, g, accumulate="batched").outputs
    tol_dense = cerar_output_tol(dense.encoders, dense.decoders, g).reshape(N, -1)[:, :d]
    for i, r in enumerate(R):
        for seg in (1 << 30, 16):
            # the exact design sums exactly but for rounding; the dense one equals the simulator's rounds
            assert np.all(np.abs(r[f"sparse/{seg}"] - R[i]["library"]) <= tol_exact[i] + 2 * ssum), seg
            assert np.all(np.abs(r[f"dense/{seg}"] - sim[i]) <= 2 * tol_dense[i]), seg
    # c > N: the dense design is not exact, and the check above is not vacuous
    assert np.max(np.abs(sim - total)) > 2 * tol_dense.max()


def test_a_ring_of_two_refuses_to_receive_a_packet_not_yet_sent(monkeypatch):
    from gcsim.executor.collectives import RingTransport

    rec = _Recorder(2)
    rec.install(monkeypatch)
    link = RingTransport("t", 1, 1, 3, torch.float64, torch.device("cpu"), 2, ahead=2)
    assert rec.events == []  # nothing posted ahead, whatever `ahead` says
    with pytest.raises(RuntimeError, match="packet 1 received before it was sent"):
        link.recv(1)
