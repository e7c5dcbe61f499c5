"""Every size limit lives in :mod:`gcsim.limits` (review leftovers, item 1).

A refusal names a limit of ``gcsim.limits.DEFAULTS`` -- so ``GCSIM_<NAME>`` and ``gcsim --limit
NAME=VALUE`` raise it -- and says where to raise it.  The CERAR storage / exact limits, the MILP's
and the convex encoders' worker ceilings were module constants of their own modules
(``gcsim.cerar.storage.MAX_STORAGE_WORK`` ...), out of reach of both.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gcsim import limits
from gcsim.app.cli import _limit_hint, main
from gcsim.errors import SizeLimitError

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gcsim"
#: Module-level MAX_* constants outside gcsim.limits that are not size limits of a computation.
NOT_SIZE_LIMITS = {
    ("gcsim/io/bundle.py", "MAX_MANIFEST_BYTES"),  # a sanity bound on a JSON manifest read from disk
    ("gcsim/io/checkpoint.py", "MAX_CHECKPOINT_TASK_BYTES"),  # a checkpoint record's bound (a file guard)
    ("gcsim/learning/mnist_full.py", "MAX_DOWNLOAD_BYTES"),  # a download's sanity bound (a file guard)
    ("gcsim/combinatorics/srg_distance_union.py", "MAX_DIAMETER"),  # how far a search looks, not a refusal
    ("gcsim/coding/sparse_evaluator.py", "MAX_ITERATIONS"),  # CG steps before a pattern falls back, refuses nothing
    ("gcsim/coding/quantizers/_registry.py", "MAX_BITS"),  # the quantizer's domain (b <= 32 bits), not a size
    ("gcsim/_html.py", "MAX_CELLS"),  # display truncation
    ("gcsim/_html.py", "MAX_TEXT"),
    ("gcsim/_html.py", "MAX_ROWS"),
}
CHECKERS = {"SizeLimitError", "check_entries", "check_count", "check_work", "check_npy_file"}


def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))]


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def test_every_refusal_names_a_limit_of_gcsim_limits():
    named = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node) in CHECKERS:
                for kw in node.keywords:
                    if kw.arg == "limit_name" and isinstance(kw.value, ast.Constant):
                        named.append((path, node.lineno, kw.value.value))
    assert len(named) >= 8, named  # the scan sees the refusals
    stray = [n for n in named if n[2] not in limits.DEFAULTS]
    assert not stray, f"limits outside gcsim.limits.DEFAULTS: {stray}"


def test_no_module_level_limit_constant_outside_gcsim_limits():
    found = []
    for path, tree in _sources():
        if path == "gcsim/limits.py":
            continue
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for t in targets:
                if (
                    isinstance(t, ast.Name)
                    and t.id.startswith("MAX_")  # public: a private _MAX_ steers an algorithm, refuses nothing
                    and (path, t.id) not in NOT_SIZE_LIMITS
                ):
                    found.append((path, t.id))
    assert not found, f"move these into gcsim.limits.DEFAULTS (or justify them in NOT_SIZE_LIMITS): {found}"


def test_every_limit_is_documented_and_offered_by_the_cli(capsys):
    doc = limits.__doc__ or ""
    guide = (ROOT / "docs" / "guides" / "cli.md").read_text(encoding="utf-8")
    assert main(["--help"]) == 0
    helptext = " ".join(capsys.readouterr().out.split())
    for name, default in limits.DEFAULTS.items():
        assert f"``{name} = " in doc, name
        assert f"`{name}`" in guide, name
        assert name in helptext, name
        assert getattr(limits, name) == default or f"GCSIM_{name}" in os.environ


def _refusal(call) -> SizeLimitError:
    with pytest.raises(SizeLimitError) as info:
        call()
    return info.value


@pytest.mark.parametrize(
    "name", ["MAX_STORAGE_WORK", "MAX_EXACT_WORK", "MAX_DPS", "MAX_MILP_WORKERS", "MAX_SDP_WORKERS"]
)
def test_each_moved_limit_is_read_from_gcsim_limits_at_call_time(monkeypatch, name):
    from gcsim.cerar import design
    from gcsim.cerar.exact import vandermonde_exact
    from gcsim.cerar.storage import storage_lower_bound
    from gcsim.coding import encode
    from gcsim.coding.encoders.classic import cyclic_repetition_assignment
    from gcsim.coding.encoders.slem_circulant import optimize_circulant
    from gcsim.coding.milp import fixed_decoder_worst_case

    calls = {
        "MAX_STORAGE_WORK": (lambda: storage_lower_bound(design(3, 2, "exact")), 3 * 4 * 2 * 3 * 5),
        "MAX_EXACT_WORK": (lambda: vandermonde_exact(4, 8, 1e-3), 4 * 8**3),
        "MAX_DPS": (lambda: vandermonde_exact(4, 8, 1e-3, dps=60), 60),
        "MAX_MILP_WORKERS": (
            lambda: fixed_decoder_worst_case(encode(cyclic_repetition_assignment(6, 1), 1, "expander"), 2),
            6,
        ),
        "MAX_SDP_WORKERS": (lambda: optimize_circulant(7, [0, 1, 3]), 7),
    }
    call, requested = calls[name]
    monkeypatch.setattr(limits, name, requested - 1)
    exc = _refusal(call)
    assert (exc.limit_name, exc.limit, exc.requested) == (name, requested - 1, requested)
    assert f"gcsim.limits.{name}; raise it there" in str(exc), str(exc)
    assert f"gcsim --limit {name}=N ... or GCSIM_{name}=N" in _limit_hint(str(exc))
    monkeypatch.setattr(limits, name, requested)
    call()  # at the limit: runs


def test_the_environment_sets_a_moved_limit():
    code = (
        "from gcsim.cerar.exact import vandermonde_exact\n"
        "from gcsim.errors import SizeLimitError\n"
        "try:\n    vandermonde_exact(4, 8, 1e-3)\nexcept SizeLimitError as e:\n    print(e.limit_name, e.limit)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GCSIM_MAX_")} | {"GCSIM_MAX_EXACT_WORK": "2047"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0 and run.stdout.split() == ["MAX_EXACT_WORK", "2047"], run


def test_the_limit_flag_raises_a_moved_limit(capsys):
    argv = ["error", "--design", "petersen", "--method", "fastest-mixing", "--m", "1", "--json"]
    assert main(["--limit", "MAX_SDP_WORKERS=9", *argv]) == 2
    err = capsys.readouterr().err
    assert "10 workers, over gcsim's limit of 9 workers (gcsim.limits.MAX_SDP_WORKERS" in err, err
    assert "raise it: gcsim --limit MAX_SDP_WORKERS=N ... or GCSIM_MAX_SDP_WORKERS=N" in err, err
    assert main(["--limit", "sdp_workers=10", *argv]) == 0
    assert np.isfinite(json.loads(capsys.readouterr().out)["mean"])
