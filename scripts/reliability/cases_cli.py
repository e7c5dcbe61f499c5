"""Bad and huge inputs to the ``gcsim`` command line: one line, exit 2 (bad input) or 1, no traceback.

Paths of every subcommand (``--out``, ``--dir``, ``--mnist``, ``load``), numeric flags
(negative, zero, NaN, out of range), unknown flags and families, and parameters beyond
:mod:`gcsim.limits` (the message states the size and the limit).  Issue #19: names and links that
lead a write outside its folder (the one output-path rule), family specs of the wrong arity (the one
family-spec parser), and the classes of item 7 (bools, huge integers, empty names, FIFOs and devices,
repeated keys, complex traces, overflow in CERAR simulate).
"""

from __future__ import annotations

from reliability import Case

_FILE = "open('f', 'w').write('not a folder')\n"
_DIR = "import os; os.mkdir('adir')\n"
_FIFO = "import os; os.mkfifo('fifo')\n"
_ZERO = "import os; os.symlink('/dev/zero', 'zero.npy')\n"
_LINKED_KIND = (
    "import os; os.makedirs('out'); os.makedirs('outside/bibd');"
    " os.symlink(os.path.abspath('outside/bibd'), 'out/bibd')\n"
)
_LINKED_FILE = (
    "import os; os.makedirs('out'); os.makedirs('outside'); open('outside/x.json', 'w').write('{}');"
    " os.symlink(os.path.abspath('outside/x.json'), 'out/decoders_s1.json')\n"
)
_COMPLEX = "import numpy as np; np.save('c.npy', np.ones((3, 4)) + 1j)\n"
_BIG = "9" * 5000

