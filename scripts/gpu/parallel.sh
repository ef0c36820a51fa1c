#!/usr/bin/env bash
# H200 call for training across GPUs (issue 18), after `npm run build && scripts/gpu/pack.sh` (carry: .gpu,
# or dist .gpu). Sections by step name; the default runs all of them. Logs under $OUT, a summary last.
#   scripts/gpu/parallel.sh [nccl] [dp] [allreduce] [dpbench] [pipeline...]
#   nccl      test/gpu/nccl.test.ts: NCCL binding, collectives (one rank per GPU present), comm-stream ordering
#   dp        test/gpu/nn-parallel.test.ts: runtime collectives on NCCL, data parallel / ZeRO-1 vs the Trainer
#   allreduce bench/allreduce.ts beside bench/torch/allreduce.py, 256 MiB (1 rank; also 2 with 2 GPUs)
#   dpbench   bench/nn-data-parallel.ts (GPT-2 124M bf16, batch $DP_BATCH per GPU) beside bench/torch/gpt2_ddp.py
# On one GPU the NCCL parts run with ONE rank (the binding, the comm stream, data parallel with one NCCL
# rank against the plain Trainer, two replicas on cuda0 through the portable collectives); the two-GPU
# figures of issue 18 need nvidia-h200-x2 (the same steps then also run across both GPUs).
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
steps=" ${*:-nccl dp allreduce dpbench} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
# libnccl.so.2 from the pip wheel PyTorch uses (nvidia-nccl-cu13), also found by ffi/nccl.ts itself.
NCCL_DIR=$($PY -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$NCCL_DIR" ] && export TANDEM_NCCL_PATH=$NCCL_DIR
log "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l); NCCL dir: ${NCCL_DIR:-not found by python}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

# ---- dp helper: collectives, data parallel, ZeRO-1 -------------------------------------------------
if [[ $steps == *" nccl "* ]]; then
  t0=$(date +%s)
  timeout 180 node --test --test-reporter=spec --test-concurrency=1 dist/test/gpu/nccl.test.js > "$OUT/nccl-tests.log" 2>&1
  log "nccl tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/nccl-tests.log" | tr '\n' ' ')"
  grep -E '^# |✖|failed|Error' "$OUT/nccl-tests.log" | head -30
fi
if [[ $steps == *" dp "* ]]; then
  if [ -f dist/test/gpu/nn-parallel.test.js ]; then
    t0=$(date +%s)
    timeout 240 node --test --test-reporter=spec --test-concurrency=1 dist/test/gpu/nn-parallel.test.js > "$OUT/dp-tests.log" 2>&1
    log "data-parallel GPU tests rc=$? in $(($(date +%s) - t0))s: $(grep -E '^ℹ (pass|fail|skipped)' "$OUT/dp-tests.log" | tr '\n' ' ')"
    grep -E '^# |✖|failed|Error' "$OUT/dp-tests.log" | head -30
  else
    log "dp: dist/test/gpu/nn-parallel.test.js not built"
  fi
fi
if [[ $steps == *" allreduce "* ]]; then
  G=$(nvidia-smi -L 2>/dev/null | wc -l)
  for n in 1 $([ "$G" -ge 2 ] && echo 2); do
    timeout 90 node dist/bench/allreduce.js --mib 256 --gpus $n > "$OUT/allreduce-tandem-$n.jsonl" 2>&1
    log "tandem NCCL all-reduce 256 MiB, $n rank(s) rc=$?: $(tail -1 "$OUT/allreduce-tandem-$n.jsonl" | cut -c1-300)"
    if [ "$n" = 1 ]; then
      timeout 120 $PY bench/torch/allreduce.py --mib 256 > "$OUT/allreduce-torch-$n.jsonl" 2>&1
    else
      timeout 120 $PY -m torch.distributed.run --nproc_per_node=$n bench/torch/allreduce.py --mib 256 > "$OUT/allreduce-torch-$n.jsonl" 2>&1
    fi
    log "torch.distributed all_reduce 256 MiB, $n rank(s) rc=$?: $(grep impl "$OUT/allreduce-torch-$n.jsonl" | tail -1 | cut -c1-300)"
  done
fi
if [[ $steps == *" dpbench "* ]]; then
  G=$(nvidia-smi -L 2>/dev/null | wc -l)
  B=${DP_BATCH:-64}
  timeout 300 node dist/bench/nn-data-parallel.js --preset gpt2 --batch $B --steps ${DP_STEPS:-15} --gpus $G > "$OUT/dp-bench.jsonl" 2>&1
  log "tandem GPT-2 data parallel (batch $B per GPU) rc=$?:"
  cut -c1-300 "$OUT/dp-bench.jsonl" | tail -5
  timeout 180 $PY bench/torch/gpt2_ddp.py $B > "$OUT/ddp-torch-1.jsonl" 2>&1
  log "torch DDP 1 GPU rc=$?: $(grep impl "$OUT/ddp-torch-1.jsonl" | tail -1)"
  if [ "$G" -ge 2 ]; then
    timeout 240 $PY -m torch.distributed.run --nproc_per_node=$G bench/torch/gpt2_ddp.py $B > "$OUT/ddp-torch-$G.jsonl" 2>&1
    log "torch DDP $G GPUs rc=$?: $(grep impl "$OUT/ddp-torch-$G.jsonl" | tail -1)"
  fi
fi
# ---- end of the dp helper's section -------------------------------------------------------------------

echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
exit 0
