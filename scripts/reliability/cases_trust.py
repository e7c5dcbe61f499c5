"""Trust at every door (issue #19 items 1-2): sweep checkpoints that were tampered with, swapped,
left by another seed or another function body, or replaced by pickles, FIFOs and folders; decoder
tables with a forged row.  A stored result is used only when it is the task's own (identity and
checksum): everything else is recomputed with a warning, or refused with one clear error.
"""

from __future__ import annotations

from reliability import Case

_SW = "from gcsim.sweep import run_sweep\n"
# a task function in a file of its own (a checkpoint binds results to the function's source)
_MOD = (
    "open('t.py', 'w').write('import numpy as np\\ndef draw(task, seq):\\n'\n"
    "'    return task + float(np.random.default_rng(seq).random())\\n')\n"
)
_T = "import sys; sys.path.insert(0, '.')\nfrom t import draw\n" + _SW
_RUN = "run_sweep(abs, [-1, -2, -3], checkpoint='ck', progress=False)\n"
_CHECK = "assert run_sweep(abs, [-1, -2, -3], checkpoint='ck', progress=False) == [1, 2, 3]\nprint('recomputed')"
# a decoder table of 1 + 13 + 78 + 286 = 378 rows, with one row (not in a seed-0 sample of 256) scaled by 1.5
# and its error made consistent, written as a bundle with a valid checksum
_FORGE = (
    "import numpy as np\n"
    "from gcsim.coding.schemes import encode, cyclic_repetition_assignment\n"
    "from gcsim.coding.decoder_table import decoder_table, load_decoder_table\n"
    "from gcsim.io.bundle import save_bundle\n"
    "t = decoder_table(encode(cyclic_repetition_assignment(13, 3), 2, 'rd', seed=0), s_max=3)\n"
    "a, meta = t.to_arrays(), t.bundle_metadata()\n"
    "rng = np.random.default_rng(0)\n"
    "row = min(set(range(378)) - {0, 377, *rng.choice(378, 256, replace=False).tolist()})\n"
    "X, E = a['decoders'].copy(), a['errors'].copy()\n"
    "X[row] *= 1.5\n"
    "E[row] = float(np.sum((t.scheme.B @ X[row] - np.kron(np.eye(2), np.ones((13, 1)))) ** 2))\n"
    "save_bundle('forged', {**a, 'decoders': X, 'errors': E}, meta)\n"
)

CASES = [
    # sweep checkpoints: recomputed, said so, never returned
    Case(
        "files",
        "sweep checkpoint: one task's file copied over another's",
        code=_SW + _RUN + "import shutil; shutil.copy('ck/task_00000002.json', 'ck/task_00000000.json')\n" + _CHECK,
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: a flipped byte in a task file",
        code=_SW
        + _RUN
        + "from pathlib import Path; p = Path('ck/task_00000001.json')\n"
        + "b = bytearray(p.read_bytes()); b[len(b) // 2] ^= 1\n"
        + "p.write_bytes(bytes(b))\n"
        + _CHECK,
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: a pickled string in place of a task file",
        code=_SW
        + _RUN
        + "import pickle, pathlib; pathlib.Path('ck/task_00000000.json').write_bytes(pickle.dumps('evil'))\n"
        + _CHECK,
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: a malicious pickle (mkdir on load) as task files, .json and .pkl",
        code=_SW
        + _RUN
        + "import os, pathlib, pickle\nclass P:\n    def __reduce__(self):\n        return (os.mkdir, ('pwned',))\n"
        + "for n in ('task_00000000.json', 'task_00000000.pkl'):\n"
        + "    pathlib.Path('ck', n).write_bytes(pickle.dumps(P()))\n"
        + "assert run_sweep(abs, [-1, -2, -3], checkpoint='ck', progress=False) == [1, 2, 3]\n"
        + "assert not os.path.exists('pwned'), 'the pickle ran'\nprint('not executed')",
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: another seed's folder with its sweep.json deleted",
        setup=_MOD,
        code=_T
        + "a = run_sweep(draw, [0, 1], seed=1, checkpoint='ck', progress=False)\n"
        + "import os; os.remove('ck/sweep.json')\n"
        + "b = run_sweep(draw, [0, 1], seed=2, checkpoint='ck', progress=False)\n"
        + "assert b == run_sweep(draw, [0, 1], seed=2, progress=False) != a\nprint('seed 2 results')",
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: the task function's body changed under the same name",
        setup="open('t.py', 'w').write('def f(x):\\n    return x + 1\\n')\n",
        code="import importlib, os, pathlib, sys; sys.path.insert(0, '.')\nimport t\n"
        + _SW
        + "assert run_sweep(t.f, [1], checkpoint='ck', progress=False) == [2]\n"
        + "pathlib.Path('t.py').write_text('def f(x):\\n    return x + 100\\n'); os.utime('t.py', (1, 1))\n"
        + "importlib.reload(t)\nassert run_sweep(t.f, [1], checkpoint='ck', progress=False) == [101]\n"
        + "print('new body')",
        expect="warning",
    ),
    Case(
        "files",
        "sweep checkpoint: a directory in place of a task file",
        code=_SW + _RUN + "import os; os.remove('ck/task_00000001.json'); os.mkdir('ck/task_00000001.json')\n" + _RUN,
    ),
    Case(
        "files",
        "sweep checkpoint: a FIFO (no writer) in place of a task file",
        code=_SW + _RUN + "import os; os.remove('ck/task_00000001.json'); os.mkfifo('ck/task_00000001.json')\n" + _RUN,
        timeout=30,
    ),
    Case(
        "files",
        "sweep checkpoint folder of the pickle format (sweep.json version 1)",
        setup="import os, json; os.mkdir('ck')\n"
        "json.dump({'format': 'gcsim-sweep-checkpoint', 'version': 1}, open('ck/sweep.json', 'w'))\n",
        code=_SW + _RUN,
    ),
    Case(
        "api",
        "sweep checkpoint of a task that returns a set (no data-only form)",
        code=_SW + "run_sweep(set, [[1, 2]], checkpoint='ck', progress=False)",
    ),
    Case(
        "api",
        "sweep checkpoint of tasks holding a numpy Generator",
        code="import numpy as np\n"
        + _SW
        + "run_sweep(id, [np.random.default_rng(0)], checkpoint='ck', progress=False)",
    ),
    Case(
        "api",
        "sweep checkpoint of a function without a source file (exec'd)",
        code=_SW + "def f(x):\n    return x\nrun_sweep(f, [1], checkpoint='ck', progress=False)",
    ),
    # decoder tables: every row verified on load
    Case(
        "files",
        "load_decoder_table: a forged row outside a 256-row sample, checksum recomputed",
        code=_FORGE + "load_decoder_table('forged')",
    ),
    Case(
        "files",
        "load_decoder_table(verify='sample') of that forged table (explicit opt-in)",
        code=_FORGE + "print(len(load_decoder_table('forged', verify='sample')), 'rows, sampled')",
        expect="warning",
    ),
    Case(
        "api",
        "load_decoder_table(verify='yes')",
        code="from gcsim.coding.decoder_table import load_decoder_table\nload_decoder_table('t', verify='yes')",
    ),
    Case(
        "api",
        "load_decoder_table(verify='all', sample=10): contradictory",
        code="from gcsim.coding.decoder_table import load_decoder_table\n"
        "load_decoder_table('t', verify='all', sample=10)",
    ),
]
