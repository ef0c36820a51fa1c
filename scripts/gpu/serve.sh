#!/usr/bin/env bash
# H200 call for the interactive lane (issue 16), after `bash scripts/gpu/pack.sh` (carry: dist .gpu):
# the batched-pricing GPU tests, then bench/serve-lane.ts against a service in this process, each part
# with a timeout and PyTorch in the same call:
#   price     10^6-path European price through the API (p50/p99 over 1,000 requests, 16 concurrent as
#             one launch), in-process p99 beside bench/py/risk_torch.py
#   gpt       B.7 GPT-2 124M scoring sweep, batching on/off, beside bench/torch/gpt2_infer.py
#   priority  B.7b priorities, queue limit, 5 % aborts over 10^5 requests, leaked slots
#   scripts/gpu/serve.sh [tests] [price] [gpt] [priority]      (default: all four)
# Logs under $OUT, a summary last. SECONDS_PER_LEVEL sets the gpt sweep's window (default 4).
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
steps=" ${*:-tests price gpt priority} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
# The server's young generation as `tandem serve` sets it (16 MiB): scavenges are the p99 (RESULTS).
NODE="node --max-semi-space-size=16 --min-semi-space-size=16"
if [[ $steps == *" tests "* ]]; then
  timeout 240 node --test --test-reporter=spec --test-concurrency=1 dist/test/workloads/batch-price-cuda.test.js \
    dist/test/service/serving/option-pricer.test.js > "$OUT/tests.log" 2>&1
  log "batched pricing tests rc=$?: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '✖|# ' "$OUT/tests.log" | head -20
fi
if [[ $steps == *" price "* ]]; then
  PYTHONUNBUFFERED=1 timeout 120 $PY bench/py/risk_torch.py --paths 1048576 --runs 1000 --steady-warmup 3000 > "$OUT/risk-torch.json" 2> "$OUT/risk-torch.err"
  log "torch risk rc=$?: $(cat "$OUT/risk-torch.json")"
  timeout 300 $NODE dist/bench/serve-lane.js price --device cuda --torch-risk "$OUT/risk-torch.json" \
    --json "$OUT/serve-price.json" > "$OUT/serve-price.txt" 2>&1
  log "serve price rc=$?"
  grep -E 'through the API|gc in|16 concurrent|in-process' "$OUT/serve-price.txt" | cut -c1-600
fi
if [[ $steps == *" gpt "* ]]; then
  timeout 120 $PY bench/torch/gpt2_infer.py 1,64 > "$OUT/gpt2-infer-torch.jsonl" 2> "$OUT/gpt2-infer-torch.err"
  log "torch gpt2 infer rc=$?: $(tr '\n' ' ' < "$OUT/gpt2-infer-torch.jsonl" | cut -c1-400)"
  # Two load-generator threads (LOAD_THREADS): at c64 one thread's own queueing showed in the client p99
  # (the twenty-first session: 8.3 ms with one, 6.0 ms with two, same machine and throughput).
  LOAD_THREADS=${LOAD_THREADS:-2} timeout 540 $NODE dist/bench/serve-lane.js gpt --device cuda --seconds "${SECONDS_PER_LEVEL:-4}" \
    --torch-gpt "$OUT/gpt2-infer-torch.jsonl" --json "$OUT/serve-gpt.json" > "$OUT/serve-gpt.txt" 2>&1
  log "serve gpt rc=$?"
  grep -E '^B\.7|c16:|c64:' "$OUT/serve-gpt.txt" | cut -c1-600
fi
if [[ $steps == *" priority "* ]]; then
  timeout 300 $NODE --expose-gc dist/bench/serve-lane.js priority --device cuda --requests 100000 \
    --json "$OUT/serve-priority.json" > "$OUT/serve-priority.txt" 2>&1
  log "serve priority rc=$?"
  grep -E '^B\.7b' "$OUT/serve-priority.txt" | cut -c1-700
fi
for f in "$OUT"/serve-*.txt; do [ -f "$f" ] && grep -E 'Error|error:' "$f" | head -5; done
echo "=== summary"
printf '%s\n' "${summary[@]}"
