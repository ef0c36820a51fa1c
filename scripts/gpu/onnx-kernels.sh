#!/usr/bin/env bash
# H200 call for the ONNX kernels (issue 17, docs/onnx-kernels.md), after scripts/gpu/pack.sh (carry:
# dist .gpu): every onnx_ conformance case on CUDA (random inputs, poisoned outputs, float64 reference;
# test/gpu/cuda-conformance.test.ts filtered to the onnx_ cases), logs under $OUT, a summary last.
#   scripts/gpu/onnx-kernels.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
t0=$(date +%s)
timeout 540 node --test --test-reporter=spec --test-name-pattern='^onnx_' dist/test/gpu/cuda-conformance.test.js \
  > "$OUT/onnx-kernels.log" 2>&1
rc=$?
grep -E '^# |✖' "$OUT/onnx-kernels.log" | head -40
echo "onnx kernels on CUDA rc=$rc in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/onnx-kernels.log" | tr '\n' ' ')"
