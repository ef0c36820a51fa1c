#!/usr/bin/env bash
# H200/H100 call: why a kernel that never ends is or is not stopped (scripts/gpu/hung-probe.mjs), three
# ways: with a gemm queued behind it, without, and with CUDA_MODULE_LOADING=EAGER; then the GPU test.
#   scripts/gpu/hung-diag.sh [probe] [test]     (default: probe test). Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh
steps=" ${*:-probe test} "
if [[ $steps == *" probe "* ]]; then
  timeout 60 node scripts/gpu/hung-probe.mjs > "$OUT/probe-gemm.log" 2>&1; echo "probe gemm rc=$?"
  PROBE_NO_GEMM=1 timeout 60 node scripts/gpu/hung-probe.mjs > "$OUT/probe-nogemm.log" 2>&1; echo "probe no gemm rc=$?"
  CUDA_MODULE_LOADING=EAGER timeout 90 node scripts/gpu/hung-probe.mjs > "$OUT/probe-eager.log" 2>&1; echo "probe eager rc=$?"
  for f in probe-gemm probe-nogemm probe-eager; do echo "== $f"; grep -v '^\[serve' "$OUT/$f.log" | cut -c1-400 | head -40; done
fi
if [[ $steps == *" test "* ]]; then
  timeout ${HUNG_TEST_TIMEOUT:-120} node --test --test-reporter=spec dist/test/gpu/hung-kernel.test.js > "$OUT/hung-test.log" 2>&1
  echo "hung-kernel test rc=$?"; grep -E '✔|✖|ℹ|#' "$OUT/hung-test.log" | head -20
fi
