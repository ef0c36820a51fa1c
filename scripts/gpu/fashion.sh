#!/usr/bin/env bash
# H200 call for B.11 (issue 15): Fashion-MNIST MLP and CNN, bf16, AdamW, 5 epochs of batch 512, PyTorch
# eager (bf16 autocast) and Tandem (CUDA) back to back, from the same initial weights and on the same
# batches; seconds to 88 % (MLP) / 90 % (CNN) test accuracy, with a compare line per model (first-step
# loss, accuracy difference, time ratio). About 1.5–3 minutes. Logs and JSON lines under $OUT, a summary
# last.
#   here:    npm run build && GPU_PACK_PROFILE=fashion bash scripts/gpu/pack.sh     (carry: .gpu-fashion)
#   device:  bash scripts/gpu/fashion.sh
# Environment: MODELS ("mlp cnn"), EPOCHS (5), DEVICE (cuda0), TORCH_DEVICE (cuda), PY (python3),
# ARGS (extra arguments for both sides, e.g. "--train-limit 2048 --test-limit 1000" for a dry run),
# EXTRA ("host": also the MLP with host-copied batches; add "sweep" for PyTorch CNN runs at SWEEP_LRS;
# "seqoff": MODELS again with a task per kernel, --sequences off; "static": MODELS again with the
# first step recorded and replayed as a CUDA graph, --static on (the Trainer's default for them on
# CUDA); "staticoff": MODELS again step by step, --static off),
# NODE_DIR (/tmp: where Node is unpacked).
set -uo pipefail
cd "$(dirname "$0")/../.."
G=.gpu-fashion
[ -d $G ] || { echo "fashion.sh: no $G here: run GPU_PACK_PROFILE=fashion bash scripts/gpu/pack.sh and carry $G" >&2; exit 2; }
OUT=${OUT:-/tmp/tandem-out}
mkdir -p "$OUT"
MODELS=${MODELS:-mlp cnn}
EPOCHS=${EPOCHS:-5}
DEVICE=${DEVICE:-cuda0}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
PY=${PY:-python3}
ARGS=${ARGS:-}
NODE_DIR=${NODE_DIR:-/tmp}
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
t_start=$(date +%s)

