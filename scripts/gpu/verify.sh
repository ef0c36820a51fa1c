#!/usr/bin/env bash
# One H200 call that checks a change end to end (carry: dist .gpu, after scripts/gpu/pack.sh): the GPU
# tests and the seed example, then the workload and scheduling figures of issues 3, 4 and 7 beside
# PyTorch where there is one. Logs under $OUT; the interesting lines are printed.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
echo "== GPU tests and the seed example"; bash scripts/gpu/run.sh tests example 2>&1 | tail -4
for d in full normal; do
  echo "== 10^6-path price as a durable job through the API (durability $d)"
  for r in 1 2; do timeout 150 node dist/bench/risk-service.js --device cuda --durability "$d" 2>&1 | grep -E '^[0-9]+-path|^server'; done
done
echo "== Monte Carlo beside PyTorch"
PYTHONUNBUFFERED=1 timeout 180 node dist/bench/risk.js --device cuda --torch 2>&1 | grep -v '^ *at ' | tail -22
echo "== 10^6-path price p99 with a 16 MiB young generation (as tandem serve runs its server)"
timeout 120 node --max-semi-space-size=16 --min-semi-space-size=16 dist/bench/risk.js --device cuda --torch 2>&1 | grep -E '1000000-path|gc during|1e6-path'
echo "== pipeline and tiny tasks"
PYTHONUNBUFFERED=1 timeout 180 node dist/bench/cuda-bench.js --only pipeline,tiny 2>&1 | grep -E '^row|^note'
echo "== scheduling (simulation, decision cost, mixed graph on the real GPU)"
timeout 240 node dist/bench/sched.js --device cuda 2>&1 | tail -8
