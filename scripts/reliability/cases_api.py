"""Bad and huge inputs to the Python API: a clear error naming the argument, fast (issue #9 §5).

Huge-but-valid parameters are answered from number theory (existence) or refused before anything
is allocated, with the requested size and the limit of :mod:`gcsim.limits` in the message.
"""

from __future__ import annotations

from reliability import Case

_G = "import gcsim; "
_ENC = "import gcsim; from gcsim.coding.schemes import encode; "
_ST = "from gcsim.coding.stragglers import straggler_model, FixedModel; "
_FAM = "from gcsim.combinatorics import srg_cayley as F, bibd_elementary as B, fields as G; "

CASES = [
    # huge but valid: existence by number theory, construction refused up front with the limit
    Case(
        "api",
        "bibd(20029, 4, 1, existence=True): radical family by modular arithmetic, no field table",
        code=_G + "print(gcsim.bibd(20029, 4, 1, existence=True))",
        expect="ok",
        timeout=30,
    ),
    Case(
        "api", "bibd(20029, 4, 1): a 20029 x 33428401 incidence matrix", code=_G + "gcsim.bibd(20029, 4, 1)", timeout=30
    ),
    Case(
        "api",
        "bibd(90001, 10, 1) (used to allocate a 90001 x 90001 table)",
        code=_G + "gcsim.bibd(90001, 10, 1)",
        timeout=30,
    ),
    Case("api", "bibd(2000, 2, 1): 1,999,000 blocks", code=_G + "gcsim.bibd(2000, 2, 1)", timeout=30),
    Case(
        "api",
        "bibd(7, 3, 2000, existence=True): lambda = 2000 (used to hit RecursionError)",
        code=_G + "print(gcsim.bibd(7, 3, 2000, existence=True))",
        expect="ok",
        timeout=30,
    ),
    Case(
        "api",
        "bibd(10^30 + 1, 4, 1, existence=True): astronomical v",
        code=_G + "print(gcsim.bibd(10**30 + 1, 4, 1, existence=True))",
        expect="ok",
        timeout=30,
    ),
    Case(
        "api",
        "srg(10009, 5004, 2501, 2502, existence=True): Paley parameters, nothing built",
        code=_G + "print(gcsim.srg(10009, 5004, 2501, 2502, existence=True))",
        expect="ok",
        timeout=30,
    ),
    Case(
        "api",
        "srg(10009, 5004, 2501, 2502): Paley(10009) (65 s and 5.9 GB before)",
        code=_G + "gcsim.srg(10009, 5004, 2501, 2502)",
        timeout=30,
    ),
    Case(
        "api",
        "srg existence, conference parameters with v = 10^21 + 1",
        code=_G + "v = 10**21 + 1; print(gcsim.srg(v, (v-1)//2, (v-5)//4, (v-1)//4, existence=True))",
        expect="ok",
        timeout=30,
    ),
    Case("api", "paley_graph(10009) called directly", code=_FAM + "F.paley_graph(10009)", timeout=30),
    Case(
        "api",
        "complete_design(100, 50): C(100, 50) blocks (used to run forever)",
        code=_FAM + "B.complete_design(100, 50)",
        timeout=30,
    ),
    Case("api", "field_tables(10007): two 10007 x 10007 tables", code=_FAM + "G.field_tables(10007)", timeout=30),
    Case(
        "api",
        "biregular_graph(100000, 100000, 3, 3)",
        code=_G + "gcsim.biregular_graph(100000, 100000, 3, 3)",
        timeout=30,
    ),
    Case(
        "api",
        "encode(PG(2,9), m=10^9): B would be 9.1e10 x 91",
        code=_ENC + "encode(gcsim.bibd(91, 10, 1), 10**9)",
        timeout=30,
    ),
    Case(
        "api",
        "straggler_model('all', 91, s=20): C(91, 20) = 6.5e19 patterns",
        code=_ST + "straggler_model('all', 91, s=20)",
        timeout=30,
    ),
    Case("api", "FixedModel(100, 3).sample(10^12)", code=_ST + "FixedModel(100, 3).sample(10**12)", timeout=30),
    # non-bool values for bool flags
    Case("api", "bibd(7, 3, 1, existence='yes')", code=_G + "gcsim.bibd(7, 3, 1, existence='yes')"),
    Case("api", "srg(10, 3, 0, 1, closed=1)", code=_G + "gcsim.srg(10, 3, 0, 1, closed=1)"),
    Case(
        "api",
        "srg(10, 3, 0, 1, existence='False') (a truthy string)",
        code=_G + "gcsim.srg(10, 3, 0, 1, existence='False')",
    ),
    # wrong types, negative / zero parameters, NaN, bad names
    Case("api", "bibd(7.5, 3): non-integral float", code=_G + "gcsim.bibd(7.5, 3)"),
    Case("api", "bibd('7', 3): a string", code=_G + "gcsim.bibd('7', 3)"),
    Case("api", "bibd(-7, 3, 1): negative v", code=_G + "gcsim.bibd(-7, 3, 1)"),
    Case("api", "bibd(7, 3, 0): lambda = 0", code=_G + "gcsim.bibd(7, 3, 0)"),
    Case("api", "encode(..., eps=NaN)", code=_ENC + "encode(gcsim.bibd(7, 3, 1), 2, 'rd', eps=float('nan'))"),
    Case("api", "encode(..., method='nope')", code=_ENC + "encode(gcsim.bibd(7, 3, 1), 2, 'nope')"),
    Case(
        "api",
        "encode of an assignment containing NaN",
        code=_ENC + "import numpy as np; encode(np.array([[1.0, np.nan], [1.0, 1.0]]), 1)",
    ),
    Case(
        "api", "straggler_model('bernoulli', 10, p=NaN)", code=_ST + "straggler_model('bernoulli', 10, p=float('nan'))"
    ),
    Case("api", "straggler_model('nope', 10): unknown kind", code=_ST + "straggler_model('nope', 10)"),
    Case("api", "srg(10, 3, 0, -1): negative mu", code=_G + "gcsim.srg(10, 3, 0, -1)"),
]
