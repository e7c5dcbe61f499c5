"""Cells of notebooks/12_heterogeneous.ipynb (heterogeneous stragglers), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (three 6-worker questions, enumerations of 64 straggler patterns) so that
``tests/test_notebooks.py`` runs it in a few seconds.
"""

from __future__ import annotations

NAME = "12_heterogeneous.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Heterogeneous workers\n\nWhen workers straggle with different probabilities `p_j`, a symmetric "
        "design spreads the data evenly over reliable and unreliable workers alike. The advisor also "
        "proposes a weighted cyclic repetition whose loads follow `1 - p_j` at the same total load, and "
        "says what it buys against the best symmetric candidate (theory §63); with load-dependent "
        "straggling it also searches the loads.",
    ),
    (
        "code",
        (
            "import itertools\n"
            "\n"
            "import numpy as np\n"
            "import pandas as pd\n"
            "\n"
            "from gcsim.advisor import advise\n"
            "from gcsim.coding.stragglers import straggler_model\n"
            "\n"
            "p = [0.05, 0.05, 0.05, 0.6, 0.6, 0.6]  # three reliable workers, three unreliable ones\n"
            "adv = advise(6, 2, 1, straggler_model('bernoulli', 6, p=p), progress=False)\n"
            "rows = pd.DataFrame(adv.rows)\n"
            "rows[['name', 'encoder', 'error', 'error_method']].head(6)"
        ),
    ),
    ("md", "The top row's note compares it with the best symmetric candidate:"),
    ("code", ("print(adv.rows[0]['notes'])")),
    (
        "md",
        "## The same number, computed independently\n\nEvery straggler pattern of the 6 workers with its "
        "probability, and each pattern's least-squares error `min_x ‖B_F x − 1‖² / N` by NumPy:",
    ),
    (
        "code",
        (
            "B = np.asarray(adv.schemes[0].B, dtype=float)\n"
            "N = B.shape[0]\n"
            "masks = np.array(list(itertools.product([False, True], repeat=6)))  # True = arrived\n"
            "prob = np.prod(np.where(masks, 1 - np.array(p), p), axis=1)\n"
            "\n"
            "\n"
            "def err(mask):\n"
            "    if not mask.any():\n"
            "        return 1.0\n"
            "    x = np.linalg.lstsq(B[:, mask], np.ones(N), rcond=None)[0]\n"
            "    return float(np.sum((B[:, mask] @ x - 1) ** 2) / N)\n"
            "\n"
            "\n"
            "print('enumerated:', float(prob @ [err(mk) for mk in masks]), ' advisor:', adv.rows[0]['error'])"
        ),
    ),
    (
        "md",
        "## Workers of different speeds\n\nThe `speed` model: worker `j` of speed `s_j` finishes after a shifted "
        "exponential time (shift `c/s_j`, rate `λ s_j`) and straggles when it misses the deadline `T`, so "
        "`p_j = exp(−λ (s_j T − c))`.",
    ),
    (
        "code",
        (
            "model = straggler_model('speed', 6, speed=[2, 2, 2, 1, 1, 1], deadline=1.0, shift=0.5, rate=1.0)\n"
            "print(model, np.round(model.p, 4))\n"
            "fast = advise(6, 2, 1, model, progress=False)\n"
            "pd.DataFrame(fast.rows)[['name', 'encoder', 'error']].head(6)"
        ),
    ),
    (
        "md",
        "## When the time grows with the data\n\nThe `load-speed` model: a worker of speed `s_j` holding the "
        "fraction `f_j` of the data finishes at `(f_j/s_j)(c + Exp(λ))`, so `p_j(f_j) = exp(−λ (s_j T / f_j − c))` "
        "(theory §63.5). The law depends on the code: every candidate is evaluated at its own loads, and the "
        "advisor also searches the loads (theory §63.6).",
    ),
    (
        "code",
        (
            "spec = 'load-speed:0.5,0.5,1,3,2*2,1*3'  # deadline, shift, rate, then the 6 speeds\n"
            "load = advise(6, 2, 1, spec, progress=False)\n"
            "table = pd.DataFrame(load.rows).drop_duplicates('structure')\n"
            "table[['family', 'structure', 'error', 'error_method']].head(6)"
        ),
    ),
    ("code", ("print(load.rows[0]['notes'])")),
    (
        "md",
        "The same numbers by enumeration: each row's pattern probabilities at that code's own data fractions "
        "(`p_j` from SciPy's exponential law), each pattern's error by NumPy's lstsq:",
    ),
    (
        "code",
        (
            "from scipy import stats\n"
            "\n"
            "speed = np.array([3, 2, 2, 1, 1, 1.0])\n"
            "\n"
            "\n"
            "def p_at(frac):  # P[(f/s)(0.5 + Exp(1)) > 0.5]\n"
            "    return np.array(\n"
            "        [\n"
            "            stats.expon(loc=f * 0.5 / s, scale=f / s).sf(0.5)\n"
            "            for s, f in zip(speed, frac, strict=True)\n"
            "        ]\n"
            "    )\n"
            "\n"
            "\n"
            "def enumerated(B, p):\n"
            "    N = B.shape[0]\n"
            "\n"
            "    def err(mask):\n"
            "        if not mask.any():\n"
            "            return 1.0\n"
            "        x = np.linalg.lstsq(B[:, mask], np.ones(N), rcond=None)[0]\n"
            "        return float(np.sum((B[:, mask] @ x - 1) ** 2) / N)\n"
            "\n"
            "    prob = np.prod(np.where(masks, 1 - p, p), axis=1)\n"
            "    return float(prob @ [err(mk) for mk in masks])\n"
            "\n"
            "\n"
            "for row, scheme in zip(load.rows, load.schemes, strict=True):\n"
            "    if scheme.method != 'naive':\n"
            "        continue\n"
            "    A = np.asarray(scheme.assignment)\n"
            "    ref = enumerated(\n"
            "        np.asarray(scheme.B, dtype=float), p_at(np.count_nonzero(A, axis=0) / A.shape[0])\n"
            "    )\n"
            "    print(f\"{row['structure'][:60]:60s} advisor {row['error']:.7f}  enumerated {ref:.7f}\")"
        ),
    ),
    (
        "md",
        "## Choosing the loads directly\n\n`optimize_loads` tries every feasible load vector here (441 of them) "
        "with the exact expected error; its starts are the loads proportional to speed and the symmetric ones:",
    ),
    (
        "code",
        (
            "from gcsim.coding.load_allocation import optimize_loads\n"
            "\n"
            "law = straggler_model(\n"
            "    'load-speed', 6, speed=speed, deadline=0.5, shift=0.5, rate=1.0, fractions=None\n"
            ")\n"
            "plan = optimize_loads(law, 12, 6)\n"
            "print(plan.loads.tolist(), round(plan.error, 7), plan.objective, '|', plan.search)\n"
            "print({name: (loads, round(err, 7)) for name, (loads, err) in plan.starts.items()})"
        ),
    ),
]
