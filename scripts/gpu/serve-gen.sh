#!/usr/bin/env bash
# H200 call for GPT inference and generation (issue 16), after scripts/gpu/pack.sh (carry: dist .gpu):
#  tests:  the CUDA conformance of the kvcache ops (kv_append, kv_attention, embedding_at, gather_rows,
#          topk_rows) on the GPU.
#  parity: PyTorch writes GPT-2 124M random weights (safetensors, nanoGPT names); both compute the
#          last-token logits of the same 8x128-token batch and greedy-continue the same 4 prompts by 32
#          tokens, in f32 and bf16: max |dlogit|, top-1 agreement, greedy agreement.
#  b8:     B.8, 256 concurrent generations (prompt 32, max_new U[16,256], seeded) through the engine
#          in-process and over HTTP, beside PyTorch static batching (batch 64, KV cache) of the same
#          requests on the same weights, in the same call; ratios printed.
# Every step has a timeout; logs under $OUT, a summary last.
#   scripts/gpu/serve-gen.sh [tests] [parity] [b8]     (default: all three)
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
steps=" ${*:-tests parity b8} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
W=/tmp/gen-gpt2.safetensors
CFG="12 12 768 1024 50257 50304"
if [[ $steps == *" tests "* ]]; then
  t0=$(date +%s)
  timeout 300 node --test --test-reporter=spec --test-concurrency=1 \
    --test-name-pattern='kv_append|kv_attention|embedding_at|gather_rows|topk_rows' \
    dist/test/gpu/cuda-conformance.test.js > "$OUT/tests.log" 2>&1
  log "kvcache CUDA conformance rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '✖' "$OUT/tests.log" | head -20
fi
if [[ $steps == *" parity "* || $steps == *" b8 "* ]]; then
  [ -f $W ] || timeout 120 $PY bench/torch/gpt_parity.py init $W $CFG 1234 > "$OUT/torch-init.log" 2>&1
  log "torch init gpt2 124M rc=$? ($(du -h $W 2>/dev/null | cut -f1))"
fi
if [[ $steps == *" parity "* ]]; then
  D=/tmp/gen-parity
  for prec in f32 bf16; do
    (cd bench/torch && timeout 180 $PY gen_parity.py $W $D $prec $CFG 8 128 4 16 32 1234) > "$OUT/torch-parity-$prec.log" 2>&1
    log "torch parity $prec rc=$?: $(tail -1 "$OUT/torch-parity-$prec.log" | cut -c1-200)"
    timeout 240 node dist/bench/gen-parity.js --weights $W --dir $D --precision $prec --device cuda0 \
      > "$OUT/tandem-parity-$prec.log" 2>&1
    log "tandem parity $prec rc=$?: $(tail -1 "$OUT/tandem-parity-$prec.log" | cut -c1-400)"
  done
fi
if [[ $steps == *" b8 "* ]]; then
  R=/tmp/gen-requests.json
  node dist/bench/serve-generate.js --write-requests $R
  (cd bench/torch && timeout 240 $PY static_generate.py $W $R bf16 64 $CFG) > "$OUT/b8-torch.jsonl" 2>&1
  log "B.8 pytorch static rc=$?: $(tail -1 "$OUT/b8-torch.jsonl" | cut -c1-300)"
  timeout 420 node dist/bench/serve-generate.js --weights $W --requests $R --precision bf16 --device cuda0 \
    --torch "$OUT/b8-torch.jsonl" --http --client-threads "${B8_CLIENT_THREADS:-4}" > "$OUT/b8-tandem.jsonl" 2>&1
  log "B.8 tandem rc=$?:"
  cat "$OUT/b8-tandem.jsonl" | cut -c1-400
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
for f in b8-tandem.jsonl; do [ -f "$OUT/$f" ] && { echo "--- $f"; tail -6 "$OUT/$f"; }; done
# Few files come back from the device machine: everything as one archive.
(cd "$OUT" && tar -czf /tmp/serve-gen-logs.tgz --exclude=serve-gen-logs.tgz . && rm -rf ./* && mv /tmp/serve-gen-logs.tgz .)
exit 0
