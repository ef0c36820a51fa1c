#!/usr/bin/env bash
# H200 call for pipeline parallelism (issue 18, helper `pipe`), after `npm run build && scripts/gpu/pack.sh`
# (carry: dist .gpu). Steps:
#   tests  test/gpu/pipeline.test.ts (2 stages on cuda0, on cpu+cuda0, and on cuda0+cuda1 when there are
#          two GPUs, each equal to plain training on cuda0) and the CPU pipeline/schedule tests
#   bench  bench/pipeline.ts on GPT-2 350M (24 layers, width 1024), batch 64 = 8 micro-batches of 8,
#          T=1024, bf16: plain one-GPU training, the same micro-batches accumulated on one GPU, then the
#          pipeline 1F1B and GPipe on cuda0,cuda1 (two GPUs; the B.6 figure) or cuda0,cuda0 (one GPU: the
#          code path, and the schedule simulated with the stage times measured there). The split is
#          balanced by FLOPs (14 + 10: the head costs ~4 layers); PIPE_SPLIT=12,12 gives B.6's even split
#   cli    `tandem train gpt --gpus 2 --parallel pipeline` on random tokens (one GPU: the DEVICE_ABSENT refusal)
#   sim    the same bench on two emulated devices (sim backend paced in wall time): overlap and idle on "two
#          devices" where two GPUs are not lent
#   scripts/gpu/pipeline.sh [tests] [cli] [bench] [sim]     (default: all). Logs under $OUT, a summary last.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
steps=" ${*:-tests cli bench sim} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
if [[ $steps == *" tests "* ]]; then
  t0=$(date +%s)
  timeout 240 node --test --test-reporter=spec --test-concurrency=1 dist/test/gpu/pipeline.test.js \
    dist/test/nn/pipeline.test.js dist/test/nn/pipeline-schedule.test.js dist/test/nn/pipeline-overlap.test.js \
    > "$OUT/pipeline-tests.log" 2>&1
  log "pipeline tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/pipeline-tests.log" | tr '\n' ' ')"
  grep -E '^# |✖' "$OUT/pipeline-tests.log" | head -30
fi
if [[ $steps == *" cli "* ]]; then
  # The CLI end to end: with two GPUs a short pipelined run on random tokens; with one, the refusal.
  node -e 'const a=new Uint16Array(1<<20);let s=7;for(let i=0;i<a.length;i++){s=(Math.imul(s,1103515245)+12345)>>>0;a[i]=s%50257}require("fs").writeFileSync("/tmp/pipe-tokens.u16",a)'
  timeout 120 node dist/src/cli/main.js train gpt --preset gpt-mini --data /tmp/pipe-tokens.u16 --gpus 2 \
    --parallel pipeline --batch 16 --micro-batches 8 --steps 10 --eval-batches 0 --json > "$OUT/pipeline-cli.jsonl" 2>&1
  log "tandem train --gpus 2 --parallel pipeline rc=$? ($GPUS GPUs): $(tail -1 "$OUT/pipeline-cli.jsonl" | cut -c1-400)"
fi
if [[ $steps == *" bench "* ]]; then
  DEVS=${PIPE_DEVICES:-cuda0,cuda0}
  [ "$GPUS" -ge 2 ] && DEVS=${PIPE_DEVICES:-cuda0,cuda1}
  t0=$(date +%s)
  timeout 300 node dist/bench/pipeline.js --preset gpt2-medium --batch 64 --micro 8 --seq 1024 \
    --devices $DEVS --precision bf16 --steps ${PIPE_STEPS:-6} --single-batch 64 ${PIPE_SPLIT:+--split $PIPE_SPLIT} \
    > "$OUT/pipeline-bench.jsonl" 2>&1
  log "bench/pipeline.js on $DEVS ($GPUS GPUs) rc=$? in $(($(date +%s) - t0))s:"
  cut -c1-900 "$OUT/pipeline-bench.jsonl"
fi
if [[ $steps == *" sim "* ]]; then
  # Two emulated GPUs (sim devices paced in wall time, kernels not run; any machine): the stages overlap
  # as on two devices, so measured idle vs the simulated bubble is checkable where two GPUs are not lent.
  t0=$(date +%s)
  timeout 120 node dist/bench/pipeline.js --sim 2 --preset gpt-micro --layers 8 --batch 16 --micro 8 --seq 32 \
    --precision f32 --steps 6 --sim-flops 1e9 > "$OUT/pipeline-sim.jsonl" 2>&1
  log "bench/pipeline.js on 2 emulated devices rc=$? in $(($(date +%s) - t0))s:"
  cut -c1-900 "$OUT/pipeline-sim.jsonl"
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
exit 0
