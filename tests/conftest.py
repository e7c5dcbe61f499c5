"""Test-session settings shared by every test module."""

import os
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

#: The Fano plane, the 2-(7, 3, 1) design every small test uses: line j is the translate
#: j + {0, 1, 3} (mod 7) of the difference set {0, 1, 3}, and point i lies on line j iff
#: (i - j) mod 7 ∈ {0, 1, 3}.  Typed here, not built by gcsim, so tests of gcsim's
#: constructions compare against an independent definition.  Import it: ``from conftest import FANO``.
FANO_LINES = tuple((j, (j + 1) % 7, (j + 3) % 7) for j in range(7))
FANO = np.zeros((7, 7), dtype=np.int64)
for _j, _line in enumerate(FANO_LINES):
    FANO[list(_line), _j] = 1
FANO.setflags(write=False)

# CI machines are small (2 cores): no per-example deadline, modest example counts.
settings.register_profile("gcsim", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gcsim")


@pytest.fixture(scope="session")
def repo_root():
    return Path(__file__).resolve().parents[1]


@pytest.fixture
def fano() -> np.ndarray:
    """The Fano plane's 7 x 7 assignment (points x lines), see :data:`FANO`."""
    return FANO
