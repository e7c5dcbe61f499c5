#!/usr/bin/env bash
# GPU check of the gcsim executor layer, one command (benchmarks/README.md, "GPU"):
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]        # default OUT_DIR: benchmarks/results/gpu_check
#   VENV=/path/to/venv bash benchmarks/gpu_check.sh /tmp/gpu
#   PATTERNS=2000 bash benchmarks/gpu_check.sh    # a smaller evaluator workload
#
# Runs from the project's own venv (./.venv, carried to the GPU machine; VENV overrides) and
# installs nothing: the GPU machine may have no network.  Writes OUT_DIR/gpu_check.json:
#   * CuPy evaluator vs NumPy on the same 10,000 patterns (PG(2,9), m = 2, RD(0), s = 20): the
#     largest difference over its proved bound (<= 1 required) and the time ratio -- skipped with a
#     message when CuPy is not installed (pip install cupy-cuda12x into the venv beforehand to run it);
#   * the CuPy-parametrized executor tests (when CuPy works);
#   * torch on NCCL, one rank per GPU: dist.all_reduce vs gcsim's ring and CERAR (exact design) on
#     1.86 M float32, and DDP step times of the 1.86 M-parameter MLP, plain vs the CERAR hook (its
#     public state, the replicas' drift and a re-sync);
#   * torch on NCCL: gradient-coded training (CodedTrainer, 13 coded workers over the GPUs, the
#     117,858-parameter CNN, Bernoulli(0.1) stragglers): replicas bit-identical, err(F)/(mN) against lstsq;
#   * no GPU at all: {"gpu": false, "status": "skipped", ...}, exit 0.
# Sized to finish within 8 minutes on one GPU (every stage under its own timeout).
# Exit status: 0 ok or skipped, 1 a check failed or timed out.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:-$ROOT/benchmarks/results/gpu_check}"
PATTERNS="${PATTERNS:-10000}"
if [[ -n "${VENV:-}" ]]; then
  PY="$VENV/bin/python"
elif [[ -x "$ROOT/.venv/bin/python" ]]; then
  PY="$ROOT/.venv/bin/python"
else
  PY="$(command -v python3 || true)"
fi
if [[ -z "$PY" || ! -x "$PY" ]]; then
  echo "gpu_check: no python found (set VENV to the project's virtual environment)" >&2
  exit 1
fi
if ! "$PY" -c "import gcsim" >/dev/null 2>&1; then
  echo "gpu_check: $PY cannot import gcsim (set VENV to the project's virtual environment)" >&2
  exit 1
fi
mkdir -p "$OUT" || { echo "gpu_check: cannot create $OUT" >&2; exit 1; }
echo "python: $PY; results: $OUT/gpu_check.json"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

STATUS=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  nvidia-smi -L
  if "$PY" -c "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)" >/dev/null 2>&1; then
    echo "== CuPy executor tests =="
    timeout 90 "$PY" -m pytest -q -p no:cacheprovider -p no:randomly tests/test_executor_arrays.py -k cupy || STATUS=1
  else
    echo "CuPy not usable in $PY: the CuPy part is skipped (pip install cupy-cuda12x to run it)"
  fi
else
  echo "no NVIDIA GPU visible (nvidia-smi missing or failing): writing a 'no GPU' result"
fi
echo "== evaluator (CuPy vs NumPy), NCCL collectives / DDP hook, coded training on NCCL =="
timeout 360 "$PY" benchmarks/gpu_check.py --patterns "$PATTERNS" --out "$OUT"
RC=$?
if [[ "$RC" == 124 ]]; then echo "gpu_check.py ran past its 360 s limit" >&2; fi
if [[ "$RC" != 0 ]]; then STATUS=1; fi
if [[ "$STATUS" == 0 ]]; then echo "GPU check: OK ($OUT/gpu_check.json)"; else echo "GPU check: FAILED" >&2; fi
exit "$STATUS"
