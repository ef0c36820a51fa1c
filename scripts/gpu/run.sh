#!/usr/bin/env bash
# Runs on the H200 machine (see scripts/gpu/pack.sh): unpacks Node, runs the GPU tests, the seed
# example and the CUDA benchmarks, keeps logs under $OUT and prints a short table last.
#   scripts/gpu/run.sh [tests] [example] [bench]     (default: all three)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh
steps=${*:-tests example bench}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
summary=()
if [[ " $steps " == *" tests "* ]]; then
  t0=$(date +%s)
  timeout ${TESTS_TIMEOUT:-200} node --test --test-reporter=spec --test-concurrency=1 $(find dist/test/gpu dist/test/cuda -name '*.test.js' 2>/dev/null | sort) > "$OUT/tests.log" 2>&1
  rc=$?
  summary+=("tests rc=$rc in $(( $(date +%s) - t0 ))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/tests.log" | tr '\n' ' ')")
  grep -E '✖|not ok|Error|AssertionError' "$OUT/tests.log" | head -40
fi
if [[ " $steps " == *" example "* ]]; then
  timeout 60 node dist/examples/seed-matrixmul.js > "$OUT/example.log" 2>&1
  summary+=("example rc=$?: $(tail -2 "$OUT/example.log" | tr '\n' ' ')")
fi
if [[ " $steps " == *" bench "* ]]; then
  PYTHONUNBUFFERED=1 timeout 240 node dist/bench/cuda-bench.js --json "$OUT/bench.json" --cache "$TANDEM_CACHE_DIR" > "$OUT/bench.log" 2>&1
  summary+=("bench rc=$?")
fi
echo
echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
[ -f "$OUT/bench.log" ] && grep -E '^\||^note|^device' "$OUT/bench.log"
exit 0
