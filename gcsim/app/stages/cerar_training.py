"""The ``cerar-training`` stage of ``gcsim reproduce --paper cerar``: DDP training over emulated slow links.

Root only (network namespaces, ``tc`` and a packet delayer, :mod:`gcsim.executor.netem`); refused
with the reason otherwise.  Not a demo stage.  It runs the link experiment of
docs/results/cerar_training.md ("Links with latency"): the claim "CERAR trains to the target sooner
than the ring" is judged by an interval over seeds, never by one run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import GcsimError


class NetemUnavailableError(GcsimError, RuntimeError):
    """The stage needs emulated links (root, ``ip``, ``tc``, network namespaces) and this machine has none."""


def _claims_text(claims: list[dict[str, Any]]) -> str:
    """One line per claims row: link, delay, ring / variant with its interval over seeds, the verdict."""

    def ratio(c: dict[str, Any]) -> str:
        if c["ring_over_variant"] is None:
            return "no ratio"
        return f"ring/variant {c['ring_over_variant']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}] ({c['measure']})"

    return "; ".join(
        f"{c['variant']} at {c['link']} + {c['delay']}, {c['parameters']:,} parameters, {c['seeds']} seeds: "
        f"{ratio(c)}: {c['verdict']}"
        for c in claims
    )


def cerar_training_stage(out: Path, full: bool, seed: int, progress: bool) -> dict[str, Any]:
    """The link experiment of docs/results/cerar_training.md and its claims rows (``seed`` unused: the plan's seeds).

    Quick scale: :data:`gcsim.learning.cerar_links.STAGE_LINKS` (100 Mbit/s with 1 ms and 10 ms of
    delay, ring against the κ-optimized c = 16 design, 3 seeds); ``full``: the whole
    :data:`gcsim.learning.cerar_links.LINKS`.  ``claims.csv`` holds one row per model, link, delay
    and variant (:func:`gcsim.learning.cerar_links.link_claims`): the claim holds only where the
    interval over seeds says so.
    """
    import pandas as pd

    from ...executor.netem import netem_available
    from ...io.manifest import atomic_write_text
    from ...learning.cerar_links import LINKS, STAGE_LINKS, link_claims, links_experiment
    from ..paths import repo_designs_dir

    ok, why = netem_available()
    if not ok:
        raise NetemUnavailableError(
            f"the cerar-training stage emulates 100 Mbit/s links with latency and cannot run here: {why}; "
            "run it as root (sudo .venv/bin/gcsim reproduce --paper cerar)"
        )
    cache = repo_designs_dir().parent / "docs" / "results" / "cerar_training" / "designs"
    res = links_experiment(
        out,
        plan=LINKS if full else STAGE_LINKS,
        design_cache=cache if cache.is_dir() else out / "designs",
        manifest_name="experiment_manifest.json",  # manifest.json is the stage's own record
        progress=progress,
    )
    claims = link_claims(res["summary"])
    atomic_write_text(out / "claims.csv", pd.DataFrame(claims).to_csv(index=False))
    files = res["manifest"]["files"] + ["claims.csv", "experiment_manifest.json"]
    figures = {
        "figure.png": "DDP over emulated links with latency: ring step time / CERAR step time, mean and 95 % "
        "interval over seeds, per model, link and delay"
    }
    return {"ok": True, "files": files, "figures": figures, "text": _claims_text(claims)}
