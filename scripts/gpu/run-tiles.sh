#!/usr/bin/env bash
# Tile kernels, Cholesky vs cuSOLVER and multi-GPU (issues 4 and 9) on the GPU machine; same setup as
# run.sh (scripts/gpu/env.sh). About 2 minutes on one H200:
#   tests  ~40 s: cuda-tiles, cuda-peer, multi-gpu (test/gpu) + the fake-driver peer-route suite
#   chol   ~60 s: bench/cholesky-cuda n=32768, tiles 4096 and 2048, vs one cuSOLVER potrf
#   multi   ~1 s on one GPU (prints why it skips); ~90 s on two
#   scripts/gpu/run-tiles.sh [tests] [chol] [multi]     (default: all three)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh
steps=${*:-tests chol multi}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu-tiles.txt"
ls /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcusolver.so* 2>&1 | head -3
summary=()
if [[ " $steps " == *" tests "* ]]; then
  t0=$(date +%s)
  timeout 150 node --test --test-reporter=spec --test-concurrency=1 \
    dist/test/gpu/cuda-tiles.test.js dist/test/gpu/cuda-peer.test.js dist/test/gpu/multi-gpu.test.js \
    dist/test/cuda/peer-route.test.js > "$OUT/tests-tiles.log" 2>&1
  rc=$?
  summary+=("tile/peer tests rc=$rc in $(( $(date +%s) - t0 ))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/tests-tiles.log" | tr '\n' ' ')")
  grep -E '✖|not ok|Error|AssertionError|# skip' "$OUT/tests-tiles.log" | head -40
fi
if [[ " $steps " == *" chol "* ]]; then
  t0=$(date +%s)
  timeout 180 node dist/bench/cholesky-cuda.js --n 32768 --tiles 4096,2048 --json "$OUT/cholesky-cuda.json" > "$OUT/cholesky-cuda.log" 2>&1
  summary+=("cholesky-cuda rc=$? in $(( $(date +%s) - t0 ))s")
fi
if [[ " $steps " == *" multi "* ]]; then
  t0=$(date +%s)
  timeout 240 node dist/bench/multigpu.js --json "$OUT/multigpu.json" > "$OUT/multigpu.log" 2>&1
  summary+=("multigpu rc=$? in $(( $(date +%s) - t0 ))s")
fi
echo
echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
for f in cholesky-cuda multigpu; do
  [ -f "$OUT/$f.log" ] && { echo "--- $f"; grep -vE '^\[tandem\]' "$OUT/$f.log" | tail -25; }
done
exit 0
