"""Cells of notebooks/11_partial_stragglers.ipynb (partial stragglers), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (one cyclic assignment, a few hundred delay draws) so that ``tests/test_notebooks.py`` runs it in
well under 30 s.
"""

from __future__ import annotations

NAME = "11_partial_stragglers.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Partial stragglers\n\nA slow worker still returns the chunks it finished. The master uses every "
        "completed (worker, chunk) pair; its optimal error is `Σ_i max(0, ℓ − |S_i|)` (theory §59.1), and "
        "the order in which each worker processes its chunks decides how fast every chunk is covered "
        "(§59.2).",
    ),
    (
        "code",
        (
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "from gcsim.coding.delays import delay_model\n"
            "from gcsim.coding.partial_stragglers import (\n"
            "    PartialStragglerModel,\n"
            "    chunk_completion_times,\n"
            "    compare_protocols,\n"
            "    coverage,\n"
            "    exact_recovery_times,\n"
            "    optimize_orders,\n"
            "    partial_encoder,\n"
            "    partial_error_from_coverage,\n"
            "    q_max,\n"
            "    random_orders,\n"
            ")\n"
            "\n"
            "dm = delay_model('shifted-exponential', 10, shift=1.0, rate=1.0)\n"
            "model = PartialStragglerModel.cyclic(3, dm)  # 10 workers, chunks j..j+2, Latin orders\n"
            "print([o.tolist() for o in model.orders[:4]])"
        ),
    ),
    (
        "md",
        "## The error from what arrived, two ways\n\nThe closed form and least squares on the encoder "
        "the master builds from the completed pairs.",
    ),
    (
        "code",
        (
            "C = chunk_completion_times(model, 1, seed=3)\n"
            "done = (C[0] <= 0.8).astype(int)\n"
            "B, X = partial_encoder(done, blocks=2)\n"
            "T = np.kron(np.eye(2), np.ones((10, 1)))\n"
            "Xls = np.linalg.lstsq(B, T, rcond=None)[0]\n"
            "print('coverage', done.sum(axis=0).tolist())\n"
            "print(\n"
            "    'closed form',\n"
            "    int(partial_error_from_coverage(done.sum(axis=0), 2)),\n"
            "    ' lstsq',\n"
            "    round(float(((B @ Xls - T) ** 2).sum()), 9),\n"
            ")"
        ),
    ),
    ("md", "## Partial vs classic protocol\n\nSame draws for both; 95 % t intervals over draws."),
    (
        "code",
        (
            "for ell in (1, 2):\n"
            "    r = compare_protocols(model, ell, deadline=1.5, draws=400, seed=0)\n"
            "    print(\n"
            "        f'l={ell}: exact time partial {r.exact_partial.mean:.3f}, classic {r.exact_classic.mean:.3f}, '\n"
            "        f'ratio [{r.speedup.lo:.2f}, {r.speedup.hi:.2f}]; error at T=1.5: '\n"
            "        f'{r.error_partial.mean:.4f} vs {r.error_classic.mean:.4f}'\n"
            "    )"
        ),
    ),
    (
        "code",
        (
            "Ts = np.linspace(0.5, 3.0, 11)\n"
            "Cs = chunk_completion_times(model, 400, seed=1)\n"
            "err = [partial_error_from_coverage(coverage(Cs, t), 2).mean() / 20 for t in Ts]\n"
            "plt.semilogy(Ts, np.maximum(err, 1e-4), 'o-', label='partial, l=2')\n"
            "plt.xlabel('deadline T')\n"
            "plt.ylabel('err / lN (floored at 1e-4)')\n"
            "plt.legend()\n"
            "plt.show()"
        ),
    ),
    (
        "md",
        "## The chunk order\n\nQ_max (the worst case over speeds) and the mean exact-recovery time: the "
        "optimized (Latin-started) orders against random ones.",
    ),
    (
        "code",
        (
            "rnd = model.with_orders(random_orders(model.assignment, seed=0))\n"
            "opt = model.with_orders(optimize_orders(rnd, 1, draws=200, seed=1, sweeps=1))\n"
            "for name, m in (('random', rnd), ('optimized', opt)):\n"
            "    t = exact_recovery_times(chunk_completion_times(m, 500, seed=2), 1)\n"
            "    print(f'{name:9s} Q_max {q_max(m.assignment, m.orders)}  E[exact time] {t.mean():.3f}')"
        ),
    ),
    (
        "md",
        "## The least Q_max\n\nOn small assignments `least_q_max` enumerates every tuple of orders; "
        "`regular_q_max_bound` bounds Q_max for any order on any δ-regular square assignment. Latin orders "
        "are not always optimal (Proposition 59.7): 6 workers, each holding every chunk but its own, ℓ = 3.",
    ),
    (
        "code",
        (
            "from gcsim.coding.encoders.classic import cyclic_repetition_assignment\n"
            "from gcsim.coding.partial_stragglers import latin_orders, least_q_max, regular_q_max_bound\n"
            "\n"
            "A4 = cyclic_repetition_assignment(5, 2)\n"
            "for ell in (1, 2, 3):\n"
            "    res = least_q_max(A4, ell)\n"
            "    print(\n"
            "        f'l={ell}: least {res.value} (share of orders reaching it {res.reaching / res.total:.3f}), '\n"
            "        f'Latin {q_max(A4, latin_orders(A4), ell)}'\n"
            "    )\n"
            "A6 = 1 - np.eye(6, dtype=int)\n"
            "prop = [\n"
            "    np.array(o)\n"
            "    for o in (\n"
            "        [1, 3, 5, 4, 2],\n"
            "        [0, 2, 5, 4, 3],\n"
            "        [1, 3, 4, 5, 0],\n"
            "        [1, 2, 4, 5, 0],\n"
            "        [0, 3, 5, 2, 1],\n"
            "        [0, 2, 4, 3, 1],\n"
            "    )\n"
            "]\n"
            "print(\n"
            "    'n=6, delta=5, l=3: Latin',\n"
            "    q_max(A6, latin_orders(A6), 3),\n"
            "    ' Proposition 59.7',\n"
            "    q_max(A6, prop, 3),\n"
            "    ' bound',\n"
            "    regular_q_max_bound(6, 5, 3),\n"
            ")"
        ),
    ),
]
