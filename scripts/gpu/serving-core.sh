#!/usr/bin/env bash
# H200 call for the interactive lane's core (issue 16, serve-core), after scripts/gpu/pack.sh (carry:
# dist .gpu): the mlp and cnn served on CUDA against the same weights on the CPU, batching on/off
# throughput at concurrency 16 and 64, one-client latency with delay 0, and preferIdle moving batches to
# the CPU while a job holds the GPU (test/gpu/serving-cuda.test.ts); then the lane's CPU tests
# (test/service/serving-*.test.ts) on this bigger host. Logs under $OUT, a summary last.
#   scripts/gpu/serving-core.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
t0=$(date +%s)
timeout 300 node --test --test-reporter=spec dist/test/gpu/serving-cuda.test.js > "$OUT/serving-cuda.log" 2>&1
log "serving on cuda rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/serving-cuda.log" | tr '\n' ' ')"
grep -E '^# |✖|Error' "$OUT/serving-cuda.log" | head -30
t0=$(date +%s)
timeout 280 node --test --test-reporter=spec --test-concurrency=1 $(ls dist/test/service/serving-*.test.js) > "$OUT/serving-cpu.log" 2>&1
log "serving CPU tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/serving-cpu.log" | tr '\n' ' ')"
grep -E '^# |✖' "$OUT/serving-cpu.log" | head -20
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
exit 0
