"""Bad inputs to the delay models, arrival rules, expected decode times and decoder tables.

API cases (``python -c``); the decoder-table file cases export a valid table first (``setup``) and
then damage or misuse it.
"""

from __future__ import annotations

from reliability import Case

_D = "import numpy as np; from gcsim.coding.delays import *; "
_T = (
    "import numpy as np; from gcsim.coding.schemes import encode; "
    "from gcsim.coding.decoder_table import decoder_table, load_decoder_table; "
)
_FANO = (
    "A = [[1,1,0,1,0,0,0],[0,1,1,0,1,0,0],[0,0,1,1,0,1,0],[0,0,0,1,1,0,1],[1,0,0,0,1,1,0],"
    "[0,1,0,0,0,1,1],[1,0,1,0,0,0,1]]; "
)
# a valid exported table: ./t.{npz,json}
_EXPORTED = _T + _FANO + "decoder_table(encode(A, 2, 'rd', seed=1), s_max=2).export('t')"
# a sparse 4 GB .npy of shape 5 x 1e8: a header and a length, no data block on disk
_SPARSE = (
    "from numpy.lib import format as F; import os; fh = open('big.npy', 'wb'); "
    "F.write_array_header_1_0(fh, {'descr': '<f8', 'fortran_order': False, 'shape': (5, 10**8)}); "
    "off = fh.tell(); fh.close(); os.truncate('big.npy', off + 5 * 10**8 * 8)"
)
_SE = "delay_model('shifted-exponential', "

