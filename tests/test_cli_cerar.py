"""CLI: gcsim cerar design / simulate / rates / optimize (JSON output, exports, errors)."""

import json
from fractions import Fraction

import numpy as np
import pytest

from executor_tolerances import cerar_output_tol, relative_tol, sum_tol
from gcsim.app.cli import main
from gcsim.cerar.factory import design
from gcsim.cerar.metrics import CERT_RTOL
from tolerances import lstsq_tol


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def exact_ring_rel_tol(N, c, d, seed, gradient_dtype, wire_dtype):
    """Bound on the reported ``max_rel_error`` of the exact design ``(N, c)`` on the CLI's seeded gradients.

    The ring's output is within :func:`executor_tolerances.cerar_output_tol` of the exact sum
    (``c + 2L + 2`` roundings on the encoded, relayed and decoded terms, Higham Lemma 3.3, in units of the
    wire dtype), the float64 reference sum within :func:`~executor_tolerances.sum_tol`;
    :func:`~executor_tolerances.relative_tol` turns that into a bound on ``‖ĝ_i − Σ g‖ / ‖Σ g‖``.
    The gradients are recomputed here as the CLI draws them.
    """
    des = design(N, c, "exact")
    g = np.random.default_rng(seed).standard_normal((N, d)).astype(gradient_dtype).astype(np.float64)
    tol = cerar_output_tol(des.encoders, des.decoders, g, wire_dtype).reshape(N, -1)[:, :d].max(axis=0)
    return relative_tol(tol + sum_tol(g), g.sum(axis=0))


def kappa_rtol(X):
    """Relative rounding of ``κ = σ_1/σ_r`` measured by an SVD: each singular value moves by at most
    ``c p q u σ_1`` (backward stability + Weyl; LAPACK §4.9), so κ by ``2 c p q u (1 + κ)`` relative."""
    p, q = np.shape(X)[-2:]
    s = np.linalg.svd(X, compute_uv=False)
    return 2 * lstsq_tol(1.0 + float(np.max(s[..., 0] / s[..., -1])), p, q, 1.0)


def test_rates_match_formulas(capsys):
    code, out, _ = run(capsys, "cerar", "rates", "--workers", "4", "--c", "8", "--json")
    r = json.loads(out)
    assert code == 0
    assert r["rounds"] == 8 + 4 - 2
    # 1 + 2/8 = 5/4 and 2·3/4 = 3/2: small dyadic rationals, every float operation on them is exact
    assert Fraction(r["rate"]) == Fraction(8 + 4 - 2, 8)
    assert Fraction(r["ring_rate"]) == Fraction(2 * 3, 4)


def test_simulate_bytes_and_error(capsys):
    code, out, _ = run(
        capsys, "cerar", "simulate", "--workers", "3", "--c", "3", "--method", "exact", "--d", "100", "--json"
    )
    p = json.loads(out)
    assert code == 0
    # packet = ceil(100/3) = 34 float64 scalars, L = 4 rounds
    assert p["bytes_sent"] == [4 * 34 * 8] * 3
    # simulate draws g from --seed (default 0) in float64 and runs the ring in float64
    assert p["max_rel_error"] <= exact_ring_rel_tol(3, 3, 100, 0, np.float64, np.float64)


