"""What the fuzz suite found (issue #19 item 8), one test each, smallest reproducer first.

Fixed defects: each test failed on the code before the fix (a raw numpy ``ValueError`` /
``TypeError`` / ``OverflowError`` instead of a gcsim error naming the argument).

Open defects (none now), in files other engineers are changing: a strict ``xfail`` naming the
defect, so the run fails (XPASS) the day it is fixed; then delete the xfail and the matching entry
of ``fuzzing.KNOWN_DEFECTS`` / ``test_fuzz_cli.KNOWN_CLI_DEFECTS`` that keeps the fuzzer going past it.
Each also has a case in ``scripts/reliability/cases_fuzz.py``.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from fuzzing import KNOWN_DEFECTS, bounded

import gcsim
from gcsim.errors import InvalidArgumentError, SizeLimitError

RAGGED = [[0], [0, 0]]  # numpy >= 1.24 refuses to make an array of it (ValueError)


@pytest.fixture(scope="module")
def rd():
    return gcsim.encode(gcsim.bibd(7, 3, 1), 2, "rd", seed=1)


# --------------------------------------------------------------------------- fixed


@pytest.mark.parametrize("evaluate", [gcsim.optimal_error, gcsim.fixed_decoder_error])
def test_ragged_straggler_mask_is_refused(rd, evaluate):
    """``optimal_error(scheme, [[0], [0, 0]])`` raised numpy's ValueError from ``check_mask``."""
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^nonstragglers: cannot be read as a mask"):
        evaluate(rd, RAGGED)


def test_ragged_owners_are_refused():
    """``partial_scheme(A, owners=[[0], [0, 0]])`` raised numpy's ValueError."""
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^owners: must be an integer array of length N = 7"):
        gcsim.partial_scheme(gcsim.bibd(7, 3, 1), owners=RAGGED)


def test_unreadable_masks_and_decoders_in_run_scheme(rd):
    """``run_scheme(scheme, g, {})`` raised TypeError (a dict has ``.get``: taken for a CuPy array);
    a ragged mask or decoder raised numpy's ValueError."""
    g = np.ones((7, 6))
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^nonstragglers: "):
        gcsim.run_scheme(rd, g, {})
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^nonstragglers: cannot be read as an array"):
        gcsim.run_scheme(rd, g, RAGGED)
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^decoder: cannot be read as an array"):
        gcsim.run_scheme(rd, g, np.ones(7, dtype=bool), decoder=RAGGED)


def test_ragged_delay_trace_is_refused():
    """``delay_model("trace", 1, delays=[[0], [0, 0]])`` raised numpy's ValueError from the complex check
    (with ``n`` given; without it the ragged trace was refused)."""
    for n in (1, 2, None):
        with bounded(), pytest.raises(InvalidArgumentError, match=r"^delays: must be a numeric workers x iterations"):
            gcsim.delay_model("trace", n, delays=RAGGED)


@pytest.mark.parametrize("param", ["shift", "rate"])
def test_ragged_delay_parameter_is_refused(param):
    """``delay_model("shifted-exponential", 2, rate=[0.5, [7]])`` raised numpy's ValueError from ``np.ndim``."""
    params = {"shift": 0.0, "rate": 1.0} | {param: [0.5, [7]]}
    with bounded(), pytest.raises(InvalidArgumentError, match=rf"^{param}: must be a real number or 2 real numbers"):
        gcsim.delay_model("shifted-exponential", 2, **params)


def test_ragged_gradients_are_refused(rd):
    """``run_scheme`` and CERAR ``simulate`` raised numpy's ValueError on ragged gradients."""
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^gradients: cannot be read as an array"):
        gcsim.run_scheme(rd, RAGGED, np.ones(7, dtype=bool))
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^gradients: cannot be read as an array"):
        gcsim.cerar.simulate(gcsim.cerar.design(2, 1, "exact"), RAGGED)


def test_size_limit_message_beyond_the_float_range():
    """A size past 1.8e308 entries raised OverflowError while formatting the SizeLimitError message.

    ``weighted_margulis_gabber_galil(10**200)`` asks for a (10^400)^2 = 10^800-entry matrix; the
    message states the exact power of ten (the size is an exact integer, compared independently).
    """
    m = 10**200
    with bounded(), pytest.raises(SizeLimitError) as info:
        gcsim.weighted_margulis_gabber_galil(m)
    assert info.value.requested == (m * m) ** 2
    assert "1e+400 x 1e+400 matrix (1e+800 entries)" in str(info.value)


@pytest.mark.parametrize(
    ("N", "c", "bad"),
    [(2, None, "c"), (None, 3, "N"), (True, 3, "N"), (4, 2.5, "c"), (1, 3, "N"), (4, 0, "c"), ("4", 8, "N")],
)
def test_num_rounds_checks_its_arguments(N, c, bad):
    """``gcsim.cerar.num_rounds(2, None)`` raised TypeError from ``int(None)``; ``(True, 3)`` gave 2."""
    with pytest.raises(InvalidArgumentError, match=rf"^{bad}: "):
        gcsim.cerar.num_rounds(N, c)


