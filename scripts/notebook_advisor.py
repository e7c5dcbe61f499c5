"""Cells of notebooks/05_advisor.ipynb (the code advisor), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` adds them to its ``NOTEBOOKS`` as ``"05_advisor.ipynb"``; the notebook stays
small (two questions of the issue, a weighted-expander question, one export) so that
``tests/test_notebooks.py`` runs it in well under a minute.
"""

from __future__ import annotations

NAME = "05_advisor.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Which code? The advisor\n\n`gcsim.advisor.advise(workers, load, m, stragglers, links=..., objective=...)` "
        "builds every code gcsim can build for the question (BIBDs, SRGs, coset and bi-regular graphs, "
        "repetition codes, expanders with and without multiplicities, each with every applicable encoder), "
        "measures each one and ranks them. `load` is the number of parts a worker holds; errors are "
        "`err/(mN)`, the fraction of the gradient lost.",
    ),
    (
        "code",
        "import gcsim\nfrom gcsim.advisor import advise, load_exported\n\n"
        "adv = advise(91, 10, 2, gcsim.straggler_model('bernoulli', 91, p=0.1), progress=False)\n"
        "adv  # the card: the question, the top candidates, why others were dropped",
    ),
    (
        "code",
        "cols = ['name', 'error', 'error_lo', 'error_hi', 'data_fraction', 'communication', 'status']\n"
        "adv.table[cols].head(8)",
    ),
    ("md", "PG(2,9) is among the candidates, with every encoder that applies:"),
    (
        "code",
        "t = adv.table\n"
        "t[t.structure.str.startswith('2-(91,10,1)')][['encoder', 'error', 'lower_bound', 'upper_bound', "
        "'spectral_bound', 'status']]",
    ),
    ("md", "Nothing is dropped silently: every parameter set or encoder that gives no candidate has its reason."),
    ("code", "adv.dropped.head(10)"),
    (
        "md",
        "## 54 workers, load 5, m = 2, ten stragglers\n\nThe (27,2,5) coset graph is a candidate; the exact "
        "family is dropped on it (it needs every part on `s + m = 12` workers, each has 10), and the worst case "
        "over the `C(54,10)` patterns is skipped, saying so.",
    ),
    (
        "code",
        "adv_b = advise(54, 5, 2, gcsim.straggler_model('fixed', 54, s=10), progress=False)\n"
        "tb = adv_b.table\n"
        "tb[tb.structure == 'coset graph (27,2,5)'][['encoder', 'error', 'error_lo', 'error_hi', 'worst_method']]",
    ),
    ("code", "d = adv_b.dropped\nd[d.name == 'coset graph (27,2,5)']"),
    (
        "md",
        "## Links and time: the expected time per iteration\n\nWith a delay model the master waits for the "
        "first `n - s` workers; the time adds the compute on the worker's share of the data and the transfer "
        "of `d/m` numbers. Here the objective is time, then error.",
    ),
    (
        "code",
        "from gcsim.coding.delays import arrival_rule, delay_model\n"
        "delays = gcsim.straggler_model('delay', delays=delay_model('shifted-exponential', 49, shift=0.05, "
        "rate=20.0), rule=arrival_rule('first', s=2))\n"
        "links = {'bandwidth': 1.25e9, 'latency': 2e-4, 'gradient_bytes': 4e7, 'compute_time': 0.4}\n"
        "fast = advise(49, 9, 2, delays, links=links, objective=('time', 'error'),\n"
        "              families=['mgg', 'weighted-mgg', 'random-regular', 'coset', 'cyclic'], progress=False)\n"
        "fast.table[['name', 'time', 'error', 'data_fraction', 'spectral_bound', 'status']].head(8)",
    ),
    ("code", "%matplotlib inline\nfast.plot()  # error against communication and against time; filled: Pareto-optimal"),
    (
        "md",
        "## Export the chosen code\n\nOne call writes the assignment, the encoder, the decoders (a decoder "
        "table when every pattern up to `s` fits in gcsim's limits, else the decoding rule) and a manifest, "
        "atomically, into the folder you name.",
    ),
    (
        "code",
        "import tempfile\nfolder = fast.export(tempfile.mkdtemp(), rank=0)\ncode = load_exported(folder)\n"
        "print(folder.name, code.scheme.params, None if code.decoders is None else len(code.decoders))\n"
        "code.manifest['decoding']",
    ),
]
