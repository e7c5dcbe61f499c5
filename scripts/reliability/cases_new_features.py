"""Bad inputs to the advisor, the sweeps, the spectral bounds, the weighted and partial codes, and the
delay commands: each gets one clear error naming what to change.
"""

from __future__ import annotations

from reliability import Case

_FILE = "open('f', 'w').write('not a folder')\n"
_G = "import numpy as np, gcsim\n"

CASES = [
    # the advisor (API and CLI)
    Case("api", "advise with 1 worker", code=_G + "gcsim.advise(1, 1, 1, gcsim.straggler_model('fixed', 1, s=0))"),
    Case(
        "api",
        "advise with load 1.5 (neither whole parts nor a fraction of the data)",
        code=_G + "gcsim.advise(13, 1.5, 2, gcsim.straggler_model('fixed', 13, s=1))",
    ),
    Case(
        "api",
        "advise with a straggler model over another number of workers",
        code=_G + "gcsim.advise(13, 4, 2, gcsim.straggler_model('fixed', 12, s=1))",
    ),
    Case(
        "api",
        "advise objective 'time' without links",
        code=_G + "gcsim.advise(13, 4, 2, gcsim.straggler_model('fixed', 13, s=1), objective='time')",
    ),
    Case(
        "api",
        "advise with an unknown family",
        code=_G + "gcsim.advise(13, 4, 2, gcsim.straggler_model('fixed', 13, s=1), families=['hadamard'])",
    ),
    Case(
        "cli",
        "advise --stragglers of an unknown kind",
        argv=["advise", "-n", "13", "--load", "4", "--stragglers", "x:1"],
    ),
    Case("cli", "advise --load 0", argv=["advise", "-n", "13", "--load", "0", "--stragglers", "fixed:1"]),
    Case(
        "cli",
        "advise --out names a regular file",
        argv=["advise", "-n", "13", "--load", "4", "--stragglers", "fixed:1", "--out", "f"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "advise --processes without --scheduler local",
        argv=["advise", "-n", "13", "--load", "4", "--stragglers", "fixed:1", "--processes", "2"],
    ),
    # sweeps
    Case(
        "api",
        "run_sweep of tasks that cannot be pickled (a lock), on a cluster",
        code="import threading\nfrom gcsim.sweep import run_sweep\n"
        "run_sweep(abs, [threading.Lock()], scheduler='local', progress=False)",
    ),
    Case(
        "api",
        "run_sweep with a scheduler address that is not Dask's",
        code="from gcsim.sweep import run_sweep\nrun_sweep(abs, [1, 2], scheduler='http://x:1', progress=False)",
    ),
    Case(
        "api",
        "run_sweep checkpoint folder holding another sweep's results",
        code="from gcsim.sweep import run_sweep\n"
        "run_sweep(abs, [1, 2], checkpoint='ck', progress=False)\n"
        "run_sweep(abs, [3, 4], checkpoint='ck', progress=False)",
    ),
    Case("cli", "reproduce --scheduler with a bad address", argv=["reproduce", "--scheduler", "nowhere", "--out", "o"]),
    # spectral bounds, weighted and partial codes
    Case(
        "api",
        "spectral upper bound of an irregular assignment",
        code="import numpy as np\nfrom gcsim.coding.bounds import spectral_upper_bound\n"
        "spectral_upper_bound(np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1]]), 1)",
    ),
    Case(
        "api",
        "spectral upper bound with more stragglers than workers",
        code="import numpy as np\nfrom gcsim.coding.bounds import spectral_upper_bound\n"
        "spectral_upper_bound(np.eye(5, dtype=int) + np.roll(np.eye(5, dtype=int), 1, 0), 6)",
    ),
    Case("api", "chordal cycle on a composite p", code=_G + "gcsim.chordal_cycle(15)"),
    Case("api", "weighted MGG with m = 0", code=_G + "gcsim.weighted_margulis_gabber_galil(0)"),
    Case(
        "api",
        "partial scheme whose owners hold no part",
        code=_G + "gcsim.partial_scheme(gcsim.bibd(7, 3, 1), 1, 'rd', owners=[0, 0, 0, 0, 0, 0, 9])",
    ),
    # delays in training and on the command line
    Case(
        "api",
        "train under a straggler model over another number of workers",
        code=_G + "from gcsim.learning.train import CodeSpec, train\n"
        "from gcsim.learning.datasets import load_digits\n"
        "train(CodeSpec('u', np.eye(4, dtype=int), decoder='arrivals'), load_digits(), iterations=2,"
        " stragglers=gcsim.straggler_model('fixed', 5, s=1))",
    ),
    Case(
        "cli",
        "decode-time --delays with a missing parameter",
        argv=["decode-time", "--workers", "5", "--delays", "pareto:scale=1", "--rule", "first:s=1"],
    ),
    Case(
        "cli",
        "decode-time --rule waiting for more workers than exist",
        argv=["decode-time", "--workers", "5", "--delays", "pareto:scale=1,shape=2", "--rule", "first:s=6"],
    ),
    Case(
        "cli",
        "decode-time trace file that does not exist",
        argv=["decode-time", "--delays", "trace:no.npy", "--rule", "first:s=1"],
    ),
    Case(
        "cli",
        "decoder-table --s-max beyond the pattern limit",
        argv=["decoder-table", "--design", "pg2_9", "--s-max", "20", "--out", "o"],
    ),
]
