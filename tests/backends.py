"""Array backends of the executor tests: NumPy always, CuPy where a GPU is present (marked ``gpu``)."""

from __future__ import annotations

import pytest


def cupy_usable() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


NEEDS_GPU = [pytest.mark.gpu, pytest.mark.skipif(not cupy_usable(), reason="CuPy/GPU not available")]
BACKENDS = ["numpy", pytest.param("cupy", marks=NEEDS_GPU)]