CASES = [
    # a file where a folder is expected, a folder where a file is expected, unwritable paths
    Case(
        "cli",
        "construct --out names a regular file",
        argv=["construct", "bibd", "7", "3", "1", "--out", "f"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "construct --out below a regular file",
        argv=["construct", "bibd", "7", "3", "1", "--out", "f/x"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "construct --out into /proc (unwritable even for root)",
        argv=["construct", "bibd", "7", "3", "1", "--out", "/proc/gcsim-x"],
    ),
    Case("cli", "reproduce --out into /proc", argv=["reproduce", "--stage", "catalogue", "--out", "/proc/gcsim-x"]),
    Case("cli", "catalogue --dir names a regular file", argv=["catalogue", "--dir", "f"], setup=_FILE),
    Case(
        "cli",
        "cerar design --out names a regular file",
        argv=["cerar", "design", "--workers", "3", "--c", "3", "--out", "f"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "train --out names a regular file (refused before training)",
        argv=["train", "--iterations", "2", "--out", "f"],
        setup=_FILE,
    ),
    Case("cli", "train --mnist names a missing path", argv=["train", "--iterations", "2", "--mnist", "missing"]),
    Case("cli", "load names a folder", argv=["load", "adir"], setup=_DIR),
    Case("cli", "load names a missing file", argv=["load", "missing"]),
    Case(
        "cli",
        "construct --name with a folder in it",
        argv=["construct", "bibd", "7", "3", "1", "--out", "out", "--name", "a/b"],
    ),
    # huge but valid parameters
    Case("cli", "construct bibd 2000 2 1 (1,999,000 blocks)", argv=["construct", "bibd", "2000", "2", "1"], timeout=30),
    Case(
        "cli",
        "construct srg 10009 5004 2501 2502 (Paley(10009))",
        argv=["construct", "srg", "10009", "5004", "2501", "2502"],
        timeout=30,
    ),
    Case(
        "cli",
        "exists bibd 20029 4 1 (number theory, nothing built)",
        argv=["exists", "bibd", "20029", "4", "1"],
        expect="ok",
        timeout=30,
    ),
    Case(
        "cli",
        "exists srg 10009 5004 2501 2502",
        argv=["exists", "srg", "10009", "5004", "2501", "2502"],
        expect="ok",
        timeout=30,
    ),
    Case(
        "cli",
        "error --stragglers all:20 on PG(2,9): C(91, 20) patterns",
        argv=["error", "--design", "pg2_9", "--stragglers", "all:20"],
        timeout=30,
    ),
    Case(
        "cli",
        "error --m 10^9 (B would be 9.1e10 x 91)",
        argv=["error", "--design", "pg2_9", "--m", "1000000000"],
        timeout=30,
    ),
    Case("cli", "cerar simulate --d 10^11", argv=["cerar", "simulate", "--d", "100000000000"], timeout=30),
    Case(
        "cli",
        "cerar design --N 100000 (used to run for minutes)",
        argv=["cerar", "design", "--workers", "100000", "--c", "8"],
        timeout=30,
    ),
    # numbers: negative, zero, NaN, beyond the dtype
    Case("cli", "cerar simulate --d -5 (names --d)", argv=["cerar", "simulate", "--d", "-5"]),
    Case("cli", "cerar simulate --d 0 (a clear error, not NaN)", argv=["cerar", "simulate", "--d", "0"]),
    Case(
        "cli",
        "cerar simulate: coefficients beyond bfloat16's range (eps = 1e30)",
        argv=["cerar", "simulate", "--method", "perturbation", "--eps", "1e30", "--dtype", "bfloat16"],
    ),
    Case(
        "cli",
        "cerar simulate: kappa beyond float32 (vandermonde, c = 40) warns in one line",
        argv=[
            "cerar",
            "simulate",
            "--workers",
            "4",
            "--c",
            "40",
            "--method",
            "vandermonde",
            "--dtype",
            "float32",
            "--d",
            "64",
        ],
        expect="warning",
    ),
    Case("cli", "error --eps nan", argv=["error", "--design", "pg2_9", "--eps", "nan"]),
    Case("cli", "error -s -1", argv=["error", "--design", "pg2_9", "-s", "-1"]),
    Case(
        "cli",
        "error --stragglers bernoulli:1.5",
        argv=["error", "--design", "pg2_9", "--stragglers", "bernoulli:1.5"],
    ),
    Case("cli", "train --lr inf", argv=["train", "--lr", "inf"]),
    Case("cli", "construct bibd 7 3 1 --seed -1", argv=["construct", "bibd", "7", "3", "1", "--seed", "-1"]),
    # wrong types, bad names, unknown flags
    Case("cli", "construct bibd 7 3 x (not an integer)", argv=["construct", "bibd", "7", "3", "x"]),
    Case("cli", "construct with an unknown family", argv=["construct", "nope", "1", "2", "3"]),
    Case("cli", "error --design with an unknown name", argv=["error", "--design", "nope"]),
    Case("cli", "an unknown flag", argv=["construct", "bibd", "7", "3", "1", "--bogus"]),
    Case("cli", "an unknown command", argv=["nope"]),
    # issue #19 item 3: one output-path rule for every writer
    Case(
        "cli",
        "decoder-table --name ../x (wrote outside --out)",
        argv=["decoder-table", "--design", "bibd:7,3,1", "--s-max", "1", "--out", "out", "--name", "../x"],
    ),
    Case(
        "cli",
        "decoder-table --name /abs/x --force (overwrote any .json/.npz pair)",
        argv=[
            "decoder-table",
            "--design",
            "bibd:7,3,1",
            "--s-max",
            "1",
            "--out",
            "out",
            "--name",
            "/tmp/gcsim-x",
            "--force",
        ],
    ),
    Case(
        "cli",
        "decoder-table --force over a link planted at the bundle file, pointing outside --out",
        argv=["decoder-table", "--design", "bibd:7,3,1", "--s-max", "1", "--out", "out", "--force"],
        setup=_LINKED_FILE,
    ),
    Case(
        "cli",
        "construct --out DIR where DIR/bibd is a link outside DIR",
        argv=["construct", "bibd", "7", "3", "1", "--out", "out"],
        setup=_LINKED_KIND,
    ),
    Case(
        "cli",
        "catalogue --dir DIR --force where DIR/bibd is a link outside DIR",
        argv=["catalogue", "--dir", "out", "--force"],
        setup=_LINKED_KIND,
    ),
    # issue #19 item 4: one parser for family specs
    Case("cli", "error --design bibd:7,3,1,9 (four parameters)", argv=["error", "--design", "bibd:7,3,1,9"]),
    Case("cli", "error --design srg:10,3,0 (three parameters)", argv=["error", "--design", "srg:10,3,0"]),
    Case("cli", "error --design coset:27,2,5,1,1", argv=["error", "--design", "coset:27,2,5,1,1"]),
    Case("cli", "gc run --design biregular:40,20,3", argv=["gc", "run", "--design", "biregular:40,20,3"]),
    Case(
        "cli",
        "decoder-table --design srg:10,3,0",
        argv=["decoder-table", "--design", "srg:10,3,0", "--s-max", "1", "--out", "out"],
    ),
    Case(
        "cli",
        "bounds verify --design bibd:7,,1 (an empty parameter)",
        argv=["bounds", "verify", "--design", "bibd:7,,1"],
    ),
    Case(
        "cli", "gc run --design bibd:0,3,1 (a value the family refuses)", argv=["gc", "run", "--design", "bibd:0,3,1"]
    ),
    # issue #19 item 7: types and messages
    Case(
        "cli",
        "construct bibd <5000 digits> 3 1 (too large, not 'not an integer')",
        argv=["construct", "bibd", _BIG, "3", "1"],
    ),
    Case("cli", "error --design bibd:<5000 digits>,3,1", argv=["error", "--design", f"bibd:{_BIG},3,1"]),
    Case(
        "cli", "construct bibd <400 digits> 3 1 (beyond float range)", argv=["construct", "bibd", "9" * 400, "3", "1"]
    ),
    Case(
        "cli",
        "decode-time --rule first:s=<5000 digits>",
        argv=[
            "decode-time",
            "--workers",
            "3",
            "--delays",
            "shifted-exponential:shift=1,rate=1",
            "--rule",
            f"first:s={_BIG}",
        ],
    ),
    Case("cli", "advise --load <5000 digits>", argv=["advise", "-n", "13", "--load", _BIG, "--stragglers", "fixed:1"]),
    Case("cli", "load '' (an empty name)", argv=["load", ""]),
    Case("cli", "error --design '' (an empty name)", argv=["error", "--design", ""]),
    Case(
        "cli",
        "train --mnist FIFO (not 'no such file')",
        argv=["train", "--iterations", "1", "--mnist", "fifo"],
        setup=_FIFO,
    ),
    Case(
        "cli",
        "train --mnist a .npy linked to /dev/zero",
        argv=["train", "--iterations", "1", "--mnist", "zero.npy"],
        setup=_ZERO,
    ),
    Case(
        "cli",
        "decode-time --delays trace: a .npy linked to /dev/zero (not 'pickled data')",
        argv=["decode-time", "--delays", "trace:zero.npy", "--rule", "first:s=1"],
        setup=_ZERO,
    ),
    Case("cli", "load a missing bundle (the refusal on stderr)", argv=["load", "missing"]),
    Case("cli", "gcsim with no command (short usage on stderr, exit 2)", argv=[]),
    Case(
        "cli",
        "decode-time --delays trace: a complex trace",
        argv=["decode-time", "--delays", "trace:c.npy", "--rule", "first:s=1"],
        setup=_COMPLEX,
    ),
    Case(
        "cli",
        "decode-time --delays shift=1,rate=1,rate=2 (a repeated key)",
        argv=[
            "decode-time",
            "--workers",
            "3",
            "--delays",
            "shifted-exponential:shift=1,rate=1,rate=2",
            "--rule",
            "first:s=1",
        ],
    ),
    Case(
        "cli",
        "advise --links bandwidth=1e9,bandwidth=2e9 (a repeated key)",
        argv=["advise", "-n", "13", "--load", "4", "--stragglers", "fixed:1", "--links", "bandwidth=1e9,bandwidth=2e9"],
    ),
    Case(
        "api",
        "optimal_error(..., normalized='yes')",
        code="import gcsim, numpy as np\nfrom gcsim.coding.evaluate import optimal_error\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3), 2, 'rd')\noptimal_error(sch, np.ones(7, bool), normalized='yes')\n",
    ),
    Case(
        "api",
        "expected_error(..., normalized=1)",
        code="import gcsim\nfrom gcsim.coding.evaluate import expected_error\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3), 2, 'rd')\n"
        "expected_error(sch, gcsim.straggler_model('fixed', 7, s=1), normalized=1)\n",
    ),
    Case(
        "api",
        "verify_bounds(..., progress='no')",
        code="import gcsim\nfrom gcsim.coding.verify import verify_bounds\n"
        "sch = gcsim.encode(gcsim.bibd(7, 3), 2, 'rd')\n"
        "verify_bounds(sch, gcsim.straggler_model('fixed', 7, s=1), samples=20, progress='no')\n",
    ),
    Case(
        "api",
        "CERAR simulate, float32 gradients of 1e39 (beyond the dtype)",
        code="import numpy as np\nfrom gcsim.cerar import design\nfrom gcsim.cerar.protocol import simulate\n"
        "simulate(design(3, 3, 'exact'), np.full((3, 8), 1e39), dtype='float32')\n",
    ),
    Case(
        "api",
        "CERAR simulate, float64 gradients of 1e308 (the sum overflows)",
        code="import numpy as np\nfrom gcsim.cerar import design\nfrom gcsim.cerar.protocol import simulate\n"
        "simulate(design(3, 3, 'exact'), np.full((3, 8), 1e308), dtype='float64')\n",
    ),
    # issue #23 item 4: limits from the shell, one grammar of --stragglers, exported-code folders
    Case(
        "cli",
        "--limit with an unknown limit name",
        argv=["--limit", "MAX_NOTHING=5", "exists", "bibd", "7", "3", "1"],
    ),
    Case(
        "cli",
        "--limit MAX_PATTERNS=0 (not a positive integer)",
        argv=["--limit", "MAX_PATTERNS=0", "exists", "bibd", "7", "3", "1"],
    ),
    Case(
        "cli",
        "--stragglers often (neither S nor KIND:VALUE)",
        argv=["error", "--design", "petersen", "--stragglers", "often"],
    ),
    Case(
        "cli",
        "--stragglers all:2 with --model worst (deprecated)",
        argv=["error", "--design", "petersen", "--stragglers", "all:2", "--model", "worst"],
    ),
    Case(
        "cli",
        "gc run --stragglers bernoulli:0.1 --wait-limit 5 (the parameter server's flag: removed, with the reason)",
        argv=["gc", "run", "--design", "petersen", "--stragglers", "bernoulli:0.1", "--wait-limit", "5"],
    ),
    Case(
        "cli",
        "load a folder without advice.json",
        argv=["load", "adir"],
        setup=_DIR,
    ),
    Case(
        "cli",
        "load an exported code whose advice.json names ../../etc/passwd as its encoder",
        argv=["load", "adv/rank1_bibd_naive"],
        setup="import json, gcsim; f = gcsim.advise(7, 3, 1, 'fixed:1', families=['bibd'], progress=False)"
        ".export('adv', name='rank1_bibd_naive'); m = json.load(open(f / 'advice.json')); "
        "m['files']['encoder'] = '../../etc/passwd'; json.dump(m, open(f / 'advice.json', 'w'))\n",
    ),
]
