"""Every Python block of the guides and the README runs, in order, as one script per file.

A block whose first line is ``# not run: <reason>`` is skipped (e.g. one that needs a
torch.distributed process group); the reason is required.  Blocks run in a fresh process in a
temporary folder, so a guide can neither depend on nor leave files in the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs" / "guides").glob("*.md")) + [ROOT / "README.md"]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[str]:
    blocks = []
    for src in _BLOCK.findall(path.read_text()):
        first = src.lstrip().splitlines()[0] if src.strip() else ""
        if first.startswith("# not run"):
            assert re.match(r"# not run: \S", first), f"{path.name}: '# not run' needs a reason"
            continue
        blocks.append(src)
    return blocks


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_guide_code_blocks_run(path, tmp_path):
    script = tmp_path / f"{path.stem}.py"
    script.write_text("\n\n".join(python_blocks(path)))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{path.name}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
