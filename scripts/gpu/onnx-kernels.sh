#!/usr/bin/env bash
# H200 call for the ONNX kernels (issue 17, docs/onnx-kernels.md), after scripts/gpu/pack.sh (carry:
# dist .gpu): every onnx_ conformance case on CUDA (random inputs, poisoned outputs, float64 reference;
# test/gpu/cuda-conformance.test.ts filtered to the onnx_ cases), then the kernels on PaddleOCR-det-like
# layers at 640x640, batch 1 and 16 (bench/onnx-kernels.ts). Logs under $OUT, a summary last.
#   scripts/gpu/onnx-kernels.sh [tests] [bench]     (default: both)
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
steps=" ${*:-tests bench} "
summary=()
if [[ $steps == *" tests "* ]]; then
  t0=$(date +%s)
  timeout 420 node --test --test-reporter=spec --test-name-pattern='^onnx_' dist/test/gpu/cuda-conformance.test.js \
    > "$OUT/onnx-kernels.log" 2>&1
  rc=$?
  grep -E '^# |✖' "$OUT/onnx-kernels.log" | head -40
  # "skipped" counts the other ops' cases, left out by the name pattern.
  summary+=("onnx kernels on CUDA rc=$rc in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail)' "$OUT/onnx-kernels.log" | tr '\n' ' ')")
fi
if [[ $steps == *" bench "* ]]; then
  timeout 150 node dist/bench/onnx-kernels.js --device cuda --batch 1,16 > "$OUT/onnx-kernels-bench.jsonl" 2>&1
  summary+=("onnx kernel bench rc=$?")
  cut -c1-200 "$OUT/onnx-kernels-bench.jsonl"
fi
printf '%s\n' "${summary[@]}"