def test_num_rounds_value():
    """L = c + N - 2 (theory §CERAR), for numpy and Python integers alike."""
    assert [gcsim.cerar.num_rounds(N, c) for N, c in [(2, 1), (4, 8), (np.int64(3), 5)]] == [1, 10, 6]


def test_catalogue_writes_only_into_a_named_folder(tmp_path, monkeypatch):
    """``gcsim catalogue --force`` (no ``--dir``), run from any folder, rewrote the source checkout's
    ``designs/`` (the default ``--dir`` is the packaged catalogue, writable in a checkout).

    Now ``--out``/``--force`` need a folder (``--out DIR``, ``--export DIR`` before #34); the packaged
    files are compared byte for byte.
    """
    from gcsim.app.paths import packaged_catalogue

    monkeypatch.chdir(tmp_path)
    designs = packaged_catalogue()
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(designs.rglob("*.json"))}
    for argv in (["catalogue", "--force"], ["catalogue", "--export"], ["catalogue", "--export", "--force", "--json"]):
        rc, out, err = _cli(argv)
        assert rc == 2 and "gcsim: error: --" in err and "--out DIR" in err and not out, (argv, rc, err)
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(designs.rglob("*.json"))} == before
    rc, out, err = _cli(["catalogue", "--export", "--dir", "mine", "--json"])  # a folder of one's own: fine
    assert rc == 0 and (tmp_path / "mine" / "bibd" / "pg2_9.json").is_file()


# --------------------------------------------------------------------------- reported to their owners


def test_known_defects_have_an_xfail_here():
    """Every defect the fuzzer tolerates has a strict xfail here (none open now)."""
    import test_fuzz_cli

    assert not KNOWN_DEFECTS and not test_fuzz_cli.KNOWN_CLI_DEFECTS


@pytest.mark.parametrize("delays", [3 + 0j, np.full((3, 4), 1 + 1j), "", [["a", "b"]]])
def test_unreadable_trace_is_refused(delays):
    """A complex trace raised TypeError, a string one numpy's ValueError (fixed in de0e30c, item 7)."""
    with bounded(), pytest.raises(InvalidArgumentError, match="^delays: "):
        gcsim.straggler_model("trace", delays=delays)


@pytest.mark.parametrize("n", [10**30, 10**12])
@pytest.mark.parametrize("kind", ["bernoulli", "markov"])
def test_huge_probability_models_are_refused_up_front(kind, n):
    """``straggler_model("bernoulli", 10**30, p=0.1)`` raised numpy's "Maximum allowed dimension
    exceeded" (ValueError); at n = 10**12, MemoryError for the 8 TB vector of probabilities."""
    params = {"p": 0.1} if kind == "bernoulli" else {"p_enter": 0.1, "p_leave": 0.5}
    with bounded(), pytest.raises(SizeLimitError) as info:
        gcsim.straggler_model(kind, n, **params)
    assert info.value.requested == n


@pytest.mark.parametrize("p", [{}, [[0.1], [0.1, 0.2]], object()])
def test_unreadable_probabilities_are_refused(p):
    """``straggler_model("bernoulli", 1, p={})`` raised TypeError from ``np.asarray(p, dtype=float)``."""
    with bounded(), pytest.raises(InvalidArgumentError, match=r"^p: must be a probability or one per worker"):
        gcsim.straggler_model("bernoulli", 2, p=p)


ZERO_STRIDE = np.broadcast_to(np.ones((1, 1)), (10**6, 10**6))  # 10^12 logical entries, 8 bytes stored


@pytest.mark.parametrize("factory", [gcsim.encode, gcsim.partial_scheme])
def test_zero_stride_assignment_is_refused_up_front(factory):
    """A float zero-stride 10^6 x 10^6 assignment hit MemoryError in the NaN check before the size check."""
    with bounded(), pytest.raises(SizeLimitError):
        factory(ZERO_STRIDE, 1)


def test_zero_stride_mask_is_refused_up_front(rd):
    """A zero-stride 10^6 x 10^6 mask hit MemoryError in check_mask's 0/1 test (``arr == 0``)."""
    with bounded(), pytest.raises(SizeLimitError):
        gcsim.run_scheme(rd, np.ones((7, 6)), ZERO_STRIDE)


def _cli(argv):
    from gcsim.app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), bounded():
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_load_refusal_goes_to_stderr(tmp_path, monkeypatch):
    """``gcsim load ' '`` printed its refusal on stdout (fixed in de0e30c, item 7)."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = _cli(["load", " "])  # nothing of that name: a usage error since d43bf0d (#34 item 11)
    assert rc == 2 and err.startswith("gcsim: error: ") and "not found" in err and not out


def test_no_command_is_a_usage_error_on_stderr():
    """``gcsim`` alone printed 46 lines of help on stdout, nothing on stderr (fixed under item 7)."""
    rc, out, err = _cli([])
    assert rc == 2 and err.strip() and not out
