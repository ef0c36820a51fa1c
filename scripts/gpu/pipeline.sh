#!/usr/bin/env bash
# H200 call for pipeline parallelism (issue 18, helper `pipe`), after `npm run build && scripts/gpu/pack.sh`
# (carry: dist .gpu). Steps:
#   tests  test/gpu/pipeline.test.ts (2 stages on cuda0, on cpu+cuda0, and on cuda0+cuda1 when there are
#          two GPUs, each equal to plain training on cuda0) and the CPU pipeline/schedule tests
#   bench  bench/pipeline.ts on GPT-2 350M (24 layers, width 1024), batch 64 = 8 micro-batches of 8,
#          T=1024, bf16: plain one-GPU training, the same micro-batches accumulated on one GPU, then the
#          pipeline 1F1B and GPipe on cuda0,cuda1 (two GPUs; the B.6 figure) or cuda0,cuda0 (one GPU: the
#          code path, and the schedule simulated with the stage times measured there)
#   scripts/gpu/pipeline.sh [tests] [bench]     (default: both). Logs under $OUT, a summary last.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
steps=" ${*:-tests bench} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
if [[ $steps == *" tests "* ]]; then
  t0=$(date +%s)
  timeout 240 node --test --test-reporter=spec --test-concurrency=1 dist/test/gpu/pipeline.test.js \
    dist/test/nn/pipeline.test.js dist/test/nn/pipeline-schedule.test.js > "$OUT/pipeline-tests.log" 2>&1
  log "pipeline tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/pipeline-tests.log" | tr '\n' ' ')"
  grep -E '^# |✖' "$OUT/pipeline-tests.log" | head -30
fi
if [[ $steps == *" bench "* ]]; then
  DEVS=${PIPE_DEVICES:-cuda0,cuda0}
  [ "$GPUS" -ge 2 ] && DEVS=${PIPE_DEVICES:-cuda0,cuda1}
  t0=$(date +%s)
  timeout 300 node dist/bench/pipeline.js --preset gpt2-medium --batch 64 --micro 8 --seq 1024 \
    --devices $DEVS --precision bf16 --steps ${PIPE_STEPS:-6} --single-batch 64 > "$OUT/pipeline-bench.jsonl" 2>&1
  log "bench/pipeline.js on $DEVS ($GPUS GPUs) rc=$? in $(($(date +%s) - t0))s:"
  cut -c1-900 "$OUT/pipeline-bench.jsonl"
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
exit 0
