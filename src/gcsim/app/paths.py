"""Where the application finds the committed catalogue."""

from __future__ import annotations

from pathlib import Path

__all__ = ["repo_designs_dir"]


def repo_designs_dir() -> Path:
    """The committed ``designs/`` catalogue of the source checkout (falls back to ./designs)."""
    here = Path(__file__).resolve().parents[3] / "designs"
    return here if here.is_dir() else Path("designs")
