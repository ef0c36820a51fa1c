#!/usr/bin/env bash
# Combined H200 run A: CUDA + workload GPU tests, WebGPU through Vulkan (tests + GEMM 4096 beside
# cuBLAS SGEMM), the workloads on CUDA (MD atom-steps/s at 32k..16M atoms; Monte Carlo beside
# PyTorch). Carry: dist .gpu .gl. Logs under $OUT; a summary last.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh
export OUT
bash scripts/gpu/run.sh tests > "$OUT/run-tests.txt" 2>&1
timeout 120 node dist/src/cli/main.js devices > "$OUT/devices.txt" 2>&1
timeout 150 node dist/bench/md.js --device cuda --atoms 32000,1000000,4000000,16000000 --steps 100 --json "$OUT/md-cuda.json" > "$OUT/md-cuda.txt" 2>&1
echo "md rc=$?" >> "$OUT/md-cuda.txt"
PYTHONUNBUFFERED=1 timeout 120 node dist/bench/risk.js --device cuda --torch --json "$OUT/risk-cuda.json" > "$OUT/risk-cuda.txt" 2>&1
echo "risk rc=$?" >> "$OUT/risk-cuda.txt"
WEBGPU_GEMM_N=4096 timeout 200 bash bench/webgpu-h200.sh > "$OUT/webgpu.txt" 2>&1
echo "=== run.sh tests ==="; tail -15 "$OUT/run-tests.txt"
echo "=== devices ==="; grep -v "^Warning\|^ *at \|^$" "$OUT/devices.txt" | tail -8
echo "=== md ==="; tail -12 "$OUT/md-cuda.txt"
echo "=== risk ==="; tail -14 "$OUT/risk-cuda.txt"
echo "=== webgpu ==="; tail -25 "$OUT/webgpu.txt"
