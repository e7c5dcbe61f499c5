"""Test-session settings shared by every test module."""
import os

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

# CI machines are small (2 cores): no per-example deadline, modest example counts.
settings.register_profile("gcsim", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gcsim")


@pytest.fixture(scope="session")
def repo_root():
    from pathlib import Path
    return Path(__file__).resolve().parents[1]
