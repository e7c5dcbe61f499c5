"""Size limits as one error type, conversions that overflow, exit codes of runtime failures, BLAS policy."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import gcsim
from gcsim._threads import batched_blas, batched_threads
from gcsim._validation import check_finite_array
from gcsim.app import cli
from gcsim.coding.evaluate import optimal_error_all
from gcsim.errors import InvalidArgumentError, SizeLimitError, SolverError


def test_integer_beyond_float_range_is_a_named_error():
    # np.asarray([[10**400]], float) raises a bare OverflowError
    with pytest.raises(InvalidArgumentError, match="^B: cannot be converted to float64"):
        check_finite_array("B", [[10**400]])
    with pytest.raises(InvalidArgumentError, match="scheme.B"):
        gcsim.optimal_error(type("S", (), {"B": [[10**400, 1]], "m": 1})(), [True, True])


def test_pattern_limit_is_one_size_limit_error():
    sch = gcsim.encode(gcsim.bibd(91, 10, 1), 2, "rd")
    with pytest.raises(SizeLimitError) as info:
        optimal_error_all(sch, 20)
    err = info.value
    assert err.argument == "s" and err.limit_name == "MAX_PATTERNS"
    assert err.requested == __import__("math").comb(91, 20) and err.limit == gcsim.limits.MAX_PATTERNS
    assert isinstance(err, ValueError)  # still an InvalidArgumentError / ValueError for callers


def test_dense_limit_is_a_size_limit_error():
    with pytest.raises(SizeLimitError) as info:
        gcsim.srg(10009, 5004, 2501, 2502)
    assert info.value.limit_name == "MAX_DENSE_ENTRIES" and info.value.requested == 10009**2


def test_runtime_failure_exits_1_with_one_line(capsys):
    def fail(args):
        raise SolverError("SCS did not converge")

    code = cli._run(argparse.Namespace(func=fail))
    err = capsys.readouterr().err
    assert code == cli.EXIT_FAILURE
    assert err.strip() == "gcsim: error: failed: SCS did not converge"


def test_run_cerar_huge_d_is_refused_before_allocating():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcsim",
            "cerar",
            "run",
            "--engine",
            "numpy",
            "--workers",
            "4",
            "--c",
            "4",
            "--d",
            str(10**11),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--d:" in proc.stderr and "MAX_DENSE_ENTRIES" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag,value", [("--d", "0"), ("--d", "-4"), ("--workers", "1"), ("--timeout", "nan")])
def test_run_cerar_typed_flags(flag, value):
    argv = ["cerar", "run", "--engine", "numpy", "--workers", "4", "--c", "4", "--d", "8", "--timeout", "60"]
    argv[argv.index(flag) + 1] = value
    proc = subprocess.run([sys.executable, "-m", "gcsim", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and flag in proc.stderr and "Traceback" not in proc.stderr


def test_batched_blas_limits_and_restores(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    if not info:
        pytest.skip("no BLAS library visible to threadpoolctl")
    before = [i["num_threads"] for i in info]
    with batched_blas():
        inside = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert all(t == 1 for t in inside)
    after = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert after == before
    monkeypatch.setenv("GCSIM_BATCHED_BLAS_THREADS", "none")
    assert batched_threads() is None
    monkeypatch.setenv("GCSIM_BATCHED_BLAS_THREADS", "two")
    with pytest.raises(ValueError, match="GCSIM_BATCHED_BLAS_THREADS"):
        batched_threads()


def test_cerar_design_size_is_refused_up_front():
    from gcsim.cerar.factory import design

    with pytest.raises(SizeLimitError, match="^N: .*CERAR design with N = 100000"):
        design(100000, 8, "perturbation")


# ----------------------------------------------------------------------------------------------
# logical sizes (issue #19 item 5): zero-stride views, sparse files and huge n are refused before
# any allocation or read; nothing here allocates the size it asks for
# ----------------------------------------------------------------------------------------------


def _view(shape, dtype=float):
    """A read-only zero-stride view of ``shape``: a few bytes of memory, any logical size."""
    return np.broadcast_to(np.ones((1,) * len(shape), dtype=dtype), shape)


def _refused(call, argument, requested, limit_name="MAX_DENSE_ENTRIES"):
    with pytest.raises(SizeLimitError) as info:
        call()
    err = info.value
    assert err.argument == argument and err.requested == requested and err.limit_name == limit_name, str(err)
    assert f"gcsim.limits.{limit_name}" in str(err) and "raise it" in str(err)
    return err


def test_logical_entries_count_the_shape_not_the_memory():
    from gcsim.limits import array_shape, check_entries, logical_entries

    view = _view((10**9, 7), bool)
    assert view.nbytes == 7 * 10**9 and view.base.nbytes == 1  # numpy reports logical bytes; memory is 1 byte
    assert array_shape(view) == (10**9, 7) and logical_entries(array_shape(view)) == 7 * 10**9
    assert check_entries("x", (4096, 4096), "a matrix") == gcsim.limits.MAX_DENSE_ENTRIES  # the limit itself passes
    _refused(lambda: check_entries("x", (4096, 4097), "a matrix"), "x", 4096 * 4097)


def test_zero_stride_masks_are_refused_before_evaluating():
    from gcsim.coding.evaluate import fixed_decoder_error
    from gcsim.coding.partial import partial_error, partial_scheme

    sch = gcsim.encode(gcsim.bibd(7, 3, 1), 1, "rd")
    masks = _view((10**9, 7), bool)
    _refused(lambda: gcsim.optimal_error(sch, masks), "nonstragglers", 7 * 10**9)
    _refused(lambda: fixed_decoder_error(sch, masks), "nonstragglers", 7 * 10**9)
    from gcsim.combinatorics import baselines

    ps = partial_scheme(baselines.cyclic_repetition(7, 3), 1)
    _refused(lambda: partial_error(ps, masks), "nonstragglers", 7 * 10**9)


def test_zero_stride_assignments_are_refused_before_any_comparison():
    from gcsim.coding.partial import partial_scheme

    A = _view((10**6, 10**6), np.int64)
    _refused(lambda: gcsim.encode(A, 1, "naive"), "assignment", 10**12)
    _refused(lambda: partial_scheme(A, 1), "assignment", 10**12)


def test_zero_stride_gradients_are_refused_before_copying():
    from gcsim.cerar import design, simulate
    from gcsim.executor.arrays import run_scheme

    sch = gcsim.encode(gcsim.bibd(7, 3, 1), 1, "naive")
    mask = np.ones(7, dtype=bool)
    _refused(lambda: run_scheme(sch, _view((7, 10**12)), mask), "gradients", 7 * 10**12)
    _refused(lambda: simulate(design(3, 2, "exact"), _view((3, 10**12))), "gradients", 3 * 10**12)


def test_zero_stride_traces_are_refused_before_copying():
    from gcsim.coding.stragglers import TraceModel

    tall, wide = _view((10**9, 7)), _view((7, 10**9))
    _refused(lambda: gcsim.delay_model("trace", delays=tall), "delays", 7 * 10**9)
    _refused(lambda: gcsim.delay_model("trace", 7, delays=wide), "delays", 7 * 10**9)
    _refused(lambda: TraceModel(wide, s=1), "delays", 7 * 10**9)


def test_delay_models_bound_the_number_of_workers():
    from gcsim.coding.delays import arrival_rule, expected_decode_time

    _refused(lambda: gcsim.delay_model("shifted-exponential", n=10**10, rate=1.0).sample_delays(1), "n", 10**10)
    _refused(lambda: gcsim.delay_model("pareto", 10**8, scale=1.0, shape=2.0), "n", 10**8)
    # the largest allowed n still answers at once: i.i.d. workers are one group (no sort of n rows)
    dm = gcsim.delay_model("shifted-exponential", gcsim.limits.MAX_DENSE_ENTRIES // 64, rate=1.0)
    assert dm._groups()[1].tolist() == [dm.n]
    assert expected_decode_time(dm, arrival_rule("first", s=3)).method == "exact"


def test_quadrature_work_is_bounded_up_front(monkeypatch):
    from gcsim.coding.delays import _quad_terms, arrival_rule, expected_decode_time

    n, s = 10**5, 3
    dm = gcsim.delay_model("shifted-exponential", n, rate=np.linspace(1.0, 2.0, n))
    rule = arrival_rule("first", s=s)
    terms = (n - s) * n + 5000 * n  # n groups of one worker, k = n - s arrivals each
    assert _quad_terms(dm, rule) == terms
    err = _refused(lambda: expected_decode_time(dm, rule, method="quad"), "method", terms, "MAX_QUAD_TERMS")
    assert "monte-carlo" in str(err)
    _refused(lambda: expected_decode_time(dm, rule), "method", terms, "MAX_QUAD_TERMS")  # auto falls to quad
    # a small heterogeneous model passes; the limit is read at call time
    small = gcsim.delay_model("shifted-exponential", 6, rate=[1.0, 1.0, 2.0, 2.0, 3.0, 3.0])
    assert _quad_terms(small, rule) == 3 * (3 * 2) + 3 * 5000
    assert expected_decode_time(small, rule, method="quad").method == "quad"
    monkeypatch.setattr(gcsim.limits, "MAX_QUAD_TERMS", 100)
    _refused(lambda: expected_decode_time(small, rule, method="quad"), "method", 3 * 6 + 15000, "MAX_QUAD_TERMS")


def _sparse_npy(path, shape, descr="<f8", extra=0):
    """A .npy file whose header declares ``shape``, made sparse with truncate (no data written)."""
    from numpy.lib import format as npy

    with open(path, "wb") as fh:
        npy.write_array_header_1_0(fh, {"descr": descr, "fortran_order": False, "shape": shape})
        offset = fh.tell()
    os.truncate(path, offset + math.prod(shape) * np.dtype(descr).itemsize + extra)
    return path


def test_npy_trace_is_refused_from_its_header(tmp_path):
    import time

    from gcsim.coding.delays import load_trace

    big = _sparse_npy(tmp_path / "big.npy", (5, 10**8))  # 4 GB long, no block on disk
    t0 = time.perf_counter()
    _refused(lambda: load_trace(big), "delays", 5 * 10**8)
    assert time.perf_counter() - t0 < 2.0  # the header only (reading 4 GB took 78 s)
    short = _sparse_npy(tmp_path / "short.npy", (3, 4), extra=-8)
    with pytest.raises(InvalidArgumentError, match="truncated: its header declares 224 bytes, the file has 216"):
        load_trace(short)
    with pytest.raises(InvalidArgumentError, match="pickled"):
        load_trace(_sparse_npy(tmp_path / "obj.npy", (3, 4), descr="|O"))
    with pytest.raises(InvalidArgumentError, match="complex128 data; a trace is real numbers"):
        load_trace(_sparse_npy(tmp_path / "c.npy", (3, 4), descr="<c16"))
    (tmp_path / "zeros.npy").write_bytes(b"\x00" * 64)
    with pytest.raises(InvalidArgumentError, match="is not a .npy file"):
        load_trace(tmp_path / "zeros.npy")
    np.save(tmp_path / "ok.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    assert load_trace(tmp_path / "ok.npy").dtype == np.float64


def test_csv_trace_is_refused_from_its_length(tmp_path, monkeypatch):
    from gcsim.coding.delays import load_trace

    path = tmp_path / "t.csv"
    path.write_text("1,2,3\n4,5,6\n")
    assert load_trace(path).shape == (2, 3)
    monkeypatch.setattr(gcsim.limits, "MAX_DENSE_ENTRIES", 0)  # 12 bytes > 32 x 0
    _refused(lambda: load_trace(path), "delays", 12)


def test_cli_sparse_trace_fails_in_one_line(tmp_path):
    big = _sparse_npy(tmp_path / "big.npy", (5, 10**8))
    proc = subprocess.run(
        [sys.executable, "-m", "gcsim", "decode-time", "--delays", f"trace:{big}", "--rule", "first:s=1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "--delays:" in proc.stderr and "MAX_DENSE_ENTRIES" in proc.stderr


def test_executor_sizes_are_refused_before_ranks_start(monkeypatch):
    from gcsim.executor import experiments

    def no_launch(*args, **kwargs):  # pragma: no cover - reached only on the defect
        raise AssertionError("ranks were started")

    monkeypatch.setattr(experiments, "launch", no_launch)
    sch = gcsim.encode(gcsim.bibd(7, 3, 1), 1, "rd")
    _refused(lambda: experiments.run_parameter_server(sch, d=10**12), "d", 7 * 4 * 10**12)
    _refused(lambda: experiments.run_collectives(4, 10**12), "d", 4 * 10**12)
    code = cli.main(["gc", "run", "--design", "bibd:7,3,1", "--d", str(10**12)])
    assert code == 2
