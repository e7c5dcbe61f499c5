"""The link-level schedule model of the collectives' time (theory §56.7), against hand computations.

Every expected time below is worked out by hand in exact rationals (the derivations are in the
comments and in theory §56.7), not taken from the simulator; the ring and power-of-two
halving-doubling are checked against the closed form of §56.1, which they must equal.  No clock is
read.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from gcsim._stats import median_interval
from gcsim.errors import InvalidArgumentError
from gcsim.executor.allreduce import Post, Recv, Schedule, Send, collectives, get_collective, max_min_rates, simulate
from gcsim.executor.allreduce.straggler_aware import straggler_aware_window
from gcsim.executor.collectives_bench import LINK_BOUND_SHARE, fit_overhead, summarize

A = F(1, 3)  # alpha: a third of a second, so that alpha and byte terms cannot be confused


def _T(name: str, N: int, d: int, alpha=A, beta=F(1), delay=F(0), rendezvous=False, **options) -> F:
    """The simulated time of a registered collective with 1-byte scalars (so bytes = scalars)."""
    sch = get_collective(name).schedule(N, d, 1, **options)
    return max(simulate(sch, alpha, beta, delay=delay, rendezvous=rendezvous))


def test_max_min_rates_by_hand():
    # one connection per port: the full rate
    assert max_min_rates([(0, 1), (1, 0)], 2) == [1, 1]
    # 0's uplink carries three; 1 -> 2 shares 2's downlink with 0 -> 2 only: it gets what 0 -> 2 leaves
    assert max_min_rates([(0, 1), (0, 2), (0, 3), (1, 2)], 4) == [F(1, 3)] * 3 + [F(2, 3)]
    # a chain of bottlenecks: 3 -> 0 and 1 -> 0 share 0's downlink; 1 -> 2 takes the rest of 1's uplink
    assert max_min_rates([(3, 0), (1, 0), (1, 2)], 4) == [F(1, 2), F(1, 2), F(1, 2)]


@pytest.mark.parametrize("N", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("d", [1, 7, 100])
def test_ring_and_cerar_equal_the_closed_form(N, d):
    """Every port carries one connection at a time, so round k takes alpha + B_k / beta exactly."""
    beta = F(5, 2)
    w = -(-d // N)
    closed = 2 * (N - 1) * (A + F(w) / beta)
    assert _T("ring", N, d, beta=beta) == closed
    assert _T("cerar", N, d, beta=beta) == closed  # c = N: the ring's rounds and packets
    c = 2 if N > 2 else 1
    assert _T("cerar", N, d, beta=beta, c=c) == (c + N - 2) * (A + F(-(-d // c)) / beta)
    # with gloo's rendezvous only the first round waits, one alpha, for its notice (Proposition 56.6(i))
    assert _T("ring", N, d, beta=beta, rendezvous=True) == closed + A
    assert _T("cerar", N, d, beta=beta, rendezvous=True) == closed + A
    cost = get_collective("ring").cost(N, d, 1)
    assert F(cost.time(float(A), float(beta))) == pytest.approx(closed)


@pytest.mark.parametrize("N", [2, 4, 8])
@pytest.mark.parametrize("d", [1, 8, 37])
def test_halving_doubling_power_of_two_equals_the_closed_form(N, d):
    beta = F(3)
    w = -(-d // N)
    rounds = [N * w // 2 ** (k + 1) for k in range(N.bit_length() - 1)]
    closed = sum(2 * (A + F(b) / beta) for b in rounds)
    assert _T("halving-doubling", N, d, beta=beta) == closed
    assert _T("halving-doubling", N, d, beta=beta, rendezvous=True) == closed + A  # Proposition 56.6(i)


def test_halving_doubling_fold_by_hand():
    """N = 3, d = D even, beta = 1.  Rank 2's halving send (D/2) and rank 0's fold (D) share rank 1's
    downlink from 0: each at 1/2, so the half is in at D, the fold at D + D/2 = 3D/2.  Rank 1 then
    sends its half (done 2D + alpha) and, FIFO behind it, its doubling half (done 5D/2 + alpha,
    in at rank 2 at 5D/2 + 2 alpha); rank 2's doubling half leaves at 2D + 2 alpha (after rank 1's
    half), in at 5D/2 + 3 alpha; rank 1 unfolds D to rank 0: 7D/2 + 4 alpha.  The closed form
    counts rounds D, D/2, D/2, D: 3D + 4 alpha."""
    D = 10
    assert _T("halving-doubling", 3, D) == F(7 * D, 2) + 4 * A
    assert F(get_collective("halving-doubling").cost(3, D, 1).time(float(A), 1.0)) == pytest.approx(3 * D + 4 * A)


def test_tree_by_hand():
    """beta = 1, D bytes per message.
    N = 2: up then down, 2D + 2 alpha (the closed form).
    N = 3: ranks 1 and 2 report to 0 at once (0's downlink: D/2 each, 2D), 0 sends to both at once
    (its uplink: 2D): 4D + 2 alpha; the closed form counts 4 rounds: 4D + 4 alpha.
    N = 4: 1 -> 0 and 3 -> 2 (D + alpha), 2 -> 0 (2D + 2 alpha); 0 -> 2 and 0 -> 1 share 0's uplink
    (4D + 3 alpha), then 2 -> 3 (5D + 4 alpha); the closed form: 4D + 4 alpha."""
    D = 6
    assert _T("tree", 2, D) == 2 * D + 2 * A
    assert _T("tree", 3, D) == 4 * D + 2 * A
    assert _T("tree", 4, D) == 5 * D + 4 * A
    # a late rank 3 on N = 4: 3 -> 2 starts at the delay; 1 -> 0 is long in, so the rest is shifted
    assert _T("tree", 4, D, delay=F(100)) == 100 + 5 * D + 4 * A


def test_straggler_aware_by_hand():
    """N = 3 (M = 2 ready ranks 0, 1; straggler 2), d = 4, pieces = 1: chunks of w = 2 bytes, beta = 1;
    sends go at once (no rendezvous), so the receive gate (default) is no gate: as ``gate="none"``.
    Without a gate and without delay: the reduce-scatter (0 <-> 1) and the straggler's two
    chunks start together; every port that carries two connections (2's uplink, 0's and 1's downlinks)
    gives each 1/2, so all four end at 2w, in at 2w + alpha; then each owner forwards its chunk to the
    other ready rank and to the straggler, two connections on its uplink and two into 2's downlink: 1/2
    each, in at 4w + 2 alpha.
    With the signal: the reduce-scatter runs alone (in at w + alpha), the two 1-byte signals
    share 2's downlink (in at w + 2 + 2 alpha), then the stream (2w) and the forwards (2w, 2 alpha):
    5w + 2 + 4 alpha.
    With a delay >= w + 2 + 2 alpha the reduce-scatter and the signals are over when the straggler
    arrives; its two chunks share its uplink (2w), the forwards as before: delay + 4w + 2 alpha either
    way, which is the closed form of §56.4 with q = w."""
    w = 2
    assert _T("straggler-aware", 3, 4, pieces=1, gate="none") == 4 * w + 2 * A
    assert _T("straggler-aware", 3, 4, pieces=1) == 4 * w + 2 * A
    assert _T("straggler-aware", 3, 4, pieces=1, gate="signal") == 5 * w + 2 + 4 * A
    for gate in ("receive", "signal", "none"):
        assert _T("straggler-aware", 3, 4, pieces=1, delay=F(50), gate=gate) == 50 + 4 * w + 2 * A
        cost = get_collective("straggler-aware").cost(3, 4, 1, pieces=1, gate=gate)
        assert cost.time(float(A), 1.0, 50.0) == pytest.approx(float(50 + 4 * w + 2 * A))
    # the closed form without delay: (M - 1)(alpha + w) + (alpha + M) + 2 alpha + M (w + q), the simulation's
    closed = get_collective("straggler-aware").cost(3, 4, 1, pieces=1, gate="signal").time(float(A), 1.0)
    assert closed == pytest.approx(float(5 * w + 2 + 4 * A))


def test_straggler_aware_rendezvous_by_hand():
    """The same N = 3, w = 2, beta = 1, with gloo's rendezvous (theory §56.13): a message leaves once its
    receive is posted and the notice has crossed the link (alpha).
    Receive gate, no delay: the reduce-scatter's receives are posted at 0, so both chunks leave at
    alpha, in at 2 alpha + w; the ready ranks then post their receives of the straggler's chunks, whose
    notices reach it at 3 alpha + w; its two chunks share its uplink (2w), in at 4 alpha + 3w; the
    forwards (receives posted at the start) take 2w + alpha: 5 alpha + 5w.
    Signal, no delay: the signals' receives were posted at 0, so they go at 2 alpha + w and share 2's
    downlink (2 byte-times), in at 3 alpha + w + 2; then 2w + alpha and 2w + alpha: 5 alpha + 5w + 2.
    Delay 50: with the receive gate the notices are long there, so 50 + 4w + 2 alpha as without
    rendezvous; the signals' receives are posted only at 50 (notice at 50 + alpha), the signals in at
    50 + 2 alpha + 2, then 4w + 2 alpha: two one-way delays and the signals' bytes more."""
    w = 2
    assert _T("straggler-aware", 3, 4, pieces=1, rendezvous=True) == 5 * A + 5 * w
    assert _T("straggler-aware", 3, 4, pieces=1, rendezvous=True, gate="signal") == 5 * A + 5 * w + 2
    late = {"pieces": 1, "delay": F(50), "rendezvous": True}
    assert _T("straggler-aware", 3, 4, **late) == 50 + 4 * w + 2 * A
    assert _T("straggler-aware", 3, 4, gate="signal", **late) == 50 + 4 * w + 4 * A + 2


def test_straggler_aware_window_by_hand():
    """N = 3, d = 4, pieces = 2 (pieces of one byte), beta = 1, no rendezvous, delay 50 (the reduce-scatter
    long over).  No window: both pieces to each owner leave at 50 on two connections sharing 2's uplink
    (1/2 each): piece 0 in at 52 + alpha, piece 1 at 54 + alpha.  From 52 + alpha every port carries two
    connections (2 -> 0, 2 -> 1 and the owners' forwards to each other and to 2), so each finished piece
    takes 2 to forward: in at 54 + 2 alpha and 56 + 2 alpha.
    Window 1: piece 1 to an owner waits for that owner's finished piece 0 (in at 54 + 2 alpha, as above);
    it is in at 56 + 3 alpha, forwarded in at 58 + 4 alpha: the window costs a piece's time and a round
    trip when it is shorter than the pipeline.  Window 2 = pieces: no window."""
    late = {"pieces": 2, "delay": F(50)}
    assert _T("straggler-aware", 3, 4, **late) == 56 + 2 * A
    assert _T("straggler-aware", 3, 4, window=2, **late) == 56 + 2 * A
    assert _T("straggler-aware", 3, 4, window=5, **late) == 56 + 2 * A
    assert _T("straggler-aware", 3, 4, window=1, **late) == 58 + 4 * A
    # the window moves no byte and no message
    for window in (None, 1, 2):
        sch = get_collective("straggler-aware").schedule(3, 4, 1, pieces=2, window=window)
        assert sch.bytes_sent == get_collective("straggler-aware").cost(3, 4, 1, pieces=2).bytes_sent
        assert sch.messages == get_collective("straggler-aware").schedule(3, 4, 1, pieces=2).messages


def test_window_rule_by_hand():
    """k* = 2 + ceil(2 alpha beta / (M q b)) (Proposition 56.7), worked out by hand: N = 4 (M = 3),
    d = 24 (w = 8), pieces = 8 (q = 1), b = 1, beta = 1: tau = 3.  alpha = 3: 2 alpha / tau = 2, k* = 4;
    alpha = 1/3: 2/9, k* = 3; alpha = 0: k* = 2; alpha = 30: 22, capped at P = 8."""
    assert straggler_aware_window(4, 24, 1, alpha=3, beta=1, pieces=8) == 4
    assert straggler_aware_window(4, 24, 1, alpha=1 / 3, beta=1, pieces=8) == 3
    assert straggler_aware_window(4, 24, 1, alpha=0, beta=1, pieces=8) == 2
    assert straggler_aware_window(4, 24, 1, alpha=30, beta=1, pieces=8) == 8
    # itemsize and beta enter as q b / beta: 4-byte scalars at beta = 4 is the same link time
    assert straggler_aware_window(4, 24, 4, alpha=3, beta=4, pieces=8) == 4


@pytest.mark.parametrize("N, P", [(3, 2), (4, 4), (4, 8), (5, 3)])
@pytest.mark.parametrize("alpha, beta", [(F(3), F(1)), (F(1, 3), F(5, 2)), (F(0), F(1))])
def test_window_costs_a_late_straggler_nothing(N, P, alpha, beta):
    """Proposition 56.7: with k* the schedule is the one without a window, whose time after a late
    straggler is the closed form of Proposition 56.3 (equal pieces: w a multiple of P); with and
    without the rendezvous."""
    M = N - 1
    w = 2 * P
    d = M * w
    q = w // P
    k = straggler_aware_window(N, d, 1, alpha=float(alpha), beta=float(beta), pieces=P)
    late = {"alpha": alpha, "beta": beta, "delay": F(1000), "pieces": P}
    closed = 1000 + 2 * alpha + M * (w + q) / beta
    assert _T("straggler-aware", N, d, **late) == closed
    assert _T("straggler-aware", N, d, window=k, **late) == closed
    assert _T("straggler-aware", N, d, window=k, rendezvous=True, **late) == closed
    # not claimed in general, but on these cases the rule is tight: one piece less costs
    assert k == 1 or _T("straggler-aware", N, d, window=k - 1, **late) > closed


def test_ring_rendezvous_by_hand():
    """N = 2, w = 4, beta = 1, rank 1 starts at 30, receives posted one round ahead (RingTransport).
    Rank 0's first chunk waits for rank 1's notice (30 + alpha), in at 30 + 2 alpha + w; rank 1's leaves
    at 30 (0's notice came at alpha), in at 30 + alpha + w; rank 0 answers at once (1 posted its second
    receive at 30), in at 30 + 2 alpha + 2w; rank 1 answers at 30 + 2 alpha + w, in at 30 + 3 alpha + 2w.
    Without rendezvous: 30 + 2 alpha + 2w (test_ring_with_a_straggler_by_hand)."""
    assert _T("ring", 2, 8, delay=F(30), rendezvous=True) == 30 + 2 * 4 + 3 * A
    # no straggler: only the first notice shows, one alpha on top of the closed form
    assert _T("ring", 4, 40, rendezvous=True) == _T("ring", 4, 40) + A


def test_ring_with_a_straggler_by_hand():
    """N = 2, w bytes per round, beta = 1, rank 1 starts at delay >= w + alpha.  Rank 0's first chunk
    is in at w + alpha; rank 1 posts both its rounds at the delay (FIFO: done at delay + w and + 2w);
    rank 0 answers the first at delay + w + alpha, in at delay + 2w + 2 alpha = delay + T_0."""
    d = 8  # w = 4
    assert _T("ring", 2, d, delay=F(30)) == 30 + 2 * 4 + 2 * A


@pytest.mark.parametrize("N", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("d", [1, 5, 37])
def test_every_schedule_sends_the_counted_bytes(N, d):
    """The schedules carry exactly the bytes the cost model proves (theory §56.1-§56.5)."""
    for col in collectives():
        assert col.schedule is not None, col.name
        for s in {0, N - 1}:
            assert col.schedule(N, d, 4, straggler=s).bytes_sent == col.cost(N, d, 4, straggler=s).bytes_sent


def test_bad_schedules_named():
    with pytest.raises(InvalidArgumentError, match="^schedule: .*unmatched"):
        simulate(Schedule("x", ((Send(1, 4, 0),), ())), 0, 1)
    with pytest.raises(InvalidArgumentError, match="^schedule: .*deadlock"):
        simulate(Schedule("x", ((Recv(1, 0), Send(1, 4, 0)), (Recv(0, 0), Send(0, 4, 0)))), 0, 1)
    with pytest.raises(InvalidArgumentError, match="^beta: "):
        simulate(Schedule("x", ((), ())), 0, 0)
    with pytest.raises(InvalidArgumentError, match="^straggler: "):
        simulate(Schedule("x", ((), ())), 0, 1, straggler=2)
    with pytest.raises(InvalidArgumentError, match="^rendezvous: "):
        simulate(Schedule("x", ((), ())), 0, 1, rendezvous="yes")
    two = (Send(1, 4, 0),)
    with pytest.raises(InvalidArgumentError, match="^schedule: .*after its receive"):
        simulate(Schedule("x", (two, (Recv(0, 0), Post(0, 0)))), 0, 1)
    with pytest.raises(InvalidArgumentError, match="^schedule: .*repeated"):
        simulate(Schedule("x", (two, (Post(0, 0), Post(0, 0), Recv(0, 0)))), 0, 1)
    with pytest.raises(InvalidArgumentError, match="^schedule: .*posts without a receive"):
        simulate(Schedule("x", (two, (Post(0, 7), Recv(0, 0)))), 0, 1)
    # a held message does not block the connection behind it (gloo matches by slot): 0's second message,
    # posted at the start, passes the first, held until 1 posts its receive after getting the second
    passing = Schedule("x", ((Send(1, 4, 0), Send(1, 4, 1)), (Recv(0, 1), Post(0, 0), Recv(0, 0))))
    assert simulate(passing, 1, 1, rendezvous=True) == (0, (1 + 4 + 1) + (1 + 4 + 1))  # notice, bytes, delivery: twice


def test_latency_only_counts_deliveries():
    """beta = inf: the time is alpha times the longest chain of dependent messages."""
    sch = get_collective("tree").schedule(4, 1000, 4)
    assert simulate(sch, F(1), float("inf")) == (2, 3, 3, 4)  # rank 0 ends with its receive; 3 is two hops below
    assert sch.time(0.5, float("inf")) == 2.0


def test_median_interval_by_hand():
    # n = 9: P(B <= 1) = 10/512 <= 0.025 < P(B <= 2) = 46/512, so x_(2) and x_(8)
    assert median_interval([9, 1, 8, 2, 7, 3, 6, 4, 5]) == (2.0, 8.0, 1 - 2 * 10 / 512)
    # n = 7: only x_(1), x_(7) reach 95 %: coverage 1 - 2/128
    assert median_interval(range(7)) == (0.0, 6.0, 1 - 2 / 128)
    with pytest.raises(InvalidArgumentError, match="^values: "):
        median_interval(range(5))


def test_link_bound_and_calibration():
    """A row is link-bound when the bandwidth term is at least half its time after the delay."""
    base = {"collective": "ring", "options": {}, "N": 2, "d": 1000, "itemsize": 4, "delay": 0.0,
            "bytes_sent": [4000, 4000], "predicted_bytes": [4000, 4000]}  # fmt: skip
    # 2 rounds of 2000 bytes at 1e6 B/s = 4 ms of bandwidth; alpha 1 ms per round: 2 ms
    row = summarize([{**base, "seconds": [0.006] * 7}], alpha=1e-3, beta=1e6)[0]
    assert row["predicted_s"] == pytest.approx(0.006) and row["bandwidth_share"] == pytest.approx(4 / 6)
    assert row["link_bound"] and LINK_BOUND_SHARE == 0.5
    slow = summarize([{**base, "seconds": [0.006] * 7}], alpha=5e-3, beta=1e6)[0]
    assert slow["bandwidth_share"] == pytest.approx(4 / 14) and not slow["link_bound"]
    # calibration: the ring's excess over the model, per delivery (2 on N = 2)
    fits = fit_overhead({"rows": [{**row, "median_s": 0.010, "link": "1mbit", "link_delay": "1ms"}]})
    assert fits == {"1mbit:1ms": pytest.approx(0.002)}
    cal = summarize([{**base, "seconds": [0.010] * 7}], alpha=1e-3, beta=1e6, overhead=0.002)[0]
    assert cal["calibrated_s"] == pytest.approx(0.010) and cal["calibrated_within_15pct"]


def test_token_bucket_by_hand():
    """Ring on N = 2, w = 10 bytes per round, beta = 1, alpha = 2, buckets of 4 bytes, full at the start.
    Round 0: 4 bytes pass at once, 6 at beta: delivered at 6 + 2 = 8; the ports were busy at beta until
    6 (no refill), then idle for 2 s: 2 tokens.  Round 1: 2 bytes at once, 8 at beta: delivered at
    8 + 8 + 2 = 18 (no bucket: 2 (10 + 2) = 24)."""
    sch = get_collective("ring").schedule(2, 20, 1)
    assert simulate(sch, F(2), F(1)) == (24, 24)
    assert simulate(sch, F(2), F(1), burst=F(4)) == (18, 18)
    # a bucket larger than every message: only the deliveries count (and no token runs out)
    assert simulate(sch, F(2), F(1), burst=F(100)) == (4, 4)


def test_tbf_burst_of_the_emulated_links():
    from gcsim.executor.netem import shaping_commands, tbf_burst

    for rate in ("100mbit", "20mbit", "1gbit"):
        tbf = shaping_commands("ns", "eth0", rate, None)[0]
        assert int(tbf[tbf.index("burst") + 1]) == tbf_burst(rate)


def test_token_bucket_carries_its_tokens_between_messages():
    """Ping-pong of 10-byte messages, beta = 1, alpha = 2, buckets of 4 bytes (theory §56.10).
    0 -> 1: 4 bytes at once, 6 at beta: sent by 6, delivered at 8.  1 -> 0 finds 1's uplink and 0's
    downlink full (idle since 0, capped at 4): sent by 14, delivered at 16.  0 -> 1 again: 0's uplink and
    1's downlink were busy at beta until 6 (no refill), then idle for 10 s: full again (capped at 4, not
    10): delivered at 16 + 6 + 2 = 24.  No bucket: 3 (10 + 2) = 36."""
    a = (Send(1, 10, 0), Recv(1, 1), Send(1, 10, 2))
    b = (Recv(0, 0), Send(0, 10, 1), Recv(0, 2))
    sch = Schedule("pingpong", (a, b))
    assert simulate(sch, F(2), F(1)) == (24, 36)  # rank 0 ends when it has posted its last send
    assert simulate(sch, F(2), F(1), burst=F(4)) == (16, 24)


def test_token_bucket_of_a_shared_downlink():
    """Ranks 0 and 1 send 10 bytes each to rank 2 at once; beta = 1, alpha = 2, buckets of 4 bytes.
    Both uplinks hold 4 tokens, 2's downlink 4: the two flows share the downlink's 4 (2 each) at once;
    then the downlink is empty and passes beta, 1/2 to each flow, so each has 8 bytes left at 1/2:
    sent by 16, delivered at 18.  The busy downlink saves its own 4 bytes only (no bucket: 20 + 2 = 22)."""
    sch = Schedule("fanin", ((Send(2, 10, 0),), (Send(2, 10, 0),), (Recv(0, 0), Recv(1, 0))))
    assert simulate(sch, F(2), F(1)) == (0, 0, 22)
    assert simulate(sch, F(2), F(1), burst=F(4)) == (0, 0, 18)


def test_framing_by_hand():
    """A message of 3000 payload bytes is 3 TCP segments of at most 1448 bytes, each with 66 header
    bytes: 3198 bytes on the link (theory §56.10); at beta = 1, alpha = 0 that takes 3198 s, and a bucket
    of 198 bytes hides exactly the headers."""
    from gcsim.executor.allreduce import wire_bytes
    from gcsim.executor.netem import TCP_FRAMING

    assert TCP_FRAMING == (1500 - 20 - 20 - 12, 14 + 20 + 20 + 12)
    assert wire_bytes(3000, TCP_FRAMING) == 3198 and wire_bytes(1448, TCP_FRAMING) == 1514
    sch = Schedule("one", ((Send(1, 3000, 0),), (Recv(0, 0),)))
    assert simulate(sch, 0, 1, framing=TCP_FRAMING) == (0, 3198)
    assert simulate(sch, 0, 1, framing=TCP_FRAMING, burst=198) == (0, 3000)
    for bad in [(0, 66), (1448, -1), "x", (1448,)]:
        with pytest.raises(InvalidArgumentError, match="framing"):
            simulate(sch, 0, 1, framing=bad)
