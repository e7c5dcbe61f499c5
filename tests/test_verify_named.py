"""The bound-verification engine finds no violation on the named instances (SPEC §4, issue 3)."""
import pytest

import gcsim
from gcsim.coding.verify import verify_bounds


@pytest.mark.parametrize("name,method,opts,bounds", [
    ("pg2_9", "rd", {"eps": 0.0}, ["rank_lower", "rd_upper", "trivial_upper"]),
    ("coset_27_2_5", "rd", {"eps": 0.1}, ["rank_lower", "rd_upper"]),
    ("biregular_40_20_3_6", "ns", {"dist": "gaussian"}, ["rank_lower", "reference_decoder_upper"]),
])
def test_no_violation_on_named_instances(name, method, opts, bounds):
    from gcsim.io.named import build_named
    obj = build_named(name)
    scheme = gcsim.encode(obj, 2, method, seed=0, **opts)
    model = gcsim.straggler_model("fixed", scheme.n, s=10 if scheme.n > 40 else 4)
    report = verify_bounds(scheme, model, bounds, samples=60, seed=1, draws=16, expectation_patterns=16)
    assert report.ok, report.summary()
    assert not report.violations
