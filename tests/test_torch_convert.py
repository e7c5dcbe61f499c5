"""``to_torch()`` of Scheme, CerarDesign and DecoderTable: the NumPy arrays as torch tensors.

Values are compared with the objects' own arrays cast by NumPy (float32 and float16 rounding
to nearest are the same in both libraries), the patterns with :meth:`DecoderTable.pattern`
row by row; the dtype and device asked for are the ones returned.  A missing torch names
the extra to install.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from gcsim.cerar.factory import design
from gcsim.coding.decoder_table import decoder_table
from gcsim.coding.schemes import encode
from gcsim.combinatorics.bibd import bibd
from gcsim.errors import InvalidArgumentError, MissingDependencyError

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() else [])


def _objects():
    sch = encode(bibd(7, 3, 1), 2, "rd", seed=0)
    return {
        "scheme": (sch, {"B": sch.B, "decoder": sch.decoder}),
        "cerar": (design(3, 5, "perturbation", eps=0.01), None),
        "table": (decoder_table(sch, s_max=2), None),
    }


def _expected(name, obj):
    if name == "scheme":
        arrays = {"B": obj.B}
        if obj.decoder is not None:
            arrays["decoder"] = obj.decoder
        return arrays
    if name == "cerar":
        return {"encoders": obj.encoders, "decoders": obj.decoders}
    patterns = np.array([obj.pattern(r) for r in range(len(obj))])  # the index, row by row
    return {"decoders": obj.decoders, "patterns": patterns, "errors": obj.errors}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [None, "float32", torch.float16, "float64"])
@pytest.mark.parametrize("name", ["scheme", "cerar", "table"])
def test_values_dtype_and_device(name, dtype, device):
    obj, _ = _objects()[name]
    tensors = obj.to_torch(dtype=dtype, device=device)
    expected = _expected(name, obj)
    assert sorted(tensors) == sorted(expected)
    np_dtype = {None: np.float64, "float32": np.float32, torch.float16: np.float16, "float64": np.float64}[dtype]
    t_dtype = {None: torch.float64, "float32": torch.float32, torch.float16: torch.float16, "float64": torch.float64}
    for key, want in expected.items():
        t = tensors[key]
        assert t.device == torch.device(device)
        assert tuple(t.shape) == want.shape
        if want.dtype == bool:
            assert t.dtype == torch.bool
            np.testing.assert_array_equal(t.cpu().numpy(), want)
        else:
            assert t.dtype == t_dtype[dtype]
            np.testing.assert_array_equal(t.cpu().numpy(), want.astype(np_dtype))


def test_scheme_has_a_decoder_and_the_table_an_index():
    objs = _objects()
    sch = objs["scheme"][0]
    assert sch.decoder is not None and set(sch.to_torch()) == {"B", "decoder"}
    table = objs["table"][0]
    t = table.to_torch()
    # the index: every row's pattern maps back to that row, and its decoder is the table's
    rows = table.rows(t["patterns"].numpy())
    np.testing.assert_array_equal(rows, np.arange(len(table)))
    mask = np.ones(table.n, bool)
    mask[[1, 4]] = False
    r = table.row(mask)
    np.testing.assert_array_equal(t["decoders"][r].numpy(), table.decoder(mask))


def test_tensors_are_copies():
    des = design(3, 3, "exact")
    t = des.to_torch()
    t["encoders"].zero_()
    assert np.abs(des.encoders).sum() > 0  # the design is untouched
    assert not des.encoders.flags.writeable


@pytest.mark.parametrize("bad", ["int32", torch.int64, "float", 3])
def test_bad_dtype(bad):
    with pytest.raises(InvalidArgumentError, match="dtype"):
        design(3, 3, "exact").to_torch(dtype=bad)


def test_bad_device():
    with pytest.raises(InvalidArgumentError, match="device"):
        design(3, 3, "exact").to_torch(device="no-such-device")


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    for obj in (design(3, 3, "exact"), _objects()["scheme"][0]):
        with pytest.raises(MissingDependencyError, match=r"to_torch needs torch: pip install 'gcsim\[torch\]'"):
            obj.to_torch()
