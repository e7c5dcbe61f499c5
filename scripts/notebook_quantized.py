"""Cells of notebooks/09_quantized.ipynb (quantized gradient coding), in the format of scripts/make_notebooks.py.

``make_notebooks.py`` finds this file (every ``scripts/notebook_*.py``) and adds the notebook; it stays
small (a quantizer, the error split against simulation, a bound sweep, a bit allocation and a short
training comparison at equal bits) so that ``tests/test_notebooks.py`` runs it in well under 30 s.
"""

from __future__ import annotations

NAME = "09_quantized.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        "# Quantized gradient coding\n\nWorkers send their coded messages in `b` bits per coordinate, "
        "rounded stochastically (unbiased) on `2^b` levels of `[-s, s]`, `s` the message's scale. The "
        "expected error is the decoding error plus a quantization term with a closed form (theory §58).",
    ),
    (
        "code",
        (
            "import itertools\n"
            "\n"
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "\n"
            "import gcsim\n"
            "from gcsim.coding.decoders import optimal_decoder\n"
            "from gcsim.coding.quantize import (\n"
            "    allocate_bits,\n"
            "    allocation_weights,\n"
            "    bound_objective,\n"
            "    coded_messages,\n"
            "    decode,\n"
            "    quantized_error,\n"
            ")\n"
            "from gcsim.coding.quantizers import get_quantizer, quantizer_names\n"
            "from gcsim.coding.schemes import encode\n"
            "\n"
            "q = get_quantizer('maxabs')\n"
            "y = np.array([[0.9, -0.2, 0.05, -1.0]])\n"
            "lower, upper, prob = q.outcomes(y, 2)\n"
            "print(quantizer_names())\n"
            "print(lower, upper, prob, sep='\\n')"
        ),
    ),
    ("md", "## The error split against simulation\n\nFano plane, RD with `m = 2`, worker 1 straggles, 3 bits."),
    (
        "code",
        (
            "A = gcsim.bibd(7, 3, 1).assignment\n"
            "scheme = encode(A, 2, 'rd', seed=0)\n"
            "G = np.random.default_rng(0).normal(size=(7, 40))\n"
            "mask = np.ones(7, bool)\n"
            "mask[1] = False\n"
            "r = quantized_error(scheme, G, mask, 3)\n"
            "X, Y = optimal_decoder(scheme, mask), coded_messages(scheme, G)\n"
            "draws = q.quantize(np.broadcast_to(Y, (5000,) + Y.shape), 3, rng=1)\n"
            "errs = np.array([np.sum((decode(X, Yq, 40) - G.sum(axis=0)) ** 2) for Yq in draws])\n"
            "half = 1.96 * errs.std(ddof=1) / np.sqrt(errs.size)\n"
            "print(f'decoding {r.decoding:.4f} + quantization {r.quantization:.4f} = {r.total:.4f}')\n"
            "print(\n"
            "    f'simulated {errs.mean():.4f} ± {half:.4f}; bounds {r.quantization_bound:.4f} (quantization), '\n"
            "    f'{r.code_bound:.2f} (total)'\n"
            ")"
        ),
    ),
    ("md", "The quantization term falls by about 4× per bit; the data bound follows it:"),
    (
        "code",
        (
            "bits = np.arange(1, 9)\n"
            "rows = [quantized_error(scheme, G, mask, int(b)) for b in bits]\n"
            "plt.semilogy(bits, [x.quantization for x in rows], 'o-', label='quantization term (exact)')\n"
            "plt.semilogy(bits, [x.quantization_bound for x in rows], 's--', label='bound (ii)')\n"
            "plt.axhline(rows[0].decoding, color='gray', label='decoding error')\n"
            "plt.xlabel('bits per coordinate')\n"
            "plt.ylabel('E‖ĝ − g‖²')\n"
            "plt.legend()\n"
            "plt.show()"
        ),
    ),
    ("md", "## Bit allocation\n\nWorker 0 straggles 80 % of the time; 28 bits shared by the 7 workers."),
    (
        "code",
        (
            "p = np.array([0.8] + [0.05] * 6)\n"
            "masks = np.array(list(itertools.product([False, True], repeat=7)))\n"
            "prob = np.prod(np.where(masks, 1 - p, p), axis=1)\n"
            "a = allocation_weights(encode(A, 1, 'rd', seed=0), masks, probabilities=prob / prob.sum())\n"
            "b = allocate_bits(a, 28)\n"
            "print('weights', a.round(3))\n"
            "print('bits', b)\n"
            "print('objective', bound_objective(a, b), 'uniform', bound_objective(a, [4] * 7))"
        ),
    ),
    (
        "md",
        "## Training at equal bits per step\n\nFloat32 gradient coding at `m = 8` against 4-bit codes at "
        "`m = 1` and uncoded 4-bit SGD: the same bits per step (a short run; the full comparison is "
        "`docs/results/quantized.md`).",
    ),
    (
        "code",
        (
            "from gcsim.learning.datasets import load_digits\n"
            "from gcsim.learning.models import MLP\n"
            "from gcsim.learning.quantized_training import (\n"
            "    compare_at_equal_bits,\n"
            "    equal_bits_codes,\n"
            "    summarize,\n"
            ")\n"
            "\n"
            "model = MLP((64, 16, 10))\n"
            "codes = [c for c in equal_bits_codes(A, budget=4) if not c.error_feedback][:4]\n"
            "runs = compare_at_equal_bits(\n"
            "    codes,\n"
            "    load_digits(),\n"
            "    seeds=[0, 1, 2],\n"
            "    model=model,\n"
            "    iterations=60,\n"
            "    lr=0.1,\n"
            "    momentum=0.9,\n"
            "    batch_per_part=16,\n"
            "    eval_every=30,\n"
            ")\n"
            "summarize(runs)[\n"
            "    ['label', 'bits_per_step', 'train_loss', 'train_loss_lo', 'train_loss_hi', 'rel_error']\n"
            "]"
        ),
    ),
]
