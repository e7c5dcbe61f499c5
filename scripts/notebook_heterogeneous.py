"""Cells of notebooks/12_heterogeneous.ipynb (heterogeneous stragglers), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (two 6-worker questions, one enumeration of 64 straggler patterns) so that
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
        "says what it buys against the best symmetric candidate (theory §63).",
    ),
    (
        "code",
        "import itertools\nimport numpy as np\nimport pandas as pd\nimport gcsim\n"
        "from gcsim.advisor import advise\nfrom gcsim.coding.stragglers import straggler_model\n\n"
        "p = [0.05, 0.05, 0.05, 0.6, 0.6, 0.6]     # three reliable workers, three unreliable ones\n"
        "adv = advise(6, 2, 1, straggler_model('bernoulli', 6, p=p), progress=False)\n"
        "rows = pd.DataFrame(adv.rows)\n"
        "rows[['name', 'encoder', 'error', 'error_method']].head(6)",
    ),
    ("md", "The top row's note compares it with the best symmetric candidate:"),
    ("code", "print(adv.rows[0]['notes'])"),
    (
        "md",
        "## The same number, computed independently\n\nEvery straggler pattern of the 6 workers with its "
        "probability, and each pattern's least-squares error `min_x ‖B_F x − 1‖² / N` by NumPy:",
    ),
    (
        "code",
        "B = np.asarray(adv.schemes[0].B, dtype=float)\nN = B.shape[0]\n"
        "masks = np.array(list(itertools.product([False, True], repeat=6)))   # True = arrived\n"
        "prob = np.prod(np.where(masks, 1 - np.array(p), p), axis=1)\n\n"
        "def err(mask):\n"
        "    if not mask.any():\n        return 1.0\n"
        "    x = np.linalg.lstsq(B[:, mask], np.ones(N), rcond=None)[0]\n"
        "    return float(np.sum((B[:, mask] @ x - 1) ** 2) / N)\n\n"
        "print('enumerated:', float(prob @ [err(mk) for mk in masks]), ' advisor:', adv.rows[0]['error'])",
    ),
    (
        "md",
        "## Workers of different speeds\n\nThe `speed` model: worker `j` of speed `s_j` finishes after a shifted "
        "exponential time (shift `c/s_j`, rate `λ s_j`) and straggles when it misses the deadline `T`, so "
        "`p_j = exp(−λ (s_j T − c))`.",
    ),
    (
        "code",
        "model = straggler_model('speed', 6, speed=[2, 2, 2, 1, 1, 1], deadline=1.0, shift=0.5, rate=1.0)\n"
        "print(model, np.round(model.p, 4))\n"
        "fast = advise(6, 2, 1, model, progress=False)\n"
        "pd.DataFrame(fast.rows)[['name', 'encoder', 'error']].head(6)",
    ),
]
