"""scripts/wire_capture.py's parser and report, on tcpdump text written here (no capture, no root)."""

from __future__ import annotations

import pytest

from guards import load_script


@pytest.fixture(scope="module")
def wc():
    return load_script("scripts/wire_capture.py")


def _seg(t: float, src: int, dst: int, a: int, n: int) -> str:
    return (
        f"{t:.6f} IP 10.213.0.{src + 1}.40000 > 10.213.0.{dst + 1}.50000: Flags [.], seq {a}:{a + n}, "
        f"ack 1, win 502, length {n}"
    )


def test_parse_keeps_data_segments_only(wc):
    text = "\n".join(
        [
            _seg(1.0, 3, 0, 100, 1448),
            "1.000100 IP 10.213.0.1.50000 > 10.213.0.4.40000: Flags [.], ack 1548, win 502, length 0",
            "1.000200 IP 10.213.0.4.40000 > 10.213.0.1.50000: Flags [S], seq 7, win 64240, length 0",
        ]
    )
    assert wc.parse(text) == [(1.0, 3, 0, 100, 1548)]


def test_report_busy_share_calls_and_retransmissions(wc):
    # rank 3 (the straggler) sends 10 full segments to rank 0 in each of two calls a second apart; rank 0
    # forwards 10 back, one of them twice; 100 Mbit/s: 1514 framed bytes take 121.12 us
    per = 1514 / 12.5e6
    link3, link0 = [], []
    for call in (0, 1):
        for k in range(10):
            t, a = call + k * per, 1 + 1448 * (10 * call + k)  # TCP's sequence numbers go on between calls
            link3.append(wc.parse(_seg(t, 3, 0, a, 1448))[0])
            s = wc.parse(_seg(t + 0.001 + k * per, 0, 3, a, 1448))[0]
            link0.append(s)
            link3.append(s)  # rank 0 -> 3 crosses rank 3's link too (as the hub sends it)
    link0.append(link0[-1])  # a segment seen twice on rank 0's link
    out = wc.report({0: link0, 3: link3}, 100e6, straggler=3, gap=0.25)
    lines = out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("call 0: ") and lines[1].startswith("call 1: ")
    # rank 0's forwards are two segment times apart: 10 segments' worth in 18 segment times -> 56 %,
    # and they are what the straggler's downlink carries
    assert lines[0] == "call 0: rank 0 uplink 1-3 ms 56 %; rank 3 downlink 1-3 ms 56 %"
    assert lines[2] == "data segments seen twice on a link (retransmissions): 1 of 61"


def test_command_line_refusals(wc, capsys):
    with pytest.raises(SystemExit):
        wc.main([])  # neither --out nor --report
    with pytest.raises(SystemExit):
        wc.main(["--out", "x", "--report", "y"])
