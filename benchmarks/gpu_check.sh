#!/usr/bin/env bash
# GPU check of the gcsim executor layer (docs/guides/executor.md, benchmarks/README.md): CuPy tests + CuPy vs NumPy evaluator benchmark.
#
# On a machine with an NVIDIA GPU:
#   bash benchmarks/gpu_check.sh              # uses ./.venv if present, else creates .venv-gpu
#   VENV=/path/to/venv bash benchmarks/gpu_check.sh
#   PATTERNS=2000 bash benchmarks/gpu_check.sh   # smaller benchmark
# Without a GPU:
#   bash benchmarks/gpu_check.sh --dry-run    # NumPy-only run of the python part
#
# Steps (sized to finish within 5 minutes): pick cupy-cuda12x / cupy-cuda13x from the CUDA
# version nvidia-smi reports, install it (pip) into the venv if missing, run the CuPy-
# parametrized executor tests, run benchmarks/gpu_check.py (PG(2,9), m=2, RD(0), 10,000
# patterns, s=20) and print a short report.  Exit status: 0 ok, 1 a check failed,
# 2 no usable GPU / CuPy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PATTERNS="${PATTERNS:-10000}"
DRY=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY=1; fi

if [[ -n "${VENV:-}" ]]; then
  PY="$VENV/bin/python"
elif [[ -x "$ROOT/.venv/bin/python" ]]; then
  PY="$ROOT/.venv/bin/python"
else
  python3 -m venv "$ROOT/.venv-gpu"
  PY="$ROOT/.venv-gpu/bin/python"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -e "$ROOT[test]" || "$PY" -m pip install --quiet -e "$ROOT"
fi
echo "python: $PY"

if [[ "$DRY" == 1 ]]; then
  echo "dry run: NumPy only (no GPU used)"
  timeout 280 "$PY" benchmarks/gpu_check.py --dry-run --patterns "${PATTERNS}"
  exit $?
fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no NVIDIA GPU visible (nvidia-smi missing or failing); run with --dry-run for the CPU part" >&2
  exit 2
fi
nvidia-smi -L
CUDA_VER="$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\.\([0-9]*\).*/\1/p' | head -n1)"
case "$CUDA_VER" in
  12) PKG=cupy-cuda12x ;;
  13) PKG=cupy-cuda13x ;;
  11) PKG=cupy-cuda11x ;;
  *) echo "unrecognised CUDA driver version '${CUDA_VER}' (nvidia-smi); trying cupy-cuda12x" >&2; PKG=cupy-cuda12x ;;
esac
echo "driver supports CUDA ${CUDA_VER:-?}: using ${PKG}"

if ! "$PY" -c "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)" >/dev/null 2>&1; then
  timeout 180 "$PY" -m pip install --quiet "$PKG"
fi
"$PY" -c "import cupy; print('cupy', cupy.__version__, 'devices:', cupy.cuda.runtime.getDeviceCount())" || {
  echo "CuPy is installed but not usable on this GPU" >&2; exit 2; }

STATUS=0
echo "== CuPy executor tests =="
timeout 120 "$PY" -m pytest -q -p no:cacheprovider tests/test_executor_arrays.py -k cupy || STATUS=1
echo "== CuPy vs NumPy batched evaluator: PG(2,9), m=2, RD(0), ${PATTERNS} patterns, s=20 =="
timeout 240 "$PY" benchmarks/gpu_check.py --patterns "${PATTERNS}" || STATUS=1
if [[ "$STATUS" == 0 ]]; then echo "GPU check: OK"; else echo "GPU check: FAILED" >&2; fi
exit "$STATUS"
