"""Cells of notebooks/13_sequential.ipynb (sequential gradient coding), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (the bursty model, the selective-repeat scheme on one burst, a brute-force check, the
forgiveness order, a short Markov comparison, the measured trace, the multiplexed scheme and its
least-squares decoding) so that ``tests/test_notebooks.py`` runs it in a few seconds.
"""

from __future__ import annotations

NAME = "13_sequential.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Sequential gradient coding\n\nJob `t` (the gradient of iteration `t`) may be decoded up to `T` "
        "rounds later. Under the `(B, W, λ)` bursty model the selective-repeat scheme (delay `T = B`) "
        "needs a per-round code for only `s = ⌈λ / (⌊(W-1)/B⌋ + 1)⌉` stragglers (theory §62).",
    ),
    (
        "code",
        (
            "import itertools\n"
            "\n"
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "from gcsim.coding.sequential import (\n"
            "    SelectiveRepeat,\n"
            "    is_bursty,\n"
            "    markov_masks,\n"
            "    simulate_classic,\n"
            "    simulate_selective_repeat,\n"
            ")\n"
            "\n"
            "code = SelectiveRepeat(6, B=2, W=5, lam=3)\n"
            "print(code, 's =', code.s, 'delay =', code.delay)\n"
            "print('load', code.load, 'per-round load', code.classic_load)"
        ),
    ),
    ("md", "## One burst\n\nThree workers straggle in round 0 and one of them again in round 1 (a burst of 2)."),
    (
        "code",
        (
            "masks = np.ones((8, 6), bool)\n"
            "masks[0, :3] = False\n"
            "masks[1, 0] = False\n"
            "print('admissible:', is_bursty(masks, 2, 5, 3))\n"
            "run = simulate_selective_repeat(code, masks)\n"
            "print('decoded in round:', run.decoded.tolist())\n"
            "print('work (job per worker and round):')\n"
            "print(run.work)\n"
            "classic = simulate_classic(6, code.s, masks[:6])\n"
            "print('per-round code, s =', code.s, ':', classic.decoded.tolist())"
        ),
    ),
    (
        "md",
        "## Every admissible sequence, by brute force\n\n`n = 4`, `(B, W, λ) = (1, 3, 3)`, 3 jobs: every "
        "job is decoded within `B` rounds (Theorem 62.2).",
    ),
    (
        "code",
        (
            "small = SelectiveRepeat(4, B=1, W=3, lam=3)\n"
            "all_masks = [np.array(b, bool) for b in itertools.product([True, False], repeat=4)]\n"
            "count = worst = 0\n"
            "for seq in itertools.product(all_masks, repeat=4):\n"
            "    seq = np.array(seq)\n"
            "    if not is_bursty(seq, 1, 3, 3):\n"
            "        continue\n"
            "    run = simulate_selective_repeat(small, seq)\n"
            "    assert run.recovered_fraction == 1.0\n"
            "    count += 1\n"
            "    worst = max(worst, int((run.decoded - np.arange(3)).max()))\n"
            "print(count, 'admissible sequences, largest decoding delay', worst)"
        ),
    ),
    (
        "md",
        "## Markov stragglers\n\nCompletion time of 500 jobs when the master waits out (cost 1) every round "
        "that would lose a job, as the straggling probability grows (3 seeds; the full table is "
        "`docs/results/sequential.md`).",
    ),
    (
        "code",
        (
            "code = SelectiveRepeat(20, B=2, W=5, lam=6)\n"
            "p_enter = [0.01, 0.02, 0.04, 0.06]\n"
            "rows = []\n"
            "for pe in p_enter:\n"
            "    t = np.zeros(3)\n"
            "    for seed in range(3):\n"
            "        m = markov_masks(20, 502, pe, 0.5, seed=seed)\n"
            "        t += [\n"
            "            simulate_selective_repeat(code, m, wait_cost=1.0).completion_time,\n"
            "            simulate_classic(20, code.s, m[:500], wait_cost=1.0).completion_time,\n"
            "            simulate_classic(20, 6, m[:500], wait_cost=1.0).completion_time,\n"
            "        ]\n"
            "    rows.append(t / 3)\n"
            "rows = np.array(rows)\n"
            "for k, label in enumerate(['selective repeat s=2, T=2', 'per-round s=2', 'per-round s=6']):\n"
            "    plt.plot(p_enter, rows[:, k], 'o-', label=label)\n"
            "plt.xlabel('p_enter (p_leave = 0.5)')\n"
            "plt.ylabel('completion time')\n"
            "plt.legend()\n"
            "plt.show()"
        ),
    ),
    (
        "md",
        "## The forgiveness order\n\nWhich `s` debts are forgiven does not matter on admissible sequences "
        "(Proposition 62.4): both orders decode every one of them. Outside the model it does (Remark 62.5): "
        "the expected number of lost jobs over *all* `2^12` sequences of 4 rounds of 3 workers, each "
        "weighted by its probability under the `markov` kind (Gilbert–Elliott chains started stationary).",
    ),
    (
        "code",
        (
            "orders = {f: SelectiveRepeat(4, B=1, W=3, lam=3, forgive=f) for f in ('oldest', 'newest')}\n"
            "for seq in itertools.product(all_masks, repeat=4):\n"
            "    seq = np.array(seq)\n"
            "    if is_bursty(seq, 1, 3, 3):\n"
            "        assert all(simulate_selective_repeat(c, seq).lost == 0 for c in orders.values())\n"
            "print('both orders decode every admissible sequence')\n"
            "\n"
            "\n"
            "def probability(seq, pe, pl):\n"
            "    pi, prob = pe / (pe + pl), 1.0\n"
            "    for col in (~seq).T:\n"
            "        prob *= pi if col[0] else 1 - pi\n"
            "        for a, b in zip(col[:-1], col[1:], strict=True):\n"
            "            prob *= ((1 - pl) if b else pl) if a else (pe if b else 1 - pe)\n"
            "    return prob\n"
            "\n"
            "\n"
            "three = [np.array(b, bool) for b in itertools.product([True, False], repeat=3)]\n"
            "codes = {f: SelectiveRepeat(3, B=1, W=2, lam=2, forgive=f) for f in ('oldest', 'newest')}\n"
            "lost = dict.fromkeys(codes, 0.0)\n"
            "for seq in itertools.product(three, repeat=4):\n"
            "    seq = np.array(seq)\n"
            "    prob = probability(seq, 0.1, 0.5)\n"
            "    for f, c in codes.items():\n"
            "        lost[f] += prob * simulate_selective_repeat(c, seq).lost\n"
            "print({f: round(v, 4) for f, v in lost.items()}, 'expected lost jobs of 3')"
        ),
    ),
    (
        "md",
        "## The registry's model, and a measured trace\n\nThe bursty stragglers are the registry's `markov` "
        "kind: `straggler_masks` takes any registered model or `KIND:VALUES` spec. The trace "
        "`docs/results/sequential_trace.csv` holds 20 processes' gradient times, recorded on this project's "
        "2-core VM by `scripts/record_delay_trace.py`; the registry's `delay` kind replays it under a "
        "deadline (its 90 % quantile) and gives each round's masks and duration.",
    ),
    (
        "code",
        (
            "from pathlib import Path\n"
            "\n"
            "from gcsim import straggler_model\n"
            "from gcsim.coding.arrival_rules import arrival_rule\n"
            "from gcsim.coding.delay_laws import delay_model, load_trace\n"
            "from gcsim.coding.sequential import job_masks, straggler_masks\n"
            "\n"
            "same = straggler_masks('markov:0.05,0.5', 20, 50, seed=1)\n"
            "assert np.array_equal(same, markov_masks(20, 50, 0.05, 0.5, seed=1))\n"
            "trace = load_trace(Path('..') / 'docs' / 'results' / 'sequential_trace.csv')\n"
            "deadline = float(np.quantile(trace, 0.9))\n"
            "model = straggler_model(\n"
            "    'delay',\n"
            "    20,\n"
            "    delays=delay_model('trace', 20, delays=trace),\n"
            "    rule=arrival_rule('deadline', deadline=deadline),\n"
            ")\n"
            "delays, rule = model.delay_parts()\n"
            "masks, times = rule.apply(delays.sample_delays(trace.shape[1], 0))\n"
            "code = SelectiveRepeat(20, B=2, W=5, lam=6)\n"
            "run = simulate_selective_repeat(code, masks)\n"
            "classic = simulate_classic(20, code.s, masks[:-2])\n"
            "print(f'deadline {deadline * 1e3:.1f} ms; stragglers per round: max {(~masks).sum(1).max()}')\n"
            "print(\n"
            "    'recovered: selective repeat',\n"
            "    round(run.recovered_fraction, 4),\n"
            "    ', per-round s = 2',\n"
            "    round(classic.recovered_fraction, 4),\n"
            ")\n"
            "arrived = job_masks(run, masks).sum(1)\n"
            "plt.plot((~masks).sum(1), label='stragglers in the round')\n"
            "plt.plot(20 - arrived, label='tasks of the job missing at its deadline')\n"
            "plt.axhline(code.s, color='k', lw=0.5)\n"
            "plt.xlabel('round')\n"
            "plt.legend()\n"
            "plt.show()"
        ),
    ),
    (
        "md",
        "## The multiplexed scheme (M-SGC)\n\nEach job: `W - 1` uncoded chunks per worker, then in each of `B` "
        "rounds either a coded task of one group (if the worker's chunks are in) or a missing chunk; delay "
        "`T = W - 2 + B` (theory §62.4). Its load, every admissible sequence of a small case (Theorem 62.8), "
        "and 300 Markov rounds: stragglers lost, and the two waiting rules (Remark 62.9).",
    ),
    (
        "code",
        (
            "from gcsim.coding.sequential_multiplexed import MultiplexedSGC, simulate_multiplexed\n"
            "\n"
            "msgc = MultiplexedSGC(20, B=2, W=5, lam=6)\n"
            "print(\n"
            "    msgc,\n"
            "    'delay',\n"
            "    msgc.delay,\n"
            "    'load',\n"
            "    msgc.load_fraction,\n"
            "    '; selective repeat',\n"
            "    SelectiveRepeat(20, 2, 5, 6).load,\n"
            "    '; per-round',\n"
            "    msgc.classic_load,\n"
            ")\n"
            "tiny = MultiplexedSGC(3, B=1, W=2, lam=2)\n"
            "count = 0\n"
            "for seq in itertools.product(three, repeat=4):\n"
            "    seq = np.array(seq)\n"
            "    if is_bursty(seq, 1, 2, 2):\n"
            "        assert simulate_multiplexed(tiny, seq).recovered_fraction == 1.0\n"
            "        count += 1\n"
            "print(count, 'admissible sequences of 4 rounds: every job decoded within T =', tiny.delay)\n"
            "m = markov_masks(20, 305, 0.02, 0.5, seed=0)\n"
            "print('stragglers lost: recovered', round(simulate_multiplexed(msgc, m).recovered_fraction, 4))\n"
            "for rule in ('needed', 'model'):\n"
            "    run = simulate_multiplexed(msgc, m, wait_cost=1.0, wait_rule=rule)\n"
            "    print(\n"
            "        rule,\n"
            "        ': waited rounds',\n"
            "        int(run.waited.sum()),\n"
            "        ', completion time',\n"
            "        round(run.completion_time, 2),\n"
            "    )"
        ),
    ),
    (
        "md",
        "### A partly arrived job: least squares (§62.5)\n\nInstead of dropping a job that misses its deadline, "
        'the master can take the least-squares combination of its arrived mini-tasks (`partial="least-squares"`). '
        "Proposition 62.10: its error is 0 for a decoded job, at most 1 (dropping) and never larger when more "
        "arrives. Here the mean error of a job's gradient on the same 300 Markov rounds, and the errors of the "
        "jobs it does not decode.",
    ),
    (
        "code",
        (
            "lost = simulate_multiplexed(msgc, m)\n"
            "ls = simulate_multiplexed(msgc, m, partial='least-squares')\n"
            "print(\n"
            "    'mean error per job: dropped',\n"
            "    round(float(lost.error.mean()), 4),\n"
            "    ', least squares',\n"
            "    round(float(ls.error.mean()), 4),\n"
            ")\n"
            "plt.hist(ls.error[ls.decoded < 0], bins=30)\n"
            "plt.xlabel('least-squares error of a job not decoded')\n"
            "plt.ylabel('jobs')\n"
            "plt.show()"
        ),
    ),
]
