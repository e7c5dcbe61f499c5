"""What the property-based fuzz suite found (issue #19 item 8, ``tests/fuzz/``), one case per defect.

Each case is the smallest reproducer hypothesis shrank to.  Fixed ones are checked by
``tests/fuzz/test_fuzz_found.py``; the open ones there are strict xfails naming the item that
fixes them (the fuzz tests look past exactly that exception from exactly that function); none is
open now.
"""

from __future__ import annotations

from reliability import Case

_G = "import gcsim, numpy as np; "
_RD = _G + "sch = gcsim.encode(gcsim.bibd(7, 3, 1), 2, 'rd', seed=1); "
_ZERO = "Z = np.broadcast_to(np.ones((1, 1)), (10**6, 10**6)); "

CASES = [
    # fixed: ragged nested lists reached numpy and came back as its ValueError
    Case(
        "api",
        "fuzz: optimal_error(scheme, [[0], [0, 0]]): a ragged mask (was numpy's ValueError)",
        code=_RD + "gcsim.optimal_error(sch, [[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: fixed_decoder_error(scheme, [[0], [0, 0]]) (was numpy's ValueError)",
        code=_RD + "gcsim.fixed_decoder_error(sch, [[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: run_scheme(scheme, [[0], [0, 0]], mask): ragged gradients (was numpy's ValueError)",
        code=_RD + "gcsim.run_scheme(sch, [[0], [0, 0]], np.ones(7, dtype=bool))",
    ),
    Case(
        "api",
        "fuzz: cerar.simulate(design(2, 1, 'exact'), [[0], [0, 0]]) (was numpy's ValueError)",
        code=_G + "gcsim.cerar.simulate(gcsim.cerar.design(2, 1, 'exact'), [[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: partial_scheme(Fano, owners=[[0], [0, 0]]) (was numpy's ValueError)",
        code=_G + "gcsim.partial_scheme(gcsim.bibd(7, 3, 1), owners=[[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: cerar.num_rounds(2, None) (was TypeError from int(None))",
        code=_G + "gcsim.cerar.num_rounds(2, None)",
    ),
    Case(
        "api",
        "fuzz: cerar.num_rounds(True, 3) (a bool ring size gave L = 2)",
        code=_G + "print(gcsim.cerar.num_rounds(True, 3))",
    ),
    Case(
        "api",
        "fuzz: weighted_margulis_gabber_galil(10**200): the size message overflowed float (OverflowError)",
        code=_G + "gcsim.weighted_margulis_gabber_galil(10**200)",
    ),
    Case(
        "cli",
        "fuzz: gcsim catalogue --force with no --dir (rewrote the source checkout's designs/)",
        argv=["catalogue", "--force"],
    ),
    Case("cli", "fuzz: gcsim catalogue --export (deprecated, no folder) with no --dir", argv=["catalogue", "--export"]),
    Case(
        "api",
        "fuzz: run_scheme(scheme, gradients, {}): a dict mask was taken for a CuPy array (TypeError)",
        code=_RD + "gcsim.run_scheme(sch, np.ones((7, 6)), {})",
    ),
    Case(
        "api",
        "fuzz: run_scheme(..., decoder=[[0], [0, 0]]): a ragged decoder (was numpy's ValueError)",
        code=_RD + "gcsim.run_scheme(sch, np.ones((7, 6)), np.ones(7, dtype=bool), decoder=[[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: delay_model('trace', 1, delays=[[0], [0, 0]]): a ragged trace (was numpy's ValueError)",
        code=_G + "gcsim.delay_model('trace', 1, delays=[[0], [0, 0]])",
    ),
    Case(
        "api",
        "fuzz: delay_model('shifted-exponential', 2, rate=[0.5, [7]]): a ragged parameter (was numpy's ValueError)",
        code=_G + "gcsim.delay_model('shifted-exponential', 2, shift=0.0, rate=[0.5, [7]])",
    ),
    # fixed under item 7 (de0e30c) after the fuzzer reported them
    Case(
        "api",
        "fuzz: straggler_model('trace', delays=3+0j): a complex trace (was TypeError)",
        code=_G + "gcsim.straggler_model('trace', delays=3 + 0j)",
    ),
    Case(
        "api",
        "fuzz: straggler_model('trace', delays=''): a string trace (was numpy's ValueError)",
        code=_G + "gcsim.straggler_model('trace', delays='')",
    ),
    Case("cli", "fuzz: gcsim load ' ' (the refusal was printed on stdout)", argv=["load", " "]),
    Case(
        "api",
        "fuzz: straggler_model('bernoulli', 10**30, p=0.1): n unbounded (was numpy's ValueError)",
        code=_G + "gcsim.straggler_model('bernoulli', 10**30, p=0.1)",
    ),
    Case(
        "api",
        "fuzz: straggler_model('bernoulli', 10**12, p=0.1): an 8 TB probability vector (was MemoryError)",
        code=_G + "gcsim.straggler_model('bernoulli', 10**12, p=0.1)",
    ),
    Case(
        "api",
        "fuzz: straggler_model('bernoulli', 1, p={}) (was TypeError from np.asarray)",
        code=_G + "gcsim.straggler_model('bernoulli', 1, p={})",
    ),
    # open when found (strict xfails), then fixed: the size check came after a NaN / 0-1 test that copies
    Case(
        "api",
        "fuzz: encode(zero-stride 10^6 x 10^6 float assignment, 1) (was MemoryError)",
        code=_G + _ZERO + "gcsim.encode(Z, 1)",
        timeout=30,
    ),
    Case(
        "api",
        "fuzz: partial_scheme(zero-stride 10^6 x 10^6 float assignment) (was MemoryError)",
        code=_G + _ZERO + "gcsim.partial_scheme(Z, 1)",
        timeout=30,
    ),
    Case(
        "api",
        "fuzz: run_scheme(scheme, gradients, zero-stride 10^6 x 10^6 mask) (was MemoryError)",
        code=_RD + _ZERO + "gcsim.run_scheme(sch, np.ones((7, 6)), Z)",
        timeout=30,
    ),
]
