#!/usr/bin/env bash
# One H200 call on the tail of a 10^6-path price (issue 7): bench/risk-tail.ts (the price taken apart,
# with host, event-loop and launch floors) and bench/risk.ts, each with the completion spin on (default)
# and off (TANDEM_CUDA_SPIN_US=0), beside PyTorch's p50/p99 in the same call.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
torch() { PYTHONUNBUFFERED=1 timeout 120 python3 bench/py/risk_torch.py --paths 1048576 --runs 2000 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("torch  p50 %.1f p99 %.1f us" % (d["p50Ms"]*1e3, d["p99Ms"]*1e3))'; }
F='1000000-path|gc during|slowest|parts|1e6-path|european'
torch
for spin in 30 0; do
  echo "== risk-tail, TANDEM_CUDA_SPIN_US=$spin"; TANDEM_CUDA_SPIN_US=$spin timeout 120 node dist/bench/risk-tail.js | grep -v '^\[tandem'
done
for spin in 30 0 30; do
  echo "== risk.ts, TANDEM_CUDA_SPIN_US=$spin"
  TANDEM_CUDA_SPIN_US=$spin PYTHONUNBUFFERED=1 timeout 180 node dist/bench/risk.js --device cuda --torch 2>&1 | grep -E "$F"
done
