#!/usr/bin/env bash
# The acceptance check of the wheel (issue #12): in a fresh venv (no system site-packages),
# `pip install gcsim-*.whl` with the core dependencies only builds and verifies bibd(91,10,1),
# runs `gcsim catalogue` with every packaged file verified, and a call that needs an extra names it.
#
#   scripts/check_wheel.sh            # builds the wheel from a clean copy of the source tree
#   scripts/check_wheel.sh dist/gcsim-0.1.0-py3-none-any.whl
#
# Needs network access to the package index (or a warm pip cache) for the core dependencies.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
start=$(date +%s)

if [ $# -ge 1 ]; then
  WHEEL=$(realpath "$1")
else
  # a clean copy: a stale build/ folder in the checkout could add files to the wheel
  mkdir "$TMP/src"
  cp -r "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/LICENSE" "$ROOT/gcsim" "$ROOT/designs" "$TMP/src/"
  find "$TMP/src" -name __pycache__ -prune -exec rm -rf {} + -o -name '*.egg-info' -prune -exec rm -rf {} +
  "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$TMP/dist" "$TMP/src"
  WHEEL=$(ls "$TMP"/dist/gcsim-*.whl)
fi
echo "wheel: $(basename "$WHEEL")"

BASE=$("$PY" -c 'import sys; print(sys._base_executable)')
"$BASE" -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install --quiet --upgrade pip
"$TMP/venv/bin/python" -m pip install --quiet "$WHEEL"
echo "installed in $(( $(date +%s) - start )) s: $("$TMP/venv/bin/python" -m pip list --format=freeze | tr '\n' ' ')"

cd "$TMP"  # outside the source tree: nothing can come from the checkout
"$TMP/venv/bin/python" - <<'PY'
import importlib.util
import gcsim

for extra_module in ("cvxpy", "scs", "torch", "pandas", "matplotlib", "sklearn"):
    assert importlib.util.find_spec(extra_module) is None, f"{extra_module} is installed: not a core-only venv"
assert "site-packages" in gcsim.__file__, gcsim.__file__
d = gcsim.bibd(91, 10, 1)
d.verify()
print("bibd(91,10,1):", d.params, "verified")
try:
    gcsim.cerar.design(4, 8, "optimized", kappa=20)
except gcsim.MissingDependencyError as exc:
    print("an optimized CERAR design without the extra:", exc)
    assert "gcsim[optimize]" in str(exc)
else:
    raise AssertionError("the optimization ran without cvxpy")
PY
"$TMP/venv/bin/gcsim" catalogue
"$TMP/venv/bin/gcsim" catalogue --json | "$TMP/venv/bin/python" -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
assert rows and all(r["verified"] and r["file"] == "matches" for r in rows), rows
print(len(rows), "named instances: every packaged file matches")'
"$TMP/venv/bin/gcsim" load cerar/optimized_N4_c8_kappa10
set +e
msg=$("$TMP/venv/bin/gcsim" cerar optimize --workers 4 --c 8 --kappa 20 2>&1); code=$?
set -e
echo "gcsim cerar optimize (exit $code): $msg"
[ "$code" -eq 2 ] && [[ "$msg" == *"gcsim[optimize]"* ]]
# exporting into the installed package is refused (a bare --export, deprecated, is refused earlier: no folder)
packaged=$("$TMP/venv/bin/python" -c 'from gcsim.catalogue.named import packaged_catalogue; print(packaged_catalogue())')
msg=$("$TMP/venv/bin/gcsim" catalogue --out "$packaged" 2>&1) && exit 1 || true
echo "gcsim catalogue --out <the packaged catalogue>: $msg"
[[ "$msg" == *"read-only"* ]]
msg=$("$TMP/venv/bin/gcsim" catalogue --export 2>&1) && exit 1 || true
echo "gcsim catalogue --export (deprecated): $msg"
echo "check_wheel: OK in $(( $(date +%s) - start )) s"