# Node, node_modules and dist/ from this call's carry: a warm machine may keep a dist/ or .gpu/ of an
# earlier call (another branch), so dist/ is always unpacked from $G and node_modules points into $G.
mkdir -p "$NODE_DIR"
[ -x "$NODE_DIR/node" ] || { xz -dc $G/node.xz > "$NODE_DIR/node.tmp" && chmod +x "$NODE_DIR/node.tmp" && mv "$NODE_DIR/node.tmp" "$NODE_DIR/node"; }
export PATH=$NODE_DIR:$PATH
rm -rf dist && xz -dc $G/dist.tar.xz | tar -xf -
rm -rf node_modules && ln -s $G/node_modules node_modules
[ -d $G/node_modules/protobufjs ] || xz -dc $G/proto.tar.xz | tar -xf - -C $G/node_modules
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TANDEM_CACHE_DIR=${TANDEM_CACHE_DIR:-/tmp/tandem-cache}
mkdir -p "$TANDEM_CACHE_DIR"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# The data set as Debian ships it, the images carried xz'd: unpacked to plain IDX (both readers take it).
DATA=/tmp/fashion-mnist
mkdir -p $DATA
for f in $G/fashion/*.xz; do
  b=$(basename "$f" .xz)
  [ -s "$DATA/$b" ] || xz -dc "$f" > "$DATA/$b"
done
cp $G/fashion/*.gz $DATA/
log "setup in $(($(date +%s) - t_start))s: node $(node --version), data $(du -sh $DATA | cut -f1), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

# Tandem writes the initial weights (its seeded init, bf16) and the batch order; PyTorch reads both.
RUN=/tmp/fashion-run
rm -rf $RUN && mkdir -p $RUN
# shellcheck disable=SC2086
timeout 60 node dist/bench/fashion.js prepare --out $RUN --data $DATA --epochs "$EPOCHS" $ARGS > "$OUT/prepare.jsonl" 2>&1
log "prepare rc=$?: $(tail -1 "$OUT/prepare.jsonl" | cut -c1-200)"

# shellcheck disable=SC2086
timeout 150 $PY bench/torch/fashion.py --init-dir $RUN --data $DATA --models "${MODELS// /,}" --epochs "$EPOCHS" \
  --device "$TORCH_DEVICE" $ARGS > "$OUT/torch.jsonl" 2> "$OUT/torch.err"
log "torch rc=$?"
tail -5 "$OUT/torch.err"

for m in $MODELS; do
  # shellcheck disable=SC2086
  timeout 150 node dist/bench/fashion.js train --model "$m" --device "$DEVICE" --data $DATA --epochs "$EPOCHS" \
    --init $RUN/$m-init.safetensors --torch "$OUT/torch.jsonl" $ARGS > "$OUT/tandem-$m.jsonl" 2>&1
  log "tandem $m rc=$?"
  grep -v '^{' "$OUT/tandem-$m.jsonl" | tail -5
done

# EXTRA="host": the MLP again with each batch's pixels copied from the host (the Trainer's default
# path), to show what keeping the set on the device saves. EXTRA="sweep": PyTorch alone at other
# learning rates for the CNN (SWEEP_LRS), to see the margin over the 90 % target.
EXTRA=${EXTRA:-host sweep}
if [[ " $EXTRA " == *" host "* ]]; then
  # shellcheck disable=SC2086
  timeout 150 node dist/bench/fashion.js train --model mlp --device "$DEVICE" --data $DATA --epochs "$EPOCHS" \
    --batches host --init $RUN/mlp-init.safetensors --torch "$OUT/torch.jsonl" $ARGS > "$OUT/tandem-mlp-host.jsonl" 2>&1
  log "tandem mlp --batches host rc=$?: $(grep -o '"secondsToTarget":[^,]*,\|"msPerStep":[^,]*' "$OUT/tandem-mlp-host.jsonl" | tr '\n' ' ')"
fi
# MODELS again with other flags: variant SUFFIX FLAG VALUE (the logs as tandem-<model>-SUFFIX.jsonl).
variant() {
  local suffix=$1 flag=$2 value=$3 m f
  for m in $MODELS; do
    f="$OUT/tandem-$m-$suffix.jsonl"
    # shellcheck disable=SC2086
    timeout 150 node dist/bench/fashion.js train --model "$m" --device "$DEVICE" --data $DATA --epochs "$EPOCHS" \
      "$flag" "$value" --init $RUN/$m-init.safetensors --torch "$OUT/torch.jsonl" $ARGS > "$f" 2>&1
    log "tandem $m $flag $value rc=$?: $(grep -o '"secondsToTarget":[^,]*,\|"msPerStep":[^,]*\|"timeToTargetRatio":[^,]*' "$f" | tr '\n' ' ')"
  done
}
[[ " $EXTRA " == *" seqoff "* ]] && variant seqoff --sequences off
[[ " $EXTRA " == *" static "* ]] && variant static --static on
[[ " $EXTRA " == *" staticoff "* ]] && variant staticoff --static off
if [[ " $EXTRA " == *" sweep "* ]]; then
  for lr in ${SWEEP_LRS:-1e-3 3e-3}; do
    # shellcheck disable=SC2086
    timeout 60 $PY bench/torch/fashion.py --init-dir $RUN --data $DATA --models cnn --epochs "$EPOCHS" --lr-cnn "$lr" \
      --device "$TORCH_DEVICE" $ARGS > "$OUT/torch-cnn-lr$lr.jsonl" 2>> "$OUT/torch.err"
    log "torch cnn lr $lr rc=$?: $(grep '"event": "epoch"' "$OUT/torch-cnn-lr$lr.jsonl" | grep -o '"testAccuracy": [0-9.]*' | tr '\n' ' ')"
  done
fi

echo; echo "=== summary ($(date -u +%FT%TZ), $(($(date +%s) - t_start))s) ==="
for s in "${summary[@]}"; do echo "$s"; done
pick() { grep -oE "\"($1)\": *[^,}]*" | sed 's/ //g' | tr '\n' ' '; }
for m in $MODELS; do
  echo "--- $m"
  for side in torch tandem; do
    f="$OUT/torch.jsonl"; [ $side = tandem ] && f="$OUT/tandem-$m.jsonl"
    echo "$side epochs: $(grep '"event": *"epoch"' "$f" | grep "\"model\": *\"$m\"" | pick testAccuracy)"
    echo "$side seconds: $(grep '"event": *"epoch"' "$f" | grep "\"model\": *\"$m\"" | pick seconds)"
    grep '"event": *"final"' "$f" | grep "\"model\": *\"$m\"" | pick 'testAccuracy|epochToTarget|secondsToTarget|secondsToTargetWithEval|msPerStep|startupSeconds|deviceBusyMsPerStep'; echo
    grep -o '"busiestOps":\[[^]]*\]' "$f"
    echo
  done
  grep '"event":"compare"' "$OUT/tandem-$m.jsonl" || echo "(no compare line)"
done
# Few files come back from the device machine: everything as one archive (as nn.sh does).
(cd "$OUT" && tar -czf /tmp/fashion-logs.tgz --exclude=fashion-logs.tgz . && rm -rf ./* && mv /tmp/fashion-logs.tgz .)
exit 0
