"""The ``cerar-training`` stage of ``gcsim reproduce --paper cerar``: DDP training over emulated slow links.

Root only (network namespaces and ``tc``, :mod:`gcsim.executor.netem`); refused with the reason
otherwise.  Not a demo stage (about 11 minutes at the quick scale: 646 s in docs/results/cerar_training.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import GcsimError


class NetemUnavailableError(GcsimError, RuntimeError):
    """The stage needs emulated links (root, ``ip``, ``tc``, network namespaces) and this machine has none."""


def cerar_training_stage(out: Path, full: bool, seed: int, progress: bool) -> dict[str, Any]:
    """The training experiment of docs/results/cerar_training.md (``seed`` is the experiment's own, 0)."""
    from ...executor.netem import netem_available
    from ...learning.cerar_training import cerar_training_experiment, key_cell
    from ..paths import repo_designs_dir

    ok, why = netem_available()
    if not ok:
        raise NetemUnavailableError(
            f"the cerar-training stage emulates 20 Mbit/s .. 1 Gbit/s links and cannot run here: {why}; "
            "run it as root (sudo .venv/bin/gcsim reproduce --paper cerar)"
        )
    cache = repo_designs_dir().parent / "docs" / "results" / "cerar_training" / "designs"
    res = cerar_training_experiment(
        out,
        full=full,
        design_cache=cache if cache.is_dir() else out / "designs",
        manifest_name="experiment_manifest.json",  # manifest.json is the stage's own record
        progress=progress,
    )
    key = key_cell(res["rows"])

    def num(x: Any, fmt: str, unit: str) -> str:
        return "none (not reached)" if x is None else format(x, fmt) + unit

    text = (
        f"at 100 Mbit/s: ring {num(key['ring_seconds'], '.2f', ' s')}, kappa-optimized c = 16 "
        f"{num(key['key_seconds'], '.2f', ' s')} to the target (medians); final accuracy ring - design "
        f"{num(key['accuracy_gap_points'], '+.2f', ' points')}; holds: {key['holds']}"
    )
    files = ["results.csv", "results.json", "curves.csv", "designs.json", "figure.png", "experiment_manifest.json"]
    figures = {
        "figure.png": "DDP training over emulated links: test accuracy vs cumulative step time, ring all-reduce "
        "against the CERAR designs, one panel per link speed"
    }
    return {"ok": True, "files": files, "figures": figures, "text": text}
