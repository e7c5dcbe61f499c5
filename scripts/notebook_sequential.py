"""Cells of notebooks/13_sequential.ipynb (sequential gradient coding), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (the bursty model, the selective-repeat scheme on one burst, a brute-force check and a short
Markov comparison) so that ``tests/test_notebooks.py`` runs it in a few seconds.
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
        "import itertools\nimport numpy as np\nimport matplotlib.pyplot as plt\n"
        "from gcsim.coding.sequential import (SelectiveRepeat, bursty_violation, is_bursty, markov_masks,\n"
        "                                     simulate_classic, simulate_selective_repeat)\n\n"
        "code = SelectiveRepeat(6, B=2, W=5, lam=3)\n"
        "print(code, 's =', code.s, 'delay =', code.delay)\n"
        "print('load', code.load, 'per-round load', code.classic_load)",
    ),
    ("md", "## One burst\n\nThree workers straggle in round 0 and one of them again in round 1 (a burst of 2)."),
    (
        "code",
        "masks = np.ones((8, 6), bool)\nmasks[0, :3] = False\nmasks[1, 0] = False\n"
        "print('admissible:', is_bursty(masks, 2, 5, 3))\nrun = simulate_selective_repeat(code, masks)\n"
        "print('decoded in round:', run.decoded.tolist())\nprint('work (job per worker and round):')\n"
        "print(run.work)\nclassic = simulate_classic(6, code.s, masks[:6])\n"
        "print('per-round code, s =', code.s, ':', classic.decoded.tolist())",
    ),
    (
        "md",
        "## Every admissible sequence, by brute force\n\n`n = 4`, `(B, W, λ) = (1, 3, 3)`, 3 jobs: every "
        "job is decoded within `B` rounds (Theorem 62.2).",
    ),
    (
        "code",
        "small = SelectiveRepeat(4, B=1, W=3, lam=3)\nall_masks = [np.array(b, bool) for b in "
        "itertools.product([True, False], repeat=4)]\n"
        "count = worst = 0\nfor seq in itertools.product(all_masks, repeat=4):\n"
        "    seq = np.array(seq)\n    if not is_bursty(seq, 1, 3, 3):\n        continue\n"
        "    run = simulate_selective_repeat(small, seq)\n    assert run.recovered_fraction == 1.0\n"
        "    count += 1\n    worst = max(worst, int((run.decoded - np.arange(3)).max()))\n"
        "print(count, 'admissible sequences, largest decoding delay', worst)",
    ),
    (
        "md",
        "## Markov stragglers\n\nCompletion time of 500 jobs when the master waits out (cost 1) every round "
        "that would lose a job, as the straggling probability grows (3 seeds; the full table is "
        "`docs/results/sequential.md`).",
    ),
    (
        "code",
        "code = SelectiveRepeat(20, B=2, W=5, lam=6)\np_enter = [0.01, 0.02, 0.04, 0.06]\nrows = []\n"
        "for pe in p_enter:\n    t = np.zeros(3)\n    for seed in range(3):\n"
        "        m = markov_masks(20, 502, pe, 0.5, seed=seed)\n"
        "        t += [simulate_selective_repeat(code, m, wait_cost=1.0).completion_time,\n"
        "              simulate_classic(20, code.s, m[:500], wait_cost=1.0).completion_time,\n"
        "              simulate_classic(20, 6, m[:500], wait_cost=1.0).completion_time]\n"
        "    rows.append(t / 3)\nrows = np.array(rows)\n"
        "for k, label in enumerate(['selective repeat s=2, T=2', 'per-round s=2', 'per-round s=6']):\n"
        "    plt.plot(p_enter, rows[:, k], 'o-', label=label)\n"
        "plt.xlabel('p_enter (p_leave = 0.5)'); plt.ylabel('completion time'); plt.legend(); plt.show()",
    ),
]