CASES = [
    # delay models
    Case("api", "delay model of an unknown kind ('gamma')", code=_D + "delay_model('gamma', 5, rate=1.0)"),
    Case("api", "shifted-exponential delays with rate 0", code=_D + "delay_model('shifted-exponential', 5, rate=0.0)"),
    Case(
        "api",
        "shifted-exponential delays with a negative shift",
        code=_D + "delay_model('shifted-exponential', 5, shift=-1.0, rate=1.0)",
    ),
    Case(
        "api",
        "per-worker rates of the wrong length (3 rates for 5 workers)",
        code=_D + "delay_model('shifted-exponential', 5, rate=[1.0, 2.0, 3.0])",
    ),
    Case("api", "Pareto delays with shape NaN", code=_D + "delay_model('pareto', 5, scale=1.0, shape=float('nan'))"),
    Case(
        "api",
        "bimodal delays with p_slow = 1.5",
        code=_D + "delay_model('bimodal', 5, p_slow=1.5, fast_rate=1.0, slow_rate=0.1)",
    ),
    Case(
        "api", "delay trace containing NaN", code=_D + "delay_model('trace', delays=[[1.0, float('nan')], [2.0, 3.0]])"
    ),
    Case(
        "api", "delay trace with a negative delay", code=_D + "delay_model('trace', delays=[[1.0, -0.5], [2.0, 3.0]])"
    ),
    Case("api", "delay trace given as a 1-D list", code=_D + "delay_model('trace', delays=[1.0, 2.0, 3.0])"),
    Case(
        "api",
        "sample_delays of 10^8 rows (over MAX_DENSE_ENTRIES), refused before allocating",
        code=_D + "delay_model('pareto', 10, scale=1.0, shape=2.0).sample_delays(10 ** 8)",
    ),
    # rules
    Case("api", "'first' rule without s", code=_D + "arrival_rule('first')"),
    Case(
        "api",
        "'first' rule waiting for more stragglers than workers (s = 6, n = 5)",
        code=_D + "DelayStragglerModel(delay_model('pareto', 5, scale=1.0, shape=2.0), arrival_rule('first', s=6))",
    ),
    Case("api", "negative deadline", code=_D + "arrival_rule('deadline', deadline=-1.0)"),
    Case("api", "relative rule with mu = inf", code=_D + "arrival_rule('relative', mu=float('inf'))"),
    Case(
        "api",
        "rule applied to delays containing NaN",
        code=_D + "arrival_rule('relative', mu=1.0).apply([1.0, float('nan'), 2.0])",
    ),
    # expected decode time
    Case(
        "api",
        "expected decode time with method='exact' where no closed form exists (heterogeneous)",
        code=_D + "expected_decode_time(delay_model('shifted-exponential', 4, shift=[0, 1, 2, 3], rate=1.0), "
        "arrival_rule('first', s=1), method='exact')",
    ),
    Case(
        "api",
        "expected decode time of a trace by quadrature",
        code=_D + "expected_decode_time(delay_model('trace', delays=[[1.0, 2.0]]), arrival_rule('first', s=0), "
        "method='quad')",
    ),
    Case(
        "api",
        "expected decode time with an infinite mean (Pareto shape 0.8, wait for all)",
        code=_D + "r = expected_decode_time(delay_model('pareto', 5, scale=1.0, shape=0.8), "
        "arrival_rule('first', s=0)); print(r.mean, r.reason)",
        expect="ok",
    ),
    Case(
        "api",
        "expected decode time of a trace whose rule waits for a transmission that never arrives",
        code=_D + "r = expected_decode_time(delay_model('trace', delays=[[1.0, np.inf], [2.0, 1.0]]), "
        "arrival_rule('first', s=0)); print(r.mean, r.reason)",
        expect="ok",
    ),
    Case(
        "api",
        "expected_error with a delay-generated straggler model (Monte Carlo)",
        code="import numpy as np; from gcsim.coding.delays import *; from gcsim.coding.schemes import encode; "
        "from gcsim.coding.evaluate import expected_error; "
        + _FANO
        + "m = DelayStragglerModel(delay_model('bimodal', 7, p_slow=0.2, fast_rate=5.0, slow_shift=2.0, "
        "slow_rate=0.5), arrival_rule('relative', mu=1.0)); "
        "r = expected_error(encode(A, 2, 'rd'), m, samples=200, progress=False); print(r.mean, r.method)",
        expect="ok",
    ),
    Case(
        "api",
        "expected_error with a delay model whose n differs from the scheme's",
        code="from gcsim.coding.delays import *; from gcsim.coding.schemes import encode; "
        "from gcsim.coding.evaluate import expected_error; import numpy as np; "
        "expected_error(encode(np.eye(3, dtype=int), 1, 'naive'), "
        "DelayStragglerModel(delay_model('pareto', 4, scale=1.0, shape=2.0), arrival_rule('first', s=1)))",
    ),
    # decoder tables
    Case(
        "api",
        "decoder table for all C(91, <=20) patterns (about 9e19), refused up front",
        code=_T + "decoder_table(encode(np.eye(91, dtype=int), 1, 'naive'), s_max=20)",
    ),
    Case(
        "api",
        "decoder table of 20,101 patterns x 200 workers x m = 5 (over MAX_DENSE_ENTRIES)",
        code=_T + "decoder_table(encode(np.eye(200, dtype=int), 5, 'naive'), s_max=2)",
    ),
    Case(
        "api",
        "decoder table given both s_max and a list of stragglers",
        code=_T + _FANO + "decoder_table(encode(A, 1, 'naive'), s_max=1, stragglers=[[0]])",
    ),
    Case(
        "api",
        "decoder table with the same pattern listed twice",
        code=_T + _FANO + "decoder_table(encode(A, 1, 'naive'), stragglers=[[1, 2], [2, 1]])",
    ),
    Case(
        "api",
        "decoder lookup of a pattern with more stragglers than s_max",
        code=_T + _FANO + "t = decoder_table(encode(A, 1, 'naive'), s_max=1); t.decoder([0, 0, 1, 1, 1, 1, 1])",
    ),
    Case(
        "files",
        "decoder table whose .npz was modified after export",
        setup=_EXPORTED,
        code=_T + "raw = bytearray(open('t.npz', 'rb').read()); raw[len(raw) // 2] ^= 0xFF; "
        "open('t.npz', 'wb').write(bytes(raw)); load_decoder_table('t')",
    ),
    Case(
        "files",
        "decoder table whose manifest claims a different s_max (count mismatch)",
        setup=_EXPORTED,
        code=_T + "import json; m = json.load(open('t.json')); m['metadata']['s_max'] = 3; "
        "json.dump(m, open('t.json', 'w')); load_decoder_table('t')",
    ),
    Case(
        "files",
        "load_decoder_table on a design bundle (another kind)",
        setup="import gcsim; from gcsim.catalogue import export_object; "
        "export_object(gcsim.bibd(7, 3, 1), '.', name='b')",
        code=_T + "load_decoder_table('bibd/b')",
    ),
    Case("files", "load_decoder_table on a missing file", code=_T + "load_decoder_table('nothing_here')"),
    # issue #19 item 5: logical sizes, checked before any allocation or read
    Case(
        "files",
        "delay trace .npy of shape 5 x 1e8 (a sparse 4 GB file): refused from its header",
        setup=_SPARSE,
        code=_D + "load_trace('big.npy')",
        timeout=20,
    ),
    Case(
        "cli",
        "gcsim decode-time --delays trace:big.npy (sparse 4 GB, 5 x 1e8): refused from its header",
        setup=_SPARSE,
        argv=["decode-time", "--delays", "trace:big.npy", "--rule", "first:s=1"],
        timeout=20,
    ),
    Case(
        "files",
        "delay trace .npy whose header declares more data than the file holds",
        setup="import numpy as np, os; np.save('t.npy', np.ones((3, 4))); "
        "os.truncate('t.npy', os.path.getsize('t.npy') - 8)",
        code=_D + "load_trace('t.npy')",
    ),
    Case(
        "api",
        "trace delays as a zero-stride view of 1e9 x 7 (np.broadcast_to)",
        code=_D + "delay_model('trace', delays=np.broadcast_to(np.ones((1, 1)), (10**9, 7)))",
    ),
    Case(
        "api",
        "delay model with n = 1e10 workers, sample(1)",
        code=_D + "DelayStragglerModel(delay_model('shifted-exponential', 10**10, rate=1.0), "
        "arrival_rule('first', s=1)).sample(1)",
    ),
    Case(
        "api",
        "expected_decode_time at n = 1e10 workers",
        code=_D
        + "expected_decode_time(delay_model('shifted-exponential', 10**10, rate=1.0), arrival_rule('first', s=3))",
    ),
    Case(
        "api",
        "expected_decode_time(method='quad') at n = 1e8 workers",
        code=_D
        + "expected_decode_time(delay_model('shifted-exponential', 10**8, rate=1.0), arrival_rule('first', s=3), "
        "method='quad')",
    ),
    Case(
        "api",
        "quadrature over 1e5 distinct workers under 'first' (over MAX_QUAD_TERMS)",
        code=_D + "expected_decode_time(delay_model('shifted-exponential', 10**5, rate=np.linspace(1, 2, 10**5)), "
        "arrival_rule('first', s=3), method='quad')",
        timeout=30,
    ),
    Case(
        "api",
        "optimal_error over a zero-stride batch of 1e9 x 7 masks",
        code="import numpy as np, gcsim; sch = gcsim.encode(gcsim.bibd(7, 3, 1), 1, 'rd'); "
        "gcsim.optimal_error(sch, np.broadcast_to(np.ones(7, bool), (10**9, 7)))",
    ),
    Case(
        "api",
        "encode / partial_scheme of a zero-stride 1e6 x 1e6 assignment",
        code="import numpy as np, gcsim; from gcsim.coding.partial import partial_scheme; "
        "A = np.broadcast_to(np.ones((1, 1), np.int64), (10**6, 10**6)); partial_scheme(A, 1)",
    ),
    Case(
        "api",
        "CERAR simulate on zero-stride 3 x 1e12 gradients",
        code="import numpy as np, gcsim; from gcsim.cerar import design, simulate; "
        "simulate(design(3, 2, 'exact'), np.broadcast_to(np.ones((1, 1)), (3, 10**12)))",
    ),
    Case(
        "api",
        "run_scheme on zero-stride 7 x 1e12 gradients",
        code="import numpy as np, gcsim; from gcsim.executor.arrays import run_scheme; "
        "sch = gcsim.encode(gcsim.bibd(7, 3, 1), 1, 'naive'); "
        "run_scheme(sch, np.broadcast_to(np.ones((1, 1)), (7, 10**12)), np.ones(7, bool))",
    ),
]
