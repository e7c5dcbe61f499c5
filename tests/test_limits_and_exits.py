"""Size limits as one error type, conversions that overflow, exit codes of runtime failures, BLAS policy."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

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
    assert err.strip() == "gcsim: failed: SCS did not converge"


def test_run_cerar_huge_d_is_refused_before_allocating():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcsim",
            "run-cerar",
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
    argv = ["run-cerar", "--engine", "numpy", "--workers", "4", "--c", "4", "--d", "8", "--timeout", "60"]
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
