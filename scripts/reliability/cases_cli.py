"""Bad and huge inputs to the ``gcsim`` command line: one line, exit 2 (bad input) or 1, no traceback.

Paths of every subcommand (``--export``, ``--out``, ``--dir``, ``--mnist``, ``load``), numeric flags
(negative, zero, NaN, out of range), unknown flags and families, and parameters beyond
:mod:`gcsim.limits` (the message states the size and the limit).
"""

from __future__ import annotations

from reliability import Case

_FILE = "open('f', 'w').write('not a folder')\n"
_DIR = "import os; os.mkdir('adir')\n"

CASES = [
    # a file where a folder is expected, a folder where a file is expected, unwritable paths
    Case(
        "cli",
        "construct --export names a regular file",
        argv=["construct", "bibd", "7", "3", "1", "--export", "f"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "construct --export below a regular file",
        argv=["construct", "bibd", "7", "3", "1", "--export", "f/x"],
        setup=_FILE,
    ),
    Case(
        "cli",
        "construct --export into /proc (unwritable even for root)",
        argv=["construct", "bibd", "7", "3", "1", "--export", "/proc/gcsim-x"],
    ),
    Case("cli", "reproduce --out into /proc", argv=["reproduce", "--stage", "catalogue", "--out", "/proc/gcsim-x"]),
    Case("cli", "catalogue --dir names a regular file", argv=["catalogue", "--dir", "f"], setup=_FILE),
    Case(
        "cli",
        "cerar design --export names a regular file",
        argv=["cerar", "design", "--N", "3", "--c", "3", "--export", "f"],
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
        argv=["construct", "bibd", "7", "3", "1", "--export", "out", "--name", "a/b"],
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
        "error --model all -s 20 on PG(2,9): C(91, 20) patterns",
        argv=["error", "--design", "pg2_9", "--model", "all", "-s", "20"],
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
        argv=["cerar", "design", "--N", "100000", "--c", "8"],
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
            "--N",
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
        "error --model bernoulli --p 1.5",
        argv=["error", "--design", "pg2_9", "--model", "bernoulli", "--p", "1.5"],
    ),
    Case("cli", "train --lr inf", argv=["train", "--lr", "inf"]),
    Case("cli", "construct bibd 7 3 1 --seed -1", argv=["construct", "bibd", "7", "3", "1", "--seed", "-1"]),
    # wrong types, bad names, unknown flags
    Case("cli", "construct bibd 7 3 x (not an integer)", argv=["construct", "bibd", "7", "3", "x"]),
    Case("cli", "construct with an unknown family", argv=["construct", "nope", "1", "2", "3"]),
    Case("cli", "error --design with an unknown name", argv=["error", "--design", "nope"]),
    Case("cli", "an unknown flag", argv=["construct", "bibd", "7", "3", "1", "--bogus"]),
    Case("cli", "an unknown command", argv=["nope"]),
]
