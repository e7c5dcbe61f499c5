"""``gcsim decode-time`` and ``gcsim decoder-table`` (theory §47), checked against direct computations."""

import json
from fractions import Fraction

import numpy as np
import pytest

from exact_lstsq import checked_lstsq_residual
from executor_tolerances import lsq_err_tol
from gcsim.app.cli import main
from gcsim.coding.decoder_table import load_decoder_table


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_time_shifted_exponential_first_is_renyi(capsys):
    # i.i.d. shift + Exp(rate): E[X_(k)] = shift + (H_n - H_(n-k)) / rate, summed here in exact rationals
    code, out, _ = run(
        capsys, "decode-time", "--workers", "13", "--delays", "shifted-exponential:shift=1,rate=2",
        "--rule", "first:s=3", "--json",
    )  # fmt: skip
    assert code == 0
    payload = json.loads(out)
    k = 13 - 3
    expected = 1 + float(sum(Fraction(1, i) for i in range(13 - k + 1, 14)) / 2)
    assert payload["method"] == "exact"
    assert payload["mean"] == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_decode_time_of_a_trace_is_its_average(capsys, tmp_path, suffix):
    trace = np.random.default_rng(1).exponential(size=(5, 30)) + 0.5  # workers x iterations
    path = tmp_path / f"trace{suffix}"
    if suffix == ".npy":
        np.save(path, trace)
    else:
        np.savetxt(path, trace, delimiter=",", fmt="%.17g")
    code, out, _ = run(capsys, "decode-time", "--delays", f"trace:{path}", "--rule", "first:s=2", "--json")
    assert code == 0
    # the third-fastest arrival of each iteration, averaged over the iterations
    assert json.loads(out)["mean"] == pytest.approx(np.sort(trace, axis=0)[2].mean(), rel=1e-14)


def test_decode_time_text_and_infinite_mean(capsys):
    code, out, _ = run(
        capsys, "decode-time", "--workers", "4", "--delays", "pareto:scale=1,shape=0.5", "--rule", "first:s=0"
    )
    assert code == 0
    assert "E[decode time] = inf" in out and "infinite" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--workers", "10", "--delays", "pareto:scale=1", "--rule", "first:s=0"], "--delays: shape: kind 'pareto'"),
        (["--workers", "10", "--delays", "pareto:scale=1,shape=2", "--rule", "first:s=11"], "--rule: s: must be <="),
        (["--workers", "10", "--delays", "weibull:scale=1", "--rule", "first:s=1"], "--delays: kind: must be one of"),
        (
            ["--workers", "10", "--delays", "pareto:scale=x", "--rule", "first:s=1"],
            "--delays: scale='x' is not a number",
        ),
        (["--workers", "10", "--delays", "pareto:scale", "--rule", "first:s=1"], "--delays: expected key=value"),
        (["--delays", "pareto:scale=1,shape=2", "--rule", "first:s=1"], "--workers: needed"),
        (["--delays", "trace:/no/such.npy", "--rule", "first:s=1"], "--delays: no such file"),
        (["--workers", "4", "--delays", "pareto:scale=1,shape=2", "--rule", "soon:s=1"], "--rule: rule: must be one"),
    ],
)
def test_decode_time_errors_name_the_flag(capsys, argv, message):
    code, _, err = run(capsys, "decode-time", *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_decoder_table_writes_a_bundle_that_loads(capsys, tmp_path):
    argv = ["decoder-table", "--design", "bibd:13,4,1", "--m", "2", "--s-max", "2", "--out", str(tmp_path), "--json"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    payload = json.loads(out)
    assert payload["patterns"] == 1 + 13 + 78
    table = load_decoder_table(tmp_path / "decoders_s2")
    # independent check of one row: the optimal error of the worst pattern (lstsq at full column
    # rank, exact rationals where B_F is rank-deficient: tests/exact_lstsq.py); the table's SVD
    # route and the reference each within the least-squares residual bound (κ(B_F), Higham Thm 20.3)
    r = int(np.argmax(table.errors))
    mask = table.pattern(r)
    B, T = table.scheme.B, table.scheme.target()
    want = checked_lstsq_residual(B[:, mask], T)
    assert abs(payload["max_error"] - want) <= 2 * lsq_err_tol(B[:, mask], 2)
    code, _, err = run(capsys, *argv)  # exists: refused, names --force
    assert code == 2 and "--force" in err
    assert run(capsys, *argv, "--force")[0] == 0
