"""Cells of notebooks/08_from_advice_to_training.ipynb, in the format of make_notebooks.py.

``make_notebooks.py`` adds them to its ``NOTEBOOKS`` as ``"08_from_advice_to_training.ipynb"``.  The notebook is
the guide ``docs/guides/from_advice_to_training.md`` in one process: the advisor answers a question and exports
its best code, the folder is loaded back (verified), ``CodedTrainer`` trains a small MLP on scikit-learn's digits
with it on a one-rank gloo group (the trainer lays the 13 coded workers over however many ranks there are), and
the observed decoding error is set against the analysis' expected error and its interval, with a figure.  It
runs in well under a minute on one CPU core (``tests/test_notebooks.py``).
"""

from __future__ import annotations

NAME = "08_from_advice_to_training.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# From advice to training\n"
        "\n"
        "The question: 13 workers, each holding at most 4 of the data parts, messages of half a "
        "gradient (`m = 2`), Bernoulli(0.1) stragglers. This notebook takes it to a trained model:\n"
        "\n"
        "1. **Advise and export.** `gcsim.advise` ranks the codes that meet every cap; `export` "
        "writes the best one (assignment, encoder, a decoder table) into a folder.\n"
        "2. **Load.** The folder is read back and re-verified from its files alone.\n"
        "3. **Train.** `CodedTrainer` trains a torch model with the exported code: each step's "
        "stragglers come from the same straggler model, each pattern is decoded from the table (or "
        "by the certified fallback), and the decoded gradient updates the model.\n"
        "4. **Compare.** The mean optimal-decoding error `err(F)/(mN)` of the steps, with its "
        "interval, against the analysis' expected error and its interval.\n"
        "\n"
        "One gloo rank runs all 13 coded workers here; a real job builds the same trainer on every "
        "rank (`gcsim train --code DIR --ranks 4`, or `torchrun examples/train_coded.py`), as the "
        "guide *From advice to training* shows.",
    ),
    (
        "code",
        (
            "import tempfile\n"
            "\n"
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "import torch\n"
            "import torch.distributed as dist\n"
            "\n"
            "import gcsim\n"
            "from gcsim.catalogue import load_object\n"
            "from gcsim.executor.coded_training import CodedTrainer, load_training_code\n"
            "from gcsim.learning.datasets import load_digits\n"
            "\n"
            "torch.set_num_threads(1)"
        ),
    ),
    (
        "md",
        "## 1. Ask, and export the answer\n"
        "\n"
        "`m = 2` caps the communication like `load = 4` caps the data: codes that send a full gradient "
        "(`m = 1`) are dropped unless relaxed. A Bernoulli model has no fixed number of stragglers, so "
        "`s_max=1` asks for a decoder table of the 14 patterns with at most one straggler; every other "
        "pattern is decoded by the certified fallback.",
    ),
    (
        "code",
        (
            "stragglers = gcsim.straggler_model('bernoulli', 13, p=0.1)\n"
            "advice = gcsim.advise(13, 4, 2, stragglers, progress=False)\n"
            "folder = tempfile.mkdtemp()\n"
            "path = advice.export(folder, s_max=1)\n"
            "print('exported', path.name)\n"
            "advice  # the card: the question and the ranked candidates"
        ),
    ),
    (
        "md",
        "## 2. Load the folder\n"
        "\n"
        "`load_object` re-verifies every part from the files (the assignment's caps, the encoder, the "
        "table's decoders). `load_training_code` gives what the trainer uses: the dense encoder and "
        "the table.",
    ),
    (
        "code",
        (
            "exported = load_object(path)\n"
            "scheme, table = load_training_code(exported)\n"
            "print(\n"
            "    f'{scheme.n} coded workers, N = {scheme.num_parts} parts, m = {scheme.m} ({scheme.method}); '\n"
            "    f'decoder table of {len(table)} patterns'\n"
            ")\n"
            "assert scheme.m == 2 and scheme.n == 13\n"
            "scheme"
        ),
    ),
    (
        "md",
        "## 3. Train a model with the exported code\n"
        "\n"
        "Any `nn.Module`, optimizer and data set: the data set is cut into the code's `N` parts, "
        "each with its own seeded loader. The straggler masks are `stragglers.sample(steps, seed)`, "
        "the same on every rank. A one-rank gloo group is enough to run it in-process.",
    ),
    (
        "code",
        (
            "data = load_digits(seed=0)\n"
            "train = torch.utils.data.TensorDataset(\n"
            "    torch.as_tensor(data.x_train, dtype=torch.float32),\n"
            "    torch.as_tensor(data.y_train, dtype=torch.long),\n"
            ")\n"
            "dist.init_process_group('gloo', init_method=f'file://{folder}/rendezvous', rank=0, world_size=1)\n"
            "torch.manual_seed(0)\n"
            "net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))\n"
            "trainer = CodedTrainer(path, net, torch.optim.SGD(net.parameters(), lr=0.1), train, batch_size=8)\n"
            "report = trainer.train(100, stragglers, seed=0)\n"
            "x_test = torch.as_tensor(data.x_test, dtype=torch.float32)\n"
            "with torch.no_grad():\n"
            "    accuracy = float((net(x_test).argmax(1).numpy() == data.y_test).mean())\n"
            "dist.destroy_process_group()\n"
            "print(f'd = {trainer.d:,} parameters; test accuracy {accuracy:.3f}')\n"
            "print(report.summary())"
        ),
    ),
    (
        "md",
        "## 4. Observed against expected\n"
        "\n"
        "Each step's `err(F)/(mN)` is the optimal-decoding error of its pattern. Their mean estimates "
        "the expected error the advisor ranked the code by. The analysis' value is exact here (the "
        "code separates into components). The observed interval is a Student-t interval over the steps. "
        "The decoded gradient's relative error `‖ĝ − g‖²/‖g‖²` is measured on the model's real "
        "gradients: it follows `err(F)/(mN)` step by step, but depends on the gradients too.",
    ),
    (
        "code",
        (
            "opt = np.array([r.opt_error for r in report.records])\n"
            "rel = np.array([r.rel_error for r in report.records])\n"
            "lo, hi = report.opt_error_ci\n"
            "elo, ehi = report.expected_ci\n"
            "print(f'observed mean err(F)/(mN) {report.mean_opt_error:.5f}  interval [{lo:.5f}, {hi:.5f}]')\n"
            "print(\n"
            "    f'analysis expected         {report.expected:.5f}  interval [{elo:.5f}, {ehi:.5f}] '\n"
            "    f'({report.expected_method})'\n"
            ")\n"
            "print(\n"
            "    f'decoders: {report.table_lookups} from the table, {report.fallbacks} by the certified fallback'\n"
            ")\n"
            "assert report.agrees and lo <= report.expected <= hi\n"
            "assert report.table_lookups + report.fallbacks == len(opt) and report.fallbacks > 0"
        ),
    ),
    (
        "code",
        (
            "steps = np.arange(len(opt))\n"
            "running = np.cumsum(opt) / (steps + 1)\n"
            "fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)\n"
            "ax = axes[0]\n"
            "ax.plot(steps, opt, '.', color='0.6', label='err(F)/(mN) of each step')\n"
            "ax.plot(steps, running, 'C0-', label='running mean')\n"
            "ax.axhspan(lo, hi, color='C0', alpha=0.15, label='observed 95% interval')\n"
            "ax.axhline(report.expected, color='C3', ls='--', label='analysis: expected error')\n"
            "ax.set(xlabel='step', ylabel='err(F) / mN', title='decoding error against the analysis')\n"
            "ax.legend(fontsize=8)\n"
            "ax = axes[1]\n"
            "ax.plot(opt, rel, 'o', alpha=0.6)\n"
            "ax.set(\n"
            "    xlabel='err(F) / mN of the pattern',\n"
            "    ylabel='‖ĝ − g‖² / ‖g‖²',\n"
            "    title='relative gradient error of the decoded gradient',\n"
            ")\n"
            "ax.grid(alpha=0.3)\n"
            "plt.show()"
        ),
    ),
]