def test_design_export_and_load(capsys, tmp_path):
    code, out, _ = run(
        capsys, "cerar", "design", "--workers", "3", "--c", "5", "--eps", "0.05", "--out", str(tmp_path), "--json"
    )
    assert code == 0
    path = json.loads(out)["exported"]
    code, out, _ = run(capsys, "load", path, "--json")
    assert code == 0 and json.loads(out)["kind"] == "cerar"
    code, out, _ = run(capsys, "cerar", "simulate", "--design", path, "--d", "50", "--json")
    assert code == 0 and json.loads(out)["c"] == 5


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["cerar", "design", "--workers", "1", "--c", "3"], "workers"),
        (["cerar", "design", "--workers", "3", "--c", "0"], "c"),
        (["cerar", "design", "--workers", "3", "--c", "5", "--eps", "-1"], "eps"),
        (["cerar", "design", "--workers", "4", "--c", "8", "--method", "exact"], "c"),
    ],
)
def test_bad_input_is_one_line_error(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


def test_two_word_spelling_cerar_run_numpy_engine(capsys):
    code, out, _ = run(capsys, "cerar", "run", "--engine", "numpy", "--workers", "3", "--c", "3", "--d", "30", "--json")
    assert code == 0
    p = json.loads(out)
    # exact design (c <= N): L = 4 rounds of ceil(30/3) = 10 float32 scalars
    assert p["bytes_sent"] == [4 * 10 * 4] * 3 and p["itemsize"] == 4
    # float32 gradients (seed 0) on a float32 wire, against their float64 sum
    assert p["max_rel_error"] <= exact_ring_rel_tol(3, 3, 30, 0, np.float32, np.float32)


def test_gc_run_help_is_reachable(capsys):
    code, out, _ = run(capsys, "gc", "run", "--help")
    assert code == 0 and "--stragglers" in out


def test_optimize_respects_kappa_cap_and_exports(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "cerar",
        "optimize",
        "--workers",
        "3",
        "--c",
        "4",
        "--kappa",
        "5",
        "--max-iter",
        "3",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert code == 0
    p = json.loads(out)
    assert p["method"] == "optimized"
    assert p["frobenius_error"] > 0  # c > N: never exact (exactness theorem)
    # an independent SVD check of the exported arrays.  The optimizer certifies κ <= cap (1 + CERT_RTOL)
    # by its own SVD; the true κ and any other SVD measurement (the summary's, this one) differ from
    # that by kappa_rtol each
    arrays = np.load(p["exported"][:-5] + ".npz")
    for key in ("encoders", "decoders"):
        X = arrays[key]
        cap = 5 * (1 + CERT_RTOL) * (1 + kappa_rtol(X)) ** 2
        s = np.linalg.svd(X, compute_uv=False)
        assert np.all(s[:, 0] / s[:, -1] <= cap)
        assert p[f"kappa_{key}_max"] <= cap


def test_export_and_load_in_fresh_processes(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcsim",
            "cerar",
            "design",
            "--workers",
            "4",
            "--c",
            "8",
            "--eps",
            "0.02",
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    path = json.loads(r.stdout)["exported"]
    r = subprocess.run(
        [sys.executable, "-m", "gcsim", "load", path, "--json"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and json.loads(r.stdout)["verified"] is True
    npz = path[:-5] + ".npz"
    with open(npz, "rb+") as fh:
        fh.truncate(100)
    r = subprocess.run([sys.executable, "-m", "gcsim", "load", path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "refused" in (r.stdout + r.stderr) and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- issue #9 §5: sizes, flags, dtype range


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["cerar", "simulate", "--d", "-5"], ["--d", ">= 1", "-5"]),
        (["cerar", "simulate", "--d", "0"], ["--d", ">= 1"]),
        (["cerar", "simulate", "--d", "100000000000"], ["--d", "400,000,000,000", "MAX_DENSE_ENTRIES"]),
        (["cerar", "design", "--workers", "100000", "--c", "8"], ["--workers", "MAX_DENSE_ENTRIES"]),
        (["cerar", "design", "--eps", "nan"], ["--eps", "finite"]),
        (["cerar", "optimize", "--kappa", "inf"], ["--kappa", "finite"]),
        (["cerar", "design", "--kappa", "0.5"], ["--kappa", ">= 1"]),
        (["cerar", "optimize", "--max-iter", "0"], ["--max-iter"]),
    ],
)
def test_cerar_bad_sizes_and_numbers_name_the_flag(capsys, argv, needles):
    import signal

    def on_alarm(signum, frame):
        raise TimeoutError("the command ran for more than 60 s")

    has_alarm = hasattr(signal, "setitimer")
    if has_alarm:  # the N = 100000 design used to run for minutes: fail, do not hang
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, 60)
    try:
        code, _, err = run(capsys, *argv)
    finally:
        if has_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_cerar_coefficients_beyond_the_dtype_range_are_refused(capsys):
    """Decoders of a perturbation design with eps = 1e30 overflow bfloat16 (max 3.39e38): no NaN result."""
    code, out, err = run(
        capsys, "cerar", "simulate", "--method", "perturbation", "--eps", "1e30", "--dtype", "bfloat16", "--d", "64"
    )
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert "--dtype bfloat16" in last and "3.39e+38" in last and "Traceback" not in err


def test_cerar_simulate_error_is_finite_and_exact_design_exact(capsys):
    """Within range the reported error is a number (never NaN); the exact design (c <= N) is exact up
    to rounding: the ring's rounding bound (exact_ring_rel_tol, Higham Lemma 3.3)."""
    code, out, _ = run(
        capsys, "cerar", "simulate", "--workers", "3", "--c", "3", "--method", "exact", "--d", "60", "--json"
    )
    p = json.loads(out)
    assert code == 0 and np.isfinite(p["max_rel_error"])
    assert p["max_rel_error"] <= exact_ring_rel_tol(3, 3, 60, 0, np.float64, np.float64)


def test_pareto_table_explains_its_empty_cells(capsys):
    """At kappa_cap 5 no perturbation design of (3, 4) is that well conditioned: the cell is '-' and explained."""
    code, out, _ = run(capsys, "cerar", "pareto", "--workers", "3", "--c", "4", "--kappas", "5,10", "--max-iter", "2")
    assert code == 0
    assert "NaN" not in out and "nan" not in out
    assert "no perturbation design of the ε grid is that well conditioned" in out and "at kappa_cap 5 " in out, out
    code, out, _ = run(
        capsys, "cerar", "pareto", "--workers", "3", "--c", "4", "--kappas", "5", "--max-iter", "2", "--json"
    )
    rows = [r for r in json.loads(out)["rows"] if r["family"] == "optimized"]
    assert code == 0 and len(rows) == 1 and rows[0]["pert_frobenius_at_cap"] in (None, "nan")  # NaN in JSON


def test_the_simulate_example_that_fails_says_so(capsys):
    code, out, _ = run(capsys, "cerar", "simulate", "--help")
    assert code == 0
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if "--method vandermonde --d 4096 --dtype float32" in line)
    assert "fails on purpose" in lines[i + 1], lines[i : i + 2]
    # and it does fail: float32 Vandermonde encoders for c = 8 > N = 4 lose the sum
    code, out, _ = run(
        capsys,
        "cerar",
        "simulate",
        "--workers",
        "4",
        "--c",
        "8",
        "--method",
        "vandermonde",
        "--d",
        "4096",
        "--dtype",
        "float32",
        "--json",
    )
    assert code == 0 and json.loads(out)["max_rel_error"] > 1, out
