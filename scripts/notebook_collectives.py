"""Cells of notebooks/10_collectives.ipynb (collectives side by side), in the format of make_notebooks.py.

``make_notebooks.py`` adds them to its ``NOTEBOOKS`` as ``"10_collectives.ipynb"``.  The notebook shows the
registry of all-reduces (``gcsim.executor.allreduce``), their predicted bytes, rounds and times under the
alpha-beta model (theory §56) with and without a persistent straggler, and one small run of every collective
on three gloo ranks over loopback (no emulated links: CPU only, a few seconds) with the bytes counted
against the prediction.  The measured table over emulated links is docs/results/collectives.md.
"""

from __future__ import annotations

NAME = "10_collectives.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Collectives side by side\n"
        "\n"
        "Five all-reduces over `torch.distributed` point-to-point operations, each registered with the "
        "exact bytes it sends and its rounds (theory §56):\n"
        "\n"
        "* **ring**: reduce-scatter then all-gather, `2(N−1)` rounds of `⌈d/N⌉`;\n"
        "* **tree**: binomial reduce to rank 0 and broadcast back, `2⌈log2 N⌉` rounds of `d`;\n"
        "* **halving-doubling**: recursive halving, then doubling, `2 log2 p` rounds;\n"
        "* **straggler-aware**: in the manner of StragglAR, the ready ranks reduce-scatter among themselves "
        "while a persistent straggler is late, then a short completion phase merges its vector;\n"
        "* **cerar**: the CERAR ring with the exact design.\n"
        "\n"
        "This notebook compares their predictions, then runs each one on three gloo ranks and counts "
        "the bytes. The run over emulated links (root only) is in the results page *Collectives side by side*.",
    ),
    (
        "code",
        (
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "from gcsim.executor.allreduce import collectives, cost_table, get_collective, predicted_time\n"
            "from gcsim.executor.collectives_bench import run_side_by_side"
        ),
    ),
    (
        "md",
        "## 1. Predicted bytes, rounds and time\n"
        "\n"
        "Here `N = 4` ranks all-reduce one MiB of float32 (`d = 262144`) over 100 Mbit/s links with 1 ms of "
        "one-way delay. Each collective's `cost` gives the exact bytes per rank and its rounds. "
        "`CollectiveCost.time` adds the closed-form alpha-beta time. A bulk-synchronous collective pays the "
        "straggler's delay in full; the straggler-aware one overlaps its early rounds with the delay. "
        "`predicted_time` plays each collective's actual message schedule on full-duplex ports that "
        "concurrent messages share (theory §56.7); with `rendezvous=True` each message leaves only once its "
        "receive is posted and the notice has crossed the link, as gloo sends (§56.13). Without a "
        "straggler it is the closed form plus that first notice's one-way delay for the ring, CERAR and "
        "halving-doubling. It is longer for the tree, whose rank 0 sends its two broadcast copies at once, "
        "and for the straggler-aware collective, whose straggler's pieces wait until the ready ranks post "
        "their receives of them, after their reduce-scatter.",
    ),
    (
        "code",
        (
            "N, d, b = 4, 262144, 4\n"
            "alpha, beta = 1e-3, 100e6 / 8\n"
            "print(cost_table(N, d, b, alpha=alpha, beta=beta, delay=0.0))\n"
            "for col in collectives():\n"
            "    c = col.cost(N, d, b)\n"
            "    t = predicted_time(col, N, d, b, alpha=alpha, beta=beta, rendezvous=True)\n"
            "    print(\n"
            "        f'{col.name:17s} bytes per rank {c.bytes_sent}  '\n"
            "        f'early rounds {len(c.early)}  late rounds {len(c.late)}  '\n"
            "        f'closed form {c.time(alpha, beta):.4f} s  schedule model {t:.4f} s'\n"
            "    )"
        ),
    ),
    (
        "md",
        "The predicted time (schedule model, with gloo's rendezvous: a message leaves once its receive is "
        "posted, theory §56.13) against the straggler's delay. For the ring, CERAR and the "
        "tree it is a straight line of slope 1: nothing can finish before the straggler's data has gone "
        "round (the ring and CERAR have the same schedule here, so their lines coincide: solid and "
        "dashed). Halving-doubling bends at first: its ranks that do not wait for the straggler run ahead, "
        "and when it arrives its two sends overlap on its uplink. The straggler-aware line is flat at "
        "first: a straggler that arrives before the ready ranks' reduce-scatter is over finds its pieces held "
        "until they post their receives of them. Once the delay covers the early rounds it rises with slope "
        "1, below the ring by the bytes it moved during the delay. With `gate='none'` the ready ranks post "
        "those receives at once, and the straggler's stream shares their downlinks with their reduce-scatter.",
    ),
    (
        "code",
        (
            "delays = np.linspace(0.0, 0.4, 41)\n"
            "fig, ax = plt.subplots(figsize=(6.4, 3.6))\n"
            "for col, style in zip(\n"
            "    collectives(), ['-', '--', '-.', ':', (0, (6, 3))], strict=True\n"
            "):  # the ring and CERAR coincide\n"
            "    times = [\n"
            "        predicted_time(col, N, d, b, alpha=alpha, beta=beta, delay=x, rendezvous=True)\n"
            "        for x in delays\n"
            "    ]\n"
            "    ax.plot(delays, times, linestyle=style, linewidth=2, label=col.name)\n"
            "ax.set_xlabel('straggler delay (s)')\n"
            "ax.set_ylabel('predicted time (s)')\n"
            "ax.set_title('N = 4, 1 MiB, 100 Mbit/s, 1 ms')\n"
            "ax.legend()\n"
            "plt.show()\n"
            "ring, sa = get_collective('ring'), get_collective('straggler-aware')\n"
            "kw = dict(alpha=alpha, beta=beta, delay=0.3, rendezvous=True)\n"
            "print(\n"
            "    f'at 0.3 s of delay: ring {predicted_time(ring, N, d, b, **kw):.4f} s, '\n"
            "    f'straggler-aware {predicted_time(sa, N, d, b, **kw):.4f} s'\n"
            ")"
        ),
    ),
    (
        "md",
        "## 2. Every collective on three gloo ranks\n"
        "\n"
        "`run_side_by_side` launches the ranks, starts every run at one instant, and delays the last "
        "rank by each listed delay. Each rank counts the bytes it hands to `isend` and checks its "
        "output against the exact sum with the collective's round-off bound. "
        "`error_over_bound` ≤ 1 means the output is within the bound. With `N = 3`, halving-doubling "
        "folds rank 0 into rank 1, the standard treatment of a non-power of two. The times are "
        "loopback times on a shared CPU, so they are shown only as measured.",
    ),
    (
        "code",
        (
            "rows = run_side_by_side(3, 4099, delays=[0.0, 0.1], repeats=2, seed=1)\n"
            "for r in rows:\n"
            "    match = 'yes' if r['bytes_sent'] == r['predicted_bytes'] else 'NO'\n"
            "    print(\n"
            "        f\"{r['collective']:17s} delay {r['delay']:.1f} s  bytes {r['bytes_sent']} \"\n"
            '        f"(= predicted: {match})  "\n'
            "        f\"error/bound {r['error_over_bound']:.2f}  time {max(r['seconds']):.3f} s\"\n"
            "    )\n"
            "assert all(r['bytes_sent'] == r['predicted_bytes'] and r['error_over_bound'] <= 1 for r in rows)"
        ),
    ),
]
