#!/usr/bin/env bash
# Run the test suite under every OpenBLAS kernel this CPU supports, with BLAS at 1 and 2 threads.
#
#   bash scripts/blas_matrix.sh                 # whole suite per configuration
#   bash scripts/blas_matrix.sh tests/test_evaluate.py tests/test_cerar_optimize.py   # a subset
#
# OPENBLAS_CORETYPE is set here, for this check only; never in tests, Makefile or CI (users'
# machines pick their kernel from the CPU). SkylakeX is tried only where /proc/cpuinfo has avx512f
# (elsewhere it dies with SIGILL).
# Prints one line per configuration and exits 1 if any failed. Logs go to a temp folder.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(tests notebooks --nbmake gcsim --doctest-modules --ignore=gcsim/__main__.py)
# KERNELS="Prescott Nehalem ..." overrides the list ("default" = OPENBLAS_CORETYPE unset).
read -r -a kernels <<<"${KERNELS:-default Prescott Haswell}"
grep -qw avx512f /proc/cpuinfo && [ -z "${KERNELS:-}" ] && kernels+=(SkylakeX)
logs=$(mktemp -d)
status=0
for k in "${kernels[@]}"; do
  for t in 1 2; do
    name="$k-t$t"; core="$k"; [ "$k" = default ] && core=""
    start=$(date +%s)
    if env ${core:+OPENBLAS_CORETYPE=$core} OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t \
        $PY -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "${targets[@]}" >"$logs/$name.log" 2>&1; then
      verdict=pass
    else
      verdict=FAIL; status=1
    fi
    used=$(env ${core:+OPENBLAS_CORETYPE=$core} $PY -c "import numpy, threadpoolctl; print(threadpoolctl.threadpool_info()[0].get('architecture'))" 2>/dev/null)
    echo "$name (OpenBLAS kernel: $used): $verdict in $(( $(date +%s) - start )) s -- $(tail -1 "$logs/$name.log")"
  done
done
echo "logs: $logs"
exit $status
